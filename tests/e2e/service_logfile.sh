#!/bin/sh
# A detached daemon outside systemd (no JOURNAL_STREAM, no NOTIFY_SOCKET)
# on a machine without a syslog socket logs to STATE/twinfs.log, says so
# at start-up on the terminal, and what it logs after detaching (the
# unmount, SIGTERM, a peer that never answers, at warning level) is in
# that file. Skipped where /dev/log exists.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
[ -e /dev/log ] && skip "/dev/log exists: detached daemons log to syslog here"

mkdir -p "$T/store" "$T/mnt" "$T/pstore"
track_mount "$T/mnt"
env -u JOURNAL_STREAM -u NOTIFY_SOCKET "$TWINFS_BIN" mount --store "$T/store" \
	--state "$T/state" --mountpoint "$T/mnt" 2>"$T/mount.err"
check "detached mount exits 0" [ $? -eq 0 ]
check "mount says where it logs" grep -q "logging to a file.*file=$T/state/twinfs.log" "$T/mount.err"
echo data >"$T/mnt/f"
fusermount3 -u "$T/mnt"
wait_until 10 sh -c '! grep -qs " $1 " /proc/mounts' _ "$T/mnt"
check "what the daemon logs after detaching is in the file" \
	wait_until 10 grep -q "unmounting with changes the peer does not have" "$T/state/twinfs.log"
check "the log file is private (0600)" [ "$(stat -c %a "$T/state/twinfs.log")" = 600 ]

# A peer that never answers reaches the default level (warning) once it
# has been down for 10 s, in the detached daemon's file.
mkdir -p "$T/store2" "$T/mnt2"
track_mount "$T/mnt2"
env -u JOURNAL_STREAM -u NOTIFY_SOCKET "$TWINFS_BIN" mount --store "$T/store2" \
	--state "$T/state2" --mountpoint "$T/mnt2" --peer "127.0.0.1:$(free_port)" 2>/dev/null
check "a mount whose peer never answers warns in its log" \
	wait_until 25 grep -q 'level=warn msg="replication peer not reachable' "$T/state2/twinfs.log"
fusermount3 -u "$T/mnt2"
wait_until 10 sh -c '! grep -qs " $1 " /proc/mounts' _ "$T/mnt2"

PORT=$(free_port)
env -u JOURNAL_STREAM -u NOTIFY_SOCKET "$TWINFS_BIN" serve --store "$T/pstore" \
	--state "$T/pstate" --listen "127.0.0.1:$PORT" 2>"$T/serve.err"
check "detached serve exits 0" [ $? -eq 0 ]
check "serve says where it logs" grep -q "logging to a file.*file=$T/pstate/twinfs.log" "$T/serve.err"
pid=$("$TWINFS_BIN" status --state "$T/pstate" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
track_pid "$pid"
kill -TERM "$pid"
check "serve logs its stop to the file" wait_until 10 grep -q 'msg="stopped"' "$T/pstate/twinfs.log"
finish
