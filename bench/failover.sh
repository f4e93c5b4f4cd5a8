#!/bin/sh
# Failover and failback benchmark (issue 23; not a timed test). Two nodes
# as network namespaces joined by a veth pair, stores on ext4 over loop
# devices whose images live in /dev/shm (every block written once first).
#
# 1. Failover time: keepalived in each namespace (unicast, advert_int 1,
#    nopreempt, packaging/keepalived/twinfs-notify). The MASTER's mount and
#    keepalived are killed with SIGKILL; timed until the other node's mount
#    accepts a write. Two ways, alternating: "node lost" (the MASTER's
#    address is taken off its end of the veth first, so that no FIN, RST
#    or advert reaches the other node, as when a server loses power or its
#    network; the link stays up, as a switch port would, or the other
#    keepalived would see its own interface fail;
#    then every keepalived process of the MASTER is killed: the BACKUP
#    waits for 3 missed adverts, and its serve still holds the dead
#    primary's connection) and "keepalived killed" (its parent only: the
#    VRRP child resigns at once; the kernel closes the mount's
#    connection). The direction alternates; the killed node returns as
#    BACKUP, its address back.
# 2. Failback resync: a tree of --files files (0-200 KB, as the copy
#    benchmarks) synced; the primary's mount is killed; the secondary is
#    promoted and mounted and --changed-pct % of the files are rewritten
#    there. Then, side by side in alternating order: the old primary
#    demoted and served until the new primary's `twinfs sync` returns, and
#    `rsync -a --delete` of the new primary's store to an rsync daemon on
#    the old primary's node holding a copy of its store as it was. Bytes:
#    twinfs's file data sent and frame bytes received, rsync's --stats.
# Prints each round, medians and ratios (targets: failover <= 3 s; resync
# bytes <= 2x the changed bytes, time <= 1.0x rsync).
# Usage: bench/failover.sh [--files N] [--changed-pct P] [--runs N]
#        (defaults: 10000 files, 1 %, 3 runs of each part)
# Env: TWINFS_BIN (default: build/src/twinfs). Needs root, fuse3,
# e2fsprogs, iproute2, keepalived, rsync.
set -u
FILES=10000; PCT=1; RUNS=3
while [ $# -gt 0 ]; do
	case $1 in
	--files) FILES=$2; shift 2 ;;
	--changed-pct) PCT=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	-h|--help) sed -n '2,27p' "$0"; exit 0 ;;
	*) echo "unknown option $1" >&2; exit 64 ;;
	esac
done
HERE=$(cd "$(dirname "$0")/.." && pwd)
BIN=${TWINFS_BIN:-$HERE/build/src/twinfs}
NOTIFY=$HERE/packaging/keepalived/twinfs-notify
[ "$(id -u)" -eq 0 ] || { echo "needs root" >&2; exit 77; }
for c in keepalived rsync ip nsenter mkfs.ext4; do
	command -v $c >/dev/null || { echo "$c missing" >&2; exit 77; }
