#!/bin/sh
# `status`, `sync` and `verify` take --config FILE (the file the daemon was started
# from) instead of --state DIR; --state wins over the file. A missing file
# is 66, a file without `state:` 78, neither flag 64: the table of
# docs/exit-codes.md.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse

S=$T/store ST=$T/state M=$T/mnt
mkdir -p "$S" "$M"
track_mount "$M"
printf 'store: %s\nstate: %s\nmountpoint: %s\n' "$S" "$ST" "$M" >"$T/share.yaml"
"$TWINFS_BIN" mount --config "$T/share.yaml" 2>"$T/mount.err"; rc=$?
check "mount --config exits 0 (got $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || cat "$T/mount.err" >&2
"$TWINFS_BIN" status --config "$T/share.yaml" >"$T/status.out" 2>&1; rc=$?
[ $rc -eq 0 ] || cat "$T/status.out" >&2
check "status --config exits 0 (got $rc)" [ $rc -eq 0 ]
check "status --config shows the primary" grep -qi "primary" "$T/status.out"
"$TWINFS_BIN" status --config "$T/share.yaml" --json >"$T/status.json"
check "status --config --json names the mountpoint" grep -q "\"mountpoint\":\"$M\"" "$T/status.json"
"$TWINFS_BIN" sync --config "$T/share.yaml" --timeout 10 >"$T/sync.out" 2>&1; rc=$?
note "sync without a peer: $(tail -n1 "$T/sync.out")"
check "sync --config reaches the mount (no peer: 69, got $rc)" [ $rc -eq 69 ]
check "sync --config says why" grep -qi "peer" "$T/sync.out"
"$TWINFS_BIN" status --config "$T/share.yaml" --state "$T/nowhere" >/dev/null 2>&1; rc=$?
check "--state wins over the file (no daemon there: 69, got $rc)" [ $rc -eq 69 ]
"$TWINFS_BIN" verify --config "$T/share.yaml" >"$T/verify.out" 2>&1; rc=$?
check "verify --config reaches the mount (no peer: 69, got $rc)" [ $rc -eq 69 ]
"$TWINFS_BIN" verify --config "$T/none.yaml" 2>"$T/e0"; rc=$?
check "verify --config missing file exits 66 (got $rc)" [ $rc -eq 66 ]
"$TWINFS_BIN" status --config "$T/none.yaml" 2>"$T/e1"; rc=$?
check "status --config missing file exits 66 (got $rc)" [ $rc -eq 66 ]
printf 'store: %s\n' "$S" >"$T/nostate.yaml"
"$TWINFS_BIN" sync --config "$T/nostate.yaml" 2>"$T/e2"; rc=$?
check "sync --config without state: exits 78 (got $rc)" [ $rc -eq 78 ]
check "and says so on the last line" sh -c 'tail -n1 "$1" | grep -q "state"' _ "$T/e2"
"$TWINFS_BIN" status 2>/dev/null; rc=$?
check "status with neither flag exits 64 (got $rc)" [ $rc -eq 64 ]
fusermount3 -u "$M"
wait_until 10 sh -c '! grep -qs " $1 " /proc/mounts' _ "$M"
# the daemon outlives its mount by its shutdown (flush, journal close)
wait_until 15 sh -c '! "$0" status --config "$1" >/dev/null 2>&1' "$TWINFS_BIN" "$T/share.yaml"
"$TWINFS_BIN" status --config "$T/share.yaml" >/dev/null 2>&1; rc=$?
check "status --config once the daemon is gone exits 69 (got $rc)" [ $rc -eq 69 ]
finish
