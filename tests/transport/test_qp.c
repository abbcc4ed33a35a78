// SPDX-License-Identifier: Apache-2.0
/*
 * Reliable-connected QPs over real UDP sockets on loopback: two engines in
 * one process (127.40.0.1 and 127.40.0.2, ephemeral ports so tests can run in
 * parallel), driven in turn. Loss is injected with the engine's receive-drop
 * knob; malformed packets are crafted with a plain UDP socket.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include <cmocka.h>

#include "ice_log.h"
#include "ice_time.h"
#include "tp.h"

struct pair {
	struct tp_engine *a, *b;
	struct tp_qp *qa, *qb;
};

static void addr(struct in_addr *in, int host)
{
	char s[32];

	snprintf(s, sizeof(s), "127.40.0.%d", host);
	inet_pton(AF_INET, s, in);
}

/* b's engine from b_base (NULL: base's) */
static void pair_open2(struct pair *p, const struct tp_engine_cfg *base,
		       const struct tp_engine_cfg *b_base, uint32_t psn_a, uint32_t psn_b)
{
	struct tp_engine_cfg ca = *base, cb = b_base != NULL ? *b_base : *base;
	struct tp_qp_conn c = {0};

	addr(&ca.addr, 1);
	addr(&cb.addr, 2);
	ca.port = cb.port = 0;
	p->a = tp_engine_new(&ca);
	p->b = tp_engine_new(&cb);
	assert_non_null(p->a);
	assert_non_null(p->b);
	p->qa = tp_qp_create(p->a);
	p->qb = tp_qp_create(p->b);
	assert_non_null(p->qa);
	assert_non_null(p->qb);
	c.raddr = cb.addr;
	c.rport = tp_engine_port(p->b);
	c.rqpn = tp_qp_num(p->qb);
	c.sq_psn = psn_a;
	c.rq_psn = psn_b;
	assert_int_equal(tp_qp_connect(p->qa, &c), 0);
	c.raddr = ca.addr;
	c.rport = tp_engine_port(p->a);
	c.rqpn = tp_qp_num(p->qa);
	c.sq_psn = psn_b;
	c.rq_psn = psn_a;
	assert_int_equal(tp_qp_connect(p->qb, &c), 0);
}

static void pair_open(struct pair *p, const struct tp_engine_cfg *base, uint32_t psn_a,
		      uint32_t psn_b)
{
	pair_open2(p, base, NULL, psn_a, psn_b);
}

static void pair_close(struct pair *p)
{
	tp_engine_free(p->a);
	tp_engine_free(p->b);
}

static void cfg_base(struct tp_engine_cfg *c)
{
	tp_engine_cfg_default(c);
	c->retx_timeout_ns = 2 * ICE_NSEC_PER_MSEC;
}

/* Drive both engines until `want` completions arrived on e (or time out). */
static int run_until(struct pair *p, struct tp_engine *e, struct tp_wc *wc, int want,
		     uint64_t timeout_ns)
{
	uint64_t end = ice_now_ns() + timeout_ns;
	int got = 0;

	while (got < want && ice_now_ns() < end) {
		tp_engine_progress(p->a, 0);
		tp_engine_progress(p->b, 0);
		got += tp_engine_poll_cq(e, wc + got, want - got);
	}
	return got;
}

static void fill_pattern(uint8_t *b, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)((i * 131 + seed * 7 + (i >> 8)) & 0xff);
}

/* Send messages of the given sizes a->b and check every byte and completion. */
static void transfer(struct pair *p, const size_t *sizes, int n)
{
	uint8_t **tx = calloc((size_t)n, sizeof(*tx)), **rx = calloc((size_t)n, sizeof(*rx));
	struct tp_wc wc[64];

	assert_true(n <= 64);
	for (int i = 0; i < n; i++) {
		tx[i] = malloc(sizes[i] + 1);
		rx[i] = calloc(1, sizes[i] + 1);
		fill_pattern(tx[i], sizes[i], (uint32_t)i);
		assert_int_equal(tp_qp_post_recv(p->qb, rx[i], sizes[i], 100 + (uint64_t)i), 0);
		assert_int_equal(tp_qp_post_send(p->qa, tx[i], sizes[i], (uint64_t)i), 0);
	}
	assert_int_equal(run_until(p, p->b, wc, n, 20 * ICE_NSEC_PER_SEC), n);
	for (int i = 0; i < n; i++) {
		assert_int_equal(wc[i].status, 0);
		assert_int_equal(wc[i].opcode, TP_WC_RECV);
		assert_int_equal(wc[i].wr_id, 100 + (uint64_t)i); /* in order */
		assert_int_equal(wc[i].byte_len, sizes[i]);
		assert_memory_equal(rx[i], tx[i], sizes[i]);
	}
	assert_int_equal(run_until(p, p->a, wc, n, 20 * ICE_NSEC_PER_SEC), n);
	for (int i = 0; i < n; i++) {
		assert_int_equal(wc[i].status, 0);
		assert_int_equal(wc[i].opcode, TP_WC_SEND);
		assert_int_equal(wc[i].wr_id, (uint64_t)i);
	}
	for (int i = 0; i < n; i++) {
		free(tx[i]);
		free(rx[i]);
	}
	free(tx);
	free(rx);
}

static void test_send_sizes(void **state)
{
	static const size_t sizes[] = {0, 1, 3, 4, 1023, 4095, 4096, 4097, 8192, 65537, 1 << 20};
	struct tp_engine_cfg c;
	struct pair p;

	(void)state;
	cfg_base(&c);
	pair_open(&p, &c, 100, 200);
	transfer(&p, sizes, (int)(sizeof(sizes) / sizeof(sizes[0])));
	/* nothing was lost on loopback: no resends, nothing dropped */
	assert_int_equal(tp_qp_stats(p.qa)->retx_pkts, 0);
	assert_int_equal(tp_engine_stats(p.b)->drops[TP_DROP_BAD_ICRC], 0);
	pair_close(&p);
}

