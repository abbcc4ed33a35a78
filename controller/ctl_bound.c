// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_bound.c: a lower bound on the max directed-link utilisation of any
 * routing of a demand: the NIC links, and the up-link cut of every switch
 * group (switches of tier <= T connected among themselves) per tier.
 *
 * The groups and their up-link capacities depend on the topology only:
 * they are found once per planner (union-find over the links, ~10 ms at
 * k = 74) and kept; a bound is then one pass over the flows with two small
 * arrays of group loads per tier. The loads are kept with the flows they
 * are of (by position): a call whose flows are the last call's plus more
 * (an arriving job) only adds the new ones (~1 ms at 10^5 flows, the check
 * that the others are the same); any other change counts every flow again
 * (~7-10 ms): a bound from stale flows could be too high.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_path_internal.h"

/* ---- the topology's groups, once per planner -------------------------------------- */

struct ctl_bound_flow {
	uint32_t src, dst; /* NIC ports, NONE: not counted */
	double x;	   /* bits or bit/s */
};

struct ctl_bound_index {
	uint32_t ntiers;  /* tiers 1 .. levels - 2 */
	uint32_t ngroups; /* over all tiers */
	uint32_t *grp;	  /* [ntiers][nedge] group of each edge switch */
	double *gcap;	  /* [ngroups] up-link capacity of the group (0: none) */
	uint32_t *edge;	  /* [nports] edge ordinal of a NIC port's switch, else NONE */
	double *gload;	  /* [2 * ngroups] out, in: of the flows in led */
	double *nic;	  /* [2 * nports] out, in: of the flows in led (others 0) */
	/* the flows the loads are of, by position, and their bound */
	struct ctl_bound_flow *led;
	uint32_t nled;
	double best;
	bool kept;
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
	free(b->led);
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

static struct ctl_bound_flow bound_flow(const struct topo *t, const struct ctl_demand *d,
					const struct ctl_flow *f)
{
	if (f->src_port >= t->nports || f->dst_port >= t->nports)
		return (struct ctl_bound_flow){.src = NONE, .dst = NONE};
	return (struct ctl_bound_flow){
		.src = f->src_port, .dst = f->dst_port, .x = flow_bits(d, f)};
}

/* Adds x of a flow to its NIC links and, where it leaves a group, to the
 * group's way out and the destination group's way in (sign: +1, -1). */
static void bound_add(const struct ctl_planner *p, struct ctl_bound_index *b,
		      const struct ctl_bound_flow *e, double sign)
{
	uint32_t np = p->t->nports, es, ed;

	if (e->src == NONE)
		return;
	b->nic[e->src] += sign * e->x;
	b->nic[np + e->dst] += sign * e->x;
	es = b->edge[e->src];
	ed = b->edge[e->dst];
	if (es == NONE || ed == NONE)
		return;
	for (uint32_t k = 0; k < b->ntiers; k++) {
		uint32_t gs = b->grp[(size_t)k * p->nedge + es];
		uint32_t gd = b->grp[(size_t)k * p->nedge + ed];

		if (gs != gd) {
			b->gload[gs] += sign * e->x;
			b->gload[b->ngroups + gd] += sign * e->x;
		}
	}
}

/* The largest utilisation the flow's NIC links and groups force. */
static double bound_of(const struct ctl_planner *p, const struct ctl_bound_index *b,
		       const struct ctl_bound_flow *e)
{
	const struct topo *t = p->t;
	double best = 0;
	uint32_t es, ed;

	if (e->src == NONE)
		return 0;
	if (b->nic[e->src] / nic_rate(t, e->src) > best)
		best = b->nic[e->src] / nic_rate(t, e->src);
	if (b->nic[t->nports + e->dst] / nic_rate(t, e->dst) > best)
		best = b->nic[t->nports + e->dst] / nic_rate(t, e->dst);
	es = b->edge[e->src];
	ed = b->edge[e->dst];
	if (es == NONE || ed == NONE)
		return best;
	for (uint32_t k = 0; k < b->ntiers; k++) {
		uint32_t gs = b->grp[(size_t)k * p->nedge + es];
		uint32_t gd = b->grp[(size_t)k * p->nedge + ed];

		if (gs == gd)
			continue;
		if (b->gcap[gs] > 0 && b->gload[gs] / b->gcap[gs] > best)
			best = b->gload[gs] / b->gcap[gs];
		if (b->gcap[gd] > 0 && b->gload[b->ngroups + gd] / b->gcap[gd] > best)
			best = b->gload[b->ngroups + gd] / b->gcap[gd];
	}
	return best;
}

/* NIC links: every flow crosses its source NIC's link up, its destination's
 * down. Cuts: demand from a group's hosts to hosts outside must leave
 * through the group's links to tier + 1, and come in the same way, so max
 * utilisation >= demand / those links' capacity.
 *
 * The loads are kept with the flows they are of (by position): a call whose
 * flows only add to the last call's (the same flows first, more after;
 * an arriving job) adds theirs and reads only their links and groups (the
 * others' can only have grown); any other change (a flow gone or changed)
 * counts every flow again. */
double ctl_bound(struct ctl_planner *p, const struct ctl_demand *d)
{
	const struct topo *t = p->t;
	struct ctl_bound_index *b = p->bidx;
	struct ctl_bound_flow *led;
	double best;

	if (b == NULL) {
		b = p->bidx = bound_index(p);
		if (b == NULL)
			return NAN;
	}
	if (b->kept && d->n >= b->nled) {
		bool same = true;

		for (uint32_t i = 0; i < b->nled && same; i++) {
			struct ctl_bound_flow e = bound_flow(t, d, &d->flows[i]);

			same = e.src == b->led[i].src && e.dst == b->led[i].dst &&
			       e.x == b->led[i].x;
		}
		if (same) {
			led = realloc(b->led, sizeof(*led) * (d->n + 1));
			if (led == NULL)
				goto fresh;
			b->led = led;
			best = b->best;
			for (uint32_t i = b->nled; i < d->n; i++) {
				led[i] = bound_flow(t, d, &d->flows[i]);
				bound_add(p, b, &led[i], 1);
			}
			for (uint32_t i = b->nled; i < d->n; i++)
				if (bound_of(p, b, &led[i]) > best)
					best = bound_of(p, b, &led[i]);
			b->nled = (uint32_t)d->n;
			b->best = best;
			return best;
		}
	}
fresh:
	/* from scratch: the kept flows' NIC loads back to zero, then every
	 * flow counted */
	for (uint32_t i = 0; b->kept && i < b->nled; i++)
		if (b->led[i].src != NONE)
			b->nic[b->led[i].src] = b->nic[t->nports + b->led[i].dst] = 0;
	memset(b->gload, 0, sizeof(double) * 2 * b->ngroups);
	b->kept = false;
	best = 0;
	led = realloc(b->led, sizeof(*led) * (d->n + 1));
	if (led != NULL) {
		b->led = led;
		b->nled = (uint32_t)d->n;
	}
	for (size_t i = 0; i < d->n; i++) {
		struct ctl_bound_flow e = bound_flow(t, d, &d->flows[i]);

		if (led != NULL)
			led[i] = e;
		bound_add(p, b, &e, 1);
	}
	for (size_t i = 0; i < d->n; i++) {
		struct ctl_bound_flow e = bound_flow(t, d, &d->flows[i]);
		double x = bound_of(p, b, &e);

		best = x > best ? x : best;
	}
	for (uint32_t g = 0; g < b->ngroups; g++) {
		if (b->gcap[g] > 0) {
			if (b->gload[g] / b->gcap[g] > best)
				best = b->gload[g] / b->gcap[g];
			if (b->gload[b->ngroups + g] / b->gcap[g] > best)
				best = b->gload[b->ngroups + g] / b->gcap[g];
		}
	}
	if (led != NULL) {
		b->kept = true;
		b->best = best;
	} else {
		/* no ledger: nothing kept, the loads back to zero */
		for (size_t i = 0; i < d->n; i++) {
			struct ctl_bound_flow e = bound_flow(t, d, &d->flows[i]);

			if (e.src != NONE)
				b->nic[e.src] = b->nic[t->nports + e.dst] = 0;
		}
	}
	return best;
}
