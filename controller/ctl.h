/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl: the controller's planning core. From a demand (flows between host
 * NICs: QPs with a demand in bit/s or bytes) and a topology it computes
 *   - a path per flow minimising the maximum directed-link utilisation
 *     (greedy, then local search), incremental or global with hysteresis,
 *     with a lower bound for the same demand and the plain-ECMP baseline;
 *   - a UDP source port per flow that takes the chosen path, from a port ->
 *     path provider (struct ctl_pathmap: topo's hash models or ice-probe's maps);
 *   - max-min fair rates on the chosen paths (water-filling, with headroom);
 *   - a DCQCN profile per flow from an operator policy (YAML);
 *   - per-host plans (format and signature: common/ice_plan.h).
 *
 * Ownership: ctl_planner_new() keeps a pointer to the topology (the caller
 * keeps it alive and frees it after ctl_planner_free()). Demands, policies
 * and plans own their arrays; free them with their _fini()/_free().
 */
#ifndef CTL_H
#define CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ice_config.h"
#include "ice_dcqcn.h"
#include "ice_plan.h"
#include "ice_roce.h"
#include "topo.h"

/* ---- demand ---------------------------------------------------------------- */

enum ctl_unit {
	CTL_UNIT_BPS,	/* demand is a rate in bit/s: rates are capped at it */
	CTL_UNIT_BYTES, /* demand is a volume in bytes: flows are elastic */
};

enum ctl_coll_op {
	CTL_COLL_ANY = 0, /* policy rules only: matches every op */
	CTL_COLL_ALL_REDUCE,
	CTL_COLL_REDUCE_SCATTER,
	CTL_COLL_ALL_GATHER,
	CTL_COLL_ALL_TO_ALL,
	CTL_COLL_BROADCAST,
	CTL_COLL_SEND_RECV,
	CTL_COLL_OP_MAX,
};

#define CTL_FLOW_ANNOUNCED 0x1u /* demand comes from an announced collective */
#define CTL_FLOW_FIXED	   0x2u /* incremental planning never moves this flow */
#define CTL_FLOW_STICKY	   0x4u /* REOPT: moved lately; others move first (ctl_plan_paths) */

/* A chosen route: index into topo_paths() of the pair, and its directed
 * links (2 * link id + 0 for a->b, i.e. upward; + 1 for b->a). */
struct ctl_route {
	int32_t idx; /* -1: none */
	uint32_t nhops;
	uint32_t dlink[TOPO_PATH_MAX_HOPS];
};

struct ctl_flow {
	/* inputs */
	uint32_t src_port, dst_port; /* topo port ids of the two NICs */
	uint64_t demand;	     /* bit/s or bytes, see ctl_demand.unit */
	uint32_t host;		     /* node id of the host owning the QP (src) */
	uint32_t lqpn, rqpn;	     /* local and remote QP numbers (24 bit) */
	uint16_t cur_sport;	     /* current source port; 0 = unknown */
	uint8_t tclass;		     /* traffic class / priority, 0..7 */
	uint8_t flags;		     /* CTL_FLOW_* */
	enum ctl_coll_op op;	     /* the collective it belongs to, or ANY */
	uint64_t coll_id;	     /* collective (or communicator) id */
	uint64_t msg_bytes;	     /* the collective's message size (policy) */
	/* outputs */
	struct ctl_route path; /* planned route; set idx >= 0 as input in incremental mode */
	struct ctl_route ecmp; /* what plain ECMP gives (ctl_plan_ecmp) */
	uint16_t sport;	       /* planned source port (ctl_plan_sports) */
	double start_bps;      /* planned start rate (ctl_plan_rates) */
	double target_bps;     /* planned target rate: the fair share at full capacity */
	double max_bps;	       /* DCQCN's ceiling (rp_max_rate; ctl_plan_ceilings), 0: target */
};

struct ctl_demand {
	enum ctl_unit unit;
	struct ctl_flow *flows;
	size_t n, cap;
};

void ctl_demand_init(struct ctl_demand *d, enum ctl_unit unit);
void ctl_demand_fini(struct ctl_demand *d); /* NULL-safe */
/* Append a copy of f (outputs reset); 0 or -ENOMEM. */
int ctl_demand_add(struct ctl_demand *d, const struct ctl_flow *f);

