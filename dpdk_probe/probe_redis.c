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
