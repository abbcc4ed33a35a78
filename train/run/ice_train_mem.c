// SPDX-License-Identifier: Apache-2.0
/*
 * ice-train: a rank's memory on its kind. The weights (seeded, the same
 * on every rank; on a device its fp32 master or bf16 copies as the
 * optimizer and --param-dtype ask), the gradient and its buckets, the
 * activations of the rank's micro-batch slots and its part of the data;
 * each allocation counted for the report (mem_dev / mem_host), and freed.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ice_log.h"
#include "ice_train_internal.h"

/* xorshift64*: deterministic data from (seed, stream). */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static void rng_fill(float *v, size_t n, uint32_t seed, uint64_t stream, float scale)
{
	uint64_t s =
		((uint64_t)seed << 32) ^ (stream * 0x9e3779b97f4a7c15ull) ^ 0x5851f42d4c957f2dull;

	if (s == 0)
		s = 1;
	for (int i = 0; i < 4; i++)
		rng_next(&s);
	for (size_t i = 0; i < n; i++) {
		double u = (double)(rng_next(&s) >> 11) * (1.0 / 9007199254740992.0);

		v[i] = (float)((2.0 * u - 1.0) * scale);
	}
}

/* ---- setup ------------------------------------------------------------------ */

void *itr_dev_alloc(struct itr_rank *k, size_t bytes)
{
	void *p = k->ops->alloc(bytes ? bytes : 4);

	if (p == NULL)
		ice_err(ICE_SUB_BENCH, "rank %d: cannot allocate %zu bytes of %s memory", k->r,
			bytes, k->ops->name);
	else
		k->dev_bytes += bytes; /* an empty one as the model counts it: 0 */
	return p;
}

/* Host memory of the training state, counted (free with free()). */
static void *host_alloc(struct itr_rank *k, size_t bytes)
{
	void *p = malloc(bytes);

	if (p != NULL)
		k->host_bytes += bytes;
	return p;
}

/* The training state's bytes after a setup (params or acts), and the
 * transport's staging, into the result. */
static void mem_note(struct itr_rank *k)
{
	k->me->mem_dev = k->par_bytes[0] + k->act_bytes[0] + (double)k->tp_bytes[0];
	k->me->mem_host = k->par_bytes[1] + k->act_bytes[1] + (double)k->tp_bytes[1];
	k->me->mem_tp_dev = (double)k->tp_bytes[0];
	k->me->mem_tp_host = (double)k->tp_bytes[1];
}

/* Copy host rows into a new device buffer. */
static float *dev_from(struct itr_rank *k, const float *h, size_t count)
{
	float *p = itr_dev_alloc(k, count * 4);

	if (p == NULL)
		return NULL;
	if (k->host) {
		memcpy(p, h, count * 4);
		return p;
	}
	if (k->ops->from_host(p, h, count * 4) < 0) {
		k->ops->free(p);
		return NULL;
	}
	return p;
}

/* Weights of layers [l0, l0+nl) from the seed (the same on every rank),
 * weights and gradients in one block each, in reverse layer order, DP
 * buckets (and, sharded, every rank's part of each). */
