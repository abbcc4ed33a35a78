// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_daemon_publish.c: fenced plan publishing. The epoch comes from an
 * atomic INCR of a counter recovered, when lost, with the wall clock as its
 * floor (epoch_recover: no number from Redis taken above the clock +
 * CTLD_EPOCH_AHEAD_MS, docs/security.md "Epochs"), and the plans,
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

/* The next epoch: the counter + 1 (or ARGV[2], the highest this controller
 * issued, + 1), only for the lease holder. -3: the counter needs recovering
 * first (epoch_recover): missing (a restarted or flushed Redis), not a
 * number, above ARGV[3] (now_ms + CTLD_EPOCH_AHEAD_MS: not credible), or
 * below a credible published epoch (a failover lost its last writes).
 * KEYS leader, epoch, published (one slot: {ctl}); ARGV id, own, limit */
static const char LUA_EPOCH[] =
	"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end "
	"local c = tonumber(redis.call('GET', KEYS[2]) or '') "
	"local lim = tonumber(ARGV[3]) "
	"if c == nil or c < 0 or c > lim then return -3 end "
	"local p = tonumber(redis.call('HGET', KEYS[3], 'epoch') or '0') or 0 "
	"if p > c and p <= lim then return -3 end "
	"local e = math.max(c, tonumber(ARGV[2])) + 1 "
	"redis.call('SET', KEYS[2], string.format('%d', e)) "
	"return e";
/* Recovery: the counter set to ARGV[2] (ctld_epoch_base); a published
 * epoch above it was not credible and would fence every plan off: lowered. */
static const char LUA_EPOCH_SET[] =
	"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end "
	"redis.call('SET', KEYS[2], ARGV[2]) "
	"local p = tonumber(redis.call('HGET', KEYS[3], 'epoch') or '0') "
	"if p == nil or p > tonumber(ARGV[2]) then "
	"redis.call('HSET', KEYS[3], 'epoch', ARGV[2]) end "
	"return 0";
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

uint64_t ctld_epoch_base(struct ctld_epoch_val *counter, bool have_counter,
			 struct ctld_epoch_val *floors, size_t n, uint64_t own, uint64_t now_ms)
{
	uint64_t lim = now_ms + CTLD_EPOCH_AHEAD_MS, base = now_ms;

	if (lim >= ICE_PLAN_EPOCH_MAX)
		lim = ICE_PLAN_EPOCH_MAX - 1;
	if (have_counter) {
		counter->credible = counter->v <= lim;
		if (counter->credible)
			base = counter->v;
	}
	for (size_t i = 0; i < n; i++) {
		floors[i].credible = floors[i].v <= lim;
		if (floors[i].credible && floors[i].v > base)
			base = floors[i].v;
	}
	return own > base ? own : base;
}

/* A value read from Redis and not adopted: said once per value (log and
 * {ctl}:status epoch_ignored, epoch_ignored_key, epoch_ignored_ms). */
static void epoch_ignored(struct ctld *d, const char *what, uint64_t v, uint64_t now_ms)
{
	char vs[24], ts[24];
	const char *kv[] = {"epoch_ignored", vs, "epoch_ignored_key", what, "epoch_ignored_ms", ts};

	if (v == d->bogus_epoch)
		return;
	d->bogus_epoch = v;
	ice_warn(SUB,
		 "%s: %s holds epoch %" PRIu64 ", more than %llu ms ahead of this clock (%" PRIu64
		 " ms): not one a controller issued; ignored",
		 d->cfg.id, what, v, CTLD_EPOCH_AHEAD_MS, now_ms);
	snprintf(vs, sizeof(vs), "%" PRIu64, v);
	snprintf(ts, sizeof(ts), "%" PRIu64, now_ms);
	ctld_status_write(d, kv, 6);
}

/* A decimal epoch from a reply; *have: the reply held something (a value
 * that is not a decimal number comes back as UINT64_MAX: never credible). */
