#!/bin/sh
# A power cut on the primary: its store's file system loses what was only
# in its page cache, after `twinfs sync` said the peer had every change.
# After the mount starts again on what the disk kept, `twinfs sync` must
# leave both stores equal field for field (the peer takes the primary's
# surviving state, as DRBD's resync after a primary crash does).
#
# The store is ext4 over a loop device whose image is a file in $T, cut as
# tests/e2e/power_cut_lib.sh says; STATE is on another file system (as
# /var/lib beside a data disk), so the journal's own fsyncs do not commit
# the store's metadata.
#
# Round 1 forces the ordering that lost changes before the fix: the
# journal's ack-file thread (tw-ackfile, which makes the store durable
# before the ack file passes what the peer acked) is held, so the cut
# comes after the peer's ack and before this node's store is durable.
# Round 2 is the normal order: once the ack file has passed the peer's ack,
# a cut loses nothing. Round 3 cuts while a copy streams into a new
# folder, with the thread held again: the store's file system lost the
# folder and the ctimes that would show it, so only the journal's marks
# can say what to walk (every marked folder, as the store's file system was
# mounted again).
. "$(dirname "$0")/lib.sh"
. "$TWINFS_SRC/tests/e2e/replication_lib.sh"
. "$TWINFS_SRC/tests/e2e/power_cut_lib.sh"

pc_primary

status_key() {
	"$TWINFS_BIN" status --state "$A_STATE" --json |
		python3 -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1], ""))' "$1"
}
ackfile_caught_up() { [ "$(status_key acked_durable_seq)" = "$(status_key acked_seq)" ]; }

# cut: the power cut (power_cut_lib.sh); the store is then what the disk
# kept. A held thread goes back once the disk is captured: a process with
# a ptrace-stopped thread does not finish dying until its tracer lets go.
cut() {
	pc_cut "$MOUNT_PID" 'if [ -n "${hold:-}" ]; then touch "$T/hold.release"; wait "$hold"; hold=""; fi' \
		'MOUNT_PID=""; umount -l "$MNT"'
}

start_serve
start_mount
pc_base "$MNT/d"
check "the first files synced" synced
# A clean unmount writes the store manifest, so the next mount's scan
# finds nothing changed: only the journal can name what the cut loses.
stop_mount
start_mount

note "round 1: the cut after the peer's ack, before this node's store is durable"
python3 "$(dirname "$0")/thread_hold.py" "$MOUNT_PID" tw-ackfile "$T/hold.ready" \
	"$T/hold.release" 120 2>"$T/hold.err" &
hold=$!; track_pid $hold
wait_until 10 test -e "$T/hold.ready" || fail "the ack-file thread could not be held"
pc_changes "$MNT/d" 1
check "round 1 synced" synced
check "round 1: stores equal before the cut" stores_replicated
cut
check "round 1: the cut lost changes the peer holds" sh -c \
	"! python3 '$TWINFS_SRC/tests/e2e/treecmp.py' '$A_STORE' '$P_STORE' >'$T/lost1'"
note "$(head -n 4 "$T/lost1")"
start_mount
check "round 1: synced after the cut" synced
check "round 1: stores equal after the cut" stores_replicated

note "round 2: the cut after the ack file passed the peer's ack"
syncs0=$(status_key store_syncs)
pc_changes "$MNT/d" 2
check "round 2 synced" synced
check "round 2: the store was made durable before the ack file moved" \
	wait_until 30 ackfile_caught_up
check "round 2: ... by a syncfs ($syncs0 before, $(status_key store_syncs) now)" \
	[ "$(status_key store_syncs)" -gt "$syncs0" ]
cut
check "round 2: the cut lost nothing" same_stores "$A_STORE" "$P_STORE"
start_mount
check "round 2: synced after the cut" synced
check "round 2: stores equal after the cut" stores_replicated

note "round 3: a cut while a copy streams into a new folder, the store never synced"
# Held again: the store's file system keeps nothing of this round, so the
# new folder the peer already holds is gone from it, and so are the
# ctimes that would tell the mount what changed.
rm -f "$T/hold.release"
python3 "$(dirname "$0")/thread_hold.py" "$MOUNT_PID" tw-ackfile "$T/hold.ready3" \
	"$T/hold.release" 120 2>"$T/hold.err" &
hold=$!; track_pid $hold
wait_until 10 test -e "$T/hold.ready3" || fail "the ack-file thread could not be held"
mkdir "$MNT/big"
( i=0; while [ $i -lt 300 ]; do
	head -c 20000 /dev/urandom >"$MNT/big/b$i"
	head -c 4096 /dev/urandom | dd of="$MNT/d/f$((i % 8 + 1))" bs=4096 seek=$((i % 5)) \
		conv=notrunc status=none
	i=$((i + 1))
done ) 2>/dev/null &
writer=$!
wait_until 30 test -e "$P_STORE/big/b50" || fail "the copy did not reach the peer"
cut
wait "$writer"
check "round 3: the cut lost the new folder the peer holds" \
	sh -c "[ ! -e '$A_STORE/big' ] && [ -d '$P_STORE/big' ]"
start_mount
check "round 3: synced after the cut" synced
check "round 3: stores equal after the cut" stores_replicated
dump_logs_on_failure
stop_mount
finish
