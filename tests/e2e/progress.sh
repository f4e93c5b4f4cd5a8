#!/bin/sh
# The progress line of `bench copy` and `sync`: on a terminal (script(1)
# gives them a pseudo-terminal) one line redrawn in place with bytes done
# and total, rate, ETA and files; nothing when stderr is a pipe, and
# --progress always / never override that.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
command -v script >/dev/null || skip "script missing (util-linux)"

# line FILE: the progress line (bytes / total, %, rate, ETA) was drawn
line='[0-9.]+ [KMGT]?i?B / [0-9.]+ [KMGT]?i?B +[0-9]+% +[0-9.]+ [KMGT]?i?B/s +ETA [0-9:-]+'
mkdir -p "$T/a" "$T/ds"
script -qefc "'$TWINFS_BIN' bench copy --target '$T/a' --large 48M --small-count 400 \
	--small-total 8M --dataset-dir '$T/ds'" "$T/copy.tty" >/dev/null 2>&1; rc=$?
check "bench copy on a terminal exits 0" [ $rc -eq 0 ]
check "bench copy on a terminal draws bytes, rate and ETA" grep -Eaq "$line" "$T/copy.tty"
check "bench copy's line counts files done and left" \
	grep -Eaq "files [0-9]+/400 \([0-9]+ left\)" "$T/copy.tty"
check "the line is redrawn in place (carriage returns)" \
	[ "$(tr -cd '\r' <"$T/copy.tty" | wc -c)" -ge 2 ]
"$TWINFS_BIN" bench copy --target "$T/a" --large 48M --small-count 400 --small-total 8M \
	--dataset-dir "$T/ds" >"$T/copy.out" 2>"$T/copy.err"; rc=$?
check "bench copy to a pipe exits 0" [ $rc -eq 0 ]
check "bench copy to a pipe: no progress bytes at all" \
	sh -c '! grep -Eaq "ETA|$(printf "\r")" "$1" "$2"' _ "$T/copy.out" "$T/copy.err"
"$TWINFS_BIN" bench copy --target "$T/a" --large 8M --small-count 0 --dataset-dir "$T/ds" \
	--progress always >/dev/null 2>"$T/always.err"
check "--progress always draws on a pipe" grep -Eaq "$line" "$T/always.err"
script -qefc "'$TWINFS_BIN' bench copy --target '$T/a' --large 8M --small-count 0 \
	--dataset-dir '$T/ds' --progress never" "$T/never.tty" >/dev/null 2>&1
check "--progress never draws nothing on a terminal" sh -c '! grep -aq ETA "$1"' _ "$T/never.tty"

# sync: the peer is down while 48 MiB wait in the journal, so the line is
# drawn while sync waits, then the peer comes up and the sync completes.
start_mount
head -c 48M /dev/urandom >"$MNT/big"
script -qefc "'$TWINFS_BIN' sync --state '$A_STATE' --timeout 120" "$T/sync.tty" \
	>/dev/null 2>&1 &
spid=$!
track_pid $spid
check "sync on a terminal draws bytes, rate, ETA and files while waiting" \
	wait_until 20 grep -Eaq "sync: $line +files [0-9]+/[0-9]+" "$T/sync.tty"
start_serve
wait $spid; rc=$?
check "sync on a terminal exits 0 once the peer has everything" [ $rc -eq 0 ]
check "sync printed its result after the line" grep -aq "synced: the peer holds every change" "$T/sync.tty"
head -c 8M /dev/urandom >"$MNT/big2"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >"$T/sync.out" 2>"$T/sync.err"; rc=$?
check "sync to a pipe exits 0" [ $rc -eq 0 ]
check "sync to a pipe: no progress bytes" \
	sh -c '! grep -Eaq "ETA|$(printf "\r")" "$1" "$2"' _ "$T/sync.out" "$T/sync.err"
"$TWINFS_BIN" sync --state "$A_STATE" --progress sometimes >/dev/null 2>"$T/e"; rc=$?
check "bad --progress exits 64" [ $rc -eq 64 ]
check "stores equal" replicated
finish
