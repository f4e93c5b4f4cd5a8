#!/bin/sh
# FUSE over io_uring (fs/ring.c), checked against the daemon's own log: by
# default a root mount on a kernel with the feature takes its requests
# through the per-CPU rings (the rings' request count at unmount is not
# zero), programs on each CPU and more concurrent writers on one CPU than
# it has ring threads all get their data in, and --no-uring keeps every
# request on /dev/fuse. Sync mode never uses the rings (checked in
# replication_sync_mode.sh). Skips on kernels without the feature.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
[ -e /sys/module/fuse/parameters/enable_uring ] ||
	skip "the kernel has no FUSE over io_uring ($(uname -r))"
[ "$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)" = 0 ] ||
	skip "io_uring is disabled (kernel.io_uring_disabled)"

mkdir -p "$T/store" "$T/mnt" "$T/state" "$T/src"
track_mount "$T/mnt"
"$TWINFS_BIN" mount --store "$T/store" --state "$T/state" --mountpoint "$T/mnt" \
	-f -v >"$T/ring.log" 2>&1 &
PID=$!
track_pid $PID
wait_until 10 is_mounted "$T/mnt" || fail "mount did not come up"
wait_until 10 grep -q "uring=" "$T/ring.log" || fail "no negotiation logged"
# A root mount turns the kernel switch on, and the kernel then offers it.
check "the ring transport is negotiated" grep -q "uring=1" "$T/ring.log"
check "the kernel switch is on" grep -q Y /sys/module/fuse/parameters/enable_uring
wait_until 10 grep -q "requests are served on the caller's CPU" "$T/ring.log" ||
	fail "the rings did not start"

i=0
while [ $i -lt 200 ]; do
	head -c $((i * 997)) /dev/urandom >"$T/src/f$i"
	i=$((i + 1))
done
ncpu=$(nproc)
c=0
while [ $c -lt "$ncpu" ]; do
	taskset -c "$c" cp -a "$T/src" "$T/mnt/cpu$c" || fail "cp on CPU $c failed"
	check "a tree copied on CPU $c arrives whole" diff -r "$T/src" "$T/mnt/cpu$c"
	check "... in the store too" diff -r "$T/src" "$T/store/cpu$c"
	c=$((c + 1))
done

# 12 writers on CPU 0 (4 ring threads there), each writing, fsyncing and
# renaming its files: the queue behind busy threads drains, nothing hangs.
mkdir "$T/mnt/par"
timeout 60 taskset -c 0 python3 - "$T/mnt/par" <<'PY' || fail "parallel writers failed or hung"
import os, sys, threading
root = sys.argv[1]
errors = []
def work(n):
    try:
        for k in range(30):
            p = os.path.join(root, "w%02d_%02d.tmp" % (n, k))
            data = bytes([n]) * (4096 * (k + 1))
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)
            os.write(fd, data)
            os.fsync(fd)
            os.close(fd)
            os.rename(p, p[:-4])
            with open(p[:-4], "rb") as f:
                if f.read() != data:
                    errors.append(p)
    except Exception as e:
        errors.append(repr(e))
ts = [threading.Thread(target=work, args=(n,)) for n in range(12)]
for t in ts: t.start()
for t in ts: t.join()
sys.exit(1 if errors else 0)
PY
check "the parallel writers' 360 files are there" [ "$(ls "$T/mnt/par" | wc -l)" -eq 360 ]

fusermount3 -u "$T/mnt" || fail "unmount failed"
wait_until 10 sh -c "! kill -0 $PID 2>/dev/null" || fail "the daemon did not exit"
n=$(sed -n 's/.*FUSE rings stopped.* requests=\([0-9]*\).*/\1/p' "$T/ring.log")
check "the rings served requests (${n:-none})" [ "${n:-0}" -gt 1000 ]
check "no ring errors were logged" sh -c "! grep -q 'level=error' '$T/ring.log'"

"$TWINFS_BIN" mount --store "$T/store" --state "$T/state" --mountpoint "$T/mnt" \
	--no-uring -f -v >"$T/dev.log" 2>&1 &
PID=$!
track_pid $PID
wait_until 10 is_mounted "$T/mnt" || fail "mount --no-uring did not come up"
check "--no-uring data reads back" diff -r "$T/src" "$T/mnt/cpu0"
fusermount3 -u "$T/mnt" || fail "unmount failed"
wait_until 10 sh -c "! kill -0 $PID 2>/dev/null" || fail "the daemon did not exit"
check "--no-uring negotiates no ring" grep -q "uring=0" "$T/dev.log"
check "... and starts none" sh -c "! grep -q 'FUSE rings' '$T/dev.log'"
finish
