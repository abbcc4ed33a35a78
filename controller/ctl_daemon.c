// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_daemon: ice-controller's loop (ctl_daemon.h): the planning step and
 * the daemon's life. The Redis connection is ctl_daemon_redis.c, the view
 * ctl_daemon_view.c, the lease ctl_daemon_lease.c, publishing
 * ctl_daemon_publish.c (ctl_daemon_internal.h).
 *
 * Each interval: renew (or try to take) the leader lease, read link state
 * and new events, every qp_interval the QPs (at once after a QP event);
 * plan when the view changed (new/idle QPs: incremental; a link, a
 * collective, a probe map that contradicts the last one (sports: probe), a
 * takeover or the periodic re-optimisation: global with hysteresis);
 * publish when the plans differ from the last ones or a third of their
 * lifetime has passed; read back which epoch each host applied and print
 * the reaction time.
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_daemon_internal.h"
#include "ice_log.h"
#include "ice_time.h"

ICE_LOG_SUBSYSTEM(ctld_log_sub, "ctl");

/* ---- pure helpers (unit-tested) */

static bool entry_same(const struct ice_plan_entry *a, const struct ice_plan_entry *b)
{
	return a->qpn == b->qpn && a->sport == b->sport && a->start_mbps == b->start_mbps &&
	       a->target_mbps == b->target_mbps && a->has_dcqcn == b->has_dcqcn &&
	       (!a->has_dcqcn || memcmp(&a->dcqcn, &b->dcqcn, sizeof(a->dcqcn)) == 0);
}

bool ctld_plans_same(const struct ice_host_plan *a, uint32_t na, const struct ice_host_plan *b,
		     uint32_t nb)
{
	if (na != nb)
		return false;
	for (uint32_t h = 0; h < na; h++) {
		const struct ice_host_plan *x = &a[h], *y = NULL;

		for (uint32_t k = 0; k < nb && y == NULL; k++)
			if (strcmp(b[k].host, x->host) == 0)
				y = &b[k];
		if (y == NULL || x->n != y->n)
			return false;
		for (uint32_t i = 0; i < x->n; i++) {
			bool found = false;

			for (uint32_t j = 0; j < y->n && !found; j++)
				found = entry_same(&x->entries[i], &y->entries[j]);
			if (!found)
				return false;
		}
	}
	return true;
}

void ctld_ring_order(const int32_t *next, uint32_t n, uint32_t *order)
{
	bool *seen = calloc(n + 1, sizeof(bool));
	uint32_t k = 0, r = 0;

	if (seen == NULL || n == 0) {
		for (uint32_t i = 0; i < n; i++)
			order[i] = i;
		free(seen);
		return;
	}
	while (k < n && !seen[r]) {
		seen[r] = true;
		order[k++] = r;
		if (next[r] < 0 || (uint32_t)next[r] >= n)
			break;
		r = (uint32_t)next[r];
	}
	if (k != n || (next[order[n - 1]] != 0 && next[order[n - 1]] >= 0)) {
		/* not one cycle through every rank: rank order */
		for (uint32_t i = 0; i < n; i++)
			order[i] = i;
	}
	free(seen);
}

void ctld_plan_opts(const struct ctld_cfg *c, bool incremental, struct ctl_plan_opts *o)
{
	ctl_plan_opts_default(o);
	o->hysteresis = c->hysteresis;
	o->search_budget_s = c->search_budget;
	o->mode = incremental ? CTL_PLAN_INCREMENTAL : CTL_PLAN_REOPT;
	/* q->route is what the last plan (on this topology: link ids do not
	 * change when the planner is rebuilt for a link's state) or
	 * ctl_route_of_sport gave, links and all; a route over a down link is
	 * dropped before planning (route_down) */
	o->routes_current = true;
}

/* ---- planning */

