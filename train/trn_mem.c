// SPDX-License-Identifier: Apache-2.0
/*
 * trn_mem: what a rank of a training job holds in memory, from the model,
 * its part of it and its activation slots (trn.h, "memory"), and the
 * slots a pipeline stage's schedule needs. The figures are ice-train's own
 * allocations (train/run/ice_train_rank.c), which report them beside the
 * prediction; the planners keep every rank within its device's capacity.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "trn.h"
#include "trn_plan_internal.h"

/* the transport's send/receive staging piece (TP_DEV_SR_CHUNK) */
#define TRN_TP_PIECE (1024.0 * 1024)

void trn_mem_from(const struct trn_model *m, const struct trn_profile *d, int ndev,
		  const struct trn_mem_sums *x, double widest, int slots, int rows, bool first,
		  bool last, bool zb, bool dp, struct trn_mem *out)
{
	double mb = m->micro_batch, np = x->params, slot, hs;
	bool host = trn_dev_on_host(d), g16, w16;

	memset(out, 0, sizeof(*out));
	/* every layer's input, the output, the output's gradient, the
	 * input's gradient to send; zero bubble: each inner layer's output
	 * gradient, which W reads after B */
	slot = x->inputs + 2.0 * x->out_last + x->in_first + (zb ? x->inner_outs : 0);
	out->slots = slots;
	out->weights = 4 * np;
	out->grads = 4 * np;
	out->acts = 4 * slot * mb * slots;
	out->scratch = 2 * 4 * widest * mb;
	if (first)
		out->rows += 4.0 * (rows > 0 ? rows : 1) * m->in[0];
	if (last)
		out->rows += 4.0 * (rows > 0 ? rows : 1) * m->out[m->nlayers - 1];
	g16 = dp && ndev > 1 && m->grad == TRN_GRAD_BF16;
	w16 = dp && ndev > 1 && m->optim == TRN_OPTIM_SHARDED && m->param == TRN_GRAD_BF16;
	/* a device rank exchanging bf16 converts whole buckets on the device */
	out->exchange = !host && (g16 || w16) ? 2 * np : 0;
	out->device =
		out->weights + out->grads + out->acts + out->scratch + out->rows + out->exchange;
	/* beside it on the host: scratch; a device rank's fp32 master and
	 * gradient staging; the bf16 exchange's staging (and, with bf16
	 * weights, the fp32 master apart from the weights computed on) */
	hs = widest * mb > np ? widest * mb : np;
	out->host = 4 * hs;
	if (!host || w16)
		out->host += 4 * np;
	if (!host)
		out->host += 4 * np;
	if (g16)
		out->host += 2 * np;
	if (w16)
		out->host += 2 * np;
}

int trn_mem_rank(const struct trn_model *m, const struct trn_profile *d, int ndev, int l0, int nl,
		 int slots, int rows, bool first, bool last, bool zb, bool dp, struct trn_mem *out)
{
	struct trn_mem_sums x = {0};
	int e = l0 + nl;

	if (m == NULL || d == NULL || out == NULL || ndev < 1 || l0 < 0 || nl < 1 ||
	    e > m->nlayers || slots < 1 || rows < 0 || m->micro_batch < 1)
		return -EINVAL;
	for (int l = l0; l < e; l++) {
		x.params += (double)m->in[l] * m->out[l];
		x.inputs += m->in[l];
		if (l < e - 1)
			x.inner_outs += m->out[l];
	}
	x.in_first = m->in[l0];
	x.out_last = m->out[e - 1];
	trn_mem_from(m, d, ndev, &x, trn_model_widest(m), slots, rows, first, last, zb, dp, out);
	return 0;
}

static double round64(double b)
{
	return ceil(b / 64) * 64;
}

void trn_mem_transport(const struct trn_model *m, const struct trn_profile *dev, int ndev, int i,
		       struct trn_mem *mm)
{
	double msg, piece, act = 2.0 * 4 * m->micro_batch * trn_model_widest(m);
	bool staged = false;

	for (int r = 0; r < ndev && !staged; r++)
		staged = !trn_dev_on_host(&dev[r]);
	/* as tp_dev_comm_new: also a rank alone, on an accelerator */
	if (!staged)
		return;
	msg = floor(trn_model_param_bytes(m) + 0.5);
	msg = msg > act ? msg : act;
	piece = floor(msg / ndev) + 8;
	if (piece < fmin(msg, TRN_TP_PIECE))
		piece = fmin(msg, TRN_TP_PIECE);
	piece = round64(piece);
	mm->transport_host = round64(msg + 8.0 * ndev) + 2 * piece;
	mm->host += mm->transport_host;
	if (!trn_dev_on_host(&dev[i])) {
		mm->transport = piece;
		mm->device += piece;
	}
}

void trn_mem_master(const struct trn_model *m, const struct trn_profile *dev, int ndev, int i,
		    struct trn_mem *mm)
{
	size_t bucket = (size_t)(m->bucket_kb > 0 ? m->bucket_kb : 4096) * 1024;
	size_t start = 0, off = 0, sh[TRN_MAX_DEVICES];
	double own = 0;

	if (ndev < 2 || m->optim != TRN_OPTIM_SHARDED || m->param != TRN_GRAD_BF16 ||
	    trn_dev_on_host(&dev[i]))
		return;
	/* ice-train's buckets: layers from the last, each closed once it
	 * holds a bucket's bytes, the last at layer 0 */
	for (int l = m->nlayers - 1; l >= 0; l--) {
		off += (size_t)m->in[l] * (size_t)m->out[l];
		if ((off - start) * 4 >= bucket || l == 0) {
			trn_dp_shards(m, dev, ndev, off - start, sh);
			own += (double)sh[i];
			start = off;
		}
	}
	mm->master = 4 * own;
	mm->device += mm->master;
}

bool trn_dev_on_host(const struct trn_profile *d)
{
	return d->emulated || strcmp(d->kind, "host") == 0;
}

double trn_mem_need(const struct trn_profile *d, const struct trn_mem *mm)
{
	if (d == NULL || mm == NULL)
		return 0;
	return trn_dev_on_host(d) ? mm->device + mm->host : mm->device;
}

double trn_mem_cap(const struct trn_profile *d)
{
	return d != NULL && d->mem_gib > 0 ? d->mem_gib * (double)(1u << 30) : 0;
}

int trn_pp_slots(const struct trn_pp_op *ops, int n, enum trn_pp_sched sched)
{
	int live = 0, most = 0;

	for (int c = 0; c < n; c++) {
		if (ops[c].kind == TRN_PP_F)
			live++;
		else if (ops[c].kind == (sched == TRN_PP_ZB ? TRN_PP_W : TRN_PP_B))
			live--;
		most = live > most ? live : most;
	}
	return most + 1;
}

/* 1F1B: the warm-up forwards, then one more before the first backward;
 * zero bubble: at most trn_pp_zb_inflight in flight, by construction. */
int trn_pp_slots_bound(int s, int S, int m, enum trn_pp_sched sched)
{
	int most;

	if (sched == TRN_PP_ZB) {
		most = trn_pp_zb_inflight(s, S, m);
	} else {
		most = trn_pp_warmup(s, S, m) + 1;
		most = most < m ? most : m;
	}
	return most + 1;
}
