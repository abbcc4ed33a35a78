#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Smoke test of tools/bench-transport --quick: it runs, prints its table and
# writes its JSON. No figure is checked: benchmarks print, they do not assert.
# Exits 77 (skipped) when bench-transport does (not root, a tool missing).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "test_perf_smoke: skipped: needs root" >&2; exit 77; }
TMP=$(mktemp -d /tmp/ice-perf-smoke.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

"$ROOT/tools/bench-transport" --quick --json "$TMP/table.json" | tee "$TMP/out"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 77 ] && exit 77
if [ "$rc" -ne 0 ]; then
	echo "FAIL: bench-transport --quick exited $rc" >&2
	exit 1
fi
for want in '^test ' 'ice-perf ' 'ice-perf-gso' 'iperf3-udp' 'iperf3-tcp' 'TBF 200 Mbit/s'; do
	grep -q -- "$want" "$TMP/out" || { echo "FAIL: no '$want' in the table" >&2; exit 1; }
done
rows=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$TMP/table.json") ||
	{ echo "FAIL: --json wrote no valid JSON" >&2; exit 1; }
[ "$rows" -ge 16 ] || { echo "FAIL: $rows rows in the JSON table, expected 16" >&2; exit 1; }
# every ice-perf run moved data, with and without --gso
python3 - "$TMP/table.json" <<'PY' || exit 1
import json, sys
bad = [r for r in json.load(open(sys.argv[1]))
       if r["tool"].startswith("ice-perf") and not (r["goodput_mbps"] or 0) > 0]
if bad:
    sys.exit("FAIL: ice-perf rows without goodput: %s" % bad)
PY
echo "PASS"
