// SPDX-License-Identifier: Apache-2.0
/* ice-agent's check of collective-event datagrams (common/ice_event.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent.h"

static struct ice_event good(void)
{
	struct ice_event ev = {.magic = ICE_EVENT_MAGIC,
			       .version = ICE_EVENT_VERSION,
			       .kind = ICE_EV_COLL_START,
			       .op = ICE_OP_ALLREDUCE};

	return ev;
}

static void test_good(void **state)
{
	struct ice_event ev = good();

	assert_int_equal(agent_event_check(&ev, sizeof(ev)), AGENT_EV_OK);
	for (unsigned k = ICE_EV_COMM_INIT; k <= ICE_EV_QP; k++) {
		ev.kind = (uint16_t)k;
		assert_int_equal(agent_event_check(&ev, sizeof(ev)), AGENT_EV_OK);
		assert_string_not_equal(agent_ev_kind_name(k), "unknown");
	}
}

static void test_sizes(void **state)
{
	struct ice_event ev = good();
	char big[sizeof(ev) + 8] = {0};

	memcpy(big, &ev, sizeof(ev));
	assert_int_equal(agent_event_check(&ev, 0), AGENT_EV_SIZE);
	assert_int_equal(agent_event_check(&ev, 4), AGENT_EV_SIZE);
	assert_int_equal(agent_event_check(&ev, sizeof(ev) - 1), AGENT_EV_SIZE);
	assert_int_equal(agent_event_check(big, sizeof(big)), AGENT_EV_SIZE);
	/* a datagram truncated by the receive buffer reports its real length */
	assert_int_equal(agent_event_check(big, 65000), AGENT_EV_SIZE);
}

static void test_fields(void **state)
{
	struct ice_event ev = good();

	ev.magic = 0x31564548; /* one bit off */
	assert_int_equal(agent_event_check(&ev, sizeof(ev)), AGENT_EV_MAGIC);
	ev = good();
	ev.magic = __builtin_bswap32(ICE_EVENT_MAGIC); /* other endianness */
	assert_int_equal(agent_event_check(&ev, sizeof(ev)), AGENT_EV_MAGIC);
	ev = good();
	ev.version = ICE_EVENT_VERSION + 1;
	assert_int_equal(agent_event_check(&ev, sizeof(ev)), AGENT_EV_VERSION);
	ev = good();
	ev.kind = 0;
	assert_int_equal(agent_event_check(&ev, sizeof(ev)), AGENT_EV_KIND);
	ev.kind = ICE_EV_QP + 1;
	assert_int_equal(agent_event_check(&ev, sizeof(ev)), AGENT_EV_KIND);
	ev.kind = 0xffff;
	assert_int_equal(agent_event_check(&ev, sizeof(ev)), AGENT_EV_KIND);
	assert_string_equal(agent_ev_kind_name(0xffff), "unknown");
	assert_string_equal(agent_ev_op_name(ICE_OP_ALLTOALL), "alltoall");
	assert_string_equal(agent_ev_op_name(999), "none");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
