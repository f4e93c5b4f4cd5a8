#!/bin/sh
# Builds the libFuzzer targets with clang (ASan + UBSan) in a build folder
# of their own and runs each for TWINFS_FUZZ_SECONDS (default 20) from its
# seed corpus in tests/fuzz/corpus/ (new inputs go to a temporary folder,
# never into the repository). Fails on any crash, leak or sanitizer
# report; prints each target's executions and coverage. Skips (77)
# without clang. bench/fuzz.sh runs the same for longer.
. "$(dirname "$0")/../e2e/lib.sh"
command -v clang >/dev/null || skip "clang missing (apt install clang)"
SECS=${TWINFS_FUZZ_SECONDS:-20}
B=${TWINFS_BUILD:-$TWINFS_SRC/build}/fuzz
cmake -S "$TWINFS_SRC" -B "$B" -DCMAKE_C_COMPILER=clang -DTWINFS_FUZZ=ON \
	-DTWINFS_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$T/cmake.log" 2>&1 ||
	{ cat "$T/cmake.log"; fail "cannot configure the fuzz build"; }
cmake --build "$B" -j2 --target fuzz_proto fuzz_conf fuzz_tls fuzz_ctljson fuzz_delta >"$T/build.log" 2>&1 ||
	{ tail -30 "$T/build.log"; fail "cannot build the fuzz targets"; }
for t in proto conf tls ctljson delta; do
	mkdir -p "$T/corpus-$t"
	"$B/tests/fuzz/fuzz_$t" -max_total_time="$SECS" -print_final_stats=1 \
		-artifact_prefix="$T/crash-$t-" "$T/corpus-$t" "$TWINFS_SRC/tests/fuzz/corpus/$t" \
		>"$T/$t.log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$T/$t.log")
	cov=$(grep -o 'cov: [0-9]*' "$T/$t.log" | tail -n1)
	note "fuzz_$t: ${execs:-?} executions in ${SECS} s, $cov"
	[ $rc -eq 0 ] || { grep -A15 -E 'ERROR|SUMMARY' "$T/$t.log" | head -40; }
	check "fuzz_$t finds no crash in ${SECS} s" [ $rc -eq 0 ]
done
finish
