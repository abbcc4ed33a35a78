// SPDX-License-Identifier: Apache-2.0
/*
 * trn_plan: the step-time predictor and the heterogeneity-aware planner for
 * data parallelism (micro-batches per device, the tails a step's last chunk
 * runs), CPU contention and profiles refined from the steps; pipelines are
 * in trn_plan_pp.c. Formulas in README.md.
 */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "trn.h"
#include "trn_plan_internal.h"

int trn_plan_check(const struct trn_model *m, const struct trn_profile *dev, int ndev,
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

/* What DP device i needs with rows samples and slots activation slots
 * (trn_mem_need), bytes; < 0 on a bad argument. */
static double dp_mem(const struct trn_model *m, const struct trn_profile *dev, int ndev, int i,
		     int rows, int slots)
{
	struct trn_mem mm;
	int ret = trn_mem_rank(m, &dev[i], ndev, 0, m->nlayers, slots > 1 ? slots : 1, rows, true,
			       true, false, true, &mm);

	if (ret < 0)
		return ret;
	trn_mem_transport(m, dev, ndev, i, &mm);
	trn_mem_master(m, dev, ndev, i, &mm);
	return trn_mem_need(&dev[i], &mm);
}

/* The most samples device i holds with one activation slot in its
 * capacity (INT_MAX when not bounded, -1 when not even its weights fit). */
static int dp_max_rows(const struct trn_model *m, const struct trn_profile *dev, int ndev, int i)
{
	double cap = trn_mem_cap(&dev[i]), base, per;

	if (!(cap > 0))
		return INT_MAX;
	/* rows 0 is held as one row */
	base = dp_mem(m, dev, ndev, i, 1, 1);
	per = dp_mem(m, dev, ndev, i, 2, 1) - base;
	if (base > cap)
		return -1;
	return per > 0 && (cap - base) / per + 1 < INT_MAX ? (int)((cap - base) / per) + 1
							   : INT_MAX;
}

/* ---- CPU contention -------------------------------------------------------- */

double trn_cpu_contention_s(double cores, double compute_cores, double window_s, double comm_cpu_s)
{
	double spare;

	if (!(cores > 0) || !(comm_cpu_s > 0))
		return 0;
	spare = fmax(0, cores - fmax(0, compute_cores)) * fmax(0, window_s);
	return fmax(0, comm_cpu_s - spare) / cores;
}

double trn_compute_cores(const struct trn_profile *d, double cores)
{
	if (d == NULL || d->emulated || strcmp(d->kind, "host") != 0)
		return 0;
	return fmin(1, fmax(0, cores));
}

/* ---- profiles refined from the steps ---------------------------------------- */

double trn_speed_from_steps(double flops, double thread_cpu_s, double thread_wait_s,
			    double proc_cpu_s, double cores, double other_s)
{
	double busy = thread_cpu_s + (thread_wait_s > 0 ? thread_wait_s : 0);

	if (cores > 0 && proc_cpu_s / cores > busy)
		busy = proc_cpu_s / cores;
	if (other_s > 0 && busy - other_s >= 0.5 * busy)
		busy -= other_s;
	if (!(flops > 0) || !(busy > 0))
		return 0;
	return flops / busy / 1e9;
}

int trn_profiles_refine(const struct trn_profile *dev, int ndev, const double *measured,
			struct trn_profile *out)
{
	int n = 0;

	for (int i = 0; i < ndev; i++) {
		if (out != dev)
			out[i] = dev[i];
		if (!dev[i].emulated && measured[i] > 0 && isfinite(measured[i])) {
			out[i].gflops = measured[i];
			n++;
		}
	}
	return n;
}

double trn_replan_gain(double replan)
{
	return fmin(replan / 2, 0.25);
}

double trn_replan_x(double replan, bool first)
{
	return first ? fmin(replan, TRN_REPLAN_FIRST) : replan;
}

bool trn_replan_pays(double running_s, double new_s, double replan)
{
	return !(running_s > 0) || new_s < running_s * (1 - trn_replan_gain(replan));
}

void trn_seen_note(struct trn_seen *t, const char *key, double step_s, int step)
{
	int i, old = 0;

	if (!(step_s > 0))
		return;
	for (i = 0; i < t->n && strncmp(t->s[i].key, key, TRN_SEEN_KEY - 1) != 0; i++)
		if (t->s[i].step < t->s[old].step)
			old = i;
	if (i == t->n) { /* not yet seen: a free entry, or the oldest */
		if (t->n < TRN_SEEN_MAX)
			t->n++;
		else
			i = old;
		snprintf(t->s[i].key, sizeof(t->s[i].key), "%s", key);
	}
	t->s[i].step_s = step_s;
	t->s[i].step = step;
}

double trn_seen_step(const struct trn_seen *t, const char *key, int step, int memory)
{
	for (int i = 0; i < t->n; i++)
		if (strncmp(t->s[i].key, key, TRN_SEEN_KEY - 1) == 0)
			return step - t->s[i].step <= memory ? t->s[i].step_s : 0;
	return 0;
}

/* ---- data parallel ---------------------------------------------------------- */

/* The bus seconds per byte of a sharded accelerator rank's part beside
 * its update on the device, where its fp32 master lives (ice-train's
 * itr_dev_update): its reduced gradient up (fp32; a bf16 one is widened
 * on the device, on the collective's path) and its updated weights down
 * for the all-gather (fp32, or rounded to bf16 on the device: half the
 * bytes); 0 on the host. */
static double dp_bus_s(const struct trn_model *m, const struct trn_profile *d)
{
	double s = 0;

	if (m->optim != TRN_OPTIM_SHARDED || trn_dev_on_host(d))
		return 0;
	if (m->grad != TRN_GRAD_BF16 && d->h2d_gbps > 0)
		s += 1 / (d->h2d_gbps * 1e9);
	if (d->d2h_gbps > 0)
		s += (m->param == TRN_GRAD_BF16 ? 0.5 : 1) / (d->d2h_gbps * 1e9);
	return s;
}

/* How much of every bucket device i updates, relative to the others: its
 * update's bytes per second (mem_gbps / TRN_SGD_TRAFFIC, less its bus
 * copies'), scaled to mem_gbps itself where there are none; 0 when some
 * device states no mem_gbps (then the parts are even). */
static double dp_weight(const struct trn_model *m, const struct trn_profile *dev, int ndev, int i)
{
	for (int j = 0; j < ndev; j++)
		if (!(dev[j].mem_gbps > 0))
			return 0;
	return dev[i].mem_gbps /
	       (1 + dev[i].mem_gbps * 1e9 * dp_bus_s(m, &dev[i]) / TRN_SGD_TRAFFIC);
}

void trn_dp_shards(const struct trn_model *m, const struct trn_profile *dev, int ndev, size_t count,
		   size_t *out)
{
	double sum = 0, frac[TRN_MAX_DEVICES], wt[TRN_MAX_DEVICES];
	size_t given = 0;
	bool even = false;

	for (int i = 0; i < ndev; i++) {
		wt[i] = dp_weight(m, dev, ndev, i);
		even = even || !(wt[i] > 0);
		sum += wt[i];
	}
	for (int i = 0; i < ndev; i++) {
		double want = (double)count * (even ? 1.0 / ndev : wt[i] / sum);

		out[i] = (size_t)want;
		if (out[i] > count - given)
			out[i] = count - given;
		frac[i] = want - (double)out[i];
		given += out[i];
	}
	/* the rest, one each, to the largest remainders (lowest index first) */
	while (given < count) {
		int best = 0;

		for (int i = 1; i < ndev; i++)
			if (frac[i] > frac[best])
				best = i;
		out[best]++;
		frac[best] = -1;
		given++;
	}
}

/* The share of the parameters device i updates in a DP job of ndev
 * devices: its shard (trn_dp_shards' proportions) or, replicated, all. */
static double dp_share(const struct trn_model *m, const struct trn_profile *dev, int ndev, int i)
{
	double sum = 0;

	if (ndev == 1 || m->optim == TRN_OPTIM_REPLICATED)
		return 1;
	for (int j = 0; j < ndev; j++) {
		double w = dp_weight(m, dev, ndev, j);

		if (!(w > 0))
			return 1.0 / ndev;
		sum += w;
	}
	return dp_weight(m, dev, ndev, i) / sum;
}

/* Device i's optimizer step: in proportion to its update's speed, every
 * device's shard takes the same time (a sharded accelerator rank's bus
 * copies included, dp_bus_s). */
static double dp_update_s(const struct trn_model *m, const struct trn_profile *dev, int ndev, int i)
{
	double b = trn_model_param_bytes(m) * dp_share(m, dev, ndev, i);
	double s = trn_update_s(&dev[i], b);

	return ndev > 1 ? s + b * dp_bus_s(m, &dev[i]) : s;
}

/* The whole-bucket conversions per element a rank on device d runs on
 * the device (ice-train: an accelerator rounds its gradient before the
 * reduction and widens the gathered weights; the replicated all-reduce's
 * widening too, where the device updates), out of trn_grad_cvt_share(m,
 * 0); 0 on a host (or emulated) device. */
static double cvt_on_device(const struct trn_model *m, const struct trn_profile *d)
{
	if (trn_dev_on_host(d))
		return 0;
	if (m->optim == TRN_OPTIM_REPLICATED)
		return m->grad == TRN_GRAD_BF16 ? 2 : 0;
	return (m->grad == TRN_GRAD_BF16) + (m->param == TRN_GRAD_BF16);
}

/* The same for the conversions of the rank's own part, per element of
 * it: a sharded accelerator rank, updating on the device, widens its
 * reduced bf16 gradient there and rounds its part of the weights there. */
static double own_cvt_on_device(const struct trn_model *m, const struct trn_profile *d)
{
	if (m->optim != TRN_OPTIM_SHARDED || trn_dev_on_host(d))
		return 0;
	return (m->grad == TRN_GRAD_BF16) + (m->param == TRN_GRAD_BF16);
}

/* The conversions per element of the bucket rank i runs on the CPU. */
static double cpu_cvts(const struct trn_model *m, const struct trn_profile *d, double share)
{
	return trn_grad_cvt_share(m, share) - cvt_on_device(m, d) - share * own_cvt_on_device(m, d);
}

/* Seconds per element of one conversion on device d: 4 bytes read or
 * written and 2 the other way through its memory (0: no mem_gbps). */
static double dev_cvt_s(const struct trn_profile *d)
{
	return d->mem_gbps > 0 ? 6.0 / (d->mem_gbps * 1e9) : 0;
}

/*
 * One bucket of bytes of fp32 gradient over n devices. All-reduce (ring):
 * 2(n-1)/n * bytes / busbw + alpha. Sharded: a reduce-scatter and an
 * all-gather with parts of different sizes; each ring step waits for the
 * largest part, so the pair takes 2(n-1) * max share * bytes / busbw (n *
 * max share times the all-reduce: 10/7 for parts of 5/7 and 2/7) and two
 * alphas. Gradients in bf16 move fewer bytes (trn_grad_wire_share), and
 * the communication thread rounds and widens each bucket around its
 * collectives (trn_grad_cvt_share: f conversions of the whole bucket, o of
 * the rank's part): each collective waits for every rank's conversions
 * before it, so the path takes each phase's slowest rank (CPU time, as
 * calibrated: a 1 MiB bucket converts in well under a ms, short beside a
 * CPU quota's period).
 */
static double bucket_time(double bytes, const struct trn_model *m, const struct trn_profile *dev,
			  int n, const struct trn_net *net)
{
	double mx = 0, cf = 0, co = 0, wire = bytes * trn_grad_wire_share(m);
	double f = trn_grad_cvt_share(m, 0), o = trn_grad_cvt_share(m, 1) - f, cvt;

	if (n == 1)
		return net->lat_s;
	for (int i = 0; i < n; i++) {
		double share = dp_share(m, dev, n, i), fd = cvt_on_device(m, &dev[i]);
		double od = own_cvt_on_device(m, &dev[i]);

		mx = fmax(mx, share);
		/* a device rank's conversions on the device */
		cf = fmax(cf, (f - fd) * net->cpu_cvt_s[i] + fd * dev_cvt_s(&dev[i]));
		co = fmax(co, ((o - od) * net->cpu_cvt_s[i] + od * dev_cvt_s(&dev[i])) * share);
	}
	cvt = bytes / 4 * (cf + co);
	if (m->optim == TRN_OPTIM_REPLICATED)
		return 2.0 * (n - 1) / n * wire / (net->busbw_gbps * 1e9) + net->lat_s + cvt;
	return 2.0 * (n - 1) * mx * wire / (net->busbw_gbps * 1e9) + 2 * net->lat_s + cvt;
}

/* The gradient's buckets, none of it hidden; *last: its last bucket.
 * Buckets fill from the last layer's gradient backwards; the remainder
 * (the first layers) is ready last. */
static double dp_allreduce_s(const struct trn_model *m, const struct trn_profile *dev, int ndev,
			     const struct trn_net *net, double *last)
{
	double total = trn_model_param_bytes(m);
	double bsz = m->bucket_kb > 0 ? m->bucket_kb * 1024.0 : 4096.0 * 1024.0;
	double nb = ceil(total / bsz);
	double rem = total - (nb - 1) * bsz;

	*last = bucket_time(rem, m, dev, ndev, net);
	return (nb - 1) * bucket_time(bsz, m, dev, ndev, net) + *last;
}

int trn_predict_dp(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		   const struct trn_net *net, struct trn_dp_plan *p)
{
	double fb, bwd, maxc = 0, bwd_slow = 0, comm = 0, last = 0, maxu = 0, maxcu = 0;
	long sum = 0;
	int ret = trn_plan_check(m, dev, ndev, net);

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
		p->update_s[i] = dp_update_s(m, dev, ndev, i);
		maxu = fmax(maxu, p->update_s[i]);
		maxcu = fmax(maxcu, p->compute_s[i] + p->update_s[i]);
		if (p->compute_s[i] > maxc) {
			maxc = p->compute_s[i];
			bwd_slow = p->samples[i] * bwd / (dev[i].gflops * 1e9);
		}
	}
	if (sum != m->global_batch)
		return -EINVAL;
	for (int i = 0; i < ndev; i++)
		p->contention_s[i] = 0;
	if (ndev > 1) {
		double all = dp_allreduce_s(m, dev, ndev, net, &last), hidden;

		comm = fmax(last, all - net->overlap * bwd_slow);
		/* the hidden part runs beside the compute: its progress takes
		 * CPU from the compute where the rank's cores are too few (not
		 * modelled: the window it hides behind grows with what it
		 * takes, so a partly exposed all-reduce is charged its hidden
		 * CPU both here and in the exposed part; the same for the
		 * wire's CPU and the conversions') */
		hidden = fmax(0, all - comm);
		maxc = maxcu = 0;
		for (int i = 0; i < ndev; i++) {
			/* the wire's bytes, and the bf16 conversions of
			 * what is hidden */
			double cpu = (net->cpu_ar_s[i] * trn_model_param_bytes(m) *
					      trn_grad_wire_share(m) +
				      net->cpu_cvt_s[i] * trn_model_param_bytes(m) / 4 *
					      cpu_cvts(m, &dev[i], dp_share(m, dev, ndev, i))) *
				     (all > 0 ? hidden / all : 0);

			p->contention_s[i] = trn_cpu_contention_s(
				net->cores[i], trn_compute_cores(&dev[i], net->cores[i]), hidden,
				cpu);
			maxc = fmax(maxc, p->compute_s[i] + p->contention_s[i]);
			maxcu = fmax(maxcu, p->compute_s[i] + p->contention_s[i] + p->update_s[i]);
		}
	}
	p->comm_s = comm;
	/* replicated: every update starts when the all-reduce is done;
	 * sharded: each shard's update follows its bucket's reduce-scatter,
	 * in the device's stream beside its backward, the last bucket's
	 * reduce-scatter and all-gather after it */
	if (m->optim == TRN_OPTIM_REPLICATED || ndev == 1)
		p->step_s = maxc + comm + maxu;
	else
		p->step_s = maxcu + comm;
	p->overlap = net->overlap;
	p->over = -1;
	for (int i = 0; i < ndev; i++) {
		double need = dp_mem(m, dev, ndev, i, p->samples[i], p->tail[i]);

		if (need < 0)
			return (int)need;
		p->mem_need[i] = need;
		if (p->over < 0 && trn_mem_cap(&dev[i]) > 0 && need > trn_mem_cap(&dev[i]))
			p->over = i;
	}
	return 0;
}

