// SPDX-License-Identifier: Apache-2.0
/*
 * fake_devrt: the CPU test double of a device runtime plugin; see
 * fake_devrt.h. Kernels are the host library's (dev_reduce, dev_scale_div,
 * dev_host_sgemm), so the double checks the backends' host logic, not the
 * device kernels (those are compiled by nvcc / hipcc and run on GPUs).
 */
#include "fake_devrt.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dev_rt.h"
#include "dev.h"

struct fake_alloc {
	void *p;
	size_t len;
	int pinned;
	int dev; /* device memory: the device current when it was allocated */
	struct fake_alloc *next;
};

enum fop_kind { FOP_COPY, FOP_REDUCE, FOP_DIV, FOP_SGEMM, FOP_CVT, FOP_SGD };

struct fop {
	enum fop_kind kind;
	void *dst;
	const void *src;
	size_t len; /* bytes (copy) or count */
	int dtype, op, n;
	int ta, tb, m, k;
	float alpha, beta;
	const float *b;
};

struct fstream {
	int dev; /* the device current when it was created */
	struct fop *q;
	size_t nq, cap, done; /* queued so far, executed so far */
};

struct fevent {
	struct fstream *s;
	size_t seq;
};

static struct fake_devrt_ctl ctl;
static struct fake_alloc *allocs;
static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int cur_dev; /* this thread's current device, 0 at start */

static void fake_unlock(int *unused)
{
	(void)unused;
	pthread_mutex_unlock(&fake_lock);
}

/* at the top of every entry: the lock, held until the function returns */
#define ENTER                                                                                      \
	pthread_mutex_lock(&fake_lock);                                                            \
	int fake_guard_ __attribute__((cleanup(fake_unlock), unused)) = 0

struct fake_devrt_ctl *fake_devrt_ctl(void)
{
	return &ctl;
}

static struct fake_alloc *lookup(const void *p, size_t len, int pinned)
{
	for (struct fake_alloc *a = allocs; a != NULL; a = a->next)
		if ((uintptr_t)p >= (uintptr_t)a->p &&
		    (uintptr_t)p + len <= (uintptr_t)a->p + a->len && a->pinned == pinned)
			return a;
	return NULL;
}

static int is_dev(const void *p, size_t len)
{
	return lookup(p, len ? len : 1, 0) != NULL;
}

/* device memory of the calling thread's current device */
static int is_dev_here(const void *p, size_t len)
{
	struct fake_alloc *a = lookup(p, len ? len : 1, 0);

	return a != NULL && a->dev == cur_dev;
}

/* work queued on s from this thread: s must be of its current device */
static int wrong_device(const struct fstream *s)
{
	if (s != NULL && s->dev != cur_dev) {
		ctl.wrong_device++;
		return 1;
	}
	return 0;
}

static void run_op(struct fop *o)
{
	switch (o->kind) {
	case FOP_COPY:
		memcpy(o->dst, o->src, o->len);
		break;
	case FOP_REDUCE:
		dev_reduce(o->dst, o->src, o->len, (enum dev_dtype)o->dtype, (enum dev_redop)o->op);
		break;
	case FOP_DIV:
		dev_scale_div(o->dst, o->len, (enum dev_dtype)o->dtype, o->n);
		break;
	case FOP_SGEMM:
		dev_host_sgemm(o->ta, o->tb, o->m, o->n, o->k, o->alpha, o->src, o->b, o->beta,
			       o->dst);
		break;
	case FOP_CVT:
		dev_convert(o->dst, (enum dev_dtype)o->dtype, o->src, (enum dev_dtype)o->n, o->len);
		break;
	case FOP_SGD:
		dev_sgd(o->dst, o->src, o->alpha, o->len);
		break;
	}
	ctl.executed++;
}

static void drain(struct fstream *s, size_t upto)
{
	while (s->done < upto && s->done < s->nq)
		run_op(&s->q[s->done++]);
}

static int enqueue(struct fstream *s, const struct fop *o)
{
	if (s == NULL)
		return FAKE_EINVAL;
	if (s->nq == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct fop *q = realloc(s->q, cap * sizeof(*q));

		if (q == NULL)
			return FAKE_ENOMEM;
		s->q = q;
		s->cap = cap;
	}
	s->q[s->nq++] = *o;
	ctl.queued++;
	return 0;
}

