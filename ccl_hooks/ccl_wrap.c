// SPDX-License-Identifier: Apache-2.0
/*
 * ccl_wrap: the NCCL C API hooks of libice-ccl.so, for every prefix in
 * CCL_VENDORS. Each exported function forwards to the real library with the
 * same arguments and returns its result unchanged; recording happens around
 * the call and can never fail it (fail-open).
 *
 * Real functions are found lazily, once, under a lock: dlsym(RTLD_NEXT,
 * "<pfx>X") (so other interposers still chain), then the strong alias
 * "p<pfx>X", then the library itself by soname (a libnccl loaded RTLD_LOCAL,
 * as Python extensions do, is not in RTLD_NEXT's scope).
 *
 * Groups: operations issued between <pfx>GroupStart and the outermost
 * <pfx>GroupEnd of a thread are held back and reported at that GroupEnd,
 * all carrying the same group number, and only when it succeeded (NCCL
 * launches a group's operations at its end; a failed end launched none).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ccl_api.h"
#include "ccl_hook.h"
#include "ccl_internal.h"

static const char *const ccl_fn_names[CCL_FN_COUNT] = {
#define CCL_FN_NAME(a, name) [CCL_FN_##name] = #name,
	CCL_FUNCS(CCL_FN_NAME, _) CCL_HELPERS(CCL_FN_NAME, _)
#undef CCL_FN_NAME
};

static pthread_mutex_t ccl_resolve_lock = PTHREAD_MUTEX_INITIALIZER;

static bool ccl_is_ours(void *p)
{
	Dl_info self, other;

	return p != NULL && dladdr((void *)ccl_is_ours, &self) != 0 && dladdr(p, &other) != 0 &&
	       self.dli_fbase == other.dli_fbase;
}

_Static_assert(CCL_FN_COUNT <= CCL_FN_MAX, "CCL_FN_MAX too small for CCL_FUNCS");

void *ccl_resolve(struct ccl_vendor *v, unsigned f)
{
	char name[64], pname[sizeof(name) + 1];
	const char *how = "RTLD_NEXT";
	void *p;

	ccl_init();
	pthread_mutex_lock(&ccl_resolve_lock);
	p = v->fn[f];
	if (p != NULL || v->tried[f])
		goto out;
	v->tried[f] = true;
	snprintf(name, sizeof(name), "%s%s", v->prefix, v->names[f]);
	snprintf(pname, sizeof(pname), "p%s", name);
	p = dlsym(RTLD_NEXT, name);
	if (p == NULL || ccl_is_ours(p))
		p = dlsym(RTLD_NEXT, pname);
	if (p == NULL || ccl_is_ours(p)) {
		const char *env = getenv("ICE_CCL_REAL_LIB");
		void *h = dlopen(env != NULL && *env != '\0' ? env : v->soname,
				 RTLD_LAZY | RTLD_NOLOAD);

		how = "soname";
		p = NULL;
		if (h != NULL) {
			p = dlsym(h, pname);
			if (p == NULL)
				p = dlsym(h, name);
			dlclose(h);
		}
	}
	if (p != NULL && ccl_is_ours(p))
		p = NULL;
	if (p == NULL) {
		ice_err(CCL_SUB, "%s: the real function was not found (%s)", name,
			"no later library exports it");
	} else if (ice_log_enabled(ICE_LOG_DEBUG, CCL_SUB)) {
		Dl_info di;

		if (dladdr(p, &di) != 0)
			ice_dbg(CCL_SUB, "resolved %s -> %s (%s) via %s", name, di.dli_fname,
				di.dli_sname != NULL ? di.dli_sname : "?", how);
	}
	__atomic_store_n(&v->fn[f], p, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&ccl_resolve_lock);
	return p;
}

/* ---- per-thread state: group depth, held-back events, sampling */

struct ccl_thread {
	int depth;
	uint16_t group;
	unsigned npend, cap;
	struct ice_event *pend;
	uint32_t sample_ctr;
};

static __thread struct ccl_thread ccl_t;
static uint16_t ccl_group_seq;

static inline bool ccl_recording(void)
{
	return !ccl_cfg.disable && ccl_cfg.events;
}

