/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to transport/: engine and QP state shared by tp_engine.c and
 * tp_qp.c. Nothing outside transport/ includes this. */
#ifndef TP_INTERNAL_H
#define TP_INTERNAL_H

#include <sys/socket.h>

#include "ice_ctrl.h"
#include "ice_event.h"
#include "tp.h"

#define TP_RX_BATCH  64
#define TP_TX_BATCH  32
#define TP_GSO_BYTES 65000 /* a GSO message's packets, under IPv4's 65535 */
#define TP_MAX_QPS   4096
#define TP_MAX_MRS   256
#define TP_SQ_DEPTH  1024 /* work requests per QP; power of two */
#define TP_RQ_DEPTH  1024
#define TP_RKEY_BASE 0x1000
#define TP_SR_DEPTH  64 /* PSNs queued for selective resend */
/* Bytes a data packet adds on the wire besides its payload: Ethernet 14,
 * IPv4 20, UDP 8, BTH 12, ICRC 4; what pacing and DCQCN rates count. */
#define TP_WIRE_OVERHEAD 58

/* A token bucket in bytes, filled at a rate up to a cap (a pacer). */
struct tp_bucket {
	double tokens;
	uint64_t ns; /* when it was last filled */
};

/* Add what rate (bit/s) earned since the last fill, up to cap bytes; true
 * when bytes are there now, else *wake_ns is lowered to when they will be. */
static inline bool tp_bucket_ready(struct tp_bucket *b, double rate, double cap, uint32_t bytes,
				   uint64_t now, uint64_t *wake_ns)
{
	uint64_t wait;

	if (now > b->ns) {
		b->tokens += rate / 8 * (double)(now - b->ns) * 1e-9;
		if (b->tokens > cap)
			b->tokens = cap;
		b->ns = now;
	}
	if (b->tokens >= bytes)
		return true;
	wait = (uint64_t)((bytes - b->tokens) * 8 / rate * 1e9) + 1;
	if (now + wait < *wake_ns)
		*wake_ns = now + wait;
	return false;
}

enum tp_qp_state {
	TP_QPS_RESET,
	TP_QPS_RTS,
	TP_QPS_ERROR,
};

/* A send-side work request; its PSNs are fixed when it is posted. */
struct tp_swqe {
	uint8_t op; /* TP_WC_SEND or TP_WC_WRITE */
	const uint8_t *buf;
	uint64_t len;
	uint64_t va;
	uint32_t rkey;
	uint32_t first_psn;
	uint32_t npkts;
	uint64_t wr_id;
};

struct tp_rwqe {
	uint8_t *buf;
	uint64_t len;
	uint64_t wr_id;
};

/* A packet held ahead of a gap (selective repeat). */
struct tp_ooo {
	bool used;
	struct tp_pkt pkt; /* payload points into the QP's ooo_data */
};

/* A SEND that arrived before its receive was posted, kept until it is. */
#define TP_UNEXP_MAX 64
struct tp_unexp {
	uint8_t *buf; /* owned; freed when a receive takes it */
	size_t len, cap;
	bool done; /* its last packet arrived */
};

struct tp_qp {
	struct tp_engine *e;
	uint32_t qpn;
	uint32_t idx; /* slot in e->qps */
	enum tp_qp_state state;
	struct sockaddr_in peer;
	uint32_t rqpn;
	uint16_t pkey;
	uint16_t sport;
	uint16_t sport_default; /* the port chosen at connect (Linux's formula or given) */
	bool planned_rate;	/* the rate comes from a plan */
	uint32_t planned_mbps;	/* ... that rate: applied when it changes, not per epoch */
	int tx_fd;
	struct tp_icrc_addr icrc_tx;

