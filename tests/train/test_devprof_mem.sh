#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# ice-devprof's mem_gib, the memory a rank on the device may use:
#   - host: the available memory (MemAvailable) of the machine, and within
#     a memory cgroup, ice-devprof-mem-PID, limited to 256 MiB (v2
#     memory.max, or v1 memory.limit_in_bytes as on this box), what the
#     limit leaves; the cgroup is removed afterwards, also on failure
#     (needs root and a memory controller, else that part is skipped);
#   - cuda, on the runtime double with 2048 MiB: its free memory, 2 GiB;
#   - --emulate --mem-gib states it; --mem-gib without --emulate is refused.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEVPROF=${ICE_DEVPROF:-$ROOT/build/train/ice-devprof}
[ -x "$DEVPROF" ] || { echo "test_devprof_mem: skipped: $DEVPROF is absent" >&2; exit 77; }
command -v python3 >/dev/null || { echo "test_devprof_mem: skipped: needs python3" >&2; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
TMP=$(mktemp -d /tmp/ice-devprof-mem.XXXXXX)
CG=
cleanup() {
	if [ -n "$CG" ] && [ -d "$CG" ]; then
		for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do
			echo "$p" >"$(dirname "$CG")/cgroup.procs" 2>/dev/null
		done
		rmdir "$CG" || echo "test_devprof_mem: could not remove $CG" >&2
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
PROF=(--seconds 0.1 --sustain 0.2 --mb 8 --weights-mb 0)
# gib FILE: the profile's mem_gib
gib() { sed -n 's/^    mem_gib: //p' "$1"; }

echo "## host"
avail=$(awk '/^MemAvailable:/ {print $2 * 1024}' /proc/meminfo)
timeout 60 "$DEVPROF" "${PROF[@]}" -o "$TMP/host.yaml" 2>&1 | tail -n 2
[ "${PIPESTATUS[0]}" -eq 0 ] || fail "ice-devprof failed"
python3 -c "import sys; g, a = float(sys.argv[1]), float(sys.argv[2]) / 2**30
print(f'  mem_gib {g:.2f}, MemAvailable {a:.2f} GiB before')
assert 0.8 * a <= g <= 1.2 * a" "$(gib "$TMP/host.yaml")" "$avail" ||
	fail "host mem_gib is not the available memory"

echo "## host in a 256 MiB memory cgroup"
if [ "$(id -u)" -eq 0 ]; then
	for m in $(awk '$3 == "cgroup2" {print $2}' /proc/mounts); do
		if grep -qw memory "$m/cgroup.controllers" 2>/dev/null; then
			grep -qw memory "$m/cgroup.subtree_control" ||
				echo +memory >"$m/cgroup.subtree_control" 2>/dev/null || continue
			CG=$m/ice-devprof-mem-$$
			LIMIT=memory.max
			break
		fi
	done
	if [ -z "$CG" ]; then
		m=$(awk '$3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/ {print $2; exit}' /proc/mounts)
		[ -n "$m" ] && [ -e "$m/memory.limit_in_bytes" ] && {
			CG=$m/ice-devprof-mem-$$
			LIMIT=memory.limit_in_bytes
		}
	fi
fi
if [ -n "$CG" ]; then
	mkdir "$CG" || fail "cannot create $CG"
	echo $((256 << 20)) >"$CG/$LIMIT" || fail "cannot set $CG/$LIMIT"
	timeout 60 sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$CG" \
		"$DEVPROF" "${PROF[@]}" -o "$TMP/cg.yaml" 2>&1 | tail -n 2
	[ "${PIPESTATUS[0]}" -eq 0 ] || fail "ice-devprof failed in the cgroup"
	python3 -c "import sys; g = float(sys.argv[1])
print(f'  mem_gib {g:.3f} within 0.25 GiB')
assert 0.15 <= g <= 0.25" "$(gib "$TMP/cg.yaml")" ||
		fail "mem_gib in the cgroup is not what its limit leaves"
else
	echo "(not root or no memory controller: skipped)"
fi

echo "## cuda on the runtime double"
if [ -n "${ICE_FAKE_CUDA_LIB:-}" ]; then
	ICE_CUDA_LIB=$ICE_FAKE_CUDA_LIB FAKE_DEVRT_MEM_MIB=2048 timeout 60 "$DEVPROF" --kind cuda \
		"${PROF[@]}" -o "$TMP/cuda.yaml" >"$TMP/cuda.log" 2>&1
	rc=$?
	tail -n 2 "$TMP/cuda.log"
	if [ "$rc" -ne 0 ] && grep -q 'not built in' "$TMP/cuda.log"; then
		echo "(the CUDA backend is not built: skipped)"
	else
		[ "$rc" -eq 0 ] || fail "ice-devprof --kind cuda exited $rc"
		[ "$(gib "$TMP/cuda.yaml")" = 2 ] ||
			fail "cuda mem_gib '$(gib "$TMP/cuda.yaml")', expected the double's 2"
	fi
fi

echo "## stated"
"$DEVPROF" --emulate e1 --gflops 5 --mem-gib 3 -o "$TMP/e.yaml" || fail "--emulate --mem-gib"
[ "$(gib "$TMP/e.yaml")" = 3 ] || fail "stated mem_gib not written"
"$DEVPROF" --mem-gib 3 >"$TMP/bad" 2>&1 && fail "--mem-gib without --emulate ran"
grep -q 'stated speeds go with --emulate' "$TMP/bad" || fail "no reason: $(cat "$TMP/bad")"
echo "test_devprof_mem: ok"
