#!/bin/sh
# serve keeps serving while it hashes a large file for a resync's HASH_REQ
# (netsync/secondary/hashjob.c): a baseline asks for the block hashes of a
# 2 GiB file that is not in the page cache, and `twinfs status` on the
# peer answers within 1 s all along (the hash takes seconds: it used to
# run on serve's loop, which then answered nothing, heartbeats included).
# The file is one inode linked into both stores (one copy on the disk);
# the stores end equal (treecmp).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
jkey() { "$TWINFS_BIN" status --state "$1" --json | python3 -c \
	"import json,sys; print(json.load(sys.stdin)[sys.argv[1]])" "$2"; }

python3 - "$A_STORE/big" <<'PY'
import os, sys
blk = os.urandom(1 << 20)
with open(sys.argv[1], "wb") as f:
    for i in range(2048):
        f.write(blk[i % 997:] + blk[:i % 997])
    f.flush()
    os.fsync(f.fileno())
    os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
PY
ln "$A_STORE/big" "$P_STORE/big"
start_serve
start_mount
synced 120 &
SYNC=$!
track_pid $SYNC
worst=$(python3 - "$TWINFS_BIN" "$P_STATE" "$SYNC" <<'PY'
import os, subprocess, sys, time
binary, state, sync = sys.argv[1], sys.argv[2], int(sys.argv[3])
worst = 0.0
while True:
    t0 = time.monotonic()
    subprocess.run([binary, "status", "--state", state, "--json"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=30)
    worst = max(worst, time.monotonic() - t0)
    try:
        os.kill(sync, 0)
    except ProcessLookupError:
        break
    if open(f"/proc/{sync}/stat").read().split()[2] == "Z":
        break
    time.sleep(0.05)
print("%.3f" % worst)
PY
)
wait $SYNC
rc=$?
hashed=$(jkey "$P_STATE" delta_hashed_bytes)
note "slowest status during the resync: ${worst} s; the peer hashed $hashed bytes"
check "the resync finished" [ "$rc" -eq 0 ]
check "the peer hashed the 2 GiB file" [ "$hashed" -ge $((2 << 30)) ]
check "status answered within 1 s while the peer hashed" python3 -c "import sys; sys.exit(not float(sys.argv[1]) < 1.0)" "$worst"
check "stores equal (treecmp)" same_stores "$A_STORE" "$P_STORE"
finish
