#!/bin/sh
# A secondary is bound to the primary it replicates (issue 23): after P1's
# data is on the peer and P1 is gone, a second primary P2 (its own store
# and state directory, a longer journal) is refused with the reason, the
# peer's store is untouched, and P2's `twinfs sync` fails (69) instead of
# saying synced. P1, back, resumes and syncs. On 127.0.0.1. About 8 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

start_serve
start_mount
mkdir "$MNT/d"
for i in $(seq 1 20); do echo "p1 $i" >"$MNT/d/f$i"; done
synced 30
check "P1 synced" [ $? -eq 0 ]
stop_mount

# P2: another node, more changes than P1 ever made
P2_STORE=$T/p2/store P2_STATE=$T/p2/state P2_MNT=$T/p2/mnt
mkdir -p "$P2_STORE" "$P2_STATE" "$P2_MNT"
"$TWINFS_BIN" mount --store "$P2_STORE" --state "$P2_STATE" --mountpoint "$P2_MNT" \
	--peer "127.0.0.1:$PORT" -f >>"$T/mount2.log" 2>&1 &
P2_PID=$!
track_pid $P2_PID
track_mount "$P2_MNT"
wait_until 15 is_mounted "$P2_MNT" || fail "P2 did not mount"
for i in $(seq 1 60); do echo "p2 $i" >"$P2_MNT/g$i"; done
rm -f "$P2_MNT/g1"
refused() { "$TWINFS_BIN" status --state "$P2_STATE" --json | grep -q '"verdict":"foreign"'; }
wait_until 15 refused
check "P2 is refused: the peer holds another node's data" refused
"$TWINFS_BIN" sync --state "$P2_STATE" --timeout 10 >"$T/sync2.out" 2>&1; rc=$?
check "P2's sync fails with 69, not synced" [ $rc -eq 69 ]
check "... and says why" grep -q "another node's data" "$T/sync2.out"
check "the peer's store still equals P1's" same_stores "$A_STORE" "$P_STORE"
check "the peer says why it refused" sh -c "'$TWINFS_BIN' status --state '$P_STATE' | grep -q 'peer match:  foreign'"
check "... and that it is no split brain" sh -c "'$TWINFS_BIN' status --state '$P_STATE' --json | grep -q '\"split_brain\":false'"
fusermount3 -u "$P2_MNT"
wait_until 30 sh -c "! kill -0 $P2_PID 2>/dev/null"

start_mount
echo more >"$MNT/d/more"
synced 30
check "P1, back, syncs" [ $? -eq 0 ]
check "stores equal" stores_replicated
finish
