/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_path_internal.h: what the path planner's files share (ctl_index.c,
 * ctl_route.c, ctl_path.c, ctl_search.c, ctl_kempe.c, ctl_bound.c,
 * ctl_ecmp.c, ctl_rate.c, ctl_heap.c). Not part of the API: ctl.h is.
 *
 * The planner indexes the topology once (ctl_index.c): switch ordinals,
 * their upper and lower neighbours in port order, "cones" (reach bitsets)
 * and, lazily, one DAG of up-down next hops per destination edge switch.
 * Every algorithm walks those DAGs; loads and capacities are per directed
 * link (2 * link id + 0 for a->b, + 1 for b->a).
 */
#ifndef CTL_PATH_INTERNAL_H
#define CTL_PATH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "ctl.h"
#include "ice_time.h"

extern uint32_t ctl_log_sub; /* ICE_LOG=...,debug=plan */

#define EPS  1e-9
#define NONE UINT32_MAX
#define TERM (UINT32_MAX - 1)
#define MAXH TOPO_PATH_MAX_HOPS

struct dag_nh {
	uint32_t dl;	/* the directed link taken (dlink_of its egress port) */
	uint32_t child; /* dag node index, or TERM */
	uint32_t off;	/* path index offset (paths under earlier siblings) */
};

/*
 * A DAG node's next hops are either explicit (first indexes dag->nh) or, the
 * common case in tiered fabrics, implicit (first has DAG_IMPLICIT set): every
 * neighbour of the switch's up (or down) list from ctl_planner.nbrs[first &
 * ~DAG_IMPLICIT] on, the child the neighbour's node in this DAG, and each
 * child below the same number of paths (stride). Implicit nodes store no
 * next hops, which keeps a fabric's DAGs small (k = 74 fat-tree: ~75 MB
 * instead of ~1.7 GB). Read them with dag_nh_at().
 */
#define DAG_IMPLICIT 0x80000000u

struct dag_node {
	uint32_t first, n; /* next hops in dag->nh, or implicit (DAG_IMPLICIT) */
	uint32_t paths;	   /* paths from here to the destination switch (saturating) */
	uint32_t node;	   /* topo node id */
	uint32_t stride;   /* implicit: paths under each next hop */
	uint32_t gc;	   /* implicit: 1 + the node every next hop leads to
			      alone (a fat-tree's aggregation switch: each core
			      above it has one way down to the destination, to
			      the same aggregation switch); 0: none */
};

/* Everything toward one destination switch, built lazily. */
struct dag {
	uint32_t *idx; /* [nsw] switch ordinal -> dag node, NONE */
	struct dag_node *nodes;
	uint32_t nnodes, capn;
	struct dag_nh *nh;
	uint32_t nnh, capnh;
};

struct nbr {
	uint32_t dl; /* the directed link to it (dlink_of the egress port) */
	uint32_t sw; /* neighbour switch ordinal */
};

struct ctl_planner {
	const struct topo *t;
	uint32_t nsw, nedge, words, levels;
	uint32_t *sw_of_node; /* node id -> switch ordinal or NONE */
	uint32_t *node_of_sw; /* switch ordinal -> node id */
	uint32_t *edge_of_sw; /* switch ordinal -> edge ordinal or NONE */
	uint64_t *reach;      /* [sw][level][words] */
	uint8_t *updist;      /* [edge][sw] fewest up hops to an ancestor of the edge
				 switch (UINT8_MAX: none), from reach; NULL when too big */
	struct nbr *nbrs;     /* per switch: upper then lower neighbours, port order */
	uint32_t *up_first, *up_n, *dn_first, *dn_n;
	struct dag **dags;		/* [nedge] */
	double *cap;			/* [2 * nlinks] bit/s */
	double *load;			/* [2 * nlinks] scratch */
	double cap_hi;			/* >= every cap[] (set_cap raises it, never lowers) */
	bool tiers_adj;			/* every link joins adjacent tiers: a switch of tier
					   T is >= T hops from any NIC (ctl_route.c's floor) */
	struct ctl_pathmap model;	/* the hash models (ctl_pathmap_model) */
	struct ctl_bound_index *bidx;	/* ctl_bound.c's groups, on first use */
	struct ctl_rate_index *ridx[2]; /* ctl_rate.c's link -> flows (paths, ECMP) */
	struct ctl_memo *memo;		/* ctl_route.c's per-search scratch per DAG node */
	uint32_t nmemo, memo_stamp;
	/* while loads only grow (greedy placement, ctl_path.c): per switch, the
	 * least utilisation of a link into it, read once per growth epoch (a
	 * value read earlier stays a lower bound) */
	double *minin;		   /* [nsw] */
	uint32_t *minin_at;	   /* [nsw] the epoch minin[] was read in */
	struct ctl_outmin *outmin; /* [2 * nsw] up, down: read once per epoch */
	uint32_t grow_epoch;
	bool growing;
};

