// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_daemon_publish.c: fenced plan publishing. The epoch comes from an
 * atomic INCR above every epoch the agents have accepted, and the plans,
 * the published record and the log entry are written by one script that
 * checks the lease and the epoch first, so a deposed leader cannot publish.
 * Then the agents' write-backs are read until every host applied the epoch
 * (the reaction time); the status hash and dry runs' output are here too.
 *
 * On Redis Cluster a script touches the keys of one slot only, so the one
 * script is split (docs/redis-schema.md, "Fencing on a cluster"): the lease,
 * the epoch counter, the published record and the log share the {ctl} slot
 * and one script there checks the lease and commits the publication; then
 * each host's plan is written by a script in its host's slot that refuses
 * an epoch not above that host's fence key. A deposed leader's epochs are
 * all below the new leader's, so once the new leader has published to a
 * host (it publishes to every host when it takes over) nothing of the old
 * one lands there, and agents refuse any epoch not above the one in force.
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_daemon_internal.h"
#include "ice_log.h"
#include "ice_time.h"

/* ---- publishing */

/* The next epoch, above ARGV[2] (the highest this controller and the agents
 * know: a restarted Redis has forgotten the counter, the agents have not). */
static const char LUA_EPOCH[] = "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end "
				"local c = tonumber(redis.call('GET', KEYS[2]) or '0') or 0 "
				"local floor = tonumber(ARGV[2]) "
				"if c >= tonumber(ARGV[3]) or c < 0 then c = 0 end "
				"local e = math.max(c, floor) + 1 "
				"redis.call('SET', KEYS[2], string.format('%d', e)) "
				"return e";
static const char LUA_PUBLISH[] =
	"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end "
	"local last = tonumber(redis.call('HGET', KEYS[2], 'epoch') or '0') "
	"if tonumber(ARGV[2]) <= last then return -2 end "
	"redis.call('HSET', KEYS[2], 'epoch', ARGV[2], 'id', ARGV[1], 'ts_ms', ARGV[3], "
	"'hosts', ARGV[4]) "
	"redis.call('XADD', KEYS[3], 'MAXLEN', '~', '1000', '*', 'epoch', ARGV[2], 'id', "
	"ARGV[1], 'ts_ms', ARGV[3], 'hosts', ARGV[4]) "
	"for i = 4, #KEYS do redis.call('SET', KEYS[i], ARGV[i + 1]) "
	"redis.call('PUBLISH', KEYS[i], ARGV[2]) end "
	"return #KEYS - 3";

/* cluster: the lease check and the record, in the {ctl} slot */
static const char LUA_COMMIT[] =
	"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end "
	"local last = tonumber(redis.call('HGET', KEYS[2], 'epoch') or '0') "
	"if tonumber(ARGV[2]) <= last then return -2 end "
	"redis.call('HSET', KEYS[2], 'epoch', ARGV[2], 'id', ARGV[1], 'ts_ms', ARGV[3], "
	"'hosts', ARGV[4]) "
	"redis.call('XADD', KEYS[3], 'MAXLEN', '~', '1000', '*', 'epoch', ARGV[2], 'id', "
	"ARGV[1], 'ts_ms', ARGV[3], 'hosts', ARGV[4]) "
	"return 0";
/* cluster: one host's plan, in its slot: KEYS plan, fence; ARGV epoch, plan */
static const char LUA_HOST_PLAN[] = "local f = tonumber(redis.call('GET', KEYS[2]) or '0') or 0 "
				    "if tonumber(ARGV[1]) <= f then return -2 end "
				    "redis.call('SET', KEYS[2], ARGV[1]) "
				    "redis.call('SET', KEYS[1], ARGV[2]) "
				    "redis.call('PUBLISH', KEYS[1], ARGV[1]) "
				    "return 1";

