// SPDX-License-Identifier: Apache-2.0
/*
 * tp_dcqcn: DCQCN reaction point and notification point (see tp_dcqcn.h).
 *
 * Choices the header leaves open, made here:
 *  - alpha is set to rp_initial_alpha_value / 1024 at the first CNP and only
 *    runs (decays) after it, as the firmware does ("initial value of alpha to
 *    use when receiving the first CNP"). The first CNP cuts with that value
 *    and does not raise alpha; every later CNP decays alpha lazily to now,
 *    cuts (when rate_reduce_monitor_period allows) with that alpha, then
 *    raises it, alpha = (1 - g) * alpha + g, and restarts the alpha timer.
 *    A CNP suppressed by rate_reduce_monitor_period still raises alpha (it is
 *    a congestion signal) but changes neither rate nor increase stage.
 *  - Increase stage of an event: chosen from T and BC as they were before
 *    the event, so the first rp_threshold events are fast recovery, then the
 *    event is counted. The increase machinery runs whenever the rate is
 *    limited; at line rate (Rc == Rt == rp_max_rate) an event changes
 *    nothing, and a planned start rate below line rate climbs by additive /
 *    hyper increase when no CNP comes.
 *  - rp_max_rate == 0 (unlimited): Rc = 0 means "unlimited" until the first
 *    CNP, which starts from rp_rate_to_set_on_first_cnp, or from
 *    TP_DCQCN_UNLIMITED_FIRST_MBPS (100 Gbit/s) when that is 0, then cuts.
 *    After that Rt may grow without bound.
 *  - Zero periods disable what they drive: rp_time_reset 0 (no timer
 *    events), rp_byte_reset 0 (no byte-counter events, as in firmware),
 *    rp_dce_tcp_rtt 0 (no alpha decay), rp_rate_reduce_monitor_period 0 and
 *    np_min_time_between_cnps 0 (no suppression).
 *  - Time that goes backwards counts as no time elapsed.
 *  - enable == 0: the rate is rp_max_rate, CNPs are counted and ignored, and
 *    the timers are kept at now so re-enabling does not replay a backlog.
 */
#include "tp_dcqcn.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MBPS			      1e6
#define NS_PER_US		      1000ull
#define TP_DCQCN_UNLIMITED_FIRST_MBPS 100000u
/* Most increase events applied in one call; the rest of a longer backlog is
 * dropped (only reachable when rp_max_rate == 0, since at line rate the loop
 * stops early: with a 300 us timer this is ~20 s of events). */
#define TP_DCQCN_MAX_EVENTS_PER_CALL (1u << 16)

/* ---- reaction point ---- */

static double rp_max_bps(const struct ice_dcqcn_params *p)
{
	return (double)p->rp_max_rate * MBPS; /* 0: unlimited */
}

static double clamp_max(const struct ice_dcqcn_params *p, double bps)
{
	double max = rp_max_bps(p);

	return (max > 0 && bps > max) ? max : bps;
}

/* Whole periods of period_us elapsed between *since and now; *since moves to
 * the start of the current period. */
static uint64_t periods_elapsed(uint64_t *since, uint64_t now_ns, uint32_t period_us)
{
	uint64_t period_ns = (uint64_t)period_us * NS_PER_US;
	uint64_t n;

	if (period_ns == 0 || now_ns <= *since)
		return 0;
	n = (now_ns - *since) / period_ns;
	*since += n * period_ns;
	return n;
}

