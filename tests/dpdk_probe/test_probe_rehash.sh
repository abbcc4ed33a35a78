#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A hash that changes under ICE (issue 17). A BPF-model fabric whose
# switches hash with Toeplitz (a CRC seed change XORs every hash with one
# constant: on two spines all flows swap together and never collide);
# the controller's topology copy has no hash line, so it cannot model the
# switches and takes source ports from ice-probe's maps (--sports probe).
# ice-probe watch on h1 and h2 (responders on h3 and h4, beside ice-perf's
# RoCE engines), two ice-perf flows h1 -> h3 and h2 -> h4 that ECMP puts on
# one spine, which the controller steers apart. Then leaf1 (and leaf2)
# "reboot" with a new seed (`ice-fabric hash`), one chosen so that the
# flows' current ports collide again; checked: the probe republishes the
# map with a new ts_ms, the controller re-plans on it (not at --reopt, 30 s
# away, nor at a plan refresh, 20 s away), and leaf1's uplinks are
# balanced again within BOUND_S (issue's target: 1 s). Prints the time
# from the seed change to re-balanced. Then leaf1:spine2 goes down and up
# with no link record and no switch telemetry (the fabric runs no exporter):
# the controller learns it from the probe's dead paths alone.
. "$(dirname "$0")/../fabric/lib_fabric.sh"
. "$(dirname "$0")/../fabric/lib_fabric_ctl.sh"
ICE_PROBE=${ICE_PROBE:-ice-probe}
ice_need_tool "$ICE_PROBE" jq
IV_MS=250  # ice-probe's report interval: each re-traces 4 ports per path
BOUND_S=5  # asserted; the figure is printed
now_ms() { date +%s%3N; }

CTL_GEN_OPTS=(--hash toeplitz)
CTL_UP_OPTS=(--export-interval 0)
ctl_fabric_up rh model
CTL_TOPO=$ICE_TMP/ctl-topo.yaml
grep -v '^hash:' "$file" >"$CTL_TOPO"
grep -q 'hash: {' "$CTL_TOPO" && ctl_fail "the controller's copy still names a hash"

# responders, then a watch per source host, publishing maps to Redis
for h in h3 h4; do
	"$ICE_FABRIC" exec --fabric "$name" "$h" -- "$ICE_PROBE" responder --src "${IP[$h]}" \
		2>"$ICE_TMP/resp-$h.log" &
	ICE_PIDS+=($!)
done
printf 'pairs:\n  - {src: h1, dst: h3}\n  - {src: h2, dst: h4}\n' >"$ICE_TMP/pl.yaml"
for p in "h1 h3" "h2 h4"; do
	read -r s d <<<"$p"
	"$ICE_FABRIC" exec --fabric "$name" "$s" -- "$ICE_PROBE" watch --json --src "${IP[$s]}" \
		--host "$s" --pinglist "$ICE_TMP/pl.yaml" --redis "$redis" --fabric "$name" \
		--report-interval ${IV_MS}ms --probe-interval 50ms --log info \
		>"$ICE_TMP/watch-$s.out" 2>"$ICE_TMP/watch-$s.log" &
	ICE_PIDS+=($!)
done
map_key() { echo "ice:$name:{$1}:probe:map:${IP[$1]}>${IP[$2]}"; }
map_ts() { rcli HGET "$(map_key "$1" "$2")" ts_ms; }
wait_for 10 bash -c "[ \"\$(redis-cli -h $rhost -p $rport SCARD ice:$name:probe:hosts)\" = 2 ]" ||
	ctl_fail "no probe maps in Redis after 10 s"
for p in "h1 h3" "h2 h4"; do
	read -r s d <<<"$p"
	echo "map $s -> $d: $(rcli HGET "$(map_key "$s" "$d")" json |
		jq -r '[.paths[] | "\(.path) \(.ports | length) ports"] | join(", ")')"
done

