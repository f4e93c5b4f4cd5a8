#!/bin/sh
# splitfuzz-soak: the split brain's randomized test (tests/e2e/splitfuzz.py)
# seed after seed for a given time; prints each failing seed with the
# checks it failed, and a summary line: seeds run, failed, harness errors,
# and how many seeds failed each check. A failing seed's output (ops,
# check lines, both daemons' log tails) and folder stay in the log folder.
# Usage: bench/splitfuzz-soak.sh [--duration SECONDS] [--seed FIRST]
#        [--ops PER_PHASE] [--restart auto|always|never] [--logs DIR]
#        (needs root and a build in ./build; BUILD=dir to change)
set -eu
BUILD=${BUILD:-$(dirname "$0")/../build}
SRC=$(cd "$(dirname "$0")/.." && pwd)
DURATION=3600 SEED=1000 OPS=12 RESTART=auto LOGS=
while [ $# -gt 0 ]; do
	case $1 in
	--duration) DURATION=$2; shift 2 ;;
	--seed) SEED=$2; shift 2 ;;
	--ops) OPS=$2; shift 2 ;;
	--restart) RESTART=$2; shift 2 ;;
	--logs) LOGS=$2; shift 2 ;;
	*) echo "splitfuzz-soak: unknown option $1" >&2; exit 64 ;;
	esac
done
[ -n "$LOGS" ] || LOGS=$(mktemp -d "${TMPDIR:-/tmp}/splitfuzz-soak.XXXXXX")
mkdir -p "$LOGS"
end=$(( $(date +%s) + DURATION ))
seeds=0 failed=0 harness=0 first=$SEED
: >"$LOGS/checks"
while [ "$(date +%s)" -lt "$end" ]; do
	log=$LOGS/seed-$SEED.log
	rc=0
	python3 "$SRC/tests/e2e/splitfuzz.py" --twinfs "$BUILD/src/twinfs" --seed "$SEED" \
		--ops "$OPS" --restart "$RESTART" --keep "$LOGS/folders" >"$log" 2>&1 || rc=$?
	if [ "$rc" -eq 0 ]; then
		rm -f "$log"
		rm -rf "$LOGS/folders/seed-$SEED"
	else
		[ "$rc" -eq 1 ] && failed=$((failed + 1)) || harness=$((harness + 1))
		line=$(sed -n 's/^# seed [0-9]*: FAIL \([^(]*\).*/\1/p' "$log")
		echo "seed $SEED: FAIL ${line:-exit $rc} ($log)"
		for c in $line; do echo "$c" >>"$LOGS/checks"; done
	fi
	seeds=$((seeds + 1))
	SEED=$((SEED + 1))
done
echo "splitfuzz-soak: seeds $first..$((SEED - 1)) ($seeds seeds, $OPS ops per phase," \
	"restart $RESTART), $failed failed, $harness harness errors; logs in $LOGS"
[ -s "$LOGS/checks" ] && echo "  seeds failing each check: $(sort "$LOGS/checks" | uniq -c |
	awk '{printf "%s %s, ", $2, $1}' | sed 's/, $//')"
[ "$failed" -eq 0 ] && [ "$harness" -eq 0 ]
