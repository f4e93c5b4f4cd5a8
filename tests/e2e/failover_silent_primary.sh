#!/bin/sh
# A primary that is lost without a goodbye (issue 23): its node loses its
# network, so no FIN ever reaches the secondary and the connection stays
# open there. `promote` is refused while the primary is heard from, and
# while it is stopped on a node that still answers (SIGSTOP: its kernel
# acknowledges the secondary's heartbeats). Once it has sent nothing for a
# heartbeat interval while its node leaves the secondary's heartbeats
# unacknowledged (two TCP retransmission timeouts), it counts as lost and
# `promote` succeeds without --force, before the three intervals of the
# silence rule and the five of the dead-link rule. When the link returns,
# the old primary is refused by the promoted node and its `sync` does not
# say synced. About 15 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/failover_lib.sh"

serve_node B
mount_node A
wait_until 15 is_connected A
check "A replicates to B over the veth" is_connected A
"$TWINFS_BIN" promote --state "$B_STATE" >"$T/p0.out" 2>&1; rc=$?
check "promote is refused (69) while A is heard from" [ $rc -eq 69 ]
check "... saying when A was last heard from" grep -q "heard from .* s ago" "$T/p0.out"

# A stopped, its node alive: silent, but not lost. Tried until it has been
# silent for 1.5 s, past a heartbeat interval (the TCP rule's wait) and
# short of the silence rule's three.
kill -STOP "$A_PID"
quiet_s() { sed -n 's/.*heard from \([0-9]*\)\.\([0-9]\) s ago.*/\1\2/p' "$T/p2.out"; }
long_quiet() {
	"$TWINFS_BIN" promote --state "$B_STATE" >"$T/p2.out" 2>&1
	[ $? -eq 69 ] && [ "$(quiet_s)" -ge 15 ]
}
wait_until 10 long_quiet; rc=$?
kill -CONT "$A_PID"
sed 's/^/# /' "$T/p2.out"
check "promote is refused while A is stopped on a node that answers" [ $rc -eq 0 ]
check "... and B still serves A" sh -c "! grep -q 'dropping it as lost' '$T/B.log'"
wait_until 15 is_connected A

# The silence is timed from the last frame A sent: the batch `sync` waits
# for. A goes off the network right after it, well within the 1 s A waits
# before its next heartbeat, so no frame of A's follows t0. (Timed from
# the link going down after other commands, the silence began up to a
# heartbeat earlier, by the machine's speed.)
mkdir "$A_MNT/data" && head -c 100000 /dev/urandom >"$A_MNT/data/f1"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 30 >/dev/null; rc=$?
t0=$(date +%s%N)
# A's node drops off the network: nothing, not even a FIN or an ACK,
# comes back to B (its address goes; B's link stays up, as when a server
# loses power: with B's own link down, B would be the node cut off)
node_off() { ip -n "$NA" addr del "$A_IP/30" dev "fa$$"; }
node_on() { ip -n "$NA" addr add "$A_IP/30" dev "fa$$"; }
node_off
check "A synced" [ $rc -eq 0 ]
promoted() { "$TWINFS_BIN" promote --state "$B_STATE" >"$T/p1.out" 2>&1; }
wait_until 20 promoted
check "promote succeeds once A is silent, without --force" promoted
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
note "promoted ${ms} ms after A went off the network"
grep "dropping it as lost" "$T/B.log" | sed 's/^/# /'
check "... because A's node did not answer (not the silence or dead-link rule)" \
	grep -q "connected primary's node does not answer; dropping it as lost" "$T/B.log"
check "... after at least a heartbeat interval of silence" [ "$ms" -ge 1000 ]
check "B's history has a second generation" [ "$(grep -c '^gen ' "$B_STATE/history")" -eq 2 ]

# A's node comes back: A must not take B for its secondary
node_on
ahead() { [ "$(status_of A verdict)" = ahead ]; }
wait_until 30 ahead
check "A sees that B was promoted (verdict ahead)" ahead
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 10 >/dev/null 2>&1
check "A's sync does not say synced (69)" [ $? -eq 69 ]
check "B's store still holds A's synced file" cmp -s "$A_STORE/data/f1" "$B_STORE/data/f1"
finish
