#!/usr/bin/env python3
"""Complete comparison of two directory trees, for replication tests.

Owns the rule "the peer's store equals the primary's store field for field":
it walks both trees with lstat (never following a symlink, never opening a
FIFO, socket or device) and compares, for the root (as ".": its mode,
owner, mtime and xattrs) and every entry below it:
  type, permission bits (setuid/setgid/sticky included), uid, gid,
  size (regular files and symlinks), mtime in ns (every file type),
  symlink target, rdev major:minor (devices), hard-link group (every
  non-directory: the sorted relative paths that share its inode),
  every xattr in every namespace (names and values), content hash (files).
Directory sizes and link counts are not compared: they follow from the
filesystem's layout and the tree's shape, not from anything replicated.

Usage: treecmp.py [--no-mtime] [--ignore PATH]... LEFT RIGHT
  --no-mtime     leave mtimes out (a mount's kernel cache keeps its own)
  --no-root      leave the roots themselves out (trees that are not
                 replicas of each other as a whole, e.g. a subfolder)
  --ignore PATH  leave out PATH and everything under it (relative to the
                 roots, or an absolute path inside either root)
Exit: 0 the trees are equal; 1 they differ (one "path: field: left vs
right" line per difference, at most --max-lines); 2 usage or walk error.
As a module: compare(left, right, mtime=True, ignore=()) -> [lines].
"""
import hashlib
import os
import stat
import sys

MAX_LINES = 50


