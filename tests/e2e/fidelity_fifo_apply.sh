#!/bin/sh
# FIFOs and device nodes in the tree never make either side open them:
# their owner, mode, times and xattrs replicate, the peer's serve keeps
# answering and exits on SIGTERM.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"

start_serve
start_mount

python3 - "$MNT" >"$T/ops.log" 2>&1 <<'PY'
import os, stat, sys
m = sys.argv[1]
p = lambda *x: os.path.join(m, *x)
os.mkdir(p("d"))
os.mkfifo(p("d/fifo"), 0o644)
os.mknod(p("d/tty"), stat.S_IFCHR | 0o620, os.makedev(5, 0))	# /dev/tty
os.mknod(p("d/null"), stat.S_IFCHR | 0o666, os.makedev(1, 3))
os.mknod(p("d/loop"), stat.S_IFBLK | 0o660, os.makedev(7, 0))
for n in ("fifo", "tty", "null", "loop"):
    q = p("d", n)
    os.chown(q, 1001, 1002, follow_symlinks=False)
    os.chmod(q, 0o600)
    os.utime(q, ns=(1700000000 * 10**9 + 1, 1700000000 * 10**9 + 7), follow_symlinks=False)
    os.setxattr(q, "trusted.k", n.encode(), follow_symlinks=False)
# a fifo replaced by a regular file of the same name, and back
os.rename(p("d/fifo"), p("d/fifo2"))
open(p("d/fifo"), "w").write("now a file")
os.unlink(p("d/fifo"))
os.mkfifo(p("d/fifo"))
os.link(p("d/fifo"), p("fifo-link"))
# data of a file whose name is a fifo by the time the data is sent
for k in range(3):
    q = p("d", "w%d" % k)
    open(q, "w").write("data" * 1000)
    if k == 0:
        os.unlink(q); os.mkfifo(q)
    elif k == 1:
        os.mkfifo(q + ".f"); os.rename(q + ".f", q)
    else:
        os.rename(q, q + ".moved"); os.mkfifo(q)
PY
orc=$?
cat "$T/ops.log"
check "the operations succeed on the mount" [ $orc -eq 0 ]
check "sync --timeout 30" do_sync 30
check "peer equals primary" stores_equal
check "serve still answers status" "$TWINFS_BIN" status --state "$P_STATE"
# a reader and a writer in the primary's store must not matter either
( cd "$MNT" && chmod 0640 d/fifo && chown 3:4 d/null )
check "second sync" do_sync 30
check "peer equals primary after the second round" stores_equal
# A peer whose store holds fifos and devices where the primary has
# regular files (a restored or reused peer): the baseline replaces them
# without opening them.
kill_serve
rm -rf "$P_STORE" "$P_STATE"; mkdir -p "$P_STORE/d" "$P_STATE"
mkfifo "$P_STORE/d/w2.moved"
mknod "$P_STORE/d/fifo2" c 5 0
echo x >"$MNT/d/plain"
mkfifo "$P_STORE/d/plain"
start_serve
check "sync to a peer with fifos in the way (baseline)" do_sync 30
check "peer equals primary after the baseline" stores_equal
check "serve answers status after the baseline" "$TWINFS_BIN" status --state "$P_STATE"
kill -TERM "$SERVE_PID"
check "serve exits on SIGTERM within 10 s" wait_until 10 sh -c "! kill -0 $SERVE_PID"
finish
