// SPDX-License-Identifier: Apache-2.0
/*
 * The transport and the host agent's side channels: the shared-memory
 * control block (QPs announce themselves; the agent moves a QP's source port,
 * sets its rate and DCQCN parameters) and the collective event socket. This
 * test plays the agent with the same common/ calls ice-agent uses.
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
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "ice_ctrl.h"
#include "ice_event.h"
#include "ice_log.h"
#include "ice_time.h"
#include "tp.h"

#define ADDR_A "127.42.0.1"
#define ADDR_B "127.42.0.2"

static void pump(struct tp_engine *a, struct tp_engine *b, int n)
{
	for (int i = 0; i < n; i++) {
		tp_engine_progress(a, 0);
		tp_engine_progress(b, 0);
	}
}

static void connect_pair(struct tp_engine *a, struct tp_engine *b, struct tp_qp **qa,
			 struct tp_qp **qb)
{
	struct tp_qp_conn c = {0};

	*qa = tp_qp_create(a);
	*qb = tp_qp_create(b);
	inet_pton(AF_INET, ADDR_B, &c.raddr);
	c.rport = tp_engine_port(b);
	c.rqpn = tp_qp_num(*qb);
	assert_int_equal(tp_qp_connect(*qa, &c), 0);
	inet_pton(AF_INET, ADDR_A, &c.raddr);
	c.rport = tp_engine_port(a);
	c.rqpn = tp_qp_num(*qa);
	assert_int_equal(tp_qp_connect(*qb, &c), 0);
}

static struct tp_engine *engine(const char *addr)
{
	struct tp_engine_cfg cfg;

	tp_engine_cfg_default(&cfg);
	inet_pton(AF_INET, addr, &cfg.addr);
	cfg.port = 0;
	cfg.line_rate_bps = 10000000000ull;
	return tp_engine_new(&cfg);
}

static void test_control_block(void **state)
{
	struct ice_ctrl *ctl = ice_ctrl_create(ADDR_A, NULL);
	struct tp_engine *a, *b;
	struct tp_qp *qa, *qb;
	struct ice_dcqcn_params p;
	struct ice_ctrl_qp *q;
	uint8_t buf[100000], rbuf[100000];
	struct tp_wc wc;
	int slot;

	(void)state;
	assert_non_null(ctl);
	a = engine(ADDR_A);
	b = engine(ADDR_B);
	assert_non_null(a);
	assert_non_null(b);
	connect_pair(a, b, &qa, &qb);

	/* the QP announced itself */
	slot = ice_ctrl_find(ctl, tp_qp_num(qa));
	assert_true(slot >= 0);
	q = &ctl->qp[slot];
	assert_int_equal(q->rqpn, tp_qp_num(qb));
	assert_int_equal(q->sport_now, tp_qp_sport(qa));
	assert_int_equal(q->remote_ip, inet_addr(ADDR_B));

	/* the agent steers it: new port, planned rate, DCQCN parameters */
	ice_dcqcn_params_default(&p);
	p.rp_ai_rate = 7;
	ice_ctrl_set(ctl, slot, ICE_CTRL_SET_SPORT | ICE_CTRL_SET_RATE | ICE_CTRL_SET_DCQCN, 60123,
		     100, &p, 42);
	pump(a, b, 2);
	assert_int_equal(tp_qp_sport(qa), 60123);
	assert_int_equal(q->sport_now, 60123);
	assert_int_equal(tp_qp_dcqcn_params(qa)->rp_ai_rate, 7);
	assert_true(tp_qp_rate(qa) > 99e6 && tp_qp_rate(qa) < 101e6);
	assert_int_equal(q->applied_epoch, 42);
	assert_int_equal(q->applied_seq, q->seq);

	/* the same plan republished (a new epoch, same rate) leaves the rate
	 * DCQCN has moved to since; a new planned rate is applied */
	tp_qp_set_rate(qa, 40e6); /* stands for a DCQCN cut */
	ice_ctrl_set(ctl, slot, ICE_CTRL_SET_SPORT | ICE_CTRL_SET_RATE | ICE_CTRL_SET_DCQCN, 60123,
		     100, &p, 42);
	pump(a, b, 2);
	assert_true(tp_qp_rate(qa) > 39e6 && tp_qp_rate(qa) < 41e6);
	ice_ctrl_set(ctl, slot, ICE_CTRL_SET_SPORT | ICE_CTRL_SET_RATE | ICE_CTRL_SET_DCQCN, 60123,
		     80, &p, 42);
	pump(a, b, 2);
	assert_true(tp_qp_rate(qa) > 79e6 && tp_qp_rate(qa) < 81e6);
	ice_ctrl_set(ctl, slot, ICE_CTRL_SET_SPORT | ICE_CTRL_SET_RATE | ICE_CTRL_SET_DCQCN, 60123,
		     100, &p, 42);
	pump(a, b, 2);

	/* out-of-range parameters are refused; the QP keeps the old ones (a
	 * control write is the QP's whole plan: what it leaves out reverts) */
	p.rp_gd = 99;
	ice_ctrl_set(ctl, slot, ICE_CTRL_SET_SPORT | ICE_CTRL_SET_RATE | ICE_CTRL_SET_DCQCN, 60123,
		     100, &p, 43);
	pump(a, b, 2);
	assert_int_equal(tp_qp_dcqcn_params(qa)->rp_gd, 11);
	assert_int_equal(tp_qp_dcqcn_params(qa)->rp_ai_rate, 7);

	/* the plan expires: the agent clears the slot, the QP is plain again */
	{
		uint16_t planned = tp_qp_sport(qa);

		ice_ctrl_set(ctl, slot, 0, 0, 0, NULL, 44);
		pump(a, b, 2);
		assert_int_not_equal(tp_qp_sport(qa), planned);
		assert_int_equal(tp_qp_sport(qa),
				 ice_roce_flow_label_to_udp_sport(
					 ice_roce_calc_flow_label(tp_qp_num(qa), tp_qp_num(qb))));
		assert_int_equal(tp_qp_dcqcn_params(qa)->rp_ai_rate, 5);
		assert_true(tp_qp_rate(qa) > 9.9e9);
		ice_ctrl_set(ctl, slot, ICE_CTRL_SET_SPORT, planned, 0, NULL, 45);
		pump(a, b, 2);
		assert_int_equal(tp_qp_sport(qa), planned);
	}

	/* traffic still flows, on the planned port, and the counters show up */
	memset(buf, 3, sizeof(buf));
	assert_int_equal(tp_qp_post_recv(qb, rbuf, sizeof(rbuf), 1), 0);
	assert_int_equal(tp_qp_post_send(qa, buf, sizeof(buf), 2), 0);
	for (uint64_t end = ice_now_ns() + 5 * ICE_NSEC_PER_SEC;
	     tp_engine_poll_cq(b, &wc, 1) == 0 && ice_now_ns() < end;)
		pump(a, b, 1);
	assert_memory_equal(rbuf, buf, sizeof(buf));
	ice_sleep_ns(11 * ICE_NSEC_PER_MSEC);
	pump(a, b, 2);
	assert_true(q->tx_bytes >= sizeof(buf));

	/* a destroyed QP gives its slot back */
	{
		uint32_t qpn = tp_qp_num(qa);

		tp_qp_destroy(qa);
		assert_int_equal(ice_ctrl_find(ctl, qpn), -ENOENT);
		assert_int_equal(q->qpn, 0);
	}
	tp_engine_free(a);
	tp_engine_free(b);
	ice_ctrl_close(ctl);
	ice_ctrl_unlink(ADDR_A);
}

