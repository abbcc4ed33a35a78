// SPDX-License-Identifier: Apache-2.0
/*
 * trn planner and predictor, data parallel and what both schemes share (CPU
 * contention, speeds from the steps): the formulas on hand-computed cases,
 * the DP planner against brute force over every split of small random
 * cases, and never worse than the even split. The pipeline's:
 * test_trn_plan_pp.c.
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
#include "trn_plan_test.h"

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
	trn_dp_shards(&m, d, 2, 262144, sh);
	assert_int_equal(sh[0], 187246); /* 187245.71 */
	assert_int_equal(sh[1], 74898);	 /* 74897.14 */
	trn_dp_shards(&m, d, 2, 0, sh);
	assert_int_equal(sh[0] + sh[1], 0);
	/* 1 : 1 : 1, 10 elements: 4 3 3; no bandwidth stated: even */
	devs(d, (double[]){1, 1, 1}, 3);
	for (int i = 0; i < 3; i++)
		d[i].mem_gbps = 5;
	trn_dp_shards(&m, d, 3, 10, sh);
	assert_int_equal(sh[0], 4);
	assert_int_equal(sh[1], 3);
	assert_int_equal(sh[2], 3);
	d[2].mem_gbps = 0;
	trn_dp_shards(&m, d, 3, 7, sh);
	assert_int_equal(sh[0] + sh[1] + sh[2], 7);
	assert_int_equal(sh[0], 3);
	assert_int_equal(sh[2], 2);
	/* an accelerator updating on the device moves its part over the bus
	 * too: at 30 GB/s of memory and 10 GB/s each way, fp32 gradients,
	 * 3/30 + 1/10 + 1/10 s per GB, as fast as a host at 10 GB/s (3/10):
	 * even parts, and the same update time; bf16 gradients come up on the
	 * collective's path: 3/30 + 1/10, 6 : 4 */
	devs(d, (double[]){1, 1}, 2);
	snprintf(d[0].kind, sizeof(d[0].kind), "cuda");
	d[0].mem_gbps = 30;
	d[0].h2d_gbps = d[0].d2h_gbps = 10;
	d[1].mem_gbps = 10;
	memset(&m, 0, sizeof(m));
	m.optim = TRN_OPTIM_SHARDED;
	trn_dp_shards(&m, d, 2, 10, sh);
	assert_int_equal(sh[0], 5);
	assert_int_equal(sh[1], 5);
	m.grad = TRN_GRAD_BF16;
	trn_dp_shards(&m, d, 2, 10, sh);
	assert_int_equal(sh[0], 6);
	assert_int_equal(sh[1], 4);
	model_square(1, 1000, 2, 1);
	m.optim = TRN_OPTIM_SHARDED;
	p.samples[0] = p.samples[1] = 1;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.update_s[0], p.update_s[1]);
	assert_near(p.update_s[1], 3 * 4e6 * 0.5 / 10e9);
	/* weights gathered in bf16: its part goes down rounded, half the
	 * bytes: 3/30 + 1/10 + 0.5/10 s per GB against 3/10, 12 : 10 of 8
	 * elements, 4.36 and 3.64: 4 and 4 */
	m.param = TRN_GRAD_BF16;
	trn_dp_shards(&m, d, 2, 8, sh);
	assert_int_equal(sh[0], 4);
	assert_int_equal(sh[1], 4);

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
	/* the conversions on each bucket's path: both ranks round and widen
	 * all 1e6 elements and their half, 3 conversions a element at 1 ns */
	net.cpu_cvt_s[0] = net.cpu_cvt_s[1] = 1e-9;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.comm_s, 0.5 * 4e6 / 1e9 + 8 * 1e-3 + 1e6 * 3e-9);
	/* replicated: the all-reduce rounds and widens the whole bucket */
	m.optim = TRN_OPTIM_REPLICATED;
	m.param = TRN_GRAD_FP32;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.comm_s, 2e6 / 1e9 + 4 * 1e-3 + 1e6 * 2e-9);
	m.optim = TRN_OPTIM_SHARDED;
	m.param = TRN_GRAD_BF16;
	net.cpu_cvt_s[0] = net.cpu_cvt_s[1] = 0;
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
		/* each phase waits for its slowest rank: rounding the whole
		 * bucket, rank 2's 1.5 ns an element; widening its own part,
		 * rank 0's 1/2 at 1 ns (0.5 ns an element, more than rank 2's
		 * 1/4 at 1.5): 2 ns an element, not rank 2's total of 1.875 */
		net.cpu_cvt_s[0] = net.cpu_cvt_s[1] = 1e-9;
		net.cpu_cvt_s[2] = 1.5e-9;
		assert_int_equal(trn_predict_dp(&m, d3, 3, &net, &q), 0);
		assert_near(q.comm_s, 2.0 * 0.75 * 4e6 / 1e9 + 8 * 1e-3 + 1e6 * 2e-9);
		net.cpu_cvt_s[0] = net.cpu_cvt_s[1] = net.cpu_cvt_s[2] = 0;
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
	 * widens the rank's half, 1.5 ms at 1 ns each. They lengthen every
	 * bucket: exposed, the last one (213568 elements); hidden, the rest,
	 * whose conversions' CPU counts with the wire's in the hidden part's
	 * proportion */
	assert_near(trn_grad_cvt_share(&m, 0.5), 1.5);
	net.cpu_cvt_s[0] = net.cpu_cvt_s[1] = 1e-9;
	{
		double all, last, hidden, bare = p.contention_s[1];

		net.overlap = 0;
		assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
		all = p.comm_s;
		assert_near(all, 0.75 * 4e6 / 1e9 + 8 * 1e-3 + 1.5e-3);
		net.overlap = 1;
		assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
		last = p.comm_s;
		assert_near(last, 0.75 * 854272 / 1e9 + 2 * 1e-3 + 213568 * 1.5e-9);
		hidden = all - last;
		assert_near(p.contention_s[1],
			    trn_cpu_contention_s(1, trn_compute_cores(&d[1], 1), hidden,
						 (2e-9 * 4e6 * 0.75 + 1e-9 * 1e6 * 1.5) * hidden /
							 all));
		assert_true(p.contention_s[1] > bare);
	}
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

