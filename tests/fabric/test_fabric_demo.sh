#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A short `ice demo` (tools/ice-demo): the default test bed (8 hosts, 100 Mbit/s
# host links, 200 Mbit/s uplinks, ecmp: model), all-reduce over the 8 hosts
# on alternating leaves, one hash seed, one size (4 MiB). Plain ECMP is rerun
# with new QPs (new NIC source ports) until it puts 3 or more ring flows on
# one uplink (a collision; up to 6 tries, else skip), then ICE (controller,
# paths + rates + policy). Asserts ICE's busbw beats plain ECMP's.
. "$(dirname "$0")/lib_fabric.sh"
ice_need_tool redis-cli
BUILD=$(cd "$(dirname "$ICE_FABRIC")/.." && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ICE_BUILD=$BUILD python3 "$ROOT/tools/ice-demo" --seed-list 7 --modes ecmp,ice --colls allreduce \
	-b 4M -e 4M -n 2 -w 2 --need-collision 6 --out "$ICE_TMP/out" >"$ICE_TMP/demo.out" 2>&1
rc=$?
cat "$ICE_TMP/demo.out"
[ $rc = 0 ] || ice_fail "ice-demo exited $rc"
python3 - "$ICE_TMP/out/ice-demo.json" <<'PY' || exit $?
import json, sys
d = json.load(open(sys.argv[1]))
runs = {r["mode"]: r for r in d["runs"]}
e, i = runs["ecmp"], runs["ice"]
if not e.get("collision"):
    print("test_fabric_demo.sh: skipped: ECMP did not collide in 6 tries", file=sys.stderr)
    sys.exit(77)
be, bi = e["rows"][-1]["busbw"], i["rows"][-1]["busbw"]
print(f"ECMP (collision, {max(e['uplink_flows'].values())} flows on one uplink): {be:.4f} GB/s; "
      f"ICE: {bi:.4f} GB/s = {bi / be:.2f}x")
w = i.get("window")
if w is None:
    print("test_fabric_demo.sh: FAIL: no plans-in-force window in ICE's run", file=sys.stderr)
    sys.exit(1)
print(f"ICE, plans in force (from {w['from_s']} s): peak queue {w['peak_queue_bytes']} B at "
      f"{w['peak_queue_port']}, CE {w['ce_marked']}, CNPs {w['cnp_tx']}, drops {w['drops']}")
if not bi > be:
    print("test_fabric_demo.sh: FAIL: ICE's busbw does not beat plain ECMP's", file=sys.stderr)
    sys.exit(1)
print("PASS")
PY
