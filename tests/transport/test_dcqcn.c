// SPDX-License-Identifier: Apache-2.0
/*
 * test_dcqcn: hand-computed traces of the DCQCN reaction point and
 * notification point (tp_dcqcn.h), driven by a hand-made clock.
 *
 * Every expected number is a literal. They were worked out with python3
 * doubles, applying the formulas in the order the comments state, e.g.
 *   a0 = 1023/1024; d = 1019/1024 (1 - g); g = 5/1024
 *   first cut: 100e9 * (1 - a0 / 2) = 50048828125.0
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tp_dcqcn.h"

#define US 1000ull /* ns */

/* Relative 1e-12: the traces follow the code's operation order, so the
 * results agree to the last bit or two. */
#define assert_near(actual, expected) assert_near_at((actual), (expected), #actual, __LINE__)

static void assert_near_at(double actual, double expected, const char *what, int line)
{
	double tol = 1e-12 * fabs(expected) + 1e-12;

	if (fabs(actual - expected) > tol) {
		print_error("line %d: %s = %.17g, expected %.17g\n", line, what, actual, expected);
		fail();
	}
}

/* Defaults with a 100 Gbit/s line rate. */
static void params_100g(struct ice_dcqcn_params *p)
{
	ice_dcqcn_params_default(p);
	p->rp_max_rate = 100000;
}

static void test_defaults(void **state)
{
	struct ice_dcqcn_params p;
	struct ice_cfg_err err;

	ice_dcqcn_params_default(&p);
	assert_int_equal(p.enable, 1);
	assert_int_equal(p.rp_time_reset, 300);
	assert_int_equal(p.rp_byte_reset, 32767);
	assert_int_equal(p.rp_threshold, 1);
	assert_int_equal(p.rp_ai_rate, 5);
	assert_int_equal(p.rp_hai_rate, 50);
	assert_int_equal(p.rp_gd, 11);
	assert_int_equal(p.rp_min_dec_fac, 50);
	assert_int_equal(p.rp_min_rate, 1);
	assert_int_equal(p.rp_dce_tcp_g, 1019);
	assert_int_equal(p.rp_dce_tcp_rtt, 1);
	assert_int_equal(p.rp_rate_reduce_monitor_period, 4);
	assert_int_equal(p.rp_initial_alpha_value, 1023);
	assert_int_equal(p.np_min_time_between_cnps, 4);
	assert_int_equal(p.rp_clamp_tgt_rate, 0);
	assert_int_equal(p.rp_rate_to_set_on_first_cnp, 0);
	assert_int_equal(p.rp_max_rate, 0);
	assert_int_equal(ice_dcqcn_params_check(&p, &err), 0);
}

/* Flow at line rate; nothing moves before a CNP; the first CNP cuts with
 * alpha = 1023/1024 and rp_gd = 11: Rc = 100e9 * (1 - 1023/2048). */
static void test_first_cnp_cut(void **state)
{
	struct ice_dcqcn_params p;
	struct tp_dcqcn_rp rp;

	params_100g(&p);
	tp_dcqcn_rp_init(&rp, &p, 0, 0);
	assert_near(tp_dcqcn_rp_rate(&rp), 100e9);
	tp_dcqcn_rp_tick(&rp, 1000 * US); /* 3 timer events: no effect at line rate */
	assert_near(tp_dcqcn_rp_rate(&rp), 100e9);
	assert_near(rp.alpha, 1023.0 / 1024); /* alpha does not run before a CNP */

	assert_true(tp_dcqcn_rp_on_cnp(&rp, 1000 * US));
	assert_near(tp_dcqcn_rp_rate(&rp), 50048828125.0);
	assert_near(rp.rt_bps, 100e9);
	assert_near(rp.alpha, 1023.0 / 1024); /* the first CNP sets, not raises */
	assert_int_equal(rp.cnps, 1);
	assert_int_equal(rp.cuts, 1);
	assert_int_equal(rp.t_events, 0);
}

/* rp_gd = 10: cut = alpha * 2^0 = 1023/1024, Rc would be 100e9 / 1024 =
 * 97656250; rp_min_dec_fac keeps 50 % (50e9), or 10 % (10e9). */
