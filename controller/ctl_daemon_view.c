// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_daemon_view.c: the daemon's view of the fabric from Redis: hosts,
 * link state (re-indexing the planner on a change), ice-probe's port ->
 * path maps, announced collectives from the hosts' event streams, and the
 * QPs with their measured rates. Each reader sets the triggers (d->trig)
 * that the planning step acts on.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_daemon_internal.h"
#include "ice_log.h"
#include "ice_time.h"

/* ---- view: hosts */

/* Position of name in d->host_ix, or where it would go (*found false). */
static uint32_t host_pos(const struct ctld *d, const char *name, bool *found)
{
	uint32_t lo = 0, hi = d->nhosts;

	*found = false;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(d->hosts[d->host_ix[mid]].name, name);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The view's host of that name, added when the topology has it (a binary
 * search: the view of 10^4 hosts is read every QP interval). */
static struct chost *host_get(struct ctld *d, const char *name)
{
	const struct topo_node *n;
	struct chost *h;
	uint32_t *ix, pos;
	bool found;

	pos = host_pos(d, name, &found);
	if (found)
		return &d->hosts[d->host_ix[pos]];
	n = topo_node_by_name(d->topo, name);
	if (n == NULL || n->kind != TOPO_HOST)
		return NULL;
	h = realloc(d->hosts, sizeof(*h) * (d->nhosts + 1));
	if (h == NULL)
		return NULL;
	d->hosts = h;
	ix = realloc(d->host_ix, sizeof(*ix) * (d->nhosts + 1));
	if (ix == NULL)
		return NULL;
	d->host_ix = ix;
	memmove(&ix[pos + 1], &ix[pos], sizeof(*ix) * (d->nhosts - pos));
	ix[pos] = d->nhosts;
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
	redisReply *r = ctld_cmd(d, "SMEMBERS %s", d->k_hosts);

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
	ctld_telem_caps(d); /* the unplanned loads stay off */
	return 0;
}

bool ctld_link_set(struct ctld *d, uint32_t l, uint8_t who, bool down)
{
	uint8_t was = d->down[l];

	d->down[l] = down ? was | who : was & (uint8_t)~who;
	if ((was != 0) == (d->down[l] != 0))
		return false;
	ice_info(SUB, "link %s is %s (%s)", d->lname[l], down ? "down" : "up",
		 who == LDOWN_OPER    ? "a switch port's oper-status"
		 : who == LDOWN_PROBE ? "ice-probe: only dead paths cross it"
				      : "the fabric's link state");
	return true;
}

void ctld_links_changed(struct ctld *d, uint64_t ts_ms, const char *what)
{
	if (rebuild_planner(d) < 0) {
		ice_err(SUB, "cannot re-index the topology after a link change: %s",
			strerror(errno));
		return;
	}
	/* the reaction is timed from the first link change, before any other
	 * signal in the same plan: a link down is the one to be fast on */
	if (ts_ms != 0 && (!(d->trig & TRIG_LINK) || ts_ms < d->trig_ms)) {
		d->trig_ms = ts_ms;
		d->trig_seen_ms = ice_wall_ms();
		snprintf(d->trig_what, sizeof(d->trig_what), "%s", what);
	}
	d->trig |= TRIG_LINK;
}

void ctld_read_links(struct ctld *d)
{
	redisReply *r = ctld_cmd(d, "HGETALL %s", d->k_links);
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
			if (strcmp(d->lname[l], name) != 0 ||
			    !ctld_link_set(d, l, LDOWN_KEY, strcmp(st, "down") == 0))
				continue;
			changed = true;
			if (ts > ts_max) {
				ts_max = ts;
				snprintf(what, sizeof(what), "link %s %s", name, st);
			}
		}
		json_decref(o);
	}
	freeReplyObject(r);
	if (changed)
		ctld_links_changed(d, ts_max, what);
}

/* ---- view: ice-probe's port -> path maps */

void ctld_pmaps_free(struct ctl_pmap *m, uint32_t n)
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

/* The newest map of m's pair in the current view, or NULL. */
static const struct ctl_pmap *pmap_before(const struct ctld *d, const struct ctl_pmap *m)
{
	const struct ctl_pmap *best = NULL;

	for (uint32_t i = 0; i < d->npmaps; i++) {
		const struct ctl_pmap *o = &d->pmaps[i];

		if (o->paths != NULL && o->src.s_addr == m->src.s_addr &&
		    o->dst.s_addr == m->dst.s_addr && (best == NULL || o->ts_ms > best->ts_ms))
			best = o;
	}
	return best;
}

/* A newly fetched map: when it contradicts the one the plans used (a switch
 * rehashed, a link changed), or is the pair's first, plan again now. */
