#!/bin/sh
# Installs exactly the Debian 12 packages twinfs needs to build, test and run.
# Idempotent and non-interactive; run as root. Used by both README commands
# and by .ci/run, so nothing depends on what a machine happens to have.
set -eu

BUILD="build-essential cmake pkg-config git ca-certificates"
LIBS="libfuse3-dev libxxhash-dev libevent-dev libssl-dev libyaml-dev liburing-dev"
RUN="fuse3 attr"
TEST="libcmocka-dev acl clang prometheus python3 libxml2-utils iproute2 nftables rsync fio procps psmisc util-linux kmod chromium systemd groff-base keepalived"
# bench/fs-speed.sh: the busy-machine half of each figure
BENCH="stress-ng"
# the Debian package (packaging/build-deb.sh, tests/e2e/packaging.sh)
PKG="dpkg-dev debhelper lintian"
FUZZ="clang"

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps.sh: must run as root (it calls apt-get)" >&2
	exit 77
fi

pkgs="$BUILD $LIBS $RUN $TEST $PKG $BENCH"
[ "${TWINFS_FUZZ:-0}" = 1 ] && pkgs="$pkgs $FUZZ"

missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -z "$missing" ]; then
	echo "install-deps.sh: all packages present"
	exit 0
fi
echo "install-deps.sh: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
