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
	ice_redis_down(&d->link, ice_now_ns(), why);
	ice_warn(SUB, "redis at %s: %s; reconnecting", d->cfg.redis, d->link.why);
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
	r = ice_redis_cmdv(&d->link, argc, argv, NULL);
	if (r == NULL)
		rc_drop(d, NULL);
	return r;
}

redisReply *ctld_cmd(struct ctld *d, const char *fmt, ...)
{
	redisReply *r;
	va_list ap;

	if (d->link.c == NULL)
		return NULL;
	va_start(ap, fmt);
	r = ice_redis_vcmdf(&d->link, fmt, ap);
	va_end(ap);
	if (r == NULL)
		rc_drop(d, NULL);
	return r;
}

/* Replies of n appended commands into out[] (NULL entries on failure). */
int ctld_pipe(struct ctld *d, size_t n, redisReply **out)
{
	for (size_t i = 0; i < n; i++)
		out[i] = NULL;
	if (ice_redis_pipe(&d->link, n, out, NULL) < 0) {
		rc_drop(d, NULL);
		return -EIO;
	}
	return 0;
}

void ctld_freev(redisReply **r, size_t n)
{
	ice_redis_free_replies(r, n);
}
