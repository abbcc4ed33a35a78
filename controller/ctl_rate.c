// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_rate.c: the rate planner: max-min fair rates on the planned routes by
 * progressive filling (water-filling) with an event heap, and the link ->
 * flows index it keeps between fillings for the incremental ones.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_path_internal.h"

/* ---- the link -> flows index, kept between fillings ------------------------------ */

/*
 * Built by every full filling (it is that filling's own index), one per
 * `which` (paths, ECMP routes). An incremental filling brings it up to date
 * instead of indexing every flow again: flows are the same by position
 * (0 .. nf - 1 as indexed, new ones appended); a flow marked changed gets
 * entries for its links in a per-link list beside the CSR arrays, and its
 * old entries stay. Stale entries only add flows to the part that is
 * refilled (with their whole connected part: still exact, since max-min
 * fair rates decompose over the connected parts), and they are what a
 * moved flow's old links need anyway (its neighbours there get its share
 * back). Rebuilt when flows were removed (d->n < nf) or when the extra
 * entries outgrow half the CSR.
 */
struct ctl_rate_index {
	uint32_t nd;		 /* directed links */
	uint32_t nf;		 /* flows indexed */
	uint32_t *first, *fl;	 /* CSR: link l's flows fl[first[l] .. first[l + 1]) */
	uint32_t *xhead;	 /* [nd] first extra entry of a link, NONE (on first use) */
	uint32_t *xnext, *xflow; /* extra entries */
	uint32_t *xlink;	 /* the link of each (to clear xhead at a rebuild) */
	uint32_t nx, capx;
	uint32_t *lid; /* [nd] scratch, NONE between calls: a link's local id */
};

void ctl_rate_index_free(struct ctl_rate_index *x)
{
	if (x == NULL)
		return;
	free(x->first);
	free(x->fl);
	free(x->xhead);
	free(x->xnext);
	free(x->xflow);
	free(x->xlink);
	free(x->lid);
	free(x);
}

static const struct ctl_route *route_of(const struct ctl_demand *d, int which, uint32_t i)
{
	return which ? &d->flows[i].ecmp : &d->flows[i].path;
}

/* The index of d's current routes, from scratch. 0 or -ENOMEM. */
static int ridx_build(struct ctl_rate_index *x, const struct ctl_demand *d, int which)
{
	uint32_t nd = x->nd, *cnt;
	size_t total = 0;

	free(x->fl);
	x->fl = NULL;
	x->nf = 0;
	for (uint32_t k = 0; k < x->nx; k++)
		x->xhead[x->xlink[k]] = NONE;
	x->nx = 0;
	if (x->first == NULL)
		x->first = malloc(sizeof(uint32_t) * (nd + 1));
	cnt = calloc(nd + 1, sizeof(uint32_t));
	if (x->first == NULL || cnt == NULL)
		goto err;
	for (uint32_t i = 0; i < d->n; i++) {
		const struct ctl_route *r = route_of(d, which, i);

		for (uint32_t h = 0; h < r->nhops; h++)
			cnt[r->dlink[h]]++;
		total += r->nhops;
	}
	x->fl = malloc(sizeof(uint32_t) * (total + 1));
	if (x->fl == NULL)
		goto err;
	x->first[0] = 0;
	for (uint32_t l = 0; l < nd; l++) {
		x->first[l + 1] = x->first[l] + cnt[l];
		cnt[l] = x->first[l];
	}
	for (uint32_t i = 0; i < d->n; i++) {
		const struct ctl_route *r = route_of(d, which, i);

		for (uint32_t h = 0; h < r->nhops; h++)
			x->fl[cnt[r->dlink[h]]++] = i;
	}
	x->nf = d->n;
	free(cnt);
	return 0;
err:
	free(cnt);
	free(x->first);
	x->first = NULL;
	return -ENOMEM;
}

static int ridx_extra(struct ctl_rate_index *x, uint32_t l, uint32_t f)
{
	if (x->nx == x->capx) {
		uint32_t c = x->capx ? 2 * x->capx : 4096;
		uint32_t *a = realloc(x->xnext, sizeof(uint32_t) * c);

		if (a == NULL)
			return -ENOMEM;
		x->xnext = a;
		a = realloc(x->xflow, sizeof(uint32_t) * c);
		if (a == NULL)
			return -ENOMEM;
		x->xflow = a;
		a = realloc(x->xlink, sizeof(uint32_t) * c);
		if (a == NULL)
			return -ENOMEM;
		x->xlink = a;
		x->capx = c;
	}
	x->xflow[x->nx] = f;
	x->xlink[x->nx] = l;
	x->xnext[x->nx] = x->xhead[l];
	x->xhead[l] = x->nx++;
	return 0;
}