collide 45
echo "ECMP: leaf1 -> spine1 / spine2: $s1 / $s2 bytes/s (collision)"
ctl_start A --sports probe --reopt 30s --lifetime 60s --interval 20ms
wait_for 5 grep -q '^epoch ' "$ICE_TMP/ctl-A.out" || ctl_fail "no plan published in 5 s"
balanced() { # D1 D2: each spine >= 30 % of leaf1's uplink bytes
	local tot=$(($1 + $2))
	[ "$tot" -gt 1000000 ] && [ $(($1 * 10)) -ge $((tot * 3)) ] && [ $(($2 * 10)) -ge $((tot * 3)) ]
}
for ((i = 0; i < 10; i++)); do
	read -r s1 s2 <<<"$(spine_split 0.5)"
	balanced "$s1" "$s2" && break
done
balanced "$s1" "$s2" || ctl_fail "ICE did not steer the flows apart: $s1 / $s2"
echo "ICE (probe maps): leaf1 -> spine1 / spine2: $s1 / $s2 bytes/s"

# a seed for leaf1 under which the flows' ports now share a spine (predicted
# with the hash the switches really have; the controller does not know it)
n1=$(qp_field h1 sport) n2=$(qp_field h2 sport)
spine_of() { # TOPO SRC DST SPORT
	"$ICE_TOPO" predict "$1" "$2" "$3" "$4" | awk '{print $3}'
}
seed=
for ((k = 1; k <= 64; k++)); do
	sed "s/^hash: {algorithm: toeplitz, seed: 0x[0-9a-f]*/hash: {algorithm: toeplitz, seed: $k/" \
		"$file" >"$ICE_TMP/seed.yaml"
	a=$(spine_of "$ICE_TMP/seed.yaml" h1 h3 "$n1") b=$(spine_of "$ICE_TMP/seed.yaml" h2 h4 "$n2")
	[ -n "$a" ] && [ "$a" = "$b" ] && seed=$k && break
done
[ -n "$seed" ] || ctl_fail "no seed in 1..64 makes ports $n1 and $n2 collide"
echo "ports h1 $n1, h2 $n2: seed $seed sends both via $a"
ts0_1=$(map_ts h1 h3) ts0_2=$(map_ts h2 h4)
plans0=$(grep -c '^epoch ' "$ICE_TMP/ctl-A.out")

t0=$(now_ms)
"$ICE_FABRIC" hash --fabric "$name" leaf1 --seed "$seed" >/dev/null || ctl_fail "ice-fabric hash leaf1"
"$ICE_FABRIC" hash --fabric "$name" leaf2 --seed $((seed + 1)) >/dev/null || ctl_fail "ice-fabric hash leaf2"
# leaf1's uplinks in windows of about 0.3 s until balanced again
read -r a1 a2 <<<"$(spine_bytes)"
ta=$(now_ms) t_bal= seen_collision=0
while [ $((ta - t0)) -lt $((BOUND_S * 1000 + 3000)) ]; do
	sleep 0.2
	read -r b1 b2 <<<"$(spine_bytes)"
	tb=$(now_ms)
	d1=$((b1 - a1)) d2=$((b2 - a2))
	if balanced "$d1" "$d2"; then
		t_bal=$tb t_win=$ta
		break
	fi
	[ $((d1 + d2)) -gt 0 ] && seen_collision=1
	a1=$b1 a2=$b2 ta=$tb
done
ts1_1=$(map_ts h1 h3) ts1_2=$(map_ts h2 h4)
republished() { # TS_BEFORE TS_AFTER
	if [ "${2:-0}" -gt "$1" ]; then echo "new ts_ms +$(($2 - t0)) ms after the change"; else
		echo "not republished (its known ports kept their paths)"; fi
}
echo "map h1 -> h3: $(republished "$ts0_1" "$ts1_1"); h2 -> h4: $(republished "$ts0_2" "$ts1_2")"
grep -h 'now crosses' "$ICE_TMP"/watch-h*.log | head -4 | sed 's/^/  /'
grep -h 'probe map of .* changed: re-planning\|plan (probe-map' "$ICE_TMP/ctl-A.log" | head -4 |
	sed 's/^/  /'
