// SPDX-License-Identifier: Apache-2.0
/*
 * tp_wire: RoCEv2 header encode/decode, ICRC and packet parse/build.
 * See tp_wire.h for the layout and the contract of every function.
 */
#include "tp_wire.h"

#include "ice_roce.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <isa-l/crc.h>

/* IBA 9.8.4: READ RESPONSE first/last/only carry an AETH (middle does not). */
#define TP_OP_READ_RESP_FIRST  0x0d
#define TP_OP_READ_RESP_MIDDLE 0x0e
#define TP_OP_READ_RESP_LAST   0x0f
#define TP_OP_READ_RESP_ONLY   0x10

#define TP_IPV4_HDR_LEN 20
#define TP_UDP_HDR_LEN	8
/* Offset of BTH byte 4 (FECN, BECN, reserved), masked to 0xff in the ICRC. */
#define TP_BTH_FECN_OFF 4

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put_be24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static uint32_t get_be24(const uint8_t *p)
{
	return ((uint32_t)p[0] << 16) | ((uint32_t)p[1] << 8) | p[2];
}

static uint32_t get_be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

size_t tp_bth_encode(const struct tp_bth *h, uint8_t *buf)
{
	buf[0] = h->opcode;
	buf[1] = (uint8_t)((h->se ? 0x80 : 0) | (h->mig ? 0x40 : 0) | ((h->pad & 3) << 4) |
			   (h->tver & 0x0f));
	put_be16(buf + 2, h->pkey);
	buf[4] = (uint8_t)((h->fecn ? 0x80 : 0) | (h->becn ? 0x40 : 0));
	put_be24(buf + 5, h->dest_qp & TP_QPN_MASK);
	buf[8] = h->ack_req ? 0x80 : 0;
	put_be24(buf + 9, h->psn & TP_PSN_MASK);
	return ICE_ROCE_BTH_LEN;
}

size_t tp_bth_decode(const uint8_t *buf, struct tp_bth *h)
{
	h->opcode = buf[0];
	h->se = buf[1] & 0x80;
	h->mig = buf[1] & 0x40;
	h->pad = (buf[1] >> 4) & 3;
	h->tver = buf[1] & 0x0f;
	h->pkey = get_be16(buf + 2);
	h->fecn = buf[4] & 0x80;
	h->becn = buf[4] & 0x40;
	h->dest_qp = get_be24(buf + 5);
	h->ack_req = buf[8] & 0x80;
	h->psn = get_be24(buf + 9);
	return ICE_ROCE_BTH_LEN;
}

size_t tp_reth_encode(const struct tp_reth *h, uint8_t *buf)
{
	put_be32(buf, (uint32_t)(h->va >> 32));
	put_be32(buf + 4, (uint32_t)h->va);
	put_be32(buf + 8, h->rkey);
	put_be32(buf + 12, h->dma_len);
	return ICE_ROCE_RETH_LEN;
}

size_t tp_reth_decode(const uint8_t *buf, struct tp_reth *h)
{
	h->va = ((uint64_t)get_be32(buf) << 32) | get_be32(buf + 4);
	h->rkey = get_be32(buf + 8);
	h->dma_len = get_be32(buf + 12);
	return ICE_ROCE_RETH_LEN;
}

size_t tp_aeth_encode(const struct tp_aeth *h, uint8_t *buf)
{
	buf[0] = h->syndrome;
	put_be24(buf + 1, h->msn & 0xffffff);
	return ICE_ROCE_AETH_LEN;
}

size_t tp_aeth_decode(const uint8_t *buf, struct tp_aeth *h)
{
	h->syndrome = buf[0];
	h->msn = get_be24(buf + 1);
	return ICE_ROCE_AETH_LEN;
}

bool tp_op_is_send(uint8_t op)
{
	return op <= TP_OP_SEND_ONLY_IMM;
}

bool tp_op_is_write(uint8_t op)
{
	return op >= TP_OP_WRITE_FIRST && op <= TP_OP_WRITE_ONLY_IMM;
}

bool tp_op_has_reth(uint8_t op)
{
	return op == TP_OP_WRITE_FIRST || op == TP_OP_WRITE_ONLY || op == TP_OP_WRITE_ONLY_IMM ||
	       op == TP_OP_READ_REQ;
}

