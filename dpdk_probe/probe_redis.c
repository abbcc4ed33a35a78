// SPDX-License-Identifier: Apache-2.0
/* ice-probe's Redis keys (docs/redis-schema.md, "Probe"). One pipeline per
 * write; a failed connection is retried at a later write (ice_redis back-off). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "ice_log.h"
#include "ice_redis.h"
#include "ice_time.h"
#include "probe_internal.h"

#define PROBE_STREAM_CAP 1000

struct probe_redis {
	const struct probe_cfg *cfg;
	struct ice_redis link;
	char host[64];
	char notice_id[48]; /* the last rehash notice read; "" before the first read */
	bool notice_err_logged;
};

/* Connected, or -ENOTCONN (this attempt failed or the back-off runs). */
static int redis_connect(struct probe_redis *r)
{
	int ret = ice_redis_up(&r->link, ice_now_ns());

	if (ret == -ECONNREFUSED)
		ice_warn(PROBE_LOG, "redis %s: %s", r->cfg->redis, r->link.why);
	return ret < 0 ? -ENOTCONN : 0;
}

struct probe_redis *probe_redis_new(const struct probe_cfg *cfg)
{
	struct probe_redis *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->cfg = cfg;
	ice_redis_init(&r->link, cfg->redis, ICE_NSEC_PER_SEC);
	snprintf(r->host, sizeof(r->host), "%s", cfg->host[0] ? cfg->host : cfg->src);
	redis_connect(r);
	return r;
}

void probe_redis_free(struct probe_redis *r)
{
	if (r == NULL)
		return;
	ice_redis_fini(&r->link);
	free(r);
}

/* Read n replies; drop the connection when it broke. -EIO on an error. */
static int redis_drain(struct probe_redis *r, int n)
{
	uint32_t errors = 0;

	if (ice_redis_pipe(&r->link, (size_t)n, NULL, &errors) < 0) {
		ice_redis_down(&r->link, ice_now_ns(), NULL);
		ice_warn(PROBE_LOG, "redis: %s", r->link.why);
		return -EIO;
	}
	return errors ? -EIO : 0;
}

static int rkey(const struct probe_redis *r, enum ice_rkey k, const char *pair, char *buf,
		size_t len)
{
	return ice_rkey(buf, len, k, r->cfg->fabric, r->host, pair);
}

static void pair_key(const struct probe_pathmap *m, char *buf, size_t len)
{
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &m->src, a, sizeof(a));
	inet_ntop(AF_INET, &m->dst, b, sizeof(b));
	snprintf(buf, len, "%s>%s", a, b);
}

int probe_redis_map(struct probe_redis *r, const struct probe_pathmap *m)
{
	char pair[40], key[ICE_RKEY_MAX], key2[ICE_RKEY_MAX], key3[ICE_RKEY_MAX];
	char key4[ICE_RKEY_MAX], a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
	json_t *j;
	char *txt;
	int ret;

	if (redis_connect(r) < 0)
		return -ENOTCONN;
	pair_key(m, pair, sizeof(pair));
	inet_ntop(AF_INET, &m->src, a, sizeof(a));
	inet_ntop(AF_INET, &m->dst, b, sizeof(b));
	j = probe_pathmap_json(m, true);
	txt = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (txt == NULL)
		return -ENOMEM;
	if (rkey(r, ICE_RK_PROBE_MAP, pair, key, sizeof(key)) < 0 ||
	    rkey(r, ICE_RK_PROBE_PAIRS, NULL, key2, sizeof(key2)) < 0 ||
	    rkey(r, ICE_RK_PROBE_HOSTS, NULL, key3, sizeof(key3)) < 0 ||
	    rkey(r, ICE_RK_PROBE_VERSION, NULL, key4, sizeof(key4)) < 0) {
		free(txt);
		return -EINVAL;
	}
	ice_redis_appendf(&r->link,
			  "HSET %s src %s dst %s ts_ms %llu probes %u npaths %u nports %u "
			  "json %s",
			  key, a, b, (unsigned long long)m->ts_ms, m->probes, m->npaths, m->nports,
			  txt);
	ice_redis_appendf(&r->link, "ZADD %s %llu %s", key2, (unsigned long long)m->ts_ms, pair);
	ice_redis_appendf(&r->link, "SADD %s %s", key3, r->host);
	/* last: the controller polls this counter and reads the maps when it moves */
	ice_redis_appendf(&r->link, "INCR %s", key4);
	free(txt);
	ret = redis_drain(r, 4);
	return ret;
}

