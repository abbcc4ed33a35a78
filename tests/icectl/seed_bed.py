# SPDX-License-Identifier: Apache-2.0
"""What agents and a switch telemetry collector write to Redis, for tests
that run a real controller without a test bed (test_ctl_writes,
test_ctl_pfc): RESP over a unix socket from one process (a shell loop
forking redis-cli misses readings), the default bed's switch ports
(`ice-topo gen leaf-spine`: 2 spines, 2 leaves, 4 hosts each), and the
records of one agent's NIC and QP as host_agent writes them."""
import socket

PORTS = [("leaf1", p) for p in ("h1", "h2", "h3", "h4", "spine1", "spine2")] + \
        [("leaf2", p) for p in ("h5", "h6", "h7", "h8", "spine1", "spine2")] + \
        [(s, l) for s in ("spine1", "spine2") for l in ("leaf1", "leaf2")]


def connect(path):
    c = socket.socket(socket.AF_UNIX)
    c.connect(path)
    return c


def cmd(*a):
    a = [str(x).encode() for x in a]
    return b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a)


def send(c, out):
    """Send the commands, wait for as many replies (each one line here)."""
    c.sendall(b"".join(out))
    got = b""
    while got.count(b"\r\n") < len(out):
        got += c.recv(65536)


def port(F, sw, p, seq, ms, dt, octets, *more):
    """A switch port's reading, as ice-fabric export writes it."""
    return [cmd("SADD", f"ice:{F}:sw:ports", f"{sw}:{p}"),
            cmd("HSET", f"ice:{F}:sw:{{{sw}}}:port:{p}", "switch", sw, "port", p,
                "seq", seq, "ts_ms", ms, "dt_ms", "%.1f" % dt, "out-octets", octets,
                "ecn-marked-pkts", 0, "avg-queue-len", 0, "oper-status", "UP", *more)]


def agent(F, h, ip, ms, seq, qps, *nic):
    """Host h's registration and its NIC eth0 (address ip), as an agent."""
    n = f"ice:{F}:{{{h}}}"
    return [cmd("SADD", f"ice:{F}:hosts", h),
            cmd("HSET", f"{n}:host", "host", h, "schema", 1, "last_ms", ms),
            cmd("SADD", f"{n}:nics", "eth0"),
            cmd("HSET", f"{n}:nic:eth0:agent", "nic", "eth0", "addr", ip, "pid", 4,
                "version", "0.1.0", "schema", 1, "interval_ms", 250, "state", "online"),
            cmd("SET", f"{n}:nic:eth0:alive",
                '{"pid":4,"ts_ms":%d,"seq":%d,"addr":"%s"}' % (ms, seq, ip), "PX", 3000),
            cmd("HSET", f"{n}:nic:eth0", "nic", "eth0", "addr", ip, "seq", seq,
                "ts_ms", ms, "qps", qps, *nic)]


def qp(F, h, ip, qpn, remote, ms, seq, tx_bytes):
    """One QP record of host h and its index entry."""
    q, n = f"{ip}:{qpn}", f"ice:{F}:{{{h}}}"
    return [cmd("ZADD", f"{n}:qps", ms, q),
            cmd("HSET", f"{n}:qp:{q}", "id", q, "kind", "qp", "local", ip,
                "remote", remote, "qpn", qpn, "rqpn", qpn + 16, "sport", 49999,
                "ts_ms", ms, "seq", seq,
                "rate", '{"tx_bytes":%s,"cnp_rx":0,"retx":0}' % tx_bytes)]
