// SPDX-License-Identifier: Apache-2.0
/*
 * topo_path.c: routing over the switch graph, equal-cost path enumeration,
 * hash-model path prediction and the source-port map.
 *
 * Routing is shortest path over switches (hosts never forward), toward the
 * switch the destination NIC hangs off. Links join adjacent tiers only
 * (topo_validate), so in leaf-spine, fat-tree and rail layouts every
 * shortest path is an up-down (valley-free) path, which is what both static
 * ECMP routes and RFC 7938 eBGP install.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ice_roce.h"
#include "topo_internal.h"

/* topo_route_dist(), not crossing the links marked in down (NULL: none). */
static void route_dist(const struct topo *t, uint32_t dst_sw, const bool *down, uint32_t *dist,
		       uint32_t *queue)
{
	uint32_t head = 0, tail = 0;

	for (uint32_t i = 0; i < t->nnodes; i++)
		dist[i] = UINT32_MAX;
	if (dst_sw >= t->nnodes || t->nodes[dst_sw].kind != TOPO_SWITCH)
		return;
	dist[dst_sw] = 0;
	queue[tail++] = dst_sw;
	while (head < tail) {
		const struct topo_node *n = &t->nodes[queue[head++]];

		for (uint32_t i = 0; i < n->nports; i++) {
			uint32_t peer = topo_port_peer_node(t, n->ports[i]);

			if (t->nodes[peer].kind != TOPO_SWITCH || dist[peer] != UINT32_MAX ||
			    (down != NULL && down[t->ports[n->ports[i]].link]))
				continue;
			dist[peer] = dist[n->id] + 1;
			queue[tail++] = peer;
		}
	}
}

void topo_route_dist(const struct topo *t, uint32_t dst_sw, uint32_t *dist, uint32_t *queue)
{
	route_dist(t, dst_sw, NULL, dist, queue);
}

int topo_route_nexthops(const struct topo *t, const uint32_t *dist, uint32_t node,
			uint32_t dst_port, uint32_t *out, int max)
{
	const struct topo_node *n = &t->nodes[node];
	int cnt = 0;

	if (node == topo_port_peer_node(t, dst_port)) {
		if (max > 0)
			out[0] = t->ports[dst_port].peer;
		return 1;
	}
	if (dist[node] == UINT32_MAX)
		return 0;
	for (uint32_t i = 0; i < n->nports; i++) {
		uint32_t peer = topo_port_peer_node(t, n->ports[i]);

		if (t->nodes[peer].kind != TOPO_SWITCH || dist[peer] + 1 != dist[node])
			continue;
		if (cnt < max)
			out[cnt] = n->ports[i];
		cnt++;
	}
	return cnt;
}

static bool is_nic(const struct topo *t, uint32_t port)
{
	return port < t->nports && t->nodes[t->ports[port].node].kind == TOPO_HOST;
}

/* dist toward dst_port's switch; NULL + errno. Caller frees. */
static uint32_t *dist_to(const struct topo *t, uint32_t dst_port)
{
	uint32_t *dist = malloc(sizeof(*dist) * 2 * (t->nnodes + 1));

	if (dist == NULL)
		return NULL;
	topo_route_dist(t, topo_port_peer_node(t, dst_port), dist, dist + t->nnodes + 1);
	return dist;
}

int topo_nexthops(const struct topo *t, uint32_t node, uint32_t dst_port, uint32_t *out, int max)
{
	uint32_t *dist;
	int n;

	if (node >= t->nnodes || t->nodes[node].kind != TOPO_SWITCH || !is_nic(t, dst_port))
		return -EINVAL;
	dist = dist_to(t, dst_port);
	if (dist == NULL)
		return -ENOMEM;
	n = topo_route_nexthops(t, dist, node, dst_port, out, max);
	free(dist);
	return n;
}

