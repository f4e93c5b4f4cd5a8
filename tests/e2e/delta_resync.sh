#!/bin/sh
# The live replicator's resyncs go by block-hash delta:
#  - a peer restored from an older copy (~1.5 % of the bytes changed since)
#    gets a baseline that moves at most 2x the changed bytes over the wire
#    (serve's bytes_received counts every frame the primary sent);
#  - a primary killed while files it was writing were not yet on the peer
#    resends by delta: status counts the files a resync read (the dirty
#    files, each read by its recovery mark and by the mount-time scan's
#    walk of its path), and the blocks the peer had are not sent again.
# Both end with the stores equal by treecmp.py.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
jkey() { "$TWINFS_BIN" status --state "$1" --json | python3 -c \
	"import json,sys; print(json.load(sys.stdin)[sys.argv[1]])" "$2"; }

start_serve
start_mount
mkdir "$MNT/d"
head -c $((16 << 20)) /dev/urandom >"$MNT/big"
for i in $(seq 1 150); do head -c 20000 /dev/urandom >"$MNT/d/f$i"; done
synced
stop_mount
kill_serve
cp -a "$P_STORE" "$T/old-store"; cp -a "$P_STATE" "$T/old-state"

# ~1.5 % of the 19 MiB changes: two blocks of the big file, two small
# files rewritten
start_serve
start_mount
python3 - "$MNT/big" <<'PY'
import os, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(5 << 20)
    f.write(os.urandom(256 << 10))
PY
for i in 7 8; do head -c 20000 /dev/urandom >"$MNT/d/f$i"; done
synced
stop_mount
kill_serve
changed=$(( (256 << 10) + 2 * 20000 ))

# the peer comes back from the older copy
rm -rf "$P_STORE" "$P_STATE"; cp -a "$T/old-store" "$P_STORE"; cp -a "$T/old-state" "$P_STATE"
start_serve
start_mount
synced 120
check "after the restored peer's baseline: stores equal (treecmp)" same_stores "$A_STORE" "$P_STORE"
wire=$(jkey "$P_STATE" bytes_received)
matched=$(jkey "$A_STATE" resync_bytes_matched)
note "changed $changed bytes; the baseline moved $wire bytes to the peer; $matched bytes matched"
check "the wire carried at most 2x the changed bytes" [ "$wire" -le $((2 * changed)) ]
check "the rest was matched by block hashes" [ "$matched" -ge $((16 << 20)) ]

# a crash with writes the peer does not have yet
stop_mount
start_mount
kill -STOP "$SERVE_PID"
for i in 101 102 103 104 105; do
	head -c 3000 /dev/urandom | dd of="$MNT/d/f$i" bs=3000 seek=2 conv=notrunc 2>/dev/null
done
sync
kill -KILL "$MOUNT_PID"; wait "$MOUNT_PID" 2>/dev/null
umount -l "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null
kill -CONT "$SERVE_PID"
start_mount
synced 60
check "after the crash: stores equal (treecmp)" same_stores "$A_STORE" "$P_STORE"
read=$(jkey "$A_STATE" resync_files_read)
note "files read by the resync after the crash: $read (5 dirty files)"
check "the resync read only the 5 dirty files (each at most twice)" [ "$read" -ge 5 ] && [ "$read" -le 10 ]
finish
