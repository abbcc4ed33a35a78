#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# PFC in the closed loop (controller/ctl_pfc.h), on a real redis-server and
# a real ice-controller with the default test bed's topology (2 spines, 2
# leaves, 8 hosts). One process seeds what the agents and a switch
# telemetry collector write: every switch port each 100 ms (steady loads,
# and per-priority paused shares where the test asks), h1's QP to h5 and
# the NIC records of h1, h5 and h6 each 250 ms (h5's and h6's with a `pfc`
# part, as the agent's NIC backend writes it):
#   1. leaf1's port to the spine h1's QP crosses is held 70 % of the time
#      in priority 3 (in-pfc-paused): the controller says the link is
#      pausing, moves the QP to the other spine, and publishes the link's
#      paused share, its storm priorities and 30 % of its capacity;
#   2. h5's NIC holds its switch 80 % of the time in priority 3, its
#      lossless one (tx_paused): leaf2 -> h5 is published paused, at 20 %
#      of its capacity, and the fabric's lossless priorities are "3";
#   3. h6's pfc part is garbage: counted (pfc_bad_records), said, nothing
#      else changes;
#   4. the pause ends: the storm is said to be over, the capacity is back.
# Needs redis-server, redis-cli and python3; exits 77 without.
set -euo pipefail

ICECTL=${ICECTL:?path of icectl}
ICE_CONTROLLER=${ICE_CONTROLLER:?path of ice-controller}
ICE_TOPO=${ICE_TOPO:?path of ice-topo}

. "$(dirname "$0")/../icectl/lib_icectl.sh"
icectl_test ctl-pfc "ctl_pid seeder redis_pid" redis-server redis-cli python3

F=icepfc
rc() { redis-cli -s "$S" "$@"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

redis_start
wait_for 10 rc ping >/dev/null 2>&1 || fail "redis-server did not start"
"$ICE_TOPO" gen leaf-spine --name "$F" --ecmp model -o "$tmp/topo.yaml"
"$ICECTL" keygen --out "$tmp" --name plan >/dev/null || fail "icectl keygen"

cat >"$tmp/seed.py" <<'PY'
import os, sys, time
from seed_bed import PORTS, agent, connect, port, qp, send, cmd
S, F, D = sys.argv[1], sys.argv[2], sys.argv[3]
IP = {"h1": "10.1.0.1", "h5": "10.2.0.1", "h6": "10.2.0.3"}
c = connect(S)
def text(name):
    try:
        return open(os.path.join(D, name)).read().strip()
    except FileNotFoundError:
        return None
t0 = last = time.time()
seq = 0
nxt_agents = 0
while True:
    now = time.time()
    ms, dt = int(now * 1000), (now - last) * 1000
    last, seq = now, seq + 1
    out = [cmd("SET", f"ice:{F}:schema", 1)]
    for sw, p in PORTS:
        held = text(f"pfc.{sw}.{p}") or "0,0,0,0,0,0,0,0"
        out += port(F, sw, p, seq, ms, dt, int(2e6 * (now - t0)), "in-pfc-paused", held)
    if now >= nxt_agents:
        nxt_agents = now + 0.25
        for h, ip in IP.items():
            pfc = text(f"nicpfc.{h}")
            out += agent(F, h, ip, ms, seq, 1 if h == "h1" else 0,
                         *(["pfc", pfc] if pfc is not None else []))
        out += qp(F, "h1", IP["h1"], 17, IP["h5"], ms, seq, 9000000)
    send(c, out)
    time.sleep(max(0.0, 0.1 - (time.time() - now)))
PY
echo '{"lossless":[3],"storm":[],"prio":{"3":{"rx_pause":0,"tx_pause":0,"rx_paused":0,"tx_paused":0}}}' >"$tmp/nicpfc.h5"
PYTHONPATH="$(dirname "$0")/../icectl" python3 "$tmp/seed.py" "$S" "$F" "$tmp" 2>"$tmp/seed.log" &
seeder=$!

"$ICE_CONTROLLER" --fabric "$F" --topology "$tmp/topo.yaml" --redis "unix:$S" \
	--key "$tmp/plan.key" --id pfc-a --reopt 0 --pfc-interval 200ms >"$tmp/ctl.out" 2>"$tmp/ctl.log" &
ctl_pid=$!
Q="ice:$F:ctl:qp:10.1.0.1:17"
route() { rc HGET "$Q" route; }
wait_for 15 sh -c "redis-cli -s $S HGET '$Q' route | grep -q '>'" || fail "h1's QP was not planned"
r0=$(route)
case $r0 in
leaf1\>spine1\>leaf2) hot=spine1 other=spine2 ;;
leaf1\>spine2\>leaf2) hot=spine2 other=spine1 ;;
*) fail "h1's QP route is '$r0'" ;;
esac
lossless_is_3() { [ "$(rc HGET "ice:$F:{ctl}:status" pfc_lossless)" = 3 ]; }
wait_for 5 lossless_is_3 || fail "pfc_lossless is '$(rc HGET "ice:$F:{ctl}:status" pfc_lossless)'"
echo "0. h1's QP on $r0; the NICs' lossless priorities: $(rc HGET "ice:$F:{ctl}:status" pfc_lossless) ($(rc HGET "ice:$F:{ctl}:status" pfc_nics) NIC(s) say)"

