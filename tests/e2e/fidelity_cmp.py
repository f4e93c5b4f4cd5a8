#!/usr/bin/env python3
"""Complete comparison of two store trees, field for field (project rule #1).

Usage: fidelity_cmp.py DIR_A DIR_B
Exit 0 if equal, 1 with one line per difference (at most 40) if not.

For every entry below each root (the roots' own times included): type,
mode, uid, gid, size, st_mtime_ns (every file type, directories, symlinks,
fifos and devices too), link target, st_rdev, the hard-link group (the
sorted names sharing its inode, for every type), every xattr in every
namespace (read without following symlinks) and, for regular files only,
a content hash. Never opens a fifo, socket or device node.
"""
import hashlib
import os
import stat
import sys


def xattrs(p):
    out = {}
    try:
        names = os.listxattr(p, follow_symlinks=False)
    except OSError:
        return out
    for n in sorted(names):
        try:
            out[n] = os.getxattr(p, n, follow_symlinks=False).hex()
        except OSError as e:
            out[n] = "error:%d" % e.errno
    return out


def digest(p):
    h = hashlib.sha256()
    fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            h.update(b)
    finally:
        os.close(fd)
    return h.hexdigest()


def manifest(root):
    entries = {}
    groups = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, root)
        names = [""] if rel_dir == "." else []
        for name in names + sorted(dirnames + filenames):
            p = os.path.join(dirpath, name) if name else dirpath
            rel = os.path.normpath(os.path.join(rel_dir, name)) if name else rel_dir
            st = os.lstat(p)
            e = {
                "type": stat.S_IFMT(st.st_mode),
                "mode": "%o" % stat.S_IMODE(st.st_mode),
                "uid": st.st_uid,
                "gid": st.st_gid,
                "mtime_ns": st.st_mtime_ns,
                "xattrs": xattrs(p),
            }
            if not stat.S_ISDIR(st.st_mode):
                e["size"] = st.st_size
            if stat.S_ISLNK(st.st_mode):
                e["target"] = os.readlink(p)
            if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                e["rdev"] = "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
            if stat.S_ISREG(st.st_mode):
                e["sha256"] = digest(p)
            if not stat.S_ISDIR(st.st_mode):
                groups.setdefault(st.st_ino, []).append(rel)
                e["_ino"] = st.st_ino
            entries[rel] = e
        # os.walk lists symlinks to directories in dirnames but does not
        # descend (followlinks=False): they were lstat'ed above.
    for e in entries.values():
        ino = e.pop("_ino", None)
        if ino is not None:
            e["links"] = sorted(groups[ino])
    return entries


def main():
    if len(sys.argv) != 3:
        print("usage: fidelity_cmp.py DIR_A DIR_B", file=sys.stderr)
        return 2
    a, b = manifest(sys.argv[1]), manifest(sys.argv[2])
    diffs = []
    for rel in sorted(set(a) | set(b)):
        if rel not in a:
            diffs.append("%s: only in %s" % (rel, sys.argv[2]))
            continue
        if rel not in b:
            diffs.append("%s: only in %s" % (rel, sys.argv[1]))
            continue
        for k in sorted(set(a[rel]) | set(b[rel])):
            va, vb = a[rel].get(k), b[rel].get(k)
            if va != vb:
                diffs.append("%s: %s %r != %r" % (rel, k, va, vb))
    for d in diffs[:40]:
        print(d)
    if len(diffs) > 40:
        print("... %d differences in all" % len(diffs))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
