#!/bin/sh
# Fidelity: edits made directly in the store while it is not mounted (write,
# delete, rename, chmod) reach the peer after the next mount and sync.
# Directory mtimes are set explicitly (through the mount, then in the
# store), so that this tests the edits, not directory mtimes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"
mkdir -p "$MNT/d"
for f in a b c d e; do echo "$f" >"$MNT/d/$f"; done
echo top >"$MNT/top"
touch -d @1000000000 "$MNT/d"
check "first sync exits 0" synced 30
check "first sync: stores equal (treecmp)" stores_replicated
stop_mount
check "the mount stopped" sh -c "! grep -qs ' $MNT ' /proc/mounts"

echo rewritten >"$A_STORE/d/a"
echo appended >>"$A_STORE/d/b"
rm "$A_STORE/d/c"
mv "$A_STORE/d/d" "$A_STORE/d/d-renamed"
chmod 600 "$A_STORE/d/e"
echo new >"$A_STORE/newfile"
mv "$A_STORE/top" "$A_STORE/d/top"
touch -d @1000000100 "$A_STORE/d"

start_mount
wait_until 15 connected || fail "the mount did not reconnect"
check "sync after the remount exits 0" synced 60
check "the peer has the offline edits (treecmp)" stores_replicated

stop_mount
finish
