// SPDX-License-Identifier: Apache-2.0
/*
 * dev_gpu: the host half of the device memory backends (dev_gpu.h).
 *
 * Threads and streams: the current device is per host thread in the vendor
 * runtimes, so each thread's first call selects $ICE_DEVICE on it and
 * creates that thread's compute and copy streams and copy event (struct
 * dev_gpu_thread behind a pthread key; freed at thread exit). Every
 * synchronous operation (to_host, from_host, reduce, scale_div, sgemm,
 * convert, sgd) runs on the calling thread's compute stream and waits for
 * it before returning. sgemm_async queues its product there and returns;
 * the stream's own order puts later work after it, compute_wait (or any
 * synchronous call) waits for it, and a copy_async, whose stream does not
 * follow the compute stream, waits for it first. copy_async runs on its
 * copy stream and records the copy_done event after each copy; while
 * copies are pending, work on the compute stream is first made to wait for
 * that event (or, when recording it failed, for the copy stream), so a
 * reduce that reads a buffer a copy is still filling is ordered after the
 * copy on the device even when the caller did not call copy_wait first. A
 * copy counts as pending from the moment it is queued; copy_wait always
 * synchronises the thread's copy stream.
 *
 * Probe: after selecting the device, loading runs a one-element kernel and
 * waits for it, so a GPU the plugin has no kernel binary for is reported
 * then ("no kernel image for this GPU (sm_75); built for ...") instead of
 * at the first collective.
 *
 * Tracking: every allocation made here is kept with its size. A pointer
 * inside a known allocation must fit in it (-EINVAL otherwise, instead of a
 * device fault); device pointers from elsewhere (the application's own
 * allocator) are passed through. copy_async insists on pinned memory from
 * host_alloc on the host side, as the contract says: a pageable buffer would
 * silently make the copy synchronous.
 *
 * Errors: the plugin returns native codes; gpu_err() classifies them
 * (dev_rt.h) into -ENOMEM, -EINVAL, -ENODEV, -EOPNOTSUPP or -EIO and logs
 * the runtime's own message once per failing call.
 */
#include "dev_gpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ice_log.h"

static int gpu_err(struct dev_gpu *g, int native, const char *what)
{
	int cls, ret;

	if (native == 0)
		return 0;
	cls = g->rt->classify(native);
	switch (cls) {
	case DEV_RT_ENOMEM:
		ret = -ENOMEM;
		break;
	case DEV_RT_EINVAL:
		ret = -EINVAL;
		break;
	case DEV_RT_ENODEV:
	case DEV_RT_ENODRV:
	case DEV_RT_ENOIMAGE:
		ret = -ENODEV;
		break;
	case DEV_RT_EUNSUPP:
		ret = -EOPNOTSUPP;
		break;
	default:
		ret = -EIO;
		break;
	}
	ice_err(ICE_SUB_COLL, "%s: %s failed: %s (%d)", g->name, what, g->rt->error_string(native),
		native);
	return ret;
}

/* ---- loading ---- */

static void *try_dlopen(const char *path, char *err, size_t len)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (h == NULL) {
		const char *e = dlerror();

		snprintf(err, len, "%s", e != NULL ? e : "unknown dlopen error");
	}
	return h;
}

static int gpu_fail(struct dev_gpu *g, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int gpu_fail(struct dev_gpu *g, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g->why, sizeof(g->why), fmt, ap);
	va_end(ap);
	g->load_err = err;
	ice_info(ICE_SUB_COLL, "%s backend unusable: %s", g->name, g->why);
	return err;
}

static int gpu_open_plugin(struct dev_gpu *g)
{
	const char *env = getenv(g->env);
	const char *cands[3] = {g->build_path, g->install_path, g->lib};
	char err[192] = "";
	dev_rt_get_fn get;

	if (env != NULL && env[0] != '\0') {
		g->dl = try_dlopen(env, err, sizeof(err));
	} else {
		for (int i = 0; i < 3 && g->dl == NULL; i++) {
			/* a full path that is not there: the next one */
			if (cands[i] == NULL ||
			    (strchr(cands[i], '/') != NULL && access(cands[i], F_OK) != 0))
				continue;
			g->dl = try_dlopen(cands[i], err, sizeof(err));
		}
	}
	if (g->dl == NULL) {
		if (strstr(err, g->runtime) != NULL)
			return gpu_fail(g, -ENODEV, "%s not found: %s", g->runtime, err);
		if (env != NULL && env[0] != '\0')
			return gpu_fail(g, -ENODEV, "%s=%s cannot be loaded: %s", g->env, env, err);
		return gpu_fail(g, -ENODEV, "%s not found (set %s): %s", g->lib, g->env, err);
	}
	*(void **)&get = dlsym(g->dl, DEV_RT_ENTRY);
	if (get == NULL)
		return gpu_fail(g, -ENODEV, "%s has no %s: not an ICE device plugin", g->lib,
				DEV_RT_ENTRY);
	g->rt = get(DEV_RT_ABI);
	if (g->rt == NULL || g->rt->abi != DEV_RT_ABI)
		return gpu_fail(g, -ENODEV, "%s speaks another plugin ABI than %d", g->lib,
				DEV_RT_ABI);
	return 0;
}

