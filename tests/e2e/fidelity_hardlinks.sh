#!/bin/sh
# Fidelity: hard links of every file type replicate as hard links: of a
# symlink (link(2) without following it), of a char device and of a FIFO.
# The peer must have the same link groups (treecmp compares them): live,
# and when the links are made while the peer is dead (the primary then
# re-sends the whole state of the changed paths). Every mtime is set
# explicitly first, so that this tests the links alone.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"

echo x >"$MNT/target"
ln -s target "$MNT/sl"
mknod "$MNT/dev" c 1 3
mkfifo "$MNT/fifo"
mkdir "$MNT/d"
check "link the symlink, the device and the FIFO" python3 -c '
import os, sys
m = sys.argv[1]
os.link(m + "/sl", m + "/sl2", follow_symlinks=False)
os.link(m + "/sl", m + "/d/sl3", follow_symlinks=False)
os.link(m + "/dev", m + "/dev2")
os.link(m + "/fifo", m + "/d/fifo2")
' "$MNT"
touch -h -d @1000000000 "$MNT/target" "$MNT/sl" "$MNT/dev" "$MNT/fifo" "$MNT/d"
check "sync exits 0" synced 30
check "the peer has the same link groups (treecmp)" stores_replicated

kill_serve
ln -s target "$MNT/sl-b"
mknod "$MNT/dev-b" c 1 5
mkfifo "$MNT/fifo-b"
python3 -c '
import os, sys
m = sys.argv[1]
os.link(m + "/sl-b", m + "/d/sl-b2", follow_symlinks=False)
os.link(m + "/dev-b", m + "/d/dev-b2")
os.link(m + "/fifo-b", m + "/fifo-b2")
os.link(m + "/sl", m + "/sl4", follow_symlinks=False)
' "$MNT"
touch -h -d @1000000000 "$MNT/sl-b" "$MNT/dev-b" "$MNT/fifo-b" "$MNT/d"
start_serve
wait_until 20 connected || fail "the mount did not reconnect"
check "sync after the peer's restart exits 0" synced 30
check "the peer has the same link groups after the re-send (treecmp)" stores_replicated

stop_mount
finish
