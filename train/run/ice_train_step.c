// SPDX-License-Identifier: Apache-2.0
/*
 * ice-train: one training step of a rank. DP: micro-batches in chunks,
 * each chunk forward and backward layer by layer, the last chunk's
 * gradient buckets all-reduced, or (sharded) reduce-scattered, updated and
 * all-gathered, as soon as they are complete. PP: a stage's operations in
 * the schedule's order (1F1B or zero bubble), sends and receives queued to
 * the communication thread.
 */
#include <string.h>

#include "ice_log.h"
#include "ice_time.h"
#include "ice_train_internal.h"

/* ---- training steps --------------------------------------------------- */

/* Rows of a chunk's micro-batch t (the step's last one may be short). */
static int tail_rows(const struct itr_rank *k, int t, int row0, int nrows)
{
	int left = nrows - row0 - t * k->mb;

	return left < k->mb ? left : k->mb;
}

/* Hand op on buf to the communication thread, once the products this
 * rank queued are done (it reads or writes buf on its own stream). */
static int hand_off(struct itr_rank *k, struct itr_cop *op, enum itr_cop_kind kind, float *buf,
		    size_t count, int peer)
{
	int ret = itr_mm_wait(k);

	if (ret == 0)
		itr_cop_post(&k->ct, op, kind, buf, count, peer);
	return ret;
}

/* Sharded DP: update this rank's part of bucket b once its reduce-scatter
 * is in (wait: wait for it; else only if it is in already). In the
 * device's stream between backward layers, as an optimizer step fused
 * into the backward would run: on a device rank by the device (its fp32
 * gradient copied up; a bf16 one the communication thread widened there),
 * on its weights or, where they are gathered in bf16, its part's master. */
static int shard_update(struct itr_rank *k, int b, bool wait)
{
	struct itr_bucket *bk = &k->bk[b];
	size_t off = bk->off + bk->mine;
	uint64_t t0;
	int ret = 0;

	if (bk->updated || (!wait && !itr_cop_done(&k->ct, &bk->op)))
		return 0;
	ret = itr_wait_op(k, &bk->op, EV_RS); /* after the queued products */
	if (ret < 0)
		return ret;
	t0 = ice_now_ns();
	if (itr_dev_update(k) && k->g16 == NULL) {
		ret = k->ops->from_host(k->grad + off, k->gh + off, bk->shard[k->r] * 4);
		k->t_update += (double)(ice_now_ns() - t0) / 1e9;
	}
	if (ret == 0)
		ret = itr_sgd_range(k, off, bk->shard[k->r],
				    k->dm != NULL ? k->dm + bk->moff : NULL);
	itr_trace_add(k, EV_UPD, b, t0, ice_now_ns(), 0, 0);
	bk->updated = ret == 0;
	return ret;
}

/*
 * Sharded DP: post the collectives of the step in one fixed order, RS 0,
 * RS 1, AG 0, RS 2, AG 1, ..., RS n-1, AG n-2, AG n-1 (collectives must be
 * queued in the same order on every rank): a bucket's reduce-scatter once
 * its gradient is complete (nclosed), its all-gather two reduce-scatters
 * later, once its part is updated (the update runs here when its
 * reduce-scatter is in; in the device's stream between backward layers,
 * as an optimizer step fused into the backward would run). Whatever is
 * not ready holds back what follows it, never the compute; wait (the end
 * of the step): post everything, waiting as needed.
 */
