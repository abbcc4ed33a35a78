// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_index.c: the planner's index of a topology (ctl_path_internal.h):
 * switch ordinals, upper and lower neighbours in port order, cones, the
 * per-destination-switch DAGs of up-down next hops, and the check against
 * topo_paths() that ctl_planner_new() runs.
 *
 * Routes are the topology's equal-cost paths (topo_paths(): shortest paths
 * over switches toward the destination NIC's switch), enumerated here from
 * a per-destination-switch DAG so that a 10^4-10^5 host fabric plans in
 * about a second. In the tiered fabrics ICE targets every such path is
 * up-down, so a switch's next hops toward destination switch D are
 *   - D in cone(X) (D below X):  the lower neighbours Y with D in cone(Y);
 *   - else, j = fewest up hops from X to an ancestor of D: the upper
 *     neighbours Y needing j - 1,
 * from per-switch bitsets reach_j(X) = edge switches below some switch j up
 * hops above X. Sibling order is the switch's port order, as in topo_paths(),
 * so a route's index is the same as there (checked at ctl_planner_new() on
 * a sample of pairs, and in the tests on whole topologies).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_path_internal.h"
#include "ice_log.h"

ICE_LOG_SUBSYSTEM(ctl_log_sub, "plan");

static inline bool reach_has(const struct ctl_planner *p, uint32_t sw, uint32_t lvl, uint32_t e)
{
	const uint64_t *r = p->reach + ((size_t)sw * p->levels + lvl) * p->words;

	return (r[e >> 6] >> (e & 63)) & 1;
}

static uint32_t updist(const struct ctl_planner *p, uint32_t sw, uint32_t e)
{
	if (p->updist != NULL) {
		uint8_t j = p->updist[(size_t)e * p->nsw + sw];

		return j == UINT8_MAX ? NONE : j;
	}
	for (uint32_t j = 0; j < p->levels; j++)
		if (reach_has(p, sw, j, e))
			return j;
	return NONE;
}

/* ---- DAG toward one destination edge switch ------------------------------------ */

static void dag_free(struct dag *g)
{
	if (g == NULL)
		return;
	free(g->idx);
	free(g->nodes);
	free(g->nh);
	free(g);
}

/* Room for n more explicit next hops in g; false on ENOMEM. */
static bool dag_nh_reserve(struct dag *g, uint32_t n)
{
	uint32_t c = g->capnh ? 2 * g->capnh : 256;
	struct dag_nh *nh;

	if (g->nnh + n <= g->capnh)
		return true;
	while (c < g->nnh + n)
		c *= 2;
	nh = realloc(g->nh, c * sizeof(*nh));
	if (nh == NULL)
		return false;
	g->nh = nh;
	g->capnh = c;
	return true;
}

static uint32_t dag_build(struct ctl_planner *p, struct dag *g, uint32_t e, uint32_t sw, int depth);

/* 1 + the node that every next hop of me (each with one path) leads to
 * next, or 0 (ctl_path_internal.h, dag_node.gc). */
static uint32_t dag_grandchild(const struct ctl_planner *p, const struct dag *g, uint32_t me)
{
	const struct dag_node *n = &g->nodes[me];
	uint32_t gc = NONE;

	for (uint32_t i = 0; i < n->n; i++) {
		const struct dag_node *c = &g->nodes[dag_nh_at(p, g, n, i).child];

		if (c->n != 1)
			return 0;
		if (i == 0)
			gc = dag_nh_at(p, g, c, 0).child;
		else if (dag_nh_at(p, g, c, 0).child != gc)
			return 0;
	}
	return gc == NONE ? 0 : gc + 1;
}

/* Node me's next hops when every neighbour nbrs[lo..lo+n) leads on: built
 * children, then implicit when they all have the same path count (no
 * saturation), else an explicit list. false on ENOMEM or a child that fails. */
