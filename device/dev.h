/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dev: the device runtime, the public header of device/ (see
 * device/README.md). Two parts:
 *   - datatypes and reduction operators (dev_dtype, dev_redop) and their
 *     host loops (dev_reduce & co.), written so the compiler vectorises them
 *     (-O2 -ftree-vectorize; f16/bf16 convert through f32 in blocks);
 *   - memory kinds (dev_mem_ops): where a collective's buffers live. Each
 *     kind is one ops table: host memory (always), CUDA and HIP device
 *     memory (built when nvcc / hipcc are found). The transport moves bytes
 *     only through host memory; a device backend stages through pinned host
 *     buffers with these copies, and reduces on the device with its own
 *     kernels.
 *
 * Device backends use two streams per host thread: "compute" (to_host,
 * from_host, reduce, scale_div, sgemm, sgemm_async, convert, sgd) and
 * "copy" (copy_async). Synchronous calls complete before they return.
 * copy_async returns at once; copy_wait waits for every copy the calling
 * thread started so far. sgemm_async returns once the product is queued;
 * the calling thread's later calls are ordered after it (a synchronous
 * call waits for it too), and compute_wait waits for every product the
 * thread queued: only then may another thread use its output.
 * Buffers passed to copy_async must be pinned host memory from host_alloc
 * (or device memory) and stay valid until copy_wait.
 *
 * Threads: every call may be made from any thread, and from several
 * threads at once. A thread's first call selects the backend's device on
 * that thread (device 0 or $ICE_DEVICE; the vendor runtimes keep the
 * current device per thread) and creates the thread's own compute / copy
 * streams, released when the thread exits; an application that switches
 * such a thread to another device itself must switch it back before the
 * next call here. alloc / free / host_alloc / host_free and probe are
 * locked and may race freely. Pending copies belong to the thread that
 * started them: only its copy_wait waits for them, and only its own later
 * calls are ordered after them, so a buffer that thread A fills with
 * copy_async is ready for thread B only after A's copy_wait (and B must
 * not free what A's copies still use). Concurrent calls on the same
 * buffers are the caller's to order, as with memcpy.
 *
 * Inputs must be complete: our streams are non-blocking (they do not wait
 * for the application's legacy default stream or any other), so device
 * memory a call reads must have been fully written before the call, i.e.
 * the application's own stream or kernel producing it synchronised
 * (cudaStreamSynchronize / hipStreamSynchronize or an event), or the
 * producing call of this API returned (and, for copy_async, copy_wait).
 * Outputs are complete when a synchronous call returns.
 */
#ifndef DEV_H
#define DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum dev_dtype {
	DEV_INT8 = 0, /* nccl ncclInt8 */
	DEV_UINT8,
	DEV_INT32,
	DEV_UINT32,
	DEV_INT64,
	DEV_UINT64,
	DEV_FLOAT16,
	DEV_FLOAT32,
	DEV_FLOAT64,
	DEV_BFLOAT16,
	DEV_DTYPE_MAX,
};

enum dev_redop {
	DEV_SUM = 0,
	DEV_PROD,
	DEV_MAX,
	DEV_MIN,
	DEV_AVG, /* sum, then divided by nranks in the final step */
	DEV_REDOP_MAX,
};

size_t dev_dtype_size(enum dev_dtype t);
/* nccl-tests names: "int8", "uint8", "int32", "uint32", "int64", "uint64",
 * "half", "float", "double", "bfloat16"; also accepts "f32", "f16", "bf16",
 * "f64", "i32", "i64", "u8". Returns -1 when unknown. */
int dev_dtype_parse(const char *s);
const char *dev_dtype_name(enum dev_dtype t);
/* "sum", "prod", "max", "min", "avg"; -1 when unknown. */
int dev_redop_parse(const char *s);
const char *dev_redop_name(enum dev_redop op);

/* dst[i] = dst[i] op src[i] for count elements (DEV_AVG reduces as a sum).
 * dst and src may be equal but must not otherwise overlap. */
void dev_reduce(void *dst, const void *src, size_t count, enum dev_dtype t, enum dev_redop op);
/* dst[i] = a[i] op b[i]; dst may equal a or b. */
void dev_reduce3(void *dst, const void *a, const void *b, size_t count, enum dev_dtype t,
		 enum dev_redop op);
/* dst[i] /= n, for DEV_AVG's final step (integers: truncating division). */
void dev_scale_div(void *buf, size_t count, enum dev_dtype t, int n);

/* Scalar conversions for tests and for filling buffers. */
float dev_half_to_float(uint16_t h);
uint16_t dev_float_to_half(float f); /* round to nearest even */
float dev_bf16_to_float(uint16_t b);
uint16_t dev_float_to_bf16(float f); /* round to nearest even */
/* The same over n elements (vectorized; d and s must not overlap). */
void dev_bf16_to_float_n(float *d, const uint16_t *s, size_t n);
void dev_float_to_bf16_n(uint16_t *d, const float *s, size_t n);