int topo_nexthops_down(const struct topo *t, uint32_t node, uint32_t dst_port, const bool *down,
		       uint32_t *out, int max, uint32_t *mask)
{
	uint32_t *dist, *live = NULL;
	int n;

	if (node >= t->nnodes || t->nodes[node].kind != TOPO_SWITCH || !is_nic(t, dst_port))
		return -EINVAL;
	dist = dist_to(t, dst_port);
	if (down != NULL)
		live = malloc(sizeof(*live) * 2 * (t->nnodes + 1));
	if (dist == NULL || (down != NULL && live == NULL)) {
		free(dist);
		free(live);
		return -ENOMEM;
	}
	n = topo_route_nexthops(t, dist, node, dst_port, out, max);
	*mask = 0;
	if (down != NULL)
		route_dist(t, topo_port_peer_node(t, dst_port), down, live, live + t->nnodes + 1);
	for (int j = 0; down != NULL && j < n && j < max && j < 32; j++) {
		const struct topo_port *e = &t->ports[out[j]];
		uint32_t peer = topo_port_peer_node(t, out[j]);

		if (down[e->link] || (node != topo_port_peer_node(t, dst_port) &&
				      (live[peer] == UINT32_MAX || live[peer] + 1 != dist[node])))
			*mask |= 1u << j;
	}
	free(dist);
	free(live);
	return n;
}

struct path_walk {
	const struct topo *t;
	const uint32_t *dist;
	uint32_t dst_port;
	struct topo_path cur;
	struct topo_path *out;
	int max, count;
};

static void paths_from(struct path_walk *w, uint32_t node)
{
	uint32_t nh[256];
	int n = topo_route_nexthops(w->t, w->dist, node, w->dst_port, nh, 256);
	uint32_t h = w->cur.nhops;

	if (n > 256)
		n = 256;
	for (int i = 0; i < n; i++) {
		uint32_t eg = nh[i];

		w->cur.link[h] = w->t->ports[eg].link;
		w->cur.egress[h] = eg;
		w->cur.nhops = h + 1;
		if (node == topo_port_peer_node(w->t, w->dst_port)) {
			if (w->count < w->max)
				w->out[w->count] = w->cur;
			w->count++;
		} else if (h + 1 < TOPO_PATH_MAX_HOPS) {
			paths_from(w, topo_port_peer_node(w->t, eg));
		}
	}
	w->cur.nhops = h;
}

int topo_paths(const struct topo *t, uint32_t src_port, uint32_t dst_port, struct topo_path *out,
	       int max)
{
	struct path_walk w = {.t = t, .dst_port = dst_port, .out = out, .max = max};
	uint32_t *dist, src_sw;

	if (!is_nic(t, src_port) || !is_nic(t, dst_port) || src_port == dst_port)
		return -EINVAL;
	dist = dist_to(t, dst_port);
	if (dist == NULL)
		return -ENOMEM;
	src_sw = topo_port_peer_node(t, src_port);
	if (dist[src_sw] != UINT32_MAX && dist[src_sw] + 2 <= TOPO_PATH_MAX_HOPS) {
		w.dist = dist;
		w.cur.nhops = 1;
		w.cur.link[0] = t->ports[src_port].link;
		w.cur.egress[0] = src_port;
		paths_from(&w, src_sw);
	}
	free(dist);
	return w.count;
}

int topo_predict(const struct topo *t, uint32_t src_port, uint32_t dst_port,
		 const struct topo_5tuple *tuple, struct topo_path *out)
{
	uint32_t *dist, node, nh[256];
	int ret = -EINVAL;

	if (!is_nic(t, src_port) || !is_nic(t, dst_port) || src_port == dst_port)
		return -EINVAL;
	dist = dist_to(t, dst_port);
	if (dist == NULL)
		return -ENOMEM;
	memset(out, 0, sizeof(*out));
	out->nhops = 1;
	out->link[0] = t->ports[src_port].link;
	out->egress[0] = src_port;
	node = topo_port_peer_node(t, src_port);
	while (out->nhops < TOPO_PATH_MAX_HOPS) {
		int n = topo_route_nexthops(t, dist, node, dst_port, nh, 256);
		uint32_t pick;

		if (n <= 0)
			goto out;
		if (n > 256)
			n = 256;
		pick = topo_hash_pick(&t->nodes[node].hash, tuple, (uint32_t)n);
		out->link[out->nhops] = t->ports[nh[pick]].link;
		out->egress[out->nhops] = nh[pick];
		out->nhops++;
		if (node == topo_port_peer_node(t, dst_port)) {
			ret = 0;
			goto out;
		}
		node = topo_port_peer_node(t, nh[pick]);
	}
out:
	free(dist);
	return ret;
}

/* ---- source-port map ------------------------------------------------------- */

