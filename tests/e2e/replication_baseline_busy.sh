#!/bin/sh
# A baseline while names change: a store of 5,000 files and 200 MiB is sent
# to an empty peer while 20 directories are renamed and written to through
# the mount. readdir may miss a renamed entry, so the peer may fail a
# RENAME replay; the primary then sends a new baseline. After `twinfs sync`
# every entry of the primary is on the peer with the same content and
# attributes (names the primary renamed away may stay on the peer: a
# baseline does not delete).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

python3 - "$A_STORE" <<'PY'
import os, sys
os.chdir(sys.argv[1])
for d in range(50):
    os.makedirs("d%d/s" % d)
    for k in range(100):
        with open("d%d/s/f%d" % (d, k), "w") as f:
            f.write("x" * (k * 50 + 1))
PY
head -c 200M /dev/urandom >"$A_STORE/big"

start_serve
start_mount
resyncing() { "$TWINFS_BIN" status --state "$A_STATE" --json | grep -q '"resync":true'; }
wait_until 15 resyncing
check "status shows the baseline while it runs" [ $? -eq 0 ]
"$TWINFS_BIN" status --state "$A_STATE" >"$T/status.txt"
check "human status shows the baseline" grep -q '^resync:' "$T/status.txt"
for d in $(seq 0 5 49); do
	mv "$MNT/d$d" "$MNT/r$d" && echo more >>"$MNT/r$d/s/f7"
done
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 180
check "sync after a busy baseline exits 0" [ $? -eq 0 ]
python3 "$TWINFS_SRC/tests/e2e/tree_manifest.py" "$A_STORE" >"$T/m1"
python3 "$TWINFS_SRC/tests/e2e/tree_manifest.py" "$P_STORE" >"$T/m2"
sort "$T/m1" >"$T/s1"; sort "$T/m2" >"$T/s2"
comm -23 "$T/s1" "$T/s2" >"$T/missing"
check "every entry of the primary is on the peer, equal" [ ! -s "$T/missing" ]
head -5 "$T/missing"
grep -E 'baseline (sent|complete)' "$T/mount.log" | sed 's/^.*msg=/  /'

stop_mount
finish