static void test_min_dec_fac_floor(void **state)
{
	struct ice_dcqcn_params p;
	struct tp_dcqcn_rp rp;

	params_100g(&p);
	p.rp_gd = 10;
	tp_dcqcn_rp_init(&rp, &p, 0, 0);
	assert_true(tp_dcqcn_rp_on_cnp(&rp, 0));
	assert_near(tp_dcqcn_rp_rate(&rp), 50e9);

	p.rp_min_dec_fac = 10;
	tp_dcqcn_rp_init(&rp, &p, 0, 0);
	assert_true(tp_dcqcn_rp_on_cnp(&rp, 0));
	assert_near(tp_dcqcn_rp_rate(&rp), 10e9);

	p.rp_min_dec_fac = 100; /* keep all: a CNP cannot cut */
	tp_dcqcn_rp_init(&rp, &p, 0, 0);
	assert_true(tp_dcqcn_rp_on_cnp(&rp, 0));
	assert_near(tp_dcqcn_rp_rate(&rp), 100e9);
}

/* rp_min_rate 60000 Mbit/s: the cut to 50048828125 stops at 60e9. */
static void test_min_rate_floor(void **state)
{
	struct ice_dcqcn_params p;
	struct tp_dcqcn_rp rp;

	params_100g(&p);
	p.rp_min_rate = 60000;
	tp_dcqcn_rp_init(&rp, &p, 0, 0);
	assert_true(tp_dcqcn_rp_on_cnp(&rp, 0));
	assert_near(tp_dcqcn_rp_rate(&rp), 60e9);
	assert_true(tp_dcqcn_rp_on_cnp(&rp, 10 * US));
	assert_near(tp_dcqcn_rp_rate(&rp), 60e9);
}

/* rate_reduce_monitor_period 4 us: CNPs at 0 (cut), 2 us (suppressed, but
 * raises alpha), 4 us (cut).
 *   t=2: alpha = a0 * d^2 = 0.9892911678180099, then d * alpha + g =
 *        0.9893434570376485
 *   t=4: alpha = that * d^2 = 0.9797054876261422;
 *        Rc = 50048828125 * (1 - alpha / 2) = 25532272343.339947;
 *        no increase since the cut and no clamp: Rt stays 100e9;
 *        alpha = d * alpha + g = 0.9798045819248427 */
static void test_monitor_period(void **state)
{
	struct ice_dcqcn_params p;
	struct tp_dcqcn_rp rp;

	params_100g(&p);
	tp_dcqcn_rp_init(&rp, &p, 0, 0);
	assert_true(tp_dcqcn_rp_on_cnp(&rp, 0));
	assert_near(tp_dcqcn_rp_rate(&rp), 50048828125.0);

	assert_false(tp_dcqcn_rp_on_cnp(&rp, 2 * US));
	assert_near(tp_dcqcn_rp_rate(&rp), 50048828125.0);
	assert_near(rp.alpha, 0.9893434570376485);
	assert_int_equal(rp.cnps, 2);
	assert_int_equal(rp.cuts, 1);

	assert_false(tp_dcqcn_rp_on_cnp(&rp, 4 * US - 1));
	/* (the 3.999 us CNP raised alpha again; redo the trace without it) */
	tp_dcqcn_rp_init(&rp, &p, 0, 0);
	tp_dcqcn_rp_on_cnp(&rp, 0);
	tp_dcqcn_rp_on_cnp(&rp, 2 * US);
	assert_true(tp_dcqcn_rp_on_cnp(&rp, 4 * US));
	assert_near(tp_dcqcn_rp_rate(&rp), 25532272343.339947);
	assert_near(rp.rt_bps, 100e9);
	assert_near(rp.alpha, 0.9798045819248427);
	assert_int_equal(rp.cuts, 2);
}

/* After the first CNP alpha decays by d = 1019/1024 per elapsed 1 us:
 * 10 periods: a0 * d^10 = 0.9513009944463662; a partial period is kept for
 * later; 1e9 periods (1000 s) take one pow(), alpha underflows to ~0. */
static void test_alpha_decay(void **state)
{
	struct ice_dcqcn_params p;
	struct tp_dcqcn_rp rp;

	params_100g(&p);
	tp_dcqcn_rp_init(&rp, &p, 0, 0);
	tp_dcqcn_rp_on_cnp(&rp, 0);
	tp_dcqcn_rp_tick(&rp, 10 * US + 500);
	assert_near(rp.alpha, 0.9513009944463662);
	tp_dcqcn_rp_tick(&rp, 11 * US); /* 0.5 us + 0.5 us: the 11th period */
	assert_near(rp.alpha, 0.9513009944463662 * 1019 / 1024);
	tp_dcqcn_rp_tick(&rp, 1000000000 * US);
	assert_true(rp.alpha < 1e-300);
}

