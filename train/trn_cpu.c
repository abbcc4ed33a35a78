// SPDX-License-Identifier: Apache-2.0
/*
 * trn: what a rank's CPU measurements say, as the predictor uses them
 * (issue 20): the run-queue wait the kernel keeps for a thread.
 */
#include <stdio.h>

#include "trn.h"

double trn_schedstat_wait_s(const char *text)
{
	unsigned long long run_ns, wait_ns;

	if (text == NULL || sscanf(text, "%llu %llu", &run_ns, &wait_ns) != 2)
		return -1;
	return (double)wait_ns * 1e-9;
}
