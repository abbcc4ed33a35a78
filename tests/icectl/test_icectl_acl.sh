#!/usr/bin/env bash
# Redis users (icectl acl, ICE_REDIS_AUTH) against a real redis-server
# started with the generated --aclfile (unix socket, no root):
#   - icectl acl: users.acl and one 0600 auth file per role;
#   - the default user is off; a wrong password and a 0644 auth file are
#     refused by icectl with one line and exit 2;
#   - a real ice-controller with the controller's file takes the leader key
#     and publishes plans (its scripts, pub/sub and keys all allowed);
#   - host h1 (its agent's and probe's records written by hand, as they
#     write them) may write its own keys, its probe keys under its address,
#     read its plan and subscribe to it; Redis refuses (NOPERM) its writes
#     to the leader, the epoch, another host's QP, its own plan and fence, a
#     policy, and a subscription to another host's plan;
#   - the operator applies a policy with icectl (taken by the controller)
#     but may not write a host's plan; the reader runs icectl status and may
#     write nothing; the exporter writes switch ports and publishes links.
# Needs redis-server and redis-cli; exits 77 without.
set -euo pipefail

ICECTL=${ICECTL:?path of icectl}
ICE_CONTROLLER=${ICE_CONTROLLER:?path of ice-controller}
ICE_TOPO=${ICE_TOPO:?path of ice-topo}
SRC=${ICE_SRC:?source root}

. "$(dirname "$0")/lib_icectl.sh"
icectl_test acl "ctl_pid redis_pid" redis-server redis-cli

F=iceacl
A=$tmp/acl
# as ROLE CMD...: one command as that role's user (its auth file's words)
as() {
	local role=$1 user pass
	shift
	read -r user pass < <(grep -v '^#' "$A/redis-$role.auth")
	redis-cli -s "$S" --user "$user" --pass "$pass" --no-auth-warning "$@"
}
# refused ROLE CMD...: Redis answers NOPERM
refused() {
	local out
	out=$(as "$@" 2>&1) || true
	grep -q '^NOPERM' <<<"$out" || fail "$1 may run '${*:2}': $out"
}
allowed() {
	local out
	out=$(as "$@" 2>&1) || fail "$1: '${*:2}': $out"
	! grep -Eq '^(NOPERM|ERR|WRONGTYPE)' <<<"$out" || fail "$1 may not run '${*:2}': $out"
}

# ---- the users
"$ICE_TOPO" gen leaf-spine --name "$F" --hosts-per-leaf 2 --rate 100mbit --ecmp model \
	-o "$tmp/topo.yaml"
"$ICECTL" acl --topology "$tmp/topo.yaml" --fabric "$F" --out "$A" >"$tmp/acl.out" ||
	fail "icectl acl: $(cat "$tmp/acl.out")"
grep -q "icectl acl: 8 Redis users of fabric '$F'" "$tmp/acl.out" || fail "$(cat "$tmp/acl.out")"
grep -q "redis-server --aclfile $A/users.acl" "$tmp/acl.out" || fail "no load line"
for r in controller exporter operator reader host-h1 host-h2 host-h3 host-h4; do
	[ "$(stat -c %a "$A/redis-$r.auth")" = 600 ] || fail "redis-$r.auth is not 0600"
	grep -q "^ice-$r [0-9a-f]\{64\}$" "$A/redis-$r.auth" || fail "redis-$r.auth: $(cat "$A/redis-$r.auth")"
done
[ "$(stat -c %a "$A/users.acl")" = 600 ] || fail "users.acl is not 0600"
! grep -q "$(grep -v '^#' "$A/redis-host-h1.auth" | cut -d' ' -f2)" "$A/users.acl" ||
	fail "a clear password in users.acl"
echo "ok: icectl acl: 8 users, auth files 0600, no clear password in users.acl"

redis_start --aclfile "$A/users.acl"
wait_for 10 as reader ping >/dev/null 2>&1 || fail "redis-server did not start with users.acl"

