// SPDX-License-Identifier: Apache-2.0
/*
 * icectl_qps.c: icectl qps (each QP's route, port, rate, profile and why),
 * plan show|history, explain QP. A QP's record joins three sources: its
 * agent's (ice:<F>:{<H>}:qp:<id>: what it does now), the host's plan entry
 * (by QPN: what it was told) and the controller's reasons
 * (ice:<F>:ctl:qp:<id>: route, demand, rule, collective, last move).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "icectl.h"

static json_t *entry_of(json_t *plan, json_int_t qpn)
{
	json_t *e;
	size_t i;

	json_array_foreach(json_object_get(plan, "entries"), i,
			   e) if (json_integer_value(json_object_get(e, "qpn")) == qpn) return e;
	return NULL;
}

/* One QP's joined record; NULL when the agent has no such QP. */
static json_t *qp_record(struct ictl *x, const char *host, const char *id, json_t *plan)
{
	char key[ICE_RKEY_MAX];
	json_t *a = ictl_hgetall(x, ictl_key(x, key, ICE_RK_QP, host, id));
	json_t *c, *q, *e, *rate;
	json_int_t qpn;

	if (a == NULL || json_object_size(a) == 0) {
		json_decref(a);
		return NULL;
	}
	c = ictl_hgetall(x, ictl_key(x, key, ICE_RK_CTL_QP, NULL, id));
	qpn = (json_int_t)ictl_num(a, "qpn");
	rate = json_loads(ictl_str(a, "rate"), JSON_DECODE_ANY, NULL);
	q = json_pack("{s:s, s:s, s:I, s:s, s:I, s:f, s:b}", "id", id, "host", host, "qpn", qpn,
		      "remote", ictl_str(a, "remote"), "sport_now",
		      (json_int_t)ictl_num(a, "sport"), "rate_mbps",
		      json_number_value(json_object_get(rate, "tx_bytes")) * 8 / 1e6, "closed",
		      ictl_num(a, "closed_ms") > ictl_num(a, "ts_ms"));
	json_decref(rate);
	e = entry_of(plan, qpn);
	if (e != NULL) {
		json_object_set_new(q, "plan_epoch", json_incref(json_object_get(plan, "epoch")));
		json_object_set(q, "sport_planned", json_object_get(e, "sport"));
		json_object_set(q, "start_mbps", json_object_get(e, "start_mbps"));
		json_object_set(q, "target_mbps", json_object_get(e, "target_mbps"));
		json_object_set(q, "path", json_object_get(e, "path"));
		json_object_set(q, "dcqcn", json_object_get(e, "dcqcn"));
	}
	json_object_set_new(q, "planned", json_boolean(e != NULL));
	if (c != NULL && json_object_size(c) > 0) {
		static const char *const why[] = {"route",	 "remote",     "demand",
						  "demand_bps",	 "op",	       "comm",
						  "job",	 "msg_bytes",  "profile",
						  "policy_rule", "plan_ts_ms", "policy_version"};
		json_t *mv = json_object();

		for (size_t i = 0; i < sizeof(why) / sizeof(why[0]); i++)
			if (ictl_str(c, why[i])[0] != '\0')
				json_object_set(
					q, strcmp(why[i], "remote") == 0 ? "remote_host" : why[i],
					json_object_get(c, why[i]));
		if (ictl_str(c, "rule")[0] != '\0') {
			static const char *const mf[] = {
				"rule",	   "link",	  "from",	"to",	      "measured",
				"planned", "unplanned",	  "coll",	"epoch",      "ts_ms",
				"verdict", "rate_before", "rate_after", "cnp_before", "cnp_after"};

			for (size_t i = 0; i < sizeof(mf) / sizeof(mf[0]); i++)
				if (json_object_get(c, mf[i]) != NULL)
					json_object_set(mv, mf[i], json_object_get(c, mf[i]));
			json_object_set(q, "last_move", mv);
		}
		json_decref(mv);
	}
	json_decref(a);
	json_decref(c);
	return q;
}

static bool job_match(const json_t *q, const char *job)
{
	return job[0] == '\0' || strcmp(ictl_str(q, "job"), job) == 0 ||
	       strcmp(ictl_str(q, "comm"), job) == 0;
}

