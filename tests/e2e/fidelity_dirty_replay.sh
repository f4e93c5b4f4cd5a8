#!/bin/sh
# A peer that crashed mid-apply comes back "dirty": its store holds changes
# past the seq it recorded. The primary replays from that seq over a store
# that already holds the later records' effects, and some records cannot
# run there (mkdir d1/sub, where d1 was then renamed away: ENOENT).
# Repairing path after path costs a reconnect each (here one per folder)
# and, with a backoff once a repair fails too, did not converge (difftest
# seeds 40015 and 40077: `twinfs sync` timed out with the stores far apart).
# The first apply error of such a replay must make the next connection
# send a baseline: one apply error, then sync exits 0 and the stores are
# equal. The crash is made exact with both sides stopped: the peer's
# STATE/applied goes back to the earlier seq, dirty (applied_state.py), and
# the primary's journal/acked to the same seq. About 5 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"

start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"
mkdir -p "$MNT/d1" "$MNT/d2" "$MNT/d5"
echo f >"$MNT/d2/f"
echo g >"$MNT/d5/g"
synced 60
check "first sync exits 0" [ $? -eq 0 ]
seq_a=$(python3 "$TWINFS_SRC/tests/e2e/applied_state.py" "$P_STATE" | sed 's/seq=\([0-9]*\).*/\1/')

# Three chains whose records cannot replay over their own result: a file
# is made in a folder's subfolder, then the folder is renamed away (on the
# peer the subfolder is gone from the old name: ENOENT).
mkdir "$MNT/moved"
for d in d1 d2 d5; do
	mkdir "$MNT/$d/sub"
	echo y >"$MNT/$d/sub/y"
	chmod 600 "$MNT/$d/sub/y"
	mv "$MNT/$d" "$MNT/moved/$d"
done
synced 60
check "second sync exits 0" [ $? -eq 0 ]
check "the stores are equal before the crash" stores_equal

# The crash: both sides at rest, then the peer's recorded seq and the
# primary's acked seq go back to A, the peer's store keeps the window.
stop_mount
kill_serve
python3 "$TWINFS_SRC/tests/e2e/applied_state.py" "$P_STATE" "$seq_a" 1
printf 'acked %s\n' "$seq_a" >"$A_STATE/journal/acked"
note "peer rewound to seq $seq_a: $(python3 "$TWINFS_SRC/tests/e2e/applied_state.py" "$P_STATE")"
start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer again"
echo after >"$MNT/after"
synced 60
check "sync after the dirty restart exits 0" [ $? -eq 0 ]
check "the stores are equal" stores_equal
n=$(grep -c 'code=apply' "$T/serve.log")
note "apply errors the peer reported: $n"
check "one apply error at most, then a baseline (not a repair per path)" [ "$n" -le 1 ]
if [ "$n" -eq 1 ]; then
	check "the mount logs why it sends a baseline" \
		grep -q 'interrupted mid-apply, could not replay' "$T/mount.log"
fi
"$TWINFS_BIN" status --state "$A_STATE" --json >"$T/status.json"
check "status shows no stuck path" [ "$(json_field "$T/status.json" stuck_paths)" = "0" ]
stop_mount
finish
