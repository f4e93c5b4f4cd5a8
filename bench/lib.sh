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
# then KILL after 0.5 s) and removes $W (and $BENCH_EXTRA, a second
# folder the caller may set). Installed by bench_trap.
bench_cleanup() {
	grep " fuse" /proc/mounts | cut -d' ' -f2 | grep "^$W/" | while read -r _m; do
		fusermount3 -u "$_m" || umount -l "$_m"
	done
	for _p in $PIDS; do kill "$_p" 2>/dev/null; done
	sleep 0.5
	for _p in $PIDS; do kill -9 "$_p" 2>/dev/null; done
	rm -rf "$W"
	[ -z "${BENCH_EXTRA:-}" ] || rm -rf "$BENCH_EXTRA"
}

bench_trap() {
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}
