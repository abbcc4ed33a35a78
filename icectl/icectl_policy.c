// SPDX-License-Identifier: Apache-2.0
/*
 * icectl_policy.c: icectl policy validate|diff|apply|history|rollback.
 *
 * A policy is versioned in Redis: INCR ice:<F>:policy:seq gives the
 * version, ice:<F>:policy:<version> holds it (yaml, dir: the directory a
 * relative baseline path is taken from, source, ts_ms, user), and
 * ice:<F>:policy:current points at the one to use; ice:<F>:policy:log keeps
 * every apply and rollback. Nothing is written that does not load with
 * the controller's own loader (controller/ctl_policy.c); the leader takes
 * a new current version at its next tick and records it, or why it
 * refused it, in ctl:status (policy_version, policy_refused, policy_error).
 */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "ctl_daemon.h"
#include "icectl.h"
#include "ice_time.h"

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && n < (1 << 20) &&
	    fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf != NULL && fread(buf, 1, (size_t)n, f) == (size_t)n) {
			buf[n] = '\0';
			*len = (size_t)n;
		} else {
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	return buf;
}

static struct ctl_policy *load_file(const char *path)
{
	struct ice_cfg_err err = {0};
	struct ctl_policy *p = ctl_policy_load(path, &err);
	char buf[768];

	if (p == NULL)
		fprintf(stderr, "%s\n", ice_cfg_err_str(&err, buf, sizeof(buf)));
	return p;
}

/* A stored version; NULL (said) when absent or it no longer loads. */
static struct ctl_policy *load_version(struct ictl *x, uint64_t v, json_t **rec)
{
	char key[ICE_RKEY_MAX], vs[24], name[64], buf[768];
	struct ice_cfg_err err = {0};
	struct ctl_policy *p;
	json_t *h;

	snprintf(vs, sizeof(vs), "%" PRIu64, v);
	h = ictl_hgetall(x, ictl_key(x, key, ICE_RK_POLICY, NULL, vs));
	if (h == NULL)
		return NULL;
	if (ictl_str(h, "yaml")[0] == '\0') {
		fprintf(stderr, "icectl: no policy version %" PRIu64 " (%s)\n", v, key);
		json_decref(h);
		return NULL;
	}
	snprintf(name, sizeof(name), "policy v%" PRIu64, v);
	p = ctl_policy_load_string(name, ictl_str(h, "yaml"), strlen(ictl_str(h, "yaml")),
				   ictl_str(h, "dir")[0] ? ictl_str(h, "dir") : NULL, &err);
	if (p == NULL)
		fprintf(stderr, "%s\n", ice_cfg_err_str(&err, buf, sizeof(buf)));
	if (rec != NULL)
		*rec = h;
	else
		json_decref(h);
	return p;
}

static uint64_t current_version(struct ictl *x)
{
	char key[ICE_RKEY_MAX];
	redisReply *r = ictl_cmd(x, "GET %s", ictl_key(x, key, ICE_RK_POLICY_CURRENT, NULL, NULL));
	uint64_t v = 0;

	if (r != NULL && r->type == REDIS_REPLY_STRING)
		v = strtoull(r->str, NULL, 10);
	if (r != NULL)
		freeReplyObject(r);
	return v;
}

/* ---- diff: what an operator changes, by the loaded values */

static void params_str(const struct ice_dcqcn_params *p, char *buf, size_t len, size_t i)
{
	size_t n;
	const struct ice_cfg_field *f = ice_dcqcn_fields(&n);

	snprintf(buf, len, "%u", *(const uint32_t *)((const char *)p + f[i].offset));
}