/*
 * With gradient accumulation a layer's gradient is complete only in the
 * last micro-batch's backward, which is all the all-reduce can hide behind.
 * Running the backward of the last tail micro-batches layer by layer
 * (every tail micro-batch through layer l before any through l - 1; ice-train
 * runs the whole step so, in chunks of tail) completes the top layers'
 * gradients early: the window grows to the
 * tail's whole backward, for tail - 1 more micro-batches of activations
 * kept. Each device gets the fewest that last TRN_DP_TAIL_MARGIN times the
 * all-reduce (it runs slower beside the compute than calibrated alone),
 * and at least TRN_DP_CHUNK (or all it has): ice-train runs a step in
 * chunks of its tail, each layer over a chunk's micro-batches while the
 * layer's weights are in cache, and a chunk of 8 or more micro-batches
 * already computes at the speed of a whole batch through each layer (on
 * this project's 2-core VM, 28 layers of 512x512 at micro-batch 4: 10.4
 * GFLOP/s a micro-batch at a time, 16.6 in chunks of 8, 18.6 all 140 at
 * once; docs/benchmarks.md), so a device's speed hardly depends on its
 * share of the batch (ice-train shares what precedes the last chunk
 * near-equally among chunks; fewer than 8 micro-batches there make a
 * short chunk, not priced: no cost of it showed on this VM,
 * docs/benchmarks.md).
 */
