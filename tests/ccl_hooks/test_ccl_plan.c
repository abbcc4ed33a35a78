// SPDX-License-Identifier: Apache-2.0
/*
 * test_ccl_plan: the verbs hook's plan parser and the flow label that
 * steers a QP's UDP source port. The inverse is checked against rdma-core's
 * own ibv_flow_label_to_udp_sport() (infiniband/verbs.h) for 10,000 random
 * ports; no RDMA device is needed.
 */
#include <infiniband/verbs.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ccl_plan.h"
#include "ice_roce.h"

static void test_flow_label_inverse(void **state)
{
	srand(12345);
	for (int i = 0; i < 10000; i++) {
		uint16_t port = (uint16_t)(ICE_ROCE_SPORT_MIN + (unsigned)rand() % 16384);
		uint32_t hi = (uint32_t)rand();
		uint32_t fl = ice_roce_flow_label_for_udp_sport(port, hi);

		assert_int_not_equal(fl, 0); /* 0 would mean "no label" */
		assert_true(fl <= IB_GRH_FLOWLABEL_MASK);
		assert_int_equal(ibv_flow_label_to_udp_sport(fl), port);
		assert_int_equal(ice_roce_flow_label_to_udp_sport(fl), port);
	}
	/* every port, the corner high-bit choices */
	for (uint32_t p = ICE_ROCE_SPORT_MIN; p <= 65535; p++) {
		assert_int_equal(ibv_flow_label_to_udp_sport(
					 ice_roce_flow_label_for_udp_sport((uint16_t)p, 0)),
				 p);
		assert_int_not_equal(ice_roce_flow_label_for_udp_sport((uint16_t)p, 0), 0);
		assert_int_equal(ibv_flow_label_to_udp_sport(
					 ice_roce_flow_label_for_udp_sport((uint16_t)p, 63)),
				 p);
	}
	assert_int_equal(ice_roce_flow_label_for_udp_sport(49151, 0), 0);
	assert_int_equal(ice_roce_flow_label_for_udp_sport(1, 5), 0);
}

static void test_plan_good(void **state)
{
	char err[256];
	int tc;
	struct ccl_plan *p = ccl_plan_parse("# ICE\n\nversion 1   # first\n"
					    "tclass 106\n"
					    "sport 10.0.0.2 50000 50001 50002\n"
					    "sport * 60000\n",
					    "t", err, sizeof(err));

	assert_non_null(p);
	assert_int_equal(ccl_plan_tclass(p), 106);
	assert_int_equal(ccl_plan_next_sport(p, 0x0200000a, NULL), 50000);
	assert_int_equal(ccl_plan_next_sport(p, 0x0200000a, NULL), 50001);
	assert_int_equal(ccl_plan_next_sport(p, 0x0200000a, NULL), 50002);
	assert_int_equal(ccl_plan_next_sport(p, 0x0200000a, NULL), 50000);
	assert_int_equal(ccl_plan_next_sport(p, 0x0300000a, NULL), 60000);
	ccl_plan_free(p);
	p = ccl_plan_parse("version 1\n", "t", err, sizeof(err));
	assert_non_null(p);
	assert_int_equal(ccl_plan_tclass(p), -1);
	assert_int_equal(ccl_plan_next_sport(p, 1, &tc), 0);
	assert_int_equal(tc, -1);
	ccl_plan_free(p);
	ccl_plan_free(NULL);
	assert_int_equal(ccl_plan_next_sport(NULL, 1, &tc), 0);
	assert_int_equal(tc, -1);
	/* a port with the plan's traffic class; the others take the file's */
	p = ccl_plan_parse("version 1\ntclass 106\nsport 10.0.0.2 50000/104 50001\n"
			   "sport * 60000/40\n",
			   "t", err, sizeof(err));
	assert_non_null(p);
	assert_int_equal(ccl_plan_next_sport(p, 0x0200000a, &tc), 50000);
	assert_int_equal(tc, 104);
	assert_int_equal(ccl_plan_next_sport(p, 0x0200000a, &tc), 50001);
	assert_int_equal(tc, 106);
	assert_int_equal(ccl_plan_next_sport(p, 0x0300000a, &tc), 60000);
	assert_int_equal(tc, 40);
	ccl_plan_free(p);
	/* without a "tclass" rule: only the ports that carry one */
	p = ccl_plan_parse("version 1\nsport * 60000/0 60001\n", "t", err, sizeof(err));
	assert_non_null(p);
	assert_int_equal(ccl_plan_next_sport(p, 1, &tc), 60000);
	assert_int_equal(tc, 0);
	assert_int_equal(ccl_plan_next_sport(p, 1, &tc), 60001);
	assert_int_equal(tc, -1);
	ccl_plan_free(p);
}

