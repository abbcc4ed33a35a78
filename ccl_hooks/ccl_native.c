// SPDX-License-Identifier: Apache-2.0
/*
 * ccl_native: hooks of libice-ccl.so for collective libraries with an API of
 * their own, mapped onto the same event records as the NCCL-shaped ones
 * (ccl_wrap.c): Huawei HCCL (Ascend) and Cambricon CNCL (MLU). Forwarding,
 * sampling, groups and the communicator map are ccl_wrap.c's (ccl_hook.h);
 * only the shapes differ.
 *
 * The shapes are our own declarations, written from the public headers:
 *  - HCCL: CANN's hccl.h / hccl_types.h as carried by Ascend/pytorch
 *    (third_party/hccl/inc/hccl/, 2024-2025): HcclResult (HCCL_SUCCESS 0,
 *    HCCL_E_INTERNAL 4), HcclComm a pointer, HcclRootInfo 4108 bytes,
 *    HcclReduceOp sum 0, prod 1, max 2, min 3, HcclDataType INT8 0, INT16 1,
 *    INT32 2, FP16 3, FP32 4, INT64 5, UINT64 6, UINT8 7, UINT16 8, UINT32 9,
 *    FP64 10, BFP16 11; counts are uint64_t, ranks and roots uint32_t.
 *  - CNCL: Cambricon's cncl.h 1.25.0 (public copy, 2019-2025):
 *    cnclResult_t (CNCL_RET_SUCCESS 0, CNCL_RET_ERR_INTERNAL 1), cnclComm_t a
 *    pointer, cnclCliqueId {char data[128]; uint64_t hash}, cnclReduceOp_t
 *    sum 0, prod 1, max 2, min 3, cnclDataType_t half 0x10, bfloat16 0x11,
 *    float 0x12, int8 0x20, int16 0x21, int32 0x22, int64 0x23, uint8 0x30,
 *    uint16 0x31, uint32 0x32, uint64 0x33; counts are size_t.
 * Both reduction numberings equal NCCL's, so redop passes as is; datatypes
 * are renumbered to NCCL's (none for int16/uint16: dtype -1, bytes right).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ccl_hook.h"
#include "ccl_internal.h"

/* ---- HCCL */

#define CCL_HCCL_SUCCESS    0
#define CCL_HCCL_E_INTERNAL 4
#define CCL_HCCL_ROOT_INFO  4108 /* sizeof(HcclRootInfo) */

enum ccl_hccl_fn {
#define CCL_HCCL_ENUM(a, name) CCL_FN_##name,
	CCL_HCCL_FUNCS(CCL_HCCL_ENUM, _) CCL_HCCL_HELPERS(CCL_HCCL_ENUM, _)
#undef CCL_HCCL_ENUM
		CCL_HCCL_COUNT
};
_Static_assert(CCL_HCCL_COUNT <= CCL_FN_MAX, "CCL_FN_MAX too small for CCL_HCCL_FUNCS");

static const char *const ccl_hccl_names[CCL_HCCL_COUNT] = {
#define CCL_HCCL_NAME(a, name) [CCL_FN_##name] = #name,
	CCL_HCCL_FUNCS(CCL_HCCL_NAME, _) CCL_HCCL_HELPERS(CCL_HCCL_NAME, _)
#undef CCL_HCCL_NAME
};

static struct ccl_vendor ccl_hccl = {"", "libhccl.so", ccl_hccl_names, "hccl", {0}, {0}};

static struct ccl_dt ccl_hccl_dt(int t)
{
	/* HcclDataType -> NCCL's number and bytes (-1: NCCL has none) */
	static const struct {
		signed char nccl;
		unsigned char size;
	} map[] = {{0, 1}, {-1, 2}, {2, 4},  {6, 2}, {7, 4}, {4, 8},
		   {5, 8}, {1, 1},  {-1, 2}, {3, 4}, {8, 8}, {9, 2}};
	struct ccl_dt dt = {.nccl = (uint32_t)-1, .size = 0};

	if (t >= 0 && (size_t)t < sizeof(map) / sizeof(map[0])) {
		dt.nccl = (uint32_t)(int32_t)map[t].nccl;
		dt.size = map[t].size;
	}
	return dt;
}

