// SPDX-License-Identifier: Apache-2.0
/*
 * dev_reduce: reduction kernels (see dev.h).
 *
 * Every (type, op) pair is a plain loop over restrict-qualified pointers,
 * stamped out by macros, so gcc's vectoriser sees one simple loop each.
 * Three shapes per pair: d op= s (two distinct buffers), d op= d (dst ==
 * src) and d = a op b (three distinct buffers); dev_reduce3() with dst equal
 * to a or b uses the two-buffer shape, which is exact because every op here
 * is commutative.
 *
 * Semantics:
 *  - integers: sum and prod wrap modulo 2^bits (signed types computed in the
 *    unsigned type, no undefined behaviour); AVG reduces as a sum.
 *  - floats: max and min propagate NaN (a NaN in either input gives a NaN,
 *    like IEEE 754-2019 maximum/minimum, and unlike fmax). -0 and +0 compare
 *    equal; the result is then the second operand (src / b).
 *  - f16 / bf16: converted to f32 in blocks of DEV_CVT_BLOCK elements, reduced
 *    in f32, rounded back to nearest even. f32 carries at least 2p + 2 bits
 *    of the 16-bit formats, so the double rounding of a sum, product or
 *    quotient is innocuous: results are correctly rounded.
 *  - conversions are plain C (branch-free, vectorisable); with -mf16c the
 *    f16 ones use the F16C instructions instead.
 */
#include "dev.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#ifdef __F16C__
#include <immintrin.h>
#endif

#define DEV_CVT_BLOCK 64

/* ---- names ---- */

static const struct {
	const char *name;
	size_t size;
} dtype_info[DEV_DTYPE_MAX] = {
	[DEV_INT8] = {"int8", 1},      [DEV_UINT8] = {"uint8", 1},
	[DEV_INT32] = {"int32", 4},    [DEV_UINT32] = {"uint32", 4},
	[DEV_INT64] = {"int64", 8},    [DEV_UINT64] = {"uint64", 8},
	[DEV_FLOAT16] = {"half", 2},   [DEV_FLOAT32] = {"float", 4},
	[DEV_FLOAT64] = {"double", 8}, [DEV_BFLOAT16] = {"bfloat16", 2},
};

static const struct {
	const char *alias;
	enum dev_dtype t;
} dtype_alias[] = {
	{"i8", DEV_INT8},	  {"u8", DEV_UINT8},	    {"i32", DEV_INT32},
	{"u32", DEV_UINT32},	  {"i64", DEV_INT64},	    {"u64", DEV_UINT64},
	{"f16", DEV_FLOAT16},	  {"float16", DEV_FLOAT16}, {"f32", DEV_FLOAT32},
	{"float32", DEV_FLOAT32}, {"f64", DEV_FLOAT64},	    {"float64", DEV_FLOAT64},
	{"bf16", DEV_BFLOAT16},
};

static const char *const redop_names[DEV_REDOP_MAX] = {
	[DEV_SUM] = "sum", [DEV_PROD] = "prod", [DEV_MAX] = "max",
	[DEV_MIN] = "min", [DEV_AVG] = "avg",
};

size_t dev_dtype_size(enum dev_dtype t)
{
	if ((unsigned)t >= DEV_DTYPE_MAX)
		return 0;
	return dtype_info[t].size;
}

int dev_dtype_parse(const char *s)
{
	size_t i;

	if (s == NULL)
		return -1;
	for (i = 0; i < DEV_DTYPE_MAX; i++)
		if (strcmp(s, dtype_info[i].name) == 0)
			return (int)i;
	for (i = 0; i < sizeof(dtype_alias) / sizeof(dtype_alias[0]); i++)
		if (strcmp(s, dtype_alias[i].alias) == 0)
			return dtype_alias[i].t;
	return -1;
}

const char *dev_dtype_name(enum dev_dtype t)
{
	if ((unsigned)t >= DEV_DTYPE_MAX)
		return "unknown";
	return dtype_info[t].name;
}

int dev_redop_parse(const char *s)
{
	int i;

	if (s == NULL)
		return -1;
	for (i = 0; i < DEV_REDOP_MAX; i++)
		if (strcmp(s, redop_names[i]) == 0)
			return i;
	return -1;
}

const char *dev_redop_name(enum dev_redop op)
{
	if ((unsigned)op >= DEV_REDOP_MAX)
		return "unknown";
	return redop_names[op];
}

/* ---- scalar conversions ---- */

