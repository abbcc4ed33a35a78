// SPDX-License-Identifier: Apache-2.0
/* ctl_pmap: ice-probe's port -> path maps, and the port -> path provider
 * over them (see ctl_pmap.h). */
#include "ctl_pmap.h"
#include "ctl_path_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ctl_pmap_fini(struct ctl_pmap *m)
{
	if (m == NULL)
		return;
	for (uint32_t i = 0; i < m->npaths; i++)
		free(m->paths[i].ports);
	free(m->paths);
	memset(m, 0, sizeof(*m));
}

static int parse_path(json_t *jp, struct ctl_pmap_path *p)
{
	const char *name = json_string_value(json_object_get(jp, "path"));
	json_t *ports = json_object_get(jp, "ports"), *v;
	size_t i;

	if (name == NULL || !json_is_array(ports) ||
	    snprintf(p->name, sizeof(p->name), "%s", name) >= (int)sizeof(p->name))
		return -EINVAL;
	p->ports = calloc(json_array_size(ports) + 1, sizeof(*p->ports));
	if (p->ports == NULL)
		return -ENOMEM;
	json_array_foreach(ports, i, v)
	{
		json_int_t x = json_integer_value(v);

		if (!json_is_integer(v) || x < 1 || x > 65535)
			return -EINVAL;
		p->ports[p->nports++] = (uint16_t)x;
	}
	return 0;
}

