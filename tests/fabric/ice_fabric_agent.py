#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads what ice-agent published (docs/redis-schema.md) for the fabric
agent tests (tests/fabric/test_fabric_agent*.sh). A minimal RESP client: no
Python Redis module needed.

  ice_fabric_agent.py REDIS FABRIC bytes SND_HOST RCV_HOST RCV_IP
      the sender's QP toward RCV_IP and the receiver's QP: BPF totals vs the
      transport's own (tp), bytes and packets; prints the agreement
  ice_fabric_agent.py REDIS FABRIC cecnp SND_HOST RCV_HOST RCV_IP
      CE and CNPs: BPF vs the transport's own, both QPs
  ice_fabric_agent.py REDIS FABRIC events HOST OP COUNT NRANKS RANK MIN
      the host's events stream holds >= MIN coll_start and as many coll_end
      of OP with COUNT elements, NRANKS ranks, rank RANK
  ice_fabric_agent.py REDIS FABRIC lastseq HOST NIC
      the newest seq of the NIC's stream (0 when none)
  ice_fabric_agent.py REDIS FABRIC seqs HOST NIC
      the seqs of the NIC stream and of every QP stream of the host: prints
      the intervals missing in the NIC stream (last line: first=N missing=N);
      fails when a QP stream misses more
Exit 0 when the check holds, 1 (with the reason) when not.
"""
import json
import socket
import sys

TOL = 0.01  # 1 %


class Redis:
    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=5)
        self.f = self.s.makefile("rb")

    def cmd(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(out))
        return self._read()

    def _read(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("redis closed the connection")
        t, rest = line[:1], line[1:-2]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            raise RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data.decode()
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise RuntimeError("unexpected reply %r" % line)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def key(fab, host, rest):
    return "ice:%s:{%s}:%s" % (fab, host, rest)


def stream(r, k, count=None):
    args = ["XRANGE", k, "-", "+"] + (["COUNT", count] if count else [])
    return [(eid, dict(zip(f[0::2], f[1::2]))) for eid, f in r.cmd(*args)]


def qp_records(r, fab, host):
    """The newest stream entry of every transport QP (kind qp, src ctrl+bpf)."""
    out = []
    for qid in r.cmd("ZRANGE", key(fab, host, "qps"), 0, -1):
        ents = r.cmd("XREVRANGE", key(fab, host, "qp:%s:ts" % qid), "+", "-", "COUNT", 1)
        if not ents:
            continue
        rec = json.loads(dict(zip(ents[0][1][0::2], ents[0][1][1::2]))["json"])
        if rec["kind"] == "qp" and "ctrl" in rec["src"] and "bpf" in rec["src"]:
            out.append(rec)
    return out


def pair(r, fab, snd, rcv, rcv_ip):
    s = [q for q in qp_records(r, fab, snd) if q["remote"] == rcv_ip]
    if not s:
        fail("no QP of %s toward %s with both ctrl and bpf counters in Redis" % (snd, rcv_ip))
    s = max(s, key=lambda q: q["tp"]["tx_bytes"])
    v = [q for q in qp_records(r, fab, rcv) if q["qpn"] == s["rqpn"]]
    if not v:
        fail("no QP %s on %s (the peer of %s) in Redis" % (s["rqpn"], rcv, s["id"]))
    return s, v[0]


def pct(a, b):
    return 100.0 * abs(a - b) / b if b else (0.0 if a == 0 else 100.0)


LAG_S = 0.05  # the transport publishes its counters every 10 ms: allow 50 ms


def lag(rec, ctr):
    """what BPF may count ahead of the transport's last publication"""
    return (rec.get("rate") or {}).get(ctr, 0.0) * LAG_S


def cmd_bytes(r, fab, snd, rcv, rcv_ip):
    s, v = pair(r, fab, snd, rcv, rcv_ip)
    bad = []
    # the transport counts its UDP payload (BTH + payload + ICRC) sent and the
    # payload received; BPF counts IP lengths: 28 (IP + UDP) more per packet
    # sent, 44 (IP + UDP + BTH + ICRC) more per SEND packet received. Both
    # count retransmissions sent; the receiving transport does not count what
    # it discards (duplicates of packets it has): at most as many as the
    # sender resent.
    retx = s["tp"]["retx"]
    mtu = s["tp"]["tx_bytes"] // max(1, s["tp"]["tx_pkts"])
    rows = [
        ("sender %s tx bytes" % s["id"], s["tx_bytes"] - 28 * s["tx_pkts"], s["tp"]["tx_bytes"], s["tx_bytes"], 0),
        ("sender %s tx pkts" % s["id"], s["tx_pkts"], s["tp"]["tx_pkts"], None, 0),
        ("receiver %s rx bytes" % v["id"], v["rx_bytes"] - 44 * v["rx_pkts"], v["tp"]["rx_bytes"], v["rx_bytes"], retx * mtu),
        ("receiver %s rx pkts" % v["id"], v["rx_pkts"], v["tp"]["rx_pkts"], None, retx),
    ]
    for name, b, t, raw, extra in rows:
        d = pct(b, t)
        line = "%s: bpf %d vs transport %d: %.3f%% apart" % (name, b, t, d)
        if raw is not None:
            line += " (raw IP bytes %d: %.3f%%)" % (raw, pct(raw, t))
        if extra:
            line += " (%d resent by the sender)" % retx
        print(line)
        if t < (1000000 if "bytes" in name else 1000):
            bad.append("%s: only %d counted" % (name, t))
        if abs(b - t) > TOL * t + extra:
            bad.append("%s %.3f%% apart" % (name, d))
    if bad:
        fail("; ".join(bad))