/* ---- per-thread state ---- */

static void gpu_thread_destroy(struct dev_gpu_thread *t)
{
	const struct dev_rt *rt = t->g->rt;

	if (t->copy_done != NULL)
		rt->event_destroy(t->copy_done);
	if (t->copy != NULL)
		rt->stream_destroy(t->copy);
	if (t->compute != NULL)
		rt->stream_destroy(t->compute);
	free(t);
}

/* pthread key destructor: the thread exits */
static void gpu_thread_free(void *p)
{
	gpu_thread_destroy(p);
}

/* This thread's state, made on its first call: select the device on this
 * thread, then create its streams and event; 0 or -errno. */
static int gpu_thread_new(struct dev_gpu *g, struct dev_gpu_thread **tp)
{
	struct dev_gpu_thread *t = calloc(1, sizeof(*t));
	int ret;

	if (t == NULL)
		return -ENOMEM;
	t->g = g;
	t->copy_event_ok = true;
	ret = gpu_err(g, g->rt->set_device(g->dev), "set device");
	if (ret == 0)
		ret = gpu_err(g, g->rt->stream_create(&t->compute), "stream create");
	if (ret == 0)
		ret = gpu_err(g, g->rt->stream_create(&t->copy), "stream create");
	if (ret == 0)
		ret = gpu_err(g, g->rt->event_create(&t->copy_done), "event create");
	if (ret == 0 && pthread_setspecific(g->tkey, t) != 0)
		ret = -ENOMEM;
	if (ret != 0) {
		gpu_thread_destroy(t);
		return ret;
	}
	*tp = t;
	return 0;
}

/* A one-element kernel on the stream, waited for; 0 or a native error. */
static int gpu_probe_kernel(struct dev_gpu *g, struct dev_gpu_thread *t)
{
	void *p = NULL;
	int ret = g->rt->malloc(&p, 1);

	if (ret == 0) {
		ret = g->rt->scale_div(p, 1, (int)DEV_UINT8, 1, t->compute);
		if (ret == 0)
			ret = g->rt->stream_sync(t->compute);
		g->rt->free(p);
	}
	return ret;
}

