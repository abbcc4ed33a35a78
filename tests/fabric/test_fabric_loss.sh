#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Injected loss: `loss: 0.05` on the link h5:leaf2 drops about 5% at
# leaf2's egress toward h5. About 20000 UDP packets are sent; the fraction
# injected_drops / (packets + injected_drops) read from ice-fabric stats
# must lie within 5 binomial standard deviations of 0.05 (sd =
# sqrt(p(1-p)/N), about 0.0015 here: a correct model fails about once in
# 1.7 million runs, while a loss rate off by 15% or more is caught).
. "$(dirname "$0")/lib_fabric.sh"
ice_need_tool iperf3 jq

P=0.05
name=ls$ICE_SFX
file=$(ice_fab_gen "$name")
sed -i "s/^  - {a: h5:eth0, b: leaf2}/  - {a: h5:eth0, b: leaf2, loss: $P}/" "$file"
grep -q "b: leaf2, loss: $P" "$file" || ice_fail "could not add loss to $file"
ice_fab_up "$file" || ice_fail "ice-fabric up failed"

ice_fab_exec "$name" h5 iperf3 -s -1 -J -p 5201 >"$ICE_TMP/srv.json" 2>&1 &
ICE_PIDS+=($!)
sleep 0.3
ice_fab_exec "$name" h1 timeout 30 iperf3 -c 10.2.0.1 -p 5201 -u -b 40M -l 500 -t 2 \
	>"$ICE_TMP/cli.log" 2>&1 || ice_fail "iperf3 failed: $(cat "$ICE_TMP/cli.log")"
wait "${ICE_PIDS[0]}"
e2e=$(jq '.end.sum_received.lost_percent' "$ICE_TMP/srv.json")
read -r pk inj <<<"$("$ICE_FABRIC" stats "$name" --json |
	jq -r '.ports[] | select(.switch == "leaf2" and .port == "h5") | "\(.packets) \(.injected_drops)"')"
python3 - "$pk" "$inj" "$P" "$e2e" <<'PY' || exit 1
import math, sys
pk, inj, p, e2e = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
n = pk + inj
f = inj / n if n else 0.0
tol = 5 * math.sqrt(p * (1 - p) / n) if n else 0.0
print(f"injected loss {p}: leaf2->h5 dropped {inj} of {n} ({f:.4f}; accepted "
      f"{p - tol:.4f}..{p + tol:.4f}); iperf3 receiver lost {e2e}%")
sys.exit(0 if n >= 10000 and abs(f - p) <= tol else 1)
PY
echo "PASS"
