#!/bin/sh
# Fidelity: every file type's mtime replicates, not only regular files':
# a symlink's, a FIFO's, a char device's (mknod c 1 3) and a directory's
# (set explicitly after a create in it changed it). And two directories
# swapped with RENAME_EXCHANGE keep their contents and mtimes on the peer.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"

echo x >"$MNT/target"
ln -s target "$MNT/link"
mkfifo "$MNT/fifo"
mknod "$MNT/null" c 1 3
mkdir "$MNT/dir"
echo y >"$MNT/dir/inner"
touch -h -d @1000000001 "$MNT/link"
touch -d @1000000002 "$MNT/fifo"
touch -d @1000000003 "$MNT/null"
touch -d @1000000004 "$MNT/dir"
check "sync exits 0" synced 30
check "symlink, fifo, device and dir mtimes on the peer (treecmp)" stores_replicated

mkdir -p "$MNT/x/sub" "$MNT/y"
echo in-x >"$MNT/x/f"; echo in-y >"$MNT/y/g"
touch -d @1000000010 "$MNT/x"; touch -d @1000000020 "$MNT/y"
check "renameat2(x, y, RENAME_EXCHANGE) of two dirs" rename2 "$MNT/x" "$MNT/y" 2
check "sync after the exchange exits 0" synced 30
check "the swapped dirs on the peer (treecmp)" stores_replicated

stop_mount
finish
