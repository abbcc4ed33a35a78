// SPDX-License-Identifier: Apache-2.0
/*
 * ccl_profiler: libnccl-profiler-ice.so, an NCCL profiler plugin (the way in
 * where NCCL is linked statically). NCCL dlopens libnccl-profiler-ice.so
 * when NCCL_PROFILER_PLUGIN=ice and looks for ncclProfiler_v5 ... _v1,
 * newest first.
 *
 * Declarations are our own, written from NCCL's plugin/profiler/profiler_v*.h
 * (2.23-2.28). Every version is translated into one descriptor and handled
 * once:
 *   - Coll / P2p start: an ICE_EV_COLL_START with op, count, datatype, root
 *     or peer (a collective's stopEvent means "enqueued", not "done");
 *   - ProxyOp start/stop (the network part of an operation): the peers the
 *     rank sends to (next) and receives from (prev) are noted on the parent
 *     operation, which reports ICE_EV_COLL_END with them once its last proxy
 *     operation stopped (at its own stop when it had none).
 * Handles are reference counted because proxy events outlive the stop of
 * their parent.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "ccl_api.h"
#include "ccl_internal.h"

#define CCL_EXPORT __attribute__((visibility("default")))

/* ---- our declarations of the plugin ABI */

enum {
	PROF_GROUP = 1 << 0,
	PROF_COLL = 1 << 1,
	PROF_P2P = 1 << 2,
	PROF_PROXY_OP = 1 << 3,
};

typedef int prof_state_t;    /* ncclProfilerEventState_t */
typedef void *prof_logger_t; /* ncclDebugLogger_t, unused */

struct prof_proxy_op { /* identical in v1-v5 */
	pid_t pid;
	uint8_t channel_id;
	int peer;
	int nsteps;
	int chunk_size;
	int is_send;
};

struct prof_descr_v1 {
	uint8_t type;
	void *parent;
	int rank;
	union {
		struct {
			const char *name;
			uint64_t comm_hash, seq;
			uint8_t func;
			const void *sendbuf;
			void *recvbuf;
			size_t count;
			int root;
			uint8_t datatype;
			uint32_t op;
			size_t traffic_bytes;
			uint8_t max_channels, nwarps, algo, proto;
			int is_collnet, is_nvls;
		} coll;
		struct {
			const char *name;
			uint64_t comm_hash;
			uint8_t func;
			void *buf;
			uint8_t datatype;
			size_t count;
			int peer;
		} p2p;
		struct prof_proxy_op proxy_op;
	};
};

/* v2 and v3 differ only in the collective's trafficBytes (v3 drops it, and
 * adds kernel/net events); coll_extra is what v2 has there. */
#define PROF_DESCR_V23(ver, coll_extra)                                                            \
	struct prof_descr_##ver {                                                                  \
		uint8_t type;                                                                      \
		void *parent;                                                                      \
		int rank;                                                                          \
		union {                                                                            \
			struct {                                                                   \
				const char *name;                                                  \
				uint64_t comm_hash, seq;                                           \
				const char *func;                                                  \
				const void *sendbuf;                                               \
				void *recvbuf;                                                     \
				size_t count;                                                      \
				int root;                                                          \
				const char *datatype;                                              \
				coll_extra uint8_t max_channels, nwarps;                           \
				const char *algo, *proto;                                          \
			} coll;                                                                    \
			struct {                                                                   \
				const char *name;                                                  \
				uint64_t comm_hash;                                                \
				const char *func;                                                  \
				void *buf;                                                         \
				const char *datatype;                                              \
				size_t count;                                                      \
				int peer;                                                          \
			} p2p;                                                                     \
			struct prof_proxy_op proxy_op;                                             \
		};                                                                                 \
	}

PROF_DESCR_V23(v2, size_t traffic_bytes;);
PROF_DESCR_V23(v3, );

struct prof_coll_v4 {
	uint64_t seq;
	const char *func;
	const void *sendbuf;
	void *recvbuf;
	size_t count;
	int root;
	const char *datatype;
	uint8_t nchannels, nwarps;
	const char *algo, *proto;
};

struct prof_p2p_v4 {
	const char *func;
	void *buf;
	const char *datatype;
	size_t count;
	int peer;
	uint8_t nchannels;
};

struct prof_descr_v4 {
	uint8_t type;
	void *parent;
	int rank;
	union {
		struct prof_coll_v4 coll;
		struct prof_p2p_v4 p2p;
		struct prof_proxy_op proxy_op;
	};
};

