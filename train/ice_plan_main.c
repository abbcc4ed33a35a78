// SPDX-License-Identifier: Apache-2.0
/*
 * ice-plan: the heterogeneity-aware planner's split next to the even split,
 * with predicted compute, communication and step times (see README.md).
 *
 *   ice-plan --model M.yaml --profiles P.yaml --devices NAME,NAME*COUNT,...
 *            [--scheme dp|pp|both] [--pp-schedule zb|1f1b] [--busbw GBPS] [--p2p GBPS]
 *            [--lat 50us] [--overlap X] [--optimizer sharded|replicated] [--grad-dtype fp32|bf16]
 *            [--param-dtype fp32|bf16] [--cpu-cvt-ns X]
 *            [--cores X,Y,... --cpu-ar-ns X --cpu-p2p-ns X --cpu-msg-us X]
 *            [--pp-micro-batch auto|N] [--json]
 *
 * Exit: 0 done, 1 run-time failure, 2 bad configuration.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ice_log.h"
#include "trn.h"

enum { SCHEME_DP, SCHEME_PP, SCHEME_BOTH };
static const char *const scheme_names[] = {"dp", "pp", "both", NULL};
/* in the order of enum trn_pp_sched */
static const char *const pp_sched_names[] = {"zb", "1f1b", NULL};
/* in the order of enum trn_optim */
static const char *const optim_names[] = {"sharded", "replicated", NULL};
/* in the order of enum trn_grad */
static const char *const grad_names[] = {"fp32", "bf16", NULL};

struct plan_cfg {
	char model[512];
	char profiles[512];
	char devices[1024];
	int scheme;
	int pp_sched; /* enum trn_pp_sched */
	int optim;    /* enum trn_optim */
	int grad;     /* enum trn_grad: gradients */
	int param;    /* enum trn_grad: sharded weights */
	double busbw, p2p, overlap;
	uint64_t lat_ns;
	char cores[1024];	      /* --cores: per device, or one for all ("" = not priced) */
	double cpu_ar_ns, cpu_p2p_ns; /* communication's CPU per byte (ns) */
	double cpu_msg_us;	      /* and per pipeline message (us) */
	double cpu_cvt_ns;	      /* per element converted to/from bf16 (ns) */
	bool json;
	int pp_mb; /* --pp-micro-batch: 0 the model's, TRN_PP_MB_AUTO, else N */
	/* filled by plan_finish() */
	struct trn_model m;
	struct trn_profile prof[TRN_MAX_DEVICES];
	int nprof;
	struct trn_profile dev[TRN_MAX_DEVICES];
	int ndev;
	struct trn_net net;
};

/* --pp-micro-batch auto|N */
static int parse_pp_mb(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		       size_t msg_len)
{
	struct plan_cfg *c = obj;
	int v = trn_pp_mb_parse(text);

	(void)f;
	if (v == -EINVAL) {
		snprintf(msg, msg_len, "expected auto or a micro-batch size in [1, %d], got '%s'",
			 1 << 20, text);
		return -EINVAL;
	}
	c->pp_mb = v;
	return 0;
}

#define F(k, t, f, ...)                                                                            \
	{                                                                                          \
		.key = k, .type = t, .offset = offsetof(struct plan_cfg, f), __VA_ARGS__           \
	}

static const struct ice_cfg_field plan_fields[] = {
	F("model", ICE_CFG_STRING, model, .size = 512, .help = "model file (YAML, train/trn.h)"),
	F("profiles", ICE_CFG_STRING, profiles, .size = 512,
	  .help = "device profile file (YAML, train/trn.h)"),
	F("devices", ICE_CFG_STRING, devices, .size = 1024,
	  .help = "devices in rank/stage order: NAME,NAME,... or NAME*COUNT"),
	F("scheme", ICE_CFG_ENUM, scheme, .choices = scheme_names,
	  .help = "dp, pp or both (default both)"),
	F("pp_schedule", ICE_CFG_ENUM, pp_sched, .choices = pp_sched_names,
	  .help = "pipeline schedule: zb (zero bubble, default) or 1f1b"),
	F("busbw", ICE_CFG_DOUBLE, busbw, .min = 1e-6, .max = 1e6,
	  .help = "all-reduce bus bandwidth, GB/s (default 10)"),
	F("p2p", ICE_CFG_DOUBLE, p2p, .min = 1e-6, .max = 1e6,
	  .help = "pipeline send/recv bandwidth, GB/s (default 10)"),
	F("lat", ICE_CFG_DURATION, lat_ns, .unit = 1000, .min = 0, .max = 10e9,
	  .help = "per-message latency (default 50us; bare numbers in us)"),
	F("overlap", ICE_CFG_DOUBLE, overlap, .min = 0, .max = 1,
	  .help = "share of the DP all-reduce hidden behind backward, 0..1 (default: what "
		  "the layer-by-layer chunks (tails) give, as ice-train runs them)"),
	F("optimizer", ICE_CFG_ENUM, optim, .choices = optim_names,
	  .help = "DP optimizer step: sharded by memory bandwidth (default) or replicated"),
	F("grad_dtype", ICE_CFG_ENUM, grad, .choices = grad_names,
	  .help = "DP: the type gradients are reduced in (default fp32)"),
	F("param_dtype", ICE_CFG_ENUM, param, .choices = grad_names,
	  .help = "sharded DP: the type weights are all-gathered in (default fp32)"),
	F("cores", ICE_CFG_STRING, cores, .size = 1024,
	  .help = "CPU cores each device's rank may use, in --devices order (X,Y,... or one X "
		  "for all; ice-train reads them from the kernel): the predictor prices the "
		  "communication's CPU taken from a host device's compute as ice-train does "
		  "(default: not priced)"),
	F("cpu_ar_ns", ICE_CFG_DOUBLE, cpu_ar_ns, .min = 0, .max = 1e6,
	  .help = "with --cores: CPU ns per gradient byte all-reduced (ice-train's "
		  "calibration prints it; default 0)"),
	F("cpu_p2p_ns", ICE_CFG_DOUBLE, cpu_p2p_ns, .min = 0, .max = 1e6,
	  .help = "with --cores: CPU ns per byte a pipeline stage sends or receives (default 0)"),
	F("cpu_msg_us", ICE_CFG_DOUBLE, cpu_msg_us, .min = 0, .max = 1e6,
	  .help = "with --cores: CPU us per message a pipeline stage sends or receives, beyond "
		  "its bytes (ice-train's PP calibration prints it; default 0)"),
	F("cpu_cvt_ns", ICE_CFG_DOUBLE, cpu_cvt_ns, .min = 0, .max = 1e6,
	  .help = "CPU ns per element a DP rank rounds to bf16 or widens back (--grad-dtype / "
		  "--param-dtype bf16): time on each bucket's path, and with --cores CPU taken "
		  "from the compute; ice-train's calibration prints it; default 0"),
	ICE_CFG_FUNC_ROW(
		"pp_micro_batch", parse_pp_mb, .arg = "auto|N",
		.help = "the pipeline's micro-batch: N samples, or auto: the\nsize "
			"whose planned split predicts the shortest\nstep, of those every "
			"device's profile states a\nspeed for (pp_gflops_at; ice-devprof\n"
			"--pp-micro-batches) that divide the batch\n(default: the model's)"),
	F("json", ICE_CFG_BOOL, json, .help = "print JSON instead of tables"),
};
#define NFIELDS (sizeof(plan_fields) / sizeof(plan_fields[0]))

