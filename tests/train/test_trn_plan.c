// SPDX-License-Identifier: Apache-2.0
/*
 * trn planner and predictor: the formulas on hand-computed cases, the DP
 * and PP planners against brute force over every split of small random
 * cases, and never worse than the even split.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "trn.h"

static struct trn_model m;

static void model_square(int layers, int width, int gb, int mb)
{
	memset(&m, 0, sizeof(m));
	snprintf(m.name, sizeof(m.name), "t");
	m.nlayers = layers;
	for (int l = 0; l < layers; l++)
		m.in[l] = m.out[l] = width;
	m.global_batch = gb;
	m.micro_batch = mb;
	m.bucket_kb = 4096;
	m.optim = TRN_OPTIM_REPLICATED; /* one all-reduce per bucket (test_dp_update: sharded) */
}

static void devs(struct trn_profile *d, const double *gflops, int n)
{
	memset(d, 0, sizeof(*d) * (size_t)n);
	for (int i = 0; i < n; i++) {
		snprintf(d[i].name, sizeof(d[i].name), "d%d", i);
		snprintf(d[i].kind, sizeof(d[i].kind), "host");
		d[i].gflops = gflops[i];
	}
}

static void assert_near(double a, double b)
{
	if (fabs(a - b) > 1e-12 + 1e-9 * fabs(b))
		fail_msg("%.15g != %.15g", a, b);
}

/* ---- DP predictor ------------------------------------------------------------ */

static void test_predict_dp(void **state)
{
	struct trn_profile d[2];
	struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = 1, .lat_s = 1e-3, .overlap = 0.5};
	struct trn_dp_plan p = {0};
	double tb = 1048576 / 1e9 + 1e-3, tl = 854272 / 1e9 + 1e-3;

	devs(d, (double[]){2, 1}, 2);
	/* one 1000x1000 layer: 6e6 FLOP per sample, 4e6 B of gradients in
	 * 1 MiB buckets: 3 full + 854272 B ready last */
	model_square(1, 1000, 12, 1);
	m.bucket_kb = 1024;
	p.samples[0] = 8;
	p.samples[1] = 4;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.compute_s[0], 8 * 6e6 / 2e9);
	assert_near(p.compute_s[1], 4 * 6e6 / 1e9);
	/* all-reduce 3 * tb + tl = 8 ms; backward of the slowest 16 ms, half
	 * of it hides the rest: only the last bucket shows */
	assert_near(p.comm_s, tl);
	assert_near(p.step_s, 0.024 + tl);
	/* less overlap: 8 ms - 0.1 * 16 ms */
	net.overlap = 0.1;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.comm_s, 3 * tb + tl - 0.1 * 0.016);
	assert_near(p.step_s, 0.024 + 0.0064);
	/* four devices: 2 * 3/4 of the bytes per bucket */
	{
		struct trn_profile d4[4];
		struct trn_dp_plan q = {.samples = {3, 3, 3, 3}};

		devs(d4, (double[]){1, 1, 1, 1}, 4);
		net.overlap = 0;
		assert_int_equal(trn_predict_dp(&m, d4, 4, &net, &q), 0);
		assert_near(q.comm_s, 1.5 * 4e6 / 1e9 + 4 * 1e-3);
		assert_near(q.step_s, 3 * 6e6 / 1e9 + 1.5 * 4e6 / 1e9 + 4e-3);
	}
	/* one device: no all-reduce */
	p.samples[0] = 12;
	assert_int_equal(trn_predict_dp(&m, d, 1, &net, &p), 0);
	assert_near(p.comm_s, 0);
	assert_near(p.step_s, 12 * 6e6 / 2e9);
	/* samples must add up to the global batch */
	p.samples[0] = 5;
	p.samples[1] = 5;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), -EINVAL);
}

/* trn_dp_tails on p over the first n devices of d: the tails of the first
 * two and the overlap. */
static void check_tails(struct trn_profile *d, int n, const struct trn_net *net, int fixed,
			struct trn_dp_plan *p, int t0, int t1, double ov)
{
	assert_near(trn_dp_tails(&m, d, n, net, fixed, p), ov);
	assert_int_equal(p->tail[0], t0);
	assert_int_equal(p->tail[1], t1);
}

/* DP tails: the fewest last micro-batches whose backward lasts three times
 * the all-reduce, at least a chunk (16, or all a device has), and the
 * overlap that gives. */
static void test_dp_tails(void **state)
{
	struct trn_profile d[3];
	struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = 1, .lat_s = 1e-3, .overlap = 0};
	struct trn_dp_plan p = {0};
	double ov;

	devs(d, (double[]){8, 4, 4}, 3);
	/* one 1000x1000 layer: 4e6 FLOP of backward per sample (0.5 ms on d0,
	 * 1 ms on d1); two devices: all-reduce 3 * tb + tl = 8 ms (see
	 * test_predict_dp), so the tails must last 24 ms: 48 and 24 samples,
	 * of 64 and 32 */
	model_square(1, 1000, 96, 1);
	m.bucket_kb = 1024;
	p.samples[0] = 64;
	p.samples[1] = 32;
	/* 24 ms of the slowest (both 32 ms: the first) device's 32 ms backward */
	check_tails(d, 2, &net, 0, &p, 48, 24, 24.0 / 32);
	net.overlap = 24.0 / 32;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.comm_s, 854272 / 1e9 + 1e-3); /* only the last bucket shows */
	/* fixed: 2 each; d0's 1 ms is the shorter window */
	check_tails(d, 2, &net, 2, &p, 2, 2, 1.0 / 32);
	/* a fast network: the all-reduce needs one micro-batch, and a chunk
	 * is what they get: 16 of d0's 40 samples (8 ms of its 20 ms
	 * backward), all 8 of d1's (8 ms) */
	p.samples[0] = 40;
	p.samples[1] = 8;
	m.global_batch = 48;
	check_tails(d, 2, &(struct trn_net){.busbw_gbps = 1e3, .p2p_gbps = 1e3, .lat_s = 1e-9}, 0,
		    &p, 16, 8, 8.0 / 20);
	/* micro-batches of 4, d0's 14 samples are 4 + 4 + 4 + 2 (7 ms, all it
	 * has); d1's 2 samples are one short micro-batch (2 ms); d2 has none */
	m.micro_batch = 4;
	m.global_batch = 16;
	p.samples[0] = 14;
	p.samples[1] = 2;
	p.samples[2] = 0;
	check_tails(d, 2, &net, 0, &p, 4, 1, 2.0 / 7);
	/* the same tails priced on other speeds (a split re-planned for
	 * measured speeds, priced on the profiles): d1 twice as fast gives
	 * its 2 samples 1 ms of backward, d0 (the slowest) still 7 ms */
	assert_near(trn_dp_tails_overlap(&m, d, 2, &p), 2.0 / 7);
	d[1].gflops = 8;
	assert_near(trn_dp_tails_overlap(&m, d, 2, &p), 1.0 / 7);
	/* fixed 2: d0's short micro-batch and one of 4, 6 samples (3 ms);
	 * d1's 2 samples take 2 ms, at 2 GFLOP/s 4 ms */
	d[1].gflops = 4;
	check_tails(d, 2, &net, 2, &p, 2, 1, 2.0 / 7);
	d[1].gflops = 2;
	assert_near(trn_dp_tails_overlap(&m, d, 2, &p), 3.0 / 7);
	/* no tail on a device with samples: nothing overlaps */
	p.tail[1] = 0;
	assert_near(trn_dp_tails_overlap(&m, d, 2, &p), 0);
	d[1].gflops = 4;
	ov = trn_dp_tails(&m, d, 3, &net, 0, &p);
	assert_int_equal(p.tail[2], 0);
	assert_true(ov > 0 && ov <= 1);
	/* one device: no all-reduce; still a chunk (all 3 micro-batches) */
	p.samples[0] = 12;
	ov = trn_dp_tails(&m, d, 1, &net, 0, &p);
	assert_int_equal(p.tail[0], 3);
	assert_true(ov >= 0 && ov <= 1);
}

