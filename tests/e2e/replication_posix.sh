#!/bin/sh
# The full POSIX operation set on a replicating mount (files, dirs, data,
# truncate, chmod, chown, utimens, symlinks, hard links, xattrs, renames incl.
# directory renames, deletions), then `twinfs sync`: the peer's store equals
# the mount in content, modes, owners, file mtimes, symlinks, hard links
# (one inode on the peer too) and user xattrs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
command -v setfattr >/dev/null || skip "setfattr missing (apt install attr)"

start_serve
start_mount

ops() {
	set -e
	cd "$MNT"
	mkdir -p d1/d2/d3 empty gone/sub
	echo hello >d1/f1
	head -c 3000000 /dev/urandom >big
	head -c 3000000 /dev/urandom >d1/d2/data
	printf 'XXXX' | dd of=big bs=1 seek=100000 conv=notrunc status=none
	# A write while a reader holds the file open: with FUSE passthrough
	# the kernel puts the writer in passthrough too (we never see its
	# writes; the journal must still get them).
	exec 3<big
	printf 'YYYY' | dd of=big bs=1 seek=200000 conv=notrunc status=none
	exec 3<&-
	truncate -s 1000 d1/d2/data
	truncate -s 5M sparse
	printf 'tail' >>sparse
	chmod 0640 d1/f1
	chmod 0700 d1/d2
	chown 65534:65534 d1/f1
	chown 1234:4321 big
	touch -d '2020-01-02 03:04:05' d1/f1
	touch -d '2019-06-07 08:09:10' big
	ln -s f1 d1/link
	ln -s ../../nowhere d1/dangling
	ln d1/f1 d1/hard
	setfattr -n user.color -v blue d1/f1
	setfattr -n user.tmp -v x d1/f1
	setfattr -x user.tmp d1/f1
	setfattr -n user.dir -v yes d1/d2
	echo one >gone/sub/a
	echo two >gone/b
	rm gone/sub/a
	rmdir gone/sub
	rm gone/b
	rmdir gone
	mkdir moveme moveme/inner
	echo inner >moveme/inner/file
	mv moveme renamed
	# changes through inodes whose paths the mount knew before the move
	echo more >renamed/inner/file2
	chmod 0701 renamed/inner
	setfattr -n user.after -v moved renamed/inner/file
	echo old >victim
	echo new >winner
	mv winner victim
	mv d1/f1 d1/f1.renamed
	mkfifo fifo
	echo late >>d1/f1.renamed
	touch -d '2021-01-01 00:00:00' d1/f1.renamed
}
( ops ) >"$T/ops.log" 2>&1
check "the operations succeed on the mount" [ $? -eq 0 ]
[ -s "$T/ops.log" ] && cat "$T/ops.log"

"$TWINFS_BIN" sync --state "$A_STATE" --timeout 30 >"$T/sync.out" 2>&1
rc=$?
cat "$T/sync.out"
check "twinfs sync exits 0" [ $rc -eq 0 ]
check "the peer's store equals the mount" replicated
check "hard link is one inode on the peer" \
	[ "$(stat -c %i "$P_STORE/d1/hard")" = "$(stat -c %i "$P_STORE/d1/f1.renamed")" ]
check "file mtime replicated (set by touch -d)" [ "$(stat -c %Y "$P_STORE/d1/f1.renamed")" = "$(stat -c %Y "$MNT/d1/f1.renamed")" ]
check "xattr replicated" sh -c "getfattr --only-values -n user.color '$P_STORE/d1/f1.renamed' | grep -qx blue"
check "removed xattr gone" sh -c "! getfattr -n user.tmp '$P_STORE/d1/f1.renamed' 2>/dev/null"
check "directory rename replicated" [ -f "$P_STORE/renamed/inner/file" ]
check "changes inside the moved directory land under its new name" sh -c \
	"[ \"\$(cat '$P_STORE/renamed/inner/file2')\" = more ] &&
	 [ \"\$(stat -c %a '$P_STORE/renamed/inner')\" = 701 ] &&
	 getfattr --only-values -n user.after '$P_STORE/renamed/inner/file' | grep -qx moved"
check "deleted directory gone on the peer" [ ! -e "$P_STORE/gone" ]
"$TWINFS_BIN" status --state "$A_STATE" --json >"$T/st.json"
check "status: connected, lag 0" sh -c "grep -q '\"connected\":true' '$T/st.json' && grep -q '\"lag_ops\":0' '$T/st.json'"

# A second round on top: changes after a sync replicate too.
( set -e; cd "$MNT"; rm -r renamed; echo again >>big; chmod 0600 big ) 
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 30 >/dev/null
check "second round: equal again" replicated
finish
