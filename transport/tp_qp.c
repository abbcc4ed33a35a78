// SPDX-License-Identifier: Apache-2.0
/*
 * tp_qp: the reliable-connected protocol (IBA chapter 9, RC) over UDP.
 *
 * Requester: every posted work request gets its PSN range when posted.
 * Packets go out in PSN order within a window, paced at the QP's DCQCN rate
 * and the port's line rate; ACKs are cumulative. A NAK (PSN sequence error)
 * resends that packet alone, once per round trip; an RNR NAK goes back to
 * it. A timeout sends one probe (the oldest unacknowledged packet) and the
 * answer tells late from lost; a tail loss probe covers a lost last packet.
 * Only after peer_timeout without progress does the QP fail; every
 * outstanding request then completes with -ETIMEDOUT.
 *
 * Responder (receive queue, ACK/NAK/CNP generation): tp_qp_resp.c.
 */
#include "tp_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ice_log.h"
#include "ice_time.h"

static uint64_t tp_qp_rto(const struct tp_qp *qp);
static void sr_push(struct tp_qp *qp, uint32_t psn, enum tp_retx_reason why);

struct tp_qp *tp_qp_create(struct tp_engine *e)
{
	struct tp_qp *qp;
	uint32_t idx;

	for (idx = 0; idx < TP_MAX_QPS; idx++)
		if (e->qps[idx] == NULL)
			break;
	if (idx == TP_MAX_QPS) {
		errno = ENOSPC;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return NULL;
	qp->e = e;
	qp->idx = idx;
	qp->qpn = e->qpn_base + idx;
	qp->state = TP_QPS_RESET;
	qp->tx_fd = -1;
	qp->ctrl_slot = -1;
	qp->dcqcn = e->cfg.dcqcn;
	if (qp->dcqcn.rp_max_rate == 0 && e->cfg.line_rate_bps != 0)
		qp->dcqcn.rp_max_rate = (uint32_t)(e->cfg.line_rate_bps / 1000000);
	tp_dcqcn_np_init(&qp->np);
	e->qps[idx] = qp;
	if (idx + 1 > e->nqps)
		e->nqps = idx + 1;
	return qp;
}

static void flush_all(struct tp_qp *qp, int status)
{
	struct tp_wc wc = {.qpn = qp->qpn, .status = status};

	for (; qp->sq_head != qp->sq_tail; qp->sq_head++) {
		struct tp_swqe *w = &qp->sq[qp->sq_head % TP_SQ_DEPTH];

		wc.wr_id = w->wr_id;
		wc.opcode = w->op == TP_WC_WRITE ? TP_WC_WRITE : TP_WC_SEND;
		tp_cq_push(qp->e, &wc);
	}
	qp->sq_cur = qp->sq_tail;
	for (; qp->rq_head != qp->rq_tail; qp->rq_head++) {
		wc.wr_id = qp->rq[qp->rq_head % TP_RQ_DEPTH].wr_id;
		wc.opcode = TP_WC_RECV;
		wc.byte_len = 0;
		tp_cq_push(qp->e, &wc);
	}
	for (; qp->ux_head != qp->ux_tail; qp->ux_head++)
		free(qp->unexp[qp->ux_head % TP_UNEXP_MAX].buf);
	qp->ux_bytes = 0;
	qp->rcv_active = false;
	qp->rcv_staging = false;
	if (qp->ooo != NULL)
		memset(qp->ooo, 0, qp->e->cfg.window_pkts * sizeof(*qp->ooo));
	qp->ooo_count = 0;
}

void tp_qp_destroy(struct tp_qp *qp)
{
	struct tp_engine *e;

	if (qp == NULL)
		return;
	e = qp->e;
	flush_all(qp, -ECANCELED);
	if (qp->ack_pending) {
		struct tp_qp **pp = &e->ack_list;

		while (*pp != NULL && *pp != qp)
			pp = &(*pp)->ack_next;
		if (*pp == qp)
			*pp = qp->ack_next;
	}
	if (qp->tx_fd >= 0)
		close(qp->tx_fd);
	if (e->ctrl != NULL && qp->ctrl_slot >= 0)
		ice_ctrl_release(e->ctrl, qp->ctrl_slot);
	e->qps[qp->idx] = NULL;
	free(qp->ooo);
	free(qp->ooo_data);
	free(qp);
}

uint32_t tp_qp_num(const struct tp_qp *qp)
{
	return qp->qpn;
}

uint16_t tp_qp_sport(const struct tp_qp *qp)
{
	return qp->sport;
}

struct in_addr tp_qp_raddr(const struct tp_qp *qp)
{
	return qp->peer.sin_addr;
}

bool tp_qp_failed(const struct tp_qp *qp)
{
	return qp->state == TP_QPS_ERROR;
}

const struct tp_qp_stats *tp_qp_stats(const struct tp_qp *qp)
{
	return &qp->st;
}

const struct tp_dcqcn_rp *tp_qp_rp(const struct tp_qp *qp)
{
	return &qp->rp;
}

struct ice_dcqcn_params *tp_qp_dcqcn_params(struct tp_qp *qp)
{
	return &qp->dcqcn;
}

int tp_qp_dcqcn_changed(struct tp_qp *qp)
{
	struct ice_cfg_err ce;

	if (ice_dcqcn_params_check(&qp->dcqcn, &ce) < 0) {
		char buf[512];

		ice_err(ICE_SUB_DCQCN, "QP 0x%x: %s", qp->qpn,
			ice_cfg_err_str(&ce, buf, sizeof(buf)));
		qp->dcqcn = qp->e->cfg.dcqcn;
		return -EINVAL;
	}
	return 0;
}

void tp_qp_set_rate(struct tp_qp *qp, double bps)
{
	tp_dcqcn_rp_init(&qp->rp, &qp->dcqcn, ice_now_ns(), bps);
}

double tp_qp_rate(struct tp_qp *qp)
{
	tp_dcqcn_rp_tick(&qp->rp, ice_now_ns());
	return tp_dcqcn_rp_rate(&qp->rp);
}

static void update_icrc_addr(struct tp_qp *qp)
{
	qp->icrc_tx.saddr = qp->e->cfg.addr.s_addr;
	qp->icrc_tx.daddr = qp->peer.sin_addr.s_addr;
	qp->icrc_tx.sport = qp->sport;
	qp->icrc_tx.dport = ntohs(qp->peer.sin_port);
	qp->icrc_tx.ip_id = 0;
}

int tp_qp_connect(struct tp_qp *qp, const struct tp_qp_conn *c)
{
	uint16_t sport = c->sport;
	int fd;

	if (qp->state != TP_QPS_RESET)
		return -EINVAL;
	if (c->rqpn > TP_QPN_MASK || c->rport == 0)
		return -EINVAL;
	if (sport == 0) {
		sport = ice_roce_flow_label_to_udp_sport(
			ice_roce_calc_flow_label(qp->qpn, c->rqpn));
		/* an engine on an ephemeral port (32768-60999) may own the
		 * port the label gives, and its socket does not share it */
		if (sport == qp->e->port)
			sport ^= 1;
	}
	fd = tp_sock_tx_open(qp->e, sport);
	if (fd < 0)
		return fd;
	qp->tx_fd = fd;
	qp->sport = sport;
	qp->sport_default = sport;
	qp->peer.sin_family = AF_INET;
	qp->peer.sin_addr = c->raddr;
	qp->peer.sin_port = htons(c->rport);
	qp->rqpn = c->rqpn;
	qp->pkey = c->pkey != 0 ? c->pkey : TP_DEFAULT_PKEY;
	qp->post_psn = qp->next_psn = qp->max_psn = qp->una_psn = c->sq_psn & TP_PSN_MASK;
	qp->last_ackreq_psn = qp->next_psn;
	qp->cwnd = qp->e->cfg.window_pkts;
	qp->epsn = c->rq_psn & TP_PSN_MASK;
	qp->alive_ns = qp->heard_ns = ice_now_ns();
	update_icrc_addr(qp);
	tp_dcqcn_rp_init(&qp->rp, &qp->dcqcn, ice_now_ns(), 0);
	qp->pacer.ns = ice_now_ns();
	qp->state = TP_QPS_RTS;
	if (qp->e->ctrl != NULL) {
		/* tell the agent: it can now steer this QP */
		qp->ctrl_slot = ice_ctrl_claim(qp->e->ctrl, qp->qpn);
		tp_ctrl_publish(qp);
	}
	ice_dbg(ICE_SUB_QP, "QP 0x%x -> %s:%u QP 0x%x, sport %u", qp->qpn, inet_ntoa(c->raddr),
		c->rport, c->rqpn, sport);
	return 0;
}

/* Switch the sending socket to sport now. */
static int sport_switch(struct tp_qp *qp, uint16_t sport)
{
	int fd = tp_sock_tx_open(qp->e, sport);

	if (fd < 0)
		return fd;
	close(qp->tx_fd);
	qp->tx_fd = fd;
	qp->sport = sport;
	update_icrc_addr(qp);
	qp->st.sport_changes++;
	return 0;
}

int tp_qp_set_sport(struct tp_qp *qp, uint16_t sport)
{
	int fd;

	if (sport == 0)
		return -EINVAL;
	if (qp->state == TP_QPS_RESET)
		return -ENOTCONN;
	if (sport == qp->sport) {
		qp->sport_next = 0; /* a pending move is called off */
		return 0;
	}
	if (qp->una_psn == qp->max_psn) /* nothing in flight: nothing to reorder */
		return sport_switch(qp, sport);
	/* Packets on the old path could arrive after the first ones on the
	 * new (a shorter queue) and look lost. So new packets wait until the
	 * old ones are acknowledged, for at most one retransmission timer;
	 * the port is checked now, so a bad one fails here. */
	fd = tp_sock_tx_open(qp->e, sport);
	if (fd < 0)
		return fd;
	close(fd);
	if (qp->sport_next == 0) {
		qp->move_by_ns = ice_now_ns() + tp_qp_rto(qp);
		qp->st.moves_deferred++;
	}
	qp->sport_next = sport;
	return 0;
}

/* A deferred move: made once the old path drained (or its time is up); true
 * when packets may go (on whichever port is current). */
static bool move_now(struct tp_qp *qp, uint64_t now, uint64_t *wake_ns)
{
	uint16_t sport = qp->sport_next;

	if (qp->una_psn != qp->max_psn && now < qp->move_by_ns) {
		if (qp->move_by_ns < *wake_ns)
			*wake_ns = qp->move_by_ns;
		return false;
	}
	qp->sport_next = 0;
	if (qp->una_psn != qp->max_psn) {
		/* forced: what is still out went the old way; resends of it
		 * are counted as the move's */
		qp->move_psn = qp->max_psn;
		qp->move_inflight = true;
	}
	if (sport_switch(qp, sport) < 0)
		ice_warn(ICE_SUB_QP, "QP 0x%x: cannot move to source port %u", qp->qpn, sport);
	return true;
}

static uint32_t npkts_for(const struct tp_qp *qp, uint64_t len)
{
	uint32_t mtu = qp->e->cfg.mtu;

	return len == 0 ? 1 : (uint32_t)((len + mtu - 1) / mtu);
}

static int post_swqe(struct tp_qp *qp, uint8_t op, const void *buf, size_t len, uint64_t va,
		     uint32_t rkey, uint64_t wr_id)
{
	struct tp_swqe *w;

	if (qp->state == TP_QPS_RESET)
		return -ENOTCONN;
	if (qp->state == TP_QPS_ERROR)
		return -EIO;
	if (qp->sq_tail - qp->sq_head == TP_SQ_DEPTH)
		return -EAGAIN;
	if (len > (uint64_t)qp->e->cfg.mtu * (1u << 22) || len > UINT32_MAX)
		return -EMSGSIZE;
	w = &qp->sq[qp->sq_tail % TP_SQ_DEPTH];
	w->op = op;
	w->buf = buf;
	w->len = len;
	w->va = va;
	w->rkey = rkey;
	w->wr_id = wr_id;
	w->npkts = npkts_for(qp, len);
	w->first_psn = qp->post_psn;
	qp->post_psn = tp_psn_add(qp->post_psn, w->npkts);
	if (qp->sq_head == qp->sq_tail) /* waiting for the peer starts now */
		qp->progress_ns = qp->alive_ns = ice_now_ns();
	qp->sq_tail++;
	return 0;
}

int tp_qp_post_send(struct tp_qp *qp, const void *buf, size_t len, uint64_t wr_id)
{
	return post_swqe(qp, TP_WC_SEND, buf, len, 0, 0, wr_id);
}

int tp_qp_post_write(struct tp_qp *qp, const void *buf, size_t len, uint64_t remote_va,
		     uint32_t rkey, uint64_t wr_id)
{
	return post_swqe(qp, TP_WC_WRITE, buf, len, remote_va, rkey, wr_id);
}

/* ---- requester ---------------------------------------------------------- */

/* Point transmission at psn, which lies in [first PSN of sq_head, post_psn]. */
static void rewind_to(struct tp_qp *qp, uint32_t psn)
{
	uint32_t i;

	qp->rtt_valid = false; /* Karn: no samples from resent packets */
	for (i = qp->sq_head; i != qp->sq_tail; i++) {
		struct tp_swqe *w = &qp->sq[i % TP_SQ_DEPTH];
		int32_t d = tp_psn_diff(w->first_psn, psn);

		if (d >= 0 && (uint32_t)d < w->npkts) {
			qp->sq_cur = i;
			qp->cur_pkt = (uint32_t)d;
			qp->next_psn = psn;
			return;
		}
	}
	qp->sq_cur = qp->sq_tail;
	qp->cur_pkt = 0;
	qp->next_psn = qp->post_psn;
}

/* Everything up to and including psn arrived at the peer. */
static void ack_through(struct tp_qp *qp, uint32_t psn, uint64_t now)
{
	uint32_t una = tp_psn_add(psn, 1);
	struct tp_wc wc = {.qpn = qp->qpn};

	if (tp_psn_diff(qp->una_psn, una) <= 0)
		return; /* nothing new */
	if (qp->rtt_valid && tp_psn_diff(qp->rtt_psn, una) > 0) {
		uint64_t r = now - qp->rtt_sent_ns;

		/* RFC 6298 smoothing, in integer nanoseconds */
		if (qp->srtt_ns == 0) {
			qp->srtt_ns = r;
			qp->rttvar_ns = r / 2;
		} else {
			uint64_t d = r > qp->srtt_ns ? r - qp->srtt_ns : qp->srtt_ns - r;

			qp->rttvar_ns = (3 * qp->rttvar_ns + d) / 4;
			qp->srtt_ns = (7 * qp->srtt_ns + r) / 8;
		}
		qp->rtt_valid = false;
	}
	if (qp->rto_recover) {
		if (tp_psn_diff(qp->rto_una, una) > 1) {
			/* packets that were never resent are acknowledged: they
			 * were late, not lost */
			qp->rto_recover = false;
			qp->st.spurious_timeouts++;
			qp->e->st.spurious_timeouts++;
		} else if (una != qp->max_psn && ++qp->rto_ambiguous < 2) {
			/* just the probe: maybe chance; probe once more */
			qp->rto_una = una;
			sr_push(qp, una, TP_RETX_TIMEOUT);
		} else {
			/* twice: what follows the probes was lost; go back */
			qp->rto_recover = false;
			if (una != qp->max_psn) {
				qp->gbn_why = TP_RETX_TIMEOUT;
				rewind_to(qp, una);
			}
		}
	}
	if (qp->move_inflight && tp_psn_diff(qp->move_psn, una) >= 0)
		qp->move_inflight = false; /* the old path is drained */
	qp->una_psn = una;
	qp->retries = 0;
	qp->progress_ns = now;
	qp->alive_ns = now;
	if (qp->cwnd < qp->e->cfg.window_pkts) {
		qp->cwnd *= 2;
		if (qp->cwnd > qp->e->cfg.window_pkts)
			qp->cwnd = qp->e->cfg.window_pkts;
	}
	while (qp->sq_head != qp->sq_tail) {
		struct tp_swqe *w = &qp->sq[qp->sq_head % TP_SQ_DEPTH];
		uint32_t end = tp_psn_add(w->first_psn, w->npkts);

		if (tp_psn_diff(end, una) < 0)
			break;
		wc.wr_id = w->wr_id;
		wc.opcode = w->op == TP_WC_WRITE ? TP_WC_WRITE : TP_WC_SEND;
		wc.status = 0;
		tp_cq_push(qp->e, &wc);
		qp->sq_head++;
	}
	/* A late ACK can cover packets we had already decided to resend. */
	if (tp_psn_diff(qp->next_psn, una) > 0)
		rewind_to(qp, una);
}

static bool ack_psn_valid(const struct tp_qp *qp, uint32_t psn)
{
	uint32_t una = tp_psn_add(psn, 1);

	/* una in [una_psn - 1 .. max_psn]: stale duplicates are harmless */
	return tp_psn_diff(qp->una_psn, una) >= -1 && tp_psn_diff(una, qp->max_psn) >= 0;
}

/* How long a resend for a NAKed hole is given to arrive before another NAK
 * for the same hole is believed: the round trip with its spread. */
static uint64_t nak_holdoff(const struct tp_qp *qp)
{
	if (qp->srtt_ns == 0)
		return ICE_NSEC_PER_MSEC;
	return qp->srtt_ns + 4 * qp->rttvar_ns;
}

void tp_qp_rx_ack(struct tp_qp *qp, const struct tp_pkt *pkt, uint64_t now)
{
	uint8_t syn = pkt->aeth.syndrome;
	uint32_t psn = pkt->bth.psn;
	struct tp_engine *e = qp->e;

	switch (syn & TP_AETH_CLASS_MASK) {
	case ICE_ROCE_AETH_ACK:
	case ICE_ROCE_AETH_ACK | 0x10: /* 000x xxxx: the credit field is 5 bits */
		if (!ack_psn_valid(qp, psn)) {
			e->st.drops[TP_DROP_BAD_ACK]++;
			return;
		}
		qp->heard_ns = now;
		e->st.ack_rx++;
		qp->rnr_count = 0;
		ack_through(qp, psn, now);
		return;
	case ICE_ROCE_AETH_RNR_NAK:
	case ICE_ROCE_AETH_NAK:
		/* psn is the first PSN the responder did not take */
		if (!ack_psn_valid(qp, tp_psn_add(psn, TP_PSN_MASK))) {
			/* behind what is acknowledged: a stale NAK, harmless */
			if (tp_psn_diff(qp->una_psn, psn) < 0)
				e->st.drops[TP_DROP_DUPLICATE]++;
			else
				e->st.drops[TP_DROP_BAD_ACK]++;
			return;
		}
		if (tp_psn_diff(qp->una_psn, psn) < 0) {
			/* for a PSN already acknowledged: late (duplicated or
			 * reordered) or forged; going back there would skip or
			 * stall what follows */
			e->st.drops[TP_DROP_DUPLICATE]++;
			return;
		}
		/* a NAK for a PSN in the window: the peer is there and
		 * answering, whatever it asks */
		qp->heard_ns = qp->alive_ns = now;
		ack_through(qp, tp_psn_add(psn, TP_PSN_MASK), now);
		if ((syn & TP_AETH_CLASS_MASK) == ICE_ROCE_AETH_RNR_NAK) {
			e->st.rnr_nak_rx++;
			qp->st.rnr_rx++;
			qp->rnr_count++;
			if (e->cfg.rnr_retry != 0 && qp->rnr_count > e->cfg.rnr_retry) {
				tp_qp_fail(qp, -ETIMEDOUT,
					   "receiver not ready: RNR retries exhausted");
				return;
			}
			qp->rnr_until_ns = now + e->cfg.rnr_timer_ns;
			qp->progress_ns = qp->rnr_until_ns;
			/* probe with a few packets, not a window that would be refused */
			qp->cwnd = qp->cwnd > 8 ? 8 : qp->cwnd;
			qp->sr_head = qp->sr_tail;
			qp->rto_recover = false;
			qp->gbn_why = TP_RETX_RNR;
			rewind_to(qp, psn);
			return;
		}
		e->st.nak_rx++;
		qp->st.naks_rx++;
		if ((syn & 0x1f) == TP_NAK_PSN_SEQ_ERR) {
			/* the responder holds what came after the gap: resend
			 * just the missing packet */
			qp->progress_ns = now;
			qp->rto_recover = false; /* it says what is missing */
			/* The responder repeats its NAK while the gap lasts
			 * (at each packet that asks for an ACK); behind a full
			 * queue many come before our resend can arrive: one
			 * resend per hole per round trip. */
			if (psn == qp->nak_psn && now - qp->nak_ns < nak_holdoff(qp)) {
				e->st.naks_held++;
				return;
			}
			qp->nak_psn = psn;
			qp->nak_ns = now;
			sr_push(qp, psn, TP_RETX_NAK);
			return;
		}
		/* a fatal NAK must name a packet this QP has outstanding: one
		 * for anything else (forged, or the answer to a forged
		 * request) ends nothing */
		if (tp_psn_diff(qp->una_psn, psn) < 0 || tp_psn_diff(psn, qp->max_psn) <= 0) {
			e->st.drops[TP_DROP_BAD_ACK]++;
			return;
		}
		tp_qp_fail(qp, -EREMOTEIO,
			   (syn & 0x1f) == TP_NAK_REMOTE_ACCESS
				   ? "peer refused an RDMA WRITE (remote access error)"
				   : "peer refused a request (invalid request)");
		return;
	default:
		e->st.drops[TP_DROP_BAD_ACK]++;
	}
}

static uint8_t data_opcode(const struct tp_swqe *w, uint32_t pkt)
{
	bool first = pkt == 0, last = pkt + 1 == w->npkts;

	if (w->op == TP_WC_WRITE) {
		if (first && last)
			return TP_OP_WRITE_ONLY;
		return first ? TP_OP_WRITE_FIRST : last ? TP_OP_WRITE_LAST : TP_OP_WRITE_MIDDLE;
	}
	if (first && last)
		return TP_OP_SEND_ONLY;
	return first ? TP_OP_SEND_FIRST : last ? TP_OP_SEND_LAST : TP_OP_SEND_MIDDLE;
}

/* May a packet of bytes go now? It needs its share of the QP's DCQCN rate
 * and of the port's line rate; both are taken, or neither. */
static bool pace(struct tp_qp *qp, uint64_t now, uint32_t bytes, uint64_t *wake_ns)
{
	struct tp_engine *e = qp->e;
	double line = (double)e->cfg.line_rate_bps, rate = 0;
	bool paced = qp->dcqcn.enable || qp->dcqcn.rp_max_rate != 0;

	if (paced) {
		tp_dcqcn_rp_tick(&qp->rp, now);
		rate = tp_dcqcn_rp_rate(&qp->rp);
	}
	/* bursts of 1 ms at the rate, at least two packets: a software pacer
	 * wakes late on a busy host, and what it could not send in time must
	 * not be lost; small against any switch buffer */
	if (rate > 0 && !tp_bucket_ready(&qp->pacer, rate, fmax(rate / 8e3, 2.0 * (bytes + 64)),
					 bytes, now, wake_ns))
		return false;
	if (line > 0 && !tp_bucket_ready(&e->port_pacer, line, fmax(line / 8e3, 2.0 * (bytes + 64)),
					 bytes, now, wake_ns)) {
		e->st.port_paced++;
		return false;
	}
	if (rate > 0)
		qp->pacer.tokens -= bytes;
	if (line > 0)
		e->port_pacer.tokens -= bytes;
	return true;
}

/* Retransmission timeout: the configured minimum, or SRTT + 4 RTTVAR when
 * the path (or a busy peer) is slower than that. */
static uint64_t tp_qp_rto(const struct tp_qp *qp)
{
	uint64_t rto = qp->srtt_ns + 4 * qp->rttvar_ns;

	if (rto > qp->e->cfg.rto_max_ns)
		rto = qp->e->cfg.rto_max_ns;
	return rto > qp->e->cfg.retx_timeout_ns ? rto : qp->e->cfg.retx_timeout_ns;
}

/* The work request holding psn, or NULL when it is not outstanding. */
static struct tp_swqe *swqe_of(struct tp_qp *qp, uint32_t psn, uint32_t *pkt)
{
	for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++) {
		struct tp_swqe *w = &qp->sq[i % TP_SQ_DEPTH];
		int32_t d = tp_psn_diff(w->first_psn, psn);

		if (d >= 0 && (uint32_t)d < w->npkts) {
			*pkt = (uint32_t)d;
			return w;
		}
	}
	return NULL;
}

