#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# A host that vanishes without a word: a pipeline of two host stages, one
# ice-train --rank process per network namespace (lib_netns.sh's star). At
# 4 s the link of rank VICTIM's host is cut (its bridge port down): no FIN,
# no RST, both processes live on. Each must end within 30 s, non-zero and
# not by timeout, saying why: its QP's peer timeout if it had data in
# flight, else its bootstrap connection's keepalive ("stopped answering").
# Without the keepalive a stage waiting only to receive waits forever.
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
echo "test_ice_train_host_gone: ok"