void ctld_status_write(struct ctld *d, const char *const *kv, int n)
{
	const char *argv[64];
	int argc = 0;
	redisReply *r;

	argv[argc++] = "HSET";
	argv[argc++] = d->k_status;
	for (int i = 0; i < n && argc < 64; i++)
		argv[argc++] = kv[i];
	r = ctld_cmdv(d, argc, argv);
	if (r != NULL)
		freeReplyObject(r);
}

void ctld_dry_print(struct ctld *d, struct ice_host_plan *hps, uint32_t nh,
		    const struct ctl_plan_stats *st, double ecmp)
{
	json_t *o = json_object(), *arr = json_array();
	char *txt;

	for (uint32_t i = 0; i < nh; i++) {
		char *s = ice_plan_dump(&hps[i]);
		json_t *plan = s != NULL ? json_loads(s, 0, NULL) : NULL;

		if (plan != NULL)
			json_array_append_new(arr, plan);
		free(s);
	}
	json_object_set_new(o, "max_util", json_real(st->max_util));
	json_object_set_new(o, "bound", json_real(st->bound));
	json_object_set_new(o, "ecmp_util", json_real(ecmp));
	json_object_set_new(o, "plans", arr);
	txt = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(6));
	if (txt != NULL && !d->cfg.dry_quiet)
		printf("%s\n", txt);
	fflush(stdout);
	free(d->dry_text);
	d->dry_text = txt;
	json_decref(o);
}

/* The highest epoch known: ours, and what the agents accepted last. A
 * number at or above ICE_PLAN_EPOCH_MAX is not an epoch any controller
 * issued (Redis has no users yet: anyone could have written it); taking it
 * would number every later plan near the 64-bit limit, so it is ignored and
 * said once. The counter in Redis is bounded the same way (LUA_EPOCH). */
static uint64_t epoch_floor(struct ctld *d)
{
	redisReply **r = calloc(d->nhosts + 1, sizeof(*r));
	uint64_t floor = d->last_epoch;
	char key[ICE_RKEY_MAX];

	if (r == NULL)
		return floor;
	for (uint32_t i = 0; i < d->nhosts; i++)
		ice_redis_appendf(&d->link, "HMGET %s epoch last_epoch",
				  ice_rkey_str(key, sizeof(key), ICE_RK_PLAN_APPLIED, d->cfg.fabric,
					       d->hosts[i].name, NULL));
	if (ctld_pipe(d, d->nhosts, r) == 0) {
		for (uint32_t i = 0; i < d->nhosts; i++)
			for (size_t j = 0; r[i]->type == REDIS_REPLY_ARRAY && j < r[i]->elements;
			     j++) {
				const char *v = r[i]->element[j]->str;
				uint64_t e = v != NULL ? strtoull(v, NULL, 10) : 0;

				if (e >= ICE_PLAN_EPOCH_MAX) {
					if (e != d->bogus_epoch)
						ice_warn(SUB,
							 "%s reports epoch %" PRIu64
							 ", not one a controller issued "
							 "(>= 2^48): ignored",
							 d->hosts[i].name, e);
					d->bogus_epoch = e;
					continue;
				}
				if (e > floor)
					floor = e;
			}
		ctld_freev(r, d->nhosts);
	}
	/* cluster: the hosts' fences too (an agent that was away never
	 * accepted the newest epoch its fence holds) */
	for (uint32_t i = 0; d->link.cluster && d->link.c != NULL && i < d->nhosts; i++)
		ice_redis_appendf(&d->link, "GET %s",
				  ice_rkey_str(key, sizeof(key), ICE_RK_PLAN_FENCE, d->cfg.fabric,
					       d->hosts[i].name, NULL));
	if (d->link.cluster && d->link.c != NULL && ctld_pipe(d, d->nhosts, r) == 0) {
		for (uint32_t i = 0; i < d->nhosts; i++) {
			uint64_t e = r[i]->type == REDIS_REPLY_STRING
					     ? strtoull(r[i]->str, NULL, 10)
					     : 0;

			if (e > floor && e < ICE_PLAN_EPOCH_MAX)
				floor = e;
		}
		ctld_freev(r, d->nhosts);
	}
	free(r);
	return floor;
}