static void test_events(void **state)
{
	char path[] = "/tmp/ice-test-ev-XXXXXX";
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct tp_comm_cfg cc;
	struct tp_comm *c;
	struct ice_event ev;
	float x[16] = {1};
	int fd, kinds[8], n = 0;

	(void)state;
	assert_non_null(mkdtemp(path));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/agent.sock", path);
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setenv("ICE_AGENT_SOCK", sa.sun_path, 1);

	tp_comm_cfg_default(&cc);
	inet_pton(AF_INET, ADDR_A, &cc.eng.addr);
	cc.eng.port = 0;
	c = tp_comm_init(&cc);
	assert_non_null(c);
	assert_int_equal(tp_allreduce(c, x, x, 16, DEV_FLOAT32, DEV_MAX), 0);
	tp_comm_free(c);
	while (n < 8 && recv(fd, &ev, sizeof(ev), MSG_DONTWAIT) == (ssize_t)sizeof(ev)) {
		assert_int_equal(ev.magic, ICE_EVENT_MAGIC);
		assert_string_equal(ev.lib, "ice-tp");
		if (ev.kind == ICE_EV_COLL_START) {
			assert_int_equal(ev.op, ICE_OP_ALLREDUCE);
			assert_int_equal(ev.count, 16);
			assert_int_equal(ev.bytes, 64);
			assert_int_equal(ev.dtype, 7); /* ncclFloat32 */
			assert_int_equal(ev.redop, 2); /* ncclMax */
		}
		kinds[n++] = ev.kind;
	}
	assert_int_equal(n, 4);
	assert_int_equal(kinds[0], ICE_EV_COMM_INIT);
	assert_int_equal(kinds[1], ICE_EV_COLL_START);
	assert_int_equal(kinds[2], ICE_EV_COLL_END);
	assert_int_equal(kinds[3], ICE_EV_COMM_DESTROY);
	unsetenv("ICE_AGENT_SOCK");
	close(fd);
	unlink(sa.sun_path);
	rmdir(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_control_block),
		cmocka_unit_test(test_events),
	};

	ice_log_set_level(ICE_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
