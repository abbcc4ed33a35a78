// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_daemon_telem.c: the closed loop. Every telem_interval the daemon
 * reads every switch port's record (ice-fabric export or a gNMI/SNMP
 * collector; docs/redis-schema.md, "Switch telemetry") in one pipelined
 * round trip and hands them to ctl_telem (controller/ctl_telem.h): per
 * directed link the measured load, the queue, and the load nobody planned,
 * max(0, measured - known) (fast up, smoothed down), where known is what the plan's own
 * QPs measure (their agents' rates) on their planned routes. With feedback
 * on, that unplanned load is taken off the planner's capacities (paths and
 * rates), and a link that stays congested (avg queue above its Kmin, or CE
 * marks, for two intervals) that planned QPs cross re-plans those QPs; no
 * QP moves more than once per move_hold intervals, and each move is logged
 * and published with its reason. The leader publishes per link what it
 * knows (ice:<F>:ctl:link:<link>).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_daemon_internal.h"
#include "ice_log.h"
#include "ice_time.h"

#define SWPORTS_MAX	 4096
#define QP_REASON_TTL_MS (600 * 1000)
#define VERDICT_TICKS	 10 /* telemetry intervals after a move it is judged */

int ctld_telem_init(struct ctld *d)
{
	uint32_t ndl = 2 * d->topo->nlinks;

	if (ctl_telem_init(&d->tm, d->topo) < 0)
		return -ENOMEM;
	d->tm.alpha = d->cfg.feedback_alpha;
	if (d->cfg.telem_interval != 0) {
		/* stale after 10 intervals, at least a second */
		d->tm.stale_ms = 10 * d->cfg.telem_interval / ICE_NSEC_PER_MSEC;
		if (d->tm.stale_ms < 1000)
			d->tm.stale_ms = 1000;
		/* a gap: more than 5 intervals between two readings, at least 0.5 s */
		d->tm.gap_ms = 5 * d->cfg.telem_interval / ICE_NSEC_PER_MSEC;
		if (d->tm.gap_ms < 500)
			d->tm.gap_ms = 500;
	}
	d->planned = calloc(ndl + 1, sizeof(double));
	d->known = calloc(ndl + 1, sizeof(double));
	d->hold_tick = calloc(ndl + 1, sizeof(uint64_t));
	d->hot = calloc(ndl + 1, sizeof(bool));
	d->link_pub = calloc(ndl + 1, sizeof(*d->link_pub));
	d->probe_hot = calloc(ndl + 1, sizeof(bool));
	if (d->planned == NULL || d->known == NULL || d->hold_tick == NULL || d->hot == NULL ||
	    d->link_pub == NULL || d->probe_hot == NULL)
		return -ENOMEM;
	if (ice_rkey(d->k_swports, sizeof(d->k_swports), ICE_RK_SW_PORTS, d->cfg.fabric, NULL,
		     NULL) < 0 ||
	    ice_rkey(d->k_swexp, sizeof(d->k_swexp), ICE_RK_SW_EXPORTER, d->cfg.fabric, NULL,
		     NULL) < 0)
		return -EINVAL;
	return 0;
}

void ctld_telem_fini(struct ctld *d)
{
	ctl_telem_fini(&d->tm);
	free(d->swports);
	free(d->planned);
	free(d->known);
	free(d->hold_tick);
	free(d->hot);
	free(d->link_pub);
	free(d->probe_hot);
	free(d->moves);
}

/* "from>to" of a directed link */
static void dl_name(const struct ctld *d, uint32_t dl, char *buf, size_t len)
{
	const struct topo *t = d->topo;
	const struct topo_link *k = &t->links[dl / 2];
	uint32_t from = dl & 1 ? k->b : k->a, to = dl & 1 ? k->a : k->b;

	snprintf(buf, len, "%s>%s", t->nodes[t->ports[from].node].name,
		 t->nodes[t->ports[to].node].name);
}

void ctld_telem_caps(struct ctld *d)
{
	for (uint32_t dl = 0; dl < d->tm.ndl; dl++) {
		if (d->down[dl / 2])
			continue; /* the planner sees LINK_DOWN_BPS */
		/* a pause storm: the share of the time the link passes nothing
		 * of its lossless class (never below the telemetry's floor) */
		double pf = ctl_pfc_factor(&d->pfc, dl);

		if (pf < d->tm.floor)
			pf = d->tm.floor;
		ctl_planner_set_cap(d->pl, dl,
				    d->cfg.feedback ? pf * ctl_telem_cap(&d->tm, dl)
						    : (double)d->rate0[dl / 2]);
	}
}