static void pmap_news(struct ctld *d, const struct ctl_pmap *m)
{
	const struct ctl_pmap *o = pmap_before(d, m);
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];

	if (o != NULL && !ctl_pmap_differs(o, m))
		return; /* learned again, the same */
	inet_ntop(AF_INET, &m->src, a, sizeof(a));
	inet_ntop(AF_INET, &m->dst, b, sizeof(b));
	if (o != NULL) {
		ice_info(SUB, "probe map of %s -> %s changed: re-planning", a, b);
		d->pmap_changed = true;
	} else if (d->started)
		ice_info(SUB, "probe map of %s -> %s learned: re-planning", a, b);
	d->trig |= TRIG_PMAP;
	if ((o != NULL || d->started) && !(d->trig & TRIG_LINK) &&
	    m->ts_ms > d->trig_ms) { /* time the reaction (a link change first) */
		d->trig_ms = m->ts_ms;
		d->trig_seen_ms = ice_wall_ms();
		snprintf(d->trig_what, sizeof(d->trig_what), "probe map of %s -> %s %s", a, b,
			 o != NULL ? "changed" : "learned");
	}
}

/* ice:<F>:probe:version (0 when absent), or -1 when Redis failed. */
static long long pmap_version(struct ctld *d)
{
	char key[ICE_RKEY_MAX];
	redisReply *r = ctld_cmd(
		d, "GET %s",
		ice_rkey_str(key, sizeof(key), ICE_RK_PROBE_VERSION, d->cfg.fabric, NULL, NULL));
	long long v;

	if (r == NULL)
		return -1;
	v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
	freeReplyObject(r);
	return v;
}

bool ctld_pmaps_moved(struct ctld *d)
{
	long long v = pmap_version(d);

	return v >= 0 && v != d->pmap_version;
}

/* Every map of every probing host; maps whose learning time did not change
 * are kept, only new ones are fetched, and a new one that contradicts the
 * pair's old one triggers a re-plan. On a Redis failure the old ones stay. */
void ctld_read_pmaps(struct ctld *d)
{
	char key[ICE_RKEY_MAX];
	long long version = pmap_version(d); /* before the maps: a later one moves it again */
	redisReply *hs = ctld_cmd(
		d, "SMEMBERS %s",
		ice_rkey_str(key, sizeof(key), ICE_RK_PROBE_HOSTS, d->cfg.fabric, NULL, NULL));
	redisReply **pr = NULL, **mr = NULL;
	struct ctl_pmap *nm = NULL;
	int *keep = NULL;
	size_t nh, npairs = 0, nget = 0;
	uint32_t nn = 0, bad = 0, nhk = 0;
	char(*hk)[ICE_RKEY_MAX] = NULL;

	if (hs == NULL || hs->type != REDIS_REPLY_ARRAY)
		goto out;
	nh = hs->elements;
	pr = calloc(nh + 1, sizeof(*pr));
	if (pr == NULL)
		goto out;
	for (size_t i = 0; i < nh; i++)
		ice_redis_appendf(&d->link, "ZRANGE %s 0 -1 WITHSCORES",
				  ice_rkey_str(key, sizeof(key), ICE_RK_PROBE_PAIRS, d->cfg.fabric,
					       hs->element[i]->str, NULL));
	if (ctld_pipe(d, nh, pr) < 0) {
		free(pr);
		pr = NULL;
		goto out;
	}
	for (size_t i = 0; i < nh; i++)
		if (pr[i]->type == REDIS_REPLY_ARRAY)
			npairs += pr[i]->elements / 2;
	keep = calloc(npairs + 1, sizeof(*keep));
	nm = calloc(npairs + 1, sizeof(*nm));
	hk = calloc(npairs + 1, sizeof(*hk));
	if (keep == NULL || nm == NULL || hk == NULL)
		goto out;
	npairs = 0;
	for (size_t i = 0; i < nh; i++)
		for (size_t j = 0; pr[i]->type == REDIS_REPLY_ARRAY && j + 1 < pr[i]->elements;
		     j += 2, npairs++) {
			const char *pair = pr[i]->element[j]->str;
			const char *sc = pr[i]->element[j + 1]->str;

			if (ice_rkey(hk[nhk], sizeof(hk[0]), ICE_RK_PROBE_HEALTH, d->cfg.fabric,
				     hs->element[i]->str, pair) == 0)
				nhk++;

			keep[npairs] = pmap_known(d, pair, sc ? strtoull(sc, NULL, 10) : 0);
			if (keep[npairs] >= 0)
				continue;
			ice_redis_appendf(&d->link, "HGET %s json",
					  ice_rkey_str(key, sizeof(key), ICE_RK_PROBE_MAP,
						       d->cfg.fabric, hs->element[i]->str, pair));
			nget++;
		}
	mr = calloc(nget + 1, sizeof(*mr));
	if (mr == NULL || ctld_pipe(d, nget, mr) < 0) {
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
				pmap_news(d, &nm[nn++]);
			else
				bad++;
		}
		g++;
	}
	if (bad > 0)
		ice_warn(SUB, "%u probe map(s) unreadable, ignored", bad);
	if (nn != d->npmaps)
		ice_info(SUB, "probe maps: %u pair(s) from %zu prober(s)", nn, nh);
	ctld_pmaps_free(d->pmaps, d->npmaps);
	d->pmaps = nm;
	d->npmaps = nn;
	nm = NULL;
	if (d->pmap_changed) {
		/* the links' loads were measured against the old routes */
		d->pmap_changed = false;
		ctl_telem_forget(&d->tm);
		ctld_telem_caps(d);
	}
	free(d->hkeys);
	d->hkeys = hk;
	d->nhkeys = nhk;
	hk = NULL;
	if (version >= 0)
		d->pmap_version = version;
