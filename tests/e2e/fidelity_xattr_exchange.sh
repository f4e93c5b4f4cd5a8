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

# The same without a sync in between: batches are taken at any point of
# the sequence (data writes make them), so the peer applies the exchanges
# in other batches than the xattr changes and the data.
python3 - "$MNT" >"$T/ops.log" 2>&1 <<'PY'
import ctypes, os, random, sys, time
m = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
def exchange(a, b):
    if libc.renameat2(-100, a.encode(), -100, b.encode(), 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2 exchange")
rnd = random.Random(7)
for n in range(40):
    x, y = os.path.join(m, "sx%d" % n), os.path.join(m, "sy%d" % n)
    open(x, "w").write("x" * (n + 1) * 100)
    open(y, "w").write("y")
    os.setxattr(x, "user.a", b"A")
    os.setxattr(y, "user.b", b"B")
    for k in range(4):
        exchange(x, y)
        with open(rnd.choice((x, y)), "a") as f:
            f.write("more")
        if rnd.random() < 0.5:
            time.sleep(rnd.random() * 0.03)
    os.removexattr(x, "user.a")
    os.removexattr(y, "user.b")
    os.setxattr(x, "user.z", b"Z%d" % n)
PY
orc=$?
cat "$T/ops.log"
check "the interleaved sequence succeeds on the mount" [ $orc -eq 0 ]
check "sync after the interleaved sequence" do_sync 60
check "peer equals primary after the interleaved sequence" stores_equal

# The peer dies in the middle of applying (kill -9 while exchanges and
# xattr changes stream): it comes back dirty, the primary re-sends from
# its durable point, and exchanges replayed on top of ones already
# applied must not leave the xattrs of one inode under the other name.
bad=0
for round in $(seq 1 6); do
	python3 - "$MNT" "$round" >"$T/ops.log" 2>&1 <<'PY' &
import ctypes, os, sys
m, r = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
def exchange(a, b):
    if libc.renameat2(-100, a.encode(), -100, b.encode(), 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2 exchange")
for n in range(150):
    x, y = os.path.join(m, "k%s_%dx" % (r, n)), os.path.join(m, "k%s_%dy" % (r, n))
    open(x, "w").write("x")
    open(y, "w").write("yy")
    os.setxattr(x, "user.a", b"A")
    os.setxattr(y, "user.b", b"B")
    exchange(x, y)
    exchange(x, y)
    os.removexattr(x, "user.a")
    exchange(x, y)
    os.setxattr(x, "user.n", b"%d" % n)
PY
	opid=$!
	sleep 0.$((round * 13 % 9 + 1))	# kill at varying points of the stream
	kill_serve
	wait $opid || { cat "$T/ops.log"; bad=$((bad + 1)); }
	start_serve
	do_sync 60 || { bad=$((bad + 1)); continue; }
	stores_equal || { note "kill round $round differs"; bad=$((bad + 1)); }
done
check "peer killed while applying: equal after every round" [ $bad -eq 0 ]
finish
