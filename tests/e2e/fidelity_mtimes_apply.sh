#!/bin/sh
# Every attribute of every file type replicates: mtimes (ns) of symlinks,
# fifos, sockets, device nodes and directories (new ones, ones whose
# entries changed, ones swapped by RENAME_EXCHANGE), owners and modes of
# special files, utimens on a symlink itself, trusted xattrs on special
# files. The peer runs a little behind (its clock would show otherwise).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"

start_serve
start_mount

ops() {
	python3 - "$MNT" <<'PY'
import ctypes, os, socket, stat, sys, time
m = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
def exchange(a, b):
    if libc.renameat2(-100, a.encode(), -100, b.encode(), 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2 exchange")
p = lambda *x: os.path.join(m, *x)
os.makedirs(p("d1/sub")); os.makedirs(p("d2/other"))
open(p("d1/sub/f"), "w").write("x")
os.symlink("target", p("d1/s"))
os.symlink("../d1", p("d2/up"))
os.mkfifo(p("d1/fifo"), 0o640)
os.mknod(p("d1/chr"), stat.S_IFCHR | 0o600, os.makedev(1, 3))
os.mknod(p("d1/blk"), stat.S_IFBLK | 0o660, os.makedev(7, 0))
sk = socket.socket(socket.AF_UNIX); sk.bind(p("d1/sock")); sk.close()
time.sleep(0.05)
# attributes of the special files themselves
os.chown(p("d1/s"), 12, 34, follow_symlinks=False)
os.utime(p("d1/s"), ns=(1000000000, 1234567891), follow_symlinks=False)
for n in ("fifo", "chr", "blk", "sock"):
    os.chown(p("d1", n), 56, 78, follow_symlinks=False)
    os.chmod(p("d1", n), 0o604)
    os.setxattr(p("d1", n), "trusted.t", b"v-" + n.encode(), follow_symlinks=False)
os.utime(p("d1/fifo"), ns=(1500000000, 1500000001), follow_symlinks=False)
os.utime(p("d1/chr"), ns=(1600000000, 1600000002), follow_symlinks=False)
# moves between directories, an exchange of two directories
os.rename(p("d1/blk"), p("d2/blk"))
exchange(p("d1/sub"), p("d2/other"))
os.mkdir(p("d3"))
exchange(p("d1"), p("d3"))
os.unlink(p("d2/up"))
PY
}
# The peer is stopped while the ops run, so that applying them later
# would give every entry the peer's clock.
kill -STOP "$SERVE_PID"
ops >"$T/ops.log" 2>&1
orc=$?
cat "$T/ops.log"
check "the operations succeed on the mount" [ $orc -eq 0 ]
sleep 1	# the peer's clock must be past every primary time
kill -CONT "$SERVE_PID"
check "sync" do_sync
check "peer equals primary (every type's mtime, owner, mode, xattrs)" stores_equal

# Changes of the same directories again, after a sync.
( cd "$MNT" && touch d3/sub/new && rm d3/fifo && mv d2/blk d3/ ) 
check "second sync" do_sync
check "peer equals primary after the second round" stores_equal
finish