static void rp_increase_event(struct tp_dcqcn_rp *rp, bool timer)
{
	const struct ice_dcqcn_params *p = rp->p;
	uint32_t t = rp->t_events, bc = rp->bc_events;
	uint32_t hi = t > bc ? t : bc, lo = t < bc ? t : bc;

	if (hi < p->rp_threshold)
		; /* fast recovery: Rt stays */
	else if (lo >= p->rp_threshold)
		rp->rt_bps += (double)p->rp_hai_rate * MBPS;
	else
		rp->rt_bps += (double)p->rp_ai_rate * MBPS;
	rp->rt_bps = clamp_max(p, rp->rt_bps);
	rp->rc_bps = clamp_max(p, (rp->rt_bps + rp->rc_bps) / 2);
	/* (a + b) / 2 may never reach b in binary floating point */
	if (rp->rt_bps - rp->rc_bps < 1.0)
		rp->rc_bps = rp->rt_bps;

	if (timer && rp->t_events < UINT32_MAX)
		rp->t_events++;
	if (!timer && rp->bc_events < UINT32_MAX)
		rp->bc_events++;
	rp->increased = true;
	rp->increases++;
}

/* Nothing more can change: at line rate, no increase step can move it. */
static bool rp_at_fixed_point(const struct tp_dcqcn_rp *rp)
{
	double max = rp_max_bps(rp->p);

	return rp->rc_bps <= 0 || (max > 0 && rp->rc_bps >= max && rp->rt_bps >= max);
}

static void rp_increase_events(struct tp_dcqcn_rp *rp, uint64_t n, bool timer)
{
	uint64_t i;

	if (n > TP_DCQCN_MAX_EVENTS_PER_CALL)
		n = TP_DCQCN_MAX_EVENTS_PER_CALL;
	for (i = 0; i < n; i++) {
		if (rp_at_fixed_point(rp)) {
			/* count the rest without changing the rates */
			uint64_t rest = n - i;
			uint32_t *c = timer ? &rp->t_events : &rp->bc_events;

			*c = (uint64_t)*c + rest > UINT32_MAX ? UINT32_MAX : (uint32_t)(*c + rest);
			return;
		}
		rp_increase_event(rp, timer);
	}
}

static void rp_alpha_decay(struct tp_dcqcn_rp *rp, uint64_t now_ns)
{
	uint64_t n;

	if (!rp->cnp_seen) {
		rp->alpha_ns = now_ns;
		return;
	}
	n = periods_elapsed(&rp->alpha_ns, now_ns, rp->p->rp_dce_tcp_rtt);
	if (n > 0)
		rp->alpha *= pow(rp->p->rp_dce_tcp_g / 1024.0, (double)n);
}

void tp_dcqcn_rp_init(struct tp_dcqcn_rp *rp, const struct ice_dcqcn_params *p, uint64_t now_ns,
		      double start_bps)
{
	memset(rp, 0, sizeof(*rp));
	rp->p = p;
	rp->rc_bps = start_bps > 0 ? clamp_max(p, start_bps) : rp_max_bps(p);
	rp->rt_bps = rp->rc_bps;
	rp->alpha = p->rp_initial_alpha_value / 1024.0;
	rp->last_cut_ns = now_ns;
	rp->alpha_ns = now_ns;
	rp->timer_ns = now_ns;
}

void tp_dcqcn_rp_tick(struct tp_dcqcn_rp *rp, uint64_t now_ns)
{
	uint64_t n;

	if (!rp->p->enable) {
		if (now_ns > rp->alpha_ns)
			rp->alpha_ns = now_ns;
		if (now_ns > rp->timer_ns)
			rp->timer_ns = now_ns;
		return;
	}
	rp_alpha_decay(rp, now_ns);
	n = periods_elapsed(&rp->timer_ns, now_ns, rp->p->rp_time_reset);
	if (n > 0)
		rp_increase_events(rp, n, true);
	/* the parameters may have changed at run time */
	rp->rt_bps = clamp_max(rp->p, rp->rt_bps);
	rp->rc_bps = clamp_max(rp->p, rp->rc_bps);
}