/* Lay out packet pkt of w (PSN psn) in the engine's send slot n; returns
 * its UDP payload length. */
static size_t build_data(struct tp_qp *qp, int n, const struct tp_swqe *w, uint32_t pkt,
			 uint32_t psn, bool ack_req)
{
	struct tp_engine *e = qp->e;
	uint32_t mtu = e->cfg.mtu;
	uint64_t off = (uint64_t)pkt * mtu;
	uint32_t plen = (uint32_t)(w->len - off < mtu ? w->len - off : mtu);
	uint8_t op = data_opcode(w, pkt);
	struct tp_bth bth = {.opcode = op,
			     .pkey = qp->pkey,
			     .dest_qp = qp->rqpn,
			     .psn = psn,
			     .pad = tp_pad_for(plen),
			     .ack_req = ack_req};
	const uint8_t *payload = w->buf + off;
	size_t hlen, dlen = plen + bth.pad;
	struct msghdr *mh = &e->tx_msgs[n].msg_hdr;

	hlen = tp_bth_encode(&bth, e->tx_hdr[n]);
	if (tp_op_has_reth(op)) {
		struct tp_reth reth = {.va = w->va, .rkey = w->rkey, .dma_len = (uint32_t)w->len};

		hlen += tp_reth_encode(&reth, e->tx_hdr[n] + hlen);
	}
	if (bth.pad != 0) {
		uint8_t *b = e->tx_bounce + (size_t)n * (mtu + 4);

		memcpy(b, payload, plen);
		memset(b + plen, 0, bth.pad);
		payload = b;
	}
	tp_icrc_store(tp_icrc_compute(&qp->icrc_tx, e->tx_hdr[n], hlen, payload, dlen),
		      e->tx_trail[n]);
	e->tx_iov[n][0].iov_base = e->tx_hdr[n];
	e->tx_iov[n][0].iov_len = hlen;
	e->tx_iov[n][1].iov_base = (void *)payload;
	e->tx_iov[n][1].iov_len = dlen;
	e->tx_iov[n][2].iov_base = e->tx_trail[n];
	e->tx_iov[n][2].iov_len = ICE_ROCE_ICRC_LEN;
	memset(mh, 0, sizeof(*mh));
	mh->msg_name = &qp->peer;
	mh->msg_namelen = sizeof(qp->peer);
	mh->msg_iov = e->tx_iov[n];
	mh->msg_iovlen = 3;
	return hlen + dlen + ICE_ROCE_ICRC_LEN;
}