#define TRN_DP_TAIL_MARGIN 3.0
#define TRN_DP_CHUNK	   16

double trn_dp_tails_overlap(const struct trn_model *m, const struct trn_profile *dev, int ndev,
			    const struct trn_dp_plan *p)
{
	double bwd, window = -1, maxc = -1, bwd_slow = 0;

	if (m == NULL || dev == NULL || p == NULL || ndev < 1 || ndev > TRN_MAX_DEVICES ||
	    m->micro_batch < 1)
		return 0;
	for (int i = 0; i < ndev; i++)
		if (!(dev[i].gflops > 0))
			return 0;
	bwd = model_bwd_flops(m);
	for (int i = 0; i < ndev; i++) {
		double per = bwd / (dev[i].gflops * 1e9); /* per sample */
		double c = p->samples[i] * model_fb_flops(m) / (dev[i].gflops * 1e9);
		int n = p->samples[i], part = n % m->micro_batch, rows;

		if (n <= 0)
			continue;
		/* the last micro-batch may be short; no tail: no overlap */
		rows = p->tail[i] <= 0 ? 0
		       : part != 0     ? part + (p->tail[i] - 1) * m->micro_batch
				       : p->tail[i] * m->micro_batch;
		rows = rows < n ? rows : n;
		window = window < 0 ? rows * per : fmin(window, rows * per);
		if (c > maxc) {
			maxc = c;
			bwd_slow = n * per;
		}
	}
	return window > 0 && bwd_slow > 0 ? fmin(1, window / bwd_slow) : 0;
}

