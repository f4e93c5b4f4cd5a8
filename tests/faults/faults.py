#!/usr/bin/env python3
"""Fault-injection suite: a replicated pair on two hosts (network
namespaces this script makes, joined by a veth pair; the link is TLS with a
pre-shared key), one scenario per fault. Each copies a generated tree into
the mount while the fault happens, with a probe that writes and fsyncs a
small file every 100 ms, and records: did the writer see an error, the
probe's longest stall, the time from healing to a successful `twinfs sync`,
and whether the peer's store then equals the primary's field for field
(tests/e2e/treecmp.py). One table row per scenario, printed and written to
--table; exit 1 if any row shows an error, loss or divergence.

Faults: link cut 10 s; 2 % packet loss for the whole copy; a silent
partition 15 s; the peer killed (SIGKILL) and restarted; the primary's
daemon killed and remounted; the peer's disk full, then room made; a wrong
key, a plaintext client and garbage on the port; sync mode with the peer
killed while fsyncs wait; an outage longer than the journal can cover.

Mounts are made with `nsenter --net` (not `ip netns exec`, whose private
mount namespace would hide the FUSE mount). Every wait has a timeout;
everything is unmounted, killed and removed at exit, also on failure.
Usage: faults.py [--twinfs BIN] [--table FILE] [--only NAME,...] [--keep DIR]
(defaults: $TWINFS_BIN, and $TWINFS_BUILD/faults-table.txt, which CI keeps)
"""
import argparse
import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import treecmp  # noqa: E402

PORT = 7420


def sh(*args, check=True, **kw):
    return subprocess.run(args, check=check, capture_output=True, text=True, **kw)


def wait_until(fn, timeout, step=0.1):
    end = time.time() + timeout
    while time.time() < end:
        try:
            if fn():
                return True
        except Exception:
            pass
        time.sleep(step)
    return False


class Net:
    """Two namespaces A (primary) and P (peer) joined by a veth pair."""

    def __init__(self):
        tag = "%d" % (os.getpid() % 100000)
        self.a, self.p = "twfa" + tag, "twfp" + tag
        sub = os.getpid() % 250
        self.a_ip, self.p_ip = "10.232.%d.1" % sub, "10.232.%d.2" % sub
        sh("ip", "netns", "add", self.a)
        sh("ip", "netns", "add", self.p)
        va, vp = "fa" + tag, "fp" + tag
        sh("ip", "link", "add", va, "netns", self.a, "type", "veth", "peer", "name", vp,
           "netns", self.p)
        sh("ip", "-n", self.a, "addr", "add", self.a_ip + "/30", "dev", va)
        sh("ip", "-n", self.p, "addr", "add", self.p_ip + "/30", "dev", vp)
        for ns, dev in ((self.a, va), (self.p, vp)):
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")

    def ns(self, which):
        return ["nsenter", "--net=/run/netns/" + (self.a if which == "a" else self.p)]

    def nft(self, rules):
        return subprocess.run(self.ns("a") + ["nft", "-f", "-"], input=rules, text=True,
                              capture_output=True, check=True)

    def cut(self):
        self.nft("table inet twf {\n chain i { type filter hook input priority 0; "
                 "ip saddr %s drop; }\n chain o { type filter hook output priority 0; "
                 "ip daddr %s drop; }\n}\n" % (self.p_ip, self.p_ip))

    def loss(self, permille):
        self.nft("table inet twf {\n chain i { type filter hook input priority 0; "
                 "ip saddr %s numgen random mod 1000 < %d drop; }\n chain o { type filter "
                 "hook output priority 0; ip daddr %s numgen random mod 1000 < %d drop; }\n}\n"
                 % (self.p_ip, permille, self.p_ip, permille))

    def heal(self):
        subprocess.run(self.ns("a") + ["nft", "delete", "table", "inet", "twf"],
                       capture_output=True)

    def close(self):
        self.heal()
        for ns in (self.a, self.p):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


