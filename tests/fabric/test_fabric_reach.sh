#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# All-pairs reachability (ping between every two hosts) on the default
# topology (2 spines, 2 leaves, 8 hosts), with ECMP by the kernel and by
# the BPF hash model; prints the `ice-fabric up` times. Then leaf1:spine2
# goes down and up again: routes converge around it and come back.
. "$(dirname "$0")/lib_fabric.sh"
ice_need_tool ping

# hosts and addresses of a generated topology file: "h1 10.1.0.1" lines
hosts_of() {
	awk '/^  - name: h/{h=$3} /nics:/{match($0, /addr: [0-9.]+/); print h, substr($0, RSTART+6, RLENGTH-6)}' "$1"
}

all_pairs() {
	local name=$1 file=$2 src dst sa da n=0 bad
	mapfile -t H < <(hosts_of "$file")
	for src in "${H[@]}"; do
		(
			set -- $src
			for dst in "${H[@]}"; do
				set -- $src $dst
				[ "$1" = "$3" ] && continue
				ice_fab_exec "$name" "$1" ping -c1 -W2 -q "$4" >/dev/null ||
					echo "$1 -> $3 ($4)"
			done
		) >"$ICE_TMP/fail.$name.${src%% *}" &
	done
	wait
	bad=$(cat "$ICE_TMP"/fail."$name".*)
	n=${#H[@]}
	[ -z "$bad" ] || ice_fail "$name: unreachable pairs:"$'\n'"$bad"
	echo "$name: all $((n * (n - 1))) host pairs reachable"
}

for mode in kernel model; do
	name=r${mode:0:1}$ICE_SFX
	file=$(ice_fab_gen "$name" --ecmp "$mode")
	t0=$(date +%s%N)
	ice_fab_up "$file" || ice_fail "ice-fabric up ($mode) failed"
	echo "ice-fabric up, static routing, ECMP $mode: $((($(date +%s%N) - t0) / 1000000)) ms (target < 10 s)"
	hosts_of "$file" | grep -q . || ice_fail "no hosts parsed from $file"
	all_pairs "$name" "$file"
	# a link down: routing converges around it (leaf2 stops sending h1's
	# traffic to spine2, which lost leaf1), every pair still reachable;
	# back up: both spines again
	h1=$(hosts_of "$file" | awk '$1 == "h1" {print $2}')
	nh() { ip -n "ice$name-leaf2" route show "$h1/32" | grep -c "dev spine"; }
	[ "$(nh)" = 2 ] || ice_fail "$name: leaf2 has not 2 next hops to h1: $(ip -n "ice$name-leaf2" route show "$h1/32")"
	"$ICE_FABRIC" link --fabric "$name" leaf1:spine2 down || ice_fail "link down failed"
	[ "$(nh)" = 1 ] || ice_fail "$name: leaf2 still routes h1 over spine2 after leaf1:spine2 went down"
	all_pairs "$name" "$file"
	"$ICE_FABRIC" link --fabric "$name" leaf1:spine2 up || ice_fail "link up failed"
	[ "$(nh)" = 2 ] || ice_fail "$name: leaf2's route to h1 not back to 2 next hops"
	ip -n "ice$name-spine2" route show "$h1/32" | grep -q "dev leaf1" ||
		ice_fail "$name: spine2's route to h1 did not come back with the link"
	all_pairs "$name" "$file"
	"$ICE_FABRIC" down "$name" || ice_fail "ice-fabric down $name failed"
done
echo "PASS"