double trn_dp_tails(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		    const struct trn_net *net, int fixed, struct trn_dp_plan *p)
{
	double bwd, last, comm;

	if (trn_plan_check(m, dev, ndev, net) < 0 || p == NULL)
		return 0;
	bwd = model_bwd_flops(m);
	comm = ndev > 1 && net->busbw_gbps > 0 ? dp_allreduce_s(m, dev, ndev, net, &last) : 0;
	for (int i = 0; i < ndev; i++) {
		double per = bwd / (dev[i].gflops * 1e9); /* per sample */
		double cap = trn_mem_cap(&dev[i]);
		int n = p->samples[i], rows = 0;

		/* the last micro-batch may be short: count samples back */
		p->tail[i] = 0;
		while (rows < n) {
			int part = (n - rows) % m->micro_batch;

			if (fixed > 0 ? p->tail[i] >= fixed
				      : p->tail[i] >= TRN_DP_CHUNK &&
						rows * per >= TRN_DP_TAIL_MARGIN * comm)
				break;
			/* one more slot must fit in the capacity */
			if (p->tail[i] >= 1 && cap > 0 &&
			    dp_mem(m, dev, ndev, i, n, p->tail[i] + 1) > cap)
				break;
			rows += p->tail[i] == 0 && part != 0 ? part : m->micro_batch;
			p->tail[i]++;
		}
	}
	return trn_dp_tails_overlap(m, dev, ndev, p);
}

