#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Collectives over a lossy network: four namespaces on a bridge, and a tc BPF
# program (tests/integration/ice_drop.bpf.c) on every host's veth egress that drops
# 1% of the RoCEv2 packets at random. Every collective must still produce
# the right result, and the transport must have resent packets. One run uses
# the program's deterministic mode (every 50th packet), checked against the
# program's own counters.
#
# Needs root, tc, bpftool, jq, ice-bench ($ICE_BENCH) and the compiled
# program ($ICE_DROP_BPF); exits 77 saying what is missing. ice-bench's
# results are read from its --json object.
set -u
. "$(dirname "$0")/lib_netns.sh"

ice_need_root
ice_need_tool ip tc bpftool jq
[ -n "${ICE_BENCH:-}" ] && [ -x "$ICE_BENCH" ] || ice_skip "ice-bench not built (ICE_BENCH)"
[ -n "${ICE_DROP_BPF:-}" ] && [ -f "$ICE_DROP_BPF" ] ||
	ice_skip "ice_drop.bpf.o not built (clang missing?)"

fail=0
ice_star 4 1500 || { echo "FAIL: cannot build the namespaces" >&2; exit 1; }
for ((i = 0; i < 4; i++)); do
	ip netns exec "${ICE_NS[i]}" tc qdisc add dev "${ICE_DEV[i]}" clsact &&
		ip netns exec "${ICE_NS[i]}" tc filter add dev "${ICE_DEV[i]}" egress \
			bpf da obj "$ICE_DROP_BPF" sec tc ||
		{ echo "FAIL: cannot attach $ICE_DROP_BPF" >&2; exit 1; }
done

# bench NAME ARGS...: run ice-bench on the four namespaces, check the result
# (the JSON object in $ICE_TMP/NAME.json, the table and logs in NAME.out).
bench() {
	local name=$1 out=$ICE_TMP/$1.out json=$ICE_TMP/$1.json
	shift
	echo "== $name: ice-bench $*"
	# veth MTU 1500: RoCE MTU 1024
	if ! timeout 300 "$ICE_BENCH" --netns "$(ice_ns_list)" --mtu 1024 --json "$@" \
		>"$json" 2>"$out"; then
		echo "FAIL: $name: ice-bench failed" >&2
		cat "$out" >&2
		fail=1
		return 1
	fi
	grep -E '^# (Out of bounds|rank 0 transport)' "$out"
	if ! jq -e '.wrong_total == 0 and ([.results[] | .out_of_place.wrong, .in_place.wrong]
		| all(. == 0)) and (.results | length > 0)' "$json" >/dev/null; then
		echo "FAIL: $name: wrong results" >&2
		cat "$out" "$json" >&2
		fail=1
		return 1
	fi
}

resent() {
	jq -r '.transport_rank0.resent // empty' "$ICE_TMP/$1.json"
}

bench allreduce-1pct -C allreduce -b 1K -e 4M -c 1
r=$(resent allreduce-1pct)
if [ -z "$r" ] || [ "$r" -eq 0 ]; then
	echo "FAIL: 1% loss but no retransmissions reported (resent '${r}')" >&2
	fail=1
fi
for coll in allreduce reducescatter allgather broadcast alltoall sendrecv; do
	bench "$coll" -C $coll -b 1K -e 256K -n 5 -w 1 -c 1
done

# Deterministic mode on rank 0's veth: drop every 50th RoCEv2 packet.
prog=$(ip netns exec "${ICE_NS[0]}" tc filter show dev "${ICE_DEV[0]}" egress |
	sed -n 's/.* id \([0-9][0-9]*\).*/\1/p' | head -1)
maps=$(bpftool prog show id "$prog" 2>/dev/null | sed -n 's/.*map_ids \([0-9,]*\).*/\1/p')
cfg_map= stats_map=
for m in ${maps//,/ }; do
	case "$(bpftool map show id "$m")" in
	*ice_drop_cfg*) cfg_map=$m ;;
	*ice_drop_stat*) stats_map=$m ;;
	esac
done
if [ -z "$cfg_map" ] || [ -z "$stats_map" ]; then
	echo "FAIL: cannot find ice_drop's maps (prog '$prog', maps '$maps')" >&2
	exit 1
fi
# every_n = 50, drop_ppm = 0, set = 1; counters reset
bpftool map update id "$cfg_map" key 0 0 0 0 value 0 0 0 0 50 0 0 0 1 0 0 0 &&
	for k in 0 1 2; do
		bpftool map update id "$stats_map" key $k 0 0 0 value 0 0 0 0 0 0 0 0
	done || { echo "FAIL: cannot configure ice_drop" >&2; exit 1; }
bench every50 -C sendrecv -b 64K -e 1M -n 5 -w 1 -c 1
u64() { # value of key $2 in map $1
	bpftool -j map lookup id "$1" key "$2" 0 0 0 |
		python3 -c 'import json,sys; print(int.from_bytes(bytes(int(b,16) for b in json.load(sys.stdin)["value"]), "little"))'
}
seen=$(u64 "$stats_map" 0)
dropped=$(u64 "$stats_map" 1)
echo "every-50th mode on rank 0's veth: $seen RoCEv2 packets seen, $dropped dropped"
if [ "$dropped" -ne $((seen / 50)) ] || [ "$dropped" -eq 0 ]; then
	echo "FAIL: expected $((seen / 50)) drops of $seen packets, counted $dropped" >&2
	fail=1
fi
[ $fail -eq 0 ] && echo "PASS"
exit $fail