static int gpu_open_device(struct dev_gpu *g)
{
	const char *sel = getenv("ICE_DEVICE");
	struct dev_gpu_thread *t;
	char name[128] = "?";
	int n = 0, ret, cls;

	ret = g->rt->device_count(&n);
	if (ret != 0) {
		cls = g->rt->classify(ret);
		if (cls == DEV_RT_ENODEV)
			return gpu_fail(g, -ENODEV, "no %s device (%s)", g->vendor,
					g->rt->error_string(ret));
		if (cls == DEV_RT_ENODRV)
			return gpu_fail(g, -ENODEV, "no usable %s driver (%s)", g->vendor,
					g->rt->error_string(ret));
		return gpu_fail(g, -EIO, "%s device query failed: %s", g->vendor,
				g->rt->error_string(ret));
	}
	if (n <= 0)
		return gpu_fail(g, -ENODEV, "no %s device", g->vendor);
	g->dev = 0;
	if (sel != NULL && sel[0] != '\0') {
		char *end;
		long v = strtol(sel, &end, 10);

		if (*end != '\0' || v < 0 || v >= n)
			return gpu_fail(g, -EINVAL, "ICE_DEVICE=%s: expected a device index 0..%d",
					sel, n - 1);
		g->dev = (int)v;
	}
	ret = g->rt->set_device(g->dev);
	if (ret != 0)
		return gpu_fail(g, gpu_err(g, ret, "set device"), "%s device %d: %s", g->vendor,
				g->dev, g->rt->error_string(ret));
	g->rt->device_name(g->dev, name, sizeof(name));
	snprintf(g->arch, sizeof(g->arch), "?");
	g->rt->device_arch(g->dev, g->arch, sizeof(g->arch));
	if (pthread_key_create(&g->tkey, gpu_thread_free) != 0)
		return gpu_fail(g, -ENOMEM, "%s: no thread-specific key left", g->name);
	ret = gpu_thread_new(g, &t);
	if (ret != 0)
		return gpu_fail(g, ret, "%s device %d: cannot create streams / events", g->vendor,
				g->dev);
	ret = gpu_probe_kernel(g, t);
	if (ret != 0) {
		pthread_setspecific(g->tkey, NULL);
		gpu_thread_destroy(t);
		cls = g->rt->classify(ret);
		if (cls == DEV_RT_ENOIMAGE)
			return gpu_fail(g, -ENODEV,
					"no kernel image for this GPU (%s, %s); built for %s",
					g->arch, name, g->rt->built_for);
		return gpu_fail(g, gpu_err(g, ret, "test kernel"),
				"%s device %d (%s, %s): test kernel failed: %s", g->vendor, g->dev,
				name, g->arch, g->rt->error_string(ret));
	}
	snprintf(g->why, sizeof(g->why), "%s device %d of %d: %s (%s)", g->vendor, g->dev, n, name,
		 g->arch);
	ice_info(ICE_SUB_COLL, "%s backend: %s", g->name, g->why);
	return 0;
}

/* Load the plugin and open the device, once; 0 or the remembered error. */
static int gpu_ready(struct dev_gpu *g)
{
	int ret;

	pthread_mutex_lock(&g->lock);
	if (!g->loaded) {
		g->loaded = true;
		ret = gpu_open_plugin(g);
		if (ret == 0)
			ret = gpu_open_device(g);
		g->load_err = ret;
	}
	ret = g->load_err;
	pthread_mutex_unlock(&g->lock);
	return ret;
}

int dev_gpu_probe(struct dev_gpu *g, char *why, size_t len)
{
	int ret = gpu_ready(g);

	if (why != NULL && len > 0)
		snprintf(why, len, "%s", g->why);
	return ret;
}

/* ---- allocation tracking (under lock) ---- */

static struct dev_gpu_alloc *find_alloc(struct dev_gpu *g, const void *p)
{
	uintptr_t a = (uintptr_t)p;

	for (size_t i = 0; i < g->nallocs; i++) {
		uintptr_t b = (uintptr_t)g->allocs[i].p;

		if (a >= b && a - b < (g->allocs[i].len ? g->allocs[i].len : 1))
			return &g->allocs[i];
	}
	return NULL;
}

/* 0 when [p, p + len) fits in the allocation that holds p, if any, and
 * that allocation is of the wanted sort; need_known: p must be tracked. */
static int check_range(struct dev_gpu *g, const void *p, size_t len, bool pinned, bool need_known,
		       const char *what)
{
	struct dev_gpu_alloc *a;
	int ret = 0;

	pthread_mutex_lock(&g->lock);
	a = find_alloc(g, p);
	if (a == NULL) {
		if (need_known)
			ret = -EINVAL;
	} else if (a->pinned != pinned || (uintptr_t)p - (uintptr_t)a->p + len > a->len) {
		ret = -EINVAL;
	}
	pthread_mutex_unlock(&g->lock);
	if (ret != 0)
		ice_err(ICE_SUB_COLL, "%s: %s: %p + %zu is not inside %s memory from this backend",
			g->name, what, p, len, pinned ? "pinned host" : "device");
	return ret;
}

/* The backend is loaded and this thread set up (device selected on it,
 * its streams made): 0 or -errno. */
static int gpu_enter(struct dev_gpu *g, struct dev_gpu_thread **tp)
{
	int ret = gpu_ready(g);

	if (ret != 0)
		return ret;
	*tp = pthread_getspecific(g->tkey);
	if (*tp != NULL)
		return 0;
	return gpu_thread_new(g, tp);
}

int dev_gpu_mem_info(struct dev_gpu *g, size_t *free_b, size_t *total_b)
{
	struct dev_gpu_thread *t;
	int ret = gpu_enter(g, &t);

	if (ret != 0)
		return ret;
	if (free_b == NULL || total_b == NULL)
		return -EINVAL;
	return gpu_err(g, g->rt->mem_info(free_b, total_b), "mem_info");
}

