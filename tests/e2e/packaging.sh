#!/bin/sh
# Packaging, the whole way: the Debian package builds with debhelper from a
# clean copy of the checkout, lintian --pedantic finds no error or warning,
# `dpkg -i` installs it on this machine, `systemd-analyze verify` passes
# for the installed units and `systemd-analyze security --offline=yes`
# rates serve within its target, the installed helpers mount a real twinfs
# through `mount -t twinfs` and `mount -t fuse.twinfs` with fstab-style
# arguments, umount ends them, and `dpkg -P` leaves the folders it touched
# exactly as they were (file lists before and after). The package is
# purged on every exit, failure included; the test skips rather than touch
# a twinfs package or helper it did not install. Tests of other builds
# never notice: they run build/src/twinfs, and the one test that installs
# /sbin helpers of its own (service_fstab.sh) waits on the same lock.
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
	./usr/share/man/man5/twinfs.yaml.5.gz \
	./usr/share/man/man8/mount.twinfs.8.gz ./usr/share/man/man8/mount.fuse.twinfs.8.gz \
	./usr/share/doc/twinfs/exit-codes.md ./usr/share/doc/twinfs/copyright \
	./usr/share/doc/twinfs/examples/twinfs.example.yaml ./etc/twinfs/example.yaml \
	./usr/lib/twinfs/twinfs-notify ./usr/share/doc/twinfs/examples/keepalived.conf.example \
	./usr/share/doc/twinfs/failover.md.gz; do
	check "package holds $f" grep -q " $f\( -> .*\)\?\$" "$T/contents"
done
dpkg-deb -f "$deb" Depends >"$T/depends"
check "package depends on fuse3" grep -q "fuse3" "$T/depends"
if command -v lintian >/dev/null; then
	lintian --pedantic "${deb%.deb}.changes" >"$T/lintian.out" 2>&1
	check "lintian --pedantic: no error or warning" sh -c '! grep -E "^(E|W):" "$1"' _ "$T/lintian.out"
	grep -E "^[EWIPX]:" "$T/lintian.out" | sed 's/^/# /'
else
	note "lintian missing: not checked"
fi

# ---- installed on this machine ----
command -v dpkg >/dev/null || skip "dpkg missing: install not checked"
# One installer of /sbin helpers at a time, machine-wide.
exec 9>/run/lock/twinfs-sbin-helpers.lock
flock -w 300 9 || skip "another test holds /run/lock/twinfs-sbin-helpers.lock"
dpkg -s twinfs >/dev/null 2>&1 && skip "a twinfs package is installed already: not replacing it"
for f in /usr/bin/twinfs /sbin/mount.twinfs /sbin/mount.fuse.twinfs /etc/twinfs; do
	[ -e "$f" ] || [ -L "$f" ] && skip "$f exists (not from a package): not replacing it"
done
# Where a package install and purge can leave things.
TREES="/etc /usr/bin /usr/sbin /usr/lib/systemd /usr/share/man /usr/share/doc
/var/lib/systemd /var/lib/dpkg/info"
listing() { find $TREES -xdev 2>/dev/null | LC_ALL=C sort; }
listing >"$T/before"

# dpkg waits for no lock of its own: retry while apt or dpkg runs elsewhere.
dpkg_run() {
	for _ in $(seq 60); do
		dpkg "$@" >"$T/dpkg.out" 2>&1 && return 0
		grep -q "lock" "$T/dpkg.out" || return 1
		sleep 1
	done
	return 1
}
on_exit "dpkg -s twinfs >/dev/null 2>&1 && dpkg_run -P twinfs"
dpkg_run -i "$deb"; rc=$?
check "dpkg -i installs the package (rc $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || { cat "$T/dpkg.out" >&2; finish; }
check "the example config is a conffile" sh -c \
	'dpkg-query -W -f="\${Conffiles}" twinfs | grep -q "/etc/twinfs/example.yaml"'
