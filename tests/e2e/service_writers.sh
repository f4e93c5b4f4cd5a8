#!/bin/sh
# One writer per store: while a mount holds a store, a second mount of it
# (another state dir, another mountpoint) and a serve into it are refused
# with 69, naming the holder's pid, and create nothing; so is a mount into
# a store that a serve holds, and a second daemon on a state directory. A
# state directory inside the store is refused (78). Mounting over a
# non-empty directory works with a warning. The lock adds no file to the
# store, nor to what the mount shows.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse

S=$T/store M=$T/mnt M2=$T/mnt2
mkdir -p "$S" "$M" "$M2" "$T/store2"
echo data >"$S/file"
echo hidden >"$M/under"
track_mount "$M"
track_mount "$M2"

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

"$TWINFS_BIN" mount --store "$S" --state "$T/st1" --mountpoint "$M" 2>"$T/m1.err"
check "first mount exits 0" [ $? -eq 0 ]
check "mounting over a non-empty directory warns" grep -q "mountpoint is not empty" "$T/m1.err"
pid=$(lock_holder "$S")
check "the mount daemon holds the store lock" sh -c '[ -n "$1" ] && kill -0 "$1"' _ "$pid"
check "the store holds only the user's file" [ "$(ls -A "$S")" = "file" ]
check "the mount shows only the user's file" [ "$(ls -A "$M")" = "file" ]

"$TWINFS_BIN" mount --store "$S" --state "$T/st2" --mountpoint "$M2" 2>"$T/m2.err"; rc=$?
check "second mount of the store exits 69 (got $rc)" [ $rc -eq 69 ]
check "second mount names the holder's pid on its last line" \
	sh -c 'tail -n1 "$1" | grep -q "in use by another twinfs process (pid $2)"' _ "$T/m2.err" "$pid"
check "second mount created no state dir" [ ! -e "$T/st2" ]
not_mounted() { ! is_mounted "$1"; }
check "second mount mounted nothing" not_mounted "$M2"

"$TWINFS_BIN" serve --store "$S" --state "$T/st3" --listen "127.0.0.1:$(free_port)" 2>"$T/s1.err"; rc=$?
check "serve into a mounted store exits 69 (got $rc)" [ $rc -eq 69 ]
check "serve names the mount's pid" grep -q "(pid $pid)" "$T/s1.err"
check "serve created no state dir" [ ! -e "$T/st3" ]

"$TWINFS_BIN" mount --store "$T/store2" --state "$T/st1" --mountpoint "$M2" 2>"$T/m3.err"; rc=$?
check "a second daemon on a state dir exits 69 (got $rc)" [ $rc -eq 69 ]
check "it names the state directory and the pid" grep -q "state directory $T/st1 is in use by another twinfs process (pid $pid)" "$T/m3.err"

fusermount3 -u "$M"
wait_until 10 sh -c '! grep -qs " $1 " /proc/mounts' _ "$M"
no_holder() { [ -z "$(lock_holder "$1")" ]; }
check "the lock goes with the daemon" wait_until 10 no_holder "$S"

# serve holds the store: a mount of it is refused
PORT=$(free_port)
"$TWINFS_BIN" serve --store "$S" --state "$T/st4" --listen "127.0.0.1:$PORT" 2>"$T/s2.err"
check "serve starts once the mount is gone" [ $? -eq 0 ]
spid=$(lock_holder "$S")
"$TWINFS_BIN" mount --store "$S" --state "$T/st5" --mountpoint "$M2" 2>"$T/m4.err"; rc=$?
check "mount of a served store exits 69 (got $rc)" [ $rc -eq 69 ]
check "mount names the serve's pid" grep -q "(pid $spid)" "$T/m4.err"
check "mount created no state dir" [ ! -e "$T/st5" ]
kill -TERM "$spid"
wait_until 10 sh -c '! kill -0 "$1"' _ "$spid"

# a state directory inside the store
"$TWINFS_BIN" mount --store "$S" --state "$S/.state" --mountpoint "$M2" 2>"$T/m5.err"; rc=$?
check "mount with the state dir inside the store exits 78 (got $rc)" [ $rc -eq 78 ]
check "mount says why on its last line" sh -c 'tail -n1 "$1" | grep -q "inside the store"' _ "$T/m5.err"
check "the state dir inside the store was not created" [ ! -e "$S/.state" ]
finish
