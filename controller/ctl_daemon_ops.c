// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_daemon_ops.c: the operator's surface of ice-controller.
 *
 *   - ctl:members: every controller, leader or standby, once a second
 *     (icectl status reads it; an entry older than 3 s is a stale one).
 *   - Applied policies: icectl policy apply writes a version
 *     (ice:<F>:policy:<version>: its YAML, the directory its baseline path
 *     is taken from) and moves ice:<F>:policy:current; each interval the
 *     daemon GETs that pointer and, when it moved, loads the version with
 *     the same loader as a file. A good one replaces the policy in force
 *     and re-plans everything; a bad one (a baseline this host cannot read)
 *     is refused, logged and recorded in ctl:status (policy_refused,
 *     policy_error), and the old policy stays.
 *   - Per QP, with each publication: why it has its route, port, rate and
 *     DCQCN profile (ctl:qp:<id>, beside the reason of its last move).
 *   - GET /metrics (Prometheus text, ice_http), served while the loop
 *     sleeps.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl_daemon_internal.h"
#include "ice_log.h"
#include "ice_time.h"

#define MEMBER_EVERY_NS	 ICE_NSEC_PER_SEC
#define QP_RECORD_TTL_MS (600 * 1000)

/* planner time: 100 us .. 10 s; reaction: 5 ms .. 30 s */
const double ctld_plan_buckets[CTLD_HIST_MAX] = {0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03,
						 0.1,	 0.3,	 1,	3,     10,   30};
const double ctld_react_buckets[CTLD_HIST_MAX] = {0.005, 0.01, 0.02, 0.05, 0.1, 0.2,
						  0.5,	 1,    2,    5,	   10,	30};

void ctld_hist_add(struct ctld_hist *h, const double *bounds, double v)
{
	uint32_t b = 0;

	while (b < CTLD_HIST_MAX && v > bounds[b])
		b++;
	h->n[b]++;
	h->count++;
	h->sum += v;
}

static char *metrics_body(void *ctx, const char *path, const char **ctype)
{
	if (strcmp(path, "/metrics") != 0)
		return NULL;
	*ctype = "text/plain; version=0.0.4";
	return ctld_metrics_text(ctx);
}

int ctld_ops_init(struct ctld *d)
{
	d->started_ms = ice_wall_ms();
	if (ice_rkey(d->k_members, sizeof(d->k_members), ICE_RK_CTL_MEMBERS, d->cfg.fabric, NULL,
		     NULL) < 0 ||
	    ice_rkey(d->k_polcur, sizeof(d->k_polcur), ICE_RK_POLICY_CURRENT, d->cfg.fabric, NULL,
		     NULL) < 0)
		return -EINVAL;
	if (d->cfg.metrics[0] != '\0') {
		d->http = ice_http_new(d->cfg.metrics);
		if (d->http == NULL) {
			int ret = -errno;

			ice_err(SUB,
				"metrics: cannot listen on '%s': %s (expected ADDR:PORT or PORT)",
				d->cfg.metrics, strerror(errno));
			return ret;
		}
		ice_info(SUB, "metrics: GET /metrics on port %u", ice_http_port(d->http));
	}
	return 0;
}

void ctld_ops_fini(struct ctld *d)
{
	if (d->link.c != NULL && d->k_members[0] != '\0') {
		redisReply *r = ctld_cmd(d, "HDEL %s %s", d->k_members, d->cfg.id);

		if (r != NULL)
			freeReplyObject(r);
	}
	ice_http_free(d->http);
	d->http = NULL;
	free(d->why);
	d->why = NULL;
	d->nwhy = 0;
}

void ctld_ops_wait(struct ctld *d, uint64_t ns)
{
	if (d->http != NULL)
		ice_http_wait(d->http, ns, metrics_body, d);
	else
		ice_sleep_ns(ns);
}

/* ---- members */

