#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# How often the controller writes its operator records (ctl:link, ctl:qp),
# counted on a real redis-server with MONITOR, a real ice-controller, the
# default test bed's topology (ice-topo gen leaf-spine: 2 spines, 2 leaves,
# 8 hosts, 12 links), four agents' QPs and an exporter's 16 switch ports
# seeded every 250 ms (steady loads):
#   - ctl:link, link_refresh 0 (every 100 ms telemetry interval: the old
#     behaviour) against the default (a change past the dead band, and
#     every 2 s): writes per second of each, printed; the default writes at
#     most a quarter, and still refreshes every link;
#   - with link_refresh 3600 s, only a change writes: a port's load raised is
#     in its ctl:link record within 3 s;
#   - ctl:qp why records, with a publication every 0.5 s (lifetime 1.5 s):
#     none rewritten while nothing changes; one QP's demand changed: its
#     record alone written; a QP gone: its record deleted; the controller's
#     counters (ctl:status) agree with MONITOR; icectl qps and explain
#     still show every planned QP's why.
# Needs redis-server, redis-cli and python3; exits 77 without.
set -euo pipefail

ICECTL=${ICECTL:?path of icectl}
ICE_CONTROLLER=${ICE_CONTROLLER:?path of ice-controller}
ICE_TOPO=${ICE_TOPO:?path of ice-topo}

. "$(dirname "$0")/lib_icectl.sh"
icectl_test ctl-writes "ctl_pid mon_pid seeder redis_pid" redis-server redis-cli python3

F=icecw
rc() { redis-cli -s "$S" "$@"; }
ictl() { "$ICECTL" --redis "unix:$S" --fabric "$F" "$@"; }
py() { python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if ($1) else 1)"; }

redis_start
wait_for 10 rc ping >/dev/null 2>&1 || fail "redis-server did not start"
"$ICE_TOPO" gen leaf-spine --name "$F" --ecmp model -o "$tmp/topo.yaml"
"$ICECTL" keygen --out "$tmp" --name plan >/dev/null || fail "icectl keygen"

# agents (every 250 ms): h1 -> h5, h2 -> h6 and back, a QP's rate (bytes/s)
# from $tmp/rate.<host>, none once $tmp/gone.<host> exists; the exporter
# (every 100 ms, as ice-fabric export): every switch port at 2 MB/s, leaf1's
# port to spine1 3 MB/s more while $tmp/hot exists. One process, RESP
# over the socket (a shell loop forking redis-cli misses readings here).
cat >"$tmp/seed.py" <<'PY'
import os, sys, time
from seed_bed import PORTS, agent, connect, port, qp, send, cmd
S, F, D = sys.argv[1], sys.argv[2], sys.argv[3]
IP = {"h1": "10.1.0.1", "h2": "10.1.0.3", "h5": "10.2.0.1", "h6": "10.2.0.3"}
PEER = {"h1": "h5", "h2": "h6", "h5": "h1", "h6": "h2"}
QPN = {"h1": 17, "h2": 18, "h5": 19, "h6": 20}
c = connect(S)
t0 = last = time.time()
seq = extra = 0
nxt_agents = 0
while True:
    now = time.time()
    ms, dt = int(now * 1000), (now - last) * 1000
    if os.path.exists(D + "/hot"):
        extra += 3e6 * (now - last)
    last, seq = now, seq + 1
    out = [cmd("SET", f"ice:{F}:schema", 1)]
    for sw, p in PORTS:
        o = int(2e6 * (now - t0) + (extra if (sw, p) == ("leaf1", "spine1") else 0))
        out += port(F, sw, p, seq, ms, dt, o)
    if now >= nxt_agents:
        nxt_agents = now + 0.25
        for h, ip in IP.items():
            if os.path.exists(f"{D}/gone.{h}"):
                continue
            rate = open(f"{D}/rate.{h}").read().strip()
            out += agent(F, h, ip, ms, seq, 1)
            out += qp(F, h, ip, QPN[h], IP[PEER[h]], ms, seq, rate)
    send(c, out)
    time.sleep(max(0.0, 0.1 - (time.time() - now)))
