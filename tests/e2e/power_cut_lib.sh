# Helpers for the power-cut tests (source after lib.sh): store folders on
# ext4 over loop devices whose images are files in $T, and a power cut of
# the daemons that write them.
#   pc_disk DIR        a file system, mounted at DIR (made; every later
#                      commit of its journal waits 300 s); call once per
#                      disk (two for a cut of both nodes)
#   pc_cut "PIDS" [HOOK] [HOOK2]
#                      the cut of every disk at once: PIDS are stopped
#                      (SIGSTOP: no new IO), each image copied twice (the
#                      copies must match: no block IO reached it
#                      meanwhile; the page cache writes back after 30 s,
#                      so only the daemons' own syncs push anything out),
#                      HOOK run (a command string), PIDS killed, HOOK2
#                      run; ext4 then mounts each copy at its DIR again
#                      and replays its journal. HOOK2 unmounts what PIDS
#                      served, if anything.
#   pc_primary         the mount's store ($A_STORE) on such a disk at
#                      $T/primary, its STATE on another file system
#   pc_peer            serve's on one at $T/peer (the caller makes
#                      $P_STORE), its STATE on another file system
#   pc_base DIR        what the rounds change: DIR with f1 to f8 and sub/
#   pc_changes DIR N   changes of every kind for round N (below)
command -v mkfs.ext4 >/dev/null || skip "needs e2fsprogs"
PC_N=0
# (a function: lib.sh runs each line of an on_exit string on its own)
pc_cleanup() {
	sleep 0.2
	_i=1
	while [ "$_i" -le "$PC_N" ]; do
		eval "_d=\$PC_DIR_$_i _l=\$PC_LOOP_$_i"
		umount "$_d" 2>/dev/null || umount -l "$_d" 2>/dev/null
		[ -n "$_l" ] && losetup -d "$_l"
		_i=$((_i + 1))
	done
}
on_exit pc_cleanup

pc_disk() {
	PC_N=$((PC_N + 1))
	eval "PC_DIR_$PC_N=\$1 PC_LOOP_$PC_N=''"
	truncate -s 256M "$T/pc-disk$PC_N.img"
	_l=$(losetup --show -f "$T/pc-disk$PC_N.img") || fail "losetup"
	eval "PC_LOOP_$PC_N=$_l"
	mkfs.ext4 -q -F "$_l" || fail "mkfs.ext4"
	rm -rf "$1"; mkdir -p "$1"
	mount -o commit=300 "$_l" "$1" || fail "mount ext4"
}

pc_primary() {
	A_STATE=$T/primary-state
	on_exit '[ -n "$MOUNT_PID" ] && kill -9 "$MOUNT_PID" 2>/dev/null; umount -l "$MNT" 2>/dev/null'
	pc_disk "$T/primary"
	mkdir -p "$A_STORE" "$A_STATE"
	sync -f "$T/primary"
}

pc_peer() {
	P_STATE=$T/peer-state
	on_exit '[ -n "$SERVE_PID" ] && kill -9 "$SERVE_PID" 2>/dev/null'
	pc_disk "$T/peer"
	mkdir -p "$P_STATE"
	sync -f "$T/peer"
}

pc_cut() {
	kill -STOP $1
	_i=1
	while [ "$_i" -le "$PC_N" ]; do
		_img=$T/pc-disk$_i.img
		cp --sparse=always "$_img" "$T/pc-crash$_i.img"
		cp --sparse=always "$_img" "$T/pc-crash$_i.b"
		cmp -s "$T/pc-crash$_i.img" "$T/pc-crash$_i.b" ||
			fail "image $_i changed while it was copied"
		rm -f "$T/pc-crash$_i.b"
		_i=$((_i + 1))
	done
	[ -n "${2:-}" ] && eval "$2"
	kill -9 $1; kill -CONT $1
	for _p in $1; do wait "$_p" 2>/dev/null; done
	[ -n "${3:-}" ] && eval "$3"
	_i=1
	while [ "$_i" -le "$PC_N" ]; do
		eval "_d=\$PC_DIR_$_i _l=\$PC_LOOP_$_i"
		umount "$_d" || umount -l "$_d"
		losetup -d "$_l"; eval "PC_LOOP_$_i=''"
		mv "$T/pc-crash$_i.img" "$T/pc-disk$_i.img"
		_l=$(losetup --show -f "$T/pc-disk$_i.img") || fail "losetup after the cut"
		eval "PC_LOOP_$_i=$_l"
		mount -o commit=300 "$_l" "$_d" || fail "mount after the cut"
		_i=$((_i + 1))
	done
}

pc_base() {
	mkdir "$1" "$1/sub"
	for i in 1 2 3 4 5 6 7 8; do head -c $((i * 40000)) /dev/urandom >"$1/f$i"; done
	echo inside >"$1/sub/in"
}

# pc_changes DIR N: in DIR (pc_base), changes of every kind for round N:
# overwrites in place (no allocation: a journal commit carries none of
# their data), an append, a truncation, new files, a rename, a chmod, an
# xattr, an mtime set alone, a hard link, a symlink, a removal of round
# N-1's file, and the mode, an xattr and the mtime of the folder sub.
pc_changes() {
	_d=$1; shift
	for i in 1 2 3; do
		head -c 4096 /dev/urandom |
			dd of="$_d/f$i" bs=4096 seek="$1" conv=notrunc status=none
	done
	head -c 50000 /dev/urandom >>"$_d/f4"
	for i in 1 2; do head -c 30000 /dev/urandom >"$_d/new$1.$i"; done
	mv "$_d/new$1.1" "$_d/moved$1"
	chmod "60$1" "$_d/f6"
	python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.r", sys.argv[2].encode())' \
		"$_d/f7" "round $1"
	ln "$_d/f8" "$_d/link$1"
	ln -s "f$1" "$_d/sym$1"
	rm -f "$_d/new$(($1 - 1)).2"
	truncate -s $((100000 - $1 * 1000)) "$_d/f5"
	touch -m -d "@$((1500000000 + $1))" "$_d/f2"
	chmod "75$1" "$_d/sub"
	python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.d", sys.argv[2].encode())' \
		"$_d/sub" "round $1"
	touch -m -d "@$((1600000000 + $1))" "$_d/sub"
}