struct prof_descr_v5 { /* v4's coll/p2p with parentGroup appended; 64-bit type */
	uint64_t type;
	void *parent;
	int rank;
	union {
		struct {
			struct prof_coll_v4 c;
			void *parent_group;
		} coll;
		struct {
			struct prof_p2p_v4 p;
			void *parent_group;
		} p2p;
		struct prof_proxy_op proxy_op;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			int root;
			void *stream;
			bool graph_captured;
		} coll_api;
	};
};

#define PROF_PLUGIN_T(ver, init_args)                                                              \
	struct prof_plugin_##ver {                                                                 \
		const char *name;                                                                  \
		ccl_result_t(*init) init_args;                                                     \
		ccl_result_t (*start)(void *ctx, void **handle, struct prof_descr_##ver *d);       \
		ccl_result_t (*stop)(void *handle);                                                \
		ccl_result_t (*record)(void *handle, prof_state_t state, void *args);              \
		ccl_result_t (*finalize)(void *ctx);                                               \
	}

PROF_PLUGIN_T(v1, (void **ctx, int *mask));
PROF_PLUGIN_T(v2, (void **ctx, int *mask));
PROF_PLUGIN_T(v3, (void **ctx, int *mask));
PROF_PLUGIN_T(v4, (void **ctx, int *mask, const char *name, uint64_t comm_hash, int nnodes,
		   int nranks, int rank, prof_logger_t log));
PROF_PLUGIN_T(v5, (void **ctx, uint64_t comm_id, int *mask, const char *name, int nnodes,
		   int nranks, int rank, prof_logger_t log));

/* ---- one normalised descriptor and the shared handling */

struct prof_ctx {
	uint64_t comm_id; /* 0 until known (v1-v3 carry it per event) */
	int rank, nranks;
};

struct prof_ev {
	int refs;
	bool is_op; /* coll/p2p (an operation) vs proxy op */
	struct prof_ev *parent;
	struct ice_event ev;
};

struct prof_norm {
	unsigned type;
	void *parent;
	int rank;
	uint64_t comm_hash;
	const char *func; /* NULL: use func_v1 */
	int func_v1;
	const char *dtype; /* NULL: use dtype_v1 */
	int dtype_v1;
	size_t count;
	int root, peer, is_send;
};

static unsigned prof_op(const char *f, int v1)
{
	static const struct {
		const char *name;
		unsigned op;
	} map[] = {
		{"AllReduce", ICE_OP_ALLREDUCE}, {"ReduceScatter", ICE_OP_REDUCESCATTER},
		{"AllGather", ICE_OP_ALLGATHER}, {"Broadcast", ICE_OP_BROADCAST},
		{"Reduce", ICE_OP_REDUCE},	 {"AlltoAll", ICE_OP_ALLTOALL},
		{"Send", ICE_OP_SEND},		 {"Recv", ICE_OP_RECV},
		{"SendRecv", ICE_OP_SENDRECV},
	};
	/* v1: ncclFunc_t numbering (Broadcast 0, Reduce, AllGather, ReduceScatter,
	 * AllReduce, SendRecv, Send, Recv) */
	static const unsigned v1map[] = {ICE_OP_BROADCAST,     ICE_OP_REDUCE,	 ICE_OP_ALLGATHER,
					 ICE_OP_REDUCESCATTER, ICE_OP_ALLREDUCE, ICE_OP_SENDRECV,
					 ICE_OP_SEND,	       ICE_OP_RECV};

	if (f == NULL)
		return v1 >= 0 && (size_t)v1 < sizeof(v1map) / sizeof(v1map[0]) ? v1map[v1] : 0;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcasecmp(f, map[i].name) == 0)
			return map[i].op;
	return 0;
}

static int prof_dtype(const char *d, int v1)
{
	static const char *const names[] = {"ncclInt8",	    "ncclUint8",      "ncclInt32",
					    "ncclUint32",   "ncclInt64",      "ncclUint64",
					    "ncclFloat16",  "ncclFloat32",    "ncclFloat64",
					    "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};

	if (d == NULL)
		return v1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(d, names[i]) == 0)
			return (int)i;
	return -1;
}