/* Queue one PSN for a selective resend, with the reason it goes again. */
static void sr_push(struct tp_qp *qp, uint32_t psn, enum tp_retx_reason why)
{
	for (uint32_t i = qp->sr_head; i != qp->sr_tail; i++)
		if ((qp->sr_q[i % TP_SR_DEPTH] & TP_PSN_MASK) == psn)
			return;
	if (qp->sr_tail - qp->sr_head == TP_SR_DEPTH) {
		/* too many holes at once: fall back to going back */
		qp->sr_head = qp->sr_tail;
		qp->gbn_why = (uint8_t)why;
		rewind_to(qp, qp->una_psn);
		return;
	}
	qp->sr_q[qp->sr_tail++ % TP_SR_DEPTH] = psn | (uint32_t)why << 24;
}

/* The timer with back-off: doubled per timeout since the last progress, up
 * to rto_max (never below the un-backed-off timer). */
static uint64_t rto_backoff(const struct tp_qp *qp)
{
	uint64_t rto = tp_qp_rto(qp), max = qp->e->cfg.rto_max_ns;
	uint32_t shift = qp->retries < 16 ? qp->retries : 16;

	if (max < rto)
		max = rto;
	return (rto << shift) > max || (rto << shift) >> shift != rto ? max : rto << shift;
}

