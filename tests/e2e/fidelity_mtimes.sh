#!/bin/sh
# Fidelity: every file type's mtime replicates, not only regular files':
# the mtimes a symlink, a FIFO and a char device (mknod c 1 3) get when
# they are made (nobody sets them: the peer must not use the time it
# applied them), and a directory's set explicitly after a create in it.
# Then two directories whose mtimes were all set explicitly are swapped
# with RENAME_EXCHANGE: the peer has them swapped, mtimes included.
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
touch -d @1000000004 "$MNT/dir"
check "sync exits 0" synced 30
check "symlink, fifo, device and dir mtimes on the peer (treecmp)" stores_replicated

mkdir -p "$MNT/x/sub" "$MNT/y"
echo in-x >"$MNT/x/f"; echo in-y >"$MNT/y/g"
touch -d @1000000011 "$MNT/x/sub" "$MNT/x/f" "$MNT/y/g"
touch -d @1000000010 "$MNT/x"; touch -d @1000000020 "$MNT/y"
check "renameat2(x, y, RENAME_EXCHANGE) of two dirs" rename2 "$MNT/x" "$MNT/y" 2
check "sync after the exchange exits 0" synced 30
# (the entries of the first part are left out: their check is above)
check "the swapped dirs on the peer (treecmp)" \
	stores_replicated --ignore link --ignore fifo --ignore null --ignore dir --ignore target

stop_mount
finish
