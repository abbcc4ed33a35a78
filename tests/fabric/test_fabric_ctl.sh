#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ice-controller + ice-agent close the loop on a 2x2 leaf-spine, 2 hosts per
# leaf, 100 Mbit/s everywhere:
#   1. ice-perf h1 -> h3 and h2 -> h4 (restarted until ECMP puts both on
#      one spine); the controller moves one: the QPs' source ports change to
#      the planned ones and leaf1's bytes split over both spines;
#   2. leaf1:spine2 goes down (ice-fabric link records it in Redis): leaf1
#      fails over at once (every flow keeps going, the ACKs too), a new
#      plan uses no down link; the reaction time is printed;
#   3. an all-reduce between h1 and h3 is announced (COLL_START in the
#      hosts' event streams): a plan with start rates; reaction time printed;
#   4. Redis dies (traffic keeps flowing) and restarts empty: the agents
#      register again, the controller's next plans carry epochs above the
#      ones the agents accepted (the counter in Redis started from 0), and
#      the agents apply them.
. "$(dirname "$0")/lib_fabric.sh"
. "$(dirname "$0")/lib_fabric_ctl.sh"
ctl_fabric_up ct

# 1. a collision first
collide 90
echo "ECMP: leaf1 -> spine1 / spine2: $s1 / $s2 bytes/s (collision)"

ctl_start A --reopt 2s --lifetime 5s --interval 20ms
wait_for 5 grep -q '^epoch ' "$ICE_TMP/ctl-A.out" || ctl_fail "no plan published in 5 s"
wait_for 3 bash -c "[ \"\$(redis-cli -h $rhost -p $rport HGET 'ice:$name:{h1}:plan:applied' epoch)\" -ge 1 ]" ||
	ctl_fail "h1 applied no plan"
