// SPDX-License-Identifier: Apache-2.0
/*
 * icectl: the operator's CLI over Redis (icectl.h, README.md).
 *
 *   icectl [--redis ADDR] [--fabric F] [--json] COMMAND ...
 *
 * Exit: 0 done, 1 what was asked for is wrong (a policy that does not
 * validate, a QP or host that does not exist), 2 a bad command line, or a
 * Redis that cannot be reached or holds no keys of the fabric.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "icectl.h"
#include "ice_config.h"
#include "ice_log.h"
#include "ice_time.h"

/* ---- Redis */

int ictl_open(struct ictl *x)
{
	const enum ice_rkey any[] = {
		ICE_RK_SCHEMA,	    ICE_RK_HOSTS,    ICE_RK_CTL_PUBLISHED,  ICE_RK_CTL_STATUS,
		ICE_RK_CTL_MEMBERS, ICE_RK_SW_PORTS, ICE_RK_POLICY_CURRENT, ICE_RK_CTL_LEADER};
	char why[256], key[ICE_RKEY_MAX];
	redisReply *r;
	size_t n = sizeof(any) / sizeof(any[0]);

	if (ice_redis_is_cluster(x->redis)) {
		fprintf(stderr,
			"icectl: %s: a Redis Cluster is not supported by icectl yet; "
			"give one node's address of a single instance\n",
			x->redis);
		return ICTL_EXIT_REDIS;
	}
	x->c = ice_redis_connect(x->redis, 2 * ICE_NSEC_PER_SEC, why, sizeof(why));
	if (x->c == NULL) {
		bool auth =
			strncmp(why, "AUTH ", 5) == 0 ||
			strncmp(why, ICE_REDIS_AUTH_ENV " ", strlen(ICE_REDIS_AUTH_ENV) + 1) == 0;

		fprintf(stderr, "icectl: %s Redis at %s: %s\n",
			auth ? "not admitted by" : "cannot reach", x->redis, why);
		return ICTL_EXIT_REDIS;
	}
	for (size_t i = 0; i < n; i++)
		redisAppendCommand(x->c, "EXISTS %s",
				   ice_rkey_str(key, sizeof(key), any[i], x->fabric, NULL, NULL));
	for (size_t i = 0; i < n; i++) {
		if (redisGetReply(x->c, (void **)&r) != REDIS_OK || r == NULL) {
			fprintf(stderr, "icectl: Redis at %s: %s\n", x->redis, x->c->errstr);
			return ICTL_EXIT_REDIS;
		}
		if (r->type == REDIS_REPLY_ERROR) {
			fprintf(stderr, "icectl: Redis at %s refused EXISTS: %s\n", x->redis,
				r->str);
			freeReplyObject(r);
			return ICTL_EXIT_REDIS;
		}
		if (r->type == REDIS_REPLY_INTEGER && r->integer > 0) {
			freeReplyObject(r);
			/* drain the rest */
			for (size_t k = i + 1; k < n; k++)
				if (redisGetReply(x->c, (void **)&r) == REDIS_OK && r != NULL)
					freeReplyObject(r);
			return 0;
		}
		freeReplyObject(r);
	}
	fprintf(stderr,
		"icectl: Redis at %s has no keys of fabric '%s' (no %s, hosts, controller or "
		"switch keys): wrong --fabric or --redis?\n",
		x->redis, x->fabric,
		ice_rkey_str(key, sizeof(key), ICE_RK_SCHEMA, x->fabric, NULL, NULL));
	return ICTL_EXIT_REDIS;
}

redisReply *ictl_cmdv(struct ictl *x, int argc, const char **argv)
{
	redisReply *r = redisCommandArgv(x->c, argc, argv, NULL);

	if (r == NULL) {
		fprintf(stderr, "icectl: Redis at %s: %s\n", x->redis, x->c->errstr);
		return NULL;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		fprintf(stderr, "icectl: Redis at %s refused %s: %s\n", x->redis, argv[0], r->str);
		freeReplyObject(r);
		return NULL;
	}
	return r;
}

