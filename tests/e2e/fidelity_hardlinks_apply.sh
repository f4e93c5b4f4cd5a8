#!/bin/sh
# Hard links of every file type (symlinks, fifos, sockets, device nodes,
# regular files) stay one inode on the peer, whatever ops came before the
# link (chown, utime, rename, xattr), live and in a baseline to a fresh peer.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"

start_serve
start_mount

python3 - "$MNT" >"$T/ops.log" 2>&1 <<'PY'
import os, socket, stat, sys
m = sys.argv[1]
p = lambda *x: os.path.join(m, *x)
os.mkdir(p("d")); os.mkdir(p("e"))
def make(kind, path):
    if kind == "sym": os.symlink("t-" + os.path.basename(path), path)
    elif kind == "fifo": os.mkfifo(path)
    elif kind == "chr": os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 7))
    elif kind == "blk": os.mknod(path, stat.S_IFBLK | 0o600, os.makedev(7, 1))
    elif kind == "sock":
        s = socket.socket(socket.AF_UNIX); s.bind(path); s.close()
    else: open(path, "w").write(kind)
for kind in ("sym", "fifo", "chr", "blk", "sock", "reg"):
    for pre in ("none", "chown", "utime", "rename", "xattr", "link2"):
        a = p("d", kind + "-" + pre)
        make(kind, a)
        if pre == "chown": os.chown(a, 5, 6, follow_symlinks=False)
        if pre == "utime": os.utime(a, ns=(10**9, 10**9 + 5), follow_symlinks=False)
        if pre == "rename":
            os.rename(a, a + ".r"); a = a + ".r"
        if pre == "xattr" and kind != "sym":
            os.setxattr(a, "trusted.k", b"1", follow_symlinks=False)
        os.link(a, p("e", os.path.basename(a) + ".l"), follow_symlinks=False)
        if pre == "link2":
            os.link(a, p("d", os.path.basename(a) + ".l2"), follow_symlinks=False)
            os.unlink(a)
    # the name the inode was first looked up by is gone before the next link
    a = p("d", kind + "-relink")
    make(kind, a)
    os.link(a, a + ".b", follow_symlinks=False)
    os.lstat(a + ".b")
    os.unlink(a)
    os.link(a + ".b", a + ".c", follow_symlinks=False)
    os.rename(a + ".c", p("e", kind + "-relink.c"))
    os.link(p("e", kind + "-relink.c"), a + ".d", follow_symlinks=False)
PY
orc=$?
cat "$T/ops.log"
check "the operations succeed on the mount" [ $orc -eq 0 ]
check "sync" do_sync
check "peer equals primary (hard-link groups of every type)" stores_equal

# A fresh peer gets everything by a baseline walk.
kill_serve
rm -rf "$P_STORE" "$P_STATE"; mkdir -p "$P_STORE" "$P_STATE"
start_serve
check "sync to a fresh peer (baseline)" do_sync 60
check "fresh peer equals primary (hard-link groups of every type)" stores_equal
finish