/* DCQCN's ceilings where the unplanned load cut a capacity: the planned
 * flows' shares of the links' rates (a down link keeps its capacity). */
int ctld_telem_ceilings(struct ctld *d, struct ctl_demand *dem)
{
	uint32_t nd = d->tm.ndl;
	bool cut = false;
	double *cap;
	int ret;

	for (uint32_t dl = 0; dl < nd && !cut; dl++)
		cut = !d->down[dl / 2] && ctl_planner_cap(d->pl, dl) < (double)d->rate0[dl / 2];
	if (!cut)
		return 0; /* the targets are the ceilings */
	cap = malloc(sizeof(double) * (nd + 1));
	if (cap == NULL)
		return -ENOMEM;
	for (uint32_t dl = 0; dl < nd; dl++)
		cap[dl] = d->down[dl / 2] ? ctl_planner_cap(d->pl, dl) : (double)d->rate0[dl / 2];
	ret = ctl_plan_ceilings(d->pl, dem, 0, cap);
	free(cap);
	return ret;
}

/* The plan's own load per directed link: planned rates, and what its QPs
 * measure (bytes/s). A QP the controller knows but has not planned yet is
 * booked on the route its source port takes now: its traffic is known,
 * not unplanned (else a collective's first plan would see its own QPs as
 * someone else's load). */
static void own_loads(struct ctld *d)
{
	struct ctl_pathmap_probe probe;
	struct ctl_pathmap *pm = NULL;
	uint64_t now_ms = ice_wall_ms();
	/* how late a QP's rate reaches us after its switch counts it: its
	 * agent's sample and our QP read, and two telemetry readings */
	uint64_t ramp_ms = (2 * d->cfg.qp_interval + 2 * d->cfg.telem_interval) / ICE_NSEC_PER_MSEC;

	memset(d->planned, 0, sizeof(double) * d->tm.ndl);
	memset(d->known, 0, sizeof(double) * d->tm.ndl);
	for (size_t i = 0; i < d->nqps; i++) {
		const struct cqp *q = &d->qps[i];
		struct ctl_route r = {.idx = -1};

		if (q->planned && q->route.idx >= 0) {
			double k = ctl_telem_known_bps(q->rate_bps, q->plan_bps, q->ann_ms, now_ms,
						       ramp_ms);

			for (uint32_t h = 0; h < q->route.nhops; h++) {
				d->planned[q->route.dlink[h]] += q->plan_bps / 8;
				d->known[q->route.dlink[h]] += k / 8;
			}
			continue;
		}
		if (q->sport_now == 0 || q->rate_bps <= 0)
			continue;
		if (pm == NULL)
			pm = d->probe ? ctl_pathmap_probe_init(&probe, d->pl, d->pmaps, d->npmaps)
				      : ctl_pathmap_model(d->pl);
		{
			struct ctl_flow f = {.src_port = q->src,
					     .dst_port = q->dst,
					     .host = q->host,
					     .lqpn = q->qpn,
					     .rqpn = q->rqpn};

			if (pm == NULL || ctl_route_of_sport(pm, &f, q->sport_now, &r) < 0)
				continue;
		}
		for (uint32_t h = 0; r.idx >= 0 && h < r.nhops; h++)
			d->known[r.dlink[h]] += q->rate_bps / 8;
	}
}

/* How many planned QPs cross dl. */
static uint32_t crossing(const struct ctld *d, uint32_t dl)
{
	uint32_t n = 0;

	for (size_t i = 0; i < d->nqps; i++) {
		const struct cqp *q = &d->qps[i];

		for (uint32_t h = 0; q->planned && q->route.idx >= 0 && h < q->route.nhops; h++)
			if (q->route.dlink[h] == dl) {
				n++;
				break;
			}
	}
	return n;
}

/* The port list changed: keep it for the next reads. */
static void take_ports(struct ctld *d, const redisReply *r)
{
	char(*p)[64];
	uint32_t n = 0;

	if (r == NULL || r->type != REDIS_REPLY_ARRAY)
		return;
	p = calloc(r->elements + 1, sizeof(*p));
	if (p == NULL)
		return;
	for (size_t i = 0; i < r->elements && n < SWPORTS_MAX; i++)
		if (r->element[i]->type == REDIS_REPLY_STRING &&
		    strchr(r->element[i]->str, ':') != NULL &&
		    strlen(r->element[i]->str) < sizeof(*p))
			snprintf(p[n++], sizeof(*p), "%s", r->element[i]->str);
	if (n != d->nswports)
		ice_info(SUB, "switch telemetry: %u ports", n);
	free(d->swports);
	d->swports = p;
	d->nswports = n;
}

