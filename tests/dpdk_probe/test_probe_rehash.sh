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
# balanced again within BOUND_MS (the issue's target, 1 s), up to 3
# attempts: a clean miss fails, void ones (the VM's host stalled the run,
# ice-env-probe) are tried again, all void skips (77). Prints the time
# from the seed change to re-balanced. h2's watcher makes no path checks of
# its own (--check-share 0): its map must follow h1's rehash notice
# (ice:<F>:probe:rehash, naming leaf1), which it reads every 20 ms; notices
# naming a switch the topology lacks, or none, are counted, logged once and
# ignored. Then leaf1:spine2 goes down and up
# with no link record and no switch telemetry (the fabric runs no exporter):
# the controller learns it from the probe's dead paths alone. Last, Redis
# is killed: both watchers go on probing and reporting.
. "$(dirname "$0")/../fabric/lib_fabric.sh"
. "$(dirname "$0")/../fabric/lib_fabric_ctl.sh"
ICE_PROBE=${ICE_PROBE:-ice-probe}
ice_need_tool "$ICE_PROBE" jq
IV_MS=100 # ice-probe's report interval: each re-traces ports of each path (the budget's)
BOUND_MS=1000 # the issue's target, asserted (void rule: tests/README.md)
now_ms() { date +%s%3N; }

CTL_GEN_OPTS=(--hash toeplitz)
CTL_UP_OPTS=(--export-interval 0)
ctl_fabric_up rh model
CTL_TOPO=$ICE_TMP/ctl-topo.yaml
grep -v '^hash:' "$file" >"$CTL_TOPO"
grep -q 'hash: {' "$CTL_TOPO" && ctl_fail "the controller's copy still names a hash"

declare -A WPID
# responders, then a watch per source host, publishing maps to Redis
for h in h3 h4; do
	"$ICE_FABRIC" exec --fabric "$name" "$h" -- "$ICE_PROBE" responder --src "${IP[$h]}" \
		2>"$ICE_TMP/resp-$h.log" &
	ICE_PIDS+=($!)
done
printf 'pairs:\n  - {src: h1, dst: h3}\n  - {src: h2, dst: h4}\n' >"$ICE_TMP/pl.yaml"
for p in "h1 h3 0.4" "h2 h4 0"; do
	read -r s d share <<<"$p"
	"$ICE_FABRIC" exec --fabric "$name" "$s" -- "$ICE_PROBE" watch --json --src "${IP[$s]}" \
		--host "$s" --pinglist "$ICE_TMP/pl.yaml" --redis "$redis" --fabric "$name" \
		--report-interval ${IV_MS}ms --probe-interval 50ms --log info --check-share "$share" \
		>"$ICE_TMP/watch-$s.out" 2>"$ICE_TMP/watch-$s.log" &
	ICE_PIDS+=($!)
	WPID[$s]=$!
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

collide 75
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