static const char *rule_str(const struct ctl_policy *p, uint32_t i, char *buf, size_t len)
{
	const struct ctl_rule *r = &p->rules[i];
	char comm[32] = "", tc[16] = "";

	if (r->has_comm)
		snprintf(comm, sizeof(comm), " comm %" PRIu64, r->comm);
	if (r->has_tclass)
		snprintf(tc, sizeof(tc), " tclass %u", r->tclass);
	char sz[64] = "";

	if (r->min_bytes > 0 && r->max_bytes < UINT64_MAX)
		snprintf(sz, sizeof(sz), ", bytes %" PRIu64 "..%" PRIu64, r->min_bytes,
			 r->max_bytes);
	else if (r->min_bytes > 0)
		snprintf(sz, sizeof(sz), ", bytes >= %" PRIu64, r->min_bytes);
	else if (r->max_bytes < UINT64_MAX)
		snprintf(sz, sizeof(sz), ", bytes <= %" PRIu64, r->max_bytes);
	snprintf(buf, len, "op %s%s%s%s -> %s", ctl_coll_op_name(r->op), sz, comm, tc,
		 p->profiles[r->profile].name);
	return buf;
}

/* The same baseline file, however its path was written? */
static bool same_file(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];

	if (a[0] == '\0' || b[0] == '\0')
		return a[0] == b[0];
	if (realpath(a, ra) == NULL || realpath(b, rb) == NULL)
		return strcmp(a, b) == 0;
	return strcmp(ra, rb) == 0;
}

static json_t *policy_diff(const struct ctl_policy *a, const struct ctl_policy *b)
{
	json_t *ch = json_array();
	size_t nf;
	const struct ice_cfg_field *f = ice_dcqcn_fields(&nf);
	char line[1400], x1[256], x2[256];

#define ADD(...)                                                                                   \
	do {                                                                                       \
		snprintf(line, sizeof(line), __VA_ARGS__);                                         \
		json_array_append_new(ch, json_string(line));                                      \
	} while (0)
	if (!same_file(a ? a->baseline_file : "", b->baseline_file))
		ADD("baseline: '%s' -> '%s'", a ? a->baseline_file : "", b->baseline_file);
	for (uint32_t i = 0; a != NULL && i < a->nprofiles; i++) {
		bool found = false;

		for (uint32_t k = 0; k < b->nprofiles && !found; k++)
			found = strcmp(a->profiles[i].name, b->profiles[k].name) == 0;
		if (!found)
			ADD("profile %s: removed", a->profiles[i].name);
	}
	for (uint32_t k = 0; k < b->nprofiles; k++) {
		const struct ctl_profile *pb = &b->profiles[k], *pa = NULL;

		for (uint32_t i = 0; a != NULL && i < a->nprofiles && pa == NULL; i++)
			if (strcmp(a->profiles[i].name, pb->name) == 0)
				pa = &a->profiles[i];
		if (pa == NULL) {
			ADD("profile %s: added", pb->name);
			continue;
		}
		for (size_t j = 0; j < nf; j++) {
			params_str(&pa->params, x1, sizeof(x1), j);
			params_str(&pb->params, x2, sizeof(x2), j);
			if (strcmp(x1, x2) != 0)
				ADD("profile %s: %s %s -> %s", pb->name, f[j].key, x1, x2);
		}
	}
	for (uint32_t i = 0; i < (a ? a->nrules : 0) || i < b->nrules; i++) {
		const char *s1 = a != NULL && i < a->nrules ? rule_str(a, i, x1, sizeof(x1)) : NULL;
		const char *s2 = i < b->nrules ? rule_str(b, i, x2, sizeof(x2)) : NULL;

		if (s1 == NULL)
			ADD("rules[%u]: added: %s", i, s2);
		else if (s2 == NULL)
			ADD("rules[%u]: removed: %s", i, s1);
		else if (strcmp(s1, s2) != 0)
			ADD("rules[%u]: %s -> %s", i, s1, s2);
	}
	if (a == NULL ||
	    strcmp(a->profiles[a->default_profile].name, b->profiles[b->default_profile].name) != 0)
		ADD("default: %s -> %s", a ? a->profiles[a->default_profile].name : "(none)",
		    b->profiles[b->default_profile].name);
#undef ADD
	return ch;
}

