#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# test_nic_e2e: the host side of a hardware-RoCE deployment end to end, on
# one box: a real redis-server, a real ice-controller, two real ice-agents
# with the NIC backend (h1 on an upstream-mlx5 fixture tree, h2 on an
# out-of-tree one; ethtool and RDMA netlink replayed from the trees), and a
# 2-rank job over verbs (nic_e2e_app: the libibverbs and libnccl doubles
# under LD_PRELOAD=libice-ccl.so; no RDMA NIC and no GPU here). Checks:
#   - the plan is in force on each rank's QP (the port by
#     mlx5dv_modify_qp_udp_sport, the rate by ibv_modify_qp_rate_limit)
#     within 100 ms of the announcement, as the controller planned it;
#   - the policy's DCQCN profile is on both NICs (debugfs cc_params and
#     ecn/roce_rp), and the NICs' own values are back after the agents exit;
#   - the profile's class: the plan gives each QP priority 5 and traffic
#     class 136 (DSCP 34); the out-of-tree NIC enables DCQCN on priority 5;
#   - a QP connecting after the plan takes the plan's port for its peer and
#     the plan's traffic class (not the agent's default 106) from the file
#     the agent wrote;
#   - the fixture's counters reach the records the controller reads (the
#     QP's bound counters, the device counters).
# Environment: ICE_AGENT, ICE_CONTROLLER, ICE_NIC_FIXTURE, ICE_E2E_APP,
# ICE_CCL_LIB. Needs root (control blocks in /dev/shm, /run-like dirs).
set -u