/* Whether to report this operation (1 of ICE_CCL_SAMPLE). */
static inline bool ccl_sampled(void)
{
	if (!ccl_recording())
		return false;
	if (ccl_cfg.sample <= 1)
		return true;
	return ++ccl_t.sample_ctr % (uint32_t)ccl_cfg.sample == 0;
}

static void ccl_report(struct ice_event *ev)
{
	struct ccl_thread *t = &ccl_t;

	if (t->depth > 0) {
		if (t->npend == t->cap) {
			unsigned cap = t->cap ? t->cap * 2 : 16;
			struct ice_event *p = ccl_realloc(t->pend, cap * sizeof(*p));

			if (p == NULL) {
				/* no room to hold it back: report it now */
				ccl_emit(ev);
				return;
			}
			t->pend = p;
			t->cap = cap;
		}
		ev->group = t->group;
		t->pend[t->npend++] = *ev;
		return;
	}
	ccl_emit(ev);
}

static void ccl_ev_init(struct ice_event *ev, const struct ccl_vendor *v, unsigned kind,
			ccl_comm_t comm, uint64_t ts)
{
	struct ccl_comm_info ci = {.id = 0, .rank = -1, .nranks = -1};

	memset(ev, 0, sizeof(*ev));
	ccl_comm_get(comm, &ci);
	ev->kind = (uint16_t)kind;
	ev->ts_ns = ts;
	ev->comm_id = ci.id;
	ev->rank = ci.rank;
	ev->nranks = ci.nranks;
	ev->dtype = (uint32_t)-1;
	ev->redop = (uint32_t)-1;
	ev->root = -1;
	ev->peer = -1;
	ev->prev = -1;
	ev->next = -1;
	memcpy(ev->lib, v->lib, sizeof(ev->lib));
}

struct ccl_sample ccl_sample_begin(void)
{
	struct ccl_sample smp = {.rec = ccl_sampled(), .ts = 0};

	if (smp.rec)
		smp.ts = ice_wall_ns();
	return smp;
}

void ccl_op_record(const struct ccl_vendor *v, struct ccl_sample smp, bool ok, unsigned op,
		   ccl_comm_t comm, uint64_t count, bool times_nranks, struct ccl_dt dt, int redop,
		   int root, int peer)
{
	uint64_t ts = smp.ts;
	struct ice_event ev;
	int saved = errno;

	if (!smp.rec || !ok || ccl_emit_idle(ts))
		goto out;
	ccl_ev_init(&ev, v, ICE_EV_COLL_START, comm, ts);
	ev.op = op;
	ev.count = times_nranks && ev.nranks > 0 ? count * (uint64_t)ev.nranks : count;
	ev.bytes = ev.count * dt.size;
	ev.dtype = dt.nccl;
	ev.redop = (uint32_t)redop;
	ev.root = root;
	ev.peer = peer;
	ccl_report(&ev);
	ccl_verbs_poll();
out:
	errno = saved;
}

/* An NCCL-shaped operation returned rc: ccl_op_record; returns rc. */
static ccl_result_t ccl_op_done(const struct ccl_vendor *v, struct ccl_sample smp, ccl_result_t rc,
				unsigned op, ccl_comm_t comm, size_t count, bool times_nranks,
				ccl_dtype_t dt, int redop, int root, int peer)
{
	struct ccl_dt d = {.nccl = (uint32_t)dt, .size = ccl_dtype_size(dt)};

	ccl_op_record(v, smp, rc == CCL_SUCCESS || rc == CCL_IN_PROGRESS, op, comm, count,
		      times_nranks, d, redop, root, peer);
	return rc;
}

void ccl_comm_added(const struct ccl_vendor *v, ccl_comm_t comm, uint64_t id, int rank, int nranks,
		    uint64_t ts)
{
	struct ccl_comm_info ci = {.id = id, .rank = rank, .nranks = nranks};
	struct ice_event ev;
	int saved = errno;

	if (comm == NULL || ccl_cfg.disable)
		goto out;
	if (ccl_comm_put(comm, &ci) < 0)
		ice_warn(CCL_SUB, "communicator map full: comm %p not tracked", comm);
	if (!ccl_recording())
		goto out;
	ccl_ev_init(&ev, v, ICE_EV_COMM_INIT, comm, ts);
	ev.comm_id = id;
	ev.rank = rank;
	ev.nranks = nranks;
	ccl_emit(&ev);
out:
	errno = saved;
}

