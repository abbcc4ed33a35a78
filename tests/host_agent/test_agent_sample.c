// SPDX-License-Identifier: Apache-2.0
/* ice-agent's QP join (BPF directions x QP table) and per-interval rates. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent.h"
#include "agent_internal.h"
#include "ice_host.h"

#define IP(a, b, c, d) htonl((uint32_t)(a) << 24 | (b) << 16 | (c) << 8 | (d))

static const struct agent_qp *find(const struct agent_sample *s, uint32_t kind, uint32_t qpn)
{
	for (size_t i = 0; i < s->nqp; i++)
		if (s->qp[i].id.kind == kind && s->qp[i].id.qpn == qpn)
			return &s->qp[i];
	return NULL;
}

static void test_join(void **state)
{
	struct agent_qpinfo qps[] = {
		{.qpn = 17,
		 .rqpn = 33,
		 .local_ip = IP(10, 0, 0, 1),
		 .remote_ip = IP(10, 0, 0, 2),
		 .sport = 49152,
		 .src = AGENT_SRC_CTRL,
		 .pid = 42,
		 .tp = {.tx_bytes = 999, .rx_bytes = 499}},
		{.qpn = 18,
		 .rqpn = 34,
		 .local_ip = IP(10, 0, 0, 1),
		 .remote_ip = IP(10, 0, 0, 2),
		 .src = AGENT_SRC_CTRL,
		 .tp = {.tx_bytes = 7, .tx_pkts = 1, .retx = 1}},
		/* the verbs hook announces 17 too: one record */
		{.qpn = 17,
		 .rqpn = 33,
		 .local_ip = IP(10, 0, 0, 1),
		 .remote_ip = IP(10, 0, 0, 2),
		 .src = AGENT_SRC_EV},
	};
	struct agent_flow flows[] = {
		/* egress of QP 17: keyed by the remote QPN 33 */
		{.local_ip = IP(10, 0, 0, 1),
		 .remote_ip = IP(10, 0, 0, 2),
		 .qpn = 33,
		 .dir = ICE_DIR_EGRESS,
		 .sport = 50000,
		 .pkts = 10,
		 .bytes = 1000,
		 .cnp = 2,
		 .naks = 1,
		 .retx = 3},
		/* ingress of QP 17: keyed by the local QPN 17 */
		{.local_ip = IP(10, 0, 0, 1),
		 .remote_ip = IP(10, 0, 0, 2),
		 .qpn = 17,
		 .dir = ICE_DIR_INGRESS,
		 .pkts = 5,
		 .bytes = 500,
		 .ce = 4,
		 .cnp = 6,
		 .naks = 2},
		/* a flow nobody announced */
		{.local_ip = IP(10, 0, 0, 1),
		 .remote_ip = IP(10, 0, 0, 3),
		 .qpn = 99,
		 .dir = ICE_DIR_EGRESS,
		 .pkts = 1,
		 .bytes = 100},
		/* same numbers, other direction: QPN 33 as a local QPN is unknown */
		{.local_ip = IP(10, 0, 0, 1),
		 .remote_ip = IP(10, 0, 0, 2),
		 .qpn = 33,
		 .dir = ICE_DIR_INGRESS,
		 .pkts = 1,
		 .bytes = 64},
	};
	struct agent_sample s;
	const struct agent_qp *q;
	char name[64];

	agent_sample_init(&s);
	assert_int_equal(agent_join(&s, qps, 3, flows, 4), 0);
	assert_int_equal(s.nqp, 4);
	/* sorted: QPs, then tx flows, then rx flows */
	for (size_t i = 1; i < s.nqp; i++)
		assert_true(agent_qp_id_cmp(&s.qp[i - 1].id, &s.qp[i].id) < 0);

	q = find(&s, AGENT_QP, 17);
	assert_non_null(q);
	assert_int_equal(q->src, AGENT_SRC_CTRL | AGENT_SRC_EV | AGENT_SRC_BPF);
	assert_int_equal(q->rqpn, 33);
	assert_int_equal(q->pid, 42);
	assert_int_equal(q->sport, 50000); /* what the wire shows wins */
	/* BPF numbers replace the transport's; the transport's stay aside */
	assert_int_equal(q->c.tx_bytes, 1000);
	assert_int_equal(q->c.tx_pkts, 10);
	assert_int_equal(q->c.cnp_tx, 2);
	assert_int_equal(q->c.nak_tx, 1);
	assert_int_equal(q->c.retx, 3);
	assert_int_equal(q->c.rx_bytes, 500);
	assert_int_equal(q->c.rx_pkts, 5);
	assert_int_equal(q->c.ce, 4);
	assert_int_equal(q->c.cnp_rx, 6);
	assert_int_equal(q->c.nak_rx, 2);
	assert_int_equal(q->tp.tx_bytes, 999);
	assert_string_equal(agent_qp_name(q, name, sizeof(name)), "10.0.0.1:17");

	q = find(&s, AGENT_QP, 18);
	assert_non_null(q);
	assert_int_equal(q->src, AGENT_SRC_CTRL);
	assert_int_equal(q->c.tx_bytes, 7); /* no flow: the transport's counters */
	assert_int_equal(q->c.retx, 1);

	q = find(&s, AGENT_FLOW_TX, 99);
	assert_non_null(q);
	assert_int_equal(q->src, AGENT_SRC_BPF);
	assert_int_equal(q->c.tx_bytes, 100);
	assert_string_equal(agent_qp_name(q, name, sizeof(name)), "10.0.0.1>10.0.0.3:tx:99");
	q = find(&s, AGENT_FLOW_RX, 33);
	assert_non_null(q);
	assert_int_equal(q->c.rx_bytes, 64);
	assert_string_equal(agent_qp_name(q, name, sizeof(name)), "10.0.0.1>10.0.0.2:rx:33");
	agent_sample_fini(&s);
}

