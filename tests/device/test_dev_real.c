// SPDX-License-Identifier: Apache-2.0
/*
 * The real device plugins (libice-cuda.so, libice-hip.so) on a real GPU:
 * every reduce dtype / op and scale_div bit for bit against the host
 * library (dev_reduce.c; NaN / signed-zero cases of max / min, AVG's
 * division by up to 1000 ranks), sgemm against dev_host_sgemm (one taller
 * than 65535 row tiles), sgemm_async (64 products queued in a row, one
 * wait), async copies, a second host thread, the free
 * memory falling by an allocation (mem_info), f32 <-> bf16 conversions
 * against the host's bits. Exits
 * 77 with probe()'s reason where the backend is not built or finds no
 * usable device (as on CI machines: this checks, there, that a binary
 * built with the backend starts and explains itself without a GPU).
 * argv[1]: "cuda" or "hip".
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ice_log.h"
#include "dev.h"

static const struct dev_mem_ops *o;

static bool is_float(enum dev_dtype t)
{
	return t == DEV_FLOAT16 || t == DEV_FLOAT32 || t == DEV_FLOAT64 || t == DEV_BFLOAT16;
}

/* Random values; for float dtypes x (the reduce's dst) and y (its src)
 * differ where max / min have special cases: 3: x NaN, y a number; 4: x a
 * number, y NaN; 5: x +0, y -0; 6: x -0, y +0; 7: x +inf, y -inf. */
static void fill(void *buf, size_t n, enum dev_dtype t, unsigned seed, bool y)
{
	srand(seed);
	for (size_t i = 0; i < n; i++) {
		double v = (double)(rand() % 2001 - 1000);

		if (t >= DEV_FLOAT16) /* fractions, tiny and large values, ties */
			v = v / 64.0 * pow(2.0, rand() % 40 - 20);
		dev_elem_set(buf, i, t, v);
	}
	if (is_float(t) && n > 10) {
		dev_elem_set(buf, 3, t, y ? 1.5 : NAN);
		dev_elem_set(buf, 4, t, y ? NAN : 1.5);
		dev_elem_set(buf, 5, t, y ? -0.0 : 0.0);
		dev_elem_set(buf, 6, t, y ? 0.0 : -0.0);
		dev_elem_set(buf, 7, t, y ? -INFINITY : INFINITY);
	}
}

/* Element i equal: bit for bit, except that the NaN an arithmetic operator
 * returns is the GPU's canonical one (PTX / GCN do not keep payloads); max
 * and min select an operand, so their NaNs are compared bit for bit. */
static bool same(const uint8_t *got, const uint8_t *want, size_t i, enum dev_dtype t,
		 enum dev_redop op)
{
	size_t sz = dev_dtype_size(t);

	if (memcmp(got + i * sz, want + i * sz, sz) == 0)
		return true;
	return is_float(t) && op != DEV_MAX && op != DEV_MIN && isnan(dev_elem_get(got, i, t)) &&
	       isnan(dev_elem_get(want, i, t));
}