out:
	free(hk);
	if (pr != NULL)
		ctld_freev(pr, hs->elements);
	free(pr);
	if (mr != NULL)
		ctld_freev(mr, nget);
	free(mr);
	free(keep);
	ctld_pmaps_free(nm, nn);
	if (hs != NULL)
		freeReplyObject(hs);
}

/* A probed path with a standing queue: its queueing delay (the median RTT
 * over the path's base) at least probe_qdelay of the time its slowest ECN
 * link takes to drain Kmin. Paths without samples, or no ECN on the way,
 * tell nothing. */
static bool probe_queue(const struct ctld *d, const char *path, const json_t *qdelay)
{
	uint32_t dl[16];
	int nh = ctl_pmap_path_dlinks(d->topo, path, dl, 16);
	double drain_us = 0;

	if (nh <= 0 || !json_is_number(qdelay) || d->cfg.probe_qdelay <= 0)
		return false;
	for (int k = 0; k < nh; k++) {
		const struct topo_link *l = &d->topo->links[dl[k] / 2];
		double us = l->ecn.kmin_bytes > 0 && d->rate0[dl[k] / 2] > 0
				    ? l->ecn.kmin_bytes * 8e6 / (double)d->rate0[dl[k] / 2]
				    : 0;

		if (us > 0 && (drain_us == 0 || us < drain_us))
			drain_us = us;
	}
	return drain_us > 0 && json_number_value(qdelay) >= d->cfg.probe_qdelay * drain_us;
}