static bool route_down(const struct ctld *d, const struct ctl_route *r)
{
	for (uint32_t i = 0; r->idx >= 0 && i < r->nhops; i++)
		if (d->down[r->dlink[i] / 2])
			return true;
	return false;
}

/* Demand of the announced collectives onto the QPs of their NIC pairs. */
static void announce(struct ctld *d)
{
	struct ctl_demand s;

	for (size_t i = 0; i < d->nqps; i++) {
		d->qps[i].ann_bps = 0;
		d->qps[i].ann_flags = 0;
		d->qps[i].op = CTL_COLL_ANY;
		d->qps[i].coll_id = d->qps[i].msg_bytes = 0;
		d->qps[i].ann_ms = 0;
	}
	for (size_t c = 0; c < d->ncolls; c++) {
		struct ccoll *cl = &d->colls[c];
		uint32_t *order, *nics;

		if (!cl->active)
			continue;
		order = calloc(cl->nranks, sizeof(uint32_t));
		nics = calloc(cl->nranks, sizeof(uint32_t));
		ctl_demand_init(&s, CTL_UNIT_BYTES);
		if (order == NULL || nics == NULL)
			goto next;
		ctld_ring_order(cl->next, cl->nranks, order);
		for (uint32_t r = 0; r < cl->nranks; r++)
			nics[r] = cl->nic[order[r]];
		if (ctl_demand_add_collective(&s, d->topo, cl->op, cl->bytes ? cl->bytes : 1, nics,
					      cl->nranks, 1, strtoull(cl->comm, NULL, 16), 0,
					      0) < 0)
			goto next;
		for (size_t f = 0; f < s.n; f++) {
			const struct ctl_flow *fl = &s.flows[f];
			double src_total = 0, nic_bps;
			uint32_t nq = 0;

			for (size_t g = 0; g < s.n; g++)
				if (s.flows[g].src_port == fl->src_port)
					src_total += (double)s.flows[g].demand;
			nic_bps = (double)d->rate0[d->topo->ports[fl->src_port].link];
			for (size_t i = 0; i < d->nqps; i++)
				nq += d->qps[i].src == fl->src_port &&
				      d->qps[i].dst == fl->dst_port;
			for (size_t i = 0; i < d->nqps && src_total > 0; i++) {
				struct cqp *q = &d->qps[i];

				if (q->src != fl->src_port || q->dst != fl->dst_port)
					continue;
				q->ann_bps += nic_bps * (double)fl->demand / src_total / nq;
				q->ann_flags = CTL_FLOW_ANNOUNCED;
				q->op = cl->op;
				q->coll_id = strtoull(cl->comm, NULL, 16);
				q->msg_bytes = cl->bytes;
				if (cl->active_ms > q->ann_ms)
					q->ann_ms = cl->active_ms;
			}
		}
	next:
		ctl_demand_fini(&s);
		free(order);
		free(nics);
	}
}

static int add_empty_plans(struct ctld *d, struct ice_host_plan **hps, uint32_t *nh)
{
	for (uint32_t i = 0; i < d->nhosts; i++) {
		struct ice_host_plan *p;
		bool have = false;

		for (uint32_t k = 0; k < *nh && !have; k++)
			have = strcmp((*hps)[k].host, d->hosts[i].name) == 0;
		if (have)
			continue;
		p = realloc(*hps, sizeof(**hps) * (*nh + 1));
		if (p == NULL)
			return -ENOMEM;
		*hps = p;
		p = &(*hps)[(*nh)++];
		memset(p, 0, sizeof(*p));
		snprintf(p->host, sizeof(p->host), "%.*s", (int)sizeof(p->host) - 1,
			 d->hosts[i].name);
		p->lifetime_ms = (uint32_t)(d->cfg.lifetime / ICE_NSEC_PER_MSEC);
	}
	return 0;
}

