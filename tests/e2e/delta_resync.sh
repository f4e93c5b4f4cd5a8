#!/bin/sh
# The live replicator's resyncs go by block-hash delta:
#  - a peer restored from an older copy (~1.5 % of the bytes changed since)
#    gets a baseline that moves at most 2x the changed bytes over the wire
#    (serve's bytes_received counts every frame the primary sent);
#  - a primary killed while files it was writing were not yet on the peer
#    resends by delta: each dirty file is read once on each side (its
#    recovery mark; the mount-time scan leaves it to that), no other file,
#    and the blocks the peer had are not sent again;
#  - a baseline of an unchanged tree reads no content on either side once
#    both hash caches know the files (the sender's STATE/hashcache and
#    serve's), though a baseline asks for every file's block hashes.
# Each ends with the stores equal by treecmp.py.
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
hashed0=$(jkey "$P_STATE" delta_hashed_bytes)
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
bread=$(jkey "$A_STATE" resync_bytes_read)
phashed=$(( $(jkey "$P_STATE" delta_hashed_bytes) - hashed0 ))
note "after the crash: the primary read $read files, $bread bytes; the peer hashed $phashed bytes (5 dirty files of 20000 bytes)"
check "the resync read the 5 dirty files once each, no other" [ "$read" -eq 5 -a "$bread" -eq 100000 ]
check "the peer read each of them at most once (its cache knew the rest)" [ "$phashed" -le 100000 ]

# baselines of an unchanged tree: the first fills the hash caches, the
# second reads nothing (serve saves its cache when it stops)
rebaseline() {
	stop_mount
	kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null
	rm -f "$P_STATE/applied"	# the peer has "never applied anything"
	start_serve
	start_mount
	synced 60
}
# a list is kept only once the file's ctime is over 2 s old (a write in
# the same tick need not move it: netsync/delta/hashcache.c)
settled() { [ -z "$(find "$A_STORE" "$P_STORE" -newerct "@$(($(date +%s) - 3))" -print -quit)" ]; }
wait_until 10 settled || fail "the stores kept changing"
rebaseline
rebaseline
read=$(jkey "$A_STATE" resync_files_read)
bread=$(jkey "$A_STATE" resync_bytes_read)
phashed=$(jkey "$P_STATE" delta_hashed_bytes)
asked=$(jkey "$A_STATE" resync_files)
note "a baseline of the unchanged tree: $asked files compared, the primary read $bread bytes in $read files, the peer $phashed bytes"
check "it compared every file" [ "$asked" -ge 151 ]
check "and read no content on either side" [ "$read" -eq 0 -a "$bread" -eq 0 -a "$phashed" -eq 0 ]
check "after the baselines: stores equal (treecmp)" same_stores "$A_STORE" "$P_STORE"
finish
