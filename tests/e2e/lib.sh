# Shared helpers for end-to-end tests. Source it first thing:
#   . "$(dirname "$0")/lib.sh"
# Gives: $T (a unique temporary folder removed at exit), cleanup of every
# mount and process registered with track_mount/track_pid (even on failure),
# wait_until with a timeout, skip (exit 77), fail, and pass/fail counters.
# TWINFS_KEEP_T=DIR copies a failed test's folder (logs, stores) to DIR.
set -u

TWINFS_BIN=${TWINFS_BIN:-twinfs}
TWINFS_SRC=${TWINFS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
T=$(mktemp -d "${TMPDIR:-/tmp}/twinfs-e2e.XXXXXX")
chmod 755 "$T"
_mounts=""
_pids=""
_cleanups=""
_failures=0
_checks=0

# on_exit CMD: run CMD (a string) at exit, before mounts and pids are reaped.
on_exit() { _cleanups="$1
$_cleanups"; }
track_mount() { _mounts="$1 $_mounts"; }
track_pid() { _pids="$1 $_pids"; }

_cleanup() {
	rc=$?
	set +e
	[ -n "${_watchdog:-}" ] && kill "$_watchdog" 2>/dev/null
	printf '%s\n' "$_cleanups" | while IFS= read -r c; do [ -n "$c" ] && eval "$c"; done
	for m in $_mounts; do
		if grep -qs " $m " /proc/mounts; then
			fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		fi
	done
	for p in $_pids; do
		kill "$p" 2>/dev/null
	done
	for p in $_pids; do
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.2
		done
		kill -9 "$p" 2>/dev/null
	done
	for m in $_mounts; do
		grep -qs " $m " /proc/mounts && umount -l "$m" 2>/dev/null
	done
	[ -n "${TWINFS_KEEP_T:-}" ] && [ $rc -ne 0 ] && cp -a "$T" "$TWINFS_KEEP_T" 2>/dev/null
	rm -rf "$T"
	exit $rc
}
trap _cleanup EXIT
trap 'exit 130' INT TERM

# ctest kills a test that runs past its TIMEOUT outright, and the cleanup
# above never runs: its mount and daemons would outlive it. So stop
# ourselves a little earlier (TWINFS_TEST_DEADLINE, seconds, set by
# tests/CMakeLists.txt): TERM the test's children, whatever they wait on,
# then the test, whose trap cleans up.
if [ -n "${TWINFS_TEST_DEADLINE:-}" ]; then
	# The sleep must not hold the test's output open (ctest waits for it)
	# and goes with the watchdog when _cleanup stops it.
	( trap 'kill $_s 2>/dev/null; exit 0' TERM
	  sleep "$TWINFS_TEST_DEADLINE" >/dev/null 2>&1 </dev/null &
	  _s=$!
	  wait $_s || exit 0
	  echo "# deadline (${TWINFS_TEST_DEADLINE} s) reached: stopping the test to clean up" >&2
	  kill -TERM $$ 2>/dev/null
	  pkill -TERM -P $$ 2>/dev/null ) &
	_watchdog=$!
fi

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "# $*"; }

# check DESC CMD...: runs CMD, counts a failure (does not exit) if it fails.
check() {
	desc=$1; shift
	_checks=$((_checks + 1))
	if "$@"; then
		echo "ok - $desc"
	else
		echo "not ok - $desc" >&2
		_failures=$((_failures + 1))
	fi
}

# finish: prints the count and exits 1 if any check failed.
finish() {
	echo "$((_checks - _failures)) passed, $_failures failed"
	[ "$_failures" -eq 0 ]
	exit $?
}

# wait_until TIMEOUT_S CMD...: polls CMD every 0.1 s until it succeeds.
wait_until() {
	_limit=$1; shift
	_end=$(( $(date +%s%N) / 1000000 + _limit * 1000 ))
	while ! "$@" 2>/dev/null; do
		[ $(( $(date +%s%N) / 1000000 )) -ge $_end ] && return 1
		sleep 0.1
	done
	return 0
}

need_root() { [ "$(id -u)" -eq 0 ] || skip "needs root"; }
need_fuse() {
	[ -c /dev/fuse ] || skip "/dev/fuse missing"
	command -v fusermount3 >/dev/null || skip "fusermount3 missing (apt install fuse3)"
}
is_mounted() { grep -qs " $1 fuse" /proc/mounts; }

# free_port: a TCP port on 127.0.0.1 nobody listens on right now.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
