// SPDX-License-Identifier: Apache-2.0
/*
 * The device kernels of device/kernels/dev_kernels.cuh, run on the
 * CPU: the .cuh is compiled as host C++ with the few CUDA built-ins it uses
 * defined here (threadIdx, blockIdx, __syncthreads as a barrier across one
 * std::thread per GPU thread, __shared__ as one static copy per block, the
 * blocks run one after the other). No GPU here; this checks the kernels'
 * arithmetic in CI: the f16 / bf16 conversions bit for bit against
 * dev_reduce.c (every 16-bit value, a sweep and random f32 values), every
 * reduce dtype / op and scale_div bit for bit against dev_reduce /
 * dev_scale_div, the SGD step against dev_sgd, and the tiled SGEMM (partial tiles, every ta / tb, beta 0)
 * against dev_host_sgemm.
 *
 * The plugin body (dev_rt_impl.inc) is compiled here too, over an
 * emulated runtime ("emu", standing for cuda / hip): per-thread sticky
 * errors like cudaGetLastError's (a failed malloc leaves its error pending
 * until someone reads it), the launch limits (grid.y <= 65535, 1024 threads
 * per block), and a switch for "no kernel image for this GPU". The tests
 * call the plugin's table (dev_rt_get), so its launch configurations,
 * dtype / op dispatch and error reporting are checked with the kernels.
 * What it cannot check (warp scheduling, memory
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

/* the product alone, rounded to f32 (never contracted) */
static inline float __fmul_rn(float a, float b)
{
	volatile float p = a * b;

	return p;
}

#include "dev_kernels.cuh"
extern "C" {
#include "dev.h"
}

/* ---- an emulated device runtime under the plugin body ---- */

#include "dev_rt.h"

typedef int emuError_t;
enum {
	emuSuccess = 0,
	emuErrorInvalidValue = 1,
	emuErrorMemoryAllocation = 2,
	emuErrorInvalidConfiguration = 9,
	emuErrorNoKernelImageForDevice = 209,
};
typedef void *emuStream_t;
typedef void *emuEvent_t;
enum emuMemcpyKind { emuMemcpyHostToDevice, emuMemcpyDeviceToHost, emuMemcpyDeviceToDevice };
enum { emuStreamNonBlocking = 1, emuEventDisableTiming = 2 };
struct emuDeviceProp {
	char name[256];
	int major, minor;
};
struct dim3 {
	unsigned x, y, z;
	dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c)
	{
	}
};

static thread_local emuError_t emu_last; /* sticky until emuGetLastError */
static int emu_fail_malloc, emu_no_image, emu_dry_run;
static long emu_launches;
static dim3 emu_grid; /* of the last launch */
static int emu_stream_tag;

static emuError_t emu_ret(emuError_t e)
{
	if (e != emuSuccess)
		emu_last = e;
	return e;
}

static emuError_t emuGetLastError()
{
	emuError_t e = emu_last;

	emu_last = emuSuccess;
	return e;
}

static const char *emuGetErrorString(emuError_t e)
{
	return e == emuSuccess ? "no error" : "emu error";
}

static emuError_t emuRuntimeGetVersion(int *v)
{
	*v = 1;
	return emuSuccess;
}

static emuError_t emuGetDeviceCount(int *n)
{
	*n = 1;
	return emuSuccess;
}

static emuError_t emuSetDevice(int d)
{
	return emu_ret(d == 0 ? emuSuccess : emuErrorInvalidValue);
}

static emuError_t emuGetDeviceProperties(emuDeviceProp *p, int d)
{
	snprintf(p->name, sizeof(p->name), "emu %d", d);
	p->major = 7;
	p->minor = 5;
	return emuSuccess;
}

static emuError_t emuMemGetInfo(size_t *f, size_t *t)
{
	*t = (size_t)1 << 30;
	*f = *t / 2;
	return emuSuccess;
}

static emuError_t emuMalloc(void **p, size_t len)
{
	if (emu_fail_malloc > 0) {
		emu_fail_malloc--;
		*p = NULL;
		return emu_ret(emuErrorMemoryAllocation);
	}
	*p = malloc(len ? len : 1);
	return emu_ret(*p != NULL ? emuSuccess : emuErrorMemoryAllocation);
}

static emuError_t emuFree(void *p)
{
	free(p);
	return emuSuccess;
}

static emuError_t emuStreamCreateWithFlags(emuStream_t *s, int)
{
	*s = &emu_stream_tag;
	return emuSuccess;
}

