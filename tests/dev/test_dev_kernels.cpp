// SPDX-License-Identifier: Apache-2.0
/*
 * The device kernels of transport/dev_kernels/tp_dev_kernels.cuh, run on the
 * CPU: the .cuh is compiled as host C++ with the few CUDA built-ins it uses
 * defined here (threadIdx, blockIdx, __syncthreads as a barrier across one
 * std::thread per GPU thread, __shared__ as one static copy per block, the
 * blocks run one after the other). No GPU here; this checks the kernels'
 * arithmetic in CI: the f16 / bf16 conversions bit for bit against
 * tp_reduce.c (every 16-bit value, a sweep and random f32 values), every
 * reduce dtype / op and scale_div bit for bit against tp_reduce /
 * tp_scale_div, and the tiled SGEMM (partial tiles, every ta / tb, beta 0)
 * against tp_host_sgemm. What it cannot check (warp scheduling, memory
 * coalescing, the vendor compilers' code) is left to test_dev_real on a GPU.
 */
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

/* ---- the CUDA built-ins the kernels use, on the CPU ---- */

struct emu_dim {
	unsigned x = 0, y = 0, z = 0;
};
static thread_local emu_dim threadIdx, blockIdx;
static emu_dim blockDim, gridDim;
static std::barrier<> *emu_bar;

#define __device__
#define __host__
#define __forceinline__ inline
#define __global__
#define __restrict__
#define __launch_bounds__(x)
#define __shared__ static /* one copy: blocks run one after the other */

static inline void __syncthreads()
{
	emu_bar->arrive_and_wait();
}

