#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Memory, end to end (trn_mem, train/README.md "Memory"):
#   - what every rank of ice-train allocates for its training state and
#     the transport's staging equals what the planner predicted, to the
#     byte: DP in fp32 and with the bf16 exchange, both optimizer modes; PP
#     zero bubble and 1F1B, three stages; a CUDA rank on the runtime double
#     beside a host rank (the only jobs with staging: on both ranks' hosts
#     and the CUDA rank's device);
#   - a profile's mem_gib bounds the planner: the pipeline split ice-plan
#     and ice-train choose keeps the first stage within it (fewer layers
#     there than without it) and ice-train's allocations stay within it;
#   - the even split beyond it is refused before anything is allocated,
#     naming the rank, the device, the MiB needed and the capacity;
#   - host ranks on one host (host profiles, not emulated) each get their
#     share of its memory: ice-train's split keeps each within half, where
#     ice-plan, which does not know where they run, does not; the jobs of
#     an --efficiency --together set too (alone, each has all of it);
#     --save-profiles keeps the profile's whole figure; a split beyond the
#     share is refused, the refusal saying where the capacity comes from;
#   - ice-plan leaves out a scheme no split of which fits (DP, whose ranks
#     hold the whole model) and still plans the other; with that scheme
#     alone it fails; a bad mem_gib names the file, key and unit.
# Exits 77 when something it needs is absent. Ranks use 127.21.0.x.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TRAIN=${ICE_TRAIN:-$ROOT/build/train/run/ice-train}
PLAN=${ICE_PLAN:-$ROOT/build/train/ice-plan}
EX=${ICE_TRAIN_EXAMPLES:-$ROOT/train}
PROF=$EX/profiles/emu-2kind.yaml
MODEL=$EX/models/mlp.yaml
for f in "$TRAIN" "$PLAN" "$PROF" "$MODEL"; do
	[ -e "$f" ] || { echo "test_ice_train_mem: skipped: $f is absent" >&2; exit 77; }
