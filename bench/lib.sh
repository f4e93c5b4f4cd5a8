# bench/lib.sh — shell helpers shared by the bench/*.sh scripts that start
# twinfs daemons: a free loopback port, waiting for a daemon's control
# socket, and the exit trap that unmounts, stops and removes everything.
# Sourced, not run. The caller sets W (its temporary folder) and appends
# the pid of every daemon it starts to PIDS.

# A TCP port on 127.0.0.1 that is free right now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# wait_up BIN STATE: waits (at most 15 s) until the daemon of STATE
# answers `status`; exits the script if it does not.
wait_up() {
	_i=0
	while ! "$1" status --state "$2" >/dev/null 2>&1; do
		_i=$((_i + 1))
		[ $_i -gt 150 ] && { echo "daemon $2 did not start" >&2; exit 1; }
		sleep 0.1
	done
}

# Unmounts every FUSE mount under $W, stops the daemons in $PIDS (TERM,
# then KILL after 0.5 s), runs $BENCH_BEFORE_RM (e.g. to unmount a loop
# device) and removes $W (and $BENCH_EXTRA, a second folder the caller
# may set). Installed by bench_trap.
bench_cleanup() {
	grep " fuse" /proc/mounts | cut -d' ' -f2 | grep "^$W/" | while read -r _m; do
		fusermount3 -u "$_m" || umount -l "$_m"
	done
	for _p in $PIDS; do kill "$_p" 2>/dev/null; done
	sleep 0.5
	for _p in $PIDS; do kill -9 "$_p" 2>/dev/null; done
	[ -z "${BENCH_BEFORE_RM:-}" ] || eval "$BENCH_BEFORE_RM"
	rm -rf "$W"
	[ -z "${BENCH_EXTRA:-}" ] || rm -rf "$BENCH_EXTRA"
}

bench_trap() {
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}

# bench_make_dataset DIR LARGE_MB SMALL: the data set of the copy
# benchmarks in DIR (created): one LARGE_MB MiB file of rotating random
# blocks and SMALL files of 0-200 KB in 50 folders, the same for the same
# arguments (seeded).
bench_make_dataset() {
	python3 - "$1" "$2" "$3" <<'PY'
import os, random, sys
root, large, small = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(root)
blk = os.urandom(1 << 20)
with open(os.path.join(root, "large.bin"), "wb") as f:
    for i in range(large):
        f.write(blk[i % 997:] + blk[:i % 997])
rnd = random.Random(1)
for d in range(50):
    os.makedirs(os.path.join(root, "d%02d" % d))
for i in range(small):
    n = int(rnd.random() ** 3 * 200000)
    with open(os.path.join(root, "d%02d" % (i % 50), "f%05d" % i), "wb") as f:
        f.write(os.urandom(n))
PY
}

# bench_loop_ext4 SIZE_MB: ext4 on a loop device whose image lives in $W
# (put W in /dev/shm for a RAM-backed disk), mounted at $W/disk, every
# block written once so that no timed write allocates the image's pages.
# Sets LOOP; bench_cleanup unmounts it and detaches the device.
bench_loop_ext4() {
	truncate -s "${1}M" "$W/disk.img"
	mkfs.ext4 -q -F "$W/disk.img"
	LOOP=$(losetup --show -f "$W/disk.img") || exit 1
	mkdir -p "$W/disk"
	mount "$LOOP" "$W/disk" || exit 1
	BENCH_BEFORE_RM="umount '$W/disk' 2>/dev/null; losetup -d '$LOOP' 2>/dev/null; ${BENCH_BEFORE_RM:-}"
	dd if=/dev/zero of="$W/disk/fill" bs=1M count=$(( $1 - 128 )) status=none 2>/dev/null
	rm -f "$W/disk/fill"
	sync -f "$W/disk"
}

# bench_stress_start / bench_stress_stop: `stress-ng --cpu 2` beside the
# measurement (the "busy" condition); its pid is kept and stopped by pid.
bench_stress_start() {
	command -v stress-ng >/dev/null || { echo "stress-ng is missing (packaging/install-deps.sh)" >&2; exit 69; }
	stress-ng --cpu 2 --quiet >/dev/null 2>&1 &
	STRESS_PID=$!
	PIDS="$PIDS $STRESS_PID"
	sleep 1
}
bench_stress_stop() {
	[ -n "${STRESS_PID:-}" ] || return 0
	kill "$STRESS_PID" 2>/dev/null
	wait "$STRESS_PID" 2>/dev/null
	STRESS_PID=""
}

# bench_load: the 1-minute load average and the share of idle CPU over
# the last half second, for the line of each figure.
bench_load() {
	_a=$(awk '/^cpu /{print $5+$6, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat)
	sleep 0.5
	_b=$(awk '/^cpu /{print $5+$6, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat)
	echo "$_a $_b $(cut -d' ' -f1 /proc/loadavg)" |
		awk '{printf "load %s idle %d%%", $5, ($4 - $2) ? 100 * ($3 - $1) / ($4 - $2) : 0}'
}

# bench_cpu_ticks PID: user + system clock ticks the process has used.
bench_cpu_ticks() {
	awk '{print $14 + $15}' "/proc/$1/stat"
}

# bench_mount_pid MOUNTPOINT: pid of the twinfs daemon serving it.
bench_mount_pid() {
	pgrep -f -- "--mountpoint $1( |\$)" | head -n1
}