# ---- refusals at the door
out=$(redis-cli -s "$S" SET "ice:$F:{ctl}:leader" x 2>&1) || true
grep -q NOAUTH <<<"$out" || fail "the default user is not off: $out"
out=$(redis-cli -s "$S" --user default --pass '' --no-auth-warning PING 2>&1) || true
grep -Eq "WRONGPASS|NOAUTH" <<<"$out" || fail "the default user admitted: $out"
sed 's/ [0-9a-f]*$/ 00000000000000000000000000000000/' "$A/redis-operator.auth" >"$tmp/wrong.auth"
chmod 600 "$tmp/wrong.auth"
set +e
out=$(ICE_REDIS_AUTH=$tmp/wrong.auth "$ICECTL" status --redis "unix:$S" --fabric "$F" 2>&1)
code=$?
set -e
[ "$code" = 2 ] || fail "wrong password: exit $code, expected 2 ($out)"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "wrong password: more than one line: $out"
grep -q "not admitted by Redis at unix:$S: AUTH as ice-operator refused: WRONGPASS" <<<"$out" ||
	fail "wrong password: $out"
grep -q 0000000000 <<<"$out" && fail "the password was printed: $out"
cp "$A/redis-operator.auth" "$tmp/open.auth"
chmod 644 "$tmp/open.auth"
set +e
out=$(ICE_REDIS_AUTH=$tmp/open.auth "$ICECTL" status --redis "unix:$S" --fabric "$F" 2>&1)
code=$?
set -e
[ "$code" = 2 ] || fail "0644 auth file: exit $code, expected 2 ($out)"
grep -q "ICE_REDIS_AUTH $tmp/open.auth is accessible by group or others (mode 0644); expected mode 0600 or 0400" <<<"$out" ||
	fail "0644 auth file: $out"
echo "ok: default user off; wrong password and a 0644 auth file: one line, exit 2"

# ---- the controller, with its own user
"$ICECTL" keygen --out "$tmp" --name plan >/dev/null || fail "icectl keygen"
now=$(($(date +%s%N) / 1000000))
as host-h1 >/dev/null <<R
SET ice:$F:schema 1
SADD ice:$F:hosts h1
HSET ice:$F:{h1}:host host h1 schema 1 last_ms $now
SADD ice:$F:{h1}:nics eth0
HSET ice:$F:{h1}:nic:eth0:agent nic eth0 addr 10.1.0.1 pid 41 version 0.1.0 schema 1 interval_ms 250 state online
SET ice:$F:{h1}:nic:eth0:alive '{"pid":41,"ts_ms":$now,"seq":7,"addr":"10.1.0.1"}' PX 60000
HSET ice:$F:{h1}:nic:eth0 nic eth0 addr 10.1.0.1 seq 7 ts_ms $now qps 1
ZADD ice:$F:{h1}:qps $now 10.1.0.1:17
HSET ice:$F:{h1}:qp:10.1.0.1:17 id 10.1.0.1:17 kind qp local 10.1.0.1 remote 10.2.0.1 qpn 17 rqpn 33 sport 49999 ts_ms $now seq 7 rate '{"tx_bytes":9000000,"cnp_rx":0,"retx":0}'
R
[ "$(as reader HGET "ice:$F:{h1}:qp:10.1.0.1:17" qpn)" = 17 ] || fail "h1's records were not written"
ICE_REDIS_AUTH=$A/redis-controller.auth "$ICE_CONTROLLER" --fabric "$F" \
	--topology "$tmp/topo.yaml" --redis "unix:$S" --key "$tmp/plan.key" --id acl-a \
	>"$tmp/ctl.out" 2>"$tmp/ctl.log" &
ctl_pid=$!
wait_for 10 sh -c "[ -n \"\$(redis-cli -s $S --user ice-reader --pass $(grep -v '^#' "$A/redis-reader.auth" | cut -d' ' -f2) --no-auth-warning GET 'ice:$F:{ctl}:leader')\" ]" ||
	fail "the controller did not take the leader key"
wait_for 10 grep -q "^epoch" "$tmp/ctl.out" || fail "the controller published nothing"
grep -q "NOPERM" "$tmp/ctl.log" && fail "the controller was refused a command"
case $(as reader TYPE "ice:$F:{h1}:plan") in
string) plan=$(as host-h1 GET "ice:$F:{h1}:plan") ;;
hash) plan=$(as host-h1 HGETALL "ice:$F:{h1}:plan") ;;
*) fail "no plan for h1 ($(as reader TYPE "ice:$F:{h1}:plan"))" ;;
esac
[ -n "$plan" ] && ! grep -q NOPERM <<<"$plan" || fail "h1 cannot read its plan: $plan"
echo "ok: ice-controller as ice-controller: leader key taken, plans published, no NOPERM"

