#!/bin/sh
# The two repairs of the live replicator go by block delta where that is
# safe, and still leave the peer's copy equal whatever it was:
#  - an apply error on a file's data (the peer's copy made immutable
#    behind its back): the peer holds the file, one name, so it is not
#    removed first; only the blocks that differ go (resync_bytes_matched
#    counts the rest). With a second name made on the peer behind its back
#    the file is removed first and sent whole (ONE_NAME: a delta in place
#    would change the other name), and that name goes with the repair.
#  - a peer killed in the middle of a batch that changed a file's mode and
#    data: the replay re-sends that path's whole state, by delta.
# Each ends with the stores equal (treecmp).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"
command -v chattr >/dev/null || skip "chattr missing (apt install e2fsprogs)"
jkey() { "$TWINFS_BIN" status --state "$1" --json | python3 -c \
	"import json,sys; print(json.load(sys.stdin)[sys.argv[1]])" "$2"; }
on_exit 'chattr -i "$P_STORE/big" 2>/dev/null'
poke() {	# poke FILE OFFSET_MB: 256 KiB of new bytes at OFFSET_MB
	python3 - "$1" "$2" <<'PY'
import os, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2]) << 20)
    f.write(os.urandom(256 << 10))
PY
}
apply_failed() { grep -q 'could not apply a change' "$T/mount.log"; }

start_serve
start_mount
head -c $((16 << 20)) /dev/urandom >"$MNT/big"
check "first sync" do_sync

# 1. an apply error on data: repaired by delta
chattr +i "$P_STORE/big"
m0=$(jkey "$A_STATE" resync_bytes_matched)
poke "$MNT/big" 5
wait_until 30 apply_failed || fail "the peer did not fail to apply"
chattr -i "$P_STORE/big"
check "sync after the apply error" do_sync 90
m1=$(jkey "$A_STATE" resync_bytes_matched)
note "repair of an apply error: $((m1 - m0)) bytes of the 16 MiB file matched by block hashes"
check "it went by delta (at least 15 MiB matched)" [ $((m1 - m0)) -ge $((15 << 20)) ]
check "the stores are equal" stores_equal

# 2. the same with a second name on the peer: removed and sent whole
ln "$P_STORE/big" "$P_STORE/biglink"
chattr +i "$P_STORE/big"
: >"$T/mount.log"
m0=$(jkey "$A_STATE" resync_bytes_matched)
poke "$MNT/big" 9
wait_until 30 apply_failed || fail "the peer did not fail to apply (2)"
chattr -i "$P_STORE/big"
check "sync after the apply error (two names)" do_sync 90
m1=$(jkey "$A_STATE" resync_bytes_matched)
check "not by delta into the shared inode" [ $((m1 - m0)) -lt $((1 << 20)) ]
check "the peer's extra name went with the repair" [ ! -e "$P_STORE/biglink" ]
check "the stores are equal (two names)" stores_equal

# 3. a peer that comes back dirty (interrupted in the middle of a batch):
# the replay re-sends the whole state of every path its records name, here
# by delta. The peer is stopped cleanly at its applied seq S, the primary
# then changes big's mode and bytes, and STATE/applied is made to say
# "seq S, dirty" (the slot format of netsync/roles/state.c), as a peer
# killed inside the next batch would have left it, minus its partial
# effects: a deterministic stand-in for the kill (the repair must handle
# any state of the path, the untouched one too).
kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null
chmod 600 "$MNT/big"
poke "$MNT/big" 12
python3 - "$P_STATE/applied" <<'PY'
import ctypes, re, sys
x = ctypes.CDLL("libxxhash.so.0")
x.XXH64.restype = ctypes.c_uint64
x.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
data = bytearray(open(sys.argv[1], "rb").read())
best = None
for off in (0, 4096):
    m = re.match(rb"twinfs applied seq=(\d{20}) dirty=(\d) gen=(\d{20}) check=([0-9a-f]{16})",
                 bytes(data[off:off + 128]))
    if m and (best is None or int(m.group(3)) > best[1]):
        best = (int(m.group(1)), int(m.group(3)))
seq, gen = best[0], best[1] + 1
line = b"twinfs applied seq=%020d dirty=1 gen=%020d" % (seq, gen)
slot = line + b" check=%016x\n" % x.XXH64(line, len(line), 0)
slot += b" " * (127 - len(slot)) + b"\n"
off = 0 if gen & 1 else 4096
data[off:off + 128] = slot
open(sys.argv[1], "r+b").write(bytes(data))
PY
m0=$(jkey "$A_STATE" resync_bytes_matched)
start_serve
check "sync after the peer came back dirty" do_sync 90
m1=$(jkey "$A_STATE" resync_bytes_matched)
note "repair after an interrupted batch: $((m1 - m0)) bytes matched"
check "the replayed path went by delta (at least 15 MiB matched)" [ $((m1 - m0)) -ge $((15 << 20)) ]
check "the stores are equal (interrupted batch)" stores_equal
finish