static void member_write(struct ctld *d)
{
	char host[64] = "", topo[PATH_MAX], *txt;
	json_t *o;
	redisReply *r;

	gethostname(host, sizeof(host) - 1);
	if (realpath(d->cfg.topology, topo) == NULL)
		snprintf(topo, sizeof(topo), "%s", d->cfg.topology);
	o = json_pack("{s:s, s:s, s:s, s:I, s:s, s:I, s:I, s:I, s:I}", "id", d->cfg.id, "host",
		      host, "topology", topo, "pid", (json_int_t)getpid(), "role",
		      d->leader ? "leader" : "standby", "epoch", (json_int_t)d->last_epoch,
		      "policy_version", (json_int_t)d->pol_version, "started_ms",
		      (json_int_t)d->started_ms, "ts_ms", (json_int_t)ice_wall_ms());
	txt = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (txt == NULL)
		return;
	r = ctld_cmd(d, "HSET %s %s %s", d->k_members, d->cfg.id, txt);
	if (r != NULL)
		freeReplyObject(r);
	free(txt);
}

/* ---- applied policies */

static void policy_status(struct ctld *d, uint64_t version, const char *error)
{
	char v[24], ts[24];

	if (!d->leader)
		return; /* ctl:status is the leader's: what the fabric is planned with */
	snprintf(v, sizeof(v), "%" PRIu64, version);
	snprintf(ts, sizeof(ts), "%" PRIu64, ice_wall_ms());
	if (error == NULL) {
		const char *kv[] = {"policy_version", v, "policy_ts_ms", ts};

		ctld_status_write(d, kv, 4);
	} else {
		const char *kv[] = {"policy_refused",	 v, "policy_error", error,
				    "policy_refused_ms", ts};

		ctld_status_write(d, kv, 6);
	}
}

static void policy_take(struct ctld *d, uint64_t version)
{
	char key[ICE_RKEY_MAX], vs[24], name[96], buf[768];
	struct ice_cfg_err err = {0};
	struct ctl_policy *p = NULL;
	const char *why = NULL;
	redisReply *r;

	snprintf(vs, sizeof(vs), "%" PRIu64, version);
	ice_rkey_str(key, sizeof(key), ICE_RK_POLICY, d->cfg.fabric, NULL, vs);
	r = ctld_cmd(d, "HMGET %s yaml dir source", key);
	if (r == NULL)
		return; /* the connection broke: tried again at the next tick */
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 || r->element[0]->str == NULL) {
		snprintf(buf, sizeof(buf), "%s: no such policy version (expected field yaml)", key);
		why = buf;
	} else {
		const char *dir = r->element[1]->str;

		snprintf(name, sizeof(name), "policy v%" PRIu64 " (%.60s)", version,
			 r->element[2]->str != NULL ? r->element[2]->str : "?");
		p = ctl_policy_load_string(name, r->element[0]->str, r->element[0]->len,
					   dir != NULL && dir[0] != '\0' ? dir : NULL, &err);
		if (p == NULL)
			why = ice_cfg_err_str(&err, buf, sizeof(buf));
	}
	freeReplyObject(r);
	if (p == NULL) {
		ice_err(SUB, "applied policy v%" PRIu64 " refused, keeping the one in force: %s",
			version, why);
		d->pol_refused = version;
		d->m.refused_policy++;
		policy_status(d, version, why);
		return;
	}
	ctl_policy_free(d->pol);
	d->pol = p;
	d->pol_version = version;
	d->m.policies++;
	ice_info(SUB, "policy v%" PRIu64 " in force: %u profiles, %u rules, over %s", version,
		 p->nprofiles, p->nrules,
		 p->baseline_file[0] != '\0' ? p->baseline_file : "ConnectX-5 defaults");
	policy_status(d, version, NULL);
	d->trig |= TRIG_REOPT; /* every QP's profile may change */
}