static int f_classify(int native)
{
	switch (native) {
	case FAKE_SUCCESS:
		return DEV_RT_OK;
	case FAKE_EINVAL:
		return DEV_RT_EINVAL;
	case FAKE_ENOMEM:
		return DEV_RT_ENOMEM;
	case FAKE_ENODRV:
		return DEV_RT_ENODRV;
	case FAKE_ENODEV:
		return DEV_RT_ENODEV;
	case FAKE_ELAUNCH:
		return DEV_RT_ELAUNCH;
	case FAKE_ENOIMAGE:
		return DEV_RT_ENOIMAGE;
	case FAKE_EHANDLE:
		return DEV_RT_EINVAL;
	default:
		return DEV_RT_EOTHER;
	}
}

static const char *f_error_string(int native)
{
	switch (native) {
	case FAKE_SUCCESS:
		return "no error";
	case FAKE_EINVAL:
		return "fake: invalid argument";
	case FAKE_ENOMEM:
		return "fake: out of memory";
	case FAKE_ENODRV:
		return "fake: driver too old";
	case FAKE_ENODEV:
		return "fake: no device";
	case FAKE_ELAUNCH:
		return "fake: unspecified launch failure";
	case FAKE_ENOIMAGE:
		return "fake: no kernel image is available for execution on the device";
	case FAKE_EHANDLE:
		return "fake: invalid resource handle";
	default:
		return "fake: unknown error";
	}
}

static int f_runtime_version(int *v)
{
	ENTER;
	*v = 13000;
	return 0;
}

static int f_device_count(int *n)
{
	ENTER;
	*n = ctl.ndev;
	return ctl.ndev > 0 ? 0 : FAKE_ENODEV;
}

static int f_set_device(int dev)
{
	ENTER;
	if (dev < 0 || dev >= ctl.ndev)
		return FAKE_EINVAL;
	cur_dev = dev;
	return 0;
}

static int f_device_name(int dev, char *buf, size_t len)
{
	ENTER;
	snprintf(buf, len, "fake device %d", dev);
	return 0;
}

static int f_device_arch(int dev, char *buf, size_t len)
{
	ENTER;
	snprintf(buf, len, "fake_%d", 75 + dev);
	return 0;
}

/* Device memory allocated on device dev, bytes. */
static size_t dev_used(int dev)
{
	size_t used = 0;

	for (struct fake_alloc *a = allocs; a != NULL; a = a->next)
		if (!a->pinned && a->dev == dev)
			used += a->len;
	return used;
}

static int f_mem_info(size_t *free_b, size_t *total_b)
{
	ENTER;
	*total_b = ctl.mem_total;
	*free_b = ctl.mem_total - dev_used(cur_dev);
	return 0;
}

static int f_alloc(void **p, size_t len, int pinned)
{
	struct fake_alloc *a;

	if (ctl.fail_malloc > 0) {
		ctl.fail_malloc--;
		return FAKE_ENOMEM;
	}
	if (!pinned && dev_used(cur_dev) + len > ctl.mem_total)
		return FAKE_ENOMEM;
	a = calloc(1, sizeof(*a));
	if (a == NULL || posix_memalign(&a->p, 256, len ? len : 1) != 0) {
		free(a);
		return FAKE_ENOMEM;
	}
	/* fresh device memory holds garbage, not zeros */
	memset(a->p, 0xa5, len);
	a->len = len;
	a->pinned = pinned;
	a->dev = cur_dev;
	a->next = allocs;
	allocs = a;
	*p = a->p;
	ctl.live++;
	return 0;
}

static int f_free_kind(void *p, int pinned)
{
	for (struct fake_alloc **pp = &allocs; *pp != NULL; pp = &(*pp)->next) {
		struct fake_alloc *a = *pp;

		if (a->p == p && a->pinned == pinned) {
			*pp = a->next;
			free(a->p);
			free(a);
			ctl.live--;
			return 0;
		}
	}
	return FAKE_EINVAL;
}

static int f_malloc(void **p, size_t len)
{
	ENTER;
	ctl.mallocs++;
	return f_alloc(p, len, 0);
}

static int f_free(void *p)
{
	ENTER;
	ctl.frees++;
	return f_free_kind(p, 0);
}

static int f_host_malloc(void **p, size_t len)
{
	ENTER;
	ctl.host_mallocs++;
	return f_alloc(p, len, 1);
}

static int f_host_free(void *p)
{
	ENTER;
	ctl.host_frees++;
	return f_free_kind(p, 1);
}

static int f_stream_create(void **s)
{
	ENTER;
	struct fstream *st = calloc(1, sizeof(*st));

	*s = st;
	if (st == NULL)
		return FAKE_ENOMEM;
	st->dev = cur_dev;
	ctl.streams_created++;
	return 0;
}

static int f_stream_destroy(void *s)
{
	ENTER;
	struct fstream *st = s;

	drain(st, st->nq);
	free(st->q);
	free(st);
	ctl.streams_destroyed++;
	return 0;
}

