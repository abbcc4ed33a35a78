#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# A peer that is really gone: ice-perf runs between two namespaces as two
# separate processes; mid-transfer the receiver is killed (SIGKILL) and its
# namespace deleted. The sender's QP must fail within the stated bound
# (--peer-timeout plus one backed-off timer: 2 s + 1 s here, measured with
# slack for a loaded machine), saying the peer went silent, and the sender
# must exit with an error instead of hanging.
#
# Needs root and ice-perf ($ICE_PERF); exits 77 saying what is missing.
set -u
. "$(dirname "$0")/lib_netns.sh"

ice_need_root
ice_need_tool ip
[ -n "${ICE_PERF:-}" ] && [ -x "$ICE_PERF" ] || ice_skip "ice-perf not built (ICE_PERF)"

ice_star 2 1500 || { echo "FAIL: cannot build the namespaces" >&2; exit 1; }
common=(--mtu 1024 --line-rate 100mbit --peer-timeout 2s -D 60 --warmup 0)
ip netns exec "${ICE_NS[1]}" "$ICE_PERF" --rank 1 --bootstrap 10.78.0.1:17801 \
	--addr 10.78.0.2 "${common[@]}" >"$ICE_TMP/r1.log" 2>&1 &
recv=$!
ICE_PIDS+=($recv)
ip netns exec "${ICE_NS[0]}" "$ICE_PERF" --rank 0 --bootstrap 10.78.0.1:17801 \
	--addr 10.78.0.1 "${common[@]}" >"$ICE_TMP/r0.log" 2>&1 &
send=$!
ICE_PIDS+=($send)

sleep 2
kill -0 "$send" 2>/dev/null || { echo "FAIL: the sender ended early" >&2; cat "$ICE_TMP"/r*.log >&2; exit 1; }
kill -9 "$recv"
wait "$recv" 2>/dev/null
ip netns del "${ICE_NS[1]}"
t0=$(date +%s%N)
for ((i = 0; i < 150; i++)); do
	kill -0 "$send" 2>/dev/null || break
	sleep 0.1
done
dt=$((($(date +%s%N) - t0) / 1000000))
if kill -0 "$send" 2>/dev/null; then
	echo "FAIL: the sender still runs ${dt} ms after its peer was gone" >&2
	cat "$ICE_TMP/r0.log" >&2
	exit 1
fi
wait "$send"
rc=$?
echo "sender exit $rc after ${dt} ms"
grep -m1 "failed" "$ICE_TMP/r0.log"
[ "$rc" -ne 0 ] || { echo "FAIL: the sender exited 0" >&2; exit 1; }
grep -q "silent" "$ICE_TMP/r0.log" || { echo "FAIL: no 'peer silent' reason" >&2; cat "$ICE_TMP/r0.log" >&2; exit 1; }
[ "$dt" -ge 1500 ] || { echo "FAIL: gave up after ${dt} ms, before the 2 s budget" >&2; exit 1; }
[ "$dt" -le 6000 ] || { echo "FAIL: took ${dt} ms, over 2 s + 1 s timer + 3 s slack" >&2; exit 1; }
echo "PASS"
