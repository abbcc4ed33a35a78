// SPDX-License-Identifier: Apache-2.0
/*
 * trn memory: a rank's bytes on a hand-computed case (host and device
 * ranks, DP with the bf16 exchange, a zero bubble stage), the slots of a
 * pipeline stage against their bound, and the planners under a capacity:
 * DP tails and rows held within it, PP against brute force over every
 * split of small random chains, -ENOMEM when nothing fits. ice-train's
 * own allocations are checked against these figures in test_ice_train.
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

/* two layers 8 -> 16 -> 4 at micro-batch 2 */
static void model_small(void)
{
	model_square(2, 8, 8, 2);
	m.out[0] = 16;
	m.in[1] = 16;
	m.out[1] = 4;
}

static void test_mem_rank(void **state)
{
	struct trn_profile d[1];
	struct trn_mem mm;

	devs(d, (double[]){1}, 1);
	model_small();
	m.optim = TRN_OPTIM_SHARDED;
	m.grad = TRN_GRAD_BF16;
	m.param = TRN_GRAD_BF16;
	/* 192 parameters; a slot: inputs 8 + 16, the output and its gradient
	 * 4 + 4, the input's gradient 8: 40 floats x 2 rows */
	assert_int_equal(trn_mem_rank(&m, &d[0], 2, 0, 2, 3, 5, true, true, false, true, &mm), 0);
	assert_near(mm.weights, 768);
	assert_near(mm.grads, 768);
	assert_near(mm.acts, 3 * 320);
	assert_near(mm.scratch, 2 * 4 * 16 * 2);
	assert_near(mm.rows, 5 * 8 * 4 + 5 * 4 * 4);
	assert_near(mm.device, 2992);
	/* scratch of the parameters, the fp32 master apart, bf16 gradients
	 * and weights */
	assert_near(mm.host, 768 + 768 + 384 + 384);
	assert_near(trn_mem_need(&d[0], &mm), 2992 + 2304);
	/* a device rank: its fp32 master and gradient staging on the host,
	 * the bf16 copy it converts in on the device */
	snprintf(d[0].kind, sizeof(d[0].kind), "cuda");
	assert_int_equal(trn_mem_rank(&m, &d[0], 2, 0, 2, 3, 5, true, true, false, true, &mm), 0);
	assert_near(mm.host, 768 + 768 + 768 + 384 + 384);
	assert_near(mm.exchange, 384);
	assert_near(trn_mem_need(&d[0], &mm), 2992 + 384);
	/* alone, nothing is exchanged: no bf16 staging */
	assert_int_equal(trn_mem_rank(&m, &d[0], 1, 0, 2, 3, 5, true, true, false, true, &mm), 0);
	assert_near(mm.host, 768 + 768 + 768);
	assert_near(mm.exchange, 0);
	/* a zero bubble stage keeps the inner output gradient (16) too; a
	 * middle stage holds no rows, rows 0 is one on an end stage */
	assert_int_equal(trn_mem_rank(&m, &d[0], 3, 0, 2, 2, 0, false, false, true, false, &mm), 0);
	assert_near(mm.acts, 2 * 56 * 2 * 4);
	assert_near(mm.rows, 0);
	assert_int_equal(trn_mem_rank(&m, &d[0], 3, 1, 1, 1, 0, false, true, true, false, &mm), 0);
	assert_near(mm.weights, 256);
	assert_near(mm.acts, (16 + 4 + 4 + 16) * 2 * 4);
	assert_near(mm.rows, 4 * 4);
	/* capacity */
	assert_near(trn_mem_cap(&d[0]), 0);
	d[0].mem_gib = 0.5;
	assert_near(trn_mem_cap(&d[0]), 512.0 * 1024 * 1024);
	/* bad arguments */
	assert_int_equal(trn_mem_rank(&m, &d[0], 1, 1, 2, 1, 0, true, true, false, true, &mm),
			 -EINVAL);
	assert_int_equal(trn_mem_rank(&m, &d[0], 1, 0, 2, 0, 0, true, true, false, true, &mm),
			 -EINVAL);
}

/* The transport's staging (tp_dev_comm_new's sizes): none where every
 * rank computes on the host; else the whole largest message padded and two
 * pieces on every rank's host, one piece on an accelerator's device. */
