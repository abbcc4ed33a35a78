// SPDX-License-Identifier: Apache-2.0
/*
 * trn_emu: pad real CPU compute to an emulated device's stated speed.
 */
#include <errno.h>
#include <time.h>

#include "trn.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void trn_emu_begin(struct trn_emu *e)
{
	e->t0_ns = now_ns();
}

void trn_emu_end(struct trn_emu *e, double flops)
{
	uint64_t target, now = now_ns();
	struct timespec ts;

	e->calls++;
	if (!(e->gflops > 0) || !(flops > 0))
		return;
	target = e->t0_ns + (uint64_t)(flops / e->gflops); /* GFLOP/s = FLOP/ns */
	if (now > target) {
		/* the CPU was slower than the stated speed */
		e->overruns++;
		e->overrun_s += (double)(now - target) * 1e-9;
		return;
	}
	ts.tv_sec = (time_t)(target / 1000000000ull);
	ts.tv_nsec = (long)(target % 1000000000ull);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}
