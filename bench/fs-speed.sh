#!/bin/sh
# fs-speed: a local-only twinfs mount against native, for the two copies
# of issue 27: one large file (--large MiB) and --small-count small files
# (0-200 KB, bench_make_dataset), each `cp` into a fresh folder and
# synced: native = cp + `sync -f` of its folder; mount = cp + `sync -f` of
# the mount + `sync -f` of the store (the mount's syncfs does not reach
# the daemon: the kernel sends FUSE_SYNCFS to virtiofs only, so the store
# is synced as well, and both syncs are shown). Source on tmpfs; native
# folder and store on one ext4 over a loop device in /dev/shm (every
# block written once first); STATE on that ext4 too. --runs rounds per
# condition, the order of native and mount alternating; "quiet" is the
# machine as it is, "busy" has `stress-ng --cpu 2` beside it; medians.
#
# Then, untimed, the FUSE requests of one more copy of each, counted with
# the fuse:fuse_request_send tracepoint (perf, filtered on the mount's
# connection): per small file and per MiB of the large file, by opcode,
# synchronous ones (all but RELEASE and FORGET) apart; and the round trip
# (fs_rtt on the mount and the store). When a target is missed, the floor
# line gives the synchronous requests per file times the round trip, and
# the best ratio that floor allows.
#
# Usage: bench/fs-speed.sh [--large MiB] [--small-count N] [--runs N]
#            [--load quiet|busy|both] [--mount-args "ARGS"]
#        (defaults: 512, 4000, 5, both; ARGS are added to twinfs mount)
# Env: TWINFS_BIN, FS_RTT. Needs root, fuse3, e2fsprogs, perf (counts;
# skipped without it), stress-ng (busy).
set -u
LARGE_MB=512; SMALL=4000; RUNS=5; LOAD=both; MARGS=""
while [ $# -gt 0 ]; do
	case $1 in
	--large) LARGE_MB=$2; shift 2 ;;
	--small-count) SMALL=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--load) LOAD=$2; shift 2 ;;
	--mount-args) MARGS=$2; shift 2 ;;
	-h|--help) sed -n '2,28p' "$0"; exit 0 ;;
	*) echo "fs-speed: unknown option $1" >&2; exit 64 ;;
	esac
done
case $LOAD in quiet|busy|both) ;; *) echo "fs-speed: --load is quiet, busy or both" >&2; exit 64 ;; esac
HERE=$(cd "$(dirname "$0")/.." && pwd)
BIN=${TWINFS_BIN:-$HERE/build/src/twinfs}
RTT=${FS_RTT:-$HERE/build/bench/fs_rtt}
[ "$(id -u)" -eq 0 ] || { echo "fs-speed: needs root" >&2; exit 77; }
[ -x "$BIN" ] && [ -x "$RTT" ] || { echo "fs-speed: build first (no $BIN or $RTT)" >&2; exit 66; }
W=$(mktemp -d /dev/shm/twinfs-speed.XXXXXX)
PIDS=""; LOOP=""
. "$HERE/bench/lib.sh"
bench_trap
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.4f", b - a}'; }

SRC=$W/src
bench_make_dataset "$SRC" "$LARGE_MB" "$SMALL"
mkdir "$SRC/large" && mv "$SRC/large.bin" "$SRC/large/"
SMALL_MB=$(du -sm "$SRC" | awk -v l="$LARGE_MB" '{print $1 - l}')
bench_loop_ext4 $(( (LARGE_MB + SMALL_MB) * 2 + 768 ))
D=$W/disk
mkdir -p "$D/store" "$D/state" "$D/native" "$W/mnt"
# shellcheck disable=SC2086
"$BIN" mount --store "$D/store" --state "$D/state" --mountpoint "$W/mnt" -q $MARGS \
	2>>"$W/mount.log" || { cat "$W/mount.log" >&2; exit 1; }
MPID=$(bench_mount_pid "$W/mnt")
PIDS="$PIDS $MPID"
HZ=$(getconf CLK_TCK)
echo "# fs-speed: $(nproc) cpus, $(uname -r), $("$BIN" --version | head -n1), $(date -u +%FT%TZ)"
echo "# large ${LARGE_MB} MiB; small $SMALL files, ${SMALL_MB} MiB; source tmpfs; native + store on ext4 (loop in /dev/shm); mount args: ${MARGS:-none}"

