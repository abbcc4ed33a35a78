// SPDX-License-Identifier: Apache-2.0
/*
 * icectl_serve.c: icectl serve, the live dashboard. One page (icectl/dash/,
 * embedded at build time) and JSON endpoints built by icectl's own readers,
 * over common/ice_http:
 *
 *   /api/config    fabric, the page's refresh period
 *   /api/topology  nodes and links: the topology file (--topology, else the
 *                  one the leader plans with, ctl:members), else what the
 *                  link and switch keys name
 *   /api/links     every directed link: measured load (the controller's
 *                  ctl:link, else the switch port's out-octets between two
 *                  of our readings), queue, CE, drops, planned load, and
 *                  whether it is down (a port's oper-status, the test bed's
 *                  links record)
 *   /api/status    icectl status's document
 *   /api/qps       icectl qps's document
 *   /api/jobs      per communicator (job): its collectives from the hosts'
 *                  event streams, busbw where a call's end is reported
 *   /api/timeline  plan publications (ctl:log) and policy changes
 *                  (policy:log), newest first
 *
 * Redis is read per request; a lost connection is opened again on the next
 * one and the request answers {"error": ...} meanwhile.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "icectl.h"
#include "ice_http.h"
#include "ice_time.h"
#include "topo.h"

#define JOB_CALLS    16	 /* a job's busbw: the mean of its last calls */
#define EVENTS_READ  500 /* per host, newest first */
#define TIMELINE_MAX 100

struct dash {
	struct ictl *x;
	char topo_file[256]; /* loaded from */
	struct topo *topo;
	char topo_err[512];
	json_t *ports; /* "<S>:<port>" -> {"o": out-octets, "t": ts_ms, "bps": rate} */
};

static volatile sig_atomic_t stop_serve;

static void on_stop(int sig)
{
	stop_serve = 1;
}

__attribute__((format(printf, 1, 2))) static json_t *err_doc(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return json_pack("{s:s}", "error", buf);
}

/* Reconnect when the connection broke; NULL or the error document. */
static json_t *redis_check(struct ictl *x)
{
	char why[256];

	if (x->c != NULL && x->c->err == 0)
		return NULL;
	if (x->c != NULL)
		redisFree(x->c);
	x->c = ice_redis_connect(x->redis, 2 * ICE_NSEC_PER_SEC, why, sizeof(why));
	if (x->c == NULL)
		return err_doc("Redis at %s: %s", x->redis, why);
	return NULL;
}

/* ---- topology */

static void topo_refresh(struct dash *d)
{
	char key[ICE_RKEY_MAX], file[256] = "";
	struct ice_cfg_err err = {0};
	redisReply *r;

	if (d->x->topology[0] != '\0') {
		snprintf(file, sizeof(file), "%s", d->x->topology);
	} else {
		/* the leader's, or any controller's */
		r = ictl_cmd(d->x, "HVALS %s", ictl_key(d->x, key, ICE_RK_CTL_MEMBERS, NULL, NULL));
		for (size_t i = 0; r != NULL && r->type == REDIS_REPLY_ARRAY && i < r->elements;
		     i++) {
			json_t *m = json_loads(r->element[i]->str, 0, NULL);

			if (ictl_str(m, "topology")[0] != '\0' &&
			    (file[0] == '\0' || strcmp(ictl_str(m, "role"), "leader") == 0))
				snprintf(file, sizeof(file), "%s", ictl_str(m, "topology"));
			json_decref(m);
		}
		if (r != NULL)
			freeReplyObject(r);
	}
	if (strcmp(file, d->topo_file) == 0)
		return;
	topo_free(d->topo);
	d->topo = NULL;
	d->topo_err[0] = '\0';
	snprintf(d->topo_file, sizeof(d->topo_file), "%s", file);
	if (file[0] == '\0')
		return;
	d->topo = topo_load(file, &err);
	if (d->topo == NULL) {
		ice_cfg_err_str(&err, d->topo_err, sizeof(d->topo_err));
		fprintf(stderr, "icectl serve: topology %s: %s\n", file, d->topo_err);
	}
}

