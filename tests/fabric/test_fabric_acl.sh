#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Hostile Redis clients against the test bed's Redis with users
# (ice-fabric up --redis-acl) on a 2x2 leaf-spine, 2 hosts per leaf:
#   0. the bed itself: the default user is off; the agents (as their hosts),
#      the exporter and the link recorder (ice-exporter) and a controller
#      (ice-controller) do their work; `status` names the auth files;
#   1. with h1's credentials, Redis refuses (NOPERM) writing h2's keys
#      (a QP record, its QP index, its last_epoch), any plan key or plan
#      channel, the leader key and the epoch counter;
#   2. what h1 may write, its own keys, it abuses: a QP record filed under
#      h1 for h2's address (it would be planned and steered on h2), a huge
#      last_epoch of its own: the controller drops the first (counted),
#      ignores the second, and keeps publishing; a flood of 80 phantom
#      QPs of its own is cut at host_qps_max (48) per refresh, said, and
#      publishing goes on;
#   3. with the controller's credentials (what an ACL cannot stop):
#      malformed QP records are dropped and counted; a phantom QP of h2 is
#      planned but reaches h2's agent only as an absent entry, never applied
#      to a QP; a leader key squatted without expiry, or with one longer
#      than any controller's lease may be, is no lease: the controller
#      takes it back at once, says from whom, and publishes again.
# The inflated {ctl}:epoch and a host's huge last_epoch written with full
# access are test_fabric_ctl_ha's (1b); the ACL's table line by line on a
# bare redis-server is test_icectl_acl's.
. "$(dirname "$0")/lib_fabric.sh"
. "$(dirname "$0")/lib_fabric_ctl.sh"
CTL_UP_OPTS=(--redis-acl)
ctl_fabric_up cta
[ -n "$ACL" ] && [ -f "$ACL/users.acl" ] || ctl_fail "no $ACL/users.acl"

# 0. the bed
out=$(redis-cli -h "$rhost" -p "$rport" SET ice:x 1 2>&1)
grep -q NOAUTH <<<"$out" || ctl_fail "the default user is not off: $out"
"$ICE_FABRIC" status "$name" | grep -q "^redis users: $ACL " || ctl_fail "status: $("$ICE_FABRIC" status "$name" | head -3)"
for f in users.acl redis-controller.auth redis-exporter.auth redis-host-h1.auth; do
	[ "$(stat -c %a "$ACL/$f")" = 600 ] || ctl_fail "$f is mode $(stat -c %a "$ACL/$f")"
done
for ((i = 0; i < 50; i++)); do
	[ "$(rcli EXISTS "ice:$name:sw:exporter")" = 1 ] && break
	sleep 0.1
done
[ "$(rcli EXISTS "ice:$name:sw:exporter")" = 1 ] || ctl_fail "the exporter wrote nothing: $(tail -3 "/run/ice/$name/export.log")"
"$ICE_FABRIC" link --fabric "$name" leaf1:spine1 down >/dev/null || ctl_fail "link down failed"
"$ICE_FABRIC" link --fabric "$name" leaf1:spine1 up >/dev/null || ctl_fail "link up failed"
rcli HGET "ice:$name:links" leaf1:spine1 | grep -q '"state":"up"' ||
	ctl_fail "link state not recorded: $(rcli HGETALL "ice:$name:links")"
grep -Eq "NOAUTH|NOPERM|WRONGPASS" "/run/ice/$name/export.log" "$ICE_TMP"/agent-*.log &&
	ctl_fail "a bed writer was refused: $(grep -Eh "NOAUTH|NOPERM|WRONGPASS" "/run/ice/$name/export.log" "$ICE_TMP"/agent-*.log | head -3)"
echo "bed: default user off; 4 agents, the exporter and the link recorder admitted as their users"

perf h1 h3 60
ctl_start A --lifetime 3s --reopt 1s --lease-ttl 1000ms --host-qps-max 48 # republished within the lifetime
pub() { rcli HGET "ice:$name:{ctl}:published" epoch; }
applied() { rcli HGET "ice:$name:{$1}:plan:applied" epoch; }
for ((i = 0; i < 100; i++)); do [ -n "$(pub)" ] && break; sleep 0.1; done
e0=$(pub)
[ -n "$e0" ] || ctl_fail "the controller published nothing"
for ((i = 0; i < 60; i++)); do [ "$(applied h1)" -ge "$e0" ] 2>/dev/null && break; sleep 0.1; done
[ "$(applied h1)" -ge "$e0" ] || ctl_fail "h1 did not apply epoch $e0"
echo "controller A published epoch $e0 as ice-controller; h1 applied it"

