// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_daemon_lease.c: leader election by a Redis lease: SET NX PX to take
 * it, a compare-and-PEXPIRE script to renew it, compare-and-DEL to give it
 * up. Publishing is fenced on the same key (ctl_daemon_publish.c).
 */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ctl_daemon_internal.h"
#include "ice_log.h"
#include "ice_time.h"

/* ---- lease */

static const char LUA_RENEW[] = "if redis.call('GET', KEYS[1]) == ARGV[1] then "
				"return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end";
static const char LUA_RELEASE[] =
	"if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) "
	"else return 0 end";

/*
 * Taking the lease, in one script: the key is taken when it is free, and
 * also when it holds something that cannot be a controller's lease: a value
 * with no expiry, or one that outlives the longest lease a controller may
 * be configured with (CTLD_LEASE_MAX_MS). Such a key was written by
 * something else (an operator, a client with the controller's or no
 * credentials) and would otherwise stop publishing for good. The test and
 * the SET are one atomic step, so of several standbys only the first takes
 * it; the others then find a real lease. Replies: 1 taken (free), a string
 * (the squatter's value) taken from a squatter, 0 held by a lease.
 */
#define CTLD_LEASE_MAX_MS 60000 /* lease_ttl's upper bound (ctl_daemon_config.c) */
static const char LUA_TAKE[] =
	"local t = redis.call('PTTL', KEYS[1]) "
	"if t == -2 then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end "
	"if t == -1 or t > tonumber(ARGV[3]) then "
	"local h = redis.call('GET', KEYS[1]) "
	"redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return h end "
	"return 0";

void ctld_lease_tick(struct ctld *d)
{
	char ttl[24];
	redisReply *r;

	snprintf(ttl, sizeof(ttl), "%" PRIu64, (uint64_t)(d->cfg.lease_ttl / ICE_NSEC_PER_MSEC));
	if (d->leader) {
		r = ctld_cmd(d, "EVAL %s 1 %s %s %s", LUA_RENEW, d->k_leader, d->cfg.id, ttl);
		if (r == NULL)
			return;
		if (r->type != REDIS_REPLY_INTEGER || r->integer != 1) {
			ice_warn(SUB, "%s: lost the leader lease; standing by", d->cfg.id);
			d->leader = false;
		} else {
			d->lease_ns = ice_now_ns();
		}
		freeReplyObject(r);
		return;
	}
	r = ctld_cmd(d, "EVAL %s 1 %s %s %s %d", LUA_TAKE, d->k_leader, d->cfg.id, ttl,
		     CTLD_LEASE_MAX_MS);
	if (r == NULL)
		return;
	if ((r->type == REDIS_REPLY_INTEGER && r->integer == 1) || r->type == REDIS_REPLY_STRING) {
		if (r->type == REDIS_REPLY_STRING) {
			d->squats++;
			ice_warn(SUB,
				 "%s: the leader key %s held '%.64s' with no expiry or one beyond "
				 "%d ms: not a controller's lease; taken over (squat %" PRIu64 ")",
				 d->cfg.id, d->k_leader, r->str, CTLD_LEASE_MAX_MS, d->squats);
		}
		d->leader = true;
		d->lease_ns = ice_now_ns();
		d->lease_err = false;
		d->trig |= TRIG_TAKEOVER;
		d->epoch_check = true; /* the counter judged before the first epoch */
		d->last_pub_ns = 0;
		ice_info(SUB, "%s: leader now (lease %s ms at %s)", d->cfg.id, ttl, d->k_leader);
		printf("leader %s at %" PRIu64 " ms\n", d->cfg.id, ice_wall_ms());
		fflush(stdout);
	} else if (r->type == REDIS_REPLY_ERROR) {
		if (!d->lease_err)
			ice_warn(SUB, "%s: taking the lease at %s: %s", d->cfg.id, d->k_leader,
				 r->str);
		d->lease_err = true;
	} else if (!d->started) {
		redisReply *o = ctld_cmd(d, "GET %s", d->k_leader);

		if (o != NULL && o->type == REDIS_REPLY_STRING)
			ice_info(SUB, "%s: standby (leader is %s)", d->cfg.id, o->str);
		if (o != NULL)
			freeReplyObject(o);
	}
	freeReplyObject(r);
}

void ctld_lease_keep(struct ctld *d)
{
	if (d->leader && !d->cfg.dry_run && d->link.c != NULL &&
	    ice_now_ns() >= d->lease_ns + d->cfg.lease_ttl / 3)
		ctld_lease_tick(d);
}

void ctld_lease_release(struct ctld *d)
{
	redisReply *r;

	if (d->link.c == NULL || !d->leader)
		return;
	r = ctld_cmd(d, "EVAL %s 1 %s %s", LUA_RELEASE, d->k_leader, d->cfg.id);
	if (r != NULL)
		freeReplyObject(r);
	ice_info(SUB, "%s: lease released", d->cfg.id);
}
