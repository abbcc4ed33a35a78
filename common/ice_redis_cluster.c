// SPDX-License-Identifier: Apache-2.0
/*
 * ice_redis_cluster.c: a thin Redis Cluster client over hiredis 0.14
 * (which has none): key slots (CRC16 of the hash tag), the slot map from
 * CLUSTER SLOTS, one connection per primary, pipelines grouped per shard,
 * MOVED and ASK redirections (ice_redis.h).
 *
 * A pipeline is written to every shard it touches before any reply is
 * read, so the shards work on it at once; the replies are then read in the
 * caller's order (each connection answers in its own order). A redirected
 * command is sent again, alone, where the redirection says, after the rest
 * is read. A shard that cannot be reached, or a cluster that answers
 * CLUSTERDOWN, fails the whole pipeline: callers treat it as a Redis
 * outage (the controller keeps its plans), and r->why names the slots.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ice_log.h"
#include "ice_redis_internal.h"

#define REDIRECT_HOPS 5

struct cl_node {
	char addr[64];	  /* HOST:PORT */
	redisContext *c;  /* NULL until used, or after a failure */
	uint32_t queued;  /* commands written or buffered, replies not read */
	bool unreachable; /* the last attempt failed (ice_redis_missing_slots) */
};

struct cl_pend {
	char *cmd; /* the command in RESP (owned), sent again on a redirection */
	size_t len;
	int node; /* -1: no node could take it (r->why) */
};

struct ice_redis_cluster {
	struct cl_node node[ICE_REDIS_NODES_MAX];
	uint32_t nnodes;
	uint8_t slot_node[ICE_REDIS_SLOTS]; /* node index + 1; 0: no primary known */
	struct cl_pend *pend;		    /* commands appended since the last pipe */
	size_t npend, cap;
	int home;   /* the node r->c belongs to: keyless commands go there */
	bool stale; /* a MOVED came: read CLUSTER SLOTS after this pipeline */
};

/* ---- slots */

bool ice_redis_is_cluster(const char *addr)
{
	return strncmp(addr, "cluster:", 8) == 0 || strchr(addr, ',') != NULL;
}

uint16_t ice_redis_crc16(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint16_t crc = 0;

	for (size_t i = 0; i < len; i++) {
		crc ^= (uint16_t)(p[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (uint16_t)(crc << 1) ^ 0x1021 : (uint16_t)(crc << 1);
	}
	return crc;
}

uint16_t ice_redis_slot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len), *close;

	if (open != NULL) {
		size_t rest = len - (size_t)(open - key) - 1;

		close = memchr(open + 1, '}', rest);
		if (close != NULL && close > open + 1)
			return ice_redis_crc16(open + 1, (size_t)(close - open - 1)) &
			       (ICE_REDIS_SLOTS - 1);
	}
	return ice_redis_crc16(key, len) & (ICE_REDIS_SLOTS - 1);
}

int ice_redis_redirect(const char *err, uint16_t *slot, char *addr, size_t alen)
{
	int kind = strncmp(err, "MOVED ", 6) == 0 ? 1 : strncmp(err, "ASK ", 4) == 0 ? 2 : 0;
	const char *p = err + (kind == 1 ? 6 : 4), *colon;
	char *end;
	unsigned long s;

	if (kind == 0)
		return 0;
	s = strtoul(p, &end, 10);
	if (end == p || *end != ' ' || s >= ICE_REDIS_SLOTS)
		return -EINVAL;
	p = end + 1;
	colon = strrchr(p, ':');
	if (colon == NULL || colon[1] == '\0' ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1) || strlen(p) >= alen ||
	    strchr(p, ' ') != NULL)
		return -EINVAL;
	*slot = (uint16_t)s;
	snprintf(addr, alen, "%s", p);
	return kind;
}

/* "a-b,c" of the slots for which pick() is true */
static void slot_ranges(const struct ice_redis_cluster *cl, int node, bool missing, char *buf,
			size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (uint32_t s = 0; s < ICE_REDIS_SLOTS;) {
		uint32_t e = s;
		int n = cl->slot_node[s] - 1;
		bool in = missing ? n < 0 || cl->node[n].unreachable : n == node;

		if (!in) {
			s++;
			continue;
		}
		while (e + 1 < ICE_REDIS_SLOTS) {
			int m = cl->slot_node[e + 1] - 1;

			if (missing ? !(m < 0 || cl->node[m].unreachable) : m != node)
				break;
			e++;
		}
		if (off + 16 >= len) {
			snprintf(buf + off, len - off, "...");
			return;
		}
		off += (size_t)snprintf(buf + off, len - off, e > s ? "%s%u-%u" : "%s%u",
					off ? "," : "", s, e);
		s = e + 1;
	}
}

