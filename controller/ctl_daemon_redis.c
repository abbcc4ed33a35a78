// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_daemon_redis.c: the daemon's one blocking hiredis connection
 * (common/ice_redis: connect, and reconnect at most every 500 ms), commands
 * and pipelines with the
 * configured reply timeout; a broken connection is dropped, which also
 * drops the leadership.
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_daemon_internal.h"
#include "ice_log.h"
#include "ice_time.h"

static void rc_drop(struct ctld *d, const char *why)
{
	if (d->link.c != NULL)
		ice_warn(SUB, "redis at %s: %s; reconnecting", d->cfg.redis, why);
	ice_redis_down(&d->link, ice_now_ns(), why);
	if (d->leader)
		ice_warn(SUB, "%s: no longer leader (redis lost)", d->cfg.id);
	d->leader = false;
}

bool ctld_redis_up(struct ctld *d)
{
	int ret = ice_redis_up(&d->link, ice_now_ns());

	if (ret == -ECONNREFUSED && d->link.failures == 1)
		ice_warn(SUB, "redis at %s: %s; retrying", d->cfg.redis, d->link.why);
	else if (ret == 1)
		ice_info(SUB, "redis at %s: connected", d->cfg.redis);
	return ret >= 0;
}

/* One command; NULL when the connection broke (dropped). */
redisReply *ctld_cmdv(struct ctld *d, int argc, const char **argv)
{
	redisReply *r;

	if (d->link.c == NULL)
		return NULL;
	r = redisCommandArgv(d->link.c, argc, argv, NULL);
	if (r == NULL)
		rc_drop(d, d->link.c->errstr[0] ? d->link.c->errstr : "no reply");
	return r;
}

redisReply *ctld_cmd(struct ctld *d, const char *fmt, ...)
{
	redisReply *r;
	va_list ap;

	if (d->link.c == NULL)
		return NULL;
	va_start(ap, fmt);
	r = redisvCommand(d->link.c, fmt, ap);
	va_end(ap);
	if (r == NULL)
		rc_drop(d, d->link.c->errstr[0] ? d->link.c->errstr : "no reply");
	return r;
}

/* Replies of n appended commands into out[] (NULL entries on failure). */
int ctld_pipe(struct ctld *d, size_t n, redisReply **out)
{
	for (size_t i = 0; i < n; i++)
		out[i] = NULL;
	if (ice_redis_replies(d->link.c, n, out, NULL) < 0) {
		rc_drop(d, d->link.c->errstr[0] ? d->link.c->errstr : "pipeline broke");
		return -EIO;
	}
	return 0;
}

void ctld_freev(redisReply **r, size_t n)
{
	ice_redis_free_replies(r, n);
}