/* alpha increase on a CNP: after 10 us of decay alpha = 0.9513009944463662;
 * the CNP at 10 us cuts with it, then alpha = d * alpha + g =
 * 0.9513009944463662 * 1019/1024 + 5/1024. */
static void test_alpha_increase(void **state)
{
	struct ice_dcqcn_params p;
	struct tp_dcqcn_rp rp;

	params_100g(&p);
	tp_dcqcn_rp_init(&rp, &p, 0, 0);
	tp_dcqcn_rp_on_cnp(&rp, 0);
	assert_true(tp_dcqcn_rp_on_cnp(&rp, 10 * US));
	assert_near(tp_dcqcn_rp_rate(&rp), 50048828125.0 * (1 - 0.9513009944463662 / 2));
	assert_near(rp.alpha, 0.9513009944463662 * 1019 / 1024 + 5.0 / 1024);
	/* the alpha timer restarted at the CNP: 0.9 us later, no decay */
	tp_dcqcn_rp_tick(&rp, 10 * US + 900);
	assert_near(rp.alpha, 0.9513009944463662 * 1019 / 1024 + 5.0 / 1024);
}

/* Paper setting F = 5, with a planned start of 40 Gbit/s on a 100 Gbit/s
 * line (so Rt is not held at line rate), timer 300 us, byte counter
 * 1000000 B, AI 40 Mbit/s, HAI 400 Mbit/s.
 *   t=0 CNP: Rt = 40e9, Rc = 40e9 * 1025/2048 = 20019531250
 *   timer events at 300..1500 us: T = 0..4 before each, fast recovery,
 *     Rc = (Rt + Rc) / 2: 30009765625, 35004882812.5, 37502441406.25,
 *     38751220703.125, 39375610351.5625
 *   1800 us: T = 5, BC = 0: additive, Rt = 40.04e9, Rc = 39707805175.78125
 *   5e6 B at 1850 us: BC = 0..4, T = 6: additive five times, Rt = 40.24e9,
 *     Rc = 40190868911.743164
 *   1e6 B at 1900 us: BC = 5, T = 6: hyper, Rt = 40.64e9,
 *     Rc = 40415434455.87158
 *   2100 us: timer, hyper: Rt = 41.04e9, Rc = 40727717227.93579 */
static void test_increase_stages(void **state)
{
	struct ice_dcqcn_params p;
	struct tp_dcqcn_rp rp;

	params_100g(&p);
	p.rp_threshold = 5;
	p.rp_byte_reset = 1000000;
	p.rp_ai_rate = 40;
	p.rp_hai_rate = 400;
	tp_dcqcn_rp_init(&rp, &p, 0, 40e9);
	assert_near(tp_dcqcn_rp_rate(&rp), 40e9);
	assert_true(tp_dcqcn_rp_on_cnp(&rp, 0));
	assert_near(tp_dcqcn_rp_rate(&rp), 20019531250.0);
	assert_near(rp.rt_bps, 40e9);

	/* fast recovery */
	tp_dcqcn_rp_tick(&rp, 300 * US);
	assert_near(tp_dcqcn_rp_rate(&rp), 30009765625.0);
	tp_dcqcn_rp_tick(&rp, 1499 * US);
	assert_near(tp_dcqcn_rp_rate(&rp), 38751220703.125);
	assert_int_equal(rp.t_events, 4);
	tp_dcqcn_rp_tick(&rp, 1500 * US);
	assert_near(tp_dcqcn_rp_rate(&rp), 39375610351.5625);
	assert_near(rp.rt_bps, 40e9);

	/* additive increase from the timer */
	tp_dcqcn_rp_tick(&rp, 1800 * US);
	assert_near(rp.rt_bps, 40.04e9);
	assert_near(tp_dcqcn_rp_rate(&rp), 39707805175.78125);

	/* additive increase from the byte counter */
	tp_dcqcn_rp_on_sent(&rp, 5000000, 1850 * US);
	assert_int_equal(rp.bc_events, 5);
	assert_near(rp.rt_bps, 40.24e9);
	assert_near(tp_dcqcn_rp_rate(&rp), 40190868911.743164);

	/* hyper increase: both T and BC reached F */
	tp_dcqcn_rp_on_sent(&rp, 1000000, 1900 * US);
	assert_near(rp.rt_bps, 40.64e9);
	assert_near(tp_dcqcn_rp_rate(&rp), 40415434455.87158);
	tp_dcqcn_rp_tick(&rp, 2100 * US);
	assert_near(rp.rt_bps, 41.04e9);
	assert_near(tp_dcqcn_rp_rate(&rp), 40727717227.93579);
	assert_int_equal(rp.t_events, 7);
	assert_int_equal(rp.bc_events, 6);
	assert_int_equal(rp.increases, 13);

	/* a cut after increases: Rt = Rc, counters reset */
	assert_true(tp_dcqcn_rp_on_cnp(&rp, 2200 * US));
	assert_near(rp.rt_bps, 40727717227.93579);
	assert_int_equal(rp.t_events, 0);
	assert_int_equal(rp.bc_events, 0);
}