static bool is_version(const char *s, uint64_t *v)
{
	char *end;

	if (s[0] == '\0' || s[0] == '-')
		return false;
	*v = strtoull(s, &end, 10);
	return *end == '\0' && *v > 0;
}

/* FILE or VERSION */
static struct ctl_policy *load_either(struct ictl *x, const char *s)
{
	uint64_t v;

	return is_version(s, &v) ? load_version(x, v, NULL) : load_file(s);
}

static int cmd_diff(struct ictl *x)
{
	struct ctl_policy *a = NULL, *b = NULL;
	uint64_t cur;
	json_t *ch;
	int ret = ictl_open(x);

	if (ret != 0)
		return ret;
	if (x->arg[0] == '\0') {
		fprintf(stderr, "icectl policy diff: expected FILE or VERSION [VERSION]\n");
		return ICTL_EXIT_REDIS;
	}
	if (x->arg2[0] != '\0') {
		a = load_either(x, x->arg);
		b = load_either(x, x->arg2);
		if (a == NULL || b == NULL)
			goto bad;
	} else {
		cur = current_version(x);
		if (cur != 0 && (a = load_version(x, cur, NULL)) == NULL)
			goto bad;
		b = load_either(x, x->arg);
		if (b == NULL)
			goto bad;
	}
	ch = policy_diff(a, b);
	if (x->json) {
		json_t *doc = json_pack("{s:o}", "changes", ch);

		ictl_json_print(doc);
		json_decref(doc);
	} else {
		size_t i;
		json_t *v;

		if (json_array_size(ch) == 0)
			printf("no change\n");
		json_array_foreach(ch, i, v) printf("%s\n", json_string_value(v));
		json_decref(ch);
	}
	ctl_policy_free(a);
	ctl_policy_free(b);
	return 0;
bad:
	ctl_policy_free(a);
	ctl_policy_free(b);
	return ICTL_EXIT_BAD;
}

/* ---- apply, rollback: write, then wait for the leader to say */

static void log_entry(struct ictl *x, const char *action, uint64_t v, const char *source)
{
	char key[ICE_RKEY_MAX], vs[24], ts[24], user[64] = "?";
	struct passwd *pw = getpwuid(getuid());
	redisReply *r;

	if (pw != NULL)
		snprintf(user, sizeof(user), "%s", pw->pw_name);
	snprintf(vs, sizeof(vs), "%" PRIu64, v);
	snprintf(ts, sizeof(ts), "%" PRIu64, ictl_now_ms());
	{
		const char *argv[] = {"XADD",	 ictl_key(x, key, ICE_RK_POLICY_LOG, NULL, NULL),
				      "MAXLEN",	 "~",
				      "1000",	 "*",
				      "action",	 action,
				      "version", vs,
				      "source",	 source,
				      "user",	 user,
				      "ts_ms",	 ts};

		r = ictl_cmdv(x, sizeof(argv) / sizeof(argv[0]), argv);
	}
	if (r != NULL)
		freeReplyObject(r);
}

/* 0: the leader took v; 1: it refused v (its reason printed); 2: no answer */
static int await(struct ictl *x, uint64_t v)
{
	char key[ICE_RKEY_MAX];
	uint64_t end = ice_now_ns() + x->wait_ns;

	ictl_key(x, key, ICE_RK_CTL_STATUS, NULL, NULL);
	do {
		redisReply *r =
			ictl_cmd(x, "HMGET %s policy_version policy_refused policy_error", key);
		uint64_t in = 0, ref = 0;

		if (r == NULL)
			return 2;
		if (r->type == REDIS_REPLY_ARRAY && r->elements == 3) {
			in = r->element[0]->str ? strtoull(r->element[0]->str, NULL, 10) : 0;
			ref = r->element[1]->str ? strtoull(r->element[1]->str, NULL, 10) : 0;
		}
		if (in == v) {
			freeReplyObject(r);
			return 0;
		}
		if (ref == v) {
			fprintf(stderr, "icectl: the controller refused policy v%" PRIu64 ": %s\n",
				v, r->element[2]->str ? r->element[2]->str : "?");
			freeReplyObject(r);
			return 1;
		}
		freeReplyObject(r);
		ice_sleep_ns(50 * ICE_NSEC_PER_MSEC);
	} while (ice_now_ns() < end);
	return 2;
}

