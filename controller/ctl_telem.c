// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_telem.c: switch port readings into per directed link measured load,
 * queue state and unplanned load (ctl_telem.h). Pure: no Redis.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_telem.h"
#include "ice_log.h"

extern uint32_t ctl_log_sub; /* "plan" (ctl_index.c) */
#define SUB ctl_log_sub

const char *const ctl_telem_fields[CTL_TF_N] = {
	[CTL_TF_SEQ] = "seq",
	[CTL_TF_TS] = "ts_ms",
	[CTL_TF_DT] = "dt_ms",
	[CTL_TF_OCTETS] = "out-octets",
	[CTL_TF_MARKS] = "ecn-marked-pkts",
	[CTL_TF_AVGQ] = "avg-queue-len",
	[CTL_TF_OPER] = "oper-status",
	[CTL_TF_RESETS] = "resets",
	[CTL_TF_PFC_IN] = "in-pfc-paused",
	[CTL_TF_PFC_OUT] = "out-pfc-paused",
};

static const char *const state_names[CTL_TL_STATE_MAX] = {
	[CTL_TL_NONE] = "none", [CTL_TL_OK] = "ok",	  [CTL_TL_RESET] = "reset",
	[CTL_TL_GAP] = "gap",	[CTL_TL_STALE] = "stale",
};

const char *ctl_telem_state_name(enum ctl_telem_state s)
{
	return (unsigned)s < CTL_TL_STATE_MAX ? state_names[s] : "?";
}

/* ---- records */

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (s == NULL || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno != 0 || *end != '\0' ? -EINVAL : 0;
}

static int parse_dbl(const char *s, double *v)
{
	char *end;

	if (s == NULL || *s == '\0')
		return -EINVAL;
	*v = strtod(s, &end);
	return *end != '\0' || !isfinite(*v) || *v < 0 ? -EINVAL : 0;
}

int ctl_telem_rec_parse(struct ctl_telem_rec *r, const char *const *v)
{
	memset(r, 0, sizeof(*r));
	r->oper = -1;
	if (parse_u64(v[CTL_TF_SEQ], &r->seq) < 0 || parse_u64(v[CTL_TF_TS], &r->ts_ms) < 0)
		return -EINVAL;
	if (v[CTL_TF_DT] != NULL && parse_dbl(v[CTL_TF_DT], &r->dt_ms) < 0)
		return -EINVAL;
	if (v[CTL_TF_OCTETS] != NULL) {
		if (parse_u64(v[CTL_TF_OCTETS], &r->octets) < 0)
			return -EINVAL;
		r->has_octets = true;
	}
	if (v[CTL_TF_MARKS] != NULL) {
		if (parse_u64(v[CTL_TF_MARKS], &r->marks) < 0)
			return -EINVAL;
		r->has_marks = true;
	}
	if (v[CTL_TF_AVGQ] != NULL) {
		if (parse_dbl(v[CTL_TF_AVGQ], &r->avg_q) < 0)
			return -EINVAL;
		r->has_avgq = true;
	}
	if (v[CTL_TF_RESETS] != NULL && parse_u64(v[CTL_TF_RESETS], &r->resets) < 0)
		return -EINVAL;
	if (v[CTL_TF_OPER] != NULL)
		r->oper = strcmp(v[CTL_TF_OPER], "UP") == 0;
	return 0;
}

/* ---- the links */

int ctl_telem_init(struct ctl_telem *tm, const struct topo *t)
{
	memset(tm, 0, sizeof(*tm));
	tm->t = t;
	tm->ndl = 2 * t->nlinks;
	tm->dl = calloc(tm->ndl + 1, sizeof(*tm->dl));
	if (tm->dl == NULL)
		return -ENOMEM;
	for (uint32_t l = 0; l < t->nlinks; l++) {
		const struct topo_link *k = &t->links[l];

		tm->dl[2 * l].port =
			t->nodes[t->ports[k->a].node].kind == TOPO_HOST ? UINT32_MAX : k->a;
		tm->dl[2 * l + 1].port =
			t->nodes[t->ports[k->b].node].kind == TOPO_HOST ? UINT32_MAX : k->b;
	}
	tm->alpha = 0.5;
	tm->deadband = 0.10;
	tm->persist = 2;
	tm->floor = 0.05;
	tm->stale_ms = 1000;
	tm->gap_ms = 500;
	tm->hot_intervals = 2;
	tm->host_hold_ms = 10000;
	return 0;
}