/* Byte counter: each full rp_byte_reset bytes is one event, the remainder
 * carries over; a cut discards it. Defaults F = 1, line 100G, first cut to
 * 50048828125; FR event: Rc = (100e9 + 50048828125) / 2 = 75024414062.5 */
static void test_byte_counter(void **state)
{
	struct ice_dcqcn_params p;
	struct tp_dcqcn_rp rp;

	params_100g(&p);
	tp_dcqcn_rp_init(&rp, &p, 0, 0);
	tp_dcqcn_rp_on_cnp(&rp, 0);
	tp_dcqcn_rp_on_sent(&rp, 32766, 1 * US);
	assert_int_equal(rp.bc_events, 0);
	assert_near(tp_dcqcn_rp_rate(&rp), 50048828125.0);
	tp_dcqcn_rp_on_sent(&rp, 1, 2 * US);
	assert_int_equal(rp.bc_events, 1);
	assert_int_equal(rp.bytes_acc, 0);
	assert_near(tp_dcqcn_rp_rate(&rp), 75024414062.5);
	tp_dcqcn_rp_on_sent(&rp, 32767 * 2 + 100, 3 * US);
	assert_int_equal(rp.bc_events, 3);
	assert_int_equal(rp.bytes_acc, 100);
	tp_dcqcn_rp_on_cnp(&rp, 10 * US);
	assert_int_equal(rp.bytes_acc, 0);
	assert_int_equal(rp.bc_events, 0);

	/* rp_byte_reset 0: byte counter off */
	p.rp_byte_reset = 0;
	tp_dcqcn_rp_on_sent(&rp, 1u << 30, 11 * US);
	assert_int_equal(rp.bc_events, 0);
}

/* Rates never pass rp_max_rate. Line 40G, defaults (F = 1, AI 5 Mbit/s):
 *   cut: Rc = 20019531250, Rt = 40e9
 *   300 us: FR, Rc = 30009765625
 *   600 us: AI, Rt = 40.005e9 clamped to 40e9, Rc = 35004882812.5
 * and after a long time (1 s, 3333 events) Rc = Rt = 40e9 exactly. */
static void test_clamp_max_rate(void **state)
{
	struct ice_dcqcn_params p;
	struct tp_dcqcn_rp rp;

	ice_dcqcn_params_default(&p);
	p.rp_max_rate = 40000;
	tp_dcqcn_rp_init(&rp, &p, 0, 0);
	assert_near(tp_dcqcn_rp_rate(&rp), 40e9);
	tp_dcqcn_rp_on_cnp(&rp, 0);
	assert_near(tp_dcqcn_rp_rate(&rp), 20019531250.0);
	tp_dcqcn_rp_tick(&rp, 300 * US);
	assert_near(tp_dcqcn_rp_rate(&rp), 30009765625.0);
	tp_dcqcn_rp_tick(&rp, 600 * US);
	assert_true(rp.rt_bps == 40e9);
	assert_near(tp_dcqcn_rp_rate(&rp), 35004882812.5);
	tp_dcqcn_rp_on_sent(&rp, 1000000000, 700 * US);
	tp_dcqcn_rp_tick(&rp, 1000000 * US);
	assert_true(rp.rt_bps == 40e9);
	assert_true(tp_dcqcn_rp_rate(&rp) == 40e9);

	/* a planned start above line rate is clamped; lowering the line rate
	 * at run time clamps on the next tick */
	tp_dcqcn_rp_init(&rp, &p, 0, 80e9);
	assert_near(tp_dcqcn_rp_rate(&rp), 40e9);
	p.rp_max_rate = 25000;
	tp_dcqcn_rp_tick(&rp, 1 * US);
	assert_near(tp_dcqcn_rp_rate(&rp), 25e9);
}

