#!/bin/sh
# A folder renamed onto a name the first pass made, replayed over its own
# result. Records are replayed over what the peer acked, and its store can
# hold their effects already: a peer that crashed mid-apply comes back
# dirty, and a NEEDS_SCAN answered before a reconnect sent a folder as the
# store had it later. Here: mv src dst, mkdir src, src/x written. Replayed
# over that store, the RENAME moves the new src (holding x) onto the empty
# dst the first pass made, and no error says so: the peer ends with dst/x,
# which the primary does not have, and `twinfs sync` exited 0 (difftest
# seed 200358: five names left in a folder on the peer). A replayed RENAME
# the peer may have seen the result of must leave both names as the store
# has them. The crash is made exact as in fidelity_dirty_replay.sh: both
# sides stopped, the peer's STATE/applied and the primary's journal/acked
# rewound; round 1 dirty, round 2 clean. About 8 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"

start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"
for round in 1 2; do
	dirty=$((2 - round))
	mkdir "$MNT/src$round"
	synced 60
	check "round $round: first sync exits 0" [ $? -eq 0 ]
	seq_a=$(python3 "$TWINFS_SRC/tests/e2e/applied_state.py" "$P_STATE" | sed 's/seq=\([0-9]*\).*/\1/')
	mv "$MNT/src$round" "$MNT/dst$round"
	mkdir "$MNT/src$round"
	echo x >"$MNT/src$round/x"
	synced 60
	check "round $round: second sync exits 0" [ $? -eq 0 ]
	check "round $round: the stores are equal before the crash" stores_equal

	stop_mount
	kill_serve
	python3 "$TWINFS_SRC/tests/e2e/applied_state.py" "$P_STATE" "$seq_a" "$dirty"
	printf 'acked %s\n' "$seq_a" >"$A_STATE/journal/acked"
	note "round $round: peer rewound to $(python3 "$TWINFS_SRC/tests/e2e/applied_state.py" "$P_STATE")"
	start_serve
	start_mount
	wait_until 15 connected || fail "the mount did not connect to the peer again"
	synced 60
	check "round $round: sync after the restart exits 0" [ $? -eq 0 ]
	check "round $round: the stores are equal" stores_equal
	check "round $round: dst$round is empty on the peer, as on the primary" \
		sh -c "[ -z \"\$(ls -A '$P_STORE/dst$round')\" ]"
done
stop_mount
finish
