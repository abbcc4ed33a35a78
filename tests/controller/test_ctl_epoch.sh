#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# test_ctl_epoch: the controller recovers the plan epoch counter without
# trusting a number any Redis client could write (docs/security.md,
# "Epochs"). A real redis-server (unix socket), a real ice-controller and a
# real ice-agent for h1 (--no-bpf on lo, its epoch file kept across the
# run); h2 has no agent, only keys a hostile client writes. Steps:
#   1. a counter already at 1 (a fabric numbered before) goes on with
#      small epochs 2, 3, ... (no jump to the clock), h1 applies them;
#   2. a hostile last_epoch of 2^47 for h2, then the counter and the
#      published record deleted: the next epoch comes from the clock (at
#      least now_ms, far below 2^47), the 2^47 is said and never adopted
#      (log, {ctl}:status epoch_ignored), and h1 applies it;
#   3. FLUSHALL: the controller takes the lease again and numbers from the
#      clock, above every epoch before; h1 (its epoch file at the old one)
#      applies it;
#   4. a new controller on a Redis that lost its last writes (counter 5, no
#      published record, no write-back): h1 refuses epoch 6 as stale,
#      writes back its last_epoch, and the controller numbers its next
#      plan above it, which h1 applies.
# Needs root (the agent's control block in /dev/shm) and redis-server.
set -u

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
	{ echo "SKIP: no redis-server"; exit 77; }
for v in ICE_AGENT ICE_CONTROLLER ICECTL; do
	[ -n "${!v:-}" ] || { echo "SKIP: $v not set"; exit 77; }
done