int itr_setup_params(struct itr_rank *k)
{
	const struct trn_model *m = k->m;
	size_t bucket = (size_t)(m->bucket_kb > 0 ? m->bucket_kb : 4096) * 1024;
	size_t off = 0, start = 0;
	double d0 = k->dev_bytes, h0 = k->host_bytes;
	bool w16;

	k->w = calloc((size_t)k->nl, sizeof(*k->w));
	k->wm = calloc((size_t)k->nl, sizeof(*k->wm));
	k->goff = calloc((size_t)k->nl, sizeof(*k->goff));
	k->bk = calloc((size_t)k->nl, sizeof(*k->bk));
	if (k->w == NULL || k->wm == NULL || k->goff == NULL || k->bk == NULL)
		return -ENOMEM;
	for (int j = k->nl - 1; j >= 0; j--) {
		size_t cnt = (size_t)itr_lin(k, j) * (size_t)itr_lout(k, j);

		k->goff[j] = off;
		off += cnt;
		if ((off - start) * 4 >= bucket || j == 0) {
			k->bk[k->nbk].close_at = j;
			k->bk[k->nbk].off = start;
			k->bk[k->nbk].count = off - start;
			if (k->sharded) {
				struct itr_bucket *b = &k->bk[k->nbk];

				trn_dp_shards(m, k->job->dev, k->n, b->count, b->shard);
				for (int r = 0; r < k->r; r++)
					b->mine += b->shard[r];
			}
			k->nbk++;
			start = off;
		}
	}
	k->nparam = off;
	k->hscratch_len = (size_t)trn_model_widest(m) * (size_t)k->mb;
	if (k->hscratch_len < k->nparam)
		k->hscratch_len = k->nparam;
	k->hscratch = host_alloc(k, k->hscratch_len * 4);
	if (k->hscratch == NULL)
		return -ENOMEM;
	w16 = k->sharded && m->param == TRN_GRAD_BF16;
	k->wblk = itr_dev_alloc(k, k->nparam * 4);
	/* the fp32 master copy: on host memory the weights themselves,
	 * unless they are gathered in bf16 (then computed on rounded); a
	 * device rank's is on the device (itr_dev_update: its weights, or
	 * dm), and this is where its weights are seeded and, sharded, where
	 * the all-gather stages them */
	k->wmblk = k->host && !w16 ? k->wblk : host_alloc(k, k->nparam * 4);
	k->grad = itr_dev_alloc(k, k->nparam * 4);
	k->gh = k->host ? k->grad : host_alloc(k, k->nparam * 4);
	if (k->wblk == NULL || k->wmblk == NULL || k->grad == NULL || k->gh == NULL)
		return -ENOMEM;
	/* DP gradients or weights in bf16: their staging */
	if (k->job->scheme == ITR_DP && k->n > 1 && m->grad == TRN_GRAD_BF16) {
		k->g16 = host_alloc(k, k->nparam * sizeof(*k->g16));
		if (k->g16 == NULL)
			return -ENOMEM;
	}
	if (w16) {
		k->w16 = host_alloc(k, k->nparam * sizeof(*k->w16));
		k->wh = k->host ? k->wblk : NULL;
		if (k->w16 == NULL)
			return -ENOMEM;
	}
	/* a device rank rounds and widens whole buckets on the device; with
	 * weights gathered in bf16 it keeps its parts' fp32 master there */
	if (!k->host && (k->g16 != NULL || w16)) {
		k->d16 = itr_dev_alloc(k, k->nparam * sizeof(*k->d16));
		if (k->d16 == NULL)
			return -ENOMEM;
	}
	if (!k->host && w16) {
		size_t own = 0;

		for (int b = 0; b < k->nbk; b++) {
			k->bk[b].moff = own;
			own += k->bk[b].shard[k->r];
		}
		k->dm = itr_dev_alloc(k, own * 4);
		if (k->dm == NULL)
			return -ENOMEM;
	}
	for (int j = 0; j < k->nl; j++) {
		k->w[j] = k->wblk + k->goff[j];
		k->wm[j] = k->wmblk + k->goff[j];
		rng_fill(k->wm[j], (size_t)itr_lin(k, j) * (size_t)itr_lout(k, j), k->job->seed,
			 1000 + (uint64_t)(k->l0 + j), (float)sqrt(3.0 / itr_lin(k, j)));
	}
	/* every rank computes on the weights rounded to bf16 from the start,
	 * as the all-gathers leave them */
	if (w16)
		dev_float_to_bf16_n(k->w16, k->wmblk, k->nparam);
	if (w16 && k->host)
		dev_bf16_to_float_n(k->wh, k->w16, k->nparam);
	if (w16 && !k->host &&
	    (k->ops->from_host(k->d16, k->w16, k->nparam * sizeof(*k->d16)) < 0 ||
	     k->ops->convert(k->wblk, DEV_FLOAT32, k->d16, DEV_BFLOAT16, k->nparam) < 0))
		return -EIO;
	for (int b = 0; k->dm != NULL && b < k->nbk; b++) {
		const struct itr_bucket *bk = &k->bk[b];

		if (k->ops->from_host(k->dm + bk->moff, k->wmblk + bk->off + bk->mine,
				      bk->shard[k->r] * 4) < 0)
			return -EIO;
	}
	if (!w16 && !k->host && k->ops->from_host(k->wblk, k->wmblk, k->nparam * 4) < 0)
		return -EIO;
	k->par_bytes[0] = k->dev_bytes - d0;
	k->par_bytes[1] = k->host_bytes - h0;
	k->me->dev_update = itr_dev_update(k);
	mem_note(k);
	return 0;
}

