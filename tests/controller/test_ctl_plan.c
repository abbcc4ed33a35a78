// SPDX-License-Identifier: Apache-2.0
/*
 * controller planner: hand-solvable path cases, the lower bound against an
 * exhaustive optimum, never worse than ECMP on random demands, routes and
 * source ports agree with topo (topo_paths, topo_predict, topo_port_map),
 * incremental mode, hysteresis, max-min fair rates; the balanced colouring
 * (alternating paths) reaching the bound on permutations, rings, all-to-all.
 */
#include <math.h>
#include <arpa/inet.h>
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

#define MBIT 1000000ull

static struct topo *leaf_spine(uint32_t spines, uint32_t leaves, uint32_t hpl)
{
	struct topo_gen_opts o;
	struct topo *t;

	topo_gen_opts_default(&o); /* 200 Mbit/s everywhere */
	o.spines = spines;
	o.leaves = leaves;
	o.hosts_per_leaf = hpl;
	t = topo_gen_leaf_spine(&o);
	assert_non_null(t);
	return t;
}

static struct topo *fat_tree(uint32_t k)
{
	struct topo_gen_opts o;
	struct topo *t;

	topo_gen_opts_default(&o);
	o.k = k;
	t = topo_gen_fat_tree(&o);
	assert_non_null(t);
	return t;
}

static void add_flow(struct ctl_demand *d, const struct topo *t, uint32_t s, uint32_t dn,
		     uint64_t demand, uint32_t qpn)
{
	struct ctl_flow f = {
		.src_port = topo_nic(t, s)->id,
		.dst_port = topo_nic(t, dn)->id,
		.demand = demand,
		.host = topo_nic(t, s)->node,
		.lqpn = qpn,
		.rqpn = qpn + 0x1000,
		.path = {.idx = -1},
	};

	assert_int_equal(ctl_demand_add(d, &f), 0);
}

/* The spine a leaf-spine route crosses (its second hop's link's upper node). */
static uint32_t spine_of(const struct topo *t, const struct ctl_route *r)
{
	const struct topo_link *l = &t->links[r->dlink[1] / 2];

	return t->ports[l->b].node;
}

/* ---- hand cases ------------------------------------------------------------------- */

