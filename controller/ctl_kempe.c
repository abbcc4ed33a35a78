// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_kempe.c: the balanced colouring with alternating paths (Kempe
 * chains) that starts a fresh plan when every flow is movable.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_path_internal.h"

/* ---- balanced colouring with alternating paths (Kempe chains) ------------------ */

/*
 * A construction for the tiered fabrics ICE targets, before the local
 * search. A flow's route is a sequence of choices, one per branching switch
 * of its DAG (the up hops: a leaf's spine; a ToR's aggregation switch, then
 * that switch's core). Level l is the l-th choice. At level l the choice c
 * at branching switch X uses the up-link X -> child c, and (in leaf-spine
 * and fat-tree wiring) fixes the mirror down-link: the hop as far from the
 * end of the route as X's is from its start, which enters a switch R that
 * does not depend on c (the destination leaf/ToR at level 0, the
 * destination pod's aggregation switch at level 1). So a level is a
 * bipartite multigraph -- an edge X -> R per flow, coloured by its choice --
 * and its up- and mirror-link loads are the per-vertex colour counts.
 *
 * Every bipartite multigraph has an equitable C-edge-colouring (de Werra):
 * at every vertex, each colour count is floor or ceil of degree / C. We get
 * one level by level: greedy colours, then for each vertex whose most and
 * least used colours a, b differ by 2 or more, an a/b alternating trail from
 * it (a Kempe chain, kc_trail) swaps its colours, until the vertex is
 * balanced. No vertex gets worse and the sum of squared counts drops, so one
 * pass over the vertices ends with every vertex balanced.
 * With equal demands (ring, permutation, all-to-all of one job) and uniform
 * capacities that is the lower bound whenever the bound is the NIC or cut
 * bound, by König's theorem per level. Counts stand in for loads, so with
 * unequal demands this is a heuristic start; the routes are always scored
 * on real loads, and the local search and the greedy plan follow (the better
 * plan wins), so nothing here can make a plan worse.
 */
struct kc {
	uint32_t C, nv, ne;
	uint32_t *eflow;      /* [ne] flow of each edge */
	uint32_t *end;	      /* [2 ne] left vertex, right vertex */
	uint16_t *col;	      /* [ne] */
	uint32_t *cnt, *head; /* [nv C] */
	uint32_t *nx, *pv;    /* [2 ne]: lists per (vertex, colour), per edge end */
	uint32_t nleft;	      /* vertices below nleft are left (up-link) vertices */
	/* component scratch */
	uint32_t *estamp, stamp;
	uint32_t *cedge; /* the trail's edges */
	uint64_t chains;
};

static void kc_insert(struct kc *k, uint32_t e, uint32_t s)
{
	uint32_t v = k->end[2 * e + s], hd = v * k->C + k->col[e];

	k->pv[2 * e + s] = NONE;
	k->nx[2 * e + s] = k->head[hd];
	if (k->head[hd] != NONE)
		k->pv[k->head[hd]] = 2 * e + s;
	k->head[hd] = 2 * e + s;
	k->cnt[hd]++;
}

static void kc_remove(struct kc *k, uint32_t e, uint32_t s)
{
	uint32_t v = k->end[2 * e + s], hd = v * k->C + k->col[e], x = 2 * e + s;

	if (k->pv[x] != NONE)
		k->nx[k->pv[x]] = k->nx[x];
	else
		k->head[hd] = k->nx[x];
	if (k->nx[x] != NONE)
		k->pv[k->nx[x]] = k->pv[x];
	k->cnt[hd]--;
}

/*
 * One alternating trail from v, whose colour a is used at least twice more
 * than b: a, b, a, ... edges, each unused so far, until a vertex where the
 * colour the trail arrived with outnumbers the other; then the trail's edges
 * swap a and b. Vertices inside the trail keep their counts (one of each in,
 * one out); v moves one a to b, and the end vertex too, which leaves it no
 * worse. The trail can always go on where it does not stop (bipartite: a
 * vertex is always entered with the same colour), so it ends, and the sum of
 * squared counts drops at v: balancing ends. Cost: the trail's length, not
 * the a/b component's size, which at 10^5 flows is what made a fat-tree
 * k = 74 plan take a second.
 */
