// SPDX-License-Identifier: Apache-2.0
/*
 * controller feedback: switch port records into per directed link load and
 * queue state (rates over dt_ms, a port that is not in the topology,
 * counters that go back, gaps, stale readings: counted, never a crash, the
 * link demand-only); the unplanned load (up at once to what lasted two
 * intervals, down smoothed) off the capacity; and
 * the planner with measured background load: a loaded link is avoided, a
 * move that does not pay is not made, rates fit the capacity left.
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
#include "ctl_telem.h"

#define MBIT 1000000ull

static struct topo *leaf_spine(void)
{
	struct topo_gen_opts o;
	struct topo *t;

	topo_gen_opts_default(&o); /* 200 Mbit/s everywhere */
	o.spines = 2;
	o.leaves = 2;
	o.hosts_per_leaf = 2; /* h1 h2 on leaf1, h3 h4 on leaf2 */
	t = topo_gen_leaf_spine(&o);
	assert_non_null(t);
	return t;
}

/* A reading: seq, ts, dt, octets, marks, avg queue (strings as in Redis). */
static struct ctl_telem_rec rec(uint64_t seq, uint64_t ts, double dt, uint64_t octets,
				uint64_t marks, double avgq)
{
	char v[CTL_TF_N][32];
	const char *p[CTL_TF_N];
	struct ctl_telem_rec r;

	snprintf(v[CTL_TF_SEQ], 32, "%llu", (unsigned long long)seq);
	snprintf(v[CTL_TF_TS], 32, "%llu", (unsigned long long)ts);
	snprintf(v[CTL_TF_DT], 32, "%.3f", dt);
	snprintf(v[CTL_TF_OCTETS], 32, "%llu", (unsigned long long)octets);
	snprintf(v[CTL_TF_MARKS], 32, "%llu", (unsigned long long)marks);
	snprintf(v[CTL_TF_AVGQ], 32, "%.1f", avgq);
	snprintf(v[CTL_TF_OPER], 32, "UP");
	snprintf(v[CTL_TF_RESETS], 32, "0");
	for (int i = 0; i < CTL_TF_N; i++)
		p[i] = v[i];
	assert_int_equal(ctl_telem_rec_parse(&r, p), 0);
	return r;
}

static void test_parse(void **state)
{
	const char *ok[CTL_TF_N] = {"7", "1000", "100.5", "12345", "3", "1500.0", "UP", "0"};
	const char *bare[CTL_TF_N] = {"7", "1000", "0", NULL, NULL, NULL, "DOWN", "0"};
	const char *noseq[CTL_TF_N] = {NULL, "1000", "100", "1", "0", "0", "UP", "0"};
	const char *junk[CTL_TF_N] = {"7", "1000", "100", "12x", "0", "0", "UP", "0"};
	const char *neg[CTL_TF_N] = {"7", "1000", "100", "-5", "0", "0", "UP", "0"};
	struct ctl_telem_rec r;

	assert_int_equal(ctl_telem_rec_parse(&r, ok), 0);
	assert_int_equal(r.seq, 7);
	assert_int_equal(r.octets, 12345);
	assert_int_equal(r.marks, 3);
	assert_true(r.has_octets && r.has_marks && r.has_avgq);
	assert_true(r.dt_ms > 100.4 && r.dt_ms < 100.6);
	assert_int_equal(r.oper, 1);
	assert_int_equal(ctl_telem_rec_parse(&r, bare), 0); /* a port without the model */
	assert_false(r.has_octets);
	assert_int_equal(r.oper, 0);
	assert_int_equal(ctl_telem_rec_parse(&r, noseq), -EINVAL);
	assert_int_equal(ctl_telem_rec_parse(&r, junk), -EINVAL);
	assert_int_equal(ctl_telem_rec_parse(&r, neg), -EINVAL);
}

static void test_port_to_link(void **state)
{
	struct topo *t = leaf_spine();
	uint32_t up, down;
	const struct topo_link *l;

	assert_int_equal(ctl_telem_dlink(t, "leaf1", "spine1", &up), 0);
	assert_int_equal(ctl_telem_dlink(t, "spine1", "leaf1", &down), 0);
	assert_int_equal(up / 2, down / 2); /* one link, both directions */
	assert_int_not_equal(up, down);
	l = &t->links[up / 2];
	/* up: from the lower tier (a), leaf1 */
	assert_string_equal(t->nodes[t->ports[up & 1 ? l->b : l->a].node].name, "leaf1");
	assert_int_equal(ctl_telem_dlink(t, "leaf1", "nosuch", &up), -ENOENT);
	assert_int_equal(ctl_telem_dlink(t, "nosuch", "spine1", &up), -ENOENT);
	assert_int_equal(ctl_telem_dlink(t, "h1", "eth0", &up), -ENOENT); /* hosts: no */
	topo_free(t);
}

