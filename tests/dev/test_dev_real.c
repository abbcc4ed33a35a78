// SPDX-License-Identifier: Apache-2.0
/*
 * The real device plugins (libice-cuda.so, libice-hip.so) on a real GPU:
 * every reduce dtype / op and scale_div bit for bit against the host
 * library (tp_reduce.c), sgemm against tp_host_sgemm, async copies. Exits
 * 77 with probe()'s reason where the backend is not built or finds no
 * usable device (as on CI machines: this checks, there, that a binary
 * built with the backend starts and explains itself without a GPU).
 * argv[1]: "cuda" or "hip".
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ice_log.h"
#include "tp_mem.h"

static const struct tp_mem_ops *o;

static void fill(void *buf, size_t n, enum tp_dtype t, unsigned seed)
{
	srand(seed);
	for (size_t i = 0; i < n; i++) {
		double v = (double)(rand() % 2001 - 1000);

		if (t >= TP_FLOAT16) /* fractions, tiny and large values, ties */
			v = v / 64.0 * pow(2.0, rand() % 40 - 20);
		tp_elem_set(buf, i, t, v);
	}
	if (t == TP_FLOAT32 && n > 10) {
		((float *)buf)[3] = NAN;
		((float *)buf)[5] = -0.0f;
		((float *)buf)[7] = INFINITY;
	}
}

static void test_reduce_bitexact(void **s)
{
	size_t n = 100003, max = n * 8;
	uint8_t *x = malloc(max), *y = malloc(max), *want = malloc(max), *got = malloc(max);
	void *da = o->alloc(max), *db = o->alloc(max);

	(void)s;
	assert_non_null(da);
	assert_non_null(db);
	for (int t = 0; t < TP_DTYPE_MAX; t++) {
		size_t bytes = n * tp_dtype_size((enum tp_dtype)t);

		for (int op = 0; op < TP_REDOP_MAX; op++) {
			fill(x, n, (enum tp_dtype)t, 1 + t * 7 + op);
			fill(y, n, (enum tp_dtype)t, 1000 + t * 7 + op);
			assert_int_equal(o->from_host(da, x, bytes), 0);
			assert_int_equal(o->from_host(db, y, bytes), 0);
			assert_int_equal(o->reduce(da, db, n, (enum tp_dtype)t, (enum tp_redop)op),
					 0);
			assert_int_equal(o->to_host(got, da, bytes), 0);
			memcpy(want, x, bytes);
			tp_reduce(want, y, n, (enum tp_dtype)t, (enum tp_redop)op);
			if (memcmp(want, got, bytes) != 0) {
				for (size_t i = 0; i < n; i++)
					if (memcmp(want + i * bytes / n, got + i * bytes / n,
						   bytes / n) != 0) {
						print_error("%s %s: element %zu: %g, host %g\n",
							    tp_dtype_name((enum tp_dtype)t),
							    tp_redop_name((enum tp_redop)op), i,
							    tp_elem_get(got, i, (enum tp_dtype)t),
							    tp_elem_get(want, i, (enum tp_dtype)t));
						break;
					}
				fail();
			}
			/* dst == src */
			assert_int_equal(o->reduce(da, da, n, (enum tp_dtype)t, (enum tp_redop)op),
					 0);
			assert_int_equal(o->to_host(got, da, bytes), 0);
			tp_reduce(want, want, n, (enum tp_dtype)t, (enum tp_redop)op);
			assert_memory_equal(want, got, bytes);
		}
		assert_int_equal(o->scale_div(da, n, (enum tp_dtype)t, 7), 0);
		assert_int_equal(o->to_host(got, da, bytes), 0);
		tp_scale_div(want, n, (enum tp_dtype)t, 7);
		assert_memory_equal(want, got, bytes);
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
	static const int dims[][3] = {{1, 1, 1}, {64, 64, 16}, {127, 65, 300}, {300, 257, 33}};

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
			tp_host_sgemm(ta, tb, m, n, k, 1.5f, a, b, beta, want);
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

static void test_async_copies(void **s)
{
	size_t len = 8u << 20, half = len / 2;
	uint8_t *h = o->host_alloc(len), *h2 = o->host_alloc(len), *d = o->alloc(len);

	(void)s;
	for (size_t i = 0; i < len; i++)
		h[i] = (uint8_t)(i * 13);
	assert_int_equal(o->copy_async(d, h, half, TP_COPY_FROM_HOST), 0);
	assert_int_equal(o->copy_async(d + half, h + half, half, TP_COPY_FROM_HOST), 0);
	assert_int_equal(o->copy_async(h2, d, len, TP_COPY_TO_HOST), 0);
	assert_int_equal(o->copy_wait(), 0);
	assert_memory_equal(h, h2, len);
	o->free(d);
	o->host_free(h);
	o->host_free(h2);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reduce_bitexact),
		cmocka_unit_test(test_sgemm),
		cmocka_unit_test(test_async_copies),
	};
	const char *name = argc > 1 ? argv[1] : "cuda";
	enum tp_mem_kind kind = strcmp(name, "hip") == 0 ? TP_MEM_HIP : TP_MEM_CUDA;
	char why[256];
	int ret;

	ice_log_init_env();
	o = tp_mem_ops_get(kind);
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