static void prof_put(struct prof_ev *e)
{
	while (e != NULL && __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		struct prof_ev *parent = e->parent;

		if (e->is_op) {
			e->ev.kind = ICE_EV_COLL_END;
			e->ev.ts_ns = ice_wall_ns();
			ccl_emit(&e->ev);
		}
		free(e);
		e = parent;
	}
}

static ccl_result_t prof_start(struct prof_ctx *ctx, void **handle, const struct prof_norm *n)
{
	struct prof_ev *e;
	bool is_op = n->type == PROF_COLL || n->type == PROF_P2P;

	*handle = NULL;
	if (ctx == NULL || (!is_op && n->type != PROF_PROXY_OP) || ccl_cfg.disable ||
	    !ccl_cfg.events)
		return CCL_SUCCESS;
	if (n->type == PROF_PROXY_OP) {
		struct prof_ev *parent = n->parent;

		/* note the peer on the operation; the proxy op holds it alive */
		if (parent == NULL || !parent->is_op)
			return CCL_SUCCESS;
		if (n->is_send)
			__atomic_store_n(&parent->ev.next, n->peer, __ATOMIC_RELAXED);
		else
			__atomic_store_n(&parent->ev.prev, n->peer, __ATOMIC_RELAXED);
		e = ccl_alloc(sizeof(*e));
		if (e == NULL)
			return CCL_SUCCESS;
		e->refs = 1;
		e->is_op = false;
		e->parent = parent;
		__atomic_add_fetch(&parent->refs, 1, __ATOMIC_ACQ_REL);
		*handle = e;
		return CCL_SUCCESS;
	}
	e = ccl_alloc(sizeof(*e));
	if (e == NULL)
		return CCL_SUCCESS; /* fail-open: the operation goes unreported */
	memset(e, 0, sizeof(*e));
	e->refs = 1;
	e->is_op = true;
	e->ev.kind = ICE_EV_COLL_START;
	e->ev.ts_ns = ice_wall_ns();
	e->ev.op = prof_op(n->func, n->func_v1);
	e->ev.comm_id = ctx->comm_id != 0 ? ctx->comm_id : n->comm_hash;
	e->ev.rank = ctx->rank >= 0 ? ctx->rank : n->rank;
	e->ev.nranks = ctx->nranks;
	e->ev.dtype = (uint32_t)prof_dtype(n->dtype, n->dtype_v1);
	e->ev.redop = (uint32_t)-1;
	/* same count convention as the preload hooks: the whole operation */
	e->ev.count = n->count;
	if ((e->ev.op == ICE_OP_REDUCESCATTER || e->ev.op == ICE_OP_ALLGATHER ||
	     e->ev.op == ICE_OP_ALLTOALL) &&
	    ctx->nranks > 0)
		e->ev.count *= (uint64_t)ctx->nranks;
	e->ev.bytes = e->ev.count * ccl_dtype_size((int)e->ev.dtype);
	e->ev.root = n->type == PROF_COLL ? n->root : -1;
	e->ev.peer = n->type == PROF_P2P ? n->peer : -1;
	e->ev.prev = e->ev.next = -1;
	snprintf(e->ev.lib, sizeof(e->ev.lib), "nccl-prof");
	ccl_emit(&e->ev);
	*handle = e;
	return CCL_SUCCESS;
}

static ccl_result_t prof_stop(void *handle)
{
	prof_put(handle);
	return CCL_SUCCESS;
}

static ccl_result_t prof_record(void *handle, prof_state_t state, void *args)
{
	return CCL_SUCCESS;
}

static ccl_result_t prof_init_common(void **ctx, int *mask, uint64_t comm_id, int nranks, int rank)
{
	struct prof_ctx *c;

	ccl_init();
	*ctx = NULL;
	if (mask != NULL)
		*mask = 0;
	if (ccl_cfg.disable || !ccl_cfg.events)
		return CCL_SUCCESS;
	c = ccl_alloc(sizeof(*c));
	if (c == NULL)
		return CCL_SUCCESS; /* no context: NCCL calls start with NULL, we ignore */
	c->comm_id = comm_id;
	c->rank = rank;
	c->nranks = nranks;
	*ctx = c;
	if (mask != NULL)
		*mask = PROF_COLL | PROF_P2P | PROF_PROXY_OP;
	return CCL_SUCCESS;
}

static ccl_result_t prof_finalize(void *ctx)
{
	ccl_flush();
	free(ctx);
	return CCL_SUCCESS;
}

/* ---- per-version adapters */

