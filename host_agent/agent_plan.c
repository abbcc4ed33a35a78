// SPDX-License-Identifier: Apache-2.0
/*
 * agent_plan: fetch, check and apply the controller's plans (agent_plan.h).
 *
 * Two hiredis connections of its own, so the telemetry pipeline is never
 * held up: "sub" is SUBSCRIBEd to the host's plan channel and only read when
 * poll() says so; "cmd" GETs the plan key and writes the applied epoch back.
 * Both reconnect with back-off (0.5 s doubling to 8 s).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "agent_internal.h"
#include "agent_plan.h"
#include "ice_plan.h"
#include "ice_redis.h"
#include "ice_time.h"

struct agent_plan {
	const struct agent_cfg *cfg;
	struct ice_ctrl *ctrl;
	struct ice_plan_keyring ring; /* the controller's public keys */
	struct stat ring_st;	      /* of the file they came from, to see it change */
	struct stat ring_bad;	      /* a change that did not load (said once) */
	char pkey[320];		      /* plan key and channel */
	char akey[320];		      /* applied hash */

	struct ice_redis link; /* commands; its back-off paces both connections */
	redisContext *sub;     /* the plan channel's subscription */
	uint64_t next_poll_ns;
	bool fetch; /* a notification came: GET the plan now */

	struct ice_host_plan cur;
	bool have;	      /* cur is in force */
	uint64_t last_epoch;  /* highest epoch accepted */
	char epoch_path[512]; /* where last_epoch is kept; "" = memory only */
	char *last_json;      /* the last text offered */
	uint64_t refused;
	bool wb_due; /* write-back pending */
	uint64_t applied_ms;
	uint32_t applied, absent; /* entries written / without a slot */
	char reason[1024];	  /* last refusal */
	uint64_t refused_ms;
	bool refusal_due;
	bool expired_due;

	/* the verbs hook's plan file (ccl_hooks/ccl_plan.h), for QPs that
	 * connect later: the plan's ports (and traffic classes) per peer */
	char file_path[512];
	char *file_text; /* what is in it; NULL: no file */
	bool file_due;

	agent_plan_dcqcn_fn dcqcn_fn; /* the NIC backend's, or NULL */
	void *dcqcn_ctx;
	bool dcqcn_set; /* a plan's profile is on the NIC */

	/* slots this agent wrote: the qpn it wrote for, and the epoch */
	uint32_t mine_qpn[ICE_CTRL_SLOTS];
	uint64_t mine_epoch[ICE_CTRL_SLOTS];
};

/* The epoch floor from its file: 0 and *floor set (0 when the file does not
 * exist yet), or -errno with err naming the file. A file another user could
 * have written is refused, like a key file. */
static int epoch_load(const char *path, uint64_t *floor, struct ice_cfg_err *err)
{
	char buf[32], *end;
	struct stat st;
	ssize_t n;
	int fd;

	*floor = 0;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		ice_cfg_fail(err, path, "epoch_file", "cannot open: %s", strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 022) != 0) {
		close(fd);
		ice_cfg_fail(err, path, "epoch_file",
			     "expected a regular file owned by this user or root, not writable "
			     "by group or others");
		return -EPERM;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	errno = 0;
	*floor = strtoull(buf, &end, 10);
	if (n <= 0 || end == buf || (*end != '\n' && *end != '\0') || errno != 0) {
		ice_cfg_fail(err, path, "epoch_file", "expected a decimal epoch, got '%.20s'", buf);
		return -EINVAL;
	}
	return 0;
}

/* Written before the plan is applied, to a new file renamed over the old:
 * a crash leaves the old floor or the new one, never a torn one. */
