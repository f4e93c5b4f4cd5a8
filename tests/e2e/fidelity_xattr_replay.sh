#!/bin/sh
# A peer killed after applying a RENAME_EXCHANGE and an xattr change of a
# batch, before the batch is durable, gets the batch again: the exchange
# applied twice swaps the names back, and the re-sent state of the two
# paths must then include their xattrs, or one inode's xattr stays under
# the other name.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"
command -v getfattr >/dev/null || skip "getfattr missing (apt install attr)"

start_serve
start_mount
echo xx >"$MNT/x"; echo y >"$MNT/y"
setfattr -n user.a -v A "$MNT/x"
setfattr -n user.b -v B "$MNT/y"
check "first sync" do_sync

# One batch: the exchange, the xattr removal, then a lot of data (which
# keeps the batch open on the wire long enough to kill the peer in it).
kill -STOP "$SERVE_PID"
head -c 300000000 /dev/zero >"$MNT/big"
python3 - "$MNT" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
x, y = os.path.join(sys.argv[1], "x"), os.path.join(sys.argv[1], "y")
if libc.renameat2(-100, x.encode(), -100, y.encode(), 2) != 0:
    sys.exit("exchange failed")
os.removexattr(x, "user.b")
PY
kill -CONT "$SERVE_PID"
peer_applied() { getfattr -n user.a "$P_STORE/y" >/dev/null 2>&1 && ! getfattr -n user.b "$P_STORE/x" >/dev/null 2>&1 && [ -s "$P_STORE/big" ]; }
check "the peer applied the exchange and the removal" wait_until 30 peer_applied
kill_serve
start_serve
check "sync after the peer came back dirty" do_sync 60
check "peer equals primary (xattrs follow their inode)" stores_equal
finish