/* The i-th next hop (i < n->n) of DAG node n. */
static inline struct dag_nh dag_nh_at(const struct ctl_planner *p, const struct dag *g,
				      const struct dag_node *n, uint32_t i)
{
	const struct nbr *b;

	if (!(n->first & DAG_IMPLICIT))
		return g->nh[n->first + i];
	b = &p->nbrs[(n->first & ~DAG_IMPLICIT) + i];
	return (struct dag_nh){.dl = b->dl, .child = g->idx[b->sw], .off = i * n->stride};
}

static inline uint32_t peer_node(const struct topo *t, uint32_t port)
{
	return t->ports[t->ports[port].peer].node;
}

static inline bool is_nic(const struct topo *t, uint32_t port)
{
	return port < t->nports && t->nodes[t->ports[port].node].kind == TOPO_HOST;
}

static inline uint32_t dlink_of(const struct topo *t, uint32_t egress)
{
	uint32_t l = t->ports[egress].link;

	return 2 * l + (t->links[l].a == egress ? 0 : 1);
}

static inline double flow_bits(const struct ctl_demand *d, const struct ctl_flow *f)
{
	return d->unit == CTL_UNIT_BYTES ? 8.0 * (double)f->demand : (double)f->demand;
}

static inline double util_add(const struct ctl_planner *p, uint32_t dl, double add)
{
	return (p->load[dl] + add) / p->cap[dl];
}

static inline void route_add(struct ctl_planner *p, const struct ctl_route *r, double bits)
{
	for (uint32_t h = 0; h < r->nhops; h++)
		p->load[r->dlink[h]] += bits;
}

/* ---- ctl_heap.c: a binary min-heap of (key, id); ctl_heap_pop on a
 * non-empty heap only. Zero-initialised is empty. */
struct ctl_heap_ent {
	double key;
	uint32_t id;
};

struct ctl_heap {
	struct ctl_heap_ent *v;
	size_t n, cap;
};

int ctl_heap_reserve(struct ctl_heap *h, size_t cap);		/* 0 or -ENOMEM */
int ctl_heap_push(struct ctl_heap *h, double key, uint32_t id); /* 0 or -ENOMEM */
struct ctl_heap_ent ctl_heap_pop(struct ctl_heap *h);
void ctl_heap_fini(struct ctl_heap *h); /* frees the entries */

/* ---- ctl_index.c: the flow's DAG and its source node; -errno */
int ctl_flow_dag(struct ctl_planner *p, const struct ctl_flow *f, struct dag **gp, uint32_t *src);
/* The flows' indices grouped by destination edge switch (a counting sort;
 * flows that are not between two NICs last), so that loops over flows build
 * and walk one DAG at a time, in cache, instead of a random DAG per flow.
 * Caller frees; NULL on ENOMEM. */
uint32_t *ctl_flow_order(const struct ctl_planner *p, const struct ctl_demand *d);
/* The same for the flows ids[0..n) only (ids NULL: the first n). */
uint32_t *ctl_flow_order_of(const struct ctl_planner *p, const struct ctl_demand *d,
			    const uint32_t *ids, uint32_t n);

/* ---- ctl_route.c: path search over a DAG */

/* The (max, sum) of utilisation below a DAG node that has one path to the
 * NIC, valid in the search whose stamp it carries. */
struct ctl_memo {
	double mx, sum;
	uint32_t stamp;
};
/* A switch's links up (or down), as read in a growth epoch: the least
 * utilisation m1, the next higher m2 (INFINITY: none), and where m1 is
 * reached (cnt positions in the list; more than CTL_OUTMIN_POS: not kept). */
