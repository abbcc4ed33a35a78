#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The demo's fabric model (tools/ice-demo): the cut bound, the max-min
flow-level expectation (also on the capacity a background leaves), the
best assignment of a job's QPs to paths, and the placement checks, on
ice-topo's default leaf-spine bed (100 Mbit/s hosts, 200 Mbit/s uplinks)
and its 2:1 variant, against figures worked out by hand. Needs only
ice-topo (no root)."""
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("ICE_BUILD", os.path.dirname(os.path.dirname(os.environ["ICE_TOPO"])))
loader = importlib.machinery.SourceFileLoader("icedemo", os.path.join(root, "tools", "ice-demo"))
spec = importlib.util.spec_from_loader("icedemo", loader)
m = importlib.util.module_from_spec(spec)
loader.exec_module(m)
m.TOPO = os.environ["ICE_TOPO"]
EFF = m.PAYLOAD / (m.PAYLOAD + m.OVERHEAD)
fails = 0


def check(what, got, want, tol=1e-6):
    global fails
    ok = abs(got - want) <= tol * max(abs(want), 1)
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {got:.6g} (want {want:.6g})")
    fails += not ok


def bed(fabric_rate):
    d = tempfile.mkdtemp(prefix="ice-check-demo.")
    path = os.path.join(d, "t.yaml")
    subprocess.run([m.TOPO, "gen", "leaf-spine", "--name", "chk", "--rate", "100mbit",
                    "--fabric-rate", fabric_rate, "--ecmp", "model", "-o", path], check=True)
    b = m.Bed(path)
    subprocess.run(["rm", "-rf", d])
    return b


def ring(b, spines, k=1):
    """Subflows of the alternating ring, flow i's q-th QP on spines[i*k+q]."""
    out = []
    for i, (a, c, _) in enumerate(m.flows_for("allreduce", m.ALTERNATING)):
        for q in range(k):
            sp = spines[i * k + q]
            la, lc = b.leaf[a], b.leaf[c]
            out.append((a, c, [(a, la), (la, sp), (sp, lc), (lc, c)]))
    return out


b = bed("200mbit")
line = 100e6 / 8 * EFF / 1e9
check("bound, all-reduce (host NICs)", m.fabric_bound(b, "allreduce", [m.ALTERNATING])[0] / 1e9,
      line)
# ring edges h1>h5, h5>h2, ...: leaf1 -> leaf2 are the even ones
even = {0: "spine1", 2: "spine1", 4: "spine2", 6: "spine2"}
balanced = [even.get(i, "spine1" if i in (1, 3) else "spine2") for i in range(8)]
check("ECMP 2+2 per leaf: the bound", m.expected_busbw(b, "allreduce", [m.ALTERNATING],
                                                        ring(b, balanced))[0], line)
three = ["spine1"] * 6 + ["spine2"] * 2  # leaf1: h1,h2,h3 on spine1 (3 flows)
check("ECMP 3 on an uplink: 2/3", m.expected_busbw(b, "allreduce", [m.ALTERNATING],
                                                    ring(b, three))[0], line * 2 / 3)
check("ECMP 4 on an uplink: 1/2", m.expected_busbw(b, "allreduce", [m.ALTERNATING],
                                                    ring(b, ["spine1"] * 8))[0], line / 2)
# 4 QPs per connection, 10 of a leaf's 16 on one uplink: 20 Mbit/s each, the
# connection at 4 x its slowest QP
qp = []
for i in range(8):
    qp += ["spine1"] * 2 + ["spine2"] * 2
for i in (0, 2, 4):       # three leaf1 connections put a third QP on spine1
    qp[i * 4 + 2] = "spine1"
check("QP scaling 11/5 split", m.expected_busbw(b, "allreduce", [m.ALTERNATING],
                                                 ring(b, qp, 4), )[0], line * 4 * 200 / 11 / 100)
# all-to-all: one uplink for everything is the worst draw
a2a = []
for a, c, _ in m.flows_for("alltoall", m.ALTERNATING):
    la, lc = b.leaf[a], b.leaf[c]
    a2a.append((a, c, [(a, la), (la, c)] if la == lc else
                [(a, la), (la, "spine1"), ("spine1", lc), (lc, c)]))
check("all-to-all, all 16 cross flows of a leaf on spine1: 200 Mbit/s over 16/7",
      m.expected_busbw(b, "alltoall", [m.ALTERNATING], a2a)[0], line * 200 / (16 / 7) / 100)
check("two jobs: bound per job", m.fabric_bound(b, "allreduce", [m.ALTERNATING[:4],
                                                                 m.ALTERNATING[4:]])[0] / 1e9,
      line)

o = bed("100mbit")
check("oversub bound: the uplinks, half the NIC rate",
      m.fabric_bound(o, "allreduce", [m.ALTERNATING])[0] / 1e9, line / 2)

# the background scenario: unannounced load on one spine (both directions)
# takes its rate off the links it crosses; the job's QPs share what is left


def bg_on(spine, bps):
    return {l: bps for l in (("leaf1", spine), (spine, "leaf2"), ("leaf2", spine),
                             (spine, "leaf1"))}


def ring_of(b, order, spines):
    """Subflows of a ring on `order`, edge i on spines[i]."""
    out = []
    for i, (a, c, _) in enumerate(m.flows_for("allreduce", order)):
        la, lc = b.leaf[a], b.leaf[c]
        out.append((a, c, [(a, la), (la, spines[i]), (spines[i], lc), (lc, c)]))
    return out