T=$(mktemp -d /tmp/ice-ctlepoch-XXXXXX)
F=iceepoch
ADDR=10.255.79.1
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	rm -f "/dev/shm/ice-ctrl-$ADDR"
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
fail() {
	local f
	echo "FAIL: $*" >&2
	for f in "$T"/*.log "$T"/*.out; do
		[ -f "$f" ] && { echo "---- $f" >&2; tail -n 25 "$f" >&2; }
	done
	exit 1
}
wait_for() { # seconds, command...
	local n=$(($1 * 20)) i
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}
S=$T/redis.sock
R() { redis-cli -s "$S" "$@"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
applied() { R HGET "ice:$F:{h1}:plan:applied" epoch; }
applied_ge() { local e; e=$(applied); [ -n "$e" ] && [ "$e" -ge "$1" ]; }
published() { R HGET "ice:$F:{ctl}:published" epoch; }

redis-server --port 0 --unixsocket "$S" --unixsocketperm 700 --save "" --appendonly no \
	--dir "$T" >"$T/redis.log" 2>&1 &
PIDS+=($!)
wait_for 5 R PING >/dev/null 2>&1 || fail "redis-server did not start"
R SET "ice:$F:{ctl}:epoch" 1 >/dev/null
"$ICECTL" keygen --out "$T" --name plan >/dev/null || fail "icectl keygen"
cat >"$T/topo.yaml" <<TOPO
name: $F
hash: {algorithm: crc32, seed: 1, fields: [src_ip, dst_ip, proto, src_port, dst_port]}
defaults: {link_rate: 100gbit, buffer: 1M, ecn: {kmin: 100K, kmax: 400K, pmax: 0.2}}
switches:
  - {name: spine1, tier: 2}
  - {name: leaf1, tier: 1}
  - {name: leaf2, tier: 1}
hosts:
  - {name: h1, nics: [{addr: $ADDR/31}]}
  - {name: h2, nics: [{addr: 10.255.79.3/31}]}
links:
  - {a: h1, b: leaf1}
  - {a: h2, b: leaf2}
  - {a: leaf1, b: spine1}
  - {a: leaf2, b: spine1}
TOPO
mkdir -m 755 "$T/run"
ICE_LOG=info "$ICE_AGENT" --nic lo --addr "$ADDR" --no-bpf --host h1 --fabric $F \
	--redis "unix:$S" --run-dir "$T/run" --interval 100ms --plan-pubkeys "$T/plan.pub" \
	--epoch-file "$T/h1.epoch" --metrics-port 0 >"$T/agent.log" 2>&1 &
PIDS+=($!)
controller() {
	"$ICE_CONTROLLER" --fabric $F --topology "$T/topo.yaml" --redis "unix:$S" \
		--key "$T/plan.key" --interval 10ms --qp-interval 20ms --sports model \
		--telem-interval 0 --lifetime 3s >>"$T/ctl.out" 2>>"$T/ctl.log" &
	CTL=$!
	PIDS+=($CTL)
}
controller

# 1. small epochs
wait_for 10 applied_ge 2 || fail "h1 applied no plan in 10 s"
e0=$(applied)
[ "$e0" -lt 100 ] || fail "the counter at 1 did not go on with small epochs: $e0"
echo "1. counter at 1: small epochs go on, h1 applied epoch $e0"

# 2. a hostile last_epoch, then the counter and the record gone
HOSTILE=140737488355328 # 2^47
R SADD "ice:$F:hosts" h2 >/dev/null # h2 registered, as its agent would
R HSET "ice:$F:{h2}:plan:applied" last_epoch $HOSTILE >/dev/null
t0=$(now_ms)
R DEL "ice:$F:{ctl}:epoch" "ice:$F:{ctl}:published" >/dev/null
wait_for 10 applied_ge "$t0" || fail "h1 applied no epoch from the clock ($t0) in 10 s (at $(applied))"
t1=$(now_ms)
e1=$(applied)
[ "$e1" -lt $((t1 + 60000)) ] || fail "epoch $e1 above the clock $t1 + 60 s: the hostile floor adopted?"
[ "$(published)" -lt $HOSTILE ] || fail "published epoch $(published) took the hostile floor"
wait_for 3 grep -q "holds epoch $HOSTILE.*ignored" "$T/ctl.log" || fail "the hostile last_epoch not said"
[ "$(R HGET "ice:$F:{ctl}:status" epoch_ignored)" = $HOSTILE ] ||
	fail "{ctl}:status epoch_ignored: $(R HGET "ice:$F:{ctl}:status" epoch_ignored)"
[ "$(cat "$T/h1.epoch")" -ge "$e1" ] 2>/dev/null || fail "h1's epoch file: $(cat "$T/h1.epoch")"
echo "2. counter deleted with h2's last_epoch at 2^47: next epoch $e1 (clock $t0..$t1 ms), 2^47 ignored and said $(grep -c "holds epoch $HOSTILE" "$T/ctl.log") time(s)"

# 3. FLUSHALL
t2=$(now_ms)
R FLUSHALL >/dev/null
wait_for 15 applied_ge "$t2" || fail "h1 applied no epoch above $t2 in 15 s after FLUSHALL (at $(applied))"
e2=$(applied)
[ "$e2" -gt "$e1" ] || fail "epoch after FLUSHALL $e2 not above $e1"
grep -q "epoch counter missing ->" "$T/ctl.log" || fail "the recovery not said"
echo "3. FLUSHALL: h1 applied epoch $e2 (was $e1; clock at the flush $t2 ms)"

# 4. the counter behind the agent: a new controller (no epochs of its own in
#    memory) on a Redis that lost its last writes (a failover): counter 5,
#    no published record, no write-back of h1
kill "$CTL" && wait "$CTL" 2>/dev/null
R SET "ice:$F:{ctl}:epoch" 5 >/dev/null
R SADD "ice:$F:hosts" h1 >/dev/null # older data the failover kept (the agent registers only at connect)
R DEL "ice:$F:{ctl}:published" "ice:$F:{h1}:plan:applied" "ice:$F:{ctl}:leader" >/dev/null
controller
wait_for 10 grep -q "h1 holds epoch [0-9]*, not below ours" "$T/ctl.log" ||
	fail "the stale refusal not seen"
wait_for 10 applied_ge $((e2 + 1)) || fail "h1 applied nothing above $e2 after its stale refusal"
e3=$(applied)
[ "$e3" -lt $(($(now_ms) + 60000)) ] || fail "epoch $e3 ran ahead of the clock"
grep -q "not newer than the applied epoch" "$T/agent.log" || fail "the agent did not refuse epoch 6"
echo "4. counter behind at 5, a new controller: h1 refused epoch 6 as stale, then applied epoch $e3 (> $e2)"
kill -0 "$CTL" || fail "the controller died"
echo PASS
