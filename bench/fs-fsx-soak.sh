#!/bin/sh
# fs-fsx-soak: a long fsx run on a twinfs mount (the CI test runs 50,000
# operations; this runs as many as asked, with a chosen seed).
# Usage: bench/fs-fsx-soak.sh [--ops N] [--seed S] [--maxlen BYTES]
#        (needs root and a build in ./build; BUILD=dir to change)
set -eu
BUILD=${BUILD:-$(dirname "$0")/../build}
export TWINFS_BIN=$BUILD/src/twinfs TWINFS_BUILD=$BUILD
OPS=1000000 SEED=$(date +%s) MAXLEN=
while [ $# -gt 0 ]; do
	case $1 in
	--ops) OPS=$2; shift 2 ;;
	--seed) SEED=$2; shift 2 ;;
	--maxlen) MAXLEN=$2; shift 2 ;;
	*) echo "fs-fsx-soak: unknown option $1" >&2; exit 64 ;;
	esac
done
[ -n "$MAXLEN" ] && export TWINFS_FSX_MAXLEN=$MAXLEN
TWINFS_FSX_OPS=$OPS TWINFS_FSX_SEED=$SEED exec "$(dirname "$0")/../tests/e2e/fs_fsx.sh"