/* The plan ice-train runs (and ice-plan shows): split, tails, and the
 * prediction with the overlap the tails give, unless one is given. */
static void test_plan_dp_tailed(void **state)
{
	struct trn_profile d[2];
	struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = 1, .lat_s = 1e-3, .overlap = -1};
	struct trn_dp_plan p;

	devs(d, (double[]){8, 4}, 2);
	model_square(1, 1000, 96, 1);
	m.bucket_kb = 1024;
	/* the planner's 64 / 32; tails 48 / 24 as in test_dp_tails; overlap 24
	 * of the 32 ms backward; only the last bucket shows */
	assert_int_equal(trn_plan_dp_tailed(&m, d, 2, &net, false, 0, &p), 0);
	assert_int_equal(p.samples[0], 64);
	assert_int_equal(p.samples[1], 32);
	assert_int_equal(p.tail[0], 48);
	assert_int_equal(p.tail[1], 24);
	assert_near(p.overlap, 24.0 / 32);
	assert_near(p.comm_s, 854272 / 1e9 + 1e-3);
	assert_near(p.step_s, p.compute_s[0] + p.comm_s);
	/* even 48 / 48: the same 24 ms tails, of d1's 48 ms backward */
	assert_int_equal(trn_plan_dp_tailed(&m, d, 2, &net, true, 0, &p), 0);
	assert_int_equal(p.samples[0], 48);
	assert_int_equal(p.tail[0], 48);
	assert_int_equal(p.tail[1], 24);
	assert_near(p.overlap, 0.5);
	/* fixed tails of 2: d0's 1 ms window */
	assert_int_equal(trn_plan_dp_tailed(&m, d, 2, &net, false, 2, &p), 0);
	assert_int_equal(p.tail[0], 2);
	assert_int_equal(p.tail[1], 2);
	assert_near(p.overlap, 1.0 / 32);
	/* a given overlap is kept; the tails are still chosen */
	net.overlap = 0.3;
	assert_int_equal(trn_plan_dp_tailed(&m, d, 2, &net, false, 0, &p), 0);
	assert_near(p.overlap, 0.3);
	assert_int_equal(p.tail[0], 48);
	net.overlap = 1.5;
	assert_int_equal(trn_plan_dp_tailed(&m, d, 2, &net, false, 0, &p), -EINVAL);
	net.overlap = -1;
	assert_int_equal(trn_plan_dp_tailed(&m, d, 0, &net, false, 0, &p), -EINVAL);
	assert_int_equal(trn_plan_dp_tailed(&m, d, 2, &net, false, 0, NULL), -EINVAL);
}

/* ---- DP planner -------------------------------------------------------------- */

/* The optimizer step: shards by memory bandwidth, the update in the DP
 * step, and a split that makes room for a slow replicated update. */
static void test_dp_update(void **state)
{
	struct trn_profile d[3];
	struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = 1, .lat_s = 0, .overlap = 0};
	struct trn_dp_plan p = {0}, q;
	size_t sh[3];
	double pb = 4e6; /* one 1000x1000 layer */

	/* 8 : 3.2 GB/s (the emulated pair): 5/7 and 2/7 of a 1 MiB bucket,
	 * the remainder to the larger fraction */
	devs(d, (double[]){4, 1.6}, 2);
	d[0].mem_gbps = 8;
	d[1].mem_gbps = 3.2;
	trn_dp_shards(d, 2, 262144, sh);
	assert_int_equal(sh[0], 187246); /* 187245.71 */
	assert_int_equal(sh[1], 74898);	 /* 74897.14 */
	trn_dp_shards(d, 2, 0, sh);
	assert_int_equal(sh[0] + sh[1], 0);
	/* 1 : 1 : 1, 10 elements: 4 3 3; no bandwidth stated: even */
	devs(d, (double[]){1, 1, 1}, 3);
	for (int i = 0; i < 3; i++)
		d[i].mem_gbps = 5;
	trn_dp_shards(d, 3, 10, sh);
	assert_int_equal(sh[0], 4);
	assert_int_equal(sh[1], 3);
	assert_int_equal(sh[2], 3);
	d[2].mem_gbps = 0;
	trn_dp_shards(d, 3, 7, sh);
	assert_int_equal(sh[0] + sh[1] + sh[2], 7);
	assert_int_equal(sh[0], 3);
	assert_int_equal(sh[2], 2);

	/* the step: sharded, both take 3 * 4e6 B / (8 + 3.2) GB/s; the
	 * reduce-scatter and all-gather of a 1 MiB bucket wait for its larger
	 * part, 5/7: 2 * 5/7 * 1 MiB / 1 GB/s, 10/7 of the all-reduce (no
	 * overlap: all four buckets show) */
	devs(d, (double[]){2, 1}, 2);
	d[0].mem_gbps = 8;
	d[1].mem_gbps = 3.2;
	model_square(1, 1000, 12, 1);
	m.optim = TRN_OPTIM_SHARDED;
	m.bucket_kb = 1024;
	p.samples[0] = 8;
	p.samples[1] = 4;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.update_s[0], 3 * pb * 8 / 11.2 / 8e9);
	assert_near(p.update_s[1], p.update_s[0]);
	assert_near(p.comm_s, 2 * 5.0 / 7 * 4e6 / 1e9);
	assert_near(p.step_s, 0.024 + p.update_s[0] + p.comm_s);
	/* replicated: every device the whole model once the all-reduce is
	 * done; the slowest memory ends the step */
	m.optim = TRN_OPTIM_REPLICATED;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.update_s[0], 3 * pb / 8e9);
	assert_near(p.update_s[1], 3 * pb / 3.2e9);
	assert_near(p.step_s, 0.024 + p.comm_s + 3 * pb / 3.2e9);
	/* one device: its whole update either way */
	m.optim = TRN_OPTIM_SHARDED;
	p.samples[0] = 12;
	assert_int_equal(trn_predict_dp(&m, d, 1, &net, &p), 0);
	assert_near(p.step_s, 12 * 6e6 / 2e9 + 3 * pb / 8e9);

	/* sharded, device 2 states no memory bandwidth: even shards, its
	 * update free, the others' 3 x 4e6 / 3 B at 0.4 GB/s = 10 ms: with
	 * 3 ms samples, 24 go 7 / 7 / 10 (31 ms against 30 ms) */
	devs(d, (double[]){2, 2, 2}, 3);
	d[0].mem_gbps = d[1].mem_gbps = 0.4;
	model_square(1, 1000, 24, 1);
	m.optim = TRN_OPTIM_SHARDED;
	net.busbw_gbps = 1e6;
	assert_int_equal(trn_plan_dp(&m, d, 3, &net, &q), 0);
	assert_int_equal(q.samples[0], 7);
	assert_int_equal(q.samples[1], 7);
	assert_int_equal(q.samples[2], 10);
	assert_near(q.update_s[0], 0.01);
	assert_near(q.update_s[2], 0);
	/* replicated, the updates wait for the all-reduce: 8 / 8 / 8 */
	m.optim = TRN_OPTIM_REPLICATED;
	assert_int_equal(trn_plan_dp(&m, d, 3, &net, &q), 0);
	assert_int_equal(q.samples[0], 8);
	assert_int_equal(q.samples[2], 8);
	m.optim = TRN_OPTIM_SHARDED;
	assert_string_equal(trn_optim_name(TRN_OPTIM_REPLICATED), "replicated");
	assert_int_equal(trn_optim_parse("sharded"), TRN_OPTIM_SHARDED);
	assert_int_equal(trn_optim_parse("replicated"), TRN_OPTIM_REPLICATED);
	assert_int_equal(trn_optim_parse("zero3"), -EINVAL);
}

