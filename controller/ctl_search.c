// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_search.c: local search. Take the most utilised directed link and move
 * (or swap) flows off it while the move leaves every touched link strictly
 * below that level; when stuck, kick a flow sideways (tabu for a while) so
 * the next moves can unwind a chain. Stops when the top link cannot be
 * relieved (without kicks: the first local optimum), at the lower bound
 * (or at the most utilised link that no movable flow crosses), or on its
 * time budget; keeps the first routes that reached the best level.
 *
 * Only the movable flows are listed per link and only the links they cross
 * are in the heap, so an incremental plan of a few new flows among 10^5
 * kept ones costs what the new flows cost, plus one pass over the links.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_path_internal.h"
#include "ice_log.h"

/* ---- local search ---------------------------------------------------------------- */

struct ls {
	struct ctl_planner *p;
	struct ctl_demand *d;
	bool *movable;
	/* flows on each directed link: doubly linked lists of (flow, hop) */
	uint32_t *head, *next, *prev;
	struct ctl_heap heap; /* links by utilisation, most utilised on top */
	uint64_t *tabu;	      /* a kicked flow stays put until this iteration */
	uint64_t it;
	struct ctl_route *all; /* one flow's routes (LS_ALL_MAX), ls_all_routes */
	double *allmx;	       /* and their max utilisation */
};

static double ls_util(const struct ls *s, uint32_t dl)
{
	return s->p->load[dl] / s->p->cap[dl];
}

static int heap_push(struct ls *s, uint32_t dl)
{
	return ctl_heap_push(&s->heap, -ls_util(s, dl), dl);
}

/* The most utilised directed link (skipping stale entries), NONE if empty. */
static uint32_t heap_top(struct ls *s)
{
	while (s->heap.n > 0) {
		const struct ctl_heap_ent *e = &s->heap.v[0];

		if (-e->key == ls_util(s, e->id))
			return e->id;
		ctl_heap_pop(&s->heap);
	}
	return NONE;
}

static void ls_unlink(struct ls *s, uint32_t f)
{
	struct ctl_flow *fl = &s->d->flows[f];

	for (uint32_t h = 0; h < fl->path.nhops; h++) {
		uint32_t e = f * MAXH + h, dl = fl->path.dlink[h];

		if (s->prev[e] != NONE)
			s->next[s->prev[e]] = s->next[e];
		else
			s->head[dl] = s->next[e];
		if (s->next[e] != NONE)
			s->prev[s->next[e]] = s->prev[e];
	}
}

static void ls_link(struct ls *s, uint32_t f)
{
	struct ctl_flow *fl = &s->d->flows[f];

	for (uint32_t h = 0; h < fl->path.nhops; h++) {
		uint32_t e = f * MAXH + h, dl = fl->path.dlink[h];

		s->prev[e] = NONE;
		s->next[e] = s->head[dl];
		if (s->head[dl] != NONE)
			s->prev[s->head[dl]] = e;
		s->head[dl] = e;
	}
}

/* Change f's load on its route by sign and refresh the heap. */
static int ls_load(struct ls *s, uint32_t f, double sign)
{
	struct ctl_flow *fl = &s->d->flows[f];
	double b = sign * flow_bits(s->d, fl);
	int ret = 0;

	for (uint32_t h = 0; h < fl->path.nhops; h++) {
		s->p->load[fl->path.dlink[h]] += b;
		if (s->p->load[fl->path.dlink[h]] < 1e-6 * s->p->cap[fl->path.dlink[h]] * EPS)
			s->p->load[fl->path.dlink[h]] = 0;
		if (ret == 0)
			ret = heap_push(s, fl->path.dlink[h]);
	}
	return ret;
}

static int ls_set(struct ls *s, uint32_t f, const struct ctl_route *r)
{
	ls_unlink(s, f);
	s->d->flows[f].path = *r;
	ls_link(s, f);
	return ls_load(s, f, +1);
}

/* Flows on dl, largest demand first (ties: lowest index); malloc'd. */
static uint32_t *ls_flows_on(struct ls *s, uint32_t dl, uint32_t *n);

