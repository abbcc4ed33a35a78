#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# What the transport puts on the wire, as Wireshark decodes it: capture
# ice-perf traffic (SEND, then RDMA WRITE) on the receiver's veth and check
#   - UDP destination port 4791 on every packet, IPv4 identification 0
#     (the ICRC covers the ID; we rely on Linux sending 0 with DF set);
#   - the BTH opcodes: RC SEND/WRITE first, middle, last, and ACK (17);
#   - data packets go to the receiver's QP numbers, ACKs to the sender's,
#     as ice-perf printed them, and carry the sender QPs' source ports;
#   - PSNs go up by one per data packet on each QP (mod 2^24);
#   - the ICRC, recomputed here with zlib over the captured bytes;
#   - with --gso (RDMA WRITE again), cut into packets on the sender's veth
#     as a NIC would (a tbf qdisc whose burst holds one packet segments
#     what is larger): every frame one packet, IPv4 identifications
#     counting up within a GSO message (below 32), and every ICRC covering
#     the identification its packet carries.
# Needs root, tshark, python3 and ice-perf ($ICE_PERF); exits 77 otherwise.
set -u
. "$(dirname "$0")/lib_netns.sh"

ice_need_root
ice_need_tool ip tshark python3
[ -n "${ICE_PERF:-}" ] && [ -x "$ICE_PERF" ] || ice_skip "ice-perf not built (ICE_PERF)"

ice_star 2 1500 || { echo "FAIL: cannot build the namespaces" >&2; exit 1; }
fail=0

# capture NAME OP [ARGS]: run ice-perf with --op OP (and ARGS) while
# capturing on the receiver's veth into NAME's files
capture() {
	local name=$1 op=$2 pcap=$ICE_TMP/$1.pcap out=$ICE_TMP/$1.out tpid
	shift 2
	ip netns exec "${ICE_NS[1]}" tshark -q -i "${ICE_DEV[1]}" -f 'udp port 4791' -B 64 \
		-c 4000 -a duration:20 -F pcap -w "$pcap" >"$ICE_TMP/$name.tshark" 2>&1 &
	tpid=$!
	ICE_PIDS+=("$tpid")
	for _ in $(seq 100); do
		grep -q 'Capturing on' "$ICE_TMP/$name.tshark" && break
		sleep 0.1
	done
	sleep 1 # libpcap flushes its buffer once the filter is set
	# 2 QPs, 8 KiB messages of 8 packets, paced so the capture keeps up
	if ! timeout 60 "$ICE_PERF" --netns "$(ice_ns_list)" --op "$op" --qps 2 --mtu 1024 \
		--size 8K --time 1 --warmup 0 --line-rate 100mbit "$@" >"$out" 2>&1; then
		echo "FAIL: ice-perf --op $op failed" >&2
		cat "$out" >&2
		fail=1
	fi
	wait "$tpid"
	cat "$out"
}