# tsync DIR: syncfs of DIR; prints seconds. A syncfs still running after
# 0.3 s has its kernel stack sampled every 20 ms by a side process; over
# 0.5 s, its most frequent frames go to $W/slow.
tsync() {
	t0=$(now)
	sync -f "$1" & sp=$!
	( sleep 0.3; while kill -0 "$sp" 2>/dev/null; do
		cat "/proc/$sp/stack" 2>/dev/null; sleep 0.02; done ) >"$W/stk" & wp=$!
	wait "$sp"
	t1=$(now)
	kill "$wp" 2>/dev/null; wait "$wp" 2>/dev/null
	s=$(secs "$t0" "$t1")
	if awk -v s="$s" 'BEGIN {exit !(s > 0.5)}'; then
		{ echo "slow syncfs of $1: $s s; top frames:"
		  sort "$W/stk" | uniq -c | sort -rn | head -n 6; } >>"$W/slow"
	fi
	echo "$s"
}

# copy COND SIDE KIND R: one timed copy; appends to $W/times
copy() {
	cond=$1 side=$2 kind=$3 r=$4
	if [ "$side" = native ]; then dest=$D/native/$kind$r; else dest=$W/mnt/$kind$r; fi
	mkdir "$dest"
	c0=$(bench_cpu_ticks "$MPID")
	t0=$(now)
	if [ "$kind" = large ]; then cp "$SRC/large/large.bin" "$dest/"; else cp -r "$SRC"/d* "$dest/"; fi
	t1=$(now)
	s1=$(tsync "$dest"); s2=0
	[ "$side" = mount ] && s2=$(tsync "$D/store")
	c1=$(bench_cpu_ticks "$MPID")
	total=$(awk -v c="$(secs "$t0" "$t1")" -v a="$s1" -v b="$s2" 'BEGIN {printf "%.4f", c + a + b}')
	# the daemon's CPU seconds during this copy (mount side only)
	dcpu=0
	[ "$side" = mount ] && dcpu=$(awk -v a="$c0" -v b="$c1" -v hz="$HZ" 'BEGIN {printf "%.3f", (b - a) / hz}')
	echo "$cond $side $kind $r $total $(secs "$t0" "$t1") $s1 $s2 $dcpu" >>"$W/times"
}

rounds() {
	cond=$1
	for r in $(seq 1 "$RUNS"); do
		if [ $((r % 2)) -eq 1 ]; then order="native mount"; else order="mount native"; fi
		ld=$(bench_load)
		for side in $order; do
			copy "$cond" "$side" large "$r"
			copy "$cond" "$side" small "$r"
		done
		echo "$cond $r $ld" >>"$W/loads"
		rm -rf "$D/native/large$r" "$D/native/small$r" "$W/mnt/large$r" "$W/mnt/small$r"
		sync -f "$D"
		printf '# %s round %d done (%s)\n' "$cond" "$r" "$ld"
	done
	"$RTT" --calls 2000 --batches 5 "$W/mnt/rtt" "$D/store/rtt" >"$W/rtt-$cond"
}

: >"$W/times"; : >"$W/loads"; : >"$W/slow"
touch "$W/mnt/rtt"
[ "$LOAD" = busy ] || rounds quiet
if [ "$LOAD" != quiet ]; then
	bench_stress_start
	rounds busy
	bench_stress_stop
fi

# Request counts: one more copy of each, traced.
CONN=$(mountpoint -d "$W/mnt" | awk -F: '{print $1 * 1048576 + $2}')
count() { # KIND: copies KIND into a fresh folder under perf; prints opcode counts
	mkdir "$W/mnt/trace-$1"
	if [ "$1" = large ]; then what="$SRC/large/large.bin"; else what="$SRC/d*"; fi
	# shellcheck disable=SC2086
	perf record -q -a -e fuse:fuse_request_send --filter "connection == $CONN" \
		-o "$W/perf-$1.data" -- sh -c "cp -r $what '$W/mnt/trace-$1/' && sync -f '$W/mnt'" \
		>/dev/null 2>&1 || return 1
	perf script -i "$W/perf-$1.data" -F trace 2>/dev/null |
		sed -n 's/.*opcode [0-9]* (\([A-Z_0-9]*\)).*/\1/p' | sort | uniq -c
}
HAVE_PERF=0
if command -v perf >/dev/null && count large >"$W/req-large" && count small >"$W/req-small"; then
	HAVE_PERF=1
fi

