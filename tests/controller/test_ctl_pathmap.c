// SPDX-License-Identifier: Apache-2.0
/*
 * controller port -> path providers (struct ctl_pathmap): the topology's
 * hash models and ice-probe's maps, driven through the same interface. On a
 * small leaf-spine, maps learned from the hash model (as ice-probe would
 * learn them on a fabric that hashes like the model, minus ports it "never
 * saw") must agree with the model: the route of every port the map knows,
 * ports that take the planned routes, the plain-ECMP routes; and where a
 * map knows nothing the probe provider says so (-ENOENT, unsteered flows).
 * After a rehash (every port on another path) the new map contradicts the
 * old, and the flows keep their routes on ports the new map knows.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl.h"
#include "ctl_pmap.h"

#define MBIT	 1000000ull
#define UNSEEN	 7 /* the maps miss every port == 0 mod UNSEEN */
#define NPAIRS	 6 /* pairs with a map; the demand has one more without */
#define QPS	 3 /* QPs per pair */
#define MAXPATHS 16

struct fixture {
	struct topo *t;
	struct ctl_planner *p;
	struct ctl_demand d;
	struct ctl_pmap maps[NPAIRS];
	struct ctl_pathmap_probe probe;
	struct ctl_pathmap *pm[2]; /* model, probe */
};

static bool unseen(uint32_t sport)
{
	return sport % UNSEEN == 0;
}

static void add_flow(struct ctl_demand *d, const struct topo *t, uint32_t s, uint32_t dn,
		     uint32_t qpn)
{
	struct ctl_flow f = {
		.src_port = topo_nic(t, s)->id,
		.dst_port = topo_nic(t, dn)->id,
		.demand = 50 * MBIT,
		.host = topo_nic(t, s)->node,
		.lqpn = qpn,
		.rqpn = qpn + 0x1000,
		.path = {.idx = -1},
	};

	assert_int_equal(ctl_demand_add(d, &f), 0);
}

/* What ice-probe would learn for f's NIC pair on a fabric hashing like the
 * model: every port it saw, grouped by the switches its path crosses. */
static void learn(struct fixture *fx, const struct ctl_flow *f, struct ctl_pmap *m, uint64_t ts)
{
	struct ctl_pathmap *model = ctl_pathmap_model(fx->p);

	memset(m, 0, sizeof(*m));
	m->src = fx->t->ports[f->src_port].addr;
	m->dst = fx->t->ports[f->dst_port].addr;
	m->ts_ms = ts;
	m->paths = calloc(MAXPATHS, sizeof(*m->paths));
	assert_non_null(m->paths);
	for (uint32_t s = TOPO_SPORT_BASE; s < TOPO_SPORT_BASE + TOPO_SPORT_COUNT; s++) {
		struct ctl_route r;
		char name[128];
		uint32_t k;

		if (unseen(s))
			continue;
		assert_int_equal(ctl_route_of_sport(model, f, (uint16_t)s, &r), 0);
		assert_int_equal(ctl_route_name(fx->p, &r, name, sizeof(name)), 0);
		for (k = 0; k < m->npaths && strcmp(m->paths[k].name, name) != 0; k++)
			;
		if (k == m->npaths) {
			assert_true(k < MAXPATHS);
			snprintf(m->paths[k].name, sizeof(m->paths[k].name), "%s", name);
			m->paths[k].ports = calloc(TOPO_SPORT_COUNT, sizeof(uint16_t));
			assert_non_null(m->paths[k].ports);
			m->npaths++;
		}
		m->paths[k].ports[m->paths[k].nports++] = (uint16_t)s;
	}
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct topo_gen_opts o;

	assert_non_null(fx);
	topo_gen_opts_default(&o);
	o.spines = 4;
	o.leaves = 4;
	o.hosts_per_leaf = 2;
	fx->t = topo_gen_leaf_spine(&o);
	assert_non_null(fx->t);
	fx->p = ctl_planner_new(fx->t);
	assert_non_null(fx->p);
	ctl_demand_init(&fx->d, CTL_UNIT_BPS);
	/* NIC i -> NIC i + 2 (the next leaf), QPS QPs each; pair NPAIRS: no map */
	for (uint32_t i = 0; i <= NPAIRS; i++)
		for (uint32_t q = 0; q < QPS; q++)
			add_flow(&fx->d, fx->t, i, (i + 2) % 8, 0x100 * i + q);
	for (uint32_t i = 0; i < NPAIRS; i++)
		learn(fx, &fx->d.flows[i * QPS], &fx->maps[i], 1000 + i);
	fx->pm[0] = ctl_pathmap_model(fx->p);
	fx->pm[1] = ctl_pathmap_probe_init(&fx->probe, fx->p, fx->maps, NPAIRS);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	for (uint32_t i = 0; i < NPAIRS; i++)
		ctl_pmap_fini(&fx->maps[i]);
	ctl_demand_fini(&fx->d);
	ctl_planner_free(fx->p);
	topo_free(fx->t);
	free(fx);
	return 0;
}

