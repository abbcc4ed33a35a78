// SPDX-License-Identifier: Apache-2.0
/*
 * The CUDA / HIP memory backends' host logic (device/kernels/
 * dev_gpu.c) against fake_devrt, a CPU test double of the runtime plugin
 * (no GPU here): loading and probe errors, allocation tracking, pinned
 * staging, stream / event sequencing of async copies and of sgemm_async,
 * error mapping, every reduce / scale_div / sgemm call, the probe's test
 * kernel, and the threading contract (device selected and streams made per
 * thread). argv[1]: "cuda" or "hip"; the
 * meson test points $ICE_CUDA_LIB / $ICE_HIP_LIB at the double, and
 * $FAKE_NEEDS_RT_LIB at a copy of it that needs a runtime library that is
 * not there.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_devrt.h"
#include "ice_log.h"
#include "dev.h"

static enum dev_mem_kind kind = DEV_MEM_CUDA;
static const char *lib_env = "ICE_CUDA_LIB", *vendor = "CUDA", *runtime = "libcudart";

static const struct dev_mem_ops *ops(void)
{
	const struct dev_mem_ops *o = dev_mem_ops_get(kind);

	assert_non_null(o);
	return o;
}

/* Run probe() in a child after changing the environment (the backend
 * loads once per process); the child checks ret and the reason. */
static void probe_in_child_setup(const char *env, const char *val, int want, const char *why_has,
				 void (*setup)(void))
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		char why[256];
		int ret;

		setenv(env, val, 1);
		if (setup != NULL)
			setup();
		ret = ops()->probe(why, sizeof(why));
		if (ret != want || strstr(why, why_has) == NULL) {
			fprintf(stderr, "%s=%s: probe %d (want %d): \"%s\" (want \"%s\")\n", env,
				val, ret, want, why, why_has);
			_exit(1);
		}
		/* unusable: every call says so, nothing crashes */
		errno = 0;
		if (ops()->alloc(64) != NULL || errno != -want || ops()->copy_wait() != want)
			_exit(2);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void probe_in_child(const char *env, const char *val, int want, const char *why_has)
{
	probe_in_child_setup(env, val, want, why_has, NULL);
}

static void test_probe_plugin_missing(void **s)
{
	(void)s;
	probe_in_child(lib_env, "/nonexistent/libice-dev.so", -ENODEV, "cannot be loaded");
}

static void test_probe_runtime_missing(void **s)
{
	const char *p = getenv("FAKE_NEEDS_RT_LIB");
	char want[64];

	(void)s;
	if (p == NULL || kind != DEV_MEM_CUDA)
		skip();
	snprintf(want, sizeof(want), "%s not found", runtime);
	probe_in_child(lib_env, p, -ENODEV, want);
}

static void test_probe_no_device(void **s)
{
	char want[64];

	(void)s;
	snprintf(want, sizeof(want), "no %s device", vendor);
	probe_in_child("FAKE_DEVRT_NDEV", "0", -ENODEV, want);
}

static void test_probe_bad_device_index(void **s)
{
	(void)s;
	probe_in_child("ICE_DEVICE", "3", -EINVAL, "ICE_DEVICE=3");
}

/* A GPU the plugin has no kernel binary for: the probe's test kernel fails
 * to launch, and probe says so (not the first collective). */
static void no_image_setup(void)
{
	fake_devrt_ctl()->fail_launch = 1;
	fake_devrt_ctl()->launch_err = FAKE_ENOIMAGE;
}

static void test_probe_no_kernel_image(void **s)
{
	(void)s;
	probe_in_child_setup("ICE_DEVICE", "0", -ENODEV,
			     "no kernel image for this GPU (fake_75, fake device 0); built for "
			     "fake_80, fake_90",
			     no_image_setup);
}

/* Any other failure of the test kernel is reported too. */
static void launch_fail_setup(void)
{
	fake_devrt_ctl()->fail_launch = 1;
	fake_devrt_ctl()->launch_err = 0;
}

static void test_probe_kernel_fails(void **s)
{
	(void)s;
	probe_in_child_setup("ICE_DEVICE", "0", -EIO,
			     "test kernel failed: fake: unspecified launch", launch_fail_setup);
}

