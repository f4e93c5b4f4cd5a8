#!/bin/sh
# Fidelity: a RENAME_WHITEOUT rename leaves a whiteout (char device 0:0)
# at the source. The peer must get both the renamed file and the whiteout,
# and a whiteout is an ordinary entry afterwards: chown and rename of it
# replicate, and `twinfs sync` still completes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"

echo hello >"$MNT/a"
check "renameat2(a, b, RENAME_WHITEOUT) through the mount" rename2 "$MNT/a" "$MNT/b" 4
check "a is a whiteout (char 0:0)" sh -c "[ -c '$MNT/a' ]"
check "sync after the whiteout rename exits 0" synced 30
check "the peer has the whiteout and b (treecmp)" stores_replicated

chown 12:34 "$MNT/a"
mv "$MNT/a" "$MNT/c"
check "sync after chown + mv of the whiteout exits 0" synced 30
check "the peer has the chowned, moved whiteout (treecmp)" stores_replicated

stop_mount
finish
