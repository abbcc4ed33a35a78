// SPDX-License-Identifier: Apache-2.0
/*
 * ice-sim: flow-level simulator over topo/ and the controller's planner.
 * Generates a fat-tree (k <= TOPO_FAT_TREE_K_MAX, topo_gen_fat_tree) or
 * leaf-spine, places training jobs (ring all-reduce or all-to-all over their
 * hosts, random or rack-aligned, or as a jobs file names them) and compares
 * plain ECMP (rdma-core default source ports through the switch hash models)
 * with ICE's planned paths: max link utilisation, the lower bound, max-min
 * fair rates and what they imply for the collective's time (the slowest
 * flow of a ring sets its step time), planner run times (wall and CPU), an
 * arriving job planned incrementally into the full fabric, and peak memory.
 *
 *   ice-sim [--k 48 | --leaf-spine S,L,H] [--jobs N] [--placement random|rack]
 *           [--jobs-file F] [--arrive HOSTS] [--op all_reduce|all_to_all]
 *           [--qps Q] [--bytes B] [--rate GBIT] [--budget SEC] [--seed S]
 *           [--max-mem SIZE] [--sports] [--json]
 *
 * Before generating anything it estimates the memory the run needs and
 * refuses (exit 1) when that is over the limit: --max-mem, RLIMIT_AS and
 * MemAvailable, the smallest. A jobs file naming a host the fabric lacks is
 * refused (every such name reported, file:line) before any plan is made.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <jansson.h>

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
	uint32_t k, njobs, qps, spines, leaves, hpl, arrive;
	uint64_t bytes, seed, max_mem;
	double rate_g, budget, arrive_budget;
	int placement; /* 0 random, 1 rack */
	int op;	       /* 0 all_reduce, 1 all_to_all */
	bool sports, json;
	char jobs_file[512];
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
	F("k", ICE_CFG_U32, k, .min = 2, .max = TOPO_FAT_TREE_K_MAX, .help = "fat-tree arity (16)"),
	ICE_CFG_FUNC_ROW("leaf_spine", set_leaf_spine, .arg = "S,L,H",
			 .help = "a leaf-spine instead: spines, leaves, hosts per leaf"),
	F("jobs", ICE_CFG_U32, njobs, .min = 1, .max = 1 << 20, .help = "training jobs (1)"),
	F("placement", ICE_CFG_ENUM, placement, .choices = placements,
	  .help = "hosts of a job: random, or rack-aligned (random)"),
	F("jobs_file", ICE_CFG_STRING, jobs_file, .arg = "FILE",
	  .help = "jobs by host name, one job a line ('#' comments), instead of\n"
		  "--jobs/--placement"),
	F("arrive", ICE_CFG_U32, arrive, .min = 0, .max = 1 << 24, .arg = "HOSTS",
	  .help = "then a job of HOSTS more hosts arrives in the planned fabric and\n"
		  "is planned incrementally (0: none)"),
	F("arrive_budget", ICE_CFG_DOUBLE, arrive_budget, .min = 0, .max = 86400, .arg = "SEC",
	  .help = "the planner's time budget for the arriving job (0.2, the daemon's\n"
		  "search_budget)"),
	F("op", ICE_CFG_ENUM, op, .choices = ops, .help = "the collective (all_reduce)"),
	F("qps", ICE_CFG_U32, qps, .min = 1, .max = 1024, .help = "QPs per connection (1)"),
	F("bytes", ICE_CFG_SIZE, bytes, .min = 1, .max = 1e18, .help = "bytes per collective (1G)"),
	F("rate", ICE_CFG_DOUBLE, rate_g, .min = 1e-6, .max = 1e6, .arg = "GBIT",
	  .help = "link rate, Gbit/s (100)"),
	F("budget", ICE_CFG_DOUBLE, budget, .min = 0, .max = 86400, .arg = "SEC",
	  .help = "the planner's time budget (1)"),
	F("seed", ICE_CFG_UINT, seed, .help = "placement seed (1)"),
	F("max_mem", ICE_CFG_SIZE, max_mem, .min = 0, .max = 1e18,
	  .help = "refuse a run estimated to need more memory (0: RLIMIT_AS and\n"
		  "MemAvailable decide)"),
	F("sports", ICE_CFG_BOOL, sports, .flags = ICE_CFG_SWITCH,
	  .help = "print the planned source ports"),
	F("json", ICE_CFG_BOOL, json, .flags = ICE_CFG_SWITCH,
	  .help = "the figures as one JSON object (for tests and scripts)"),
};