void ctl_telem_fini(struct ctl_telem *tm)
{
	if (tm == NULL)
		return;
	free(tm->dl);
	free(tm->unknown);
	memset(tm, 0, sizeof(*tm));
}

int ctl_telem_dlink(const struct topo *t, const char *sw, const char *port, uint32_t *dlink)
{
	const struct topo_node *n = topo_node_by_name(t, sw);

	if (n == NULL || n->kind == TOPO_HOST)
		return -ENOENT;
	for (uint32_t p = 0; p < t->nports; p++) {
		const struct topo_port *tp = &t->ports[p];

		if (tp->node != n->id || strcmp(tp->ifname, port) != 0)
			continue;
		*dlink = 2 * tp->link + (t->links[tp->link].a == p ? 0 : 1);
		return 0;
	}
	return -ENOENT;
}

static void link_name(const struct ctl_telem *tm, uint32_t dl, char *buf, size_t len)
{
	const struct topo_link *k = &tm->t->links[dl / 2];
	uint32_t from = dl & 1 ? k->b : k->a, to = dl & 1 ? k->a : k->b;

	snprintf(buf, len, "%s>%s", tm->t->nodes[tm->t->ports[from].node].name,
		 tm->t->nodes[tm->t->ports[to].node].name);
}

/* The link leaves the measured state: say why, once per link and kind. */
static void fall_back(struct ctl_telem *tm, uint32_t dl, enum ctl_telem_state s, const char *why)
{
	struct ctl_telem_link *x = &tm->dl[dl];
	char name[96];

	x->state = s;
	x->fresh = false;
	x->hot = 0;
	x->unplanned = 0;
	if (x->logged & (1u << s))
		return;
	x->logged |= 1u << s;
	link_name(tm, dl, name, sizeof(name));
	ice_warn(SUB,
		 "telemetry of %s: %s; planning it from demand only until it is measured again",
		 name, why);
}

static void unknown_port(struct ctl_telem *tm, const char *sw, const char *port)
{
	char name[64], (*u)[64];

	tm->unknown_ports++;
	snprintf(name, sizeof(name), "%s:%s", sw, port);
	for (uint32_t i = 0; i < tm->nunknown; i++)
		if (strcmp(tm->unknown[i], name) == 0)
			return;
	ice_warn(SUB, "telemetry: switch port %s is not in the topology: ignored", name);
	if (tm->nunknown >= 256)
		return;
	u = realloc(tm->unknown, sizeof(*u) * (tm->nunknown + 1));
	if (u == NULL)
		return;
	tm->unknown = u;
	snprintf(u[tm->nunknown++], sizeof(*u), "%s", name);
}

