// SPDX-License-Identifier: Apache-2.0
/*
 * trn_plan_pp: the pipeline's predictor and planner (a contiguous layer
 * split, one stage per device; 1F1B or zero-bubble schedule, built and
 * simulated operation by operation). Formulas in README.md.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trn.h"
#include "trn_plan_internal.h"

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

int trn_pp_zb_inflight(int s, int S, int m)
{
	int n = 2 * (S - s) + 2;

	return n < m ? n : m;
}

const char *trn_pp_sched_name(enum trn_pp_sched s)
{
	return s == TRN_PP_1F1B ? "1f1b" : "zb";
}

int trn_pp_sched_parse(const char *name)
{
	if (name != NULL && strcmp(name, "zb") == 0)
		return TRN_PP_ZB;
	if (name != NULL && strcmp(name, "1f1b") == 0)
		return TRN_PP_1F1B;
	return -EINVAL;
}

/* Operation k (0 .. 2M-1) of a 1F1B stage with w warm-up forwards. */
static struct trn_pp_op pp_op_1f1b(int k, int w, int M)
{
	struct trn_pp_op op;
	int j = k - w;

	if (k < w) {
		op.kind = TRN_PP_F;
		op.mb = k;
	} else if (j < 2 * (M - w)) {
		op.kind = j % 2 == 0 ? TRN_PP_F : TRN_PP_B;
		op.mb = op.kind == TRN_PP_F ? w + j / 2 : j / 2;
	} else {
		op.kind = TRN_PP_B;
		op.mb = M - w + (j - 2 * (M - w));
	}
	return op;
}

/* Times of one stage's operations and of the messages it sends. */
struct pp_times {
	int S, M;
	const double *f, *b, *w, *h; /* per stage; b: B, w: W */
	const double *u;	     /* per stage: the optimizer step */
	bool zb;		     /* 1F1B: a B is the whole backward, b + w */
};

static double pp_dur(const struct pp_times *pt, int s, int kind)
{
	if (kind == TRN_PP_F)
		return pt->f[s];
	if (kind == TRN_PP_W)
		return pt->w[s];
	return pt->zb ? pt->b[s] : pt->b[s] + pt->w[s];
}

#define PP_ZB_BUILD_STEPS 2

/*
 * The greedy ZB schedule (trn_pp_order), every stage's operations of one
 * step into ops[s * 3M ...]. Simulated in time order: the stage with the
 * earliest free time decides next; anything another stage has not yet
 * simulated ends after that time, so "not arrived" is exact. A stage whose
 * next input is not yet known and which owes no W waits (blocked) until a
 * neighbour has simulated another operation.
 */