bool tp_op_has_aeth(uint8_t op)
{
	return op == TP_OP_ACK || op == TP_OP_READ_RESP_FIRST || op == TP_OP_READ_RESP_LAST ||
	       op == TP_OP_READ_RESP_ONLY;
}

bool tp_op_has_imm(uint8_t op)
{
	return op == TP_OP_SEND_LAST_IMM || op == TP_OP_SEND_ONLY_IMM ||
	       op == TP_OP_WRITE_LAST_IMM || op == TP_OP_WRITE_ONLY_IMM;
}

bool tp_op_is_first(uint8_t op)
{
	switch (op) {
	case TP_OP_SEND_FIRST:
	case TP_OP_SEND_ONLY:
	case TP_OP_SEND_ONLY_IMM:
	case TP_OP_WRITE_FIRST:
	case TP_OP_WRITE_ONLY:
	case TP_OP_WRITE_ONLY_IMM:
		return true;
	default:
		return false;
	}
}

bool tp_op_is_last(uint8_t op)
{
	switch (op) {
	case TP_OP_SEND_LAST:
	case TP_OP_SEND_LAST_IMM:
	case TP_OP_SEND_ONLY:
	case TP_OP_SEND_ONLY_IMM:
	case TP_OP_WRITE_LAST:
	case TP_OP_WRITE_LAST_IMM:
	case TP_OP_WRITE_ONLY:
	case TP_OP_WRITE_ONLY_IMM:
		return true;
	default:
		return false;
	}
}

bool tp_op_known(uint8_t op)
{
	return op <= TP_OP_READ_REQ || op == TP_OP_ACK || op == TP_OP_CNP;
}

static const char *const tp_op_names[] = {
	[TP_OP_SEND_FIRST] = "SEND_FIRST",   [TP_OP_SEND_MIDDLE] = "SEND_MIDDLE",
	[TP_OP_SEND_LAST] = "SEND_LAST",     [TP_OP_SEND_LAST_IMM] = "SEND_LAST_IMM",
	[TP_OP_SEND_ONLY] = "SEND_ONLY",     [TP_OP_SEND_ONLY_IMM] = "SEND_ONLY_IMM",
	[TP_OP_WRITE_FIRST] = "WRITE_FIRST", [TP_OP_WRITE_MIDDLE] = "WRITE_MIDDLE",
	[TP_OP_WRITE_LAST] = "WRITE_LAST",   [TP_OP_WRITE_LAST_IMM] = "WRITE_LAST_IMM",
	[TP_OP_WRITE_ONLY] = "WRITE_ONLY",   [TP_OP_WRITE_ONLY_IMM] = "WRITE_ONLY_IMM",
	[TP_OP_READ_REQ] = "READ_REQ",	     [TP_OP_ACK] = "ACK",
};

const char *tp_op_name(uint8_t op)
{
	if (op == TP_OP_CNP)
		return "CNP";
	if (op < sizeof(tp_op_names) / sizeof(tp_op_names[0]) && tp_op_names[op] != NULL)
		return tp_op_names[op];
	return "UNKNOWN";
}

size_t tp_op_hdr_len(uint8_t op)
{
	if (!tp_op_known(op))
		return 0;
	if (op == TP_OP_CNP)
		return ICE_ROCE_BTH_LEN + ICE_ROCE_CNP_RSVD_LEN;
	if (tp_op_has_reth(op))
		return ICE_ROCE_BTH_LEN + ICE_ROCE_RETH_LEN;
	if (tp_op_has_aeth(op))
		return ICE_ROCE_BTH_LEN + ICE_ROCE_AETH_LEN;
	return ICE_ROCE_BTH_LEN;
}

/* Opcodes whose packets carry no payload (and so no pad) at all. */
static bool tp_op_no_payload(uint8_t op)
{
	return op == TP_OP_READ_REQ || op == TP_OP_ACK || op == TP_OP_CNP;
}

/* SEND/WRITE FIRST and MIDDLE: whole path-MTU chunks, so never padded. */
static bool tp_op_not_last(uint8_t op)
{
	return (tp_op_is_send(op) || tp_op_is_write(op)) && !tp_op_is_last(op);
}

/*
 * Continue the ICRC over one piece of the UDP payload that starts at byte off
 * of the UDP payload, with BTH byte 4 replaced by 0xff.
 */