void ctld_read_health(struct ctld *d)
{
	redisReply **r;
	const char **names = NULL;
	bool *dead = NULL, *down = NULL, *hot = NULL;
	json_t **recs = NULL;
	uint32_t n = 0, cap = 0;
	uint64_t ts_max = 0;
	char what[96] = "";

	if (d->nhkeys == 0 || d->link.c == NULL)
		return;
	r = calloc(d->nhkeys, sizeof(*r));
	recs = calloc(d->nhkeys, sizeof(*recs));
	down = calloc(d->topo->nlinks + 1, sizeof(*down));
	if (r == NULL || recs == NULL || down == NULL)
		goto out_free;
	for (uint32_t i = 0; i < d->nhkeys; i++)
		ice_redis_appendf(&d->link, "HGET %s json", d->hkeys[i]);
	if (ctld_pipe(d, d->nhkeys, r) < 0)
		goto out_free;
	for (uint32_t i = 0; i < d->nhkeys; i++) {
		json_t *paths;
		size_t k;
		json_t *p;

		if (r[i]->type != REDIS_REPLY_STRING)
			continue;
		recs[i] = json_loads(r[i]->str, 0, NULL);
		paths = recs[i] ? json_object_get(recs[i], "paths") : NULL;
		json_array_foreach(paths, k, p)
		{
			const char *nm = json_string_value(json_object_get(p, "path"));
			const char *st = json_string_value(json_object_get(p, "state"));

			if (nm == NULL || st == NULL)
				continue;
			if (n == cap) {
				uint32_t nc = cap ? 2 * cap : 64;
				const char **a = realloc(names, nc * sizeof(*a));
				bool *b = a ? realloc(dead, nc * sizeof(*b)) : NULL;
				bool *c = b ? realloc(hot, nc * sizeof(*c)) : NULL;

				if (a != NULL)
					names = a;
				if (b != NULL)
					dead = b;
				if (c == NULL)
					goto out;
				hot = c;
				cap = nc;
			}
			names[n] = nm;
			dead[n] = strcmp(st, "dead") == 0;
			hot[n] = !dead[n] && probe_queue(d, nm, json_object_get(p, "qdelay_us"));
			if (dead[n]) {
				uint64_t ts = (uint64_t)json_integer_value(
					json_object_get(p, "dead_since_ms"));

				if (ts > ts_max) {
					ts_max = ts;
					snprintf(what, sizeof(what), "probe path %.60s dead", nm);
				}
			}
			n++;
		}
	}
	ctl_pmap_dead_links(d->topo, names, dead, n, down);
	ctl_pmap_hot_dlinks(d->topo, names, hot, n, d->probe_hot);
	{
		bool changed = false;

		for (uint32_t l = 0; l < d->topo->nlinks; l++)
			changed |= ctld_link_set(d, l, LDOWN_PROBE, down[l]);
		if (changed)
			ctld_links_changed(d, ts_max ? ts_max : ice_wall_ms(),
					   what[0] ? what : "probe paths back");
	}
out:
	ctld_freev(r, d->nhkeys);
out_free:
	for (uint32_t i = 0; recs != NULL && i < d->nhkeys; i++)
		json_decref(recs[i]);
	free(recs);
	free(r);
	free(names);
	free(dead);
	free(hot);
	free(down);
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

void ctld_coll_free(struct ccoll *c)
{
	free(c->nic);
	free(c->next);
	memset(c, 0, sizeof(*c));
}

/* A member rank destroyed communicator comm: its pattern ends now, not
 * announce_ttl later (a job ending and the next starting within it had both
 * planned: the old demand on the new QPs of the same NIC pairs). */
static void coll_end(struct ctld *d, const struct chost *h, const char *comm, json_int_t rank)
{
	const struct topo_node *n = &d->topo->nodes[h->node];
	struct ccoll *c = NULL;
	bool member = false;

	for (size_t i = 0; i < d->ncolls && c == NULL; i++)
		if (strcmp(d->colls[i].comm, comm) == 0)
			c = &d->colls[i];
	/* from its own host (an untracked communicator is id 0, rank -1) */
	for (uint32_t k = 0; c != NULL && c->nic != NULL && rank >= 0 &&
			     rank < (json_int_t)c->nranks && k < n->nports;
	     k++)
		member |= c->nic[rank] == n->ports[k];
	if (!member)
		return;
	if (c->active) {
		d->trig |= TRIG_COLL_END;
		ice_info(SUB,
			 "collective of %s%s%scomm %s ended (rank %lld destroyed its communicator)",
			 c->job[0] ? "job " : "", c->job, c->job[0] ? ", " : "", c->comm,
			 (long long)rank);
	}
	ctld_coll_free(c);
	*c = d->colls[--d->ncolls];
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
	if (kind != NULL && strcmp(kind, "comm_destroy") == 0 && comm != NULL) {
		coll_end(d, h, comm, rank);
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
	if (json_is_string(json_object_get(o, "job")))
		snprintf(c->job, sizeof(c->job), "%s",
			 json_string_value(json_object_get(o, "job")));
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
		c->active_ms = ice_wall_ms();
		d->trig |= TRIG_COLL;
		if (!(d->trig & TRIG_LINK) && c->trigger_ms >= d->trig_ms) {
			d->trig_ms = c->trigger_ms;
			d->trig_seen_ms = ice_wall_ms();
			snprintf(d->trig_what, sizeof(d->trig_what), "%s of %u ranks, %s%s%s%s",
				 json_string_value(json_object_get(o, "op")), c->nranks,
				 c->job[0] ? "job " : "", c->job, c->job[0] ? ", comm " : "comm ",
				 c->comm);
		}
		ice_info(SUB,
			 "collective announced: %s, %" PRIu64 " bytes, %u ranks, %s%s%scomm %s",
			 json_string_value(json_object_get(o, "op")), bytes, c->nranks,
			 c->job[0] ? "job " : "", c->job, c->job[0] ? ", " : "", c->comm);
	}
}

/* One host's new events (the XREAD reply of its stream). */
static void host_events(struct ctld *d, struct chost *h, const redisReply *r)
{
	const redisReply *st, *ents;

	if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 1)
		return; /* nil: nothing new */
	st = r->element[0];
	if (st->type != REDIS_REPLY_ARRAY || st->elements != 2)
		return;
	ents = st->element[1];
	for (size_t e = 0; ents->type == REDIS_REPLY_ARRAY && e < ents->elements; e++) {
		const redisReply *en = ents->element[e], *f;
		const char *nic = NULL, *js = NULL;

		if (en->type != REDIS_REPLY_ARRAY || en->elements != 2 ||
		    en->element[0]->type != REDIS_REPLY_STRING)
			continue;
		snprintf(h->last_id, sizeof(h->last_id), "%s", en->element[0]->str);
		f = en->element[1];
		for (size_t k = 0; f->type == REDIS_REPLY_ARRAY && k + 1 < f->elements; k += 2) {
			if (f->element[k]->type != REDIS_REPLY_STRING ||
			    f->element[k + 1]->type != REDIS_REPLY_STRING)
				continue;
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

#define EVENTS_BATCH	512  /* hosts per pipeline */
#define EVENTS_PER_TICK 2048 /* hosts read per loop iteration at most */

/* The hosts' event streams, one XREAD per host, pipelined (on a cluster the
 * streams sit in their hosts' slots, so one XREAD cannot name them all).
 * Every loop iteration reads up to EVENTS_PER_TICK hosts, going on from
 * where the last one stopped: every host at every iteration up to that
 * many hosts; past it each host every nhosts / EVENTS_PER_TICK iterations
 * (12,500 hosts: every 7th, 140 ms at the 20 ms loop), so that the loop is
 * not held for all of them at once (12,500 XREADs took 0.25-1.7 s here,
 * every iteration; docs/benchmarks.md "Telemetry at scale"). */
void ctld_read_events(struct ctld *d)
{
	redisReply *r[EVENTS_BATCH];
	char key[ICE_RKEY_MAX];
	uint32_t left = d->nhosts < EVENTS_PER_TICK ? d->nhosts : EVENTS_PER_TICK;

	if (d->ev_next >= d->nhosts)
		d->ev_next = 0;
	while (left > 0) {
		uint32_t base = d->ev_next, n = d->nhosts - base;

		if (n > EVENTS_BATCH)
			n = EVENTS_BATCH;
		if (n > left)
			n = left;
		for (uint32_t i = 0; i < n; i++) {
			struct chost *h = &d->hosts[base + i];
			const char *argv[] = {"XREAD", "COUNT", "1000", "STREAMS", key, h->last_id};

			ice_rkey_str(key, sizeof(key), ICE_RK_EVENTS, d->cfg.fabric, h->name, NULL);
			ice_redis_appendv(&d->link, 6, argv, NULL);
		}
		if (ctld_pipe(d, n, r) < 0)
			return;
		for (uint32_t i = 0; i < n; i++)
			host_events(d, &d->hosts[base + i], r[i]);
		ctld_freev(r, n);
		left -= n;
		d->ev_next = base + n < d->nhosts ? base + n : 0;
	}
}

void ctld_expire_colls(struct ctld *d)
{
	uint64_t now = ice_wall_ms(), ttl = d->cfg.announce_ttl / ICE_NSEC_PER_MSEC;

	for (size_t i = 0; i < d->ncolls;) {
		if (d->colls[i].last_ms + ttl < now) {
			if (d->colls[i].active) {
				d->trig |= TRIG_COLL_END;
				ice_info(SUB,
					 "collective of %s%s%scomm %s ended (silent for %" PRIu64
					 " ms)",
					 d->colls[i].job[0] ? "job " : "", d->colls[i].job,
					 d->colls[i].job[0] ? ", " : "", d->colls[i].comm, ttl);
			}
			ctld_coll_free(&d->colls[i]);
			d->colls[i] = d->colls[--d->ncolls];
			continue;
		}
		i++;
	}
}

static int addr_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct addr_ix *)a)->addr, y = ((const struct addr_ix *)b)->addr;

	return x < y ? -1 : x > y;
}