static void congestion(struct ctld *d)
{
	if (!d->leader && !d->cfg.dry_run)
		return; /* a standby plans nothing; a takeover re-plans everything */
	for (uint32_t dl = 0; dl < d->tm.ndl; dl++) {
		const struct ctl_telem_link *x = &d->tm.dl[dl];
		char name[96];
		uint64_t hot_ms;
		uint32_t nq;

		bool pfc = ctl_pfc_storming(&d->pfc, dl);

		if ((!pfc && !ctl_telem_congested(&d->tm, dl)) || d->tick < d->hold_tick[dl] ||
		    d->down[dl / 2] || (nq = crossing(d, dl)) == 0)
			continue;
		d->hold_tick[dl] = d->tick + (d->cfg.move_hold ? d->cfg.move_hold : 1);
		d->hot[dl] = true;
		d->trig |= TRIG_TELEM;
		dl_name(d, dl, name, sizeof(name));
		if (pfc)
			ice_info(
				SUB,
				"link %s pausing (PFC): priorities mask 0x%02x paused %.0f %% of "
				"the "
				"interval for %u intervals; planned %.2f MB/s: re-planning its QPs",
				name, d->pfc.dl[dl].storm,
				100 * ctl_pfc_paused_max(&d->pfc, dl, NULL), d->pfc.dl[dl].run,
				d->planned[dl] / 1e6);
		else if (x->state == CTL_TL_OK)
			ice_info(SUB,
				 "link %s congested for %u intervals (avg queue %.0f B, Kmin %u B, "
				 "%" PRIu64
				 " CE marks): measured %.2f MB/s, planned %.2f (%u QPs), unplanned "
				 "%.2f: re-planning its QPs",
				 name, x->hot, x->avg_q, d->topo->links[dl / 2].ecn.kmin_bytes,
				 x->ce, x->bytes_s / 1e6, d->planned[dl] / 1e6, nq,
				 x->unplanned / 1e6);
		else
			ice_info(SUB,
				 "link %s congested by host signals (no switch telemetry): %s "
				 "for %u samples; planned %.2f MB/s, their agents measure %.2f, "
				 "unplanned (the rest of its rate) %.2f: re-planning its QPs",
				 name,
				 d->probe_hot[dl]
					 ? "only probed paths with a standing queue cross it"
					 : "all planned QPs crossing it received CNPs",
				 x->hhot, d->planned[dl] / 1e6, d->known[dl] / 1e6,
				 x->hunplanned / 1e6);
		hot_ms = pfc			 ? d->pfc.dl[dl].run_ms
			 : x->state == CTL_TL_OK ? x->hot_ms
						 : x->hhot_ms;
		if (!(d->trig & TRIG_LINK) && (d->trig_ms == 0 || hot_ms < d->trig_ms)) {
			d->trig_ms = hot_ms;
			d->trig_seen_ms = ice_wall_ms();
			snprintf(d->trig_what, sizeof(d->trig_what), "link %.70s %s", name,
				 pfc ? "pausing" : "congested");
		}
	}
}

/* What the controller knows of directed link dl, as published. */
static void link_pub(const struct ctld *d, uint32_t dl, struct ctl_telem_pub *p)
{
	const struct ctl_telem_link *x = &d->tm.dl[dl];

	p->planned = d->planned[dl];
	p->known = d->known[dl];
	p->measured = x->state == CTL_TL_OK ? x->bytes_s : 0;
	p->unplanned = ctl_telem_unplanned(&d->tm, dl);
	p->capacity = ctl_planner_cap(d->pl, dl) / 8;
	p->avg_q = x->avg_q;
	p->ce = x->state == CTL_TL_OK ? x->ce : 0;
	p->pfc_paused = ctl_pfc_paused_max(&d->pfc, dl, &p->pfc_storm);
	snprintf(p->state, sizeof(p->state), "%s",
		 x->port == UINT32_MAX ? "host"
		 : x->state != CTL_TL_OK && (x->qps > 0 || x->hunplanned > 0)
			 ? "host-signals"
			 : ctl_telem_state_name(x->state));
}

