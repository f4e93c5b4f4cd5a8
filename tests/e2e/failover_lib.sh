# Helpers for the failover tests (source after lib.sh): two nodes, A and B,
# each in a network namespace this test creates, joined by a veth pair.
# Daemons run under `nsenter --net` so that the FUSE mounts stay visible
# (`ip netns exec` would hide them). Each node has a store, a state
# directory and a mountpoint; either can serve or mount.
#   A_STORE A_STATE A_MNT A_IP    B_STORE B_STATE B_MNT B_IP    PORT
need_root
need_fuse
command -v ip >/dev/null || skip "ip missing (apt install iproute2)"
command -v nsenter >/dev/null || skip "nsenter missing (apt install util-linux)"

NA=twfoa$$; NB=twfob$$
ip netns add "$NA" 2>/dev/null || skip "cannot create network namespaces"
on_exit "ip netns del $NA 2>/dev/null"
ip netns add "$NB" || skip "cannot create a second network namespace"
on_exit "ip netns del $NB 2>/dev/null"
ip link add "fa$$" netns "$NA" type veth peer name "fb$$" netns "$NB" ||
	skip "cannot create a veth pair"
A_IP=10.232.$(( $$ % 250 )).1
B_IP=10.232.$(( $$ % 250 )).2
ip -n "$NA" addr add "$A_IP/30" dev "fa$$"
ip -n "$NB" addr add "$B_IP/30" dev "fb$$"
ip -n "$NA" link set "fa$$" up; ip -n "$NA" link set lo up
ip -n "$NB" link set "fb$$" up; ip -n "$NB" link set lo up
IN_A=/run/netns/$NA; IN_B=/run/netns/$NB
PORT=7070
for n in A B; do
	mkdir -p "$T/$n/store" "$T/$n/state" "$T/$n/mnt"
done
A_STORE=$T/A/store A_STATE=$T/A/state A_MNT=$T/A/mnt
B_STORE=$T/B/store B_STATE=$T/B/state B_MNT=$T/B/mnt
A_PID="" B_PID=""

daemon_up() { "$TWINFS_BIN" status --state "$1" >/dev/null 2>&1; }
# node_var NODE NAME: the value of ${NODE}_NAME
node_var() { eval "echo \"\$${1}_$2\""; }
node_in() { eval "echo \"\$IN_$1\""; }
other() { [ "$1" = A ] && echo B || echo A; }

# serve_node NODE: `twinfs serve` of NODE's store on its address.
serve_node() {
	_n=$1
	nsenter --net="$(node_in "$_n")" "$TWINFS_BIN" serve --store "$(node_var "$_n" STORE)" \
		--state "$(node_var "$_n" STATE)" --listen "$(node_var "$_n" IP):$PORT" \
		--insecure -f >>"$T/$_n.log" 2>&1 &
	eval "${_n}_PID=$!"
	track_pid $!
	wait_until 15 daemon_up "$(node_var "$_n" STATE)" || { tail "$T/$_n.log"; fail "$_n: serve did not start"; }
}

# mount_node NODE: NODE's store mounted, replicating to the other node.
mount_node() {
	_n=$1 _o=$(other "$1")
	nsenter --net="$(node_in "$_n")" "$TWINFS_BIN" mount --store "$(node_var "$_n" STORE)" \
		--state "$(node_var "$_n" STATE)" --mountpoint "$(node_var "$_n" MNT)" \
		--peer "$(node_var "$_o" IP):$PORT" --insecure -f >>"$T/$_n.log" 2>&1 &
	eval "${_n}_PID=$!"
	track_pid $!
	track_mount "$(node_var "$_n" MNT)"
	wait_until 15 is_mounted "$(node_var "$_n" MNT)" || { tail "$T/$_n.log"; fail "$_n: mount did not start"; }
	wait_until 15 daemon_up "$(node_var "$_n" STATE)" || fail "$_n: no control socket"
}

# stop_node NODE: ends its daemon (a mount by unmounting) and waits.
stop_node() {
	_p=$(node_var "$1" PID)
	[ -n "$_p" ] || return 0
	if is_mounted "$(node_var "$1" MNT)"; then
		fusermount3 -u "$(node_var "$1" MNT)" 2>/dev/null
	else
		kill "$_p" 2>/dev/null
	fi
	wait_until 30 sh -c "! kill -0 $_p 2>/dev/null"
	eval "${1}_PID="
}

# kill_node NODE: SIGKILL, and the dead mount detached.
kill_node() {
	_p=$(node_var "$1" PID)
	kill -9 "$_p" 2>/dev/null
	wait "$_p" 2>/dev/null
	umount -l "$(node_var "$1" MNT)" 2>/dev/null
	eval "${1}_PID="
}

# status_of NODE KEY: a key of the node daemon's status --json.
status_of() {
	"$TWINFS_BIN" status --state "$(node_var "$1" STATE)" --json |
		python3 -c 'import json,sys; v=json.load(sys.stdin).get(sys.argv[1]); print(json.dumps(v) if isinstance(v,(list,dict)) else v)' "$2"
}
is_connected() { [ "$(status_of "$1" connected)" = True ]; }
not_connected() { [ "$(status_of "$1" connected)" = False ]; }

# link_down/link_up: B's end of the veth (nothing passes either way).
link_down() { ip -n "$NB" link set "fb$$" down; }
link_up() { ip -n "$NB" link set "fb$$" up; }

# same_stores DIR1 DIR2: treecmp.py, every field of every entry.
same_stores() { python3 "$TWINFS_SRC/tests/e2e/treecmp.py" "$@" >&2; }

dump_logs() {
	for n in A B; do echo "---- $n.log"; tail -n 25 "$T/$n.log" 2>/dev/null; done
}
dump_logs_on_failure() { [ "$_failures" -eq 0 ] || dump_logs; }
on_exit dump_logs_on_failure
