#!/usr/bin/env python3
"""Sync-mode check: writes N files into MNT, fsync()s each, and right after
fsync returns (no sleep) reads the same file from the peer's store PEER and
compares. Prints the fsync latencies (median, p99, ms). Exit 0 iff every
file was on the peer at that moment.
Usage: fsync_check.py MNT PEER_STORE N SIZE"""
import os
import sys
import time


def main(mnt, peer, n, size):
    bad = 0
    lat = []
    for i in range(n):
        data = os.urandom(size)
        name = "fsync_%03d.bin" % i
        fd = os.open(os.path.join(mnt, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, data)
        t = time.monotonic()
        os.fsync(fd)
        lat.append((time.monotonic() - t) * 1000)
        try:
            with open(os.path.join(peer, name), "rb") as f:
                got = f.read()
        except OSError as e:
            got = None
            print("not on the peer after fsync: %s (%s)" % (name, e))
        if got != data:
            bad += 1
            if got is not None:
                print("peer has %d bytes of %d for %s" % (len(got), size, name))
        os.close(fd)
    lat.sort()
    print("fsync latency ms: median %.2f p99 %.2f max %.2f (n=%d)" % (
        lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))], lat[-1], n))
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