void ccl_comm_gone(const struct ccl_vendor *v, ccl_comm_t comm)
{
	struct ice_event ev;
	int saved = errno;

	if (ccl_cfg.disable)
		return;
	if (ccl_recording()) {
		ccl_ev_init(&ev, v, ICE_EV_COMM_DESTROY, comm, ice_wall_ns());
		ccl_emit(&ev);
		ccl_flush();
	}
	ccl_comm_del(comm);
	errno = saved;
}

/* ---- the generic hooks, one per entry point */

#define CCL_REAL(v, name, ...)                                                                     \
	ccl_result_t (*real)(__VA_ARGS__) =                                                        \
		(ccl_result_t(*)(__VA_ARGS__))ccl_real(v, CCL_FN_##name);                          \
	if (real == NULL)                                                                          \
	return CCL_INTERNAL_ERROR

/* A CommInitRank* returned rc: note the new communicator; returns rc. */
static ccl_result_t ccl_rank_init_done(const struct ccl_vendor *v, ccl_result_t rc,
				       ccl_comm_t *comm, const ccl_unique_id_t *id, int rank,
				       int nranks, uint64_t ts)
{
	if ((rc == CCL_SUCCESS || rc == CCL_IN_PROGRESS) && comm != NULL)
		ccl_comm_added(v, *comm, ccl_comm_hash(id->internal, sizeof(id->internal)), rank,
			       nranks, ts);
	return rc;
}

static ccl_result_t ccl_init_rank(struct ccl_vendor *v, ccl_comm_t *comm, int nranks,
				  ccl_unique_id_t id, int rank)
{
	CCL_REAL(v, CommInitRank, ccl_comm_t *, int, ccl_unique_id_t, int);
	uint64_t ts = ice_wall_ns();

	return ccl_rank_init_done(v, real(comm, nranks, id, rank), comm, &id, rank, nranks, ts);
}

static ccl_result_t ccl_init_rank_config(struct ccl_vendor *v, ccl_comm_t *comm, int nranks,
					 ccl_unique_id_t id, int rank, ccl_config_t *config)
{
	CCL_REAL(v, CommInitRankConfig, ccl_comm_t *, int, ccl_unique_id_t, int, ccl_config_t *);
	uint64_t ts = ice_wall_ns();

	return ccl_rank_init_done(v, real(comm, nranks, id, rank, config), comm, &id, rank, nranks,
				  ts);
}

static ccl_result_t ccl_init_all(struct ccl_vendor *v, ccl_comm_t *comms, int ndev,
				 const int *devlist)
{
	CCL_REAL(v, CommInitAll, ccl_comm_t *, int, const int *);
	uint64_t ts = ice_wall_ns();
	ccl_result_t rc = real(comms, ndev, devlist);

	if (rc == CCL_SUCCESS && comms != NULL) {
		uint64_t id = ccl_call_id(ts); /* one process owns every rank */

		for (int i = 0; i < ndev; i++)
			ccl_comm_added(v, comms[i], id, i, ndev, ts);
	}
	return rc;
}

static ccl_result_t ccl_split(struct ccl_vendor *v, ccl_comm_t comm, int color, int key,
			      ccl_comm_t *newcomm, ccl_config_t *config)
{
	CCL_REAL(v, CommSplit, ccl_comm_t, int, int, ccl_comm_t *, ccl_config_t *);
	uint64_t ts = ice_wall_ns();
	ccl_result_t rc = real(comm, color, key, newcomm, config);

	if ((rc == CCL_SUCCESS || rc == CCL_IN_PROGRESS) && newcomm != NULL && *newcomm != NULL &&
	    !ccl_cfg.disable) {
		ccl_result_t (*count)(ccl_comm_t, int *) =
			(ccl_result_t(*)(ccl_comm_t, int *))ccl_real(v, CCL_FN_CommCount);
		ccl_result_t (*urank)(ccl_comm_t, int *) =
			(ccl_result_t(*)(ccl_comm_t, int *))ccl_real(v, CCL_FN_CommUserRank);
		struct ccl_comm_info parent = {.id = 0, .rank = -1, .nranks = -1};
		int n = -1, r = -1;
		uint64_t k[3];

		ccl_comm_get(comm, &parent);
		/* every member shares the parent, the colour and the split's
		 * place among the parent's (its ranks split it together, in one
		 * order): two splits of one parent with one colour (a group made
		 * again) get two ids, and one's end is not the other's */
		k[0] = parent.id;
		k[1] = (uint64_t)(uint32_t)color;
		k[2] = ccl_comm_next_split(comm);
		if (count == NULL || count(*newcomm, &n) != CCL_SUCCESS)
			n = -1;
		if (urank == NULL || urank(*newcomm, &r) != CCL_SUCCESS)
			r = -1;
		ccl_comm_added(v, *newcomm, ccl_comm_hash(k, sizeof(k)), r, n, ts);
	}
	return rc;
}

static ccl_result_t ccl_destroy(struct ccl_vendor *v, ccl_comm_t comm)
{
	CCL_REAL(v, CommDestroy, ccl_comm_t);

	ccl_comm_gone(v, comm);
	return real(comm);
}

static ccl_result_t ccl_abort(struct ccl_vendor *v, ccl_comm_t comm)
{
	CCL_REAL(v, CommAbort, ccl_comm_t);

	ccl_comm_gone(v, comm);
	return real(comm);
}

static ccl_result_t ccl_allreduce(struct ccl_vendor *v, const void *s, void *r, size_t n,
				  ccl_dtype_t t, ccl_redop_t op, ccl_comm_t c, ccl_stream_t st)
{
	CCL_REAL(v, AllReduce, const void *, void *, size_t, ccl_dtype_t, ccl_redop_t, ccl_comm_t,
		 ccl_stream_t);
	struct ccl_sample smp = ccl_sample_begin();

	return ccl_op_done(v, smp, real(s, r, n, t, op, c, st), ICE_OP_ALLREDUCE, c, n, false, t,
			   op, -1, -1);
}

static ccl_result_t ccl_reducescatter(struct ccl_vendor *v, const void *s, void *r, size_t n,
				      ccl_dtype_t t, ccl_redop_t op, ccl_comm_t c, ccl_stream_t st)
{
	CCL_REAL(v, ReduceScatter, const void *, void *, size_t, ccl_dtype_t, ccl_redop_t,
		 ccl_comm_t, ccl_stream_t);
	struct ccl_sample smp = ccl_sample_begin();

	return ccl_op_done(v, smp, real(s, r, n, t, op, c, st), ICE_OP_REDUCESCATTER, c, n, true, t,
			   op, -1, -1);
}

static ccl_result_t ccl_allgather(struct ccl_vendor *v, const void *s, void *r, size_t n,
				  ccl_dtype_t t, ccl_comm_t c, ccl_stream_t st)
{
	CCL_REAL(v, AllGather, const void *, void *, size_t, ccl_dtype_t, ccl_comm_t, ccl_stream_t);
	struct ccl_sample smp = ccl_sample_begin();

	return ccl_op_done(v, smp, real(s, r, n, t, c, st), ICE_OP_ALLGATHER, c, n, true, t, -1, -1,
			   -1);
}

static ccl_result_t ccl_broadcast(struct ccl_vendor *v, const void *s, void *r, size_t n,
				  ccl_dtype_t t, int root, ccl_comm_t c, ccl_stream_t st)
{
	CCL_REAL(v, Broadcast, const void *, void *, size_t, ccl_dtype_t, int, ccl_comm_t,
		 ccl_stream_t);
	struct ccl_sample smp = ccl_sample_begin();

	return ccl_op_done(v, smp, real(s, r, n, t, root, c, st), ICE_OP_BROADCAST, c, n, false, t,
			   -1, root, -1);
}

static ccl_result_t ccl_reduce(struct ccl_vendor *v, const void *s, void *r, size_t n,
			       ccl_dtype_t t, ccl_redop_t op, int root, ccl_comm_t c,
			       ccl_stream_t st)
{
	CCL_REAL(v, Reduce, const void *, void *, size_t, ccl_dtype_t, ccl_redop_t, int, ccl_comm_t,
		 ccl_stream_t);
	struct ccl_sample smp = ccl_sample_begin();

	return ccl_op_done(v, smp, real(s, r, n, t, op, root, c, st), ICE_OP_REDUCE, c, n, false, t,
			   op, root, -1);
}

static ccl_result_t ccl_alltoall(struct ccl_vendor *v, const void *s, void *r, size_t n,
				 ccl_dtype_t t, ccl_comm_t c, ccl_stream_t st)
{
	CCL_REAL(v, AlltoAll, const void *, void *, size_t, ccl_dtype_t, ccl_comm_t, ccl_stream_t);
	struct ccl_sample smp = ccl_sample_begin();

	return ccl_op_done(v, smp, real(s, r, n, t, c, st), ICE_OP_ALLTOALL, c, n, true, t, -1, -1,
			   -1);
}

static ccl_result_t ccl_send(struct ccl_vendor *v, const void *s, size_t n, ccl_dtype_t t, int peer,
			     ccl_comm_t c, ccl_stream_t st)
{
	CCL_REAL(v, Send, const void *, size_t, ccl_dtype_t, int, ccl_comm_t, ccl_stream_t);
	struct ccl_sample smp = ccl_sample_begin();

	return ccl_op_done(v, smp, real(s, n, t, peer, c, st), ICE_OP_SEND, c, n, false, t, -1, -1,
			   peer);
}

static ccl_result_t ccl_recv(struct ccl_vendor *v, void *r, size_t n, ccl_dtype_t t, int peer,
			     ccl_comm_t c, ccl_stream_t st)
{
	CCL_REAL(v, Recv, void *, size_t, ccl_dtype_t, int, ccl_comm_t, ccl_stream_t);
	struct ccl_sample smp = ccl_sample_begin();

	return ccl_op_done(v, smp, real(r, n, t, peer, c, st), ICE_OP_RECV, c, n, false, t, -1, -1,
			   peer);
}

uint64_t ccl_call_id(uint64_t ts)
{
	static uint64_t seq;
	uint64_t key[3] = {(uint64_t)getpid(), __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED), ts};

	return ccl_comm_hash(key, sizeof(key));
}