static int report(struct ictl *x, const char *what, uint64_t v)
{
	int w = x->wait_ns > 0 ? await(x, v) : 2;

	if (x->json) {
		json_t *doc = json_pack("{s:s, s:I, s:s}", "action", what, "version", (json_int_t)v,
					"controller",
					w == 0	 ? "in force"
					: w == 1 ? "refused"
						 : "not taken yet");

		ictl_json_print(doc);
		json_decref(doc);
	} else {
		printf("policy v%" PRIu64 " %s: %s\n", v, what,
		       w == 0	? "in force on the leader"
		       : w == 1 ? "REFUSED by the leader (the old policy stays)"
				: "not taken by a leader yet (it takes it at its next tick)");
	}
	return w == 1 ? ICTL_EXIT_BAD : 0;
}

static int cmd_apply(struct ictl *x)
{
	char key[ICE_RKEY_MAX], vs[24], ts[24], dir[PATH_MAX], user[64] = "?", *text, *copy;
	struct ctl_policy *p;
	struct passwd *pw = getpwuid(getuid());
	redisReply *r;
	uint64_t v;
	size_t len;
	int ret;

	if (x->arg[0] == '\0') {
		fprintf(stderr, "icectl policy apply: expected FILE\n");
		return ICTL_EXIT_REDIS;
	}
	p = load_file(x->arg);
	if (p == NULL)
		return ICTL_EXIT_BAD;
	ctl_policy_free(p);
	text = read_file(x->arg, &len);
	copy = strdup(x->arg);
	if (text == NULL || copy == NULL || realpath(dirname(copy), dir) == NULL) {
		fprintf(stderr, "icectl: %s: cannot read: %s\n", x->arg, strerror(errno));
		free(text);
		free(copy);
		return ICTL_EXIT_BAD;
	}
	free(copy);
	ret = ictl_open(x);
	if (ret != 0) {
		free(text);
		return ret;
	}
	r = ictl_cmd(x, "INCR %s", ictl_key(x, key, ICE_RK_POLICY_SEQ, NULL, NULL));
	if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
		if (r != NULL)
			freeReplyObject(r);
		free(text);
		return ICTL_EXIT_REDIS;
	}
	v = (uint64_t)r->integer;
	freeReplyObject(r);
	if (pw != NULL)
		snprintf(user, sizeof(user), "%s", pw->pw_name);
	snprintf(vs, sizeof(vs), "%" PRIu64, v);
	snprintf(ts, sizeof(ts), "%" PRIu64, ictl_now_ms());
	{
		const char *argv[] = {"HSET", key,     "yaml", text,   "dir", dir,	 "source",
				      x->arg, "ts_ms", ts,     "user", user,  "version", vs};

		ictl_key(x, key, ICE_RK_POLICY, NULL, vs);
		r = ictl_cmdv(x, sizeof(argv) / sizeof(argv[0]), argv);
	}
	free(text);
	if (r == NULL)
		return ICTL_EXIT_REDIS;
	freeReplyObject(r);
	r = ictl_cmd(x, "SET %s %s", ictl_key(x, key, ICE_RK_POLICY_CURRENT, NULL, NULL), vs);
	if (r == NULL)
		return ICTL_EXIT_REDIS;
	freeReplyObject(r);
	log_entry(x, "apply", v, x->arg);
	return report(x, "applied", v);
}

