// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_daemon: ice-controller's loop (ctl_daemon.h). One blocking hiredis
 * connection; every command has the configured reply timeout.
 *
 * Each interval: renew (or try to take) the leader lease, read link state
 * and new events, every qp_interval the QPs (at once after a QP event);
 * plan when the view changed (new/idle QPs: incremental; a link, a
 * collective, a takeover or the periodic re-optimisation: global with
 * hysteresis); publish when the plans differ from the last ones or a third
 * of their lifetime has passed; read back which epoch each host applied and
 * print the reaction time.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "ctl_daemon.h"
#include "ctl_pmap.h"
#include "ice_log.h"
#include "ice_time.h"

#define SUB ICE_SUB_COMMON

#define LINK_DOWN_BPS	     1000 /* capacity the planner sees for a down link */
#define APPLY_WAIT_MS	     3000 /* give up waiting for every host's write-back */
#define QP_STALE_MIN_MS	     3000
#define PEAK_DECAY	     0.95 /* per QP view refresh: half-life ~14 refreshes */
#define ARGV_MAX	     4096
#define CTLD_DUMMY_KEY_BYTES 32

enum trig {
	TRIG_NONE = 0,
	TRIG_QP = 1,	   /* QPs appeared, went idle or away: incremental */
	TRIG_LINK = 2,	   /* link state changed */
	TRIG_COLL = 4,	   /* a collective was announced (or ended) */
	TRIG_REOPT = 8,	   /* periodic */
	TRIG_TAKEOVER = 16 /* became leader */
};

struct cqp {
	uint32_t host; /* topo node */
	uint32_t src, dst;
	uint32_t lip, qpn, rqpn;
	uint16_t sport_now;
	double rate_bps;
	double peak_bps; /* decaying maximum of rate_bps: the flow's demand */
	bool active;
	/* planned state, carried across view refreshes */
	bool planned;
	uint16_t sport;
	struct ctl_route route;
	/* per plan */
	double ann_bps;
	uint32_t ann_flags;
	enum ctl_coll_op op;
	uint64_t coll_id, msg_bytes;
};

struct ccoll {
	char comm[24];
	enum ctl_coll_op op;
	uint64_t bytes;
	uint32_t nranks;
	uint32_t *nic; /* per rank: topo port, UINT32_MAX unknown */
	int32_t *next;
	uint32_t seen;
	uint64_t last_ms, trigger_ms;
	bool active;
};

struct chost {
	char name[64];
	uint32_t node;
	char last_id[48]; /* event stream position */
};

struct pending {
	bool on;
	uint64_t epoch, trigger_ms, seen_ms, planned_ms, pub_ms;
	char what[96];
	char (*hosts)[64];
	uint32_t nhosts;
};

struct ctld {
	struct ctld_cfg cfg;
	volatile sig_atomic_t stop;
	struct topo *topo;
	uint64_t *rate0;
	bool *down;
	char (*lname)[64];
	struct ctl_planner *pl;
	struct ctl_policy *pol;
	struct ice_plan_key key;
	redisContext *rc;
	uint64_t next_connect_ns;

	char k_leader[128], k_epoch[128], k_pub[128], k_log[128], k_links[128], k_status[128],
		k_hosts[128];

	struct chost *hosts;
	uint32_t nhosts;
	struct cqp *qps;
	size_t nqps;
	struct ccoll *colls;
	size_t ncolls;

	bool leader, started;
	unsigned trig;
	uint64_t trig_ms, trig_seen_ms;
	char trig_what[96];
	uint64_t next_qp_ns, next_reopt_ns;
	bool qps_due; /* a QP event came: read the QPs now, not at next_qp_ns */

	struct ice_host_plan *last;
	uint32_t nlast;
	uint64_t last_pub_ns, last_epoch;
	uint64_t plans;
	struct pending pend;

	/* source ports from ice-probe's maps (sports: probe, or auto on kernel ECMP) */
	bool probe;
	struct ctl_pmap *pmaps;
	uint32_t npmaps;
	uint64_t next_pmap_ns;
	uint32_t unsteered; /* flows of the last plan that could not be steered */
};

/* ---- pure helpers (unit-tested) */