int probe_redis_health(struct probe_redis *r, const struct probe_pathmap *m, json_t *rec)
{
	char pair[40], key[ICE_RKEY_MAX], tskey[ICE_RKEY_MAX], mkey[ICE_RKEY_MAX];
	json_t *paths = json_object_get(rec, "paths");
	char *txt;
	int n = 0;

	if (redis_connect(r) < 0)
		return -ENOTCONN;
	pair_key(m, pair, sizeof(pair));
	txt = json_dumps(rec, JSON_COMPACT);
	if (txt == NULL)
		return -ENOMEM;
	if (rkey(r, ICE_RK_PROBE_HEALTH, pair, key, sizeof(key)) < 0 ||
	    rkey(r, ICE_RK_PROBE_HEALTH_TS, pair, tskey, sizeof(tskey)) < 0 ||
	    rkey(r, ICE_RK_PROBE_MAP, pair, mkey, sizeof(mkey)) < 0) {
		free(txt);
		return -EINVAL;
	}
	ice_redis_appendf(&r->link, "HSET %s ts_ms %lld seq %lld map_age_ms %lld json %s", key,
			  json_integer_value(json_object_get(rec, "ts_ms")),
			  json_integer_value(json_object_get(rec, "seq")),
			  json_integer_value(json_object_get(rec, "map_age_ms")), txt);
	n++;
	for (size_t i = 0; i < json_array_size(paths); i++) {
		json_t *p = json_array_get(paths, i);
		char *pt = json_dumps(p, JSON_COMPACT);

		if (pt == NULL)
			continue;
		ice_redis_appendf(&r->link, "HSET %s path:%s %s", key,
				  json_string_value(json_object_get(p, "path")), pt);
		free(pt);
		n++;
	}
	ice_redis_appendf(&r->link, "XADD %s MAXLEN ~ %d * json %s", tskey, PROBE_STREAM_CAP, txt);
	n++;
	/* the map's age, refreshed each interval */
	ice_redis_appendf(&r->link, "HSET %s age_ms %lld", mkey,
			  json_integer_value(json_object_get(rec, "map_age_ms")));
	n++;
	free(txt);
	return redis_drain(r, n);
}

int probe_redis_pinglist(struct probe_redis *r, const struct topo *t, struct probe_pinglist *pl,
			 struct ice_cfg_err *err)
{
	char key[ICE_RKEY_MAX], name[ICE_RKEY_MAX + 8];
	redisReply *rep;
	int ret;

	memset(err, 0, sizeof(*err));
	if (redis_connect(r) < 0)
		return -ENOTCONN;
	if (rkey(r, ICE_RK_PROBE_PINGLIST, NULL, key, sizeof(key)) < 0)
		return -EINVAL;
	rep = ice_redis_cmdf(&r->link, "GET %s", key);
	if (rep == NULL) {
		ice_redis_down(&r->link, ice_now_ns(), NULL);
		return -EIO;
	}
	if (rep->type != REDIS_REPLY_STRING) {
		freeReplyObject(rep);
		return -ENOENT;
	}
	snprintf(name, sizeof(name), "redis:%s", key);
	ret = probe_pinglist_parse(name, rep->str, rep->len, t, pl, err);
	freeReplyObject(rep);
	return ret;
}

/* ---- rehash notices: ice:<F>:probe:rehash ------------------------------------ */

int probe_redis_notice_send(struct probe_redis *r, const char *sw, const struct probe_pathmap *m,
			    uint16_t port, uint32_t hop, uint64_t ts_ms)
{
	char key[ICE_RKEY_MAX], pair[40];

	if (redis_connect(r) < 0)
		return -ENOTCONN;
	if (rkey(r, ICE_RK_PROBE_REHASH, NULL, key, sizeof(key)) < 0)
		return -EINVAL;
	pair_key(m, pair, sizeof(pair));
	ice_redis_appendf(&r->link,
			  "XADD %s MAXLEN ~ %d * host %s switch %s ts_ms %llu pair %s port %u "
			  "hop %u",
			  key, PROBE_STREAM_CAP, r->host, sw, (unsigned long long)ts_ms, pair,
			  (unsigned)port, hop);
	return redis_drain(r, 1);
}