/* ---- threads ---- */

struct thread_job {
	int id, iters;
	int32_t *shared; /* NULL, or device memory another thread allocated */
	int err;	 /* 0, or the step that failed */
};

/* One thread's work: allocations, sync copies, async copies feeding
 * reduces (ordered by the thread's own copy event), scale_div, frees. */
static void *thread_work(void *arg)
{
	struct thread_job *j = arg;
	enum { N = 512 };
	int32_t *h = ops()->host_alloc(N * 4), *a = ops()->alloc(N * 4), *b = ops()->alloc(N * 4);
	int32_t out[N];

	if (h == NULL || a == NULL || b == NULL) {
		j->err = 1;
		goto out;
	}
	for (int it = 0; it < j->iters && j->err == 0; it++) {
		for (int i = 0; i < N; i++)
			h[i] = j->id * 1000 + it + i;
		if (ops()->from_host(a, h, N * 4) != 0)
			j->err = 2;
		else if (ops()->copy_async(b, h, N * 4, DEV_COPY_FROM_HOST) != 0)
			j->err = 3;
		else if (ops()->reduce(a, b, N, DEV_INT32, DEV_SUM) != 0)
			j->err = 4;
		else if (ops()->scale_div(a, N, DEV_INT32, 2) != 0)
			j->err = 5;
		else if (ops()->copy_wait() != 0)
			j->err = 6;
		else if (ops()->to_host(out, a, sizeof(out)) != 0)
			j->err = 7;
		for (int i = 0; i < N && j->err == 0; i++)
			if (out[i] != j->id * 1000 + it + i)
				j->err = 8;
		/* memory of the thread that loaded the backend, with this one's */
		if (j->shared == NULL || j->err != 0)
			continue;
		if (ops()->from_host(j->shared, h, N * 4) != 0)
			j->err = 9;
		else if (ops()->reduce(j->shared, a, N, DEV_INT32, DEV_SUM) != 0)
			j->err = 10;
		else if (ops()->to_host(out, j->shared, sizeof(out)) != 0)
			j->err = 11;
		for (int i = 0; i < N && j->err == 0; i++)
			if (out[i] != h[i] + j->id * 1000 + it + i)
				j->err = 12;
	}
out:
	ops()->free(a);
	ops()->free(b);
	ops()->host_free(h);
	return NULL;
}

/* CUDA keeps the current device per host thread and starts every new
 * thread on device 0. With ICE_DEVICE=1, a second thread (ice-train's
 * communication thread) must select device 1 itself before it allocates,
 * copies or launches: the double refuses work queued from a thread whose
 * current device is not the stream's / the memory's. */