/*
 * The switches the pair's paths cross form a DAG (each switch's next hops
 * toward the destination). Path indices are lexicographic by egress port, so
 * a path's index is the sum, along its hops, of the numbers of paths under
 * the earlier siblings of each chosen next hop. Every hash model is affine
 * in the key bits, and only the source port varies, so at each hashing
 * switch hash(port) = base ^ hi[port >> 8] ^ lo[port & 0xff], two 256-entry
 * tables from 16 evaluations. The per-port walk is then a few lookups.
 */
#define PM_TERMINAL UINT32_MAX

struct pm_node {
	uint32_t n;	 /* next hops */
	uint32_t *child; /* DAG index of each next hop's switch, or PM_TERMINAL */
	uint32_t *off;	 /* path index offset of each next hop */
	uint32_t paths;	 /* paths from here to the destination */
	uint32_t base;
	uint64_t mod_m; /* Lemire's fastmod constant for n */
	uint32_t *hi;	/* [256] then lo[256]; only when n > 1 */
};

struct pm {
	const struct topo *t;
	const uint32_t *dist;
	uint32_t dst_port;
	struct topo_5tuple tuple; /* sport 0 */
	uint32_t *idx;		  /* node id -> DAG index */
	struct pm_node *nodes;
	uint32_t nnodes;
};

static int pm_tables(struct pm_node *e, const struct topo_hash_cfg *c,
		     const struct topo_5tuple *tuple)
{
	struct topo_5tuple x = *tuple;
	uint32_t bit[16], *lo;

	e->hi = malloc(512 * sizeof(*e->hi));
	if (e->hi == NULL)
		return -ENOMEM;
	lo = e->hi + 256;
	e->mod_m = UINT64_MAX / e->n + 1;

	x.sport = 0;
	e->base = topo_hash(c, &x);
	for (int i = 0; i < 16; i++) {
		x.sport = htons((uint16_t)(1u << i));
		bit[i] = topo_hash(c, &x) ^ e->base;
	}
	e->hi[0] = lo[0] = 0;
	for (uint32_t v = 1; v < 256; v++) {
		uint32_t low = (uint32_t)__builtin_ctz(v);

		lo[v] = lo[v & (v - 1)] ^ bit[low];
		e->hi[v] = e->hi[v & (v - 1)] ^ bit[low + 8];
	}
	return 0;
}

/* h % n without a division (Lemire, Kaser, Kurz 2019), exact for 32-bit h. */
static inline uint32_t fastmod(uint32_t h, uint64_t m, uint32_t n)
{
	return (uint32_t)(((unsigned __int128)(m * h) * n) >> 64);
}

/* DAG index of node (built on first visit), or a negative errno. */
static int64_t pm_build(struct pm *pm, uint32_t node, int depth)
{
	const struct topo *t = pm->t;
	uint32_t nh[256], me;
	struct pm_node *e;
	int n;

	if (pm->idx[node] != UINT32_MAX)
		return pm->idx[node];
	if (depth >= TOPO_PATH_MAX_HOPS)
		return -ELOOP;
	n = topo_route_nexthops(t, pm->dist, node, pm->dst_port, nh, 256);
	if (n <= 0 || n > 256)
		return n <= 0 ? -EHOSTUNREACH : -E2BIG;
	me = pm->nnodes++;
	pm->idx[node] = me;
	e = &pm->nodes[me];
	e->n = (uint32_t)n;
	e->child = calloc(2 * (size_t)n, sizeof(uint32_t));
	if (e->child == NULL)
		return -ENOMEM;
	e->off = e->child + n;
	if (n > 1 && pm_tables(e, &t->nodes[node].hash, &pm->tuple) < 0)
		return -ENOMEM;
	if (node == topo_port_peer_node(t, pm->dst_port)) {
		e->child[0] = PM_TERMINAL;
		e->paths = 1;
		return me;
	}
	for (int i = 0; i < n; i++) {
		int64_t c = pm_build(pm, topo_port_peer_node(t, nh[i]), depth + 1);

		if (c < 0)
			return c;
		e = &pm->nodes[me]; /* pm->nodes does not move, but stay explicit */
		e->child[i] = (uint32_t)c;
		e->off[i] = e->paths;
		e->paths += pm->nodes[c].paths;
	}
	return me;
}