static void profile_names(const struct plan_cfg *c, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < c->nprof && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i > 0 ? ", " : "",
					c->prof[i].name);
}

static int parse_devices(struct plan_cfg *c, struct ice_cfg_err *err)
{
	char list[sizeof(c->devices)], names[512], *save = NULL, *tok;

	snprintf(list, sizeof(list), "%s", c->devices);
	profile_names(c, names, sizeof(names));
	c->ndev = 0;
	for (tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		char *star = strchr(tok, '*'), *end = NULL;
		long count = 1;
		int idx;

		if (star != NULL) {
			*star = '\0';
			errno = 0;
			count = strtol(star + 1, &end, 10);
			if (errno != 0 || end == star + 1 || *end != '\0' || count < 1 ||
			    count > TRN_MAX_DEVICES)
				return ice_cfg_fail(err, NULL, "devices",
						    "expected NAME*COUNT with COUNT in [1, %d], "
						    "got '%s*%s' in '%s'",
						    TRN_MAX_DEVICES, tok, star + 1, c->devices);
		}
		idx = trn_profile_find(c->prof, c->nprof, tok);
		if (idx < 0)
			return ice_cfg_fail(err, NULL, "devices",
					    "expected profile names of %s (%s), got '%s' in '%s'",
					    c->profiles, names, tok, c->devices);
		if (c->ndev + count > TRN_MAX_DEVICES)
			return ice_cfg_fail(err, NULL, "devices",
					    "expected at most %d devices, got more in '%s'",
					    TRN_MAX_DEVICES, c->devices);
		for (long i = 0; i < count; i++)
			c->dev[c->ndev++] = c->prof[idx];
	}
	if (c->ndev == 0)
		return ice_cfg_fail(err, NULL, "devices",
				    "expected NAME,NAME,... or NAME*COUNT (profiles: %s), got '%s'",
				    names, c->devices);
	return 0;
}

/* --cores: the cores of each device's rank (trn_net.cores, with the CPU
 * per byte of --cpu-ar-ns / --cpu-p2p-ns), as ice-train measures them. */
static int parse_cores(struct plan_cfg *c, const char *path, struct ice_cfg_err *err)
{
	char list[sizeof(c->cores)], *save = NULL, *tok, *end;
	double v[TRN_MAX_DEVICES];
	int n = 0;

	/* the bf16 conversions are also on each bucket's path: priced so
	 * without --cores too */
	for (int i = 0; i < c->ndev; i++)
		c->net.cpu_cvt_s[i] = c->cpu_cvt_ns * 1e-9;
	if (c->cores[0] == '\0') {
		if (c->cpu_ar_ns > 0 || c->cpu_p2p_ns > 0 || c->cpu_msg_us > 0)
			return ice_cfg_fail(err, path, "cores",
					    "expected --cores with --cpu-ar-ns / --cpu-p2p-ns / "
					    "--cpu-msg-us (the cores the communication's CPU is "
					    "taken from)");
		return 0;
	}
	snprintf(list, sizeof(list), "%s", c->cores);
	for (tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		errno = 0;
		if (n == TRN_MAX_DEVICES)
			return ice_cfg_fail(err, path, "cores",
					    "expected at most %d values, got '%s'", TRN_MAX_DEVICES,
					    c->cores);
		v[n] = strtod(tok, &end);
		if (errno != 0 || end == tok || *end != '\0' || !(v[n] > 0) || v[n] > 4096)
			return ice_cfg_fail(
				err, path, "cores",
				"expected numbers of cores in (0, 4096], got '%s' in '%s'", tok,
				c->cores);
		n++;
	}
	if (n != 1 && n != c->ndev)
		return ice_cfg_fail(err, path, "cores",
				    "expected one value or one per device (%d), got %d in '%s'",
				    c->ndev, n, c->cores);
	for (int i = 0; i < c->ndev; i++) {
		c->net.cores[i] = v[n == 1 ? 0 : i];
		c->net.cpu_ar_s[i] = c->cpu_ar_ns * 1e-9;
		c->net.cpu_p2p_s[i] = c->cpu_p2p_ns * 1e-9;
		c->net.cpu_msg_s[i] = c->cpu_msg_us * 1e-6;
	}
	return 0;
}

