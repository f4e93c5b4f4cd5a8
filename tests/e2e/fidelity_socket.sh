#!/bin/sh
# Fidelity: a socket node (mknod S_IFSOCK, as a bound AF_UNIX socket
# leaves behind) made while the peer is dead replicates once it is back:
# the primary re-sends the whole state of the changed paths, and must not
# try to open and read the node (that fails with ENXIO). Then sync
# completes and the stores are equal. Found by tests/e2e/difftest.py
# (seed 1, all faults: shrunk to ["fault","kill"], ["mksock","f"]).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"
echo x >"$MNT/x"
check "first sync exits 0" synced 30

kill_serve
python3 -c 'import os, stat, sys; os.mknod(sys.argv[1], stat.S_IFSOCK | 0o755)' "$MNT/sock"
touch -h -d @1000000000 "$MNT/sock"
start_serve
wait_until 20 connected || fail "the mount did not reconnect"
check "sync after the peer's restart exits 0" synced 30
check "the peer has the socket (treecmp)" stores_replicated

stop_mount
finish
