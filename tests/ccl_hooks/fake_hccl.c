// SPDX-License-Identifier: Apache-2.0
/*
 * fake_hccl: a test double of Huawei's libhccl.so (no Ascend NPU here): the
 * entry points libice-ccl.so hooks, in hccl.h's argument orders (our own
 * declarations, see ccl_hooks/ccl_native.c). Each call records its
 * arguments in fake_hccl_last and returns fake_hccl_rc; InitRootInfo /
 * InitClusterInfo / InitAll hand out made-up communicators;
 * HcclGetRankSize answers fake_hccl_size.
 */
#include <stdio.h>
#include <string.h>

#include "fake_nccl.h"

struct fake_nccl_call fake_hccl_last;
int fake_hccl_rc;
unsigned fake_hccl_size = 8;

static void rec(const char *fn, int n, const uint64_t *a)
{
	snprintf(fake_hccl_last.fn, sizeof(fake_hccl_last.fn), "%s", fn);
	memset(fake_hccl_last.a, 0, sizeof(fake_hccl_last.a));
	memcpy(fake_hccl_last.a, a, (size_t)n * sizeof(*a));
	fake_hccl_last.ncalls++;
}

#define U(x) ((uint64_t)(uintptr_t)(x))
#define REC(...)                                                                                   \
	do {                                                                                       \
		uint64_t a_[] = {__VA_ARGS__};                                                     \
		rec(__func__, sizeof(a_) / sizeof(a_[0]), a_);                                     \
	} while (0)
#define NEW_COMM(c)                                                                                \
	do {                                                                                       \
		if ((c) != NULL)                                                                   \
			*(c) = (void *)(uintptr_t)(0x7000 + fake_hccl_last.ncalls * 16);           \
	} while (0)

int HcclCommInitRootInfo(uint32_t n, const void *root_info, uint32_t r, void **c)
{
	REC(n, U(root_info), r, U(c));
	NEW_COMM(c);
	return fake_hccl_rc;
}

int HcclCommInitRootInfoConfig(uint32_t n, const void *root_info, uint32_t r, const void *cfg,
			       void **c)
{
	REC(n, U(root_info), r, U(cfg), U(c));
	NEW_COMM(c);
	return fake_hccl_rc;
}

int HcclCommInitClusterInfo(const char *path, uint32_t r, void **c)
{
	REC(U(path), r, U(c));
	NEW_COMM(c);
	return fake_hccl_rc;
}

int HcclCommInitClusterInfoConfig(const char *path, uint32_t r, void *cfg, void **c)
{
	REC(U(path), r, U(cfg), U(c));
	NEW_COMM(c);
	return fake_hccl_rc;
}

int HcclCommInitAll(uint32_t ndev, int32_t *devices, void **comms)
{
	REC(ndev, U(devices), U(comms));
	for (uint32_t i = 0; comms != NULL && i < ndev; i++)
		comms[i] = (void *)(uintptr_t)(0x70000 + fake_hccl_last.ncalls * 256 + i * 16);
	return fake_hccl_rc;
}

int HcclGetRankSize(void *c, uint32_t *n)
{
	*n = fake_hccl_size;
	return 0;
}

int HcclCommDestroy(void *c)
{
	REC(U(c));
	return fake_hccl_rc;
}

int HcclAllReduce(void *s, void *r, uint64_t n, int t, int op, void *c, void *st)
{
	REC(U(s), U(r), n, (uint64_t)t, (uint64_t)op, U(c), U(st));
	return fake_hccl_rc;
}

int HcclBroadcast(void *buf, uint64_t n, int t, uint32_t root, void *c, void *st)
{
	REC(U(buf), n, (uint64_t)t, root, U(c), U(st));
	return fake_hccl_rc;
}

int HcclReduceScatter(void *s, void *r, uint64_t n, int t, int op, void *c, void *st)
{
	REC(U(s), U(r), n, (uint64_t)t, (uint64_t)op, U(c), U(st));
	return fake_hccl_rc;
}

int HcclAllGather(void *s, void *r, uint64_t n, int t, void *c, void *st)
{
	REC(U(s), U(r), n, (uint64_t)t, U(c), U(st));
	return fake_hccl_rc;
}

int HcclReduce(void *s, void *r, uint64_t n, int t, int op, uint32_t root, void *c, void *st)
{
	REC(U(s), U(r), n, (uint64_t)t, (uint64_t)op, root, U(c), U(st));
	return fake_hccl_rc;
}

int HcclAlltoAll(const void *s, uint64_t sn, int st_, const void *r, uint64_t rn, int rt, void *c,
		 void *st)
{
	REC(U(s), sn, (uint64_t)st_, U(r), rn, (uint64_t)rt, U(c), U(st));
	return fake_hccl_rc;
}

int HcclSend(void *buf, uint64_t n, int t, uint32_t dest, void *c, void *st)
{
	REC(U(buf), n, (uint64_t)t, dest, U(c), U(st));
	return fake_hccl_rc;
}

int HcclRecv(void *buf, uint64_t n, int t, uint32_t src, void *c, void *st)
{
	REC(U(buf), n, (uint64_t)t, src, U(c), U(st));
	return fake_hccl_rc;
}

int HcclGroupStart(void)
{
	REC(0);
	return fake_hccl_rc;
}

int HcclGroupEnd(void)
{
	REC(0);
	return fake_hccl_rc;
}