static int pp_zb_build(const struct pp_times *pt, struct trn_pp_op *ops)
{
	int S = pt->S, M = pt->M;
	size_t n = (size_t)S * (size_t)M, stride = 3 * (size_t)M;
	double *fend = malloc(2 * PP_ZB_BUILD_STEPS * n * sizeof(*fend)), *bend;
	double t[TRN_MAX_DEVICES] = {0};
	int nf[TRN_MAX_DEVICES] = {0}, nb[TRN_MAX_DEVICES] = {0}, nw[TRN_MAX_DEVICES] = {0};
	int step[TRN_MAX_DEVICES] = {0}, nops[TRN_MAX_DEVICES] = {0};
	bool blocked[TRN_MAX_DEVICES] = {false};

	if (fend == NULL)
		return -ENOMEM;
	bend = fend + PP_ZB_BUILD_STEPS * n;
	for (size_t x = 0; x < 2 * PP_ZB_BUILD_STEPS * n; x++)
		fend[x] = -1;
	for (;;) {
		double now, fa = DBL_MAX, ba = DBL_MAX, *fe, *be;
		bool can_f, can_b;
		int s = -1, kind = -1, left = 0;

		for (int x = 0; x < S; x++) {
			if (step[x] == PP_ZB_BUILD_STEPS)
				continue;
			left++;
			if (!blocked[x] && (s < 0 || t[x] < t[s]))
				s = x;
		}
		if (left == 0)
			break;
		if (s < 0) {
			free(fend);
			return -EDEADLK;
		}
		now = t[s];
		fe = fend + (size_t)step[s] * n;
		be = bend + (size_t)step[s] * n;
		can_f = nf[s] < M && nf[s] - nw[s] < trn_pp_zb_inflight(s, S, M);
		can_b = nb[s] < nf[s];
		if (can_f && s == 0)
			fa = now;
		else if (can_f && fe[(size_t)(s - 1) * M + nf[s]] >= 0)
			fa = fe[(size_t)(s - 1) * M + nf[s]] + pt->h[s - 1];
		if (can_b && s == S - 1)
			ba = now;
		else if (can_b && be[(size_t)(s + 1) * M + nb[s]] >= 0)
			ba = be[(size_t)(s + 1) * M + nb[s]] + pt->h[s];
		if (ba <= now)
			kind = TRN_PP_B;
		else if (fa <= now)
			kind = TRN_PP_F;
		else if (nw[s] < nb[s])
			kind = TRN_PP_W;
		if (kind < 0) {
			if (nw[s] == M) {
				/* the step is done: the optimizer step, then
				 * the next one */
				t[s] += pt->u[s];
				step[s]++;
				nf[s] = nb[s] = nw[s] = 0;
				if (step[s] < PP_ZB_BUILD_STEPS)
					nops[s] = 0;
			} else if (fmin(fa, ba) < DBL_MAX) {
				t[s] = fmin(fa, ba);
			} else {
				blocked[s] = true;
			}
			continue;
		}
		ops[(size_t)s * stride + nops[s]].kind = kind;
		t[s] = now + pp_dur(pt, s, kind);
		if (kind == TRN_PP_F) {
			ops[(size_t)s * stride + nops[s]].mb = nf[s];
			fe[(size_t)s * M + nf[s]++] = t[s];
		} else if (kind == TRN_PP_B) {
			ops[(size_t)s * stride + nops[s]].mb = nb[s];
			be[(size_t)s * M + nb[s]++] = t[s];
		} else {
			ops[(size_t)s * stride + nops[s]].mb = nw[s]++;
		}
		nops[s]++;
		if (s > 0)
			blocked[s - 1] = false;
		if (s < S - 1)
			blocked[s + 1] = false;
	}
	free(fend);
	return 0;
}

/* Every stage's operations of one step: ops[s * 3M + k], nops[s] each. */
static int pp_orders(const struct pp_times *pt, struct trn_pp_op *ops, int *nops)
{
	size_t stride = 3 * (size_t)pt->M;

	for (int s = 0; s < pt->S; s++)
		nops[s] = pt->zb ? 3 * pt->M : 2 * pt->M;
	if (pt->zb)
		return pp_zb_build(pt, ops);
	for (int s = 0; s < pt->S; s++) {
		int w = trn_pp_warmup(s, pt->S, pt->M);

		for (int k = 0; k < 2 * pt->M; k++)
			ops[(size_t)s * stride + k] = pp_op_1f1b(k, w, pt->M);
	}
	return 0;
}

/*
 * Run the schedule ops (nops[s] operations of stage s, repeated in each of
 * steps steps) with the times of pt: each stage runs its operations in
 * order, each as soon as the stage is free and its input has arrived. A
 * step ends when its last stage is done. Returns the last step's time
 * (from the end of the step before, or from 0), or a negative errno.
 */
