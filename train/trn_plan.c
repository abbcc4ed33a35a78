// SPDX-License-Identifier: Apache-2.0
/*
 * trn_plan: the step-time predictor and the heterogeneity-aware planner for
 * data parallelism (micro-batches per device) and 1F1B pipelines (a
 * contiguous layer split, one stage per device). Formulas in README.md.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trn.h"

static int check_common(const struct trn_model *m, const struct trn_profile *dev, int ndev,
			const struct trn_net *net)
{
	if (m == NULL || dev == NULL || net == NULL || ndev < 1 || ndev > TRN_MAX_DEVICES)
		return -EINVAL;
	if (m->nlayers < 1 || m->nlayers > TRN_MAX_LAYERS || m->micro_batch < 1 ||
	    m->global_batch < 1)
		return -EINVAL;
	for (int i = 0; i < ndev; i++)
		if (!(dev[i].gflops > 0))
			return -EINVAL;
	if (net->lat_s < 0 || net->overlap < 0 || net->overlap > 1)
		return -EINVAL;
	return 0;
}

/* FLOP of one sample's forward + backward over the whole model. */
static double model_fb_flops(const struct trn_model *m)
{
	double f = 0;

	for (int l = 0; l < m->nlayers; l++)
		f += trn_layer_fwd_flops(m, l) + trn_layer_bwd_flops(m, l);
	return f;
}

static double model_bwd_flops(const struct trn_model *m)
{
	double f = 0;

	for (int l = 0; l < m->nlayers; l++)
		f += trn_layer_bwd_flops(m, l);
	return f;
}

/* ---- data parallel ---------------------------------------------------------- */

/* Ring all-reduce of one bucket: 2(n-1)/n * bytes / busbw + alpha. */
static double bucket_time(double bytes, int n, const struct trn_net *net)
{
	return 2.0 * (n - 1) / n * bytes / (net->busbw_gbps * 1e9) + net->lat_s;
}

int trn_predict_dp(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		   const struct trn_net *net, struct trn_dp_plan *p)
{
	double fb, bwd, maxc = 0, bwd_slow = 0, comm = 0, last = 0;
	long sum = 0;
	int ret = check_common(m, dev, ndev, net);

	if (ret < 0 || p == NULL)
		return -EINVAL;
	if (ndev > 1 && !(net->busbw_gbps > 0))
		return -EINVAL;
	fb = model_fb_flops(m);
	bwd = model_bwd_flops(m);
	p->ndev = ndev;
	for (int i = 0; i < ndev; i++) {
		if (p->samples[i] < 0)
			return -EINVAL;
		sum += p->samples[i];
		p->compute_s[i] = p->samples[i] * fb / (dev[i].gflops * 1e9);
		if (p->compute_s[i] > maxc) {
			maxc = p->compute_s[i];
			bwd_slow = p->samples[i] * bwd / (dev[i].gflops * 1e9);
		}
	}
	if (sum != m->global_batch)
		return -EINVAL;
	if (ndev > 1) {
		/* buckets filled from the last layer's gradient backwards; the
		 * remainder (the first layers) is ready last */
		double total = trn_model_param_bytes(m);
		double bsz = m->bucket_kb > 0 ? m->bucket_kb * 1024.0 : 4096.0 * 1024.0;
		double nb = ceil(total / bsz);
		double rem = total - (nb - 1) * bsz;

		last = bucket_time(rem, ndev, net);
		comm = (nb - 1) * bucket_time(bsz, ndev, net) + last;
		comm = fmax(last, comm - net->overlap * bwd_slow);
	}
	p->comm_s = comm;
	p->step_s = maxc + comm;
	return 0;
}

int trn_plan_dp_even(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		     const struct trn_net *net, struct trn_dp_plan *out)
{
	int ret = check_common(m, dev, ndev, net);

	if (ret < 0 || out == NULL)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < ndev; i++)
		out->samples[i] = m->global_batch / ndev;
	out->samples[0] += m->global_batch % ndev;
	return trn_predict_dp(m, dev, ndev, net, out);
}