/*
 * The flows of one announced collective over nranks ranks whose NICs (topo
 * port ids) are given in rank order, qps QPs per connection. Bytes per flow
 * follow nccl-tests' size convention and ring/direct algorithms:
 *   all-reduce (ring)          each rank -> next: 2(n-1)/n * bytes
 *   reduce-scatter, all-gather each rank -> next: (n-1)/n * bytes
 *   all-to-all                 every ordered pair: bytes / n
 *   broadcast (chain from 0)   rank i -> i+1 (i < n-1): bytes
 *   send/recv                  each rank -> next: bytes
 * split evenly over the qps QPs. In CTL_UNIT_BPS demands the "bytes" are a
 * rate and split the same way. QPNs are qpn_base + flow ordinal (local) and
 * qpn_base + 0x400000 + ordinal (remote), mod 2^24. 0, -EINVAL, -ENOMEM.
 */
int ctl_demand_add_collective(struct ctl_demand *d, const struct topo *t, enum ctl_coll_op op,
			      uint64_t bytes, const uint32_t *nics, uint32_t nranks, uint32_t qps,
			      uint64_t coll_id, uint8_t tclass, uint32_t qpn_base);

const char *ctl_coll_op_name(enum ctl_coll_op op);
int ctl_coll_op_parse(const char *s); /* -1 when unknown */

/* ---- path planner ------------------------------------------------------------ */

struct ctl_planner;

/* Indexes the topology (switch cones for up-down routing). Requires that
 * every shortest path is up-down (leaf-spine, fat-tree, rail): a sample of
 * pairs is checked against topo_paths(); otherwise NULL with ENOTSUP. */
struct ctl_planner *ctl_planner_new(const struct topo *t);
void ctl_planner_free(struct ctl_planner *p); /* NULL-safe */

enum ctl_plan_mode {
	CTL_PLAN_FRESH,	      /* ignore existing routes, plan every flow */
	CTL_PLAN_INCREMENTAL, /* flows with path.idx >= 0 keep it; place the rest */
	CTL_PLAN_REOPT,	      /* global re-optimisation, moves only for a gain >= hysteresis */
};

struct ctl_plan_opts {
	enum ctl_plan_mode mode;
	double hysteresis;	/* relative gain of the max utilisation to move flows; 0.05 */
	double search_budget_s; /* local-search wall-time budget; 0 = until no move helps */
	bool no_search;		/* greedy only */
	/* REOPT (other modes ignore it): no tie-break on the fabric's links where only NIC links
	 * hold the max (fabric_util); flows move only for a gain of the max
	 * utilisation. The daemon's periodic plans: a move costs a running
	 * collective its slowest flow's drain, and a tie the fabric can carry
	 * does not pay it back */
	bool no_tie;
	/* INCREMENTAL, REOPT: the flows with path.idx >= 0 and nhops > 0 still
	 * hold the links this planner (or one on the same topology) gave that
	 * route: path as ctl_plan_paths or a provider's route_of left it, for
	 * the same NICs. They are taken as they are: not rebuilt from the
	 * index, and their NICs not checked again (at 10^5 flows that is most
	 * of an incremental plan). Off by default: routes are rebuilt. */
	bool routes_current;
};
void ctl_plan_opts_default(struct ctl_plan_opts *o);

struct ctl_plan_stats {
	double max_util;    /* the plan's max directed-link utilisation */
	double bound;	    /* lower bound on it for this demand (any routing) */
	double start_util;  /* REOPT: the max utilisation before */
	double fabric_util; /* the second objective (capacities cut, NICs at the max): the max
			     * over the switch links the flows on cut links cross; 0: not run */
	uint32_t moves;	    /* local-search moves (a swap counts 2) */
	uint32_t moved;	    /* flows whose route differs from the input (REOPT) */
	bool budget_hit;    /* the local search stopped on its time budget */
	double greedy_s, search_s, total_s;
	/* balanced colouring (alternating paths), run when every flow is movable */
	double kempe_util;     /* its max utilisation before any local search; 0: not run */
	uint64_t kempe_chains; /* alternating-path (Kempe chain) recolourings */
};

/* Choose flow->path for every flow. 0 or -errno (-EINVAL for a flow whose
 * NICs are not NICs of the topology or are equal). */
int ctl_plan_paths(struct ctl_planner *p, struct ctl_demand *d, const struct ctl_plan_opts *o,
		   struct ctl_plan_stats *st);
/* The capacity the planner sees on a directed link (2 * link id + 0 for
 * a->b, + 1 for b->a), bit/s: the topology's rate from ctl_planner_new(); a
 * caller may lower it, e.g. by measured traffic nobody announced (the
 * daemon's feedback, ctl_telem.h). Paths, utilisations and rates use it; the
 * lower bound keeps the topology's rates (still a lower bound). Set: 0, or
 * -EINVAL (dlink out of range, bps not > 0); get: 0 when out of range. */
