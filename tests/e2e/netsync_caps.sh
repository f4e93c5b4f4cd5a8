#!/bin/sh
# Per-connection caps (netsync/wire/limits.h) against a hostile peer
# (tests/e2e/hostile_peer.c) and a real serve under a 1,024-fd limit, its
# store on disk: while 200 connections come and go, a primary never reads
# its ACKs, another sends the start of the largest frame and stops, and a
# verifier never reads its inventory, serve's memory and fds stay bounded
# and each of them is dropped; a flood of small batches behind the disk's
# fsyncs (its sync thread held by tests/e2e/thread_hold.py) makes serve
# stop reading (status read_pauses) instead of holding ever more files open, and is applied without an error; a real mount
# syncs in between and both stores compare equal. On the primary's side, a
# "secondary" that announces a 16 MiB frame is dropped at its header, and
# one that floods heartbeats without reading leaves the mount's memory
# bounded; one of another protocol version is named with both versions;
# one that reports the same failure on every connection is met with a
# growing backoff, not a reconnect every 0.2 s.
# Prints the peaks measured.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

HOSTILE=${TWINFS_BUILD:-}/tests/e2e/twinfs_hostile_peer
[ -x "$HOSTILE" ] || skip "hostile peer not built ($HOSTILE)"
command -v prlimit >/dev/null || skip "prlimit missing (util-linux)"
command -v setpriv >/dev/null || skip "setpriv missing (util-linux)"
NOFILE=1024

status_key() { # STATE KEY
	"$TWINFS_BIN" status --state "$1" --json | python3 -c 'import json,sys
v=json.load(sys.stdin).get(sys.argv[1])
print(v if isinstance(v,str) else json.dumps(v))' "$2"
}
kv() { sed -n "s/^$1=//p" "$2"; }

# peaks PID OUT: samples PID's RSS (KiB) and fd count every 50 ms into OUT
# as "rss_kb fds" maxima, until killed.
cat >"$T/peaks.py" <<'PY'
import os, sys, time
pid, out = sys.argv[1], sys.argv[2]
rss = fds = 0
while os.path.exists("/proc/%s" % pid):
    try:
        for l in open("/proc/%s/status" % pid):
            if l.startswith("VmRSS:"):
                rss = max(rss, int(l.split()[1]))
        fds = max(fds, len(os.listdir("/proc/%s/fd" % pid)))
    except OSError:
        break
    with open(out + ".tmp", "w") as f:
        f.write("%d %d\n" % (rss, fds))
    os.replace(out + ".tmp", out)
    time.sleep(0.05)
PY
sample_start() { python3 "$T/peaks.py" "$1" "$2" & _sampler=$!; track_pid $_sampler; }
sample_stop() { sleep 0.2; kill $_sampler 2>/dev/null; wait $_sampler 2>/dev/null; }
rss_now() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
fds_now() { ls "/proc/$1/fd" | wc -l; }

# serve, without CAP_SYS_RESOURCE so that it cannot lift its fd limit
start_limited_serve() {
	setpriv --bounding-set -sys_resource prlimit --nofile=$NOFILE:$NOFILE \
		"$TWINFS_BIN" serve --store "$P_STORE" --state "$P_STATE" \
		--listen "127.0.0.1:$PORT" -f >>"$T/serve.log" 2>&1 &
	SERVE_PID=$!
	track_pid "$SERVE_PID"
	wait_until 15 daemon_up "$P_STATE" || { cat "$T/serve.log"; fail "serve did not start"; }
}
start_limited_serve

# An inventory larger than the socket buffers: 2,400 entries of ~3.9 KiB
# paths (12 levels of 250-character names), made in the store directly.
python3 - "$P_STORE" <<'PY'
import os, sys
d = os.path.join(sys.argv[1], "long", *[("n%d" % i) * 1 + "x" * 248 for i in range(14)])
os.makedirs(d)
for i in range(2400):
    open(os.path.join(d, "f%05d" % i), "w").close()
PY
rss0=$(rss_now "$SERVE_PID"); fds0=$(fds_now "$SERVE_PID")