static void kc_trail(struct kc *k, uint32_t v, uint16_t a, uint16_t b)
{
	uint32_t u = v, ne = 0;
	uint16_t c = a;

	k->stamp++;
	for (;;) {
		uint32_t x, e, o;

		for (x = k->head[u * k->C + c]; x != NONE; x = k->nx[x])
			if (k->estamp[x / 2] != k->stamp)
				break;
		if (x == NONE)
			break; /* cannot happen (see above); stop with what we have */
		e = x / 2;
		k->estamp[e] = k->stamp;
		k->cedge[ne++] = e;
		o = k->end[2 * e + (k->end[2 * e] == u ? 1 : 0)];
		u = o;
		/* arrived with c: stop where c outnumbers the other colour */
		if (k->cnt[u * k->C + c] > k->cnt[u * k->C + (c == a ? b : a)])
			break;
		c = c == a ? b : a;
	}
	for (uint32_t i = 0; i < ne; i++) {
		uint32_t e = k->cedge[i];

		kc_remove(k, e, 0);
		kc_remove(k, e, 1);
		k->col[e] = k->col[e] == a ? b : a;
		kc_insert(k, e, 0);
		kc_insert(k, e, 1);
	}
	k->chains++;
}

static void kc_balance(struct kc *k)
{
	for (uint32_t v = 0; v < k->nv; v++)
		for (;;) {
			const uint32_t *c = k->cnt + (size_t)v * k->C;
			uint16_t a = 0, b = 0;

			for (uint16_t x = 1; x < k->C; x++) {
				if (c[x] > c[a])
					a = x;
				if (c[x] < c[b])
					b = x;
			}
			if (c[a] < c[b] + 2)
				break;
			kc_trail(k, v, a, b);
		}
}

/* Walk f's DAG from src taking choice ch[l] at its l-th branching node.
 * Fills r; the lvl-th branching node's hop and fan-out go to *bhop, *bn
 * (*bn 0 when the route has no such level). */
static void kc_walk(const struct ctl_planner *p, const struct dag *g, uint32_t src,
		    const struct ctl_flow *f, const uint16_t *ch, struct ctl_route *r, uint32_t lvl,
		    uint32_t *bhop, uint32_t *bn)
{
	const struct topo *t = p->t;
	uint32_t dn = src, h = 0, idx = 0, level = 0;

	*bn = 0;
	r->dlink[h++] = dlink_of(t, f->src_port);
	while (h < MAXH) {
		const struct dag_node *n = &g->nodes[dn];
		struct dag_nh nh;
		uint32_t i = 0;

		if (n->n == 0) {
			r->dlink[h++] = dlink_of(t, t->ports[f->dst_port].peer);
			break;
		}
		if (n->n > 1) {
			i = ch[level] < n->n ? ch[level] : n->n - 1;
			if (level == lvl) {
				*bhop = h;
				*bn = n->n;
			}
			level++;
		}
		nh = dag_nh_at(p, g, n, i);
		r->dlink[h++] = nh.dl;
		idx += nh.off;
		dn = nh.child;
	}
	r->nhops = h;
	r->idx = (int32_t)idx;
}

static void kc_free(struct kc *k)
{
	free(k->eflow);
	free(k->end);
	free(k->col);
	free(k->cnt);
	free(k->head);
	free(k->nx);
	free(k->pv);
	free(k->estamp);
	free(k->cedge);
	memset(k, 0, sizeof(*k));
}

/* Tail (sending switch) and head (receiving switch) of a directed link. */
static uint32_t dlink_tail(const struct topo *t, uint32_t dl)
{
	const struct topo_link *l = &t->links[dl / 2];

	return t->ports[(dl & 1) ? l->b : l->a].node;
}

static uint32_t dlink_head(const struct topo *t, uint32_t dl)
{
	const struct topo_link *l = &t->links[dl / 2];

	return t->ports[(dl & 1) ? l->a : l->b].node;
}

