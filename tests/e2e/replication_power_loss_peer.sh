#!/bin/sh
# A power cut on the secondary: its store's file system loses what was only
# in its page cache. serve acknowledges a seq only once what it applied is
# durable, so after serve starts again on what the disk kept, the primary
# resumes from the seq serve recorded and `twinfs sync` leaves both stores
# equal field for field.
#
# The peer's store is ext4 over a loop device whose image is a file in $T;
# its STATE is on another file system, so STATE/applied survives whole
# while the store loses what was not synced: a serve that recorded a seq
# before its data was durable would resume past changes its disk lost.
# The cut: serve is stopped (SIGSTOP: no new IO), the image copied twice
# (the copies must match; ext4 commits its journal every 300 s here and
# the page cache writes back after 30 s, so only serve's own syncs push
# anything out), serve killed; ext4 then mounts the copy and replays its
# journal. Three rounds, each with changes of every kind, cut at once
# after `twinfs sync` and again while a copy is still streaming.
. "$(dirname "$0")/lib.sh"
. "$TWINFS_SRC/tests/e2e/replication_lib.sh"
command -v mkfs.ext4 >/dev/null || skip "needs e2fsprogs"

IMG=$T/peer.img CRASH=$T/crash.img LOOP=""
P_STATE=$T/peer-state
on_exit '[ -n "$SERVE_PID" ] && kill -9 "$SERVE_PID" 2>/dev/null; sleep 0.2
	umount "$T/peer" 2>/dev/null || umount -l "$T/peer" 2>/dev/null
	[ -n "$LOOP" ] && losetup -d "$LOOP"'
truncate -s 256M "$IMG"
LOOP=$(losetup --show -f "$IMG") || fail "losetup"
mkfs.ext4 -q -F "$LOOP" || fail "mkfs.ext4"
rm -rf "$T/peer"; mkdir -p "$T/peer" "$P_STATE"
mount -o commit=300 "$LOOP" "$T/peer" || fail "mount ext4"
mkdir -p "$P_STORE"; sync -f "$T/peer"

# cut: the power cut described above; serve is then started again.
cut() {
	kill -STOP "$SERVE_PID"
	cp --sparse=always "$IMG" "$CRASH"
	cp --sparse=always "$IMG" "$T/crash2.img"
	cmp -s "$CRASH" "$T/crash2.img" || fail "the image changed while it was copied"
	rm -f "$T/crash2.img"
	kill -9 "$SERVE_PID"; kill -CONT "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null
	SERVE_PID=""
	umount "$T/peer" || umount -l "$T/peer"
	losetup -d "$LOOP"; LOOP=""
	mv "$CRASH" "$IMG"
	LOOP=$(losetup --show -f "$IMG") || fail "losetup after the cut"
	mount -o commit=300 "$LOOP" "$T/peer" || fail "mount after the cut"
	start_serve
}

# changes N: overwrites in place, an append, new files, a rename, a chmod,
# an xattr, a hard link, a symlink and a removal.
changes() {
	for i in 1 2 3; do
		head -c 4096 /dev/urandom |
			dd of="$MNT/d/f$i" bs=4096 seek="$1" conv=notrunc status=none
	done
	head -c 50000 /dev/urandom >>"$MNT/d/f4"
	for i in 1 2; do head -c 30000 /dev/urandom >"$MNT/d/new$1.$i"; done
	mv "$MNT/d/new$1.1" "$MNT/d/moved$1"
	chmod "60$1" "$MNT/d/f6"
	python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.r", sys.argv[2].encode())' \
		"$MNT/d/f7" "round $1"
	ln "$MNT/d/f8" "$MNT/d/link$1"
	ln -s "f$1" "$MNT/d/sym$1"
	rm -f "$MNT/d/new$(($1 - 1)).2"
}

start_serve
start_mount
mkdir "$MNT/d"
for i in 1 2 3 4 5 6 7 8; do head -c $((i * 40000)) /dev/urandom >"$MNT/d/f$i"; done
check "the first files synced" synced
for r in 1 2 3; do
	changes "$r"
	check "round $r synced" synced
	cut
	check "round $r: synced after the peer's cut" synced
	check "round $r: stores equal" stores_replicated
done
note "a cut while a copy streams"
mkdir "$MNT/big"
( i=0; while [ $i -lt 200 ]; do head -c 20000 /dev/urandom >"$MNT/big/b$i"; i=$((i + 1)); done ) &
writer=$!
wait_until 30 test -e "$MNT/big/b50" || fail "the copy did not start"
cut
wait "$writer"
check "after a cut in mid-stream: synced" synced
check "after a cut in mid-stream: stores equal" stores_replicated
dump_logs_on_failure
stop_mount
finish
