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
  "umount" closes every held fd (a mount with open files cannot unmount)
  and so does "remount" (an fd opened on the store while unmounted would
  write behind the mount's back).
"""
import ctypes
import errno
import hashlib
import mmap
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

FAULTS = ["stop", "cont", "kill", "restart", "overflow", "umount", "remount", "sync"]

# The extended op kinds (--op-set all), after what stress tools like
# fsstress exercise: every fallocate mode, copy_file_range, O_TMPFILE made
# visible by linkat, writes through a shared mapping, truncate of an open
# file, a rename between two names of one inode, utimensat with UTIME_NOW
# and UTIME_OMIT, set-id bits that the kernel drops for an unprivileged
# caller (chmod by an owner outside the group, a write by another user,
# a chgrp by the owner), and a write through a held fd after its name is
# gone.
# (COLLAPSE_RANGE and INSERT_RANGE are left out: the kernel's FUSE client
# refuses them with EOPNOTSUPP before any FUSE filesystem sees them.)
FALLOC = {"keep": 0x01, "punch": 0x03, "zero": 0x10, "zero_keep": 0x11}
UTIMES = ["now", "omit", 1_234_567_890_123_456_789, 1_700_000_000_000_000_001]
SETID_MODES = [0o4777, 0o6777, 0o2777, 0o2767, 0o6755]
USER = (1000, 1000)         # the unprivileged caller of the *_as ops
USER_GROUP = 34             # a group USER is not in

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
# CLASSIC is what the CI's fixed seeds were chosen with; EXTRA is added
# by --op-set all.
CLASSIC = [
    (10, "create"), (4, "creat_empty"), (10, "pwrite"), (4, "open_hold"),
    (6, "fd_write"), (3, "fd_close"), (5, "truncate"), (3, "fallocate"),
    (6, "mkdir"), (3, "rmdir"), (5, "unlink"), (2, "rmrf"),
    (6, "rename"), (2, "rename_noreplace"), (3, "rename_exchange"),
    (2, "rename_whiteout"), (4, "symlink"), (4, "link"), (2, "mkfifo"),
    (2, "mknod"), (1, "mksock"), (4, "chmod"), (3, "chown"), (5, "utime"),
    (4, "setxattr"), (3, "removexattr"), (4, "read"),
]
EXTRA = [
    (4, "falloc"), (4, "copy_range"), (3, "mmap_write"),
    (3, "fd_truncate"), (3, "link_rename"), (3, "utimens"), (2, "sgid_chmod"),
    (2, "setid_write"), (2, "chgrp_as"), (2, "unlink_slot"),
]
# O_TMPFILE is a set of its own: a twinfs mount refuses it (EOPNOTSUPP;
# libfuse 3.14 has no tmpfile operation), so with it the mount's errnos
# differ from a plain directory's by design, not by a replication fault.
# File capabilities and POSIX ACLs (replicated since 005ab4d), a set of
# their own so that the CI's fixed "all" seeds keep their sequences.
SECURITY = [(3, "setcap"), (3, "setacl")]
OP_SETS = {"classic": CLASSIC, "all": CLASSIC + EXTRA,
           "tmpfile": CLASSIC + EXTRA + [(3, "tmpfile")],
           "security": CLASSIC + EXTRA + SECURITY}
WEIGHTS = CLASSIC


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
    return _op_extra(r, kind, p)


def _op_extra(r, kind, p):
    if kind == "falloc":
        return [kind, p, r.choice(sorted(FALLOC)), r.choice([0, 4096, 8192, 65536, 131072]),
                r.choice([1, 4096, 8192, 65536])]
    if kind == "copy_range":
        return [kind, p, _path(r), r.choice([0, 1, 4096, 70000]),
                r.choice([0, 5, 4096, 131072]), r.choice([1, 4096, 100000])]
    if kind == "tmpfile":
        return [kind, r.choice(DIRS), p, r.choice([0, 1, 5000, 70000]), r.randrange(1 << 30)]
    if kind == "mmap_write":
        return [kind, p, r.choice([0, 1, 4095, 65536, 199999]), r.choice([1, 100, 4096, 70000]),
                r.randrange(1 << 30)]
    if kind == "fd_truncate":
        return [kind, r.randrange(FD_SLOTS), r.choice([0, 1, 4096, 131073, 300000])]
    if kind == "link_rename":
        return [kind, p, _path(r)]
    if kind == "utimens":
        return [kind, p, r.choice(UTIMES), r.choice(UTIMES)]
    if kind == "sgid_chmod":
        return [kind, p, r.choice([0o2755, 0o2775, 0o6755, 0o2700, 0o3777])]
    if kind == "setid_write":
        return [kind, p, r.choice(SETID_MODES), r.choice([0, 4096, 100000]),
                r.choice([1, 4096]), r.randrange(1 << 30)]
    if kind == "chgrp_as":
        return [kind, p, r.choice([0o2755, 0o2745, 0o6644, 0o2644, 0o4755])]
    if kind == "unlink_slot":
        return [kind, r.randrange(FD_SLOTS)]
    if kind == "setcap":
        return [kind, p, r.choice(["set", "set", "remove"])]
    if kind == "setacl":
        return [kind, p, r.choice(["access", "access", "default"]), r.choice([-1, 0, 4, 5, 7])]
    raise ValueError(kind)


CAPS = bytes.fromhex("0100000200200000000000000000000000000000")   # cap_net_raw+ep


def _acl(perm):
    """A POSIX ACL's xattr value: user::rw-, user:1234:PERM, group::r--,
    mask::PERM|r, other::r--."""
    import struct
    e = [(0x01, 6, 0xffffffff), (0x02, perm, 1234), (0x04, 4, 0xffffffff),
         (0x10, perm | 4, 0xffffffff), (0x20, 4, 0xffffffff)]
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *x) for x in e)


def generate(seed, n, faults=(), op_set="classic"):
    """n ops from seed; faults: the fault kinds that may appear; op_set: a
    key of OP_SETS (the same seed gives the same ops within one set)."""
    r = random.Random(seed)
    kinds = [k for w, k in OP_SETS[op_set] for _ in range(w)]
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


def file_sha256(path):
    """SHA-256 (hex) of a regular file's content, opened without following a
    symlink or blocking on a FIFO; OSError as os.open raises it."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    h = hashlib.sha256()
    try:
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            h.update(b)
    finally:
        os.close(fd)
    return h.hexdigest()

class Applier:
    """Applies ops below self.root; fault(kind) is called for fault ops."""

    def __init__(self, root, fault=None):
        self.root = root
        self.fault = fault
        self.fds = {}
        self.fd_paths = {}      # slot -> the path it was opened by

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
            # A mount with open files cannot unmount; and fds opened on the
            # store while unmounted would write behind the mount's back
            # once it is mounted again (outside what replication can see:
            # README, "What it guarantees"), so a remount closes them too.
            if a[0] in ("umount", "remount"):
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
            self.fd_paths[slot] = path
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
            return file_sha256(P(a[0]))[:12]
        else:
            return self._apply_extra(k, a)
        return None

    def _apply_extra(self, k, a):
        P = self._p
        if k == "falloc":
            fd = os.open(P(a[0]), os.O_WRONLY | os.O_NONBLOCK)
            try:
                if _libc.fallocate(fd, FALLOC[a[1]], ctypes.c_long(a[2]), ctypes.c_long(a[3])) != 0:
                    e = ctypes.get_errno()
                    raise OSError(e, os.strerror(e))
            finally:
                os.close(fd)
        elif k == "copy_range":
            src = os.open(P(a[0]), os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
            try:
                dst = os.open(P(a[1]), os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW,
                              0o644)
                try:
                    return os.copy_file_range(src, dst, a[4], a[2], a[3])
                finally:
                    os.close(dst)
            finally:
                os.close(src)
        elif k == "tmpfile":
            fd = os.open(P(a[0]) if a[0] else self.root, os.O_TMPFILE | os.O_WRONLY, 0o640)
            try:
                self._write_all(fd, data(a[3], a[2]), 0)
                if _libc.linkat(AT_FDCWD, b"/proc/self/fd/%d" % fd, AT_FDCWD,
                                os.fsencode(P(a[1])), 0x400) != 0:   # AT_SYMLINK_FOLLOW
                    e = ctypes.get_errno()
                    raise OSError(e, os.strerror(e))
            finally:
                os.close(fd)
        elif k == "mmap_write":
            st = os.lstat(P(a[0]))
            if not stat.S_ISREG(st.st_mode):
                return stat.filemode(st.st_mode)[0]
            fd = os.open(P(a[0]), os.O_RDWR | os.O_NONBLOCK | os.O_NOFOLLOW)
            try:
                size = os.fstat(fd).st_size
                if size == 0:
                    return "empty"
                off = a[1] % size
                buf = data(a[3], min(a[2], size - off))
                with mmap.mmap(fd, size) as m:
                    m[off:off + len(buf)] = buf
                    m.flush()
            finally:
                os.close(fd)
        elif k == "fd_truncate":
            if a[0] not in self.fds:
                return "noslot"
            os.ftruncate(self.fds[a[0]], a[1])
        elif k == "link_rename":
            # POSIX: renaming a name onto another name of the same inode
            # does nothing; both names stay. (The second name is made
            # first unless it exists: it may be a link of the same inode
            # from an earlier op, or another entry, replaced then.)
            try:
                os.link(P(a[0]), P(a[1]), follow_symlinks=False)
            except FileExistsError:
                pass
            os.rename(P(a[0]), P(a[1]))
        elif k == "setcap":
            if a[1] == "set":
                os.setxattr(P(a[0]), "security.capability", CAPS, follow_symlinks=False)
            else:
                os.removexattr(P(a[0]), "security.capability", follow_symlinks=False)
        elif k == "setacl":
            name = "system.posix_acl_" + a[1]
            if a[2] < 0:
                os.removexattr(P(a[0]), name, follow_symlinks=False)
            else:
                os.setxattr(P(a[0]), name, _acl(a[2]), follow_symlinks=False)
        elif k == "utimens":
            ts = (_Timespec * 2)(*[_timespec(v) for v in (a[1], a[2])])
            if _libc.utimensat(AT_FDCWD, os.fsencode(P(a[0])), ts, 0x100) != 0:
                e = ctypes.get_errno()          # AT_SYMLINK_NOFOLLOW
                raise OSError(e, os.strerror(e))
        elif k == "sgid_chmod":
            # The owner, not in the file's group, asks for set-group-ID:
            # the kernel drops the bit (no error).
            st = os.lstat(P(a[0]))
            if stat.S_ISLNK(st.st_mode):
                return "l"
            os.chown(P(a[0]), USER[0], USER_GROUP, follow_symlinks=False)
            return _as_user(lambda: os.chmod(P(a[0]), a[1]))
        elif k == "setid_write":
            # Another user writes a set-id file: the kernel drops the bits.
            st = os.lstat(P(a[0]))
            if not stat.S_ISREG(st.st_mode):
                return stat.filemode(st.st_mode)[0]
            os.chmod(P(a[0]), a[1])

            def write():
                fd = os.open(P(a[0]), os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
                try:
                    self._write_all(fd, data(a[4], a[3]), a[2])
                finally:
                    os.close(fd)
            return _as_user(write)
        elif k == "chgrp_as":
            # The owner moves a set-id file from a group it is not in to
            # its own group: set-user-ID goes, set-group-ID goes (its old
            # group is not the caller's).
            st = os.lstat(P(a[0]))
            if stat.S_ISLNK(st.st_mode):
                return "l"
            os.chown(P(a[0]), USER[0], USER_GROUP, follow_symlinks=False)
            os.chmod(P(a[0]), a[1])
            return _as_user(lambda: os.chown(P(a[0]), -1, USER[1], follow_symlinks=False))
        elif k == "unlink_slot":
            if a[0] not in self.fds:
                return "noslot"
            os.unlink(P(self.fd_paths[a[0]]))
        else:
            raise ValueError("unknown op %r" % ([k] + list(a),))
        return None


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _timespec(v):
    if v == "now":
        return _Timespec(0, (1 << 30) - 1)      # UTIME_NOW
    if v == "omit":
        return _Timespec(0, (1 << 30) - 2)      # UTIME_OMIT
    return _Timespec(v // 1_000_000_000, v % 1_000_000_000)


def _as_user(fn):
    """Runs fn in a child process as USER (no supplementary groups); its
    outcome: None, or the errno name it failed with."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.setgroups([])
            os.setresgid(USER[1], USER[1], USER[1])
            os.setresuid(USER[0], USER[0], USER[0])
            fn()
        except OSError as e:
            code = e.errno or 255
        except BaseException:
            import traceback
            traceback.print_exc()       # a bug of the op itself
            code = 255
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        return None
    if code == 255:
        raise OSError(errno.EIO, "the unprivileged child failed")
    raise OSError(code, os.strerror(code))
