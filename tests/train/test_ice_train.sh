#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# ice-train end to end on the example files (two emulated device kinds,
# train/profiles/emu-2kind.yaml; the 24-layer MLP, train/models/mlp.yaml):
#   - data parallel, planned split: all ranks end with identical weights,
#     the predictor's step and its error are printed; the planner's chunks
#     (forward and backward layer by layer over a chunk) end with the
#     same weights as the classic order (--dp-tail 1); the sharded optimizer
#     step (reduce-scatter, update of each rank's part, all-gather) ends
#     with the same weights as the replicated one (all-reduce, every rank
#     updates everything: two ranks sum in the same order either way);
#   - pipeline parallel with --efficiency (zero-bubble schedule, the
#     default): every activation and gradient arrived intact, the efficiency
#     table (plan and even) and the per-stage waits are printed, --trace
#     writes every rank's events (F, B and W of every micro-batch);
#   - pipeline parallel, zero bubble against 1F1B on the same split: the
#     same weights at the end, bit for bit;
#   - pipeline stages on host memory (three, both schedules) with their
#     communication inline and on a thread of its own (--comm-thread):
#     the same messages, weights and loss, bit for bit;
#   - gradients reduced in bf16 (--grad-dtype): identical weights on the
#     ranks and in both optimizer modes, not those of fp32; weights
#     gathered in bf16 too (--param-dtype): identical on the ranks; the
#     loss after three steps within 1 % of fp32's; refused for PP,
#     --param-dtype for the replicated optimizer;
#   - data parallel with a CUDA rank on the runtime double and a CPU rank,
#     both optimizer modes: the same weights on both ranks and in both;
#     with the bf16 exchange, which the CUDA rank converts on the device,
#     the weights of two host ranks; updating on the device (fp32 and bf16
#     gradients; a pipeline stage) also the weights of host ranks, and a
#     re-plan that moves layers off the device stage the loss of the job
#     kept on its split, with two stages and with three (the device
#     stage's layers to both others: only the layers that change stage
#     move, each from its old rank to its new one); and the double's
#     synchronisations made to hang (a kernel that never finishes): the
#     device watchdog ends the CUDA rank after --stall-timeout, naming
#     the call, DP and PP;
#   - --json gives one valid JSON object with the figures, with --repeat
#     every run's throughput and place in its repeat (each repeat starts
#     at the next job), each rank's own speed in every run and each
#     repeat's efficiency;
#   - ice-plan --cores prices CPU contention (two host devices, one on a
#     0.4-core quota), with a bf16 exchange fewer bytes' and the
#     conversions'; without --cores the conversions as time on each
#     bucket's path only; refuses --cpu-ar-ns without --cores and
#     --param-dtype bf16 with the replicated optimizer; --pp-micro-batch
#     auto plans every stated size and keeps the shortest, the planner's
#     split, the even split and each device group alone each at its own;
#   - --refine predicts again after the warm-up from the speeds the ranks
#     measured in it, --save-profiles writes the speeds into a profile file.
# Figures are printed, never asserted (benchmarks print). Exits 77 when
# something it needs is absent. Ranks use 127.21.0.x (loopback).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TRAIN=${ICE_TRAIN:-$ROOT/build/train/run/ice-train}
EX=${ICE_TRAIN_EXAMPLES:-$ROOT/train}
PROF=$EX/profiles/emu-2kind.yaml
MODEL=$EX/models/mlp.yaml
for f in "$TRAIN" "$PROF" "$MODEL"; do
	[ -e "$f" ] || { echo "test_ice_train: skipped: $f is absent" >&2; exit 77; }