static const char *node_of_port(const struct topo *t, uint32_t port)
{
	return t->nodes[t->ports[port].node].name;
}

static json_t *topology_doc(struct dash *d)
{
	json_t *doc = json_object(), *nodes = json_array(), *links = json_array();

	topo_refresh(d);
	json_object_set_new(doc, "fabric", json_string(d->x->fabric));
	if (d->topo != NULL) {
		const struct topo *t = d->topo;

		json_object_set_new(doc, "source", json_string("file"));
		json_object_set_new(doc, "file", json_string(d->topo_file));
		for (uint32_t i = 0; i < t->nnodes; i++)
			json_array_append_new(
				nodes,
				json_pack("{s:s, s:s, s:i, s:i}", "name", t->nodes[i].name, "kind",
					  t->nodes[i].kind == TOPO_HOST ? "host" : "switch", "tier",
					  (int)t->nodes[i].tier, "pod", (int)t->nodes[i].pod));
		for (uint32_t i = 0; i < t->nlinks; i++) {
			char name[2 * TOPO_NAME_MAX + 2];

			topo_link_name(t, i, name, sizeof(name));
			json_array_append_new(links,
					      json_pack("{s:s, s:s, s:s, s:I}", "link", name, "a",
							node_of_port(t, t->links[i].a), "b",
							node_of_port(t, t->links[i].b), "rate_bps",
							(json_int_t)t->links[i].rate_bps));
		}
	} else {
		/* no file: the links the controller and the switches name; tiers
		 * from the hosts up (a node without switch ports is a host) */
		json_t *ld = ictl_links_doc(d->x), *l, *sw, *tier = json_object(), *v;
		const char *k;
		size_t i;
		bool more = true;

		json_object_set_new(doc, "source", json_string("redis"));
		json_object_set_new(
			doc, "note",
			json_string(d->topo_err[0] != '\0'
					    ? d->topo_err
					    : "no topology file (--topology, or a "
					      "controller in ctl:members): nodes and "
					      "links from the ctl:link and switch keys, "
					      "rates unknown"));
		sw = json_object_get(ld, "switch_ports");
		json_array_foreach(json_object_get(ld, "links"), i, l)
		{
			if (strcmp(ictl_str(l, "dir"), "up") != 0)
				continue;
			json_array_append_new(
				links, json_pack("{s:s, s:s, s:s}", "link", ictl_str(l, "link"),
						 "a", ictl_str(l, "from"), "b", ictl_str(l, "to")));
			for (int e = 0; e < 2; e++) {
				const char *n = ictl_str(l, e ? "to" : "from");
				bool is_sw = false;

				json_object_foreach(sw, k, v) if (strncmp(k, n, strlen(n)) == 0 &&
								  k[strlen(n)] == ':') is_sw = true;
				if (json_object_get(tier, n) == NULL)
					json_object_set_new(tier, n, json_integer(is_sw ? -1 : 0));
			}
		}
		/* a switch's tier: one above its lowest neighbour with a tier */
		while (more) {
			more = false;
			json_array_foreach(links, i, l)
			{
				json_int_t ta = json_integer_value(
						   json_object_get(tier, ictl_str(l, "a"))),
					   tb = json_integer_value(
						   json_object_get(tier, ictl_str(l, "b")));

				if (tb < 0 && ta >= 0) {
					json_object_set_new(tier, ictl_str(l, "b"),
							    json_integer(ta + 1));
					more = true;
				} else if (ta < 0 && tb >= 0) {
					json_object_set_new(tier, ictl_str(l, "a"),
							    json_integer(tb + 1));
					more = true;
				}
			}
		}
		json_object_foreach(tier, k, v) json_array_append_new(
			nodes, json_pack("{s:s, s:s, s:I, s:i}", "name", k, "kind",
					 json_integer_value(v) == 0 ? "host" : "switch", "tier",
					 json_integer_value(v), "pod", 0));
		json_decref(tier);
		json_decref(ld);
	}
	json_object_set_new(doc, "nodes", nodes);
	json_object_set_new(doc, "links", links);
	return doc;
}

