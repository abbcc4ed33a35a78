#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# ice-devprof --model: the sustained figures from the model's own products
# (train/models/mlp.yaml), on the host and on the CUDA backend over the
# runtime double: the profile has gflops (a DP step's order) and pp_gflops
# (a pipeline stage's), both > 0, and the log names both orders and the
# model, and that the products were queued; with --sync-products each is
# waited for, and the log says so. A model file that does not load is
# refused (exit 2) with its file, line and key; --model with --emulate
# measures nothing, so it is refused too, and --sync-products without
# --model. --pp-micro-batches: the pipeline's order again at each size
# (pp_gflops_at, in order, the model's own size from pp_gflops); bad lists
# and the option without --model are refused.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEVPROF=${ICE_DEVPROF:-$ROOT/build/train/ice-devprof}
[ -x "$DEVPROF" ] || { echo "test_devprof_model: skipped: $DEVPROF is absent" >&2; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
TMP=$(mktemp -d /tmp/ice-devprof-model.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
MODEL=$ROOT/train/models/mlp.yaml
PROF=(--seconds 0.1 --sustain 0.3 --mb 8 --model "$MODEL")
num() { sed -n "s/^    $1: //p" "$2"; }
check() { # check NAME LOG FILE [HOW]
	local g pp how=${4:-products queued}
	g=$(num gflops "$3")
	pp=$(num pp_gflops "$3")
	echo "  $1: gflops ${g:-none}, pp_gflops ${pp:-none}"
	awk -v g="${g:-0}" -v p="${pp:-0}" 'BEGIN {exit !(g > 0 && p > 0)}' ||
		fail "$1: gflops and pp_gflops expected > 0"
	grep -q "in a DP step's order of model mlp-28 (28 layers, micro-batch 4, 16 at a time through each layer, $how;" "$2" &&
		grep -q "in a pipeline stage's order of model mlp-28 (28 layers, micro-batch 4, 1 at a time through each layer, $how;" "$2" ||
		fail "$1: the log does not name both orders and '$how': $(cat "$2")"
}

echo "## host"
timeout 60 "$DEVPROF" "${PROF[@]}" -o "$TMP/host.yaml" >"$TMP/host.log" 2>&1 ||
	{ cat "$TMP/host.log"; fail "ice-devprof --model failed"; }
check host "$TMP/host.log" "$TMP/host.yaml"

echo "## host, --pp-micro-batches: the pipeline's order at each size"
timeout 60 "$DEVPROF" "${PROF[@]}" --pp-micro-batches 8,4,2 -o "$TMP/at.yaml" >"$TMP/at.log" 2>&1 ||
	{ cat "$TMP/at.log"; fail "ice-devprof --pp-micro-batches failed"; }
at=$(num pp_gflops_at "$TMP/at.yaml")
echo "  pp_gflops_at: $at"
# in order of size; the model's own size (4) is its pp_gflops, not measured twice
python3 - "$at" "$(num pp_gflops "$TMP/at.yaml")" <<'PY' || fail "pp_gflops_at: expected {2: X, 4: pp_gflops, 8: Y}, X, Y > 0, got '$at'"
import sys
t = dict((int(k), float(v)) for k, v in (x.split(":") for x in sys.argv[1].strip("{}").split(",")))
assert list(t) == [2, 4, 8] and min(t.values()) > 0 and t[4] == float(sys.argv[2]), t
PY
for mb in 2 8; do
	grep -q "in a pipeline stage's order at micro-batch $mb " "$TMP/at.log" || fail "the log does not name micro-batch $mb: $(cat "$TMP/at.log")"
done
[ "$(grep -c "in a pipeline stage's order at micro-batch" "$TMP/at.log")" -eq 2 ] || fail "micro-batch 4 measured twice: $(cat "$TMP/at.log")"
for bad in 4,4 0 4,x ''; do
	"$DEVPROF" "${PROF[@]}" --pp-micro-batches "$bad" >"$TMP/bad-at" 2>&1 && fail "--pp-micro-batches '$bad' ran"
	grep -q "flag --pp-micro-batches: expected" "$TMP/bad-at" || fail "--pp-micro-batches '$bad': no reason: $(cat "$TMP/bad-at")"
done
"$DEVPROF" --pp-micro-batches 8 >"$TMP/bad-at" 2>&1 && fail "--pp-micro-batches without --model ran"
grep -q -- "key 'pp_micro_batches': goes with --model FILE" "$TMP/bad-at" || fail "--pp-micro-batches without --model: no reason: $(cat "$TMP/bad-at")"

echo "## cuda on the runtime double"
if [ -n "${ICE_FAKE_CUDA_LIB:-}" ]; then
	ICE_CUDA_LIB=$ICE_FAKE_CUDA_LIB timeout 60 "$DEVPROF" --kind cuda "${PROF[@]}" \
		-o "$TMP/cuda.yaml" >"$TMP/cuda.log" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ] && grep -q 'not built in' "$TMP/cuda.log"; then
		echo "(the CUDA backend is not built: skipped)"
	else
		[ "$rc" -eq 0 ] || { cat "$TMP/cuda.log"; fail "ice-devprof --kind cuda --model exited $rc"; }
		check cuda "$TMP/cuda.log" "$TMP/cuda.yaml"
		ICE_CUDA_LIB=$ICE_FAKE_CUDA_LIB timeout 60 "$DEVPROF" --kind cuda "${PROF[@]}" \
			--sync-products -o "$TMP/cuda-sync.yaml" >"$TMP/cuda-sync.log" 2>&1 ||
			{ cat "$TMP/cuda-sync.log"; fail "ice-devprof --kind cuda --model --sync-products failed"; }
		check cuda-sync "$TMP/cuda-sync.log" "$TMP/cuda-sync.yaml" "each product waited for"
	fi
fi

echo "## a model that does not load"
printf 'model:\n  name: x\n  micro_batch: 4\n' >"$TMP/bad.yaml"
"$DEVPROF" --model "$TMP/bad.yaml" >"$TMP/bad" 2>&1
rc=$?
cat "$TMP/bad"
[ "$rc" -eq 2 ] && grep -q "bad.yaml:2:3: key 'model.global_batch': missing required key" "$TMP/bad" ||
	fail "a bad model: expected exit 2 naming file, line and key, got $rc"
"$DEVPROF" --model "$TMP/none.yaml" >"$TMP/none" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "none.yaml: cannot open" "$TMP/none" ||
	fail "a missing model: expected exit 2 naming it, got $rc: $(cat "$TMP/none")"
"$DEVPROF" --emulate e1 --gflops 5 --model "$MODEL" >"$TMP/emu" 2>&1 &&
	fail "--model with --emulate ran"
grep -q -- "--model measures a device; --emulate states one" "$TMP/emu" || fail "--model with --emulate: no reason: $(cat "$TMP/emu")"
"$DEVPROF" --sync-products >"$TMP/sync" 2>&1 && fail "--sync-products without --model ran"
grep -q -- "key 'sync_products': goes with --model FILE" "$TMP/sync" ||
	fail "--sync-products without --model: no reason: $(cat "$TMP/sync")"
echo "test_devprof_model: ok"