/* The RoCE MTU from the interface's: the largest whose packets (IPv4, UDP,
 * BTH + RETH, ICRC: 60 bytes around the payload) fit, as a NIC's active MTU
 * follows its netdev's; a job lowers it to its smallest rank's. */
static void test_mtu_auto(void **state)
{
	struct tp_engine_cfg c;
	struct tp_engine *e;

	(void)state;
	assert_int_equal(tp_roce_mtu_fit(1500), 1024);
	assert_int_equal(tp_roce_mtu_fit(9000), 4096);
	assert_int_equal(tp_roce_mtu_fit(4156), 4096);
	assert_int_equal(tp_roce_mtu_fit(4155), 2048);
	assert_int_equal(tp_roce_mtu_fit(316), 256);
	assert_int_equal(tp_roce_mtu_fit(315), 0);
	cfg_base(&c);
	c.mtu = 0; /* 127.0.0.1: lo, MTU 65536 */
	e = tp_engine_new(&c);
	assert_non_null(e);
	assert_int_equal(tp_engine_cfg(e)->mtu, 4096);
	assert_int_equal(tp_engine_set_path_mtu(e, 8192), -EINVAL);
	assert_int_equal(tp_engine_set_path_mtu(e, 1000), -EINVAL);
	assert_int_equal(tp_engine_set_path_mtu(e, 1024), 0);
	assert_int_equal(tp_engine_set_path_mtu(e, 2048), -EINVAL); /* never raised */
	assert_int_equal(tp_engine_cfg(e)->mtu, 1024);
	tp_engine_free(e);
	c.mtu = 3000;
	errno = 0;
	assert_null(tp_engine_new(&c));
	assert_int_equal(errno, EINVAL);
}

static void test_psn_wrap(void **state)
{
	static const size_t sizes[] = {300000, 300000};
	struct tp_engine_cfg c;
	struct pair p;

	(void)state;
	cfg_base(&c);
	c.mtu = 1024;
	/* ~600 packets starting 100 below the 24-bit wrap */
	pair_open(&p, &c, 0xffffff - 100, 0xfffff0);
	transfer(&p, sizes, 2);
	assert_true(tp_qp_stats(p.qb)->rx_pkts >= 580);
	pair_close(&p);
}

static void test_loss_data_and_acks(void **state)
{
	static const size_t sizes[] = {1 << 20, 12345, 1 << 19, 77, 4096 * 33};
	struct tp_engine_cfg c;
	struct pair p;

	(void)state;
	cfg_base(&c);
	c.mtu = 1024;
	c.retx_timeout_ns = ICE_NSEC_PER_MSEC;
	c.rx_drop_ppm = 30000; /* 3 % of data (at b) and of ACKs (at a) */
	c.rx_drop_seed = 12345;
	pair_open(&p, &c, 5, 9);
	transfer(&p, sizes, 5);
	assert_true(tp_qp_stats(p.qa)->retx_pkts > 0);
	/* out-of-order arrivals were NAKed; duplicates re-ACKed */
	assert_true(tp_engine_stats(p.b)->nak_tx > 0);
	pair_close(&p);
}

static void test_duplication_and_reordering(void **state)
{
	static const size_t sizes[] = {1 << 20, 3, 200000, 4096 * 7 + 1};
	struct tp_engine_cfg c;
	struct pair p;

	(void)state;
	cfg_base(&c);
	c.mtu = 1024;
	c.rx_dup_ppm = 50000;	  /* 5 % of packets arrive twice */
	c.rx_reorder_ppm = 50000; /* 5 % swap places with the next one */
	c.rx_drop_seed = 99;
	pair_open(&p, &c, 0xfffff0, 0x10);
	transfer(&p, sizes, 4);
	assert_true(tp_engine_stats(p.b)->drops[TP_DROP_DUPLICATE] > 0);
	/* reordered packets are held and placed, not dropped and resent */
	assert_true(tp_qp_stats(p.qb)->ooo_held > 0);
	pair_close(&p);
}

static void test_sport_change_midstream(void **state)
{
	struct tp_engine_cfg c;
	struct pair p;
	size_t len = 4u << 20;
	uint8_t *tx = malloc(len), *rx = calloc(1, len);
	struct tp_wc wc[2];
	uint16_t old;
	int got = 0;

	(void)state;
	cfg_base(&c);
	pair_open(&p, &c, 1, 2);
	old = tp_qp_sport(p.qa);
	assert_true(old >= 49152);
	fill_pattern(tx, len, 3);
	assert_int_equal(tp_qp_post_recv(p.qb, rx, len, 1), 0);
	assert_int_equal(tp_qp_post_send(p.qa, tx, len, 2), 0);
	/* move the QP to another port while its packets are in flight */
	for (int i = 0; i < 20; i++) {
		tp_engine_progress(p.a, 0);
		tp_engine_progress(p.b, 0);
	}
	assert_int_equal(tp_qp_set_sport(p.qa, (uint16_t)(old == 60000 ? 60001 : 60000)), 0);
	got = run_until(&p, p.b, wc, 1, 20 * ICE_NSEC_PER_SEC);
	assert_int_equal(got, 1);
	assert_int_equal(wc[0].status, 0);
	assert_memory_equal(rx, tx, len);
	/* the move waited for the old path to drain: made, and it cost no
	 * resend (nothing reordered) */
	assert_int_not_equal(tp_qp_sport(p.qa), old);
	assert_int_equal(tp_qp_stats(p.qa)->sport_changes, 1);
	assert_int_equal(tp_qp_stats(p.qa)->moves_deferred, 1);
	assert_int_equal(tp_qp_stats(p.qa)->retx_by[TP_RETX_MOVE], 0);
	assert_int_equal(tp_qp_stats(p.qa)->retx_pkts, 0);
	assert_int_equal(tp_qp_set_sport(p.qa, 0), -EINVAL);
	free(tx);
	free(rx);
	pair_close(&p);
}