	/* requester (send queue): head = oldest not completed, cur = being
	 * transmitted, tail = next free; indices grow, masked on use. */
	struct tp_swqe sq[TP_SQ_DEPTH];
	uint32_t sq_head, sq_cur, sq_tail;
	uint32_t cur_pkt;  /* packet index within sq[sq_cur] */
	uint32_t post_psn; /* PSN of the next posted WQE */
	uint32_t next_psn; /* next PSN to transmit */
	uint32_t max_psn;  /* one past the highest PSN ever transmitted */
	uint32_t una_psn;  /* oldest unacknowledged PSN */
	uint32_t last_ackreq_psn;
	uint64_t last_ackreq_ns; /* when the last ACK request went out */
	uint64_t progress_ns;	 /* last ACK progress (or start of waiting) */
	uint64_t last_tx_ns;	 /* last data packet sent */
	uint64_t rnr_until_ns;
	uint32_t retries;	/* timeouts since the last progress */
	uint64_t alive_ns;	/* last progress: an ACK that moved, a valid NAK */
	uint64_t heard_ns;	/* last valid packet of the peer for this QP */
	bool rto_recover;	/* a timeout's probe is out... */
	uint32_t rto_una;	/* ... for this PSN */
	uint32_t rto_ambiguous; /* answers that acknowledged just the probe */
	uint8_t gbn_why;	/* enum tp_retx_reason of the current go-back */
	uint32_t nak_psn;	/* the last hole resent for a NAK... */
	uint64_t nak_ns;	/* ... and when */
	uint32_t rnr_count;
	/* PSNs to resend selectively, each with its enum tp_retx_reason in
	 * the top 8 bits (PSNs are 24 bits) */
	uint32_t sr_q[TP_SR_DEPTH];
	uint32_t sr_head, sr_tail;
	/* a path move waits until what went on the old port is acknowledged
	 * (or a timer's worth), so the move reorders nothing */
	uint16_t sport_next; /* the port to move to, 0 when none */
	uint64_t move_by_ns; /* move then at the latest */
	uint32_t move_psn;   /* max_psn at a move made with packets in flight */
	bool move_inflight;  /* ... and they are not all acknowledged yet */
	uint32_t tlp_psn;    /* max_psn when the last tail probe went out */
	uint32_t cwnd;	     /* packets allowed in flight: the window, cut to a
			      * few after a timeout and doubled back per ACK */
	uint32_t rtt_psn;    /* PSN timed for an RTT sample */
	bool rtt_valid;
	uint64_t rtt_sent_ns;
	uint64_t srtt_ns, rttvar_ns; /* smoothed RTT (RFC 6298), 0 before a sample */
	struct tp_bucket pacer;	     /* DCQCN's current rate */
	struct ice_dcqcn_params dcqcn;
	struct tp_dcqcn_rp rp;

	/* responder (receive queue) */
	struct tp_rwqe rq[TP_RQ_DEPTH];
	uint32_t rq_head, rq_tail;
	uint32_t epsn;	/* next expected PSN */
	uint32_t msn;	/* completed messages, 24 bits */
	bool nak_sent;	/* a NAK/RNR NAK is out for epsn */
	bool rx_warned; /* a refused packet was logged (the rest are counted) */
	bool ack_pending;
	uint32_t unacked_rx;
	bool rcv_active;  /* a SEND is being received */
	bool rcv_staging; /* ... into unexp[ux_tail - 1], else into rq[rq_head] */
	uint64_t rcv_off;
	struct tp_unexp unexp[TP_UNEXP_MAX];
	uint32_t ux_head, ux_tail;
	size_t ux_bytes;
	bool wr_active; /* an RDMA WRITE is being received */
	uint8_t *wr_ptr;
	uint64_t wr_left;
	struct tp_ooo *ooo; /* window_pkts slots by PSN, allocated on first use */
	uint8_t *ooo_data;
	uint32_t ooo_count;
	struct tp_dcqcn_np np;
	struct tp_qp *ack_next; /* on e->ack_list when ack_pending */

	struct tp_qp_stats st;
	int ctrl_slot; /* slot in the agent's control block, or -1 */
};

struct tp_engine {
	struct tp_engine_cfg cfg;
	int rx_fd;
	int wake_fd; /* eventfd: tp_engine_wake() ends a wait in progress */
	uint16_t port;
	uint32_t qpn_base;
	struct tp_qp *qps[TP_MAX_QPS];
	uint32_t nqps; /* slots in use are below this */
	struct tp_mr *mrs[TP_MAX_MRS];

	struct tp_wc *cq; /* ring, grows when full */
	uint32_t cq_cap, cq_head, cq_tail;

	struct tp_qp *ack_list;
	uint64_t rng;

	/* receive batch */
	struct mmsghdr rx_msgs[TP_RX_BATCH];
	struct iovec rx_iov[TP_RX_BATCH];
	struct sockaddr_in rx_from[TP_RX_BATCH];
	uint8_t rx_ctrl[TP_RX_BATCH][64];
	uint8_t *rx_bufs;
	uint32_t rx_buf_len;

	/* send batch */
	struct mmsghdr tx_msgs[TP_TX_BATCH];
	struct iovec tx_iov[TP_TX_BATCH][3];
	uint8_t tx_hdr[TP_TX_BATCH][TP_MAX_HDR_LEN];
	uint8_t tx_trail[TP_TX_BATCH][ICE_ROCE_ICRC_LEN];
	uint8_t *tx_bounce; /* TP_TX_BATCH * (mtu + 4): payloads that need pad */
	/* cfg.gso: runs of the send slots as one message each */
	struct mmsghdr gso_msgs[TP_TX_BATCH];
	uint8_t gso_ctrl[TP_TX_BATCH][CMSG_SPACE(sizeof(uint16_t))];
	bool gso_on; /* cfg.gso, until the kernel refuses it */