static int cmp_demand_desc(const void *a, const void *b, void *arg)
{
	const struct ctl_demand *d = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (d->flows[x].demand != d->flows[y].demand)
		return d->flows[x].demand > d->flows[y].demand ? -1 : 1;
	return x < y ? -1 : x > y;
}

static uint32_t *ls_flows_on(struct ls *s, uint32_t dl, uint32_t *n)
{
	uint32_t cnt = 0, *v;

	for (uint32_t e = s->head[dl]; e != NONE; e = s->next[e])
		cnt++;
	v = malloc(sizeof(uint32_t) * (cnt + 1));
	if (v == NULL)
		return NULL;
	cnt = 0;
	for (uint32_t e = s->head[dl]; e != NONE; e = s->next[e])
		if (s->movable[e / MAXH] && s->tabu[e / MAXH] <= s->it)
			v[cnt++] = e / MAXH;
	qsort_r(v, cnt, sizeof(uint32_t), cmp_demand_desc, s->d);
	*n = cnt;
	return v;
}

/* Try to move one flow off dl (at utilisation U) so that every link it then
 * uses stays below U. 1 moved, 0 none, -errno. */
static int ls_try_move(struct ls *s, uint32_t dl, double U)
{
	uint32_t n, *fs = ls_flows_on(s, dl, &n);
	int ret = 0;

	if (fs == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < n && ret == 0; i++) {
		struct ctl_flow *f = &s->d->flows[fs[i]];
		struct ctl_route r;
		double mx;

		ls_load(s, fs[i], -1);
		if (ctl_best_route(s->p, s->d, f, &r, &mx) == 0 && mx < U - EPS * U) {
			ret = ls_set(s, fs[i], &r);
			ret = ret < 0 ? ret : 1;
		} else {
			ret = ls_load(s, fs[i], +1);
		}
	}
	free(fs);
	return ret;
}

/* Swap: move f off dl onto a path blocked by one link B, and move a flow g
 * off B elsewhere, so that every touched link ends below U. 1, 0, -errno. */
static bool route_covers(const struct ctl_route *r, const uint32_t *dl, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		bool in = false;

		for (uint32_t h = 0; h < r->nhops && !in; h++)
			in = r->dlink[h] == dl[i];
		if (!in)
			return false;
	}
	return true;
}

#define SWAP_PATHS 16
#define SWAP_FLOWS 8
#define LS_ALL_MAX 4096 /* routes collected per flow */

/* Takes flow fi's load off and collects its routes with their max
 * utilisation into s->all and s->allmx, in se. Returns false, leaving the
 * load on, when the flow has no DAG. */
static bool ls_all_routes(struct ls *s, uint32_t fi, struct search *se)
{
	struct ctl_flow *f = &s->d->flows[fi];
	uint32_t src;
	struct dag *g;

	*se = (struct search){.p = s->p, .f = f, .add = flow_bits(s->d, f), .want = -1};
	if (ctl_flow_dag(s->p, f, &g, &src) < 0)
		return false;
	ls_load(s, fi, -1);
	se->g = g;
	se->all = s->all;
	se->allmx = s->allmx;
	se->capall = LS_ALL_MAX;
	ctl_search_run(se, src);
	return true;
}

