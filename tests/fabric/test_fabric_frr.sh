#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# FRR routing: the default topology comes up with FRR eBGP (routing frr)
# and every switch has the same ECMP next-hop sets toward every host as
# with static routes; taking leaf1:spine1 down and up again re-converges
# (leaf2's route toward h1 drops to one next hop, then back to two).
# Prints the up times (static, FRR) and the re-convergence times.
. "$(dirname "$0")/lib_fabric.sh"
ice_need_tool jq /usr/lib/frr/zebra /usr/lib/frr/bgpd
here=$(cd "$(dirname "$0")" && pwd)
R="python3 $here/ice_fabric_routes.py"

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# the same topology under two names, one after the other (not both up:
# each fabric has its own management subnet, and names keep it apart)
fs=fs$ICE_SFX ff=ff$ICE_SFX
ice_fab_gen "$fs" >/dev/null
sed "s/^name: $fs/name: $ff/" "$ICE_TMP/$fs.yaml" >"$ICE_TMP/$ff.yaml"

t0=$(date +%s%N)
ice_fab_up "$ICE_TMP/$fs.yaml" --routing static || ice_fail "static up failed"
up_static=$(ms_since "$t0")
$R dump "$fs" "$ICE_TMP/$fs.yaml" >"$ICE_TMP/static.json" || ice_fail "route dump failed"
"$ICE_FABRIC" down "$fs" || ice_fail "down $fs failed"

t0=$(date +%s%N)
ice_fab_up "$ICE_TMP/$ff.yaml" --routing frr || ice_fail "FRR up failed"
up_frr=$(ms_since "$t0")
echo "ice-fabric up, default topology: static $up_static ms (target < 10 s)," \
	"FRR $up_frr ms (target < 20 s)"
"$ICE_FABRIC" status "$ff" | grep -q "FRR routing" || ice_fail "status does not say FRR"
$R dump "$ff" "$ICE_TMP/$ff.yaml" >"$ICE_TMP/frr.json" || ice_fail "route dump failed"
if ! diff -u "$ICE_TMP/static.json" "$ICE_TMP/frr.json"; then
	ice_fail "FRR next hops differ from static ones (diff above: - static, + FRR)"
fi
n=$(jq '[.[][] | select(length > 1)] | length' "$ICE_TMP/frr.json")
[ "$n" -gt 0 ] || ice_fail "no ECMP routes at all"
echo "FRR: next-hop sets of all 4 switches toward all 8 hosts equal the static ones" \
	"($n of them ECMP)"

"$ICE_FABRIC" link --fabric "$ff" leaf1:spine1 down || ice_fail "link down failed"
down_s=$($R wait "$ff" leaf2 10.1.0.1 1 15) || ice_fail "no re-convergence after link down"
$R wait "$ff" leaf1 10.2.0.1 1 15 >/dev/null || ice_fail "leaf1 kept spine1 after link down"
"$ICE_FABRIC" link --fabric "$ff" leaf1:spine1 up || ice_fail "link up failed"
up_s=$($R wait "$ff" leaf2 10.1.0.1 2 15) || ice_fail "no re-convergence after link up"
$R wait "$ff" leaf1 10.2.0.1 2 15 >/dev/null || ice_fail "leaf1 has no ECMP after link up"
$R dump "$ff" "$ICE_TMP/$ff.yaml" >"$ICE_TMP/frr2.json" || ice_fail "route dump failed"
diff -u "$ICE_TMP/static.json" "$ICE_TMP/frr2.json" ||
	ice_fail "routes after the link flap differ from static ones"
echo "FRR re-convergence, leaf1:spine1: after down ${down_s} s, after up ${up_s} s" \
	"(BGP timers 1/3)"
ice_fab_exec "$ff" h1 ping -c1 -W2 -q 10.2.0.7 >/dev/null || ice_fail "h1 cannot reach h8"
echo "PASS"
