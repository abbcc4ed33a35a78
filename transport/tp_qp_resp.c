// SPDX-License-Identifier: Apache-2.0
/*
 * tp_qp_resp: the responder side of a reliable-connected QP (tp_qp.c has
 * the requester): the receive queue and unexpected SENDs, ACK/NAK/CNP
 * generation, and the placement of received data.
 *
 * It places the expected PSN's payload straight into the posted
 * receive buffer (SEND) or the registered region (WRITE), holds packets
 * ahead of a gap and NAKs the gap, answers duplicates (with a NAK while it
 * holds packets beyond a gap), coalesces ACKs
 * (AckReq, every ack_every packets, one per receive batch), and, as DCQCN's
 * notification point, answers CE marks with paced CNPs. Every length and
 * address from the wire is checked against the MTU, the posted buffer or the
 * registered region before any copy; a packet that fails a check is counted
 * by reason and dropped, and the QP goes on: a forged packet cannot take a
 * healthy connection down or write outside what the application gave.
 */
#include "tp_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/ip.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ice_log.h"
#include "ice_time.h"

static void send_nak(struct tp_qp *qp, uint8_t syndrome);

/* A receive is posted while SENDs wait in the unexpected queue: the oldest
 * one is its message. A finished one completes at once; the one still
 * arriving continues straight into the new buffer. */
static int take_unexpected(struct tp_qp *qp, void *buf, size_t len, uint64_t wr_id)
{
	struct tp_unexp *m = &qp->unexp[qp->ux_head % TP_UNEXP_MAX];
	struct tp_wc wc = {
		.wr_id = wr_id, .qpn = qp->qpn, .opcode = TP_WC_RECV, .byte_len = (uint32_t)m->len};

	if (m->len > len) {
		ice_err(ICE_SUB_QP, "QP 0x%x: a %zu-byte message arrived for a %zu-byte receive",
			qp->qpn, m->len, len);
		wc.status = -EMSGSIZE;
		wc.byte_len = 0; /* nothing was placed in the buffer */
		tp_cq_push(qp->e, &wc);
		if (!m->done) {
			/* the rest of it is on its way: a local length error,
			 * fatal as on a NIC (the requester learns by the NAK) */
			qp->rcv_active = qp->rcv_staging = false;
			send_nak(qp, ICE_ROCE_AETH_NAK | TP_NAK_INVALID_REQ);
			tp_qp_fail(qp, -EMSGSIZE, "message longer than the posted receive buffer");
			return 0;
		}
	} else if (m->done) {
		if (m->len != 0)
			memcpy(buf, m->buf, m->len);
		tp_cq_push(qp->e, &wc);
	} else {
		struct tp_rwqe *r = &qp->rq[qp->rq_tail % TP_RQ_DEPTH];

		if (m->len != 0)
			memcpy(buf, m->buf, m->len);
		r->buf = buf;
		r->len = len;
		r->wr_id = wr_id;
		qp->rq_tail++;
		qp->rcv_off = m->len;
		qp->rcv_staging = false;
	}
	qp->ux_bytes -= m->len;
	free(m->buf);
	memset(m, 0, sizeof(*m));
	qp->ux_head++;
	return 0;
}

int tp_qp_post_recv(struct tp_qp *qp, void *buf, size_t len, uint64_t wr_id)
{
	struct tp_rwqe *r;

	if (qp->state == TP_QPS_ERROR)
		return -EIO;
	if (qp->rq_tail - qp->rq_head == TP_RQ_DEPTH)
		return -EAGAIN;
	if (qp->ux_head != qp->ux_tail)
		return take_unexpected(qp, buf, len, wr_id);
	r = &qp->rq[qp->rq_tail % TP_RQ_DEPTH];
	r->buf = buf;
	r->len = len;
	r->wr_id = wr_id;
	qp->rq_tail++;
	return 0;
}

/* ---- control packets (ACK, NAK, CNP) ------------------------------------ */