int trn_plan_dp_tailed(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		       const struct trn_net *net, bool even, int tail, struct trn_dp_plan *out)
{
	struct trn_net n;
	double ov;
	int ret;

	if (m == NULL || net == NULL || ndev < 1 || out == NULL)
		return -EINVAL;
	n = *net;
	if (n.overlap < 0) {
		double per = (double)m->global_batch / ndev;

		n.overlap = per > m->micro_batch ? m->micro_batch / per : 1.0;
	}
	ret = even ? trn_plan_dp_even(m, dev, ndev, &n, out) : trn_plan_dp(m, dev, ndev, &n, out);
	if (ret < 0)
		return ret;
	ov = trn_dp_tails(m, dev, ndev, &n, tail, out);
	if (net->overlap < 0)
		n.overlap = ov;
	return trn_predict_dp(m, dev, ndev, &n, out);
}

int trn_plan_dp_even(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		     const struct trn_net *net, struct trn_dp_plan *out)
{
	int ret = trn_plan_check(m, dev, ndev, net);

	if (ret < 0 || out == NULL)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < ndev; i++)
		out->samples[i] = m->global_batch / ndev;
	out->samples[0] += m->global_batch % ndev;
	return trn_predict_dp(m, dev, ndev, net, out);
}

/* Steepest descent from the plan p of size bytes (predicted step): each
 * round moves p to the neighbour among 0..nmoves-1 that shortens the step
 * most, until none does or rounds ran out. scratch holds two plans. */
