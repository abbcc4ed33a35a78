// SPDX-License-Identifier: Apache-2.0
/*
 * ice-train: the communication side of a rank.
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
 *
 * A pipeline stage on host memory needs no such thread (inl): its only
 * operations are posted sends and receives, and a thread that sleeps in
 * the engine is woken by every message and acknowledgement, each wake-up
 * two context switches on the core the compute runs on (on this VM's
 * paravirtualised CPUs more than half the thread's CPU, docs/benchmarks.md,
 * the forty-third session). There the compute thread drives the engine
 * itself: when it posts (a send goes out at once), when it waits (in the
 * engine, as the thread would), and between its matrix multiplies
 * (itr_cthread_poll: one system call when nothing came), so peers'
 * messages are acknowledged within about ITR_POLL_NS.
 */
#include <errno.h>
#include <isa-l/crc64.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ice_cpu.h"
#include "ice_log.h"
#include "ice_time.h"
#include "ice_train_internal.h"

/* The idle communication thread waits in the engine this long at most; a
 * packet, a transport timer or a queued operation (tp_engine_wake) ends
 * the wait earlier, so this only bounds how often an idle thread wakes. */
#define ITR_IDLE_WAIT_NS (5 * ICE_NSEC_PER_MSEC)
/* An inline poster's polls between its compute's pieces are this far apart
 * at least: one costs a system call (1.2 us here) and two more to count its
 * CPU; it only bounds how long a peer's acknowledgement waits (the
 * retransmission timer's floor is 67 ms), the data is read when needed. */
#define ITR_POLL_NS (2 * ICE_NSEC_PER_MSEC)

/* ---- communication thread ------------------------------------------------ */

/* A device rank's bucket rounded to bf16 on the device (dhalf) and its
 * bf16 copied to the host (half): half the bytes over the bus, and the
 * CPU converts nothing. */
static int round_on_device(struct itr_cthread *t, struct itr_cop *op)
{
	const struct dev_mem_ops *o = tp_dev_comm_ops(t->d);
	int ret = o->convert(op->dhalf, DEV_BFLOAT16, op->buf, DEV_FLOAT32, op->count);

	return ret < 0 ? ret : o->to_host(op->half, op->dhalf, op->count * 2);
}

/* The reduced bf16 of buf's [at, at + n) widened on the device into buf,
 * where a device rank's update reads it. */
static int widen_on_device(struct itr_cthread *t, struct itr_cop *op, size_t at, size_t n)
{
	const struct dev_mem_ops *o = tp_dev_comm_ops(t->d);
	int ret = o->from_host(op->dhalf + at, op->half + at, n * 2);

	return ret < 0 ? ret
		       : o->convert(op->buf + at, DEV_FLOAT32, op->dhalf + at, DEV_BFLOAT16, n);
}

/* A replicated DP bucket with gradients in bf16 (trn_grad): rounded to
 * bf16 (on a device rank by the device, else on the host copy),
 * all-reduced so, widened back: on a device rank by the device into buf,
 * else into the host copy, which the update reads (itr_sgd_update). */
static int allreduce_bf16(struct itr_cthread *t, struct itr_cop *op)
{
	int ret = 0;

	if (op->dhalf != NULL)
		ret = round_on_device(t, op);
	else if (op->hbuf != op->buf)
		ret = tp_dev_comm_ops(t->d)->to_host(op->hbuf, op->buf, op->count * 4);
	if (ret < 0)
		return ret;
	if (op->dhalf == NULL)
		dev_float_to_bf16_n(op->half, op->hbuf, op->count);
	ret = tp_allreduce(t->c, op->half, op->half, op->count, DEV_BFLOAT16, DEV_SUM);
	if (ret == 0 && op->dev_upd)
		return widen_on_device(t, op, 0, op->count);
	if (ret == 0)
		dev_bf16_to_float_n(op->hbuf, op->half, op->count);
	return ret;
}

/* A sharded DP bucket's reduce-scatter: the gradient on host memory (a
 * device rank's copied there), reduced in place, this rank's shard ending
 * at hbuf + mine; in bf16 (half): rounded (on a device rank by the
 * device), reduced so, the shard widened back where the update reads it:
 * on the device into buf + mine (dev_upd), else on the host. */
