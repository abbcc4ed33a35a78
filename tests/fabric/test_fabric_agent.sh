#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ice-agent end to end in the fabric (docs/redis-schema.md): an agent per
# host (h1-h3 on leaf1, h4-h6 on leaf2) publishing to the fabric's Redis
# every second, while
#   - ice-perf h1 -> h4 runs alone across the spines, uncongested: the
#     sender's and the receiver's QP bytes and packets as BPF counted them
#     agree with the transport's own counters (the `tp` member) within 1 %;
#   - ice-perf h5 -> h6 (both on leaf2) runs into h6's port at half the rate
#     (a 2:1 overload of leaf2's port toward h6, DCQCN on): CE marks, CNPs
#     sent and CNPs received as BPF counted them agree with the transport's;
#   - the agent's own CPU (from /proc and /metrics) stays small with those
#     links full (printed; asserted < 10 % only, to catch a runaway loop);
#   - ice-bench allreduce over h1, h2, h4, h5: each host's events stream has
#     the coll_start/coll_end records with op allreduce, the element count,
#     4 ranks and the host's rank.
# Each host's agent gets its own run directory (lock, event socket: the
# namespaces share /run) and pin directory; ranks find their agent's socket
# through ICE_AGENT_SOCK.
. "$(dirname "$0")/lib_fabric.sh"
ice_need_tool redis-server redis-cli
BUILD=$(cd "$(dirname "$ICE_FABRIC")/.." && pwd)
ICE_AGENT=${ICE_AGENT:-$BUILD/host_agent/ice-agent}
ICE_PERF=${ICE_PERF:-$BUILD/transport/ice-perf}
ICE_BENCH=${ICE_BENCH:-$BUILD/transport/ice-bench}
ice_need_tool "$ICE_AGENT" "$ICE_PERF" "$ICE_BENCH"
HELPER="python3 $(dirname "$0")/ice_fabric_agent.py"

name=ag$ICE_SFX
port=$((20000 + ICE_SFX))
HOSTS=(h1 h2 h3 h4 h5 h6)
RANKS=(h1 h2 h4 h5)
declare -A IP=([h1]=10.1.0.1 [h2]=10.1.0.3 [h3]=10.1.0.5 [h4]=10.2.0.1 [h5]=10.2.0.3 [h6]=10.2.0.5)
declare -A APID

agent_cleanup() {
	ice_fab_cleanup
	local h
	for h in "${HOSTS[@]}"; do # what a crashed agent leaves
		rm -rf "/sys/fs/bpf/ice-agent-$name-$h"
		[ -e "/dev/shm/ice-ctrl-${IP[$h]}" ] && ! fuser -s "/dev/shm/ice-ctrl-${IP[$h]}" 2>/dev/null &&
			rm -f "/dev/shm/ice-ctrl-${IP[$h]}"
	done
}
trap agent_cleanup EXIT

file=$(ice_fab_gen "$name" --hosts-per-leaf 3 --mtu 9000)
for h in "${HOSTS[@]}"; do
	grep -q "addr: ${IP[$h]}/" "$file" || ice_fail "the generated addresses changed; update IP"
done
# h6's link at half the rate: h5 -> h6 at 200 Mbit/s is a 2:1 overload of
# leaf2's port toward h6
sed -i 's/{a: h6:eth0, b: leaf2}/{a: h6:eth0, b: leaf2, rate: 100mbit}/' "$file"
grep -q 'h6:eth0, b: leaf2, rate: 100mbit' "$file" || ice_fail "cannot slow h6's link"
ice_fab_up "$file" --redis "$port" || ice_fail "ice-fabric up failed"
redis=$("$ICE_FABRIC" exec --fabric "$name" h1 -- sh -c 'echo $ICE_REDIS')
[ -n "$redis" ] || ice_fail "ice-fabric exec exports no ICE_REDIS"

for h in "${HOSTS[@]}"; do
	mkdir -p "$ICE_TMP/$h"
	"$ICE_FABRIC" exec --fabric "$name" "$h" -- "$ICE_AGENT" --nic eth0 --fabric "$name" \
		--host "$h" --redis "$redis" --interval 1s --metrics-port 9464 \
		--run-dir "$ICE_TMP/$h" --pin-dir "/sys/fs/bpf/ice-agent-$name-$h" \
		>"$ICE_TMP/agent-$h.log" 2>&1 &
	APID[$h]=$!
	ICE_PIDS+=($!)