int trn_plan_climb(const struct trn_plan_climb *c, void *p, size_t size, void *scratch, double step,
		   int rounds, int nmoves)
{
	void *best = scratch, *q = (char *)scratch + size;

	for (int round = 0; round < rounds; round++) {
		double best_step = step;

		memcpy(best, p, size);
		for (int i = 0; i < nmoves; i++) {
			double q_step;
			int ret;

			memcpy(q, p, size);
			ret = c->move(c, q, i, &q_step);
			if (ret < 0)
				return ret;
			if (ret > 0 && q_step < best_step * (1 - 1e-12)) {
				memcpy(best, q, size);
				best_step = q_step;
			}
		}
		if (best_step >= step)
			return 0;
		memcpy(p, best, size);
		step = best_step;
	}
	return 0;
}

/* Neighbour a * ndev + b: one micro-batch (or what is left) from a to b. */
static int dp_move(const struct trn_plan_climb *c, void *qv, int i, double *step)
{
	struct trn_dp_plan *q = qv;
	int a = i / c->ndev, b = i % c->ndev;
	int mv = q->samples[a] < c->m->micro_batch ? q->samples[a] : c->m->micro_batch;
	int ret;

	if (a == b || mv == 0 || q->samples[b] + mv > dp_max_rows(c->m, c->dev, c->ndev, b))
		return 0;
	q->samples[a] -= mv;
	q->samples[b] += mv;
	ret = trn_predict_dp(c->m, c->dev, c->ndev, c->net, q);
	*step = q->step_s;
	return ret < 0 ? ret : 1;
}