static void test_mem_transport(void **state)
{
	struct trn_profile d[3];
	struct trn_mem mm;

	devs(d, (double[]){1, 1, 1}, 3);
	model_small();
	/* all on the host (an emulated cuda device too): nothing */
	snprintf(d[1].kind, sizeof(d[1].kind), "cuda");
	d[1].emulated = true;
	memset(&mm, 0, sizeof(mm));
	trn_mem_transport(&m, d, 2, 0, &mm);
	assert_near(mm.transport + mm.transport_host + mm.host + mm.device, 0);
	/* a real cuda rank: the largest message is the model's 768 bytes (two
	 * activations of the widest layer are 2 x 16 x 2 floats, 256); a
	 * piece is 768 / 2 + 8, at least the message below 1 MiB: 768 */
	d[1].emulated = false;
	trn_mem_transport(&m, d, 2, 0, &mm);
	assert_near(mm.transport, 0);
	assert_near(mm.transport_host, 832 + 2 * 768);
	assert_near(mm.host, 832 + 2 * 768);
	memset(&mm, 0, sizeof(mm));
	trn_mem_transport(&m, d, 2, 1, &mm);
	assert_near(mm.transport, 768);
	assert_near(mm.device, 768);
	assert_near(mm.transport_host, 832 + 2 * 768);
	/* alone on an accelerator: the transport stages all the same, in
	 * pieces of the whole message (768 + 8, to 64 bytes: 832) */
	memset(&mm, 0, sizeof(mm));
	trn_mem_transport(&m, &d[1], 1, 0, &mm);
	assert_near(mm.transport, 832);
	assert_near(mm.transport_host, 3 * 832);
	memset(&mm, 0, sizeof(mm));
	trn_mem_transport(&m, &d[0], 1, 0, &mm);
	assert_near(mm.transport + mm.transport_host, 0);
	/* a wide model: pieces of a rank's share, the activations the
	 * largest message: 64 floats in, 2 out (128 parameters), micro-batch
	 * 2^14: two activations 2 x 64 x 2^14 floats = 8 MiB; three ranks */
	model_square(1, 64, 1 << 14, 1 << 14);
	m.out[0] = 2;
	memset(&mm, 0, sizeof(mm));
	trn_mem_transport(&m, d, 3, 1, &mm);
	assert_near(mm.transport, 2796224); /* 8 MiB / 3 + 8, to 64 bytes */
	assert_near(mm.transport_host, 8388608 + 64 + 2 * 2796224.0);
}

/* A device rank gathering weights in bf16 keeps its parts' fp32 master on
 * the device: its share of each of ice-train's buckets. */
static void test_mem_master(void **state)
{
	struct trn_profile d[2];
	struct trn_mem mm;

	devs(d, (double[]){1, 1}, 2);
	snprintf(d[1].kind, sizeof(d[1].kind), "cuda");
	model_small();
	m.optim = TRN_OPTIM_SHARDED;
	m.param = TRN_GRAD_BF16;
	/* one bucket of 192 parameters, even parts (no mem_gbps): 96 */
	memset(&mm, 0, sizeof(mm));
	trn_mem_master(&m, d, 2, 1, &mm);
	assert_near(mm.master, 96 * 4);
	assert_near(mm.device, 96 * 4);
	/* two layers of 16 x 16 in buckets of 1 KiB: one bucket each; parts
	 * 3 : 1 by mem_gbps, 192 of each bucket's 256 */
	model_square(2, 16, 4, 2);
	m.optim = TRN_OPTIM_SHARDED;
	m.param = TRN_GRAD_BF16;
	m.bucket_kb = 1;
	d[0].mem_gbps = 1;
	d[1].mem_gbps = 3;
	memset(&mm, 0, sizeof(mm));
	trn_mem_master(&m, d, 2, 1, &mm);
	assert_near(mm.master, 2 * 192 * 4);
	/* the host rank, fp32 weights, a rank alone: none */
	memset(&mm, 0, sizeof(mm));
	trn_mem_master(&m, d, 2, 0, &mm);
	m.param = TRN_GRAD_FP32;
	trn_mem_master(&m, d, 2, 1, &mm);
	m.param = TRN_GRAD_BF16;
	trn_mem_master(&m, &d[1], 1, 0, &mm);
	assert_near(mm.master + mm.device, 0);
}

