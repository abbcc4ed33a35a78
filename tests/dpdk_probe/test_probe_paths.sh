#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ice-probe path discovery on a test bed with ECMP by the kernel: the learned
# port -> path map of h1 -> h5 agrees, for every probed port, with
# `ip route get ... iif h1 ipproto udp sport S dport 4791` on leaf1; the raw
# and the DPDK backend (--no-huge, af_packet vdev) give the same map, and a
# DPDK prober gets health answers from a DPDK responder. With `ecmp: model`
# the map is checked against `ice-topo predict`.
# DPDK parts are skipped (with the reason) when DPDK is not built or cannot
# start here.
. "$(dirname "$0")/../fabric/lib_fabric.sh"
ICE_PROBE=${ICE_PROBE:-ice-probe}
ice_need_tool "$ICE_PROBE" jq

check_kernel_map() { # JSON FILE NAME: every port's spine matches ip route get
	local json=$1 name=$2 bad=0 n=0 sport path dev
	while read -r sport path; do
		dev=$(ip -n "ice$name-leaf1" -j route get 10.2.0.1 from 10.1.0.1 iif h1 ipproto udp \
			sport "$sport" dport 4791 | jq -r '.[0].dev')
		n=$((n + 1))
		[ "$path" = "leaf1>$dev>leaf2" ] || {
			echo "port $sport: probe says $path, leaf1 routes via $dev" >&2
			bad=$((bad + 1))
		}
	done < <(jq -r '.port_map | to_entries[] | "\(.key) \(.value)"' "$json")
	echo "$n ports checked, $bad mismatches"
	[ "$n" -gt 0 ] && [ "$bad" -eq 0 ]
}

probe() { # NAME NODE ARGS...: ice-probe inside a node (ice-fabric exec: bpffs, ICE_*)
	local name=$1 node=$2
	shift 2
	"$ICE_FABRIC" exec --fabric "$name" "$node" -- timeout 60 "$ICE_PROBE" "$@"
}

name=pk$ICE_SFX
file=$(ice_fab_gen "$name" --ecmp kernel)
ice_fab_up "$file" || ice_fail "ice-fabric up (kernel) failed"

# adaptive discovery (defaults), then a wider map: 16 ports per path
probe "$name" h1 paths 10.1.0.1 10.2.0.1 --json >"$ICE_TMP/raw.json" || ice_fail "paths (raw) failed"
jq -r '"raw, defaults: \(.paths | length) paths, \(.ports_tried) ports, \(.probes) probes, " +
	"ports per path \([.paths[].nports])"' "$ICE_TMP/raw.json"
check_kernel_map "$ICE_TMP/raw.json" "$name" || ice_fail "raw map disagrees with the kernel"
probe "$name" h1 paths 10.1.0.1 10.2.0.1 --json --min-ports 16 >"$ICE_TMP/raw16.json" ||
	ice_fail "paths (raw, 16 ports) failed"
jq -r '"raw, 16 per path: \(.ports_tried) ports, \(.probes) probes"' "$ICE_TMP/raw16.json"
check_kernel_map "$ICE_TMP/raw16.json" "$name" || ice_fail "raw map (16/path) disagrees"
# without the topology (names are addresses; no path count): extra_ports rule
probe "$name" h1 paths 10.1.0.1 10.2.0.1 --json --topo "" >"$ICE_TMP/notopo.json" ||
	ice_fail "paths (no topology) failed"
jq -r '"raw, no topology: \(.paths | length) paths, \(.ports_tried) ports, \(.probes) probes"' \
	"$ICE_TMP/notopo.json"
[ "$(jq '.paths | length' "$ICE_TMP/notopo.json")" -eq 2 ] || ice_fail "no topology: not 2 paths"

dpdk_skip=""
if probe "$name" h1 paths 10.1.0.1 10.2.0.1 --json --backend dpdk >"$ICE_TMP/dpdk.json" \
	2>"$ICE_TMP/dpdk.err"; then
	check_kernel_map "$ICE_TMP/dpdk.json" "$name" || ice_fail "DPDK map disagrees with the kernel"
	diff <(jq -S .port_map "$ICE_TMP/raw.json") <(jq -S .port_map "$ICE_TMP/dpdk.json") ||
		ice_fail "raw and DPDK backends learned different maps"
	jq -r '"dpdk: same map, \(.probes) probes, timestamps \(.timestamps)"' "$ICE_TMP/dpdk.json"
	# health over DPDK at both ends
	printf 'pairs:\n  - {src: 10.1.0.1, dst: 10.2.0.1}\n' >"$ICE_TMP/pl.yaml"
	probe "$name" h5 responder --src 10.2.0.1 --backend dpdk --duration 4s 2>"$ICE_TMP/resp.err" &
	ICE_PIDS+=($!)
	sleep 1.5
	probe "$name" h1 watch --json --src 10.1.0.1 --backend dpdk --pinglist "$ICE_TMP/pl.yaml" \
		--report-interval 500ms --duration 2s >"$ICE_TMP/dwatch.json" 2>"$ICE_TMP/dwatch.err" ||
		ice_fail "watch (dpdk): $(cat "$ICE_TMP/dwatch.err")"
	wait "${ICE_PIDS[-1]}"
	jq -s -r '.[-1].paths[] | "dpdk health: \(.path) \(.state) rcvd \(.rcvd)/\(.sent) " +
		"rtt p50 \(.rtt_p50_us // 0 | floor) us"' "$ICE_TMP/dwatch.json"
	[ "$(jq -s '[.[-1].paths[] | select(.state == "up" and .rcvd > 0)] | length' \
		"$ICE_TMP/dwatch.json")" -eq 2 ] || ice_fail "dpdk health: not both paths answered"
elif grep -q "not built" "$ICE_TMP/dpdk.err"; then
	dpdk_skip="DPDK backend not built (libdpdk not found)"
else
	dpdk_skip="DPDK could not start: $(tail -1 "$ICE_TMP/dpdk.err")"
fi
[ -z "$(ls /var/run/dpdk 2>/dev/null | grep '^iceprobe')" ] || ice_fail "DPDK runtime dirs left"
"$ICE_FABRIC" down "$name" || ice_fail "ice-fabric down $name failed"

# ecmp: model — the hash-model data path (ebpf ice_sw_ingress)
name=pm$ICE_SFX
file=$(ice_fab_gen "$name" --ecmp model)
ice_fab_up "$file" || ice_fail "ice-fabric up (model) failed"
if probe "$name" h1 paths 10.1.0.1 10.2.0.1 --json --max-ttl 4 --trace-timeout 100ms \
	>"$ICE_TMP/model.json" 2>"$ICE_TMP/model.err"; then
	bad=0
	for s in $(jq -r '.port_map | keys[]' "$ICE_TMP/model.json"); do
		want=$("$ICE_TOPO" predict "$file" h1 h5 "$s" | awk '{print $2">"$3">"$4}')
		got=$(jq -r --arg s "$s" '.port_map[$s]' "$ICE_TMP/model.json")
		[ "$want" = "$got" ] || { echo "port $s: $got, predicted $want" >&2; bad=$((bad + 1)); }
	done
	[ "$bad" -eq 0 ] || ice_fail "model: $bad ports disagree with ice-topo predict"
	echo "model: $(jq '.port_map | length' "$ICE_TMP/model.json") ports agree with ice-topo predict"
else
	ice_fail "ecmp: model: ice-probe paths failed: $(tail -1 "$ICE_TMP/model.err")"
fi
[ -z "$dpdk_skip" ] || echo "SKIPPED PART: $dpdk_skip"
echo "PASS"
