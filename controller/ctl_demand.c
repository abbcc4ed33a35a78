// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_demand.c: the demand model (flows between NICs) and the flows of
 * announced collectives, plus rdma-core's default source port.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

void ctl_demand_init(struct ctl_demand *d, enum ctl_unit unit)
{
	memset(d, 0, sizeof(*d));
	d->unit = unit;
}

void ctl_demand_fini(struct ctl_demand *d)
{
	if (d == NULL)
		return;
	free(d->flows);
	d->flows = NULL;
	d->n = d->cap = 0;
}

int ctl_demand_add(struct ctl_demand *d, const struct ctl_flow *f)
{
	struct ctl_flow *x;

	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 64;
		struct ctl_flow *nf = realloc(d->flows, cap * sizeof(*nf));

		if (nf == NULL)
			return -ENOMEM;
		d->flows = nf;
		d->cap = cap;
	}
	x = &d->flows[d->n++];
	*x = *f;
	x->ecmp.idx = -1;
	x->ecmp.nhops = 0;
	x->sport = 0;
	x->start_bps = x->target_bps = x->max_bps = 0;
	return 0;
}

static const char *const coll_names[CTL_COLL_OP_MAX] = {
	[CTL_COLL_ANY] = "any",
	[CTL_COLL_ALL_REDUCE] = "all_reduce",
	[CTL_COLL_REDUCE_SCATTER] = "reduce_scatter",
	[CTL_COLL_ALL_GATHER] = "all_gather",
	[CTL_COLL_ALL_TO_ALL] = "all_to_all",
	[CTL_COLL_BROADCAST] = "broadcast",
	[CTL_COLL_SEND_RECV] = "send_recv",
};

const char *ctl_coll_op_name(enum ctl_coll_op op)
{
	return (unsigned)op < CTL_COLL_OP_MAX ? coll_names[op] : "?";
}

int ctl_coll_op_parse(const char *s)
{
	for (int i = 0; i < CTL_COLL_OP_MAX; i++)
		if (strcmp(s, coll_names[i]) == 0)
			return i;
	return -1;
}

static bool is_nic(const struct topo *t, uint32_t port)
{
	return port < t->nports && t->nodes[t->ports[port].node].kind == TOPO_HOST;
}

struct coll_ctx {
	struct ctl_demand *d;
	const struct topo *t;
	enum ctl_coll_op op;
	uint64_t bytes, coll_id;
	uint32_t qps, qpn_base, ordinal;
	uint8_t tclass;
};

static int add_conn(struct coll_ctx *c, uint32_t src, uint32_t dst, uint64_t amount)
{
	for (uint32_t q = 0; q < c->qps; q++) {
		struct ctl_flow f = {
			.src_port = src,
			.dst_port = dst,
			.demand = amount / c->qps + (q < amount % c->qps ? 1 : 0),
			.host = c->t->ports[src].node,
			.lqpn = (c->qpn_base + c->ordinal) & 0xffffff,
			.rqpn = (c->qpn_base + 0x400000 + c->ordinal) & 0xffffff,
			.tclass = c->tclass,
			.flags = CTL_FLOW_ANNOUNCED,
			.op = c->op,
			.coll_id = c->coll_id,
			.msg_bytes = c->bytes,
			.path = {.idx = -1},
		};
		int ret;

		c->ordinal++;
		if (src == dst)
			continue; /* a rank talking to itself: no network flow */
		ret = ctl_demand_add(c->d, &f);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int ctl_demand_add_collective(struct ctl_demand *d, const struct topo *t, enum ctl_coll_op op,
			      uint64_t bytes, const uint32_t *nics, uint32_t nranks, uint32_t qps,
			      uint64_t coll_id, uint8_t tclass, uint32_t qpn_base)
{
	struct coll_ctx c = {.d = d,
			     .t = t,
			     .op = op,
			     .bytes = bytes,
			     .coll_id = coll_id,
			     .qps = qps,
			     .qpn_base = qpn_base,
			     .tclass = tclass};
	uint64_t n = nranks, amount;
	int ret = 0;

	if (nranks < 2 || qps == 0 || op <= CTL_COLL_ANY || op >= CTL_COLL_OP_MAX)
		return -EINVAL;
	for (uint32_t i = 0; i < nranks; i++)
		if (!is_nic(t, nics[i]))
			return -EINVAL;
	switch (op) {
	case CTL_COLL_ALL_REDUCE:
		amount = (uint64_t)((unsigned __int128)bytes * 2 * (n - 1) / n);
		break;
	case CTL_COLL_REDUCE_SCATTER:
	case CTL_COLL_ALL_GATHER:
		amount = (uint64_t)((unsigned __int128)bytes * (n - 1) / n);
		break;
	case CTL_COLL_ALL_TO_ALL:
		amount = bytes / n;
		break;
	default:
		amount = bytes;
		break;
	}
	if (op == CTL_COLL_ALL_TO_ALL) {
		for (uint32_t i = 0; i < nranks && ret == 0; i++)
			for (uint32_t j = 0; j < nranks && ret == 0; j++)
				if (i != j)
					ret = add_conn(&c, nics[i], nics[j], amount);
		return ret;
	}
	for (uint32_t i = 0; i < nranks && ret == 0; i++) {
		if (op == CTL_COLL_BROADCAST && i == nranks - 1)
			break;
		ret = add_conn(&c, nics[i], nics[(i + 1) % nranks], amount);
	}
	return ret;
}