/* One stream entry's fields into n; n->bad when the switch or the time is
 * missing or does not fit. */
static void notice_parse(const redisReply *f, struct probe_notice *n)
{
	bool has_sw = false, has_ts = false;

	memset(n, 0, sizeof(*n));
	if (f == NULL || f->type != REDIS_REPLY_ARRAY) {
		n->bad = true;
		return;
	}
	for (size_t i = 0; i + 1 < f->elements; i += 2) {
		const redisReply *k = f->element[i], *v = f->element[i + 1];
		char *end;

		if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
			continue;
		if (strcmp(k->str, "host") == 0) {
			snprintf(n->host, sizeof(n->host), "%s", v->str);
		} else if (strcmp(k->str, "switch") == 0) {
			has_sw = v->len > 0 && v->len < sizeof(n->sw);
			snprintf(n->sw, sizeof(n->sw), "%s", v->str);
		} else if (strcmp(k->str, "ts_ms") == 0) {
			errno = 0;
			n->ts_ms = strtoull(v->str, &end, 10);
			has_ts = errno == 0 && end != v->str && *end == '\0';
		}
	}
	n->bad = !has_sw || !has_ts;
}

int probe_redis_notice_read(struct probe_redis *r, struct probe_notice *out, int max)
{
	char key[ICE_RKEY_MAX];
	redisReply *rep;
	int n = 0;

	if (redis_connect(r) < 0)
		return -ENOTCONN;
	if (rkey(r, ICE_RK_PROBE_REHASH, NULL, key, sizeof(key)) < 0)
		return -EINVAL;
	if (r->notice_id[0] == '\0') { /* the first read: from the stream's end on */
		rep = ice_redis_cmdf(&r->link, "XREVRANGE %s + - COUNT 1", key);
		if (rep == NULL) {
			ice_redis_down(&r->link, ice_now_ns(), NULL);
			return -EIO;
		}
		if (rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 &&
		    rep->element[0]->type == REDIS_REPLY_ARRAY && rep->element[0]->elements == 2 &&
		    rep->element[0]->element[0]->type == REDIS_REPLY_STRING)
			snprintf(r->notice_id, sizeof(r->notice_id), "%s",
				 rep->element[0]->element[0]->str);
		else if (rep->type == REDIS_REPLY_ARRAY)
			snprintf(r->notice_id, sizeof(r->notice_id), "0-0");
		else if (rep->type == REDIS_REPLY_ERROR && !r->notice_err_logged) {
			ice_warn(PROBE_LOG, "redis: reading the rehash notices: %s", rep->str);
			r->notice_err_logged = true;
		}
		freeReplyObject(rep);
		return 0;
	}
	rep = ice_redis_cmdf(&r->link, "XREAD COUNT %d STREAMS %s %s", max, key, r->notice_id);
	if (rep == NULL) {
		ice_redis_down(&r->link, ice_now_ns(), NULL);
		return -EIO;
	}
	if (rep->type == REDIS_REPLY_ERROR) { /* e.g. a user without the key: say so once */
		if (!r->notice_err_logged)
			ice_warn(PROBE_LOG, "redis: reading the rehash notices: %s", rep->str);
		r->notice_err_logged = true;
		freeReplyObject(rep);
		return -EIO;
	}
	/* [[key, [[id, [field, value, ...]], ...]]], or nil when nothing is new */
	if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 &&
	    rep->element[0]->type == REDIS_REPLY_ARRAY && rep->element[0]->elements == 2 &&
	    rep->element[0]->element[1]->type == REDIS_REPLY_ARRAY) {
		const redisReply *ents = rep->element[0]->element[1];

		for (size_t i = 0; i < ents->elements && n < max; i++) {
			const redisReply *e = ents->element[i];

			if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
			    e->element[0]->type != REDIS_REPLY_STRING)
				continue;
			snprintf(r->notice_id, sizeof(r->notice_id), "%s", e->element[0]->str);
			notice_parse(e->element[1], &out[n]);
			if (!out[n].bad && strcmp(out[n].host, r->host) == 0)
				continue; /* our own */
			n++;
		}
	}
	freeReplyObject(rep);
	return n;
}