static bool dag_all(struct ctl_planner *p, struct dag *g, uint32_t e, uint32_t me, uint32_t lo,
		    uint32_t n, int depth)
{
	uint64_t sum = 0;
	uint32_t stride = 0, first;
	bool same = true;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t c = dag_build(p, g, e, p->nbrs[lo + i].sw, depth + 1);

		if (c == NONE)
			return false;
		if (i == 0)
			stride = g->nodes[c].paths;
		else if (g->nodes[c].paths != stride)
			same = false;
		sum += g->nodes[c].paths;
	}
	if (same && sum <= UINT32_MAX - 2) {
		g->nodes[me].first = DAG_IMPLICIT | lo;
		g->nodes[me].n = n;
		g->nodes[me].stride = stride;
		g->nodes[me].paths = (uint32_t)sum;
		g->nodes[me].gc = stride == 1 ? dag_grandchild(p, g, me) : 0;
		return true;
	}
	if (!dag_nh_reserve(g, n))
		return false;
	first = g->nnh;
	sum = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t c = g->idx[p->nbrs[lo + i].sw];

		g->nh[first + i] =
			(struct dag_nh){.dl = p->nbrs[lo + i].dl, .child = c, .off = (uint32_t)sum};
		sum += g->nodes[c].paths;
		if (sum > UINT32_MAX - 2)
			sum = UINT32_MAX - 2;
	}
	g->nnh = first + n;
	g->nodes[me].first = first;
	g->nodes[me].n = n;
	g->nodes[me].paths = (uint32_t)sum;
	return true;
}

/* DAG node of switch sw toward edge e (built on first use); NONE on ENOMEM
 * or when sw cannot reach e. */
static uint32_t dag_build(struct ctl_planner *p, struct dag *g, uint32_t e, uint32_t sw, int depth)
{
	uint32_t me, j, first, cnt = 0, lo, n, want, i;
	bool down;

	if (g->idx[sw] != NONE)
		return g->idx[sw];
	if (depth >= MAXH)
		return NONE;
	j = updist(p, sw, e);
	if (j == NONE)
		return NONE;
	if (g->nnodes == g->capn) {
		uint32_t c = g->capn ? 2 * g->capn : 64;
		struct dag_node *nn = realloc(g->nodes, c * sizeof(*nn));

		if (nn == NULL)
			return NONE;
		g->nodes = nn;
		g->capn = c;
	}
	me = g->nnodes++;
	g->idx[sw] = me;
	g->nodes[me] = (struct dag_node){.node = p->node_of_sw[sw]};
	if (p->edge_of_sw[sw] == e) {
		g->nodes[me].paths = 1; /* terminal: the egress is the NIC's port */
		return me;
	}
	down = j == 0;
	lo = down ? p->dn_first[sw] : p->up_first[sw];
	n = down ? p->dn_n[sw] : p->up_n[sw];
	want = down ? 0 : j - 1;
	for (i = 0; i < n; i++)
		if (updist(p, p->nbrs[lo + i].sw, e) != want)
			break;
	if (i == n && n > 0)
		return dag_all(p, g, e, me, lo, n, depth) ? me : NONE;
	if (!dag_nh_reserve(g, n))
		return NONE;
	first = g->nnh;
	for (i = 0; i < n; i++) {
		const struct nbr *b = &p->nbrs[lo + i];

		if (updist(p, b->sw, e) != want)
			continue;
		g->nh[first + cnt++] = (struct dag_nh){.dl = b->dl, .child = b->sw};
	}
	g->nnh = first + cnt;
	g->nodes[me].first = first;
	g->nodes[me].n = cnt;
	for (i = 0; i < cnt; i++) {
		uint32_t c = dag_build(p, g, e, g->nh[first + i].child, depth + 1);
		uint64_t sum;

		if (c == NONE)
			return NONE;
		g->nh[first + i].child = c;
		g->nh[first + i].off = g->nodes[me].paths;
		sum = (uint64_t)g->nodes[me].paths + g->nodes[c].paths;
		g->nodes[me].paths = sum > UINT32_MAX - 2 ? UINT32_MAX - 2 : (uint32_t)sum;
	}
	return me;
}

static struct dag *dag_get(struct ctl_planner *p, uint32_t e)
{
	struct dag *g = p->dags[e];

