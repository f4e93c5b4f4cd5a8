#!/bin/sh
# Builds twinfs_<version>_<arch>.deb from this checkout: the binary, the
# mount helpers (mount -t twinfs, mount -t fuse.twinfs), systemd units, man page and example
# config. Usage: packaging/build-deb.sh [OUTDIR]   (default: build-deb/)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$src/build-deb}
bld=$out/build
stage=$out/stage
rm -rf "$bld" "$stage"
mkdir -p "$bld" "$stage"
cmake -S "$src" -B "$bld" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_INSTALL_PREFIX=/usr -DTWINFS_TESTS=OFF >/dev/null
cmake --build "$bld" -j"$(nproc)" >/dev/null
DESTDIR=$stage cmake --install "$bld" >/dev/null
install -D -m 0755 "$src/packaging/mount.twinfs" "$stage/sbin/mount.twinfs"
# fstab type fuse.twinfs (what findmnt shows): the same helper
ln -s mount.twinfs "$stage/sbin/mount.fuse.twinfs"
install -D -m 0644 "$src/packaging/systemd/twinfs-mount@.service" \
	"$stage/lib/systemd/system/twinfs-mount@.service"
install -D -m 0644 "$src/packaging/systemd/twinfs-serve@.service" \
	"$stage/lib/systemd/system/twinfs-serve@.service"
install -D -m 0644 "$src/conf/twinfs.example.yaml" \
	"$stage/usr/share/doc/twinfs/examples/twinfs.example.yaml"
install -D -m 0644 "$src/docs/exit-codes.md" "$stage/usr/share/doc/twinfs/exit-codes.md"
install -d "$stage/etc/twinfs"
install -D -m 0644 "$src/packaging/man/twinfs.1" "$stage/usr/share/man/man1/twinfs.1"
gzip -9n "$stage/usr/share/man/man1/twinfs.1"

version=$("$stage/usr/bin/twinfs" --version | awk '{print $2}')
arch=$(dpkg --print-architecture)
mkdir -p "$stage/DEBIAN"
cat >"$stage/DEBIAN/control" <<CONTROL
Package: twinfs
Version: $version
Architecture: $arch
Maintainer: twinfs developers <twinfs@localhost>
Depends: fuse3, libfuse3-3, libxxhash0, libevent-2.1-7, libevent-pthreads-2.1-7, libevent-openssl-2.1-7, libssl3, libyaml-0-2, liburing2
Section: admin
Priority: optional
Description: replicated file store for two Linux servers
 A FUSE mount that keeps files in a local directory, journals every change
 and streams it to a second server, which verifies each block by XXH3
 before applying it. Includes mirror/verify of trees and a copy and IO
 benchmark.
CONTROL
dpkg-deb --root-owner-group --build "$stage" "$out/twinfs_${version}_${arch}.deb" >/dev/null
echo "$out/twinfs_${version}_${arch}.deb"