/* The index brought up to d's routes (changed: ctl_plan_rates_changed's).
 * 0 or -ENOMEM. */
static int ridx_update(struct ctl_rate_index *x, const struct ctl_demand *d, int which,
		       const bool *changed)
{
	if (x->xhead == NULL) {
		x->xhead = malloc(sizeof(uint32_t) * (x->nd + 1));
		if (x->xhead == NULL)
			return -ENOMEM;
		memset(x->xhead, 0xff, sizeof(uint32_t) * (x->nd + 1));
	}
	if (x->first == NULL || x->fl == NULL || d->n < x->nf || x->nx > x->first[x->nd] / 2 + 4096)
		return ridx_build(x, d, which);
	for (uint32_t i = 0; i < d->n; i++) {
		const struct ctl_route *r = route_of(d, which, i);

		if (i < x->nf && !changed[i])
			continue;
		for (uint32_t h = 0; h < r->nhops; h++)
			if (ridx_extra(x, r->dlink[h], i) < 0)
				return -ENOMEM;
	}
	x->nf = d->n;
	return 0;
}

int ctl_rate_index_check(const struct ctl_planner *p, const struct ctl_demand *d, int which)
{
	const struct ctl_rate_index *x = p->ridx[which ? 1 : 0];
	int ret = 0;

	if (x == NULL || x->fl == NULL)
		return -ENOENT;
	if (x->nf != d->n)
		return -EINVAL;
	/* every current (flow, link) is listed on that link; every listed flow
	 * is a flow (stale entries allowed) */
	for (uint32_t i = 0; i < d->n && ret == 0; i++) {
		const struct ctl_route *r = route_of(d, which, i);

		for (uint32_t h = 0; h < r->nhops && ret == 0; h++) {
			uint32_t l = r->dlink[h], k;
			bool found = false;

			for (k = x->first[l]; k < x->first[l + 1] && !found; k++)
				found = x->fl[k] == i;
			for (k = x->xhead != NULL ? x->xhead[l] : NONE; k != NONE && !found;
			     k = x->xnext[k])
				found = x->xflow[k] == i;
			if (!found)
				ret = -EINVAL;
		}
	}
	for (uint32_t k = 0; k < x->first[x->nd] && ret == 0; k++)
		if (x->fl[k] >= d->n)
			ret = -EINVAL;
	for (uint32_t k = 0; k < x->nx && ret == 0; k++)
		if (x->xflow[k] >= d->n)
			ret = -EINVAL;
	return ret;
}

/* ---- rates: max-min fair water-filling -------------------------------------------- */

#define WF_FLOW 0x80000000u /* heap id of a flow (its demand cap), not a link */

/*
 * Progressive filling with events: every unfrozen flow grows at the same
 * pace (the "level"); a link with rem capacity left and cnt unfrozen flows
 * saturates at level_at + rem / cnt. The lowest such event freezes its
 * flows at that level; their other links are brought up to date and
 * re-queued (stale heap entries are skipped by comparing levels).
 *
 * With changed (per flow), only the flows that share a link with a changed
 * flow, directly or through other flows, are filled (a breadth-first walk
 * over the kept index), over local link ids: max-min fair rates are unique
 * and decompose over the connected parts of the flow-link graph, so the
 * others' rates, left as they are, stay exact.
 */

struct wf_part {
	uint32_t *fs, nfs; /* the flows filled */
	uint32_t *gl, m;   /* local link -> directed link */
	bool *in;	   /* [d->n] */
};

static void part_add(struct ctl_rate_index *x, const struct ctl_demand *d, int which,
		     struct wf_part *w, uint32_t f)
{
	const struct ctl_route *r = route_of(d, which, f);

	w->in[f] = true;
	w->fs[w->nfs++] = f;
	for (uint32_t h = 0; h < r->nhops; h++)
		if (x->lid[r->dlink[h]] == NONE) {
			x->lid[r->dlink[h]] = w->m;
			w->gl[w->m++] = r->dlink[h];
		}
}

/* The flows connected to a changed one and their links (local ids in
 * x->lid, to be reset by the caller). */
