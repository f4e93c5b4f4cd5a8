#!/bin/sh
# A peer's one primary slot cannot be held by connections that never
# become a primary: while dozens of connections from several loopback
# addresses stay silent, trickle a byte at a time, or send garbage, a real
# mount connects and syncs in normal time; the slot is given only after a
# valid HELLO (and the TLS handshake, run once plaintext, once with a
# key); refusals are counted in status and logged once per address.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

# hogs PORT: 3 silent + 3 trickling connections from each of
# 127.0.0.2..127.0.0.9, reopened when dropped, plus garbage every 0.2 s,
# until killed: they must outlast the mount's sync, however long a loaded
# machine takes for it (a fixed lifetime could end first).
cat >"$T/hogs.py" <<'PY'
import os, socket, sys, time
port = int(sys.argv[1])
conns = []
def opened(src):
    s = socket.socket()
    s.setblocking(False)
    s.bind((src, 0))
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    return s
n = 0
while True:
    while len(conns) < 48:
        src = "127.0.0.%d" % (2 + len(conns) % 8)
        conns.append(opened(src))
    for s in conns[:]:
        try:
            if (n + s.fileno()) % 2:
                s.send(b"T")	# a trickle, never a frame
            s.recv(4096)
        except BlockingIOError:
            pass
        except OSError:
            conns.remove(s)	# dropped by the gate: open another
            s.close()
    g = opened("127.0.0.10")
    try:
        time.sleep(0.01)
        g.send(os.urandom(64))
    except OSError:
        pass
    g.close()
    n += 1
    time.sleep(0.2)
PY

run_case() { # $1 = label, $2... = extra args for serve and mount
	label=$1; shift
	start_serve "$@"
	python3 "$T/hogs.py" "$PORT" &
	hogs=$!
	track_pid "$hogs"
	waiting() {
		n=$("$TWINFS_BIN" status --state "$P_STATE" --json | sed -n 's/.*"connections_waiting":\([0-9]*\).*/\1/p')
		[ "${n:-0}" -ge 8 ]
	}
	check "$label: the hogs fill the gate" wait_until 15 waiting
	t0=$(date +%s)
	start_mount "$@"
	mkdir -p "$MNT/$label"
	for i in $(seq 1 20); do head -c 50000 /dev/urandom >"$MNT/$label/f$i"; done
	"$TWINFS_BIN" sync --state "$A_STATE" --timeout 30 >/dev/null 2>&1
	check "$label: the mount syncs while the hogs run" [ $? -eq 0 ]
	took=$(( $(date +%s) - t0 ))
	check "$label: in normal time (${took} s)" [ "$took" -le 15 ]
	check "$label: hogs still running at sync" kill -0 "$hogs"
	refused=$("$TWINFS_BIN" status --state "$P_STATE" --json | sed -n 's/.*"connections_refused":\([0-9]*\).*/\1/p')
	check "$label: status counts the refusals ($refused)" [ "${refused:-0}" -gt 0 ]
	kill "$hogs" 2>/dev/null; wait "$hogs" 2>/dev/null
	check "$label: stores equal" replicated
	stop_mount
	kill_serve
}

run_case plain
n=$(grep -c 'refused a connection' "$T/serve.log")
check "refusals are logged at most once per address per minute ($n lines)" [ "$n" -le 40 ]
"$TWINFS_BIN" keygen --psk "$T/psk" >/dev/null
run_case tls --psk-file "$T/psk"
finish
