#!/bin/sh
# `twinfs serve` on 127.0.0.1 against good and bad primaries (wire_client):
# garbage, an HTTP request, a truncated frame, a bad check, a bad block
# hash, an escaping path, an oversized length and a wrong version each get
# the connection dropped with the store untouched, and serve keeps serving
# (a valid client works afterwards); a second primary is refused as busy;
# status answers on the control socket; a non-loopback listen address is
# refused without --insecure; SIGTERM stops it; detached mode is usable on
# the next line and resumes from the persisted applied seq.
. "$(dirname "$0")/lib.sh"

CLIENT=${TWINFS_BUILD:-}/tests/e2e/twinfs_wire_client
[ -x "$CLIENT" ] || skip "wire client not built ($CLIENT)"
command -v python3 >/dev/null || skip "python3 missing"

S=$T/store
ST=$T/state
mkdir -p "$S"
PORT=$(free_port)

ctl() { "$CLIENT" ctl "$ST" "$1"; }
# jget KEY: a key of `status` (strings bare, others as JSON)
jget() {
	ctl status | python3 -c 'import json,sys
v=json.load(sys.stdin)[sys.argv[1]]
print(v if isinstance(v,str) else json.dumps(v))' "$1"
}
# gone PID: the process has exited (or is a zombie waiting to be reaped)
gone() { [ ! -e "/proc/$1" ] || grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat"; }
store_empty() { [ -z "$(ls -A "$S")" ]; }
not_connected() { [ "$(jget connected)" = false ]; }

"$TWINFS_BIN" serve --store "$S" --state "$ST" --listen "127.0.0.1:$PORT" -f -v \
	>"$T/serve.log" 2>&1 &
SPID=$!
track_pid $SPID
wait_until 10 ctl ping >/dev/null || fail "serve did not come up: $(cat "$T/serve.log")"

check "status: role secondary" [ "$(jget role)" = secondary ]
check "status: not connected" [ "$(jget connected)" = false ]
check "status: applied_seq 0" [ "$(jget applied_seq)" = 0 ]
check "status: split_brain false" [ "$(jget split_brain)" = false ]
check "status: generation 1" [ "$(jget generation)" = 1 ]
check "state dir has node.id" grep -Eq '^[0-9a-f]{32}$' "$ST/node.id"

for mode in garbage http truncated badcheck badpayload badhash escape oversized version; do
	check "$mode: connection dropped as expected" "$CLIENT" 127.0.0.1 "$PORT" "$mode"
	check "$mode: store untouched" store_empty
	check "$mode: serve still running" kill -0 $SPID
	check "$mode: connection gone" wait_until 5 not_connected
done
check "escape: nothing outside the store" [ ! -e "$T/escaped-file" ]
check "status: last_error set" sh -c '[ "$1" != null ]' _ "$(jget last_error)"
check "log names the bad frame" grep -q 'bad frame' "$T/serve.log"

out=$("$CLIENT" 127.0.0.1 "$PORT" valid d1); rc=$?
check "valid client acked after the bad ones" [ $rc -eq 0 ]
check "ack is cumulative seq 3" [ "$out" = "acked 3" ]
check "file replicated" sh -c 'printf "replicated by the wire client\n" | cmp -s - "$1"' _ "$S/d1/file"
check "mode applied" [ "$(stat -c %a "$S/d1/file")" = 640 ]
check "mtime applied" [ "$(stat -c %Y "$S/d1/file")" = 1234567890 ]
check "status: applied_seq 3" [ "$(jget applied_seq)" = 3 ]
check "status: bytes_received counted" [ "$(jget bytes_received)" -gt 100 ]
check "STATE/applied persisted" grep -q 'seq=0*3 ' "$ST/applied"
not_dirty() { [ "$(jget dirty)" = false ]; }
check "STATE/applied written clean once idle" wait_until 5 not_dirty

check "second primary refused as busy" "$CLIENT" 127.0.0.1 "$PORT" busy
check "a silent primary gets heartbeats, then is dropped" "$CLIENT" 127.0.0.1 "$PORT" silent
check "silent: serve logs the timeout" grep -q 'primary silent for too long' "$T/serve.log"

# a second serve on the same state directory refuses to start
"$TWINFS_BIN" serve --store "$S" --state "$ST" --listen "127.0.0.1:$(free_port)" -f \
	>"$T/second.log" 2>&1; rc=$?
check "second serve on the same state exits 69" [ $rc -eq 69 ]
check "second serve says why, naming the holder's pid" grep -q "is in use by another twinfs process (pid $SPID)" "$T/second.log"

# a detaching serve that cannot listen (port taken) exits with the reason
mkdir -p "$T/store-busy"
"$TWINFS_BIN" serve --store "$T/store-busy" --state "$T/state-busy" --listen "127.0.0.1:$PORT" \
	>"$T/busy.out" 2>&1; rc=$?
check "detached serve on a taken port exits 69" [ $rc -eq 69 ]
check "detached serve on a taken port says so" grep -q 'Address already in use' "$T/busy.out"

kill -TERM $SPID
check "SIGTERM stops serve" wait_until 10 gone $SPID
wait $SPID; rc=$?
check "serve exits 0 on SIGTERM" [ $rc -eq 0 ]
check "control socket removed" [ ! -e "$ST/control.sock" ]
check "log says stopped" grep -q 'msg="stopped"' "$T/serve.log"

# refuses a non-loopback address without --insecure (before binding)
"$TWINFS_BIN" serve --store "$S" --state "$ST" --listen "0.0.0.0:$PORT" -f \
	>"$T/nl.out" 2>&1; rc=$?
check "non-loopback listen exits 78 (refused on its own terms)" [ $rc -eq 78 ]
check "non-loopback message is clear" grep -q 'not a loopback address' "$T/nl.out"
check "non-loopback message names --insecure" grep -q -- '--insecure' "$T/nl.out"
"$TWINFS_BIN" serve --store "$S" --state "$ST" -f >/dev/null 2>&1; rc=$?
check "missing --listen exits 64" [ $rc -eq 64 ]
"$TWINFS_BIN" serve --store "$T/missing" --state "$ST" --listen "127.0.0.1:$PORT" -f \
	>"$T/ms.out" 2>&1; rc=$?
check "missing store exits 66, as for mount" [ $rc -eq 66 ]
check "missing store is named" grep -q "$T/missing" "$T/ms.out"

# a full disk on the secondary: ERROR apply with the errno text, shown in
# status; serve keeps running
mkdir "$T/small" "$T/small-state"
if mount -t tmpfs -o size=2m tmpfs "$T/small" 2>/dev/null; then
	on_exit "umount -l '$T/small'"
	P3=$(free_port)
	"$TWINFS_BIN" serve --store "$T/small" --state "$T/small-state" \
		--listen "127.0.0.1:$P3" -f >"$T/small.log" 2>&1 &
	FPID=$!
	track_pid $FPID
	wait_until 10 "$CLIENT" ctl "$T/small-state" ping >/dev/null
	out=$("$CLIENT" 127.0.0.1 "$P3" stream big 8); rc=$?
	note "stream on a full disk: $out"
	check "disk full: the stream fails" [ $rc -ne 0 ]
	check "disk full: ERROR apply names the cause" sh -c \
		'printf "%s" "$1" | grep -q "error apply: write .big. on .*: No space left on device"' _ "$out"
	check "disk full: status last_error says so" sh -c \
		'"$1" ctl "$2" status | grep -q "No space left on device"' _ "$CLIENT" "$T/small-state"
	check "disk full: serve still running" kill -0 $FPID
	kill -TERM $FPID
	check "disk full: serve stops" wait_until 10 gone $FPID
else
	note "skipping the disk-full case: cannot mount a tmpfs here"
fi

# --config, with a flag overriding the file
P2=$(free_port)
cat >"$T/serve.yaml" <<EOF2
store: $S
state: $T/state-conf
listen: 127.0.0.1:1
net:
  heartbeat: 2
EOF2
"$TWINFS_BIN" serve --config "$T/serve.yaml" --listen "127.0.0.1:$P2" -f >"$T/conf.log" 2>&1 &
CPID=$!
track_pid $CPID
check "serve --config starts" wait_until 10 "$CLIENT" ctl "$T/state-conf" ping
check "serve --config: --listen overrides the file" sh -c \
	'"$1" ctl "$2" status | grep -q "\"listen\":\"127.0.0.1:$3\""' _ "$CLIENT" "$T/state-conf" "$P2"
kill -TERM $CPID
check "serve --config stops" wait_until 10 gone $CPID
printf 'store: %s\nstate: %s\nlisten: 127.0.0.1:1\nbogus_key: 1\n' "$S" "$ST" >"$T/bad.yaml"
"$TWINFS_BIN" serve --config "$T/bad.yaml" -f >"$T/bad.out" 2>&1; rc=$?
check "bad config exits 78" [ $rc -eq 78 ]
check "bad config error has file:line" grep -q "bad.yaml:4:" "$T/bad.out"

# the state directory may not live inside the store
"$TWINFS_BIN" serve --store "$S" --state "$S/d1/.state" --listen "127.0.0.1:$PORT" -f \
	>"$T/in.out" 2>&1; rc=$?
check "state inside the store exits 78" [ $rc -eq 78 ]
check "state inside the store is explained" grep -q 'inside the store' "$T/in.out"
check "state inside the store not created" [ ! -e "$S/d1/.state" ]

# detached: usable on the next line, resumes from the persisted seq
"$TWINFS_BIN" serve --store "$S" --state "$ST" --listen "127.0.0.1:$PORT"; rc=$?
check "detached serve returns 0" [ $rc -eq 0 ]
pid=$(ctl ping | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
check "detached serve answers at once" [ -n "$pid" ]
[ -n "$pid" ] && track_pid "$pid"
check "detached: applied_seq survived the restart" [ "$(jget applied_seq)" = 3 ]
out=$("$CLIENT" 127.0.0.1 "$PORT" valid d2)
check "detached: resumed after seq 3" [ "$out" = "acked 6" ]
check "detached: file replicated" [ -f "$S/d2/file" ]
if [ -n "$pid" ]; then
	kill -TERM "$pid"
	check "detached serve stops on SIGTERM" wait_until 10 gone "$pid"
fi

finish
