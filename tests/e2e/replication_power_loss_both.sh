#!/bin/sh
# A power cut of both nodes at once (one rack, one feed): each store's file
# system loses what was only in its page cache, while a copy streams. The
# primary's ack file lags its store's last syncfs, the peer's STATE/applied
# its own; after both start again on what their disks kept, `twinfs sync`
# must leave the stores equal field for field (the peer takes what the
# primary's disk kept).
#
# Each store is ext4 over a loop device whose image is a file in $T, cut as
# tests/e2e/power_cut_lib.sh says (both images captured while both daemons
# are stopped); STATE is on another file system. Three rounds, each a
# stream of new folders and files, in-place overwrites, renames, removals
# and an mtime set alone: the first cut with neither store synced since
# the stream began, the second after a sync of the primary's store, the
# third after a sync of the peer's.
. "$(dirname "$0")/lib.sh"
. "$TWINFS_SRC/tests/e2e/replication_lib.sh"
. "$TWINFS_SRC/tests/e2e/power_cut_lib.sh"

A_STATE=$T/primary-state P_STATE=$T/peer-state
on_exit '[ -n "$MOUNT_PID" ] && kill -9 "$MOUNT_PID" 2>/dev/null; umount -l "$MNT" 2>/dev/null'
pc_disk "$T/a"
pc_disk "$T/b"
A_STORE=$T/a/store P_STORE=$T/b/store
mkdir -p "$A_STORE" "$P_STORE" "$A_STATE" "$P_STATE"
sync -f "$T/a"; sync -f "$T/b"

start_serve
start_mount
pc_base "$MNT/d"
check "the first files synced" synced
for r in 1 2 3; do
	( i=0; while [ $i -lt 150 ]; do
		mkdir -p "$MNT/r$r/s$((i % 7))"
		head -c $((i * 300 + 1)) /dev/urandom >"$MNT/r$r/s$((i % 7))/n$i"
		head -c 4096 /dev/urandom |
			dd of="$MNT/d/f$((i % 8 + 1))" bs=4096 seek=$((i % 5)) conv=notrunc status=none
		[ $((i % 10)) = 3 ] && mv "$MNT/r$r/s$((i % 7))/n$((i - 1))" "$MNT/r$r/m$i"
		[ $((i % 13)) = 5 ] && rm -f "$MNT/r$r/s$((i % 7))/n$((i - 2))"
		[ $((i % 17)) = 1 ] && touch -m -d "@$((1500000000 + i))" "$MNT/d/f3"
		i=$((i + 1))
	done ) 2>/dev/null &
	writer=$!
	wait_until 30 test -e "$P_STORE/r$r/s$((r * 25 % 7))/n$((r * 25))" ||
		fail "round $r: the stream did not reach the peer"
	[ "$r" = 2 ] && sync -f "$T/a"
	[ "$r" = 3 ] && sync -f "$T/b"
	pc_cut "$MOUNT_PID $SERVE_PID" "" 'MOUNT_PID="" SERVE_PID=""; umount -l "$MNT"'
	wait "$writer"
	check "round $r: the cut left the stores different" sh -c \
		"! python3 '$TWINFS_SRC/tests/e2e/treecmp.py' '$A_STORE' '$P_STORE' >'$T/cut$r' 2>&1"
	note "$(sed -n 1p "$T/cut$r")"
	start_serve
	start_mount
	check "round $r: synced after both nodes' cut" synced 120
	check "round $r: stores equal" stores_replicated
done
dump_logs_on_failure
stop_mount
finish