redisReply *ictl_cmd(struct ictl *x, const char *fmt, ...)
{
	redisReply *r;
	va_list ap;

	va_start(ap, fmt);
	r = redisvCommand(x->c, fmt, ap);
	va_end(ap);
	if (r == NULL) {
		fprintf(stderr, "icectl: Redis at %s: %s\n", x->redis, x->c->errstr);
		return NULL;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		fprintf(stderr, "icectl: Redis at %s refused '%s': %s\n", x->redis, fmt, r->str);
		freeReplyObject(r);
		return NULL;
	}
	return r;
}

const char *ictl_key(struct ictl *x, char *buf, enum ice_rkey k, const char *host, const char *arg)
{
	return ice_rkey_str(buf, ICE_RKEY_MAX, k, x->fabric, host, arg);
}

json_t *ictl_hgetall(struct ictl *x, const char *key)
{
	redisReply *r = ictl_cmd(x, "HGETALL %s", key);
	json_t *o;

	if (r == NULL)
		return NULL;
	o = json_object();
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2)
		if (r->element[i]->str != NULL && r->element[i + 1]->str != NULL)
			json_object_set_new(
				o, r->element[i]->str,
				json_stringn(r->element[i + 1]->str, r->element[i + 1]->len));
	freeReplyObject(r);
	return o;
}

double ictl_num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	if (json_is_number(v))
		return json_number_value(v);
	return json_is_string(v) ? strtod(json_string_value(v), NULL) : 0;
}

const char *ictl_str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s != NULL ? s : "";
}

const char *ictl_intstr(const json_t *o, const char *k, char buf[24])
{
	const json_t *v = json_object_get(o, k);

	if (json_is_integer(v))
		snprintf(buf, 24, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else
		snprintf(buf, 24, "%s", json_is_string(v) ? json_string_value(v) : "-");
	return buf;
}

uint64_t ictl_now_ms(void)
{
	return ice_wall_ms();
}

const char *ictl_age(uint64_t ts_ms, char *buf, size_t len)
{
	uint64_t now = ice_wall_ms();
	double s;

	if (ts_ms == 0) {
		snprintf(buf, len, "never");
		return buf;
	}
	s = now > ts_ms ? (double)(now - ts_ms) / 1e3 : 0;
	if (s < 120)
		snprintf(buf, len, "%.1f s ago", s);
	else if (s < 7200)
		snprintf(buf, len, "%.0f min ago", s / 60);
	else
		snprintf(buf, len, "%.1f h ago", s / 3600);
	return buf;
}

/* SMEMBERS/ZRANGE into a sorted JSON array of strings; NULL: Redis failed. */
json_t *ictl_members(struct ictl *x, const char *cmd, const char *key)
{
	redisReply *r = strcmp(cmd, "ZRANGE") == 0 ? ictl_cmd(x, "ZRANGE %s 0 -1", key)
						   : ictl_cmd(x, "SMEMBERS %s", key);
	json_t *a;
	size_t n;

	if (r == NULL)
		return NULL;
	a = json_array();
	n = r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
	/* sorted for stable output */
	for (size_t i = 0; i < n; i++) {
		size_t at = json_array_size(a);

		for (size_t k = 0; k < json_array_size(a); k++)
			if (strcmp(r->element[i]->str, json_string_value(json_array_get(a, k))) <
			    0) {
				at = k;
				break;
			}
		json_array_insert_new(a, at, json_string(r->element[i]->str));
	}
	freeReplyObject(r);
	return a;
}

json_t *ictl_xrevrange(struct ictl *x, const char *key, unsigned n)
{
	redisReply *r = ictl_cmd(x, "XREVRANGE %s + - COUNT %u", key, n);
	json_t *list;

	if (r == NULL)
		return NULL;
	list = json_array();
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
		redisReply *en = r->element[i], *f;
		json_t *e;

		if (en->type != REDIS_REPLY_ARRAY || en->elements != 2)
			continue;
		f = en->element[1];
		e = json_object();
		json_object_set_new(e, "stream_id", json_string(en->element[0]->str));
		for (size_t k = 0; f->type == REDIS_REPLY_ARRAY && k + 1 < f->elements; k += 2)
			if (f->element[k]->str != NULL && f->element[k + 1]->str != NULL)
				json_object_set_new(e, f->element[k]->str,
						    json_stringn(f->element[k + 1]->str,
								 f->element[k + 1]->len));
		json_array_append_new(list, e);
	}
	freeReplyObject(r);
	return list;
}

