/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dev_rt: the C ABI between the device backends' host logic
 * (dev_gpu.c, linked into every ICE binary) and a device runtime plugin
 * (libice-cuda.so built by nvcc, libice-hip.so built by hipcc), loaded with
 * dlopen at run time so binaries start on machines without a GPU or
 * without the vendor runtime. The plugin is a thin layer: each entry is
 * one runtime call or one kernel launch on a stream; sequencing, tracking
 * and error mapping live on the host side.
 *
 * Every entry returns 0 or the runtime's native error code (cudaError_t,
 * hipError_t as int); classify() maps a native code to enum dev_rt_err
 * and error_string() names it. Streams and events are opaque handles.
 *
 * Threads: like the vendor runtimes, the current device is a property of
 * the calling host thread (set_device), and streams, events and device
 * memory belong to the device that was current when they were created; the
 * host side calls set_device on every thread before anything else. A kernel
 * entry clears the thread's pending runtime error before it launches, so
 * its return value is the launch's own status, not an earlier call's.
 * Test doubles (tests/device/fake_devrt.c) implement the same table on the CPU.
 */
#ifndef DEV_RT_H
#define DEV_RT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DEV_RT_ABI   4
#define DEV_RT_ENTRY "dev_rt_get" /* const struct dev_rt *dev_rt_get(unsigned abi) */

enum dev_rt_err {
	DEV_RT_OK = 0,
	DEV_RT_ENOMEM,	 /* out of device or pinned memory */
	DEV_RT_EINVAL,	 /* bad argument, bad pointer */
	DEV_RT_ENODEV,	 /* no device, or the device index does not exist */
	DEV_RT_ENODRV,	 /* no driver, or the driver is older than the runtime */
	DEV_RT_ELAUNCH,	 /* kernel launch failed or faulted */
	DEV_RT_EUNSUPP,	 /* dtype / op the plugin does not know */
	DEV_RT_ENOIMAGE, /* no kernel binary / PTX in the plugin for this GPU */
	DEV_RT_EOTHER,
};

enum dev_rt_copy {
	DEV_RT_D2H = 0,
	DEV_RT_H2D,
	DEV_RT_D2D,
};

struct dev_rt {
	unsigned abi;	  /* DEV_RT_ABI */
	const char *name; /* "cuda", "hip" */
	int (*classify)(int native);
	const char *(*error_string)(int native);
	int (*runtime_version)(int *v);
	int (*device_count)(int *n);
	int (*set_device)(int dev);
	int (*device_name)(int dev, char *buf, size_t len);
	int (*malloc)(void **p, size_t len);
	int (*free)(void *p);
	int (*host_malloc)(void **p, size_t len); /* pinned */
	int (*host_free)(void *p);
	int (*stream_create)(void **s);
	int (*stream_destroy)(void *s);
	int (*stream_sync)(void *s);
	int (*event_create)(void **e); /* timing disabled */
	int (*event_destroy)(void *e);
	int (*event_record)(void *e, void *s);
	int (*event_sync)(void *e);
	int (*stream_wait_event)(void *s, void *e);
	int (*memcpy_async)(void *dst, const void *src, size_t len, int dir, void *s);
	/* Kernel launches on stream s (asynchronous); dtype / op are the
	 * values of enum dev_dtype / enum dev_redop. */
	int (*reduce)(void *dst, const void *src, size_t count, int dtype, int op, void *s);
	int (*scale_div)(void *buf, size_t count, int dtype, int n, void *s);
	int (*sgemm)(int ta, int tb, int m, int n, int k, float alpha, const float *a,
		     const float *b, float beta, float *c, void *s);
	/* ABI 2: the device's architecture ("sm_75", "gfx90a") and the
	 * architectures the plugin's kernels were built for ("sm_80, sm_90,
	 * compute_90 PTX"), for the probe's message. */
	int (*device_arch)(int dev, char *buf, size_t len);
	const char *built_for;
	/* ABI 3: free and total bytes of the current device's memory; a
	 * kernel on stream s converting count elements between float types
	 * (f16, f32, bf16: enum dev_dtype values, not the same). */
	int (*mem_info)(size_t *free_b, size_t *total_b);
	int (*convert)(void *dst, int dst_dtype, const void *src, int src_dtype, size_t count,
		       void *s);
	/* ABI 4: a kernel on stream s: w[i] = w[i] - scale * g[i] (dev_sgd). */
	int (*sgd)(float *w, const float *g, float scale, size_t count, void *s);
};

typedef const struct dev_rt *(*dev_rt_get_fn)(unsigned abi);

#ifdef __cplusplus
}
#endif

#endif /* DEV_RT_H */