# 1. leaf1 -> the QP's spine pausing
K="ice:$F:ctl:link:leaf1:$hot"
t0=$(now_ms)
echo "0,0,0,0.7,0,0,0,0" >"$tmp/pfc.leaf1.$hot"
moved() { [ "$(route)" = "leaf1>$other>leaf2" ]; }
wait_for 5 moved || fail "h1's QP did not leave leaf1>$hot (route $(route))"
t1=$(now_ms)
grep -q "link leaf1>$hot pausing (PFC): priorities mask 0x08 paused 70 %" "$tmp/ctl.log" ||
	fail "the controller did not say why it moved the QP"
[ "$(rc HGET "$Q" rule)" = congestion ] || fail "the move's rule is '$(rc HGET "$Q" rule)'"
storm_is_3() { [ "$(rc HGET "$K" up_pfc_storm)" = 3 ]; }
wait_for 3 storm_is_3 || fail "$K up_pfc_storm '$(rc HGET "$K" up_pfc_storm)'"
[ "$(rc HGET "$K" up_pfc_paused)" = 0.700 ] || fail "$K up_pfc_paused '$(rc HGET "$K" up_pfc_paused)'"
cap=$(rc HGET "$K" up_capacity)
[ "$cap" -ge 7400000 ] && [ "$cap" -le 7600000 ] || fail "$K up_capacity $cap (expected 30 % of 25 MB/s)"
echo "1. leaf1>$hot held 70 % in priority 3: h1's QP moved to leaf1>$other>leaf2 in $((t1 - t0)) ms; the link published paused $(rc HGET "$K" up_pfc_paused), storm '$(rc HGET "$K" up_pfc_storm)', capacity $cap B/s"

# 2. h5's NIC holds its switch: leaf2 -> h5 pausing
echo '{"lossless":[3],"storm":[3],"prio":{"3":{"rx_pause":0,"tx_pause":5200,"rx_paused":0,"tx_paused":0.8}}}' >"$tmp/nicpfc.h5"
H=$(rc --scan --pattern "ice:$F:ctl:link:*h5*" | head -1)
[ -n "$H" ] || fail "no ctl:link record of h5's link"
h5_paused() { [ "$(rc HGET "$H" down_pfc_paused)" = 0.800 ] && [ "$(rc HGET "$H" down_pfc_storm)" = 3 ]; }
wait_for 5 h5_paused || fail "$H down_pfc_paused '$(rc HGET "$H" down_pfc_paused)' storm '$(rc HGET "$H" down_pfc_storm)'"
cap=$(rc HGET "$H" down_capacity)
[ "$cap" -ge 4900000 ] && [ "$cap" -le 5100000 ] || fail "$H down_capacity $cap (expected 20 % of 25 MB/s)"
grep -q "PFC pause storm on leaf2>h5" "$tmp/ctl.log" || fail "the storm on leaf2>h5 was not said"
echo "2. h5's NIC holds leaf2 80 %: $H down paused $(rc HGET "$H" down_pfc_paused), storm '$(rc HGET "$H" down_pfc_storm)', capacity $cap B/s"

# 3. garbage
echo '{"lossless":[3],"prio":{"9":{"rx_paused":2}}}' >"$tmp/nicpfc.h6"
bad() { [ "$(rc HGET "ice:$F:{ctl}:status" pfc_bad_records)" -ge 1 ] 2>/dev/null; }
wait_for 5 bad || fail "h6's garbage was not counted: $(rc HGET "ice:$F:{ctl}:status" pfc_bad_records)"
grep -q "PFC: h6 ignored" "$tmp/ctl.log" || fail "h6's garbage was not said"
kill -0 "$ctl_pid" || fail "the controller died"
echo "3. h6's pfc part garbage: $(rc HGET "ice:$F:{ctl}:status" pfc_bad_records) record(s) ignored and said"

# 4. the pause ends
rm -f "$tmp/pfc.leaf1.$hot" "$tmp/nicpfc.h6"
echo '{"lossless":[3],"storm":[],"prio":{}}' >"$tmp/nicpfc.h5"
calm() { [ "$(rc HGET "$K" up_pfc_storm)" = "" ] && [ "$(rc HGET "$K" up_capacity)" -ge 24000000 ]; }
wait_for 5 calm || fail "$K still storming: '$(rc HGET "$K" up_pfc_storm)', capacity $(rc HGET "$K" up_capacity)"
grep -q "PFC pause storm on leaf1>$hot is over" "$tmp/ctl.log" || fail "the end of the storm was not said"
echo "4. the pauses ended: storms over, leaf1>$hot capacity $(rc HGET "$K" up_capacity) B/s; $(rc HGET "ice:$F:{ctl}:status" pfc_storms) storm(s) counted"
echo PASS
