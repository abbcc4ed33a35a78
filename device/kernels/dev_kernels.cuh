/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device kernels shared by the CUDA and HIP plugins (included by
 * dev_rt_cuda.cu and dev_rt_hip.hip after the vendor runtime header).
 * Written in the common subset of CUDA C++ and HIP C++: __global__,
 * __device__, __shared__, threadIdx/blockIdx, <<<>>> launches.
 *
 * Semantics follow device/dev_reduce.c exactly, so a device rank and a
 * host rank of one communicator compute the same bits:
 *  - integers: sum and prod wrap modulo 2^bits (computed in the unsigned
 *    type); AVG reduces as a sum; scale_div truncates;
 *  - floats: max / min propagate NaN (x when x > y or x is NaN, else y, with
 *    x = dst and y = src); -0 / +0 compare equal and give src;
 *  - f16 / bf16: converted to f32, reduced in f32, rounded back to nearest
 *    even, NaNs quieted with the top of the payload kept (our own
 *    conversions below, not the vendor intrinsics, so both vendors agree
 *    with the host bit for bit).
 */
#ifndef DEV_KERNELS_CUH
#define DEV_KERNELS_CUH

#include <stddef.h>
#include <stdint.h>

namespace tpk
{

/* ---- 16-bit float conversions --------------------------------------- */

__device__ __forceinline__ float u32_as_f32(uint32_t u)
{
	return __uint_as_float(u);
}

__device__ __forceinline__ uint32_t f32_as_u32(float f)
{
	return __float_as_uint(f);
}

__device__ __forceinline__ float half_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;

	if (e == 0x1f) /* inf / NaN */
		return u32_as_f32(sign | 0x7f800000u | (m << 13));
	if (e == 0) { /* zero / subnormal: m * 2^-24, exact in f32 */
		float v = (float)m * 5.9604644775390625e-8f;

		return sign ? -v : v;
	}
	return u32_as_f32(sign | ((e + 112u) << 23) | (m << 13));
}

__device__ __forceinline__ uint16_t f32_to_half(float f)
{
	uint32_t u = f32_as_u32(f);
	uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;

	if (a > 0x7f800000u) /* NaN: quiet, keep the payload's top bits */
		return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
	if (a >= 0x477ff000u) /* >= 65520 rounds to infinity */
		return (uint16_t)(sign | 0x7c00u);
	if (a >= 0x38800000u) { /* normal half: rebias, round to nearest even */
		uint32_t r = a - ((127u - 15u) << 23);

		r += 0xfffu + ((r >> 13) & 1u);
		return (uint16_t)(sign | (r >> 13));
	}
	if (a < 0x33000000u) /* below half of the smallest subnormal: zero */
		return (uint16_t)sign;
	/* subnormal half: the value in units of 2^-24, rounded to nearest even */
	uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
	uint32_t shift = 126u - e; /* 14..24 */
	uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1u);

	if (rem > halfway || (rem == halfway && (q & 1u)))
		q++;
	return (uint16_t)(sign | q);
}

__device__ __forceinline__ float bf16_to_f32(uint16_t b)
{
	return u32_as_f32((uint32_t)b << 16);
}

__device__ __forceinline__ uint16_t f32_to_bf16(float f)
{
	uint32_t u = f32_as_u32(f);

	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40u);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* ---- element traits: storage S, compute C, the four operators -------- */

/* stored and computed as T */
template <typename T> struct el_plain {
	typedef T S;
	typedef T C;
	static __device__ __forceinline__ C load(S x)
	{
		return x;
	}
	static __device__ __forceinline__ S store(C x)
	{
		return x;
	}
};

template <typename T, typename U> struct el_int : el_plain<T> {
	typedef T C; /* a dependent base's names are not found unqualified */
	static __device__ __forceinline__ C add(C x, C y)
	{
		return (C)(U)((U)x + (U)y);
	}
	static __device__ __forceinline__ C mul(C x, C y)
	{
		return (C)(U)((U)x * (U)y);
	}
	static __device__ __forceinline__ C max(C x, C y)
	{
		return x > y ? x : y;
	}
	static __device__ __forceinline__ C min(C x, C y)
	{
		return x < y ? x : y;
	}
	/* n > 0 in a wide type, like dev_scale_div: (C)n would wrap for int8
	 * at n >= 128 and give 0 for uint8 at n = 256 */
	static __device__ __forceinline__ C div(C x, int n)
	{
		if ((C)-1 > (C)0 && sizeof(C) == 8) /* uint64: may not fit a long long */
			return (C)((unsigned long long)x / (unsigned long long)n);
		return (C)((long long)x / (long long)n);
	}
};

