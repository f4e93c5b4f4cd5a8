#!/bin/sh
# Namespace load against the fd budget (fs/inode.c, fs/evict.c): four
# processes at once each make a nested tree of written files, hard links
# and symlinks (chmod and setxattr on some), then read it all back. Once
# with the default open-file limit and once with the mount under 1,024
# (no CAP_SYS_RESOURCE, so it cannot raise it). No application call may
# fail (EMFILE, ENFILE or anything else), nothing may hang (every wait has
# a deadline; a hung mount is aborted through fusectl in cleanup, so no
# process is left stuck in it), and the daemon's fds, sampled from
# /proc/PID/fd, stay within what it had at mount plus the inode fd budget
# it announces, plus the few a request reopens for itself.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
command -v prlimit >/dev/null || skip "prlimit missing (util-linux)"
command -v setpriv >/dev/null || skip "setpriv missing (util-linux)"
command -v mountpoint >/dev/null || skip "mountpoint missing (util-linux)"
# The abort switch of a hung mount lives in fusectl.
grep -qs " /sys/fs/fuse/connections fusectl" /proc/mounts ||
	mount -t fusectl fusectl /sys/fs/fuse/connections ||
	skip "cannot mount fusectl (needed to abort a hung mount)"
LOAD="$TWINFS_SRC/tests/e2e/fs/nsload.py"
# fds one request may hold beyond the cached ones (a reopened inode and
# its parent), times the threads that serve requests (16 workers, and 4
# ring threads per CPU)
TRANSIENT=$(( 2 * (16 + 4 * $(nproc)) ))

# run NAME NOFILE DIRS FILES DEADLINE_S [LAUNCHER...]
run() {
	name=$1 nofile=$2 dirs=$3 files=$4 deadline=$5
	shift 5
	mnt="$T/$name/mnt"
	mkdir -p "$T/$name/store" "$mnt" "$T/$name/state"
	track_mount "$mnt"
	"$@" "$TWINFS_BIN" mount --store "$T/$name/store" --state "$T/$name/state" \
		--mountpoint "$mnt" -f 2>"$T/$name/mount.log" &
	pid=$!
	track_pid "$pid"
	note "$name: mounting at $(date +%s)"
	wait_until 20 is_mounted "$mnt" || { cat "$T/$name/mount.log" >&2; fail "$name: mount failed"; }
	limit=$(awk '/^Max open files/ {print $4}' "/proc/$pid/limits")
	[ "$nofile" = any ] && nofile=$limit
	[ "$limit" = "$nofile" ] || fail "$name: the daemon runs with an fd limit of $limit, not $nofile"
	conn=$(mountpoint -d "$mnt" | cut -d: -f2)
	# A hung mount: abort its connection, which fails every request in
	# it, so that the stuck applications and the daemon can exit.
	on_exit "[ -e '$T/$name/loading' ] && echo 1 >/sys/fs/fuse/connections/$conn/abort"
	wait_until 10 grep -q "fd_budget=" "$T/$name/mount.log" ||
		fail "$name: the mount did not announce its fd budget"
	budget=$(sed -n 's/.*inode fd budget.*fd_budget=\([0-9]*\).*/\1/p' "$T/$name/mount.log")
	base=$(ls "/proc/$pid/fd" | wc -l)
	note "$name: load starts at $(date +%s)"
	touch "$T/$name/loading"
	python3 "$LOAD" "$mnt" "$pid" 4 "$dirs" "$files" "$deadline" >"$T/$name/run.out" 2>&1
	rc=$?
	cat "$T/$name/run.out"
	if grep -q '^hang' "$T/$name/run.out"; then
		grep ^ /proc/$pid/task/*/stack 2>/dev/null | grep -v '^$' | head -40 >&2
		fail "$name: the load hung (connection $conn aborted at cleanup)"
	fi
	rm -f "$T/$name/loading"
	peak=$(sed -n 's/^peak daemon fds: //p' "$T/$name/run.out")
	note "$name: fd limit $nofile, inode fd budget $budget, $base fds at mount, peak ${peak:-?} fds"
	check "$name: no application call failed" [ "$rc" -eq 0 ]
	check "$name: no EMFILE or ENFILE" grep -q '^emfile: 0$' "$T/$name/run.out"
	check "$name: peak fds ${peak:-?} within the budget $budget + $base at mount + $TRANSIENT" \
		[ "${peak:-999999}" -le $((budget + base + TRANSIENT)) ]
	check "$name: peak fds ${peak:-?} under the limit $nofile" [ "${peak:-999999}" -lt "$nofile" ]
	want=$((4 * (1 + dirs + dirs * dirs * (1 + files + (files + 1) / 2 + (files + 2) / 3))))
	check "$name: the store has all $want names" \
		[ "$(find "$T/$name/store" -mindepth 1 | wc -l)" -eq "$want" ]
	note "$name: checked at $(date +%s)"
	fusermount3 -u "$mnt"
	check "$name: daemon exits after unmount" wait_until 20 sh -c '! kill -0 "$1"' _ "$pid"
}

# The default limit (the daemon raises it as far as it may): 4 x 3,500
# inodes, past the budget the mount announces for 20,000 fds.
run default any 8 40 60
# A low limit, which the daemon cannot raise.
run low 1024 6 30 40 setpriv --bounding-set -sys_resource prlimit --nofile=1024:1024
finish