/* The level-lvl branching of flow f: hop and fan-out (0: none). */
static uint32_t kc_branch(const struct ctl_planner *p, struct ctl_demand *d, struct dag **fg,
			  const uint32_t *fsrc, const uint16_t *ch, uint32_t f, uint32_t lvl,
			  struct ctl_route *r, uint32_t *bh)
{
	uint32_t bn;

	kc_walk(p, fg[f], fsrc[f], &d->flows[f], ch + (size_t)f * MAXH, r, lvl, bh, &bn);
	return bn;
}

static int kc_alloc(struct kc *k, uint32_t ne, uint32_t nv, uint32_t C)
{
	size_t vc = (size_t)nv * C + 1;

	k->col = malloc(sizeof(uint16_t) * (ne + 1));
	k->cnt = calloc(vc, sizeof(uint32_t));
	k->head = malloc(sizeof(uint32_t) * vc);
	k->nx = malloc(sizeof(uint32_t) * 2 * (ne + 1));
	k->pv = malloc(sizeof(uint32_t) * 2 * (ne + 1));
	k->estamp = calloc(ne + 1, sizeof(uint32_t));
	k->cedge = malloc(sizeof(uint32_t) * (ne + 1));
	if (k->col == NULL || k->cnt == NULL || k->head == NULL || k->nx == NULL || k->pv == NULL ||
	    k->estamp == NULL || k->cedge == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < vc; i++)
		k->head[i] = NONE;
	k->C = C;
	k->nv = nv;
	k->ne = ne;
	return 0;
}

/* Colour one level: each movable flow whose lvl-th branching has the most
 * common fan-out C, and whose mirror hop is a down-link, is an edge. The
 * flows are walked once, in DAG order (ord), into fbn/fx/fy; edges are then
 * taken in flow order. *edges: how many. 0 or -ENOMEM. */
static int kc_level(struct ctl_planner *p, struct ctl_demand *d, const bool *movable,
		    struct dag **fg, const uint32_t *fsrc, const uint32_t *ord, uint16_t *ch,
		    uint32_t lvl, uint32_t *vmap, uint32_t *fbn, uint32_t *fx, uint32_t *fy,
		    uint64_t *chains, uint32_t *edges)
{
	const struct topo *t = p->t;
	uint32_t *hist = calloc(65536, sizeof(uint32_t)), C = 0, nl = 0, nr = 0, ne = 0;
	uint32_t *vnode = NULL;
	struct kc k = {0};
	int ret = -ENOMEM;

	*edges = 0;
	k.eflow = malloc(sizeof(uint32_t) * (d->n + 1));
	k.end = malloc(sizeof(uint32_t) * 2 * (d->n + 1));
	vnode = malloc(sizeof(uint32_t) * 2 * (d->n + 1));
	if (hist == NULL || k.eflow == NULL || k.end == NULL || vnode == NULL)
		goto out;
	for (uint32_t i = 0; i < d->n; i++) {
		uint32_t f = ord[i], bh, bn, mh;
		struct ctl_route r;

		fbn[f] = 0;
		if (!movable[f] || fg[f] == NULL)
			continue;
		bn = kc_branch(p, d, fg, fsrc, ch, f, lvl, &r, &bh);
		if (bn < 2 || bn >= 65536)
			continue;
		hist[bn]++;
		fbn[f] = bn;
		fx[f] = NONE;
		mh = r.nhops - 1 - bh;
		if (mh <= bh || !(r.dlink[mh] & 1) || (r.dlink[bh] & 1))
			continue;
		fx[f] = 2 * dlink_tail(t, r.dlink[bh]);
		fy[f] = 2 * dlink_head(t, r.dlink[mh]) + 1;
	}
	for (uint32_t c = 2; c < 65536; c++)
		if (hist[c] > 0 && (C == 0 || hist[c] >= hist[C]))
			C = c;
	ret = 0;
	if (C == 0)
		goto out;
	for (uint32_t f = 0; f < d->n; f++) {
		uint32_t x = fx[f], y = fy[f];

		if (fbn[f] != C || x == NONE)
			continue;
		if (vmap[x] == NONE) {
			vnode[nl + nr] = x;
			vmap[x] = nl++;
		}
		if (vmap[y] == NONE) {
			vnode[nl + nr] = y;
			vmap[y] = nr++;
		}
		k.eflow[ne] = f;
		k.end[2 * ne] = vmap[x];
		k.end[2 * ne + 1] = vmap[y];
		ne++;
	}
	for (uint32_t i = 0; i < nl + nr; i++)
		vmap[vnode[i]] = NONE;
	*edges = ne;
	if (ne < 2)
		goto out;
	ret = kc_alloc(&k, ne, nl + nr, C);
	if (ret < 0)
		goto out;
	k.nleft = nl;
	/* greedy colours (least used at both ends), then balance */
	for (uint32_t e = 0; e < ne; e++) {
		const uint32_t *cl, *cr;
		uint32_t best = 0;

		k.end[2 * e + 1] += nl;
		cl = k.cnt + (size_t)k.end[2 * e] * C;
		cr = k.cnt + (size_t)k.end[2 * e + 1] * C;
		for (uint32_t c = 1; c < C; c++) {
			uint32_t m = cl[c] > cr[c] ? cl[c] : cr[c];
			uint32_t mb = cl[best] > cr[best] ? cl[best] : cr[best];

			if (m < mb || (m == mb && cl[c] + cr[c] < cl[best] + cr[best]))
				best = c;
		}
		k.col[e] = (uint16_t)best;
		kc_insert(&k, e, 0);
		kc_insert(&k, e, 1);
	}
	kc_balance(&k);
	for (uint32_t e = 0; e < ne; e++)
		ch[(size_t)k.eflow[e] * MAXH + lvl] = k.col[e];
	*chains += k.chains;
out:
	free(hist);
	free(vnode);
	kc_free(&k);
	return ret;
}

