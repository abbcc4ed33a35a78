// SPDX-License-Identifier: Apache-2.0
/*
 * fake_cncl: a test double of Cambricon's libcncl.so (no MLU here): the
 * entry points libice-ccl.so hooks, in cncl.h's argument orders (our own
 * declarations, see ccl_hooks/ccl_native.c). Each call records its
 * arguments in fake_cncl_last and returns fake_cncl_rc; cnclInitComms hands
 * out made-up communicators.
 */
#include <stdio.h>
#include <string.h>

#include "fake_nccl.h"

struct fake_nccl_call fake_cncl_last;
int fake_cncl_rc;

static void rec(const char *fn, int n, const uint64_t *a)
{
	snprintf(fake_cncl_last.fn, sizeof(fake_cncl_last.fn), "%s", fn);
	memset(fake_cncl_last.a, 0, sizeof(fake_cncl_last.a));
	memcpy(fake_cncl_last.a, a, (size_t)n * sizeof(*a));
	fake_cncl_last.ncalls++;
}

#define U(x) ((uint64_t)(uintptr_t)(x))
#define I(x) ((uint64_t)(int64_t)(x))
#define REC(...)                                                                                   \
	do {                                                                                       \
		uint64_t a_[] = {__VA_ARGS__};                                                     \
		rec(__func__, sizeof(a_) / sizeof(a_[0]), a_);                                     \
	} while (0)

int cnclInitComms(void **comms, int num, const int *devs, const int *ranks, int nrank, void *id)
{
	REC(U(comms), I(num), U(devs), U(ranks), I(nrank), U(id));
	for (int i = 0; comms != NULL && i < num; i++)
		comms[i] = (void *)(uintptr_t)(0x90000 + fake_cncl_last.ncalls * 256 + i * 16);
	return fake_cncl_rc;
}

int cnclFreeComm(void *c)
{
	REC(U(c));
	return fake_cncl_rc;
}

int cnclAbortComm(void *c)
{
	REC(U(c));
	return fake_cncl_rc;
}

int cnclDestroyComms(void **comms, int num)
{
	REC(U(comms), I(num));
	return fake_cncl_rc;
}

int cnclAllReduce(const void *s, void *r, size_t n, int t, int op, void *c, void *q)
{
	REC(U(s), U(r), n, I(t), I(op), U(c), U(q));
	return fake_cncl_rc;
}

int cnclBroadcast(const void *s, void *r, size_t n, int t, int root, void *c, void *q)
{
	REC(U(s), U(r), n, I(t), I(root), U(c), U(q));
	return fake_cncl_rc;
}

int cnclBcast(void *buf, size_t n, int t, int root, void *c, void *q)
{
	REC(U(buf), n, I(t), I(root), U(c), U(q));
	return fake_cncl_rc;
}

int cnclReduceScatter(const void *s, void *r, size_t n, int t, int op, void *c, void *q)
{
	REC(U(s), U(r), n, I(t), I(op), U(c), U(q));
	return fake_cncl_rc;
}

int cnclAllGather(const void *s, void *r, size_t n, int t, void *c, void *q)
{
	REC(U(s), U(r), n, I(t), U(c), U(q));
	return fake_cncl_rc;
}

int cnclReduce(const void *s, void *r, size_t n, int t, int op, int root, void *c, void *q)
{
	REC(U(s), U(r), n, I(t), I(op), I(root), U(c), U(q));
	return fake_cncl_rc;
}

int cnclAlltoAll(const void *s, void *r, size_t n, int t, void *c, void *q)
{
	REC(U(s), U(r), n, I(t), U(c), U(q));
	return fake_cncl_rc;
}

int cnclSend(void *buf, size_t n, int t, int dest, void *c, void *q)
{
	REC(U(buf), n, I(t), I(dest), U(c), U(q));
	return fake_cncl_rc;
}

int cnclRecv(void *buf, size_t n, int t, int src, void *c, void *q)
{
	REC(U(buf), n, I(t), I(src), U(c), U(q));
	return fake_cncl_rc;
}

int cnclGroupStart(void)
{
	REC(0);
	return fake_cncl_rc;
}

int cnclGroupEnd(void)
{
	REC(0);
	return fake_cncl_rc;
}