done
agent_logs() {
	local h
	for h in "${HOSTS[@]}"; do sed "s/^/  $h: /" "$ICE_TMP/agent-$h.log"; done
}
afail() {
	agent_logs >&2
	ice_fail "$@"
}
for ((i = 0; i < 50; i++)); do
	n=0
	for h in "${HOSTS[@]}"; do
		redis-cli -h "${redis%:*}" -p "${redis#*:}" EXISTS "ice:$name:{$h}:nic:eth0:alive" |
			grep -qx 1 && n=$((n + 1))
	done
	[ $n -eq ${#HOSTS[@]} ] && break
	sleep 0.1
done
[ $n -eq ${#HOSTS[@]} ] || afail "only $n of ${#HOSTS[@]} agents alive in Redis after 5 s"

cpu_ticks() { # CPU time of each agent (one thread) in ns: /proc/PID/schedstat
	local h s
	for h in "${HOSTS[@]}"; do
		read -r s _ <"/proc/${APID[$h]}/schedstat" || afail "agent on $h exited"
		echo -n "$s "
	done
}
cpu_pct() { # T0 T1 C0 C1: "MEAN MAX" % of a core per agent between two cpu_ticks
	awk -v a="$3" -v b="$4" -v dt=$(($2 - $1)) 'BEGIN {
		n = split(a, x, " "); split(b, y, " ")
		for (i = 1; i <= n; i++) { p = (y[i] - x[i]) / dt * 100; s += p; if (p > m) m = p }
		printf "%.3f %.3f", s / n, m }'
}
metric() { # HOST NAME: the value of a metric of HOST's agent (/metrics)
	ice_fab_exec "$name" "$1" timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/9464 &&
		printf "GET /metrics HTTP/1.0\r\n\r\n" >&3 && cat <&3' |
		awk -v m="$2" 'index($0, m "{") == 1 { print $NF }'
}

# ---- traffic: uncongested h1 -> h4, 2:1 congested h5 -> h6
perf() { # SENDER RECEIVER
	timeout 30 "$ICE_PERF" --netns "ice$name-$1,ice$name-$2" -D 4 --warmup 0.5 --json \
		--line-rate 200mbit >"$ICE_TMP/perf-$1.json" 2>"$ICE_TMP/perf-$1.log"
}
c0=$(cpu_ticks) t0=$(date +%s%N)
perf h1 h4 &
p1=$!
perf h5 h6 &
p2=$!
sleep 3.5
c1=$(cpu_ticks) t1=$(date +%s%N)
mcpu=$(for h in "${HOSTS[@]}"; do echo "$h $(metric "$h" ice_agent_cpu_percent)%"; done | tr '\n' ' ')
wait $p1 || afail "ice-perf h1 -> h4: $(cat "$ICE_TMP/perf-h1.log")"
wait $p2 || afail "ice-perf h5 -> h6: $(cat "$ICE_TMP/perf-h5.log")"
for h in h1 h5; do
	echo "ice-perf $h: $(grep -E '^(sender|receiver):' "$ICE_TMP/perf-$h.log" | tr -s ' ' | tr '\n' ' ')"
done
read -r mean max <<<"$(cpu_pct "$t0" "$t1" "$c0" "$c1")"
echo "agent CPU with h1 -> h4 and h5 -> h6 running: mean $mean %, max $max % of a core" \
	"(/proc/PID/schedstat, ${#HOSTS[@]} agents over $(((t1 - t0) / 1000000)) ms); /metrics (last interval): $mcpu"
awk -v c="$max" 'BEGIN { exit !(c < 10) }' || afail "agent CPU $max % >= 10 %: a runaway loop?"

sleep 1.2 # the last intervals reach Redis
$HELPER "$redis" "$name" bytes h1 h4 "${IP[h4]}" || afail "bytes: BPF and transport disagree"
$HELPER "$redis" "$name" cecnp h5 h6 "${IP[h6]}" || afail "CE/CNP: BPF and transport disagree"

# ---- collectives: allreduce of 1M floats over four hosts, two per leaf
iters=4 warm=1 count=$((1024 * 1024 / 4))
boot=${IP[h1]}:$((30000 + ICE_SFX))
rank=0 bpids=()
c0=$(cpu_ticks) t0=$(date +%s%N)
for h in "${RANKS[@]}"; do
	"$ICE_FABRIC" exec --fabric "$name" "$h" -- env ICE_AGENT_SOCK="$ICE_TMP/$h/agent-${IP[$h]}.sock" \
		timeout 40 "$ICE_BENCH" --rank $rank -N ${#RANKS[@]} --bootstrap "$boot" --addr "${IP[$h]}" \
		-C allreduce -b 1M -e 1M -n $iters -w $warm --line-rate 200mbit \
		>"$ICE_TMP/bench-$h.log" 2>&1 &
	bpids+=($!)
	rank=$((rank + 1))
done
for i in "${!bpids[@]}"; do
	wait "${bpids[$i]}" || afail "ice-bench rank $i: $(cat "$ICE_TMP/bench-${RANKS[$i]}.log")"
done
c1=$(cpu_ticks) t1=$(date +%s%N)
grep -E '^ +1048576' "$ICE_TMP/bench-h1.log" | sed 's/^/ice-bench allreduce: /'
read -r mean max <<<"$(cpu_pct "$t0" "$t1" "$c0" "$c1")"
echo "agent CPU during the allreduce: mean $mean %, max $max % of a core" \
	"(over $(((t1 - t0) / 1000000)) ms)"
awk -v c="$max" 'BEGIN { exit !(c < 10) }' || afail "agent CPU $max % >= 10 %: a runaway loop?"
sleep 1.2
rank=0
for h in "${RANKS[@]}"; do
	$HELPER "$redis" "$name" events "$h" allreduce $count ${#RANKS[@]} $rank $((iters + warm)) ||
		afail "events of $h"
	rank=$((rank + 1))
done
for h in "${HOSTS[@]}"; do
	kill -0 "${APID[$h]}" 2>/dev/null || afail "the agent on $h exited"
	grep -E 'error|malformed' "$ICE_TMP/agent-$h.log" && afail "the agent on $h logged errors"
done
echo "PASS"
