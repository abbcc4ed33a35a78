// SPDX-License-Identifier: Apache-2.0
/*
 * One rank of an ice-train job: real fp32 matrix multiplies on the rank's
 * memory kind (dev_mem_ops->sgemm), real traffic over the transport.
 *
 * Two threads per rank. The compute thread runs forward, backward and the
 * optimizer. The communication thread owns the communicator while training
 * runs (every tp_* call comes from it, as tp.h requires): it takes
 * operations (all-reduce, reduce-scatter, all-gather, send, receive) from
 * a FIFO queue. On host memory
 * a send or receive is only posted (tp_dev_isend / tp_dev_irecv), so sends
 * and receives to both neighbours progress together and complete in any
 * order; an all-reduce, and any operation on device memory, runs to its end
 * before the next is taken. When the queue is empty the thread keeps
 * driving the engine: messages in flight move, and peers' SENDs are
 * acknowledged while this rank computes. Before and after training the
 * compute thread uses the communicator itself (calibration, checks): the
 * thread's creation and join hand it over.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "ice_log.h"
#include "ice_time.h"
#include "ice_train.h"
#include "tp.h"
#include "tp_dev.h"
#include "dev.h"

/* The idle communication thread waits in the engine this long at most; a
 * packet, a transport timer or a queued operation (tp_engine_wake) ends
 * the wait earlier, so this only bounds how often an idle thread wakes. */
#define ITR_IDLE_WAIT_NS (5 * ICE_NSEC_PER_MSEC)

/* ---- communication thread ------------------------------------------------ */

enum cop_kind {
	COP_ALLREDUCE,
	COP_SEND,
	COP_RECV,
	COP_RS, /* a bucket's gradient reduce-scattered into the owners' shards */
	COP_AG, /* a bucket's updated shards all-gathered */
};

/* One queued operation; the poster owns it and waits for done. */
struct cop {
	enum cop_kind kind;
	float *buf;
	size_t count;
	int peer;
	float *hbuf;	      /* RS, AG: buf's host copy (buf itself on host memory) */
	const size_t *counts; /* RS, AG: every rank's shard of buf */
	size_t mine;	      /* RS, AG: where this rank's shard starts in buf */
	int ret;
	int tag;	/* the micro-batch, for the trace */
	bool hash;	/* the communication thread hashes buf (host memory): a
			 * send's before it goes, a receive's once it is in */
	uint64_t hval;	/* FNV-1a of buf's bytes, as sent or received */
	uint64_t *hsum; /* the compute thread adds hval here when it waits */
	bool done;
	bool posted;			 /* posted and not yet waited for */
	uint64_t t_post, t_start, t_end; /* queued, taken by the thread, finished */
	struct cop *next;
	struct tp_req req;    /* a send or receive in flight */
	struct cop *fly_next; /* the thread's in-flight list */
};

struct cthread {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv_done;
	struct cop *head, *tail;
	bool quit;
	int err; /* first failure; later operations fail with it */
	struct tp_dev_comm *d;
	struct tp_comm *c;
	struct tp_engine *e;
	bool async;	 /* host memory: sends and receives are posted, not run */
	struct cop *fly; /* posted sends and receives, not complete (this thread's) */
};

static uint64_t fnv1a(uint64_t h, const void *p, size_t len);
#define FNV_INIT 0xcbf29ce484222325ull

static int cop_run(struct cthread *t, struct cop *op)
{
	switch (op->kind) {
	case COP_ALLREDUCE:
		return tp_dev_allreduce(t->d, op->buf, op->buf, op->count, DEV_FLOAT32, DEV_SUM,
					TP_STAGE_AUTO);
	case COP_SEND:
		return tp_dev_sendrecv(t->d, op->buf, op->peer, NULL, -1, op->count, DEV_FLOAT32);
	case COP_RECV:
		return tp_dev_sendrecv(t->d, NULL, -1, op->buf, op->peer, op->count, DEV_FLOAT32);
	case COP_RS:
		/* the gradient to host memory (device ranks), reduced in
		 * place there: this rank's shard ends at hbuf + mine */
		if (op->hbuf != op->buf) {
			int ret = tp_dev_comm_ops(t->d)->to_host(op->hbuf, op->buf, op->count * 4);

			if (ret < 0)
				return ret;
		}
		return tp_reduce_scatter_v(t->c, op->hbuf, op->hbuf + op->mine, op->counts,
					   DEV_FLOAT32, DEV_SUM);
	case COP_AG: {
		/* the owners' updated weights on the host master copy, then
		 * to the device */
		int ret = tp_allgather_v(t->c, op->hbuf + op->mine, op->hbuf, op->counts,
					 DEV_FLOAT32);

		if (ret == 0 && op->hbuf != op->buf)
			ret = tp_dev_comm_ops(t->d)->from_host(op->buf, op->hbuf, op->count * 4);
		return ret;
	}
	}
	return -EINVAL;
}

/* The thread's end of an operation: hash a received buffer, hand it back. */
static void cop_finish(struct cthread *t, struct cop *op, int ret)
{
	if (ret == 0 && op->hash && op->kind == COP_RECV)
		op->hval = fnv1a(FNV_INIT, op->buf, op->count * 4);
	op->t_end = ice_now_ns();
	pthread_mutex_lock(&t->mu);
	if (ret < 0 && t->err == 0)
		t->err = ret;
	op->ret = ret;
	op->done = true;
	pthread_cond_broadcast(&t->cv_done);
	pthread_mutex_unlock(&t->mu);
}

/* Hand back the in-flight operations that completed (all of them, failed,
 * when the engine did: ret < 0). */
static void cthread_retire(struct cthread *t, int ret)
{
	struct cop **pp = &t->fly;

	while (*pp != NULL) {
		struct cop *op = *pp;

		if (ret >= 0 && op->req.pending > 0) {
			pp = &op->fly_next;
			continue;
		}
		*pp = op->fly_next;
		cop_finish(t, op, ret < 0 ? ret : op->req.status);
	}
}

/* Take op off the queue and start it: a send or receive on host memory is
 * posted and left in flight; anything else runs to its end here (in-flight
 * messages progress meanwhile, as the engine is the same). */
static void cthread_run(struct cthread *t, struct cop *op, int ret)
{
	op->t_start = ice_now_ns();
	if (ret == 0 && op->hash && op->kind == COP_SEND)
		op->hval = fnv1a(FNV_INIT, op->buf, op->count * 4);
	if (ret == 0 && t->async && (op->kind == COP_SEND || op->kind == COP_RECV)) {
		memset(&op->req, 0, sizeof(op->req));
		ret = op->kind == COP_SEND ? tp_dev_isend(t->d, op->buf, op->count, DEV_FLOAT32,
							  op->peer, &op->req)
					   : tp_dev_irecv(t->d, op->buf, op->count, DEV_FLOAT32,
							  op->peer, &op->req);
		if (ret == 0) {
			op->fly_next = t->fly;
			t->fly = op;
			return;
		}
	} else if (ret == 0) {
		ret = cop_run(t, op);
	}
	cop_finish(t, op, ret);
}