static int epoch_store(const char *path, uint64_t epoch)
{
	char tmp[600], text[32];
	int fd, len, ret = 0;

	snprintf(tmp, sizeof(tmp), "%s.new", path);
	(void)unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	len = snprintf(text, sizeof(text), "%" PRIu64 "\n", epoch);
	if (write(fd, text, (size_t)len) != len)
		ret = -EIO;
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	if (ret == 0 && rename(tmp, path) < 0)
		ret = -errno;
	if (ret < 0)
		(void)unlink(tmp);
	return ret;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static void ring_log(const struct agent_plan *p, const char *what)
{
	char kids[ICE_PLAN_PUBKEYS_MAX * (ICE_PLAN_KID_HEX + 2)] = "";

	for (unsigned i = 0; i < p->ring.n; i++)
		snprintf(kids + strlen(kids), sizeof(kids) - strlen(kids), "%s%s", i ? ", " : "",
			 p->ring.keys[i].kid);
	ice_info(AGENT_SUB, "plan keys %s from %s: %s", what, p->cfg->plan_pubkeys, kids);
}

/* (Re)load the public keys; the old ring stays when the file does not load. */
static int ring_load(struct agent_plan *p, struct ice_cfg_err *err)
{
	struct ice_plan_keyring ring;
	struct stat st;
	int ret;

	if (stat(p->cfg->plan_pubkeys, &st) < 0)
		memset(&st, 0, sizeof(st));
	ret = ice_plan_keyring_load(p->cfg->plan_pubkeys, &ring, err);
	if (ret < 0)
		return ret;
	ice_plan_keyring_fini(&p->ring);
	p->ring = ring;
	p->ring_st = st;
	return 0;
}

/* Before a new plan text: the key file changed (a key added for a rotation,
 * or the old one removed after it)? Then read it again. */
static void ring_refresh(struct agent_plan *p)
{
	struct ice_cfg_err e;
	struct stat st;
	char buf[768];

	if (stat(p->cfg->plan_pubkeys, &st) < 0 || same_file(&st, &p->ring_st) ||
	    same_file(&st, &p->ring_bad))
		return;
	if (ring_load(p, &e) < 0) {
		p->ring_bad = st;
		ice_warn(AGENT_SUB, "plan_pubkeys changed but not loaded (keeping %u keys): %s",
			 p->ring.n, ice_cfg_err_str(&e, buf, sizeof(buf)));
		return;
	}
	ring_log(p, "reloaded");
}

struct agent_plan *agent_plan_new(const struct agent_cfg *cfg, struct ice_ctrl *ctrl,
				  struct ice_cfg_err *err)
{
	struct agent_plan *p = calloc(1, sizeof(*p));
	int ret;

	if (p == NULL)
		return NULL;
	p->cfg = cfg;
	p->ctrl = ctrl;
	ice_redis_init(&p->link, cfg->redis, cfg->redis_timeout);
	ret = ring_load(p, err);
	if (ret < 0)
		goto err;
	ring_log(p, "loaded");
	if (ice_rkey(p->pkey, sizeof(p->pkey), ICE_RK_PLAN, cfg->fabric, cfg->host, NULL) < 0 ||
	    ice_rkey(p->akey, sizeof(p->akey), ICE_RK_PLAN_APPLIED, cfg->fabric, cfg->host, NULL) <
		    0) {
		ice_cfg_fail(err, NULL, "host", "fabric or host name empty or too long");
		ret = -EINVAL;
		goto err;
	}
	snprintf(p->file_path, sizeof(p->file_path), "%s/ccl-plan-%s.conf", cfg->run_dir,
		 cfg->addr);
	if (strcmp(cfg->epoch_file, "none") != 0) {
		if (cfg->epoch_file[0] != '\0') {
			snprintf(p->epoch_path, sizeof(p->epoch_path), "%s", cfg->epoch_file);
		} else {
			char dir[400];

			snprintf(dir, sizeof(dir), "%s/%s", cfg->run_dir, cfg->fabric);
			if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
				ret = -errno;
				ice_cfg_fail(err, dir, "epoch_file", "cannot create: %s",
					     strerror(-ret));
				goto err;
			}
			snprintf(p->epoch_path, sizeof(p->epoch_path), "%s/agent-%s-%s.epoch", dir,
				 cfg->host, cfg->nic);
		}
		ret = epoch_load(p->epoch_path, &p->last_epoch, err);
		if (ret < 0)
			goto err;
		if (p->last_epoch > 0)
			ice_info(AGENT_SUB, "plan epochs above %" PRIu64 " only (from %s)",
				 p->last_epoch, p->epoch_path);
	}
	return p;
err:
	ice_plan_keyring_fini(&p->ring);
	ice_redis_fini(&p->link);
	free(p);
	errno = -ret;
	return NULL;
}

static void conn_drop(struct agent_plan *p)
{
	ice_redis_fini(&p->link);
	if (p->sub != NULL)
		redisFree(p->sub);
	p->sub = NULL;
}

