#!/bin/sh
# --mode sync: after fsync() returns, the data is in the peer's store (read
# there right after fsync, no sleep). With the peer down, fsync returns after
# sync.timeout, the mount says "degraded": true, and once the peer is back
# and caught up it returns to sync. /metrics counts each wait for the peer
# in its sync-mode histogram.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

cat >"$T/mount.yaml" <<YAML
store: $A_STORE
state: $A_STATE
mountpoint: $MNT
peer: 127.0.0.1:$PORT
mode: sync
sync:
  timeout: 2
metrics:
  listen: 127.0.0.1:$(free_port)
YAML
start_serve
"$TWINFS_BIN" mount --config "$T/mount.yaml" -f >>"$T/mount.log" 2>&1 &
MOUNT_PID=$!
track_pid "$MOUNT_PID"
track_mount "$MNT"
wait_until 15 is_mounted "$MNT" || { cat "$T/mount.log"; fail "mount did not start"; }
wait_until 15 daemon_up "$A_STATE" || fail "no control socket"
wait_until 15 connected
check "status says mode sync" sh -c "'$TWINFS_BIN' status --state '$A_STATE' --json | grep -q '\"mode\":\"sync\"'"
# fsync waits for the peer in the request's thread: never on a ring.
check "sync mode takes requests through /dev/fuse" sh -c "! grep -q 'FUSE over io_uring' '$T/mount.log'"

python3 "$TWINFS_SRC/tests/e2e/fsync_check.py" "$MNT" "$P_STORE" 20 300000
check "every fsync'ed file is on the peer when fsync returns" [ $? -eq 0 ]
# each of those waits is in the sync-mode histogram of /metrics
murl=http://$(sed -n 's/^  listen: //p' "$T/mount.yaml")/metrics
waits=$(python3 -c 'import sys,urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$murl" |
	awk '$1 == "twinfs_sync_fsync_duration_seconds_count" {print $2}')
check "/metrics counts the sync-mode waits (${waits:-none}, at least the 20 fsyncs)" \
	[ "${waits:-0}" -ge 20 ]

# close() is a sync point too, also after an fsync and more writes: a
# new file's writes go to the store without us (passthrough), so what
# the fsync cleared must not let close skip the peer.
python3 - "$MNT" "$P_STORE" <<'PY'
import os, sys
mnt, peer = sys.argv[1], sys.argv[2]
bad = 0
for i in range(10):
    name = "close_%02d" % i
    fd = os.open(os.path.join(mnt, name), os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"A" * 4096)
    os.fsync(fd)
    os.write(fd, b"B" * 4096)
    os.close(fd)
    with open(os.path.join(peer, name), "rb") as f:
        if f.read() != b"A" * 4096 + b"B" * 4096:
            bad += 1
print("incomplete on the peer right after close: %d of 10" % bad)
sys.exit(1 if bad else 0)
PY
check "a write after fsync is on the peer when close returns" [ $? -eq 0 ]

# Peer down: fsync returns (after the 2 s timeout) and the mount degrades.
kill_serve
start=$(date +%s)
python3 -c "
import os,sys
fd=os.open(sys.argv[1],os.O_WRONLY|os.O_CREAT,0o644); os.write(fd,b'x'*1000); os.fsync(fd); os.close(fd)" "$MNT/while_down"
rc=$?
took=$(( $(date +%s) - start ))
check "fsync with the peer down succeeds" [ $rc -eq 0 ]
check "fsync with the peer down returns within the timeout (took ${took}s)" [ $took -le 6 ]
check "status says degraded" sh -c "'$TWINFS_BIN' status --state '$A_STATE' --json | grep -q '\"degraded\":true'"
check "the log says it degraded" grep -q "DEGRADED" "$T/mount.log"
start_serve
not_degraded() { "$TWINFS_BIN" status --state "$A_STATE" --json | grep -q '"degraded":false'; }
wait_until 20 not_degraded
check "back to sync once the peer caught up" [ $? -eq 0 ]
python3 "$TWINFS_SRC/tests/e2e/fsync_check.py" "$MNT" "$P_STORE" 5 100000
check "sync guarantee holds again" [ $? -eq 0 ]
check "status says when the guarantee was lost and regained" sh -c \
	"'$TWINFS_BIN' status --state '$A_STATE' --json | grep -q '\"sync_regained_at\":'"

# Under a writer that never pauses, sync mode still comes back within a
# few seconds of the peer returning (it must not wait for a moment of
# zero lag, which such a writer never gives).
python3 - "$MNT/busy" "$T/busy.stop" <<'PY' &
import os, sys, time
path, stop = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
i = 0
while not os.path.exists(stop):
    os.pwrite(fd, os.urandom(65536), (i % 64) * 65536)
    if i % 8 == 0:
        os.fsync(fd)
    i += 1
    time.sleep(0.005)
os.close(fd)
PY
busy=$!
track_pid "$busy"
kill -STOP "$SERVE_PID"
on_exit 'kill -CONT $SERVE_PID 2>/dev/null'
degraded() { "$TWINFS_BIN" status --state "$A_STATE" --json | grep -q '"degraded":true'; }
wait_until 20 degraded
check "a busy writer degrades to async with the peer stopped" [ $? -eq 0 ]
kill -CONT "$SERVE_PID"
t0=$(date +%s)
wait_until 20 not_degraded
check "sync comes back under a writer that never pauses ($(( $(date +%s) - t0 )) s)" [ $? -eq 0 ]
check "the writer is still writing when it does" kill -0 "$busy"
touch "$T/busy.stop"
wait "$busy"
finish
