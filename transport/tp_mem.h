/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tp_mem: where a collective's buffers live. Each memory kind (host now;
 * CUDA and HIP device memory come as further backends) is one ops table.
 * The transport moves bytes only through host memory; a device backend
 * stages through pinned host buffers with these copies.
 */
#ifndef TP_MEM_H
#define TP_MEM_H

#include <stddef.h>

enum tp_mem_kind {
	TP_MEM_HOST = 0,
	TP_MEM_CUDA,
	TP_MEM_HIP,
	TP_MEM_KIND_MAX,
};

struct tp_mem_ops {
	enum tp_mem_kind kind;
	const char *name;
	/* Allocate len bytes (64-byte aligned for host); NULL + errno. */
	void *(*alloc)(size_t len);
	void (*free)(void *p); /* NULL-safe */
	/* Copies between this kind and host memory; return 0 or -errno. */
	int (*to_host)(void *host_dst, const void *src, size_t len);
	int (*from_host)(void *dst, const void *host_src, size_t len);
};

/* The backend for a kind; NULL + errno ENODEV when not built in. */
const struct tp_mem_ops *tp_mem_ops_get(enum tp_mem_kind kind);
/* "host", "cuda", "hip"; -1 when unknown. */
int tp_mem_kind_parse(const char *s);

#endif /* TP_MEM_H */
