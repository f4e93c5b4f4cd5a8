#!/bin/sh
# Two RENAME_EXCHANGEs of the same pair, then an xattr change: the peer
# must hold the xattrs of the right inode under each name (nothing keyed
# by a stale path). Repeated, because the window is timing-dependent.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"

start_serve
start_mount

bad=0
for round in $(seq 1 15); do
	python3 - "$MNT" "$round" >"$T/ops.log" 2>&1 <<'PY'
import ctypes, os, sys
m, n = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
def exchange(a, b):
    if libc.renameat2(-100, a.encode(), -100, b.encode(), 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2 exchange")
x, y = os.path.join(m, "x" + n), os.path.join(m, "y" + n)
open(x, "w").write("x" * int(n))
open(y, "w").write("y")
os.setxattr(x, "user.a", b"A")
os.setxattr(y, "user.b", b"B")
exchange(x, y)
exchange(x, y)
os.removexattr(x, "user.a")
os.setxattr(y, "user.c", b"C")
exchange(x, y)
os.removexattr(x, "user.b")
PY
	[ $? -eq 0 ] || { cat "$T/ops.log"; bad=$((bad + 1)); continue; }
	do_sync || { bad=$((bad + 1)); continue; }
	stores_equal || { note "round $round differs"; bad=$((bad + 1)); }
done
check "every round: peer equals primary after exchanges + xattr changes" [ $bad -eq 0 ]
finish