static void test_plan_dp_hand(void **state)
{
	struct trn_profile d[3];
	struct trn_net net = {.busbw_gbps = 10, .p2p_gbps = 10, .lat_s = 50e-6, .overlap = 0.8};
	struct trn_dp_plan p, e;

	/* speeds 2:1, 12 micro-batches -> 8 / 4 */
	devs(d, (double[]){2, 1}, 2);
	model_square(4, 256, 48, 4);
	assert_int_equal(trn_plan_dp(&m, d, 2, &net, &p), 0);
	assert_int_equal(p.samples[0], 32);
	assert_int_equal(p.samples[1], 16);
	assert_int_equal(trn_plan_dp_even(&m, d, 2, &net, &e), 0);
	assert_int_equal(e.samples[0], 24);
	assert_int_equal(e.samples[1], 24);
	assert_true(p.step_s < e.step_s);
	/* 3:2:1, 12 units -> 6 / 4 / 2 */
	devs(d, (double[]){3, 2, 1}, 3);
	model_square(4, 256, 12, 1);
	assert_int_equal(trn_plan_dp(&m, d, 3, &net, &p), 0);
	assert_int_equal(p.samples[0], 6);
	assert_int_equal(p.samples[1], 4);
	assert_int_equal(p.samples[2], 2);
	/* even remainder goes to the first device */
	model_square(4, 256, 14, 1);
	assert_int_equal(trn_plan_dp_even(&m, d, 3, &net, &e), 0);
	assert_int_equal(e.samples[0], 6);
	assert_int_equal(e.samples[1], 4);
	assert_int_equal(e.samples[2], 4);
	/* fewer micro-batches than devices: the slow one idles (faster) */
	devs(d, (double[]){4, 4, 1}, 3);
	model_square(4, 256, 8, 4);
	assert_int_equal(trn_plan_dp(&m, d, 3, &net, &p), 0);
	assert_int_equal(p.samples[0], 4);
	assert_int_equal(p.samples[1], 4);
	assert_int_equal(p.samples[2], 0);
	/* one micro-batch, two equal devices: the even split (cutting the
	 * micro-batch) is faster and kept */
	devs(d, (double[]){1, 1}, 2);
	model_square(4, 256, 2, 2);
	assert_int_equal(trn_plan_dp(&m, d, 2, &net, &p), 0);
	assert_int_equal(p.samples[0], 1);
	assert_int_equal(p.samples[1], 1);
}

static double frand(double lo, double hi)
{
	return lo + (hi - lo) * (double)rand() / RAND_MAX;
}

/* Every way to give units micro-batches to n devices; the best step. */
static double dp_brute(struct trn_profile *d, int n, const struct trn_net *net, int dev, int left,
		       struct trn_dp_plan *p)
{
	double best = DBL_MAX;

	if (dev == n - 1) {
		p->samples[dev] = left * m.micro_batch;
		if (trn_predict_dp(&m, d, n, net, p) < 0)
			fail_msg("predict failed");
		return p->step_s;
	}
	for (int k = 0; k <= left; k++) {
		double s;

		p->samples[dev] = k * m.micro_batch;
		s = dp_brute(d, n, net, dev + 1, left - k, p);
		if (s < best)
			best = s;
	}
	return best;
}

/* The planner against every split. Exact when every device's optimizer
 * step takes the same time or waits for the all-reduce (replicated; or
 * sharded by memory bandwidth with every bandwidth stated, or none); when
 * a profile without a bandwidth makes the sharded steps uneven, the
 * predictor's overlap term (the slowest device's backward) is no longer
 * monotone in the split and the greedy split plus single moves is only
 * near the best: counted and bounded. */
static void test_plan_dp_brute(void **state)
{
	int uneven = 0, uneven_opt = 0;
	double worst = 0;

	srand(12345);
	for (int iter = 0; iter < 400; iter++) {
		int n = 1 + rand() % 4, units = 1 + rand() % 9, mb = 1 + rand() % 3, nmem = 0;
		struct trn_profile d[4];
		double g[4];
		struct trn_net net = {.busbw_gbps = frand(0.05, 20),
				      .p2p_gbps = 1,
				      .lat_s = frand(0, 1e-3),
				      .overlap = frand(0, 1)};
		struct trn_dp_plan p, e, scratch = {0};
		double best;

		for (int i = 0; i < n; i++)
			g[i] = rand() % 3 == 0 ? 1.0 : frand(0.2, 5); /* ties too */
		devs(d, g, n);
		model_square(1 + rand() % 4, 64 + rand() % 512, units * mb, mb);
		m.bucket_kb = 16 + rand() % 2048;
		/* optimizer steps of up to about a micro-batch's compute */
		m.optim = rand() % 2 == 0 ? TRN_OPTIM_SHARDED : TRN_OPTIM_REPLICATED;
		for (int i = 0; i < n; i++) {
			d[i].mem_gbps = rand() % 4 == 0 ? 0 : frand(0.3, 3) * g[i] / mb;
			nmem += d[i].mem_gbps > 0;
		}
		assert_int_equal(trn_plan_dp(&m, d, n, &net, &p), 0);
		assert_int_equal(trn_plan_dp_even(&m, d, n, &net, &e), 0);
		best = dp_brute(d, n, &net, 0, units, &scratch);
		assert_true(p.step_s <= e.step_s * (1 + 1e-12));
		if (m.optim == TRN_OPTIM_SHARDED && n > 1 && nmem > 0 && nmem < n) {
			uneven++;
			uneven_opt += p.step_s <= best * (1 + 1e-9);
			worst = fmax(worst, p.step_s / best - 1);
		} else if (p.step_s > best * (1 + 1e-9)) {
			fail_msg("iter %d: planner %.9g, brute force %.9g", iter, p.step_s, best);
		}
		/* the plan's own figures are the predictor's */
		scratch = p;
		assert_int_equal(trn_predict_dp(&m, d, n, &net, &scratch), 0);
		assert_near(scratch.step_s, p.step_s);
	}
	print_message("uneven sharded updates: planner at the best split in %d of %d cases; worst "
		      "%.2f%% above it\n",
		      uneven_opt, uneven, 100 * worst);
	assert_true(worst < 0.05);
}

static void test_plan_dp_never_worse(void **state)
{
	srand(777);
	for (int iter = 0; iter < 2000; iter++) {
		int n = 1 + rand() % 16, mb = 1 + rand() % 8, units = 1 + rand() % 40;
		struct trn_profile d[16];
		double g[16];
		struct trn_net net = {.busbw_gbps = frand(0.01, 50),
				      .p2p_gbps = 1,
				      .lat_s = frand(0, 1e-3),
				      .overlap = frand(0, 1)};
		struct trn_dp_plan p, e;

		for (int i = 0; i < n; i++)
			g[i] = frand(0.1, 100);
		devs(d, g, n);
		model_square(1 + rand() % 8, 16 + rand() % 1024, units * mb, mb);
		assert_int_equal(trn_plan_dp(&m, d, n, &net, &p), 0);
		assert_int_equal(trn_plan_dp_even(&m, d, n, &net, &e), 0);
		assert_true(p.step_s <= e.step_s * (1 + 1e-12));
		{
			int sum = 0;
			double ov = trn_dp_tails(&m, d, n, &net, 0, &p);

			for (int i = 0; i < n; i++) {
				int nmb = (p.samples[i] + mb - 1) / mb;

				sum += p.samples[i];
				assert_true(p.tail[i] >= (nmb > 0) && p.tail[i] <= nmb);
			}
			assert_int_equal(sum, m.global_batch);
			assert_true(ov >= 0 && ov <= 1);
		}
	}
}

/* ---- PP predictor ------------------------------------------------------------ */

