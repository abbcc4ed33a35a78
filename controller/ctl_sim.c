// SPDX-License-Identifier: Apache-2.0
/*
 * ice-sim: flow-level simulator over topo/ and the controller's planner.
 * Generates a fat-tree (k <= 64, topo_gen_fat_tree) or leaf-spine, places training jobs (ring
 * all-reduce or all-to-all over their hosts, random or rack-aligned), and
 * compares plain ECMP (rdma-core default source ports through the switch
 * hash models) with ICE's planned paths: max link utilisation, the lower
 * bound, max-min fair rates and what they imply for the collective's time
 * (the slowest flow of a ring sets its step time), and planner run times.
 *
 *   ice-sim [--k 48 | --leaf-spine S,L,H] [--jobs N] [--placement random|rack]
 *           [--op all_reduce|all_to_all] [--qps Q] [--bytes B] [--rate GBIT]
 *           [--budget SEC] [--seed S] [--sports]
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "ice_config.h"
#include "ice_time.h"

static uint64_t rng_state = 1;

static uint64_t rng(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

struct sim_opts {
	uint32_t k, njobs, qps, spines, leaves, hpl;
	uint64_t bytes, seed;
	double rate_g, budget;
	int placement; /* 0 random, 1 rack */
	int op;	       /* 0 all_reduce, 1 all_to_all */
	bool sports;
};

static int set_leaf_spine(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
			  size_t len)
{
	struct sim_opts *o = obj;
	char end;

	(void)f;
	if (sscanf(text, "%u,%u,%u%c", &o->spines, &o->leaves, &o->hpl, &end) != 3 ||
	    o->spines == 0 || o->leaves == 0 || o->hpl == 0) {
		snprintf(msg, len, "expected SPINES,LEAVES,HOSTS_PER_LEAF, got '%s'", text);
		return -EINVAL;
	}
	return 0;
}

#define F(k, t, m, ...) ICE_CFG_ROW(struct sim_opts, k, t, m, __VA_ARGS__)
static const char *const placements[] = {"random", "rack", NULL};
static const char *const ops[] = {"all_reduce", "all_to_all", NULL};
static const struct ice_cfg_field sim_fields[] = {
	F("k", ICE_CFG_U32, k, .min = 2, .max = 64, .help = "fat-tree arity (16)"),
	ICE_CFG_FUNC_ROW("leaf_spine", set_leaf_spine, .arg = "S,L,H",
			 .help = "a leaf-spine instead: spines, leaves, hosts per leaf"),
	F("jobs", ICE_CFG_U32, njobs, .min = 1, .max = 1 << 20, .help = "training jobs (1)"),
	F("placement", ICE_CFG_ENUM, placement, .choices = placements,
	  .help = "hosts of a job: random, or rack-aligned (random)"),
	F("op", ICE_CFG_ENUM, op, .choices = ops, .help = "the collective (all_reduce)"),
	F("qps", ICE_CFG_U32, qps, .min = 1, .max = 1024, .help = "QPs per connection (1)"),
	F("bytes", ICE_CFG_SIZE, bytes, .min = 1, .max = 1e18, .help = "bytes per collective (1G)"),
	F("rate", ICE_CFG_DOUBLE, rate_g, .min = 1e-6, .max = 1e6, .arg = "GBIT",
	  .help = "link rate, Gbit/s (100)"),
	F("budget", ICE_CFG_DOUBLE, budget, .min = 0, .max = 86400, .arg = "SEC",
	  .help = "the planner's time budget (1)"),
	F("seed", ICE_CFG_UINT, seed, .help = "placement seed (1)"),
	F("sports", ICE_CFG_BOOL, sports, .flags = ICE_CFG_SWITCH,
	  .help = "print the planned source ports"),
};

struct job_time {
	double worst_s; /* slowest flow: bits / rate */
	double ideal_s; /* every NIC at line rate */
};

/* Per job: completion time under the given rates (which: 0 plan, 1 ECMP). */
static void job_times(const struct ctl_demand *d, uint32_t njobs, const uint64_t *bits_per_flow,
		      const double *ideal_s, struct job_time *jt)
{
	for (uint32_t j = 0; j < njobs; j++) {
		jt[j].worst_s = 0;
		jt[j].ideal_s = ideal_s[j];
	}
	for (size_t i = 0; i < d->n; i++) {
		const struct ctl_flow *f = &d->flows[i];
		double t = f->target_bps > 0 ? (double)bits_per_flow[f->coll_id] / f->target_bps
					     : 1e30;

		if (t > jt[f->coll_id].worst_s)
			jt[f->coll_id].worst_s = t;
	}
}

