// SPDX-License-Identifier: Apache-2.0
/*
 * ice-controller's daemon: configuration errors (file:line, key, what was
 * expected), flags over the file, and the daemon-level pure logic: plan
 * diffing (publish only on a change), the ring order of an announced
 * collective from each rank's next, and the planner options of a plan.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "ctl_daemon.h"
#include "ice_time.h"

static char dir[] = "/tmp/ice-ctld-cfg-XXXXXX";

static const char *write_file(const char *name, const char *text)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static int setup(void **state)
{
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_good_file(void **state)
{
	const char *p = write_file("good.yaml", "fabric: lab\n"
						"topology: /etc/ice/topo.yaml\n"
						"redis: 10.0.0.1:6379\n"
						"key: /etc/ice/plan.key\n"
						"interval: 50\n"
						"lease_ttl: 1500ms\n"
						"lifetime: 20s\n"
						"hysteresis: 0.1\n"
						"min_rate: 10mbit\n"
						"telem_interval: 200\n"
						"move_hold: 4\n");
	struct ctld_cfg c;
	struct ice_cfg_err err;

	ctld_cfg_defaults(&c);
	assert_int_equal(ctld_cfg_load_file(&c, p, &err), 0);
	assert_int_equal(ctld_cfg_set_flag(&c, "lease-ttl", "2s", &err), 0);
	assert_int_equal(ctld_cfg_finish(&c, p, &err), 0);
	assert_string_equal(c.fabric, "lab");
	assert_true(c.interval == 50 * ICE_NSEC_PER_MSEC);
	assert_true(c.lease_ttl == 2 * ICE_NSEC_PER_SEC);
	assert_true(c.lifetime == 20 * ICE_NSEC_PER_SEC);
	assert_true(c.min_rate == 10000000);
	assert_true(c.telem_interval == 200 * ICE_NSEC_PER_MSEC);
	assert_true(c.move_hold == 4);
	assert_true(c.feedback); /* the default */
	assert_int_equal(ctld_cfg_set_flag(&c, "feedback", "false", &err), 0);
	assert_false(c.feedback);
	assert_true(c.id[0] != '\0'); /* <host>-<pid> */
}

/* each case: file text, the key the error names, a piece of its message, line */
static void test_errors(void **state)
{
	static const struct {
		const char *yaml, *key, *msg;
		int line;
	} cases[] = {
		{"redis: x:1\nkey: k\n", "topology", "missing", 0},
		{"topology: t\n", "key", "missing", 0},
		{"topology: t\nkey: k\nfabric: 'a b'\n", "fabric", "letters", 3},
		{"topology: t\nkey: k\nredis: nohost\n", "redis", "host:port", 3},
		{"topology: t\nkey: k\nredis: h:70000\n", "redis", "host:port", 3},
		{"topology: t\nkey: k\ninterval: 50\nlease_ttl: 100\n", "lease_ttl", "3 intervals",
		 4},
		{"topology: t\nkey: k\nlifetime: 200ms\nqp_interval: 250\n", "lifetime",
		 "3 intervals", 3},
		{"topology: t\nkey: k\nreopt: 10ms\n", "reopt", "qp_interval", 3},
		{"topology: t\nkey: k\nid: 'a:b'\n", "id", "letters", 3},
	};
	static const struct {
		const char *yaml, *key;
	} bind_cases[] = {
		{"topology: t\nkey: k\nhysteresis: 2\n", "hysteresis"},
		{"topology: t\nkey: k\nheadroom: 0\n", "headroom"},
		{"topology: t\nkey: k\nbogus: 1\n", "bogus"},
		{"topology: t\nkey: k\ninterval: 1\n", "interval"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *p = write_file("bad.yaml", cases[i].yaml);
		struct ctld_cfg c;
		struct ice_cfg_err err;

		ctld_cfg_defaults(&c);
		assert_int_equal(ctld_cfg_load_file(&c, p, &err), 0);
		assert_int_equal(ctld_cfg_finish(&c, p, &err), -EINVAL);
		assert_string_equal(err.key, cases[i].key);
		if (strstr(err.msg, cases[i].msg) == NULL)
			fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].msg);
		assert_int_equal(err.line, cases[i].line);
	}
	for (size_t i = 0; i < sizeof(bind_cases) / sizeof(bind_cases[0]); i++) {
		const char *p = write_file("bad.yaml", bind_cases[i].yaml);
		struct ctld_cfg c;
		struct ice_cfg_err err;

		ctld_cfg_defaults(&c);
		assert_true(ctld_cfg_load_file(&c, p, &err) < 0);
		if (strstr(err.key, bind_cases[i].key) == NULL)
			fail_msg("bind case %zu: key '%s'", i, err.key);
		assert_int_equal(err.line, 3);
	}
	{
		struct ctld_cfg c;
		struct ice_cfg_err err;

		ctld_cfg_defaults(&c);
		assert_int_equal(ctld_cfg_set_flag(&c, "no-such", "1", &err), -ENOENT);
		/* dry run needs no key */
		assert_int_equal(ctld_cfg_set_flag(&c, "topology", "t", &err), 0);
		assert_int_equal(ctld_cfg_set_flag(&c, "dry-run", "true", &err), 0);
		assert_int_equal(ctld_cfg_finish(&c, NULL, &err), 0);
	}
}

