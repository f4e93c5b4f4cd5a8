#!/bin/sh
# Fidelity: a file with changes the peer does not have yet (the peer was
# stopped) is replaced by a FIFO directly in the store while unmounted.
# At the next mount the primary sends that path's state: it must see a
# FIFO and not open it (an open of a FIFO blocks until a writer comes).
# Then sync completes, the mount daemon still answers `twinfs status`,
# and the stores are equal. Found by tests/e2e/difftest.py (seed 203,
# faults stop,cont,kill,restart,umount,remount; reduced by hand from the
# shrunk sequence to: create d; stop; umount; rm d + mkfifo d in the
# store; remount).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"
echo one >"$MNT/f"
echo keep >"$MNT/g"
check "first sync exits 0" synced 30

kill -STOP "$SERVE_PID"
on_exit "kill -CONT $SERVE_PID 2>/dev/null"
echo two >"$MNT/f"
stop_mount       # waits a while for the stopped peer, then unmounts
check "the mount stopped" sh -c "! grep -qs ' $MNT ' /proc/mounts"
rm "$A_STORE/f"
mkfifo "$A_STORE/f"
touch -d @1000000000 "$A_STORE/f"

start_mount
kill -CONT "$SERVE_PID"
check "the mount reconnects" wait_until 20 connected
check "sync exits 0" synced 30
check "the mount daemon still answers status" timeout 10 "$TWINFS_BIN" status --state "$A_STATE"
check "the peer has the FIFO (treecmp)" stores_replicated

stop_mount
finish