/* A move whose old path does not drain (here: the peer stops answering for
 * a while) is made anyway, one retransmission timer after the request, and
 * the data still arrives whole. */
static void test_sport_change_forced(void **state)
{
	struct tp_engine_cfg c;
	struct pair p;
	size_t len = 1u << 20;
	uint8_t *tx = malloc(len), *rx = calloc(1, len);
	struct tp_wc wc[1];
	uint16_t old, want;
	uint64_t t0;

	(void)state;
	cfg_base(&c);
	c.retx_timeout_ns = 20 * ICE_NSEC_PER_MSEC;
	pair_open(&p, &c, 1, 2);
	old = tp_qp_sport(p.qa);
	want = (uint16_t)(old == 60000 ? 60001 : 60000);
	fill_pattern(tx, len, 5);
	assert_int_equal(tp_qp_post_recv(p.qb, rx, len, 1), 0);
	assert_int_equal(tp_qp_post_send(p.qa, tx, len, 2), 0);
	for (int i = 0; i < 5; i++)
		tp_engine_progress(p.a, 0); /* packets out, b not running: no ACK */
	assert_int_equal(tp_qp_set_sport(p.qa, want), 0);
	assert_int_equal(tp_qp_sport(p.qa), old); /* waits for the old path */
	assert_int_equal(tp_qp_stats(p.qa)->moves_deferred, 1);
	t0 = ice_now_ns();
	while (tp_qp_sport(p.qa) == old && ice_now_ns() - t0 < ICE_NSEC_PER_SEC)
		tp_engine_progress(p.a, 100 * ICE_NSEC_PER_USEC);
	assert_int_equal(tp_qp_sport(p.qa), want);
	assert_true(ice_now_ns() - t0 >= 15 * ICE_NSEC_PER_MSEC); /* a timer's worth */
	assert_true(ice_now_ns() - t0 < 200 * ICE_NSEC_PER_MSEC);
	assert_int_equal(run_until(&p, p.b, wc, 1, 10 * ICE_NSEC_PER_SEC), 1);
	assert_int_equal(wc[0].status, 0);
	assert_memory_equal(rx, tx, len);
	free(tx);
	free(rx);
	pair_close(&p);
}

static void test_unexpected_then_posted(void **state)
{
	struct tp_engine_cfg c;
	struct pair p;
	uint8_t tx[3][10000], rx[3][10000];
	struct tp_wc wc[3];

	(void)state;
	cfg_base(&c);
	pair_open(&p, &c, 7, 8);
	for (int i = 0; i < 3; i++) {
		fill_pattern(tx[i], sizeof(tx[i]), (uint32_t)i + 10);
		assert_int_equal(tp_qp_post_send(p.qa, tx[i], sizeof(tx[i]), (uint64_t)i), 0);
	}
	/* all three arrive before any receive is posted: kept, and ACKed */
	assert_int_equal(run_until(&p, p.a, wc, 3, 5 * ICE_NSEC_PER_SEC), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(tp_qp_post_recv(p.qb, rx[i], sizeof(rx[i]), 50 + (uint64_t)i), 0);
	}
	/* the completions are queued: progress does not sleep on the socket */
	{
		uint64_t t0 = ice_now_ns();

		tp_engine_progress(p.b, 200 * ICE_NSEC_PER_MSEC);
		assert_true(ice_now_ns() - t0 < 100 * ICE_NSEC_PER_MSEC);
	}
	assert_int_equal(tp_engine_poll_cq(p.b, wc, 3), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, 50 + (uint64_t)i);
		assert_int_equal(wc[i].byte_len, sizeof(tx[i]));
		assert_memory_equal(rx[i], tx[i], sizeof(tx[i]));
	}
	pair_close(&p);
}

static void test_rnr_when_staging_full(void **state)
{
	struct tp_engine_cfg c;
	struct pair p;
	size_t len = 256 * 1024;
	uint8_t *tx = malloc(len), *rx = calloc(1, len);
	struct tp_wc wc[1];

	(void)state;
	cfg_base(&c);
	c.unexp_bytes = 16 * 1024; /* far less than the message */
	c.rnr_timer_ns = 200 * ICE_NSEC_PER_USEC;
	pair_open(&p, &c, 1, 1);
	fill_pattern(tx, len, 5);
	assert_int_equal(tp_qp_post_send(p.qa, tx, len, 1), 0);
	for (int i = 0; i < 200; i++) {
		tp_engine_progress(p.a, 0);
		tp_engine_progress(p.b, 0);
	}
	assert_true(tp_qp_stats(p.qa)->rnr_rx > 0);
	assert_int_equal(tp_qp_post_recv(p.qb, rx, len, 9), 0);
	assert_int_equal(run_until(&p, p.b, wc, 1, 10 * ICE_NSEC_PER_SEC), 1);
	assert_int_equal(wc[0].status, 0);
	assert_memory_equal(rx, tx, len);
	free(tx);
	free(rx);
	pair_close(&p);
}

