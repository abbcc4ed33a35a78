#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ECMP: for 64 UDP source ports from h1 (leaf1) to h5 (leaf2), the spine
# each packet crosses (per-port counters of ice-fabric stats) matches
# `ip route get ... sport` on leaf1 with ECMP by the kernel, and topo's
# prediction (ice-topo predict) with ECMP by the BPF hash model: 64/64.
# Then `ice-fabric hash leaf1 --seed 3` (a switch reboot with another
# seed): ports move, and the same check holds against the kernel and
# against the fabric's own topology copy, which records the new seed.
# (Kernel: about half the ports move. CRC32 model: a new seed XORs every
# hash with one constant, so on a 2-member group all ports swap or none.)
. "$(dirname "$0")/lib_fabric.sh"
here=$(cd "$(dirname "$0")" && pwd)
ice_need_tool jq

ecmp_check() { # NAME MODE TOPO SEEN.json
	ICE_FABRIC=$ICE_FABRIC ICE_TOPO=$ICE_TOPO timeout 120 python3 "$here/ice_fabric_ecmp.py" "$1" "$2" "$3" h1 10.1.0.1 \
		h5 10.2.0.1 leaf1 leaf2 64 "$4"
}

for mode in kernel model; do
	name=e${mode:0:1}$ICE_SFX
	file=$(ice_fab_gen "$name" --ecmp "$mode")
	ice_fab_up "$file" || ice_fail "ice-fabric up ($mode) failed"
	ecmp_check "$name" "$mode" "$file" "$ICE_TMP/before.json" || ice_fail "ECMP $mode: mismatches"
	"$ICE_FABRIC" hash --fabric "$name" leaf1 --seed 3 || ice_fail "ice-fabric hash ($mode) failed"
	"$ICE_FABRIC" status "$name" | grep -q "differing: leaf1 .*seed \(0x\)\?3$" ||
		ice_fail "status does not show leaf1's new seed: $("$ICE_FABRIC" status "$name" | grep hash)"
	ecmp_check "$name" "$mode" "/run/ice/$name/topo.yaml" "$ICE_TMP/after.json" ||
		ice_fail "ECMP $mode after the seed change: mismatches"
	moved=$(jq -n --slurpfile a "$ICE_TMP/before.json" --slurpfile b "$ICE_TMP/after.json" \
		'[$a[0] | keys[] as $k | select($a[0][$k] != $b[0][$k])] | length')
	echo "ECMP $mode: leaf1's seed -> 3: $moved of 64 ports now cross the other spine"
	[ "$moved" -gt 0 ] || ice_fail "ECMP $mode: no port moved after the seed change"
	"$ICE_FABRIC" down "$name" || ice_fail "ice-fabric down $name failed"
done
echo "PASS"
