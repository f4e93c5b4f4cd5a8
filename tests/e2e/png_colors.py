#!/usr/bin/env python3
"""png_colors.py FILE.png RRGGBB... — counts the pixels of each colour in a
PNG (8-bit RGB or RGBA, non-interlaced, as Chromium writes its screenshots),
within 6 per channel, and the rightmost column that is not white. Reads the
PNG with zlib alone (no PIL). Prints one JSON object."""
import json
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit("%s: not a PNG" % path)
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise SystemExit("%s: unsupported PNG (depth %d, colour type %d)" % (path, depth, ctype))
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(idat), w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def main():
    w, h, bpp, rows = read_png(sys.argv[1])
    want = [tuple(int(c[i:i + 2], 16) for i in (0, 2, 4)) for c in sys.argv[2:]]
    counts = [0] * len(want)
    rightmost = -1
    for line in rows:
        for x in range(w):
            px = line[x * bpp:x * bpp + 3]
            if px[0] < 250 or px[1] < 250 or px[2] < 250:
                rightmost = max(rightmost, x)
            for k, c in enumerate(want):
                if abs(px[0] - c[0]) <= 6 and abs(px[1] - c[1]) <= 6 and abs(px[2] - c[2]) <= 6:
                    counts[k] += 1
    print(json.dumps({"width": w, "height": h, "rightmost": rightmost,
                      "counts": dict(zip(sys.argv[2:], counts))}))


main()
