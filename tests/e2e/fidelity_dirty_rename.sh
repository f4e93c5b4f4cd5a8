#!/bin/sh
# A folder renamed onto a name the first pass made, replayed over its own
# result. A peer that crashed mid-apply comes back dirty: its store holds
# the later records' effects. Here: mv src dst, mkdir src, src/x written.
# Replayed over that store, the RENAME moves the new src (holding x) onto
# the empty dst the first pass made, and no error says so: the peer ends
# with dst/x, which the primary does not have, and `twinfs sync` exited 0
# (difftest seed 200358: five names left in a folder on the peer). A
# replayed RENAME of a dirty replay must leave both names as the store has
# them. The crash is made exact as in fidelity_dirty_replay.sh. About 5 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"

start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"
mkdir "$MNT/src" "$MNT/d"
echo keep >"$MNT/d/keep"
synced 60
check "first sync exits 0" [ $? -eq 0 ]
seq_a=$(python3 "$TWINFS_SRC/tests/e2e/applied_state.py" "$P_STATE" | sed 's/seq=\([0-9]*\).*/\1/')

mv "$MNT/src" "$MNT/dst"
mkdir "$MNT/src"
echo x >"$MNT/src/x"
synced 60
check "second sync exits 0" [ $? -eq 0 ]
check "the stores are equal before the crash" stores_equal

stop_mount
kill_serve
python3 "$TWINFS_SRC/tests/e2e/applied_state.py" "$P_STATE" "$seq_a" 1
printf 'acked %s\n' "$seq_a" >"$A_STATE/journal/acked"
note "peer rewound to seq $seq_a: $(python3 "$TWINFS_SRC/tests/e2e/applied_state.py" "$P_STATE")"
start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer again"
synced 60
check "sync after the dirty restart exits 0" [ $? -eq 0 ]
check "the stores are equal" stores_equal
check "dst is empty on the peer, as on the primary" sh -c "[ -z \"\$(ls -A '$P_STORE/dst')\" ]"
stop_mount
finish