static void test_join_empty(void **state)
{
	struct agent_sample s;
	struct agent_flow f = {.local_ip = 1, .remote_ip = 2, .qpn = 3, .dir = ICE_DIR_INGRESS};

	agent_sample_init(&s);
	assert_int_equal(agent_join(&s, NULL, 0, NULL, 0), 0);
	assert_int_equal(s.nqp, 0);
	assert_int_equal(agent_join(&s, NULL, 0, &f, 1), 0);
	assert_int_equal(s.nqp, 1);
	assert_int_equal(s.qp[0].id.kind, AGENT_FLOW_RX);
	agent_sample_fini(&s);
}

static void mk(struct agent_sample *s, uint64_t t_ns, const struct agent_qpinfo *q, size_t n)
{
	agent_sample_init(s);
	s->mono_ns = t_ns;
	assert_int_equal(agent_join(s, q, n, NULL, 0), 0);
}

static void test_rates(void **state)
{
	struct agent_qpinfo a[] = {
		{.qpn = 1,
		 .local_ip = 1,
		 .src = AGENT_SRC_CTRL,
		 .tp = {.tx_bytes = 1000, .rx_bytes = 100, .tx_pkts = 10, .ce = 5, .cnp_rx = 7}},
		{.qpn = 2, .local_ip = 1, .src = AGENT_SRC_CTRL, .tp = {.tx_bytes = 5000}},
	};
	struct agent_qpinfo b[] = {
		{.qpn = 1,
		 .local_ip = 1,
		 .src = AGENT_SRC_CTRL,
		 .tp = {.tx_bytes = 3000, .rx_bytes = 600, .tx_pkts = 30, .ce = 6, .cnp_rx = 9}},
		/* QP 2's slot was reused: its counters restarted */
		{.qpn = 2, .local_ip = 1, .src = AGENT_SRC_CTRL, .tp = {.tx_bytes = 400}},
		/* QP 3 appeared since the previous sample */
		{.qpn = 3, .local_ip = 1, .src = AGENT_SRC_CTRL, .tp = {.tx_bytes = 50, .retx = 2}},
	};
	struct agent_sample p, c;
	const struct agent_qp *q;

	mk(&p, 1000000000ull, a, 2);
	agent_rates(&p, NULL); /* the first sample: no rates */
	assert_false(p.nic_has_rate);
	assert_false(p.qp[0].has_rate);
	assert_int_equal(p.nic.tx_bytes, 6000);
	assert_int_equal(p.nic_qps, 2);

	mk(&c, 1500000000ull, b, 3); /* 0.5 s later */
	agent_rates(&c, &p);
	assert_true(c.dt > 0.4999 && c.dt < 0.5001);
	q = find(&c, AGENT_QP, 1);
	assert_true(q->has_rate);
	assert_float_equal(q->r.tx_bytes, 4000.0, 1e-6);
	assert_float_equal(q->r.rx_bytes, 1000.0, 1e-6);
	assert_float_equal(q->r.tx_pkts, 40.0, 1e-6);
	assert_float_equal(q->r.ce, 2.0, 1e-6);
	assert_float_equal(q->r.cnp_rx, 4.0, 1e-6);
	assert_float_equal(q->r.retx, 0.0, 1e-6);
	q = find(&c, AGENT_QP, 2);
	assert_float_equal(q->r.tx_bytes, 800.0, 1e-6); /* from 0, not negative */
	q = find(&c, AGENT_QP, 3);
	assert_float_equal(q->r.tx_bytes, 100.0, 1e-6);
	assert_float_equal(q->r.retx, 4.0, 1e-6);
	/* the NIC: sums */
	assert_true(c.nic_has_rate);
	assert_int_equal(c.nic.tx_bytes, 3450);
	assert_float_equal(c.nic_r.tx_bytes, 4900.0, 1e-6);
	assert_int_equal(c.nic_qps, 3);
	assert_int_equal(c.nic_flows, 0);

	/* same time: no rate rather than a division by zero */
	c.mono_ns = p.mono_ns;
	agent_rates(&c, &p);
	assert_false(c.nic_has_rate);
	assert_false(c.qp[0].has_rate);
	agent_sample_fini(&p);
	agent_sample_fini(&c);
}