/* A priority mask as "3,4" ("" for none). */
static void prio_list(char *buf, uint8_t mask)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int k = 0; k < CTL_PFC_PRIOS; k++)
		if (mask & (1u << k))
			n += (size_t)sprintf(buf + n, "%s%d", n ? "," : "", k);
}

/* What the controller knows per link, one hash each (one round trip): a
 * link's record is written when a value left the dead band around what was
 * last written (ctl_telem_pub_differs) and every link_refresh regardless
 * (spread over the intervals by link id); link_refresh 0: every interval.
 * A new connection (a restarted Redis, a fail-over) writes them all. */
static void publish_links(struct ctld *d)
{
	char key[ICE_RKEY_MAX], ts[24];
	uint32_t n = 0, every = 1;
	uint32_t *wrote;
	redisReply **r;
	bool all;

	if (d->link.c == NULL)
		return;
	if (d->cfg.link_refresh != 0 && d->cfg.telem_interval != 0)
		every = (uint32_t)(d->cfg.link_refresh / d->cfg.telem_interval);
	if (every == 0)
		every = 1;
	all = d->cfg.link_refresh == 0 || d->link_pub_conn != d->link.connects;
	d->link_pub_conn = d->link.connects;
	r = calloc(d->topo->nlinks + 1, sizeof(*r));
	wrote = calloc(d->topo->nlinks + 1, sizeof(*wrote));
	if (r == NULL || wrote == NULL)
		goto out;
	snprintf(ts, sizeof(ts), "%" PRIu64, ice_wall_ms());
	for (uint32_t l = 0; l < d->topo->nlinks; l++) {
		char v[2][10][24];
		const char *argv[2 + 2 * 2 * 10 + 2];
		static const char *const f[2][10] = {
			{"up_planned", "up_known", "up_measured", "up_unplanned", "up_capacity",
			 "up_avg_queue", "up_state", "up_ce", "up_pfc_paused", "up_pfc_storm"},
			{"down_planned", "down_known", "down_measured", "down_unplanned",
			 "down_capacity", "down_avg_queue", "down_state", "down_ce",
			 "down_pfc_paused", "down_pfc_storm"}};
		struct ctl_telem_pub now[2];
		double rate = (double)d->rate0[l] / 8;
		uint32_t kmin = d->topo->links[l].ecn.kmin_bytes;
		int argc = 0;

		link_pub(d, 2 * l, &now[0]);
		link_pub(d, 2 * l + 1, &now[1]);
		if (!all && (d->tick + l) % every != 0 &&
		    !ctl_telem_pub_differs(&d->link_pub[2 * l], &now[0], rate, kmin) &&
		    !ctl_telem_pub_differs(&d->link_pub[2 * l + 1], &now[1], rate, kmin))
			continue;
		if (ice_rkey(key, sizeof(key), ICE_RK_CTL_LINK, d->cfg.fabric, NULL, d->lname[l]) <
		    0)
			continue;
		argv[argc++] = "HSET";
		argv[argc++] = key;
		for (int dir = 0; dir < 2; dir++) {
			const struct ctl_telem_pub *p = &now[dir];

			snprintf(v[dir][0], 24, "%.0f", p->planned);
			snprintf(v[dir][1], 24, "%.0f", p->known);
			snprintf(v[dir][2], 24, "%.0f", p->measured);
			snprintf(v[dir][3], 24, "%.0f", p->unplanned);
			snprintf(v[dir][4], 24, "%.0f", p->capacity);
			snprintf(v[dir][5], 24, "%.0f", p->avg_q);
			snprintf(v[dir][6], 24, "%s", p->state);
			snprintf(v[dir][7], 24, "%" PRIu64, p->ce);
			snprintf(v[dir][8], 24, "%.3f", p->pfc_paused);
			prio_list(v[dir][9], p->pfc_storm);
			for (int k = 0; k < 10; k++) {
				argv[argc++] = f[dir][k];
				argv[argc++] = v[dir][k];
			}
		}
		argv[argc++] = "ts_ms";
		argv[argc++] = ts;
		ice_redis_appendv(&d->link, argc, argv, NULL);
		d->link_pub[2 * l] = now[0];
		d->link_pub[2 * l + 1] = now[1];
		wrote[n++] = l;
	}
	if (n > 0 && ctld_pipe(d, n, r) == 0) {
		for (uint32_t i = 0; i < n; i++)
			if (r[i] == NULL || r[i]->type == REDIS_REPLY_ERROR)
				d->link_pub[2 * wrote[i]].state[0] = '\0'; /* again next time */
		ctld_freev(r, n);
	}
	d->m.link_writes += n;
out:
	free(r);
	free(wrote);
}

