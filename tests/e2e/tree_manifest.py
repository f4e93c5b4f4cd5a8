#!/usr/bin/env python3
"""Prints a manifest of a directory tree for replication tests: one line per
entry with type, mode, owner, size, content hash (files), target (symlinks),
user xattrs, mtime (regular files) and hard-link groups (an entry that shares
an inode with an earlier one names it). Two trees replicate each other iff
their manifests are equal. Directory and symlink mtimes are left out: the
peer creates them when it applies, and twinfs does not replicate them.
With --no-mtime, file mtimes are left out too (for comparing a mount, whose
kernel writeback cache keeps its own mtimes, with a store).
Usage: tree_manifest.py [--no-mtime] DIR"""
import hashlib
import os
import stat
import sys


def xattrs(path):
    try:
        names = sorted(n for n in os.listxattr(path, follow_symlinks=False)
                       if n.startswith("user."))
    except OSError:
        return ""
    out = []
    for n in names:
        try:
            v = os.getxattr(path, n, follow_symlinks=False)
        except OSError:
            v = b"?"
        out.append("%s=%s" % (n, v.hex()))
    return ",".join(out)


def main(root, mtimes=True):
    seen = {}
    lines = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            mode = "%04o" % stat.S_IMODE(st.st_mode)
            own = "%d:%d" % (st.st_uid, st.st_gid)
            xa = xattrs(p)
            if stat.S_ISREG(st.st_mode):
                key = (st.st_dev, st.st_ino)
                if st.st_nlink > 1 and key in seen:
                    lines.append("h %s -> %s" % (rel, seen[key]))
                    continue
                seen[key] = rel
                h = hashlib.sha256()
                with open(p, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
                lines.append("f %s %s %s size=%d mtime=%s nlink=%d %s [%s]" % (
                    rel, mode, own, st.st_size,
                    st.st_mtime_ns if mtimes else "-", st.st_nlink,
                    h.hexdigest()[:32], xa))
            elif stat.S_ISDIR(st.st_mode):
                lines.append("d %s %s %s [%s]" % (rel, mode, own, xa))
            elif stat.S_ISLNK(st.st_mode):
                lines.append("l %s %s -> %s" % (rel, own, os.readlink(p)))
            else:
                lines.append("o %s %06o %s" % (rel, st.st_mode, own))
    for l in lines:
        print(l)


if __name__ == "__main__":
    args = sys.argv[1:]
    mt = "--no-mtime" not in args
    args = [a for a in args if a != "--no-mtime"]
    if len(args) != 1:
        sys.exit(__doc__)
    main(args[0], mt)
