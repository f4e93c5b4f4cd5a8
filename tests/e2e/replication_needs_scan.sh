#!/bin/sh
# A directory recorded as NEEDS_SCAN (the journal was full while the peer
# was away) is sent as a whole subtree: with journal.size_limit at its
# 16 MiB minimum and the peer stopped, ~20 MiB of chmods on a long path fill
# the journal; a directory tree made after that is journalled only as
# "needs scan" of its top. After the peer is back and `twinfs sync`, the
# peer's store equals the primary's, that tree included.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

cat >"$T/small.yaml" <<YAML
journal:
  size_limit: 16M
YAML
start_serve
start_mount --config "$T/small.yaml"
wait_until 15 connected || fail "the mount did not connect to the peer"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null
check "first sync exits 0" [ $? -eq 0 ]
kill_serve

python3 - "$MNT" <<'PY' >"$T/fill.log" 2>&1
import os, sys
mnt = sys.argv[1]
deep = os.path.join(mnt, *(["d" * 200] * 18))
os.makedirs(deep)
a = os.path.join(deep, "a" * 200)
open(a, "w").close()
for i in range(5000):
    os.chmod(a, 0o600 if i % 2 else 0o644)
PY
check "the journal fills with chmods" [ $? -eq 0 ]
mkdir -p "$MNT/scanned/sub"
for k in $(seq 0 19); do echo "scan $k" >"$MNT/scanned/f$k"; done
head -c 3000000 /dev/urandom >"$MNT/scanned/sub/data"
ln -s f0 "$MNT/scanned/link"
ln "$MNT/scanned/f1" "$MNT/scanned/sub/f1-hard"
"$TWINFS_BIN" status --state "$A_STATE" --json >"$T/status.json"
check "the journal recorded needs-scan" \
	python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["needs_scan"] == 0)' "$T/status.json"

start_serve
wait_until 20 connected || fail "the mount did not reconnect"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60
check "sync after the overflow exits 0" [ $? -eq 0 ]
check "the peer has the needs-scan subtree" replicated
check "the log says it sent the subtree" grep -q 'sending its whole subtree' "$T/mount.log"

stop_mount
finish
