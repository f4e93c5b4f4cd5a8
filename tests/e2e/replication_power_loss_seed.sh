#!/bin/sh
# A power cut on a secondary just restored from a copy: the copy is still
# only in the page cache of the peer's store when serve starts, the
# primary's baseline finds most of it equal (block hashes read from that
# page cache) and sends only what differs. serve must not ack the baseline
# before everything it vouched for is on its disk: after the cut, serve
# resumes from its STATE/applied and the primary sends nothing more, so a
# copy that the cut took back would stay lost with `twinfs sync` saying
# synced.
#
# The peer's store is ext4 over a loop device whose image is a file in $T,
# cut as tests/e2e/power_cut_lib.sh says (its journal commits every 300 s,
# so only serve's own syncs make anything durable); STATE is on another
# file system. The copy is of an older state of the primary's store: some
# files have changed since (sent by delta), one is gone, one is new.
. "$(dirname "$0")/lib.sh"
. "$TWINFS_SRC/tests/e2e/replication_lib.sh"
. "$TWINFS_SRC/tests/e2e/power_cut_lib.sh"

pc_peer

pc_base "$A_STORE/d"
for i in $(seq 1 30); do head -c $((i * 7000)) /dev/urandom >"$A_STORE/d/g$i"; done
ln "$A_STORE/d/g1" "$A_STORE/d/hard1"; ln -s g2 "$A_STORE/d/sym2"
python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.k", b"v")' "$A_STORE/d/g3"
note "the peer is restored from a copy (cp -a): nothing syncs it"
cp -a "$A_STORE" "$P_STORE"
head -c 4096 /dev/urandom | dd of="$A_STORE/d/f8" bs=4096 seek=20 conv=notrunc status=none
head -c 9000 /dev/urandom >>"$A_STORE/d/g30"
rm "$A_STORE/d/g29"; echo new >"$A_STORE/d/new"
touch -m -d @1500000000 "$A_STORE/d/g28"
sync -f "$A_STORE"

start_serve
start_mount
check "the baseline synced" synced 60
check "stores equal before the cut" stores_replicated
pc_cut "$SERVE_PID" "" 'SERVE_PID=""'
check "the cut lost nothing the peer acked" same_stores "$A_STORE" "$P_STORE"
start_serve
check "synced after the peer's cut" synced 60
check "stores equal after the peer's cut" stores_replicated
dump_logs_on_failure
stop_mount
finish
