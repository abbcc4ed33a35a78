// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_wire: libFuzzer harness for tp_pkt_parse and the header codecs.
 *
 * Every input is parsed twice, with and without ICRC verification (the fixed
 * addresses below are the ones the seed corpus was built for, so seeds pass the
 * ICRC check). For a packet that parses, the headers are re-encoded and
 * decoded again and the packet is rebuilt with tp_pkt_build and re-parsed;
 * any difference aborts. Built as a libFuzzer binary with clang
 * (-Dfuzz=true) and, always, with the replay driver in fuzz_main.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "tp_wire.h"

#define FUZZ_MAX_PKT 4096

#define fuzz_check(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_wire: %s:%d: check failed: %s\n", __FILE__,          \
				__LINE__, #cond);                                                  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The addresses the seed corpus (tests/fuzz/corpus) was built with:
 * 10.0.0.1:0xc123 -> 10.0.0.2:4791, IP id 0. */
static struct tp_icrc_addr fuzz_addr_get(void)
{
	struct tp_icrc_addr a = {
		.saddr = htonl(0x0a000001),
		.daddr = htonl(0x0a000002),
		.sport = 0xc123,
		.dport = ICE_ROCE_UDP_PORT,
		.ip_id = 0,
	};
	return a;
}

static bool bth_equal(const struct tp_bth *x, const struct tp_bth *y)
{
	return x->opcode == y->opcode && x->se == y->se && x->mig == y->mig && x->pad == y->pad &&
	       x->tver == y->tver && x->pkey == y->pkey && x->fecn == y->fecn &&
	       x->becn == y->becn && x->dest_qp == y->dest_qp && x->ack_req == y->ack_req &&
	       x->psn == y->psn;
}

static bool reth_equal(const struct tp_reth *x, const struct tp_reth *y)
{
	return x->va == y->va && x->rkey == y->rkey && x->dma_len == y->dma_len;
}

static bool aeth_equal(const struct tp_aeth *x, const struct tp_aeth *y)
{
	return x->syndrome == y->syndrome && x->msn == y->msn;
}

/* decode(encode(x)) == x for each header, and encode(decode(bytes)) keeps
 * every non-reserved bit of bytes. */
static void check_header_codecs(const uint8_t *buf, const struct tp_pkt *pkt)
{
	uint8_t enc[ICE_ROCE_RETH_LEN];
	struct tp_bth bth;
	struct tp_reth reth;
	struct tp_aeth aeth;
	uint8_t op = pkt->bth.opcode;

	fuzz_check(tp_bth_encode(&pkt->bth, enc) == ICE_ROCE_BTH_LEN);
	fuzz_check(tp_bth_decode(enc, &bth) == ICE_ROCE_BTH_LEN);
	fuzz_check(bth_equal(&bth, &pkt->bth));
	fuzz_check(enc[0] == buf[0] && enc[1] == buf[1] && enc[2] == buf[2] && enc[3] == buf[3]);
	fuzz_check(enc[4] == (buf[4] & 0xc0));
	fuzz_check(memcmp(enc + 5, buf + 5, 3) == 0);
	fuzz_check(enc[8] == (buf[8] & 0x80));
	fuzz_check(memcmp(enc + 9, buf + 9, 3) == 0);

	if (tp_op_has_reth(op)) {
		fuzz_check(tp_reth_encode(&pkt->reth, enc) == ICE_ROCE_RETH_LEN);
		fuzz_check(memcmp(enc, buf + ICE_ROCE_BTH_LEN, ICE_ROCE_RETH_LEN) == 0);
		fuzz_check(tp_reth_decode(enc, &reth) == ICE_ROCE_RETH_LEN);
		fuzz_check(reth_equal(&reth, &pkt->reth));
	}
	if (tp_op_has_aeth(op)) {
		fuzz_check(tp_aeth_encode(&pkt->aeth, enc) == ICE_ROCE_AETH_LEN);
		fuzz_check(memcmp(enc, buf + ICE_ROCE_BTH_LEN, ICE_ROCE_AETH_LEN) == 0);
		fuzz_check(tp_aeth_decode(enc, &aeth) == ICE_ROCE_AETH_LEN);
		fuzz_check(aeth_equal(&aeth, &pkt->aeth));
	}
}