/* ---- clocks ------------------------------------------------------------------- */

struct lap {
	double wall, cpu; /* seconds */
};

static struct lap lap_start(void)
{
	return (struct lap){.wall = ice_now_s(), .cpu = ice_process_cpu_s()};
}

static struct lap lap_since(struct lap s)
{
	return (struct lap){.wall = ice_now_s() - s.wall, .cpu = ice_process_cpu_s() - s.cpu};
}

/* ---- memory: estimate before generating, the limit, the peak ------------------ */

/*
 * What a run needs, from the fabric's counts: the topology (nodes, ports,
 * links, a name table), the planner's index (up-distance table, reach
 * bitsets, one DAG per destination switch: an index over every switch and
 * the nodes reached, about half of them) and the flows with the planner's
 * per-flow copies and scratch. Against getrusage's peak at k = 64..74 and
 * a 10^5-host leaf-spine (docs/benchmarks.md): 1.0-2.0x, never below (it
 * counts every destination's DAG as reached; rack placement reaches few).
 */
static uint64_t sim_mem_estimate(uint64_t hosts, uint64_t sws, uint64_t edges, uint64_t links,
				 uint64_t flows)
{
	uint64_t nodes = hosts + sws, ports = 2 * links, levels = 4;
	uint64_t topo = nodes * (sizeof(struct topo_node) + 48) +
			ports * (sizeof(struct topo_port) + 16) + links * sizeof(struct topo_link);
	uint64_t index = edges * sws * (1 + 4 + 20 / 2) + sws * levels * (edges / 8 + 8) +
			 links * 2 * 2 * sizeof(double);
	uint64_t demand = flows * (3 * sizeof(struct ctl_flow) + 96);

	return topo + index + demand;
}

/* The smallest of --max-mem, RLIMIT_AS and MemAvailable; *what names it. */
static uint64_t sim_mem_limit(uint64_t max_mem, const char **what)
{
	uint64_t lim = UINT64_MAX;
	struct rlimit rl;
	FILE *f;

	*what = "no limit";
	if (max_mem > 0) {
		lim = max_mem;
		*what = "--max-mem";
	}
	if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < lim) {
		lim = rl.rlim_cur;
		*what = "RLIMIT_AS (ulimit -v)";
	}
	f = fopen("/proc/meminfo", "r");
	if (f != NULL) {
		char line[128];
		unsigned long long kb;

		while (fgets(line, sizeof(line), f) != NULL)
			if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1 && kb * 1024 < lim) {
				lim = kb * 1024;
				*what = "MemAvailable (/proc/meminfo)";
			}
		fclose(f);
	}
	return lim;
}

static uint64_t peak_rss_bytes(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) == 0 ? (uint64_t)ru.ru_maxrss * 1024 : 0;
}

/* ---- jobs ------------------------------------------------------------------------ */

struct sim_job {
	uint32_t *nics; /* topo port ids, rank order (in sim_jobs.pool) */
	size_t first;	/* their offset in the pool */
	uint32_t n;
};

struct sim_jobs {
	struct sim_job *v;
	uint32_t n, cap;
	uint32_t *pool; /* NIC ids the jobs point into */
	size_t npool, cappool;
};

static void sim_jobs_fini(struct sim_jobs *js)
{
	free(js->v);
	free(js->pool);
	memset(js, 0, sizeof(*js));
}

/* Append a job of the n NICs last added to the pool. 0 or -ENOMEM. */
static int sim_jobs_close(struct sim_jobs *js, uint32_t n)
{
	if (js->n == js->cap) {
		uint32_t c = js->cap ? 2 * js->cap : 16;
		struct sim_job *v = realloc(js->v, sizeof(*v) * c);

		if (v == NULL)
			return -ENOMEM;
		js->v = v;
		js->cap = c;
	}
	/* nics set once the pool stops moving (sim_jobs_fix) */
	js->v[js->n++] = (struct sim_job){.first = js->npool - n, .n = n};
	return 0;
}

