#!/bin/sh
# The primary killed (SIGKILL) while a file written through FUSE
# passthrough is still open and being written, before the scan re-marks
# its ranges (docs/journal.md, "Writes the fs does not see"): the epoch
# of its first mark had ended after the `twinfs sync` before, so the
# journal knows of the overwrite only through a new durable mark (the
# pin): the recovered journal must name the file. (The restart's store
# scan finds it too; the test checks the journal apart from it.) After
# the restart and `twinfs sync`, the stores are equal.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

start_serve
start_mount
wait_until 15 connected || fail "mount never connected"

# The writer: a new 256 MiB file, then, on "go", 4 KiB over its first MiB
# every 0.1 s, keeping the file open: never idle, so the scan re-marks it
# only after 60 s (fs/file.c) and pins it meanwhile.
python3 - "$MNT/big.bin" "$T" <<'PY' 2>/dev/null &
import os, sys, time
path, t = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
block = os.urandom(1 << 20)
for i in range(256):
    os.write(fd, block)
open(os.path.join(t, "ready"), "w").close()
while not os.path.exists(os.path.join(t, "go")):
    time.sleep(0.05)
i = 0
while True:
    os.pwrite(fd, os.urandom(4096), (i % 256) * 4096)
    if i == 0:
        open(os.path.join(t, "written"), "w").close()
    i += 1
    time.sleep(0.1)
PY
writer=$!
track_pid "$writer"
wait_until 60 test -e "$T/ready" || fail "the writer did not write its file"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null
check "twinfs sync with the file open exits 0" [ $? -eq 0 ]
check "the peer has the open file after twinfs sync" cmp -s "$A_STORE/big.bin" "$P_STORE/big.bin"
# the epoch ends at the ack that leaves nothing pending (journal_ack):
# every record acked, no dirty file, no pinned one. Then kill the peer so
# that it cannot receive the overwrite (nor hold it in a socket buffer):
# the restarted primary must send it from the pin alone.
jnum() { "$TWINFS_BIN" status --state "$A_STATE" --json |
	sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
settled() { [ "$(jnum lag_ops)" = 0 ] && [ "$(jnum dirty_files)" = 0 ] &&
	[ "$(jnum unmarked_files)" = 0 ]; }
wait_until 10 settled || fail "the journal still had work pending after twinfs sync"
kill_serve
touch "$T/go"
wait_until 10 test -e "$T/written" || fail "the writer did not overwrite"
# a scan tick pins it; status shows the file once the pin is durable
# (journal_mark counts a pin only after its mark reached the disk)
unmarked() { "$TWINFS_BIN" status --state "$A_STATE" --json | grep -q '"unmarked_files":1'; }
check "status counts the open file written since its mark" wait_until 5 unmarked
"$TWINFS_BIN" status --state "$A_STATE" | grep "open writes" | sed 's/^/# /'
kill -KILL "$MOUNT_PID"
wait "$MOUNT_PID" 2>/dev/null
kill -KILL "$writer" 2>/dev/null
wait "$writer" 2>/dev/null
umount -l "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null
check "the peer lacked the overwrite when the primary died" \
	sh -c "! cmp -s '$A_STORE/big.bin' '$P_STORE/big.bin'"
start_serve
start_mount
# The restarted mount's scan and the peer's interrupted apply would send
# the file again too; the pin is proved by the journal alone naming it.
recovered() { grep "journal recovered" "$T/mount.log" | tail -n 1; }
recovered | sed 's/^/# /'
check "the recovered journal names the open file (the pin was durable)" \
	sh -c "grep 'journal recovered' '$T/mount.log' | tail -n 1 | grep -q 'dirty_files=1 '"
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 60 >/dev/null
check "sync after the restart exits 0" [ $? -eq 0 ]
check "the overwrite reached the peer after the restart" cmp -s "$A_STORE/big.bin" "$P_STORE/big.bin"
finish
