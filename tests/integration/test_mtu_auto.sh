#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# The RoCE MTU follows the interfaces, as a NIC's active MTU follows its
# netdev's: with no --mtu, two ranks on 9000-byte links use 4096; when one
# rank's link is 1500 bytes, both use 1024 (the job takes its smallest rank's,
# as an RC QP takes the smaller active MTU at RTR) and the transfer completes
# with no packet refused for its size.
#
# Needs root and ice-perf ($ICE_PERF); exits 77 saying what is missing.
set -u
. "$(dirname "$0")/lib_netns.sh"

ice_need_root
ice_need_tool ip python3
[ -n "${ICE_PERF:-}" ] && [ -x "$ICE_PERF" ] || ice_skip "ice-perf not built (ICE_PERF)"

ice_star 2 9000 || { echo "FAIL: cannot build the namespaces" >&2; exit 1; }

# run_pair TAG: one ice-perf rank per namespace, separate processes
run_pair() {
	local tag=$1 pid rc=0
	ip netns exec "${ICE_NS[1]}" "$ICE_PERF" --rank 1 --bootstrap 10.78.0.1:17811 \
		--addr 10.78.0.2 -n 200 --line-rate 1gbit --json \
		>"$ICE_TMP/$tag.r1.json" 2>"$ICE_TMP/$tag.r1.log" &
	pid=$!
	ICE_PIDS+=($pid)
	timeout 60 ip netns exec "${ICE_NS[0]}" "$ICE_PERF" --rank 0 --bootstrap 10.78.0.1:17811 \
		--addr 10.78.0.1 -n 200 --line-rate 1gbit --json \
		>"$ICE_TMP/$tag.r0.json" 2>"$ICE_TMP/$tag.r0.log" || rc=$?
	wait "$pid" || rc=$((rc ? rc : 1))
	if [ "$rc" -ne 0 ]; then
		echo "FAIL: $tag: ice-perf exited $rc" >&2
		cat "$ICE_TMP/$tag".r*.log >&2
		exit 1
	fi
}

mtu_of() {
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["mtu"])' "$1"
}

run_pair jumbo
got=$(mtu_of "$ICE_TMP/jumbo.r0.json")
echo "links 9000/9000: RoCE MTU $got"
[ "$got" = 4096 ] || { echo "FAIL: expected RoCE MTU 4096 on 9000-byte links" >&2; exit 1; }

ip -n "${ICE_NS[1]}" link set "${ICE_DEV[1]}" mtu 1500
run_pair mixed
got=$(mtu_of "$ICE_TMP/mixed.r0.json")
echo "links 9000/1500: RoCE MTU $got"
[ "$got" = 1024 ] || { echo "FAIL: expected RoCE MTU 1024 with a 1500-byte rank" >&2; exit 1; }
if grep -q "larger than the path MTU" "$ICE_TMP"/mixed.r*.log; then
	echo "FAIL: a packet was refused for its size" >&2
	exit 1
fi
echo "PASS"