static double pp_run(const struct pp_times *pt, const struct trn_pp_op *ops, const int *nops,
		     int steps)
{
	int S = pt->S, M = pt->M;
	size_t n = (size_t)S * (size_t)M, stride = 3 * (size_t)M;
	double *fend = malloc((2 * (size_t)steps * n + (size_t)steps) * sizeof(*fend)), *bend;
	double at[TRN_MAX_DEVICES] = {0}, *stepend, t;
	long pos[TRN_MAX_DEVICES] = {0}, left = 0;

	if (fend == NULL)
		return -ENOMEM;
	bend = fend + (size_t)steps * n;
	stepend = bend + (size_t)steps * n;
	for (size_t x = 0; x < 2 * (size_t)steps * n; x++)
		fend[x] = -1;
	for (int x = 0; x < steps; x++)
		stepend[x] = 0;
	for (int s = 0; s < S; s++)
		left += (long)steps * nops[s];
	while (left > 0) {
		long before = left;

		for (int s = 0; s < S; s++) {
			while (pos[s] < (long)steps * nops[s]) {
				const struct trn_pp_op *op =
					&ops[(size_t)s * stride + pos[s] % nops[s]];
				size_t st = (size_t)(pos[s] / nops[s]) * n;
				double ready = 0;

				if (op->kind == TRN_PP_F && s > 0) {
					if (fend[st + (size_t)(s - 1) * M + op->mb] < 0)
						break;
					ready = fend[st + (size_t)(s - 1) * M + op->mb] +
						pt->h[s - 1];
				} else if (op->kind == TRN_PP_B && s < S - 1) {
					if (bend[st + (size_t)(s + 1) * M + op->mb] < 0)
						break;
					ready = bend[st + (size_t)(s + 1) * M + op->mb] + pt->h[s];
				}
				at[s] = fmax(at[s], ready) + pp_dur(pt, s, op->kind);
				if (op->kind == TRN_PP_F)
					fend[st + (size_t)s * M + op->mb] = at[s];
				else if (op->kind == TRN_PP_B)
					bend[st + (size_t)s * M + op->mb] = at[s];
				pos[s]++;
				left--;
				if (pos[s] % nops[s] != 0)
					continue;
				at[s] += pt->u[s]; /* the optimizer step */
				stepend[pos[s] / nops[s] - 1] =
					fmax(stepend[pos[s] / nops[s] - 1], at[s]);
			}
		}
		if (left == before) {
			free(fend);
			return -EDEADLK;
		}
	}
	t = stepend[steps - 1] - (steps > 1 ? stepend[steps - 2] : 0);
	free(fend);
	return t;
}

static int check_pp(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		    const struct trn_net *net)
{
	int ret = trn_plan_check(m, dev, ndev, net);

	if (ret < 0)
		return ret;
	if (ndev > m->nlayers || (ndev > 1 && !(net->p2p_gbps > 0)))
		return -EINVAL;
	return 0;
}

/* Every stage's F, B and W times and hops of plan p (filled). */
static void pp_times_of(const struct trn_pp_plan *p, struct pp_times *pt)
{
	pt->S = p->nstages;
	pt->M = p->micro_batches;
	pt->f = p->fwd_s;
	pt->b = p->bwd_s;
	pt->w = p->wgt_s;
	pt->h = p->hop_s;
	pt->u = p->upd_s;
	pt->zb = p->sched == TRN_PP_ZB;
}

#define PP_ZB_RUN_STEPS 4

/* Simulate p's schedule: its predicted step (see trn_predict_pp); fills
 * p->slots from the stages' orders. */
static double pp_step_time(struct trn_pp_plan *p)
{
	struct pp_times pt;
	struct trn_pp_op *ops;
	int nops[TRN_MAX_DEVICES];
	double step;
	int ret;

	pp_times_of(p, &pt);
	ops = malloc((size_t)pt.S * 3 * (size_t)pt.M * sizeof(*ops));
	if (ops == NULL)
		return -ENOMEM;
	ret = pp_orders(&pt, ops, nops);
	step = ret < 0 ? ret : pp_run(&pt, ops, nops, pt.zb ? PP_ZB_RUN_STEPS : 1);
	for (int s = 0; ret == 0 && s < pt.S; s++)
		p->slots[s] = trn_pp_slots(ops + (size_t)s * 3 * pt.M, nops[s], p->sched);
	free(ops);
	return step;
}