int main(int argc, char **argv)
{
	struct sim_opts so = {.k = 16,
			      .njobs = 1,
			      .qps = 1,
			      .bytes = 1ull << 30,
			      .seed = 1,
			      .rate_g = 100,
			      .budget = 1.0};
	struct ice_cfg_cli cli = {
		.tool = "ice-sim",
		.synopsis = "usage: ice-sim [--k K | --leaf-spine S,L,H] [options]",
		.fields = sim_fields,
		.nfields = sizeof(sim_fields) / sizeof(sim_fields[0]),
		.obj = &so,
	};
	uint32_t k, njobs, qps, spines, leaves, hpl;
	uint64_t bytes, seed;
	double rate_g, budget;
	bool rack, sports;
	enum ctl_coll_op op;
	struct topo_gen_opts go;
	struct topo *t;
	struct ctl_planner *p;
	struct ctl_demand d;
	struct ctl_plan_opts po;
	struct ctl_plan_stats st;
	uint32_t nn, *nics, per;
	uint64_t *bits;
	double *ideal, t0, t_gen, t_idx, t_dem, t_ecmp, t_rate, ecmp_util, bound;
	struct job_time *je, *ji;
	int ret;

	ret = ice_cfg_parse_args(&cli, argc, argv);
	if (ret != 0)
		return ret > 0 ? 0 : 2;
	k = so.k;
	njobs = so.njobs;
	qps = so.qps;
	bytes = so.bytes;
	seed = so.seed;
	spines = so.spines;
	leaves = so.leaves;
	hpl = so.hpl;
	rate_g = so.rate_g;
	budget = so.budget;
	rack = so.placement == 1;
	sports = so.sports;
	op = so.op == 0 ? CTL_COLL_ALL_REDUCE : CTL_COLL_ALL_TO_ALL;
	rng_state = seed;

	t0 = ice_now_s();
	topo_gen_opts_default(&go);
	go.host_rate_bps = go.fabric_rate_bps = (uint64_t)(rate_g * 1e9);
	if (spines > 0) {
		go.spines = spines;
		go.leaves = leaves;
		go.hosts_per_leaf = hpl;
		t = topo_gen_leaf_spine(&go);
	} else {
		/* k <= 64: past k = 22 the generator's wide address plan */
		go.k = k;
		t = topo_gen_fat_tree(&go);
	}
	if (t == NULL) {
		fprintf(stderr, "ice-sim: cannot generate the topology: %s\n", strerror(errno));
		return 1;
	}
	t_gen = ice_now_s() - t0;
	t0 = ice_now_s();
	p = ctl_planner_new(t);
	if (p == NULL) {
		fprintf(stderr, "ice-sim: planner: %s\n", strerror(errno));
		return 1;
	}
	t_idx = ice_now_s() - t0;

	/* jobs: hosts in NIC order (rack-aligned) or shuffled, cut into njobs */
	nn = topo_nic_count(t);
	nics = malloc(sizeof(uint32_t) * nn);
	bits = calloc(njobs, sizeof(uint64_t));
	ideal = calloc(njobs, sizeof(double));
	je = calloc(njobs, sizeof(*je));
	ji = calloc(njobs, sizeof(*ji));
	if (nics == NULL || bits == NULL || ideal == NULL || je == NULL || ji == NULL)
		return 1;
	/* the NICs in id order (topo_nic() order), one pass */
	for (uint32_t i = 0, n = 0; i < t->nports && n < nn; i++)
		if (t->nodes[t->ports[i].node].kind == TOPO_HOST)
			nics[n++] = i;
	if (!rack)
		for (uint32_t i = nn - 1; i > 0; i--) {
			uint32_t j = (uint32_t)(rng() % (i + 1)), x = nics[i];

			nics[i] = nics[j];
			nics[j] = x;
		}
	per = nn / njobs;
	t0 = ice_now_s();
	ctl_demand_init(&d, CTL_UNIT_BPS);
	for (uint32_t j = 0; j < njobs; j++) {
		/* offered load: each NIC sends at line rate, split over its flows */
		uint32_t peers = op == CTL_COLL_ALL_TO_ALL ? per - 1 : 1;
		uint64_t rate = (uint64_t)(rate_g * 1e9) / peers;
		uint64_t vol =
			op == CTL_COLL_ALL_TO_ALL ? bytes / per : 2 * (per - 1) * (bytes / per);

		ret = ctl_demand_add_collective(
			&d, t, op,
			op == CTL_COLL_ALL_TO_ALL ? rate * per : rate * per / (2 * (per - 1)),
			nics + (size_t)j * per, per, qps, j, 0, j * 0x1000);
		if (ret < 0) {
			fprintf(stderr, "ice-sim: demand: %s\n", strerror(-ret));
			return 1;
		}
		bits[j] = 8 * vol / qps;
		ideal[j] = 8.0 * (double)vol * peers / (rate_g * 1e9);
	}
	t_dem = ice_now_s() - t0;

	t0 = ice_now_s();
	ret = ctl_plan_ecmp(ctl_pathmap_model(p), &d);
	t_ecmp = ice_now_s() - t0;
	if (ret < 0) {
		fprintf(stderr, "ice-sim: ecmp: %s\n", strerror(-ret));
		return 1;
	}
	ecmp_util = ctl_max_util(p, &d, 1);
	t0 = ice_now_s();
	bound = ctl_bound(p, &d);
	double t_bound = ice_now_s() - t0;

	ctl_plan_opts_default(&po);
	po.search_budget_s = budget;
	ret = ctl_plan_paths(p, &d, &po, &st);
	if (ret < 0) {
		fprintf(stderr, "ice-sim: plan: %s\n", strerror(-ret));
		return 1;
	}
	t0 = ice_now_s();
	ctl_plan_rates(p, &d, 1, 1.0);
	job_times(&d, njobs, bits, ideal, je);
	ctl_plan_rates(p, &d, 0, 1.0);
	t_rate = ice_now_s() - t0;
	job_times(&d, njobs, bits, ideal, ji);

	printf("fabric: %s, %u switches+hosts, %u links, %u hosts at %.0f Gbit/s (generated in "
	       "%.2f s, planner index %.2f s)\n",
	       spines ? "leaf-spine" : "fat-tree", t->nnodes, t->nlinks, nn, rate_g, t_gen, t_idx);
	printf("jobs: %u x %s over %u hosts each, %s placement, %u QP(s) per connection: %zu "
	       "flows (demand built in %.3f s)\n",
	       njobs, ctl_coll_op_name(op), per, rack ? "rack-aligned" : "random", qps, d.n, t_dem);
	printf("%-22s %10s %10s\n", "", "ECMP", "ICE");
	printf("%-22s %10.3f %10.3f   (lower bound %.3f, %.3f s)\n", "max link utilisation",
	       ecmp_util, st.max_util, bound, t_bound);
	for (uint32_t j = 0; j < njobs && j < 8; j++)
		printf("job %-3u busbw / ideal  %10.3f %10.3f   (time %.3f s vs %.3f s; ideal %.3f "
		       "s)\n",
		       j, je[j].ideal_s / je[j].worst_s, ji[j].ideal_s / ji[j].worst_s,
		       je[j].worst_s, ji[j].worst_s, ji[j].ideal_s);
	printf("planner: %.3f s total (construction %.3f s, local search %.3f s, %u moves%s); "
	       "ECMP paths %.3f s; rates (2x water-filling) %.3f s\n",
	       st.total_s, st.greedy_s, st.search_s, st.moves,
	       st.budget_hit ? ", stopped on its time budget" : "", t_ecmp, t_rate);
	if (st.kempe_util > 0)
		printf("balanced colouring: max utilisation %.3f before local search, %llu "
		       "alternating-path recolourings\n",
		       st.kempe_util, (unsigned long long)st.kempe_chains);
	if (sports) {
		t0 = ice_now_s();
		ret = ctl_plan_sports(ctl_pathmap_model(p), &d);
		printf("source ports: %s in %.3f s for %zu flows\n",
		       ret == 0 ? "all found" : "FAILED", ice_now_s() - t0, d.n);
	}
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
	free(nics);
	free(bits);
	free(ideal);
	free(je);
	free(ji);
	return 0;
}