/* The map into path8 (indices >= 0xff as 0xff) or path16 (>= 0xffff as 0xffff). */
static int port_map(const struct topo *t, uint32_t src_port, uint32_t dst_port, uint8_t *path8,
		    uint16_t *path16)
{
	struct pm pm = {.t = t, .dst_port = dst_port};
	uint32_t *dist = NULL;
	int64_t root;
	int ret = -ENOMEM;

	if (!is_nic(t, src_port) || !is_nic(t, dst_port) || src_port == dst_port)
		return -EINVAL;
	dist = dist_to(t, dst_port);
	pm.idx = malloc(sizeof(*pm.idx) * (t->nnodes + 1));
	pm.nodes = calloc(t->nnodes + 1, sizeof(*pm.nodes));
	if (dist == NULL || pm.idx == NULL || pm.nodes == NULL)
		goto out;
	for (uint32_t i = 0; i < t->nnodes; i++)
		pm.idx[i] = UINT32_MAX;
	pm.dist = dist;
	pm.tuple.saddr = t->ports[src_port].addr.s_addr;
	pm.tuple.daddr = t->ports[dst_port].addr.s_addr;
	pm.tuple.proto = IPPROTO_UDP;
	pm.tuple.dport = htons(ICE_ROCE_UDP_PORT);
	root = pm_build(&pm, topo_port_peer_node(t, src_port), 1);
	if (root < 0) {
		ret = root == -EHOSTUNREACH ? -EHOSTUNREACH : (int)root;
		goto out;
	}
	for (uint32_t i = 0; i < TOPO_SPORT_COUNT; i++) {
		uint32_t s = TOPO_SPORT_BASE + i, c = (uint32_t)root, idx = 0;

		while (c != PM_TERMINAL) {
			const struct pm_node *e = &pm.nodes[c];
			uint32_t j;

			if (e->n == 1) {
				c = e->child[0];
				continue;
			}
			j = fastmod(e->base ^ e->hi[s >> 8] ^ e->hi[256 + (s & 0xff)], e->mod_m,
				    e->n);
			idx += e->off[j];
			c = e->child[j];
		}
		if (path16 != NULL)
			path16[i] = idx < TOPO_PATH16_NONE ? (uint16_t)idx : TOPO_PATH16_NONE;
		else
			path8[i] = idx < 0xff ? (uint8_t)idx : 0xff;
	}
	ret = 0;
out:
	if (pm.nodes != NULL)
		for (uint32_t i = 0; i < pm.nnodes; i++) {
			free(pm.nodes[i].child);
			free(pm.nodes[i].hi);
		}
	free(pm.nodes);
	free(pm.idx);
	free(dist);
	return ret;
}

int topo_port_map(const struct topo *t, uint32_t src_port, uint32_t dst_port,
		  uint8_t path_of[TOPO_SPORT_COUNT])
{
	return port_map(t, src_port, dst_port, path_of, NULL);
}

int topo_port_map16(const struct topo *t, uint32_t src_port, uint32_t dst_port,
		    uint16_t path_of[TOPO_SPORT_COUNT])
{
	return port_map(t, src_port, dst_port, NULL, path_of);
}

uint64_t topo_worst_queueing_ns(const struct topo *t)
{
	uint32_t n = topo_nic_count(t), step = n > 64 ? n / 64 : 1;
	struct topo_path paths[16];
	uint64_t worst = 0;

	for (uint32_t i = 0; i < n; i += step) {
		for (uint32_t j = 0; j < n; j++) {
			const struct topo_port *a = topo_nic(t, i), *b = topo_nic(t, j);
			int np;

			if (a == b || a->node == b->node)
				continue;
			np = topo_paths(t, a->id, b->id, paths, 16);
			for (int p = 0; p < np && p < 16; p++) {
				uint64_t q = 0;

				for (uint32_t h = 0; h < paths[p].nhops; h++) {
					const struct topo_port *eg = &t->ports[paths[p].egress[h]];
					const struct topo_link *l = &t->links[paths[p].link[h]];

					if (t->nodes[eg->node].kind != TOPO_SWITCH ||
					    l->rate_bps == 0)
						continue;
					q += (uint64_t)l->buffer_bytes * 8 * 1000000000ull /
					     l->rate_bps;
				}
				if (q > worst)
					worst = q;
			}
		}
	}
	return worst;
}
