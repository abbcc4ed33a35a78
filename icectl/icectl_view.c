// SPDX-License-Identifier: Apache-2.0
/*
 * icectl_view.c: icectl status (controllers, agents, plan epochs in force,
 * what is stale) and icectl links (what the controller knows per directed
 * link, beside the switch's own record).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "icectl.h"
#include "ice_time.h"

__attribute__((format(printf, 2, 3))) static void stale(json_t *list, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_array_append_new(list, json_string(buf));
}

json_t *ictl_status_doc(struct ictl *x)
{
	char key[ICE_RKEY_MAX], age[32], b1[160], b2[200];
	json_t *doc, *hosts, *ctls, *agents, *plans, *st, *pub, *exp, *stl, *pol;
	uint64_t now = ictl_now_ms();
	redisReply *r;
	const char *leader = "";
	long long ttl = -2;

	doc = json_object();
	stl = json_array();
	json_object_set_new(doc, "fabric", json_string(x->fabric));
	r = ictl_cmd(x, "GET %s", ictl_key(x, key, ICE_RK_SCHEMA, NULL, NULL));
	json_object_set_new(doc, "schema",
			    r != NULL && r->type == REDIS_REPLY_STRING ? json_string(r->str)
								       : json_null());
	if (r != NULL)
		freeReplyObject(r);
	/* controllers */
	r = ictl_cmd(x, "GET %s", ictl_key(x, key, ICE_RK_CTL_LEADER, NULL, NULL));
	if (r != NULL && r->type == REDIS_REPLY_STRING)
		leader = strdupa(r->str);
	if (r != NULL)
		freeReplyObject(r);
	r = ictl_cmd(x, "PTTL %s", key);
	if (r != NULL && r->type == REDIS_REPLY_INTEGER)
		ttl = r->integer;
	if (r != NULL)
		freeReplyObject(r);
	json_object_set_new(
		doc, "leader",
		leader[0] ? json_pack("{s:s, s:I}", "id", leader, "lease_ms", (json_int_t)ttl)
			  : json_null());
	if (leader[0] == '\0')
		json_array_append_new(stl, json_string("no leader: no controller holds the lease"));
	ctls = json_array();
	r = ictl_cmd(x, "HGETALL %s", ictl_key(x, key, ICE_RK_CTL_MEMBERS, NULL, NULL));
	for (size_t i = 0; r != NULL && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements;
	     i += 2) {
		json_t *m = json_loads(r->element[i + 1]->str, 0, NULL);
		uint64_t ts;

		if (!json_is_object(m)) {
			json_decref(m);
			stale(stl, "controller %s: its ctl:members entry is not JSON",
			      r->element[i]->str);
			continue;
		}
		ts = (uint64_t)json_integer_value(json_object_get(m, "ts_ms"));
		json_object_set_new(m, "stale", json_boolean(now > ts + ICTL_STALE_MS));
		json_object_set_new(m, "leader",
				    json_boolean(strcmp(r->element[i]->str, leader) == 0));
		if (now > ts + ICTL_STALE_MS)
			stale(stl, "controller %s: silent since %s", r->element[i]->str,
			      ictl_age(ts, age, sizeof(age)));
		json_array_append_new(ctls, m);
	}
	if (r != NULL)
		freeReplyObject(r);
	json_object_set_new(doc, "controllers", ctls);
	st = ictl_hgetall(x, ictl_key(x, key, ICE_RK_CTL_STATUS, NULL, NULL));
	pub = ictl_hgetall(x, ictl_key(x, key, ICE_RK_CTL_PUBLISHED, NULL, NULL));
	exp = ictl_hgetall(x, ictl_key(x, key, ICE_RK_SW_EXPORTER, NULL, NULL));
	json_object_set_new(doc, "controller_status", st != NULL ? st : json_object());
	json_object_set_new(doc, "published", pub != NULL ? pub : json_object());
	json_object_set_new(doc, "exporter", exp != NULL ? exp : json_object());
	/* the policy in force */
	pol = json_object();
	r = ictl_cmd(x, "GET %s", ictl_key(x, key, ICE_RK_POLICY_CURRENT, NULL, NULL));
	json_object_set_new(pol, "current",
			    r != NULL && r->type == REDIS_REPLY_STRING
				    ? json_integer(strtoll(r->str, NULL, 10))
				    : json_null());
	if (r != NULL)
		freeReplyObject(r);
	json_object_set_new(pol, "in_force",
			    json_integer((json_int_t)ictl_num(st, "policy_version")));
	/* a refusal matters while the refused version is the current one */
	if (ictl_str(st, "policy_refused")[0] != '\0' &&
	    json_integer_value(json_object_get(pol, "current")) ==
		    (json_int_t)ictl_num(st, "policy_refused")) {
		json_object_set_new(pol, "refused",
				    json_integer((json_int_t)ictl_num(st, "policy_refused")));
		json_object_set_new(pol, "error", json_string(ictl_str(st, "policy_error")));
	}
	if (json_integer_value(json_object_get(pol, "current")) != 0 &&
	    json_integer_value(json_object_get(pol, "current")) !=
		    json_integer_value(json_object_get(pol, "in_force"))) {
		ictl_intstr(pol, "current", b1);
		stale(stl, "policy v%s applied but not in force (%s)", b1,
		      json_object_get(pol, "refused") != NULL ? ictl_str(st, "policy_error")
							      : "the leader has not taken it yet");
	}
	json_object_set_new(doc, "policy", pol);
	if (ictl_str(exp, "state")[0] != '\0' &&
	    (strcmp(ictl_str(exp, "state"), "running") != 0 ||
	     now > (uint64_t)ictl_num(exp, "ts_ms") + ICTL_STALE_MS))
		stale(stl, "switch telemetry exporter: %s, last reading %s", ictl_str(exp, "state"),
		      ictl_age((uint64_t)ictl_num(exp, "ts_ms"), age, sizeof(age)));
	/* agents and plans */
	agents = json_array();
	plans = json_array();
	hosts = ictl_members(x, "SMEMBERS", ictl_key(x, key, ICE_RK_HOSTS, NULL, NULL));
	for (size_t h = 0; hosts != NULL && h < json_array_size(hosts); h++) {
		const char *host = json_string_value(json_array_get(hosts, h));
		json_t *nics =
			ictl_members(x, "SMEMBERS", ictl_key(x, key, ICE_RK_NICS, host, NULL));
		json_t *ap, *p, *pl;

		for (size_t n = 0; nics != NULL && n < json_array_size(nics); n++) {
			const char *nic = json_string_value(json_array_get(nics, n));
			json_t *ag = ictl_hgetall(x, ictl_key(x, key, ICE_RK_NIC_AGENT, host, nic));
			json_t *sum = ictl_hgetall(x, ictl_key(x, key, ICE_RK_NIC, host, nic));
			bool alive = false, late;
			uint64_t iv = (uint64_t)ictl_num(ag, "interval_ms"),
				 last = (uint64_t)ictl_num(sum, "ts_ms");

			r = ictl_cmd(x, "EXISTS %s", ictl_key(x, key, ICE_RK_NIC_ALIVE, host, nic));
			alive = r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer > 0;
			if (r != NULL)
				freeReplyObject(r);
			/* an interval is late after 3 of them (at least 3 s) */
			late = now > last + (3 * iv > ICTL_STALE_MS ? 3 * iv : ICTL_STALE_MS);
			json_array_append_new(
				agents,
				json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:b, s:I, s:I, s:b}",
					  "host", host, "nic", nic, "state", ictl_str(ag, "state"),
					  "pid", ictl_str(ag, "pid"), "version",
					  ictl_str(ag, "version"), "interval_ms",
					  (json_int_t)ictl_num(ag, "interval_ms"), "alive", alive,
					  "last_seq", (json_int_t)ictl_num(sum, "seq"),
					  "last_ts_ms", (json_int_t)last, "stale", !alive || late));
			if (!alive || late) {
				snprintf(b1, sizeof(b1), "%s/%s", host, nic);
				stale(stl, "agent %s: %s, last interval %s", b1,
				      alive ? "late" : "silent (no alive key)",
				      ictl_age(last, age, sizeof(age)));
			}
			json_decref(ag);
			json_decref(sum);
		}
		json_decref(nics);
		/* the plan published for the host and the one it applied */
		p = ictl_plan_of(x, host);
		ap = ictl_hgetall(x, ictl_key(x, key, ICE_RK_PLAN_APPLIED, host, NULL));
		if (p == NULL && json_object_size(ap) == 0) {
			json_decref(ap);
			continue;
		}
		pl = json_pack("{s:s, s:I, s:I, s:s, s:I}", "host", host, "published",
			       (json_int_t)json_integer_value(json_object_get(p, "epoch")),
			       "applied", (json_int_t)ictl_num(ap, "epoch"), "state",
			       ictl_str(ap, "state"), "entries",
			       (json_int_t)json_array_size(json_object_get(p, "entries")));
		if (ictl_str(ap, "refused_reason")[0] != '\0') {
			json_object_set_new(pl, "refused",
					    json_integer((json_int_t)ictl_num(ap, "refused")));
			json_object_set_new(pl, "refused_reason",
					    json_string(ictl_str(ap, "refused_reason")));
		}
		json_object_set_new(pl, "in_force",
				    json_boolean(p != NULL &&
						 ictl_num(ap, "epoch") ==
							 (double)json_integer_value(
								 json_object_get(p, "epoch")) &&
						 strcmp(ictl_str(ap, "state"), "applied") == 0));
		if (!json_is_true(json_object_get(pl, "in_force"))) {
			snprintf(b1, sizeof(b1), "%" PRIu64, (uint64_t)ictl_num(ap, "epoch"));
			snprintf(b2, sizeof(b2), "%s (%s)", b1,
				 ictl_str(ap, "state")[0] ? ictl_str(ap, "state") : "none");
			stale(stl, "host %s: applied epoch %s, not the one published for it", host,
			      b2);
		}
		json_array_append_new(plans, pl);
		json_decref(p);
		json_decref(ap);
	}
	json_object_set_new(doc, "hosts", hosts != NULL ? hosts : json_array());
	json_object_set_new(doc, "agents", agents);
	json_object_set_new(doc, "plans", plans);
	json_object_set_new(doc, "stale", stl);
	json_object_set_new(doc, "ts_ms", json_integer((json_int_t)now));
	return doc;
}