static void test_rdma_write(void **state)
{
	struct tp_engine_cfg c;
	struct pair p;
	uint8_t src[20000], dst[30000];
	struct tp_mr *mr;
	struct tp_wc wc[1];

	(void)state;
	cfg_base(&c);
	pair_open(&p, &c, 3, 4);
	memset(dst, 0xee, sizeof(dst));
	fill_pattern(src, sizeof(src), 1);
	mr = tp_mr_reg(p.b, dst, sizeof(dst));
	assert_non_null(mr);
	assert_int_equal(
		tp_qp_post_write(p.qa, src, sizeof(src), (uintptr_t)dst + 1000, mr->rkey, 5), 0);
	assert_int_equal(run_until(&p, p.a, wc, 1, 5 * ICE_NSEC_PER_SEC), 1);
	assert_int_equal(wc[0].status, 0);
	assert_int_equal(wc[0].opcode, TP_WC_WRITE);
	assert_memory_equal(dst + 1000, src, sizeof(src));
	assert_int_equal(dst[999], 0xee);
	assert_int_equal(dst[1000 + sizeof(src)], 0xee);
	/* outside the region: the responder refuses, the requester fails */
	assert_int_equal(
		tp_qp_post_write(p.qa, src, sizeof(src), (uintptr_t)dst + 20000, mr->rkey, 6), 0);
	assert_int_equal(run_until(&p, p.a, wc, 1, 5 * ICE_NSEC_PER_SEC), 1);
	assert_int_equal(wc[0].status, -EREMOTEIO);
	assert_true(tp_qp_failed(p.qa));
	assert_int_equal(dst[sizeof(dst) - 1], 0xee);
	tp_mr_dereg(p.b, mr);
	pair_close(&p);
}

/* a QP that gives up fast: a 1 ms timer backed off to 20 ms at most */
static void cfg_give_up(struct tp_engine_cfg *c, uint64_t peer_timeout_ms)
{
	cfg_base(c);
	c->retx_timeout_ns = ICE_NSEC_PER_MSEC;
	c->rto_max_ns = 20 * ICE_NSEC_PER_MSEC;
	c->peer_timeout_ns = peer_timeout_ms * ICE_NSEC_PER_MSEC;
}

static void test_peer_gone(void **state)
{
	struct tp_engine_cfg c;
	struct pair p;
	uint8_t buf[8192] = {0};
	struct tp_wc wc[1];
	uint64_t t0;

	(void)state;
	cfg_give_up(&c, 200);
	pair_open(&p, &c, 1, 1);
	tp_engine_free(p.b);
	p.b = NULL;
	assert_int_equal(tp_qp_post_send(p.qa, buf, sizeof(buf), 77), 0);
	t0 = ice_now_ns();
	while (tp_engine_poll_cq(p.a, wc, 1) == 0 && ice_now_ns() - t0 < 5 * ICE_NSEC_PER_SEC)
		tp_engine_progress(p.a, 100 * ICE_NSEC_PER_USEC);
	assert_int_equal(wc[0].wr_id, 77);
	assert_int_equal(wc[0].status, -ETIMEDOUT);
	assert_true(tp_qp_failed(p.qa));
	/* the budget is time: failed after peer_timeout of silence, at the
	 * first timeout after it (at most rto_max later) */
	print_message("peer gone: failed after %.0f ms\n", (double)(ice_now_ns() - t0) / 1e6);
	assert_true(ice_now_ns() - t0 >= 200 * ICE_NSEC_PER_MSEC);
	assert_true(ice_now_ns() - t0 < 400 * ICE_NSEC_PER_MSEC);
	assert_true(tp_qp_stats(p.qa)->timeouts > 3);
	assert_int_equal(tp_qp_post_send(p.qa, buf, 1, 78), -EIO);
	tp_engine_free(p.a);
}

static char fail_line[512];

static void fail_sink(int level, uint32_t sub, const char *line, void *arg)
{
	(void)level;
	(void)sub;
	(void)arg;
	if (strstr(line, "failed") != NULL)
		snprintf(fail_line, sizeof(fail_line), "%s", line);
}

/*
 * Why a QP gave up. A peer whose packets keep coming while ours go
 * unacknowledged is alive and the path drops what we send (mode 0: b
 * drops everything it receives, and keeps resending its own message to
 * a); a peer gone silent is named so, with the time since its last
 * packet: one never heard (1), and one heard just after a's send began
 * and then cut off (2: b's message arrives whole, then b is gone).
 */
static void test_give_up_reason(void **state)
{
	struct tp_engine_cfg c, deaf;
	struct pair p;
	uint8_t buf[4096] = {0}, rbuf[4096];
	struct tp_wc wc[1];
	uint64_t t0;

	(void)state;
	cfg_give_up(&c, 300);
	deaf = c;
	deaf.rx_drop_ppm = 1000000;
	ice_log_set_sink(fail_sink, NULL);
	for (int mode = 0; mode < 3; mode++) {
		static const char *const name[] = {"deaf", "gone", "cut"};

		fail_line[0] = '\0';
		pair_open2(&p, &c, mode == 1 ? NULL : &deaf, 1, 1);
		if (mode == 1) {
			tp_engine_free(p.b);
			p.b = NULL;
		}
		assert_int_equal(tp_qp_post_send(p.qa, buf, sizeof(buf), 7), 0);
		if (mode != 1) {
			assert_int_equal(tp_qp_post_recv(p.qa, rbuf, sizeof(rbuf), 5), 0);
			assert_int_equal(tp_qp_post_send(p.qb, buf, sizeof(buf), 6), 0);
		}
		if (mode == 2) {
			assert_int_equal(run_until(&p, p.a, wc, 1, ICE_NSEC_PER_SEC), 1);
			assert_int_equal(wc[0].wr_id, 5);
			tp_engine_free(p.b);
			p.b = NULL;
		}
		t0 = ice_now_ns();
		while (!tp_qp_failed(p.qa) && ice_now_ns() - t0 < 5 * ICE_NSEC_PER_SEC) {
			tp_engine_progress(p.a, 100 * ICE_NSEC_PER_USEC);
			if (p.b != NULL)
				tp_engine_progress(p.b, 0);
			while (tp_engine_poll_cq(p.a, wc, 1) > 0)
				;
		}
		print_message("%s: %s\n", name[mode], fail_line);
		assert_true(tp_qp_failed(p.qa));
		assert_non_null(strstr(fail_line, mode == 0 ? "although the peer is alive"
							    : "the peer has been silent"));
		tp_engine_free(p.a);
		if (p.b != NULL)
			tp_engine_free(p.b);
	}
	ice_log_set_sink(NULL, NULL);
}