static ccl_result_t prof_init_v1(void **ctx, int *mask)
{
	return prof_init_common(ctx, mask, 0, -1, -1);
}

static ccl_result_t prof_init_v4(void **ctx, int *mask, const char *name, uint64_t comm_hash,
				 int nnodes, int nranks, int rank, prof_logger_t log)
{
	return prof_init_common(ctx, mask, comm_hash, nranks, rank);
}

static ccl_result_t prof_init_v5(void **ctx, uint64_t comm_id, int *mask, const char *name,
				 int nnodes, int nranks, int rank, prof_logger_t log)
{
	return prof_init_common(ctx, mask, comm_id, nranks, rank);
}

/* v1 numbers func and datatype (n.func_v1, n.dtype_v1), v2 and v3 name them
 * (n.func, n.dtype). */
#define PROF_START_V123(ver, func_f, dtype_f)                                                      \
	static ccl_result_t prof_start_##ver(void *ctx, void **h, struct prof_descr_##ver *d)      \
	{                                                                                          \
		struct prof_norm n = {.type = d->type, .parent = d->parent, .rank = d->rank};      \
                                                                                                   \
		if (d->type == PROF_COLL) {                                                        \
			n.comm_hash = d->coll.comm_hash;                                           \
			n.func_f = d->coll.func;                                                   \
			n.dtype_f = d->coll.datatype;                                              \
			n.count = d->coll.count;                                                   \
			n.root = d->coll.root;                                                     \
		} else if (d->type == PROF_P2P) {                                                  \
			n.comm_hash = d->p2p.comm_hash;                                            \
			n.func_f = d->p2p.func;                                                    \
			n.dtype_f = d->p2p.datatype;                                               \
			n.count = d->p2p.count;                                                    \
			n.peer = d->p2p.peer;                                                      \
		} else if (d->type == PROF_PROXY_OP) {                                             \
			n.peer = d->proxy_op.peer;                                                 \
			n.is_send = d->proxy_op.is_send;                                           \
		}                                                                                  \
		return prof_start(ctx, h, &n);                                                     \
	}
PROF_START_V123(v1, func_v1, dtype_v1)
PROF_START_V123(v2, func, dtype)
PROF_START_V123(v3, func, dtype)

static void prof_norm_v4(struct prof_norm *n, unsigned type, const struct prof_coll_v4 *c,
			 const struct prof_p2p_v4 *p, const struct prof_proxy_op *x)
{
	if (type == PROF_COLL) {
		n->func = c->func;
		n->dtype = c->datatype;
		n->count = c->count;
		n->root = c->root;
	} else if (type == PROF_P2P) {
		n->func = p->func;
		n->dtype = p->datatype;
		n->count = p->count;
		n->peer = p->peer;
	} else if (type == PROF_PROXY_OP) {
		n->peer = x->peer;
		n->is_send = x->is_send;
	}
}

static ccl_result_t prof_start_v4(void *ctx, void **h, struct prof_descr_v4 *d)
{
	struct prof_norm n = {.type = d->type, .parent = d->parent, .rank = d->rank};

	prof_norm_v4(&n, d->type, &d->coll, &d->p2p, &d->proxy_op);
	return prof_start(ctx, h, &n);
}

static ccl_result_t prof_start_v5(void *ctx, void **h, struct prof_descr_v5 *d)
{
	struct prof_norm n = {.type = (unsigned)d->type, .parent = d->parent, .rank = d->rank};

	if (d->type > PROF_PROXY_OP) { /* API, kernel and net events are not enabled */
		*h = NULL;
		return CCL_SUCCESS;
	}
	prof_norm_v4(&n, (unsigned)d->type, &d->coll.c, &d->p2p.p, &d->proxy_op);
	return prof_start(ctx, h, &n);
}

#define PROF_EXPORT(ver, init_fn)                                                                  \
	CCL_EXPORT const struct prof_plugin_##ver ncclProfiler_##ver = {                           \
		.name = "ice",                                                                     \
		.init = init_fn,                                                                   \
		.start = prof_start_##ver,                                                         \
		.stop = prof_stop,                                                                 \
		.record = prof_record,                                                             \
		.finalize = prof_finalize,                                                         \
	}

PROF_EXPORT(v5, prof_init_v5);
PROF_EXPORT(v4, prof_init_v4);
PROF_EXPORT(v3, prof_init_v1);
PROF_EXPORT(v2, prof_init_v1);
PROF_EXPORT(v1, prof_init_v1);