json_t *ictl_qps_doc(struct ictl *x, const char *only_host, const char *only_id)
{
	char key[ICE_RKEY_MAX];
	json_t *hosts = ictl_members(x, "SMEMBERS", ictl_key(x, key, ICE_RK_HOSTS, NULL, NULL));
	json_t *list = json_array();
	size_t h;

	for (h = 0; hosts != NULL && h < json_array_size(hosts); h++) {
		const char *host = json_string_value(json_array_get(hosts, h));
		json_t *ids, *plan;

		if (only_host[0] != '\0' && strcmp(host, only_host) != 0)
			continue;
		ids = ictl_members(x, "ZRANGE", ictl_key(x, key, ICE_RK_QPS, host, NULL));
		plan = ictl_plan_of(x, host);
		for (size_t i = 0; ids != NULL && i < json_array_size(ids); i++) {
			const char *id = json_string_value(json_array_get(ids, i));
			json_t *q;

			if (strchr(id, '>') != NULL) /* a BPF flow no QP claims */
				continue;
			if (only_id != NULL && strcmp(id, only_id) != 0)
				continue;
			q = qp_record(x, host, id, plan);
			if (q != NULL && job_match(q, x->job))
				json_array_append_new(list, q);
			else
				json_decref(q);
		}
		json_decref(ids);
		json_decref(plan);
	}
	json_decref(hosts);
	return list;
}

static const char *mbps(const json_t *q, const char *k, char *buf)
{
	const json_t *v = json_object_get(q, k);

	if (v == NULL)
		return "-";
	snprintf(buf, 24, "%.1f", json_number_value(v));
	return buf;
}

int ictl_qps(struct ictl *x)
{
	static const char *const hd[] = {"host",   "qp",    "route",	"sport",   "now",
					 "rate",   "start", "target",	"profile", "rule",
					 "demand", "job",   "last move"};
	json_t *list, *q;
	struct ictl_table t;
	size_t i;
	int ret = ictl_open(x);

	if (ret != 0)
		return ret;
	list = ictl_qps_doc(x, x->host, NULL);
	if (x->json) {
		json_t *doc = json_pack("{s:s, s:o}", "fabric", x->fabric, "qps", list);

		ictl_json_print(doc);
		json_decref(doc);
		return 0;
	}
	ictl_table_init(&t, "QPs (rates in Mbit/s: measured now, planned start and target)", hd,
			13);
	json_array_foreach(list, i, q)
	{
		char b[6][24], dem[96], job[96], mv[160];
		const json_t *m = json_object_get(q, "last_move");

		snprintf(dem, sizeof(dem), "%s%s%s", ictl_str(q, "demand"),
			 ictl_str(q, "op")[0] && strcmp(ictl_str(q, "op"), "any") != 0 ? " " : "",
			 strcmp(ictl_str(q, "op"), "any") != 0 ? ictl_str(q, "op") : "");
		snprintf(job, sizeof(job), "%s",
			 ictl_str(q, "job")[0] ? ictl_str(q, "job")
			 : ictl_str(q, "comm")[0] && strspn(ictl_str(q, "comm"), "0") != 16
				 ? ictl_str(q, "comm")
				 : "-");
		if (m != NULL)
			snprintf(mv, sizeof(mv), "%s (%s)%s%s", ictl_str(m, "rule"),
				 ictl_str(m, "link"), ictl_str(m, "verdict")[0] ? " " : "",
				 ictl_str(m, "verdict"));
		else
			snprintf(mv, sizeof(mv), "-");
		ictl_table_add(&t, ictl_str(q, "host"), ictl_str(q, "id"), ictl_str(q, "route"),
			       ictl_intstr(q, "sport_planned", b[0]),
			       ictl_intstr(q, "sport_now", b[1]), mbps(q, "rate_mbps", b[2]),
			       ictl_intstr(q, "start_mbps", b[3]),
			       ictl_intstr(q, "target_mbps", b[4]), ictl_str(q, "profile"),
			       ictl_str(q, "policy_rule"), dem, job, mv);
	}
	ictl_table_print(&t);
	json_decref(list);
	return 0;
}

