#!/bin/sh
# keepalived drives failover and failback (issue 23): Debian's keepalived
# in each of two network namespaces, unicast peers, advert_int 1, both
# BACKUP with nopreempt, packaging/keepalived/twinfs-notify as the notify
# script and one twinfs config per node. A wins the first election and
# mounts, B serves. A's keepalived and mount are killed (SIGKILL): B's
# keepalived takes over, B is promoted and its mount takes writes (the
# time is printed). A's keepalived comes back: A becomes BACKUP, is
# demoted and served, catches up (stores equal), and does not take the
# role back. About 20 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/failover_lib.sh"
command -v keepalived >/dev/null || skip "keepalived missing (apt install keepalived)"
NOTIFY=$TWINFS_SRC/packaging/keepalived/twinfs-notify
VIP=10.232.$(( $$ % 250 )).3

# config NODE: the node's one config (both roles' keys) and keepalived's
for n in A B; do
	o=$(other $n)
	cat >"$T/$n.yaml" <<YAML
store: $(node_var $n STORE)
state: $(node_var $n STATE)
mountpoint: $(node_var $n MNT)
listen: $(node_var $n IP):$PORT
peer: $(node_var $o IP):$PORT
tls:
  insecure: true
YAML
	prio=253; [ $n = A ] && prio=254
	dev=fa$$; [ $n = B ] && dev=fb$$
	cat >"$T/$n.keepalived.conf" <<CONF
global_defs {
    router_id twinfs_$n
}
vrrp_instance twinfs {
    state BACKUP
    nopreempt
    interface $dev
    virtual_router_id 51
    priority $prio
    advert_int 1
    unicast_src_ip $(node_var $n IP)
    unicast_peer {
        $(node_var $o IP)
    }
    virtual_ipaddress {
        $VIP/32
    }
    notify "$NOTIFY --twinfs $TWINFS_BIN $T/$n.yaml"
}
CONF
done

# keepalived_start NODE: in the node's namespace, its own pid files
keepalived_start() {
	nsenter --net="$(node_in "$1")" keepalived -n -l -P -f "$T/$1.keepalived.conf" \
		-p "$T/$1.kd.pid" -r "$T/$1.kd.vrrp.pid" >>"$T/$1.keepalived.log" 2>&1 &
	eval "KD_$1=$!"
	track_pid $!
}
# the daemons the notify script starts detach: stop them by their pids
daemon_pid() { "$TWINFS_BIN" status --state "$(node_var "$1" STATE)" --json 2>/dev/null |
	sed -n 's/.*"pid":\([0-9]*\).*/\1/p'; }
cleanup_daemons() {
	for n in A B; do
		umount -l "$(node_var $n MNT)" 2>/dev/null
		p=$(daemon_pid $n); [ -n "$p" ] && kill "$p" 2>/dev/null
	done
}
on_exit "kill \${KD_A:-} \${KD_B:-} 2>/dev/null; sleep 0.3; cleanup_daemons"
role_of() { status_of "$1" role 2>/dev/null; }
is_primary() { [ "$(role_of "$1")" = primary ]; }
is_secondary() { [ "$(role_of "$1")" = secondary ]; }
writable() { is_mounted "$B_MNT" && echo probe >"$B_MNT/.probe" 2>/dev/null; }

keepalived_start A
wait_until 20 is_primary A
check "A wins the first election and mounts" is_primary A
keepalived_start B
wait_until 20 is_secondary B
check "B is BACKUP and serves" is_secondary B
wait_until 20 is_connected A
check "A replicates to B" is_connected A
mkdir "$A_MNT/d"
for i in $(seq 1 50); do head -c 8192 /dev/urandom >"$A_MNT/d/f$i"; done
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 30 >/dev/null
check "A synced" [ $? -eq 0 ]

# the MASTER dies: keepalived and mount, SIGKILL
t0=$(date +%s%N)
A_MOUNT=$(daemon_pid A)
KIDS=$(cat "$T/A.kd.vrrp.pid" 2>/dev/null)	# keepalived's VRRP child
kill -9 "$KD_A" "$A_MOUNT"
umount -l "$A_MNT" 2>/dev/null
wait_until 30 writable
t1=$(date +%s%N)
check "B's mount takes writes after the failover" writable
note "failover: $(( (t1 - t0) / 1000000 )) ms from the kill to a write on B's mount"
check "B is the primary" is_primary B
for i in 1 2 3; do head -c 8192 /dev/urandom >"$B_MNT/d/f$i"; done
echo new >"$B_MNT/d/new"

# A comes back: BACKUP, demoted, served, caught up; no takeover. Its old
# VRRP child resigns when its parent dies; a new keepalived refuses to
# start while that one lives.
for p in $KIDS; do wait_until 20 sh -c "! kill -0 $p 2>/dev/null"; done
keepalived_start A
wait_until 30 is_secondary A
check "A comes back as BACKUP and serves" is_secondary A
"$TWINFS_BIN" sync --state "$B_STATE" --timeout 60 >/dev/null
check "B syncs to A" [ $? -eq 0 ]
rm -f "$B_MNT/.probe"
"$TWINFS_BIN" sync --state "$B_STATE" --timeout 60 >/dev/null
check "A's store equals B's (treecmp)" same_stores "$A_STORE" "$B_STORE"
sleep 4	# more than three adverts: a preempting A would have taken over by now
check "A does not take the role back (nopreempt)" sh -c "[ \"\$('$TWINFS_BIN' status --state '$A_STATE' --json | grep -o '\"role\":\"[a-z]*\"')\" = '\"role\":\"secondary\"' ]"
check "B is still the primary" is_primary B
finish