/* A QP idle for longer than the give-up budget is not given up on when it
 * sends again: the budget counts from when it started waiting. */
static void test_idle_then_send(void **state)
{
	struct tp_engine_cfg c;
	struct pair p;
	static const size_t sizes[] = {9000};
	struct timespec d = {.tv_nsec = 300 * 1000 * 1000};

	(void)state;
	cfg_base(&c);
	c.rto_max_ns = 20 * ICE_NSEC_PER_MSEC;
	c.peer_timeout_ns = 200 * ICE_NSEC_PER_MSEC;
	pair_open(&p, &c, 1, 1);
	transfer(&p, sizes, 1);
	nanosleep(&d, NULL); /* idle past peer_timeout */
	transfer(&p, sizes, 1);
	assert_false(tp_qp_failed(p.qa));
	pair_close(&p);
}

/* Send raw UDP payloads to engine b from address `from_host`. */
static void raw_send(struct pair *p, int from_host, uint8_t tos, const uint8_t *buf, size_t len)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(tp_engine_port(p->b))};
	int fd = socket(AF_INET, SOCK_DGRAM, 0), t = tos;

	assert_true(fd >= 0);
	addr(&sa.sin_addr, from_host);
	addr(&to.sin_addr, 2);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(setsockopt(fd, IPPROTO_IP, IP_TOS, &t, sizeof(t)), 0);
	assert_int_equal(sendto(fd, buf, len, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)len);
	close(fd);
}

static void pump(struct pair *p, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		tp_engine_progress(p->a, 0);
		tp_engine_progress(p->b, 50 * ICE_NSEC_PER_USEC);
	}
}

static void test_bad_packets_counted(void **state)
{
	struct tp_engine_cfg c;
	struct pair p;
	struct tp_bth bth = {.opcode = TP_OP_SEND_ONLY, .pkey = 0xffff, .psn = 0};
	struct tp_icrc_addr ia = {0};
	const struct tp_engine_stats *st;
	uint8_t pkt[256], payload[16] = {1, 2, 3};
	int len;

	(void)state;
	cfg_base(&c);
	pair_open(&p, &c, 1, 1);
	st = tp_engine_stats(p.b);
	/* the ICRC is over addresses the raw socket cannot reproduce exactly
	 * (its source port is ephemeral), so verification is off for the
	 * reasons that come after it; a separate packet checks ICRC itself */
	bth.dest_qp = tp_qp_num(p.qb);
	len = tp_pkt_build(pkt, sizeof(pkt), &bth, NULL, NULL, payload, sizeof(payload), &ia);
	assert_true(len > 0);
	raw_send(&p, 1, 0, pkt, (size_t)len); /* bad ICRC (wrong addresses) */
	raw_send(&p, 1, 0, pkt, 5);	      /* truncated */
	pump(&p, 20);
	assert_int_equal(st->drops[TP_DROP_BAD_ICRC], 1);
	assert_int_equal(st->drops[TP_DROP_TRUNCATED], 1);
	pair_close(&p);

	c.icrc_verify = false;
	pair_open(&p, &c, 1, 1);
	st = tp_engine_stats(p.b);
	bth.dest_qp = tp_qp_num(p.qb) + 1000; /* no such QP */
	len = tp_pkt_build(pkt, sizeof(pkt), &bth, NULL, NULL, payload, sizeof(payload), &ia);
	raw_send(&p, 1, 0, pkt, (size_t)len);
	bth.dest_qp = tp_qp_num(p.qb);
	bth.pkey = 0x1234; /* wrong partition */
	len = tp_pkt_build(pkt, sizeof(pkt), &bth, NULL, NULL, payload, sizeof(payload), &ia);
	raw_send(&p, 1, 0, pkt, (size_t)len);
	bth.pkey = 0xffff;
	len = tp_pkt_build(pkt, sizeof(pkt), &bth, NULL, NULL, payload, sizeof(payload), &ia);
	raw_send(&p, 3, 0, pkt, (size_t)len); /* from a stranger's address */
	pkt[0] = 0x1f;			      /* reserved opcode */
	raw_send(&p, 1, 0, pkt, (size_t)len);
	pump(&p, 20);
	assert_int_equal(st->drops[TP_DROP_UNKNOWN_QP], 1);
	assert_int_equal(st->drops[TP_DROP_BAD_PKEY], 1);
	assert_int_equal(st->drops[TP_DROP_WRONG_PEER], 1);
	assert_int_equal(st->drops[TP_DROP_BAD_OPCODE], 1);
	/* none of it hurt the QP: a real transfer still works */
	{
		static const size_t sizes[] = {5000};

		transfer(&p, sizes, 1);
	}
	pair_close(&p);
}

/* The two packets a review found reaching memory unchecked (issue 14). Each
 * comes from the peer's own address with a valid QPN, so only the receive
 * path's own checks stand between it and the heap. */