static int reduce_scatter(struct itr_cthread *t, struct itr_cop *op)
{
	size_t n = op->counts[tp_comm_rank(t->c)];
	int ret = 0;

	if (op->dhalf != NULL)
		ret = round_on_device(t, op);
	else if (op->hbuf != op->buf)
		ret = tp_dev_comm_ops(t->d)->to_host(op->hbuf, op->buf, op->count * 4);
	if (ret < 0)
		return ret;
	if (op->half == NULL)
		return tp_reduce_scatter_v(t->c, op->hbuf, op->hbuf + op->mine, op->counts,
					   DEV_FLOAT32, DEV_SUM);
	if (op->dhalf == NULL)
		dev_float_to_bf16_n(op->half, op->hbuf, op->count);
	ret = tp_reduce_scatter_v(t->c, op->half, op->half + op->mine, op->counts, DEV_BFLOAT16,
				  DEV_SUM);
	if (ret == 0 && op->dev_upd)
		return widen_on_device(t, op, op->mine, n);
	if (ret == 0)
		dev_bf16_to_float_n(op->hbuf + op->mine, op->half + op->mine, n);
	return ret;
}

/* Copy the host's [0, count) of src to the device's dst but this rank's
 * own part [mine, mine + n), which the device holds already; sz bytes an
 * element. */
static int upload_others(const struct dev_mem_ops *o, void *dst, const void *src, size_t mine,
			 size_t n, size_t count, size_t sz)
{
	int ret = mine > 0 ? o->from_host(dst, src, mine * sz) : 0;

	if (ret == 0 && mine + n < count)
		ret = o->from_host((char *)dst + (mine + n) * sz,
				   (const char *)src + (mine + n) * sz, (count - mine - n) * sz);
	return ret;
}

/* A sharded DP bucket's all-gather: the owners' updated weights on the
 * host master copy (hbuf; a rank updating on the device copies its own
 * part there first), then to the device; in bf16 (half): each owner's
 * part rounded (a device rank's by the device, from its master dmaster),
 * gathered so, widened into the weights the rank computes on (its own
 * part too, so the ranks' weights stay identical while each keeps its fp32
 * master part): on a device rank the bf16 goes to the device (dhalf),
 * which widens it into buf; else into hout, the host copy. */
static int all_gather(struct itr_cthread *t, struct itr_cop *op)
{
	const struct dev_mem_ops *o = tp_dev_comm_ops(t->d);
	size_t n = op->counts[tp_comm_rank(t->c)];
	float *out = op->half != NULL ? op->hout : op->hbuf;
	int ret = 0;

	if (op->half == NULL) {
		ret = op->dev_upd ? o->to_host(op->hbuf + op->mine, op->buf + op->mine, n * 4) : 0;
		if (ret == 0)
			ret = tp_allgather_v(t->c, op->hbuf + op->mine, op->hbuf, op->counts,
					     DEV_FLOAT32);
	} else {
		if (op->dev_upd) {
			ret = o->convert(op->dhalf + op->mine, DEV_BFLOAT16, op->dmaster,
					 DEV_FLOAT32, n);
			if (ret == 0)
				ret = o->to_host(op->half + op->mine, op->dhalf + op->mine, n * 2);
		} else {
			dev_float_to_bf16_n(op->half + op->mine, op->hbuf + op->mine, n);
		}
		if (ret == 0)
			ret = tp_allgather_v(t->c, op->half + op->mine, op->half, op->counts,
					     DEV_BFLOAT16);
		if (ret == 0 && op->dhalf != NULL) {
			ret = upload_others(o, op->dhalf, op->half, op->mine, n, op->count, 2);
			return ret < 0 ? ret
				       : o->convert(op->buf, DEV_FLOAT32, op->dhalf, DEV_BFLOAT16,
						    op->count);
		}
		if (ret == 0)
			dev_bf16_to_float_n(out, op->half, op->count);
	}
	/* a host rank gathers into its weights; a device rank (which updates
	 * on the device: dev_upd) uploads all but its own part */
	if (ret < 0 || out == op->buf)
		return ret;
	return upload_others(o, op->buf, out, op->mine, n, op->count, 4);
}

