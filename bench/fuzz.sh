#!/bin/sh
# Runs every libFuzzer target for longer than CI does (default 600 s
# each), from the seed corpora, and prints executions and coverage.
# Usage: bench/fuzz.sh [SECONDS]   Needs clang.
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)
TWINFS_FUZZ_SECONDS=${1:-600} TWINFS_SRC=$HERE TWINFS_BUILD=$HERE/build \
	exec "$HERE/tests/fuzz/smoke.sh"
