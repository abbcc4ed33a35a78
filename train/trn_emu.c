// SPDX-License-Identifier: Apache-2.0
/*
 * trn_emu: pad real CPU compute to an emulated device's stated speed.
 *
 * A sleep wakes up late (timer slack, scheduling). That lateness is an
 * artefact of the emulation, not time the device spent: a call that begins
 * soon after the previous one returned starts its stated time that much
 * earlier, so back-to-back calls add up to the stated time. The time
 * between the return and the next begin (the caller waited for data, did
 * host work) is kept: the device would have idled too.
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

/* Lateness is carried only into a call that begins this soon after the
 * previous one returned, and only up to this much (a thread descheduled
 * for longer should show in the results). */
#define EMU_CARRY_NS 1000000ull

void trn_emu_begin(struct trn_emu *e)
{
	uint64_t now = now_ns();

	e->real_ns = now;
	e->t0_ns = now;
	if (e->late_ns != 0 && now - e->woke_ns < EMU_CARRY_NS)
		e->t0_ns = now - e->late_ns;
	e->late_ns = 0; /* carried once */
}

void trn_emu_end(struct trn_emu *e, double flops)
{
	uint64_t target, stated, now = now_ns();
	struct timespec ts;

	e->calls++;
	e->late_ns = 0;
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
		e->woke_ns = now;
		return;
	}
	if (now < target) {
		ts.tv_sec = (time_t)(target / 1000000000ull);
		ts.tv_nsec = (long)(target % 1000000000ull);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		now = now_ns();
	}
	/* late: the carried lateness ran out (now >= target on entry) or the
	 * sleep woke after target */
	e->woke_ns = now;
	if (now > target && now - target < EMU_CARRY_NS)
		e->late_ns = now - target;
}