# 1. h1 refused by Redis
refused() {
	local out
	out=$(rcli_as ice-host-h1 "$@" 2>&1)
	grep -q '^NOPERM' <<<"$out" || ctl_fail "h1 may run '$*': $out"
}
h2=${IP[h2]}
refused HSET "ice:$name:{h2}:qp:$h2:77" local "$h2" remote "${IP[h4]}" qpn 77
refused ZADD "ice:$name:{h2}:qps" 9999999999999 "$h2:77"
refused HSET "ice:$name:{h2}:plan:applied" last_epoch 9000000000000000000
refused SET "ice:$name:{h2}:plan" '{"plan":{}}'
refused SET "ice:$name:{h1}:plan" '{"plan":{}}'
refused PUBLISH "ice:$name:{h2}:plan" 1
refused PUBLISH "ice:$name:{h1}:plan" 1
refused SET "ice:$name:{ctl}:leader" h1
refused DEL "ice:$name:{ctl}:leader"
refused SET "ice:$name:{ctl}:epoch" 4611686018427387904
refused INCRBY "ice:$name:{ctl}:epoch" 1000000000000000
echo "h1 refused (NOPERM): h2's QP record, QP index and last_epoch; both plans and plan channels; the leader key; the epoch"

# 2. h1 abuses its own keys
now=$(($(date +%s%N) / 1000000))
qp_rec() { # HOST-KEY LOCAL QPN: an active QP record and its index entry
	rcli_as "$4" HSET "ice:$name:{$1}:qp:$2:$3" id "$2:$3" kind qp local "$2" remote "${IP[h4]}" \
		qpn "$3" rqpn 5 sport 50000 rate '{"tx_bytes":5000000}' ts_ms "$now" >/dev/null
	rcli_as "$4" ZADD "ice:$name:{$1}:qps" 99999999999999 "$2:$3" >/dev/null
}
qp_rec h1 "$h2" 4001 ice-host-h1
out=$(rcli_as ice-host-h1 HSET "ice:$name:{h1}:plan:applied" last_epoch 9000000000000000000)
[ "$out" = 0 ] || [ "$out" = 1 ] || ctl_fail "h1 cannot write its own last_epoch: $out"
for ((i = 0; i < 60; i++)); do
	[ "$(rcli HGET "ice:$name:{ctl}:status" view_foreign_qps)" -ge 1 ] 2>/dev/null && break
	sleep 0.1
done
[ "$(rcli HGET "ice:$name:{ctl}:status" view_foreign_qps)" -ge 1 ] 2>/dev/null ||
	ctl_fail "the foreign QP record was not counted: $(rcli HGETALL "ice:$name:{ctl}:status" | tr '\n' ' ')"
grep -q "host h1: a QP record dropped.*not one of this host's NICs" "$ICE_TMP/ctl-A.log" ||
	ctl_fail "the controller did not say why it dropped h1's record for h2"
rcli GET "ice:$name:{h2}:plan" | grep -q '"qpn":4001' && ctl_fail "h1's record for h2 reached h2's plan"
e1=$(pub)
for ((i = 0; i < 60; i++)); do [ "$(pub)" != "$e1" ] && break; sleep 0.1; done
e2=$(pub)
[ "$e2" -gt "$e1" ] && [ "$e2" -lt 281474976710656 ] || ctl_fail "epoch $e1 -> $e2 after h1's huge last_epoch"
echo "h1's own keys: a QP for h2's address dropped and counted, never in h2's plan; a huge last_epoch ignored (epoch $e1 -> $e2)"

# a flood of phantom QPs in h1's own keys: the view reads at most
# host_qps_max (48) of a host's records per refresh, and says so
for ((q = 5000; q < 5080; q++)); do
	echo "HSET ice:$name:{h1}:qp:${IP[h1]}:$q id ${IP[h1]}:$q kind qp local ${IP[h1]} remote ${IP[h4]} qpn $q rqpn 5 sport 50000 rate '{\"tx_bytes\":5000000}' ts_ms $now"
	echo "ZADD ice:$name:{h1}:qps 99999999999999 ${IP[h1]}:$q"
done | rcli_as ice-host-h1 >/dev/null
for ((i = 0; i < 60; i++)); do
	[ "$(rcli HGET "ice:$name:{ctl}:status" view_capped_reads)" -ge 1 ] 2>/dev/null && break
	sleep 0.1
done
capped=$(rcli HGET "ice:$name:{ctl}:status" view_capped_reads)
[ "${capped:-0}" -ge 1 ] || ctl_fail "80 phantom QPs of h1 not cut at host_qps_max 48: view_capped_reads '$capped'"
grep -q "host h1: a QP record dropped.*more QP records than host_qps_max" "$ICE_TMP/ctl-A.log" ||
	ctl_fail "the controller did not say it cut h1's QP records"
vq=$(rcli HGET "ice:$name:{ctl}:status" view_qps)
e3=$(pub)
for ((i = 0; i < 60; i++)); do [ "$(pub)" != "$e3" ] && break; sleep 0.1; done
[ "$(pub)" != "$e3" ] || ctl_fail "no plan during the flood of phantom QPs"
for ((q = 5000; q < 5080; q++)); do
	echo "DEL ice:$name:{h1}:qp:${IP[h1]}:$q"
	echo "ZREM ice:$name:{h1}:qps ${IP[h1]}:$q"
