// SPDX-License-Identifier: Apache-2.0
/*
 * trn: what a rank's CPU measurements say, as the predictor uses them
 * (issue 20): the run-queue wait the kernel keeps for a thread, a
 * device's own speed, a pipeline message's CPU per byte and per message.
 */
#include <errno.h>
#include <math.h>
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

int trn_msg_cpu_fit(double small_bytes, double small_cpu_s, double big_bytes, double big_cpu_s,
		    double *per_byte, double *per_msg)
{
	if (!(big_bytes > small_bytes) || !(small_bytes >= 0) || per_byte == NULL ||
	    per_msg == NULL)
		return -EINVAL;
	/* a round is two messages: one sent, one received */
	*per_byte = fmax(0, (big_cpu_s - small_cpu_s) / (2 * (big_bytes - small_bytes)));
	*per_msg = fmax(0, small_cpu_s / 2 - *per_byte * small_bytes);
	return 0;
}