static void plan(struct ctld *d)
{
	unsigned trig = d->trig;
	struct ctl_plan_opts o;
	struct ctl_plan_stats st = {0};
	struct ctl_demand dem;
	struct ice_host_plan *hps = NULL;
	uint32_t nh = 0, *qix = NULL, nann = 0, down_used = 0, nfixed = 0, nsticky = 0;
	uint64_t now_ns = ice_now_ns(), planned_ms, epoch = 0;
	struct ctl_pathmap_probe probe;
	struct ctl_pathmap *pm;
	double ecmp = 0;
	char fab[64];
	bool refresh, same;
	int ret;

	/* new or idle QPs, a collective's end (it frees capacity, it needs no
	 * move: its QPs idle soon after) and the lifetime's refresh keep every
	 * planned route */
	ctld_plan_opts(&d->cfg, (trig & ~(unsigned)(TRIG_QP | TRIG_REFRESH | TRIG_COLL_END)) == 0,
		       &o);
	/* a periodic plan moves QPs only for a gain of the max utilisation:
	 * the fabric's tie-break runs with an event (a collective, a link, a
	 * map, congestion, a takeover), not mid-collective on a timer */
	o.no_tie = (trig & TRIG_PERIODIC) != 0 &&
		   (trig & ~(unsigned)(TRIG_PERIODIC | TRIG_QP | TRIG_REFRESH)) == 0;
	ctl_demand_init(&dem, CTL_UNIT_BPS);
	/* which source port takes which path: one provider for the whole plan */
	pm = d->probe ? ctl_pathmap_probe_init(&probe, d->pl, d->pmaps, d->npmaps)
		      : ctl_pathmap_model(d->pl);
	announce(d);
	qix = calloc(d->nqps + 1, sizeof(*qix));
	if (qix == NULL)
		goto out;
	for (size_t i = 0; i < d->nqps; i++) {
		struct cqp *q = &d->qps[i];
		struct ctl_flow f = {0};

		if (!q->active && q->ann_flags == 0) {
			q->planned = false;
			continue;
		}
		f.src_port = q->src;
		f.dst_port = q->dst;
		f.host = q->host;
		f.lqpn = q->qpn;
		f.rqpn = q->rqpn;
		f.demand = (uint64_t)(q->ann_flags ? q->ann_bps : q->peak_bps);
		if (f.demand == 0)
			f.demand = 1;
		f.cur_sport = q->planned ? q->sport : q->sport_now;
		f.flags = (uint8_t)q->ann_flags;
		f.op = q->op;
		f.coll_id = q->coll_id;
		f.msg_bytes = q->msg_bytes;
		f.path.idx = -1;
		if (ctl_demand_add(&dem, &f) < 0)
			goto out;
		qix[dem.n - 1] = (uint32_t)i;
		nann += q->ann_flags != 0;
	}
	/* the routes flows have now: planned, else where their port hashes */
	for (size_t k = 0; k < dem.n; k++) {
		struct ctl_flow *f = &dem.flows[k];
		struct cqp *q = &d->qps[qix[k]];
		struct ctl_route r = {.idx = -1};

		if (q->planned && q->route.idx >= 0)
			r = q->route;
		else if (o.mode == CTL_PLAN_REOPT && q->sport_now != 0 &&
			 ctl_route_of_sport(pm, f, q->sport_now, &r) < 0)
			r.idx = -1;
		if (route_down(d, &r))
			r.idx = -1;
		f->path = r;
		/* the move budget; a congestion trigger moves only the QPs crossing it */
		if (r.idx >= 0 && o.mode == CTL_PLAN_REOPT && !ctld_telem_movable(d, q, trig))
			f->flags |= CTL_FLOW_FIXED;
		else if (r.idx >= 0 && o.mode == CTL_PLAN_REOPT && ctld_telem_sticky(d, q))
			f->flags |= CTL_FLOW_STICKY;
		nfixed += (f->flags & CTL_FLOW_FIXED) != 0;
		nsticky += (f->flags & CTL_FLOW_STICKY) != 0;
	}
	ctld_lease_keep(d);
	ret = ctl_plan_paths(d->pl, &dem, &o, &st);
	if (ret == 0)
		ret = ctl_plan_sports(pm, &dem);
	if (ret == 0 && ctl_plan_ecmp(pm, &dem) == 0)
		ecmp = ctl_max_util(d->pl, &dem, 1);
	ctld_lease_keep(d);
	if (ret == 0 && d->cfg.rates)
		ret = ctl_plan_rates(d->pl, &dem, 0, d->cfg.headroom);
	if (ret == 0 && d->cfg.rates && d->cfg.feedback)
		ret = ctld_telem_ceilings(d, &dem);
	if (ret < 0) {
		ice_err(SUB, "planning %zu flows failed: %s", dem.n, strerror(-ret));
		d->m.plan_failures++;
		goto out;
	}
	for (size_t k = 0; k < dem.n; k++) {
		struct ctl_flow *f = &dem.flows[k];
		struct cqp *q = &d->qps[qix[k]];

		struct ctl_route old = q->route;
		bool was = q->planned;

		if (!(f->flags & CTL_FLOW_ANNOUNCED) || !d->cfg.rates)
			f->start_bps = f->target_bps = f->max_bps =
				0; /* measured: DCQCN from line rate */
		f->flags &= (uint8_t) ~(CTL_FLOW_FIXED | CTL_FLOW_STICKY);
		q->planned = true;
		q->route = f->path;
		q->plan_bps = f->target_bps > 0 ? f->target_bps : (double)f->demand;
		if (was && old.idx >= 0 && f->path.idx >= 0 && old.idx != f->path.idx)
			ctld_telem_move(d, q, &old, trig);
		q->sport = f->sport;
		down_used += route_down(d, &f->path);
	}
	planned_ms = ice_wall_ms();
	if (pm->unsteered > 0)
		ice_info(SUB,
			 "%u of %zu flows not steered: no probe map of their NIC pair, or the "
			 "map has no port on the planned path",
			 pm->unsteered, dem.n);
	/* the fabric's max (0: its pass did not run) or no tie-break (the
	 * timer's plans); the flows the move budget held (fixed: moved within
	 * move_hold, or off a congested link; sticky: moved within
	 * move_sticky) */
	if (o.no_tie)
		snprintf(fab, sizeof(fab), "no tie-break; held %u fixed, %u sticky", nfixed,
			 nsticky);
	else
		snprintf(fab, sizeof(fab), "%.3f; held %u fixed, %u sticky", st.fabric_util, nfixed,
			 nsticky);
	ice_info(SUB,
		 "plan (%s%s%s%s%s%s%s%s%s%s): %zu flows (%u announced) on %u hosts, %s: max util "
		 "%.3f "
		 "(bound %.3f, ECMP %.3f; fabric %s), moved %u, %.1f ms%s",
		 trig & TRIG_QP ? "qps " : "", trig & TRIG_LINK ? "link " : "",
		 trig & TRIG_COLL ? "collective " : "",
		 trig & TRIG_COLL_END ? "collective-end " : "",
		 trig & TRIG_PMAP ? "probe-map " : "", trig & TRIG_TELEM ? "congestion " : "",
		 trig & TRIG_REOPT ? "re-optimise " : "", trig & TRIG_PERIODIC ? "periodic " : "",
		 trig & TRIG_TAKEOVER ? "takeover " : "", trig & TRIG_REFRESH ? "refresh " : "",
		 dem.n, nann, d->nhosts,
		 o.mode == CTL_PLAN_INCREMENTAL ? "incremental" : "re-optimised", st.max_util,
		 st.bound, ecmp, fab, st.moved, st.total_s * 1e3,
		 down_used ? "; some flows cross a down link" : "");
	d->plans++;
	d->m.plans++;
	d->m.plan_s = st.total_s;
	ctld_hist_add(&d->m.plan_hist, ctld_plan_buckets, st.total_s);
	d->m.qps_planned = dem.n;
	d->m.qps_announced = nann;
	d->m.max_util = st.max_util;
	d->m.bound = st.bound;
	d->m.ecmp_util = ecmp;
	ctld_lease_keep(d);
	if (ctl_host_plans_build(d->topo, &dem, d->pol, 0, 0, 0, &hps, &nh) < 0 ||
	    add_empty_plans(d, &hps, &nh) < 0)
		goto out;
	if (d->cfg.dry_run) {
		ctld_dry_print(d, hps, nh, &st, ecmp);
		goto out;
	}
	same = ctld_plans_same(hps, nh, d->last, d->nlast);
	refresh = now_ns - d->last_pub_ns >= d->cfg.lifetime / 3;
	if (same && !refresh && d->last_pub_ns != 0) {
		ice_dbg(SUB, "plan unchanged; not publishing");
		goto out;
	}
	if (ctld_publish(d, hps, nh, &epoch) < 0)
		goto out;
	d->last_pub_ns = now_ns;
	d->last_epoch = epoch;
	ctl_host_plans_free(d->last, d->nlast);
	d->last = hps;
	d->nlast = nh;
	hps = NULL;
	ctld_pend_start(d, epoch, d->last, d->nlast, planned_ms);
	d->m.publications++;
	d->m.epoch = epoch;
	ctld_telem_moves_publish(d, epoch);
	ctld_lease_keep(d);
	ctld_ops_qp_records(d, &dem, qix, epoch);
	{
		char e[24], mu[24], b[24], ec[24], fl[24], mv[24], du[24], ts[24];
		const char *kv[] = {"id",    d->cfg.id, "epoch",	   e,  "max_util", mu,
				    "bound", b,		"ecmp_util",	   ec, "flows",	   fl,
				    "moved", mv,	"down_links_used", du, "ts_ms",	   ts};

		snprintf(e, sizeof(e), "%" PRIu64, epoch);
		snprintf(mu, sizeof(mu), "%.4f", st.max_util);
		snprintf(b, sizeof(b), "%.4f", st.bound);
		snprintf(ec, sizeof(ec), "%.4f", ecmp);
		snprintf(fl, sizeof(fl), "%zu", dem.n);
		snprintf(mv, sizeof(mv), "%u", st.moved);
		snprintf(du, sizeof(du), "%u", down_used);
		snprintf(ts, sizeof(ts), "%" PRIu64, ice_wall_ms());
		ctld_status_write(d, kv, sizeof(kv) / sizeof(kv[0]));
	}
	printf("epoch %" PRIu64 " published by %s to %u hosts: %zu flows, max util %.3f "
	       "(bound %.3f, ECMP %.3f)\n",
	       epoch, d->cfg.id, nh, dem.n, st.max_util, st.bound, ecmp);
	fflush(stdout);
out:
	d->trig = 0;
	d->trig_ms = 0;
	d->nmoves = 0;
	memset(d->hot, 0, sizeof(bool) * 2 * d->topo->nlinks);
	ctl_host_plans_free(hps, nh);
	ctl_demand_fini(&dem);
	free(qix);
}