static void sim_jobs_fix(struct sim_jobs *js)
{
	for (uint32_t j = 0; j < js->n; j++)
		js->v[j].nics = js->pool + js->v[j].first;
}

static int sim_pool_add(struct sim_jobs *js, uint32_t nic)
{
	if (js->npool == js->cappool) {
		size_t c = js->cappool ? 2 * js->cappool : 1024;
		uint32_t *v = realloc(js->pool, sizeof(*v) * c);

		if (v == NULL)
			return -ENOMEM;
		js->pool = v;
		js->cappool = c;
	}
	js->pool[js->npool++] = nic;
	return 0;
}

/*
 * A jobs file: one job a line, its hosts by name in rank order, separated by
 * blanks; '#' starts a comment; blank lines are skipped. A name that is not
 * a host of the fabric, a host twice in one job, a job of one host: each
 * reported as FILE:LINE with the name; -EINVAL after the whole file was read
 * (nothing is planned).
 */
static int sim_jobs_load(const char *path, const struct topo *t, struct sim_jobs *js)
{
	FILE *f = fopen(path, "r");
	char *line = NULL, *save;
	size_t cap = 0;
	uint32_t lineno = 0, bad = 0;
	uint8_t *seen = calloc(t->nports + 1, 1);
	int ret = 0;

	if (f == NULL || seen == NULL) {
		ret = f == NULL ? -errno : -ENOMEM;
		fprintf(stderr, "ice-sim: %s: %s\n", path, strerror(-ret));
		free(seen);
		if (f != NULL)
			fclose(f);
		return ret;
	}
	while (getline(&line, &cap, f) >= 0) {
		size_t first = js->npool;
		uint32_t n = 0, bad0 = bad;
		char *tok, *hash = strchr(line, '#');

		lineno++;
		if (hash != NULL)
			*hash = '\0';
		for (tok = strtok_r(line, " \t\r\n", &save); tok != NULL;
		     tok = strtok_r(NULL, " \t\r\n", &save)) {
			const struct topo_node *h = topo_node_by_name(t, tok);

			if (h == NULL || h->kind != TOPO_HOST || h->nports == 0) {
				fprintf(stderr,
					"ice-sim: %s:%u: host '%s' is not a host of the fabric "
					"(%s)\n",
					path, lineno, tok, h == NULL ? "no such node" : "a switch");
				bad++;
				continue;
			}
			if (seen[h->ports[0]]) {
				fprintf(stderr, "ice-sim: %s:%u: host '%s' twice in one job\n",
					path, lineno, tok);
				bad++;
				continue;
			}
			seen[h->ports[0]] = 1;
			if (sim_pool_add(js, h->ports[0]) < 0) {
				ret = -ENOMEM;
				goto out;
			}
			n++;
		}
		for (size_t i = first; i < js->npool; i++)
			seen[js->pool[i]] = 0;
		if (n == 0 || bad > bad0)
			continue;
		if (n < 2 && bad == bad0) {
			fprintf(stderr, "ice-sim: %s:%u: a job needs 2 or more hosts, got %u\n",
				path, lineno, n);
			bad++;
			continue;
		}
		if (sim_jobs_close(js, n) < 0) {
			ret = -ENOMEM;
			goto out;
		}
	}
	if (ferror(f))
		ret = -EIO;
	else if (bad > 0) {
		fprintf(stderr, "ice-sim: %s: %u error(s): no plan made\n", path, bad);
		ret = -EINVAL;
	} else if (js->n == 0) {
		fprintf(stderr, "ice-sim: %s: no jobs\n", path);
		ret = -EINVAL;
	}
out:
	sim_jobs_fix(js);
	free(line);
	free(seen);
	fclose(f);
	return ret;
}

/* --jobs over the NICs in NIC (rack) order or shuffled; the last arrive
 * NICs are held back for the arriving job (*arr). */
static int sim_jobs_place(const struct topo *t, const struct sim_opts *o, struct sim_jobs *js,
			  struct sim_job *arr)
{
	uint32_t nn = topo_nic_count(t), per;

