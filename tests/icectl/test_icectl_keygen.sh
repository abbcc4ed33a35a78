#!/usr/bin/env bash
# icectl keygen: the plans' Ed25519 key pair, and what the daemons say about
# key files (no Redis):
#   - NAME.key (0600, PEM PKCS#8) and NAME.pub (0644, PEM public key); the
#     key id printed is the first 8 bytes of SHA-256 over the raw public key
#     (checked here from the file with Python's own base64 and hashlib);
#   - a second run never overwrites a key; a bad --name is refused;
#   - ice-controller refuses to start with the public key, a 0644 private key
#     or an old HMAC key file, naming the file and what it expected, and
#     logs the key id it signs with when the key is right.
set -euo pipefail
. "$(dirname "$0")/lib_icectl.sh"
icectl_test keygen "" python3

out=$("$ICECTL" keygen --out "$tmp" --name k1) || fail "keygen: $out"
kid=$(sed -n 's/^key id \([0-9a-f]\{16\}\)$/\1/p' <<<"$out")
[ -n "$kid" ] || fail "no key id printed: $out"
[ "$(stat -c %a "$tmp/k1.key")" = 600 ] || fail "k1.key is $(stat -c %a "$tmp/k1.key"), expected 600"
[ "$(stat -c %a "$tmp/k1.pub")" = 644 ] || fail "k1.pub is $(stat -c %a "$tmp/k1.pub"), expected 644"
head -1 "$tmp/k1.key" | grep -qx -- "-----BEGIN PRIVATE KEY-----" || fail "k1.key is not PKCS#8 PEM"
head -1 "$tmp/k1.pub" | grep -qx -- "-----BEGIN PUBLIC KEY-----" || fail "k1.pub is not a PEM public key"
want=$(python3 - "$tmp/k1.pub" <<'PY'
import base64, hashlib, sys
der = base64.b64decode("".join(l for l in open(sys.argv[1]).read().split("\n") if l and not l.startswith("-----")))
# SubjectPublicKeyInfo of Ed25519: 12 bytes of header (OID 1.3.101.112), then the raw key
assert len(der) == 44 and der[:12] == bytes.fromhex("302a300506032b6570032100"), der.hex()
print(hashlib.sha256(der[12:]).hexdigest()[:16])
PY
) || fail "k1.pub is not an Ed25519 public key"
[ "$kid" = "$want" ] || fail "key id $kid, expected $want (SHA-256 of the raw public key)"
json=$("$ICECTL" keygen --out "$tmp" --name k2 --json)
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert len(d["kid"]) == 16 and d["pub"].endswith("/k2.pub"), d' "$json" ||
	fail "--json: $json"
echo "ok: k1.key 0600, k1.pub 0644, key id $kid = SHA-256(raw public key)[0:8]"

cp "$tmp/k1.key" "$tmp/k1.key.orig"
set +e
out=$("$ICECTL" keygen --out "$tmp" --name k1 2>&1)
code=$?
set -e
[ "$code" != 0 ] || fail "keygen overwrote k1"
grep -q "cannot create $tmp/k1.key: File exists (keys are never overwritten" <<<"$out" || fail "overwrite: $out"
cmp -s "$tmp/k1.key" "$tmp/k1.key.orig" || fail "k1.key changed"
set +e
out=$("$ICECTL" keygen --out "$tmp" --name "../x" 2>&1)
code=$?
set -e
[ "$code" = 2 ] && grep -q -- "--name '../x'" <<<"$out" || fail "--name ../x: exit $code, $out"
echo "ok: an existing key is never overwritten; a bad --name refused"

# the controller: which key files it refuses, before it touches Redis
if [ -n "${ICE_CONTROLLER:-}" ]; then
	"$ICE_TOPO" gen leaf-spine --spines 2 --leaves 2 --hosts-per-leaf 1 --name icekg \
		-o "$tmp/topo.yaml" >/dev/null || fail "ice-topo gen"
	cp "$tmp/k1.pub" "$tmp/pub.key"
	chmod 600 "$tmp/pub.key"
	cp "$tmp/k1.key" "$tmp/open.key"
	chmod 644 "$tmp/open.key"
	printf '0123456789abcdef0123456789abcdef' >"$tmp/hmac.key"
	chmod 600 "$tmp/hmac.key"
	for c in "pub.key:$tmp/pub.key:1: a 'PUBLIC KEY' block, a public key" \
		"open.key:private key file $tmp/open.key is accessible by group or others (mode 0644)" \
		"hmac.key:$tmp/hmac.key: holds no PEM block; expected an Ed25519 private key in PEM PKCS#8"; do
		set +e
		timeout 10 "$ICE_CONTROLLER" --fabric icekg --topology "$tmp/topo.yaml" \
			--redis "unix:$tmp/none.sock" --key "$tmp/${c%%:*}" --id kg >"$tmp/ctl.out" 2>&1
		code=$?
		set -e
		[ "$code" != 0 ] && [ "$code" != 124 ] || fail "ice-controller ran with ${c%%:*} (exit $code)"
		grep -qF "${c#*:}" "$tmp/ctl.out" || fail "no reason for ${c%%:*}: $(cat "$tmp/ctl.out")"
	done
	echo "ok: ice-controller refuses a public key, a 0644 private key, an HMAC key"
	set +e
	timeout 3 "$ICE_CONTROLLER" --fabric icekg --topology "$tmp/topo.yaml" \
		--redis "unix:$tmp/none.sock" --key "$tmp/k1.key" --id kg --log info >"$tmp/ctl.out" 2>&1
	set -e
	grep -q "plans signed with Ed25519 key id $kid" "$tmp/ctl.out" ||
		fail "the controller did not say its key id: $(head -5 "$tmp/ctl.out")"
	echo "ok: ice-controller signs with key id $kid"
fi