static void send_ctrl(struct tp_qp *qp, uint8_t opcode, uint32_t psn, uint8_t syndrome,
		      uint8_t dscp)
{
	struct tp_bth bth = {
		.opcode = opcode, .pkey = qp->pkey, .dest_qp = qp->rqpn, .psn = psn & TP_PSN_MASK};
	struct tp_aeth aeth = {.syndrome = syndrome, .msn = qp->msn & TP_PSN_MASK};
	uint8_t buf[64];
	union {
		char raw[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctrl;
	struct iovec iov;
	struct msghdr mh = {0};
	struct cmsghdr *cm;
	int len, tos = dscp << 2;

	memset(&ctrl, 0, sizeof(ctrl));
	if (opcode == TP_OP_CNP)
		bth.becn = true;
	len = tp_pkt_build(buf, sizeof(buf), &bth, NULL, opcode == TP_OP_ACK ? &aeth : NULL, NULL,
			   0, &qp->icrc_tx);
	if (len < 0)
		return;
	iov.iov_base = buf;
	iov.iov_len = (size_t)len;
	mh.msg_name = &qp->peer;
	mh.msg_namelen = sizeof(qp->peer);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctrl.raw;
	mh.msg_controllen = sizeof(ctrl.raw);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = IPPROTO_IP;
	cm->cmsg_type = IP_TOS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &tos, sizeof(tos));
	if (sendmsg(qp->tx_fd, &mh, 0) < 0) {
		/* A lost control packet is repaired by the peer's timers. */
		qp->e->st.tx_eagain++;
		return;
	}
	qp->e->st.tx_pkts++;
	qp->e->st.tx_bytes += (uint64_t)len;
	qp->e->st.syscalls_tx++;
}

static void queue_ack(struct tp_qp *qp)
{
	if (qp->ack_pending)
		return;
	qp->ack_pending = true;
	qp->ack_next = qp->e->ack_list;
	qp->e->ack_list = qp;
}

void tp_qp_flush_ack(struct tp_qp *qp)
{
	if (!qp->ack_pending)
		return;
	qp->ack_pending = false;
	qp->unacked_rx = 0;
	if (qp->state != TP_QPS_RTS)
		return;
	send_ctrl(qp, TP_OP_ACK, tp_psn_add(qp->epsn, TP_PSN_MASK),
		  ICE_ROCE_AETH_ACK | TP_AETH_ACK_NO_CREDIT, qp->e->cfg.dscp);
	qp->e->st.ack_tx++;
}

static void send_nak(struct tp_qp *qp, uint8_t syndrome)
{
	send_ctrl(qp, TP_OP_ACK, qp->epsn, syndrome, qp->e->cfg.dscp);
	qp->nak_sent = true;
	if ((syndrome & TP_AETH_CLASS_MASK) == ICE_ROCE_AETH_RNR_NAK) {
		qp->e->st.rnr_nak_tx++;
	} else {
		qp->e->st.nak_tx++;
		qp->st.naks_tx++;
	}
}

/* ---- responder ------------------------------------------------------------ */

static void complete_recv(struct tp_qp *qp, int status)
{
	struct tp_rwqe *r = &qp->rq[qp->rq_head % TP_RQ_DEPTH];
	struct tp_wc wc = {.wr_id = r->wr_id,
			   .qpn = qp->qpn,
			   .opcode = TP_WC_RECV,
			   .status = status,
			   .byte_len = (uint32_t)qp->rcv_off};

	tp_cq_push(qp->e, &wc);
	qp->rq_head++;
	qp->rcv_active = false;
}

/* Responder-side fatal error (IBA: invalid request / remote access NAK). */
static void rx_fatal(struct tp_qp *qp, uint8_t nak_code, enum tp_drop_reason r, const char *why)
{
	qp->e->st.drops[r]++;
	send_nak(qp, ICE_ROCE_AETH_NAK | nak_code);
	if (qp->rcv_active)
		complete_recv(qp, -EMSGSIZE);
	tp_qp_fail(qp, -EREMOTEIO, why);
}

/* The expected packet cannot be taken now. Every such packet gets its RNR
 * NAK (a resend after the RNR timer must hear back, or the requester would
 * time out); the packets behind it are dropped quietly as out of order. */
static void rnr(struct tp_qp *qp)
{
	qp->e->st.drops[TP_DROP_NO_RECV_WQE]++;
	send_nak(qp, ICE_ROCE_AETH_RNR_NAK | 0x01);
}

/* Start keeping an unexpected SEND; false when the queue is full. */
static bool stage_begin(struct tp_qp *qp, size_t plen)
{
	if (qp->ux_tail - qp->ux_head == TP_UNEXP_MAX ||
	    qp->ux_bytes + plen > qp->e->cfg.unexp_bytes)
		return false;
	memset(&qp->unexp[qp->ux_tail % TP_UNEXP_MAX], 0, sizeof(struct tp_unexp));
	qp->ux_tail++;
	return true;
}

static bool stage_append(struct tp_qp *qp, const uint8_t *data, size_t plen)
{
	struct tp_unexp *m = &qp->unexp[(qp->ux_tail - 1) % TP_UNEXP_MAX];

	if (qp->ux_bytes + plen > qp->e->cfg.unexp_bytes)
		return false;
	if (m->len + plen > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 4 * (size_t)qp->e->cfg.mtu;
		uint8_t *b;

		while (cap < m->len + plen)
			cap *= 2;
		b = realloc(m->buf, cap);
		if (b == NULL)
			return false;
		m->buf = b;
		m->cap = cap;
	}
	if (plen == 0) /* an empty SEND: nothing to keep (m->buf may be NULL) */
		return true;
	memcpy(m->buf + m->len, data, plen);
	m->len += plen;
	qp->ux_bytes += plen;
	return true;
}

enum rx_status {
	RX_OK,	  /* taken; epsn advanced */
	RX_RNR,	  /* no room now; RNR NAK sent */
	RX_DROP,  /* refused and counted; the QP goes on as before */
	RX_FATAL, /* the QP failed */
};

/* Count a refused packet by reason; say why once per QP. The QP's state is
 * untouched: a forged packet (RoCE has no authentication beyond addresses,
 * QPN, P_Key and PSN) must not take down a healthy connection, and the real
 * packet for that PSN is still taken when it comes. */
static enum rx_status rx_drop(struct tp_qp *qp, enum tp_drop_reason r, const struct tp_pkt *pkt,
			      const char *why)
{
	qp->e->st.drops[r]++;
	if (!qp->rx_warned) {
		qp->rx_warned = true;
		ice_warn(ICE_SUB_QP,
			 "QP 0x%x: dropped a %s from %s (PSN %u, %zu payload bytes): %s; further "
			 "drops are only counted (drops.%s)",
			 qp->qpn, tp_op_name(pkt->bth.opcode), inet_ntoa(qp->peer.sin_addr),
			 pkt->bth.psn, pkt->payload_len, why, tp_drop_reason_name(r));
	}
	return RX_DROP;
}

/* What a data packet must be whatever the QP's state: a SEND or WRITE, at
 * most one MTU of payload, exactly one for FIRST and MIDDLE. Checked before
 * the packet is held or placed, so no length from the wire reaches a copy
 * unchecked. */
static bool rx_data_valid(struct tp_qp *qp, const struct tp_pkt *pkt)
{
	uint8_t op = pkt->bth.opcode;
	uint32_t mtu = qp->e->cfg.mtu;

	if (!tp_op_is_send(op) && !tp_op_is_write(op)) {
		rx_drop(qp, TP_DROP_BAD_OPCODE, pkt, "not a SEND or RDMA WRITE");
		return false;
	}
	if (pkt->payload_len > mtu || (!tp_op_is_last(op) && pkt->payload_len != mtu)) {
		rx_drop(qp, TP_DROP_BAD_LENGTH, pkt,
			"payload not the MTU (larger, or a FIRST/MIDDLE not full); is the peer's "
			"RoCE MTU the same?");
		return false;
	}
	return true;
}

/* An RDMA WRITE's target [va, va + len) lies inside a registered region;
 * no sum that a peer's numbers could wrap. */
static uint8_t *write_target(struct tp_engine *e, const struct tp_reth *reth)
{
	struct tp_mr *mr = tp_mr_find(e, reth->rkey);
	uint64_t off;

	if (mr == NULL || reth->va < (uintptr_t)mr->addr)
		return NULL;
	off = reth->va - (uintptr_t)mr->addr;
	if (off > mr->len || reth->dma_len > mr->len - off)
		return NULL;
	return (uint8_t *)mr->addr + off;
}

/* The packet at epsn: place it and advance. */
static enum rx_status rx_in_order(struct tp_qp *qp, const struct tp_pkt *pkt)
{
	struct tp_engine *e = qp->e;
	uint8_t op = pkt->bth.opcode;
	uint32_t mtu = e->cfg.mtu;
	size_t plen = pkt->payload_len;

	/* in sequence: check the opcode follows the message in progress */
	if (qp->rcv_active || qp->wr_active) {
		bool ok = qp->rcv_active ? (op == TP_OP_SEND_MIDDLE || op == TP_OP_SEND_LAST ||
					    op == TP_OP_SEND_LAST_IMM)
					 : (op == TP_OP_WRITE_MIDDLE || op == TP_OP_WRITE_LAST ||
					    op == TP_OP_WRITE_LAST_IMM);

		if (!ok)
			return rx_drop(qp, TP_DROP_BAD_SEQUENCE, pkt,
				       "opcode out of sequence within a message");
	} else if (!tp_op_is_first(op)) {
		return rx_drop(qp, TP_DROP_BAD_SEQUENCE, pkt,
			       "middle or last packet without a first");
	}
	if ((!tp_op_is_last(op) && plen != mtu) || plen > mtu)
		return rx_drop(qp, TP_DROP_BAD_LENGTH, pkt, "payload length not the MTU");
	if (tp_op_is_send(op)) {
		struct tp_rwqe *r;

		if (tp_op_is_first(op)) {
			qp->rcv_off = 0;
			qp->rcv_staging = qp->rq_head == qp->rq_tail;
			if (qp->rcv_staging && !stage_begin(qp, plen)) {
				rnr(qp);
				return RX_RNR;
			}
			qp->rcv_active = true;
		}
		if (qp->rcv_staging) {
			if (!stage_append(qp, pkt->payload, plen)) {
				rnr(qp);
				return RX_RNR;
			}
			if (tp_op_is_last(op)) {
				qp->unexp[(qp->ux_tail - 1) % TP_UNEXP_MAX].done = true;
				qp->rcv_active = qp->rcv_staging = false;
				qp->msn = (qp->msn + 1) & TP_PSN_MASK;
			}
			goto accepted;
		}
		r = &qp->rq[qp->rq_head % TP_RQ_DEPTH];
		if (qp->rcv_off + plen > r->len) {
			rx_fatal(qp, TP_NAK_INVALID_REQ, TP_DROP_BAD_LENGTH,
				 "message longer than the posted receive buffer");
			return RX_FATAL;
		}
		memcpy(r->buf + qp->rcv_off, pkt->payload, plen);
		qp->rcv_off += plen;
		if (tp_op_is_last(op)) {
			complete_recv(qp, 0);
			qp->msn = (qp->msn + 1) & TP_PSN_MASK;
		}
	} else {
		if (tp_op_is_first(op)) {
			uint8_t *dst = write_target(e, &pkt->reth);

			if (dst == NULL) {
				/* the requester learns it (and fails, as a
				 * NIC's would); this QP stays up */
				send_nak(qp, ICE_ROCE_AETH_NAK | TP_NAK_REMOTE_ACCESS);
				return rx_drop(qp, TP_DROP_BAD_ACCESS, pkt,
					       "RDMA WRITE outside every registered region");
			}
			if (plen > pkt->reth.dma_len)
				return rx_drop(qp, TP_DROP_BAD_LENGTH, pkt,
					       "RDMA WRITE longer than its DMA length");
			qp->wr_ptr = dst;
			qp->wr_left = pkt->reth.dma_len;
			qp->wr_active = true;
		}
		if (plen > qp->wr_left)
			return rx_drop(qp, TP_DROP_BAD_LENGTH, pkt,
				       "RDMA WRITE longer than its DMA length");
		memcpy(qp->wr_ptr, pkt->payload, plen);
		qp->wr_ptr += plen;
		qp->wr_left -= plen;
		if (tp_op_is_last(op)) {
			qp->wr_active = false;
			qp->msn = (qp->msn + 1) & TP_PSN_MASK;
		}
	}
accepted:
	qp->epsn = tp_psn_add(qp->epsn, 1);
	qp->nak_sent = false;
	qp->st.rx_pkts++;
	qp->st.rx_bytes += plen;
	if (pkt->bth.ack_req || ++qp->unacked_rx >= e->cfg.ack_every)
		queue_ack(qp);
	return RX_OK;
}

/* Hold a packet that arrived ahead of a gap (selective repeat): it is placed
 * once the gap is filled, so one loss costs one resend, not a window. */
static bool ooo_hold(struct tp_qp *qp, const struct tp_pkt *pkt, uint32_t d)
{
	uint32_t n = qp->e->cfg.window_pkts, mtu = qp->e->cfg.mtu;
	struct tp_ooo *o;

	if (d >= n || pkt->payload_len > mtu)
		return false;
	if (qp->ooo == NULL) {
		qp->ooo = calloc(n, sizeof(*qp->ooo));
		qp->ooo_data = malloc((size_t)n * mtu);
		if (qp->ooo == NULL || qp->ooo_data == NULL) {
			free(qp->ooo);
			free(qp->ooo_data);
			qp->ooo = NULL;
			qp->ooo_data = NULL;
			return false;
		}
	}
	o = &qp->ooo[pkt->bth.psn % n];
	if (o->used)
		return o->pkt.bth.psn == pkt->bth.psn; /* a duplicate of a held one */
	o->used = true;
	o->pkt = *pkt;
	o->pkt.payload = qp->ooo_data + (size_t)(pkt->bth.psn % n) * mtu;
	memcpy(qp->ooo_data + (size_t)(pkt->bth.psn % n) * mtu, pkt->payload, pkt->payload_len);
	qp->ooo_count++;
	qp->st.ooo_held++;
	return true;
}

/* Place held packets that are now in sequence. */
static void ooo_drain(struct tp_qp *qp)
{
	uint32_t n = qp->e->cfg.window_pkts;
	bool dropped = false;

	while (qp->ooo_count > 0 && qp->state == TP_QPS_RTS) {
		struct tp_ooo *o = &qp->ooo[qp->epsn % n];

		enum rx_status rs;

		if (!o->used || o->pkt.bth.psn != qp->epsn)
			break;
		rs = rx_in_order(qp, &o->pkt);
		if (rs == RX_RNR || rs == RX_FATAL)
			return; /* RNR: keep it (and the rest) held */
		o->used = false;
		qp->ooo_count--;
		if (rs == RX_DROP) {
			dropped = true;
			break; /* epsn is a gap again: asked for below */
		}
	}
	/* another gap behind: ask for it now rather than at the next arrival */
	if ((qp->ooo_count > 0 || dropped) && !qp->nak_sent && qp->state == TP_QPS_RTS)
		send_nak(qp, ICE_ROCE_AETH_NAK | TP_NAK_PSN_SEQ_ERR);
}

static void rx_data(struct tp_qp *qp, const struct tp_pkt *pkt)
{
	struct tp_engine *e = qp->e;
	int32_t d = tp_psn_diff(qp->epsn, pkt->bth.psn);

	if (!rx_data_valid(qp, pkt))
		return;
	if (d > -(int32_t)e->cfg.window_pkts && d < (int32_t)e->cfg.window_pkts)
		qp->heard_ns = ice_now_ns(); /* a PSN of this connection's window */
	if (d < 0) {
		e->st.drops[TP_DROP_DUPLICATE]++;
		/* tell the requester where we are: with packets held beyond
		 * a gap, a NAK names the gap (its probe after a timeout, or
		 * a resend that crossed our NAK, learns what is missing) */
		if (qp->ooo_count > 0)
			send_nak(qp, ICE_ROCE_AETH_NAK | TP_NAK_PSN_SEQ_ERR);
		else
			queue_ack(qp);
		return;
	}
	if (d > 0) {
		if (!ooo_hold(qp, pkt, (uint32_t)d))
			e->st.drops[TP_DROP_OUT_OF_ORDER]++;
		/* NAK the gap once; again when the requester asks (AckReq:
		 * e.g. a tail probe after our NAK was lost) */
		if (!qp->nak_sent || pkt->bth.ack_req)
			send_nak(qp, ICE_ROCE_AETH_NAK | TP_NAK_PSN_SEQ_ERR);
		return;
	}
	/* a packet held at epsn that an RNR NAK kept there has been resent:
	 * the new copy is placed, the held one released (else its slot stays
	 * taken behind epsn, and every later drain asks for a gap that is
	 * not there) */
	if (qp->ooo_count > 0) {
		struct tp_ooo *o = &qp->ooo[qp->epsn % e->cfg.window_pkts];

		if (o->used && o->pkt.bth.psn == qp->epsn) {
			o->used = false;
			qp->ooo_count--;
		}
	}
	if (rx_in_order(qp, pkt) == RX_OK && qp->ooo_count > 0)
		ooo_drain(qp);
}

void tp_qp_rx(struct tp_qp *qp, const struct tp_pkt *pkt, uint8_t tos,
	      const struct sockaddr_in *from, uint64_t now)
{
	uint8_t op = pkt->bth.opcode;

	(void)from;
	if (op == TP_OP_ACK) {
		tp_qp_rx_ack(qp, pkt, now);
		return;
	}
	if (op == TP_OP_CNP) {
		qp->e->st.cnp_rx++;
		qp->st.cnps_rx++;
		if (qp->dcqcn.enable)
			tp_dcqcn_rp_on_cnp(&qp->rp, now);
		return;
	}
	if ((tos & 0x3) == 0x3) {
		qp->e->st.rx_ce++;
		qp->st.ce_rx++;
		if (qp->dcqcn.enable && tp_dcqcn_np_on_ce(&qp->np, &qp->dcqcn, now)) {
			send_ctrl(qp, TP_OP_CNP, 0, 0, qp->e->cfg.cnp_dscp);
			qp->e->st.cnp_tx++;
			qp->st.cnps_tx++;
		}
	}
	rx_data(qp, pkt);
}