void ccl_group_started(bool ok)
{
	if (ok && ccl_recording() && ccl_t.depth++ == 0) {
		uint16_t g = __atomic_add_fetch(&ccl_group_seq, 1, __ATOMIC_RELAXED);

		if (g == 0) /* 0 means "no group" */
			g = __atomic_add_fetch(&ccl_group_seq, 1, __ATOMIC_RELAXED);
		ccl_t.group = g;
		ccl_t.npend = 0;
	}
}

void ccl_group_ended(bool ok)
{
	struct ccl_thread *t = &ccl_t;
	int saved = errno;

	if (t->depth > 0 && --t->depth == 0) {
		if (ok)
			for (unsigned i = 0; i < t->npend; i++)
				ccl_emit(&t->pend[i]);
		t->npend = 0;
		ccl_verbs_poll();
	}
	errno = saved;
}

static ccl_result_t ccl_group_start(struct ccl_vendor *v)
{
	CCL_REAL(v, GroupStart, void);
	ccl_result_t rc = real();

	ccl_group_started(rc == CCL_SUCCESS);
	return rc;
}

static ccl_result_t ccl_group_end(struct ccl_vendor *v)
{
	CCL_REAL(v, GroupEnd, void);
	ccl_result_t rc = real();

	ccl_group_ended(rc == CCL_SUCCESS || rc == CCL_IN_PROGRESS);
	return rc;
}

