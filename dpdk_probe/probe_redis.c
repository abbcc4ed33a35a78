// SPDX-License-Identifier: Apache-2.0
/* ice-probe's Redis keys (docs/redis-schema.md, "Probe"). One pipeline per
 * write; a failed connection is retried at the next write. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "ice_log.h"
#include "ice_time.h"
#include "probe_internal.h"

#define PROBE_STREAM_CAP 1000

struct probe_redis {
	const struct probe_cfg *cfg;
	redisContext *c;
	char host[64];
	uint64_t next_try_ns;
};

static int redis_connect(struct probe_redis *r)
{
	struct timeval tv = {1, 0};
	char addr[128], *colon;

	if (r->c != NULL)
		return 0;
	if (ice_now_ns() < r->next_try_ns)
		return -EAGAIN;
	snprintf(addr, sizeof(addr), "%s", r->cfg->redis);
	colon = strrchr(addr, ':');
	if (addr[0] == '/' || colon == NULL) {
		r->c = redisConnectUnixWithTimeout(addr, tv);
	} else {
		*colon = '\0';
		r->c = redisConnectWithTimeout(addr, atoi(colon + 1), tv);
	}
	if (r->c == NULL || r->c->err) {
		ice_warn(PROBE_LOG, "redis %s: %s", r->cfg->redis,
			 r->c != NULL ? r->c->errstr : "out of memory");
		redisFree(r->c);
		r->c = NULL;
		r->next_try_ns = ice_now_ns() + ICE_NSEC_PER_SEC;
		return -ECONNREFUSED;
	}
	redisSetTimeout(r->c, tv);
	return 0;
}

struct probe_redis *probe_redis_new(const struct probe_cfg *cfg)
{
	struct probe_redis *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->cfg = cfg;
	snprintf(r->host, sizeof(r->host), "%s", cfg->host[0] ? cfg->host : cfg->src);
	redis_connect(r);
	return r;
}

void probe_redis_free(struct probe_redis *r)
{
	if (r == NULL)
		return;
	redisFree(r->c);
	free(r);
}

/* Read n replies; drop the connection on an error. */
static int redis_drain(struct probe_redis *r, int n)
{
	int ret = 0;

	for (int i = 0; i < n; i++) {
		redisReply *rep = NULL;

		if (redisGetReply(r->c, (void **)&rep) != REDIS_OK) {
			ice_warn(PROBE_LOG, "redis: %s", r->c->errstr);
			redisFree(r->c);
			r->c = NULL;
			return -EIO;
		}
		if (rep->type == REDIS_REPLY_ERROR) {
			ice_warn(PROBE_LOG, "redis: %s", rep->str);
			ret = -EIO;
		}
		freeReplyObject(rep);
	}
	return ret;
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
	const char *F = r->cfg->fabric;
	char pair[40], key[256], a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
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
	snprintf(key, sizeof(key), "ice:%s:{%s}:probe:map:%s", F, r->host, pair);
	redisAppendCommand(r->c,
			   "HSET %s src %s dst %s ts_ms %llu probes %u npaths %u nports %u "
			   "json %s",
			   key, a, b, (unsigned long long)m->ts_ms, m->probes, m->npaths, m->nports,
			   txt);
	snprintf(key, sizeof(key), "ice:%s:{%s}:probe:pairs", F, r->host);
	redisAppendCommand(r->c, "ZADD %s %llu %s", key, (unsigned long long)m->ts_ms, pair);
	redisAppendCommand(r->c, "SADD ice:%s:probe:hosts %s", F, r->host);
	free(txt);
	ret = redis_drain(r, 3);
	return ret;
}

int probe_redis_health(struct probe_redis *r, const struct probe_pathmap *m, json_t *rec)
{
	const char *F = r->cfg->fabric;
	char pair[40], key[256];
	json_t *paths = json_object_get(rec, "paths");
	char *txt;
	int n = 0;

	if (redis_connect(r) < 0)
		return -ENOTCONN;
	pair_key(m, pair, sizeof(pair));
	txt = json_dumps(rec, JSON_COMPACT);
	if (txt == NULL)
		return -ENOMEM;
	snprintf(key, sizeof(key), "ice:%s:{%s}:probe:health:%s", F, r->host, pair);
	redisAppendCommand(r->c, "HSET %s ts_ms %lld seq %lld map_age_ms %lld json %s", key,
			   json_integer_value(json_object_get(rec, "ts_ms")),
			   json_integer_value(json_object_get(rec, "seq")),
			   json_integer_value(json_object_get(rec, "map_age_ms")), txt);
	n++;
	for (size_t i = 0; i < json_array_size(paths); i++) {
		json_t *p = json_array_get(paths, i);
		char *pt = json_dumps(p, JSON_COMPACT);

		if (pt == NULL)
			continue;
		redisAppendCommand(r->c, "HSET %s path:%s %s", key,
				   json_string_value(json_object_get(p, "path")), pt);
		free(pt);
		n++;
	}
	redisAppendCommand(r->c, "XADD %s:ts MAXLEN ~ %d * json %s", key, PROBE_STREAM_CAP, txt);
	n++;
	/* the map's age, refreshed each interval */
	snprintf(key, sizeof(key), "ice:%s:{%s}:probe:map:%s", F, r->host, pair);
	redisAppendCommand(r->c, "HSET %s age_ms %lld", key,
			   json_integer_value(json_object_get(rec, "map_age_ms")));
	n++;
	free(txt);
	return redis_drain(r, n);
}

int probe_redis_pinglist(struct probe_redis *r, const struct topo *t, struct probe_pinglist *pl,
			 struct ice_cfg_err *err)
{
	char key[160], name[200];
	redisReply *rep;
	int ret;

	memset(err, 0, sizeof(*err));
	if (redis_connect(r) < 0)
		return -ENOTCONN;
	snprintf(key, sizeof(key), "ice:%s:probe:pinglist", r->cfg->fabric);
	rep = redisCommand(r->c, "GET %s", key);
	if (rep == NULL) {
		redisFree(r->c);
		r->c = NULL;
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