done | rcli_as ice-host-h1 >/dev/null
echo "80 phantom QPs of h1: read at most 48 per refresh ($capped capped reads, view $vq QPs), publishing goes on (epoch $e3 -> $(pub))"

# 3. the controller's credentials (the ACL allows anything)
rcli HSET "ice:$name:{h1}:qp:bad:1" local not-an-ip remote "${IP[h3]}" qpn 1 >/dev/null
rcli HSET "ice:$name:{h1}:qp:bad:2" local "${IP[h1]}" remote "${IP[h3]}" qpn -5 sport 99999999 >/dev/null
rcli HSET "ice:$name:{h1}:qp:bad:3" local "${IP[h1]}" remote "${IP[h3]}" qpn 7 rate '{"tx_bytes":1e300}' >/dev/null
rcli HSET "ice:$name:{h1}:qp:bad:4" local "${IP[h1]}" remote "${IP[h3]}" qpn 99999999999999999999999 >/dev/null
rcli ZADD "ice:$name:{h1}:qps" 99999999999999 bad:1 99999999999999 bad:2 99999999999999 bad:3 99999999999999 bad:4 99999999999999 nosuch:5 >/dev/null
qp_rec h2 "$h2" 4242 ice-controller # a phantom: no QP 4242 on h2
for ((i = 0; i < 60; i++)); do
	[ "$(rcli HGET "ice:$name:{ctl}:status" view_bad_qps)" -ge 4 ] 2>/dev/null && break
	sleep 0.1
done
[ "$(rcli HGET "ice:$name:{ctl}:status" view_bad_qps)" -ge 4 ] 2>/dev/null ||
	ctl_fail "malformed records not counted: $(rcli HGET "ice:$name:{ctl}:status" view_bad_qps)"
for ((i = 0; i < 60; i++)); do
	rcli GET "ice:$name:{h2}:plan" | grep -q '"qpn":4242' && break
	sleep 0.1
done
ep=$(pub)
for ((i = 0; i < 60; i++)); do [ "$(applied h2)" -ge "$ep" ] 2>/dev/null && break; sleep 0.1; done
[ "$(applied h2)" -ge "$ep" ] || ctl_fail "h2 did not apply epoch $ep"
read -r st absent <<<"$(rcli HMGET "ice:$name:{h2}:plan:applied" state absent | tr '\n' ' ')"
echo "phantom QP 4242 of h2: in h2's plan: $(rcli GET "ice:$name:{h2}:plan" | grep -c '"qpn":4242'); h2 applied epoch $(applied h2): state $st, absent entries $absent"
[ "$st" = applied ] || ctl_fail "h2's plan state is $st"
if rcli GET "ice:$name:{h2}:plan" | grep -q '"qpn":4242'; then
	[ "${absent:-0}" -ge 1 ] || ctl_fail "the phantom QP was not counted absent by h2's agent"
fi
kill -0 "$CPID" || ctl_fail "the controller died"
echo "malformed records: $(rcli HGET "ice:$name:{ctl}:status" view_bad_qps) dropped and counted, publishing goes on (epoch $(pub))"

# the squatted leader key: once without expiry, once with an hour's
squat() {
	local es t0 ms
	es=$(pub)
	t0=$(date +%s%N)
	rcli SET "ice:$name:{ctl}:leader" "$1" "${@:2}" >/dev/null
	for ((i = 0; i < 50; i++)); do
		grep -q "held '$1' with no expiry" "$ICE_TMP/ctl-A.log" && break
		sleep 0.1
	done
	ms=$((($(date +%s%N) - t0) / 1000000))
	grep -q "held '$1' with no expiry" "$ICE_TMP/ctl-A.log" ||
		ctl_fail "the controller did not take the leader key back from '$1'"
	[ "$(rcli GET "ice:$name:{ctl}:leader")" = A ] ||
		ctl_fail "the leader key holds '$(rcli GET "ice:$name:{ctl}:leader")'"
	ttl=$(rcli PTTL "ice:$name:{ctl}:leader")
	[ "$ttl" -gt 0 ] && [ "$ttl" -le 60000 ] || ctl_fail "the lease taken back has PTTL $ttl"
	for ((i = 0; i < 60; i++)); do [ "$(pub)" != "$es" ] && break; sleep 0.1; done
	[ "$(pub)" != "$es" ] || ctl_fail "no plan after taking the key back from '$1'"
	echo "leader key squatted by '$1' ${*:2}: A took it back in $ms ms (PTTL now $ttl ms), epoch $es -> $(pub)"
}
squat mallory
squat trudy PX 3600000
[ "$(rcli HGET "ice:$name:{ctl}:status" lease_squats)" -ge 2 ] 2>/dev/null ||
	sleep 1.2
[ "$(rcli HGET "ice:$name:{ctl}:status" lease_squats)" -ge 2 ] ||
	ctl_fail "lease_squats is '$(rcli HGET "ice:$name:{ctl}:status" lease_squats)'"
kill -0 "$CPID" || ctl_fail "the controller died"
perf_stop
echo "PASS"