static void test_two_flows_two_spines(void **state)
{
	struct topo *t = leaf_spine(2, 2, 2); /* h1 h2 on leaf1, h3 h4 on leaf2 */
	struct ctl_planner *p = ctl_planner_new(t);
	struct ctl_plan_stats st;
	struct ctl_demand d;

	assert_non_null(p);
	ctl_demand_init(&d, CTL_UNIT_BPS);
	add_flow(&d, t, 0, 2, 200 * MBIT, 1);
	add_flow(&d, t, 1, 3, 200 * MBIT, 2);
	assert_int_equal(ctl_plan_paths(p, &d, NULL, &st), 0);
	assert_int_not_equal(spine_of(t, &d.flows[0].path), spine_of(t, &d.flows[1].path));
	assert_true(st.max_util > 0.999 && st.max_util < 1.001);
	assert_true(st.bound > 0.999 && st.bound < 1.001);
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

static void test_four_flows_two_per_spine(void **state)
{
	struct topo *t = leaf_spine(2, 2, 4);
	struct ctl_planner *p = ctl_planner_new(t);
	struct ctl_plan_stats st;
	struct ctl_demand d;
	uint32_t s0 = 0, per[2] = {0, 0};

	ctl_demand_init(&d, CTL_UNIT_BPS);
	for (uint32_t i = 0; i < 4; i++)
		add_flow(&d, t, i, 4 + i, 100 * MBIT, 10 + i);
	assert_int_equal(ctl_plan_paths(p, &d, NULL, &st), 0);
	s0 = spine_of(t, &d.flows[0].path);
	for (uint32_t i = 0; i < 4; i++)
		per[spine_of(t, &d.flows[i].path) == s0]++;
	assert_int_equal(per[0], 2);
	assert_int_equal(per[1], 2);
	/* 2 x 100 Mbit/s on each 200 Mbit/s uplink: 1.0, and the bound agrees */
	assert_true(st.max_util > 0.999 && st.max_util < 1.001);
	assert_true(st.bound > 0.999 && st.bound < 1.001);
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

/* ---- bound against an exhaustive optimum; never worse than ECMP ---------------------- */

static uint64_t rng_s = 12345;

static uint32_t rnd(uint32_t n)
{
	rng_s = rng_s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)((rng_s >> 33) % n);
}

static void random_demand(struct ctl_demand *d, const struct topo *t, uint32_t nflows)
{
	uint32_t nn = topo_nic_count(t);

	for (uint32_t i = 0; i < nflows; i++) {
		uint32_t a = rnd(nn), b = rnd(nn - 1);

		if (b >= a)
			b++;
		add_flow(d, t, a, b, (1 + rnd(200)) * MBIT, 100 + rnd(1 << 20));
	}
}

/* Smallest max utilisation over every assignment (tiny cases only). */
static double brute(struct ctl_planner *p, struct ctl_demand *d, const struct topo *t)
{
	uint32_t np[8], idx[8] = {0};
	struct topo_path tp[16];
	double best = 1e30;

	for (size_t i = 0; i < d->n; i++)
		np[i] = (uint32_t)topo_paths(t, d->flows[i].src_port, d->flows[i].dst_port, tp, 16);
	for (;;) {
		size_t i;
		double u;

		for (i = 0; i < d->n; i++) {
			struct ctl_route r;

			/* route of index idx[i]: find a source port that takes it */
			r.idx = -1;
			for (uint32_t s = TOPO_SPORT_BASE; r.idx != (int32_t)idx[i]; s++)
				assert_int_equal(ctl_route_of_sport(ctl_pathmap_model(p),
								    &d->flows[i], (uint16_t)s, &r),
						 0);
			d->flows[i].ecmp = r;
		}
		u = ctl_max_util(p, d, 1);
		if (u < best)
			best = u;
		for (i = 0; i < d->n; i++) {
			if (++idx[i] < np[i])
				break;
			idx[i] = 0;
		}
		if (i == d->n)
			break;
	}
	return best;
}

static void test_bound_is_a_lower_bound(void **state)
{
	struct topo *ts[2] = {leaf_spine(2, 2, 2), fat_tree(4)};

	for (int k = 0; k < 2; k++) {
		struct ctl_planner *p = ctl_planner_new(ts[k]);

		for (int round = 0; round < 20; round++) {
			struct ctl_demand d;
			struct ctl_plan_stats st;
			double opt;

			ctl_demand_init(&d, CTL_UNIT_BPS);
			random_demand(&d, ts[k], k == 0 ? 5 : 3);
			assert_int_equal(ctl_plan_paths(p, &d, NULL, &st), 0);
			opt = brute(p, &d, ts[k]);
			assert_true(st.bound <= opt * (1 + 1e-9));
			assert_true(opt <= st.max_util * (1 + 1e-9));
			ctl_demand_fini(&d);
		}
		ctl_planner_free(p);
		topo_free(ts[k]);
	}
}

static void test_never_worse_than_ecmp(void **state)
{
	struct topo *ts[2] = {leaf_spine(4, 4, 4), fat_tree(4)};
	uint32_t better = 0;

	for (int k = 0; k < 2; k++) {
		struct ctl_planner *p = ctl_planner_new(ts[k]);

		assert_non_null(p);
		for (int round = 0; round < 100; round++) {
			struct ctl_demand d;
			struct ctl_plan_stats st;
			double ecmp;

			ctl_demand_init(&d, CTL_UNIT_BPS);
			random_demand(&d, ts[k], 2 + rnd(40));
			assert_int_equal(ctl_plan_ecmp(ctl_pathmap_model(p), &d), 0);
			ecmp = ctl_max_util(p, &d, 1);
			assert_int_equal(ctl_plan_paths(p, &d, NULL, &st), 0);
			assert_true(st.max_util <= ecmp * (1 + 1e-9));
			assert_true(st.bound <= st.max_util * (1 + 1e-9));
			better += st.max_util < ecmp * (1 - 1e-9);
			ctl_demand_fini(&d);
		}
		ctl_planner_free(p);
		topo_free(ts[k]);
	}
	printf("planner strictly better than ECMP on %u of 200 demands\n", better);
	assert_true(better >= 20); /* often strictly better */
}

/* ---- routes and source ports agree with topo --------------------------------------- */

static void check_routes_match_topo(struct topo *t)
{
	struct ctl_planner *p = ctl_planner_new(t);
	uint32_t nn = topo_nic_count(t);
	uint8_t *map = malloc(TOPO_SPORT_COUNT);

	assert_non_null(p);
	for (uint32_t a = 0; a < nn; a += 3)
		for (uint32_t b = 0; b < nn; b++) {
			struct ctl_flow f = {.src_port = topo_nic(t, a)->id,
					     .dst_port = topo_nic(t, b)->id};

			if (a == b)
				continue;
			assert_int_equal(topo_port_map(t, f.src_port, f.dst_port, map), 0);
			for (uint32_t s = 0; s < TOPO_SPORT_COUNT; s += 997) {
				struct topo_5tuple x = {
					.saddr = t->ports[f.src_port].addr.s_addr,
					.daddr = t->ports[f.dst_port].addr.s_addr,
					.sport = htons((uint16_t)(TOPO_SPORT_BASE + s)),
					.dport = htons(4791),
					.proto = 17,
				};
				struct topo_path tp;
				struct ctl_route r;

				assert_int_equal(ctl_route_of_sport(ctl_pathmap_model(p), &f,
								    (uint16_t)(TOPO_SPORT_BASE + s),
								    &r),
						 0);
				assert_int_equal(r.idx, map[s]);
				assert_int_equal(topo_predict(t, f.src_port, f.dst_port, &x, &tp),
						 0);
				assert_int_equal(r.nhops, tp.nhops);
				for (uint32_t h = 0; h < tp.nhops; h++)
					assert_int_equal(r.dlink[h] / 2, tp.link[h]);
			}
		}
	free(map);
	ctl_planner_free(p);
	topo_free(t);
}

static void test_routes_match_topo(void **state)
{
	check_routes_match_topo(leaf_spine(3, 3, 2));
	check_routes_match_topo(fat_tree(4));
}

static void test_sports_take_the_path(void **state)
{
	struct topo *t = fat_tree(4);
	struct ctl_planner *p = ctl_planner_new(t);
	uint8_t *map = malloc(TOPO_SPORT_COUNT);
	struct ctl_demand d;

	ctl_demand_init(&d, CTL_UNIT_BPS);
	random_demand(&d, t, 40);
	/* 4 QPs between one pair: all on paths, on distinct ports */
	for (uint32_t q = 0; q < 4; q++)
		add_flow(&d, t, 0, 15, 50 * MBIT, 0x500 + q);
	assert_int_equal(ctl_plan_paths(p, &d, NULL, NULL), 0);
	assert_int_equal(ctl_plan_sports(ctl_pathmap_model(p), &d), 0);
	for (size_t i = 0; i < d.n; i++) {
		const struct ctl_flow *f = &d.flows[i];

		assert_true(f->sport >= TOPO_SPORT_BASE);
		assert_int_equal(topo_port_map(t, f->src_port, f->dst_port, map), 0);
		assert_int_equal(map[f->sport - TOPO_SPORT_BASE], f->path.idx);
	}
	for (size_t i = d.n - 4; i < d.n; i++)
		for (size_t j = i + 1; j < d.n; j++)
			assert_int_not_equal(d.flows[i].sport, d.flows[j].sport);
	/* a current port that already takes the path is kept */
	for (size_t i = 0; i < d.n; i++)
		d.flows[i].cur_sport = d.flows[i].sport;
	d.flows[0].sport = 0;
	assert_int_equal(ctl_plan_sports(ctl_pathmap_model(p), &d), 0);
	assert_int_equal(d.flows[0].sport, d.flows[0].cur_sport);
	free(map);
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

/* Route names ("leaf1>spine2>leaf3", ice-probe's) round-trip to the same
 * route for every path of a fat-tree pair; unknown names are refused. */
static void test_route_names(void **state)
{
	struct topo *t = fat_tree(4);
	struct ctl_planner *p = ctl_planner_new(t);
	struct ctl_demand d;
	char name[128];
	int seen = 0;
	uint32_t mask = 0;

	ctl_demand_init(&d, CTL_UNIT_BPS);
	add_flow(&d, t, 0, 15, 50 * MBIT, 0x700);
	for (uint32_t sp = TOPO_SPORT_BASE; sp < TOPO_SPORT_BASE + 512; sp++) {
		struct ctl_route r, back;

		assert_int_equal(
			ctl_route_of_sport(ctl_pathmap_model(p), &d.flows[0], (uint16_t)sp, &r), 0);
		assert_int_equal(ctl_route_name(p, &r, name, sizeof(name)), 0);
		assert_int_equal(ctl_route_by_name(p, &d.flows[0], name, &back), 0);
		assert_int_equal(back.idx, r.idx);
		assert_int_equal(back.nhops, r.nhops);
		assert_memory_equal(back.dlink, r.dlink, r.nhops * sizeof(r.dlink[0]));
		if (r.idx < 32 && !(mask & (1u << r.idx))) {
			mask |= 1u << r.idx;
			seen++;
		}
	}
	assert_int_equal(seen, 4); /* k=4: 4 core paths between pods */
	{
		struct ctl_route r;

		assert_int_equal(ctl_route_by_name(p, &d.flows[0], "nowhere", &r), -ENOENT);
		assert_int_equal(
			ctl_route_of_sport(ctl_pathmap_model(p), &d.flows[0], TOPO_SPORT_BASE, &r),
			0);
		assert_int_equal(ctl_route_name(p, &r, name, sizeof(name)), 0);
		strcat(name, ">extra");
		assert_int_equal(ctl_route_by_name(p, &d.flows[0], name, &r), -ENOENT);
	}
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

/* ice-probe's map JSON: the fields the controller uses; bad maps refused. */
static void test_pmap_parse(void **state)
{
	struct ctl_pmap m;

	assert_int_equal(
		ctl_pmap_parse(
			"{\"src\":\"10.1.0.1\",\"dst\":\"10.2.0.1\",\"ts_ms\":5,"
			"\"paths\":[{\"id\":0,\"path\":\"leaf1>spine1>leaf2\",\"ports\":[49152,"
			"49160]},{\"id\":1,\"path\":\"leaf1>spine2>leaf2\",\"ports\":[49153]}]}",
			&m),
		0);
	assert_int_equal(m.npaths, 2);
	assert_int_equal(m.ts_ms, 5);
	assert_int_equal(ctl_pmap_path_of(&m, 49160), 0);
	assert_int_equal(ctl_pmap_path_of(&m, 49153), 1);
	assert_int_equal(ctl_pmap_path_of(&m, 50000), -1);
	assert_int_equal(ctl_pmap_find(&m, "leaf1>spine2>leaf2"), 1);
	assert_int_equal(ctl_pmap_find(&m, "leaf1>spine3>leaf2"), -1);
	ctl_pmap_fini(&m);
	assert_int_equal(ctl_pmap_parse("not json", &m), -EINVAL);
	assert_int_equal(ctl_pmap_parse("{\"src\":\"10.1.0.1\",\"dst\":\"x\",\"paths\":[]}", &m),
			 -EINVAL);
	assert_int_equal(ctl_pmap_parse("{\"src\":\"10.1.0.1\",\"dst\":\"10.2.0.1\",\"paths\":["
					"{\"path\":\"a\",\"ports\":[70000]}]}",
					&m),
			 -EINVAL);
	assert_int_equal(m.npaths, 0);
}

/* ---- incremental, hysteresis ---------------------------------------------------------- */

static void test_incremental_keeps_old_flows(void **state)
{
	struct topo *t = fat_tree(4);
	struct ctl_planner *p = ctl_planner_new(t);
	struct ctl_plan_opts o;
	struct ctl_demand d;
	int32_t old[20];

	ctl_demand_init(&d, CTL_UNIT_BPS);
	random_demand(&d, t, 20);
	assert_int_equal(ctl_plan_paths(p, &d, NULL, NULL), 0);
	for (int i = 0; i < 20; i++)
		old[i] = d.flows[i].path.idx;
	random_demand(&d, t, 20);
	ctl_plan_opts_default(&o);
	o.mode = CTL_PLAN_INCREMENTAL;
	assert_int_equal(ctl_plan_paths(p, &d, &o, NULL), 0);
	for (int i = 0; i < 20; i++)
		assert_int_equal(d.flows[i].path.idx, old[i]);
	for (size_t i = 20; i < d.n; i++)
		assert_true(d.flows[i].path.idx >= 0);
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

static void test_hysteresis(void **state)
{
	struct topo *t = leaf_spine(2, 2, 4); /* 200 Mbit/s uplinks */
	struct ctl_planner *p = ctl_planner_new(t);
	struct ctl_plan_opts o;
	struct ctl_plan_stats st;
	struct ctl_demand d;

	ctl_demand_init(&d, CTL_UNIT_BPS);
	add_flow(&d, t, 0, 4, 100 * MBIT, 1);
	add_flow(&d, t, 1, 5, 96 * MBIT, 2);
	add_flow(&d, t, 2, 6, 8 * MBIT, 3);
	/* current: A and C on the first spine (108), B on the second (96);
	 * best: 100 / 104, a gain of 3.7% */
	d.flows[0].path.idx = 0;
	d.flows[1].path.idx = 1;
	d.flows[2].path.idx = 0;
	ctl_plan_opts_default(&o);
	o.mode = CTL_PLAN_REOPT; /* hysteresis 5% */
	assert_int_equal(ctl_plan_paths(p, &d, &o, &st), 0);
	assert_int_equal(st.moved, 0);
	assert_int_equal(d.flows[2].path.idx, 0);
	assert_true(st.max_util > 0.539 && st.max_util < 0.541);
	o.hysteresis = 0.01;
	assert_int_equal(ctl_plan_paths(p, &d, &o, &st), 0);
	assert_int_equal(st.moved, 1);
	assert_int_equal(d.flows[2].path.idx, 1);
	assert_true(st.max_util > 0.519 && st.max_util < 0.521);
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

/* ---- rates -------------------------------------------------------------------------- */

/* One switch, four hosts; h1's link is 50 Mbit/s, the others 200. */
static const char star[] = "name: star\n"
			   "defaults: {link_rate: 200mbit}\n"
			   "switches: [{name: sw, tier: 1}]\n"
			   "hosts: [{name: h1}, {name: h2}, {name: h3}, {name: h4}]\n"
			   "links:\n"
			   "  - {a: h1, b: sw, rate: 50mbit}\n"
			   "  - {a: h2, b: sw}\n"
			   "  - {a: h3, b: sw}\n"
			   "  - {a: h4, b: sw}\n";

static void test_max_min_rates(void **state)
{
	struct ice_cfg_err err;
	struct topo *t = topo_load_string("star", star, strlen(star), &err);
	struct ctl_planner *p;
	struct ctl_demand d;

	assert_non_null(t);
	p = ctl_planner_new(t);
	assert_non_null(p);
	/* three flows into h4 share its 200 Mbit/s link equally */
	ctl_demand_init(&d, CTL_UNIT_BYTES);
	add_flow(&d, t, 1, 3, 1000000, 1);
	add_flow(&d, t, 2, 3, 1000000, 2);
	add_flow(&d, t, 1, 0, 1000000, 3); /* into h1 (50 Mbit/s): its own bottleneck */
	assert_int_equal(ctl_plan_paths(p, &d, NULL, NULL), 0);
	assert_int_equal(ctl_plan_rates(p, &d, 0, 0.95), 0);
	/* h1's 50 Mbit/s link holds the flow into it at 50 (a private
	 * bottleneck); the two flows into h4 then split its 200: 100 each */
	assert_true(d.flows[2].target_bps > 49.9e6 && d.flows[2].target_bps < 50.1e6);
	assert_true(d.flows[0].target_bps > 99.9e6 && d.flows[0].target_bps < 100.1e6);
	assert_true(d.flows[1].target_bps > 99.9e6 && d.flows[1].target_bps < 100.1e6);
	/* start rates keep 5% headroom */
	assert_true(d.flows[2].start_bps > 47.4e6 && d.flows[2].start_bps < 47.6e6);
	assert_true(d.flows[0].start_bps > 94.9e6 && d.flows[0].start_bps < 95.1e6);
	ctl_demand_fini(&d);

	/* three flows, one shared link: equal split */
	ctl_demand_init(&d, CTL_UNIT_BYTES);
	add_flow(&d, t, 0, 3, 1000, 1);
	add_flow(&d, t, 1, 3, 1000, 2);
	add_flow(&d, t, 2, 3, 1000, 3);
	assert_int_equal(ctl_plan_paths(p, &d, NULL, NULL), 0);
	assert_int_equal(ctl_plan_rates(p, &d, 0, 1.0), 0);
	/* h1's flow is limited by its 50 Mbit/s link; the other two share the rest */
	assert_true(d.flows[0].target_bps > 49.9e6 && d.flows[0].target_bps < 50.1e6);
	assert_true(d.flows[1].target_bps > 74.9e6 && d.flows[1].target_bps < 75.1e6);
	assert_true(d.flows[2].target_bps > 74.9e6 && d.flows[2].target_bps < 75.1e6);
	ctl_demand_fini(&d);

	ctl_demand_init(&d, CTL_UNIT_BYTES);
	add_flow(&d, t, 1, 3, 1000, 1);
	add_flow(&d, t, 2, 3, 1000, 2);
	add_flow(&d, t, 2, 3, 1000, 3);
	assert_int_equal(ctl_plan_paths(p, &d, NULL, NULL), 0);
	assert_int_equal(ctl_plan_rates(p, &d, 0, 1.0), 0);
	for (int i = 0; i < 3; i++)
		assert_true(d.flows[i].target_bps > 66.6e6 && d.flows[i].target_bps < 66.7e6);
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

/* ---- demand of collectives ------------------------------------------------------------ */

static void test_collective_demand(void **state)
{
	struct topo *t = leaf_spine(2, 2, 4);
	uint32_t nics[4];
	struct ctl_demand d;

	for (int i = 0; i < 4; i++)
		nics[i] = topo_nic(t, (uint32_t)i * 2)->id;
	ctl_demand_init(&d, CTL_UNIT_BYTES);
	assert_int_equal(
		ctl_demand_add_collective(&d, t, CTL_COLL_ALL_REDUCE, 4000, nics, 4, 2, 7, 0, 0),
		0);
	assert_int_equal(d.n, 8);				       /* 4 connections x 2 QPs */
	assert_int_equal(d.flows[0].demand + d.flows[1].demand, 6000); /* 2 * 3/4 * 4000 */
	assert_int_equal(d.flows[7].dst_port, nics[0]);
	assert_int_not_equal(d.flows[0].lqpn, d.flows[1].lqpn);
	d.n = 0;
	assert_int_equal(
		ctl_demand_add_collective(&d, t, CTL_COLL_ALL_TO_ALL, 4000, nics, 4, 1, 7, 0, 0),
		0);
	assert_int_equal(d.n, 12);
	assert_int_equal(d.flows[0].demand, 1000);
	d.n = 0;
	assert_int_equal(
		ctl_demand_add_collective(&d, t, CTL_COLL_BROADCAST, 4000, nics, 4, 1, 7, 0, 0), 0);
	assert_int_equal(d.n, 3);
	assert_int_equal(d.flows[2].demand, 4000);
	/* the default port is rdma-core's formula */
	assert_int_equal(ice_roce_sport_default(0x11, 0x22),
			 (((0x11 * 0x22) & 0x3FFF) ^ (((0x11 * 0x22) & 0xFC000) >> 14)) | 0xC000);
	ctl_demand_fini(&d);
	topo_free(t);
}

/* ---- balanced colouring (Kempe chains) ---------------------------------------- */

static uint64_t lcg(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return *x >> 33;
}

static void shuffle(uint32_t *v, uint32_t n, uint64_t *x)
{
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(lcg(x) % (i + 1)), y = v[i];

		v[i] = v[j];
		v[j] = y;
	}
}

/* Plan d, check it is at its bound, and that planning again gives the same
 * routes (determinism). Returns the colouring's recolourings. */
static uint64_t plan_at_bound(struct ctl_planner *p, struct ctl_demand *d, double want_bound)
{
	struct ctl_plan_stats st;
	int32_t *idx = malloc(sizeof(int32_t) * (d->n + 1));

	assert_non_null(idx);
	assert_int_equal(ctl_plan_paths(p, d, NULL, &st), 0);
	assert_true(fabs(st.bound - want_bound) < 1e-6);
	/* (split demands round to the bit/s: within 1e-6) */
	assert_true(st.max_util >= st.bound - 1e-9);
	assert_true(st.max_util - st.bound < 1e-6);
	assert_true(fabs(ctl_max_util(p, d, 0) - st.max_util) < 1e-9);
	for (size_t i = 0; i < d->n; i++)
		idx[i] = d->flows[i].path.idx;
	assert_int_equal(ctl_plan_paths(p, d, NULL, &st), 0);
	for (size_t i = 0; i < d->n; i++)
		assert_int_equal(d->flows[i].path.idx, idx[i]);
	free(idx);
	return st.kempe_chains;
}

/*
 * Random permutations of line-rate flows on a 4-spine leaf-spine: each leaf
 * sends and receives at most 4 off-leaf flows, so one flow per link is
 * possible (König: the leaf-to-leaf multigraph is 4-edge-colourable) and the
 * bound is 1. Moves and swaps alone stop at 2 on some of these: relieving a
 * link needs a chain of recolourings.
 */
static void test_kempe_leaf_spine_permutation(void **state)
{
	struct topo *t = leaf_spine(4, 8, 4);
	struct ctl_planner *p = ctl_planner_new(t);
	uint32_t perm[32];
	uint64_t x = 12345, chains = 0;

	(void)state;
	assert_non_null(p);
	for (int rep = 0; rep < 40; rep++) {
		struct ctl_demand d;

		for (uint32_t i = 0; i < 32; i++)
			perm[i] = i;
		shuffle(perm, 32, &x);
		ctl_demand_init(&d, CTL_UNIT_BPS);
		for (uint32_t i = 0; i < 32; i++)
			if (perm[i] != i)
				add_flow(&d, t, i, perm[i], 200 * MBIT, 100 + i);
		chains += plan_at_bound(p, &d, 1.0);
		ctl_demand_fini(&d);
	}
	assert_true(chains > 0); /* the alternating paths did the work */
	ctl_planner_free(p);
	topo_free(t);
}

/* A hand case: three leaves of two hosts, two spines, a permutation where
 * every leaf sends two and receives two off-leaf flows (an odd cycle of
 * leaves): the colouring puts the two flows of each leaf on different
 * spines. */
static void test_kempe_hand_case(void **state)
{
	struct topo *t = leaf_spine(2, 3, 2); /* h0 h1 | h2 h3 | h4 h5 */
	struct ctl_planner *p = ctl_planner_new(t);
	struct ctl_demand d;
	/* every leaf sends two and receives two off-leaf flows */
	static const uint32_t fl[][2] = {{0, 2}, {1, 4}, {2, 5}, {3, 0}, {4, 1}, {5, 3}};

	(void)state;
	ctl_demand_init(&d, CTL_UNIT_BPS);
	for (uint32_t i = 0; i < 6; i++)
		add_flow(&d, t, fl[i][0], fl[i][1], 200 * MBIT, 10 + i);
	plan_at_bound(p, &d, 1.0);
	/* one flow per up-link: the two flows out of each leaf on different spines */
	for (uint32_t i = 0; i < 6; i += 2)
		assert_int_not_equal(spine_of(t, &d.flows[i].path),
				     spine_of(t, &d.flows[i + 1].path));
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

/* Fat-tree k = 8: random-placement rings with 1 and 3 QPs per connection,
 * and an all-to-all, planned to the bound (nested colouring: aggregation
 * switch per ToR, then core per aggregation switch). */
static void test_kempe_fat_tree_rings(void **state)
{
	struct topo *t = fat_tree(8);
	struct ctl_planner *p = ctl_planner_new(t);
	uint32_t nn = topo_nic_count(t), nics[128];
	uint64_t x = 99;

	(void)state;
	assert_int_equal(nn, 128);
	for (uint32_t i = 0; i < nn; i++)
		nics[i] = topo_nic(t, i)->id;
	for (int rep = 0; rep < 6; rep++) {
		struct ctl_demand d;
		uint32_t qps = rep % 2 ? 3 : 1;

		shuffle(nics, nn, &x);
		ctl_demand_init(&d, CTL_UNIT_BPS);
		/* each rank sends at line rate: 2(n-1)/n * bytes = 200 Mbit/s */
		assert_int_equal(ctl_demand_add_collective(&d, t, CTL_COLL_ALL_REDUCE,
							   200 * MBIT * nn / (2 * (nn - 1)) + 1,
							   nics, nn, qps, 1, 0, 0),
				 0);
		plan_at_bound(p, &d, ctl_bound(p, &d));
		assert_true(ctl_bound(p, &d) <= 1.0 + 1e-6);
		ctl_demand_fini(&d);
	}
	{
		struct ctl_demand d;

		shuffle(nics, nn, &x);
		ctl_demand_init(&d, CTL_UNIT_BPS);
		assert_int_equal(ctl_demand_add_collective(&d, t, CTL_COLL_ALL_TO_ALL,
							   200 * MBIT * 32 / 31, nics, 32, 1, 2, 0,
							   0),
				 0);
		plan_at_bound(p, &d, ctl_bound(p, &d));
		ctl_demand_fini(&d);
	}
	ctl_planner_free(p);
	topo_free(t);
}

/* The host NICs hold the max (each full: one flow across, one beside), so
 * either spine ties on it; load nobody planned cut spine A's uplink.
 * A re-optimisation moves the flow on A to B (the fabric's max, second
 * objective), unless the gain is under the hysteresis. */
/* A re-optimisation after a change of load moves the flows that have not
 * moved lately (CTL_FLOW_STICKY) when that does as well, and a sticky
 * flow when nothing else helps. */
static void plan_sticky(struct ctl_planner *p, struct ctl_demand *d, const int32_t *idx,
			uint8_t sticky, struct ctl_plan_stats *st)
{
	struct ctl_plan_opts o;

	ctl_plan_opts_default(&o);
	o.mode = CTL_PLAN_REOPT;
	for (uint32_t i = 0; i < d->n; i++) {
		d->flows[i].path = (struct ctl_route){.idx = idx[i]};
		d->flows[i].flags = i < 3 && (sticky & (1u << i)) ? CTL_FLOW_STICKY : 0;
	}
	assert_int_equal(ctl_plan_paths(p, d, &o, st), 0);
}

static void test_sticky_moves_others(void **state)
{
	struct topo *t = leaf_spine(2, 2, 3); /* h1-h3 on leaf1, h4-h6 on leaf2 */
	struct ctl_planner *p = ctl_planner_new(t);
	/* across on spine A, A, B; beside (one path) fills each NIC */
	const int32_t two_one[6] = {0, 0, 1, 0, 0, 0}, one_two[6] = {0, 1, 1, 0, 0, 0};
	struct ctl_plan_stats st;
	struct ctl_demand d;
	uint32_t a;

	(void)state;
	assert_non_null(p);
	ctl_demand_init(&d, CTL_UNIT_BPS);
	for (uint32_t h = 0; h < 3; h++)
		add_flow(&d, t, h, 3 + h, 50 * MBIT, 10 + h); /* across */
	for (uint32_t h = 0; h < 3; h++) /* beside: the NICs (200 Mbit/s) full */
		add_flow(&d, t, h, (h + 1) % 3, 150 * MBIT, 20 + h);
	plan_sticky(p, &d, two_one, 0, &st);
	assert_int_equal(st.moved, 0);
	a = d.flows[0].path.dlink[1]; /* leaf1 -> spine A */
	assert_int_equal(d.flows[1].path.dlink[1], a);

	/* 90 Mbit/s nobody planned on leaf1 -> A (100/110 there, under the
	 * NICs' 1.0): the fabric's tie-break moves one of A's two to B */
	assert_int_equal(ctl_planner_set_cap(p, a, 110e6), 0);
	plan_sticky(p, &d, two_one, 0, &st);
	assert_int_equal(st.moved, 1);
	assert_true(st.fabric_util > 0.499 && st.fabric_util < 0.501);
	/* flow 0 moved lately: flow 1 goes instead, as far */
	plan_sticky(p, &d, two_one, 1u << 0, &st);
	assert_int_equal(st.moved, 1);
	assert_int_equal(d.flows[0].path.dlink[1], a);
	assert_int_not_equal(d.flows[1].path.dlink[1], a);
	assert_true(st.fabric_util > 0.499 && st.fabric_util < 0.501);
	plan_sticky(p, &d, two_one, 1u << 1, &st);
	assert_int_equal(st.moved, 1);
	assert_int_equal(d.flows[1].path.dlink[1], a);
	assert_int_not_equal(d.flows[0].path.dlink[1], a);
	/* flow 0 alone on A and sticky: nothing else helps, so it moves */
	assert_int_equal(ctl_planner_set_cap(p, a, 45e6), 0);
	plan_sticky(p, &d, one_two, 1u << 0, &st);
	assert_int_equal(st.moved, 1);
	assert_int_not_equal(d.flows[0].path.dlink[1], a);
	/* every flow across sticky: the same 45 Mbit/s move both off A (over
	 * the NICs' max), 110 move none (the fabric's tie-break alone) */
	plan_sticky(p, &d, two_one, 7, &st);
	assert_int_equal(st.moved, 2);
	assert_true(st.max_util > 0.999 && st.max_util < 1.001);
	assert_int_equal(ctl_planner_set_cap(p, a, 110e6), 0);
	plan_sticky(p, &d, two_one, 7, &st);
	assert_int_equal(st.moved, 0);
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

static void test_tie_toward_room(void **state)
{
	struct topo *t = leaf_spine(2, 2, 2); /* h1 h2 on leaf1, h3 h4 on leaf2 */
	struct ctl_planner *p = ctl_planner_new(t);
	struct ctl_plan_opts o;
	struct ctl_plan_stats st;
	struct ctl_demand d;
	uint32_t a;

	assert_non_null(p);
	ctl_demand_init(&d, CTL_UNIT_BPS);
	add_flow(&d, t, 0, 2, 100 * MBIT, 1); /* h1 -> h3 across */
	add_flow(&d, t, 0, 1, 100 * MBIT, 2); /* h1 -> h2 beside: h1's NIC full */
	ctl_plan_opts_default(&o);
	o.mode = CTL_PLAN_REOPT; /* hysteresis 5% */
	/* nothing to gain: route 0 stays, and its uplink is spine A's */
	d.flows[0].path = (struct ctl_route){.idx = 0};
	d.flows[1].path = (struct ctl_route){.idx = 0};
	assert_int_equal(ctl_plan_paths(p, &d, &o, &st), 0);
	assert_int_equal(st.moved, 0);
	assert_int_equal(d.flows[0].path.idx, 0);
	a = d.flows[0].path.dlink[1];

	/* 90 Mbit/s unplanned on it: 100/110 there against 100/200 on B */
	assert_int_equal(ctl_planner_set_cap(p, a, 110e6), 0);
	d.flows[0].path = (struct ctl_route){.idx = 0};
	d.flows[1].path = (struct ctl_route){.idx = 0};
	assert_int_equal(ctl_plan_paths(p, &d, &o, &st), 0);
	assert_true(st.max_util > 0.999 && st.max_util < 1.001); /* h1's NIC, either way */
	assert_int_equal(st.moved, 1);
	assert_int_not_equal(d.flows[0].path.dlink[1], a);
	assert_true(st.fabric_util > 0.499 && st.fabric_util < 0.501);
	/* as it stands it stays */
	assert_int_equal(ctl_plan_paths(p, &d, &o, &st), 0);
	assert_int_equal(st.moved, 0);
	/* no tie-break (the daemon's periodic plans): it stays on A */
	d.flows[0].path = (struct ctl_route){.idx = 0};
	d.flows[1].path = (struct ctl_route){.idx = 0};
	o.no_tie = true;
	assert_int_equal(ctl_plan_paths(p, &d, &o, &st), 0);
	assert_int_equal(st.moved, 0);
	assert_int_equal(d.flows[0].path.dlink[1], a);
	o.no_tie = false;

	/* 5 Mbit/s: 100/195 against 100/200, a gain of 2.5%: no move */
	assert_int_equal(ctl_planner_set_cap(p, a, 195e6), 0);
	d.flows[0].path = (struct ctl_route){.idx = 0};
	d.flows[1].path = (struct ctl_route){.idx = 0};
	assert_int_equal(ctl_plan_paths(p, &d, &o, &st), 0);
	assert_int_equal(st.moved, 0);
	assert_int_equal(d.flows[0].path.dlink[1], a);
	assert_true(st.fabric_util > 0.512 && st.fabric_util < 0.514);

	/* nothing cut: three flows across placed on spine A (as unannounced
	 * QPs are, by index), the NICs full: a re-optimisation spreads them */
	assert_int_equal(ctl_planner_set_cap(p, a, 200e6), 0);
	ctl_demand_fini(&d);
	{
		struct topo *t3 = leaf_spine(2, 2, 3); /* h1-h3 on leaf1, h4-h6 on leaf2 */
		struct ctl_planner *p3 = ctl_planner_new(t3);
		uint32_t on_a = 0;

		assert_non_null(p3);
		ctl_demand_init(&d, CTL_UNIT_BPS);
		for (uint32_t h = 0; h < 3; h++) {
			add_flow(&d, t3, h, 3 + h, 50 * MBIT, 10 + h);	      /* across */
			add_flow(&d, t3, h, (h + 1) % 3, 150 * MBIT, 20 + h); /* beside */
		}
		for (uint32_t i = 0; i < d.n; i++)
			d.flows[i].path = (struct ctl_route){.idx = 0};
		o.mode = CTL_PLAN_REOPT;
		assert_int_equal(ctl_plan_paths(p3, &d, &o, &st), 0);
		assert_true(st.max_util > 0.999 && st.max_util < 1.001); /* the NICs */
		assert_int_equal(st.moved, 1);				 /* 3/0 -> 2/1 */
		assert_true(st.fabric_util > 0.499 && st.fabric_util < 0.501);
		for (uint32_t i = 0; i < d.n; i++)
			on_a += d.flows[i].path.nhops == 4 && d.flows[i].path.idx == 0;
		assert_int_equal(on_a, 2);
		/* the same with a little unplanned load on a link none of them
		 * crosses (the daemon's estimates are never all zero) */
		assert_int_equal(
			ctl_planner_set_cap(p3, 2 * t3->ports[topo_nic(t3, 5)->id].link, 190e6), 0);
		for (uint32_t i = 0; i < d.n; i++)
			d.flows[i].path = (struct ctl_route){.idx = 0};
		assert_int_equal(ctl_plan_paths(p3, &d, &o, &st), 0);
		assert_int_equal(st.moved, 1);
		ctl_demand_fini(&d);
		ctl_planner_free(p3);
		topo_free(t3);
	}
	ctl_demand_init(&d, CTL_UNIT_BPS);
	add_flow(&d, t, 0, 2, 100 * MBIT, 1);
	add_flow(&d, t, 0, 1, 100 * MBIT, 2);
	assert_int_equal(ctl_planner_set_cap(p, a, 195e6), 0);

	/* a fresh plan takes the room however small the gain */
	d.flows[0].path = (struct ctl_route){.idx = -1};
	d.flows[1].path = (struct ctl_route){.idx = -1};
	o.mode = CTL_PLAN_FRESH;
	assert_int_equal(ctl_plan_paths(p, &d, &o, &st), 0);
	assert_int_not_equal(d.flows[0].path.dlink[1], a);
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

/* Load nobody planned cuts a link's capacity: the targets share what it
 * leaves, DCQCN's ceiling (rp_max_rate in the host plan) is the share of
 * the full link, and where nothing was cut the ceiling is the target. */
static uint32_t plan_max_rate(const struct topo *t, const struct ctl_demand *d, uint32_t qpn)
{
	struct ice_host_plan *hps;
	uint32_t nh, mr = 0;

	assert_int_equal(ctl_host_plans_build(t, d, NULL, 1, 2000, 1000, &hps, &nh), 0);
	for (uint32_t h = 0; h < nh; h++)
		for (uint32_t i = 0; i < hps[h].n; i++)
			if (hps[h].entries[i].qpn == qpn)
				mr = hps[h].entries[i].dcqcn.rp_max_rate;
	ctl_host_plans_free(hps, nh);
	return mr;
}

static void test_ceilings(void **state)
{
	struct topo *t = leaf_spine(2, 2, 2); /* h1 h2 on leaf1, h3 h4 on leaf2 */
	struct ctl_planner *p = ctl_planner_new(t);
	double cap[64];
	struct ctl_demand d;
	uint32_t hot;

	assert_non_null(p);
	assert_true(2 * t->nlinks <= 64);
	for (uint32_t l = 0; l < 2 * t->nlinks; l++)
		cap[l] = (double)t->links[l / 2].rate_bps;
	/* one flow per spine; 90 Mbit/s nobody planned on flow 0's uplink */
	ctl_demand_init(&d, CTL_UNIT_BYTES);
	add_flow(&d, t, 0, 2, 1000000, 1);
	add_flow(&d, t, 1, 3, 1000000, 2);
	assert_int_equal(ctl_plan_paths(p, &d, NULL, NULL), 0);
	assert_int_not_equal(spine_of(t, &d.flows[0].path), spine_of(t, &d.flows[1].path));
	hot = d.flows[0].path.dlink[1];
	assert_int_equal(ctl_planner_set_cap(p, hot, 110e6), 0);
	assert_int_equal(ctl_plan_rates(p, &d, 0, 0.9), 0);
	assert_true(fabs(d.flows[0].target_bps - 110e6) < 1e3);
	assert_true(fabs(d.flows[0].start_bps - 99e6) < 1e3);
	assert_true(fabs(d.flows[1].target_bps - 200e6) < 1e3);
	/* before ctl_plan_ceilings the ceiling is the target */
	assert_int_equal(plan_max_rate(t, &d, 1), 110);
	assert_int_equal(ctl_plan_ceilings(p, &d, 0, cap), 0);
	assert_true(fabs(d.flows[0].max_bps - 200e6) < 1e3);
	assert_true(fabs(d.flows[0].target_bps - 110e6) < 1e3); /* kept */
	assert_true(fabs(d.flows[1].max_bps - 200e6) < 1e3);
	assert_int_equal(plan_max_rate(t, &d, 1), 200);
	assert_int_equal(plan_max_rate(t, &d, 2), 200);
	assert_true(ctl_planner_cap(p, hot) == 110e6); /* the planner's own caps back */
	ctl_demand_fini(&d);

	ctl_planner_free(p);
	topo_free(t);

	/* one spine: two planned flows share the cut uplink: 55 each of what
	 * is left, and no more than 100 each (their shares of the full link);
	 * on the downlink nothing was cut, and there the ceiling is the share */
	t = leaf_spine(1, 2, 2);
	p = ctl_planner_new(t);
	assert_non_null(p);
	assert_true(2 * t->nlinks <= 64);
	for (uint32_t l = 0; l < 2 * t->nlinks; l++)
		cap[l] = (double)t->links[l / 2].rate_bps;
	ctl_demand_init(&d, CTL_UNIT_BYTES);
	add_flow(&d, t, 0, 2, 1000000, 1);
	add_flow(&d, t, 1, 3, 1000000, 2);
	assert_int_equal(ctl_plan_paths(p, &d, NULL, NULL), 0);
	assert_int_equal(d.flows[0].path.dlink[1], d.flows[1].path.dlink[1]);
	assert_int_equal(ctl_plan_rates(p, &d, 0, 1.0), 0);
	assert_int_equal(ctl_plan_ceilings(p, &d, 0, cap), 0);
	for (int i = 0; i < 2; i++) {
		assert_true(fabs(d.flows[i].target_bps - 100e6) < 1e3);
		assert_true(fabs(d.flows[i].max_bps - 100e6) < 1e3);
		assert_int_equal(plan_max_rate(t, &d, (uint32_t)i + 1), 100);
	}
	assert_int_equal(ctl_planner_set_cap(p, d.flows[0].path.dlink[1], 110e6), 0);
	assert_int_equal(ctl_plan_rates(p, &d, 0, 1.0), 0);
	assert_int_equal(ctl_plan_ceilings(p, &d, 0, cap), 0);
	for (int i = 0; i < 2; i++) {
		assert_true(fabs(d.flows[i].target_bps - 55e6) < 1e3);
		assert_true(fabs(d.flows[i].max_bps - 100e6) < 1e3);
		assert_int_equal(plan_max_rate(t, &d, (uint32_t)i + 1), 100);
	}
	cap[0] = 0;
	assert_int_equal(ctl_plan_ceilings(p, &d, 0, cap), -EINVAL);
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

/* Unequal demands: the colouring is only a start there; the plan is still
 * never below the bound and never worse than plain ECMP. */
static void test_kempe_weighted_never_worse(void **state)
{
	struct topo *t = fat_tree(4);
	struct ctl_planner *p = ctl_planner_new(t);
	uint64_t x = 7;

	(void)state;
	for (int rep = 0; rep < 20; rep++) {
		struct ctl_plan_stats st;
		struct ctl_demand d;
		double ecmp;

		ctl_demand_init(&d, CTL_UNIT_BPS);
		for (uint32_t i = 0; i < 24; i++) {
			uint32_t s = (uint32_t)(lcg(&x) % 16), dn = (uint32_t)(lcg(&x) % 16);

			if (s != dn)
				add_flow(&d, t, s, dn, (1 + lcg(&x) % 8) * 25 * MBIT, i);
		}
		assert_int_equal(ctl_plan_ecmp(ctl_pathmap_model(p), &d), 0);
		ecmp = ctl_max_util(p, &d, 1);
		assert_int_equal(ctl_plan_paths(p, &d, NULL, &st), 0);
		assert_true(st.max_util <= ecmp + 1e-9);
		assert_true(st.max_util >= st.bound - 1e-9);
		ctl_demand_fini(&d);
	}
	ctl_planner_free(p);
	topo_free(t);
}

/* A demand naming a port that is not a NIC of the topology (a job naming
 * an unknown host): ctl_plan_paths refuses the whole demand with -EINVAL
 * before planning, so no flow gets a route (no partial plan), in every mode. */
static void test_unknown_nic_no_partial_plan(void **state)
{
	struct topo *t = fat_tree(4);
	struct ctl_planner *p = ctl_planner_new(t);
	enum ctl_plan_mode modes[] = {CTL_PLAN_FRESH, CTL_PLAN_INCREMENTAL, CTL_PLAN_REOPT};
	struct ctl_demand d;

	(void)state;
	assert_non_null(p);
	for (uint32_t m = 0; m < 3; m++) {
		struct ctl_plan_opts o;
		struct ctl_flow bad = {0};

		ctl_demand_init(&d, CTL_UNIT_BPS);
		for (uint32_t i = 0; i < 8; i++)
			add_flow(&d, t, i, (i + 5) % 16, 200 * MBIT, 100 + i);
		bad = d.flows[3];
		bad.dst_port = t->nports + 7; /* no such port */
		assert_int_equal(ctl_demand_add(&d, &bad), 0);
		bad.dst_port = t->links[t->nlinks - 1].b; /* a switch port, not a NIC */
		assert_int_equal(ctl_demand_add(&d, &bad), 0);
		ctl_plan_opts_default(&o);
		o.mode = modes[m];
		assert_int_equal(ctl_plan_paths(p, &d, &o, NULL), -EINVAL);
		for (size_t i = 0; i < d.n; i++)
			assert_int_equal(d.flows[i].path.idx, -1);
		ctl_demand_fini(&d);
	}
	ctl_planner_free(p);
	topo_free(t);
}

/* ---- incremental plans at size (issue 22) -------------------------------------------- */

/* The cut bound: hosts at 200 Mbit/s, fabric links at 50 (a ToR's two
 * up-links: 100; a pod's four: 200). Asked twice, the same answer (the
 * planner keeps the groups and clears its scratch). */
static void test_bound_cuts(void **state)
{
	struct topo_gen_opts go;
	struct topo *t;
	struct ctl_planner *p;
	struct ctl_demand d;

	topo_gen_opts_default(&go);
	go.k = 4;
	go.host_rate_bps = 200 * MBIT;
	go.fabric_rate_bps = 50 * MBIT;
	t = topo_gen_fat_tree(&go);
	assert_non_null(t);
	p = ctl_planner_new(t);
	assert_non_null(p);
	/* NICs 0, 1 on the first ToR of pod 0, 2, 3 on its second; 4.. pod 1 */
	assert_int_equal(t->ports[t->ports[topo_nic(t, 0)->id].peer].node,
			 t->ports[t->ports[topo_nic(t, 1)->id].peer].node);
	ctl_demand_init(&d, CTL_UNIT_BPS);
	add_flow(&d, t, 0, 4, 80 * MBIT, 1); /* NIC 0.4, ToR 0.8, pod 0.4 */
	assert_true(fabs(ctl_bound(p, &d) - 0.8) < 1e-9);
	assert_true(fabs(ctl_bound(p, &d) - 0.8) < 1e-9);
	add_flow(&d, t, 1, 8, 80 * MBIT, 2); /* the ToR's cut: 160 / 100 */
	add_flow(&d, t, 0, 1, 80 * MBIT, 3); /* inside the ToR: NIC 0's 160 / 200 only */
	assert_true(fabs(ctl_bound(p, &d) - 1.6) < 1e-9);
	d.n = 1;
	add_flow(&d, t, 0, 2, 80 * MBIT, 4); /* inside the pod: NIC 0.8, ToR 160 / 100 */
	assert_true(fabs(ctl_bound(p, &d) - 1.6) < 1e-9);
	d.n = 1;
	assert_true(fabs(ctl_bound(p, &d) - 0.8) < 1e-9);
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

/* A full fat-tree k = 4 (two 6-host rings, every link carrying one flow
 * after the fresh plan, at the bound), then a 4-host ring arrives: planned
 * incrementally with the kept routes current, as the daemon and ice-sim
 * do. The kept flows keep route and links; the search stops at a local
 * optimum (no sideways kicks, which would count as moves, no time budget
 * spent): no single arriving flow moved to another of its routes lowers
 * the max utilisation. */
static void test_incremental_local_optimum(void **state)
{
	struct topo *t = fat_tree(4);
	struct ctl_planner *p = ctl_planner_new(t);
	struct ctl_route kept[12];
	struct ctl_plan_opts o;
	struct ctl_plan_stats st;
	struct ctl_demand d;
	uint32_t nics[16];
	uint64_t x = 7;
	size_t nkept;

	for (uint32_t i = 0; i < 16; i++)
		nics[i] = topo_nic(t, i)->id;
	shuffle(nics, 16, &x);
	ctl_demand_init(&d, CTL_UNIT_BPS);
	assert_int_equal(ctl_demand_add_collective(&d, t, CTL_COLL_SEND_RECV, 200 * MBIT, nics, 6,
						   1, 1, 0, 0),
			 0);
	assert_int_equal(ctl_demand_add_collective(&d, t, CTL_COLL_SEND_RECV, 200 * MBIT, nics + 6,
						   6, 1, 2, 0, 0x100),
			 0);
	nkept = d.n;
	ctl_plan_opts_default(&o);
	assert_int_equal(ctl_plan_paths(p, &d, &o, &st), 0);
	assert_true(st.max_util <= st.bound + 1e-9);
	for (size_t i = 0; i < nkept; i++)
		kept[i] = d.flows[i].path;
	assert_int_equal(ctl_demand_add_collective(&d, t, CTL_COLL_SEND_RECV, 200 * MBIT, nics + 12,
						   4, 1, 3, 0, 0x200),
			 0);
	o.mode = CTL_PLAN_INCREMENTAL;
	o.routes_current = true;
	o.search_budget_s = 30;
	assert_int_equal(ctl_plan_paths(p, &d, &o, &st), 0);
	assert_false(st.budget_hit);
	assert_int_equal(st.moves, 0);
	for (size_t i = 0; i < nkept; i++) {
		assert_int_equal(d.flows[i].path.idx, kept[i].idx);
		assert_memory_equal(d.flows[i].path.dlink, kept[i].dlink,
				    kept[i].nhops * sizeof(uint32_t));
	}
	assert_true(fabs(ctl_max_util(p, &d, 0) - st.max_util) < 1e-9);
	for (size_t i = nkept; i < d.n; i++) {
		struct topo_path tp[16];
		struct ctl_flow *f = &d.flows[i];
		int np = topo_paths(t, f->src_port, f->dst_port, tp, 16);
		struct ctl_route mine = f->path;

		assert_true(np > 0);
		for (int k = 0; k < np; k++) {
			f->path.idx = k;
			f->path.nhops = tp[k].nhops;
			for (uint32_t h = 0; h < tp[k].nhops; h++) {
				uint32_t l = t->ports[tp[k].egress[h]].link;

				f->path.dlink[h] =
					2 * l + (t->links[l].a == tp[k].egress[h] ? 0 : 1);
			}
			assert_true(ctl_max_util(p, &d, 0) >= st.max_util - 1e-9);
		}
		f->path = mine;
	}
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

/* Rates of the flows connected to new ones only: the new flows and those
 * sharing links with them (transitively) get the full filling's rates; the
 * others keep theirs (a poison value here), and the full filling gives
 * them the rates they had: the parts are independent. With few flows on
 * a k = 8 fat-tree some are not connected, with many all are. */
static void test_rates_changed(void **state)
{
	struct topo *t = fat_tree(8);
	struct ctl_planner *p = ctl_planner_new(t);
	struct ctl_plan_opts o;
	uint32_t sizes[] = {6, 40, 300};

	for (uint32_t s = 0; s < 3; s++) {
		struct ctl_demand d;
		double had[300], inc[310];
		bool changed[310] = {false};
		uint32_t kept = 0;
		size_t n0;

		ctl_demand_init(&d, CTL_UNIT_BPS);
		random_demand(&d, t, sizes[s]);
		n0 = d.n;
		assert_int_equal(ctl_plan_paths(p, &d, NULL, NULL), 0);
		assert_int_equal(ctl_plan_rates(p, &d, 0, 1.0), 0);
		for (size_t i = 0; i < n0; i++)
			had[i] = d.flows[i].target_bps;
		random_demand(&d, t, 3);
		ctl_plan_opts_default(&o);
		o.mode = CTL_PLAN_INCREMENTAL;
		o.routes_current = true;
		assert_int_equal(ctl_plan_paths(p, &d, &o, NULL), 0);
		for (size_t i = 0; i < d.n; i++) {
			changed[i] = i >= n0;
			d.flows[i].start_bps = d.flows[i].target_bps = -1;
		}
		assert_int_equal(ctl_plan_rates_changed(p, &d, 0, 1.0, changed), 0);
		for (size_t i = 0; i < d.n; i++)
			inc[i] = d.flows[i].target_bps;
		assert_int_equal(ctl_plan_rates(p, &d, 0, 1.0), 0);
		for (size_t i = 0; i < d.n; i++) {
			double full = d.flows[i].target_bps;

			if (inc[i] == -1) { /* not connected: kept, and still exact */
				assert_true(i < n0);
				assert_true(fabs(full - had[i]) <= 1e-9 * full);
				kept++;
			} else {
				assert_true(fabs(inc[i] - full) <= 1e-9 * full);
			}
		}
		if (s == 0)
			assert_true(kept > 0);
		ctl_demand_fini(&d);
	}
	ctl_planner_free(p);
	topo_free(t);
}

static bool shares_link(const struct ctl_route *a, const struct ctl_route *b)
{
	for (uint32_t h = 0; h < a->nhops; h++)
		for (uint32_t k = 0; k < b->nhops; k++)
			if (a->dlink[h] == b->dlink[k])
				return true;
	return false;
}

/* Rates from a fresh planner's full filling equal ours (target_bps). */
static void assert_rates_full(const struct topo *t, struct ctl_demand *d)
{
	struct ctl_planner *q = ctl_planner_new(t);
	double *mine = malloc(sizeof(double) * (d->n + 1));

	assert_non_null(q);
	assert_non_null(mine);
	for (size_t i = 0; i < d->n; i++)
		mine[i] = d->flows[i].target_bps;
	assert_int_equal(ctl_plan_rates(q, d, 0, 1.0), 0);
	for (size_t i = 0; i < d->n; i++)
		assert_true(fabs(mine[i] - d->flows[i].target_bps) <=
			    1e-9 * d->flows[i].target_bps);
	free(mine);
	ctl_planner_free(q);
}

/* The link -> flows index the planner keeps between fillings: after
 * arrivals (incremental plans), moves (a flow put on another of its routes,
 * it and the flows on its old links marked changed) and departures (fewer
 * flows: rebuilt), it lists every
 * flow on every link of its route (ctl_rate_index_check), and the
 * incremental rates are a fresh planner's full filling. */
static void test_rate_index_kept(void **state)
{
	struct topo *t = fat_tree(8);
	struct ctl_planner *p = ctl_planner_new(t);
	struct ctl_plan_opts o;
	struct ctl_demand d;
	bool changed[400];

	ctl_demand_init(&d, CTL_UNIT_BPS);
	assert_int_equal(ctl_rate_index_check(p, &d, 0), -ENOENT);
	random_demand(&d, t, 60);
	assert_int_equal(ctl_plan_paths(p, &d, NULL, NULL), 0);
	assert_int_equal(ctl_plan_rates(p, &d, 0, 1.0), 0);
	assert_int_equal(ctl_rate_index_check(p, &d, 0), 0);
	ctl_plan_opts_default(&o);
	o.mode = CTL_PLAN_INCREMENTAL;
	o.routes_current = true;
	for (uint32_t round = 0; round < 12; round++) {
		size_t n0 = d.n;

		memset(changed, 0, sizeof(changed));
		if (round % 3 == 0) { /* arrivals */
			random_demand(&d, t, 1 + rnd(20));
			assert_int_equal(ctl_plan_paths(p, &d, &o, NULL), 0);
			for (size_t i = n0; i < d.n; i++)
				changed[i] = true;
		} else if (round % 3 == 1) { /* moves: to the route a port takes; the
					      * flows on the old route's links marked
					      * (ctl_plan_rates_changed's contract) */
			for (uint32_t k = 0; k < 6; k++) {
				uint32_t i = rnd((uint32_t)d.n);
				struct ctl_flow *f = &d.flows[i];
				struct ctl_route old = f->path;

				assert_int_equal(ctl_route_of_sport(ctl_pathmap_model(p), f,
								    (uint16_t)(49152 + rnd(16384)),
								    &f->path),
						 0);
				changed[i] = true;
				for (size_t j = 0; j < d.n; j++)
					changed[j] |= shares_link(&d.flows[j].path, &old);
			}
		} else { /* departures: the last few leave, their links' flows
			  * marked (fewer flows than indexed: rebuilt) */
			d.n -= 1 + rnd(5);
			for (size_t i = 0; i < d.n; i++)
				for (size_t j = d.n; j < n0; j++)
					changed[i] |=
						shares_link(&d.flows[i].path, &d.flows[j].path);
		}
		assert_int_equal(ctl_plan_rates_changed(p, &d, 0, 1.0, changed), 0);
		assert_int_equal(ctl_rate_index_check(p, &d, 0), 0);
		assert_rates_full(t, &d);
		assert_true(d.n < 400);
	}
	/* a flow's route changed behind the index's back: the check sees it */
	d.flows[0].path.dlink[1] ^= 1;
	assert_int_equal(ctl_rate_index_check(p, &d, 0), -EINVAL);
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

/* The bound kept with its flows: after arrivals (added to), a changed
 * demand and departures (counted again) it is a fresh planner's. */
static void test_bound_kept(void **state)
{
	struct topo *t = fat_tree(8);
	struct ctl_planner *p = ctl_planner_new(t);
	struct ctl_demand d;

	ctl_demand_init(&d, CTL_UNIT_BPS);
	for (uint32_t round = 0; round < 20; round++) {
		struct ctl_planner *q = ctl_planner_new(t);

		if (round % 4 == 3 && d.n > 4)
			d.n -= 1 + rnd(3); /* departures */
		else if (round % 4 == 2 && d.n > 0)
			d.flows[rnd((uint32_t)d.n)].demand += 7 * MBIT; /* a demand changed */
		else
			random_demand(&d, t, 1 + rnd(30)); /* arrivals */
		assert_true(fabs(ctl_bound(p, &d) - ctl_bound(q, &d)) <= 1e-12);
		ctl_planner_free(q);
	}
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_flows_two_spines),
		cmocka_unit_test(test_four_flows_two_per_spine),
		cmocka_unit_test(test_bound_is_a_lower_bound),
		cmocka_unit_test(test_never_worse_than_ecmp),
		cmocka_unit_test(test_routes_match_topo),
		cmocka_unit_test(test_sports_take_the_path),
		cmocka_unit_test(test_route_names),
		cmocka_unit_test(test_pmap_parse),
		cmocka_unit_test(test_incremental_keeps_old_flows),
		cmocka_unit_test(test_hysteresis),
		cmocka_unit_test(test_max_min_rates),
		cmocka_unit_test(test_collective_demand),
		cmocka_unit_test(test_kempe_leaf_spine_permutation),
		cmocka_unit_test(test_kempe_hand_case),
		cmocka_unit_test(test_kempe_fat_tree_rings),
		cmocka_unit_test(test_kempe_weighted_never_worse),
		cmocka_unit_test(test_unknown_nic_no_partial_plan),
		cmocka_unit_test(test_bound_cuts),
		cmocka_unit_test(test_incremental_local_optimum),
		cmocka_unit_test(test_rates_changed),
		cmocka_unit_test(test_ceilings),
		cmocka_unit_test(test_tie_toward_room),
		cmocka_unit_test(test_sticky_moves_others),
		cmocka_unit_test(test_rate_index_kept),
		cmocka_unit_test(test_bound_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