# rehash ATTEMPT: give leaf1 a seed under which the flows' current ports
# share a spine (predicted with the hash the switches really have; the
# controller does not know it), leaf2 another, and time leaf1's uplinks
# back to balanced. Returns 0 within BOUND_MS, 1 past it in a clean run, 3
# past it in a run the VM's host stalled (void: ice-env-probe).
rehash() {
	local n1 n2 seed= k a b ts0_1 ts0_2 ts1_1 ts1_2 plans0 t0 t1 t_bal= t_win=
	local seen_collision=0 applied=0 h void=0
	n1=$(qp_field h1 sport) n2=$(qp_field h2 sport)
	for ((k = 100 * $1 + 1; k <= 100 * $1 + 64; k++)); do
		sed "s/^hash: {algorithm: toeplitz, seed: 0x[0-9a-f]*/hash: {algorithm: toeplitz, seed: $k/" \
			"$file" >"$ICE_TMP/seed.yaml"
		a=$(spine_of "$ICE_TMP/seed.yaml" h1 h3 "$n1") b=$(spine_of "$ICE_TMP/seed.yaml" h2 h4 "$n2")
		[ -n "$a" ] && [ "$a" = "$b" ] && seed=$k && break
	done
	[ -n "$seed" ] || ctl_fail "no seed in $((100 * $1 + 1))..$k makes ports $n1 and $n2 collide"
	echo "attempt $1: ports h1 $n1, h2 $n2: seed $seed sends both via $a"
	ts0_1=$(map_ts h1 h3) ts0_2=$(map_ts h2 h4)
	plans0=$(grep -c '^epoch ' "$ICE_TMP/ctl-A.out")
	: >"$ICE_TMP/watch-mark"
	for h in h1 h2; do wc -l <"$ICE_TMP/watch-$h.log" >>"$ICE_TMP/watch-mark"; done
	sample_start
	ice_env_start 1.0
	sleep 0.3
	t0=$(now_ms)
	"$ICE_FABRIC" hash --fabric "$name" leaf1 --seed "$seed" >/dev/null || ctl_fail "ice-fabric hash leaf1"
	"$ICE_FABRIC" hash --fabric "$name" leaf2 --seed $((seed + 1)) >/dev/null ||
		ctl_fail "ice-fabric hash leaf2"
	t1=$(now_ms)
	# leaf1's uplinks, sampled, until balanced again (checked every 0.5 s)
	while [ $(($(now_ms) - t0)) -lt $((BOUND_MS + 3000)) ]; do
		sleep 0.5
		read -r t_win t_bal <<<"$(balanced_at "$t1")"
		[ "$t_bal" != - ] && break
	done
	ice_env_stop
	sample_stop
	ice_env_void && void=1
	[ "$t_bal" = - ] && t_bal= || { t_win=$((t_win + t1)) t_bal=$((t_bal + t1)); }
	# an unbalanced window first: the seed change did collide the flows
	awk -v t0="$t1" -v te="${t_bal:-0}" -v n=0 '$1 >= t0 && (te == 0 || $1 <= te) { t[n] = $1; a[n] = $2; b[n] = $3; n++ }
		END { for (i = 0; i + 1 < n; i++) for (j = i + 1; j < n; j++) if (t[j] - t[i] >= 40) {
			d1 = a[j] - a[i]; d2 = b[j] - b[i]; s = d1 + d2
			if (s > 10000 && (d1 * 10 < s * 3 || d2 * 10 < s * 3)) exit 0; break }
		exit 1 }' "$ICE_TMP/up.txt" && seen_collision=1
	ts1_1=$(map_ts h1 h3) ts1_2=$(map_ts h2 h4)
	echo "map h1 -> h3: $(republished "$t0" "$ts0_1" "$ts1_1"); h2 -> h4:" \
		"$(republished "$t0" "$ts0_2" "$ts1_2")"
	{
		tail -n +"$(sed -n 1p "$ICE_TMP/watch-mark")" "$ICE_TMP/watch-h1.log"
		tail -n +"$(sed -n 2p "$ICE_TMP/watch-mark")" "$ICE_TMP/watch-h2.log"
	} | grep 'now crosses\|cross it' | head -4 | sed 's/^/  /'
	grep '^reaction: probe map' "$ICE_TMP/ctl-A.out" | tail -1 | sed 's/^/  /'
	[ "${ts1_1:-0}" -gt "$ts0_1" ] || [ "${ts1_2:-0}" -gt "$ts0_2" ] ||
		ctl_fail "no probe map got a new ts_ms"
	# h2 checks nothing itself: only h1's notice can have remapped it
	tail -n +"$(sed -n 2p "$ICE_TMP/watch-mark")" "$ICE_TMP/watch-h2.log" |
		grep -q 'notice from h1: switch leaf1 rehashed' ||
		ctl_fail "h2 did not act on a rehash notice from h1 naming leaf1"
	[ "${ts1_2:-0}" -gt "$ts0_2" ] || ctl_fail "h2's map (no checks of its own) not remapped"
	[ "$(grep -c '^epoch ' "$ICE_TMP/ctl-A.out")" -gt "$plans0" ] || ctl_fail "no new plan published"
	for h in "${HOSTS[@]}"; do
		a=$(rcli HGET "ice:$name:{$h}:plan:applied" ts_ms)
		[ "${a:-0}" -gt "$applied" ] && applied=$a
	done
	echo "new plan applied on the hosts +$((applied - t0)) ms after the change"
	if [ -z "$t_bal" ]; then
		echo "attempt $1: leaf1's uplinks not balanced $((BOUND_MS / 1000 + 3)) s after the seed" \
			"change; $ICE_ENV_TXT$([ $void = 1 ] && echo '; VOID')"
		[ $void = 1 ] && return 3
		return 1
	fi
	echo "attempt $1: re-balanced $((t_bal - t0)) ms after ice-fabric hash (the first balanced" \
		">= 200 ms window of leaf1's uplink bytes: +$((t_win - t0))..+$((t_bal - t0)) ms; the" \
		"seed changes took $((t1 - t0)) ms; a collided >= 40 ms window up to then:" \
		"$([ $seen_collision = 1 ] && echo yes || echo no); target ${BOUND_MS} ms);" \
		"$ICE_ENV_TXT$([ $void = 1 ] && echo '; VOID')"
	[ $((t_bal - t0)) -le "$BOUND_MS" ] && return 0
	[ $void = 1 ] && return 3
	return 1
}
# leaf1's uplink ports (their kernel byte counters are read by the sampler)
read -r UP1 UP2 <<<"$("$ICE_FABRIC" stats "$name" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
p = {x["to"]: x["port"] for x in d["ports"] if x["switch"] == "leaf1"}
print(p["spine1"], p["spine2"])')"
# sample_start: "MS B1 B2" lines into $ICE_TMP/up.txt every ~20 ms (B: tx
# bytes leaf1 -> spine1/2; a sample costs one cat, not an ice-fabric call,
# so a loaded box still resolves the re-balance to tens of ms)
sample_start() {
	: >"$ICE_TMP/up.txt"
	ip netns exec "ice$name-leaf1" bash -c "while :; do
		read -r b1 <'/sys/class/net/$UP1/statistics/tx_bytes'
		read -r b2 <'/sys/class/net/$UP2/statistics/tx_bytes'
		echo \"\$(date +%s%3N) \$b1 \$b2\"; sleep 0.02; done" >>"$ICE_TMP/up.txt" &
	SAMPLER=$!
	ICE_PIDS+=($SAMPLER)
}
sample_stop() { kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null; }
# balanced_at T0: "TW TB": the first window of >= 200 ms after T0 in which
# each spine carried >= 30 % of leaf1's uplink bytes (TW..TB, ms after T0);
# "- -" when none
balanced_at() {
	awk -v t0="$1" -v n=0 '$1 >= t0 { t[n] = $1; a[n] = $2; b[n] = $3; n++ }
	END {
		for (i = 0; i < n; i++)
			for (j = i + 1; j < n; j++)
				if (t[j] - t[i] >= 200) {
					d1 = a[j] - a[i]; d2 = b[j] - b[i]; s = d1 + d2
					if (s > 100000 && d1 * 10 >= s * 3 && d2 * 10 >= s * 3) {
						print t[i] - t0, t[j] - t0; exit
					}
					break
				}
		print "- -"
	}' "$ICE_TMP/up.txt"
}
spine_of() { # TOPO SRC DST SPORT
	"$ICE_TOPO" predict "$1" "$2" "$3" "$4" | awk '{print $3}'
}
republished() { # T0 TS_BEFORE TS_AFTER
	if [ "${3:-0}" -gt "$2" ]; then echo "new ts_ms +$(($3 - $1)) ms after the change"; else
		echo "not republished (its known ports kept their paths)"; fi
}

