#!/usr/bin/env python3
"""Stop one thread of a running daemon, and only that one, until told.

    thread_hold.py PID COMM READY RELEASE TIMEOUT

Finds PID's thread named COMM (/proc/PID/task/*/comm), stops it with
PTRACE_SEIZE + PTRACE_INTERRUPT (a stop of that thread alone: SIGSTOP
would stop the whole process), creates the file READY, and lets the thread
go on once the file RELEASE exists or TIMEOUT seconds have passed. A test
uses it to force an ordering (e.g. serve's sync thread behind its disk)
instead of hoping the machine is slow enough. The kernel detaches a
tracee when its tracer exits, so a killed holder never leaves the thread
stopped. Exit 0 when the thread was held and released, 2 otherwise.
"""
import ctypes
import os
import sys
import time

PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
WALL = 0x40000000

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


def ptrace(req, tid):
    if libc.ptrace(req, tid, None, None) < 0:
        err = ctypes.get_errno()
        raise OSError(err, "ptrace(%#x, %d): %s" % (req, tid, os.strerror(err)))


def find_thread(pid, comm):
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                if f.read().strip() == comm:
                    return int(tid)
        except OSError:
            pass
    return None


def main():
    if len(sys.argv) != 6:
        sys.stderr.write(__doc__)
        return 2
    pid, comm, ready, release = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    timeout = float(sys.argv[5])
    tid = find_thread(pid, comm)
    if tid is None:
        sys.stderr.write("thread_hold: no thread %s in %d\n" % (comm, pid))
        return 2
    ptrace(PTRACE_SEIZE, tid)
    ptrace(PTRACE_INTERRUPT, tid)
    os.waitpid(tid, WALL)
    open(ready, "w").close()
    end = time.monotonic() + timeout
    while not os.path.exists(release) and time.monotonic() < end:
        time.sleep(0.02)
    ptrace(PTRACE_DETACH, tid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
