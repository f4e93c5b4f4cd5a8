#!/bin/sh
# A secondary is bound to the primary it replicates (issue 23): after P1's
# data is on the peer and P1 is gone, a second primary P2 (its own store
# and state directory, a longer journal) is refused with the reason, the
# peer's store is untouched, and P2's `twinfs sync` fails (69) instead of
# saying synced. P1, back, resumes and syncs. Then the refusals of the
# role commands and of mount/serve on the other role's state directory.
# On 127.0.0.1. About 6 s.
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
# each end decides on the other's HELLO: the peer may answer a moment later
peer_says() { "$TWINFS_BIN" status --state "$P_STATE" | grep -q 'peer match:  foreign'; }
wait_until 15 peer_says
check "the peer says why it refused" peer_says
check "... and that it is no split brain" sh -c "'$TWINFS_BIN' status --state '$P_STATE' --json | grep -q '\"split_brain\":false'"
fusermount3 -u "$P2_MNT"
wait_until 30 sh -c "! kill -0 $P2_PID 2>/dev/null"

start_mount
echo more >"$MNT/d/more"
synced 30
check "P1, back, syncs" [ $? -eq 0 ]
check "stores equal" stores_replicated

# the role commands' refusals: one line, the documented code, nothing changed
cp "$A_STATE/history" "$T/history.before"
"$TWINFS_BIN" demote --state "$A_STATE" >"$T/o" 2>&1
check "demote of a mounted primary: 69" [ $? -eq 69 ]
check "... says unmount first" grep -q "unmount it first" "$T/o"
check "... and the history is unchanged" cmp -s "$A_STATE/history" "$T/history.before"
"$TWINFS_BIN" promote >"$T/o" 2>&1
check "promote without --state: 64" [ $? -eq 64 ]
"$TWINFS_BIN" promote --state "$T/nowhere" >"$T/o" 2>&1
check "promote of a missing state directory: 66" [ $? -eq 66 ]
"$TWINFS_BIN" resolve --state "$A_STATE" --keep mine >"$T/o" 2>&1
check "resolve --keep mine: 64" [ $? -eq 64 ]
"$TWINFS_BIN" resolve --state "$A_STATE" --keep local >"$T/o" 2>&1
check "resolve with no split brain: 0, nothing to do" sh -c "[ $? -eq 0 ] && grep -q 'nothing to do' '$T/o'"
# promote with the primary connected: refused, unless --force
"$TWINFS_BIN" promote --state "$P_STATE" >"$T/o" 2>&1
check "promote with P1 connected: 69" [ $? -eq 69 ]
"$TWINFS_BIN" promote --state "$P_STATE" --force >"$T/o" 2>&1
check "promote --force: 0" [ $? -eq 0 ]
promoted_peer() { "$TWINFS_BIN" status --state "$A_STATE" --json | grep -q '"verdict":"ahead"'; }
wait_until 15 promoted_peer
check "P1 is dropped and refused by the promoted peer" promoted_peer
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 5 >/dev/null 2>&1
check "P1's sync fails (69)" [ $? -eq 69 ]
mkdir "$T/mnt2" "$T/sec"
"$TWINFS_BIN" demote --state "$T/sec" >"$T/o" 2>&1
check "demote of an empty state directory makes it a secondary's" grep -q "^role secondary" "$T/sec/history"
"$TWINFS_BIN" mount --store "$T/p2/store" --state "$T/sec" --mountpoint "$T/mnt2" \
	>"$T/o" 2>&1
check "mount on a secondary's state directory: 78" [ $? -eq 78 ]
check "... names promote" grep -q "twinfs promote" "$T/o"
check "... and creates no journal there" [ ! -e "$T/sec/journal" ]
stop_mount
"$TWINFS_BIN" serve --store "$T/p2/store" --state "$A_STATE" --listen "127.0.0.1:$(free_port)" \
	>"$T/o" 2>&1
check "serve on a primary's state directory: 78" [ $? -eq 78 ]
check "... names demote" grep -q "twinfs demote" "$T/o"
finish