/*
 * Micro-batches are equal jobs and the devices are related machines (speed
 * only): giving each next unit to the device that would finish it first
 * minimises the largest compute time. The step time grows with that
 * largest compute time (the exposed all-reduce shrinks by at most
 * overlap * 4/6 of it), so this also minimises the step among splits in
 * whole micro-batches; the even split (which may cut micro-batches) is the
 * fallback when it predicts better.
 */
int trn_plan_dp(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		const struct trn_net *net, struct trn_dp_plan *out)
{
	struct trn_dp_plan even;
	int units, k[TRN_MAX_DEVICES] = {0};
	int ret = check_common(m, dev, ndev, net);

	if (ret < 0 || out == NULL)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	units = m->global_batch / m->micro_batch;
	for (int u = 0; u < units; u++) {
		int best = 0;

		for (int i = 1; i < ndev; i++)
			if ((k[i] + 1) / dev[i].gflops < (k[best] + 1) / dev[best].gflops)
				best = i;
		k[best]++;
	}
	for (int i = 0; i < ndev; i++)
		out->samples[i] = k[i] * m->micro_batch;
	/* a model whose global batch is not whole micro-batches: the rest to
	 * the device that finishes it first */
	if (units * m->micro_batch != m->global_batch) {
		int rest = m->global_batch - units * m->micro_batch, best = 0;

		for (int i = 1; i < ndev; i++)
			if ((out->samples[i] + rest) / dev[i].gflops <
			    (out->samples[best] + rest) / dev[best].gflops)
				best = i;
		out->samples[best] += rest;
	}
	ret = trn_predict_dp(m, dev, ndev, net, out);
	if (ret < 0)
		return ret;
	ret = trn_plan_dp_even(m, dev, ndev, net, &even);
	if (ret < 0)
		return ret;
	if (even.step_s < out->step_s)
		*out = even;
	return 0;
}

/* ---- pipeline parallel -------------------------------------------------------- */

/* Sending one micro-batch's activations (or their gradients) of width w. */
static double p2p_time(const struct trn_model *m, int width, const struct trn_net *net)
{
	return 4.0 * width * m->micro_batch / (net->p2p_gbps * 1e9) + net->lat_s;
}

/* Compute of one micro-batch on stage s, flops = fwd+bwd FLOP per sample. */
static double stage_compute(const struct trn_model *m, const struct trn_profile *dev, int s,
			    double flops)
{
	return flops * m->micro_batch / (dev[s].gflops * 1e9);
}

/* Stage s of S on layers [a, b): its compute and its sends. */
static double stage_time(const struct trn_model *m, const struct trn_profile *dev, int s, int S,
			 int a, int b, double flops, const struct trn_net *net)
{
	double t = stage_compute(m, dev, s, flops);

	if (s < S - 1)
		t += p2p_time(m, m->out[b - 1], net); /* activations forward */
	if (s > 0)
		t += p2p_time(m, m->in[a], net); /* their gradient backward */
	return t;
}

int trn_pp_warmup(int s, int S, int m)
{
	int w = s < S - 1 ? S - s : 0;

	return w < m ? w : m;
}

/* Operation k (0 .. 2M-1) of a stage with w warm-up forwards: a forward
 * (*fwd) or a backward of micro-batch *i. */
static void pp_op(int k, int w, int M, bool *fwd, int *i)
{
	int j = k - w;

	if (k < w) {
		*fwd = true;
		*i = k;
	} else if (j < 2 * (M - w)) {
		*fwd = j % 2 == 0;
		*i = *fwd ? w + j / 2 : j / 2;
	} else {
		*fwd = false;
		*i = M - w + (j - 2 * (M - w));
	}
}

