/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tp_dcqcn: DCQCN (Zhu et al., SIGCOMM 2015) reaction point (sender) and
 * notification point (receiver), with the parameter names and units of the
 * mlx5 driver's cc_params and ConnectX firmware.
 *
 * The state machines are pure: every call takes the current time in
 * nanoseconds, so a test can drive them with a hand-made clock. Timers are
 * evaluated lazily (a call processes every period that elapsed since the last
 * call), so no timer thread is needed and 1 us periods cost nothing.
 *
 * Reaction point, rates Rc (current) and Rt (target) in bit/s, alpha in [0,1]:
 *  - CNP (at most one reduction per rate_reduce_monitor_period):
 *      first CNP of a flow: if rate_to_set_on_first_cnp != 0, Rc = that rate;
 *      Rt = Rc (when clamp_tgt_rate, or when the flow had increased since the
 *      last reduction); Rc = Rc * (1 - alpha * 2^-rp_gd * 1024) i.e. with
 *      rp_gd = 11, Rc * (1 - alpha/2); never below rp_min_dec_fac % of the old
 *      Rc, nor below rp_min_rate; alpha = (1 - g) * alpha + g where
 *      g = (1024 - dce_tcp_g) / 1024; the increase stage counters reset.
 *  - every dce_tcp_rtt without a CNP: alpha = (1 - g) * alpha.
 *  - increase events: each rp_time_reset elapsed (timer T) and each
 *    rp_byte_reset bytes sent (byte counter BC). With i = min(T, BC) events:
 *      max(T, BC) < rp_threshold: fast recovery, Rc = (Rt + Rc) / 2
 *      min(T, BC) >= rp_threshold: hyper increase, Rt += rp_hai_rate,
 *        Rc = (Rt + Rc) / 2
 *      otherwise: additive increase, Rt += rp_ai_rate, Rc = (Rt + Rc) / 2
 *    (T and BC count the events since the last cut; each event is applied
 *    on its own, in time order.)
 *    Rt and Rc never exceed rp_max_rate (line rate).
 * Notification point: on a CE-marked packet for a QP, send a CNP unless one
 * was sent for that QP less than np_min_time_between_cnps ago.
 */
#ifndef TP_DCQCN_H
#define TP_DCQCN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ice_config.h"
#include "ice_dcqcn.h"

struct tp_dcqcn_rp {
	const struct ice_dcqcn_params *p; /* not owned; may change at run time */
	double rc_bps;			  /* current rate */
	double rt_bps;			  /* target rate */
	double alpha;
	uint32_t t_events;    /* timer events since the last cut (T) */
	uint32_t bc_events;   /* byte-counter events since the last cut (BC) */
	uint64_t bytes_acc;   /* bytes since the last byte-counter event */
	uint64_t last_cut_ns; /* time of the last reduction */
	uint64_t alpha_ns;    /* last alpha decay evaluation */
	uint64_t timer_ns;    /* last rate-increase timer evaluation */
	bool cnp_seen;	      /* any CNP since init */
	bool increased;	      /* an increase happened since the last cut */
	/* counters */
	uint64_t cnps;	    /* CNPs received */
	uint64_t cuts;	    /* reductions applied */
	uint64_t increases; /* increase events applied */
};

/* Start at line rate (rp_max_rate), or at start_bps when non-zero (a planned
 * rate: the proactive plan lets a flow begin at its share). */
void tp_dcqcn_rp_init(struct tp_dcqcn_rp *rp, const struct ice_dcqcn_params *p, uint64_t now_ns,
		      double start_bps);
/* A CNP arrived for this QP. Returns true when it cut the rate. */
bool tp_dcqcn_rp_on_cnp(struct tp_dcqcn_rp *rp, uint64_t now_ns);
/* bytes were sent (drives the byte counter). */
void tp_dcqcn_rp_on_sent(struct tp_dcqcn_rp *rp, uint64_t bytes, uint64_t now_ns);
/* Advance timers (alpha decay, rate-increase timer) to now. Cheap when
 * nothing elapsed; call before reading rc_bps. */
void tp_dcqcn_rp_tick(struct tp_dcqcn_rp *rp, uint64_t now_ns);
/* Current sending rate in bit/s (0 = unlimited). */
double tp_dcqcn_rp_rate(const struct tp_dcqcn_rp *rp);

struct tp_dcqcn_np {
	uint64_t last_cnp_ns;
	bool sent_any;
	uint64_t ce_seen;   /* CE-marked packets seen */
	uint64_t cnps_sent; /* CNPs we decided to send */
};

void tp_dcqcn_np_init(struct tp_dcqcn_np *np);
/* A CE-marked packet arrived; returns true when a CNP must be sent now. */
bool tp_dcqcn_np_on_ce(struct tp_dcqcn_np *np, const struct ice_dcqcn_params *p, uint64_t now_ns);

#endif /* TP_DCQCN_H */