fail() {
	echo "FAIL: $*" >&2
	for f in "$T"/*.log; do
		echo "---- $f" >&2
		tail -n 30 "$f" >&2
	done
	exit 1
}

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
	{ echo "SKIP: no redis-server"; exit 77; }
for v in ICE_AGENT ICE_CONTROLLER ICE_NIC_FIXTURE ICE_E2E_APP ICE_CCL_LIB; do
	eval "x=\${$v:-}"
	[ -n "$x" ] || { echo "SKIP: $v not set"; exit 77; }
done

T=$(mktemp -d /tmp/ice-nice2e-XXXXXX)
PIDS=""
F=nice2e
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	rm -f /dev/shm/ice-ctrl-10.255.77.1 /dev/shm/ice-ctrl-10.0.0.2
	[ -n "${ICE_KEEP:-}" ] && echo "kept $T" >&2 && return
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
SOCK=$T/redis.sock
R() { redis-cli -s "$SOCK" "$@"; }

redis-server --port 0 --unixsocket "$SOCK" --save "" --appendonly no --dir "$T" \
	>"$T/redis.log" 2>&1 &
PIDS="$PIDS $!"
i=0
while ! R PING >/dev/null 2>&1; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "redis-server did not start"; sleep 0.05
done

"$ICECTL" keygen --out "$T" --name plan >/dev/null || fail "icectl keygen"
cat >"$T/topo.yaml" <<EOF
name: $F
hash: {algorithm: crc32, seed: 1, fields: [src_ip, dst_ip, proto, src_port, dst_port]}
defaults: {link_rate: 100gbit, buffer: 1M, ecn: {kmin: 100K, kmax: 400K, pmax: 0.2}}
switches:
  - {name: spine1, tier: 2}
  - {name: spine2, tier: 2}
  - {name: leaf1, tier: 1}
  - {name: leaf2, tier: 1}
hosts:
  - {name: h1, nics: [{addr: 10.255.77.1/31}]}
  - {name: h2, nics: [{addr: 10.0.0.2/31}]}
links:
  - {a: h1, b: leaf1}
  - {a: h2, b: leaf2}
  - {a: leaf1, b: spine1}
  - {a: leaf1, b: spine2}
  - {a: leaf2, b: spine1}
  - {a: leaf2, b: spine2}
EOF
cat >"$T/policy.yaml" <<EOF
profiles:
  e2e: {rp_gd: 9, rp_ai_rate: 20, rp_min_rate: 10, priority: 5, dscp: 34}
default: e2e
EOF

"$ICE_NIC_FIXTURE" "$T/h1" upstream 1 4 2 >/dev/null || fail "fixture h1"
"$ICE_NIC_FIXTURE" "$T/h2" oot 1 4 2 >/dev/null || fail "fixture h2"
mkdir -m 755 "$T/run1" "$T/run2"

agent() { # host addr root run
	ICE_LOG=info "$ICE_AGENT" --nic ens1f0np0 --addr "$2" --host "$1" --fabric $F \
		--backend mlx5 --sysroot "$3" --nic-io replay --redis "unix:$SOCK" \
		--run-dir "$4" --interval 100ms --plan-pubkeys "$T/plan.pub" --epoch-file none \
		--tclass 106 --metrics-port 0 >"$T/agent-$1.log" 2>&1 &
	PIDS="$PIDS $!"
}
agent h1 10.255.77.1 "$T/h1" "$T/run1"
A1=$!
agent h2 10.0.0.2 "$T/h2" "$T/run2"
A2=$!
"$ICE_CONTROLLER" --fabric $F --topology "$T/topo.yaml" --redis "unix:$SOCK" \
	--key "$T/plan.key" --policy "$T/policy.yaml" --interval 10ms --qp-interval 20ms \
	--sports model --telem-interval 0 --lifetime 30s >"$T/ctl.out" 2>"$T/ctl.log" &
PIDS="$PIDS $!"
i=0
until [ "$(R EXISTS "ice:$F:{h1}:nic:ens1f0np0:alive")" = 1 ] &&
	[ "$(R EXISTS "ice:$F:{h2}:nic:ens1f0np0:alive")" = 1 ]; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "agents did not come up"; sleep 0.05
done

app() { # rank local peer run
	LD_PRELOAD="$ICE_CCL_LIB" ICE_AGENT_SOCK="$4/agent-$2.sock" \
		ICE_CCL_PLAN="$4/ccl-plan-%s.conf" ICE_CCL_LOG="$T/app$1-hook.log" \
		"$ICE_E2E_APP" "$2" "$3" "$1" "$T/go" "$T/go2" >"$T/app$1.out" 2>"$T/app$1.log" &
}
app 0 10.255.77.1 10.0.0.2 "$T/run1"
P0=$!
app 1 10.0.0.2 10.255.77.1 "$T/run2"
P1=$!
PIDS="$PIDS $P0 $P1"
sleep 1 # the QPs connected and published (the agents' QP records)
touch "$T/go"
# both ranks' plans in force: each app prints its first line then
i=0
until [ -s "$T/app0.out" ] && [ -s "$T/app1.out" ]; do
	kill -0 $P0 2>/dev/null && kill -0 $P1 2>/dev/null || break
	i=$((i + 1)); [ $i -lt 400 ] || break; sleep 0.025
done
[ -s "$T/app0.out" ] || fail "rank 0: no plan in force"
[ -s "$T/app1.out" ] || fail "rank 1: no plan in force"

json() { # line key file
	python3 -c "import json,sys; d=json.loads(open(sys.argv[1]).read().splitlines()[$1-1]); print(d['$2'])" "$3"
}
for r in 0 1; do
	h=h$((r + 1))
	out=$T/app$r.out
	ms=$(json 1 in_force_ms "$out")
	sport=$(json 1 sport "$out")
	kbps=$(json 1 rate_kbps "$out")
	qpn=$(json 1 qpn "$out")
	ep=$(json 1 epoch "$out")
	echo "rank $r ($h): QP $qpn sport $sport rate $kbps kbit/s (epoch $ep) in force $ms ms after the announcement"
	eval "SPORT$r=$sport"
	R GET "ice:$F:{$h}:plan" | python3 -c "
import json, sys
p = json.load(sys.stdin)['plan']
# a later epoch (republished as QP records come and go) must hold this QP
# as it was in force
assert p['epoch'] >= $ep, 'the plan went back (epoch %d, in force %d)' % (p['epoch'], $ep)
e = [e for e in p['entries'] if e['qpn'] == $qpn]
assert e, 'QP $qpn not in the plan of $h'
e = e[0]
assert e['sport'] == $sport, 'sport %d planned, %d in force' % (e['sport'], $sport)
assert e['start_mbps'] > 0 and e['start_mbps'] * 1000 == $kbps, \
    'rate %d Mbit/s planned, %d kbit/s in force (plan %s)' % (e['start_mbps'], $kbps, p['entries'])
assert e['dcqcn']['rp_gd'] == 9, 'the policy profile is not in the plan'
assert e.get('prio') == 5 and e.get('tclass') == 136, \
    'the profile class is not in the plan (prio %s tclass %s)' % (e.get('prio'), e.get('tclass'))
" || fail "$h: the QP's port or rate is not the plan's"
	python3 -c "import sys; sys.exit(0 if float('$ms') <= 100 else 1)" ||
		fail "rank $r: plan in force after $ms ms (target 100 ms)"
done
[ -s "$T/run1/ccl-plan-10.255.77.1.conf" ] || fail "h1: the agent wrote no plan file for the hook"
grep -Eq "^sport 10.0.0.2( [0-9/]+)* $SPORT0/136( |\$)" "$T/run1/ccl-plan-10.255.77.1.conf" ||
	fail "h1: the hook's plan file lacks port $SPORT0 with traffic class 136: $(cat "$T/run1/ccl-plan-10.255.77.1.conf")"

# a QP that connects now takes the plan's port towards its peer and its
# traffic class (the plan's 136, not the agent's default 106)
touch "$T/go2"
wait $P0 || fail "rank 0 failed"
wait $P1 || fail "rank 1 failed"
for r in 0 1; do
	eval "sport=\$SPORT$r"
	q2=$(json 2 qp2_sport "$T/app$r.out")
	[ "$q2" = "$sport" ] || fail "rank $r: a QP connecting later took port $q2, not the plan's $sport"
	[ "$(json 2 qp2_tclass "$T/app$r.out")" = 136 ] || fail "rank $r: a QP connecting later got tclass $(json 2 qp2_tclass "$T/app$r.out"), not the plan's 136"
done

# DCQCN on both NICs: upstream debugfs (device-wide), out-of-tree ecn (the
# profile's priority 5; 3, the agent's dcqcn_prio, untouched)
dbg=$T/h1/sys/kernel/debug/mlx5/0000:3b:00.0/cc_params
ecn=$T/h2/sys/class/net/ens1f0np0/ecn
[ "$(cat "$dbg/rp_gd")" = 9 ] && [ "$(cat "$dbg/rp_ai_rate")" = 20 ] &&
	[ "$(cat "$dbg/rp_min_rate")" = 10 ] || fail "h1: the profile is not in debugfs cc_params"
[ "$(cat "$ecn/roce_rp/rpg_gd")" = 9 ] && [ "$(cat "$ecn/roce_rp/rpg_ai_rate")" = 20 ] &&
	[ "$(cat "$ecn/roce_rp/enable/5")" = 1 ] && [ "$(cat "$ecn/roce_np/enable/5")" = 1 ] &&
	[ "$(cat "$ecn/roce_rp/enable/3")" = 0 ] ||
	fail "h2: the profile is not in ecn/roce_rp|roce_np on priority 5"

# the fixture's counters in what the controller reads: QP 256 of h1 has the
# counters bound to it (cc_tx_cnp_pkts = 9 x 1 x 2 at tick 2), h1's device
# counters in the NIC record and the :dev hash
cnp=$(R HGET "ice:$F:{h1}:qp:10.255.77.1:256" cnp_tx)
rem=$(R HGET "ice:$F:{h1}:qp:10.255.77.1:256" remote)
src=$(R HGET "ice:$F:{h1}:qp:10.255.77.1:256" src)
[ "$cnp" = 18 ] && [ "$rem" = 10.0.0.2 ] || fail "h1 QP 256: cnp_tx '$cnp' remote '$rem' (want 18, 10.0.0.2)"
case $src in *nic*event*|*event*nic*) ;; *) fail "h1 QP 256: src $src" ;; esac
[ -n "$(R HGET "ice:$F:{h1}:nic:ens1f0np0:dev" p1.hw.np_cnp_sent)" ] || fail "no :dev counters"
R HGET "ice:$F:{h1}:nic:ens1f0np0" dev | grep -q '"source":"mlx5"' || fail "no dev in the NIC record"
R HGET "ice:$F:{h2}:nic:ens1f0np0" pfc | grep -q '"lossless":\[3\]' ||
	fail "h2: the lossless priority 3 (DCB) is not in the NIC record"

# agents exit: the NICs' own DCQCN values back, the hook's plan files gone
kill "$A1" "$A2"
wait "$A1" "$A2" 2>/dev/null
[ "$(cat "$dbg/rp_gd")" = 11 ] && [ "$(cat "$dbg/rp_ai_rate")" = 5 ] ||
	fail "h1: debugfs not restored"
[ "$(cat "$ecn/roce_rp/rpg_gd")" = 11 ] && [ "$(cat "$ecn/roce_rp/enable/5")" = 0 ] ||
	fail "h2: ecn not restored"
[ ! -e "$T/run1/ccl-plan-10.255.77.1.conf" ] || fail "h1: the hook's plan file is left"
echo "PASS: test_nic_e2e"
