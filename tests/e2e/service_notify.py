#!/usr/bin/env python3
"""sd_notify readiness without systemd: a datagram socket stands in for
$NOTIFY_SOCKET. `twinfs serve -f` sends READY=1 only once its port accepts
connections, `twinfs mount -f` only once the mount answers stat; both add
STATUS= with their role, and STOPPING=1 at SIGTERM. Detached (no -f), the
daemon child sends READY=1 itself (SCM_CREDENTIALS names the sender),
before the parent returns. An abstract socket name (@...) works too.
Exit 77 without root or /dev/fuse."""
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

TWINFS = os.environ.get("TWINFS_BIN", "twinfs")
checks = failures = 0


def check(desc, ok):
    global checks, failures
    checks += 1
    if ok:
        print("ok - " + desc)
    else:
        failures += 1
        print("not ok - " + desc, file=sys.stderr)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def listens(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def mounted(mnt):
    with open("/proc/mounts") as f:
        return any(l.split()[1] == mnt and l.split()[2] == "fuse.twinfs" for l in f)


class Notify:
    """The service manager's end: one datagram socket, sender creds on."""

    def __init__(self, addr):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind(addr if addr[0] != "@" else "\0" + addr[1:])
        self.env = dict(os.environ, NOTIFY_SOCKET=addr)
        self.env.pop("JOURNAL_STREAM", None)

    def recv(self, timeout):
        """(fields dict, sender pid) of the next datagram, or (None, 0)."""
        self.sock.settimeout(timeout)
        try:
            msg, anc, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
        except socket.timeout:
            return None, 0
        pid = 0
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = struct.unpack("iII", data[:12])[0]
        fields = dict(l.split("=", 1) for l in msg.decode().splitlines() if "=" in l)
        return fields, pid

    def wait_for(self, key, timeout, probe=None):
        """Waits for a datagram with KEY; runs PROBE the moment it arrives."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            fields, pid = self.recv(end - time.monotonic())
            if fields is None:
                break
            if key in fields:
                return fields, pid, (probe() if probe else None)
        return None, 0, None


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root")
        return 77
    if not os.path.exists("/dev/fuse") or not shutil.which("fusermount3"):
        print("SKIP: /dev/fuse or fusermount3 missing")
        return 77
    t = tempfile.mkdtemp(prefix="twinfs-notify.")
    procs, mnts = [], []
    try:
        # -- serve -f: READY=1 once the port listens --------------------
        n = Notify(os.path.join(t, "notify.sock"))
        os.makedirs(os.path.join(t, "sstore"))
        port = free_port()
        p = subprocess.Popen([TWINFS, "serve", "-f", "--store", t + "/sstore", "--state",
                              t + "/sstate", "--listen", "127.0.0.1:%d" % port],
                             env=n.env, stderr=open(t + "/serve.log", "w"))
        procs.append(p)
        fields, pid, up = n.wait_for("READY", 20, lambda: listens(port))
        check("serve -f sends READY=1", fields is not None and fields.get("READY") == "1")
        check("serve: the port listens when READY=1 arrives", up is True)
        check("serve: READY=1 comes from the daemon (pid %d)" % pid, pid == p.pid)
        check("serve: STATUS names the role and address",
              fields is not None and "secondary" in fields.get("STATUS", "")
              and str(port) in fields.get("STATUS", ""))
        p.send_signal(signal.SIGTERM)
        fields, _, _ = n.wait_for("STOPPING", 20)
        check("serve sends STOPPING=1 at SIGTERM", fields is not None)
        check("serve exits 0", p.wait(20) == 0)

        # -- mount -f: READY=1 once the mount answers stat ---------------
        store, mnt = t + "/store", t + "/mnt"
        os.makedirs(store)
        os.makedirs(mnt)
        with open(store + "/hello", "w") as f:
            f.write("hi\n")
        mnts.append(mnt)
        p = subprocess.Popen([TWINFS, "mount", "-f", "--store", store, "--state",
                              t + "/state", "--mountpoint", mnt],
                             env=n.env, stderr=open(t + "/mount.log", "w"))
        procs.append(p)
        fields, pid, seen = n.wait_for(
            "READY", 20, lambda: mounted(mnt) and os.path.exists(mnt + "/hello"))
        check("mount -f sends READY=1", fields is not None and fields.get("READY") == "1")
        check("mount: mounted and its files visible when READY=1 arrives", seen is True)
        check("mount: READY=1 comes from the daemon (pid %d)" % pid, pid == p.pid)
        check("mount: STATUS names the role and mountpoint",
              fields is not None and "primary" in fields.get("STATUS", "")
              and mnt in fields.get("STATUS", ""))
        p.send_signal(signal.SIGTERM)
        fields, _, _ = n.wait_for("STOPPING", 20)
        check("mount sends STOPPING=1 at SIGTERM", fields is not None)
        check("mount -f exits 0", p.wait(20) == 0)
        check("unmounted after SIGTERM", not mounted(mnt))

        # -- detached mount, abstract socket: the child tells -------------
        n2 = Notify("@twinfs-notify-%d" % os.getpid())
        r = subprocess.run([TWINFS, "mount", "--store", store, "--state", t + "/state",
                            "--mountpoint", mnt], env=n2.env,
                           stderr=open(t + "/mount2.log", "w"))
        check("detached mount exits 0", r.returncode == 0)
        fields, pid = n2.recv(5)
        check("detached: READY=1 was sent before the parent returned",
              fields is not None and fields.get("READY") == "1")
        alive = pid > 0 and os.path.exists("/proc/%d" % pid)
        check("detached: READY=1 came from the daemon child, still running", alive)
        subprocess.run(["fusermount3", "-u", mnt])
        end = time.monotonic() + 10
        while mounted(mnt) and time.monotonic() < end:
            time.sleep(0.1)
        check("detached mount unmounted", not mounted(mnt))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for m in mnts:
            if mounted(m):
                subprocess.run(["umount", "-l", m])
        shutil.rmtree(t, ignore_errors=True)
    print("%d passed, %d failed" % (checks - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