/* A field of a status hash, "-" when it is absent (an older controller). */
static const char *ictl_or_dash(json_t *o, const char *key)
{
	const char *v = ictl_str(o, key);

	return v[0] ? v : "-";
}

int ictl_status(struct ictl *x)
{
	json_t *doc, *ctls, *agents, *plans, *st, *pub, *stl, *pol;
	const char *leader;
	uint64_t pub_epoch;
	char age[32];
	int ret;

	ret = ictl_open(x);
	if (ret != 0)
		return ret;
	doc = ictl_status_doc(x);
	ctls = json_object_get(doc, "controllers");
	agents = json_object_get(doc, "agents");
	plans = json_object_get(doc, "plans");
	st = json_object_get(doc, "controller_status");
	pub = json_object_get(doc, "published");
	stl = json_object_get(doc, "stale");
	pol = json_object_get(doc, "policy");
	leader = ictl_str(json_object_get(doc, "leader"), "id");
	pub_epoch = (uint64_t)ictl_num(pub, "epoch");
	if (x->json) {
		ictl_json_print(doc);
	} else {
		static const char *const ch[] = {"controller", "role",	 "host", "pid",
						 "epoch",      "policy", "seen"};
		static const char *const ah[] = {"host",     "nic",	      "state", "interval",
						 "last seq", "last interval", "alive"};
		static const char *const ph[] = {"host",    "published", "applied", "state",
						 "entries", "in force",	 "refused"};
		struct ictl_table t;
		json_t *v;
		size_t i;

		printf("fabric %s (schema %s); leader %s; published epoch %" PRIu64 " %s by %s\n",
		       x->fabric, ictl_str(doc, "schema")[0] ? ictl_str(doc, "schema") : "-",
		       leader[0] ? leader : "NONE", pub_epoch,
		       ictl_age((uint64_t)ictl_num(pub, "ts_ms"), age, sizeof(age)),
		       ictl_str(pub, "id")[0] ? ictl_str(pub, "id") : "-");
		printf("last plan: %s flows, max util %s (bound %s, ECMP %s); last reaction %s ms "
		       "(%s); feedback %s\n",
		       ictl_or_dash(st, "flows"), ictl_or_dash(st, "max_util"),
		       ictl_or_dash(st, "bound"), ictl_or_dash(st, "ecmp_util"),
		       ictl_or_dash(st, "reaction_ms"), ictl_or_dash(st, "reaction_what"),
		       ictl_or_dash(st, "feedback"));
		printf("guards: bad QP records %s, foreign %s, capped host reads %s, leader-key "
		       "squats taken back %s; telemetry bad records %s, backwards %s; PFC: "
		       "lossless "
		       "priorities %s, %s NICs, %s storms, %s bad records\n",
		       ictl_or_dash(st, "view_bad_qps"), ictl_or_dash(st, "view_foreign_qps"),
		       ictl_or_dash(st, "view_capped_reads"), ictl_or_dash(st, "lease_squats"),
		       ictl_or_dash(st, "telem_bad_records"), ictl_or_dash(st, "telem_backwards"),
		       ictl_or_dash(st, "pfc_lossless"), ictl_or_dash(st, "pfc_nics"),
		       ictl_or_dash(st, "pfc_storms"), ictl_or_dash(st, "pfc_bad_records"));
		printf("policy: applied v%" JSON_INTEGER_FORMAT ", in force v%" JSON_INTEGER_FORMAT
		       "%s%s\n\n",
		       json_integer_value(json_object_get(pol, "current")),
		       json_integer_value(json_object_get(pol, "in_force")),
		       json_object_get(pol, "refused") != NULL ? "; refused: " : "",
		       json_object_get(pol, "refused") != NULL ? ictl_str(pol, "error") : "");
		ictl_table_init(&t, "controllers", ch, 7);
		json_array_foreach(ctls, i, v)
		{
			char pid[24], ep[24], pv[24];

			ictl_intstr(v, "pid", pid);
			ictl_intstr(v, "epoch", ep);
			snprintf(pv, sizeof(pv), "v%" JSON_INTEGER_FORMAT,
				 json_integer_value(json_object_get(v, "policy_version")));
			ictl_table_add(
				&t, ictl_str(v, "id"),
				json_is_true(json_object_get(v, "leader")) ? "leader" : "standby",
				ictl_str(v, "host"), pid, ep, pv,
				ictl_age((uint64_t)json_integer_value(json_object_get(v, "ts_ms")),
					 age, sizeof(age)));
		}
		ictl_table_print(&t);
		ictl_table_init(&t, "\nagents", ah, 7);
		json_array_foreach(agents, i, v)
		{
			char iv[24], seq[24];

			snprintf(iv, sizeof(iv), "%" JSON_INTEGER_FORMAT " ms",
				 json_integer_value(json_object_get(v, "interval_ms")));
			ictl_intstr(v, "last_seq", seq);
			ictl_table_add(&t, ictl_str(v, "host"), ictl_str(v, "nic"),
				       ictl_str(v, "state"), iv, seq,
				       ictl_age((uint64_t)json_integer_value(
							json_object_get(v, "last_ts_ms")),
						age, sizeof(age)),
				       json_is_true(json_object_get(v, "alive")) ? "yes" : "NO");
		}
		ictl_table_print(&t);
		ictl_table_init(&t, "\nplans (per host: published vs applied)", ph, 7);
		json_array_foreach(plans, i, v)
		{
			char pe[24], ae[24], en[24];

			ictl_intstr(v, "published", pe);
			ictl_intstr(v, "applied", ae);
			ictl_intstr(v, "entries", en);
			ictl_table_add(&t, ictl_str(v, "host"), pe, ae, ictl_str(v, "state"), en,
				       json_is_true(json_object_get(v, "in_force")) ? "yes" : "NO",
				       ictl_str(v, "refused_reason"));
		}
		ictl_table_print(&t);
		printf("\nstale: %s\n", json_array_size(stl) ? "" : "nothing");
		json_array_foreach(stl, i, v) printf("  %s\n", json_string_value(v));
	}
	json_decref(doc);
	return 0;
}

