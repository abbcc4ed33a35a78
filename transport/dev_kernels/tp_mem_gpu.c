// SPDX-License-Identifier: Apache-2.0
/*
 * tp_mem_gpu: the host half of the device memory backends (tp_mem_gpu.h).
 *
 * Streams: every synchronous operation (to_host, from_host, reduce,
 * scale_div, sgemm) runs on the compute stream and waits for it before
 * returning. copy_async runs on the copy stream and records the copy_done
 * event after each copy; while copies are pending, work on the compute
 * stream is first made to wait for that event, so a reduce that reads a
 * buffer a copy is still filling is ordered after the copy on the device
 * even when the caller did not call copy_wait first. copy_wait synchronises
 * the copy stream.
 *
 * Tracking: every allocation made here is kept with its size. A pointer
 * inside a known allocation must fit in it (-EINVAL otherwise, instead of a
 * device fault); device pointers from elsewhere (the application's own
 * allocator) are passed through. copy_async insists on pinned memory from
 * host_alloc on the host side, as the contract says: a pageable buffer would
 * silently make the copy synchronous.
 *
 * Errors: the plugin returns native codes; gpu_err() classifies them
 * (tp_devrt.h) into -ENOMEM, -EINVAL, -ENODEV, -EOPNOTSUPP or -EIO and logs
 * the runtime's own message once per failing call.
 */
#include "tp_mem_gpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ice_log.h"

