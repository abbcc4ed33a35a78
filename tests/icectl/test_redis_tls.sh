#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Redis over TLS through a local tunnel, as docs/security.md ("TLS")
# describes: hiredis 0.14 (Debian 12) has no TLS, redis-server 7.0 has.
#   - a CA, a server and a client certificate (openssl);
#   - redis-server with only a TLS port, client certificates required, and
#     the Redis users of `icectl acl`;
#   - stunnel in client mode on 127.0.0.1, with the client certificate and
#     the CA, the docs' configuration;
#   - a plain-text client on the TLS port gets nothing; redis-cli --tls
#     without a client certificate is refused;
#   - a real ice-controller, as ice-controller, through the tunnel takes
#     the leader key and publishes; icectl status, as ice-reader, through
#     the tunnel reads it.
# Needs redis-server, redis-cli, openssl and stunnel; exits 77 without.
set -euo pipefail

ICECTL=${ICECTL:?path of icectl}
ICE_CONTROLLER=${ICE_CONTROLLER:?path of ice-controller}
ICE_TOPO=${ICE_TOPO:?path of ice-topo}

. "$(dirname "$0")/lib_icectl.sh"
icectl_test tls "ctl_pid tun_pid redis_pid" redis-server redis-cli openssl stunnel

F=icetls
A=$tmp/acl
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# ---- certificates: a CA, the server (127.0.0.1), one client
cd "$tmp"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
	-subj /CN=ice-test-ca -keyout ca.key -out ca.crt 2>/dev/null
for who in server client; do
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=ice-$who" \
		-keyout "$who.key" -out "$who.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1\n' >"$who.ext"
	openssl x509 -req -in "$who.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 \
		-extfile "$who.ext" -out "$who.crt" 2>/dev/null
done
chmod 600 ./*.key

# ---- Redis: TLS only, client certificates required, users
"$ICE_TOPO" gen leaf-spine --name "$F" --hosts-per-leaf 2 --rate 100mbit --ecmp model \
	-o "$tmp/topo.yaml"
"$ICECTL" acl --topology "$tmp/topo.yaml" --fabric "$F" --out "$A" >"$tmp/acl.out" ||
	fail "icectl acl: $(cat "$tmp/acl.out")"
TLS_PORT=$(free_port)
redis-server --port 0 --tls-port "$TLS_PORT" --bind 127.0.0.1 --tls-cert-file server.crt \
	--tls-key-file server.key --tls-ca-cert-file ca.crt --tls-auth-clients yes \
	--aclfile "$A/users.acl" --dir "$tmp" --save '' --appendonly no >"$tmp/redis.log" 2>&1 &
redis_pid=$!
reader_pass=$(grep -v '^#' "$A/redis-reader.auth" | cut -d' ' -f2)
rtls() {
	redis-cli --tls --cacert ca.crt --cert client.crt --key client.key -h 127.0.0.1 \
		-p "$TLS_PORT" --user ice-reader --pass "$reader_pass" --no-auth-warning "$@"
}
wait_for 10 sh -c "$(declare -f rtls); TLS_PORT=$TLS_PORT reader_pass=$reader_pass rtls PING 2>/dev/null | grep -q PONG" ||
	fail "redis-server did not answer on its TLS port"

# ---- nothing gets in without TLS and a client certificate
out=$(timeout 3 redis-cli -h 127.0.0.1 -p "$TLS_PORT" PING 2>&1 || true)
grep -q PONG <<<"$out" && fail "a plain-text client was answered on the TLS port"
out=$(redis-cli --tls --cacert ca.crt -h 127.0.0.1 -p "$TLS_PORT" PING 2>&1 || true)
grep -q PONG <<<"$out" && fail "a TLS client without a certificate was answered"
echo "ok: plain text and TLS without a client certificate get no answer (${out:0:60})"

# ---- the tunnel (docs/security.md, "TLS")
TUN_PORT=$(free_port)
cat >"$tmp/ice-redis-tunnel.conf" <<CONF
foreground = yes
pid =
[ice-redis]
client = yes
accept = 127.0.0.1:$TUN_PORT
connect = 127.0.0.1:$TLS_PORT
cert = $tmp/client.crt
key = $tmp/client.key
CAfile = $tmp/ca.crt
verifyChain = yes
checkIP = 127.0.0.1
CONF
stunnel "$tmp/ice-redis-tunnel.conf" >"$tmp/stunnel.log" 2>&1 &
tun_pid=$!
wait_for 10 sh -c "redis-cli -p $TUN_PORT --user ice-reader --pass $reader_pass --no-auth-warning PING 2>/dev/null | grep -q PONG" ||
	fail "no answer through the tunnel"

# ---- the controller and icectl through the tunnel
"$ICECTL" keygen --out "$tmp" --name plan >/dev/null || fail "icectl keygen"
ICE_REDIS_AUTH=$A/redis-controller.auth "$ICE_CONTROLLER" --fabric "$F" \
	--topology "$tmp/topo.yaml" --redis "127.0.0.1:$TUN_PORT" --key "$tmp/plan.key" --id tls-a \
	>"$tmp/ctl.out" 2>"$tmp/ctl.log" &
ctl_pid=$!
wait_for 10 sh -c "[ \"\$(redis-cli -p $TUN_PORT --user ice-reader --pass $reader_pass --no-auth-warning GET 'ice:$F:{ctl}:leader')\" = tls-a ]" ||
	fail "the controller did not take the leader key through the tunnel"
wait_for 10 grep -q "^epoch" "$tmp/ctl.out" || fail "the controller published nothing through the tunnel"
ICE_REDIS_AUTH=$A/redis-reader.auth "$ICECTL" status --fabric "$F" --redis "127.0.0.1:$TUN_PORT" \
	>"$tmp/status.out" 2>&1 || fail "icectl status through the tunnel: $(cat "$tmp/status.out")"
grep -q "tls-a" "$tmp/status.out" || fail "icectl status does not name the leader: $(cat "$tmp/status.out")"
[ "$(rtls GET "ice:$F:{ctl}:leader")" = tls-a ] || fail "the leader key is not on the TLS server"
echo "ok: ice-controller and icectl status reach Redis only through the TLS tunnel (leader tls-a, $(grep -c '^epoch' "$tmp/ctl.out") plan(s))"
echo PASS
