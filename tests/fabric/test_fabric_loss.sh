#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Injected loss: `loss: 0.05` on the link h5:leaf2 drops about 5% at
# leaf2's egress toward h5. About 20000 UDP packets are sent; the fraction
# injected_drops / (packets + injected_drops) read from ice-fabric stats
# must lie within 5 binomial standard deviations of 0.05 (sd =
# sqrt(p(1-p)/N), about 0.0015 here: a correct model fails about once in
# 1.7 million runs, while a loss rate off by 15% or more is caught).
. "$(dirname "$0")/lib_fabric.sh"
ice_need_tool jq

P=0.05
name=ls$ICE_SFX
file=$(ice_fab_gen "$name")
sed -i "s/^  - {a: h5:eth0, b: leaf2}/  - {a: h5:eth0, b: leaf2, loss: $P}/" "$file"
grep -q "b: leaf2, loss: $P" "$file" || ice_fail "could not add loss to $file"
ice_fab_up "$file" || ice_fail "ice-fabric up failed"

# Plain UDP datagrams, no handshake: iperf3 3.12's UDP setup exchanges one
# datagram each way without retrying, so the 5% loss on this very link would
# hang it in about one run in twenty.
ice_fab_exec "$name" h5 python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.2.0.1", 5201)); s.settimeout(3.0)
n = 0
try:
    while True:
        s.recv(2048); n += 1
except socket.timeout:
    pass
print(n)' >"$ICE_TMP/rcv.out" 2>&1 &
ICE_PIDS+=($!)
sleep 0.5
SENT=20000
ice_fab_exec "$name" h1 timeout 30 python3 -c '
import socket, sys, time
n = int(sys.argv[1]); s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
buf = bytes(500); due = time.monotonic()
for i in range(n):
    s.sendto(buf, ("10.2.0.1", 5201))
    if i % 10 == 9:   # 10 datagrams a ms: 10000/s, 40 Mbit/s
        # after a stall, go on from now: catching up would send a burst
        # that the links queues upstream of leaf2 drop
        due = max(due + 0.001, time.monotonic())
        time.sleep(max(0.0, due - time.monotonic()))' "$SENT" \
	>"$ICE_TMP/snd.log" 2>&1 || ice_fail "UDP sender failed: $(cat "$ICE_TMP/snd.log")"
wait "${ICE_PIDS[0]}"
rcv=$(cat "$ICE_TMP/rcv.out")
[[ $rcv =~ ^[0-9]+$ ]] || ice_fail "UDP receiver failed: $rcv"
e2e=$(python3 -c "print(round(100 * (1 - $rcv / $SENT), 2))")
read -r pk inj <<<"$("$ICE_FABRIC" stats "$name" --json |
	jq -r '.ports[] | select(.switch == "leaf2" and .port == "h5") | "\(.packets) \(.injected_drops)"')"
python3 - "$pk" "$inj" "$P" "$e2e" <<'PY' || exit 1
import math, sys
pk, inj, p, e2e = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
n = pk + inj
f = inj / n if n else 0.0
tol = 5 * math.sqrt(p * (1 - p) / n) if n else 0.0
print(f"injected loss {p}: leaf2->h5 dropped {inj} of {n} ({f:.4f}; accepted "
      f"{p - tol:.4f}..{p + tol:.4f}); receiver lost {e2e}% end to end")
if n < 10000:
    sys.exit(f"only {n} of the 20000 packets sent reached leaf2's port toward h5 (at least 10000 "
             f"needed to judge the fraction): dropped upstream, the sender bursting on a busy box?")
if abs(f - p) > tol:
    sys.exit(f"the injected fraction {f:.4f} is outside {p - tol:.4f}..{p + tol:.4f}")
PY
echo "PASS"