static void test_predict_pp(void **state)
{
	struct trn_profile d[3];
	struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = 1, .lat_s = 1e-6, .overlap = 0};
	struct trn_pp_plan p = {.sched = TRN_PP_1F1B};
	double send = 4.0 * 100 * 2 / 1e9 + 1e-6;

	devs(d, (double[]){1, 1, 2}, 3);
	/* 3 layers of 100x100: 6e4 FLOP per sample each; micro-batch 2, 4 of them */
	model_square(3, 100, 8, 2);
	p.first[0] = 0;
	p.nlayers[0] = 2;
	p.first[1] = 2;
	p.nlayers[1] = 1;
	assert_int_equal(trn_predict_pp(&m, d, 2, &net, &p), 0);
	assert_int_equal(p.micro_batches, 4);
	assert_near(p.stage_s[0], 2 * 2 * 6e4 / 1e9 + send);
	assert_near(p.stage_s[1], 2 * 6e4 / 1e9 + send);
	assert_near(p.hop_s[0], send);
	assert_near(p.hop_s[1], 0);
	assert_near(p.est_s, p.stage_s[0] + p.stage_s[1] + 3 * 2.4e-4);
	/* the first stage is the slower: with two forwards before its first
	 * backward it never waits for the light last stage, whose work hides
	 * entirely: 4 x 2.4e-4 */
	assert_near(p.step_s, 4 * 2.4e-4);
	/* three stages: the middle one sends both ways */
	for (int s = 0; s < 3; s++) {
		p.first[s] = s;
		p.nlayers[s] = 1;
	}
	assert_int_equal(trn_predict_pp(&m, d, 3, &net, &p), 0);
	assert_near(p.stage_s[0], 1.2e-4 + send);
	assert_near(p.stage_s[1], 1.2e-4 + 2 * send);
	assert_near(p.stage_s[2], 0.6e-4 + send);
	assert_near(p.est_s, 3.0e-4 + 4 * send + 3 * 1.2e-4);
	/* two equal stages and a light last one: (M + 1) stage times plus the
	 * first activation's and the last gradient's trip between the two */
	assert_near(p.step_s, 5 * 1.2e-4 + 2 * send);
	/* a split that does not cover the model, or an empty stage */
	p.nlayers[2] = 0;
	assert_int_equal(trn_predict_pp(&m, d, 3, &net, &p), -EINVAL);
	p.nlayers[2] = 1;
	p.first[2] = 1;
	assert_int_equal(trn_predict_pp(&m, d, 3, &net, &p), -EINVAL);
	/* more stages than layers */
	model_square(2, 100, 8, 2);
	assert_int_equal(trn_plan_pp(&m, d, 3, &net, TRN_PP_1F1B, &p), -EINVAL);
	assert_int_equal(trn_plan_pp_even(&m, d, 3, &net, TRN_PP_1F1B, &p), -EINVAL);
}

/* The schedule: warm-up depths, and steps worked out by hand. */
static void test_predict_pp_schedule(void **state)
{
	struct trn_profile d[2];
	struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = 1, .lat_s = 0, .overlap = 0};
	struct trn_pp_plan p = {.sched = TRN_PP_1F1B};
	double u = 2e-5; /* forward of one 100x100 layer, one sample, 1 GFLOP/s */

	/* one more forward in flight than the minimum, but the last stage */
	assert_int_equal(trn_pp_warmup(0, 2, 35), 2);
	assert_int_equal(trn_pp_warmup(1, 2, 35), 0);
	assert_int_equal(trn_pp_warmup(0, 4, 35), 4);
	assert_int_equal(trn_pp_warmup(2, 4, 35), 2);
	assert_int_equal(trn_pp_warmup(3, 4, 35), 0);
	assert_int_equal(trn_pp_warmup(0, 4, 3), 3);
	assert_int_equal(trn_pp_warmup(0, 1, 3), 0);

	devs(d, (double[]){1, 1}, 2);
	model_square(2, 100, 4, 1); /* 4 micro-batches of 1 */
	p.first[0] = 0;
	p.nlayers[0] = 1;
	p.first[1] = 1;
	p.nlayers[1] = 1;
	/* equal stages (f = u, b = 2u), messages of h = u / 10: the bubble
	 * bound (M + 1) 3u, plus the first activation and the last gradient */
	net.lat_s = u / 10 - 4.0 * 100 / 1e9;
	assert_int_equal(trn_predict_pp(&m, d, 2, &net, &p), 0);
	assert_near(p.hop_s[0], u / 10);
	assert_near(p.step_s, 5 * 3 * u + 2 * u / 10);
	assert_near(p.step_s, p.est_s); /* balanced: the estimate is exact */
	/* messages of h = 3u, longer than the slack: stage 0 runs F0 F1 F2
	 * [0, 3u], waits for B0's gradient until 10u (u + h, F0 and B0 on
	 * stage 1, h), B0 [10u, 12u], F3, B1 [13u, 15u], B2 waits for 16u,
	 * B3 for 22u: 24u */
	net.lat_s = 3 * u - 4.0 * 100 / 1e9;
	assert_int_equal(trn_predict_pp(&m, d, 2, &net, &p), 0);
	assert_near(p.step_s, 24 * u);
	assert_true(p.step_s > p.est_s);
}

static void random_chain(int L);

/* Two stages of equal times f = B = W = u (the backward 2u), no message
 * time, M micro-batches. 1F1B: (M + 1) 3u, a stage idles 3u a step.
 * Zero bubble, by hand for M = 4 (stage 0 may hold 4 micro-batches, stage 1
 * all 4): stage 0 runs F0..F3 [0, 4u]; stage 1 runs F0 B0 at [u, 3u], F1
 * B1 [3u, 5u], F2 B2 [5u, 7u], F3 B3 [7u, 9u], then W0..W3 [9u, 13u];
 * stage 0 runs B0 [4u, 5u] (its gradient came at 3u), W0 [5u, 6u], B1
 * [6u, 7u] (5u), W1, B2 [8u, 9u] (7u), W2, B3 [10u, 11u] (9u), W3: done
 * at 12u and starts the next step at once. Stage 1 finishes its Ws at 13u
 * and its next F0 may start at 13u (F0 on stage 0 ends at 13u): the
 * next step runs the same, shifted by 12u. Steady step: 12u = 3 M u, no
 * bubble at all (1F1B: 15u). */
static void test_predict_pp_zb(void **state)
{
	struct trn_profile d[2];
	struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = 1e9, .lat_s = 0, .overlap = 0};
	struct trn_pp_plan p = {.sched = TRN_PP_ZB}, q = {.sched = TRN_PP_1F1B};
	struct trn_pp_op ops[3 * 64];
	double u = 2 * 100 * 100 / 1e9; /* one 100x100 layer, one sample, 1 GFLOP/s */
	static const char *const want[2] = {"F0 F1 F2 F3 B0 W0 B1 W1 B2 W2 B3 W3",
					    "F0 B0 F1 B1 F2 B2 F3 B3 W0 W1 W2 W3"};

	assert_int_equal(trn_pp_zb_inflight(0, 2, 35), 6);
	assert_int_equal(trn_pp_zb_inflight(1, 2, 35), 4);
	assert_int_equal(trn_pp_zb_inflight(0, 2, 4), 4);
	assert_int_equal(trn_pp_sched_parse("zb"), TRN_PP_ZB);
	assert_int_equal(trn_pp_sched_parse("1f1b"), TRN_PP_1F1B);
	assert_int_equal(trn_pp_sched_parse("gpipe"), -EINVAL);
	devs(d, (double[]){1, 1}, 2);
	model_square(2, 100, 4, 1); /* 4 micro-batches of 1 */
	p.first[1] = q.first[1] = 1;
	p.nlayers[0] = p.nlayers[1] = q.nlayers[0] = q.nlayers[1] = 1;
	assert_int_equal(trn_predict_pp(&m, d, 2, &net, &p), 0);
	assert_int_equal(trn_predict_pp(&m, d, 2, &net, &q), 0);
	assert_near(p.fwd_s[0], u);
	assert_near(p.bwd_s[1], u);
	assert_near(p.wgt_s[1], u);
	assert_near(p.hop_s[0], 0);
	assert_near(q.step_s, 5 * 3 * u);
	assert_near(p.step_s, 4 * 3 * u);
	for (int s = 0; s < 2; s++) {
		char buf[256] = "";
		size_t off = 0;
		int n = trn_pp_order(&p, s, ops, 3 * 64);

		assert_int_equal(n, 12);
		for (int c = 0; c < n; c++)
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%c%d",
						c ? " " : "", "FBW"[ops[c].kind], ops[c].mb);
		assert_string_equal(buf, want[s]);
	}
	assert_int_equal(trn_pp_order(&p, 0, ops, 11), -ENOSPC);
	assert_int_equal(trn_pp_order(&p, 2, ops, 3 * 64), -EINVAL);
	/* 35 micro-batches: 1F1B idles 3u a step, zero bubble not at all */
	model_square(2, 100, 35, 1);
	assert_int_equal(trn_predict_pp(&m, d, 2, &net, &p), 0);
	assert_int_equal(trn_predict_pp(&m, d, 2, &net, &q), 0);
	assert_near(q.step_s, 36 * 3 * u);
	assert_near(p.step_s, 35 * 3 * u);
}

