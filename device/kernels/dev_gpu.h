/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dev_gpu: the host half of the CUDA and HIP memory backends (internal
 * to device/). One struct dev_gpu per vendor holds where its runtime
 * plugin (dev_rt.h) is found and, once loaded, the plugin, the selected
 * device, the compute and copy streams, and the table of allocations.
 * dev_mem_cuda.c / dev_mem_hip.c stamp out their dev_mem_ops with
 * DEV_GPU_DEFINE_OPS.
 *
 * Loading is lazy (first probe or allocation) and happens once per process:
 * $ICE_<VENDOR>_LIB when set, else the build directory's plugin, else the
 * installed one, else the loader's search path. Failure is not fatal: the
 * backend then reports the reason through probe() and -ENODEV / ENODEV.
 *
 * Threading (the contract is in dev.h): loading and the allocation table
 * are under lock; everything that queues work is per host thread. A thread's
 * first call selects the device on it (the vendor runtimes keep the current
 * device per thread, and a second thread starts on device 0) and creates
 * its own compute stream, copy stream and copy event (struct
 * dev_gpu_thread, reached through a pthread key, destroyed when the thread
 * exits), so two threads never share a stream or a pending-copy count.
 */
#ifndef DEV_GPU_H
#define DEV_GPU_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "dev_rt.h"
#include "dev.h"

struct dev_gpu_alloc {
	void *p;
	size_t len;
	bool pinned; /* pinned host memory (host_alloc), else device memory */
};

struct dev_gpu {
	/* set by the vendor file */
	enum dev_mem_kind kind;
	const char *name;	  /* "cuda" */
	const char *vendor;	  /* "CUDA", for messages */
	const char *runtime;	  /* "libcudart", for messages */
	const char *env;	  /* "ICE_CUDA_LIB" */
	const char *lib;	  /* "libice-cuda.so" */
	const char *build_path;	  /* the plugin in the build tree, or NULL */
	const char *install_path; /* the installed plugin, or NULL */
	/* state, under lock */
	pthread_mutex_t lock;
	bool loaded;
	int load_err; /* 0 or -errno, after loading */
	char why[256];
	void *dl;
	const struct dev_rt *rt;
	int dev;
	char arch[32];	    /* "sm_90", for messages */
	pthread_key_t tkey; /* this thread's struct dev_gpu_thread */
	struct dev_gpu_alloc *allocs;
	size_t nallocs, cap_allocs;
	size_t dev_bytes, pinned_bytes;
};

/* One host thread's device state: its own streams, and the copies it
 * queued on its copy stream that no copy_wait has waited for yet. */
struct dev_gpu_thread {
	struct dev_gpu *g;
	void *compute, *copy; /* streams */
	void *copy_done;      /* event recorded after the last copy_async */
	unsigned copies_pending;
	bool copy_event_ok;   /* copy_done follows every pending copy */
	bool compute_pending; /* products queued and not waited for */
};

int dev_gpu_probe(struct dev_gpu *g, char *why, size_t len);
int dev_gpu_mem_info(struct dev_gpu *g, size_t *free_b, size_t *total_b);
void *dev_gpu_alloc(struct dev_gpu *g, size_t len, bool pinned);
void dev_gpu_free(struct dev_gpu *g, void *p, bool pinned);
int dev_gpu_copy(struct dev_gpu *g, void *dst, const void *src, size_t len, enum dev_copy_dir dir);
int dev_gpu_copy_async(struct dev_gpu *g, void *dst, const void *src, size_t len,
		       enum dev_copy_dir dir);
int dev_gpu_copy_wait(struct dev_gpu *g);
int dev_gpu_reduce(struct dev_gpu *g, void *dst, const void *src, size_t count, enum dev_dtype t,
		   enum dev_redop op);
int dev_gpu_scale_div(struct dev_gpu *g, void *buf, size_t count, enum dev_dtype t, int n);
int dev_gpu_convert(struct dev_gpu *g, void *dst, enum dev_dtype dt, const void *src,
		    enum dev_dtype st, size_t count);
int dev_gpu_sgd(struct dev_gpu *g, float *w, const float *gr, float scale, size_t count);
int dev_gpu_sgemm(struct dev_gpu *g, bool ta, bool tb, int m, int n, int k, float alpha,
		  const float *a, const float *b, float beta, float *c);
int dev_gpu_sgemm_async(struct dev_gpu *g, bool ta, bool tb, int m, int n, int k, float alpha,
			const float *a, const float *b, float beta, float *c);
int dev_gpu_compute_wait(struct dev_gpu *g);

