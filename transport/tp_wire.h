/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tp_wire: RoCEv2 headers on the wire (InfiniBand Architecture Specification
 * Vol. 1, chapter 9 transport headers; Annex A17 RoCEv2).
 *
 *   Ether / IPv4 / UDP (dst 4791) / BTH (12) / [RETH (16) | AETH (4) |
 *   CNP reserved (16)] / payload / pad (0-3) / ICRC (4)
 *
 * All encode/decode functions work on byte buffers in network order and never
 * read or write past the lengths they are given. The UDP payload is what a UDP
 * socket sends and receives: everything from the BTH to the ICRC.
 */
#ifndef TP_WIRE_H
#define TP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ice_roce.h"

#define TP_PSN_MASK	0xffffffu
#define TP_QPN_MASK	0xffffffu
#define TP_DEFAULT_PKEY 0xffff
/* Largest header stack we emit before the payload: BTH + RETH. */
#define TP_MAX_HDR_LEN (ICE_ROCE_BTH_LEN + ICE_ROCE_RETH_LEN)

/* RC opcodes (IBA table 38) and the RoCEv2 CNP. */
enum tp_opcode {
	TP_OP_SEND_FIRST = 0x00,
	TP_OP_SEND_MIDDLE = 0x01,
	TP_OP_SEND_LAST = 0x02,
	TP_OP_SEND_LAST_IMM = 0x03,
	TP_OP_SEND_ONLY = 0x04,
	TP_OP_SEND_ONLY_IMM = 0x05,
	TP_OP_WRITE_FIRST = 0x06,
	TP_OP_WRITE_MIDDLE = 0x07,
	TP_OP_WRITE_LAST = 0x08,
	TP_OP_WRITE_LAST_IMM = 0x09,
	TP_OP_WRITE_ONLY = 0x0a,
	TP_OP_WRITE_ONLY_IMM = 0x0b,
	TP_OP_READ_REQ = 0x0c,
	TP_OP_ACK = ICE_ROCE_OP_ACK,
	TP_OP_CNP = ICE_ROCE_OP_CNP,
};

/* The AETH syndrome's class (ICE_ROCE_AETH_*) with the reserved bit 7: a
 * syndrome that sets it matches no class and is dropped. */
#define TP_AETH_CLASS_MASK 0xe0
/* NAK codes (low 5 bits with ICE_ROCE_AETH_NAK). */
#define TP_NAK_PSN_SEQ_ERR   0
#define TP_NAK_INVALID_REQ   1
#define TP_NAK_REMOTE_ACCESS 2
#define TP_NAK_REMOTE_OP     3
/* ACK with "credits invalid" (0x1f) as a NIC without end-to-end credits sends. */
#define TP_AETH_ACK_NO_CREDIT 0x1f

struct tp_bth {
	uint8_t opcode;
	bool se;	  /* solicited event */
	bool mig;	  /* migration state (M) */
	uint8_t pad;	  /* PadCnt, 0-3 */
	uint8_t tver;	  /* transport header version, 0 */
	uint16_t pkey;	  /* partition key */
	bool fecn;	  /* byte 4 bit 7 */
	bool becn;	  /* byte 4 bit 6 (set on CNPs) */
	uint32_t dest_qp; /* 24 bits */
	bool ack_req;	  /* byte 8 bit 7 */
	uint32_t psn;	  /* 24 bits */
};

struct tp_reth {
	uint64_t va;
	uint32_t rkey;
	uint32_t dma_len;
};

struct tp_aeth {
	uint8_t syndrome;
	uint32_t msn; /* 24 bits */
};

/* Encode into buf (at least the header's length). Return bytes written. */
size_t tp_bth_encode(const struct tp_bth *h, uint8_t *buf);
size_t tp_reth_encode(const struct tp_reth *h, uint8_t *buf);
size_t tp_aeth_encode(const struct tp_aeth *h, uint8_t *buf);
/* Decode from buf (at least the header's length). Return bytes read. */
size_t tp_bth_decode(const uint8_t *buf, struct tp_bth *h);
size_t tp_reth_decode(const uint8_t *buf, struct tp_reth *h);
size_t tp_aeth_decode(const uint8_t *buf, struct tp_aeth *h);