	if (g != NULL)
		return g;
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return NULL;
	g->idx = malloc(sizeof(*g->idx) * p->nsw);
	if (g->idx == NULL) {
		free(g);
		return NULL;
	}
	for (uint32_t i = 0; i < p->nsw; i++)
		g->idx[i] = NONE;
	p->dags[e] = g;
	return g;
}

/* The flow's DAG and its source node; -errno. */
int ctl_flow_dag(struct ctl_planner *p, const struct ctl_flow *f, struct dag **gp, uint32_t *src)
{
	const struct topo *t = p->t;
	uint32_t ssw, dsw, e;
	struct dag *g;

	if (!is_nic(t, f->src_port) || !is_nic(t, f->dst_port) || f->src_port == f->dst_port)
		return -EINVAL;
	ssw = p->sw_of_node[peer_node(t, f->src_port)];
	dsw = p->sw_of_node[peer_node(t, f->dst_port)];
	if (ssw == NONE || dsw == NONE || p->edge_of_sw[dsw] == NONE)
		return -EINVAL;
	e = p->edge_of_sw[dsw];
	g = dag_get(p, e);
	if (g == NULL)
		return -ENOMEM;
	*src = dag_build(p, g, e, ssw, 1);
	if (*src == NONE)
		return -EHOSTUNREACH;
	*gp = g;
	return 0;
}

static uint32_t flow_edge(const struct ctl_planner *p, const struct ctl_flow *f)
{
	const struct topo *t = p->t;
	uint32_t dsw;

	if (!is_nic(t, f->dst_port))
		return p->nedge;
	dsw = p->sw_of_node[peer_node(t, f->dst_port)];
	return dsw == NONE || p->edge_of_sw[dsw] == NONE ? p->nedge : p->edge_of_sw[dsw];
}

uint32_t *ctl_flow_order_of(const struct ctl_planner *p, const struct ctl_demand *d,
			    const uint32_t *ids, uint32_t n)
{
	uint32_t *ord = malloc(sizeof(uint32_t) * (n + 1));
	uint32_t *at = calloc(p->nedge + 2, sizeof(uint32_t));

	if (ord == NULL || at == NULL) {
		free(ord);
		free(at);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++)
		at[flow_edge(p, &d->flows[ids != NULL ? ids[i] : i]) + 1]++;
	for (uint32_t e = 0; e < p->nedge; e++)
		at[e + 1] += at[e];
	for (uint32_t i = 0; i < n; i++) {
		uint32_t f = ids != NULL ? ids[i] : i;

		ord[at[flow_edge(p, &d->flows[f])]++] = f;
	}
	free(at);
	return ord;
}

uint32_t *ctl_flow_order(const struct ctl_planner *p, const struct ctl_demand *d)
{
	return ctl_flow_order_of(p, d, NULL, (uint32_t)d->n);
}

/* ---- planner construction ------------------------------------------------------- */

void ctl_planner_free(struct ctl_planner *p)
{
	if (p == NULL)
		return;
	if (p->dags != NULL)
		for (uint32_t e = 0; e < p->nedge; e++)
			dag_free(p->dags[e]);
	free(p->dags);
	free(p->sw_of_node);
	free(p->node_of_sw);
	free(p->edge_of_sw);
	free(p->reach);
	free(p->updist);
	free(p->nbrs);
	free(p->up_first);
	free(p->cap);
	free(p->load);
	ctl_bound_index_free(p->bidx);
	ctl_rate_index_free(p->ridx[0]);
	ctl_rate_index_free(p->ridx[1]);
	free(p->memo);
	free(p->minin);
	free(p->outmin);
	free(p->minin_at);
	free(p);
}

/* The updist table (ctl_path_internal.h): one row per destination edge
 * switch, so a DAG's build reads one small row instead of a bitset per
 * switch (cache misses). Built 64 edge switches (one bitset word) at a
 * time, so the rows written stay in cache. Left NULL past 256 MiB or on
 * ENOMEM: updist() then reads the bitsets. */