/* Give up on the peer: say whether it was silent or the path ate our packets. */
static void qp_give_up(struct tp_qp *qp, uint64_t now)
{
	char why[200];
	uint64_t heard = qp->heard_ns > qp->alive_ns ? qp->heard_ns : qp->alive_ns;
	double idle = (double)(now - qp->alive_ns) / 1e9;

	/* alive: heard in the later half of the wait (a packet just after the
	 * last acknowledgement says nothing of now: a link cut then) */
	if (now - heard < (now - qp->alive_ns) / 2)
		snprintf(why, sizeof(why),
			 "no acknowledgement for %.1f s although the peer is alive (its last valid "
			 "packet came %.1f s ago): the path drops what this QP sends",
			 idle, (double)(now - heard) / 1e9);
	else
		snprintf(why, sizeof(why),
			 "the peer has been silent for %.1f s (no valid packet for this QP); is it "
			 "gone or unreachable?",
			 (double)(now - heard) / 1e9);
	tp_qp_fail(qp, -ETIMEDOUT, why);
}

/* Check the retransmission timer; false when the QP just failed. */
static bool retx_timer(struct tp_qp *qp, uint64_t now, uint64_t *wake_ns)
{
	struct tp_engine *e = qp->e;
	uint64_t deadline = qp->progress_ns + rto_backoff(qp);

	/* the give-up is checked on time, however long the timer grew */
	if (deadline > qp->alive_ns + e->cfg.peer_timeout_ns)
		deadline = qp->alive_ns + e->cfg.peer_timeout_ns;
	if (qp->una_psn == qp->max_psn || now < qp->rnr_until_ns)
		return true;
	/* tail loss probe: nothing new to send and the tail unanswered for two
	 * RTTs (or the RTT's spread, when queues make it vary) after it went:
	 * resend the last packet (it asks for an ACK), so a lost tail costs an
	 * RTT instead of a timeout */
	if (qp->sq_cur == qp->sq_tail && qp->tlp_psn != qp->max_psn && qp->retries == 0) {
		uint64_t pto = ICE_NSEC_PER_MSEC, from = qp->progress_ns;

		if (qp->srtt_ns != 0) {
			pto = 2 * qp->srtt_ns;
			if (qp->srtt_ns + 4 * qp->rttvar_ns > pto)
				pto = qp->srtt_ns + 4 * qp->rttvar_ns;
			pto += 100 * ICE_NSEC_PER_USEC;
		}
		if (qp->last_tx_ns > from)
			from = qp->last_tx_ns;
		if (now >= from + pto) {
			qp->tlp_psn = qp->max_psn;
			qp->st.tlps++;
			ice_dbg(ICE_SUB_QP, "QP 0x%x tail probe: una %u max %u", qp->qpn,
				qp->una_psn, qp->max_psn);
			sr_push(qp, tp_psn_add(qp->max_psn, TP_PSN_MASK), TP_RETX_TLP);
		} else if (from + pto < *wake_ns) {
			*wake_ns = from + pto;
		}
	}
	if (now < deadline) {
		if (deadline < *wake_ns)
			*wake_ns = deadline;
		return true;
	}
	/* this host fell behind its own socket: the answer may be in it; read
	 * first (for one more timer at most: a full socket must not hide a
	 * dead peer) */
	if (e->rx_backlog && now - deadline < tp_qp_rto(qp))
		return true;
	qp->retries++;
	ice_dbg(ICE_SUB_QP,
		"QP 0x%x timeout %u: una %u next %u max %u posted %u cwnd %u srtt %llu us", qp->qpn,
		qp->retries, qp->una_psn, qp->next_psn, qp->max_psn, qp->post_psn, qp->cwnd,
		(unsigned long long)qp->srtt_ns / 1000);
	qp->st.timeouts++;
	e->st.timeouts++;
	/* the budget is time, not a count: a live peer behind a full queue
	 * answers late, and only a silence of peer_timeout (seconds) ends it */
	if (now - qp->alive_ns >= e->cfg.peer_timeout_ns) {
		qp_give_up(qp, now);
		return false;
	}
	/* Probe with the oldest unacknowledged packet instead of resending the
	 * window: the packets may only be late. The answer tells: an ACK past
	 * the probe means the rest arrived (the timeout was early), a NAK names
	 * the hole, an ACK of the probe alone (twice) means the rest is lost. */
	qp->cwnd = qp->cwnd > 8 ? 8 : qp->cwnd;
	qp->progress_ns = now;
	qp->rtt_valid = false; /* a sample across a timeout measures the timer */
	qp->rto_recover = true;
	qp->rto_una = qp->una_psn;
	qp->rto_ambiguous = 0;
	sr_push(qp, qp->una_psn, TP_RETX_TIMEOUT);
	return true;
}