void ctld_ops_tick(struct ctld *d)
{
	uint64_t now = ice_now_ns(), v;
	redisReply *r;
	char *end;

	/* a dry run is nobody's controller: it plans with the policy it was given */
	if (d->link.c == NULL || d->cfg.dry_run)
		return;
	if (now >= d->next_member_ns) {
		member_write(d);
		d->next_member_ns = now + MEMBER_EVERY_NS;
	}
	r = ctld_cmd(d, "GET %s", d->k_polcur);
	if (r == NULL)
		return;
	if (r->type == REDIS_REPLY_STRING) {
		v = strtoull(r->str, &end, 10);
		if (*end == '\0' && v > 0 && v != d->pol_version && v != d->pol_refused)
			policy_take(d, v);
	}
	freeReplyObject(r);
}

/* ---- why each QP has its plan */

static const struct ccoll *coll_of(const struct ctld *d, uint64_t id)
{
	for (size_t c = 0; c < d->ncolls && id != 0; c++)
		if (strtoull(d->colls[c].comm, NULL, 16) == id)
			return &d->colls[c];
	return NULL;
}

static int why_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cwhy *)a)->id, ((const struct cwhy *)b)->id);
}

/* FNV-1a over argv[0..n), each string with its terminating NUL. */
static uint64_t why_hash(const char *const *argv, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		for (const unsigned char *p = (const unsigned char *)argv[i];; p++) {
			h = (h ^ *p) * 0x100000001b3ull;
			if (*p == '\0')
				break;
		}
	return h ? h : 1; /* 0: not written */
}

/* The QPs of the last publication whose records are gone: DEL (appended). */
static uint32_t why_deletes(struct ctld *d, const struct cwhy *now, size_t nnow)
{
	char key[ICE_RKEY_MAX];
	uint32_t n = 0;

	for (size_t i = 0; i < d->nwhy; i++) {
		if (bsearch(&d->why[i], now, nnow, sizeof(*now), why_cmp) != NULL ||
		    ice_rkey(key, sizeof(key), ICE_RK_CTL_QP, d->cfg.fabric, NULL, d->why[i].id) <
			    0)
			continue;
		ice_redis_appendf(&d->link, "DEL %s", key);
		n++;
	}
	return n;
}

/* Why each planned QP has its plan (ctl:qp:<id>): written when its content
 * (all but plan_epoch and plan_ts_ms) differs from what this controller
 * last wrote, its TTL renewed once half of it has passed, and the records
 * of QPs no longer planned deleted. On a new connection or a takeover
 * every record is written again (another leader, or a fresh Redis). */
#define QP_RECORDS_BATCH 8192

