#!/bin/sh
# Refusals touch nothing: each refused `mount` and `serve` runs against an
# empty state directory, which must stay empty, and exits with the code
# docs/exit-codes.md gives for its fault (the same for mount and serve),
# with the reason on the last line of stderr. Nothing is sent anywhere: a
# non-loopback peer or listen address is refused before any socket opens.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse

S=$T/store ST=$T/state M=$T/mnt
mkdir -p "$S" "$ST" "$M" "$T/other-store" "$T/other-state" "$T/busy-mnt"
track_mount "$T/busy-mnt"

# refused WANT WHAT -- CMD...: runs CMD, checks the exit code, that the
# state dir is still empty, that the store is untouched, and that the
# last line of stderr is the reason (not a hint or a generic errno).
refused() {
	want=$1 what=$2; shift 3
	"$@" >"$T/out" 2>"$T/err"; rc=$?
	check "$what: exit $want (got $rc)" [ "$rc" -eq "$want" ]
	check "$what: state dir still empty" [ -z "$(ls -A "$ST")" ]
	check "$what: store untouched" [ -z "$(ls -A "$S")" ]
	check "$what: nothing mounted" sh -c '! grep -qs " $1 " /proc/mounts' _ "$M"
	last=$(tail -n1 "$T/err")
	# a reason names the thing and what is wrong with it; a bare errno
	# text ("Operation not permitted") or a hint is not one
	check "$what: last line is the reason ($last)" sh -c \
		'printf "%s\n" "$1" | grep -qi "refus\|in use\|busy\|cannot\|unknown\|no such\|not a \|inside" &&
		 printf "%s\n" "$1" | grep -q "[:/]"' _ "$last"
}

# a daemon that holds the other store and a port
PORT=$(free_port)
"$TWINFS_BIN" serve --store "$T/other-store" --state "$T/other-state" --listen "127.0.0.1:$PORT"
check "helper serve starts" [ $? -eq 0 ]
FREE=$(free_port)

mount_args="--store $S --state $ST --mountpoint $M"
refused 78 "mount: non-loopback peer without keys" -- \
	"$TWINFS_BIN" mount $mount_args --peer 192.0.2.1:7000
refused 78 "serve: non-loopback listen without keys" -- \
	"$TWINFS_BIN" serve --store "$S" --state "$ST" --listen 0.0.0.0:"$FREE"
refused 69 "serve: port in use" -- \
	"$TWINFS_BIN" serve --store "$S" --state "$ST" --listen 127.0.0.1:"$PORT"
refused 69 "mount: metrics port in use" -- \
	"$TWINFS_BIN" mount --store "$S" --state "$ST" --mountpoint "$M" --metrics 127.0.0.1:"$PORT"
refused 69 "serve: metrics port in use" -- \
	"$TWINFS_BIN" serve --store "$S" --state "$ST" --listen 127.0.0.1:"$FREE" \
	--metrics 127.0.0.1:"$PORT"
refused 66 "mount: missing store" -- \
	"$TWINFS_BIN" mount --store "$T/missing" --state "$ST" --mountpoint "$M"
refused 66 "serve: missing store" -- \
	"$TWINFS_BIN" serve --store "$T/missing" --state "$ST" --listen 127.0.0.1:"$FREE"
refused 66 "mount: missing mountpoint" -- \
	"$TWINFS_BIN" mount --store "$S" --state "$ST" --mountpoint "$T/missing"
refused 78 "mount: state dir inside the store" -- \
	"$TWINFS_BIN" mount --store "$S" --state "$S/state" --mountpoint "$M"
refused 78 "serve: state dir inside the store" -- \
	"$TWINFS_BIN" serve --store "$S" --state "$S/state" --listen 127.0.0.1:"$FREE"
refused 69 "mount: second writer on a store" -- \
	"$TWINFS_BIN" mount --store "$T/other-store" --state "$ST" --mountpoint "$M"
refused 69 "serve: second writer on a store" -- \
	"$TWINFS_BIN" serve --store "$T/other-store" --state "$ST" --listen 127.0.0.1:"$FREE"

if mount -t tmpfs tmpfs "$T/busy-mnt" 2>/dev/null; then
	refused 69 "mount: mountpoint busy with another filesystem" -- \
		"$TWINFS_BIN" mount --store "$S" --state "$ST" --mountpoint "$T/busy-mnt"
	umount "$T/busy-mnt"
fi

printf 'store: %s\nstate: %s\nmountpoint: %s\nlisten: 127.0.0.1:%s\nbogus_key: 1\n' \
	"$S" "$ST" "$M" "$FREE" >"$T/bad.yaml"
refused 78 "mount: bad config" -- "$TWINFS_BIN" mount --config "$T/bad.yaml"
refused 78 "serve: bad config" -- "$TWINFS_BIN" serve --config "$T/bad.yaml"
refused 66 "mount: missing config file" -- "$TWINFS_BIN" mount --config "$T/none.yaml"
refused 66 "serve: missing config file" -- "$TWINFS_BIN" serve --config "$T/none.yaml"
printf 'store: %s\nstate: %s\nmountpoint: %s\npeer: 192.0.2.1:7000\n' "$S" "$ST" "$M" >"$T/nl.yaml"
refused 78 "mount --config: non-loopback peer without keys" -- \
	"$TWINFS_BIN" mount --config "$T/nl.yaml"
refused 64 "mount: unknown option" -- "$TWINFS_BIN" mount --no-such-option
refused 64 "mount: a FUSE option libfuse does not know" -- \
	"$TWINFS_BIN" mount $mount_args -o no_such_fuse_option
printf 'store: %s\nstate: %s\nmountpoint: %s\nfuse:\n  options: "no_such_fuse_option"\n' \
	"$S" "$ST" "$M" >"$T/fo.yaml"
refused 78 "mount --config: a FUSE option libfuse does not know" -- \
	"$TWINFS_BIN" mount --config "$T/fo.yaml"
refused 64 "serve: unknown option" -- "$TWINFS_BIN" serve --no-such-option

"$TWINFS_BIN" status --state "$T/other-state" --json >"$T/st.json"
spid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("pid",""))' "$T/st.json")
[ -n "$spid" ] && kill -TERM "$spid" && wait_until 10 sh -c '! kill -0 "$1"' _ "$spid"
finish
