#!/bin/sh
# Polling of the io_uring ring threads (fs/ring.c, "Polling"), checked
# against the daemon's own counters and its CPU time: while requests keep
# coming the ring threads poll for the next one, or skip it on a loaded
# machine (the unmount log counts both), an idle mount costs no CPU (at most 5 % of one CPU over
# 3 s right after a burst of requests), --uring-poll 0 never polls, and a
# window out of bounds is refused before anything is mounted. Round-trip
# speed is not asserted here (bench/fs-roundtrip.sh measures it).
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
[ -e /sys/module/fuse/parameters/enable_uring ] ||
	skip "the kernel has no FUSE over io_uring ($(uname -r))"
[ "$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)" = 0 ] ||
	skip "io_uring is disabled (kernel.io_uring_disabled)"

mkdir -p "$T/store" "$T/mnt" "$T/state"
track_mount "$T/mnt"

# burst N: N getxattr round trips on one file of the mount
burst() {
	python3 - "$T/mnt/f" "$1" <<'PY'
import os, sys
p, n = sys.argv[1], int(sys.argv[2])
for _ in range(n):
    try:
        os.getxattr(p, "user.twinfs-poll")
    except OSError:
        pass
PY
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# counter NAME LOG: the value the unmount line gave NAME
counter() { sed -n "s/.*FUSE rings stopped.* $1=\([0-9]*\).*/\1/p" "$2"; }

"$TWINFS_BIN" mount --store "$T/store" --state "$T/state" --mountpoint "$T/mnt" \
	-f -v >"$T/poll.log" 2>&1 &
PID=$!
track_pid $PID
wait_until 10 is_mounted "$T/mnt" || fail "mount did not come up"
wait_until 10 grep -q "requests are served on the caller's CPU" "$T/poll.log" ||
	fail "the rings did not start"
check "the default window is 200 us" grep -q "poll_us=200" "$T/poll.log"
touch "$T/mnt/f"
burst 3000
# Polling ends one window after the last request: the daemon is idle.
hz=$(getconf CLK_TCK)
t0=$(ticks $PID)
sleep 3
t1=$(ticks $PID)
check "an idle mount uses at most 5 % of one CPU ($((t1 - t0)) ticks in 3 s at $hz Hz)" \
	[ $(( (t1 - t0) * 100 )) -le $(( hz * 3 * 5 )) ]
fusermount3 -u "$T/mnt" || fail "unmount failed"
wait_until 10 sh -c "! kill -0 $PID 2>/dev/null" || fail "the daemon did not exit"
# On a loaded machine the threads rightly skip polling (poll_loaded):
# either way the polling path ran.
polls=$(( $(counter poll_hits "$T/poll.log") + $(counter poll_misses "$T/poll.log") +
	  $(counter poll_backoffs "$T/poll.log") + $(counter poll_loaded "$T/poll.log") ))
check "the ring threads polled or saw the load during the burst ($polls)" [ "$polls" -gt 0 ]
check "no ring errors were logged" sh -c "! grep -q 'level=error' '$T/poll.log'"

"$TWINFS_BIN" mount --store "$T/store" --state "$T/state" --mountpoint "$T/mnt" \
	--uring-poll 0 -f -v >"$T/nopoll.log" 2>&1 &
PID=$!
track_pid $PID
wait_until 10 is_mounted "$T/mnt" || fail "mount --uring-poll 0 did not come up"
wait_until 10 grep -q "requests are served on the caller's CPU" "$T/nopoll.log" ||
	fail "the rings did not start"
burst 1000
fusermount3 -u "$T/mnt" || fail "unmount failed"
wait_until 10 sh -c "! kill -0 $PID 2>/dev/null" || fail "the daemon did not exit"
check "--uring-poll 0 takes requests over the rings" [ "$(counter requests "$T/nopoll.log")" -gt 1000 ]
check "... and never polls" [ "$(counter poll_hits "$T/nopoll.log")$(counter poll_misses "$T/nopoll.log")$(counter poll_backoffs "$T/nopoll.log")$(counter poll_loaded "$T/nopoll.log")" = 0000 ]

"$TWINFS_BIN" mount --store "$T/store" --state "$T/state" --mountpoint "$T/mnt" \
	--uring-poll 100001 >"$T/bad.out" 2>&1
rc=$?
check "a window over 100000 us is refused as a usage error (exit $rc)" [ "$rc" -eq 64 ]
check "... naming the key" grep -q "fuse.uring_poll_us" "$T/bad.out"
check "... and nothing is mounted" sh -c "! grep -qs ' $T/mnt fuse' /proc/mounts"
finish