class Pair:
    """A serve in P and a mount in A, under one scenario's folder."""

    def __init__(self, suite, name, mode="async", journal_limit=None, peer_store=None):
        self.s, self.bin, self.net = suite, suite.bin, suite.net
        self.dir = os.path.join(suite.root, name)
        self.a_store, self.a_state = self.dir + "/a/store", self.dir + "/a/state"
        self.p_store = peer_store or self.dir + "/p/store"
        self.p_state = self.dir + "/p/state"
        self.mnt = self.dir + "/mnt"
        for d in (self.a_store, self.a_state, self.p_store, self.p_state, self.mnt):
            os.makedirs(d, exist_ok=True)
        self.conf = self.dir + "/mount.yaml"
        with open(self.conf, "w") as f:
            f.write("store: %s\nstate: %s\nmountpoint: %s\npeer: %s:%d\nmode: %s\n"
                    "tls:\n  psk_file: %s\nsync:\n  timeout: 2\n"
                    % (self.a_store, self.a_state, self.mnt, self.net.p_ip, PORT, mode,
                       suite.psk))
            if journal_limit:
                f.write("journal:\n  size_limit: %s\n" % journal_limit)
        self.serve_p = self.mount_p = None
        self.log = open(self.dir + "/daemons.log", "a")

    def status(self, state):
        r = subprocess.run([self.bin, "status", "--state", state, "--json"],
                           capture_output=True, text=True, timeout=10)
        return r.stdout if r.returncode == 0 else ""

    def start_serve(self, extra=()):
        self.serve_p = subprocess.Popen(
            self.net.ns("p") + [self.bin, "serve", "--store", self.p_store, "--state",
                                self.p_state, "--listen", "%s:%d" % (self.net.p_ip, PORT),
                                "--psk-file", self.s.psk, "-f"] + list(extra),
            stdout=self.log, stderr=self.log)
        self.s.procs.append(self.serve_p)
        if not wait_until(lambda: self.status(self.p_state), 15):
            raise RuntimeError("serve did not start")

    def kill_serve(self):
        if self.serve_p:
            self.serve_p.kill()
            self.serve_p.wait(10)
            self.serve_p = None

    def start_mount(self):
        self.mount_p = subprocess.Popen(
            self.net.ns("a") + [self.bin, "mount", "--config", self.conf, "-f"],
            stdout=self.log, stderr=self.log)
        self.s.procs.append(self.mount_p)
        self.s.mounts.append(self.mnt)
        if not wait_until(lambda: self.status(self.a_state) and os.path.ismount(self.mnt), 15):
            raise RuntimeError("mount did not start")

    def kill_mount(self):
        self.mount_p.kill()
        self.mount_p.wait(10)
        subprocess.run(["umount", "-l", self.mnt], capture_output=True)

    def stop_mount(self):
        subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True)
        try:
            self.mount_p.wait(30)
        except subprocess.TimeoutExpired:
            self.mount_p.kill()

    def sync(self, timeout):
        r = subprocess.run([self.bin, "sync", "--state", self.a_state, "--timeout",
                            str(timeout)], capture_output=True, text=True, timeout=timeout + 15)
        return r.returncode, (r.stderr or r.stdout).strip()

    def stop(self):
        if self.mount_p and self.mount_p.poll() is None:
            self.stop_mount()
        self.kill_serve()
        self.log.close()


