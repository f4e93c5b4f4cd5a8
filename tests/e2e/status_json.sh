#!/bin/sh
# `twinfs status` beyond the basics: --json with no daemon (an object that
# says so, exit 69), the daemon facts both roles report (version, pid,
# uptime, state and store folders, the last ack received / sent), the
# secondary's dirty flag in words, and --watch redrawing every second on a
# terminal and printing a block per second without one, until Ctrl-C.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
command -v python3 >/dev/null || skip "python3 missing"

"$TWINFS_BIN" status --state "$T/nothing" --json >"$T/none.json" 2>"$T/e"; rc=$?
check "status --json without a daemon still exits 69" [ $rc -eq 69 ]
check "status --json without a daemon prints an object saying so" \
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["running"] is False and "no twinfs daemon" in d["reason"], d' "$T/none.json"

start_serve
start_mount
echo data >"$MNT/f"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 30 >/dev/null
check "sync exits 0" [ $? -eq 0 ]
for side in A P; do
	eval state=\$${side}_STATE store=\$${side}_STORE
	[ $side = A ] && pid=$MOUNT_PID || pid=$SERVE_PID
	"$TWINFS_BIN" status --state "$state" --json >"$T/$side.json"
	check "$side: status --json exits 0" [ $? -eq 0 ]
	check "$side: running, version, pid, uptime, folders and the last ack" \
		python3 - "$T/$side.json" "$pid" "$state" "$store" "$side" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
pid, state, store, side = int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
assert d["running"] is True and d["ok"] is True, d
assert d["version"] and d["pid"] == pid, (d["pid"], pid)
assert 0 < d["uptime_s"] < 600 and d["started"][10] == "T", d
assert d["state_dir"] == state and d["store_dir"] == store, d
assert d["role"] == ("primary" if side == "A" else "secondary"), d
# after a sync the last ack is a few seconds old at most, and covers the write
assert 0 <= d["last_ack_age_s"] < 30, d
assert d["last_ack_seq"] >= 1, d
if side == "A":
    assert d["last_ack_seq"] == d["acked_seq"], d
PY
	"$TWINFS_BIN" status --state "$state" >"$T/$side.txt"
	check "$side: text status shows pid, version, uptime, folders, last ack" \
		sh -c 'grep -Eq "^daemon: +pid $2, twinfs [^ ]+, up [0-9]" "$1" &&
		       grep -q "^state dir: *$3\$" "$1" && grep -q "^store: *$4\$" "$1" &&
		       grep -Eq "^last ack: +(received|sent) [0-9.]+ (s|min)" "$1"' _ \
		"$T/$side.txt" "$pid" "$state" "$store"
done
cat "$T/P.txt"
check "secondary: dirty explained in words" \
	grep -Eq "^dirty: +(no: the store holds exactly the changes up to seq [0-9]+, durably|yes: changes after seq)" "$T/P.txt"

# --watch without a terminal: a block per second, exit 0 on SIGINT.
"$TWINFS_BIN" status --state "$A_STATE" --watch >"$T/watch.txt" 2>&1 &
wpid=$!
track_pid $wpid
check "--watch (pipe) prints a block per second" \
	wait_until 10 sh -c '[ "$(grep -c "^Every 1.0s: twinfs status" "$1")" -ge 3 ]' _ "$T/watch.txt"
kill -INT $wpid
wait $wpid; rc=$?
check "--watch exits 0 on SIGINT" [ $rc -eq 0 ]
check "--watch (pipe) draws no escape sequences" sh -c '! grep -q "$(printf "\033")" "$1"' _ "$T/watch.txt"
check "--watch blocks hold the status" [ "$(grep -c '^role: *primary' "$T/watch.txt")" -ge 3 ]
"$TWINFS_BIN" status --state "$A_STATE" --watch --json >"$T/watch.json" 2>&1 &
wpid=$!
track_pid $wpid
check "--watch --json (pipe) prints a JSON line per second" \
	wait_until 10 sh -c '[ "$(grep -c "^{\"running\":true" "$1")" -ge 2 ]' _ "$T/watch.json"
kill -INT $wpid
wait $wpid
check "--watch --json lines parse" python3 -c 'import json, sys
[json.loads(l) for l in open(sys.argv[1]) if l.strip()]' "$T/watch.json"

# --watch on a terminal (script(1) gives it a pseudo-terminal): the screen
# is cleared and redrawn, like watch(1).
if command -v script >/dev/null; then
	script -qfc "'$TWINFS_BIN' status --state '$A_STATE' --watch" "$T/tty.txt" >/dev/null 2>&1 &
	spid=$!
	track_pid $spid
	check "--watch (terminal) redraws" \
		wait_until 10 sh -c '[ "$(grep -ao "$(printf "\033")\[2J" "$1" | wc -l)" -ge 2 ]' _ "$T/tty.txt"
	pkill -INT -P $spid 2>/dev/null
	kill -INT $spid 2>/dev/null
	wait $spid 2>/dev/null
else
	note "script missing: --watch on a terminal not checked"
fi
finish