template <typename T> struct el_float : el_plain<T> {
	typedef T C;
	static __device__ __forceinline__ C add(C x, C y)
	{
		return x + y;
	}
	static __device__ __forceinline__ C mul(C x, C y)
	{
		return x * y;
	}
	static __device__ __forceinline__ C max(C x, C y)
	{
		return (x > y || x != x) ? x : y;
	}
	static __device__ __forceinline__ C min(C x, C y)
	{
		return (x < y || x != x) ? x : y;
	}
	static __device__ __forceinline__ C div(C x, int n)
	{
		return x / (C)n;
	}
};

/* f16 / bf16: stored as uint16_t, computed in f32 */
template <bool BF> struct el_half : el_float<float> {
	typedef uint16_t S;
	static __device__ __forceinline__ float load(S x)
	{
		return BF ? bf16_to_f32(x) : half_to_f32(x);
	}
	static __device__ __forceinline__ S store(float x)
	{
		return BF ? f32_to_bf16(x) : f32_to_half(x);
	}
};

/* operator tags (AVG is launched as SUM): name::f<E> is E's fn */
#define DEV_OP_TAG(name, fn)                                                                       \
	struct name {                                                                              \
		template <class E>                                                                 \
		static __device__ __forceinline__ typename E::C f(typename E::C x,                 \
								  typename E::C y)                 \
		{                                                                                  \
			return E::fn(x, y);                                                        \
		}                                                                                  \
	}
DEV_OP_TAG(op_sum, add);
DEV_OP_TAG(op_prod, mul);
DEV_OP_TAG(op_max, max);
DEV_OP_TAG(op_min, min);
#undef DEV_OP_TAG

/* ---- reduce / scale_div: grid-stride, coalesced ---------------------- */

template <class E, class O>
__global__ void k_reduce(typename E::S *__restrict__ d, const typename E::S *__restrict__ s,
			 size_t n)
{
	size_t stride = (size_t)blockDim.x * gridDim.x;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		d[i] = E::store(O::template f<E>(E::load(d[i]), E::load(s[i])));
}

/* dst == src (reduce of a buffer with itself) must not be __restrict__ */
template <class E, class O> __global__ void k_reduce_self(typename E::S *d, size_t n)
{
	size_t stride = (size_t)blockDim.x * gridDim.x;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
		typename E::C x = E::load(d[i]);

		d[i] = E::store(O::template f<E>(x, x));
	}
}

template <class E> __global__ void k_scale_div(typename E::S *d, size_t n, int div)
{
	size_t stride = (size_t)blockDim.x * gridDim.x;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		d[i] = E::store(E::div(E::load(d[i]), div));
}

/* d[i] = s[i] from one float type to another, through f32 (E::load /
 * E::store: the conversions of the reductions, bit for bit) */
template <class Ed, class Es>
__global__ void k_convert(typename Ed::S *__restrict__ d, const typename Es::S *__restrict__ s,
			  size_t n)
{
	size_t stride = (size_t)blockDim.x * gridDim.x;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		d[i] = Ed::store(Es::load(s[i]));
}

/* An SGD step, w[i] -= scale * g[i], the product rounded on its own
 * (__fmul_rn is never contracted into a fused multiply-add): dev_sgd's
 * bits on the host */
__global__ void k_sgd(float *__restrict__ w, const float *__restrict__ g, float scale, size_t n)
{
	size_t stride = (size_t)blockDim.x * gridDim.x;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		w[i] = w[i] - __fmul_rn(scale, g[i]);
}

enum { ELT_THREADS = 256, ELT_MAX_BLOCKS = 8192 };

static inline unsigned elt_blocks(size_t n)
{
	size_t b = (n + ELT_THREADS - 1) / ELT_THREADS;

	return (unsigned)(b < (size_t)ELT_MAX_BLOCKS ? (b ? b : 1) : (size_t)ELT_MAX_BLOCKS);
}