class Load:
    """The copy (a thread) and the probe (a thread, write + fsync every
    100 ms); both note every error and the probe its longest call."""

    def __init__(self, src, dst, probe_dir):
        self.src, self.dst, self.probe_dir = src, dst, probe_dir
        self.errors, self.copied, self.stall, self.done = [], 0, 0.0, False
        self.stop = threading.Event()
        self.probes = []	# (name, returned fast while not degraded)
        self.t_copy = threading.Thread(target=self._copy, daemon=True)
        self.t_probe = threading.Thread(target=self._probe, daemon=True)

    def start(self):
        self.t_copy.start()
        self.t_probe.start()

    def _copy(self):
        try:
            os.makedirs(self.dst, exist_ok=True)
            for name in sorted(os.listdir(self.src)):
                shutil.copy2(os.path.join(self.src, name), os.path.join(self.dst, name))
                self.copied += 1
                time.sleep(0.01)	# a copy that lasts across the fault
        except OSError as e:
            self.errors.append("copy: %s" % e)
        self.done = True

    def _probe(self):
        i = 0
        os.makedirs(self.probe_dir, exist_ok=True)
        while not self.stop.is_set():
            name = "p%05d" % i
            t0 = time.time()
            try:
                fd = os.open(os.path.join(self.probe_dir, name), os.O_WRONLY | os.O_CREAT, 0o644)
                os.write(fd, b"probe %d\n" % i)
                os.fsync(fd)
                os.close(fd)
            except OSError as e:
                self.errors.append("probe: %s" % e)
            took = time.time() - t0
            self.probes.append((name, took))
            self.stall = max(self.stall, took)
            i += 1
            time.sleep(0.1)

    def wait(self, timeout=120):
        self.t_copy.join(timeout)
        self.stop.set()
        self.t_probe.join(10)


class Suite:
    def __init__(self, args):
        self.bin = os.path.abspath(args.twinfs)
        self.root = tempfile.mkdtemp(prefix="twinfs-faults.")
        os.chmod(self.root, 0o755)
        self.procs, self.mounts, self.loops = [], [], []
        self.keep = args.keep
        atexit.register(self.cleanup)
        self.net = Net()
        self.psk = os.path.join(self.root, "psk")
        sh(self.bin, "keygen", "--psk", self.psk)
        self.src = os.path.join(self.root, "src")
        os.makedirs(self.src)
        blob = os.urandom(1 << 20)
        for i in range(120):	# about 12 MiB in 120 files
            with open(os.path.join(self.src, "f%03d" % i), "wb") as f:
                n = (i * 7919) % (200 << 10) + 1
                f.write((blob * 2)[i * 4093 % (1 << 20):][:n])
        self.rows = []

    def cleanup(self):
        for m in self.mounts:
            if os.path.ismount(m):
                subprocess.run(["fusermount3", "-u", m], capture_output=True)
                subprocess.run(["umount", "-l", m], capture_output=True)
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    pass
        for mp, loop in self.loops:
            subprocess.run(["umount", "-l", mp], capture_output=True)
            subprocess.run(["losetup", "-d", loop], capture_output=True)
        self.net.close()
        if self.keep:
            subprocess.run(["cp", "-a", self.root, self.keep], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)

    def small_fs(self, name, mb):
        img = os.path.join(self.root, name + ".img")
        mp = os.path.join(self.root, name)
        os.makedirs(mp)
        sh("truncate", "-s", "%dM" % mb, img)
        sh("mkfs.ext4", "-q", "-F", img)
        loop = sh("losetup", "--show", "-f", img).stdout.strip()
        sh("mount", loop, mp)
        self.loops.append((mp, loop))
        return mp

    def row(self, name, load, heal_t, pair, expect_writer_error=False, note=""):
        rc, why = pair.sync(90)
        converge = time.time() - heal_t if rc == 0 else None
        diff = treecmp.compare(pair.a_store, pair.p_store)
        equal = not diff
        ok = rc == 0 and equal and (expect_writer_error or not load.errors)
        self.rows.append((name, "yes" if load.errors else "no", "%.2f" % load.stall,
                          "%.1f" % converge if converge is not None else "-",
                          "yes" if equal else "NO", "ok" if ok else "FAIL", note or why[:60]))
        if not ok:
            print("# %s: sync rc=%d (%s); writer errors: %s" % (name, rc, why, load.errors[:3]))
            for line in diff[:15]:
                print("#   " + line)
        return ok


def started(s, name, **kw):
    """A pair for scenario NAME, both daemons up, the copy and probe running."""
    pair = Pair(s, name, **kw)
    pair.start_serve()
    pair.start_mount()
    load = Load(s.src, pair.mnt + "/data", pair.mnt + "/probe")
    load.start()
    return pair, load


