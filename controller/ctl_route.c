// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_route.c: routes over the planner's DAGs: the best route for a flow
 * given the loads (depth-first, pruned on (max utilisation, sum, index)),
 * a route by its index, every route (for swaps), the loads of a demand's
 * routes, and routes as the switches they cross (ice-probe's path names).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_path_internal.h"

/* ---- path search over the DAG ---------------------------------------------------- */

static void search_leaf(struct search *s, uint32_t h, double mx, double sum, uint32_t idx)
{
	if (s->all != NULL) {
		if (s->nall < s->capall) {
			struct ctl_route *r = &s->all[s->nall];

			r->idx = (int32_t)idx;
			r->nhops = h;
			memcpy(r->dlink, s->dl, h * sizeof(uint32_t));
			s->allmx[s->nall] = mx;
			s->nall++;
		}
		return;
	}
	if (s->match != NULL) {
		if (h == s->match->nhops &&
		    memcmp(s->dl, s->match->dlink, h * sizeof(uint32_t)) == 0) {
			s->best.idx = (int32_t)idx;
			s->found = true;
		}
		return;
	}
	if (s->want >= 0) {
		if ((int32_t)idx == s->want) {
			s->best.idx = (int32_t)idx;
			s->best.nhops = h;
			memcpy(s->best.dlink, s->dl, h * sizeof(uint32_t));
			s->found = true;
		}
		return;
	}
	if (mx < s->bmx - EPS || (mx <= s->bmx + EPS && sum < s->bsum - EPS)) {
		s->bmx = mx;
		s->bsum = sum;
		s->best.idx = (int32_t)idx;
		s->best.nhops = h;
		memcpy(s->best.dlink, s->dl, h * sizeof(uint32_t));
	}
}

int ctl_grow_begin(struct ctl_planner *p)
{
	if (p->minin == NULL) {
		p->minin = malloc(sizeof(double) * (p->nsw + 1));
		p->minin_at = calloc(p->nsw + 1, sizeof(uint32_t));
		p->outmin = calloc(2 * (size_t)p->nsw + 1, sizeof(*p->outmin));
		if (p->minin == NULL || p->outmin == NULL || p->minin_at == NULL) {
			free(p->minin);
			free(p->outmin);
			free(p->minin_at);
			p->minin = NULL;
			p->outmin = NULL;
			p->minin_at = NULL;
			return -ENOMEM;
		}
	}
	if (++p->grow_epoch == 0) { /* wrapped: no entry may look current */
		memset(p->minin_at, 0, sizeof(uint32_t) * p->nsw);
		memset(p->outmin, 0, sizeof(*p->outmin) * 2 * p->nsw);
		p->grow_epoch = 1;
	}
	p->growing = true;
	return 0;
}

void ctl_grow_end(struct ctl_planner *p)
{
	p->growing = false;
}

/* The least utilisation of a link into switch sw from its neighbours, read
 * once per growth epoch. */
static double sw_minin(struct ctl_planner *p, uint32_t sw)
{
	uint32_t lo = p->up_first[sw] < p->dn_first[sw] ? p->up_first[sw] : p->dn_first[sw];
	uint32_t n = p->up_n[sw] + p->dn_n[sw];
	double mi = INFINITY;

	if (p->minin_at[sw] == p->grow_epoch)
		return p->minin[sw];
	for (uint32_t k = lo; k < lo + n; k++) {
		uint32_t dl = p->nbrs[k].dl ^ 1;

		if (p->load[dl] / p->cap[dl] < mi)
			mi = p->load[dl] / p->cap[dl];
	}
	p->minin[sw] = mi < 0 ? 0 : mi;
	p->minin_at[sw] = p->grow_epoch;
	return p->minin[sw];
}

/* Switch sw's links up (the list from lo is its up list) or down, read once
 * per growth epoch. */
static const struct ctl_outmin *sw_outmin(struct ctl_planner *p, uint32_t sw, uint32_t lo,
					  uint32_t n)
{
	struct ctl_outmin *o = &p->outmin[2 * sw + (lo == p->up_first[sw] ? 0 : 1)];

	if (o->at == p->grow_epoch)
		return o;
	o->m1 = o->m2 = INFINITY;
	o->cnt = 0;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t dl = p->nbrs[lo + k].dl;
		double u = p->load[dl] / p->cap[dl];

		if (u < o->m1) {
			o->m2 = o->m1;
			o->m1 = u;
			o->cnt = 0;
		} else if (u > o->m1 && u < o->m2) {
			o->m2 = u;
		}
		if (u == o->m1) {
			if (o->cnt < CTL_OUTMIN_POS)
				o->pos[o->cnt] = (uint16_t)k;
			o->cnt++;
		}
	}
	if (o->m1 < 0)
		o->m1 = 0;
	if (n > UINT16_MAX)
		o->cnt = CTL_OUTMIN_POS + 1; /* positions not kept */
	o->at = p->grow_epoch;
	return o;
}

