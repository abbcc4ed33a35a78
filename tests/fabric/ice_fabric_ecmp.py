#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ECMP check on a running fabric: send one UDP packet (dst port 4791) per
source port from SRC_HOST to DST_HOST and see, from `ice-fabric stats
--json` before and after, which spine's port toward DST_LEAF counted it;
compare with the expected spine per port (kernel: `ip route get DST from
SRC iif PORT ipproto udp sport S dport 4791` on the source leaf, the input
lookup a forwarded packet gets (without iif, a non-local `from` address
makes the output lookup fail with "Network is unreachable"); model:
`ice-topo predict`). The leaf's port toward a host is named after it.
Runs in the root namespace (`ip netns exec` would hide /sys/fs/bpf, where
the counters are pinned); the probe sockets are made inside the source
host's namespace with setns(). Runs inside the source host's
namespace (ip netns exec); prints the split and exits 1 on any mismatch.

usage: ice_fabric_ecmp.py FABRIC MODE TOPO SRC_HOST SRC_IP DST_HOST DST_IP
                          SRC_LEAF DST_LEAF NPORTS [SEEN.json]
SEEN.json: where to write the spine each port crossed ({"PORT": "spineN"}).
"""
import ctypes
import json
import os
import socket
import subprocess
import sys
import time

FAB = os.environ.get("ICE_FABRIC", "ice-fabric")
TOPO = os.environ.get("ICE_TOPO", "ice-topo")


def spine_counts(fabric, dst_leaf):
    out = subprocess.run([FAB, "stats", fabric, "--json"], check=True,
                         capture_output=True, text=True).stdout
    return {p["switch"]: p["packets"] for p in json.loads(out)["ports"]
            if p["to"] == dst_leaf and p["switch"].startswith("spine")}


CLONE_NEWNET = 0x40000000


def sockets_in(netns, src_ip, ports):
    """UDP sockets bound to src_ip:port, made inside namespace netns."""
    libc = ctypes.CDLL(None, use_errno=True)
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    there = os.open(f"/run/netns/{netns}", os.O_RDONLY)
    if libc.setns(there, CLONE_NEWNET) != 0:
        sys.exit(f"setns {netns}: {os.strerror(ctypes.get_errno())}")
    socks = {}
    try:
        for p in ports:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((src_ip, p))
            socks[p] = s
    finally:
        if libc.setns(home, CLONE_NEWNET) != 0:
            os._exit(3)  # never go on in the wrong namespace
        os.close(there)
        os.close(home)
    return socks


def send(socks, sport, dst_ip):
    socks[sport].sendto(b"ice-ecmp-probe", (dst_ip, 4791))


def main():
    (fabric, mode, topo, src_host, src_ip, dst_host, dst_ip, src_leaf,
     dst_leaf, nports) = sys.argv[1:11]
    seen_file = sys.argv[11] if len(sys.argv) > 11 else None
    ports = [49152 + 97 * i for i in range(int(nports))]
    if mode == "kernel":
        expect = {}
        for p in ports:
            r = subprocess.run(
                ["ip", "-n", f"ice{fabric}-{src_leaf}", "-j", "route", "get",
                 dst_ip, "from", src_ip, "iif", src_host, "ipproto", "udp",
                 "sport", str(p),
                 "dport", "4791"], check=True, capture_output=True, text=True)
            expect[p] = json.loads(r.stdout)[0]["dev"]  # leaf port = spine name
    else:
        r = subprocess.run([TOPO, "predict", topo, src_host, dst_host] +
                           [str(p) for p in ports], check=True,
                           capture_output=True, text=True)
        expect = {int(l.split()[0]): l.split()[2] for l in r.stdout.splitlines()}
    socks = sockets_in(f"ice{fabric}-{src_host}", src_ip, ports)
    # warm up neighbours on every path so that ARP does not disturb counts
    for p in ports[:8]:
        send(socks, p, dst_ip)
    time.sleep(0.2)
    seen, bad = {}, []
    before = spine_counts(fabric, dst_leaf)
    for p in ports:
        for attempt in range(3):
            send(socks, p, dst_ip)
            deadline = time.time() + 0.5
            while True:
                after = spine_counts(fabric, dst_leaf)
                d = {s: after[s] - before.get(s, 0) for s in after}
                if not after:
                    sys.exit("ice-fabric stats --json shows no spine ports")
                if sum(d.values()) >= 1 or time.time() > deadline:
                    break
                time.sleep(0.01)
            before = after
            hit = [s for s, v in d.items() if v > 0]
            if len(hit) == 1 and d[hit[0]] == 1:
                seen[p] = hit[0]
                break
        else:
            seen[p] = "unclear " + json.dumps(d)
        if seen[p] != expect[p]:
            bad.append(f"  sport {p}: crossed {seen[p]}, expected {expect[p]}")
    split = {}
    for s in seen.values():
        split[s] = split.get(s, 0) + 1
    ok = len(ports) - len(bad)
    src = "ip route get" if mode == "kernel" else "ice-topo predict"
    print(f"ECMP {mode}: {ok}/{len(ports)} source ports crossed the spine "
          f"{src} names; split {json.dumps(split, sort_keys=True)}")
    if bad:
        print("\n".join(bad))
    if seen_file:
        with open(seen_file, "w") as f:
            json.dump({str(p): s for p, s in seen.items()}, f)
    return 0 if not bad and len(split) > 1 else 1


if __name__ == "__main__":
    sys.exit(main())