/* rp_rate_to_set_on_first_cnp 10000: the first CNP sets Rc = Rt = 10e9,
 * then cuts: 10e9 * 1025/2048 = 5004882812.5. */
static void test_rate_on_first_cnp(void **state)
{
	struct ice_dcqcn_params p;
	struct tp_dcqcn_rp rp;

	params_100g(&p);
	p.rp_rate_to_set_on_first_cnp = 10000;
	tp_dcqcn_rp_init(&rp, &p, 0, 0);
	assert_near(tp_dcqcn_rp_rate(&rp), 100e9);
	tp_dcqcn_rp_on_cnp(&rp, 5 * US);
	assert_near(tp_dcqcn_rp_rate(&rp), 5004882812.5);
	assert_near(rp.rt_bps, 10e9);
}

/* rp_max_rate 0: unlimited (rate 0) until the first CNP, which starts from
 * 100 Gbit/s (or rate_to_set_on_first_cnp, 20000: 20e9 * 1025/2048). */
static void test_unlimited(void **state)
{
	struct ice_dcqcn_params p;
	struct tp_dcqcn_rp rp;

	ice_dcqcn_params_default(&p);
	tp_dcqcn_rp_init(&rp, &p, 0, 0);
	assert_true(tp_dcqcn_rp_rate(&rp) == 0);
	tp_dcqcn_rp_tick(&rp, 1000 * US);
	tp_dcqcn_rp_on_sent(&rp, 1u << 20, 1000 * US);
	assert_true(tp_dcqcn_rp_rate(&rp) == 0);
	assert_true(tp_dcqcn_rp_on_cnp(&rp, 1000 * US));
	assert_near(tp_dcqcn_rp_rate(&rp), 50048828125.0);

	/* an hour without CNPs: Rt grows without bound but the call is capped */
	tp_dcqcn_rp_tick(&rp, 3600ull * 1000000 * US);
	assert_true(tp_dcqcn_rp_rate(&rp) > 100e9);

	p.rp_rate_to_set_on_first_cnp = 20000;
	tp_dcqcn_rp_init(&rp, &p, 0, 0);
	tp_dcqcn_rp_on_cnp(&rp, 0);
	assert_near(tp_dcqcn_rp_rate(&rp), 10009765625.0);
}

/* Planned start 25 Gbit/s on a 100G line, defaults (F = 1): it begins at
 * 25e9; 300 us: FR, no change (Rt = Rc); 600 us: AI, Rt = 25.005e9,
 * Rc = 25.0025e9; CNP: Rt = Rc, Rc = 25.0025e9 * 1025/2048 =
 * 12513458251.953125. */
static void test_planned_start(void **state)
{
	struct ice_dcqcn_params p;
	struct tp_dcqcn_rp rp;

	params_100g(&p);
	tp_dcqcn_rp_init(&rp, &p, 0, 25e9);
	assert_near(tp_dcqcn_rp_rate(&rp), 25e9);
	tp_dcqcn_rp_tick(&rp, 300 * US);
	assert_near(tp_dcqcn_rp_rate(&rp), 25e9);
	tp_dcqcn_rp_tick(&rp, 600 * US);
	assert_near(rp.rt_bps, 25.005e9);
	assert_near(tp_dcqcn_rp_rate(&rp), 25.0025e9);
	assert_true(tp_dcqcn_rp_on_cnp(&rp, 600 * US));
	assert_near(rp.rt_bps, 25.0025e9);
	assert_near(tp_dcqcn_rp_rate(&rp), 12513458251.953125);
}