static inline uint32_t f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static inline float u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* Exact: the 15 exponent/mantissa bits placed in an f32 and scaled by
 * 2^(127-15) (subnormal halves become f32 subnormals, scaled exactly); what
 * lands at or above 2^16 was Inf/NaN and gets the all-ones exponent. */
static inline float half_to_float(uint16_t h)
{
	uint32_t o = (uint32_t)(h & 0x7fff) << 13;
	float f = u2f(o) * u2f((254 - 15) << 23);

	o = f2u(f);
	o |= f >= u2f((127 + 16) << 23) ? 255u << 23 : 0;
	return u2f(o | (uint32_t)(h & 0x8000) << 16);
}

/* Round to nearest even. Subnormal results: adding 2^-1 * 2^(-14+...)
 * ("denorm magic") lets the FPU round the 10 mantissa bits into place;
 * normal results: exponent rebias plus a round-half-even bias on the
 * dropped 13 bits; a carry out of the mantissa correctly gives the next
 * binade or Inf. NaN keeps its top payload bits and is made quiet. */
static inline uint16_t float_to_half(float f)
{
	const uint32_t denorm_magic = ((127 - 15) + (23 - 10) + 1) << 23;
	uint32_t u = f2u(f);
	uint32_t sign = (u >> 16) & 0x8000;
	uint32_t a = u & 0x7fffffff;
	uint32_t sub = f2u(u2f(a) + u2f(denorm_magic)) - denorm_magic;
	uint32_t nrm = (a + ((uint32_t)(15 - 127) << 23) + 0xfff + ((a >> 13) & 1)) >> 13;
	/* masks rather than branches, so that loops of this vectorise */
	uint32_t is_nan = -(uint32_t)(a > (255u << 23));
	uint32_t is_big = -(uint32_t)(a >= (uint32_t)(127 + 16) << 23);
	uint32_t is_sub = -(uint32_t)(a < (113u << 23));
	uint32_t big = 0x7c00 | (is_nan & (0x200 | ((a >> 13) & 0x3ff)));
	uint32_t o = (big & is_big) | (sub & is_sub) | (nrm & ~(is_big | is_sub));

	return (uint16_t)(o | sign);
}

static inline float bf16_to_float(uint16_t b)
{
	return u2f((uint32_t)b << 16);
}

static inline uint16_t float_to_bf16(float f)
{
	uint32_t u = f2u(f);
	uint32_t r = (u + 0x7fff + ((u >> 16) & 1)) >> 16;
	uint32_t q = (u >> 16) | 0x40; /* quiet NaN, sign and payload top kept */

	return (uint16_t)((u & 0x7fffffff) > 0x7f800000 ? q : r);
}

float dev_half_to_float(uint16_t h)
{
	return half_to_float(h);
}

uint16_t dev_float_to_half(float f)
{
	return float_to_half(f);
}

float dev_bf16_to_float(uint16_t b)
{
	return bf16_to_float(b);
}

uint16_t dev_float_to_bf16(float f)
{
	return float_to_bf16(f);
}

static void half_block_to_float(float *restrict d, const uint16_t *restrict s, size_t n)
{
	size_t i = 0;

#ifdef __F16C__
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
#endif
	for (; i < n; i++)
		d[i] = half_to_float(s[i]);
}

static void float_block_to_half(uint16_t *restrict d, const float *restrict s, size_t n)
{
	size_t i = 0;

#ifdef __F16C__
	for (; i + 8 <= n; i += 8)
		_mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i),
								     _MM_FROUND_TO_NEAREST_INT));
#endif
	for (; i < n; i++)
		d[i] = float_to_half(s[i]);
}

/* The bf16 conversions (ice-train's bf16 gradients and weights) are also
 * built for AVX2, chosen at load time where the CPU has it: on this
 * project's VM 28 MiB of fp32 in 1 MiB blocks round to bf16 in 2.3-2.55 ms
 * against 4.8-5.0 with the SSE2 baseline, and widen back in 1.85-1.92
 * against 2.9-3.3 (test_reduce prints them; docs/benchmarks.md). */
#if defined(ICE_HAVE_TARGET_CLONES) && defined(__x86_64__)
#define DEV_CVT_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define DEV_CVT_CLONES
#endif

DEV_CVT_CLONES
static void bf16_block_to_float(float *restrict d, const uint16_t *restrict s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = bf16_to_float(s[i]);
}

DEV_CVT_CLONES
static void float_block_to_bf16(uint16_t *restrict d, const float *restrict s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = float_to_bf16(s[i]);
}

