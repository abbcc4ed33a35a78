// SPDX-License-Identifier: Apache-2.0
/*
 * ccl_verbs: the libibverbs hook of libice-ccl.so.
 *
 * ibv_create_qp / ibv_modify_qp / ibv_destroy_qp are interposed by the
 * preload for programs linked with libibverbs, and handed out by our dlvsym()
 * to libraries that load verbs with dlopen + dlvsym (NCCL does: ibvsymbols.cc
 * asks dlvsym(handle, "ibv_modify_qp", "IBVERBS_1.1")).
 *
 * At the INIT transition the hook records the port; at RTR the remote QPN
 * and GIDs, and when a plan (ccl_plan.h) names a source port for the peer it
 * sets the GRH flow label that the kernel maps to that port (the inverse of
 * ibv_flow_label_to_udp_sport, ice_roce.h) and the plan's traffic class, on
 * a copy of the caller's attributes. If the NIC refuses the changed
 * attributes, the caller's own are applied instead. Each connected QP is
 * reported as ICE_EV_QP and, when the agent's control block for the local
 * address exists, claims a slot there; a source port the agent writes later
 * is applied to the live QP with mlx5dv_modify_qp_udp_sport, a rate with
 * ibv_modify_qp_rate_limit (once in RTS), from ccl_verbs_poll(), which the
 * NCCL hooks call, and at the RTS transition.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ccl_internal.h"
#include "ccl_plan.h"
#include "ice_ctrl.h"
#include "ice_roce.h"

#define CCL_EXPORT  __attribute__((visibility("default")))
#define CCL_IBV_VER "IBVERBS_1.1"
#define CCL_QPS	    4096
#define CCL_CTRLS   8
#define CCL_POLL_NS 1000000ull /* look at the control blocks at most every 1 ms */

typedef struct ibv_qp *(*ccl_create_qp_fn)(struct ibv_pd *, struct ibv_qp_init_attr *);
typedef int (*ccl_modify_qp_fn)(struct ibv_qp *, struct ibv_qp_attr *, int);
typedef int (*ccl_destroy_qp_fn)(struct ibv_qp *);
typedef int (*ccl_query_gid_fn)(struct ibv_context *, uint8_t, int, union ibv_gid *);
typedef int (*ccl_udp_sport_fn)(struct ibv_qp *, uint16_t);
typedef void *(*ccl_dlvsym_fn)(void *, const char *, const char *);

static struct {
	pthread_mutex_t lock;
	ccl_dlvsym_fn dlvsym;
	ccl_create_qp_fn create_qp;
	ccl_modify_qp_fn modify_qp;
	ccl_destroy_qp_fn destroy_qp;
	ccl_query_gid_fn query_gid;
	ccl_udp_sport_fn udp_sport;
	/* plans by file (one per local address at most), reloaded when the
	 * file changes */
	struct {
		char path[256];
		struct ccl_plan *plan;
		struct timespec mtime;
		bool tried;
	} plan[CCL_CTRLS];
	unsigned nplan;
	/* control blocks, one per local address */
	struct {
		uint32_t ip;
		struct ice_ctrl *c;
		uint64_t seen;
	} ctrl[CCL_CTRLS];
	unsigned nctrl;
	uint64_t next_poll;
} ccl_v = {.lock = PTHREAD_MUTEX_INITIALIZER};

struct ccl_qp_rec {
	struct ibv_qp *qp; /* NULL: free */
	uint32_t qpn, rqpn;
	uint8_t port;
	uint32_t local_ip, remote_ip; /* network order; 0 when not IPv4 */
	uint16_t sport;
	uint32_t rate_mbps; /* rate limit set on the QP; 0 = none (the caller's) */
	bool rts;	    /* reached RTS: a rate limit can be set */
	struct ice_ctrl *ctrl;
	int slot;
};

static struct ccl_qp_rec ccl_qps[CCL_QPS]; /* under ccl_v.lock */

/* ---- finding the real functions */

static ccl_dlvsym_fn ccl_real_dlvsym(void)
{
	ccl_dlvsym_fn f = __atomic_load_n(&ccl_v.dlvsym, __ATOMIC_ACQUIRE);

	if (f == NULL) {
		f = (ccl_dlvsym_fn)dlsym(RTLD_NEXT, "dlvsym");
		__atomic_store_n(&ccl_v.dlvsym, f, __ATOMIC_RELEASE);
	}
	return f;
}

