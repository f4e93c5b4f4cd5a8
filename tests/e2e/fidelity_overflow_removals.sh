#!/bin/sh
# Removals and renames made while the journal is full reach the peer.
# With journal.size_limit at its 16 MiB minimum and the peer killed, chmods
# fill the journal; then, through the mount, a folder is removed (rm -rf),
# a folder renamed, a file removed and a file moved to another folder. Each
# is journalled only as "needs scan" of its path(s), and the removed paths
# are gone when the sender reads them. After the peer is back, `twinfs
# sync` exits 0 and the peer's store equals the primary's completely: no
# deleted folder, no old name beside the new one, no deleted or moved file.
# A second sync and a remount change nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"

cat >"$T/small.yaml" <<YAML
journal:
  size_limit: 16M
YAML
start_serve
start_mount --config "$T/small.yaml"
wait_until 15 connected || fail "the mount did not connect to the peer"
mkdir -p "$MNT/gone/sub" "$MNT/renamed/sub" "$MNT/elsewhere" "$MNT/keep"
for k in 1 2 3; do
	echo "gone $k" >"$MNT/gone/sub/f$k"
	echo "renamed $k" >"$MNT/renamed/sub/f$k"
	echo "keep $k" >"$MNT/keep/f$k"
done
echo doomed >"$MNT/file_rm"
echo travels >"$MNT/file_mv"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null
check "first sync exits 0" [ $? -eq 0 ]
check "the peer has the tree" stores_equal
kill_serve

fill_journal >"$T/fill.log" 2>&1
check "the journal fills with chmods" [ $? -eq 0 ]
rm -rf "$MNT/gone"
mv "$MNT/renamed" "$MNT/renamed2"
rm "$MNT/file_rm"
mv "$MNT/file_mv" "$MNT/elsewhere/file_mv"
"$TWINFS_BIN" status --state "$A_STATE" --json >"$T/status.json"
check "the journal is in needs-scan mode" [ "$(json_field "$T/status.json" needs_scan)" -gt 0 ]

start_serve
wait_until 20 connected || fail "the mount did not reconnect"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60
check "sync after the overflow exits 0" [ $? -eq 0 ]
check "the peer has no removed folder" [ ! -e "$P_STORE/gone" ]
check "the peer has no old name of the renamed folder" [ ! -e "$P_STORE/renamed" ]
check "the peer has the renamed folder" [ -f "$P_STORE/renamed2/sub/f2" ]
check "the peer has no removed file" [ ! -e "$P_STORE/file_rm" ]
check "the moved file left its old place" [ ! -e "$P_STORE/file_mv" ]
check "the stores are equal" stores_equal
check_dirsym_mtimes

"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null
check "a second sync exits 0" [ $? -eq 0 ]
check "the stores are still equal" stores_equal
stop_mount
start_mount --config "$T/small.yaml"
wait_until 20 connected || fail "the mount did not reconnect after the remount"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null
check "sync after a remount exits 0" [ $? -eq 0 ]
check "the stores are equal after the remount" stores_equal
stop_mount
finish