static int plan_finish(void *obj, const char *path, struct ice_cfg_err *err)
{
	struct plan_cfg *c = obj;
	int n;

	if (c->model[0] == '\0')
		return ice_cfg_fail(err, path, "model", "expected a model file (--model M.yaml)");
	if (c->profiles[0] == '\0')
		return ice_cfg_fail(err, path, "profiles",
				    "expected a profile file (--profiles P.yaml)");
	if (c->devices[0] == '\0')
		return ice_cfg_fail(err, path, "devices",
				    "expected devices (--devices NAME,NAME*COUNT,...)");
	n = trn_model_load(c->model, &c->m, err);
	if (n == -ENOENT)
		return ice_cfg_fail(err, path, "model", "cannot read '%s': %s", c->model,
				    strerror(ENOENT));
	if (n < 0)
		return n;
	c->m.optim = c->optim;
	c->m.grad = c->grad;
	c->m.param = c->param;
	if (c->param != TRN_GRAD_FP32 && c->optim != TRN_OPTIM_SHARDED)
		return ice_cfg_fail(err, path, "param_dtype",
				    "expected fp32 with --optimizer replicated (it all-gathers no "
				    "weights), got %s",
				    trn_grad_name(c->param));
	n = trn_profiles_load(c->profiles, c->prof, TRN_MAX_DEVICES, err);
	if (n == -ENOENT)
		return ice_cfg_fail(err, path, "profiles", "cannot read '%s': %s", c->profiles,
				    strerror(ENOENT));
	if (n < 0)
		return n;
	c->nprof = n;
	if (parse_devices(c, err) < 0)
		return -EINVAL;
	if (c->scheme == SCHEME_PP && c->ndev > c->m.nlayers)
		return ice_cfg_fail(err, path, "devices",
				    "expected at most %d devices for a pipeline of %d layers "
				    "(one stage per device), got %d",
				    c->m.nlayers, c->m.nlayers, c->ndev);
	if (c->pp_mb > 0 && c->m.global_batch % c->pp_mb != 0)
		return ice_cfg_fail(err, path, "pp_micro_batch",
				    "expected a divisor of the global batch (%d), got %d",
				    c->m.global_batch, c->pp_mb);
	c->net.busbw_gbps = c->busbw;
	c->net.p2p_gbps = c->p2p;
	c->net.lat_s = (double)c->lat_ns * 1e-9;
	c->net.overlap = 0; /* DP plans take c->overlap (dp_plan); PP has no all-reduce */
	return parse_cores(c, path, err);
}

/* The DP plan ice-train runs: tails chosen automatically and, unless
 * --overlap gave it, the overlap they give. */
static int dp_plan(const struct plan_cfg *c, const struct trn_profile *dev, int n,
		   const struct trn_net *base, bool even, struct trn_dp_plan *p)
{
	struct trn_net net = *base;

	net.overlap = c->overlap; /* < 0: from the tails */
	return trn_plan_dp_tailed(&c->m, dev, n, &net, even, 0, p);
}

/* ---- efficiency: the mixed job against each device group alone ------------- */

struct group_thr {
	char name[TRN_NAME_MAX];
	int count;
	double thr; /* samples/s alone; 0 when it cannot run alone */
};

/* Throughput of each profile's devices alone under the scheme; returns the
 * number of groups. */
static int groups_alone(const struct plan_cfg *c, bool pp, struct group_thr *g)
{
	int ng = 0;

	for (int i = 0; i < c->ndev; i++) {
		struct trn_profile sub[TRN_MAX_DEVICES];
		struct trn_net net = c->net; /* the group's devices' cores */
		int n = 0, k;

		for (k = 0; k < ng; k++)
			if (strcmp(g[k].name, c->dev[i].name) == 0)
				break;
		if (k < ng)
			continue;
		for (int j = 0; j < c->ndev; j++)
			if (strcmp(c->dev[j].name, c->dev[i].name) == 0) {
				net.cores[n] = c->net.cores[j];
				net.cpu_ar_s[n] = c->net.cpu_ar_s[j];
				net.cpu_p2p_s[n] = c->net.cpu_p2p_s[j];
				net.cpu_msg_s[n] = c->net.cpu_msg_s[j];
				net.cpu_cvt_s[n] = c->net.cpu_cvt_s[j];
				sub[n++] = c->dev[j];
			}
		snprintf(g[ng].name, sizeof(g[ng].name), "%s", c->dev[i].name);
		g[ng].count = n;
		g[ng].thr = 0;
		if (pp) {
			struct trn_pp_plan p;

			struct trn_pp_mb_try t[TRN_PP_AT_MAX];
			int nt;

			/* auto: the group alone at its own best micro-batch */
			if ((c->pp_mb == TRN_PP_MB_AUTO
				     ? trn_plan_pp_mb(&c->m, sub, n, &net, c->pp_sched, false, &p,
						      t, &nt) > 0
				     : trn_plan_pp(&c->m, sub, n, &net, c->pp_sched, &p) == 0))
				g[ng].thr = c->m.global_batch / p.step_s;
		} else {
			struct trn_dp_plan p;

			if (dp_plan(c, sub, n, &net, false, &p) == 0)
				g[ng].thr = c->m.global_batch / p.step_s;
		}
		ng++;
	}
	return ng;
}

