#!/bin/sh
# An apply error on the peer never wedges replication. The peer's store is
# changed behind its back (a folder deleted there), then the folder is
# renamed through the mount: the peer cannot apply the rename (ENOENT).
# The primary repairs the path (sends its current state, prunes what it
# lacks), logs a warning naming it once, and goes on: `twinfs sync` exits
# 0, the stores are equal, and the mount did not reconnect in a loop.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"

start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"
mkdir -p "$MNT/victim/sub" "$MNT/other"
for k in 1 2 3; do
	echo "victim $k" >"$MNT/victim/sub/f$k"
	echo "other $k" >"$MNT/other/f$k"
done
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null
check "first sync exits 0" [ $? -eq 0 ]

rm -rf "$P_STORE/victim"
mv "$MNT/victim" "$MNT/victim2"
echo after >"$MNT/other/after"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60
check "sync after the apply error exits 0" [ $? -eq 0 ]
check "the stores are equal" stores_equal
check_dirsym_mtimes
check "a warning names the repaired path" \
	grep -E 'warn.*repair.*victim' "$T/mount.log"
"$TWINFS_BIN" status --state "$A_STATE" --json >"$T/status.json"
check "no reconnect loop (reconnects <= 3)" [ "$(json_field "$T/status.json" reconnects)" -le 3 ]
check "status shows no stuck path" [ "$(json_field "$T/status.json" stuck_paths)" = "0" ]

# The same for a type mismatch: the peer holds a file where the primary
# has a folder that then gets a new entry.
rm -rf "$P_STORE/other"
echo "not a dir" >"$P_STORE/other"
echo newer >"$MNT/other/newer"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60
check "sync after a type mismatch exits 0" [ $? -eq 0 ]
check "the stores are equal after the type mismatch" stores_equal
# A folder missing three levels up: the peer names the highest folder it
# lacks, and the first repair sends that folder whole. Repairing the new
# file alone failed again, on a replay the peer had begun, which cost a
# baseline of the whole store (or, on a clean replay, one level up per
# failure behind a growing backoff).
mkdir -p "$MNT/deep/a/b/c"
echo one >"$MNT/deep/a/b/c/one"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null
check "sync before the deep removal exits 0" [ $? -eq 0 ]
rm -rf "$P_STORE/deep/a"
echo two >"$MNT/deep/a/b/c/two"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60
check "sync after a folder went missing higher up exits 0" [ $? -eq 0 ]
check "the stores are equal after the deep repair" stores_equal
check "the peer named the missing folder" grep -q "no folder: 'deep/a'" "$T/serve.log"
check "the first repair sent the missing folder" grep -q 'repair=/deep/a ' "$T/mount.log"
check "no baseline of the whole store and no stuck path for it" \
	sh -c "! grep -E 'baseline of the whole store|path is stuck' '$T/mount.log'"
stop_mount
finish