static bool entry_same(const struct ice_plan_entry *a, const struct ice_plan_entry *b)
{
	return a->qpn == b->qpn && a->sport == b->sport && a->start_mbps == b->start_mbps &&
	       a->target_mbps == b->target_mbps &&
	       memcmp(&a->dcqcn, &b->dcqcn, sizeof(a->dcqcn)) == 0;
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

/* ---- Redis */

static struct timeval tv_of(uint64_t ns)
{
	return (struct timeval){(time_t)(ns / ICE_NSEC_PER_SEC),
				(suseconds_t)(ns % ICE_NSEC_PER_SEC / 1000)};
}

static void rc_drop(struct ctld *d, const char *why)
{
	if (d->rc != NULL) {
		ice_warn(SUB, "redis at %s: %s; reconnecting", d->cfg.redis, why);
		redisFree(d->rc);
	}
	d->rc = NULL;
	d->next_connect_ns = ice_now_ns() + 500 * ICE_NSEC_PER_MSEC;
	if (d->leader)
		ice_warn(SUB, "%s: no longer leader (redis lost)", d->cfg.id);
	d->leader = false;
}

static bool rc_up(struct ctld *d)
{
	struct timeval tv = tv_of(d->cfg.redis_timeout);
	char host[256];
	const char *colon;
	redisContext *c;

	if (d->rc != NULL)
		return true;
	if (ice_now_ns() < d->next_connect_ns)
		return false;
	if (strncmp(d->cfg.redis, "unix:", 5) == 0) {
		c = redisConnectUnixWithTimeout(d->cfg.redis + 5, tv);
	} else {
		colon = strrchr(d->cfg.redis, ':');
		snprintf(host, sizeof(host), "%.*s", (int)(colon - d->cfg.redis), d->cfg.redis);
		c = redisConnectWithTimeout(host, atoi(colon + 1), tv);
	}
	if (c == NULL || c->err) {
		if (d->next_connect_ns == 0)
			ice_warn(SUB, "redis at %s: %s; retrying", d->cfg.redis,
				 c ? c->errstr : "out of memory");
		if (c != NULL)
			redisFree(c);
		d->next_connect_ns = ice_now_ns() + 500 * ICE_NSEC_PER_MSEC;
		return false;
	}
	redisSetTimeout(c, tv);
	d->rc = c;
	ice_info(SUB, "redis at %s: connected", d->cfg.redis);
	return true;
}

/* One command; NULL when the connection broke (dropped). */
static redisReply *rcmdv(struct ctld *d, int argc, const char **argv)
{
	redisReply *r;

	if (d->rc == NULL)
		return NULL;
	r = redisCommandArgv(d->rc, argc, argv, NULL);
	if (r == NULL)
		rc_drop(d, d->rc->errstr[0] ? d->rc->errstr : "no reply");
	return r;
}

static redisReply *rcmd(struct ctld *d, const char *fmt, ...)
{
	redisReply *r;
	va_list ap;

	if (d->rc == NULL)
		return NULL;
	va_start(ap, fmt);
	r = redisvCommand(d->rc, fmt, ap);
	va_end(ap);
	if (r == NULL)
		rc_drop(d, d->rc->errstr[0] ? d->rc->errstr : "no reply");
	return r;
}

/* Replies of n appended commands into out[] (NULL entries on failure). */
static int rpipe(struct ctld *d, size_t n, redisReply **out)
{
	for (size_t i = 0; i < n; i++)
		out[i] = NULL;
	for (size_t i = 0; i < n; i++) {
		if (redisGetReply(d->rc, (void **)&out[i]) != REDIS_OK || out[i] == NULL) {
			for (size_t j = 0; j < i; j++)
				freeReplyObject(out[j]);
			rc_drop(d, d->rc->errstr[0] ? d->rc->errstr : "pipeline broke");
			return -EIO;
		}
	}
	return 0;
}

static void freev(redisReply **r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (r[i] != NULL)
			freeReplyObject(r[i]);
}

/* ---- lease */

static const char LUA_RENEW[] = "if redis.call('GET', KEYS[1]) == ARGV[1] then "
				"return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end";
static const char LUA_RELEASE[] =
	"if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) "
	"else return 0 end";
/* The next epoch, above ARGV[2] (the highest this controller and the agents
 * know: a restarted Redis has forgotten the counter, the agents have not). */
static const char LUA_EPOCH[] =
	"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end "
	"local e = redis.call('INCR', KEYS[2]) "
	"local floor = tonumber(ARGV[2]) "
	"if e <= floor then e = floor + 1 redis.call('SET', KEYS[2], e) end "
	"return e";
static const char LUA_PUBLISH[] =
	"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end "
	"local last = tonumber(redis.call('HGET', KEYS[2], 'epoch') or '0') "
	"if tonumber(ARGV[2]) <= last then return -2 end "
	"redis.call('HSET', KEYS[2], 'epoch', ARGV[2], 'id', ARGV[1], 'ts_ms', ARGV[3], "
	"'hosts', ARGV[4]) "
	"redis.call('XADD', KEYS[3], 'MAXLEN', '~', '1000', '*', 'epoch', ARGV[2], 'id', "
	"ARGV[1], 'ts_ms', ARGV[3], 'hosts', ARGV[4]) "
	"for i = 4, #KEYS do redis.call('SET', KEYS[i], ARGV[i + 1]) "
	"redis.call('PUBLISH', KEYS[i], ARGV[2]) end "
	"return #KEYS - 3";

static void lease_tick(struct ctld *d)
{
	char ttl[24];
	redisReply *r;

	snprintf(ttl, sizeof(ttl), "%" PRIu64, (uint64_t)(d->cfg.lease_ttl / ICE_NSEC_PER_MSEC));
	if (d->leader) {
		r = rcmd(d, "EVAL %s 1 %s %s %s", LUA_RENEW, d->k_leader, d->cfg.id, ttl);
		if (r == NULL)
			return;
		if (r->type != REDIS_REPLY_INTEGER || r->integer != 1) {
			ice_warn(SUB, "%s: lost the leader lease; standing by", d->cfg.id);
			d->leader = false;
		}
		freeReplyObject(r);
		return;
	}
	r = rcmd(d, "SET %s %s NX PX %s", d->k_leader, d->cfg.id, ttl);
	if (r == NULL)
		return;
	if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0) {
		d->leader = true;
		d->trig |= TRIG_TAKEOVER;
		d->last_pub_ns = 0;
		ice_info(SUB, "%s: leader now (lease %s ms at %s)", d->cfg.id, ttl, d->k_leader);
		printf("leader %s at %" PRIu64 " ms\n", d->cfg.id, ice_wall_ms());
		fflush(stdout);
	} else if (!d->started) {
		redisReply *o = rcmd(d, "GET %s", d->k_leader);

		if (o != NULL && o->type == REDIS_REPLY_STRING)
			ice_info(SUB, "%s: standby (leader is %s)", d->cfg.id, o->str);
		if (o != NULL)
			freeReplyObject(o);
	}
	if (r != NULL)
		freeReplyObject(r);
}

/* ---- view: hosts */

static struct chost *host_get(struct ctld *d, const char *name)
{
	const struct topo_node *n;
	struct chost *h;

	for (uint32_t i = 0; i < d->nhosts; i++)
		if (strcmp(d->hosts[i].name, name) == 0)
			return &d->hosts[i];
	n = topo_node_by_name(d->topo, name);
	if (n == NULL || n->kind != TOPO_HOST)
		return NULL;
	h = realloc(d->hosts, sizeof(*h) * (d->nhosts + 1));
	if (h == NULL)
		return NULL;
	d->hosts = h;
	h = &d->hosts[d->nhosts++];
	memset(h, 0, sizeof(*h));
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->node = n->id;
	/* announced collectives still active when we start */
	snprintf(h->last_id, sizeof(h->last_id), "%" PRIu64 "-0",
		 (uint64_t)(ice_wall_ms() - d->cfg.announce_ttl / ICE_NSEC_PER_MSEC));
	return h;
}

static void read_hosts(struct ctld *d)
{
	redisReply *r = rcmd(d, "SMEMBERS %s", d->k_hosts);

	if (r == NULL)
		return;
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
		if (r->element[i]->type == REDIS_REPLY_STRING)
			host_get(d, r->element[i]->str);
	freeReplyObject(r);
}

/* ---- view: links */

static int rebuild_planner(struct ctld *d)
{
	struct ctl_planner *p;

	for (uint32_t i = 0; i < d->topo->nlinks; i++)
		d->topo->links[i].rate_bps = d->down[i] ? LINK_DOWN_BPS : d->rate0[i];
	p = ctl_planner_new(d->topo);
	if (p == NULL)
		return -errno;
	ctl_planner_free(d->pl);
	d->pl = p;
	return 0;
}

static void read_links(struct ctld *d)
{
	redisReply *r = rcmd(d, "HGETALL %s", d->k_links);
	bool changed = false;
	uint64_t ts_max = 0;
	char what[96] = "";

	if (r == NULL)
		return;
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
		const char *name = r->element[i]->str, *val = r->element[i + 1]->str;
		json_t *o = val ? json_loads(val, 0, NULL) : NULL;
		const char *st = o ? json_string_value(json_object_get(o, "state")) : NULL;
		uint64_t ts = o ? (uint64_t)json_integer_value(json_object_get(o, "ts_ms")) : 0;

		for (uint32_t l = 0; st != NULL && name != NULL && l < d->topo->nlinks; l++) {
			bool down = strcmp(st, "down") == 0;

			if (strcmp(d->lname[l], name) != 0 || d->down[l] == down)
				continue;
			d->down[l] = down;
			changed = true;
			if (ts > ts_max) {
				ts_max = ts;
				snprintf(what, sizeof(what), "link %s %s", name, st);
			}
			ice_info(SUB, "link %s is %s", name, st);
		}
		json_decref(o);
	}
	freeReplyObject(r);
	if (!changed)
		return;
	if (rebuild_planner(d) < 0) {
		ice_err(SUB, "cannot re-index the topology after a link change: %s",
			strerror(errno));
		return;
	}
	d->trig |= TRIG_LINK;
	if (ts_max > d->trig_ms) {
		d->trig_ms = ts_max;
		d->trig_seen_ms = ice_wall_ms();
		snprintf(d->trig_what, sizeof(d->trig_what), "%s", what);
	}
}

