# SPDX-License-Identifier: Apache-2.0
# Helpers sourced by the fabric suite: skip rules, a per-test fabric with a
# unique short name, removed on exit (also on failure).
#
#   ice_need_root; ice_need_tool iperf3
#   ice_fab_gen NAME [ice-topo gen options]   -> $ICE_TMP/NAME.yaml
#   ice_fab_up FILE [ice-fabric up options]   (remembered for cleanup)
#   ice_fab_exec NAME NODE CMD...             command inside a node
#   ice_fail MSG                              print and exit 1
#   ice_env_start/ice_env_stop/ice_env_void   the host's CPU theft (below)

ICE_FABRIC=${ICE_FABRIC:-ice-fabric}
ICE_TOPO=${ICE_TOPO:-ice-topo}
ICE_FAB_UP=()
ICE_PIDS=()

ice_skip() {
	echo "$(basename "$0"): skipped: $*" >&2
	exit 77
}

ice_fail() {
	echo "$(basename "$0"): FAIL: $*" >&2
	exit 1
}

ice_need_root() {
	[ "$(id -u)" -eq 0 ] || ice_skip "needs root (network namespaces, tc, BPF)"
}

ice_need_tool() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || [ -x "$t" ] || ice_skip "'$t' is not installed"
	done
}

ice_fab_cleanup() {
	local p f
	for p in "${ICE_PIDS[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	for f in "${ICE_FAB_UP[@]}"; do
		"$ICE_FABRIC" down "$f" || echo "cleanup: ice-fabric down $f failed" >&2
	done
	[ -n "${ICE_TMP:-}" ] && rm -rf "$ICE_TMP"
}
trap ice_fab_cleanup EXIT
trap 'exit 130' INT TERM

ice_need_root
ice_need_tool "$ICE_FABRIC" "$ICE_TOPO" ip tc python3
ICE_TMP=$(mktemp -d /tmp/ice-fabtest.XXXXXX)
# a short unique suffix: namespace names ice<fabric>-<node> stay < 32 chars
ICE_SFX=$(($$ % 10000))

# ice_fab_gen NAME [gen options]: a leaf-spine topology file named NAME
ice_fab_gen() {
	local name=$1
	shift
	"$ICE_TOPO" gen leaf-spine --name "$name" "$@" -o "$ICE_TMP/$name.yaml" ||
		ice_fail "ice-topo gen $name failed"
	echo "$ICE_TMP/$name.yaml"
}

# ice_fab_up FILE [options]: bring a fabric up; its name is registered for
# cleanup before the attempt (a failed up must leave nothing either).
ice_fab_up() {
	local file=$1 name
	shift
	name=$(sed -n 's/^name: *//p' "$file")
	ICE_FAB_UP+=("$name")
	"$ICE_FABRIC" up "$file" "$@"
}

ice_fab_exec() {
	local name=$1 node=$2
	shift 2
	ip netns exec "ice$name-$node" "$@"
}

# CPU busy fraction over a command: prints "cpu NN%" after it.
ice_cpu_sample() {
	awk '/^cpu /{print $2+$3+$4+$6+$7+$8, $5}' /proc/stat
}

# The VM's host taking the CPU during a measurement (ice-env-probe):
#   ice_env_start GRACE_MS   before it (GRACE_MS: what the TBF burst covers)
#   ice_env_stop             after it: ICE_ENV=(steal busy lost p99 max),
#                            ICE_ENV_TXT a readable line
#   ice_env_void             true when the host's gaps beyond GRACE_MS took
#                            >= ICE_ENV_VOID_PCT (2) % of the run: a rate or
#                            queue figure from it measures the host, not us
ICE_ENV_VOID_PCT=${ICE_ENV_VOID_PCT:-2}
ice_env_start() {
	ICE_ENV_GRACE=$1
	rm -f "$ICE_TMP/env.out" "$ICE_TMP/env.out.ready"
	python3 "$(dirname "${BASH_SOURCE[0]}")/../../tools/ice-env-probe" "$1" "$ICE_TMP/env.out" &
	ICE_ENV_PID=$!
	ICE_PIDS+=($ICE_ENV_PID)
	# until it can take the SIGTERM of ice_env_stop (python starts slowly on a busy box)
	for ((i = 0; i < 100; i++)); do [ -e "$ICE_TMP/env.out.ready" ] && break; sleep 0.05; done
}
ice_env_stop() {
	kill -TERM "$ICE_ENV_PID" 2>/dev/null
	wait "$ICE_ENV_PID" 2>/dev/null
	ICE_ENV=($(cat "$ICE_TMP/env.out" 2>/dev/null))
	[ "${#ICE_ENV[@]}" -eq 5 ] || ice_fail "ice-env-probe wrote no figures"
	ICE_ENV_TXT="host steal ${ICE_ENV[0]}%, ${ICE_ENV[2]}% of the run in host gaps beyond ${ICE_ENV_GRACE} ms (wake-ups late p99 ${ICE_ENV[3]} ms, max ${ICE_ENV[4]} ms)"
}
ice_env_void() {
	awk -v l="${ICE_ENV[2]}" -v t="$ICE_ENV_VOID_PCT" 'BEGIN { exit !(l >= t) }'
}