/* ---- life */

struct ctld *ctld_new(const struct ctld_cfg *cfg)
{
	struct ctld *d = calloc(1, sizeof(*d));
	struct ice_cfg_err err;
	char buf[768];

	if (d == NULL)
		return NULL;
	d->cfg = *cfg;
	d->topo = topo_load(cfg->topology, &err);
	if (d->topo == NULL) {
		ice_err(SUB, "%s", ice_cfg_err_str(&err, buf, sizeof(buf)));
		goto err;
	}
	d->rate0 = calloc(d->topo->nlinks + 1, sizeof(*d->rate0));
	d->down = calloc(d->topo->nlinks + 1, sizeof(*d->down));
	d->lname = calloc(d->topo->nlinks + 1, sizeof(*d->lname));
	if (d->rate0 == NULL || d->down == NULL || d->lname == NULL)
		goto err;
	for (uint32_t i = 0; i < d->topo->nlinks; i++) {
		d->rate0[i] = d->topo->links[i].rate_bps;
		topo_link_name(d->topo, i, d->lname[i], sizeof(d->lname[i]));
	}
	d->pl = ctl_planner_new(d->topo);
	if (d->pl == NULL) {
		ice_err(SUB, "%s: cannot plan on this topology: %s", cfg->topology,
			strerror(errno));
		goto err;
	}
	if (ctld_telem_init(d) < 0 || ctld_pfc_init(d) < 0) {
		ice_err(SUB, "out of memory (telemetry)");
		goto err;
	}
	if (cfg->policy[0] != '\0') {
		d->pol = ctl_policy_load(cfg->policy, &err);
		if (d->pol == NULL) {
			ice_err(SUB, "%s", ice_cfg_err_str(&err, buf, sizeof(buf)));
			goto err;
		}
		ice_info(SUB, "policy %s: %u profiles over %s", cfg->policy, d->pol->nprofiles,
			 d->pol->baseline_file[0] != '\0' ? d->pol->baseline_file
							  : "ConnectX-5 defaults");
	}
	if (cfg->key[0] != '\0') {
		if (ice_plan_key_load(cfg->key, &d->key, &err) < 0) {
			ice_err(SUB, "%s", ice_cfg_err_str(&err, buf, sizeof(buf)));
			goto err;
		}
		ice_info(SUB, "plans signed with Ed25519 key id %s (%s)", d->key.kid, cfg->key);
	}
	/* The hash models are an operator's statement about the switches: a
	 * topology without one can only be steered from measured maps. */
	if (cfg->sports == CTLD_SPORTS_MODEL && !d->topo->hash_known) {
		ice_err(SUB,
			"%s: no switch hash (`hash:`): sports model needs the switches' hash; "
			"without it, use sports probe (ice-probe's maps)",
			cfg->topology);
		goto err;
	}
	d->probe = cfg->sports == CTLD_SPORTS_PROBE ||
		   (cfg->sports == CTLD_SPORTS_AUTO &&
		    (d->topo->ecmp == TOPO_ECMP_KERNEL || !d->topo->hash_known));
#define K(f, k) (ice_rkey(d->f, sizeof(d->f), k, cfg->fabric, NULL, NULL) < 0)
	if (K(k_leader, ICE_RK_CTL_LEADER) || K(k_epoch, ICE_RK_CTL_EPOCH) ||
	    K(k_pub, ICE_RK_CTL_PUBLISHED) || K(k_log, ICE_RK_CTL_LOG) ||
	    K(k_links, ICE_RK_LINKS) || K(k_status, ICE_RK_CTL_STATUS) ||
	    K(k_hosts, ICE_RK_HOSTS)) {
		ice_err(SUB, "fabric '%s': empty or too long for a Redis key", cfg->fabric);
		goto err;
	}
#undef K
	if (ctld_ops_init(d) < 0)
		goto err;
	ice_redis_init(&d->link, cfg->redis, cfg->redis_timeout);
	d->link.backoff_max_ns = 500 * ICE_NSEC_PER_MSEC; /* a leader must come back fast */
	ice_info(SUB,
		 "ice-controller %s: fabric %s, %s (%u links), every %.0f ms, QPs every %.0f ms, "
		 "re-optimise every %.1f s, plans live %.1f s, lease %.0f ms, source ports from "
		 "%s, switch telemetry every %.0f ms, feedback %s%s",
		 cfg->id, cfg->fabric, cfg->topology, d->topo->nlinks, cfg->interval / 1e6,
		 cfg->qp_interval / 1e6, cfg->reopt / 1e9, cfg->lifetime / 1e9,
		 cfg->lease_ttl / 1e6, d->probe ? "ice-probe's maps" : "the hash models",
		 cfg->telem_interval / 1e6, cfg->feedback ? "on" : "off (demand only)",
		 cfg->dry_run ? ", dry run" : "");
	return d;
err:
	ctld_free(d);
	errno = EINVAL;
	return NULL;
}

