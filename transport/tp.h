/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tp: ICE's included transport. Reliable connected queue pairs with real
 * RoCEv2 framing over UDP (destination port 4791), DCQCN, a per-QP UDP source
 * port the controller can change at run time, and collectives on top.
 *
 * Threading: an engine and everything made from it (QPs, communicators) are
 * used from one thread (tp_engine_wake() excepted). tp_engine_progress() does all I/O: it receives,
 * acknowledges, retransmits, paces and sends; collectives call it while they
 * wait. Nothing happens on the wire between calls.
 *
 * Errors: functions return 0 or a negative errno; constructors return NULL and
 * set errno. The reason is logged (subsystems qp, engine, comm, coll).
 */
#ifndef TP_H
#define TP_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev.h"
#include "tp_dcqcn.h"
#include "tp_wire.h"

/* ---- engine ---------------------------------------------------------- */

struct tp_engine_cfg {
	struct in_addr addr;	  /* local IPv4 address to bind (required) */
	uint16_t port;		  /* UDP port to receive on; 4791 (0: ephemeral, tests) */
	uint32_t mtu;		  /* RoCE payload per packet: 256, 512, 1024, 2048, 4096;
				   * 0: the largest that fits the interface's MTU */
	uint32_t window_pkts;	  /* unacknowledged packets per QP */
	uint32_t ack_every;	  /* request an ACK every N packets (and at message end) */
	uint64_t retx_timeout_ns; /* the retransmission timer's floor: above the worst
				   * queueing delay of the fabric (buffers / rates) */
	uint64_t rto_max_ns;	  /* back-off stops doubling the timer here */
	uint64_t peer_timeout_ns; /* a QP fails after this long without progress */
	uint64_t rnr_timer_ns;	  /* wait after a receiver-not-ready NAK */
	uint32_t rnr_retry;	  /* RNR NAKs in a row before failing; 0 = unlimited */
	uint64_t line_rate_bps;	  /* NIC line rate for DCQCN's Rc start; 0 = unlimited */
	bool icrc_verify;	  /* check the ICRC of received packets (offload off) */
	bool ecn;		  /* send data ECN-capable (ECT(0)) */
	bool gso;		  /* hand a QP's equal-sized packets to the kernel as one
				   * UDP GSO message (up to 64 KiB, segmented below the
				   * socket) and read coalesced ones back (UDP GRO): one
				   * pass through the stack for up to 15 packets of 4 KiB
				   * (32 smaller ones). Off by default: a tc or XDP
				   * program on the host then sees one message where its
				   * RoCE packets go out */
	uint8_t dscp;		  /* DSCP of data packets */
	uint8_t cnp_dscp;	  /* DSCP of CNPs (np_cnp_dscp, 48 on ConnectX) */
	uint32_t sock_buf;	  /* socket send/receive buffer, bytes */
	uint32_t unexp_bytes;	  /* per QP: SEND data kept while no receive is posted;
				   * beyond it the requester gets RNR NAKs */
	uint32_t rx_drop_ppm;	  /* tests: drop this share (per million) of received packets */
	uint32_t rx_drop_seed;	  /* tests: seed for the drop decisions */
	uint32_t rx_dup_ppm;	  /* tests: process this share of packets twice */
	uint32_t rx_reorder_ppm;  /* tests: swap this share with the next packet */
	struct ice_dcqcn_params dcqcn; /* initial per-QP DCQCN parameters */
};

void tp_engine_cfg_default(struct tp_engine_cfg *c);

struct tp_engine_stats {
	uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes;
	uint64_t rx_ce; /* CE-marked packets received */
	uint64_t cnp_tx, cnp_rx, ack_tx, ack_rx, nak_tx, nak_rx, rnr_nak_tx, rnr_nak_rx;
	uint64_t retx_pkts, timeouts;
	uint64_t retx_by[TP_RETX_REASON_MAX]; /* resent packets, by reason */
	uint64_t spurious_timeouts;	      /* timeouts the peer's answer showed were early */
	uint64_t naks_held; /* repeated NAKs for a hole whose resend is on its way */
	uint64_t drops[TP_DROP_REASON_MAX]; /* received packets dropped, by reason */
	uint64_t tx_eagain;		    /* sends deferred: socket buffer full */
	uint64_t port_paced;		    /* sends deferred: the port's line rate used up */
	uint64_t syscalls_rx, syscalls_tx;
	uint64_t gso_tx, gro_rx; /* messages that carried more than one packet */
};