/*
 * The exposed all-reduce depends on which device is slowest (its backward
 * hides it), and a device whose optimizer step makes it the slowest may
 * have little backward: from the greedy split, move one micro-batch at a
 * time between two devices while that shortens the predicted step.
 */
static int dp_improve(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		      const struct trn_net *net, struct trn_dp_plan *p)
{
	const struct trn_plan_climb c = {
		.m = m, .dev = dev, .ndev = ndev, .net = net, .move = dp_move};
	struct trn_dp_plan scratch[2];

	return trn_plan_climb(&c, p, sizeof(*p), scratch, p->step_s, 4 * m->global_batch,
			      ndev * ndev);
}

/*
 * Micro-batches are equal jobs and the devices are related machines (speed
 * only), each with its optimizer shard to update (a replicated update
 * waits for the all-reduce: it does not move the split): giving each next
 * unit to the device that would finish it first minimises the largest
 * compute time. The step time grows with that largest compute time (the
 * exposed all-reduce shrinks by at most overlap * 4/6 of it), so when
 * every device's update takes the same time this also minimises the step
 * among splits in whole micro-batches (dp_improve then finds nothing);
 * the even split (which may cut micro-batches) is the fallback when it
 * predicts better.
 */
int trn_plan_dp(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		const struct trn_net *net, struct trn_dp_plan *out)
{
	struct trn_dp_plan even;
	double fb, upd[TRN_MAX_DEVICES];
	int most[TRN_MAX_DEVICES] = {0};
	int ret = trn_plan_check(m, dev, ndev, net);

	if (ret < 0 || out == NULL)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	fb = model_fb_flops(m);
	for (int i = 0; i < ndev; i++) {
		upd[i] = m->optim == TRN_OPTIM_SHARDED ? dp_update_s(m, dev, ndev, i) : 0;
		most[i] = dp_max_rows(m, dev, ndev, i);
		if (most[i] < 0)
			return -ENOMEM;
	}
	/* device i done with s samples; a device whose capacity
	 * cannot hold them never is */
#define DP_DONE(i, s) ((s) > most[i] ? DBL_MAX : (s)*fb / (dev[i].gflops * 1e9) + upd[i])
	/* a micro-batch at a time (the last one what is left); when no device
	 * has room for a whole one, part of it to a device that has some */
	for (int left = m->global_batch; left > 0;) {
		int take = left < m->micro_batch ? left : m->micro_batch, best = -1;

		for (int i = 0; i < ndev; i++)
			if (DP_DONE(i, out->samples[i] + take) < DBL_MAX &&
			    (best < 0 || DP_DONE(i, out->samples[i] + take) <
						 DP_DONE(best, out->samples[best] + take)))
				best = i;
		for (int i = 0; best < 0 && i < ndev; i++)
			if (out->samples[i] < most[i])
				best = i;
		if (best < 0)
			return -ENOMEM;
		if (out->samples[best] + take > most[best])
			take = most[best] - out->samples[best];
		out->samples[best] += take;
		left -= take;
	}
#undef DP_DONE
	ret = trn_predict_dp(m, dev, ndev, net, out);
	if (ret < 0)
		return ret;
	ret = dp_improve(m, dev, ndev, net, out);
	if (ret < 0)
		return ret;
	ret = trn_plan_dp_even(m, dev, ndev, net, &even);
	if (ret < 0)
		return ret;
	if (even.over < 0 && even.step_s < out->step_s)
		*out = even;
	return 0;
}