int ctl_planner_set_cap(struct ctl_planner *p, uint32_t dlink, double bps);
double ctl_planner_cap(const struct ctl_planner *p, uint32_t dlink);
/* The max utilisation of the routes in flows (which = 0: path, 1: ecmp). */
double ctl_max_util(struct ctl_planner *p, const struct ctl_demand *d, int which);
/* Lower bound on the max utilisation of any routing (even split): max over
 * NIC links and over the up-link cuts of every switch group below each tier. */
double ctl_bound(struct ctl_planner *p, const struct ctl_demand *d);
/* A route as the switches it crosses, "leaf1>spine1>leaf2" (how ice-probe
 * names paths); and back: the flow's equal-cost route through the named
 * switches (-ENOENT: none). Both 0 or -errno. */
int ctl_route_name(const struct ctl_planner *p, const struct ctl_route *r, char *buf, size_t len);
int ctl_route_by_name(struct ctl_planner *p, const struct ctl_flow *f, const char *hops,
		      struct ctl_route *out);

/* ---- which source port takes which path ------------------------------------- */

/*
 * A port -> path provider: what a flow's UDP source port does in the fabric,
 * on the routes of one planner. Two implementations:
 *   - the topology's switch hash models: ctl_pathmap_model(), the planner's
 *     own (any port, any pair, computed);
 *   - ice-probe's learned maps: ctl_pathmap_probe_init() (ctl_pmap.h), which
 *     know the ports the probe saw, for the NIC pairs it probed.
 * A caller picks one per plan and hands it to the functions below.
 */
struct ctl_pathmap;

struct ctl_pathmap_ops {
	const char *name; /* "model", "probe" */
	/* The route source port sport takes for f: 0, -ENOENT (the provider
	 * does not know that port for f's pair), -errno. */
	int (*route_of)(struct ctl_pathmap *m, const struct ctl_flow *f, uint16_t sport,
			struct ctl_route *out);
	/* For every flow with a route (path.idx >= 0), a source port that takes
	 * it into flow->sport; m->unsteered counts the flows it could not steer
	 * (they keep a port and, where known, get the route it takes). */
	int (*sports)(struct ctl_pathmap *m, struct ctl_demand *d);
};

struct ctl_pathmap {
	const struct ctl_pathmap_ops *ops;
	struct ctl_planner *p; /* routes are this planner's */
	uint32_t unsteered;    /* flows the last ctl_plan_sports() could not steer */
};

/* The hash-model provider; owned by the planner (valid until
 * ctl_planner_free). Its sports: a port in 49152-65535 whose hash path is
 * flow->path: the current port when it already takes that path, else ports
 * spread over the flows of the same NIC pair (-ENOENT: no port takes it). */
struct ctl_pathmap *ctl_pathmap_model(struct ctl_planner *p);
/* The route a given source port takes for the flow, by m. */
int ctl_route_of_sport(struct ctl_pathmap *m, const struct ctl_flow *f, uint16_t sport,
		       struct ctl_route *out);
/* Set flow->sport for the flows with a route, by m (m->unsteered is reset
 * first). 0 or -errno. */
int ctl_plan_sports(struct ctl_pathmap *m, struct ctl_demand *d);
/* Fill flow->ecmp with the route of the flow's default source port
 * (ice_roce_sport_default) by m; where m does not know it, by the hash models.
 * 0 or -errno. */
int ctl_plan_ecmp(struct ctl_pathmap *m, struct ctl_demand *d);

/* ---- rate planner ---------------------------------------------------------- */

/* Max-min fair rates (water-filling) of the flows on their routes (which: 0
 * path, 1 ecmp). start_bps: the share over headroom * capacity (so queues
 * stay short); target_bps: the share over the full capacity. Flows of a
 * CTL_UNIT_BPS demand are capped at their demand. 0 or -errno. */
int ctl_plan_rates(struct ctl_planner *p, struct ctl_demand *d, int which, double headroom);
/* The same for the flows connected to a changed one (changed[i]: new, or
 * its route or demand changed), directly or through other flows, by the
 * links they share; the other flows keep start_bps and target_bps, which
 * must be this call's rates for them (e.g. from the last ctl_plan_rates on
 * the same routes, demands and capacities: max-min fair rates decompose
 * over the connected parts, so theirs are exact). A flow that left or moved
 * frees its old links: mark the flows on them changed, or plan all rates.
 * changed NULL: every flow. 0 or -errno. */
