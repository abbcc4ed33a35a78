#!/usr/bin/env bash
# icectl and the controller's operator surface against a real redis-server
# and a real ice-controller (no namespaces, no root):
#   - bad input: an unreachable Redis, and one without the fabric's keys:
#     one line, exit 2; a bad command line: exit 2;
#   - four hosts' agent keys seeded as ice-agent writes them (their writer
#     is tested in tests/host_agent/), one QP each across the spines; the
#     controller plans and publishes; two agents' write-backs seeded;
#   - status, links, qps, plan show|history, explain: the tables and the
#     --json documents (parsed, fields checked against Redis);
#   - policy validate (file:line error, exit 1), apply (versioned, taken by
#     the running controller without a restart: its log, ctl:status, the
#     QPs' profiles), diff, history, a bad version written behind icectl's
#     back refused by the controller with the old one kept, rollback;
#   - the controller's /metrics scraped and parsed (check_prom_text.py):
#     plan epoch, planner time, reaction histogram, refusals, per-link
#     utilisation.
# Needs redis-server, redis-cli, curl and python3; exits 77 without.
set -euo pipefail

ICECTL=${ICECTL:?path of icectl}
ICE_CONTROLLER=${ICE_CONTROLLER:?path of ice-controller}
ICE_TOPO=${ICE_TOPO:?path of ice-topo}
SRC=${ICE_SRC:?source root}
here=$(cd "$(dirname "$0")" && pwd)

. "$(dirname "$0")/lib_icectl.sh"
icectl_test icectl "ctl_pid seeder redis_pid" redis-server redis-cli curl python3

F=icetc
rc() { redis-cli -s "$S" "$@"; }
ictl() { "$ICECTL" --redis "unix:$S" --fabric "$F" "$@"; }
# checks on a JSON document: py 'EXPR' < json (EXPR sees d; exit 1 when false)
py() { python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if ($1) else 1)"; }

# ---- bad input
set +e
out=$("$ICECTL" status --redis "unix:$tmp/none.sock" 2>&1)
code=$?
set -e
[ "$code" = 2 ] || fail "unreachable Redis: exit $code, expected 2 ($out)"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "unreachable Redis: more than one line: $out"
grep -q "cannot reach Redis at unix:$tmp/none.sock" <<<"$out" || fail "unreachable: $out"

redis_start
wait_for 10 rc ping >/dev/null 2>&1 || fail "redis-server did not start"

