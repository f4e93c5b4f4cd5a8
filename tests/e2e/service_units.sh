#!/bin/sh
# The systemd units: `systemd-analyze verify` passes (in a scratch root
# holding the built binary and man page), `systemd-analyze security`
# scores stay at or below what the hardening reached (reported), and the
# process-level restrictions the units set - CapabilityBoundingSet=,
# NoNewPrivileges=, UMask=0077 - still let a replicated pair do the whole
# job as root: modes, set-id bits, owners, device nodes, trusted xattrs and
# file capabilities reach the peer exactly (run here through setpriv, as
# systemd is not PID 1 on a test machine).
. "$(dirname "$0")/lib.sh"
need_root
need_fuse
UNITS=$TWINFS_SRC/packaging/systemd
REAL_BIN=$(command -v "$TWINFS_BIN")

if command -v systemd-analyze >/dev/null; then
	R=$T/root
	mkdir -p "$R/usr/bin" "$R/lib/systemd" "$R/usr/share/man/man1"
	cp -a /lib/systemd/system "$R/lib/systemd/"
	cp "$UNITS"/*.service "$R/lib/systemd/system/"
	cp "$REAL_BIN" "$R/usr/bin/twinfs"
	gzip -c "$TWINFS_SRC/packaging/man/twinfs.1" >"$R/usr/share/man/man1/twinfs.1.gz"
	MANPATH=$R/usr/share/man systemd-analyze verify --root="$R" \
		twinfs-mount@share.service twinfs-serve@share.service >"$T/verify.out" 2>&1
	rc=$?
	check "systemd-analyze verify passes (rc $rc)" [ $rc -eq 0 ]
	[ $rc -eq 0 ] || cat "$T/verify.out" >&2
	for u in mount:5.3 serve:3.5; do
		name=${u%%:*} max=${u#*:}
		score=$(systemd-analyze security --offline=yes --root="$R" "twinfs-$name@share.service" 2>/dev/null |
			sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
		note "systemd-analyze security twinfs-$name@: $score (at most $max)"
		check "twinfs-$name@ exposure $score <= $max" \
			awk -v s="$score" -v m="$max" 'BEGIN { exit !(s != "" && s <= m) }'
	done
	check "both units are Type=notify" sh -c 'grep -q "^Type=notify" "$1" && grep -q "^Type=notify" "$2"' \
		_ "$UNITS/twinfs-mount@.service" "$UNITS/twinfs-serve@.service"
	check "the mount unit has no option that makes a mount namespace" sh -c \
		'! grep -Eq "^(ProtectSystem|ProtectHome|PrivateTmp|ReadWritePaths|PrivateDevices|ProtectKernel|ProtectControlGroups|ProtectHostname|ProtectProc|PrivateMounts)=" "$1"' \
		_ "$UNITS/twinfs-mount@.service"
else
	note "systemd-analyze missing: unit verification skipped"
fi

# Why the mount unit has no namespace options: systemd runs such a
# service in a mount namespace with slave propagation, where a FUSE mount
# stays invisible to everyone else. unshare makes the same namespace.
if command -v unshare >/dev/null; then
	mkdir -p "$T/ns/store" "$T/ns/mnt"
	# on an early exit: let the namespace unmount, and wait for it (the
	# daemon goes with the unmount) before the folder is removed
	on_exit "touch '$T/ns/done'; [ -z \"\${ns_pid:-}\" ] || wait_until 10 sh -c \"! kill -0 \$ns_pid 2>/dev/null\""
	unshare -m --propagation slave sh -c '
		"$1" mount --store "$2/store" --state "$2/state" --mountpoint "$2/mnt" 2>/dev/null &&
		grep -q " $2/mnt " /proc/mounts && echo inside >"$2/seen" &&
		while [ ! -e "$2/done" ]; do sleep 0.1; done; umount "$2/mnt"' _ "$REAL_BIN" "$T/ns" &
	ns_pid=$!
	wait_until 15 test -e "$T/ns/seen"
	check "a mount made in a slave-propagation namespace exists there" [ -e "$T/ns/seen" ]
	check "but is not visible outside it" sh -c '! grep -qs " $1 " /proc/mounts' _ "$T/ns/mnt"
	touch "$T/ns/done"
	wait "$ns_pid"
fi

# A wrapper applies each unit's restrictions to its daemon.
command -v setpriv >/dev/null || skip "setpriv missing (util-linux)"
mkdir -p "$T/bin"
cat >"$T/bin/twinfs" <<SH
#!/bin/sh
case "\$1" in mount|serve) unit="$UNITS/twinfs-\$1@.service" ;; *) exec "$REAL_BIN" "\$@" ;; esac
caps=\$(sed -n 's/^CapabilityBoundingSet=//p' "\$unit" | tr ' ' '\n' | sed -n 's/^CAP_/+/p' | tr 'A-Z' 'a-z' | paste -sd, -)
umask \$(sed -n 's/^UMask=//p' "\$unit")
exec setpriv --no-new-privs --bounding-set "-all,\$caps" -- "$REAL_BIN" "\$@"
SH
chmod +x "$T/bin/twinfs"
TWINFS_BIN=$T/bin/twinfs
. "$(dirname "$0")/replication_lib.sh"

start_serve
start_mount
full=$(sed -n 's/^CapBnd:\t//p' /proc/self/status)
check "serve runs with the unit's reduced bounding set" \
	[ "$(sed -n 's/^CapBnd:\t//p' "/proc/$SERVE_PID/status")" != "$full" ]
check "mount runs with the unit's reduced bounding set" \
	[ "$(sed -n 's/^CapBnd:\t//p' "/proc/$MOUNT_PID/status")" != "$full" ]
check "both run with no_new_privs" sh -c \
	'grep -q "^NoNewPrivs:	1" /proc/$1/status && grep -q "^NoNewPrivs:	1" /proc/$2/status' _ "$SERVE_PID" "$MOUNT_PID"

ops() {
	set -e
	cd "$MNT"
	umask 022
	mkdir -m 0755 pub
	echo hi >pub/file
	mkdir -m 2775 pub/group
	echo x >suid && chmod 4755 suid
	echo y >sgid && chmod 2711 sgid
	echo z >owned && chown 1234:4321 owned
	mknod chr c 1 3
	mknod blk b 7 0
	mkfifo fifo
	setfattr -n trusted.twinfs-test -v yes pub/file
	setfattr -n user.color -v blue pub/file
	if command -v setcap >/dev/null; then
		echo c >capfile && setcap cap_net_raw+ep capfile
	fi
}
( ops ) 2>"$T/ops.err"
check "every operation works through the restricted mount" [ $? -eq 0 ]
[ -s "$T/ops.err" ] && sed 's/^/# /' "$T/ops.err"
check "a file made through the mount keeps its asked-for mode (0644)" \
	[ "$(stat -c %a "$A_STORE/pub/file")" = 644 ]
check "the set-uid bit is kept in the store" [ "$(stat -c %a "$A_STORE/suid")" = 4755 ]
"$TWINFS_BIN" sync --state "$A_STATE" --timeout 30 >/dev/null
check "sync under the units' restrictions exits 0" [ $? -eq 0 ]
check "the peer equals the primary (modes, owners, devices, xattrs)" replicated
check "the peer has the device node's numbers" [ "$(stat -c %t:%T "$P_STORE/chr")" = 1:3 ]
check "the peer has the trusted xattr" sh -c \
	'getfattr --absolute-names -n trusted.twinfs-test --only-values "$1" 2>/dev/null | grep -qx yes' _ "$P_STORE/pub/file"
check "the peer's state dir is private (umask 0077)" \
	[ "$(stat -c %a "$P_STATE/node.id" 2>/dev/null || stat -c %a "$P_STATE")" = 600 ] 
stop_mount
finish