void ice_redis_missing_slots(const struct ice_redis *r, char *buf, size_t len)
{
	if (len == 0)
		return;
	buf[0] = '\0';
	if (r->cl != NULL)
		slot_ranges(r->cl, -1, true, buf, len);
}

/* ---- nodes */

static int node_find(struct ice_redis_cluster *cl, const char *addr, bool add)
{
	for (uint32_t i = 0; i < cl->nnodes; i++)
		if (strcmp(cl->node[i].addr, addr) == 0)
			return (int)i;
	if (!add || cl->nnodes == ICE_REDIS_NODES_MAX || strlen(addr) >= sizeof(cl->node[0].addr))
		return -1;
	snprintf(cl->node[cl->nnodes].addr, sizeof(cl->node[0].addr), "%s", addr);
	return (int)cl->nnodes++;
}

static void node_close(struct ice_redis_cluster *cl, int i)
{
	if (cl->node[i].c != NULL)
		redisFree(cl->node[i].c);
	cl->node[i].c = NULL;
	cl->node[i].queued = 0;
}

static void node_fail(struct ice_redis *r, int i, const char *what)
{
	struct ice_redis_cluster *cl = r->cl;
	char slots[96];

	slot_ranges(cl, i, false, slots, sizeof(slots));
	snprintf(r->why, sizeof(r->why), "cluster node %s (slots %s): %s", cl->node[i].addr,
		 slots[0] ? slots : "none", what);
	cl->node[i].unreachable = true;
}

static redisContext *node_ctx(struct ice_redis *r, int i)
{
	struct cl_node *n = &r->cl->node[i];
	char why[160];

	if (n->c != NULL)
		return n->c;
	n->c = ice_redis_connect(n->addr, r->timeout_ns, why, sizeof(why));
	if (n->c == NULL) {
		node_fail(r, i, why);
		return NULL;
	}
	n->unreachable = false;
	return n->c;
}

/* CLUSTER SLOTS from node i into the slot map. 0 or -EIO (r->why). */
static int slots_read(struct ice_redis *r, int i)
{
	struct ice_redis_cluster *cl = r->cl;
	redisContext *c = node_ctx(r, i);
	redisReply *rep;
	uint8_t map[ICE_REDIS_SLOTS] = {0};
	char host[64], addr[96];
	const char *colon = strrchr(cl->node[i].addr, ':');
	uint32_t uncovered = 0;

	if (c == NULL)
		return -EIO;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - cl->node[i].addr), cl->node[i].addr);
	rep = redisCommand(c, "CLUSTER SLOTS");
	if (rep == NULL) {
		node_fail(r, i, c->errstr[0] ? c->errstr : "no reply");
		node_close(cl, i);
		return -EIO;
	}
	if (rep->type != REDIS_REPLY_ARRAY) {
		node_fail(r, i,
			  rep->type == REDIS_REPLY_ERROR ? rep->str : "CLUSTER SLOTS: no array");
		freeReplyObject(rep);
		return -EIO;
	}
	for (size_t k = 0; k < rep->elements; k++) {
		redisReply *e = rep->element[k], *pr;
		int n;

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
		    e->element[0]->type != REDIS_REPLY_INTEGER ||
		    e->element[1]->type != REDIS_REPLY_INTEGER ||
		    e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2)
			continue;
		pr = e->element[2];
		if (pr->element[0]->type != REDIS_REPLY_STRING ||
		    pr->element[1]->type != REDIS_REPLY_INTEGER)
			continue;
		snprintf(addr, sizeof(addr), "%s:%lld",
			 pr->element[0]->str[0] ? pr->element[0]->str : host,
			 pr->element[1]->integer);
		n = node_find(cl, addr, true);
		if (n < 0) {
			ice_warn(ICE_SUB_COMMON,
				 "redis cluster: more than %d primaries; %s not followed",
				 ICE_REDIS_NODES_MAX, addr);
			continue;
		}
		for (long long s = e->element[0]->integer;
		     s <= e->element[1]->integer && s >= 0 && s < ICE_REDIS_SLOTS; s++)
			map[s] = (uint8_t)(n + 1);
	}
	freeReplyObject(rep);
	memcpy(cl->slot_node, map, sizeof(map));
	for (uint32_t s = 0; s < ICE_REDIS_SLOTS; s++)
		uncovered += map[s] == 0;
	if (uncovered > 0) {
		char slots[96];

		slot_ranges(cl, -1, true, slots, sizeof(slots));
		ice_warn(ICE_SUB_COMMON,
			 "redis cluster (from %s): %u slots served by no primary: %s",
			 cl->node[i].addr, uncovered, slots);
	}
	cl->stale = false;
	return 0;
}