/* ---- links */

/* The switch port that sends from -> to: its record in sw (by the record's
 * peer, else the port's name), or NULL. */
static json_t *port_of(json_t *sw, const char *from, const char *to, char *id, size_t len)
{
	const char *k;
	json_t *rec;

	json_object_foreach(sw, k, rec)
	{
		size_t n = strlen(from);
		const char *peer = ictl_str(rec, "peer");

		if (strncmp(k, from, n) != 0 || k[n] != ':')
			continue;
		if (strcmp(peer[0] ? peer : k + n + 1, to) == 0) {
			snprintf(id, len, "%s", k);
			return rec;
		}
	}
	return NULL;
}

/* bytes/s the port sent between our last two readings of it; -1: unknown */
static double port_rate(struct dash *d, const char *id, const json_t *rec)
{
	json_t *p = json_object_get(d->ports, id);
	double o = ictl_num(rec, "out-octets"), t = ictl_num(rec, "ts_ms");

	if (json_object_get(rec, "out-octets") == NULL || t <= 0)
		return -1;
	if (p == NULL) {
		json_object_set_new(d->ports, id,
				    json_pack("{s:f, s:f, s:f}", "o", o, "t", t, "bps", -1.0));
		return -1;
	}
	if (t - ictl_num(p, "t") >= 200 || o < ictl_num(p, "o")) {
		double bps = o >= ictl_num(p, "o") && t > ictl_num(p, "t")
				     ? (o - ictl_num(p, "o")) * 1e3 / (t - ictl_num(p, "t"))
				     : -1;

		json_object_set_new(p, "o", json_real(o));
		json_object_set_new(p, "t", json_real(t));
		json_object_set_new(p, "bps", json_real(bps));
	}
	return ictl_num(p, "bps");
}

static void set_num(json_t *o, const char *k, const json_t *src, const char *sk)
{
	const json_t *v = json_object_get(src, sk);

	if (v != NULL)
		json_object_set_new(o, k, json_real(ictl_num(src, sk)));
}