json_t *ictl_signed_plan_of(struct ictl *x, const char *host)
{
	char key[ICE_RKEY_MAX];
	redisReply *r = ictl_cmd(x, "GET %s", ictl_key(x, key, ICE_RK_PLAN, host, NULL));
	json_t *env;

	if (r == NULL)
		return NULL;
	env = r->type == REDIS_REPLY_STRING ? json_loads(r->str, 0, NULL) : NULL;
	freeReplyObject(r);
	if (!json_is_object(json_object_get(env, "plan"))) {
		json_decref(env);
		return NULL;
	}
	return env;
}

/* The signed plan's epoch, issue time, lifetime and entries. */
json_t *ictl_plan_of(struct ictl *x, const char *host)
{
	json_t *env = ictl_signed_plan_of(x, host);
	json_t *p = json_incref(json_object_get(env, "plan"));

	json_decref(env);
	return p;
}

/* ---- output */

void ictl_table_init(struct ictl_table *t, const char *title, const char *const *head,
		     uint32_t ncol)
{
	memset(t, 0, sizeof(*t));
	t->title = title;
	t->head = head;
	t->ncol = ncol;
}

void ictl_table_add(struct ictl_table *t, ...)
{
	char ***rows = realloc(t->rows, sizeof(*rows) * (t->nrow + 1)), **row;
	va_list ap;

	if (rows == NULL)
		return;
	t->rows = rows;
	row = calloc(t->ncol, sizeof(*row));
	if (row == NULL)
		return;
	va_start(ap, t);
	for (uint32_t c = 0; c < t->ncol; c++) {
		const char *s = va_arg(ap, const char *);

		row[c] = strdup(s != NULL && s[0] != '\0' ? s : "-");
	}
	va_end(ap);
	t->rows[t->nrow++] = row;
}

void ictl_table_print(struct ictl_table *t)
{
	size_t *w = calloc(t->ncol, sizeof(*w));

	if (w == NULL)
		return;
	if (t->title != NULL)
		printf("%s\n", t->title);
	for (uint32_t c = 0; c < t->ncol; c++) {
		w[c] = strlen(t->head[c]);
		for (uint32_t r = 0; r < t->nrow; r++)
			if (t->rows[r][c] != NULL && strlen(t->rows[r][c]) > w[c])
				w[c] = strlen(t->rows[r][c]);
	}
	for (uint32_t c = 0; c < t->ncol; c++)
		printf("%s%-*s", c ? "  " : "  ", c + 1 < t->ncol ? (int)w[c] : 0, t->head[c]);
	printf("\n");
	for (uint32_t r = 0; r < t->nrow; r++) {
		for (uint32_t c = 0; c < t->ncol; c++) {
			printf("  %-*s", c + 1 < t->ncol ? (int)w[c] : 0,
			       t->rows[r][c] != NULL ? t->rows[r][c] : "-");
			free(t->rows[r][c]);
		}
		printf("\n");
		free(t->rows[r]);
	}
	if (t->nrow == 0)
		printf("  (none)\n");
	free(t->rows);
	t->rows = NULL;
	t->nrow = 0;
	free(w);
}

void ictl_json_print(json_t *doc)
{
	char *s = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);

	if (s != NULL)
		printf("%s\n", s);
	free(s);
}

/* ---- the command line */

static int run_status(void *o)
{
	return ictl_status(o);
}
static int run_links(void *o)
{
	return ictl_links(o);
}
static int run_qps(void *o)
{
	return ictl_qps(o);
}
static int run_plan(void *o)
{
	return ictl_plan(o);
}
static int run_explain(void *o)
{
	return ictl_explain(o);
}
static int run_policy(void *o)
{
	return ictl_policy(o);
}
static int run_serve(void *o)
{
	return ictl_serve(o);
}
static int run_acl(void *o)
{
	return ictl_acl(o);
}
static int run_keygen(void *o)
{
	return ictl_keygen(o);
}

