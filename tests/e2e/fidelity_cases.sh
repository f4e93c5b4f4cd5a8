#!/bin/sh
# Fidelity: replays every sequence the differential tester found and
# shrank (tests/e2e/difftest_cases/*.jsonl, each with a comment saying what
# failed and why) through a replicating mount, with the checks of
# difftest.py (sync exits 0, the stores equal by treecmp, the mount shows
# the store, errnos as on a plain directory, the tree as on a plain
# directory) and --strict-apply: the peer never reports an apply error (a
# frame the sender sent that the peer's store could not take).
. "$(dirname "$0")/lib.sh"
need_root
need_fuse

for c in "$TWINFS_SRC"/tests/e2e/difftest_cases/*.jsonl; do
	name=$(basename "$c" .jsonl)
	# a case may name the mount's arguments ("# mount-args: --mode sync")
	margs=$(sed -n 's/^# mount-args: //p' "$c")
	python3 "$TWINFS_SRC/tests/e2e/difftest.py" --twinfs "$TWINFS_BIN" --mode mount \
		--replay "$c" --mount-args="$margs" --sync-timeout 20 --shrink-seconds 0 \
		--strict-apply >"$T/$name.log" 2>&1
	rc=$?
	[ $rc -eq 0 ] || grep -v '^\["' "$T/$name.log" | cut -c1-240 | head -30 | sed 's/^/# /'
	check "case $name: every property holds" [ $rc -eq 0 ]
done
finish