/* clamp_tgt_rate 1: Rt = Rc on every cut, even without an increase. */
static void test_clamp_tgt_rate(void **state)
{
	struct ice_dcqcn_params p;
	struct tp_dcqcn_rp rp;

	params_100g(&p);
	p.rp_clamp_tgt_rate = 1;
	tp_dcqcn_rp_init(&rp, &p, 0, 0);
	tp_dcqcn_rp_on_cnp(&rp, 0);
	assert_true(tp_dcqcn_rp_on_cnp(&rp, 4 * US));
	assert_near(rp.rt_bps, 50048828125.0);
}

/* enable 0: fixed rate rp_max_rate, CNPs ignored. */
static void test_disabled(void **state)
{
	struct ice_dcqcn_params p;
	struct tp_dcqcn_rp rp;

	params_100g(&p);
	p.enable = 0;
	tp_dcqcn_rp_init(&rp, &p, 0, 0);
	assert_false(tp_dcqcn_rp_on_cnp(&rp, 0));
	assert_near(tp_dcqcn_rp_rate(&rp), 100e9);
	assert_int_equal(rp.cnps, 1);
	assert_int_equal(rp.cuts, 0);
}

/* NP pacing at 50 us (paper): CE at 0, 10, 49, 50, 120 us -> CNPs at 0, 50,
 * 120. At 0 us every CE gets a CNP. */
static void test_np_pacing(void **state)
{
	static const uint64_t ce_us[] = {0, 10, 49, 50, 120};
	static const bool cnp[] = {true, false, false, true, true};
	struct ice_dcqcn_params p;
	struct tp_dcqcn_np np;
	size_t i;

	ice_dcqcn_params_default(&p);
	p.np_min_time_between_cnps = 50;
	tp_dcqcn_np_init(&np);
	for (i = 0; i < sizeof(ce_us) / sizeof(ce_us[0]); i++)
		assert_int_equal(tp_dcqcn_np_on_ce(&np, &p, ce_us[i] * US), cnp[i]);
	assert_int_equal(np.ce_seen, 5);
	assert_int_equal(np.cnps_sent, 3);
	assert_int_equal(np.last_cnp_ns, 120 * US);

	p.np_min_time_between_cnps = 0;
	assert_true(tp_dcqcn_np_on_ce(&np, &p, 120 * US));
	assert_true(tp_dcqcn_np_on_ce(&np, &p, 120 * US));
}

static void test_params_check(void **state)
{
	struct ice_dcqcn_params p;
	struct ice_cfg_err err;
	const struct ice_cfg_field *f;
	size_t n, i, j;

	f = ice_dcqcn_fields(&n);
	assert_int_equal(n, 17);
	for (i = 0; i < n; i++) {
		assert_int_equal(f[i].type, ICE_CFG_U32);
		assert_true(f[i].offset + sizeof(uint32_t) <= sizeof(p));
		assert_true(f[i].min <= f[i].max);
		assert_non_null(f[i].help);
		for (j = 0; j < i; j++)
			assert_true(strcmp(f[i].key, f[j].key) != 0 && f[i].offset != f[j].offset);
	}

	ice_dcqcn_params_default(&p);
	p.rp_gd = 16;
	assert_int_equal(ice_dcqcn_params_check(&p, &err), -EINVAL);
	assert_string_equal(err.key, "rp_gd");
	assert_non_null(strstr(err.msg, "[1, 15]"));
	assert_non_null(strstr(err.msg, "got 16"));

	ice_dcqcn_params_default(&p);
	p.rp_dce_tcp_g = 1024;
	assert_int_equal(ice_dcqcn_params_check(&p, &err), -EINVAL);
	assert_string_equal(err.key, "rp_dce_tcp_g");

	ice_dcqcn_params_default(&p);
	p.rp_max_rate = 10000;
	p.rp_min_rate = 20000;
	assert_int_equal(ice_dcqcn_params_check(&p, &err), -EINVAL);
	assert_string_equal(err.key, "rp_min_rate");

	p.rp_min_rate = 10000;
	assert_int_equal(ice_dcqcn_params_check(&p, NULL), 0);
	p.rp_time_reset = 0;
	assert_int_equal(ice_dcqcn_params_check(&p, NULL), -EINVAL);
}

