#!/bin/sh
# `twinfs status` and `twinfs sync` against no daemon, a mount whose peer is
# down (sync --timeout 2 fails with a reason, exit 75), the JSON keys of
# status, and `status --pending` offline after the mount stopped.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

"$TWINFS_BIN" status --state "$T/nothing" >"$T/o" 2>"$T/e"; rc=$?
check "status without a daemon exits 69" [ $rc -eq 69 ]
check "status without a daemon says so" grep -q "no twinfs daemon" "$T/e"
"$TWINFS_BIN" sync --state "$T/nothing" >"$T/o" 2>"$T/e"; rc=$?
check "sync without a daemon exits 69" [ $rc -eq 69 ]

# A mount whose peer does not run.
start_mount
echo data >"$MNT/file1"
mkdir "$MNT/dir1"
start=$(date +%s)
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 2 >"$T/o" 2>"$T/e"; rc=$?
took=$(( $(date +%s) - start ))
cat "$T/e"
check "sync --timeout 2 with the peer down exits 75" [ $rc -eq 75 ]
check "sync --timeout 2 gives up in time (${took}s)" [ $took -le 5 ]
check "sync explains why" grep -q "timed out.*not connected" "$T/e"
"$TWINFS_BIN" status --state "$A_STATE" --json >"$T/s.json"; rc=$?
check "status --json exits 0" [ $rc -eq 0 ]
for k in role connected peer mode degraded lag_ops lag_bytes acked_seq head_seq \
	send_rate split_brain generation mountpoint last_error insecure; do
	check "status has key $k" grep -q "\"$k\":" "$T/s.json"
done
check "status: role primary, not connected" sh -c "grep -q '\"role\":\"primary\"' '$T/s.json' && grep -q '\"connected\":false' '$T/s.json'"
check "status: lag is visible" sh -c "! grep -q '\"lag_ops\":0,' '$T/s.json'"
"$TWINFS_BIN" status --state "$A_STATE" >"$T/human"; rc=$?
check "human status exits 0" [ $rc -eq 0 ]
check "human status shows the lag" grep -q "^lag:" "$T/human"

# Offline: the changes the peer never got are listed after the mount stopped.
stop_mount
"$TWINFS_BIN" status --state "$A_STATE" >/dev/null 2>&1; rc=$?
check "status after unmount exits 69" [ $rc -eq 69 ]
"$TWINFS_BIN" status --state "$A_STATE" --pending >"$T/pending" 2>"$T/e"; rc=$?
cat "$T/pending"
check "status --pending works offline" [ $rc -eq 0 ]
check "status --pending lists file1" grep -q "file1" "$T/pending"
check "status --pending lists dir1" grep -q "dir1" "$T/pending"

# Now the peer comes up and a new mount catches up on its own.
start_serve
start_mount
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 30 >/dev/null; rc=$?
check "after remount + peer start, sync exits 0" [ $rc -eq 0 ]
check "stores equal" replicated
finish
