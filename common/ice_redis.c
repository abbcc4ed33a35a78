// SPDX-License-Identifier: Apache-2.0
/*
 * ice_redis.c: the Redis key schema table, addresses, connections with
 * timeouts and back-off, pipelined replies (ice_redis.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "ice_log.h"
#include "ice_redis_internal.h"
#include "ice_time.h"

#define BACKOFF_MIN_NS (500 * ICE_NSEC_PER_MSEC)
#define BACKOFF_MAX_NS (8 * ICE_NSEC_PER_SEC)

/* docs/redis-schema.md lists exactly these (tests/check_redis_schema.py) */
static const char *const patterns[ICE_RK_MAX] = {
	[ICE_RK_SCHEMA] = "ice:<F>:schema",
	[ICE_RK_HOSTS] = "ice:<F>:hosts",
	[ICE_RK_HOST] = "ice:<F>:{<H>}:host",
	[ICE_RK_ALIVE] = "ice:<F>:{<H>}:alive",
	[ICE_RK_NICS] = "ice:<F>:{<H>}:nics",
	[ICE_RK_NIC_AGENT] = "ice:<F>:{<H>}:nic:<nic>:agent",
	[ICE_RK_NIC_ALIVE] = "ice:<F>:{<H>}:nic:<nic>:alive",
	[ICE_RK_NIC] = "ice:<F>:{<H>}:nic:<nic>",
	[ICE_RK_NIC_TS] = "ice:<F>:{<H>}:nic:<nic>:ts",
	[ICE_RK_NIC_DEV] = "ice:<F>:{<H>}:nic:<nic>:dev",
	[ICE_RK_QPS] = "ice:<F>:{<H>}:qps",
	[ICE_RK_QP] = "ice:<F>:{<H>}:qp:<id>",
	[ICE_RK_QP_TS] = "ice:<F>:{<H>}:qp:<id>:ts",
	[ICE_RK_EVENTS] = "ice:<F>:{<H>}:events",
	[ICE_RK_PROBE_PINGLIST] = "ice:<F>:probe:pinglist",
	[ICE_RK_PROBE_HOSTS] = "ice:<F>:probe:hosts",
	[ICE_RK_PROBE_PAIRS] = "ice:<F>:{<H>}:probe:pairs",
	[ICE_RK_PROBE_MAP] = "ice:<F>:{<H>}:probe:map:<P>",
	[ICE_RK_PROBE_HEALTH] = "ice:<F>:{<H>}:probe:health:<P>",
	[ICE_RK_PROBE_HEALTH_TS] = "ice:<F>:{<H>}:probe:health:<P>:ts",
	[ICE_RK_PROBE_VERSION] = "ice:<F>:probe:version",
	[ICE_RK_PROBE_REHASH] = "ice:<F>:probe:rehash",
	[ICE_RK_CTL_LEADER] = "ice:<F>:{ctl}:leader",
	[ICE_RK_CTL_EPOCH] = "ice:<F>:{ctl}:epoch",
	[ICE_RK_CTL_PUBLISHED] = "ice:<F>:{ctl}:published",
	[ICE_RK_CTL_LOG] = "ice:<F>:{ctl}:log",
	[ICE_RK_CTL_STATUS] = "ice:<F>:{ctl}:status",
	[ICE_RK_PLAN] = "ice:<F>:{<H>}:plan",
	[ICE_RK_PLAN_APPLIED] = "ice:<F>:{<H>}:plan:applied",
	[ICE_RK_PLAN_FENCE] = "ice:<F>:{<H>}:plan:fence",
	[ICE_RK_LINKS] = "ice:<F>:links",
	[ICE_RK_SW_PORTS] = "ice:<F>:sw:ports",
	[ICE_RK_SW_PORT] = "ice:<F>:sw:{<S>}:port:<port>",
	[ICE_RK_SW_PORT_TS] = "ice:<F>:sw:{<S>}:port:<port>:ts",
	[ICE_RK_SW_EXPORTER] = "ice:<F>:sw:exporter",
	[ICE_RK_CTL_LINK] = "ice:<F>:ctl:link:<link>",
	[ICE_RK_CTL_QP] = "ice:<F>:ctl:qp:<id>",
	[ICE_RK_CTL_MEMBERS] = "ice:<F>:ctl:members",
	[ICE_RK_POLICY_SEQ] = "ice:<F>:policy:seq",
	[ICE_RK_POLICY_CURRENT] = "ice:<F>:policy:current",
	[ICE_RK_POLICY] = "ice:<F>:policy:<version>",
	[ICE_RK_POLICY_LOG] = "ice:<F>:policy:log",
};