static void *cthread_main(void *arg)
{
	struct cthread *t = arg;
	int ret;

	pthread_mutex_lock(&t->mu);
	for (;;) {
		struct cop *op = t->head;

		if (op != NULL) {
			t->head = op->next;
			if (t->head == NULL)
				t->tail = NULL;
			ret = t->err;
			pthread_mutex_unlock(&t->mu);
			cthread_run(t, op, ret);
			cthread_retire(t, 0);
			pthread_mutex_lock(&t->mu);
			continue;
		}
		if (t->quit && t->fly == NULL)
			break;
		/* nothing queued: move what is in flight, and keep
		 * acknowledging the peers */
		pthread_mutex_unlock(&t->mu);
		ret = tp_comm_progress(t->c, ITR_IDLE_WAIT_NS);
		cthread_retire(t, ret);
		pthread_mutex_lock(&t->mu);
		if (ret < 0 && t->err == 0)
			t->err = ret;
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

static int cthread_start(struct cthread *t, struct tp_dev_comm *d)
{
	int ret;

	memset(t, 0, sizeof(*t));
	t->d = d;
	t->c = tp_dev_comm_base(d);
	t->e = tp_comm_engine(t->c);
	t->async = tp_dev_comm_ops(d)->kind == DEV_MEM_HOST;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv_done, NULL);
	ret = pthread_create(&t->th, NULL, cthread_main, t);
	if (ret != 0) {
		pthread_cond_destroy(&t->cv_done);
		pthread_mutex_destroy(&t->mu);
		return -ret;
	}
	return 0;
}

/* Wait for the queue to drain and the thread to end; returns its error. */
static int cthread_stop(struct cthread *t)
{
	pthread_mutex_lock(&t->mu);
	t->quit = true;
	pthread_mutex_unlock(&t->mu);
	tp_engine_wake(t->e);
	pthread_join(t->th, NULL);
	pthread_cond_destroy(&t->cv_done);
	pthread_mutex_destroy(&t->mu);
	return t->err;
}

static void cop_post(struct cthread *t, struct cop *op, enum cop_kind kind, float *buf,
		     size_t count, int peer)
{
	op->kind = kind;
	op->buf = buf;
	op->count = count;
	op->peer = peer;
	op->ret = 0;
	op->done = false;
	op->posted = true;
	op->next = NULL;
	op->t_post = ice_now_ns();
	op->t_start = op->t_end = 0;
	pthread_mutex_lock(&t->mu);
	if (t->tail != NULL)
		t->tail->next = op;
	else
		t->head = op;
	t->tail = op;
	pthread_mutex_unlock(&t->mu);
	tp_engine_wake(t->e); /* the communication thread may be waiting for packets */
}

/* Is op (posted) done? */
static bool cop_done(struct cthread *t, const struct cop *op)
{
	bool done;

	pthread_mutex_lock(&t->mu);
	done = op->done;
	pthread_mutex_unlock(&t->mu);
	return done;
}

/* Wait for op; *blocked: it was not done yet. */
static int cop_wait(struct cthread *t, struct cop *op, bool *blocked)
{
	int ret;

	*blocked = false;
	if (!op->posted)
		return 0;
	pthread_mutex_lock(&t->mu);
	*blocked = !op->done;
	while (!op->done)
		pthread_cond_wait(&t->cv_done, &t->mu);
	ret = op->ret;
	pthread_mutex_unlock(&t->mu);
	op->posted = false;
	return ret;
}

/* ---- rank state ---------------------------------------------------------- */

/* One --trace event: a compute span (t0..t1) or an operation (queued t0,
 * taken by the communication thread t1, done t2, compute thread back t3). */
enum itr_ev_kind {
	EV_FWD,
	EV_BWD,
	EV_RECV_ACT,
	EV_RECV_GRAD,
	EV_SEND_ACT,
	EV_SEND_GRAD,
	EV_ALLREDUCE,
	EV_WGT,
	EV_RS,
	EV_AG,
	EV_UPD,
};

static const char *const ev_name[] = {
	"fwd",	     "bwd", "recv_act",	      "recv_grad", "send_act", "send_grad",
	"allreduce", "wgt", "reduce_scatter", "allgather", "update"};

struct itr_ev {
	enum itr_ev_kind kind;
	int step, mb;
	uint64_t t[4];
};

struct bucket {
	int close_at; /* local layer whose gradient completes the bucket */
	size_t off, count;
	struct cop op;		       /* the all-reduce, or (sharded) the reduce-scatter */
	struct cop ag;		       /* sharded: the all-gather of the updated weights */
	size_t shard[TRN_MAX_DEVICES]; /* sharded: every rank's part */
	size_t mine;		       /* sharded: where this rank's part starts */
	bool updated;		       /* sharded: this step's shard update done */
};

struct rank {
	const struct itr_job *job;
	const struct trn_model *m;
	struct itr_result *res;
	struct itr_rank_result *me;
	int r, n;
	const struct trn_profile *prof;
	const struct dev_mem_ops *ops;
	bool host;    /* host memory: the weights are their own master copy */
	bool sharded; /* DP with a sharded optimizer step (trn_optim) */
	struct trn_emu emu;
	struct tp_comm *c;
	struct tp_dev_comm *d;
	struct cthread ct;

	int l0, nl;	     /* global layers [l0, l0 + nl) */
	int mb;		     /* rows per micro-batch */
	float **w;	     /* weights of local layer j, in the rank's memory (in wblk) */
	float **wm;	     /* host master copy (== w on host memory; in wmblk) */
	float *wblk, *wmblk; /* all weights, laid out as grad (goff) */
	float *grad;
	float *gh; /* host copy of grad for the update (== grad on host memory) */
	size_t *goff;
	size_t nparam;
	struct bucket *bk;
	int nbk;
	int nclosed, nrs, nag; /* DP, this step: buckets complete, reduce-scatters
				* (or all-reduces) and all-gathers posted */

	int nslots;
	float ***act;	    /* act[slot][j]: input of local layer j (j >= 1), output at nl */
	const float **xin;  /* per slot: input of local layer 0 */
	float **dytop;	    /* per slot: gradient received from the next stage */
	float **gsend;	    /* per slot: input gradient sent to the previous stage */
	float ***dy;	    /* ZB: dy[slot][j], gradient at the output of local layer
			     * j < nl - 1, kept from B for W */
	const float **dtop; /* ZB, per slot: the gradient at the output of the
			     * last local layer (dytop or, last stage, act) */
	float *tmp[2];
	struct cop *op_fwd, *op_bwd;	/* per slot: sends in flight */
	struct cop *op_ract, *op_rgrad; /* per slot: receives (queued ahead) */
	struct trn_pp_plan pp;		/* PP: the split and schedule used */
	struct trn_pp_op *pp_ops;	/* PP: this stage's operations of a step */
	int pp_nops;
	float *x, *negt; /* input rows, negated target rows */
	float *hscratch; /* host memory for reading device buffers */
	size_t hscratch_len;

	struct trn_dp_plan dp; /* the split used (the same on every rank) */
	double t_compute, t_exposed, t_update;
	double t_wait_act, t_wait_grad, t_wait_send; /* PP: parts of t_exposed */
	double t_handoff;			     /* PP: thread hand-offs inside the waits */
	struct itr_ev *ev;			     /* --trace: events of this rank */
	int nev, evcap, step;
	double loss;
	uint64_t h_sent_fwd, h_recv_fwd, h_sent_bwd, h_recv_bwd;
};

static double now_s(void)
{
	return (double)ice_now_ns() * 1e-9;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

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

/* Host memory for a device buffer's bytes: the buffer itself on host
 * memory, else a copy in hscratch. */
static const float *host_view(struct rank *k, const float *buf, size_t count)
{
	if (k->host)
		return buf;
	if (count > k->hscratch_len || k->ops->to_host(k->hscratch, buf, count * 4) < 0)
		return NULL;
	return k->hscratch;
}

static uint64_t buf_hash(struct rank *k, const float *buf, size_t count)
{
	const float *h = host_view(k, buf, count);

	return h != NULL ? fnv1a(FNV_INIT, h, count * 4) : 0;
}

static void trace_add(struct rank *k, enum itr_ev_kind kind, int mb, uint64_t t0, uint64_t t1,
		      uint64_t t2, uint64_t t3);

/* ---- compute --------------------------------------------------------------- */

/* C[m x n] = op(A) op(B) + beta C on the rank's device, timed; on an
 * emulated device padded to the profile's speed. */
static int matmul(struct rank *k, bool ta, bool tb, int m, int n, int kk, const float *a,
		  const float *b, float beta, float *c)
{
	double t0 = now_s();
	int ret;

	if (k->prof->emulated)
		trn_emu_begin(&k->emu);
	ret = k->ops->sgemm(ta, tb, m, n, kk, 1.0f, a, b, beta, c);
	if (k->prof->emulated)
		trn_emu_end(&k->emu, 2.0 * m * n * kk);
	k->t_compute += now_s() - t0;
	if (ret < 0)
		ice_err(ICE_SUB_BENCH, "rank %d: sgemm %dx%dx%d failed: %s", k->r, m, n, kk,
			strerror(-ret));
	return ret;
}

static int lin(const struct rank *k, int j)
{
	return k->m->in[k->l0 + j];
}

static int lout(const struct rank *k, int j)
{
	return k->m->out[k->l0 + j];
}

static int forward(struct rank *k, int slot, const float *in, int rows)
{
	k->xin[slot] = in;
	for (int j = 0; j < k->nl; j++) {
		const float *x = j == 0 ? in : k->act[slot][j];
		int ret = matmul(k, false, false, rows, lout(k, j), lin(k, j), x, k->w[j], 0.0f,
				 k->act[slot][j + 1]);

		if (ret < 0)
			return ret;
	}
	return 0;
}

/* The top of the model: dY = Y - target in place of Y, and the loss. */
static int loss_grad(struct rank *k, int slot, const float *negt, int rows)
{
	float *y = k->act[slot][k->nl];
	size_t cnt = (size_t)rows * (size_t)lout(k, k->nl - 1);
	double t0 = now_s(), l = 0;
	const float *h;
	int ret;

	ret = k->ops->reduce(y, negt, cnt, DEV_FLOAT32, DEV_SUM);
	if (ret < 0)
		return ret;
	h = host_view(k, y, cnt);
	if (h == NULL)
		return -EIO;
	for (size_t i = 0; i < cnt; i++)
		l += 0.5 * (double)h[i] * (double)h[i];
	k->loss += l;
	k->t_compute += now_s() - t0;
	return 0;
}

/* Backward of one micro-batch from gradient g (rows x out of the last local
 * layer). dx: where the input gradient of local layer 0 goes (NULL: a
 * scratch buffer). beta: 0 for the first micro-batch of a step, else 1. */
static int backward(struct rank *k, int slot, const float *g, int rows, float *dx, float beta)
{
	int t = 0;

	for (int j = k->nl - 1; j >= 0; j--) {
		const float *x = j == 0 ? k->xin[slot] : k->act[slot][j];
		float *dst = (j == 0 && dx != NULL) ? dx : k->tmp[t];
		int ret;

		ret = matmul(k, true, false, lin(k, j), lout(k, j), rows, x, g, beta,
			     k->grad + k->goff[j]);
		if (ret < 0)
			return ret;
		ret = matmul(k, false, true, rows, lin(k, j), lout(k, j), g, k->w[j], 0.0f, dst);
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
static int backward_input(struct rank *k, int slot, const float *g, int rows, float *dx)
{
	k->dtop[slot] = g;
	for (int j = k->nl - 1; j >= 0; j--) {
		float *dst = j > 0 ? k->dy[slot][j - 1] : (dx != NULL ? dx : k->tmp[0]);
		int ret =
			matmul(k, false, true, rows, lin(k, j), lout(k, j), g, k->w[j], 0.0f, dst);

		if (ret < 0)
			return ret;
		g = dst;
	}
	return 0;
}

/* ZB's W of one micro-batch: dW += X^T dY of every local layer, from the
 * inputs kept by F and the output gradients kept by B. beta: 0 for the
 * first micro-batch of a step, else 1. */
static int backward_weights(struct rank *k, int slot, int rows, float beta)
{
	for (int j = k->nl - 1; j >= 0; j--) {
		const float *x = j == 0 ? k->xin[slot] : k->act[slot][j];
		const float *g = j == k->nl - 1 ? k->dtop[slot] : k->dy[slot][j];
		int ret = matmul(k, true, false, lin(k, j), lout(k, j), rows, x, g, beta,
				 k->grad + k->goff[j]);

		if (ret < 0)
			return ret;
	}
	return 0;
}

/* Weights [off, off + cnt) (grad's layout) -= lr * g / global_batch, g the
 * gradient of that range in host memory, on the host master copy (the
 * same arithmetic on every rank, so replicas stay bit-identical); to_dev:
 * then copy the range to the device. Device time: an emulated device
 * moves TRN_SGD_TRAFFIC bytes per parameter byte at its mem_gbps. */
static int sgd_range(struct rank *k, const float *g, size_t off, size_t cnt, bool to_dev)
{
	float scale = (float)(k->job->lr / k->m->global_batch);
	float *w = k->wmblk + off;
	double t0 = now_s();
	int ret = 0;

	if (k->prof->emulated)
		trn_emu_begin(&k->emu);
	for (size_t i = 0; i < cnt; i++)
		w[i] -= scale * g[i];
	if (k->prof->emulated)
		trn_emu_end_bytes(&k->emu, TRN_SGD_TRAFFIC * 4.0 * (double)cnt);
	if (to_dev && !k->host)
		ret = k->ops->from_host(k->wblk + off, w, cnt * 4);
	k->t_update += now_s() - t0;
	return ret;
}

/* The whole optimizer step on this rank's weights (PP, replicated DP). */
static int sgd_update(struct rank *k)
{
	uint64_t t0 = ice_now_ns();
	int ret = 0;

	if (!k->host)
		ret = k->ops->to_host(k->gh, k->grad, k->nparam * 4);
	if (ret == 0)
		ret = sgd_range(k, k->gh, 0, k->nparam, true);
	trace_add(k, EV_UPD, -1, t0, ice_now_ns(), 0, 0);
	return ret;
}

static void trace_add(struct rank *k, enum itr_ev_kind kind, int mb, uint64_t t0, uint64_t t1,
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

/* Wait for op (of kind, for the trace and the figures). The hand-off is
 * the part of the wait spent between the threads rather than on the wire:
 * queued -> taken by the communication thread, done -> this thread back. */
static int wait_op(struct rank *k, struct cop *op, enum itr_ev_kind kind)
{
	uint64_t t0, t1, h = 0;
	bool blocked;
	double w;
	int ret;

	if (!op->posted)
		return 0;
	t0 = ice_now_ns();
	ret = cop_wait(&k->ct, op, &blocked);
	t1 = ice_now_ns();
	if (blocked)
		trn_emu_idle(&k->emu); /* the device waited for the data too */
	if (op->hsum != NULL) {
		/* device memory: the receive is hashed here (a send was at
		 * its post) */
		if (!op->hash && op->kind == COP_RECV)
			op->hval = buf_hash(k, op->buf, op->count);
		*op->hsum += op->hval;
		op->hsum = NULL;
	}
	w = (double)(t1 - t0) * 1e-9;
	k->t_exposed += w;
	if (kind == EV_RECV_ACT)
		k->t_wait_act += w;
	else if (kind == EV_RECV_GRAD)
		k->t_wait_grad += w;
	else if (kind == EV_SEND_ACT || kind == EV_SEND_GRAD)
		k->t_wait_send += w;
	if (op->t_start > t0)
		h += op->t_start - (op->t_post > t0 ? op->t_post : t0);
	if (op->t_end > t0)
		h += t1 - op->t_end;
	k->t_handoff += (double)h * 1e-9;
	trace_add(k, kind, op->tag, op->t_post, op->t_start, op->t_end, t1);
	return ret;
}

/* ---- setup ------------------------------------------------------------------ */

static void *dev_alloc(struct rank *k, size_t bytes)
{
	void *p = k->ops->alloc(bytes ? bytes : 4);

	if (p == NULL)
		ice_err(ICE_SUB_BENCH, "rank %d: cannot allocate %zu bytes of %s memory", k->r,
			bytes, k->ops->name);
	return p;
}

/* Copy host rows into a new device buffer. */
static float *dev_from(struct rank *k, const float *h, size_t count)
{
	float *p = dev_alloc(k, count * 4);

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

static int max_feat(const struct trn_model *m)
{
	int f = 1;

	for (int l = 0; l < m->nlayers; l++) {
		f = m->in[l] > f ? m->in[l] : f;
		f = m->out[l] > f ? m->out[l] : f;
	}
	return f;
}

/* Weights of layers [l0, l0+nl) from the seed (the same on every rank),
 * weights and gradients in one block each, in reverse layer order, DP
 * buckets (and, sharded, every rank's part of each). */
static int setup_params(struct rank *k)
{
	const struct trn_model *m = k->m;
	size_t bucket = (size_t)(m->bucket_kb > 0 ? m->bucket_kb : 4096) * 1024;
	size_t off = 0, start = 0;

	k->w = calloc((size_t)k->nl, sizeof(*k->w));
	k->wm = calloc((size_t)k->nl, sizeof(*k->wm));
	k->goff = calloc((size_t)k->nl, sizeof(*k->goff));
	k->bk = calloc((size_t)k->nl, sizeof(*k->bk));
	if (k->w == NULL || k->wm == NULL || k->goff == NULL || k->bk == NULL)
		return -ENOMEM;
	for (int j = k->nl - 1; j >= 0; j--) {
		size_t cnt = (size_t)lin(k, j) * (size_t)lout(k, j);

		k->goff[j] = off;
		off += cnt;
		if ((off - start) * 4 >= bucket || j == 0) {
			k->bk[k->nbk].close_at = j;
			k->bk[k->nbk].off = start;
			k->bk[k->nbk].count = off - start;
			if (k->sharded) {
				struct bucket *b = &k->bk[k->nbk];

				trn_dp_shards(k->job->dev, k->n, b->count, b->shard);
				for (int r = 0; r < k->r; r++)
					b->mine += b->shard[r];
			}
			k->nbk++;
			start = off;
		}
	}
	k->nparam = off;
	k->hscratch_len = (size_t)max_feat(m) * (size_t)k->mb;
	if (k->hscratch_len < k->nparam)
		k->hscratch_len = k->nparam;
	k->hscratch = malloc(k->hscratch_len * 4);
	if (k->hscratch == NULL)
		return -ENOMEM;
	k->wblk = dev_alloc(k, k->nparam * 4);
	k->wmblk = k->host ? k->wblk : malloc(k->nparam * 4);
	k->grad = dev_alloc(k, k->nparam * 4);
	k->gh = k->host ? k->grad : malloc(k->nparam * 4);
	if (k->wblk == NULL || k->wmblk == NULL || k->grad == NULL || k->gh == NULL)
		return -ENOMEM;
	for (int j = 0; j < k->nl; j++) {
		k->w[j] = k->wblk + k->goff[j];
		k->wm[j] = k->wmblk + k->goff[j];
		rng_fill(k->wm[j], (size_t)lin(k, j) * (size_t)lout(k, j), k->job->seed,
			 1000 + (uint64_t)(k->l0 + j), (float)sqrt(3.0 / lin(k, j)));
	}
	if (!k->host && k->ops->from_host(k->wblk, k->wmblk, k->nparam * 4) < 0)
		return -EIO;
	return 0;
}

/* Activation slots, the backward chain, input and target rows
 * [row0, row0 + nrows) of the global batch (x on the first stage, targets
 * on the last). */
static int setup_acts(struct rank *k, int row0, int nrows, bool first, bool last)
{
	const struct trn_model *m = k->m;
	size_t fmax = (size_t)max_feat(m) * (size_t)k->mb;
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
			int f = j < k->nl ? lin(k, j) : lout(k, k->nl - 1);

			k->act[s][j] = dev_alloc(k, (size_t)f * (size_t)k->mb * 4);
			if (k->act[s][j] == NULL)
				return -ENOMEM;
		}
		k->dytop[s] = dev_alloc(k, (size_t)lout(k, k->nl - 1) * (size_t)k->mb * 4);
		k->gsend[s] = dev_alloc(k, (size_t)lin(k, 0) * (size_t)k->mb * 4);
		if (k->dytop[s] == NULL || k->gsend[s] == NULL)
			return -ENOMEM;
		if (k->job->scheme != ITR_PP || k->job->sched != TRN_PP_ZB || k->nl < 2)
			continue;
		k->dy[s] = calloc((size_t)k->nl - 1, sizeof(**k->dy));
		if (k->dy[s] == NULL)
			return -ENOMEM;
		for (int j = 0; j < k->nl - 1; j++) {
			k->dy[s][j] = dev_alloc(k, (size_t)lout(k, j) * (size_t)k->mb * 4);
			if (k->dy[s][j] == NULL)
				return -ENOMEM;
		}
	}
	k->tmp[0] = dev_alloc(k, fmax * 4);
	k->tmp[1] = dev_alloc(k, fmax * 4);
	if (k->tmp[0] == NULL || k->tmp[1] == NULL)
		return -ENOMEM;
	cnt = (size_t)(nrows > 0 ? nrows : 1) * (size_t)max_feat(m);
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
	return 0;
}

static void free_rank(struct rank *k)
{
	const struct dev_mem_ops *o = k->ops;

	if (o == NULL)
		return;
	o->free(k->wblk);
	if (!k->host) {
		free(k->wmblk);
		free(k->gh);
	}
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
	o->free(k->grad);
	o->free(k->x);
	o->free(k->negt);
	free(k->hscratch);
	free(k->w);
	free(k->wm);
	free(k->goff);
	free(k->bk);
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
	free(k->pp_ops);
	free(k->ev);
}

/* ---- network calibration ------------------------------------------------- */

static int time_op(struct tp_dev_comm *d, int what, float *buf, size_t count, int iters,
		   double *out)
{
	struct tp_comm *c = tp_dev_comm_base(d);
	int n = tp_comm_nranks(c), r = tp_comm_rank(c);
	double t0 = 0;
	int ret;

	ret = tp_comm_barrier(c);
	for (int i = -2; ret == 0 && i < iters; i++) {
		if (i == 0)
			t0 = now_s();
		if (what == 0)
			ret = tp_dev_allreduce(d, buf, buf, count, DEV_FLOAT32, DEV_SUM,
					       TP_STAGE_AUTO);
		else
			ret = tp_dev_sendrecv(d, buf, (r + 1) % n, buf + count, (r + n - 1) % n,
					      count, DEV_FLOAT32);
	}
	if (ret < 0)
		return ret;
	*out = (now_s() - t0) / iters;
	return tp_comm_oob_max(c, out);
}

/* Measure the all-reduce bus bandwidth on one bucket, the point-to-point
 * bandwidth on one activation and the latency on one float, on this job's
 * communicator; every rank ends with the same figures (the slowest). */
static int calibrate(struct rank *k, size_t bucket_count, size_t act_count, struct trn_net *net)
{
	size_t cnt = bucket_count > 2 * act_count ? bucket_count : 2 * act_count;
	double t_ar, t_lat, t_p2p;
	float *buf;
	float *h;
	int ret;

	net->overlap = k->job->overlap;
	if (k->n == 1) {
		/* nothing to talk to: communication costs nothing */
		net->busbw_gbps = 1e6;
		net->p2p_gbps = 1e6;
		net->lat_s = 0;
		return 0;
	}
	h = calloc(cnt, 4);
	buf = dev_alloc(k, cnt * 4);
	if (h == NULL || buf == NULL) {
		free(h);
		k->ops->free(buf);
		return -ENOMEM;
	}
	ret = k->host ? 0 : k->ops->from_host(buf, h, cnt * 4);
	if (k->host)
		memset(buf, 0, cnt * 4);
	if (ret == 0)
		ret = time_op(k->d, 0, buf, bucket_count, 5, &t_ar);
	if (ret == 0)
		ret = time_op(k->d, 1, buf, 1, 20, &t_lat);
	if (ret == 0)
		ret = time_op(k->d, 1, buf, act_count, 5, &t_p2p);
	free(h);
	k->ops->free(buf);
	if (ret < 0)
		return ret;
	net->busbw_gbps = (double)bucket_count * 4 / t_ar * 2.0 * (k->n - 1) / k->n / 1e9;
	net->lat_s = t_lat;
	net->p2p_gbps = (double)act_count * 4 / (t_p2p > t_lat ? t_p2p - t_lat : t_p2p) / 1e9;
	return 0;
}

/* ---- training steps --------------------------------------------------- */

/* Rows of the tail's micro-batch t (the last one may be short). */
static int tail_rows(const struct rank *k, int t, int row0, int nrows)
{
	int left = nrows - row0 - t * k->mb;

	return left < k->mb ? left : k->mb;
}

/* Sharded DP: update this rank's part of bucket b once its reduce-scatter
 * is in (wait: wait for it; else only if it is in already). In the
 * device's stream between backward layers, as an optimizer step fused
 * into the backward would run. */
static int shard_update(struct rank *k, int b, bool wait)
{
	struct bucket *bk = &k->bk[b];
	size_t off = bk->off + bk->mine;
	uint64_t t0;
	int ret;

	if (bk->updated || (!wait && !cop_done(&k->ct, &bk->op)))
		return 0;
	ret = wait_op(k, &bk->op, EV_RS);
	if (ret < 0)
		return ret;
	t0 = ice_now_ns();
	ret = sgd_range(k, k->gh + off, off, bk->shard[k->r], false);
	trace_add(k, EV_UPD, b, t0, ice_now_ns(), 0, 0);
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
static int shard_advance(struct rank *k, bool wait)
{
	for (;;) {
		struct bucket *bk;
		int ret;

		if (k->nrs < k->nbk && (k->nrs < 2 || k->nag >= k->nrs - 1)) {
			if (k->nrs >= k->nclosed)
				return 0;
			bk = &k->bk[k->nrs];
			bk->op.tag = k->nrs++;
			bk->op.hbuf = k->gh + bk->off;
			bk->op.counts = bk->shard;
			bk->op.mine = bk->mine;
			cop_post(&k->ct, &bk->op, COP_RS, k->grad + bk->off, bk->count, -1);
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
		cop_post(&k->ct, &bk->ag, COP_AG, k->wblk + bk->off, bk->count, -1);
	}
}

/* DP: buckets [k->nclosed, upto) have their gradient complete: all-reduce
 * them, or (sharded) reduce-scatter them in their turn. */
static int close_buckets(struct rank *k, int upto)
{
	for (; k->nclosed < upto; k->nclosed++) {
		struct bucket *bk = &k->bk[k->nclosed];

		if (!k->sharded) {
			bk->op.tag = k->nclosed;
			cop_post(&k->ct, &bk->op, COP_ALLREDUCE, k->grad + bk->off, bk->count, -1);
		}
	}
	return k->sharded ? shard_advance(k, false) : 0;
}

/* DP: the backward of the micro-batches in slots [0, n) (rows row0 .. nrows,
 * forwards done, top gradients in act[slot][nl]) layer by layer: each
 * layer's weight gradients over all of them, then its buckets go to the
 * communication thread, then the input gradients, written over the layer's
 * input (no longer needed; a slot's first input buffer is unused). Every
 * layer's gradient sums the micro-batches in the same order as backward()
 * would, so the weights are the same bits. first: the tail starts the
 * step. */
static int backward_tail(struct rank *k, int n, int row0, int nrows, bool first)
{
	int b = 0;

	for (int j = k->nl - 1; j >= 0; j--) {
		for (int t = 0; t < n; t++) {
			const float *x = j == 0 ? k->xin[t] : k->act[t][j];
			int ret = matmul(k, true, false, lin(k, j), lout(k, j),
					 tail_rows(k, t, row0, nrows), x, k->act[t][j + 1],
					 first && t == 0 ? 0.0f : 1.0f, k->grad + k->goff[j]);

			if (ret < 0)
				return ret;
		}
		while (b < k->nbk && k->bk[b].close_at == j)
			b++;
		if (b > k->nclosed) {
			int ret = close_buckets(k, b);

			if (ret < 0)
				return ret;
		}
		for (int t = 0; t < n; t++) {
			int ret = matmul(k, false, true, tail_rows(k, t, row0, nrows), lin(k, j),
					 lout(k, j), k->act[t][j + 1], k->w[j], 0.0f, k->act[t][j]);

			if (ret < 0)
				return ret;
		}
		/* layers j and above are done with their weights */
		if (k->sharded) {
			int ret = shard_advance(k, false);

			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

/* One DP step over nrows samples: micro-batches forward and backward one
 * after the other, gradients accumulated; the last dp.tail of them
 * forward first, then backward layer by layer (backward_tail), so the
 * all-reduce of the top layers' buckets starts while the tail's lower
 * layers compute. Sharded: each bucket's part is updated once its
 * reduce-scatter is in, and all-gathered; the step ends when every
 * all-gather is. */
static int dp_step(struct rank *k, int nrows)
{
	int nmb = (nrows + k->mb - 1) / k->mb;
	int tail = k->nslots < nmb ? k->nslots : nmb, head = nmb - tail;
	int ret = 0;

	k->nclosed = k->nrs = k->nag = 0;
	for (int b = 0; b < k->nbk; b++)
		k->bk[b].updated = false;
	for (int i = 0; i < nmb && ret == 0; i++) {
		int row = i * k->mb, slot = i < head ? 0 : i - head;
		int r = nrows - row < k->mb ? nrows - row : k->mb;

		ret = forward(k, slot, k->x + (size_t)row * k->m->in[0], r);
		if (ret == 0)
			ret = loss_grad(k, slot, k->negt + (size_t)row * lout(k, k->nl - 1), r);
		if (ret == 0 && i < head)
			ret = backward(k, 0, k->act[0][k->nl], r, NULL, i == 0 ? 0.0f : 1.0f);
	}
	if (ret == 0 && tail > 0)
		ret = backward_tail(k, tail, head * k->mb, nrows, head == 0);
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
			int r1 = wait_op(k, &k->bk[b].op, EV_RS);
			int r2 = wait_op(k, &k->bk[b].ag, EV_AG);

			if (ret == 0)
				ret = r1 < 0 ? r1 : r2;
		}
		return ret;
	}
	for (int b = 0; b < k->nbk; b++) {
		int r = wait_op(k, &k->bk[b].op, EV_ALLREDUCE);

		if (ret == 0)
			ret = r;
	}
	if (ret == 0)
		ret = sgd_update(k);
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
 * the communication thread on host memory (off the compute path).
 */
static int pp_slot(const struct rank *k, int step, int i)
{
	return (int)(((long)step * k->pp.micro_batches + i) % k->nslots);
}

static bool pp_sends(const struct rank *k, const struct trn_pp_op *op)
{
	return (op->kind == TRN_PP_F && k->r < k->n - 1) || (op->kind == TRN_PP_B && k->r > 0);
}

static void post_send(struct rank *k, struct cop *op, float *buf, size_t count, int peer, int tag,
		      uint64_t *hsum)
{
	op->hash = k->host;
	if (!k->host)
		op->hval = buf_hash(k, buf, count);
	op->hsum = hsum;
	op->tag = tag;
	cop_post(&k->ct, op, COP_SEND, buf, count, peer);
}

/* Queue the receive operation op (of step step) needs, unless it is queued. */
static void pp_post_recv(struct rank *k, int step, const struct trn_pp_op *op)
{
	int s = k->r, slot = pp_slot(k, step, op->mb);
	struct cop *r;
	float *buf;
	size_t cnt;
	int peer;

	if (op->kind == TRN_PP_F && s > 0) {
		r = &k->op_ract[slot];
		buf = k->act[slot][0];
		cnt = (size_t)k->mb * lin(k, 0);
		peer = s - 1;
		r->hsum = &k->h_recv_fwd;
	} else if (op->kind == TRN_PP_B && s < k->n - 1) {
		r = &k->op_rgrad[slot];
		buf = k->dytop[slot];
		cnt = (size_t)k->mb * lout(k, k->nl - 1);
		peer = s + 1;
		r->hsum = &k->h_recv_bwd;
	} else {
		return;
	}
	if (r->posted)
		return;
	r->hash = k->host;
	r->tag = op->mb;
	cop_post(&k->ct, r, COP_RECV, buf, cnt, peer);
}

static int pp_fwd(struct rank *k, int i)
{
	int s = k->r, S = k->n, slot = pp_slot(k, k->step, i), ret;
	size_t in_cnt = (size_t)k->mb * lin(k, 0);
	size_t out_cnt = (size_t)k->mb * lout(k, k->nl - 1);
	const float *in;
	uint64_t t0;

	ret = wait_op(k, &k->op_fwd[slot], EV_SEND_ACT);
	if (ret < 0)
		return ret;
	if (s > 0) {
		ret = wait_op(k, &k->op_ract[slot], EV_RECV_ACT);
		if (ret < 0)
			return ret;
		in = k->act[slot][0];
	} else {
		in = k->x + (size_t)i * in_cnt;
	}
	t0 = ice_now_ns();
	ret = forward(k, slot, in, k->mb);
	if (ret == 0 && s == S - 1)
		ret = loss_grad(k, slot, k->negt + (size_t)i * out_cnt, k->mb);
	trace_add(k, EV_FWD, i, t0, ice_now_ns(), 0, 0);
	if (ret < 0 || s == S - 1)
		return ret;
	post_send(k, &k->op_fwd[slot], k->act[slot][k->nl], out_cnt, s + 1, i, &k->h_sent_fwd);
	return 0;
}

/* B: in ZB the input gradients only, in 1F1B the whole backward. */
static int pp_bwd(struct rank *k, int i)
{
	int s = k->r, S = k->n, slot = pp_slot(k, k->step, i), ret;
	size_t in_cnt = (size_t)k->mb * lin(k, 0);
	const float *g = k->act[slot][k->nl];
	float *dx = s > 0 ? k->gsend[slot] : NULL;
	uint64_t t0;

	if (s < S - 1) {
		ret = wait_op(k, &k->op_rgrad[slot], EV_RECV_GRAD);
		if (ret < 0)
			return ret;
		g = k->dytop[slot];
	}
	ret = wait_op(k, &k->op_bwd[slot], EV_SEND_GRAD);
	if (ret < 0)
		return ret;
	t0 = ice_now_ns();
	if (k->pp.sched == TRN_PP_ZB)
		ret = backward_input(k, slot, g, k->mb, dx);
	else
		ret = backward(k, slot, g, k->mb, dx, i == 0 ? 0.0f : 1.0f);
	trace_add(k, EV_BWD, i, t0, ice_now_ns(), 0, 0);
	if (ret < 0 || s == 0)
		return ret;
	post_send(k, &k->op_bwd[slot], k->gsend[slot], in_cnt, s - 1, i, &k->h_sent_bwd);
	return 0;
}

/* W (ZB): the weight gradients of micro-batch i, in micro-batch order. */
static int pp_wgt(struct rank *k, int i)
{
	uint64_t t0 = ice_now_ns();
	int ret = backward_weights(k, pp_slot(k, k->step, i), k->mb, i == 0 ? 0.0f : 1.0f);

	trace_add(k, EV_WGT, i, t0, ice_now_ns(), 0, 0);
	return ret;
}

/* One step; more: another follows (its first receive may be queued). */
static int pp_step(struct rank *k, bool more)
{
	int ret = 0;

	for (int c = 0; c < k->pp_nops && ret == 0; c++) {
		const struct trn_pp_op *op = &k->pp_ops[c];

		pp_post_recv(k, k->step, op);
		if (k->ct.async || !pp_sends(k, op)) {
			if (c + 1 < k->pp_nops)
				pp_post_recv(k, k->step, &k->pp_ops[c + 1]);
			else if (more)
				pp_post_recv(k, k->step + 1, &k->pp_ops[0]);
		}
		if (op->kind == TRN_PP_F)
			ret = pp_fwd(k, op->mb);
		else if (op->kind == TRN_PP_B)
			ret = pp_bwd(k, op->mb);
		else
			ret = pp_wgt(k, op->mb);
	}
	for (int s = 0; s < k->nslots; s++) {
		int r1 = wait_op(k, &k->op_fwd[s], EV_SEND_ACT);
		int r2 = wait_op(k, &k->op_bwd[s], EV_SEND_GRAD);

		if (ret == 0)
			ret = r1 < 0 ? r1 : r2;
	}
	if (ret == 0)
		ret = sgd_update(k);
	return ret;
}

/* Slots a stage needs for its operations: the most micro-batches between
 * their F and their last use at once, plus one for a receive queued early. */
static int pp_slots(const struct trn_pp_op *ops, int n, enum trn_pp_sched sched)
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

/* ---- the rank ------------------------------------------------------------- */

/* --trace: this rank's events as CSV lines appended to the job's file (under
 * an exclusive lock, so the ranks' lines do not mix). Times in ns of
 * CLOCK_MONOTONIC, the same clock in every rank. */
static void trace_dump(struct rank *k)
{
	FILE *f;
	int fd;

	if (k->job->trace[0] == '\0' || k->nev == 0)
		return;
	fd = open(k->job->trace, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0) {
		ice_warn(ICE_SUB_BENCH, "rank %d: --trace %s: %s", k->r, k->job->trace,
			 strerror(errno));
		return;
	}
	flock(fd, LOCK_EX);
	f = fdopen(fd, "a");
	if (f == NULL) {
		close(fd);
		return;
	}
	for (int i = 0; i < k->nev; i++) {
		const struct itr_ev *e = &k->ev[i];

		fprintf(f, "%s,%s,%d,%d,%d,%s,%llu,%llu,%llu,%llu\n", k->job->label,
			k->job->split == ITR_SPLIT_PLAN ? "plan" : "even", k->r, e->step, e->mb,
			ev_name[e->kind], (unsigned long long)e->t[0], (unsigned long long)e->t[1],
			(unsigned long long)e->t[2], (unsigned long long)e->t[3]);
	}
	fflush(f);
	flock(fd, LOCK_UN);
	fclose(f);
}

/* The split (the same on every rank: the same inputs), and for DP the tails
 * and, unless --overlap gave it, the overlap they give (net->overlap). */
static int plan_job(struct rank *k, struct trn_net *net)
{
	const struct itr_job *j = k->job;
	struct itr_result *res = k->res;
	int ret;

	if (j->scheme == ITR_DP) {
		struct trn_dp_plan p;

		/* net->overlap is --overlap's, or < 0: from the tails */
		memset(&p, 0, sizeof(p));
		ret = trn_plan_dp_tailed(k->m, j->dev, j->ndev, net, j->split == ITR_SPLIT_EVEN,
					 j->dp_tail, &p);
		if (ret == 0)
			net->overlap = p.overlap;
		if (ret == 0 && k->r == 0)
			res->dp = p;
		k->dp = p;
		if (ret == 0) {
			k->l0 = 0;
			k->nl = k->m->nlayers;
			k->me->samples = p.samples[k->r];
			k->me->first = 0;
			k->me->nlayers = k->nl;
		}
	} else {
		struct trn_pp_plan p;

		if (net->overlap < 0)
			net->overlap = 0; /* no all-reduce */
		memset(&p, 0, sizeof(p));
		ret = j->split == ITR_SPLIT_PLAN
			      ? trn_plan_pp(k->m, j->dev, j->ndev, net, j->sched, &p)
			      : trn_plan_pp_even(k->m, j->dev, j->ndev, net, j->sched, &p);
		if (ret == 0)
			ret = trn_predict_pp(k->m, j->dev, j->ndev, net, &p);
		if (ret == 0 && k->r == 0)
			res->pp = p;
		k->pp = p;
		if (ret == 0) {
			k->l0 = p.first[k->r];
			k->nl = p.nlayers[k->r];
			k->me->first = k->l0;
			k->me->nlayers = k->nl;
			k->me->samples = k->m->global_batch;
			if (k->nl < 1 || k->l0 < 0 || k->l0 + k->nl > k->m->nlayers)
				ret = -EINVAL;
		}
	}
	if (ret < 0)
		ice_err(ICE_SUB_BENCH, "rank %d: planning %s (%s split) failed: %s", k->r,
			j->scheme == ITR_DP ? "dp" : "pp",
			j->split == ITR_SPLIT_PLAN ? "plan" : "even", strerror(-ret));
	return ret;
}

/* FNV-1a and sum of this rank's weights, as the device holds them. */
static int weights_digest(struct rank *k)
{
	uint64_t h = FNV_INIT;
	double sum = 0;

	for (int j = 0; j < k->nl; j++) {
		size_t cnt = (size_t)lin(k, j) * (size_t)lout(k, j);
		const float *v = host_view(k, k->w[j], cnt);

		if (v == NULL)
			return -EIO;
		h = fnv1a(h, v, cnt * 4);
		for (size_t i = 0; i < cnt; i++)
			sum += v[i];
	}
	k->me->weight_hash = h;
	k->me->weight_sum = sum;
	return 0;
}

/* DP: are the weights the same on every rank? The hashes are compared over
 * the bootstrap connections (max == min of each 32-bit half). */
static int check_weights(struct rank *k, bool *same)
{
	uint64_t h = k->me->weight_hash;
	double v[4];
	int ret = 0;

	v[0] = (double)(h >> 32);
	v[1] = -(double)(h >> 32);
	v[2] = (double)(h & 0xffffffffu);
	v[3] = -(double)(h & 0xffffffffu);
	for (int i = 0; i < 4 && ret == 0; i++)
		ret = tp_comm_oob_max(k->c, &v[i]);
	if (ret < 0)
		return ret;
	*same = v[0] == -v[1] && v[2] == -v[3];
	return 0;
}

/* After training, on this thread again: the correctness checks. */
static int finish(struct rank *k)
{
	int ret = weights_digest(k);

	if (ret < 0)
		return ret;
	if (k->job->scheme == ITR_DP) {
		bool same = false;

		snprintf(k->me->stage_name, sizeof(k->me->stage_name), "%s",
			 tp_stage_name(tp_dev_last_stage(k->d)));
		ret = check_weights(k, &same);
		if (ret == 0 && k->r == 0)
			k->res->weights_identical = same;
	} else {
		k->me->pp_sent_fwd = k->h_sent_fwd;
		k->me->pp_recv_fwd = k->h_recv_fwd;
		k->me->pp_sent_bwd = k->h_sent_bwd;
		k->me->pp_recv_bwd = k->h_recv_bwd;
	}
	if (ret == 0)
		ret = tp_comm_barrier(k->c);
	return ret;
}

static int train(struct rank *k)
{
	const struct itr_job *j = k->job;
	int total = j->warmup + j->steps;
	struct trn_emu emu0;
	double cpu0 = 0, wall0 = 0;
	int ret;

	k->me->step_end_ns[0] = ice_now_ns();
	emu0 = k->emu;
	for (int step = 0; step < total; step++) {
		k->step = step;
		if (step == j->warmup) {
			k->t_compute = k->t_exposed = k->t_update = 0;
			k->t_wait_act = k->t_wait_grad = k->t_wait_send = k->t_handoff = 0;
			emu0 = k->emu;
			cpu0 = cpu_seconds();
			wall0 = now_s();
		}
		k->loss = 0;
		ret = j->scheme == ITR_DP ? dp_step(k, k->me->samples)
					  : pp_step(k, step + 1 < total);
		if (ret < 0) {
			ice_err(ICE_SUB_BENCH, "rank %d: step %d failed: %s", k->r, step,
				strerror(-ret));
			return ret;
		}
		k->me->step_end_ns[step + 1] = ice_now_ns();
	}
	k->me->wall_s = now_s() - wall0;
	k->me->cpu_s = cpu_seconds() - cpu0;
	k->me->compute_s = k->t_compute / j->steps;
	k->me->exposed_s = k->t_exposed / j->steps;
	k->me->update_s = k->t_update / j->steps;
	k->me->wait_act_s = k->t_wait_act / j->steps;
	k->me->wait_grad_s = k->t_wait_grad / j->steps;
	k->me->wait_send_s = k->t_wait_send / j->steps;
	k->me->handoff_s = k->t_handoff / j->steps;
	k->me->emu_calls = k->emu.calls - emu0.calls;
	k->me->emu_overruns = k->emu.overruns - emu0.overruns;
	k->me->emu_overrun_s = k->emu.overrun_s - emu0.overrun_s;
	k->me->emu_hidden_s = k->emu.hidden_s - emu0.hidden_s;
	k->me->loss = k->loss;
	return 0;
}

static int run_rank(struct rank *k, struct tp_comm_cfg *cc)
{
	const struct itr_job *j = k->job;
	const struct trn_model *m = k->m;
	size_t act_count = (size_t)m->micro_batch * (size_t)max_feat(m);
	size_t maxb, bucket_count;
	struct trn_net net;
	char why[256] = "";
	int kind, ret, r2;

	kind = j->dev[k->r].emulated ? DEV_MEM_HOST : dev_mem_kind_parse(j->dev[k->r].kind);
	k->ops = kind < 0 ? NULL : dev_mem_ops_get((enum dev_mem_kind)kind);
	if (k->ops == NULL) {
		fprintf(stderr, "ice-train: rank %d: device '%s' needs %s memory: not built in\n",
			k->r, k->prof->name, k->prof->kind);
		return 2;
	}
	ret = k->ops->probe(why, sizeof(why));
	if (ret < 0) {
		fprintf(stderr, "ice-train: rank %d: device '%s' (%s) is not usable: %s\n", k->r,
			k->prof->name, k->ops->name, why[0] ? why : strerror(-ret));
		return 2;
	}
	k->host = k->ops->kind == DEV_MEM_HOST;
	k->sharded = j->scheme == ITR_DP && m->optim == TRN_OPTIM_SHARDED && k->n > 1;
	k->emu.gflops = k->prof->gflops;
	k->emu.mem_gbps = k->prof->mem_gbps;
	/* emulated compute ends in a timed sleep and the threads hand work on
	 * through timed waits: wake them on time (the default slack is 50 us,
	 * inherited by the communication thread) */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	k->mb = m->micro_batch;

	/* room for several activations that arrive before their receive */
	maxb = act_count * 4 * (size_t)(k->n + 2) + (1u << 20);
	if (cc->eng.unexp_bytes < maxb)
		cc->eng.unexp_bytes = (uint32_t)(maxb < (256u << 20) ? maxb : (256u << 20));
	k->c = tp_comm_init(cc);
	if (k->c == NULL) {
		fprintf(stderr, "ice-train: rank %d: cannot create the communicator: %s\n", k->r,
			strerror(errno));
		return 1;
	}
	/* largest message: a bucket (up to the whole model) or two activations */
	bucket_count = (size_t)(m->bucket_kb > 0 ? m->bucket_kb : 4096) * 256;
	maxb = (size_t)(trn_model_param_bytes(m) + 0.5);
	if (maxb < 2 * act_count * 4)
		maxb = 2 * act_count * 4;
	if ((size_t)trn_model_param_bytes(m) / 4 < bucket_count)
		bucket_count = (size_t)trn_model_param_bytes(m) / 4;
	k->d = tp_dev_comm_new(k->c, k->ops, maxb);
	if (k->d == NULL) {
		fprintf(stderr, "ice-train: rank %d: cannot set up %s collectives: %s\n", k->r,
			k->ops->name, strerror(errno));
		ret = -errno;
		goto out;
	}
	ret = calibrate(k, bucket_count, act_count, &net);
	if (ret < 0) {
		fprintf(stderr, "ice-train: rank %d: network calibration failed: %s\n", k->r,
			strerror(-ret));
		goto out;
	}
	ret = plan_job(k, &net);
	if (ret < 0)
		goto out;
	if (k->r == 0)
		k->res->net = net;
	if (j->scheme == ITR_DP) {
		int row0 = 0;

		/* every rank computed the same plan: rows before ours */
		for (int r = 0; r < k->r; r++)
			row0 += k->dp.samples[r];
		k->nslots = k->dp.tail[k->r] > 1 ? k->dp.tail[k->r] : 1;
		ret = setup_params(k);
		if (ret == 0)
			ret = setup_acts(k, row0, k->me->samples, true, true);
	} else {
		int mbs = m->global_batch / m->micro_batch;

		k->pp_ops = calloc(3 * (size_t)mbs, sizeof(*k->pp_ops));
		ret = k->pp_ops == NULL ? -ENOMEM : trn_pp_order(&k->pp, k->r, k->pp_ops, 3 * mbs);
		if (ret >= 0) {
			k->pp_nops = ret;
			k->nslots = pp_slots(k->pp_ops, k->pp_nops, k->pp.sched);
			ret = setup_params(k);
		}
		if (ret == 0)
			ret = setup_acts(k, 0, m->global_batch, k->r == 0, k->r == k->n - 1);
	}
	if (ret < 0) {
		fprintf(stderr, "ice-train: rank %d: cannot set up the model: %s\n", k->r,
			strerror(-ret));
		goto out;
	}
	ret = tp_comm_barrier(k->c);
	if (ret < 0)
		goto out;
	/* the communicator belongs to the communication thread from here... */
	ret = cthread_start(&k->ct, k->d);
	if (ret < 0)
		goto out;
	ret = train(k);
	r2 = cthread_stop(&k->ct);
	if (ret == 0 && r2 < 0) {
		ice_err(ICE_SUB_BENCH, "rank %d: communication failed: %s", k->r, strerror(-r2));
		ret = r2;
	}
	/* ... and back to this thread */
	trace_dump(k);
	if (ret == 0)
		ret = finish(k);
	if (ret == 0)
		k->me->done = true;
out:
	free_rank(k);
	tp_dev_comm_free(k->d);
	tp_comm_free(k->c);
	return ret < 0 ? 1 : 0;
}

int itr_rank_main(void *arg)
{
	struct itr_rank_arg *a = arg;
	struct rank k;

	memset(&k, 0, sizeof(k));
	k.job = a->job;
	k.m = &a->job->model;
	k.res = a->res;
	k.r = a->cc->rank;
	k.n = a->cc->nranks;
	k.me = &a->res->rank[k.r];
	k.prof = &a->job->dev[k.r];
	return run_rank(&k, a->cc);
}