void dev_bf16_to_float_n(float *d, const uint16_t *s, size_t n)
{
	bf16_block_to_float(d, s, n);
}

void dev_float_to_bf16_n(uint16_t *d, const float *s, size_t n)
{
	float_block_to_bf16(d, s, n);
}

/* ---- element operations ---- */

/* Wrapping integer sum / product in the unsigned type UT. */
#define OP_ISUM(T, UT, x, y)  ((T)((UT)(x) + (UT)(y)))
#define OP_IPROD(T, UT, x, y) ((T)((UT)(x) * (UT)(y)))
#define OP_IMAX(T, UT, x, y)  ((x) > (y) ? (x) : (y))
#define OP_IMIN(T, UT, x, y)  ((x) < (y) ? (x) : (y))
#define OP_FSUM(T, UT, x, y)  ((x) + (y))
#define OP_FPROD(T, UT, x, y) ((x) * (y))
/* NaN-propagating: x when x > y or x is NaN, else y (NaN when y is). */
#define OP_FMAX(T, UT, x, y) (((x) > (y) || (x) != (x)) ? (x) : (y))
#define OP_FMIN(T, UT, x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))

/* Stamps the three loop shapes of one (type, op), with the signature of the
 * dispatch table. The 8-bit products are computed in int ((UT)x * (UT)y
 * promotes, which cannot overflow for 8 bits) and wrap on the cast back. */
#define DEV_KERNELS(name, T, UT, OP)                                                               \
	static void name##_2(void *restrict dv, const void *restrict sv, size_t n)                 \
	{                                                                                          \
		T *restrict d = dv;                                                                \
		const T *restrict s = sv;                                                          \
		for (size_t i = 0; i < n; i++)                                                     \
			d[i] = OP(T, UT, d[i], s[i]);                                              \
	}                                                                                          \
	static void name##_1(void *restrict dv, size_t n)                                          \
	{                                                                                          \
		T *restrict d = dv;                                                                \
		for (size_t i = 0; i < n; i++)                                                     \
			d[i] = OP(T, UT, d[i], d[i]);                                              \
	}                                                                                          \
	static void name##_3(void *restrict dv, const void *restrict av, const void *restrict bv,  \
			     size_t n)                                                             \
	{                                                                                          \
		T *restrict d = dv;                                                                \
		const T *restrict a = av;                                                          \
		const T *restrict b = bv;                                                          \
		for (size_t i = 0; i < n; i++)                                                     \
			d[i] = OP(T, UT, a[i], b[i]);                                              \
	}

