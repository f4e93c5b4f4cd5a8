#!/usr/bin/env python3
"""Randomized differential tester of twinfs replication. Owns the harness:
a seed gives an op sequence (difftest_ops.py); it is applied to plain
directories (control) or through a replicating mount with faults mixed in
(mount), and the result is checked against the project's rules:
  sync     `twinfs sync` exits 0 after the sequence;
  replica  the peer's store equals the primary's store (treecmp, mtimes
           included);
  view     the mount shows what the store holds (treecmp --no-mtime);
  errno    every op returns through the mount what it returns on a plain
           directory (the mount behaves like a local folder);
  local    the mount's tree equals the plain directory's (--no-mtime).
On a failure it prints the seed and the ops, then shrinks the sequence
(delta debugging, bounded by --shrink-seconds) to a short one that still
fails the same property, printed one op per line: save it to a file and
re-run it with --replay FILE.

Usage: difftest.py --twinfs BIN [--seed N] [--ops K] [--seeds M]
        [--faults none|all|stop,cont,kill,restart,overflow,umount,remount]
        [--mode control|mount] [--keep DIR] [--shrink-seconds S]
        [--replay FILE] [--op-set classic|all|security] [--mount-args ARGS]
        [--strict-apply]
Exit: 0 every seed passed, 1 a property failed, 2 harness error.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

# Its modules are imported from the source tree: no __pycache__ there.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import difftest_ops as ops_mod  # noqa: E402
import harness  # noqa: E402
import treecmp  # noqa: E402
from harness import HarnessError, is_mounted, wait_for  # noqa: E402

FILL = "zfill"          # the journal-overflow filler's tree (outside the op names)
SMALL_JOURNAL = "journal:\n  size_limit: 16M\n"


def free_port():
    """A port below the kernel's ephemeral range, free now. The peer's serve
    is killed and restarted on the same port (the mount's --peer names it);
    a port the kernel hands out for outgoing connections can be taken in
    between by any process's connect (seed 61059: "Address already in
    use"), one below that range only by another listener."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    r = random.Random()
    for _ in range(200):
        p = r.randrange(max(1024, low // 2), low)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
            return p
        except OSError:
            continue
        finally:
            s.close()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


_live = harness.live


class Pair:
    """A serve peer and a replicating mount in a fresh temp dir."""

    def __init__(self, twinfs, base, small_journal, mount_args=()):
        self.bin = twinfs
        self.mount_args = list(mount_args)
        self.base = base
        self.A = os.path.join(base, "a-store")
        self.AS = os.path.join(base, "a-state")
        self.P = os.path.join(base, "p-store")
        self.PS = os.path.join(base, "p-state")
        self.M = os.path.join(base, "mnt")
        for d in (self.A, self.AS, self.P, self.PS, self.M):
            os.makedirs(d)
        self.port = free_port()
        self.conf = None
        if small_journal:
            self.conf = os.path.join(base, "small.yaml")
            with open(self.conf, "w") as f:
                f.write(SMALL_JOURNAL)
        self.serve = None
        self.mount = None
        self.serve_state = "dead"
        self.aborted = False
        self.fuse_conns = []
        self.log = open(os.path.join(base, "daemons.log"), "ab")
        _live.append(self)

    # A hung daemon does not answer: a status call that times out is "no".
    def _status_ok(self, state):
        try:
            return subprocess.run([self.bin, "status", "--state", state],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  timeout=10).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def connected(self):
        try:
            r = subprocess.run([self.bin, "status", "--state", self.AS, "--json"],
                               capture_output=True, text=True, timeout=10)
        except subprocess.TimeoutExpired:
            return False
        return '"connected":true' in r.stdout.replace(" ", "")

    def start_serve(self):
        if self.serve_state == "stopped":
            self.cont()
        if self.serve_state == "up":
            return
        # A serve that exits at once (its port held by another listener
        # for a moment) is started again on the same port, which the
        # mount's --peer names, until the deadline.
        end = time.monotonic() + 15
        while True:
            self.serve = subprocess.Popen(
                [self.bin, "serve", "--store", self.P, "--state", self.PS,
                 "--listen", "127.0.0.1:%d" % self.port, "-f"],
                stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
            self.serve_state = "up"
            wait_for("serve's control socket", lambda: self.serve.poll() is not None
                     or self._status_ok(self.PS), max(1, end - time.monotonic()))
            if self.serve.poll() is None:
                return
            if time.monotonic() > end:
                rc = self.serve.returncode
                self.serve = None
                self.serve_state = "dead"
                raise HarnessError("serve exited at start (exit %d) again and again "
                                   "for 15 s; its log says why" % rc)
            time.sleep(0.2)

    def kill_serve(self):
        if self.serve is None:
            return
        self.serve.kill()
        self.serve.wait(timeout=15)
        self.serve = None
        self.serve_state = "dead"

    def stop(self):
        if self.serve_state == "up":
            os.kill(self.serve.pid, signal.SIGSTOP)
            self.serve_state = "stopped"

    def cont(self):
        if self.serve_state == "stopped":
            os.kill(self.serve.pid, signal.SIGCONT)
            self.serve_state = "up"

    def start_mount(self):
        if self.mount is not None:
            return
        cmd = [self.bin, "mount", "--store", self.A, "--state", self.AS,
               "--mountpoint", self.M, "--peer", "127.0.0.1:%d" % self.port, "-f"]
        if self.conf:
            cmd += ["--config", self.conf]
        cmd += self.mount_args
        self.mount = subprocess.Popen(cmd, stdout=self.log, stderr=self.log,
                                      stdin=subprocess.DEVNULL)
        wait_for("the mount", lambda: is_mounted(self.M) and self._status_ok(self.AS), 15)
        # The FUSE connection's number is the minor of the mount's st_dev
        # (for the watchdog's abort).
        self.fuse_conns.append(os.minor(os.stat(self.M).st_dev))

    def stop_mount(self):
        if self.mount is None:
            return
        if not is_mounted(self.M):
            # It never came up (or fell over): nothing to unmount.
            self.mount.terminate()
        # fusermount3 -u fails with EBUSY while something still uses the
        # mount; retry for a while, then detach it lazily.
        end = time.monotonic() + 15
        while is_mounted(self.M):
            if subprocess.run(["fusermount3", "-u", self.M], stderr=subprocess.DEVNULL).returncode == 0:
                break
            if time.monotonic() > end:
                subprocess.run(["umount", "-l", self.M], stderr=subprocess.DEVNULL)
                break
            time.sleep(0.1)
        try:
            self.mount.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.mount.kill()
            self.mount.wait(timeout=10)
        self.mount = None

    def sync(self, timeout=60):
        try:
            r = subprocess.run([self.bin, "sync", "--state", self.AS, "--timeout", str(timeout)],
                               capture_output=True, text=True, timeout=timeout + 30)
        except subprocess.TimeoutExpired:
            return -1, "twinfs sync did not return within %d s" % (timeout + 30)
        return r.returncode, (r.stdout + r.stderr).strip()

    def overflow(self):
        """Kills the peer and fills the 16 MiB journal with chmods on a
        long path, so that later changes are recorded only as needs-scan."""
        self.kill_serve()
        deep = os.path.join(self.M, FILL, *(["d" * 200] * 18))
        os.makedirs(deep, exist_ok=True)
        a = os.path.join(deep, "a" * 200)
        open(a, "w").close()
        for i in range(5000):
            os.chmod(a, 0o600 if i % 2 else 0o644)

    def abort(self):
        """The run's watchdog: a hung mount would block this process in a
        syscall on it for ever (FUSE waits are not interrupted by a mere
        signal). Aborting the FUSE connection fails every pending and later
        request with ENOTCONN; then the daemons are killed."""
        self.aborted = True
        for conn in self.fuse_conns:
            try:
                with open("/sys/fs/fuse/connections/%d/abort" % conn, "w") as f:
                    f.write("1")
            except OSError:
                pass
        for p in (self.mount, self.serve):
            if p is not None:
                try:
                    p.kill()
                except OSError:
                    pass

    def apply_errors(self):
        """The apply errors the peer reported: each is a frame the sender
        sent that the peer's store could not take (repaired, but a sign
        that the sender's stream and the peer's state disagreed)."""
        self.log.flush()
        with open(self.log.name, "rb") as f:
            lines = f.read().decode(errors="replace").splitlines()
        return ["log: " + re.sub(r"^.*?(err=)", r"\1", l)[:240] for l in lines
                if "code=apply" in l and "dropping the primary" in l]

    def log_tail(self, n):
        self.log.flush()
        try:
            with open(self.log.name, "rb") as f:
                lines = f.read().decode(errors="replace").splitlines()
        except OSError:
            return []
        return [l[:300] for l in lines[-n:]]

    def close(self):
        if self in _live:
            _live.remove(self)
        if self.serve is not None and self.serve_state == "stopped":
            os.kill(self.serve.pid, signal.SIGCONT)
        self.stop_mount()
        if self.serve is not None:
            self.serve.terminate()
            try:
                self.serve.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.serve.kill()
                self.serve.wait(timeout=10)
            self.serve = None
        self.log.close()


def run_plain(seq, root):
    ap = ops_mod.Applier(root)
    try:
        return [ap.apply(op) for op in seq]
    finally:
        ap.close_all()


def run_control(seq, args, base):
    """The sequence on two plain dirs: same outcomes, same trees."""
    a, b = os.path.join(base, "A"), os.path.join(base, "B")
    os.makedirs(a)
    os.makedirs(b)
    oa, ob = run_plain(seq, a), run_plain(seq, b)
    fails = {}
    d = [i for i in range(len(seq)) if oa[i] != ob[i]]
    if d:
        fails["errno"] = ["op %d %s: %s vs %s" % (i, json.dumps(seq[i]), oa[i], ob[i]) for i in d]
    t = treecmp.compare(a, b, mtime=False)
    if t:
        fails["local"] = t
    return fails


def run_mount(seq, args, base):
    """The sequence through a replicating mount with its faults; the
    checks of the module docstring. Returns {property: [lines]}."""
    plain = os.path.join(base, "plain")
    os.makedirs(plain)
    want = run_plain(seq, plain)
    small = any(op[0] == "fault" and op[1] == "overflow" for op in seq)
    pair = Pair(args.twinfs, os.path.join(base, "pair"), small, args.mount_args.split())
    fails = {}
    watchdog = threading.Timer(args.run_timeout, pair.abort)
    watchdog.daemon = True
    watchdog.start()
    ap = None
    try:
        pair.start_serve()
        pair.start_mount()
        wait_for("the mount to connect", pair.connected, 15)
        ap = ops_mod.Applier(pair.M)

        def fault(kind):
            if kind == "stop":
                pair.stop()
            elif kind == "cont":
                pair.cont()
            elif kind == "kill":
                pair.kill_serve()
            elif kind == "restart":
                pair.start_serve()
            elif kind == "overflow":
                if pair.mount is not None:
                    pair.overflow()
            elif kind == "umount":
                pair.stop_mount()
                ap.root = pair.A
            elif kind == "remount":
                pair.start_mount()
                ap.root = pair.M
            elif kind == "sync":
                # Mid-sequence: with the peer up and the store mounted,
                # `twinfs sync` must succeed (elsewhere it cannot: a no-op).
                if pair.mount is not None and pair.serve_state == "up":
                    wait_for("the mount to connect", pair.connected, 20)
                    rc, out = pair.sync(args.sync_timeout)
                    if rc != 0:
                        mid_sync.append("op %d [\"fault\", \"sync\"]: twinfs sync exit %d: %s"
                                        % (len(got), rc, out))

        def timed_fault(kind):
            t = time.monotonic()
            fault(kind)
            if args.verbose:
                print("#   fault %s: %.2f s" % (kind, time.monotonic() - t), flush=True)

        ap.fault = timed_fault
        got = []
        mid_sync = []
        t = time.monotonic()
        try:
            for op in seq:
                if pair.aborted:
                    return fails
                got.append(ap.apply(op))
        except HarnessError as e:
            # A daemon that does not come up (or back) is a finding like
            # any other: reported, classed and shrunk.
            ap.close_all()
            fails["daemon"] = ["op %d %s: %s" % (len(got), json.dumps(seq[len(got)]), e)] + \
                ["log: " + l for l in pair.log_tail(12)]
            return fails
        ap.close_all()
        if args.verbose:
            print("#   ops: %.2f s" % (time.monotonic() - t), flush=True)
        if pair.aborted:
            return fails
        # The end state: peer up and running, store mounted.
        try:
            pair.start_serve()
            if pair.mount is None:
                pair.start_mount()
                ap.root = pair.M
        except HarnessError as e:
            fails["daemon"] = ["op %d [\"end\"]: %s" % (len(seq), e)] + \
                ["log: " + l for l in pair.log_tail(12)]
            return fails
        try:
            wait_for("the mount to reconnect", pair.connected, 20)
        except HarnessError as e:
            fails["sync"] = [str(e)]
        t = time.monotonic()
        rc, out = pair.sync(args.sync_timeout)
        if args.verbose:
            print("#   sync: exit %d, %.2f s" % (rc, time.monotonic() - t), flush=True)
        if mid_sync:
            fails.setdefault("sync", []).extend(mid_sync)
        if rc != 0:
            fails.setdefault("sync", []).append("twinfs sync exit %d: %s" % (rc, out))
        t = treecmp.compare(pair.A, pair.P)
        if t:
            fails["replica"] = t
        if args.strict_apply:
            t = pair.apply_errors()
            if t:
                fails["apply"] = t
        t = treecmp.compare(pair.M, pair.A, mtime=False)
        if t:
            fails["view"] = t
        d = [i for i in range(len(seq)) if got[i] != want[i]]
        if d:
            fails["errno"] = ["op %d %s: mount %s vs plain %s" % (i, json.dumps(seq[i]), got[i], want[i])
                              for i in d]
        t = treecmp.compare(pair.M, plain, mtime=False, ignore=[FILL])
        if t:
            fails["local"] = t
    except HarnessError:
        if not pair.aborted:
            raise
    finally:
        watchdog.cancel()
        if ap is not None:
            ap.close_all()      # an open fd keeps the mount busy
        if pair.aborted:
            # Whatever was found after the abort is its consequence.
            fails.clear()       # (the dict is what a return above returns)
            fails["daemon"] = ["run exceeded --run-timeout %d s: aborted the FUSE "
                               "connection (a hung mount or peer)" % args.run_timeout] + \
                ["log: " + l for l in pair.log_tail(12)]
        pair.close()
    return fails


PROPS = ["daemon", "sync", "replica", "apply", "view", "errno", "local"]


def run_once(seq, args, keep_tag=None):
    base = tempfile.mkdtemp(prefix="twinfs-difftest.", dir="/tmp")
    fails = None
    try:
        if args.mode == "control":
            fails = run_control(seq, args, base)
        else:
            fails = run_mount(seq, args, base)
        return fails
    finally:
        # --keep: a failing run's dirs (stores, plain dir, daemon log).
        if args.keep and keep_tag and fails:
            dst = os.path.join(args.keep, keep_tag)
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(base, dst, symlinks=True, dirs_exist_ok=True,
                            ignore_dangling_symlinks=True,
                            copy_function=_copy_safe)
            with open(os.path.join(dst, "ops.jsonl"), "w") as f:
                f.writelines(json.dumps(op) + "\n" for op in seq)
        shutil.rmtree(base, ignore_errors=True)


def _copy_safe(src, dst):
    # Never open a FIFO, socket or device while keeping a run's tree.
    import stat
    st = os.lstat(src)
    if stat.S_ISREG(st.st_mode):
        shutil.copy2(src, dst)


def classes(fails):
    """The kinds of divergence in a failure, e.g. "replica mtime_ns(dir)",
    "errno pwrite: mount EACCES vs plain ok", "sync": each one is shrunk
    on its own, so that a common divergence does not hide a rarer one."""
    out = []
    for p in PROPS:
        for line in fails.get(p, []):
            if p == "replica" and ("sync" in fails or "daemon" in fails):
                # The peer did not catch up: its differences are the
                # consequence, not a divergence of their own.
                continue
            if p == "errno":
                # "op N [json]: mount X vs plain Y" -> "errno mount X": one
                # cause (the mount's errno), whatever op and plain result.
                c = "errno mount %s" % line.rsplit(": mount ", 1)[1].split(" vs ")[0]
                if "noslot" in line:
                    continue    # an fd slot differs after its open's errno did
            elif p == "sync":
                c = "sync" + _sync_reason(line)
            elif p == "apply":
                # 'log: err="setattr 'd2' on vm: No such file..."': the op and
                # the reason, not the path
                m = re.search(r'err="(\S+) .*?: ([^"]*)', line)
                c = "apply %s: %s" % (m.group(1), m.group(2)) if m else "apply"
            elif p == "daemon":
                if line.startswith("log: "):
                    continue
                c = "daemon " + line.split(": ", 1)[1].split(" [")[0].split(": ", 1)[-1]
            else:
                parts = line.split(": ")
                c = "%s %s" % (p, parts[1] if len(parts) > 2 else line)
                if parts[1] == "exists":
                    # which side lacks it; the entry's type is detail
                    c += " (right missing)" if parts[2].endswith("vs missing") else " (left missing)"
            if c not in out:
                out.append(c)
    # The severe ones first: a failed sync, wrong errnos, content and
    # existence, then metadata.
    rank = lambda c: (0 if c.startswith(("daemon", "sync", "errno")) else
                      1 if "mtime" not in c else 2)
    return sorted(out, key=rank)


def _sync_reason(line):
    """The cause `twinfs sync` gives, names and numbers taken out:
    " (cannot read P: No such device or address)" -- different causes
    are different classes."""
    m = re.search(r"\((?:not )?connected: (.*)\)\s*$", line)
    if not m:
        return " (%s)" % re.sub(r"/tmp/\S+", "DIR", line.split(": ", 1)[-1])[:80] \
            if "did not answer" in line or "waiting for" in line else ""
    r = re.sub(r"^peer [0-9.:]+: ", "", m.group(1))
    r = re.sub(r"'[^']*'", "'P'", r)
    r = re.sub(r"(read|open|apply|send) [^ :]+:", r"\1 P:", r)
    return " (%s)" % r


def has_class(fails, cls):
    return cls in classes(fails)


def shrink(seq, cls, args, deadline):
    """ddmin: the shortest sub-sequence found before deadline that still
    shows divergence class cls. Fault ops are ops like any other."""
    n = 2
    tries = 0
    while len(seq) >= 2 and time.monotonic() < deadline:
        chunk = max(1, len(seq) // n)
        reduced = False
        for start in range(0, len(seq), chunk):
            if time.monotonic() >= deadline:
                break
            cand = seq[:start] + seq[start + chunk:]
            if not cand:
                continue
            tries += 1
            if has_class(run_once(cand, args), cls):
                seq = cand
                n = max(n - 1, 2)
                reduced = True
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(seq), n * 2)
    return seq, tries


def report(fails, limit=25):
    for p in PROPS:
        if p in fails:
            print("FAIL %s (%d line(s)):" % (p, len(fails[p])))
            for l in fails[p][:limit]:
                print("  " + l)
            if len(fails[p]) > limit:
                print("  ... and %d more" % (len(fails[p]) - limit))


def faults_of(spec, mode):
    if mode == "control" or spec == "none":
        return ()
    if spec == "all":
        return tuple(ops_mod.FAULTS)
    fs = tuple(f for f in spec.split(",") if f)
    bad = [f for f in fs if f not in ops_mod.FAULTS]
    if bad:
        sys.exit("difftest: unknown fault(s) %s (known: %s)" % (bad, ",".join(ops_mod.FAULTS)))
    return fs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--twinfs", default="twinfs")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--faults", default="none")
    ap.add_argument("--mode", choices=["control", "mount"], default="control")
    ap.add_argument("--keep", help="copy each failing run's dir (regular files only) here")
    ap.add_argument("--shrink-seconds", type=float, default=300)
    ap.add_argument("--shrink-all", action="store_true",
                    help="shrink every failing seed (default: only the first)")
    ap.add_argument("--sync-timeout", type=int, default=60,
                    help="seconds `twinfs sync` may take at the end (a failed sync waits this long)")
    ap.add_argument("--run-timeout", type=int, default=240,
                    help="seconds one mount-mode run may take before its FUSE connection is aborted")
    ap.add_argument("-v", "--verbose", action="store_true", help="time each fault and phase")
    ap.add_argument("--class", dest="only_class", action="append", metavar="SUBSTR",
                    help="shrink only the divergence classes containing SUBSTR (repeatable)")
    ap.add_argument("--skip-class", action="append", metavar="SUBSTR",
                    help="do not shrink the classes containing SUBSTR (known ones; repeatable)")
    ap.add_argument("--replay", help="run the ops in FILE (one JSON list a line)")
    ap.add_argument("--op-set", choices=sorted(ops_mod.OP_SETS), default="classic",
                    help="classic: the op kinds the CI seeds were chosen with; all: "
                         "also fallocate modes, copy_file_range, O_TMPFILE, mmap "
                         "writes, set-id drops... (difftest_ops.py, EXTRA)")
    ap.add_argument("--mount-args", default="",
                    help="more arguments for `twinfs mount`, e.g. \"--no-uring --mode sync\"")
    ap.add_argument("--strict-apply", action="store_true",
                    help="count an apply error the peer reported (and the sender "
                         "repaired) as a failure (property \"apply\")")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    signal.signal(signal.SIGTERM, harness.on_signal)
    signal.signal(signal.SIGINT, harness.on_signal)
    if args.mode == "mount" and os.geteuid() != 0:
        sys.exit("difftest: mount mode needs root")
    faults = faults_of(args.faults, args.mode)

    if args.replay:
        with open(args.replay) as f:
            runs = [("replay", [json.loads(l) for l in f if l.strip() and not l.startswith("#")])]
    else:
        runs = [(s, None) for s in range(args.seed, args.seed + args.seeds)]

    failed = 0
    total_ops = 0
    shrunk_one = False
    shrunk_classes = set()
    t0 = time.monotonic()
    for seed, seq in runs:
        if seq is None:
            seq = ops_mod.generate(seed, args.ops, faults, args.op_set)
        total_ops += len(seq)
        ts = time.monotonic()
        try:
            fails = run_once(seq, args, keep_tag="seed-%s" % seed)
        except HarnessError as e:
            print("difftest: seed %s: harness error: %s" % (seed, e))
            return 2
        nf = sum(1 for op in seq if op[0] == "fault")
        print("# seed %s mode %s: %d ops (%d faults), %.1f s: %s" % (
            seed, args.mode, len(seq), nf, time.monotonic() - ts,
            "FAIL " + ",".join(p for p in PROPS if p in fails) if fails else "ok"), flush=True)
        if not fails:
            continue
        failed += 1
        print("== seed %s failed (mode %s, faults %s)" % (seed, args.mode, args.faults))
        report(fails)
        print("== divergence classes of seed %s: %s" % (seed, "; ".join(classes(fails))))
        print("== ops of seed %s:" % seed)
        for op in seq:
            print(json.dumps(op))
        if args.shrink_seconds > 0 and (args.shrink_all or not shrunk_one):
            shrunk_one = True
            todo = [c for c in classes(fails) if c not in shrunk_classes
                    and (not args.only_class or any(o in c for o in args.only_class))
                    and not any(o in c for o in args.skip_class or ())]
            print("== classes to shrink: %s" % "; ".join(todo))
            end = time.monotonic() + args.shrink_seconds
            for i, cls in enumerate(todo):
                # The first (most severe) class gets half of the time, the
                # others equal shares of what is left.
                left = end - time.monotonic()
                share = left / 2 if i == 0 and len(todo) > 1 else left / (len(todo) - i)
                if left <= 1:
                    print("== no shrink time left for: %s" % "; ".join(todo[i:]))
                    break
                small, tries = shrink(seq, cls, args, time.monotonic() + share)
                final = run_once(small, args)
                shrunk_classes.add(cls)
                print("== seed %s, class [%s]: shrunk to %d op(s) (%d tries)%s:" % (
                    seed, cls, len(small), tries,
                    "" if has_class(final, cls) else " (NOT reproduced on the last re-run: timing)"))
                for op in small:
                    print(json.dumps(op))
                print("== its failure (re-run: save the ops above to FILE, "
                      "difftest.py --mode %s --replay FILE):" % args.mode)
                report(final, limit=8)
    print("# difftest: %d seed(s), %d ops, %d failed, %.1f s" % (
        len(runs), total_ops, failed, time.monotonic() - t0))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