static json_t *dir_doc(struct dash *d, json_t *ld, json_t *marks, const char *link,
		       const char *from, const char *to, double rate_bps)
{
	json_t *o = json_pack("{s:s, s:s, s:s}", "link", link, "from", from, "to", to), *c = NULL,
	       *l, *rec, *rrec, *mark;
	char id[160] = "", rid[160] = "", why[256] = "";
	const char *oper = NULL;
	double bps = -1;
	size_t i;

	json_array_foreach(json_object_get(ld, "links"), i,
			   l) if (strcmp(ictl_str(l, "link"), link) == 0 &&
				  strcmp(ictl_str(l, "from"), from) == 0) c = l;
	rec = port_of(json_object_get(ld, "switch_ports"), from, to, id, sizeof(id));
	rrec = port_of(json_object_get(ld, "switch_ports"), to, from, rid, sizeof(rid));
	json_object_set_new(o, "dir", json_string(c != NULL ? ictl_str(c, "dir") : ""));
	if (rate_bps > 0)
		json_object_set_new(o, "rate_bps", json_real(rate_bps));
	/* measured: the controller's reading of the switch, else ours */
	if (c != NULL && json_is_number(json_object_get(c, "measured"))) {
		bps = ictl_num(c, "measured");
		json_object_set_new(o, "measured_by", json_string("controller"));
	} else if (rec != NULL && (bps = port_rate(d, id, rec)) >= 0) {
		json_object_set_new(o, "measured_by", json_string("switch counters"));
	}
	if (rec != NULL && c == NULL)
		port_rate(d, id, rec); /* keep our reading current */
	json_object_set(o, "measured", bps >= 0 ? json_real(bps) : json_null());
	if (bps >= 0 && rate_bps > 0)
		json_object_set_new(o, "util", json_real(bps * 8 / rate_bps));
	if (c != NULL) {
		set_num(o, "planned", c, "planned");
		set_num(o, "unplanned", c, "unplanned");
		set_num(o, "capacity", c, "capacity");
		set_num(o, "ce", c, "ce");
		json_object_set_new(o, "ctl_state", json_string(ictl_str(c, "state")));
	}
	if (rec != NULL) {
		json_object_set_new(o, "port", json_string(id));
		set_num(o, "queue", rec, "avg-queue-len");
		if (json_object_get(o, "queue") == NULL)
			set_num(o, "queue", rec, "queue-len");
		set_num(o, "max_queue", rec, "max-queue-len");
		set_num(o, "drops", rec, "out-discards");
		set_num(o, "ce_total", rec, "ecn-marked-pkts");
		oper = ictl_str(rec, "oper-status");
	} else if (c != NULL) {
		set_num(o, "queue", c, "avg_queue");
	}
	/* down: either end's port not UP (no carrier is both ways), or the
	 * test bed's own record */
	if (oper != NULL && oper[0] && strcmp(oper, "UP") != 0)
		snprintf(why, sizeof(why), "port %s oper-status %s", id, oper);
	else if (rrec != NULL && ictl_str(rrec, "oper-status")[0] &&
		 strcmp(ictl_str(rrec, "oper-status"), "UP") != 0)
		snprintf(why, sizeof(why), "port %s oper-status %s", rid,
			 ictl_str(rrec, "oper-status"));
	mark = json_object_get(marks, link);
	if (why[0] == '\0' && strcmp(ictl_str(mark, "state"), "down") == 0)
		snprintf(why, sizeof(why), "ice-fabric link: down");
	json_object_set_new(o, "oper", oper != NULL && oper[0] ? json_string(oper) : json_null());
	json_object_set_new(o, "down", json_boolean(why[0] != '\0'));
	if (why[0] != '\0')
		json_object_set_new(o, "down_why", json_string(why));
	return o;
}

static json_t *links_api(struct dash *d)
{
	char key[ICE_RKEY_MAX];
	json_t *ld, *topo, *marks, *out = json_array(), *l, *doc;
	size_t i;

	ld = ictl_links_doc(d->x);
	if (ld == NULL) {
		json_decref(out);
		return err_doc("Redis at %s: %s", d->x->redis, "reading the links failed");
	}
	marks = ictl_hgetall(d->x, ictl_key(d->x, key, ICE_RK_LINKS, NULL, NULL));
	/* the test bed's record: {"state":"up"|"down",...} per link name */
	{
		const char *k;
		json_t *v, *parsed = json_object();

		json_object_foreach(marks, k, v) json_object_set_new(
			parsed, k, json_loads(json_string_value(v), 0, NULL) ?: json_object());
		json_decref(marks);
		marks = parsed;
	}
	topo = topology_doc(d);
	json_array_foreach(json_object_get(topo, "links"), i, l)
	{
		double rate = ictl_num(l, "rate_bps");

		json_array_append_new(out, dir_doc(d, ld, marks, ictl_str(l, "link"),
						   ictl_str(l, "a"), ictl_str(l, "b"), rate));
		json_array_append_new(out, dir_doc(d, ld, marks, ictl_str(l, "link"),
						   ictl_str(l, "b"), ictl_str(l, "a"), rate));
	}
	doc = json_pack("{s:s, s:I, s:o}", "fabric", d->x->fabric, "ts_ms",
			(json_int_t)ictl_now_ms(), "links", out);
	json_decref(topo);
	json_decref(marks);
	json_decref(ld);
	return doc;
}

/* ---- jobs: collectives and busbw from the hosts' event streams */