/* The (max, sum) below DAG node dn, which has one path (prune mode). */
static const struct ctl_memo *chain_memo(struct search *s, uint32_t dn)
{
	struct ctl_planner *p = s->p;
	struct ctl_memo *m = &p->memo[dn];
	const struct dag_node *n = &s->g->nodes[dn];

	if (m->stamp == p->memo_stamp)
		return m;
	if (n->n == 0) {
		m->mx = m->sum = util_add(p, s->dl_nic, s->add);
	} else {
		const struct dag_nh nh = dag_nh_at(p, s->g, n, 0);
		double u = util_add(p, nh.dl, s->add);
		const struct ctl_memo *c = chain_memo(s, nh.child);

		m->mx = u > c->mx ? u : c->mx;
		m->sum = u + c->sum;
	}
	m->stamp = p->memo_stamp;
	return m;
}

/* The one path below dn into s->dl from h on; its hop count. */
static uint32_t chain_links(struct search *s, uint32_t dn, uint32_t h)
{
	while (h < MAXH) {
		const struct dag_node *n = &s->g->nodes[dn];
		struct dag_nh nh;

		if (n->n == 0) {
			s->dl[h++] = s->dl_nic;
			break;
		}
		nh = dag_nh_at(s->p, s->g, n, 0);
		s->dl[h++] = nh.dl;
		dn = nh.child;
	}
	return h;
}

static void search_dfs(struct search *s, uint32_t dn, uint32_t h, double mx, double sum,
		       uint32_t idx)
{
	const struct dag_node *n = &s->g->nodes[dn];
	struct ctl_planner *p = s->p;
	double rest = 0, gmx = 0, gsum = INFINITY;
	const uint16_t *only = NULL; /* the next hops to look at (NULL: all) */
	uint32_t nv = n->n;

	if (s->found || h >= MAXH)
		return;
	if (s->want >= 0 && ((int64_t)s->want < idx || (int64_t)s->want >= (int64_t)idx + n->paths))
		return;
	if (s->memo && n->paths == 1) {
		/* one path below: its (max, sum) once per search, shared by the
		 * routes that reach this node (a fat-tree's core -> aggregation
		 * -> ToR -> NIC tails) */
		const struct ctl_memo *m = chain_memo(s, dn);
		double tm = mx > m->mx ? mx : m->mx;

		if (tm < s->bmx - EPS || (tm <= s->bmx + EPS && sum + m->sum < s->bsum - EPS)) {
			uint32_t nh = chain_links(s, dn, h);

			s->bmx = tm;
			s->bsum = sum + m->sum;
			s->best.idx = (int32_t)idx;
			s->best.nhops = nh;
			memcpy(s->best.dlink, s->dl, nh * sizeof(uint32_t));
		}
		return;
	}
	if (n->n == 0) { /* the destination switch: down to the NIC */
		uint32_t dl = s->dl_nic;
		double u = util_add(p, dl, s->add);

		s->dl[h] = dl;
		search_leaf(s, h + 1, mx > u ? mx : u, sum + u, idx);
		return;
	}
	/* prune mode: the hops after the next one add at least rest to the
	 * sum (a child of tier T is T hops from the NIC; a node's next hops
	 * all go up or all down), so a subtree that cannot beat the best is
	 * left unread; the route chosen is the same as without it */
	if (s->prune && s->floor > 0) {
		const struct dag_nh nh0 = dag_nh_at(p, s->g, n, 0);

		rest = s->floor * p->t->nodes[s->g->nodes[nh0.child].node].tier;
	}
	if (s->grow && n->gc != 0) {
		/* every next hop has one path, through the same node below
		 * (read once per search): what lies below a next hop is at
		 * least the least link into that node plus its own path, and
		 * the next hop at least the least link up (or down) out of
		 * this switch, or the next higher one where it is not among
		 * those at the least. Nothing is read where that cannot beat
		 * the best (the loads only grow, so bounds read earlier in
		 * the epoch still hold) */
		const struct ctl_memo *xm = chain_memo(s, n->gc - 1);
		double in = sw_minin(p, p->sw_of_node[s->g->nodes[n->gc - 1].node]) + s->floor;
		const struct ctl_outmin *om =
			sw_outmin(p, p->sw_of_node[n->node], n->first & ~DAG_IMPLICIT, n->n);
		double out = om->m1 + s->floor, out2 = om->m2 + s->floor, lm;

		gmx = in > xm->mx ? in : xm->mx;
		gsum = in + xm->sum;
		lm = mx > gmx ? mx : gmx;
		lm = lm > out ? lm : out;
		if (lm > s->bmx + EPS || (lm >= s->bmx - EPS && sum + out + gsum >= s->bsum - EPS))
			return;
		lm = lm > out2 ? lm : out2;
		if (om->cnt <= CTL_OUTMIN_POS &&
		    (lm > s->bmx + EPS ||
		     (lm >= s->bmx - EPS && sum + out2 + gsum >= s->bsum - EPS))) {
			nv = om->cnt;
			only = om->pos;
		}
	}
	for (uint32_t k = 0; k < nv && !s->found; k++) {
		uint32_t i = only != NULL ? only[k] : k;
		const struct dag_nh nh = dag_nh_at(p, s->g, n, i);
		uint32_t dl = nh.dl;
		double u = util_add(p, dl, s->add), m = mx > u ? mx : u;

		if (s->prune &&
		    (m > s->bmx + EPS || (m >= s->bmx - EPS && sum + u + rest >= s->bsum - EPS)))
			continue;
		if (gsum < INFINITY) {
			double lm = m > gmx ? m : gmx;

			if (lm > s->bmx + EPS ||
			    (lm >= s->bmx - EPS && sum + u + gsum >= s->bsum - EPS))
				continue;
		}
		s->dl[h] = dl;
		search_dfs(s, nh.child, h + 1, m, sum + u, idx + nh.off);
	}
}