/* A stage's slots from its order never pass the bound the split search
 * tests with; in 1F1B they are the bound. */
static void test_pp_slots_bound(void **state)
{
	srand(77);
	for (int iter = 0; iter < 300; iter++) {
		int S = 1 + rand() % 5, L = S + rand() % 6, M = 1 + rand() % 12;
		struct trn_profile d[5];
		double g[5];
		struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = frand(1e-3, 0.1), .lat_s = 1e-5};
		struct trn_pp_plan p;

		for (int i = 0; i < S; i++)
			g[i] = frand(0.05, 2);
		devs(d, g, S);
		model_square(L, 16 + rand() % 64, 2 * M, 2);
		for (int sc = 0; sc < 2; sc++) {
			enum trn_pp_sched sched = sc ? TRN_PP_ZB : TRN_PP_1F1B;

			assert_int_equal(trn_plan_pp(&m, d, S, &net, sched, &p), 0);
			for (int s = 0; s < S; s++) {
				int b = trn_pp_slots_bound(s, S, M, sched);

				if (p.slots[s] < 2 || p.slots[s] > b)
					fail_msg("iter %d %s: stage %d of %d, %d micro-batches: "
						 "%d slots, bound %d",
						 iter, trn_pp_sched_name(sched), s, S, M,
						 p.slots[s], b);
				if (sched == TRN_PP_1F1B)
					assert_int_equal(p.slots[s], b);
			}
		}
	}
}

/* ---- DP under a capacity ------------------------------------------------------ */

static double need_dp(const struct trn_profile *d, int ndev, int rows, int slots)
{
	struct trn_mem mm;

	assert_int_equal(
		trn_mem_rank(&m, d, ndev, 0, m.nlayers, slots, rows, true, true, false, true, &mm),
		0);
	return trn_mem_need(d, &mm);
}

static void test_plan_dp_mem(void **state)
{
	struct trn_profile d[2];
	/* a slow all-reduce: the tails want every micro-batch */
	struct trn_net net = {.busbw_gbps = 0.01, .lat_s = 1e-5, .overlap = -1};
	struct trn_dp_plan p, e;
	int rows;

	devs(d, (double[]){4, 1}, 2);
	model_square(4, 64, 128, 4);
	assert_int_equal(trn_plan_dp_tailed(&m, d, 2, &net, false, 0, &p), 0);
	assert_true(p.tail[0] > 3);
	assert_int_equal(p.over, -1);
	/* room for three slots beside the fast device's rows */
	d[0].mem_gib = (need_dp(&d[0], 2, p.samples[0], 3) + 1) / (1u << 30);
	assert_int_equal(trn_plan_dp_tailed(&m, d, 2, &net, false, 0, &p), 0);
	assert_int_equal(p.tail[0], 3);
	assert_int_equal(p.over, -1);
	assert_near(p.mem_need[0], need_dp(&d[0], 2, p.samples[0], 3));
	/* a fixed tail is held within it too */
	assert_int_equal(trn_plan_dp_tailed(&m, d, 2, &net, false, 8, &p), 0);
	assert_int_equal(p.tail[0], 3);
	assert_int_equal(p.tail[1], p.samples[1] / 4 < 8 ? p.samples[1] / 4 : 8);
	/* room for 40 rows and one slot: the fast device takes no more,
	 * though it would take 100 */
	d[0].mem_gib = (need_dp(&d[0], 2, 40, 1) + 1) / (1u << 30);
	assert_int_equal(trn_plan_dp_tailed(&m, d, 2, &net, false, 0, &p), 0);
	assert_true(p.samples[0] <= 40 && p.samples[0] >= 36);
	assert_int_equal(p.samples[0] + p.samples[1], 128);
	assert_int_equal(p.tail[0], 1);
	assert_int_equal(p.over, -1);
	/* the even split (64 rows) does not fit: reported, never chosen */
	net.overlap = 0.5;
	assert_int_equal(trn_plan_dp_even(&m, d, 2, &net, &e), 0);
	assert_int_equal(e.over, 0);
	assert_true(e.mem_need[0] > trn_mem_cap(&d[0]));
	assert_int_equal(trn_plan_dp(&m, d, 2, &net, &p), 0);
	assert_int_equal(p.over, -1);
	/* room for 6 rows each of 12 in micro-batches of 4: a micro-batch
	 * is split (6/6), as the even split would */
	{
		struct trn_profile d2[2];
		struct trn_dp_plan q;

		devs(d2, (double[]){1, 1}, 2);
		model_square(4, 64, 12, 4);
		for (int i = 0; i < 2; i++)
			d2[i].mem_gib = (need_dp(&d2[i], 2, 6, 1) + 1) / (1u << 30);
		assert_int_equal(trn_plan_dp(&m, d2, 2, &net, &q), 0);
		assert_int_equal(q.samples[0], 6);
		assert_int_equal(q.samples[1], 6);
		assert_int_equal(q.over, -1);
		model_square(4, 64, 128, 4);
	}
	/* neither device can hold the rest: nothing fits */
	rows = 20;
	d[1].mem_gib = (need_dp(&d[1], 2, rows, 1) + 1) / (1u << 30);
	assert_int_equal(trn_plan_dp(&m, d, 2, &net, &p), -ENOMEM);
	/* the weights alone do not fit */
	d[1].mem_gib = need_dp(&d[1], 2, 0, 1) / 2 / (1u << 30);
	d[0].mem_gib = 0;
	assert_int_equal(trn_plan_dp(&m, d, 2, &net, &p), -ENOMEM);
	net.overlap = -1;
	assert_int_equal(trn_plan_dp_tailed(&m, d, 2, &net, false, 0, &p), -ENOMEM);
}

