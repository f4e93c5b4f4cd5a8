#!/bin/sh
# The primary's mount daemon dies (SIGKILL) in the middle of a copy into
# new directories, with a peer attached. After a remount on the same state
# the journal's unacked records and its marks (new directory trees
# included) bring the peer level: `twinfs sync` returns and the peer's
# store equals the primary's. Then the mount keeps replicating, and dies
# again in the middle of rewriting parts of files the peer has (with
# renames): after a remount, level again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

start_serve
start_mount

# 16 folders, each with a subfolder, 60 files of 0-12 KB in each.
python3 - "$T/src" <<'PY'
import os, random, sys
random.seed(11)
for d in range(16):
    for sub in ("", "inner"):
        p = os.path.join(sys.argv[1], "dir%02d" % d, sub)
        os.makedirs(p, exist_ok=True)
        for f in range(60):
            with open(os.path.join(p, "f%02d" % f), "wb") as fh:
                fh.write(os.urandom(random.randint(0, 12000)))
PY
echo before >"$MNT/before.txt"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 30 >/dev/null
check "first sync exits 0" [ $? -eq 0 ]

cp -a "$T/src" "$MNT/copy" 2>/dev/null &
cp_pid=$!
track_pid "$cp_pid"
check "part of the copy reaches the store" wait_until 30 sh -c \
	'[ "$(find "$1" -type f | wc -l)" -ge 600 ]' _ "$A_STORE/copy"
kill -KILL "$MOUNT_PID"
wait "$MOUNT_PID" 2>/dev/null
wait "$cp_pid" 2>/dev/null
umount -l "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null
n=$(find "$A_STORE/copy" -type f | wc -l)
note "the primary's store holds $n of 1920 files after the kill"
check "the copy was interrupted" [ "$n" -lt 1920 ]

log_before=$(wc -l <"$T/mount.log")
start_mount
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 30
check "sync after the remount exits 0" [ $? -eq 0 ]
check "stores equal after the primary was killed mid-copy" replicated
# The journal names everything that may be missing (files whole, and a walk
# of each directory whose entries changed just before the kill); nothing
# the peer is sent should fail to apply.
tail -n +"$((log_before + 1))" "$T/mount.log" >"$T/mount.after"
check "no apply error forced a baseline after the restart" sh -c '! grep -q baseline "$1"' _ "$T/mount.after"
grep -h "journal recovered" "$T/mount.after" | cut -c1-200 | sed 's/^/# /'

# Still replicating: finish the copy and change what survived.
cp -a "$T/src/." "$MNT/copy/"
mv "$MNT/copy/dir00" "$MNT/copy/dir00-moved"
echo after >>"$MNT/before.txt"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 30
check "sync after more changes exits 0" [ $? -eq 0 ]
check "stores equal after more changes" replicated

# Again, killed while rewriting parts of files the peer already has (each
# such file is marked on its own before its first change), with renames.
python3 - "$MNT/copy" "$T/rewriter.count" <<'PY' 2>/dev/null &
import os, random, sys
random.seed(5)
root, n = sys.argv[1], 0
while True:  # until the mount dies under it
    d = os.path.join(root, "dir%02d" % random.randint(1, 15))
    names = [x for x in os.listdir(d) if x.startswith("f")]
    p = os.path.join(d, random.choice(names))
    with open(p, "r+b") as fh:
        fh.seek(random.randint(0, 12000))
        fh.write(os.urandom(random.randint(1, 3000)))
    n += 1
    if n % 200 == 0:
        os.rename(p, p + "r")
        with open(sys.argv[2], "w") as c:
            c.write(str(n))
PY
rw=$!
track_pid "$rw"
# killed once the rewriter has done 1,000 rewrites and 5 renames (it
# writes its count at each rename), not after a fixed time, which a
# loaded machine may spend starting python
rewrites() { [ "$(cat "$T/rewriter.count" 2>/dev/null || echo 0)" -ge 1000 ] 2>/dev/null; }
wait_until 60 rewrites || fail "the rewriter did not get going"
kill -KILL "$MOUNT_PID"
wait "$MOUNT_PID" 2>/dev/null
wait "$rw" 2>/dev/null
umount -l "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null
note "about $(cat "$T/rewriter.count" 2>/dev/null || echo 0) rewrites before the kill"
start_mount
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 30
check "sync after the second remount exits 0" [ $? -eq 0 ]
check "stores equal after the primary was killed mid-rewrite" replicated
finish