void *dev_gpu_alloc(struct dev_gpu *g, size_t len, bool pinned)
{
	struct dev_gpu_thread *t;
	void *p = NULL;
	int ret = gpu_enter(g, &t);

	if (ret != 0) {
		errno = -ret;
		return NULL;
	}
	if (len == 0)
		len = 1;
	pthread_mutex_lock(&g->lock);
	if (g->nallocs == g->cap_allocs) {
		size_t cap = g->cap_allocs ? 2 * g->cap_allocs : 16;
		struct dev_gpu_alloc *na = realloc(g->allocs, cap * sizeof(*na));

		if (na == NULL) {
			pthread_mutex_unlock(&g->lock);
			errno = ENOMEM;
			return NULL;
		}
		g->allocs = na;
		g->cap_allocs = cap;
	}
	ret = pinned ? g->rt->host_malloc(&p, len) : g->rt->malloc(&p, len);
	if (ret != 0 || p == NULL) {
		pthread_mutex_unlock(&g->lock);
		ret = ret != 0 ? gpu_err(g, ret, pinned ? "pinned alloc" : "alloc") : -ENOMEM;
		errno = -ret;
		return NULL;
	}
	g->allocs[g->nallocs++] = (struct dev_gpu_alloc){.p = p, .len = len, .pinned = pinned};
	if (pinned)
		g->pinned_bytes += len;
	else
		g->dev_bytes += len;
	pthread_mutex_unlock(&g->lock);
	return p;
}

void dev_gpu_free(struct dev_gpu *g, void *p, bool pinned)
{
	struct dev_gpu_thread *t;
	struct dev_gpu_alloc *a;
	int ret;

	if (p == NULL)
		return;
	/* select the device on this thread; a failure here (no streams) does
	 * not keep the memory from being freed */
	(void)gpu_enter(g, &t);
	pthread_mutex_lock(&g->lock);
	a = find_alloc(g, p);
	if (a == NULL || a->p != p || a->pinned != pinned) {
		pthread_mutex_unlock(&g->lock);
		ice_err(ICE_SUB_COLL,
			"%s: free of %p, which is not a %s allocation of this backend", g->name, p,
			pinned ? "pinned host" : "device");
		return;
	}
	if (pinned)
		g->pinned_bytes -= a->len;
	else
		g->dev_bytes -= a->len;
	*a = g->allocs[--g->nallocs];
	/* freeing synchronises the device: pending copies are complete after */
	ret = pinned ? g->rt->host_free(p) : g->rt->free(p);
	pthread_mutex_unlock(&g->lock);
	if (ret != 0)
		gpu_err(g, ret, "free");
}

/* ---- copies and kernels ---- */

/* Order this thread's compute stream after its in-flight copies. */
static int compute_after_copies(struct dev_gpu *g, struct dev_gpu_thread *t)
{
	int ret;

	if (t->copies_pending == 0)
		return 0;
	if (t->copy_event_ok)
		return gpu_err(g, g->rt->stream_wait_event(t->compute, t->copy_done),
			       "stream wait");
	/* the event does not follow the last copy: wait for the copy stream */
	ret = gpu_err(g, g->rt->stream_sync(t->copy), "copy stream sync");
	if (ret == 0) {
		t->copies_pending = 0;
		t->copy_event_ok = true;
	}
	return ret;
}

static int compute_sync(struct dev_gpu *g, struct dev_gpu_thread *t, int launch_ret,
			const char *what)
{
	int ret = gpu_err(g, launch_ret, what);

	if (ret == 0) {
		ret = gpu_err(g, g->rt->stream_sync(t->compute), what);
		t->compute_pending = false;
	}
	return ret;
}

/* The checks every copy starts with: 1 when there is nothing to copy, 0 to
 * go on (*t is the calling thread's state), or a negative errno. */
static int copy_enter(struct dev_gpu *g, struct dev_gpu_thread **t, size_t len,
		      enum dev_copy_dir dir)
{
	int ret = gpu_enter(g, t);

	if (ret != 0)
		return ret;
	if (len == 0)
		return 1;
	if (dir != DEV_COPY_TO_HOST && dir != DEV_COPY_FROM_HOST)
		return -EINVAL;
	return 0;
}