/* Sum of the groups' throughputs; 0 when one of them cannot run alone. */
static double group_sum(const struct group_thr *g, int ng)
{
	double s = 0;

	for (int k = 0; k < ng; k++) {
		if (!(g[k].thr > 0))
			return 0;
		s += g[k].thr;
	}
	return s;
}

/* ---- text ------------------------------------------------------------------ */

static const char *emu_mark(const struct trn_profile *p)
{
	return p->emulated ? "*" : "";
}

static void print_header(const struct plan_cfg *c)
{
	const struct trn_model *m = &c->m;
	double fb = 0;
	bool emu = false;

	for (int l = 0; l < m->nlayers; l++)
		fb += trn_layer_fwd_flops(m, l) + trn_layer_bwd_flops(m, l);
	printf("model %s: %d layers, %.2f MB of parameters, %.1f MFLOP fwd+bwd per sample, "
	       "global batch %d, micro-batch %d (%d micro-batches), bucket %d KiB\n",
	       m->name, m->nlayers, trn_model_param_bytes(m) / 1e6, fb / 1e6, m->global_batch,
	       m->micro_batch, m->global_batch / m->micro_batch, m->bucket_kb);
	printf("network: all-reduce busbw %g GB/s, p2p %g GB/s, latency %g us\n", c->net.busbw_gbps,
	       c->net.p2p_gbps, c->net.lat_s * 1e6);
	if (c->cpu_cvt_ns > 0 && c->scheme != SCHEME_PP && trn_grad_cvt_share(&c->m, 1) > 0)
		printf("bf16 conversions (DP): %g ns per element to or from bf16 on the CPU, on "
		       "each bucket's path (an accelerator converts whole buckets on the "
		       "device)\n",
		       c->cpu_cvt_ns);
	if (c->cores[0] != '\0') {
		printf("CPU contention priced (--cores; with the bf16 conversions above): %g ns "
		       "per byte exchanged (DP), %g ns per byte sent/received, %g us per message; "
		       "cores",
		       c->cpu_ar_ns, c->cpu_p2p_ns, c->cpu_msg_us);
		for (int i = 0; i < c->ndev; i++)
			printf("%s %g", i ? "," : "", c->net.cores[i]);
		printf("\n");
	} else {
		printf("CPU contention not priced (--cores: the cores of each device's rank)\n");
	}
	printf("devices:\n");
	for (int i = 0; i < c->ndev; i++) {
		char pp[48] = "";

		if (c->dev[i].pp_gflops > 0)
			snprintf(pp, sizeof(pp), " (pipeline %.3g)", c->dev[i].pp_gflops);
		printf("  %2d %-14s %-4s %8.3g GFLOP/s%s  %s%s\n", i, c->dev[i].name,
		       c->dev[i].kind, c->dev[i].gflops, pp,
		       c->dev[i].emulated ? "EMULATED (stated speed, compute padded); " : "",
		       c->dev[i].source);
		emu = emu || c->dev[i].emulated;
	}
	if (emu)
		printf("  (* below: an emulated profile — figures are the stated speeds, "
		       "not hardware)\n");
}

/* n values with prec decimals, on the current line. */
static void print_values(int prec, const double *v, int n)
{
	for (int i = 0; i < n; i++)
		printf(" %.*f", prec, v[i]);
}

static void print_eff(const struct plan_cfg *c, bool pp, double thr_plan, double thr_even)
{
	struct group_thr g[TRN_MAX_DEVICES];
	int ng = groups_alone(c, pp, g);
	double sum = group_sum(g, ng);

	printf("  each device group alone (%s):", pp ? "pp" : "dp");
	for (int k = 0; k < ng; k++) {
		if (g[k].thr > 0)
			printf(" %s x%d %.2f samples/s;", g[k].name, g[k].count, g[k].thr);
		else
			printf(" %s x%d cannot run alone;", g[k].name, g[k].count);
	}
	printf("\n");
	if (sum > 0)
		printf("  mixed-training efficiency (throughput / sum of groups alone): "
		       "planner %.1f%%, even %.1f%%\n",
		       100 * thr_plan / sum, 100 * thr_even / sum);
	else
		printf("  mixed-training efficiency: n/a (a group cannot run alone)\n");
}

/* Each device's memory need of a plan, MiB, its capacity where stated,
 * and whether it fits (the even split may not). */
static void print_mem(const struct plan_cfg *c, const char *what, const double *need, int over)
{
	bool cap = false;

	for (int i = 0; i < c->ndev; i++)
		cap = cap || trn_mem_cap(&c->dev[i]) > 0;
	printf("  memory, MiB (need%s), %s:", cap ? " / capacity" : "", what);
	for (int i = 0; i < c->ndev; i++) {
		printf("%s %.1f", i ? ";" : "", need[i] / (1 << 20));
		if (trn_mem_cap(&c->dev[i]) > 0)
			printf(" / %.1f", trn_mem_cap(&c->dev[i]) / (1 << 20));
	}
	if (over >= 0)
		printf("  DOES NOT FIT on %s", c->dev[over].name);
	printf("\n");
}