/* Who writes each key (W) and who else reads it (R): the ACL users of
 * ice_redis_acl_write(). The controller, the operator and the reader read
 * every key; the controller writes every key. */
#define W(...)			     .w = ice_role_bits(__VA_ARGS__)
#define R(...)			     .r = ice_role_bits(__VA_ARGS__)
#define ice_role_bits(...)	     ice_role_mask_(__VA_ARGS__, ICE_ROLE_MAX, ICE_ROLE_MAX, ICE_ROLE_MAX)
#define ice_role_mask_(a, b, c, ...) (((1u << (a)) | (1u << (b)) | (1u << (c))) & ROLE_ALL)
#define ROLE_ALL		     ((1u << ICE_ROLE_MAX) - 1)
#define CTL			     ICE_ROLE_CONTROLLER
#define HOST			     ICE_ROLE_HOST
#define EXPORTER		     ICE_ROLE_EXPORTER
#define OPERATOR		     ICE_ROLE_OPERATOR
static const struct {
	unsigned w, r;
} roles[ICE_RK_MAX] = {
	[ICE_RK_SCHEMA] = {W(CTL, HOST)},
	[ICE_RK_HOSTS] = {W(CTL, HOST)},
	[ICE_RK_HOST] = {W(CTL, HOST)},
	[ICE_RK_ALIVE] = {W(CTL, HOST)},
	[ICE_RK_NICS] = {W(CTL, HOST)},
	[ICE_RK_NIC_AGENT] = {W(CTL, HOST)},
	[ICE_RK_NIC_ALIVE] = {W(CTL, HOST)},
	[ICE_RK_NIC] = {W(CTL, HOST)},
	[ICE_RK_NIC_DEV] = {W(CTL, HOST)},
	[ICE_RK_NIC_TS] = {W(CTL, HOST)},
	[ICE_RK_QPS] = {W(CTL, HOST)},
	[ICE_RK_QP] = {W(CTL, HOST)},
	[ICE_RK_QP_TS] = {W(CTL, HOST)},
	[ICE_RK_EVENTS] = {W(CTL, HOST)},
	[ICE_RK_PROBE_PINGLIST] = {W(CTL), R(HOST)},
	[ICE_RK_PROBE_HOSTS] = {W(CTL, HOST)},
	[ICE_RK_PROBE_PAIRS] = {W(CTL, HOST)},
	[ICE_RK_PROBE_MAP] = {W(CTL, HOST)},
	[ICE_RK_PROBE_HEALTH] = {W(CTL, HOST)},
	[ICE_RK_PROBE_HEALTH_TS] = {W(CTL, HOST)},
	[ICE_RK_PROBE_VERSION] = {W(CTL, HOST)},
	[ICE_RK_PROBE_REHASH] = {W(CTL, HOST)},
	[ICE_RK_CTL_LEADER] = {W(CTL)},
	[ICE_RK_CTL_EPOCH] = {W(CTL)},
	[ICE_RK_CTL_PUBLISHED] = {W(CTL)},
	[ICE_RK_CTL_LOG] = {W(CTL)},
	[ICE_RK_CTL_STATUS] = {W(CTL)},
	[ICE_RK_PLAN] = {W(CTL), R(HOST)},
	[ICE_RK_PLAN_APPLIED] = {W(CTL, HOST)},
	[ICE_RK_PLAN_FENCE] = {W(CTL)},
	[ICE_RK_LINKS] = {W(CTL, EXPORTER)},
	[ICE_RK_SW_PORTS] = {W(CTL, EXPORTER)},
	[ICE_RK_SW_PORT] = {W(CTL, EXPORTER)},
	[ICE_RK_SW_PORT_TS] = {W(CTL, EXPORTER)},
	[ICE_RK_SW_EXPORTER] = {W(CTL, EXPORTER)},
	[ICE_RK_CTL_LINK] = {W(CTL)},
	[ICE_RK_CTL_QP] = {W(CTL)},
	[ICE_RK_CTL_MEMBERS] = {W(CTL)},
	[ICE_RK_POLICY_SEQ] = {W(CTL, OPERATOR)},
	[ICE_RK_POLICY_CURRENT] = {W(CTL, OPERATOR)},
	[ICE_RK_POLICY] = {W(CTL, OPERATOR)},
	[ICE_RK_POLICY_LOG] = {W(CTL, OPERATOR)},
};
#undef W
#undef R