/* An accelerator rank converts whole buckets on the device (6 bytes an
 * element at its mem_gbps) and only its own part on the CPU; the
 * replicated all-reduce's widening stays on the CPU. */
static void test_predict_dp_bf16_device(void **state)
{
	struct trn_profile d[2];
	struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = 1, .lat_s = 1e-3, .overlap = 0};
	struct trn_dp_plan p = {.samples = {6, 6}};
	double bare;

	(void)state;
	devs(d, (double[]){1, 1}, 2);
	model_square(1, 1000, 12, 1);
	m.bucket_kb = 1024;
	m.optim = TRN_OPTIM_SHARDED;
	m.grad = m.param = TRN_GRAD_BF16;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	bare = p.comm_s;
	/* 1e6 elements; rank 0 a GPU at 60 GB/s: 0.1 ns a conversion there */
	snprintf(d[0].kind, sizeof(d[0].kind), "cuda");
	d[0].mem_gbps = 60;
	net.cpu_cvt_s[0] = net.cpu_cvt_s[1] = 1e-9;
	/* the host rank is the slowest at both phases: 2 whole, 2 halves */
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.comm_s, bare + 1e6 * (2e-9 + 2 * 0.5e-9));
	/* both GPUs: every conversion on the devices, the whole buckets' and
	 * their halves' (shards by memory bandwidth, 1/2 each) */
	snprintf(d[1].kind, sizeof(d[1].kind), "hip");
	d[1].mem_gbps = 60;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.comm_s, bare + 1e6 * (2e-10 + 2 * 0.5e-10));
	/* sharded, bf16 gradients, fp32 weights: the devices update, so the
	 * whole bucket's rounding and the own part's widening (half of it)
	 * run on the devices, none on the CPU */
	m.param = TRN_GRAD_FP32;
	d[0].mem_gbps = d[1].mem_gbps = 0; /* conversions free: the bare path */
	net.cpu_cvt_s[0] = net.cpu_cvt_s[1] = 0;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	bare = p.comm_s;
	d[0].mem_gbps = d[1].mem_gbps = 60;
	net.cpu_cvt_s[0] = net.cpu_cvt_s[1] = 1e-9;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.comm_s, bare + 1e6 * (1e-10 + 0.5 * 1e-10));
	/* the update: its part at 60 GB/s x TRN_SGD_TRAFFIC and its weights
	 * down at 10 GB/s (its bf16 gradient came up on the path), so its
	 * part is 60 / (1 + 60 / 10 / 3) : 60, a quarter (1 MB), and both
	 * parts' updates take the same time */
	d[0].h2d_gbps = d[0].d2h_gbps = 10;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.update_s[0], TRN_SGD_TRAFFIC * 1e6 / 60e9 + 1e6 / 10e9);
	assert_near(p.update_s[1], p.update_s[0]);
	m.grad = TRN_GRAD_FP32; /* fp32: the gradient up too, a sixth */
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.update_s[0], TRN_SGD_TRAFFIC * 4e6 / 6 / 60e9 + 2 * 4e6 / 6 / 10e9);
	assert_near(p.update_s[1], p.update_s[0]);
	m.grad = TRN_GRAD_BF16;
	/* replicated: rounded and widened on the device (priced without a
	 * CPU figure too) */
	m.optim = TRN_OPTIM_REPLICATED;
	net.cpu_cvt_s[0] = net.cpu_cvt_s[1] = 0;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	bare = p.comm_s;
	assert_near(bare, 2e6 / 1e9 + 4 * 1e-3 + 1e6 * 2e-10);
	net.cpu_cvt_s[0] = net.cpu_cvt_s[1] = 1e-9;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.comm_s, bare);
	/* a host rank beside a GPU: its rounding and widening on the CPU,
	 * also in the hidden part's contention */
	snprintf(d[1].kind, sizeof(d[1].kind), "host");
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	assert_near(p.comm_s, 2e6 / 1e9 + 4 * 1e-3 + 1e6 * 2e-9);
	net.overlap = 1;
	net.cores[0] = net.cores[1] = 0.5;
	assert_int_equal(trn_predict_dp(&m, d, 2, &net, &p), 0);
	{
		struct trn_dp_plan q = p;
		double all, hidden;

		net.overlap = 0;
		assert_int_equal(trn_predict_dp(&m, d, 2, &net, &q), 0);
		all = q.comm_s;
		hidden = all - p.comm_s;
		assert_true(hidden > 0);
		assert_near(p.contention_s[0], 0);
		assert_near(p.contention_s[1],
			    trn_cpu_contention_s(0.5, 0.5, hidden, 2e-9 * 1e6 * hidden / all));
	}
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
		cmocka_unit_test(test_dp_update),
		cmocka_unit_test(test_cpu_contention),
		cmocka_unit_test(test_predict_dp_contention),
		cmocka_unit_test(test_predict_dp_bf16),
		cmocka_unit_test(test_predict_dp_bf16_device),
		cmocka_unit_test(test_speed_from_steps),
		cmocka_unit_test(test_speed_from_steps_wait),
		cmocka_unit_test(test_refine_predict),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
