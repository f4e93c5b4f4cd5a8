#!/bin/sh
# A generated sequence of namespace and attribute operations over every
# file type (fixed seeds, so a failure repeats), each followed at the end
# by `twinfs sync` and a complete comparison of both stores.
# FIDELITY_OPS and FIDELITY_SEEDS override the size (default 400 ops, 3 seeds).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"

start_serve
start_mount

for seed in ${FIDELITY_SEEDS:-1 2 3}; do
	python3 - "$MNT" "$seed" "${FIDELITY_OPS:-400}" >"$T/ops.log" 2>&1 <<'PY'
import ctypes, errno, os, random, socket, stat, sys
m, seed, nops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(seed)
libc = ctypes.CDLL(None, use_errno=True)
root = os.path.join(m, "s%d" % seed)
os.mkdir(root)
def names():
    out = []
    for dp, dn, fn in os.walk(root):
        for n in dn + fn:
            out.append(os.path.join(dp, n))
    return out
def dirs():
    return [root] + [p for p in names() if os.path.isdir(p) and not os.path.islink(p)]
def fresh():
    return os.path.join(rnd.choice(dirs()), "n%d" % rnd.randrange(40))
def some():
    n = names()
    return rnd.choice(n) if n else None
def rename2(a, b, flags):
    if libc.renameat2(-100, a.encode(), -100, b.encode(), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
ops = 0
while ops < nops:
    k = rnd.randrange(17)
    try:
        if k == 0: os.mkdir(fresh())
        elif k == 1:
            # O_EXCL: never opens what is there (a fifo would block)
            fd = os.open(fresh(), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, b"d" * rnd.randrange(3000))
            os.close(fd)
        elif k == 2: os.close(os.open(fresh(), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        elif k == 3: os.symlink("t%d" % rnd.randrange(9), fresh())
        elif k == 4: os.mkfifo(fresh())
        elif k == 5: os.mknod(fresh(), stat.S_IFCHR | 0o600, os.makedev(1, rnd.randrange(1, 9)))
        elif k == 6:
            q = fresh()
            if len(q.encode()) < 100:	# sun_path
                s = socket.socket(socket.AF_UNIX); s.bind(q); s.close()
        elif k == 7:
            p = some()
            if p and not os.path.isdir(p) or (p and os.path.islink(p)): os.link(p, fresh(), follow_symlinks=False)
        elif k == 8:
            p = some()
            if p: os.rename(p, fresh())
        elif k == 9:
            a, b = some(), some()
            if a and b: rename2(a, b, 2)
        elif k == 10:
            a = some()
            if a: rename2(a, fresh(), 4)
        elif k == 11:
            p = some()
            if p: os.chown(p, rnd.randrange(5), rnd.randrange(5), follow_symlinks=False)
        elif k == 12:
            p = some()
            if p and not os.path.islink(p): os.chmod(p, rnd.choice((0o600, 0o644, 0o755, 0o1777, 0o4755)))
        elif k == 13:
            p = some()
            if p: os.utime(p, ns=(rnd.randrange(10**18), rnd.randrange(10**18)), follow_symlinks=False)
        elif k == 14:
            p = some()
            if p and not os.path.islink(p):
                os.setxattr(p, "trusted.k%d" % rnd.randrange(3), b"v%d" % rnd.randrange(99), follow_symlinks=False)
        elif k == 15:
            p = some()
            if p and not os.path.islink(p):
                n = os.listxattr(p, follow_symlinks=False)
                if n: os.removexattr(p, rnd.choice(n), follow_symlinks=False)
        elif k == 16:
            p = some()
            if p:
                if os.path.isdir(p) and not os.path.islink(p): os.rmdir(p)
                else: os.unlink(p)
        ops += 1
    except OSError as e:
        if e.errno not in (errno.EEXIST, errno.ENOENT, errno.ENOTEMPTY, errno.EISDIR,
                           errno.ENOTDIR, errno.EINVAL, errno.EPERM, errno.EXDEV, errno.EBUSY,
                           errno.EADDRINUSE):
            raise
        ops += 1
print("ops", ops)
PY
	orc=$?
	[ $orc -eq 0 ] || cat "$T/ops.log"
	check "seed $seed: the operations run on the mount" [ $orc -eq 0 ]
	check "seed $seed: sync" do_sync 60
	check "seed $seed: peer equals primary" stores_equal
done
finish