# ---- host h1: its own keys, nothing else
allowed host-h1 HSET "ice:$F:{h1}:qp:10.1.0.1:18" qpn 18
allowed host-h1 HSET "ice:$F:{h1}:plan:applied" epoch 1
allowed host-h1 XADD "ice:$F:{h1}:events" MAXLEN '~' 100 '*' kind test
allowed host-h1 HSET "ice:$F:{10.1.0.1}:probe:pairs" x 1
allowed host-h1 SADD "ice:$F:probe:hosts" 10.1.0.1
allowed host-h1 GET "ice:$F:probe:pinglist"
refused host-h1 SET "ice:$F:{ctl}:leader" squatter
refused host-h1 SET "ice:$F:{ctl}:epoch" 18446744073709551615
refused host-h1 HSET "ice:$F:{h2}:qp:10.1.0.3:17" qpn 17
refused host-h1 HSET "ice:$F:{10.1.0.3}:probe:pairs" x 1
refused host-h1 SET "ice:$F:{h1}:plan" forged
refused host-h1 SET "ice:$F:{h1}:plan:fence" 0
refused host-h1 SET "ice:$F:policy:current" 1
refused host-h1 GET "ice:$F:{h2}:plan"
refused host-h1 PUBLISH "ice:$F:{h2}:plan" forged
refused host-h1 PUBLISH "ice:$F:{h1}:plan" forged
refused host-h1 FLUSHALL
refused host-h1 CONFIG SET appendonly yes
out=$(timeout 1 redis-cli -s "$S" --user ice-host-h1 --pass "$(grep -v '^#' "$A/redis-host-h1.auth" | cut -d' ' -f2)" --no-auth-warning SUBSCRIBE "ice:$F:{h1}:plan" 2>&1) || true
grep -q "^subscribe" <<<"$out" || fail "h1 cannot subscribe to its plan: $out"
out=$(timeout 1 redis-cli -s "$S" --user ice-host-h1 --pass "$(grep -v '^#' "$A/redis-host-h1.auth" | cut -d' ' -f2)" --no-auth-warning SUBSCRIBE "ice:$F:{h2}:plan" 2>&1) || true
grep -q "NOPERM" <<<"$out" || fail "h1 may subscribe to h2's plan: $out"
echo "ok: host h1 writes its own and its probe's keys; NOPERM on the leader, the epoch, h2's QP and probe keys, its plan and fence, a policy, h2's plan channel"

# ---- operator, reader, exporter
ICE_REDIS_AUTH=$A/redis-operator.auth "$ICECTL" policy apply "$SRC/controller/policy.example.yaml" \
	--redis "unix:$S" --fabric "$F" >"$tmp/apply.log" 2>&1 || fail "operator: policy apply"
grep -q "policy v1 applied: in force on the leader" "$tmp/apply.log" || fail "apply: $(cat "$tmp/apply.log")"
refused operator HSET "ice:$F:{h1}:plan" plan forged
refused operator SET "ice:$F:{ctl}:leader" squatter
refused operator HSET "ice:$F:{h1}:qp:10.1.0.1:17" qpn 99
ICE_REDIS_AUTH=$A/redis-reader.auth "$ICECTL" status --redis "unix:$S" --fabric "$F" >"$tmp/status.log" 2>&1 ||
	fail "reader: icectl status: $(cat "$tmp/status.log")"
grep -q "leader acl-a" "$tmp/status.log" || fail "reader: status: $(cat "$tmp/status.log")"
refused reader SET "ice:$F:policy:current" 1
refused reader HSET "ice:$F:{h1}:qp:10.1.0.1:17" qpn 99
refused reader DEL "ice:$F:{ctl}:leader"
refused reader PUBLISH "ice:$F:links" x
allowed exporter HSET "ice:$F:sw:{leaf1}:port:eth1" oper_status UP
allowed exporter PUBLISH "ice:$F:links" leaf1:eth1
refused exporter SET "ice:$F:{ctl}:leader" squatter
refused exporter HSET "ice:$F:{h1}:qp:10.1.0.1:17" qpn 99
echo "ok: operator applies a policy, may not write plans; reader reads, writes nothing; exporter its keys only"