static void test_rates_and_bad_input(void **state)
{
	struct topo *t = leaf_spine();
	struct ctl_telem tm;
	struct ctl_telem_rec r;
	uint32_t dl;

	assert_int_equal(ctl_telem_init(&tm, t), 0);
	assert_int_equal(ctl_telem_dlink(t, "leaf1", "spine1", &dl), 0);
	r = rec(10, 1000, 0, 1000000, 0, 0);
	assert_int_equal(ctl_telem_update(&tm, "leaf1", "spine1", &r, 1000), 0); /* first */
	assert_int_equal(tm.dl[dl].state, CTL_TL_NONE);
	r = rec(11, 1100, 100, 2250000, 0, 0); /* 1.25 MB in 100 ms */
	assert_int_equal(ctl_telem_update(&tm, "leaf1", "spine1", &r, 1100), 1);
	assert_int_equal(tm.dl[dl].state, CTL_TL_OK);
	assert_true(tm.dl[dl].bytes_s > 12.49e6 && tm.dl[dl].bytes_s < 12.51e6);
	assert_int_equal(ctl_telem_update(&tm, "leaf1", "spine1", &r, 1150), 0); /* same seq */
	/* a port the topology does not have: counted, ignored, once per name */
	assert_int_equal(ctl_telem_update(&tm, "leaf1", "spine9", &r, 1150), -ENOENT);
	assert_int_equal(ctl_telem_update(&tm, "leaf1", "spine9", &r, 1150), -ENOENT);
	assert_int_equal(tm.unknown_ports, 2);
	assert_int_equal(tm.nunknown, 1);
	/* a reading missed (the reader ran late): measured over the span */
	r = rec(13, 1300, 100, 3250000, 0, 0);
	assert_int_equal(ctl_telem_update(&tm, "leaf1", "spine1", &r, 1300), 1);
	assert_true(tm.dl[dl].bytes_s > 4.99e6 && tm.dl[dl].bytes_s < 5.01e6);
	assert_int_equal(tm.skipped, 1);
	/* a gap: not measured, demand-only; measured again on the next reading */
	r = rec(20, 2000, 100, 4000000, 0, 0);
	assert_int_equal(ctl_telem_update(&tm, "leaf1", "spine1", &r, 2000), -EAGAIN);
	assert_int_equal(tm.dl[dl].state, CTL_TL_GAP);
	assert_int_equal(tm.gaps, 1);
	r = rec(21, 2100, 100, 4100000, 0, 0);
	assert_int_equal(ctl_telem_update(&tm, "leaf1", "spine1", &r, 2100), 1);
	assert_true(tm.dl[dl].bytes_s > 0.99e6 && tm.dl[dl].bytes_s < 1.01e6);
	/* counters go back (the switch reloaded): the same */
	r = rec(22, 2200, 100, 5000, 0, 0);
	assert_int_equal(ctl_telem_update(&tm, "leaf1", "spine1", &r, 2200), -ERANGE);
	assert_int_equal(tm.dl[dl].state, CTL_TL_RESET);
	assert_int_equal(tm.backwards, 1);
	r = rec(23, 2300, 100, 105000, 0, 0);
	assert_int_equal(ctl_telem_update(&tm, "leaf1", "spine1", &r, 2300), 1);
	assert_true(tm.dl[dl].bytes_s > 0.99e6 && tm.dl[dl].bytes_s < 1.01e6);
	/* readings stop: stale after stale_ms */
	ctl_telem_expire(&tm, 2300 + 500);
	assert_int_equal(tm.dl[dl].state, CTL_TL_OK);
	ctl_telem_expire(&tm, 2300 + tm.stale_ms);
	assert_int_equal(tm.dl[dl].state, CTL_TL_STALE);
	assert_int_equal(tm.stale, 1);
	ctl_telem_fini(&tm);
	topo_free(t);
}

/* One more 100 ms interval of 20 MB/s on leaf1 -> spine1 (reading i),
 * then the feedback with known. */
