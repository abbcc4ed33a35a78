// SPDX-License-Identifier: Apache-2.0
/*
 * trn: what a rank's CPU measurements say, as the predictor uses them
 * (issue 20): the run-queue wait the kernel keeps for a thread, a
 * device's own speed.
 */
#include <stdio.h>

#include "trn.h"

double trn_schedstat_wait_s(const char *text)
{
	unsigned long long run_ns = 0, wait_ns = 0, slices = 0;
	int n = text != NULL ? sscanf(text, "%llu %llu %llu", &run_ns, &wait_ns, &slices) : 0;

	/* all zeros: the kernel keeps no statistics (sched_info off) and
	 * writes "0 0 0"; a thread reading its own file has been on a CPU at
	 * least once (a task that has just started writes "0 0 1") */
	if (n < 2 || (run_ns == 0 && wait_ns == 0 && slices == 0))
		return -1;
	return (double)wait_ns * 1e-9;
}

double trn_speed_own(double flops, double thread_cpu_s, double proc_cpu_s, double cores,
		     double other_s)
{
	return trn_speed_from_steps(flops, thread_cpu_s, 0, proc_cpu_s, cores, other_s);
}