int ctl_search_run(struct search *s, uint32_t src)
{
	const struct topo *t = s->p->t;
	uint32_t dl0 = dlink_of(t, s->f->src_port);
	double u = util_add(s->p, dl0, s->add);

	s->dl_nic = dlink_of(t, t->ports[s->f->dst_port].peer);
	s->bmx = s->bsum = INFINITY;
	s->best.idx = -1;
	s->best.nhops = 0;
	s->dl[0] = dl0;
	search_dfs(s, src, 1, u, u, 0);
	return s->best.idx >= 0 || s->nall > 0 || s->found ? 0 : -EHOSTUNREACH;
}

/* Runs s (p, f and the mode set) over the DAG of s->f: ctl_flow_dag's error
 * (s->g stays NULL), else ctl_search_run's result. */
static int search_flow(struct search *s)
{
	uint32_t src;
	struct dag *g;
	int ret = ctl_flow_dag(s->p, s->f, &g, &src);

	if (ret < 0)
		return ret;
	s->g = g;
	return ctl_search_run(s, src);
}

/* search_flow in prune mode with the memo of one-path tails (a stamp per
 * search: the loads change between searches). */
static int search_memo(struct search *s)
{
	struct ctl_planner *p = s->p;
	uint32_t src;
	struct dag *g;
	int ret = ctl_flow_dag(p, s->f, &g, &src);

	if (ret < 0)
		return ret;
	s->g = g;
	if (g->nnodes > p->nmemo) {
		struct ctl_memo *m = realloc(p->memo, sizeof(*m) * g->nnodes);

		if (m != NULL) {
			memset(m + p->nmemo, 0, sizeof(*m) * (g->nnodes - p->nmemo));
			p->memo = m;
			p->nmemo = g->nnodes;
		}
	}
	if (g->nnodes <= p->nmemo) {
		if (++p->memo_stamp == 0) { /* wrapped: no entry may look current */
			memset(p->memo, 0, sizeof(*p->memo) * p->nmemo);
			p->memo_stamp = 1;
		}
		s->memo = true;
		s->grow = p->growing && s->floor > 0;
	}
	return ctl_search_run(s, src);
}

/* Best route for f given the loads (f's own load not in them). */
int ctl_best_route(struct ctl_planner *p, const struct ctl_demand *d, const struct ctl_flow *f,
		   struct ctl_route *out, double *mx)
{
	struct search s = {.p = p, .f = f, .add = flow_bits(d, f), .prune = true, .want = -1};
	int ret;

	/* loads are >= 0 (up to rounding: the margin), so a hop is at least
	 * add / cap_hi */
	if (p->tiers_adj && p->cap_hi > 0)
		s.floor = s.add / p->cap_hi * (1 - 1e-9);
	ret = search_memo(&s);

	if (ret < 0)
		return ret;
	*out = s.best;
	*mx = s.bmx;
	return 0;
}

/* The route with index idx of f's pair. */
int ctl_route_by_index(struct ctl_planner *p, const struct ctl_flow *f, int32_t idx,
		       struct ctl_route *out)
{
	struct search s = {.p = p, .f = f, .want = idx};
	int ret = search_flow(&s);

