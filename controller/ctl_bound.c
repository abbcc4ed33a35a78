// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_bound.c: a lower bound on the max directed-link utilisation of any
 * routing of a demand: the NIC links, and the up-link cut of every switch
 * group (switches of tier <= T connected among themselves) per tier.
 *
 * The groups and their up-link capacities depend on the topology only:
 * they are found once per planner (union-find over the links, ~10 ms at
 * k = 74) and kept; a bound is then one pass over the flows with two small
 * arrays of group loads per tier (~1-2 ms at 10^5 flows). It is recomputed
 * over every flow on each call: the planner is not told which flows left
 * since the last plan, and a bound from stale flows could be too high.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_path_internal.h"

/* ---- the topology's groups, once per planner -------------------------------------- */

struct ctl_bound_index {
	uint32_t ntiers;  /* tiers 1 .. levels - 2 */
	uint32_t ngroups; /* over all tiers */
	uint32_t *grp;	  /* [ntiers][nedge] group of each edge switch */
	double *gcap;	  /* [ngroups] up-link capacity of the group (0: none) */
	uint32_t *edge;	  /* [nports] edge ordinal of a NIC port's switch, else NONE */
	double *gload;	  /* [2 * ngroups] scratch: out, in */
	double *nic;	  /* [2 * nports] scratch, zero between calls: out, in */
};

static uint32_t uf_find(uint32_t *uf, uint32_t x)
{
	while (uf[x] != x) {
		uf[x] = uf[uf[x]];
		x = uf[x];
	}
	return x;
}

void ctl_bound_index_free(struct ctl_bound_index *b)
{
	if (b == NULL)
		return;
	free(b->grp);
	free(b->gcap);
	free(b->edge);
	free(b->gload);
	free(b->nic);
	free(b);
}

/* Tier `tier`'s groups into b->grp[tier - 1]; capacities appended to *cap
 * (size *ncap); uf and id are scratch of nnodes. 0 or -ENOMEM. */
static int bound_tier(struct ctl_planner *p, struct ctl_bound_index *b, uint32_t tier, uint32_t *uf,
		      uint32_t *id, double **cap)
{
	const struct topo *t = p->t;
	uint32_t *grp = b->grp + (size_t)(tier - 1) * p->nedge, first = b->ngroups;
	double *c;

	for (uint32_t i = 0; i < t->nnodes; i++) {
		uf[i] = i;
		id[i] = NONE;
	}
	for (uint32_t l = 0; l < t->nlinks; l++) {
		uint32_t a = t->ports[t->links[l].a].node, bn = t->ports[t->links[l].b].node;

		if (t->nodes[a].kind == TOPO_SWITCH && t->nodes[bn].kind == TOPO_SWITCH &&
		    t->nodes[a].tier <= tier && t->nodes[bn].tier <= tier)
			uf[uf_find(uf, a)] = uf_find(uf, bn);
	}
	/* a group per root that an edge switch (a flow's end) is in */
	for (uint32_t s = 0; s < p->nsw; s++) {
		uint32_t r;

		if (p->edge_of_sw[s] == NONE)
			continue;
		r = uf_find(uf, p->node_of_sw[s]);
		if (id[r] == NONE)
			id[r] = b->ngroups++;
		grp[p->edge_of_sw[s]] = id[r];
	}
	c = realloc(*cap, sizeof(double) * (b->ngroups + 1));
	if (c == NULL)
		return -ENOMEM;
	*cap = c;
	for (uint32_t g = first; g < b->ngroups; g++)
		c[g] = 0;
	for (uint32_t l = 0; l < t->nlinks; l++) {
		uint32_t a = t->ports[t->links[l].a].node, bn = t->ports[t->links[l].b].node;
		uint32_t r;

		if (t->nodes[a].kind != TOPO_SWITCH || t->nodes[a].tier > tier ||
		    t->nodes[bn].tier <= tier)
			continue;
		r = uf_find(uf, a);
		if (id[r] != NONE)
			c[id[r]] += (double)t->links[l].rate_bps;
	}
	return 0;
}