/* ---- PP under a capacity: brute force ------------------------------------------- */

struct pp_fit_best {
	double est, est_step; /* least est among splits the bound admits */
	double step;	      /* least step among splits that fit */
	int nfit, nbound;
};

static bool bound_fits(const struct trn_profile *d, int S, const struct trn_pp_plan *p)
{
	for (int s = 0; s < S; s++) {
		struct trn_mem mm;
		double cap = trn_mem_cap(&d[s]);

		assert_int_equal(trn_mem_rank(&m, &d[s], S, p->first[s], p->nlayers[s],
					      trn_pp_slots_bound(s, S, p->micro_batches, p->sched),
					      m.global_batch, s == 0, s == S - 1,
					      p->sched == TRN_PP_ZB, false, &mm),
				 0);
		if (cap > 0 && trn_mem_need(&d[s], &mm) > cap)
			return false;
	}
	return true;
}

static void pp_fit_brute(const struct trn_profile *d, int S, const struct trn_net *net, int s,
			 int first, struct trn_pp_plan *p, struct pp_fit_best *b)
{
	if (s == S - 1) {
		p->first[s] = first;
		p->nlayers[s] = m.nlayers - first;
		assert_int_equal(trn_predict_pp(&m, d, S, net, p), 0);
		if (p->over < 0) {
			b->nfit++;
			b->step = fmin(b->step, p->step_s);
		}
		if (bound_fits(d, S, p)) {
			assert_int_equal(p->over, -1);
			b->nbound++;
			if (p->est_s < b->est * (1 - 1e-12) ||
			    (p->est_s <= b->est * (1 + 1e-12) && p->step_s < b->est_step)) {
				b->est = p->est_s;
				b->est_step = p->step_s;
			}
		}
		return;
	}
	for (int n = 1; first + n <= m.nlayers - (S - 1 - s); n++) {
		p->first[s] = first;
		p->nlayers[s] = n;
		pp_fit_brute(d, S, net, s + 1, first + n, p, b);
	}
}