/* Queues the copy on stream s; the runtime's result. */
static int copy_queue(struct dev_gpu *g, void *dst, const void *src, size_t len,
		      enum dev_copy_dir dir, void *s)
{
	return g->rt->memcpy_async(dst, src, len, dir == DEV_COPY_TO_HOST ? DEV_RT_D2H : DEV_RT_H2D,
				   s);
}

int dev_gpu_copy(struct dev_gpu *g, void *dst, const void *src, size_t len, enum dev_copy_dir dir)
{
	struct dev_gpu_thread *t;
	int ret = copy_enter(g, &t, len, dir);
	const void *dev = dir == DEV_COPY_TO_HOST ? src : dst;
	const void *host = dir == DEV_COPY_TO_HOST ? dst : src;

	if (ret != 0)
		return ret < 0 ? ret : 0;
	ret = check_range(g, dev, len, false, false, "copy");
	/* pageable host memory is not tracked; pinned memory from host_alloc
	 * is, and a copy must stay inside it */
	if (ret == 0)
		ret = check_range(g, host, len, true, false, "copy (host side)");
	if (ret == 0)
		ret = compute_after_copies(g, t);
	if (ret == 0)
		ret = compute_sync(g, t, copy_queue(g, dst, src, len, dir, t->compute), "copy");
	return ret;
}

int dev_gpu_copy_async(struct dev_gpu *g, void *dst, const void *src, size_t len,
		       enum dev_copy_dir dir)
{
	const void *dev = dir == DEV_COPY_TO_HOST ? src : dst;
	const void *host = dir == DEV_COPY_TO_HOST ? dst : src;
	struct dev_gpu_thread *t;
	int ret = copy_enter(g, &t, len, dir);

	if (ret != 0)
		return ret < 0 ? ret : 0;
	ret = check_range(g, host, len, true, true, "copy_async (host side)");
	if (ret == 0)
		ret = check_range(g, dev, len, false, false, "copy_async (device side)");
	/* the copy stream does not wait for the compute stream: a product
	 * still queued may write or read what the copy touches */
	if (ret == 0 && t->compute_pending)
		ret = dev_gpu_compute_wait(g);
	if (ret == 0)
		ret = gpu_err(g, copy_queue(g, dst, src, len, dir, t->copy), "copy_async");
	if (ret != 0)
		return ret;
	/* queued: pending from now on, whatever happens to the event */
	t->copies_pending++;
	t->copy_event_ok = false;
	ret = gpu_err(g, g->rt->event_record(t->copy_done, t->copy), "event record");
	if (ret == 0)
		t->copy_event_ok = true;
	return ret;
}

int dev_gpu_copy_wait(struct dev_gpu *g)
{
	struct dev_gpu_thread *t;
	int ret = gpu_enter(g, &t);

	if (ret != 0)
		return ret;
	/* always: a copy whose bookkeeping failed half-way is still waited for */
	ret = gpu_err(g, g->rt->stream_sync(t->copy), "copy_wait");
	t->copies_pending = 0;
	t->copy_event_ok = true;
	return ret;
}

int dev_gpu_reduce(struct dev_gpu *g, void *dst, const void *src, size_t count, enum dev_dtype t,
		   enum dev_redop op)
{
	struct dev_gpu_thread *th;
	int ret = gpu_enter(g, &th);
	size_t len;

	if (ret != 0)
		return ret;
	if ((unsigned)t >= DEV_DTYPE_MAX || (unsigned)op >= DEV_REDOP_MAX)
		return -EINVAL;
	if (count == 0)
		return 0;
	len = count * dev_dtype_size(t);
	ret = check_range(g, dst, len, false, false, "reduce dst");
	if (ret == 0)
		ret = check_range(g, src, len, false, false, "reduce src");
	if (ret == 0)
		ret = compute_after_copies(g, th);
	if (ret == 0)
		ret = compute_sync(g, th,
				   g->rt->reduce(dst, src, count, (int)t, (int)op, th->compute),
				   "reduce");
	return ret;
}

int dev_gpu_scale_div(struct dev_gpu *g, void *buf, size_t count, enum dev_dtype t, int n)
{
	struct dev_gpu_thread *th;
	int ret = gpu_enter(g, &th);

	if (ret != 0)
		return ret;
	if ((unsigned)t >= DEV_DTYPE_MAX || n <= 0)
		return -EINVAL;
	if (count == 0)
		return 0;
	ret = check_range(g, buf, count * dev_dtype_size(t), false, false, "scale_div");
	if (ret == 0)
		ret = compute_after_copies(g, th);
	if (ret == 0)
		ret = compute_sync(g, th, g->rt->scale_div(buf, count, (int)t, n, th->compute),
				   "scale_div");
	return ret;
}