static void *ccl_verbs_sym(void *handle, const char *name)
{
	ccl_dlvsym_fn dv = ccl_real_dlvsym();
	void *p = dv != NULL ? dv(handle, name, CCL_IBV_VER) : NULL;

	if (p == NULL)
		p = dlsym(handle, name);
	return p;
}

/* Fill the real pointers from handle (RTLD_NEXT or a dlopen handle). */
static void ccl_verbs_resolve(void *handle)
{
	void *p;

	pthread_mutex_lock(&ccl_v.lock);
	if (ccl_v.create_qp == NULL && (p = ccl_verbs_sym(handle, "ibv_create_qp")) != NULL)
		ccl_v.create_qp = (ccl_create_qp_fn)p;
	if (ccl_v.modify_qp == NULL && (p = ccl_verbs_sym(handle, "ibv_modify_qp")) != NULL)
		ccl_v.modify_qp = (ccl_modify_qp_fn)p;
	if (ccl_v.destroy_qp == NULL && (p = ccl_verbs_sym(handle, "ibv_destroy_qp")) != NULL)
		ccl_v.destroy_qp = (ccl_destroy_qp_fn)p;
	if (ccl_v.query_gid == NULL && (p = ccl_verbs_sym(handle, "ibv_query_gid")) != NULL)
		ccl_v.query_gid = (ccl_query_gid_fn)p;
	pthread_mutex_unlock(&ccl_v.lock);
}

static void *ccl_verbs_get(void **slot)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (p == NULL) {
		ccl_verbs_resolve(RTLD_NEXT);
		p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	}
	return p;
}

static ccl_udp_sport_fn ccl_verbs_udp_sport(void)
{
	void *p, *h;

	if (ccl_v.udp_sport != NULL)
		return ccl_v.udp_sport;
	p = dlsym(RTLD_DEFAULT, "mlx5dv_modify_qp_udp_sport");
	if (p == NULL && (h = dlopen("libmlx5.so.1", RTLD_LAZY | RTLD_NOLOAD)) != NULL) {
		p = dlsym(h, "mlx5dv_modify_qp_udp_sport");
		dlclose(h);
	}
	ccl_v.udp_sport = (ccl_udp_sport_fn)p;
	return ccl_v.udp_sport;
}

/* Our dlvsym: hand out the hooks for the verbs entry points we wrap. */
CCL_EXPORT void *dlvsym(void *handle, const char *name, const char *version)
{
	ccl_dlvsym_fn real = ccl_real_dlvsym();
	void *p;

	if (real == NULL)
		return NULL;
	p = real(handle, name, version);
	if (p == NULL || handle == RTLD_NEXT || handle == RTLD_DEFAULT ||
	    strncmp(name, "ibv_", 4) != 0)
		return p;
	ccl_init();
	if (ccl_cfg.disable || !ccl_cfg.verbs)
		return p;
	if (strcmp(name, "ibv_create_qp") == 0 || strcmp(name, "ibv_modify_qp") == 0 ||
	    strcmp(name, "ibv_destroy_qp") == 0) {
		ccl_verbs_resolve(handle);
		ice_dbg(CCL_SUB, "dlvsym(%s): handing out the ICE hook", name);
		if (strcmp(name, "ibv_create_qp") == 0)
			return (void *)ibv_create_qp;
		if (strcmp(name, "ibv_modify_qp") == 0)
			return (void *)ibv_modify_qp;
		return (void *)ibv_destroy_qp;
	}
	return p;
}

/* ---- the QP table (under ccl_v.lock) */

static struct ccl_qp_rec *ccl_qp_find(const struct ibv_qp *qp, bool add)
{
	struct ccl_qp_rec *free_rec = NULL;

	for (size_t i = 0; i < CCL_QPS; i++) {
		if (ccl_qps[i].qp == qp)
			return &ccl_qps[i];
		if (free_rec == NULL && ccl_qps[i].qp == NULL)
			free_rec = &ccl_qps[i];
	}
	if (add && free_rec != NULL) {
		memset(free_rec, 0, sizeof(*free_rec));
		free_rec->qp = (struct ibv_qp *)qp;
		free_rec->qpn = qp->qp_num;
		free_rec->slot = -1;
	}
	return add ? free_rec : NULL;
}

