#!/bin/sh
# The link between the mount and its peer is cut for several seconds while
# files are written: the writer sees no error, and after the link is back and
# `twinfs sync` returns, the stores are equal. Two network namespaces made by
# this test (mount side, peer side) joined by a veth pair; nftables in the
# mount's namespace drops all traffic to and from the peer during the cut.
# nsenter --net keeps the FUSE mount visible (ip netns exec would hide it).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
command -v ip >/dev/null || skip "ip missing (apt install iproute2)"
command -v nft >/dev/null || skip "nft missing (apt install nftables)"
command -v nsenter >/dev/null || skip "nsenter missing (apt install util-linux)"

NA=twfsa$$; NP=twfsp$$
ip netns add "$NA" 2>/dev/null || skip "cannot create network namespaces"
on_exit "ip netns del $NA 2>/dev/null"
ip netns add "$NP" || skip "cannot create a second network namespace"
on_exit "ip netns del $NP 2>/dev/null"
ip link add "va$$" netns "$NA" type veth peer name "vp$$" netns "$NP" ||
	skip "cannot create a veth pair"
A_IP=10.231.$(( $$ % 250 )).1
P_IP=10.231.$(( $$ % 250 )).2
ip -n "$NA" addr add "$A_IP/30" dev "va$$"
ip -n "$NP" addr add "$P_IP/30" dev "vp$$"
ip -n "$NA" link set "va$$" up; ip -n "$NA" link set lo up
ip -n "$NP" link set "vp$$" up; ip -n "$NP" link set lo up
INA=/run/netns/$NA; INP=/run/netns/$NP

nsenter --net="$INP" "$TWINFS_BIN" serve --store "$P_STORE" --state "$P_STATE" \
	--listen "$P_IP:$PORT" --insecure -f >>"$T/serve.log" 2>&1 &
SERVE_PID=$!
track_pid $SERVE_PID
wait_until 15 daemon_up "$P_STATE" || { cat "$T/serve.log"; fail "serve did not start"; }
nsenter --net="$INA" "$TWINFS_BIN" mount --store "$A_STORE" --state "$A_STATE" \
	--mountpoint "$MNT" --peer "$P_IP:$PORT" --insecure -f >>"$T/mount.log" 2>&1 &
MOUNT_PID=$!
track_pid $MOUNT_PID
track_mount "$MNT"
wait_until 15 is_mounted "$MNT" || { cat "$T/mount.log"; fail "mount did not start"; }
wait_until 15 connected
check "connected over the veth" [ $? -eq 0 ]

mkdir "$MNT/before"; head -c 2000000 /dev/urandom >"$MNT/before/a"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 20 >/dev/null
check "sync before the cut" [ $? -eq 0 ]

cut_link() {
	nsenter --net="$INA" nft -f - <<NFT
table inet twcut {
	chain in { type filter hook input priority 0; ip saddr $P_IP drop; }
	chain out { type filter hook output priority 0; ip daddr $P_IP drop; }
}
NFT
}
heal_link() { nsenter --net="$INA" nft delete table inet twcut; }
cut_link || skip "cannot load an nftables rule"
note "link cut"
(
	set -e
	mkdir "$MNT/during"
	for i in $(seq 1 30); do head -c 200000 /dev/urandom >"$MNT/during/f$i"; done
	head -c 8000000 /dev/urandom >"$MNT/during/big"
	echo ok >"$T/writer.ok"
) 2>"$T/writer.err"
check "writes during the cut succeed" [ -f "$T/writer.ok" ] && [ ! -s "$T/writer.err" ]
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 1 >/dev/null 2>&1; rc=$?
check "sync during the cut times out (75)" [ $rc -eq 75 ]
# the link is dead after 5 silent heartbeat intervals (1 s each), on both
# ends: the primary must stop saying "connected" within that (+ a tick)
disconnected() { ! connected; }
t0=$(date +%s)
wait_until 10 disconnected
check "the primary sees the dead link within 5 heartbeats ($(( $(date +%s) - t0 )) s after the writes)" [ $? -eq 0 ]
heal_link
note "link healed"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60
check "sync after the link is back exits 0" [ $? -eq 0 ]
check "stores equal after the cut" replicated
finish
