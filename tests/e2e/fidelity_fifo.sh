#!/bin/sh
# Fidelity: a FIFO made in the mount replicates without anything opening it
# (opening a FIFO blocks until a writer comes): sync completes, serve still
# answers `twinfs status`, and exits on SIGTERM within 10 s. Then the same
# after the peer was killed and restarted, when the primary re-sends the
# whole state of every path changed since the peer's last durable point.
# Mtimes are set explicitly, so that this tests the FIFOs alone.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"

mkfifo "$MNT/fifo"
mkdir "$MNT/d"; mkfifo -m 600 "$MNT/d/fifo2"
for f in 1 2 3; do echo "$f" >"$MNT/f$f"; done
touch -d @1000000000 "$MNT/fifo" "$MNT/d/fifo2" "$MNT/d"
check "sync with a FIFO exits 0" synced 30
check "the peer has the FIFOs (treecmp)" stores_replicated
check "serve still answers status" timeout 10 "$TWINFS_BIN" status --state "$P_STATE"
kill -TERM "$SERVE_PID"
check "serve exits on SIGTERM within 10 s" wait_until 10 sh -c "! kill -0 $SERVE_PID"
kill -9 "$SERVE_PID" 2>/dev/null
SERVE_PID=""

# The re-send: a FIFO made while the peer is down, then the peer restarts.
mkfifo "$MNT/d/fifo3"
echo 4 >"$MNT/f4"
touch -d @1000000000 "$MNT/d/fifo3" "$MNT/d"
start_serve
wait_until 20 connected || fail "the mount did not reconnect"
check "sync after the peer's restart exits 0" synced 30
check "the peer has the FIFOs after the re-send (treecmp)" stores_replicated
check "serve still answers status after the re-send" timeout 10 "$TWINFS_BIN" status --state "$P_STATE"
kill -TERM "$SERVE_PID"
check "serve exits on SIGTERM within 10 s after the re-send" wait_until 10 sh -c "! kill -0 $SERVE_PID"
kill -9 "$SERVE_PID" 2>/dev/null

stop_mount
finish
