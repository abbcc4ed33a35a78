// SPDX-License-Identifier: Apache-2.0
/*
 * ice-train: a rank's compute. Real fp32 matrix multiplies on the rank's
 * memory kind (dev_mem_ops->sgemm; on a device queued, sgemm_async, and
 * waited for at hand-offs): forward, the loss gradient, backward (whole,
 * or ZB's B and W), the SGD update; on an emulated device padded to the
 * profile's speed. And what every part uses: the clock, FNV-1a, host
 * views of device buffers, --trace events.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ice_log.h"
#include "ice_time.h"
#include "ice_train_internal.h"

/* ---- helpers --------------------------------------------------------------- */

uint64_t itr_fnv1a(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Host memory for a device buffer's bytes: the buffer itself on host
 * memory, else a copy in hscratch. */
const float *itr_host_view(struct itr_rank *k, const float *buf, size_t count)
{
	if (k->host)
		return buf;
	if (count > k->hscratch_len || k->ops->to_host(k->hscratch, buf, count * 4) < 0)
		return NULL;
	return k->hscratch;
}

void itr_trace_add(struct itr_rank *k, enum itr_ev_kind kind, int mb, uint64_t t0, uint64_t t1,
		   uint64_t t2, uint64_t t3)
{
	struct itr_ev *e;

	if (k->job->trace[0] == '\0')
		return;
	if (k->nev == k->evcap) {
		int cap = k->evcap ? 2 * k->evcap : 4096;
		struct itr_ev *n = realloc(k->ev, (size_t)cap * sizeof(*n));

		if (n == NULL)
			return; /* the trace ends here; training goes on */
		k->ev = n;
		k->evcap = cap;
	}
	e = &k->ev[k->nev++];
	e->kind = kind;
	e->step = k->step;
	e->mb = mb;
	e->t[0] = t0;
	e->t[1] = t1;
	e->t[2] = t2;
	e->t[3] = t3;
}

/* ---- compute --------------------------------------------------------------- */

/* C[m x n] = op(A) op(B) + beta C on the rank's device, timed; on an
 * emulated device padded to the profile's speed. A device rank queues its
 * products (sgemm_async), so they run back to back on the device; the
 * time to launch one is counted here, the device's time at itr_mm_wait. */
int itr_matmul(struct itr_rank *k, bool ta, bool tb, int m, int n, int kk, const float *a,
	       const float *b, float beta, float *c)
{
	double t0 = ice_now_s(), comm0;
	int ret;

	/* an emulated device's time is the device's too (the watchdog) */
	itr_watch_enter("sgemm");
	if (k->prof->emulated)
		trn_emu_begin(&k->emu);
	if (k->host) {
		ret = k->ops->sgemm(ta, tb, m, n, kk, 1.0f, a, b, beta, c);
	} else {
		ret = k->ops->sgemm_async(ta, tb, m, n, kk, 1.0f, a, b, beta, c);
		k->mm_pending = true;
	}
	if (k->prof->emulated)
		trn_emu_end(&k->emu, 2.0 * m * n * kk);
	itr_watch_leave();
	/* inline communication: the peers' packets. Its CPU is the
	 * communication's; the rest of its time, when the thread was off the
	 * core (a CPU quota's throttling takes effect at a system call, so
	 * it falls mostly here), is the product's, as without the polls */
	comm0 = k->ct.cpu_s;
	itr_cthread_poll(&k->ct);
	t0 = ice_now_s() - t0 - (k->ct.cpu_s - comm0);
	k->t_compute += t0;
	k->mm_s += t0;
	k->mm_flops += 2.0 * m * n * kk;
	if (ret < 0)
		ice_err(ICE_SUB_BENCH, "rank %d: sgemm %dx%dx%d failed: %s", k->r, m, n, kk,
			strerror(-ret));
	return ret;
}

/* Wait for the products this rank queued, the wait counted as their time:
 * before the communication thread is handed a buffer (it reads or writes
 * on its own stream) and before other work whose time is its own. Only
 * the compute thread calls it. 0 or -errno. */
int itr_mm_wait(struct itr_rank *k)
{
	double t0;
	int ret;

	if (!k->mm_pending)
		return 0;
	t0 = ice_now_s();
	ret = k->ops->compute_wait();
	t0 = ice_now_s() - t0;
	k->mm_pending = false;
	k->t_compute += t0;
	k->mm_s += t0;
	if (ret < 0)
		ice_err(ICE_SUB_BENCH, "rank %d: a queued sgemm failed: %s", k->r, strerror(-ret));
	return ret;
}

int itr_forward(struct itr_rank *k, int slot, const float *in, int rows)
{
	k->xin[slot] = in;
	for (int j = 0; j < k->nl; j++) {
		const float *x = j == 0 ? in : k->act[slot][j];
		int ret = itr_matmul(k, false, false, rows, itr_lout(k, j), itr_lin(k, j), x,
				     k->w[j], 0.0f, k->act[slot][j + 1]);

		if (ret < 0)
			return ret;
	}
	return 0;
}

/* The top of the model: dY = Y - target in place of Y, and the loss. */
int itr_loss_grad(struct itr_rank *k, int slot, const float *negt, int rows)
{
	float *y = k->act[slot][k->nl];
	size_t cnt = (size_t)rows * (size_t)itr_lout(k, k->nl - 1);
	double t0, l = 0;
	const float *h;
	int ret = itr_mm_wait(k);

	if (ret < 0)
		return ret;
	t0 = ice_now_s();
	ret = k->ops->reduce(y, negt, cnt, DEV_FLOAT32, DEV_SUM);
	if (ret < 0)
		return ret;
	h = itr_host_view(k, y, cnt);
	if (h == NULL)
		return -EIO;
	for (size_t i = 0; i < cnt; i++)
		l += 0.5 * (double)h[i] * (double)h[i];
	k->loss += l;
	k->t_compute += ice_now_s() - t0;
	return 0;
}

/* Backward of one micro-batch from gradient g (rows x out of the last local
 * layer). dx: where the input gradient of local layer 0 goes (NULL: a
 * scratch buffer). beta: 0 for the first micro-batch of a step, else 1. */
int itr_backward(struct itr_rank *k, int slot, const float *g, int rows, float *dx, float beta)
{
	int t = 0;

	for (int j = k->nl - 1; j >= 0; j--) {
		const float *x = j == 0 ? k->xin[slot] : k->act[slot][j];
		float *dst = (j == 0 && dx != NULL) ? dx : k->tmp[t];
		int ret;

		ret = itr_matmul(k, true, false, itr_lin(k, j), itr_lout(k, j), rows, x, g, beta,
				 k->grad + k->goff[j]);
		if (ret < 0)
			return ret;
		ret = itr_matmul(k, false, true, rows, itr_lin(k, j), itr_lout(k, j), g, k->w[j],
				 0.0f, dst);
		if (ret < 0)
			return ret;
		g = dst;
		t ^= 1;
	}
	return 0;
}

/* ZB's B of one micro-batch: only the input gradients dX = dY W^T, from
 * the top gradient g down through every local layer; each layer's output
 * gradient is kept (dy, dtop) for the W. dx: where the input gradient of
 * local layer 0 goes (NULL: a scratch buffer). */
int itr_backward_input(struct itr_rank *k, int slot, const float *g, int rows, float *dx)
{
	k->dtop[slot] = g;
	for (int j = k->nl - 1; j >= 0; j--) {
		float *dst = j > 0 ? k->dy[slot][j - 1] : (dx != NULL ? dx : k->tmp[0]);
		int ret = itr_matmul(k, false, true, rows, itr_lin(k, j), itr_lout(k, j), g,
				     k->w[j], 0.0f, dst);

		if (ret < 0)
			return ret;
		g = dst;
	}
	return 0;
}

/* ZB's W of one micro-batch: dW += X^T dY of every local layer, from the
 * inputs kept by F and the output gradients kept by B. beta: 0 for the
 * first micro-batch of a step, else 1. */
int itr_backward_weights(struct itr_rank *k, int slot, int rows, float beta)
{
	for (int j = k->nl - 1; j >= 0; j--) {
		const float *x = j == 0 ? k->xin[slot] : k->act[slot][j];
		const float *g = j == k->nl - 1 ? k->dtop[slot] : k->dy[slot][j];
		int ret = itr_matmul(k, true, false, itr_lin(k, j), itr_lout(k, j), rows, x, g,
				     beta, k->grad + k->goff[j]);

		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Weights [off, off + cnt) (grad's layout) -= lr * g / global_batch
 * (dev_sgd: the same bits on every rank and kind, so replicas stay
 * identical). Where the fp32 master lives: on a device rank in the
 * device's memory (dm: its part's master apart from the weights it
 * computes on, which are gathered in bf16; NULL: those weights), updated
 * by the device from its gradient; else the host master copy, from the
 * host's gradient (gh). Device time: an emulated device moves
 * TRN_SGD_TRAFFIC bytes per parameter byte at its mem_gbps. */
int itr_sgd_range(struct itr_rank *k, size_t off, size_t cnt, float *dm)
{
	float scale = (float)(k->job->lr / k->m->global_batch);
	int ret = itr_mm_wait(k);
	double t0 = ice_now_s();

	if (ret < 0)
		return ret;
	if (itr_dev_update(k)) {
		ret = k->ops->sgd(dm != NULL ? dm : k->wblk + off, k->grad + off, scale, cnt);
	} else {
		itr_watch_enter("sgd");
		if (k->prof->emulated)
			trn_emu_begin(&k->emu);
		dev_sgd(k->wmblk + off, k->gh + off, scale, cnt);
		if (k->prof->emulated)
			trn_emu_end_bytes(&k->emu, TRN_SGD_TRAFFIC * 4.0 * (double)cnt);
		itr_watch_leave();
	}
	k->t_update += ice_now_s() - t0;
	return ret;
}

/* The whole optimizer step on this rank's weights (PP, replicated DP): a
 * device rank's gradient is on the device (reduced there, or widened
 * there from bf16 by the communication thread). */
int itr_sgd_update(struct itr_rank *k)
{
	uint64_t t0 = ice_now_ns();
	int ret = itr_sgd_range(k, 0, k->nparam, NULL);

	itr_trace_add(k, EV_UPD, -1, t0, ice_now_ns(), 0, 0);
	return ret;
}