/* ---- view: ice-probe's port -> path maps */

#define PMAP_REFRESH_NS (1000 * ICE_NSEC_PER_MSEC)

static void pmaps_free(struct ctl_pmap *m, uint32_t n)
{
	for (uint32_t i = 0; m != NULL && i < n; i++)
		ctl_pmap_fini(&m[i]);
	free(m);
}

/* Known map of pair "src>dst" learned at ts_ms (the pairs set's score), or -1. */
static int pmap_known(const struct ctld *d, const char *pair, uint64_t ts_ms)
{
	char buf[64], *gt;
	struct in_addr s, t;

	if (snprintf(buf, sizeof(buf), "%s", pair) >= (int)sizeof(buf) ||
	    (gt = strchr(buf, '>')) == NULL)
		return -1;
	*gt = '\0';
	if (inet_pton(AF_INET, buf, &s) != 1 || inet_pton(AF_INET, gt + 1, &t) != 1)
		return -1;
	for (uint32_t i = 0; i < d->npmaps; i++)
		if (d->pmaps[i].paths != NULL && d->pmaps[i].src.s_addr == s.s_addr &&
		    d->pmaps[i].dst.s_addr == t.s_addr && d->pmaps[i].ts_ms == ts_ms)
			return (int)i;
	return -1;
}

/* Every map of every probing host; maps whose learning time did not change
 * are kept, only new ones are fetched. On a Redis failure the old ones stay. */
static void read_pmaps(struct ctld *d)
{
	redisReply *hs = rcmd(d, "SMEMBERS ice:%s:probe:hosts", d->cfg.fabric);
	redisReply **pr = NULL, **mr = NULL;
	struct ctl_pmap *nm = NULL;
	int *keep = NULL;
	size_t nh, npairs = 0, nget = 0;
	uint32_t nn = 0, bad = 0;

	if (hs == NULL || hs->type != REDIS_REPLY_ARRAY)
		goto out;
	nh = hs->elements;
	pr = calloc(nh + 1, sizeof(*pr));
	if (pr == NULL)
		goto out;
	for (size_t i = 0; i < nh; i++)
		redisAppendCommand(d->rc, "ZRANGE ice:%s:{%s}:probe:pairs 0 -1 WITHSCORES",
				   d->cfg.fabric, hs->element[i]->str);
	if (rpipe(d, nh, pr) < 0) {
		free(pr);
		pr = NULL;
		goto out;
	}
	for (size_t i = 0; i < nh; i++)
		if (pr[i]->type == REDIS_REPLY_ARRAY)
			npairs += pr[i]->elements / 2;
	keep = calloc(npairs + 1, sizeof(*keep));
	nm = calloc(npairs + 1, sizeof(*nm));
	if (keep == NULL || nm == NULL)
		goto out;
	npairs = 0;
	for (size_t i = 0; i < nh; i++)
		for (size_t j = 0; pr[i]->type == REDIS_REPLY_ARRAY && j + 1 < pr[i]->elements;
		     j += 2, npairs++) {
			const char *pair = pr[i]->element[j]->str;
			const char *sc = pr[i]->element[j + 1]->str;

			keep[npairs] = pmap_known(d, pair, sc ? strtoull(sc, NULL, 10) : 0);
			if (keep[npairs] >= 0)
				continue;
			redisAppendCommand(d->rc, "HGET ice:%s:{%s}:probe:map:%s json",
					   d->cfg.fabric, hs->element[i]->str, pair);
			nget++;
		}
	mr = calloc(nget + 1, sizeof(*mr));
	if (mr == NULL || rpipe(d, nget, mr) < 0) {
		free(mr);
		mr = NULL;
		goto out;
	}
	for (size_t k = 0, g = 0; k < npairs; k++) {
		if (keep[k] >= 0) { /* unchanged: move it over */
			nm[nn++] = d->pmaps[keep[k]];
			memset(&d->pmaps[keep[k]], 0, sizeof(d->pmaps[0]));
			continue;
		}
		if (mr[g]->type == REDIS_REPLY_STRING) { /* else expired between the reads */
			if (ctl_pmap_parse(mr[g]->str, &nm[nn]) == 0)
				nn++;
			else
				bad++;
		}
		g++;
	}
	if (bad > 0)
		ice_warn(SUB, "%u probe map(s) unreadable, ignored", bad);
	if (nn != d->npmaps)
		ice_info(SUB, "probe maps: %u pair(s) from %zu prober(s)", nn, nh);
	pmaps_free(d->pmaps, d->npmaps);
	d->pmaps = nm;
	d->npmaps = nn;
	nm = NULL;
out:
	if (pr != NULL)
		freev(pr, hs->elements);
	free(pr);
	if (mr != NULL)
		freev(mr, nget);
	free(mr);
	free(keep);
	pmaps_free(nm, nn);
	if (hs != NULL)
		freeReplyObject(hs);
}

/* The newest map of the flow's NIC pair; NULL when none. */
static const struct ctl_pmap *pmap_for(const struct ctld *d, const struct ctl_flow *f)
{
	struct in_addr s = d->topo->ports[f->src_port].addr, t = d->topo->ports[f->dst_port].addr;
	const struct ctl_pmap *best = NULL;

	for (uint32_t i = 0; i < d->npmaps; i++) {
		const struct ctl_pmap *m = &d->pmaps[i];

		if (m->src.s_addr == s.s_addr && m->dst.s_addr == t.s_addr &&
		    (best == NULL || m->ts_ms > best->ts_ms))
			best = m;
	}
	return best;
}

/* The route source port sport takes: the probe's map in probe mode (-ENOENT
 * when the map never saw the port or there is no map), else the hash model. */
static int route_of_sport(struct ctld *d, const struct ctl_flow *f, uint16_t sport,
			  struct ctl_route *r)
{
	const struct ctl_pmap *m;
	int k;

	if (!d->probe)
		return ctl_route_of_sport(d->pl, f, sport, r);
	m = pmap_for(d, f);
	k = m != NULL ? ctl_pmap_path_of(m, sport) : -1;
	if (k < 0)
		return -ENOENT;
	return ctl_route_by_name(d->pl, f, m->paths[k].name, r);
}

/* Probe mode, after ctl_plan_sports: each flow gets a port the probe saw
 * take its planned path (its own port when it is one of them, else the
 * path's ports in turn). A flow with no map, or planned on a path the probe
 * never saw, keeps its port and route: counted as unsteered. */
static void probe_sports(struct ctld *d, struct ctl_demand *dem)
{
	uint32_t *turn = calloc((size_t)d->npmaps * 64 + 1, sizeof(*turn));
	char name[128];

	d->unsteered = 0;
	for (size_t i = 0; i < dem->n; i++) {
		struct ctl_flow *f = &dem->flows[i];
		const struct ctl_pmap *m = pmap_for(d, f);
		const struct ctl_pmap_path *p;
		int k = -1;

		if (m != NULL && ctl_route_name(d->pl, &f->path, name, sizeof(name)) == 0)
			k = ctl_pmap_find(m, name);
		if (k < 0) {
			struct ctl_route r = {.idx = -1};

			d->unsteered++;
			if (f->cur_sport == 0)
				continue; /* a new flow: the model's port is as good as any */
			f->sport = f->cur_sport;
			if (route_of_sport(d, f, f->cur_sport, &r) == 0)
				f->path = r;
			continue;
		}
		p = &m->paths[k];
		f->sport = 0;
		for (uint32_t j = 0; j < p->nports && f->sport == 0; j++)
			if (p->ports[j] == f->cur_sport)
				f->sport = f->cur_sport;
		if (f->sport == 0) {
			uint32_t *t = turn != NULL && k < 64
					      ? &turn[(size_t)(m - d->pmaps) * 64 + k]
					      : NULL;

			f->sport = p->ports[(t != NULL ? (*t)++ : (uint32_t)i) % p->nports];
		}
	}
	free(turn);
}

