#!/bin/sh
# The mount behaves like a local filesystem: the same sequence of POSIX
# operations (tests/e2e/fs/posix_ops.c) on a plain directory and on a
# twinfs mount gives the same results, errno for errno, and the same
# tree; the store holds exactly the user's files. Also: `twinfs mount`
# errors and exit codes, and a clean end by SIGTERM and by fusermount3 -u.
# TWINFS_MOUNT_ARGS adds mount flags (the suite also runs it with
# --no-passthrough).
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
OPS=${TWINFS_BUILD:?}/tests/e2e/fs_posix_ops
[ -x "$OPS" ] || fail "missing $OPS (build first)"

mkdir -p "$T/plain" "$T/store" "$T/mnt" "$T/state"
track_mount "$T/mnt"
track_mount "$T/plain"	# only if an error case below wrongly mounted it

mount_pid() { pgrep -f -- "--mountpoint $1( |\$)" | head -n1; }

"$TWINFS_BIN" mount --store "$T/store" --state "$T/state" --mountpoint "$T/mnt" \
	${TWINFS_MOUNT_ARGS:-} >"$T/mount.out" 2>&1; rc=$?
check "mount exits 0" [ $rc -eq 0 ]
check "mounted when the command returns" is_mounted "$T/mnt"
pid=$(mount_pid "$T/mnt"); [ -n "$pid" ] && track_pid "$pid"
check "store is empty after mount" [ -z "$(ls -A "$T/store")" ]

"$OPS" "$T/plain" >"$T/plain.out" 2>&1
"$OPS" "$T/mnt" >"$T/mnt.out" 2>&1
check "posix_ops finished on the plain dir" grep -q "^---- tree" "$T/plain.out"
check "posix_ops finished on the mount" grep -q "^---- tree" "$T/mnt.out"
if ! diff -u "$T/plain.out" "$T/mnt.out" >"$T/diff"; then
	cat "$T/diff" >&2
fi
check "same results and tree on the mount as on a plain directory" \
	[ ! -s "$T/diff" ]
check "nobody could not unlink root's file in a sticky dir" \
	grep -q "^nobody: unlink root file in sticky: EPERM" "$T/mnt.out"
check "nobody could write root's 0666 file" \
	grep -q "^nobody: write root 0666 file: ok" "$T/mnt.out"
check "a file made by nobody in a setgid dir takes the dir's group" \
	grep -q "^./sgid/f [0-7]* 65534:100 " "$T/mnt.out"
check "files made by nobody belong to nobody" \
	grep -q "^./sticky/mine2 [0-7]* 65534:65534" "$T/mnt.out"
# A write drops file capabilities and, for a writer without CAP_FSETID,
# the setuid bit, on the mount as on a plain directory. The mount answers
# the kernel's security.capability question for files it created from
# memory (fs_getxattr); setting a capability must reset that.
caps_after_write() {
	f=$1/capfile
	rm -f "$f" && : >"$f" || return 1
	setcap cap_net_raw+ep "$f" || return 1
	[ -n "$(getcap "$f")" ] || return 1
	echo data >>"$f"
	getcap "$f"
}
suid_after_write() {
	f=$1/suidfile
	rm -f "$f" && : >"$f" && chmod 4777 "$f" || return 1
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'echo x >>"$1"' _ "$f" || return 1
	stat -c %a "$f"
}
if command -v setcap >/dev/null 2>&1; then
	check "setcap works on the mount" sh -c 'f="$1/capprobe"; : >"$f" && setcap cap_net_raw+ep "$f" && [ -n "$(getcap "$f")" ]' _ "$T/mnt"
	check "a write drops file capabilities on the plain dir" [ -z "$(caps_after_write "$T/plain")" ]
	check "a write drops file capabilities on the mount" [ -z "$(caps_after_write "$T/mnt")" ]
	check "capabilities gone in the store too" [ -z "$(getcap "$T/store/capfile")" ]
	rm -f "$T/plain/capfile" "$T/mnt/capfile" "$T/mnt/capprobe"
fi
check "nobody's write clears setuid on the plain dir" [ "$(suid_after_write "$T/plain")" = 777 ]
check "nobody's write clears setuid on the mount" [ "$(suid_after_write "$T/mnt")" = 777 ]
rm -f "$T/plain/suidfile" "$T/mnt/suidfile"

check "store holds exactly the user's files" \
	sh -c '[ "$(cd "$1/plain" && ls -A | sort)" = "$(cd "$1/store" && ls -A | sort)" ]' _ "$T"