static emuError_t emuStreamDestroy(emuStream_t)
{
	return emuSuccess;
}

/* launches run at once: a stream is always idle */
static emuError_t emuStreamSynchronize(emuStream_t)
{
	return emuSuccess;
}

static emuError_t emuEventCreateWithFlags(emuEvent_t *e, int)
{
	*e = &emu_stream_tag;
	return emuSuccess;
}

static emuError_t emuEventDestroy(emuEvent_t)
{
	return emuSuccess;
}

static emuError_t emuEventRecord(emuEvent_t, emuStream_t)
{
	return emuSuccess;
}

static emuError_t emuEventSynchronize(emuEvent_t)
{
	return emuSuccess;
}

static emuError_t emuStreamWaitEvent(emuStream_t, emuEvent_t, unsigned)
{
	return emuSuccess;
}

static emuError_t emuMemcpyAsync(void *d, const void *s, size_t len, emuMemcpyKind, emuStream_t)
{
	memmove(d, s, len);
	return emuSuccess;
}

static void launch(unsigned gx, unsigned gy, unsigned bx, unsigned by, std::function<void()> k);

/* <<<grid, block>>>: the limits a GPU enforces, then the kernel on the CPU;
 * a refused launch leaves its error pending, like the runtime's */
static void emu_launch(dim3 grid, dim3 block, std::function<void()> k)
{
	unsigned long long threads = (unsigned long long)block.x * block.y * block.z;

	emu_launches++;
	emu_grid = grid;
	if (threads == 0 || threads > 1024 || grid.x == 0 || grid.x > 2147483647u ||
	    grid.y == 0 || grid.y > 65535 || grid.z == 0 || grid.z > 65535) {
		emu_last = emuErrorInvalidConfiguration;
		return;
	}
	if (emu_no_image) {
		emu_last = emuErrorNoKernelImageForDevice;
		return;
	}
	if (!emu_dry_run)
		launch(grid.x, grid.y, block.x, block.y, k);
}

#define GPU(x)			 emu##x
#define DEVRT_NAME		 "emu"
#define DEVRT_HOST_ALLOC(p, len) emuMalloc(p, len)
#define DEVRT_HOST_FREE(p)	 emuFree(p)
#define DEVRT_PROP		 emuDeviceProp
#define DEVRT_BUILT_FOR		 "emu_80"
#define DEVRT_KERNEL_LAUNCH(k, grid, block, stream, args)                                          \
	((void)(stream), emu_launch(grid, block, [&] { k(args...); }))

static int devrt_classify(int native)
{
	switch (native) {
	case emuSuccess:
		return DEV_RT_OK;
	case emuErrorMemoryAllocation:
		return DEV_RT_ENOMEM;
	case emuErrorInvalidValue:
		return DEV_RT_EINVAL;
	case emuErrorInvalidConfiguration:
		return DEV_RT_ELAUNCH;
	case emuErrorNoKernelImageForDevice:
		return DEV_RT_ENOIMAGE;
	default:
		return DEV_RT_EOTHER;
	}
}

static void devrt_arch_name(const emuDeviceProp &p, char *buf, size_t len)
{
	snprintf(buf, len, "emu_%d%d", p.major, p.minor);
}

#include "dev_rt_impl.inc"
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

static bool is_float(int t)
{
	return t == DEV_FLOAT16 || t == DEV_FLOAT32 || t == DEV_FLOAT64 || t == DEV_BFLOAT16;
}

/* element i of a float dtype set to raw bits (NaN payloads) */
static void set_bits(std::vector<uint8_t> &v, int t, size_t i, uint64_t bits)
{
	size_t sz = dev_dtype_size((enum dev_dtype)t);

	if (sz == 2) {
		uint16_t b = (uint16_t)bits;
		memcpy(v.data() + i * 2, &b, 2);
	} else if (sz == 4) {
		uint32_t b = (uint32_t)bits;
		memcpy(v.data() + i * 4, &b, 4);
	} else {
		memcpy(v.data() + i * 8, &bits, 8);
	}
}

/* a quiet NaN with payload p, positive or negative, of float dtype t */
static uint64_t nan_bits(int t, unsigned p, bool neg)
{
	switch (t) {
	case DEV_FLOAT16:
		return (neg ? 0xfe00u : 0x7e00u) | p;
	case DEV_BFLOAT16:
		return (neg ? 0xffc0u : 0x7fc0u) | p;
	case DEV_FLOAT32:
		return (neg ? 0xffc00000u : 0x7fc00000u) | p;
	default:
		return (neg ? 0xfff8000000000000ull : 0x7ff8000000000000ull) | p;
	}
}

