// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_bound.c: a lower bound on the max directed-link utilisation of any
 * routing of a demand: the NIC links, and the up-link cut of every switch
 * group (switches of tier <= T connected among themselves) per tier.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_path_internal.h"

/* ---- lower bound ------------------------------------------------------------- */

static uint32_t uf_find(uint32_t *uf, uint32_t x)
{
	while (uf[x] != x) {
		uf[x] = uf[uf[x]];
		x = uf[x];
	}
	return x;
}

double ctl_bound(struct ctl_planner *p, const struct ctl_demand *d)
{
	const struct topo *t = p->t;
	double *out = calloc(2 * (size_t)t->nnodes + 2 * (size_t)t->nports + 2, sizeof(double));
	double *in, *cap, *nout, *nin, best = 0;
	uint32_t *uf = malloc(sizeof(uint32_t) * (t->nnodes + 1));

	if (out == NULL || uf == NULL) {
		free(out);
		free(uf);
		return NAN;
	}
	in = out + t->nnodes;
	nout = in + t->nnodes;
	nin = nout + t->nports;
	/* NIC links: every flow crosses its source NIC's link up, its destination's down */
	for (size_t i = 0; i < d->n; i++) {
		nout[d->flows[i].src_port] += flow_bits(d, &d->flows[i]);
		nin[d->flows[i].dst_port] += flow_bits(d, &d->flows[i]);
	}
	for (uint32_t q = 0; q < t->nports; q++) {
		double c = (double)t->links[t->ports[q].link].rate_bps;

		if (nout[q] / c > best)
			best = nout[q] / c;
		if (nin[q] / c > best)
			best = nin[q] / c;
	}
	/* Cuts: the switches of tier <= tier form groups (connected through
	 * links among them); demand from a group's hosts to hosts outside must
	 * leave through links from the group to tier + 1, and come in the same
	 * way, so max utilisation >= demand / those links' capacity. */
	cap = calloc(t->nnodes + 1, sizeof(double));
	if (cap == NULL) {
		free(out);
		free(uf);
		return NAN;
	}
	for (uint32_t tier = 1; tier + 1 < p->levels; tier++) {
		for (uint32_t i = 0; i < t->nnodes; i++)
			uf[i] = i;
		memset(out, 0, sizeof(double) * 2 * t->nnodes);
		memset(cap, 0, sizeof(double) * t->nnodes);
		for (uint32_t l = 0; l < t->nlinks; l++) {
			uint32_t a = t->ports[t->links[l].a].node, b = t->ports[t->links[l].b].node;

			if (t->nodes[a].kind == TOPO_SWITCH && t->nodes[b].kind == TOPO_SWITCH &&
			    t->nodes[a].tier <= tier && t->nodes[b].tier <= tier)
				uf[uf_find(uf, a)] = uf_find(uf, b);
		}
		for (uint32_t l = 0; l < t->nlinks; l++) {
			uint32_t a = t->ports[t->links[l].a].node, b = t->ports[t->links[l].b].node;

			if (t->nodes[a].kind == TOPO_SWITCH && t->nodes[a].tier <= tier &&
			    t->nodes[b].tier > tier)
				cap[uf_find(uf, a)] += (double)t->links[l].rate_bps;
		}
		for (size_t i = 0; i < d->n; i++) {
			const struct ctl_flow *f = &d->flows[i];
			uint32_t gs = uf_find(uf, peer_node(t, f->src_port));
			uint32_t gd = uf_find(uf, peer_node(t, f->dst_port));

			if (gs != gd) {
				out[gs] += flow_bits(d, f);
				in[gd] += flow_bits(d, f);
			}
		}
		for (uint32_t g = 0; g < t->nnodes; g++) {
			if (cap[g] <= 0)
				continue;
			if (out[g] / cap[g] > best)
				best = out[g] / cap[g];
			if (in[g] / cap[g] > best)
				best = in[g] / cap[g];
		}
	}
	free(cap);
	free(out);
	free(uf);
	return best;
}
