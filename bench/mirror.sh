#!/bin/sh
# bench/mirror.sh — `twinfs mirror` against an rsync daemon, side by side
# in one run, interleaved (the order alternates each round), medians of
# ROUNDS. All trees live on one ext4 on a loop device whose image is in
# /dev/shm (every block written once before timing), so that the disk's
# noise stays out. The data set: one LARGE_MB MiB file and SMALL files
# (bench_make_dataset). twinfs's time includes the peer's syncfs at the
# end (durable), rsync's does not (it never fsyncs): the initial case is
# also reported against rsync followed by `sync -f` of its destination.
# Each pair starts from a source read into the page cache (untimed).
# Cases:
#   initial      empty destinations (and rsync + sync -f, measured apart)
#   unchanged    nothing changed, warm cache; and cold (caches dropped)
#   1pct         1 % of the small files changed (rewritten, deleted, added,
#                renamed) before each round
#   bigdelta     1 MiB changed in the middle of the large file; rsync with
#                --inplace
#   verify       `twinfs verify` MB/s beside a sequential read of the source
# Usage: bench/mirror.sh [--large MB] [--small N] [--rounds N]  (root)
# Prints one line per measurement and a summary table with ratios.
set -u	# not -e: bench_cleanup runs greps that may find nothing
BIN=${TWINFS_BIN:-$(cd "$(dirname "$0")/.." && pwd)/build/src/twinfs}
. "$(dirname "$0")/lib.sh"
LARGE=1024 SMALL=10000 ROUNDS=3
while [ $# -gt 0 ]; do
	case $1 in
	--large) LARGE=$2; shift 2 ;;
	--small) SMALL=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	*) echo "usage: $0 [--large MB] [--small N] [--rounds N]" >&2; exit 64 ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "needs root (loop device, rsync daemon as root)" >&2; exit 77; }
W=$(mktemp -d /tmp/twinfs-mirror-bench.XXXXXX)
IMG=/dev/shm/twinfs-mirror-bench.$$.img
PIDS="" LOOP=""
BENCH_BEFORE_RM='sleep 0.5; umount "$W/fs" 2>/dev/null || umount -l "$W/fs"; [ -n "$LOOP" ] && losetup -d "$LOOP"; rm -f "$IMG"'
bench_trap

size_mb=$(( (LARGE + SMALL / 20) * 3 + 1024 ))
# Every block written once, after mkfs: mkfs discards the whole device,
# which punches the image's pages out of /dev/shm again.
truncate -s "${size_mb}M" "$IMG"
mkfs.ext4 -q -F "$IMG"
LOOP=$(losetup -f --show "$IMG")
mkdir -p "$W/fs"
mount "$LOOP" "$W/fs"
F=$W/fs
dd if=/dev/zero of="$F/fill" bs=1M count=$(( size_mb - 256 )) status=none 2>/dev/null
rm -f "$F/fill"; sync
mkdir -p "$F/tw" "$F/rs" "$F/state"
bench_make_dataset "$F/src" "$LARGE" "$SMALL"
sync

PORT=$(free_port) RPORT=$(free_port)
"$BIN" serve --store "$F/tw" --state "$F/state" --listen "127.0.0.1:$PORT" -f \
	>"$W/serve.log" 2>&1 &
PIDS="$PIDS $!"
wait_up "$BIN" "$F/state"
cat >"$W/rsyncd.conf" <<CONF
use chroot = no
[m]
path = $F/rs
read only = no
uid = root
gid = root
CONF
rsync --daemon --no-detach --config="$W/rsyncd.conf" --port="$RPORT" \
	--address=127.0.0.1 >"$W/rsyncd.log" 2>&1 &
PIDS="$PIDS $!"
sleep 0.5

