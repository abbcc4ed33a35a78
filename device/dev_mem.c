// SPDX-License-Identifier: Apache-2.0
/*
 * dev_mem: the host backend and the backend registry (see dev.h). The
 * CUDA and HIP backends live in dev_mem_cuda.c / dev_mem_hip.c and register
 * through dev_mem_cuda_ops() / dev_mem_hip_ops() when built.
 */
#include "dev.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dev_backends.h"
#include "ice_cpu.h"

static int host_probe(char *why, size_t len)
{
	if (why != NULL && len > 0)
		why[0] = '\0';
	return 0;
}

static void *host_alloc(size_t len)
{
	void *p = NULL;
	int ret = posix_memalign(&p, 64, len != 0 ? len : 64);

	if (ret != 0) {
		errno = ret;
		return NULL;
	}
	return p;
}

static void host_free(void *p)
{
	free(p);
}

static int host_copy(void *dst, const void *src, size_t len)
{
	if (dst != src)
		memcpy(dst, src, len);
	return 0;
}

static int host_copy_async(void *dst, const void *src, size_t len, enum dev_copy_dir dir)
{
	(void)dir;
	return host_copy(dst, src, len);
}

static int host_wait(void)
{
	return 0;
}

static int host_reduce(void *dst, const void *src, size_t count, enum dev_dtype t,
		       enum dev_redop op)
{
	if (t >= DEV_DTYPE_MAX || op >= DEV_REDOP_MAX)
		return -EINVAL;
	dev_reduce(dst, src, count, t, op);
	return 0;
}

static int host_scale_div(void *buf, size_t count, enum dev_dtype t, int n)
{
	if (t >= DEV_DTYPE_MAX || n <= 0)
		return -EINVAL;
	dev_scale_div(buf, count, t, n);
	return 0;
}

/*
 * Host SGEMM. Operands are first packed so the inner loop always walks
 * unit-stride rows: C[i][j..] += A[i][p] * B[p][j..], over blocks of
 * SG_KB x SG_NB of B that stay in L1/L2. gcc vectorises the j loop.
 */
/* The SGEMM loops are compiled for x86-64-v4 (AVX-512) and v3 (AVX2+FMA) as well, picked at
 * load time by the CPU (gcc function multi-versioning); portable builds. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SG_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SG_CLONES
#endif
#define SG_KB  128
#define SG_NB  256
#define SG_FEW 16 /* rows of C, or inner dimension, below which one pass wins */

static float *pack_t(const float *x, int rows, int cols)
{
	float *t = malloc((size_t)rows * (size_t)cols * sizeof(*t));

	if (t == NULL)
		return NULL;
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < cols; c++)
			t[(size_t)c * (size_t)rows + (size_t)r] =
				x[(size_t)r * (size_t)cols + (size_t)c];
	return t;
}

/* op(B) = B^T with A not transposed: C[i][j] = A[i][.] . B[j][.], dot
 * products of two unit-stride rows, 8 partial sums so it vectorises without
 * reassociation flags (the order is fixed: results are deterministic). */
SG_CLONES static void sgemm_nt(int m, int n, int k, float alpha, const float *a, const float *b,
			       float beta, float *c)
{
	for (int i = 0; i < m; i++) {
		const float *restrict ai = a + (size_t)i * (size_t)k;

		for (int j = 0; j < n; j++) {
			const float *restrict bj = b + (size_t)j * (size_t)k;
			float acc[8] = {0}, s = 0;
			int p = 0;

			for (; p + 8 <= k; p += 8)
				for (int u = 0; u < 8; u++)
					acc[u] += ai[p + u] * bj[p + u];
			for (; p < k; p++)
				s += ai[p] * bj[p];
			s += ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
			     ((acc[4] + acc[5]) + (acc[6] + acc[7]));
			c[(size_t)i * n + j] =
				alpha * s + (beta != 0 ? beta * c[(size_t)i * n + j] : 0);
		}
	}
}

