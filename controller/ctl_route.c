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

static void search_dfs(struct search *s, uint32_t dn, uint32_t h, double mx, double sum,
		       uint32_t idx)
{
	const struct dag_node *n = &s->g->nodes[dn];
	const struct ctl_planner *p = s->p;

	if (s->found || h >= MAXH)
		return;
	if (s->want >= 0 && ((int64_t)s->want < idx || (int64_t)s->want >= (int64_t)idx + n->paths))
		return;
	if (n->n == 0) { /* the destination switch: down to the NIC */
		uint32_t dl = dlink_of(p->t, p->t->ports[s->f->dst_port].peer);
		double u = util_add(p, dl, s->add);

		s->dl[h] = dl;
		search_leaf(s, h + 1, mx > u ? mx : u, sum + u, idx);
		return;
	}
	for (uint32_t i = 0; i < n->n && !s->found; i++) {
		const struct dag_nh nh = dag_nh_at(p, s->g, n, i);
		uint32_t dl = nh.dl;
		double u = util_add(p, dl, s->add), m = mx > u ? mx : u;

		if (s->prune &&
		    (m > s->bmx + EPS || (m >= s->bmx - EPS && sum + u >= s->bsum - EPS)))
			continue;
		s->dl[h] = dl;
		search_dfs(s, nh.child, h + 1, m, sum + u, idx + nh.off);
	}
}

int ctl_search_run(struct search *s, uint32_t src)
{
	const struct topo *t = s->p->t;
	uint32_t dl0 = dlink_of(t, s->f->src_port);
	double u = util_add(s->p, dl0, s->add);

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

/* Best route for f given the loads (f's own load not in them). */
int ctl_best_route(struct ctl_planner *p, const struct ctl_demand *d, const struct ctl_flow *f,
		   struct ctl_route *out, double *mx)
{
	struct search s = {.p = p, .f = f, .add = flow_bits(d, f), .prune = true, .want = -1};
	int ret = search_flow(&s);

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
