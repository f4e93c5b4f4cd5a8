#!/usr/bin/env python3
"""Randomized test of the split brain's stream and `twinfs resolve`
(docs/protocol.md, "Generations" and "Split brain"). Owns the harness: per
seed, from scratch, two nodes in network namespaces this process creates
(daemons run under `nsenter --net`, so their FUSE mounts stay visible):
  1. A primary (mount), B secondary (serve): a random base tree written on
     A (difftest_ops.py's classic ops: files, folders, symlinks, hard
     links, FIFOs, devices, xattrs, modes, owners, times), synced;
  2. B's serve stops; random ops on A's mount; B promoted and mounted,
     random ops on B's mount; A unmounted, demoted (its store snapshotted)
     and served; B's mount meets it;
  3. the split brain on both nodes with the same diverged list; more
     random ops on B's mount, and on some seeds A's serve killed (SIGKILL)
     and served again in the middle of them;
  4. before resolve:
       a0  A's store after demote equals a plain-folder replay of the base
           and A's ops (the setup itself; no mtimes);
       a   B's store equals a plain-folder replay of the base and B's ops
           (nothing of A's reached B; no mtimes), and every op returned on
           B's mount what it returns on the plain folder;
       b   every path A changed (STATE/tail after demote) and listed is as
           A left it (the snapshot), and so is everything below one that
           is not a folder;
       c   A's and B's stores differ only at listed paths and below listed
           paths that are not folders on both nodes or whose move A held
           back (status "whole"; another listed folder holds only itself:
           B's other changes reached A), polled until true
           or the timeout (before it, the stream may still be running);
  5. `resolve --keep local|peer|both` on A or B, then `sync` on B:
       resolve, sync  exit 0;
       equal          treecmp of both stores, mtimes included;
       versions       every regular file content either store held just
                      before the resolve is in the final store or in
                      STATE/conflicts/ of either node (a --keep both
                      NAME.conflict-* file is in the store);
       over           neither node says split_brain any more.
If every op of A's while apart failed or was skipped, A changed nothing and is behind,
not split: check behind is no split brain on either node, and after
`sync` on B both stores equal (treecmp), in place of 3-5.
Check b-dirmtime is b for a held folder's mtime alone (the stream's
changes of the entries in it move it), reported apart from b.
A failure prints the seed, the check, its lines, every op list and the
tail of both daemons' logs; its folder is kept (--keep, or a temp dir).

Usage: splitfuzz.py --twinfs BIN [--seed N] [--seeds M] [--ops K]
        [--restart auto|always|never] [--keep DIR] [--case FILE]...
        [--stream-timeout S] [--resolve-timeout S] [--seed-timeout S]
--case FILE runs the op lists and choices of FILE (JSON, the keys of
gen_seed: base, a_apart, b_apart, b_split, restart, restart_at, keep,
on) before the seeds: tests/e2e/splitfuzz_cases/ holds the regressions.
Exit: 0 every seed passed, 1 a check failed, 2 harness error (a daemon
that did not come up, a wait that timed out: also printed with the seed).
"""
import argparse
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import difftest_ops as ops_mod  # noqa: E402
import harness  # noqa: E402
import treecmp  # noqa: E402
from harness import HarnessError, is_mounted, run, wait_for  # noqa: E402

PORT = 7070
KEEPS = ["local", "peer", "both"]
# difftest_ops' classic op kinds; fd slots are closed at the end of each
# phase (a mount with open files cannot unmount).
KINDS = [k for w, k in ops_mod.CLASSIC for _ in range(w)]
# The base tree always has one of each of these (besides what chance adds).
BASE_KINDS = ["create", "create", "symlink", "link", "mkfifo", "setxattr", "chmod",
              "chown", "utime", "mknod"]


_live = harness.live