static void test_reduce_bitexact(void **s)
{
	size_t n = 100003, max = n * 8;
	uint8_t *x = malloc(max), *y = malloc(max), *want = malloc(max), *got = malloc(max);
	void *da = o->alloc(max), *db = o->alloc(max);

	(void)s;
	assert_non_null(da);
	assert_non_null(db);
	for (int t = 0; t < DEV_DTYPE_MAX; t++) {
		size_t bytes = n * dev_dtype_size((enum dev_dtype)t);

		for (int op = 0; op < DEV_REDOP_MAX; op++) {
			fill(x, n, (enum dev_dtype)t, 1 + t * 7 + op, false);
			fill(y, n, (enum dev_dtype)t, 1000 + t * 7 + op, true);
			assert_int_equal(o->from_host(da, x, bytes), 0);
			assert_int_equal(o->from_host(db, y, bytes), 0);
			assert_int_equal(
				o->reduce(da, db, n, (enum dev_dtype)t, (enum dev_redop)op), 0);
			assert_int_equal(o->to_host(got, da, bytes), 0);
			memcpy(want, x, bytes);
			dev_reduce(want, y, n, (enum dev_dtype)t, (enum dev_redop)op);
			for (size_t i = 0; i < n; i++)
				if (!same(got, want, i, (enum dev_dtype)t, (enum dev_redop)op)) {
					print_error("%s %s: element %zu: %g, host %g\n",
						    dev_dtype_name((enum dev_dtype)t),
						    dev_redop_name((enum dev_redop)op), i,
						    dev_elem_get(got, i, (enum dev_dtype)t),
						    dev_elem_get(want, i, (enum dev_dtype)t));
					fail();
				}
			/* dst == src */
			assert_int_equal(
				o->reduce(da, da, n, (enum dev_dtype)t, (enum dev_redop)op), 0);
			assert_int_equal(o->to_host(got, da, bytes), 0);
			dev_reduce(want, want, n, (enum dev_dtype)t, (enum dev_redop)op);
			for (size_t i = 0; i < n; i++)
				if (!same(got, want, i, (enum dev_dtype)t, (enum dev_redop)op)) {
					print_error("%s %s, dst == src: element %zu differs\n",
						    dev_dtype_name((enum dev_dtype)t),
						    dev_redop_name((enum dev_redop)op), i);
					fail();
				}
		}
		/* AVG's division by the rank count, past int8 (128) and uint8 (256) */
		static const int divs[] = {7, 200, 256, 1000};

		for (size_t k = 0; k < sizeof(divs) / sizeof(divs[0]); k++) {
			fill(want, n, (enum dev_dtype)t, 77 + (unsigned)k, false);
			assert_int_equal(o->from_host(da, want, bytes), 0);
			assert_int_equal(o->scale_div(da, n, (enum dev_dtype)t, divs[k]), 0);
			assert_int_equal(o->to_host(got, da, bytes), 0);
			dev_scale_div(want, n, (enum dev_dtype)t, divs[k]);
			for (size_t i = 0; i < n; i++)
				if (!same(got, want, i, (enum dev_dtype)t, DEV_AVG)) {
					print_error("scale_div %s by %d: element %zu differs\n",
						    dev_dtype_name((enum dev_dtype)t), divs[k], i);
					fail();
				}
		}
	}
	o->free(da);
	o->free(db);
	free(x);
	free(y);
	free(want);
	free(got);
}

static void test_sgemm(void **s)
{
	/* the last: more than 65535 row tiles (grid.y's limit) */
	static const int dims[][3] = {
		{1, 1, 1}, {64, 64, 16}, {127, 65, 300}, {300, 257, 33}, {65536 * 64 + 3, 2, 3}};

	(void)s;
	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++) {
		int m = dims[di][0], n = dims[di][1], k = dims[di][2];
		size_t la = (size_t)m * k, lb = (size_t)k * n, lc = (size_t)m * n;
		float *a = malloc(la * 4), *b = malloc(lb * 4), *c = malloc(lc * 4);
		float *want = malloc(lc * 4), *got = malloc(lc * 4);
		float *da = o->alloc(la * 4), *db = o->alloc(lb * 4), *dc = o->alloc(lc * 4);

		for (size_t i = 0; i < la; i++)
			a[i] = (float)((int)(i * 7919 % 201) - 100) / 50;
		for (size_t i = 0; i < lb; i++)
			b[i] = (float)((int)(i * 104729 % 199) - 99) / 50;
		for (size_t i = 0; i < lc; i++)
			c[i] = (float)(i % 5);
		assert_int_equal(o->from_host(da, a, la * 4), 0);
		assert_int_equal(o->from_host(db, b, lb * 4), 0);
		for (int tt = 0; tt < 4; tt++) {
			bool ta = tt & 1, tb = tt & 2;
			float beta = tt == 3 ? 0.0f : 0.5f;

			memcpy(want, c, lc * 4);
			assert_int_equal(o->from_host(dc, c, lc * 4), 0);
			assert_int_equal(o->sgemm(ta, tb, m, n, k, 1.5f, da, db, beta, dc), 0);
			assert_int_equal(o->to_host(got, dc, lc * 4), 0);
			dev_host_sgemm(ta, tb, m, n, k, 1.5f, a, b, beta, want);
			for (size_t i = 0; i < lc; i++)
				if (fabsf(got[i] - want[i]) >
				    1e-4f * (float)k * fmaxf(1, fabsf(want[i]))) {
					print_error(
						"sgemm %dx%dx%d ta %d tb %d: C[%zu] %g, host %g\n",
						m, n, k, ta, tb, i, got[i], want[i]);
					fail();
				}
		}
		o->free(da);
		o->free(db);
		o->free(dc);
		free(a);
		free(b);
		free(c);
		free(want);
		free(got);
	}
}

/* sgemm_async: 64 products queued in a row into one C, each adding to
 * the last (the stream keeps them in order), waited for once; then the
 * host's sum, the device's result read from another thread */
static void *read_back(void *p)
{
	void **a = p;

	a[3] = (void *)(intptr_t)o->to_host(a[0], a[1], (size_t)(intptr_t)a[2]);
	return NULL;
}