struct tp_engine;
struct tp_qp;

struct tp_engine *tp_engine_new(const struct tp_engine_cfg *cfg);
void tp_engine_free(struct tp_engine *e); /* NULL-safe; destroys its QPs */
/* The engine's settings, cfg.mtu resolved (0 in cfg: from the interface). */
const struct tp_engine_cfg *tp_engine_cfg(const struct tp_engine *e);
/* The largest RoCE MTU whose packets fit an interface MTU (0: none). */
uint32_t tp_roce_mtu_fit(uint32_t if_mtu);
/* Lower the engine's RoCE MTU to a connection's path MTU (the smallest of
 * the peers'), before any QP sends: -EINVAL if mtu is above it or invalid. */
int tp_engine_set_path_mtu(struct tp_engine *e, uint32_t mtu);
const struct tp_engine_stats *tp_engine_stats(const struct tp_engine *e);
/* Local port actually bound (useful with cfg.port = 0). */
uint16_t tp_engine_port(const struct tp_engine *e);
/*
 * Do all pending I/O. When nothing can be done now, wait up to max_wait_ns
 * for a packet or a timer. Returns the number of packets handled (>= 0) or a
 * negative errno on a fatal socket error.
 */
int tp_engine_progress(struct tp_engine *e, uint64_t max_wait_ns);
/* Make a tp_engine_progress() waiting in another thread return now (the
 * one call that may come from any thread): a thread that hands work to the
 * engine's thread calls it after queueing. */
void tp_engine_wake(struct tp_engine *e);

enum tp_wc_opcode {
	TP_WC_SEND,
	TP_WC_WRITE,
	TP_WC_RECV,
};

struct tp_wc {
	uint64_t wr_id;
	uint32_t qpn;
	enum tp_wc_opcode opcode;
	int status;	   /* 0, or -ETIMEDOUT (peer gone), -EMSGSIZE, -EREMOTEIO, -ECANCELED */
	uint32_t byte_len; /* TP_WC_RECV: bytes received */
};

/* Take up to n completions; returns how many. */
int tp_engine_poll_cq(struct tp_engine *e, struct tp_wc *wc, int n);

/* A memory region remote peers may RDMA WRITE into. */
struct tp_mr {
	void *addr;
	size_t len;
	uint32_t rkey;
};
/* Register [addr, addr+len); the engine owns the returned handle until
 * tp_mr_dereg(). NULL + errno. */
struct tp_mr *tp_mr_reg(struct tp_engine *e, void *addr, size_t len);
void tp_mr_dereg(struct tp_engine *e, struct tp_mr *mr);

/* ---- queue pairs ------------------------------------------------------- */

struct tp_qp_conn {
	struct in_addr raddr; /* peer engine's address */
	uint16_t rport;	      /* peer engine's UDP port (4791) */
	uint32_t rqpn;	      /* peer QP number */
	uint16_t sport;	      /* our UDP source port; 0 = Linux's default from the QPNs
			       * (with the last bit flipped when that is the engine's port) */
	uint16_t pkey;	      /* partition key; 0 = default 0xffff */
	uint32_t sq_psn;      /* first PSN we send */
	uint32_t rq_psn;      /* first PSN we expect from the peer */
};

/* A new QP in the RESET state, with a QP number unique in the engine. */
struct tp_qp *tp_qp_create(struct tp_engine *e);
/* Flushes outstanding work with -ECANCELED completions and frees it. */
void tp_qp_destroy(struct tp_qp *qp);
uint32_t tp_qp_num(const struct tp_qp *qp);
/* RESET -> RTS: connect to the peer QP. */
int tp_qp_connect(struct tp_qp *qp, const struct tp_qp_conn *c);
/* Move the QP's traffic to UDP source port sport (49152-65535, or any
 * non-zero port), at once, without losing data: packets in flight on the old
 * port are still accepted by the peer, which tells QPs apart by QPN. */
int tp_qp_set_sport(struct tp_qp *qp, uint16_t sport);
uint16_t tp_qp_sport(const struct tp_qp *qp);
/* The peer engine's address the QP sends to (INADDR_ANY before connect). */
struct in_addr tp_qp_raddr(const struct tp_qp *qp);
/* The QP's DCQCN parameters (a copy per QP): change fields at run time, then
 * call tp_qp_dcqcn_changed(). */