static int cmd_rollback(struct ictl *x)
{
	char key[ICE_RKEY_MAX], vs[24];
	struct ctl_policy *p;
	uint64_t cur, v = 0;
	redisReply *r;
	int ret = ictl_open(x);

	if (ret != 0)
		return ret;
	cur = current_version(x);
	if (x->arg[0] != '\0' && !is_version(x->arg, &v)) {
		fprintf(stderr, "icectl policy rollback: expected a VERSION number, got '%s'\n",
			x->arg);
		return ICTL_EXIT_REDIS;
	}
	if (v == 0) {
		/* the version in use before the current one: the log's entry before
		 * the newest that set the current one */
		r = ictl_cmd(x, "XREVRANGE %s + - COUNT 1000",
			     ictl_key(x, key, ICE_RK_POLICY_LOG, NULL, NULL));
		for (size_t i = 0; r != NULL && r->type == REDIS_REPLY_ARRAY && i < r->elements;
		     i++) {
			redisReply *f = r->element[i]->element[1];

			for (size_t k = 0; k + 1 < f->elements; k += 2)
				if (strcmp(f->element[k]->str, "version") == 0) {
					uint64_t e = strtoull(f->element[k + 1]->str, NULL, 10);

					if (e != cur && v == 0)
						v = e;
				}
			if (v != 0)
				break;
		}
		if (r != NULL)
			freeReplyObject(r);
		if (v == 0) {
			fprintf(stderr, "icectl: no earlier policy version to roll back to (%s)\n",
				key);
			return ICTL_EXIT_BAD;
		}
	}
	p = load_version(x, v, NULL);
	if (p == NULL)
		return ICTL_EXIT_BAD;
	ctl_policy_free(p);
	snprintf(vs, sizeof(vs), "%" PRIu64, v);
	r = ictl_cmd(x, "SET %s %s", ictl_key(x, key, ICE_RK_POLICY_CURRENT, NULL, NULL), vs);
	if (r == NULL)
		return ICTL_EXIT_REDIS;
	freeReplyObject(r);
	log_entry(x, "rollback", v, "");
	return report(x, "rolled back to", v);
}

static int cmd_history(struct ictl *x)
{
	static const char *const hd[] = {"version", "action", "by", "when", "source", ""};
	char key[ICE_RKEY_MAX], age[32];
	json_t *list, *e, *doc;
	struct ictl_table t;
	uint64_t cur;
	size_t i;
	int ret = ictl_open(x);

	if (ret != 0)
		return ret;
	cur = current_version(x);
	list = ictl_xrevrange(x, ictl_key(x, key, ICE_RK_POLICY_LOG, NULL, NULL), 100);
	if (list == NULL)
		return ICTL_EXIT_REDIS;
	doc = json_pack("{s:I, s:o}", "current", (json_int_t)cur, "history", list);
	if (x->json) {
		ictl_json_print(doc);
		json_decref(doc);
		return 0;
	}
	ictl_table_init(&t, "policy changes, newest first", hd, 6);
	json_array_foreach(list, i, e) ictl_table_add(
		&t, ictl_str(e, "version"), ictl_str(e, "action"), ictl_str(e, "user"),
		ictl_age(strtoull(ictl_str(e, "ts_ms"), NULL, 10), age, sizeof(age)),
		ictl_str(e, "source"),
		strtoull(ictl_str(e, "version"), NULL, 10) == cur && i == 0 ? "current" : "");
	ictl_table_print(&t);
	json_decref(doc);
	return 0;
}

/* ---- dry-run: the controller's own planning step against the live view,
 * with FILE's policy, publishing nothing */

static struct ctld *dry_ctld;

static void on_alarm(int sig)
{
	if (dry_ctld != NULL)
		ctld_stop(dry_ctld);
}

