#!/bin/sh
# fs-vs-store: how close a twinfs mount comes to writing its store
# directly. In the same run, side by side, copies a large file and a tree
# of many small files into a plain directory ("native", next to the store
# on the same filesystem) and into a twinfs mount; each copy is timed until
# durable (sync of the mount, then of the store). Also reads the large file
# back cold (caches dropped) and times `ls -lR` warm. Prints the median of
# RUNS runs and the ratios (native time / mount time: 1.00 = as fast as
# native), plus one JSON line. Needs root (drop_caches) and fuse3.
#
# --tool picks the copier. cp (the default) copies into the native folder
# in the kernel (copy_file_range, one memory copy, no buffer), which the
# kernel refuses across filesystems (EXDEV), so into the mount cp falls
# back to read+write through a 1 MiB buffer it maps per file: two copies
# and page faults that no FUSE filesystem can avoid. tar copies through
# user space on both sides (1 MiB records), which isolates what the mount
# itself costs.
#
# Usage: bench/fs-vs-store.sh [--dir BASE] [--runs N] [--large SIZE_MiB]
#                             [--small-count N] [--tool cp|tar] [--twinfs BIN]
set -eu

BASE=/var/tmp
RUNS=3
LARGE_MB=1024
SMALL=10000
TOOL=cp
BIN=${TWINFS_BIN:-$(dirname "$0")/../build/src/twinfs}
while [ $# -gt 0 ]; do
	case $1 in
	--dir) BASE=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--large) LARGE_MB=$2; shift 2 ;;
	--small-count) SMALL=$2; shift 2 ;;
	--tool) TOOL=$2; shift 2 ;;
	--twinfs) BIN=$2; shift 2 ;;
	-h|--help) sed -n '2,20p' "$0"; exit 0 ;;
	*) echo "fs-vs-store: unknown option $1" >&2; exit 64 ;;
	esac
done
case $TOOL in cp|tar) ;; *) echo "fs-vs-store: --tool is cp or tar" >&2; exit 64 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "fs-vs-store: needs root (drop_caches)" >&2; exit 77; }
[ -x "$BIN" ] || { echo "fs-vs-store: no twinfs binary at $BIN (build first or --twinfs)" >&2; exit 66; }

W=$(mktemp -d "$BASE/fs-vs-store.XXXXXX")
MNT=$W/mnt
cleanup() {
	set +e
	if grep -qs " $MNT fuse" /proc/mounts; then
		fusermount3 -u "$MNT" || umount -l "$MNT"
	fi
	[ -n "${PID:-}" ] && kill "$PID" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$W/src/small" "$W/native" "$W/store" "$MNT" "$W/state"

now() { date +%s.%N; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "# generating sources in $W/src: ${LARGE_MB} MiB file, $SMALL small files (0-200 KB, 50 folders)"
head -c "$((LARGE_MB * 1048576))" /dev/urandom >"$W/src/large.bin"
python3 - "$W/src/small" "$SMALL" <<'PY'
import os, random, sys
random.seed(1)
root, n = sys.argv[1], int(sys.argv[2])
blob = os.urandom(200 * 1000)
for d in range(50):
    os.makedirs(os.path.join(root, "d%02d" % d))
for i in range(n):
    size = random.randint(0, 200 * 1000)
    with open(os.path.join(root, "d%02d" % (i % 50), "f%05d" % i), "wb") as f:
        f.write(blob[:size])
PY
SMALL_BYTES=$(du -sb "$W/src/small" | cut -f1)

"$BIN" mount --store "$W/store" --state "$W/state" --mountpoint "$MNT" -q
PID=$(pgrep -f -- "--mountpoint $MNT( |\$)" | head -n1)

# copy KIND DEST: copies source KIND (large|small) into DEST, timed until
# durable; prints seconds. DEST is a fresh folder per run: deleting the
# previous copy just before would time ext4's inode allocator instead
# (without a journal it skips inodes freed in the last minutes, one by
# one: perf showed a third of both sides' time in recently_deleted).
copy() {
	kind=$1 dest=$2
	drop
	cat "$W/src/large.bin" >/dev/null
	[ "$kind" = small ] && find "$W/src/small" -type f -exec cat {} + >/dev/null
	if [ "$kind" = large ]; then what=large.bin; else what=small; fi
	t0=$(now)
	if [ "$TOOL" = cp ]; then
		cp -r "$W/src/$what" "$dest/"
	else
		tar -b 2048 -C "$W/src" -cf - "$what" | tar -b 2048 -C "$dest" -xf -
	fi
	sync -f "$dest"
	case $dest in "$MNT"/*) sync -f "$W/store" ;; esac
	t1=$(now)
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f\n", b - a}'
}

coldread() {
	drop
	t0=$(now)
	cat "$1/large.bin" >/dev/null
	t1=$(now)
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f\n", b - a}'
}

lsr() {
	ls -lR "$1/small" >/dev/null
	t0=$(now)
	ls -lR "$1/small" >/dev/null
	t1=$(now)
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f\n", b - a}'
}

: >"$W/times"
for r in $(seq 1 "$RUNS"); do
	# Alternate the order so neither side always goes first.
	if [ $((r % 2)) -eq 1 ]; then order="native mount"; else order="mount native"; fi
	for side in $order; do
		[ $side = native ] && d=$W/native/r$r || d=$MNT/r$r
		mkdir "$d"
		echo "$side large $(copy large "$d")" >>"$W/times"
		echo "$side small $(copy small "$d")" >>"$W/times"
		echo "$side coldread $(coldread "$d")" >>"$W/times"
		echo "$side lsR $(lsr "$d")" >>"$W/times"
	done
	echo "# run $r done"
done
cmp "$W/src/large.bin" "$W/store/r1/large.bin" || { echo "fs-vs-store: store copy differs!" >&2; exit 1; }

med() { awk -v s="$1" -v k="$2" '$1==s && $2==k {print $3}' "$W/times" | median; }
printf '%-10s %12s %12s %8s %8s\n' test native_s twinfs_s ratio target
json="{"
for k in large small coldread lsR; do
	n=$(med native $k); m=$(med mount $k)
	ratio=$(awk -v a="$n" -v b="$m" 'BEGIN {printf "%.4f", a / b}')
	case $k in large) tgt=0.90 ;; small) tgt=0.80 ;; coldread) tgt=0.90 ;; lsR) tgt=0.50 ;; esac
	printf '%-10s %12.3f %12.3f %8.2f %8s\n' "$k" "$n" "$m" "$ratio" "$tgt"
	json="$json\"$k\":{\"native_s\":$(printf %.4f "$n"),\"twinfs_s\":$(printf %.4f "$m"),\"ratio\":$(printf %.3f "$ratio"),\"target\":$tgt},"
done
echo "# large = ${LARGE_MB} MiB; small = $SMALL files, $SMALL_BYTES bytes; copied with $TOOL; median of $RUNS runs"
echo "${json}\"tool\":\"$TOOL\"}"