static void assert_route_equal(const struct ctl_route *a, const struct ctl_route *b)
{
	assert_int_equal(a->idx, b->idx);
	assert_int_equal(a->nhops, b->nhops);
	assert_memory_equal(a->dlink, b->dlink, a->nhops * sizeof(a->dlink[0]));
}

static void test_names(void **state)
{
	struct fixture *fx = *state;

	assert_string_equal(fx->pm[0]->ops->name, "model");
	assert_string_equal(fx->pm[1]->ops->name, "probe");
	assert_ptr_equal(fx->pm[0]->p, fx->p);
	assert_ptr_equal(fx->pm[1]->p, fx->p);
}

/* Every port of a mapped pair: the same route from both providers where the
 * map saw it; -ENOENT from the probe where it did not, and for unmapped pairs. */
static void test_route_of_sport_agrees(void **state)
{
	struct fixture *fx = *state;
	uint32_t known = 0, paths = 0;

	for (uint32_t i = 0; i <= NPAIRS; i++) {
		const struct ctl_flow *f = &fx->d.flows[i * QPS];

		for (uint32_t s = TOPO_SPORT_BASE; s < TOPO_SPORT_BASE + 4096; s++) {
			struct ctl_route a, b;
			int ret;

			assert_int_equal(ctl_route_of_sport(fx->pm[0], f, (uint16_t)s, &a), 0);
			ret = ctl_route_of_sport(fx->pm[1], f, (uint16_t)s, &b);
			if (i == NPAIRS || unseen(s)) {
				assert_int_equal(ret, -ENOENT);
				continue;
			}
			assert_int_equal(ret, 0);
			assert_route_equal(&a, &b);
			known++;
		}
		if (i < NPAIRS)
			paths += fx->maps[i].npaths;
	}
	assert_true(known > 0);
	assert_int_equal(paths, NPAIRS * 4); /* 4 spines: 4 paths per pair */
}

/* Plan once, then source ports and ECMP routes by each provider on copies of
 * the planned demand: every port takes its flow's route by both providers. */
static void test_sports_and_ecmp_agree(void **state)
{
	struct fixture *fx = *state;
	struct ctl_demand dd[2];

	assert_int_equal(ctl_plan_paths(fx->p, &fx->d, NULL, NULL), 0);
	for (int k = 0; k < 2; k++) {
		struct ctl_pathmap *pm = fx->pm[k];

		ctl_demand_init(&dd[k], CTL_UNIT_BPS);
		for (size_t i = 0; i < fx->d.n; i++) {
			assert_int_equal(ctl_demand_add(&dd[k], &fx->d.flows[i]), 0);
			dd[k].flows[i].path = fx->d.flows[i].path; /* outputs are reset */
		}
		assert_int_equal(ctl_plan_sports(pm, &dd[k]), 0);
		/* the unmapped pair's QPs are new (no current port): model's ports */
		assert_int_equal(pm->unsteered, k == 1 ? QPS : 0);
		for (size_t i = 0; i < dd[k].n; i++) {
			const struct ctl_flow *f = &dd[k].flows[i];
			struct ctl_route r;

			assert_true(f->sport >= TOPO_SPORT_BASE);
			assert_int_equal(ctl_route_of_sport(fx->pm[0], f, f->sport, &r), 0);
			assert_route_equal(&r, &f->path);
			if (k == 1 && i < NPAIRS * QPS)
				assert_false(unseen(f->sport)); /* the probe's own ports */
			if (i < NPAIRS * QPS && !unseen(f->sport)) {
				assert_int_equal(ctl_route_of_sport(fx->pm[1], f, f->sport, &r), 0);
				assert_route_equal(&r, &f->path);
			}
		}
		assert_int_equal(ctl_plan_ecmp(pm, &dd[k]), 0);
	}
	for (size_t i = 0; i < fx->d.n; i++) {
		assert_route_equal(&dd[0].flows[i].ecmp, &dd[1].flows[i].ecmp);
		if (i >= NPAIRS * QPS)
			assert_int_equal(dd[1].flows[i].sport, dd[0].flows[i].sport);
	}
	/* current ports that take the route are kept, by both providers */
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < dd[k].n; i++) {
			dd[k].flows[i].cur_sport = dd[k].flows[i].sport;
			dd[k].flows[i].sport = 0;
		}
		assert_int_equal(ctl_plan_sports(fx->pm[k], &dd[k]), 0);
		for (size_t i = 0; i < dd[k].n; i++)
			assert_int_equal(dd[k].flows[i].sport, dd[k].flows[i].cur_sport);
		ctl_demand_fini(&dd[k]);
	}
}