/* The ops table of one vendor: static wrappers that bind G; K its kind. */
#define DEV_GPU_DEFINE_OPS(pfx, G, K)                                                              \
	static int pfx##_probe(char *why, size_t len)                                              \
	{                                                                                          \
		return dev_gpu_probe(G, why, len);                                                 \
	}                                                                                          \
	static void *pfx##_alloc(size_t len)                                                       \
	{                                                                                          \
		return dev_gpu_alloc(G, len, false);                                               \
	}                                                                                          \
	static void pfx##_free(void *p)                                                            \
	{                                                                                          \
		dev_gpu_free(G, p, false);                                                         \
	}                                                                                          \
	static int pfx##_to_host(void *dst, const void *src, size_t len)                           \
	{                                                                                          \
		return dev_gpu_copy(G, dst, src, len, DEV_COPY_TO_HOST);                           \
	}                                                                                          \
	static int pfx##_from_host(void *dst, const void *src, size_t len)                         \
	{                                                                                          \
		return dev_gpu_copy(G, dst, src, len, DEV_COPY_FROM_HOST);                         \
	}                                                                                          \
	static void *pfx##_host_alloc(size_t len)                                                  \
	{                                                                                          \
		return dev_gpu_alloc(G, len, true);                                                \
	}                                                                                          \
	static void pfx##_host_free(void *p)                                                       \
	{                                                                                          \
		dev_gpu_free(G, p, true);                                                          \
	}                                                                                          \
	static int pfx##_copy_async(void *dst, const void *src, size_t len, enum dev_copy_dir dir) \
	{                                                                                          \
		return dev_gpu_copy_async(G, dst, src, len, dir);                                  \
	}                                                                                          \
	static int pfx##_copy_wait(void)                                                           \
	{                                                                                          \
		return dev_gpu_copy_wait(G);                                                       \
	}                                                                                          \
	static int pfx##_reduce(void *dst, const void *src, size_t count, enum dev_dtype t,        \
				enum dev_redop op)                                                 \
	{                                                                                          \
		return dev_gpu_reduce(G, dst, src, count, t, op);                                  \
	}                                                                                          \
	static int pfx##_scale_div(void *buf, size_t count, enum dev_dtype t, int n)               \
	{                                                                                          \
		return dev_gpu_scale_div(G, buf, count, t, n);                                     \
	}                                                                                          \
	static int pfx##_sgemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *a, \
			       const float *b, float beta, float *c)                               \
	{                                                                                          \
		return dev_gpu_sgemm(G, ta, tb, m, n, k, alpha, a, b, beta, c);                    \
	}                                                                                          \
	static int pfx##_sgemm_async(bool ta, bool tb, int m, int n, int k, float alpha,           \
				     const float *a, const float *b, float beta, float *c)         \
	{                                                                                          \
		return dev_gpu_sgemm_async(G, ta, tb, m, n, k, alpha, a, b, beta, c);              \
	}                                                                                          \
	static int pfx##_compute_wait(void)                                                        \
	{                                                                                          \
		return dev_gpu_compute_wait(G);                                                    \
	}                                                                                          \
	static int pfx##_mem_info(size_t *free_b, size_t *total_b)                                 \
	{                                                                                          \
		return dev_gpu_mem_info(G, free_b, total_b);                                       \
	}                                                                                          \
	static int pfx##_convert(void *dst, enum dev_dtype dt, const void *src, enum dev_dtype st, \
				 size_t count)                                                     \
	{                                                                                          \
		return dev_gpu_convert(G, dst, dt, src, st, count);                                \
	}                                                                                          \
	static int pfx##_sgd(float *w, const float *g, float scale, size_t count)                  \
	{                                                                                          \
		return dev_gpu_sgd(G, w, g, scale, count);                                         \
	}                                                                                          \
	static const struct dev_mem_ops pfx##_ops = {                                              \
		.kind = (K),                                                                       \
		.name = #pfx,                                                                      \
		.probe = pfx##_probe,                                                              \
		.alloc = pfx##_alloc,                                                              \
		.free = pfx##_free,                                                                \
		.to_host = pfx##_to_host,                                                          \
		.from_host = pfx##_from_host,                                                      \
		.host_alloc = pfx##_host_alloc,                                                    \
		.host_free = pfx##_host_free,                                                      \
		.copy_async = pfx##_copy_async,                                                    \
		.copy_wait = pfx##_copy_wait,                                                      \
		.reduce = pfx##_reduce,                                                            \
		.scale_div = pfx##_scale_div,                                                      \
		.sgemm = pfx##_sgemm,                                                              \
		.sgemm_async = pfx##_sgemm_async,                                                  \
		.compute_wait = pfx##_compute_wait,                                                \
		.mem_info = pfx##_mem_info,                                                        \
		.convert = pfx##_convert,                                                          \
		.sgd = pfx##_sgd,                                                                  \
	}

#endif /* DEV_GPU_H */