static int shard_advance(struct itr_rank *k, bool wait)
{
	for (;;) {
		struct itr_bucket *bk;
		int ret;

		if (k->nrs < k->nbk && (k->nrs < 2 || k->nag >= k->nrs - 1)) {
			if (k->nrs >= k->nclosed)
				return 0;
			bk = &k->bk[k->nrs];
			bk->op.tag = k->nrs++;
			bk->op.hbuf = k->gh + bk->off;
			bk->op.counts = bk->shard;
			bk->op.mine = bk->mine;
			bk->op.half = k->g16 != NULL ? k->g16 + bk->off : NULL;
			bk->op.dhalf = k->d16 != NULL && k->g16 != NULL ? k->d16 + bk->off : NULL;
			bk->op.dev_upd = itr_dev_update(k);
			ret = hand_off(k, &bk->op, COP_RS, k->grad + bk->off, bk->count, -1);
			if (ret < 0)
				return ret;
			continue;
		}
		if (k->nag == k->nbk)
			return 0;
		bk = &k->bk[k->nag];
		ret = shard_update(k, k->nag, wait);
		if (ret < 0 || !bk->updated)
			return ret;
		bk->ag.tag = k->nag++;
		bk->ag.hbuf = k->wmblk + bk->off;
		bk->ag.counts = bk->shard;
		bk->ag.mine = bk->mine;
		bk->ag.half = k->w16 != NULL ? k->w16 + bk->off : NULL;
		bk->ag.hout = k->w16 != NULL && k->wh != NULL ? k->wh + bk->off : NULL;
		bk->ag.dhalf = k->w16 != NULL && k->d16 != NULL ? k->d16 + bk->off : NULL;
		bk->ag.dev_upd = itr_dev_update(k);
		bk->ag.dmaster = k->dm != NULL ? k->dm + bk->moff : NULL;
		ret = hand_off(k, &bk->ag, COP_AG, k->wblk + bk->off, bk->count, -1);
		if (ret < 0)
			return ret;
	}
}

/* DP: buckets [k->nclosed, upto) have their gradient complete: all-reduce
 * them, or (sharded) reduce-scatter them in their turn. */
static int close_buckets(struct itr_rank *k, int upto)
{
	for (; k->nclosed < upto; k->nclosed++) {
		struct itr_bucket *bk = &k->bk[k->nclosed];

		if (!k->sharded) {
			int ret;

			bk->op.tag = k->nclosed;
			bk->op.hbuf = k->gh + bk->off;
			bk->op.half = k->g16 != NULL ? k->g16 + bk->off : NULL;
			bk->op.dhalf = k->d16 != NULL && k->g16 != NULL ? k->d16 + bk->off : NULL;
			bk->op.dev_upd = itr_dev_update(k);
			ret = hand_off(k, &bk->op, COP_ALLREDUCE, k->grad + bk->off, bk->count, -1);
			if (ret < 0)
				return ret;
		}
	}
	return k->sharded ? shard_advance(k, false) : 0;
}

/* DP: the forward of the micro-batches in slots [0, n) (rows row0 ..
 * nrows) layer by layer, each layer over all of them while its weights
 * are in cache, then each slot's loss gradient. Every micro-batch's
 * products are the ones itr_forward() computes, and the loss sums in the
 * micro-batches' order. */
static int forward_chunk(struct itr_rank *k, int n, int row0, int nrows)
{
	int lo = itr_lout(k, k->nl - 1);

	for (int t = 0; t < n; t++)
		k->xin[t] = k->x + (size_t)(row0 + t * k->mb) * k->m->in[0];
	for (int j = 0; j < k->nl; j++) {
		for (int t = 0; t < n; t++) {
			const float *x = j == 0 ? k->xin[t] : k->act[t][j];
			int ret = itr_matmul(k, false, false, tail_rows(k, t, row0, nrows),
					     itr_lout(k, j), itr_lin(k, j), x, k->w[j], 0.0f,
					     k->act[t][j + 1]);

			if (ret < 0)
				return ret;
		}
	}
	for (int t = 0; t < n; t++) {
		int ret = itr_loss_grad(k, t, k->negt + (size_t)(row0 + t * k->mb) * lo,
					tail_rows(k, t, row0, nrows));

		if (ret < 0)
			return ret;
	}
	return 0;
}