def scenario_cut(s, name, seconds, loss=0):
    pair, load = started(s, name)
    wait_until(lambda: load.copied >= 20, 30)
    if loss:
        s.net.loss(loss)
        load.wait()
        s.net.heal()
    else:
        s.net.cut()
        time.sleep(seconds)
        s.net.heal()
        load.wait()
    heal = time.time()
    s.row(name, load, heal, pair, note="")
    pair.stop()


def scenario_peer_kill(s, name):
    pair, load = started(s, name)
    wait_until(lambda: load.copied >= 30, 30)
    pair.kill_serve()
    time.sleep(2)
    pair.start_serve()
    heal = time.time()
    load.wait()
    s.row(name, load, heal, pair)
    pair.stop()


def scenario_primary_kill(s, name):
    pair, load = started(s, name)
    wait_until(lambda: load.copied >= 40, 30)
    pair.kill_mount()
    load.wait()	# the writer sees the mount go away: expected here
    pair.start_mount()
    heal = time.time()
    s.row(name, load, heal, pair, expect_writer_error=True,
          note="writer errors expected (its mount died)")
    pair.stop()


def scenario_disk_full(s, name):
    fs = s.small_fs(name + "-disk", 48)
    store = fs + "/store"
    os.makedirs(store)
    filler = fs + "/filler"	# beside the store, not in it
    with open(filler, "wb") as f:
        free = shutil.disk_usage(fs).free
        f.write(b"\0" * max(0, free - (4 << 20)))
    pair, load = started(s, name, peer_store=store)
    load.wait()
    rc, why = pair.sync(5)
    full_ok = rc != 0
    st = pair.status(pair.a_state)
    said = "No space" in st or "ENOSPC" in st or "space" in why
    os.unlink(filler)
    heal = time.time()
    note = "sync failed while full: %s; reason shown: %s" % (
        "yes" if full_ok else "NO", "yes" if said else "NO")
    if not (full_ok and said):
        load.errors.append("disk full not reported: rc=%d status=%s" % (rc, st[:200]))
    s.row(name, load, heal, pair, note=note)
    pair.stop()


def scenario_intruders(s, name):
    pair, load = started(s, name)
    wrong = os.path.join(s.root, "wrong.psk")
    if not os.path.exists(wrong):
        sh(s.bin, "keygen", "--psk", wrong)
    end = time.time() + 6
    while time.time() < end and not load.done:
        # garbage and a plaintext HELLO-less client, from the primary's host
        for payload in (os.urandom(300), b"TWFS\x01 plaintext, no keys\n"):
            subprocess.run(s.net.ns("a") + ["python3", "-c",
                           "import socket,sys;c=socket.create_connection((sys.argv[1],%d),2);"
                           "c.sendall(bytes.fromhex(sys.argv[2]));c.close()" % PORT,
                           s.net.p_ip, payload.hex()], capture_output=True, timeout=10)
        # a TLS client with the wrong key
        subprocess.run(s.net.ns("a") + ["openssl", "s_client", "-connect", "%s:%d" % (
            s.net.p_ip, PORT), "-tls1_3", "-psk_identity", "twinfs-0000000000000000", "-psk",
            open(wrong).read().split()[-1]], input="", capture_output=True, text=True,
            timeout=10)
        time.sleep(0.3)
    load.wait()
    heal = time.time()
    st = pair.status(pair.p_state)
    note = "peer refused intruders: %s" % ("yes" if '"connections_refused":0' not in st else "NO")
    s.row(name, load, heal, pair, note=note)
    pair.stop()


def scenario_sync_mode(s, name):
    pair, load = started(s, name, mode="sync")
    wait_until(lambda: len(load.probes) >= 10, 30)
    # probes that returned before the kill, in sync mode, must be on the peer
    before = [n for n, _ in load.probes]
    pair.kill_serve()
    time.sleep(4)	# longer than sync.timeout (2 s): fsyncs degrade
    lost = [n for n in before if not os.path.exists(os.path.join(pair.p_store, "probe", n))]
    pair.start_serve()
    heal = time.time()
    load.wait()
    note = "fsynced before the kill, missing on the peer: %d of %d" % (len(lost), len(before))
    if lost:
        load.errors.append("sync-mode fsyncs not on the peer: %s" % lost[:5])
    s.row(name, load, heal, pair, note=note)
    pair.stop()


