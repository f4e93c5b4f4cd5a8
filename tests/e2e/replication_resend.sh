#!/bin/sh
# A file kept open and written through FUSE passthrough is marked whole
# each time it changes (we never see which ranges its writes touched).
# The sender then puts on the wire only the blocks the peer does not hold
# already (netsync/sentmap.c), and never skips one the peer lacks:
#  - a 48 MiB file, then one block overwritten and one appended: the
#    second send moves about 2 MiB, not 49;
#  - truncated through the open fd and re-written with the same bytes:
#    the peer gets them again (it truncated its copy);
#  - with a second hard link: written whole, then in place through the
#    second name, then the block written back through the first: equal;
#  - the peer killed after a sync and restarted: it made all of that
#    durable, so the next send moves only what changed, and is equal;
#  - a block sent to a stopped peer that is then killed: sent again.
# After each step the peer's copy must equal the mount's.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

start_serve
start_mount
wait_until 15 connected || fail "mount never connected"

rchar() { awk '$1 == "rchar:" {print $2}' "/proc/$SERVE_PID/io"; }
held() {
	"$TWINFS_BIN" status --state "$A_STATE" --json |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["bytes_held"])'
}
sync_peer() { "$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 -q; }
peer_equal() { cmp -s "$A_STORE/$1" "$P_STORE/$1"; }

# The writer keeps big.bin open (write-only, new: passthrough) for the
# whole test and does one step per line read from the fifo.
mkfifo "$T/steps"
python3 - "$MNT" "$T/steps" "$T/done" <<'PY' &
import os, sys
mnt, steps, done = sys.argv[1:4]
MiB = 1 << 20
path = os.path.join(mnt, "big.bin")
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
orig = os.urandom(48 * MiB)
for line in open(steps):
    step = line.strip()
    if step == "write":
        os.pwrite(fd, orig, 0)
    elif step == "rewrite":
        orig = os.urandom(48 * MiB)
        os.pwrite(fd, orig, 0)
    elif step == "patch":
        os.pwrite(fd, os.urandom(4096), 20 * MiB + 123)
        os.pwrite(fd, os.urandom(MiB), 48 * MiB)
    elif step == "truncate":
        os.ftruncate(fd, 8 * MiB)
        os.pwrite(fd, orig[8 * MiB:], 8 * MiB)
    elif step == "restore5":
        os.pwrite(fd, orig[5 * MiB:6 * MiB], 5 * MiB)
    elif step == "poke":
        os.pwrite(fd, b"x" * 100, 30 * MiB)
    elif step == "poke2":
        os.pwrite(fd, b"z" * 100, 40 * MiB)
    elif step == "poke3":
        os.pwrite(fd, b"w" * 100, 12 * MiB)
    elif step == "quit":
        break
    open(done, "a").write(step + "\n")
os.close(fd)
open(done, "a").write("closed\n")
PY
WRITER=$!
track_pid "$WRITER"
exec 3>"$T/steps"
step() {
	echo "$1" >&3
	wait_until 30 grep -qx "$1" "$T/done" || fail "writer did not finish step $1"
}

step write
sync_peer || fail "twinfs sync failed after the first write"
check "48 MiB written through passthrough: on the peer" peer_equal big.bin

r0=$(rchar); h0=$(held)
step patch
sync_peer || fail "twinfs sync failed after the patch"
r1=$(rchar); h1=$(held)
note "second send: serve read $(( (r1 - r0) / 1024 )) KiB for one block changed and one appended;" \
	"$(( (h1 - h0) / 1048576 )) MiB left out as held"
check "one block changed and one appended: on the peer" peer_equal big.bin
check "the re-send moved what changed, not the whole file ($(( (r1 - r0) / 1024 )) KiB)" \
	[ $(( r1 - r0 )) -lt $(( 8 * 1048576 )) ]
check "status counts the blocks left out ($(( h1 - h0 )) bytes)" \
	[ $(( h1 - h0 )) -ge $(( 40 * 1048576 )) ]

step truncate
sync_peer || fail "twinfs sync failed after the truncate"
check "truncated and re-written with the same bytes: on the peer" peer_equal big.bin

# Another name for the same inode, written in place through FUSE (an
# existing file: no passthrough); then the first name's fd writes the old
# block back. Whichever name the journal sends the inode under, the peer
# must end with the block written last. (The sender does not follow files
# with several names at all; this checks the outcome, not that rule.)
ln "$MNT/big.bin" "$MNT/other.bin"
step rewrite
sync_peer || fail "twinfs sync failed after rewriting a file with two names"
python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.pwrite(fd, b"y" * (1 << 20), 5 << 20)
os.close(fd)' "$MNT/other.bin"
sync_peer || fail "twinfs sync failed after writing the second link"
step restore5
sync_peer || fail "twinfs sync failed after restoring through the first link"
check "hard links written through both names: on the peer" peer_equal big.bin
check "the peer keeps them one inode" \
	[ "$(stat -c %i "$P_STORE/big.bin")" = "$(stat -c %i "$P_STORE/other.bin")" ]
rm "$MNT/other.bin"
# one name again: its next send is followed (whole, the map had dropped it)
step poke
sync_peer || fail "twinfs sync failed after removing the second link"
check "one name again: on the peer" peer_equal big.bin

# The peer dies right after a sync. What it had made durable (everything,
# here: its HELLO says so) stays held; what came after would not.
kill_serve
start_serve
wait_until 20 connected || fail "mount did not reconnect"
r0=$(rchar)
step poke2
sync_peer || fail "twinfs sync failed after the peer restarted"
r1=$(rchar)
note "after the peer restarted: serve read $(( (r1 - r0) / 1024 )) KiB for one block changed"
check "after the peer restarted: on the peer" peer_equal big.bin
check "after the peer restarted: what it had durably is not sent again ($(( (r1 - r0) / 1024 )) KiB)" \
	[ $(( r1 - r0 )) -lt $(( 8 * 1048576 )) ]

# A changed block is put on the wire to a peer that is stopped, so it
# never applies it, and the peer then dies. The sender must not count that
# block as held when the peer comes back at its old durable point.
unsent() {
	"$TWINFS_BIN" status --state "$A_STATE" --json | python3 -c '
import json, sys
s = json.load(sys.stdin)
sys.exit(0 if s["sent_seq"] > s["acked_seq"] else 1)'
}
kill -STOP "$SERVE_PID"
step poke3
wait_until 20 unsent || fail "the changed block was never sent to the stopped peer"
sleep 0.5
kill_serve
start_serve
wait_until 20 connected || fail "mount did not reconnect"
sync_peer || fail "twinfs sync failed after the stopped peer was replaced"
check "a block sent but never applied is sent again" peer_equal big.bin

echo quit >&3
wait_until 30 grep -qx closed "$T/done" || fail "writer did not close big.bin"
wait "$WRITER"
exec 3>&-
sync_peer || fail "twinfs sync failed after close"
check "after close: the stores are equal" replicated
finish