/* Opcode properties. */
bool tp_op_is_send(uint8_t op);	    /* SEND first..only (with or without imm) */
bool tp_op_is_write(uint8_t op);    /* WRITE first..only */
bool tp_op_has_reth(uint8_t op);    /* WRITE first/only (+imm), READ request */
bool tp_op_has_aeth(uint8_t op);    /* ACK (and READ responses) */
bool tp_op_is_first(uint8_t op);    /* *_FIRST or *_ONLY */
bool tp_op_is_last(uint8_t op);	    /* *_LAST or *_ONLY (incl. imm) */
bool tp_op_has_imm(uint8_t op);	    /* *_IMM: ImmDt (4 bytes) after BTH [RETH] */
bool tp_op_known(uint8_t op);	    /* one this transport handles */
const char *tp_op_name(uint8_t op); /* "SEND_FIRST", ...; "UNKNOWN" otherwise */

/* 24-bit PSN arithmetic: signed distance b - a in [-2^23, 2^23). */
static inline int32_t tp_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((b - a) << 8) >> 8;
}

static inline uint32_t tp_psn_add(uint32_t a, uint32_t n)
{
	return (a + n) & TP_PSN_MASK;
}

/*
 * ICRC (IBA Annex A17.8.2): CRC-32 (IEEE, reflected, init/final xor ~0) over
 * 8 bytes of 0xff, the IPv4 header with TOS, TTL and header checksum set to
 * 0xff bytes, the UDP header with its checksum set to 0xff, the BTH with byte 4
 * (FECN, BECN, reserved) set to 0xff, and the rest of the packet up to the
 * ICRC. Transmitted least-significant byte first.
 *
 * The IPv4 header is rebuilt from the fields a UDP socket knows, with the
 * values Linux puts on the wire for our sockets: version 4, IHL 5, total length
 * = 20 + 8 + udp_payload_len, identification 0 (DF set on an unconnected
 * socket; a UDP GSO segment's: below), flags DF, fragment offset 0,
 * protocol 17.
 */
struct tp_icrc_addr {
	uint32_t saddr; /* network order */
	uint32_t daddr; /* network order */
	uint16_t sport; /* host order */
	uint16_t dport; /* host order */
	uint16_t ip_id; /* host order, normally 0 */
};

/* ICRC of a UDP payload of len bytes (BTH .. end of padded payload, i.e.
 * without the 4 ICRC bytes). The payload may be given as a header part and a
 * data part so the sender need not copy the data. */
uint32_t tp_icrc_compute(const struct tp_icrc_addr *a, const uint8_t *hdr, size_t hdr_len,
			 const uint8_t *data, size_t data_len);
/* UDP GSO: the stack cuts a message into segments whose IPv4
 * identification counts up from the message's 0 (segment k carries k), and
 * the ICRC covers it. CRC-32 is linear, so the ICRC with identification id
 * is the one with 0 XOR this difference, which depends only on id and the
 * UDP payload's length (len: BTH .. ICRC, the 4 ICRC bytes included). */
uint32_t tp_icrc_id_delta(size_t len, uint16_t id);
/* Identifications a receiver accepts (0 .. TP_ICRC_IDS - 1): an unsegmented
 * packet's 0, or a segment's place in a GSO message of at most TP_ICRC_IDS
 * packets. */
#define TP_ICRC_IDS 32
/* Store / load the ICRC in wire order (LSB first). */
void tp_icrc_store(uint32_t icrc, uint8_t *out4);
uint32_t tp_icrc_load(const uint8_t *in4);