static void part_walk(struct ctl_rate_index *x, const struct ctl_demand *d, int which,
		      const bool *changed, struct wf_part *w)
{
	for (uint32_t i = 0; i < d->n; i++)
		if (changed[i] && !w->in[i])
			part_add(x, d, which, w, i);
	for (uint32_t q = 0; q < w->m; q++) {
		uint32_t l = w->gl[q];

		for (uint32_t k = x->first[l]; k < x->first[l + 1]; k++)
			if (!w->in[x->fl[k]])
				part_add(x, d, which, w, x->fl[k]);
		for (uint32_t k = x->xhead[l]; k != NONE; k = x->xnext[k])
			if (!w->in[x->xflow[k]])
				part_add(x, d, which, w, x->xflow[k]);
	}
}

static int water_fill(struct ctl_planner *p, struct ctl_demand *d, int which, double scale,
		      bool start, const bool *changed)
{
	struct ctl_rate_index *x = p->ridx[which ? 1 : 0];
	struct wf_part w = {0};
	uint32_t m, nfs, *cnt = NULL, *first = NULL, *fl = NULL, *lid = NULL, *mine = NULL;
	double *rem = NULL, *at = NULL, *rate = NULL;
	bool *frozen = NULL;
	struct ctl_heap heap = {0};
	int ret = -ENOMEM;

	if (x == NULL) {
		x = p->ridx[which ? 1 : 0] = calloc(1, sizeof(*x));
		if (x == NULL)
			return -ENOMEM;
		x->nd = 2 * p->t->nlinks;
	}
	if (changed == NULL) {
		/* every flow: the kept index is this filling's, link ids as they are */
		if (ridx_build(x, d, which) < 0)
			goto out;
		m = x->nd;
		nfs = d->n;
		first = x->first;
		fl = x->fl;
	} else {
		if (ridx_update(x, d, which, changed) < 0)
			goto out;
		if (x->lid == NULL) {
			x->lid = malloc(sizeof(uint32_t) * (x->nd + 1));
			if (x->lid == NULL)
				goto out;
			memset(x->lid, 0xff, sizeof(uint32_t) * (x->nd + 1));
		}
		w.in = calloc(d->n + 1, sizeof(bool));
		w.fs = malloc(sizeof(uint32_t) * (d->n + 1));
		w.gl = malloc(sizeof(uint32_t) * (x->nd + 1));
		if (w.in == NULL || w.fs == NULL || w.gl == NULL)
			goto out;
		part_walk(x, d, which, changed, &w);
		lid = x->lid;
		m = w.m;
		nfs = w.nfs;
		/* the part's own index over its local link ids */
		mine = calloc(m + 1, sizeof(uint32_t));
		if (mine == NULL)
			goto out;
		for (uint32_t q = 0; q < nfs; q++) {
			const struct ctl_route *r = route_of(d, which, w.fs[q]);

			for (uint32_t h = 0; h < r->nhops; h++)
				mine[lid[r->dlink[h]] + 1]++;
		}
		for (uint32_t q = 0; q < m; q++)
			mine[q + 1] += mine[q];
		fl = malloc(sizeof(uint32_t) * (mine[m] + 1));
		cnt = malloc(sizeof(uint32_t) * (m + 1));
		if (fl == NULL || cnt == NULL)
			goto out;
		memcpy(cnt, mine, sizeof(uint32_t) * m);
		for (uint32_t q = 0; q < nfs; q++) {
			const struct ctl_route *r = route_of(d, which, w.fs[q]);

			for (uint32_t h = 0; h < r->nhops; h++)
				fl[cnt[lid[r->dlink[h]]]++] = w.fs[q];
		}
		first = mine;
	}
	if (cnt == NULL)
		cnt = malloc(sizeof(uint32_t) * (m + 1));
	rem = malloc(sizeof(double) * (m + 1));
	at = calloc(m + 1, sizeof(double));
	rate = malloc(sizeof(double) * (d->n + 1));
	frozen = malloc(sizeof(bool) * (d->n + 1));
	/* every push below fits: a link is queued once, then once per frozen
	 * flow crossing it; a flow once (its cap) */
	if (cnt == NULL || rem == NULL || at == NULL || rate == NULL || frozen == NULL ||
	    ctl_heap_reserve(&heap, 2 * (size_t)first[m] + nfs + m + 1) < 0)
		goto out;
	ret = 0;
	for (uint32_t q = 0; q < nfs; q++) {
		uint32_t i = changed == NULL ? q : w.fs[q];

		rate[i] = 0;
		frozen[i] = route_of(d, which, i)->nhops == 0;
		if (!frozen[i] && d->unit == CTL_UNIT_BPS)
			ctl_heap_push(&heap, (double)d->flows[i].demand, WF_FLOW | i);
	}
	for (uint32_t q = 0; q < m; q++) {
		cnt[q] = first[q + 1] - first[q];
		rem[q] = p->cap[changed == NULL ? q : w.gl[q]] * scale;
		if (cnt[q] > 0)
			ctl_heap_push(&heap, rem[q] / cnt[q], q);
	}
	while (heap.n > 0) {
		struct ctl_heap_ent e = ctl_heap_pop(&heap);
		uint32_t lo, hi;

		if (e.id & WF_FLOW) {
			lo = e.id & ~WF_FLOW;
			hi = lo + 1;
		} else {
			uint32_t q = e.id;

			if (cnt[q] == 0 || e.key != at[q] + rem[q] / cnt[q])
				continue; /* stale */
			lo = first[q];
			hi = first[q + 1];
		}
		for (uint32_t k = lo; k < hi; k++) {
			uint32_t f = (e.id & WF_FLOW) ? lo : fl[k];
			const struct ctl_route *r = route_of(d, which, f);

			if (frozen[f])
				continue;
			frozen[f] = true;
			rate[f] = e.key;
			for (uint32_t h = 0; h < r->nhops; h++) {
				uint32_t q = lid == NULL ? r->dlink[h] : lid[r->dlink[h]];

				rem[q] -= (e.key - at[q]) * cnt[q];
				if (rem[q] < 0)
					rem[q] = 0;
				at[q] = e.key;
				cnt[q]--;
				if (cnt[q] > 0)
					ctl_heap_push(&heap, at[q] + rem[q] / cnt[q], q);
			}
		}
	}
	for (uint32_t q = 0; q < nfs; q++) {
		uint32_t i = changed == NULL ? q : w.fs[q];

		if (start)
			d->flows[i].start_bps = rate[i];
		else
			d->flows[i].target_bps = rate[i];
	}
out:
	for (uint32_t q = 0; lid != NULL && q < w.m; q++)
		lid[w.gl[q]] = NONE;
	free(w.in);
	free(w.fs);
	free(w.gl);
	free(mine);
	if (changed != NULL)
		free(fl);
	free(cnt);
	free(rem);
	free(at);
	free(rate);
	free(frozen);
	ctl_heap_fini(&heap);
	return ret;
}
int ctl_plan_rates_changed(struct ctl_planner *p, struct ctl_demand *d, int which, double headroom,
			   const bool *changed)
{
	int ret;

	if (!(headroom > 0 && headroom <= 1))
		return -EINVAL;
	if (headroom == 1.0) {
		/* start and target are the same filling: do it once */
		ret = water_fill(p, d, which, 1.0, false, changed);
		for (size_t i = 0; ret == 0 && i < d->n; i++)
			d->flows[i].start_bps = d->flows[i].target_bps;
		return ret;
	}
	ret = water_fill(p, d, which, headroom, true, changed);
	if (ret == 0)
		ret = water_fill(p, d, which, 1.0, false, changed);
	return ret;
}

