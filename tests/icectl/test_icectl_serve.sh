#!/usr/bin/env bash
# icectl serve's JSON endpoints against a real redis-server with seeded
# keys (no root, no namespaces; the test bed's run is in
# tests/fabric/test_fabric_dash.sh):
#   - bad input: a bad --listen, a Redis without the fabric's keys: exit 2;
#   - /api/topology from --topology: every node and link of the file;
#   - /api/links: both directions of every link; the controller's measured
#     load and the utilisation against the link's rate; a port whose
#     oper-status is DOWN makes its link down both ways, so does the test
#     bed's links record; without a controller's reading the switch's
#     out-octets between two readings give the load;
#   - /api/jobs: an all-reduce's start and end give its busbw (nccl-tests'
#     factor), a job with starts only says busbw is not available, a
#     malformed event is skipped;
#   - /api/timeline: plans and policy changes merged, newest first;
#   - /api/status, /api/qps, /, /dash.js, a 404;
#   - Redis stopped: {"error"} and the server lives; Redis back: answers;
#   - with chromium: the page's DOM (--dump-dom) draws every directed link,
#     the down ones red, and a screenshot is kept in the build directory.
# Needs redis-server, redis-cli, curl, python3 (exit 77 without).
set -euo pipefail

ICECTL=${ICECTL:?path of icectl}
ICE_TOPO=${ICE_TOPO:?path of ice-topo}
ART=${ICE_ARTEFACT_DIR:-}
here=$(cd "$(dirname "$0")" && pwd)

. "$(dirname "$0")/lib_icectl.sh"
icectl_test serve "srv_pid redis_pid" redis-server redis-cli curl python3

F=icesv
rc() { redis-cli -s "$S" "$@"; }
start_redis() {
	redis_start
	wait_for 10 rc ping >/dev/null 2>&1 || fail "redis-server did not start"
}
# get PATH: the endpoint's body (fails on an HTTP error)
get() { curl -sf --max-time 5 "$URL$1"; }
# check PATH 'EXPR' [what]: EXPR (Python, sees d: the document) must hold
check() {
	local body
	body=$(get "$1") || fail "GET $1 failed"
	python3 -c "import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if ($2) else 1)" "$body" ||
		fail "GET $1: not ($2): $(head -c 1500 <<<"$body")"
}

start_redis
"$ICE_TOPO" gen leaf-spine --name "$F" --hosts-per-leaf 1 --rate 100mbit -o "$tmp/topo.yaml"

# ---- bad input
set +e
out=$("$ICECTL" serve --redis "unix:$S" --fabric "$F" 2>&1)
code=$?
set -e
[ "$code" = 2 ] && grep -q "has no keys of fabric '$F'" <<<"$out" ||
	fail "serve on a Redis without the fabric's keys: exit $code: $out"
rc SET "ice:$F:schema" 1 >/dev/null
set +e
out=$("$ICECTL" serve --redis "unix:$S" --fabric "$F" --listen 127.0.0.1:http-x 2>&1)
code=$?
set -e
[ "$code" = 2 ] && grep -q "cannot listen on 127.0.0.1:http-x: expected ADDR:PORT" <<<"$out" ||
	fail "a bad --listen: exit $code: $out"
echo "ok: no fabric keys, bad --listen: one line, exit 2"