PY
for h in h1 h2 h5 h6; do echo 9000000 >"$tmp/rate.$h"; done
PYTHONPATH="$(dirname "$0")" python3 "$tmp/seed.py" "$S" "$F" "$tmp" 2>"$tmp/seed.log" &
seeder=$!

start_ctl() { # id, more flags
	local id=$1
	shift
	"$ICE_CONTROLLER" --fabric "$F" --topology "$tmp/topo.yaml" --redis "unix:$S" \
		--key "$tmp/plan.key" --id "$id" --reopt 0 "$@" >"$tmp/$id.out" 2>"$tmp/$id.log" &
	ctl_pid=$!
	wait_for 15 grep -q "^epoch" "$tmp/$id.out" || fail "$id published nothing"
	sleep 0.5 # its first writes of everything are done
}
stop_ctl() {
	kill "$ctl_pid"
	wait "$ctl_pid" 2>/dev/null || true
	ctl_pid=
}
monitor() { # seconds, output file: every command Redis ran meanwhile
	rc MONITOR >"$2" &
	mon_pid=$!
	sleep "$1"
	kill "$mon_pid"
	wait "$mon_pid" 2>/dev/null || true
	mon_pid=
}
count() { grep -c "$1" "$2" || true; }
status() { rc HGET "ice:$F:{ctl}:status" "$1"; }

# ---- ctl:link: every interval, then the default
T=6
start_ctl icecw-a --link-refresh 0
monitor $T "$tmp/mon-a"
before=$(count "\"HSET\" \"ice:$F:ctl:link:" "$tmp/mon-a")
stop_ctl
start_ctl icecw-b
w0=$(status link_writes)
monitor $T "$tmp/mon-b"
after=$(count "\"HSET\" \"ice:$F:ctl:link:" "$tmp/mon-b")
echo "ctl:link writes on the default test bed (12 links, 100 ms telemetry): every interval $before in $T s ($((before / T))/s), dead band + 2 s refresh $after in $T s ($((after / T))/s)"
[ "$before" -ge $((12 * T * 10 / 2)) ] || fail "link_refresh 0 wrote $before in $T s, expected ~$((12 * T * 10))"
[ $((after * 4)) -le "$before" ] || fail "the default wrote $after, more than a quarter of $before"
[ "$after" -ge $((12 * T / 2 / 2)) ] || fail "the default wrote $after in $T s: links not refreshed every 2 s"
for l in h1:leaf1 leaf1:spine1 leaf2:spine2 h8:leaf2; do
	grep -q "\"HSET\" \"ice:$F:ctl:link:$l\"" "$tmp/mon-b" || fail "ctl:link:$l not refreshed in $T s"
done
sleep 1.2 # the controller's status is written every 10 intervals
w1=$(status link_writes)
[ $((w1 - w0)) -ge "$after" ] && [ $((w1 - w0)) -le $((after + 40)) ] ||
	fail "link_writes counted $((w1 - w0)) over ~$T s, MONITOR saw $after"
ictl --json links | py "len(d['links']) == 24 and all(l['state'] for l in d['links'])" ||
	fail "icectl links: not every directed link"
echo "ok: ctl:link written $after times in $T s (was $before), every link refreshed, counted ($((w1 - w0)))"
stop_ctl

# ---- ctl:link: a change is written at once; why records
start_ctl icecw-c --link-refresh 3600s --lifetime 1500ms
monitor 3 "$tmp/mon-c"
quiet=$(count "\"HSET\" \"ice:$F:ctl:link:" "$tmp/mon-c")
pubs=$(count "\"HSET\" \"ice:$F:{ctl}:status\" \"id\"" "$tmp/mon-c")
qpw=$(count "\"HSET\" \"ice:$F:ctl:qp:.*\"host\"" "$tmp/mon-c")
echo "steady, link_refresh 3600 s: $quiet ctl:link writes in 3 s; $pubs publications, $qpw why records written (every one of 4 QPs each time before: $((4 * pubs)))"
[ "$quiet" -le 12 ] || fail "$quiet ctl:link writes in 3 s with nothing changing"
[ "$pubs" -ge 3 ] || fail "$pubs publications in 3 s, expected one every 0.5 s"
[ "$qpw" = 0 ] || fail "$qpw why records rewritten with nothing changed"
touch "$tmp/hot"
wait_for 3 sh -c "[ \"\$(redis-cli -s $S HGET ice:$F:ctl:link:leaf1:spine1 up_measured)\" -ge 4500000 ]" ||
	fail "leaf1>spine1 raised to 5 MB/s: ctl:link says $(rc HGET "ice:$F:ctl:link:leaf1:spine1" up_measured)"
