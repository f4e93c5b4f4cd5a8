#!/bin/sh
# Baseline (full-state) sends: data the journal never saw reaches the peer.
#  1. A store filled before any mount (200 small files in nested dirs, a
#     20 MiB file, a symlink, a hard link pair, a fifo, an xattr, modes,
#     owners, mtimes), then the first `mount --peer` against an empty
#     `serve`: after `twinfs sync` the peer's store equals it. More writes
#     through the mount: sync, equal again.
#  2. The peer restored from an older copy (state and store behind what the
#     primary had acked: journal_rewind says -ERANGE): equal after one more
#     write and a sync, including the removal (PRUNE) of what the primary
#     deleted since the copy and of junk only the restored copy has.
#  3. A new peer at the same address (state and store wiped): equal again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
command -v setfattr >/dev/null || skip "setfattr missing (apt install attr)"

fill() {
	set -e
	cd "$A_STORE"
	for i in $(seq 0 9); do
		d=top$i/mid$((i % 3))/leaf
		mkdir -p "$d"
		for k in $(seq 0 19); do
			echo "file $i $k" >"$d/f$k"
		done
	done
	head -c 20971520 /dev/urandom >big
	ln -s top0/mid0/leaf/f0 link
	ln -s ../nowhere dangling
	echo shared >hard1
	ln hard1 top1/hard2
	mkfifo fifo
	setfattr -n user.color -v blue top0/mid0/leaf/f1
	setfattr -n user.dir -v yes top2
	chmod 0640 top0/mid0/leaf/f1
	chmod 0700 top3
	chown 1234:4321 big
	touch -d '2020-01-02 03:04:05' top0/mid0/leaf/f1
	touch -d '2019-06-07 08:09:10' big
}
( fill ) >"$T/fill.log" 2>&1
check "the store is filled before the mount" [ $? -eq 0 ]

start_serve
t0=$(date +%s.%N)
start_mount
# Changes while the baseline may be running: new files, a directory
# rename, an append, a file move and a removal of pre-filled entries.
during() {
	set -e
	mkdir "$MNT/during"
	for k in $(seq 0 49); do echo "during $k" >"$MNT/during/n$k"; done
	mv "$MNT/top6" "$MNT/top6-renamed"
	echo appended >>"$MNT/top5/mid2/leaf/f3"
	mv "$MNT/top7/mid1/leaf/f4" "$MNT/top7/moved-f4"
	rm "$MNT/top8/mid2/leaf/f5"
}
( during ) >"$T/during.log" 2>&1 &
writer=$!
wait_until 15 connected || fail "the mount did not connect to the peer"
wait $writer
check "writes during the baseline succeed" [ $? -eq 0 ]
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60
check "sync after the first mount exits 0" [ $? -eq 0 ]
t1=$(date +%s.%N)
echo "baseline of 200+ files / 20 MiB: $(echo "$t1 - $t0" | bc) s (mount start to sync done)"
check "the peer has the whole pre-filled store" replicated
"$TWINFS_BIN" status --state "$A_STATE" --json >"$T/status.json"
check "status reports the baseline as done" grep -q '"resync":false' "$T/status.json"
check "the log says a baseline removes peer-only names" \
	grep -q 'the peer removes names it alone has' "$T/mount.log"
ino1=$(stat -c %i "$P_STORE/hard1"); ino2=$(stat -c %i "$P_STORE/top1/hard2")
check "the hard link pair shares one inode on the peer" [ "$ino1" = "$ino2" ]

# A copy of the peer as it is now: restored later, it is behind.
kill_serve
cp -a "$P_STATE" "$T/old_state"
cp -a "$P_STORE" "$T/old_store"
start_serve
mkdir "$MNT/later"
for k in $(seq 0 29); do echo "later $k" >"$MNT/later/g$k"; done
echo changed >"$MNT/top0/mid0/leaf/f2"
# deletions the old copy does not know about
rm -r "$MNT/top9"
rm "$MNT/top4/mid1/leaf/f0" "$MNT/dangling"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60
check "sync after more writes exits 0" [ $? -eq 0 ]
check "the peer has the later writes" replicated

# 2. Restore the older copy: its applied seq is below the primary's ack.
kill_serve
rm -rf "$P_STATE" "$P_STORE"
cp -a "$T/old_state" "$P_STATE"
cp -a "$T/old_store" "$P_STORE"
# junk only the restored copy has, a whole subtree and single entries
mkdir -p "$P_STORE/stray/deep/er"
echo junk >"$P_STORE/stray/deep/er/file"
echo junk >"$P_STORE/top0/mid0/leaf/extra"
ln -s nowhere "$P_STORE/top2/extra-link"
check "the restored copy has names the primary deleted" \
	[ -d "$P_STORE/top9" ] && [ -e "$P_STORE/top4/mid1/leaf/f0" ]
start_serve
echo one-more >"$MNT/after-restore"
wait_until 20 connected || fail "the mount did not reconnect to the restored peer"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60
check "sync after restoring an old peer exits 0" [ $? -eq 0 ]
check "the restored peer is brought up to date" replicated
check "names only the peer had are gone" \
	sh -c '[ ! -e "$1/top9" ] && [ ! -e "$1/stray" ] && [ ! -e "$1/top0/mid0/leaf/extra" ] && [ ! -L "$1/top2/extra-link" ]' _ "$P_STORE"
check "the log says why it sent a baseline" \
	grep -q 'the peer is behind what it acknowledged' "$T/mount.log"

# 3. A new, empty peer at the same address.
kill_serve
rm -rf "$P_STATE" "$P_STORE"
mkdir -p "$P_STATE" "$P_STORE"
start_serve
echo new-peer >"$MNT/after-new-peer"
wait_until 20 connected || fail "the mount did not reconnect to the new peer"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60
check "sync to a new peer exits 0" [ $? -eq 0 ]
check "the new peer gets the whole store" replicated

stop_mount
finish
