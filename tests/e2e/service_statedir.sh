#!/bin/sh
# A state directory others could tamper with is refused by `mount` and
# `serve` before anything starts (exit 78, the reason last): one writable
# by its group or others, a journal/ or tls/ writable by others, one owned
# by another user, and a symbolic link in it, in journal/ or as tls/ (a
# planted node.id, acked file or key would be followed). Nothing in the
# state directory changes; the same directory made safe is accepted.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/replication_lib.sh"

# refused CMD LABEL WHY: CMD against $S exits 78 naming WHY, and $S is
# as it was
refused() {
	_cmd=$1 _label=$2 _why=$3
	before=$(ls -laR "$S" | md5sum)
	if [ "$_cmd" = serve ]; then
		"$TWINFS_BIN" serve --store "$P_STORE" --state "$S" --listen "127.0.0.1:$PORT" \
			>"$T/out" 2>&1
	else
		"$TWINFS_BIN" mount --store "$A_STORE" --state "$S" --mountpoint "$MNT" \
			>"$T/out" 2>&1
	fi
	rc=$?
	check "$_cmd, $_label: refused with 78 (got $rc)" [ $rc -eq 78 ]
	check "$_cmd, $_label: says why" grep -q "$_why" "$T/out"
	check "$_cmd, $_label: the state directory is unchanged" \
		[ "$(ls -laR "$S" | md5sum)" = "$before" ]
	is_mounted "$MNT" && fusermount3 -u "$MNT"
	[ $rc -eq 78 ] || cat "$T/out"
}

S=$T/state
fresh() { rm -rf "$S"; mkdir -m 700 "$S"; }

for cmd in serve mount; do
	fresh; chmod 777 "$S"
	refused $cmd "a world-writable state dir" "is writable by others (mode 0777)"
	fresh; chmod 770 "$S"
	refused $cmd "a group-writable state dir" "is writable by its group"
	fresh; mkdir -m 777 "$S/journal"; chmod 777 "$S/journal"
	refused $cmd "a world-writable journal/" "journal is writable by others"
	fresh; chown 12345 "$S"
	refused $cmd "a state dir of another user" "is owned by uid 12345"
	fresh; echo 0123456789abcdef0123456789abcdef >"$T/elsewhere"
	ln -s "$T/elsewhere" "$S/node.id"
	refused $cmd "node.id a symlink" "node.id is a symbolic link"
	fresh; mkdir -m 700 "$S/journal"; ln -s "$T/elsewhere" "$S/journal/acked"
	refused $cmd "journal/acked a symlink" "journal/acked is a symbolic link"
	fresh; mkdir -m 700 "$T/keys"; ln -s "$T/keys" "$S/tls"
	refused $cmd "tls/ a symlink" "tls is a symbolic link"
done
check "the planted files were never written" \
	[ "$(cat "$T/elsewhere")" = 0123456789abcdef0123456789abcdef ]

# The same directory, safe, is accepted; the state dir itself may be a
# link of the admin's.
fresh
ln -s "$S" "$T/state-link"
P_STATE=$T/state-link
start_serve
check "serve accepts a safe state dir reached through a link" daemon_up "$P_STATE"
check "it made nothing writable by others" \
	sh -c "[ -z \"\$(find '$S' -perm /022 ! -type l ! -type s)\" ]"
kill_serve
finish