void agent_plan_free(struct agent_plan *p)
{
	if (p == NULL)
		return;
	conn_drop(p);
	if (p->file_text != NULL)
		(void)unlink(p->file_path); /* the hook's QPs: recorded, not steered */
	free(p->file_text);
	ice_host_plan_fini(&p->cur);
	free(p->last_json);
	ice_plan_keyring_fini(&p->ring);
	free(p);
}

uint64_t agent_plan_epoch(const struct agent_plan *p)
{
	return p->have ? p->cur.epoch : 0;
}

uint64_t agent_plan_last_epoch(const struct agent_plan *p)
{
	return p->last_epoch;
}

uint64_t agent_plan_refused(const struct agent_plan *p)
{
	return p->refused;
}

const char *agent_plan_reason(const struct agent_plan *p)
{
	return p->reason;
}

static const struct ice_plan_entry *entry_of(const struct agent_plan *p, uint32_t qpn)
{
	if (!p->have)
		return NULL;
	for (uint32_t i = 0; i < p->cur.n; i++)
		if (p->cur.entries[i].qpn == qpn)
			return &p->cur.entries[i];
	return NULL;
}

/* The verbs hook's plan file from the plan in force: per peer the ports
 * the plan gave QPs towards it (a QP connecting later takes them in turn),
 * each with the plan's traffic class for its QP when it has one
 * (PORT/TCLASS), and the agent's `tclass` as the default. Rewritten (new file renamed over) when it
 * changes; removed when no plan is in force. */
static void hook_file(struct agent_plan *p)
{
	size_t cap = 4096, len = 0;
	char *txt, tmp[600];
	bool any = false;
	int fd;

	p->file_due = false;
	if (p->file_path[0] == '\0')
		return;
	txt = malloc(cap);
	if (txt == NULL)
		return;
#define PUT(...)                                                                                   \
	do {                                                                                       \
		int n_ = snprintf(txt + len, cap - len, __VA_ARGS__);                              \
		if (n_ > 0 && (size_t)n_ < cap - len)                                              \
			len += (size_t)n_;                                                         \
	} while (0)
	PUT("# ice-agent %s, plan epoch %" PRIu64 ": ports per peer for QPs that connect later\n"
	    "version 1\n",
	    p->cfg->addr, agent_plan_epoch(p));
	if (p->cfg->tclass[0] != '\0') {
		PUT("tclass %s\n", p->cfg->tclass);
		any = true;
	}
	/* peers in slot order; each peer's line once, with up to 16 ports */
	for (int i = 0; p->have && p->ctrl != NULL && i < ICE_CTRL_SLOTS; i++) {
		uint32_t rip = p->ctrl->qp[i].remote_ip, nport = 0;
		char ip[INET_ADDRSTRLEN];
		bool seen = false;

		if (p->mine_qpn[i] == 0 || rip == 0 || len + 200 > cap)
			continue;
		for (int j = 0; j < i && !seen; j++)
			seen = p->mine_qpn[j] != 0 && p->ctrl->qp[j].remote_ip == rip;
		if (seen)
			continue;
		inet_ntop(AF_INET, &rip, ip, sizeof(ip));
		PUT("sport %s", ip);
		for (int j = i; j < ICE_CTRL_SLOTS && nport < 16; j++) {
			const struct ice_plan_entry *e;

			if (p->mine_qpn[j] == 0 || p->ctrl->qp[j].remote_ip != rip ||
			    (e = entry_of(p, p->mine_qpn[j])) == NULL)
				continue;
			if (e->has_tclass) /* the plan's: its profile's priority */
				PUT(" %u/%u", e->sport, e->tclass);
			else
				PUT(" %u", e->sport);
			nport++;
		}
		PUT("\n");
		any = true;
	}
#undef PUT
	if (!p->have || !any) {
		if (p->file_text != NULL)
			(void)unlink(p->file_path);
		free(p->file_text);
		p->file_text = NULL;
		free(txt);
		return;
	}
	if (p->file_text != NULL && strcmp(p->file_text, txt) == 0) {
		free(txt);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s.new", p->file_path);
	(void)unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, txt, len) != (ssize_t)len || fchmod(fd, 0644) < 0 ||
	    close(fd) < 0 || rename(tmp, p->file_path) < 0) {
		if (fd >= 0)
			close(fd);
		ice_warn(AGENT_SUB, "cannot write the verbs hook's plan %s: %s", p->file_path,
			 strerror(errno));
		(void)unlink(tmp);
		free(txt);
		return;
	}
	free(p->file_text);
	p->file_text = txt;
}