/* DP: the backward of the micro-batches in slots [0, n) (rows row0 ..
 * nrows, forwards done, top gradients in act[slot][nl]) layer by layer:
 * each layer's weight gradients over all of them, then (last: the step's
 * last chunk) its buckets go to the communication thread, then the input
 * gradients, written over the layer's input (no longer needed; a slot's
 * first input buffer is unused). Every layer's gradient sums the
 * micro-batches in the step's order, as itr_backward() one micro-batch
 * after the other would, so the weights are the same bits. first: the
 * chunk starts the step. */
static int backward_chunk(struct itr_rank *k, int n, int row0, int nrows, bool first, bool last)
{
	int b = 0;

	for (int j = k->nl - 1; j >= 0; j--) {
		for (int t = 0; t < n; t++) {
			const float *x = j == 0 ? k->xin[t] : k->act[t][j];
			int ret = itr_matmul(k, true, false, itr_lin(k, j), itr_lout(k, j),
					     tail_rows(k, t, row0, nrows), x, k->act[t][j + 1],
					     first && t == 0 ? 0.0f : 1.0f, k->grad + k->goff[j]);

			if (ret < 0)
				return ret;
		}
		while (last && b < k->nbk && k->bk[b].close_at == j)
			b++;
		if (b > k->nclosed) {
			int ret = close_buckets(k, b);

			if (ret < 0)
				return ret;
		}
		for (int t = 0; t < n; t++) {
			int ret = itr_matmul(k, false, true, tail_rows(k, t, row0, nrows),
					     itr_lin(k, j), itr_lout(k, j), k->act[t][j + 1],
					     k->w[j], 0.0f, k->act[t][j]);

			if (ret < 0)
				return ret;
		}
		/* layers j and above are done with their weights */
		if (last && k->sharded) {
			int ret = shard_advance(k, false);

			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

/* One DP step over nrows samples, in chunks of the rank's slots (its
 * tail, dp.tail): each chunk's micro-batches forward layer by layer, then
 * backward layer by layer, so a layer's weights serve every micro-batch
 * of the chunk from cache (a step's speed hardly depends on the rank's
 * share of the batch); the last chunk is the tail, the chunks before it
 * share the rest near-equally (39 micro-batches, tail 16: 11, 12, 16). The
 * last chunk's layers close their gradient buckets as they finish, so the
 * all-reduce of the top layers' buckets starts while its lower layers
 * compute. Sharded: each bucket's part is updated once its reduce-scatter
 * is in, and all-gathered; the step ends when every all-gather is. */
int itr_dp_step(struct itr_rank *k, int nrows)
{
	int nmb = (nrows + k->mb - 1) / k->mb;
	int c = k->nslots < nmb ? k->nslots : nmb;
	/* the last chunk: c (the overlap trn_dp_tails planned); the rest in
	 * nk near-equal chunks of at most c, so no chunk is left short */
	int rest = nmb - c, nk = c > 0 ? (rest + c - 1) / c : 0;
	int ret = 0;

	k->nclosed = k->nrs = k->nag = 0;
	for (int b = 0; b < k->nbk; b++)
		k->bk[b].updated = false;
	for (int i = 0, q = 0, n; ret == 0 && i < nmb; i += n, q++) {
		n = q < nk ? rest / nk + (q >= nk - rest % nk) : c;
		ret = forward_chunk(k, n, i * k->mb, nrows);
		if (ret == 0)
			ret = backward_chunk(k, n, i * k->mb, nrows, i == 0, i + n == nmb);
	}
	if (ret == 0 && nmb == 0) {
		/* no samples here: contribute zeros */
		memset(k->hscratch, 0, k->hscratch_len * 4);
		if (k->host)
			memset(k->grad, 0, k->nparam * 4);
		else
			ret = k->ops->from_host(k->grad, k->hscratch, k->nparam * 4);
		if (ret == 0)
			ret = close_buckets(k, k->nbk);
	}
	if (k->sharded) {
		if (ret == 0)
			ret = shard_advance(k, true);
		for (int b = 0; b < k->nbk; b++) {
			int r1 = itr_wait_op(k, &k->bk[b].op, EV_RS);
			int r2 = itr_wait_op(k, &k->bk[b].ag, EV_AG);

			if (ret == 0)
				ret = r1 < 0 ? r1 : r2;
		}
		return ret;
	}
	for (int b = 0; b < k->nbk; b++) {
		int r = itr_wait_op(k, &k->bk[b].op, EV_ALLREDUCE);

		if (ret == 0)
			ret = r;
	}
	if (ret == 0)
		ret = itr_sgd_update(k);
	return ret;
}

/*
 * Pipeline: stage s of S runs its operations of a step in the order of
 * trn_pp_order() (1F1B or zero bubble), then its optimizer step. Slots
 * hold a micro-batch from its F to its last use (B in 1F1B, W in ZB),
 * numbered over the whole run so that the slots of two steps follow on.
 * Receives are queued one operation early, so the data lands while this
 * thread computes the operation before; on device memory, where the
 * communication thread runs one operation at a time, only when that
 * operation sends nothing (a receive would hold its send up). The FIFO
 * order of the queue stays the order of the program, which is the order
 * messages between two stages match in. Sends are queued and waited for
 * only before their buffer is reused. Message checksums are computed by
 * the communication thread (on device memory, of a copy it makes on the
 * host), off the compute path.
 */
static int pp_slot(const struct itr_rank *k, int step, int i)
{
	return (int)(((long)step * k->pp.micro_batches + i) % k->nslots);
}

static bool pp_sends(const struct itr_rank *k, const struct trn_pp_op *op)
{
	return (op->kind == TRN_PP_F && k->r < k->n - 1) || (op->kind == TRN_PP_B && k->r > 0);
}

static int post_send(struct itr_rank *k, struct itr_cop *op, float *buf, size_t count, int peer,
		     int tag, uint64_t *hsum)
{
	op->hash = true;
	op->hsum = hsum;
	op->tag = tag;
	return hand_off(k, op, COP_SEND, buf, count, peer);
}

/* Queue the receive operation op (of step step) needs, unless it is
 * queued. A product still queued may read the buffer it lands in (the
 * slot's last micro-batch). */
static int pp_post_recv(struct itr_rank *k, int step, const struct trn_pp_op *op)
{
	int s = k->r, slot = pp_slot(k, step, op->mb);
	struct itr_cop *r;
	float *buf;
	size_t cnt;
	int peer;

	if (op->kind == TRN_PP_F && s > 0) {
		r = &k->op_ract[slot];
		buf = k->act[slot][0];
		cnt = (size_t)k->mb * itr_lin(k, 0);
		peer = s - 1;
		r->hsum = &k->h_recv_fwd;
	} else if (op->kind == TRN_PP_B && s < k->n - 1) {
		r = &k->op_rgrad[slot];
		buf = k->dytop[slot];
		cnt = (size_t)k->mb * itr_lout(k, k->nl - 1);
		peer = s + 1;
		r->hsum = &k->h_recv_bwd;
	} else {
		return 0;
	}
	if (r->posted)
		return 0;
	r->hash = true;
	r->tag = op->mb;
	return hand_off(k, r, COP_RECV, buf, cnt, peer);
}

static int pp_fwd(struct itr_rank *k, int i)
{
	int s = k->r, S = k->n, slot = pp_slot(k, k->step, i), ret;
	size_t in_cnt = (size_t)k->mb * itr_lin(k, 0);
	size_t out_cnt = (size_t)k->mb * itr_lout(k, k->nl - 1);
	const float *in;
	uint64_t t0;

	ret = itr_wait_op(k, &k->op_fwd[slot], EV_SEND_ACT);
	if (ret < 0)
		return ret;
	if (s > 0) {
		ret = itr_wait_op(k, &k->op_ract[slot], EV_RECV_ACT);
		if (ret < 0)
			return ret;
		in = k->act[slot][0];
	} else {
		in = k->x + (size_t)i * in_cnt;
	}
	t0 = ice_now_ns();
	ret = itr_forward(k, slot, in, k->mb);
	if (ret == 0)
		ret = s == S - 1 ? itr_loss_grad(k, slot, k->negt + (size_t)i * out_cnt, k->mb)
				 : itr_mm_wait(k); /* its output goes out now */
	itr_trace_add(k, EV_FWD, i, t0, ice_now_ns(), 0, 0);
	if (ret < 0 || s == S - 1)
		return ret;
	return post_send(k, &k->op_fwd[slot], k->act[slot][k->nl], out_cnt, s + 1, i,
			 &k->h_sent_fwd);
}

/* B: in ZB the input gradients only, in 1F1B the whole backward. */
static int pp_bwd(struct itr_rank *k, int i)
{
	int s = k->r, S = k->n, slot = pp_slot(k, k->step, i), ret;
	size_t in_cnt = (size_t)k->mb * itr_lin(k, 0);
	const float *g = k->act[slot][k->nl];
	float *dx = s > 0 ? k->gsend[slot] : NULL;
	uint64_t t0;

	if (s < S - 1) {
		ret = itr_wait_op(k, &k->op_rgrad[slot], EV_RECV_GRAD);
		if (ret < 0)
			return ret;
		g = k->dytop[slot];
	}
	ret = itr_wait_op(k, &k->op_bwd[slot], EV_SEND_GRAD);
	if (ret < 0)
		return ret;
	t0 = ice_now_ns();
	if (k->pp.sched == TRN_PP_ZB)
		ret = itr_backward_input(k, slot, g, k->mb, dx);
	else
		ret = itr_backward(k, slot, g, k->mb, dx, i == 0 ? 0.0f : 1.0f);
	if (ret == 0 && s > 0)
		ret = itr_mm_wait(k); /* its input gradient goes out now */
	itr_trace_add(k, EV_BWD, i, t0, ice_now_ns(), 0, 0);
	if (ret < 0 || s == 0)
		return ret;
	return post_send(k, &k->op_bwd[slot], k->gsend[slot], in_cnt, s - 1, i, &k->h_sent_bwd);
}

/* W (ZB): the weight gradients of micro-batch i, in micro-batch order. */
static int pp_wgt(struct itr_rank *k, int i)
{
	uint64_t t0 = ice_now_ns();
	int ret = itr_backward_weights(k, pp_slot(k, k->step, i), k->mb, i == 0 ? 0.0f : 1.0f);

	itr_trace_add(k, EV_WGT, i, t0, ice_now_ns(), 0, 0);
	return ret;
}

/* One step; more: another follows (its first receive may be queued). */
int itr_pp_step(struct itr_rank *k, bool more)
{
	int ret = 0;

	for (int c = 0; c < k->pp_nops && ret == 0; c++) {
		const struct trn_pp_op *op = &k->pp_ops[c];

		ret = pp_post_recv(k, k->step, op);
		if (ret == 0 && (k->ct.async || !pp_sends(k, op))) {
			if (c + 1 < k->pp_nops)
				ret = pp_post_recv(k, k->step, &k->pp_ops[c + 1]);
			else if (more)
				ret = pp_post_recv(k, k->step + 1, &k->pp_ops[0]);
		}
		if (ret < 0)
			break;
		if (op->kind == TRN_PP_F)
			ret = pp_fwd(k, op->mb);
		else if (op->kind == TRN_PP_B)
			ret = pp_bwd(k, op->mb);
		else
			ret = pp_wgt(k, op->mb);
	}
	for (int s = 0; s < k->nslots; s++) {
		int r1 = itr_wait_op(k, &k->op_fwd[s], EV_SEND_ACT);
		int r2 = itr_wait_op(k, &k->op_bwd[s], EV_SEND_GRAD);

		if (ret == 0)
			ret = r1 < 0 ? r1 : r2;
	}
	if (ret == 0)
		ret = itr_sgd_update(k);
	return ret;
}