/* m with its paths' port lists rotated by one: every port now takes
 * another path (a switch rehashed after a reboot). */
static void rehash(const struct ctl_pmap *m, struct ctl_pmap *out, uint32_t drop_from)
{
	*out = *m;
	out->ts_ms = m->ts_ms + 1;
	out->paths = calloc(m->npaths, sizeof(*out->paths));
	assert_non_null(out->paths);
	for (uint32_t k = 0; k < m->npaths; k++) {
		const struct ctl_pmap_path *from = &m->paths[(k + 1) % m->npaths];

		out->paths[k] = m->paths[k];
		out->paths[k].nports = from->nports < drop_from ? from->nports : drop_from;
		out->paths[k].ports = calloc(from->nports + 1, sizeof(uint16_t));
		assert_non_null(out->paths[k].ports);
		memcpy(out->paths[k].ports, from->ports, out->paths[k].nports * sizeof(uint16_t));
	}
}

/* A newer map contradicts an older one when a port both saw changed path
 * or the paths differ; the same map, or one that saw fewer ports, does not. */
static void test_pmap_differs(void **state)
{
	struct fixture *fx = *state;
	const struct ctl_pmap *m = &fx->maps[0];
	struct ctl_pmap same, fewer, moved, lost;

	rehash(m, &moved, UINT32_MAX);
	assert_true(ctl_pmap_differs(m, &moved));
	assert_true(ctl_pmap_differs(&moved, m));
	assert_false(ctl_pmap_differs(m, m));
	/* learned again, the same */
	same = *m;
	same.ts_ms++;
	assert_false(ctl_pmap_differs(m, &same));
	/* fewer ports per path, each where it was: no evidence */
	fewer = *m;
	fewer.paths = calloc(m->npaths, sizeof(*fewer.paths));
	assert_non_null(fewer.paths);
	for (uint32_t k = 0; k < m->npaths; k++) {
		fewer.paths[k] = m->paths[k];
		fewer.paths[k].nports = m->paths[k].nports / 2;
	}
	assert_false(ctl_pmap_differs(m, &fewer));
	/* a path gone (a link down) */
	lost = fewer;
	lost.npaths = m->npaths - 1;
	assert_true(ctl_pmap_differs(m, &lost));
	free(fewer.paths);
	ctl_pmap_fini(&moved);
}

/* After a rehash: planned routes stay, every flow whose port the new map
 * sends elsewhere gets a port the new map sees take its route. */
static void test_sports_after_rehash(void **state)
{
	struct fixture *fx = *state;
	struct ctl_pmap maps[NPAIRS];
	struct ctl_pathmap_probe pp;
	struct ctl_pathmap *pm;
	struct ctl_demand dd;
	uint32_t moved = 0;

	for (uint32_t i = 0; i < NPAIRS; i++)
		rehash(&fx->maps[i], &maps[i], 8); /* and saw only 8 ports per path */
	pm = ctl_pathmap_probe_init(&pp, fx->p, maps, NPAIRS);
	assert_int_equal(ctl_plan_paths(fx->p, &fx->d, NULL, NULL), 0);
	ctl_demand_init(&dd, CTL_UNIT_BPS);
	for (size_t i = 0; i < NPAIRS * QPS; i++) {
		assert_int_equal(ctl_demand_add(&dd, &fx->d.flows[i]), 0);
		dd.flows[i].path = fx->d.flows[i].path;
	}
	/* the ports planned with the old maps are the flows' current ones */
	assert_int_equal(ctl_plan_sports(fx->pm[1], &dd), 0);
	for (size_t i = 0; i < dd.n; i++) {
		dd.flows[i].cur_sport = dd.flows[i].sport;
		dd.flows[i].sport = 0;
	}
	assert_int_equal(ctl_plan_sports(pm, &dd), 0);
	assert_int_equal(pm->unsteered, 0);
	for (size_t i = 0; i < dd.n; i++) {
		const struct ctl_flow *f = &dd.flows[i];
		struct ctl_route r;

		assert_int_equal(ctl_route_of_sport(pm, f, f->sport, &r), 0);
		assert_route_equal(&r, &fx->d.flows[i].path);
		moved += f->sport != f->cur_sport;
	}
	assert_int_equal(moved, dd.n); /* every old port now takes another path */
	ctl_demand_fini(&dd);
	for (uint32_t i = 0; i < NPAIRS; i++)
		ctl_pmap_fini(&maps[i]);
}