int ictl_explain(struct ictl *x)
{
	json_t *list, *q, *m;
	char b[4][24];
	int ret = ictl_open(x);

	if (ret != 0)
		return ret;
	list = ictl_qps_doc(x, "", x->arg);
	if (json_array_size(list) == 0) {
		fprintf(stderr,
			"icectl: no QP '%s' in fabric '%s' (expected <local address>:<QPN> as "
			"icectl qps lists)\n",
			x->arg, x->fabric);
		json_decref(list);
		return ICTL_EXIT_BAD;
	}
	q = json_array_get(list, 0);
	if (x->json) {
		ictl_json_print(q);
		json_decref(list);
		return 0;
	}
	printf("QP %s on %s, to %s%s%s%s\n", ictl_str(q, "id"), ictl_str(q, "host"),
	       ictl_str(q, "remote"), ictl_str(q, "remote_host")[0] ? " (" : "",
	       ictl_str(q, "remote_host"), ictl_str(q, "remote_host")[0] ? ")" : "");
	printf("  now: source port %s, sending %s Mbit/s%s\n", ictl_intstr(q, "sport_now", b[0]),
	       mbps(q, "rate_mbps", b[1]),
	       json_is_true(json_object_get(q, "closed")) ? " (closed)" : "");
	if (!json_is_true(json_object_get(q, "planned"))) {
		printf("  plan: none for this QP in its host's plan (not planned yet, idle, or "
		       "the host has no plan)\n");
	} else {
		printf("  plan: epoch %s: source port %s%s%s\n", ictl_intstr(q, "plan_epoch", b[0]),
		       ictl_intstr(q, "sport_planned", b[1]),
		       ictl_str(q, "route")[0] ? ", route " : "", ictl_str(q, "route"));
		if (json_integer_value(json_object_get(q, "target_mbps")) > 0)
			printf("  rate: start %s Mbit/s, target %s Mbit/s (max-min fair share on "
			       "its route)\n",
			       ictl_intstr(q, "start_mbps", b[0]),
			       ictl_intstr(q, "target_mbps", b[1]));
		else
			printf("  rate: none planned (measured demand: DCQCN from line rate)\n");
	}
	if (ictl_str(q, "demand")[0] != '\0') {
		printf("  why this route: its demand is %s, %.1f Mbit/s", ictl_str(q, "demand"),
		       strtod(ictl_str(q, "demand_bps"), NULL) / 1e6);
		if (strcmp(ictl_str(q, "demand"), "announced") == 0)
			printf(" (%s of communicator %s%s%s, %s-byte messages)", ictl_str(q, "op"),
			       ictl_str(q, "comm"), ictl_str(q, "job")[0] ? ", job " : "",
			       ictl_str(q, "job"), ictl_str(q, "msg_bytes"));
		printf("; the planner places every planned QP so the busiest link is least "
		       "loaded\n");
		printf("  DCQCN: %s%s%s%s%s\n",
		       ictl_str(q, "profile")[0] ? "profile " : "no policy: the QP keeps its own",
		       ictl_str(q, "profile"), ictl_str(q, "policy_rule")[0] ? ", by " : "",
		       ictl_str(q, "policy_rule"),
		       ictl_str(q, "policy_version")[0] &&
				       strcmp(ictl_str(q, "policy_version"), "0") != 0
			       ? " of the applied policy"
			       : "");
		if (ictl_str(q, "policy_version")[0] &&
		    strcmp(ictl_str(q, "policy_version"), "0") != 0)
			printf("        (policy v%s)\n", ictl_str(q, "policy_version"));
	} else {
		printf("  why: the controller has no record of this QP (ice:%s:ctl:qp:%s)\n",
		       x->fabric, ictl_str(q, "id"));
	}
	m = json_object_get(q, "last_move");
	if (m != NULL) {
		printf("  last move (epoch %s): %s -> %s, rule %s, link %s: measured %.1f, planned "
		       "%.1f, unplanned %.1f Mbit/s\n",
		       ictl_str(m, "epoch"), ictl_str(m, "from"), ictl_str(m, "to"),
		       ictl_str(m, "rule"), ictl_str(m, "link"),
		       strtod(ictl_str(m, "measured"), NULL) * 8 / 1e6,
		       strtod(ictl_str(m, "planned"), NULL) * 8 / 1e6,
		       strtod(ictl_str(m, "unplanned"), NULL) * 8 / 1e6);
		if (ictl_str(m, "verdict")[0] != '\0')
			printf("  verdict: %s (rate %.1f -> %.1f Mbit/s, CNPs %s -> %s per s)\n",
			       ictl_str(m, "verdict"),
			       strtod(ictl_str(m, "rate_before"), NULL) / 1e6,
			       strtod(ictl_str(m, "rate_after"), NULL) / 1e6,
			       ictl_str(m, "cnp_before"), ictl_str(m, "cnp_after"));
	}
	json_decref(list);
	return 0;
}

/* ---- plan show | history */

static int plan_history(struct ictl *x)
{
	static const char *const hd[] = {"epoch", "controller", "published", "hosts"};
	char key[ICE_RKEY_MAX], age[32];
	json_t *list = ictl_xrevrange(x, ictl_key(x, key, ICE_RK_CTL_LOG, NULL, NULL), 50), *e;
	struct ictl_table t;
	size_t i;

	if (list == NULL)
		return ICTL_EXIT_REDIS;
	if (x->json) {
		json_t *doc = json_pack("{s:s, s:o}", "fabric", x->fabric, "publications", list);

		ictl_json_print(doc);
		json_decref(doc);
		return 0;
	}
	ictl_table_init(&t, "plan publications, newest first", hd, 4);
	json_array_foreach(list, i, e)
		ictl_table_add(&t, ictl_str(e, "epoch"), ictl_str(e, "id"),
			       ictl_age(strtoull(ictl_str(e, "ts_ms"), NULL, 10), age, sizeof(age)),
			       ictl_str(e, "hosts"));
	ictl_table_print(&t);
	json_decref(list);
	return 0;
}

