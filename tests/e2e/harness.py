"""What the randomized e2e harnesses share (difftest.py, splitfuzz.py):
the harness error, polling with a timeout, the mount table, running a
command, and the registry of everything a harness started, which the exit
handlers close whatever way the process ends (nothing may outlive it)."""
import atexit
import subprocess
import sys
import time


class HarnessError(Exception):
    pass


def wait_for(what, pred, timeout):
    """Polls pred every 50 ms until it is true; HarnessError after timeout."""
    end = time.monotonic() + timeout
    while True:
        if pred():
            return
        if time.monotonic() > end:
            raise HarnessError("timed out after %d s waiting for %s" % (timeout, what))
        time.sleep(0.05)


def is_mounted(path):
    with open("/proc/mounts") as f:
        return any(l.split()[1] == path for l in f)


def run(cmd, timeout=60, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise HarnessError("%s: exit %d: %s" % (" ".join(cmd), r.returncode,
                                                (r.stdout + r.stderr).strip()[:400]))
    return r


# Every daemon, mount or namespace started in this process (objects with a
# close()), newest last: closed in reverse at exit.
live = []


def _cleanup_all():
    for x in list(reversed(live)):
        try:
            x.close()
        except Exception as e:       # keep cleaning the others
            sys.stderr.write("%s: cleanup: %s\n" % (sys.argv[0], e))


atexit.register(_cleanup_all)


def on_signal(sig, frame):
    raise SystemExit(128 + sig)
