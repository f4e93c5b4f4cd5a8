# Helpers for the power-cut tests (source after lib.sh): a store folder on
# ext4 over a loop device whose image is a file in $T, and a power cut of
# the daemon that writes it.
#   pc_disk DIR        the file system, mounted at DIR (made; every later
#                      commit of its journal waits 300 s)
#   pc_cut PID [HOOK]  the cut: PID is stopped (SIGSTOP: no new IO), the
#                      image copied twice (the copies must match: no block
#                      IO reached it meanwhile; the page cache writes back
#                      after 30 s, so only the daemon's own syncs push
#                      anything out), HOOK run (a command string), PID
#                      killed; ext4 then mounts the copy at DIR again and
#                      replays its journal. The caller unmounts what PID
#                      served, after HOOK, if anything.
#   pc_base DIR        what the rounds change: DIR with f1 to f8 and sub/
#   pc_changes DIR N   changes of every kind for round N (below)
command -v mkfs.ext4 >/dev/null || skip "needs e2fsprogs"
PC_IMG=$T/pc-disk.img PC_LOOP="" PC_DIR=""
on_exit 'sleep 0.2; [ -n "$PC_DIR" ] && { umount "$PC_DIR" 2>/dev/null || umount -l "$PC_DIR" 2>/dev/null; }
	[ -n "$PC_LOOP" ] && losetup -d "$PC_LOOP"'

pc_disk() {
	PC_DIR=$1
	truncate -s 256M "$PC_IMG"
	PC_LOOP=$(losetup --show -f "$PC_IMG") || fail "losetup"
	mkfs.ext4 -q -F "$PC_LOOP" || fail "mkfs.ext4"
	rm -rf "$PC_DIR"; mkdir -p "$PC_DIR"
	mount -o commit=300 "$PC_LOOP" "$PC_DIR" || fail "mount ext4"
}

pc_cut() {
	kill -STOP "$1"
	cp --sparse=always "$PC_IMG" "$T/pc-crash.img"
	cp --sparse=always "$PC_IMG" "$T/pc-crash2.img"
	cmp -s "$T/pc-crash.img" "$T/pc-crash2.img" || fail "the image changed while it was copied"
	rm -f "$T/pc-crash2.img"
	[ -n "${2:-}" ] && eval "$2"
	kill -9 "$1"; kill -CONT "$1"; wait "$1" 2>/dev/null
	[ -n "${3:-}" ] && eval "$3"
	umount "$PC_DIR" || umount -l "$PC_DIR"
	losetup -d "$PC_LOOP"; PC_LOOP=""
	mv "$T/pc-crash.img" "$PC_IMG"
	PC_LOOP=$(losetup --show -f "$PC_IMG") || fail "losetup after the cut"
	mount -o commit=300 "$PC_LOOP" "$PC_DIR" || fail "mount after the cut"
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