#define DEV_INT_KERNELS(tn, T, UT)                                                                 \
	DEV_KERNELS(tn##_sum, T, UT, OP_ISUM)                                                      \
	DEV_KERNELS(tn##_prod, T, UT, OP_IPROD)                                                    \
	DEV_KERNELS(tn##_max, T, UT, OP_IMAX)                                                      \
	DEV_KERNELS(tn##_min, T, UT, OP_IMIN)

#define DEV_FLT_KERNELS(tn, T)                                                                     \
	DEV_KERNELS(tn##_sum, T, T, OP_FSUM)                                                       \
	DEV_KERNELS(tn##_prod, T, T, OP_FPROD)                                                     \
	DEV_KERNELS(tn##_max, T, T, OP_FMAX)                                                       \
	DEV_KERNELS(tn##_min, T, T, OP_FMIN)

DEV_INT_KERNELS(i8, int8_t, uint8_t)
DEV_INT_KERNELS(u8, uint8_t, uint8_t)
DEV_INT_KERNELS(i32, int32_t, uint32_t)
DEV_INT_KERNELS(u32, uint32_t, uint32_t)
DEV_INT_KERNELS(i64, int64_t, uint64_t)
DEV_INT_KERNELS(u64, uint64_t, uint64_t)
DEV_FLT_KERNELS(f32, float)
DEV_FLT_KERNELS(f64, double)

/* 16-bit floats: through f32 blocks on the stack, using the f32 kernels. */
#define DEV_HALF_KERNELS(name, to_f32, from_f32, f32op)                                            \
	static void name##_2(void *restrict dv, const void *restrict sv, size_t n)                 \
	{                                                                                          \
		uint16_t *restrict d = dv;                                                         \
		const uint16_t *restrict s = sv;                                                   \
		float fd[DEV_CVT_BLOCK], fs[DEV_CVT_BLOCK];                                        \
		for (size_t i = 0; i < n; i += DEV_CVT_BLOCK) {                                    \
			size_t m = n - i < DEV_CVT_BLOCK ? n - i : DEV_CVT_BLOCK;                  \
			to_f32(fd, d + i, m);                                                      \
			to_f32(fs, s + i, m);                                                      \
			f32op##_2(fd, fs, m);                                                      \
			from_f32(d + i, fd, m);                                                    \
		}                                                                                  \
	}                                                                                          \
	static void name##_1(void *restrict dv, size_t n)                                          \
	{                                                                                          \
		uint16_t *restrict d = dv;                                                         \
		float fd[DEV_CVT_BLOCK];                                                           \
		for (size_t i = 0; i < n; i += DEV_CVT_BLOCK) {                                    \
			size_t m = n - i < DEV_CVT_BLOCK ? n - i : DEV_CVT_BLOCK;                  \
			to_f32(fd, d + i, m);                                                      \
			f32op##_1(fd, m);                                                          \
			from_f32(d + i, fd, m);                                                    \
		}                                                                                  \
	}                                                                                          \
	static void name##_3(void *restrict dv, const void *restrict av, const void *restrict bv,  \
			     size_t n)                                                             \
	{                                                                                          \
		uint16_t *restrict d = dv;                                                         \
		const uint16_t *restrict a = av;                                                   \
		const uint16_t *restrict b = bv;                                                   \
		float fa[DEV_CVT_BLOCK], fb[DEV_CVT_BLOCK];                                        \
		for (size_t i = 0; i < n; i += DEV_CVT_BLOCK) {                                    \
			size_t m = n - i < DEV_CVT_BLOCK ? n - i : DEV_CVT_BLOCK;                  \
			to_f32(fa, a + i, m);                                                      \
			to_f32(fb, b + i, m);                                                      \
			f32op##_2(fa, fb, m);                                                      \
			from_f32(d + i, fa, m);                                                    \
		}                                                                                  \
	}

#define DEV_HALF_TYPE_KERNELS(tn, to_f32, from_f32)                                                \
	DEV_HALF_KERNELS(tn##_sum, to_f32, from_f32, f32_sum)                                      \
	DEV_HALF_KERNELS(tn##_prod, to_f32, from_f32, f32_prod)                                    \
	DEV_HALF_KERNELS(tn##_max, to_f32, from_f32, f32_max)                                      \
	DEV_HALF_KERNELS(tn##_min, to_f32, from_f32, f32_min)

DEV_HALF_TYPE_KERNELS(f16, half_block_to_float, float_block_to_half)
DEV_HALF_TYPE_KERNELS(bf16, bf16_block_to_float, float_block_to_bf16)

/* ---- dispatch ---- */

typedef void (*dev_k2_fn)(void *restrict d, const void *restrict s, size_t n);
typedef void (*dev_k1_fn)(void *restrict d, size_t n);
typedef void (*dev_k3_fn)(void *restrict d, const void *restrict a, const void *restrict b,
			  size_t n);

struct dev_kernel {
	dev_k2_fn k2;
	dev_k1_fn k1;
	dev_k3_fn k3;
};

#define DEV_K(name)                                                                                \
	{                                                                                          \
		name##_2, name##_1, name##_3                                                       \
	}
#define DEV_KROW(tn)                                                                               \
	{                                                                                          \
		[DEV_SUM] = DEV_K(tn##_sum), [DEV_PROD] = DEV_K(tn##_prod),                        \
		[DEV_MAX] = DEV_K(tn##_max), [DEV_MIN] = DEV_K(tn##_min),                          \
		[DEV_AVG] = DEV_K(tn##_sum),                                                       \
	}

static const struct dev_kernel kernels[DEV_DTYPE_MAX][DEV_REDOP_MAX] = {
	[DEV_INT8] = DEV_KROW(i8),     [DEV_UINT8] = DEV_KROW(u8),
	[DEV_INT32] = DEV_KROW(i32),   [DEV_UINT32] = DEV_KROW(u32),
	[DEV_INT64] = DEV_KROW(i64),   [DEV_UINT64] = DEV_KROW(u64),
	[DEV_FLOAT16] = DEV_KROW(f16), [DEV_FLOAT32] = DEV_KROW(f32),
	[DEV_FLOAT64] = DEV_KROW(f64), [DEV_BFLOAT16] = DEV_KROW(bf16),
};

void dev_reduce(void *dst, const void *src, size_t count, enum dev_dtype t, enum dev_redop op)
{
	const struct dev_kernel *k;

	if (count == 0 || (unsigned)t >= DEV_DTYPE_MAX || (unsigned)op >= DEV_REDOP_MAX)
		return;
	k = &kernels[t][op];
	if (dst == src)
		k->k1(dst, count);
	else
		k->k2(dst, src, count);
}

void dev_reduce3(void *dst, const void *a, const void *b, size_t count, enum dev_dtype t,
		 enum dev_redop op)
{
	const struct dev_kernel *k;

	if (count == 0 || (unsigned)t >= DEV_DTYPE_MAX || (unsigned)op >= DEV_REDOP_MAX)
		return;
	k = &kernels[t][op];
	if (dst == a && dst == b)
		k->k1(dst, count);
	else if (dst == a)
		k->k2(dst, b, count);
	else if (dst == b)
		k->k2(dst, a, count); /* every op is commutative */
	else
		k->k3(dst, a, b, count);
}

/* ---- AVG's final step ---- */

#define DEV_DIV_LOOP(T, buf, count, n)                                                             \
	do {                                                                                       \
		T *restrict p_ = (buf);                                                            \
		for (size_t i_ = 0; i_ < (count); i_++)                                            \
			p_[i_] = (T)(p_[i_] / (n));                                                \
	} while (0)

static void div_half(uint16_t *restrict p, size_t count, float n, int bf)
{
	float f[DEV_CVT_BLOCK];

	for (size_t i = 0; i < count; i += DEV_CVT_BLOCK) {
		size_t m = count - i < DEV_CVT_BLOCK ? count - i : DEV_CVT_BLOCK;

		if (bf)
			bf16_block_to_float(f, p + i, m);
		else
			half_block_to_float(f, p + i, m);
		for (size_t j = 0; j < m; j++)
			f[j] = f[j] / n;
		if (bf)
			float_block_to_bf16(p + i, f, m);
		else
			float_block_to_half(p + i, f, m);
	}
}

void dev_scale_div(void *buf, size_t count, enum dev_dtype t, int n)
{
	if (n <= 0 || count == 0)
		return;
	switch (t) {
	case DEV_INT8:
		DEV_DIV_LOOP(int8_t, buf, count, n);
		break;
	case DEV_UINT8:
		DEV_DIV_LOOP(uint8_t, buf, count, (unsigned)n);
		break;
	case DEV_INT32:
		DEV_DIV_LOOP(int32_t, buf, count, (int32_t)n);
		break;
	case DEV_UINT32:
		DEV_DIV_LOOP(uint32_t, buf, count, (uint32_t)n);
		break;
	case DEV_INT64:
		DEV_DIV_LOOP(int64_t, buf, count, (int64_t)n);
		break;
	case DEV_UINT64:
		DEV_DIV_LOOP(uint64_t, buf, count, (uint64_t)n);
		break;
	case DEV_FLOAT32:
		DEV_DIV_LOOP(float, buf, count, (float)n);
		break;
	case DEV_FLOAT64:
		DEV_DIV_LOOP(double, buf, count, (double)n);
		break;
	case DEV_FLOAT16:
		div_half(buf, count, (float)n, 0);
		break;
	case DEV_BFLOAT16:
		div_half(buf, count, (float)n, 1);
		break;
	default:
		break;
	}
}

/* ---- single elements ---- */

/* double -> float rounded to odd: correct final rounding to a format of
 * at most 24 - 2 bits (half, bf16) afterwards, no double rounding. */
static float double_to_float_odd(double v)
{
	float f = (float)v;
	uint32_t u;

	if (isnan(v) || isinf(f) || (double)f == v)
		return f;
	u = f2u(f);
	if ((u & 1) == 0) {
		/* move one ulp towards v (away from zero if |f| < |v|) */
		if (fabs((double)f) < fabs(v))
			u++;
		else
			u--;
	}
	return u2f(u);
}

/* v rounded toward zero and saturated to [lo, hi]; NaN gives 0. */
static double sat(double v, double lo, double hi)
{
	if (isnan(v))
		return 0;
	if (v <= lo)
		return lo;
	if (v >= hi)
		return hi;
	return trunc(v);
}

void dev_elem_set(void *buf, size_t i, enum dev_dtype t, double v)
{
	switch (t) {
	case DEV_INT8:
		((int8_t *)buf)[i] = (int8_t)sat(v, INT8_MIN, INT8_MAX);
		break;
	case DEV_UINT8:
		((uint8_t *)buf)[i] = (uint8_t)sat(v, 0, UINT8_MAX);
		break;
	case DEV_INT32:
		((int32_t *)buf)[i] = (int32_t)sat(v, INT32_MIN, INT32_MAX);
		break;
	case DEV_UINT32:
		((uint32_t *)buf)[i] = (uint32_t)sat(v, 0, UINT32_MAX);
		break;
	case DEV_INT64:
		/* 2^63 is not an int64; INT64_MAX as double rounds up to it */
		if (!isnan(v) && v >= 0x1p63)
			((int64_t *)buf)[i] = INT64_MAX;
		else
			((int64_t *)buf)[i] = (int64_t)sat(v, -0x1p63, 0x1p63);
		break;
	case DEV_UINT64:
		if (!isnan(v) && v >= 0x1p64)
			((uint64_t *)buf)[i] = UINT64_MAX;
		else
			((uint64_t *)buf)[i] = (uint64_t)sat(v, 0, 0x1p64);
		break;
	case DEV_FLOAT16:
		((uint16_t *)buf)[i] = float_to_half(double_to_float_odd(v));
		break;
	case DEV_FLOAT32:
		((float *)buf)[i] = (float)v;
		break;
	case DEV_FLOAT64:
		((double *)buf)[i] = v;
		break;
	case DEV_BFLOAT16:
		((uint16_t *)buf)[i] = float_to_bf16(double_to_float_odd(v));
		break;
	default:
		break;
	}
}

double dev_elem_get(const void *buf, size_t i, enum dev_dtype t)
{
	switch (t) {
	case DEV_INT8:
		return ((const int8_t *)buf)[i];
	case DEV_UINT8:
		return ((const uint8_t *)buf)[i];
	case DEV_INT32:
		return ((const int32_t *)buf)[i];
	case DEV_UINT32:
		return ((const uint32_t *)buf)[i];
	case DEV_INT64:
		return (double)((const int64_t *)buf)[i];
	case DEV_UINT64:
		return (double)((const uint64_t *)buf)[i];
	case DEV_FLOAT16:
		return half_to_float(((const uint16_t *)buf)[i]);
	case DEV_FLOAT32:
		return ((const float *)buf)[i];
	case DEV_FLOAT64:
		return ((const double *)buf)[i];
	case DEV_BFLOAT16:
		return bf16_to_float(((const uint16_t *)buf)[i]);
	default:
		return 0;
	}
}

/* One element of a float type (f16, f32, bf16) as f32, and back. */
static float cvt_load(const void *buf, size_t i, enum dev_dtype t)
{
	switch (t) {
	case DEV_FLOAT16:
		return half_to_float(((const uint16_t *)buf)[i]);
	case DEV_BFLOAT16:
		return bf16_to_float(((const uint16_t *)buf)[i]);
	default:
		return ((const float *)buf)[i];
	}
}

static void cvt_store(void *buf, size_t i, enum dev_dtype t, float v)
{
	switch (t) {
	case DEV_FLOAT16:
		((uint16_t *)buf)[i] = dev_float_to_half(v);
		break;
	case DEV_BFLOAT16:
		((uint16_t *)buf)[i] = dev_float_to_bf16(v);
		break;
	default:
		((float *)buf)[i] = v;
	}
}

static bool cvt_type(enum dev_dtype t)
{
	return t == DEV_FLOAT16 || t == DEV_FLOAT32 || t == DEV_BFLOAT16;
}

int dev_convert(void *dst, enum dev_dtype dt, const void *src, enum dev_dtype st, size_t count)
{
	if (!cvt_type(dt) || !cvt_type(st) || dt == st)
		return -EINVAL;
	if (dt == DEV_BFLOAT16 && st == DEV_FLOAT32)
		dev_float_to_bf16_n(dst, src, count);
	else if (dt == DEV_FLOAT32 && st == DEV_BFLOAT16)
		dev_bf16_to_float_n(dst, src, count);
	else
		for (size_t i = 0; i < count; i++)
			cvt_store(dst, i, dt, cvt_load(src, i, st));
	return 0;
}

/* fp-contract off (gcc's attribute, clang's pragma): the product is
 * rounded on its own, as the kernel's __fmul_rn, also where the target
 * has a fused multiply-add */
__attribute__((optimize("fp-contract=off"))) void
dev_sgd(float *restrict w, const float *restrict g, float scale, size_t count)
{
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif
	for (size_t i = 0; i < count; i++)
		w[i] = w[i] - scale * g[i];
}
