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

/* A call beginning this soon after the previous stated end continues it. */
#define EMU_CARRY_NS 1000000ull

void trn_emu_begin(struct trn_emu *e)
{
	uint64_t now = now_ns();

	e->real_ns = now;
	e->t0_ns = e->due_ns != 0 && now >= e->due_ns && now - e->due_ns < EMU_CARRY_NS ? e->due_ns
											: now;
}

void trn_emu_end(struct trn_emu *e, double flops)
{
	uint64_t target, stated, now = now_ns();
	struct timespec ts;

	e->calls++;
	if (!(e->gflops > 0) || !(flops > 0))
		return;
	stated = (uint64_t)(flops / e->gflops); /* GFLOP/s = FLOP/ns */
	target = e->t0_ns + stated;
	e->due_ns = target;
	if (now - e->real_ns > stated) {
		/* the CPU itself was slower than the stated speed */
		e->overruns++;
		e->overrun_s += (double)(now - e->real_ns - stated) * 1e-9;
		e->due_ns = now;
		return;
	}
	if (now >= target)
		return; /* a late wake-up carried in from the previous call */
	ts.tv_sec = (time_t)(target / 1000000000ull);
	ts.tv_nsec = (long)(target % 1000000000ull);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}
