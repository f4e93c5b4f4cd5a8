#!/bin/sh
# A power cut on the primary after a baseline hashed content that was only
# in the store's page cache. The sender keeps each file's block hashes in
# STATE/hashcache, keyed by (device, inode, size, mtime, ctime), and writes
# the file when a baseline completes. ext4 commits an in-place overwrite's
# new mtime and ctime with its journal (every 5 s, or at any fsync on that
# file system) but not its data, so after the cut the file has the key of
# the hashed content over the old content. A cache believed across the cut
# says this node holds what the peer holds, the resync of the file sends
# no block, and `twinfs sync` says synced over stores that differ.
#
# The ordering is forced: the journal's ack-file thread (tw-ackfile, whose
# syncfs would make the overwrite durable) is held from before the
# overwrite until the disk is captured, and a file written and fsynced
# directly in the store's file system commits the overwritten file's new
# times without its data. The baseline comes over 2 s after the
# overwrites, so that the cache keeps their lists (hashcache.c). The peer is restored from an older copy so that
# the primary sends a baseline, which reads (and caches) the file.
. "$(dirname "$0")/lib.sh"
. "$TWINFS_SRC/tests/e2e/replication_lib.sh"
. "$TWINFS_SRC/tests/e2e/power_cut_lib.sh"

pc_primary

start_serve
start_mount
mkdir "$MNT/d"
head -c $((2 << 20)) /dev/urandom >"$MNT/d/f"
for i in 1 2 3; do head -c 300000 /dev/urandom >"$MNT/d/g$i"; done
check "the first files synced" synced
stop_mount
kill_serve
cp -a "$P_STORE" "$T/old-store"; cp -a "$P_STATE" "$T/old-state"

start_serve
start_mount
python3 "$(dirname "$0")/thread_hold.py" "$MOUNT_PID" tw-ackfile "$T/hold.ready" \
	"$T/hold.release" 120 2>"$T/hold.err" &
hold=$!; track_pid $hold
wait_until 10 test -e "$T/hold.ready" || fail "the ack-file thread could not be held"
for off in 8 20; do
	head -c $((256 << 10)) /dev/urandom | dd of="$MNT/d/f" bs=64k seek=$off conv=notrunc status=none
done
head -c 4096 /dev/urandom | dd of="$MNT/d/g2" bs=4096 seek=3 conv=notrunc status=none
check "the overwrites synced" synced
# the cache keeps a list only once the file's ctime is over 2 s old (a
# write in the same tick need not move it); the data stays in the page
# cache meanwhile (written back after 30 s)
settled() { [ -z "$(find "$A_STORE" -newerct "@$(($(date +%s) - 3))" -print -quit)" ]; }
wait_until 10 settled || fail "the store kept changing"

note "the peer comes back from an older copy: a baseline reads and caches the files"
kill_serve
rm -rf "$P_STORE" "$P_STATE"; cp -a "$T/old-store" "$P_STORE"; cp -a "$T/old-state" "$P_STATE"
start_serve
check "the baseline synced" synced 60
check "stores equal before the cut" stores_replicated
check "the baseline wrote the hash cache" wait_until 10 test -s "$A_STATE/hashcache"
python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)
os.write(fd, b"x"); os.fsync(fd)' "$T/primary/commit"

pc_cut "$MOUNT_PID" 'touch "$T/hold.release"; wait "$hold"' 'MOUNT_PID=""; umount -l "$MNT"'
check "the cut lost the overwrites' data and kept their times" sh -c \
	"! python3 '$TWINFS_SRC/tests/e2e/treecmp.py' '$A_STORE' '$P_STORE' >'$T/lost' 2>&1 &&
	 grep -q 'd/f: content' '$T/lost' && ! grep -q 'd/f: mtime' '$T/lost'"
note "$(head -n 4 "$T/lost")"
start_mount
check "synced after the cut" synced
check "stores equal after the cut" stores_replicated
check "the hash cache from before the cut was set aside" \
	grep -q 'hash cache set aside' "$T/mount.log"
dump_logs_on_failure
stop_mount
finish