static uint64_t reply_u64(const redisReply *r, bool *have)
{
	char *end;
	unsigned long long v;

	*have = false;
	if (r == NULL || r->type != REDIS_REPLY_STRING || r->str == NULL || r->str[0] == '\0')
		return 0;
	*have = true;
	errno = 0;
	v = strtoull(r->str, &end, 10);
	if (errno != 0 || *end != '\0' || r->str[0] == '-')
		return UINT64_MAX;
	return v;
}

/* Set the counter again: at a takeover, when the counter is missing or not
 * credible, when a publication or a host's fence found a newer epoch, when
 * a host refused our epoch as stale (d->stale_floor). Reads the counter,
 * the published record, every host's applied epoch and last_epoch (and,
 * on a cluster, its fence), keeps the credible ones (ctld_epoch_base). */
static int epoch_recover(struct ctld *d)
{
	size_t nv = 2 + 3 * (size_t)d->nhosts, n = 0;
	struct ctld_epoch_val cnt = {0}, *fl = calloc(nv, sizeof(*fl));
	char(*what)[ICE_RKEY_MAX + 16] = calloc(nv, sizeof(*what));
	redisReply **r = calloc(d->nhosts + 2, sizeof(*r));
	char key[ICE_RKEY_MAX], bs[24], ts[24];
	uint64_t now = ice_wall_ms(), base;
	bool have_cnt = false, have;
	redisReply *x;
	int ret = -EIO;

	if (fl == NULL || what == NULL || r == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	x = ctld_cmd(d, "GET %s", d->k_epoch);
	if (x == NULL)
		goto out;
	cnt.v = reply_u64(x, &have_cnt);
	freeReplyObject(x);
	x = ctld_cmd(d, "HGET %s epoch", d->k_pub);
	if (x == NULL)
		goto out;
	fl[n].v = reply_u64(x, &have);
	freeReplyObject(x);
	if (have)
		snprintf(what[n++], sizeof(*what), "%s epoch", d->k_pub);
	fl[n].v = d->stale_floor;
	if (fl[n].v != 0)
		snprintf(what[n++], sizeof(*what), "a host's refusal");
	for (uint32_t i = 0; i < d->nhosts; i++)
		ice_redis_appendf(&d->link, "HMGET %s epoch last_epoch",
				  ice_rkey_str(key, sizeof(key), ICE_RK_PLAN_APPLIED, d->cfg.fabric,
					       d->hosts[i].name, NULL));
	if (ctld_pipe(d, d->nhosts, r) < 0)
		goto out;
	for (uint32_t i = 0; i < d->nhosts; i++) {
		for (size_t j = 0; r[i]->type == REDIS_REPLY_ARRAY && j < r[i]->elements && j < 2;
		     j++) {
			fl[n].v = reply_u64(r[i]->element[j], &have);
			if (have)
				snprintf(what[n++], sizeof(*what), "%s %s",
					 ice_rkey_str(key, sizeof(key), ICE_RK_PLAN_APPLIED,
						      d->cfg.fabric, d->hosts[i].name, NULL),
					 j == 0 ? "epoch" : "last_epoch");
		}
	}
	ctld_freev(r, d->nhosts);
	ctld_lease_keep(d);
	/* cluster: the hosts' fences too (an agent that was away never
	 * accepted the newest epoch its fence holds) */
	for (uint32_t i = 0; d->link.cluster && i < d->nhosts; i++)
		ice_redis_appendf(&d->link, "GET %s",
				  ice_rkey_str(key, sizeof(key), ICE_RK_PLAN_FENCE, d->cfg.fabric,
					       d->hosts[i].name, NULL));
	if (d->link.cluster) {
		if (ctld_pipe(d, d->nhosts, r) < 0)
			goto out;
		for (uint32_t i = 0; i < d->nhosts; i++) {
			fl[n].v = reply_u64(r[i], &have);
			if (have)
				snprintf(what[n++], sizeof(*what), "%s",
					 ice_rkey_str(key, sizeof(key), ICE_RK_PLAN_FENCE,
						      d->cfg.fabric, d->hosts[i].name, NULL));
		}
		ctld_freev(r, d->nhosts);
	}
	base = ctld_epoch_base(&cnt, have_cnt, fl, n, d->last_epoch, now);
	if (have_cnt && !cnt.credible)
		epoch_ignored(d, d->k_epoch, cnt.v, now);
	for (size_t i = 0; i < n; i++)
		if (!fl[i].credible)
			epoch_ignored(d, what[i], fl[i].v, now);
	snprintf(bs, sizeof(bs), "%" PRIu64, base);
	x = ctld_cmd(d, "EVAL %s 3 %s %s %s %s %s", LUA_EPOCH_SET, d->k_leader, d->k_epoch,
		     d->k_pub, d->cfg.id, bs);
	if (x == NULL)
		goto out;
	if (x->type != REDIS_REPLY_INTEGER || x->integer != 0) {
		freeReplyObject(x);
		ret = -EPERM;
		goto out;
	}
	freeReplyObject(x);
	if (!have_cnt || base != cnt.v) {
		const char *kv[] = {"epoch_recovered", bs, "epoch_recovered_ms", ts};

		ice_warn(SUB,
			 "%s: epoch counter %s -> %" PRIu64 " (%s; clock %" PRIu64
			 " ms, own %" PRIu64 ")",
			 d->cfg.id,
			 !have_cnt	? "missing"
			 : cnt.credible ? "behind"
					: "not credible",
			 base,
			 base == now		 ? "from the clock"
			 : base == d->last_epoch ? "this controller's last epoch"
						 : "the highest credible epoch known",
			 now, d->last_epoch);
		snprintf(ts, sizeof(ts), "%" PRIu64, now);
		ctld_status_write(d, kv, 4);
	}
	d->epoch_check = false;
	d->stale_floor = 0;
	ret = 0;
out:
	free(fl);
	free(what);
	free(r);
	return ret;
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
		else
			d->epoch_check = true; /* number above the newer one */
		freeReplyObject(r);
		return -EPERM;
	}
	freeReplyObject(r);
	rep = calloc(nh + 1, sizeof(*rep));
	if (rep == NULL)
		return -ENOMEM;
	/* in round trips of at most 4096 hosts, the lease renewed between
	 * them (each host's script still checks its fence) */
	for (uint32_t i0 = 0; i0 < nh; i0 += 4096) {
		uint32_t n = nh - i0 < 4096 ? nh - i0 : 4096;

		if (i0 > 0)
			ctld_lease_keep(d);
		if (!d->leader) { /* deposed meanwhile: the rest is the successor's */
			ice_warn(SUB,
				 "%s: lost the lease while publishing epoch %s: %u of %u hosts",
				 d->cfg.id, ep, i0, nh);
			ctld_freev(rep, i0);
			free(rep);
			return -EPERM;
		}
		for (uint32_t i = i0; i < i0 + n; i++) {
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
		if (ctld_pipe(d, n, rep + i0) < 0) {
			ctld_freev(rep, i0);
			free(rep);
			return -EIO;
		}
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
		d->epoch_check = true; /* the next one above the fences */
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
	for (int tries = 0;; tries++) {
		char own_s[24], lim[24];

		if (d->epoch_check && (ret = epoch_recover(d)) < 0) {
			if (ret == -EPERM) {
				ice_warn(SUB, "%s: not leader any more; not publishing", d->cfg.id);
				d->leader = false;
			}
			goto out;
		}
		ret = -EIO;
		snprintf(own_s, sizeof(own_s), "%" PRIu64, d->last_epoch);
		snprintf(lim, sizeof(lim), "%" PRIu64,
			 (uint64_t)(ice_wall_ms() + CTLD_EPOCH_AHEAD_MS));
		r = ctld_cmd(d, "EVAL %s 3 %s %s %s %s %s %s", LUA_EPOCH, d->k_leader, d->k_epoch,
			     d->k_pub, d->cfg.id, own_s, lim);
		if (r == NULL)
			goto out;
		if (r->type != REDIS_REPLY_INTEGER || r->integer != -3 || tries > 0)
			break;
		freeReplyObject(r);
		d->epoch_check = true; /* missing, not credible or behind: recover */
	}
	if (r->type != REDIS_REPLY_INTEGER || r->integer <= 0) {
		if (r->type == REDIS_REPLY_INTEGER && r->integer == -1) {
			ice_warn(SUB, "%s: not leader any more; not publishing", d->cfg.id);
			d->leader = false;
		} else {
			ice_warn(SUB, "%s: no epoch: %s", d->cfg.id,
				 r->type == REDIS_REPLY_ERROR ? r->str
							      : "the counter did not recover");
		}
		freeReplyObject(r);
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
		if (i % 1024 == 1023)
			ctld_lease_keep(d); /* signing 10^4 plans takes a while */
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
		else
			d->epoch_check = true; /* number above the newer one */
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
	/* a reaction not yet in force on every host carries over to a newer
	 * epoch published without a trigger of its own (a QP re-read right
	 * after it): that epoch holds the reaction's plan too, and the line
	 * is printed when it is in force, not lost */
	struct pending carry = *p;

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
	} else if (carry.on && carry.trigger_ms != 0) {
		p->trigger_ms = carry.trigger_ms;
		p->seen_ms = carry.seen_ms;
		p->planned_ms = carry.planned_ms;
		snprintf(p->what, sizeof(p->what), "%s", carry.what);
	}
}

/* host holds epoch le, at or above the one we published to it: it refused
 * ours as stale (its clock, or a controller's, ran ahead; a Redis that lost
 * writes). Number the next plan above it if it is credible and publish
 * again now; else say so once and leave it: such a host takes plans again
 * once the clock has passed its epoch (docs/security.md, "Epochs"). */
static void stale_refusal(struct ctld *d, const char *host, uint64_t le, uint64_t now)
{
	char what[ICE_RKEY_MAX + 16], key[ICE_RKEY_MAX];

	if (le > now + CTLD_EPOCH_AHEAD_MS || le >= ICE_PLAN_EPOCH_MAX) {
		snprintf(what, sizeof(what), "%s last_epoch",
			 ice_rkey_str(key, sizeof(key), ICE_RK_PLAN_APPLIED, d->cfg.fabric, host,
				      NULL));
		epoch_ignored(d, what, le, now);
		return;
	}
	if (d->stale_ms != 0 && now < d->stale_ms + 1000)
		return; /* at most once a second: a host cannot make us spin */
	d->stale_ms = now;
	ice_warn(SUB,
		 "%s: %s holds epoch %" PRIu64 ", not below ours (%" PRIu64
		 "): it refuses our plans as stale; numbering the next above it",
		 d->cfg.id, host, le, d->pend.epoch);
	if (le > d->stale_floor)
		d->stale_floor = le;
	d->epoch_check = true;
	d->trig |= TRIG_REOPT;
	d->last_pub_ns = 0; /* publish even if the plan is the same */
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
		ice_redis_appendf(&d->link, "HMGET %s epoch ts_ms last_epoch", key);
	}
	if (ctld_pipe(d, p->nhosts, r) < 0) {
		free(r);
		return;
	}
	for (uint32_t i = 0; i < p->nhosts; i++) {
		uint64_t e = 0, ts = 0, le = 0;
		bool have;

		if (r[i]->type == REDIS_REPLY_ARRAY && r[i]->elements == 3) {
			e = reply_u64(r[i]->element[0], &have);
			ts = reply_u64(r[i]->element[1], &have);
			le = reply_u64(r[i]->element[2], &have);
		}
		if (e >= p->epoch && e != UINT64_MAX) {
			ok++;
			if (e == p->epoch && ts > max_ts)
				max_ts = ts;
		} else if (le >= p->epoch && !p->stale_said) {
			stale_refusal(d, p->hosts[i], le, now);
			p->stale_said = true; /* one renumbering per publication */
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