static int gpu_err(struct tp_gpu *g, int native, const char *what)
{
	int cls, ret;

	if (native == 0)
		return 0;
	cls = g->rt->classify(native);
	switch (cls) {
	case TP_DEVRT_ENOMEM:
		ret = -ENOMEM;
		break;
	case TP_DEVRT_EINVAL:
		ret = -EINVAL;
		break;
	case TP_DEVRT_ENODEV:
	case TP_DEVRT_ENODRV:
		ret = -ENODEV;
		break;
	case TP_DEVRT_EUNSUPP:
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

static int gpu_fail(struct tp_gpu *g, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int gpu_fail(struct tp_gpu *g, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g->why, sizeof(g->why), fmt, ap);
	va_end(ap);
	g->load_err = err;
	ice_info(ICE_SUB_COLL, "%s backend unusable: %s", g->name, g->why);
	return err;
}

static int gpu_open_plugin(struct tp_gpu *g)
{
	const char *env = getenv(g->env);
	const char *cands[3] = {g->build_path, g->install_path, g->lib};
	char err[192] = "";
	tp_devrt_get_fn get;

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
	*(void **)&get = dlsym(g->dl, TP_DEVRT_ENTRY);
	if (get == NULL)
		return gpu_fail(g, -ENODEV, "%s has no %s: not an ICE device plugin", g->lib,
				TP_DEVRT_ENTRY);
	g->rt = get(TP_DEVRT_ABI);
	if (g->rt == NULL || g->rt->abi != TP_DEVRT_ABI)
		return gpu_fail(g, -ENODEV, "%s speaks another plugin ABI than %d", g->lib,
				TP_DEVRT_ABI);
	return 0;
}

static int gpu_open_device(struct tp_gpu *g)
{
	const char *sel = getenv("ICE_DEVICE");
	char name[128] = "?";
	int n = 0, ret, cls;

	ret = g->rt->device_count(&n);
	if (ret != 0) {
		cls = g->rt->classify(ret);
		if (cls == TP_DEVRT_ENODEV)
			return gpu_fail(g, -ENODEV, "no %s device (%s)", g->vendor,
					g->rt->error_string(ret));
		if (cls == TP_DEVRT_ENODRV)
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
	if (g->rt->stream_create(&g->compute) != 0 || g->rt->stream_create(&g->copy) != 0 ||
	    g->rt->event_create(&g->copy_done) != 0) {
		if (g->copy != NULL)
			g->rt->stream_destroy(g->copy);
		if (g->compute != NULL)
			g->rt->stream_destroy(g->compute);
		g->copy = g->compute = NULL;
		return gpu_fail(g, -EIO, "%s device %d: cannot create streams / events", g->vendor,
				g->dev);
	}
	g->rt->device_name(g->dev, name, sizeof(name));
	snprintf(g->why, sizeof(g->why), "%s device %d of %d: %s", g->vendor, g->dev, n, name);
	ice_info(ICE_SUB_COLL, "%s backend: %s", g->name, g->why);
	return 0;
}

/* Load the plugin and open the device, once; 0 or the remembered error. */
static int gpu_ready(struct tp_gpu *g)
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

int tp_gpu_probe(struct tp_gpu *g, char *why, size_t len)
{
	int ret = gpu_ready(g);

	if (why != NULL && len > 0)
		snprintf(why, len, "%s", g->why);
	return ret;
}

/* ---- allocation tracking (under lock) ---- */

static struct tp_gpu_alloc *find_alloc(struct tp_gpu *g, const void *p)
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
static int check_range(struct tp_gpu *g, const void *p, size_t len, bool pinned, bool need_known,
		       const char *what)
{
	struct tp_gpu_alloc *a;
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

void *tp_gpu_alloc(struct tp_gpu *g, size_t len, bool pinned)
{
	void *p = NULL;
	int ret = gpu_ready(g);

	if (ret != 0) {
		errno = -ret;
		return NULL;
	}
	if (len == 0)
		len = 1;
	pthread_mutex_lock(&g->lock);
	if (g->nallocs == g->cap_allocs) {
		size_t cap = g->cap_allocs ? 2 * g->cap_allocs : 16;
		struct tp_gpu_alloc *na = realloc(g->allocs, cap * sizeof(*na));

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
	g->allocs[g->nallocs++] = (struct tp_gpu_alloc){.p = p, .len = len, .pinned = pinned};
	if (pinned)
		g->pinned_bytes += len;
	else
		g->dev_bytes += len;
	pthread_mutex_unlock(&g->lock);
	return p;
}

void tp_gpu_free(struct tp_gpu *g, void *p, bool pinned)
{
	struct tp_gpu_alloc *a;
	int ret;

	if (p == NULL)
		return;
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

/* Order the compute stream after in-flight copies. */
static int compute_after_copies(struct tp_gpu *g)
{
	if (g->copies_pending == 0)
		return 0;
	return gpu_err(g, g->rt->stream_wait_event(g->compute, g->copy_done), "stream wait");
}

static int compute_sync(struct tp_gpu *g, int launch_ret, const char *what)
{
	int ret = gpu_err(g, launch_ret, what);

	if (ret == 0)
		ret = gpu_err(g, g->rt->stream_sync(g->compute), what);
	return ret;
}

int tp_gpu_copy(struct tp_gpu *g, void *dst, const void *src, size_t len, enum tp_copy_dir dir)
{
	int ret = gpu_ready(g);
	const void *dev = dir == TP_COPY_TO_HOST ? src : dst;

	if (ret != 0)
		return ret;
	if (len == 0)
		return 0;
	if (dir != TP_COPY_TO_HOST && dir != TP_COPY_FROM_HOST)
		return -EINVAL;
	ret = check_range(g, dev, len, false, false, "copy");
	if (ret == 0)
		ret = compute_after_copies(g);
	if (ret == 0)
		ret = compute_sync(
			g,
			g->rt->memcpy_async(dst, src, len,
					    dir == TP_COPY_TO_HOST ? TP_DEVRT_D2H : TP_DEVRT_H2D,
					    g->compute),
			"copy");
	return ret;
}

int tp_gpu_copy_async(struct tp_gpu *g, void *dst, const void *src, size_t len,
		      enum tp_copy_dir dir)
{
	const void *dev = dir == TP_COPY_TO_HOST ? src : dst;
	const void *host = dir == TP_COPY_TO_HOST ? dst : src;
	int ret = gpu_ready(g);

	if (ret != 0)
		return ret;
	if (len == 0)
		return 0;
	if (dir != TP_COPY_TO_HOST && dir != TP_COPY_FROM_HOST)
		return -EINVAL;
	ret = check_range(g, host, len, true, true, "copy_async (host side)");
	if (ret == 0)
		ret = check_range(g, dev, len, false, false, "copy_async (device side)");
	if (ret == 0)
		ret = gpu_err(
			g,
			g->rt->memcpy_async(dst, src, len,
					    dir == TP_COPY_TO_HOST ? TP_DEVRT_D2H : TP_DEVRT_H2D,
					    g->copy),
			"copy_async");
	if (ret == 0)
		ret = gpu_err(g, g->rt->event_record(g->copy_done, g->copy), "event record");
	if (ret == 0)
		g->copies_pending++;
	return ret;
}

int tp_gpu_copy_wait(struct tp_gpu *g)
{
	int ret = gpu_ready(g);

	if (ret != 0 || g->copies_pending == 0)
		return ret;
	ret = gpu_err(g, g->rt->stream_sync(g->copy), "copy_wait");
	g->copies_pending = 0;
	return ret;
}

int tp_gpu_reduce(struct tp_gpu *g, void *dst, const void *src, size_t count, enum tp_dtype t,
		  enum tp_redop op)
{
	int ret = gpu_ready(g);
	size_t len;

	if (ret != 0)
		return ret;
	if ((unsigned)t >= TP_DTYPE_MAX || (unsigned)op >= TP_REDOP_MAX)
		return -EINVAL;
	if (count == 0)
		return 0;
	len = count * tp_dtype_size(t);
	ret = check_range(g, dst, len, false, false, "reduce dst");
	if (ret == 0)
		ret = check_range(g, src, len, false, false, "reduce src");
	if (ret == 0)
		ret = compute_after_copies(g);
	if (ret == 0)
		ret = compute_sync(g, g->rt->reduce(dst, src, count, (int)t, (int)op, g->compute),
				   "reduce");
	return ret;
}

int tp_gpu_scale_div(struct tp_gpu *g, void *buf, size_t count, enum tp_dtype t, int n)
{
	int ret = gpu_ready(g);

	if (ret != 0)
		return ret;
	if ((unsigned)t >= TP_DTYPE_MAX || n <= 0)
		return -EINVAL;
	if (count == 0)
		return 0;
	ret = check_range(g, buf, count * tp_dtype_size(t), false, false, "scale_div");
	if (ret == 0)
		ret = compute_after_copies(g);
	if (ret == 0)
		ret = compute_sync(g, g->rt->scale_div(buf, count, (int)t, n, g->compute),
				   "scale_div");
	return ret;
}

int tp_gpu_sgemm(struct tp_gpu *g, bool ta, bool tb, int m, int n, int k, float alpha,
		 const float *a, const float *b, float beta, float *c)
{
	int ret = gpu_ready(g);

	if (ret != 0)
		return ret;
	if (m < 0 || n < 0 || k < 0)
		return -EINVAL;
	if (m == 0 || n == 0)
		return 0;
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
		ret = compute_after_copies(g);
	if (ret == 0)
		ret = compute_sync(g,
				   g->rt->sgemm(ta, tb, m, n, k, alpha, a, b, beta, c, g->compute),
				   "sgemm");
	return ret;
}