/* Random values; for float dtypes y (the reduce's src) and x (its dst)
 * differ where the operators' special cases are:
 *   3: x NaN, y a number      4: x a number, y NaN
 *   5: x +0, y -0             6: x -0, y +0
 *   7: x and y NaNs with different payloads and signs
 *   8: x -inf, y NaN          9: x NaN, y +inf */
static void fill(std::vector<uint8_t> &v, int t, unsigned seed, bool y = false)
{
	enum dev_dtype dt = (enum dev_dtype)t;

	srand(seed);
	for (size_t i = 0; i < N; i++) {
		double d = (double)(rand() % 2001 - 1000);

		if (t >= DEV_FLOAT16) /* fractions, tiny and large values */
			d = d / 64.0 * pow(2.0, rand() % 40 - 20);
		dev_elem_set(v.data(), i, dt, d);
	}
	if (!is_float(t))
		return;
	dev_elem_set(v.data(), 3, dt, y ? 1.5 : NAN);
	dev_elem_set(v.data(), 4, dt, y ? NAN : 1.5);
	dev_elem_set(v.data(), 5, dt, y ? -0.0 : 0.0);
	dev_elem_set(v.data(), 6, dt, y ? 0.0 : -0.0);
	set_bits(v, t, 7, y ? nan_bits(t, 2, true) : nan_bits(t, 1, false));
	dev_elem_set(v.data(), 8, dt, y ? NAN : -INFINITY);
	dev_elem_set(v.data(), 9, dt, y ? INFINITY : NAN);
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
	size_t bytes = N * dev_dtype_size((enum dev_dtype)t);
	std::vector<uint8_t> x(N * 8), y(N * 8), w;

	for (int op = DEV_SUM; op <= DEV_MIN; op++) {
		fill(x, t, 1 + op);
		fill(y, t, 9 + op, true);
		w = x;
		dev_reduce(w.data(), y.data(), N, (enum dev_dtype)t, (enum dev_redop)op);
		if (op == DEV_SUM)
			reduce_one<E, tpk::op_sum>(x, y);
		else if (op == DEV_PROD)
			reduce_one<E, tpk::op_prod>(x, y);
		else if (op == DEV_MAX)
			reduce_one<E, tpk::op_max>(x, y);
		else
			reduce_one<E, tpk::op_min>(x, y);
		if (memcmp(w.data(), x.data(), bytes) != 0) {
			bad++;
			printf("reduce %s %s differs from dev_reduce\n",
			       dev_dtype_name((enum dev_dtype)t), dev_redop_name((enum dev_redop)op));
		}
		/* AVG's division by the rank count: past int8 (128) and uint8 (256) */
		int div = op == DEV_SUM ? 7 : op == DEV_PROD ? 200 : op == DEV_MAX ? 256 : 1000;

		launch(3, 1, 32, 1,
		       [&] { tpk::k_scale_div<E>((typename E::S *)x.data(), N, div); });
		dev_scale_div(w.data(), N, (enum dev_dtype)t, div);
		if (memcmp(w.data(), x.data(), bytes) != 0) {
			bad++;
			printf("scale_div %s by %d differs from dev_scale_div\n",
			       dev_dtype_name((enum dev_dtype)t), div);
		}
	}
}

static void check_conversions(void)
{
	for (uint32_t h = 0; h < 65536; h++) {
		float a = tpk::half_to_f32((uint16_t)h), b = dev_half_to_float((uint16_t)h);
		float c = tpk::bf16_to_f32((uint16_t)h), d = dev_bf16_to_float((uint16_t)h);

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
		uint16_t a = tpk::f32_to_half(f), b = dev_float_to_half(f);
		uint16_t c = tpk::f32_to_bf16(f), d = dev_float_to_bf16(f);

		if (a != b && bad++ < 10)
			printf("f32 %08x to half: %04x, host %04x\n", u, a, b);
		if (c != d && bad++ < 10)
			printf("f32 %08x to bf16: %04x, host %04x\n", u, c, d);
	}
}

static bool sgemm_close(const std::vector<float> &c, const std::vector<float> &want, int k)
{
	for (size_t i = 0; i < c.size(); i++)
		if (!(fabsf(c[i] - want[i]) <= 1e-4f * k * fmaxf(1, fabsf(want[i]))))
			return false;
	return true;
}