/* Every ZB schedule is complete and keeps its promises: F, B and W each in
 * micro-batch order, B after F and W after B of the same micro-batch, at
 * most trn_pp_zb_inflight() micro-batches between F and W; and its
 * steady step is at least the busiest stage's work and at most 1F1B's. */
static void test_pp_zb_orders(void **state)
{
	static struct trn_pp_op ops[3 * 40];

	srand(77);
	for (int iter = 0; iter < 300; iter++) {
		int L = 1 + rand() % 10, S = 1 + rand() % (L < 6 ? L : 6);
		int M = 1 + rand() % 40;
		struct trn_profile d[6];
		double g[6], busy = 0;
		struct trn_net net = {.busbw_gbps = 1,
				      .p2p_gbps = frand(1e-3, 0.5),
				      .lat_s = frand(0, 1e-4),
				      .overlap = 0};
		struct trn_pp_plan p = {.sched = TRN_PP_ZB}, q;

		for (int i = 0; i < S; i++)
			g[i] = frand(0.05, 2);
		devs(d, g, S);
		random_chain(L);
		m.micro_batch = 1 + rand() % 4;
		m.global_batch = M * m.micro_batch;
		assert_int_equal(trn_plan_pp_even(&m, d, S, &net, TRN_PP_1F1B, &q), 0);
		memcpy(p.first, q.first, sizeof(p.first));
		memcpy(p.nlayers, q.nlayers, sizeof(p.nlayers));
		assert_int_equal(trn_predict_pp(&m, d, S, &net, &p), 0);
		for (int s = 0; s < S; s++) {
			int next[3] = {0, 0, 0}, n = trn_pp_order(&p, s, ops, 3 * 40);

			assert_int_equal(n, 3 * M);
			for (int c = 0; c < n; c++) {
				int k = ops[c].kind;

				assert_int_equal(ops[c].mb, next[k]);
				next[k]++;
				assert_true(next[TRN_PP_B] <= next[TRN_PP_F]);
				assert_true(next[TRN_PP_W] <= next[TRN_PP_B]);
				assert_true(next[TRN_PP_F] - next[TRN_PP_W] <=
					    trn_pp_zb_inflight(s, S, M));
			}
			busy = fmax(busy, M * (p.fwd_s[s] + p.bwd_s[s] + p.wgt_s[s]));
		}
		assert_true(p.step_s >= busy * (1 - 1e-12));
		assert_true(p.step_s <= q.step_s * (1 + 1e-12));
	}
}

/* ---- PP planner -------------------------------------------------------------- */

/* The optimizer step of each stage ends its step: in the prediction, and
 * in the split (a stage with slow memory gets fewer layers). */
static void test_pp_update(void **state)
{
	struct trn_profile d[2];
	struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = 1e6, .lat_s = 0, .overlap = 0};
	struct trn_pp_plan p = {.sched = TRN_PP_1F1B}, q;

	/* one stage of 4 layers 100x100, 4 micro-batches of 2: 4 x 0.48 ms,
	 * then 3 x 160 kB / 0.48 GB/s = 1 ms of update */
	devs(d, (double[]){1}, 1);
	d[0].mem_gbps = 0.48;
	model_square(4, 100, 8, 2);
	p.first[0] = 0;
	p.nlayers[0] = 4;
	assert_int_equal(trn_predict_pp(&m, d, 1, &net, &p), 0);
	assert_near(p.upd_s[0], 1e-3);
	assert_near(p.step_s, 4 * 4.8e-4 + 1e-3);
	p.sched = TRN_PP_ZB;
	assert_int_equal(trn_predict_pp(&m, d, 1, &net, &p), 0);
	assert_near(p.step_s, 4 * 4.8e-4 + 1e-3);
	/* equal compute, stage 1's memory 1000x slower: even (2 / 2) is not
	 * balanced any more, 3 / 1 is (the split search includes updates) */
	devs(d, (double[]){1, 1}, 2);
	d[0].mem_gbps = 480;
	d[1].mem_gbps = 0.48;
	for (int sc = 0; sc < 2; sc++) {
		enum trn_pp_sched sched = sc == 0 ? TRN_PP_1F1B : TRN_PP_ZB;

		assert_int_equal(trn_plan_pp(&m, d, 2, &net, sched, &q), 0);
		assert_int_equal(q.nlayers[0], 3);
		assert_int_equal(q.nlayers[1], 1);
		assert_near(q.upd_s[1], 0.25e-3);
		p = q;
		p.nlayers[0] = p.nlayers[1] = 2;
		p.first[1] = 2;
		assert_int_equal(trn_predict_pp(&m, d, 2, &net, &p), 0);
		assert_near(p.upd_s[1], 0.5e-3);
		assert_true(q.step_s < p.step_s);
	}
}

static void test_plan_pp_hand(void **state)
{
	struct trn_profile d[2];
	struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = 1000, .lat_s = 0, .overlap = 0};
	struct trn_pp_plan p, e;

	/* speeds 3:1, 8 equal layers: 6 / 2 */
	devs(d, (double[]){3, 1}, 2);
	model_square(8, 256, 64, 4);
	assert_int_equal(trn_plan_pp(&m, d, 2, &net, TRN_PP_1F1B, &p), 0);
	assert_int_equal(p.nlayers[0], 6);
	assert_int_equal(p.nlayers[1], 2);
	assert_int_equal(p.first[1], 6);
	assert_int_equal(trn_plan_pp_even(&m, d, 2, &net, TRN_PP_1F1B, &e), 0);
	assert_int_equal(e.nlayers[0], 4);
	assert_int_equal(e.nlayers[1], 4);
	assert_true(p.step_s < e.step_s);
	/* even: the remainder one each to the first stages */
	model_square(8, 256, 64, 4);
	{
		struct trn_profile d3[3];

		devs(d3, (double[]){1, 1, 1}, 3);
		assert_int_equal(trn_plan_pp_even(&m, d3, 3, &net, TRN_PP_1F1B, &e), 0);
		assert_int_equal(e.nlayers[0], 3);
		assert_int_equal(e.nlayers[1], 3);
		assert_int_equal(e.nlayers[2], 2);
	}
}

static void random_chain(int L)
{
	int w = 16 + rand() % 200;

	memset(&m, 0, sizeof(m));
	m.nlayers = L;
	for (int l = 0; l < L; l++) {
		m.in[l] = w;
		w = 16 + rand() % 200;
		m.out[l] = w;
	}
	m.bucket_kb = 4096;
}

/* Every contiguous split of L layers into S stages: the least est_s, the
 * largest step_s among the splits with that est_s (the planner may hold any
 * of them), and the least step_s. */
struct pp_best {
	double est, est_step, step;
};

static void pp_brute(struct trn_profile *d, int S, const struct trn_net *net, int s, int first,
		     struct trn_pp_plan *p, struct pp_best *b)
{
	if (s == S - 1) {
		p->first[s] = first;
		p->nlayers[s] = m.nlayers - first;
		if (trn_predict_pp(&m, d, S, net, p) < 0)
			fail_msg("predict failed");
		if (p->est_s < b->est * (1 - 1e-12)) {
			b->est = p->est_s;
			b->est_step = p->step_s;
		} else if (p->est_s <= b->est * (1 + 1e-12) && p->step_s > b->est_step) {
			b->est_step = p->step_s;
		}
		if (p->step_s < b->step)
			b->step = p->step_s;
		return;
	}
	for (int n = 1; first + n <= m.nlayers - (S - 1 - s); n++) {
		p->first[s] = first;
		p->nlayers[s] = n;
		pp_brute(d, S, net, s + 1, first + n, p, b);
	}
}

