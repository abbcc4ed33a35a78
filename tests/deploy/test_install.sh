#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# `meson install` into a scratch DESTDIR puts what a cluster needs in its
# place: the programs, the libraries, the systemd units, the example
# configuration files and the man pages. The installed units pass
# `systemd-analyze verify` (systemd is not PID 1 on these machines, so the
# units are not started; ExecStart points into DESTDIR for the check) with
# no warning, and every example configuration passes the installed
# program's own --check-config. `systemd-analyze security --offline` prints
# each unit's exposure (informative).
#
#   test_install.sh BUILD_DIR
set -u
BUILD=$1
T=$(mktemp -d /tmp/ice-install.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

DESTDIR=$T/root meson install -C "$BUILD" --no-rebuild --quiet >"$T/install.log" 2>&1 ||
	{ cat "$T/install.log" >&2; fail "meson install"; }
prefix=$(meson introspect "$BUILD" --buildoptions |
	python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
R=$T/root$prefix
for b in ice-agent ice-controller ice-probe icectl ice-bench ice-perf ice-topo ice-sim \
	ice-plan ice-devprof ice-train; do
	[ -x "$R/bin/$b" ] || fail "bin/$b not installed"
done
ls "$R"/lib/*/libice-ccl.so "$R"/lib/*/libnccl-profiler-ice.so >/dev/null 2>&1 ||
	ls "$R"/lib/libice-ccl.so >/dev/null 2>&1 || fail "libice-ccl.so not installed"
units=(ice-agent@.service ice-controller.service ice-probe.service ice-probe-responder.service)
for u in "${units[@]}"; do
	[ -f "$R/lib/systemd/system/$u" ] || fail "unit $u not installed"
done
for c in agent controller probe policy; do
	[ -f "$R/etc/ice/$c.example.yaml" ] || fail "etc/ice/$c.example.yaml not installed"
done
if command -v help2man >/dev/null; then
	for m in man8/ice-agent.8 man8/ice-controller.8 man8/ice-probe.8 man8/icectl.8 \
		man1/ice-bench.1 man1/ice-sim.1; do
		[ -s "$R/share/man/$m" ] || fail "man page $m not installed"
	done
	grep -q 'network interface to watch' "$R/share/man/man8/ice-agent.8" || fail "ice-agent.8 lacks its options"
else
	echo "help2man absent: man pages not checked"
fi

# the example configurations, checked by the installed programs
"$R/bin/ice-agent" --config "$R/etc/ice/agent.example.yaml" --nic lo --check-config ||
	fail "agent.example.yaml"
"$R/bin/ice-controller" --config "$R/etc/ice/controller.example.yaml" --key /dev/null \
	--check-config || fail "controller.example.yaml"
"$R/bin/ice-probe" watch --config "$R/etc/ice/probe.example.yaml" --check-config ||
	fail "probe.example.yaml"
# and a broken one is refused, naming the file and key
printf 'fabric: prod\ninterval: soon\n' >"$T/bad.yaml"
if "$R/bin/ice-agent" --config "$T/bad.yaml" --nic lo --check-config 2>"$T/bad.err"; then
	fail "--check-config accepted interval: soon"
fi
grep -q "bad.yaml.*interval" "$T/bad.err" || { cat "$T/bad.err" >&2; fail "the error names no file:key"; }

if ! command -v systemd-analyze >/dev/null; then
	echo "systemd-analyze absent: units not verified"
	echo PASS
	exit 0
fi
mkdir "$T/units"
for u in "${units[@]}"; do
	sed "s|$prefix/bin/|$R/bin/|g" "$R/lib/systemd/system/$u" >"$T/units/${u/@.service/@eth0.service}"
done
systemd-analyze verify --man=no "$T"/units/*.service >"$T/verify.log" 2>&1
rc=$?
cat "$T/verify.log"
[ "$rc" -eq 0 ] && [ ! -s "$T/verify.log" ] || fail "systemd-analyze verify: exit $rc, or warnings above"
for u in "$T"/units/*.service; do
	systemd-analyze security --offline=yes "$u" 2>/dev/null | tail -1 | sed "s|^|$(basename "$u"): |"
done
echo PASS