/* Probe mode: where plain ECMP puts each flow (its default port) by the
 * maps, where they know the port. */
static void probe_ecmp(struct ctld *d, struct ctl_demand *dem)
{
	for (size_t i = 0; i < dem->n; i++) {
		struct ctl_flow *f = &dem->flows[i];
		struct ctl_route r = {.idx = -1};

		if (route_of_sport(d, f, ctl_sport_default(f->lqpn, f->rqpn), &r) == 0)
			f->ecmp = r;
	}
}

/* ---- view: announced collectives */

static int op_of(const char *s)
{
	static const struct {
		const char *name;
		enum ctl_coll_op op;
	} m[] = {
		{"allreduce", CTL_COLL_ALL_REDUCE}, {"reducescatter", CTL_COLL_REDUCE_SCATTER},
		{"allgather", CTL_COLL_ALL_GATHER}, {"alltoall", CTL_COLL_ALL_TO_ALL},
		{"broadcast", CTL_COLL_BROADCAST},  {"reduce", CTL_COLL_BROADCAST},
		{"send", CTL_COLL_SEND_RECV},	    {"sendrecv", CTL_COLL_SEND_RECV},
	};

	for (size_t i = 0; s != NULL && i < sizeof(m) / sizeof(m[0]); i++)
		if (strcmp(s, m[i].name) == 0)
			return (int)m[i].op;
	return -1;
}

static int bucket(uint64_t b)
{
	return b == 0 ? 0 : 64 - __builtin_clzll(b);
}

static void coll_free(struct ccoll *c)
{
	free(c->nic);
	free(c->next);
	memset(c, 0, sizeof(*c));
}

static void coll_event(struct ctld *d, const struct chost *h, const char *nic, json_t *o)
{
	const char *kind = json_string_value(json_object_get(o, "kind"));
	const char *comm = json_string_value(json_object_get(o, "comm"));
	int op = op_of(json_string_value(json_object_get(o, "op")));
	json_int_t rank = json_integer_value(json_object_get(o, "rank"));
	json_int_t nranks = json_integer_value(json_object_get(o, "nranks"));
	json_int_t next = json_integer_value(json_object_get(o, "next"));
	json_int_t peer = json_integer_value(json_object_get(o, "peer"));
	uint64_t bytes = (uint64_t)json_integer_value(json_object_get(o, "bytes"));
	uint64_t ts_ms = (uint64_t)json_integer_value(json_object_get(o, "ts_ns")) / 1000000;
	const struct topo_node *n = &d->topo->nodes[h->node];
	uint32_t port = UINT32_MAX;
	struct ccoll *c = NULL;

	if (kind != NULL && strcmp(kind, "qp") == 0) {
		d->qps_due = true; /* a new QP: its source port before its traffic */
		return;
	}
	if (kind == NULL || strcmp(kind, "coll_start") != 0 || comm == NULL || op < 0 ||
	    nranks < 2 || nranks > 65536 || rank < 0 || rank >= nranks)
		return;
	if (op == CTL_COLL_SEND_RECV && peer >= 0)
		next = peer;
	for (uint32_t i = 0; i < n->nports; i++)
		if (port == UINT32_MAX ||
		    (nic && strcmp(d->topo->ports[n->ports[i]].ifname, nic) == 0))
			port = n->ports[i];
	for (size_t i = 0; i < d->ncolls && c == NULL; i++)
		if (strcmp(d->colls[i].comm, comm) == 0)
			c = &d->colls[i];
	if (c == NULL) {
		c = realloc(d->colls, sizeof(*c) * (d->ncolls + 1));
		if (c == NULL)
			return;
		d->colls = c;
		c = &d->colls[d->ncolls++];
		memset(c, 0, sizeof(*c));
		snprintf(c->comm, sizeof(c->comm), "%s", comm);
	}
	if (c->nic != NULL && c->op == (enum ctl_coll_op)op && c->nranks == (uint32_t)nranks &&
	    bucket(c->bytes) != bucket(bytes)) {
		/* the same pattern at another size: its flows and their shares
		 * stay in force (dropping them until every rank had called the
		 * new size left the QPs at line rate meanwhile); the policy's
		 * size rules may pick another profile: plan again */
		c->bytes = bytes;
		if (c->active)
			d->trig |= TRIG_COLL;
	} else if (c->nic == NULL || c->op != (enum ctl_coll_op)op ||
		   c->nranks != (uint32_t)nranks) {
		bool was = c->active;

		free(c->nic);
		free(c->next);
		c->nic = malloc(sizeof(uint32_t) * (size_t)nranks);
		c->next = malloc(sizeof(int32_t) * (size_t)nranks);
		if (c->nic == NULL || c->next == NULL) {
			free(c->nic);
			free(c->next);
			c->nic = NULL;
			c->next = NULL;
			return;
		}
		for (json_int_t i = 0; i < nranks; i++) {
			c->nic[i] = UINT32_MAX;
			c->next[i] = -1;
		}
		c->op = (enum ctl_coll_op)op;
		c->nranks = (uint32_t)nranks;
		c->bytes = bytes;
		c->seen = 0;
		c->active = false;
		c->trigger_ms = 0;
		if (was)
			d->trig |= TRIG_COLL; /* what it was is gone */
	}
	if (c->nic[rank] == UINT32_MAX)
		c->seen++;
	c->nic[rank] = port;
	c->next[rank] = next >= 0 && next < nranks ? (int32_t)next : -1;
	c->last_ms = ice_wall_ms();
	if (ts_ms > c->trigger_ms)
		c->trigger_ms = ts_ms;
	if (!c->active && c->seen == c->nranks) {
		c->active = true;
		d->trig |= TRIG_COLL;
		if (c->trigger_ms >= d->trig_ms) {
			d->trig_ms = c->trigger_ms;
			d->trig_seen_ms = ice_wall_ms();
			snprintf(d->trig_what, sizeof(d->trig_what), "%s of %u ranks, comm %s",
				 json_string_value(json_object_get(o, "op")), c->nranks, c->comm);
		}
		ice_info(SUB, "collective announced: %s, %" PRIu64 " bytes, %u ranks, comm %s",
			 json_string_value(json_object_get(o, "op")), bytes, c->nranks, c->comm);
	}
}

