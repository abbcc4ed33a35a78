#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks on `ice-probe watch --json` records (one per line) around an incast
on the spine1 path [T_INC, T_END] and leaf1:spine1 going down at T_DOWN.

usage: probe_health_check.py WATCH.json T_INC T_END T_DOWN IV_MS REDIS_MAP_JSON
"""
import json
import statistics
import sys

S1, S2 = "leaf1>spine1>leaf2", "leaf1>spine2>leaf2"


def main():
    recs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    t_inc, t_end, t_down, iv = (int(x) for x in sys.argv[2:6])
    rmap = json.loads(sys.argv[6]) if len(sys.argv) > 6 and sys.argv[6] else None
    fails = []

    def q(rec, path):
        for p in rec["paths"]:
            if p["path"] == path and "qdelay_us" in p:
                return p["qdelay_us"], p.get("base_rtt_us", 0)
        return None, None

    before = [r for r in recs if r["ts_ms"] < t_inc - iv]
    during = [r for r in recs if t_inc + 2 * iv <= r["ts_ms"] <= t_end]
    after = [r for r in recs if t_end + 2 * iv <= r["ts_ms"] < t_down]
    for label, rs in (("before", before), ("incast", during), ("after", after)):
        for path in (S1, S2):
            vals = [q(r, path)[0] for r in rs if q(r, path)[0] is not None]
            if not vals:
                fails.append(f"{label}: no samples on {path}")
                continue
            print(f"{label:6} {path}: queueing delay median {statistics.median(vals):.0f} us"
                  f" max {max(vals):.0f} us over {len(vals)} intervals; base RTT"
                  f" {q(rs[-1], path)[1]:.0f} us")
    med = lambda rs, p: statistics.median([q(r, p)[0] for r in rs if q(r, p)[0] is not None] or [0])
    if med(during, S1) < 1000 or med(during, S1) < 5 * max(med(during, S2), 100):
        fails.append(f"incast: spine1 {med(during, S1):.0f} us vs spine2 {med(during, S2):.0f} us")
    if med(during, S2) > 500:
        fails.append(f"incast raised spine2's queueing delay to {med(during, S2):.0f} us")
    # back to base within two intervals after the incast stops
    late = [r for r in recs if r["ts_ms"] >= t_end + 2 * iv and r["ts_ms"] < t_down]
    if late and q(late[0], S1)[0] is not None and q(late[0], S1)[0] > 500:
        fails.append(f"spine1 not back to base 2 intervals after: {q(late[0], S1)[0]:.0f} us")
    # link down: spine1 dead within 3 intervals, map refreshed without it
    dead = [r for r in recs if r["ts_ms"] > t_down and
            any(p["path"] == S1 and p["state"] == "dead" for p in r["paths"])]
    if not dead:
        fails.append("spine1 path never reported dead")
    else:
        dt = dead[0]["ts_ms"] - t_down
        print(f"link down: spine1 path dead after {dt} ms ({dt / iv:.1f} intervals),"
              f" map age then {dead[0]['map_age_ms']} ms, remaps {dead[0]['remaps']}")
        if dt > 3 * iv:
            fails.append(f"dead after {dt} ms > 3 intervals")
        if dead[0]["map_ts_ms"] < t_down:
            fails.append("map not refreshed after the link went down")
        s2 = [p for p in dead[-1]["paths"] if p["path"] == S2]
        if not s2 or s2[0]["state"] != "up":
            fails.append("spine2 path not up after the link went down")
    if rmap is None:
        fails.append("no map in Redis")
    else:
        names = [p["path"] for p in rmap["paths"]]
        print(f"redis map: {names}, ts_ms {rmap['ts_ms']} (link down at {t_down})")
        if S1 in names or rmap["ts_ms"] < t_down:
            fails.append("Redis map not refreshed without spine1")
    for f in fails:
        print("FAIL:", f, file=sys.stderr)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