/* Activation slots, the backward chain, input and target rows
 * [row0, row0 + nrows) of the global batch (x on the first stage, targets
 * on the last). */
int itr_setup_acts(struct itr_rank *k, int row0, int nrows, bool first, bool last)
{
	const struct trn_model *m = k->m;
	size_t fmax = (size_t)trn_model_widest(m) * (size_t)k->mb;
	double d0 = k->dev_bytes, h0 = k->host_bytes;
	size_t cnt;
	float *h;

	k->act = calloc((size_t)k->nslots, sizeof(*k->act));
	k->xin = calloc((size_t)k->nslots, sizeof(*k->xin));
	k->dytop = calloc((size_t)k->nslots, sizeof(*k->dytop));
	k->gsend = calloc((size_t)k->nslots, sizeof(*k->gsend));
	k->op_fwd = calloc((size_t)k->nslots, sizeof(*k->op_fwd));
	k->op_bwd = calloc((size_t)k->nslots, sizeof(*k->op_bwd));
	k->op_ract = calloc((size_t)k->nslots, sizeof(*k->op_ract));
	k->op_rgrad = calloc((size_t)k->nslots, sizeof(*k->op_rgrad));
	k->dy = calloc((size_t)k->nslots, sizeof(*k->dy));
	k->dtop = calloc((size_t)k->nslots, sizeof(*k->dtop));
	if (k->act == NULL || k->xin == NULL || k->dytop == NULL || k->gsend == NULL ||
	    k->op_fwd == NULL || k->op_bwd == NULL || k->op_ract == NULL || k->op_rgrad == NULL ||
	    k->dy == NULL || k->dtop == NULL)
		return -ENOMEM;
	for (int s = 0; s < k->nslots; s++) {
		k->act[s] = calloc((size_t)k->nl + 1, sizeof(**k->act));
		if (k->act[s] == NULL)
			return -ENOMEM;
		for (int j = 0; j <= k->nl; j++) {
			int f = j < k->nl ? itr_lin(k, j) : itr_lout(k, k->nl - 1);

			k->act[s][j] = itr_dev_alloc(k, (size_t)f * (size_t)k->mb * 4);
			if (k->act[s][j] == NULL)
				return -ENOMEM;
		}
		k->dytop[s] = itr_dev_alloc(k, (size_t)itr_lout(k, k->nl - 1) * (size_t)k->mb * 4);
		k->gsend[s] = itr_dev_alloc(k, (size_t)itr_lin(k, 0) * (size_t)k->mb * 4);
		if (k->dytop[s] == NULL || k->gsend[s] == NULL)
			return -ENOMEM;
		if (k->job->scheme != ITR_PP || k->job->sched != TRN_PP_ZB || k->nl < 2)
			continue;
		k->dy[s] = calloc((size_t)k->nl - 1, sizeof(**k->dy));
		if (k->dy[s] == NULL)
			return -ENOMEM;
		for (int j = 0; j < k->nl - 1; j++) {
			k->dy[s][j] = itr_dev_alloc(k, (size_t)itr_lout(k, j) * (size_t)k->mb * 4);
			if (k->dy[s][j] == NULL)
				return -ENOMEM;
		}
	}
	k->tmp[0] = itr_dev_alloc(k, fmax * 4);
	k->tmp[1] = itr_dev_alloc(k, fmax * 4);
	if (k->tmp[0] == NULL || k->tmp[1] == NULL)
		return -ENOMEM;
	cnt = (size_t)(nrows > 0 ? nrows : 1) * (size_t)trn_model_widest(m);
	h = malloc(cnt * 4);
	if (h == NULL)
		return -ENOMEM;
	if (first) {
		int f = m->in[0];

		for (int i = 0; i < nrows; i++)
			rng_fill(h + (size_t)i * f, (size_t)f, k->job->seed, 1u << 30 | (row0 + i),
				 1.0f);
		k->x = dev_from(k, h, (size_t)(nrows > 0 ? nrows : 1) * f);
	}
	if (last) {
		int f = m->out[m->nlayers - 1];

		for (int i = 0; i < nrows; i++)
			rng_fill(h + (size_t)i * f, (size_t)f, k->job->seed, 1u << 29 | (row0 + i),
				 1.0f);
		k->negt = dev_from(k, h, (size_t)(nrows > 0 ? nrows : 1) * f);
	}
	free(h);
	if ((first && k->x == NULL) || (last && k->negt == NULL))
		return -ENOMEM;
	k->act_bytes[0] = k->dev_bytes - d0;
	k->act_bytes[1] = k->host_bytes - h0;
	mem_note(k);
	return 0;
}