/* ---- links */

static volatile sig_atomic_t stop_watch;

static void on_int(int sig)
{
	stop_watch = 1;
}

/* "leaf1:spine2" -> its two ends */
static bool link_ends(const char *name, char *a, char *b, size_t len)
{
	const char *c = strchr(name, ':');

	if (c == NULL || strchr(c + 1, ':') != NULL)
		return false;
	snprintf(a, len, "%.*s", (int)(c - name), name);
	snprintf(b, len, "%s", c + 1);
	return true;
}

json_t *ictl_links_doc(struct ictl *x)
{
	char key[ICE_RKEY_MAX], pat[ICE_RKEY_MAX], cursor[32] = "0";
	json_t *doc = json_object(), *links = json_array(), *ports, *sw = json_object();
	size_t prefix;

	/* the switch records, by "<switch>:<port>" (the port sends switch -> peer) */
	ports = ictl_members(x, "SMEMBERS", ictl_key(x, key, ICE_RK_SW_PORTS, NULL, NULL));
	for (size_t i = 0; ports != NULL && i < json_array_size(ports); i++) {
		const char *sp = json_string_value(json_array_get(ports, i)), *c = strchr(sp, ':');
		char s[64];
		json_t *rec;

		if (c == NULL)
			continue;
		snprintf(s, sizeof(s), "%.*s", (int)(c - sp), sp);
		rec = ictl_hgetall(x, ictl_key(x, key, ICE_RK_SW_PORT, s, c + 1));
		if (rec != NULL)
			json_object_set_new(sw, sp, rec);
	}
	json_decref(ports);
	/* the controller's per-link keys: SCAN (no index of them is kept) */
	ictl_key(x, pat, ICE_RK_CTL_LINK, NULL, "*");
	ictl_key(x, key, ICE_RK_CTL_LINK, NULL, "x");
	prefix = strlen(key) - 1;
	do {
		redisReply *r = ictl_cmd(x, "SCAN %s MATCH %s COUNT 1000", cursor, pat);

		if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
			if (r != NULL)
				freeReplyObject(r);
			json_decref(doc);
			json_decref(links);
			json_decref(sw);
			return NULL;
		}
		snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
		for (size_t i = 0; i < r->element[1]->elements; i++) {
			const char *k = r->element[1]->element[i]->str, *name = k + prefix;
			static const char *const dirs[2] = {"up", "down"};
			static const char *const fields[] = {"planned",	  "known",    "measured",
							     "unplanned", "capacity", "avg_queue",
							     "ce",	  "state"};
			json_t *h = ictl_hgetall(x, k);
			char a[64], b[64];

			if (h == NULL || !link_ends(name, a, b, sizeof(a))) {
				json_decref(h);
				continue;
			}
			for (int d = 0; d < 2; d++) {
				const char *from = d == 0 ? a : b, *to = d == 0 ? b : a;
				char f[64], pn[160];
				json_t *l = json_pack("{s:s, s:s, s:s, s:s}", "link", name, "dir",
						      dirs[d], "from", from, "to", to),
				       *rec;

				for (size_t j = 0; j < sizeof(fields) / sizeof(fields[0]); j++) {
					snprintf(f, sizeof(f), "%s_%s", dirs[d], fields[j]);
					if (strcmp(fields[j], "state") == 0)
						json_object_set_new(l, "state",
								    json_string(ictl_str(h, f)));
					else if (json_object_get(h, f) != NULL)
						json_object_set_new(l, fields[j],
								    json_real(ictl_num(h, f)));
				}
				/* measured only where a switch measures it */
				if (strcmp(ictl_str(l, "state"), "ok") != 0)
					json_object_set_new(l, "measured", json_null());
				json_object_set_new(l, "ts_ms",
						    json_integer((json_int_t)ictl_num(h, "ts_ms")));
				snprintf(pn, sizeof(pn), "%s:%s", from, to);
				rec = json_object_get(sw, pn);
				if (rec != NULL)
					json_object_set(l, "switch", rec);
				json_array_append_new(links, l);
			}
			json_decref(h);
		}
		freeReplyObject(r);
	} while (strcmp(cursor, "0") != 0);
	/* sorted by link, then direction */
	{
		size_t n = json_array_size(links);

		for (size_t i = 1; i < n; i++)
			for (size_t j = i; j > 0; j--) {
				json_t *p = json_array_get(links, j - 1),
				       *q = json_array_get(links, j);
				int c = strcmp(ictl_str(p, "link"), ictl_str(q, "link"));

				if (c < 0 || (c == 0 && strcmp(ictl_str(p, "dir"), "up") == 0))
					break;
				json_incref(p);
				json_array_set(links, j - 1, q);
				json_array_set_new(links, j, p);
			}
	}
	json_object_set_new(doc, "fabric", json_string(x->fabric));
	json_object_set_new(doc, "ts_ms", json_integer((json_int_t)ictl_now_ms()));
	json_object_set_new(doc, "links", links);
	json_object_set_new(doc, "switch_ports", sw);
	return doc;
}