static void test_second_thread_selects_device(void **s)
{
	pid_t pid;
	int status;

	(void)s;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct thread_job j = {.id = 1, .iters = 3};
		pthread_t th;
		char why[256];

		setenv("FAKE_DEVRT_NDEV", "2", 1);
		setenv("ICE_DEVICE", "1", 1);
		if (ops()->probe(why, sizeof(why)) != 0 || strstr(why, "device 1 of 2") == NULL) {
			fprintf(stderr, "probe: %s\n", why);
			_exit(1);
		}
		/* allocated here, reduced there (as ice-train's buffers are) */
		j.shared = ops()->alloc(4096);
		if (j.shared == NULL)
			_exit(5);
		if (pthread_create(&th, NULL, thread_work, &j) != 0)
			_exit(2);
		pthread_join(th, NULL);
		if (j.err != 0 || fake_devrt_ctl()->wrong_device != 0) {
			fprintf(stderr, "second thread: step %d failed, %ld calls on device 0\n",
				j.err, fake_devrt_ctl()->wrong_device);
			_exit(3);
		}
		/* and the loading thread still works */
		j.id = 2;
		thread_work(&j);
		_exit(j.err != 0 ? 4 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Each thread gets its own pair of streams (made on its first call, gone
 * when it exits), so threads never share a stream or a pending-copy count;
 * two threads running copies and kernels at once both get their results. */
static void test_threads_own_streams(void **s)
{
	struct fake_devrt_ctl *c = fake_devrt_ctl();
	struct thread_job j[2] = {{.id = 1, .iters = 200}, {.id = 2, .iters = 200}};
	pthread_t th[2];
	long made = c->streams_created, gone = c->streams_destroyed;

	(void)s;
	assert_int_equal(ops()->probe(NULL, 0), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, thread_work, &j[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(j[0].err, 0);
	assert_int_equal(j[1].err, 0);
	assert_int_equal(c->streams_created, made + 4);
	assert_int_equal(c->streams_destroyed, gone + 4);
	assert_int_equal(c->wrong_device, 0);
}

static void test_probe_ok(void **s)
{
	char why[256];

	(void)s;
	assert_int_equal(ops()->probe(why, sizeof(why)), 0);
	assert_non_null(strstr(why, "fake device 0 (fake_75)"));
	assert_int_equal(ops()->kind, kind);
}

static void test_alloc_tracking(void **s)
{
	struct fake_devrt_ctl *c = fake_devrt_ctl();
	long live = c->live, frees = c->frees;
	void *d = ops()->alloc(1000), *h = ops()->host_alloc(1000), *foreign = malloc(16);

	(void)s;
	assert_non_null(d);
	assert_non_null(h);
	assert_int_equal(c->live, live + 2);
	ops()->free(NULL);
	ops()->host_free(NULL);
	ops()->free(foreign); /* not ours: refused, not passed on */
	ops()->host_free(d);  /* device memory freed as pinned: refused */
	assert_int_equal(c->frees, frees);
	ops()->free(d);
	ops()->host_free(h);
	assert_int_equal(c->live, live);
	free(foreign);
}

/* mem_info: the device's total ($FAKE_DEVRT_MEM_MIB, 16 GiB by default)
 * less what is allocated there; pinned host memory is not the device's;
 * an allocation beyond it fails. The host backend: free within total. */
static void test_mem_info(void **s)
{
	const struct dev_mem_ops *h = dev_mem_ops_get(DEV_MEM_HOST);
	size_t f0, t0, f1, t1;
	void *d, *p, *big;

	(void)s;
	assert_int_equal(ops()->mem_info(&f0, &t0), 0);
	assert_true(t0 == (size_t)16 << 30);
	assert_true(f0 <= t0);
	d = ops()->alloc(1 << 20);
	p = ops()->host_alloc(1 << 20);
	assert_non_null(d);
	assert_non_null(p);
	assert_int_equal(ops()->mem_info(&f1, &t1), 0);
	assert_true(t1 == t0 && f1 == f0 - (1 << 20));
	big = ops()->alloc(f1 + 1);
	assert_null(big);
	ops()->free(d);
	ops()->host_free(p);
	assert_int_equal(ops()->mem_info(&f1, &t1), 0);
	assert_true(f1 == f0);
	assert_int_equal(h->mem_info(&f1, &t1), 0);
	assert_true(t1 > 0 && f1 > 0 && f1 <= t1);
	assert_int_equal(h->mem_info(NULL, &t1), -EINVAL);
}

/* convert: a kernel on the device between f32 and bf16, the host's bits;
 * host memory or the same type twice refused */
static void test_convert(void **s)
{
	struct fake_devrt_ctl *c = fake_devrt_ctl();
	float f[64], back[64];
	uint16_t want[64], got[64];
	float *df = ops()->alloc(sizeof(f));
	uint16_t *dh = ops()->alloc(sizeof(got));
	long n = c->converts;

	(void)s;
	for (int i = 0; i < 64; i++)
		f[i] = (float)i / 7.0f - 3.0f;
	f[5] = -0.0f;
	dev_float_to_bf16_n(want, f, 64);
	assert_int_equal(ops()->from_host(df, f, sizeof(f)), 0);
	assert_int_equal(ops()->convert(dh, DEV_BFLOAT16, df, DEV_FLOAT32, 64), 0);
	assert_int_equal(ops()->to_host(got, dh, sizeof(got)), 0);
	assert_memory_equal(got, want, sizeof(got));
	assert_int_equal(ops()->convert(df, DEV_FLOAT32, dh, DEV_BFLOAT16, 64), 0);
	assert_int_equal(ops()->to_host(back, df, sizeof(back)), 0);
	for (int i = 0; i < 64; i++)
		assert_true(back[i] == dev_bf16_to_float(want[i]));
	assert_int_equal(c->converts, n + 2);
	assert_int_equal(ops()->convert(dh, DEV_BFLOAT16, f, DEV_FLOAT32, 64), -EINVAL);
	assert_int_equal(ops()->convert(df, DEV_FLOAT32, df, DEV_FLOAT32, 64), -EINVAL);
	assert_int_equal(ops()->convert(dh, DEV_INT32, df, DEV_FLOAT32, 1), -EINVAL);
	ops()->free(df);
	ops()->free(dh);
}

/* sgd: a kernel on the device, the host's dev_sgd bits (the host kind's
 * op too); host memory refused */
static void test_sgd(void **s)
{
	struct fake_devrt_ctl *c = fake_devrt_ctl();
	float w[64], g[64], want[64], got[64];
	float *dw = ops()->alloc(sizeof(w));
	float *dg = ops()->alloc(sizeof(g));
	long n = c->sgds;

	(void)s;
	for (int i = 0; i < 64; i++) {
		w[i] = (float)i / 3.0f - 7.0f;
		g[i] = (float)(i * i) / 11.0f - 50.0f;
	}
	memcpy(want, w, sizeof(w));
	dev_sgd(want, g, 0.37f, 64);
	assert_int_equal(ops()->from_host(dw, w, sizeof(w)), 0);
	assert_int_equal(ops()->from_host(dg, g, sizeof(g)), 0);
	assert_int_equal(ops()->sgd(dw, dg, 0.37f, 64), 0);
	assert_int_equal(ops()->to_host(got, dw, sizeof(got)), 0);
	assert_memory_equal(got, want, sizeof(got));
	assert_int_equal(c->sgds, n + 1);
	assert_int_equal(dev_mem_ops_get(DEV_MEM_HOST)->sgd(w, g, 0.37f, 64), 0);
	assert_memory_equal(w, want, sizeof(w));
	assert_int_equal(ops()->sgd(w, dg, 0.37f, 64), -EINVAL);
	ops()->free(dw);
	ops()->free(dg);
}

static void test_sync_copies(void **s)
{
	uint8_t in[777], out[777];
	void *d = ops()->alloc(sizeof(in));

	(void)s;
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 31);
	assert_int_equal(ops()->from_host(d, in, sizeof(in)), 0);
	assert_int_equal(ops()->to_host(out, d, sizeof(out)), 0);
	assert_memory_equal(in, out, sizeof(in));
	assert_int_equal(ops()->to_host(out, d, 0), 0);
	/* past the end of the allocation: refused before the runtime sees it */
	assert_int_equal(ops()->to_host(out, (uint8_t *)d + 1, sizeof(out)), -EINVAL);
	/* the host side, when it is pinned memory from host_alloc, must fit too */
	uint8_t *h = ops()->host_alloc(100);

	assert_non_null(h);
	assert_int_equal(ops()->to_host(h, d, 101), -EINVAL);
	assert_int_equal(ops()->from_host(d, h + 50, 51), -EINVAL);
	assert_int_equal(ops()->to_host(h + 50, d, 50), 0);
	assert_memory_equal(h + 50, in, 50);
	/* a device pointer is not a host buffer */
	assert_int_equal(ops()->to_host(d, d, 16), -EINVAL);
	ops()->host_free(h);
	ops()->free(d);
}

static void test_async_copies_wait(void **s)
{
	struct fake_devrt_ctl *c = fake_devrt_ctl();
	size_t len = 4096;
	uint8_t *h = ops()->host_alloc(len), *h2 = ops()->host_alloc(len), *d = ops()->alloc(len);
	uint8_t *pageable = malloc(len);

	(void)s;
	memset(h, 7, len);
	memset(h2, 0, len);
	assert_int_equal(ops()->copy_async(d, h, len, DEV_COPY_FROM_HOST), 0);
	/* queued on the copy stream, not run yet (the double is lazy) */
	assert_int_equal(d[0], 0xa5);
	assert_int_equal(ops()->copy_async(h2, d, len, DEV_COPY_TO_HOST), 0);
	assert_int_equal(ops()->copy_wait(), 0);
	assert_int_equal(d[len - 1], 7);
	assert_int_equal(h2[len - 1], 7);
	assert_int_equal(ops()->copy_wait(), 0); /* nothing pending */
	/* the host side of an async copy must be pinned memory from host_alloc */
	long copies = c->copies;

	assert_int_equal(ops()->copy_async(d, pageable, len, DEV_COPY_FROM_HOST), -EINVAL);
	assert_int_equal(ops()->copy_async(h + 1, d, len, DEV_COPY_TO_HOST), -EINVAL);
	assert_int_equal(c->copies, copies);
	ops()->free(d);
	ops()->host_free(h);
	ops()->host_free(h2);
	free(pageable);
}

/* A copy whose event could not be recorded is still in flight: copy_wait
 * waits for it, and a reduce reading its destination runs after it. */
static void test_copy_pending_after_event_failure(void **s)
{
	struct fake_devrt_ctl *c = fake_devrt_ctl();
	int32_t *h = ops()->host_alloc(64 * 4), out[64];
	int32_t *a = ops()->alloc(64 * 4), *b = ops()->alloc(64 * 4);

	(void)s;
	for (int i = 0; i < 64; i++)
		h[i] = 3 * i;
	c->fail_event_record = 1;
	assert_int_not_equal(ops()->copy_async(b, h, 64 * 4, DEV_COPY_FROM_HOST), 0);
	assert_int_equal(b[0] + 0, (int32_t)0xa5a5a5a5); /* queued, not run (lazy double) */
	assert_int_equal(ops()->copy_wait(), 0);
	assert_int_equal(b[63], 3 * 63);

	/* the same, then a reduce without copy_wait: ordered after the copy */
	assert_int_equal(ops()->from_host(a, h, 64 * 4), 0);
	memset(out, 0, sizeof(out));
	for (int i = 0; i < 64; i++)
		h[i] = i;
	c->fail_event_record = 1;
	assert_int_not_equal(ops()->copy_async(b, h, 64 * 4, DEV_COPY_FROM_HOST), 0);
	assert_int_equal(ops()->reduce(a, b, 64, DEV_INT32, DEV_SUM), 0);
	assert_int_equal(ops()->to_host(out, a, sizeof(out)), 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(out[i], 4 * i);
	assert_int_equal(ops()->copy_wait(), 0);
	ops()->free(a);
	ops()->free(b);
	ops()->host_free(h);
}

/* A reduce of a buffer an async copy is still filling runs after the copy
 * (the compute stream waits for the copy event), even without copy_wait. */
static void test_reduce_ordered_after_copy(void **s)
{
	struct fake_devrt_ctl *c = fake_devrt_ctl();
	int32_t *h = ops()->host_alloc(64 * 4), out[64];
	int32_t *a = ops()->alloc(64 * 4), *b = ops()->alloc(64 * 4);
	long waits = c->stream_waits;

	(void)s;
	for (int i = 0; i < 64; i++)
		h[i] = i;
	assert_int_equal(ops()->from_host(a, h, 64 * 4), 0);
	assert_int_equal(ops()->copy_async(b, h, 64 * 4, DEV_COPY_FROM_HOST), 0);
	assert_int_equal(ops()->reduce(a, b, 64, DEV_INT32, DEV_SUM), 0);
	assert_int_equal(c->stream_waits, waits + 1);
	assert_int_equal(ops()->to_host(out, a, sizeof(out)), 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(out[i], 2 * i);
	assert_int_equal(ops()->copy_wait(), 0);
	ops()->free(a);
	ops()->free(b);
	ops()->host_free(h);
}

static void fill_random(void *buf, size_t n, enum dev_dtype t, unsigned seed)
{
	srand(seed);
	for (size_t i = 0; i < n; i++)
		dev_elem_set(buf, i, t,
			     (double)(rand() % 200 - 100) / (t >= DEV_FLOAT16 ? 8.0 : 1));
	if (t == DEV_FLOAT32 && n > 3)
		((float *)buf)[3] = NAN;
}

static void test_reduce_every_dtype_op(void **s)
{
	struct fake_devrt_ctl *c = fake_devrt_ctl();
	size_t n = 1001, len = n * 8;
	uint8_t x[8008], y[8008], want[8008], got[8008];
	void *da = ops()->alloc(len), *db = ops()->alloc(len);

	(void)s;
	for (int t = 0; t < DEV_DTYPE_MAX; t++) {
		size_t bytes = n * dev_dtype_size((enum dev_dtype)t);

		for (int op = 0; op < DEV_REDOP_MAX; op++) {
			long reduces = c->reduces;

			fill_random(x, n, (enum dev_dtype)t, 1 + t);
			fill_random(y, n, (enum dev_dtype)t, 100 + op);
			assert_int_equal(ops()->from_host(da, x, bytes), 0);
			assert_int_equal(ops()->from_host(db, y, bytes), 0);
			assert_int_equal(
				ops()->reduce(da, db, n, (enum dev_dtype)t, (enum dev_redop)op), 0);
			assert_int_equal(c->reduces, reduces + 1);
			assert_int_equal(ops()->to_host(got, da, bytes), 0);
			memcpy(want, x, bytes);
			dev_reduce(want, y, n, (enum dev_dtype)t, (enum dev_redop)op);
			assert_memory_equal(want, got, bytes);
		}
		/* AVG's division by the rank count, also past int8 / uint8 */
		static const int divs[] = {3, 200, 256, 1000};

		for (size_t k = 0; k < sizeof(divs) / sizeof(divs[0]); k++) {
			fill_random(want, n, (enum dev_dtype)t, 7 + (unsigned)k);
			assert_int_equal(ops()->from_host(da, want, bytes), 0);
			assert_int_equal(ops()->scale_div(da, n, (enum dev_dtype)t, divs[k]), 0);
			dev_scale_div(want, n, (enum dev_dtype)t, divs[k]);
			assert_int_equal(ops()->to_host(got, da, bytes), 0);
			assert_memory_equal(want, got, bytes);
		}
	}
	assert_int_equal(ops()->reduce(da, db, 0, DEV_FLOAT32, DEV_SUM), 0);
	assert_int_equal(ops()->reduce(da, db, 4, DEV_DTYPE_MAX, DEV_SUM), -EINVAL);
	assert_int_equal(ops()->reduce(da, db, 4, DEV_FLOAT32, DEV_REDOP_MAX), -EINVAL);
	assert_int_equal(ops()->scale_div(da, 4, DEV_FLOAT32, 0), -EINVAL);
	/* the second operand runs past its allocation */
	assert_int_equal(ops()->reduce(da, (uint8_t *)db + 8, n, DEV_FLOAT64, DEV_SUM), -EINVAL);
	ops()->free(da);
	ops()->free(db);
}

static void test_sgemm(void **s)
{
	enum { M = 37, N = 29, K = 45 };
	float a[M * K], b[K * N], c0[M * N], want[M * N], got[M * N];
	float *da = ops()->alloc(sizeof(a)), *db = ops()->alloc(sizeof(b));
	float *dc = ops()->alloc(sizeof(c0));

	(void)s;
	for (int i = 0; i < M * K; i++)
		a[i] = (float)((i * 7) % 11) - 5;
	for (int i = 0; i < K * N; i++)
		b[i] = (float)((i * 5) % 13) - 6;
	for (int i = 0; i < M * N; i++)
		c0[i] = (float)(i % 3);
	assert_int_equal(ops()->from_host(da, a, sizeof(a)), 0);
	assert_int_equal(ops()->from_host(db, b, sizeof(b)), 0);
	for (int tt = 0; tt < 4; tt++) {
		bool ta = tt & 1, tb = tt & 2;

		assert_int_equal(ops()->from_host(dc, c0, sizeof(c0)), 0);
		memcpy(want, c0, sizeof(c0));
		assert_int_equal(ops()->sgemm(ta, tb, M, N, K, 0.5f, da, db, 2.0f, dc), 0);
		dev_host_sgemm(ta, tb, M, N, K, 0.5f, a, b, 2.0f, want);
		assert_int_equal(ops()->to_host(got, dc, sizeof(got)), 0);
		assert_memory_equal(want, got, sizeof(got));
	}
	assert_int_equal(ops()->sgemm(false, false, -1, N, K, 1, da, db, 0, dc), -EINVAL);
	assert_int_equal(ops()->sgemm(false, false, M + 1, N, K, 1, da, db, 0, dc), -EINVAL);
	ops()->free(da);
	ops()->free(db);
	ops()->free(dc);
}

struct reader {
	const float *dc;
	float *out;
	size_t len;
	int ret;
};

static void *read_dc(void *p)
{
	struct reader *r = p;

	r->ret = ops()->to_host(r->out, r->dc, r->len);
	return NULL;
}

/* sgemm_async queues its product and returns; the thread's later calls
 * run after it, another thread sees it only after compute_wait, and a
 * copy_async (on the copy stream) waits for it first. */
static void test_sgemm_async(void **s)
{
	enum { M = 9, N = 7, K = 5 };
	struct fake_devrt_ctl *c = fake_devrt_ctl();
	float a[M * K], b[K * N], want[M * N], got[M * N], two[M * N];
	float *da = ops()->alloc(sizeof(a)), *db = ops()->alloc(sizeof(b));
	float *dc = ops()->alloc(sizeof(got)), *dd = ops()->alloc(sizeof(got));
	float *h = ops()->host_alloc(sizeof(got));
	struct reader r = {.dc = dc, .out = got, .len = sizeof(got)};
	pthread_t th;
	long syncs, executed;

	(void)s;
	for (int i = 0; i < M * K; i++)
		a[i] = (float)(i % 7) - 3;
	for (int i = 0; i < K * N; i++)
		b[i] = (float)(i % 5) - 2;
	memset(want, 0, sizeof(want));
	dev_host_sgemm(false, false, M, N, K, 1.0f, a, b, 0.0f, want);
	memcpy(two, want, sizeof(want));
	dev_host_sgemm(false, false, M, N, K, 1.0f, a, b, 1.0f, two);
	assert_int_equal(ops()->from_host(da, a, sizeof(a)), 0);
	assert_int_equal(ops()->from_host(db, b, sizeof(b)), 0);
	assert_int_equal(ops()->from_host(dc, want, sizeof(want)), 0);
	assert_int_equal(ops()->from_host(dd, want, sizeof(want)), 0);

	/* queued, not run (the double is lazy): C still holds what was there */
	executed = c->executed;
	assert_int_equal(ops()->sgemm_async(false, false, M, N, K, 1.0f, da, db, 1.0f, dc), 0);
	assert_int_equal(c->executed, executed);
	assert_memory_equal(dc, want, sizeof(want));
	/* another thread's call does not wait for it ... */
	assert_int_equal(pthread_create(&th, NULL, read_dc, &r), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(r.ret, 0);
	assert_memory_equal(got, want, sizeof(got));
	/* ... until this thread's compute_wait; a second one has nothing to do */
	syncs = c->stream_syncs;
	assert_int_equal(ops()->compute_wait(), 0);
	assert_int_equal(c->stream_syncs, syncs + 1);
	assert_int_equal(ops()->compute_wait(), 0);
	assert_int_equal(c->stream_syncs, syncs + 1);
	assert_int_equal(pthread_create(&th, NULL, read_dc, &r), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_memory_equal(got, two, sizeof(got));

	/* products in a row, the second reading the first's output, then a
	 * synchronous call: in order, and nothing left to wait for */
	assert_int_equal(ops()->from_host(dc, want, sizeof(want)), 0);
	assert_int_equal(ops()->sgemm_async(false, false, M, N, K, 1.0f, da, db, 0.0f, dc), 0);
	assert_int_equal(ops()->reduce(dd, dc, M * N, DEV_FLOAT32, DEV_SUM), 0);
	assert_int_equal(ops()->to_host(got, dd, sizeof(got)), 0);
	for (int i = 0; i < M * N; i++)
		assert_true(got[i] == want[i] + want[i]);
	syncs = c->stream_syncs;
	assert_int_equal(ops()->compute_wait(), 0);
	assert_int_equal(c->stream_syncs, syncs);

	/* a copy_async of a product still queued copies the product */
	assert_int_equal(ops()->sgemm_async(false, false, M, N, K, 1.0f, da, db, 1.0f, dc), 0);
	assert_int_equal(ops()->copy_async(h, dc, sizeof(got), DEV_COPY_TO_HOST), 0);
	assert_int_equal(ops()->copy_wait(), 0);
	assert_memory_equal(h, two, sizeof(two));

	/* refused or failed launches queue nothing */
	assert_int_equal(ops()->sgemm_async(false, false, M + 1, N, K, 1, da, db, 0, dc), -EINVAL);
	c->fail_launch = 1;
	assert_int_equal(ops()->sgemm_async(false, false, M, N, K, 1, da, db, 0, dc), -EIO);
	syncs = c->stream_syncs;
	assert_int_equal(ops()->compute_wait(), 0);
	assert_int_equal(c->stream_syncs, syncs);
	ops()->host_free(h);
	ops()->free(da);
	ops()->free(db);
	ops()->free(dc);
	ops()->free(dd);
}

static void test_error_mapping(void **s)
{
	struct fake_devrt_ctl *c = fake_devrt_ctl();
	void *d = ops()->alloc(64);

	(void)s;
	c->fail_malloc = 1;
	errno = 0;
	assert_null(ops()->alloc(64));
	assert_int_equal(errno, ENOMEM);
	/* a failed allocation leaves nothing behind: the next kernel works */
	assert_int_equal(ops()->reduce(d, d, 16, DEV_FLOAT32, DEV_SUM), 0);
	c->fail_malloc = 1;
	assert_null(ops()->host_alloc(64));
	assert_int_equal(errno, ENOMEM);
	c->fail_launch = 1;
	assert_int_equal(ops()->reduce(d, d, 16, DEV_FLOAT32, DEV_SUM), -EIO);
	c->fail_launch = 1;
	assert_int_equal(ops()->scale_div(d, 16, DEV_FLOAT32, 2), -EIO);
	/* a pointer the runtime does not know: its own error, mapped */
	int32_t stack[4] = {0};

	assert_int_equal(ops()->reduce(stack, d, 4, DEV_INT32, DEV_SUM), -EINVAL);
	assert_int_equal(ops()->reduce(d, d, 16, DEV_FLOAT32, DEV_SUM), 0);
	ops()->free(d);
}

static void quiet(int level, uint32_t sub, const char *line, void *arg)
{
	(void)level;
	(void)sub;
	(void)line;
	(void)arg;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		/* first: the probe failures fork before this process loads the plugin */
		cmocka_unit_test(test_probe_plugin_missing),
		cmocka_unit_test(test_probe_runtime_missing),
		cmocka_unit_test(test_probe_no_device),
		cmocka_unit_test(test_probe_bad_device_index),
		cmocka_unit_test(test_probe_no_kernel_image),
		cmocka_unit_test(test_probe_kernel_fails),
		cmocka_unit_test(test_second_thread_selects_device),
		cmocka_unit_test(test_probe_ok),
		cmocka_unit_test(test_threads_own_streams),
		cmocka_unit_test(test_alloc_tracking),
		cmocka_unit_test(test_mem_info),
		cmocka_unit_test(test_convert),
		cmocka_unit_test(test_sgd),
		cmocka_unit_test(test_sync_copies),
		cmocka_unit_test(test_async_copies_wait),
		cmocka_unit_test(test_reduce_ordered_after_copy),
		cmocka_unit_test(test_copy_pending_after_event_failure),
		cmocka_unit_test(test_reduce_every_dtype_op),
		cmocka_unit_test(test_sgemm),
		cmocka_unit_test(test_sgemm_async),
		cmocka_unit_test(test_error_mapping),
	};

	if (argc > 1 && strcmp(argv[1], "hip") == 0) {
		kind = DEV_MEM_HIP;
		lib_env = "ICE_HIP_LIB";
		vendor = "HIP";
		runtime = "libamdhip64";
	}
	if (dev_mem_ops_get(kind) == NULL) {
		printf("%s backend not built (no %s): skipped\n", argc > 1 ? argv[1] : "cuda",
		       kind == DEV_MEM_HIP ? "hipcc" : "nvcc");
		return 77;
	}
	/* the error paths log on purpose: keep them out of the output */
	if (getenv("TEST_VERBOSE") == NULL)
		ice_log_set_sink(quiet, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
