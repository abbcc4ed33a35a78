#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ice-agent while Redis goes away (docs/redis-schema.md, "Writing"): agents on
# h1 (default buffer, 300 intervals) and h2 (--buffer 2) publish every second
# while ice-perf h1 -> h2 runs; the fabric's redis-server is stopped by its
# pid (SIGTERM, after asking it to save on the way down, so that what it had
# acknowledged survives) for about 3.5 intervals and restarted on the same
# address and port. Then:
#   - both agents are the same processes, logged "unreachable ... retrying"
#     and reconnected;
#   - h1's NIC stream and its QP streams hold every interval: consecutive
#     seqs from 1 to the newest;
#   - h2's streams miss exactly the intervals its queue could not hold, as
#     many as its ice_agent_samples_dropped_total says, in one gap.
. "$(dirname "$0")/lib_fabric.sh"
ice_need_tool redis-server redis-cli
BUILD=$(cd "$(dirname "$ICE_FABRIC")/.." && pwd)
ICE_AGENT=${ICE_AGENT:-$BUILD/host_agent/ice-agent}
ICE_PERF=${ICE_PERF:-$BUILD/transport/ice-perf}
ice_need_tool "$ICE_AGENT" "$ICE_PERF"
HELPER="python3 $(dirname "$0")/ice_fabric_agent.py"

name=ar$ICE_SFX
port=$((20000 + ICE_SFX))
HOSTS=(h1 h2)
declare -A IP=([h1]=10.1.0.1 [h2]=10.2.0.1) BUF=([h1]=300 [h2]=2)
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

file=$(ice_fab_gen "$name" --hosts-per-leaf 1 --mtu 9000)
for h in "${HOSTS[@]}"; do
	grep -q "addr: ${IP[$h]}/" "$file" || ice_fail "the generated addresses changed; update IP"