static uint32_t ccl_gid_ipv4(const union ibv_gid *g)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	uint32_t ip;

	if (memcmp(g->raw, v4mapped, sizeof(v4mapped)) != 0)
		return 0;
	memcpy(&ip, g->raw + 12, sizeof(ip));
	return ip;
}

/* The plan file for a local address: ICE_CCL_PLAN (a "%s" in it stands for
 * the address), else the agent's /run/ice/ccl-plan-<address>.conf, else an
 * operator's /run/ice/ccl-plan.conf. */
static void ccl_verbs_plan_path(uint32_t local_ip, char *buf, size_t len)
{
	const char *env = getenv("ICE_CCL_PLAN");
	const char *tmpl = env != NULL && *env != '\0' ? env : CCL_PLAN_AGENT_PATH;
	char ip[INET_ADDRSTRLEN] = "0.0.0.0";
	const char *pc = strstr(tmpl, "%s");

	inet_ntop(AF_INET, &local_ip, ip, sizeof(ip));
	if (pc != NULL)
		snprintf(buf, len, "%.*s%s%s", (int)(pc - tmpl), tmpl, ip, pc + 2);
	else
		snprintf(buf, len, "%s", tmpl);
	if ((env == NULL || *env == '\0') && access(buf, F_OK) != 0)
		snprintf(buf, len, "%s", CCL_PLAN_DEFAULT_PATH);
}

/* The plan in force for a local address, reloaded when its file changed
 * (under ccl_v.lock). */
static struct ccl_plan *ccl_verbs_plan_locked(uint32_t local_ip)
{
	char err[256], path[256];
	struct stat st;
	struct ccl_plan *p;
	unsigned i;

	ccl_verbs_plan_path(local_ip, path, sizeof(path));
	for (i = 0; i < ccl_v.nplan; i++)
		if (strcmp(ccl_v.plan[i].path, path) == 0)
			break;
	if (i == ccl_v.nplan) {
		if (ccl_v.nplan == CCL_CTRLS)
			return NULL;
		memset(&ccl_v.plan[i], 0, sizeof(ccl_v.plan[i]));
		snprintf(ccl_v.plan[i].path, sizeof(ccl_v.plan[i].path), "%s", path);
		ccl_v.nplan++;
	}
	if (stat(path, &st) != 0) {
		if (ccl_v.plan[i].plan != NULL)
			ice_info(CCL_SUB, "plan %s gone: QPs are recorded, not steered", path);
		ccl_plan_free(ccl_v.plan[i].plan);
		ccl_v.plan[i].plan = NULL;
		ccl_v.plan[i].tried = false;
		return NULL;
	}
	if (ccl_v.plan[i].tried && st.st_mtim.tv_sec == ccl_v.plan[i].mtime.tv_sec &&
	    st.st_mtim.tv_nsec == ccl_v.plan[i].mtime.tv_nsec)
		return ccl_v.plan[i].plan;
	ccl_v.plan[i].tried = true;
	ccl_v.plan[i].mtime = st.st_mtim;
	p = ccl_plan_load(path, err, sizeof(err));
	if (p == NULL) {
		ice_err(CCL_SUB, "plan refused, QPs are recorded, not steered: %s", err);
		ccl_plan_free(ccl_v.plan[i].plan);
		ccl_v.plan[i].plan = NULL;
		return NULL;
	}
	ccl_plan_free(ccl_v.plan[i].plan);
	ccl_v.plan[i].plan = p;
	return p;
}

static struct ice_ctrl *ccl_verbs_ctrl_locked(uint32_t ip)
{
	char s[INET_ADDRSTRLEN];
	struct ice_ctrl *c;

	if (ip == 0)
		return NULL;
	for (unsigned i = 0; i < ccl_v.nctrl; i++)
		if (ccl_v.ctrl[i].ip == ip)
			return ccl_v.ctrl[i].c;
	if (ccl_v.nctrl == CCL_CTRLS || inet_ntop(AF_INET, &ip, s, sizeof(s)) == NULL)
		return NULL;
	c = ice_ctrl_open(s, NULL); /* NULL when no agent: then remember that too */
	ccl_v.ctrl[ccl_v.nctrl].ip = ip;
	ccl_v.ctrl[ccl_v.nctrl].c = c;
	ccl_v.ctrl[ccl_v.nctrl].seen = c != NULL ? ice_ctrl_version(c) : 0;
	__atomic_store_n(&ccl_v.nctrl, ccl_v.nctrl + 1, __ATOMIC_RELEASE);
	return c;
}