# check NAME FIRST MIDDLE LAST [IDS]: the opcodes expected for the data
# packets; IPv4 identifications below IDS (default 1: all 0)
check() {
	local op=$1 pcap=$ICE_TMP/$1.pcap
	tshark -r "$pcap" -T fields -E separator=, -e udp.dstport -e udp.srcport -e ip.id \
		-e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn \
		>"$ICE_TMP/$op.fields" 2>/dev/null
	python3 - "$op" "$pcap" "$ICE_TMP/$op.fields" "$ICE_TMP/$op.out" "$2" "$3" "$4" "${5:-1}" <<'PY'
import re, struct, sys, zlib

op, pcap, fields, out, first, middle, last, ids = sys.argv[1:9]
ids = int(ids)
want = {int(first): "first", int(middle): "middle", int(last): "last"}
bad = []

# QP numbers and source ports that ice-perf printed
qps = {0: {}, 1: {}}
for m in re.finditer(r"# rank (\d) \(\w+\) QP (\d+): qpn 0x([0-9a-f]+) \(\d+\) sport (\d+)",
                     open(out).read()):
    qps[int(m.group(1))][int(m.group(3), 16)] = int(m.group(4))
if len(qps[0]) != 2 or len(qps[1]) != 2:
    sys.exit(f"FAIL: {op}: ice-perf did not print two QPs per rank: {qps}")

rows = [l.strip().split(",") for l in open(fields) if l.strip()]
if len(rows) < 1000:
    sys.exit(f"FAIL: {op}: only {len(rows)} packets captured")
resent = re.search(r"sender: .*?(\d+) resent", open(out).read())
resent = int(resent.group(1)) if resent else 0
seen_ops, last_psn, data, acks, steps = set(), {}, 0, 0, 0
skipped, rewinds = [], 0  # (qp, psn, row index): missing here, must come later
sent = {}  # (qp, psn) -> row indices
idseen = set()  # IPv4 identifications
for i, (dport, sport, ipid, opc, dqp, psn) in enumerate(rows):
    opc, dqp, psn = int(opc), int(dqp, 16), int(psn)
    if dport != "4791":
        bad.append(f"UDP destination port {dport}")
    if int(ipid, 16) >= ids:
        bad.append(f"IPv4 ID {ipid} (not below {ids}: the ICRC would be wrong)")
    idseen.add(int(ipid, 16))
    seen_ops.add(opc)
    if opc == 17:
        acks += 1
        if dqp not in qps[0]:
            bad.append(f"ACK to QP 0x{dqp:x}, not a sender QP {list(map(hex, qps[0]))}")
        continue
    data += 1
    if opc not in want:
        bad.append(f"data opcode {opc}, expected {sorted(want)}")
    if dqp not in qps[1]:
        bad.append(f"data to QP 0x{dqp:x}, not a receiver QP {list(map(hex, qps[1]))}")
    if int(sport) not in qps[0].values():
        bad.append(f"data from source port {sport}, not a sender QP's {list(qps[0].values())}")
    sent.setdefault((dqp, psn), []).append(i)
    if dqp in last_psn:
        d = (psn - last_psn[dqp] - 1) % (1 << 24)  # 0: the next PSN
        if d == 0:
            steps += 1
        elif d < (1 << 23):  # ahead: lost before the capture point, resent later
            skipped += [(dqp, (last_psn[dqp] + 1 + k) % (1 << 24), i) for k in range(d)]
        else:  # behind: a resend after a NAK or a timeout
            rewinds += 1
    last_psn[dqp] = psn
# A PSN skipped and never resent was on the wire (the transport got it
# acknowledged) but the capture missed it; a few are tolerated.
missed = [(qp, psn) for qp, psn, i in skipped
          if not any(j > i for j in sent.get((qp, psn), [])) and i < len(rows) * 0.9]
if len(missed) > data // 100:
    bad += [f"QP 0x{qp:x}: PSN {psn} skipped and never resent" for qp, psn in missed]
if rewinds and not resent:
    bad.append(f"{rewinds} PSN rewinds, but ice-perf reported no packet resent")
for o, name in want.items():
    if o not in seen_ops:
        bad.append(f"no {op} {name} packet (opcode {o}) captured")
if 17 not in seen_ops:
    bad.append("no ACK (opcode 17) captured")

# ICRC: 8 x 0xff, IPv4 + UDP + BTH.. with TOS, TTL, IP checksum, UDP checksum
# and BTH byte 4 masked to ones; CRC-32 (zlib), stored little-endian.
def records(path):
    b = open(path, "rb").read()
    magic = struct.unpack("<I", b[:4])[0]
    end = "<" if magic in (0xa1b2c3d4, 0xa1b23c4d) else ">"
    linktype = struct.unpack(end + "I", b[20:24])[0]
    off = 24
    while off + 16 <= len(b):
        _, _, incl, _ = struct.unpack(end + "IIII", b[off:off + 16])
        yield linktype, b[off + 16:off + 16 + incl]
        off += 16 + incl

if ids > 1 and max(idseen) == 0:
    bad.append("no IPv4 ID above 0: no GSO message was cut into packets")
checked = 0
for linktype, frame in records(pcap):
    if linktype != 1 or frame[12:14] != b"\x08\x00":
        continue
    if len(frame) > 1514:
        bad.append(f"a {len(frame)}-byte frame: a GSO message not cut into packets")
    ip = bytearray(frame[14:])
    ihl = (ip[0] & 15) * 4
    total = struct.unpack(">H", ip[2:4])[0]
    ip = ip[:total]
    icrc = struct.unpack("<I", bytes(ip[-4:]))[0]
    m = bytearray(ip[:-4])
    m[1] = 0xff                      # TOS (DSCP, ECN)
    m[8] = 0xff                      # TTL
    m[10:12] = b"\xff\xff"           # IPv4 header checksum
    m[ihl + 6:ihl + 8] = b"\xff\xff" # UDP checksum
    m[ihl + 8 + 4] = 0xff            # BTH byte 4 (FECN, BECN, reserved)
    calc = zlib.crc32(bytes(m), zlib.crc32(b"\xff" * 8)) & 0xffffffff
    if calc != icrc:
        bad.append(f"ICRC 0x{icrc:08x} in packet {checked}, computed 0x{calc:08x}")
    checked += 1
    if checked == 200:
        break

print(f"{op}: {len(rows)} packets ({data} data, {acks} ACKs), opcodes {sorted(seen_ops)}, "
      f"QPs {[hex(q) for q in last_psn]}, {steps} PSN steps of +1, {len(skipped)} PSNs "
      f"lost before the capture point ({len(missed)} of them missed by the capture), {rewinds} PSN rewinds (ice-perf: {resent} resent), "
      f"{checked} ICRCs recomputed")
if bad:
    for b in sorted(set(bad))[:20]:
        print("FAIL:", op + ":", b)
    sys.exit(1)
PY
}

capture send send
check send 0 1 2 || fail=1      # SEND first, middle, last
capture write write
check write 6 7 8 || fail=1     # RDMA WRITE first, middle, last
# UDP GSO, cut into packets before the wire: a tbf whose bucket holds one
# packet segments every larger message (and shapes nothing at 10 Gbit/s)
ip netns exec "${ICE_NS[0]}" tc qdisc add dev "${ICE_DEV[0]}" root tbf rate 10gbit \
	burst 1600 latency 50ms || { echo "FAIL: cannot add the tbf" >&2; exit 1; }
capture gso write --gso
check gso 6 7 8 32 || fail=1
[ $fail -eq 0 ] && echo "PASS"
exit $fail