/* the topology the leader plans with (ctl:members), when not given */
static int leader_topology(struct ictl *x, char *out, size_t len)
{
	char key[ICE_RKEY_MAX];
	redisReply *r = ictl_cmd(x, "GET %s", ictl_key(x, key, ICE_RK_CTL_LEADER, NULL, NULL));
	json_t *m = NULL;

	if (r != NULL && r->type == REDIS_REPLY_STRING) {
		redisReply *h = ictl_cmd(x, "HGET %s %s",
					 ictl_key(x, key, ICE_RK_CTL_MEMBERS, NULL, NULL), r->str);

		if (h != NULL && h->type == REDIS_REPLY_STRING)
			m = json_loads(h->str, 0, NULL);
		if (h != NULL)
			freeReplyObject(h);
	}
	if (r != NULL)
		freeReplyObject(r);
	snprintf(out, len, "%s", ictl_str(m, "topology"));
	json_decref(m);
	return out[0] != '\0' ? 0 : -ENOENT;
}

static int cmd_dry_run(struct ictl *x)
{
	static const char *const hd[] = {"host", "qpn", "sport", "target", "DCQCN changes"};
	struct sigaction sa = {.sa_handler = on_alarm};
	struct ice_cfg_err err = {0};
	struct ctl_policy *p;
	struct ictl_table t;
	struct ctld_cfg c;
	json_t *doc, *plan, *e, *changes = json_array();
	char buf[768];
	size_t i, k;
	int ret;

	if (x->arg[0] == '\0') {
		fprintf(stderr, "icectl policy dry-run: expected FILE\n");
		return ICTL_EXIT_REDIS;
	}
	p = load_file(x->arg);
	if (p == NULL)
		return ICTL_EXIT_BAD;
	ctl_policy_free(p);
	ret = ictl_open(x);
	if (ret != 0)
		return ret;
	ctld_cfg_defaults(&c);
	snprintf(c.fabric, sizeof(c.fabric), "%s", x->fabric);
	snprintf(c.redis, sizeof(c.redis), "%s", x->redis);
	if (strlen(x->arg) >= sizeof(c.policy)) {
		fprintf(stderr, "icectl: %s: expected a path of at most %zu characters\n", x->arg,
			sizeof(c.policy) - 1);
		return ICTL_EXIT_BAD;
	}
	memcpy(c.policy, x->arg, strlen(x->arg) + 1);
	snprintf(c.id, sizeof(c.id), "icectl-dry-run");
	if (x->topology[0] != '\0')
		snprintf(c.topology, sizeof(c.topology), "%s", x->topology);
	else if (leader_topology(x, c.topology, sizeof(c.topology)) < 0) {
		fprintf(stderr, "icectl: no leader says which topology it plans with; give "
				"--topology FILE\n");
		return ICTL_EXIT_BAD;
	}
	c.dry_run = c.once = c.dry_quiet = true;
	if (ctld_cfg_finish(&c, NULL, &err) < 0) {
		fprintf(stderr, "icectl: %s\n", ice_cfg_err_str(&err, buf, sizeof(buf)));
		return ICTL_EXIT_BAD;
	}
	dry_ctld = ctld_new(&c);
	if (dry_ctld == NULL) {
		fprintf(stderr, "icectl: cannot plan with %s on %s (see the log above)\n", x->arg,
			c.topology);
		return ICTL_EXIT_BAD;
	}
	sigaction(SIGALRM, &sa, NULL);
	alarm(10);
	ctld_run(dry_ctld);
	alarm(0);
	doc = ctld_dry_text(dry_ctld) != NULL ? json_loads(ctld_dry_text(dry_ctld), 0, NULL) : NULL;
	ctld_free(dry_ctld);
	dry_ctld = NULL;
	if (doc == NULL) {
		fprintf(stderr, "icectl: the dry run made no plan in 10 s (no QPs in the view?)\n");
		return ICTL_EXIT_BAD;
	}
	/* against the plans in force, per QP */
	json_array_foreach(json_object_get(doc, "plans"), i, plan)
	{
		const char *host = ictl_str(plan, "host");
		json_t *now = ictl_plan_of(x, host);

		json_array_foreach(json_object_get(plan, "entries"), k, e)
		{
			json_int_t qpn = json_integer_value(json_object_get(e, "qpn"));
			json_t *o = NULL, *d1, *d2, *v;
			char what[512] = "";
			const char *name;
			size_t j, off = 0;

			json_array_foreach(json_object_get(now, "entries"), j,
					   v) if (json_integer_value(json_object_get(v, "qpn")) ==
						  qpn) o = v;
			d1 = json_object_get(o, "dcqcn");
			d2 = json_object_get(e, "dcqcn");
			json_object_foreach(d2, name, v)
			{
				json_int_t a = json_integer_value(json_object_get(d1, name));

				if (d1 == NULL || a != json_integer_value(v))
					off += (size_t)snprintf(
						what + off,
						off < sizeof(what) ? sizeof(what) - off : 0,
						"%s%s %" JSON_INTEGER_FORMAT
						" -> %" JSON_INTEGER_FORMAT,
						off ? ", " : "", name, a, json_integer_value(v));
				if (off >= sizeof(what))
					break;
			}
			json_array_append_new(
				changes,
				json_pack("{s:s, s:I, s:I, s:I, s:I, s:s}", "host", host, "qpn",
					  qpn, "sport_now",
					  json_integer_value(json_object_get(o, "sport")), "sport",
					  json_integer_value(json_object_get(e, "sport")),
					  "target_mbps",
					  json_integer_value(json_object_get(e, "target_mbps")),
					  "dcqcn_changes", what));
		}
		json_decref(now);
	}
	json_object_set_new(doc, "changes", changes);
	if (x->json) {
		ictl_json_print(doc);
		json_decref(doc);
		return 0;
	}
	printf("dry run of %s on the live view (%s): max util %.3f (bound %.3f, ECMP %.3f); "
	       "nothing published\n",
	       x->arg, c.topology, json_number_value(json_object_get(doc, "max_util")),
	       json_number_value(json_object_get(doc, "bound")),
	       json_number_value(json_object_get(doc, "ecmp_util")));
	ictl_table_init(&t, "per QP, against the plan in force", hd, 5);
	json_array_foreach(changes, i, e)
	{
		char q[24], sp[48], tg[24];

		ictl_intstr(e, "qpn", q);
		snprintf(sp, sizeof(sp), "%" JSON_INTEGER_FORMAT " -> %" JSON_INTEGER_FORMAT,
			 json_integer_value(json_object_get(e, "sport_now")),
			 json_integer_value(json_object_get(e, "sport")));
		ictl_intstr(e, "target_mbps", tg);
		ictl_table_add(&t, ictl_str(e, "host"), q, sp, tg,
			       ictl_str(e, "dcqcn_changes")[0] ? ictl_str(e, "dcqcn_changes")
							       : "none");
	}
	ictl_table_print(&t);
	json_decref(doc);
	return 0;
}