void agent_plan_reconcile(struct agent_plan *p)
{
	uint32_t applied = 0;

	if (p->ctrl == NULL)
		return;
	for (int i = 0; i < ICE_CTRL_SLOTS; i++) {
		uint32_t qpn = __atomic_load_n(&p->ctrl->qp[i].qpn, __ATOMIC_ACQUIRE);
		const struct ice_plan_entry *e = qpn != 0 ? entry_of(p, qpn) : NULL;

		if (e != NULL) {
			uint32_t flags =
				ICE_CTRL_SET_SPORT | (e->has_dcqcn ? ICE_CTRL_SET_DCQCN : 0);

			applied++;
			if (p->mine_qpn[i] == qpn && p->mine_epoch[i] == p->cur.epoch)
				continue;
			if (e->start_mbps != 0)
				flags |= ICE_CTRL_SET_RATE;
			ice_ctrl_set(p->ctrl, i, flags, e->sport, e->start_mbps, &e->dcqcn,
				     p->cur.epoch);
			p->mine_qpn[i] = qpn;
			p->mine_epoch[i] = p->cur.epoch;
			p->file_due = true;
		} else if (p->mine_qpn[i] != 0) {
			/* the plan no longer names it (or the slot was reused):
			 * back to the QP's defaults */
			if (qpn != 0 && qpn == p->mine_qpn[i])
				ice_ctrl_set(p->ctrl, i, 0, 0, 0, NULL, 0);
			p->mine_qpn[i] = 0;
			p->mine_epoch[i] = 0;
			p->file_due = true;
		}
	}
	if (p->have && applied != p->applied) {
		p->applied = applied;
		p->absent = p->cur.n > applied ? p->cur.n - applied : 0;
		p->wb_due = true;
	}
	if (p->file_due)
		hook_file(p);
}

void agent_plan_on_dcqcn(struct agent_plan *p, agent_plan_dcqcn_fn fn, void *ctx)
{
	p->dcqcn_fn = fn;
	p->dcqcn_ctx = ctx;
}

/* Parameter sets differing at most in rp_max_rate: the controller caps it
 * per QP at the QP's planned rate, which a NIC cannot take per QP. */
static bool same_profile(const struct ice_dcqcn_params *a, const struct ice_dcqcn_params *b)
{
	struct ice_dcqcn_params x = *a, y = *b;

	x.rp_max_rate = y.rp_max_rate = 0;
	return memcmp(&x, &y, sizeof(x)) == 0;
}

/* rp_max_rate over QPs sharing a NIC's profile: the highest ceiling (0: none),
 * so that none is held below its share */
static uint32_t max_rate_or(uint32_t a, uint32_t b)
{
	return a == 0 || b == 0 ? 0 : a > b ? a : b;
}

#define NIC_CANDIDATES 8 /* profiles told apart per priority */

/* The plan's profiles (or none) onto the NIC: per priority the profile of
 * most of its QPs, device-wide the profile of the most QPs (agent_plan.h). */