static void unplanned_after(struct ctl_telem *tm, uint32_t *oct, int i, const double *known)
{
	struct ctl_telem_rec r;

	*oct += 2000000;
	r = rec((uint64_t)i, 100 * (uint64_t)i, 100, *oct, 0, 0);
	ctl_telem_update(tm, "leaf1", "spine1", &r, 100 * (uint64_t)i);
	ctl_telem_feedback(tm, known);
}

static void test_unplanned_and_capacity(void **state)
{
	struct topo *t = leaf_spine();
	struct ctl_telem tm;
	struct ctl_telem_rec r;
	double *known;
	uint32_t dl, oct = 0;

	assert_int_equal(ctl_telem_init(&tm, t), 0);
	known = calloc(tm.ndl, sizeof(double));
	assert_non_null(known);
	assert_int_equal(ctl_telem_dlink(t, "leaf1", "spine1", &dl), 0);
	r = rec(1, 100, 0, 0, 0, 0);
	ctl_telem_update(&tm, "leaf1", "spine1", &r, 100);
	/* 20 MB/s measured (160 Mbit/s), 5 MB/s of it the controller's own */
	known[dl] = 5e6;
	for (int i = 2; i < 12; i++) {
		oct += 2000000;
		r = rec(i, 100 * i, 100, oct, 0, 0);
		assert_int_equal(ctl_telem_update(&tm, "leaf1", "spine1", &r, 100 * i), 1);
		ctl_telem_feedback(&tm, known);
		if (i == 2) /* one interval alone is noise */
			assert_true(tm.dl[dl].unplanned == 0);
		if (i == 3) /* the second: all of it at once, not alpha's half */
			assert_true(tm.dl[dl].unplanned > 14.99e6 && tm.dl[dl].unplanned < 15.01e6);
	}
	assert_true(tm.dl[dl].unplanned > 14.9e6 && tm.dl[dl].unplanned < 15.01e6);
	/* 200 Mbit/s less 120 */
	assert_true(ctl_telem_cap(&tm, dl) > 79.9e6 && ctl_telem_cap(&tm, dl) < 80.1e6);
	assert_true(ctl_telem_cap(&tm, dl ^ 1) == 200e6); /* the other direction: none */
	/* it falls at alpha (15 then 10 MB/s unplanned: 12.5); one interval
	 * at 18 is smoothed in (15.25: a spike, such as a moved QP still
	 * counted on its old link, does not count in full), the second at
	 * once (18) */
	known[dl] = 10e6;
	unplanned_after(&tm, &oct, 12, known);
	assert_true(tm.dl[dl].unplanned > 12.49e6 && tm.dl[dl].unplanned < 12.51e6);
	known[dl] = 2e6;
	unplanned_after(&tm, &oct, 13, known);
	assert_true(tm.dl[dl].unplanned > 15.24e6 && tm.dl[dl].unplanned < 15.26e6);
	unplanned_after(&tm, &oct, 14, known);
	assert_true(tm.dl[dl].unplanned > 17.99e6 && tm.dl[dl].unplanned < 18.01e6);
	/* known above measured: nothing unplanned; it fades (alpha 0.5 an
	 * interval: one interval after, half), never below the floor */
	known[dl] = 30e6;
	for (int i = 15; i < 30; i++) {
		oct += 2000000;
		r = rec(i, 100 * i, 100, oct, 0, 0);
		ctl_telem_update(&tm, "leaf1", "spine1", &r, 100 * i);
		ctl_telem_feedback(&tm, known);
		if (i == 15)
			assert_true(tm.dl[dl].unplanned > 8.99e6 && tm.dl[dl].unplanned < 9.01e6);
	}
	assert_true(tm.dl[dl].unplanned < 1e3);
	/* noise below the dead band (10% of 25 MB/s) is not unplanned */
	known[dl] = 19e6;
	oct += 2000000;
	r = rec(30, 3000, 100, oct, 0, 0);
	ctl_telem_update(&tm, "leaf1", "spine1", &r, 3000);
	ctl_telem_feedback(&tm, known);
	assert_true(tm.dl[dl].unplanned < 1e3);
	/* a link full of others' traffic: the floor */
	tm.dl[dl].unplanned = 100e6;
	assert_true(ctl_telem_cap(&tm, dl) == 0.05 * 200e6);
	/* a reset: demand-only at once */
	r = rec(31, 3100, 100, 10, 0, 0);
	assert_int_equal(ctl_telem_update(&tm, "leaf1", "spine1", &r, 3100), -ERANGE);
	ctl_telem_feedback(&tm, known);
	assert_true(ctl_telem_cap(&tm, dl) == 200e6);
	free(known);
	ctl_telem_fini(&tm);
	topo_free(t);
}