	if (o->arrive >= nn || (nn - o->arrive) / o->njobs < 2) {
		fprintf(stderr,
			"ice-sim: %u hosts cannot hold %u job(s) of 2 or more hosts and an "
			"arriving job of %u\n",
			nn, o->njobs, o->arrive);
		return -EINVAL;
	}
	/* the NICs in id order (topo_nic() order), one pass */
	for (uint32_t i = 0; i < t->nports && js->npool < nn; i++)
		if (t->nodes[t->ports[i].node].kind == TOPO_HOST && sim_pool_add(js, i) < 0)
			return -ENOMEM;
	if (o->placement == 0)
		for (uint32_t i = nn - 1; i > 0; i--) {
			uint32_t j = (uint32_t)(rng() % (i + 1)), x = js->pool[i];

			js->pool[i] = js->pool[j];
			js->pool[j] = x;
		}
	per = (nn - o->arrive) / o->njobs;
	for (uint32_t j = 0; j < o->njobs; j++) {
		if (js->n == js->cap) {
			struct sim_job *v = realloc(js->v, sizeof(*v) * (o->njobs + 1));

			if (v == NULL)
				return -ENOMEM;
			js->v = v;
			js->cap = o->njobs + 1;
		}
		js->v[js->n++] = (struct sim_job){.nics = js->pool + (size_t)j * per, .n = per};
	}
	*arr = (struct sim_job){.nics = js->pool + (nn - o->arrive), .n = o->arrive};
	return 0;
}

/* ---- demand and job times ------------------------------------------------------ */

struct job_time {
	double worst_s; /* slowest flow: bits / rate */
	double ideal_s; /* every NIC at line rate */
};

/* The flows of job j (coll_id j); its bits per flow and ideal time. */
static int sim_add_job(struct ctl_demand *d, const struct topo *t, enum ctl_coll_op op,
		       const struct sim_job *jb, uint32_t j, const struct sim_opts *o,
		       uint64_t *bits_j, double *ideal_j)
{
	uint32_t per = jb->n;
	/* offered load: each NIC sends at line rate, split over its flows */
	uint32_t peers = op == CTL_COLL_ALL_TO_ALL ? per - 1 : 1;
	uint64_t rate = (uint64_t)(o->rate_g * 1e9) / peers;
	uint64_t vol =
		op == CTL_COLL_ALL_TO_ALL ? o->bytes / per : 2 * (per - 1) * (o->bytes / per);
	int ret = ctl_demand_add_collective(
		d, t, op, op == CTL_COLL_ALL_TO_ALL ? rate * per : rate * per / (2 * (per - 1)),
		jb->nics, per, o->qps, j, 0, j * 0x1000);

	if (ret < 0)
		return ret;
	*bits_j = 8 * vol / o->qps;
	*ideal_j = 8.0 * (double)vol * peers / (o->rate_g * 1e9);
	return 0;
}

/* Per job: completion time under the flows' target rates. */
static void job_times(const struct ctl_demand *d, uint32_t njobs, const uint64_t *bits_per_flow,
		      const double *ideal_s, struct job_time *jt)
{
	for (uint32_t j = 0; j < njobs; j++) {
		jt[j].worst_s = 0;
		jt[j].ideal_s = ideal_s[j];
	}
	for (size_t i = 0; i < d->n; i++) {
		const struct ctl_flow *f = &d->flows[i];
		double t;

		if (f->coll_id >= njobs)
			continue;
		t = f->target_bps > 0 ? (double)bits_per_flow[f->coll_id] / f->target_bps : 1e30;
		if (t > jt[f->coll_id].worst_s)
			jt[f->coll_id].worst_s = t;
	}
}

/* ---- the run --------------------------------------------------------------------- */

struct sim_result {
	struct lap gen, index, first_paths, first_rates, paths, rates, ecmp, inc_paths, inc_rates;
	struct ctl_plan_stats st, inc_st;
	double ecmp_util, bound, inc_util, inc_bound;
	double inc_rate_err; /* its largest relative difference from a full filling */
	uint64_t mem_est, maxrss;
	size_t flows, inc_flows;
};