/* Cluster: commit in the {ctl} slot, then one script per host in its own
 * slot, pipelined (grouped per shard by ice_redis). own[]: key, plan pairs */
static int publish_sharded(struct ctld *d, const struct ice_host_plan *hps, uint32_t nh,
			   const char *const *own, const char *ep, const char *ts,
			   const char *hostlist)
{
	redisReply *r, **rep;
	char fence[ICE_RKEY_MAX];
	uint32_t refused = 0, ok = 0;

	r = ctld_cmd(d, "EVAL %s 3 %s %s %s %s %s %s %s", LUA_COMMIT, d->k_leader, d->k_pub,
		     d->k_log, d->cfg.id, ep, ts, hostlist);
	if (r == NULL)
		return -EIO;
	if (r->type != REDIS_REPLY_INTEGER || r->integer != 0) {
		ice_warn(SUB, "%s: publish of epoch %s refused by the fence (%s)", d->cfg.id, ep,
			 r->type == REDIS_REPLY_INTEGER && r->integer == -1 ? "lease lost"
			 : r->type == REDIS_REPLY_INTEGER		    ? "a newer epoch is out"
									    : r->str);
		if (r->type == REDIS_REPLY_INTEGER && r->integer == -1)
			d->leader = false;
		freeReplyObject(r);
		return -EPERM;
	}
	freeReplyObject(r);
	rep = calloc(nh + 1, sizeof(*rep));
	if (rep == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < nh; i++) {
		const char *argv[] = {"EVAL",
				      LUA_HOST_PLAN,
				      "2",
				      own[2 * i],
				      ice_rkey_str(fence, sizeof(fence), ICE_RK_PLAN_FENCE,
						   d->cfg.fabric, hps[i].host, NULL),
				      ep,
				      own[2 * i + 1]};

		ice_redis_appendv(&d->link, 7, argv, NULL);
	}
	if (ctld_pipe(d, nh, rep) < 0) {
		free(rep);
		return -EIO;
	}
	for (uint32_t i = 0; i < nh; i++) {
		if (rep[i]->type == REDIS_REPLY_INTEGER && rep[i]->integer == 1) {
			ok++;
			continue;
		}
		if (refused++ < 5)
			ice_warn(SUB, "%s: plan of epoch %s for %s refused by its fence (%s)",
				 d->cfg.id, ep, hps[i].host,
				 rep[i]->type == REDIS_REPLY_ERROR ? rep[i]->str
								   : "a newer epoch is there");
	}
	ctld_freev(rep, nh);
	free(rep);
	if (refused > 0) {
		ice_warn(SUB, "%s: epoch %s landed on %u of %u hosts", d->cfg.id, ep, ok, nh);
		return -EPERM;
	}
	return 0;
}

