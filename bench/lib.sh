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