static void nic_dcqcn(struct agent_plan *p)
{
	struct {
		struct ice_dcqcn_params prof;
		uint32_t qps;
	} cand[AGENT_PRIOS][NIC_CANDIDATES];
	uint32_t ncand[AGENT_PRIOS] = {0}, other[AGENT_PRIOS] = {0}, total = 0, best = 0;
	struct agent_dcqcn_prios set;
	struct ice_cfg_err e = {0};
	bool any = false;

	if (p->dcqcn_fn == NULL)
		return;
	memset(&set, 0, sizeof(set));
	for (uint32_t i = 0; p->have && i < p->cur.n; i++) {
		const struct ice_plan_entry *x = &p->cur.entries[i];
		unsigned q = x->has_prio ? x->prio : p->cfg->dcqcn_prio % AGENT_PRIOS;
		uint32_t c;

		if (!x->has_dcqcn)
			continue;
		for (c = 0; c < ncand[q] && !same_profile(&cand[q][c].prof, &x->dcqcn); c++)
			;
		if (c == ncand[q] && c == NIC_CANDIDATES) {
			other[q]++;
			continue;
		}
		if (c == ncand[q]) {
			cand[q][c].prof = x->dcqcn;
			cand[q][c].qps = 0;
			ncand[q]++;
		}
		cand[q][c].prof.rp_max_rate =
			max_rate_or(cand[q][c].prof.rp_max_rate, x->dcqcn.rp_max_rate);
		cand[q][c].qps++;
	}
	for (unsigned q = 0; q < AGENT_PRIOS; q++) {
		uint32_t top = 0, qps = 0;

		for (uint32_t c = 0; c < ncand[q]; c++) {
			qps += cand[q][c].qps;
			if (cand[q][c].qps > cand[q][top].qps)
				top = c;
		}
		if (ncand[q] == 0)
			continue;
		set.has[q] = any = true;
		set.prio[q] = cand[q][top].prof;
		other[q] += qps - cand[q][top].qps;
		if (other[q] > 0)
			ice_warn(AGENT_SUB,
				 "plan epoch %" PRIu64 ": %u of %u QPs of priority %u ask for "
				 "another DCQCN profile; the NIC takes one per priority (that of "
				 "the other %u)",
				 p->cur.epoch, other[q], other[q] + cand[q][top].qps, q,
				 cand[q][top].qps);
		total += cand[q][top].qps;
		if (!set.has_wide || cand[q][top].qps > best) {
			set.has_wide = true;
			set.wide = set.prio[q];
			set.wide_prio = q;
			best = cand[q][top].qps;
		}
	}
	if (any && best < total)
		ice_info(AGENT_SUB,
			 "plan epoch %" PRIu64 ": the NIC's device-wide DCQCN parameters take "
			 "priority %u's profile (%u of %u QPs)",
			 p->cur.epoch, set.wide_prio, best, total);
	if (!any && !p->dcqcn_set)
		return;
	if (p->dcqcn_fn(p->dcqcn_ctx, any ? &set : NULL, &e) < 0 && any)
		ice_warn(AGENT_SUB, "plan epoch %" PRIu64 ": DCQCN profile not applied (%s: %s)",
			 p->cur.epoch, e.key, e.msg);
	p->dcqcn_set = any;
}

static void refuse(struct agent_plan *p, int ret, const struct ice_cfg_err *e)
{
	const char *what = ret == -EPERM     ? "bad signature"
			   : ret == -ENOKEY  ? "unknown key id"
			   : ret == -ESTALE  ? "old epoch"
			   : ret == -ETIME   ? "lifetime over"
			   : ret == -ERANGE  ? "value out of range"
			   : ret == -EXDEV   ? "another host's plan"
			   : ret == -EBADMSG ? "not a plan"
					     : strerror(-ret);

	p->refused++;
	snprintf(p->reason, sizeof(p->reason), "%s: %s%s%s", what, e->key,
		 e->key[0] != '\0' ? ": " : "", e->msg);
	p->refused_ms = ice_wall_ms();
	p->refusal_due = true;
	ice_warn(AGENT_SUB, "plan refused (%s); keeping %s%" PRIu64, p->reason,
		 p->have ? "epoch " : "no plan, epoch ", agent_plan_epoch(p));
}

int agent_plan_offer(struct agent_plan *p, const char *json, uint64_t now_ms,
		     struct ice_cfg_err *err)
{
	struct ice_cfg_err scratch;
	struct ice_host_plan hp = {0};
	char *copy;
	int ret;