done
command -v python3 >/dev/null || { echo "test_ice_train_mem: skipped: needs python3" >&2; exit 77; }
TMP=$(mktemp -d /tmp/ice-train-mem.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# same OUT ARGS...: run ice-train --json into $TMP/OUT; every rank's
# allocated bytes equal the predicted ones
same() {
	local out=$1 rc
	shift
	timeout 120 "$TRAIN" --model "$MODEL" --steps 1 --warmup 0 --json "$@" >"$TMP/$out" \
		2>"$TMP/$out.err"
	rc=$?
	[ "$rc" -eq 0 ] || { cat "$TMP/$out.err"; fail "ice-train $* exited $rc"; }
	python3 - "$TMP/$out" "$out" <<'PY' || fail "ice-train $*: allocated is not predicted"
import json, sys
for j in json.load(open(sys.argv[1]))["jobs"]:
    for r in j["ranks"]:
        a, p = r["mem_need_bytes"], r["mem_predicted_bytes"]
        print(f'  {j["job"]:8} {j["scheme"]} rank {r["rank"]}: allocated {a / 2**20:.2f} MiB, '
              f'predicted {p / 2**20:.2f} MiB (device {r["mem_device_bytes"] / 2**20:.2f}, '
              f'host {r["mem_host_bytes"] / 2**20:.2f})')
        assert a > 0 and a == p, r
        # the transport stages only where a rank computes off the host:
        # then every rank's host, and the accelerator's device
        td, th = r["mem_transport_device_bytes"], r["mem_transport_host_bytes"]
        staged = sys.argv[2].startswith("cuda")
        assert (th > 0) == staged and (td > 0) == (staged and r["rank"] == 0), r
        if staged:
            print(f'    transport staging: device {td / 2**20:.2f} MiB, host {th / 2**20:.2f} MiB')
PY
}

echo "## allocated = predicted"
E=(--profiles "$PROF" --devices emu-fast,emu-slow)
same dp "${E[@]}" --scheme dp
same dp-bf16 "${E[@]}" --scheme dp --grad-dtype bf16 --param-dtype bf16
same dp-repl "${E[@]}" --scheme dp --optimizer replicated --grad-dtype bf16 --split even
same pp-zb "${E[@]}" --scheme pp
same pp-1f1b "${E[@]}" --scheme pp --pp-schedule 1f1b
same pp-3 --profiles "$PROF" --devices emu-fast,emu-slow,emu-fast --scheme pp --split even
if [ -n "${ICE_FAKE_CUDA_LIB:-}" ]; then
	cat >"$TMP/fake.yaml" <<'EOF'
devices:
  - {name: fgpu, kind: cuda, gflops: 10, mem_gbps: 20, h2d_gbps: 5, d2h_gbps: 5, reduce_gbps: 5}
  - {name: cpu, kind: host, gflops: 10, mem_gbps: 10, h2d_gbps: 5, d2h_gbps: 5, reduce_gbps: 5}
EOF
	export ICE_CUDA_LIB=$ICE_FAKE_CUDA_LIB
	if "$TRAIN" --model "$MODEL" --profiles "$TMP/fake.yaml" --devices fgpu --steps 1 \
		--warmup 0 >"$TMP/probe" 2>&1; then
		same cuda-alone --profiles "$TMP/fake.yaml" --devices fgpu --scheme dp
		same cuda-dp --profiles "$TMP/fake.yaml" --devices fgpu,cpu --scheme dp \
			--grad-dtype bf16 --param-dtype bf16
		same cuda-pp --profiles "$TMP/fake.yaml" --devices fgpu,cpu --scheme pp
	else
		echo "(the CUDA backend is not built or finds no device: skipped)"
	fi
	unset ICE_CUDA_LIB
fi

echo "## mem_gib bounds the pipeline split"
# emu-fast may use 0.05 GiB (51.2 MiB): the 20 layers it takes without a
# bound need 62.6 MiB there
sed 's/^    reduce_gbps: 2$/&\n    mem_gib: 0.05/' "$PROF" >"$TMP/cap.yaml"
grep -q 'mem_gib: 0.05' "$TMP/cap.yaml" || fail "could not write the capped profile"
C=(--model "$MODEL" --profiles "$TMP/cap.yaml" --devices emu-fast,emu-slow)
timeout 30 "$PLAN" --model "$MODEL" "${E[@]}" --scheme pp --json >"$TMP/plan-free.json" ||
	fail "ice-plan exited $?"
timeout 30 "$PLAN" "${C[@]}" --json >"$TMP/plan-cap.json" 2>"$TMP/plan-cap.err" ||
	fail "ice-plan with mem_gib exited $?: $(cat "$TMP/plan-cap.err")"
grep -q "data-parallel plan failed: no split fits the devices' memory" "$TMP/plan-cap.err" ||
	fail "ice-plan: DP left out without saying why: $(cat "$TMP/plan-cap.err")"
same pp-cap --profiles "$TMP/cap.yaml" --devices emu-fast,emu-slow --scheme pp
python3 - "$TMP/plan-free.json" "$TMP/plan-cap.json" "$TMP/pp-cap" <<'PY' ||
import json, sys
free, cap = (json.load(open(f)) for f in sys.argv[1:3])
run = json.load(open(sys.argv[3]))["jobs"][0]
assert "dp" not in cap, "DP planned though no split fits"
f, c = free["pp"]["planner"], cap["pp"]["planner"]
limit = 0.05 * 2**30
print(f"  stage 0 layers: {f['nlayers'][0]} free, {c['nlayers'][0]} within {limit / 2**20:.1f} MiB; "
      f"need {f['mem_need_bytes'][0] / 2**20:.1f} -> {c['mem_need_bytes'][0] / 2**20:.1f} MiB; "
      f"step {f['step_s']:.4f} -> {c['step_s']:.4f} s")
assert f["mem_need_bytes"][0] > limit and f["fits"], f
assert c["nlayers"][0] < f["nlayers"][0] and c["fits"], c
assert c["mem_need_bytes"][0] <= limit < f["mem_need_bytes"][0], c
assert c["step_s"] > f["step_s"], (c, f)
# even fits there (43.9 MiB), and ice-train runs ice-plan's split
assert cap["pp"]["even"]["fits"], cap["pp"]["even"]
assert run["ranks"][0]["layers"] == c["nlayers"][0], (run["ranks"][0], c)
assert run["ranks"][0]["mem_need_bytes"] <= run["ranks"][0]["mem_capacity_bytes"] == limit, run
PY
	fail "mem_gib: the pipeline split does not keep within it"

echo "## host ranks on one host share its memory"
# two host devices each measured at 0.1 GiB of the host's memory (as
# ice-devprof writes MemAvailable): ice-plan, which does not know where
# they run, gives stage 0 the 20 layers that fit 102.4 MiB; ice-train
# runs both here, each within half (51.2 MiB)
cp "$ROOT/tests/train/prof_hosts_shared.yaml" "$TMP/hosts.yaml"
timeout 30 "$PLAN" --model "$MODEL" --profiles "$TMP/hosts.yaml" --devices h-fast,h-slow \
	--scheme pp --json >"$TMP/plan-hosts.json" || fail "ice-plan (host devices) exited $?"
same pp-hosts --profiles "$TMP/hosts.yaml" --devices h-fast,h-slow --scheme pp
timeout 120 "$TRAIN" --model "$MODEL" --profiles "$TMP/hosts.yaml" --devices h-fast,h-slow \
	--scheme pp --steps 1 --warmup 0 --save-profiles "$TMP/saved.yaml" >"$TMP/pp-hosts.txt" 2>&1 ||
	fail "pp h-fast,h-slow failed"
# what a rank saves is its device's profile: the host's whole memory
[ "$(grep -c 'mem_gib: 0.1$' "$TMP/saved.yaml")" = 2 ] ||
	fail "--save-profiles wrote a rank's share as mem_gib: $(cat "$TMP/saved.yaml")"
grep -q "have a share of its profile's mem_gib: rank 0 1/2, rank 1 1/2" "$TMP/pp-hosts.txt" ||
	fail "the report does not say the host ranks share its memory: $(cat "$TMP/pp-hosts.txt")"
python3 - "$TMP/plan-hosts.json" "$TMP/pp-hosts" <<'PY' ||
import json, sys
plan = json.load(open(sys.argv[1]))["pp"]["planner"]
run = json.load(open(sys.argv[2]))["jobs"][0]
half = 0.05 * 2**30
r0 = run["ranks"][0]
print(f"  stage 0: ice-plan {plan['nlayers'][0]} layers ({plan['mem_need_bytes'][0] / 2**20:.1f} MiB), "
      f"ice-train {r0['layers']} within {half / 2**20:.1f} MiB ({r0['mem_need_bytes'] / 2**20:.1f})")
assert plan["mem_need_bytes"][0] > half, plan
for r in run["ranks"]:
    assert r["mem_share"] == 2 and r["mem_capacity_bytes"] == half, r
    assert r["mem_need_bytes"] <= half, r
assert r0["layers"] < plan["nlayers"][0], (r0, plan)
PY
	fail "host ranks on one host: not each within its share"

# beyond the share: the refusal gives the capacity and where it comes from
timeout 60 "$TRAIN" --model "$MODEL" --profiles "$TMP/hosts.yaml" --devices h-fast,h-slow \
	--scheme dp --split even --steps 1 --warmup 0 >"$TMP/dp-hosts" 2>&1 &&
	fail "dp even beyond the host ranks' shares ran"
grep -Eq "needs [0-9.]+ MiB on rank 0 \(device 'h-fast', host memory\), over its capacity 51\.2 MiB \(mem_gib 0\.1 in its profile, 1/2 of it its share" \
	"$TMP/dp-hosts" || fail "the refusal beyond a share does not say so: $(cat "$TMP/dp-hosts")"

echo "## jobs run at the same time on one host share its memory too"
# --together runs each device's job alone at the same time: each rank
# there has half the host's 0.2 GiB, as in the mixed job; alone, all of it
sed 's/mem_gib: 0.1/mem_gib: 0.2/' "$TMP/hosts.yaml" >"$TMP/hosts2.yaml"
timeout 200 "$TRAIN" --model "$MODEL" --profiles "$TMP/hosts2.yaml" --devices h-fast,h-slow \
	--scheme pp --steps 1 --warmup 0 --efficiency --together --json >"$TMP/tog.json" \
	2>"$TMP/tog.err" || fail "--efficiency --together on host devices failed: $(cat "$TMP/tog.err")"
python3 - "$TMP/tog.json" <<'PY' ||
import json, sys
gib = 0.2 * 2**30
for j in json.load(open(sys.argv[1]))["jobs"]:
    k = 1 if j["job"].startswith("alone") else 2
    got = [(r["mem_share"], r["mem_capacity_bytes"]) for r in j["ranks"]]
    print(f"  {j['job']}: {[f'1/{s} ({c / 2**20:.1f} MiB)' for s, c in got]}")
    assert all(s == k and c == gib / k for s, c in got), (j["job"], got)
PY
	fail "jobs run together on one host: a rank's share of its memory is wrong"

echo "## the even split beyond mem_gib is refused"
sed 's/^    reduce_gbps: 2$/&\n    mem_gib: 0.042/' "$PROF" >"$TMP/cap2.yaml"
timeout 60 "$TRAIN" --model "$MODEL" --profiles "$TMP/cap2.yaml" --devices emu-fast,emu-slow \
	--scheme pp --split even --steps 1 --warmup 0 >"$TMP/even" 2>&1
rc=$?
cat "$TMP/even"
[ "$rc" -ne 0 ] || fail "an even split beyond mem_gib ran"
grep -Eq "the even split of model 'mlp-28' needs 43\.[0-9] MiB on rank 0 \(device 'emu-fast', host memory\), over its capacity 43\.0 MiB \(mem_gib 0\.042\)" \
	"$TMP/even" || fail "the even split's refusal does not name the rank, device and sizes"
timeout 30 "$PLAN" --model "$MODEL" --profiles "$TMP/cap2.yaml" --devices emu-fast,emu-slow \
	--scheme pp >"$TMP/plan-even" 2>&1 || fail "ice-plan (even over) exited $?"
grep -q 'even: .*DOES NOT FIT on emu-fast' "$TMP/plan-even" ||
	fail "ice-plan: the even split over mem_gib is not flagged: $(cat "$TMP/plan-even")"

echo "## ice-plan: DP alone cannot fit; a bad mem_gib"
timeout 30 "$PLAN" "${C[@]}" --scheme dp >"$TMP/plan-dp" 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "ice-plan --scheme dp with no split that fits: exit $rc, expected 1"
sed 's/^    reduce_gbps: 2$/&\n    mem_gib: -1/' "$PROF" >"$TMP/bad.yaml"
timeout 30 "$PLAN" --model "$MODEL" --profiles "$TMP/bad.yaml" --devices emu-fast,emu-slow \
	>"$TMP/plan-bad" 2>&1 && fail "ice-plan took mem_gib -1"
grep -q "bad.yaml.*mem_gib.*expected a number > 0 (GiB)" "$TMP/plan-bad" ||
	fail "a bad mem_gib does not name file, key and unit: $(cat "$TMP/plan-bad")"
echo "PASS"