static uint32_t tp_icrc_update(uint32_t crc, size_t off, const uint8_t *p, size_t len)
{
	static const uint8_t ff = 0xff;
	size_t k;

	if (len == 0)
		return crc;
	if (off > TP_BTH_FECN_OFF || off + len <= TP_BTH_FECN_OFF)
		return crc32_gzip_refl(crc, p, len);
	k = TP_BTH_FECN_OFF - off;
	crc = crc32_gzip_refl(crc, p, k);
	crc = crc32_gzip_refl(crc, &ff, 1);
	return crc32_gzip_refl(crc, p + k + 1, len - k - 1);
}

uint32_t tp_icrc_compute(const struct tp_icrc_addr *a, const uint8_t *hdr, size_t hdr_len,
			 const uint8_t *data, size_t data_len)
{
	/* The 8 bytes of 0xff stand for the masked InfiniBand LRH. */
	static const uint8_t lrh_mask[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	uint8_t pseudo[TP_IPV4_HDR_LEN + TP_UDP_HDR_LEN];
	size_t udp_len = TP_UDP_HDR_LEN + hdr_len + data_len + ICE_ROCE_ICRC_LEN;
	uint8_t *ip = pseudo;
	uint8_t *udp = pseudo + TP_IPV4_HDR_LEN;
	uint32_t crc;

	ip[0] = 0x45;
	ip[1] = 0xff; /* TOS, masked */
	put_be16(ip + 2, (uint16_t)(TP_IPV4_HDR_LEN + udp_len));
	put_be16(ip + 4, a->ip_id);
	put_be16(ip + 6, 0x4000); /* DF, fragment offset 0 */
	ip[8] = 0xff;		  /* TTL, masked */
	ip[9] = 17;		  /* UDP */
	ip[10] = 0xff;		  /* header checksum, masked */
	ip[11] = 0xff;
	memcpy(ip + 12, &a->saddr, 4);
	memcpy(ip + 16, &a->daddr, 4);
	put_be16(udp, a->sport);
	put_be16(udp + 2, a->dport);
	put_be16(udp + 4, (uint16_t)udp_len);
	udp[6] = 0xff; /* checksum, masked */
	udp[7] = 0xff;

	crc = crc32_gzip_refl(0, lrh_mask, sizeof(lrh_mask));
	crc = crc32_gzip_refl(crc, pseudo, sizeof(pseudo));
	crc = tp_icrc_update(crc, 0, hdr, hdr_len);
	return tp_icrc_update(crc, hdr_len, data, data_len);
}

/* The CRC with no initial or final inversion (the difference of two ICRCs
 * of equal length) of the identification's two bytes and the input after
 * them: IPv4 from byte 6 on (14), UDP (8), the payload without its ICRC
 * (len - 4); zeros there, as the two inputs agree. */
static uint32_t icrc_id_diff(size_t len, uint16_t id)
{
	static const uint8_t zeros[512];
	uint8_t be[2] = {(uint8_t)(id >> 8), (uint8_t)id};
	size_t rest = len >= ICE_ROCE_ICRC_LEN ? 14 + TP_UDP_HDR_LEN + len - ICE_ROCE_ICRC_LEN : 0;
	uint32_t crc = crc32_gzip_refl(0xffffffffu, be, sizeof(be));

	for (size_t n; rest > 0; rest -= n) {
		n = rest < sizeof(zeros) ? rest : sizeof(zeros);
		crc = crc32_gzip_refl(crc, zeros, n);
	}
	return ~crc;
}

/* The difference for each bit of an identification below TP_ICRC_IDS, at
 * UDP payload length len; kept for the lengths seen last (a flow's packets
 * have two or three), per thread. */
#define TP_ICRC_ID_BITS 5
static const uint32_t *icrc_id_bits(size_t len)
{
	enum { WAYS = 4 };
	static _Thread_local struct {
		size_t len;
		uint32_t bit[TP_ICRC_ID_BITS];
	} cache[WAYS];
	static _Thread_local unsigned int next;
	unsigned int w;

	_Static_assert(TP_ICRC_IDS == 1u << TP_ICRC_ID_BITS, "a difference per bit of the ID");
	for (w = 0; w < WAYS; w++)
		if (cache[w].len == len)
			return cache[w].bit;
	w = next++ % WAYS;
	cache[w].len = len;
	for (int b = 0; b < TP_ICRC_ID_BITS; b++)
		cache[w].bit[b] = icrc_id_diff(len, (uint16_t)(1u << b));
	return cache[w].bit;
}

static uint32_t icrc_id_sum(const uint32_t *bit, unsigned int id)
{
	uint32_t x = 0;

	for (int b = 0; b < TP_ICRC_ID_BITS; b++)
		if (id & (1u << b))
			x ^= bit[b];
	return x;
}

uint32_t tp_icrc_id_delta(size_t len, uint16_t id)
{
	if (id >= TP_ICRC_IDS)
		return icrc_id_diff(len, id);
	return icrc_id_sum(icrc_id_bits(len), id);
}

/* Does d (computed ICRC XOR the packet's) match an identification 1 ..
 * TP_ICRC_IDS - 1? */
static bool icrc_id_match(size_t len, uint32_t d)
{
	const uint32_t *bit = icrc_id_bits(len);

	for (unsigned int id = 1; id < TP_ICRC_IDS; id++)
		if (icrc_id_sum(bit, id) == d)
			return true;
	return false;
}

void tp_icrc_store(uint32_t icrc, uint8_t *out4)
{
	out4[0] = (uint8_t)icrc;
	out4[1] = (uint8_t)(icrc >> 8);
	out4[2] = (uint8_t)(icrc >> 16);
	out4[3] = (uint8_t)(icrc >> 24);
}

uint32_t tp_icrc_load(const uint8_t *in4)
{
	return (uint32_t)in4[0] | ((uint32_t)in4[1] << 8) | ((uint32_t)in4[2] << 16) |
	       ((uint32_t)in4[3] << 24);
}

static const char *const tp_drop_names[TP_DROP_REASON_MAX] = {
	[TP_DROP_TRUNCATED] = "truncated",     [TP_DROP_BAD_VERSION] = "bad_version",
	[TP_DROP_BAD_OPCODE] = "bad_opcode",   [TP_DROP_BAD_PAD] = "bad_pad",
	[TP_DROP_BAD_PKEY] = "bad_pkey",       [TP_DROP_BAD_ICRC] = "bad_icrc",
	[TP_DROP_UNKNOWN_QP] = "unknown_qp",   [TP_DROP_WRONG_PEER] = "wrong_peer",
	[TP_DROP_BAD_LENGTH] = "bad_length",   [TP_DROP_QP_STATE] = "qp_state",
	[TP_DROP_DUPLICATE] = "duplicate",     [TP_DROP_OUT_OF_ORDER] = "out_of_order",
	[TP_DROP_NO_RECV_WQE] = "no_recv_wqe", [TP_DROP_BAD_ACK] = "bad_ack",
	[TP_DROP_BAD_ACCESS] = "bad_access",   [TP_DROP_BAD_SEQUENCE] = "bad_sequence",
};

static const char *const tp_retx_names[TP_RETX_REASON_MAX] = {
	[TP_RETX_NAK] = "nak", [TP_RETX_TLP] = "tail_probe", [TP_RETX_TIMEOUT] = "timeout",
	[TP_RETX_RNR] = "rnr", [TP_RETX_MOVE] = "path_move",
};

const char *tp_retx_reason_name(enum tp_retx_reason r)
{
	if ((unsigned int)r >= TP_RETX_REASON_MAX)
		return "unknown";
	return tp_retx_names[r];
}

const char *tp_drop_reason_name(enum tp_drop_reason r)
{
	if ((unsigned int)r >= TP_DROP_REASON_MAX)
		return "unknown";
	return tp_drop_names[r];
}

static int tp_drop(enum tp_drop_reason r)
{
	return -(int)r - 1;
}

int tp_pkt_parse(const uint8_t *buf, size_t len, const struct tp_icrc_addr *a, struct tp_pkt *pkt)
{
	size_t hdr_len, body;
	uint8_t op;

	if (len < ICE_ROCE_BTH_LEN + ICE_ROCE_ICRC_LEN)
		return tp_drop(TP_DROP_TRUNCATED);
	memset(pkt, 0, sizeof(*pkt));
	pkt->icrc = tp_icrc_load(buf + len - ICE_ROCE_ICRC_LEN);
	/* A corrupted packet says nothing reliable: check the ICRC first (for
	 * identification 0, or a GSO segment's) */
	if (a != NULL) {
		uint32_t d = tp_icrc_compute(a, buf, len - ICE_ROCE_ICRC_LEN, NULL, 0) ^ pkt->icrc;

		if (d != 0 && !icrc_id_match(len, d))
			return tp_drop(TP_DROP_BAD_ICRC);
	}

	tp_bth_decode(buf, &pkt->bth);
	op = pkt->bth.opcode;
	if (pkt->bth.tver != 0)
		return tp_drop(TP_DROP_BAD_VERSION);
	if (!tp_op_known(op))
		return tp_drop(TP_DROP_BAD_OPCODE);

	hdr_len = tp_op_hdr_len(op);
	if (len - ICE_ROCE_ICRC_LEN < hdr_len)
		return tp_drop(op == TP_OP_CNP ? TP_DROP_BAD_LENGTH : TP_DROP_TRUNCATED);
	if (tp_op_has_reth(op))
		tp_reth_decode(buf + ICE_ROCE_BTH_LEN, &pkt->reth);
	if (tp_op_has_aeth(op))
		tp_aeth_decode(buf + ICE_ROCE_BTH_LEN, &pkt->aeth);

	body = len - ICE_ROCE_ICRC_LEN - hdr_len;
	if (tp_op_no_payload(op) && body != 0)
		return tp_drop(TP_DROP_BAD_LENGTH);
	if (pkt->bth.pad > body || (pkt->bth.pad != 0 && tp_op_not_last(op)) || (body & 3) != 0)
		return tp_drop(TP_DROP_BAD_PAD);

	pkt->payload = buf + hdr_len;
	pkt->payload_len = body - pkt->bth.pad;
	if (tp_op_has_imm(op) && pkt->payload_len < ICE_ROCE_IMMDT_LEN)
		return tp_drop(TP_DROP_BAD_LENGTH);
	/* FIRST and MIDDLE packets carry a full path MTU, never nothing. */
	if (tp_op_not_last(op) && pkt->payload_len == 0)
		return tp_drop(TP_DROP_BAD_LENGTH);
	return 0;
}

int tp_pkt_build(uint8_t *out, size_t cap, struct tp_bth *bth, const struct tp_reth *reth,
		 const struct tp_aeth *aeth, const void *payload, size_t payload_len,
		 const struct tp_icrc_addr *a)
{
	uint8_t op = bth->opcode;
	size_t hdr_len = tp_op_hdr_len(op);
	size_t total, off;
	uint8_t pad;

	if (hdr_len == 0 || a == NULL)
		return -EINVAL;
	if (tp_op_has_reth(op) != (reth != NULL) || tp_op_has_aeth(op) != (aeth != NULL))
		return -EINVAL;
	if (tp_op_no_payload(op) && payload_len != 0)
		return -EINVAL;
	if (tp_op_has_imm(op) && payload_len < ICE_ROCE_IMMDT_LEN)
		return -EINVAL;
	if (tp_op_not_last(op) && (payload_len == 0 || (payload_len & 3) != 0))
		return -EINVAL;
	if (payload_len != 0 && payload == NULL)
		return -EINVAL;
	if (payload_len > cap)
		return -ENOSPC;
	pad = tp_pad_for(payload_len);
	total = hdr_len + payload_len + pad + ICE_ROCE_ICRC_LEN;
	if (total > cap || total > INT32_MAX)
		return -ENOSPC;

	bth->pad = pad;
	off = tp_bth_encode(bth, out);
	if (reth != NULL)
		off += tp_reth_encode(reth, out + off);
	if (aeth != NULL)
		off += tp_aeth_encode(aeth, out + off);
	if (op == TP_OP_CNP) {
		memset(out + off, 0, ICE_ROCE_CNP_RSVD_LEN);
		off += ICE_ROCE_CNP_RSVD_LEN;
	}
	if (payload_len != 0)
		memcpy(out + off, payload, payload_len);
	off += payload_len;
	memset(out + off, 0, pad);
	off += pad;
	tp_icrc_store(tp_icrc_compute(a, out, off, NULL, 0), out + off);
	return (int)total;
}