/* The planner finds the least est_s exactly (its split or a better
 * predicted one), is never worse than even, and comes close to the best
 * predicted step of all splits. */
static void plan_pp_brute(enum trn_pp_sched sched)
{
	double worst = 0;
	int optimal = 0;

	srand(4242);
	for (int iter = 0; iter < 600; iter++) {
		int L = 1 + rand() % 10, S = 1 + rand() % (L < 5 ? L : 5);
		int mb = 1 + rand() % 8, M = 1 + rand() % 12;
		struct trn_profile d[5];
		double g[5];
		struct trn_net net = {.busbw_gbps = 1,
				      .p2p_gbps = frand(1e-4, 0.05), /* comm matters */
				      .lat_s = frand(0, 1e-4),
				      .overlap = 0};
		struct trn_pp_plan p, e, scratch = {.sched = sched};
		struct pp_best b = {DBL_MAX, 0, DBL_MAX};

		for (int i = 0; i < S; i++)
			g[i] = frand(0.01, 2);
		devs(d, g, S);
		random_chain(L);
		m.micro_batch = mb;
		m.global_batch = M * mb;
		/* optimizer steps of up to a few micro-batches' compute */
		for (int i = 0; i < S; i++)
			d[i].mem_gbps = rand() % 4 == 0 ? 0 : frand(0.1, 2) * g[i] / mb;
		assert_int_equal(trn_plan_pp(&m, d, S, &net, sched, &p), 0);
		assert_int_equal(trn_plan_pp_even(&m, d, S, &net, sched, &e), 0);
		assert_int_equal(p.sched, sched);
		pp_brute(d, S, &net, 0, 0, &scratch, &b);
		if (p.step_s > b.est_step * (1 + 1e-9))
			fail_msg("iter %d (L %d S %d M %d): planner %.12g, split of least est "
				 "%.12g",
				 iter, L, S, M, p.step_s, b.est_step);
		assert_true(p.step_s <= e.step_s * (1 + 1e-12));
		assert_true(p.step_s >= b.step * (1 - 1e-12));
		worst = fmax(worst, p.step_s / b.step - 1);
		optimal += p.step_s <= b.step * (1 + 1e-9);
		assert_int_equal(p.micro_batches, M);
		scratch = p;
		assert_int_equal(trn_predict_pp(&m, d, S, &net, &scratch), 0);
		assert_near(scratch.step_s, p.step_s);
	}
	print_message("%s: planner at the best predicted split in %d of 600 cases; worst "
		      "%.2f%% above it\n",
		      trn_pp_sched_name(sched), optimal, 100 * worst);
}

static void test_plan_pp_brute(void **state)
{
	plan_pp_brute(TRN_PP_1F1B);
	plan_pp_brute(TRN_PP_ZB);
}

static void test_plan_pp_large(void **state)
{
	struct trn_profile d[64];
	double g[64];
	struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = 10, .lat_s = 50e-6, .overlap = 0};
	struct trn_pp_plan p, e;

	/* the largest shapes finish, and beat even */
	srand(99);
	for (int i = 0; i < 16; i++)
		g[i] = i % 2 == 0 ? 10 : 3;
	devs(d, g, 16);
	model_square(256, 512, 256, 4);
	assert_int_equal(trn_plan_pp(&m, d, 16, &net, TRN_PP_1F1B, &p), 0);
	assert_int_equal(trn_plan_pp_even(&m, d, 16, &net, TRN_PP_1F1B, &e), 0);
	assert_true(p.step_s < e.step_s);
	{
		struct trn_pp_plan z, ze;

		assert_int_equal(trn_plan_pp(&m, d, 16, &net, TRN_PP_ZB, &z), 0);
		assert_int_equal(trn_plan_pp_even(&m, d, 16, &net, TRN_PP_ZB, &ze), 0);
		assert_true(z.step_s < ze.step_s);
		assert_true(z.step_s < p.step_s);
	}
	for (int i = 0; i < 8; i++)
		print_message("stage %d: %d layers\n", i, p.nlayers[i]);
}

/* ---- CPU contention ------------------------------------------------------------ */

/* The pure function: what the spare cores cannot absorb, shared at the
 * rank's cores per second. */
static void test_cpu_contention(void **state)
{
	struct trn_profile d[3];

	/* one core, the compute keeps it busy: all of the communication's CPU */
	assert_near(trn_cpu_contention_s(1, 1, 0.1, 0.02), 0.02);
	/* half a core of quota: at half a CPU second per second, twice it */
	assert_near(trn_cpu_contention_s(0.5, 0.5, 0.1, 0.02), 0.04);
	/* two cores: the spare one absorbs it... */
	assert_near(trn_cpu_contention_s(2, 1, 0.1, 0.02), 0);
	/* ... up to its window, the rest shared by both */
	assert_near(trn_cpu_contention_s(2, 1, 0.01, 0.02), 0.005);
	/* a device's compute leaves the core to the communication */
	assert_near(trn_cpu_contention_s(1, 0, 0.01, 0.02), 0.01);
	/* not priced */
	assert_near(trn_cpu_contention_s(0, 1, 0.1, 0.02), 0);
	assert_near(trn_cpu_contention_s(1, 1, 0.1, 0), 0);
	devs(d, (double[]){1, 1, 1}, 3);
	snprintf(d[1].kind, sizeof(d[1].kind), "cuda");
	d[2].emulated = true;
	assert_near(trn_compute_cores(&d[0], 0.5), 0.5);
	assert_near(trn_compute_cores(&d[0], 4), 1);
	assert_near(trn_compute_cores(&d[1], 4), 0);
	assert_near(trn_compute_cores(&d[2], 4), 0);
}

/* DP: the hidden part of the all-reduce takes its CPU from the compute of
 * ranks without a spare core. Fails if the contention term is removed. */
static void test_predict_dp_contention(void **state)
{
	struct trn_profile d[2];
	struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = 1, .lat_s = 1e-3, .overlap = 0.5};
	struct trn_dp_plan p = {0}, q;
	double tb = 1048576 / 1e9 + 1e-3, tl = 854272 / 1e9 + 1e-3;
	double all = 3 * tb + tl, hidden = 3 * tb, cpu;

	devs(d, (double[]){2, 1}, 2);
	model_square(1, 1000, 12, 1);
	m.bucket_kb = 1024;
	p.samples[0] = 8;
	p.samples[1] = 4;
	/* as test_predict_dp: 24 ms of compute each, the last bucket shows */
	net.cores[0] = net.cores[1] = 1;
	net.cpu_ar_s[0] = net.cpu_ar_s[1] = 2e-9; /* 2 ns of CPU per byte */
	cpu = 2e-9 * 4e6 * hidden / all;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.comm_s, tl);
	assert_near(p.contention_s[0], cpu);
	assert_near(p.contention_s[1], cpu);
	assert_near(p.step_s, 0.024 + cpu + tl);
	/* half a core of quota on the slow rank: twice that */
	net.cores[1] = 0.5;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.contention_s[1], 2 * cpu);
	assert_near(p.step_s, 0.024 + 2 * cpu + tl);
	/* two cores each: the spare core absorbs it, the classic step */
	net.cores[0] = net.cores[1] = 2;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.contention_s[1], 0);
	assert_near(p.step_s, 0.024 + tl);
	/* the planner moves work off the rank that pays for it: equal
	 * devices, the second on a half core with an expensive transport */
	devs(d, (double[]){1, 1}, 2);
	net.cores[0] = 4;
	net.cores[1] = 0.5;
	net.cpu_ar_s[0] = net.cpu_ar_s[1] = 20e-9;
	net.overlap = 1;
	assert_int_equal(trn_plan_dp(&m, d, 2, &net, &q), 0);
	assert_true(q.samples[0] > q.samples[1]);
	assert_true(q.contention_s[1] > 0);
}

