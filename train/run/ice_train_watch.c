// SPDX-License-Identifier: Apache-2.0
/*
 * ice-train: the device watchdog. A device that hangs (a kernel that never
 * finishes, a driver that stops answering, a host core that is frozen)
 * holds the thread that called it inside the call, where neither that
 * thread nor the transport's stall watch (tp_comm_progress, which runs
 * only when called) can look. The peers see the job stall and end
 * (--stall-timeout), but the hung rank itself would wait for ever, its
 * process left on a host of the cluster. So every device call of a rank
 * goes through a table of dev_mem_ops that notes, per thread, which call
 * runs and since when, and a thread of its own ends the process once one
 * call has run longer than the stall timeout: its connections close, and
 * its peers see it end at once. (PyTorch's NCCL process group pairs its
 * watchdog with a heartbeat monitor thread for the same reason.) One rank
 * per process (ice-train starts each rank as a process of its own), so the
 * notes are the process's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ice_time.h"
#include "ice_train_internal.h"

/* what one thread's device call is: its name, since when (0: none) */
struct watch_slot {
	const char *_Atomic call;
	_Atomic uint64_t since_ns;
	int depth; /* calls nested in this thread (the owner's alone) */
};

static const char *const slot_name[ITR_WATCH_SLOTS] = {"compute", "communication"};
static struct watch_slot slots[ITR_WATCH_SLOTS];
static _Thread_local int my_slot; /* ITR_WATCH_COMPUTE unless told */

static const struct dev_mem_ops *real;
static struct dev_mem_ops guarded;

static struct {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool on, stop;
	uint64_t timeout_ns;
	int rank;
	const char *dev, *kind;
} dog;

void itr_watch_thread(enum itr_watch_slot s)
{
	my_slot = s;
}

void itr_watch_enter(const char *call)
{
	struct watch_slot *s = &slots[my_slot];

	if (s->depth++ > 0)
		return;
	atomic_store_explicit(&s->call, call, memory_order_relaxed);
	atomic_store_explicit(&s->since_ns, ice_now_ns(), memory_order_release);
}

void itr_watch_leave(void)
{
	struct watch_slot *s = &slots[my_slot];

	if (--s->depth == 0)
		atomic_store_explicit(&s->since_ns, 0, memory_order_release);
}

/* ---- the guarded device calls ---------------------------------------------- */

static int g_to_host(void *dst, const void *src, size_t len)
{
	int ret;

	itr_watch_enter("to_host");
	ret = real->to_host(dst, src, len);
	itr_watch_leave();
	return ret;
}

static int g_from_host(void *dst, const void *src, size_t len)
{
	int ret;

	itr_watch_enter("from_host");
	ret = real->from_host(dst, src, len);
	itr_watch_leave();
	return ret;
}

static int g_copy_async(void *dst, const void *src, size_t len, enum dev_copy_dir dir)
{
	int ret;

	itr_watch_enter("copy_async");
	ret = real->copy_async(dst, src, len, dir);
	itr_watch_leave();
	return ret;
}

static int g_copy_wait(void)
{
	int ret;

	itr_watch_enter("copy_wait");
	ret = real->copy_wait();
	itr_watch_leave();
	return ret;
}

static int g_reduce(void *dst, const void *src, size_t count, enum dev_dtype t, enum dev_redop op)
{
	int ret;

	itr_watch_enter("reduce");
	ret = real->reduce(dst, src, count, t, op);
	itr_watch_leave();
	return ret;
}

static int g_scale_div(void *buf, size_t count, enum dev_dtype t, int n)
{
	int ret;

	itr_watch_enter("scale_div");
	ret = real->scale_div(buf, count, t, n);
	itr_watch_leave();
	return ret;
}

static int g_sgemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *a,
		   const float *b, float beta, float *c)
{
	int ret;

	itr_watch_enter("sgemm");
	ret = real->sgemm(ta, tb, m, n, k, alpha, a, b, beta, c);
	itr_watch_leave();
	return ret;
}

static int g_sgemm_async(bool ta, bool tb, int m, int n, int k, float alpha, const float *a,
			 const float *b, float beta, float *c)
{
	int ret;

	itr_watch_enter("sgemm_async");
	ret = real->sgemm_async(ta, tb, m, n, k, alpha, a, b, beta, c);
	itr_watch_leave();
	return ret;
}