/* Through the plugin's sgemm (its launch configuration with the kernel),
 * and the kernel alone on a grid narrower than C (the loop over column
 * tiles that a C wider than 65535 tiles needs). */
static void check_sgemm(const struct dev_rt *rt)
{
	/* one element, a partial tile, several tiles with partial edges */
	static const int dims[][3] = {{1, 1, 1}, {70, 65, 33}, {5, 130, 17}, {130, 300, 20}};

	for (auto &dm : dims) {
		int m = dm[0], n = dm[1], k = dm[2];
		std::vector<float> a((size_t)m * k), b((size_t)k * n), c((size_t)m * n),
			want(c.size());

		for (size_t i = 0; i < a.size(); i++)
			a[i] = (float)((int)(i * 7919 % 201) - 100) / 50;
		for (size_t i = 0; i < b.size(); i++)
			b[i] = (float)((int)(i * 104729 % 199) - 99) / 50;
		for (int tt = 0; tt < 8; tt++) {
			bool ta = tt & 1, tb = tt & 2, narrow = tt & 4;
			float beta = (tt & 3) == 3 ? 0.0f : 0.5f;
			int ret = 0;

			for (size_t i = 0; i < c.size(); i++)
				c[i] = want[i] =
					beta == 0 ? NAN : (float)(i % 5); /* beta 0: C unread */
			if (narrow) /* 2 blocks across, each doing every other column tile */
				launch((unsigned)(m + tpk::SG_BM - 1) / tpk::SG_BM, 2, tpk::SG_TX,
				       tpk::SG_TY, [&] {
					       tpk::k_sgemm(ta, tb, m, n, k, 1.5f, a.data(), b.data(),
							    beta, c.data());
				       });
			else
				ret = rt->sgemm(ta, tb, m, n, k, 1.5f, a.data(), b.data(), beta,
						c.data(), NULL);
			dev_host_sgemm(ta, tb, m, n, k, 1.5f, a.data(), b.data(), beta, want.data());
			if (ret != 0 || !sgemm_close(c, want, k)) {
				bad++;
				printf("sgemm %dx%dx%d ta %d tb %d%s: %d, or C differs from the host\n",
				       m, n, k, ta, tb, narrow ? " (narrow grid)" : "", ret);
			}
		}
	}
}

/* Launch configurations of shapes too large to run here (dry run: the
 * limits are checked, the kernel is not executed). */
static void check_sgemm_shapes(const struct dev_rt *rt)
{
	static const struct {
		int m, n;
		unsigned gx, gy;
	} shapes[] = {
		{65535 * 64 + 1, 1, 65536, 1},		   /* tall: 65536 row tiles */
		{2147483647, 64, 33554432, 1},		   /* m = INT_MAX */
		{64, 65535 * 64 + 65, 1, 65535},	   /* wide: grid.y capped */
		{2147483647, 2147483647, 33554432, 65535}, /* both */
	};
	float dummy = 0;

	emu_dry_run = 1;
	for (auto &sh : shapes) {
		int ret = rt->sgemm(0, 0, sh.m, sh.n, 1, 1.0f, &dummy, &dummy, 0.0f, &dummy, NULL);

		if (ret != 0 || emu_grid.x != sh.gx || emu_grid.y != sh.gy) {
			bad++;
			printf("sgemm %d x %d: launch %d on a %u x %u grid, want %u x %u\n", sh.m,
			       sh.n, ret, emu_grid.x, emu_grid.y, sh.gx, sh.gy);
		}
	}
	emu_dry_run = 0;
}

/* Every dtype / op through the plugin's reduce (dispatch, launch
 * configuration, dst == src), scale_div past the int8 / uint8 ranges. */