/* Why a received packet was dropped; counted per reason by the receiver. */
enum tp_drop_reason {
	TP_DROP_TRUNCATED = 0, /* shorter than its headers + ICRC */
	TP_DROP_BAD_VERSION,   /* TVer != 0 */
	TP_DROP_BAD_OPCODE,    /* opcode not handled */
	TP_DROP_BAD_PAD,       /* pad > payload, pad on a non-last packet, or
				* payload + pad not a multiple of 4 */
	TP_DROP_BAD_PKEY,      /* P_Key does not match the QP's */
	TP_DROP_BAD_ICRC,      /* ICRC mismatch (when verification is on) */
	TP_DROP_UNKNOWN_QP,    /* no such destination QP */
	TP_DROP_WRONG_PEER,    /* source address is not the QP's peer */
	TP_DROP_BAD_LENGTH,    /* payload length wrong for the opcode/MTU */
	TP_DROP_QP_STATE,      /* QP not in a state that accepts it */
	TP_DROP_DUPLICATE,     /* already-received PSN (re-ACKed, not an error) */
	TP_DROP_OUT_OF_ORDER,  /* PSN ahead of expected (NAK sent once) */
	TP_DROP_NO_RECV_WQE,   /* SEND with no posted receive (RNR NAK sent) */
	TP_DROP_BAD_ACK,       /* ACK/NAK for a PSN never sent */
	TP_DROP_BAD_ACCESS,    /* RDMA WRITE outside every registered region */
	TP_DROP_BAD_SEQUENCE,  /* opcode does not follow the message in progress */
	TP_DROP_REASON_MAX,
};

const char *tp_drop_reason_name(enum tp_drop_reason r);

/* Why a packet went out again (its PSN had been sent before). */
enum tp_retx_reason {
	TP_RETX_NAK = 0, /* the responder NAKed a gap: that packet alone */
	TP_RETX_TLP,	 /* tail loss probe: the last packet, when the tail went unanswered */
	TP_RETX_TIMEOUT, /* the timer's probe, and the packets its answer showed lost */
	TP_RETX_RNR,	 /* go back after a receiver-not-ready NAK */
	TP_RETX_MOVE,	 /* sent on the old source port before a path move */
	TP_RETX_REASON_MAX,
};
const char *tp_retx_reason_name(enum tp_retx_reason r);

/* The result of parsing one received UDP payload. Pointers point into the
 * caller's buffer. For *_IMM opcodes the 4-byte ImmDt (which follows BTH and
 * RETH on the wire) is the first 4 bytes of payload, in both tp_pkt_parse and
 * tp_pkt_build; such packets have payload_len >= 4. */
struct tp_pkt {
	struct tp_bth bth;
	struct tp_reth reth;	/* valid when tp_op_has_reth(bth.opcode) */
	struct tp_aeth aeth;	/* valid when tp_op_has_aeth(bth.opcode) */
	const uint8_t *payload; /* data after the headers */
	size_t payload_len;	/* without pad and ICRC */
	uint32_t icrc;		/* as received */
};

/*
 * Parse a UDP payload: headers, pad and ICRC. Checks lengths, TVer, opcode,
 * pad; when a is non-NULL also verifies the ICRC against the addresses.
 * Returns 0 or a negated enum tp_drop_reason (-TP_DROP_TRUNCATED, ...) minus 1,
 * i.e. use tp_parse_reason(ret) to get the reason. Never reads past len.
 */
int tp_pkt_parse(const uint8_t *buf, size_t len, const struct tp_icrc_addr *a, struct tp_pkt *pkt);

static inline enum tp_drop_reason tp_parse_reason(int ret)
{
	return (enum tp_drop_reason)(-ret - 1);
}

/* Build a complete UDP payload into out (capacity cap): BTH, optional RETH
 * (reth != NULL) or AETH (aeth != NULL), payload, pad (bth->pad is computed
 * and set here from payload_len), ICRC for a. CNPs: opcode TP_OP_CNP with
 * becn set gets the 16 reserved zero bytes. Returns total length or -ENOSPC;
 * -EINVAL when the opcode is not tp_op_known, reth/aeth do not match what the
 * opcode carries, a payload is given to READ_REQ/ACK/CNP, an *_IMM payload is
 * shorter than its ImmDt, a FIRST/MIDDLE payload is empty or not a multiple of
 * 4 (they carry whole path-MTU chunks), or a is NULL. */
int tp_pkt_build(uint8_t *out, size_t cap, struct tp_bth *bth, const struct tp_reth *reth,
		 const struct tp_aeth *aeth, const void *payload, size_t payload_len,
		 const struct tp_icrc_addr *a);

/* Header bytes for opcode op (BTH + extension headers), 0 if unknown. */
size_t tp_op_hdr_len(uint8_t op);

/* Pad count for a payload length (bytes to the next multiple of 4). */
static inline uint8_t tp_pad_for(size_t payload_len)
{
	return (uint8_t)((4 - (payload_len & 3)) & 3);
}

#endif /* TP_WIRE_H */
