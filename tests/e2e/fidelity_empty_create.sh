#!/bin/sh
# A file created empty (O_CREAT|O_TRUNC, no write: `: > f`, cp -r of an
# empty file) and a truncation to empty get the primary's mtime on the
# peer, even when the peer applies them seconds later.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
. "$(dirname "$0")/fidelity_lib.sh"

start_serve
start_mount
echo old >"$MNT/existing"
mkdir -p "$T/src/dir"; : >"$T/src/dir/empty"; : >"$T/src/empty2"
check "first sync" do_sync

kill -STOP "$SERVE_PID"
: >"$MNT/f"
: >"$MNT/existing"
cp -r "$T/src/dir" "$MNT/copied"
cp "$T/src/empty2" "$MNT/"
mknod "$MNT/made-by-mknod" p 2>/dev/null
python3 -c 'import os,sys; os.close(os.open(sys.argv[1], os.O_CREAT|os.O_WRONLY, 0o644))' "$MNT/plain-create"
sleep 2	# the peer's clock moves on while it is stopped
kill -CONT "$SERVE_PID"
check "sync" do_sync
check "peer equals primary (empty files keep the primary's mtime)" stores_equal
finish