done
W=$(mktemp -d /dev/shm/twinfs-failover.XXXXXX)
PIDS=""; LOOPS=""
NA=twbfa$$; NB=twbfb$$
. "$HERE/bench/lib.sh"
BENCH_BEFORE_RM='bench_failover_cleanup'
bench_failover_cleanup() {
	for n in A B; do
		p=$("$BIN" status --state "$W/$n/disk/state" --json 2>/dev/null |
			sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
		umount -l "$W/$n/mnt" 2>/dev/null
		[ -n "$p" ] && kill "$p" 2>/dev/null
	done
	sleep 0.5
	for n in A B; do umount "$W/$n/disk" 2>/dev/null; done
	for l in $LOOPS; do losetup -d "$l" 2>/dev/null; done
	ip netns del "$NA" 2>/dev/null; ip netns del "$NB" 2>/dev/null
}
bench_trap
now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms() { echo $(( ($2 - $1) / 1000000 )); }

# ---- two nodes, each with a store and state on its own ext4 ----
ip netns add "$NA" && ip netns add "$NB" || { echo "cannot make namespaces" >&2; exit 77; }
ip link add "ba$$" netns "$NA" type veth peer name "bb$$" netns "$NB"
A_IP=10.233.$(( $$ % 250 )).1; B_IP=10.233.$(( $$ % 250 )).2; VIP=10.233.$(( $$ % 250 )).3
ip -n "$NA" addr add "$A_IP/30" dev "ba$$"; ip -n "$NB" addr add "$B_IP/30" dev "bb$$"
for ns in $NA $NB; do ip -n "$ns" link set lo up; done
ip -n "$NA" link set "ba$$" up; ip -n "$NB" link set "bb$$" up
SRC=$W/src
bench_make_dataset "$SRC" 0 "$FILES"
TOTAL=$(du -sb "$SRC" | cut -f1)
IMG_MB=$(( TOTAL * 4 / 1048576 + 512 ))
for n in A B; do
	truncate -s "${IMG_MB}M" "$W/$n.img"
	mkfs.ext4 -q -F "$W/$n.img"
	l=$(losetup --show -f "$W/$n.img"); LOOPS="$LOOPS $l"
	mkdir -p "$W/$n/disk" "$W/$n/mnt"
	mount "$l" "$W/$n/disk"
	dd if=/dev/zero of="$W/$n/disk/fill" bs=1M count=$(( IMG_MB - 256 )) status=none 2>/dev/null
	rm -f "$W/$n/disk/fill"
done
sync
ip_of() { [ "$1" = A ] && echo "$A_IP" || echo "$B_IP"; }
ns_of() { [ "$1" = A ] && echo "/run/netns/$NA" || echo "/run/netns/$NB"; }
other() { [ "$1" = A ] && echo B || echo A; }
st() { echo "$W/$1/disk/state"; }
store() { echo "$W/$1/disk/store"; }
status_key() { "$BIN" status --state "$(st "$1")" --json 2>/dev/null |
	sed -n "s/.*\"$2\":\"\{0,1\}\([^\",}]*\).*/\1/p"; }
echo "# twinfs $("$BIN" --version | cut -d' ' -f2), $(git -C "$HERE" rev-parse --short HEAD 2>/dev/null)"
echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cpus; load: $(cut -d' ' -f1-3 /proc/loadavg) (a shared machine)"
echo "# tree: $FILES files, $(( TOTAL / 1048576 )) MiB; stores on ext4 over loop devices in /dev/shm; nodes in network namespaces"

fresh() { # clean stores and states on both nodes
	for n in A B; do rm -rf "$(st $n)" "$(store $n)" "$W/$n/rsync"; mkdir -p "$(st $n)" "$(store $n)"; done
}
config() { # NODE: the node's config, both roles' keys
	cat >"$W/$1.yaml" <<YAML
store: $(store "$1")
state: $(st "$1")
mountpoint: $W/$1/mnt
listen: $(ip_of "$1"):7420
peer: $(ip_of "$(other "$1")"):7420
tls:
  insecure: true
log:
  level: warn
YAML
}
for n in A B; do config $n; done
serve() { nsenter --net="$(ns_of "$1")" "$BIN" serve --config "$W/$1.yaml" >>"$W/$1.log" 2>&1; }
mount_() { nsenter --net="$(ns_of "$1")" "$BIN" mount --config "$W/$1.yaml" >>"$W/$1.log" 2>&1; }
stop_daemon() { # NODE
	p=$(status_key "$1" pid); [ -n "$p" ] || return 0
	if [ "$(status_key "$1" role)" = primary ]; then fusermount3 -u "$W/$1/mnt"; else kill "$p"; fi
	while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
}

# ---- 1: failover time ----
echo "## failover: kill the MASTER's mount and keepalived -> a write on the other node's mount"
fresh
for n in A B; do
	prio=253; [ $n = A ] && prio=254
	dev=ba$$; [ $n = B ] && dev=bb$$
	cat >"$W/$n.kd.conf" <<CONF
vrrp_instance twinfs {
    state BACKUP
    nopreempt
    interface $dev
    virtual_router_id 52
    priority $prio
    advert_int 1
    unicast_src_ip $(ip_of $n)
    unicast_peer {
        $(ip_of "$(other $n)")
    }
    virtual_ipaddress {
        $VIP/32
    }
    notify "$NOTIFY --twinfs $BIN $W/$n.yaml"
}
CONF
done
kd_start() {
	nsenter --net="$(ns_of "$1")" keepalived -n -l -P -f "$W/$1.kd.conf" -p "$W/$1.kd.pid" \
		-r "$W/$1.kd.vrrp.pid" >>"$W/$1.kd.log" 2>&1 &
	eval "KD_$1=$!"; PIDS="$PIDS $!"
}
wait_role() { # NODE ROLE SECONDS
	i=0; while [ "$(status_key "$1" role)" != "$2" ]; do
		i=$((i + 1)); [ $i -gt $(( $3 * 10 )) ] && return 1; sleep 0.1; done
}
kd_start A; wait_role A primary 30 || { echo "A never became MASTER" >&2; exit 1; }
kd_start B; wait_role B secondary 30 || { echo "B never served" >&2; exit 1; }
cp -a "$SRC/d00" "$W/A/mnt/" && "$BIN" sync --state "$(st A)" --timeout 120 >/dev/null
M=A
for r in $(seq 1 $(( RUNS * 2 ))); do
	S=$(other $M)
	wait_role "$S" secondary 60 || { echo "round $r: $S not serving" >&2; exit 1; }
	"$BIN" sync --state "$(st $M)" --timeout 120 >/dev/null
	mode=node-lost; [ $(( r % 2 )) -eq 0 ] && mode=keepalived-killed
	kd=$(eval echo "\$KD_$M"); mp=$(status_key "$M" pid)
	kids=$(cat "$W/$M.kd.vrrp.pid" 2>/dev/null)	# the VRRP child
	dev=ba$$; [ $M = B ] && dev=bb$$
	t0=$(now)
	if [ $mode = node-lost ]; then
		ip -n "$(basename "$(ns_of $M)")" addr del "$(ip_of $M)/30" dev "$dev"
		kill -9 "$kd" $kids "$mp"
	else
		kill -9 "$kd" "$mp"
	fi
	umount -l "$W/$M/mnt" 2>/dev/null
	until grep -qs " $W/$S/mnt fuse" /proc/mounts && echo x >"$W/$S/mnt/.probe" 2>/dev/null; do
		[ $(ms "$t0" "$(now)") -gt 60000 ] && { echo "round $r: no failover" >&2; tail -n 20 "$W/$S.log" "$W/$S.kd.log" >&2; exit 1; }
		sleep 0.02
	done
	t1=$(now)
	echo "failover $r $M->$S $mode: $(ms "$t0" "$t1") ms"
	echo "$mode $(ms "$t0" "$t1")" >>"$W/failover.txt"
	# a VRRP child that outlives its parent resigns and exits; a new
	# keepalived refuses to start while its pid file names a live one
	for p in $kids; do while kill -0 "$p" 2>/dev/null; do sleep 0.05; done; done
	[ $mode = node-lost ] && ip -n "$(basename "$(ns_of $M)")" addr add "$(ip_of $M)/30" dev "$dev"
	kd_start "$M"
	M=$S
done
for mode in node-lost keepalived-killed; do
	echo "median $mode: $(grep "^$mode " "$W/failover.txt" | cut -d' ' -f2 | median) ms"
done
for n in A B; do kill "$(eval echo "\$KD_$n")" 2>/dev/null; done
sleep 1; for n in A B; do stop_daemon $n; done

# ---- 2: failback resync against rsync -a ----
echo "## failback: $PCT % of $FILES files changed on the new primary"
fresh
nsenter --net="$(ns_of B)" "$BIN" serve --config "$W/B.yaml" >>"$W/B.log" 2>&1
mount_ A
cp -a "$SRC/." "$W/A/mnt/" && "$BIN" sync --state "$(st A)" --timeout 600 >/dev/null ||
	{ echo "initial sync failed" >&2; exit 1; }
P=A
for r in $(seq 1 "$RUNS"); do
	N=$(other $P)	# the new primary
	mp=$(status_key "$P" pid); kill -9 "$mp"; umount -l "$W/$P/mnt"
	while kill -0 "$mp" 2>/dev/null; do sleep 0.05; done
	"$BIN" promote --state "$(st $N)" >/dev/null && stop_daemon "$N" && mount_ "$N" ||
		{ echo "round $r: promote/mount failed" >&2; exit 1; }
	changed=$(python3 - "$W/$N/mnt" "$PCT" "$r" <<'PY'
import os, random, sys
root, pct, seed = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if not f.startswith("."))
rnd = random.Random(seed)
n, total = max(1, int(len(files) * pct / 100)), 0
for p in rnd.sample(files, n):
    size = os.path.getsize(p) or 4096
    with open(p, "wb") as f:
        f.write(os.urandom(size))
    total += size
print(total)
PY
)
	"$BIN" demote --state "$(st $P)" >/dev/null
	cp -a "$(store $P)" "$W/$P/rsync"
	port=$((8730 + r))
	cat >"$W/rsyncd.$r.conf" <<RS
