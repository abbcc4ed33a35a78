#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ICE on Redis Cluster: a 2x2 leaf-spine with kernel ECMP, 4 agents, the
# probe and the controller against 3 primaries + 3 replicas
# (tools/ice-redis-cluster on the management bridge, --redis cluster:...):
#   1. the agents register and their QP telemetry lands in their hosts'
#      slots, the probe's maps too; the controller reads them (its plans
#      steer the QPs it read) and every host applies a plan;
#   2. the primary that serves h1's slot is killed by its PID: the
#      controller keeps the plans in force and says which slots it misses;
#      after the replica takes over, h1's agent writes telemetry again and
#      applies plans of a newer epoch, published to its slot behind its
#      fence (plan:fence).
. "$(dirname "$0")/lib_fabric.sh"
CTL_CLUSTER=1
. "$(dirname "$0")/lib_fabric_ctl.sh"
ICE_PROBE=${ICE_PROBE:-ice-probe}
ice_need_tool "$ICE_PROBE" redis-server
ctl_fabric_up cc kernel

# 1. probe maps, traffic, a controller
for p in "h1 h3" "h2 h4"; do
	read -r s d <<<"$p"
	"$ICE_FABRIC" exec --fabric "$name" "$s" -- timeout 60 "$ICE_PROBE" paths "${IP[$s]}" "${IP[$d]}" \
		--redis "$redis" --fabric "$name" --topo "$file" --min-ports 8 --json \
		>"$ICE_TMP/map-$s.json" 2>"$ICE_TMP/probe-$s.log" || ctl_fail "ice-probe paths $s -> $d"
done
[ "$(rcli SCARD "ice:$name:probe:hosts")" = 2 ] || ctl_fail "the probe maps are not in the cluster"
perf h1 h3 120
perf h2 h4 120
ctl_start A --reopt 1s --lifetime 60s --interval 20ms
wait_for 10 grep -q '^epoch ' "$ICE_TMP/ctl-A.out" || ctl_fail "no plan published in 10 s"
applied() { rcli HGET "ice:$name:{$1}:plan:applied" epoch; }
for h in "${HOSTS[@]}"; do
	wait_for 5 bash -c "[ \"\$(redis-cli -c -h $rhost -p $rport HGET 'ice:$name:{$h}:plan:applied' epoch)\" -ge 1 ]" ||
		ctl_fail "$h applied no plan"
done
# the controller read the agents' QP records: h1's and h2's plans steer their QPs
for h in h1 h2; do
	wait_for 5 bash -c "[ \"\$(redis-cli -c -h $rhost -p $rport GET 'ice:$name:{$h}:plan' |
		python3 -c 'import json,sys; print(len(json.load(sys.stdin)[\"plan\"][\"entries\"]))')\" -ge 1 ]" ||
		ctl_fail "the plan for $h steers none of its QPs: telemetry not read"
done
e0=$(applied h1)
echo "plans applied on every host; h1 at epoch $e0, fence $(rcli GET "ice:$name:{h1}:plan:fence")"
[ "$(rcli GET "ice:$name:{h1}:plan:fence")" -ge "$e0" ] || ctl_fail "h1's fence is below its plan's epoch"

# 2. kill the primary of h1's slot
slot=$(rcli CLUSTER KEYSLOT "ice:$name:{h1}:plan")
for ((p = cport; p < cport + 6; p++)); do
	[ "$(redis-cli -h "$rhost" -p "$p" ROLE | head -1)" = master ] || continue
	[ "$(redis-cli -h "$rhost" -p "$p" CLUSTER COUNTKEYSINSLOT "$slot")" -gt 0 ] && victim=$p
done
[ -n "${victim:-}" ] || ctl_fail "no primary holds slot $slot"
vpid=$("$ICE_REDIS_CLUSTER" pid "$CTL_CLUSTER_DIR" "$victim")
t0=$(date +%s%N)
kill -9 "$vpid"
echo "killed the primary $rhost:$victim (pid $vpid, slot $slot of h1)"
wait_for 5 grep -q "cluster node $rhost:$victim (slots" "$ICE_TMP/ctl-A.log" ||
	ctl_fail "the controller did not say which slots it misses"
grep -m1 "cluster node $rhost:$victim (slots" "$ICE_TMP/ctl-A.log"
kill -0 "$CPID" || ctl_fail "the controller died with the shard"
# after the fail-over: telemetry and plans again
last=$(rcli HGET "ice:$name:{h1}:host" last_ms)
wait_for 30 bash -c "[ \"\$(redis-cli -c -h $rhost -p $rport HGET 'ice:$name:{h1}:plan:applied' epoch)\" -gt $e0 ] 2>/dev/null" ||
	ctl_fail "h1 applied no newer plan after the fail-over"
t1=$(date +%s%N)
e1=$(applied h1)
now=$(rcli HGET "ice:$name:{h1}:host" last_ms)
[ "${now:-0}" -gt "${last:-0}" ] || ctl_fail "h1's telemetry stopped after the fail-over ($last -> $now)"
echo "after the fail-over: h1 applied epoch $e1 ($(((t1 - t0) / 1000000)) ms after the kill), telemetry at $now ms"
for h in "${HOSTS[@]}"; do
	wait_for 10 bash -c "[ \"\$(redis-cli -c -h $rhost -p $rport HGET 'ice:$name:{$h}:plan:applied' epoch)\" -gt $e0 ] 2>/dev/null" ||
		ctl_fail "$h applied no newer plan after the fail-over"
done
perf_stop
echo PASS