static void read_events(struct ctld *d)
{
	const char *argv[ARGV_MAX];
	char keys[256][160];
	uint32_t n = 0;
	int argc = 0;
	redisReply *r;

	if (d->nhosts == 0)
		return;
	argv[argc++] = "XREAD";
	argv[argc++] = "COUNT";
	argv[argc++] = "1000";
	argv[argc++] = "STREAMS";
	for (uint32_t i = 0; i < d->nhosts && n < 256; i++, n++) {
		snprintf(keys[n], sizeof(keys[n]), "ice:%s:{%s}:events", d->cfg.fabric,
			 d->hosts[i].name);
		argv[argc++] = keys[n];
	}
	for (uint32_t i = 0; i < n; i++)
		argv[argc++] = d->hosts[i].last_id;
	r = rcmdv(d, argc, argv);
	if (r == NULL)
		return;
	for (size_t s = 0; r->type == REDIS_REPLY_ARRAY && s < r->elements; s++) {
		redisReply *st = r->element[s], *ents;
		struct chost *h = NULL;

		if (st->type != REDIS_REPLY_ARRAY || st->elements != 2)
			continue;
		for (uint32_t i = 0; i < n && h == NULL; i++)
			if (strcmp(keys[i], st->element[0]->str) == 0)
				h = &d->hosts[i];
		ents = st->element[1];
		for (size_t e = 0;
		     h != NULL && ents->type == REDIS_REPLY_ARRAY && e < ents->elements; e++) {
			redisReply *en = ents->element[e], *f;
			const char *nic = NULL, *js = NULL;

			if (en->type != REDIS_REPLY_ARRAY || en->elements != 2)
				continue;
			snprintf(h->last_id, sizeof(h->last_id), "%s", en->element[0]->str);
			f = en->element[1];
			for (size_t k = 0; f->type == REDIS_REPLY_ARRAY && k + 1 < f->elements;
			     k += 2) {
				if (strcmp(f->element[k]->str, "nic") == 0)
					nic = f->element[k + 1]->str;
				else if (strcmp(f->element[k]->str, "json") == 0)
					js = f->element[k + 1]->str;
			}
			if (js != NULL) {
				json_t *o = json_loads(js, 0, NULL);

				if (o != NULL)
					coll_event(d, h, nic, o);
				json_decref(o);
			}
		}
	}
	freeReplyObject(r);
}

static void expire_colls(struct ctld *d)
{
	uint64_t now = ice_wall_ms(), ttl = d->cfg.announce_ttl / ICE_NSEC_PER_MSEC;

	for (size_t i = 0; i < d->ncolls;) {
		if (d->colls[i].last_ms + ttl < now) {
			if (d->colls[i].active) {
				d->trig |= TRIG_COLL;
				ice_info(SUB,
					 "collective of comm %s ended (silent for %" PRIu64 " ms)",
					 d->colls[i].comm, ttl);
			}
			coll_free(&d->colls[i]);
			d->colls[i] = d->colls[--d->ncolls];
			continue;
		}
		i++;
	}
}

/* ---- view: QPs */

static double rate_of(const char *js)
{
	json_t *o = js ? json_loads(js, 0, NULL) : NULL;
	double v = o ? json_number_value(json_object_get(o, "tx_bytes")) * 8 : 0;

	json_decref(o);
	return v;
}

static void read_qps(struct ctld *d)
{
	uint64_t stale = 3 * d->cfg.qp_interval / ICE_NSEC_PER_MSEC;
	char key[256], min[32];
	redisReply **rep = NULL, **hr = NULL;
	struct cqp *nq = NULL;
	size_t nn = 0, cap = 0, nhm = 0;
	bool changed = false;

	read_hosts(d);
	if (d->rc == NULL || d->nhosts == 0)
		return;
	if (stale < QP_STALE_MIN_MS)
		stale = QP_STALE_MIN_MS;
	snprintf(min, sizeof(min), "%" PRIu64, ice_wall_ms() - stale);
	rep = calloc(d->nhosts, sizeof(*rep));
	if (rep == NULL)
		return;
	for (uint32_t i = 0; i < d->nhosts; i++) {
		snprintf(key, sizeof(key), "ice:%s:{%s}:qps", d->cfg.fabric, d->hosts[i].name);
		redisAppendCommand(d->rc, "ZRANGEBYSCORE %s %s +inf", key, min);
	}
	if (rpipe(d, d->nhosts, rep) < 0)
		goto out;
	for (uint32_t i = 0; i < d->nhosts; i++)
		for (size_t j = 0; rep[i]->type == REDIS_REPLY_ARRAY && j < rep[i]->elements; j++) {
			if (strchr(rep[i]->element[j]->str, '>') != NULL)
				continue; /* an unjoined BPF flow: no QP to steer */
			snprintf(key, sizeof(key), "ice:%s:{%s}:qp:%s", d->cfg.fabric,
				 d->hosts[i].name, rep[i]->element[j]->str);
			redisAppendCommand(
				d->rc, "HMGET %s local remote qpn rqpn sport rate ts_ms closed_ms",
				key);
			nhm++;
		}
	hr = calloc(nhm + 1, sizeof(*hr));
	nq = calloc(nhm + 1, sizeof(*nq));
	if (hr == NULL || nq == NULL || rpipe(d, nhm, hr) < 0)
		goto out;
	for (size_t k = 0; k < nhm; k++) {
		redisReply *r = hr[k];
		struct in_addr la, ra;
		const struct topo_port *sp, *dp;
		struct cqp *q;

		if (r->type != REDIS_REPLY_ARRAY || r->elements != 8 ||
		    r->element[0]->str == NULL || r->element[1]->str == NULL ||
		    r->element[2]->str == NULL)
			continue;
		/* the agent saw it go (destroyed, or its process died) after its
		 * last sample: no demand any more (a QPN reused later publishes a
		 * newer ts_ms) */
		if (r->element[7]->str != NULL &&
		    strtoull(r->element[7]->str, NULL, 10) >
			    (r->element[6]->str ? strtoull(r->element[6]->str, NULL, 10) : 0))
			continue;
		if (inet_pton(AF_INET, r->element[0]->str, &la) != 1 ||
		    inet_pton(AF_INET, r->element[1]->str, &ra) != 1)
			continue;
		sp = topo_port_by_addr(d->topo, la);
		dp = topo_port_by_addr(d->topo, ra);
		if (sp == NULL || dp == NULL || sp == dp)
			continue;
		q = &nq[nn++];
		q->host = sp->node;
		q->src = sp->id;
		q->dst = dp->id;
		q->lip = la.s_addr;
		q->qpn = (uint32_t)strtoul(r->element[2]->str, NULL, 10);
		q->rqpn = r->element[3]->str ? (uint32_t)strtoul(r->element[3]->str, NULL, 10) : 0;
		q->sport_now =
			r->element[4]->str ? (uint16_t)strtoul(r->element[4]->str, NULL, 10) : 0;
		q->rate_bps = rate_of(r->element[5]->str);
		q->active = q->rate_bps >= (double)d->cfg.min_rate;
		q->route.idx = -1;
	}
	/* carry the planned state; did the set of active QPs change? */
	for (size_t i = 0; i < nn; i++) {
		struct cqp *q = &nq[i];
		const struct cqp *o = NULL;

		for (size_t j = 0; j < d->nqps && o == NULL; j++)
			if (d->qps[j].lip == q->lip && d->qps[j].qpn == q->qpn &&
			    d->qps[j].dst == q->dst)
				o = &d->qps[j];
		/* A flow's demand is what it reached lately, not what it gets now:
		 * a flow slowed by congestion (or by its own plan) would otherwise
		 * look small, be packed onto a busy path, and slow down further. */
		q->peak_bps = q->rate_bps;
		if (o != NULL) {
			q->planned = o->planned;
			q->sport = o->sport;
			q->route = o->route;
			if (o->peak_bps * PEAK_DECAY > q->peak_bps)
				q->peak_bps = o->peak_bps * PEAK_DECAY;
		}
		q->active = q->peak_bps >= (double)d->cfg.min_rate;
		if (q->active && !q->planned)
			changed = true;
	}
	for (size_t j = 0; j < d->nqps && !changed; j++) {
		bool found = false;

		if (!d->qps[j].planned)
			continue;
		for (size_t i = 0; i < nn && !found; i++)
			found = d->qps[j].lip == nq[i].lip && d->qps[j].qpn == nq[i].qpn &&
				nq[i].active;
		if (!found)
			changed = true; /* gone or idle: its entry leaves the plan */
	}
	free(d->qps);
	d->qps = nq;
	d->nqps = nn;
	nq = NULL;
	(void)cap;
	if (changed)
		d->trig |= TRIG_QP;
out:
	if (hr != NULL)
		freev(hr, nhm);
	if (rep != NULL && d->rc != NULL)
		freev(rep, d->nhosts);
	free(hr);
	free(rep);
	free(nq);
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

static void status_write(struct ctld *d, const char *const *kv, int n)
{
	const char *argv[64];
	int argc = 0;
	redisReply *r;

	argv[argc++] = "HSET";
	argv[argc++] = d->k_status;
	for (int i = 0; i < n && argc < 64; i++)
		argv[argc++] = kv[i];
	r = rcmdv(d, argc, argv);
	if (r != NULL)
		freeReplyObject(r);
}

static void dry_print(struct ctld *d, struct ice_host_plan *hps, uint32_t nh,
		      const struct ctl_plan_stats *st, double ecmp)
{
	struct ice_plan_key dummy = {.len = CTLD_DUMMY_KEY_BYTES};
	json_t *o = json_object(), *arr = json_array();
	char *txt;

	for (uint32_t i = 0; i < nh; i++) {
		char *s = ice_plan_sign(&hps[i], d->key.len ? &d->key : &dummy);
		json_t *env = s ? json_loads(s, 0, NULL) : NULL;

		if (env != NULL)
			json_array_append(arr, json_object_get(env, "plan"));
		json_decref(env);
		free(s);
	}
	json_object_set_new(o, "max_util", json_real(st->max_util));
	json_object_set_new(o, "bound", json_real(st->bound));
	json_object_set_new(o, "ecmp_util", json_real(ecmp));
	json_object_set_new(o, "plans", arr);
	txt = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(6));
	if (txt != NULL)
		printf("%s\n", txt);
	fflush(stdout);
	free(txt);
	json_decref(o);
}

