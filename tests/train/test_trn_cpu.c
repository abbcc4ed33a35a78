// SPDX-License-Identifier: Apache-2.0
/*
 * trn's CPU measurements of a rank (trn_cpu.c, issue 20): the run-queue
 * wait read from schedstat's text, known or not; a device's own speed.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "trn.h"

static void assert_near(double a, double b)
{
	if (fabs(a - b) > 1e-12 + 1e-9 * fabs(b))
		fail_msg("%.15g != %.15g", a, b);
}

/* /proc/thread-self/schedstat as the kernel writes it: "RUN WAIT SLICES".
 * A kernel that keeps no scheduler statistics (sched_info off:
 * CONFIG_SCHEDSTATS without delay accounting, kernel.sched_schedstats=0)
 * writes "0 0 0" for every task, and a thread that reads the file has been
 * on a CPU: that is not known, not no wait. Fails if zeros read as 0 s. */
static void test_schedstat_wait(void **state)
{
	(void)state;
	assert_near(trn_schedstat_wait_s("1200000 3500000000 17\n"), 3.5);
	assert_near(trn_schedstat_wait_s("1200000 0 17\n"), 0);
	/* not kept */
	assert_near(trn_schedstat_wait_s("0 0 0\n"), -1);
	assert_near(trn_schedstat_wait_s("0 0\n"), -1);
	/* kept: a task that has just started, not yet charged its run time */
	assert_near(trn_schedstat_wait_s("0 0 1\n"), 0);
	/* absent or unreadable */
	assert_near(trn_schedstat_wait_s(NULL), -1);
	assert_near(trn_schedstat_wait_s(""), -1);
	assert_near(trn_schedstat_wait_s("1200000\n"), -1);
	assert_near(trn_schedstat_wait_s("x y z\n"), -1);
}

/* What --save-profiles saves: the device's own speed. A neighbouring rank
 * on the core held it half the time (1 s of CPU, 1 s of run-queue wait):
 * the steps ran at half speed (trn_speed_from_steps, what the refined
 * prediction of this job uses), but the device computes at its own speed
 * when alone. Fails if the saved figure counts the wait. */
static void test_speed_own(void **state)
{
	(void)state;
	assert_near(trn_speed_from_steps(10e9, 1, 1, 1, 1, 0), 5);
	assert_near(trn_speed_own(10e9, 1, 1, 1, 0), 10);
	/* a 0.4-core quota is the device's own (its wait, 1.5 s, is the
	 * throttling): the process's CPU over its cores keeps it */
	assert_near(trn_speed_from_steps(10e9, 1, 1.5, 1, 0.4, 0), 4);
	assert_near(trn_speed_own(10e9, 1, 1, 0.4, 0), 4);
	/* so is its communication thread's CPU on its one core, and the
	 * optimizer step is taken off as for the steps' figure */
	assert_near(trn_speed_own(10e9, 1, 1.25, 1, 0), 8);
	assert_near(trn_speed_own(10e9, 1.25, 1.25, 1, 0.25), 10);
	/* nothing measured */
	assert_near(trn_speed_own(0, 1, 1, 1, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schedstat_wait),
		cmocka_unit_test(test_speed_own),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