/* A collective's first intervals: the switch counts its packets before its
 * QPs' rates reach the controller. Its planned rate counts as known while it
 * ramps up (ctl_telem_known_bps), so its start is not someone else's load;
 * traffic beyond its plan still is. Without the ramp the same readings make
 * a phantom. */
static void test_collective_ramp(void **state)
{
	struct topo *t = leaf_spine();
	struct ctl_telem tm, tm0;
	struct ctl_telem_rec r;
	double *known, *known0;
	uint32_t dl, oct = 0;
	const double plan = 96e6; /* bit/s: 12 MB/s */

	(void)state;
	/* the rule itself */
	assert_true(ctl_telem_known_bps(0, plan, 1000, 1100, 400) == plan);
	assert_true(ctl_telem_known_bps(50e6, plan, 1000, 1100, 400) == plan);
	assert_true(ctl_telem_known_bps(120e6, plan, 1000, 1100, 400) == 120e6); /* above it */
	assert_true(ctl_telem_known_bps(10e6, plan, 1000, 1400, 400) == 10e6);	 /* ramp over */
	assert_true(ctl_telem_known_bps(10e6, plan, 0, 1100, 400) == 10e6);    /* none announced */
	assert_true(ctl_telem_known_bps(10e6, plan, 1200, 1100, 400) == 10e6); /* clocks apart */

	assert_int_equal(ctl_telem_init(&tm, t), 0);
	assert_int_equal(ctl_telem_init(&tm0, t), 0);
	known = calloc(tm.ndl, sizeof(double));
	known0 = calloc(tm.ndl, sizeof(double));
	assert_non_null(known);
	assert_non_null(known0);
	assert_int_equal(ctl_telem_dlink(t, "leaf1", "spine1", &dl), 0);
	r = rec(1, 100, 0, 0, 0, 0);
	ctl_telem_update(&tm, "leaf1", "spine1", &r, 100);
	ctl_telem_update(&tm0, "leaf1", "spine1", &r, 100);
	/* announced at 100 ms, ramp 400 ms: the switch sees 12 MB/s from 200
	 * ms on, the agent's rate comes 300 ms later */
	for (int i = 2; i < 6; i++) {
		double rate = i < 5 ? 0 : plan;

		oct += 1200000;
		r = rec(i, 100 * i, 100, oct, 0, 0);
		ctl_telem_update(&tm, "leaf1", "spine1", &r, 100 * i);
		ctl_telem_update(&tm0, "leaf1", "spine1", &r, 100 * i);
		known[dl] = ctl_telem_known_bps(rate, plan, 100, 100 * i, 400) / 8;
		known0[dl] = ctl_telem_known_bps(rate, plan, 0, 100 * i, 400) / 8;
		ctl_telem_feedback(&tm, known);
		ctl_telem_feedback(&tm0, known0);
		assert_true(tm.dl[dl].unplanned == 0);
	}
	assert_true(tm0.dl[dl].unplanned > 4e6); /* the phantom the ramp prevents */
	/* a background beyond the plan while it ramps: still unplanned */
	for (int i = 6; i < 10; i++) {
		oct += 2500000;
		r = rec(i, 100 * i, 100, oct, 0, 0);
		ctl_telem_update(&tm, "leaf1", "spine1", &r, 100 * i);
		known[dl] = ctl_telem_known_bps(0, plan, 600, 100 * i, 400) / 8;
		ctl_telem_feedback(&tm, known);
	}
	assert_true(tm.dl[dl].unplanned > 11e6 && tm.dl[dl].unplanned < 13.1e6);
	free(known);
	free(known0);
	ctl_telem_fini(&tm);
	ctl_telem_fini(&tm0);
	topo_free(t);
}

/* A changed port -> path map: what was measured against the old routes is
 * forgotten; the next interval alone is noise again. */
