#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Controller failover and agent fallback on a 2x2 leaf-spine (2 hosts per
# leaf), ice-perf h1 -> h3 and h2 -> h4 running throughout:
#   1. controllers A and B share a lease (1 s); the leader is frozen with
#      SIGSTOP (a hung leader: the split-brain case): the standby publishes
#      within 2 s; the old leader is thawed (SIGCONT) and must stand down
#      (its publishing is fenced by the lease); the publication log
#      (ice:<F>:{ctl}:log) has strictly increasing epochs and never a plan of
#      the old leader after one of the new;
#   2. the last controller is killed: the agents keep the plan for its
#      lifetime (3 s), then put every QP back to its default source port;
#      traffic keeps flowing.
. "$(dirname "$0")/lib_fabric.sh"
. "$(dirname "$0")/lib_fabric_ctl.sh"
ctl_fabric_up cth

perf h1 h3 40
perf h2 h4 40
sleep 1
def1=$(sed -n 's/.*rank 0 (sender) QP 0: .* sport \([0-9]*\)/\1/p' "$ICE_TMP/perf-h1.log")
def2=$(sed -n 's/.*rank 0 (sender) QP 0: .* sport \([0-9]*\)/\1/p' "$ICE_TMP/perf-h2.log")
[ -n "$def1" ] && [ -n "$def2" ] || ctl_fail "ice-perf printed no source ports"

ctl_start A --lifetime 3s --reopt 1s --lease-ttl 1000ms
declare -A CP=([A]=$CPID)
sleep 0.3
ctl_start B --lifetime 3s --reopt 1s --lease-ttl 1000ms
CP[B]=$CPID
wait_for 5 bash -c "[ -n \"\$(redis-cli -h $rhost -p $rport HGET 'ice:$name:{ctl}:published' epoch)\" ]" ||
	ctl_fail "nothing published"
sleep 1.5
leader=$(rcli GET "ice:$name:{ctl}:leader")
[ "$leader" = A ] || [ "$leader" = B ] || ctl_fail "leader is '$leader'"
other=$([ "$leader" = A ] && echo B || echo A)
grep -q '^epoch' "$ICE_TMP/ctl-$other.out" && ctl_fail "the standby $other published while $leader led"
e0=$(rcli HGET "ice:$name:{ctl}:published" epoch)
echo "leader $leader (epoch $e0), standby $other"
kill -STOP "${CP[$leader]}"
t0=$(date +%s%N)
wait_for 4 bash -c "[ \"\$(redis-cli -h $rhost -p $rport HGET 'ice:$name:{ctl}:published' id)\" = $other ]" ||
	ctl_fail "the standby did not publish within 4 s"
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
e1=$(rcli HGET "ice:$name:{ctl}:published" epoch)
echo "failover: $other published epoch $e1 $ms ms after $leader was killed"
[ "$ms" -lt 2000 ] || ctl_fail "failover took $ms ms (goal < 2000)"
[ "$e1" -gt "$e0" ] || ctl_fail "epoch went from $e0 to $e1"
n_old=$(grep -c '^epoch' "$ICE_TMP/ctl-$leader.out")
kill -CONT "${CP[$leader]}"
sleep 1.5
[ "$(grep -c '^epoch' "$ICE_TMP/ctl-$leader.out")" = "$n_old" ] ||
	ctl_fail "the thawed old leader $leader published again"
[ "$(rcli GET "ice:$name:{ctl}:leader")" = "$other" ] || ctl_fail "the lease left $other"
echo "the thawed old leader $leader stood down: $(grep -ci 'lease' "$ICE_TMP/ctl-$leader.log") lease messages, no plan"
{ kill -KILL "${CP[$leader]}"; wait "${CP[$leader]}"; } 2>/dev/null
rcli XRANGE "ice:$name:{ctl}:log" - + | python3 -c '
import sys
lines = [l.strip() for l in sys.stdin]
recs, i = [], 0
while i < len(lines):
    if lines[i] == "epoch":
        recs.append((int(lines[i + 1]), lines[i + 3]))
    i += 1