/* The highest epoch known: ours, and what the agents accepted last. */
static uint64_t epoch_floor(struct ctld *d)
{
	redisReply **r = calloc(d->nhosts + 1, sizeof(*r));
	uint64_t floor = d->last_epoch;

	if (r == NULL)
		return floor;
	for (uint32_t i = 0; i < d->nhosts; i++)
		redisAppendCommand(d->rc, "HMGET ice:%s:{%s}:plan:applied epoch last_epoch",
				   d->cfg.fabric, d->hosts[i].name);
	if (rpipe(d, d->nhosts, r) == 0) {
		for (uint32_t i = 0; i < d->nhosts; i++)
			for (size_t j = 0; r[i]->type == REDIS_REPLY_ARRAY && j < r[i]->elements;
			     j++) {
				const char *v = r[i]->element[j]->str;
				uint64_t e = v != NULL ? strtoull(v, NULL, 10) : 0;

				if (e > floor)
					floor = e;
			}
		freev(r, d->nhosts);
	}
	free(r);
	return floor;
}

static int publish(struct ctld *d, struct ice_host_plan *hps, uint32_t nh, uint64_t *epoch_out)
{
	const char **argv = calloc(2 * (size_t)nh + 16, sizeof(char *));
	char **own = calloc(2 * (size_t)nh + 2, sizeof(char *));
	char nk[16], ep[24], ts[24], hostlist[1024] = "";
	redisReply *r;
	int argc = 0, ret = -EIO;
	uint64_t epoch, now = ice_wall_ms();

	if (argv == NULL || own == NULL)
		goto out;
	snprintf(ep, sizeof(ep), "%" PRIu64, epoch_floor(d));
	r = rcmd(d, "EVAL %s 2 %s %s %s %s", LUA_EPOCH, d->k_leader, d->k_epoch, d->cfg.id, ep);
	if (r == NULL)
		goto out;
	if (r->type != REDIS_REPLY_INTEGER || r->integer <= 0) {
		freeReplyObject(r);
		ice_warn(SUB, "%s: not leader any more; not publishing", d->cfg.id);
		d->leader = false;
		ret = -EPERM;
		goto out;
	}
	epoch = (uint64_t)r->integer;
	freeReplyObject(r);
	for (uint32_t i = 0; i < nh; i++) {
		hps[i].epoch = epoch;
		hps[i].issued_ms = now;
		hps[i].lifetime_ms = (uint32_t)(d->cfg.lifetime / ICE_NSEC_PER_MSEC);
		own[2 * i] = malloc(192);
		own[2 * i + 1] = ice_plan_sign(&hps[i], &d->key);
		if (own[2 * i] == NULL || own[2 * i + 1] == NULL) {
			ret = -ENOMEM;
			goto out;
		}
		snprintf(own[2 * i], 192, "ice:%s:{%s}:plan", d->cfg.fabric, hps[i].host);
		if (strlen(hostlist) + strlen(hps[i].host) + 2 < sizeof(hostlist)) {
			if (i > 0)
				strcat(hostlist, ",");
			strcat(hostlist, hps[i].host);
		}
	}
	snprintf(nk, sizeof(nk), "%u", 3 + nh);
	snprintf(ep, sizeof(ep), "%" PRIu64, epoch);
	snprintf(ts, sizeof(ts), "%" PRIu64, now);
	argv[argc++] = "EVAL";
	argv[argc++] = LUA_PUBLISH;
	argv[argc++] = nk;
	argv[argc++] = d->k_leader;
	argv[argc++] = d->k_pub;
	argv[argc++] = d->k_log;
	for (uint32_t i = 0; i < nh; i++)
		argv[argc++] = own[2 * i];
	argv[argc++] = d->cfg.id;
	argv[argc++] = ep;
	argv[argc++] = ts;
	argv[argc++] = hostlist;
	for (uint32_t i = 0; i < nh; i++)
		argv[argc++] = own[2 * i + 1];
	r = rcmdv(d, argc, argv);
	if (r == NULL)
		goto out;
	if (r->type == REDIS_REPLY_INTEGER && r->integer >= 0) {
		ret = 0;
		*epoch_out = epoch;
	} else {
		ice_warn(SUB, "%s: publish of epoch %" PRIu64 " refused by the fence (%s)",
			 d->cfg.id, epoch,
			 r->type == REDIS_REPLY_INTEGER && r->integer == -1 ? "lease lost"
			 : r->type == REDIS_REPLY_INTEGER		    ? "a newer epoch is out"
									    : r->str);
		if (r->type == REDIS_REPLY_INTEGER && r->integer == -1)
			d->leader = false;
		ret = -EPERM;
	}
	freeReplyObject(r);
out:
	for (uint32_t i = 0; own != NULL && i < 2 * nh; i++)
		free(own[i]);
	free(own);
	free(argv);
	return ret;
}