int ctl_plan_rates_changed(struct ctl_planner *p, struct ctl_demand *d, int which, double headroom,
			   const bool *changed);
/* The planner keeps the link -> flows index of its last filling (per
 * which) and brings it up to date at each ctl_plan_rates_changed() instead
 * of indexing every flow again (flows are matched by position: new ones
 * appended; fewer flows than indexed rebuilds it). This checks it against
 * d's routes: 0 when it indexes d's flows and each link of a flow's route
 * lists the flow (entries of routes a flow left may remain), -ENOENT when
 * there is none, -EINVAL otherwise. For tests. */
int ctl_rate_index_check(const struct ctl_planner *p, const struct ctl_demand *d, int which);
/* DCQCN's ceilings (max_bps) after ctl_plan_rates: each flow's max-min
 * share over cap (bit/s per directed link, 2 * nlinks; the links' rates
 * where the planner's capacities were cut for load nobody planned), never
 * below its target_bps. The targets share what the unplanned load leaves;
 * the ceiling lets DCQCN take back what that load does not use (it is
 * measured, not controlled, and the queues it builds mark CE) but never
 * more than a planned flow's share of the full link, so planned flows
 * still stay out of each other's queues. 0 or -errno. */
int ctl_plan_ceilings(struct ctl_planner *p, struct ctl_demand *d, int which, const double *cap);

/* ---- policy -------------------------------------------------------------------- */

#define CTL_NAME_MAX 32

struct ctl_profile {
	char name[CTL_NAME_MAX];
	struct ice_dcqcn_params params;
	/* the priority whose DCQCN a NIC backend sets to params, and the DSCP
	 * that steers a QP into it (its traffic class is dscp << 2); plans
	 * carry both for the QPs of the profile */
	bool has_class;
	uint8_t prio, dscp;
	int line;
};

struct ctl_rule {
	enum ctl_coll_op op; /* CTL_COLL_ANY matches all */
	uint64_t min_bytes, max_bytes;
	bool has_comm, has_tclass;
	uint64_t comm;
	uint32_t tclass;
	uint32_t profile; /* index into profiles */
	int line;
};

struct ctl_policy {
	/* what unset keys of a profile take: the `baseline:` file's values
	 * (over ConnectX-5 defaults), or the defaults without one */
	struct ice_dcqcn_params baseline;
	char baseline_file[512]; /* as opened (resolved); "" without one */
	struct ctl_profile *profiles;
	uint32_t nprofiles;
	struct ctl_rule *rules;
	uint32_t nrules;
	uint32_t default_profile;
};

/* NULL + errno on failure, err naming file:line, key and the expectation
 * (an error inside the baseline file names that file). A relative
 * `baseline:` path is taken from the policy file's directory; for
 * ctl_policy_load_string() from dir (NULL: the current directory), the
 * directory of the file the text came from (a policy kept in Redis). */
struct ctl_policy *ctl_policy_load(const char *path, struct ice_cfg_err *err);
struct ctl_policy *ctl_policy_load_string(const char *name, const char *yaml, size_t len,
					  const char *dir, struct ice_cfg_err *err);
void ctl_policy_free(struct ctl_policy *p); /* NULL-safe */
/* First matching rule's profile, else the default one. Never NULL. */
const struct ctl_profile *ctl_policy_match(const struct ctl_policy *p, enum ctl_coll_op op,
					   uint64_t msg_bytes, uint64_t comm, uint32_t tclass);
/* The index of the first matching rule, -1 when the default applies (why a
 * QP has its profile: icectl explain). */
int ctl_policy_rule(const struct ctl_policy *p, enum ctl_coll_op op, uint64_t msg_bytes,
		    uint64_t comm, uint32_t tclass);

/* ---- plans ------------------------------------------------------------------- */

/* Build one plan per host that owns flows (sorted by host name) from a
 * planned demand; profiles from pol (NULL: DCQCN defaults). The plan format,
 * its signature and verification: common/ice_plan.h. Caller frees with
 * ctl_host_plans_free(). 0 or -errno. */
int ctl_host_plans_build(const struct topo *t, const struct ctl_demand *d,
			 const struct ctl_policy *pol, uint64_t epoch, uint32_t lifetime_ms,
			 uint64_t issued_ms, struct ice_host_plan **out, uint32_t *nout);
void ctl_host_plans_free(struct ice_host_plan *hps, uint32_t n);

#endif /* CTL_H */