grep '^epoch ' "$ICE_TMP/ctl-A.out" | head -1
sleep 1
n1=$(qp_field h1 sport) n2=$(qp_field h2 sport)
echo "source ports: h1 $sp1 -> $n1, h2 $sp2 -> $n2"
[ "$n1" != "$sp1" ] || [ "$n2" != "$sp2" ] || ctl_fail "no QP changed its source port"
for h in h1 h2; do
	qpn=$(qp_field $h qpn)
	want=$(rcli GET "ice:$name:{$h}:plan" | python3 -c 'import json,sys
e = [e for e in json.load(sys.stdin)["plan"]["entries"] if e["qpn"] == int(sys.argv[1])]
print(e[0]["sport"] if e else "none")' "$qpn")
	[ "$(qp_field $h sport)" = "$want" ] || ctl_fail "$h: QP sport $(qp_field $h sport), plan says $want"
done
read -r s1 s2 <<<"$(spine_split 1)"
tot=$((s1 + s2))
echo "ICE: leaf1 -> spine1 / spine2: $s1 / $s2 bytes/s"
[ $((s1 * 10)) -ge $((tot * 3)) ] && [ $((s2 * 10)) -ge $((tot * 3)) ] ||
	ctl_fail "leaf1's uplinks not balanced after the plan: $s1 / $s2"

# 2. link down
"$ICE_FABRIC" link --fabric "$name" leaf1:spine2 down || ctl_fail "ice-fabric link down"
[ -n "$(rcli HGET "ice:$name:links" leaf1:spine2)" ] || ctl_fail "ice-fabric link did not record the state"
wait_for 5 grep -qE '^reaction: link leaf1:spine2 (oper-status )?down' "$ICE_TMP/ctl-A.out" ||
	ctl_fail "no reaction to the link going down"
grep '^reaction: link' "$ICE_TMP/ctl-A.out" | tail -1
[ "$(rcli HGET "ice:$name:{ctl}:status" down_links_used)" = 0 ] || ctl_fail "the plan uses the down link"
# every flow, planned or not (the ACKs), keeps going: leaf1 fails over
read -r s1 s2 <<<"$(spine_split 1)"
echo "leaf1:spine2 down: leaf1 -> spine1 / spine2: $s1 / $s2 bytes/s"
[ "$s1" -gt 1000000 ] || ctl_fail "traffic stopped while leaf1:spine2 was down"
"$ICE_FABRIC" link --fabric "$name" leaf1:spine2 up || ctl_fail "ice-fabric link up"
wait_for 5 grep -qE '^reaction: link leaf1:spine2 (oper-status )?up' "$ICE_TMP/ctl-A.out" ||
	ctl_fail "no reaction to the link coming back"
grep '^reaction: link leaf1:spine2 up' "$ICE_TMP/ctl-A.out" | tail -1

# 3. an announced all-reduce h1 <-> h3
for r in 0 1; do
	now=$(date +%s%N)
	h=$([ $r = 0 ] && echo h1 || echo h3)
	rcli XADD "ice:$name:{$h}:events" '*' nic eth0 json \
		"{\"kind\":\"coll_start\",\"lib\":\"test\",\"pid\":1,\"seq\":1,\"ts_ns\":$now,\"comm\":\"00000000000000aa\",\"rank\":$r,\"nranks\":2,\"op\":\"allreduce\",\"count\":16777216,\"bytes\":67108864,\"dtype\":7,\"redop\":0,\"root\":-1,\"peer\":-1,\"prev\":$((1 - r)),\"next\":$((1 - r))}" >/dev/null
done
wait_for 5 grep -q '^reaction: allreduce' "$ICE_TMP/ctl-A.out" || ctl_fail "no reaction to the announced all-reduce"
grep '^reaction: allreduce' "$ICE_TMP/ctl-A.out" | tail -1
rate=$(rcli GET "ice:$name:{h1}:plan" | python3 -c 'import json,sys; print(max([e["start_mbps"] for e in json.load(sys.stdin)["plan"]["entries"]] or [0]))')
[ "$rate" -gt 0 ] || ctl_fail "the announced flow got no start rate"
echo "announced all-reduce: h1's QP starts at $rate Mbit/s"
grep -c '^reaction' "$ICE_TMP/ctl-A.out" >/dev/null
# one rank destroys the communicator: the collective ends now, not after
# the announcement TTL (10 s), and its demand leaves the plan in an
# incremental plan (an end frees capacity: rates again, no route moves),
# or in the periodic re-optimisation where one falls due at that moment
# (the controller merges the two triggers)
now=$(date +%s%N)
rcli XADD "ice:$name:{h3}:events" '*' nic eth0 json \
	"{\"kind\":\"comm_destroy\",\"lib\":\"test\",\"pid\":1,\"seq\":2,\"ts_ns\":$now,\"comm\":\"00000000000000aa\",\"rank\":1,\"nranks\":2}" >/dev/null
wait_for 2 grep -q 'comm 00000000000000aa ended (rank 1 destroyed its communicator)' "$ICE_TMP/ctl-A.log" ||
	ctl_fail "the collective did not end within 2 s of its communicator's destruction"
wait_for 2 grep -Eq 'plan \(.*collective-end (.*flows \(0 announced\) on [0-9]* hosts, incremental|periodic .*flows \(0 announced\) on [0-9]* hosts, re-optimised)' \
	"$ICE_TMP/ctl-A.log" ||
	ctl_fail "no incremental plan without the ended collective's demand"
echo "communicator destroyed: the collective ended at once"
grep -q 'plan refused' "$ICE_TMP"/agent-*.log && ctl_fail "an agent refused a plan"

# 4. Redis restarts without its data; the traffic does not notice.
e_before=$(rcli HGET "ice:$name:{h1}:plan:applied" epoch)
rcli SHUTDOWN NOSAVE >/dev/null 2>&1
sleep 1.5
read -r s1 s2 <<<"$(spine_split 1)"
echo "Redis down: leaf1 -> spine1 / spine2: $s1 / $s2 bytes/s"
[ $((s1 + s2)) -gt 1000000 ] || ctl_fail "traffic stopped while Redis was down"
redis-server --port "$rport" --bind "$rhost" --protected-mode no --daemonize yes \
	--pidfile "/run/ice/$name/redis.pid" --dir "/run/ice/$name" --save '' --appendonly no >/dev/null ||
	ctl_fail "cannot restart redis-server"
wait_for 20 bash -c "e=\$(redis-cli -h $rhost -p $rport HGET 'ice:$name:{h1}:plan:applied' epoch); [ -n \"\$e\" ] && [ \"\$e\" -gt $e_before ]" ||
	ctl_fail "no plan above epoch $e_before applied on h1 within 20 s of the Redis restart"
echo "Redis restarted empty: h1 applied epoch $(rcli HGET "ice:$name:{h1}:plan:applied" epoch) (was $e_before before the restart)"
grep -q 'plan refused' "$ICE_TMP"/agent-*.log && ctl_fail "an agent refused a plan"
for h in h1 h2; do
	grep -q 'no acknowledgement' "$ICE_TMP/perf-$h.log" &&
		ctl_fail "$h's ice-perf lost its QP: $(tail -3 "$ICE_TMP/perf-$h.log")"
done
perf_stop
echo "PASS"
