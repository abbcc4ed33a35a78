# SPDX-License-Identifier: Apache-2.0
# Shared by the controller tests (test_fabric_ctl*.sh): a leaf-spine fabric
# with 2 hosts per leaf and Redis, an Ed25519 plan key pair (icectl keygen:
# the controller signs with plan.key, the agents hold plan.pub), an ice-agent per host that
# applies plans, ice-perf pairs, and helpers. Sourced after lib_fabric.sh.
ice_need_tool redis-cli
BUILD=$(cd "$(dirname "$ICE_FABRIC")/.." && pwd)
ICE_AGENT=${ICE_AGENT:-$BUILD/host_agent/ice-agent}
ICE_PERF=${ICE_PERF:-$BUILD/transport/ice-perf}
ICE_CONTROLLER=${ICE_CONTROLLER:-$BUILD/controller/ice-controller}
ice_need_tool "$ICE_AGENT" "$ICE_PERF" "$ICE_CONTROLLER"

HOSTS=(h1 h2 h3 h4)
declare -A IP APID

ctl_cleanup() {
	[ -n "${CTL_CLUSTER_DIR:-}" ] && "$ICE_REDIS_CLUSTER" stop "$CTL_CLUSTER_DIR"
	ice_fab_cleanup
	local h
	for h in "${HOSTS[@]}"; do
		[ -n "${IP[$h]:-}" ] && [ -e "/dev/shm/ice-ctrl-${IP[$h]}" ] &&
			! fuser -s "/dev/shm/ice-ctrl-${IP[$h]}" 2>/dev/null &&
			rm -f "/dev/shm/ice-ctrl-${IP[$h]}"
	done
}
trap ctl_cleanup EXIT

