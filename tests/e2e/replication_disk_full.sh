#!/bin/sh
# The peer's disk full (its store on a small ext4 loop device, filled):
# 64 MiB copied into the mount while 8 MiB fit. The peer holds the stream
# and retries instead of dropping the link, so nothing reconnects and
# nothing is sent twice (before: a reconnect every 0.2-1 s, the same
# batch re-sent each time, 927 MB sent in 25 s for this 64 MiB tree);
# `twinfs sync` fails with the reason while the disk is full and status
# shows it; each side logs it once; once room is made the sync succeeds
# and both stores compare equal.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
command -v losetup >/dev/null || skip "losetup missing"
command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 missing"

truncate -s 96M "$T/peer.img"
mkfs.ext4 -q -F "$T/peer.img" || skip "mkfs.ext4 failed"
LOOP=$(losetup --show -f "$T/peer.img") || skip "no loop device"
# serve holds the filesystem: it goes first, then the mount, the device
pfs_cleanup() {
	kill_serve
	umount "$T/pfs" 2>/dev/null || umount -l "$T/pfs" 2>/dev/null
	losetup -d "$LOOP"
}
on_exit pfs_cleanup
mkdir -p "$T/pfs"
mount "$LOOP" "$T/pfs" || fail "cannot mount the loop device"
mkdir "$T/pfs/store"
P_STORE=$T/pfs/store
# all but 8 MiB taken by a file beside the store
python3 -c 'import shutil, sys
free = shutil.disk_usage(sys.argv[1]).free
open(sys.argv[1] + "/filler", "wb").write(b"\0" * max(0, free - (8 << 20)))' "$T/pfs"

st() { status_get "$1" "$2"; }
status_get() {
	"$TWINFS_BIN" status --state "$1" --json | python3 -c 'import json,sys
v=json.load(sys.stdin).get(sys.argv[1])
print(v if isinstance(v,str) else json.dumps(v))' "$2"
}

start_serve
start_mount
mkdir -p "$T/src"
for i in $(seq 1 32); do head -c 2M /dev/urandom >"$T/src/f$i"; done
tree=$((32 * 2 * 1048576))
cp -a "$T/src/." "$MNT/" || fail "the copy into the mount failed"
stalled() { [ "$(st "$A_STATE" peer_stalled)" != null ]; }
check "the primary learns that the peer is full" wait_until 20 stalled
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 3 >"$T/sync1.out" 2>&1; rc=$?
check "sync fails while the peer's disk is full (rc $rc)" [ $rc -ne 0 ]
check "... with the reason" grep -q 'No space left on device' "$T/sync1.out"
check "status shows it" sh -c "$TWINFS_BIN status --state '$A_STATE' --json | grep -q 'No space left'"
sleep 4	# the time the old backoff made some ten reconnects in
sent=$(st "$A_STATE" bytes_sent)
note "while full: bytes_sent $sent of a $tree-byte tree, reconnects $(st "$A_STATE" reconnects), serve connections $(st "$P_STATE" connections)"
check "no reconnect while full" [ "$(st "$A_STATE" reconnects)" = 0 ]
check "serve admitted one connection" [ "$(st "$P_STATE" connections)" = 1 ]
check "nothing re-sent ($sent <= $tree)" [ "$sent" -le "$tree" ]
check "the mount logs it once" [ "$(grep -c 'cannot apply changes for now' "$T/mount.log")" = 1 ]
check "serve logs it once" [ "$(grep -c 'the store is full' "$T/serve.log")" = 1 ]

rm -f "$T/pfs/filler"
check "sync succeeds once room is made" synced 60
sent=$(st "$A_STATE" bytes_sent)
note "after room: bytes_sent $sent"
check "every byte sent once ($sent = $tree)" [ "$sent" -eq "$tree" ]
check "the stall is over" [ "$(st "$A_STATE" peer_stalled)" = null ]
check "serve says so" grep -q 'takes writes again' "$T/serve.log"
check "stores equal" stores_replicated
stop_mount
kill_serve
finish