# Group 1: connections, a primary that never reads and a verifier that
# never reads, all at once; then the largest frame, never finished.
# The verifier and the non-reader are admitted before the 200 connections
# start: the gate evicts the oldest waiting connection when full, and
# which one that is would be a race. The non-reader and the unfinished
# frame end as soon as serve drops them (5 heartbeat intervals after it
# stopped reading, or after the frame's last byte); their 20 s bound only
# catches a serve that never does, not a time a busy machine must beat.
sample_start "$SERVE_PID" "$T/peak1"
"$HOSTILE" 127.0.0.1 "$PORT" verifier 11 >"$T/verifier.out" &
verif=$!; track_pid $verif
wait_until 10 grep -q 'a verifier connected' "$T/serve.log"
"$HOSTILE" 127.0.0.1 "$PORT" noread 20 >"$T/noread.out" &
noread=$!; track_pid $noread
wait_until 10 grep -q 'name="hostile"' "$T/serve.log"
"$HOSTILE" 127.0.0.1 "$PORT" conns 200 8 >"$T/conns.out"
wait $verif $noread
"$HOSTILE" 127.0.0.1 "$PORT" bigframe 20 >"$T/bigframe.out"
sample_stop
read rss1 fds1 <"$T/peak1"
note "serve: rss ${rss0} KiB, fds ${fds0} at rest; peaks ${rss1} KiB, ${fds1} fds"
note "noread: $(tr '\n' ' ' <"$T/noread.out")"
note "bigframe: $(tr '\n' ' ' <"$T/bigframe.out")"
note "verifier: $(tr '\n' ' ' <"$T/verifier.out")"
note "conns: $(tr '\n' ' ' <"$T/conns.out")"
check "a primary that never reads is dropped" [ "$(kv closed "$T/noread.out")" = 1 ]
check "... once its unread output is capped (sent $(kv sent_bytes "$T/noread.out") B)" \
	[ "$(kv sent_bytes "$T/noread.out")" -lt 67108864 ]
check "a frame that never ends is dropped" [ "$(kv closed "$T/bigframe.out")" = 1 ]
check "a verifier that does not read is dropped" [ "$(kv cut "$T/verifier.out")" = 1 ]
check "200 connections were opened ($(kv opened "$T/conns.out"))" \
	[ "$(kv opened "$T/conns.out")" -ge 200 ]
check "serve's memory stays bounded (+$(( (rss1 - rss0) / 1024 )) MiB)" \
	[ $((rss1 - rss0)) -lt 65536 ]
check "serve's fds stay bounded ($fds1)" [ "$fds1" -lt 64 ]
check "the log says why the reader was dropped" grep -q 'does not read what this node sends' "$T/serve.log"
check "the log says why the verifier was dropped" grep -q 'verifier does not read' "$T/serve.log"

# A real primary syncs after all that (its baseline removes what the
# hostile peers left); both stores compare equal.
start_mount
mkdir -p "$MNT/after"
for i in $(seq 1 20); do head -c 30000 /dev/urandom >"$MNT/after/f$i"; done
check "a real mount syncs" synced 60
check "stores equal" stores_replicated
stop_mount

# Batches of 500 new files behind the disk's fsyncs, into a fresh serve
# (the last one is bound to the mount's history now, and refuses another
# primary's).
kill_serve
rm -rf "$P_STORE" "$P_STATE"
mkdir -p "$P_STORE" "$P_STATE"
start_limited_serve
fds0=$(fds_now "$SERVE_PID")
sample_start "$SERVE_PID" "$T/peak2"
# The sync thread is held until serve has stopped reading: a disk fast
# enough to fsync each batch while the next one is applied would never
# make serve pause, and the check below would hang on the machine's speed.
python3 "$(dirname "$0")/thread_hold.py" "$SERVE_PID" tw-syncer "$T/hold.ready" \
	"$T/hold.release" 30 &
