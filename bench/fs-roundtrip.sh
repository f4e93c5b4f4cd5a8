#!/bin/sh
# fs-roundtrip: what one FUSE round trip costs. A getxattr loop (bench's
# fs_rtt: an xattr that does not exist, so every call is one request and
# its reply) on a file in local-only mounts, one per transport setting:
# the io_uring rings with each polling window of --windows (0 = the ring
# threads sleep at once) and /dev/fuse (--no-uring), against the same
# loop on the store file itself. All mounts and the store are measured
# batch by batch in turn in one run (fs_rtt), --runs runs per condition,
# first on the machine as it is ("quiet"), then with `stress-ng --cpu 2`
# beside it ("busy"). Stores: ext4 on a loop device in /dev/shm.
#
# Each run loops twice: on a user xattr, which the daemon looks up in the
# store, and on security.capability of a file the mount made, which it
# answers from memory (the transport alone). Per condition, loop and
# setting it prints the median of the runs' medians
# (microseconds per call), the caller's CPU migrations per call (a reply
# that wakes the caller on the other CPU), and the daemon's CPU time per
# request (what polling costs while the mount is busy). Then the CPU the
# daemons use while the mounts are idle (utime + stime over --idle SEC).
# The summary line compares the default setting with the target
# (<= 15 us on an idle machine, idle mount <= 5 % of one CPU). Each
# figure carries the load average and idle share it was taken at: on a
# shared machine "quiet" is only as quiet as the neighbours.
#
# Usage: bench/fs-roundtrip.sh [--windows "0 50 200"] [--runs N]
#            [--calls N] [--batches N] [--idle SEC] [--load quiet|busy|both]
# Env: TWINFS_BIN (default build/src/twinfs), FS_RTT (build/bench/fs_rtt).
# Needs root (loop device, FUSE), fuse3, e2fsprogs, stress-ng for "busy".
set -u
WINDOWS="0 50 200 1000"; RUNS=5; CALLS=2000; BATCHES=9; IDLE=60; LOAD=both
while [ $# -gt 0 ]; do
	case $1 in
	--windows) WINDOWS=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--calls) CALLS=$2; shift 2 ;;
	--batches) BATCHES=$2; shift 2 ;;
	--idle) IDLE=$2; shift 2 ;;
	--load) LOAD=$2; shift 2 ;;
	-h|--help) sed -n '2,25p' "$0"; exit 0 ;;
	*) echo "fs-roundtrip: unknown option $1" >&2; exit 64 ;;
	esac
done
case $LOAD in quiet|busy|both) ;; *) echo "fs-roundtrip: --load is quiet, busy or both" >&2; exit 64 ;; esac
HERE=$(cd "$(dirname "$0")/.." && pwd)
BIN=${TWINFS_BIN:-$HERE/build/src/twinfs}
RTT=${FS_RTT:-$HERE/build/bench/fs_rtt}
[ "$(id -u)" -eq 0 ] || { echo "fs-roundtrip: needs root" >&2; exit 77; }
[ -x "$BIN" ] && [ -x "$RTT" ] || { echo "fs-roundtrip: build first (no $BIN or $RTT)" >&2; exit 66; }
W=$(mktemp -d /dev/shm/twinfs-rtt.XXXXXX)
PIDS=""; LOOP=""
. "$HERE/bench/lib.sh"
bench_trap
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
DEFAULT_POLL=$("$BIN" config keys 2>/dev/null | awk '$1 == "fuse.uring_poll_us" {print $3}')

bench_loop_ext4 256
touch "$W/disk/f"
# name:args pairs, one mount each
SETS=""
for w in $WINDOWS; do SETS="$SETS poll$w:--uring-poll,$w"; done
SETS="$SETS devfuse:--no-uring"
PATHS=""
for s in $SETS; do
	n=${s%%:*}; a=$(echo "${s#*:}" | tr , ' ')
	mkdir -p "$W/disk/$n" "$W/state-$n" "$W/mnt-$n"
	# shellcheck disable=SC2086
	"$BIN" mount --store "$W/disk/$n" --state "$W/state-$n" --mountpoint "$W/mnt-$n" -q $a \
		2>>"$W/mount.log" || { cat "$W/mount.log" >&2; exit 1; }
	PIDS="$PIDS $(bench_mount_pid "$W/mnt-$n")"
	touch "$W/mnt-$n/f"
	PATHS="$PATHS $W/mnt-$n/f"
done
PATHS="$PATHS $W/disk/f"
echo "# fs-roundtrip: $(nproc) cpus, $(uname -r), $("$BIN" --version 2>/dev/null | head -n1), $(date -u +%FT%TZ)"
echo "# settings:$(for s in $SETS; do printf ' %s' "${s%%:*}"; done) store; default fuse.uring_poll_us=${DEFAULT_POLL:-?}"

# measure COND: RUNS runs of fs_rtt over every path, medians per setting
# One run of fs_rtt over every path with xattr NAME; appends
# "setting run median migrations load..." lines to FILE.
rtt_run() {
	name=$1 file=$2 r=$3 ld=$4
	# shellcheck disable=SC2086
	"$RTT" --calls "$CALLS" --batches "$BATCHES" --name "$name" $PATHS >"$W/run" || exit 1
	for s in $SETS store; do
		n=${s%%:*}
		[ "$n" = store ] && p=$W/disk/f || p=$W/mnt-$n/f
		awk -v p="$p" -v n="$n" -v r="$r" -v ld="$ld" '$1 == p {
			sub("median_us=", "", $2); sub("migrations_per_call=", "", $5)
			print n, r, $2, $5, ld }' "$W/run" >>"$file"
	done
}