int dev_gpu_convert(struct dev_gpu *g, void *dst, enum dev_dtype dt, const void *src,
		    enum dev_dtype st, size_t count)
{
	struct dev_gpu_thread *th;
	int ret = gpu_enter(g, &th);

	if (ret != 0)
		return ret;
	if (dt == st || (dt != DEV_FLOAT16 && dt != DEV_FLOAT32 && dt != DEV_BFLOAT16) ||
	    (st != DEV_FLOAT16 && st != DEV_FLOAT32 && st != DEV_BFLOAT16))
		return -EINVAL;
	if (count == 0)
		return 0;
	ret = check_range(g, dst, count * dev_dtype_size(dt), false, false, "convert dst");
	if (ret == 0)
		ret = check_range(g, src, count * dev_dtype_size(st), false, false, "convert src");
	if (ret == 0)
		ret = compute_after_copies(g, th);
	if (ret == 0)
		ret = compute_sync(g, th,
				   g->rt->convert(dst, (int)dt, src, (int)st, count, th->compute),
				   "convert");
	return ret;
}

int dev_gpu_sgd(struct dev_gpu *g, float *w, const float *gr, float scale, size_t count)
{
	struct dev_gpu_thread *th;
	int ret = gpu_enter(g, &th);

	if (ret != 0 || count == 0)
		return ret;
	ret = check_range(g, w, count * 4, false, false, "sgd weights");
	if (ret == 0)
		ret = check_range(g, gr, count * 4, false, false, "sgd gradient");
	if (ret == 0)
		ret = compute_after_copies(g, th);
	if (ret == 0)
		ret = compute_sync(g, th, g->rt->sgd(w, gr, scale, count, th->compute), "sgd");
	return ret;
}

/* The checks and ordering every product starts with; 0 to launch on
 * (*tp)->compute, or a negative errno (1: nothing to compute). */
static int sgemm_enter(struct dev_gpu *g, struct dev_gpu_thread **tp, int m, int n, int k,
		       const float *a, const float *b, const float *c)
{
	int ret = gpu_enter(g, tp);

	if (ret != 0)
		return ret;
	if (m < 0 || n < 0 || k < 0)
		return -EINVAL;
	if (m == 0 || n == 0)
		return 1;
	if (k > 0) {
		ret = check_range(g, a, (size_t)m * (size_t)k * sizeof(float), false, false,
				  "sgemm A");
		if (ret == 0)
			ret = check_range(g, b, (size_t)k * (size_t)n * sizeof(float), false, false,
					  "sgemm B");
	}
	if (ret == 0)
		ret = check_range(g, c, (size_t)m * (size_t)n * sizeof(float), false, false,
				  "sgemm C");
	if (ret == 0)
		ret = compute_after_copies(g, *tp);
	return ret;
}

int dev_gpu_sgemm_async(struct dev_gpu *g, bool ta, bool tb, int m, int n, int k, float alpha,
			const float *a, const float *b, float beta, float *c)
{
	struct dev_gpu_thread *t;
	int ret = sgemm_enter(g, &t, m, n, k, a, b, c);

	if (ret != 0)
		return ret < 0 ? ret : 0;
	ret = gpu_err(g, g->rt->sgemm(ta, tb, m, n, k, alpha, a, b, beta, c, t->compute), "sgemm");
	if (ret == 0)
		t->compute_pending = true;
	return ret;
}

int dev_gpu_compute_wait(struct dev_gpu *g)
{
	struct dev_gpu_thread *t;
	int ret = gpu_enter(g, &t);

	if (ret != 0 || !t->compute_pending)
		return ret;
	t->compute_pending = false;
	return gpu_err(g, g->rt->stream_sync(t->compute), "compute_wait");
}

/* The queued product, waited for. */
int dev_gpu_sgemm(struct dev_gpu *g, bool ta, bool tb, int m, int n, int k, float alpha,
		  const float *a, const float *b, float beta, float *c)
{
	int ret = dev_gpu_sgemm_async(g, ta, tb, m, n, k, alpha, a, b, beta, c);

	return ret == 0 ? dev_gpu_compute_wait(g) : ret;
}