int ice_redis_cl_connect(struct ice_redis *r)
{
	struct ice_redis_cluster *cl = r->cl;
	const char *list = strncmp(r->addr, "cluster:", 8) == 0 ? r->addr + 8 : r->addr;
	char seed[64];

	if (cl == NULL) {
		cl = r->cl = calloc(1, sizeof(*cl));
		if (cl == NULL) {
			snprintf(r->why, sizeof(r->why), "out of memory");
			return -ENOMEM;
		}
	}
	/* the seeds first, then the primaries learnt before */
	for (const char *p = list; *p != '\0';) {
		size_t n = strcspn(p, ",");
		int i;

		if (n > 0 && n < sizeof(seed)) {
			snprintf(seed, sizeof(seed), "%.*s", (int)n, p);
			i = node_find(cl, seed, true);
			if (i >= 0 && slots_read(r, i) == 0) {
				cl->home = i;
				r->c = cl->node[i].c;
				return 0;
			}
		} else if (n > 0) {
			snprintf(r->why, sizeof(r->why), "cluster seed '%.*s': too long", (int)n,
				 p);
		}
		p += n + (p[n] == ',');
	}
	for (uint32_t i = 0; i < cl->nnodes; i++)
		if (slots_read(r, (int)i) == 0) {
			cl->home = (int)i;
			r->c = cl->node[i].c;
			return 0;
		}
	return -ECONNREFUSED;
}

static void pend_clear(struct ice_redis_cluster *cl)
{
	for (size_t i = 0; i < cl->npend; i++)
		free(cl->pend[i].cmd);
	cl->npend = 0;
}

void ice_redis_cl_close(struct ice_redis *r)
{
	if (r->cl != NULL) {
		pend_clear(r->cl);
		for (uint32_t i = 0; i < r->cl->nnodes; i++)
			node_close(r->cl, (int)i);
	}
	r->c = NULL;
}

void ice_redis_cl_free(struct ice_redis *r)
{
	ice_redis_cl_close(r);
	if (r->cl != NULL)
		free(r->cl->pend);
	free(r->cl);
	r->cl = NULL;
}

const char *ice_redis_node_of(struct ice_redis *r, const char *key, char *buf, size_t len)
{
	int n;

	if (!r->cluster) {
		snprintf(buf, len, "%s", r->addr);
		return buf;
	}
	if (r->cl == NULL)
		return NULL;
	n = r->cl->slot_node[ice_redis_slot(key, strlen(key))] - 1;
	if (n < 0)
		return NULL;
	snprintf(buf, len, "%s", r->cl->node[n].addr);
	return buf;
}

/* ---- commands */

/* One RESP command at p: its length, and the first four arguments. */
static long resp_command(const char *p, size_t len, const char *arg[4], size_t alen[4], int *argc)
{
	const char *q = p, *end = p + len;
	char *e;
	long n;

	if (len < 4 || *q != '*')
		return -1;
	n = strtol(q + 1, &e, 10);
	if (e >= end - 1 || e[0] != '\r' || e[1] != '\n' || n < 1 || n > 1000000)
		return -1;
	q = e + 2;
	*argc = (int)n;
	for (long i = 0; i < n; i++) {
		long l;

		if (q >= end || *q != '$')
			return -1;
		l = strtol(q + 1, &e, 10);
		if (e >= end - 1 || e[0] != '\r' || e[1] != '\n' || l < 0 || l > end - e - 4)
			return -1;
		q = e + 2;
		if (i < 4) {
			arg[i] = q;
			alen[i] = (size_t)l;
		}
		q += l;
		if (q + 2 > end || q[0] != '\r' || q[1] != '\n')
			return -1;
		q += 2;
	}
	return q - p;
}