static struct ctl_bound_index *bound_index(struct ctl_planner *p)
{
	const struct topo *t = p->t;
	struct ctl_bound_index *b = calloc(1, sizeof(*b));
	uint32_t *uf = malloc(sizeof(uint32_t) * (2 * (size_t)t->nnodes + 1));

	if (b == NULL || uf == NULL)
		goto err;
	b->ntiers = p->levels > 2 ? p->levels - 2 : 0;
	b->grp = malloc(sizeof(uint32_t) * ((size_t)b->ntiers * p->nedge + 1));
	b->edge = malloc(sizeof(uint32_t) * (t->nports + 1));
	b->nic = calloc(2 * (size_t)t->nports + 1, sizeof(double));
	if (b->grp == NULL || b->edge == NULL || b->nic == NULL)
		goto err;
	for (uint32_t tier = 1; tier <= b->ntiers; tier++)
		if (bound_tier(p, b, tier, uf, uf + t->nnodes, &b->gcap) < 0)
			goto err;
	b->gload = calloc(2 * (size_t)b->ngroups + 1, sizeof(double));
	if (b->gload == NULL)
		goto err;
	for (uint32_t q = 0; q < t->nports; q++) {
		uint32_t s = is_nic(t, q) ? p->sw_of_node[peer_node(t, q)] : NONE;

		b->edge[q] = s == NONE ? NONE : p->edge_of_sw[s];
	}
	free(uf);
	return b;
err:
	free(uf);
	ctl_bound_index_free(b);
	return NULL;
}

/* ---- lower bound ------------------------------------------------------------- */

static double nic_rate(const struct topo *t, uint32_t port)
{
	return (double)t->links[t->ports[port].link].rate_bps;
}

double ctl_bound(struct ctl_planner *p, const struct ctl_demand *d)
{
	const struct topo *t = p->t;
	struct ctl_bound_index *b = p->bidx;
	double best = 0, *nout, *nin, *gout, *gin;

	if (b == NULL) {
		b = p->bidx = bound_index(p);
		if (b == NULL)
			return NAN;
	}
	nout = b->nic;
	nin = b->nic + t->nports;
	gout = b->gload;
	gin = b->gload + b->ngroups;
	/* NIC links: every flow crosses its source NIC's link up, its
	 * destination's down. Cuts: demand from a group's hosts to hosts
	 * outside must leave through the group's links to tier + 1, and come in
	 * the same way, so max utilisation >= demand / those links' capacity. */
	for (size_t i = 0; i < d->n; i++) {
		const struct ctl_flow *f = &d->flows[i];
		double x = flow_bits(d, f);
		uint32_t es, ed;

		if (f->src_port >= t->nports || f->dst_port >= t->nports)
			continue;
		nout[f->src_port] += x;
		nin[f->dst_port] += x;
		es = b->edge[f->src_port];
		ed = b->edge[f->dst_port];
		if (es == NONE || ed == NONE)
			continue;
		for (uint32_t k = 0; k < b->ntiers; k++) {
			uint32_t gs = b->grp[(size_t)k * p->nedge + es];
			uint32_t gd = b->grp[(size_t)k * p->nedge + ed];

			if (gs != gd) {
				gout[gs] += x;
				gin[gd] += x;
			}
		}
	}
	/* the maxima, and the NIC scratch back to zero (a port's load is read
	 * at its first flow, whole) */
	for (size_t i = 0; i < d->n; i++) {
		const struct ctl_flow *f = &d->flows[i];

		if (f->src_port >= t->nports || f->dst_port >= t->nports)
			continue;
		if (nout[f->src_port] / nic_rate(t, f->src_port) > best)
			best = nout[f->src_port] / nic_rate(t, f->src_port);
		if (nin[f->dst_port] / nic_rate(t, f->dst_port) > best)
			best = nin[f->dst_port] / nic_rate(t, f->dst_port);
		nout[f->src_port] = nin[f->dst_port] = 0;
	}
	for (uint32_t g = 0; g < b->ngroups; g++) {
		if (b->gcap[g] > 0) {
			if (gout[g] / b->gcap[g] > best)
				best = gout[g] / b->gcap[g];
			if (gin[g] / b->gcap[g] > best)
				best = gin[g] / b->gcap[g];
		}
		gout[g] = gin[g] = 0;
	}
	return best;
}
