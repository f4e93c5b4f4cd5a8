#!/bin/sh
# A power cut on the secondary: its store's file system loses what was only
# in its page cache. serve acknowledges a seq only once what it applied is
# durable, so after serve starts again on what the disk kept, the primary
# resumes from the seq serve recorded and `twinfs sync` leaves both stores
# equal field for field.
#
# The peer's store is ext4 over a loop device whose image is a file in $T,
# cut as tests/e2e/power_cut_lib.sh says; its STATE is on another file
# system, so STATE/applied survives whole while the store loses what was
# not synced: a serve that recorded a seq before its data was durable
# would resume past changes its disk lost. Three rounds, each with changes
# of every kind, cut at once after `twinfs sync`, and a cut while a copy
# is still streaming.
. "$(dirname "$0")/lib.sh"
. "$TWINFS_SRC/tests/e2e/replication_lib.sh"
. "$TWINFS_SRC/tests/e2e/power_cut_lib.sh"

pc_peer
mkdir -p "$P_STORE"

# cut: the power cut (power_cut_lib.sh); serve is then started again on
# what the disk kept.
cut() {
	pc_cut "$SERVE_PID" "" 'SERVE_PID=""'
	start_serve
}

start_serve
start_mount
pc_base "$MNT/d"
check "the first files synced" synced
for r in 1 2 3; do
	pc_changes "$MNT/d" "$r"
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