int ctld_publish(struct ctld *d, struct ice_host_plan *hps, uint32_t nh, uint64_t *epoch_out)
{
	const char **argv = calloc(2 * (size_t)nh + 16, sizeof(char *));
	char **own = calloc(2 * (size_t)nh + 2, sizeof(char *));
	char nk[16], ep[24], ts[24], hostlist[1024] = "";
	redisReply *r;
	int argc = 0, ret = -EIO;
	uint64_t epoch, now = ice_wall_ms();

	if (argv == NULL || own == NULL)
		goto out;
	snprintf(ep, sizeof(ep), "%" PRIu64, epoch_floor(d));
	r = ctld_cmd(d, "EVAL %s 2 %s %s %s %s %llu", LUA_EPOCH, d->k_leader, d->k_epoch, d->cfg.id,
		     ep, (unsigned long long)ICE_PLAN_EPOCH_MAX);
	if (r == NULL)
		goto out;
	if (r->type != REDIS_REPLY_INTEGER || r->integer <= 0) {
		freeReplyObject(r);
		ice_warn(SUB, "%s: not leader any more; not publishing", d->cfg.id);
		d->leader = false;
		ret = -EPERM;
		goto out;
	}
	epoch = (uint64_t)r->integer;
	freeReplyObject(r);
	for (uint32_t i = 0; i < nh; i++) {
		hps[i].epoch = epoch;
		hps[i].issued_ms = now;
		hps[i].lifetime_ms = (uint32_t)(d->cfg.lifetime / ICE_NSEC_PER_MSEC);
		own[2 * i] = malloc(ICE_RKEY_MAX);
		own[2 * i + 1] = ice_plan_sign(&hps[i], &d->key);
		if (own[2 * i] == NULL || own[2 * i + 1] == NULL) {
			ret = -ENOMEM;
			goto out;
		}
		ice_rkey_str(own[2 * i], ICE_RKEY_MAX, ICE_RK_PLAN, d->cfg.fabric, hps[i].host,
			     NULL);
		if (strlen(hostlist) + strlen(hps[i].host) + 2 < sizeof(hostlist)) {
			if (i > 0)
				strcat(hostlist, ",");
			strcat(hostlist, hps[i].host);
		}
	}
	snprintf(nk, sizeof(nk), "%u", 3 + nh);
	snprintf(ep, sizeof(ep), "%" PRIu64, epoch);
	snprintf(ts, sizeof(ts), "%" PRIu64, now);
	if (d->link.cluster) {
		ret = publish_sharded(d, hps, nh, (const char *const *)own, ep, ts, hostlist);
		if (ret == 0)
			*epoch_out = epoch;
		goto out;
	}
	argv[argc++] = "EVAL";
	argv[argc++] = LUA_PUBLISH;
	argv[argc++] = nk;
	argv[argc++] = d->k_leader;
	argv[argc++] = d->k_pub;
	argv[argc++] = d->k_log;
	for (uint32_t i = 0; i < nh; i++)
		argv[argc++] = own[2 * i];
	argv[argc++] = d->cfg.id;
	argv[argc++] = ep;
	argv[argc++] = ts;
	argv[argc++] = hostlist;
	for (uint32_t i = 0; i < nh; i++)
		argv[argc++] = own[2 * i + 1];
	r = ctld_cmdv(d, argc, argv);
	if (r == NULL)
		goto out;
	if (r->type == REDIS_REPLY_INTEGER && r->integer >= 0) {
		ret = 0;
		*epoch_out = epoch;
	} else {
		ice_warn(SUB, "%s: publish of epoch %" PRIu64 " refused by the fence (%s)",
			 d->cfg.id, epoch,
			 r->type == REDIS_REPLY_INTEGER && r->integer == -1 ? "lease lost"
			 : r->type == REDIS_REPLY_INTEGER		    ? "a newer epoch is out"
									    : r->str);
		if (r->type == REDIS_REPLY_INTEGER && r->integer == -1)
			d->leader = false;
		d->m.refused_fenced++;
		ret = -EPERM;
	}
	freeReplyObject(r);
out:
	for (uint32_t i = 0; own != NULL && i < 2 * nh; i++)
		free(own[i]);
	free(own);
	free(argv);
	return ret;
}

void ctld_pend_start(struct ctld *d, uint64_t epoch, struct ice_host_plan *hps, uint32_t nh,
		     uint64_t planned_ms)
{
	struct pending *p = &d->pend;

	free(p->hosts);
	memset(p, 0, sizeof(*p));
	p->hosts = calloc(nh + 1, sizeof(*p->hosts));
	if (p->hosts == NULL)
		return;
	for (uint32_t i = 0; i < nh; i++)
		snprintf(p->hosts[i], sizeof(p->hosts[i]), "%s", hps[i].host);
	p->nhosts = nh;
	p->on = nh > 0;
	p->epoch = epoch;
	p->pub_ms = ice_wall_ms();
	p->planned_ms = planned_ms;
	if (d->trig_ms != 0 && (d->trig & (TRIG_LINK | TRIG_COLL | TRIG_PMAP | TRIG_TELEM)) != 0) {
		p->trigger_ms = d->trig_ms;
		p->seen_ms = d->trig_seen_ms;
		snprintf(p->what, sizeof(p->what), "%s", d->trig_what);
	}
}

