#!/bin/sh
# An exchange made while the sender still reads the store for an earlier
# batch. After a reconnect, a replayed exchange has both its names sent
# whole at its batch's BATCH record: their entries then, their walks after
# the batch's data. A later exchange of one of those names, made before
# the walk reads it, is in the walk already; replayed in the next batch it
# swaps the peer's names a second time, and no error says so (difftest
# seed 230252: `d2/d: type: fifo vs file` after `twinfs sync` exited 0).
# The ordering is forced. The peer is killed, so it comes back dirty and
# the replay sends every file its records name whole, before the walks;
# one is a 32 MiB file. The mount reaches its peer through a relay that
# holds the mount's bytes once the peer has answered its HELLO
# (tests/e2e/hold_relay.py): the sender stalls on those files (it asks
# the peer for their block hashes, then sends what differs), after the
# BATCH record and before the walks; the later exchange is made then, and
# the relay let go.
# Round 1: a FIFO and a one-name file; round 2: the file has another name.
# Round 3: the same exchange made while a baseline's walk is held (a new
# peer): the walk asks the peer for the block hashes of each file it
# meets and waits once 256 are unanswered, so 400 files in a folder it
# meets first hold it before the exchanged names; the record, replayed
# after the walk read its result, swapped them back; and with it
# `mv a b; mkdir a; echo x >a/x` (difftest seed 200358's pattern), which
# replayed after the walk moved the later a onto b. About 15 s.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"

HOLD=$T/hold
SPORT=$(free_port)	# the serve's; the relay listens on $PORT, the mount's --peer
# start_serve listens on $PORT: the serve's port for the call
serve_up() { _mport=$PORT; PORT=$SPORT; start_serve; PORT=$_mport; }
taken() {
	"$TWINFS_BIN" status --state "$A_STATE" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if d["connected"] and d["sent_seq"] == d["head_seq"] else 1)'
}

serve_up
python3 "$TWINFS_SRC/tests/e2e/hold_relay.py" "$PORT" "$SPORT" "$HOLD" >>"$T/relay.log" 2>&1 &
track_pid $!
wait_until 15 sh -c "ss -ltn | grep -q '127.0.0.1:$PORT '" || fail "the relay did not listen"
start_mount
wait_until 15 connected || fail "the mount did not connect to the peer"
for round in 1 2; do
	d=$MNT/r$round
	mkdir "$d"
	synced 60
	check "round $round: first sync exits 0" [ $? -eq 0 ]

	kill_serve
	head -c 32M /dev/urandom >"$d/big"
	mkfifo "$d/f"
	echo one >"$d/g"
	rename2 "$d/f" "$d/g" 2 || fail "round $round: exchange 1"	# f: file, g: fifo
	echo two >"$d/z"
	[ "$round" -eq 2 ] && ln "$d/z" "$d/z2"
	touch "$HOLD"
	serve_up
	wait_until 30 taken || fail "round $round: the mount did not take its batch"
	# the sender is held on z and big: its walks of f and g come after them
	rename2 "$d/z" "$d/g" 2 || fail "round $round: exchange 2"	# z: fifo, g: file
	rm -f "$HOLD"
	synced 60
	check "round $round: sync after the reconnect exits 0" [ $? -eq 0 ]
	check "round $round: the stores are equal" stores_equal
	check "round $round: z is a FIFO on the peer, as on the primary" [ -p "$P_STORE/r$round/z" ]
done

kill_serve
rm -rf "$P_STORE" "$P_STATE"
mkdir -p "$P_STORE" "$P_STATE"
mkdir "$MNT/many"
i=0
while [ $i -lt 400 ]; do echo "$i" >"$MNT/many/f$i"; i=$((i + 1)); done
w=w
mkdir "$MNT/$w"
mkfifo "$MNT/$w/g"
echo two >"$MNT/$w/z"
mkdir "$MNT/$w/a"
# the walk goes in readdir order: w is renamed until it comes after many
tries=0
until python3 -c 'import os, sys; l = os.listdir(sys.argv[1]); sys.exit(l.index(sys.argv[2]) < l.index("many"))' \
	"$A_STORE" "$w"; do
	tries=$((tries + 1))
	[ $tries -lt 30 ] || fail "round 3: no name of w comes after many in readdir order"
	mv "$MNT/$w" "$MNT/${w}x"
	w=${w}x
done
touch "$HOLD"
serve_up
wait_until 30 taken || fail "round 3: the mount did not take its baseline"
rename2 "$MNT/$w/z" "$MNT/$w/g" 2 || fail "round 3: exchange"	# z: fifo, g: file
mv "$MNT/$w/a" "$MNT/$w/b"
mkdir "$MNT/$w/a"
echo x >"$MNT/$w/a/x"
rm -f "$HOLD"
synced 60
check "round 3: sync after the baseline exits 0" [ $? -eq 0 ]
check "round 3: the stores are equal" stores_equal
check "round 3: z is a FIFO on the peer, as on the primary" [ -p "$P_STORE/$w/z" ]
check "round 3: b is empty on the peer, as on the primary" \
	sh -c "[ -z \"\$(ls -A '$P_STORE/$w/b')\" ]"
stop_mount
finish
