// SPDX-License-Identifier: Apache-2.0
/* Unit tests for common/ice_log: levels, debug masks, sinks, tags, errno. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ice_log.h"

struct capture {
	int calls;
	int level;
	uint32_t sub;
	char line[2048];
	int set_errno; /* the sink clobbers errno with this when non-zero */
};

static void capture_sink(int level, uint32_t sub, const char *line, void *arg)
{
	struct capture *c = arg;

	c->calls++;
	c->level = level;
	c->sub = sub;
	snprintf(c->line, sizeof(c->line), "%s", line);
	if (c->set_errno != 0)
		errno = c->set_errno;
}

static struct capture cap;

static int setup(void **state)
{
	(void)state;
	memset(&cap, 0, sizeof(cap));
	ice_log_set_level(ICE_LOG_WARN);
	ice_log_set_debug_mask(0);
	ice_log_set_tag(NULL);
	ice_log_set_sink(capture_sink, &cap);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	ice_log_set_sink(NULL, NULL);
	ice_log_set_tag(NULL);
	return 0;
}

static void test_level_filter(void **state)
{
	(void)state;
	assert_int_equal(ice_log_get_level(), ICE_LOG_WARN);
	assert_true(ice_log_enabled(ICE_LOG_ERR, ICE_SUB_QP));
	assert_true(ice_log_enabled(ICE_LOG_WARN, ICE_SUB_QP));
	assert_false(ice_log_enabled(ICE_LOG_INFO, ICE_SUB_QP));
	assert_false(ice_log_enabled(ICE_LOG_DEBUG, ICE_SUB_QP));

	ice_info(ICE_SUB_QP, "hidden");
	ice_dbg(ICE_SUB_QP, "hidden");
	assert_int_equal(cap.calls, 0);
	ice_warn(ICE_SUB_QP, "shown %d", 1);
	ice_err(ICE_SUB_WIRE, "shown %d", 2);
	assert_int_equal(cap.calls, 2);
	assert_int_equal(cap.level, ICE_LOG_ERR);
	assert_int_equal(cap.sub, ICE_SUB_WIRE);

	ice_log_set_level(ICE_LOG_DEBUG);
	ice_dbg(ICE_SUB_QP, "now shown");
	assert_int_equal(cap.calls, 3);

	ice_log_set_level(ICE_LOG_ERR);
	ice_warn(ICE_SUB_QP, "hidden");
	assert_int_equal(cap.calls, 3);

	/* Out-of-range levels are clamped. */
	ice_log_set_level(99);
	assert_int_equal(ice_log_get_level(), ICE_LOG_DEBUG);
	ice_log_set_level(-5);
	assert_int_equal(ice_log_get_level(), ICE_LOG_ERR);
}

static void test_debug_mask(void **state)
{
	(void)state;
	assert_int_equal(ice_log_setup("info,debug=qp+dcqcn"), 0);
	assert_int_equal(ice_log_get_level(), ICE_LOG_INFO);
	assert_true(ice_log_enabled(ICE_LOG_INFO, ICE_SUB_WIRE));
	assert_true(ice_log_enabled(ICE_LOG_DEBUG, ICE_SUB_QP));
	assert_true(ice_log_enabled(ICE_LOG_DEBUG, ICE_SUB_DCQCN));
	assert_false(ice_log_enabled(ICE_LOG_DEBUG, ICE_SUB_WIRE));
	assert_false(ice_log_enabled(ICE_LOG_DEBUG, ICE_SUB_COLL));

	ice_dbg(ICE_SUB_WIRE, "hidden");
	assert_int_equal(cap.calls, 0);
	ice_dbg(ICE_SUB_DCQCN, "rate %d", 5);
	assert_int_equal(cap.calls, 1);
	assert_int_equal(cap.level, ICE_LOG_DEBUG);
	assert_int_equal(cap.sub, ICE_SUB_DCQCN);

	assert_int_equal(ice_log_setup("error,debug=all"), 0);
	assert_int_equal(ice_log_get_level(), ICE_LOG_ERR);
	assert_false(ice_log_enabled(ICE_LOG_WARN, ICE_SUB_WIRE));
	assert_true(ice_log_enabled(ICE_LOG_DEBUG, ICE_SUB_BENCH));

	/* Level names are case-insensitive; the mask can come alone. */
	assert_int_equal(ice_log_setup("WARN"), 0);
	assert_int_equal(ice_log_get_level(), ICE_LOG_WARN);
	assert_int_equal(ice_log_setup("debug=config"), 0);
	assert_int_equal(ice_log_get_level(), ICE_LOG_WARN);
	assert_true(ice_log_enabled(ICE_LOG_DEBUG, ICE_SUB_CONFIG));
	assert_false(ice_log_enabled(ICE_LOG_DEBUG, ICE_SUB_QP));
	assert_int_equal(ice_log_setup("debug"), 0);
	assert_int_equal(ice_log_get_level(), ICE_LOG_DEBUG);
	assert_int_equal(ice_log_setup(""), 0);
	assert_int_equal(ice_log_setup(NULL), 0);
	assert_int_equal(ice_log_get_level(), ICE_LOG_DEBUG);
}