done
ice_fab_up "$file" --redis "$port" || ice_fail "ice-fabric up failed"
redis=$("$ICE_FABRIC" exec --fabric "$name" h1 -- sh -c 'echo $ICE_REDIS')
[ -n "$redis" ] || ice_fail "ice-fabric exec exports no ICE_REDIS"
rhost=${redis%:*} rport=${redis#*:}
state=/run/ice/$name
[ -s "$state/redis.pid" ] || ice_fail "no $state/redis.pid"
rcli() { redis-cli -h "$rhost" -p "$rport" "$@"; }

for h in "${HOSTS[@]}"; do
	mkdir -p "$ICE_TMP/$h"
	"$ICE_FABRIC" exec --fabric "$name" "$h" -- "$ICE_AGENT" --nic eth0 --fabric "$name" \
		--host "$h" --redis "$redis" --interval 1s --buffer "${BUF[$h]}" --metrics-port 9464 \
		--run-dir "$ICE_TMP/$h" --pin-dir "/sys/fs/bpf/ice-agent-$name-$h" \
		>"$ICE_TMP/agent-$h.log" 2>&1 &
	APID[$h]=$!
	ICE_PIDS+=($!)
done
afail() {
	local h
	for h in "${HOSTS[@]}"; do sed "s/^/  $h: /" "$ICE_TMP/agent-$h.log"; done >&2
	ice_fail "$@"
}
metric() { # HOST NAME: the value of a metric of HOST's agent (/metrics)
	ice_fab_exec "$name" "$1" timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/9464 &&
		printf "GET /metrics HTTP/1.0\r\n\r\n" >&3 && cat <&3' |
		awk -v m="$2" 'index($0, m "{") == 1 { print $NF }'
}
for ((i = 0; i < 50; i++)); do
	n=0
	for h in "${HOSTS[@]}"; do
		rcli EXISTS "ice:$name:{$h}:nic:eth0:alive" | grep -qx 1 && n=$((n + 1))
	done
	[ $n -eq ${#HOSTS[@]} ] && break
	sleep 0.1
done
[ $n -eq ${#HOSTS[@]} ] || afail "only $n of ${#HOSTS[@]} agents alive in Redis after 5 s"

timeout 40 "$ICE_PERF" --netns "ice$name-h1,ice$name-h2" -D 14 --warmup 0.5 --line-rate 200mbit \
	>"$ICE_TMP/perf.log" 2>&1 &
perf=$!
sleep 3
# down: SIGTERM by pid; a save point first so that redis saves on the way out
# (it runs with --save ""): what it acknowledged must not be what goes missing
rcli CONFIG SET save "3600 1" >/dev/null || afail "redis CONFIG SET save"
rpid=$(cat "$state/redis.pid")
kill "$rpid" || afail "cannot stop redis-server (pid $rpid)"
for ((i = 0; i < 50; i++)); do kill -0 "$rpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$rpid" 2>/dev/null && afail "redis-server (pid $rpid) did not stop"
t_down=$(date +%s%N)
[ -s "$state/dump.rdb" ] || afail "redis saved nothing on its way down"
sleep 3.5
# up again as ice-fabric starts it (fabric/fabric.c start_redis): same
# address, port, pid file (ice-fabric down stops it) and directory (it
# loads dump.rdb from there)
redis-server --port "$rport" --bind "$rhost" --protected-mode no --daemonize yes \
	--pidfile "$state/redis.pid" --dir "$state" --save "" --appendonly no >/dev/null ||
	afail "cannot restart redis-server"
for ((i = 0; i < 50; i++)); do rcli PING 2>/dev/null | grep -qx PONG && break; sleep 0.1; done
t_up=$(date +%s%N)
echo "redis-server down for $(((t_up - t_down) / 1000000)) ms (pid $rpid -> $(cat "$state/redis.pid"))"

# the agents reconnect (back-off 0.5 s doubling: within ~8 s) and flush
for h in "${HOSTS[@]}"; do
	for ((i = 0; i < 120; i++)); do
		[ "$(grep -c 'connected, host' "$ICE_TMP/agent-$h.log")" -ge 2 ] &&
			[ "$(metric "$h" ice_agent_queue_depth)" = 0 ] && break
		sleep 0.1
	done
	[ "$(grep -c 'connected, host' "$ICE_TMP/agent-$h.log")" -ge 2 ] ||
		afail "the agent on $h did not reconnect within 12 s"
done
t_back=$(date +%s%N)
echo "agents reconnected and flushed $(((t_back - t_up) / 1000000)) ms after redis came back"
wait $perf || afail "ice-perf: $(cat "$ICE_TMP/perf.log")"
grep -E '^(sender|receiver):' "$ICE_TMP/perf.log" | tr -s ' ' | sed 's/^/ice-perf h1 -> h2: /'
sleep 1.2

for h in "${HOSTS[@]}"; do
	kill -0 "${APID[$h]}" 2>/dev/null || afail "the agent on $h exited"
	pid=$(rcli GET "ice:$name:{$h}:nic:eth0:alive" | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
	[ "$pid" = "${APID[$h]}" ] || afail "$h is alive as pid '$pid', not ${APID[$h]}"
	grep -q 'unreachable.*retrying' "$ICE_TMP/agent-$h.log" ||
		afail "the agent on $h did not log 'unreachable ... retrying'"
	out=$($HELPER "$redis" "$name" seqs "$h" eth0) || afail "$h: $out"
	echo "$out" | sed '$d'
	read -r first miss <<<"$(echo "$out" | tail -1 | sed 's/first=\([0-9]*\) missing=\([0-9]*\)/\1 \2/')"
	dropped=$(metric "$h" ice_agent_samples_dropped_total)
	echo "$h (buffer ${BUF[$h]}): $(grep -c 'unreachable' "$ICE_TMP/agent-$h.log") 'unreachable'" \
		"lines, $miss intervals missing, $dropped dropped (ice_agent_samples_dropped_total)"
	[ "$first" -eq 1 ] || afail "$h: the NIC stream starts at seq $first, not 1"
	[ "$miss" -eq "${dropped:-x}" ] || afail "$h: $miss intervals missing but $dropped dropped"
	if [ "${BUF[$h]}" -ge 10 ]; then
		[ "$miss" -eq 0 ] || afail "$h: $miss intervals missing with a buffer of ${BUF[$h]}"
	else
		[ "$miss" -gt 0 ] || afail "$h: nothing missing with a buffer of ${BUF[$h]} (outage too short?)"
	fi
done
echo "PASS"
