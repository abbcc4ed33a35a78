/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ccl_api: our own declarations of the NCCL C API shapes that ccl_hooks
 * intercepts (written from nccl.h 2.28, not copied); the tables the wrappers
 * and the export list are generated from are in ccl_table.h. Adding a vendor
 * that copies NCCL's API under another prefix is one row there. Types are ABI-equivalent stand-ins
 * (enums are int, handles are pointers, the unique id is 128 bytes passed by value), so the hooks
 * build without CUDA or any vendor header.
 */
#ifndef CCL_API_H
#define CCL_API_H

#include <stddef.h>
#include <stdint.h>

#define CCL_UNIQUE_ID_BYTES 128

typedef int ccl_result_t;   /* ncclResult_t */
typedef void *ccl_comm_t;   /* ncclComm_t */
typedef void *ccl_stream_t; /* cudaStream_t */
typedef int ccl_dtype_t;    /* ncclDataType_t */
typedef int ccl_redop_t;    /* ncclRedOp_t */
typedef struct {
	char internal[CCL_UNIQUE_ID_BYTES];
} ccl_unique_id_t;			/* ncclUniqueId */
typedef struct ccl_config ccl_config_t; /* ncclConfig_t, only passed through */

/* ncclResult_t values the hooks look at */
#define CCL_SUCCESS	     0
#define CCL_INTERNAL_ERROR   3
#define CCL_INVALID_ARGUMENT 4
#define CCL_IN_PROGRESS	     7

#include "ccl_table.h"

enum ccl_fn {
#define CCL_FN_ENUM(a, name) CCL_FN_##name,
	CCL_FUNCS(CCL_FN_ENUM, _) CCL_HELPERS(CCL_FN_ENUM, _)
#undef CCL_FN_ENUM
		CCL_FN_COUNT
};

/* Bytes per element in NCCL's numbering (ncclInt8 = 0 ... ncclFloat8e5m2 =
 * 11); 0 for an unknown type. */
static inline unsigned ccl_dtype_size(ccl_dtype_t t)
{
	static const unsigned char size[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

	return t >= 0 && (unsigned)t < sizeof(size) ? size[t] : 0;
}

/* DJB2a over the unique id: NCCL's own commHash (init.cc getHash), so the
 * preload and the profiler plugin (which gets commHash from NCCL) agree. */
static inline uint64_t ccl_comm_hash(const void *p, size_t n)
{
	const signed char *s = p;
	uint64_t h = 5381;

	for (size_t i = 0; i < n; i++)
		h = ((h << 5) + h) ^ (uint64_t)(int64_t)s[i];
	return h;
}

#endif /* CCL_API_H */