# ---- seeded keys
now=$(($(date +%s%N) / 1000000))
ns=$((now * 1000000))
ev() { # host, JSON of one event
	rc XADD "ice:$F:{$1}:events" '*' nic eth0 json "$2" >/dev/null
}
rc >/dev/null <<R
SADD ice:$F:hosts h1 h2
SADD ice:$F:sw:ports leaf1:spine1 leaf1:spine2 spine2:leaf1 leaf2:spine2 spine1:leaf2
HSET ice:$F:sw:{leaf1}:port:spine1 switch leaf1 port spine1 peer spine1 seq 5 ts_ms $now oper-status UP out-octets 1000 avg-queue-len 30000 out-discards 7 ecn-marked-pkts 11
HSET ice:$F:sw:{leaf1}:port:spine2 switch leaf1 port spine2 peer spine2 seq 5 ts_ms $now oper-status DOWN out-octets 500
HSET ice:$F:sw:{spine2}:port:leaf1 switch spine2 port leaf1 peer leaf1 seq 5 ts_ms $now oper-status UP out-octets 500
HSET ice:$F:sw:{leaf2}:port:spine2 switch leaf2 port spine2 peer spine2 seq 5 ts_ms $now oper-status UP out-octets 1000000
HSET ice:$F:sw:{spine1}:port:leaf2 switch spine1 port leaf2 peer leaf2 seq 5 ts_ms $now oper-status UP out-octets 0
HSET ice:$F:links leaf2:spine1 '{"state":"down","ts_ms":$now}'
HSET ice:$F:ctl:link:leaf1:spine1 up_planned 2500000 up_measured 6250000 up_state ok down_measured 125000 down_state ok ts_ms $now
XADD ice:$F:{ctl}:log * epoch 7 id ctlA ts_ms $((now - 3000)) hosts 2
XADD ice:$F:{ctl}:log * epoch 8 id ctlA ts_ms $((now - 1000)) hosts 2
XADD ice:$F:policy:log * action apply version 3 source /etc/ice/p.yaml user alice ts_ms $((now - 2000))
R
# job A: an all-reduce of 1 MiB over 2 ranks in 1 ms (rank 0 on h1);
# busbw = 1048576 B / 1 ms x 2(2-1)/2 = 1.048576 GB/s
ev h1 "{\"kind\":\"comm_init\",\"pid\":10,\"seq\":1,\"ts_ns\":$ns,\"comm\":\"00000000000000aa\",\"job\":\"jobA\",\"rank\":0,\"nranks\":2}"
ev h1 "{\"kind\":\"coll_start\",\"pid\":10,\"seq\":2,\"ts_ns\":$ns,\"comm\":\"00000000000000aa\",\"job\":\"jobA\",\"rank\":0,\"nranks\":2,\"op\":\"allreduce\",\"bytes\":1048576}"
ev h1 'not json'
ev h1 "{\"kind\":\"coll_end\",\"pid\":10,\"seq\":3,\"ts_ns\":$((ns + 1000000)),\"comm\":\"00000000000000aa\",\"job\":\"jobA\",\"rank\":0,\"nranks\":2,\"op\":\"allreduce\",\"bytes\":1048576}"
# job B: starts only (the NCCL API preload reports no ends)
ev h2 "{\"kind\":\"coll_start\",\"pid\":20,\"seq\":1,\"ts_ns\":$ns,\"comm\":\"00000000000000bb\",\"rank\":1,\"nranks\":2,\"op\":\"allgather\",\"bytes\":4096}"

"$ICECTL" serve --redis "unix:$S" --fabric "$F" --listen 127.0.0.1:0 --topology "$tmp/topo.yaml" \
	>"$tmp/serve.out" 2>"$tmp/serve.log" &
srv_pid=$!
wait_for 5 grep -q '^icectl serve: .*http://127.0.0.1:[0-9]*/' "$tmp/serve.out" || fail "serve did not start"
URL=$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/serve.out")
echo "serving at $URL"

# ---- topology: the file's 6 nodes and 6 links
check /api/topology 'd["source"]=="file" and len(d["nodes"])==6 and len(d["links"])==6 and
  {l["link"] for l in d["links"]}=={"h1:leaf1","h2:leaf2","leaf1:spine1","leaf1:spine2","leaf2:spine1","leaf2:spine2"} and
  all(l["rate_bps"]==100e6 for l in d["links"]) and
  {n["name"]:n["tier"] for n in d["nodes"]}=={"h1":0,"h2":0,"leaf1":1,"leaf2":1,"spine1":2,"spine2":2}'
echo "ok: /api/topology: the file's nodes, tiers, links and rates"

# ---- links
L='{(l["from"],l["to"]):l for l in d["links"]}'
check /api/links "len(d['links'])==12 and len($L)==12"
check /api/links "(lambda m: m[('leaf1','spine1')]['measured']==6250000 and abs(m[('leaf1','spine1')]['util']-0.5)<1e-9
  and m[('leaf1','spine1')]['measured_by']=='controller' and m[('leaf1','spine1')]['planned']==2500000
  and m[('leaf1','spine1')]['queue']==30000 and m[('leaf1','spine1')]['drops']==7 and m[('leaf1','spine1')]['ce_total']==11
  and not m[('leaf1','spine1')]['down'] and m[('leaf1','spine1')]['oper']=='UP')($L)"
check /api/links "(lambda m: m[('leaf1','spine2')]['down'] and m[('spine2','leaf1')]['down']
  and m[('leaf1','spine2')]['down_why']=='port leaf1:spine2 oper-status DOWN'
  and m[('spine2','leaf1')]['down_why']=='port leaf1:spine2 oper-status DOWN')($L)"
check /api/links "(lambda m: m[('leaf2','spine1')]['down'] and m[('spine1','leaf2')]['down']
  and m[('spine1','leaf2')]['down_why']=='ice-fabric link: down'
  and sum(1 for l in m.values() if l['down'])==4)($L)"
check /api/links "(lambda m: m[('h1','leaf1')]['measured'] is None and 'util' not in m[('h1','leaf1')])($L)"
echo "ok: /api/links: loads, utilisation, queue, drops; down by oper-status (both ways) and by the links record"
# the switch's counters when no controller reads them: 1 MB more in 500 ms
sleep 0.3
rc HSET "ice:$F:sw:{leaf2}:port:spine2" out-octets 2000000 ts_ms $((now + 500)) >/dev/null
check /api/links "(lambda m: m[('leaf2','spine2')]['measured']==2000000 and m[('leaf2','spine2')]['measured_by']=='switch counters'
  and abs(m[('leaf2','spine2')]['util']-0.16)<1e-9)($L)"
