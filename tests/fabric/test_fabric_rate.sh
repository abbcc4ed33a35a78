#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A 200 Mbit/s link holds its rate within 5%: iperf3 -u from h1 to h2 (both
# on leaf1) offered at 300 Mbit/s; the receiver's figure must be within 5%
# of the UDP payload share of 200 Mbit/s (TBF counts whole frames: 8972 B
# payload + 8 UDP + 20 IP + 14 Ethernet = 9014 B). Jumbo frames (MTU 9000)
# keep it at ~2800 packets/s: with 1500-byte frames (17k packets/s) on this
# shared 2-core box the receiver's socket overflowed whenever other work ran
# (-7.7% seen at 91% CPU busy), which measures the CPU, not the link.
# Prints CPU use: if the CPU were the bottleneck the figure would be void.
. "$(dirname "$0")/lib_fabric.sh"
ice_need_tool iperf3 jq

name=rt$ICE_SFX
file=$(ice_fab_gen "$name" --rate 200mbit --mtu 9000)
ice_fab_up "$file" || ice_fail "ice-fabric up failed"

# measure ATTEMPT: one 4 s iperf3 run. Exit 0 within 5 %, 2 above it (a
# fault whatever the machine did), 3 below it in a void run, 1 below it in a
# clean one. A VM whose host steals its CPU for longer than the TBF burst
# lasts (4 jumbo frames, 36056 B: 1.44 ms at 200 Mbit/s) loses those tokens
# and under-delivers with the guest idle (seen on CI: 139-162 Mbit/s with
# the CPU 19-23 % busy), so each run is watched by ice-env-probe.
measure() {
	local c0 c1 got busy void=0
	ice_fab_exec "$name" h2 iperf3 -s -1 -J -p 5201 >"$ICE_TMP/srv.json" 2>&1 &
	local srv=$!
	ICE_PIDS+=($srv)
	sleep 0.3
	c0=($(ice_cpu_sample))
	ice_env_start 1.44
	ice_fab_exec "$name" h1 timeout 30 iperf3 -c 10.1.0.3 -p 5201 -u -b 300M -l 8972 -w 2M \
		-t 4 -J >"$ICE_TMP/cli.json" || ice_fail "iperf3 client failed: $(cat "$ICE_TMP/cli.json")"
	ice_env_stop
	c1=($(ice_cpu_sample))
	wait "$srv"
	got=$(jq ".end.sum_received.bits_per_second" "$ICE_TMP/srv.json")
	[ -n "$got" ] && [ "$got" != null ] || ice_fail "no receiver figure: $(cat "$ICE_TMP/srv.json")"
	busy=$(((c1[0] - c0[0]) * 100 / (c1[0] - c0[0] + c1[1] - c0[1])))
	ice_env_void && void=1
	python3 - "$got" "$busy" "$1" "$void" "$ICE_ENV_TXT" <<'PY'
import sys
got, busy, attempt, void, env = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1", sys.argv[5]
want = 200e6 * 8972 / 9014
err = (got - want) / want
print(f"200 Mbit/s link (attempt {attempt}): receiver {got / 1e6:.2f} Mbit/s payload, expected "
      f"{want / 1e6:.2f} ({err * 100:+.2f}%, limit 5%); CPU busy {busy}%; {env}"
      f"{'; VOID' if void else ''}")
sys.exit(0 if abs(err) < 0.05 else 2 if err > 0 else 3 if void else 1)
PY
}

clean_miss=0
for attempt in 1 2 3 4 5; do
	rc=0
	measure "$attempt" || rc=$?
	case $rc in
	0) echo "PASS" && exit 0 ;;
	2) ice_fail "the link delivered more than its rate" ;;
	1) clean_miss=$((clean_miss + 1)) ;;
	esac
	[ "$clean_miss" -lt 2 ] || break
done
[ "$clean_miss" -eq 0 ] && ice_skip "every run was void: the VM's host took the CPU for" \
	"longer than the TBF burst in >= $ICE_ENV_VOID_PCT % of each run, so the link's rate cannot be judged here"
ice_fail "the link missed its rate by more than 5% in $clean_miss runs the host left alone"
