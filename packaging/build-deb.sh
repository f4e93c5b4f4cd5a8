#!/bin/sh
# Builds twinfs_<version>_<arch>.deb from this checkout with debhelper
# (debian/: dh, compat 13): the binary, the mount helpers (mount -t twinfs,
# mount -t fuse.twinfs), systemd units, man pages, the exit-code table and
# the example config. Builds in a copy of the tree under OUTDIR, so the
# checkout gets no debian/ build debris and the .deb lands in OUTDIR.
# Usage: packaging/build-deb.sh [OUTDIR]   (default: build-deb/)
# Prints the .deb's path. Needs debhelper and the build dependencies
# (packaging/install-deps.sh installs both).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$src/build-deb}
mkdir -p "$out"
out=$(cd "$out" && pwd)
command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null || {
	echo "build-deb.sh: dpkg-buildpackage and dh missing: apt install dpkg-dev debhelper" >&2
	exit 69
}
rm -rf "$out/src"
mkdir -p "$out/src"
# the tree without build directories and VCS data
tar -C "$src" --exclude=./.git --exclude='./build' --exclude='./build-*' \
	--exclude='./obj-*' -cf - . | tar -C "$out/src" -xf -
rm -f "$out"/twinfs_*.deb "$out"/twinfs_*.changes "$out"/twinfs_*.buildinfo \
	"$out"/twinfs-dbgsym_*.deb
(cd "$out/src" && dpkg-buildpackage -b -us -uc -j"$(nproc)" >"$out/build.log" 2>&1) || {
	tail -n 30 "$out/build.log" >&2
	echo "build-deb.sh: dpkg-buildpackage failed (log: $out/build.log)" >&2
	exit 70
}
ls "$out"/twinfs_*.deb
