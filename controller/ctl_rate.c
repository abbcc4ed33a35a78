// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_rate.c: the rate planner: max-min fair rates on the planned routes by
 * progressive filling (water-filling) with an event heap.
 */
#include <errno.h>
#include <stdlib.h>

#include "ctl_path_internal.h"

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
 * over the flows on each link): max-min fair rates are unique and decompose
 * over the connected parts of the flow-link graph, so the others' rates,
 * left as they are, stay exact.
 */

/* Mark in `in` the flows connected to a changed one and in lk their links;
 * q is scratch of nd + 1 links. */
static void wf_part(const struct ctl_demand *d, int which, const bool *changed,
		    const uint32_t *first, const uint32_t *fl, bool *in, uint8_t *lk, uint32_t *q)
{
	uint32_t qn = 0, qh = 0;

	for (uint32_t i = 0; i < d->n; i++) {
		const struct ctl_route *r = which ? &d->flows[i].ecmp : &d->flows[i].path;

		if (!changed[i] || in[i])
			continue;
		in[i] = true;
		for (uint32_t h = 0; h < r->nhops; h++)
			if (!lk[r->dlink[h]]) {
				lk[r->dlink[h]] = 1;
				q[qn++] = r->dlink[h];
			}
	}
	while (qh < qn) {
		uint32_t l = q[qh++];

		for (uint32_t k = first[l]; k < first[l + 1]; k++) {
			uint32_t f = fl[k];
			const struct ctl_route *r = which ? &d->flows[f].ecmp : &d->flows[f].path;

			if (in[f])
				continue;
			in[f] = true;
			for (uint32_t h = 0; h < r->nhops; h++)
				if (!lk[r->dlink[h]]) {
					lk[r->dlink[h]] = 1;
					q[qn++] = r->dlink[h];
				}
		}
	}
}

static int water_fill(struct ctl_planner *p, struct ctl_demand *d, int which, double scale,
		      bool start, const bool *changed)
{
	const struct topo *t = p->t;
	uint32_t nd = 2 * t->nlinks, *cnt = calloc(nd + 1, sizeof(uint32_t));
	uint32_t *first = calloc(nd + 2, sizeof(uint32_t)), *fl = NULL;
	double *rem = malloc(sizeof(double) * (nd + 1)), *at = calloc(nd + 1, sizeof(double));
	double *rate = malloc(sizeof(double) * (d->n + 1));
	bool *frozen = calloc(d->n + 1, sizeof(bool)), *in = NULL;
	uint8_t *lk = NULL;
	struct ctl_heap heap = {0};
	size_t total = 0;
	int ret = 0;

	if (cnt == NULL || first == NULL || rem == NULL || at == NULL || rate == NULL ||
	    frozen == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < d->n; i++) {
		const struct ctl_route *r = which ? &d->flows[i].ecmp : &d->flows[i].path;

		rate[i] = 0;
		for (uint32_t h = 0; h < r->nhops; h++)
			cnt[r->dlink[h]]++;
		total += r->nhops;
		frozen[i] = r->nhops == 0;
	}
	fl = malloc(sizeof(uint32_t) * (total + 1));
	/* every push below fits: a link is queued once, then once per frozen
	 * flow crossing it; a flow once (its cap) */
	if (fl == NULL || ctl_heap_reserve(&heap, 2 * total + d->n + nd + 1) < 0) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t l = 0; l < nd; l++)
		first[l + 1] = first[l] + cnt[l];
	for (uint32_t l = 0; l < nd; l++)
		cnt[l] = 0;
	for (uint32_t i = 0; i < d->n; i++) {
		const struct ctl_route *r = which ? &d->flows[i].ecmp : &d->flows[i].path;

		for (uint32_t h = 0; h < r->nhops; h++) {
			uint32_t l = r->dlink[h];

			fl[first[l] + cnt[l]++] = i;
		}
	}
	if (changed != NULL) {
		uint32_t *q = malloc(sizeof(uint32_t) * (nd + 1));

		in = calloc(d->n + 1, sizeof(bool));
		lk = calloc(nd + 1, 1);
		if (in == NULL || lk == NULL || q == NULL) {
			free(q);
			ret = -ENOMEM;
			goto out;
		}
		wf_part(d, which, changed, first, fl, in, lk, q);
		free(q);
		for (uint32_t i = 0; i < d->n; i++)
			frozen[i] = frozen[i] || !in[i]; /* keeps its rate */
	}
	for (uint32_t i = 0; i < d->n; i++)
		if (!frozen[i] && d->unit == CTL_UNIT_BPS)
			ctl_heap_push(&heap, (double)d->flows[i].demand, WF_FLOW | i);
	for (uint32_t l = 0; l < nd; l++) {
		rem[l] = p->cap[l] * scale;
		if (cnt[l] > 0 && (lk == NULL || lk[l]))
			ctl_heap_push(&heap, rem[l] / cnt[l], l);
	}
	while (heap.n > 0) {
		struct ctl_heap_ent e = ctl_heap_pop(&heap);
		uint32_t lo, hi;

		if (e.id & WF_FLOW) {
			lo = e.id & ~WF_FLOW;
			hi = lo + 1;
		} else {
			uint32_t l = e.id;

			if (cnt[l] == 0 || e.key != at[l] + rem[l] / cnt[l])
				continue; /* stale */
			lo = first[l];
			hi = first[l + 1];
		}
		for (uint32_t k = lo; k < hi; k++) {
			uint32_t f = (e.id & WF_FLOW) ? lo : fl[k];
			const struct ctl_route *r = which ? &d->flows[f].ecmp : &d->flows[f].path;

			if (frozen[f])
				continue;
			frozen[f] = true;
			rate[f] = e.key;
			for (uint32_t h = 0; h < r->nhops; h++) {
				uint32_t l = r->dlink[h];

				rem[l] -= (e.key - at[l]) * cnt[l];
				if (rem[l] < 0)
					rem[l] = 0;
				at[l] = e.key;
				cnt[l]--;
				if (cnt[l] > 0)
					ctl_heap_push(&heap, at[l] + rem[l] / cnt[l], l);
			}
		}
	}
	for (uint32_t i = 0; i < d->n; i++) {
		if (in != NULL && !in[i])
			continue;
		if (start)
			d->flows[i].start_bps = rate[i];
		else
			d->flows[i].target_bps = rate[i];
	}
out:
	free(in);
	free(lk);
	free(cnt);
	free(first);
	free(fl);
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
