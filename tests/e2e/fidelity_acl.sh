#!/bin/sh
# POSIX ACLs replicate exactly: access ACLs on files and folders, default
# ACLs and what new files and folders inherit from them (the peer's store
# derives the same inherited ACLs and modes as the primary's), the mask a
# chmod rewrites, ACLs removed (setfacl -b, -k), copies that keep their
# ACLs (cp -a), a folder with a default ACL renamed and written in; once
# live and once queued while the peer is stopped (SIGSTOP). After each
# `twinfs sync` the stores compare equal field for field (treecmp reads
# every xattr, system.posix_acl_* included) and `getfacl -R` of the mount
# and the peer's store print the same.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"
command -v setfacl >/dev/null || skip "setfacl missing (apt install acl)"

start_serve
start_mount

# ROUND: ACL changes of every kind under $MNT/rROUND
acl_ops() {
	set -e
	r="$MNT/r$1"
	mkdir "$r"
	mkdir "$r/shared"
	setfacl -m u:1234:rwx,g:4321:rx "$r/shared"
	setfacl -d -m u:1234:rwx,g:4321:rx,o::- "$r/shared"
	echo inherited >"$r/shared/file"
	mkdir -p "$r/shared/sub/deeper"
	echo deeper >"$r/shared/sub/deeper/file"
	mkfifo "$r/shared/fifo"
	ln -s file "$r/shared/link"
	echo plain >"$r/plain"
	setfacl -m u:99:r,g:100:rw "$r/plain"
	chmod 0604 "$r/plain"		# rewrites the ACL's mask
	echo bare >"$r/bare"
	setfacl -m u:99:rw "$r/bare"
	setfacl -b "$r/bare"		# access ACL removed
	mkdir "$r/nodefault"
	setfacl -d -m u:1234:r "$r/nodefault"
	setfacl -k "$r/nodefault"	# default ACL removed
	cp -a "$r/shared/file" "$r/copy"
	mv "$r/shared" "$r/moved"
	echo after >"$r/moved/after"
	mkdir "$r/moved/newdir"
	setfacl -x g:4321 "$r/moved/file"
	set +e
}

acls_equal() {
	(cd "$MNT" && getfacl -R -p . 2>/dev/null) >"$T/mnt.acl"
	(cd "$P_STORE" && getfacl -R -p . 2>/dev/null) >"$T/peer.acl"
	diff "$T/mnt.acl" "$T/peer.acl" >&2
}

acl_ops 1 || fail "ACL operations failed on the mount (round 1)"
check "an inherited default ACL reached a new file" sh -c \
	"getfacl -p '$MNT/r1/moved/file' | grep -q '^user:1234:rwx'"
check "round 1 (live): sync" synced 60
check "round 1: stores equal (treecmp, every xattr)" stores_replicated
check "round 1: getfacl -R of the mount and the peer's store agree" acls_equal

kill -STOP "$SERVE_PID"
acl_ops 2 || { kill -CONT "$SERVE_PID"; fail "ACL operations failed on the mount (round 2)"; }
kill -CONT "$SERVE_PID"
check "round 2 (queued behind a stopped peer): sync" synced 60
check "round 2: stores equal (treecmp, every xattr)" stores_replicated
check "round 2: getfacl -R of the mount and the peer's store agree" acls_equal
finish