check "the installed twinfs runs" /usr/bin/twinfs --version
check "man finds twinfs.yaml(5)" sh -c 'man -w 5 twinfs.yaml | grep -q "/usr/share/man/man5/"'

if command -v systemd-analyze >/dev/null; then
	systemd-analyze verify twinfs-mount@share.service twinfs-serve@share.service \
		>"$T/verify.out" 2>&1; rc=$?
	check "systemd-analyze verify of the installed units passes (rc $rc)" [ $rc -eq 0 ]
	[ $rc -eq 0 ] || sed 's/^/# /' "$T/verify.out"
	for u in serve:5 mount:; do
		name=${u%%:*} max=${u#*:}
		score=$(systemd-analyze security --offline=yes "twinfs-$name@share.service" 2>/dev/null |
			sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
		note "systemd-analyze security --offline=yes twinfs-$name@: $score${max:+ (target <= $max)}"
		[ -n "$max" ] && check "twinfs-$name@ exposure $score <= $max" \
			awk -v s="$score" -v m="$max" 'BEGIN { exit !(s != "" && s <= m) }'
	done
else
	note "systemd-analyze missing: units not verified"
fi

# The installed helpers, as mount(8) runs them from fstab-style lines.
if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
	mkdir -p "$T/store" "$T/mnt"
	echo hello >"$T/store/greeting"
	cat >"$T/share.yaml" <<YAML
store: $T/store
state: $T/state
YAML
	track_mount "$T/mnt"
	gone() { ! grep -qs " $1 " /proc/mounts; }
	store_free() {
		python3 - "$1" <<'PY'
import os, sys
st = os.stat(sys.argv[1])
want = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
sys.exit(any(l.split()[1] == "FLOCK" and l.split()[5] == want for l in open("/proc/locks")))
PY
	}
	try_mount() {	# DESC, then mount(8)'s arguments
		what=$1; shift
		mount "$@" 2>"$T/m.err"; rc=$?
		check "$what: exit 0 (rc $rc)" [ $rc -eq 0 ]
		[ $rc -eq 0 ] || sed 's/^/# /' "$T/m.err"
		check "$what: findmnt shows fuse.twinfs" [ "$(findmnt -n -o FSTYPE "$T/mnt")" = fuse.twinfs ]
		check "$what: the store is visible" grep -qx hello "$T/mnt/greeting"
		pid=$(pgrep -f -- "--mountpoint $T/mnt" | head -n 1)
		check "$what: the daemon is the installed /usr/bin/twinfs" \
			[ "$(readlink "/proc/${pid:-0}/exe" 2>/dev/null)" = /usr/bin/twinfs ]
		umount "$T/mnt"
		check "$what: umount(8) unmounts" wait_until 10 gone "$T/mnt"
		check "$what: the daemon exits and frees the store" wait_until 20 store_free "$T/store"
	}
	try_mount "mount -t twinfs CONFIG MNT -o defaults,_netdev" \
		-t twinfs "$T/share.yaml" "$T/mnt" -o defaults,_netdev
	try_mount "mount -t fuse.twinfs STORE MNT -o _netdev,config=CONFIG" \
		-t fuse.twinfs "$T/store" "$T/mnt" -o "_netdev,config=$T/share.yaml"
fi

dpkg_run -P twinfs; rc=$?
check "dpkg -P purges the package (rc $rc)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || cat "$T/dpkg.out" >&2
listing >"$T/after"
# A path another package owns changed under a concurrent apt run: not ours.
LC_ALL=C comm -3 "$T/before" "$T/after" | sed 's/^\t//' | while IFS= read -r p; do
	owner=$(dpkg -S "$p" 2>/dev/null | sed -n '1s/: .*//p')
	[ -n "$owner" ] && [ "$owner" != twinfs ] && continue
	echo "$p"
done >"$T/left"
check "dpkg -P leaves nothing behind (same files as before the install)" [ ! -s "$T/left" ]
sed 's/^/# left: /' "$T/left" | head -n 20
check "no twinfs package remains" sh -c '! dpkg -s twinfs >/dev/null 2>&1'
finish