# Errors and exit codes; nothing is mounted by a failed attempt. (Another
# store: a second mount of the same one is refused before the mountpoint
# is looked at, as its second writer.)
mkdir -p "$T/store-b"
"$TWINFS_BIN" mount --store "$T/store-b" --state "$T/state2" --mountpoint "$T/mnt" \
	>/dev/null 2>"$T/err"; rc=$?
check "busy mountpoint fails" [ $rc -ne 0 ]
check "busy mountpoint says so" grep -qi "busy" "$T/err"

"$TWINFS_BIN" mount --store "$T/nostore" --state "$T/state3" --mountpoint "$T/plain" \
	>/dev/null 2>"$T/err"; rc=$?
check "missing store exits 66" [ $rc -eq 66 ]
check "missing store names it" grep -q "nostore" "$T/err"
touch "$T/afile"
"$TWINFS_BIN" mount --store "$T/afile" --state "$T/state3" --mountpoint "$T/plain" \
	>/dev/null 2>"$T/err"; rc=$?
check "store that is a file exits 66" [ $rc -eq 66 ]
"$TWINFS_BIN" mount --store "$T/store" --state "$T/afile/state" --mountpoint "$T/plain" \
	>/dev/null 2>"$T/err"; rc=$?
check "unusable state dir fails" [ $rc -ne 0 ]
check "unusable state dir is named" grep -q "afile/state" "$T/err"
# A non-loopback peer without TLS keys is refused before anything is sent
# (192.0.2.1 is TEST-NET-1: never contacted).
"$TWINFS_BIN" mount --store "$T/store" --state "$T/state3" --mountpoint "$T/plain" \
	--peer 192.0.2.1:7420 >/dev/null 2>"$T/err"; rc=$?
check "non-loopback --peer without --insecure refused" [ $rc -ne 0 ]
check "the refusal says to use --insecure" grep -q -- "--insecure" "$T/err"
"$TWINFS_BIN" mount --store "$T/store" --mountpoint "$T/plain" >/dev/null 2>"$T/err"; rc=$?
check "missing --state is a usage error (64)" [ $rc -eq 64 ]
check "no stray mount on the plain dir" sh -c '! grep -qs " $1 fuse" /proc/mounts' _ "$T/plain"

# A mount from a config file; a flag overrides the file. (Its own store:
# the first mount is still the writer of $T/store.)
mkdir -p "$T/mnt2" "$T/store-cfg"
: >"$T/store-cfg/a"
track_mount "$T/mnt2"
cat >"$T/twinfs.yaml" <<YAML
store: $T/store-cfg
state: $T/state-cfg
mountpoint: $T/plain
YAML
"$TWINFS_BIN" mount --config "$T/twinfs.yaml" --mountpoint "$T/mnt2" >/dev/null 2>"$T/err"; rc=$?
check "mount --config (flag overrides file) exits 0" [ $rc -eq 0 ]
cfg_pid=$(mount_pid "$T/mnt2"); [ -n "$cfg_pid" ] && track_pid "$cfg_pid"
check "config mount shows the store" [ -f "$T/mnt2/a" ]
fusermount3 -u "$T/mnt2" 2>/dev/null
check "config mount daemon exits" wait_until 10 sh -c '! kill -0 "$1"' _ "$cfg_pid"
printf 'store: %s\nmountpoint: [oops\n' "$T/store" >"$T/bad.yaml"
"$TWINFS_BIN" mount --config "$T/bad.yaml" >/dev/null 2>"$T/err"; rc=$?
check "malformed config exits 78" [ $rc -eq 78 ]
check "malformed config error has file:line" grep -q "bad.yaml:[0-9]" "$T/err"

# fusermount3 -u ends the daemon; SIGTERM ends a second one cleanly.
fusermount3 -u "$T/mnt"
check "fusermount3 -u unmounts" sh -c '! grep -qs " $1 fuse" /proc/mounts' _ "$T/mnt"
check "daemon exits after fusermount3 -u" wait_until 10 sh -c '! kill -0 "$1"' _ "$pid"

"$TWINFS_BIN" mount --store "$T/store" --state "$T/state" --mountpoint "$T/mnt" \
	>/dev/null 2>&1
pid=$(mount_pid "$T/mnt"); [ -n "$pid" ] && track_pid "$pid"
check "remount shows the same files" [ -f "$T/mnt/a" ]
kill -TERM "$pid"
check "SIGTERM unmounts" wait_until 10 sh -c '! grep -qs " $1 fuse" /proc/mounts' _ "$T/mnt"
check "daemon exits after SIGTERM" wait_until 10 sh -c '! kill -0 "$1"' _ "$pid"

finish