/* The host NIC of address a (network order), or NULL: a binary search in
 * an index built at the first call (a topology's addresses never change). */
const struct topo_port *ctld_nic_by_addr(struct ctld *d, uint32_t a)
{
	struct addr_ix key = {.addr = a}, *f;

	if (d->nic_ix == NULL) {
		d->nic_ix = calloc(d->topo->nports + 1, sizeof(*d->nic_ix));
		if (d->nic_ix == NULL)
			return NULL;
		for (uint32_t i = 0; i < d->topo->nports; i++)
			if (d->topo->nodes[d->topo->ports[i].node].kind == TOPO_HOST)
				d->nic_ix[d->nnic_ix++] = (struct addr_ix){
					.addr = d->topo->ports[i].addr.s_addr, .port = i};
		qsort(d->nic_ix, d->nnic_ix, sizeof(*d->nic_ix), addr_cmp);
	}
	f = bsearch(&key, d->nic_ix, d->nnic_ix, sizeof(key), addr_cmp);
	return f ? &d->topo->ports[f->port] : NULL;
}

/* QPs by (lip, qpn, dst): the old and the new view are matched by sorting,
 * not by a pairwise scan (10^5 QPs). */
static int qp_cmp3(const struct cqp *a, const struct cqp *b)
{
	if (a->lip != b->lip)
		return a->lip < b->lip ? -1 : 1;
	if (a->qpn != b->qpn)
		return a->qpn < b->qpn ? -1 : 1;
	return a->dst < b->dst ? -1 : a->dst > b->dst;
}

static int qp_ptr_cmp(const void *a, const void *b)
{
	return qp_cmp3(*(const struct cqp *const *)a, *(const struct cqp *const *)b);
}

/* Sorted pointers to q[0..n); NULL (and errno) without memory. */
static const struct cqp **qp_sorted(const struct cqp *q, size_t n)
{
	const struct cqp **v = malloc(sizeof(*v) * (n + 1));

	for (size_t i = 0; v != NULL && i < n; i++)
		v[i] = &q[i];
	if (v != NULL)
		qsort(v, n, sizeof(*v), qp_ptr_cmp);
	return v;
}

/* First index of v[0..n) not below key in (lip, qpn[, dst]) order; with
 * any_dst the dst is not compared (the first of that lip, qpn). */
static size_t qp_lower(const struct cqp *const *v, size_t n, const struct cqp *key, bool any_dst)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct cqp *m = v[mid];
		int c = m->lip != key->lip   ? (m->lip < key->lip ? -1 : 1)
			: m->qpn != key->qpn ? (m->qpn < key->qpn ? -1 : 1)
			: any_dst	     ? 0
					     : qp_cmp3(m, key);

		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- view: QPs */

