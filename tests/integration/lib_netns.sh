# SPDX-License-Identifier: Apache-2.0
# Helpers sourced by the integration tests: skip rules and a small star of
# network namespaces around a bridge, all named with an ice prefix and a
# per-run suffix, removed on exit (also on failure).
#
#   ice_need_root; ice_need_tool tshark
#   ice_star 4 1500        -> ICE_NS[0..3] (hosts, 10.78.0.1..4), ICE_DEV[i]
#                             (each host's veth), ICE_NS_BR (the bridge's ns)

ice_skip() {
	echo "$(basename "$0"): skipped: $*" >&2
	exit 77
}

ice_need_root() {
	[ "$(id -u)" -eq 0 ] || ice_skip "needs root (network namespaces, tc)"
}

ice_need_tool() {
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || ice_skip "'$t' is not installed"
	done
}

ICE_ID=${ICE_ID:-$$}
ICE_NS=()
ICE_DEV=()
ICE_NS_BR=
ICE_PIDS=()

ice_cleanup() {
	for p in "${ICE_PIDS[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	for n in "${ICE_NS[@]}" $ICE_NS_BR; do
		ip netns del "$n" 2>/dev/null
	done
	[ -n "${ICE_TMP:-}" ] && rm -rf "$ICE_TMP"
}
trap ice_cleanup EXIT
trap 'exit 130' INT TERM

ICE_TMP=$(mktemp -d /tmp/ice-itest.XXXXXX)

# ice_star N MTU: N hosts on one bridge.
ice_star() {
	local n=$1 mtu=$2 i br=iceBr$ICE_ID
	ICE_NS_BR=iceT${ICE_ID}br
	ip netns add "$ICE_NS_BR" || return 1
	ip -n "$ICE_NS_BR" link add "$br" type bridge || return 1
	ip -n "$ICE_NS_BR" link set "$br" mtu "$mtu" up || return 1
	for ((i = 0; i < n; i++)); do
		ICE_NS[i]=iceT${ICE_ID}h$i
		ICE_DEV[i]=iceH${i}x$ICE_ID
		ip netns add "${ICE_NS[i]}" || return 1
		ip link add "${ICE_DEV[i]}" netns "${ICE_NS[i]}" type veth peer name \
			"iceP${i}x$ICE_ID" netns "$ICE_NS_BR" || return 1
		ip -n "$ICE_NS_BR" link set "iceP${i}x$ICE_ID" master "$br" mtu "$mtu" up || return 1
		ip -n "${ICE_NS[i]}" addr add "10.78.0.$((i + 1))/24" dev "${ICE_DEV[i]}" || return 1
		ip -n "${ICE_NS[i]}" link set "${ICE_DEV[i]}" mtu "$mtu" up || return 1
		ip -n "${ICE_NS[i]}" link set lo up || return 1
	done
}

# ice_ns_list: the host namespaces, comma-separated (for --netns).
ice_ns_list() {
	local IFS=,
	echo "${ICE_NS[*]}"
}
