#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# icectl serve's dashboard on the test bed, in headless Chromium: a 2x2
# leaf-spine, 2 hosts per leaf, 100 Mbit/s (ice-fabric up --redis: switch
# telemetry exporter), an agent per host and a controller, as
# test_fabric_ctl_loop.sh; ice-perf h1 -> h3 for load.
#   1. icectl serve takes the topology from the controller (ctl:members);
#      the page's DOM (--dump-dom) draws both directions of every link of
#      the topology file, and the job's path carries a measured load;
#   2. the page stays open (DevTools protocol, real time, 1 s refresh);
#      `ice-fabric link leaf1:spine2 down` turns leaf1 -> spine2 red within
#      two refreshes of the command's return; a screenshot of the page then
#      is kept in the build directory (dashboard-link-down.png).
# Skipped (77) without chromium: tools/setup installs Debian's.
. "$(dirname "$0")/lib_fabric.sh"
. "$(dirname "$0")/lib_fabric_ctl.sh"
ICECTL=${ICECTL:-$BUILD/icectl/icectl}
BROWSER=$(cd "$(dirname "$0")/../icectl" && pwd)/ice_dash_browser.py
ART=${ICE_ARTEFACT_DIR:-$ICE_TMP}
ice_need_tool "$ICECTL" curl
command -v chromium >/dev/null 2>&1 ||
	ice_skip "chromium is not installed (tools/setup installs Debian's chromium)"

ctl_fabric_up cd
ctl_start D --reopt 30s --lifetime 5s
wait_for 10 bash -c "[ -n \"\$(redis-cli -h $rhost -p $rport GET 'ice:$name:{ctl}:leader')\" ]" ||
	ctl_fail "no controller took the lease in 10 s"
perf h1 h3 40

"$ICECTL" serve --redis "$redis" --fabric "$name" --listen 127.0.0.1:0 \
	>"$ICE_TMP/serve.out" 2>"$ICE_TMP/serve.log" &
ICE_PIDS+=($!)
wait_for 5 grep -q 'http://127.0.0.1:[0-9]*/' "$ICE_TMP/serve.out" || ctl_fail "icectl serve did not start"
URL=$(grep -o 'http://127.0.0.1:[0-9]*' "$ICE_TMP/serve.out")/
echo "dashboard at $URL"
wait_for 5 bash -c "curl -sf '${URL}api/topology' | grep -q '\"source\":\"file\"'" ||
	ctl_fail "the dashboard did not take the controller's topology: $(curl -s "${URL}api/topology" | head -c 300)"
# the job's load reaches the controller's link records
wait_for 10 bash -c "curl -sf '${URL}api/links' | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if any(l[\"from\"] == \"leaf1\" and l[\"to\"].startswith(\"spine\") and (l.get(\"util\") or 0) > 0.05
                  for l in d[\"links\"]) else 1)'" || ctl_fail "no load measured on leaf1's uplinks"

# 1. every link of the file on the page
links=$("$BROWSER" links "$URL" --wait 3000 2>"$ICE_TMP/chromium.log") || ctl_fail "chromium --dump-dom failed"
python3 - "$links" "$file" <<'P' || ctl_fail "the page's links: $links"
import json, re, sys
links = json.loads(sys.argv[1])
want = set()
for m in re.finditer(r"\{a: ([^:,}]+)(?::[^,}]*)?, b: ([^:,}]+)(?::[^,}]*)?", open(sys.argv[2]).read()):
    a, b = m.group(1).strip(), m.group(2).strip()
    want |= {("%s:%s" % (a, b), a, b), ("%s:%s" % (a, b), b, a)}
got = {(l["link"], l["from"], l["to"]) for l in links}
assert len(want) == 16, "the file has %d directed links, 16 expected (8 links)" % len(want)
assert got == want, "missing %s, extra %s" % (sorted(want - got), sorted(got - want))
assert not [l for l in links if l["state"] == "down"], "a link is down already"
loaded = [l for l in links if l["state"] == "ok" and l["stroke"] != "#b0b0b0"]
assert loaded, "no link is coloured by a measured load"
print("page: %d directed links, %d coloured by a measured load" % (len(links), len(loaded)))
P

# 2. a link down turns red within two refreshes
out=$("$BROWSER" watch "$URL" --link leaf1:spine2 --from leaf1 --to spine2 \
	--then "$ICE_FABRIC link --fabric $name leaf1:spine2 down" --png "$ART/dashboard-link-down.png" \
	2>>"$ICE_TMP/chromium.log")
code=$?
echo "watch: $out"
[ "$code" = 0 ] || ctl_fail "leaf1 -> spine2 did not turn red within two refreshes (exit $code): $out"
[ -s "$ART/dashboard-link-down.png" ] || ctl_fail "no screenshot"
echo "screenshot: $ART/dashboard-link-down.png"
curl -sf "${URL}api/links" | python3 -c '
import json, sys
d = json.load(sys.stdin)
l = [l for l in d["links"] if l["from"] == "spine2" and l["to"] == "leaf1"][0]
assert l["down"], l
print("spine2 -> leaf1:", l["down_why"])' || ctl_fail "spine2 -> leaf1 not down in /api/links"
perf_stop
echo "PASS"