#define CCL_HCCL_REAL(name, ...)                                                                   \
	int (*real)(__VA_ARGS__) = (int (*)(__VA_ARGS__))ccl_real(&ccl_hccl, CCL_FN_##name);       \
	if (real == NULL)                                                                          \
	return CCL_HCCL_E_INTERNAL

/* An HCCL communicator came up: its rank, and nranks from the library when
 * the call did not say (-1). */
static void ccl_hccl_added(void *comm, uint64_t id, uint32_t rank, int nranks, uint64_t ts)
{
	if (comm == NULL)
		return;
	if (nranks < 0) {
		int (*size)(void *, uint32_t *) =
			(int (*)(void *, uint32_t *))ccl_real(&ccl_hccl, CCL_FN_HcclGetRankSize);
		uint32_t n = 0;

		if (size != NULL && size(comm, &n) == CCL_HCCL_SUCCESS)
			nranks = (int)n;
	}
	ccl_comm_added(&ccl_hccl, comm, id, (int)rank, nranks, ts);
}

/* Every rank of a rank-table communicator reads the same file: its contents
 * are the shared id (the path when it cannot be read). */
static uint64_t ccl_hccl_cluster_id(const char *path)
{
	static char buf[1 << 16];
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	uint64_t id;
	FILE *f;
	size_t n = 0;

	if (path == NULL)
		return 0;
	pthread_mutex_lock(&lock);
	f = fopen(path, "re");
	if (f != NULL) {
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
	}
	id = n > 0 ? ccl_comm_hash(buf, n) : ccl_comm_hash(path, strlen(path));
	pthread_mutex_unlock(&lock);
	return id;
}

CCL_EXPORT int HcclCommInitRootInfo(uint32_t nranks, const void *root_info, uint32_t rank,
				    void **comm)
{
	CCL_HCCL_REAL(HcclCommInitRootInfo, uint32_t, const void *, uint32_t, void **);
	uint64_t ts = ice_wall_ns();
	int rc = real(nranks, root_info, rank, comm);

	if (rc == CCL_HCCL_SUCCESS && comm != NULL && root_info != NULL)
		ccl_hccl_added(*comm, ccl_comm_hash(root_info, CCL_HCCL_ROOT_INFO), rank,
			       (int)nranks, ts);
	return rc;
}

CCL_EXPORT int HcclCommInitRootInfoConfig(uint32_t nranks, const void *root_info, uint32_t rank,
					  const void *config, void **comm)
{
	CCL_HCCL_REAL(HcclCommInitRootInfoConfig, uint32_t, const void *, uint32_t, const void *,
		      void **);
	uint64_t ts = ice_wall_ns();
	int rc = real(nranks, root_info, rank, config, comm);

	if (rc == CCL_HCCL_SUCCESS && comm != NULL && root_info != NULL)
		ccl_hccl_added(*comm, ccl_comm_hash(root_info, CCL_HCCL_ROOT_INFO), rank,
			       (int)nranks, ts);
	return rc;
}

CCL_EXPORT int HcclCommInitClusterInfo(const char *cluster_info, uint32_t rank, void **comm)
{
	CCL_HCCL_REAL(HcclCommInitClusterInfo, const char *, uint32_t, void **);
	uint64_t ts = ice_wall_ns();
	int rc = real(cluster_info, rank, comm);

	if (rc == CCL_HCCL_SUCCESS && comm != NULL && !ccl_cfg.disable)
		ccl_hccl_added(*comm, ccl_hccl_cluster_id(cluster_info), rank, -1, ts);
	return rc;
}

CCL_EXPORT int HcclCommInitClusterInfoConfig(const char *cluster_info, uint32_t rank, void *config,
					     void **comm)
{
	CCL_HCCL_REAL(HcclCommInitClusterInfoConfig, const char *, uint32_t, void *, void **);
	uint64_t ts = ice_wall_ns();
	int rc = real(cluster_info, rank, config, comm);

	if (rc == CCL_HCCL_SUCCESS && comm != NULL && !ccl_cfg.disable)
		ccl_hccl_added(*comm, ccl_hccl_cluster_id(cluster_info), rank, -1, ts);
	return rc;
}

CCL_EXPORT int HcclCommInitAll(uint32_t ndev, int32_t *devices, void **comms)
{
	CCL_HCCL_REAL(HcclCommInitAll, uint32_t, int32_t *, void **);
	uint64_t ts = ice_wall_ns();
	int rc = real(ndev, devices, comms);

	if (rc == CCL_HCCL_SUCCESS && comms != NULL) {
		uint64_t id = ccl_call_id(ts);

		for (uint32_t i = 0; i < ndev; i++)
			ccl_comm_added(&ccl_hccl, comms[i], id, (int)i, (int)ndev, ts);
	}
	return rc;
}

CCL_EXPORT int HcclCommDestroy(void *comm)
{
	CCL_HCCL_REAL(HcclCommDestroy, void *);

	ccl_comm_gone(&ccl_hccl, comm);
	return real(comm);
}

CCL_EXPORT int HcclAllReduce(void *s, void *r, uint64_t n, int t, int op, void *c, void *st)
{
	CCL_HCCL_REAL(HcclAllReduce, void *, void *, uint64_t, int, int, void *, void *);
	struct ccl_sample smp = ccl_sample_begin();
	int rc = real(s, r, n, t, op, c, st);

	ccl_op_record(&ccl_hccl, smp, rc == CCL_HCCL_SUCCESS, ICE_OP_ALLREDUCE, c, n, false,
		      ccl_hccl_dt(t), op, -1, -1);
	return rc;
}

CCL_EXPORT int HcclBroadcast(void *buf, uint64_t n, int t, uint32_t root, void *c, void *st)
{
	CCL_HCCL_REAL(HcclBroadcast, void *, uint64_t, int, uint32_t, void *, void *);
	struct ccl_sample smp = ccl_sample_begin();
	int rc = real(buf, n, t, root, c, st);

	ccl_op_record(&ccl_hccl, smp, rc == CCL_HCCL_SUCCESS, ICE_OP_BROADCAST, c, n, false,
		      ccl_hccl_dt(t), -1, (int)root, -1);
	return rc;
}

/* recv_count: each rank's share; the operation is nranks of them */
CCL_EXPORT int HcclReduceScatter(void *s, void *r, uint64_t recv_count, int t, int op, void *c,
				 void *st)
{
	CCL_HCCL_REAL(HcclReduceScatter, void *, void *, uint64_t, int, int, void *, void *);
	struct ccl_sample smp = ccl_sample_begin();
	int rc = real(s, r, recv_count, t, op, c, st);

	ccl_op_record(&ccl_hccl, smp, rc == CCL_HCCL_SUCCESS, ICE_OP_REDUCESCATTER, c, recv_count,
		      true, ccl_hccl_dt(t), op, -1, -1);
	return rc;
}

CCL_EXPORT int HcclAllGather(void *s, void *r, uint64_t send_count, int t, void *c, void *st)
{
	CCL_HCCL_REAL(HcclAllGather, void *, void *, uint64_t, int, void *, void *);
	struct ccl_sample smp = ccl_sample_begin();
	int rc = real(s, r, send_count, t, c, st);

	ccl_op_record(&ccl_hccl, smp, rc == CCL_HCCL_SUCCESS, ICE_OP_ALLGATHER, c, send_count, true,
		      ccl_hccl_dt(t), -1, -1, -1);
	return rc;
}

CCL_EXPORT int HcclReduce(void *s, void *r, uint64_t n, int t, int op, uint32_t root, void *c,
			  void *st)
{
	CCL_HCCL_REAL(HcclReduce, void *, void *, uint64_t, int, int, uint32_t, void *, void *);
	struct ccl_sample smp = ccl_sample_begin();
	int rc = real(s, r, n, t, op, root, c, st);

	ccl_op_record(&ccl_hccl, smp, rc == CCL_HCCL_SUCCESS, ICE_OP_REDUCE, c, n, false,
		      ccl_hccl_dt(t), op, (int)root, -1);
	return rc;
}

/* send_count elements to each rank, of send_type */
CCL_EXPORT int HcclAlltoAll(const void *s, uint64_t send_count, int send_type, const void *r,
			    uint64_t recv_count, int recv_type, void *c, void *st)
{
	CCL_HCCL_REAL(HcclAlltoAll, const void *, uint64_t, int, const void *, uint64_t, int,
		      void *, void *);
	struct ccl_sample smp = ccl_sample_begin();
	int rc = real(s, send_count, send_type, r, recv_count, recv_type, c, st);

	ccl_op_record(&ccl_hccl, smp, rc == CCL_HCCL_SUCCESS, ICE_OP_ALLTOALL, c, send_count, true,
		      ccl_hccl_dt(send_type), -1, -1, -1);
	return rc;
}

CCL_EXPORT int HcclSend(void *buf, uint64_t n, int t, uint32_t dest, void *c, void *st)
{
	CCL_HCCL_REAL(HcclSend, void *, uint64_t, int, uint32_t, void *, void *);
	struct ccl_sample smp = ccl_sample_begin();
	int rc = real(buf, n, t, dest, c, st);

	ccl_op_record(&ccl_hccl, smp, rc == CCL_HCCL_SUCCESS, ICE_OP_SEND, c, n, false,
		      ccl_hccl_dt(t), -1, -1, (int)dest);
	return rc;
}

CCL_EXPORT int HcclRecv(void *buf, uint64_t n, int t, uint32_t src, void *c, void *st)
{
	CCL_HCCL_REAL(HcclRecv, void *, uint64_t, int, uint32_t, void *, void *);
	struct ccl_sample smp = ccl_sample_begin();
	int rc = real(buf, n, t, src, c, st);

	ccl_op_record(&ccl_hccl, smp, rc == CCL_HCCL_SUCCESS, ICE_OP_RECV, c, n, false,
		      ccl_hccl_dt(t), -1, -1, (int)src);
	return rc;
}

CCL_EXPORT int HcclGroupStart(void)
{
	CCL_HCCL_REAL(HcclGroupStart, void);
	int rc = real();

	ccl_group_started(rc == CCL_HCCL_SUCCESS);
	return rc;
}

CCL_EXPORT int HcclGroupEnd(void)
{
	CCL_HCCL_REAL(HcclGroupEnd, void);
	int rc = real();

	ccl_group_ended(rc == CCL_HCCL_SUCCESS);
	return rc;
}

/* ---- CNCL */

#define CCL_CNCL_SUCCESS      0
#define CCL_CNCL_ERR_INTERNAL 1
#define CCL_CNCL_CLIQUE_ID    128 /* cnclCliqueId.data */

enum ccl_cncl_fn {
#define CCL_CNCL_ENUM(a, name) CCL_FN_##name,
	CCL_CNCL_FUNCS(CCL_CNCL_ENUM, _) CCL_CNCL_HELPERS(CCL_CNCL_ENUM, _)
#undef CCL_CNCL_ENUM
		CCL_CNCL_COUNT
};
_Static_assert(CCL_CNCL_COUNT <= CCL_FN_MAX, "CCL_FN_MAX too small for CCL_CNCL_FUNCS");

static const char *const ccl_cncl_names[CCL_CNCL_COUNT] = {
#define CCL_CNCL_NAME(a, name) [CCL_FN_##name] = #name,
	CCL_CNCL_FUNCS(CCL_CNCL_NAME, _) CCL_CNCL_HELPERS(CCL_CNCL_NAME, _)
#undef CCL_CNCL_NAME
};

static struct ccl_vendor ccl_cncl = {"", "libcncl.so", ccl_cncl_names, "cncl", {0}, {0}};

static struct ccl_dt ccl_cncl_dt(int t)
{
	/* cnclDataType_t: the high nibble is the kind (0x1 float, 0x2 signed,
	 * 0x3 unsigned), the low one the width's rank */
	static const struct {
		short cncl;
		signed char nccl;
		unsigned char size;
	} map[] = {
		{0x10, 6, 2},  {0x11, 9, 2}, {0x12, 7, 4}, {0x20, 0, 1},
		{0x21, -1, 2}, {0x22, 2, 4}, {0x23, 4, 8}, {0x30, 1, 1},
		{0x31, -1, 2}, {0x32, 3, 4}, {0x33, 5, 8},
	};
	struct ccl_dt dt = {.nccl = (uint32_t)-1, .size = 0};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (map[i].cncl == t) {
			dt.nccl = (uint32_t)(int32_t)map[i].nccl;
			dt.size = map[i].size;
		}
	return dt;
}

#define CCL_CNCL_REAL(name, ...)                                                                   \
	int (*real)(__VA_ARGS__) = (int (*)(__VA_ARGS__))ccl_real(&ccl_cncl, CCL_FN_##name);       \
	if (real == NULL)                                                                          \
	return CCL_CNCL_ERR_INTERNAL

/* num_comm communicators of this process in a clique of nrank; without a
 * clique id (one process owns the clique) the id is this call's own. */
CCL_EXPORT int cnclInitComms(void **comms, int num_comm, const int *dev_list, const int *rank_list,
			     int nrank, void *clique_id)
{
	CCL_CNCL_REAL(cnclInitComms, void **, int, const int *, const int *, int, void *);
	uint64_t ts = ice_wall_ns();
	int rc = real(comms, num_comm, dev_list, rank_list, nrank, clique_id);

	if (rc == CCL_CNCL_SUCCESS && comms != NULL) {
		uint64_t id = clique_id != NULL ? ccl_comm_hash(clique_id, CCL_CNCL_CLIQUE_ID)
						: ccl_call_id(ts);

		for (int i = 0; i < num_comm; i++)
			ccl_comm_added(&ccl_cncl, comms[i], id,
				       rank_list != NULL ? rank_list[i] : i, nrank, ts);
	}
	return rc;
}

CCL_EXPORT int cnclFreeComm(void *comm)
{
	CCL_CNCL_REAL(cnclFreeComm, void *);

	ccl_comm_gone(&ccl_cncl, comm);
	return real(comm);
}

CCL_EXPORT int cnclAbortComm(void *comm)
{
	CCL_CNCL_REAL(cnclAbortComm, void *);

	ccl_comm_gone(&ccl_cncl, comm);
	return real(comm);
}

CCL_EXPORT int cnclDestroyComms(void **comms, int num_comm)
{
	CCL_CNCL_REAL(cnclDestroyComms, void **, int);

	for (int i = 0; comms != NULL && i < num_comm; i++)
		ccl_comm_gone(&ccl_cncl, comms[i]);
	return real(comms, num_comm);
}

CCL_EXPORT int cnclAllReduce(const void *s, void *r, size_t n, int t, int op, void *c, void *q)
{
	CCL_CNCL_REAL(cnclAllReduce, const void *, void *, size_t, int, int, void *, void *);
	struct ccl_sample smp = ccl_sample_begin();
	int rc = real(s, r, n, t, op, c, q);

	ccl_op_record(&ccl_cncl, smp, rc == CCL_CNCL_SUCCESS, ICE_OP_ALLREDUCE, c, n, false,
		      ccl_cncl_dt(t), op, -1, -1);
	return rc;
}

CCL_EXPORT int cnclBroadcast(const void *s, void *r, size_t n, int t, int root, void *c, void *q)
{
	CCL_CNCL_REAL(cnclBroadcast, const void *, void *, size_t, int, int, void *, void *);
	struct ccl_sample smp = ccl_sample_begin();
	int rc = real(s, r, n, t, root, c, q);

	ccl_op_record(&ccl_cncl, smp, rc == CCL_CNCL_SUCCESS, ICE_OP_BROADCAST, c, n, false,
		      ccl_cncl_dt(t), -1, root, -1);
	return rc;
}

/* the in-place broadcast */
CCL_EXPORT int cnclBcast(void *buf, size_t n, int t, int root, void *c, void *q)
{
	CCL_CNCL_REAL(cnclBcast, void *, size_t, int, int, void *, void *);
	struct ccl_sample smp = ccl_sample_begin();
	int rc = real(buf, n, t, root, c, q);

	ccl_op_record(&ccl_cncl, smp, rc == CCL_CNCL_SUCCESS, ICE_OP_BROADCAST, c, n, false,
		      ccl_cncl_dt(t), -1, root, -1);
	return rc;
}

/* n: the receive buffer's count, one rank's share */
CCL_EXPORT int cnclReduceScatter(const void *s, void *r, size_t n, int t, int op, void *c, void *q)
{
	CCL_CNCL_REAL(cnclReduceScatter, const void *, void *, size_t, int, int, void *, void *);
	struct ccl_sample smp = ccl_sample_begin();
	int rc = real(s, r, n, t, op, c, q);

	ccl_op_record(&ccl_cncl, smp, rc == CCL_CNCL_SUCCESS, ICE_OP_REDUCESCATTER, c, n, true,
		      ccl_cncl_dt(t), op, -1, -1);
	return rc;
}

CCL_EXPORT int cnclAllGather(const void *s, void *r, size_t n, int t, void *c, void *q)
{
	CCL_CNCL_REAL(cnclAllGather, const void *, void *, size_t, int, void *, void *);
	struct ccl_sample smp = ccl_sample_begin();
	int rc = real(s, r, n, t, c, q);

	ccl_op_record(&ccl_cncl, smp, rc == CCL_CNCL_SUCCESS, ICE_OP_ALLGATHER, c, n, true,
		      ccl_cncl_dt(t), -1, -1, -1);
	return rc;
}

CCL_EXPORT int cnclReduce(const void *s, void *r, size_t n, int t, int op, int root, void *c,
			  void *q)
{
	CCL_CNCL_REAL(cnclReduce, const void *, void *, size_t, int, int, int, void *, void *);
	struct ccl_sample smp = ccl_sample_begin();
	int rc = real(s, r, n, t, op, root, c, q);

	ccl_op_record(&ccl_cncl, smp, rc == CCL_CNCL_SUCCESS, ICE_OP_REDUCE, c, n, false,
		      ccl_cncl_dt(t), op, root, -1);
	return rc;
}

/* n elements to each rank */
CCL_EXPORT int cnclAlltoAll(const void *s, void *r, size_t n, int t, void *c, void *q)
{
	CCL_CNCL_REAL(cnclAlltoAll, const void *, void *, size_t, int, void *, void *);
	struct ccl_sample smp = ccl_sample_begin();
	int rc = real(s, r, n, t, c, q);

	ccl_op_record(&ccl_cncl, smp, rc == CCL_CNCL_SUCCESS, ICE_OP_ALLTOALL, c, n, true,
		      ccl_cncl_dt(t), -1, -1, -1);
	return rc;
}

CCL_EXPORT int cnclSend(void *buf, size_t n, int t, int dest, void *c, void *q)
{
	CCL_CNCL_REAL(cnclSend, void *, size_t, int, int, void *, void *);
	struct ccl_sample smp = ccl_sample_begin();
	int rc = real(buf, n, t, dest, c, q);

	ccl_op_record(&ccl_cncl, smp, rc == CCL_CNCL_SUCCESS, ICE_OP_SEND, c, n, false,
		      ccl_cncl_dt(t), -1, -1, dest);
	return rc;
}

CCL_EXPORT int cnclRecv(void *buf, size_t n, int t, int src, void *c, void *q)
{
	CCL_CNCL_REAL(cnclRecv, void *, size_t, int, int, void *, void *);
	struct ccl_sample smp = ccl_sample_begin();
	int rc = real(buf, n, t, src, c, q);

	ccl_op_record(&ccl_cncl, smp, rc == CCL_CNCL_SUCCESS, ICE_OP_RECV, c, n, false,
		      ccl_cncl_dt(t), -1, -1, src);
	return rc;
}

CCL_EXPORT int cnclGroupStart(void)
{
	CCL_CNCL_REAL(cnclGroupStart, void);
	int rc = real();

	ccl_group_started(rc == CCL_CNCL_SUCCESS);
	return rc;
}

CCL_EXPORT int cnclGroupEnd(void)
{
	CCL_CNCL_REAL(cnclGroupEnd, void);
	int rc = real();

	ccl_group_ended(rc == CCL_CNCL_SUCCESS);
	return rc;
}