/*
 * The schedule of trn_pp_warmup(), operation by operation: each stage runs
 * its operations in order, each as soon as the stage is free and its input
 * has arrived. f, b: forward and backward time of one micro-batch on each
 * stage; h[s]: a message from stage s to s + 1 (or back). Returns when the
 * last stage is done (the first stage's last backward), or a negative
 * errno. Every stage's backward i follows its own forward i in its order,
 * and 1F1B never deadlocks; the check is for safety.
 */
static double pp_simulate(const double *f, const double *b, const double *h, int S, int M)
{
	size_t n = (size_t)S * (size_t)M;
	double *fend = malloc(2 * n * sizeof(*fend)), *bend, at[TRN_MAX_DEVICES] = {0}, step = 0;
	int pos[TRN_MAX_DEVICES] = {0};
	long left = 2L * S * M;

	if (fend == NULL)
		return -ENOMEM;
	bend = fend + n;
	for (size_t x = 0; x < 2 * n; x++)
		fend[x] = -1;
	while (left > 0) {
		long before = left;

		for (int s = 0; s < S; s++) {
			int w = trn_pp_warmup(s, S, M);

			while (pos[s] < 2 * M) {
				double ready = 0;
				bool fwd;
				int i;

				pp_op(pos[s], w, M, &fwd, &i);
				if (fwd && s > 0) {
					if (fend[(size_t)(s - 1) * M + i] < 0)
						break;
					ready = fend[(size_t)(s - 1) * M + i] + h[s - 1];
				} else if (!fwd && s < S - 1) {
					if (bend[(size_t)(s + 1) * M + i] < 0)
						break;
					ready = bend[(size_t)(s + 1) * M + i] + h[s];
				}
				at[s] = fmax(at[s], ready) + (fwd ? f[s] : b[s]);
				(fwd ? fend : bend)[(size_t)s * M + i] = at[s];
				pos[s]++;
				left--;
			}
		}
		if (left == before) {
			free(fend);
			return -EDEADLK;
		}
	}
	for (int s = 0; s < S; s++)
		step = fmax(step, at[s]);
	free(fend);
	return step;
}

static int check_pp(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		    const struct trn_net *net)
{
	int ret = check_common(m, dev, ndev, net);

	if (ret < 0)
		return ret;
	if (ndev > m->nlayers || (ndev > 1 && !(net->p2p_gbps > 0)))
		return -EINVAL;
	return 0;
}

int trn_predict_pp(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		   const struct trn_net *net, struct trn_pp_plan *p)
{
	double sum = 0, mx = 0, f[TRN_MAX_DEVICES], b[TRN_MAX_DEVICES], step;
	int ret = check_pp(m, dev, ndev, net);

	if (ret < 0 || p == NULL)
		return -EINVAL;
	p->nstages = ndev;
	p->micro_batches = m->global_batch / m->micro_batch;
	if (p->micro_batches < 1)
		return -EINVAL;
	for (int s = 0; s < ndev; s++) {
		int a = p->first[s], e = a + p->nlayers[s];
		double ff = 0, fb = 0;

		if (p->nlayers[s] < 1 || a != (s == 0 ? 0 : p->first[s - 1] + p->nlayers[s - 1]) ||
		    e > m->nlayers)
			return -EINVAL;
		for (int l = a; l < e; l++) {
			ff += trn_layer_fwd_flops(m, l);
			fb += trn_layer_bwd_flops(m, l);
		}
		f[s] = stage_compute(m, dev, s, ff);
		b[s] = stage_compute(m, dev, s, fb);
		p->stage_s[s] = stage_time(m, dev, s, ndev, a, e, ff + fb, net);
		p->hop_s[s] = s < ndev - 1 ? p2p_time(m, m->out[e - 1], net) : 0;
		sum += p->stage_s[s];
		mx = fmax(mx, f[s] + b[s]);
	}
	if (p->first[ndev - 1] + p->nlayers[ndev - 1] != m->nlayers)
		return -EINVAL;
	p->est_s = sum + (p->micro_batches - 1) * mx;
	step = pp_simulate(f, b, p->hop_s, ndev, p->micro_batches);
	if (step < 0)
		return (int)step;
	p->step_s = step;
	return 0;
}