# ctl_fabric_up PREFIX [ECMP]: fabric ice<PREFIX><sfx> (ECMP: model, the
# default, or kernel; more ice-topo gen options in CTL_GEN_OPTS), Redis,
# key, agents. CTL_CLUSTER=1: the daemons use a Redis Cluster of 3
# primaries and 3 replicas on the management bridge instead
# (tools/ice-redis-cluster; $redis is its cluster: address list, rcli
# follows redirections, $cport the first node's port). With --redis-acl in
# CTL_UP_OPTS the fabric's Redis has users: $ACL is their directory, the
# agents speak as their hosts (ice-fabric exec), ctl_start and rcli as
# ice-controller, rcli_as USER as another.
ICE_REDIS_CLUSTER=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/tools/ice-redis-cluster
CTL_GEN_OPTS=()
CTL_UP_OPTS=() # more ice-fabric up options
ctl_fabric_up() {
	name=$1$ICE_SFX
	port=$((21000 + ICE_SFX))
	file=$(ice_fab_gen "$name" --hosts-per-leaf 2 --rate 100mbit --mtu 9000 --ecmp "${2:-model}" \
		"${CTL_GEN_OPTS[@]}")
	local h i=0
	for h in "${HOSTS[@]}"; do
		IP[$h]=$(awk -v n="$h" '$0 ~ "name: " n "$" {f=1} f && /addr:/ {sub(/.*addr: /,""); sub(/\/.*/,""); print; exit}' "$file")
		[ -n "${IP[$h]}" ] || ice_fail "no address for $h in $file"
	done
	ice_fab_up "$file" --redis "$port" "${CTL_UP_OPTS[@]}" >/dev/null || ice_fail "ice-fabric up failed"
	redis=$("$ICE_FABRIC" exec --fabric "$name" h1 -- sh -c 'echo $ICE_REDIS')
	rhost=${redis%:*} rport=${redis#*:}
	ACL=
	[[ " ${CTL_UP_OPTS[*]} " == *" --redis-acl "* ]] && ACL=/run/ice/$name/acl
	if [ "${CTL_CLUSTER:-0}" = 1 ]; then
		# below 32768 (Linux's ephemeral ports); a node's bus port is +10000
		cport=$((20000 + (ICE_SFX % 1500) * 8))
		CTL_CLUSTER_DIR=$ICE_TMP/ice-cluster
		redis=$("$ICE_REDIS_CLUSTER" start "$CTL_CLUSTER_DIR" "$rhost" "$cport" 3 1 1000) ||
			ctl_fail "no Redis Cluster"
		rport=$cport
		echo "redis cluster: $redis"
	fi
	# the controller signs with KEY (Ed25519, private), the agents verify
	# with PUB (its public key) only
	"$ICECTL" keygen --out "$ICE_TMP" --name plan >/dev/null || ctl_fail "icectl keygen"
	KEY=$ICE_TMP/plan.key
	PUB=$ICE_TMP/plan.pub
	for h in "${HOSTS[@]}"; do
		mkdir -p "$ICE_TMP/$h"
		"$ICE_FABRIC" exec --fabric "$name" "$h" -- "$ICE_AGENT" --nic eth0 --fabric "$name" \
			--host "$h" --redis "$redis" --interval 250ms --no-bpf --run-dir "$ICE_TMP/$h" \
			--plan-pubkeys "$PUB" >"$ICE_TMP/agent-$h.log" 2>&1 &
		APID[$h]=$!
		ICE_PIDS+=($!)
	done
	for ((i = 0; i < 50; i++)); do
		[ "$(rcli SCARD "ice:$name:hosts")" = 4 ] && break
		sleep 0.1
	done
	[ "$(rcli SCARD "ice:$name:hosts")" = 4 ] || ctl_fail "agents did not register"
}

rcli() {
	if [ -n "${ACL:-}" ]; then
		rcli_as ice-controller "$@"
	else
		redis-cli ${CTL_CLUSTER_DIR:+-c} -h "$rhost" -p "$rport" "$@"
	fi
}
# rcli_as USER ARGS...: redis-cli as one of the fabric's users (with ACL)
rcli_as() {
	local u=$1 pass
	shift
	pass=$(grep -v '^#' "$ACL/redis-${u#ice-}.auth" | cut -d' ' -f2)
	redis-cli ${CTL_CLUSTER_DIR:+-c} -h "$rhost" -p "$rport" --user "$u" --pass "$pass" \
		--no-auth-warning "$@"
}

ctl_fail() {
	local f
	for f in "$ICE_TMP"/*.log "$ICE_TMP"/*.out; do
		[ -f "$f" ] && tail -n 15 "$f" | sed "s|^|  $(basename "$f"): |"
	done >&2
	ice_fail "$@"
}

# ctl_start ID [options]: a controller in the root namespace (Redis is on
# the management bridge), with the topology file (or its own copy,
# CTL_TOPO); stdout in $ICE_TMP/ctl-ID.out, log in ctl-ID.log
ctl_start() {
	local id=$1
	shift
	${ACL:+env ICE_REDIS_AUTH=$ACL/redis-controller.auth} \
		"$ICE_CONTROLLER" --fabric "$name" --topology "${CTL_TOPO:-$file}" --redis "$redis" --key "$KEY" \
		--id "$id" "$@" >"$ICE_TMP/ctl-$id.out" 2>"$ICE_TMP/ctl-$id.log" &
	CPID=$!
	ICE_PIDS+=($!)
}

# The bed's DCQCN baseline (fabric/dcqcn-testbed.yaml) as ice-perf options:
# ConnectX defaults on 100 Mbit/s links with millisecond RTTs let one of two
# flows on a link starve the other (alpha decays every microsecond), and a
# 94/4 split looks like no collision at all.
DCQCN_FILE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/fabric/dcqcn-testbed.yaml
[ -r "$DCQCN_FILE" ] || { echo "no DCQCN baseline $DCQCN_FILE" >&2; exit 1; }
DCQCN_BED=(--dcqcn-file "$DCQCN_FILE")

# perf SRC DST SECONDS: ice-perf SRC -> DST in the background ($PERF_PIDS)
PERF_PIDS=()
perf() {
	timeout $(($3 + 15)) "$ICE_PERF" --netns "ice$name-$1,ice$name-$2" -D "$3" --warmup 0.3 \
		--line-rate 100mbit "${DCQCN_BED[@]}" >"$ICE_TMP/perf-$1.log" 2>&1 &
	PERF_PIDS+=($!)
	ICE_PIDS+=($!)
}
perf_stop() {
	local p h
	for p in "${PERF_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	PERF_PIDS=()
	# the ranks end with their launcher (PR_SET_PDEATHSIG): wait until their
	# RoCEv2 ports are free, or a new ice-perf cannot bind (seen under load)
	for h in h1 h2 h3 h4; do
		wait_for 5 bash -c "! ip netns exec ice$name-$h ss -Hlun sport = :4791 | grep -q ." ||
			echo "perf_stop: $h still has UDP 4791 bound after 5 s" >&2
	done
}

# spine_bytes: "B1 B2", bytes leaf1 sent to spine1 and spine2
spine_bytes() {
	"$ICE_FABRIC" stats "$name" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
b = {p["to"]: p["bytes"] for p in d["ports"] if p["switch"] == "leaf1" and p["to"].startswith("spine")}
print(b.get("spine1", 0), b.get("spine2", 0))'
}

# spine_split SECONDS: "D1 D2", bytes per second per spine from leaf1 over
# a window of about SECONDS (plus one stats call, which is timed too)
spine_split() {
	local a1 a2 b1 b2 t0 t1
	t0=$(date +%s%N)
	read -r a1 a2 <<<"$(spine_bytes)"
	sleep "$1"
	t1=$(date +%s%N)
	read -r b1 b2 <<<"$(spine_bytes)"
	echo $(((b1 - a1) * 1000000000 / (t1 - t0))) $(((b2 - a2) * 1000000000 / (t1 - t0)))
}

# collide SECONDS: ice-perf h1 -> h3 and h2 -> h4 for SECONDS, restarted
# (new QPs, new ports) until ECMP puts both on one spine; sets s1 s2 (bytes
# leaf1 sent to each spine in 1 s), sp1 sp2 (the QPs' source ports)
collide() {
	local try tot
	for ((try = 1; try <= 8; try++)); do
		perf h1 h3 "$1"
		perf h2 h4 "$1"
		sleep 1.5
		read -r s1 s2 <<<"$(spine_split 1)"
		tot=$((s1 + s2))
		[ "$tot" -gt 1000000 ] || ctl_fail "no traffic from leaf1 ($s1 $s2 bytes)"
		if [ $((s1 * 10)) -lt "$tot" ] || [ $((s2 * 10)) -lt "$tot" ]; then break; fi
		echo "try $try: ECMP already balanced ($s1 / $s2 bytes); new QPs"
		perf_stop
	done
	[ "$try" -le 8 ] || ice_skip "ECMP never collided in 8 tries"
	sp1=$(qp_field h1 sport) sp2=$(qp_field h2 sport)
}

# qp_field HOST FIELD: FIELD of HOST's busiest live QP: the highest send
# rate among the records of the latest interval (a QP of an ice-perf that
# was stopped keeps its record, and its byte total, until the key expires)
qp_field() {
	local k best="" max=-1 last=0 ts r
	local -A TS RATE
	for k in $(rcli ZRANGE "ice:$name:{$1}:qps" 0 -1); do
		read -r ts r <<<"$(rcli HMGET "ice:$name:{$1}:qp:$k" ts_ms rate | tr '\n' ' ')"
		r=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1] or "null"); print(int((d or {}).get("tx_bytes", 0)))' "$r")
		TS[$k]=${ts:-0} RATE[$k]=$r
		[ "${ts:-0}" -gt "$last" ] && last=$ts
	done
	for k in "${!TS[@]}"; do
		[ "${TS[$k]}" -ge $((last - 600)) ] && [ "${RATE[$k]}" -gt "$max" ] && max=${RATE[$k]} best=$k
	done
	[ -n "$best" ] && rcli HGET "ice:$name:{$1}:qp:$best" "$2"
}

# wait_for SECONDS CMD...: poll every 50 ms until CMD succeeds
wait_for() {
	local t=$1 i
	shift
	for ((i = 0; i < t * 20; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}