/* ---- SGEMM: 64 x 64 tiles of C per block, 16 x 16 threads, 4 x 4 results
 * per thread (rows ty + 16 r, columns tx + 16 c, so shared-memory reads of a
 * warp hit distinct banks), K in steps of 16 through shared memory. op(A)
 * and op(B) are read through the transposition flags while loading the
 * tiles, always along the contiguous direction of the stored matrix.
 * Row tiles are blockIdx.x; column tiles start at blockIdx.y and step by
 * gridDim.y (grid.y is limited to 65535, so wide C loops). ---- */

enum {
	SG_BM = 64,
	SG_BN = SG_BM /* one tile loader for both */,
	SG_BK = 16,
	SG_TX = 16,
	SG_TY = 16,
	SG_MAX_GRID_Y = 65535
};

/* One SG_BK x 64 tile t[p][x] = X[x0 + x][k0 + p] of an operand X with
 * nx rows of k (zero outside), read along the stored matrix's contiguous
 * direction: X stored nx x k when rows, else k x nx (X transposed). */
__device__ static void sg_load_tile(float (*t)[SG_BM + 1], const float *__restrict__ src, bool rows,
				    int nx, int k, int x0, int xr, int k0, int kr, int tid)
{
	for (int l = 0; l < (SG_BM * SG_BK) / (SG_TX * SG_TY); l++) {
		int idx = tid + l * SG_TX * SG_TY, x, p;
		float v = 0.0f;

		if (rows) {
			p = idx % SG_BK;
			x = idx / SG_BK;
			if (x < xr && p < kr)
				v = src[(size_t)(x0 + x) * k + (size_t)(k0 + p)];
		} else {
			x = idx % SG_BM;
			p = idx / SG_BM;
			if (x < xr && p < kr)
				v = src[(size_t)(k0 + p) * nx + (size_t)(x0 + x)];
		}
		t[p][x] = v;
	}
}

__global__ void __launch_bounds__(SG_TX *SG_TY)
	k_sgemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *__restrict__ a,
		const float *__restrict__ b, float beta, float *__restrict__ c)
{
	__shared__ float as[SG_BK][SG_BM + 1]; /* as[p][i] = op(A)[bm + i][k0 + p] */
	__shared__ float bs[SG_BK][SG_BN + 1]; /* bs[p][j] = op(B)[k0 + p][bn + j] */
	const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * SG_TX + tx;
	const int bm = (int)blockIdx.x * SG_BM, mr = m - bm; /* rows left: bm + i < m */

	for (long long bn0 = (long long)blockIdx.y * SG_BN; bn0 < n;
	     bn0 += (long long)gridDim.y * SG_BN) {
		const int bn = (int)bn0, nr = n - bn; /* columns left */
		float acc[4][4] = {{0}};

		for (long long k0l = 0; k0l < k; k0l += SG_BK) {
			const int k0 = (int)k0l, kr = k - k0; /* k0 + p < k */

			/* op(A) rows are A's rows unless ta; op(B) columns are B's rows when tb */
			sg_load_tile(as, a, !ta, m, k, bm, mr, k0, kr, tid);
			sg_load_tile(bs, b, tb, n, k, bn, nr, k0, kr, tid);
			__syncthreads();
#pragma unroll
			for (int p = 0; p < SG_BK; p++) {
				float ar[4], br[4];

#pragma unroll
				for (int r = 0; r < 4; r++)
					ar[r] = as[p][ty + SG_TY * r];
#pragma unroll
				for (int q = 0; q < 4; q++)
					br[q] = bs[p][tx + SG_TX * q];
#pragma unroll
				for (int r = 0; r < 4; r++)
#pragma unroll
					for (int q = 0; q < 4; q++)
						acc[r][q] += ar[r] * br[q];
			}
			__syncthreads();
		}
#pragma unroll
		for (int r = 0; r < 4; r++) {
			int i = ty + SG_TY * r;

			if (i >= mr)
				continue;
#pragma unroll
			for (int q = 0; q < 4; q++) {
				int j = tx + SG_TX * q;

				if (j < nr) {
					float *cij = c + (size_t)(bm + i) * n + (size_t)(bn + j);

					/* beta == 0: C is not read (may hold NaN), like the host */
					*cij = alpha * acc[r][q] +
					       (beta != 0.0f ? beta * *cij : 0.0f);
				}
			}
		}
	}
}

} /* namespace tpk */

#endif /* DEV_KERNELS_CUH */