echo "ok: a load raised past the dead band is written at once (refresh 3600 s)"

snap() { # every why record without plan_epoch, plan_ts_ms: "id field=value ..."
	for k in $(rc --scan --pattern "ice:$F:ctl:qp:*"); do
		echo "${k##*:ctl:qp:} $(rc HGETALL "$k" | paste -sd' ')" |
			sed -E 's/ plan_(epoch|ts_ms) [0-9]+//g'
	done | sort
}
snap >"$tmp/snap1"
[ "$(wc -l <"$tmp/snap1")" = 4 ] || fail "why records: $(cat "$tmp/snap1")"
q0=$(status qp_writes)
echo 11000000 >"$tmp/rate.h1"
rc MONITOR >"$tmp/mon-d" &
mon_pid=$!
wait_for 5 sh -c "redis-cli -s $S HGET ice:$F:ctl:qp:10.1.0.1:17 demand_bps | awk '{ exit !(\$1 > 87.5e6 && \$1 < 88.5e6) }'" ||
	fail "h1's QP demand did not reach its record: $(rc HGET "ice:$F:ctl:qp:10.1.0.1:17" demand_bps)"
sleep 1.5 # more publications
kill "$mon_pid"
wait "$mon_pid" 2>/dev/null || true
mon_pid=
snap >"$tmp/snap2"
changed=$(diff "$tmp/snap1" "$tmp/snap2" | grep -c '^>' || true)
written=$(grep "\"HSET\" \"ice:$F:ctl:qp:.*\"host\"" "$tmp/mon-d" | grep -o "ctl:qp:[0-9.:]*" | sort -u)
echo "h1's QP demand 72 -> 88 Mbit/s: records changed $changed, written: $(echo $written)"
[ "$written" = "ctl:qp:10.1.0.1:17" ] || fail "written: '$written', expected h1's QP's alone"
[ "$changed" = 1 ] || fail "$changed records changed: $(diff "$tmp/snap1" "$tmp/snap2")"
[ "$(count "\"HSET\" \"ice:$F:ctl:qp:10.1.0.1:17\" \"host\"" "$tmp/mon-d")" = 1 ] ||
	fail "h1's record written more than once"

# h6's QP ends: its record goes
touch "$tmp/gone.h6"
rc ZREM "ice:$F:{h6}:qps" 10.2.0.3:20 >/dev/null
rc DEL "ice:$F:{h6}:qp:10.2.0.3:20" >/dev/null
wait_for 8 sh -c "[ \"\$(redis-cli -s $S EXISTS ice:$F:ctl:qp:10.2.0.3:20)\" = 0 ]" ||
	fail "the ended QP's why record is still there"
sleep 1.2
[ $(($(status qp_writes) - q0)) -ge 1 ] || fail "qp_writes did not count h1's record"
[ "$(status qp_deletes)" -ge 1 ] || fail "qp_deletes: $(status qp_deletes)"
ictl --json qps >"$tmp/qps.json"
py "len([q for q in d['qps'] if q['planned']]) == 3 and all(q['route'].count('>') == 2 and q['demand'] == 'measured' for q in d['qps'] if q['planned'])" \
	<"$tmp/qps.json" || fail "icectl qps: $(cat "$tmp/qps.json")"
ictl explain 10.1.0.1:17 >"$tmp/explain.out"
grep -q "its demand is measured, 88.0 Mbit/s" "$tmp/explain.out" || fail "explain: $(cat "$tmp/explain.out")"
grep -q "plan: epoch [0-9]*: source port [0-9]*, route leaf1>spine[12]>leaf2" "$tmp/explain.out" ||
	fail "explain: $(cat "$tmp/explain.out")"
echo "ok: why records: none rewritten unchanged, the changed one alone, the ended one deleted (qp_writes $(status qp_writes), qp_deletes $(status qp_deletes)); icectl qps and explain"