grep '^reaction: probe map' "$ICE_TMP/ctl-A.out" | tail -2 | sed 's/^/  /'
[ -n "$t_bal" ] || ctl_fail "leaf1's uplinks not balanced $((BOUND_S + 3)) s after the seed change: $d1 / $d2"
applied=0
for h in "${HOSTS[@]}"; do
	a=$(rcli HGET "ice:$name:{$h}:plan:applied" ts_ms)
	[ "${a:-0}" -gt "$applied" ] && applied=$a
done
echo "new plan applied on the hosts +$((applied - t0)) ms after the change"
echo "re-balanced $((t_bal - t0)) ms after ice-fabric hash (the first balanced window of" \
	"leaf1's uplink bytes: +$((t_win - t0))..+$((t_bal - t0)) ms; an unbalanced one before it:" \
	"$([ $seen_collision = 1 ] && echo yes || echo no); bound ${BOUND_S} s, target 1 s)"
[ "${ts1_1:-0}" -gt "$ts0_1" ] || [ "${ts1_2:-0}" -gt "$ts0_2" ] ||
	ctl_fail "no probe map got a new ts_ms"
grep -q 'now crosses' "$ICE_TMP"/watch-h*.log ||
	ctl_fail "no path check saw a port cross another switch"
grep -q 'probe map of .* changed: re-planning' "$ICE_TMP/ctl-A.log" &&
	grep -q 'plan (probe-map' "$ICE_TMP/ctl-A.log" ||
	ctl_fail "the controller did not re-plan on the changed map"
[ "$(grep -c '^epoch ' "$ICE_TMP/ctl-A.out")" -gt "$plans0" ] || ctl_fail "no new plan published"
[ $((t_bal - t0)) -le $((BOUND_S * 1000)) ] ||
	ctl_fail "re-balanced only $((t_bal - t0)) ms after the change (bound ${BOUND_S} s)"
read -r s1 s2 <<<"$(spine_split 1)"
echo "after the seed change: leaf1 -> spine1 / spine2: $s1 / $s2 bytes/s"
balanced "$s1" "$s2" || ctl_fail "leaf1's uplinks not balanced after re-planning: $s1 / $s2"

# a link down that only the probe tells (no link record, no telemetry)
t0=$(now_ms)
"$ICE_FABRIC" link --fabric "$name" --no-record leaf1:spine2 down || ctl_fail "ice-fabric link down"
wait_for 10 grep -q 'link leaf1:spine2 is down (ice-probe' "$ICE_TMP/ctl-A.log" ||
	ctl_fail "the controller did not learn leaf1:spine2 down from the probe in 10 s"
echo "leaf1:spine2 down: the controller took it out of its plans +$(($(now_ms) - t0)) ms (at most) after the change"
grep -h 'dead' "$ICE_TMP"/watch-h*.log | head -2 | sed 's/^/  /'
grep '^reaction: link\|^reaction: probe path' "$ICE_TMP/ctl-A.out" | tail -1 | sed 's/^/  /'
wait_for 3 bash -c "[ \"\$(redis-cli -h $rhost -p $rport HGET 'ice:$name:{ctl}:status' down_links_used)\" = 0 ]" ||
	ctl_fail "the plan uses the down link"
t0=$(now_ms)
"$ICE_FABRIC" link --fabric "$name" --no-record leaf1:spine2 up || ctl_fail "ice-fabric link up"
wait_for 15 grep -q 'link leaf1:spine2 is up (ice-probe' "$ICE_TMP/ctl-A.log" ||
	ctl_fail "the controller did not learn leaf1:spine2 up from the probe in 15 s"
echo "leaf1:spine2 up: back in the plans +$(($(now_ms) - t0)) ms (at most) after the change"
grep -q 'plan refused' "$ICE_TMP"/agent-*.log && ctl_fail "an agent refused a plan"
perf_stop
echo "PASS"