#define F(k, t, m, ...) ICE_CFG_ROW(struct ictl, k, t, m, __VA_ARGS__)
static const struct ice_cfg_field common_fields[] = {
	F("redis", ICE_CFG_STRING, redis, .alias = 'r', .arg = "ADDR",
	  .help = "Redis: HOST:PORT, unix:/PATH or /PATH (default 127.0.0.1:6379)"),
	F("fabric", ICE_CFG_STRING, fabric, .alias = 'f', .arg = "NAME",
	  .help = "the fabric: keys ice:<NAME>:... (default 'default', as ice-controller's)"),
	F("json", ICE_CFG_BOOL, json, .alias = 'j', .flags = ICE_CFG_SWITCH,
	  .help = "one JSON document instead of tables (for scripts)"),
};
static const struct ice_cfg_field links_fields[] = {
	F("watch", ICE_CFG_BOOL, watch, .alias = 'w', .flags = ICE_CFG_SWITCH,
	  .help = "refresh until interrupted"),
	F("interval", ICE_CFG_DURATION, interval_ns, .min = 100e6, .max = 3600e9,
	  .unit = ICE_NSEC_PER_SEC, .arg = "DUR", .help = "--watch's period (default 1s)"),
};
static const struct ice_cfg_field qps_fields[] = {
	F("job", ICE_CFG_STRING, job, .arg = "J",
	  .help = "only QPs of job J (its ICE_JOB label, or its communicator id)"),
	F("host", ICE_CFG_STRING, host, .arg = "H", .help = "only QPs of host H"),
};
static const struct ice_cfg_field plan_args[] = {
	F("action", ICE_CFG_STRING, action, .arg = "show|history", .flags = ICE_CFG_REQUIRED,
	  .help = "show [HOST]: the plans in force; history: the publications"),
	F("host", ICE_CFG_STRING, arg, .arg = "HOST", .help = "one host's plan"),
};
static const struct ice_cfg_field explain_args[] = {
	F("qp", ICE_CFG_STRING, arg, .arg = "QP", .flags = ICE_CFG_REQUIRED,
	  .help = "a QP id, <local address>:<QPN> (icectl qps lists them)"),
};
static const struct ice_cfg_field policy_fields[] = {
	F("wait", ICE_CFG_DURATION, wait_ns, .min = 0, .max = 600e9, .unit = ICE_NSEC_PER_SEC,
	  .arg = "DUR",
	  .help = "apply, rollback: wait this long for the leader to take it (default 5s)"),
	F("topology", ICE_CFG_STRING, topology, .arg = "FILE",
	  .help = "dry-run: the topology (default: the one the leader plans with)"),
};
static const struct ice_cfg_field policy_args[] = {
	F("action", ICE_CFG_STRING, action, .flags = ICE_CFG_REQUIRED,
	  .arg = "validate|diff|dry-run|apply|history|rollback",
	  .help = "validate FILE; diff [FILE|VERSION] [VERSION]; dry-run FILE; apply FILE;\n"
		  "history; rollback [VERSION]"),
	F("arg", ICE_CFG_STRING, arg, .arg = "FILE|VERSION"),
	F("arg2", ICE_CFG_STRING, arg2, .arg = "VERSION"),
};
static const struct ice_cfg_field serve_fields[] = {
	F("listen", ICE_CFG_STRING, listen, .alias = 'l', .arg = "ADDR:PORT",
	  .help = "where the dashboard listens: ADDR:PORT, :PORT (all addresses) or PORT\n"
		  "(default 127.0.0.1:8479)"),
	F("topology", ICE_CFG_STRING, topology, .arg = "FILE",
	  .help = "the fabric's topology (default: the one the leader plans with)"),
	F("refresh", ICE_CFG_DURATION, refresh_ns, .min = 100e6, .max = 3600e9,
	  .unit = ICE_NSEC_PER_SEC, .arg = "DUR", .help = "the page's refresh period (default 1s)"),
};
static const struct ice_cfg_field acl_fields[] = {
	F("topology", ICE_CFG_STRING, topology, .arg = "FILE", .flags = ICE_CFG_REQUIRED,
	  .help = "the fabric's topology: one Redis user per host (its name and NIC addresses)"),
	F("out", ICE_CFG_STRING, out, .alias = 'o', .arg = "DIR", .flags = ICE_CFG_REQUIRED,
	  .help = "write DIR/users.acl and DIR/redis-<role>.auth here (0600)"),
};
static const struct ice_cfg_field keygen_fields[] = {
	F("out", ICE_CFG_STRING, out, .alias = 'o', .arg = "DIR", .flags = ICE_CFG_REQUIRED,
	  .help = "write DIR/NAME.key (private, 0600) and DIR/NAME.pub (public, 0644)"),
	F("name", ICE_CFG_STRING, name, .alias = 'n', .arg = "NAME",
	  .help = "the files' name (default plan)"),
};
#define N(a) (sizeof(a) / sizeof((a)[0]))
static const struct ice_cfg_cmd cmds[] = {
	{"status", "fabric, controllers, agents, plan epochs in force, what is stale", NULL, 0,
	 NULL, 0, run_status},
	{"links", "per directed link: planned, measured, unplanned load, queue, CE, state",
	 links_fields, N(links_fields), NULL, 0, run_links},
	{"qps", "each QP: route, source port, rate, DCQCN profile and why", qps_fields,
	 N(qps_fields), NULL, 0, run_qps},
	{"plan", "show [HOST] | history", NULL, 0, plan_args, N(plan_args), run_plan},
	{"explain", "why a QP has its path, rate and profile", NULL, 0, explain_args,
	 N(explain_args), run_explain},
	{"policy",
	 "validate FILE | diff | dry-run FILE | apply FILE | history | rollback [VERSION]",
	 policy_fields, N(policy_fields), policy_args, N(policy_args), run_policy},
	{"serve", "the live dashboard: a web page and JSON endpoints (/api/...)", serve_fields,
	 N(serve_fields), NULL, 0, run_serve},
	{"acl", "Redis users for the fabric: an ACL file and a password file per role", acl_fields,
	 N(acl_fields), NULL, 0, run_acl},
	{"keygen", "an Ed25519 key pair for signing plans: NAME.key, NAME.pub and its key id",
	 keygen_fields, N(keygen_fields), NULL, 0, run_keygen},
};