static int sim_check_memory(const struct sim_opts *o, uint64_t *est)
{
	uint64_t hosts, sws, edges, links, flows, lim;
	const char *what;
	double gib = 1024.0 * 1024 * 1024;

	if (o->spines > 0) {
		hosts = (uint64_t)o->leaves * o->hpl;
		sws = (uint64_t)o->spines + o->leaves;
		edges = o->leaves;
		links = hosts + (uint64_t)o->leaves * o->spines;
	} else {
		uint64_t k = o->k;

		hosts = k * k * k / 4;
		sws = 5 * k * k / 4;
		edges = k * k / 2;
		links = hosts + k * k * k / 2;
	}
	flows = hosts * o->qps;
	if (o->op == 1)
		flows = hosts * (hosts / o->njobs) * o->qps;
	*est = sim_mem_estimate(hosts, sws, edges, links, flows);
	lim = sim_mem_limit(o->max_mem, &what);
	if (*est > lim) {
		fprintf(stderr,
			"ice-sim: the %s of %" PRIu64 " hosts, %" PRIu64 " switches and %" PRIu64
			" flows needs about %.2f GiB; the limit is %.2f GiB (%s): not generating "
			"it\n",
			o->spines > 0 ? "leaf-spine" : "fat-tree", hosts, sws, flows, *est / gib,
			lim / gib, what);
		return -ENOMEM;
	}
	return 0;
}

static int sim_plan(struct ctl_planner *p, struct ctl_demand *d, const struct ctl_plan_opts *po,
		    const bool *changed, struct ctl_plan_stats *st, struct lap *paths,
		    struct lap *rates)
{
	struct lap l = lap_start();
	int ret = ctl_plan_paths(p, d, po, st);

	*paths = lap_since(l);
	if (ret < 0) {
		fprintf(stderr, "ice-sim: plan: %s\n", strerror(-ret));
		return ret;
	}
	l = lap_start();
	ret = ctl_plan_rates_changed(p, d, 0, 1.0, changed);
	*rates = lap_since(l);
	if (ret < 0)
		fprintf(stderr, "ice-sim: rates: %s\n", strerror(-ret));
	return ret;
}

/* The incremental rates against a full water-filling of the same routes
 * (not timed): the flows it refilled, and the largest relative difference. */
static int sim_rates_check(struct ctl_planner *p, struct ctl_demand *d, struct sim_result *r)
{
	double *inc = malloc(sizeof(double) * (d->n + 1));
	int ret;

	if (inc == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < d->n; i++)
		inc[i] = d->flows[i].target_bps;
	ret = ctl_plan_rates(p, d, 0, 1.0);
	r->inc_rate_err = 0;
	for (size_t i = 0; ret == 0 && i < d->n; i++) {
		double full = d->flows[i].target_bps, e;

		e = fabs(inc[i] - full) / (full > 0 ? full : 1);
		if (e > r->inc_rate_err)
			r->inc_rate_err = e;
	}
	free(inc);
	if (ret < 0)
		fprintf(stderr, "ice-sim: rates: %s\n", strerror(-ret));
	return ret;
}