/* Write text to a fresh temporary file; its path in path[len]. */
static void temp_yaml(const char *text, char *path, size_t len)
{
	FILE *f;
	int fd;

	snprintf(path, len, "/tmp/ice-test-dcqcn-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* The test bed's baseline file, and what ice_dcqcn_load() refuses: every
 * refusal names file:line and key, and leaves the parameters as they were. */
static void test_load_file(void **state)
{
	const char *bed = getenv("ICE_DCQCN_TESTBED");
	struct ice_dcqcn_params p, def, before;
	struct ice_cfg_err err;
	char path[64];

	ice_dcqcn_params_default(&def);
	p = def;
	if (bed == NULL)
		bed = "fabric/dcqcn-testbed.yaml";
	assert_int_equal(ice_dcqcn_load(bed, &p, &err), 0);
	assert_int_equal(p.rp_max_rate, 100);
	assert_int_equal(p.rp_ai_rate, 1);
	assert_int_equal(p.rp_hai_rate, 5);
	assert_int_equal(p.rp_time_reset, 4000);
	assert_int_equal(p.rp_threshold, 5);
	assert_int_equal(p.rp_dce_tcp_rtt, 1500);
	assert_int_equal(p.np_min_time_between_cnps, 50);
	assert_int_equal(p.rp_gd, def.rp_gd); /* unset: as before */
	assert_int_equal(p.enable, 1);

	/* keys the file leaves out keep the caller's values */
	temp_yaml("rp_ai_rate: 7 # comment\n", path, sizeof(path));
	p.rp_gd = 9;
	assert_int_equal(ice_dcqcn_load(path, &p, &err), 0);
	assert_int_equal(p.rp_ai_rate, 7);
	assert_int_equal(p.rp_gd, 9);
	assert_int_equal(p.rp_time_reset, 4000);
	unlink(path);

	before = p;
	memset(&err, 0, sizeof(err));
	assert_int_equal(ice_dcqcn_load("/nonexistent/dcqcn.yaml", &p, &err), -ENOENT);
	assert_string_equal(err.file, "/nonexistent/dcqcn.yaml");
	assert_non_null(strstr(err.msg, "cannot open"));

	temp_yaml("rp_ai_rate: 1\nrp_speed: 3\n", path, sizeof(path));
	assert_int_equal(ice_dcqcn_load(path, &p, &err), -EINVAL);
	assert_string_equal(err.file, path);
	assert_int_equal(err.line, 2);
	assert_string_equal(err.key, "rp_speed");
	assert_non_null(strstr(err.msg, "expected one of"));
	unlink(path);

	temp_yaml("rp_ai_rate: 2\nrp_gd: 40\n", path, sizeof(path));
	assert_int_equal(ice_dcqcn_load(path, &p, &err), -EINVAL);
	assert_int_equal(err.line, 2);
	assert_string_equal(err.key, "rp_gd");
	assert_non_null(strstr(err.msg, "[1, 15]"));
	unlink(path);

	/* a cross-key check at the key's line */
	temp_yaml("rp_max_rate: 100\nrp_min_rate: 200\n", path, sizeof(path));
	assert_int_equal(ice_dcqcn_load(path, &p, &err), -EINVAL);
	assert_int_equal(err.line, 2);
	assert_string_equal(err.key, "rp_min_rate");
	assert_non_null(strstr(err.msg, "at most rp_max_rate"));
	unlink(path);

	temp_yaml("- rp_ai_rate\n", path, sizeof(path));
	assert_int_equal(ice_dcqcn_load(path, &p, &err), -EINVAL);
	assert_int_equal(err.line, 1);
	assert_non_null(strstr(err.msg, "expected a mapping"));
	unlink(path);
	assert_memory_equal(&p, &before, sizeof(p));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),	  cmocka_unit_test(test_first_cnp_cut),
		cmocka_unit_test(test_min_dec_fac_floor), cmocka_unit_test(test_min_rate_floor),
		cmocka_unit_test(test_monitor_period),	  cmocka_unit_test(test_alpha_decay),
		cmocka_unit_test(test_alpha_increase),	  cmocka_unit_test(test_increase_stages),
		cmocka_unit_test(test_byte_counter),	  cmocka_unit_test(test_clamp_max_rate),
		cmocka_unit_test(test_rate_on_first_cnp), cmocka_unit_test(test_unlimited),
		cmocka_unit_test(test_planned_start),	  cmocka_unit_test(test_clamp_tgt_rate),
		cmocka_unit_test(test_disabled),	  cmocka_unit_test(test_np_pacing),
		cmocka_unit_test(test_params_check),	  cmocka_unit_test(test_load_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
