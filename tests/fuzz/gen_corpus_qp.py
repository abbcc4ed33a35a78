#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write the fuzz_qp seed corpus: packet sequences into the harness's two
connected QPs, in fuzz_qp.c's input format (see its header comment):

    cfg:1 then records: len:2 (little endian) flags:1 fix:1 data[len]
    (len 0: a command, flags = which, fix = its argument)

Packets are laid out by hand from IBA vol. 1 ch. 9 (BTH, RETH, AETH) and
annex A17 (CNP), independently of transport/tp_wire.c. The harness does not
check the ICRC, so it is left zero. Most records let the harness aim the
packet (fix bits: the QP's number, a PSN relative to the expected one or to
the oldest unacknowledged, the P_Key, the region's rkey and address), so the
seeds do not depend on where the heap put the region.

    python3 tests/fuzz/gen_corpus_qp.py [tests/fuzz/corpus-qp]

crash-*.bin files are inputs that crashed the harness (a bug found), kept as
regression tests: the ones written here are rewritten, others (libFuzzer's
own, copied in) are left alone.
"""
import os
import struct
import sys

# fuzz_qp.c's setup
CFG_ENGINE1, CFG_RECVS, CFG_SENDS, CFG_WRAP = 0x01, 0x02, 0x04, 0x08
MTU = {0: 256, 1: 512}
WINDOW = {0: 16, 1: 64}
QPN = (0x100, 0x101)  # the engines' QPN base with the fixed RNG seed
REGION_LEN = {0: 3 * 256 + 7, 1: 3 * 512 + 7}
RQ_PSN = {False: 0x10, True: 0xfffff8}

# record flags
ECN_CE, QP1, STRANGER, DUP, PROGRESS, JUMP = 0x03, 0x04, 0x08, 0x10, 0x20, 0x40
# record fix-ups
F_QPN, F_PSN, F_PKEY, F_RKEY, F_VA = 0x01, 0x02, 0x04, 0x08, 0x10
AIM = F_QPN | F_PSN | F_PKEY
# commands
C_PROGRESS, C_JUMP, C_RECV, C_SEND, C_WRITE, C_MOVE, C_POLL, C_RATE = range(8)

# opcodes (IBA table 38) and AETH syndromes
SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_LAST_IMM, SEND_ONLY, SEND_ONLY_IMM = range(6)
WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_LAST_IMM, WRITE_ONLY, WRITE_ONLY_IMM = range(6, 12)
READ_REQ, ACK, CNP = 0x0c, 0x11, 0x81
SYN_ACK, SYN_RNR, SYN_NAK = 0x1f, 0x21, 0x60
NAK_PSN_SEQ, NAK_INVALID, NAK_ACCESS = 0, 1, 2


def bth(op, psn=0, qp=QPN[0], pad=0, ackreq=0, pkey=0xffff, becn=0, se=0):
    return (bytes([op, se << 7 | pad << 4]) + struct.pack('!H', pkey) + bytes([becn << 6]) +
            qp.to_bytes(3, 'big') + bytes([ackreq << 7]) + (psn & 0xffffff).to_bytes(3, 'big'))


def pkt(op, data=b'', ext=b'', **kw):
    pad = (-len(data)) % 4
    return bth(op, pad=pad, **kw) + ext + data + b'\0' * pad + b'\0' * 4


def rel(off):
    """A PSN field the harness reads as 'expected PSN + off' (fix F_PSN)."""
    return off & 0xff


def reth(va, rkey, length):
    return struct.pack('!QII', va & 0xffffffffffffffff, rkey, length)


def aeth(syndrome, msn=0):
    return bytes([syndrome]) + msn.to_bytes(3, 'big')


class Seq:
    def __init__(self, cfg):
        self.cfg = cfg
        self.engine = cfg & CFG_ENGINE1
        self.mtu = MTU[self.engine]
        self.out = bytearray([cfg])

    def packet(self, data, flags=0, fix=AIM):
        self.out += struct.pack('<HBB', len(data), flags, fix) + data
        return self

    def data(self, op, off, payload, flags=0, fix=AIM, ackreq=0, ext=b''):
        """A SEND/WRITE packet at PSN expected + off."""
        qp = QPN[1] if flags & QP1 else QPN[0]
        return self.packet(pkt(op, payload, ext, psn=rel(off), qp=qp, ackreq=ackreq), flags, fix)

    def ack(self, off, syndrome=SYN_ACK, flags=0, fix=AIM):
        """ACK/NAK whose PSN is 'oldest unacknowledged - 1 + off'."""
        qp = QPN[1] if flags & QP1 else QPN[0]
        return self.packet(pkt(ACK, ext=aeth(syndrome), psn=rel(off), qp=qp), flags, fix)

    def cmd(self, c, arg=0):
        self.out += struct.pack('<HBB', 0, c, arg)
        return self

    def full(self, fill):
        return bytes([fill]) * self.mtu

    def bytes(self):
        return bytes(self.out)


def seeds():
    s = {}
    # -- responder: SEND ----------------------------------------------------
    q = Seq(CFG_RECVS)
    q.data(SEND_FIRST, 0, q.full(1)).data(SEND_MIDDLE, 0, q.full(2))
    q.data(SEND_MIDDLE, 0, q.full(3)).data(SEND_LAST, 0, b'\x04' * 10, ackreq=1)
    q.data(SEND_ONLY, 0, b'hello', flags=PROGRESS, ackreq=1)
    q.data(SEND_ONLY_IMM, 0, b'\0\0\0\x2a' + b'imm', flags=QP1)
    s['send_inorder'] = q.bytes()

    q = Seq(CFG_RECVS)
    q.data(SEND_FIRST, 0, q.full(1)).data(SEND_MIDDLE, 1, q.full(3))  # gap at +0
    q.data(SEND_LAST, 2, b'last')  # held too
    q.data(SEND_MIDDLE, 0, q.full(2), flags=PROGRESS)  # fills it: all placed
    s['send_out_of_order'] = q.bytes()

    q = Seq(CFG_RECVS)
    q.data(SEND_FIRST, 0, q.full(1), flags=DUP)  # second copy is a duplicate
    q.data(SEND_FIRST, -1, q.full(1))  # and again, older
    q.data(SEND_MIDDLE, 1, q.full(3), flags=DUP)  # ahead, held (twice)
    q.data(SEND_MIDDLE, 0, q.full(2))  # fills the gap: both placed
    q.data(SEND_MIDDLE, -3, q.full(1))  # old
    q.data(SEND_LAST, 0, b'end', ackreq=1, flags=PROGRESS)
    s['send_duplicates'] = q.bytes()

    q = Seq(CFG_RECVS)
    q.data(SEND_FIRST, 0, q.full(1)).data(SEND_MIDDLE, 0, q.full(2))
    q.data(SEND_MIDDLE, 0, q.full(3)).data(SEND_MIDDLE, 0, q.full(4))
    q.data(SEND_LAST, 0, b'too long')  # past the 3 MTU + 10 receive: QP fails
    q.cmd(C_PROGRESS)
    s['send_too_long'] = q.bytes()

    q = Seq(CFG_RECVS)
    q.data(SEND_LAST, 0, b'no first')  # bad sequence
    q.data(SEND_FIRST, 0, q.full(1)).data(SEND_ONLY, 0, b'x')  # FIRST, then no MIDDLE
    q.data(READ_REQ, 0, b'', ext=reth(0, 0x1000, 16))  # not handled: dropped
    q.data(SEND_MIDDLE, 0, b'\0' * 8)  # a MIDDLE that is not a full MTU
    s['send_bad_sequence'] = q.bytes()

    # unexpected SENDs (no receive posted), then receives
    q = Seq(0)
    q.data(SEND_FIRST, 0, q.full(1)).data(SEND_LAST, 0, b'abc')  # staged, done
    q.data(SEND_FIRST, 0, q.full(5))  # staged, in progress
    q.cmd(C_RECV, 7 << 1)  # takes the first
    q.cmd(C_RECV, 7 << 1)  # continues the second in place
    q.data(SEND_LAST, 0, b'tail', ackreq=1)
    q.data(SEND_ONLY, 0, q.full(6)[:200])  # staged
    q.cmd(C_RECV, 1 << 1)  # 1-byte receive: -EMSGSIZE
    q.cmd(C_POLL)
    s['unexpected_sends'] = q.bytes()

    q = Seq(0)  # engine 0 keeps 1024 bytes unexpected: the rest gets RNR NAKs
    for i in range(3):
        q.data(SEND_FIRST, 0, q.full(i)).data(SEND_MIDDLE, 0, q.full(i))
        q.data(SEND_LAST, 0, q.full(i)[:100])
    q.data(SEND_ONLY, 1, b'ahead', ackreq=1)
    q.cmd(C_RECV, 7 << 1).cmd(C_RECV, 7 << 1).cmd(C_PROGRESS)
    s['unexpected_rnr'] = q.bytes()

    # -- responder: RDMA WRITE ------------------------------------------------
    q = Seq(CFG_RECVS)
    rl = REGION_LEN[0]
    q.data(WRITE_FIRST, 0, q.full(7), fix=AIM | F_RKEY | F_VA, ext=reth(0, 0, rl))
    q.data(WRITE_MIDDLE, 0, q.full(8)).data(WRITE_MIDDLE, 0, q.full(9))
    q.data(WRITE_LAST, 0, b'\x0a' * 7, ackreq=1, flags=PROGRESS)
    q.data(WRITE_ONLY, 0, b'only', fix=AIM | F_RKEY | F_VA, ext=reth(100, 0, 4))
    # tp_qp.c takes an *_IMM packet's ImmDt as 4 bytes of payload
    q.data(WRITE_ONLY_IMM, 0, b'\0\0\0\x01data', fix=AIM | F_RKEY | F_VA,
           ext=reth(rl - 8, 0, 8))
    q.data(WRITE_FIRST, 0, q.full(1), fix=AIM | F_RKEY | F_VA, ext=reth(8, 0, 300))
    q.data(WRITE_LAST_IMM, 0, b'\0\0\0\x02' + b'\x0b' * 40)  # refused: out of sequence
    q.data(WRITE_LAST, 0, b'\x0b' * 44, ackreq=1)
    s['write_first_middle_last'] = q.bytes()

    q = Seq(CFG_RECVS)
    q.data(WRITE_FIRST, 0, q.full(7), fix=AIM | F_RKEY | F_VA, ext=reth(0, 0, rl))
    q.data(WRITE_LAST, 2, b'\x0a' * 7)  # held
    q.data(WRITE_MIDDLE, 1, q.full(9))  # held
    q.data(WRITE_MIDDLE, 0, q.full(8), flags=PROGRESS)  # drains both
    q.data(WRITE_ONLY, 0, b'bad key', fix=AIM | F_VA, ext=reth(0, 0x1001, 7))
    q.data(WRITE_ONLY, 0, b'past end', fix=AIM | F_RKEY | F_VA, ext=reth(rl - 4, 0, 8))
    q.data(WRITE_ONLY, 0, b'before', fix=AIM | F_RKEY | F_VA, ext=reth(-8, 0, 6))
    s['write_out_of_order'] = q.bytes()

    # -- requester: ACK, NAK, RNR NAK, CNP, timeouts --------------------------
    # QP 0 sent PSNs +0..+5 (SEND 3, WRITE 2, SEND 1); QP 1 one SEND.
    q = Seq(CFG_SENDS)
    q.ack(3).ack(0).ack(2, flags=PROGRESS).ack(1).ack(1, flags=QP1)
    q.ack(9)  # beyond what was sent: refused
    s['ack_cumulative'] = q.bytes()

    q = Seq(CFG_SENDS)
    q.ack(2, SYN_NAK | NAK_PSN_SEQ, flags=PROGRESS)  # +0 arrived, +1 missing
    q.ack(4, SYN_NAK | NAK_PSN_SEQ, flags=PROGRESS)
    q.ack(6)
    s['nak_psn_seq'] = q.bytes()

    q = Seq(CFG_SENDS)
    q.ack(1, SYN_RNR, flags=PROGRESS)
    q.cmd(C_JUMP, 3)
    for _ in range(4):  # engine 0 allows 3 RNR NAKs in a row
        q.ack(1, SYN_RNR, flags=PROGRESS | JUMP)
    s['rnr_nak'] = q.bytes()

    q = Seq(CFG_SENDS)
    q.ack(1).ack(3, SYN_NAK | NAK_ACCESS)  # the WRITE refused: QP 0 fails
    q.ack(1, SYN_NAK | NAK_INVALID, flags=QP1 | PROGRESS)
    q.cmd(C_SEND, 0).cmd(C_RECV, 0)  # refused: the QP failed
    s['nak_fatal'] = q.bytes()

    q = Seq(CFG_SENDS)
    q.ack(40, SYN_NAK | NAK_ACCESS)  # for nothing outstanding: ignored
    q.ack(-5, SYN_NAK | NAK_PSN_SEQ)  # stale
    q.ack(1, 0x80)  # reserved syndrome class
    s['nak_stale'] = q.bytes()

    cnp = pkt(CNP, ext=b'\0' * 16, becn=1)
    q = Seq(CFG_SENDS)
    q.packet(cnp, fix=F_QPN | F_PKEY).packet(cnp, fix=F_QPN | F_PKEY, flags=JUMP | PROGRESS)
    q.cmd(C_JUMP, 50).packet(cnp, fix=F_QPN | F_PKEY, flags=QP1)
    q.cmd(C_RATE, 20).cmd(C_SEND, 7 << 1).cmd(C_PROGRESS)
    s['cnp'] = q.bytes()

    q = Seq(CFG_RECVS | CFG_SENDS)  # CE-marked data: a CNP goes back
    q.data(SEND_ONLY, 0, b'congested', flags=ECN_CE).data(SEND_ONLY, 0, b'again', flags=ECN_CE)
    q.cmd(C_JUMP, 60).data(SEND_ONLY, 0, b'later', flags=ECN_CE | PROGRESS)
    s['ce_marked'] = q.bytes()

    q = Seq(CFG_SENDS)  # nothing answers: tail probe, timeouts, give up
    for i in range(6):
        q.cmd(C_JUMP, 4 << i if 4 << i < 256 else 255)
    q.ack(1, flags=PROGRESS)
    for _ in range(4):
        q.cmd(C_JUMP, 60)
    s['timeouts'] = q.bytes()

    q = Seq(CFG_SENDS)  # a path move with packets in flight
    q.cmd(C_MOVE, 10).cmd(C_PROGRESS).ack(3).cmd(C_JUMP, 20).ack(3, flags=PROGRESS)
    q.cmd(C_MOVE, 11).ack(0)
    s['sport_move'] = q.bytes()

    # -- what the engine refuses before the QP --------------------------------
    q = Seq(CFG_RECVS)
    q.data(SEND_ONLY, 0, b'stranger', flags=STRANGER)
    q.packet(pkt(SEND_ONLY, b'pkey 0x8001', psn=rel(0), pkey=0x8001), fix=F_QPN | F_PSN)
    q.packet(pkt(SEND_ONLY, b'no such QP', psn=rel(0), qp=0x999), fix=F_PSN | F_PKEY)
    q.packet(b'\x04\x00\xff', fix=0)  # truncated
    q.packet(pkt(SEND_ONLY, b'x' * 300), fix=AIM)  # more than one MTU
    q.packet(pkt(SEND_ONLY, b'x' * 400), fix=AIM)  # more than the socket takes
    s['refused_by_engine'] = q.bytes()

    # -- the other engine (MTU 512, window 64, paced) and the PSN wrap --------
    q = Seq(CFG_ENGINE1 | CFG_RECVS | CFG_SENDS)
    q.data(SEND_FIRST, 0, q.full(1)).data(SEND_LAST, 0, b'\x02' * 100, ackreq=1)
    q.data(SEND_ONLY, 40, b'far ahead').ack(2, flags=PROGRESS).ack(6)
    q.cmd(C_SEND, 6 << 1).cmd(C_WRITE, 7 << 1).cmd(C_PROGRESS).ack(8)
    s['engine1_mixed'] = q.bytes()

    q = Seq(CFG_WRAP | CFG_RECVS | CFG_SENDS)  # expected PSN 0xfffff8
    for i in range(12):  # WRITEs across the wrap
        q.data(WRITE_ONLY, 0, bytes([i]) * 8, fix=AIM | F_RKEY | F_VA, ext=reth(8 * i, 0, 8))
    q.data(WRITE_ONLY, 3, b'ahead', fix=AIM | F_RKEY | F_VA, ext=reth(0, 0, 5))
    q.ack(6, flags=PROGRESS)
    s['psn_wrap'] = q.bytes()

    # -- tests/transport/test_qp.c's test_forged_packets_refused, as packets here -------
    q = Seq(0)  # engine 0: MTU 256, window 16, expected PSN 0x10 (slot 0)
    # a SEND_MIDDLE 15 ahead: the last out-of-order slot, 64 bytes over the MTU
    q.data(SEND_MIDDLE, WINDOW[0] - 1, b'\xa5' * (MTU[0] + 64))
    q.data(SEND_MIDDLE, WINDOW[0] - 1, b'\xa5' * 64)  # a MIDDLE short of the MTU
    q.data(SEND_LAST, 0, b'\xa5' * 16)  # LAST without FIRST
    s['forged_ooo_oversize'] = q.bytes()

    q = Seq(CFG_RECVS)
    # RDMA WRITE at the expected PSN, va + dma_len wrapping past 2^64
    q.data(WRITE_ONLY, 0, b'\xa5' * 16, fix=AIM | F_RKEY, ext=reth(2**64 - 1001, 0, 4096))
    # one starting inside the region and running past its end
    q.data(WRITE_ONLY, 0, b'\xa5' * 16, fix=AIM | F_RKEY | F_VA, ext=reth(rl - 8, 0, 16))
    q.data(SEND_ONLY, 0, b'still up', ackreq=1, flags=PROGRESS)
    s['forged_write_wrap'] = q.bytes()
    return s


def crashes():
    """Inputs that found bugs in tp_qp.c (kept as crash-*.bin: the harness
    aborts on them until the bug is fixed)."""
    s = {}
    # QP 0 sent PSNs 16..21. The peer acknowledges 16, then an RNR NAK for
    # 16 arrives late (reordered or duplicated on the way): its PSN, una - 1,
    # passes the check meant for stale ACKs and the requester rewinds to it,
    # behind what is acknowledged: next_psn 16 < una_psn 17. tp_qp_tx then
    # sees (uint32_t)(una - next) = 2^32 - 1 packets in flight and sends
    # nothing (no go-back, no new data) until the retransmission timer.
    q = Seq(CFG_SENDS)
    q.ack(1).ack(0, SYN_RNR, flags=PROGRESS)
    s['crash-rnr-nak-behind-una'] = q.bytes()
    # The same stale RNR NAK when its PSN's SEND has completed: rewind_to()
    # finds no work request holding PSN 18 and jumps to post_psn, past
    # PSN 22 (a SEND posted, not yet sent): next_psn 23 > max_psn 22, and
    # PSN 22 is never sent until a timeout's probing goes back for it.
    q = Seq(CFG_SENDS)
    q.ack(3).cmd(C_SEND, 0).ack(0, SYN_RNR)
    s['crash-rnr-nak-skips-unsent'] = q.bytes()
    # A SEND_ONLY without payload while no receive is posted: stage_begin
    # keeps an empty unexpected message (buf NULL, cap 0) and stage_append
    # computes m->buf + m->len = NULL + 0 and memcpy(NULL, data, 0), both
    # undefined behaviour (UBSan: "applying zero offset to null pointer");
    # the receive posted next does memcpy(buf, NULL, 0) in take_unexpected.
    q = Seq(0)
    q.data(SEND_ONLY, 0, b'').cmd(C_RECV, 2 << 1)
    s['crash-send-empty-unexpected'] = q.bytes()
    # A packet held beyond a gap (PSN e+1) is placed once the gap fills,
    # but it needs room the unexpected-message queue (1024 bytes here) no
    # longer has: an RNR NAK, and it stays held, at epsn. The requester
    # resends from there and the new copy (a LAST here) is placed, while
    # the held one kept its slot behind epsn for good: ooo_count never fell
    # to 0 again, so every later drain NAKed a gap that was not there.
    # (Found by libFuzzer in CI's sanitizer pass, 2026-12-04.)
    q = Seq(0)
    full = q.full(0x5a)
    q.data(SEND_FIRST, 0, full).data(SEND_MIDDLE, 0, full).data(SEND_MIDDLE, 0, full)
    q.data(SEND_MIDDLE, 1, full).data(SEND_MIDDLE, 0, full)
    q.data(SEND_LAST, 0, b'', flags=PROGRESS)
    s['crash-rnr-held-resent'] = q.bytes()
    return s


def main(out):
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        if name.endswith('.bin') and (not name.startswith('crash-') or
                                      name[:-4] in crashes()):
            os.remove(os.path.join(out, name))
    for name, data in list(seeds().items()) + list(crashes().items()):
        with open(os.path.join(out, name + '.bin'), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'corpus-qp'))