last, seen, cur = 0, [], None
for e, who in recs:
    assert e > last, "epoch %d after %d" % (e, last)
    last = e
    if who != cur:
        assert who not in seen, "%s published again after another leader" % who
        seen.append(who); cur = who
print("publication log: %d plans, epochs strictly increasing, leaders in turn: %s" % (len(recs), " -> ".join(seen)))
' || ctl_fail "the publication log is not one leader after the other"
for h in h1 h2 h3 h4; do
	e=$(rcli HGET "ice:$name:{$h}:plan:applied" epoch)
	[ "$e" -ge "$e1" ] || ctl_fail "$h applied epoch $e, not $e1"
done

# 1b. a hostile Redis client inflates the epoch floors (a huge last_epoch
#     for h3, the counter near the 64-bit limit): the leader ignores them
#     and numbers its next plan above the real epochs; the agents apply it
rcli HSET "ice:$name:{h3}:plan:applied" last_epoch 9000000000000000000 >/dev/null
rcli SET "ice:$name:{ctl}:epoch" 4611686018427387904 >/dev/null
e2=$(rcli HGET "ice:$name:{ctl}:published" epoch)
wait_for 6 bash -c "[ \"\$(redis-cli -h $rhost -p $rport HGET 'ice:$name:{ctl}:published' epoch)\" != $e2 ]" ||
	ctl_fail "no plan published after the inflated floors"
e3=$(rcli HGET "ice:$name:{ctl}:published" epoch)
echo "inflated floors: next epoch $e3 (was $e2)"
[ "$e3" -gt "$e2" ] && [ "$e3" -lt 281474976710656 ] || ctl_fail "epoch $e2 -> $e3 after the inflated floors"
# (h3's agent writes its real last_epoch back on its next plan, so the
# controller may or may not have read the inflated one: it says so when it did)
echo "controller: $(grep -c 'reports epoch 9000000000000000000.*ignored' "$ICE_TMP/ctl-$other.log") warning(s) on the inflated last_epoch"
wait_for 3 bash -c "[ \"\$(redis-cli -h $rhost -p $rport HGET 'ice:$name:{h1}:plan:applied' epoch)\" -ge $e3 ]" ||
	ctl_fail "h1 did not apply epoch $e3"

# 2. silence: the last plan lives 3 s, then the defaults come back
p1=$(qp_field h1 sport) p2=$(qp_field h2 sport)
{ kill -KILL "${CP[$other]}"; wait "${CP[$other]}"; } 2>/dev/null
t0=$(date +%s%N)
wait_for 6 grep -q 'expired' "$ICE_TMP/agent-h1.log" || ctl_fail "h1's plan did not expire"
t1=$(date +%s%N)
echo "h1's plan expired $(((t1 - t0) / 1000000)) ms after the last controller died (lifetime 3000 ms)"
sleep 0.5
n1=$(qp_field h1 sport) n2=$(qp_field h2 sport)
echo "source ports: h1 $p1 -> $n1 (default $def1), h2 $p2 -> $n2 (default $def2)"
[ "$n1" = "$def1" ] && [ "$n2" = "$def2" ] || ctl_fail "QPs not back on their default ports"
[ "$(rcli HGET "ice:$name:{h1}:plan:applied" state)" = expired ] || ctl_fail "h1 did not write back 'expired'"
read -r s1 s2 <<<"$(spine_split 1)"
echo "after the fallback: leaf1 -> spine1 / spine2: $s1 / $s2 bytes/s"
[ $((s1 + s2)) -gt 3000000 ] || ctl_fail "traffic stopped after the fallback"
for p in "${PERF_PIDS[@]}"; do kill -0 "$p" || ctl_fail "an ice-perf died"; done
perf_stop
echo "PASS"