static void print_text(const struct sim_opts *o, const struct topo *t, const struct sim_jobs *js,
		       const struct sim_result *r, const struct job_time *je,
		       const struct job_time *ji)
{
	double mib = 1024.0 * 1024;

	printf("fabric: %s, %u switches+hosts, %u links, %u hosts at %.0f Gbit/s (generated in "
	       "%.2f s, planner index %.2f s)\n",
	       o->spines ? "leaf-spine" : "fat-tree", t->nnodes, t->nlinks, topo_nic_count(t),
	       o->rate_g, r->gen.wall, r->index.wall);
	printf("jobs: %u x %s over %u hosts (job 0), %s placement, %u QP(s) per connection: %zu "
	       "flows\n",
	       js->n, o->op == 1 ? "all_to_all" : "all_reduce", js->v[0].n,
	       o->jobs_file[0]	   ? "jobs-file"
	       : o->placement == 1 ? "rack-aligned"
				   : "random",
	       o->qps, r->flows);
	printf("%-22s %10s %10s\n", "", "ECMP", "ICE");
	printf("%-22s %10.3f %10.3f   (lower bound %.3f; ICE / bound %.4f)\n",
	       "max link utilisation", r->ecmp_util, r->st.max_util, r->bound,
	       r->bound > 0 ? r->st.max_util / r->bound : 0);
	for (uint32_t j = 0; j < js->n && j < 8; j++)
		printf("job %-3u busbw / ideal  %10.3f %10.3f   (time %.3f s vs %.3f s; ideal %.3f "
		       "s)\n",
		       j, je[j].ideal_s / je[j].worst_s, ji[j].ideal_s / ji[j].worst_s,
		       je[j].worst_s, ji[j].worst_s, ji[j].ideal_s);
	printf("first plan (builds the DAGs): paths %.3f s (CPU %.3f s), rates %.3f s (CPU %.3f "
	       "s)\n",
	       r->first_paths.wall, r->first_paths.cpu, r->first_rates.wall, r->first_rates.cpu);
	printf("full plan: %.3f s (CPU %.3f s) = paths %.3f s (CPU %.3f s; construction %.3f s, "
	       "local search %.3f s, %u moves%s) + rates %.3f s (CPU %.3f s)\n",
	       r->paths.wall + r->rates.wall, r->paths.cpu + r->rates.cpu, r->paths.wall,
	       r->paths.cpu, r->st.greedy_s, r->st.search_s, r->st.moves,
	       r->st.budget_hit ? ", stopped on its time budget" : "", r->rates.wall, r->rates.cpu);
	if (r->st.kempe_util > 0)
		printf("balanced colouring: max utilisation %.3f before local search, %llu "
		       "alternating-path recolourings\n",
		       r->st.kempe_util, (unsigned long long)r->st.kempe_chains);
	printf("ECMP baseline: paths and rates %.3f s\n", r->ecmp.wall);
	if (o->arrive > 0)
		printf("arriving job of %u hosts (%zu flows) into %zu planned flows: paths %.3f s "
		       "(CPU %.3f s; construction %.3f s, local search %.3f s, %u moves%s), rates "
		       "%.3f s (CPU %.3f s; the flows connected to the new ones, within %.1e of a "
		       "full filling); max utilisation %.3f, bound %.3f\n",
		       o->arrive, r->inc_flows, r->flows, r->inc_paths.wall, r->inc_paths.cpu,
		       r->inc_st.greedy_s, r->inc_st.search_s, r->inc_st.moves,
		       r->inc_st.budget_hit ? ", stopped on its time budget" : "",
		       r->inc_rates.wall, r->inc_rates.cpu, r->inc_rate_err, r->inc_util,
		       r->inc_bound);
	printf("memory: peak %.0f MiB (getrusage maxrss), estimated %.0f MiB\n", r->maxrss / mib,
	       r->mem_est / mib);
}

static void print_json(const struct sim_opts *o, const struct topo *t, const struct sim_jobs *js,
		       const struct sim_result *r, const struct job_time *je,
		       const struct job_time *ji)
{
	json_t *jobs = json_array(), *root;
	char *s;

	for (uint32_t j = 0; j < js->n; j++)
		json_array_append_new(jobs,
				      json_pack("{s:I, s:f, s:f}", "hosts", (json_int_t)js->v[j].n,
						"ecmp_busbw_ratio", je[j].ideal_s / je[j].worst_s,
						"ice_busbw_ratio", ji[j].ideal_s / ji[j].worst_s));
	root = json_pack(
		"{s:s, s:I, s:I, s:I, s:I, s:s, s:I, s:o, s:f, s:f, s:f, s:f, s:f, s:f, s:f, "
		"s:f, s:f, s:f, s:f}",
		"fabric", o->spines ? "leaf-spine" : "fat-tree", "hosts",
		(json_int_t)topo_nic_count(t), "links", (json_int_t)t->nlinks, "qps",
		(json_int_t)o->qps, "flows", (json_int_t)r->flows, "op",
		o->op == 1 ? "all_to_all" : "all_reduce", "kempe_chains",
		(json_int_t)r->st.kempe_chains, "jobs", jobs, "ecmp_util", r->ecmp_util, "ice_util",
		r->st.max_util, "bound", r->bound, "first_paths_s", r->first_paths.wall, "paths_s",
		r->paths.wall, "paths_cpu_s", r->paths.cpu, "rates_s", r->rates.wall, "rates_cpu_s",
		r->rates.cpu, "kempe_util", r->st.kempe_util, "mem_estimate", (double)r->mem_est,
		"maxrss", (double)r->maxrss);
	if (o->arrive > 0) {
		json_object_set_new(root, "arrive_hosts", json_integer(o->arrive));
		json_object_set_new(root, "inc_paths_s", json_real(r->inc_paths.wall));
		json_object_set_new(root, "inc_paths_cpu_s", json_real(r->inc_paths.cpu));
		json_object_set_new(root, "inc_rates_s", json_real(r->inc_rates.wall));
		json_object_set_new(root, "inc_rates_cpu_s", json_real(r->inc_rates.cpu));
		json_object_set_new(root, "inc_greedy_s", json_real(r->inc_st.greedy_s));
		json_object_set_new(root, "inc_search_s", json_real(r->inc_st.search_s));
		json_object_set_new(root, "inc_moves", json_integer(r->inc_st.moves));
		json_object_set_new(root, "inc_rate_err", json_real(r->inc_rate_err));
		json_object_set_new(root, "inc_budget_hit", json_boolean(r->inc_st.budget_hit));
		json_object_set_new(root, "inc_util", json_real(r->inc_util));
		json_object_set_new(root, "inc_bound", json_real(r->inc_bound));
	}
	s = json_dumps(root, JSON_COMPACT);
	if (s != NULL)
		printf("%s\n", s);
	free(s);
	json_decref(root);
}

