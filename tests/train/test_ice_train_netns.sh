#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# ice-train --rank across hosts: one process per network namespace
# (lib_netns.sh's star: veths on a bridge, MTU 1500, so the job's RoCE MTU
# is 1024, not loopback's 4096).
#   - a DP job with --efficiency (each group alone, then mixed, through
#     rank 0) ends 0 on both ranks, and rank 0 reports the efficiency;
#   - a host that vanishes without a word: a pipeline of two host stages;
#     at 4 s the link of rank VICTIM's host is cut (its bridge port down):
#     no FIN, no RST, both processes live on. Each must end within 30 s,
#     non-zero and not by timeout, saying why: its QP's peer timeout if it
#     had data in flight, else its bootstrap connection's keepalive
#     ("stopped answering"). Without the keepalive a rank waiting only to
#     receive waits forever.
#
# Needs root, ice-train ($ICE_TRAIN) and the examples ($ICE_TRAIN_EXAMPLES);
# exits 77 saying what is missing.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/integration/lib_netns.sh"

ice_need_root
ice_need_tool ip
TRAIN=${ICE_TRAIN:-$ROOT/build/train/run/ice-train}
EX=${ICE_TRAIN_EXAMPLES:-$ROOT/train}
[ -x "$TRAIN" ] || ice_skip "ice-train not built ($TRAIN)"
fail() { echo "FAIL: $*" >&2; exit 1; }

ice_star 2 1500 || fail "cannot build the namespaces"
DEVICES=h-fast,h-slow
RUN=(--model "$EX/models/mlp.yaml" --profiles "$ROOT/tests/train/prof_hosts_shared.yaml"
	--devices "$DEVICES" --scheme pp --steps 500 --warmup 1 --bootstrap 10.78.0.1:17811)

echo "## dp --efficiency, one rank per namespace"
for r in 1 0; do
	ip netns exec "${ICE_NS[r]}" timeout 60 "$TRAIN" --model "$EX/models/mlp.yaml" \
		--profiles "$EX/profiles/emu-2kind.yaml" --devices "emu-fast,emu-slow" --scheme dp \
		--steps 2 --warmup 1 --efficiency --bootstrap 10.78.0.1:17812 --rank "$r" \
		--addr "10.78.0.$((r + 1))" >"$ICE_TMP/eff$r" 2>&1 &
	ICE_PIDS+=($!)
	epid[r]=$!
done
for r in 0 1; do
	wait "${epid[r]}" || { cat "$ICE_TMP/eff$r"; fail "dp --efficiency: rank $r failed"; }
done
cat "$ICE_TMP/eff0"
grep -Eq 'efficiency = mixed samples/s .*: plan [0-9.]+%, even [0-9.]+%' "$ICE_TMP/eff0" ||
	fail "dp --efficiency: rank 0 printed no efficiency"
grep -q 'weights identical on all 2 ranks: yes' "$ICE_TMP/eff0" ||
	fail "dp --efficiency: the ranks' weights differ"

# cut VICTIM: both ranks run, rank VICTIM's bridge port goes down at 4 s
cut() {
	local victim=$1 r rc t0 t1 port=iceP${1}x$ICE_ID
	local -a pids=()
	for r in 0 1; do ip -n "$ICE_NS_BR" link set "iceP${r}x$ICE_ID" up; done
	for r in 0 1; do
		ip netns exec "${ICE_NS[r]}" timeout 60 "$TRAIN" "${RUN[@]}" --rank "$r" \
			--addr "10.78.0.$((r + 1))" >"$ICE_TMP/cut$victim.$r" 2>&1 &
		pids+=($!)
		ICE_PIDS+=($!)
	done
	sleep 4
	for r in 0 1; do
		kill -0 "${pids[r]}" 2>/dev/null ||
			{ cat "$ICE_TMP/cut$victim.$r"; fail "cut $victim: rank $r ended before the cut"; }
	done
	ip -n "$ICE_NS_BR" link set "$port" down
	t0=$(date +%s%N)
	for r in 0 1; do
		wait "${pids[r]}"
		rc=$?
		t1=$(date +%s%N)
		cat "$ICE_TMP/cut$victim.$r"
		[ "$rc" -ne 124 ] || fail "cut $victim: rank $r hung after the link was cut"
		[ "$rc" -ne 0 ] || fail "cut $victim: rank $r exited 0 after the link was cut"
		grep -Eq "stopped answering|silent|control connection .* failed" "$ICE_TMP/cut$victim.$r" ||
			fail "cut $victim: rank $r did not say that a peer went silent"
		echo "cut $victim: rank $r exited $rc, $(((t1 - t0) / 1000000)) ms after the cut"
		[ $(((t1 - t0) / 1000000000)) -lt 30 ] || fail "cut $victim: rank $r took over 30 s"
	done
}
cut 1
cut 0
echo "test_ice_train_netns: ok"
