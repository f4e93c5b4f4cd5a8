#!/bin/sh
# Changes made in the store while twinfs is not mounted reach the peer.
#  1. After a clean unmount the store is edited directly (as a restore
#     from backup or an rsync into it would): a file rewritten with the same
#     size and its old mtime put back, a file removed, a folder renamed, a
#     chmod, a chown, an xattr set, a symlink re-pointed, a new file, a new
#     folder tree, a new hard link. After the next mount `twinfs sync`
#     exits 0 and the stores are equal; the mount logged its scan.
#  2. The same with no manifest (as after a crash before it was written,
#     or a first mount of this version over a store the peer holds): the
#     whole store is rescanned and the stores are equal again.
#  3. A crash of the mount, then offline edits: only what changed since
#     that mount started is rescanned, and the stores are equal again.
#  4. An unchanged store: the mount-time scan queues nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"
command -v setfattr >/dev/null || skip "setfattr missing (apt install attr)"

start_serve
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"
mkdir -p "$MNT/docs/old" "$MNT/media" "$MNT/moving/inner"
for k in 1 2 3 4; do
	echo "doc $k" >"$MNT/docs/d$k"
	echo "inner $k" >"$MNT/moving/inner/i$k"
done
head -c 200000 /dev/urandom >"$MNT/media/blob"
echo "old" >"$MNT/docs/old/o1"
ln -s d1 "$MNT/docs/link"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null
check "first sync exits 0" [ $? -eq 0 ]
stop_mount
check "the stores are equal at unmount" stores_equal

edit_offline() {
	set -e
	cd "$A_STORE"
	mt=$(stat -c %y docs/d1)
	printf 'DOC 1\n' >docs/d1          # same size, old mtime back
	touch -d "$mt" docs/d1
	rm docs/d2
	mv moving moved
	chmod 0600 docs/d3
	chown 4242:4343 docs/d4
	setfattr -n user.tag -v offline media/blob
	ln -sfn d3 docs/link
	echo new >docs/new
	mkdir -p fresh/a/b
	echo deep >fresh/a/b/deep
	ln docs/d3 fresh/d3-hard
	rm -rf docs/old
}
( edit_offline ) >"$T/edit.log" 2>&1
check "the store is edited offline" [ $? -eq 0 ]

start_mount
wait_until 15 connected || fail "the mount did not reconnect"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60
check "sync after offline edits exits 0" [ $? -eq 0 ]
check "the stores are equal after offline edits" stores_equal
check_dirsym_mtimes
check "the mount logged its store scan" grep -q 'store scanned at mount' "$T/mount.log"
stop_mount

# 2. No manifest: the whole store is rescanned.
rm -f "$A_STATE/manifest"
( cd "$A_STORE" && echo more >docs/more && rm docs/d3 && chmod 0711 fresh ) \
	>>"$T/edit.log" 2>&1
start_mount
wait_until 15 connected || fail "the mount did not reconnect"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60
check "sync without a manifest exits 0" [ $? -eq 0 ]
check "the stores are equal without a manifest" stores_equal
check "the mount said it rescans the whole store" grep -q 'no manifest of the store' "$T/mount.log"
stop_mount

# 3. A crash (SIGKILL of the mount, no manifest written at unmount), then
# edits offline: the manifest of that mount's start limits the rescan to
# what changed since (the tree of 200 files made before is not rescanned).
start_mount
mkdir -p "$MNT/bulk"
for k in $(seq 1 200); do echo "bulk $k" >"$MNT/bulk/b$k"; done
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null
check "sync before the crash exits 0" [ $? -eq 0 ]
stop_mount
start_mount
echo "during the run" >"$MNT/docs/during"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null
kill -KILL "$MOUNT_PID"
wait "$MOUNT_PID" 2>/dev/null
umount -l "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null
( cd "$A_STORE" && echo "after the crash" >docs/crashed && rm bulk/b7 ) >>"$T/edit.log" 2>&1
: >"$T/mount.log"
start_mount
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60
check "sync after a crash and offline edits exits 0" [ $? -eq 0 ]
check "the stores are equal after the crash" stores_equal
changed=$(sed -n 's/.*store scanned at mount.*changed=\([0-9]*\).*/\1/p' "$T/mount.log")
note "changes found after the crash: ${changed:-?}"
check "after a crash only what changed is rescanned (changed=${changed:-?} <= 6)" \
	[ "${changed:-999}" -le 6 ]
check "after a crash the whole store is not rescanned" \
	sh -c "! grep -q 'no manifest of the store' '$T/mount.log'"
stop_mount

# 4. Nothing changed: nothing queued.
: >"$T/mount.log"
start_mount
"$TWINFS_BIN" status --state "$A_STATE" --json >"$T/status.json"
check "an unchanged store queues no scan" [ "$(json_field "$T/status.json" needs_scan)" -eq 0 ]
check "the scan found no change" grep -q 'store scanned at mount.*changed=0' "$T/mount.log"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null
check "sync of an unchanged store exits 0" [ $? -eq 0 ]
check "the stores are equal at the end" stores_equal
stop_mount
finish