/* dst[i] = src[i] converted from type st to dt, both one of f16, f32,
 * bf16 and not the same (-EINVAL otherwise), rounding to nearest even as
 * the scalar conversions; dst and src must not overlap. 0 or -EINVAL. */
int dev_convert(void *dst, enum dev_dtype dt, const void *src, enum dev_dtype st, size_t count);

/* An SGD step: w[i] = w[i] - scale * g[i], the product rounded to f32
 * before the subtraction (never fused into one multiply-add: every kind
 * gives the same bits, so replicas on a host and on a device stay
 * identical). */
void dev_sgd(float *w, const float *g, float scale, size_t count);

/* Store the value v (as double) at element i of buf of type t (saturating
 * conversion for integers), and read element i back as double. */
void dev_elem_set(void *buf, size_t i, enum dev_dtype t, double v);
double dev_elem_get(const void *buf, size_t i, enum dev_dtype t);

enum dev_mem_kind {
	DEV_MEM_HOST = 0,
	DEV_MEM_CUDA,
	DEV_MEM_HIP,
	DEV_MEM_KIND_MAX,
};

enum dev_copy_dir {
	DEV_COPY_TO_HOST = 0, /* device -> pinned host */
	DEV_COPY_FROM_HOST,   /* pinned host -> device */
};

struct dev_mem_ops {
	enum dev_mem_kind kind;
	const char *name; /* "host", "cuda", "hip" */
	/* 0 when a device of this kind is usable now (selects device 0 or
	 * $ICE_DEVICE); else -ENODEV etc. with the reason in why. */
	int (*probe)(char *why, size_t len);
	/* Allocate len bytes of this kind's memory; NULL + errno. */
	void *(*alloc)(size_t len);
	void (*free)(void *p); /* NULL-safe */
	/* Synchronous copies between this kind and host memory; 0 or -errno. */
	int (*to_host)(void *host_dst, const void *src, size_t len);
	int (*from_host)(void *dst, const void *host_src, size_t len);
	/* Pinned (page-locked) host memory for staging; host: aligned malloc. */
	void *(*host_alloc)(size_t len);
	void (*host_free)(void *p); /* NULL-safe */
	/* Asynchronous copy on the copy stream; see above. */
	int (*copy_async)(void *dst, const void *src, size_t len, enum dev_copy_dir dir);
	int (*copy_wait)(void);
	/* dst[i] = dst[i] op src[i], both in this kind's memory, every dtype and
	 * op of dev.h (DEV_AVG reduces as a sum); complete on return. */
	int (*reduce)(void *dst, const void *src, size_t count, enum dev_dtype t,
		      enum dev_redop op);
	/* buf[i] /= n (DEV_AVG's final step). */
	int (*scale_div)(void *buf, size_t count, enum dev_dtype t, int n);
	/* Row-major fp32 C[m x n] = alpha * op(A) * op(B) + beta * C, where
	 * op(X) = X or its transpose (ta / tb); A is m x k after op, B k x n.
	 * All three in this kind's memory; complete on return. */
	int (*sgemm)(bool ta, bool tb, int m, int n, int k, float alpha, const float *a,
		     const float *b, float beta, float *c);
	/* The same product queued on the calling thread's compute stream and
	 * not waited for (a training step's products run back to back on a
	 * device instead of one launch and one wait each); the inputs and C
	 * must stay as they are until it completes. An error of the product
	 * itself may show only at compute_wait. Host: sgemm, complete on
	 * return. 0 or -errno. */
	int (*sgemm_async)(bool ta, bool tb, int m, int n, int k, float alpha, const float *a,
			   const float *b, float beta, float *c);
	/* Waits for every product this thread queued with sgemm_async;
	 * host: nothing to wait for. 0 or -errno. */
	int (*compute_wait)(void);
	/* The memory of this kind the process may still take and all there
	 * is, bytes: host, what the kernel allows it (ice_mem_avail: the
	 * available memory within its cgroup's limit); a device, its free and
	 * total memory (cudaMemGetInfo / hipMemGetInfo). 0 or -errno. */
	int (*mem_info)(size_t *free_b, size_t *total_b);
	/* dev_convert's contract, both buffers in this kind's memory
	 * (a device converts with its own kernel); complete on return. */
	int (*convert)(void *dst, enum dev_dtype dt, const void *src, enum dev_dtype st,
		       size_t count);
	/* dev_sgd's contract, w and g in this kind's memory (a device
	 * updates with its own kernel); complete on return. 0 or -errno. */
	int (*sgd)(float *w, const float *g, float scale, size_t count);
};

/* The backend for a kind; NULL + errno ENODEV when not built in. A backend
 * that is built in may still find no device: call ops->probe(). */
const struct dev_mem_ops *dev_mem_ops_get(enum dev_mem_kind kind);
/* "host", "cuda", "hip"; -1 when unknown. */
int dev_mem_kind_parse(const char *s);

/* Host fp32 GEMM with the sgemm contract above (blocked, vectorised); the
 * host backend's sgemm and the reference of the device tests. */
void dev_host_sgemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *a,
		    const float *b, float beta, float *c);

#endif /* DEV_H */
