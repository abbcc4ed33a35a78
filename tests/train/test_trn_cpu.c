// SPDX-License-Identifier: Apache-2.0
/*
 * trn's CPU measurements of a rank (trn_cpu.c, issue 20): the run-queue
 * wait read from schedstat's text, known or not; a device's own speed; a
 * pipeline message's CPU per byte and per message.
 */
#include <errno.h>
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

/* The pipeline predictor prices a stage's messages as cpu_p2p_s per byte
 * plus cpu_msg_s per message (trn_predict_pp); the calibration times rounds
 * of a send and a receive as a stage makes them, checksums included, at
 * two sizes. A stage whose messages cost 30 us each plus 1 ns a byte (0.2
 * transport, 0.8 checksum): the fit gives 30 us and 1 ns back, and
 * prices either size as it was measured. Fails if the per-message figure
 * holds a per-byte cost: the calibration before took one size only and
 * left the checksum in the message's figure (30 + 0.8 * 8192 ns = 36.6 us,
 * so a stage of larger activations was priced as one of these). */
static void test_msg_cpu_fit(void **state)
{
	double pm = 30e-6, pb = 1e-9, b, m;

	(void)state;
	assert_int_equal(trn_msg_cpu_fit(4, 2 * (pm + 4 * pb), 8192, 2 * (pm + 8192 * pb), &b, &m),
			 0);
	assert_near(b, pb);
	assert_near(m, pm);
	assert_near(b * 8192 + m, pm + 8192 * pb);
	assert_near(b * 4 + m, pm + 4 * pb);
	/* a larger message than measured costs its bytes more */
	assert_near(b * 65536 + m, pm + 65536 * pb);
	/* noise: the large round measured below the small one is no negative
	 * cost per byte */
	assert_int_equal(trn_msg_cpu_fit(4, 60e-6, 8192, 50e-6, &b, &m), 0);
	assert_near(b, 0);
	assert_near(m, 30e-6);
	/* sizes that give no slope */
	assert_int_equal(trn_msg_cpu_fit(4, 60e-6, 4, 70e-6, &b, &m), -EINVAL);
	assert_int_equal(trn_msg_cpu_fit(8192, 60e-6, 4, 70e-6, &b, &m), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schedstat_wait),
		cmocka_unit_test(test_speed_own),
		cmocka_unit_test(test_msg_cpu_fit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
