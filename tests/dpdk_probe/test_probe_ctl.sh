#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Steering where ICE cannot model the switch hash: on a test bed whose ECMP
# is the kernel's, ice-probe learns each NIC pair's port -> path map and
# publishes it to Redis; ice-controller (source ports from the probe maps,
# its default on kernel ECMP) moves one of two colliding ice-perf flows to
# a port the probe saw take the other spine. Checked three ways: the QP's
# new port is in the map's port list of a different path than the other
# flow's, `ip route get` on leaf1 sends the two ports to different spines,
# and leaf1's bytes split over both spines.
. "$(dirname "$0")/../fabric/lib_fabric.sh"
. "$(dirname "$0")/../fabric/lib_fabric_ctl.sh"
ICE_PROBE=${ICE_PROBE:-ice-probe}
ice_need_tool "$ICE_PROBE" jq
ctl_fabric_up cp kernel

# the maps of the two pairs, learned from h1 and h2
for p in "h1 h3" "h2 h4"; do
	read -r s d <<<"$p"
	"$ICE_FABRIC" exec --fabric "$name" "$s" -- timeout 60 "$ICE_PROBE" paths "${IP[$s]}" "${IP[$d]}" \
		--redis "$redis" --fabric "$name" --topo "$file" --min-ports 8 --json \
		>"$ICE_TMP/map-$s.json" 2>"$ICE_TMP/probe-$s.log" || ctl_fail "ice-probe paths $s -> $d"
	jq -r '"map \(.src) -> \(.dst): \([.paths[] | "\(.path) \(.nports) ports"] | join(", "))"' \
		"$ICE_TMP/map-$s.json"
done
[ "$(rcli SCARD "ice:$name:probe:hosts")" = 2 ] || ctl_fail "the probe maps are not in Redis"

# spine of a source port from h1/h2's leaf, by the kernel
spine_of() { # SRC DST SPORT
	ip -n "ice$name-leaf1" -j route get "$2" from "$1" iif "$3" ipproto udp sport "$4" dport 4791 |
		jq -r '.[0].dev'
}
# path of a port in a map file
path_of() { jq -r --arg p "$2" '.port_map[$p] // "none"' "$ICE_TMP/map-$1.json"; }

collide 90
echo "kernel ECMP: leaf1 -> spine1 / spine2: $s1 / $s2 bytes/s (collision)"

ctl_start A --reopt 2s --lifetime 5s --interval 20ms
wait_for 5 grep -q '^epoch ' "$ICE_TMP/ctl-A.out" || ctl_fail "no plan published in 5 s"
grep -q "source ports from ice-probe's maps" "$ICE_TMP/ctl-A.log" ||
	ctl_fail "the controller does not take source ports from the probe maps"
wait_for 3 bash -c "[ \"\$(redis-cli -h $rhost -p $rport HGET 'ice:$name:{h1}:plan:applied' epoch)\" -ge 1 ]" ||
	ctl_fail "h1 applied no plan"
sleep 1
n1=$(qp_field h1 sport) n2=$(qp_field h2 sport)
p1=$(path_of h1 "$n1") p2=$(path_of h2 "$n2")
k1=$(spine_of "${IP[h1]}" "${IP[h3]}" h1 "$n1") k2=$(spine_of "${IP[h2]}" "${IP[h4]}" h2 "$n2")
echo "source ports: h1 $sp1 -> $n1 ($p1; kernel: $k1), h2 $sp2 -> $n2 ($p2; kernel: $k2)"
[ "$n1" != "$sp1" ] || [ "$n2" != "$sp2" ] || ctl_fail "no QP changed its source port"
[ "$p1" != none ] && [ "$p2" != none ] || ctl_fail "a planned port is not in the probe's map"
[ "${p1#*>}" != "${p2#*>}" ] || ctl_fail "both flows planned on the same spine ($p1, $p2)"
[ "$k1" != "$k2" ] || ctl_fail "the kernel sends both planned ports via $k1"
read -r s1 s2 <<<"$(spine_split 1)"
tot=$((s1 + s2))
echo "ICE (probe maps): leaf1 -> spine1 / spine2: $s1 / $s2 bytes/s"
[ $((s1 * 10)) -ge $((tot * 3)) ] && [ $((s2 * 10)) -ge $((tot * 3)) ] ||
	ctl_fail "leaf1's uplinks not balanced after the plan: $s1 / $s2"
grep -q 'plan refused' "$ICE_TMP"/agent-*.log && ctl_fail "an agent refused a plan"
perf_stop
echo "PASS"