/* nccl-tests' bus bandwidth factor of an operation over n ranks */
static double busbw_factor(const char *op, int n)
{
	if (n < 1)
		return 0;
	if (strcmp(op, "allreduce") == 0)
		return 2.0 * (n - 1) / n;
	if (strcmp(op, "reducescatter") == 0 || strcmp(op, "allgather") == 0 ||
	    strcmp(op, "alltoall") == 0)
		return (double)(n - 1) / n;
	return 1;
}

static json_t *job_of(json_t *jobs, const json_t *ev)
{
	const char *comm = ictl_str(ev, "comm");
	json_t *j = json_object_get(jobs, comm);

	if (j == NULL) {
		j = json_pack("{s:s, s:s, s:I, s:o, s:o, s:o, s:I}", "comm", comm, "job",
			      ictl_str(ev, "job"), "nranks",
			      json_integer_value(json_object_get(ev, "nranks")), "hosts",
			      json_object(), "ops", json_object(), "calls", json_array(), "ends",
			      (json_int_t)0);
		json_object_set_new(jobs, comm, j);
	}
	if (ictl_str(j, "job")[0] == '\0' && ictl_str(ev, "job")[0] != '\0')
		json_object_set_new(j, "job", json_string(ictl_str(ev, "job")));
	return j;
}

static void job_events(struct dash *d, json_t *jobs, const char *host)
{
	char key[ICE_RKEY_MAX], sk[160];
	json_t *list = ictl_xrevrange(d->x, ictl_key(d->x, key, ICE_RK_EVENTS, host, NULL),
				      EVENTS_READ),
	       *starts = json_object();

	/* oldest first: a coll_end closes the last coll_start of its sender,
	 * communicator, rank and operation */
	for (size_t i = json_array_size(list); i-- > 0;) {
		json_t *ev = json_loads(ictl_str(json_array_get(list, i), "json"), 0, NULL), *j,
		       *st, *ops;
		const char *kind = ictl_str(ev, "kind"), *op = ictl_str(ev, "op");

		if (!json_is_object(ev) || ictl_str(ev, "comm")[0] == '\0') {
			json_decref(ev);
			continue;
		}
		j = job_of(jobs, ev);
		json_object_set_new(json_object_get(j, "hosts"), host, json_true());
		snprintf(sk, sizeof(sk), "%" JSON_INTEGER_FORMAT "/%s/%" JSON_INTEGER_FORMAT "/%s",
			 json_integer_value(json_object_get(ev, "pid")), ictl_str(ev, "comm"),
			 json_integer_value(json_object_get(ev, "rank")), op);
		if (strcmp(kind, "coll_start") == 0) {
			ops = json_object_get(j, "ops");
			json_object_set_new(
				ops, op,
				json_integer(json_integer_value(json_object_get(ops, op)) + 1));
			json_object_set(starts, sk, ev);
		} else if (strcmp(kind, "coll_end") == 0 &&
			   (st = json_object_get(starts, sk)) != NULL) {
			double dt = (double)(json_integer_value(json_object_get(ev, "ts_ns")) -
					     json_integer_value(json_object_get(st, "ts_ns"))) /
				    1e9,
			       bytes = (double)json_integer_value(json_object_get(st, "bytes"));
			int n = (int)json_integer_value(json_object_get(st, "nranks"));

			if (dt > 0 && bytes > 0) {
				json_array_append_new(
					json_object_get(j, "calls"),
					json_pack("{s:s, s:s, s:i, s:I, s:I, s:f, s:f, s:f}", "op",
						  op, "host", host, "rank",
						  (int)json_integer_value(
							  json_object_get(ev, "rank")),
						  "bytes", (json_int_t)bytes, "ts_ms",
						  (json_int_t)(json_integer_value(json_object_get(
								       ev, "ts_ns")) /
							       1000000),
						  "time_us", dt * 1e6, "algbw_gbps",
						  bytes / dt / 1e9, "busbw_gbps",
						  bytes / dt / 1e9 * busbw_factor(op, n)));
			}
			json_object_del(starts, sk);
		}
		json_decref(ev);
	}
	json_decref(starts);
	json_decref(list);
}