static void status_counters(struct ctld *d)
{
	char v[25][24];
	const char *kv[] = {"link_writes",
			    v[11],
			    "qp_writes",
			    v[12],
			    "qp_refreshes",
			    v[13],
			    "qp_deletes",
			    v[14],
			    "telem_skipped",
			    v[6],
			    "telem_readings",
			    v[0],
			    "telem_unknown_ports",
			    v[1],
			    "telem_backwards",
			    v[2],
			    "telem_gaps",
			    v[3],
			    "telem_stale",
			    v[4],
			    "telem_bad_records",
			    v[5],
			    "feedback",
			    d->cfg.feedback ? "on" : "off",
			    "view_qps",
			    v[7],
			    "view_hosts",
			    v[8],
			    "view_read_ms",
			    v[9],
			    "view_read_max_ms",
			    v[10],
			    "view_reads",
			    v[23],
			    "view_read_cpu_ms",
			    v[24],
			    "view_bad_qps",
			    v[15],
			    "view_foreign_qps",
			    v[16],
			    "lease_squats",
			    v[17],
			    "view_capped_reads",
			    v[18],
			    "pfc_lossless",
			    v[19],
			    "pfc_nics",
			    v[20],
			    "pfc_storms",
			    v[21],
			    "pfc_bad_records",
			    v[22]};

	snprintf(v[0], 24, "%" PRIu64, d->tm.readings);
	snprintf(v[1], 24, "%" PRIu64, d->tm.unknown_ports);
	snprintf(v[2], 24, "%" PRIu64, d->tm.backwards);
	snprintf(v[3], 24, "%" PRIu64, d->tm.gaps);
	snprintf(v[4], 24, "%" PRIu64, d->tm.stale);
	snprintf(v[5], 24, "%" PRIu64, d->tm.bad_records);
	snprintf(v[6], 24, "%" PRIu64, d->tm.skipped);
	snprintf(v[7], 24, "%zu", d->nqps);
	snprintf(v[8], 24, "%u", d->nhosts);
	snprintf(v[9], 24, "%.3f", (double)d->view_ns / 1e6);
	snprintf(v[10], 24, "%.3f", (double)d->view_max_ns / 1e6);
	snprintf(v[11], 24, "%" PRIu64, d->m.link_writes);
	snprintf(v[12], 24, "%" PRIu64, d->m.qp_writes);
	snprintf(v[13], 24, "%" PRIu64, d->m.qp_refreshes);
	snprintf(v[14], 24, "%" PRIu64, d->m.qp_deletes);
	snprintf(v[15], 24, "%" PRIu64, d->view_bad);
	snprintf(v[16], 24, "%" PRIu64, d->view_foreign);
	snprintf(v[17], 24, "%" PRIu64, d->squats);
	snprintf(v[18], 24, "%" PRIu64, d->view_capped);
	prio_list(v[19], d->pfc.lossless);
	snprintf(v[20], 24, "%u", d->pfc.nics);
	snprintf(v[21], 24, "%" PRIu64, d->pfc.storms);
	snprintf(v[22], 24, "%" PRIu64, d->pfc.bad);
	snprintf(v[23], 24, "%" PRIu64, d->view_reads);
	snprintf(v[24], 24, "%.3f", (double)d->view_cpu_ns / 1e6);
	d->view_max_ns = 0; /* the longest between two status writes */
	ctld_status_write(d, kv, sizeof(kv) / sizeof(kv[0]));
}

/* Links whose switch ports' oper-status changed: down or back up (a gNMI
 * or SNMP collector fills oper-status the same way). */
static void oper_links(struct ctld *d)
{
	uint64_t ts_max = 0;
	char what[96] = "";

	for (uint32_t l = 0; l < d->topo->nlinks; l++) {
		bool down = ctl_telem_link_down(&d->tm, l);
		uint64_t ts = d->tm.dl[2 * l].ts_ms > d->tm.dl[2 * l + 1].ts_ms
				      ? d->tm.dl[2 * l].ts_ms
				      : d->tm.dl[2 * l + 1].ts_ms;

		if (!ctld_link_set(d, l, LDOWN_OPER, down))
			continue;
		if (ts >= ts_max) {
			ts_max = ts;
			snprintf(what, sizeof(what), "link %s oper-status %s", d->lname[l],
				 down ? "down" : "up");
		}
	}
	if (what[0] != '\0')
		ctld_links_changed(d, ts_max, what);
}

