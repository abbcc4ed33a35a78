// SPDX-License-Identifier: Apache-2.0
/*
 * PFC pause state (controller/ctl_pfc.h): the switch ports' share lists
 * and the agents' NIC `pfc` parts parsed, bad ones refused whole; a link
 * storms only after two rounds in a row at or above the storm share, its
 * capacity factor is the share it was not paused, sources keep the
 * largest, and a calm round ends the storm.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ctl_pfc.h"

static void test_parse_list(void **state)
{
	double s[CTL_PFC_PRIOS];
	static const char *const bad[] = {
		NULL,
		"",
		"0,0,0,0,0,0,0",
		"0,0,0,0,0,0,0,0,0",
		"0,0,0,1.5,0,0,0,0",
		"0,0,0,-0.1,0,0,0,0",
		"0,0,0,inf,0,0,0,0",
		"0,0,0,nan,0,0,0,0",
		" 0,0,0,0,0,0,0,0",
		"0,0,0,0.5x,0,0,0,0",
		"0,0,0,0,0,0,0,0,",
		"0;0;0;0;0;0;0;0",
	};

	(void)state;
	assert_int_equal(ctl_pfc_parse_list("0,0,0,0.625,0,0,0,1", s), 0);
	assert_true(s[3] == 0.625 && s[7] == 1 && s[0] == 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(ctl_pfc_parse_list(bad[i], s), -EINVAL);
}

static void test_parse_nic(void **state)
{
	double rx[CTL_PFC_PRIOS], tx[CTL_PFC_PRIOS];
	uint8_t ll;
	bool known;
	/* as the agent writes it (host_agent/agent_redis.c, nic_record) */
	const char *agent =
		"{\"lossless\":[3,4],\"storm\":[3],\"prio\":{\"3\":{\"rx_pause\":1200,"
		"\"tx_pause\":0,\"rx_paused\":0.62,\"tx_paused\":0},\"4\":{\"rx_pause\":"
		"0,\"tx_pause\":10,\"rx_paused\":0,\"tx_paused\":0.01}}}";
	static const char *const bad[] = {
		NULL,
		"",
		"[]",
		"{\"lossless\":[8]}",
		"{\"lossless\":[-1]}",
		"{\"lossless\":\"3\"}",
		"{\"prio\":[]}",
		"{\"prio\":{\"9\":{\"rx_paused\":0.5}}}",
		"{\"prio\":{\"33\":{\"rx_paused\":0.5}}}",
		"{\"prio\":{\"3\":{\"rx_paused\":1.5}}}",
		"{\"prio\":{\"3\":{\"tx_paused\":-0.5}}}",
		"{\"prio\":{\"3\":{\"tx_paused\":\"0.5\"}}}",
		"{\"prio\":{\"3\":7}}",
		"{\"lossless\":[3],\"lossless\":[4]}",
	};

	(void)state;
	assert_int_equal(ctl_pfc_parse_nic(agent, &ll, &known, rx, tx), 0);
	assert_true(known);
	assert_int_equal(ll, 0x18);
	assert_true(rx[3] == 0.62 && tx[3] == 0 && tx[4] == 0.01 && rx[0] == 0);
	assert_int_equal(ctl_pfc_parse_nic("{\"lossless\":null,\"storm\":[],\"prio\":{}}", &ll,
					   &known, rx, tx),
			 0);
	assert_false(known);
	assert_int_equal(ll, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(ctl_pfc_parse_nic(bad[i], &ll, &known, rx, tx), -EINVAL);
		assert_false(known); /* nothing of a bad record is kept */
		assert_int_equal(ll, 0);
		for (int k = 0; k < CTL_PFC_PRIOS; k++)
			assert_true(rx[k] == 0 && tx[k] == 0);
	}
}

static void round_of(struct ctl_pfc *p, uint32_t dl, double share, uint64_t ms)
{
	double s[CTL_PFC_PRIOS] = {0};

	s[3] = share;
	ctl_pfc_begin(p);
	if (share >= 0)
		ctl_pfc_sample(p, dl, s);
	ctl_pfc_end(p, ms);
}

static void test_storm(void **state)
{
	struct ctl_pfc p;
	double low[CTL_PFC_PRIOS] = {0}, high[CTL_PFC_PRIOS] = {0};
	uint8_t storm;

	(void)state;
	assert_int_equal(ctl_pfc_init(&p, 4), 0);
	/* below the share: never */
	round_of(&p, 1, 0.49, 100);
	round_of(&p, 1, 0.49, 200);
	assert_false(ctl_pfc_storming(&p, 1));
	assert_true(ctl_pfc_factor(&p, 1) == 1);
	/* one round at the share is not a storm yet; the second is */
	round_of(&p, 1, 0.6, 300);
	assert_false(ctl_pfc_storming(&p, 1));
	assert_true(ctl_pfc_factor(&p, 1) == 1);
	assert_true(ctl_pfc_paused_max(&p, 1, &storm) == 0.6);
	assert_int_equal(storm, 0);
	round_of(&p, 1, 0.8, 400);
	assert_true(ctl_pfc_storming(&p, 1));
	assert_int_equal(p.dl[1].run_ms, 300);
	assert_int_equal(p.storms, 1);
	assert_true(ctl_pfc_factor(&p, 1) > 0.199 && ctl_pfc_factor(&p, 1) < 0.201);
	assert_true(ctl_pfc_paused_max(&p, 1, &storm) == 0.8);
	assert_int_equal(storm, 1u << 3);
	/* other links untouched; out of range is calm */
	assert_false(ctl_pfc_storming(&p, 0));
	assert_false(ctl_pfc_storming(&p, 4));
	assert_true(ctl_pfc_factor(&p, 99) == 1);
	/* a longer storm counts once */
	round_of(&p, 1, 0.9, 500);
	assert_int_equal(p.storms, 1);
	/* a round with no sample ends it */
	round_of(&p, 1, -1, 600);
	assert_false(ctl_pfc_storming(&p, 1));
	assert_true(ctl_pfc_factor(&p, 1) == 1);
	/* two sources of one link: the larger share is kept */
	low[3] = 0.1;
	high[3] = 0.7;
	for (int r = 0; r < 2; r++) {
		ctl_pfc_begin(&p);
		ctl_pfc_sample(&p, 2, high);
		ctl_pfc_sample(&p, 2, low);
		ctl_pfc_end(&p, 700);
	}
	assert_true(ctl_pfc_storming(&p, 2));
	assert_true(ctl_pfc_paused_max(&p, 2, NULL) == 0.7);
	/* fully paused: nothing passes */
	high[3] = 1;
	for (int r = 0; r < 2; r++) {
		ctl_pfc_begin(&p);
		ctl_pfc_sample(&p, 3, high);
		ctl_pfc_end(&p, 800);
	}
	assert_true(ctl_pfc_factor(&p, 3) == 0);
	ctl_pfc_fini(&p);
	ctl_pfc_fini(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_list),
		cmocka_unit_test(test_parse_nic),
		cmocka_unit_test(test_storm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