int ictl_policy(struct ictl *x)
{
	if (strcmp(x->action, "validate") == 0) {
		struct ctl_policy *p;

		if (x->arg[0] == '\0') {
			fprintf(stderr, "icectl policy validate: expected FILE\n");
			return ICTL_EXIT_REDIS;
		}
		p = load_file(x->arg);
		if (p == NULL)
			return ICTL_EXIT_BAD;
		printf("%s: valid: %u profiles, %u rules, default %s, baseline %s\n", x->arg,
		       p->nprofiles, p->nrules, p->profiles[p->default_profile].name,
		       p->baseline_file[0] ? p->baseline_file : "ConnectX-5 defaults");
		ctl_policy_free(p);
		return 0;
	}
	if (strcmp(x->action, "diff") == 0)
		return cmd_diff(x);
	if (strcmp(x->action, "apply") == 0)
		return cmd_apply(x);
	if (strcmp(x->action, "rollback") == 0)
		return cmd_rollback(x);
	if (strcmp(x->action, "history") == 0)
		return cmd_history(x);
	if (strcmp(x->action, "dry-run") == 0)
		return cmd_dry_run(x);
	fprintf(stderr,
		"icectl policy: expected validate, diff, dry-run, apply, history or rollback, got "
		"'%s'\n",
		x->action);
	return ICTL_EXIT_REDIS;
}
