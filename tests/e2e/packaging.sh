#!/bin/sh
# Packaging: the Debian package builds with debhelper (debian/), is
# lintian clean (no error or warning, --pedantic included), and holds the
# binary, mount helpers, systemd units, man pages and example config; the
# mount helper mounts a real twinfs from a config file the way mount(8)
# calls it.
. "$(dirname "$0")/lib.sh"
need_root
command -v dpkg-deb >/dev/null || skip "dpkg-deb missing"
command -v dh >/dev/null || skip "debhelper missing (packaging/install-deps.sh installs it)"

deb=$("$TWINFS_SRC/packaging/build-deb.sh" "$T/deb" 2>"$T/deb.err"); rc=$?
check "build-deb.sh succeeds" [ $rc -eq 0 ]
[ $rc -eq 0 ] || { cat "$T/deb.err" >&2; finish; }
dpkg-deb -c "$deb" >"$T/contents"
for f in ./usr/bin/twinfs ./sbin/mount.twinfs ./sbin/mount.fuse.twinfs \
	./lib/systemd/system/twinfs-mount@.service \
	./lib/systemd/system/twinfs-serve@.service ./usr/share/man/man1/twinfs.1.gz \
	./usr/share/man/man8/mount.twinfs.8.gz ./usr/share/man/man8/mount.fuse.twinfs.8.gz \
	./usr/share/doc/twinfs/exit-codes.md ./usr/share/doc/twinfs/copyright \
	./usr/share/doc/twinfs/examples/twinfs.example.yaml ./usr/lib/twinfs/twinfs-notify \
	./usr/share/doc/twinfs/examples/keepalived.conf.example ./usr/share/doc/twinfs/failover.md.gz; do
	check "package holds $f" grep -q " $f\( -> .*\)\?\$" "$T/contents"
done
if command -v lintian >/dev/null; then
	lintian --pedantic "${deb%.deb}.changes" >"$T/lintian.out" 2>&1
	check "lintian --pedantic: no error or warning" sh -c '! grep -E "^(E|W):" "$1"' _ "$T/lintian.out"
	grep -E "^[EWIPX]:" "$T/lintian.out" | sed 's/^/# /'
else
	note "lintian missing: not checked"
fi
dpkg-deb -f "$deb" Depends >"$T/depends"
check "package depends on fuse3" grep -q "fuse3" "$T/depends"
dpkg-deb -x "$deb" "$T/root"
check "packaged binary runs" "$T/root/usr/bin/twinfs" --version
check "man page renders" sh -c 'zcat "$1" | grep -q "^.SH SUBCOMMANDS"' _ "$T/root/usr/share/man/man1/twinfs.1.gz"
check "units name the config" grep -q "/etc/twinfs/%i.yaml" "$T/root/lib/systemd/system/twinfs-mount@.service"

# mount.twinfs CONFIG MOUNTPOINT -o OPTS, as mount(8) runs it.
if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
	# the helper runs the twinfs beside it (else /usr/bin/twinfs)
	mkdir -p "$T/bin" "$T/store" "$T/state" "$T/mnt"
	ln -s "$TWINFS_BIN" "$T/bin/twinfs"
	cp "$TWINFS_SRC/packaging/mount.twinfs" "$T/bin/mount.twinfs"
	echo hello >"$T/store/greeting"
	cat >"$T/share.yaml" <<YAML
store: $T/store
state: $T/state

YAML
	track_mount "$T/mnt"
	"$T/bin/mount.twinfs" "$T/share.yaml" "$T/mnt" \
		-o defaults,_netdev,noatime >"$T/m.out" 2>&1; rc=$?
	check "mount.twinfs exits 0" [ $rc -eq 0 ] || cat "$T/m.out" >&2
	check "mount.twinfs mounted at the given mountpoint" is_mounted "$T/mnt"
	check "mounted store is visible" grep -qx hello "$T/mnt/greeting"
	fusermount3 -u "$T/mnt" 2>/dev/null
	wait_until 10 sh -c '! grep -qs " $1 " /proc/mounts' _ "$T/mnt"
	check "unmounted" sh -c '! grep -qs " $1 " /proc/mounts' _ "$T/mnt"
fi
finish