static bool word_is(const char *w, size_t len, const char *name)
{
	return strlen(name) == len && strncasecmp(w, name, len) == 0;
}

/* The key a command routes by (the first key of EVAL/EVALSHA); false: none */
static bool cmd_key(const char *arg[4], const size_t alen[4], int argc, const char **key,
		    size_t *klen)
{
	static const char *const keyless[] = {
		"PING",	   "INFO",     "CLUSTER", "ASKING",   "AUTH",	"HELLO",
		"CLIENT",  "CONFIG",   "ACL",	  "TIME",     "DBSIZE", "SCRIPT",
		"COMMAND", "READONLY", "PUBLISH", "FLUSHALL", "FLUSHDB"};
	int k = 1;

	for (size_t i = 0; i < sizeof(keyless) / sizeof(keyless[0]); i++)
		if (word_is(arg[0], alen[0], keyless[i]))
			return false;
	if (word_is(arg[0], alen[0], "EVAL") || word_is(arg[0], alen[0], "EVALSHA")) {
		if (argc < 4 || (alen[2] == 1 && arg[2][0] == '0'))
			return false;
		k = 3;
	}
	if (argc <= k)
		return false;
	*key = arg[k];
	*klen = alen[k];
	return true;
}

int ice_redis_cl_append(struct ice_redis *r, const char *cmds, size_t len)
{
	struct ice_redis_cluster *cl = r->cl;

	while (len > 0) {
		const char *arg[4] = {0};
		size_t alen[4] = {0};
		const char *key = NULL;
		size_t klen = 0;
		uint16_t slot = 0;
		int argc = 0, node;
		long n = resp_command(cmds, len, arg, alen, &argc);
		struct cl_pend *p;
		redisContext *c;

		if (n < 0)
			return -EINVAL;
		if (cl->npend == cl->cap) {
			size_t cap = cl->cap ? 2 * cl->cap : 64;
			struct cl_pend *np = realloc(cl->pend, cap * sizeof(*np));

			if (np == NULL)
				return -ENOMEM;
			cl->pend = np;
			cl->cap = cap;
		}
		p = &cl->pend[cl->npend];
		p->cmd = malloc((size_t)n);
		if (p->cmd == NULL)
			return -ENOMEM;
		memcpy(p->cmd, cmds, (size_t)n);
		p->len = (size_t)n;
		if (cmd_key(arg, alen, argc, &key, &klen)) {
			slot = ice_redis_slot(key, klen);
			node = cl->slot_node[slot] - 1;
		} else {
			node = cl->home;
		}
		if (node < 0) {
			snprintf(r->why, sizeof(r->why), "cluster: slot %u is served by no primary",
				 slot);
		} else if ((c = node_ctx(r, node)) == NULL ||
			   redisAppendFormattedCommand(c, p->cmd, p->len) != REDIS_OK) {
			node = -1;
		} else {
			cl->node[node].queued++;
		}
		p->node = node;
		cl->npend++;
		cmds += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The command at pend[i], alone, where a redirection points (ASK: after
 * ASKING). Its reply or NULL (r->why). */
static redisReply *redirected(struct ice_redis *r, const struct cl_pend *p, bool ask,
			      const char *addr)
{
	int n = node_find(r->cl, addr, true);
	redisContext *c = n >= 0 ? node_ctx(r, n) : NULL;
	redisReply *rep = NULL, *asking = NULL;

	if (n < 0) {
		snprintf(r->why, sizeof(r->why), "cluster: redirected to %s: too many nodes", addr);
		return NULL;
	}
	if (c == NULL)
		return NULL;
	if ((ask && redisAppendCommand(c, "ASKING") != REDIS_OK) ||
	    redisAppendFormattedCommand(c, p->cmd, p->len) != REDIS_OK ||
	    (ask && (redisGetReply(c, (void **)&asking) != REDIS_OK || asking == NULL)) ||
	    redisGetReply(c, (void **)&rep) != REDIS_OK || rep == NULL) {
		node_fail(r, n, c->errstr[0] ? c->errstr : "no reply");
		node_close(r->cl, n);
		if (asking != NULL)
			freeReplyObject(asking);
		return NULL;
	}
	if (asking != NULL)
		freeReplyObject(asking);
	return rep;
}

/* A reply that redirects: follow it (up to REDIRECT_HOPS); MOVED also fixes
 * the slot map and asks for a fresh one. The final reply, or NULL. */
static redisReply *follow(struct ice_redis *r, const struct cl_pend *p, redisReply *rep)
{
	for (int hop = 0; hop < REDIRECT_HOPS; hop++) {
		char addr[64];
		uint16_t slot;
		int kind, n;

		if (rep->type != REDIS_REPLY_ERROR)
			return rep;
		kind = ice_redis_redirect(rep->str, &slot, addr, sizeof(addr));
		if (kind <= 0)
			return rep;
		freeReplyObject(rep);
		if (kind == 1) {
			n = node_find(r->cl, addr, true);
			if (n >= 0)
				r->cl->slot_node[slot] = (uint8_t)(n + 1);
			r->cl->stale = true;
		}
		rep = redirected(r, p, kind == 2, addr);
		if (rep == NULL)
			return NULL;
	}
	snprintf(r->why, sizeof(r->why), "cluster: more than %d redirections", REDIRECT_HOPS);
	freeReplyObject(rep);
	return NULL;
}

int ice_redis_cl_pipe(struct ice_redis *r, size_t n, redisReply **out, uint32_t *errors)
{
	struct ice_redis_cluster *cl = r->cl;
	redisReply **rep = NULL;
	int ret = -EIO;

	if (n != cl->npend) {
		snprintf(r->why, sizeof(r->why), "pipeline: %zu replies asked, %zu commands sent",
			 n, cl->npend);
		goto fail;
	}
	rep = calloc(n + 1, sizeof(*rep));
	if (rep == NULL) {
		snprintf(r->why, sizeof(r->why), "out of memory");
		goto fail;
	}
	/* write to every shard first: they work in parallel */
	for (uint32_t i = 0; i < cl->nnodes; i++) {
		int done = 0;

		while (cl->node[i].queued > 0 && cl->node[i].c != NULL && !done)
			if (redisBufferWrite(cl->node[i].c, &done) != REDIS_OK) {
				node_fail(r, (int)i, cl->node[i].c->errstr);
				goto fail;
			}
	}
	for (size_t i = 0; i < n; i++) {
		struct cl_pend *p = &cl->pend[i];
		redisContext *c = p->node >= 0 ? cl->node[p->node].c : NULL;

		if (c == NULL)
			goto fail; /* r->why from the append */
		if (redisGetReply(c, (void **)&rep[i]) != REDIS_OK || rep[i] == NULL) {
			node_fail(r, p->node, c->errstr[0] ? c->errstr : "no reply");
			goto fail;
		}
		cl->node[p->node].queued--;
	}
	for (size_t i = 0; i < n; i++) {
		rep[i] = follow(r, &cl->pend[i], rep[i]);
		if (rep[i] == NULL)
			goto fail;
		if (rep[i]->type == REDIS_REPLY_ERROR &&
		    (strncmp(rep[i]->str, "CLUSTERDOWN", 11) == 0 ||
		     strncmp(rep[i]->str, "LOADING", 7) == 0)) {
			char missing[96];

			ice_redis_missing_slots(r, missing, sizeof(missing));
			snprintf(r->why, sizeof(r->why), "cluster: %s%s%s", rep[i]->str,
				 missing[0] ? "; unreachable slots " : "", missing);
			goto fail;
		}
		if (rep[i]->type == REDIS_REPLY_ERROR && errors != NULL && (*errors)++ < 10)
			ice_warn(ICE_SUB_COMMON, "redis error reply: %s", rep[i]->str);
	}
	for (size_t i = 0; i < n; i++) {
		if (out != NULL)
			out[i] = rep[i];
		else
			freeReplyObject(rep[i]);
	}
	free(rep);
	pend_clear(cl);
	if (cl->stale)
		slots_read(r, cl->home); /* a failure keeps the patched map */
	return 0;
fail:
	if (rep != NULL)
		ice_redis_free_replies(rep, n);
	free(rep);
	for (size_t i = 0; out != NULL && i < n; i++)
		out[i] = NULL;
	ice_redis_cl_close(r);
	return ret;
}