/* What itr_setup_acts() made (a re-planned split sets them up again). */
void itr_free_acts(struct itr_rank *k)
{
	const struct dev_mem_ops *o = k->ops;

	for (int s = 0; k->act != NULL && s < k->nslots; s++) {
		for (int j = 0; k->act[s] != NULL && j <= k->nl; j++)
			o->free(k->act[s][j]);
		free(k->act[s]);
		o->free(k->dytop[s]);
		o->free(k->gsend[s]);
		for (int j = 0; k->dy != NULL && k->dy[s] != NULL && j < k->nl - 1; j++)
			o->free(k->dy[s][j]);
		if (k->dy != NULL)
			free(k->dy[s]);
	}
	o->free(k->tmp[0]);
	o->free(k->tmp[1]);
	o->free(k->x);
	o->free(k->negt);
	free(k->act);
	free(k->xin);
	free(k->dytop);
	free(k->gsend);
	free(k->op_fwd);
	free(k->op_bwd);
	free(k->op_ract);
	free(k->op_rgrad);
	free(k->dy);
	free(k->dtop);
	k->act = NULL;
	k->dy = NULL;
	k->tmp[0] = k->tmp[1] = NULL;
	k->x = k->negt = NULL;
	k->xin = NULL;
	k->dytop = k->gsend = NULL;
	k->op_fwd = k->op_bwd = k->op_ract = k->op_rgrad = NULL;
	k->dtop = NULL;
}

/* What itr_setup_params() made (a re-planned pipeline sets them up again). */
void itr_free_params(struct itr_rank *k)
{
	const struct dev_mem_ops *o = k->ops;

	if (k->wmblk != k->wblk)
		free(k->wmblk);
	if (k->wh != k->wblk)
		free(k->wh);
	if (k->gh != k->grad)
		free(k->gh);
	o->free(k->wblk);
	o->free(k->grad);
	o->free(k->d16);
	o->free(k->dm);
	k->d16 = NULL;
	k->dm = NULL;
	free(k->g16);
	free(k->w16);
	free(k->hscratch);
	free(k->w);
	free(k->wm);
	free(k->goff);
	free(k->bk);
	k->wblk = k->wmblk = k->grad = k->gh = k->hscratch = NULL;
	k->g16 = k->w16 = NULL;
	k->wh = NULL;
	k->w = k->wm = NULL;
	k->goff = NULL;
	k->bk = NULL;
	k->nbk = 0;
}

void itr_free_rank(struct itr_rank *k)
{
	if (k->ops == NULL)
		return;
	itr_free_acts(k);
	itr_free_params(k);
	free(k->pp_ops);
	free(k->ev);
}