/* DP gradients in bf16: the replicated all-reduce moves half the bytes,
 * the sharded step's reduce-scatter half (all-gather in fp32: 3/4 of
 * them; weights gathered in bf16 too: half), and the hidden part's CPU
 * shrinks alike. */
static void test_predict_dp_bf16(void **state)
{
	struct trn_profile d[2];
	struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = 1, .lat_s = 1e-3, .overlap = 0};
	struct trn_dp_plan p = {.samples = {8, 4}};
	double fp32;

	(void)state;
	devs(d, (double[]){2, 1}, 2);
	model_square(1, 1000, 12, 1);
	m.bucket_kb = 1024;
	/* replicated, no overlap: 4 buckets, 4e6 B in fp32 */
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	fp32 = p.comm_s;
	assert_near(fp32, 4e6 / 1e9 + 4 * 1e-3);
	m.grad = TRN_GRAD_BF16;
	assert_near(trn_grad_wire_share(&m), 0.5);
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.comm_s, 2e6 / 1e9 + 4 * 1e-3);
	/* sharded, even shards (no memory bandwidth stated): RS + AG of 1/2
	 * each, 2 * 1/2 * bytes, two alphas a bucket; bf16: 3/4 of the bytes */
	m.optim = TRN_OPTIM_SHARDED;
	assert_near(trn_grad_wire_share(&m), 0.75);
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.comm_s, 0.75 * 4e6 / 1e9 + 8 * 1e-3);
	/* the weights gathered in bf16 too: half; alone, 3/4 */
	m.param = TRN_GRAD_BF16;
	assert_near(trn_grad_wire_share(&m), 0.5);
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.comm_s, 0.5 * 4e6 / 1e9 + 8 * 1e-3);
	/* three devices, parts by memory bandwidth 2:1:1: every ring step
	 * waits for the largest part (1/2), 2 (n - 1) * 1/2 * wire a bucket */
	{
		struct trn_profile d3[3];
		struct trn_dp_plan q = {.samples = {4, 4, 4}};

		devs(d3, (double[]){1, 1, 1}, 3);
		d3[0].mem_gbps = 2;
		d3[1].mem_gbps = d3[2].mem_gbps = 1;
		assert_int_equal(trn_predict_dp(&m, d3, 3, &net, &q), 0);
		assert_near(q.comm_s, 2.0 * 0.5 * 4e6 / 1e9 + 8 * 1e-3);
		m.param = TRN_GRAD_FP32; /* 3/4 */
		assert_int_equal(trn_predict_dp(&m, d3, 3, &net, &q), 0);
		assert_near(q.comm_s, 2.0 * 0.75 * 4e6 / 1e9 + 8 * 1e-3);
		m.param = TRN_GRAD_BF16;
	}
	m.grad = TRN_GRAD_FP32;
	assert_near(trn_grad_wire_share(&m), 0.75);
	m.optim = TRN_OPTIM_REPLICATED; /* gathers no weights */
	assert_near(trn_grad_wire_share(&m), 1);
	m.optim = TRN_OPTIM_SHARDED;
	m.param = TRN_GRAD_FP32;
	assert_near(trn_grad_wire_share(&m), 1);
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.comm_s, 4e6 / 1e9 + 8 * 1e-3);
	/* the hidden part's CPU on a one-core rank: 3/4 of fp32's */
	net.overlap = 1;
	net.cores[0] = net.cores[1] = 1;
	net.cpu_ar_s[0] = net.cpu_ar_s[1] = 2e-9;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	fp32 = p.contention_s[1];
	assert_true(fp32 > 0);
	m.grad = TRN_GRAD_BF16;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_true(p.contention_s[1] < fp32);
	/* the conversions: the reduce-scatter rounds all 1e6 elements and
	 * widens the rank's half; 1 ns each on one core is 1.5 ms, in the
	 * hidden part's proportion as the wire's CPU */
	assert_near(trn_grad_cvt_share(&m, 0.5), 1.5);
	fp32 = p.contention_s[1];
	net.cpu_cvt_s[0] = net.cpu_cvt_s[1] = 1e-9;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.contention_s[1] - fp32, 1.5e-3 * (fp32 / (2e-9 * 4e6 * 0.75)));
	m.param = TRN_GRAD_BF16; /* and the all-gather rounds its half, widens all */
	assert_near(trn_grad_cvt_share(&m, 0.5), 3);
	m.param = TRN_GRAD_FP32;
	m.optim = TRN_OPTIM_REPLICATED; /* rounds and widens all */
	assert_near(trn_grad_cvt_share(&m, 1), 2);
	m.grad = TRN_GRAD_FP32;
	assert_near(trn_grad_cvt_share(&m, 1), 0);
	assert_string_equal(trn_grad_name(TRN_GRAD_BF16), "bf16");
	assert_string_equal(trn_grad_name(TRN_GRAD_FP32), "fp32");
}

/* PP: each F and B pays its messages' CPU where the stage has no spare
 * core. Fails if the contention term is removed. */
static void test_predict_pp_contention(void **state)
{
	struct trn_profile d[2];
	struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = 1, .lat_s = 1e-6, .overlap = 0};
	struct trn_pp_plan p = {.sched = TRN_PP_1F1B}, q;
	double msg = 4.0 * 100 * 2, c = 10e-9;

	devs(d, (double[]){1, 1}, 2);
	model_square(2, 100, 8, 2);
	p.first[0] = 0;
	p.nlayers[0] = 1;
	p.first[1] = 1;
	p.nlayers[1] = 1;
	assert_int_equal(trn_predict_pp(&m, d, 2, &net, &p), 0);
	q = p;
	net.cores[0] = net.cores[1] = 1;
	net.cpu_p2p_s[0] = net.cpu_p2p_s[1] = c;
	assert_int_equal(trn_predict_pp(&m, d, 2, &net, &q), 0);
	/* stage 0 sends one activation per F, receives one gradient per B;
	 * stage 1 the other way */
	for (int s = 0; s < 2; s++) {
		assert_near(q.fwd_s[s], p.fwd_s[s] + c * msg);
		assert_near(q.bwd_s[s], p.bwd_s[s] + c * msg);
		assert_near(q.contention_s[s], 2 * c * msg);
	}
	assert_true(q.step_s > p.step_s + 4 * 2 * c * msg);
	/* a spare core: nothing */
	net.cores[0] = net.cores[1] = 2;
	assert_int_equal(trn_predict_pp(&m, d, 2, &net, &q), 0);
	assert_near(q.step_s, p.step_s);
}

/* PP: each message also costs its fixed CPU (cpu_msg_s): stage 0 and the
 * last stage one message per F and per B, a middle stage two (it receives
 * and sends on both). Fails if the per-message cost is not priced or is
 * priced per byte. */
static void test_predict_pp_msg_cpu(void **state)
{
	struct trn_profile d[3];
	struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = 1, .lat_s = 1e-6, .overlap = 0};
	struct trn_pp_plan p = {.sched = TRN_PP_1F1B}, q;
	double cm = 50e-6; /* below a stage's F (160 us): a spare core absorbs it */

	(void)state;
	devs(d, (double[]){1, 1, 1}, 3);
	model_square(3, 200, 8, 2);
	for (int s = 0; s < 3; s++) {
		p.first[s] = s;
		p.nlayers[s] = 1;
		net.cores[s] = 1;
	}
	assert_int_equal(trn_predict_pp(&m, d, 3, &net, &p), 0);
	q = p;
	for (int s = 0; s < 3; s++)
		net.cpu_msg_s[s] = cm;
	assert_int_equal(trn_predict_pp(&m, d, 3, &net, &q), 0);
	for (int s = 0; s < 3; s++) {
		double nmsg = s == 1 ? 2 : 1;

		assert_near(q.fwd_s[s], p.fwd_s[s] + nmsg * cm);
		assert_near(q.bwd_s[s], p.bwd_s[s] + nmsg * cm);
		assert_near(q.contention_s[s], 2 * nmsg * cm);
	}
	/* the middle stage is now the slowest: every micro-batch pays it */
	assert_true(q.step_s > p.step_s + 2 * 2 * 2 * cm);
	/* a spare core absorbs it */
	for (int s = 0; s < 3; s++)
		net.cores[s] = 2;
	assert_int_equal(trn_predict_pp(&m, d, 3, &net, &q), 0);
	assert_near(q.step_s, p.step_s);
}