static void ccl_qp_report(const struct ccl_qp_rec *r)
{
	struct ice_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = ICE_EV_QP;
	ev.ts_ns = ice_wall_ns();
	ev.rank = -1;
	ev.nranks = -1;
	ev.dtype = (uint32_t)-1;
	ev.redop = (uint32_t)-1;
	ev.root = ev.peer = ev.prev = ev.next = -1;
	ev.qpn = r->qpn;
	ev.rqpn = r->rqpn;
	ev.local_ip = r->local_ip;
	ev.remote_ip = r->remote_ip;
	ev.sport = r->sport;
	snprintf(ev.lib, sizeof(ev.lib), "verbs");
	ccl_emit(&ev);
}

static void ccl_qp_publish(struct ccl_qp_rec *r)
{
	struct ice_ctrl_qp *q;

	if (r->ctrl == NULL || r->slot < 0)
		return;
	q = &r->ctrl->qp[r->slot];
	q->rqpn = r->rqpn;
	q->local_ip = r->local_ip;
	q->remote_ip = r->remote_ip;
	__atomic_store_n(&q->sport_now, r->sport, __ATOMIC_RELEASE);
}

/* The planned rate (Mbit/s, 0: none) onto a QP in RTS through
 * ibv_modify_qp_rate_limit (kbit/s); refused: logged, the QP keeps what it
 * had (no limit: the caller's own). Under ccl_v.lock. */
static void ccl_qp_rate(struct ccl_qp_rec *r, uint32_t mbps)
{
	struct ibv_qp_rate_limit_attr ra = {.rate_limit = mbps * 1000u};
	int rc;

	if (mbps == r->rate_mbps || !r->rts)
		return;
	if (ccl_cfg.dry_run) {
		ice_info(CCL_SUB, "dry run: qpn %u would be limited to %u Mbit/s", r->qpn, mbps);
		return;
	}
	rc = r->qp->context != NULL ? ibv_modify_qp_rate_limit(r->qp, &ra) : EOPNOTSUPP;
	if (rc != 0) {
		ice_warn(CCL_SUB, "qpn %u: rate limit %u Mbit/s refused by the NIC (%s)", r->qpn,
			 mbps, strerror(rc));
		return;
	}
	r->rate_mbps = mbps;
	if (r->ctrl != NULL && r->slot >= 0)
		__atomic_store_n(&r->ctrl->qp[r->slot].rate_mbps_now, mbps, __ATOMIC_RELEASE);
}

/* What the agent wrote into the QP's slot: its source port (a live move by
 * mlx5dv_modify_qp_udp_sport) and its rate (ibv_modify_qp_rate_limit; a
 * plan without a rate takes the limit off). DCQCN parameters are the
 * NIC's, per device or priority: the agent sets them there, not per QP.
 * Under ccl_v.lock. */
static void ccl_qp_apply(struct ccl_qp_rec *r)
{
	struct ice_ctrl_qp c;
	ccl_udp_sport_fn set;

	if (r->qp == NULL || r->ctrl == NULL || r->slot < 0 ||
	    !ice_ctrl_get(r->ctrl, r->slot, &c) || c.seq == r->ctrl->qp[r->slot].applied_seq)
		return;
	if ((c.flags & ICE_CTRL_SET_SPORT) && c.sport != r->sport) {
		set = ccl_verbs_udp_sport();
		if (c.sport < ICE_ROCE_SPORT_MIN) {
			ice_err(CCL_SUB,
				"qpn %u: control block asks for sport %u, outside 49152-65535: "
				"refused",
				r->qpn, c.sport);
		} else if (ccl_cfg.dry_run) {
			ice_info(CCL_SUB, "dry run: qpn %u would move to sport %u", r->qpn,
				 c.sport);
		} else if (set == NULL) {
			ice_warn(CCL_SUB, "qpn %u: no mlx5dv_modify_qp_udp_sport", r->qpn);
		} else if (set(r->qp, c.sport) != 0) {
			ice_warn(CCL_SUB, "qpn %u: sport %u refused by the NIC", r->qpn, c.sport);
		} else {
			r->sport = c.sport;
			ccl_qp_publish(r);
			ccl_qp_report(r);
		}
	}
	if (!r->rts && (c.flags & ICE_CTRL_SET_RATE))
		return; /* the rate waits for RTS: not applied yet */
	ccl_qp_rate(r, (c.flags & ICE_CTRL_SET_RATE) ? c.rate_mbps : 0);
	__atomic_store_n(&r->ctrl->qp[r->slot].applied_seq, c.seq, __ATOMIC_RELEASE);
}