# up to 3 attempts: a clean run past the bound fails; void runs are tried
# again; all void: skipped (77), the time measured the VM's host
clean_miss=0 passed=0
for attempt in 1 2 3; do
	rc=0
	rehash "$attempt" || rc=$?
	[ $rc = 0 ] && passed=1 && break
	[ $rc = 1 ] && clean_miss=1 && break
	# a void miss: the flows apart again before the next attempt
	for ((i = 0; i < 10; i++)); do
		read -r s1 s2 <<<"$(spine_split 0.5)"
		balanced "$s1" "$s2" && break
	done
done
grep -q 'now crosses' "$ICE_TMP"/watch-h*.log ||
	ctl_fail "no path check saw a port cross another switch"
grep -q 'probe map of .* changed: re-planning' "$ICE_TMP/ctl-A.log" &&
	grep -q 'plan (probe-map' "$ICE_TMP/ctl-A.log" ||
	ctl_fail "the controller did not re-plan on the changed map"
[ $clean_miss = 1 ] && ctl_fail "leaf1's uplinks not re-balanced within ${BOUND_MS} ms of the" \
	"seed change in a run the host left alone"
if [ $passed = 0 ]; then
	perf_stop
	ice_skip "every rehash attempt was void (the VM's host stalled it): the recovery time" \
		"cannot be judged here"