struct ice_dcqcn_params *tp_qp_dcqcn_params(struct tp_qp *qp);
int tp_qp_dcqcn_changed(struct tp_qp *qp);
/* Set the current and target rate (a planned rate), bit/s; 0 = line rate. */
void tp_qp_set_rate(struct tp_qp *qp, double bps);
double tp_qp_rate(struct tp_qp *qp);
bool tp_qp_failed(const struct tp_qp *qp);

/* Post work. Buffers must stay valid until the completion. -EAGAIN when the
 * queue is full, -ENOTCONN before tp_qp_connect(), -EIO after a failure. */
int tp_qp_post_send(struct tp_qp *qp, const void *buf, size_t len, uint64_t wr_id);
int tp_qp_post_write(struct tp_qp *qp, const void *buf, size_t len, uint64_t remote_va,
		     uint32_t rkey, uint64_t wr_id);
int tp_qp_post_recv(struct tp_qp *qp, void *buf, size_t len, uint64_t wr_id);

struct tp_qp_stats {
	uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes, retx_pkts, timeouts;
	uint64_t naks_rx, naks_tx, rnr_rx, cnps_rx, cnps_tx, ce_rx, sport_changes;
	uint64_t ooo_held; /* packets held ahead of a gap, placed once it filled */
	uint64_t tlps;	   /* tail loss probes sent */
	uint64_t retx_by[TP_RETX_REASON_MAX];
	uint64_t spurious_timeouts;
	uint64_t moves_deferred; /* path moves that waited for the old path to drain */
};
const struct tp_qp_stats *tp_qp_stats(const struct tp_qp *qp);
const struct tp_dcqcn_rp *tp_qp_rp(const struct tp_qp *qp);

/* ---- communicators and collectives -------------------------------------- */

enum tp_spread {
	TP_SPREAD_SPLIT = 0,   /* each message split over all QPs of the connection */
	TP_SPREAD_ROUND_ROBIN, /* whole messages, QPs taken in turn */
};

struct tp_comm_cfg {
	int nranks;
	int rank;
	char bootstrap[64];    /* "ip:port" of rank 0's rendezvous (TCP) */
	int listen_fd;	       /* rank 0: an already listening socket, or -1 */
	uint32_t qps_per_conn; /* QPs to each peer (NCCL_IB_QPS_PER_CONNECTION) */
	enum tp_spread spread; /* NCCL_IB_SPLIT_DATA_ON_QPS = 1 is SPLIT */
	uint64_t slice_bytes;  /* pipelining unit of the ring algorithms */
	uint64_t oneshot_max;  /* all-reduce up to this many bytes: one-shot */
	uint64_t bootstrap_timeout_ns;
	uint64_t oob_timeout_ns;   /* one out-of-band call (0: 4 x bootstrap_timeout_ns) */
	uint64_t stall_timeout_ns; /* fail when requests wait and none completes for
				    * this long: a rank that hangs (0: never) */
	bool oob_only;		   /* no engine, no QPs: only the rendezvous and the
				    * out-of-band helpers (a job's control group) */
	struct tp_engine_cfg eng;  /* for this rank's engine */
};

void tp_comm_cfg_default(struct tp_comm_cfg *c);

struct tp_comm;

/* Rendezvous with the other ranks, create and connect the QPs. NULL + errno. */
struct tp_comm *tp_comm_init(const struct tp_comm_cfg *cfg);
void tp_comm_free(struct tp_comm *c); /* NULL-safe */
int tp_comm_rank(const struct tp_comm *c);
int tp_comm_nranks(const struct tp_comm *c);
struct tp_engine *tp_comm_engine(struct tp_comm *c);
/* QP q of the connection to peer (for steering, stats); NULL when none. */
struct tp_qp *tp_comm_qp(struct tp_comm *c, int peer, uint32_t q);
uint32_t tp_comm_qps_per_conn(const struct tp_comm *c);
/* Change cfg.stall_timeout_ns once the job knows how long a step takes. */
void tp_comm_set_stall_timeout(struct tp_comm *c, uint64_t ns);

/* Out-of-band helpers over the bootstrap connections (not the data path). */
int tp_comm_barrier(struct tp_comm *c);
/* Every rank gets the maximum / the sum of v over the ranks. */
int tp_comm_oob_max(struct tp_comm *c, double *v);
int tp_comm_oob_sum(struct tp_comm *c, double *v);
/* Rank 0's len bytes of buf to every rank. */
int tp_comm_oob_bcast(struct tp_comm *c, void *buf, size_t len);
/* Every rank's len bytes of mine into all (rank r's at all + r * len) on
 * rank 0; all is not used on the other ranks (may be NULL). */