int trn_pp_order(const struct trn_pp_plan *p, int s, struct trn_pp_op *ops, int max)
{
	struct pp_times pt;
	struct trn_pp_op *all;
	int nops[TRN_MAX_DEVICES], ret;

	if (p == NULL || ops == NULL || p->nstages < 1 || p->nstages > TRN_MAX_DEVICES || s < 0 ||
	    s >= p->nstages || p->micro_batches < 1)
		return -EINVAL;
	pp_times_of(p, &pt);
	all = malloc((size_t)pt.S * 3 * (size_t)pt.M * sizeof(*all));
	if (all == NULL)
		return -ENOMEM;
	ret = pp_orders(&pt, all, nops);
	if (ret == 0 && nops[s] > max)
		ret = -ENOSPC;
	if (ret == 0) {
		memcpy(ops, all + (size_t)s * 3 * pt.M, (size_t)nops[s] * sizeof(*ops));
		ret = nops[s];
	}
	free(all);
	return ret;
}

int trn_predict_pp(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		   const struct trn_net *net, struct trn_pp_plan *p)
{
	double sum = 0, mx = 0, step;
	int ret = check_pp(m, dev, ndev, net);

	if (ret < 0 || p == NULL)
		return -EINVAL;
	if (p->sched != TRN_PP_ZB && p->sched != TRN_PP_1F1B)
		return -EINVAL;
	p->nstages = ndev;
	p->micro_batches = m->global_batch / m->micro_batch;
	if (p->micro_batches < 1)
		return -EINVAL;
	for (int s = 0; s < ndev; s++) {
		int a = p->first[s], e = a + p->nlayers[s];
		double ff = 0, fb = 0, pb = 0, msg, cpu, cc, xf, xb;

		if (p->nlayers[s] < 1 || a != (s == 0 ? 0 : p->first[s - 1] + p->nlayers[s - 1]) ||
		    e > m->nlayers)
			return -EINVAL;
		for (int l = a; l < e; l++) {
			ff += trn_layer_fwd_flops(m, l);
			fb += trn_layer_bwd_flops(m, l);
			pb += trn_layer_param_bytes(m, l);
		}
		/* the backward is two matrix multiplies of the forward's size
		 * per layer: dX = dY W^T (B) and dW = X^T dY (W) */
		p->fwd_s[s] = stage_compute(m, dev, s, ff);
		p->bwd_s[s] = stage_compute(m, dev, s, fb / 2);
		p->wgt_s[s] = stage_compute(m, dev, s, fb / 2);
		p->stage_s[s] = stage_time(m, dev, s, ndev, a, e, ff + fb, net);
		/* an F receives its activation and sends its output, a B the
		 * gradients back; their progress shares the stage's CPU: per
		 * byte, and per message */
		msg = (s > 0 ? 4.0 * m->in[a] * m->micro_batch : 0) +
		      (s < ndev - 1 ? 4.0 * m->out[e - 1] * m->micro_batch : 0);
		cpu = net->cpu_p2p_s[s] * msg + net->cpu_msg_s[s] * ((s > 0) + (s < ndev - 1));
		cc = trn_compute_cores(&dev[s], net->cores[s]);
		xf = trn_cpu_contention_s(net->cores[s], cc, p->fwd_s[s], cpu);
		xb = trn_cpu_contention_s(net->cores[s], cc, p->bwd_s[s], cpu);
		p->fwd_s[s] += xf;
		p->bwd_s[s] += xb;
		p->stage_s[s] += xf + xb;
		p->contention_s[s] = xf + xb;
		p->hop_s[s] = s < ndev - 1 ? p2p_time(m, m->out[e - 1], net) : 0;
		p->upd_s[s] = trn_update_s(&dev[s], pb);
		sum += p->stage_s[s] + p->upd_s[s] / p->micro_batches;
		mx = fmax(mx,
			  p->fwd_s[s] + p->bwd_s[s] + p->wgt_s[s] + p->upd_s[s] / p->micro_batches);
	}
	if (p->first[ndev - 1] + p->nlayers[ndev - 1] != m->nlayers)
		return -EINVAL;
	p->est_s = sum + (p->micro_batches - 1) * mx;
	step = pp_step_time(p);
	if (step < 0)
		return (int)step;
	p->step_s = step;
	p->over = -1;
	for (int s = 0; s < ndev; s++) {
		struct trn_mem mm;

		ret = trn_mem_rank(m, &dev[s], ndev, p->first[s], p->nlayers[s], p->slots[s],
				   m->global_batch, s == 0, s == ndev - 1, p->sched == TRN_PP_ZB,
				   false, &mm);
		if (ret < 0)
			return ret;
		trn_mem_transport(m, dev, ndev, s, &mm);
		p->mem_need[s] = trn_mem_need(&dev[s], &mm);
		if (p->over < 0 && trn_mem_cap(&dev[s]) > 0 &&
		    p->mem_need[s] > trn_mem_cap(&dev[s]))
			p->over = s;
	}
	return 0;
}