SG_CLONES static void sgemm_any(bool ta, bool tb, int m, int n, int k, float alpha, const float *a,
				const float *b, float beta, float *c)
{
	/* op(A) is m x k: stored k x m when ta; op(B) is k x n: stored n x k when tb */
	float *at, *bt;

	if (!ta && tb) {
		sgemm_nt(m, n, k, alpha, a, b, beta, c);
		return;
	}
	at = ta ? pack_t(a, k, m) : NULL;
	bt = tb ? pack_t(b, n, k) : NULL;
	const float *A, *B;

	A = ta ? at : a;
	B = tb ? bt : b;
	if ((ta && at == NULL) || (tb && bt == NULL)) {
		/* out of memory for packing: the plain (slow) triple loop */
		for (int i = 0; i < m; i++)
			for (int j = 0; j < n; j++) {
				float s = 0;

				for (int p = 0; p < k; p++)
					s += (ta ? a[(size_t)p * m + i] : a[(size_t)i * k + p]) *
					     (tb ? b[(size_t)j * k + p] : b[(size_t)p * n + j]);
				c[(size_t)i * n + j] =
					alpha * s + (beta != 0 ? beta * c[(size_t)i * n + j] : 0);
			}
		free(at);
		free(bt);
		return;
	}
	for (int i = 0; i < m; i++) {
		float *restrict ci = c + (size_t)i * (size_t)n;

		if (beta == 0)
			memset(ci, 0, (size_t)n * sizeof(*ci));
		else if (beta != 1)
			for (int j = 0; j < n; j++)
				ci[j] *= beta;
	}
	if (m <= SG_FEW || k <= SG_FEW) {
		/* Few rows of C (a micro-batch's forward), or a short inner
		 * dimension (a weight gradient): one pass over B (resp. C), the
		 * other operand stays in L1. Blocking would re-read B from memory. */
		if (m <= SG_FEW) {
			for (int p = 0; p < k; p++) {
				const float *restrict bp = B + (size_t)p * (size_t)n;

				for (int i = 0; i < m; i++) {
					float *restrict ci = c + (size_t)i * (size_t)n;
					float sc = alpha * A[(size_t)i * (size_t)k + p];

					for (int j = 0; j < n; j++)
						ci[j] += sc * bp[j];
				}
			}
		} else {
			for (int i = 0; i < m; i++) {
				float *restrict ci = c + (size_t)i * (size_t)n;

				for (int p = 0; p < k; p++) {
					const float *restrict bp = B + (size_t)p * (size_t)n;
					float sc = alpha * A[(size_t)i * (size_t)k + p];

					for (int j = 0; j < n; j++)
						ci[j] += sc * bp[j];
				}
			}
		}
		free(at);
		free(bt);
		return;
	}
	for (int p0 = 0; p0 < k; p0 += SG_KB) {
		int p1 = p0 + SG_KB < k ? p0 + SG_KB : k;

		for (int j0 = 0; j0 < n; j0 += SG_NB) {
			int j1 = j0 + SG_NB < n ? j0 + SG_NB : n;

			for (int i = 0; i < m; i++) {
				float *restrict ci = c + (size_t)i * (size_t)n;
				const float *ai = A + (size_t)i * (size_t)k;

				for (int p = p0; p < p1; p++) {
					const float *restrict bp = B + (size_t)p * (size_t)n;
					float s = alpha * ai[p];

					for (int j = j0; j < j1; j++)
						ci[j] += s * bp[j];
				}
			}
		}
	}
	free(at);
	free(bt);
}

void dev_host_sgemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *a,
		    const float *b, float beta, float *c)
{
	sgemm_any(ta, tb, m, n, k, alpha, a, b, beta, c);
}

static int host_sgemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *a,
		      const float *b, float beta, float *c)
{
	if (m < 0 || n < 0 || k < 0)
		return -EINVAL;
	dev_host_sgemm(ta, tb, m, n, k, alpha, a, b, beta, c);
	return 0;
}

static int host_sgd(float *w, const float *g, float scale, size_t count)
{
	dev_sgd(w, g, scale, count);
	return 0;
}

static int host_mem_info(size_t *free_b, size_t *total_b)
{
	double avail, total;

	if (free_b == NULL || total_b == NULL)
		return -EINVAL;
	if (ice_mem_avail(&avail, &total, NULL, 0) < 0)
		return -EIO;
	*free_b = (size_t)avail;
	*total_b = (size_t)total;
	return 0;
}

static const struct dev_mem_ops host_ops = {
	.kind = DEV_MEM_HOST,
	.name = "host",
	.probe = host_probe,
	.alloc = host_alloc,
	.free = host_free,
	.to_host = host_copy,
	.from_host = host_copy,
	.host_alloc = host_alloc,
	.host_free = host_free,
	.copy_async = host_copy_async,
	.copy_wait = host_wait,
	.reduce = host_reduce,
	.scale_div = host_scale_div,
	.sgemm = host_sgemm,
	.sgemm_async = host_sgemm,
	.compute_wait = host_wait,
	.mem_info = host_mem_info,
	.convert = dev_convert,
	.sgd = host_sgd,
};

const struct dev_mem_ops *dev_mem_ops_get(enum dev_mem_kind kind)
{
	const struct dev_mem_ops *o = NULL;

	switch (kind) {
	case DEV_MEM_HOST:
		return &host_ops;
	case DEV_MEM_CUDA:
		o = dev_mem_cuda_ops();
		break;
	case DEV_MEM_HIP:
		o = dev_mem_hip_ops();
		break;
	default:
		break;
	}
	if (o == NULL)
		errno = ENODEV;
	return o;
}

int dev_mem_kind_parse(const char *s)
{
	static const char *const names[] = {"host", "cuda", "hip"};

	for (int i = 0; i < DEV_MEM_KIND_MAX; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}
