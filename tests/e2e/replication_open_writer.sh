#!/bin/sh
# A file kept open for writing (a new file opened write-only gets FUSE
# passthrough: the kernel writes the store file without telling us):
#  - async: `twinfs sync` while it is still open, right after a write (no
#    sleep), returns only once the peer has what was written, also after
#    in-place overwrites, and after a write through a shared mapping that
#    changed no ctime; without `twinfs sync` the peer gets it within
#    seconds, still open;
#  - sync mode: appending + fsync to a new file sends each block about
#    once (it used to re-send the whole file at every fsync), and every
#    fsync'ed append is on the peer when fsync returns.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

start_serve
start_mount
wait_until 15 connected || fail "mount never connected"

python3 - "$MNT" "$P_STORE" "$TWINFS_BIN" "$A_STATE" <<'PY'
import os, subprocess, sys, time
mnt, peer, twinfs, state = sys.argv[1:5]

def sync():
    r = subprocess.run([twinfs, "sync", "--state", state, "--timeout", "30", "-q"])
    if r.returncode != 0:
        print("twinfs sync failed: rc %d" % r.returncode)
        sys.exit(1)

def peer_has(name, want):
    try:
        with open(os.path.join(peer, name), "rb") as f:
            return f.read() == want
    except OSError:
        return False

path = os.path.join(mnt, "open.bin")
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
want = bytearray(os.urandom(1 << 20))
os.write(fd, want)
sync()
if not peer_has("open.bin", want):
    print("after a write and twinfs sync, the open file is not on the peer")
    sys.exit(1)
bad = 0
for i in range(20):
    # an in-place overwrite (same size) and an append, then sync at once
    patch = os.urandom(4096)
    off = (i * 37 % 200) * 4096
    os.pwrite(fd, patch, off)
    want[off:off + 4096] = patch
    tail = os.urandom(1000)
    os.pwrite(fd, tail, len(want))
    want += tail
    sync()
    if not peer_has("open.bin", bytes(want)):
        bad += 1
print("rounds where the peer lacked the writes after twinfs sync: %d of 20" % bad)
if bad:
    sys.exit(1)

# without twinfs sync: the peer gets it while the file stays open
more = os.urandom(300000)
os.pwrite(fd, more, len(want))
want += more
deadline = time.monotonic() + 15
while time.monotonic() < deadline and not peer_has("open.bin", bytes(want)):
    time.sleep(0.2)
if not peer_has("open.bin", bytes(want)):
    print("the peer did not get the open file's writes within 15 s")
    sys.exit(1)
os.close(fd)
PY
check "an open file's writes reach the peer: at twinfs sync, and by themselves" [ $? -eq 0 ]

# A file written without pause for ~8 s (a copy) is not re-sent while it
# grows: sent about once, at its close.
r0=$(awk '$1 == "rchar:" {print $2}' "/proc/$SERVE_PID/io")
python3 - "$MNT/stream.bin" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
block = os.urandom(1 << 20)
for i in range(80):
    os.write(fd, block)
    time.sleep(0.1)
os.close(fd)
PY
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null
r1=$(awk '$1 == "rchar:" {print $2}' "/proc/$SERVE_PID/io")
note "serve read $(( (r1 - r0) / 1048576 )) MiB from its socket for an 80 MiB file written over 8 s"
check "a file written without pause is sent about once (serve read $(( (r1 - r0) / 1048576 )) MiB)" [ $(( r1 - r0 )) -lt 125829120 ]
check "the streamed file is on the peer" cmp -s "$A_STORE/stream.bin" "$P_STORE/stream.bin"

# A file written without pause for longer (14 s) reaches the peer while it
# is still being written (a mark 10 s after the open), and each mark sends
# only the blocks the peer lacks, so it still goes over about once.
r0=$(awk '$1 == "rchar:" {print $2}' "/proc/$SERVE_PID/io")
python3 - "$MNT/long.bin" "$P_STORE/long.bin" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
block = os.urandom(256 << 10)
seen = 0
t0 = time.monotonic()
while time.monotonic() - t0 < 14:
    os.write(fd, block)
    time.sleep(0.05)
    try:
        seen = max(seen, os.stat(sys.argv[2]).st_size)
    except OSError:
        pass