int trn_plan_pp_even(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		     const struct trn_net *net, enum trn_pp_sched sched, struct trn_pp_plan *out)
{
	int ret = check_pp(m, dev, ndev, net), first = 0;

	if (ret < 0 || out == NULL)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->sched = sched;
	for (int s = 0; s < ndev; s++) {
		out->first[s] = first;
		out->nlayers[s] = m->nlayers / ndev + (s < m->nlayers % ndev);
		first += out->nlayers[s];
	}
	return trn_predict_pp(m, dev, ndev, net, out);
}

/* The split search: stage s on [a, b) computes C(s, a, b) per micro-batch
 * (its optimizer step spread over the micro-batches) and takes T(s, a, b)
 * with its sends, from prefix sums. */
struct pp_search {
	const struct trn_model *m;
	const struct trn_profile *dev;
	const struct trn_net *net;
	enum trn_pp_sched sched;
	int S, L, M;
	double *pf;	    /* pf[l]: fwd+bwd FLOP of layers [0, l), per sample */
	double *pb;	    /* pb[l]: parameter bytes of layers [0, l) */
	double *pin, *pout; /* inputs, outputs of layers [0, l) (pp_fits) */
	double widest;
	double *dp; /* (S + 1) x (L + 1) */
	int *from;  /* (S + 1) x (L + 1): start of the last stage */
};

static double pp_T(const struct pp_search *ps, int s, int a, int b)
{
	return stage_time(ps->m, ps->dev, s, ps->S, a, b, ps->pf[b] - ps->pf[a], ps->net) +
	       trn_update_s(&ps->dev[s], ps->pb[b] - ps->pb[a]) / ps->M;
}

static double pp_C(const struct pp_search *ps, int s, int a, int b)
{
	return stage_compute(ps->m, ps->dev, s, ps->pf[b] - ps->pf[a]) +
	       trn_update_s(&ps->dev[s], ps->pb[b] - ps->pb[a]) / ps->M;
}

/* Stage s on [a, b) fits its device with the most slots any schedule
 * gives it (trn_pp_slots_bound). */