/* A module's subsystem, registered before main as the modules do. */
ICE_LOG_SUBSYSTEM(test_log_sub, "testmod");

static void test_registered_subsystem(void **state)
{
	(void)state;
	assert_true(test_log_sub > ICE_SUB_BENCH); /* a bit of its own */
	assert_int_equal(ice_log_register("testmod"), test_log_sub);
	assert_int_not_equal(ice_log_register("othermod"), test_log_sub);
	assert_int_equal(ice_log_setup("warn,debug=testmod"), 0);
	assert_true(ice_log_enabled(ICE_LOG_DEBUG, test_log_sub));
	assert_false(ice_log_enabled(ICE_LOG_DEBUG, ICE_SUB_QP));
	ice_dbg(test_log_sub, "seen");
	assert_int_equal(cap.calls, 1);
	assert_int_equal(cap.sub, test_log_sub);
	assert_int_equal(ice_log_setup("warn,debug=testmodx"), -EINVAL);
	/* names too long for the table fall back to common */
	assert_int_equal(ice_log_register("a-name-far-too-long"), ICE_SUB_COMMON);
}

static void test_bad_specs(void **state)
{
	static const char *const bad[] = {
		"loud", "info,debug=nope", "info,debug=qp+nope",   "debug=",
		",",	"info,,warn",	   "info,debug=qp++dcqcn", "information",
		"inf",	"debug=QP",	   "info;debug=qp",
	};

	(void)state;
	assert_int_equal(ice_log_setup("info,debug=qp"), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (ice_log_setup(bad[i]) != -EINVAL)
			fail_msg("spec '%s' accepted", bad[i]);
		/* A bad spec changes nothing. */
		assert_int_equal(ice_log_get_level(), ICE_LOG_INFO);
		assert_true(ice_log_enabled(ICE_LOG_DEBUG, ICE_SUB_QP));
		assert_false(ice_log_enabled(ICE_LOG_DEBUG, ICE_SUB_DCQCN));
	}
	/* A bad level after a good mask is still all-or-nothing. */
	assert_int_equal(ice_log_setup("debug=dcqcn,loud"), -EINVAL);
	assert_false(ice_log_enabled(ICE_LOG_DEBUG, ICE_SUB_DCQCN));
}

static void test_init_env(void **state)
{
	(void)state;
	unsetenv("ICE_LOG");
	assert_int_equal(ice_log_init_env(), 0);
	assert_int_equal(ice_log_get_level(), ICE_LOG_WARN);
	setenv("ICE_LOG", "info,debug=coll", 1);
	assert_int_equal(ice_log_init_env(), 0);
	assert_int_equal(ice_log_get_level(), ICE_LOG_INFO);
	assert_true(ice_log_enabled(ICE_LOG_DEBUG, ICE_SUB_COLL));
	setenv("ICE_LOG", "shouty", 1);
	assert_int_equal(ice_log_init_env(), -EINVAL);
	assert_int_equal(ice_log_get_level(), ICE_LOG_INFO);
	unsetenv("ICE_LOG");
}