int ictl_plan(struct ictl *x)
{
	static const char *const hd[] = {"qpn", "sport", "path", "start", "target", "dcqcn"};
	char key[ICE_RKEY_MAX], age[32];
	json_t *hosts, *out;
	size_t h;
	int ret;

	if (strcmp(x->action, "history") != 0 && strcmp(x->action, "show") != 0) {
		fprintf(stderr, "icectl plan: expected show [HOST] or history, got '%s'\n",
			x->action);
		return ICTL_EXIT_REDIS;
	}
	ret = ictl_open(x);
	if (ret != 0)
		return ret;
	if (strcmp(x->action, "history") == 0)
		return plan_history(x);
	hosts = ictl_members(x, "SMEMBERS", ictl_key(x, key, ICE_RK_HOSTS, NULL, NULL));
	out = json_array();
	for (h = 0; hosts != NULL && h < json_array_size(hosts); h++) {
		const char *host = json_string_value(json_array_get(hosts, h));
		json_t *env, *p, *ap, *kid;

		if (x->arg[0] != '\0' && strcmp(x->arg, host) != 0)
			continue;
		env = ictl_signed_plan_of(x, host);
		p = json_incref(json_object_get(env, "plan"));
		kid = json_incref(json_object_get(env, "kid"));
		json_decref(env);
		ap = ictl_hgetall(x, ictl_key(x, key, ICE_RK_PLAN_APPLIED, host, NULL));
		/* kid: the key that signed it (which one is in force during a rotation) */
		json_array_append_new(out, json_pack("{s:s, s:o, s:o, s:o}", "host", host, "plan",
						     p != NULL ? p : json_null(), "kid",
						     kid != NULL ? kid : json_null(), "applied",
						     ap != NULL ? ap : json_object()));
	}
	json_decref(hosts);
	if (x->arg[0] != '\0' && json_array_size(out) == 0) {
		fprintf(stderr, "icectl: no host '%s' in fabric '%s' (ice:%s:hosts)\n", x->arg,
			x->fabric, x->fabric);
		json_decref(out);
		return ICTL_EXIT_BAD;
	}
	if (x->json) {
		json_t *doc = json_pack("{s:s, s:o}", "fabric", x->fabric, "plans", out);

		ictl_json_print(doc);
		json_decref(doc);
		return 0;
	}
	for (h = 0; h < json_array_size(out); h++) {
		json_t *o = json_array_get(out, h), *p = json_object_get(o, "plan"), *ap, *e;
		struct ictl_table t;
		char title[640];
		uint64_t issued, life;
		size_t i;

		ap = json_object_get(o, "applied");
		if (!json_is_object(p)) {
			printf("%s: no plan published\n\n", ictl_str(o, "host"));
			continue;
		}
		issued = (uint64_t)json_integer_value(json_object_get(p, "issued_ms"));
		life = (uint64_t)json_integer_value(json_object_get(p, "lifetime_ms"));
		snprintf(title, sizeof(title),
			 "%s: epoch %" JSON_INTEGER_FORMAT " issued %s, lifetime %.1f s%s, key %s; "
			 "applied epoch %s (%s)%s%s",
			 ictl_str(o, "host"), json_integer_value(json_object_get(p, "epoch")),
			 ictl_age(issued, age, sizeof(age)), (double)life / 1e3,
			 issued + life < ictl_now_ms() ? " (EXPIRED)" : "",
			 ictl_str(o, "kid")[0] ? ictl_str(o, "kid") : "-",
			 ictl_str(ap, "epoch")[0] ? ictl_str(ap, "epoch") : "-",
			 ictl_str(ap, "state")[0] ? ictl_str(ap, "state") : "-",
			 ictl_str(ap, "refused_reason")[0] ? "; last refused: " : "",
			 ictl_str(ap, "refused_reason"));
		ictl_table_init(&t, title, hd, 6);
		json_array_foreach(json_object_get(p, "entries"), i, e)
		{
			char b[5][24], dc[64] = "-";
			json_t *d = json_object_get(e, "dcqcn");

			if (d != NULL)
				snprintf(dc, sizeof(dc),
					 "rp_max_rate %" JSON_INTEGER_FORMAT
					 " ai %" JSON_INTEGER_FORMAT,
					 json_integer_value(json_object_get(d, "rp_max_rate")),
					 json_integer_value(json_object_get(d, "rp_ai_rate")));
			ictl_table_add(&t, ictl_intstr(e, "qpn", b[0]),
				       ictl_intstr(e, "sport", b[1]), ictl_intstr(e, "path", b[2]),
				       ictl_intstr(e, "start_mbps", b[3]),
				       ictl_intstr(e, "target_mbps", b[4]), dc);
		}
		ictl_table_print(&t);
		printf("\n");
	}
	json_decref(out);
	return 0;
}
