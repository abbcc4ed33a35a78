#!/usr/bin/env bash
# test_ccl_real: libice-ccl.so preloaded over the real libnccl.so.2.
#   preload   (no GPU): hooked symbols resolve to libnccl.so.2, and
#             ncclGetVersion/GetUniqueId/GroupStart/GroupEnd/CommDestroy
#             answer as without the hook.
#   profiler  NCCL loads libnccl-profiler-ice.so through its own plugin
#             loader at communicator init: that needs a GPU (exit 77 else).
set -u
mode=${1:-preload}
: "${ICE_CCL_LIB:?}" "${ICE_CCL_PROBE:?}" "${ICE_CCL_PROFILER:?}"
tmp=$(mktemp -d /tmp/ice-ccl-real.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

if [ "$mode" = preload ]; then
	"$ICE_CCL_PROBE" >"$tmp/plain" 2>"$tmp/plain.err" || { cat "$tmp/plain.err"; exit 1; }
	ICE_AGENT_SOCK="$tmp/none.sock" ICE_LOG=debug ICE_CCL_LOG="$tmp/log" \
		LD_PRELOAD="$ICE_CCL_LIB" "$ICE_CCL_PROBE" >"$tmp/hooked" 2>"$tmp/hooked.err" ||
		{ cat "$tmp/hooked.err"; exit 1; }
	echo "without hook:"; cat "$tmp/plain"
	if ! diff -u "$tmp/plain" "$tmp/hooked"; then
		echo "FAIL: the real library answered differently under the hook"; exit 1
	fi
	if [ -s "$tmp/hooked.err" ]; then
		echo "FAIL: the hook wrote to stderr:"; cat "$tmp/hooked.err"; exit 1
	fi
	for f in GroupStart GroupEnd CommDestroy; do
		if ! grep -Eq "resolved nccl$f -> .*libnccl.so.2 \(p?nccl$f\)" "$tmp/log"; then
			echo "FAIL: nccl$f not resolved to libnccl.so.2"; cat "$tmp/log"; exit 1
		fi
	done
	grep resolved "$tmp/log"
	echo "PASS"
	exit 0
fi

# profiler: through NCCL's own loader, on a GPU only
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP: no GPU here; NCCL loads profiler plugins at communicator init," \
		"which needs a CUDA device"
	exit 77
fi
rm -f "$tmp/ev"
python3 - "$tmp/agent.sock" "$tmp/ev" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sys.argv[1]); s.settimeout(15)
n = 0
with open(sys.argv[2], "wb") as f:
    try:
        while True:
            f.write(s.recv(1024)); f.flush(); n += 1
    except socket.timeout:
        pass
PY
reader=$!
sleep 0.5
ICE_AGENT_SOCK="$tmp/agent.sock" NCCL_PROFILER_PLUGIN="$ICE_CCL_PROFILER" NCCL_DEBUG=INFO \
	NCCL_DEBUG_SUBSYS=INIT,ENV ICE_CCL_LOG="$tmp/log" ICE_LOG=debug \
	LD_PRELOAD="$ICE_CCL_LIB" "$ICE_CCL_PROBE" gpu 2>&1 | tee "$tmp/out"
rc=${PIPESTATUS[0]}
sleep 1; kill "$reader" 2>/dev/null; wait "$reader" 2>/dev/null
grep -i profiler "$tmp/out" | head -5
python3 - "$tmp/ev" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
size = 120  # sizeof(struct ice_event)
libs = {}
for i in range(0, len(d) - size + 1, size):
    kind, op = struct.unpack_from("<H", d, i + 6)[0], struct.unpack_from("<I", d, i + 12)[0]
    lib = d[i + size - 12:i + size].split(b"\0")[0].decode()
    libs.setdefault(lib, []).append((kind, op))
for lib, evs in libs.items():
    print(lib, len(evs), "events; kinds", sorted(set(k for k, _ in evs)))
ok = "nccl" in libs and "nccl-prof" in libs
print("PASS" if ok else "FAIL: expected events from the preload and the plugin")
sys.exit(0 if ok else 1)
PY
prc=$?
[ "$rc" -eq 0 ] && exit $prc
exit "$rc"