static void test_errno_preserved(void **state)
{
	(void)state;
	cap.set_errno = EIO;
	errno = ENOENT;
	ice_err(ICE_SUB_COMMON, "failed: %s", strerror(errno));
	assert_int_equal(errno, ENOENT);
	assert_int_equal(cap.calls, 1);
	assert_string_equal(cap.line, "error: failed: No such file or directory");

	/* Also through the default stderr sink, and for filtered messages. */
	ice_log_set_sink(NULL, NULL);
	errno = EAGAIN;
	ice_warn(ICE_SUB_COMMON, "to stderr (expected in the test output)");
	assert_int_equal(errno, EAGAIN);
	ice_dbg(ICE_SUB_COMMON, "filtered");
	assert_int_equal(errno, EAGAIN);
}

static void test_sink_format(void **state)
{
	int line;

	(void)state;
	ice_log_set_level(ICE_LOG_DEBUG);
	ice_err(ICE_SUB_QP, "qp %d failed", 7);
	assert_string_equal(cap.line, "error: qp 7 failed");
	ice_warn(ICE_SUB_QP, "slow");
	assert_string_equal(cap.line, "warn: slow");
	assert_int_equal(cap.level, ICE_LOG_WARN);
	ice_info(ICE_SUB_QP, "%s=%u", "mtu", 4096u);
	assert_string_equal(cap.line, "mtu=4096");
	assert_int_equal(cap.level, ICE_LOG_INFO);

	/* Debug lines carry the source file's base name and line. */
	line = __LINE__ + 1;
	ice_dbg(ICE_SUB_QP, "detail");
	{
		char want[128];

		snprintf(want, sizeof(want), "test_log.c:%d: detail", line);
		assert_string_equal(cap.line, want);
	}
	ice_log_msg(ICE_LOG_DEBUG, ICE_SUB_QP, "plainfile.c", 3, "x");
	assert_string_equal(cap.line, "plainfile.c:3: x");
	/* A level outside the enum is treated as an error. */
	ice_log_msg(42, ICE_SUB_QP, "f.c", 1, "odd");
	assert_string_equal(cap.line, "error: odd");
	assert_int_equal(cap.level, ICE_LOG_ERR);
}

static void test_long_message_truncated(void **state)
{
	char big[3000];

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ice_log_set_tag("rank 1");
	ice_err(ICE_SUB_QP, "%s", big);
	assert_int_equal(cap.calls, 1);
	assert_int_equal(strlen(cap.line), 1023);
	assert_memory_equal(cap.line, "[rank 1] error: xxx", 19);
}

static void test_tag(void **state)
{
	char longtag[100];

	(void)state;
	ice_log_set_tag("rank 3");
	ice_warn(ICE_SUB_QP, "hello");
	assert_string_equal(cap.line, "[rank 3] warn: hello");
	ice_log_set_level(ICE_LOG_INFO);
	ice_info(ICE_SUB_QP, "hi");
	assert_string_equal(cap.line, "[rank 3] hi");

	ice_log_set_tag(NULL);
	ice_warn(ICE_SUB_QP, "hello");
	assert_string_equal(cap.line, "warn: hello");

	/* Long tags are cut, not overflowed. */
	memset(longtag, 't', sizeof(longtag) - 1);
	longtag[sizeof(longtag) - 1] = '\0';
	ice_log_set_tag(longtag);
	ice_err(ICE_SUB_QP, "m");
	assert_true(strlen(cap.line) < sizeof(longtag));
	assert_memory_equal(cap.line, "[ttt", 4);
	assert_non_null(strstr(cap.line, "] error: m"));
}

static void test_hot_debug_compiled_out(void **state)
{
	int evaluated = 0;

	(void)state;
	ice_log_set_level(ICE_LOG_DEBUG);
	ice_dbg_hot(ICE_SUB_QP, "%d", ++evaluated);
#ifdef ICE_HOT_DEBUG
	assert_int_equal(cap.calls, 1);
#else
	assert_int_equal(cap.calls, 0);
	assert_int_equal(evaluated, 0);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_level_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_debug_mask, setup, teardown),
		cmocka_unit_test_setup_teardown(test_registered_subsystem, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_specs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_init_env, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errno_preserved, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sink_format, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_message_truncated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tag, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hot_debug_compiled_out, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