/* A host rank's speed from the CPU its steps needed (issue 20): the
 * compute thread's CPU, or the whole process's over the cores it may use
 * when that is more (the communication thread on the same core, a CPU
 * quota), less what is priced apart. Fails without trn_speed_from_steps or
 * if it timed only the compute thread. */
static void test_speed_from_steps(void **state)
{
	(void)state;
	/* one core: 10 GFLOP in 1 s of compute thread, nothing else */
	assert_near(trn_speed_from_steps(10e9, 1, 0, 1, 1, 0), 10);
	/* the communication thread took 0.25 s of the same core */
	assert_near(trn_speed_from_steps(10e9, 1, 0, 1.25, 1, 0), 8);
	/* a quota of 0.4 core: 1 CPU s takes 2.5 s of wall time */
	assert_near(trn_speed_from_steps(10e9, 1, 0, 1, 0.4, 0), 4);
	/* two cores: the communication thread has its own */
	assert_near(trn_speed_from_steps(10e9, 1, 0, 1.25, 2, 0), 10);
	/* the optimizer step is priced apart; not beyond half the time */
	assert_near(trn_speed_from_steps(10e9, 1.25, 0, 1.25, 1, 0.25), 10);
	assert_near(trn_speed_from_steps(10e9, 1, 0, 1, 1, 0.8), 10);
	/* no cores known: the compute thread alone */
	assert_near(trn_speed_from_steps(10e9, 1, 0, 3, 0, 0), 10);
	assert_near(trn_speed_from_steps(0, 1, 0, 1, 1, 0), 0);
	assert_near(trn_speed_from_steps(10e9, 0, 0, 0, 1, 0), 0);
}

/* The run-queue wait (issue 20): a neighbour that takes half the compute
 * thread's core adds no CPU time to the rank but as much wait; the speed
 * must halve. A quota's throttling seen by both measures is not counted
 * twice (the larger wins). Fails if the wait is ignored (the CPU-based
 * speed would stay 10) or added to the process's CPU. */
static void test_speed_from_steps_wait(void **state)
{
	(void)state;
	/* a neighbour: 1 s of CPU, 1 s on the run queue, one core */
	assert_near(trn_speed_from_steps(10e9, 1, 1, 1, 1, 0), 5);
	/* the same on two cores: the process's CPU says nothing of it */
	assert_near(trn_speed_from_steps(10e9, 1, 1, 1, 2, 0), 5);
	/* a 0.4-core quota, compute thread throttled for 1.5 s of 2.5 s:
	 * both measures say 2.5 s */
	assert_near(trn_speed_from_steps(10e9, 1, 1.5, 1, 0.4, 0), 4);
	/* throttled while it waited for a message (blocked): only the
	 * process's CPU over the quota sees it */
	assert_near(trn_speed_from_steps(10e9, 1, 0.5, 1, 0.4, 0), 4);
	/* its own communication thread ran 0.25 s in its place */
	assert_near(trn_speed_from_steps(10e9, 1, 0.25, 1.25, 1, 0), 8);
	/* no schedstat: as before */
	assert_near(trn_speed_from_steps(10e9, 1, -1, 1, 1, 0), 10);
	/* the optimizer step still comes off */
	assert_near(trn_speed_from_steps(10e9, 1, 0.25, 1, 1, 0.25), 10);
}

/* Refined profiles: measured speeds replace the profiles' (not an emulated
 * device's), and a DP and a PP step predicted from the speed recovered
 * from a rank's CPU (its communication's CPU inside it, so not priced
 * again: cores 0) equal the prediction from the true speed with the
 * contention priced. Fails without trn_profiles_refine /
 * trn_speed_from_steps. */
static void test_refine_predict(void **state)
{
	struct trn_profile d[3], r[3], truth[2];
	struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = 1, .lat_s = 1e-3, .overlap = 0.5}, n0;
	struct trn_dp_plan p = {0}, q, t;
	double meas[3] = {1.5, 0, 7}, g[2];
	double flops = 2.0 * 1000 * 1000 * 3; /* per sample: fwd + bwd */

	(void)state;
	devs(d, (double[]){2, 1, 3}, 3);
	d[2].emulated = true;
	assert_int_equal(trn_profiles_refine(d, 3, meas, r), 1);
	assert_near(r[0].gflops, 1.5);
	assert_near(r[1].gflops, 1);
	assert_near(r[2].gflops, 3); /* emulated: stated */
	assert_string_equal(r[0].name, "d0");
	assert_int_equal(trn_profiles_refine(r, 3, (double[]){0, 0.5, 0}, r), 1);
	assert_near(r[1].gflops, 0.5);
	assert_near(trn_profile_off(&d[0], 1.5), -0.25);
	assert_near(trn_profile_off(&d[0], 0), 0);

	/* DP: profiles say 2 and 1, the devices really do 2 and 0.5; one
	 * core each, the all-reduce's CPU on it */
	devs(d, (double[]){2, 1}, 2);
	devs(truth, (double[]){2, 0.5}, 2);
	model_square(1, 1000, 12, 1);
	m.bucket_kb = 1024;
	net.cores[0] = net.cores[1] = 1;
	net.cpu_ar_s[0] = net.cpu_ar_s[1] = 2e-9;
	p.samples[0] = 8;
	p.samples[1] = 4;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	t = p;
	assert_int_equal(trn_predict_dp(&m, truth, 2, &net, &t), 0);
	assert_true(t.step_s > p.step_s * 1.5);
	assert_true(t.contention_s[1] > 0);
	/* each rank's CPU in a step: its FLOP at the true speed on the
	 * compute thread, the communication's CPU on the communication
	 * thread, both on its one core */
	for (int i = 0; i < 2; i++) {
		double c = p.samples[i] * flops / (truth[i].gflops * 1e9);

		g[i] = trn_speed_from_steps(p.samples[i] * flops, c, 0, c + t.contention_s[i], 1,
					    0);
	}
	trn_profiles_refine(d, 2, g, r);
	n0 = net;
	n0.cores[0] = n0.cores[1] = 0;
	q = p;
	assert_int_equal(trn_predict_dp(&m, r, 2, &n0, &q), 0);
	assert_near(q.step_s, t.step_s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_predict_dp),
		cmocka_unit_test(test_dp_tails),
		cmocka_unit_test(test_plan_dp_tailed),
		cmocka_unit_test(test_plan_dp_hand),
		cmocka_unit_test(test_plan_dp_brute),
		cmocka_unit_test(test_plan_dp_never_worse),
		cmocka_unit_test(test_predict_pp),
		cmocka_unit_test(test_predict_pp_schedule),
		cmocka_unit_test(test_predict_pp_zb),
		cmocka_unit_test(test_pp_zb_orders),
		cmocka_unit_test(test_plan_pp_hand),
		cmocka_unit_test(test_plan_pp_brute),
		cmocka_unit_test(test_plan_pp_large),
		cmocka_unit_test(test_dp_update),
		cmocka_unit_test(test_pp_update),
		cmocka_unit_test(test_cpu_contention),
		cmocka_unit_test(test_predict_dp_contention),
		cmocka_unit_test(test_predict_dp_bf16),
		cmocka_unit_test(test_predict_pp_contention),
		cmocka_unit_test(test_predict_pp_msg_cpu),
		cmocka_unit_test(test_speed_from_steps),
		cmocka_unit_test(test_speed_from_steps_wait),
		cmocka_unit_test(test_refine_predict),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
