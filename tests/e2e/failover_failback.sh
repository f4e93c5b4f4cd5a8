#!/bin/sh
# Failover and failback (issue 23). A primary, B its secondary, each in a
# network namespace of its own. `promote` is refused while A is
# connected. The link is cut and A's mount is killed with SIGKILL in the
# middle of a copy, so that A holds writes B never got. B is promoted
# (twice: harmless), mounted and written; A is demoted (twice) and served;
# B's `sync` then brings A up to date: both stores equal field for field,
# B sent only its changes (the bytes are counted), and every write A made
# after the cut is still somewhere a user can find it. About 10 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/failover_lib.sh"

serve_node B
mount_node A
wait_until 15 is_connected A
check "A replicates to B over the veth" is_connected A

mkdir "$A_MNT/data"
for i in $(seq 1 100); do head -c 16384 /dev/urandom >"$A_MNT/data/f$i"; done
head -c 4000000 /dev/urandom >"$A_MNT/big"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 30 >/dev/null
check "A synced before the failure" [ $? -eq 0 ]

"$TWINFS_BIN" promote --state "$B_STATE" >"$T/p0.out" 2>&1; rc=$?
check "promote is refused (69) while A is connected" [ $rc -eq 69 ]
check "... saying a primary is connected" grep -q "primary is connected" "$T/p0.out"
check "... and B is still a secondary" grep -q "^role secondary" "$B_STATE/history"

# A goes on writing with the link cut, and dies in the middle of a copy
link_down
mkdir "$T/late_src"
for i in $(seq 1 30); do head -c 65536 /dev/urandom >"$T/late_src/l$i"; done
( mkdir "$A_MNT/late" && for i in $(seq 1 30); do sleep 0.1
	cp "$T/late_src/l$i" "$A_MNT/late/l$i" && echo "$i" >>"$T/late.done"
  done ) 2>/dev/null &
COPIER=$!
wait_until 20 sh -c "[ \$(wc -l <'$T/late.done' 2>/dev/null || echo 0) -ge 10 ]"
kill_node A
kill "$COPIER" 2>/dev/null; wait "$COPIER" 2>/dev/null
link_up
DONE=$(wc -l <"$T/late.done")
note "A killed after $DONE finished copies"

# B notices A is gone (5 heartbeats), then takes over
wait_until 15 not_connected B
check "B sees the primary gone" not_connected B
"$TWINFS_BIN" promote --state "$B_STATE" >"$T/p1.out" 2>&1
check "promote exits 0" [ $? -eq 0 ]
"$TWINFS_BIN" promote --state "$B_STATE" >"$T/p2.out" 2>&1
check "promote again exits 0 and changes nothing" sh -c "[ $? -eq 0 ] && grep -q 'already' '$T/p2.out'"
check "B's history has a second generation" [ "$(grep -c '^gen ' "$B_STATE/history")" -eq 2 ]
stop_node B
mount_node B
for i in 1 2 3; do head -c 16384 /dev/urandom >"$B_MNT/data/f$i"; done
for i in 1 2; do head -c 16384 /dev/urandom >"$B_MNT/data/new$i"; done
rm "$B_MNT/data/f50"
CHANGED=$((5 * 16384))

"$TWINFS_BIN" demote --state "$A_STATE" >"$T/d1.out" 2>&1
check "demote exits 0" [ $? -eq 0 ]
"$TWINFS_BIN" demote --state "$A_STATE" >"$T/d2.out" 2>&1
check "demote again exits 0 and changes nothing" sh -c "[ $? -eq 0 ] && grep -q 'already' '$T/d2.out'"
serve_node A
"$TWINFS_BIN" sync --state "$B_STATE" --timeout 60 >/dev/null
check "sync on B after A returned exits 0" [ $? -eq 0 ]
check "A's store equals B's (treecmp, every field)" same_stores "$A_STORE" "$B_STORE"
SENT=$(status_of B bytes_sent)
note "failback moved $SENT data bytes for $CHANGED changed"
check "failback sent only the changes (<= 2x)" [ "$SENT" -le $((2 * CHANGED)) ]
check "... and every change" [ "$SENT" -ge "$CHANGED" ]

# Every write A made after the cut is still somewhere a user can find it:
# in the store (A's kernel may deliver what its socket held once the link
# is back, after the kill) or as a conflict copy in A's state directory.
found=0 kept=0
for i in $(seq 1 "$DONE"); do
	if cmp -s "$B_STORE/late/l$i" "$T/late_src/l$i"; then
		found=$((found + 1))
		continue
	fi
	for c in "$A_STATE"/conflicts/*/late/l$i; do
		cmp -s "$c" "$T/late_src/l$i" && { found=$((found + 1)); kept=$((kept + 1)); break; }
	done
done
note "$kept of $DONE late writes are conflict copies, the rest reached B"
check "all $DONE writes A made after the cut are kept ($found)" [ "$found" -eq "$DONE" ]
check "A's status lists the copies" [ "$(status_of A conflict_copies)" -ge "$kept" ]
if [ "$kept" -gt 0 ]; then
	check "status text names the folder" sh -c "'$TWINFS_BIN' status --state '$A_STATE' | grep -q 'conflicts/.*-demote/late/l'"
	# one command puts them back, through B's mount, from either node
	FOLDER=$(basename "$(ls -d "$A_STATE"/conflicts/*-demote)")
	"$TWINFS_BIN" resolve --state "$A_STATE" --restore "$FOLDER" --timeout 60 >"$T/r.out" 2>&1
	check "resolve --restore on A exits 0" [ $? -eq 0 ]
	"$TWINFS_BIN" sync --state "$B_STATE" --timeout 60 >/dev/null
	check "B syncs after the restore" [ $? -eq 0 ]
	back=0
	for i in $(seq 1 "$DONE"); do
		cmp -s "$B_STORE/late/l$i" "$T/late_src/l$i" && back=$((back + 1))
	done
	check "every late write is in B's store now ($back)" [ "$back" -eq "$DONE" ]
	check "stores equal after the restore" same_stores "$A_STORE" "$B_STORE"
	check "the restored folder is gone" [ ! -d "$A_STATE/conflicts/$FOLDER" ]
fi
finish