unsigned ice_rkey_writers(enum ice_rkey k)
{
	return (unsigned)k < ICE_RK_MAX ? roles[k].w : 0;
}

unsigned ice_rkey_readers(enum ice_rkey k)
{
	return (unsigned)k < ICE_RK_MAX ? roles[k].r : 0;
}

const char *ice_rkey_pattern(enum ice_rkey k)
{
	return (unsigned)k < ICE_RK_MAX ? patterns[k] : NULL;
}

int ice_rkey(char *buf, size_t len, enum ice_rkey k, const char *fabric, const char *host,
	     const char *arg)
{
	const char *p = ice_rkey_pattern(k);
	size_t off = 0;

	if (p == NULL || len == 0)
		return -EINVAL;
	while (*p != '\0') {
		const char *part = NULL, *end;
		size_t n;

		if (*p == '<' && (end = strchr(p, '>')) != NULL) {
			if (strncmp(p, "<F>", 3) == 0)
				part = fabric;
			else if (strncmp(p, "<H>", 3) == 0 || strncmp(p, "<S>", 3) == 0)
				part = host;
			else
				part = arg;
			if (part == NULL || part[0] == '\0')
				return -EINVAL;
			n = strlen(part);
			p = end + 1;
		} else {
			part = p;
			n = strcspn(p, "<");
			p += n;
		}
		if (off + n >= len)
			return -ENOSPC;
		memcpy(buf + off, part, n);
		off += n;
	}
	buf[off] = '\0';
	return 0;
}

const char *ice_rkey_str(char *buf, size_t len, enum ice_rkey k, const char *fabric,
			 const char *host, const char *arg)
{
	if (ice_rkey(buf, len, k, fabric, host, arg) < 0 && len > 0)
		snprintf(buf, len, "%s", ICE_RKEY_INVALID);
	return buf;
}

int ice_redis_addr_parse(const char *addr, char *host, size_t hlen, int *port, bool *is_unix)
{
	const char *colon;
	char *end;
	long p;

	if (strncmp(addr, "unix:", 5) == 0 || addr[0] == '/') {
		const char *path = addr[0] == '/' ? addr : addr + 5;

		if (path[0] != '/' || strlen(path) >= hlen)
			return -EINVAL;
		snprintf(host, hlen, "%s", path);
		*is_unix = true;
		*port = 0;
		return 0;
	}
	colon = strrchr(addr, ':');
	if (colon == NULL || colon == addr || (size_t)(colon - addr) >= hlen)
		return -EINVAL;
	p = strtol(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || p < 1 || p > 65535)
		return -EINVAL;
	snprintf(host, hlen, "%.*s", (int)(colon - addr), addr);
	*port = (int)p;
	*is_unix = false;
	return 0;
}

bool ice_redis_addr_ok(const char *addr)
{
	const char *list = strncmp(addr, "cluster:", 8) == 0 ? addr + 8 : addr;
	char one[256], host[256];
	bool is_unix;
	int port;

	if (!ice_redis_is_cluster(addr))
		return ice_redis_addr_parse(addr, host, sizeof(host), &port, &is_unix) == 0;
	do { /* a cluster: HOST:PORT seeds, no unix sockets */
		size_t n = strcspn(list, ",");

		if (n == 0 || n >= sizeof(one))
			return false;
		snprintf(one, sizeof(one), "%.*s", (int)n, list);
		if (ice_redis_addr_parse(one, host, sizeof(host), &port, &is_unix) < 0 || is_unix)
			return false;
		list += n;
	} while (*list++ == ',');
	return true;
}

