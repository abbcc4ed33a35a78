// SPDX-License-Identifier: Apache-2.0
/*
 * The controller's epoch recovery choice (ctld_epoch_base,
 * controller/ctl_daemon_publish.c): the wall clock is the floor; a number
 * read from Redis is taken only when it is at most now_ms +
 * CTLD_EPOCH_AHEAD_MS; the controller's own last epoch always counts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ctl_daemon.h"
#include "ice_plan.h"

#define NOW 1800000000000ull /* 2027, in ms */

static void missing_counter_takes_the_clock(void **state)
{
	struct ctld_epoch_val c = {0}, f[] = {{.v = 7}, {.v = 12}};

	(void)state;
	assert_int_equal(ctld_epoch_base(&c, false, NULL, 0, 0, NOW), NOW);
	/* host epochs below the clock change nothing */
	assert_int_equal(ctld_epoch_base(&c, false, f, 2, 0, NOW), NOW);
	assert_true(f[0].credible && f[1].credible);
}

static void credible_counter_is_kept(void **state)
{
	struct ctld_epoch_val c = {.v = 3}, f[] = {{.v = 2}};

	(void)state;
	/* small epochs 1, 2, 3 ... go on: no jump to the clock */
	assert_int_equal(ctld_epoch_base(&c, true, f, 1, 0, NOW), 3);
	assert_true(c.credible);
	/* a counter ahead of the clock within the allowance is kept */
	c.v = NOW + CTLD_EPOCH_AHEAD_MS;
	assert_int_equal(ctld_epoch_base(&c, true, NULL, 0, 0, NOW), NOW + CTLD_EPOCH_AHEAD_MS);
	assert_true(c.credible);
}

static void incredible_counter_is_ignored(void **state)
{
	struct ctld_epoch_val c = {.v = NOW + CTLD_EPOCH_AHEAD_MS + 1}, f[] = {{.v = 40}};

	(void)state;
	assert_int_equal(ctld_epoch_base(&c, true, f, 1, 0, NOW), NOW);
	assert_false(c.credible);
	c.v = 1ull << 62;
	assert_int_equal(ctld_epoch_base(&c, true, NULL, 0, 0, NOW), NOW);
	assert_false(c.credible);
	c.v = UINT64_MAX; /* what a non-number reads as */
	assert_int_equal(ctld_epoch_base(&c, true, NULL, 0, 0, NOW), NOW);
	assert_false(c.credible);
}

static void host_floors(void **state)
{
	struct ctld_epoch_val c = {.v = 10};
	struct ctld_epoch_val f[] = {{.v = 1ull << 47}, {.v = 25}, {.v = NOW + 5000}};

	(void)state;
	/* a credible last_epoch above the counter is used; the 2^47 one not */
	assert_int_equal(ctld_epoch_base(&c, true, f, 2, 0, NOW), 25);
	assert_false(f[0].credible);
	assert_true(f[1].credible);
	/* an agent whose clock ran 5 s ahead: above it, even with no counter */
	assert_int_equal(ctld_epoch_base(&c, false, f, 3, 0, NOW), NOW + 5000);
	assert_true(f[2].credible);
	/* just past the allowance: ignored */
	f[2].v = NOW + CTLD_EPOCH_AHEAD_MS + 1;
	assert_int_equal(ctld_epoch_base(&c, true, f, 3, 0, NOW), 25);
	assert_false(f[2].credible);
}

static void own_epochs_always_count(void **state)
{
	struct ctld_epoch_val c = {.v = 5};

	(void)state;
	/* this controller issued 900 (its memory, not Redis): never below */
	assert_int_equal(ctld_epoch_base(&c, true, NULL, 0, 900, NOW), 900);
	/* a clock stepped far back does not undo its own epochs either */
	assert_int_equal(ctld_epoch_base(&c, false, NULL, 0, NOW, NOW - 3600000), NOW);
	/* and the allowance never reaches ICE_PLAN_EPOCH_MAX */
	c.v = ICE_PLAN_EPOCH_MAX;
	assert_int_equal(ctld_epoch_base(&c, true, NULL, 0, 0, ICE_PLAN_EPOCH_MAX - 10),
			 ICE_PLAN_EPOCH_MAX - 10);
	assert_false(c.credible);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(missing_counter_takes_the_clock),
		cmocka_unit_test(credible_counter_is_kept),
		cmocka_unit_test(incredible_counter_is_ignored),
		cmocka_unit_test(host_floors),
		cmocka_unit_test(own_epochs_always_count),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