J6 = ["h1", "h5", "h2", "h6", "h3", "h7"]  # edges 0, 2, 4 leaf1 -> leaf2; 1, 3, 5 back
bg100 = bg_on("spine1", 100e6)
for what, sp, want in (
        ("2 of 3 edges per direction with 100 Mbit/s of background: 50 each, 1/2",
         ["spine1", "spine1", "spine1", "spine1", "spine2", "spine2"], line / 2),
        ("1 of 3 with the background: the 100 Mbit/s it leaves, the bound",
         ["spine1", "spine1", "spine2", "spine2", "spine2", "spine2"], line),
        ("all 3 on the other spine: 200/3 each, 2/3", ["spine2"] * 6, line * 2 / 3)):
    check(f"6-rank ring, {what}", m.expected_busbw(b, "allreduce", [J6], ring_of(b, J6, sp),
                                                    bg100)[0], want)
for bps, want, why in ((100e6, line, "1 edge per direction on the 100 Mbit/s left"),
                       (120e6, line * 0.8, "1 edge per direction on the 80 Mbit/s left"),
                       (150e6, line * 2 / 3, "all 3 on the other spine beat 50 Mbit/s")):
    v, sub, ex = m.best_assignment(b, "allreduce", [J6], 1, bg_on("spine1", bps))
    check(f"best assignment, 6-rank ring, {bps / 1e6:.0f} Mbit/s background: {why}", v[0], want)
    fails += not ex
    check("  the same background on spine2", m.best_assignment(
        b, "allreduce", [J6], 1, bg_on("spine2", bps))[0][0], want)
# 4 QPs per connection (local search): with 120 Mbit/s of background, 3 of
# a direction's 12 QPs on the 80 Mbit/s left (26.7 each), 9 on 200 (22.2):
# a connection at 4 x 22.2; with 150, 2 QPs on 50 (25), 10 on 200 (20)
check("best assignment, 4 QPs per connection, 120 Mbit/s background: 8/9",
      m.best_assignment(b, "allreduce", [J6], 4, bg_on("spine1", 120e6))[0][0], line * 8 / 9)
check("best assignment, 4 QPs per connection, 150 Mbit/s background: 4/5",
      m.best_assignment(b, "allreduce", [J6], 4, bg_on("spine1", 150e6))[0][0], line * 0.8)
# all-to-all, every cross flow on spine1 (the 8-rank draw above): the
# background on spine2 changes nothing; 100 Mbit/s of it on spine1 halves
# the uplink (16 flows of 1/7 on 100 Mbit/s; the same-leaf flows finish first)
check("all-to-all, background on the other spine: unchanged",
      m.expected_busbw(b, "alltoall", [m.ALTERNATING], a2a, bg_on("spine2", 100e6))[0],
      line * 200 / (16 / 7) / 100)
check("all-to-all, 100 Mbit/s background on their spine: 100 Mbit/s over 16/7",
      m.expected_busbw(b, "alltoall", [m.ALTERNATING], a2a, bg100)[0],
      line * 100 / (16 / 7) / 100)
check("all-to-all best assignment, 6 ranks, 100 Mbit/s background: the NICs' bound",
      m.best_assignment(b, "alltoall", [J6], 1, bg100)[0][0], line)
# 2:1 bed, a 4-rank ring h1 h5 h2 h6 and 50 Mbit/s of background on spine1:
# one QP per connection gets 50 whatever the paths; with 2 QPs, one
# connection's both on spine2 and the other's split: spine2's 3 QPs at 33.3,
# each connection at 2 x 33.3
J4 = ["h1", "h5", "h2", "h6"]
check("oversub best assignment, 4-rank ring, 50 Mbit/s background, 1 QP: 1/2",
      m.best_assignment(o, "allreduce", [J4], 1, bg_on("spine1", 50e6))[0][0], line / 2)
check("oversub best assignment, 2 QPs per connection: 2/3",
      m.best_assignment(o, "allreduce", [J4], 2, bg_on("spine1", 50e6))[0][0], line * 2 / 3)

for bad, want in ((["h1"], "2 or more"), (["h1", "h9"], "not a host"),
                  (["h1", "h1"], "twice"), (["leaf1", "h1"], "not a host")):
    try:
        b.check_ranks([bad], "t")
        print(f"FAIL placement {bad} accepted")
        fails += 1
    except ValueError as e:
        ok = want in str(e)
        print(f"{'ok  ' if ok else 'FAIL'} placement {bad}: {e}")
        fails += not ok
# the rehash recovery rule: the first 0.3 s window from which the ring stays
# at >= 95 % of the bound for 0.6 s; a window under it (an iteration
# boundary) restarts the hold; a series that ends before the hold: never
ser = [(round(0.1 * i, 1), v) for i, v in enumerate(
    [0.4, 0.9, 0.96, 0.97, 0.96, 0.93, 0.96, 0.96, 0.97, 0.96, 0.96, 0.96, 0.97, 0.9])]
for what, pts, want in (("a dip restarts the hold", ser, 0.6),
                        ("a hold cut short by the series' end", ser[:11], None),
                        ("never at the level", [(0.1 * i, 0.94) for i in range(20)], None)):
    got = m.held_from(pts, 0.1)
    ok = got == want
    print(f"{'ok  ' if ok else 'FAIL'} recovery rule, {what}: {got} (want {want})")
    fails += not ok
text = "hash: {algorithm: crc32, seed: 0x5}\nkernel_hash_seed: 5\nswitches:\n" \
       "  - {name: leaf1, tier: 1, hash: {algorithm: crc16}, kernel_hash_seed: 9}\n"
s = m.strip_hash(text)
print(f"{'ok  ' if 'hash' not in s else 'FAIL'} strip_hash leaves {s!r}")
fails += "hash" in s
sys.exit(1 if fails else 0)