	/* the NIC's port: every QP's packets share its line rate, served in
	 * turn (without it, QPs each paced at line rate overfill the host's
	 * own egress queue, where no ECN marks them) */
	struct tp_bucket port_pacer;
	uint32_t tx_rr;	 /* the QP to serve first on the next round */
	bool rx_backlog; /* the last receive round left packets in the socket */

	struct tp_engine_stats st;

	/* the host agent, when one runs for this address */
	struct ice_ctrl *ctrl;	     /* control block, or NULL */
	uint64_t ctrl_seen;	     /* its ctl_version when last applied */
	uint64_t ctrl_publish_ns;    /* last time QP counters were copied there */
	struct ice_event_tx *events; /* collective events to the agent, or NULL */
};

/* tp_engine.c */
void tp_cq_push(struct tp_engine *e, const struct tp_wc *wc);
/* The agent's control block: take new settings, publish QP state. */
void tp_ctrl_poll(struct tp_engine *e, uint64_t now);
void tp_ctrl_publish(struct tp_qp *qp);
struct tp_mr *tp_mr_find(struct tp_engine *e, uint32_t rkey);
int tp_sock_tx_open(struct tp_engine *e, uint16_t sport);
/* Fuzzing and tests: take buf (len bytes, as a UDP payload from `from`, IP
 * TOS tos) as if it had just been received, then send the ACKs it asks for.
 * buf must stay writable and valid for the call only. */
void tp_engine_rx_inject(struct tp_engine *e, uint8_t *buf, size_t len,
			 const struct sockaddr_in *from, uint8_t tos);

/* tp_qp.c and tp_qp_resp.c: the protocol. */
void tp_qp_rx(struct tp_qp *qp, const struct tp_pkt *pkt, uint8_t tos,
	      const struct sockaddr_in *from, uint64_t now);
/* Transmit what the window, pacing and timers allow; returns packets sent,
 * lowers *wake_ns to when this QP next needs the engine. */
int tp_qp_tx(struct tp_qp *qp, uint64_t now, uint64_t *wake_ns);

void tp_qp_flush_ack(struct tp_qp *qp);
/* tp_qp.c, for tp_qp_resp.c: fail the QP (every outstanding request completes
 * with status; why is logged); take an ACK, NAK or RNR NAK. */
void tp_qp_fail(struct tp_qp *qp, int status, const char *why);
void tp_qp_rx_ack(struct tp_qp *qp, const struct tp_pkt *pkt, uint64_t now);

/* ---- communicator internals (tp_comm.c, used by tp_coll.c) ---- */

struct tp_comm {
	struct tp_comm_cfg cfg;
	int rank, nranks;
	uint32_t k; /* QPs per connection */
	struct tp_engine *e;
	struct tp_qp **qps; /* [peer * k + q] */
	uint64_t *tx_seq;   /* messages sent to each peer */
	uint64_t *rx_seq;   /* messages posted to receive from each peer */
	int *oob;	    /* rank 0: fd per rank (-1 for itself); others: oob[0] */
	uint8_t *scratch;   /* collectives' temporary space */
	uint64_t comm_id;   /* for events: hash of the rendezvous address */
	size_t scratch_len;
	uint64_t watch_ns; /* when the oob connections were last looked at */
	int in_oob;	   /* inside an oob exchange: its own I/O sees a close */
	uint64_t posted;   /* work requests posted and not yet completed */
	uint64_t done_ns;  /* the last completion, or the post that found none posted */
	bool stalled;	   /* posted > 0 and nothing completed for cfg.stall_timeout_ns */
	bool lost;	   /* a rank's oob connection closed */
	bool failed;	   /* lost, or a request failed: no barrier at the end */
};

/* Post len bytes as one message (tp_isend / tp_irecv without the checks). */
int tp_comm_isend(struct tp_comm *c, int peer, const void *buf, size_t len, struct tp_req *r);
int tp_comm_irecv(struct tp_comm *c, int peer, void *buf, size_t len, struct tp_req *r);
/* Tell the host agent about an operation (no-op without an agent). */
void tp_comm_event(struct tp_comm *c, enum ice_ev_kind kind, enum ice_coll_op op, size_t count,
		   int dtype, int redop, int root, int peer);
/* Scratch space of at least len bytes (kept for later calls). */
void *tp_comm_scratch(struct tp_comm *c, size_t len);

#endif /* TP_INTERNAL_H */