static void plan_pp_mem_brute(enum trn_pp_sched sched)
{
	int none = 0, evens = 0;

	srand(5150);
	for (int iter = 0; iter < 400; iter++) {
		int L = 2 + rand() % 8, S = 2 + rand() % (L < 4 ? L - 1 : 3);
		int M = 1 + rand() % 10;
		struct trn_profile d[4];
		double g[4];
		struct trn_net net = {
			.busbw_gbps = 1, .p2p_gbps = frand(1e-3, 0.05), .lat_s = 1e-5};
		struct trn_pp_plan p, e, scratch = {.sched = sched};
		struct pp_fit_best b = {DBL_MAX, DBL_MAX, DBL_MAX, 0, 0};
		int ret;

		for (int i = 0; i < S; i++)
			g[i] = frand(0.05, 2);
		devs(d, g, S);
		model_square(L, 8, M * 2, 2);
		for (int l = 0; l < L; l++)
			m.out[l] = l + 1 < L ? (m.in[l + 1] = 8 + rand() % 120) : 8 + rand() % 120;
		/* each device's capacity: a share of what the whole model needs
		 * on it (some hold little, some anything) */
		for (int i = 0; i < S; i++) {
			struct trn_mem mm;

			assert_int_equal(trn_mem_rank(&m, &d[i], S, 0, L, M + 2, m.global_batch,
						      true, true, sched == TRN_PP_ZB, false, &mm),
					 0);
			d[i].mem_gib =
				rand() % 3 == 0
					? 0
					: frand(0.15, 1.1) * trn_mem_need(&d[i], &mm) / (1u << 30);
		}
		pp_fit_brute(d, S, &net, 0, 0, &scratch, &b);
		ret = trn_plan_pp(&m, d, S, &net, sched, &p);
		assert_int_equal(trn_plan_pp_even(&m, d, S, &net, sched, &e), 0);
		if (b.nbound == 0) {
			/* the search finds nothing: the even split if it fits */
			if (e.over < 0) {
				assert_int_equal(ret, 0);
				assert_int_equal(p.over, -1);
				evens++;
			} else {
				assert_int_equal(ret, -ENOMEM);
				none++;
			}
			continue;
		}
		assert_int_equal(ret, 0);
		assert_int_equal(p.over, -1);
		if (p.step_s > b.est_step * (1 + 1e-9))
			fail_msg("iter %d (L %d S %d M %d): planner %.12g, fitting split of least "
				 "est %.12g",
				 iter, L, S, M, p.step_s, b.est_step);
		assert_true(p.step_s >= b.step * (1 - 1e-12));
	}
	print_message("%s: of 400 cases, %d with no split that fits, %d where only the even "
		      "split's own schedule fits\n",
		      trn_pp_sched_name(sched), none, evens);
}

static void test_plan_pp_mem(void **state)
{
	plan_pp_mem_brute(TRN_PP_1F1B);
	plan_pp_mem_brute(TRN_PP_ZB);
}

/* The first stage holds the most in flight: a capacity there moves layers
 * to the next stage; the even split beyond it is reported. */
static void test_plan_pp_mem_hand(void **state)
{
	struct trn_profile d[2];
	struct trn_net net = {.busbw_gbps = 1, .p2p_gbps = 10, .lat_s = 1e-6};
	struct trn_pp_plan p, e, q;

	devs(d, (double[]){3, 1}, 2);
	model_square(8, 64, 32, 4);
	assert_int_equal(trn_plan_pp(&m, d, 2, &net, TRN_PP_ZB, &p), 0);
	assert_int_equal(p.nlayers[0], 6);
	/* room for 4 layers on stage 0 */
	q = p;
	q.nlayers[0] = 4;
	q.first[1] = 4;
	q.nlayers[1] = 4;
	assert_int_equal(trn_predict_pp(&m, d, 2, &net, &q), 0);
	d[0].mem_gib = (q.mem_need[0] + 1) / (1u << 30);
	assert_int_equal(trn_plan_pp(&m, d, 2, &net, TRN_PP_ZB, &p), 0);
	assert_int_equal(p.nlayers[0], 4);
	assert_int_equal(p.over, -1);
	assert_near(p.mem_need[0], q.mem_need[0]);
	d[0].mem_gib = (q.mem_need[0] - 1) / (1u << 30);
	assert_int_equal(trn_plan_pp(&m, d, 2, &net, TRN_PP_ZB, &p), 0);
	assert_true(p.nlayers[0] < 4);
	assert_int_equal(trn_plan_pp_even(&m, d, 2, &net, TRN_PP_ZB, &e), 0);
	assert_int_equal(e.over, 0);
	/* neither holds half the model */
	d[1].mem_gib = d[0].mem_gib = 1e-9;
	assert_int_equal(trn_plan_pp(&m, d, 2, &net, TRN_PP_ZB, &p), -ENOMEM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mem_rank),	 cmocka_unit_test(test_mem_transport),
		cmocka_unit_test(test_mem_master),	 cmocka_unit_test(test_pp_slots_bound),
		cmocka_unit_test(test_plan_dp_mem),	 cmocka_unit_test(test_plan_pp_mem),
		cmocka_unit_test(test_plan_pp_mem_hand),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