/* The exporter counts oper-status changes it read at once (ON_CHANGE):
 * read the ports now rather than at the next interval. */
void ctld_telem_poll(struct ctld *d)
{
	redisReply *r;
	uint64_t n;

	if (d->cfg.telem_interval == 0 || d->link.c == NULL)
		return;
	r = ctld_cmd(d, "HGET %s oper_changes", d->k_swexp);
	if (r == NULL)
		return;
	n = r->type == REDIS_REPLY_STRING ? strtoull(r->str, NULL, 10) : 0;
	freeReplyObject(r);
	if (n != d->oper_changes)
		d->next_telem_ns = 0;
	d->oper_changes = n;
}

void ctld_telem_tick(struct ctld *d)
{
	uint64_t now = ice_now_ns(), now_ms;
	redisReply **r;
	char key[ICE_RKEY_MAX];
	uint32_t n;

	if (d->cfg.telem_interval == 0 || now < d->next_telem_ns || d->link.c == NULL)
		return;
	d->next_telem_ns = now + d->cfg.telem_interval;
	/* the port list and every known port's record: one round trip */
	n = d->nswports;
	r = calloc(n + 2, sizeof(*r));
	if (r == NULL)
		return;
	ice_redis_appendf(&d->link, "SMEMBERS %s", d->k_swports);
	for (uint32_t i = 0; i < n; i++) {
		const char *argv[3 + CTL_TF_N];
		char sw[64], *port;

		snprintf(sw, sizeof(sw), "%s", d->swports[i]);
		port = strchr(sw, ':');
		*port++ = '\0';
		argv[0] = "HMGET";
		argv[1] = ice_rkey_str(key, sizeof(key), ICE_RK_SW_PORT, d->cfg.fabric, sw, port);
		for (int k = 0; k < CTL_TF_N; k++)
			argv[2 + k] = ctl_telem_fields[k];
		ice_redis_appendv(&d->link, 2 + CTL_TF_N, argv, NULL);
	}
	if (ctld_pipe(d, n + 1, r) < 0) {
		free(r);
		return;
	}
	d->tick++;
	now_ms = ice_wall_ms();
	for (uint32_t i = 0; i < n; i++) {
		const redisReply *x = r[i + 1];
		const char *vals[CTL_TF_N];
		struct ctl_telem_rec rec;
		char sw[64], *port;

		if (x == NULL || x->type != REDIS_REPLY_ARRAY || x->elements != CTL_TF_N)
			continue;
		for (int k = 0; k < CTL_TF_N; k++)
			vals[k] = x->element[k]->type == REDIS_REPLY_STRING ? x->element[k]->str
									    : NULL;
		if (vals[CTL_TF_SEQ] == NULL)
			continue; /* registered, no reading yet (or gone) */
		snprintf(sw, sizeof(sw), "%s", d->swports[i]);
		port = strchr(sw, ':');
		*port++ = '\0';
		if (ctl_telem_rec_parse(&rec, vals) < 0) {
			d->tm.bad_records++;
			continue;
		}
		ctl_telem_update(&d->tm, sw, port, &rec, now_ms);
		ctld_pfc_port(d, sw, port, vals[CTL_TF_PFC_IN], vals[CTL_TF_PFC_OUT]);
	}
	take_ports(d, r[0]);
	ctld_freev(r, n + 1);
	free(r);
	ctl_telem_expire(&d->tm, now_ms);
	ctld_pfc_round(d);
	oper_links(d);
	own_loads(d);
	ctl_telem_feedback(&d->tm, d->known);
	if (d->cfg.feedback) {
		ctld_telem_caps(d);
		congestion(d);
	}
	if (d->leader && !d->cfg.dry_run) {
		publish_links(d);
		if (d->tick % 10 == 1)
			status_counters(d);
	} else {
		d->link_pub_conn = 0; /* another leader wrote them meanwhile: all again */
	}
}

/* A move a few intervals ago: did its QP gain (rate up, or the CNPs it
 * got fell)? Logged and published beside the move's reason. */