static void planner_updist(struct ctl_planner *p)
{
	size_t sz = (size_t)p->nedge * p->nsw;

	if (p->levels >= UINT8_MAX || sz > (256u << 20))
		return;
	p->updist = malloc(sz + 1);
	if (p->updist == NULL)
		return;
	memset(p->updist, UINT8_MAX, sz + 1);
	for (uint32_t w = 0; w < p->words; w++)
		for (uint32_t s = 0; s < p->nsw; s++)
			for (uint32_t j = p->levels; j-- > 0;) {
				uint64_t b = p->reach[((size_t)s * p->levels + j) * p->words + w];

				while (b != 0) {
					uint32_t e = 64 * w + (uint32_t)__builtin_ctzll(b);

					p->updist[(size_t)e * p->nsw + s] = (uint8_t)j;
					b &= b - 1;
				}
			}
}

static int planner_index(struct ctl_planner *p)
{
	const struct topo *t = p->t;
	uint32_t maxtier = 0, nnbr = 0;

	p->sw_of_node = malloc(sizeof(uint32_t) * t->nnodes);
	if (p->sw_of_node == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->nnodes; i++) {
		p->sw_of_node[i] = NONE;
		if (t->nodes[i].kind == TOPO_SWITCH) {
			p->sw_of_node[i] = p->nsw++;
			nnbr += t->nodes[i].nports;
			if (t->nodes[i].tier > maxtier)
				maxtier = t->nodes[i].tier;
		}
	}
	p->node_of_sw = malloc(sizeof(uint32_t) * (p->nsw + 1));
	p->edge_of_sw = malloc(sizeof(uint32_t) * (p->nsw + 1));
	p->nbrs = malloc(sizeof(*p->nbrs) * (nnbr + 1));
	p->up_first = malloc(sizeof(uint32_t) * 4 * (p->nsw + 1));
	if (p->node_of_sw == NULL || p->edge_of_sw == NULL || p->nbrs == NULL ||
	    p->up_first == NULL)
		return -ENOMEM;
	p->up_n = p->up_first + p->nsw + 1;
	p->dn_first = p->up_n + p->nsw + 1;
	p->dn_n = p->dn_first + p->nsw + 1;
	nnbr = 0;
	for (uint32_t i = 0; i < t->nnodes; i++) {
		const struct topo_node *n = &t->nodes[i];
		uint32_t s = p->sw_of_node[i];
		bool edge = false;

		if (s == NONE)
			continue;
		p->node_of_sw[s] = i;
		for (int pass = 0; pass < 2; pass++) {
			uint32_t *first = pass == 0 ? p->up_first : p->dn_first;
			uint32_t *cnt = pass == 0 ? p->up_n : p->dn_n;

			first[s] = nnbr;
			cnt[s] = 0;
			for (uint32_t k = 0; k < n->nports; k++) {
				uint32_t y = peer_node(t, n->ports[k]);

				if (t->nodes[y].kind != TOPO_SWITCH) {
					edge = true;
					continue;
				}
				if ((pass == 0) != (t->nodes[y].tier > n->tier))
					continue;
				p->nbrs[nnbr++] = (struct nbr){.dl = dlink_of(t, n->ports[k]),
							       .sw = p->sw_of_node[y]};
				cnt[s]++;
			}
		}
		p->edge_of_sw[s] = edge ? p->nedge++ : NONE;
	}
	p->levels = maxtier + 1;
	p->words = (p->nedge + 63) / 64;
	p->reach = calloc((size_t)p->nsw * p->levels * p->words + 1, sizeof(uint64_t));
	if (p->reach == NULL)
		return -ENOMEM;
	/* level 0: cones, bottom tier first */
	for (uint32_t tier = 1; tier <= maxtier; tier++)
		for (uint32_t s = 0; s < p->nsw; s++) {
			uint64_t *r = p->reach + (size_t)s * p->levels * p->words;

			if (t->nodes[p->node_of_sw[s]].tier != tier)
				continue;
			if (p->edge_of_sw[s] != NONE)
				r[p->edge_of_sw[s] >> 6] |= 1ull << (p->edge_of_sw[s] & 63);
			for (uint32_t k = 0; k < p->dn_n[s]; k++) {
				const uint64_t *c =
					p->reach + (size_t)p->nbrs[p->dn_first[s] + k].sw *
							   p->levels * p->words;

				for (uint32_t w = 0; w < p->words; w++)
					r[w] |= c[w];
			}
		}
	for (uint32_t j = 1; j < p->levels; j++)
		for (uint32_t s = 0; s < p->nsw; s++) {
			uint64_t *r = p->reach + ((size_t)s * p->levels + j) * p->words;

			for (uint32_t k = 0; k < p->up_n[s]; k++) {
				const uint64_t *c =
					p->reach +
					((size_t)p->nbrs[p->up_first[s] + k].sw * p->levels + j -
					 1) * p->words;

				for (uint32_t w = 0; w < p->words; w++)
					r[w] |= c[w];
			}
		}
	planner_updist(p);
	p->dags = calloc(p->nedge + 1, sizeof(*p->dags));
	p->cap = malloc(sizeof(double) * 2 * (t->nlinks + 1));
	p->load = calloc(2 * (t->nlinks + 1), sizeof(double));
	if (p->dags == NULL || p->cap == NULL || p->load == NULL)
		return -ENOMEM;
	p->tiers_adj = true;
	for (uint32_t l = 0; l < t->nlinks; l++) {
		uint32_t ta = t->nodes[t->ports[t->links[l].a].node].tier;
		uint32_t tb = t->nodes[t->ports[t->links[l].b].node].tier;

		p->cap[2 * l] = p->cap[2 * l + 1] = (double)t->links[l].rate_bps;
		if (p->cap[2 * l] > p->cap_hi)
			p->cap_hi = p->cap[2 * l];
		if (ta + 1 != tb && tb + 1 != ta)
			p->tiers_adj = false;
	}
	return 0;
}

