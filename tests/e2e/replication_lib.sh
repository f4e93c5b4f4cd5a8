# Helpers for the replication tests (source after lib.sh): start a `serve`
# peer and a replicating mount on 127.0.0.1, each tracked for cleanup, and
# compare the peer's store with the mount.
#   P_STORE P_STATE  the peer (serve)      A_STORE A_STATE MNT  the mount
#   PORT             the peer's port on 127.0.0.1
need_root
need_fuse
P_STORE=$T/peer/store; P_STATE=$T/peer/state
A_STORE=$T/primary/store; A_STATE=$T/primary/state; MNT=$T/mnt
mkdir -p "$P_STORE" "$P_STATE" "$A_STORE" "$A_STATE" "$MNT"
PORT=$(free_port)
SERVE_PID=""
MOUNT_PID=""

daemon_up() { "$TWINFS_BIN" status --state "$1" >/dev/null 2>&1; }

# start_serve [ARGS...]: serve in the foreground (-f) in the background.
start_serve() {
	"$TWINFS_BIN" serve --store "$P_STORE" --state "$P_STATE" \
		--listen "127.0.0.1:$PORT" -f "$@" >>"$T/serve.log" 2>&1 &
	SERVE_PID=$!
	track_pid "$SERVE_PID"
	wait_until 15 daemon_up "$P_STATE" || { cat "$T/serve.log"; fail "serve did not start"; }
}

kill_serve() {
	[ -n "$SERVE_PID" ] || return 0
	kill -9 "$SERVE_PID" 2>/dev/null
	wait "$SERVE_PID" 2>/dev/null
	SERVE_PID=""
}

# start_mount [ARGS...]: a mount replicating to 127.0.0.1:$PORT.
start_mount() {
	"$TWINFS_BIN" mount --store "$A_STORE" --state "$A_STATE" --mountpoint "$MNT" \
		--peer "127.0.0.1:$PORT" -f "$@" >>"$T/mount.log" 2>&1 &
	MOUNT_PID=$!
	track_pid "$MOUNT_PID"
	track_mount "$MNT"
	wait_until 15 is_mounted "$MNT" || { cat "$T/mount.log"; fail "mount did not start"; }
	wait_until 15 daemon_up "$A_STATE" || { cat "$T/mount.log"; fail "mount has no control socket"; }
}

stop_mount() {
	fusermount3 -u "$MNT" 2>/dev/null
	wait_until 30 sh -c "! kill -0 $MOUNT_PID 2>/dev/null"
}

connected() { "$TWINFS_BIN" status --state "$A_STATE" --json | grep -q '"connected":true'; }

# same_trees DIR1 DIR2 [--no-mtime]: manifests equal (prints the diff if not).
same_trees() {
	python3 "$TWINFS_SRC/tests/e2e/tree_manifest.py" ${3:-} "$1" >"$T/m1" &&
	python3 "$TWINFS_SRC/tests/e2e/tree_manifest.py" ${3:-} "$2" >"$T/m2" || return 1
	if ! cmp -s "$T/m1" "$T/m2"; then
		diff "$T/m1" "$T/m2" | head -20 >&2
		return 1
	fi
	return 0
}

# same_stores DIR1 DIR2 [treecmp options]: the complete comparison of
# tests/e2e/treecmp.py (every file type's mtime, all xattr namespaces,
# device numbers, hard links of every type); prints the differences.
# same_trees stays on tree_manifest.py, whose narrower rule the older
# tests were written against.
same_stores() {
	_l=$1 _r=$2; shift 2
	python3 "$TWINFS_SRC/tests/e2e/treecmp.py" "$@" "$_l" "$_r" >&2
}

# stores_replicated [treecmp options]: the peer's store equals the
# primary's by treecmp (all fields), and the mount equals the peer's store
# with mtimes left out.
stores_replicated() {
	same_stores "$A_STORE" "$P_STORE" "$@" && same_stores "$MNT" "$P_STORE" --no-mtime "$@"
}

# rename2 SRC DST FLAGS: renameat2(2) (FLAGS 1 NOREPLACE, 2 EXCHANGE,
# 4 WHITEOUT), which mv cannot do; exits 1 with the errno on failure.
rename2() {
	python3 -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.renameat2(-100, os.fsencode(sys.argv[1]), -100, os.fsencode(sys.argv[2]), int(sys.argv[3]))
if r != 0:
    e = ctypes.get_errno()
    sys.exit("renameat2 %s %s %s: %s" % (sys.argv[1], sys.argv[2], sys.argv[3], os.strerror(e)))
' "$@"
}

# synced [TIMEOUT]: `twinfs sync` of the mount exits 0 within TIMEOUT s.
synced() { "$TWINFS_BIN" sync --state "$A_STATE" --timeout "${1:-60}" >&2; }

dump_logs() {
	echo "---- mount.log"; tail -n 30 "$T/mount.log" 2>/dev/null
	echo "---- serve.log"; tail -n 30 "$T/serve.log" 2>/dev/null
}
# Every replication test shows the daemons' logs when a check failed (a
# test may redefine dump_logs_on_failure after sourcing this file).
dump_logs_on_failure() { [ "$_failures" -eq 0 ] || dump_logs; }
on_exit dump_logs_on_failure

# replicated: the peer's store equals the primary's store (everything,
# file mtimes included) and the mount as users see it (file mtimes left
# out: with the writeback cache the kernel keeps its own until it flushes).
replicated() {
	same_trees "$A_STORE" "$P_STORE" && same_trees "$MNT" "$P_STORE" --no-mtime
}