static int cop_run(struct itr_cthread *t, struct itr_cop *op)
{
	switch (op->kind) {
	case COP_ALLREDUCE:
		if (op->half != NULL)
			return allreduce_bf16(t, op);
		return tp_dev_allreduce(t->d, op->buf, op->buf, op->count, DEV_FLOAT32, DEV_SUM,
					TP_STAGE_AUTO);
	case COP_SEND:
		if (op->host_mem)
			return tp_sendrecv(t->c, op->buf, op->peer, NULL, -1, op->count,
					   DEV_FLOAT32);
		return tp_dev_sendrecv(t->d, op->buf, op->peer, NULL, -1, op->count, DEV_FLOAT32);
	case COP_RECV:
		if (op->host_mem)
			return tp_sendrecv(t->c, NULL, -1, op->buf, op->peer, op->count,
					   DEV_FLOAT32);
		return tp_dev_sendrecv(t->d, NULL, -1, op->buf, op->peer, op->count, DEV_FLOAT32);
	case COP_RS:
		return reduce_scatter(t, op);
	case COP_AG:
		return all_gather(t, op);
	case COP_OOB_MAX: {
		int ret = 0;

		for (size_t i = 0; i < op->count && ret == 0; i++)
			ret = tp_comm_oob_max(t->c, &op->dv[i]);
		return ret;
	}
	}
	return -EINVAL;
}

/* CRC-64 of op's buffer into op->hval (ISA-L's: 20 ns per KiB here, where
 * a bytewise FNV-1a took 1.2 us per KiB, a fifth of a stage's CPU per
 * message): on device memory of a copy on the host, made by this thread
 * (off the compute thread's path); 0 or -errno. */
static int cop_hash(struct itr_cthread *t, struct itr_cop *op)
{
	const struct dev_mem_ops *ops = tp_dev_comm_ops(t->d);
	const float *h = op->buf;

	if (ops->kind != DEV_MEM_HOST) {
		if (op->count > t->hs_len) {
			float *n = realloc(t->hs, op->count * sizeof(*n));

			if (n == NULL)
				return -ENOMEM;
			t->hs = n;
			t->hs_len = op->count;
		}
		if (ops->to_host(t->hs, op->buf, op->count * 4) < 0)
			return -EIO;
		h = t->hs;
	}
	op->hval = crc64_ecma_refl(0, (const unsigned char *)h, op->count * 4);
	return 0;
}

