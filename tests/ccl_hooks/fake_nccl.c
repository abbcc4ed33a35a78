// SPDX-License-Identifier: Apache-2.0
/* fake_nccl: see fake_nccl.h. */
#include "fake_nccl.h"

#include <stdio.h>
#include <string.h>

struct fake_nccl_call fake_nccl_last;
int fake_nccl_rc;
int fake_nccl_count = 4, fake_nccl_rank = 1;

typedef struct {
	char internal[128];
} fake_uid_t;

static void rec(const char *fn, int n, const uint64_t *a)
{
	snprintf(fake_nccl_last.fn, sizeof(fake_nccl_last.fn), "%s", fn);
	memset(fake_nccl_last.a, 0, sizeof(fake_nccl_last.a));
	memcpy(fake_nccl_last.a, a, (size_t)n * sizeof(*a));
	fake_nccl_last.ncalls++;
}

#define U(x) ((uint64_t)(uintptr_t)(x))
#define REC(...)                                                                                   \
	do {                                                                                       \
		uint64_t a_[] = {__VA_ARGS__};                                                     \
		rec(name_, sizeof(a_) / sizeof(a_[0]), a_);                                        \
	} while (0)

/* F(prefix, strong-name-prefix): one set of entry points */
#define FAKE_SET(P, S)                                                                             \
	int S##CommInitRank(void **c, int n, fake_uid_t id, int r)                                 \
	{                                                                                          \
		const char *name_ = #P "CommInitRank";                                             \
		REC(U(c), (uint64_t)n, (uint64_t)(uint8_t)id.internal[0],                          \
		    (uint64_t)(uint8_t)id.internal[127], (uint64_t)r);                             \
		if (c != NULL)                                                                     \
			*c = (void *)(uintptr_t)(0x1000 + fake_nccl_last.ncalls * 16);             \
		return fake_nccl_rc;                                                               \
	}                                                                                          \
	int S##CommInitRankConfig(void **c, int n, fake_uid_t id, int r, void *cfg)                \
	{                                                                                          \
		const char *name_ = #P "CommInitRankConfig";                                       \
		REC(U(c), (uint64_t)n, (uint64_t)(uint8_t)id.internal[0],                          \
		    (uint64_t)(uint8_t)id.internal[127], (uint64_t)r, U(cfg));                     \
		if (c != NULL)                                                                     \
			*c = (void *)(uintptr_t)(0x1000 + fake_nccl_last.ncalls * 16);             \
		return fake_nccl_rc;                                                               \
	}                                                                                          \
	int S##CommInitAll(void **c, int n, const int *dev)                                        \
	{                                                                                          \
		const char *name_ = #P "CommInitAll";                                              \
		REC(U(c), (uint64_t)n, U(dev));                                                    \
		for (int i = 0; c != NULL && i < n; i++)                                           \
			c[i] = (void *)(uintptr_t)(0x100000 + fake_nccl_last.ncalls * 256 +        \
						   i * 16);                                        \
		return fake_nccl_rc;                                                               \
	}                                                                                          \
	int S##CommSplit(void *c, int color, int key, void **nc, void *cfg)                        \
	{                                                                                          \
		const char *name_ = #P "CommSplit";                                                \
		REC(U(c), (uint64_t)color, (uint64_t)key, U(nc), U(cfg));                          \
		if (nc != NULL)                                                                    \
			*nc = (void *)(uintptr_t)(0x2000 + fake_nccl_last.ncalls * 16);            \
		return fake_nccl_rc;                                                               \
	}                                                                                          \
	int S##CommDestroy(void *c)                                                                \
	{                                                                                          \
		const char *name_ = #P "CommDestroy";                                              \
		REC(U(c));                                                                         \
		return fake_nccl_rc;                                                               \
	}                                                                                          \
	int S##CommAbort(void *c)                                                                  \
	{                                                                                          \
		const char *name_ = #P "CommAbort";                                                \
		REC(U(c));                                                                         \
		return fake_nccl_rc;                                                               \
	}                                                                                          \
	int S##CommCount(void *c, int *n)                                                          \
	{                                                                                          \
		*n = fake_nccl_count;                                                              \
		return 0;                                                                          \
	}                                                                                          \
	int S##CommUserRank(void *c, int *r)                                                       \
	{                                                                                          \
		*r = fake_nccl_rank;                                                               \
		return 0;                                                                          \
	}                                                                                          \
	int S##AllReduce(const void *s, void *r, size_t n, int t, int op, void *c, void *st)       \
	{                                                                                          \
		const char *name_ = #P "AllReduce";                                                \
		REC(U(s), U(r), n, (uint64_t)t, (uint64_t)op, U(c), U(st));                        \
		return fake_nccl_rc;                                                               \
	}                                                                                          \
	int S##ReduceScatter(const void *s, void *r, size_t n, int t, int op, void *c, void *st)   \
	{                                                                                          \
		const char *name_ = #P "ReduceScatter";                                            \
		REC(U(s), U(r), n, (uint64_t)t, (uint64_t)op, U(c), U(st));                        \
		return fake_nccl_rc;                                                               \
	}                                                                                          \
	int S##AllGather(const void *s, void *r, size_t n, int t, void *c, void *st)               \
	{                                                                                          \
		const char *name_ = #P "AllGather";                                                \
		REC(U(s), U(r), n, (uint64_t)t, U(c), U(st));                                      \
		return fake_nccl_rc;                                                               \
	}                                                                                          \
	int S##Broadcast(const void *s, void *r, size_t n, int t, int root, void *c, void *st)     \
	{                                                                                          \
		const char *name_ = #P "Broadcast";                                                \
		REC(U(s), U(r), n, (uint64_t)t, (uint64_t)root, U(c), U(st));                      \
		return fake_nccl_rc;                                                               \
	}                                                                                          \
	int S##Reduce(const void *s, void *r, size_t n, int t, int op, int root, void *c,          \
		      void *st)                                                                    \
	{                                                                                          \
		const char *name_ = #P "Reduce";                                                   \
		REC(U(s), U(r), n, (uint64_t)t, (uint64_t)op, (uint64_t)root, U(c), U(st));        \
		return fake_nccl_rc;                                                               \
	}                                                                                          \
	int S##AlltoAll(const void *s, void *r, size_t n, int t, void *c, void *st)                \
	{                                                                                          \
		const char *name_ = #P "AlltoAll";                                                 \
		REC(U(s), U(r), n, (uint64_t)t, U(c), U(st));                                      \
		return fake_nccl_rc;                                                               \
	}                                                                                          \
	int S##Send(const void *s, size_t n, int t, int peer, void *c, void *st)                   \
	{                                                                                          \
		const char *name_ = #P "Send";                                                     \
		REC(U(s), n, (uint64_t)t, (uint64_t)peer, U(c), U(st));                            \
		return fake_nccl_rc;                                                               \
	}                                                                                          \
	int S##Recv(void *r, size_t n, int t, int peer, void *c, void *st)                         \
	{                                                                                          \
		const char *name_ = #P "Recv";                                                     \
		REC(U(r), n, (uint64_t)t, (uint64_t)peer, U(c), U(st));                            \
		return fake_nccl_rc;                                                               \
	}                                                                                          \
	int S##GroupStart(void)                                                                    \
	{                                                                                          \
		const char *name_ = #P "GroupStart";                                               \
		REC(0);                                                                            \
		return fake_nccl_rc;                                                               \
	}                                                                                          \
	int S##GroupEnd(void)                                                                      \
	{                                                                                          \
		const char *name_ = #P "GroupEnd";                                                 \
		REC(0);                                                                            \
		return fake_nccl_rc;                                                               \
	}

/* NCCL: strong pnccl*, weak nccl* aliases (as libnccl.so.2 2.28) */
FAKE_SET(nccl, pnccl)
#define WEAK(name) extern __typeof(p##name) name __attribute__((weak, alias("p" #name)));
WEAK(ncclCommInitRank)
WEAK(ncclCommInitRankConfig)
WEAK(ncclCommInitAll)
WEAK(ncclCommSplit)
WEAK(ncclCommDestroy)
WEAK(ncclCommAbort)
WEAK(ncclCommCount)
WEAK(ncclCommUserRank)
WEAK(ncclAllReduce)
WEAK(ncclReduceScatter)
WEAK(ncclAllGather)
WEAK(ncclBroadcast)
WEAK(ncclReduce)
WEAK(ncclAlltoAll)
WEAK(ncclSend)
WEAK(ncclRecv)
WEAK(ncclGroupStart)
WEAK(ncclGroupEnd)
/* vendor prefixes without p-aliases */
FAKE_SET(mccl, mccl)
FAKE_SET(succl, succl)
FAKE_SET(eccl, eccl)