static void pend_start(struct ctld *d, uint64_t epoch, struct ice_host_plan *hps, uint32_t nh,
		       uint64_t planned_ms)
{
	struct pending *p = &d->pend;

	free(p->hosts);
	memset(p, 0, sizeof(*p));
	p->hosts = calloc(nh + 1, sizeof(*p->hosts));
	if (p->hosts == NULL)
		return;
	for (uint32_t i = 0; i < nh; i++)
		snprintf(p->hosts[i], sizeof(p->hosts[i]), "%s", hps[i].host);
	p->nhosts = nh;
	p->on = nh > 0;
	p->epoch = epoch;
	p->pub_ms = ice_wall_ms();
	p->planned_ms = planned_ms;
	if (d->trig_ms != 0 && (d->trig & (TRIG_LINK | TRIG_COLL)) != 0) {
		p->trigger_ms = d->trig_ms;
		p->seen_ms = d->trig_seen_ms;
		snprintf(p->what, sizeof(p->what), "%s", d->trig_what);
	}
}

static void plan(struct ctld *d)
{
	unsigned trig = d->trig;
	struct ctl_plan_opts o;
	struct ctl_plan_stats st = {0};
	struct ctl_demand dem;
	struct ice_host_plan *hps = NULL;
	uint32_t nh = 0, *qix = NULL, nann = 0, down_used = 0;
	uint64_t now_ns = ice_now_ns(), planned_ms, epoch = 0;
	double ecmp = 0;
	bool refresh, same;
	int ret;

	ctl_plan_opts_default(&o);
	o.hysteresis = d->cfg.hysteresis;
	o.search_budget_s = d->cfg.search_budget;
	o.mode = trig == TRIG_QP ? CTL_PLAN_INCREMENTAL : CTL_PLAN_REOPT;
	ctl_demand_init(&dem, CTL_UNIT_BPS);
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
			 route_of_sport(d, f, q->sport_now, &r) < 0)
			r.idx = -1;
		if (route_down(d, &r))
			r.idx = -1;
		f->path = r;
	}
	ret = ctl_plan_paths(d->pl, &dem, &o, &st);
	if (ret == 0)
		ret = ctl_plan_sports(d->pl, &dem);
	if (ret == 0 && d->probe)
		probe_sports(d, &dem);
	if (ret == 0 && ctl_plan_ecmp(d->pl, &dem) == 0) {
		if (d->probe)
			probe_ecmp(d, &dem);
		ecmp = ctl_max_util(d->pl, &dem, 1);
	}
	if (ret == 0 && d->cfg.rates)
		ret = ctl_plan_rates(d->pl, &dem, 0, d->cfg.headroom);
	if (ret < 0) {
		ice_err(SUB, "planning %zu flows failed: %s", dem.n, strerror(-ret));
		goto out;
	}
	for (size_t k = 0; k < dem.n; k++) {
		struct ctl_flow *f = &dem.flows[k];
		struct cqp *q = &d->qps[qix[k]];

		if (!(f->flags & CTL_FLOW_ANNOUNCED) || !d->cfg.rates)
			f->start_bps = f->target_bps = 0; /* measured: DCQCN from line rate */
		q->planned = true;
		q->route = f->path;
		q->sport = f->sport;
		down_used += route_down(d, &f->path);
	}
	planned_ms = ice_wall_ms();
	if (d->probe && d->unsteered > 0)
		ice_info(SUB,
			 "%u of %zu flows not steered: no probe map of their NIC pair, or the "
			 "map has no port on the planned path",
			 d->unsteered, dem.n);
	ice_info(SUB,
		 "plan (%s%s%s%s%s): %zu flows (%u announced) on %u hosts, %s: max util %.3f "
		 "(bound %.3f, ECMP %.3f), moved %u, %.1f ms%s",
		 trig & TRIG_QP ? "qps " : "", trig & TRIG_LINK ? "link " : "",
		 trig & TRIG_COLL ? "collective " : "", trig & TRIG_REOPT ? "periodic " : "",
		 trig & TRIG_TAKEOVER ? "takeover " : "", dem.n, nann, d->nhosts,
		 o.mode == CTL_PLAN_INCREMENTAL ? "incremental" : "re-optimised", st.max_util,
		 st.bound, ecmp, st.moved, st.total_s * 1e3,
		 down_used ? "; some flows cross a down link" : "");
	d->plans++;
	if (ctl_host_plans_build(d->topo, &dem, d->pol, 0, 0, 0, &hps, &nh) < 0 ||
	    add_empty_plans(d, &hps, &nh) < 0)
		goto out;
	if (d->cfg.dry_run) {
		dry_print(d, hps, nh, &st, ecmp);
		goto out;
	}
	same = ctld_plans_same(hps, nh, d->last, d->nlast);
	refresh = now_ns - d->last_pub_ns >= d->cfg.lifetime / 3;
	if (same && !refresh && d->last_pub_ns != 0) {
		ice_dbg(SUB, "plan unchanged; not publishing");
		goto out;
	}
	if (publish(d, hps, nh, &epoch) < 0)
		goto out;
	d->last_pub_ns = now_ns;
	d->last_epoch = epoch;
	ctl_host_plans_free(d->last, d->nlast);
	d->last = hps;
	d->nlast = nh;
	hps = NULL;
	pend_start(d, epoch, d->last, d->nlast, planned_ms);
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
		status_write(d, kv, sizeof(kv) / sizeof(kv[0]));
	}
	printf("epoch %" PRIu64 " published by %s to %u hosts: %zu flows, max util %.3f "
	       "(bound %.3f, ECMP %.3f)\n",
	       epoch, d->cfg.id, nh, dem.n, st.max_util, st.bound, ecmp);
	fflush(stdout);
out:
	d->trig = 0;
	d->trig_ms = 0;
	ctl_host_plans_free(hps, nh);
	ctl_demand_fini(&dem);
	free(qix);
}