static bool pp_fits(const struct pp_search *ps, int s, int a, int b)
{
	double cap = trn_mem_cap(&ps->dev[s]);
	struct trn_mem_sums x = {.params = (ps->pb[b] - ps->pb[a]) / 4,
				 .inputs = ps->pin[b] - ps->pin[a],
				 .in_first = ps->m->in[a],
				 .out_last = ps->m->out[b - 1],
				 .inner_outs = ps->pout[b - 1] - ps->pout[a]};
	struct trn_mem mm;

	if (!(cap > 0))
		return true;
	trn_mem_from(ps->m, &ps->dev[s], ps->S, &x, ps->widest,
		     trn_pp_slots_bound(s, ps->S, ps->M, ps->sched), ps->m->global_batch, s == 0,
		     s == ps->S - 1, ps->sched == TRN_PP_ZB, false, &mm);
	trn_mem_transport(ps->m, ps->dev, ps->S, s, &mm);
	return trn_mem_need(&ps->dev[s], &mm) <= cap;
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

				if (prev == DBL_MAX || !pp_fits(ps, s, a, b))
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
	p.sched = ps->sched;
	ret = trn_predict_pp(ps->m, ps->dev, ps->S, ps->net, &p);
	if (ret == 0 && p.over < 0 && (best->nstages == 0 || p.step_s < best->step_s))
		*best = p;
	return ret;
}

/* Neighbour 2 * s + (d > 0): the boundary between stages s and s + 1 moves
 * by d = -1 or +1 layer. */
static int pp_move(const struct trn_plan_climb *c, void *qv, int i, double *step)
{
	struct trn_pp_plan *q = qv;
	int s = i / 2, d = i % 2 != 0 ? 1 : -1;
	int ret;

	q->nlayers[s] += d;
	q->nlayers[s + 1] -= d;
	q->first[s + 1] += d;
	if (q->nlayers[s] < 1 || q->nlayers[s + 1] < 1)
		return 0;
	ret = trn_predict_pp(c->m, c->dev, c->ndev, c->net, q);
	*step = q->step_s;
	return ret < 0 ? ret : q->over < 0;
}

/*
 * est is exact for compute and messages but only an estimate of where the
 * optimizer steps end up (a late stage's can hide behind the drain of the
 * earlier ones): from the best split, move one stage boundary by one layer
 * at a time while that shortens the simulated step.
 */