int main(int argc, char **argv)
{
	struct sim_opts so = {.k = 16,
			      .njobs = 1,
			      .qps = 1,
			      .bytes = 1ull << 30,
			      .seed = 1,
			      .rate_g = 100,
			      .budget = 1.0,
			      .arrive_budget = 0.2};
	struct ice_cfg_cli cli = {
		.tool = "ice-sim",
		.synopsis = "usage: ice-sim [--k K | --leaf-spine S,L,H] [options]",
		.fields = sim_fields,
		.nfields = sizeof(sim_fields) / sizeof(sim_fields[0]),
		.obj = &so,
	};
	struct sim_jobs js = {0};
	struct sim_job arr = {0};
	struct sim_result r = {0};
	enum ctl_coll_op op;
	struct topo_gen_opts go;
	struct topo *t = NULL;
	struct ctl_planner *p = NULL;
	struct ctl_demand d;
	struct ctl_plan_opts po;
	struct ctl_plan_stats tmp;
	uint64_t *bits = NULL;
	double *ideal = NULL, *planned = NULL;
	bool *changed = NULL;
	struct job_time *je = NULL, *ji = NULL;
	struct lap l;
	int ret, rc = 1;

	ret = ice_cfg_parse_args(&cli, argc, argv);
	if (ret != 0)
		return ret > 0 ? 0 : 2;
	if (so.jobs_file[0] != '\0' && so.arrive > 0) {
		fprintf(stderr, "ice-sim: --arrive places its job itself: not with --jobs-file\n");
		return 2;
	}
	op = so.op == 0 ? CTL_COLL_ALL_REDUCE : CTL_COLL_ALL_TO_ALL;
	rng_state = so.seed;
	ctl_demand_init(&d, CTL_UNIT_BPS);
	if (sim_check_memory(&so, &r.mem_est) < 0)
		goto out;

	l = lap_start();
	topo_gen_opts_default(&go);
	go.host_rate_bps = go.fabric_rate_bps = (uint64_t)(so.rate_g * 1e9);
	if (so.spines > 0) {
		go.spines = so.spines;
		go.leaves = so.leaves;
		go.hosts_per_leaf = so.hpl;
		t = topo_gen_leaf_spine(&go);
	} else {
		/* past k = 22 the generator's wide address plan */
		go.k = so.k;
		t = topo_gen_fat_tree(&go);
	}
	if (t == NULL) {
		fprintf(stderr, "ice-sim: cannot generate the topology: %s\n", strerror(errno));
		goto out;
	}
	r.gen = lap_since(l);
	l = lap_start();
	p = ctl_planner_new(t);
	if (p == NULL) {
		fprintf(stderr, "ice-sim: planner: %s\n", strerror(errno));
		goto out;
	}
	r.index = lap_since(l);

	ret = so.jobs_file[0] != '\0' ? sim_jobs_load(so.jobs_file, t, &js)
				      : sim_jobs_place(t, &so, &js, &arr);
	if (ret < 0)
		goto out;
	bits = calloc(js.n + 1, sizeof(uint64_t));
	ideal = calloc(js.n + 1, sizeof(double));
	je = calloc(js.n + 1, sizeof(*je));
	ji = calloc(js.n + 1, sizeof(*ji));
	if (bits == NULL || ideal == NULL || je == NULL || ji == NULL)
		goto out;
	for (uint32_t j = 0; j < js.n; j++) {
		ret = sim_add_job(&d, t, op, &js.v[j], j, &so, &bits[j], &ideal[j]);
		if (ret < 0) {
			fprintf(stderr, "ice-sim: demand of job %u: %s\n", j, strerror(-ret));
			goto out;
		}
	}
	r.flows = d.n;

	/* the first plan builds the DAGs (once per topology in the daemon);
	 * the full plan is the same demand planned from scratch again */
	ctl_plan_opts_default(&po);
	po.search_budget_s = so.budget;
	if (sim_plan(p, &d, &po, NULL, &tmp, &r.first_paths, &r.first_rates) < 0 ||
	    sim_plan(p, &d, &po, NULL, &r.st, &r.paths, &r.rates) < 0)
		goto out;
	r.bound = r.st.bound;
	job_times(&d, js.n, bits, ideal, ji);
	/* the ECMP baseline's rates overwrite the planned ones: kept aside for
	 * the arriving job's incremental rates */
	planned = malloc(sizeof(double) * (d.n + 1));
	if (planned == NULL)
		goto out;
	for (size_t i = 0; i < d.n; i++)
		planned[i] = d.flows[i].target_bps;

	l = lap_start();
	ret = ctl_plan_ecmp(ctl_pathmap_model(p), &d);
	if (ret == 0)
		ret = ctl_plan_rates(p, &d, 1, 1.0);
	r.ecmp = lap_since(l);
	if (ret < 0) {
		fprintf(stderr, "ice-sim: ecmp: %s\n", strerror(-ret));
		goto out;
	}
	r.ecmp_util = ctl_max_util(p, &d, 1);
	job_times(&d, js.n, bits, ideal, je);
	for (size_t i = 0; i < d.n; i++)
		d.flows[i].start_bps = d.flows[i].target_bps = planned[i];

	if (so.arrive > 0) {
		uint64_t b;
		double id;

		ret = sim_add_job(&d, t, op, &arr, js.n, &so, &b, &id);
		if (ret < 0) {
			fprintf(stderr, "ice-sim: demand of the arriving job: %s\n",
				strerror(-ret));
			goto out;
		}
		r.inc_flows = d.n - r.flows;
		po.mode = CTL_PLAN_INCREMENTAL;
		po.search_budget_s = so.arrive_budget;
		po.routes_current = true; /* the planned flows' routes are ours */
		changed = calloc(d.n + 1, sizeof(bool));
		if (changed == NULL)
			goto out;
		for (size_t i = r.flows; i < d.n; i++)
			changed[i] = true; /* the kept flows' rates are the planned ones */
		if (sim_plan(p, &d, &po, changed, &r.inc_st, &r.inc_paths, &r.inc_rates) < 0 ||
		    sim_rates_check(p, &d, &r) < 0)
			goto out;
		r.inc_util = r.inc_st.max_util;
		r.inc_bound = r.inc_st.bound;
	}
	r.maxrss = peak_rss_bytes();
	if (so.json)
		print_json(&so, t, &js, &r, je, ji);
	else
		print_text(&so, t, &js, &r, je, ji);
	if (so.sports) {
		double t0 = ice_now_s();

		ret = ctl_plan_sports(ctl_pathmap_model(p), &d);
		printf("source ports: %s in %.3f s for %zu flows\n",
		       ret == 0 ? "all found" : "FAILED", ice_now_s() - t0, d.n);
	}
	rc = 0;
out:
	ctl_demand_fini(&d);
	ctl_planner_free(p);
	topo_free(t);
	sim_jobs_fini(&js);
	free(bits);
	free(ideal);
	free(planned);
	free(changed);
	free(je);
	free(ji);
	return rc;
}