/* The agent's per-second rates (`rate`): what the QP sends, and the host
 * signals of congestion on its path (CNPs its sender receives, packets it
 * resends). */
/* The record's per-second rates; false when one is negative, not finite or
 * above 10^13 (no NIC sends 80 Tbit/s or 10^13 CNPs/s): malformed. */
/* [p, end) is a number as JSON writes them (what strtod read may be hex,
 * inf, nan, "1.", ".5", "01"): -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool json_number_span(const char *p, const char *end)
{
	if (p < end && *p == '-')
		p++;
	if (p == end || !isdigit((unsigned char)*p))
		return false;
	if (*p == '0' && p + 1 < end && isdigit((unsigned char)p[1]))
		return false;
	while (p < end && isdigit((unsigned char)*p))
		p++;
	if (p < end && *p == '.') {
		if (++p == end || !isdigit((unsigned char)*p))
			return false;
		while (p < end && isdigit((unsigned char)*p))
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (p == end || !isdigit((unsigned char)*p))
			return false;
		while (p < end && isdigit((unsigned char)*p))
			p++;
	}
	return p == end;
}

/* The agent's rate object as it writes it ({"k":number,...}, no spaces,
 * no escapes, no nesting) into tx_bytes, cnp_rx and retx (0 when absent);
 * false on anything else, which jansson then reads. jansson's json_loads
 * costs ~5 us a record, half the CPU of a view refresh of 10^5 QPs; this
 * ~0.1 us. */
bool ctld_rates_scan(const char *p, double *tx, double *cnp, double *retx)
{
	*tx = *cnp = *retx = 0;
	if (*p++ != '{')
		return false;
	if (*p == '}')
		return p[1] == '\0';
	for (;;) {
		const char *k = p + 1, *e, *f;
		char *end;
		double v;

		if (*p != '"' || (e = strchr(k, '"')) == NULL || memchr(k, '\\', e - k) != NULL)
			return false;
		p = e + 1;
		if (*p++ != ':' || !(*p == '-' || (*p >= '0' && *p <= '9')))
			return false;
		v = strtod(p, &end);
		if (end == p || !isfinite(v) || !json_number_span(p, end))
			return false;
		/* an integer near or past int64's range: jansson's call (it
		 * refuses the whole object past it) */
		f = strpbrk(p, ".eE");
		if (fabs(v) >= 9.2e18 && (f == NULL || f >= end))
			return false;
		if (e - k == 8 && memcmp(k, "tx_bytes", 8) == 0)
			*tx = v;
		else if (e - k == 6 && memcmp(k, "cnp_rx", 6) == 0)
			*cnp = v;
		else if (e - k == 4 && memcmp(k, "retx", 4) == 0)
			*retx = v;
		p = end;
		if (*p == '}')
			return p[1] == '\0';
		if (*p++ != ',')
			return false;
	}
}

static bool rates_of(struct cqp *q, const char *js)
{
	double tx, cnp, retx;
	json_t *o;

	if (js != NULL && ctld_rates_scan(js, &tx, &cnp, &retx)) {
		q->rate_bps = tx * 8;
		q->cnp_s = cnp;
		q->retx_s = retx;
	} else {
		o = js ? json_loads(js, 0, NULL) : NULL;
		q->rate_bps = o ? json_number_value(json_object_get(o, "tx_bytes")) * 8 : 0;
		q->cnp_s = o ? json_number_value(json_object_get(o, "cnp_rx")) : 0;
		q->retx_s = o ? json_number_value(json_object_get(o, "retx")) : 0;
		json_decref(o);
	}
	return isfinite(q->rate_bps) && q->rate_bps >= 0 && q->rate_bps <= 8e13 &&
	       isfinite(q->cnp_s) && q->cnp_s >= 0 && q->cnp_s <= 1e13 && isfinite(q->retx_s) &&
	       q->retx_s >= 0 && q->retx_s <= 1e13;
}

/* The fields of a QP record the view reads: local and remote IPv4, qpn and
 * rqpn (24 bits), sport (16 bits), all decimal where numbers. */
static bool qp_num_ok(const char *s, unsigned long max, bool need)
{
	char *end;
	unsigned long v;

	if (s == NULL)
		return !need;
	errno = 0;
	v = strtoul(s, &end, 10);
	return *s >= '0' && *s <= '9' && *end == '\0' && errno == 0 && v <= max;
}

static bool qp_record_ok(const redisReply *r, struct in_addr *la, struct in_addr *ra)
{
	return r->element[0]->str != NULL && r->element[1]->str != NULL &&
	       inet_pton(AF_INET, r->element[0]->str, la) == 1 &&
	       inet_pton(AF_INET, r->element[1]->str, ra) == 1 &&
	       qp_num_ok(r->element[2]->str, 0xffffff, true) &&
	       qp_num_ok(r->element[3]->str, 0xffffff, false) &&
	       qp_num_ok(r->element[4]->str, 65535, false);
}