redisContext *ice_redis_connect(const char *addr, uint64_t timeout_ns, char *why, size_t whylen)
{
	struct timeval tv = {(time_t)(timeout_ns / ICE_NSEC_PER_SEC),
			     (suseconds_t)(timeout_ns % ICE_NSEC_PER_SEC / 1000)};
	char host[256];
	redisContext *c;
	bool is_unix;
	int port, ret;

	if (ice_redis_addr_parse(addr, host, sizeof(host), &port, &is_unix) < 0) {
		snprintf(why, whylen, "address '%s': expected HOST:PORT, unix:/PATH or /PATH",
			 addr);
		return NULL;
	}
	c = is_unix ? redisConnectUnixWithTimeout(host, tv)
		    : redisConnectWithTimeout(host, port, tv);
	if (c == NULL) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	if (c->err) {
		snprintf(why, whylen, "%s", c->errstr);
		redisFree(c);
		return NULL;
	}
	if (redisSetTimeout(c, tv) != REDIS_OK) {
		snprintf(why, whylen, "cannot set the timeout: %s", c->errstr);
		redisFree(c);
		return NULL;
	}
	ret = ice_redis_auth_send(c, why, whylen);
	if (ret < 0) {
		redisFree(c);
		errno = -ret;
		return NULL;
	}
	return c;
}

void ice_redis_free_replies(redisReply **r, size_t n)
{
	for (size_t i = 0; r != NULL && i < n; i++) {
		if (r[i] != NULL)
			freeReplyObject(r[i]);
		r[i] = NULL;
	}
}

int ice_redis_replies(redisContext *c, size_t n, redisReply **out, uint32_t *errors)
{
	for (size_t i = 0; i < n; i++) {
		redisReply *rep = NULL;

		if (redisGetReply(c, (void **)&rep) != REDIS_OK || rep == NULL) {
			ice_redis_free_replies(out, i);
			return -EIO;
		}
		if (rep->type == REDIS_REPLY_ERROR && errors != NULL && (*errors)++ < 10)
			ice_warn(ICE_SUB_COMMON, "redis error reply: %s", rep->str);
		if (out != NULL)
			out[i] = rep;
		else
			freeReplyObject(rep);
	}
	return 0;
}

void ice_redis_init(struct ice_redis *r, const char *addr, uint64_t timeout_ns)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->addr, sizeof(r->addr), "%s", addr);
	r->timeout_ns = timeout_ns;
	r->backoff_ns = BACKOFF_MIN_NS;
	r->backoff_max_ns = BACKOFF_MAX_NS;
	r->cluster = ice_redis_is_cluster(addr);
}

void ice_redis_fini(struct ice_redis *r)
{
	if (r == NULL)
		return;
	if (r->cluster) {
		ice_redis_cl_free(r); /* r->c is one of its nodes' */
		return;
	}
	if (r->c != NULL)
		redisFree(r->c);
	r->c = NULL;
}

int ice_redis_up(struct ice_redis *r, uint64_t now_ns)
{
	if (r->c != NULL)
		return 0;
	if (now_ns < r->next_try_ns)
		return -EAGAIN;
	if (r->cluster)
		ice_redis_cl_connect(r);
	else
		r->c = ice_redis_connect(r->addr, r->timeout_ns, r->why, sizeof(r->why));
	if (r->c == NULL) {
		ice_redis_down(r, now_ns, r->why);
		return -ECONNREFUSED;
	}
	r->connects++;
	r->failures = 0;
	r->backoff_ns = BACKOFF_MIN_NS < r->backoff_max_ns ? BACKOFF_MIN_NS : r->backoff_max_ns;
	return 1;
}

