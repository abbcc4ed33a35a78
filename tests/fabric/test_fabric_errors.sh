#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Failure paths: bad topology files give their precise error (file:line,
# key, expectation) and `ice-fabric up` of them creates nothing; a failed
# up (--redis on a port already in use) leaves nothing behind; a second up
# of a fabric that is up is refused; `down` is idempotent and quiet; the
# management network reaches Redis from a host; `ice-fabric hash` refuses an
# unknown switch, a host, a bad seed in one line and changes nothing.
. "$(dirname "$0")/lib_fabric.sh"
ice_need_tool jq
fixtures=${ICE_TOPO_FIXTURES:-$(dirname "$0")/../topo}
[ -d "$fixtures" ] || ice_skip "no topology fixtures at $fixtures"

ice_links() { ip -br link | awk '$1 ~ /^ice/ {sub(/@.*/, "", $1); print $1}' | sort; }

# nothing of fabric NAME exists (links: compared with the list in $2)
nothing_of() {
	local name=$1 before=$2 left=
	ls /run/netns 2>/dev/null | grep -q "^ice$name-" && left+=" namespaces"
	[ -e "/run/ice/$name" ] && left+=" /run/ice/$name"
	[ -e "/sys/fs/bpf/ice$name" ] && left+=" /sys/fs/bpf/ice$name"
	[ "$(ice_links)" = "$before" ] || left+=" root links: $(comm -13 <(echo "$before") <(ice_links) | tr '\n' ' ')"
	[ -z "$left" ] || ice_fail "fabric $name left behind:$left"
}

# 1. bad files: the precise error, and nothing created
declare -A want=(
	[missing_field]="key 'switches[2].tier': missing required key 'tier'"
	[unknown_node]="key 'links[3].a': unknown node 'leaf9'"
	[duplicate_address]="duplicate address 10.9.0.1/31 (first used at line 9)"
	[bad_rate_unit]="key 'links[2].rate': expected a rate such as 200mbit"
	[disconnected]="host h2 (NIC eth0 on leaf2) cannot reach host h1"
	[unknown_hash]="key 'hash.algorithm': expected one of: crc32, crc32c"
)
before=$(ice_links)
n=0
for f in "$fixtures"/*.yaml; do
	base=$(basename "$f" .yaml)
	[ "$base" = ok ] && continue
	name=$(sed -n 's/^name: *//p' "$f")
	if "$ICE_FABRIC" up "$f" >"$ICE_TMP/out" 2>&1; then
		"$ICE_FABRIC" down "$name"
		ice_fail "up of $base was accepted"
	fi
	err=$(cat "$ICE_TMP/out")
	grep -Eq "^ice-fabric: $f:[0-9]+(:[0-9]+)?: " <<<"$err" ||
		ice_fail "$base: error without file:line: $err"
	if [ -n "${want[$base]:-}" ]; then
		grep -qF "${want[$base]}" <<<"$err" || ice_fail "$base: expected '${want[$base]}', got: $err"
		echo "  $base: $err"
	fi
	nothing_of "$name" "$before"
	n=$((n + 1))
done
[ "$n" -ge 6 ] || ice_fail "only $n bad fixtures found in $fixtures"
echo "$n bad topology files refused with file:line errors; nothing created"

# 2. a failed up leaves nothing: --redis on a port in use
ice_need_tool redis-server redis-cli
name=er$ICE_SFX
file=$(ice_fab_gen "$name")
port=$((20000 + ICE_SFX))
python3 -c "import socket, time
s = socket.socket(); s.bind(('0.0.0.0', $port)); s.listen(1); time.sleep(60)" &
ICE_PIDS+=($!)
sleep 0.3
before=$(ice_links)
if ice_fab_up "$file" --redis "$port" 2>"$ICE_TMP/err"; then
	ice_fail "up with --redis on a busy port succeeded"
fi
grep -q "cannot listen on .*:$port: Address already in use" "$ICE_TMP/err" ||
	ice_fail "unclear error: $(cat "$ICE_TMP/err")"
echo "failed up: $(grep -m1 'redis' "$ICE_TMP/err")"
nothing_of "$name" "$before"
pgrep -f "ice$name-|/run/ice/$name/" >/dev/null && ice_fail "processes of $name are left"
echo "failed up left nothing behind (namespaces, root links, /run/ice/$name, /sys/fs/bpf/ice$name)"

# 3. a second up is refused; Redis over the management network; down twice
port=$((port + 1))
ice_fab_up "$file" --redis "$port" >/dev/null || ice_fail "up failed"
if "$ICE_FABRIC" up "$file" 2>"$ICE_TMP/err"; then
	ice_fail "a second up of $name was accepted"
fi
grep -q "fabric '$name' is already up" "$ICE_TMP/err" || ice_fail "unclear: $(cat "$ICE_TMP/err")"
echo "second up refused: $(cat "$ICE_TMP/err")"
got=$("$ICE_FABRIC" exec --fabric "$name" h3 -- sh -c \
	'redis-cli -h "${ICE_REDIS%:*}" -p "${ICE_REDIS#*:}" ping') || true
[ "$got" = PONG ] || ice_fail "redis from h3 over the management network: '$got'"
echo "redis from h3 via ICE_REDIS: $got"
ice_fab_exec "$name" h1 ping -c1 -W2 -q 10.2.0.7 >/dev/null || ice_fail "the fabric broke"
# ice-fabric hash: one line naming what was expected, nothing changed
declare -A hash_want=(
	["leaf9 --seed 5"]="fabric $name has no switch 'leaf9': expected one of spine1, spine2, leaf1, leaf2"
	["h1 --seed 5"]="fabric $name: h1 is a host: expected a switch (spine1, spine2, leaf1, leaf2)"
	["leaf1 --seed x5"]="flag --seed: expected an integer in [0, 4294967295], got 'x5'"
	["leaf1 --seed 4294967296"]="flag --seed: expected an integer in [0, 4294967295]"
	["leaf1"]="flag --seed: required"
	["leaf1 --seed 0"]="seed 0: expected 1..4294967295 for kernel ECMP"
)
for a in "${!hash_want[@]}"; do
	if "$ICE_FABRIC" hash --fabric "$name" $a >"$ICE_TMP/out" 2>&1; then
		ice_fail "hash $a was accepted"
	fi
	[ "$(wc -l <"$ICE_TMP/out")" = 1 ] || ice_fail "hash $a: not one line: $(cat "$ICE_TMP/out")"
	grep -qF "${hash_want[$a]}" "$ICE_TMP/out" || ice_fail "hash $a: expected '${hash_want[$a]}', got: $(cat "$ICE_TMP/out")"
	echo "  hash $a: $(cat "$ICE_TMP/out")"
done
grep -q kernel_hash_seed: "/run/ice/$name/topo.yaml" && ! grep -q "leaf1.*kernel_hash_seed" "/run/ice/$name/topo.yaml" ||
	ice_fail "a refused hash changed the fabric's topology"
"$ICE_FABRIC" down "$name" >"$ICE_TMP/out" 2>&1 || ice_fail "down failed: $(cat "$ICE_TMP/out")"
"$ICE_FABRIC" down "$name" >"$ICE_TMP/out" 2>&1 || ice_fail "second down failed: $(cat "$ICE_TMP/out")"
[ -s "$ICE_TMP/out" ] && ice_fail "second down was not quiet: $(cat "$ICE_TMP/out")"
nothing_of "$name" "$before"
echo "down twice: ok, the second silent"
echo "PASS"
