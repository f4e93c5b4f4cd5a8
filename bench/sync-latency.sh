#!/bin/sh
# Sync-mode fsync latency of two twinfs builds, paired (not a timed test).
# Starts two sync-mode pairs on loopback at once, one per build, and makes
# N 4 KiB write+fsync calls alternating between their mounts (the order
# flips every round), so that the machine's drift hits both alike: single
# runs on one machine drift more (median 2.4-4.2 ms between runs here)
# than the changes worth measuring. Prints each build's median, p90, p99
# and max, and the median of the per-call differences B - A. With the
# same build on both sides the difference is the method's zero.
# Usage: bench/sync-latency.sh [--count N] [--a BIN] [--b BIN] [--dir DIR]
#        (defaults: 1000 calls, both build/src/twinfs, /var/tmp)
# Needs root and fuse3.
set -u
N=1000; BASE=${TMPDIR:-/var/tmp}
HERE=$(cd "$(dirname "$0")/.." && pwd)
BIN_A=$HERE/build/src/twinfs; BIN_B=$BIN_A
while [ $# -gt 0 ]; do
	case $1 in
	--count) N=$2; shift 2 ;;
	--a) BIN_A=$2; shift 2 ;;
	--b) BIN_B=$2; shift 2 ;;
	--dir) BASE=$2; shift 2 ;;
	-h|--help) sed -n '2,12p' "$0"; exit 0 ;;
	*) echo "unknown option $1" >&2; exit 64 ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "needs root" >&2; exit 77; }
W=$(mktemp -d "$BASE/twinfs-synclat.XXXXXX")
PIDS=""
. "$HERE/bench/lib.sh"
bench_trap
for x in a b; do
	if [ $x = a ]; then bin=$BIN_A; else bin=$BIN_B; fi
	mkdir -p "$W/$x/p/store" "$W/$x/p/state" "$W/$x/s/store" "$W/$x/s/state" "$W/$x/mnt"
	port=$(free_port)
	"$bin" serve --store "$W/$x/p/store" --state "$W/$x/p/state" --listen "127.0.0.1:$port" -f -q \
		>"$W/$x/serve.log" 2>&1 &
	PIDS="$PIDS $!"
	wait_up "$bin" "$W/$x/p/state"
	"$bin" mount --store "$W/$x/s/store" --state "$W/$x/s/state" --mountpoint "$W/$x/mnt" \
		--peer "127.0.0.1:$port" --mode sync -f -q >"$W/$x/mount.log" 2>&1 &
	PIDS="$PIDS $!"
	wait_up "$bin" "$W/$x/s/state"
done
echo "# A: $BIN_A"
echo "# B: $BIN_B"
# in the background, so that a TERM to this script (deferred while a
# foreground child runs) stops it at once; the trap then kills it too
python3 - "$W" "$N" <<'PY' &
import os, sys, time
w, n = sys.argv[1], int(sys.argv[2])
lat = {"a": [], "b": []}
for i in range(n):
    for x in (("a", "b") if i % 2 else ("b", "a")):
        fd = os.open(os.path.join(w, x, "mnt", "f%05d" % i), os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, os.urandom(4096))
        t = time.monotonic()
        os.fsync(fd)
        lat[x].append((time.monotonic() - t) * 1000)
        os.close(fd)
for x in "ab":
    s = sorted(lat[x])
    print("%s: fsync ms median %.2f p90 %.2f p99 %.2f max %.2f (n=%d)" % (
        x.upper(), s[n // 2], s[int(n * .9)], s[int(n * .99)], s[-1], n))
d = sorted(b - a for a, b in zip(lat["a"], lat["b"]))
print("paired B - A: median %+.2f ms" % d[n // 2])
PY
PIDS="$PIDS $!"
wait $!