pid file = $W/rsyncd.$r.pid
[m]
    path = $W/$P/rsync
    read only = false
    uid = root
    gid = root
RS
	nsenter --net="$(ns_of $P)" rsync --daemon --config="$W/rsyncd.$r.conf" --port=$port --address="$(ip_of $P)"
	sent0=$(status_key "$N" bytes_sent)
	twinfs_run() {
		t0=$(now)
		serve "$P"
		"$BIN" sync --state "$(st $N)" --timeout 600 >/dev/null || echo "round $r: sync failed" >&2
		t1=$(now); TW_MS=$(ms "$t0" "$t1")
		TW_DATA=$(( $(status_key "$N" bytes_sent) - sent0 ))
		TW_WIRE=$(status_key "$P" bytes_received)
	}
	rsync_run() {
		t0=$(now)
		nsenter --net="$(ns_of $N)" rsync -a --delete --stats "$(store $N)/" \
			"rsync://$(ip_of $P):$port/m/" >"$W/rsync.$r.out" 2>&1
		t1=$(now); RS_MS=$(ms "$t0" "$t1")
		RS_WIRE=$(( $(sed -n 's/^Total bytes sent: \([0-9,]*\).*/\1/p' "$W/rsync.$r.out" | tr -d ,) +
			    $(sed -n 's/^Total bytes received: \([0-9,]*\).*/\1/p' "$W/rsync.$r.out" | tr -d ,) ))
	}
	if [ $(( r % 2 )) -eq 1 ]; then twinfs_run; rsync_run; else rsync_run; twinfs_run; fi
	kill "$(cat "$W/rsyncd.$r.pid")" 2>/dev/null
	python3 "$HERE/tests/e2e/treecmp.py" "$(store $P)" "$(store $N)" >/dev/null 2>&1 && eq=equal || eq=DIFFER
	echo "failback $r $N->$P: changed $changed B; twinfs $TW_MS ms, data $TW_DATA B, frames $TW_WIRE B ($eq); rsync $RS_MS ms, $RS_WIRE B"
	echo "$changed $TW_MS $TW_DATA $TW_WIRE $RS_MS $RS_WIRE" >>"$W/failback.txt"
	rm -rf "$W/$P/rsync"
	P=$N
done
awk '{ printf "%s %.3f %.3f %.3f\n", $0, $3 / $1, $4 / $1, $2 / $5 }' "$W/failback.txt" >"$W/fb2.txt"
echo "median twinfs/rsync time: $(cut -d' ' -f9 "$W/fb2.txt" | median)"
echo "median data/changed: $(cut -d' ' -f7 "$W/fb2.txt" | median), frames/changed: $(cut -d' ' -f8 "$W/fb2.txt" | median)"
echo "median rsync bytes/changed: $(awk '{ printf "%.3f\n", $6 / $1 }' "$W/failback.txt" | median)"
