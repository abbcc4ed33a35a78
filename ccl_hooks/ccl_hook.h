/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ccl_hook: the hook machinery of libice-ccl.so (ccl_wrap.c) that the
 * hooks of every library family share: ccl_wrap.c's NCCL-shaped prefixes
 * and ccl_native.c's libraries with their own API (HCCL, CNCL). Internal to
 * libice-ccl.so.
 */
#ifndef CCL_HOOK_H
#define CCL_HOOK_H

#include <stdbool.h>
#include <stdint.h>

#include "ccl_api.h"

#define CCL_EXPORT __attribute__((visibility("default")))
#define likely(x)  __builtin_expect(!!(x), 1)

/* Most entry points (exported and helpers) of one library family. */
#define CCL_FN_MAX 24

/* One library: where its real functions come from and how events name it. */
struct ccl_vendor {
	const char *prefix;	  /* "nccl", ...; "" when names[] are whole names */
	const char *soname;	  /* tried when RTLD_NEXT does not see the library */
	const char *const *names; /* entry point f is prefix + names[f] */
	char lib[12];		  /* ice_event.lib */
	void *fn[CCL_FN_MAX];	  /* real functions, published with release */
	bool tried[CCL_FN_MAX];	  /* under ccl_wrap.c's resolve lock */
};

/* The real function f of v (RTLD_NEXT, then "p<name>", then the library by
 * soname or ICE_CCL_REAL_LIB), resolved once; NULL when none (logged). */
void *ccl_resolve(struct ccl_vendor *v, unsigned f);

static inline void *ccl_real(struct ccl_vendor *v, unsigned f)
{
	void *p = __atomic_load_n(&v->fn[f], __ATOMIC_ACQUIRE);

	return likely(p != NULL) ? p : ccl_resolve(v, f);
}

/* Whether an operation is reported (ICE_CCL_SAMPLE), and when it was
 * issued: taken before issuing it. */
struct ccl_sample {
	bool rec;
	uint64_t ts;
};
struct ccl_sample ccl_sample_begin(void);

/* A datatype in events: NCCL's number for it ((uint32_t)-1 when NCCL has
 * none) and bytes per element (0 when unknown: bytes are then 0). */
struct ccl_dt {
	uint32_t nccl;
	unsigned size;
};

/* An operation was issued (ok: the library accepted it): report it as
 * COLL_START when sampled. count is multiplied by the communicator's nranks
 * for operations whose total is nranks buffers (times_nranks). Keeps errno. */
void ccl_op_record(const struct ccl_vendor *v, struct ccl_sample smp, bool ok, unsigned op,
		   ccl_comm_t comm, uint64_t count, bool times_nranks, struct ccl_dt dt, int redop,
		   int root, int peer);

/* A communicator was created (COMM_INIT, and the map entry the operations'
 * rank and nranks come from) / is about to be destroyed (COMM_DESTROY). */
void ccl_comm_added(const struct ccl_vendor *v, ccl_comm_t comm, uint64_t id, int rank, int nranks,
		    uint64_t ts);
void ccl_comm_gone(const struct ccl_vendor *v, ccl_comm_t comm);

/* A communicator id unique to one call of this process (a library that
 * creates every rank in one call and has no shared id). */
uint64_t ccl_call_id(uint64_t ts);

/* A group start returned (ok: accepted) / a group end returned (ok: its
 * operations were launched, so the held-back ones are reported). */
void ccl_group_started(bool ok);
void ccl_group_ended(bool ok);

#endif /* CCL_HOOK_H */
