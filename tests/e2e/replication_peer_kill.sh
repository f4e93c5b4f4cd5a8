#!/bin/sh
# The peer dies (SIGKILL) and comes back:
#  1. mid-copy of many files: the writer sees no error, and after
#     `twinfs sync` the stores are equal;
#  2. while a big file streams (the receiver is killed mid-apply): after a
#     restart and `twinfs sync`, equal again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

start_serve
start_mount

mkdir -p "$T/src"
for d in 0 1 2 3 4 5 6 7; do
	mkdir "$T/src/dir$d"
	for f in $(seq 1 40); do
		head -c $((f * 4000)) /dev/urandom >"$T/src/dir$d/f$f"
	done
done
head -c 24000000 /dev/urandom >"$T/src/big1"

# 1. Kill the peer while the copy runs. The copier stops half way until
# told to go on, so the peer is killed with the copy certainly running
# (files written before it died, files written while it was down).
python3 - "$T/src" "$MNT/copy1" "$T" <<'PY' 2>"$T/writer1.err" &
import os, shutil, sys, time
src, dst, t = sys.argv[1:4]
names = sorted(os.listdir(src))
half = len(names) // 2
os.mkdir(dst)
for i, n in enumerate(names):
    if i == half:
        open(os.path.join(t, "half"), "w").close()
        while not os.path.exists(os.path.join(t, "go")):
            time.sleep(0.02)
    s, d = os.path.join(src, n), os.path.join(dst, n)
    if os.path.isdir(s):
        shutil.copytree(s, d, copy_function=shutil.copy2)
    else:
        shutil.copy2(s, d)
shutil.copystat(src, dst)
open(os.path.join(t, "writer1.ok"), "w").close()
PY
writer=$!
wait_until 60 test -e "$T/half" || fail "the copier did not reach half way"
check "the copy is running when the peer is killed" kill -0 "$writer"
kill_serve
note "serve killed during the copy"
touch "$T/go"
wait_until 60 test -e "$T/writer1.ok"
start_serve
wait $writer
check "writer saw no error while the peer was down" [ -f "$T/writer1.ok" ] && [ ! -s "$T/writer1.err" ]
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60
check "sync after the peer restart exits 0" [ $? -eq 0 ]
check "stores equal after the peer was killed mid-copy" replicated

# 2. Kill the receiver while it applies a big stream.
head -c 48000000 /dev/urandom >"$T/big2"
cp "$T/big2" "$MNT/big2"
sync_bg() { "$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null 2>&1; }
received() {
	n=$("$TWINFS_BIN" status --state "$P_STATE" --json 2>/dev/null |
		sed -n 's/.*"bytes_received":\([0-9]*\).*/\1/p')
	[ "${n:-0}" -gt "${1:-0}" ]
}
base=$("$TWINFS_BIN" status --state "$P_STATE" --json | sed -n 's/.*"bytes_received":\([0-9]*\).*/\1/p')
sync_bg &
syncer=$!
wait_until 20 received $((base + 4000000))
check "the peer was receiving the big file" [ $? -eq 0 ]
kill_serve
note "serve killed mid-apply"
# the peer comes back once the mount has seen it go (not after a fixed
# time): the restart meets a sender that lost its connection mid-stream
gone() { ! connected; }
wait_until 15 gone || fail "the mount did not notice the peer die"
start_serve
wait $syncer
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60
check "sync after the receiver restart exits 0" [ $? -eq 0 ]
check "stores equal after the receiver was killed mid-apply" replicated
check "the big file arrived intact" cmp -s "$T/big2" "$P_STORE/big2"
finish