static void print_dp(const struct plan_cfg *c, const struct trn_dp_plan *p,
		     const struct trn_dp_plan *e)
{
	double tp = c->m.global_batch / p->step_s, te = c->m.global_batch / e->step_s;

	printf("\ndata parallel (gradient all-reduce of %.2f MB in %d KiB buckets; tail: "
	       "micro-batches a chunk runs layer by layer)\n",
	       trn_model_param_bytes(&c->m) / 1e6, c->m.bucket_kb);
	printf("  optimizer step %s (update_s), gradients reduced in %s, weights gathered in "
	       "%s\n",
	       trn_optim_name(c->m.optim), trn_grad_name(c->m.grad),
	       c->m.optim == TRN_OPTIM_SHARDED ? trn_grad_name(c->m.param) : "(none)");
	printf("  %-3s %-15s | %-33s | %-33s\n", "dev", "profile", "planner", "even");
	printf("  %-3s %-15s | %8s %10s %8s %4s | %8s %10s %8s %4s\n", "", "", "samples",
	       "compute_s", "update_s", "tail", "samples", "compute_s", "update_s", "tail");
	for (int i = 0; i < c->ndev; i++) {
		char nm[40];

		snprintf(nm, sizeof(nm), "%s%s", c->dev[i].name, emu_mark(&c->dev[i]));
		printf("  %-3d %-15s | %8d %10.4f %8.4f %4d | %8d %10.4f %8.4f %4d\n", i, nm,
		       p->samples[i], p->compute_s[i], p->update_s[i], p->tail[i], e->samples[i],
		       e->compute_s[i], e->update_s[i], e->tail[i]);
	}
	printf("  %-19s | %33.3f | %33.3f\n",
	       c->overlap < 0 ? "overlap (tails)" : "overlap (given)", p->overlap, e->overlap);
	printf("  %-19s | %33.4f | %33.4f\n", "comm_s (exposed)", p->comm_s, e->comm_s);
	if (c->cores[0] != '\0') {
		printf("  contention_s per step (in the step): planner");
		print_values(4, p->contention_s, c->ndev);
		printf(", even");
		print_values(4, e->contention_s, c->ndev);
		printf("\n");
	}
	print_mem(c, "planner", p->mem_need, p->over);
	print_mem(c, "even", e->mem_need, e->over);
	printf("  %-19s | %33.4f | %33.4f\n", "step_s", p->step_s, e->step_s);
	printf("  %-19s | %33.2f | %33.2f\n", "samples/s", tp, te);
	printf("  gain of the planner over even: %+.1f%% throughput\n", 100 * (tp / te - 1));
	print_eff(c, false, tp, te);
}

/* Compute part of a stage's time per micro-batch (the rest is its sends). */
static double stage_compute(const struct plan_cfg *c, const struct trn_pp_plan *p, int s)
{
	double f = 0;

	for (int l = p->first[s]; l < p->first[s] + p->nlayers[s]; l++)
		f += trn_layer_fwd_flops(&c->m, l) + trn_layer_bwd_flops(&c->m, l);
	return f * c->m.micro_batch / (c->dev[s].gflops * 1e9);
}

/* c: the planner's micro-batch and speeds there; ce: the even split's
 * (--pp-micro-batch auto: each at its own best size) */
static void print_pp(const struct plan_cfg *c, const struct trn_pp_plan *p,
		     const struct plan_cfg *ce, const struct trn_pp_plan *e)
{
	double tp = c->m.global_batch / p->step_s, te = c->m.global_batch / e->step_s;

	printf("\npipeline parallel (%s, %d micro-batches of %d, one stage per device; "
	       "times per micro-batch)\n",
	       p->sched == TRN_PP_ZB ? "zero bubble" : "1F1B", p->micro_batches, c->m.micro_batch);
	if (ce->m.micro_batch != c->m.micro_batch)
		printf("  the even split at its own best size: %d micro-batches of %d\n",
		       e->micro_batches, ce->m.micro_batch);
	printf("  %-3s %-15s | %-39s | %-39s\n", "stg", "profile", "planner", "even");
	printf("  %-3s %-15s | %-7s %10s %9s %10s | %-7s %10s %9s %10s\n", "", "", "layers",
	       "compute_s", "send_s", "stage_s", "layers", "compute_s", "send_s", "stage_s");
	for (int s = 0; s < p->nstages; s++) {
		double cp = stage_compute(c, p, s), cpe = stage_compute(ce, e, s);
		char nm[40], lp[24], le[24];

		snprintf(nm, sizeof(nm), "%s%s", c->dev[s].name, emu_mark(&c->dev[s]));
		snprintf(lp, sizeof(lp), "%d-%d", p->first[s], p->first[s] + p->nlayers[s] - 1);
		snprintf(le, sizeof(le), "%d-%d", e->first[s], e->first[s] + e->nlayers[s] - 1);
		printf("  %-3d %-15s | %-7s %10.5f %9.6f %10.5f | %-7s %10.5f %9.6f %10.5f\n", s,
		       nm, lp, cp, p->stage_s[s] - cp, p->stage_s[s], le, cpe, e->stage_s[s] - cpe,
		       e->stage_s[s]);
	}
	if (c->cores[0] != '\0') {
		printf("  contention_s per micro-batch (in send_s): planner");
		print_values(6, p->contention_s, p->nstages);
		printf(", even");
		print_values(6, e->contention_s, e->nstages);
		printf("\n");
	}
	printf("  optimizer step per stage, s per step (update_s): planner");
	for (int st = 0; st < p->nstages; st++)
		printf(" %.4f", p->upd_s[st]);
	printf(", even");
	for (int st = 0; st < e->nstages; st++)
		printf(" %.4f", e->upd_s[st]);
	printf("\n");
	print_mem(c, "planner", p->mem_need, p->over);
	print_mem(c, "even", e->mem_need, e->over);
	printf("  %-19s | %39.4f | %39.4f\n", "step_s", p->step_s, e->step_s);
	printf("  %-19s | %39.2f | %39.2f\n", "samples/s", tp, te);
	printf("  gain of the planner over even: %+.1f%% throughput\n", 100 * (tp / te - 1));
	print_eff(c, true, tp, te);
}

