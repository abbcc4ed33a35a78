#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A short `ice demo` (tools/ice-demo): the default test bed (8 hosts, 100 Mbit/s
# host links, 200 Mbit/s uplinks, switches hashing with their own model),
# all-reduce over the 8 hosts on alternating leaves, one hash seed, one size
# (4 MiB), both modes on the DCQCN baseline. Plain ECMP is rerun with new QPs
# (new NIC source ports) until it puts 3 or more ring flows on one uplink (a
# collision; up to 6 tries, else skip), then ICE with its maps from ice-probe
# (the controller's topology has no switch hash). Asserts: ICE's plan is
# applied (rank 0's QPs use the planned source ports, as the transport
# reports them), the switches' byte counters show 2 flows per uplink, and
# ICE is at least 1.2x the colliding ECMP. A speed miss in a run the demo
# marks void (the machine saturated, or the VM's host took >= 2 % of the run
# in gaps longer than the TBF burst: tools/ice-env-probe) is measured once
# more; two void misses skip with the reason.
. "$(dirname "$0")/lib_fabric.sh"
ice_need_tool redis-cli
BUILD=$(cd "$(dirname "$ICE_FABRIC")/.." && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

attempt() {
	ICE_BUILD=$BUILD python3 "$ROOT/tools/ice-demo" --seed-list 7 --modes ecmp,ice --colls allreduce \
		-b 4M -e 4M -n 2 -w 2 --need-collision 6 --out "$ICE_TMP/out" >"$ICE_TMP/demo.out" 2>&1
	local rc=$?
	cat "$ICE_TMP/demo.out"
	[ $rc = 0 ] || ice_fail "ice-demo exited $rc"
	judge
}

judge() {
	python3 - "$ICE_TMP/out/ice-demo.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
runs = {r["mode"]: r for r in d["runs"]}
e, i = runs["ecmp"], runs["ice"]
def fail(msg):
    print(f"test_fabric_demo.sh: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)
if not e.get("collision"):
    print("test_fabric_demo.sh: skipped: ECMP did not collide in 6 tries", file=sys.stderr)
    sys.exit(77)
if i["sports_source"] != "probe":
    fail(f"ICE's ports came from {i['sports_source']}, not the probe")
pc = i["plan_check"]
print(f"ICE plan: {pc['equal']} of rank 0's {pc['planned']} planned QPs use the planned port "
      f"({pc['qps']} QPs)")
if not pc["planned"] or pc["equal"] != pc["planned"]:
    fail("the plan is not applied: rank 0's QPs do not all use their planned ports")
print(f"uplink flows from the switch counters: ECMP {e['uplink_flows']}, ICE {i['uplink_flows']}")
if max(i["uplink_flows"].values()) > 2:
    fail("ICE's uplinks are not balanced (switch byte counters)")
be, bi = e["busbw"], i["busbw"]
print(f"ECMP (collision, {max(e['uplink_flows'].values())} flows on one uplink): {be:.4f} GB/s; "
      f"ICE: {bi:.4f} GB/s = {bi / be:.2f}x")
if bi < 1.2 * be:
    if e["void"] or i["void"]:
        print(f"void: the host took {e['host_lost_pct']:.1f}% / {i['host_lost_pct']:.1f}% "
              "of the ECMP / ICE run (tools/ice-env-probe)")
        sys.exit(3)
    fail("ICE is not 1.2x the colliding plain ECMP")
print("PASS")
PY
}

for try in 1 2; do
	rc=0
	attempt || rc=$?
	[ $rc = 3 ] || exit $rc
done
ice_skip "ICE missed 1.2x the colliding ECMP in two void runs: the VM's host took the CPU" \
	"for longer than the TBF burst in >= 2 % of them"
