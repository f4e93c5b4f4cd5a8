"""Operations of the differential tester (tests/e2e/difftest.py): owns the
random generation of an operation sequence from a seed and applying it to
a directory, recording each operation's outcome ("ok", "ok:<value>" or an
errno name).

An op is a JSON-able list, ["name", args...], printed one per line; the
same list applied to two directories that behave like local folders gives
the same outcomes. Rules that keep runs comparable and safe:
- every byte written comes from the op itself (a data seed), never from
  the clock or os.urandom;
- paths never contain ".." and symlink targets are relative names below
  the link's directory, so nothing reaches outside the root;
- every open is O_NONBLOCK (a FIFO without a reader fails with ENXIO
  instead of blocking) and devices are only /dev/null, /dev/zero, the
  whiteout 0:0 and an unassigned block major, so no open touches hardware;
- faults (["fault", kind]) are ops too, so they shrink with the rest; an
  applier without a fault hook treats them as no-ops, except that
  "umount" closes every held fd (a mount with open files cannot unmount).
"""
import ctypes
import errno
import hashlib
import os
import random
import shutil
import stat

RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT = 1, 2, 4
AT_FDCWD = -100

# The name space: directories d1..d3 nested two deep, names a..f in each.
# Directory ops mostly name a directory path, other ops a leaf, so the
# tree keeps its shape for a while and most ops do something; sometimes a
# leaf takes a directory's name (then ENOTDIR paths get exercised too).
DIRS = ["", "d1", "d2", "d3", "d1/d1", "d1/d2", "d2/d3", "d3/d1"]
LEAVES = ["a", "b", "c", "d", "e", "f"]
NAMES = LEAVES + ["d1", "d2", "d3"]
DIR_OPS = ("mkdir", "rmdir", "rmrf", "rename", "rename_exchange", "rename_noreplace")
FD_SLOTS = 4
XATTRS = ["user.a", "user.b", "trusted.t", "user.long"]
# Devices whose open is harmless: /dev/null, /dev/zero, the overlayfs
# whiteout, and a block device in the local/experimental major range that
# no driver claims (open fails with ENXIO).
DEVICES = [("c", 1, 3), ("c", 1, 5), ("c", 0, 0), ("b", 240, 7)]
MODES = [0o644, 0o600, 0o755, 0o700, 0o4755, 0o2755, 0o1777, 0o000, 0o640]
IDS = [(0, 0), (12, 34), (1000, 1000), (0, 34)]
# Explicit times: whole seconds and odd nanoseconds, old and recent.
TIMES = [1_000_000_000_000_000_000, 1_234_567_890_123_456_789,
         1_700_000_000_000_000_001, 946_684_800_999_999_999]

FAULTS = ["stop", "cont", "kill", "restart", "overflow", "umount", "remount"]

_libc = ctypes.CDLL(None, use_errno=True)


def renameat2(src, dst, flags):
    if _libc.renameat2(AT_FDCWD, os.fsencode(src), AT_FDCWD,
                       os.fsencode(dst), ctypes.c_uint(flags)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), src)


def data(dseed, n):
    return random.Random(dseed).randbytes(n)


# ---------------------------------------------------------------- generation

# (weight, op kind). Faults are added by generate() when enabled.
WEIGHTS = [
    (10, "create"), (4, "creat_empty"), (10, "pwrite"), (4, "open_hold"),
    (6, "fd_write"), (3, "fd_close"), (5, "truncate"), (3, "fallocate"),
    (6, "mkdir"), (3, "rmdir"), (5, "unlink"), (2, "rmrf"),
    (6, "rename"), (2, "rename_noreplace"), (3, "rename_exchange"),
    (2, "rename_whiteout"), (4, "symlink"), (4, "link"), (2, "mkfifo"),
    (2, "mknod"), (1, "mksock"), (4, "chmod"), (3, "chown"), (5, "utime"),
    (4, "setxattr"), (3, "removexattr"), (4, "read"),
]


def _path(r, kind=""):
    if kind in DIR_OPS and r.random() < (0.7 if kind == "mkdir" else 0.3):
        return r.choice(DIRS[1:])
    d = r.choice(DIRS)
    n = r.choice(LEAVES) if r.random() < 0.95 else r.choice(NAMES)
    return d + "/" + n if d else n