void tp_dcqcn_rp_on_sent(struct tp_dcqcn_rp *rp, uint64_t bytes, uint64_t now_ns)
{
	uint32_t reset = rp->p->rp_byte_reset;
	uint64_t n;

	tp_dcqcn_rp_tick(rp, now_ns); /* timer events before now come first */
	if (!rp->p->enable || reset == 0)
		return;
	if (bytes > UINT64_MAX - rp->bytes_acc)
		bytes = UINT64_MAX - rp->bytes_acc;
	rp->bytes_acc += bytes;
	n = rp->bytes_acc / reset;
	rp->bytes_acc %= reset;
	if (n > 0)
		rp_increase_events(rp, n, false);
}

bool tp_dcqcn_rp_on_cnp(struct tp_dcqcn_rp *rp, uint64_t now_ns)
{
	const struct ice_dcqcn_params *p = rp->p;
	uint64_t monitor_ns = (uint64_t)p->rp_rate_reduce_monitor_period * NS_PER_US;
	double old, cut, keep, floor;

	rp->cnps++;
	if (!p->enable)
		return false;
	tp_dcqcn_rp_tick(rp, now_ns);

	if (!rp->cnp_seen) {
		double first = p->rp_rate_to_set_on_first_cnp;

		if (first == 0 && rp->rc_bps <= 0)
			first = TP_DCQCN_UNLIMITED_FIRST_MBPS;
		if (first > 0)
			rp->rc_bps = clamp_max(p, first * MBPS);
		rp->rt_bps = rp->rc_bps;
		rp->alpha = p->rp_initial_alpha_value / 1024.0;
		rp->alpha_ns = now_ns;
	} else {
		double g = (1024 - p->rp_dce_tcp_g) / 1024.0;
		uint64_t since = now_ns > rp->last_cut_ns ? now_ns - rp->last_cut_ns : 0;
		bool allowed = since >= monitor_ns;

		/* alpha after the cut: the cut uses the alpha before this CNP */
		if (!allowed) {
			rp->alpha = (1 - g) * rp->alpha + g;
			rp->alpha_ns = now_ns;
			return false;
		}
		if (p->rp_clamp_tgt_rate || rp->increased)
			rp->rt_bps = rp->rc_bps;
	}

	old = rp->rc_bps;
	cut = old * (1 - rp->alpha * ldexp(1.0, 10 - (int)p->rp_gd));
	keep = old * (p->rp_min_dec_fac / 100.0);
	floor = (double)p->rp_min_rate * MBPS;
	if (cut < keep)
		cut = keep;
	if (cut < floor)
		cut = floor;
	rp->rc_bps = clamp_max(p, cut);

	if (rp->cnp_seen) {
		double g = (1024 - p->rp_dce_tcp_g) / 1024.0;

		rp->alpha = (1 - g) * rp->alpha + g;
		rp->alpha_ns = now_ns;
	}
	rp->cnp_seen = true;
	rp->t_events = 0;
	rp->bc_events = 0;
	rp->bytes_acc = 0;
	rp->timer_ns = now_ns;
	rp->last_cut_ns = now_ns;
	rp->increased = false;
	rp->cuts++;
	return true;
}

double tp_dcqcn_rp_rate(const struct tp_dcqcn_rp *rp)
{
	if (!rp->p->enable)
		return rp_max_bps(rp->p);
	return rp->rc_bps;
}

/* ---- notification point ---- */

void tp_dcqcn_np_init(struct tp_dcqcn_np *np)
{
	memset(np, 0, sizeof(*np));
}

bool tp_dcqcn_np_on_ce(struct tp_dcqcn_np *np, const struct ice_dcqcn_params *p, uint64_t now_ns)
{
	uint64_t gap_ns = (uint64_t)p->np_min_time_between_cnps * NS_PER_US;

	np->ce_seen++;
	if (np->sent_any && now_ns >= np->last_cnp_ns && now_ns - np->last_cnp_ns < gap_ns)
		return false;
	np->sent_any = true;
	np->last_cnp_ns = now_ns;
	np->cnps_sent++;
	return true;
}
