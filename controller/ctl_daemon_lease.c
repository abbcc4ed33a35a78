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

/* A standby whose lease never comes: a controller's lease always expires
 * (PX), so a leader key without expiry was written by something else (an
 * operator, a hostile client with write access to it). Standing by is all
 * a controller may do (taking it could split the brain with a peer), but
 * it says so every 10 s, with the holder. */
static void lease_squat_check(struct ctld *d)
{
	uint64_t now = ice_now_ns();
	redisReply *r;

	if (now < d->squat_check_ns)
		return;
	d->squat_check_ns = now + 10 * ICE_NSEC_PER_SEC;
	r = ctld_cmd(d, "PTTL %s", d->k_leader);
	if (r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == -1) {
		redisReply *o = ctld_cmd(d, "GET %s", d->k_leader);

		ice_warn(SUB,
			 "%s: the leader key %s is held by '%.64s' with no expiry: not a "
			 "controller's lease (theirs expire); standing by until it is removed",
			 d->cfg.id, d->k_leader,
			 o != NULL && o->type == REDIS_REPLY_STRING ? o->str : "?");
		if (o != NULL)
			freeReplyObject(o);
	}
	if (r != NULL)
		freeReplyObject(r);
}

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
		}
		freeReplyObject(r);
		return;
	}
	r = ctld_cmd(d, "SET %s %s NX PX %s", d->k_leader, d->cfg.id, ttl);
	if (r == NULL)
		return;
	if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0) {
		d->leader = true;
		d->trig |= TRIG_TAKEOVER;
		d->epoch_check = true; /* the counter judged before the first epoch */
		d->last_pub_ns = 0;
		ice_info(SUB, "%s: leader now (lease %s ms at %s)", d->cfg.id, ttl, d->k_leader);
		printf("leader %s at %" PRIu64 " ms\n", d->cfg.id, ice_wall_ms());
		fflush(stdout);
	} else if (!d->started) {
		redisReply *o = ctld_cmd(d, "GET %s", d->k_leader);

		if (o != NULL && o->type == REDIS_REPLY_STRING)
			ice_info(SUB, "%s: standby (leader is %s)", d->cfg.id, o->str);
		if (o != NULL)
			freeReplyObject(o);
	}
	if (!d->leader)
		lease_squat_check(d);
	if (r != NULL)
		freeReplyObject(r);
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
