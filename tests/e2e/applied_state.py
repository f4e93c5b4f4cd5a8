#!/usr/bin/env python3
"""applied_state.py STATE_DIR [SEQ DIRTY]: prints the secondary's
STATE/applied (seq, dirty, gen of the slot a reader takes), or writes SEQ
and DIRTY (0/1) into it as the secondary would (a new slot, generation + 1,
with its XXH64 check; netsync/roles/state.c). A test uses it to leave the
peer as a crash does: its store holding changes past the seq it recorded,
dirty. The peer must not be running."""
import re
import sys

SLOT_OFF, SLOT_LEN = 4096, 128
M = (1 << 64) - 1
P1, P2, P3 = 11400714785074694791, 14029467366897019727, 1609587929392839161
P4, P5 = 9650029242287828579, 2870177450012600261


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def _round(acc, lane):
    return (_rotl((acc + lane * P2) & M, 31) * P1) & M


def xxh64(data, seed=0):
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed, (seed - P1) & M]
        while i + 32 <= n:
            for k in range(4):
                v[k] = _round(v[k], int.from_bytes(data[i + 8 * k:i + 8 * k + 8], "little"))
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & M
        for k in range(4):
            h = (((h ^ _round(0, v[k])) * P1) + P4) & M
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while i + 8 <= n:
        h ^= _round(0, int.from_bytes(data[i:i + 8], "little"))
        h = (_rotl(h, 27) * P1 + P4) & M
        i += 8
    if i + 4 <= n:
        h ^= (int.from_bytes(data[i:i + 4], "little") * P1) & M
        h = (_rotl(h, 23) * P2 + P3) & M
        i += 4
    while i < n:
        h ^= (data[i] * P5) & M
        h = (_rotl(h, 11) * P1) & M
        i += 1
    h ^= h >> 33
    h = (h * P2) & M
    h ^= h >> 29
    h = (h * P3) & M
    return h ^ (h >> 32)


def parse(slot):
    line = slot.decode(errors="replace")
    m = re.match(r"twinfs applied seq=(\d+) dirty=([01]) gen=(\d+)( check=([0-9a-f]{16}))", line)
    if not m or xxh64(slot[:m.start(4)]) != int(m.group(5), 16):
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def fmt(seq, dirty, gen):
    text = b"twinfs applied seq=%020d dirty=%d gen=%020d" % (seq, dirty, gen)
    text += b" check=%016x\n" % xxh64(text)
    return text + b" " * (SLOT_LEN - 1 - len(text)) + b"\n"


def main():
    path = sys.argv[1] + "/applied"
    with open(path, "rb") as f:
        buf = f.read()
    slots = [parse(buf[:SLOT_LEN]), parse(buf[SLOT_OFF:SLOT_OFF + SLOT_LEN])]
    best = max((s for s in slots if s), key=lambda s: s[2])
    if len(sys.argv) == 2:
        print("seq=%d dirty=%d gen=%d" % best)
        return 0
    gen = best[2] + 1
    with open(path, "r+b") as f:
        f.seek(0 if gen & 1 else SLOT_OFF)
        f.write(fmt(int(sys.argv[2]), int(sys.argv[3]), gen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