static int by_ts_desc(const void *a, const void *b)
{
	json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "ts_ms")),
		   y = json_integer_value(json_object_get(*(json_t *const *)b, "ts_ms"));

	return x < y ? 1 : x > y ? -1 : 0;
}

/* the array sorted newest first, cut to max */
static json_t *sorted_desc(json_t *a, size_t max)
{
	size_t n = json_array_size(a);
	json_t **v = calloc(n ? n : 1, sizeof(*v)), *out = json_array();

	for (size_t i = 0; v != NULL && i < n; i++)
		v[i] = json_array_get(a, i);
	if (v != NULL)
		qsort(v, n, sizeof(*v), by_ts_desc);
	for (size_t i = 0; v != NULL && i < n && i < max; i++)
		json_array_append(out, v[i]);
	free(v);
	json_decref(a);
	return out;
}

static json_t *jobs_api(struct dash *d)
{
	char key[ICE_RKEY_MAX];
	json_t *hosts =
		ictl_members(d->x, "SMEMBERS", ictl_key(d->x, key, ICE_RK_HOSTS, NULL, NULL));
	json_t *jobs = json_object(), *out = json_array(), *j;
	const char *k;
	size_t i;

	if (hosts == NULL) {
		json_decref(jobs);
		json_decref(out);
		return err_doc("Redis at %s: %s", d->x->redis, "reading the hosts failed");
	}
	json_array_foreach(hosts, i, j) job_events(d, jobs, json_string_value(j));
	json_object_foreach(jobs, k, j)
	{
		json_t *calls = sorted_desc(json_incref(json_object_get(j, "calls")), JOB_CALLS),
		       *c, *hl = json_array(), *hv;
		const char *hk;
		double sum = 0;
		size_t n;

		json_array_foreach(calls, n, c) sum += ictl_num(c, "busbw_gbps");
		json_object_foreach(json_object_get(j, "hosts"), hk, hv)
			json_array_append_new(hl, json_string(hk));
		json_object_set_new(j, "hosts", hl);
		json_object_set_new(j, "calls", calls);
		json_object_del(j, "ends");
		if (json_array_size(calls) > 0) {
			json_object_set_new(j, "busbw_gbps",
					    json_real(sum / json_array_size(calls)));
		} else {
			json_object_set_new(j, "busbw_gbps", json_null());
			json_object_set_new(
				j, "busbw_note",
				json_string("not available: no call of this job reported its end "
					    "(coll_end: the included transport and the NCCL "
					    "profiler plugin report it, the NCCL API preload "
					    "only starts)"));
		}
		json_array_append(out, j);
	}
	json_decref(jobs);
	json_decref(hosts);
	return json_pack("{s:s, s:o, s:s}", "fabric", d->x->fabric, "jobs", out, "busbw",
			 "per completed call, nccl-tests' definition: bytes / (end - start) "
			 "x 2(n-1)/n (all-reduce), (n-1)/n (all-gather, reduce-scatter, "
			 "all-to-all), 1 (others); a job's figure is the mean of its last 16 "
			 "calls");
}

/* ---- timeline */

