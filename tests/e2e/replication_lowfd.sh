#!/bin/sh
# A replicating mount under a 600-fd limit: 3,000 new files in three
# folders, then `twinfs sync`. Three things share the fds: the inode table
# (kept under half by fs/evict.c), the journal's batches (an fd per file
# until the peer acks: a sixteenth per batch, a quarter in flight, even
# while a sync hurries them) and everything else. Every write succeeds,
# the sync returns, the peer's store equals the primary's, and the journal
# never ran short of fds.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
command -v prlimit >/dev/null || skip "prlimit missing (util-linux)"
command -v setpriv >/dev/null || skip "setpriv missing (util-linux)"
NOFILE=600

dump_logs_on_failure() { [ "$_failures" -eq 0 ] || tail -n 20 "$T/mount.log" >&2; }

start_serve
# Without CAP_SYS_RESOURCE the daemon cannot raise its hard limit.
setpriv --bounding-set -sys_resource prlimit --nofile=$NOFILE:$NOFILE \
	"$TWINFS_BIN" mount --store "$A_STORE" --state "$A_STATE" --mountpoint "$MNT" \
	--peer "127.0.0.1:$PORT" -f >>"$T/mount.log" 2>&1 &
MOUNT_PID=$!
track_pid "$MOUNT_PID"
track_mount "$MNT"
wait_until 15 is_mounted "$MNT" || { cat "$T/mount.log"; fail "mount did not start"; }
wait_until 15 daemon_up "$A_STATE" || fail "mount has no control socket"
limit=$(awk '/^Max open files/ {print $4}' "/proc/$MOUNT_PID/limits")
[ "$limit" = "$NOFILE" ] || fail "the daemon runs with an fd limit of $limit, not $NOFILE"

python3 - "$MNT" >"$T/write.out" 2>&1 <<'PY'
import os, sys
root, bad = sys.argv[1], 0
for d in range(3):
    os.mkdir(os.path.join(root, "d%d" % d))
    for n in range(1000):
        p = os.path.join(root, "d%d" % d, "f%04d" % n)
        try:
            with open(p, "wb") as f:
                f.write(b"%d %d\n" % (d, n))
        except OSError as e:
            bad += 1
            if bad <= 5:
                print("write failed: %s: %s" % (p, e))
print("failed writes: %d" % bad)
sys.exit(1 if bad else 0)
PY
check "3,000 writes under a $NOFILE fd limit succeed" [ $? -eq 0 ]
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60
check "sync returns" [ $? -eq 0 ]
check "the peer has the same tree" replicated
check "the journal never ran out of fds" \
	sh -c '! grep -q "Too many open files" "$1"' _ "$T/mount.log"
stop_mount
finish