/* Count a dropped QP record; the first ten and then every power of two are
 * said, with the host whose key held it and why. */
static void qp_dropped(uint64_t *count, const char *host, const char *why)
{
	if (++*count <= 10 || (*count & (*count - 1)) == 0)
		ice_warn(SUB, "host %s: a QP record dropped (%" PRIu64 " so far): %s", host, *count,
			 why);
}

/* The controller thread's CPU time (the view refresh's own, on a box whose
 * other processes stretch its wall time). */
static uint64_t view_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * ICE_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

void ctld_read_qps(struct ctld *d)
{
	uint64_t stale = 3 * d->cfg.qp_interval / ICE_NSEC_PER_MSEC;
	char key[ICE_RKEY_MAX], min[32], lim[16];
	redisReply **rep = NULL, **hr = NULL;
	uint32_t *hix = NULL; /* the host whose key each HMGET read */
	const struct cqp **oldv = NULL, **newv = NULL;
	struct cqp *nq = NULL;
	size_t nn = 0, cap = 0, nhm = 0;
	bool changed = false;
	uint64_t t0 = ice_now_ns(), t[6], c0 = view_cpu_ns();

	read_hosts(d);
	ctld_lease_keep(d); /* the first read of 10^4 hosts takes a second */
	t[0] = ice_now_ns();
	if (d->link.c == NULL || d->nhosts == 0)
		return;
	if (stale < QP_STALE_MIN_MS)
		stale = QP_STALE_MIN_MS;
	if (d->cfg.qp_stale != 0)
		stale = d->cfg.qp_stale / ICE_NSEC_PER_MSEC;
	snprintf(min, sizeof(min), "%" PRIu64, ice_wall_ms() - stale);
	snprintf(lim, sizeof(lim), "%u", d->cfg.host_qps_max + 1);
	rep = calloc(d->nhosts, sizeof(*rep));
	if (rep == NULL)
		return;
	for (uint32_t i = 0; i < d->nhosts; i++) {
		const char *argv[] = {"ZRANGEBYSCORE", key, min, "+inf", "LIMIT", "0", lim};

		ice_rkey_str(key, sizeof(key), ICE_RK_QPS, d->cfg.fabric, d->hosts[i].name, NULL);
		/* one more than the cap, to know a host went past it */
		ice_redis_appendv(&d->link, 7, argv, NULL);
	}
	if (ctld_pipe(d, d->nhosts, rep) < 0)
		goto out;
	t[1] = ice_now_ns();
	for (uint32_t i = 0; i < d->nhosts; i++) {
		if (rep[i]->type != REDIS_REPLY_ARRAY)
			continue;
		/* a host that files more QPs than any host has (phantoms, a
		 * runaway job) costs the view no more than the cap */
		if (rep[i]->elements > d->cfg.host_qps_max) {
			freeReplyObject(rep[i]->element[--rep[i]->elements]);
			qp_dropped(&d->view_capped, d->hosts[i].name,
				   "the host files more QP records than host_qps_max; its oldest "
				   "are read, the rest dropped");
		}
		nhm += rep[i]->elements;
	}
	hix = calloc(nhm + 1, sizeof(*hix));
	if (hix == NULL)
		goto out;
	nhm = 0;
	for (uint32_t i = 0; i < d->nhosts; i++)
		for (size_t j = 0; rep[i]->type == REDIS_REPLY_ARRAY && j < rep[i]->elements; j++) {
			/* argv, not a format: 10^5 of them per refresh */
			const char *argv[] = {"HMGET", key,	"local", "remote", "qpn",
					      "rqpn",  "sport", "rate",	 "ts_ms",  "closed_ms"};

			if (strchr(rep[i]->element[j]->str, '>') != NULL)
				continue; /* an unjoined BPF flow: no QP to steer */
			ice_rkey_str(key, sizeof(key), ICE_RK_QP, d->cfg.fabric, d->hosts[i].name,
				     rep[i]->element[j]->str);
			ice_redis_appendv(&d->link, 10, argv, NULL);
			hix[nhm++] = i;
		}
	hr = calloc(nhm + 1, sizeof(*hr));
	nq = calloc(nhm + 1, sizeof(*nq));
	if (hr == NULL || nq == NULL || ctld_pipe(d, nhm, hr) < 0)
		goto out;
	ctld_lease_keep(d); /* 10^5 records take a second */
	t[2] = ice_now_ns();
	for (size_t k = 0; k < nhm; k++) {
		redisReply *r = hr[k];
		struct in_addr la, ra;
		const struct topo_port *sp, *dp;
		struct cqp *q;

		if (r->type != REDIS_REPLY_ARRAY || r->elements != 8)
			continue;
		if (r->element[0]->str == NULL && r->element[1]->str == NULL &&
		    r->element[2]->str == NULL)
			continue; /* expired between ZRANGEBYSCORE and HMGET */
		/* the agent saw it go (destroyed, or its process died) after its
		 * last sample: no demand any more (a QPN reused later publishes a
		 * newer ts_ms) */
		if (r->element[7]->str != NULL &&
		    strtoull(r->element[7]->str, NULL, 10) >
			    (r->element[6]->str ? strtoull(r->element[6]->str, NULL, 10) : 0))
			continue;
		if (!qp_record_ok(r, &la, &ra)) {
			qp_dropped(&d->view_bad, d->hosts[hix[k]].name,
				   "malformed (expected local, remote: IPv4; qpn, rqpn: "
				   "0..2^24-1; sport: 0..65535)");
			continue;
		}
		sp = ctld_nic_by_addr(d, la.s_addr);
		dp = ctld_nic_by_addr(d, ra.s_addr);
		if (sp == NULL || dp == NULL || sp == dp)
			continue;
		/* a host writes only its own keys (Redis users), but what it
		 * writes there is its own word: a QP it files for another host's
		 * address would be planned, and steered, on that host */
		if (sp->node != d->hosts[hix[k]].node) {
			qp_dropped(&d->view_foreign, d->hosts[hix[k]].name,
				   "its local address is not one of this host's NICs");
			continue;
		}
		q = &nq[nn++];
		q->host = sp->node;
		q->src = sp->id;
		q->dst = dp->id;
		q->lip = la.s_addr;
		q->qpn = (uint32_t)strtoul(r->element[2]->str, NULL, 10);
		q->rqpn = r->element[3]->str ? (uint32_t)strtoul(r->element[3]->str, NULL, 10) : 0;
		q->sport_now =
			r->element[4]->str ? (uint16_t)strtoul(r->element[4]->str, NULL, 10) : 0;
		if (!rates_of(q, r->element[5]->str)) {
			memset(q, 0, sizeof(*q));
			nn--;
			qp_dropped(&d->view_bad, d->hosts[hix[k]].name,
				   "malformed rate (expected per-second figures from 0 to 10^13)");
			continue;
		}
		q->active = q->rate_bps >= (double)d->cfg.min_rate;
		q->route.idx = -1;
	}
	t[3] = ice_now_ns();
	/* carry the planned state; did the set of active QPs change? */
	oldv = qp_sorted(d->qps, d->nqps);
	newv = qp_sorted(nq, nn);
	if (oldv == NULL || newv == NULL)
		goto out;
	for (size_t i = 0; i < nn; i++) {
		struct cqp *q = &nq[i];
		const struct cqp *o = NULL;
		size_t j = qp_lower(oldv, d->nqps, q, false);

		if (j < d->nqps && qp_cmp3(oldv[j], q) == 0)
			o = oldv[j];
		/* A flow's demand is what it reached lately, not what it gets now:
		 * a flow slowed by congestion (or by its own plan) would otherwise
		 * look small, be packed onto a busy path, and slow down further. */
		q->peak_bps = q->rate_bps;
		if (o != NULL) {
			q->planned = o->planned;
			q->sport = o->sport;
			q->route = o->route;
			q->plan_bps = o->plan_bps;
			q->moved_tick = o->moved_tick;
			q->verdict = o->verdict;
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
		/* any new record of the same local QP that is active */
		for (size_t i = qp_lower(newv, nn, &d->qps[j], true);
		     i < nn && !found && newv[i]->lip == d->qps[j].lip &&
		     newv[i]->qpn == d->qps[j].qpn;
		     i++)
			found = newv[i]->active;
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
	t[4] = ice_now_ns();
	ctld_telem_host(d);
	t[5] = ice_now_ns();
	d->view_ns = t[5] - t0;
	d->view_cpu_ns = view_cpu_ns() - c0;
	ice_dbg(SUB,
		"view: %zu QPs of %u hosts in %.1f ms (CPU %.1f ms): hosts %.1f, QP indexes %.1f, "
		"records %.1f, parsed %.1f, matched %.1f, host signals %.1f",
		nn, d->nhosts, (double)d->view_ns / 1e6, (double)d->view_cpu_ns / 1e6,
		(double)(t[0] - t0) / 1e6, (double)(t[1] - t[0]) / 1e6, (double)(t[2] - t[1]) / 1e6,
		(double)(t[3] - t[2]) / 1e6, (double)(t[4] - t[3]) / 1e6,
		(double)(t[5] - t[4]) / 1e6);
	if (d->view_ns > d->view_max_ns)
		d->view_max_ns = d->view_ns;
	d->view_reads++;
out:
	free(oldv);
	free(newv);
	if (hr != NULL)
		ctld_freev(hr, nhm);
	if (rep != NULL && d->link.c != NULL)
		ctld_freev(rep, d->nhosts);
	free(hr);
	free(hix);
	free(rep);
	free(nq);
}