static void verdicts(struct ctld *d)
{
	char key[ICE_RKEY_MAX], v[4][24];

	for (size_t i = 0; i < d->nqps; i++) {
		struct cqp *q = &d->qps[i];
		bool gain;

		if (!q->verdict.pending || d->tick < q->verdict.tick + VERDICT_TICKS)
			continue;
		q->verdict.pending = false;
		gain = q->rate_bps > 1.1 * q->verdict.rate_bps ||
		       (q->verdict.cnp_s >= d->cfg.host_cnp_min && q->cnp_s < q->verdict.cnp_s / 2);
		ice_info(SUB,
			 "move of %s %s: rate %.1f -> %.1f Mbit/s, CNPs received %.0f -> %.0f "
			 "per s, resent %.0f per s",
			 q->verdict.id, gain ? "helped" : "did not help (no gain seen on this QP)",
			 q->verdict.rate_bps / 1e6, q->rate_bps / 1e6, q->verdict.cnp_s, q->cnp_s,
			 q->retx_s);
		if (!d->leader || d->cfg.dry_run || d->link.c == NULL ||
		    ice_rkey(key, sizeof(key), ICE_RK_CTL_QP, d->cfg.fabric, NULL, q->verdict.id) <
			    0)
			continue;
		snprintf(v[0], 24, "%.0f", q->verdict.rate_bps);
		snprintf(v[1], 24, "%.0f", q->rate_bps);
		snprintf(v[2], 24, "%.0f", q->verdict.cnp_s);
		snprintf(v[3], 24, "%.0f", q->cnp_s);
		{
			const char *argv[] = {
				"HSET",	       key,  "verdict",	   gain ? "helped" : "no-gain",
				"rate_before", v[0], "rate_after", v[1],
				"cnp_before",  v[2], "cnp_after",  v[3]};
			redisReply *r = ctld_cmdv(d, sizeof(argv) / sizeof(argv[0]), argv);

			if (r != NULL)
				freeReplyObject(r);
			/* the QP may have left the plan (its record deleted): no
			 * record without its TTL */
			r = ctld_cmd(d, "PEXPIRE %s %u", key, QP_REASON_TTL_MS);
			if (r != NULL)
				freeReplyObject(r);
		}
	}
}

void ctld_telem_host(struct ctld *d)
{
	uint32_t *qps, *marked;

	if (!d->cfg.feedback || d->cfg.telem_interval == 0)
		return;
	qps = calloc(d->tm.ndl + 1, sizeof(*qps));
	marked = calloc(d->tm.ndl + 1, sizeof(*marked));
	if (qps != NULL && marked != NULL) {
		for (size_t i = 0; i < d->nqps; i++) {
			const struct cqp *q = &d->qps[i];

			for (uint32_t h = 0; q->planned && q->route.idx >= 0 && h < q->route.nhops;
			     h++) {
				qps[q->route.dlink[h]]++;
				marked[q->route.dlink[h]] += q->cnp_s >= d->cfg.host_cnp_min;
			}
		}
		/* the probe's queueing delay says the same of a link as CNPs on
		 * all its QPs: only paths with a standing queue cross it */
		for (uint32_t dl = 0; dl < d->tm.ndl; dl++)
			if (d->probe_hot[dl])
				marked[dl] = qps[dl];
		ctl_telem_host(&d->tm, qps, marked, d->known, ice_wall_ms());
	}
	free(qps);
	free(marked);
	verdicts(d);
}

bool ctld_telem_movable(const struct ctld *d, const struct cqp *q, unsigned trig)
{
	bool crosses_hot = false;

	if (!d->cfg.feedback || !q->planned || q->route.idx < 0)
		return true;
	if (q->moved_tick != 0 && d->tick < q->moved_tick + d->cfg.move_hold)
		return false; /* moved lately */
	if (trig != TRIG_TELEM)
		return true;
	for (uint32_t h = 0; h < q->route.nhops && !crosses_hot; h++)
		crosses_hot = d->hot[q->route.dlink[h]];
	return crosses_hot;
}

/* Moved within the last move_sticky intervals: the planner moves others
 * first (CTL_FLOW_STICKY). */
bool ctld_telem_sticky(const struct ctld *d, const struct cqp *q)
{
	return q->moved_tick != 0 && d->tick < q->moved_tick + d->cfg.move_sticky;
}

static const char *rule_of(unsigned trig)
{
	return trig & TRIG_LINK	      ? "link"
	       : trig & TRIG_TELEM    ? "congestion"
	       : trig & TRIG_PMAP     ? "probe-map"
	       : trig & TRIG_COLL     ? "collective"
	       : trig & TRIG_QP	      ? "qps"
	       : trig & TRIG_TAKEOVER ? "takeover"
				      : "periodic";
}