now() { date +%s.%N; }
tw() { "$BIN" mirror "$F/src" "127.0.0.1:$PORT" --delete -q "$@"; }
rs() { rsync -aHX --delete "$@" "$F/src/" "rsync://127.0.0.1:$RPORT/m/"; }
# timed NAME CMD...: seconds, appended to $W/t.NAME
timed() {
	_n=$1; shift
	_t0=$(now); "$@"; _t1=$(now)
	echo "$_t1 - $_t0" | bc >>"$W/t.$_n"
	printf '%-22s %s s\n' "$_n" "$(tail -n1 "$W/t.$_n")"
}
median() { sort -n "$W/t.$1" | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
# The source's content in the page cache (untimed): the cold case drops
# the caches, and the first of a pair would otherwise read the source from
# the loop device and leave it cached for the second.
warm() { find "$F/src" -type f -exec cat {} + >/dev/null; }
# pair CASE ROUND [rsync extra args]: both, alternating order, from a
# cached source. Each starts with nothing dirty (an untimed sync): all
# trees share one filesystem, and twinfs's syncfs would otherwise also
# write what rsync left unwritten.
pair() {
	_c=$1 _r=$2; shift 2
	warm
	if [ $((_r % 2)) -eq 0 ]; then
		sync; timed "$_c.twinfs" tw; sync; timed "$_c.rsync" rs "$@"
	else
		sync; timed "$_c.rsync" rs "$@"; sync; timed "$_c.twinfs" tw
	fi
}
empty_dests() { rm -rf "$F/tw" "$F/rs"; mkdir "$F/tw" "$F/rs"; sync; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }

echo "# $(uname -r), $(nproc) CPUs, shared machine; ext4 on $LOOP (image in /dev/shm); $LARGE MiB + $SMALL files; $ROUNDS rounds"
rs_sync() { rs "$@" && sync -f "$F/rs"; }
for r in $(seq 1 "$ROUNDS"); do
	empty_dests
	pair initial "$r"
	rm -rf "$F/rs"; mkdir "$F/rs"; sync
	timed initial_sync.rsync rs_sync
	pair unchanged_warm "$r"
	drop
	if [ $((r % 2)) -eq 0 ]; then timed unchanged_cold.twinfs tw; drop; timed unchanged_cold.rsync rs
	else timed unchanged_cold.rsync rs; drop; timed unchanged_cold.twinfs tw; fi
done
# 1 %: rewrite, delete, add and rename a hundredth of the small files
for r in $(seq 1 "$ROUNDS"); do
	python3 - "$F/src" "$SMALL" "$r" <<'PY'
import os, random, sys
root, n, r = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(100 + r)
files = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(root) for f in fs if f.startswith("f"))
k = max(1, len(files) // 100)
pick = rnd.sample(files, k)
q = max(1, k // 10)
for p in pick[:k - 3 * q]:
    with open(p, "r+b") as f:
        f.seek(rnd.randint(0, max(0, os.path.getsize(p) - 1)))
        f.write(os.urandom(4096))
for p in pick[k - 3 * q:k - 2 * q]:
    os.unlink(p)
for p in pick[k - 2 * q:k - q]:
    os.rename(p, p + ".moved.%d" % r)
for i in range(q):
    with open(os.path.join(root, "d%02d" % (i % 50), "new.%d.%d" % (r, i)), "wb") as f:
        f.write(os.urandom(rnd.randint(1000, 100000)))
PY
	sync
	pair 1pct "$r"
done
for r in $(seq 1 "$ROUNDS"); do
	python3 - "$F/src/large.bin" "$r" <<'PY'
import os, sys
p, r = sys.argv[1], int(sys.argv[2])
size = os.path.getsize(p)
with open(p, "r+b") as f:
    f.seek(size // 2 + r * (8 << 20))
    f.write(os.urandom(1 << 20))
PY
	sync
	pair bigdelta "$r" --inplace
done
for r in $(seq 1 "$ROUNDS"); do
	drop
	timed seqread sh -c "cat '$F/src/large.bin' >/dev/null; find '$F/src' -type f -name 'f*' -exec cat {} + >/dev/null"
	drop
	timed verify "$BIN" verify -q "$F/src" "127.0.0.1:$PORT"
done
"$BIN" verify -q "$F/src" "127.0.0.1:$PORT" >/dev/null || echo "# WARNING: the twinfs store differs from the source"
bytes=$(du -sb "$F/src" | cut -f1)
echo
printf '%-16s %10s %10s %8s\n' case twinfs_s rsync_s ratio
for c in initial unchanged_warm unchanged_cold 1pct bigdelta; do
	a=$(median "$c.twinfs") b=$(median "$c.rsync")
	printf '%-16s %10.3f %10.3f %8.2f\n' "$c" "$a" "$b" "$(echo "$a / $b" | bc -l)"
done
a=$(median initial.twinfs) b=$(median initial_sync.rsync)
printf '%-16s %10.3f %10.3f %8.2f   (rsync then sync -f: both durable)\n' initial_sync "$a" "$b" \
	"$(echo "$a / $b" | bc -l)"
v=$(median verify) s=$(median seqread)
printf 'verify %.0f MB/s (cold), sequential read of the source %.0f MB/s (cold): ratio %.2f\n' \
	"$(echo "$bytes / $v / 1000000" | bc -l)" "$(echo "$bytes / $s / 1000000" | bc -l)" \
	"$(echo "$s / $v" | bc -l)"
