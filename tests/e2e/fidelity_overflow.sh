#!/bin/sh
# Fidelity: after the journal overflowed (journal.size_limit at its 16 MiB
# minimum, the peer dead), removals and renames made through the mount
# still reach the peer: rm -rf of a directory, mv of a directory, rm of a
# file and mv of a file to another directory. After the peer restarts and
# `twinfs sync`, the stores are equal (treecmp). The mtimes of the
# directories these change are set explicitly afterwards, so that this
# tests the removals and renames, not directory mtimes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

cat >"$T/small.yaml" <<YAML
journal:
  size_limit: 16M
YAML
start_serve
start_mount --config "$T/small.yaml"
wait_until 15 connected || fail "the mount did not connect to the peer"
mkdir -p "$MNT/DIR/sub" "$MNT/DIR2/sub" "$MNT/other"
for f in 1 2 3; do echo "$f" >"$MNT/DIR/sub/f$f"; echo "$f" >"$MNT/DIR2/sub/g$f"; done
echo file >"$MNT/FILE"; echo file2 >"$MNT/FILE2"
check "first sync exits 0" synced 30
kill_serve

python3 - "$MNT" <<'PY' >"$T/fill.log" 2>&1
import os, sys
deep = os.path.join(sys.argv[1], "fill", *(["d" * 200] * 17))
os.makedirs(deep)
a = os.path.join(deep, "a" * 200)
open(a, "w").close()
for i in range(5000):
    os.chmod(a, 0o600 if i % 2 else 0o644)
PY
check "the journal fills with chmods" [ $? -eq 0 ]
rm -rf "$MNT/DIR"
mv "$MNT/DIR2" "$MNT/DIR3"
rm "$MNT/FILE"
mv "$MNT/FILE2" "$MNT/other/FILE2"
find "$MNT/fill" -exec touch -h -d @1000000000 {} +
touch -d @1000000000 "$MNT/other" "$MNT/DIR3"
"$TWINFS_BIN" status --state "$A_STATE" --json >"$T/status.json"
check "the journal overflowed (needs_scan recorded)" \
	python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["needs_scan"] == 0)' "$T/status.json"

start_serve
wait_until 20 connected || fail "the mount did not reconnect"
check "sync after the overflow exits 0" synced 60
check "the peer has the removals and renames (treecmp)" stores_replicated

stop_mount
finish