static void test_forged_packets_refused(void **state)
{
	struct tp_engine_cfg c;
	struct pair p;
	struct tp_bth bth = {.pkey = 0xffff};
	struct tp_reth reth = {0};
	struct tp_icrc_addr ia = {0};
	const struct tp_engine_stats *st;
	uint8_t *pkt, *payload, dst[8192];
	struct tp_mr *mr;
	size_t cap;
	int len;

	(void)state;
	cfg_base(&c);
	c.icrc_verify = false; /* the raw socket's source port is ephemeral */
	pair_open(&p, &c, 1, 1);
	st = tp_engine_stats(p.b);
	cap = c.mtu + 256;
	pkt = calloc(1, cap);
	payload = calloc(1, cap);
	assert_non_null(pkt);
	assert_non_null(payload);

	/* 1. A SEND_MIDDLE a little ahead of the expected PSN (1), landing in
	 * the last out-of-order slot, with 64 bytes more than the MTU: it
	 * fits the receive buffer (MTU + 128) and used to be copied whole
	 * into an MTU-sized slot, past the end of the allocation. */
	bth.opcode = TP_OP_SEND_MIDDLE;
	bth.dest_qp = tp_qp_num(p.qb);
	bth.psn = c.window_pkts - 1; /* slot window - 1, 510 ahead of PSN 1 */
	memset(payload, 0xa5, c.mtu + 64);
	len = tp_pkt_build(pkt, cap, &bth, NULL, NULL, payload, c.mtu + 64, &ia);
	assert_true(len > 0);
	raw_send(&p, 1, 0, pkt, (size_t)len);
	pump(&p, 20);
	assert_int_equal(st->drops[TP_DROP_BAD_LENGTH], 1);
	assert_int_equal(tp_qp_stats(p.qb)->ooo_held, 0);
	/* a MIDDLE shorter than the MTU is refused the same way */
	len = tp_pkt_build(pkt, cap, &bth, NULL, NULL, payload, 64, &ia);
	raw_send(&p, 1, 0, pkt, (size_t)len);
	pump(&p, 20);
	assert_int_equal(st->drops[TP_DROP_BAD_LENGTH], 2);
	assert_int_equal(tp_qp_stats(p.qb)->ooo_held, 0);

	/* 2. An RDMA WRITE at the expected PSN whose va + dma_len wraps past
	 * 2^64: the old check (va + len > end) passed and the payload went to
	 * an address near the top of memory. Refused with a NAK that the
	 * requester, having sent nothing, ignores. */
	mr = tp_mr_reg(p.b, dst, sizeof(dst));
	assert_non_null(mr);
	bth.opcode = TP_OP_WRITE_ONLY;
	bth.psn = 1;
	reth.rkey = mr->rkey;
	reth.va = UINT64_MAX - 1000;
	reth.dma_len = 4096;
	len = tp_pkt_build(pkt, cap, &bth, &reth, NULL, payload, 16, &ia);
	assert_true(len > 0);
	raw_send(&p, 1, 0, pkt, (size_t)len);
	/* and one that starts inside the region and runs past its end */
	reth.va = (uintptr_t)dst + sizeof(dst) - 8;
	reth.dma_len = 16;
	len = tp_pkt_build(pkt, cap, &bth, &reth, NULL, payload, 16, &ia);
	raw_send(&p, 1, 0, pkt, (size_t)len);
	pump(&p, 20);
	assert_int_equal(st->drops[TP_DROP_BAD_ACCESS], 2);
	assert_true(tp_engine_stats(p.a)->drops[TP_DROP_BAD_ACK] >= 1);

	/* 3. A LAST with no FIRST: out of sequence, counted, not fatal. */
	bth.opcode = TP_OP_SEND_LAST;
	len = tp_pkt_build(pkt, cap, &bth, NULL, NULL, payload, 16, &ia);
	raw_send(&p, 1, 0, pkt, (size_t)len);
	pump(&p, 20);
	assert_int_equal(st->drops[TP_DROP_BAD_SEQUENCE], 1);

	/* neither side failed, and both directions still carry data */
	assert_false(tp_qp_failed(p.qa));
	assert_false(tp_qp_failed(p.qb));
	{
		static const size_t sizes[] = {3 * 4096 + 100, 5000};

		transfer(&p, sizes, 2);
	}
	tp_mr_dereg(p.b, mr);
	free(pkt);
	free(payload);
	pair_close(&p);
}

static void test_ce_mark_cuts_rate(void **state)
{
	struct tp_engine_cfg c;
	struct pair p;
	struct tp_bth bth = {.opcode = TP_OP_SEND_ONLY, .pkey = 0xffff, .psn = 0x100};
	struct tp_icrc_addr ia = {0};
	uint8_t pkt[128];
	int len;

	(void)state;
	cfg_base(&c);
	c.icrc_verify = false;
	c.line_rate_bps = 10000000000ull; /* 10 Gbit/s */
	c.dcqcn.rp_time_reset = 5000000;  /* no timer increase during the test */
	pair_open(&p, &c, 1, 1);
	assert_true(tp_qp_rate(p.qa) > 9.9e9);
	/* a CE-marked packet for b's QP, from a's address: b is the
	 * notification point and must send a CNP to a's QP */
	bth.dest_qp = tp_qp_num(p.qb);
	len = tp_pkt_build(pkt, sizeof(pkt), &bth, NULL, NULL, NULL, 0, &ia);
	raw_send(&p, 1, 0x03, pkt, (size_t)len);
	pump(&p, 20);
	assert_int_equal(tp_qp_stats(p.qb)->ce_rx, 1);
	assert_int_equal(tp_qp_stats(p.qb)->cnps_tx, 1);
	assert_int_equal(tp_qp_stats(p.qa)->cnps_rx, 1);
	assert_int_equal(tp_qp_rp(p.qa)->cuts, 1);
	/* alpha = 1023/1024 at the first CNP: the rate about halves */
	assert_true(tp_qp_rate(p.qa) < 5.1e9);
	assert_true(tp_qp_rate(p.qa) > 4.9e9);
	pair_close(&p);
}