/* The common flags may come before the command (icectl --redis A status):
 * move the command word to the front, where ice_cfg_main looks for it. */
static void command_first(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0)
			return;
		if (a[0] != '-') {
			char *cmd = argv[i];

			memmove(&argv[2], &argv[1], sizeof(char *) * (size_t)(i - 1));
			argv[1] = cmd;
			return;
		}
		if (strchr(a, '=') == NULL &&
		    (strcmp(a, "--redis") == 0 || strcmp(a, "-r") == 0 ||
		     strcmp(a, "--fabric") == 0 || strcmp(a, "-f") == 0 ||
		     strcmp(a, "--log") == 0 || strcmp(a, "--config") == 0))
			i++; /* its value */
	}
}

int main(int argc, char **argv)
{
	struct ictl x = {
		.redis = "127.0.0.1:6379",
		.fabric = "default",
		.interval_ns = ICE_NSEC_PER_SEC,
		.wait_ns = 5 * ICE_NSEC_PER_SEC,
		.listen = "127.0.0.1:8479",
		.refresh_ns = ICE_NSEC_PER_SEC,
		.name = "plan",
	};
	struct ice_cfg_cli cli = {
		.tool = "icectl",
		.synopsis = "usage: icectl COMMAND [--redis ADDR] [--fabric NAME] [--json] ...",
		.fields = common_fields,
		.nfields = N(common_fields),
		.obj = &x,
		.cmds = cmds,
		.ncmds = N(cmds),
		.epilog = "Exit: 0 done, 1 what was asked for is wrong, 2 a bad command line or a\n"
			  "Redis that is unreachable or holds no keys of the fabric.\n",
	};
	int ret;

	ice_log_set_level(ICE_LOG_WARN);
	ice_log_init_env();
	command_first(argc, argv);
	ret = ice_cfg_main(&cli, argc, argv);
	if (x.c != NULL)
		redisFree(x.c);
	return ret;
}
