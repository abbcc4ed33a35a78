#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ice-sim at small sizes: plan quality against the lower bound and against
plain ECMP, and its bad input.

Usage: test_ice_sim.py PATH/TO/ice-sim

Cases (fat-tree k = 8..16 and leaf-spines; ring all-reduce and all-to-all;
1 to 4 QPs; random and rack placement; several jobs): every job's demand is
equal, so the balanced colouring reaches the bound; ICE must be within
BOUND_FACTOR of ctl_bound and never above the plain-ECMP utilisation, and
every job's busbw ratio at least ECMP's. Bad input: a fabric too large for
the memory limit (RLIMIT_AS, and --max-mem) is refused before it is
generated; a jobs file naming hosts the fabric lacks is refused with every
such name as FILE:LINE and no plan output. Temporary files are ice-prefixed
and removed.
"""
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

# Equal demands on these fabrics: the balanced colouring reaches the bound
# (a case marked with a factor is held to that factor instead).
BOUND_FACTOR = 1.0 + 1e-6
A2A_OVERSUB_FACTOR = 1.05  # all-to-all, random jobs, 2:1 leaf-spine: 1.0076 seen
EPS = 1e-9

CASES = [
    ["--k", "8"],
    ["--k", "8", "--qps", "4", "--placement", "rack"],
    ["--k", "8", "--op", "all_to_all", "--jobs", "4", "--qps", "2"],
    ["--k", "12", "--jobs", "3", "--qps", "3"],
    ["--k", "12", "--jobs", "4", "--placement", "rack", "--qps", "4"],
    ["--k", "16", "--jobs", "4"],
    ["--k", "16", "--jobs", "8", "--qps", "2", "--placement", "rack"],
    ["--k", "16", "--op", "all_to_all", "--jobs", "64"],
    ["--leaf-spine", "4,16,8"],
    ["--leaf-spine", "8,24,8", "--jobs", "3", "--qps", "4"],
    (["--leaf-spine", "6,12,12", "--op", "all_to_all", "--jobs", "6"], A2A_OVERSUB_FACTOR),
    ["--leaf-spine", "16,32,16", "--jobs", "2", "--placement", "rack", "--qps", "2"],
]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def run(sim, args, preexec=None, timeout=60):
    t0 = time.monotonic()
    p = subprocess.run([sim] + args, capture_output=True, text=True, timeout=timeout,
                       preexec_fn=preexec)
    return p, time.monotonic() - t0


def quality(sim):
    for case in CASES:
        args, factor = case if isinstance(case, tuple) else (case, BOUND_FACTOR)
        p, dt = run(sim, args + ["--json", "--budget", "0.5"])
        name = " ".join(args)
        check(p.returncode == 0, "%s: exit %d: %s" % (name, p.returncode, p.stderr.strip()))
        if p.returncode != 0:
            continue
        r = json.loads(p.stdout)
        ice, bound, ecmp = r["ice_util"], r["bound"], r["ecmp_util"]
        print("%-60s ICE %.4f bound %.4f ECMP %.4f (%.2f s)" % (name, ice, bound, ecmp, dt))
        check(bound > 0, "%s: bound %g" % (name, bound))
        check(ice >= bound * (1 - 1e-9), "%s: ICE %.6f below the bound %.6f" % (name, ice, bound))
        check(ice <= bound * factor,
              "%s: ICE %.6f above %.6f x the bound %.6f" % (name, ice, factor, bound))
        check(ice <= ecmp + EPS, "%s: ICE %.6f worse than ECMP %.6f" % (name, ice, ecmp))
        for j, jb in enumerate(r["jobs"]):
            check(jb["ice_busbw_ratio"] >= jb["ecmp_busbw_ratio"] - 1e-9,
                  "%s: job %d busbw ratio ICE %.4f < ECMP %.4f" %
                  (name, j, jb["ice_busbw_ratio"], jb["ecmp_busbw_ratio"]))
            check(jb["ice_busbw_ratio"] <= 1 + 1e-9,
                  "%s: job %d busbw ratio %.4f above ideal" % (name, j, jb["ice_busbw_ratio"]))
        check(r["maxrss"] > 0 and r["mem_estimate"] > 0, "%s: memory figures" % name)
    # an arriving job planned incrementally: at or above its bound, no worse
    # than 2x (each link holds one planned flow before it arrives)
    p, _ = run(sim, ["--k", "16", "--jobs", "4", "--arrive", "64", "--json"])
    check(p.returncode == 0, "arrive: exit %d: %s" % (p.returncode, p.stderr.strip()))
    if p.returncode == 0:
        r = json.loads(p.stdout)
        print("arrive: util %.4f bound %.4f" % (r["inc_util"], r["inc_bound"]))
        check(r["inc_bound"] * (1 - 1e-9) <= r["inc_util"] <= 2 * r["inc_bound"] * (1 + 1e-9),
              "arrive: util %.4f vs bound %.4f" % (r["inc_util"], r["inc_bound"]))


def too_large(sim):
    # AddressSanitizer reserves terabytes of shadow address space at start-up,
    # so a sanitizer build cannot run under RLIMIT_AS at all: there, only the
    # estimate's own limit (--max-mem) is checked
    asan = b"__asan_init" in open(sim, "rb").read()
    # k = 160: a million hosts, ~10 GiB; under a 1 GiB address-space limit it
    # must be refused from its estimate, at once, having allocated little
    gib = 1 << 30

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (gib, gib))

    if asan:
        print("k=160 under RLIMIT_AS: not run (an AddressSanitizer build cannot start "
              "under an address-space limit)")
    else:
        p, dt = run(sim, ["--k", "160"], preexec=limit, timeout=30)
        print("k=160 under RLIMIT_AS 1 GiB: exit %d in %.2f s: %s" % (p.returncode, dt,
                                                                      p.stderr.strip()))
        check(p.returncode == 1, "too large: exit %d, want 1" % p.returncode)
        check("needs about" in p.stderr and "RLIMIT_AS" in p.stderr and "not generating" in p.stderr,
              "too large: message: %r" % p.stderr)
        check(p.stdout == "", "too large: printed a result: %r" % p.stdout[:200])
        check(dt < 5, "too large: took %.1f s (generated before refusing?)" % dt)
    p, _ = run(sim, ["--k", "16", "--max-mem", "1M"])
    check(p.returncode == 1 and "--max-mem" in p.stderr and p.stdout == "",
          "--max-mem 1M: exit %d, %r" % (p.returncode, p.stderr))


def jobs_file(sim):
    fd, path = tempfile.mkstemp(prefix="ice-sim-jobs-", suffix=".txt")
    try:
        with os.fdopen(fd, "w") as f:
            f.write("# two jobs on a fat-tree k = 4 (h1..h16)\n"
                    "h1 h5 h9 h13\n"
                    "h2 h6 h10 h14 h3 h7\n")
        p, _ = run(sim, ["--k", "4", "--jobs-file", path, "--json"])
        check(p.returncode == 0, "jobs file: exit %d: %s" % (p.returncode, p.stderr.strip()))
        if p.returncode == 0:
            r = json.loads(p.stdout)
            check(len(r["jobs"]) == 2 and r["jobs"][1]["hosts"] == 6,
                  "jobs file: jobs %r" % r["jobs"])
            check(r["ice_util"] <= r["ecmp_util"] + EPS, "jobs file: ICE worse than ECMP")
        with open(path, "w") as f:
            f.write("h1 h2 h3\n"
                    "\n"
                    "h4 h99 h5   # h99: no such host\n"
                    "h6 p1t1 h7\n"
                    "h8 h8\n")
        p, _ = run(sim, ["--k", "4", "--jobs-file", path])
        print("bad jobs file: exit %d:\n%s" % (p.returncode, p.stderr.strip()))
        check(p.returncode == 1, "bad jobs file: exit %d, want 1" % p.returncode)
        check("%s:3: host 'h99' is not a host of the fabric (no such node)" % path in p.stderr,
              "bad jobs file: unknown host not named with file:line")
        check("%s:4: host 'p1t1' is not a host of the fabric (a switch)" % path in p.stderr,
              "bad jobs file: switch not named with file:line")
        check("%s:5: host 'h8' twice in one job" % path in p.stderr,
              "bad jobs file: duplicate not named")
        check("3 error(s): no plan made" in p.stderr, "bad jobs file: no summary")
        check(p.stdout == "", "bad jobs file: a partial plan was printed: %r" % p.stdout[:200])
    finally:
        os.unlink(path)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    sim = sys.argv[1]
    quality(sim)
    too_large(sim)
    jobs_file(sim)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