	if (err == NULL)
		err = &scratch;
	memset(err, 0, sizeof(*err));
	if (p->last_json != NULL && strcmp(p->last_json, json) == 0)
		return 1;
	copy = strdup(json);
	if (copy == NULL)
		return -ENOMEM;
	free(p->last_json);
	p->last_json = copy;
	ring_refresh(p);
	ret = ice_plan_verify(json, &p->ring, p->last_epoch, now_ms, &hp, err);
	if (ret == 0 && strcmp(hp.host, p->cfg->host) != 0) {
		snprintf(err->key, sizeof(err->key), "host");
		snprintf(err->msg, sizeof(err->msg), "plan for '%s', this is '%s'", hp.host,
			 p->cfg->host);
		ice_host_plan_fini(&hp);
		ret = -EXDEV;
	}
	if (ret == 0 && p->epoch_path[0] != '\0' &&
	    (ret = epoch_store(p->epoch_path, hp.epoch)) < 0) {
		/* not applied unless the floor is kept: a restart must not
		 * take this plan's epoch, or an older one, again */
		snprintf(err->key, sizeof(err->key), "epoch_file");
		snprintf(err->msg, sizeof(err->msg), "cannot keep the epoch in %.300s: %s",
			 p->epoch_path, strerror(-ret));
		ice_host_plan_fini(&hp);
	}
	if (ret < 0) {
		refuse(p, ret, err);
		return ret;
	}
	ice_host_plan_fini(&p->cur);
	p->cur = hp;
	p->have = true;
	p->last_epoch = hp.epoch;
	p->applied = UINT32_MAX; /* force a write-back */
	agent_plan_reconcile(p);
	nic_dcqcn(p);
	p->applied_ms = ice_wall_ms();
	p->wb_due = true;
	ice_info(AGENT_SUB, "plan epoch %" PRIu64 " applied: %u of %u QPs (lifetime %u ms)",
		 hp.epoch, p->applied, hp.n, hp.lifetime_ms);
	return 0;
}

bool agent_plan_expire(struct agent_plan *p, uint64_t now_ms)
{
	if (!p->have)
		return false;
	if (now_ms == 0)
		now_ms = ice_wall_ms();
	if (p->cur.issued_ms + p->cur.lifetime_ms > now_ms)
		return false;
	ice_warn(AGENT_SUB,
		 "plan epoch %" PRIu64 " expired (no newer plan within %u ms): QPs back to "
		 "their defaults",
		 p->cur.epoch, p->cur.lifetime_ms);
	p->have = false;
	agent_plan_reconcile(p); /* clears every slot it set */
	nic_dcqcn(p);		 /* the NIC's own values back */
	hook_file(p);
	p->expired_due = true;
	return true;
}

/* ---- Redis */

static void conn_fail(struct agent_plan *p, uint64_t now_ns, const char *why)
{
	if (p->link.failures == 0)
		ice_warn(AGENT_SUB, "plans: redis at %s: %s; retrying", p->cfg->redis,
			 why != NULL ? why : "connection lost");
	if (p->sub != NULL)
		redisFree(p->sub);
	p->sub = NULL;
	ice_redis_down(&p->link, now_ns, why);
}

static void conn_up(struct agent_plan *p, uint64_t now_ns)
{
	char addr[sizeof(p->link.addr)];
	redisReply *r;
	int ret;

	if (p->link.c != NULL)
		return;
	ret = ice_redis_up(&p->link, now_ns);
	if (ret == -ECONNREFUSED && p->link.failures == 1)
		ice_warn(AGENT_SUB, "plans: redis at %s: %s; retrying", p->cfg->redis, p->link.why);
	if (ret < 0)
		return;
	/* on a cluster: the node of the plan's slot (PUBLISH reaches every node) */
	if (ice_redis_node_of(&p->link, p->pkey, addr, sizeof(addr)) == NULL) {
		conn_fail(p, now_ns, "no cluster node serves the plan's slot");
		return;
	}
	p->sub = ice_redis_connect(addr, p->link.timeout_ns, p->link.why, sizeof(p->link.why));
	if (p->sub == NULL) {
		conn_fail(p, now_ns, p->link.why);
		return;
	}
	r = redisCommand(p->sub, "SUBSCRIBE %s", p->pkey);
	if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
		if (r != NULL)
			freeReplyObject(r);
		conn_fail(p, now_ns, "SUBSCRIBE failed");
		return;
	}
	freeReplyObject(r);
	p->fetch = true; /* whatever is there now */
	p->wb_due = p->wb_due || p->have || p->last_epoch > 0;
	ice_info(AGENT_SUB, "plans: subscribed to %s", p->pkey);
}

static void fetch(struct agent_plan *p, uint64_t now_ns)
{
	redisReply *r = ice_redis_cmdf(&p->link, "GET %s", p->pkey);

	p->fetch = false;
	if (r == NULL) {
		conn_fail(p, now_ns, NULL);
		return;
	}
	if (r->type == REDIS_REPLY_STRING)
		agent_plan_offer(p, r->str, 0, NULL);
	freeReplyObject(r);
}

