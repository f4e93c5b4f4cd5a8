#!/usr/bin/env python3
"""Namespace load for e2e_fs_nsload: WORKERS processes at once, each making a
nested tree (DIRS x DIRS directories, FILES files in each) of written
files, hard links and symlinks under ROOT, while a thread samples the
daemon's open fds (/proc/PID/fd). Every operation is checked; every wait
has a deadline. Prints "peak daemon fds: N", "errors: N", the first errors
and "hang" if a worker missed the deadline, and exits 0 only if there was
neither an error nor a hang.

usage: nsload.py ROOT DAEMON_PID WORKERS DIRS FILES DEADLINE_S
       nsload.py --worker ROOT K DIRS FILES
"""
import errno
import os
import subprocess
import sys
import threading
import time


def worker(root, k, dirs, files):
    bad = []

    def attempt(what, fn):
        try:
            fn()
        except OSError as e:
            bad.append("%s: %s" % (what, e))

    base = os.path.join(root, "w%d" % k)
    attempt("mkdir " + base, lambda: os.mkdir(base))
    for a in range(dirs):
        top = os.path.join(base, "a%02d" % a)
        attempt("mkdir " + top, lambda: os.mkdir(top))
        for b in range(dirs):
            d = os.path.join(top, "b%02d" % b)
            attempt("mkdir " + d, lambda: os.mkdir(d))
            for n in range(files):
                p = os.path.join(d, "f%03d" % n)

                def create(p=p):
                    with open(p, "wb") as f:
                        f.write(p.encode())
                attempt("create " + p, create)
                if n % 2 == 0:
                    attempt("link " + p, lambda p=p: os.link(p, p + ".l"))
                if n % 3 == 0:
                    attempt("symlink " + p,
                            lambda p=p: os.symlink(os.path.basename(p), p + ".s"))
                if n % 5 == 0:
                    attempt("chmod " + p, lambda p=p: os.chmod(p, 0o640))
                    attempt("setxattr " + p,
                            lambda p=p: os.setxattr(p, "user.k", b"v"))
    # everything reads back
    for a in range(dirs):
        for b in range(dirs):
            d = os.path.join(base, "a%02d" % a, "b%02d" % b)
            for n in range(files):
                p = os.path.join(d, "f%03d" % n)

                def check(p=p, n=n):
                    with open(p, "rb") as f:
                        if f.read() != p.encode():
                            bad.append("content of " + p)
                    if n % 3 == 0 and os.readlink(p + ".s") != os.path.basename(p):
                        bad.append("target of " + p + ".s")
                    if n % 2 == 0 and os.lstat(p + ".l").st_ino != os.lstat(p).st_ino:
                        bad.append("link group of " + p)
                attempt("check " + p, check)
    for b in bad:
        print(b)
    return 1 if bad else 0


def main():
    if sys.argv[1] == "--worker":
        root, k, dirs, files = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
        sys.exit(worker(root, k, dirs, files))
    root, pid = sys.argv[1], sys.argv[2]
    workers, dirs, files, deadline = (int(x) for x in sys.argv[3:7])
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            try:
                peak[0] = max(peak[0], len(os.listdir("/proc/%s/fd" % pid)))
            except OSError:
                pass
            done.wait(0.01)
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    start = time.monotonic()
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", root, str(k),
                               str(dirs), str(files)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for k in range(workers)]
    errors, hang = [], False
    for p in procs:
        left = max(0.1, deadline - (time.monotonic() - start))
        try:
            out, _ = p.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            hang = True
            continue
        errors += [l for l in out.decode(errors="replace").splitlines() if l]
        if p.returncode != 0 and not out:
            errors.append("worker exited %d" % p.returncode)
    elapsed = time.monotonic() - start
    done.set()
    t.join()
    emfile = [e for e in errors if os.strerror(errno.EMFILE) in e or
              os.strerror(errno.ENFILE) in e]
    print("elapsed: %.1f s" % elapsed)
    print("peak daemon fds: %d" % peak[0])
    print("errors: %d" % len(errors))
    print("emfile: %d" % len(emfile))
    for e in errors[:10]:
        print("  " + e)
    if hang:
        # The workers are stuck in the mount: the caller aborts the
        # connection, which frees them; they are not waited for here.
        print("hang")
    sys.exit(1 if errors or hang else 0)


main()
