// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_path.c: the path planner (ctl_plan_paths): fresh, incremental or
 * re-optimising with hysteresis, over the index of ctl_index.c.
 *
 * Objective: the maximum over directed links of load / capacity. With every
 * flow movable the balanced colouring (ctl_kempe.c) comes first; when it is
 * not at the lower bound (ctl_bound.c), greedy (announced flows first, then
 * largest demand) puts each flow on the path minimising (max utilisation
 * along it, then its sum, then index), local search (ctl_search.c) improves
 * either, and the better plan wins. Never worse than plain ECMP: when the
 * ECMP routes beat the plan, the search goes on from them.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_path_internal.h"

/* ---- the planner ------------------------------------------------------------------ */

static int cmp_greedy(const void *a, const void *b, void *arg)
{
	const struct ctl_demand *d = arg;
	const struct ctl_flow *x = &d->flows[*(const uint32_t *)a];
	const struct ctl_flow *y = &d->flows[*(const uint32_t *)b];
	bool ax = x->flags & CTL_FLOW_ANNOUNCED, ay = y->flags & CTL_FLOW_ANNOUNCED;

	if (ax != ay)
		return ax ? -1 : 1;
	if (x->demand != y->demand)
		return x->demand > y->demand ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Greedy placement of the flows with movable[i] (the others' routes are
 * already in p->load). */
static int greedy(struct ctl_planner *p, struct ctl_demand *d, const bool *movable)
{
	uint32_t *ord = malloc(sizeof(uint32_t) * (d->n + 1)), n = 0;
	int ret = 0;

	if (ord == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < d->n; i++)
		if (movable[i])
			ord[n++] = i;
	qsort_r(ord, n, sizeof(uint32_t), cmp_greedy, d);
	ctl_grow_begin(p); /* placing flows only adds load */
	for (uint32_t i = 0; i < n; i++) {
		struct ctl_flow *f = &d->flows[ord[i]];
		double mx;

		ret = ctl_best_route(p, d, f, &f->path, &mx);
		if (ret < 0)
			break;
		route_add(p, &f->path, flow_bits(d, f));
	}
	ctl_grow_end(p);
	free(ord);
	return ret;
}

/* The balanced colouring (ctl_kempe_plan) and a local search from it, when every
 * flow is movable. *u: the max utilisation it reached (INFINITY: not run). */
static int plan_kempe(struct ctl_planner *p, struct ctl_demand *d, bool *movable,
		      const struct ctl_plan_opts *o, double bound, struct ctl_plan_stats *st,
		      double *u)
{
	double t0 = ice_now_s(), t1;
	int ret;

	*u = INFINITY;
	for (uint32_t i = 0; i < d->n; i++)
		if (!movable[i])
			return 0;
	if (o->no_search || d->n == 0)
		return 0;
	ret = ctl_kempe_plan(p, d, movable, st);
	if (ret < 0)
		return ret;
	*u = ctl_loads_of(p, d, 0);
	st->kempe_util = *u;
	t1 = ice_now_s();
	st->greedy_s += t1 - t0;
	if (*u > bound * (1 + 1e-9)) {
		ret = ctl_local_search(p, d, movable, o->search_budget_s, bound, true, true, st);
		*u = ctl_loads_of(p, d, 0);
	}
	st->search_s += ice_now_s() - t1;
	return ret;
}

/* Plan the movable flows from scratch given the fixed ones; loads left in
 * p->load. With every flow movable: the balanced colouring first; when it
 * is not at the bound, the greedy plan too, and the better one. */
static int plan_from(struct ctl_planner *p, struct ctl_demand *d, bool *movable,
		     const struct ctl_plan_opts *o, double bound, struct ctl_plan_stats *st)
{
	double t0 = ice_now_s(), t1, kc_u, budget = o->search_budget_s;
	struct ctl_route *kc = NULL;
	bool search = !o->no_search;
	int ret;

	ret = plan_kempe(p, d, movable, o, bound, st, &kc_u);
	if (ret < 0)
		return ret;
	if (kc_u <= bound * (1 + 1e-9))
		return 0;
	if (kc_u < INFINITY) {
		kc = malloc(sizeof(*kc) * (d->n + 1));
		if (kc == NULL)
			return -ENOMEM;
		for (uint32_t i = 0; i < d->n; i++)
			kc[i] = d->flows[i].path;
		if (budget > 0) {
			budget -= ice_now_s() - t0;
			search = budget > 0;
		}
		t0 = ice_now_s();
	}
	memset(p->load, 0, sizeof(double) * 2 * p->t->nlinks);
	for (uint32_t i = 0; i < d->n; i++) {
		if (movable[i])
			d->flows[i].path.idx = -1;
		else
			route_add(p, &d->flows[i].path, flow_bits(d, &d->flows[i]));
	}
	ret = greedy(p, d, movable);
	t1 = ice_now_s();
	st->greedy_s += t1 - t0;
	if (ret == 0 && search)
		ret = ctl_local_search(p, d, movable, budget, bound,
				       o->mode != CTL_PLAN_INCREMENTAL, true, st);
	st->search_s += ice_now_s() - t1;
	if (ret == 0 && kc != NULL && ctl_loads_of(p, d, 0) > kc_u) {
		for (uint32_t i = 0; i < d->n; i++)
			d->flows[i].path = kc[i];
		ctl_loads_of(p, d, 0);
	}
	free(kc);
	return ret;
}

/* Never worse than plain ECMP: when the ECMP routes (default source ports)
 * beat the plan, search on from them instead. */
static int ecmp_start(struct ctl_planner *p, struct ctl_demand *d, bool *movable,
		      const struct ctl_plan_opts *o, double bound, struct ctl_plan_stats *st)
{
	struct ctl_route *mine;
	double planned = ctl_loads_of(p, d, 0), ecmp;
	int ret = 0;

	if (planned <= bound * (1 + 1e-9))
		return 0; /* at the lower bound: ECMP cannot beat it */
	mine = malloc(sizeof(*mine) * (d->n + 1));
	if (mine == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < d->n && ret == 0; i++) {
		struct ctl_flow *f = &d->flows[i];

		mine[i] = f->path;
		ret = ctl_model_route(p, f, ice_roce_sport_default(f->lqpn, f->rqpn), &f->path);
	}
	if (ret < 0)
		goto out;
	ecmp = ctl_loads_of(p, d, 0);
	if (ecmp < planned - EPS * planned) {
		if (!o->no_search)
			ret = ctl_local_search(p, d, movable, o->search_budget_s, bound, true, true,
					       st);
		if (ret == 0 && ctl_loads_of(p, d, 0) <= planned)
			goto out; /* keep the ECMP-started routes */
	}
	for (uint32_t i = 0; i < d->n; i++)
		d->flows[i].path = mine[i];
out:
	free(mine);
	return ret;
}

/* Second objective: the max utilisation of the links between switches.
 * A NIC's link is on every route of its flows, so when one of them holds
 * the max (the host NICs bound an all-to-all), every split of the fabric
 * ties on the first objective: one that fills a link that load nobody
 * planned has cut (ctl_planner_set_cap) as well as one beside it, or 7 of
 * a leaf's 9 flows on one spine, placed by index while their QPs were
 * still unannounced, as well as 5/4. Only then (the fabric's max below
 * the max over all links), with the NICs' links out of sight (their
 * capacity infinite), a local search (first local optimum, no kicks, no
 * floor) of the movable flows (fresh plans: those that cross a cut link)
 * lowers the max over the links they cross or move onto; its routes are kept when that gains
 * (REOPT: by the hysteresis) and the max over all links is no worse. Re-optimisations (the daemon:
 * within its search budget) run it always, fresh plans only on cut
 * capacities: on the topology's (ice-sim) it costs a look at the links. */
static bool route_cut(const struct ctl_planner *p, const struct ctl_route *r)
{
	for (uint32_t h = 0; h < r->nhops; h++) {
		uint32_t dl = r->dlink[h];

		if (p->cap[dl] < (double)p->t->links[dl / 2].rate_bps * (1 - EPS))
			return true;
	}
	return false;
}

/* The max utilisation over the links the flows mv cross now or crossed
 * (old routes). */
static double touched_max(const struct ctl_planner *p, const struct ctl_demand *d, const bool *mv,
			  const struct ctl_route *old)
{
	double mx = 0;

	for (uint32_t i = 0; i < d->n; i++)
		for (int k = 0; mv[i] && k < 2; k++) {
			const struct ctl_route *r = k ? &old[i] : &d->flows[i].path;

			for (uint32_t h = 0; h < r->nhops; h++)
				if (p->load[r->dlink[h]] / p->cap[r->dlink[h]] > mx)
					mx = p->load[r->dlink[h]] / p->cap[r->dlink[h]];
		}
	return mx;
}

/* Hide the NICs' links (capacity infinite, their caps kept in saved, 2
 * per NIC) or put them back. */
static void nic_caps(struct ctl_planner *p, double *saved, bool hide)
{
	const struct topo *t = p->t;

	for (uint32_t i = 0; i < topo_nic_count(t); i++) {
		uint32_t l = t->ports[topo_nic(t, i)->id].link;

		if (hide) {
			saved[2 * i] = p->cap[2 * l];
			saved[2 * i + 1] = p->cap[2 * l + 1];
			p->cap[2 * l] = p->cap[2 * l + 1] = INFINITY;
		} else {
			p->cap[2 * l] = saved[2 * i];
			p->cap[2 * l + 1] = saved[2 * i + 1];
		}
	}
}

static int fabric_pass(struct ctl_planner *p, struct ctl_demand *d, const bool *movable,
		       const struct ctl_plan_opts *o, struct ctl_plan_stats *st)
{
	const struct topo *t = p->t;
	uint32_t nn = topo_nic_count(t), nmv = 0;
	double *saved = NULL, all, fabric, before, after, need;
	struct ctl_route *old = NULL;
	struct ctl_plan_stats tmp = {0};
	bool *mv = NULL, keep, cut = false;
	int ret = -ENOMEM;

	for (uint32_t dl = 0; dl < 2 * t->nlinks && !cut; dl++)
		cut = p->cap[dl] < (double)t->links[dl / 2].rate_bps * (1 - EPS);
	if (!cut && o->mode != CTL_PLAN_REOPT)
		return 0;
	if (o->no_tie && o->mode == CTL_PLAN_REOPT)
		return 0;
	saved = malloc(sizeof(double) * (2 * (size_t)nn + 1));
	old = calloc(d->n + 1, sizeof(*old));
	mv = malloc(sizeof(bool) * (d->n + 1));
	if (saved == NULL || old == NULL || mv == NULL)
		goto out;
	all = ctl_loads_of(p, d, 0);
	nic_caps(p, saved, true);
	for (uint32_t i = 0; i < d->n; i++) {
		old[i] = d->flows[i].path;
		mv[i] = movable[i] &&
			(o->mode == CTL_PLAN_REOPT || route_cut(p, &d->flows[i].path));
		nmv += mv[i];
	}
	fabric = ctl_loads_of(p, d, 0);
	before = touched_max(p, d, mv, old);
	/* where a fabric link shares the max, the first objective saw it */
	ret = nmv > 0 && before > 0 && fabric < all * (1 - EPS)
		      ? ctl_local_search(p, d, mv, o->search_budget_s, 0, false, false, &tmp)
		      : 0;
	ctl_loads_of(p, d, 0);
	after = touched_max(p, d, mv, old);
	nic_caps(p, saved, false);
	need = before * (1 - (o->mode == CTL_PLAN_REOPT ? o->hysteresis : EPS));
	keep = ret == 0 && after < need && ctl_loads_of(p, d, 0) <= all * (1 + EPS);
	if (!keep) {
		for (uint32_t i = 0; i < d->n; i++)
			d->flows[i].path = old[i];
		ctl_loads_of(p, d, 0);
	}
	st->fabric_util = keep ? after : before;
	st->moves += keep ? tmp.moves : 0;
out:
	free(saved);
	free(old);
	free(mv);
	return ret;
}

/* One re-optimisation of the flows with movable[i] from their current
 * routes (old): local search from them (fewest moves), else from scratch,
 * kept only for a gain of the hysteresis; then the fabric pass. */
static int reopt_pass(struct ctl_planner *p, struct ctl_demand *d, const bool *movable,
		      const struct ctl_route *old, const struct ctl_plan_opts *o, double bound,
		      double before, struct ctl_plan_stats *st)
{
	bool *mv = malloc(sizeof(bool) * (d->n + 1));
	double after;
	int ret;

	if (mv == NULL)
		return -ENOMEM;
	memcpy(mv, movable, sizeof(bool) * d->n);
	ret = ctl_local_search(p, d, mv, o->search_budget_s, bound, true, true, st);
	after = ctl_loads_of(p, d, 0);
	if (ret == 0 && after > before * (1 - o->hysteresis)) {
		ret = plan_from(p, d, mv, o, bound, st);
		if (ret == 0 && ctl_loads_of(p, d, 0) > before * (1 - o->hysteresis)) {
			for (uint32_t i = 0; i < d->n; i++)
				d->flows[i].path = old[i]; /* not worth moving */
			ctl_loads_of(p, d, 0);
		}
	}
	if (ret == 0 && !o->no_search)
		ret = fabric_pass(p, d, mv, o, st);
	free(mv);
	return ret;
}

/* REOPT: place unrouted flows first, then move only for a real gain. Flows
 * that moved lately (CTL_FLOW_STICKY) stay where they are unless moving
 * them too lowers the max utilisation by the hysteresis (a second pass):
 * never for the fabric's tie-break alone. So a load that changes twice
 * moves the QPs that have not moved yet instead of sending one back. */
static int reopt(struct ctl_planner *p, struct ctl_demand *d, bool *movable,
		 const struct ctl_plan_opts *o, double bound, struct ctl_plan_stats *st)
{
	struct ctl_route *old = NULL, *first = NULL;
	struct ctl_plan_stats st2;
	double before, u1, u2, h = o->hysteresis;
	uint32_t nsticky = 0;
	int ret;

	for (uint32_t i = 0; i < d->n; i++)
		movable[i] = d->flows[i].path.idx < 0;
	ret = plan_from(p, d, movable, &(struct ctl_plan_opts){.no_search = true}, bound, st);
	old = calloc(d->n + 1, sizeof(*old));
	first = calloc(d->n + 1, sizeof(*first));
	if (ret < 0 || old == NULL || first == NULL) {
		ret = ret < 0 ? ret : -ENOMEM;
		goto out;
	}
	before = ctl_loads_of(p, d, 0);
	st->start_util = before;
	for (uint32_t i = 0; i < d->n; i++) {
		old[i] = d->flows[i].path;
		movable[i] = !(d->flows[i].flags & CTL_FLOW_FIXED);
		if (movable[i] && (d->flows[i].flags & CTL_FLOW_STICKY)) {
			movable[i] = false;
			nsticky++;
		}
	}
	ret = reopt_pass(p, d, movable, old, o, bound, before, st);
	if (ret < 0 || nsticky == 0)
		goto moved;
	u1 = ctl_loads_of(p, d, 0);
	if (u1 <= bound * (1 + 1e-9))
		goto moved; /* at the lower bound: the second pass cannot beat it */
	for (uint32_t i = 0; i < d->n; i++) {
		first[i] = d->flows[i].path;
		d->flows[i].path = old[i];
		movable[i] = !(d->flows[i].flags & CTL_FLOW_FIXED);
	}
	memset(&st2, 0, sizeof(st2));
	ctl_loads_of(p, d, 0);
	ret = reopt_pass(p, d, movable, old, o, bound, before, &st2);
	if (ret < 0)
		goto out;
	u2 = ctl_loads_of(p, d, 0);
	st->moves += st2.moves;
	st->search_s += st2.search_s;
	st->greedy_s += st2.greedy_s;
	st->budget_hit |= st2.budget_hit;
	if (u2 < u1 * (1 - h)) {
		st->fabric_util = st2.fabric_util;
	} else {
		for (uint32_t i = 0; i < d->n; i++)
			d->flows[i].path = first[i];
		ctl_loads_of(p, d, 0);
	}
moved:
	for (uint32_t i = 0; ret == 0 && i < d->n; i++)
		if (d->flows[i].path.idx != old[i].idx)
			st->moved++;
out:
	free(old);
	free(first);
	return ret;
}

int ctl_plan_paths(struct ctl_planner *p, struct ctl_demand *d, const struct ctl_plan_opts *o,
		   struct ctl_plan_stats *st)
{
	struct ctl_plan_opts def;
	struct ctl_plan_stats tmp;
	struct ctl_route *old = NULL;
	uint32_t *order = NULL, *todo = NULL, ntodo = 0;
	bool *movable;
	double t0 = ice_now_s(), bound;
	int ret = 0;

	if (o == NULL) {
		ctl_plan_opts_default(&def);
		o = &def;
	}
	if (st == NULL)
		st = &tmp;
	memset(st, 0, sizeof(*st));
	movable = malloc(sizeof(bool) * (d->n + 1));
	if (movable == NULL)
		return -ENOMEM;
	/* validate, and rebuild the links of routes given by index; DAGs are
	 * built one at a time (ctl_flow_order). Routes the caller says are
	 * current were planned (so checked) by this planner: they are taken as
	 * they are, and only the other flows are looked at. */
	todo = malloc(sizeof(uint32_t) * (d->n + 1));
	if (todo == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < d->n; i++)
		if (!(o->mode != CTL_PLAN_FRESH && o->routes_current && d->flows[i].path.idx >= 0 &&
		      d->flows[i].path.nhops > 0))
			todo[ntodo++] = i;
	order = ctl_flow_order_of(p, d, ntodo == d->n ? NULL : todo, ntodo);
	if (order == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < ntodo && ret == 0; i++) {
		struct ctl_flow *f = &d->flows[order[i]];
		uint32_t src;
		struct dag *g;

		ret = ctl_flow_dag(p, f, &g, &src);
		if (ret == 0 && o->mode != CTL_PLAN_FRESH && f->path.idx >= 0 &&
		    !(o->routes_current && f->path.nhops > 0))
			ret = ctl_route_by_index(p, f, f->path.idx, &f->path);
	}
	if (ret < 0)
		goto out;
	bound = ctl_bound(p, d);
	st->bound = bound;
	if (o->mode == CTL_PLAN_FRESH) {
		for (uint32_t i = 0; i < d->n; i++)
			movable[i] = true;
		ret = plan_from(p, d, movable, o, bound, st);
		if (ret == 0)
			ret = ecmp_start(p, d, movable, o, bound, st);
		if (ret == 0 && !o->no_search)
			ret = fabric_pass(p, d, movable, o, st);
	} else if (o->mode == CTL_PLAN_INCREMENTAL) {
		for (uint32_t i = 0; i < d->n; i++)
			movable[i] = d->flows[i].path.idx < 0;
		ret = plan_from(p, d, movable, o, bound, st);
	} else {
		ret = reopt(p, d, movable, o, bound, st);
	}
	if (ret == 0 && o->mode == CTL_PLAN_INCREMENTAL)
		st->max_util = ctl_max_of_loads(p); /* kept up to date since plan_from */
	else if (ret == 0)
		st->max_util = ctl_loads_of(p, d, 0);
out:
	st->total_s = ice_now_s() - t0;
	free(order);
	free(todo);
	free(old);
	free(movable);
	return ret;
}
