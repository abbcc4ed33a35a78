// SPDX-License-Identifier: Apache-2.0
/* ice-agent's bounded queue of intervals waiting for Redis. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent.h"

static char *blob(uint64_t seq)
{
	char *p = malloc(32);

	snprintf(p, 32, "interval %llu", (unsigned long long)seq);
	return p;
}

static void test_fifo(void **state)
{
	struct agent_queue q;

	assert_int_equal(agent_queue_init(&q, 4), 0);
	assert_null(agent_queue_head(&q));
	for (uint64_t s = 1; s <= 3; s++)
		agent_queue_push(&q, blob(s), 10, 2, s);
	assert_int_equal(q.len, 3);
	for (uint64_t s = 1; s <= 3; s++) {
		assert_int_equal(agent_queue_head(&q)->seq, s);
		assert_int_equal(agent_queue_head(&q)->ncmd, 2);
		agent_queue_pop(&q);
	}
	assert_null(agent_queue_head(&q));
	assert_int_equal(q.dropped, 0);
	agent_queue_pop(&q); /* empty: nothing happens */
	agent_queue_fini(&q);
}

static void test_drop_oldest(void **state)
{
	struct agent_queue q;

	assert_int_equal(agent_queue_init(&q, 5), 0);
	for (uint64_t s = 1; s <= 12; s++)
		agent_queue_push(&q, blob(s), 10, 1, s);
	assert_int_equal(q.len, 5);
	assert_int_equal(q.dropped, 7);
	/* the newest five, in order */
	for (uint64_t s = 8; s <= 12; s++) {
		char want[32];

		snprintf(want, sizeof(want), "interval %llu", (unsigned long long)s);
		assert_string_equal(agent_queue_head(&q)->buf, want);
		agent_queue_pop(&q);
	}
	/* wrap-around keeps working */
	for (uint64_t s = 13; s <= 20; s++) {
		agent_queue_push(&q, blob(s), 10, 1, s);
		if (s % 2 == 0)
			agent_queue_pop(&q);
	}
	assert_int_equal(q.len, 4);
	assert_int_equal(agent_queue_head(&q)->seq, 17);
	agent_queue_fini(&q); /* frees what is left (valgrind checks) */
}

static void test_bad_cap(void **state)
{
	struct agent_queue q;

	assert_int_equal(agent_queue_init(&q, 0), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo),
		cmocka_unit_test(test_drop_oldest),
		cmocka_unit_test(test_bad_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