/* ---- JSON ------------------------------------------------------------------- */

/* per device: compute time lost to the communication's CPU (0: not priced) */
static json_t *contention_json(const double *v, int n)
{
	json_t *a = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_real(v[i]));
	return a;
}

/* each device's memory need (trn_mem_need), bytes, and whether all fit */
static void json_mem(json_t *o, const double *need, int n, int over)
{
	json_t *a = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_real(need[i]));
	json_object_set_new(o, "mem_need_bytes", a);
	json_object_set_new(o, "fits", json_boolean(over < 0));
}

static json_t *json_dp(const struct plan_cfg *c, const struct trn_dp_plan *p)
{
	json_t *o = json_object(), *s = json_array(), *cs = json_array(), *t = json_array();
	json_t *us = json_array();

	for (int i = 0; i < p->ndev; i++) {
		json_array_append_new(s, json_integer(p->samples[i]));
		json_array_append_new(cs, json_real(p->compute_s[i]));
		json_array_append_new(us, json_real(p->update_s[i]));
		json_array_append_new(t, json_integer(p->tail[i]));
	}
	json_object_set_new(o, "samples", s);
	json_object_set_new(o, "compute_s", cs);
	json_object_set_new(o, "contention_s", contention_json(p->contention_s, p->ndev));
	json_object_set_new(o, "update_s", us);
	json_object_set_new(o, "optimizer", json_string(trn_optim_name(c->m.optim)));
	json_object_set_new(o, "grad_dtype", json_string(trn_grad_name(c->m.grad)));
	json_object_set_new(o, "param_dtype", json_string(trn_grad_name(c->m.param)));
	json_object_set_new(o, "tail_micro_batches", t);
	json_object_set_new(o, "overlap", json_real(p->overlap));
	json_object_set_new(o, "comm_s", json_real(p->comm_s));
	json_object_set_new(o, "step_s", json_real(p->step_s));
	json_object_set_new(o, "samples_per_s", json_real(c->m.global_batch / p->step_s));
	json_mem(o, p->mem_need, p->ndev, p->over);
	return o;
}

static json_t *json_pp(const struct plan_cfg *c, const struct trn_pp_plan *p)
{
	json_t *o = json_object(), *f = json_array(), *n = json_array(), *st = json_array();
	json_t *cs = json_array(), *us = json_array();

	for (int s = 0; s < p->nstages; s++) {
		json_array_append_new(cs, json_real(stage_compute(c, p, s)));
		json_array_append_new(us, json_real(p->upd_s[s]));
		json_array_append_new(f, json_integer(p->first[s]));
		json_array_append_new(n, json_integer(p->nlayers[s]));
		json_array_append_new(st, json_real(p->stage_s[s]));
	}
	json_object_set_new(o, "first", f);
	json_object_set_new(o, "nlayers", n);
	json_object_set_new(o, "compute_s", cs);
	json_object_set_new(o, "stage_s", st);
	json_object_set_new(o, "contention_s", contention_json(p->contention_s, p->nstages));
	json_object_set_new(o, "update_s", us);
	json_object_set_new(o, "micro_batch", json_integer(c->m.micro_batch));
	json_object_set_new(o, "micro_batches", json_integer(p->micro_batches));
	json_object_set_new(o, "schedule", json_string(trn_pp_sched_name(p->sched)));
	json_object_set_new(o, "step_s", json_real(p->step_s));
	json_object_set_new(o, "samples_per_s", json_real(c->m.global_batch / p->step_s));
	json_mem(o, p->mem_need, p->nstages, p->over);
	return o;
}

static json_t *json_scheme(const struct plan_cfg *c, bool pp, json_t *plan, json_t *even, double tp,
			   double te)
{
	struct group_thr g[TRN_MAX_DEVICES];
	int ng = groups_alone(c, pp, g);
	double sum = group_sum(g, ng);
	json_t *o = json_object(), *ga = json_array();

	json_object_set_new(o, "planner", plan);
	json_object_set_new(o, "even", even);
	json_object_set_new(o, "gain", json_real(tp / te - 1));
	for (int k = 0; k < ng; k++)
		json_array_append_new(ga,
				      json_pack("{s:s, s:i, s:f}", "profile", g[k].name, "count",
						g[k].count, "samples_per_s", g[k].thr));
	json_object_set_new(o, "groups_alone", ga);
	if (sum > 0) {
		json_object_set_new(o, "efficiency", json_real(tp / sum));
		json_object_set_new(o, "efficiency_even", json_real(te / sum));
	}
	return o;
}

