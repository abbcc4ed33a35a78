#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ECMP: for 64 UDP source ports from h1 (leaf1) to h5 (leaf2), the spine
# each packet crosses (per-port counters of ice-fabric stats) matches
# `ip route get ... sport` on leaf1 with ECMP by the kernel, and topo's
# prediction (ice-topo predict) with ECMP by the BPF hash model: 64/64.
. "$(dirname "$0")/lib_fabric.sh"
here=$(cd "$(dirname "$0")" && pwd)

for mode in kernel model; do
	name=e${mode:0:1}$ICE_SFX
	file=$(ice_fab_gen "$name" --ecmp "$mode")
	ice_fab_up "$file" || ice_fail "ice-fabric up ($mode) failed"
	ICE_FABRIC=$ICE_FABRIC ICE_TOPO=$ICE_TOPO timeout 120 python3 "$here/ice_fabric_ecmp.py" "$name" "$mode" "$file" h1 10.1.0.1 \
		h5 10.2.0.1 leaf1 leaf2 64 || ice_fail "ECMP $mode: mismatches"
	"$ICE_FABRIC" down "$name" || ice_fail "ice-fabric down $name failed"
done
echo "PASS"
