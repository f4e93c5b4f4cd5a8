#!/bin/sh
# `twinfs mirror` refusals: each bad input gets its one-line reason and
# documented exit code, and leaves the peer's store as it was while serve
# keeps serving: a missing or non-folder SRC, a destination that is
# neither, a port nobody listens on, a non-loopback peer without keys, a
# bad option; a serve that is the live replication target of a mount
# (unless --force); and, from a scripted client, paths that escape the
# store (.., absolute, NUL, through a symlink) and frames a client must not
# send.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
WC=${TWINFS_BUILD:-$TWINFS_SRC/build}/tests/e2e/twinfs_wire_client
S=$T/src
mkdir -p "$S/d"; echo hello >"$S/d/a"; echo world >"$S/b"

start_serve
start_mount
echo live >"$MNT/live"
synced
cp -a "$P_STORE" "$T/snap"
untouched() { python3 "$TWINFS_SRC/tests/e2e/treecmp.py" "$T/snap" "$P_STORE" >&2; }

# expect CODE TEXT CMD...: exit code CODE, TEXT on the one-line stderr
expect() {
	code=$1 text=$2; shift 2
	"$@" >"$T/out" 2>"$T/err"; rc=$?
	head -3 "$T/err"
	[ $rc -eq "$code" ] && grep -q "$text" "$T/err" && [ "$(wc -l <"$T/err")" -eq 1 ]
}
check "a live replication target is refused (69), with the reason" \
	expect 69 "live replication target of the mount" "$TWINFS_BIN" mirror "$S" "127.0.0.1:$PORT"
check "the target is untouched" untouched
check "missing SRC: 66" expect 66 "cannot mirror" "$TWINFS_BIN" mirror "$T/nope" "127.0.0.1:$PORT"
check "SRC a file: 66" expect 66 "not a directory" "$TWINFS_BIN" mirror "$S/b" "127.0.0.1:$PORT"
check "DEST neither folder nor HOST:PORT: 66" expect 66 "neither" "$TWINFS_BIN" mirror "$S" "$T/nothere"
check "nobody listening: 69" expect 69 "cannot connect" "$TWINFS_BIN" mirror "$S" "127.0.0.1:$(free_port)"
check "a non-loopback peer without keys: 78" expect 78 "loopback" "$TWINFS_BIN" mirror "$S" "192.0.2.1:9"
check "a bad --block-size: 64" expect 64 "block-size" "$TWINFS_BIN" mirror "$S" "127.0.0.1:$PORT" --block-size 3000
check "a mirror into itself: 64" expect 64 "inside" "$TWINFS_BIN" mirror "$S" "$S/d"
check "still untouched" untouched
check "serve still serves the mount" sh -c "echo more >'$MNT/live2' && '$TWINFS_BIN' sync --state '$A_STATE' --timeout 30"

# a fresh serve (not a replication target) against a scripted client
P2=$T/p2; mkdir -p "$P2/store" "$P2/state" "$T/outside"
ln -s "$T/outside" "$P2/store/link"; echo keep >"$P2/store/keep"
PORT2=$(free_port)
"$TWINFS_BIN" serve --store "$P2/store" --state "$P2/state" --listen "127.0.0.1:$PORT2" -f \
	>>"$T/serve2.log" 2>&1 &
track_pid $!
wait_until 15 daemon_up "$P2/state" || fail "serve 2 did not start"
cp -a "$P2/store" "$T/snap2"
for k in dotdot absolute symlink nul tree-escape hash-escape hashes; do
	check "mirror client sending $k: refused" "$WC" 127.0.0.1 "$PORT2" mirror-bad "$k"
done
check "nothing escaped through the symlink" [ -z "$(ls -A "$T/outside")" ]
check "nothing escaped above the store" [ ! -e "$P2/escaped" -a ! -e /tmp/escaped ]
check "the store is untouched" python3 "$TWINFS_SRC/tests/e2e/treecmp.py" "$T/snap2" "$P2/store"
check "and serve still takes a mirror" "$TWINFS_BIN" mirror -q "$S" "127.0.0.1:$PORT2"
# two at once: the second is held at the gate until the first ends (up to
# the gate's deadline), not refused busy
"$TWINFS_BIN" mirror -q "$S" "127.0.0.1:$PORT2" 2>"$T/m1.err" & m1=$!
"$TWINFS_BIN" mirror -q "$S" "127.0.0.1:$PORT2" 2>"$T/m2.err" & m2=$!
wait $m1; r1=$?; wait $m2; r2=$?
note "two mirrors at once: exit $r1 and $r2 $(cat "$T/m1.err" "$T/m2.err")"
check "two mirrors at once both succeed, one after the other" [ "$r1$r2" = 00 ]

# a peer that fails to apply (its store full) is quoted, not a broken pipe
P3=$T/p3; mkdir -p "$P3/store" "$P3/state" "$T/s3"
mount -t tmpfs -o size=2m tmpfs "$P3/store" || fail "cannot mount a tmpfs"
track_mount "$P3/store"
head -c $((64 << 20)) /dev/zero >"$T/s3/big"
PORT3=$(free_port)
"$TWINFS_BIN" serve --store "$P3/store" --state "$P3/state" --listen "127.0.0.1:$PORT3" -f \
	>>"$T/serve3.log" 2>&1 &
track_pid $!
wait_until 15 daemon_up "$P3/state" || fail "serve 3 did not start"
"$TWINFS_BIN" mirror -q "$T/s3" "127.0.0.1:$PORT3" 2>"$T/full.err"
note "a full peer: $(cat "$T/full.err")"
check "a full peer's reason is the error" grep -q "No space left on device" "$T/full.err"

# --force writes into the replication target anyway
check "--force: the target is written" "$TWINFS_BIN" mirror -q --force "$S" "127.0.0.1:$PORT"
check "with the source's files" cmp "$S/d/a" "$P_STORE/d/a"
finish
