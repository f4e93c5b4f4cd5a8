#!/bin/sh
# Fidelity: replays a sequence the differential tester found and shrank
# (tests/e2e/difftest_cases/overflow_rename_enotempty.jsonl): directory
# renames and creates, then a journal overflow with the peer dead. When the
# peer is back it must apply everything: today it fails "rename 'd3/d1':
# Directory not empty" and `twinfs sync` never completes. The replay checks
# what difftest.py checks (sync, treecmp of the stores, the mount's view,
# errnos against a plain directory); the errnos of device opens differ
# anyway (the mount is nodev), so only sync, replica and view count here.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse

python3 "$TWINFS_SRC/tests/e2e/difftest.py" --twinfs "$TWINFS_BIN" --mode mount \
	--replay "$TWINFS_SRC/tests/e2e/difftest_cases/overflow_rename_enotempty.jsonl" \
	--sync-timeout 20 --shrink-seconds 0 >"$T/replay.log" 2>&1
grep -v '^\["' "$T/replay.log" | cut -c1-240 | head -40
check "sync completes after the overflow" sh -c "! grep -q '^FAIL sync' '$T/replay.log'"
check "the peer's store equals the primary's (treecmp)" sh -c "! grep -q '^FAIL replica' '$T/replay.log'"
check "the mount shows the store" sh -c "! grep -q '^FAIL view' '$T/replay.log'"
finish