def scenario_long_outage(s, name):
    pair = Pair(s, name, journal_limit="16MiB")
    pair.start_serve()
    pair.start_mount()
    pair.kill_serve()
    load = Load(s.src, pair.mnt + "/data", pair.mnt + "/probe")
    load.start()
    load.wait()
    # churn past the journal's 16 MiB: records with long paths (18 levels
    # of 200-byte names), a few thousand chmods and renames
    deep = os.path.join(pair.mnt, "churn", *(["d" * 200] * 18))
    os.makedirs(deep)
    a = os.path.join(deep, "a" * 200)
    open(a, "w").close()
    for i in range(6000):
        os.chmod(a, 0o600 if i % 2 else 0o644)
        if i % 10 == 0:
            os.rename(a, a + ".r")
            os.rename(a + ".r", a)
    shutil.rmtree(pair.mnt + "/data/" + sorted(os.listdir(s.src))[0], ignore_errors=True)
    pair.start_serve()
    heal = time.time()
    st = pair.status(pair.a_state)
    overflowed = '"needs_scan":0,' not in st
    if not overflowed:
        load.errors.append("the journal did not overflow: the scenario tested nothing")
    s.row(name, load, heal, pair, note="journal overflowed (needs-scan paths): %s" % (
        "yes" if overflowed else "NO"))
    pair.stop()


SCENARIOS = [
    ("link-cut-10s", lambda s, n: scenario_cut(s, n, 10)),
    ("loss-2pct", lambda s, n: scenario_cut(s, n, 0, loss=20)),
    ("partition-15s", lambda s, n: scenario_cut(s, n, 15)),
    ("peer-sigkill", scenario_peer_kill),
    ("primary-sigkill", scenario_primary_kill),
    ("peer-disk-full", scenario_disk_full),
    ("intruders", scenario_intruders),
    ("sync-mode-peer-kill", scenario_sync_mode),
    ("outage-beyond-journal", scenario_long_outage),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--twinfs", default=os.environ.get("TWINFS_BIN"))
    ap.add_argument("--table", default=os.path.join(os.environ["TWINFS_BUILD"], "faults-table.txt")
                    if os.environ.get("TWINFS_BUILD") else None)
    ap.add_argument("--only")
    ap.add_argument("--keep")
    args = ap.parse_args()
    if not args.twinfs:
        ap.error("--twinfs BIN (or TWINFS_BIN) is required")
    if os.geteuid() != 0:
        print("SKIP: needs root")
        return 77
    for tool in ("ip", "nft", "nsenter", "fusermount3", "openssl", "mkfs.ext4"):
        if not shutil.which(tool):
            print("SKIP: %s missing" % tool)
            return 77
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(130))
    s = Suite(args)
    only = set(args.only.split(",")) if args.only else None
    for name, fn in SCENARIOS:
        if only and name not in only:
            continue
        t0 = time.time()
        try:
            fn(s, name)
        except Exception as e:	# a harness failure is a failed row, not a crash
            s.rows.append((name, "?", "-", "-", "?", "FAIL", "harness: %s" % e))
        print("# %s done in %.0f s" % (name, time.time() - t0), flush=True)
    head = ("scenario", "writer error", "max probe stall s", "converge s", "stores equal",
            "result", "note")
    widths = [max(len(str(r[i])) for r in s.rows + [head]) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in [head] + s.rows]
    print("\n".join(lines))
    if args.table:
        with open(args.table, "w") as f:
            f.write("\n".join(lines) + "\n")
    bad = [r for r in s.rows if r[5] != "ok"]
    print("%d passed, %d failed" % (len(s.rows) - len(bad), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
