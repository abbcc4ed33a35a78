#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The demo's fabric model (tools/ice-demo): the cut bound, the max-min
flow-level expectation and the placement checks, on ice-topo's default
leaf-spine bed (100 Mbit/s hosts, 200 Mbit/s uplinks) and its 2:1 variant,
against figures worked out by hand. Needs only ice-topo (no root)."""
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
text = "hash: {algorithm: crc32, seed: 0x5}\nkernel_hash_seed: 5\nswitches:\n" \
       "  - {name: leaf1, tier: 1, hash: {algorithm: crc16}, kernel_hash_seed: 9}\n"
s = m.strip_hash(text)
print(f"{'ok  ' if 'hash' not in s else 'FAIL'} strip_hash leaves {s!r}")
fails += "hash" in s
sys.exit(1 if fails else 0)
