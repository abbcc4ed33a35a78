/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What test_trn_plan.c (DP) and test_trn_plan_pp.c (PP) share: a model of
 * square layers in the file's global m, device profiles of given speeds,
 * a relative comparison, random numbers.
 */
#ifndef TRN_PLAN_TEST_H
#define TRN_PLAN_TEST_H

static struct trn_model m;

static inline void model_square(int layers, int width, int gb, int mb)
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

static inline void devs(struct trn_profile *d, const double *gflops, int n)
{
	memset(d, 0, sizeof(*d) * (size_t)n);
	for (int i = 0; i < n; i++) {
		snprintf(d[i].name, sizeof(d[i].name), "d%d", i);
		snprintf(d[i].kind, sizeof(d[i].kind), "host");
		d[i].gflops = gflops[i];
	}
}

static inline void assert_near(double a, double b)
{
	if (fabs(a - b) > 1e-12 + 1e-9 * fabs(b))
		fail_msg("%.15g != %.15g", a, b);
}

static inline double frand(double lo, double hi)
{
	return lo + (hi - lo) * (double)rand() / RAND_MAX;
}

#endif