class Net:
    """Two network namespaces joined by a veth pair (failover_lib.sh)."""

    def __init__(self):
        pid = os.getpid()
        self.ns = {"A": "twsfa%d" % pid, "B": "twsfb%d" % pid}
        self.ip = {"A": "10.233.%d.1" % (pid % 250), "B": "10.233.%d.2" % (pid % 250)}
        self.made = []
        _live.append(self)
        for n in "AB":
            run(["ip", "netns", "add", self.ns[n]])
            self.made.append(self.ns[n])
        va, vb = "sfa%d" % pid, "sfb%d" % pid
        run(["ip", "link", "add", va, "netns", self.ns["A"], "type", "veth", "peer",
             "name", vb, "netns", self.ns["B"]])
        for n, v in (("A", va), ("B", vb)):
            run(["ip", "-n", self.ns[n], "addr", "add", self.ip[n] + "/30", "dev", v])
            run(["ip", "-n", self.ns[n], "link", "set", v, "up"])
            run(["ip", "-n", self.ns[n], "link", "set", "lo", "up"])

    def enter(self, n):
        return ["nsenter", "--net=/run/netns/" + self.ns[n]]

    def close(self):
        if self in _live:
            _live.remove(self)
        for ns in self.made:
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
        self.made = []


class Node:
    """One node's store, state, mountpoint and daemon (serve or mount)."""

    def __init__(self, name, base, net, twinfs):
        self.name, self.net, self.bin = name, net, twinfs
        d = os.path.join(base, name)
        self.store, self.state, self.mnt = (os.path.join(d, x) for x in ("store", "state", "mnt"))
        for x in (self.store, self.state, self.mnt):
            os.makedirs(x)
        os.chmod(self.state, 0o700)
        self.logpath = os.path.join(base, name + ".log")
        self.log = open(self.logpath, "ab")
        self.proc = None
        self.kind = None
        self.fuse_conn = None
        _live.append(self)

    def other_ip(self):
        return self.net.ip["B" if self.name == "A" else "A"]

    def status(self):
        try:
            r = subprocess.run([self.bin, "status", "--state", self.state, "--json"],
                               capture_output=True, text=True, timeout=10)
            return json.loads(r.stdout) if r.returncode == 0 else {}
        except (subprocess.TimeoutExpired, ValueError):
            return {}

    def _up(self):
        return self.proc.poll() is None and bool(self.status().get("ok"))

    def serve(self):
        self.logmark("serve")
        self.proc = subprocess.Popen(
            self.net.enter(self.name) + [self.bin, "serve", "--store", self.store, "--state",
                                         self.state, "--listen", "%s:%d" % (self.net.ip[self.name], PORT),
                                         "--insecure", "-f"],
            stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        self.kind = "serve"
        wait_for("%s's serve" % self.name, self._up, 15)

    def mount(self):
        self.logmark("mount")
        self.proc = subprocess.Popen(
            self.net.enter(self.name) + [self.bin, "mount", "--store", self.store, "--state",
                                         self.state, "--mountpoint", self.mnt, "--peer",
                                         "%s:%d" % (self.other_ip(), PORT), "--insecure", "-f"],
            stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        self.kind = "mount"
        wait_for("%s's mount" % self.name, lambda: is_mounted(self.mnt) and self._up(), 15)
        self.fuse_conn = os.minor(os.stat(self.mnt).st_dev)

    def stop(self):
        """Ends the daemon: a mount by unmounting, a serve by SIGTERM."""
        if self.proc is None:
            return
        self.logmark("stop")
        if self.kind == "mount":
            end = time.monotonic() + 15
            while is_mounted(self.mnt):
                if subprocess.run(["fusermount3", "-u", self.mnt],
                                  stderr=subprocess.DEVNULL).returncode == 0:
                    break
                if time.monotonic() > end:
                    subprocess.run(["umount", "-l", self.mnt], stderr=subprocess.DEVNULL)
                    break
                time.sleep(0.1)
        else:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            raise HarnessError("%s's %s did not end within 30 s of being asked"
                               % (self.name, self.kind))
        finally:
            self.proc = None

    def kill(self):
        if self.proc is None:
            return
        self.logmark("SIGKILL")
        self.proc.kill()
        self.proc.wait(timeout=15)
        self.proc = None
        if self.kind == "mount" and is_mounted(self.mnt):
            subprocess.run(["umount", "-l", self.mnt], stderr=subprocess.DEVNULL)

    def abort(self):
        """The watchdog's: a hung mount would block a syscall for ever."""
        if self.fuse_conn is not None and self.kind == "mount":
            try:
                with open("/sys/fs/fuse/connections/%d/abort" % self.fuse_conn, "w") as f:
                    f.write("1")
            except OSError:
                pass
        if self.proc is not None:
            try:
                self.proc.kill()
            except OSError:
                pass

    def cli(self, *args, timeout=90):
        return subprocess.run([self.bin] + list(args) + ["--state", self.state],
                              capture_output=True, text=True, timeout=timeout)

    def logmark(self, what):
        self.log.write(("==== splitfuzz: %s %s\n" % (self.name, what)).encode())
        self.log.flush()

    def log_tail(self, n):
        self.log.flush()
        with open(self.logpath, "rb") as f:
            lines = f.read().decode(errors="replace").splitlines()
        return [l[:300] for l in lines[-n:]]

    def close(self):
        if self in _live:
            _live.remove(self)
        try:
            self.stop()
        except Exception:
            self.kill()
        if is_mounted(self.mnt):
            subprocess.run(["umount", "-l", self.mnt], stderr=subprocess.DEVNULL)
        self.log.close()


def gen_ops(r, n):
    return [ops_mod._op(r, r.choice(KINDS)) for _ in range(n)]


def gen_seed(seed, nops):
    """The op lists of a seed, and its choices."""
    r = random.Random(seed)
    base = [["mkdir", d] for d in ops_mod.DIRS[1:]]
    # a dense tree first, so that most later ops find what they name
    for d in ops_mod.DIRS:
        for n in r.sample(ops_mod.LEAVES, 4):
            p = d + "/" + n if d else n
            base.append(["create", p, r.choice([0, 1, 100, 4096, 70000]), r.randrange(1 << 30)])
    base += gen_ops(r, 3 * nops)
    base += [ops_mod._op(r, k) for k in BASE_KINDS]
    return {"base": base, "a_apart": gen_ops(r, nops), "b_apart": gen_ops(r, nops),
            "b_split": gen_ops(r, nops), "restart_at": r.randrange(nops + 1),
            "restart": r.random() < 0.5, "keep": r.choice(KEEPS), "on": r.choice("AB")}


def apply_ops(root, seq):
    ap = ops_mod.Applier(root)
    try:
        return [ap.apply(op) for op in seq]
    finally:
        ap.close_all()


def read_tail(state):
    """A demoted primary's STATE/tail: the paths it changed after the last
    ack (docs/protocol.md, "Generations": "twinfs tail 1 FOLDER\\n", then
    NUL-terminated paths; "/PATH" marks PATH as renamed, not a path)."""
    try:
        with open(os.path.join(state, "tail"), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return set()
    return {p.decode() for p in data.partition(b"\n")[2].split(b"\0")
            if p and not p.startswith(b"/")}


def changed(outcome):
    """An op's outcome (Applier.apply) says it changed the tree: it did not
    fail, and it was not skipped (no fd in the slot, an empty file to map,
    or a file type the op leaves alone: difftest_ops.py)."""
    if not outcome.startswith("ok"):
        return False
    why = outcome[3:]
    return why not in ("noslot", "empty") and len(why) != 1


def under(path, top):
    return path == top or path.startswith(top + "/")


def diverged(node):
    st = node.status()
    return st.get("split_brain"), sorted(e["path"] for e in st.get("diverged") or [])


def links_ok(ea, eb, allowed):
    """A hard-link group differs only by paths ALLOWED(path) accepts."""
    ga = set(str(ea.get("links", "")).split())
    gb = set(str(eb.get("links", "")).split())
    return all(allowed(p) for p in ga ^ gb)


def content_hashes(root, tag=""):
    """{sha256: [TAG + path, ...]} of every regular file below root."""
    out = {}
    for d, dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            try:
                if not stat.S_ISREG(os.lstat(p).st_mode):
                    continue
                h = ops_mod.file_sha256(p)
            except OSError:
                continue
            out.setdefault(h, []).append(tag + os.path.relpath(p, root))
    return out


class Seed:
    def __init__(self, seed, args, base):
        self.seed, self.args, self.base = seed, args, base
        self.g = gen_seed(seed, args.ops)
        self.name = "seed %d" % seed
        self.fails = {}
        self.notes = []
        self.out = {}

    def fail(self, check, lines):
        self.fails.setdefault(check, []).extend(lines)

    def run(self):
        net = Net()
        A = Node("A", self.base, net, self.args.twinfs)
        B = Node("B", self.base, net, self.args.twinfs)
        self.A, self.B = A, B
        dog = threading.Timer(self.args.seed_timeout, lambda: (A.abort(), B.abort()))
        dog.daemon = True
        dog.start()
        try:
            self._run(A, B)
        except HarnessError as e:
            self.fail("harness", [str(e)])
        finally:
            dog.cancel()
            for x in (B, A, net):
                try:
                    x.close()
                except Exception as e:
                    self.fail("harness", ["cleanup: %s" % e])

    def _run(self, A, B):
        g = self.g
        # 1. the base, synced
        B.serve()
        A.mount()
        wait_for("A to connect", lambda: A.status().get("connected"), 15)
        self.out["base"] = apply_ops(A.mnt, g["base"])
        r = A.cli("sync", "--timeout", "60")
        if r.returncode != 0:
            raise HarnessError("base sync: exit %d: %s" % (r.returncode, r.stdout + r.stderr))
        # A's list of what it changed apart also names what changed within
        # the journal's mark slack (1 s) before a folder's first change
        # (failover_split_brain.sh): the base is made older than that.
        time.sleep(1.2)
        # 2. apart
        B.stop()
        wait_for("A to notice B gone", lambda: A.status().get("connected") is False, 15)
        self.out["a_apart"] = apply_ops(A.mnt, g["a_apart"])
        r = B.cli("promote")
        if r.returncode != 0:
            raise HarnessError("promote B: exit %d: %s" % (r.returncode, r.stdout + r.stderr))
        B.mount()
        self.out["b_apart"] = apply_ops(B.mnt, g["b_apart"])
        A.stop()
        r = A.cli("demote")
        if r.returncode != 0:
            raise HarnessError("demote A: exit %d: %s" % (r.returncode, r.stdout + r.stderr))
        snapA = treecmp.scan(A.store)
        tailA = read_tail(A.state)
        self.check_replay("a0", A.store, [g["base"], g["a_apart"]], None)
        A.serve()
        if not any(changed(x) for x in self.out["a_apart"]):
            self.check_behind(A, B)
            return
        # 3. the split brain, B's ops during it (A's serve restarted)
        self.wait_split(A, B)
        ops = g["b_split"]
        k = g["restart_at"] if g["restart"] else len(ops)
        self.out["b_split"] = apply_ops(B.mnt, ops[:k])
        if g["restart"]:
            A.kill()
            A.serve()
        self.out["b_split"] += apply_ops(B.mnt, ops[k:])
        if g["restart"]:
            self.wait_split(A, B)
        # 4. before resolve (B's fds were closed at the restart, as
        # apply_ops closes them after each part)
        self.check_replay("a", B.store, [g["base"], g["b_apart"], ops[:k], ops[k:]],
                          self.out["base"] + self.out["b_apart"] + self.out["b_split"])
        listed = self.check_streamed(A, B)
        self.check_held(A, snapA, tailA, listed)
        # 5. resolve, sync
        scanned = {"A": treecmp.scan(A.store), "B": treecmp.scan(B.store)}
        before = {}
        for n in (A, B):
            for h, ps in content_hashes(n.store, tag=n.name + ":").items():
                before.setdefault(h, []).extend(ps)
        node = A if g["on"] == "A" else B
        r = node.cli("resolve", "--keep", g["keep"], "--timeout", str(self.args.resolve_timeout),
                     timeout=self.args.resolve_timeout + 60)
        if r.returncode != 0:
            self.fail("resolve", ["resolve --keep %s on %s: exit %d: %s" % (
                g["keep"], node.name, r.returncode, (r.stdout + r.stderr).strip())])
            return
        r = B.cli("sync", "--timeout", "60", timeout=120)
        if r.returncode != 0:
            self.fail("sync", ["sync on B after resolve: exit %d: %s" % (
                r.returncode, (r.stdout + r.stderr).strip())])
        d = treecmp.compare(A.store, B.store)
        if d:
            self.fail("equal", d[:60])
        after = set(content_hashes(A.store)) | set(content_hashes(B.store))
        for n in (A, B):
            c = os.path.join(n.state, "conflicts")
            if os.path.isdir(c):
                after |= set(content_hashes(c))
        lost = sorted(" ".join(ps) for h, ps in before.items() if h not in after)
        if lost:
            def where(p):       # what the other node held at that path
                n, rel = p.split(":", 1)
                other = B if n == "A" else A
                e = scanned[other.name].get(rel)
                return "%s; %s held %s there" % (
                    "listed" if any(under(rel, x) for x in listed) else "not listed",
                    other.name, e and (e.get("content") or e.get("type")))
            self.fail("versions", ["the content of %s (before the resolve: %s) is in neither "
                                   "store nor any conflicts folder after it"
                                   % (p, where(p.split()[0])) for p in lost]
                      + ["listed before the resolve: %s" % " ".join(sorted(listed))])
        for n in (A, B):
            if n.status().get("split_brain"):
                self.fail("over", ["%s still says split_brain after resolve and sync" % n.name])

    def check_behind(self, A, B):
        """Every op of A's while apart failed or was skipped: A changed nothing, so it is
        behind B's generation, not split from it. B resyncs it: no split
        brain on either node, then both stores equal (check behind)."""
        self.notes.append("A changed nothing while apart: behind, not split brain")
        wait_for("B to connect to A", lambda: B.status().get("connected"), 30)
        r = B.cli("sync", "--timeout", "60", timeout=120)
        if r.returncode != 0:
            self.fail("behind", ["sync on B: exit %d: %s" % (
                r.returncode, (r.stdout + r.stderr).strip())])
        for n in (A, B):
            if n.status().get("split_brain"):
                self.fail("behind", ["%s says split_brain although A changed nothing" % n.name])
        d = treecmp.compare(A.store, B.store)
        if d:
            self.fail("behind", d[:60])

    def wait_split(self, A, B):
        def same():
            sa, la = diverged(A)
            sb, lb = diverged(B)
            return sa is True and sb is True and la == lb
        wait_for("the split brain on both nodes with equal lists", same, 30)

    def check_replay(self, name, store, phases, got):
        """PHASES (op lists, fds closed after each, as on the mount) on a
        plain folder: the same outcomes as GOT, the same tree as STORE."""
        plain = os.path.join(self.base, "plain-" + name)
        os.makedirs(plain)
        seq = [op for ph in phases for op in ph]
        want = [o for ph in phases for o in apply_ops(plain, ph)]
        if got is not None:
            d = [i for i in range(len(seq)) if want[i] != got[i]]
            if d:
                self.fail(name, ["op %d %s: %s on the mount vs %s on a plain folder"
                                 % (i, json.dumps(seq[i]), got[i], want[i]) for i in d])
        d = treecmp.compare(store, plain, mtime=False)
        if d:
            self.fail(name, ["treecmp %s store vs plain replay: %s" % (name, l) for l in d])

    def check_streamed(self, A, B):
        """c: A and B differ only at or below listed paths (polled: the
        stream has no end to wait for), and both lists are the same."""
        state = {}

        def ok():
            sa, la = diverged(A)
            sb, lb = diverged(B)
            bad = []
            if la != lb:
                bad.append("lists differ: A=%s B=%s" % (la, lb))
            listed = set(la) | set(lb)
            state["listed"] = listed

            sa_, sb_ = treecmp.scan(A.store), treecmp.scan(B.store)
            # a listed folder holds only itself (hold.h): what is below it
            # takes B's changes unless listed itself; below a listed path
            # that is not a folder on one of the nodes, B has nothing to
            # send into A's folder, or A's is not a folder
            # (or that A lists as a folder whose move it held back: it
            # stands for everything in it)
            sub = [x for x in listed if sa_.get(x, {}).get("type") != "dir" or
                   sb_.get(x, {}).get("type") != "dir"]
            sub += [e["path"] for e in A.status().get("diverged") or [] if e.get("whole")]

            def cov(p):
                return p in listed or any(under(p, x) for x in sub)
            for p in sorted(set(sa_) | set(sb_)):
                if cov(p):
                    continue
                ea, eb = sa_.get(p), sb_.get(p)
                if ea is None or eb is None:
                    bad.append("%s: exists: %s vs %s" % (p, ea and ea.get("type"),
                                                        eb and eb.get("type")))
                    continue
                for f in sorted(set(ea) | set(eb)):
                    if ea.get(f) == eb.get(f):
                        continue
                    if f == "links" and links_ok(ea, eb, cov):
                        continue
                    if p == "." and f == "mtime_ns":
                        # the root is no path of either node's list: its
                        # mtime follows what each did at the top, and the
                        # resolve settles it ("equal" compares it)
                        continue
                    bad.append("%s: %s: %s vs %s" % (p, f, treecmp._show(ea.get(f)),
                                                   treecmp._show(eb.get(f))))
            state["bad"] = bad
            return not bad
        try:
            wait_for("A to hold B's changes of every unlisted path", ok, self.args.stream_timeout)
        except HarnessError as e:
            self.fail("c", [str(e), "listed: %s" % " ".join(sorted(state.get("listed", ())))]
                      + ["A vs B: " + l for l in state.get("bad", [])[:60]])
        return state.get("listed", set())

    def check_held(self, A, snap, tail, listed):
        """b: the paths A changed (its tail) and listed as A left them (the
        snapshot after demote), and everything below one that is not a
        folder. (A
        path that joined the list later, a frame of B's held back, took
        B's earlier changes before: nothing of A's to compare it with.)"""
        now = treecmp.scan(A.store)
        # a path of the tail whose version A and B held alike is no
        # conflict (seed 48: a utime to the time it had): the stream may
        # change it
        tail = set(tail) & set(listed)
        sub = [p for p in tail if p not in snap or snap[p].get("type") != "dir"]

        def own(p):
            return p in tail or any(under(p, x) for x in sub)

        def free(p):        # a path the stream may change
            return not own(p) and p not in listed and \
                not any(under(p, x) for x in listed if snap.get(x, {}).get("type") != "dir")
        for p in sorted(set(snap) | set(now)):
            if not own(p):
                continue
            es, en = snap.get(p), now.get(p)
            if es is None or en is None:
                if es != en:
                    self.fail("b", ["%s: exists: %s after demote vs %s now" % (
                        p, es and es.get("type"), en and en.get("type"))])
                continue
            for f in sorted(set(es) | set(en)):
                if es.get(f) == en.get(f):
                    continue
                if f == "links" and links_ok(es, en, free):
                    continue
                # a held folder's mtime, moved by the entries the stream
                # changed in it: a class of its own (not a lost version)
                c = "b-dirmtime" if f == "mtime_ns" and es.get("type") == "dir" else "b"
                self.fail(c, ["%s: %s: %s after demote vs %s now" % (
                    p, f, treecmp._show(es.get(f)), treecmp._show(en.get(f)))])

    def report(self):
        g = self.g
        print("# %s: FAIL %s (restart=%s at %d, resolve --keep %s on %s)" % (
            self.name, " ".join(sorted(self.fails)), g["restart"], g["restart_at"],
            g["keep"], g["on"]))
        for k in sorted(self.fails):
            print("== %s" % k)
            for l in self.fails[k][:80]:
                print("  " + l)
        for ph in ("base", "a_apart", "b_apart", "b_split"):
            print("== ops %s (op, outcome)" % ph)
            outs = self.out.get(ph, [])
            for i, op in enumerate(g[ph]):
                print("  %s  %s" % (json.dumps(op), outs[i] if i < len(outs) else "-"))
        for n in ("A", "B"):
            print("== %s.log (tail)" % n)
            try:
                with open(os.path.join(self.base, n + ".log"), "rb") as f:
                    lines = f.read().decode(errors="replace").splitlines()
            except OSError:
                lines = []
            for l in lines[-40:]:
                print("  " + l[:300])
        print("== folder: %s" % self.base)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--twinfs", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--ops", type=int, default=12, help="ops per phase (the base: 3x)")
    ap.add_argument("--restart", choices=["auto", "always", "never"], default="auto")
    ap.add_argument("--keep", help="keep each seed's folder here (failed ones always kept)")
    ap.add_argument("--stream-timeout", type=float, default=30)
    ap.add_argument("--resolve-timeout", type=int, default=60)
    ap.add_argument("--seed-timeout", type=float, default=300)
    ap.add_argument("--case", action="append", default=[],
                    help="a JSON file of a seed's op lists and choices (the keys of "
                    "gen_seed; tests/e2e/splitfuzz_cases/), run before the seeds")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("splitfuzz: needs root (network namespaces, mounts)")
        return 77
    signal.signal(signal.SIGTERM, harness.on_signal)
    signal.signal(signal.SIGINT, harness.on_signal)
    root = args.keep or tempfile.mkdtemp(prefix="twinfs-splitfuzz.")
    os.makedirs(root, exist_ok=True)
    failed = errors = 0
    t0 = time.monotonic()
    runs = [(c, None) for c in args.case] + [(None, n) for n in
                                             range(args.seed, args.seed + args.seeds)]
    for case, seed in runs:
        name = os.path.basename(case).rsplit(".", 1)[0] if case else "seed-%d" % seed
        base = os.path.join(root, name)
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(base)
        s = Seed(seed if case is None else 0, args, base)
        if case:
            with open(case) as f:
                s.g = json.load(f)
            s.name = "case " + name
        if args.restart != "auto" and not case:
            s.g["restart"] = args.restart == "always"
        t = time.monotonic()
        s.run()
        if s.fails:
            s.report()
            if list(s.fails) == ["harness"]:
                errors += 1
            else:
                failed += 1
        else:
            if not args.keep:
                shutil.rmtree(base, ignore_errors=True)
            print("# %s: ok (%.1f s, restart=%s, --keep %s on %s)%s" % (
                s.name, time.monotonic() - t, s.g["restart"], s.g["keep"], s.g["on"],
                "".join("; " + x for x in s.notes)), flush=True)
        sys.stdout.flush()
    print("# splitfuzz: %d case(s), %d seed(s) from %d, %d failed, %d harness errors, %.0f s"
          % (len(args.case), args.seeds, args.seed, failed, errors, time.monotonic() - t0))
    if not args.keep and not failed and not errors:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 2 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
