#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# ice-bench --json reads back what rank 0's QPs ran with: three local ranks
# over loopback (no root), 2 QPs per connection, the test bed's DCQCN
# baseline (--dcqcn-file) with one key overridden by a later --dcqcn. The
# object must list rank 0's 4 QPs ("qps": peer, addresses, QP number,
# source port) and the DCQCN set they had at the end ("dcqcn_effective"):
# the file's values, the override, rp_max_rate as given. Needs python3.
set -u
BENCH=${ICE_BENCH:?ICE_BENCH: the ice-bench binary}
BED=${ICE_DCQCN_TESTBED:?ICE_DCQCN_TESTBED: fabric/dcqcn-testbed.yaml}
command -v python3 >/dev/null || { echo "test_bench_json: skipped: no python3" >&2; exit 77; }
TMP=$(mktemp -d /tmp/ice-bench-json.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# an address block of its own: other local ice-bench runs use 127.20.0.x
if ! timeout 60 "$BENCH" -N 3 -q 2 -C allreduce -b 4K -e 4K -n 2 -w 1 --addr-base 127.61.0.1 \
	--dcqcn-file "$BED" --dcqcn rp_ai_rate=3 --json >"$TMP/out.json" 2>"$TMP/err"; then
	echo "FAIL: ice-bench exited non-zero" >&2
	cat "$TMP/err" >&2
	exit 1
fi
python3 - "$TMP/out.json" <<'PY'
import json, sys

j = json.load(open(sys.argv[1]))
bad = []
qps = j.get("qps")
if not isinstance(qps, list) or len(qps) != 4:
    bad.append(f"qps: expected 4 entries, got {qps!r}")
    qps = []
for q in qps:
    if sorted(q) != ["local", "peer", "qpn", "remote", "sport"]:
        bad.append(f"qps entry keys: {sorted(q)}")
        continue
    if q["local"] != "127.61.0.1" or q["remote"] != f"127.61.0.{q['peer'] + 1}":
        bad.append(f"qps entry addresses: {q}")
    if not 49152 <= q["sport"] <= 65535 or q["qpn"] <= 0:
        bad.append(f"qps entry port or QPN: {q}")
if sorted(q["peer"] for q in qps) != [1, 1, 2, 2]:
    bad.append(f"peers: {[q.get('peer') for q in qps]}")
if len({q["qpn"] for q in qps}) != len(qps):
    bad.append("QP numbers repeat")
eff = j.get("dcqcn_effective")
if not isinstance(eff, list) or len(eff) != 1 or eff[0].get("qps") != 4:
    bad.append(f"dcqcn_effective: expected one set of 4 QPs, got {eff!r}")
else:
    p = eff[0]["params"]
    want = {"rp_max_rate": 100, "rp_ai_rate": 3, "rp_time_reset": 4000, "rp_dce_tcp_rtt": 1500,
            "np_min_time_between_cnps": 50, "rp_gd": 11, "enable": 1}
    for k, v in want.items():
        if p.get(k) != v:
            bad.append(f"dcqcn_effective params {k}: {p.get(k)!r}, expected {v}")
    if p != j.get("dcqcn"):
        bad.append("dcqcn_effective differs from the configured dcqcn (no plan ran)")
for b in bad:
    print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
rc=$?
[ "$rc" -eq 0 ] || { cat "$TMP/out.json" >&2; exit 1; }
echo "PASS"