/* The stack numbers a GSO message's segments' IPv4 identification from 0,
 * and the ICRC covers it: turn the ICRCs of runs first[0..k] (built for 0)
 * into their segments' (or, again, back). */
static void gso_ids(struct tp_engine *e, const int *first, int k, const uint64_t *bytes)
{
	_Static_assert(TP_TX_BATCH <= TP_ICRC_IDS, "a run's identifications are accepted");
	for (int r = 0; r < k; r++)
		for (int m = first[r] + 1; m < first[r + 1]; m++)
			tp_icrc_store(tp_icrc_load(e->tx_trail[m]) ^
					      tp_icrc_id_delta(bytes[m], (uint16_t)(m - first[r])),
				      e->tx_trail[m]);
}

/* Hand send slots 0..n-1 (bytes[] long) to the kernel: a message each, or
 * with UDP GSO each run of equal packets (and one shorter one to end it) as
 * one message the stack segments below the socket: a RoCE packet per
 * segment, its own headers and ICRC in it. Returns how many packets went (a
 * prefix of the slots), or -errno when none did. A kernel that refuses GSO
 * (EIO: no checksum offload on the route's device; EINVAL: no UDP_SEGMENT)
 * gets single packets from then on. */
static int tx_flush(struct tp_qp *qp, int n, const uint64_t *bytes)
{
	struct tp_engine *e = qp->e;
	int first[TP_TX_BATCH + 1], k = 0, sent;

	if (!e->gso_on) {
		sent = sendmmsg(qp->tx_fd, e->tx_msgs, (unsigned int)n, 0);
		return sent < 0 ? -errno : sent;
	}
	for (int i = 0, j; i < n; i = j, k++) {
		struct msghdr *mh = &e->gso_msgs[k].msg_hdr;
		uint64_t seg = bytes[i], tot = 0;

		for (j = i; j < n && bytes[j] <= seg && tot + bytes[j] <= TP_GSO_BYTES; j++) {
			tot += bytes[j];
			if (bytes[j] < seg) {
				j++;
				break;
			}
		}
		first[k] = i;
		*mh = e->tx_msgs[i].msg_hdr;
		mh->msg_iovlen = 3 * (size_t)(j - i); /* tx_iov[i..j-1], contiguous */
		if (j - i > 1) {
			struct cmsghdr *c;

			mh->msg_control = e->gso_ctrl[k];
			mh->msg_controllen = sizeof(e->gso_ctrl[k]);
			c = CMSG_FIRSTHDR(mh);
			c->cmsg_level = IPPROTO_UDP;
			c->cmsg_type = UDP_SEGMENT;
			c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
			*(uint16_t *)(void *)CMSG_DATA(c) = (uint16_t)seg;
		}
	}
	first[k] = n;
	gso_ids(e, first, k, bytes);
	sent = sendmmsg(qp->tx_fd, e->gso_msgs, (unsigned int)k, 0);
	if (sent < 0 && (errno == EIO || errno == EINVAL)) {
		gso_ids(e, first, k, bytes); /* back to identification 0 */
		ice_warn(ICE_SUB_QP,
			 "the kernel refused UDP GSO on %s: sending a packet per "
			 "message from now on",
			 inet_ntoa(qp->peer.sin_addr));
		e->gso_on = false;
		return tx_flush(qp, n, bytes);
	}
	if (sent < 0)
		return -errno;
	for (int i = 0; i < sent; i++)
		e->st.gso_tx += first[i + 1] - first[i] > 1;
	return first[sent];
}