/* Which epoch did each host apply? Print the reaction time once all did. */
static void read_applied(struct ctld *d)
{
	struct pending *p = &d->pend;
	redisReply **r;
	uint64_t max_ts = 0, now = ice_wall_ms();
	uint32_t ok = 0;
	char key[256];

	if (!p->on || d->rc == NULL)
		return;
	r = calloc(p->nhosts, sizeof(*r));
	if (r == NULL)
		return;
	for (uint32_t i = 0; i < p->nhosts; i++) {
		snprintf(key, sizeof(key), "ice:%s:{%s}:plan:applied", d->cfg.fabric, p->hosts[i]);
		redisAppendCommand(d->rc, "HMGET %s epoch ts_ms", key);
	}
	if (rpipe(d, p->nhosts, r) < 0) {
		free(r);
		return;
	}
	for (uint32_t i = 0; i < p->nhosts; i++) {
		uint64_t e = 0, ts = 0;

		if (r[i]->type == REDIS_REPLY_ARRAY && r[i]->elements == 2 &&
		    r[i]->element[0]->str != NULL && r[i]->element[1]->str != NULL) {
			e = strtoull(r[i]->element[0]->str, NULL, 10);
			ts = strtoull(r[i]->element[1]->str, NULL, 10);
		}
		if (e >= p->epoch) {
			ok++;
			if (e == p->epoch && ts > max_ts)
				max_ts = ts;
		}
	}
	freev(r, p->nhosts);
	free(r);
	if (ok == p->nhosts) {
		p->on = false;
		if (p->trigger_ms != 0 && max_ts >= p->trigger_ms) {
			char rm[24], ep[24];
			const char *kv[] = {"reaction_ms",   rm,     "reaction_epoch", ep,
					    "reaction_what", p->what};

			printf("reaction: %s -> epoch %" PRIu64 " applied on %u hosts in %" PRIu64
			       " ms (seen +%" PRIu64 " ms, planned +%" PRIu64
			       " ms, published +%" PRIu64 " ms, applied +%" PRIu64 " ms)\n",
			       p->what, p->epoch, p->nhosts, max_ts - p->trigger_ms,
			       p->seen_ms > p->trigger_ms ? p->seen_ms - p->trigger_ms : 0,
			       p->planned_ms - p->seen_ms, p->pub_ms - p->planned_ms,
			       max_ts > p->pub_ms ? max_ts - p->pub_ms : 0);
			fflush(stdout);
			snprintf(rm, sizeof(rm), "%" PRIu64, max_ts - p->trigger_ms);
			snprintf(ep, sizeof(ep), "%" PRIu64, p->epoch);
			status_write(d, kv, 6);
		} else {
			ice_info(SUB,
				 "epoch %" PRIu64 " in force on all %u hosts (%" PRIu64
				 " ms after publishing)",
				 p->epoch, p->nhosts, max_ts > p->pub_ms ? max_ts - p->pub_ms : 0);
		}
	} else if (now > p->pub_ms + APPLY_WAIT_MS) {
		ice_warn(SUB, "epoch %" PRIu64 " applied on %u of %u hosts after %u ms", p->epoch,
			 ok, p->nhosts, APPLY_WAIT_MS);
		p->on = false;
	}
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
	if (cfg->policy[0] != '\0') {
		d->pol = ctl_policy_load(cfg->policy, &err);
		if (d->pol == NULL) {
			ice_err(SUB, "%s", ice_cfg_err_str(&err, buf, sizeof(buf)));
			goto err;
		}
	}
	if (cfg->key[0] != '\0' && ice_plan_key_load(cfg->key, &d->key, &err) < 0) {
		ice_err(SUB, "key: %s", err.msg);
		goto err;
	}
	d->probe = cfg->sports == CTLD_SPORTS_PROBE ||
		   (cfg->sports == CTLD_SPORTS_AUTO && d->topo->ecmp == TOPO_ECMP_KERNEL);
#define K(f, ...) snprintf(d->f, sizeof(d->f), __VA_ARGS__)
	K(k_leader, "ice:%s:ctl:leader", cfg->fabric);
	K(k_epoch, "ice:%s:ctl:epoch", cfg->fabric);
	K(k_pub, "ice:%s:ctl:published", cfg->fabric);
	K(k_log, "ice:%s:ctl:log", cfg->fabric);
	K(k_links, "ice:%s:links", cfg->fabric);
	K(k_status, "ice:%s:ctl:status", cfg->fabric);
	K(k_hosts, "ice:%s:hosts", cfg->fabric);
#undef K
	ice_info(SUB,
		 "ice-controller %s: fabric %s, %s (%u links), every %.0f ms, QPs every %.0f ms, "
		 "re-optimise every %.1f s, plans live %.1f s, lease %.0f ms, source ports from "
		 "%s%s",
		 cfg->id, cfg->fabric, cfg->topology, d->topo->nlinks, cfg->interval / 1e6,
		 cfg->qp_interval / 1e6, cfg->reopt / 1e9, cfg->lifetime / 1e9,
		 cfg->lease_ttl / 1e6, d->probe ? "ice-probe's maps" : "the hash models",
		 cfg->dry_run ? ", dry run" : "");
	return d;
err:
	ctld_free(d);
	errno = EINVAL;
	return NULL;
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

		if (rc_up(d)) {
			if (!d->cfg.dry_run)
				lease_tick(d);
			read_links(d);
			if (d->probe && now >= d->next_pmap_ns) {
				read_pmaps(d);
				d->next_pmap_ns = now + PMAP_REFRESH_NS;
			}
			if (now >= d->next_qp_ns) {
				read_qps(d);
				d->next_qp_ns = now + d->cfg.qp_interval;
				if (!d->started && d->rc != NULL) {
					d->started = true;
					d->trig |= TRIG_REOPT; /* the first plan */
				}
			}
			read_events(d);
			if (d->qps_due) {
				/* the agent wrote the QP's record with its event */
				d->qps_due = false;
				read_qps(d);
				d->next_qp_ns = now + d->cfg.qp_interval;
			}
			expire_colls(d);
			if (d->cfg.reopt != 0 && now >= d->next_reopt_ns) {
				d->trig |= TRIG_REOPT;
				d->next_reopt_ns = now + d->cfg.reopt;
			}
			if (d->leader && d->last_pub_ns != 0 &&
			    now - d->last_pub_ns >= d->cfg.lifetime / 3)
				d->trig |= TRIG_REOPT; /* refresh before the lifetime ends */
			if (d->rc != NULL && d->trig != 0 && d->started &&
			    (d->leader || d->cfg.dry_run)) {
				plan(d);
				if (d->cfg.once)
					break;
			}
			if (!d->leader && !d->cfg.dry_run)
				d->trig &= TRIG_LINK | TRIG_COLL |
					   TRIG_QP; /* standby: keep the view */
			if (d->leader)
				read_applied(d);
		}
		next += d->cfg.interval;
		now = ice_now_ns();
		if (next <= now)
			next = now + d->cfg.interval;
		else
			ice_sleep_ns(next - now);
	}
	return 0;
}

void ctld_free(struct ctld *d)
{
	if (d == NULL)
		return;
	if (d->rc != NULL && d->leader) {
		redisReply *r = rcmd(d, "EVAL %s 1 %s %s", LUA_RELEASE, d->k_leader, d->cfg.id);

		if (r != NULL)
			freeReplyObject(r);
		ice_info(SUB, "%s: lease released", d->cfg.id);
	}
	if (d->rc != NULL)
		redisFree(d->rc);
	for (size_t i = 0; i < d->ncolls; i++)
		coll_free(&d->colls[i]);
	free(d->colls);
	free(d->hosts);
	free(d->qps);
	free(d->pend.hosts);
	ctl_host_plans_free(d->last, d->nlast);
	pmaps_free(d->pmaps, d->npmaps);
	ctl_planner_free(d->pl);
	ctl_policy_free(d->pol);
	topo_free(d->topo);
	free(d->rate0);
	free(d->down);
	free(d->lname);
	memset(&d->key, 0, sizeof(d->key));
	free(d);
}