static void test_plan_bad(void **state)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{"", "expected \"version 1\""},
		{"tclass 3\n", "t:1: expected \"version 1\""},
		{"version 1 extra\n", "t:1:"},
		{"version 1\ntclass\n", "t:2: tclass"},
		{"version 1\ntclass -1\n", "t:2: tclass"},
		{"version 1\ntclass 256\n", "t:2: tclass"},
		{"version 1\ntclass 3 4\n", "t:2: tclass"},
		{"version 1\n\n\nsport 10.0.0.2 49151\n", "t:4: sport"},
		{"version 1\nsport 10.0.0.2 65536\n", "t:2: sport"},
		{"version 1\nsport 10.0.0.2 +50000\n", "t:2: sport"},
		{"version 1\nsport 10.0.0 50000\n", "t:2: sport: expected a peer"},
		{"version 1\nsport\n", "t:2: sport: expected a peer"},
		{"version 1\nsport 10.0.0.1\n", "t:2: sport: expected at least one"},
		{"version 1\nsport * 50000 50001 50002 50003 50004 50005 50006 50007 50008 50009 "
		 "50010 50011 50012 50013 50014 50015 50016\n",
		 "at most 16"},
		{"version 1\nrate 100\n", "t:2: unknown rule"},
		{"version 1\nsport * 50000/256\n",
		 "t:2: sport: \"50000/256\": expected PORT/TCLASS"},
		{"version 1\nsport * 50000/\n", "t:2: sport: \"50000/\": expected PORT/TCLASS"},
		{"version 1\nsport * 50000/1x\n", "PORT/TCLASS"},
		{"version 1\nsport * /104\n", "t:2: sport"},
	};
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ccl_plan *p = ccl_plan_parse(bad[i].text, "t", err, sizeof(err));

		if (p != NULL || strstr(err, bad[i].why) == NULL)
			fail_msg("case %zu: %s -> \"%s\"", i, bad[i].text, err);
	}
	assert_null(ccl_plan_parse(NULL, "t", err, sizeof(err)));
	/* too many rules */
	{
		size_t cap = 64 + 300 * 24;
		char *t = malloc(cap), *w = t;

		w += snprintf(w, cap, "version 1\n");
		for (int i = 0; i < 300; i++)
			w += snprintf(w, cap - (size_t)(w - t), "sport 10.0.%d.%d 50000\n", i / 200,
				      i % 200);
		assert_null(ccl_plan_parse(t, "t", err, sizeof(err)));
		assert_non_null(strstr(err, "more than 256"));
		free(t);
	}
	/* a missing file */
	assert_null(ccl_plan_load("/nonexistent/plan", err, sizeof(err)));
	/* binary junk: refused, never a crash */
	{
		char junk[512];

		srand(7);
		for (int k = 0; k < 200; k++) {
			for (size_t i = 0; i < sizeof(junk) - 1; i++)
				junk[i] = (char)(1 + rand() % 255);
			junk[sizeof(junk) - 1] = '\0';
			ccl_plan_free(ccl_plan_parse(junk, "junk", err, sizeof(err)));
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flow_label_inverse),
		cmocka_unit_test(test_plan_good),
		cmocka_unit_test(test_plan_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