printf '%-6s %-6s %-7s %9s %9s %9s %9s   %s\n' cond kind side total_s cp_s sync_s store_s "(medians)"
for cond in quiet busy; do
	grep -q "^$cond " "$W/times" || continue
	for kind in large small; do
		for side in native mount; do
			for col in 5 6 7 8; do
				eval "m$col=\$(awk -v c=$cond -v s=$side -v k=$kind -v col=$col '\$1 == c && \$2 == s && \$3 == k {print \$col}' \"$W/times\" | median)"
			done
			# shellcheck disable=SC2154
			printf '%-6s %-6s %-7s %9.3f %9.3f %9.3f %9.3f\n' "$cond" "$kind" "$side" "$m5" "$m6" "$m7" "$m8"
			eval "${kind}_${side}_${cond}=$m5"
		done
	done
	echo "$cond loads: $(awk -v c=$cond '$1 == c {printf "%s%s %s %s %s", sep, $3, $4, $5, $6; sep="; "}' "$W/loads")"
done
echo "per-round totals (cond side kind round total cp sync store_sync daemon_cpu):"
sort -k1,1 -k3,3 -k2,2 -k4,4n "$W/times" | sed 's/^/  /'
[ -s "$W/slow" ] && { echo "syncfs calls over 0.5 s:"; sed 's/^/  /' "$W/slow"; }

sync_ops() { # FILE: synchronous request count in an opcode count file
	awk '$2 != "FUSE_RELEASE" && $2 != "FUSE_FORGET" && $2 != "FUSE_BATCH_FORGET" && $2 != "FUSE_RELEASEDIR" {n += $1} END {print n + 0}' "$1"
}
if [ $HAVE_PERF = 1 ]; then
	echo "requests per small file ($SMALL files):$(awk -v n="$SMALL" '{printf " %s %.2f", $2, $1 / n}' "$W/req-small")"
	echo "requests per MiB of the large file (${LARGE_MB} MiB):$(awk -v n="$LARGE_MB" '{printf " %s %.3f", $2, $1 / n}' "$W/req-large")"
	SYNC_PER_FILE=$(awk -v a="$(sync_ops "$W/req-small")" -v n="$SMALL" 'BEGIN {printf "%.2f", a / n}')
	SYNC_PER_MIB=$(awk -v a="$(sync_ops "$W/req-large")" -v n="$LARGE_MB" 'BEGIN {printf "%.3f", a / n}')
	echo "synchronous requests: $SYNC_PER_FILE per small file, $SYNC_PER_MIB per MiB written"
else
	echo "requests: not counted (no perf, or the tracepoint was refused)"
	SYNC_PER_FILE=""
fi

for cond in quiet busy; do
	grep -q "^$cond " "$W/times" || continue
	rtt=$(awk -v p="$W/mnt/rtt" '$1 == p {sub("median_us=", "", $2); print $2}' "$W/rtt-$cond")
	st=$(awk -v p="$D/store/rtt" '$1 == p {sub("median_us=", "", $2); print $2}' "$W/rtt-$cond")
	lds=$(awk -v c=$cond '$1 == c {print $4}' "$W/loads" | median)
	for kind in large small; do
		eval "n=\$${kind}_native_$cond; m=\$${kind}_mount_$cond"
		if [ "$kind" = large ]; then tgt=0.90; else tgt=0.60; fi
		ratio=$(awk -v a="$n" -v b="$m" 'BEGIN {printf "%.2f", a / b}')
		ok=$(awk -v r="$ratio" -v t="$tgt" 'BEGIN {print (r >= t) ? "met" : "missed"}')
		echo "$kind $cond: native $n s, mount $m s, native/mount $ratio (target >= $tgt: $ok); round trip $rtt us (store $st us); median load $lds"
		if [ "$kind" = small ] && [ "$ok" = missed ] && [ -n "$SYNC_PER_FILE" ]; then
			dc=$(awk -v c=$cond '$1 == c && $2 == "mount" && $3 == "small" {print $9}' "$W/times" | median)
			awk -v q="$SYNC_PER_FILE" -v rt="$rtt" -v n="$SMALL" -v nat="$n" -v m="$m" -v dc="$dc" 'BEGIN {
				f = q * rt; t = f * n / 1e6
				printf "  floor: %.2f synchronous requests per file x %.1f us = %.0f us per file = %.2f s for %d files; best ratio with that floor: %.2f\n",
					q, rt, f, t, n, nat / (nat + t)
				printf "  beyond the floor: %.0f us per file (the daemon\047s and the kernel\047s work per file besides the round trips); the daemon used %.0f us of CPU per file\n",
					(m - nat) * 1e6 / n - f, dc * 1e6 / n }'
		fi
	done
done