	if (s.g == NULL)
		return ret;
	if (!s.found)
		return -ENOENT;
	*out = s.best;
	return 0;
}

/* ---- loads ------------------------------------------------------------------ */

double ctl_loads_of(struct ctl_planner *p, const struct ctl_demand *d, int which)
{
	memset(p->load, 0, sizeof(double) * 2 * p->t->nlinks);
	for (size_t i = 0; i < d->n; i++) {
		const struct ctl_flow *f = &d->flows[i];
		const struct ctl_route *r = which ? &f->ecmp : &f->path;

		if (r->idx >= 0 || r->nhops > 0)
			route_add(p, r, flow_bits(d, f));
	}
	return ctl_max_of_loads(p);
}

double ctl_max_of_loads(const struct ctl_planner *p)
{
	double mx = 0;

	for (uint32_t l = 0; l < 2 * p->t->nlinks; l++)
		if (p->load[l] / p->cap[l] > mx)
			mx = p->load[l] / p->cap[l];
	return mx;
}

double ctl_max_util(struct ctl_planner *p, const struct ctl_demand *d, int which)
{
	return ctl_loads_of(p, d, which);
}

/* ---- routes by name ------------------------------------------------------------- */

int ctl_route_name(const struct ctl_planner *p, const struct ctl_route *r, char *buf, size_t len)
{
	const struct topo *t = p->t;
	size_t at = 0;

	if (len == 0 || r->idx < 0 || r->nhops < 2)
		return -EINVAL;
	buf[0] = '\0';
	for (uint32_t h = 1; h < r->nhops; h++) {
		uint32_t l = r->dlink[h] / 2;
		uint32_t eg = r->dlink[h] % 2 ? t->links[l].b : t->links[l].a;
		int n = snprintf(buf + at, len - at, "%s%s", h > 1 ? ">" : "",
				 t->nodes[t->ports[eg].node].name);

		if (n < 0 || (size_t)n >= len - at)
			return -ENAMETOOLONG;
		at += (size_t)n;
	}
	return 0;
}

int ctl_route_walk(const struct ctl_planner *p, const struct ctl_flow *f, const struct dag *g,
		   uint32_t src, ctl_pick_fn pick, void *arg, struct ctl_route *out)
{
	const struct topo *t = p->t;
	uint32_t dn = src, h = 0, idx = 0;

	out->dlink[h++] = dlink_of(t, f->src_port);
	while (h < MAXH) {
		const struct dag_node *n = &g->nodes[dn];
		struct dag_nh nh;
		int i = pick(arg, g, n);

		if (i < 0)
			return i;
		if (n->n == 0) {
			out->dlink[h++] = dlink_of(t, t->ports[f->dst_port].peer);
			break;
		}
		nh = dag_nh_at(p, g, n, (uint32_t)i);
		out->dlink[h++] = nh.dl;
		idx += nh.off;
		dn = nh.child;
	}
	out->nhops = h;
	out->idx = (int32_t)idx;
	return 0;
}

struct name_walk {
	const struct ctl_planner *p;
	const struct topo *t;
	char *save; /* strtok_r's */
};

/* The next hop named by the next switch name of the list. */
static int pick_by_name(void *arg, const struct dag *g, const struct dag_node *n)
{
	struct name_walk *w = arg;
	const char *tok = strtok_r(NULL, ">", &w->save);

	if (n->n == 0)
		return tok != NULL ? -ENOENT : 0; /* longer than any equal-cost route */
	for (uint32_t i = 0; tok != NULL && i < n->n; i++) {
		const struct dag_nh c = dag_nh_at(w->p, g, n, i);

		if (c.child < TERM && strcmp(w->t->nodes[g->nodes[c.child].node].name, tok) == 0)
			return (int)i;
	}
	return -ENOENT;
}

int ctl_route_by_name(struct ctl_planner *p, const struct ctl_flow *f, const char *hops,
		      struct ctl_route *out)
{
	struct name_walk w = {.p = p, .t = p->t, .save = NULL};
	char buf[256], *tok;
	uint32_t src;
	struct dag *g;
	int ret = ctl_flow_dag(p, f, &g, &src);

	if (ret < 0)
		return ret;
	if (snprintf(buf, sizeof(buf), "%s", hops) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	tok = strtok_r(buf, ">", &w.save);
	if (tok == NULL || strcmp(tok, w.t->nodes[g->nodes[src].node].name) != 0)
		return -ENOENT;
	return ctl_route_walk(p, f, g, src, pick_by_name, &w, out);
}