int ctl_planner_set_cap(struct ctl_planner *p, uint32_t dlink, double bps)
{
	if (dlink >= 2 * p->t->nlinks || !(bps > 0))
		return -EINVAL;
	p->cap[dlink] = bps;
	if (bps > p->cap_hi)
		p->cap_hi = bps;
	return 0;
}

double ctl_planner_cap(const struct ctl_planner *p, uint32_t dlink)
{
	return dlink < 2 * p->t->nlinks ? p->cap[dlink] : 0;
}

/* Compare our routes with topo_paths() for a few pairs. */
static int planner_selfcheck(struct ctl_planner *p)
{
	const struct topo *t = p->t;
	uint32_t nn = topo_nic_count(t), step = nn > 8 ? nn / 8 : 1;
	struct topo_path tp[64];

	for (uint32_t i = 1; i < nn; i += step) {
		struct ctl_flow f = {.src_port = topo_nic(t, 0)->id,
				     .dst_port = topo_nic(t, i)->id};
		int np = topo_paths(t, f.src_port, f.dst_port, tp, 64);
		uint32_t src;
		struct dag *g;

		if (np < 0 || ctl_flow_dag(p, &f, &g, &src) < 0)
			return -ENOTSUP;
		if ((uint32_t)np != g->nodes[src].paths)
			return -ENOTSUP;
		for (int k = 0; k < np && k < 64; k++) {
			struct ctl_route r;

			if (ctl_route_by_index(p, &f, k, &r) < 0 || r.nhops != tp[k].nhops)
				return -ENOTSUP;
			for (uint32_t h = 0; h < r.nhops; h++)
				if (r.dlink[h] != dlink_of(t, tp[k].egress[h]))
					return -ENOTSUP;
		}
	}
	return 0;
}

struct ctl_planner *ctl_planner_new(const struct topo *t)
{
	struct ctl_planner *p = calloc(1, sizeof(*p));
	int ret;

	if (p == NULL)
		return NULL;
	p->t = t;
	p->model = (struct ctl_pathmap){.ops = &ctl_model_ops, .p = p};
	ret = planner_index(p);
	if (ret == 0)
		ret = planner_selfcheck(p);
	if (ret < 0) {
		if (ret == -ENOTSUP)
			ice_err(ctl_log_sub,
				"ctl: topology %s has shortest paths that are not "
				"up-down; the planner does not support it",
				t->name);
		ctl_planner_free(p);
		errno = -ret;
		return NULL;
	}
	return p;
}

void ctl_plan_opts_default(struct ctl_plan_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->mode = CTL_PLAN_FRESH;
	o->hysteresis = 0.05;
}