static json_t *timeline_api(struct dash *d)
{
	char key[ICE_RKEY_MAX];
	json_t *plans = ictl_xrevrange(d->x, ictl_key(d->x, key, ICE_RK_CTL_LOG, NULL, NULL),
				       TIMELINE_MAX),
	       *pol = ictl_xrevrange(d->x, ictl_key(d->x, key, ICE_RK_POLICY_LOG, NULL, NULL),
				     TIMELINE_MAX),
	       *all = json_array(), *e;
	size_t i;

	if (plans == NULL || pol == NULL) {
		json_decref(plans);
		json_decref(pol);
		json_decref(all);
		return err_doc("Redis at %s: %s", d->x->redis, "reading the logs failed");
	}
	json_array_foreach(plans, i, e) json_array_append_new(
		all, json_pack("{s:s, s:I, s:s, s:s, s:s}", "kind", "plan", "ts_ms",
			       (json_int_t)ictl_num(e, "ts_ms"), "epoch", ictl_str(e, "epoch"),
			       "by", ictl_str(e, "id"), "hosts", ictl_str(e, "hosts")));
	json_array_foreach(pol, i, e) json_array_append_new(
		all, json_pack("{s:s, s:I, s:s, s:s, s:s, s:s}", "kind", "policy", "ts_ms",
			       (json_int_t)ictl_num(e, "ts_ms"), "action", ictl_str(e, "action"),
			       "version", ictl_str(e, "version"), "by", ictl_str(e, "user"),
			       "source", ictl_str(e, "source")));
	json_decref(plans);
	json_decref(pol);
	return json_pack("{s:s, s:I, s:o}", "fabric", d->x->fabric, "ts_ms",
			 (json_int_t)ictl_now_ms(), "events", sorted_desc(all, TIMELINE_MAX));
}

/* ---- HTTP */

static json_t *api(struct dash *d, const char *what)
{
	json_t *e;

	if (strcmp(what, "config") == 0)
		return json_pack("{s:s, s:s, s:I}", "fabric", d->x->fabric, "redis", d->x->redis,
				 "refresh_ms", (json_int_t)(d->x->refresh_ns / ICE_NSEC_PER_MSEC));
	e = redis_check(d->x);
	if (e != NULL)
		return e;
	if (strcmp(what, "topology") == 0)
		return topology_doc(d);
	if (strcmp(what, "links") == 0)
		return links_api(d);
	if (strcmp(what, "status") == 0)
		return ictl_status_doc(d->x);
	if (strcmp(what, "qps") == 0)
		return json_pack("{s:s, s:o}", "fabric", d->x->fabric, "qps",
				 ictl_qps_doc(d->x, "", NULL));
	if (strcmp(what, "jobs") == 0)
		return jobs_api(d);
	if (strcmp(what, "timeline") == 0)
		return timeline_api(d);
	return NULL;
}

static char *dash_http(void *ctx, const char *path, const char **ctype)
{
	struct dash *d = ctx;

	if (strncmp(path, "/api/", 5) == 0) {
		json_t *doc = api(d, path + 5);
		char *s;

		if (doc == NULL)
			return NULL;
		s = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(10));
		json_decref(doc);
		*ctype = "application/json";
		return s;
	}
	for (size_t i = 0; i < ictl_dash_nfiles; i++)
		if (strcmp(path, ictl_dash_files[i].path) == 0) {
			*ctype = ictl_dash_files[i].ctype;
			return strndup(ictl_dash_files[i].data, ictl_dash_files[i].len);
		}
	return NULL;
}

int ictl_serve(struct ictl *x)
{
	struct dash d = {.x = x, .ports = json_object()};
	struct ice_http *h;
	int ret = ictl_open(x);

	if (ret != 0) {
		json_decref(d.ports);
		return ret;
	}
	h = ice_http_new(x->listen);
	if (h == NULL) {
		fprintf(stderr, "icectl serve: cannot listen on %s: %s\n", x->listen,
			errno == EINVAL ? "expected ADDR:PORT, :PORT or PORT" : strerror(errno));
		json_decref(d.ports);
		return ICTL_EXIT_REDIS;
	}
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	signal(SIGPIPE, SIG_IGN);
	{
		const char *c = strrchr(x->listen, ':');
		int hl = c != NULL ? (int)(c - x->listen) : 0;

		printf("icectl serve: fabric %s, Redis %s: http://%.*s:%u/\n", x->fabric, x->redis,
		       hl > 0 ? hl : 9, hl > 0 ? x->listen : "127.0.0.1", ice_http_port(h));
	}
	fflush(stdout);
	while (!stop_serve)
		ice_http_wait(h, 200 * ICE_NSEC_PER_MSEC, dash_http, &d);
	ice_http_free(h);
	topo_free(d.topo);
	json_decref(d.ports);
	return 0;
}