int tp_comm_oob_gather(struct tp_comm *c, const void *mine, size_t len, void *all);

/* Collectives (blocking, NCCL argument order; host buffers). In-place when
 * sendbuf == recvbuf (for all-gather: sendbuf == recvbuf + rank * count). */
int tp_allreduce(struct tp_comm *c, const void *sendbuf, void *recvbuf, size_t count,
		 enum dev_dtype t, enum dev_redop op);
int tp_reduce_scatter(struct tp_comm *c, const void *sendbuf, void *recvbuf, size_t recvcount,
		      enum dev_dtype t, enum dev_redop op);
int tp_allgather(struct tp_comm *c, const void *sendbuf, void *recvbuf, size_t sendcount,
		 enum dev_dtype t);
/* Reduce-scatter and all-gather with chunks of different sizes: chunk i
 * holds counts[i] elements (zero allowed) and starts at element
 * counts[0] + ... + counts[i-1]; the whole buffer is their sum, and counts
 * must be the same on every rank. Reduce-scatter-v: sendbuf holds the whole
 * buffer, recvbuf gets this rank's chunk reduced over all ranks. In place
 * when recvbuf is this rank's chunk of sendbuf: the ring then reduces in
 * sendbuf itself, without a copy, and leaves partial sums in the other
 * chunks. All-gather-v: sendbuf holds this rank's chunk, recvbuf gets the
 * whole buffer; in place when sendbuf is this rank's chunk of recvbuf. */
int tp_reduce_scatter_v(struct tp_comm *c, const void *sendbuf, void *recvbuf, const size_t *counts,
			enum dev_dtype t, enum dev_redop op);
int tp_allgather_v(struct tp_comm *c, const void *sendbuf, void *recvbuf, const size_t *counts,
		   enum dev_dtype t);
int tp_broadcast(struct tp_comm *c, const void *sendbuf, void *recvbuf, size_t count,
		 enum dev_dtype t, int root);
int tp_alltoall(struct tp_comm *c, const void *sendbuf, void *recvbuf, size_t count,
		enum dev_dtype t);
/* Send count elements to sendpeer and receive count from recvpeer at once
 * (either peer may be -1 to skip that side). */
int tp_sendrecv(struct tp_comm *c, const void *sendbuf, int sendpeer, void *recvbuf, int recvpeer,
		size_t count, enum dev_dtype t);

/* Non-blocking point-to-point (host buffers). A request is complete when
 * pending reaches 0; status is then its first error, or 0. Zero a request
 * before its first post; several messages may share one. Nothing moves
 * between calls: tp_comm_progress (or any blocking call on the
 * communicator) drives the engine and completes requests. Messages between
 * two ranks match in the order each side posted them, so sends and
 * receives to different peers, and receives posted long before their send,
 * may be outstanding at once. A send's buffer must not change, nor a
 * receive's be read, before its request completes; a request must stay in
 * place until then. Bad arguments: -EINVAL, nothing posted. Any other
 * error may leave the message posted in part: the communicator is then
 * unusable (as after a failed collective). */
struct tp_req {
	int pending; /* work requests not yet completed */
	int status;  /* first error, or 0 */
};

int tp_isend(struct tp_comm *c, const void *buf, size_t count, enum dev_dtype t, int peer,
	     struct tp_req *r);
int tp_irecv(struct tp_comm *c, void *buf, size_t count, enum dev_dtype t, int peer,
	     struct tp_req *r);
/* Drive the engine once (waiting at most max_wait_ns for a packet, a timer
 * or tp_engine_wake) and complete requests; returns what
 * tp_engine_progress did (< 0: the engine failed), or -ENOTCONN once a
 * rank's process has ended or its host stopped answering (rank 0 sees any
 * rank's bootstrap connection close or time out, the others rank 0's; a
 * rank waiting only to receive learns no other way), or -ETIMEDOUT once
 * requests have waited cfg.stall_timeout_ns with none completing (a peer
 * that lives but hangs). */
int tp_comm_progress(struct tp_comm *c, uint64_t max_wait_ns);
/* Progress until r is complete; returns its status. */
int tp_comm_wait(struct tp_comm *c, struct tp_req *r);

#endif /* TP_H */