/* Which epoch did each host apply? Print the reaction time once all did. */
void ctld_read_applied(struct ctld *d)
{
	struct pending *p = &d->pend;
	redisReply **r;
	uint64_t max_ts = 0, now = ice_wall_ms();
	uint32_t ok = 0;
	char key[ICE_RKEY_MAX];

	if (!p->on || d->link.c == NULL)
		return;
	r = calloc(p->nhosts, sizeof(*r));
	if (r == NULL)
		return;
	for (uint32_t i = 0; i < p->nhosts; i++) {
		ice_rkey_str(key, sizeof(key), ICE_RK_PLAN_APPLIED, d->cfg.fabric, p->hosts[i],
			     NULL);
		ice_redis_appendf(&d->link, "HMGET %s epoch ts_ms", key);
	}
	if (ctld_pipe(d, p->nhosts, r) < 0) {
		free(r);
		return;
	}
	for (uint32_t i = 0; i < p->nhosts; i++) {
		uint64_t e = 0, ts = 0;

		if (r[i]->type == REDIS_REPLY_ARRAY && r[i]->elements == 2 &&
		    r[i]->element[0]->str != NULL && r[i]->element[1]->str != NULL) {
			e = strtoull(r[i]->element[0]->str, NULL, 10);
			ts = strtoull(r[i]->element[1]->str, NULL, 10);
		}
		if (e >= p->epoch) {
			ok++;
			if (e == p->epoch && ts > max_ts)
				max_ts = ts;
		}
	}
	ctld_freev(r, p->nhosts);
	free(r);
	if (ok == p->nhosts) {
		p->on = false;
		if (p->trigger_ms != 0 && max_ts >= p->trigger_ms) {
			char rm[24], ep[24];
			const char *kv[] = {"reaction_ms",   rm,     "reaction_epoch", ep,
					    "reaction_what", p->what};

			printf("reaction: %s -> epoch %" PRIu64 " applied on %u hosts in %" PRIu64
			       " ms (seen +%" PRIu64 " ms, planned +%" PRIu64
			       " ms, published +%" PRIu64 " ms, applied +%" PRIu64 " ms)\n",
			       p->what, p->epoch, p->nhosts, max_ts - p->trigger_ms,
			       p->seen_ms > p->trigger_ms ? p->seen_ms - p->trigger_ms : 0,
			       p->planned_ms - p->seen_ms, p->pub_ms - p->planned_ms,
			       max_ts > p->pub_ms ? max_ts - p->pub_ms : 0);
			fflush(stdout);
			snprintf(rm, sizeof(rm), "%" PRIu64, max_ts - p->trigger_ms);
			ctld_hist_add(&d->m.react_hist, ctld_react_buckets,
				      (double)(max_ts - p->trigger_ms) / 1e3);
			snprintf(ep, sizeof(ep), "%" PRIu64, p->epoch);
			ctld_status_write(d, kv, 6);
		} else {
			ice_info(SUB,
				 "epoch %" PRIu64 " in force on all %u hosts (%" PRIu64
				 " ms after publishing)",
				 p->epoch, p->nhosts, max_ts > p->pub_ms ? max_ts - p->pub_ms : 0);
		}
	} else if (now > p->pub_ms + APPLY_WAIT_MS) {
		ice_warn(SUB, "epoch %" PRIu64 " applied on %u of %u hosts after %u ms", p->epoch,
			 ok, p->nhosts, APPLY_WAIT_MS);
		p->on = false;
	}
}