os.close(fd)
print("the peer had %d KiB of it while it was written" % (seen >> 10))
sys.exit(0 if seen >= 4 << 20 else 1)
PY
check "a file written without pause reaches the peer while it is written" [ $? -eq 0 ]
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null
r1=$(awk '$1 == "rchar:" {print $2}' "/proc/$SERVE_PID/io")
sz=$(stat -c %s "$A_STORE/long.bin")
note "serve read $(( (r1 - r0) / 1048576 )) MiB for a $(( sz / 1048576 )) MiB file written over 14 s"
check "...and it went over about once" [ $(( r1 - r0 )) -lt $(( sz + sz / 2 )) ]
check "the long-written file is on the peer" cmp -s "$A_STORE/long.bin" "$P_STORE/long.bin"

# A write through a shared mapping into a page that is still dirty changes
# no ctime, so no scan can tell it happened. `twinfs sync` must still
# deliver it: its scan marks every open that can map the file writable.
python3 - "$MNT" "$P_STORE" "$TWINFS_BIN" "$A_STATE" <<'PY'
import mmap, os, subprocess, sys, time
mnt, peer, twinfs, state = sys.argv[1:5]
path = os.path.join(mnt, "mapped.bin")
fd1 = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)  # passthrough
os.write(fd1, b"\0" * (1 << 20))
fd2 = os.open(path, os.O_RDWR)  # passthrough too: the inode has a passthrough open
mm = mmap.mmap(fd2, 1 << 20, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
def peer_head():
    try:
        with open(os.path.join(peer, "mapped.bin"), "rb") as f:
            return f.read(4096)
    except OSError:
        return b""
mm[0:4096] = b"A" * 4096
# marked once idle for 2 s and sent while the page is still dirty
deadline = time.monotonic() + 20
while time.monotonic() < deadline and peer_head() != b"A" * 4096:
    time.sleep(0.2)
if peer_head() != b"A" * 4096:
    print("the first write through the mapping never reached the peer")
    sys.exit(1)
mm[0:4096] = b"B" * 4096  # the page is still dirty: no fault, no ctime
r = subprocess.run([twinfs, "sync", "--state", state, "--timeout", "30", "-q"])
ok = r.returncode == 0 and peer_head() == b"B" * 4096
mm.close(); os.close(fd2); os.close(fd1)
if not ok:
    print("after twinfs sync (rc %d) the peer lacks the second write through the mapping"
          % r.returncode)
sys.exit(0 if ok else 1)
PY
check "a write through a shared mapping is on the peer after twinfs sync" [ $? -eq 0 ]

stop_mount
start_mount --mode sync
wait_until 15 connected || fail "sync-mode mount never connected"
r0=$(awk '$1 == "rchar:" {print $2}' "/proc/$SERVE_PID/io")
python3 - "$MNT" "$P_STORE" <<'PY'
import os, sys
mnt, peer = sys.argv[1:3]
fd = os.open(os.path.join(mnt, "log.bin"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
data = b""
bad = 0
for i in range(1000):
    block = os.urandom(4096)
    os.write(fd, block)
    data += block
    os.fsync(fd)
    if i % 100 == 99:
        with open(os.path.join(peer, "log.bin"), "rb") as f:
            if f.read() != data:
                bad += 1
os.close(fd)
print("fsync'ed appends missing on the peer: %d of 10 checks" % bad)
sys.exit(1 if bad else 0)
PY
check "sync mode: every fsync'ed append is on the peer when fsync returns" [ $? -eq 0 ]
r1=$(awk '$1 == "rchar:" {print $2}' "/proc/$SERVE_PID/io")
# 1,000 x 4 KiB = 4 MB written; re-sending the file at each fsync read
# ~2 GB here. Allow 4x for frames, hashes and metadata.
note "serve read $(( (r1 - r0) / 1024 )) KiB from its socket for a 4000 KiB file"
check "sync mode: appends are sent about once (serve read $(( (r1 - r0) / 1024 )) KiB)" [ $(( r1 - r0 )) -lt 16384000 ]
finish
