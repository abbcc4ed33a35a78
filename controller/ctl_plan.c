// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_plan.c: per-host plans from a planned demand (the plan format, its
 * signature and verification are common/ice_plan.c, shared with the agent).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

_Static_assert(ICE_PLAN_HOST_MAX == TOPO_NAME_MAX, "a plan names a topology node");

void ctl_host_plans_free(struct ice_host_plan *hps, uint32_t n)
{
	if (hps == NULL)
		return;
	for (uint32_t i = 0; i < n; i++)
		ice_host_plan_fini(&hps[i]);
	free(hps);
}

static int cmp_host_name(const void *a, const void *b)
{
	return strcmp(((const struct ice_host_plan *)a)->host,
		      ((const struct ice_host_plan *)b)->host);
}

int ctl_host_plans_build(const struct topo *t, const struct ctl_demand *d,
			 const struct ctl_policy *pol, uint64_t epoch, uint32_t lifetime_ms,
			 uint64_t issued_ms, struct ice_host_plan **out, uint32_t *nout)
{
	uint32_t *slot = malloc(sizeof(uint32_t) * (t->nnodes + 1)), nh = 0;
	struct ice_host_plan *hps = NULL;
	int ret = -ENOMEM;

	if (slot == NULL)
		goto err;
	for (uint32_t i = 0; i < t->nnodes; i++)
		slot[i] = UINT32_MAX;
	for (size_t i = 0; i < d->n; i++)
		if (d->flows[i].host < t->nnodes && slot[d->flows[i].host] == UINT32_MAX)
			slot[d->flows[i].host] = nh++;
	hps = calloc(nh + 1, sizeof(*hps));
	if (hps == NULL)
		goto err;
	for (uint32_t i = 0; i < t->nnodes; i++) {
		struct ice_host_plan *hp;

		if (slot[i] == UINT32_MAX)
			continue;
		hp = &hps[slot[i]];
		snprintf(hp->host, sizeof(hp->host), "%s", t->nodes[i].name);
		hp->epoch = epoch;
		hp->lifetime_ms = lifetime_ms;
		hp->issued_ms = issued_ms;
	}
	for (size_t i = 0; i < d->n; i++) {
		const struct ctl_flow *f = &d->flows[i];

		if (f->host < t->nnodes)
			hps[slot[f->host]].n++;
	}
	for (uint32_t h = 0; h < nh; h++) {
		hps[h].entries = calloc(hps[h].n + 1, sizeof(*hps[h].entries));
		if (hps[h].entries == NULL)
			goto err;
		hps[h].n = 0;
	}
	for (size_t i = 0; i < d->n; i++) {
		const struct ctl_flow *f = &d->flows[i];
		struct ice_plan_entry *e;
		uint32_t ceil;

		if (f->host >= t->nnodes)
			continue;
		e = &hps[slot[f->host]].entries[hps[slot[f->host]].n++];
		e->qpn = f->lqpn;
		e->sport = f->sport;
		e->start_mbps = ice_plan_mbps(f->start_bps);
		e->target_mbps = ice_plan_mbps(f->target_bps);
		if (e->start_mbps > e->target_mbps)
			e->start_mbps = e->target_mbps;
		e->path = f->path.idx;
		/* Without a policy or a planned rate the plan leaves DCQCN alone:
		 * the QP keeps the parameters it was started with (the fabric's
		 * baseline), so a paths-only plan changes nothing but paths. */
		e->has_dcqcn = pol != NULL || e->target_mbps != 0;
		if (pol != NULL) {
			const struct ctl_profile *pr =
				ctl_policy_match(pol, f->op, f->msg_bytes, f->coll_id, f->tclass);

			e->dcqcn = pr->params;
			/* where DCQCN is the NIC's, per priority: the profile's
			 * priority, and the traffic class that steers the QP
			 * into it (ECN bits 0: the NIC sets ECT) */
			e->has_prio = e->has_tclass = pr->has_class;
			e->prio = pr->prio;
			e->tclass = (uint8_t)(pr->dscp << 2);
		} else {
			ice_dcqcn_params_default(&e->dcqcn);
		}
		/* a planned rate: DCQCN may climb back to the flow's fair share at
		 * full capacity, not past it into the queues of its links (the
		 * ceiling: that share of the links' rates where load nobody
		 * planned cut the target, ctl_plan_ceilings) */
		ceil = f->max_bps > f->target_bps ? ice_plan_mbps(f->max_bps) : e->target_mbps;
		if (e->target_mbps != 0 &&
		    (e->dcqcn.rp_max_rate == 0 || e->dcqcn.rp_max_rate > ceil))
			e->dcqcn.rp_max_rate = ceil;
	}
	qsort(hps, nh, sizeof(*hps), cmp_host_name);
	free(slot);
	*out = hps;
	*nout = nh;
	return 0;
err:
	free(slot);
	ctl_host_plans_free(hps, nh);
	return ret;
}