/* Send len bytes from a to b over a fresh pair with config c: the data
 * arrives intact; returns the time from post to the receiver's completion
 * and leaves the sender's counters in *st. */
static uint64_t paced_transfer(const struct tp_engine_cfg *c, size_t len, struct tp_qp_stats *st)
{
	uint8_t *tx = malloc(len), *rx = malloc(len);
	struct tp_wc wc[1];
	struct pair p;
	uint64_t t0, dt;

	assert_non_null(tx);
	assert_non_null(rx);
	pair_open(&p, c, 1, 1);
	fill_pattern(tx, len, 5);
	assert_int_equal(tp_qp_post_recv(p.qb, rx, len, 1), 0);
	t0 = ice_now_ns();
	assert_int_equal(tp_qp_post_send(p.qa, tx, len, 1), 0);
	assert_int_equal(run_until(&p, p.b, wc, 1, 5 * ICE_NSEC_PER_SEC), 1);
	dt = ice_now_ns() - t0;
	assert_int_equal(wc[0].status, 0);
	assert_memory_equal(rx, tx, len);
	assert_int_equal(run_until(&p, p.a, wc, 1, 5 * ICE_NSEC_PER_SEC), 1);
	*st = *tp_qp_stats(p.qa);
	free(tx);
	free(rx);
	pair_close(&p);
	return dt;
}

static void test_pacing_holds_rate(void **state)
{
	struct tp_engine_cfg c;
	struct tp_qp_stats st;
	size_t len = 2u << 20;
	double mbps;

	(void)state;
	cfg_base(&c);
	c.line_rate_bps = 200000000ull; /* 200 Mbit/s */
	mbps = (double)len * 8 / ((double)paced_transfer(&c, len, &st) * 1e-9) / 1e6;
	print_message("paced goodput %.1f Mbit/s (line rate 200)\n", mbps);
	/* payload share of 200 Mbit/s at MTU 4096 is 197; the burst allowance
	 * lets the first 200 us go a little faster */
	/* never faster than the line rate; how close it gets is measured by
	 * tools/bench-transport, not asserted (it depends on free CPU) */
	assert_true(mbps < 205);
}

/* A QP paced far below the rate at which ack_every packets fit in one
 * retransmission timeout still hears from its peer in time: no timeout, no
 * resend (before, every 32-packet stretch at 20 Mbit/s, 53 ms, ran past the
 * 16 ms RTO and went back). */
static void test_paced_no_spurious_timeout(void **state)
{
	struct tp_engine_cfg c;
	struct tp_qp_stats st;

	(void)state;
	cfg_base(&c);
	/* 50 ms, not the suite's 2 ms: what this checks is that pacing (a packet
	 * every 1.7 ms) never trips the timer; a loaded box stalled this thread
	 * for over 16 ms (load average 20, two cores), and that timeout was real */
	c.retx_timeout_ns = 50 * ICE_NSEC_PER_MSEC;
	c.line_rate_bps = 20000000ull; /* 20 Mbit/s: a 4 KiB packet every 1.7 ms */
	paced_transfer(&c, 256u << 10, &st);
	print_message("timeouts %llu, resent %llu\n", (unsigned long long)st.timeouts,
		      (unsigned long long)st.retx_pkts);
	assert_int_equal(st.timeouts, 0);
	assert_int_equal(st.retx_pkts, 0);
}

/* tp_engine_wake() from another thread ends a long wait at once. */
static void *waker(void *arg)
{
	struct timespec d = {.tv_nsec = 50 * 1000 * 1000};

	nanosleep(&d, NULL);
	tp_engine_wake(arg);
	return NULL;
}

static void test_engine_wake(void **state)
{
	struct tp_engine_cfg cfg;
	struct tp_engine *e;
	pthread_t th;
	uint64_t t0, dt;

	tp_engine_cfg_default(&cfg);
	addr(&cfg.addr, 3);
	cfg.port = 0;
	e = tp_engine_new(&cfg);
	assert_non_null(e);
	assert_int_equal(pthread_create(&th, NULL, waker, e), 0);
	t0 = ice_now_ns();
	assert_int_equal(tp_engine_progress(e, 5 * ICE_NSEC_PER_SEC), 0);
	dt = ice_now_ns() - t0;
	pthread_join(th, NULL);
	assert_true(dt >= 40 * ICE_NSEC_PER_MSEC && dt < 2 * ICE_NSEC_PER_SEC);
	/* the wake-up was consumed: the next wait lasts its time */
	t0 = ice_now_ns();
	assert_int_equal(tp_engine_progress(e, 30 * ICE_NSEC_PER_MSEC), 0);
	assert_true(ice_now_ns() - t0 >= 25 * ICE_NSEC_PER_MSEC);
	tp_engine_free(e);
}

/* A QP whose QPNs give the engine's own (ephemeral) port as its source
 * port takes the next one: the engine's socket does not share its port, so
 * the connect would fail (seen once in test_coll, rank 3's engine on 50689) */