int ctl_telem_update(struct ctl_telem *tm, const char *sw, const char *port,
		     const struct ctl_telem_rec *r, uint64_t now_ms)
{
	struct ctl_telem_link *x;
	uint32_t dl;
	double dt;
	bool back, gap, hot;
	uint32_t kmin;

	if (ctl_telem_dlink(tm->t, sw, port, &dl) < 0) {
		unknown_port(tm, sw, port);
		return -ENOENT;
	}
	x = &tm->dl[dl];
	if (!r->has_octets) {
		tm->bad_records++;
		fall_back(tm, dl, CTL_TL_NONE, "no byte counter in the port's record");
		return -EINVAL;
	}
	if (x->have && r->seq == x->seq)
		return 0; /* read faster than written */
	tm->readings++;
	back = x->have && (r->seq < x->seq || r->octets < x->octets ||
			   (r->has_marks && r->marks < x->marks) || r->resets > x->resets);
	dt = r->seq == x->seq + 1 && r->dt_ms > 0 ? r->dt_ms : (double)r->ts_ms - (double)x->ts_ms;
	gap = x->have && !back && (!(dt > 0) || r->ts_ms > x->ts_ms + tm->gap_ms);
	if (x->have && !back && !gap && r->seq != x->seq + 1)
		tm->skipped += r->seq - x->seq - 1;
	if (back) {
		tm->backwards++;
		fall_back(tm, dl, CTL_TL_RESET,
			  "counters went back (a switch reloaded, or its exporter restarted)");
	} else if (gap) {
		tm->gaps++;
		fall_back(tm, dl, CTL_TL_GAP, "a gap in its readings");
	} else if (x->have) {
		x->bytes_s = (double)(r->octets - x->octets) * 1e3 / dt;
		x->ce = r->has_marks ? r->marks - x->marks : 0;
		x->avg_q = r->has_avgq ? r->avg_q : 0;
		x->state = CTL_TL_OK;
		x->fresh = true;
		kmin = tm->t->links[dl / 2].ecn.kmin_bytes;
		hot = x->ce > 0 || (kmin > 0 && x->avg_q > (double)kmin);
		if (hot && x->hot++ == 0)
			x->hot_ms = r->ts_ms;
		if (!hot)
			x->hot = 0;
	}
	x->oper_down = r->oper == 0; /* meaningful across a reset or a gap too */
	x->have = true;
	x->seq = r->seq;
	x->ts_ms = r->ts_ms;
	x->octets = r->octets;
	x->marks = r->marks;
	x->resets = r->resets;
	x->seen_ms = now_ms;
	return back ? -ERANGE : gap ? -EAGAIN : x->state == CTL_TL_OK && x->fresh ? 1 : 0;
}

void ctl_telem_expire(struct ctl_telem *tm, uint64_t now_ms)
{
	for (uint32_t dl = 0; dl < tm->ndl; dl++) {
		struct ctl_telem_link *x = &tm->dl[dl];

		if (!x->have || now_ms < x->seen_ms + tm->stale_ms)
			continue;
		tm->stale++;
		fall_back(tm, dl, CTL_TL_STALE, "its readings stopped");
		x->have = false;
		x->oper_down = false; /* unknown: up, as the topology says */
	}
}

void ctl_telem_feedback(struct ctl_telem *tm, const double *known)
{
	for (uint32_t dl = 0; dl < tm->ndl; dl++) {
		struct ctl_telem_link *x = &tm->dl[dl];
		double rate = (double)tm->t->links[dl / 2].rate_bps / 8, u, held;

		x->known = known[dl];
		if (x->state != CTL_TL_OK) {
			x->unplanned = x->u_prev = 0;
			continue;
		}
		if (!x->fresh)
			continue;
		x->fresh = false;
		u = x->bytes_s - known[dl];
		/* noise: below the dead band, or one interval alone (the agents'
		 * and the switches' windows are not aligned; a moved QP shows on
		 * its new route before its rate is booked there) */
		if (u < tm->deadband * rate)
			u = 0;
		x->over = u > 0 ? x->over + 1 : 0;
		held = u < x->u_prev ? u : x->u_prev;
		x->u_prev = u;
		if (x->over < tm->persist)
			u = 0;
		/* fast up, slow down: a rise counts at once to the level it held
		 * in each of the last two intervals (the newer's and the older's
		 * least: one interval alone, say a moved QP counted on its old
		 * link too, does not count); smoothed in instead, it took three
		 * to four intervals to reach a new background, and a congestion
		 * re-plan made meanwhile moved too few flows. It fades at alpha. */
		if (x->over >= tm->persist && held > x->unplanned)
			x->unplanned = held;
		else
			x->unplanned = tm->alpha * u + (1 - tm->alpha) * x->unplanned;
		if (x->unplanned < 1)
			x->unplanned = 0;
	}
}

