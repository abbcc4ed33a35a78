#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Kernel routes of a running fabric's switches, for the fabric suite.

  ice_fabric_routes.py dump FABRIC TOPO
      for every switch, for every host address in TOPO: the next hops
      ("gateway dev" pairs, sorted) of the longest-prefix kernel route;
      JSON on stdout. Static routes are /32s, FRR's the NICs' /31s: the
      sets compare, the prefixes need not.
  ice_fabric_routes.py wait FABRIC SWITCH ADDR N TIMEOUT
      poll until SWITCH's route toward ADDR has N next hops; prints the
      seconds it took, exits 1 on timeout.
"""
import ipaddress
import json
import re
import subprocess
import sys
import time


def routes(ns):
    out = subprocess.run(["ip", "-n", ns, "-j", "route", "show"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def nexthops(rts, addr):
    a = ipaddress.ip_address(addr)
    best, plen = None, -1
    for r in rts:
        d = r.get("dst", "")
        net = ipaddress.ip_network("0.0.0.0/0" if d == "default" else
                                   (d if "/" in d else d + "/32"))
        if a in net and net.prefixlen > plen:
            best, plen = r, net.prefixlen
    if best is None:
        return []
    if "nexthops" in best:
        return sorted(f'{n.get("gateway", "-")} {n["dev"]}' for n in best["nexthops"])
    return [f'{best.get("gateway", "-")} {best.get("dev")}']


def main():
    if sys.argv[1] == "dump":
        fabric, topo = sys.argv[2:4]
        text = open(topo).read()
        switches = re.findall(r"^  - \{name: (\S+), tier: [123]", text, re.M)
        hosts = re.findall(r"addr: ([0-9.]+)/", text)
        print(json.dumps({s: {h: nexthops(routes(f"ice{fabric}-{s}"), h) for h in hosts}
                          for s in switches}, indent=1, sort_keys=True))
        return 0
    fabric, sw, addr, n, timeout = sys.argv[2:7]
    t0 = time.monotonic()
    while True:
        have = len(nexthops(routes(f"ice{fabric}-{sw}"), addr))
        if have == int(n):
            print(f"{time.monotonic() - t0:.2f}")
            return 0
        if time.monotonic() - t0 > float(timeout):
            print(f"timeout: {sw} has {have} next hops toward {addr}, not {n}",
                  file=sys.stderr)
            return 1
        time.sleep(0.02)


if __name__ == "__main__":
    sys.exit(main())
