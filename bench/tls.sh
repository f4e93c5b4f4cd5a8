#!/bin/sh
# TLS benchmark (not a timed test): replication throughput with TLS 1.3
# (a pre-shared key) against plaintext, side by side in one run, on
# loopback. Each round copies the data set (one large file + many small
# files, generated on tmpfs) into a replicating mount until `twinfs sync`
# returns, once plaintext and once over TLS, in alternating order; the
# stores are ext4 on a loop device whose image lives in /dev/shm (every
# block written once before timing). Prints each round, the medians and
# the TLS/plain ratio of the times (the target is <= 1/0.85 = 1.18).
# Usage: bench/tls.sh [--large MB] [--small-count N] [--runs N]
#        (defaults: 1024 MB, 10000 files, 5 runs)
# Env: TWINFS_BIN (default: build/src/twinfs). Needs root, fuse3, e2fsprogs.
set -u
LARGE_MB=1024; SMALL=10000; RUNS=5
while [ $# -gt 0 ]; do
	case $1 in
	--large) LARGE_MB=$2; shift 2 ;;
	--small-count) SMALL=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	-h|--help) sed -n '2,13p' "$0"; exit 0 ;;
	*) echo "unknown option $1" >&2; exit 64 ;;
	esac
done
HERE=$(cd "$(dirname "$0")/.." && pwd)
BIN=${TWINFS_BIN:-$HERE/build/src/twinfs}
[ "$(id -u)" -eq 0 ] || { echo "needs root" >&2; exit 77; }
W=$(mktemp -d /dev/shm/twinfs-tls.XXXXXX)
PIDS=""; LOOP=""
. "$HERE/bench/lib.sh"
BENCH_BEFORE_RM='[ -n "$LOOP" ] && { umount "$W/disk" 2>/dev/null; losetup -d "$LOOP" 2>/dev/null; }'
bench_trap
now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

SRC=$W/src
bench_make_dataset "$SRC" "$LARGE_MB" "$SMALL"
TOTAL=$(du -sb "$SRC" | cut -f1)
# room for both stores of one round, twice over; every block written once
IMG_MB=$(( TOTAL * 5 / 1048576 + 512 ))
truncate -s "${IMG_MB}M" "$W/disk.img"
mkfs.ext4 -q -F "$W/disk.img"
LOOP=$(losetup --show -f "$W/disk.img")
mkdir -p "$W/disk"
mount "$LOOP" "$W/disk"
dd if=/dev/zero of="$W/disk/fill" bs=1M count=$(( IMG_MB - 256 )) status=none 2>/dev/null
rm -f "$W/disk/fill"; sync
D=$W/disk
"$BIN" keygen --psk "$W/psk" >/dev/null
echo "# data set: ${LARGE_MB} MiB file + $SMALL small files, $(( TOTAL / 1048576 )) MiB, source on tmpfs; stores on ext4 over a loop device in /dev/shm"
echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cpus; load: $(cut -d' ' -f1-3 /proc/loadavg)"

round() { # $1 = plain|tls, $2 = round
	k=$1$2
	mkdir -p "$D/p$k/store" "$D/p$k/state" "$D/a$k/store" "$D/a$k/state" "$W/mnt$k"
	port=$(free_port)
	extra=""; [ "$1" = tls ] && extra="--psk-file $W/psk"
	"$BIN" serve --store "$D/p$k/store" --state "$D/p$k/state" --listen "127.0.0.1:$port" $extra -f -q >"$W/serve$k.log" 2>&1 &
	PIDS="$PIDS $!"; sp=$!
	wait_up "$BIN" "$D/p$k/state"
	"$BIN" mount --store "$D/a$k/store" --state "$D/a$k/state" --mountpoint "$W/mnt$k" --peer "127.0.0.1:$port" $extra -f -q >"$W/mount$k.log" 2>&1 &
	PIDS="$PIDS $!"
	wait_up "$BIN" "$D/a$k/state"
	t0=$(now)
	cp -a "$SRC" "$W/mnt$k/data" && "$BIN" sync --state "$D/a$k/state" --timeout 600 -q || echo "round $k failed" >&2
	t1=$(now)
	n=$(find "$D/p$k/store/data" -type f | wc -l)
	[ "$n" -eq $((SMALL + 1)) ] || echo "round $k: peer has $n files" >&2
	echo "$t1 - $t0" | bc -l >>"$W/t_$1"
	printf '%-6s round %d: %6.2f s\n' "$1" "$2" "$(tail -n1 "$W/t_$1")"
	fusermount3 -u "$W/mnt$k"
	i=0; while pgrep -f -- "--mountpoint $W/mnt$k( |\$)" >/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
	kill "$sp"; wait "$sp" 2>/dev/null
	rm -rf "$D/p$k" "$D/a$k"; sync
}
for r in $(seq 1 "$RUNS"); do
	if [ $((r % 2)) -eq 1 ]; then round plain "$r"; round tls "$r"; else round tls "$r"; round plain "$r"; fi
done
mp=$(median <"$W/t_plain"); mt=$(median <"$W/t_tls")
printf 'median: plain %.2f s, tls %.2f s; tls throughput / plain = %.2f (target >= 0.85)\n' \
	"$mp" "$mt" "$(echo "$mp / $mt" | bc -l)"
echo "cipher: TLS_AES_128_GCM_SHA256 (TLS 1.3, external PSK, no kTLS: the kernel has no tls module)"