/* Rebuild the parsed packet and parse it again: same fields, same payload. */
static void check_rebuild(const uint8_t *buf, size_t len, const struct tp_pkt *pkt, bool icrc_ok)
{
	static uint8_t out[FUZZ_MAX_PKT];
	struct tp_icrc_addr a = fuzz_addr_get();
	struct tp_bth bth = pkt->bth;
	struct tp_pkt again;
	uint8_t op = bth.opcode;
	int n;

	n = tp_pkt_build(out, sizeof(out), &bth, tp_op_has_reth(op) ? &pkt->reth : NULL,
			 tp_op_has_aeth(op) ? &pkt->aeth : NULL, pkt->payload, pkt->payload_len,
			 &a);
	fuzz_check(n > 0);
	fuzz_check((size_t)n == len);
	fuzz_check(bth.pad == pkt->bth.pad);
	fuzz_check(tp_pkt_parse(out, (size_t)n, &a, &again) == 0);
	fuzz_check(bth_equal(&again.bth, &pkt->bth));
	if (tp_op_has_reth(op))
		fuzz_check(reth_equal(&again.reth, &pkt->reth));
	if (tp_op_has_aeth(op))
		fuzz_check(aeth_equal(&again.aeth, &pkt->aeth));
	fuzz_check(again.payload_len == pkt->payload_len);
	fuzz_check(again.payload == out + (pkt->payload - buf));
	fuzz_check(pkt->payload_len == 0 ||
		   memcmp(again.payload, pkt->payload, pkt->payload_len) == 0);
	/* With a good ICRC and canonical reserved bits and pad the rebuild is
	 * byte-identical; either way its ICRC must verify (checked above). */
	if (icrc_ok && (buf[4] & 0x3f) == 0 && (buf[8] & 0x7f) == 0) {
		bool canonical = true;
		size_t pad_at = len - ICE_ROCE_ICRC_LEN - pkt->bth.pad;

		for (size_t i = pad_at; i < len - ICE_ROCE_ICRC_LEN; i++)
			canonical &= buf[i] == 0;
		if (op == TP_OP_CNP)
			for (size_t i = ICE_ROCE_BTH_LEN;
			     i < ICE_ROCE_BTH_LEN + ICE_ROCE_CNP_RSVD_LEN; i++)
				canonical &= buf[i] == 0;
		if (canonical)
			fuzz_check(memcmp(out, buf, len) == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tp_icrc_addr a = fuzz_addr_get();
	struct tp_pkt pkt, pkt_icrc;
	int ret, ret_icrc;

	ret = tp_pkt_parse(data, size, NULL, &pkt);
	ret_icrc = tp_pkt_parse(data, size, &a, &pkt_icrc);
	fuzz_check(ret <= 0 && ret_icrc <= 0);
	if (ret < 0) {
		fuzz_check(tp_parse_reason(ret) < TP_DROP_REASON_MAX);
		fuzz_check(strcmp(tp_drop_reason_name(tp_parse_reason(ret)), "unknown") != 0);
	}
	if (ret_icrc < 0)
		fuzz_check(tp_parse_reason(ret_icrc) < TP_DROP_REASON_MAX);
	/* The ICRC check only adds a reason; it never makes a bad packet good. */
	if (ret_icrc == 0)
		fuzz_check(ret == 0);
	else if (ret == 0)
		fuzz_check(tp_parse_reason(ret_icrc) == TP_DROP_BAD_ICRC);
	else if (tp_parse_reason(ret_icrc) != TP_DROP_BAD_ICRC)
		fuzz_check(ret_icrc == ret);
	if (ret != 0)
		return 0;

	fuzz_check(tp_op_known(pkt.bth.opcode));
	fuzz_check(pkt.bth.tver == 0);
	fuzz_check(pkt.payload >= data && pkt.payload + pkt.payload_len <= data + size);
	fuzz_check(pkt.payload == data + tp_op_hdr_len(pkt.bth.opcode));
	fuzz_check(size == tp_op_hdr_len(pkt.bth.opcode) + pkt.payload_len + pkt.bth.pad +
				   ICE_ROCE_ICRC_LEN);
	fuzz_check(pkt.bth.pad == tp_pad_for(pkt.payload_len));
	check_header_codecs(data, &pkt);
	if (size <= FUZZ_MAX_PKT)
		check_rebuild(data, size, &pkt, ret_icrc == 0);
	return 0;
}

/* ---- the replay driver's hooks (fuzz_main.c) ------------------------------ */

void fuzz_replay_fixup(uint8_t *buf, size_t len);
void fuzz_replay_note(const uint8_t *buf, size_t len);
void fuzz_replay_summary(void);

/* How the inputs fared in tp_pkt_parse with the ICRC check: [0] accepted,
 * [1 + reason] dropped. Only for the summary line. */
static unsigned long outcomes[1 + TP_DROP_REASON_MAX];

/* Make the ICRC right for the harness addresses, so mutants get past the
 * ICRC check too. */
void fuzz_replay_fixup(uint8_t *buf, size_t len)
{
	struct tp_icrc_addr a = fuzz_addr_get();

	if (len >= ICE_ROCE_ICRC_LEN)
		tp_icrc_store(tp_icrc_compute(&a, buf, len - ICE_ROCE_ICRC_LEN, NULL, 0),
			      buf + len - ICE_ROCE_ICRC_LEN);
}

void fuzz_replay_note(const uint8_t *buf, size_t len)
{
	struct tp_icrc_addr a = fuzz_addr_get();
	struct tp_pkt pkt;
	int ret = tp_pkt_parse(buf, len, &a, &pkt);

	outcomes[ret == 0 ? 0 : 1 + tp_parse_reason(ret)]++;
}

void fuzz_replay_summary(void)
{
	printf("fuzz_main: accepted %lu", outcomes[0]);
	for (int r = 0; r < TP_DROP_REASON_MAX; r++)
		if (outcomes[1 + r])
			printf(", %s %lu", tp_drop_reason_name((enum tp_drop_reason)r),
			       outcomes[1 + r]);
	printf("\n");
}