fi
read -r s1 s2 <<<"$(spine_split 1)"
echo "after the seed change: leaf1 -> spine1 / spine2: $s1 / $s2 bytes/s"
balanced "$s1" "$s2" || ctl_fail "leaf1's uplinks not balanced after re-planning: $s1 / $s2"

# bad notices: a switch the topology lacks (twice), a host's name, none at
# all, a time that is no number, one a day ahead (it would hold off leaf1's
# real notices): counted, logged once, no remap
ts0_1=$(map_ts h1 h3)
NK="ice:$name:probe:rehash"
for sw in leaf9 leaf9 h3; do
	rcli XADD "$NK" '*' host hX switch "$sw" ts_ms "$(now_ms)" >/dev/null
done
rcli XADD "$NK" '*' host hX ts_ms "$(now_ms)" >/dev/null
rcli XADD "$NK" '*' host hX switch leaf1 ts_ms soon >/dev/null
rcli XADD "$NK" '*' host hX switch leaf1 ts_ms $(($(now_ms) + 86400000)) >/dev/null
sleep 0.5
for h in h1 h2; do
	[ "$(grep -c "names switch 'leaf9'" "$ICE_TMP/watch-$h.log")" = 1 ] ||
		ctl_fail "$h: the unknown switch's notices not logged exactly once"
	grep -q "names switch 'h3'" "$ICE_TMP/watch-$h.log" &&
		ctl_fail "$h: logged the unknown-switch notices more than once"
	[ "$(grep -c 'without a switch or a time' "$ICE_TMP/watch-$h.log")" = 1 ] ||
		ctl_fail "$h: the malformed notices not logged exactly once"
done
[ "$(map_ts h1 h3)" = "$ts0_1" ] || ctl_fail "a bad notice remapped h1"
echo "bad rehash notices: ignored, logged once each kind"

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

# Redis dies: the watchers keep probing and reporting (records on stdout)
rpid=$(cat "/run/ice/$name/redis.pid")
kill "$rpid" || ctl_fail "cannot stop redis-server (pid $rpid)"
for ((i = 0; i < 50; i++)); do kill -0 "$rpid" 2>/dev/null || break; sleep 0.1; done
n1=$(wc -l <"$ICE_TMP/watch-h1.out") n2=$(wc -l <"$ICE_TMP/watch-h2.out")
sleep 1.5
for h in h1 h2; do
	kill -0 "${WPID[$h]}" 2>/dev/null ||
		ctl_fail "$h's watcher exited with Redis down"
done
m1=$(($(wc -l <"$ICE_TMP/watch-h1.out") - n1)) m2=$(($(wc -l <"$ICE_TMP/watch-h2.out") - n2))
[ "$m1" -ge 5 ] && [ "$m2" -ge 5 ] ||
	ctl_fail "watchers stalled with Redis down: $m1 / $m2 records in 1.5 s (${IV_MS} ms interval)"
echo "Redis down: the watchers wrote $m1 / $m2 health records in 1.5 s"
redis-server --port "$rport" --bind "$rhost" --protected-mode no --daemonize yes \
	--pidfile "/run/ice/$name/redis.pid" --dir "/run/ice/$name" --save '' --appendonly no \
	>/dev/null || ctl_fail "cannot restart redis-server"
echo "PASS"