def cmd_cecnp(r, fab, snd, rcv, rcv_ip):
    s, v = pair(r, fab, snd, rcv, rcv_ip)
    rows = [
        ("receiver %s CE received" % v["id"], v, "ce", "ce"),
        ("receiver %s CNPs sent" % v["id"], v, "cnp_tx", "cnp_tx"),
        ("sender %s CNPs received" % s["id"], s, "cnp_rx", "cnp_rx"),
    ]
    bad = []
    for name, rec, ctr, tctr in rows:
        b, t, l = rec[ctr], rec["tp"][tctr], lag(rec, ctr)
        print("%s: bpf %d vs transport %d (%.2f%% apart; %.0f/s)" % (name, b, t, pct(b, t), l / LAG_S))
        if t == 0:
            bad.append("%s: none (no congestion?)" % name)
        elif abs(b - t) > max(3, TOL * t) + l:
            bad.append("%s: bpf %d vs transport %d" % (name, b, t))
    if bad:
        fail("; ".join(bad))


def cmd_events(r, fab, host, op, count, nranks, rank, least):
    ents = stream(r, key(fab, host, "events"))
    evs = [json.loads(f["json"]) for _, f in ents]
    kinds = {}
    for e in evs:
        kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
    coll = [e for e in evs if e["kind"] in ("coll_start", "coll_end")]
    bad = [e for e in coll
           if e["op"] != op or e["count"] != int(count) or e["nranks"] != int(nranks)
           or e["rank"] != int(rank)]
    st = sum(1 for e in coll if e["kind"] == "coll_start")
    en = sum(1 for e in coll if e["kind"] == "coll_end")
    print("%s events: %s" % (host, " ".join("%s=%d" % kv for kv in sorted(kinds.items()))))
    if bad:
        fail("%s: %d collective events not %s count %s nranks %s rank %s, e.g. %s"
             % (host, len(bad), op, count, nranks, rank, json.dumps(bad[0])))
    if st < int(least) or st != en:
        fail("%s: %d coll_start and %d coll_end (expected >= %s, as many)" % (host, st, en, least))


def seqs_of(r, k):
    return [json.loads(f["json"])["seq"] for _, f in stream(r, k)]


def cmd_lastseq(r, fab, host, nic):
    ents = r.cmd("XREVRANGE", key(fab, host, "nic:%s:ts" % nic), "+", "-", "COUNT", 1)
    print(json.loads(dict(zip(ents[0][1][0::2], ents[0][1][1::2]))["json"])["seq"] if ents else 0)


def missing(seq):
    """intervals missing inside a stream of seqs: (count, first gap or None)"""
    n, first = 0, None
    for a, b in zip(seq, seq[1:]):
        if b != a + 1:
            n += b - a - 1
            first = first or (a, b)
    return n, first


def cmd_seqs(r, fab, host, nic):
    seq = seqs_of(r, key(fab, host, "nic:%s:ts" % nic))
    if not seq:
        fail("%s: the NIC stream is empty" % host)
    n, gap = missing(seq)
    worst = 0
    qids = r.cmd("ZRANGE", key(fab, host, "qps"), 0, -1)
    for qid in qids:
        qn, qgap = missing(seqs_of(r, key(fab, host, "qp:%s:ts" % qid)))
        if qn > n:
            fail("%s QP %s stream: %d intervals missing (%d -> %d), more than the NIC's %d"
                 % (host, qid, qn, qgap[0], qgap[1], n))
        worst = max(worst, qn)
    print("%s: NIC stream seq %d..%d, %d entries, %d missing%s; %d QP streams, at most %d missing"
          % (host, seq[0], seq[-1], len(seq), n,
             " (first gap %d -> %d)" % gap if gap else "", len(qids), worst))
    print("first=%d missing=%d" % (seq[0], n))


def main(argv):
    if len(argv) < 4:
        print(__doc__)
        return 2
    r = Redis(argv[1])
    cmds = {"bytes": cmd_bytes, "cecnp": cmd_cecnp, "events": cmd_events,
            "lastseq": cmd_lastseq, "seqs": cmd_seqs}
    cmds[argv[3]](r, argv[2], *argv[4:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