int ctl_pmap_parse(const char *json, struct ctl_pmap *m)
{
	json_t *o = json_loads(json, 0, NULL), *paths, *jp;
	const char *src, *dst;
	size_t i;
	int ret = -EINVAL;

	memset(m, 0, sizeof(*m));
	if (o == NULL)
		return -EINVAL;
	src = json_string_value(json_object_get(o, "src"));
	dst = json_string_value(json_object_get(o, "dst"));
	paths = json_object_get(o, "paths");
	if (src == NULL || dst == NULL || inet_pton(AF_INET, src, &m->src) != 1 ||
	    inet_pton(AF_INET, dst, &m->dst) != 1 || !json_is_array(paths) ||
	    json_array_size(paths) == 0)
		goto out;
	m->ts_ms = (uint64_t)json_integer_value(json_object_get(o, "ts_ms"));
	m->paths = calloc(json_array_size(paths), sizeof(*m->paths));
	if (m->paths == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	json_array_foreach(paths, i, jp)
	{
		ret = parse_path(jp, &m->paths[m->npaths++]);
		if (ret < 0)
			goto out;
	}
	ret = 0;
out:
	json_decref(o);
	if (ret < 0)
		ctl_pmap_fini(m);
	return ret;
}

int ctl_pmap_path_of(const struct ctl_pmap *m, uint16_t sport)
{
	for (uint32_t i = 0; i < m->npaths; i++)
		for (uint32_t j = 0; j < m->paths[i].nports; j++)
			if (m->paths[i].ports[j] == sport)
				return (int)i;
	return -1;
}

int ctl_pmap_find(const struct ctl_pmap *m, const char *name)
{
	for (uint32_t i = 0; i < m->npaths; i++)
		if (strcmp(m->paths[i].name, name) == 0)
			return (int)i;
	return -1;
}

bool ctl_pmap_differs(const struct ctl_pmap *a, const struct ctl_pmap *b)
{
	if (a->npaths != b->npaths)
		return true;
	for (uint32_t i = 0; i < a->npaths; i++) {
		int k = ctl_pmap_find(b, a->paths[i].name);

		if (k < 0)
			return true;
		for (uint32_t j = 0; j < a->paths[i].nports; j++) {
			int now = ctl_pmap_path_of(b, a->paths[i].ports[j]);

			if (now >= 0 && now != k)
				return true;
		}
	}
	return false;
}

/* ---- the maps as a port -> path provider ------------------------------------------ */

static const struct ctl_pathmap_probe *probe_of(const struct ctl_pathmap *m)
{
	return (const struct ctl_pathmap_probe *)m; /* pm is its first member */
}

/* The newest map of the flow's NIC pair; NULL when none. */
static const struct ctl_pmap *pmap_for(const struct ctl_pathmap_probe *pp, const struct ctl_flow *f)
{
	const struct topo *t = pp->pm.p->t;
	struct in_addr s = t->ports[f->src_port].addr, d = t->ports[f->dst_port].addr;
	const struct ctl_pmap *best = NULL;

	for (uint32_t i = 0; i < pp->nmaps; i++) {
		const struct ctl_pmap *m = &pp->maps[i];

		if (m->src.s_addr == s.s_addr && m->dst.s_addr == d.s_addr &&
		    (best == NULL || m->ts_ms > best->ts_ms))
			best = m;
	}
	return best;
}

static int probe_route_of(struct ctl_pathmap *pm, const struct ctl_flow *f, uint16_t sport,
			  struct ctl_route *out)
{
	const struct ctl_pmap *m = pmap_for(probe_of(pm), f);
	int k = m != NULL ? ctl_pmap_path_of(m, sport) : -1;

	if (k < 0)
		return -ENOENT;
	return ctl_route_by_name(pm->p, f, m->paths[k].name, out);
}

static int probe_sports(struct ctl_pathmap *pm, struct ctl_demand *dem)
{
	const struct ctl_pathmap_probe *pp = probe_of(pm);
	uint32_t *turn;
	char name[128];
	int ret = ctl_plan_sports(ctl_pathmap_model(pm->p), dem);

	if (ret < 0)
		return ret;
	turn = calloc((size_t)pp->nmaps * 64 + 1, sizeof(*turn));
	for (size_t i = 0; i < dem->n; i++) {
		struct ctl_flow *f = &dem->flows[i];
		const struct ctl_pmap *m = pmap_for(pp, f);
		const struct ctl_pmap_path *p;
		int k = -1;

		if (m != NULL && ctl_route_name(pm->p, &f->path, name, sizeof(name)) == 0)
			k = ctl_pmap_find(m, name);
		if (k < 0) {
			struct ctl_route r = {.idx = -1};

			pm->unsteered++;
			if (f->cur_sport == 0)
				continue; /* a new flow: the model's port is as good as any */
			f->sport = f->cur_sport;
			if (probe_route_of(pm, f, f->cur_sport, &r) == 0)
				f->path = r;
			continue;
		}
		p = &m->paths[k];
		f->sport = 0;
		for (uint32_t j = 0; j < p->nports && f->sport == 0; j++)
			if (p->ports[j] == f->cur_sport)
				f->sport = f->cur_sport;
		if (f->sport == 0) {
			uint32_t *t = turn != NULL && k < 64
					      ? &turn[(size_t)(m - pp->maps) * 64 + k]
					      : NULL;

			f->sport = p->ports[(t != NULL ? (*t)++ : (uint32_t)i) % p->nports];
		}
	}
	free(turn);
	return 0;
}

static const struct ctl_pathmap_ops probe_ops = {
	.name = "probe",
	.route_of = probe_route_of,
	.sports = probe_sports,
};

struct ctl_pathmap *ctl_pathmap_probe_init(struct ctl_pathmap_probe *pp, struct ctl_planner *p,
					   const struct ctl_pmap *maps, uint32_t nmaps)
{
	pp->pm = (struct ctl_pathmap){.ops = &probe_ops, .p = p};
	pp->maps = maps;
	pp->nmaps = nmaps;
	return &pp->pm;
}

/* The link between nodes u and v, or -1. */
static int64_t link_between(const struct topo *t, uint32_t u, uint32_t v)
{
	const struct topo_node *n = &t->nodes[u];

	for (uint32_t i = 0; i < n->nports; i++) {
		const struct topo_port *p = &t->ports[n->ports[i]];
		const struct topo_link *k;

		if (p->link == UINT32_MAX)
			continue;
		k = &t->links[p->link];
		if (t->ports[k->a == p->id ? k->b : k->a].node == v)
			return p->link;
	}
	return -1;
}

int ctl_pmap_path_dlinks(const struct topo *t, const char *name, uint32_t *dl, uint32_t max)
{
	char buf[256], *save = NULL, *h;
	uint32_t nh = 0, prev = UINT32_MAX;

	if (name == NULL || strlen(name) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", name);
	for (h = strtok_r(buf, ">", &save); h != NULL; h = strtok_r(NULL, ">", &save)) {
		const struct topo_node *nd = topo_node_by_name(t, h);
		int64_t l;

		if (nd == NULL)
			return -ENOENT;
		if (prev != UINT32_MAX) {
			if (nh == max || (l = link_between(t, prev, nd->id)) < 0)
				return -ENOENT;
			/* the direction: prev's end of the link first is a->b */
			dl[nh++] = 2 * (uint32_t)l + (t->ports[t->links[l].a].node == prev ? 0 : 1);
		}
		prev = nd->id;
	}
	return nh > 0 ? (int)nh : -ENOENT;
}

/* Tomography over directed links: a link crossed by a marked path and by
 * no unmarked one is set in out[] (len: per directed link when dir, else
 * per link); returns the paths used. */
static uint32_t tomography(const struct topo *t, const char *const *name, const bool *mark,
			   uint32_t n, bool dir, bool *out)
{
	uint32_t len = dir ? 2 * t->nlinks : t->nlinks, used = 0;
	uint8_t *seen = calloc(len + 1, 1); /* 1: a marked path crosses it, 2: another */

	for (uint32_t l = 0; l < len; l++)
		out[l] = false;
	if (seen == NULL)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t dl[16];
		int nh = ctl_pmap_path_dlinks(t, name[i], dl, 16);

		if (nh <= 0)
			continue;
		used++;
		for (int k = 0; k < nh; k++)
			seen[dir ? dl[k] : dl[k] / 2] |= mark[i] ? 1 : 2;
	}
	for (uint32_t l = 0; l < len; l++)
		out[l] = seen[l] == 1;
	free(seen);
	return used;
}

uint32_t ctl_pmap_dead_links(const struct topo *t, const char *const *name, const bool *dead,
			     uint32_t n, bool *down)
{
	return tomography(t, name, dead, n, false, down);
}

uint32_t ctl_pmap_hot_dlinks(const struct topo *t, const char *const *name, const bool *hot,
			     uint32_t n, bool *hot_dl)
{
	return tomography(t, name, hot, n, true, hot_dl);
}