int tp_qp_tx(struct tp_qp *qp, uint64_t now, uint64_t *wake_ns)
{
	struct tp_engine *e = qp->e;
	uint32_t mtu = e->cfg.mtu, psns[TP_TX_BATCH];
	bool resend[TP_TX_BATCH];
	enum tp_retx_reason why[TP_TX_BATCH];
	uint64_t bytes[TP_TX_BATCH];
	uint64_t total = 0;
	int n = 0, nsr, sent;
	bool hold_new;

	if (!retx_timer(qp, now, wake_ns))
		return 0;
	/* a path move waits for the old path to drain: resends (of what it
	 * lost) go on, new packets wait */
	hold_new = qp->sport_next != 0 && !move_now(qp, now, wake_ns);
	if (now < qp->rnr_until_ns) {
		if (qp->rnr_until_ns < *wake_ns)
			*wake_ns = qp->rnr_until_ns;
		return 0;
	}
	/* selective resends first */
	while (n < TP_TX_BATCH && qp->sr_head != qp->sr_tail) {
		uint32_t ent = qp->sr_q[qp->sr_head % TP_SR_DEPTH], pkt;
		uint32_t psn = ent & TP_PSN_MASK;
		struct tp_swqe *w;

		if (tp_psn_diff(qp->una_psn, psn) < 0 || tp_psn_diff(psn, qp->max_psn) <= 0 ||
		    (w = swqe_of(qp, psn, &pkt)) == NULL) {
			qp->sr_head++; /* acknowledged meanwhile, or never sent */
			continue;
		}
		if (!pace(qp, now, mtu + TP_WIRE_OVERHEAD, wake_ns))
			break;
		qp->sr_head++;
		/* Karn: no sample when the timed packet, or a hole before it
		 * (its cumulative ACK waits for the resend), went again */
		if (tp_psn_diff(psn, qp->rtt_psn) >= 0)
			qp->rtt_valid = false;
		psns[n] = psn;
		resend[n] = true;
		why[n] = (enum tp_retx_reason)(ent >> 24);
		bytes[n] = build_data(qp, n, w, pkt, psn, true);
		n++;
	}
	nsr = n;
	/* then new data (or a go-back after a timeout or RNR NAK) */
	while (!hold_new && n < TP_TX_BATCH && qp->sq_cur != qp->sq_tail) {
		struct tp_swqe *w = &qp->sq[qp->sq_cur % TP_SQ_DEPTH];
		uint64_t off = (uint64_t)qp->cur_pkt * mtu;
		uint32_t plen = (uint32_t)(w->len - off < mtu ? w->len - off : mtu);
		uint32_t inflight = (uint32_t)tp_psn_diff(qp->una_psn, qp->next_psn);
		bool ack_req;

		if (inflight >= qp->cwnd)
			break;
		if (!pace(qp, now, plen + TP_WIRE_OVERHEAD, wake_ns))
			break;
		/* an ACK every ack_every packets, at a message's end, when the
		 * window fills, and at least every quarter RTO: a paced QP
		 * (32 packets at a planned 14 Mbit/s take 76 ms) must hear
		 * from its peer well before its retransmission timer fires */
		ack_req = qp->cur_pkt + 1 == w->npkts ||
			  (uint32_t)tp_psn_diff(qp->last_ackreq_psn, qp->next_psn) >=
				  e->cfg.ack_every ||
			  inflight + 1 >= qp->cwnd || now - qp->last_ackreq_ns >= tp_qp_rto(qp) / 4;
		if (ack_req) {
			qp->last_ackreq_psn = qp->next_psn;
			qp->last_ackreq_ns = now;
			if (!qp->rtt_valid && tp_psn_diff(qp->next_psn, qp->max_psn) <= 0) {
				qp->rtt_valid = true;
				qp->rtt_psn = qp->next_psn;
				qp->rtt_sent_ns = now;
			}
		}
		psns[n] = qp->next_psn;
		resend[n] = tp_psn_diff(qp->next_psn, qp->max_psn) > 0;
		why[n] = (enum tp_retx_reason)qp->gbn_why;
		bytes[n] = build_data(qp, n, w, qp->cur_pkt, qp->next_psn, ack_req);
		qp->next_psn = tp_psn_add(qp->next_psn, 1);
		if (++qp->cur_pkt == w->npkts) {
			qp->cur_pkt = 0;
			qp->sq_cur++;
		}
		n++;
	}
	if (n == 0)
		return 0;
	sent = tx_flush(qp, n, bytes);
	e->st.syscalls_tx++;
	if (sent < 0) {
		int err = -sent;

		sent = 0;
		if (err == EMSGSIZE) {
			char msg[160];

			snprintf(msg, sizeof(msg),
				 "a %llu-byte RoCEv2 packet is larger than the path MTU; use a "
				 "smaller RoCE MTU (now %u)",
				 (unsigned long long)bytes[0] + 28, mtu);
			tp_qp_fail(qp, -EMSGSIZE, msg);
			return 0;
		}
		if (err != EAGAIN && err != ENOBUFS && err != EINTR) {
			/* no route, link down...: as if the network lost them;
			 * the timers resend, and fail the QP if it lasts */
			ice_dbg(ICE_SUB_QP, "QP 0x%x: send failed: %s", qp->qpn, strerror(err));
			sent = n;
		}
	}
	if (sent < n) {
		/* socket buffer full: take back what did not go, retry soon;
		 * selective resends go back in their queue, sequential packets
		 * rewind to the first one not sent */
		e->st.tx_eagain++;
		for (int i = sent; i < nsr; i++)
			sr_push(qp, psns[i], why[i]);
		if (sent < n && n > nsr)
			rewind_to(qp, psns[sent > nsr ? sent : nsr]);
		if (now + 20 * ICE_NSEC_PER_USEC < *wake_ns)
			*wake_ns = now + 20 * ICE_NSEC_PER_USEC;
	}
	for (int i = 0; i < sent; i++) {
		total += bytes[i];
		if (resend[i]) {
			/* a packet first sent on the old port of a move that
			 * could not wait: the move's cost, whatever asked */
			if (qp->move_inflight && tp_psn_diff(psns[i], qp->move_psn) > 0)
				why[i] = TP_RETX_MOVE;
			qp->st.retx_pkts++;
			e->st.retx_pkts++;
			qp->st.retx_by[why[i]]++;
			e->st.retx_by[why[i]]++;
		}
		if (tp_psn_diff(qp->max_psn, tp_psn_add(psns[i], 1)) > 0)
			qp->max_psn = tp_psn_add(psns[i], 1);
	}
	if (sent > 0)
		qp->last_tx_ns = now;
	e->st.tx_pkts += (uint64_t)sent;
	e->st.tx_bytes += total;
	qp->st.tx_pkts += (uint64_t)sent;
	qp->st.tx_bytes += total;
	tp_dcqcn_rp_on_sent(&qp->rp, total, now);
	return sent;
}

void tp_qp_fail(struct tp_qp *qp, int status, const char *why)
{
	if (qp->state == TP_QPS_ERROR)
		return;
	ice_err(ICE_SUB_QP,
		"QP 0x%x to %s:%u (QP 0x%x, sport %u) failed: %s; oldest unacknowledged PSN %u, "
		"%u timeouts since the last progress",
		qp->qpn, inet_ntoa(qp->peer.sin_addr), ntohs(qp->peer.sin_port), qp->rqpn,
		qp->sport, why, qp->una_psn, qp->retries);
	qp->state = TP_QPS_ERROR;
	flush_all(qp, status);
}