static int pp_improve(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		      const struct trn_net *net, struct trn_pp_plan *p)
{
	const struct trn_plan_climb c = {
		.m = m, .dev = dev, .ndev = ndev, .net = net, .move = pp_move};
	struct trn_pp_plan scratch[2];

	return trn_plan_climb(&c, p, sizeof(*p), scratch, p->step_s, 2 * m->nlayers,
			      2 * (ndev - 1));
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
		const struct trn_net *net, enum trn_pp_sched sched, struct trn_pp_plan *out)
{
	struct pp_search ps = {.m = m, .dev = dev, .net = net, .sched = sched, .S = ndev};
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
	ps.M = M;
	ps.pf = calloc((size_t)ps.L + 1, sizeof(*ps.pf));
	ps.pb = calloc((size_t)ps.L + 1, sizeof(*ps.pb));
	ps.pin = calloc((size_t)ps.L + 1, sizeof(*ps.pin));
	ps.pout = calloc((size_t)ps.L + 1, sizeof(*ps.pout));
	ps.dp = calloc((size_t)(ps.S + 1) * (ps.L + 1), sizeof(*ps.dp));
	ps.from = calloc((size_t)(ps.S + 1) * (ps.L + 1), sizeof(*ps.from));
	if (ps.pf == NULL || ps.pb == NULL || ps.pin == NULL || ps.pout == NULL || ps.dp == NULL ||
	    ps.from == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	for (int l = 0; l < ps.L; l++) {
		ps.pf[l + 1] = ps.pf[l] + trn_layer_fwd_flops(m, l) + trn_layer_bwd_flops(m, l);
		ps.pb[l + 1] = ps.pb[l] + trn_layer_param_bytes(m, l);
		ps.pin[l + 1] = ps.pin[l] + m->in[l];
		ps.pout[l + 1] = ps.pout[l] + m->out[l];
	}
	ps.widest = trn_model_widest(m);

	smin = pp_dp(&ps, false, DBL_MAX);
	/* none fits with the most slots any timing gives: the even split
	 * may, with its own schedule's (else -ENOMEM below) */
	if (smin == DBL_MAX)
		goto even;
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
	if (ret == 0 && out->nstages > 0)
		ret = pp_improve(m, dev, ndev, net, out);
	if (ret < 0)
		goto out;
	ret = trn_plan_pp_even(m, dev, ndev, net, sched, &even);
	if (ret == 0 && even.over < 0 && (out->nstages == 0 || even.step_s < out->step_s))
		*out = even;
	if (ret == 0 && out->nstages == 0)
		ret = -ENOMEM;
out:
	free(cands);
	free(ps.from);
	free(ps.dp);
	free(ps.pf);
	free(ps.pb);
	free(ps.pin);
	free(ps.pout);
	return ret;
}

int trn_pp_mb_parse(const char *text)
{
	char *end;
	long v;

	if (strcmp(text, "auto") == 0)
		return TRN_PP_MB_AUTO;
	v = strtol(text, &end, 10);
	return end == text || *end != '\0' || v < 1 || v > 1 << 20 ? -EINVAL : (int)v;
}

int trn_pp_mb_sizes(const struct trn_model *m, const struct trn_profile *dev, int ndev, int *out)
{
	int n = 0;

	for (int i = 0; ndev > 0 && i < dev[0].npp_at && n < TRN_PP_AT_MAX; i++) {
		int mb = dev[0].pp_at_mb[i];
		bool all = m->global_batch % mb == 0;

		for (int d = 1; d < ndev && all; d++)
			all = trn_profile_pp_at(&dev[d], mb) > 0;
		if (all)
			out[n++] = mb;
	}
	return n;
}

int trn_plan_pp_mb(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		   const struct trn_net *net, enum trn_pp_sched sched, bool even,
		   struct trn_pp_plan *out, struct trn_pp_mb_try *tries, int *ntries)
{
	struct trn_profile *at;
	struct trn_model *mm;
	struct trn_pp_plan *p;
	int best = -ENOENT, sizes[TRN_PP_AT_MAX], n;

	*ntries = 0;
	if (ndev < 1 || ndev > TRN_MAX_DEVICES || m->global_batch < 1)
		return -EINVAL;
	at = malloc((size_t)ndev * sizeof(*at));
	mm = malloc(sizeof(*mm));
	p = malloc(sizeof(*p));
	if (at == NULL || mm == NULL || p == NULL) {
		best = -ENOMEM;
		goto out;
	}
	n = trn_pp_mb_sizes(m, dev, ndev, sizes);
	for (int i = 0; i < n; i++) {
		int mb = sizes[i], ret;
		struct trn_pp_mb_try *t = &tries[*ntries];

		*mm = *m;
		mm->micro_batch = mb;
		memcpy(at, dev, (size_t)ndev * sizeof(*at));
		trn_profiles_pp_at(at, ndev, mb);
		ret = even ? trn_plan_pp_even(mm, at, ndev, net, sched, p)
			   : trn_plan_pp(mm, at, ndev, net, sched, p);
		if (ret == 0 && p->over >= 0)
			ret = -ENOMEM; /* the even split only reports it */
		if (ret < 0 && ret != -ENOMEM) {
			best = ret;
			goto out;
		}
		t->mb = mb;
		t->ret = ret;
		t->step_s = ret == 0 ? p->step_s : 0;
		(*ntries)++;
		/* shorter beyond rounding: a tie keeps the smaller size */
		if (ret == 0 && (best < 0 || p->step_s < out->step_s * (1 - 1e-9))) {
			best = mb;
			*out = *p;
		}
		if (ret == -ENOMEM && best == -ENOENT)
			best = -ENOMEM;
	}
out:
	free(p);
	free(mm);
	free(at);
	return best;
}