def _op(r, kind):
    p = _path(r, kind)
    if kind == "create":
        return [kind, p, r.choice([0, 1, 100, 4096, 70000, 200000]), r.randrange(1 << 30)]
    if kind == "creat_empty":
        return [kind, p]
    if kind == "pwrite":
        return [kind, p, r.choice([0, 1, 4095, 131072, 131073, 300000]),
                r.choice([1, 10, 4096, 65536, 140000]), r.randrange(1 << 30)]
    if kind == "open_hold":
        return [kind, r.randrange(FD_SLOTS), p, r.choice(["w", "wc", "wct", "a"])]
    if kind == "fd_write":
        return [kind, r.randrange(FD_SLOTS), r.choice([0, 5, 131000, 260000]),
                r.choice([1, 4096, 70000]), r.randrange(1 << 30)]
    if kind == "fd_close":
        return [kind, r.randrange(FD_SLOTS)]
    if kind == "truncate":
        return [kind, p, r.choice([0, 1, 5000, 131072, 400000])]
    if kind == "fallocate":
        return [kind, p, r.choice([0, 4096, 200000]), r.choice([1, 4096, 150000])]
    if kind in ("mkdir", "rmdir", "unlink", "rmrf", "mkfifo", "mksock", "read"):
        return [kind, p]
    if kind.startswith("rename"):
        return [kind, p, _path(r, kind)]
    if kind == "symlink":
        # The target: a relative name at or below the link's directory.
        t = r.choice(NAMES + ["d1/a", "d2/b", "nowhere"])
        return [kind, t, p]
    if kind == "link":
        return [kind, p, _path(r)]
    if kind == "mknod":
        return [kind, p] + list(r.choice(DEVICES))
    if kind == "chmod":
        return [kind, p, r.choice(MODES)]
    if kind == "chown":
        return [kind, p] + list(r.choice(IDS))
    if kind == "utime":
        return [kind, p, r.choice(TIMES) + r.randrange(1000), r.choice(TIMES)]
    if kind == "setxattr":
        name = r.choice(XATTRS)
        return [kind, p, name, r.choice([1, 16, 300 if name == "user.long" else 3]),
                r.randrange(1 << 30)]
    if kind == "removexattr":
        return [kind, p, r.choice(XATTRS)]
    raise ValueError(kind)


def generate(seed, n, faults=()):
    """n ops from seed; faults: the fault kinds that may appear."""
    r = random.Random(seed)
    kinds = [k for w, k in WEIGHTS for _ in range(w)]
    # The directories first (ops like the others: they shrink away too).
    ops = [["mkdir", d] for d in DIRS[1:]]
    offline = False
    serve = "up"        # up, stopped, dead
    faults = set(faults)
    for _ in range(n):
        if faults and r.random() < 0.03:
            # A fault, and the op that undoes it comes later by itself.
            choices = []
            if serve == "up":
                choices += [f for f in ("stop", "kill", "overflow") if f in faults]
            elif serve == "stopped" and "cont" in faults:
                choices.append("cont")
            elif serve == "dead" and "restart" in faults:
                choices.append("restart")
            if not offline and "umount" in faults:
                choices.append("umount")
            if offline and "remount" in faults:
                choices += ["remount"] * 2
            if "overflow" in choices and r.random() < 0.7:
                choices.remove("overflow")      # the slowest fault: rarer
            if choices:
                f = r.choice(choices)
                ops.append(["fault", f])
                if f == "stop":
                    serve = "stopped"
                elif f in ("kill", "overflow"):
                    serve = "dead"
                elif f in ("cont", "restart"):
                    serve = "up"
                elif f == "umount":
                    offline = True
                elif f == "remount":
                    offline = False
                continue
        ops.append(_op(r, r.choice(kinds)))
    return ops


# ------------------------------------------------------------------ applying

