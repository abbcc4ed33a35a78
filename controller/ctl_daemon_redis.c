// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_daemon_redis.c: the daemon's one blocking hiredis connection: connect
 * (and reconnect at most every 500 ms), commands and pipelines with the
 * configured reply timeout; a broken connection is dropped, which also
 * drops the leadership.
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "ctl_daemon_internal.h"
#include "ice_log.h"
#include "ice_time.h"

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

bool ctld_redis_up(struct ctld *d)
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
redisReply *ctld_cmdv(struct ctld *d, int argc, const char **argv)
{
	redisReply *r;

	if (d->rc == NULL)
		return NULL;
	r = redisCommandArgv(d->rc, argc, argv, NULL);
	if (r == NULL)
		rc_drop(d, d->rc->errstr[0] ? d->rc->errstr : "no reply");
	return r;
}

redisReply *ctld_cmd(struct ctld *d, const char *fmt, ...)
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
int ctld_pipe(struct ctld *d, size_t n, redisReply **out)
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

void ctld_freev(redisReply **r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (r[i] != NULL)
			freeReplyObject(r[i]);
}