static struct ice_plan_entry entry(uint32_t qpn, uint16_t sport, uint32_t rate)
{
	struct ice_plan_entry e = {.qpn = qpn,
				   .sport = sport,
				   .start_mbps = rate,
				   .target_mbps = rate,
				   .path = 0,
				   .has_dcqcn = true};

	ice_dcqcn_params_default(&e.dcqcn);
	return e;
}

static void test_plans_same(void **state)
{
	struct ice_plan_entry a1[2] = {entry(1, 50000, 0), entry(2, 50001, 0)};
	struct ice_plan_entry b1[2] = {entry(2, 50001, 0), entry(1, 50000, 0)};
	struct ice_host_plan a[2] = {{.host = "h1", .epoch = 1, .entries = a1, .n = 2},
				     {.host = "h2", .epoch = 1}};
	struct ice_host_plan b[2] = {{.host = "h2", .epoch = 7, .issued_ms = 5},
				     {.host = "h1", .epoch = 7, .entries = b1, .n = 2}};

	/* epochs, times, the order of hosts and entries do not matter */
	assert_true(ctld_plans_same(a, 2, b, 2));
	b1[0].sport = 50002; /* a moved QP */
	assert_false(ctld_plans_same(a, 2, b, 2));
	b1[0].sport = 50001;
	b1[1].start_mbps = 10; /* a new rate */
	assert_false(ctld_plans_same(a, 2, b, 2));
	b1[1].start_mbps = 0;
	b1[1].dcqcn.rp_ai_rate++; /* another profile */
	assert_false(ctld_plans_same(a, 2, b, 2));
	b1[1].dcqcn.rp_ai_rate--;
	b1[1].has_dcqcn = false; /* the QP's own parameters instead of a profile */
	assert_false(ctld_plans_same(a, 2, b, 2));
	b1[1].has_dcqcn = true;
	assert_false(ctld_plans_same(a, 2, b, 1)); /* a host less */
	b[0].host[1] = '3';
	assert_false(ctld_plans_same(a, 2, b, 2)); /* another host */
	assert_true(ctld_plans_same(NULL, 0, NULL, 0));
}

static void test_ring_order(void **state)
{
	int32_t next[4] = {2, 3, 1, 0}; /* 0 -> 2 -> 1 -> 3 -> 0 */
	int32_t broken[4] = {1, 1, 3, 0};
	int32_t unknown[3] = {-1, -1, -1};
	uint32_t o[4];

	ctld_ring_order(next, 4, o);
	assert_int_equal(o[0], 0);
	assert_int_equal(o[1], 2);
	assert_int_equal(o[2], 1);
	assert_int_equal(o[3], 3);
	ctld_ring_order(broken, 4, o);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(o[i], i);
	ctld_ring_order(unknown, 3, o);
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(o[i], i);
}

/* The daemon's planner options: incremental or re-optimising, and in both
 * its carried routes taken as they are (routes_current). Shown on a
 * carried route whose index is deliberately not its links': with the
 * daemon's options the links stay; without routes_current the planner
 * rebuilds them from the index. */