echo "ok: /api/links: the load from the switch's out-octets between two readings (2 MB/s, 16 %)"

# ---- jobs
J='{j["comm"]:j for j in d["jobs"]}'
check /api/jobs "(lambda m: len(m)==2 and m['00000000000000aa']['job']=='jobA' and m['00000000000000aa']['nranks']==2
  and m['00000000000000aa']['ops']=={'allreduce':1} and m['00000000000000aa']['hosts']==['h1']
  and abs(m['00000000000000aa']['busbw_gbps']-1.048576)<1e-6
  and abs(m['00000000000000aa']['calls'][0]['time_us']-1000)<1e-6
  and m['00000000000000bb']['busbw_gbps'] is None and 'not available' in m['00000000000000bb']['busbw_note']
  and m['00000000000000bb']['ops']=={'allgather':1})($J)"
echo "ok: /api/jobs: busbw 1.048576 GB/s from an all-reduce's start and end; starts only: not available"

# ---- timeline, status, qps, files, 404
check /api/timeline '[(e["kind"], e.get("epoch") or e.get("version")) for e in d["events"]]==[("plan","8"),("policy","3"),("plan","7")]
  and d["events"][1]["by"]=="alice"'
echo "ok: /api/timeline: plans and policy changes merged, newest first"
check /api/status 'd["fabric"]=="'$F'" and d["hosts"]==["h1","h2"] and "no leader: no controller holds the lease" in d["stale"]'
check /api/qps 'd["qps"]==[]'
check /api/config 'd["refresh_ms"]==1000 and d["fabric"]=="'$F'"'
get / | grep -q '<script src="/dash.js"></script>' || fail "/ is not the page"
get /dash.js | grep -q "function refresh" || fail "/dash.js"
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/api/nothing")
[ "$code" = 404 ] || fail "/api/nothing: HTTP $code"
echo "ok: /api/status, /api/qps, /api/config, the page, its script, 404"

# ---- Redis away and back
kill "$redis_pid"
wait "$redis_pid" 2>/dev/null || true
redis_pid=""
check /api/links '"error" in d and "Redis at unix:" in d["error"]'
kill -0 "$srv_pid" || fail "serve died with Redis"
start_redis
rc SET "ice:$F:schema" 1 >/dev/null
check /api/links 'len(d["links"])==12 and not any(l["down"] for l in d["links"])'
echo "ok: Redis stopped: an error document; back: answers again"
# the down ports again, for the page
rc SADD "ice:$F:sw:ports" leaf1:spine2 >/dev/null
rc HSET "ice:$F:sw:{leaf1}:port:spine2" switch leaf1 port spine2 peer spine2 ts_ms "$now" oper-status DOWN >/dev/null
rc HSET "ice:$F:ctl:link:leaf1:spine1" up_measured 12000000 up_state ok ts_ms "$now" >/dev/null

# ---- the page in headless Chromium
set +e
links=$("$here/ice_dash_browser.py" links "$URL/" --wait 3000 2>"$tmp/chromium.log")
code=$?
set -e
if [ "$code" = 77 ]; then
	echo "no chromium: the page's own check skipped (the endpoints passed)"
	exit 0
fi
[ "$code" = 0 ] || fail "chromium: exit $code"
python3 - "$links" "$tmp/topo.yaml" <<'P' || fail "the page's links: $links"
import json, sys
links = json.loads(sys.argv[1])
got = {(l["link"], l["from"], l["to"]): l for l in links}
want = {("h1:leaf1", "h1", "leaf1"), ("h2:leaf2", "h2", "leaf2")}
for lk in ("leaf1:spine1", "leaf1:spine2", "leaf2:spine1", "leaf2:spine2"):
    want.add((lk,) + tuple(lk.split(":")))
want |= {(l, b, a) for (l, a, b) in want}
assert set(got) == want, "drawn %s, expected %s" % (sorted(got), sorted(want))
red = {k for k, l in got.items() if l["state"] == "down" and l["stroke"] == "#e00000"}
assert red == {("leaf1:spine2", "leaf1", "spine2"), ("leaf1:spine2", "spine2", "leaf1")}, red
assert got[("leaf1:spine1", "leaf1", "spine1")]["stroke"] == "#8b00b0", got  # 96 %: the saturated colour
assert got[("h1:leaf1", "h1", "leaf1")]["state"] == "nodata"
P
echo "ok: the page (headless Chromium, --dump-dom) draws all 12 directed links, leaf1:spine2 red both ways"
if [ -n "$ART" ]; then
	"$here/ice_dash_browser.py" shot "$URL/" "$ART/dashboard-endpoints.png" --wait 3000 2>>"$tmp/chromium.log" ||
		fail "screenshot"
	echo "screenshot: $ART/dashboard-endpoints.png"
fi
echo PASS
