// SPDX-License-Identifier: Apache-2.0
/*
 * fake_verbs: a test double of the libibverbs/mlx5dv entry points the verbs
 * hook touches (no RDMA device exists here). ibv_* carry the IBVERBS_1.1
 * version like rdma-core's, so dlvsym(handle, name, "IBVERBS_1.1") finds
 * them as NCCL does. Records the attributes of the last modify.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>

#include "fake_verbs.h"

struct ibv_qp_attr fake_verbs_last_attr;
int fake_verbs_last_mask;
int fake_verbs_modifies;
int fake_verbs_refuse_label; /* EINVAL for a non-zero flow label */
uint16_t fake_verbs_udp_sport;
uint32_t fake_verbs_next_qpn = 0x100;
uint32_t fake_verbs_local_ip = 0x014dff0a; /* 10.255.77.1, network order */
uint32_t fake_verbs_rate_kbps;		   /* last rate limit set */
int fake_verbs_rate_calls;
int fake_verbs_refuse_rate; /* EINVAL for a non-zero rate limit */

/* ibv_modify_qp_rate_limit() is inline in verbs.h: it calls the context's
 * op, so the QPs carry an extended context whose op is this one. */
static int fake_rate_limit(struct ibv_qp *qp, struct ibv_qp_rate_limit_attr *attr)
{
	fake_verbs_rate_calls++;
	if (fake_verbs_refuse_rate && attr->rate_limit != 0)
		return EINVAL;
	fake_verbs_rate_kbps = attr->rate_limit;
	return 0;
}

static struct verbs_context fake_vctx = {
	.modify_qp_rate_limit = fake_rate_limit,
	.sz = sizeof(struct verbs_context),
	.context = {.abi_compat = __VERBS_ABI_IS_EXTENDED},
};

struct ibv_qp *fake_ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp *qp = calloc(1, sizeof(*qp));

	if (qp == NULL)
		return NULL;
	qp->qp_num = fake_verbs_next_qpn++;
	qp->pd = pd;
	qp->context = &fake_vctx.context;
	return qp;
}
__asm__(".symver fake_ibv_create_qp, ibv_create_qp@@IBVERBS_1.1");

int fake_ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	if (fake_verbs_refuse_label && (mask & IBV_QP_AV) && attr->ah_attr.grh.flow_label != 0)
		return EINVAL;
	fake_verbs_last_attr = *attr;
	fake_verbs_last_mask = mask;
	fake_verbs_modifies++;
	return 0;
}
__asm__(".symver fake_ibv_modify_qp, ibv_modify_qp@@IBVERBS_1.1");

int fake_ibv_destroy_qp(struct ibv_qp *qp)
{
	free(qp);
	return 0;
}
__asm__(".symver fake_ibv_destroy_qp, ibv_destroy_qp@@IBVERBS_1.1");

int fake_ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = gid->raw[11] = 0xff;
	memcpy(gid->raw + 12, &fake_verbs_local_ip, 4);
	return 0;
}
__asm__(".symver fake_ibv_query_gid, ibv_query_gid@@IBVERBS_1.1");

int mlx5dv_modify_qp_udp_sport(struct ibv_qp *qp, uint16_t udp_sport)
{
	fake_verbs_udp_sport = udp_sport;
	return 0;
}