static void write_back(struct agent_plan *p, uint64_t now_ns)
{
	char e[24], ts[24], n[16], ab[16], rs[24], now[24], le[24];
	unsigned ncmd = 0;

	snprintf(now, sizeof(now), "%" PRIu64, ice_wall_ms());
	snprintf(le, sizeof(le), "%" PRIu64, p->last_epoch);
	if (p->wb_due && p->have) {
		snprintf(e, sizeof(e), "%" PRIu64, p->cur.epoch);
		snprintf(ts, sizeof(ts), "%" PRIu64, p->applied_ms);
		snprintf(n, sizeof(n), "%u", p->applied);
		snprintf(ab, sizeof(ab), "%u", p->absent);
		ice_redis_appendf(&p->link,
				  "HSET %s epoch %s ts_ms %s qps %s absent %s state applied "
				  "updated_ms %s last_epoch %s",
				  p->akey, e, ts, n, ab, now, le);
		ncmd++;
	} else if (p->wb_due && p->last_epoch > 0) {
		/* after a reconnect without a plan in force (a restarted Redis):
		 * the controller numbers its next plans above this */
		ice_redis_appendf(&p->link, "HSET %s last_epoch %s", p->akey, le);
		ncmd++;
	}
	if (p->expired_due) {
		ice_redis_appendf(&p->link, "HSET %s state expired expired_ms %s", p->akey, now);
		ncmd++;
	}
	if (p->refusal_due) {
		snprintf(rs, sizeof(rs), "%" PRIu64, p->refused_ms);
		snprintf(n, sizeof(n), "%" PRIu64, p->refused);
		/* with the highest epoch accepted: a controller whose counter
		 * fell behind it numbers its next plan above it */
		ice_redis_appendf(
			&p->link,
			"HSET %s refused %s refused_ms %s refused_reason %s last_epoch %s", p->akey,
			n, rs, p->reason, le);
		ncmd++;
	}
	if (ice_redis_pipe(&p->link, ncmd, NULL, NULL) < 0) {
		conn_fail(p, now_ns, NULL);
		return;
	}
	p->wb_due = p->expired_due = p->refusal_due = false;
}

void agent_plan_tick(struct agent_plan *p, uint64_t now_ns)
{
	if (p == NULL)
		return;
	if (agent_plan_expire(p, 0))
		p->wb_due = false;
	agent_plan_reconcile(p);
	conn_up(p, now_ns);
	if (p->link.c == NULL)
		return;
	if (now_ns >= p->next_poll_ns) {
		/* the fall-back: a notification may have been lost */
		p->fetch = true;
		p->next_poll_ns = now_ns + p->cfg->interval;
	}
	if (p->fetch)
		fetch(p, now_ns);
	if (p->link.c != NULL && (p->wb_due || p->expired_due || p->refusal_due))
		write_back(p, now_ns);
}

int agent_plan_fds(struct agent_plan *p, struct pollfd *pfd, int max)
{
	if (p == NULL || p->sub == NULL || max < 1)
		return 0;
	pfd[0] = (struct pollfd){.fd = p->sub->fd, .events = POLLIN};
	return 1;
}

void agent_plan_io(struct agent_plan *p, const struct pollfd *pfd, int n)
{
	uint64_t now = ice_now_ns();
	void *reply;

	if (p == NULL || n < 1 || p->sub == NULL ||
	    (pfd[0].revents & (POLLIN | POLLERR | POLLHUP)) == 0)
		return;
	if (redisBufferRead(p->sub) != REDIS_OK) {
		conn_fail(p, now, "subscription lost");
		return;
	}
	while (redisReaderGetReply(p->sub->reader, &reply) == REDIS_OK && reply != NULL) {
		redisReply *r = reply;

		if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
		    r->element[0]->type == REDIS_REPLY_STRING &&
		    strcmp(r->element[0]->str, "message") == 0)
			p->fetch = true;
		freeReplyObject(r);
	}
	if (p->fetch && p->link.c != NULL) {
		fetch(p, now);
		if (p->link.c != NULL && (p->wb_due || p->refusal_due))
			write_back(p, now);
	}
}
