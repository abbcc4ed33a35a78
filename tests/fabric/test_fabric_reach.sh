#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# All-pairs reachability (ping between every two hosts) on the default
# topology (2 spines, 2 leaves, 8 hosts), with ECMP by the kernel and by
# the BPF hash model; prints the `ice-fabric up` times.
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
	"$ICE_FABRIC" down "$name" || ice_fail "ice-fabric down $name failed"
done
echo "PASS"