static void test_forget_after_remap(void **state)
{
	struct topo *t = leaf_spine();
	struct ctl_telem tm;
	struct ctl_telem_rec r;
	double *known;
	uint32_t dl, oct = 0;

	(void)state;
	assert_int_equal(ctl_telem_init(&tm, t), 0);
	known = calloc(tm.ndl, sizeof(double));
	assert_non_null(known);
	assert_int_equal(ctl_telem_dlink(t, "leaf1", "spine1", &dl), 0);
	r = rec(1, 100, 0, 0, 0, 0);
	ctl_telem_update(&tm, "leaf1", "spine1", &r, 100);
	known[dl] = 5e6; /* 20 MB/s measured: the flows a rehash sent here */
	for (int i = 2; i < 6; i++) {
		oct += 2000000;
		r = rec(i, 100 * i, 100, oct, 0, 0);
		ctl_telem_update(&tm, "leaf1", "spine1", &r, 100 * i);
		ctl_telem_feedback(&tm, known);
	}
	assert_true(tm.dl[dl].unplanned > 10e6);
	assert_true(ctl_telem_cap(&tm, dl) < 200e6);
	ctl_telem_forget(&tm);
	assert_true(tm.dl[dl].unplanned == 0);
	assert_true(ctl_telem_cap(&tm, dl) == 200e6);
	ctl_telem_feedback(&tm, known); /* the reading already used: nothing new */
	assert_true(tm.dl[dl].unplanned == 0);
	oct += 2000000; /* one more such interval: noise until the second */
	r = rec(6, 600, 100, oct, 0, 0);
	ctl_telem_update(&tm, "leaf1", "spine1", &r, 600);
	ctl_telem_feedback(&tm, known);
	assert_true(tm.dl[dl].unplanned == 0);
	free(known);
	ctl_telem_fini(&tm);
	topo_free(t);
}

static void test_congestion(void **state)
{
	struct topo *t = leaf_spine();
	struct ctl_telem tm;
	struct ctl_telem_rec r;
	uint32_t dl, kmin;

	assert_int_equal(ctl_telem_init(&tm, t), 0);
	assert_int_equal(ctl_telem_dlink(t, "spine1", "leaf2", &dl), 0);
	kmin = t->links[dl / 2].ecn.kmin_bytes;
	assert_true(kmin > 0);
	r = rec(1, 100, 0, 0, 0, 0);
	ctl_telem_update(&tm, "spine1", "leaf2", &r, 100);
	r = rec(2, 200, 100, 1000, 0, kmin + 1.0); /* queue above Kmin: once */
	ctl_telem_update(&tm, "spine1", "leaf2", &r, 200);
	assert_false(ctl_telem_congested(&tm, dl));
	r = rec(3, 300, 100, 2000, 0, kmin / 2.0); /* below: the run ends */
	ctl_telem_update(&tm, "spine1", "leaf2", &r, 300);
	r = rec(4, 400, 100, 3000, 5, 0); /* CE marks */
	ctl_telem_update(&tm, "spine1", "leaf2", &r, 400);
	assert_false(ctl_telem_congested(&tm, dl));
	r = rec(5, 500, 100, 4000, 6, kmin + 1.0); /* both: the second interval */
	ctl_telem_update(&tm, "spine1", "leaf2", &r, 500);
	assert_true(ctl_telem_congested(&tm, dl));
	assert_int_equal(tm.dl[dl].hot_ms, 400); /* the run's first interval */
	ctl_telem_fini(&tm);
	topo_free(t);
}

/* ---- the planner with measured background load */

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
		.flags = CTL_FLOW_ANNOUNCED,
		.path = {.idx = -1},
	};

	assert_int_equal(ctl_demand_add(d, &f), 0);
}

static const char *spine_of(const struct topo *t, const struct ctl_route *r)
{
	return t->nodes[t->ports[t->links[r->dlink[1] / 2].b].node].name;
}

