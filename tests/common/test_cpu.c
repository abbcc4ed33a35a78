// SPDX-License-Identifier: Apache-2.0
/*
 * ice_cpu: cgroup v2 cpu.max text as cores, and the process's cores within
 * its affinity mask (the cgroup quota itself: test_devprof_quota runs the
 * profiler in a cgroup and checks the 0.5 cores it reports).
 */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ice_cpu.h"

static void test_cpu_max(void **state)
{
	assert_true(ice_cpu_max_cores("50000 100000\n") == 0.5);
	assert_true(ice_cpu_max_cores("200000 100000") == 2.0);
	assert_true(ice_cpu_max_cores("max 100000\n") == 0);
	assert_true(ice_cpu_max_cores("") == 0);
	assert_true(ice_cpu_max_cores("-1 100000") == 0);
	assert_true(ice_cpu_max_cores("50000") == 0);
	assert_true(ice_cpu_max_cores(NULL) == 0);
}

static void test_cpu_affinity(void **state)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set, one;
	char why[256];
	double c = ice_cpu_cores(why, sizeof(why));

	assert_true(c > 0 && c <= (double)online);
	assert_true(why[0] != '\0');
	/* one CPU of the mask: at most one core */
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	CPU_ZERO(&one);
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set)) {
			CPU_SET(i, &one);
			break;
		}
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	c = ice_cpu_cores(why, sizeof(why));
	assert_true(c > 0 && c <= 1.0);
	assert_int_equal(sched_setaffinity(0, sizeof(set), &set), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_max),
		cmocka_unit_test(test_cpu_affinity),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
