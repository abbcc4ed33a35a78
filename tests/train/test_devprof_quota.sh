#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# ice-devprof's sustained figure on a device throttled by a CPU quota: the
# profiler runs pinned to one core (taskset) in a new cgroup, ice-devprof-
# test-PID, with half a core of quota (cgroup v2 cpu.max "50000 100000",
# or, where the cpu controller is on v1 as on this box, cpu.cfs_quota_us
# 50000 / cpu.cfs_period_us 100000: the same CFS bandwidth control). The
# profiler's CPU seconds per second over the sustained window must stay
# within the quota (<= 0.55), its sustained figure at most 0.6 of its
# burst figure (best short repetition) and the burst at least 1.5 times
# the sustained; and, when the same core without the quota just before was
# quiet (>= 0.8 CPU s per s), the sustained figure 0.3-0.75 of that free
# one (half a core, less or more as the communication load falls; on a
# busy core the free run is itself held back, and that is said instead).
# ice-devprof reports the cores the kernel allows it (ice_cpu_cores): 1
# pinned, 0.5 in the cgroup. The cgroup is removed afterwards, also on failure. Exits 77 without root
# or without a cgroup cpu controller.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEVPROF=${ICE_DEVPROF:-$ROOT/build/train/ice-devprof}
[ -x "$DEVPROF" ] || { echo "test_devprof_quota: skipped: $DEVPROF is absent" >&2; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "test_devprof_quota: skipped: needs root" >&2; exit 77; }
command -v taskset >/dev/null || { echo "test_devprof_quota: skipped: needs taskset" >&2; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

NAME=ice-devprof-test-$$
CG=
# cgroup v2 with the cpu controller (cpu.max), else v1's cpu controller
for m in $(awk '$3 == "cgroup2" {print $2}' /proc/mounts); do
	if grep -qw cpu "$m/cgroup.controllers" 2>/dev/null; then
		grep -qw cpu "$m/cgroup.subtree_control" ||
			echo +cpu >"$m/cgroup.subtree_control" 2>/dev/null || continue
		CG=$m/$NAME
		KIND=v2
		break
	fi
done
if [ -z "$CG" ]; then
	m=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ {print $2; exit}' /proc/mounts)
	if [ -n "$m" ] && [ -e "$m/cpu.cfs_quota_us" ]; then
		CG=$m/$NAME
		KIND=v1
	fi
fi
[ -n "$CG" ] || { echo "test_devprof_quota: skipped: no cgroup cpu controller (v2 cpu.max or v1 cpu.cfs_quota_us)" >&2; exit 77; }
TMP=$(mktemp -d /tmp/ice-devprof-quota.XXXXXX)
cleanup() {
	if [ -d "$CG" ]; then
		# the profiler has ended; anything left goes back to the root group
		for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do
			echo "$p" >"$(dirname "$CG")/cgroup.procs" 2>/dev/null
		done
		rmdir "$CG" || echo "test_devprof_quota: could not remove $CG" >&2
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
mkdir "$CG" || fail "cannot create $CG"
if [ "$KIND" = v2 ]; then
	echo "50000 100000" >"$CG/cpu.max" || fail "cannot set $CG/cpu.max"
else
	echo 100000 >"$CG/cpu.cfs_period_us" && echo 50000 >"$CG/cpu.cfs_quota_us" ||
		fail "cannot set the quota of $CG"
fi
echo "cgroup $KIND $CG: half a core (50 ms of every 100 ms)"
CPU=$(($(nproc) - 1))
# one weight matrix, cache-hot: the quota alone (with --weights-mb's
# default the throttled periods also let the box's other work take the
# cache, and the sustained figure fell to 0.33 of the free one here)
PROF=(--seconds 1 --sustain 3 --mb 8 --weights-mb 0)
# the same core without a quota first: what the device sustains free
timeout 120 taskset -c "$CPU" "$DEVPROF" --name free "${PROF[@]}" -o "$TMP/p.yaml" 2>&1 |
	tee "$TMP/log" || fail "ice-devprof failed"
# the shell enters the cgroup, then becomes the profiler pinned to the core
timeout 120 sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$CG" \
	taskset -c "$CPU" "$DEVPROF" --name quota-half "${PROF[@]}" -o "$TMP/p.yaml" 2>&1 |
	tee -a "$TMP/log"
[ "${PIPESTATUS[0]}" -eq 0 ] || fail "ice-devprof failed in the cgroup"
python3 - "$TMP/p.yaml" "$TMP/log" <<'EOF' || fail "the sustained figure does not show the quota"
import re, sys
t = open(sys.argv[1]).read()
log = open(sys.argv[2]).read()
def fig(name, key):
    blk = t[t.index("name: " + name):]
    return float(re.search(r"^\s+%s: (\S+)" % key, blk, re.M).group(1))
def cpu(name):
    return float(re.search(r"%s: sgemm burst .*CPU ([0-9.]+) s per s" % name, log).group(1))
free, g, b = fig("free", "gflops"), fig("quota-half", "gflops"), fig("quota-half", "burst_gflops")
print("one core free: sustained %.2f GFLOP/s, CPU %.2f s/s; half a core: sustained %.2f, "
      "burst %.2f (%.1fx), CPU %.2f s/s" % (free, cpu("free"), g, b, b / g, cpu("quota-half")))
assert cpu("quota-half") <= 0.55, "CPU %.2f s/s beyond the quota" % cpu("quota-half")
# the cores the kernel allows (ice_cpu_cores): the affinity's one core, the quota's half
cores = lambda name: re.search(r"%s: sgemm burst .* of ([0-9.]+) cores \(([^)]*)\)" % name, log)
print("cores: free %s (%s), quota-half %s (%s)" % (cores("free").groups() + cores("quota-half").groups()))
assert float(cores("free").group(1)) == 1.0, cores("free").groups()
assert float(cores("quota-half").group(1)) == 0.5, cores("quota-half").groups()
assert g <= 0.6 * b and b >= 1.5 * g, "burst only %.2fx the sustained" % (b / g)
if cpu("free") >= 0.8:
    print("sustained under the quota: %.2f of the free core's" % (g / free))
    assert 0.3 <= g / free <= 0.75, "sustained under the quota: %.2f of free" % (g / free)
else:
    print("the core was busy without the quota too (CPU %.2f s/s): the sustained figures "
          "are not compared" % cpu("free"))
EOF
echo "test_devprof_quota: ok"
