#!/bin/sh
# `twinfs sync` tells the truth: while the peer cannot apply a change (its
# copy of a folder is immutable, so a create in it, and the repair of the
# folder, fail with EPERM) sync and sync --verify fail, sync with the
# reason and the folder's path, `status` shows the stuck path,
# and the primary backs off instead of reconnecting in a tight loop. Once
# the peer can apply again, sync exits 0 and the stores are equal.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"
command -v chattr >/dev/null || skip "chattr missing (apt install e2fsprogs)"

start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"
mkdir -p "$MNT/locked"
echo one >"$MNT/locked/one"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null
check "first sync exits 0" [ $? -eq 0 ]
chattr +i "$P_STORE/locked" 2>/dev/null || skip "the peer's filesystem has no immutable flag"
on_exit "chattr -i '$P_STORE/locked' 2>/dev/null"

echo two >"$MNT/locked/two"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 8 >"$T/sync.out" 2>&1
rc=$?
check "sync fails while the peer cannot apply (exit $rc)" [ $rc -ne 0 ]
check "sync says which path is stuck" grep -q "cannot apply /locked" "$T/sync.out"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 4 --verify >"$T/syncv.out" 2>&1
rc=$?
check "sync --verify fails too while the path is stuck (exit $rc)" [ $rc -ne 0 ]
check "sync --verify does not say identical" sh -c "! grep -q '^identical' '$T/syncv.out'"
"$TWINFS_BIN" status --state "$A_STATE" --json >"$T/status.json"
check "status counts the stuck path" [ "$(json_field "$T/status.json" stuck_paths)" -ge 1 ]
check "status names the stuck path" grep -q '"stuck_path":"locked' "$T/status.json"
"$TWINFS_BIN" status --state "$A_STATE" >"$T/status.txt"
check "plain status shows the stuck path" grep -q '^stuck: .*/locked' "$T/status.txt"
check "the primary backs off (reconnects <= 8 in ~8 s)" \
	[ "$(json_field "$T/status.json" reconnects)" -le 8 ]
check "the stuck path is a warning in the log" grep -E -q 'level=warn.*stuck.*path=/locked' "$T/mount.log"

chattr -i "$P_STORE/locked"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60
check "sync exits 0 once the peer can apply" [ $? -eq 0 ]
check "the stores are equal" stores_equal
"$TWINFS_BIN" status --state "$A_STATE" --json >"$T/status.json"
check "no stuck path is left" [ "$(json_field "$T/status.json" stuck_paths)" = "0" ]
stop_mount
finish