def _kind(mode):
    for test, name in ((stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"),
                       (stat.S_ISLNK, "symlink"), (stat.S_ISFIFO, "fifo"),
                       (stat.S_ISCHR, "chardev"), (stat.S_ISBLK, "blockdev"),
                       (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "unknown(%o)" % stat.S_IFMT(mode)


def _xattrs(path):
    # follow_symlinks=False: a symlink's own xattrs (llistxattr), and a
    # FIFO or device is never opened to read them.
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError as e:
        return {"<listxattr error>": e.strerror.encode()}
    out = {}
    for n in sorted(names):
        try:
            out[n] = os.getxattr(path, n, follow_symlinks=False)
        except OSError as e:
            out[n] = ("<getxattr error %s>" % e.strerror).encode()
    return out


def _hash(path, st):
    # O_NOFOLLOW|O_NONBLOCK: if the entry was swapped for a symlink or a
    # FIFO since lstat, this neither follows it nor blocks on it.
    h = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        return "<open error %s>" % e.strerror
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "<not a regular file any more>"
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            h.update(b)
    except OSError as e:
        return "<read error %s>" % e.strerror
    finally:
        os.close(fd)
    return h.hexdigest()[:32]


def scan(root, mtime=True, ignore=(), with_root=True):
    """{relpath: {field: value}} for every entry below root, and for the
    root itself as "." (its mode, owner, mtime and xattrs) unless
    with_root is False."""
    entries = {}
    inodes = {}
    ignore = set(ignore)
    if with_root:
        try:
            st = os.lstat(root)
            e = {"type": _kind(st.st_mode), "mode": "%04o" % stat.S_IMODE(st.st_mode),
                 "owner": "%d:%d" % (st.st_uid, st.st_gid)}
            if mtime:
                e["mtime_ns"] = st.st_mtime_ns
            for n, v in _xattrs(root).items():
                e["xattr " + n] = v
        except OSError as err:
            e = {"lstat": "<error %s>" % err.strerror}
        entries["."] = e

    def walk(dirpath, rel):
        try:
            names = sorted(os.listdir(dirpath))
        except OSError as e:
            entries[rel or "."] = {"listdir": "<error %s>" % e.strerror}
            return
        for name in names:
            r = os.path.join(rel, name) if rel else name
            if r in ignore:
                continue
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
            except OSError as e:
                entries[r] = {"lstat": "<error %s>" % e.strerror}
                continue
            m = st.st_mode
            e = {"type": _kind(m), "mode": "%04o" % stat.S_IMODE(m),
                 "owner": "%d:%d" % (st.st_uid, st.st_gid)}
            if mtime:
                e["mtime_ns"] = st.st_mtime_ns
            if stat.S_ISREG(m) or stat.S_ISLNK(m):
                e["size"] = st.st_size
            if stat.S_ISLNK(m):
                e["target"] = os.readlink(p)
            if stat.S_ISCHR(m) or stat.S_ISBLK(m):
                e["rdev"] = "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
            for n, v in _xattrs(p).items():
                e["xattr " + n] = v
            if stat.S_ISREG(m):
                e["content"] = _hash(p, st)
            entries[r] = e
            if stat.S_ISDIR(m):
                walk(p, r)
            else:
                inodes.setdefault((st.st_dev, st.st_ino), []).append(r)

    walk(root, "")
    # The hard-link group of every non-directory: all paths of its inode.
    for paths in inodes.values():
        group = " ".join(sorted(paths))
        for r in paths:
            entries[r]["links"] = group
    return entries


def _show(v):
    if isinstance(v, bytes):
        try:
            s = v.decode()
            if s.isprintable():
                return repr(s)
        except UnicodeDecodeError:
            pass
        return "0x" + v.hex()
    return str(v)


def _short(path, limit=100):
    # A difference line stays readable for very deep paths: the middle of
    # the path is elided (the path stays unique enough to find it).
    if len(path) <= limit:
        return path
    return "%s...(%d chars)...%s" % (path[:40], len(path) - 80, path[-40:])


def compare(left, right, mtime=True, ignore=(), with_root=True):
    """Differences between the trees, one line each (empty if equal)."""
    def rel_ignores(root):
        out = []
        for i in ignore:
            if os.path.isabs(i):
                ar = os.path.abspath(root)
                ai = os.path.abspath(i)
                if ai.startswith(ar + os.sep):
                    out.append(os.path.relpath(ai, ar))
            else:
                out.append(os.path.normpath(i))
        return out

    ign = rel_ignores(left) + rel_ignores(right)
    a = scan(left, mtime, ign, with_root)
    b = scan(right, mtime, ign, with_root)
    diffs = []
    for r in sorted(set(a) | set(b)):
        sr = _short(r)
        if r not in b:
            diffs.append("%s: exists: %s vs missing" % (sr, a[r].get("type")))
            continue
        if r not in a:
            diffs.append("%s: exists: missing vs %s" % (sr, b[r].get("type")))
            continue
        ea, eb = a[r], b[r]
        if ea.get("type") != eb.get("type"):
            diffs.append("%s: type: %s vs %s" % (sr, ea.get("type"), eb.get("type")))
            continue
        for f in sorted(set(ea) | set(eb)):
            va, vb = ea.get(f, "<none>"), eb.get(f, "<none>")
            if va != vb:
                if f == "mtime_ns":     # which file types diverge matters
                    f = "mtime_ns(%s)" % ea["type"]
                diffs.append("%s: %s: %s vs %s" % (sr, f, _short(_show(va)), _short(_show(vb))))
    return diffs


def main(argv):
    mtime = True
    with_root = True
    ignore = []
    max_lines = MAX_LINES
    args = []
    it = iter(argv)
    for a in it:
        if a == "--no-mtime":
            mtime = False
        elif a == "--ignore":
            ignore.append(next(it, ""))
        elif a == "--no-root":
            with_root = False
        elif a == "--max-lines":
            max_lines = int(next(it, "50"))
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            args.append(a)
    if len(args) != 2 or not all(os.path.isdir(x) for x in args):
        sys.stderr.write(__doc__)
        return 2
    diffs = compare(args[0], args[1], mtime, ignore, with_root)
    if not diffs:
        return 0
    print("treecmp: %s vs %s: %d difference(s)" % (args[0], args[1], len(diffs)))
    for d in diffs[:max_lines]:
        print("  " + d)
    if len(diffs) > max_lines:
        print("  ... and %d more" % (len(diffs) - max_lines))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