/* The thread's end of an operation: hash a received buffer, hand it back. */
static void cop_finish(struct itr_cthread *t, struct itr_cop *op, int ret)
{
	if (ret == 0 && op->hash && op->kind == COP_RECV)
		ret = cop_hash(t, op);
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
static void cthread_retire(struct itr_cthread *t, int ret)
{
	struct itr_cop **pp = &t->fly;

	while (*pp != NULL) {
		struct itr_cop *op = *pp;

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
static void cthread_run(struct itr_cthread *t, struct itr_cop *op, int ret)
{
	op->t_start = ice_now_ns();
	if (ret == 0 && op->hash && op->kind == COP_SEND)
		ret = cop_hash(t, op);
	if (ret == 0 && t->async && !op->host_mem &&
	    (op->kind == COP_SEND || op->kind == COP_RECV)) {
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
	struct itr_cthread *t = arg;
	int ret;

	itr_watch_thread(ITR_WATCH_COMM);
	pthread_mutex_lock(&t->mu);
	for (;;) {
		struct itr_cop *op = t->head;

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

/* inl: drive the engine once (waiting up to max_wait_ns) and hand back
 * what completed, its CPU counted in t->cpu_s (the thread's CPU time: its
 * wall time would count a CPU quota's throttling, 6 ms in 10 at a quota of
 * 0.4, wherever it falls in a poll). */
static void inl_progress(struct itr_cthread *t, uint64_t max_wait_ns)
{
	double c0 = ice_thread_cpu_s();
	int ret = tp_comm_progress(t->c, max_wait_ns);

	cthread_retire(t, ret);
	if (ret < 0 && t->err == 0)
		t->err = ret;
	t->poll_ns = ice_now_ns();
	t->cpu_s += ice_thread_cpu_s() - c0;
}

bool itr_comm_inline(const struct itr_rank *k)
{
	return k->job->scheme == ITR_PP && k->n > 1 && k->host && !k->prof->emulated &&
	       !k->job->comm_thread;
}

void itr_cthread_poll(struct itr_cthread *t)
{
	if (t->inl && ice_now_ns() - t->poll_ns >= ITR_POLL_NS)
		inl_progress(t, 0);
}

int itr_cthread_start(struct itr_cthread *t, struct tp_dev_comm *d, bool inl)
{
	int ret;

	memset(t, 0, sizeof(*t));
	t->d = d;
	t->c = tp_dev_comm_base(d);
	t->e = tp_comm_engine(t->c);
	t->async = tp_dev_comm_ops(d)->kind == DEV_MEM_HOST;
	if (inl && !t->async)
		return -EINVAL;
	t->inl = inl;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv_done, NULL);
	if (inl)
		return 0;
	ret = pthread_create(&t->th, NULL, cthread_main, t);
	if (ret != 0) {
		pthread_cond_destroy(&t->cv_done);
		pthread_mutex_destroy(&t->mu);
		return -ret;
	}
	return 0;
}

/* Wait for the queue to drain and the thread to end; returns its error. */
int itr_cthread_stop(struct itr_cthread *t)
{
	if (t->inl) {
		/* what is in flight ends, as the thread's last loop does */
		while (t->fly != NULL)
			inl_progress(t, ITR_IDLE_WAIT_NS);
		t->inl = false;
	} else {
		pthread_mutex_lock(&t->mu);
		t->quit = true;
		pthread_mutex_unlock(&t->mu);
		tp_engine_wake(t->e);
		pthread_join(t->th, NULL);
	}
	pthread_cond_destroy(&t->cv_done);
	pthread_mutex_destroy(&t->mu);
	free(t->hs);
	t->hs = NULL;
	t->hs_len = 0;
	return t->err;
}

void itr_cop_post(struct itr_cthread *t, struct itr_cop *op, enum itr_cop_kind kind, float *buf,
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
	if (t->inl) {
		double c0 = ice_thread_cpu_s();

		/* posted, or run to its end, here; a send goes out now */
		cthread_run(t, op, t->err);
		t->cpu_s += ice_thread_cpu_s() - c0;
		if (!op->done)
			inl_progress(t, 0);
		return;
	}
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
bool itr_cop_done(struct itr_cthread *t, const struct itr_cop *op)
{
	bool done;

	if (t->inl && !op->done)
		inl_progress(t, 0);
	pthread_mutex_lock(&t->mu);
	done = op->done;
	pthread_mutex_unlock(&t->mu);
	return done;
}

/* Wait for op; *blocked: it was not done yet. */
static int cop_wait(struct itr_cthread *t, struct itr_cop *op, bool *blocked)
{
	int ret;

	*blocked = false;
	if (!op->posted)
		return 0;
	if (t->inl) {
		if (!op->done)
			inl_progress(t, 0);
		*blocked = !op->done;
		while (!op->done)
			inl_progress(t, ITR_IDLE_WAIT_NS);
		op->posted = false;
		return op->ret;
	}
	pthread_mutex_lock(&t->mu);
	*blocked = !op->done;
	while (!op->done)
		pthread_cond_wait(&t->cv_done, &t->mu);
	ret = op->ret;
	pthread_mutex_unlock(&t->mu);
	op->posted = false;
	return ret;
}

/* Wait for op (of kind, for the trace and the figures). The hand-off is
 * the part of the wait spent between the threads rather than on the wire:
 * queued -> taken by the communication thread, done -> this thread back. */
int itr_wait_op(struct itr_rank *k, struct itr_cop *op, enum itr_ev_kind kind)
{
	uint64_t t0, t1, h = 0;
	bool blocked;
	double w;
	int ret, mret;

	if (!op->posted)
		return 0;
	/* products still queued finish while this thread waits: their time
	 * is theirs, not the wait's (op is waited for even when they failed:
	 * it may live on the caller's stack) */
	mret = itr_mm_wait(k);
	t0 = ice_now_ns();
	ret = cop_wait(&k->ct, op, &blocked);
	t1 = ice_now_ns();
	if (blocked)
		trn_emu_idle(&k->emu); /* the device waited for the data too */
	if (op->hsum != NULL) {
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
	itr_trace_add(k, kind, op->tag, op->t_post, op->t_start, op->t_end, t1);
	return mret < 0 ? mret : ret;
}

/* ---- network calibration ------------------------------------------------- */

/* One operation's wall time (the slowest rank's) and this rank's CPU
 * seconds for it (*cpu: its own; the transport sleeps on its socket
 * while it waits, so this is the work of the operation's progress). */
static int time_op(struct tp_dev_comm *d, int what, float *buf, size_t count, int iters,
		   double *out, double *cpu)
{
	struct tp_comm *c = tp_dev_comm_base(d);
	int n = tp_comm_nranks(c), r = tp_comm_rank(c);
	double t0 = 0, c0 = 0;
	int ret;

	ret = tp_comm_barrier(c);
	for (int i = -2; ret == 0 && i < iters; i++) {
		if (i == 0) {
			t0 = ice_now_s();
			c0 = ice_process_cpu_s();
		}
		if (what == 0)
			ret = tp_dev_allreduce(d, buf, buf, count, DEV_FLOAT32, DEV_SUM,
					       TP_STAGE_AUTO);
		else
			ret = tp_dev_sendrecv(d, buf, (r + 1) % n, buf + count, (r + n - 1) % n,
					      count, DEV_FLOAT32);
	}
	if (ret < 0)
		return ret;
	*cpu = (ice_process_cpu_s() - c0) / iters;
	*out = (ice_now_s() - t0) / iters;
	return tp_comm_oob_max(c, out);
}

/*
 * The compute's memory traffic, as the calibrations below reproduce it
 * beside the communication: this thread copies 1 MiB chunks from one half
 * of memory the size of the model's weights (16-128 MiB) into the other.
 * Measured on this VM, that traffic through the caches doubles what the
 * communication's operations cost alone, where a busy loop, which touches
 * no memory, does not (docs/benchmarks.md, the thirty-first session).
 */
#define ITR_STREAM_CHUNK (1u << 20)
struct itr_stream {
	char *mem;
	size_t half, off;
};

/* Allocate and touch the stream's memory; every rank goes on, or none (a
 * rank short of memory fails them all with -ENOMEM). ok: this rank's other
 * allocations succeeded. */
static int stream_init(struct itr_rank *k, struct itr_stream *st, bool ok)
{
	size_t mem = (size_t)trn_model_param_bytes(k->m);
	double bad;
	int ret;

	mem = mem < (16u << 20) ? 16u << 20 : mem > (128u << 20) ? 128u << 20 : mem;
	st->half = mem / 2 / ITR_STREAM_CHUNK * ITR_STREAM_CHUNK;
	st->off = 0;
	st->mem = malloc(2 * st->half);
	bad = ok && st->mem != NULL ? 0 : 1;
	ret = tp_comm_oob_max(tp_dev_comm_base(k->d), &bad);
	if (ret == 0 && bad > 0)
		ret = -ENOMEM;
	if (ret == 0)
		memset(st->mem, 1, 2 * st->half);
	return ret;
}

/* Copy one chunk (the copies are never read: the compiler must keep them). */
static void stream_chunk(struct itr_stream *st)
{
	memcpy(st->mem + (st->off + st->half) % (2 * st->half), st->mem + st->off,
	       ITR_STREAM_CHUNK);
	st->off = (st->off + ITR_STREAM_CHUNK) % (2 * st->half);
	__asm__ volatile("" : : "r"(st->mem) : "memory");
}

/*
 * The CPU a pipeline stage's messages cost, measured the way a stage sends
 * them: through a communication thread (started for this and stopped
 * again) or inline, as the stage will (itr_comm_inline), each round a
 * receive from the previous rank and a send to the next (a ring: a stage
 * in the middle of a pipeline does both per operation), posted by this
 * thread, checksummed by the communication's side (as a host stage's are:
 * a cost per byte), then ITR_MSG_WORK_NS of this thread's compute's memory
 * traffic (struct itr_stream) while they are in flight (the communication
 * thread's wake-ups and progress meanwhile count, as in a stage; inline,
 * the polls between the chunks), then waited for here. *cpu: this
 * process's CPU seconds per round (two messages of count floats each),
 * less the streaming's. Timed at two sizes, it gives the cost per byte
 * and per message (trn_msg_cpu_fit).
 */
#define ITR_MSG_WORK_NS (1 * ICE_NSEC_PER_MSEC)
static int time_msgs(struct itr_rank *k, float *buf, size_t count, int iters, double *cpu)
{
	struct tp_comm *c = tp_dev_comm_base(k->d);
	struct itr_stream st = {0};
	struct itr_cthread t;
	struct itr_cop snd, rcv;
	int n = k->n, r = k->r;
	double c0 = 0, work = 0, w0;
	bool blocked;
	int ret, r2;

	ret = stream_init(k, &st, true);
	if (ret == 0)
		ret = tp_comm_barrier(c);
	if (ret == 0)
		ret = itr_cthread_start(&t, k->d, itr_comm_inline(k)); /* the communicator is its
									* own until stopped */
	if (ret < 0) {
		free(st.mem);
		return ret;
	}
	memset(&snd, 0, sizeof(snd));
	memset(&rcv, 0, sizeof(rcv));
	for (int i = -2; ret == 0 && i < iters; i++) {
		if (i == 0) {
			c0 = ice_process_cpu_s();
			work = 0;
		}
		rcv.hash = snd.hash = true;
		itr_cop_post(&t, &rcv, COP_RECV, buf + count, count, (r + n - 1) % n);
		itr_cop_post(&t, &snd, COP_SEND, buf, count, (r + 1) % n);
		w0 = ice_thread_cpu_s() - t.cpu_s;
		for (uint64_t end = ice_now_ns() + ITR_MSG_WORK_NS; ice_now_ns() < end;) {
			stream_chunk(&st);
			itr_cthread_poll(&t); /* inline, as a stage polls between products */
		}
		work += ice_thread_cpu_s() - t.cpu_s - w0;
		ret = cop_wait(&t, &snd, &blocked);
		r2 = cop_wait(&t, &rcv, &blocked);
		if (ret == 0)
			ret = r2;
	}
	if (ret == 0)
		*cpu = (ice_process_cpu_s() - c0 - work) / iters;
	r2 = itr_cthread_stop(&t);
	free(st.mem);
	return ret < 0 ? ret : r2;
}

/*
 * The CPU of a DP bucket's exchange as a host rank's step pays it: the
 * operations the step runs (sharded: a reduce-scatter, then an
 * all-gather; replicated: an all-reduce; in the job's dtypes, with their
 * conversions) on a communication thread (started for this and stopped
 * again), while this thread makes the compute's memory traffic (struct
 * itr_stream), as the compute does between its hand-offs; an fp32
 * all-reduce on the calling thread, timed alone, priced half of what the
 * steps took (docs/benchmarks.md, the thirty-first session). *cpu: this
 * process's CPU seconds per bucket of count floats, less the streaming
 * thread's.
 */
static int time_exchange(struct itr_rank *k, size_t count, int iters, double *cpu)
{
	const struct trn_model *m = k->m;
	size_t counts[TRN_MAX_DEVICES], mine = 0;
	bool g_half = m->grad == TRN_GRAD_BF16, w_half = k->sharded && m->param == TRN_GRAD_BF16;
	/* the gradient; sharded, the weights, and in bf16 an fp32 master apart
	 * (in fp32 a host rank's master is its weights) */
	float *g = calloc(count, 4), *w = k->sharded ? calloc(count, 4) : NULL;
	float *wm = w_half ? calloc(count, 4) : NULL;
	uint16_t *g16 = g_half ? calloc(count, 2) : NULL, *w16 = w_half ? calloc(count, 2) : NULL;
	struct itr_stream st = {0};
	struct itr_cthread t;
	struct itr_cop op[2];
	double c0 = 0, work = 0;
	int nop = k->sharded ? 2 : 1, ret, r2;
	bool blocked;

	for (int r = 0; r < k->n; r++) {
		counts[r] = count / (size_t)k->n + ((size_t)r < count % (size_t)k->n);
		mine += r < k->r ? counts[r] : 0;
	}
	ret = stream_init(k, &st,
			  g && (w || !k->sharded) && (g16 || !g_half) && (wm || !w_half) &&
				  (w16 || !w_half));
	if (ret == 0)
		ret = tp_comm_barrier(tp_dev_comm_base(k->d));
	if (ret == 0)
		ret = itr_cthread_start(&t, k->d, false); /* the communicator is its own until
							   * stopped */
	if (ret < 0)
		goto out;
	for (int i = -2; ret == 0 && i < iters; i++) {
		if (i == 0) {
			c0 = ice_process_cpu_s();
			work = 0;
		}
		for (int j = 0; ret == 0 && j < nop; j++) {
			struct itr_cop *o = &op[j];
			enum itr_cop_kind kind = !k->sharded ? COP_ALLREDUCE
						 : j == 0    ? COP_RS
							     : COP_AG;
			bool bf16 = kind == COP_AG ? m->param == TRN_GRAD_BF16
						   : m->grad == TRN_GRAD_BF16;
			double w0;

			memset(o, 0, sizeof(*o));
			o->hbuf = kind != COP_AG ? g : bf16 ? wm : w;
			o->counts = counts;
			o->mine = mine;
			o->half = bf16 ? (kind == COP_AG ? w16 : g16) : NULL;
			o->hout = kind == COP_AG && bf16 ? w : NULL;
			itr_cop_post(&t, o, kind, kind == COP_AG ? w : g, count, -1);
			w0 = ice_thread_cpu_s();
			while (!itr_cop_done(&t, o))
				stream_chunk(&st);
			work += ice_thread_cpu_s() - w0;
			ret = cop_wait(&t, o, &blocked);
		}
	}
	if (ret == 0)
		*cpu = (ice_process_cpu_s() - c0 - work) / iters;
	r2 = itr_cthread_stop(&t);
	ret = ret < 0 ? ret : r2;
out:
	free(st.mem);
	free(g);
	free(w);
	free(wm);
	free(g16);
	free(w16);
	return ret;
}

/* CPU seconds per element of a bucket of count floats rounded to bf16 and
 * widened back, as the communication thread converts them (thread CPU
 * time: a quota's throttling not counted; the best of five). */
static double time_cvt(size_t count)
{
	float *f = calloc(count, sizeof(float));
	uint16_t *b = calloc(count, sizeof(uint16_t));
	double best = 0;

	if (f != NULL && b != NULL && count > 0) {
		for (int i = 0; i < 5; i++) {
			double t0 = ice_thread_cpu_s(), t;

			dev_float_to_bf16_n(b, f, count);
			dev_bf16_to_float_n(f, b, count);
			t = (ice_thread_cpu_s() - t0) / (2.0 * (double)count);
			best = i == 0 || t < best ? t : best;
		}
	}
	free(f);
	free(b);
	return best;
}

/* Every rank's cores and CPU costs, the same on all ranks (each fills its
 * own slot, a maximum over the ranks fills the rest). */
static int share_cpu(struct itr_rank *k, struct trn_net *net)
{
	struct tp_comm *c = tp_dev_comm_base(k->d);
	int ret = 0;

	for (int r = 0; r < k->n && ret == 0; r++) {
		ret = tp_comm_oob_max(c, &net->cores[r]);
		if (ret == 0)
			ret = tp_comm_oob_max(c, &net->cpu_ar_s[r]);
		if (ret == 0)
			ret = tp_comm_oob_max(c, &net->cpu_p2p_s[r]);
		if (ret == 0)
			ret = tp_comm_oob_max(c, &net->cpu_msg_s[r]);
		if (ret == 0)
			ret = tp_comm_oob_max(c, &net->cpu_cvt_s[r]);
		if (ret == 0)
			ret = tp_comm_oob_max(c, &net->cpu_ex_s[r]);
	}
	return ret;
}

/* Measure the all-reduce bus bandwidth on one bucket, the point-to-point
 * bandwidth on one activation and the latency on one float, on this job's
 * communicator; every rank ends with the same figures (the slowest). */
int itr_calibrate(struct itr_rank *k, size_t bucket_count, size_t act_count, struct trn_net *net)
{
	size_t cnt = bucket_count > 2 * act_count ? bucket_count : 2 * act_count;
	double t_ar, t_lat, t_p2p, c_ar = 0, c_lat = 0, c_p2p = 0, c_msg1 = 0, c_msg = 0, dev = 1;
	bool msgs = false;
	float *buf;
	float *h;
	int ret;

	memset(net, 0, sizeof(*net));
	net->overlap = k->job->overlap;
	if (k->n == 1) {
		/* nothing to talk to: communication costs nothing */
		net->busbw_gbps = 1e6;
		net->p2p_gbps = 1e6;
		net->lat_s = 0;
		return 0;
	}
	h = calloc(cnt, 4);
	buf = itr_dev_alloc(k, cnt * 4);
	if (h == NULL || buf == NULL) {
		free(h);
		k->ops->free(buf);
		return -ENOMEM;
	}
	ret = k->host ? 0 : k->ops->from_host(buf, h, cnt * 4);
	if (k->host)
		memset(buf, 0, cnt * 4);
	if (ret == 0)
		ret = time_op(k->d, 0, buf, bucket_count, 5, &t_ar, &c_ar);
	if (ret == 0)
		ret = time_op(k->d, 1, buf, 1, 20, &t_lat, &c_lat);
	if (ret == 0)
		ret = time_op(k->d, 1, buf, act_count, 5, &t_p2p, &c_p2p);
	/* where every rank's memory is the host's (dev 0 on every rank after
	 * the maximum), the communication's CPU is timed as a step pays it */
	if (ret == 0 && !k->job->no_contention) {
		dev = k->host ? 0 : 1;
		ret = tp_comm_oob_max(tp_dev_comm_base(k->d), &dev);
	}
	/* a pipeline's messages as its stages send them (their sends and
	 * receives are posted, so the ring cannot deadlock): of one float and
	 * of one activation (act_count is the model's: the same on every
	 * rank) */
	if (ret == 0 && k->job->scheme == ITR_PP && dev == 0 && act_count > 1) {
		msgs = true;
		ret = time_msgs(k, buf, 1, 20, &c_msg1);
		if (ret == 0)
			ret = time_msgs(k, buf, act_count, 20, &c_msg);
	}
	free(h);
	k->ops->free(buf);
	if (ret < 0)
		return ret;
	net->busbw_gbps = (double)bucket_count * 4 / t_ar * 2.0 * (k->n - 1) / k->n / 1e9;
	net->lat_s = t_lat;
	net->p2p_gbps = (double)act_count * 4 / (t_p2p > t_lat ? t_p2p - t_lat : t_p2p) / 1e9;
	/* CPU contention: this rank's cores, as the kernel limits them, and
	 * its CPU per byte (a bucket's gradient; a send/recv moves an
	 * activation each way). --no-contention: not priced. */
	if (!k->job->no_contention) {
		net->cores[k->r] = ice_cpu_cores(NULL, 0);
		net->cpu_ar_s[k->r] = c_ar / ((double)bucket_count * 4);
		net->cpu_p2p_s[k->r] = c_p2p / (2.0 * (double)act_count * 4);
		/* a host pipeline: per byte and per message as a stage pays
		 * them, the checksums in the bytes' share, as the stage
		 * computes one per byte (ice_train_step.c); an activation of
		 * one float has one size only: its messages are not priced */
		if (msgs && trn_msg_cpu_fit(4, c_msg1, (double)act_count * 4, c_msg,
					    &net->cpu_p2p_s[k->r], &net->cpu_msg_s[k->r]) < 0)
			return -EINVAL;
	}
	/* DP exchanging bf16: the conversions of a bucket, on the
	 * collectives' path (also with --no-contention) */
	if (k->job->scheme == ITR_DP && trn_grad_cvt_share(k->m, 1) > 0)
		net->cpu_cvt_s[k->r] = time_cvt(bucket_count);
	/* DP: the exchange's CPU per byte as the step pays it
	 * (time_exchange), its conversions as priced apart taken out; never
	 * below the all-reduce's alone */
	if (k->job->scheme == ITR_DP && dev == 0) {
		double cx = 0, bytes = (double)bucket_count * 4 * trn_grad_wire_share(k->m);
		double cvt = net->cpu_cvt_s[k->r] * (double)bucket_count *
			     trn_grad_cvt_share(k->m, 1.0 / k->n);

		ret = time_exchange(k, bucket_count, 5, &cx);
		if (ret < 0)
			return ret;
		net->cpu_ex_s[k->r] = cx;
		if (bytes > 0)
			net->cpu_ar_s[k->r] = fmax(net->cpu_ar_s[k->r], (cx - cvt) / bytes);
	}
	(void)c_lat;
	return share_cpu(k, net);
}