/* a kernel that never finishes: the synchronisation never returns (the
 * lock held, as a runtime stuck in its driver would hold its own) */
static void maybe_hang(void)
{
	while (ctl.hang_sgemms > 0 && ctl.sgemms >= ctl.hang_sgemms)
		pause();
}

static int f_stream_sync(void *s)
{
	ENTER;
	struct fstream *st = s;

	ctl.stream_syncs++;
	maybe_hang();
	drain(st, st->nq);
	return 0;
}

static int f_event_create(void **e)
{
	ENTER;
	*e = calloc(1, sizeof(struct fevent));
	return *e != NULL ? 0 : FAKE_ENOMEM;
}

static int f_event_destroy(void *e)
{
	ENTER;
	free(e);
	return 0;
}

static int f_event_record(void *e, void *s)
{
	ENTER;
	struct fevent *ev = e;

	if (ctl.fail_event_record > 0) {
		ctl.fail_event_record--;
		return FAKE_EINVAL;
	}
	if (wrong_device(s))
		return FAKE_EHANDLE;
	ev->s = s;
	ev->seq = ev->s->nq;
	return 0;
}

static int f_event_sync(void *e)
{
	ENTER;
	struct fevent *ev = e;

	ctl.event_syncs++;
	maybe_hang();
	if (ev->s != NULL)
		drain(ev->s, ev->seq);
	return 0;
}

/* Conservative: the waited-for work is done now, before anything later is
 * queued on s. */
static int f_stream_wait_event(void *s, void *e)
{
	ENTER;
	struct fevent *ev = e;

	(void)s;
	ctl.stream_waits++;
	if (ev->s != NULL)
		drain(ev->s, ev->seq);
	return 0;
}

static int f_memcpy_async(void *dst, const void *src, size_t len, int dir, void *s)
{
	ENTER;
	struct fop o = {.kind = FOP_COPY, .dst = dst, .src = src, .len = len};

	ctl.copies++;
	if (wrong_device(s))
		return FAKE_EHANDLE;
	if ((dir == DEV_RT_D2H && (!is_dev(src, len) || is_dev(dst, len))) ||
	    (dir == DEV_RT_H2D && (!is_dev(dst, len) || is_dev(src, len))) ||
	    (dir == DEV_RT_D2D && (!is_dev(dst, len) || !is_dev(src, len))))
		return FAKE_EINVAL;
	return enqueue(s, &o);
}

static int launch_fails(void)
{
	if (ctl.fail_launch > 0) {
		ctl.fail_launch--;
		return ctl.launch_err != 0 ? ctl.launch_err : FAKE_ELAUNCH;
	}
	return 0;
}

static int f_reduce(void *dst, const void *src, size_t count, int dtype, int op, void *s)
{
	ENTER;
	int err;
	size_t len = count * dev_dtype_size((enum dev_dtype)dtype);
	struct fop o = {
		.kind = FOP_REDUCE, .dst = dst, .src = src, .len = count, .dtype = dtype, .op = op};

	ctl.reduces++;
	if (dtype < 0 || dtype >= DEV_DTYPE_MAX || op < 0 || op >= DEV_REDOP_MAX ||
	    !is_dev(dst, len) || !is_dev(src, len))
		return FAKE_EINVAL;
	if (wrong_device(s))
		return FAKE_EHANDLE;
	if (!is_dev_here(dst, len) || !is_dev_here(src, len))
		return FAKE_ELAUNCH; /* another GPU's memory: the kernel faults */
	if ((err = launch_fails()) != 0)
		return err;
	return enqueue(s, &o);
}

static int f_scale_div(void *buf, size_t count, int dtype, int n, void *s)
{
	ENTER;
	int err;
	struct fop o = {.kind = FOP_DIV, .dst = buf, .len = count, .dtype = dtype, .n = n};

	ctl.scale_divs++;
	if (dtype < 0 || dtype >= DEV_DTYPE_MAX || n <= 0 ||
	    !is_dev(buf, count * dev_dtype_size((enum dev_dtype)dtype)))
		return FAKE_EINVAL;
	if (wrong_device(s))
		return FAKE_EHANDLE;
	if (!is_dev_here(buf, count * dev_dtype_size((enum dev_dtype)dtype)))
		return FAKE_ELAUNCH;
	if ((err = launch_fails()) != 0)
		return err;
	return enqueue(s, &o);
}

