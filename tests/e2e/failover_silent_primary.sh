#!/bin/sh
# A primary that is lost without a goodbye (issue 23): its node loses its
# network, so no FIN ever reaches the secondary and the connection stays
# open there. `promote` is refused while the primary is heard from; once
# it has sent nothing for three heartbeat intervals it counts as lost and
# `promote` succeeds without --force, before the dead-link rule (five
# intervals) would have dropped it. When the link returns, the old
# primary is refused by the promoted node and its `sync` does not say
# synced. About 15 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/failover_lib.sh"

serve_node B
mount_node A
wait_until 15 is_connected A
check "A replicates to B over the veth" is_connected A
"$TWINFS_BIN" promote --state "$B_STATE" >"$T/p0.out" 2>&1; rc=$?
check "promote is refused (69) while A is heard from" [ $rc -eq 69 ]
check "... saying when A was last heard from" grep -q "heard from .* s ago" "$T/p0.out"

# The silence is timed from the last frame A sent: the batch `sync` waits
# for. The link goes down right after it, well within the 1 s A waits
# before its next heartbeat, so no frame of A's follows t0. (Timed from
# the link going down after other commands, the silence began up to a
# heartbeat earlier, by the machine's speed.)
mkdir "$A_MNT/data" && head -c 100000 /dev/urandom >"$A_MNT/data/f1"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 30 >/dev/null; rc=$?
t0=$(date +%s%N)
# A's node drops off the network: nothing, not even a FIN, reaches B
link_down
check "A synced" [ $rc -eq 0 ]
promoted() { "$TWINFS_BIN" promote --state "$B_STATE" >"$T/p1.out" 2>&1; }
wait_until 20 promoted
check "promote succeeds once A is silent, without --force" promoted
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
note "promoted ${ms} ms after the link went down"
check "... because A was silent (not the dead-link rule)" \
	grep -q "connected primary is silent; dropping it as lost" "$T/B.log"
check "... and not before three heartbeats of silence" [ "$ms" -ge 2500 ]
check "B's history has a second generation" [ "$(grep -c '^gen ' "$B_STATE/history")" -eq 2 ]

# the link comes back: A must not take B for its secondary
link_up
ahead() { [ "$(status_of A verdict)" = ahead ]; }
wait_until 30 ahead
check "A sees that B was promoted (verdict ahead)" ahead
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 10 >/dev/null 2>&1
check "A's sync does not say synced (69)" [ $? -eq 69 ]
check "B's store still holds A's synced file" cmp -s "$A_STORE/data/f1" "$B_STORE/data/f1"
finish