static void test_sgemm_async(void **s)
{
	enum { M = 64, N = 64, K = 16, R = 64 };
	float a[M * K], b[K * N], want[M * N], got[M * N];
	float *da = o->alloc(sizeof(a)), *db = o->alloc(sizeof(b)), *dc = o->alloc(sizeof(got));
	void *args[4] = {got, dc, (void *)(intptr_t)sizeof(got), NULL};
	pthread_t th;

	(void)s;
	for (int i = 0; i < M * K; i++)
		a[i] = (float)(i % 9 - 4) / 4;
	for (int i = 0; i < K * N; i++)
		b[i] = (float)(i % 7 - 3) / 4;
	assert_int_equal(o->from_host(da, a, sizeof(a)), 0);
	assert_int_equal(o->from_host(db, b, sizeof(b)), 0);
	for (int r = 0; r < R; r++)
		assert_int_equal(o->sgemm_async(false, false, M, N, K, 1.0f, da, db,
						r == 0 ? 0.0f : 1.0f, dc),
				 0);
	assert_int_equal(o->compute_wait(), 0);
	assert_int_equal(pthread_create(&th, NULL, read_back, args), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal((int)(intptr_t)args[3], 0);
	for (int r = 0; r < R; r++)
		dev_host_sgemm(false, false, M, N, K, 1.0f, a, b, r == 0 ? 0.0f : 1.0f, want);
	for (int i = 0; i < M * N; i++)
		if (fabsf(got[i] - want[i]) > 1e-4f * K * R * fmaxf(1, fabsf(want[i]))) {
			print_error("sgemm_async x%d: C[%d] %g, host %g\n", R, i, got[i], want[i]);
			fail();
		}
	o->free(da);
	o->free(db);
	o->free(dc);
}

/* convert: f32 to bf16 and back on the device, over every exponent and
 * random bit patterns, the host's bits */
static void test_convert(void **s)
{
	size_t n = 1u << 20;
	uint32_t *f = malloc(n * 4), *back = malloc(n * 4), *wantf = malloc(n * 4);
	uint16_t *want = malloc(n * 2), *got = malloc(n * 2);
	void *df = o->alloc(n * 4), *dh = o->alloc(n * 2);

	(void)s;
	assert_non_null(f);
	assert_non_null(back);
	assert_non_null(wantf);
	assert_non_null(want);
	assert_non_null(got);
	assert_non_null(df);
	assert_non_null(dh);
	srand(7);
	for (size_t i = 0; i < n; i++)
		f[i] = i < (1u << 18) ? (uint32_t)i << 14
				      : (uint32_t)rand() ^ ((uint32_t)rand() << 16);
	dev_float_to_bf16_n(want, (const float *)f, n);
	dev_bf16_to_float_n((float *)wantf, want, n);
	assert_int_equal(o->from_host(df, f, n * 4), 0);
	assert_int_equal(o->convert(dh, DEV_BFLOAT16, df, DEV_FLOAT32, n), 0);
	assert_int_equal(o->to_host(got, dh, n * 2), 0);
	assert_memory_equal(got, want, n * 2);
	assert_int_equal(o->convert(df, DEV_FLOAT32, dh, DEV_BFLOAT16, n), 0);
	assert_int_equal(o->to_host(back, df, n * 4), 0);
	assert_memory_equal(back, wantf, n * 4);
	o->free(df);
	o->free(dh);
	free(f);
	free(back);
	free(wantf);
	free(want);
	free(got);
}

/* sgd: the update on the device, dev_sgd's bits (the product rounded on
 * its own, not fused), over random weights and gradients */
static void test_sgd(void **s)
{
	size_t n = 1u << 20;
	float *w = malloc(n * 4), *g = malloc(n * 4), *got = malloc(n * 4);
	float *dw = o->alloc(n * 4), *dg = o->alloc(n * 4);

	(void)s;
	assert_non_null(w);
	assert_non_null(g);
	assert_non_null(got);
	assert_non_null(dw);
	assert_non_null(dg);
	srand(11);
	for (size_t i = 0; i < n; i++) {
		w[i] = (float)rand() / RAND_MAX * 4 - 2;
		g[i] = (float)rand() / RAND_MAX * 200 - 100;
	}
	assert_int_equal(o->from_host(dw, w, n * 4), 0);
	assert_int_equal(o->from_host(dg, g, n * 4), 0);
	dev_sgd(w, g, 0.0123f, n);
	assert_int_equal(o->sgd(dw, dg, 0.0123f, n), 0);
	assert_int_equal(o->to_host(got, dw, n * 4), 0);
	assert_memory_equal(got, w, n * 4);
	o->free(dw);
	o->free(dg);
	free(w);
	free(g);
	free(got);
}

/* mem_info: free within total; 256 MiB allocated show in the free
 * figure (within 64 MiB: the runtime may round, or others allocate) */
static void test_mem_info(void **s)
{
	size_t f0, t0, f1, t1, len = 256u << 20;
	void *d;

	(void)s;
	assert_int_equal(o->mem_info(&f0, &t0), 0);
	assert_true(t0 > 0 && f0 <= t0);
	d = o->alloc(len);
	assert_non_null(d);
	assert_int_equal(o->mem_info(&f1, &t1), 0);
	print_message("memory: %.2f GiB total, %.2f GiB free; after 256 MiB: %.2f GiB\n",
		      t0 / 1073741824.0, f0 / 1073741824.0, f1 / 1073741824.0);
	assert_true(t1 == t0 && f1 < f0 && f0 - f1 >= len - (64u << 20) &&
		    f0 - f1 <= len + (64u << 20));
	o->free(d);
}

static void test_async_copies(void **s)
{
	size_t len = 8u << 20, half = len / 2;
	uint8_t *h = o->host_alloc(len), *h2 = o->host_alloc(len), *d = o->alloc(len);

	(void)s;
	for (size_t i = 0; i < len; i++)
		h[i] = (uint8_t)(i * 13);
	assert_int_equal(o->copy_async(d, h, half, DEV_COPY_FROM_HOST), 0);
	assert_int_equal(o->copy_async(d + half, h + half, half, DEV_COPY_FROM_HOST), 0);
	assert_int_equal(o->copy_async(h2, d, len, DEV_COPY_TO_HOST), 0);
	assert_int_equal(o->copy_wait(), 0);
	assert_memory_equal(h, h2, len);
	o->free(d);
	o->host_free(h);
	o->host_free(h2);
}

struct thread_arg {
	float *a, *b; /* device, allocated by the main thread */
	size_t n;
	int ret;
};

static void *second_thread(void *p)
{
	struct thread_arg *ta = p;
	float *h = o->host_alloc(ta->n * 4), *d = o->alloc(ta->n * 4);

	ta->ret = -1;
	if (h == NULL || d == NULL)
		goto out;
	for (size_t i = 0; i < ta->n; i++)
		h[i] = (float)i;
	if ((ta->ret = o->copy_async(d, h, ta->n * 4, DEV_COPY_FROM_HOST)) != 0 ||
	    (ta->ret = o->reduce(ta->a, d, ta->n, DEV_FLOAT32, DEV_SUM)) != 0 ||
	    (ta->ret = o->reduce(ta->a, ta->b, ta->n, DEV_FLOAT32, DEV_SUM)) != 0 ||
	    (ta->ret = o->copy_wait()) != 0)
		goto out;
out:
	o->free(d);
	o->host_free(h);
	return NULL;
}

/* Calls from a second host thread (ice-train's communication thread) on
 * buffers of the first: the backend selects its device on that thread. */
static void test_second_thread(void **s)
{
	size_t n = 1 << 20;
	float *h = malloc(n * 4), *a = o->alloc(n * 4), *b = o->alloc(n * 4);
	struct thread_arg ta = {.a = a, .b = b, .n = n};
	pthread_t th;

	(void)s;
	for (size_t i = 0; i < n; i++)
		h[i] = 1;
	assert_int_equal(o->from_host(a, h, n * 4), 0);
	assert_int_equal(o->from_host(b, h, n * 4), 0);
	assert_int_equal(pthread_create(&th, NULL, second_thread, &ta), 0);
	pthread_join(th, NULL);
	assert_int_equal(ta.ret, 0);
	assert_int_equal(o->to_host(h, a, n * 4), 0);
	for (size_t i = 0; i < n; i++)
		if (h[i] != (float)i + 2)
			fail_msg("element %zu: %g, want %g", i, h[i], (float)i + 2);
	o->free(a);
	o->free(b);
	free(h);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reduce_bitexact),
		cmocka_unit_test(test_sgemm),
		cmocka_unit_test(test_sgemm_async),
		cmocka_unit_test(test_async_copies),
		cmocka_unit_test(test_mem_info),
		cmocka_unit_test(test_convert),
		cmocka_unit_test(test_sgd),
		cmocka_unit_test(test_second_thread),
	};
	const char *name = argc > 1 ? argv[1] : "cuda";
	enum dev_mem_kind kind = strcmp(name, "hip") == 0 ? DEV_MEM_HIP : DEV_MEM_CUDA;
	char why[256];
	int ret;

	ice_log_init_env();
	o = dev_mem_ops_get(kind);
	if (o == NULL) {
		printf("%s backend not built: skipped\n", name);
		return 77;
	}
	ret = o->probe(why, sizeof(why));
	if (ret != 0) {
		printf("%s backend unusable here (%d): %s: skipped\n", name, ret, why);
		return 77;
	}
	printf("%s: %s\n", name, why);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