static void check_plugin_reduce(const struct dev_rt *rt)
{
	static const int divs[] = {3, 200, 256, 1000};

	for (int t = 0; t < DEV_DTYPE_MAX; t++) {
		size_t bytes = N * dev_dtype_size((enum dev_dtype)t);
		std::vector<uint8_t> x(N * 8), y(N * 8), w;

		for (int op = 0; op < DEV_REDOP_MAX; op++) {
			fill(x, t, 100 + op);
			fill(y, t, 200 + op, true);
			w = x;
			dev_reduce(w.data(), y.data(), N, (enum dev_dtype)t, (enum dev_redop)op);
			int ret = rt->reduce(x.data(), y.data(), N, t, op, NULL);

			if (ret != 0 || memcmp(w.data(), x.data(), bytes) != 0) {
				bad++;
				printf("plugin reduce %s %s: %d, or differs from dev_reduce\n",
				       dev_dtype_name((enum dev_dtype)t),
				       dev_redop_name((enum dev_redop)op), ret);
			}
			dev_reduce(w.data(), w.data(), N, (enum dev_dtype)t, (enum dev_redop)op);
			ret = rt->reduce(x.data(), x.data(), N, t, op, NULL);
			if (ret != 0 || memcmp(w.data(), x.data(), bytes) != 0) {
				bad++;
				printf("plugin reduce %s %s, dst == src: %d, or differs\n",
				       dev_dtype_name((enum dev_dtype)t),
				       dev_redop_name((enum dev_redop)op), ret);
			}
		}
		for (int div : divs) {
			fill(x, t, 300 + div);
			w = x;
			dev_scale_div(w.data(), N, (enum dev_dtype)t, div);
			int ret = rt->scale_div(x.data(), N, t, div, NULL);

			if (ret != 0 || memcmp(w.data(), x.data(), bytes) != 0) {
				bad++;
				printf("plugin scale_div %s by %d: %d, or differs from dev_scale_div\n",
				       dev_dtype_name((enum dev_dtype)t), div, ret);
			}
		}
	}
	if (rt->reduce(NULL, NULL, 1, DEV_DTYPE_MAX, DEV_SUM, NULL) == 0 ||
	    rt->scale_div(NULL, 1, DEV_FLOAT32, 0, NULL) == 0) {
		bad++;
		printf("plugin accepts a bad dtype or divisor\n");
	}
	(void)emuGetLastError();
}

/* The plugin's convert kernel between f16, f32 and bf16, every pair, on
 * the values fill() makes (NaNs with payloads, signed zeros, subnormals,
 * infinities) against dev_convert, bit for bit; the same type twice and
 * integers refused. */
static void check_plugin_convert(const struct dev_rt *rt)
{
	static const int ts[] = {DEV_FLOAT16, DEV_FLOAT32, DEV_BFLOAT16};

	for (int st : ts) {
		for (int dt : ts) {
			std::vector<uint8_t> x(N * 8), w(N * 8, 0), got(N * 8, 0);
			size_t bytes = N * dev_dtype_size((enum dev_dtype)dt);

			if (st == dt)
				continue;
			fill(x, st, 400 + st * 16 + dt);
			if (dev_convert(w.data(), (enum dev_dtype)dt, x.data(), (enum dev_dtype)st,
					N) != 0) {
				bad++;
				printf("dev_convert %s to %s refused\n",
				       dev_dtype_name((enum dev_dtype)st),
				       dev_dtype_name((enum dev_dtype)dt));
			}
			int ret = rt->convert(got.data(), dt, x.data(), st, N, NULL);

			if (ret != 0 || memcmp(w.data(), got.data(), bytes) != 0) {
				bad++;
				printf("plugin convert %s to %s: %d, or differs from dev_convert\n",
				       dev_dtype_name((enum dev_dtype)st),
				       dev_dtype_name((enum dev_dtype)dt), ret);
			}
		}
	}
	if (rt->convert(NULL, DEV_FLOAT32, NULL, DEV_FLOAT32, 1, NULL) == 0 ||
	    rt->convert(NULL, DEV_INT32, NULL, DEV_FLOAT32, 1, NULL) == 0) {
		bad++;
		printf("plugin convert accepts the same type twice or an integer\n");
	}
	(void)emuGetLastError();
}

/* The SGD step against dev_sgd, bit for bit; both round the product on its
 * own: some elements differ from a fused multiply-add's. */
static void check_plugin_sgd(const struct dev_rt *rt)
{
	std::vector<float> w(N), g(N), want, got;
	float scale = 0.0123f;
	size_t fused = 0;

	srand(4242);
	for (size_t i = 0; i < N; i++) {
		w[i] = (float)rand() / RAND_MAX * 4 - 2;
		g[i] = (float)rand() / RAND_MAX * 200 - 100;
	}
	want = w;
	got = w;
	dev_sgd(want.data(), g.data(), scale, N);
	for (size_t i = 0; i < N; i++)
		fused += std::fmaf(-scale, g[i], w[i]) != want[i];
	if (rt->sgd(got.data(), g.data(), scale, N, NULL) != 0 ||
	    memcmp(want.data(), got.data(), N * 4) != 0) {
		bad++;
		printf("plugin sgd differs from dev_sgd\n");
	}
	if (fused == 0) {
		bad++;
		printf("dev_sgd equals a fused multiply-add on all %zu elements\n", (size_t)N);
	}
	(void)emuGetLastError();
}