static int ls_try_swap(struct ls *s, uint32_t dl, double U)
{
	struct ctl_planner *p = s->p;
	uint32_t n, *fs = ls_flows_on(s, dl, &n);
	struct ctl_route *all = s->all;
	const double *allmx = s->allmx;
	int ret = 0;

	if (fs == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < n && i < SWAP_FLOWS && ret == 0; i++) {
		uint32_t fi = fs[i];
		struct ctl_route old = s->d->flows[fi].path;
		uint32_t tried = 0;
		struct search se;

		if (!ls_all_routes(s, fi, &se))
			continue;
		for (uint32_t k = 0; k < se.nall && tried < SWAP_PATHS && ret == 0; k++) {
			uint32_t blk[MAXH], nb = 0, gn, *gs;

			if (allmx[k] < U - EPS * U || all[k].idx == old.idx)
				continue;
			for (uint32_t h = 0; h < all[k].nhops; h++)
				if (util_add(p, all[k].dlink[h], se.add) >= U - EPS * U)
					blk[nb++] = all[k].dlink[h];
			if (nb == 0)
				continue;
			tried++;
			/* g must cross every blocking link to relieve them all */
			gs = ls_flows_on(s, blk[0], &gn);
			if (gs == NULL) {
				ret = -ENOMEM;
				break;
			}
			for (uint32_t j = 0; j < gn && j < SWAP_FLOWS && ret == 0; j++) {
				struct ctl_flow *gf = &s->d->flows[gs[j]];
				struct ctl_route gold = gf->path, gr;
				double gmx, fmx = 0;

				if (gs[j] == fi || !route_covers(&gf->path, blk, nb))
					continue;
				ls_load(s, gs[j], -1);
				route_add(p, &all[k], se.add);
				for (uint32_t h = 0; h < all[k].nhops; h++)
					if (p->load[all[k].dlink[h]] / p->cap[all[k].dlink[h]] >
					    fmx)
						fmx = p->load[all[k].dlink[h]] /
						      p->cap[all[k].dlink[h]];
				if (fmx < U - EPS * U &&
				    ctl_best_route(p, s->d, gf, &gr, &gmx) == 0 &&
				    gmx < U - EPS * U && gr.idx != gold.idx) {
					route_add(p, &all[k], -se.add);
					ret = ls_set(s, fi, &all[k]);
					if (ret == 0)
						ret = ls_set(s, gs[j], &gr);
					ret = ret < 0 ? ret : 1;
				} else {
					route_add(p, &all[k], -se.add);
					ls_load(s, gs[j], +1);
				}
			}
			free(gs);
		}
		if (ret == 0)
			ret = ls_load(s, fi, +1);
	}
	free(fs);
	return ret;
}

/* Stuck: move one flow off dl sideways (to its best other route whose max
 * is not above U) and keep it there for a while, so that the next moves
 * can unwind a chain. 1 kicked, 0 nothing to kick, -errno. */
static int ls_kick(struct ls *s, uint32_t dl, double U, uint64_t kicks)
{
	uint32_t n, *fs = ls_flows_on(s, dl, &n);
	int ret = 0;

	if (fs == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < n && ret == 0; i++) {
		uint32_t fi = fs[(i + kicks) % n], pick = NONE;
		struct ctl_flow *f = &s->d->flows[fi];
		struct search se;

		if (!ls_all_routes(s, fi, &se))
			continue;
		for (uint32_t k = 0; k < se.nall; k++)
			if (s->all[k].idx != f->path.idx && s->allmx[k] <= U * (1 + EPS) &&
			    (pick == NONE || s->allmx[k] < s->allmx[pick] - EPS))
				pick = k;
		if (pick == NONE) {
			ret = ls_load(s, fi, +1);
			continue;
		}
		ret = ls_set(s, fi, &s->all[pick]);
		s->tabu[fi] = s->it + 8 + (kicks % 7);
		ret = ret < 0 ? ret : 1;
	}
	free(fs);
	return ret;
}

/* The routes of the movable flows mv[0..n) into (or from) best. */
static void ls_save(struct ctl_route *best, struct ctl_demand *d, const uint32_t *mv, uint32_t n,
		    bool restore)
{
	for (uint32_t i = 0; i < n; i++)
		if (restore)
			d->flows[mv[i]].path = best[i];
		else
			best[i] = d->flows[mv[i]].path;
}

