#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ice-loadgen's smoke test against a real redis-server (unix socket) and the
# real ice-controller: 60 QPs over 8 agents of a generated leaf-spine are
# played every 200 ms; the records carry the agent's schema; the controller
# reports all 60 QPs and 8 hosts in its view (view_qps, view_hosts of
# {ctl}:status); a bad flag is refused naming it. Skipped without redis-server.
set -u
: "${ICE_LOADGEN:?}" "${ICE_CONTROLLER:?}" "${ICE_TOPO:?}"
command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
	{ echo "SKIP: redis-server and redis-cli are needed"; exit 77; }

D=$(mktemp -d /tmp/ice-loadgen-test.XXXXXX) || exit 1
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	[ -f "$D/redis.pid" ] && kill "$(cat "$D/redis.pid")" 2>/dev/null
	sleep 0.2
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$D"/*.out; do echo "== $f"; tail -20 "$f"; done; exit 1; }

F=icelg
R="unix:$D/redis.sock"
cli() { redis-cli -s "$D/redis.sock" "$@"; }

redis-server --port 0 --unixsocket "$D/redis.sock" --daemonize yes --pidfile "$D/redis.pid" \
	--dir "$D" --save "" --appendonly no --logfile "$D/redis.log" || fail "redis-server"
for _ in $(seq 50); do cli ping >/dev/null 2>&1 && break; sleep 0.1; done
"$ICE_TOPO" gen leaf-spine --spines 2 --leaves 4 --hosts-per-leaf 2 --ecmp model \
	--rate 100gbit --fabric-rate 400gbit --name "$F" -o "$D/topo.yaml" || fail "ice-topo gen"
"$ICECTL" keygen --out "$D" --name plan >/dev/null || fail "icectl keygen"

# bad input: one clear line naming the flag
out=$("$ICE_LOADGEN" -t "$D/topo.yaml" -r "$R" --qps lots 2>&1)
[ $? -eq 2 ] && grep -q -- "--qps" <<<"$out" || fail "--qps lots: expected exit 2 naming --qps, got: $out"
out=$("$ICE_LOADGEN" -t "$D/topo.yaml" -r "$R" --hosts 9 --duration 1s 2>&1)
[ $? -eq 2 ] && grep -q "8 host NICs" <<<"$out" || fail "--hosts 9 of 8: got: $out"

"$ICE_LOADGEN" -t "$D/topo.yaml" -r "$R" --fabric "$F" --qps 60 --interval 200ms \
	--duration 12s --probers 2 --pairs 2 --json >"$D/loadgen.out" 2>&1 &
PIDS+=($!)
LG=$!
"$ICE_CONTROLLER" --fabric "$F" --topology "$D/topo.yaml" --redis "$R" --key "$D/plan.key" \
	--id icelgtest --qp-interval 200ms >"$D/ctl.out" 2>&1 &
PIDS+=($!)

# the controller's view: every QP and every agent's host
ok=0
for _ in $(seq 80); do
	q=$(cli HGET "ice:$F:{ctl}:status" view_qps)
	h=$(cli HGET "ice:$F:{ctl}:status" view_hosts)
	[ "$q" = 60 ] && [ "$h" = 8 ] && { ok=1; break; }
	sleep 0.1
done
[ $ok = 1 ] || fail "controller's view: view_qps '$q' view_hosts '$h', expected 60 and 8"
ms=$(cli HGET "ice:$F:{ctl}:status" view_read_ms)
awk -v m="$ms" 'BEGIN { exit !(m > 0) }' || fail "view_read_ms '$ms', expected > 0"

# the records: the agent's schema
[ "$(cli SCARD "ice:$F:hosts")" = 8 ] || fail "hosts set"
[ "$(cli ZCARD "ice:$F:{h1}:qps")" -ge 7 ] || fail "h1's QP index"
k=$(cli ZRANGE "ice:$F:{h1}:qps" 0 0)
for f in id seq ts_ms kind local remote qpn rqpn sport src tx_bytes rate dt; do
	[ -n "$(cli HGET "ice:$F:{h1}:qp:$k" "$f")" ] || fail "qp:$k has no field $f"
done
[ "$(cli XLEN "ice:$F:{h1}:qp:$k:ts")" -ge 2 ] || fail "qp:$k:ts has fewer than 2 entries"
[ "$(cli HGET "ice:$F:{h1}:nic:eth0:agent" state)" = online ] || fail "nic agent record"
[ "$(cli EXISTS "ice:$F:{h1}:alive")" = 1 ] || fail "h1 alive"
[ "$(cli SCARD "ice:$F:probe:hosts")" = 2 ] || fail "probe hosts"

wait "$LG" || fail "ice-loadgen exited $?"
grep -q '"errors":0' "$D/loadgen.out" || fail "loadgen error replies"
grep -q '"qps":60' "$D/loadgen.out" || fail "loadgen output"
echo "ok: view of 60 QPs on 8 hosts in $ms ms; $(cat "$D/loadgen.out")"