static int g_compute_wait(void)
{
	int ret;

	itr_watch_enter("compute_wait");
	ret = real->compute_wait();
	itr_watch_leave();
	return ret;
}

static int g_convert(void *dst, enum dev_dtype dt, const void *src, enum dev_dtype st, size_t count)
{
	int ret;

	itr_watch_enter("convert");
	ret = real->convert(dst, dt, src, st, count);
	itr_watch_leave();
	return ret;
}

static int g_sgd(float *w, const float *g, float scale, size_t count)
{
	int ret;

	itr_watch_enter("sgd");
	ret = real->sgd(w, g, scale, count);
	itr_watch_leave();
	return ret;
}

const struct dev_mem_ops *itr_watch_ops(const struct dev_mem_ops *ops)
{
	real = ops;
	guarded = *ops;
	/* the calls that run on the device or wait for it; allocation,
	 * probing and memory figures go straight through */
#define GUARD(f) guarded.f = ops->f ? g_##f : NULL
	GUARD(to_host);
	GUARD(from_host);
	GUARD(copy_async);
	GUARD(copy_wait);
	GUARD(reduce);
	GUARD(scale_div);
	GUARD(sgemm);
	GUARD(sgemm_async);
	GUARD(compute_wait);
	GUARD(convert);
	GUARD(sgd);
#undef GUARD
	return &guarded;
}

/* ---- the watchdog thread ----------------------------------------------------- */

static void *dog_main(void *arg)
{
	/* a tick of a tenth of the timeout, 10 ms to 1 s */
	uint64_t tick = dog.timeout_ns / 10;

	(void)arg;
	if (tick < 10 * ICE_NSEC_PER_MSEC)
		tick = 10 * ICE_NSEC_PER_MSEC;
	if (tick > ICE_NSEC_PER_SEC)
		tick = ICE_NSEC_PER_SEC;
	pthread_mutex_lock(&dog.mu);
	while (!dog.stop) {
		uint64_t at = ice_now_ns() + tick;
		struct timespec ts = {.tv_sec = (time_t)(at / ICE_NSEC_PER_SEC),
				      .tv_nsec = (long)(at % ICE_NSEC_PER_SEC)};

		pthread_cond_timedwait(&dog.cv, &dog.mu, &ts);
		for (int i = 0; i < ITR_WATCH_SLOTS && !dog.stop; i++) {
			uint64_t since =
				atomic_load_explicit(&slots[i].since_ns, memory_order_acquire);
			const char *call =
				atomic_load_explicit(&slots[i].call, memory_order_relaxed);
			uint64_t now = ice_now_ns();

			if (since == 0 || now < since || now - since <= dog.timeout_ns)
				continue;
			/* stderr is unbuffered: the line is out before the exit */
			fprintf(stderr,
				"ice-train: rank %d: its device (%s, %s) has not returned from %s "
				"for %.1f s, on the %s thread (--stall-timeout %.1f s): the "
				"device hangs; ending this rank, so that its peers see it end\n",
				dog.rank, dog.dev, dog.kind, call, (double)(now - since) * 1e-9,
				slot_name[i], (double)dog.timeout_ns * 1e-9);
			_exit(1);
		}
	}
	pthread_mutex_unlock(&dog.mu);
	return NULL;
}

int itr_watch_start(int rank, const char *dev, const char *kind, uint64_t timeout_ns)
{
	pthread_condattr_t ca;
	int ret;

	if (dog.on || timeout_ns == 0)
		return dog.on ? -EBUSY : 0;
	dog.rank = rank;
	dog.dev = dev;
	dog.kind = kind;
	dog.timeout_ns = timeout_ns;
	dog.stop = false;
	pthread_mutex_init(&dog.mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&dog.cv, &ca);
	pthread_condattr_destroy(&ca);
	ret = pthread_create(&dog.th, NULL, dog_main, NULL);
	if (ret != 0) {
		pthread_cond_destroy(&dog.cv);
		pthread_mutex_destroy(&dog.mu);
		return -ret;
	}
	dog.on = true;
	return 0;
}

void itr_watch_stop(void)
{
	if (!dog.on)
		return;
	pthread_mutex_lock(&dog.mu);
	dog.stop = true;
	pthread_cond_signal(&dog.cv);
	pthread_mutex_unlock(&dog.mu);
	pthread_join(dog.th, NULL);
	pthread_cond_destroy(&dog.cv);
	pthread_mutex_destroy(&dog.mu);
	dog.on = false;
}