/* The id of the link between nodes a and b, or -1. */
static int link_of(const struct topo *t, const char *a, const char *b)
{
	for (uint32_t l = 0; l < t->nlinks; l++) {
		const char *x = t->nodes[t->ports[t->links[l].a].node].name,
			   *y = t->nodes[t->ports[t->links[l].b].node].name;

		if ((strcmp(x, a) == 0 && strcmp(y, b) == 0) ||
		    (strcmp(x, b) == 0 && strcmp(y, a) == 0))
			return (int)l;
	}
	return -1;
}

/* The probe's dead paths: a link down when a dead path crosses it and no
 * live one does; names that do not resolve are skipped. */
static void test_dead_links(void **state)
{
	struct fixture *fx = *state;
	const struct topo *t = fx->t;
	const char *names[] = {"leaf1>spine2>leaf2", "leaf1>spine2>leaf3", "leaf1>spine1>leaf2",
			       "leaf3>spine2>leaf2", "leaf2>spine2>leaf3", "10.0.0.9>spine2",
			       "leaf1>leaf2"};
	const bool dead[] = {true, true, false, false, false, true, true};
	bool *down = calloc(t->nlinks, sizeof(bool));
	int l12 = link_of(t, "leaf1", "spine2"), l22 = link_of(t, "spine2", "leaf2");
	uint32_t n = 0;

	assert_non_null(down);
	assert_true(l12 >= 0 && l22 >= 0);
	assert_int_equal(ctl_pmap_dead_links(t, names, dead, 7, down), 5);
	for (uint32_t l = 0; l < t->nlinks; l++)
		n += down[l];
	assert_int_equal(n, 1);
	assert_true(down[l12]); /* the live paths through spine2 clear its other links */
	/* only the one pair: both links of the dead path go (nothing clears spine2:leaf2) */
	assert_int_equal(ctl_pmap_dead_links(t, names, dead, 1, down), 1);
	assert_true(down[l12] && down[l22]);
	/* all paths live: nothing down */
	assert_int_equal(ctl_pmap_dead_links(t, names + 2, dead + 2, 3, down), 3);
	for (uint32_t l = 0; l < t->nlinks; l++)
		assert_false(down[l]);
	free(down);
}

/* The probe's queueing delay, per direction: a direction only hot paths
 * cross is hot; the reverse of a hot path is not; path names resolve to
 * their directed links. */
static void test_hot_dlinks(void **state)
{
	struct fixture *fx = *state;
	const struct topo *t = fx->t;
	const char *names[] = {"leaf1>spine2>leaf2", "leaf3>spine2>leaf2", "leaf2>spine2>leaf1",
			       "leaf1>spine1>leaf2"};
	const bool hot[] = {true, false, false, false};
	bool *h = calloc(2 * t->nlinks, sizeof(bool));
	int l12 = link_of(t, "leaf1", "spine2"), l22 = link_of(t, "spine2", "leaf2");
	uint32_t dl[16], up12, n = 0;

	assert_non_null(h);
	assert_int_equal(ctl_pmap_path_dlinks(t, names[0], dl, 16), 2);
	up12 = 2 * (uint32_t)l12 +
	       (t->ports[t->links[l12].a].node == topo_node_by_name(t, "leaf1")->id ? 0 : 1);
	assert_int_equal(dl[0], up12);
	assert_int_equal(dl[1] / 2, (uint32_t)l22);
	assert_int_equal(ctl_pmap_path_dlinks(t, "leaf1>leaf2", dl, 16), -ENOENT);
	assert_int_equal(ctl_pmap_path_dlinks(t, "leaf1>nosuch", dl, 16), -ENOENT);
	assert_int_equal(ctl_pmap_path_dlinks(t, names[0], dl, 1), -ENOENT);
	assert_int_equal(ctl_pmap_hot_dlinks(t, names, hot, 4, h), 4);
	for (uint32_t k = 0; k < 2 * t->nlinks; k++)
		n += h[k];
	/* leaf1 -> spine2 only: spine2 -> leaf2 is cleared by leaf3's cool path,
	 * and leaf2 -> spine2 -> leaf1 (the reverse) is cool */
	assert_int_equal(n, 1);
	assert_true(h[up12]);
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_route_of_sport_agrees),
		cmocka_unit_test(test_sports_and_ecmp_agree),
		cmocka_unit_test(test_pmap_differs),
		cmocka_unit_test(test_sports_after_rehash),
		cmocka_unit_test(test_dead_links),
		cmocka_unit_test(test_hot_dlinks),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
