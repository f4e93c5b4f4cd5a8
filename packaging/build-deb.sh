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
# A clean checkout: in a git tree only the files git knows or would add
# (no build directories, no ignored debris); elsewhere the tree without
# build directories and VCS data.
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$src" ls-files -z --cached --others --exclude-standard |
		(cd "$src" && xargs -0 sh -c 'for f; do [ -e "$f" ] || [ -L "$f" ] && printf "%s\0" "$f"; done' _) |
		tar -C "$src" --null -T - -cf - | tar -C "$out/src" -xf -
else
	tar -C "$src" --exclude=./.git --exclude='./build' --exclude='./build-*' \
		--exclude='./obj-*' -cf - . | tar -C "$out/src" -xf -
fi
rm -f "$out"/twinfs_*.deb "$out"/twinfs_*.changes "$out"/twinfs_*.buildinfo \
	"$out"/twinfs-dbgsym_*.deb
(cd "$out/src" && dpkg-buildpackage -b -us -uc -j"$(nproc)" >"$out/build.log" 2>&1) || {
	tail -n 30 "$out/build.log" >&2
	echo "build-deb.sh: dpkg-buildpackage failed (log: $out/build.log)" >&2
	exit 70
}
ls "$out"/twinfs_*.deb
