// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_path.c: the path planner.
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
 *
 * Objective: the maximum over directed links of load / capacity. Greedy
 * (announced flows first, then largest demand) puts each flow on the path
 * minimising (max utilisation along it, then its sum, then index); local
 * search then takes the most utilised link and moves (or swaps) flows off
 * it while the move leaves every touched link strictly below that level;
 * it stops when the top link cannot be relieved, at the lower bound, or on
 * its time budget.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include "ctl.h"
#include "ice_log.h"

#define EPS	  1e-9
#define NONE	  UINT32_MAX
#define TERM	  (UINT32_MAX - 1)
#define MAXH	  TOPO_PATH_MAX_HOPS
#define ROCE_PORT 4791

struct dag_nh {
	uint32_t eg;	/* egress port id */
	uint32_t child; /* dag node index, or TERM */
	uint32_t off;	/* path index offset (paths under earlier siblings) */
};

struct dag_node {
	uint32_t first, n; /* next hops in dag->nh */
	uint32_t paths;	   /* paths from here to the destination switch (saturating) */
	uint32_t node;	   /* topo node id */
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
	uint32_t port; /* egress port on this switch */
	uint32_t sw;   /* neighbour switch ordinal */
};

struct ctl_planner {
	const struct topo *t;
	uint32_t nsw, nedge, words, levels;
	uint32_t *sw_of_node; /* node id -> switch ordinal or NONE */
	uint32_t *node_of_sw; /* switch ordinal -> node id */
	uint32_t *edge_of_sw; /* switch ordinal -> edge ordinal or NONE */
	uint64_t *reach;      /* [sw][level][words] */
	struct nbr *nbrs;     /* per switch: upper then lower neighbours, port order */
	uint32_t *up_first, *up_n, *dn_first, *dn_n;
	struct dag **dags; /* [nedge] */
	double *cap;	   /* [2 * nlinks] bit/s */
	double *load;	   /* [2 * nlinks] scratch */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint32_t peer_node(const struct topo *t, uint32_t port)
{
	return t->ports[t->ports[port].peer].node;
}

static bool is_nic(const struct topo *t, uint32_t port)
{
	return port < t->nports && t->nodes[t->ports[port].node].kind == TOPO_HOST;
}

static uint32_t dlink_of(const struct topo *t, uint32_t egress)
{
	uint32_t l = t->ports[egress].link;

	return 2 * l + (t->links[l].a == egress ? 0 : 1);
}

static inline bool reach_has(const struct ctl_planner *p, uint32_t sw, uint32_t lvl, uint32_t e)
{
	const uint64_t *r = p->reach + ((size_t)sw * p->levels + lvl) * p->words;

	return (r[e >> 6] >> (e & 63)) & 1;
}

static uint32_t updist(const struct ctl_planner *p, uint32_t sw, uint32_t e)
{
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

/* DAG node of switch sw toward edge e (built on first use); NONE on ENOMEM
 * or when sw cannot reach e. */
static uint32_t dag_build(struct ctl_planner *p, struct dag *g, uint32_t e, uint32_t sw, int depth)
{
	uint32_t me, j, first, cnt = 0, lo, n;
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
	if (g->nnh + n > g->capnh) {
		uint32_t c = g->capnh ? 2 * g->capnh : 256;
		struct dag_nh *nh;

		while (c < g->nnh + n)
			c *= 2;
		nh = realloc(g->nh, c * sizeof(*nh));
		if (nh == NULL)
			return NONE;
		g->nh = nh;
		g->capnh = c;
	}
	first = g->nnh;
	for (uint32_t i = 0; i < n; i++) {
		const struct nbr *b = &p->nbrs[lo + i];

		if (updist(p, b->sw, e) != (down ? 0 : j - 1))
			continue;
		g->nh[first + cnt++] = (struct dag_nh){.eg = b->port, .child = b->sw};
	}
	g->nnh = first + cnt;
	g->nodes[me].first = first;
	g->nodes[me].n = cnt;
	for (uint32_t i = 0; i < cnt; i++) {
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
static int flow_dag(struct ctl_planner *p, const struct ctl_flow *f, struct dag **gp, uint32_t *src)
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

/* ---- path search over the DAG ---------------------------------------------------- */

struct search {
	struct ctl_planner *p;
	const struct dag *g;
	const struct ctl_flow *f;
	double add; /* bits or bit/s the flow adds */
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

static double util_add(const struct ctl_planner *p, uint32_t dl, double add)
{
	return (p->load[dl] + add) / p->cap[dl];
}

static void search_leaf(struct search *s, uint32_t h, double mx, double sum, uint32_t idx)
{
	if (s->all != NULL) {
		if (s->nall < s->capall) {
			struct ctl_route *r = &s->all[s->nall];

			r->idx = (int32_t)idx;
			r->nhops = h;
			memcpy(r->dlink, s->dl, h * sizeof(uint32_t));
			s->allmx[s->nall] = mx;
			s->nall++;
		}
		return;
	}
	if (s->match != NULL) {
		if (h == s->match->nhops &&
		    memcmp(s->dl, s->match->dlink, h * sizeof(uint32_t)) == 0) {
			s->best.idx = (int32_t)idx;
			s->found = true;
		}
		return;
	}
	if (s->want >= 0) {
		if ((int32_t)idx == s->want) {
			s->best.idx = (int32_t)idx;
			s->best.nhops = h;
			memcpy(s->best.dlink, s->dl, h * sizeof(uint32_t));
			s->found = true;
		}
		return;
	}
	if (mx < s->bmx - EPS || (mx <= s->bmx + EPS && sum < s->bsum - EPS)) {
		s->bmx = mx;
		s->bsum = sum;
		s->best.idx = (int32_t)idx;
		s->best.nhops = h;
		memcpy(s->best.dlink, s->dl, h * sizeof(uint32_t));
	}
}

static void search_dfs(struct search *s, uint32_t dn, uint32_t h, double mx, double sum,
		       uint32_t idx)
{
	const struct dag_node *n = &s->g->nodes[dn];
	const struct ctl_planner *p = s->p;

	if (s->found || h >= MAXH)
		return;
	if (s->want >= 0 && ((int64_t)s->want < idx || (int64_t)s->want >= (int64_t)idx + n->paths))
		return;
	if (n->n == 0) { /* the destination switch: down to the NIC */
		uint32_t dl = dlink_of(p->t, p->t->ports[s->f->dst_port].peer);
		double u = util_add(p, dl, s->add);

		s->dl[h] = dl;
		search_leaf(s, h + 1, mx > u ? mx : u, sum + u, idx);
		return;
	}
	for (uint32_t i = 0; i < n->n && !s->found; i++) {
		const struct dag_nh *nh = &s->g->nh[n->first + i];
		uint32_t dl = dlink_of(p->t, nh->eg);
		double u = util_add(p, dl, s->add), m = mx > u ? mx : u;

		if (s->prune &&
		    (m > s->bmx + EPS || (m >= s->bmx - EPS && sum + u >= s->bsum - EPS)))
			continue;
		s->dl[h] = dl;
		search_dfs(s, nh->child, h + 1, m, sum + u, idx + nh->off);
	}
}

static int search_run(struct search *s, uint32_t src)
{
	const struct topo *t = s->p->t;
	uint32_t dl0 = dlink_of(t, s->f->src_port);
	double u = util_add(s->p, dl0, s->add);

	s->bmx = s->bsum = INFINITY;
	s->best.idx = -1;
	s->best.nhops = 0;
	s->dl[0] = dl0;
	search_dfs(s, src, 1, u, u, 0);
	return s->best.idx >= 0 || s->nall > 0 || s->found ? 0 : -EHOSTUNREACH;
}

static double flow_bits(const struct ctl_demand *d, const struct ctl_flow *f)
{
	return d->unit == CTL_UNIT_BYTES ? 8.0 * (double)f->demand : (double)f->demand;
}

/* Best route for f given the loads (f's own load not in them). */
static int best_route(struct ctl_planner *p, const struct ctl_demand *d, const struct ctl_flow *f,
		      struct ctl_route *out, double *mx)
{
	struct search s = {.p = p, .f = f, .add = flow_bits(d, f), .prune = true, .want = -1};
	uint32_t src;
	struct dag *g;
	int ret = flow_dag(p, f, &g, &src);

	if (ret < 0)
		return ret;
	s.g = g;
	ret = search_run(&s, src);
	if (ret < 0)
		return ret;
	*out = s.best;
	*mx = s.bmx;
	return 0;
}

/* The route with index idx of f's pair. */
static int route_by_index(struct ctl_planner *p, const struct ctl_flow *f, int32_t idx,
			  struct ctl_route *out)
{
	struct search s = {.p = p, .f = f, .want = idx};
	uint32_t src;
	struct dag *g;
	int ret = flow_dag(p, f, &g, &src);

	if (ret < 0)
		return ret;
	s.g = g;
	search_run(&s, src);
	if (!s.found)
		return -ENOENT;
	*out = s.best;
	return 0;
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
	free(p->nbrs);
	free(p->up_first);
	free(p->cap);
	free(p->load);
	free(p);
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
				p->nbrs[nnbr++] =
					(struct nbr){.port = n->ports[k], .sw = p->sw_of_node[y]};
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
	p->dags = calloc(p->nedge + 1, sizeof(*p->dags));
	p->cap = malloc(sizeof(double) * 2 * (t->nlinks + 1));
	p->load = calloc(2 * (t->nlinks + 1), sizeof(double));
	if (p->dags == NULL || p->cap == NULL || p->load == NULL)
		return -ENOMEM;
	for (uint32_t l = 0; l < t->nlinks; l++)
		p->cap[2 * l] = p->cap[2 * l + 1] = (double)t->links[l].rate_bps;
	return 0;
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

		if (np < 0 || flow_dag(p, &f, &g, &src) < 0)
			return -ENOTSUP;
		if ((uint32_t)np != g->nodes[src].paths)
			return -ENOTSUP;
		for (int k = 0; k < np && k < 64; k++) {
			struct ctl_route r;

			if (route_by_index(p, &f, k, &r) < 0 || r.nhops != tp[k].nhops)
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
	ret = planner_index(p);
	if (ret == 0)
		ret = planner_selfcheck(p);
	if (ret < 0) {
		if (ret == -ENOTSUP)
			ice_err(ICE_SUB_COMMON,
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

/* ---- loads ------------------------------------------------------------------ */

static void route_add(struct ctl_planner *p, const struct ctl_route *r, double bits)
{
	for (uint32_t h = 0; h < r->nhops; h++)
		p->load[r->dlink[h]] += bits;
}

static double loads_of(struct ctl_planner *p, const struct ctl_demand *d, int which)
{
	double mx = 0;

	memset(p->load, 0, sizeof(double) * 2 * p->t->nlinks);
	for (size_t i = 0; i < d->n; i++) {
		const struct ctl_flow *f = &d->flows[i];
		const struct ctl_route *r = which ? &f->ecmp : &f->path;

		if (r->idx >= 0 || r->nhops > 0)
			route_add(p, r, flow_bits(d, f));
	}
	for (uint32_t l = 0; l < 2 * p->t->nlinks; l++)
		if (p->load[l] / p->cap[l] > mx)
			mx = p->load[l] / p->cap[l];
	return mx;
}

double ctl_max_util(struct ctl_planner *p, const struct ctl_demand *d, int which)
{
	return loads_of(p, d, which);
}

/* ---- lower bound ------------------------------------------------------------- */

static uint32_t uf_find(uint32_t *uf, uint32_t x)
{
	while (uf[x] != x) {
		uf[x] = uf[uf[x]];
		x = uf[x];
	}
	return x;
}

double ctl_bound(struct ctl_planner *p, const struct ctl_demand *d)
{
	const struct topo *t = p->t;
	double *out = calloc(2 * (size_t)t->nnodes + 2 * (size_t)t->nports + 2, sizeof(double));
	double *in, *cap, *nout, *nin, best = 0;
	uint32_t *uf = malloc(sizeof(uint32_t) * (t->nnodes + 1));

	if (out == NULL || uf == NULL) {
		free(out);
		free(uf);
		return NAN;
	}
	in = out + t->nnodes;
	nout = in + t->nnodes;
	nin = nout + t->nports;
	/* NIC links: every flow crosses its source NIC's link up, its destination's down */
	for (size_t i = 0; i < d->n; i++) {
		nout[d->flows[i].src_port] += flow_bits(d, &d->flows[i]);
		nin[d->flows[i].dst_port] += flow_bits(d, &d->flows[i]);
	}
	for (uint32_t q = 0; q < t->nports; q++) {
		double c = (double)t->links[t->ports[q].link].rate_bps;

		if (nout[q] / c > best)
			best = nout[q] / c;
		if (nin[q] / c > best)
			best = nin[q] / c;
	}
	/* Cuts: the switches of tier <= tier form groups (connected through
	 * links among them); demand from a group's hosts to hosts outside must
	 * leave through links from the group to tier + 1, and come in the same
	 * way, so max utilisation >= demand / those links' capacity. */
	cap = calloc(t->nnodes + 1, sizeof(double));
	if (cap == NULL) {
		free(out);
		free(uf);
		return NAN;
	}
	for (uint32_t tier = 1; tier + 1 < p->levels; tier++) {
		for (uint32_t i = 0; i < t->nnodes; i++)
			uf[i] = i;
		memset(out, 0, sizeof(double) * 2 * t->nnodes);
		memset(cap, 0, sizeof(double) * t->nnodes);
		for (uint32_t l = 0; l < t->nlinks; l++) {
			uint32_t a = t->ports[t->links[l].a].node, b = t->ports[t->links[l].b].node;

			if (t->nodes[a].kind == TOPO_SWITCH && t->nodes[b].kind == TOPO_SWITCH &&
			    t->nodes[a].tier <= tier && t->nodes[b].tier <= tier)
				uf[uf_find(uf, a)] = uf_find(uf, b);
		}
		for (uint32_t l = 0; l < t->nlinks; l++) {
			uint32_t a = t->ports[t->links[l].a].node, b = t->ports[t->links[l].b].node;

			if (t->nodes[a].kind == TOPO_SWITCH && t->nodes[a].tier <= tier &&
			    t->nodes[b].tier > tier)
				cap[uf_find(uf, a)] += (double)t->links[l].rate_bps;
		}
		for (size_t i = 0; i < d->n; i++) {
			const struct ctl_flow *f = &d->flows[i];
			uint32_t gs = uf_find(uf, peer_node(t, f->src_port));
			uint32_t gd = uf_find(uf, peer_node(t, f->dst_port));

			if (gs != gd) {
				out[gs] += flow_bits(d, f);
				in[gd] += flow_bits(d, f);
			}
		}
		for (uint32_t g = 0; g < t->nnodes; g++) {
			if (cap[g] <= 0)
				continue;
			if (out[g] / cap[g] > best)
				best = out[g] / cap[g];
			if (in[g] / cap[g] > best)
				best = in[g] / cap[g];
		}
	}
	free(cap);
	free(out);
	free(uf);
	return best;
}

/* ---- local search ---------------------------------------------------------------- */

struct heap_ent {
	double u;
	uint32_t dl;
};

struct ls {
	struct ctl_planner *p;
	struct ctl_demand *d;
	bool *movable;
	/* flows on each directed link: doubly linked lists of (flow, hop) */
	uint32_t *head, *next, *prev;
	struct heap_ent *heap;
	size_t nheap, capheap;
	uint64_t *tabu; /* a kicked flow stays put until this iteration */
	uint64_t it;
};

static int heap_push(struct ls *s, uint32_t dl)
{
	struct heap_ent e = {.u = s->p->load[dl] / s->p->cap[dl], .dl = dl};
	size_t i;

	if (s->nheap == s->capheap) {
		size_t c = s->capheap ? 2 * s->capheap : 1024;
		struct heap_ent *h = realloc(s->heap, c * sizeof(*h));

		if (h == NULL)
			return -ENOMEM;
		s->heap = h;
		s->capheap = c;
	}
	i = s->nheap++;
	while (i > 0 && s->heap[(i - 1) / 2].u < e.u) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = e;
	return 0;
}

static void heap_pop(struct ls *s)
{
	struct heap_ent e = s->heap[--s->nheap];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= s->nheap)
			break;
		if (c + 1 < s->nheap && s->heap[c + 1].u > s->heap[c].u)
			c++;
		if (s->heap[c].u <= e.u)
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->nheap > 0)
		s->heap[i] = e;
}

/* The most utilised directed link (skipping stale entries), NONE if empty. */
static uint32_t heap_top(struct ls *s)
{
	while (s->nheap > 0) {
		struct heap_ent *e = &s->heap[0];

		if (e->u == s->p->load[e->dl] / s->p->cap[e->dl])
			return e->dl;
		heap_pop(s);
	}
	return NONE;
}

static void ls_unlink(struct ls *s, uint32_t f)
{
	struct ctl_flow *fl = &s->d->flows[f];

	for (uint32_t h = 0; h < fl->path.nhops; h++) {
		uint32_t e = f * MAXH + h, dl = fl->path.dlink[h];

		if (s->prev[e] != NONE)
			s->next[s->prev[e]] = s->next[e];
		else
			s->head[dl] = s->next[e];
		if (s->next[e] != NONE)
			s->prev[s->next[e]] = s->prev[e];
	}
}

static void ls_link(struct ls *s, uint32_t f)
{
	struct ctl_flow *fl = &s->d->flows[f];

	for (uint32_t h = 0; h < fl->path.nhops; h++) {
		uint32_t e = f * MAXH + h, dl = fl->path.dlink[h];

		s->prev[e] = NONE;
		s->next[e] = s->head[dl];
		if (s->head[dl] != NONE)
			s->prev[s->head[dl]] = e;
		s->head[dl] = e;
	}
}

/* Change f's load on its route by sign and refresh the heap. */
static int ls_load(struct ls *s, uint32_t f, double sign)
{
	struct ctl_flow *fl = &s->d->flows[f];
	double b = sign * flow_bits(s->d, fl);
	int ret = 0;

	for (uint32_t h = 0; h < fl->path.nhops; h++) {
		s->p->load[fl->path.dlink[h]] += b;
		if (s->p->load[fl->path.dlink[h]] < 1e-6 * s->p->cap[fl->path.dlink[h]] * EPS)
			s->p->load[fl->path.dlink[h]] = 0;
		if (ret == 0)
			ret = heap_push(s, fl->path.dlink[h]);
	}
	return ret;
}

static int ls_set(struct ls *s, uint32_t f, const struct ctl_route *r)
{
	ls_unlink(s, f);
	s->d->flows[f].path = *r;
	ls_link(s, f);
	return ls_load(s, f, +1);
}

/* Flows on dl, largest demand first (ties: lowest index); malloc'd. */
static uint32_t *ls_flows_on(struct ls *s, uint32_t dl, uint32_t *n);

static int cmp_demand_desc(const void *a, const void *b, void *arg)
{
	const struct ctl_demand *d = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (d->flows[x].demand != d->flows[y].demand)
		return d->flows[x].demand > d->flows[y].demand ? -1 : 1;
	return x < y ? -1 : x > y;
}

static uint32_t *ls_flows_on(struct ls *s, uint32_t dl, uint32_t *n)
{
	uint32_t cnt = 0, *v;

	for (uint32_t e = s->head[dl]; e != NONE; e = s->next[e])
		cnt++;
	v = malloc(sizeof(uint32_t) * (cnt + 1));
	if (v == NULL)
		return NULL;
	cnt = 0;
	for (uint32_t e = s->head[dl]; e != NONE; e = s->next[e])
		if (s->movable[e / MAXH] && s->tabu[e / MAXH] <= s->it)
			v[cnt++] = e / MAXH;
	qsort_r(v, cnt, sizeof(uint32_t), cmp_demand_desc, s->d);
	*n = cnt;
	return v;
}

/* Try to move one flow off dl (at utilisation U) so that every link it then
 * uses stays below U. 1 moved, 0 none, -errno. */
static int ls_try_move(struct ls *s, uint32_t dl, double U)
{
	uint32_t n, *fs = ls_flows_on(s, dl, &n);
	int ret = 0;

	if (fs == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < n && ret == 0; i++) {
		struct ctl_flow *f = &s->d->flows[fs[i]];
		struct ctl_route r;
		double mx;

		ls_load(s, fs[i], -1);
		if (best_route(s->p, s->d, f, &r, &mx) == 0 && mx < U - EPS * U) {
			ret = ls_set(s, fs[i], &r);
			ret = ret < 0 ? ret : 1;
		} else {
			ret = ls_load(s, fs[i], +1);
		}
	}
	free(fs);
	return ret;
}

/* Swap: move f off dl onto a path blocked by one link B, and move a flow g
 * off B elsewhere, so that every touched link ends below U. 1, 0, -errno. */
static bool route_covers(const struct ctl_route *r, const uint32_t *dl, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		bool in = false;

		for (uint32_t h = 0; h < r->nhops && !in; h++)
			in = r->dlink[h] == dl[i];
		if (!in)
			return false;
	}
	return true;
}

#define SWAP_PATHS 16
#define SWAP_FLOWS 8

static int ls_try_swap(struct ls *s, uint32_t dl, double U)
{
	struct ctl_planner *p = s->p;
	uint32_t n, *fs = ls_flows_on(s, dl, &n);
	struct ctl_route *all = malloc(sizeof(*all) * 4096);
	double *allmx = malloc(sizeof(double) * 4096);
	int ret = 0;

	if (fs == NULL || all == NULL || allmx == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n && i < SWAP_FLOWS && ret == 0; i++) {
		uint32_t fi = fs[i];
		struct ctl_flow *f = &s->d->flows[fi];
		struct ctl_route old = f->path;
		struct search se = {.p = p, .f = f, .add = flow_bits(s->d, f), .want = -1};
		uint32_t src, tried = 0;
		struct dag *g;

		if (flow_dag(p, f, &g, &src) < 0)
			continue;
		ls_load(s, fi, -1);
		se.g = g;
		se.all = all;
		se.allmx = allmx;
		se.capall = 4096;
		search_run(&se, src);
		for (uint32_t k = 0; k < se.nall && tried < SWAP_PATHS && ret == 0; k++) {
			uint32_t blk[MAXH], nb = 0, gn, *gs;

			if (allmx[k] < U - EPS * U || all[k].idx == old.idx)
				continue;
			for (uint32_t h = 0; h < all[k].nhops; h++)
				if (util_add(p, all[k].dlink[h], se.add) >= U - EPS * U)
					blk[nb++] = all[k].dlink[h];
			if (nb == 0)
				continue;
			tried++;
			/* g must cross every blocking link to relieve them all */
			gs = ls_flows_on(s, blk[0], &gn);
			if (gs == NULL) {
				ret = -ENOMEM;
				break;
			}
			for (uint32_t j = 0; j < gn && j < SWAP_FLOWS && ret == 0; j++) {
				struct ctl_flow *gf = &s->d->flows[gs[j]];
				struct ctl_route gold = gf->path, gr;
				double gmx, fmx = 0;

				if (gs[j] == fi || !route_covers(&gf->path, blk, nb))
					continue;
				ls_load(s, gs[j], -1);
				route_add(p, &all[k], se.add);
				for (uint32_t h = 0; h < all[k].nhops; h++)
					if (p->load[all[k].dlink[h]] / p->cap[all[k].dlink[h]] >
					    fmx)
						fmx = p->load[all[k].dlink[h]] /
						      p->cap[all[k].dlink[h]];
				if (fmx < U - EPS * U && best_route(p, s->d, gf, &gr, &gmx) == 0 &&
				    gmx < U - EPS * U && gr.idx != gold.idx) {
					route_add(p, &all[k], -se.add);
					ret = ls_set(s, fi, &all[k]);
					if (ret == 0)
						ret = ls_set(s, gs[j], &gr);
					ret = ret < 0 ? ret : 1;
				} else {
					route_add(p, &all[k], -se.add);
					ls_load(s, gs[j], +1);
				}
			}
			free(gs);
		}
		if (ret == 0)
			ret = ls_load(s, fi, +1);
	}
out:
	free(fs);
	free(all);
	free(allmx);
	return ret;
}

/* Stuck: move one flow off dl sideways (to its best other route whose max
 * is not above U) and keep it there for a while, so that the next moves
 * can unwind a chain. 1 kicked, 0 nothing to kick, -errno. */
static int ls_kick(struct ls *s, uint32_t dl, double U, uint64_t kicks)
{
	struct ctl_planner *p = s->p;
	uint32_t n, *fs = ls_flows_on(s, dl, &n);
	struct ctl_route *all = malloc(sizeof(*all) * 4096);
	double *allmx = malloc(sizeof(double) * 4096);
	int ret = 0;

	if (fs == NULL || all == NULL || allmx == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n && ret == 0; i++) {
		uint32_t fi = fs[(i + kicks) % n], src, pick = NONE;
		struct ctl_flow *f = &s->d->flows[fi];
		struct search se = {.p = p, .f = f, .add = flow_bits(s->d, f), .want = -1};
		struct dag *g;

		if (flow_dag(p, f, &g, &src) < 0)
			continue;
		ls_load(s, fi, -1);
		se.g = g;
		se.all = all;
		se.allmx = allmx;
		se.capall = 4096;
		search_run(&se, src);
		for (uint32_t k = 0; k < se.nall; k++)
			if (all[k].idx != f->path.idx && allmx[k] <= U * (1 + EPS) &&
			    (pick == NONE || allmx[k] < allmx[pick] - EPS))
				pick = k;
		if (pick == NONE) {
			ret = ls_load(s, fi, +1);
			continue;
		}
		ret = ls_set(s, fi, &all[pick]);
		s->tabu[fi] = s->it + 8 + (kicks % 7);
		ret = ret < 0 ? ret : 1;
	}
out:
	free(fs);
	free(all);
	free(allmx);
	return ret;
}

/* Local search over the routes in d (loads in p->load). */
static int local_search(struct ctl_planner *p, struct ctl_demand *d, bool *movable, double budget_s,
			double bound, struct ctl_plan_stats *st)
{
	struct ls s = {.p = p, .d = d, .movable = movable};
	uint32_t nd = 2 * p->t->nlinks;
	uint64_t kicks = 0, max_kicks = 2 * (uint64_t)d->n + 64;
	struct ctl_route *best = NULL;
	double t0 = now_s(), best_u = INFINITY;
	int ret = -ENOMEM;

	s.head = malloc(sizeof(uint32_t) * (nd + 1));
	s.next = malloc(sizeof(uint32_t) * (d->n * MAXH + 1));
	s.prev = malloc(sizeof(uint32_t) * (d->n * MAXH + 1));
	s.tabu = calloc(d->n + 1, sizeof(uint64_t));
	best = malloc(sizeof(*best) * (d->n + 1));
	if (s.head == NULL || s.next == NULL || s.prev == NULL || s.tabu == NULL || best == NULL)
		goto out;
	for (uint32_t f = 0; f < d->n; f++)
		best[f] = d->flows[f].path;
	for (uint32_t l = 0; l < nd; l++)
		s.head[l] = NONE;
	for (uint32_t f = 0; f < d->n; f++)
		if (d->flows[f].path.idx >= 0)
			ls_link(&s, f);
	for (uint32_t l = 0; l < nd; l++)
		if (p->load[l] > 0 && (ret = heap_push(&s, l)) < 0)
			goto out;
	ret = 0;
	for (uint64_t it = 0;; it++) {
		uint32_t top = heap_top(&s);
		double U;
		int r;

		if (s.nheap > 16 * (size_t)nd + 4096) { /* drop stale entries */
			s.nheap = 0;
			for (uint32_t l = 0; l < nd; l++)
				if (p->load[l] > 0 && (ret = heap_push(&s, l)) < 0)
					goto out;
			top = heap_top(&s);
		}
		if (top == NONE)
			break;
		U = p->load[top] / p->cap[top];
		s.it = it;
		if (U < best_u * (1 - EPS)) {
			best_u = U;
			if (kicks > 0)
				for (uint32_t f = 0; f < d->n; f++)
					best[f] = d->flows[f].path;
		}
		if (U <= bound * (1 + 1e-9))
			break; /* optimal */
		if (budget_s > 0 && (it & 15) == 0 && now_s() - t0 > budget_s) {
			st->budget_hit = true;
			break;
		}
		ice_dbg(ICE_SUB_COMMON, "ctl: local search: top link %u dir %u at %.4f", top / 2,
			top & 1, U);
		r = ls_try_move(&s, top, U);
		if (r == 0)
			r = ls_try_swap(&s, top, U);
		if (r == 0 && kicks < max_kicks) {
			/* the top link cannot be relieved: perturb and go on */
			if (kicks == 0)
				for (uint32_t f = 0; f < d->n; f++)
					best[f] = d->flows[f].path;
			r = ls_kick(&s, top, U, kicks++);
			/* or off any other link at the top level */
			for (uint32_t l = 0; r == 0 && l < nd; l++)
				if (l != top && p->load[l] >= U * p->cap[l] * (1 - EPS))
					r = ls_kick(&s, l, U, kicks);
		}
		if (r < 0) {
			ret = r;
			break;
		}
		if (r == 0)
			break; /* nothing moves any more */
		st->moves++;
	}
	if (ret == 0 && kicks > 0) {
		uint32_t top = heap_top(&s);

		/* the first routes that reached the best level: no idle moves */
		if (top != NONE && p->load[top] / p->cap[top] >= best_u * (1 - EPS)) {
			for (uint32_t f = 0; f < d->n; f++)
				d->flows[f].path = best[f];
			loads_of(p, d, 0);
		}
	}
out:
	free(best);
	free(s.tabu);
	free(s.head);
	free(s.next);
	free(s.prev);
	free(s.heap);
	return ret;
}

/* ---- balanced colouring with alternating paths (Kempe chains) ------------------ */

/*
 * A construction for the tiered fabrics ICE targets, before the local
 * search. A flow's route is a sequence of choices, one per branching switch
 * of its DAG (the up hops: a leaf's spine; a ToR's aggregation switch, then
 * that switch's core). Level l is the l-th choice. At level l the choice c
 * at branching switch X uses the up-link X -> child c, and (in leaf-spine
 * and fat-tree wiring) fixes the mirror down-link: the hop as far from the
 * end of the route as X's is from its start, which enters a switch R that
 * does not depend on c (the destination leaf/ToR at level 0, the
 * destination pod's aggregation switch at level 1). So a level is a
 * bipartite multigraph -- an edge X -> R per flow, coloured by its choice --
 * and its up- and mirror-link loads are the per-vertex colour counts.
 *
 * Every bipartite multigraph has an equitable C-edge-colouring (de Werra):
 * at every vertex, each colour count is floor or ceil of degree / C. We get
 * one level by level: greedy colours, then for each vertex whose most and
 * least used colours a, b differ by 2 or more, the a/b component through it
 * (its Kempe chains) is recoloured along an Euler partition -- trails from
 * odd vertices first, colours alternating along each trail -- which leaves
 * every vertex of the component with |#a - #b| <= 1 (bipartite: closed
 * trails are even). No vertex gets worse and the sum of squared counts
 * drops, so one pass over the vertices ends with every vertex balanced.
 * With equal demands (ring, permutation, all-to-all of one job) and uniform
 * capacities that is the lower bound whenever the bound is the NIC or cut
 * bound, by König's theorem per level. Counts stand in for loads, so with
 * unequal demands this is a heuristic start; the routes are always scored
 * on real loads, and the local search and the greedy plan follow (the better
 * plan wins), so nothing here can make a plan worse.
 */
struct kc {
	uint32_t C, nv, ne;
	uint32_t *eflow;      /* [ne] flow of each edge */
	uint32_t *end;	      /* [2 ne] left vertex, right vertex */
	uint16_t *col;	      /* [ne] */
	uint32_t *cnt, *head; /* [nv C] */
	uint32_t *nx, *pv;    /* [2 ne]: lists per (vertex, colour), per edge end */
	uint32_t nleft;	      /* vertices below nleft are left (up-link) vertices */
	/* component scratch */
	uint32_t *estamp, *vstamp, *loc, stamp;
	uint32_t *cedge, *cvert, *adj, *astart, *cur, *rem;
	uint16_t *ncol;
	uint64_t chains;
};

static void kc_insert(struct kc *k, uint32_t e, uint32_t s)
{
	uint32_t v = k->end[2 * e + s], hd = v * k->C + k->col[e];

	k->pv[2 * e + s] = NONE;
	k->nx[2 * e + s] = k->head[hd];
	if (k->head[hd] != NONE)
		k->pv[k->head[hd]] = 2 * e + s;
	k->head[hd] = 2 * e + s;
	k->cnt[hd]++;
}

static void kc_remove(struct kc *k, uint32_t e, uint32_t s)
{
	uint32_t v = k->end[2 * e + s], hd = v * k->C + k->col[e], x = 2 * e + s;

	if (k->pv[x] != NONE)
		k->nx[k->pv[x]] = k->nx[x];
	else
		k->head[hd] = k->nx[x];
	if (k->nx[x] != NONE)
		k->pv[k->nx[x]] = k->pv[x];
	k->cnt[hd]--;
}

/* Recolour the a/b component through vertex v along an Euler partition. */
static void kc_rebalance(struct kc *k, uint32_t v, uint16_t a, uint16_t b)
{
	uint32_t ne = 0, nvv = 0, qh = 0, step;

	k->stamp++;
	k->vstamp[v] = k->stamp;
	k->loc[v] = nvv;
	k->cvert[nvv++] = v;
	while (qh < nvv) {
		uint32_t u = k->cvert[qh++], s = u < k->nleft ? 0 : 1;

		for (int w = 0; w < 2; w++)
			for (uint32_t x = k->head[u * k->C + (w ? b : a)]; x != NONE;
			     x = k->nx[x]) {
				uint32_t e = x / 2, o = k->end[2 * e + (1 - s)];

				if (k->estamp[e] == k->stamp)
					continue;
				k->estamp[e] = k->stamp;
				k->cedge[ne++] = e;
				if (k->vstamp[o] != k->stamp) {
					k->vstamp[o] = k->stamp;
					k->loc[o] = nvv;
					k->cvert[nvv++] = o;
				}
			}
	}
	/* local adjacency (CSR) */
	for (uint32_t i = 0; i <= nvv; i++)
		k->astart[i] = 0;
	for (uint32_t i = 0; i < ne; i++) {
		k->astart[k->loc[k->end[2 * k->cedge[i]]] + 1]++;
		k->astart[k->loc[k->end[2 * k->cedge[i] + 1]] + 1]++;
	}
	for (uint32_t i = 0; i < nvv; i++) {
		k->astart[i + 1] += k->astart[i];
		k->cur[i] = k->astart[i];
		k->rem[i] = k->astart[i + 1] - k->astart[i];
	}
	for (uint32_t i = 0; i < ne; i++) {
		uint32_t e = k->cedge[i];

		k->adj[k->cur[k->loc[k->end[2 * e]]]++] = i;
		k->adj[k->cur[k->loc[k->end[2 * e + 1]]]++] = i;
		k->ncol[i] = UINT16_MAX;
	}
	for (uint32_t i = 0; i < nvv; i++)
		k->cur[i] = k->astart[i];
	/* trails: from odd vertices first, then closed ones */
	step = 0;
	for (int phase = 0; phase < 2; phase++)
		for (uint32_t s0 = 0; s0 < nvv; s0++)
			while (phase == 0 ? (k->rem[s0] & 1) : k->rem[s0] > 0) {
				uint32_t u = s0, len = 0;

				for (;;) {
					uint32_t i, e, o;

					while (k->cur[u] < k->astart[u + 1] &&
					       k->ncol[k->adj[k->cur[u]]] != UINT16_MAX)
						k->cur[u]++;
					if (k->cur[u] == k->astart[u + 1])
						break;
					i = k->adj[k->cur[u]++];
					e = k->cedge[i];
					/* open trails start on a and b in turn */
					k->ncol[i] = ((len + step) & 1) ? b : a;
					len++;
					o = k->loc[k->end[2 * e]] == u ? k->loc[k->end[2 * e + 1]]
								       : k->loc[k->end[2 * e]];
					k->rem[u]--;
					k->rem[o]--;
					u = o;
				}
				if (phase == 0)
					step++;
			}
	for (uint32_t i = 0; i < ne; i++) {
		uint32_t e = k->cedge[i];

		if (k->ncol[i] == k->col[e])
			continue;
		kc_remove(k, e, 0);
		kc_remove(k, e, 1);
		k->col[e] = k->ncol[i];
		kc_insert(k, e, 0);
		kc_insert(k, e, 1);
	}
	k->chains++;
}

static void kc_balance(struct kc *k)
{
	for (uint32_t v = 0; v < k->nv; v++)
		for (;;) {
			const uint32_t *c = k->cnt + (size_t)v * k->C;
			uint16_t a = 0, b = 0;

			for (uint16_t x = 1; x < k->C; x++) {
				if (c[x] > c[a])
					a = x;
				if (c[x] < c[b])
					b = x;
			}
			if (c[a] < c[b] + 2)
				break;
			kc_rebalance(k, v, a, b);
		}
}

/* Walk f's DAG from src taking choice ch[l] at its l-th branching node.
 * Fills r; the lvl-th branching node's hop and fan-out go to *bhop, *bn
 * (*bn 0 when the route has no such level). */
static void kc_walk(const struct ctl_planner *p, const struct dag *g, uint32_t src,
		    const struct ctl_flow *f, const uint16_t *ch, struct ctl_route *r, uint32_t lvl,
		    uint32_t *bhop, uint32_t *bn)
{
	const struct topo *t = p->t;
	uint32_t dn = src, h = 0, idx = 0, level = 0;

	*bn = 0;
	r->dlink[h++] = dlink_of(t, f->src_port);
	while (h < MAXH) {
		const struct dag_node *n = &g->nodes[dn];
		const struct dag_nh *nh;
		uint32_t i = 0;

		if (n->n == 0) {
			r->dlink[h++] = dlink_of(t, t->ports[f->dst_port].peer);
			break;
		}
		if (n->n > 1) {
			i = ch[level] < n->n ? ch[level] : n->n - 1;
			if (level == lvl) {
				*bhop = h;
				*bn = n->n;
			}
			level++;
		}
		nh = &g->nh[n->first + i];
		r->dlink[h++] = dlink_of(t, nh->eg);
		idx += nh->off;
		dn = nh->child;
	}
	r->nhops = h;
	r->idx = (int32_t)idx;
}

static void kc_free(struct kc *k)
{
	free(k->eflow);
	free(k->end);
	free(k->col);
	free(k->cnt);
	free(k->head);
	free(k->nx);
	free(k->pv);
	free(k->estamp);
	free(k->vstamp);
	free(k->loc);
	free(k->cedge);
	free(k->cvert);
	free(k->adj);
	free(k->astart);
	free(k->cur);
	free(k->rem);
	free(k->ncol);
	memset(k, 0, sizeof(*k));
}

/* Tail (sending switch) and head (receiving switch) of a directed link. */
static uint32_t dlink_tail(const struct topo *t, uint32_t dl)
{
	const struct topo_link *l = &t->links[dl / 2];

	return t->ports[(dl & 1) ? l->b : l->a].node;
}

static uint32_t dlink_head(const struct topo *t, uint32_t dl)
{
	const struct topo_link *l = &t->links[dl / 2];

	return t->ports[(dl & 1) ? l->a : l->b].node;
}

/* The level-lvl branching of flow f: hop and fan-out (0: none). */
static uint32_t kc_branch(const struct ctl_planner *p, struct ctl_demand *d, struct dag **fg,
			  const uint32_t *fsrc, const uint16_t *ch, uint32_t f, uint32_t lvl,
			  struct ctl_route *r, uint32_t *bh)
{
	uint32_t bn;

	kc_walk(p, fg[f], fsrc[f], &d->flows[f], ch + (size_t)f * MAXH, r, lvl, bh, &bn);
	return bn;
}

static int kc_alloc(struct kc *k, uint32_t ne, uint32_t nv, uint32_t C)
{
	size_t vc = (size_t)nv * C + 1;

	k->col = malloc(sizeof(uint16_t) * (ne + 1));
	k->ncol = malloc(sizeof(uint16_t) * (ne + 1));
	k->cnt = calloc(vc, sizeof(uint32_t));
	k->head = malloc(sizeof(uint32_t) * vc);
	k->nx = malloc(sizeof(uint32_t) * 2 * (ne + 1));
	k->pv = malloc(sizeof(uint32_t) * 2 * (ne + 1));
	k->estamp = calloc(ne + 1, sizeof(uint32_t));
	k->vstamp = calloc(nv + 1, sizeof(uint32_t));
	k->loc = malloc(sizeof(uint32_t) * (nv + 1));
	k->cedge = malloc(sizeof(uint32_t) * (ne + 1));
	k->cvert = malloc(sizeof(uint32_t) * (nv + 1));
	k->adj = malloc(sizeof(uint32_t) * 2 * (ne + 1));
	k->astart = malloc(sizeof(uint32_t) * (nv + 2));
	k->cur = malloc(sizeof(uint32_t) * (nv + 1));
	k->rem = malloc(sizeof(uint32_t) * (nv + 1));
	if (k->col == NULL || k->ncol == NULL || k->cnt == NULL || k->head == NULL ||
	    k->nx == NULL || k->pv == NULL || k->estamp == NULL || k->vstamp == NULL ||
	    k->loc == NULL || k->cedge == NULL || k->cvert == NULL || k->adj == NULL ||
	    k->astart == NULL || k->cur == NULL || k->rem == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < vc; i++)
		k->head[i] = NONE;
	k->C = C;
	k->nv = nv;
	k->ne = ne;
	return 0;
}

/* Colour one level: each movable flow whose lvl-th branching has the most
 * common fan-out C, and whose mirror hop is a down-link, is an edge.
 * *edges: how many. 0 or -ENOMEM. */
static int kc_level(struct ctl_planner *p, struct ctl_demand *d, const bool *movable,
		    struct dag **fg, const uint32_t *fsrc, uint16_t *ch, uint32_t lvl,
		    uint32_t *vmap, uint64_t *chains, uint32_t *edges)
{
	const struct topo *t = p->t;
	uint32_t *hist = calloc(65536, sizeof(uint32_t)), C = 0, nl = 0, nr = 0, ne = 0;
	uint32_t *vnode = NULL;
	struct kc k = {0};
	int ret = -ENOMEM;

	*edges = 0;
	k.eflow = malloc(sizeof(uint32_t) * (d->n + 1));
	k.end = malloc(sizeof(uint32_t) * 2 * (d->n + 1));
	vnode = malloc(sizeof(uint32_t) * 2 * (d->n + 1));
	if (hist == NULL || k.eflow == NULL || k.end == NULL || vnode == NULL)
		goto out;
	for (uint32_t f = 0; f < d->n; f++) {
		struct ctl_route r;
		uint32_t bh, bn;

		if (!movable[f] || fg[f] == NULL)
			continue;
		bn = kc_branch(p, d, fg, fsrc, ch, f, lvl, &r, &bh);
		if (bn >= 2 && bn < 65536)
			hist[bn]++;
	}
	for (uint32_t c = 2; c < 65536; c++)
		if (hist[c] > 0 && (C == 0 || hist[c] >= hist[C]))
			C = c;
	ret = 0;
	if (C == 0)
		goto out;
	for (uint32_t f = 0; f < d->n; f++) {
		struct ctl_route r;
		uint32_t bh, bn, mh, x, y;

		if (!movable[f] || fg[f] == NULL)
			continue;
		bn = kc_branch(p, d, fg, fsrc, ch, f, lvl, &r, &bh);
		if (bn != C)
			continue;
		mh = r.nhops - 1 - bh;
		if (mh <= bh || !(r.dlink[mh] & 1) || (r.dlink[bh] & 1))
			continue;
		x = 2 * dlink_tail(t, r.dlink[bh]);
		y = 2 * dlink_head(t, r.dlink[mh]) + 1;
		if (vmap[x] == NONE) {
			vnode[nl + nr] = x;
			vmap[x] = nl++;
		}
		if (vmap[y] == NONE) {
			vnode[nl + nr] = y;
			vmap[y] = nr++;
		}
		k.eflow[ne] = f;
		k.end[2 * ne] = vmap[x];
		k.end[2 * ne + 1] = vmap[y];
		ne++;
	}
	for (uint32_t i = 0; i < nl + nr; i++)
		vmap[vnode[i]] = NONE;
	*edges = ne;
	if (ne < 2)
		goto out;
	ret = kc_alloc(&k, ne, nl + nr, C);
	if (ret < 0)
		goto out;
	k.nleft = nl;
	/* greedy colours (least used at both ends), then balance */
	for (uint32_t e = 0; e < ne; e++) {
		const uint32_t *cl, *cr;
		uint32_t best = 0;

		k.end[2 * e + 1] += nl;
		cl = k.cnt + (size_t)k.end[2 * e] * C;
		cr = k.cnt + (size_t)k.end[2 * e + 1] * C;
		for (uint32_t c = 1; c < C; c++) {
			uint32_t m = cl[c] > cr[c] ? cl[c] : cr[c];
			uint32_t mb = cl[best] > cr[best] ? cl[best] : cr[best];

			if (m < mb || (m == mb && cl[c] + cr[c] < cl[best] + cr[best]))
				best = c;
		}
		k.col[e] = (uint16_t)best;
		kc_insert(&k, e, 0);
		kc_insert(&k, e, 1);
	}
	kc_balance(&k);
	for (uint32_t e = 0; e < ne; e++)
		ch[(size_t)k.eflow[e] * MAXH + lvl] = k.col[e];
	*chains += k.chains;
out:
	free(hist);
	free(vnode);
	kc_free(&k);
	return ret;
}

/* Routes for the movable flows (all flows movable) from balanced
 * colourings, level by level. 0 or -errno. */
static int kc_plan(struct ctl_planner *p, struct ctl_demand *d, const bool *movable,
		   struct ctl_plan_stats *st)
{
	struct dag **fg = calloc(d->n + 1, sizeof(*fg));
	uint32_t *fsrc = malloc(sizeof(uint32_t) * (d->n + 1));
	uint16_t *ch = calloc((size_t)d->n * MAXH + 1, sizeof(uint16_t));
	uint32_t *vmap = malloc(sizeof(uint32_t) * 2 * (p->t->nnodes + 1));
	uint64_t chains = 0;
	int ret = -ENOMEM;

	if (fg == NULL || fsrc == NULL || ch == NULL || vmap == NULL)
		goto out;
	for (uint32_t i = 0; i < 2 * p->t->nnodes; i++)
		vmap[i] = NONE;
	for (uint32_t f = 0; f < d->n; f++) {
		if (!movable[f])
			continue;
		ret = flow_dag(p, &d->flows[f], &fg[f], &fsrc[f]);
		if (ret < 0)
			goto out;
	}
	for (uint32_t lvl = 0; lvl < MAXH; lvl++) {
		uint32_t edges;

		ret = kc_level(p, d, movable, fg, fsrc, ch, lvl, vmap, &chains, &edges);
		if (ret < 0)
			goto out;
		if (edges == 0)
			break;
	}
	for (uint32_t f = 0; f < d->n; f++) {
		uint32_t bh, bn;

		if (movable[f])
			kc_walk(p, fg[f], fsrc[f], &d->flows[f], ch + (size_t)f * MAXH,
				&d->flows[f].path, MAXH, &bh, &bn);
	}
	st->kempe_chains += chains;
	ret = 0;
out:
	free(fg);
	free(fsrc);
	free(ch);
	free(vmap);
	return ret;
}

/* ---- the planner ------------------------------------------------------------------ */

static int cmp_greedy(const void *a, const void *b, void *arg)
{
	const struct ctl_demand *d = arg;
	const struct ctl_flow *x = &d->flows[*(const uint32_t *)a];
	const struct ctl_flow *y = &d->flows[*(const uint32_t *)b];
	bool ax = x->flags & CTL_FLOW_ANNOUNCED, ay = y->flags & CTL_FLOW_ANNOUNCED;

	if (ax != ay)
		return ax ? -1 : 1;
	if (x->demand != y->demand)
		return x->demand > y->demand ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Greedy placement of the flows with movable[i] (the others' routes are
 * already in p->load). */
static int greedy(struct ctl_planner *p, struct ctl_demand *d, const bool *movable)
{
	uint32_t *ord = malloc(sizeof(uint32_t) * (d->n + 1)), n = 0;
	int ret = 0;

	if (ord == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < d->n; i++)
		if (movable[i])
			ord[n++] = i;
	qsort_r(ord, n, sizeof(uint32_t), cmp_greedy, d);
	for (uint32_t i = 0; i < n; i++) {
		struct ctl_flow *f = &d->flows[ord[i]];
		double mx;

		ret = best_route(p, d, f, &f->path, &mx);
		if (ret < 0)
			break;
		route_add(p, &f->path, flow_bits(d, f));
	}
	free(ord);
	return ret;
}

/* The balanced colouring (kc_plan) and a local search from it, when every
 * flow is movable. *u: the max utilisation it reached (INFINITY: not run). */
static int plan_kempe(struct ctl_planner *p, struct ctl_demand *d, bool *movable,
		      const struct ctl_plan_opts *o, double bound, struct ctl_plan_stats *st,
		      double *u)
{
	double t0 = now_s(), t1;
	int ret;

	*u = INFINITY;
	for (uint32_t i = 0; i < d->n; i++)
		if (!movable[i])
			return 0;
	if (o->no_search || d->n == 0)
		return 0;
	ret = kc_plan(p, d, movable, st);
	if (ret < 0)
		return ret;
	*u = loads_of(p, d, 0);
	st->kempe_util = *u;
	t1 = now_s();
	st->greedy_s += t1 - t0;
	if (*u > bound * (1 + 1e-9)) {
		ret = local_search(p, d, movable, o->search_budget_s, bound, st);
		*u = loads_of(p, d, 0);
	}
	st->search_s += now_s() - t1;
	return ret;
}

/* Plan the movable flows from scratch given the fixed ones; loads left in
 * p->load. With every flow movable: the balanced colouring first; when it
 * is not at the bound, the greedy plan too, and the better one. */
static int plan_from(struct ctl_planner *p, struct ctl_demand *d, bool *movable,
		     const struct ctl_plan_opts *o, double bound, struct ctl_plan_stats *st)
{
	double t0 = now_s(), t1, kc_u, budget = o->search_budget_s;
	struct ctl_route *kc = NULL;
	bool search = !o->no_search;
	int ret;

	ret = plan_kempe(p, d, movable, o, bound, st, &kc_u);
	if (ret < 0)
		return ret;
	if (kc_u <= bound * (1 + 1e-9))
		return 0;
	if (kc_u < INFINITY) {
		kc = malloc(sizeof(*kc) * (d->n + 1));
		if (kc == NULL)
			return -ENOMEM;
		for (uint32_t i = 0; i < d->n; i++)
			kc[i] = d->flows[i].path;
		if (budget > 0) {
			budget -= now_s() - t0;
			search = budget > 0;
		}
		t0 = now_s();
	}
	memset(p->load, 0, sizeof(double) * 2 * p->t->nlinks);
	for (uint32_t i = 0; i < d->n; i++) {
		if (movable[i])
			d->flows[i].path.idx = -1;
		else
			route_add(p, &d->flows[i].path, flow_bits(d, &d->flows[i]));
	}
	ret = greedy(p, d, movable);
	t1 = now_s();
	st->greedy_s += t1 - t0;
	if (ret == 0 && search)
		ret = local_search(p, d, movable, budget, bound, st);
	st->search_s += now_s() - t1;
	if (ret == 0 && kc != NULL && loads_of(p, d, 0) > kc_u) {
		for (uint32_t i = 0; i < d->n; i++)
			d->flows[i].path = kc[i];
		loads_of(p, d, 0);
	}
	free(kc);
	return ret;
}

static void flow_tuple(const struct topo *t, const struct ctl_flow *f, uint16_t sport,
		       struct topo_5tuple *x);

/* Never worse than plain ECMP: when the ECMP routes (default source ports)
 * beat the plan, search on from them instead. */
static int ecmp_start(struct ctl_planner *p, struct ctl_demand *d, bool *movable,
		      const struct ctl_plan_opts *o, double bound, struct ctl_plan_stats *st)
{
	struct ctl_route *mine = malloc(sizeof(*mine) * (d->n + 1));
	double planned = loads_of(p, d, 0), ecmp;
	int ret = 0;

	if (mine == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < d->n && ret == 0; i++) {
		struct ctl_flow *f = &d->flows[i];

		mine[i] = f->path;
		ret = ctl_route_of_sport(p, f, ctl_sport_default(f->lqpn, f->rqpn), &f->path);
	}
	if (ret < 0)
		goto out;
	ecmp = loads_of(p, d, 0);
	if (ecmp < planned - EPS * planned) {
		if (!o->no_search)
			ret = local_search(p, d, movable, o->search_budget_s, bound, st);
		if (ret == 0 && loads_of(p, d, 0) <= planned)
			goto out; /* keep the ECMP-started routes */
	}
	for (uint32_t i = 0; i < d->n; i++)
		d->flows[i].path = mine[i];
out:
	free(mine);
	return ret;
}

int ctl_plan_paths(struct ctl_planner *p, struct ctl_demand *d, const struct ctl_plan_opts *o,
		   struct ctl_plan_stats *st)
{
	struct ctl_plan_opts def;
	struct ctl_plan_stats tmp;
	struct ctl_route *old = NULL;
	bool *movable;
	double t0 = now_s(), bound;
	int ret = 0;

	if (o == NULL) {
		ctl_plan_opts_default(&def);
		o = &def;
	}
	if (st == NULL)
		st = &tmp;
	memset(st, 0, sizeof(*st));
	movable = malloc(sizeof(bool) * (d->n + 1));
	if (movable == NULL)
		return -ENOMEM;
	/* validate, and rebuild the links of routes given by index */
	for (uint32_t i = 0; i < d->n && ret == 0; i++) {
		struct ctl_flow *f = &d->flows[i];
		uint32_t src;
		struct dag *g;

		ret = flow_dag(p, f, &g, &src);
		if (ret == 0 && o->mode != CTL_PLAN_FRESH && f->path.idx >= 0)
			ret = route_by_index(p, f, f->path.idx, &f->path);
	}
	if (ret < 0)
		goto out;
	bound = ctl_bound(p, d);
	st->bound = bound;
	if (o->mode == CTL_PLAN_FRESH) {
		for (uint32_t i = 0; i < d->n; i++)
			movable[i] = true;
		ret = plan_from(p, d, movable, o, bound, st);
		if (ret == 0)
			ret = ecmp_start(p, d, movable, o, bound, st);
	} else if (o->mode == CTL_PLAN_INCREMENTAL) {
		for (uint32_t i = 0; i < d->n; i++)
			movable[i] = d->flows[i].path.idx < 0;
		ret = plan_from(p, d, movable, o, bound, st);
	} else {
		/* REOPT: place unrouted flows first, then move only for a real gain */
		double before, after;
		uint32_t moved = 0;

		for (uint32_t i = 0; i < d->n; i++)
			movable[i] = d->flows[i].path.idx < 0;
		ret = plan_from(p, d, movable, &(struct ctl_plan_opts){.no_search = true}, bound,
				st);
		old = malloc(sizeof(*old) * (d->n + 1));
		if (ret < 0 || old == NULL) {
			ret = ret < 0 ? ret : -ENOMEM;
			goto out;
		}
		before = loads_of(p, d, 0);
		st->start_util = before;
		for (uint32_t i = 0; i < d->n; i++) {
			old[i] = d->flows[i].path;
			movable[i] = !(d->flows[i].flags & CTL_FLOW_FIXED);
		}
		/* first from the current routes (fewest moves), then from scratch */
		ret = local_search(p, d, movable, o->search_budget_s, bound, st);
		after = loads_of(p, d, 0);
		if (ret == 0 && after > before * (1 - o->hysteresis)) {
			ret = plan_from(p, d, movable, o, bound, st);
			if (ret == 0 && loads_of(p, d, 0) > before * (1 - o->hysteresis))
				for (uint32_t i = 0; i < d->n; i++)
					d->flows[i].path = old[i]; /* not worth moving */
		}
		for (uint32_t i = 0; i < d->n; i++)
			if (d->flows[i].path.idx != old[i].idx)
				moved++;
		st->moved = moved;
	}
	if (ret == 0)
		st->max_util = loads_of(p, d, 0);
out:
	st->total_s = now_s() - t0;
	free(old);
	free(movable);
	return ret;
}

/* ---- ECMP and source ports -------------------------------------------------------- */

static void flow_tuple(const struct topo *t, const struct ctl_flow *f, uint16_t sport,
		       struct topo_5tuple *x)
{
	memset(x, 0, sizeof(*x));
	x->saddr = t->ports[f->src_port].addr.s_addr;
	x->daddr = t->ports[f->dst_port].addr.s_addr;
	x->proto = IPPROTO_UDP;
	x->sport = htons(sport);
	x->dport = htons(ROCE_PORT);
}

int ctl_route_of_sport(struct ctl_planner *p, const struct ctl_flow *f, uint16_t sport,
		       struct ctl_route *out)
{
	const struct topo *t = p->t;
	struct topo_5tuple x;
	uint32_t src, dn, h = 0, idx = 0;
	struct dag *g;
	int ret = flow_dag(p, f, &g, &src);

	if (ret < 0)
		return ret;
	flow_tuple(t, f, sport, &x);
	out->dlink[h++] = dlink_of(t, f->src_port);
	for (dn = src; h < MAXH;) {
		const struct dag_node *n = &g->nodes[dn];
		const struct dag_nh *nh;

		if (n->n == 0) {
			out->dlink[h++] = dlink_of(t, t->ports[f->dst_port].peer);
			break;
		}
		nh = &g->nh[n->first + topo_hash_pick(&t->nodes[n->node].hash, &x, n->n)];
		out->dlink[h++] = dlink_of(t, nh->eg);
		idx += nh->off;
		dn = nh->child;
	}
	out->nhops = h;
	out->idx = (int32_t)idx;
	return 0;
}

int ctl_route_name(const struct ctl_planner *p, const struct ctl_route *r, char *buf, size_t len)
{
	const struct topo *t = p->t;
	size_t at = 0;

	if (len == 0 || r->idx < 0 || r->nhops < 2)
		return -EINVAL;
	buf[0] = '\0';
	for (uint32_t h = 1; h < r->nhops; h++) {
		uint32_t l = r->dlink[h] / 2;
		uint32_t eg = r->dlink[h] % 2 ? t->links[l].b : t->links[l].a;
		int n = snprintf(buf + at, len - at, "%s%s", h > 1 ? ">" : "",
				 t->nodes[t->ports[eg].node].name);

		if (n < 0 || (size_t)n >= len - at)
			return -ENAMETOOLONG;
		at += (size_t)n;
	}
	return 0;
}

int ctl_route_by_name(struct ctl_planner *p, const struct ctl_flow *f, const char *hops,
		      struct ctl_route *out)
{
	const struct topo *t = p->t;
	char buf[256], *save = NULL, *tok;
	uint32_t src, dn, h = 0, idx = 0;
	struct dag *g;
	int ret = flow_dag(p, f, &g, &src);

	if (ret < 0)
		return ret;
	if (snprintf(buf, sizeof(buf), "%s", hops) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	tok = strtok_r(buf, ">", &save);
	if (tok == NULL || strcmp(tok, t->nodes[g->nodes[src].node].name) != 0)
		return -ENOENT;
	out->dlink[h++] = dlink_of(t, f->src_port);
	for (dn = src; h < MAXH;) {
		const struct dag_node *n = &g->nodes[dn];
		const struct dag_nh *nh = NULL;

		tok = strtok_r(NULL, ">", &save);
		if (n->n == 0) {
			if (tok != NULL)
				return -ENOENT; /* longer than any equal-cost route */
			out->dlink[h++] = dlink_of(t, t->ports[f->dst_port].peer);
			break;
		}
		for (uint32_t i = 0; tok != NULL && i < n->n; i++) {
			const struct dag_nh *c = &g->nh[n->first + i];

			if (c->child < TERM &&
			    strcmp(t->nodes[g->nodes[c->child].node].name, tok) == 0) {
				nh = c;
				break;
			}
		}
		if (nh == NULL)
			return -ENOENT;
		out->dlink[h++] = dlink_of(t, nh->eg);
		idx += nh->off;
		dn = nh->child;
	}
	out->nhops = h;
	out->idx = (int32_t)idx;
	return 0;
}

int ctl_plan_ecmp(struct ctl_planner *p, struct ctl_demand *d)
{
	for (size_t i = 0; i < d->n; i++) {
		struct ctl_flow *f = &d->flows[i];
		int ret = ctl_route_of_sport(p, f, ctl_sport_default(f->lqpn, f->rqpn), &f->ecmp);

		if (ret < 0)
			return ret;
	}
	return 0;
}

static int cmp_pair(const void *a, const void *b, void *arg)
{
	const struct ctl_demand *d = arg;
	const struct ctl_flow *x = &d->flows[*(const uint32_t *)a];
	const struct ctl_flow *y = &d->flows[*(const uint32_t *)b];

	if (x->src_port != y->src_port)
		return x->src_port < y->src_port ? -1 : 1;
	if (x->dst_port != y->dst_port)
		return x->dst_port < y->dst_port ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static uint32_t mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352d;
	x ^= x >> 15;
	x *= 0x846ca68b;
	x ^= x >> 16;
	return x;
}

/*
 * Source ports of one NIC pair, from the flow's DAG (cached per destination
 * switch, so no per-pair work over the whole fabric): every hash model is
 * affine in the key bits (topo_port_map()), so at a branching switch
 * hash(port) = base ^ hi[port >> 8] ^ lo[port & 0xff], tables built on the
 * first visit. Ports are looked up lazily, from a per-pair start, until the
 * nth that takes the flow's path.
 */
struct sp_tab {
	struct topo_hash_cfg cfg; /* switches with the same model share tables */
	uint32_t base;
	uint32_t hi[256], lo[256];
};

struct sp_map {
	const struct ctl_planner *p;
	const struct dag *g;
	uint32_t src;
	struct topo_5tuple x;
	uint32_t *slot; /* [g->nnodes] table of a dag node, or NONE */
	struct sp_tab *tab;
	uint32_t ntab, captab;
	int32_t *idx; /* [TOPO_SPORT_COUNT] path index, -2 not yet known */
};

static const struct sp_tab *sp_table(struct sp_map *m, uint32_t dn)
{
	const struct topo_hash_cfg *c = &m->p->t->nodes[m->g->nodes[dn].node].hash;
	struct topo_5tuple x = m->x;
	struct sp_tab *e;
	uint32_t bit[16];

	if (m->slot[dn] != NONE)
		return &m->tab[m->slot[dn]];
	for (uint32_t i = 0; i < m->ntab; i++)
		if (m->tab[i].cfg.alg == c->alg && m->tab[i].cfg.seed == c->seed &&
		    m->tab[i].cfg.fields == c->fields) {
			m->slot[dn] = i;
			return &m->tab[i];
		}
	if (m->ntab == m->captab) {
		uint32_t cap = m->captab ? 2 * m->captab : 8;
		struct sp_tab *nt = realloc(m->tab, cap * sizeof(*nt));

		if (nt == NULL)
			return NULL;
		m->tab = nt;
		m->captab = cap;
	}
	m->slot[dn] = m->ntab;
	e = &m->tab[m->ntab++];
	e->cfg = *c;
	x.sport = 0;
	e->base = topo_hash(c, &x);
	for (int i = 0; i < 16; i++) {
		x.sport = htons((uint16_t)(1u << i));
		bit[i] = topo_hash(c, &x) ^ e->base;
	}
	e->hi[0] = e->lo[0] = 0;
	for (uint32_t v = 1; v < 256; v++) {
		uint32_t low = (uint32_t)__builtin_ctz(v);

		e->lo[v] = e->lo[v & (v - 1)] ^ bit[low];
		e->hi[v] = e->hi[v & (v - 1)] ^ bit[low + 8];
	}
	return e;
}

/* Path index of source port TOPO_SPORT_BASE + i; -errno. */
static int32_t sp_index(struct sp_map *m, uint32_t i)
{
	uint32_t s = TOPO_SPORT_BASE + i, dn = m->src, idx = 0;

	if (m->idx[i] != -2)
		return m->idx[i];
	for (uint32_t h = 0; h < MAXH; h++) {
		const struct dag_node *n = &m->g->nodes[dn];
		const struct dag_nh *nh;
		uint32_t j = 0;

		if (n->n == 0) {
			m->idx[i] = (int32_t)idx;
			return m->idx[i];
		}
		if (n->n > 1) {
			const struct sp_tab *e = sp_table(m, dn);

			if (e == NULL)
				return -ENOMEM;
			j = (e->base ^ e->hi[s >> 8] ^ e->lo[s & 0xff]) % n->n;
		}
		nh = &m->g->nh[n->first + j];
		idx += nh->off;
		dn = nh->child;
	}
	return -ELOOP;
}

/* Set up m for f's pair. 0 or -errno. */
static int sp_map_init(struct sp_map *m, struct ctl_planner *p, const struct ctl_flow *f)
{
	struct dag *g;
	int ret = flow_dag(p, f, &g, &m->src);

	if (ret < 0)
		return ret;
	m->p = p;
	m->g = g;
	flow_tuple(p->t, f, 0, &m->x);
	free(m->slot);
	m->slot = malloc(sizeof(uint32_t) * (g->nnodes + 1));
	if (m->slot == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < g->nnodes; i++)
		m->slot[i] = NONE;
	m->ntab = 0;
	for (uint32_t i = 0; i < TOPO_SPORT_COUNT; i++)
		m->idx[i] = -2;
	return 0;
}

/* The nth port (from a per-pair start) that takes f's path, or the first
 * when there are fewer. 0, -ENOENT (no port takes it), -errno. */
static int pick_sport(struct sp_map *m, const struct ctl_flow *f, uint32_t nth, uint16_t *out)
{
	uint32_t start = mix32(f->src_port * 0x9e3779b1u ^ f->dst_port) % TOPO_SPORT_COUNT;
	uint32_t seen = 0, first = NONE;

	for (uint32_t k = 0; k < TOPO_SPORT_COUNT; k++) {
		uint32_t i = (start + k) % TOPO_SPORT_COUNT;
		int32_t idx = sp_index(m, i);

		if (idx < 0 && idx != -2)
			return idx;
		if (idx != f->path.idx)
			continue;
		if (first == NONE)
			first = i;
		if (seen++ == nth) {
			*out = (uint16_t)(TOPO_SPORT_BASE + i);
			return 0;
		}
	}
	if (first == NONE)
		return -ENOENT;
	*out = (uint16_t)(TOPO_SPORT_BASE + first); /* fewer ports than flows: reuse */
	return 0;
}

int ctl_plan_sports(struct ctl_planner *p, struct ctl_demand *d)
{
	uint32_t *ord = malloc(sizeof(uint32_t) * (d->n + 1));
	struct sp_map m = {.idx = malloc(sizeof(int32_t) * TOPO_SPORT_COUNT)};
	int ret = 0;

	if (ord == NULL || m.idx == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < d->n; i++)
		ord[i] = i;
	qsort_r(ord, d->n, sizeof(uint32_t), cmp_pair, d);
	for (uint32_t i = 0; i < d->n && ret == 0;) {
		const struct ctl_flow *f0 = &d->flows[ord[i]];
		uint32_t j = i;
		bool need_map = false;

		while (j < d->n && d->flows[ord[j]].src_port == f0->src_port &&
		       d->flows[ord[j]].dst_port == f0->dst_port) {
			if (d->flows[ord[j]].path.idx >= 0)
				need_map = true;
			j++;
		}
		if (need_map)
			ret = sp_map_init(&m, p, f0);
		for (uint32_t k = i; k < j && ret == 0; k++) {
			struct ctl_flow *f = &d->flows[ord[k]];
			uint32_t nth = 0;
			struct ctl_route r;

			if (f->path.idx < 0)
				continue;
			if (f->cur_sport >= TOPO_SPORT_BASE &&
			    ctl_route_of_sport(p, f, f->cur_sport, &r) == 0 &&
			    r.idx == f->path.idx) {
				f->sport = f->cur_sport;
				continue;
			}
			/* the nth flow of this pair on this path gets the nth port */
			for (uint32_t m2 = i; m2 < k; m2++)
				if (d->flows[ord[m2]].path.idx == f->path.idx)
					nth++;
			ret = pick_sport(&m, f, nth, &f->sport);
		}
		i = j;
	}
out:
	free(m.slot);
	free(m.tab);
	free(m.idx);
	free(ord);
	return ret;
}

/* ---- rates: max-min fair water-filling -------------------------------------------- */

struct wf_ent {
	double level;
	uint32_t id; /* directed link, or WF_FLOW | flow (its demand cap) */
};

#define WF_FLOW 0x80000000u

static void wf_push(struct wf_ent *h, size_t *n, struct wf_ent e)
{
	size_t i = (*n)++;

	while (i > 0 && h[(i - 1) / 2].level > e.level) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = e;
}

static struct wf_ent wf_pop(struct wf_ent *h, size_t *n)
{
	struct wf_ent top = h[0], e = h[--*n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1].level < h[c].level)
			c++;
		if (h[c].level >= e.level)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n > 0)
		h[i] = e;
	return top;
}

/*
 * Progressive filling with events: every unfrozen flow grows at the same
 * pace (the "level"); a link with rem capacity left and cnt unfrozen flows
 * saturates at level_at + rem / cnt. The lowest such event freezes its
 * flows at that level; their other links are brought up to date and
 * re-queued (stale heap entries are skipped by comparing levels).
 */
static int water_fill(struct ctl_planner *p, struct ctl_demand *d, int which, double scale,
		      bool start)
{
	const struct topo *t = p->t;
	uint32_t nd = 2 * t->nlinks, *cnt = calloc(nd + 1, sizeof(uint32_t));
	uint32_t *first = calloc(nd + 2, sizeof(uint32_t)), *fl = NULL;
	double *rem = malloc(sizeof(double) * (nd + 1)), *at = calloc(nd + 1, sizeof(double));
	double *rate = malloc(sizeof(double) * (d->n + 1));
	bool *frozen = calloc(d->n + 1, sizeof(bool));
	struct wf_ent *heap = NULL;
	size_t nheap = 0, total = 0;
	int ret = 0;

	if (cnt == NULL || first == NULL || rem == NULL || at == NULL || rate == NULL ||
	    frozen == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < d->n; i++) {
		const struct ctl_route *r = which ? &d->flows[i].ecmp : &d->flows[i].path;

		rate[i] = 0;
		for (uint32_t h = 0; h < r->nhops; h++)
			cnt[r->dlink[h]]++;
		total += r->nhops;
		frozen[i] = r->nhops == 0;
	}
	fl = malloc(sizeof(uint32_t) * (total + 1));
	heap = malloc(sizeof(*heap) * (2 * total + d->n + nd + 1));
	if (fl == NULL || heap == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t l = 0; l < nd; l++)
		first[l + 1] = first[l] + cnt[l];
	for (uint32_t l = 0; l < nd; l++)
		cnt[l] = 0;
	for (uint32_t i = 0; i < d->n; i++) {
		const struct ctl_route *r = which ? &d->flows[i].ecmp : &d->flows[i].path;

		for (uint32_t h = 0; h < r->nhops; h++) {
			uint32_t l = r->dlink[h];

			fl[first[l] + cnt[l]++] = i;
		}
		if (d->unit == CTL_UNIT_BPS && r->nhops > 0)
			wf_push(heap, &nheap,
				(struct wf_ent){.level = (double)d->flows[i].demand,
						.id = WF_FLOW | i});
	}
	for (uint32_t l = 0; l < nd; l++) {
		rem[l] = p->cap[l] * scale;
		if (cnt[l] > 0)
			wf_push(heap, &nheap, (struct wf_ent){.level = rem[l] / cnt[l], .id = l});
	}
	while (nheap > 0) {
		struct wf_ent e = wf_pop(heap, &nheap);
		uint32_t lo, hi;

		if (e.id & WF_FLOW) {
			lo = e.id & ~WF_FLOW;
			hi = lo + 1;
		} else {
			uint32_t l = e.id;

			if (cnt[l] == 0 || e.level != at[l] + rem[l] / cnt[l])
				continue; /* stale */
			lo = first[l];
			hi = first[l + 1];
		}
		for (uint32_t k = lo; k < hi; k++) {
			uint32_t f = (e.id & WF_FLOW) ? lo : fl[k];
			const struct ctl_route *r = which ? &d->flows[f].ecmp : &d->flows[f].path;

			if (frozen[f])
				continue;
			frozen[f] = true;
			rate[f] = e.level;
			for (uint32_t h = 0; h < r->nhops; h++) {
				uint32_t l = r->dlink[h];

				rem[l] -= (e.level - at[l]) * cnt[l];
				if (rem[l] < 0)
					rem[l] = 0;
				at[l] = e.level;
				cnt[l]--;
				if (cnt[l] > 0)
					wf_push(heap, &nheap,
						(struct wf_ent){.level = at[l] + rem[l] / cnt[l],
								.id = l});
			}
		}
	}
	for (uint32_t i = 0; i < d->n; i++) {
		if (start)
			d->flows[i].start_bps = rate[i];
		else
			d->flows[i].target_bps = rate[i];
	}
out:
	free(cnt);
	free(first);
	free(fl);
	free(rem);
	free(at);
	free(rate);
	free(frozen);
	free(heap);
	return ret;
}

int ctl_plan_rates(struct ctl_planner *p, struct ctl_demand *d, int which, double headroom)
{
	int ret;

	if (!(headroom > 0 && headroom <= 1))
		return -EINVAL;
	ret = water_fill(p, d, which, headroom, true);
	if (ret == 0)
		ret = water_fill(p, d, which, 1.0, false);
	return ret;
}