static int f_convert(void *dst, int ddt, const void *src, int sdt, size_t count, void *s)
{
	ENTER;
	int err;
	struct fop o = {
		.kind = FOP_CVT, .dst = dst, .src = src, .len = count, .dtype = ddt, .n = sdt};
	bool ok = ddt != sdt;

	for (int i = 0; i < 2; i++) {
		int t = i ? sdt : ddt;

		ok = ok && (t == DEV_FLOAT16 || t == DEV_FLOAT32 || t == DEV_BFLOAT16);
	}
	ctl.converts++;
	if (!ok || !is_dev(dst, count * dev_dtype_size((enum dev_dtype)ddt)) ||
	    !is_dev(src, count * dev_dtype_size((enum dev_dtype)sdt)))
		return FAKE_EINVAL;
	if (wrong_device(s))
		return FAKE_EHANDLE;
	if (!is_dev_here(dst, count * dev_dtype_size((enum dev_dtype)ddt)) ||
	    !is_dev_here(src, count * dev_dtype_size((enum dev_dtype)sdt)))
		return FAKE_ELAUNCH;
	if ((err = launch_fails()) != 0)
		return err;
	return enqueue(s, &o);
}

static int f_sgd(float *w, const float *g, float scale, size_t count, void *s)
{
	ENTER;
	int err;
	struct fop o = {.kind = FOP_SGD, .dst = w, .src = g, .len = count, .alpha = scale};

	ctl.sgds++;
	if (!is_dev(w, count * 4) || !is_dev(g, count * 4))
		return FAKE_EINVAL;
	if (wrong_device(s))
		return FAKE_EHANDLE;
	if (!is_dev_here(w, count * 4) || !is_dev_here(g, count * 4))
		return FAKE_ELAUNCH;
	if ((err = launch_fails()) != 0)
		return err;
	return enqueue(s, &o);
}

static int f_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, const float *b,
		   float beta, float *c, void *s)
{
	ENTER;
	int err;
	struct fop o = {.kind = FOP_SGEMM,
			.dst = c,
			.src = a,
			.b = b,
			.ta = ta,
			.tb = tb,
			.m = m,
			.n = n,
			.k = k,
			.alpha = alpha,
			.beta = beta};

	ctl.sgemms++;
	if (!is_dev(a, (size_t)m * k * 4) || !is_dev(b, (size_t)k * n * 4) ||
	    !is_dev(c, (size_t)m * n * 4))
		return FAKE_EINVAL;
	if (wrong_device(s))
		return FAKE_EHANDLE;
	if (!is_dev_here(a, (size_t)m * k * 4) || !is_dev_here(b, (size_t)k * n * 4) ||
	    !is_dev_here(c, (size_t)m * n * 4))
		return FAKE_ELAUNCH;
	if ((err = launch_fails()) != 0)
		return err;
	return enqueue(s, &o);
}

static const struct dev_rt fake = {
	.abi = DEV_RT_ABI,
	.name = "fake",
	.classify = f_classify,
	.error_string = f_error_string,
	.runtime_version = f_runtime_version,
	.device_count = f_device_count,
	.set_device = f_set_device,
	.device_name = f_device_name,
	.malloc = f_malloc,
	.free = f_free,
	.host_malloc = f_host_malloc,
	.host_free = f_host_free,
	.stream_create = f_stream_create,
	.stream_destroy = f_stream_destroy,
	.stream_sync = f_stream_sync,
	.event_create = f_event_create,
	.event_destroy = f_event_destroy,
	.event_record = f_event_record,
	.event_sync = f_event_sync,
	.stream_wait_event = f_stream_wait_event,
	.memcpy_async = f_memcpy_async,
	.reduce = f_reduce,
	.scale_div = f_scale_div,
	.sgemm = f_sgemm,
	.device_arch = f_device_arch,
	.built_for = "fake_80, fake_90",
	.mem_info = f_mem_info,
	.convert = f_convert,
	.sgd = f_sgd,
};

const struct dev_rt *dev_rt_get(unsigned abi);

#ifdef FAKE_NEEDS_RT
int ice_stub_rt_version(void); /* from the runtime that is not there */
#endif

const struct dev_rt *dev_rt_get(unsigned abi)
{
	const char *nd = getenv("FAKE_DEVRT_NDEV"), *mib = getenv("FAKE_DEVRT_MEM_MIB");
	const char *hang = getenv("FAKE_DEVRT_HANG_SGEMMS");

	ctl.ndev = nd != NULL ? atoi(nd) : 1;
	ctl.mem_total = (mib != NULL ? strtoull(mib, NULL, 10) : 16384) << 20;
	ctl.hang_sgemms = hang != NULL ? atol(hang) : 0;
#ifdef FAKE_NEEDS_RT
	if (ice_stub_rt_version() != 1)
		return NULL;
#endif
	return abi == DEV_RT_ABI ? &fake : NULL;
}