for cmd in status links qps "plan show" "policy history"; do
	set +e
	# shellcheck disable=SC2086
	out=$(ictl $cmd 2>&1)
	code=$?
	set -e
	[ "$code" = 2 ] || fail "$cmd on a Redis without ICE keys: exit $code, expected 2"
	[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "$cmd: more than one line: $out"
	grep -q "has no keys of fabric '$F'" <<<"$out" || fail "$cmd: $out"
done
set +e
ictl frobnicate >/dev/null 2>&1
code=$?
set -e
[ "$code" = 2 ] || fail "unknown command: exit $code, expected 2"
echo "ok: unreachable Redis, Redis without ICE keys, bad command: one line, exit 2"

# ---- the fabric: agents seeded, a real controller
"$ICE_TOPO" gen leaf-spine --name "$F" --hosts-per-leaf 2 --rate 100mbit --ecmp model \
	-o "$tmp/topo.yaml"
declare -A IP=([h1]=10.1.0.1 [h2]=10.1.0.3 [h3]=10.2.0.1 [h4]=10.2.0.3)
declare -A PEER=([h1]=h3 [h2]=h4 [h3]=h1 [h4]=h2)
HOSTS=(h1 h2 h3 h4)
seed() { # the agents' interval: host, NIC, QP records
	local now h i=0 ip qpn
	now=$(($(date +%s%N) / 1000000))
	for h in "${HOSTS[@]}"; do
		i=$((i + 1)) ip=${IP[$h]} qpn=$((16 + i))
		rc >/dev/null <<R
SET ice:$F:schema 1
SADD ice:$F:hosts $h
HSET ice:$F:{$h}:host host $h schema 1 last_ms $now
SADD ice:$F:{$h}:nics eth0
HSET ice:$F:{$h}:nic:eth0:agent nic eth0 addr $ip pid 4$i version 0.1.0 schema 1 interval_ms 250 state online
SET ice:$F:{$h}:nic:eth0:alive '{"pid":4$i,"ts_ms":$now,"seq":7,"addr":"$ip"}' PX 3000
HSET ice:$F:{$h}:nic:eth0 nic eth0 addr $ip seq 7 ts_ms $now qps 1
ZADD ice:$F:{$h}:qps $now $ip:$qpn
HSET ice:$F:{$h}:qp:$ip:$qpn id $ip:$qpn kind qp local $ip remote ${IP[${PEER[$h]}]} qpn $qpn rqpn $((32 + i)) sport 49999 ts_ms $now seq 7 rate '{"tx_bytes":9000000,"cnp_rx":0,"retx":0}'
R
	done
}
seed
(while sleep 0.25; do seed; done) &
seeder=$!

"$ICECTL" keygen --out "$tmp" --name plan >"$tmp/keygen.out" || fail "icectl keygen"
mport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$ICE_CONTROLLER" --fabric "$F" --topology "$tmp/topo.yaml" --redis "unix:$S" \
	--key "$tmp/plan.key" --id ictl-a --metrics "127.0.0.1:$mport" --reopt 2s \
	>"$tmp/ctl.out" 2>"$tmp/ctl.log" &
ctl_pid=$!
wait_for 10 grep -q "^epoch" "$tmp/ctl.out" || fail "the controller published nothing"
epoch=$(rc HGET "ice:$F:{ctl}:published" epoch)
# two agents wrote back the epoch they applied, two did not
for h in h1 h2; do
	rc HSET "ice:$F:{$h}:plan:applied" epoch "$epoch" ts_ms "$(($(date +%s%N) / 1000000))" \
		state applied >/dev/null
done
wait_for 5 sh -c "[ -n \"\$(redis-cli -s $S HGET ice:$F:ctl:members ictl-a)\" ]" ||
	fail "the controller is not in ctl:members"

# ---- status
wait_for 5 sh -c "[ -n \"\$(redis-cli -s $S HGET ice:$F:{ctl}:status lease_squats)\" ]" ||
	fail "the controller wrote no status"
ictl status >"$tmp/status.out" || fail "status: exit $?"
grep -Eq "^guards: bad QP records [0-9]+, foreign [0-9]+, capped host reads [0-9]+, leader-key squats taken back 0;.* PFC: lossless priorities [-0-9,]+, [0-9]+ NICs, [0-9]+ storms" \
	"$tmp/status.out" || fail "status: no guards line"
grep -q "leader ictl-a" "$tmp/status.out" || fail "status: no leader line"
grep -Eq "^  ictl-a +leader" "$tmp/status.out" || fail "status: controller row"
grep -Eq "^  h4 +eth0 +online +250 ms" "$tmp/status.out" || fail "status: agent row"
grep -q "host h3: applied epoch 0" "$tmp/status.out" || fail "status: h3 not said stale"
ictl --json status >"$tmp/status.json"
py "d['leader']['id'] == 'ictl-a' and len(d['agents']) == 4 and d['schema'] == '1'" \
	<"$tmp/status.json" || fail "status --json: leader, agents"
py "[p['in_force'] for p in sorted(d['plans'], key=lambda p: p['host'])] == [True, True, False, False]" \
	<"$tmp/status.json" || fail "status --json: plans in force"
py "any('h3' in s for s in d['stale']) and d['controllers'][0]['role'] == 'leader'" \
	<"$tmp/status.json" || fail "status --json: stale, role"
echo "ok: status (leader, agents, epochs published vs applied, stale hosts, guards)"

# ---- links: every directed link of the topology, with the switch's record
rc HSET "ice:$F:sw:{leaf1}:port:spine1" switch leaf1 port spine1 peer spine1 seq 5 \
	oper-status UP out-discards 3 ecn-marked-pkts 42 >/dev/null
rc SADD "ice:$F:sw:ports" leaf1:spine1 >/dev/null
wait_for 5 sh -c "redis-cli -s $S EXISTS ice:$F:ctl:link:leaf1:spine1 | grep -q 1" ||
	fail "no ctl:link keys"
ictl --json links >"$tmp/links.json"
py "len(d['links']) == 16 and {l['dir'] for l in d['links']} == {'up', 'down'}" \
	<"$tmp/links.json" || fail "links --json: 8 links x 2 directions"
py "[l for l in d['links'] if l['from'] == 'leaf1' and l['to'] == 'spine1'][0]['switch']['ecn-marked-pkts'] == '42'" \
	<"$tmp/links.json" || fail "links --json: the switch record of leaf1>spine1"
py "sum(l['planned'] for l in d['links'] if l['link'].startswith('h1:')) > 0" \
	<"$tmp/links.json" || fail "links --json: planned load on h1's link"
ictl links >"$tmp/links.out"
grep -Eq "^  leaf1>spine1 .* UP +3 +42$" "$tmp/links.out" || fail "links: leaf1>spine1 row"
timeout 2.5 "$ICECTL" links --watch --interval 1s --redis "unix:$S" --fabric "$F" \
	>"$tmp/watch.out" || true
[ "$(grep -c 'per directed link' "$tmp/watch.out")" -ge 2 ] || fail "links --watch: no refresh"
echo "ok: links (16 directed links, planned load, switch record joined, --watch refreshes)"

# ---- qps, plan, explain
ictl --json qps >"$tmp/qps.json"
py "len(d['qps']) == 4 and all(q['planned'] and q['route'].count('>') == 2 for q in d['qps'])" \
	<"$tmp/qps.json" || fail "qps --json: 4 planned QPs with routes"
sport=$(python3 -c 'import json,sys; print([q for q in json.load(sys.stdin)["qps"] if q["id"]=="10.1.0.1:17"][0]["sport_planned"])' <"$tmp/qps.json")
planned=$(rc GET "ice:$F:{h1}:plan" | python3 -c 'import json,sys; print(json.load(sys.stdin)["plan"]["entries"][0]["sport"])')
[ "$sport" = "$planned" ] || fail "qps: h1's planned port $sport, the plan says $planned"
ictl --json qps --host h2 | py "[q['host'] for q in d['qps']] == ['h2']" || fail "qps --host"
ictl qps >"$tmp/qps.out"
grep -Eq "^  h1 +10\.1\.0\.1:17 +leaf1>spine[12]>leaf2 +$sport " "$tmp/qps.out" || fail "qps: h1 row"
ictl plan show h1 >"$tmp/plan.out"
grep -q "^h1: epoch [0-9]* issued .*, key $(sed -n 's/^key id //p' "$tmp/keygen.out"); applied" "$tmp/plan.out" ||
	fail "plan show h1 (with the key id that signed it)"
ictl --json plan history | py "len(d['publications']) >= 1" || fail "plan history"
set +e
ictl plan show h9 >/dev/null 2>&1
code=$?
set -e
[ "$code" = 1 ] || fail "plan show of an unknown host: exit $code, expected 1"
ictl explain 10.1.0.1:17 >"$tmp/explain.out"
grep -q "plan: epoch [0-9]*: source port $sport, route leaf1>spine" "$tmp/explain.out" ||
	fail "explain: plan line"
grep -q "its demand is measured, 72.0 Mbit/s" "$tmp/explain.out" || fail "explain: demand"
set +e
ictl explain 10.9.9.9:1 >/dev/null 2>&1
code=$?
set -e
[ "$code" = 1 ] || fail "explain of an unknown QP: exit $code, expected 1"
echo "ok: qps (--host), plan show|history, explain"

# ---- policies
set +e
out=$(ictl policy validate "$SRC/tests/controller/bad_rule_op.yaml" 2>&1)
code=$?
set -e
[ "$code" = 1 ] || fail "validate of a bad policy: exit $code"
grep -q "bad_rule_op.yaml:4:10: key 'rules\[0\].op'" <<<"$out" || fail "validate: $out"
ictl policy validate "$SRC/controller/policy.example.yaml" | grep -q "valid: 5 profiles" ||
	fail "validate of the example"
set +e
ictl policy apply "$SRC/tests/controller/bad_rule_op.yaml" >/dev/null 2>&1
code=$?
set -e
[ "$code" = 1 ] || fail "apply of a bad policy: exit $code"
[ -z "$(rc GET "ice:$F:policy:current")" ] || fail "a bad policy was written"
ictl policy apply "$SRC/controller/policy.example.yaml" >"$tmp/apply.out" ||
	fail "apply: exit $? ($(cat "$tmp/apply.out"))"
grep -q "policy v1 applied: in force on the leader" "$tmp/apply.out" || fail "apply: $(cat "$tmp/apply.out")"
grep -q "policy v1 in force: 5 profiles" "$tmp/ctl.log" || fail "the controller did not log v1"
[ "$(rc HGET "ice:$F:{ctl}:status" policy_version)" = 1 ] || fail "ctl:status policy_version"
wait_for 5 sh -c "$ICECTL qps --json --redis unix:$S --fabric $F | grep -q testbed-100m" ||
	fail "the QPs did not get the policy's profile"
ictl qps | grep -Eq "^  h1 .* testbed-100m +default " || fail "qps: profile and rule columns"
sed -e 's/rp_ai_rate: 2$/rp_ai_rate: 3/' -e "s|^baseline: ../|baseline: $SRC/|" \
	"$SRC/controller/policy.example.yaml" >"$tmp/p2.yaml"
ictl policy diff "$tmp/p2.yaml" >"$tmp/diff.out"
[ "$(cat "$tmp/diff.out")" = "profile testbed-200m: rp_ai_rate 2 -> 3" ] ||
	fail "diff: $(cat "$tmp/diff.out")"
ictl policy apply "$tmp/p2.yaml" | grep -q "policy v2 applied: in force" || fail "apply v2"
ictl policy diff 1 2 | grep -q "rp_ai_rate 2 -> 3" || fail "diff 1 2"
# a version written behind icectl's back, whose baseline the controller cannot read
rc HSET "ice:$F:policy:3" yaml "$(printf 'baseline: /nonexistent/ice-x.yaml\nprofiles: {a: {}}\ndefault: a\n')" \
	dir /tmp source hostile >/dev/null
rc SET "ice:$F:policy:current" 3 >/dev/null
wait_for 5 sh -c "[ \"\$(redis-cli -s $S HGET ice:$F:{ctl}:status policy_refused)\" = 3 ]" ||
	fail "the controller did not refuse v3"
[ "$(rc HGET "ice:$F:{ctl}:status" policy_version)" = 2 ] || fail "the old policy did not stay"
grep -q "applied policy v3 refused, keeping the one in force: policy v3 (hostile):1:11: key 'baseline'" \
	"$tmp/ctl.log" || fail "the refusal is not logged with file:line"
ictl status | grep -q "refused: policy v3 (hostile):1:11" || fail "status does not show the refusal"
ictl policy rollback | grep -q "policy v2 rolled back to: in force" || fail "rollback"
ictl policy rollback 1 | grep -q "policy v1 rolled back to: in force" || fail "rollback 1"
[ "$(rc HGET "ice:$F:{ctl}:status" policy_version)" = 1 ] || fail "rollback 1 not in force"
ictl --json policy history >"$tmp/hist.json"
py "d['current'] == 1 and [h['action'] for h in d['history']] == ['rollback', 'rollback', 'apply', 'apply']" \
	<"$tmp/hist.json" || fail "history: $(cat "$tmp/hist.json")"
kill -0 "$ctl_pid" || fail "the controller died"
echo "ok: policy validate (file:line, exit 1), apply taken live, diff, refusal of a bad version (old kept), rollback, history"

# ---- an announced collective: its job, the policy rule that chose the profile
ts=$(date +%s%N)
for r in 0 1; do
	h=$([ $r = 0 ] && echo h1 || echo h3)
	rc XADD "ice:$F:{$h}:events" '*' nic eth0 json "{\"kind\":\"coll_start\",\"lib\":\"nccl\",\"pid\":7,\"seq\":1,\"ts_ns\":$ts,\"comm\":\"00000000000000ab\",\"rank\":$r,\"nranks\":2,\"op\":\"allreduce\",\"count\":1048576,\"bytes\":4194304,\"next\":$((1 - r)),\"prev\":$((1 - r)),\"peer\":-1,\"job\":\"jobA\"}" >/dev/null
done
wait_for 5 sh -c "$ICECTL qps --json --job jobA --redis unix:$S --fabric $F | grep -q announced" ||
	fail "the collective's QPs are not announced"
ictl --json qps --job jobA >"$tmp/job.json"
# the line of rules[1] (the all_reduce rule) in the example policy
r1=$(awk '/^rules:/ { r = 1; next } r && /^  - / { if (n++ == 1) { print NR; exit } }' \
	"$SRC/controller/policy.example.yaml")
py "sorted(q['id'] for q in d['qps']) == ['10.1.0.1:17', '10.2.0.1:19'] and all(q['demand'] == 'announced' and q['op'] == 'all_reduce' and q['policy_rule'] == 'rules[1] line $r1' and q['target_mbps'] > 0 for q in d['qps'])" \
	<"$tmp/job.json" || fail "qps --job jobA: $(cat "$tmp/job.json")"
ictl explain 10.1.0.1:17 >"$tmp/explain2.out"
grep -q "(all_reduce of communicator 00000000000000ab, job jobA, 4194304-byte messages)" \
	"$tmp/explain2.out" || fail "explain: the collective ($(cat "$tmp/explain2.out"))"
grep -q "DCQCN: profile testbed-100m, by rules\[1\] line $r1 of the applied policy" \
	"$tmp/explain2.out" || fail "explain: the rule ($(cat "$tmp/explain2.out"))"
echo "ok: an announced collective: qps --job, explain names the collective, job and policy rule"

# ---- dry-run: the plans p2.yaml would give, against the live view, nothing published
pub=$(rc HGET "ice:$F:{ctl}:published" epoch)
ictl --json policy dry-run "$tmp/p2.yaml" >"$tmp/dry.json" || fail "dry-run: exit $?"
py "len(d['plans']) == 4 and len(d['changes']) == 4 and d['max_util'] > 0" <"$tmp/dry.json" ||
	fail "dry-run --json: $(head -c 400 "$tmp/dry.json")"
ictl policy dry-run "$tmp/p2.yaml" >"$tmp/dry.out"
grep -q "^dry run of $tmp/p2.yaml on the live view ($tmp/topo.yaml)" "$tmp/dry.out" ||
	fail "dry-run: $(cat "$tmp/dry.out")"
[ "$(rc HGET "ice:$F:{ctl}:status" policy_version)" = 1 ] || fail "dry-run changed the policy"
[ -z "$(rc HGET "ice:$F:ctl:members" icectl-dry-run)" ] || fail "the dry run registered"
rc XRANGE "ice:$F:{ctl}:log" - + | grep -q icectl-dry-run && fail "the dry run published"
# a policy whose profile for all_reduce differs: the announced QPs' DCQCN changes
sed -e 's/^  - {op: all_reduce, min_bytes: 1M, profile: testbed-100m}/  - {op: all_reduce, min_bytes: 1M, profile: testbed-200m}/' \
	-e "s|^baseline: ../|baseline: $SRC/|" "$SRC/controller/policy.example.yaml" >"$tmp/p4.yaml"
ictl --json policy dry-run "$tmp/p4.yaml" >"$tmp/dry4.json"
py "[c['qpn'] for c in d['changes'] if 'rp_ai_rate 1 -> 2' in c['dcqcn_changes']] == [17, 19]" \
	<"$tmp/dry4.json" || fail "dry-run of p4: $(python3 -c 'import json,sys; print(json.load(sys.stdin)["changes"])' <"$tmp/dry4.json")"
echo "ok: policy dry-run (the controller's planning step on the live view; the announced QPs' DCQCN changes shown; nothing published)"

# ---- /metrics
e1=$(rc HGET "ice:$F:{ctl}:published" epoch)
curl -sf "http://127.0.0.1:$mport/metrics" >"$tmp/metrics.txt" || fail "scrape failed"
e2=$(rc HGET "ice:$F:{ctl}:published" epoch)
em=$(awk '$1 == "ice_controller_plan_epoch" {print $2}' "$tmp/metrics.txt")
[ -n "$em" ] && [ "$em" -ge "$e1" ] && [ "$em" -le "$e2" ] ||
	fail "ice_controller_plan_epoch $em, Redis says $e1..$e2"
python3 "$here/check_prom_text.py" "$tmp/metrics.txt" \
	--need ice_controller_leader=1 \
	--need ice_controller_plan_duration_seconds_count \
	--need 'ice_controller_reaction_seconds_bucket{le="+Inf"}' \
	--need 'ice_controller_refusals_total{what="policy"}=1' \
	--need ice_controller_qps_planned=4 \
	--need ice_controller_policy_version=1 \
	--need 'ice_controller_link_planned_utilization_ratio{link="h1:leaf1",dir="up"}' ||
	fail "metrics: $(head -c 600 "$tmp/metrics.txt")"
u=$(awk '$1 == "ice_controller_link_planned_utilization_ratio{link=\"h1:leaf1\",dir=\"up\"}" {print $2}' "$tmp/metrics.txt")
python3 -c "import sys; sys.exit(0 if 0 < $u <= 1 else 1)" || fail "h1's link planned at $u"
n=$(grep -c '^ice_controller_link_planned_utilization_ratio{' "$tmp/metrics.txt")
[ "$n" = 16 ] || fail "per-link series: $n, expected 16 (8 links x 2 directions)"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/nothing")" = 404 ] ||
	fail "GET /nothing is not a 404"
echo "ok: /metrics parses, names and values as expected, 16 per-link series"
echo "PASS"
