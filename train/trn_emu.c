// SPDX-License-Identifier: Apache-2.0
/*
 * trn_emu: pad real CPU compute to an emulated device's stated speed.
 *
 * The emulated device runs like an accelerator's stream: the host launches
 * work and the device runs it back to back. So a call that begins soon
 * after the previous one returned, with no wait for data in between, starts
 * its stated time where the previous call's ended: the host work between
 * the two (posting a send, bookkeeping) and the previous sleep's late
 * wake-up (timer slack, a descheduled vCPU) overlap the device, as a launch
 * queue would hide them. So does a call whose real computation took longer
 * than its stated time (counted as an overrun): the wall clock still shows
 * it unless later calls have the slack to make it up, so a CPU that is
 * really too slow shows in the results. After a wait for data
 * (trn_emu_idle) or a longer host gap the device has idled: the stated
 * time starts at the call.
 */
#include <errno.h>
#include <time.h>

#include "trn.h"
#include "ice_time.h"

/* What the stream hides is bounded by TRN_EMU_HIDE_MAX_NS (trn.h): a thread
 * descheduled for longer should show in the results. */

void trn_emu_idle(struct trn_emu *e)
{
	e->idle = true;
}

void trn_emu_begin(struct trn_emu *e)
{
	uint64_t now = ice_now_ns();

	e->real_ns = now;
	e->t0_ns = now;
	if (e->calls > 0 && !e->idle && now - e->woke_ns < TRN_EMU_GAP_NS && e->due_ns < now) {
		e->t0_ns = now - e->due_ns < TRN_EMU_HIDE_MAX_NS ? e->due_ns
								 : now - TRN_EMU_HIDE_MAX_NS;
		/* counted once: the host gap and what the last call added */
		e->hidden_s += (double)(now - e->woke_ns + e->fresh_ns) * 1e-9;
	}
	e->idle = false;
	e->fresh_ns = 0;
}

/* End a call whose stated time is stated ns. */
static void emu_end(struct trn_emu *e, uint64_t stated)
{
	uint64_t target, now = ice_now_ns();
	struct timespec ts;

	e->calls++;
	e->woke_ns = now;
	e->due_ns = now;
	if (stated == 0)
		return;
	target = e->t0_ns + stated;
	e->due_ns = target;
	if (now - e->real_ns > stated) {
		/* the CPU itself took longer than the stated time (too slow, or
		 * descheduled): counted; the next call may still make it up
		 * from the stated end, if it has the slack */
		e->overruns++;
		e->overrun_s += (double)(now - e->real_ns - stated) * 1e-9;
		e->fresh_ns = now - e->real_ns - stated;
		return;
	}
	if (now < target) {
		ts.tv_sec = (time_t)(target / 1000000000ull);
		ts.tv_nsec = (long)(target % 1000000000ull);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		now = ice_now_ns();
		e->fresh_ns = now > target ? now - target : 0; /* woke late */
	}
	e->woke_ns = now;
}

void trn_emu_end(struct trn_emu *e, double flops)
{
	/* GFLOP/s = FLOP/ns */
	emu_end(e, e->gflops > 0 && flops > 0 ? (uint64_t)(flops / e->gflops) : 0);
}

void trn_emu_end_bytes(struct trn_emu *e, double bytes)
{
	emu_end(e, e->mem_gbps > 0 && bytes > 0 ? (uint64_t)(bytes / e->mem_gbps) : 0);
}