static void test_background_avoided(void **state)
{
	struct topo *t = leaf_spine();
	struct ctl_planner *p = ctl_planner_new(t);
	struct ctl_plan_opts o;
	struct ctl_plan_stats st;
	struct ctl_demand d;
	uint32_t dl;

	assert_non_null(p);
	ctl_demand_init(&d, CTL_UNIT_BPS);
	add_flow(&d, t, 0, 2, 50 * MBIT, 1); /* h1 -> h3 */
	add_flow(&d, t, 1, 3, 50 * MBIT, 2); /* h2 -> h4 */
	/* demand only: one flow per spine */
	assert_int_equal(ctl_plan_paths(p, &d, NULL, &st), 0);
	assert_string_not_equal(spine_of(t, &d.flows[0].path), spine_of(t, &d.flows[1].path));
	/* 150 Mbit/s of unannounced traffic on leaf1 -> spine1 */
	assert_int_equal(ctl_telem_dlink(t, "leaf1", "spine1", &dl), 0);
	assert_int_equal(ctl_planner_set_cap(p, dl, 50 * MBIT), 0);
	assert_true(ctl_planner_cap(p, dl) == 50 * MBIT);
	assert_int_equal(ctl_planner_set_cap(p, dl, 0), -EINVAL);
	/* re-optimising from the current routes: the flow on spine1 moves */
	ctl_plan_opts_default(&o);
	o.mode = CTL_PLAN_REOPT;
	assert_int_equal(ctl_plan_paths(p, &d, &o, &st), 0);
	assert_int_equal(st.moved, 1);
	assert_string_equal(spine_of(t, &d.flows[0].path), "spine2");
	assert_string_equal(spine_of(t, &d.flows[1].path), "spine2");
	assert_true(st.start_util > 0.99 && st.max_util < 0.51);
	/* fresh: the same */
	for (size_t i = 0; i < d.n; i++)
		d.flows[i].path.idx = -1;
	assert_int_equal(ctl_plan_paths(p, &d, NULL, &st), 0);
	assert_string_equal(spine_of(t, &d.flows[0].path), "spine2");
	assert_string_equal(spine_of(t, &d.flows[1].path), "spine2");
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

static void test_move_that_does_not_pay(void **state)
{
	struct topo *t = leaf_spine();
	struct ctl_planner *p = ctl_planner_new(t);
	struct ctl_plan_opts o;
	struct ctl_plan_stats st;
	struct ctl_demand d;
	const char *s0, *s1;
	uint32_t dl;

	assert_non_null(p);
	ctl_demand_init(&d, CTL_UNIT_BPS);
	add_flow(&d, t, 0, 2, 50 * MBIT, 1);
	add_flow(&d, t, 1, 3, 50 * MBIT, 2);
	assert_int_equal(ctl_plan_paths(p, &d, NULL, &st), 0);
	s0 = spine_of(t, &d.flows[0].path);
	s1 = spine_of(t, &d.flows[1].path);
	/* a little background (10 Mbit/s) on the first flow's uplink: moving
	 * would put both on one spine (100 of 200) against 50 of 190 now */
	assert_int_equal(ctl_telem_dlink(t, "leaf1", s0, &dl), 0);
	assert_int_equal(ctl_planner_set_cap(p, dl, 190 * MBIT), 0);
	ctl_plan_opts_default(&o);
	o.mode = CTL_PLAN_REOPT;
	assert_int_equal(ctl_plan_paths(p, &d, &o, &st), 0);
	assert_int_equal(st.moved, 0);
	assert_string_equal(spine_of(t, &d.flows[0].path), s0);
	assert_string_equal(spine_of(t, &d.flows[1].path), s1);
	/* rates fit the capacity left: 150 Mbit/s of background, the flow on
	 * that link gets the 50 left, the other its demand */
	assert_int_equal(ctl_planner_set_cap(p, dl, 50 * MBIT), 0);
	for (size_t i = 0; i < d.n; i++)
		d.flows[i].demand = 200 * MBIT;
	assert_int_equal(ctl_plan_rates(p, &d, 0, 1.0), 0);
	assert_true(d.flows[0].target_bps > 49.9e6 && d.flows[0].target_bps < 50.1e6);
	assert_true(d.flows[1].target_bps > 199e6);
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
}

/* oper-status: a port that reports not UP takes its link down, in either
 * direction, across a counter reset too; readings that stop: unknown, up. */
static void test_oper_status(void **state)
{
	struct topo *t = leaf_spine();
	struct ctl_telem tm;
	struct ctl_telem_rec r;
	uint32_t dl;

	(void)state;
	assert_int_equal(ctl_telem_init(&tm, t), 0);
	assert_int_equal(ctl_telem_dlink(t, "spine2", "leaf1", &dl), 0);
	r = rec(1, 100, 0, 1000, 0, 0);
	ctl_telem_update(&tm, "spine2", "leaf1", &r, 100);
	assert_false(ctl_telem_link_down(&tm, dl / 2));
	r = rec(2, 200, 100, 2000, 0, 0);
	r.oper = 0;
	ctl_telem_update(&tm, "spine2", "leaf1", &r, 200);
	assert_true(ctl_telem_link_down(&tm, dl / 2)); /* the link, both ways */
	r = rec(3, 300, 100, 10, 0, 0);		       /* counters went back: still told */
	r.oper = 0;
	assert_int_equal(ctl_telem_update(&tm, "spine2", "leaf1", &r, 300), -ERANGE);
	assert_true(ctl_telem_link_down(&tm, dl / 2));
	r = rec(4, 400, 100, 20, 0, 0); /* UP again */
	ctl_telem_update(&tm, "spine2", "leaf1", &r, 400);
	assert_false(ctl_telem_link_down(&tm, dl / 2));
	r = rec(5, 500, 100, 30, 0, 0);
	r.oper = 0;
	ctl_telem_update(&tm, "spine2", "leaf1", &r, 500);
	assert_true(ctl_telem_link_down(&tm, dl / 2));
	ctl_telem_expire(&tm, 500 + tm.stale_ms); /* the readings stopped */
	assert_false(ctl_telem_link_down(&tm, dl / 2));
	ctl_telem_fini(&tm);
	topo_free(t);
}

/* No switch telemetry: the CNPs of the planned QPs that cross a link stand
 * in. All of them marked: the link is full, the rest of its rate is
 * someone else's; one unmarked: not full. A host's own links (both ways)
 * and a measured link are not judged this way. */
static void test_host_signals(void **state)
{
	struct topo *t = leaf_spine();
	struct ctl_telem tm;
	struct ctl_telem_rec r;
	uint32_t *qps, *marked, up, host_up = UINT32_MAX, host_down, meas;
	double *known;

	(void)state;
	assert_int_equal(ctl_telem_init(&tm, t), 0);
	qps = calloc(tm.ndl, sizeof(*qps));
	marked = calloc(tm.ndl, sizeof(*marked));
	known = calloc(tm.ndl, sizeof(*known));
	assert_true(qps && marked && known);
	assert_int_equal(ctl_telem_dlink(t, "leaf1", "spine1", &up), 0);
	assert_int_equal(ctl_telem_dlink(t, "leaf2", "spine2", &meas), 0);
	for (uint32_t dl = 0; dl < tm.ndl && host_up == UINT32_MAX; dl++)
		if (tm.dl[dl].port == UINT32_MAX)
			host_up = dl;
	assert_int_not_equal(host_up, UINT32_MAX);
	host_down = host_up ^ 1; /* the leaf's port to that host */
	assert_int_not_equal(tm.dl[host_down].port, UINT32_MAX);
	/* leaf2 -> spine2 is measured (idle): host signals do not apply */
	r = rec(1, 100, 0, 0, 0, 0);
	ctl_telem_update(&tm, "leaf2", "spine2", &r, 100);
	r = rec(2, 200, 100, 1000, 0, 0);
	ctl_telem_update(&tm, "leaf2", "spine2", &r, 200);
	/* 2 QPs cross each, both marked; they carry 10 MB/s of the 25 */
	qps[up] = qps[host_up] = qps[host_down] = qps[meas] = 2;
	marked[up] = marked[host_up] = marked[host_down] = marked[meas] = 2;
	known[up] = known[host_up] = known[host_down] = known[meas] = 10e6;
	ctl_telem_host(&tm, qps, marked, known, 1000);
	assert_false(ctl_telem_congested(&tm, up)); /* one sample is not a run */
	assert_true(ctl_telem_unplanned(&tm, up) > 7.49e6 && ctl_telem_unplanned(&tm, up) < 7.51e6);
	ctl_telem_host(&tm, qps, marked, known, 1250);
	assert_true(ctl_telem_congested(&tm, up));
	assert_int_equal(tm.dl[up].hhot_ms, 1000);
	/* 15 MB/s unplanned, smoothed: 7.5 then 11.25 */
	assert_true(ctl_telem_unplanned(&tm, up) > 11.2e6 && ctl_telem_unplanned(&tm, up) < 11.3e6);
	assert_true(ctl_telem_cap(&tm, up) < 200e6 - 8 * 11.2e6 + 1);
	assert_false(ctl_telem_congested(&tm, host_up));
	assert_true(ctl_telem_cap(&tm, host_up) == 200e6);
	assert_false(ctl_telem_congested(&tm, host_down)); /* on every path: not judged */
	assert_true(ctl_telem_cap(&tm, host_down) == 200e6);
	assert_false(ctl_telem_congested(&tm, meas));
	assert_true(ctl_telem_cap(&tm, meas) == 200e6);
	/* one QP unmarked: not full; the estimate decays, the run ends */
	marked[up] = 1;
	ctl_telem_host(&tm, qps, marked, known, 1500);
	assert_false(ctl_telem_congested(&tm, up));
	assert_true(ctl_telem_unplanned(&tm, up) < 5.7e6);
	/* full again, then no QP: the estimate is kept host_hold_ms */
	marked[up] = 2;
	ctl_telem_host(&tm, qps, marked, known, 1750);
	qps[up] = marked[up] = 0;
	ctl_telem_host(&tm, qps, marked, known, 2000);
	assert_true(ctl_telem_unplanned(&tm, up) > 10e6);
	ctl_telem_host(&tm, qps, marked, known, 1750 + tm.host_hold_ms);
	assert_true(ctl_telem_unplanned(&tm, up) > 10e6);
	ctl_telem_host(&tm, qps, marked, known, 1751 + tm.host_hold_ms);
	assert_true(ctl_telem_cap(&tm, up) == 200e6);
	free(qps);
	free(marked);
	free(known);
	ctl_telem_fini(&tm);
	topo_free(t);
}

/* The dead band of the ctl:link records: inside it nothing is written,
 * past any one of its edges the record is. 100 Mbit/s link (12.5 MB/s,
 * band 250 kB/s), Kmin 30 kB (queue band 3750 B). */
static void test_pub_dead_band(void **state)
{
	const double rate = 12.5e6;
	const uint32_t kmin = 30000;
	struct ctl_telem_pub was = {.planned = 5e6,
				    .known = 4e6,
				    .measured = 6e6,
				    .unplanned = 1e6,
				    .capacity = 11.5e6,
				    .avg_q = 1000,
				    .ce = 0,
				    .state = "ok"},
			     now = was;

	assert_false(ctl_telem_pub_differs(&was, &now, rate, kmin));
	/* every load within the band: not written */
	now.planned += 240e3;
	now.known -= 240e3;
	now.measured += 249e3;
	now.unplanned -= 200e3;
	now.capacity += 200e3;
	now.avg_q += 3700;
	assert_false(ctl_telem_pub_differs(&was, &now, rate, kmin));
	/* each edge on its own */
	now = was;
	now.measured += 260e3;
	assert_true(ctl_telem_pub_differs(&was, &now, rate, kmin));
	now = was;
	now.capacity -= 260e3;
	assert_true(ctl_telem_pub_differs(&was, &now, rate, kmin));
	now = was;
	now.avg_q += 3800;
	assert_true(ctl_telem_pub_differs(&was, &now, rate, kmin));
	/* across Kmin, however little */
	was.avg_q = 29900;
	now = was;
	now.avg_q = 30100;
	assert_true(ctl_telem_pub_differs(&was, &now, rate, kmin));
	/* without ECN the queue band is one MTU */
	now = was;
	now.avg_q += 1400;
	assert_false(ctl_telem_pub_differs(&was, &now, rate, 0));
	now.avg_q += 200;
	assert_true(ctl_telem_pub_differs(&was, &now, rate, 0));
	/* CE marks: start, stop, doubling; not a small change */
	now = was;
	now.ce = 1;
	assert_true(ctl_telem_pub_differs(&was, &now, rate, kmin));
	was.ce = 100;
	now.ce = 150;
	assert_false(ctl_telem_pub_differs(&was, &now, rate, kmin));
	now.ce = 201;
	assert_true(ctl_telem_pub_differs(&was, &now, rate, kmin));
	now.ce = 49;
	assert_true(ctl_telem_pub_differs(&was, &now, rate, kmin));
	now.ce = 0;
	assert_true(ctl_telem_pub_differs(&was, &now, rate, kmin));
	/* the state */
	now = was;
	snprintf(now.state, sizeof(now.state), "stale");
	assert_true(ctl_telem_pub_differs(&was, &now, rate, kmin));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_port_to_link),
		cmocka_unit_test(test_rates_and_bad_input),
		cmocka_unit_test(test_unplanned_and_capacity),
		cmocka_unit_test(test_collective_ramp),
		cmocka_unit_test(test_forget_after_remap),
		cmocka_unit_test(test_congestion),
		cmocka_unit_test(test_background_avoided),
		cmocka_unit_test(test_move_that_does_not_pay),
		cmocka_unit_test(test_oper_status),
		cmocka_unit_test(test_host_signals),
		cmocka_unit_test(test_pub_dead_band),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