void ctl_telem_host(struct ctl_telem *tm, const uint32_t *qps, const uint32_t *marked,
		    const double *known, uint64_t now_ms)
{
	for (uint32_t dl = 0; dl < tm->ndl; dl++) {
		struct ctl_telem_link *x = &tm->dl[dl];
		double rate = (double)tm->t->links[dl / 2].rate_bps / 8, u = 0;

		const struct topo_link *k = &tm->t->links[dl / 2];
		uint32_t to = dl & 1 ? k->a : k->b;

		x->qps = qps[dl];
		x->marked = marked[dl];
		if (x->port == UINT32_MAX || x->state == CTL_TL_OK ||
		    tm->t->nodes[tm->t->ports[to].node].kind == TOPO_HOST) {
			/* a host's own links, or measured: not this way */
			x->hhot = 0;
			x->hunplanned = 0;
			continue;
		}
		if (x->qps == 0) { /* nothing to learn from: keep what was learnt, a while */
			x->hhot = 0;
			if (now_ms > x->hseen_ms + tm->host_hold_ms)
				x->hunplanned = 0;
			continue;
		}
		if (x->marked == x->qps) {
			if (x->hhot++ == 0)
				x->hhot_ms = now_ms;
			x->hseen_ms = now_ms;
			u = rate - known[dl];
			if (u < tm->deadband * rate)
				u = 0;
		} else {
			x->hhot = 0;
		}
		x->hunplanned = tm->alpha * u + (1 - tm->alpha) * x->hunplanned;
		if (x->hunplanned < 1)
			x->hunplanned = 0;
	}
}

double ctl_telem_unplanned(const struct ctl_telem *tm, uint32_t dl)
{
	if (dl >= tm->ndl)
		return 0;
	return tm->dl[dl].state == CTL_TL_OK ? tm->dl[dl].unplanned : tm->dl[dl].hunplanned;
}

double ctl_telem_known_bps(double rate_bps, double plan_bps, uint64_t ann_ms, uint64_t now_ms,
			   uint64_t ramp_ms)
{
	if (ann_ms != 0 && now_ms >= ann_ms && now_ms < ann_ms + ramp_ms && plan_bps > rate_bps)
		return plan_bps;
	return rate_bps;
}

void ctl_telem_forget(struct ctl_telem *tm)
{
	for (uint32_t dl = 0; dl < tm->ndl; dl++) {
		struct ctl_telem_link *x = &tm->dl[dl];

		x->unplanned = x->hunplanned = x->u_prev = 0;
		x->over = x->hot = x->hhot = 0;
		x->fresh = false;
	}
}

double ctl_telem_cap(const struct ctl_telem *tm, uint32_t dl)
{
	double rate, c;

	if (dl >= tm->ndl)
		return 0;
	rate = (double)tm->t->links[dl / 2].rate_bps;
	c = rate - 8 * ctl_telem_unplanned(tm, dl);
	return c > tm->floor * rate ? c : tm->floor * rate;
}

bool ctl_telem_congested(const struct ctl_telem *tm, uint32_t dl)
{
	if (dl >= tm->ndl)
		return false;
	if (tm->dl[dl].state == CTL_TL_OK)
		return tm->dl[dl].hot >= tm->hot_intervals;
	return tm->dl[dl].hhot >= tm->hot_intervals;
}

bool ctl_telem_link_down(const struct ctl_telem *tm, uint32_t link)
{
	return 2 * link + 1 < tm->ndl &&
	       (tm->dl[2 * link].oper_down || tm->dl[2 * link + 1].oper_down);
}

bool ctl_telem_pub_differs(const struct ctl_telem_pub *was, const struct ctl_telem_pub *now,
			   double rate_Bps, uint32_t kmin_bytes)
{
	double band = CTL_TELEM_PUB_LOAD_BAND * rate_Bps, qband;

	if (strcmp(was->state, now->state) != 0 || was->pfc_storm != now->pfc_storm ||
	    fabs(was->pfc_paused - now->pfc_paused) > 0.05 ||
	    fabs(was->planned - now->planned) > band || fabs(was->known - now->known) > band ||
	    fabs(was->measured - now->measured) > band ||
	    fabs(was->unplanned - now->unplanned) > band ||
	    fabs(was->capacity - now->capacity) > band)
		return true;
	qband = CTL_TELEM_PUB_QUEUE_FRAC * kmin_bytes;
	if (qband < CTL_TELEM_PUB_QUEUE_MIN)
		qband = CTL_TELEM_PUB_QUEUE_MIN;
	if (fabs(was->avg_q - now->avg_q) > qband ||
	    (kmin_bytes > 0 && (was->avg_q > kmin_bytes) != (now->avg_q > kmin_bytes)))
		return true;
	return (was->ce == 0) != (now->ce == 0) || now->ce > 2 * was->ce || 2 * now->ce < was->ce;
}