int ctl_plan_rates(struct ctl_planner *p, struct ctl_demand *d, int which, double headroom)
{
	return ctl_plan_rates_changed(p, d, which, headroom, NULL);
}

int ctl_plan_ceilings(struct ctl_planner *p, struct ctl_demand *d, int which, const double *cap)
{
	uint32_t nd = 2 * p->t->nlinks;
	double *own = malloc(sizeof(double) * (nd + 1)), *tgt = malloc(sizeof(double) * (d->n + 1));
	int ret = -ENOMEM;

	if (own == NULL || tgt == NULL)
		goto out;
	for (uint32_t l = 0; l < nd; l++)
		if (!(cap[l] > 0)) {
			ret = -EINVAL;
			goto out;
		}
	memcpy(own, p->cap, sizeof(double) * nd);
	for (size_t i = 0; i < d->n; i++)
		tgt[i] = d->flows[i].target_bps;
	memcpy(p->cap, cap, sizeof(double) * nd);
	ret = water_fill(p, d, which, 1.0, false, NULL);
	memcpy(p->cap, own, sizeof(double) * nd);
	for (size_t i = 0; i < d->n; i++) {
		struct ctl_flow *f = &d->flows[i];

		f->max_bps = ret == 0 && f->target_bps > tgt[i] ? f->target_bps : tgt[i];
		f->target_bps = tgt[i];
	}
out:
	free(own);
	free(tgt);
	return ret;
}