const char *ctld_dry_text(const struct ctld *d)
{
	return d->dry_text;
}

void ctld_stop(struct ctld *d)
{
	d->stop = 1;
}

int ctld_run(struct ctld *d)
{
	uint64_t next = ice_now_ns();

	d->next_reopt_ns = next + d->cfg.reopt;
	while (!d->stop) {
		uint64_t now = ice_now_ns();

		if (ctld_redis_up(d)) {
			if (!d->cfg.dry_run)
				ctld_lease_tick(d);
			ctld_ops_tick(d);
			ctld_read_links(d);
			ctld_telem_poll(d);
			ctld_pfc_read_nics(d);
			ctld_telem_tick(d);
			if (d->probe && (now >= d->next_pmap_ns || ctld_pmaps_moved(d))) {
				ctld_read_pmaps(d);
				ctld_read_health(d);
				d->next_pmap_ns = now + PMAP_REFRESH_NS;
			}
			if (now >= d->next_qp_ns) {
				ctld_read_qps(d);
				d->next_qp_ns = now + d->cfg.qp_interval;
				if (!d->started && d->link.c != NULL) {
					d->started = true;
					d->trig |= TRIG_REOPT; /* the first plan */
				}
			}
			ctld_read_events(d);
			if (d->qps_due) {
				/* the agent wrote the QP's record with its event */
				d->qps_due = false;
				ctld_read_qps(d);
				d->next_qp_ns = now + d->cfg.qp_interval;
			}
			ctld_expire_colls(d);
			if (d->cfg.reopt != 0 && now >= d->next_reopt_ns) {
				d->trig |= TRIG_PERIODIC;
				d->next_reopt_ns = now + d->cfg.reopt;
			}
			if (d->leader && d->last_pub_ns != 0 &&
			    now - d->last_pub_ns >= d->cfg.lifetime / 3)
				d->trig |= TRIG_REFRESH; /* before the lifetime ends */
			if (d->link.c != NULL && d->trig != 0 && d->started &&
			    (d->leader || d->cfg.dry_run)) {
				plan(d);
				if (d->cfg.once)
					break;
			}
			if (!d->leader && !d->cfg.dry_run)
				d->trig &= TRIG_LINK | TRIG_COLL | TRIG_COLL_END | TRIG_QP |
					   TRIG_PMAP; /* standby: keep the view */
			if (d->leader)
				ctld_read_applied(d);
		}
		next += d->cfg.interval;
		now = ice_now_ns();
		if (next <= now)
			next = now + d->cfg.interval;
		else
			ctld_ops_wait(d, next - now);
	}
	return 0;
}

void ctld_free(struct ctld *d)
{
	if (d == NULL)
		return;
	ctld_lease_release(d);
	ctld_ops_fini(d);
	free(d->dry_text);
	ice_redis_fini(&d->link);
	for (size_t i = 0; i < d->ncolls; i++)
		ctld_coll_free(&d->colls[i]);
	free(d->colls);
	free(d->hosts);
	free(d->host_ix);
	free(d->nic_ix);
	free(d->qps);
	free(d->pend.hosts);
	ctl_host_plans_free(d->last, d->nlast);
	ctld_pmaps_free(d->pmaps, d->npmaps);
	free(d->hkeys);
	ctld_telem_fini(d);
	ctld_pfc_fini(d);
	ctl_planner_free(d->pl);
	ctl_policy_free(d->pol);
	topo_free(d->topo);
	free(d->rate0);
	free(d->down);
	free(d->lname);
	ice_plan_key_fini(&d->key);
	free(d);
}