static inline float __uint_as_float(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static inline uint32_t __float_as_uint(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

#include "tp_dev_kernels.cuh"
extern "C" {
#include "tp_reduce.h"
#include "tp_mem.h"
}
/* Run kernel k over a gx x gy grid of bx x by blocks: one std::thread per
 * GPU thread of a block, each walking the blocks in the same order with a
 * barrier between blocks (the shared arrays are reused by the next one). */
static void launch(unsigned gx, unsigned gy, unsigned bx, unsigned by, std::function<void()> k)
{
	std::barrier<> bar(bx * by);
	std::vector<std::thread> th;

	blockDim = {bx, by, 1};
	gridDim = {gx, gy, 1};
	emu_bar = &bar;
	for (unsigned ty = 0; ty < by; ty++)
		for (unsigned tx = 0; tx < bx; tx++)
			th.emplace_back([=, &bar] {
				threadIdx = {tx, ty, 0};
				for (unsigned y = 0; y < gy; y++)
					for (unsigned x = 0; x < gx; x++) {
						blockIdx = {x, y, 0};
						k();
						bar.arrive_and_wait();
					}
			});
	for (auto &t : th)
		t.join();
}

static int bad;
static const size_t N = 3001;

static void fill(std::vector<uint8_t> &v, int t, unsigned seed)
{
	srand(seed);
	for (size_t i = 0; i < N; i++) {
		double d = (double)(rand() % 2001 - 1000);

		if (t >= TP_FLOAT16) /* fractions, tiny and large values */
			d = d / 64.0 * pow(2.0, rand() % 40 - 20);
		tp_elem_set(v.data(), i, (enum tp_dtype)t, d);
	}
	if (t == TP_FLOAT32) {
		((float *)v.data())[3] = NAN;
		((float *)v.data())[5] = -0.0f;
	}
}

template <class E, class O>
static void reduce_one(std::vector<uint8_t> &x, const std::vector<uint8_t> &y)
{
	launch(3, 1, 32, 1, [&] {
		tpk::k_reduce<E, O>((typename E::S *)x.data(), (const typename E::S *)y.data(), N);
	});
}

/* every op of one dtype, then scale_div, against the host library */
template <class E> static void check_dtype(int t)
{
	size_t bytes = N * tp_dtype_size((enum tp_dtype)t);
	std::vector<uint8_t> x(N * 8), y(N * 8), w;

	for (int op = TP_SUM; op <= TP_MIN; op++) {
		fill(x, t, 1 + op);
		fill(y, t, 9 + op);
		w = x;
		tp_reduce(w.data(), y.data(), N, (enum tp_dtype)t, (enum tp_redop)op);
		if (op == TP_SUM)
			reduce_one<E, tpk::op_sum>(x, y);
		else if (op == TP_PROD)
			reduce_one<E, tpk::op_prod>(x, y);
		else if (op == TP_MAX)
			reduce_one<E, tpk::op_max>(x, y);
		else
			reduce_one<E, tpk::op_min>(x, y);
		if (memcmp(w.data(), x.data(), bytes) != 0) {
			bad++;
			printf("reduce %s %s differs from tp_reduce\n",
			       tp_dtype_name((enum tp_dtype)t), tp_redop_name((enum tp_redop)op));
		}
		launch(3, 1, 32, 1, [&] { tpk::k_scale_div<E>((typename E::S *)x.data(), N, 7); });
		tp_scale_div(w.data(), N, (enum tp_dtype)t, 7);
		if (memcmp(w.data(), x.data(), bytes) != 0) {
			bad++;
			printf("scale_div %s differs from tp_scale_div\n",
			       tp_dtype_name((enum tp_dtype)t));
		}
	}
}

static void check_conversions(void)
{
	for (uint32_t h = 0; h < 65536; h++) {
		float a = tpk::half_to_f32((uint16_t)h), b = tp_half_to_float((uint16_t)h);
		float c = tpk::bf16_to_f32((uint16_t)h), d = tp_bf16_to_float((uint16_t)h);

		if (memcmp(&a, &b, 4) != 0 && !(a != a && b != b) && bad++ < 10)
			printf("half %04x: %g, host %g\n", h, a, b);
		if (memcmp(&c, &d, 4) != 0 && bad++ < 10)
			printf("bf16 %04x: %g, host %g\n", h, c, d);
	}
	srand(1);
	for (long i = 0; i < 4000000; i++) {
		/* a sweep over every exponent, then random bit patterns */
		uint32_t u = i < (1L << 18) ? (uint32_t)i << 14
					    : (uint32_t)rand() ^ ((uint32_t)rand() << 16);
		float f = __uint_as_float(u);
		uint16_t a = tpk::f32_to_half(f), b = tp_float_to_half(f);
		uint16_t c = tpk::f32_to_bf16(f), d = tp_float_to_bf16(f);

		if (a != b && bad++ < 10)
			printf("f32 %08x to half: %04x, host %04x\n", u, a, b);
		if (c != d && bad++ < 10)
			printf("f32 %08x to bf16: %04x, host %04x\n", u, c, d);
	}
}

static void check_sgemm(void)
{
	/* one element, a partial tile, several tiles with partial edges */
	static const int dims[][3] = {{1, 1, 1}, {70, 65, 33}, {5, 130, 17}};

	for (auto &dm : dims) {
		int m = dm[0], n = dm[1], k = dm[2];
		std::vector<float> a((size_t)m * k), b((size_t)k * n), c((size_t)m * n),
			want(c.size());

		for (size_t i = 0; i < a.size(); i++)
			a[i] = (float)((int)(i * 7919 % 201) - 100) / 50;
		for (size_t i = 0; i < b.size(); i++)
			b[i] = (float)((int)(i * 104729 % 199) - 99) / 50;
		for (int tt = 0; tt < 4; tt++) {
			bool ta = tt & 1, tb = tt & 2;
			float beta = tt == 3 ? 0.0f : 0.5f;

			for (size_t i = 0; i < c.size(); i++)
				c[i] = want[i] =
					tt == 3 ? NAN : (float)(i % 5); /* beta 0: C unread */
			launch((unsigned)(n + tpk::SG_BN - 1) / tpk::SG_BN,
			       (unsigned)(m + tpk::SG_BM - 1) / tpk::SG_BM, tpk::SG_TX, tpk::SG_TY,
			       [&] {
				       tpk::k_sgemm(ta, tb, m, n, k, 1.5f, a.data(), b.data(), beta,
						    c.data());
			       });
			tp_host_sgemm(ta, tb, m, n, k, 1.5f, a.data(), b.data(), beta, want.data());
			for (size_t i = 0; i < c.size(); i++)
				if (!(fabsf(c[i] - want[i]) <=
				      1e-4f * k * fmaxf(1, fabsf(want[i])))) {
					bad++;
					printf("sgemm %dx%dx%d ta %d tb %d: C[%zu] %g, host %g\n",
					       m, n, k, ta, tb, i, c[i], want[i]);
					break;
				}
		}
	}
}

int main()
{
	check_conversions();
	check_dtype<tpk::el_int<int8_t, uint8_t>>(TP_INT8);
	check_dtype<tpk::el_int<uint8_t, uint8_t>>(TP_UINT8);
	check_dtype<tpk::el_int<int32_t, uint32_t>>(TP_INT32);
	check_dtype<tpk::el_int<uint32_t, uint32_t>>(TP_UINT32);
	check_dtype<tpk::el_int<int64_t, uint64_t>>(TP_INT64);
	check_dtype<tpk::el_int<uint64_t, uint64_t>>(TP_UINT64);
	check_dtype<tpk::el_half<false>>(TP_FLOAT16);
	check_dtype<tpk::el_float<float>>(TP_FLOAT32);
	check_dtype<tpk::el_float<double>>(TP_FLOAT64);
	check_dtype<tpk::el_half<true>>(TP_BFLOAT16);
	check_sgemm();
	printf("%s: %d mismatches\n", bad ? "FAIL" : "ok", bad);
	return bad != 0;
}
