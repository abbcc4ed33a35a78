#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ice-probe path health on an FRR test bed (h1 -> h5, two spine paths,
# responder on h5, watch on h1 every 500 ms, records to Redis):
#  - a 2:1 incast on the spine1 path (h2 and h3 on leaf1 send 150 Mbit/s each
#    to h6/h7 through spine1: 300 into leaf1's 200 Mbit/s port) raises that
#    path's queueing delay and not spine2's; back to base within two
#    intervals after it stops;
#  - leaf1:spine1 down: the spine1 path is reported dead within 3 intervals
#    and the map (also in Redis) refreshed without it.
. "$(dirname "$0")/../fabric/lib_fabric.sh"
ICE_PROBE=${ICE_PROBE:-ice-probe}
ice_need_tool "$ICE_PROBE" iperf3 jq redis-cli python3
here=$(cd "$(dirname "$0")" && pwd)
IV_MS=500

name=ph$ICE_SFX
# fabric links at 50 Mbit/s: the senders, not the 2 CPUs, fill the queue
file=$(ice_fab_gen "$name" --routing frr --fabric-rate 50mbit)
ice_fab_up "$file" --redis $((16000 + ICE_SFX % 1000)) || ice_fail "ice-fabric up failed"
redis=$(cat "/run/ice/$name/redis.port")
now_ms() { date +%s%3N; }

sport_via() { # SRCHOST SRCIP DSTIP DPORT: a source port leaf1 sends via spine1
	local p
	for ((p = 40000; p < 40200; p++)); do
		ip -n "ice$name-leaf1" route get "$3" from "$2" iif "$1" ipproto udp sport $p \
			dport "$4" | grep -q "dev spine1 " && { echo $p; return; }
	done
	ice_fail "no source port from $2 via spine1"
}

"$ICE_FABRIC" exec --fabric "$name" h5 -- "$ICE_PROBE" responder --src 10.2.0.1 \
	2>"$ICE_TMP/resp.err" &
ICE_PIDS+=($!)
for p in 5201 5202; do
	ip netns exec "ice$name-h$((p - 5195))" iperf3 -s -p $p >/dev/null 2>&1 &
	ICE_PIDS+=($!)
done
sleep 0.5
printf 'pairs:\n  - {src: h1, dst: h5}\n' >"$ICE_TMP/pl.yaml"
"$ICE_FABRIC" exec --fabric "$name" h1 -- "$ICE_PROBE" watch --json --src 10.1.0.1 \
	--pinglist "$ICE_TMP/pl.yaml" --report-interval ${IV_MS}ms --probe-interval 10ms \
	--duration 14s >"$ICE_TMP/watch.json" 2>"$ICE_TMP/watch.err" &
wpid=$!
ICE_PIDS+=($wpid)
sleep 3
s2=$(sport_via h2 10.1.0.3 10.2.0.3 5201)
s3=$(sport_via h3 10.1.0.5 10.2.0.5 5202)
c0=($(ice_cpu_sample))
t_inc=$(now_ms)
ice_fab_exec "$name" h2 iperf3 -c 10.2.0.3 -p 5201 --cport "$s2" -u -b 60M -l 1400 -t 3 \
	>"$ICE_TMP/i2.log" 2>&1 &
i2=$!
ice_fab_exec "$name" h3 iperf3 -c 10.2.0.5 -p 5202 --cport "$s3" -u -b 60M -l 1400 -t 3 \
	>"$ICE_TMP/i3.log" 2>&1 || ice_fail "iperf3 h3: $(tail -2 "$ICE_TMP/i3.log")"
wait $i2 || ice_fail "iperf3 h2: $(tail -2 "$ICE_TMP/i2.log")"
t_end=$(now_ms)
c1=($(ice_cpu_sample))
busy=$(((c1[0] - c0[0]) * 100 / (c1[0] - c0[0] + c1[1] - c0[1])))
peak=$("$ICE_FABRIC" stats "$name" --json | jq -r '.ports[] | select(.switch == "leaf1" and .port == "spine1") | "\(.peak_depth) B peak, \(.drops) drops"')
echo "leaf1 -> spine1 port: $peak; received at h6/h7: $(grep -h receiver "$ICE_TMP"/i[23].log | awk '{print $7, $8}' | tr '\n' ' ')"
echo "incast h2:$s2 + h3:$s3 via spine1, 2 x 60 Mbit/s offered into 50 Mbit/s for 3 s; CPU busy $busy%"
sleep 3
t_down=$(now_ms)
"$ICE_FABRIC" link --fabric "$name" leaf1:spine1 down || ice_fail "link down failed"
wait $wpid || ice_fail "watch failed: $(tail -3 "$ICE_TMP/watch.err")"
redis_map=$(redis-cli -h "$(ip -4 -o addr | awk '/ice.*br/ {sub("/.*","",$4); print $4; exit}')" \
	-p "$redis" HGET "ice:$name:{10.1.0.1}:probe:map:10.1.0.1>10.2.0.1" json)
python3 "$here/probe_health_check.py" "$ICE_TMP/watch.json" "$t_inc" "$t_end" "$t_down" "$IV_MS" \
	"$redis_map" || ice_fail "health checks failed"
echo "PASS"