hold=$!; track_pid $hold
wait_until 10 test -e "$T/hold.ready" || fail "the sync thread could not be held"
"$HOSTILE" 127.0.0.1 "$PORT" syncflood 5 500 >"$T/flood.out" &
flood=$!; track_pid $flood
paused() { [ "$(status_key "$P_STATE" read_pauses)" -gt 0 ]; }
wait_until 20 paused
touch "$T/hold.release"
wait $hold
wait $flood
sample_stop
read rss2 fds2 <"$T/peak2"
# serve may still be applying what the flood left in its socket, each
# create waiting on the disk's journal: let it answer first
wait_until 60 daemon_up "$P_STATE"
pauses=$(status_key "$P_STATE" read_pauses)
note "syncflood: $(tr '\n' ' ' <"$T/flood.out") peak fds $fds2, read_pauses $pauses"
check "the flood was applied without an error" [ "$(kv closed "$T/flood.out")" = 0 ]
check "... and acknowledged ($(kv acked_seq "$T/flood.out"))" [ "$(kv acked_seq "$T/flood.out")" -gt 0 ]
check "serve stopped reading behind its disk ($pauses times)" [ "${pauses:-0}" -gt 0 ]
check "fds held for fsync stay within the budget ($fds2 of $NOFILE)" [ "$fds2" -le $((NOFILE * 3 / 4)) ]
check "no file operation ran out of fds" sh -c "! grep -q 'Too many open files' '$T/serve.log'"
idle_fds() { [ "$(fds_now "$SERVE_PID")" -le $((fds0 + 2)) ]; }
check "the fds go with the connection" wait_until 15 idle_fds

# The primary's side: a "secondary" that announces a 16 MiB DATA frame is
# dropped at its header; one that floods heartbeats and never reads leaves
# the mount's memory bounded. (The mount is new to this port's peer: its
# HELLO asks for a baseline, which it never reads.)
HPORT=$(free_port)
"$HOSTILE" serve "$HPORT" bigframe 6 >"$T/sbig.out" &
hs=$!; track_pid $hs
wait_until 5 grep -q listening "$T/sbig.out"
"$TWINFS_BIN" mount --store "$A_STORE" --state "$A_STATE" --mountpoint "$MNT" \
	--peer "127.0.0.1:$HPORT" -f >>"$T/mount2.log" 2>&1 &
MOUNT_PID=$!
track_pid "$MOUNT_PID"; track_mount "$MNT"
wait_until 15 is_mounted "$MNT" || fail "mount did not start"
wait $hs
note "serve bigframe: $(tr '\n' ' ' <"$T/sbig.out")"
check "the mount drops a peer at a frame header too large for a secondary" \
	[ "$(kv closed "$T/sbig.out")" = 1 ]
check "... before the frame's payload ($(kv sent_bytes "$T/sbig.out") B sent)" \
	[ "$(kv sent_bytes "$T/sbig.out")" -lt 16777216 ]
check "the mount says why" grep -q 'larger than a secondary ever sends' "$T/mount2.log"
"$HOSTILE" serve "$HPORT" flood 3 >"$T/sflood.out" &
hs=$!; track_pid $hs
mrss0=$(rss_now "$MOUNT_PID")
sample_start "$MOUNT_PID" "$T/peak3"
wait $hs
sample_stop
read mrss1 mfds1 <"$T/peak3"
note "serve flood: $(tr '\n' ' ' <"$T/sflood.out") mount rss ${mrss0} -> peak ${mrss1} KiB"
check "a flood of heartbeats reached the mount ($(kv sent_bytes "$T/sflood.out") B)" \
	[ "$(kv sent_bytes "$T/sflood.out")" -gt 1048576 ]
check "the mount's memory stays bounded (+$(( (mrss1 - mrss0) / 1024 )) MiB)" \
	[ $((mrss1 - mrss0)) -lt 49152 ]
check "the mount answers status" daemon_up "$A_STATE"
# A secondary of another protocol version: both versions named.
"$HOSTILE" serve "$HPORT" version 5 >"$T/sver.out" &
hs=$!; track_pid $hs
named() { "$TWINFS_BIN" status --state "$A_STATE" --json | grep -q 'version 99, this node speaks'; }
check "a peer of another protocol version is named with both versions" wait_until 15 named
wait $hs
check "... and dropped" grep -q 'closed=1' "$T/sver.out"
# A secondary that reports the same failure on every connection: the
# mount backs off (0.2, 0.4, 0.8 ... s) instead of coming back every
# 0.2 s, and logs it loud once.
"$HOSTILE" serve "$HPORT" errors 6 >"$T/serr.out" &
hs=$!; track_pid $hs
wait $hs
n=$(kv accepted "$T/serr.out")
loud=$(grep -c 'the replication peer reported an error.*Input/output error' "$T/mount2.log")
note "the same error on every connection for 6 s: $n connections, $loud loud log lines"
check "repeated failures of one kind back off ($n connections in 6 s)" [ "${n:-99}" -le 6 ]
check "... logged loud once ($loud)" [ "$loud" -eq 1 ]
stop_mount
finish