/* --pp-micro-batch auto: each size tried, its predicted step */
static void print_pp_mb(const struct plan_cfg *c, const struct trn_pp_mb_try *t, int n)
{
	if (n == 0)
		return;
	printf("  micro-batch chosen (--pp-micro-batch auto): %d; each size's planned split "
	       "predicts:",
	       c->m.micro_batch);
	for (int i = 0; i < n; i++) {
		if (t[i].ret == 0)
			printf(" %d: %.4f s (%.2f samples/s)%s", t[i].mb, t[i].step_s,
			       c->m.global_batch / t[i].step_s, i < n - 1 ? "," : "");
		else
			printf(" %d: no split fits the memory%s", t[i].mb, i < n - 1 ? "," : "");
	}
	printf("\n");
}

static json_t *json_pp_mb(const struct trn_pp_mb_try *t, int n)
{
	json_t *a = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:i, s:b, s:f}", "micro_batch", t[i].mb,
						   "fits", t[i].ret == 0, "step_s", t[i].step_s));
	return a;
}

/* c: the profiles as given; cpp: with their pipeline speeds (pp), cppe:
 * the same for the even split (ppe) */
static int print_json(const struct plan_cfg *c, const struct plan_cfg *cpp,
		      const struct plan_cfg *cppe, const struct trn_dp_plan *dp,
		      const struct trn_dp_plan *dpe, const struct trn_pp_plan *pp,
		      const struct trn_pp_plan *ppe, const struct trn_pp_mb_try *tries, int ntries)
{
	json_t *root = json_object(), *devs = json_array();
	int ret;

	json_object_set_new(root, "model",
			    json_pack("{s:s, s:i, s:i, s:i, s:i, s:f}", "name", c->m.name, "layers",
				      c->m.nlayers, "global_batch", c->m.global_batch,
				      "micro_batch", c->m.micro_batch, "bucket_kb", c->m.bucket_kb,
				      "param_bytes", trn_model_param_bytes(&c->m)));
	for (int i = 0; i < c->ndev; i++)
		json_array_append_new(devs,
				      json_pack("{s:s, s:s, s:b, s:f, s:f, s:f, s:s}", "profile",
						c->dev[i].name, "kind", c->dev[i].kind, "emulated",
						c->dev[i].emulated, "gflops", c->dev[i].gflops,
						"pp_gflops", cpp->dev[i].gflops, "mem_gib",
						c->dev[i].mem_gib, "source", c->dev[i].source));
	json_object_set_new(root, "devices", devs);
	json_object_set_new(root, "net",
			    json_pack("{s:f, s:f, s:f, s:f}", "busbw_gbps", c->net.busbw_gbps,
				      "p2p_gbps", c->net.p2p_gbps, "lat_s", c->net.lat_s,
				      "cpu_cvt_ns", c->cpu_cvt_ns));
	if (c->cores[0] != '\0') {
		json_t *k = json_array();

		for (int i = 0; i < c->ndev; i++)
			json_array_append_new(k, json_real(c->net.cores[i]));
		json_object_set_new(root, "contention",
				    json_pack("{s:o, s:f, s:f, s:f, s:f}", "cores", k, "cpu_ar_ns",
					      c->cpu_ar_ns, "cpu_p2p_ns", c->cpu_p2p_ns,
					      "cpu_msg_us", c->cpu_msg_us, "cpu_cvt_ns",
					      c->cpu_cvt_ns));
	}
	if (dp != NULL)
		json_object_set_new(root, "dp",
				    json_scheme(c, false, json_dp(c, dp), json_dp(c, dpe),
						c->m.global_batch / dp->step_s,
						c->m.global_batch / dpe->step_s));
	if (pp != NULL) {
		json_t *o = json_scheme(cpp, true, json_pp(cpp, pp), json_pp(cppe, ppe),
					c->m.global_batch / pp->step_s,
					c->m.global_batch / ppe->step_s);

		json_object_set_new(o, "micro_batch", json_integer(cpp->m.micro_batch));
		if (ntries > 0)
			json_object_set_new(o, "micro_batch_tries", json_pp_mb(tries, ntries));
		json_object_set_new(root, "pp", o);
	}
	ret = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
	printf("\n");
	json_decref(root);
	return ret < 0 ? -EIO : 0;
}

#define NOFIT "no split fits the devices' memory (their profiles' mem_gib)"