void ice_redis_down(struct ice_redis *r, uint64_t now_ns, const char *why)
{
	char buf[sizeof(r->why)];

	if (why == NULL && r->cluster)
		why = r->why[0] ? r->why : "connection lost";
	if (why == NULL)
		why = r->c != NULL && r->c->errstr[0] ? r->c->errstr : "connection lost";
	snprintf(buf, sizeof(buf), "%s", why);
	memcpy(r->why, buf, sizeof(r->why));
	if (r->cluster)
		ice_redis_cl_close(r); /* the slot map stays for the next connect */
	else
		ice_redis_fini(r);
	r->failures++;
	r->next_try_ns = now_ns + r->backoff_ns;
	r->backoff_ns =
		r->backoff_ns * 2 > r->backoff_max_ns ? r->backoff_max_ns : r->backoff_ns * 2;
}

/* ---- commands, one instance or a cluster */

int ice_redis_append_formatted(struct ice_redis *r, const char *cmds, size_t len)
{
	if (r->c == NULL)
		return -ENOTCONN;
	if (r->cluster)
		return ice_redis_cl_append(r, cmds, len);
	return redisAppendFormattedCommand(r->c, cmds, len) == REDIS_OK ? 0 : -ENOMEM;
}

int ice_redis_appendv(struct ice_redis *r, int argc, const char **argv, const size_t *lens)
{
	char *cmd = NULL;
	int len, ret;

	if (r->c == NULL)
		return -ENOTCONN;
	if (!r->cluster)
		return redisAppendCommandArgv(r->c, argc, argv, lens) == REDIS_OK ? 0 : -ENOMEM;
	len = redisFormatCommandArgv(&cmd, argc, argv, lens);
	if (len < 0)
		return -ENOMEM;
	ret = ice_redis_cl_append(r, cmd, (size_t)len);
	redisFreeCommand(cmd);
	return ret;
}

static int appendvf(struct ice_redis *r, const char *fmt, va_list ap)
{
	char *cmd = NULL;
	int len, ret;

	if (r->c == NULL)
		return -ENOTCONN;
	if (!r->cluster)
		return redisvAppendCommand(r->c, fmt, ap) == REDIS_OK ? 0 : -ENOMEM;
	len = redisvFormatCommand(&cmd, fmt, ap);
	if (len < 0)
		return -EINVAL;
	ret = ice_redis_cl_append(r, cmd, (size_t)len);
	redisFreeCommand(cmd);
	return ret;
}

int ice_redis_appendf(struct ice_redis *r, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = appendvf(r, fmt, ap);
	va_end(ap);
	return ret;
}

int ice_redis_pipe(struct ice_redis *r, size_t n, redisReply **out, uint32_t *errors)
{
	for (size_t i = 0; out != NULL && i < n; i++)
		out[i] = NULL;
	if (r->c == NULL) {
		snprintf(r->why, sizeof(r->why), "not connected");
		return -EIO;
	}
	if (r->cluster)
		return ice_redis_cl_pipe(r, n, out, errors);
	if (ice_redis_replies(r->c, n, out, errors) < 0) {
		snprintf(r->why, sizeof(r->why), "%s", r->c->errstr[0] ? r->c->errstr : "no reply");
		return -EIO;
	}
	return 0;
}

/* one command: appended, then its reply */
static redisReply *cmd_one(struct ice_redis *r, int ret)
{
	redisReply *rep = NULL;

	if (ret < 0) {
		snprintf(r->why, sizeof(r->why), "%s", strerror(-ret));
		return NULL;
	}
	return ice_redis_pipe(r, 1, &rep, NULL) == 0 ? rep : NULL;
}

redisReply *ice_redis_cmdv(struct ice_redis *r, int argc, const char **argv, const size_t *lens)
{
	return cmd_one(r, ice_redis_appendv(r, argc, argv, lens));
}

redisReply *ice_redis_vcmdf(struct ice_redis *r, const char *fmt, va_list ap)
{
	return cmd_one(r, appendvf(r, fmt, ap));
}

redisReply *ice_redis_cmdf(struct ice_redis *r, const char *fmt, ...)
{
	redisReply *rep;
	va_list ap;

	va_start(ap, fmt);
	rep = ice_redis_vcmdf(r, fmt, ap);
	va_end(ap);
	return rep;
}