done
command -v python3 >/dev/null || { echo "test_ice_train: skipped: needs python3" >&2; exit 77; }
TMP=$(mktemp -d /tmp/ice-train-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
COMMON=(--model "$MODEL" --profiles "$PROF" --devices emu-fast,emu-slow)
# train OUT SECONDS ARGS...: run ice-train into $TMP/OUT, show it, fail on error
train() {
	local out=$1 secs=$2 rc
	shift 2
	timeout "$secs" "$TRAIN" "${COMMON[@]}" "$@" >"$TMP/$out" 2>&1
	rc=$?
	cat "$TMP/$out"
	[ "$rc" -eq 0 ] || fail "ice-train $* exited $rc"
}

echo "## dp, planned split"
train dp 120 --scheme dp --split plan --steps 2 --warmup 1
grep -q 'weights identical on all 2 ranks: yes' "$TMP/dp" || fail "dp: no weights-identical line"
grep -Eq 'predicted step [0-9.]+ s, measured [0-9.]+ s: error [-+][0-9.]+%' "$TMP/dp" ||
	fail "dp: no prediction line"
grep -q '(emulated)' "$TMP/dp" || fail "dp: emulated devices not labelled"
grep -Eq 'CPU: [0-9.]+ cores busy' "$TMP/dp" || fail "dp: no CPU line"

echo "## dp, the classic order (one micro-batch's backward for the all-reduce)"
# the tail changes the order of the work, not the sums: the same weights
train dp-t1 120 --scheme dp --split plan --steps 2 --warmup 1 --dp-tail 1
grep -Eq 'layer by layer over the last micro-batches .*: 1 1 per rank' "$TMP/dp-t1" ||
	fail "dp --dp-tail 1: no tail line"
grep -Eq 'layer by layer over the last micro-batches .*: ([2-9]|[1-9][0-9]+) [0-9]+ per rank' \
	"$TMP/dp" || fail "dp: the planner gave the fast rank no tail longer than one"
w_auto=$(grep -o 'fnv1a [0-9a-f]*' "$TMP/dp")
w_t1=$(grep -o 'fnv1a [0-9a-f]*' "$TMP/dp-t1")
[ -n "$w_auto" ] && [ "$w_auto" = "$w_t1" ] ||
	fail "dp: tail auto and tail 1 end with different weights ('$w_auto' / '$w_t1')"

echo "## dp, replicated optimizer step against the sharded one (the default)"
grep -Eq 'optimizer step: sharded, predicted 0\.0079 0\.0079 s per rank' "$TMP/dp" ||
	fail "dp: no sharded optimizer line with equal predicted updates"
train dp-rep 120 --scheme dp --split plan --steps 2 --warmup 1 --optimizer replicated
grep -Eq 'optimizer step: replicated, predicted 0\.0110 0\.0275 s per rank' "$TMP/dp-rep" ||
	fail "dp --optimizer replicated: no replicated optimizer line"
w_rep=$(grep -o 'fnv1a [0-9a-f]*' "$TMP/dp-rep")
[ "$w_auto" = "$w_rep" ] ||
	fail "dp: sharded and replicated optimizer end with different weights ('$w_auto' / '$w_rep')"

echo "## dp, gradients reduced in bf16, both optimizer modes"
# rounded to bf16 and summed so in either mode (two ranks: one rounding of
# the sum), widened back for the fp32 update: identical weights on both
# ranks and in both modes, not those of fp32
for o in sharded replicated; do
	train "dp-bf16-$o" 120 --scheme dp --split plan --steps 2 --warmup 1 --optimizer $o \
		--grad-dtype bf16
	grep -q 'weights identical on all 2 ranks: yes' "$TMP/dp-bf16-$o" ||
		fail "dp --grad-dtype bf16 --optimizer $o: weights differ between the ranks"
	grep -Eq "optimizer step: $o, .* gradients reduced in bf16" "$TMP/dp-bf16-$o" ||
		fail "dp --grad-dtype bf16 --optimizer $o: no bf16 line"
done
w_b16=$(grep -o 'fnv1a [0-9a-f]*' "$TMP/dp-bf16-sharded")
[ -n "$w_b16" ] && [ "$w_b16" = "$(grep -o 'fnv1a [0-9a-f]*' "$TMP/dp-bf16-replicated")" ] ||
	fail "dp --grad-dtype bf16: sharded and replicated end with different weights"
[ "$w_b16" != "$w_auto" ] || fail "dp --grad-dtype bf16: the weights of fp32 (bf16 not used?)"
# the weights gathered in bf16 too: each rank updates its fp32 master part,
# all compute on the gathered rounded weights, identical on both ranks
train dp-bf16-w 120 --scheme dp --split plan --steps 2 --warmup 1 --grad-dtype bf16 \
	--param-dtype bf16
grep -q 'weights identical on all 2 ranks: yes' "$TMP/dp-bf16-w" ||
	fail "dp --param-dtype bf16: weights differ between the ranks"
grep -Eq 'gradients reduced in bf16, weights gathered in bf16' "$TMP/dp-bf16-w" ||
	fail "dp --param-dtype bf16: no bf16 line"
[ "$(grep -o 'fnv1a [0-9a-f]*' "$TMP/dp-bf16-w")" != "$w_b16" ] ||
	fail "dp --param-dtype bf16: the weights of --grad-dtype bf16 alone (not gathered in bf16?)"
# the loss falls as fp32's does: after three steps within 1 % of fp32's
# (a rounding or widening that lost or scaled the sums would not be)
python3 - "$TMP/dp" "$TMP/dp-bf16-sharded" "$TMP/dp-bf16-w" <<'PY' || fail "dp bf16: the loss is not fp32's"
import re, sys
def loss(f):
    m = re.search(r"loss ([-0-9.e+]+), first step's ([-0-9.e+]+)", open(f).read())
    assert m, f
    return float(m.group(1)), float(m.group(2))
(l32, f32), *rest = (loss(f) for f in sys.argv[1:])
assert l32 < 0.9 * f32, (l32, f32)
for f, (l, first) in zip(sys.argv[2:], rest):
    assert l < 0.9 * first and abs(l / l32 - 1) < 0.01, (f, l, l32)
print("dp loss after 3 steps: fp32 %.6g, bf16 gradients %.6g, bf16 both %.6g (first %.6g)"
      % (l32, rest[0][0], rest[1][0], f32))
PY
# and they train: after one step they are not those after three (an update
# lost on the master copy would leave the starting weights)
train dp-bf16-w1 120 --scheme dp --split plan --steps 1 --warmup 0 --grad-dtype bf16 \
	--param-dtype bf16
[ "$(grep -o 'fnv1a [0-9a-f]*' "$TMP/dp-bf16-w1")" != "$(grep -o 'fnv1a [0-9a-f]*' "$TMP/dp-bf16-w")" ] ||
	fail "dp --param-dtype bf16: the same weights after one step and after three"
"$TRAIN" "${COMMON[@]}" --scheme dp --optimizer replicated --param-dtype bf16 >"$TMP/rep-w16" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q 'sharded optimizer only' "$TMP/rep-w16" ||
	fail "dp replicated --param-dtype bf16: expected exit 2, got $rc: $(cat "$TMP/rep-w16")"
"$TRAIN" "${COMMON[@]}" --scheme pp --grad-dtype bf16 >"$TMP/pp-bf16" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q 'data parallel only' "$TMP/pp-bf16" ||
	fail "pp --grad-dtype bf16: expected exit 2 and 'data parallel only', got $rc: $(cat "$TMP/pp-bf16")"

echo "## dp with a CUDA rank (the runtime double, tests/device/fake_devrt.c) and a CPU rank"
# the device rank's gradient goes through host memory for the sharded
# reduce-scatter (and for any bf16 reduction), its update runs on the
# device and its weights come back after the all-gather: the same weights
# on both ranks and in both optimizer modes, in fp32 and in bf16
if [ -n "${ICE_FAKE_CUDA_LIB:-}" ]; then
	cat >"$TMP/fake.yaml" <<'EOF'
devices:
  - {name: fgpu, kind: cuda, gflops: 10, mem_gbps: 20, h2d_gbps: 5, d2h_gbps: 5, reduce_gbps: 5}
  - {name: cpu, kind: host, gflops: 10, mem_gbps: 10, h2d_gbps: 5, d2h_gbps: 5, reduce_gbps: 5}
EOF
	built=1
	for g in fp32 bf16; do
		for o in sharded replicated; do
			ICE_CUDA_LIB=$ICE_FAKE_CUDA_LIB timeout 120 "$TRAIN" --model "$MODEL" \
				--profiles "$TMP/fake.yaml" --devices fgpu,cpu --scheme dp --steps 1 \
				--warmup 1 --split even --optimizer $o --grad-dtype $g >"$TMP/dev-$o-$g" 2>&1
			rc=$?
			tail -n 3 "$TMP/dev-$o-$g"
			if [ "$rc" -eq 2 ] && grep -q 'not built in' "$TMP/dev-$o-$g"; then
				echo "(the CUDA backend is not built: skipped)"
				built=0
				break 2
			fi
			[ "$rc" -eq 0 ] || fail "dp fgpu,cpu --optimizer $o --grad-dtype $g exited $rc"
			grep -q 'weights identical on all 2 ranks: yes' "$TMP/dev-$o-$g" ||
				fail "dp fgpu,cpu --optimizer $o --grad-dtype $g: weights differ between the ranks"
		done
		[ "$(grep -o 'fnv1a [0-9a-f]*' "$TMP/dev-sharded-$g")" = \
			"$(grep -o 'fnv1a [0-9a-f]*' "$TMP/dev-replicated-$g")" ] ||
			fail "dp fgpu,cpu --grad-dtype $g: sharded and replicated end with different weights"
	done
	if [ "$built" = 1 ]; then
		[ "$(grep -o 'fnv1a [0-9a-f]*' "$TMP/dev-sharded-fp32")" != \
			"$(grep -o 'fnv1a [0-9a-f]*' "$TMP/dev-sharded-bf16")" ] ||
			fail "dp fgpu,cpu --grad-dtype bf16: the weights of fp32 (bf16 not used?)"
		# the weights gathered in bf16 into the device's memory
		ICE_CUDA_LIB=$ICE_FAKE_CUDA_LIB timeout 120 "$TRAIN" --model "$MODEL" \
			--profiles "$TMP/fake.yaml" --devices fgpu,cpu --scheme dp --steps 1 \
			--warmup 1 --split even --grad-dtype bf16 --param-dtype bf16 >"$TMP/dev-w16" 2>&1 ||
			fail "dp fgpu,cpu --param-dtype bf16 failed: $(cat "$TMP/dev-w16")"
		grep -q 'weights identical on all 2 ranks: yes' "$TMP/dev-w16" ||
			fail "dp fgpu,cpu --param-dtype bf16: weights differ between the ranks"
		# the device rank rounds and widens on the device (the double runs
		# the plugin's conversions on the CPU): the weights of two host ranks
		timeout 120 "$TRAIN" --model "$MODEL" --profiles "$TMP/fake.yaml" --devices cpu,cpu \
			--scheme dp --steps 1 --warmup 1 --split even --grad-dtype bf16 --param-dtype bf16 \
			>"$TMP/host-w16" 2>&1 || fail "dp cpu,cpu --param-dtype bf16 failed"
		[ "$(grep -o 'fnv1a [0-9a-f]*' "$TMP/dev-w16")" = \
			"$(grep -o 'fnv1a [0-9a-f]*' "$TMP/host-w16")" ] ||
			fail "dp bf16: converted on the device, the weights are not the host's"
		grep -q 'rank 0 (cuda) converts whole buckets on the device' "$TMP/dev-w16" ||
			fail "dp fgpu,cpu bf16: the report does not say the device converts"
		grep -q 'optimizer: rank 0 (cuda) keeps its fp32 master on the device' "$TMP/dev-w16" ||
			fail "dp fgpu,cpu --param-dtype bf16: the report does not say where the master is"
		# the CUDA rank updates on the device (dev_mem_ops.sgd; the double
		# runs dev_sgd, as the plugin's kernel does bit for bit): with fp32
		# weights, in both optimizer modes, fp32 and bf16 gradients (widened
		# on the device), and in a pipeline, the weights of two host ranks
		for g in fp32 bf16; do
			grep -q 'optimizer: rank 0 (cuda) keeps its fp32 master on the device' \
				"$TMP/dev-sharded-$g" ||
				fail "dp fgpu,cpu --grad-dtype $g: the report does not say the device updates"
			timeout 120 "$TRAIN" --model "$MODEL" --profiles "$TMP/fake.yaml" \
				--devices cpu,cpu --scheme dp --steps 1 --warmup 1 --split even --grad-dtype $g \
				>"$TMP/host-$g" 2>&1 || fail "dp cpu,cpu --grad-dtype $g failed"
			[ "$(grep -o 'fnv1a [0-9a-f]*' "$TMP/dev-sharded-$g")" = \
				"$(grep -o 'fnv1a [0-9a-f]*' "$TMP/host-$g")" ] ||
				fail "dp --grad-dtype $g: updated on the device, the weights are not the host's"
		done
		for d in fgpu,cpu cpu,cpu; do
			ICE_CUDA_LIB=$ICE_FAKE_CUDA_LIB timeout 120 "$TRAIN" --model "$MODEL" \
				--profiles "$TMP/fake.yaml" --devices $d --scheme pp --split even \
				--steps 2 --warmup 1 >"$TMP/pp-$d" 2>&1 || fail "pp $d failed: $(cat "$TMP/pp-$d")"
		done
		w=$(grep -o 'weights (fnv1a per stage): .*' "$TMP/pp-fgpu,cpu")
		[ -n "$w" ] && [ "$w" = "$(grep -o 'weights (fnv1a per stage): .*' "$TMP/pp-cpu,cpu")" ] ||
			fail "pp fgpu,cpu: a stage updated on the device ends with other weights than on the host"
		# a re-plan moves layers off and onto the device stage (its
		# weights come back from the device first): profiles 10x from
		# what either computes here force one; the loss is that of the
		# same job kept on its split and of two host stages, bit for bit
		sed -e 's/gflops: 10, mem_gbps: 20/gflops: 300, mem_gbps: 20/' \
			-e 's/name: cpu, kind: host, gflops: 10/name: cpu, kind: host, gflops: 30/' \
			"$TMP/fake.yaml" >"$TMP/fake-wrong.yaml"
		for x in fgpu,cpu/0.2 fgpu,cpu/0 cpu,cpu/0 fgpu,cpu,cpu/0.2 fgpu,cpu,cpu/0; do
			ICE_CUDA_LIB=$ICE_FAKE_CUDA_LIB timeout 120 "$TRAIN" --model "$MODEL" \
				--profiles "$TMP/fake-wrong.yaml" --devices "${x%/*}" --scheme pp --steps 3 \
				--warmup 3 --replan "${x#*/}" --json >"$TMP/pp-replan-${x/\//-}" \
				2>"$TMP/pp-replan.err" ||
				fail "pp $x (devices/--replan) failed: $(cat "$TMP/pp-replan.err")"
		done
		python3 - "$TMP"/pp-replan-fgpu,cpu-0.2 "$TMP"/pp-replan-fgpu,cpu-0 \
			"$TMP"/pp-replan-cpu,cpu-0 <<'EOF' ||
import json, sys
a, b, h = (json.load(open(p))["jobs"][0] for p in sys.argv[1:4])
ra, rb = a["ranks"], b["ranks"]
print(f"  fgpu,cpu re-planned: layers {[(r['first_layer'], r['layers']) for r in ra]}, "
      f"{ra[0]['replans']} re-plan(s), loss {ra[-1]['loss']!r}; kept: layers "
      f"{[(r['first_layer'], r['layers']) for r in rb]}, loss {rb[-1]['loss']!r}")
assert a["ok"] and b["ok"], (a["ok"], b["ok"])
assert ra[0]["replans"] >= 1 and rb[0]["replans"] == 0, (ra[0]["replans"], rb[0]["replans"])
assert ra[1]["first_layer"] != rb[1]["first_layer"], "the split did not change"
assert ra[-1]["loss"] == rb[-1]["loss"], (ra[-1]["loss"], rb[-1]["loss"])
assert h["ok"] and rb[-1]["loss"] == h["ranks"][-1]["loss"], (rb[-1]["loss"], h["ranks"][-1]["loss"])
EOF
			fail "pp fgpu,cpu --replan: the device stage's weights did not move with its layers"
		# three stages: only the layers that change stage move, each
		# range from its old rank to its new one (here the device
		# stage's to both others, and the middle stage's to the last)
		python3 - "$TMP"/pp-replan-fgpu,cpu,cpu-0.2 "$TMP"/pp-replan-fgpu,cpu,cpu-0 <<'EOF' ||
import json, sys
a, b = (json.load(open(p))["jobs"][0] for p in sys.argv[1:3])
ra, rb = a["ranks"], b["ranks"]
old = [(r["first_layer"], r["layers"]) for r in rb]
new = [(r["first_layer"], r["layers"]) for r in ra]
print(f"  fgpu,cpu,cpu re-planned: layers {old} -> {new}, loss {ra[-1]['loss']!r}; kept: {rb[-1]['loss']!r}")
assert a["ok"] and b["ok"] and ra[0]["replans"] >= 1 and rb[0]["replans"] == 0
# layers of stage 0 went to stage 2 (not only to a neighbour)
assert new[2][0] < old[0][0] + old[0][1], (old, new)
assert ra[-1]["loss"] == rb[-1]["loss"], (ra[-1]["loss"], rb[-1]["loss"])
EOF
			fail "pp fgpu,cpu,cpu --replan: the weights did not move with their layers"
		# a device whose kernel never finishes (the double's
		# synchronisations hang once the first product is queued): the
		# device watchdog ends its rank after --stall-timeout, naming the
		# call, and the job ends instead of waiting for ever
		for s in dp pp; do
			t0=$(date +%s)
			FAKE_DEVRT_HANG_SGEMMS=1 ICE_CUDA_LIB=$ICE_FAKE_CUDA_LIB timeout 60 "$TRAIN" \
				--model "$MODEL" --profiles "$TMP/fake.yaml" --devices fgpu,cpu --scheme $s \
				--split even --steps 3 --warmup 1 --stall-timeout 2 >"$TMP/hang-$s" 2>&1
			rc=$?
			t1=$(date +%s)
			cat "$TMP/hang-$s"
			[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "$s fgpu hung: ice-train exited $rc"
			grep -q "rank 0: its device (fgpu, cuda) has not returned from [a-z_]* for [2-4]\.[0-9] s" \
				"$TMP/hang-$s" || fail "$s fgpu hung: no rank named the device call that hangs"
			echo "$s fgpu hung: the job ended $((t1 - t0)) s after its start"
			[ $((t1 - t0)) -le 20 ] || fail "$s fgpu hung: the job took $((t1 - t0)) s"
		done
	fi
fi

echo "## pp, --efficiency"
train pp 180 --scheme pp --steps 1 --warmup 0 --efficiency --trace "$TMP/trace.csv"
[ "$(grep -c 'pipeline messages intact (checksums sent = received): yes' "$TMP/pp")" -eq 4 ] ||
	fail "pp: expected 4 jobs with intact pipeline messages"
grep -Eq 'efficiency = .*plan [0-9.]+%, even [0-9.]+%' "$TMP/pp" || fail "pp: no efficiency line"
for job in 'alone emu-fast' 'alone emu-slow'; do
	grep -q "^   $job " "$TMP/pp" || fail "pp: no '$job' row in the table"
done
grep -Eq '^   mixed .* plan +[0-9.]+ +[0-9.]+ +[0-9.]+ +[-+][0-9.]+' "$TMP/pp" ||
	fail "pp: no mixed/plan row with prediction and error"
grep -Eq '^   mixed .* even +[0-9.]+ +[0-9.]+ +[0-9.]+ +[-+][0-9.]+' "$TMP/pp" ||
	fail "pp: no mixed/even row with prediction and error"
grep -Eq 'stage 1 waits per step: activations [0-9.]+ s, gradients [0-9.]+ s' "$TMP/pp" ||
	fail "pp: no per-stage wait breakdown"
# --trace: 35 forwards and 35 backwards per rank and job; every receive done
# after it was queued and taken
python3 - "$TMP/trace.csv" <<'PY' || fail "pp --trace: not the expected events"
import csv, sys, collections
n = collections.Counter()
for r in csv.DictReader(open(sys.argv[1])):
    n[(r["job"], r["split"], r["rank"], r["event"])] += 1
    if r["event"].startswith("recv"):
        t = [int(r[k]) for k in ("t0_ns", "t1_ns", "t2_ns", "t3_ns")]
        assert t == sorted(t), r
assert n[("mixed", "plan", "1", "fwd")] == 35 and n[("mixed", "plan", "0", "bwd")] == 35, n
assert n[("mixed", "even", "1", "recv_act")] == 35, n
assert n[("mixed", "plan", "0", "wgt")] == 35 and n[("mixed", "plan", "1", "wgt")] == 35, n
PY

echo "## pp, zero bubble against 1f1b"
for sc in zb 1f1b; do
	train "pp-$sc" 120 --scheme pp --pp-schedule $sc --steps 2 --warmup 0
	grep -q "== mixed: pp $sc, plan split" "$TMP/pp-$sc" || fail "pp $sc: no job header"
	grep -q 'pipeline messages intact (checksums sent = received): yes' "$TMP/pp-$sc" ||
		fail "pp $sc: messages not intact"
done
w_zb=$(grep 'weights (fnv1a per stage)' "$TMP/pp-zb")
w_1f1b=$(grep 'weights (fnv1a per stage)' "$TMP/pp-1f1b")
[ -n "$w_zb" ] && [ "$w_zb" = "$w_1f1b" ] ||
	fail "pp: zero bubble and 1f1b end with different weights ('$w_zb' / '$w_1f1b')"

echo "## pp on host ranks: the communication inline against on its own thread"
# a stage that really computes on host memory drives its sends and
# receives from its compute thread (no communication thread); with
# --comm-thread it has one: the same messages (checksums), the same
# weights and loss bit for bit, three stages (the middle one sends and
# receives both ways), both schedules
printf 'devices:\n  - {name: h, kind: host, gflops: 10, mem_gbps: 10}\n' >"$TMP/host.yaml"
for sc in zb 1f1b; do
	for mode in inline thread; do
		a=(--model "$MODEL" --profiles "$TMP/host.yaml" --devices h,h,h --scheme pp
			--pp-schedule $sc --split even --steps 2 --warmup 1 --json)
		[ $mode = thread ] && a+=(--comm-thread)
		timeout 120 "$TRAIN" "${a[@]}" >"$TMP/pp-host-$sc-$mode" 2>"$TMP/pp-host.err" ||
			fail "pp h,h,h $sc $mode failed: $(cat "$TMP/pp-host.err")"
	done
	python3 - "$TMP/pp-host-$sc-inline" "$TMP/pp-host-$sc-thread" <<'EOF2' ||
import json, sys
a, b = (json.load(open(p))["jobs"][0] for p in sys.argv[1:3])
for j, inl in ((a, True), (b, False)):
    assert j["ok"] and j["pipeline_data_ok"], j
    for r in j["ranks"]:
        assert r["comm_inline"] is inl, r
        assert (r["comm_cpu_s"] > 0) is inl, r
print("  inline: comm CPU %s ms a step; weights %s" % ([round(r["comm_cpu_s"] * 1e3, 2) for r in a["ranks"]], [r["weight_hash"] for r in a["ranks"]]))
assert [r["weight_hash"] for r in a["ranks"]] == [r["weight_hash"] for r in b["ranks"]]
assert a["ranks"][-1]["loss"] == b["ranks"][-1]["loss"]
EOF2
		fail "pp h,h,h $sc: inline and --comm-thread differ"
done

echo "## ice-plan --json: the DP tails and overlap ice-train runs with"
PLAN=${ICE_PLAN:-$ROOT/build/train/ice-plan}
for ov in auto 0.8; do
	args=(--busbw 0.8 --json)
	[ "$ov" = auto ] || args+=(--overlap "$ov")
	timeout 30 "$PLAN" "${COMMON[@]}" "${args[@]}" >"$TMP/plan-$ov.json" ||
		fail "ice-plan ${args[*]} exited $?"
done
python3 - "$TMP/plan-auto.json" "$TMP/plan-0.8.json" <<'PY' || fail "ice-plan --json: unexpected plan"
import json, sys
auto, given = (json.load(open(f)) for f in sys.argv[1:3])
dp = auto["dp"]["planner"]
# 100 / 40 samples; tails 16 and 10 micro-batches (a chunk of 16, or all
# a device has: more than the 6 and 3 that last 3x the 29 MB reduce-scatter
# and all-gather in parts of 5/7 and 2/7 at 0.8 GB/s, 10/7 of an
# all-reduce); overlap: the shorter tail window (emu-fast's 64 samples,
# 0.47 s) over emu-fast's whole backward (100 samples, 0.73 s)
assert dp["samples"] == [100, 40] and dp["tail_micro_batches"] == [16, 10], dp
assert abs(dp["overlap"] - 0.64) < 0.005, dp
# the sharded update: 3 x 29.36 MB over 8 + 3.2 GB/s, the same on both; the
# pipeline's stages update their own layers (20 at 8, 8 at 3.2 GB/s)
assert dp["optimizer"] == "sharded", dp
assert all(abs(u - 3 * 29.36e6 / 11.2e9) < 1e-4 for u in dp["update_s"]), dp
assert all(abs(u - 3 * 29.36e6 / 11.2e9) < 1e-4 for u in auto["pp"]["planner"]["update_s"]), auto["pp"]
assert given["dp"]["planner"]["overlap"] == 0.8, given["dp"]
assert given["dp"]["planner"]["tail_micro_batches"] == [16, 10], given["dp"]
assert auto["pp"]["planner"]["step_s"] < auto["pp"]["even"]["step_s"], auto["pp"]
print("ice-plan: dp tails", dp["tail_micro_batches"], "overlap", round(dp["overlap"], 3))
PY

echo "## ice-plan --cores: CPU contention priced as ice-train prices it"
# two host devices (their compute keeps a core busy), the slow one on 0.4
# of a core: the all-reduce's CPU comes out of both ranks' compute, 2.5x
# on the quota; stage messages' CPU likewise; without --cores: none
printf 'devices:\n  - name: h-fast\n    kind: host\n    gflops: 8\n    mem_gbps: 8\n  - name: h-slow\n    kind: host\n    gflops: 3.2\n    mem_gbps: 3.2\n' \
	>"$TMP/hosts.yaml"
HP=(--model "$MODEL" --profiles "$TMP/hosts.yaml" --devices h-fast,h-slow --busbw 0.8 --json)
timeout 30 "$PLAN" "${HP[@]}" >"$TMP/plan-free.json" || fail "ice-plan (hosts) exited $?"
timeout 30 "$PLAN" "${HP[@]}" --cores 1,0.4 --cpu-ar-ns 1.4 --cpu-p2p-ns 10 >"$TMP/plan-cores.json" ||
	fail "ice-plan --cores exited $?"
python3 - "$TMP/plan-free.json" "$TMP/plan-cores.json" <<'PY' || fail "ice-plan --cores: contention not priced as expected"
import json, sys
free, cores = (json.load(open(f)) for f in sys.argv[1:3])
assert "contention" not in free and cores["contention"]["cores"] == [1, 0.4], cores.get("contention")
for s in ("dp", "pp"):
    f, c = free[s]["even"], cores[s]["even"]
    assert all(x == 0 for x in f["contention_s"]), f
    assert all(x > 0 for x in c["contention_s"]), c
    assert c["contention_s"][1] > c["contention_s"][0], c
    assert c["step_s"] > f["step_s"], (c["step_s"], f["step_s"])
print("ice-plan --cores: dp even contention", [round(x, 4) for x in cores["dp"]["even"]["contention_s"]],
      "s a step; pp", [round(x, 6) for x in cores["pp"]["even"]["contention_s"]], "s a micro-batch")
PY
# the pipeline's per-message CPU (ice-train's PP calibration): on two
# stages an F and a B move one message each, so 50 us more CPU per
# operation, 2.5x of it on the quota; DP is not touched
timeout 30 "$PLAN" "${HP[@]}" --cores 1,0.4 --cpu-ar-ns 1.4 --cpu-p2p-ns 10 --cpu-msg-us 50 \
	>"$TMP/plan-msg.json" || fail "ice-plan --cpu-msg-us exited $?"
python3 - "$TMP/plan-cores.json" "$TMP/plan-msg.json" <<'PY' || fail "ice-plan --cpu-msg-us: not priced as expected"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert b["contention"]["cpu_msg_us"] == 50, b["contention"]
assert a["dp"]["even"]["contention_s"] == b["dp"]["even"]["contention_s"]
ca, cb = a["pp"]["even"]["contention_s"], b["pp"]["even"]["contention_s"]
# F and B of a micro-batch: one message each per stage of two
assert abs((cb[1] - ca[1]) - 2 * 50e-6 / 0.4) < 1e-9, (ca, cb)
assert b["pp"]["even"]["step_s"] > a["pp"]["even"]["step_s"]
print("ice-plan --cpu-msg-us 50: pp even contention", [round(x, 6) for x in cb], "s a micro-batch")
PY
# --pp-micro-batch auto: each size both profiles state a pipeline speed for
# (pp_gflops_at) that divides the batch (140: not 8) is planned at its
# speeds; the shortest predicted step wins, each try the plan that
# --pp-micro-batch N gives; the groups alone each at their own best size
sed -e '/gflops: 8/a\    pp_gflops_at: {4: 6, 8: 7, 20: 7.5}' -e '/gflops: 3.2/a\    pp_gflops_at: {4: 2.4, 8: 2.6, 20: 2.8}' \
	"$TMP/hosts.yaml" >"$TMP/hosts-at.yaml"
HA=(--model "$MODEL" --profiles "$TMP/hosts-at.yaml" --devices h-fast,h-slow --scheme pp --json
	--cores 1,0.4 --cpu-msg-us 50)
for mb in auto 4 20; do
	timeout 30 "$PLAN" "${HA[@]}" --pp-micro-batch $mb >"$TMP/plan-mb-$mb.json" ||
		fail "ice-plan --pp-micro-batch $mb exited $?"
done
python3 - "$TMP"/plan-mb-auto.json "$TMP"/plan-mb-4.json "$TMP"/plan-mb-20.json <<'PY' ||
import json, sys
auto, p4, p20 = (json.load(open(f))["pp"] for f in sys.argv[1:4])
tries = auto["micro_batch_tries"]
assert [t["micro_batch"] for t in tries] == [4, 20] and all(t["fits"] for t in tries), tries
assert p4["micro_batch"] == 4 and p20["micro_batch"] == 20 and "micro_batch_tries" not in p4
for t, p in zip(tries, (p4, p20)):
    assert abs(t["step_s"] - p["planner"]["step_s"]) < 1e-9, (t, p["planner"]["step_s"])
best = min(tries, key=lambda t: t["step_s"])
assert auto["micro_batch"] == best["micro_batch"], (auto["micro_batch"], tries)
assert abs(auto["planner"]["step_s"] - best["step_s"]) < 1e-9, auto["planner"]
# the groups alone at their own best size: no messages, the faster speed
ga = dict((g["profile"], g["samples_per_s"]) for g in auto["groups_alone"])
g4 = dict((g["profile"], g["samples_per_s"]) for g in p4["groups_alone"])
assert all(ga[k] > g4[k] for k in ga), (ga, g4)
print("ice-plan --pp-micro-batch auto: %d (tries %s); alone %s" % (
    auto["micro_batch"], ", ".join("%d: %.4f s" % (t["micro_batch"], t["step_s"]) for t in tries), ga))
PY
	fail "ice-plan --pp-micro-batch auto: not the shortest of its tries"
# the even split at its own best size, as ice-train's even job runs it: the
# slow device is faster at 4, the fast one twice as fast at 20, so the
# planner's split (most layers on the fast one) takes 20 and the even
# split (half on the slow one) 4
sed -e '/gflops: 8/a\    pp_gflops_at: {4: 4, 20: 8}' -e '/gflops: 3.2/a\    pp_gflops_at: {4: 3, 20: 2}' \
	"$TMP/hosts.yaml" >"$TMP/hosts-at2.yaml"
HA[3]=$TMP/hosts-at2.yaml
for mb in auto 4 20; do
	timeout 30 "$PLAN" "${HA[@]}" --pp-micro-batch $mb >"$TMP/plan-e-$mb.json" ||
		fail "ice-plan --pp-micro-batch $mb (even at its own size) exited $?"
done
timeout 30 "$PLAN" "${HA[@]:0:8}" --cores 1,0.4 --cpu-msg-us 50 --pp-micro-batch auto >"$TMP/plan-e.txt" ||
	fail "ice-plan --pp-micro-batch auto (text) exited $?"
python3 - "$TMP"/plan-e-auto.json "$TMP"/plan-e-4.json "$TMP"/plan-e-20.json <<'PY' ||
import json, sys
auto, p4, p20 = (json.load(open(f))["pp"] for f in sys.argv[1:4])
assert auto["planner"]["micro_batch"] == 20 and auto["even"]["micro_batch"] == 4, auto
assert abs(auto["planner"]["step_s"] - p20["planner"]["step_s"]) < 1e-9
assert abs(auto["even"]["step_s"] - p4["even"]["step_s"]) < 1e-9
assert p4["even"]["step_s"] < p20["even"]["step_s"], (p4["even"], p20["even"])
print("ice-plan --pp-micro-batch auto: planner at %d (%.4f s), even at %d (%.4f s)" % (
    auto["planner"]["micro_batch"], auto["planner"]["step_s"], auto["even"]["micro_batch"], auto["even"]["step_s"]))
PY
	fail "ice-plan --pp-micro-batch auto: the even split not at its own best size"
grep -q "the even split at its own best size: 35 micro-batches of 4" "$TMP/plan-e.txt" ||
	{ cat "$TMP/plan-e.txt"; fail "ice-plan --pp-micro-batch auto: the text does not give the even split's size"; }
timeout 30 "$PLAN" "${HP[@]}" --scheme pp --pp-micro-batch auto >"$TMP/plan-bad" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "no micro-batch size that divides the global batch (140) has a pipeline speed in every device's profile" "$TMP/plan-bad" ||
	{ cat "$TMP/plan-bad"; fail "ice-plan --pp-micro-batch auto without pp_gflops_at: expected exit 2, got $rc"; }
timeout 30 "$PLAN" "${HP[@]}" --scheme pp --pp-micro-batch 8 >"$TMP/plan-bad" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "key 'pp_micro_batch': expected a divisor of the global batch (140), got 8" "$TMP/plan-bad" ||
	{ cat "$TMP/plan-bad"; fail "ice-plan --pp-micro-batch 8 of 140: expected exit 2, got $rc"; }
# DP exchanging bf16 (--grad-dtype, --param-dtype): the step's bytes shrink
# to 3/4 and 1/2 of fp32's, and with them the all-reduce's CPU; the
# conversions' CPU (--cpu-cvt-ns) is added; JSON names both types
for t in "fp32 fp32" "bf16 fp32" "bf16 bf16"; do
	set -- $t
	timeout 30 "$PLAN" "${HP[@]}" --scheme dp --cores 1,0.4 --cpu-ar-ns 1.4 --grad-dtype "$1" \
		--param-dtype "$2" >"$TMP/plan-$1-$2.json" || fail "ice-plan --grad-dtype $1 --param-dtype $2 exited $?"
done
timeout 30 "$PLAN" "${HP[@]}" --scheme dp --cores 1,0.4 --cpu-ar-ns 1.4 --grad-dtype bf16 \
	--param-dtype bf16 --cpu-cvt-ns 0.5 >"$TMP/plan-cvt.json" || fail "ice-plan --cpu-cvt-ns exited $?"
python3 - "$TMP"/plan-fp32-fp32.json "$TMP"/plan-bf16-fp32.json "$TMP"/plan-bf16-bf16.json \
	"$TMP/plan-cvt.json" <<'PY' || fail "ice-plan --grad-dtype / --param-dtype: not priced as expected"
import json, sys
a, b, c, d = (json.load(open(f)) for f in sys.argv[1:5])
assert (b["dp"]["even"]["grad_dtype"], b["dp"]["even"]["param_dtype"]) == ("bf16", "fp32"), b
assert (c["dp"]["even"]["grad_dtype"], c["dp"]["even"]["param_dtype"]) == ("bf16", "bf16"), c
ca, cb, cc, cd = (x["dp"]["even"]["contention_s"][1] for x in (a, b, c, d))
assert ca > 0 and abs(cb - 0.75 * ca) < 1e-9 and abs(cc - 0.5 * ca) < 1e-9, (ca, cb, cc)
assert cd > cc and d["contention"]["cpu_cvt_ns"] == 0.5, (cc, cd)
print("ice-plan dp even, the slow rank's contention: fp32 %.4f s, bf16 gradients %.4f s, "
      "bf16 weights too %.4f s, + conversions %.4f s" % (ca, cb, cc, cd))
PY
# the conversions without --cores: time on each bucket's path only (at
# 0.8 GB/s busbw, rounding and widening cost more than the bytes they save)
timeout 30 "$PLAN" "${HP[@]}" --scheme dp --grad-dtype bf16 --param-dtype bf16 --overlap 0 \
	>"$TMP/plan-path0.json" || fail "ice-plan --overlap 0 exited $?"
timeout 30 "$PLAN" "${HP[@]}" --scheme dp --grad-dtype bf16 --param-dtype bf16 --overlap 0 \
	--cpu-cvt-ns 0.5 >"$TMP/plan-path.json" || fail "ice-plan --cpu-cvt-ns without --cores exited $?"
python3 - "$TMP/plan-path0.json" "$TMP/plan-path.json" <<'PY' || fail "ice-plan --cpu-cvt-ns: not on the path"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert "contention" not in b and b["net"]["cpu_cvt_ns"] == 0.5, b
# sharded, both bf16: every element rounded and widened, and the rank's
# part rounded and widened; the slowest rank's, h-fast's part of 8/11.2 by
# memory bandwidth; all exposed (--overlap 0)
elems = b["model"]["param_bytes"] / 4
ea, eb = a["dp"]["even"], b["dp"]["even"]
cvt = 0.5e-9 * elems * (2 + 2 * 8 / 11.2)
assert abs((eb["comm_s"] - ea["comm_s"]) - cvt) < 1e-9, (ea["comm_s"], eb["comm_s"], cvt)
assert eb["contention_s"] == [0, 0], eb
print("ice-plan dp even, bf16 both ways, exposed: %.4f s, + conversions %.4f s"
      % (ea["comm_s"], eb["comm_s"]))
PY
timeout 30 "$PLAN" "${HP[@]}" --scheme dp --optimizer replicated --param-dtype bf16 \
	>"$TMP/plan-bad" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "param_dtype" "$TMP/plan-bad" ||
	{ cat "$TMP/plan-bad"; fail "ice-plan --optimizer replicated --param-dtype bf16: expected exit 2, got $rc"; }
timeout 30 "$PLAN" "${HP[@]}" --cpu-ar-ns 1.4 >"$TMP/plan-bad" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "expected --cores" "$TMP/plan-bad" ||
	{ cat "$TMP/plan-bad"; fail "ice-plan --cpu-ar-ns without --cores: expected exit 2, got $rc"; }
timeout 30 "$PLAN" "${HP[@]}" --cores 1,1,1 >"$TMP/plan-bad" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "one value or one per device (2), got 3" "$TMP/plan-bad" ||
	{ cat "$TMP/plan-bad"; fail "ice-plan --cores of 3 for 2 devices: expected exit 2, got $rc"; }

echo "## dp --efficiency --json --repeat 3 --refine 1"
timeout 180 "$TRAIN" "${COMMON[@]}" --scheme dp --steps 1 --warmup 1 --refine 1 --efficiency --json \
	--repeat 3 \
	>"$TMP/json" 2>"$TMP/json.err"
rc=$?
cat "$TMP/json"
[ "$rc" -eq 0 ] || { cat "$TMP/json.err"; fail "ice-train --json exited $rc"; }
python3 - "$TMP/json" <<'PY' || fail "--json: not the expected JSON object"
import json, sys
o = json.load(open(sys.argv[1]))
j = o["jobs"][2]  # mixed, the planner's split
assert j["split"] == "plan" and j["ok"] and j["weights_identical"], j
for k in ("step_median_s", "samples_per_s", "predicted_step_s", "error_pct", "cpu_cores_busy"):
    assert isinstance(j[k], float), k
assert all(r["emulated"] for r in j["ranks"]), j["ranks"]
assert [x["job"] for x in o["jobs"]] == ["alone emu-fast", "alone emu-slow", "mixed", "mixed"], o["jobs"]
for j in o["jobs"]:
    # the run of median throughput is the one reported, beside every run's
    runs = j["samples_per_s_runs"]
    assert j["runs"] == 3 and len(runs) == 3, j
    assert sorted(runs)[1] == j["samples_per_s"], j
    assert (j["samples_per_s_min"], j["samples_per_s_max"]) == (min(runs), max(runs)), j
    # and each rank's own speed in every run, the reported run's among them
    m = runs.index(j["samples_per_s"])
    for x in j["ranks"]:
        own = x["gflops_own_runs"]
        assert len(own) == 3 and all(v > 0 for v in own), x
        assert abs(own[m] - x["gflops_own"]) <= 1e-6 * x["gflops_own"], (m, x)
        # an emulated device's compute is mostly asleep: no CPU speed
        assert x["gflops_cpu_runs"] == [None] * 3 and "gflops_cpu" not in x, x
    # the refined and the rolling predictions' errors of every run too
    for k in ("refined_error_pct", "rolling_error_pct"):
        v = j[k + "_runs"]
        assert len(v) == 3 and all(isinstance(e, float) for e in v), (k, j)
        assert abs(v[m] - j[k]) <= 6e-4, (k, m, j)  # kept to 1e-3
# each repeat starts at the next job: no job always runs first, or after
# the same one (four jobs, none run together)
for i, j in enumerate(o["jobs"]):
    assert j["place_runs"] == [(i - r) % 4 for r in range(3)], (i, j["place_runs"])
# each repeat's efficiency: its mixed run over its alone runs
r = [x["samples_per_s_runs"] for x in o["jobs"]]
for k, m in (("efficiency_plan_runs", 2), ("efficiency_even_runs", 3)):
    assert len(o[k]) == 3, o[k]
    for i in range(3):
        assert abs(o[k][i] - r[m][i] / (r[0][i] + r[1][i])) < 1e-9, (k, i, o[k], r)
a = o["alone_samples_per_s"]
assert abs(a - o["jobs"][0]["samples_per_s"] - o["jobs"][1]["samples_per_s"]) < 1e-9 * a, o
assert abs(o["efficiency_plan"] - o["jobs"][2]["samples_per_s"] / a) < 1e-9, o
assert "efficiency_plan_together_runs" not in o, o
# every rank on host memory: a bucket's exchange timed as a step runs it,
# and the CPU per byte priced comes from it (fp32: no conversions, every
# byte of the 1 MiB bucket on the wire; never below the all-reduce
# alone); a job of one rank has none
for j in o["jobs"]:
    for r in j["ranks"]:
        assert (r["cpu_exchange_s"] > 0) == (len(j["ranks"]) > 1), (j["job"], r)
        assert r["cpu_ar_s"] * 1048576 >= r["cpu_exchange_s"] * (1 - 1e-9), (j["job"], r)
PY

echo "## --refine: the prediction again from the warm-up steps' speeds; --save-profiles"
# a real host device whose profile claims 1000 GFLOP/s (this CPU does
# 5-40): the profile's prediction is far too short, the refined one (from
# the speed the rank measured in warm-up step 1, none of the timed steps) is closer,
# and --save-profiles writes what the timed steps sustained (the device's own
# speed, gflops_own: without the run-queue wait); an emulated
# device keeps its stated speed, so its refined prediction is the profile's
printf 'devices:\n  - name: cpu-wrong\n    kind: host\n    gflops: 1000\n    mem_gbps: 5\n' \
	>"$TMP/host.yaml"
timeout 120 "$TRAIN" --model "$MODEL" --profiles "$TMP/host.yaml" --devices cpu-wrong --scheme dp \
	--steps 2 --warmup 2 --refine 1 --json --save-profiles "$TMP/saved.yaml" >"$TMP/refine" \
	2>"$TMP/refine.err"
rc=$?
cat "$TMP/refine.err"
[ "$rc" -eq 0 ] || fail "ice-train --refine exited $rc"
grep -q "device 'cpu-wrong' .* says 1000.00 GFLOP/s" "$TMP/refine.err" ||
	fail "--refine: no warning naming the profile's figure"
timeout 120 "$TRAIN" "${COMMON[@]}" --scheme pp --steps 1 --warmup 2 --refine 2 --json \
	>"$TMP/refine-emu" 2>"$TMP/refine-emu.err" ||
	{ cat "$TMP/refine-emu.err"; fail "ice-train --refine on emulated devices failed"; }
python3 - "$TMP/refine" "$TMP/saved.yaml" "$TMP/refine-emu" <<'PY' ||
import json, re, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
print("profile's prediction %.4f s (%+.1f %%), refined %.4f s (%+.1f %%), measured %.4f s" % (
    j["predicted_step_s"], j["error_pct"], j["refined_step_s"], j["refined_error_pct"], j["step_median_s"]))
assert j["refine_steps"] == 1, j
assert j["error_pct"] < -50, j
assert abs(j["refined_error_pct"]) < abs(j["error_pct"]), j
r = j["ranks"][0]
assert 0 < r["gflops_refined"] < 500 and 0 < r["gflops_steps"] < 500, r
saved = open(sys.argv[2]).read()
g = float(re.search(r"gflops: (\S+)", saved).group(1))
assert 0 < r["gflops_own"] < 500 and "runq_wait_s" in r, r
assert 0 < r["gflops_cpu"] < 500, r  # per second of the compute thread's CPU
assert abs(g - r["gflops_own"]) < 1e-3 * g, (g, r)
assert "was 1000.00 GFLOP/s" in saved, saved
e = json.load(open(sys.argv[3]))["jobs"][0]
assert e["refine_steps"] == 2 and e["refined_step_s"] == e["predicted_step_s"], e
# a pipeline on host memory: its messages' CPU is calibrated (time_msgs),
# a cost per message on every rank (this checks that the calibration runs,
# not what it runs beside)
assert len(e["ranks"]) > 1 and all(r["cpu_msg_s"] > 0 for r in e["ranks"]), e["ranks"]
PY
	fail "--refine / --save-profiles: not as expected"
# a pipeline's steps go to pp_gflops (and pp_gflops_at at the model's
# micro-batch), the DP figure stays; and a pipeline
# plans with pp_gflops (the profile's prediction now from it: within a
# factor of 3 of the step, where 1000 GFLOP/s was 20 times off)
cp "$TMP/saved.yaml" "$TMP/saved-pp.yaml"
timeout 120 "$TRAIN" --model "$MODEL" --profiles "$TMP/saved-pp.yaml" --devices cpu-wrong \
	--scheme pp --steps 2 --warmup 1 --json --save-profiles "$TMP/saved-pp.yaml" \
	>"$TMP/pp-save" 2>"$TMP/pp-save.err" || { cat "$TMP/pp-save.err"; fail "ice-train pp --save-profiles failed"; }
timeout 120 "$TRAIN" --model "$MODEL" --profiles "$TMP/saved-pp.yaml" --devices cpu-wrong \
	--scheme pp --steps 2 --warmup 1 --json >"$TMP/pp-use" 2>"$TMP/pp-use.err" ||
	{ cat "$TMP/pp-use.err"; fail "ice-train pp on the saved pp_gflops failed"; }
python3 - "$TMP/saved.yaml" "$TMP/saved-pp.yaml" "$TMP/pp-save" "$TMP/pp-use" <<'PY' ||
import json, re, sys
num = lambda k, t: float(re.search(r"\b%s: (\S+)" % k, t).group(1))
dp, pp = open(sys.argv[1]).read(), open(sys.argv[2]).read()
assert "pp_gflops" not in dp, dp
assert num("gflops", pp) == num("gflops", dp), (dp, pp)
r = json.load(open(sys.argv[3]))["jobs"][0]["ranks"][0]
assert abs(num("pp_gflops", pp) - r["gflops_own"]) < 1e-3 * r["gflops_own"], (pp, r)
assert "pp_gflops_at: {4: %s}" % re.search(r"\bpp_gflops: (\S+)", pp).group(1) in pp, pp
assert "timed pipeline steps" in pp, pp
j = json.load(open(sys.argv[4]))["jobs"][0]
print("pipeline: pp_gflops %.2f (DP gflops %.2f); predicted %.4f s, measured %.4f s"
      % (num("pp_gflops", pp), num("gflops", pp), j["predicted_step_s"], j["step_median_s"]))
assert abs(j["error_pct"]) < 67, j
PY
	fail "--save-profiles of a pipeline: pp_gflops not written or not used"
# --pp-micro-batch auto on a real device: one stage sends nothing, so the
# size with the faster stated speed wins (20: 7 micro-batches of 140); its
# steps go to pp_gflops_at at 20, pp_gflops (the model's 4) stays
sed -e '/pp_gflops_at:/d' -e '/pp_gflops:/a\    pp_gflops_at: {4: 5, 20: 50}' "$TMP/saved-pp.yaml" >"$TMP/at.yaml"
cp "$TMP/at.yaml" "$TMP/at-saved.yaml"
timeout 120 "$TRAIN" --model "$MODEL" --profiles "$TMP/at.yaml" --devices cpu-wrong --scheme pp \
	--pp-micro-batch auto --steps 2 --warmup 1 --json --save-profiles "$TMP/at-saved.yaml" \
	>"$TMP/pp-auto" 2>"$TMP/pp-auto.err" || { cat "$TMP/pp-auto.err"; fail "ice-train --pp-micro-batch auto failed"; }
timeout 120 "$TRAIN" --model "$MODEL" --profiles "$TMP/at.yaml" --devices cpu-wrong --scheme pp \
	--pp-micro-batch 20 --steps 1 --warmup 0 --json >"$TMP/pp-20" 2>"$TMP/pp-20.err" ||
	{ cat "$TMP/pp-20.err"; fail "ice-train --pp-micro-batch 20 failed"; }
python3 - "$TMP/at.yaml" "$TMP/at-saved.yaml" "$TMP/pp-auto" "$TMP/pp-20" <<'PY' ||
import json, re, sys
num = lambda k, t: float(re.search(r"\b%s: (\S+)" % k, t).group(1))
before, after = open(sys.argv[1]).read(), open(sys.argv[2]).read()
j = json.load(open(sys.argv[3]))["jobs"][0]
assert j["micro_batch"] == 20 and j["micro_batches"] == 7, j
t = j["micro_batch_tries"]
assert [x["micro_batch"] for x in t] == [4, 20] and t[1]["step_s"] < t[0]["step_s"], t
assert abs(j["predicted_step_s"] - t[1]["step_s"]) < 1e-3 * t[1]["step_s"], (j["predicted_step_s"], t)
r = j["ranks"][0]
assert num("pp_gflops", after) == num("pp_gflops", before), after
m = re.search(r"pp_gflops_at: \{4: 5, 20: (\S+)\}", after)
assert m and abs(float(m.group(1)) - r["gflops_own"]) < 1e-3 * r["gflops_own"], (after, r)
assert "timed pipeline steps at micro-batch 20 at " in after and "was 50.00 GFLOP/s" in after, after
f = json.load(open(sys.argv[4]))["jobs"][0]
assert f["micro_batch"] == 20 and f["micro_batches"] == 7 and "micro_batch_tries" not in f, f
print("--pp-micro-batch auto: %d (tries %s), measured %.2f GFLOP/s at it" % (
    j["micro_batch"], [(x["micro_batch"], round(x["step_s"], 4)) for x in t], r["gflops_own"]))
PY
	fail "--pp-micro-batch: not as expected"
# two emulated stages: the plan's size is the shortest of its tries
sed -e '/gflops: 4.0/a\    pp_gflops_at: {4: 4.0, 20: 4.4}' -e '/gflops: 1.6/a\    pp_gflops_at: {4: 1.6, 20: 1.8}' \
	"$PROF" >"$TMP/emu-at.yaml"
timeout 120 "$TRAIN" --model "$MODEL" --profiles "$TMP/emu-at.yaml" --devices emu-fast,emu-slow \
	--scheme pp --pp-micro-batch auto --steps 1 --warmup 1 --json >"$TMP/pp-auto2" 2>"$TMP/pp-auto2.err" ||
	{ cat "$TMP/pp-auto2.err"; fail "ice-train --pp-micro-batch auto on two stages failed"; }
python3 - "$TMP/pp-auto2" <<'PY' || fail "--pp-micro-batch auto on two stages: not the shortest try"
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
t = j["micro_batch_tries"]
best = min(t, key=lambda x: x["step_s"])
assert j["micro_batch"] == best["micro_batch"] and j["micro_batches"] == 140 // best["micro_batch"], j
assert abs(j["error_pct"]) < 10, j
print("two stages: micro-batch %d of %s; predicted %.4f s, measured %.4f s" % (
    j["micro_batch"], [(x["micro_batch"], round(x["step_s"], 4)) for x in t], j["predicted_step_s"], j["step_median_s"]))
PY
for bad in "--scheme pp --pp-micro-batch 8|expected a divisor of" \
	"--scheme dp --pp-micro-batch auto|pipeline parallel only" \
	"--scheme pp --pp-micro-batch auto|no micro-batch size that divides the global batch (140)" \
	"--scheme pp --pp-micro-batch 0|expected auto or a micro-batch size"; do
	timeout 20 "$TRAIN" "${COMMON[@]}" ${bad%%|*} --steps 1 --warmup 0 >"$TMP/mb-bad" 2>&1
	rc=$?
	[ "$rc" -eq 2 ] && grep -q -- "${bad#*|}" "$TMP/mb-bad" ||
		{ cat "$TMP/mb-bad"; fail "ice-train ${bad%%|*}: expected exit 2 and '${bad#*|}', got $rc"; }
done
# refined from warm-up steps only
timeout 20 "$TRAIN" "${COMMON[@]}" --steps 1 --warmup 1 --refine 2 >"$TMP/refine-bad" 2>&1
rc=$?
cat "$TMP/refine-bad"
[ "$rc" -eq 2 ] && grep -q -- "--refine 2: expected at most --warmup (1)" "$TMP/refine-bad" ||
	fail "--refine beyond --warmup: expected exit 2 and a message, got $rc"
echo "PASS"