/* Local search over the routes in d (loads in p->load). */
int ctl_local_search(struct ctl_planner *p, struct ctl_demand *d, bool *movable, double budget_s,
		     double bound, bool kick, bool use_floor, struct ctl_plan_stats *st)
{
	struct ls s = {.p = p, .d = d, .movable = movable};
	uint32_t nd = 2 * p->t->nlinks, nmv = 0, *mv = NULL;
	uint64_t kicks = 0, max_kicks = kick ? 2 * (uint64_t)d->n + 64 : 0;
	struct ctl_route *best = NULL;
	double t0 = ice_now_s(), best_u = INFINITY, floor = 0;
	int ret = -ENOMEM;

	s.head = malloc(sizeof(uint32_t) * (nd + 1));
	s.next = malloc(sizeof(uint32_t) * (d->n * MAXH + 1));
	s.prev = malloc(sizeof(uint32_t) * (d->n * MAXH + 1));
	s.tabu = calloc(d->n + 1, sizeof(uint64_t));
	s.all = malloc(sizeof(*s.all) * LS_ALL_MAX);
	s.allmx = malloc(sizeof(*s.allmx) * LS_ALL_MAX);
	mv = malloc(sizeof(uint32_t) * (d->n + 1));
	if (s.head == NULL || s.next == NULL || s.prev == NULL || s.tabu == NULL || s.all == NULL ||
	    s.allmx == NULL || mv == NULL)
		goto out;
	for (uint32_t f = 0; f < d->n; f++)
		if (movable[f] && d->flows[f].path.idx >= 0)
			mv[nmv++] = f;
	best = malloc(sizeof(*best) * (nmv + 1));
	if (best == NULL)
		goto out;
	ls_save(best, d, mv, nmv, false);
	for (uint32_t l = 0; l < nd; l++)
		s.head[l] = NONE;
	for (uint32_t i = 0; i < nmv; i++)
		ls_link(&s, mv[i]);
	/* the heap holds the links movable flows cross; the others only
	 * change when a flow moves onto them (and is then pushed), so until
	 * then their most utilised is a floor no move can go below */
	for (uint32_t l = 0; l < nd; l++) {
		if (s.head[l] == NONE) {
			if (use_floor && p->load[l] / p->cap[l] > floor)
				floor = p->load[l] / p->cap[l];
		} else if (p->load[l] > 0 && (ret = heap_push(&s, l)) < 0) {
			goto out;
		}
	}
	if (floor > bound)
		bound = floor;
	ret = 0;
	for (uint64_t it = 0;; it++) {
		uint32_t top = heap_top(&s);
		double U;
		int r;

		if (s.heap.n > 16 * (size_t)nd + 4096) { /* drop stale entries */
			s.heap.n = 0;
			for (uint32_t l = 0; l < nd; l++)
				if (p->load[l] > 0 && (use_floor || s.head[l] != NONE) &&
				    (ret = heap_push(&s, l)) < 0)
					goto out;
			top = heap_top(&s);
		}
		if (top == NONE)
			break;
		U = p->load[top] / p->cap[top];
		s.it = it;
		if (U < best_u * (1 - EPS)) {
			best_u = U;
			if (kicks > 0)
				ls_save(best, d, mv, nmv, false);
		}
		if (U <= bound * (1 + 1e-9))
			break; /* optimal */
		if (budget_s > 0 && (it & 15) == 0 && ice_now_s() - t0 > budget_s) {
			st->budget_hit = true;
			break;
		}
		ice_dbg(ctl_log_sub, "ctl: local search: top link %u dir %u at %.4f", top / 2,
			top & 1, U);
		r = ls_try_move(&s, top, U);
		if (r == 0)
			r = ls_try_swap(&s, top, U);
		if (r == 0 && kicks < max_kicks) {
			/* the top link cannot be relieved: perturb and go on */
			if (kicks == 0)
				ls_save(best, d, mv, nmv, false);
			r = ls_kick(&s, top, U, kicks++);
			/* or off any other link at the top level */
			for (uint32_t l = 0; r == 0 && l < nd; l++)
				if (l != top && p->load[l] >= U * p->cap[l] * (1 - EPS))
					r = ls_kick(&s, l, U, kicks);
		}
		if (r < 0) {
			ret = r;
			break;
		}
		if (r == 0)
			break; /* nothing moves any more */
		st->moves++;
	}
	if (ret == 0 && kicks > 0) {
		uint32_t top = heap_top(&s);

		/* the first routes that reached the best level: no idle moves */
		if (top != NONE && p->load[top] / p->cap[top] >= best_u * (1 - EPS)) {
			ls_save(best, d, mv, nmv, true);
			ctl_loads_of(p, d, 0);
		}
	}
out:
	free(best);
	free(mv);
	free(s.tabu);
	free(s.head);
	free(s.next);
	free(s.prev);
	free(s.all);
	free(s.allmx);
	ctl_heap_fini(&s.heap);
	return ret;
}
