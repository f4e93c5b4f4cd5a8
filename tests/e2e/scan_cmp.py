#!/usr/bin/env python3
"""Compares two directory trees (two stores) completely, for the fidelity
tests: for every entry, the root included, its type, mode, uid, gid, mtime
in ns (every type), every xattr (all namespaces), and for a regular file its
size and content (SHA-256), for a symlink its target, for a device its rdev;
and the hard-link groups (the set of names of each multiply-linked inode).
atime and ctime are the host's own and are not compared.

Prints one line per difference ("only in A: x", "x: mode 0644 != 0600")
and exits 0 iff the trees are equal, 1 if not, 2 on usage errors.

  --ignore-dirsym-mtime   leave directory and symlink mtimes out (and only
                          those): their replication is being fixed apart,
                          and a test checks them as a separate, labelled
                          check
  --only-dirsym-mtime     compare only directory and symlink mtimes
Usage: scan_cmp.py [--ignore-dirsym-mtime|--only-dirsym-mtime] A B"""
import hashlib
import os
import stat
import sys


def xattrs(path):
    try:
        names = sorted(os.listxattr(path, follow_symlinks=False))
    except OSError:
        return {}
    out = {}
    for n in names:
        try:
            out[n] = os.getxattr(path, n, follow_symlinks=False).hex()
        except OSError as e:
            out[n] = "<%s>" % e.strerror
    return out


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def kind(m):
    for test, name in ((stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"),
                       (stat.S_ISLNK, "symlink"), (stat.S_ISFIFO, "fifo"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "chardev"),
                       (stat.S_ISBLK, "blockdev")):
        if test(m):
            return name
    return "?"


def scan(root):
    """{relpath: {field: value}} and {relpath: link group} for ROOT."""
    entries = {}
    inodes = {}
    todo = [""]
    while todo:
        rel = todo.pop()
        p = os.path.join(root, rel) if rel else root
        st = os.lstat(p)
        k = kind(st.st_mode)
        e = {"type": k, "mode": "%04o" % stat.S_IMODE(st.st_mode),
             "uid": st.st_uid, "gid": st.st_gid, "mtime": st.st_mtime_ns,
             "xattrs": xattrs(p)}
        if k == "file":
            e["size"] = st.st_size
            e["content"] = digest(p)
            if st.st_nlink > 1:
                inodes.setdefault((st.st_dev, st.st_ino), []).append(rel)
            e["nlink"] = st.st_nlink
        elif k == "symlink":
            e["target"] = os.readlink(p)
        elif k in ("chardev", "blockdev"):
            e["rdev"] = "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
        elif k == "dir":
            for n in os.listdir(p):
                todo.append(os.path.join(rel, n) if rel else n)
        entries[rel] = e
    groups = {}
    for names in inodes.values():
        g = tuple(sorted(names))
        for n in g:
            groups[n] = g
    return entries, groups


def main(argv):
    mode = "all"
    args = []
    for a in argv:
        if a == "--ignore-dirsym-mtime":
            mode = "no-dirsym-mtime"
        elif a == "--only-dirsym-mtime":
            mode = "dirsym-mtime"
        elif a.startswith("-"):
            print(__doc__, file=sys.stderr)
            return 2
        else:
            args.append(a)
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    (ea, ga), (eb, gb) = scan(args[0]), scan(args[1])
    diffs = []
    for rel in sorted(set(ea) | set(eb)):
        name = "/" + rel
        if rel not in eb:
            if mode != "dirsym-mtime":
                diffs.append("only in A: %s (%s)" % (name, ea[rel]["type"]))
            continue
        if rel not in ea:
            if mode != "dirsym-mtime":
                diffs.append("only in B: %s (%s)" % (name, eb[rel]["type"]))
            continue
        a, b = ea[rel], eb[rel]
        dirsym = a["type"] in ("dir", "symlink") and a["type"] == b["type"]
        for f in sorted(set(a) | set(b)):
            if mode == "dirsym-mtime" and not (f == "mtime" and dirsym):
                continue
            if mode == "no-dirsym-mtime" and f == "mtime" and dirsym:
                continue
            if a.get(f) != b.get(f):
                diffs.append("%s: %s %r != %r" % (name, f, a.get(f), b.get(f)))
        if mode != "dirsym-mtime" and ga.get(rel) != gb.get(rel):
            diffs.append("%s: hard links %r != %r" % (name, ga.get(rel), gb.get(rel)))
    for d in diffs[:40]:
        print(d)
    if len(diffs) > 40:
        print("... %d differences in all" % len(diffs))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
