#!/bin/sh
# fstab and mount(8): with the helpers installed in /sbin (for the test's
# lifetime only), both fstab forms mount a real twinfs through mount(8):
#   CONFIG     MNT  twinfs       defaults,_netdev
#   STORE      MNT  fuse.twinfs  _netdev,config=CONFIG
# as `mount -t TYPE` and from an fstab file (mount -T FILE MNT). The
# mountpoint mount(8) gives wins over the file's (which does not exist),
# FUSE options (noatime) reach the mount, umount(8) ends it, and findmnt
# shows the type that the second form names.
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
command -v mount >/dev/null && command -v findmnt >/dev/null || skip "util-linux mount/findmnt missing"
# One installer of /sbin helpers at a time, machine-wide (packaging.sh
# installs the package's own).
exec 9>/run/lock/twinfs-sbin-helpers.lock
flock -w 300 9 || skip "another test holds /run/lock/twinfs-sbin-helpers.lock"
for h in /sbin/mount.twinfs /sbin/mount.fuse.twinfs; do
	[ -e "$h" ] && skip "$h exists already (an installed package?): not replacing it"
done
# mount(8) gives helpers a fixed PATH; the helper runs the twinfs beside
# its real file (here the build's), else /usr/bin/twinfs.
mkdir -p "$T/bin" "$T/store" "$T/mnt"
install -m 0755 "$TWINFS_SRC/packaging/mount.twinfs" "$T/bin/mount.twinfs"
ln -s "$TWINFS_BIN" "$T/bin/twinfs"
on_exit "rm -f /sbin/mount.twinfs /sbin/mount.fuse.twinfs"
ln -s "$T/bin/mount.twinfs" /sbin/mount.twinfs
ln -s mount.twinfs /sbin/mount.fuse.twinfs
echo hello >"$T/store/greeting"
cat >"$T/share.yaml" <<YAML
store: $T/store
state: $T/state
mountpoint: $T/not-this-one
YAML
track_mount "$T/mnt"

gone() { ! grep -qs " $1 " /proc/mounts; }
# the daemon exits with its mount, freeing the store's writer lock
store_free() {
	python3 - "$1" <<'PY'
import os, sys
st = os.stat(sys.argv[1])
want = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
sys.exit(any(l.split()[1] == "FLOCK" and l.split()[5] == want for l in open("/proc/locks")))
PY
}
unmount() {
	umount "$1" 2>"$T/umount.err"
	check "$2: umount(8) unmounts" wait_until 10 gone "$1"
	check "$2: the daemon exits and frees the store" wait_until 20 store_free "$T/store"
}
mounted_ok() {
	check "$1: exit 0 (got $2)" [ "$2" -eq 0 ]
	check "$1: mounted at mount(8)'s mountpoint, not the file's" \
		sh -c 'grep -qs " $1 fuse.twinfs " /proc/mounts && [ ! -e "$2" ]' _ "$T/mnt" "$T/not-this-one"
	check "$1: the store is visible" grep -qx hello "$T/mnt/greeting"
	check "$1: findmnt shows fuse.twinfs" [ "$(findmnt -n -o FSTYPE "$T/mnt")" = fuse.twinfs ]
}

mount -t twinfs "$T/share.yaml" "$T/mnt" -o defaults,_netdev,noatime 2>"$T/m1.err"
mounted_ok "mount -t twinfs CONFIG" $?
check "mount -t twinfs: FUSE options reach the mount" sh -c \
	'findmnt -n -o OPTIONS "$1" | grep -q noatime' _ "$T/mnt"
unmount "$T/mnt" "mount -t twinfs"

mount -t fuse.twinfs "$T/store" "$T/mnt" -o "_netdev,config=$T/share.yaml" 2>"$T/m2.err"
rc=$?
mounted_ok "mount -t fuse.twinfs STORE -o config=" $rc
[ $rc -eq 0 ] || cat "$T/m2.err" >&2
unmount "$T/mnt" "mount -t fuse.twinfs"

cat >"$T/fstab" <<FSTAB
# the two forms of docs and twinfs(1)
$T/share.yaml $T/mnt twinfs defaults,_netdev 0 0
FSTAB
mount -T "$T/fstab" "$T/mnt" 2>"$T/m3.err"
mounted_ok "fstab: CONFIG MNT twinfs defaults,_netdev" $?
unmount "$T/mnt" "fstab twinfs"

# nonempty, from FUSE 2 fstab lines: accepted, and no warning about
# hiding the files of a mountpoint that has some
echo hidden >"$T/mnt/under"
cat >"$T/fstab" <<FSTAB
$T/store $T/mnt fuse.twinfs _netdev,nonempty,config=$T/share.yaml 0 0
FSTAB
mount -T "$T/fstab" "$T/mnt" 2>"$T/m4.err"
mounted_ok "fstab: STORE MNT fuse.twinfs _netdev,nonempty,config=CONFIG" $?
check "nonempty: no warning about the hidden files" sh -c '! grep -q "not empty" "$1"' _ "$T/m4.err"
unmount "$T/mnt" "fstab fuse.twinfs"
rm -f "$T/mnt/under"

# refusals come through mount(8) with their reason
mount -t fuse.twinfs "$T/store" "$T/mnt" -o "config=$T/none.yaml" 2>"$T/m5.err"; rc=$?
check "fuse.twinfs with a missing config fails (rc $rc)" [ $rc -ne 0 ]
check "and names the file" grep -q "none.yaml" "$T/m5.err"
check "nothing mounted after the refusal" gone "$T/mnt"
finish