int main(int argc, char **argv)
{
	static struct plan_cfg cfg = {
		.scheme = SCHEME_BOTH, .busbw = 10, .p2p = 10, .lat_ns = 50000, .overlap = -1};
	static struct plan_cfg ppcfg;  /* cfg with the devices' pipeline speeds */
	static struct plan_cfg ppecfg; /* the same for the even split */
	struct ice_cfg_cli cli = {
		.tool = "ice-plan",
		.synopsis = "usage: ice-plan --model M.yaml --profiles P.yaml --devices "
			    "NAME,NAME*COUNT,... [--scheme dp|pp|both] [--pp-schedule zb|1f1b] "
			    "[--busbw GBPS] [--p2p GBPS] "
			    "[--lat 50us] [--overlap X] [--optimizer sharded|replicated] "
			    "[--grad-dtype fp32|bf16] [--param-dtype fp32|bf16] [--cpu-cvt-ns X] "
			    "[--cores X,Y,... --cpu-ar-ns X --cpu-p2p-ns X --cpu-msg-us X] "
			    "[--pp-micro-batch auto|N] [--json]",
		.fields = plan_fields,
		.nfields = NFIELDS,
		.obj = &cfg,
		.finish = plan_finish,
	};
	struct trn_dp_plan dp, dpe;
	struct trn_pp_plan pp, ppe;
	struct trn_pp_mb_try tries[TRN_PP_AT_MAX], tries_e[TRN_PP_AT_MAX];
	int ntries = 0, ntries_e = 0;
	bool do_dp, do_pp;
	int ret, mbe;

	ice_log_set_level(ICE_LOG_WARN);
	ice_log_init_env();
	ret = ice_cfg_parse_args(&cli, argc, argv);
	if (ret != 0)
		return ret > 0 ? 0 : 2;
	do_dp = cfg.scheme != SCHEME_PP;
	do_pp = cfg.scheme != SCHEME_DP;
	if (do_pp && cfg.ndev > cfg.m.nlayers) {
		fprintf(stderr,
			"ice-plan: no pipeline plan: %d devices but %d layers (one stage per "
			"device)\n",
			cfg.ndev, cfg.m.nlayers);
		do_pp = false;
	}
	/* a scheme no split of which fits the memory is left out (said);
	 * nothing to show is an error */
	if (do_dp) {
		ret = dp_plan(&cfg, cfg.dev, cfg.ndev, &cfg.net, false, &dp);
		if (ret == 0)
			ret = dp_plan(&cfg, cfg.dev, cfg.ndev, &cfg.net, true, &dpe);
		if (ret < 0)
			ice_err(ICE_SUB_COMMON, "ice-plan: data-parallel plan failed: %s",
				ret == -ENOMEM ? NOFIT : strerror(-ret));
		if (ret < 0 && (ret != -ENOMEM || cfg.scheme == SCHEME_DP))
			return 1;
		do_dp = ret == 0;
	}
	/* the pipeline plans with each device's pipeline speed at its
	 * micro-batch, where stated */
	ppcfg = cfg;
	if (cfg.pp_mb > 0)
		ppcfg.m.micro_batch = cfg.pp_mb;
	if (do_pp && cfg.pp_mb == TRN_PP_MB_AUTO) {
		ret = trn_plan_pp_mb(&ppcfg.m, ppcfg.dev, ppcfg.ndev, &ppcfg.net, ppcfg.pp_sched,
				     false, &pp, tries, &ntries);
		if (ret == -ENOENT) {
			ice_err(ICE_SUB_COMMON,
				"ice-plan: --pp-micro-batch auto: no micro-batch size that "
				"divides the global batch (%d) has a pipeline speed in every "
				"device's profile in %s (pp_gflops_at; ice-devprof "
				"--pp-micro-batches)",
				cfg.m.global_batch, cfg.profiles);
			return 2;
		}
		if (ret > 0)
			ppcfg.m.micro_batch = ret;
	}
	ppecfg = ppcfg;
	trn_profiles_pp_at(ppcfg.dev, ppcfg.ndev, ppcfg.m.micro_batch);
	if (do_pp) {
		if (cfg.pp_mb != TRN_PP_MB_AUTO)
			ret = trn_plan_pp(&ppcfg.m, ppcfg.dev, ppcfg.ndev, &ppcfg.net,
					  ppcfg.pp_sched, &pp);
		else if (ret > 0)
			ret = 0;
		/* auto: the even split at its own best size, as ice-train's
		 * even job runs it; where no size fits, at the planner's,
		 * with what it lacks */
		mbe = -ENOMEM;
		if (ret == 0 && cfg.pp_mb == TRN_PP_MB_AUTO)
			mbe = trn_plan_pp_mb(&ppecfg.m, ppecfg.dev, ppecfg.ndev, &ppecfg.net,
					     ppecfg.pp_sched, true, &ppe, tries_e, &ntries_e);
		if (ret == 0 && mbe > 0)
			ppecfg.m.micro_batch = mbe;
		else if (ret == 0 && mbe == -ENOMEM)
			ret = trn_plan_pp_even(&ppcfg.m, ppcfg.dev, ppcfg.ndev, &ppcfg.net,
					       ppcfg.pp_sched, &ppe);
		else if (ret == 0)
			ret = mbe;
		trn_profiles_pp_at(ppecfg.dev, ppecfg.ndev, ppecfg.m.micro_batch);
		if (ret < 0)
			ice_err(ICE_SUB_COMMON, "ice-plan: pipeline plan failed: %s",
				ret == -ENOMEM ? NOFIT : strerror(-ret));
		if (ret < 0 && (ret != -ENOMEM || cfg.scheme == SCHEME_PP))
			return 1;
		do_pp = ret == 0;
	}
	if (!do_dp && !do_pp)
		return 1;
	if (cfg.json)
		return print_json(&cfg, &ppcfg, &ppecfg, do_dp ? &dp : NULL, do_dp ? &dpe : NULL,
				  do_pp ? &pp : NULL, do_pp ? &ppe : NULL, tries, ntries) < 0;
	print_header(&cfg);
	if (do_dp)
		print_dp(&cfg, &dp, &dpe);
	if (do_pp) {
		print_pp(&ppcfg, &pp, &ppecfg, &ppe);
		print_pp_mb(&ppcfg, tries, ntries);
	}
	return 0;
}
