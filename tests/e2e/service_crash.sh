#!/bin/sh
# Crash recovery without an admin: the mount daemon dies by SIGKILL, which
# leaves a dead FUSE mount ("Transport endpoint is not connected"). The
# same `twinfs mount` command line, run again as systemd's Restart= would,
# detaches the dead mount of this store (with a warning) and mounts; the
# store is intact. A dead mount of another store is still refused.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse

S=$T/store ST=$T/state M=$T/mnt
mkdir -p "$S/dir" "$M"
echo one >"$S/dir/a"
track_mount "$M"

# The daemon's pid: the holder of the store's writer lock (/proc/locks).
lock_holder() {
	python3 - "$1" <<'PY'
import os, sys
st = os.stat(sys.argv[1])
want = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
for line in open("/proc/locks"):
    f = line.split()
    if f[1] == "FLOCK" and f[5] == want:
        print(f[4])
        break
PY
}

"$TWINFS_BIN" mount --store "$S" --state "$ST" --mountpoint "$M" 2>"$T/m1.err"
check "first mount exits 0" [ $? -eq 0 ]
echo two >"$M/dir/b"
sync
pid=$(lock_holder "$S")
check "status names the daemon's pid" [ -n "$pid" ]
kill -KILL "$pid"
check "the daemon is gone" wait_until 10 sh -c '! kill -0 "$1"' _ "$pid"
check "the mountpoint is dead (ENOTCONN)" sh -c 'ls "$1" 2>&1 | grep -q "not connected"' _ "$M"
check "the dead mount is still in mountinfo" is_mounted "$M"

"$TWINFS_BIN" mount --store "$S" --state "$ST" --mountpoint "$M" 2>"$T/m2.err"; rc=$?
check "the same mount command works after the crash (exit $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || cat "$T/m2.err" >&2
check "it warned that it detached the dead mount" grep -q "detached a dead twinfs mount" "$T/m2.err"
check "exactly one twinfs mount at the mountpoint" \
	[ "$(grep -c " $M fuse.twinfs " /proc/mounts)" -eq 1 ]
check "old file readable through the new mount" grep -qx one "$M/dir/a"
check "file written before the kill is intact" grep -qx two "$M/dir/b"
echo three >"$M/dir/c"
check "the new mount writes to the store" grep -qx three "$S/dir/c"
fusermount3 -u "$M"
wait_until 10 sh -c '! grep -qs " $1 " /proc/mounts' _ "$M"

# A dead mount of another store is not ours to detach.
S2=$T/store2 ST2=$T/state2
mkdir -p "$S2"
"$TWINFS_BIN" mount --store "$S2" --state "$ST2" --mountpoint "$M" 2>"$T/m3.err"
check "mount of store2 exits 0" [ $? -eq 0 ]
pid=$(lock_holder "$S2")
kill -KILL "$pid"
wait_until 10 sh -c '! kill -0 "$1"' _ "$pid"
"$TWINFS_BIN" mount --store "$S" --state "$ST" --mountpoint "$M" 2>"$T/m4.err"; rc=$?
check "a dead mount of another store is refused (exit $rc, want 69)" [ $rc -eq 69 ]
check "the refusal says why on its last line" sh -c 'tail -n1 "$1" | grep -q "not this store"' _ "$T/m4.err"
umount -l "$M" 2>/dev/null
finish