static void test_sport_not_own_port(void **state)
{
	struct tp_engine_cfg cfg;
	struct tp_qp_conn c = {.rport = 4791};
	struct tp_engine *e;
	struct tp_qp *qp;
	uint16_t own;

	(void)state;
	tp_engine_cfg_default(&cfg);
	addr(&cfg.addr, 4);
	cfg.port = ICE_ROCE_SPORT_MIN + 4242;
	e = tp_engine_new(&cfg);
	assert_non_null(e);
	own = tp_engine_port(e);
	qp = tp_qp_create(e);
	assert_non_null(qp);
	addr(&c.raddr, 5);
	for (c.rqpn = 1; c.rqpn <= TP_QPN_MASK; c.rqpn++)
		if (ice_roce_flow_label_to_udp_sport(
			    ice_roce_calc_flow_label(tp_qp_num(qp), c.rqpn)) == own)
			break;
	assert_true(c.rqpn <= TP_QPN_MASK);
	assert_int_equal(tp_qp_connect(qp, &c), 0);
	assert_int_equal(tp_qp_sport(qp), own ^ 1);
	tp_engine_free(e);
}

/* UDP GSO and GRO (cfg.gso): the same bytes and completions whether both
 * sides, one or neither use it, odd sizes (pad) and RDMA WRITEs (a first
 * packet longer by its RETH) included; runs of packets went as one message
 * and came back coalesced; losses are resent through the same path. */
static void test_gso(void **state)
{
	static const size_t sizes[] = {1, 4097, 65537, 100003, 1 << 20};
	static const int both[][2] = {{1, 1}, {1, 0}, {0, 1}};
	uint8_t src[70001], dst[70001];
	struct tp_engine_cfg c;
	struct tp_wc wc[1];
	struct pair p;

	(void)state;
	fill_pattern(src, sizeof(src), 9);
	for (int k = 0; k < 3; k++) {
		struct tp_engine_cfg ca, cb;
		struct tp_qp_conn cn = {0};
		struct tp_mr *mr;

		cfg_base(&ca);
		cb = ca;
		ca.gso = both[k][0];
		cb.gso = both[k][1];
		addr(&ca.addr, 1);
		addr(&cb.addr, 2);
		ca.port = cb.port = 0;
		p.a = tp_engine_new(&ca);
		p.b = tp_engine_new(&cb);
		assert_non_null(p.a);
		assert_non_null(p.b);
		p.qa = tp_qp_create(p.a);
		p.qb = tp_qp_create(p.b);
		cn.raddr = cb.addr;
		cn.rport = tp_engine_port(p.b);
		cn.rqpn = tp_qp_num(p.qb);
		assert_int_equal(tp_qp_connect(p.qa, &cn), 0);
		cn.raddr = ca.addr;
		cn.rport = tp_engine_port(p.a);
		cn.rqpn = tp_qp_num(p.qa);
		assert_int_equal(tp_qp_connect(p.qb, &cn), 0);
		transfer(&p, sizes, (int)(sizeof(sizes) / sizeof(sizes[0])));
		memset(dst, 0, sizeof(dst));
		mr = tp_mr_reg(p.b, dst, sizeof(dst));
		assert_non_null(mr);
		assert_int_equal(
			tp_qp_post_write(p.qa, src, sizeof(src), (uintptr_t)dst, mr->rkey, 7), 0);
		assert_int_equal(run_until(&p, p.a, wc, 1, 5 * ICE_NSEC_PER_SEC), 1);
		assert_int_equal(wc[0].status, 0);
		assert_memory_equal(dst, src, sizeof(src));
		tp_mr_dereg(p.b, mr);
		assert_int_equal(tp_engine_stats(p.b)->drops[TP_DROP_BAD_ICRC], 0);
		assert_int_equal(tp_engine_stats(p.b)->drops[TP_DROP_BAD_LENGTH], 0);
		/* GSO messages when a sends with it; coalesced reads only when
		 * b reads with GRO from a sender that coalesced */
		assert_true((tp_engine_stats(p.a)->gso_tx > 0) == (bool)ca.gso);
		assert_true((tp_engine_stats(p.b)->gro_rx > 0) == (ca.gso && cb.gso));
		assert_true(tp_engine_stats(p.a)->tx_pkts > 2 * tp_engine_stats(p.a)->gso_tx);
		pair_close(&p);
	}
	/* losses: resends go in GSO runs as well */
	cfg_base(&c);
	c.gso = true;
	c.rx_drop_ppm = 20000;
	c.rx_drop_seed = 5;
	pair_open(&p, &c, 1, 2);
	transfer(&p, sizes, (int)(sizeof(sizes) / sizeof(sizes[0])));
	assert_true(tp_qp_stats(p.qa)->retx_pkts > 0);
	pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_sizes),
		cmocka_unit_test(test_engine_wake),
		cmocka_unit_test(test_mtu_auto),
		cmocka_unit_test(test_psn_wrap),
		cmocka_unit_test(test_loss_data_and_acks),
		cmocka_unit_test(test_duplication_and_reordering),
		cmocka_unit_test(test_sport_change_midstream),
		cmocka_unit_test(test_sport_change_forced),
		cmocka_unit_test(test_unexpected_then_posted),
		cmocka_unit_test(test_rnr_when_staging_full),
		cmocka_unit_test(test_rdma_write),
		cmocka_unit_test(test_gso),
		cmocka_unit_test(test_peer_gone),
		cmocka_unit_test(test_give_up_reason),
		cmocka_unit_test(test_idle_then_send),
		cmocka_unit_test(test_bad_packets_counted),
		cmocka_unit_test(test_forged_packets_refused),
		cmocka_unit_test(test_ce_mark_cuts_rate),
		cmocka_unit_test(test_pacing_holds_rate),
		cmocka_unit_test(test_paced_no_spurious_timeout),
		cmocka_unit_test(test_sport_not_own_port),
	};

	ice_log_set_level(ICE_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