# Medians of FILE per setting, one table; KIND names it in the summary.
rtt_table() {
	cond=$1 kind=$2 file=$3
	printf '%-6s %-6s %-10s %10s %10s %12s  %s\n' "$cond" "$kind" setting us/call migr/call cpu_us/req "load at each run"
	for s in $SETS store; do
		n=${s%%:*}
		med=$(awk -v n="$n" '$1 == n {print $3}' "$file" | median)
		mig=$(awk -v n="$n" '$1 == n {print $4}' "$file" | median)
		if [ "$n" = store ]; then cpu=-; else eval "cpu=\$cpu_$n"; fi
		lds=$(awk -v n="$n" '$1 == n {printf "%sload %s idle %s", sep, $6, $8; sep="; "}' "$file")
		printf '%-6s %-6s %-10s %10.2f %10.3f %12s  %s\n' "$cond" "$kind" "$n" "$med" "$mig" "$cpu" "$lds"
		echo "$cond $kind $n $med" >>"$W/summary"
	done
}

# measure COND: RUNS runs, each of both xattrs: "store", a user xattr the
# daemon looks up in the store (through /proc/self/fd), and "memory",
# security.capability of a file the mount made, answered from memory
# (the transport alone).
measure() {
	cond=$1
	: >"$W/res-$cond-store"; : >"$W/res-$cond-memory"
	for s in $SETS; do
		n=${s%%:*}
		eval "t0_$n=\$(bench_cpu_ticks $(bench_mount_pid "$W/mnt-$n"))"
	done
	for r in $(seq 1 "$RUNS"); do
		ld=$(bench_load)
		rtt_run user.twinfs-rtt "$W/res-$cond-store" "$r" "$ld"
		rtt_run security.capability "$W/res-$cond-memory" "$r" "$ld"
	done
	hz=$(getconf CLK_TCK)
	calls=$(( (CALLS * BATCHES + CALLS / 4 + 1) * RUNS * 2 ))
	for s in $SETS; do
		n=${s%%:*}
		eval "t0=\$t0_$n"
		t1=$(bench_cpu_ticks "$(bench_mount_pid "$W/mnt-$n")")
		eval "cpu_$n=$(awk -v a="$t0" -v b="$t1" -v hz="$hz" -v c="$calls" 'BEGIN {printf "%.1f", (b - a) / hz * 1e6 / c}')"
	done
	rtt_table "$cond" store "$W/res-$cond-store"
	rtt_table "$cond" memory "$W/res-$cond-memory"
}

: >"$W/summary"
[ "$LOAD" = busy ] || measure quiet
if [ "$LOAD" != quiet ]; then
	bench_stress_start
	measure busy
	bench_stress_stop
fi

# Idle cost: every mount idle for IDLE seconds (polling ends one window
# after the last request).
sleep 1
printf 'idle     %-10s %10s\n' setting cpu_pct
worst=0
for s in $SETS; do
	n=${s%%:*}
	eval "i0_$n=\$(bench_cpu_ticks $(bench_mount_pid "$W/mnt-$n"))"
done
sleep "$IDLE"
hz=$(getconf CLK_TCK)
for s in $SETS; do
	n=${s%%:*}
	eval "i0=\$i0_$n"
	i1=$(bench_cpu_ticks "$(bench_mount_pid "$W/mnt-$n")")
	pct=$(awk -v a="$i0" -v b="$i1" -v hz="$hz" -v t="$IDLE" 'BEGIN {printf "%.2f", (b - a) / hz / t * 100}')
	printf 'idle     %-10s %10s\n' "$n" "$pct"
	worst=$(awk -v a="$worst" -v b="$pct" 'BEGIN {print (b > a) ? b : a}')
done

def=poll${DEFAULT_POLL:-200}
val() { awk -v c="$1" -v k="$2" -v n="$3" '$1 == c && $2 == k && $3 == n {print $4}' "$W/summary"; }
for cond in quiet busy; do
	for kind in store memory; do
		m=$(val $cond $kind "$def")
		[ -n "$m" ] || continue
		if [ "$kind" = store ]; then what="getxattr looked up in the store"; else what="getxattr answered from memory"; fi
		if [ "$cond" = quiet ]; then
			verdict=$(awk -v m="$m" 'BEGIN {print (m <= 15) ? "met" : "missed"}')
			tgt=" (target <= 15 us on an idle machine: $verdict; only as idle as the machine was)"
		else tgt=""; fi
		echo "roundtrip $cond, $what: rings, default window ($def) ${m} us; rings without polling $(val $cond $kind poll0) us; /dev/fuse $(val $cond $kind devfuse) us; store $(val $cond $kind store) us$tgt"
	done
done
echo "idle mount CPU: at most ${worst} % of one CPU over ${IDLE} s (target <= 5 %: $(awk -v w="$worst" 'BEGIN {print (w <= 5) ? "met" : "missed"}'))"