int trn_plan_pp_even(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		     const struct trn_net *net, struct trn_pp_plan *out)
{
	int ret = check_pp(m, dev, ndev, net), first = 0;

	if (ret < 0 || out == NULL)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	for (int s = 0; s < ndev; s++) {
		out->first[s] = first;
		out->nlayers[s] = m->nlayers / ndev + (s < m->nlayers % ndev);
		first += out->nlayers[s];
	}
	return trn_predict_pp(m, dev, ndev, net, out);
}

/* The split search: stage s on [a, b) computes C(s, a, b) per micro-batch
 * and takes T(s, a, b) with its sends, from prefix sums. */
struct pp_search {
	const struct trn_model *m;
	const struct trn_profile *dev;
	const struct trn_net *net;
	int S, L;
	double *pf; /* pf[l]: fwd+bwd FLOP of layers [0, l), per sample */
	double *dp; /* (S + 1) x (L + 1) */
	int *from;  /* (S + 1) x (L + 1): start of the last stage */
};

static double pp_T(const struct pp_search *ps, int s, int a, int b)
{
	return stage_time(ps->m, ps->dev, s, ps->S, a, b, ps->pf[b] - ps->pf[a], ps->net);
}

static double pp_C(const struct pp_search *ps, int s, int a, int b)
{
	return stage_compute(ps->m, ps->dev, s, ps->pf[b] - ps->pf[a]);
}

#define DP(ps, s, b)   ((ps)->dp[(size_t)(s) * ((ps)->L + 1) + (b)])
#define FROM(ps, s, b) ((ps)->from[(size_t)(s) * ((ps)->L + 1) + (b)])

/* minmax: smallest bottleneck (largest compute C); else the smallest sum of
 * stage times T with every stage's C at most bound. Returns the optimum
 * (DBL_MAX: none). */
static double pp_dp(struct pp_search *ps, bool minmax, double bound)
{
	int S = ps->S, L = ps->L;

	for (int s = 0; s <= S; s++)
		for (int b = 0; b <= L; b++)
			DP(ps, s, b) = DBL_MAX;
	DP(ps, 0, 0) = 0;
	for (int s = 0; s < S; s++) {
		/* stage s ends at b: s + 1 <= b <= L - (S - 1 - s) */
		for (int b = s + 1; b <= L - (S - 1 - s); b++) {
			double best = DBL_MAX;
			int arg = -1;

			for (int a = s; a < b; a++) {
				double prev = DP(ps, s, a), t, v;

				if (prev == DBL_MAX)
					continue;
				if (minmax) {
					v = fmax(prev, pp_C(ps, s, a, b));
				} else {
					if (pp_C(ps, s, a, b) > bound)
						continue;
					t = pp_T(ps, s, a, b);
					v = prev + t;
				}
				if (v < best) {
					best = v;
					arg = a;
				}
			}
			DP(ps, s + 1, b) = best;
			FROM(ps, s + 1, b) = arg;
		}
	}
	return DP(ps, S, L);
}