static void test_plan_opts(void **state)
{
	struct topo_gen_opts go;
	struct ctld_cfg c;
	struct ctl_plan_opts o;
	struct ctl_planner *p;
	struct ctl_demand d;
	struct ctl_route carried;
	struct topo *t;

	ctld_cfg_defaults(&c);
	c.search_budget = 0.05;
	ctld_plan_opts(&c, false, &o);
	assert_int_equal(o.mode, CTL_PLAN_REOPT);
	assert_true(o.routes_current);
	assert_true(o.hysteresis == c.hysteresis);
	ctld_plan_opts(&c, true, &o);
	assert_int_equal(o.mode, CTL_PLAN_INCREMENTAL);
	assert_true(o.routes_current);
	assert_true(o.search_budget_s == 0.05);

	topo_gen_opts_default(&go);
	go.k = 4;
	t = topo_gen_fat_tree(&go);
	assert_non_null(t);
	p = ctl_planner_new(t);
	assert_non_null(p);
	ctl_demand_init(&d, CTL_UNIT_BPS);
	for (uint32_t i = 0; i < 2; i++) {
		struct ctl_flow f = {.src_port = topo_nic(t, i)->id,
				     .dst_port = topo_nic(t, 8 + i)->id, /* another pod: 4 routes */
				     .demand = 1000000,
				     .lqpn = 10 + i,
				     .rqpn = 20 + i,
				     .path = {.idx = -1}};

		assert_int_equal(ctl_demand_add(&d, &f), 0);
	}
	d.n = 1;
	assert_int_equal(ctl_plan_paths(p, &d, NULL, NULL), 0);
	carried = d.flows[0].path;
	carried.idx = (carried.idx + 1) % 4; /* not these links' index */
	d.n = 2;
	d.flows[0].path = carried;
	assert_int_equal(ctl_plan_paths(p, &d, &o, NULL), 0);
	assert_int_equal(d.flows[0].path.idx, carried.idx);
	assert_memory_equal(d.flows[0].path.dlink, carried.dlink, carried.nhops * sizeof(uint32_t));
	assert_true(d.flows[1].path.idx >= 0);
	d.flows[0].path = carried;
	d.flows[1].path.idx = -1;
	o.routes_current = false;
	assert_int_equal(ctl_plan_paths(p, &d, &o, NULL), 0);
	assert_int_equal(d.flows[0].path.idx, carried.idx);
	assert_true(memcmp(d.flows[0].path.dlink, carried.dlink,
			   carried.nhops * sizeof(uint32_t)) != 0);
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

/* The view's scanner of the agents' rate objects reads what jansson reads,
 * or declines (the view then asks jansson): the same three figures either
 * way, over well-formed and odd objects. */
static void test_rates_scan(void **state)
{
	static const char *const in[] = {
		"{\"tx_bytes\":125000000,\"tx_pkts\":30517.578125,\"cnp_rx\":3,\"retx\":0.5}",
		"{}",
		"null",
		"",
		"{\"tx_bytes\":1.}",
		"{\"tx_bytes\":.5}",
		"{\"tx_bytes\":01}",
		"{\"tx_bytes\":0x10}",
		"{\"tx_bytes\":-inf}",
		"{\"tx_bytes\":1e5,\"retx\":-2E-3}",
		"{\"tx_bytes\":1e}",
		"{\"tx_bytes\": 5}",
		"{\"tx_bytes\":\"5\"}",
		"{\"tx_bytes\":5,}",
		"{\"tx_bytes\":5}x",
		"{\"tx_bytes\":5,\"tx_bytes\":7}",
		"{\"a\\\"b\":1,\"tx_bytes\":2}",
		"{\"tx_bytes\":1e400}",
		"{\"cnp_rx\":-0,\"retx\":0.0}",
		"{\"tx_bytes\":-}",
		"{\"tx_bytes\":2",
		"{\"tx_bytes\":[1]}",
		"{\"retx\":12345678901234567890}",
		"{\"retx\":12345678901234567890.0}",
		"{\"tx_bytes\":9223372036854775807}"};
	uint32_t fast = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		json_t *o = json_loads(in[i], 0, NULL);
		double t, c, r, jt, jc, jr;

		jt = o ? json_number_value(json_object_get(o, "tx_bytes")) : 0;
		jc = o ? json_number_value(json_object_get(o, "cnp_rx")) : 0;
		jr = o ? json_number_value(json_object_get(o, "retx")) : 0;
		json_decref(o);
		if (!ctld_rates_scan(in[i], &t, &c, &r))
			continue;
		fast++;
		assert_true(t == jt && c == jc && r == jr);
	}
	assert_int_equal(fast, 6); /* the well-formed ones read by the scanner */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_file),  cmocka_unit_test(test_errors),
		cmocka_unit_test(test_plans_same), cmocka_unit_test(test_ring_order),
		cmocka_unit_test(test_plan_opts),  cmocka_unit_test(test_rates_scan),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