void ctld_ops_qp_records(struct ctld *d, const struct ctl_demand *dem, const uint32_t *qix,
			 uint64_t epoch)
{
	char key[ICE_RKEY_MAX], ep[24], ts[24], ttl[24], pv[24];
	uint64_t now_ms = ice_wall_ms();
	struct cwhy *nw;
	redisReply **r;
	uint32_t n = 0, ndel = 0, sent = 0;
	bool all, failed = false;

	if (d->link.c == NULL)
		return;
	all = d->why_conn != d->link.connects || (d->trig & TRIG_TAKEOVER);
	d->why_conn = d->link.connects;
	nw = calloc(dem->n + 1, sizeof(*nw));
	r = calloc(2 * dem->n + d->nwhy + 1, sizeof(*r));
	if (nw == NULL || r == NULL) {
		free(nw);
		free(r);
		return;
	}
	snprintf(ep, sizeof(ep), "%" PRIu64, epoch);
	snprintf(ts, sizeof(ts), "%" PRIu64, now_ms);
	snprintf(ttl, sizeof(ttl), "%u", QP_RECORD_TTL_MS);
	snprintf(pv, sizeof(pv), "%" PRIu64, d->pol_version);
	for (size_t k = 0; k < dem->n; k++) {
		const struct ctl_flow *f = &dem->flows[k];
		const struct cqp *q = &d->qps[qix[k]];
		const struct ccoll *cl = coll_of(d, f->coll_id);
		struct in_addr a = {.s_addr = q->lip};
		char ip[INET_ADDRSTRLEN], route[128] = "", sp[8], st[24], tg[24], dm[24], co[24],
					  mb[24], rule[48] = "", prof[CTL_NAME_MAX] = "";
		const char *why = f->flags & CTL_FLOW_ANNOUNCED ? "announced" : "measured";
		struct cwhy *w = &nw[k];
		const struct cwhy *old;

		/* in round trips of at most QP_RECORDS_BATCH commands, the lease
		 * renewed between them: 10^5 records take seconds */
		if (n - sent >= QP_RECORDS_BATCH) {
			if (ctld_pipe(d, n - sent, r + sent) < 0) {
				failed = true;
				break;
			}
			sent = n;
			ctld_lease_keep(d);
		}
		inet_ntop(AF_INET, &a, ip, sizeof(ip));
		snprintf(w->id, sizeof(w->id), "%s:%u", ip, q->qpn);
		if (ice_rkey(key, sizeof(key), ICE_RK_CTL_QP, d->cfg.fabric, NULL, w->id) < 0)
			continue;
		if (f->path.idx >= 0)
			ctl_route_name(d->pl, &f->path, route, sizeof(route));
		if (d->pol != NULL) {
			int ri =
				ctl_policy_rule(d->pol, f->op, f->msg_bytes, f->coll_id, f->tclass);

			if (ri >= 0)
				snprintf(rule, sizeof(rule), "rules[%d] line %d", ri,
					 d->pol->rules[ri].line);
			else
				snprintf(rule, sizeof(rule), "default");
			snprintf(
				prof, sizeof(prof), "%s",
				ctl_policy_match(d->pol, f->op, f->msg_bytes, f->coll_id, f->tclass)
					->name);
		}
		snprintf(sp, sizeof(sp), "%u", f->sport);
		snprintf(st, sizeof(st), "%.0f", f->start_bps);
		snprintf(tg, sizeof(tg), "%.0f", f->target_bps);
		snprintf(dm, sizeof(dm), "%" PRIu64, f->demand);
		snprintf(co, sizeof(co), "%016" PRIx64, f->coll_id);
		snprintf(mb, sizeof(mb), "%" PRIu64, f->msg_bytes);
		{
			/* the content first; plan_epoch and plan_ts_ms (the last four)
			 * say which publication last changed it */
			const char *argv[] = {
				"HSET",
				key,
				"host",
				d->topo->nodes[f->host].name,
				"remote",
				d->topo->nodes[d->topo->ports[f->dst_port].node].name,
				"route",
				route,
				"sport",
				sp,
				"start_bps",
				st,
				"target_bps",
				tg,
				"demand_bps",
				dm,
				"demand",
				why,
				"op",
				ctl_coll_op_name(f->op),
				"comm",
				f->coll_id != 0 ? co : "",
				"job",
				cl != NULL ? cl->job : "",
				"msg_bytes",
				mb,
				"profile",
				prof,
				"policy_rule",
				rule,
				"policy_version",
				pv,
				"plan_epoch",
				ep,
				"plan_ts_ms",
				ts,
			};
			size_t argc = sizeof(argv) / sizeof(argv[0]);

			w->hash = why_hash(argv + 2, argc - 6);
			old = d->why != NULL ? bsearch(w, d->why, d->nwhy, sizeof(*w), why_cmp)
					     : NULL;
			if (!all && old != NULL && old->hash == w->hash) {
				w->ms = old->ms;
				if (now_ms < old->ms + QP_RECORD_TTL_MS / 2)
					continue; /* as written */
				w->ms = now_ms;
				w->refresh = true;
				ice_redis_appendf(&d->link, "PEXPIRE %s %s", key, ttl);
				n++;
				continue;
			}
			w->ms = now_ms;
			w->written = true;
			ice_redis_appendv(&d->link, (int)argc, argv, NULL);
		}
		ice_redis_appendf(&d->link, "PEXPIRE %s %s", key, ttl);
		n += 2;
	}
	qsort(nw, dem->n, sizeof(*nw), why_cmp);
	ndel = failed ? 0 : why_deletes(d, nw, dem->n);
	if (!failed && n + ndel > sent && ctld_pipe(d, n + ndel - sent, r + sent) < 0)
		failed = true;
	for (size_t i = 0; i < n + ndel; i++)
		failed |= r[i] == NULL || r[i]->type == REDIS_REPLY_ERROR;
	ctld_freev(r, n + ndel);
	for (size_t k = 0; k < dem->n; k++) {
		d->m.qp_writes += nw[k].written;
		d->m.qp_refreshes += nw[k].refresh;
	}
	d->m.qp_deletes += ndel;
	if (failed)
		d->why_conn = 0; /* a write failed: all again at the next publication */
	free(d->why);
	d->why = nw;
	d->nwhy = dem->n;
	free(r);
}