#define CTL_OUTMIN_POS 16
struct ctl_outmin {
	double m1, m2;
	uint32_t at;
	uint32_t cnt;
	uint16_t pos[CTL_OUTMIN_POS];
};
/* Loads will only grow until ctl_grow_end() (0, -ENOMEM: no bounds). */
int ctl_grow_begin(struct ctl_planner *p);
void ctl_grow_end(struct ctl_planner *p);

struct search {
	struct ctl_planner *p;
	const struct dag *g;
	const struct ctl_flow *f;
	double add; /* bits or bit/s the flow adds */
	/* prune mode: no hop's utilisation is below this (add over the
	 * highest capacity; 0 where tiers do not bound the hops left) */
	double floor;
	bool memo;	 /* prune mode: one-path tails from p->memo */
	bool grow;	 /* and p->growing: minin[] bounds unread hops */
	uint32_t dl_nic; /* the last hop, down to the destination NIC */
	uint32_t dl[MAXH];
	/* best (prune mode) */
	double bmx, bsum;
	struct ctl_route best;
	bool prune;
	/* collect mode: every path's max, for swaps */
	struct ctl_route *all;
	double *allmx;
	uint32_t nall, capall;
	/* find mode */
	int32_t want;
	const struct ctl_route *match;
	bool found;
};

int ctl_search_run(struct search *s, uint32_t src);
/* Picks the next hop at the DAG node n: an index below n->n, or a negative
 * errno; called with n->n == 0 at the last switch too, where a negative
 * result refuses the route. */
typedef int (*ctl_pick_fn)(void *arg, const struct dag *g, const struct dag_node *n);
/* The route of f from src over its DAG g, the next hops as pick chooses. 0 or
 * pick's negative errno. */
int ctl_route_walk(const struct ctl_planner *p, const struct ctl_flow *f, const struct dag *g,
		   uint32_t src, ctl_pick_fn pick, void *arg, struct ctl_route *out);
/* Best route for f given the loads (f's own load not in them). */
int ctl_best_route(struct ctl_planner *p, const struct ctl_demand *d, const struct ctl_flow *f,
		   struct ctl_route *out, double *mx);
/* The route with index idx of f's pair; -ENOENT: none. */
int ctl_route_by_index(struct ctl_planner *p, const struct ctl_flow *f, int32_t idx,
		       struct ctl_route *out);
/* Loads of the routes (which = 0: path, 1: ecmp) into p->load; the max
 * utilisation. */
double ctl_loads_of(struct ctl_planner *p, const struct ctl_demand *d, int which);
/* The max utilisation of the loads in p->load. */
double ctl_max_of_loads(const struct ctl_planner *p);

/* ---- ctl_bound.c: the switch groups per tier, kept by the planner */
struct ctl_bound_index;
void ctl_bound_index_free(struct ctl_bound_index *b); /* NULL-safe */

/* ---- ctl_rate.c: the link -> flows index of the last filling */
struct ctl_rate_index;
void ctl_rate_index_free(struct ctl_rate_index *x); /* NULL-safe */

/* ---- ctl_search.c: local search over the routes in d (loads in p->load),
 * moving only the flows with movable[i]; kick: perturb at a local optimum
 * (sideways moves, tabu) and go on, else stop there; floor: stop at the
 * most utilised link no movable flow crosses (the max over all links),
 * else lower the max over the links movable flows cross or move onto. */
int ctl_local_search(struct ctl_planner *p, struct ctl_demand *d, bool *movable, double budget_s,
		     double bound, bool kick, bool floor, struct ctl_plan_stats *st);

/* ---- ctl_kempe.c: routes for the movable flows (all flows movable) from
 * balanced colourings, level by level. 0 or -errno. */
int ctl_kempe_plan(struct ctl_planner *p, struct ctl_demand *d, const bool *movable,
		   struct ctl_plan_stats *st);

/* ---- ctl_ecmp.c: the hash-model provider, and its walk: the route source
 * port sport takes for f. 0 or -errno. */
extern const struct ctl_pathmap_ops ctl_model_ops;
int ctl_model_route(struct ctl_planner *p, const struct ctl_flow *f, uint16_t sport,
		    struct ctl_route *out);

#endif /* CTL_PATH_INTERNAL_H */