class Applier:
    """Applies ops below self.root; fault(kind) is called for fault ops."""

    def __init__(self, root, fault=None):
        self.root = root
        self.fault = fault
        self.fds = {}

    def close_all(self):
        for slot in sorted(self.fds):
            try:
                os.close(self.fds[slot])
            except OSError:
                pass
        self.fds.clear()

    def apply(self, op):
        try:
            v = self._apply(op)
            return "ok" if v is None else "ok:%s" % v
        except OSError as e:
            return errno.errorcode.get(e.errno, str(e.errno))

    def _p(self, rel):
        return os.path.join(self.root, rel)

    def _write_all(self, fd, buf, off):
        while buf:
            n = os.pwrite(fd, buf, off)
            buf, off = buf[n:], off + n

    def _apply(self, op):
        k, a = op[0], op[1:]
        P = self._p
        if k == "fault":
            if a[0] == "umount":
                self.close_all()
            if self.fault:
                self.fault(a[0])
            return None
        if k == "create":
            fd = os.open(P(a[0]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK, 0o644)
            try:
                self._write_all(fd, data(a[2], a[1]), 0)
            finally:
                os.close(fd)
        elif k == "creat_empty":
            os.close(os.open(P(a[0]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK, 0o644))
        elif k == "pwrite":
            fd = os.open(P(a[0]), os.O_WRONLY | os.O_NONBLOCK)
            try:
                self._write_all(fd, data(a[3], a[2]), a[1])
            finally:
                os.close(fd)
        elif k == "open_hold":
            slot, path, how = a
            fl = {"w": os.O_WRONLY, "wc": os.O_WRONLY | os.O_CREAT,
                  "wct": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                  "a": os.O_WRONLY | os.O_APPEND}[how]
            if slot in self.fds:
                os.close(self.fds.pop(slot))
            self.fds[slot] = os.open(P(path), fl | os.O_NONBLOCK, 0o644)
        elif k == "fd_write":
            slot, off, n, ds = a
            if slot not in self.fds:
                return "noslot"
            self._write_all(self.fds[slot], data(ds, n), off)
        elif k == "fd_close":
            if a[0] not in self.fds:
                return "noslot"
            os.close(self.fds.pop(a[0]))
        elif k == "truncate":
            os.truncate(P(a[0]), a[1])
        elif k == "fallocate":
            fd = os.open(P(a[0]), os.O_WRONLY | os.O_NONBLOCK)
            try:
                os.posix_fallocate(fd, a[1], a[2])
            finally:
                os.close(fd)
        elif k == "mkdir":
            os.mkdir(P(a[0]), 0o755)
        elif k == "rmdir":
            os.rmdir(P(a[0]))
        elif k == "unlink":
            os.unlink(P(a[0]))
        elif k == "rmrf":
            p = P(a[0])
            st = os.lstat(p)
            if stat.S_ISDIR(st.st_mode):
                def onerr(fn, path, exc):
                    raise exc[1]
                shutil.rmtree(p, onerror=onerr)
            else:
                os.unlink(p)
        elif k == "rename":
            os.rename(P(a[0]), P(a[1]))
        elif k == "rename_noreplace":
            renameat2(P(a[0]), P(a[1]), RENAME_NOREPLACE)
        elif k == "rename_exchange":
            renameat2(P(a[0]), P(a[1]), RENAME_EXCHANGE)
        elif k == "rename_whiteout":
            renameat2(P(a[0]), P(a[1]), RENAME_WHITEOUT)
        elif k == "symlink":
            os.symlink(a[0], P(a[1]))
        elif k == "link":
            os.link(P(a[0]), P(a[1]), follow_symlinks=False)
        elif k == "mkfifo":
            os.mkfifo(P(a[0]), 0o644)
        elif k == "mksock":
            os.mknod(P(a[0]), stat.S_IFSOCK | 0o755)
        elif k == "mknod":
            t = stat.S_IFCHR if a[1] == "c" else stat.S_IFBLK
            os.mknod(P(a[0]), t | 0o644, os.makedev(a[2], a[3]))
        elif k == "chmod":
            os.chmod(P(a[0]), a[1])
        elif k == "chown":
            os.chown(P(a[0]), a[1], a[2], follow_symlinks=False)
        elif k == "utime":
            os.utime(P(a[0]), ns=(a[1], a[2]), follow_symlinks=False)
        elif k == "setxattr":
            os.setxattr(P(a[0]), a[1], data(a[3], a[2]), follow_symlinks=False)
        elif k == "removexattr":
            os.removexattr(P(a[0]), a[1], follow_symlinks=False)
        elif k == "read":
            # What a reader sees: the content's hash (only regular files:
            # lstat first, and O_NOFOLLOW|O_NONBLOCK).
            st = os.lstat(P(a[0]))
            if not stat.S_ISREG(st.st_mode):
                return stat.filemode(st.st_mode)[0]
            fd = os.open(P(a[0]), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            h = hashlib.sha256()
            try:
                while True:
                    b = os.read(fd, 1 << 20)
                    if not b:
                        break
                    h.update(b)
            finally:
                os.close(fd)
            return h.hexdigest()[:12]
        else:
            raise ValueError("unknown op %r" % (op,))
        return None