void ctld_telem_move(struct ctld *d, struct cqp *q, const struct ctl_route *old, unsigned trig)
{
	struct cmove *m;
	struct in_addr a = {.s_addr = q->lip};
	char ip[INET_ADDRSTRLEN];
	int32_t why = -1;
	double worst = -1;

	m = realloc(d->moves, sizeof(*m) * (d->nmoves + 1));
	if (m == NULL)
		return;
	d->moves = m;
	m = &d->moves[d->nmoves++];
	memset(m, 0, sizeof(*m));
	inet_ntop(AF_INET, &a, ip, sizeof(ip));
	snprintf(m->qp, sizeof(m->qp), "%s:%u", ip, q->qpn);
	snprintf(m->rule, sizeof(m->rule), "%s", rule_of(trig));
	m->coll_id = q->coll_id;
	/* the link that made it move: a down one, a congested one, else its
	 * old route's busiest (measured, else planned, over the capacity) */
	for (uint32_t h = 0; h < old->nhops; h++) {
		uint32_t dl = old->dlink[h];
		const struct ctl_telem_link *x = &d->tm.dl[dl];
		double load = x->state == CTL_TL_OK ? x->bytes_s : d->planned[dl], u;

		u = load / ((double)d->rate0[dl / 2] / 8);
		if (d->down[dl / 2])
			u += 1e6;
		else if (d->hot[dl])
			u += 1e3;
		if (u > worst) {
			worst = u;
			why = (int32_t)dl;
		}
	}
	if (why >= 0) {
		const struct ctl_telem_link *x = &d->tm.dl[why];

		dl_name(d, (uint32_t)why, m->link, sizeof(m->link));
		m->measured = x->state == CTL_TL_OK ? x->bytes_s : 0;
		m->planned = d->planned[why];
		m->unplanned = ctl_telem_unplanned(&d->tm, (uint32_t)why);
	}
	ctl_route_name(d->pl, old, m->from, sizeof(m->from));
	ctl_route_name(d->pl, &q->route, m->to, sizeof(m->to));
	q->moved_tick = d->tick;
	q->verdict.pending = true;
	q->verdict.tick = d->tick;
	q->verdict.rate_bps = q->rate_bps;
	q->verdict.cnp_s = q->cnp_s;
	snprintf(q->verdict.id, sizeof(q->verdict.id), "%s", m->qp);
	ice_info(SUB,
		 "move %s %s -> %s: rule %s, link %s: measured %.2f MB/s, planned %.2f, "
		 "unplanned %.2f",
		 m->qp, m->from, m->to, m->rule, m->link, m->measured / 1e6, m->planned / 1e6,
		 m->unplanned / 1e6);
}

void ctld_telem_moves_publish(struct ctld *d, uint64_t epoch)
{
	char key[ICE_RKEY_MAX], ep[24], ts[24], ttl[24], co[24];
	redisReply **r;
	uint32_t n = 0;

	if (d->nmoves == 0 || d->link.c == NULL)
		goto out;
	r = calloc(2 * d->nmoves + 1, sizeof(*r));
	if (r == NULL)
		goto out;
	snprintf(ep, sizeof(ep), "%" PRIu64, epoch);
	snprintf(ts, sizeof(ts), "%" PRIu64, ice_wall_ms());
	snprintf(ttl, sizeof(ttl), "%u", QP_REASON_TTL_MS);
	for (uint32_t i = 0; i < d->nmoves; i++) {
		const struct cmove *m = &d->moves[i];
		char me[24], pl[24], un[24];
		const char *argv[] = {"HSET",	 key,	  "rule",      m->rule, "link",	    m->link,
				      "from",	 m->from, "to",	       m->to,	"measured", me,
				      "planned", pl,	  "unplanned", un,	"coll",	    co,
				      "epoch",	 ep,	  "ts_ms",     ts};

		if (ice_rkey(key, sizeof(key), ICE_RK_CTL_QP, d->cfg.fabric, NULL, m->qp) < 0)
			continue;
		snprintf(me, sizeof(me), "%.0f", m->measured);
		snprintf(pl, sizeof(pl), "%.0f", m->planned);
		snprintf(un, sizeof(un), "%.0f", m->unplanned);
		snprintf(co, sizeof(co), "%016" PRIx64, m->coll_id);
		ice_redis_appendv(&d->link, sizeof(argv) / sizeof(argv[0]), argv, NULL);
		ice_redis_appendf(&d->link, "PEXPIRE %s %s", key, ttl);
		n += 2;
	}
	if (n > 0 && ctld_pipe(d, n, r) == 0)
		ctld_freev(r, n);
	free(r);
out:
	d->nmoves = 0;
}