static void pp_take(const struct pp_search *ps, struct trn_pp_plan *p)
{
	int b = ps->L;

	memset(p, 0, sizeof(*p));
	for (int s = ps->S; s > 0; s--) {
		int a = FROM(ps, s, b);

		p->first[s - 1] = a;
		p->nlayers[s - 1] = b - a;
		b = a;
	}
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

/* Predict the split the search holds and keep it in *best when it predicts
 * a shorter step. */
static int pp_consider(const struct pp_search *ps, struct trn_pp_plan *best)
{
	struct trn_pp_plan p;
	int ret;

	pp_take(ps, &p);
	ret = trn_predict_pp(ps->m, ps->dev, ps->S, ps->net, &p);
	if (ret == 0 && (best->nstages == 0 || p.step_s < best->step_s))
		*best = p;
	return ret;
}

/*
 * Exact for est = sum_s T_s + (M - 1) * max_s C_s. For a bound B, the least
 * sum with all C_s <= B is a DP; the optimum's bottleneck is one of the
 * stage computes C(s, a, b), so trying each candidate B (ascending, from
 * the smallest feasible bottleneck) finds it. A candidate B cannot beat the
 * best found once minsum(no bound) + (M - 1) * B >= best, which ends the
 * search. Every split tried is also predicted (the schedule simulation);
 * the one predicting the shortest step wins, the est optimum among them.
 */
int trn_plan_pp(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		const struct trn_net *net, struct trn_pp_plan *out)
{
	struct pp_search ps = {.m = m, .dev = dev, .net = net, .S = ndev};
	struct trn_pp_plan even;
	double *cands = NULL, bmin, smin, best = DBL_MAX, hi;
	size_t ncand = 0, cap = 0;
	int M, ret = check_pp(m, dev, ndev, net);

	if (ret < 0 || out == NULL)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	ps.L = m->nlayers;
	M = m->global_batch / m->micro_batch;
	if (M < 1)
		return -EINVAL;
	ps.pf = calloc((size_t)ps.L + 1, sizeof(*ps.pf));
	ps.dp = calloc((size_t)(ps.S + 1) * (ps.L + 1), sizeof(*ps.dp));
	ps.from = calloc((size_t)(ps.S + 1) * (ps.L + 1), sizeof(*ps.from));
	if (ps.pf == NULL || ps.dp == NULL || ps.from == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	for (int l = 0; l < ps.L; l++)
		ps.pf[l + 1] = ps.pf[l] + trn_layer_fwd_flops(m, l) + trn_layer_bwd_flops(m, l);

	smin = pp_dp(&ps, false, DBL_MAX);
	ret = pp_consider(&ps, out);
	if (ret < 0 || M == 1)
		goto even;
	bmin = pp_dp(&ps, true, 0);
	/* candidates in [bmin, hi]; hi shrinks as better splits are found */
	best = pp_dp(&ps, false, bmin) + (M - 1) * bmin;
	ret = pp_consider(&ps, out);
	if (ret < 0)
		goto out;
	hi = bmin + (best - smin) / (M - 1);
	for (int s = 0; s < ps.S; s++) {
		for (int a = s; a < ps.L - (ps.S - 1 - s); a++) {
			for (int b = a + 1; b <= ps.L - (ps.S - 1 - s); b++) {
				double t = pp_C(&ps, s, a, b);

				if (t <= bmin || t > hi)
					continue;
				if (ncand == cap) {
					size_t ncap = cap != 0 ? 2 * cap : 1024;
					double *nc = realloc(cands, ncap * sizeof(*cands));

					if (nc == NULL) {
						ret = -ENOMEM;
						goto out;
					}
					cands = nc;
					cap = ncap;
				}
				cands[ncand++] = t;
			}
		}
	}
	if (ncand > 0)
		qsort(cands, ncand, sizeof(*cands), cmp_double);
	for (size_t i = 0; i < ncand; i++) {
		double sum, f;

		if (i > 0 && cands[i] == cands[i - 1])
			continue;
		if (smin + (M - 1) * cands[i] >= best)
			break;
		sum = pp_dp(&ps, false, cands[i]);
		if (sum == DBL_MAX)
			continue;
		f = sum + (M - 1) * cands[i];
		if (f < best)
			best = f;
		ret = pp_consider(&ps, out);
		if (ret < 0)
			goto out;
	}
even:
	if (ret < 0)
		goto out;
	ret = trn_plan_pp_even(m, dev, ndev, net, &even);
	if (ret == 0 && even.step_s < out->step_s)
		*out = even;
out:
	free(cands);
	free(ps.from);
	free(ps.dp);
	free(ps.pf);
	return ret;
}