/* Routes for the movable flows (all flows movable) from balanced
 * colourings, level by level. 0 or -errno. */
int ctl_kempe_plan(struct ctl_planner *p, struct ctl_demand *d, const bool *movable,
		   struct ctl_plan_stats *st)
{
	struct dag **fg = calloc(d->n + 1, sizeof(*fg));
	uint32_t *fsrc = malloc(sizeof(uint32_t) * (d->n + 1));
	uint32_t *fbn = malloc(sizeof(uint32_t) * 3 * (d->n + 1));
	uint32_t *ord = ctl_flow_order(p, d);
	uint16_t *ch = calloc((size_t)d->n * MAXH + 1, sizeof(uint16_t));
	uint32_t *vmap = malloc(sizeof(uint32_t) * 2 * (p->t->nnodes + 1));
	uint64_t chains = 0;
	int ret = -ENOMEM;

	if (fg == NULL || fsrc == NULL || fbn == NULL || ord == NULL || ch == NULL || vmap == NULL)
		goto out;
	for (uint32_t i = 0; i < 2 * p->t->nnodes; i++)
		vmap[i] = NONE;
	for (uint32_t i = 0; i < d->n; i++) {
		uint32_t f = ord[i];

		if (!movable[f])
			continue;
		ret = ctl_flow_dag(p, &d->flows[f], &fg[f], &fsrc[f]);
		if (ret < 0)
			goto out;
	}
	for (uint32_t lvl = 0; lvl < MAXH; lvl++) {
		uint32_t edges;

		ret = kc_level(p, d, movable, fg, fsrc, ord, ch, lvl, vmap, fbn, fbn + d->n + 1,
			       fbn + 2 * (d->n + 1), &chains, &edges);
		if (ret < 0)
			goto out;
		if (edges == 0)
			break;
	}
	for (uint32_t i = 0; i < d->n; i++) {
		uint32_t f = ord[i], bh, bn;

		if (movable[f])
			kc_walk(p, fg[f], fsrc[f], &d->flows[f], ch + (size_t)f * MAXH,
				&d->flows[f].path, MAXH, &bh, &bn);
	}
	st->kempe_chains += chains;
	ret = 0;
out:
	free(fg);
	free(fsrc);
	free(fbn);
	free(ord);
	free(ch);
	free(vmap);
	return ret;
}