/* ---- the hooks */

CCL_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	ccl_create_qp_fn real = (ccl_create_qp_fn)ccl_verbs_get((void **)&ccl_v.create_qp);
	struct ibv_qp *qp;
	int saved;

	if (real == NULL) {
		errno = ENOSYS;
		return NULL;
	}
	qp = real(pd, attr);
	if (qp == NULL)
		return NULL;
	saved = errno;
	ccl_init();
	if (!ccl_cfg.disable && ccl_cfg.verbs) {
		pthread_mutex_lock(&ccl_v.lock);
		if (ccl_qp_find(qp, true) == NULL)
			ice_warn(CCL_SUB, "QP table full: qpn %u not tracked", qp->qp_num);
		pthread_mutex_unlock(&ccl_v.lock);
	}
	errno = saved;
	return qp;
}

/* RTR: learn the peer, steer the source port and traffic class. */
static int ccl_verbs_rtr(ccl_modify_qp_fn real, struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int mask)
{
	struct ibv_qp_attr a = *attr;
	struct ccl_qp_rec rec, *r;
	bool av = (mask & IBV_QP_AV) && attr->ah_attr.is_global;
	bool changed = false;
	uint16_t want = 0;
	int tclass = -1, rc;

	pthread_mutex_lock(&ccl_v.lock);
	r = ccl_qp_find(qp, true);
	if (r == NULL) {
		pthread_mutex_unlock(&ccl_v.lock);
		return real(qp, attr, mask);
	}
	if (mask & IBV_QP_DEST_QPN)
		r->rqpn = attr->dest_qp_num;
	if (av) {
		union ibv_gid sgid;
		uint8_t port = attr->ah_attr.port_num ? attr->ah_attr.port_num : r->port;

		r->remote_ip = ccl_gid_ipv4(&attr->ah_attr.grh.dgid);
		if (ccl_v.query_gid != NULL &&
		    ccl_v.query_gid(qp->context, port, attr->ah_attr.grh.sgid_index, &sgid) == 0)
			r->local_ip = ccl_gid_ipv4(&sgid);
		struct ccl_plan *plan = ccl_verbs_plan_locked(r->local_ip);

		/* the port's traffic class (the plan's, which steers the QP
		 * into its DCQCN profile's priority), else the file's */
		want = ccl_plan_next_sport(plan, r->remote_ip, &tclass);
	}
	if (want != 0) {
		/* high bits from the QPN keep labels distinct for QPs sharing a port */
		a.ah_attr.grh.flow_label = ice_roce_flow_label_for_udp_sport(want, qp->qp_num);
		changed = true;
	}
	if (tclass >= 0 && av) {
		a.ah_attr.grh.traffic_class = (uint8_t)tclass;
		changed = true;
	}
	rec = *r;
	pthread_mutex_unlock(&ccl_v.lock);

	if (changed && ccl_cfg.dry_run) {
		ice_info(CCL_SUB, "dry run: qpn %u would get flow label 0x%x (sport %u) tclass %d",
			 qp->qp_num, a.ah_attr.grh.flow_label, want, tclass);
		changed = false;
	}
	rc = real(qp, changed ? &a : attr, mask);
	if (rc != 0 && changed) {
		ice_warn(CCL_SUB,
			 "qpn %u: RTR with the planned label refused (%s): using the "
			 "caller's attributes",
			 qp->qp_num, strerror(rc));
		changed = false;
		rc = real(qp, attr, mask);
	}
	if (rc != 0)
		return rc;

	{
		const struct ibv_qp_attr *used = changed ? &a : attr;
		uint32_t fl = av ? used->ah_attr.grh.flow_label : 0;

		if (fl == 0)
			fl = ice_roce_calc_flow_label(rec.qpn, rec.rqpn);
		rec.sport = ice_roce_flow_label_to_udp_sport(fl);
	}
	pthread_mutex_lock(&ccl_v.lock);
	r = ccl_qp_find(qp, false);
	if (r != NULL) {
		r->rqpn = rec.rqpn;
		r->sport = rec.sport;
		if (r->ctrl == NULL && (r->ctrl = ccl_verbs_ctrl_locked(r->local_ip)) != NULL)
			r->slot = ice_ctrl_claim(r->ctrl, r->qpn);
		ccl_qp_publish(r);
		rec = *r;
	}
	pthread_mutex_unlock(&ccl_v.lock);
	ccl_qp_report(&rec);
	return rc;
}

