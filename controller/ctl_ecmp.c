// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_ecmp.c: the switches' hash models on the planner's DAGs, as the
 * planner's own port -> path provider (ctl_pathmap_model): the route a
 * source port takes, and source ports that take the planned routes; the
 * provider-generic entry points, and the plain-ECMP baseline (default
 * source ports) over any provider.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "ctl_path_internal.h"

/* ---- ECMP and source ports -------------------------------------------------------- */

static void flow_tuple(const struct topo *t, const struct ctl_flow *f, uint16_t sport,
		       struct topo_5tuple *x)
{
	memset(x, 0, sizeof(*x));
	x->saddr = t->ports[f->src_port].addr.s_addr;
	x->daddr = t->ports[f->dst_port].addr.s_addr;
	x->proto = IPPROTO_UDP;
	x->sport = htons(sport);
	x->dport = htons(ICE_ROCE_UDP_PORT);
}

struct hash_walk {
	const struct topo *t;
	struct topo_5tuple x;
};

/* The next hop the switch's hash model picks for the flow's 5-tuple. */
static int pick_by_hash(void *arg, const struct dag *g, const struct dag_node *n)
{
	const struct hash_walk *w = arg;

	if (n->n == 0)
		return 0;
	return (int)topo_hash_pick(&w->t->nodes[n->node].hash, &w->x, n->n);
}

int ctl_model_route(struct ctl_planner *p, const struct ctl_flow *f, uint16_t sport,
		    struct ctl_route *out)
{
	struct hash_walk w = {.t = p->t};
	uint32_t src;
	struct dag *g;
	int ret = ctl_flow_dag(p, f, &g, &src);

	if (ret < 0)
		return ret;
	flow_tuple(w.t, f, sport, &w.x);
	return ctl_route_walk(p, f, g, src, pick_by_hash, &w, out);
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
		struct dag_nh nh;
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
		nh = dag_nh_at(m->p, m->g, n, j);
		idx += nh.off;
		dn = nh.child;
	}
	return -ELOOP;
}

/* Set up m for f's pair. 0 or -errno. */
static int sp_map_init(struct sp_map *m, struct ctl_planner *p, const struct ctl_flow *f)
{
	struct dag *g;
	int ret = ctl_flow_dag(p, f, &g, &m->src);

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

static int model_sports(struct ctl_pathmap *pm, struct ctl_demand *d)
{
	struct ctl_planner *p = pm->p;
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
			    ctl_model_route(p, f, f->cur_sport, &r) == 0 && r.idx == f->path.idx) {
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

static int model_route_of(struct ctl_pathmap *pm, const struct ctl_flow *f, uint16_t sport,
			  struct ctl_route *out)
{
	return ctl_model_route(pm->p, f, sport, out);
}

const struct ctl_pathmap_ops ctl_model_ops = {
	.name = "model",
	.route_of = model_route_of,
	.sports = model_sports,
};

/* ---- port -> path providers -------------------------------------------------------- */

struct ctl_pathmap *ctl_pathmap_model(struct ctl_planner *p)
{
	return &p->model;
}

int ctl_route_of_sport(struct ctl_pathmap *m, const struct ctl_flow *f, uint16_t sport,
		       struct ctl_route *out)
{
	return m->ops->route_of(m, f, sport, out);
}

int ctl_plan_sports(struct ctl_pathmap *m, struct ctl_demand *d)
{
	m->unsteered = 0;
	return m->ops->sports(m, d);
}

int ctl_plan_ecmp(struct ctl_pathmap *m, struct ctl_demand *d)
{
	for (size_t i = 0; i < d->n; i++) {
		struct ctl_flow *f = &d->flows[i];
		uint16_t sport = ice_roce_sport_default(f->lqpn, f->rqpn);
		struct ctl_route r;
		int ret = m->ops->route_of(m, f, sport, &r);

		if (ret < 0 && m->ops != &ctl_model_ops)
			ret = ctl_model_route(m->p, f, sport, &r); /* the provider does not know */
		if (ret < 0)
			return ret;
		f->ecmp = r;
	}
	return 0;
}