static void links_print(json_t *doc)
{
	static const char *const hd[] = {"link",      "planned",  "known", "measured",
					 "unplanned", "capacity", "queue", "CE",
					 "state",     "port",	  "drops", "CE total"};
	json_t *links = json_object_get(doc, "links"), *l;
	struct ictl_table t;
	size_t i;

	ictl_table_init(&t,
			"per directed link (Mbit/s; queue in bytes; CE: marks in the last "
			"interval)",
			hd, 12);
	json_array_foreach(links, i, l)
	{
		char v[8][32], name[160];
		static const char *const f[] = {"planned",  "known",	 "measured", "unplanned",
						"capacity", "avg_queue", "ce"};
		json_t *sw = json_object_get(l, "switch");

		snprintf(name, sizeof(name), "%s>%s", ictl_str(l, "from"), ictl_str(l, "to"));
		for (int k = 0; k < 7; k++) {
			json_t *n = json_object_get(l, f[k]);

			if (!json_is_number(n))
				snprintf(v[k], 32, "-");
			else if (k < 5)
				snprintf(v[k], 32, "%.1f", json_number_value(n) * 8 / 1e6);
			else
				snprintf(v[k], 32, "%.0f", json_number_value(n));
		}
		ictl_table_add(&t, name, v[0], v[1], v[2], v[3], v[4], v[5], v[6],
			       ictl_str(l, "state"), sw ? ictl_str(sw, "oper-status") : "",
			       sw ? ictl_str(sw, "out-discards") : "",
			       sw ? ictl_str(sw, "ecn-marked-pkts") : "");
	}
	ictl_table_print(&t);
}

int ictl_links(struct ictl *x)
{
	int ret = ictl_open(x);

	if (ret != 0)
		return ret;
	if (x->watch)
		signal(SIGINT, on_int);
	do {
		json_t *doc = ictl_links_doc(x);

		if (doc == NULL)
			return ICTL_EXIT_REDIS;
		if (x->watch && !x->json)
			printf("\033[H\033[2J");
		if (x->json) {
			char *s = json_dumps(
				doc, JSON_SORT_KEYS | (x->watch ? JSON_COMPACT : JSON_INDENT(2)));

			if (s != NULL)
				printf("%s\n", s);
			free(s);
		} else {
			links_print(doc);
		}
		fflush(stdout);
		json_decref(doc);
		if (x->watch && !stop_watch)
			ice_sleep_ns(x->interval_ns);
	} while (x->watch && !stop_watch);
	return 0;
}
