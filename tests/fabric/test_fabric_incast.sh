#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ECN at a switch egress: half load (h1 -> h5 paced at 100 Mbit/s over a
# 200 Mbit/s port) marks nothing and queues below Kmin; a 2:1 incast (h1
# and h2 on leaf1 both sending to h5 on leaf2 at full speed, ECT(0), over
# different spines so that the only bottleneck is leaf2's port to h5)
# marks CE there and peaks between Kmin and the buffer.
. "$(dirname "$0")/lib_fabric.sh"
ice_need_tool iperf3 jq

KMIN=$((32 * 1024)) BUF=$((256 * 1024)) # ice-topo gen defaults (see the file)
name=in$ICE_SFX
file=$(ice_fab_gen "$name")
grep -q 'ecn: {kmin: 32K, kmax: 128K' "$file" && grep -q 'buffer: 256K' "$file" ||
	ice_fail "the generated ECN profile changed; update KMIN/BUF"
ice_fab_up "$file" || ice_fail "ice-fabric up failed"

port_stats() { # the counters of leaf2's port toward h5
	"$ICE_FABRIC" stats "$name" --json |
		jq -r '.ports[] | select(.switch == "leaf2" and .port == "h5") |
			"\(.packets) \(.ce_marked) \(.drops) \(.peak_depth)"'
}

# a source port from SRC (iif on leaf1) to h5 that leaf1 sends via SPINE
sport_via() {
	local iif=$1 src=$2 spine=$3 p
	for ((p = 49152; p < 49152 + 200; p++)); do
		ip -n "ice$name-leaf1" route get 10.2.0.1 from "$src" iif "$iif" ipproto udp \
			sport $p dport 5201 | grep -q "dev $spine " && { echo $p; return; }
	done
	ice_fail "no source port from $src via $spine"
}

server() { # iperf3 server on h5 port $1, output in $ICE_TMP/srv$1.json
	ice_fab_exec "$name" h5 iperf3 -s -1 -J -p "$1" >"$ICE_TMP/srv$1.json" 2>&1 &
	ICE_PIDS+=($!)
}

client() { # HOST SPORT SERVERPORT RATE
	ice_fab_exec "$name" "$1" timeout 30 iperf3 -c 10.2.0.1 -p "$3" --cport "$2" -u \
		-b "$4" -l 1400 -S 2 -t 3 >"$ICE_TMP/cli$3.log" 2>&1
}

s1=$(sport_via h1 10.1.0.1 spine1)
s2=$(sport_via h2 10.1.0.3 spine2)

# half load, up to 3 runs. A host that takes the VM's CPU for longer than
# the TBF burst lasts (25000 B: 1.0 ms at 200 Mbit/s) lets the paced sender
# and every TBF on the way release what piled up in one burst, which queues
# at leaf2 with no fault of ours (seen on CI: 13 CE, peak 47245 B); such a
# run is void (ice-env-probe) and measured again.
half=void
for attempt in 1 2 3; do
	"$ICE_FABRIC" stats "$name" --new-peak >/dev/null || ice_fail "ice-fabric stats failed"
	read -r pk0 ce0 dr0 peak <<<"$(port_stats)"
	server 5201
	sleep 0.3
	ice_env_start 1.0
	client h1 "$s1" 5201 100M || ice_fail "iperf3 h1: $(cat "$ICE_TMP/cli5201.log")"
	ice_env_stop
	read -r pk ce dr peak <<<"$(port_stats)"
	pk=$((pk - pk0)) ce=$((ce - ce0)) dr=$((dr - dr0))
	void=""
	ice_env_void && void="; VOID"
	echo "half load (100 of 200 Mbit/s, attempt $attempt): leaf2->h5 $pk packets, $ce CE," \
		"$dr drops, peak queue $peak B (Kmin $KMIN); $ICE_ENV_TXT$void"
	[ "$pk" -gt 10000 ] || ice_fail "half load: only $pk packets counted"
	if [ "$ce" -eq 0 ] && [ "$peak" -lt "$KMIN" ]; then
		half=ok
		break
	fi
	[ -n "$void" ] || ice_fail "half load marked or queued"
done
"$ICE_FABRIC" stats "$name" --new-peak >/dev/null || ice_fail "ice-fabric stats failed"
read -r pk0 ce0 dr0 peak <<<"$(port_stats)"

# 2:1 incast
server 5201
server 5202
sleep 0.3
c0=($(ice_cpu_sample))
client h1 "$s1" 5201 300M &
p1=$!
client h2 "$s2" 5202 300M || ice_fail "iperf3 h2: $(cat "$ICE_TMP/cli5202.log")"
wait $p1 || ice_fail "iperf3 h1: $(cat "$ICE_TMP/cli5201.log")"
c1=($(ice_cpu_sample))
busy=$(((c1[0] - c0[0]) * 100 / (c1[0] - c0[0] + c1[1] - c0[1])))
read -r pk ce dr peak <<<"$(port_stats)"
pk=$((pk - pk0)) ce=$((ce - ce0)) dr=$((dr - dr0))
echo "2:1 incast (h1 via spine1 sport $s1, h2 via spine2 sport $s2): leaf2->h5 $pk packets," \
	"$ce CE ($((ce * 1000 / (pk > 0 ? pk : 1)))/1000), $dr drops, peak queue $peak B" \
	"(Kmin $KMIN, buffer $BUF); CPU busy $busy%"
[ "$ce" -gt 0 ] || ice_fail "incast: no CE marks"
[ "$peak" -ge "$KMIN" ] && [ "$peak" -le $((BUF + 1514)) ] ||
	ice_fail "incast: peak queue $peak outside [$KMIN, $BUF]"
[ "$half" = ok ] || ice_skip "the incast held, but every half-load run was void: the VM's host" \
	"took the CPU for longer than the TBF burst in >= $ICE_ENV_VOID_PCT % of each run"
echo "PASS"
