// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_qp: libFuzzer harness for the reliable-connected QP state machine
 * (transport/tp_qp.c, fed through tp_engine.c's receive path).
 *
 * Once per process: two engines on 127.43.0.2 and 127.43.0.3 (ephemeral
 * ports, ICRC not checked so mutants reach the state machine, a fixed RNG
 * seed so QP numbers are the same in every run: 0x100 and 0x101). Per input:
 * two QPs on one of them, connected to a fake peer 127.43.0.1:4791 (which
 * nobody listens on: the ACKs, NAKs and data the engine sends there are
 * lost), receives of several sizes posted, a memory region registered as an
 * RDMA WRITE target, a few SENDs and a WRITE posted and sent, so that the
 * ACK / NAK / RNR NAK / CNP handling of the requester side has packets in
 * flight to work on. Then the input's records are played: packets injected
 * with tp_engine_rx_inject() as if they came from the peer (or from a
 * stranger), and commands (progress, post, a jump of the QPs' clocks, a
 * source port move). At the end the QPs are destroyed and the region
 * deregistered, so nothing carries over to the next input.
 *
 * Input (see gen_corpus_qp.py, which writes the seeds):
 *
 *   cfg:1  record*
 *   cfg    bit 0: engine (0: MTU 256, window 16, 3 RNR retries; 1: MTU 512,
 *                 window 64, paced at a 20 Mbit/s line rate, RNR retries
 *                 unlimited)
 *          bit 1: post the initial receives
 *          bit 2: post (and send) the initial SENDs and WRITE
 *          bit 3: PSNs start just below the 24-bit wrap
 *   record len:2 (little endian)  flags:1  fix:1  data[len]
 *     len > 0: a packet (a UDP payload, BTH .. ICRC); longer than the
 *     engine's receive buffer (MTU + 128) it is dropped as the socket would.
 *       flags bits 0-1: the IP header's ECN bits (3: CE)
 *             bit 2:    for QP 1 (else QP 0)
 *             bit 3:    from a stranger's address, not the peer's
 *             bit 4:    inject it twice (the network duplicated it)
 *             bit 5:    tp_engine_progress() and poll after it
 *             bit 6:    the QPs' clocks jump one retransmission timeout first
 *       fix   bit 0:    BTH destination QP := the QP's number
 *             bit 1:    BTH PSN := base + (int8)(PSN's low byte), base being
 *                       the expected PSN (data) or the oldest unacknowledged
 *                       PSN - 1 (ACK / NAK: offset k acknowledges k packets)
 *             bit 2:    BTH P_Key := the QP's
 *             bit 3:    RETH rkey := the region's
 *             bit 4:    RETH va := region start + (int32)(va's low 32 bits)
 *     len == 0: a command: flags % 8 says which, fix is its argument:
 *       0 progress and poll; 1 the clocks jump (fix + 1) ms; 2 post a receive,
 *       3 a SEND, 4 an RDMA WRITE (QP fix & 1, size table[(fix >> 1) & 7]);
 *       5 move QP fix & 1 to source port 50000 + fix; 6 poll; 7 set QP
 *       fix & 1's rate to (fix >> 1) x 10 Mbit/s (0: line rate).
 *
 * Checked (abort() on failure): every work request completes exactly once
 * (the last ones flushed by tp_qp_destroy) with its QP and opcode; a
 * successful receive's byte_len fits its buffer and nothing past byte_len
 * was written; guard bytes around every receive buffer, send buffer and the
 * region are untouched, and send buffers are never written; between
 * packets, the QP's own bookkeeping is consistent (PSN order of the send
 * queue, an RDMA WRITE in progress lies inside the region, a SEND in
 * progress inside its buffer, the out-of-order slots and unexpected-message
 * queue add up). Under ASan/UBSan (-Dfuzz=true) any bad access or undefined
 * behaviour aborts too, and LeakSanitizer checks nothing leaks per input.
 * (A failed receive's byte_len is not checked: tp_qp reports the message's
 * length with -EMSGSIZE.)
 *
 * Time: the engine reads the real clock; a clock jump moves every timestamp
 * the QPs (and the port pacer) keep back by the jump, which is what the
 * timers would see had that much time passed. Timers are short (4 ms RTO,
 * 40 ms peer timeout) so a few jumps reach timeouts and give-ups.
 *
 * FUZZ_QP_TRACE=1 prints a line per packet (to check what a seed does),
 * FUZZ_QP_LOG=1 the transport's log (swallowed otherwise, but formatted).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ice_log.h"
#include "ice_time.h"
#include "tp.h"
#include "tp_internal.h"

#define fuzz_check(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_qp: %s:%d: check failed: %s\n", __FILE__, __LINE__,  \
				#cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N_ENGINES    2
#define N_QPS	     2
#define MAX_WRS	     96 /* work requests per input */
#define MAX_RECORDS  256
#define MAX_INJECT   512 /* packets per input, duplicates included */
#define MAX_PROGRESS 64	 /* tp_engine_progress calls per input */
#define MAX_JUMPS    32
#define MAX_MOVES    4
#define GUARD	     32
#define GUARD_BYTE   0xfd
#define FILL_BYTE    0x5a

#define PEER_ADDR     "127.43.0.1"
#define STRANGER_ADDR "127.43.0.9"
#define PEER_PORT     4791
#define PEER_QPN      0x000abc /* + QP index */

enum wr_kind { WR_RECV, WR_SEND, WR_WRITE };

/* A buffer with GUARD bytes either side, filled with a known pattern. */
struct gbuf {
	uint8_t *mem; /* GUARD | len bytes | GUARD */
	size_t len;
};

struct wr {
	enum wr_kind kind;
	int qp;
	struct gbuf b;
	bool done;
	int status;
	uint32_t byte_len;
};

static struct {
	struct tp_engine *e;
	struct tp_engine *eng[N_ENGINES];
	struct tp_qp *qp[N_QPS];
	uint32_t qpn[N_QPS]; /* kept for the completions tp_qp_destroy makes */
	struct tp_mr *mr;
	struct gbuf region;
	struct wr wrs[MAX_WRS];
	int n_wrs;
	int progress_left, jumps_left, moves_left;
	struct sockaddr_in peer, stranger;
} F;

/* Totals over all inputs, for the replay driver's summary. */
static struct {
	unsigned long inputs, packets, wc_ok, wc_err, qp_failed;
} T;

static void log_sink(int level, uint32_t sub, const char *line, void *arg)
{
	(void)level;
	(void)sub;
	(void)line;
	(void)arg; /* formatted (so format bugs show) but not printed */
}

static void engines_init(void)
{
	static const char *addrs[N_ENGINES] = {"127.43.0.2", "127.43.0.3"};

	if (getenv("FUZZ_QP_LOG") == NULL)
		ice_log_set_sink(log_sink, NULL);
	for (int i = 0; i < N_ENGINES; i++) {
		struct tp_engine_cfg c;

		tp_engine_cfg_default(&c);
		inet_pton(AF_INET, addrs[i], &c.addr);
		c.port = 0;
		c.icrc_verify = false;
		c.rx_drop_seed = 1; /* fixed QPN base (and no drops: rx_drop_ppm = 0) */
		c.sock_buf = 1u << 20;
		/* small timers so the clock jumps reach timeouts, give-ups */
		c.retx_timeout_ns = 4 * ICE_NSEC_PER_MSEC;
		c.rto_max_ns = 32 * ICE_NSEC_PER_MSEC;
		c.peer_timeout_ns = 40 * ICE_NSEC_PER_MSEC;
		c.rnr_timer_ns = 2 * ICE_NSEC_PER_MSEC;
		if (i == 0) {
			c.mtu = 256;
			c.window_pkts = 16;
			c.ack_every = 4;
			c.unexp_bytes = 1024;
			c.rnr_retry = 3;
		} else {
			c.mtu = 512;
			c.window_pkts = 64;
			c.ack_every = 1;
			c.unexp_bytes = 8192;
			c.rnr_retry = 0;
			c.line_rate_bps = 20000000; /* 20 Mbit/s: 2 packets, then paced */
		}
		F.eng[i] = tp_engine_new(&c);
		if (F.eng[i] == NULL) {
			fprintf(stderr, "fuzz_qp: cannot make an engine on %s: %s\n", addrs[i],
				strerror(errno));
			abort();
		}
	}
	F.peer.sin_family = AF_INET;
	F.peer.sin_port = htons(PEER_PORT);
	inet_pton(AF_INET, PEER_ADDR, &F.peer.sin_addr);
	F.stranger = F.peer;
	inet_pton(AF_INET, STRANGER_ADDR, &F.stranger.sin_addr);
}

/* ---- guarded buffers ---------------------------------------------------- */

static void gbuf_alloc(struct gbuf *g, size_t len, uint8_t fill)
{
	g->mem = malloc(len + 2 * GUARD);
	fuzz_check(g->mem != NULL);
	g->len = len;
	memset(g->mem, GUARD_BYTE, GUARD);
	memset(g->mem + GUARD, fill, len);
	memset(g->mem + GUARD + len, GUARD_BYTE, GUARD);
}

static uint8_t *gbuf_data(const struct gbuf *g)
{
	return g->mem + GUARD;
}

static bool all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

static void gbuf_check_free(struct gbuf *g)
{
	fuzz_check(all_bytes(g->mem, GUARD, GUARD_BYTE));
	fuzz_check(all_bytes(g->mem + GUARD + g->len, GUARD, GUARD_BYTE));
	free(g->mem);
	g->mem = NULL;
}

/* ---- work requests -------------------------------------------------------- */

static uint32_t mtu(void)
{
	return F.e->cfg.mtu;
}

static size_t size_of(unsigned k)
{
	uint32_t m = mtu();
	size_t t[8] = {0, 1, 4, m - 1, m, m + 1, 2 * (size_t)m, 3 * (size_t)m + 10};

	return t[k & 7];
}

static void post(enum wr_kind kind, int q, size_t len)
{
	struct wr *w;
	int ret;

	if (F.n_wrs == MAX_WRS)
		return;
	w = &F.wrs[F.n_wrs];
	memset(w, 0, sizeof(*w));
	w->kind = kind;
	w->qp = q;
	gbuf_alloc(&w->b, len, FILL_BYTE);
	switch (kind) {
	case WR_RECV:
		ret = tp_qp_post_recv(F.qp[q], gbuf_data(&w->b), len, (uint64_t)F.n_wrs);
		break;
	case WR_SEND:
		ret = tp_qp_post_send(F.qp[q], gbuf_data(&w->b), len, (uint64_t)F.n_wrs);
		break;
	default:
		/* to the peer's memory: any address, its business */
		ret = tp_qp_post_write(F.qp[q], gbuf_data(&w->b), len, 0x7f0000010000ull + len,
				       0x1234, (uint64_t)F.n_wrs);
		break;
	}
	if (ret != 0) {
		/* refused (the QP failed, a queue is full): never completes */
		fuzz_check(ret == -EIO || ret == -EAGAIN);
		gbuf_check_free(&w->b);
		return;
	}
	F.n_wrs++;
}

static void poll_all(void)
{
	struct tp_wc wc[32];
	int n;

	while ((n = tp_engine_poll_cq(F.e, wc, 32)) > 0) {
		for (int i = 0; i < n; i++) {
			struct wr *w;

			fuzz_check(wc[i].wr_id < (uint64_t)F.n_wrs);
			w = &F.wrs[wc[i].wr_id];
			fuzz_check(!w->done); /* completes once */
			w->done = true;
			w->status = wc[i].status;
			w->byte_len = wc[i].byte_len;
			fuzz_check(wc[i].qpn == F.qpn[w->qp]);
			switch (w->kind) {
			case WR_RECV:
				fuzz_check(wc[i].opcode == TP_WC_RECV);
				break;
			case WR_SEND:
				fuzz_check(wc[i].opcode == TP_WC_SEND);
				break;
			case WR_WRITE:
				fuzz_check(wc[i].opcode == TP_WC_WRITE);
				break;
			}
			fuzz_check(wc[i].status == 0 || wc[i].status == -ETIMEDOUT ||
				   wc[i].status == -EMSGSIZE || wc[i].status == -EREMOTEIO ||
				   wc[i].status == -ECANCELED);
			if (wc[i].status == 0) {
				T.wc_ok++;
				if (w->kind == WR_RECV)
					fuzz_check(wc[i].byte_len <= w->b.len);
			} else {
				T.wc_err++;
			}
		}
	}
}

/* ---- the QP's own bookkeeping --------------------------------------------- */

static void check_qp(const struct tp_qp *qp)
{
	const struct tp_engine *e = qp->e;
	uint32_t used = 0;
	size_t ux = 0;

	/* send queue: una <= next <= post, una <= max <= post (PSN order) */
	fuzz_check(qp->sq_tail - qp->sq_head <= TP_SQ_DEPTH);
	fuzz_check(qp->sq_cur - qp->sq_head <= qp->sq_tail - qp->sq_head);
	fuzz_check(tp_psn_diff(qp->una_psn, qp->next_psn) >= 0);
	if (qp->state == TP_QPS_RTS) /* sent up to next_psn, or going back */
		fuzz_check(tp_psn_diff(qp->next_psn, qp->max_psn) >= 0);
	fuzz_check(tp_psn_diff(qp->una_psn, qp->max_psn) >= 0);
	fuzz_check(tp_psn_diff(qp->max_psn, qp->post_psn) >= 0);
	fuzz_check(qp->cwnd >= 1 && qp->cwnd <= e->cfg.window_pkts);
	fuzz_check(qp->sr_tail - qp->sr_head <= TP_SR_DEPTH);
	/* receive side */
	fuzz_check(qp->rq_tail - qp->rq_head <= TP_RQ_DEPTH);
	fuzz_check(qp->ux_tail - qp->ux_head <= TP_UNEXP_MAX);
	for (uint32_t i = qp->ux_head; i != qp->ux_tail; i++) {
		const struct tp_unexp *m = &qp->unexp[i % TP_UNEXP_MAX];

		fuzz_check(m->len <= m->cap);
		ux += m->len;
	}
	fuzz_check(ux == qp->ux_bytes);
	fuzz_check(qp->ux_bytes <= e->cfg.unexp_bytes);
	if (qp->rcv_active && !qp->rcv_staging) {
		fuzz_check(qp->rq_head != qp->rq_tail);
		fuzz_check(qp->rcv_off <= qp->rq[qp->rq_head % TP_RQ_DEPTH].len);
	}
	if (qp->rcv_active && qp->rcv_staging)
		fuzz_check(qp->ux_head != qp->ux_tail);
	fuzz_check(!(qp->rcv_active && qp->wr_active));
	if (qp->wr_active && qp->state == TP_QPS_RTS) {
		/* the rest of an RDMA WRITE lands inside the region */
		uintptr_t lo = (uintptr_t)gbuf_data(&F.region);

		fuzz_check((uintptr_t)qp->wr_ptr >= lo);
		fuzz_check((uintptr_t)qp->wr_ptr <= lo + F.region.len);
		fuzz_check(qp->wr_left <= lo + F.region.len - (uintptr_t)qp->wr_ptr);
	}
	if (qp->ooo != NULL) {
		for (uint32_t i = 0; i < e->cfg.window_pkts; i++) {
			const struct tp_ooo *o = &qp->ooo[i];

			if (!o->used)
				continue;
			used++;
			fuzz_check(o->pkt.bth.psn % e->cfg.window_pkts == i);
			fuzz_check(o->pkt.payload_len <= e->cfg.mtu);
			/* held ahead of the expected PSN, within the window */
			fuzz_check(tp_psn_diff(qp->epsn, o->pkt.bth.psn) >= 0);
			fuzz_check(tp_psn_diff(qp->epsn, o->pkt.bth.psn) <
				   (int32_t)e->cfg.window_pkts);
		}
	}
	fuzz_check(used == qp->ooo_count);
}

static void check_all(void)
{
	for (int q = 0; q < N_QPS; q++)
		check_qp(F.qp[q]);
}

/* ---- the input's records ------------------------------------------------- */

static void progress(void)
{
	if (F.progress_left <= 0)
		return;
	F.progress_left--;
	fuzz_check(tp_engine_progress(F.e, 0) >= 0);
	poll_all();
	check_all();
}

static uint64_t back(uint64_t t, uint64_t d)
{
	return t > d ? t - d : 0;
}

/* Time passes for the QPs: every timestamp they keep moves back by d, as if
 * the clock had jumped d forward (the engine reads the real clock). */
static void clock_jump(uint64_t d)
{
	if (F.jumps_left <= 0)
		return;
	F.jumps_left--;
	for (int q = 0; q < N_QPS; q++) {
		struct tp_qp *qp = F.qp[q];

		qp->progress_ns = back(qp->progress_ns, d);
		qp->last_tx_ns = back(qp->last_tx_ns, d);
		qp->last_ackreq_ns = back(qp->last_ackreq_ns, d);
		qp->alive_ns = back(qp->alive_ns, d);
		qp->heard_ns = back(qp->heard_ns, d);
		qp->nak_ns = back(qp->nak_ns, d);
		qp->rtt_sent_ns = back(qp->rtt_sent_ns, d);
		qp->rnr_until_ns = back(qp->rnr_until_ns, d);
		qp->move_by_ns = back(qp->move_by_ns, d);
		qp->pacer.ns = back(qp->pacer.ns, d);
		qp->rp.last_cut_ns = back(qp->rp.last_cut_ns, d);
		qp->rp.alpha_ns = back(qp->rp.alpha_ns, d);
		qp->rp.timer_ns = back(qp->rp.timer_ns, d);
		qp->np.last_cnp_ns = back(qp->np.last_cnp_ns, d);
	}
	F.e->port_pacer.ns = back(F.e->port_pacer.ns, d);
}

static void command(uint8_t cmd, uint8_t arg)
{
	int q = arg & 1;

	switch (cmd & 7) {
	case 0:
		progress();
		break;
	case 1:
		clock_jump((uint64_t)(arg + 1) * ICE_NSEC_PER_MSEC);
		progress();
		break;
	case 2:
		post(WR_RECV, q, size_of(arg >> 1));
		break;
	case 3:
		post(WR_SEND, q, size_of(arg >> 1));
		break;
	case 4:
		post(WR_WRITE, q, size_of(arg >> 1));
		break;
	case 5:
		if (F.moves_left > 0) {
			F.moves_left--;
			(void)tp_qp_set_sport(F.qp[q], (uint16_t)(50000 + arg));
		}
		break;
	case 6:
		poll_all();
		break;
	default:
		tp_qp_set_rate(F.qp[q], (double)(arg >> 1) * 1e7);
		break;
	}
	check_all();
}

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* Apply the record's fix-ups to the packet's headers (in place). */
static void fix_packet(uint8_t *p, size_t len, const struct tp_qp *qp, uint8_t fix)
{
	if (len < ICE_ROCE_BTH_LEN)
		return;
	if (fix & 0x01)
		put24(p + 5, qp->qpn);
	if (fix & 0x02) {
		uint32_t base = p[0] == TP_OP_ACK ? tp_psn_add(qp->una_psn, TP_PSN_MASK) : qp->epsn;

		put24(p + 9, tp_psn_add(base, (uint32_t)(int32_t)(int8_t)p[11]));
	}
	if (fix & 0x04) {
		p[2] = (uint8_t)(qp->pkey >> 8);
		p[3] = (uint8_t)qp->pkey;
	}
	if (tp_op_has_reth(p[0]) && len >= ICE_ROCE_BTH_LEN + ICE_ROCE_RETH_LEN) {
		uint8_t *reth = p + ICE_ROCE_BTH_LEN;

		if (fix & 0x08)
			put_be(reth + 8, F.mr->rkey, 4);
		if (fix & 0x10) {
			int32_t off = (int32_t)(uint32_t)get_be(reth, 8);

			put_be(reth,
			       (uint64_t)(uintptr_t)gbuf_data(&F.region) + (uint64_t)(int64_t)off,
			       8);
		}
	}
}

/* FUZZ_QP_TRACE=1: one line per packet (to check what a seed does). */
static void trace(const uint8_t *p, size_t len, const struct tp_qp *qp, const uint64_t *drops0)
{
	const struct tp_engine_stats *st = tp_engine_stats(F.e);

	fprintf(stderr, "fuzz_qp: %zu bytes %s", len, len ? tp_op_name(p[0]) : "-");
	if (len >= ICE_ROCE_BTH_LEN + ICE_ROCE_AETH_LEN && p[0] == TP_OP_ACK)
		fprintf(stderr, " (syndrome 0x%02x)", p[ICE_ROCE_BTH_LEN]);
	fprintf(stderr, " PSN %u -> QP 0x%x: epsn %u una %u next %u max %u%s",
		len >= ICE_ROCE_BTH_LEN ? (unsigned)p[9] << 16 | (unsigned)p[10] << 8 | p[11] : 0,
		qp->qpn, qp->epsn, qp->una_psn, qp->next_psn, qp->max_psn,
		qp->state == TP_QPS_ERROR ? " (failed)" : "");
	for (int r = 0; r < TP_DROP_REASON_MAX; r++)
		if (st->drops[r] != drops0[r])
			fprintf(stderr, ": dropped, %s",
				tp_drop_reason_name((enum tp_drop_reason)r));
	fprintf(stderr, "\n");
}

static void inject(const uint8_t *data, size_t len, uint8_t flags, uint8_t fix)
{
	static int tracing = -1;
	const struct tp_qp *qp = F.qp[(flags >> 2) & 1];
	const struct sockaddr_in *from = (flags & 0x08) ? &F.stranger : &F.peer;
	uint64_t drops0[TP_DROP_REASON_MAX];
	uint8_t *fixed, *p;

	if (tracing < 0)
		tracing = getenv("FUZZ_QP_TRACE") != NULL;
	/* what the engine's socket would have truncated (and dropped) */
	if (len > F.e->rx_buf_len)
		return;
	if (flags & 0x40)
		clock_jump(tp_engine_cfg(F.e)->retx_timeout_ns);
	fixed = malloc(len);
	fuzz_check(fixed != NULL);
	memcpy(fixed, data, len);
	fix_packet(fixed, len, qp, fix);
	for (int copies = (flags & 0x10) ? 2 : 1; copies > 0; copies--) {
		/* an exact-size copy, so a sanitizer sees any read past its end */
		p = malloc(len);
		fuzz_check(p != NULL);
		memcpy(p, fixed, len);
		if (tracing)
			memcpy(drops0, tp_engine_stats(F.e)->drops, sizeof(drops0));
		tp_engine_rx_inject(F.e, p, len, from, (uint8_t)(flags & 3));
		if (tracing)
			trace(fixed, len, qp, drops0);
		free(p);
		T.packets++;
		check_all();
	}
	free(fixed);
	if (flags & 0x20)
		progress();
}

/* ---- one input ------------------------------------------------------------ */

static void setup(uint8_t cfg)
{
	bool wrap = cfg & 0x08;
	uint32_t psn = wrap ? 0xfffff8 : 0x10;

	F.e = F.eng[cfg & 1];
	F.n_wrs = 0;
	F.progress_left = MAX_PROGRESS;
	F.jumps_left = MAX_JUMPS;
	F.moves_left = MAX_MOVES;
	fuzz_check(F.e->cq_head == F.e->cq_tail);
	for (int q = 0; q < N_QPS; q++) {
		struct tp_qp_conn c = {
			.raddr = F.peer.sin_addr,
			.rport = PEER_PORT,
			.rqpn = PEER_QPN + (uint32_t)q,
			.sq_psn = psn + 0x100 * (uint32_t)q,
			.rq_psn = psn,
		};

		F.qp[q] = tp_qp_create(F.e);
		fuzz_check(F.qp[q] != NULL);
		F.qpn[q] = tp_qp_num(F.qp[q]);
		fuzz_check(F.qpn[q] == F.e->qpn_base + (uint32_t)q);
		fuzz_check(tp_qp_connect(F.qp[q], &c) == 0);
	}
	/* the region: 3 MTUs and a bit */
	gbuf_alloc(&F.region, 3 * (size_t)mtu() + 7, 0);
	F.mr = tp_mr_reg(F.e, gbuf_data(&F.region), F.region.len);
	fuzz_check(F.mr != NULL && F.mr->rkey == TP_RKEY_BASE);
	if (cfg & 0x02) {
		/* 4 packets, 1, a short one, 2: on QP 0; QP 1 gets one */
		post(WR_RECV, 0, size_of(7));
		post(WR_RECV, 0, size_of(4));
		post(WR_RECV, 0, 16);
		post(WR_RECV, 0, size_of(6));
		post(WR_RECV, 1, size_of(5));
	}
	if (cfg & 0x04) {
		post(WR_SEND, 0, 2 * (size_t)mtu() + 5); /* 3 packets */
		post(WR_WRITE, 0, mtu() + 3);		 /* 2 packets */
		post(WR_SEND, 0, 0);			 /* 1 */
		post(WR_SEND, 1, 10);
		progress();
	}
	check_all();
}

static void teardown(void)
{
	for (int q = 0; q < N_QPS; q++) {
		T.qp_failed += tp_qp_failed(F.qp[q]);
		tp_qp_destroy(F.qp[q]);
		F.qp[q] = NULL;
	}
	fuzz_check(F.e->ack_list == NULL);
	poll_all();
	for (int i = 0; i < F.n_wrs; i++) {
		struct wr *w = &F.wrs[i];

		fuzz_check(w->done); /* every request completed, exactly once */
		if (w->kind == WR_RECV) {
			/* nothing past what the completion reports was written */
			if (w->status == 0)
				fuzz_check(all_bytes(gbuf_data(&w->b) + w->byte_len,
						     w->b.len - w->byte_len, FILL_BYTE));
		} else {
			/* the transport never writes to what it sends */
			fuzz_check(all_bytes(gbuf_data(&w->b), w->b.len, FILL_BYTE));
		}
		gbuf_check_free(&w->b);
	}
	F.n_wrs = 0;
	tp_mr_dereg(F.e, F.mr);
	F.mr = NULL;
	gbuf_check_free(&F.region);
	T.inputs++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t at = 1;
	int records = 0, injected = 0;

	if (F.eng[0] == NULL)
		engines_init();
	if (size < 1)
		return 0;
	setup(data[0]);
	while (at + 4 <= size && records < MAX_RECORDS && injected < MAX_INJECT) {
		size_t len = (size_t)data[at] | (size_t)data[at + 1] << 8;
		uint8_t flags = data[at + 2], fix = data[at + 3];

		at += 4;
		records++;
		if (len == 0) {
			command(flags, fix);
			continue;
		}
		if (len > size - at)
			len = size - at;
		inject(data + at, len, flags, fix);
		injected += (flags & 0x10) ? 2 : 1;
		at += len;
	}
	progress();
	teardown();
	return 0;
}

/* ---- the replay driver's summary (fuzz_main.c) ----------------------------- */

void fuzz_replay_summary(void);

void fuzz_replay_summary(void)
{
	printf("fuzz_qp: %lu inputs, %lu packets injected; completions %lu ok, %lu with an "
	       "error; %lu QPs failed\n",
	       T.inputs, T.packets, T.wc_ok, T.wc_err, T.qp_failed);
	for (int i = 0; i < N_ENGINES; i++) {
		const struct tp_engine_stats *st;

		if (F.eng[i] == NULL)
			continue;
		st = tp_engine_stats(F.eng[i]);
		printf("fuzz_qp: engine %d (MTU %u): ack_rx %llu nak_rx %llu rnr_nak_rx %llu "
		       "cnp_rx %llu ack_tx %llu nak_tx %llu rnr_nak_tx %llu cnp_tx %llu "
		       "timeouts %llu retx %llu; dropped:",
		       i, tp_engine_cfg(F.eng[i])->mtu, (unsigned long long)st->ack_rx,
		       (unsigned long long)st->nak_rx, (unsigned long long)st->rnr_nak_rx,
		       (unsigned long long)st->cnp_rx, (unsigned long long)st->ack_tx,
		       (unsigned long long)st->nak_tx, (unsigned long long)st->rnr_nak_tx,
		       (unsigned long long)st->cnp_tx, (unsigned long long)st->timeouts,
		       (unsigned long long)st->retx_pkts);
		for (int r = 0; r < TP_DROP_REASON_MAX; r++)
			if (st->drops[r] != 0)
				printf(" %s %llu", tp_drop_reason_name((enum tp_drop_reason)r),
				       (unsigned long long)st->drops[r]);
		printf("\n");
	}
}