static void test_events_bounded(void **state)
{
	struct agent_sample s;
	struct ice_event ev = {.kind = ICE_EV_COLL_START};
	int ok = 0, over = 0;

	agent_sample_init(&s);
	for (int i = 0; i < 300; i++) {
		ev.seq = (uint64_t)i;
		if (agent_sample_add_event(&s, &ev, 200) == 0)
			ok++;
		else
			over++;
	}
	assert_int_equal(ok, 200);
	assert_int_equal(over, 100);
	assert_int_equal(s.ev[199].seq, 199);
	agent_sample_clear(&s);
	assert_int_equal(s.nev, 0);
	assert_int_equal(agent_sample_add_event(&s, &ev, 200), 0);
	agent_sample_fini(&s);
}

static void test_json(void **state)
{
	struct agent_qpinfo a = {.qpn = 5,
				 .rqpn = 6,
				 .local_ip = IP(10, 1, 0, 1),
				 .remote_ip = IP(10, 1, 0, 2),
				 .src = AGENT_SRC_CTRL};
	struct ice_event ev = {
		.kind = ICE_EV_COLL_START, .op = ICE_OP_ALLGATHER, .bytes = 4096, .lib = "ice-tp"};
	struct agent_cfg cfg;
	struct agent_sample s;
	char *txt;

	agent_cfg_defaults(&cfg);
	snprintf(cfg.nic, sizeof(cfg.nic), "eth0");
	snprintf(cfg.host, sizeof(cfg.host), "h1");
	mk(&s, 1, &a, 1);
	agent_sample_add_event(&s, &ev, 10);
	agent_rates(&s, NULL);
	txt = agent_sample_json(&s, &cfg, 0);
	assert_non_null(txt);
	assert_non_null(strstr(txt, "\"id\": \"10.1.0.1:5\""));
	assert_non_null(strstr(txt, "\"rqpn\": 6"));
	assert_non_null(strstr(txt, "\"op\": \"allgather\""));
	assert_non_null(strstr(txt, "\"lib\": \"ice-tp\""));
	assert_non_null(strstr(txt, "\"rate\": null"));
	free(txt);
	agent_sample_fini(&s);
}

/* /metrics has per-QP series for the busiest metrics_qps QPs only (a bounded
 * label set), counts the others, and keeps them in the NIC totals. */
static void test_metrics_bounded(void **state)
{
	struct agent_qpinfo a[5];
	struct agent_self self = {0};
	struct agent_cfg cfg;
	struct agent_sample s;
	char *txt, *p, want[96];
	int series = 0;

	(void)state;
	agent_cfg_defaults(&cfg);
	assert_int_equal(cfg.metrics_qps, 64);
	cfg.metrics_qps = 2;
	snprintf(cfg.nic, sizeof(cfg.nic), "eth0");
	snprintf(cfg.host, sizeof(cfg.host), "h1");
	for (int i = 0; i < 5; i++)
		a[i] = (struct agent_qpinfo){.qpn = 10u + (uint32_t)i,
					     .rqpn = 20,
					     .local_ip = IP(10, 1, 0, 1),
					     .remote_ip = IP(10, 1, 0, 2),
					     .src = AGENT_SRC_CTRL};
	mk(&s, 1, a, 5);
	agent_rates(&s, NULL);
	s.qp[1].r.tx_bytes = 5e6; /* the busiest two: QPNs 11 and 13 */
	s.qp[3].r.rx_bytes = 7e6;
	s.qp[0].r.tx_bytes = 1e3;
	txt = agent_metrics_text(&s, &cfg, &self);
	assert_non_null(txt);
	assert_non_null(
		strstr(txt, "ice_qp_tx_bytes_total{host=\"h1\",nic=\"eth0\",qp=\"10.1.0.1:11\"}"));
	assert_non_null(
		strstr(txt, "ice_qp_tx_bytes_total{host=\"h1\",nic=\"eth0\",qp=\"10.1.0.1:13\"}"));
	assert_null(strstr(txt, "qp=\"10.1.0.1:10\""));
	assert_null(strstr(txt, "qp=\"10.1.0.1:12\""));
	assert_null(strstr(txt, "qp=\"10.1.0.1:14\""));
	for (p = txt; (p = strstr(p, "\nice_qp_tx_bytes_total{")) != NULL; p++)
		series++;
	assert_int_equal(series, 2);
	snprintf(want, sizeof(want), "ice_qp_series_omitted{host=\"h1\",nic=\"eth0\"} 3\n");
	assert_non_null(strstr(txt, want));
	assert_non_null(strstr(txt, "ice_nic_qps{host=\"h1\",nic=\"eth0\"}"));
	free(txt);
	agent_sample_fini(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join),  cmocka_unit_test(test_join_empty),
		cmocka_unit_test(test_rates), cmocka_unit_test(test_events_bounded),
		cmocka_unit_test(test_json),  cmocka_unit_test(test_metrics_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