/* ---- one set of exported entry points per vendor prefix */

#define CCL_DEFINE_VENDOR(pfx, soname)                                                             \
	static struct ccl_vendor ccl_vendor_##pfx = {#pfx, soname, ccl_fn_names, #pfx, {0}, {0}};  \
	CCL_EXPORT ccl_result_t pfx##CommInitRank(ccl_comm_t *comm, int nranks,                    \
						  ccl_unique_id_t id, int rank)                    \
	{                                                                                          \
		return ccl_init_rank(&ccl_vendor_##pfx, comm, nranks, id, rank);                   \
	}                                                                                          \
	CCL_EXPORT ccl_result_t pfx##CommInitRankConfig(                                           \
		ccl_comm_t *comm, int nranks, ccl_unique_id_t id, int rank, ccl_config_t *config)  \
	{                                                                                          \
		return ccl_init_rank_config(&ccl_vendor_##pfx, comm, nranks, id, rank, config);    \
	}                                                                                          \
	CCL_EXPORT ccl_result_t pfx##CommInitAll(ccl_comm_t *comms, int ndev, const int *devlist)  \
	{                                                                                          \
		return ccl_init_all(&ccl_vendor_##pfx, comms, ndev, devlist);                      \
	}                                                                                          \
	CCL_EXPORT ccl_result_t pfx##CommSplit(ccl_comm_t comm, int color, int key,                \
					       ccl_comm_t *newcomm, ccl_config_t *config)          \
	{                                                                                          \
		return ccl_split(&ccl_vendor_##pfx, comm, color, key, newcomm, config);            \
	}                                                                                          \
	CCL_EXPORT ccl_result_t pfx##CommDestroy(ccl_comm_t comm)                                  \
	{                                                                                          \
		return ccl_destroy(&ccl_vendor_##pfx, comm);                                       \
	}                                                                                          \
	CCL_EXPORT ccl_result_t pfx##CommAbort(ccl_comm_t comm)                                    \
	{                                                                                          \
		return ccl_abort(&ccl_vendor_##pfx, comm);                                         \
	}                                                                                          \
	CCL_EXPORT ccl_result_t pfx##AllReduce(const void *s, void *r, size_t n, ccl_dtype_t t,    \
					       ccl_redop_t op, ccl_comm_t c, ccl_stream_t st)      \
	{                                                                                          \
		return ccl_allreduce(&ccl_vendor_##pfx, s, r, n, t, op, c, st);                    \
	}                                                                                          \
	CCL_EXPORT ccl_result_t pfx##ReduceScatter(const void *s, void *r, size_t n,               \
						   ccl_dtype_t t, ccl_redop_t op, ccl_comm_t c,    \
						   ccl_stream_t st)                                \
	{                                                                                          \
		return ccl_reducescatter(&ccl_vendor_##pfx, s, r, n, t, op, c, st);                \
	}                                                                                          \
	CCL_EXPORT ccl_result_t pfx##AllGather(const void *s, void *r, size_t n, ccl_dtype_t t,    \
					       ccl_comm_t c, ccl_stream_t st)                      \
	{                                                                                          \
		return ccl_allgather(&ccl_vendor_##pfx, s, r, n, t, c, st);                        \
	}                                                                                          \
	CCL_EXPORT ccl_result_t pfx##Broadcast(const void *s, void *r, size_t n, ccl_dtype_t t,    \
					       int root, ccl_comm_t c, ccl_stream_t st)            \
	{                                                                                          \
		return ccl_broadcast(&ccl_vendor_##pfx, s, r, n, t, root, c, st);                  \
	}                                                                                          \
	CCL_EXPORT ccl_result_t pfx##Reduce(const void *s, void *r, size_t n, ccl_dtype_t t,       \
					    ccl_redop_t op, int root, ccl_comm_t c,                \
					    ccl_stream_t st)                                       \
	{                                                                                          \
		return ccl_reduce(&ccl_vendor_##pfx, s, r, n, t, op, root, c, st);                 \
	}                                                                                          \
	CCL_EXPORT ccl_result_t pfx##AlltoAll(const void *s, void *r, size_t n, ccl_dtype_t t,     \
					      ccl_comm_t c, ccl_stream_t st)                       \
	{                                                                                          \
		return ccl_alltoall(&ccl_vendor_##pfx, s, r, n, t, c, st);                         \
	}                                                                                          \
	CCL_EXPORT ccl_result_t pfx##Send(const void *s, size_t n, ccl_dtype_t t, int peer,        \
					  ccl_comm_t c, ccl_stream_t st)                           \
	{                                                                                          \
		return ccl_send(&ccl_vendor_##pfx, s, n, t, peer, c, st);                          \
	}                                                                                          \
	CCL_EXPORT ccl_result_t pfx##Recv(void *r, size_t n, ccl_dtype_t t, int peer,              \
					  ccl_comm_t c, ccl_stream_t st)                           \
	{                                                                                          \
		return ccl_recv(&ccl_vendor_##pfx, r, n, t, peer, c, st);                          \
	}                                                                                          \
	CCL_EXPORT ccl_result_t pfx##GroupStart(void)                                              \
	{                                                                                          \
		return ccl_group_start(&ccl_vendor_##pfx);                                         \
	}                                                                                          \
	CCL_EXPORT ccl_result_t pfx##GroupEnd(void)                                                \
	{                                                                                          \
		return ccl_group_end(&ccl_vendor_##pfx);                                           \
	}

CCL_VENDORS(CCL_DEFINE_VENDOR)
