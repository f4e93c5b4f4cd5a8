#!/bin/sh
# `twinfs mirror`: a tree with every entry type pushed to a serve peer (TLS)
# whose store holds junk, then again after changes of every kind (content,
# deletions, renames of files and folders, type changes file <-> folder <->
# symlink, permission-only and owner changes, hard links added and broken,
# xattrs, a block changed in a large file); each time the peer's store
# equals the source by treecmp.py. --dry-run changes nothing; --checksum
# finds a flipped byte with size and mtime kept; a local folder destination
# and --exclude work the same way.
. "$(dirname "$0")/lib.sh"
need_root
S=$T/src P_STORE=$T/peer/store P_STATE=$T/peer/state
mkdir -p "$S" "$P_STORE" "$P_STATE"
PORT=$(free_port)
"$TWINFS_BIN" keygen --psk "$T/psk" >/dev/null
"$TWINFS_BIN" serve --store "$P_STORE" --state "$P_STATE" --listen "127.0.0.1:$PORT" \
	--psk-file "$T/psk" -f >>"$T/serve.log" 2>&1 &
track_pid $!
wait_until 15 "$TWINFS_BIN" status --state "$P_STATE" || fail "serve did not start"
mirror() { "$TWINFS_BIN" mirror "$S" "127.0.0.1:$PORT" --psk-file "$T/psk" "$@"; }
equal() { python3 "$TWINFS_SRC/tests/e2e/treecmp.py" "$S" "${1:-$P_STORE}" >&2; }
jget() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }

# the source: every type, owners, modes, xattrs, hard links, a large file
mkdir -p "$S/d/e/f" "$S/moveme/sub" "$S/typ_dir"
for i in $(seq 1 40); do head -c $((i * 1111)) /dev/urandom >"$S/d/f$i"; done
for i in 1 2 3; do echo "m$i" >"$S/moveme/sub/m$i"; done
head -c $((3 << 20)) /dev/urandom >"$S/big"
ln "$S/d/f1" "$S/d/e/hard1"; ln "$S/d/f2" "$S/d/e/f/hard2"
ln -s ../f3 "$S/d/e/sym"; ln -s /nowhere "$S/typ_link"
echo file >"$S/typ_file"; echo x >"$S/typ_dir/in"
mkfifo "$S/d/fifo"; mknod "$S/d/null" c 1 3
chown 1234:5678 "$S/d/f4"; chown -h 42:43 "$S/d/e/sym"; chmod 4750 "$S/d/f5"; chmod 700 "$S/d/e"
setfattr -n user.colour -v blue "$S/d/f6"; setfattr -n user.dir -v yes "$S/d"
touch -h -d '2001-02-03 04:05:06.123456789' "$S/typ_link"
# the peer holds junk the mirror must remove or replace
mkdir -p "$P_STORE/junkdir/deeper" "$P_STORE/d/f7"
echo junk >"$P_STORE/junkdir/deeper/x"; echo junk >"$P_STORE/d/f8"

mirror --delete --json >"$T/j1"; rc=$?
check "the first mirror exits 0" [ $rc -eq 0 ]
check "the peer's store equals the source (treecmp)" equal
check "--json counts the files sent" [ "$(jget "$T/j1" files_sent_whole)" -ge 40 ]

mirror --json >"$T/j2"
check "a rerun sends nothing" [ "$(jget "$T/j2" files_sent_whole)" -eq 0 ]
check "and reads no content" [ "$(jget "$T/j2" bytes_read)" -eq 0 ]

# changes of every kind
echo more >>"$S/d/f9"; rm "$S/d/f10"
mv "$S/d/f11" "$S/d/e/f11.renamed"; mv "$S/moveme" "$S/moved"
rm "$S/typ_file"; mkdir "$S/typ_file"; echo now-a-dir >"$S/typ_file/x"
rm -r "$S/typ_dir"; ln -s d "$S/typ_dir"
rm "$S/typ_link"; echo now-a-file >"$S/typ_link"
chmod 600 "$S/d/f12"; chown 99:98 "$S/d/f13"
ln "$S/d/f14" "$S/d/f14.link"; rm "$S/d/e/hard1"; cp -p "$S/d/f1" "$S/d/e/hard1"
setfattr -n user.colour -v red "$S/d/f6"; setfattr -n user.new -v 1 "$S/d/f15"
chmod 0750 "$S"; setfattr -n user.top -v 1 "$S"	# the root's own
python3 - "$S/big" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(1 << 20)
    f.write(b"x" * 1000)
PY
cp -a "$P_STORE" "$T/before"
mirror --delete --dry-run --itemize >"$T/dry"; rc=$?
cat "$T/dry"
check "--dry-run exits 0" [ $rc -eq 0 ]
check "--dry-run changes nothing on the peer" python3 "$TWINFS_SRC/tests/e2e/treecmp.py" "$T/before" "$P_STORE"
check "it itemizes a content change" grep -q '^>f\.st.* d/f9$' "$T/dry"
check "a deletion" grep -q '^\*deleting   d/f10$' "$T/dry"
check "a rename" grep -q '^Rf.* d/e/f11.renamed (from d/f11)$' "$T/dry"
check "a permission change" grep -q '^\.f\.\.\.p.* d/f12$' "$T/dry"
check "a hard link" grep -q '^hf.* d/f14.link => d/f14$' "$T/dry"
check "a type change" grep -q '^cd+++++++++ typ_file/$' "$T/dry"
check "the root's own attributes" grep -q '^\.d\.\.tp\.\.\.\.x \./$' "$T/dry"

mirror --delete --json >"$T/j3"; rc=$?
check "the second mirror exits 0" [ $rc -eq 0 ]
check "the peer's store equals the changed source (treecmp)" equal
check "renames are moves, not re-sent" [ "$(jget "$T/j3" renamed)" -ge 4 ]
check "the large file went by delta: at most 2 blocks of it sent" \
	[ "$(jget "$T/j3" bytes_sent_delta)" -le 262144 ]
check "and the rest matched" [ "$(jget "$T/j3" bytes_matched)" -ge 2800000 ]

# bit rot on the peer: size and mtime kept; only --checksum sees it
python3 - "$P_STORE/d/f16" <<'PY'
import os, sys
p = sys.argv[1]; st = os.stat(p)
with open(p, "r+b") as f:
    f.seek(10); b = f.read(1); f.seek(10); f.write(bytes([b[0] ^ 1]))
os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
PY
"$TWINFS_BIN" verify "$S" "127.0.0.1:$PORT" --psk-file "$T/psk" >"$T/v" 2>&1; rc=$?
check "verify names the flipped file (exit 65)" sh -c "[ $rc -eq 65 ] && grep -q '^d/f16: content differs' '$T/v'"
mirror --checksum --itemize >"$T/ck"
check "--checksum finds it" grep -q '^>fc.* d/f16$' "$T/ck"
check "and fixes it" equal

# a local folder, --exclude
mkdir "$T/local"; echo keep >"$T/local/scratch.tmp"
"$TWINFS_BIN" mirror "$S" "$T/local" --delete --exclude '*.tmp' --exclude d/e/ -q; rc=$?
check "a local destination: exit 0" [ $rc -eq 0 ]
check "an excluded name on the destination is kept" [ -f "$T/local/scratch.tmp" ]
check "an excluded folder is not sent" [ ! -e "$T/local/d/e" ]
check "the rest equals the source" python3 "$TWINFS_SRC/tests/e2e/treecmp.py" \
	--ignore d/e --ignore scratch.tmp "$S" "$T/local"
finish