/* ---- /metrics */

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void hist(FILE *f, const char *name, const char *help, const struct ctld_hist *h,
		 const double *bounds)
{
	uint64_t cum = 0;

	head(f, name, "histogram", help);
	for (uint32_t b = 0; b < CTLD_HIST_MAX; b++) {
		cum += h->n[b];
		fprintf(f, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name, bounds[b], cum);
	}
	cum += h->n[CTLD_HIST_MAX];
	fprintf(f, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, cum);
	fprintf(f, "%s_sum %.6f\n%s_count %" PRIu64 "\n", name, h->sum, name, h->count);
}

char *ctld_metrics_text(const struct ctld *d)
{
	const struct ctld_metrics *m = &d->m;
	static const char *const dir[2] = {"up", "down"};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		return NULL;
	head(f, "ice_controller_leader", "gauge", "1 while this controller holds the lease");
	fprintf(f, "ice_controller_leader %d\n", d->leader ? 1 : 0);
	head(f, "ice_controller_redis_up", "gauge", "1 when connected to Redis");
	fprintf(f, "ice_controller_redis_up %d\n", d->link.c != NULL ? 1 : 0);
	head(f, "ice_controller_plan_epoch", "gauge", "epoch of the last plan set published");
	fprintf(f, "ice_controller_plan_epoch %" PRIu64 "\n", m->epoch);
	head(f, "ice_controller_plans_total", "counter", "plans computed");
	fprintf(f, "ice_controller_plans_total %" PRIu64 "\n", m->plans);
	head(f, "ice_controller_plan_failures_total", "counter", "plans that failed to compute");
	fprintf(f, "ice_controller_plan_failures_total %" PRIu64 "\n", m->plan_failures);
	head(f, "ice_controller_publications_total", "counter", "plan sets published");
	fprintf(f, "ice_controller_publications_total %" PRIu64 "\n", m->publications);
	head(f, "ice_controller_refusals_total", "counter",
	     "refused: publications fenced off (lease lost, newer epoch out), applied policies "
	     "that do not load");
	fprintf(f, "ice_controller_refusals_total{what=\"publication\"} %" PRIu64 "\n",
		m->refused_fenced);
	fprintf(f, "ice_controller_refusals_total{what=\"policy\"} %" PRIu64 "\n",
		m->refused_policy);
	head(f, "ice_controller_policy_version", "gauge",
	     "applied policy version in force (0: the file's, or none)");
	fprintf(f, "ice_controller_policy_version %" PRIu64 "\n", d->pol_version);
	head(f, "ice_controller_policies_applied_total", "counter", "applied policies taken");
	fprintf(f, "ice_controller_policies_applied_total %" PRIu64 "\n", m->policies);
	head(f, "ice_controller_qps_planned", "gauge", "QPs in the last plan");
	fprintf(f, "ice_controller_qps_planned %zu\n", m->qps_planned);
	head(f, "ice_controller_qps_announced", "gauge",
	     "QPs of the last plan with an announced collective");
	fprintf(f, "ice_controller_qps_announced %zu\n", m->qps_announced);
	head(f, "ice_controller_plan_seconds", "gauge", "planner time of the last plan");
	fprintf(f, "ice_controller_plan_seconds %.6f\n", m->plan_s);
	hist(f, "ice_controller_plan_duration_seconds", "planner time per plan", &m->plan_hist,
	     ctld_plan_buckets);
	hist(f, "ice_controller_reaction_seconds",
	     "from a signal (link, collective, probe map, congestion) to its plan applied on "
	     "every host",
	     &m->react_hist, ctld_react_buckets);
	head(f, "ice_controller_max_utilization_ratio", "gauge",
	     "highest planned directed-link utilisation of the last plan");
	fprintf(f, "ice_controller_max_utilization_ratio %.6f\n", m->max_util);
	head(f, "ice_controller_bound_utilization_ratio", "gauge",
	     "lower bound of the max utilisation for the last plan's demand");
	fprintf(f, "ice_controller_bound_utilization_ratio %.6f\n", m->bound);
	head(f, "ice_controller_ecmp_utilization_ratio", "gauge",
	     "max utilisation plain ECMP would give the last plan's demand");
	fprintf(f, "ice_controller_ecmp_utilization_ratio %.6f\n", m->ecmp_util);
	/* one series per directed topology link: bounded by the topology */
	head(f, "ice_controller_link_planned_utilization_ratio", "gauge",
	     "planned rates on the directed link over its rate");
	for (uint32_t l = 0; l < d->topo->nlinks; l++)
		for (int k = 0; k < 2; k++)
			fprintf(f,
				"ice_controller_link_planned_utilization_ratio{link=\"%s\","
				"dir=\"%s\"} %.6f\n",
				d->lname[l], dir[k],
				d->planned[2 * l + k] * 8 / (double)d->rate0[l]);
	head(f, "ice_controller_link_measured_utilization_ratio", "gauge",
	     "switch-measured load on the directed link over its rate (links the switches "
	     "measure)");
	for (uint32_t l = 0; l < d->topo->nlinks; l++)
		for (int k = 0; k < 2; k++) {
			const struct ctl_telem_link *x = &d->tm.dl[2 * l + k];

			if (x->state != CTL_TL_OK)
				continue;
			fprintf(f,
				"ice_controller_link_measured_utilization_ratio{link=\"%s\","
				"dir=\"%s\"} %.6f\n",
				d->lname[l], dir[k], x->bytes_s * 8 / (double)d->rate0[l]);
		}
	head(f, "ice_controller_link_up", "gauge", "0 while the planner takes the link as down");
	for (uint32_t l = 0; l < d->topo->nlinks; l++)
		fprintf(f, "ice_controller_link_up{link=\"%s\"} %d\n", d->lname[l],
			d->down[l] ? 0 : 1);
	head(f, "ice_controller_redis_writes_total", "counter",
	     "writes of the operator's records: ctl:link (what=\"link\"), a QP's why record "
	     "(\"qp\"), its TTL renewed (\"qp_refresh\"), deleted (\"qp_delete\")");
	fprintf(f, "ice_controller_redis_writes_total{what=\"link\"} %" PRIu64 "\n",
		m->link_writes);
	fprintf(f, "ice_controller_redis_writes_total{what=\"qp\"} %" PRIu64 "\n", m->qp_writes);
	fprintf(f, "ice_controller_redis_writes_total{what=\"qp_refresh\"} %" PRIu64 "\n",
		m->qp_refreshes);
	fprintf(f, "ice_controller_redis_writes_total{what=\"qp_delete\"} %" PRIu64 "\n",
		m->qp_deletes);
	head(f, "ice_controller_telemetry_readings_total", "counter", "switch port readings taken");
	fprintf(f, "ice_controller_telemetry_readings_total %" PRIu64 "\n", d->tm.readings);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