/* The runtime's last error is sticky per thread: an earlier failed call
 * (an allocation) must not be reported by the next, good, launch. */
static void check_sticky_error(const struct dev_rt *rt)
{
	std::vector<uint8_t> x(N * 4), y(N * 4), w;
	float a = 2, b = 3, c = 0;
	void *p = NULL;

	fill(x, DEV_INT32, 1);
	fill(y, DEV_INT32, 2);
	w = x;
	dev_reduce(w.data(), y.data(), N, DEV_INT32, DEV_SUM);
	emu_fail_malloc = 1;
	if (rt->malloc(&p, 64) == 0 || rt->classify(emuErrorMemoryAllocation) != DEV_RT_ENOMEM) {
		bad++;
		printf("emulated malloc failure not reported\n");
	}
	int ret = rt->reduce(x.data(), y.data(), N, DEV_INT32, DEV_SUM, NULL);

	if (ret != 0 || memcmp(w.data(), x.data(), N * 4) != 0) {
		bad++;
		printf("reduce after a failed malloc: %d (an earlier call's error)\n", ret);
	}
	emu_fail_malloc = 1;
	(void)rt->malloc(&p, 64);
	if ((ret = rt->scale_div(x.data(), N, DEV_INT32, 2, NULL)) != 0) {
		bad++;
		printf("scale_div after a failed malloc: %d\n", ret);
	}
	emu_fail_malloc = 1;
	(void)rt->malloc(&p, 64);
	if ((ret = rt->sgemm(0, 0, 1, 1, 1, 1.0f, &a, &b, 0.0f, &c, NULL)) != 0 || c != 6) {
		bad++;
		printf("sgemm after a failed malloc: %d\n", ret);
	}
	/* and a launch's own failure is still reported, and classified */
	emu_no_image = 1;
	ret = rt->scale_div(x.data(), 1, DEV_UINT8, 1, NULL);
	emu_no_image = 0;
	if (ret == 0 || rt->classify(ret) != DEV_RT_ENOIMAGE) {
		bad++;
		printf("a GPU without a kernel image: launch returned %d\n", ret);
	}
	if (emuGetLastError() != emuSuccess) {
		bad++;
		printf("the plugin leaves a launch error pending\n");
	}
}

static void check_plugin_info(const struct dev_rt *rt)
{
	char arch[32] = "";

	if (rt == NULL || rt->abi != DEV_RT_ABI || rt->device_arch(0, arch, sizeof(arch)) != 0 ||
	    strcmp(arch, "emu_75") != 0 || strcmp(rt->built_for, "emu_80") != 0) {
		bad++;
		printf("plugin table: abi, device_arch (%s) or built_for wrong\n", arch);
	}
}

int main()
{
	check_conversions();
	check_dtype<tpk::el_int<int8_t, uint8_t>>(DEV_INT8);
	check_dtype<tpk::el_int<uint8_t, uint8_t>>(DEV_UINT8);
	check_dtype<tpk::el_int<int32_t, uint32_t>>(DEV_INT32);
	check_dtype<tpk::el_int<uint32_t, uint32_t>>(DEV_UINT32);
	check_dtype<tpk::el_int<int64_t, uint64_t>>(DEV_INT64);
	check_dtype<tpk::el_int<uint64_t, uint64_t>>(DEV_UINT64);
	check_dtype<tpk::el_half<false>>(DEV_FLOAT16);
	check_dtype<tpk::el_float<float>>(DEV_FLOAT32);
	check_dtype<tpk::el_float<double>>(DEV_FLOAT64);
	check_dtype<tpk::el_half<true>>(DEV_BFLOAT16);
	const struct dev_rt *rt = dev_rt_get(DEV_RT_ABI);

	check_plugin_info(rt);
	if (rt != NULL) {
		check_plugin_reduce(rt);
		check_plugin_convert(rt);
		check_plugin_sgd(rt);
		check_sticky_error(rt);
		check_sgemm(rt);
		check_sgemm_shapes(rt);
	}
	printf("%s: %d mismatches\n", bad ? "FAIL" : "ok", bad);
	return bad != 0;
}