CCL_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	ccl_modify_qp_fn real = (ccl_modify_qp_fn)ccl_verbs_get((void **)&ccl_v.modify_qp);
	int saved = errno, rc;

	if (real == NULL)
		return ENOSYS;
	ccl_init();
	if (ccl_cfg.disable || !ccl_cfg.verbs || qp == NULL || attr == NULL ||
	    !(mask & IBV_QP_STATE))
		return real(qp, attr, mask);
	if (attr->qp_state == IBV_QPS_RTR) {
		rc = ccl_verbs_rtr(real, qp, attr, mask);
		errno = saved;
		return rc;
	}
	rc = real(qp, attr, mask);
	if (rc == 0 && attr->qp_state == IBV_QPS_RTS) {
		struct ccl_qp_rec *r;

		/* a rate the agent planned before the QP could take one */
		pthread_mutex_lock(&ccl_v.lock);
		r = ccl_qp_find(qp, false);
		if (r != NULL) {
			r->rts = true;
			ccl_qp_apply(r);
		}
		pthread_mutex_unlock(&ccl_v.lock);
	}
	if (rc == 0 && attr->qp_state == IBV_QPS_INIT && (mask & IBV_QP_PORT)) {
		struct ccl_qp_rec *r;

		pthread_mutex_lock(&ccl_v.lock);
		r = ccl_qp_find(qp, true);
		if (r != NULL)
			r->port = attr->port_num;
		pthread_mutex_unlock(&ccl_v.lock);
	}
	errno = saved;
	return rc;
}

CCL_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	ccl_destroy_qp_fn real = (ccl_destroy_qp_fn)ccl_verbs_get((void **)&ccl_v.destroy_qp);
	struct ccl_qp_rec *r;

	if (real == NULL)
		return ENOSYS;
	pthread_mutex_lock(&ccl_v.lock);
	r = ccl_qp_find(qp, false);
	if (r != NULL) {
		if (r->ctrl != NULL && r->slot >= 0)
			ice_ctrl_release(r->ctrl, r->slot);
		r->qp = NULL;
	}
	pthread_mutex_unlock(&ccl_v.lock);
	return real(qp);
}

/* Apply what the agent wrote into the control blocks to live QPs. */
void ccl_verbs_poll(void)
{
	unsigned n = __atomic_load_n(&ccl_v.nctrl, __ATOMIC_ACQUIRE);
	bool changed = false;
	uint64_t now;

	if (n == 0)
		return;
	now = ice_wall_ns();
	if (now < __atomic_load_n(&ccl_v.next_poll, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&ccl_v.next_poll, now + CCL_POLL_NS, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < n; i++)
		if (ccl_v.ctrl[i].c != NULL &&
		    ice_ctrl_version(ccl_v.ctrl[i].c) != ccl_v.ctrl[i].seen)
			changed = true;
	if (!changed)
		return;
	pthread_mutex_lock(&ccl_v.lock);
	for (unsigned i = 0; i < ccl_v.nctrl; i++)
		if (ccl_v.ctrl[i].c != NULL)
			ccl_v.ctrl[i].seen = ice_ctrl_version(ccl_v.ctrl[i].c);
	for (size_t i = 0; i < CCL_QPS; i++)
		ccl_qp_apply(&ccl_qps[i]);
	pthread_mutex_unlock(&ccl_v.lock);
}
