#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write the fuzz_wire seed corpus: one RoCEv2 UDP payload (BTH .. ICRC) per
opcode tp_wire handles plus a few malformed ones. Laid out by hand from IBA
vol. 1 ch. 9 / annex A17, independently of transport/tp_wire.c; the ICRC is
for 10.0.0.1:0xc123 -> 10.0.0.2:4791, IP id 0 (fuzz_wire.c's addresses).

    python3 tests/fuzz/gen_corpus.py tests/fuzz/corpus
"""
import os
import socket
import struct
import sys
import zlib

SADDR, DADDR, SPORT, DPORT, IP_ID = '10.0.0.1', '10.0.0.2', 0xc123, 4791, 0


def icrc(udp_payload):
    ulen = 8 + len(udp_payload) + 4
    ip = (bytes([0x45, 0xff]) + struct.pack('!HHH', 20 + ulen, IP_ID, 0x4000) +
          bytes([0xff, 17, 0xff, 0xff]) + socket.inet_aton(SADDR) + socket.inet_aton(DADDR))
    udp = struct.pack('!HHH', SPORT, DPORT, ulen) + b'\xff\xff'
    masked = bytearray(udp_payload)
    masked[4] = 0xff
    return struct.pack('<I', zlib.crc32(b'\xff' * 8 + ip + udp + bytes(masked)))


def bth(op, pad=0, se=0, mig=0, pkey=0xffff, fecn=0, becn=0, qp=0x11, ackreq=0, psn=0):
    return (bytes([op, se << 7 | mig << 6 | pad << 4]) + struct.pack('!H', pkey) +
            bytes([fecn << 7 | becn << 6]) + qp.to_bytes(3, 'big') +
            bytes([ackreq << 7]) + psn.to_bytes(3, 'big'))


def reth(va, rkey, length):
    return struct.pack('!QII', va, rkey, length)


def pkt(op, ext=b'', data=b'', **kw):
    pad = (-len(data)) % 4
    body = bth(op, pad=pad, **kw) + ext + data + b'\0' * pad
    return body + icrc(body)


def main(out):
    os.makedirs(out, exist_ok=True)
    seeds = {
        'send_first': pkt(0x00, data=bytes(range(16)), psn=0xfffffe),
        'send_middle': pkt(0x01, data=b'\xaa' * 8, psn=0xffffff),
        'send_last_pad3': pkt(0x02, data=b'x', ackreq=1, psn=0),
        'send_last_imm': pkt(0x03, data=b'\x12\x34\x56\x78' + b'ab'),
        'send_only_pad1': pkt(0x04, data=b'hello world', se=1, ackreq=1),
        'send_only_imm': pkt(0x05, data=b'\xde\xad\xbe\xef'),
        'write_first': pkt(0x06, reth(0x7f0000001000, 0x1234, 4096), b'\x01' * 8),
        'write_middle': pkt(0x07, data=b'\x02' * 12, fecn=1),
        'write_last': pkt(0x08, data=b'\x03' * 6, ackreq=1),
        'write_last_imm': pkt(0x09, data=b'\0\0\0\1' + b'\x04' * 3),
        'write_only': pkt(0x0a, reth(0xffffffffffffffff, 0xffffffff, 5), b'hello', mig=1),
        'write_only_imm': pkt(0x0b, reth(0, 0, 0), b'\xff\xff\xff\xff'),
        'read_req': pkt(0x0c, reth(0x1000, 0x42, 0x100000), qp=0xffffff, ackreq=1),
        'ack': pkt(0x11, b'\x1f\x00\x00\x07', psn=0x800000),
        'nak_psn_seq': pkt(0x11, b'\x60\xff\xff\xff'),
        'cnp': pkt(0x81, b'\0' * 16, becn=1, qp=0x118),
        'bad_opcode_uc': pkt(0x24, data=b'abcd'),
        'bad_version': b'\x04\x01' + pkt(0x04, data=b'abcd')[2:],
        'truncated_reth': pkt(0x0a, reth(1, 2, 3), b'')[:20],
        'short': b'\x11\x00\xff',
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name + '.bin'), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'corpus'))
