// SPDX-License-Identifier: Apache-2.0
/*
 * ice-train: a synthetic training loop with real compute and real
 * communication across ranks on different devices (profiles).
 *
 *   ice-train --model train/models/mlp.yaml --profiles train/profiles/emu-2kind.yaml \
 *             --devices emu-fast,emu-slow --scheme dp --split plan --steps 5 --warmup 2
 *
 * One local rank per device (like ice-bench). Each job calibrates the
 * predictor's network model on its own communicator, plans the split
 * (trn_plan_dp / trn_plan_pp or the even split), trains, and compares the
 * measured step time with the prediction. --efficiency runs every device
 * group alone, then the mixed job with the planner's and the even split,
 * and reports the mixed-training efficiency; --together also runs the
 * groups alone all at the same time (a set of jobs, run_set) and reports
 * the efficiency over them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ice_config.h"
#include "ice_log.h"
#include "ice_train.h"
#include "ice_train_report.h"
#include "tp_launch.h"
#include "dev.h"
#include "tp_opts.h"

struct opts {
	char model_path[512], profiles_path[512], devices[1024], trace[256];
	char save_profiles[512]; /* --save-profiles: profiles refined from the steps */
	enum itr_scheme scheme;	 /* ICE_CFG_ENUM: stored as an int */
	enum itr_split split;
	enum trn_pp_sched sched;
	int steps, warmup;
	int repeat;	    /* runs of every job */
	int nranks;	    /* --nranks: 0, or the number of devices (checked) */
	int dp_tail;	    /* 0: auto */
	int refine;	    /* --refine N: 0, or warm-up steps to refine the prediction from */
	int optim;	    /* enum trn_optim */
	int grad, param;    /* enum trn_grad */
	double lr, overlap; /* overlap < 0: from the schedule */
	double replan;	    /* re-plan threshold (0: never) */
	int pp_mb;	    /* --pp-micro-batch: 0 the model's, TRN_PP_MB_AUTO, or N */
	uint32_t seed;
	bool efficiency, together, json;
	bool no_contention; /* the predictor does not price CPU contention */
	bool comm_thread;   /* PP host ranks: communication on its own thread */
	struct tp_opts tp;
};

static const char *const scheme_names[] = {"dp", "pp", NULL};
static const char *const split_names[] = {"plan", "even", NULL};
static const char *const sched_names[] = {"zb", "1f1b", NULL};
static const char *const optim_names[] = {"sharded", "replicated", NULL};
static const char *const grad_names[] = {"fp32", "bf16", NULL};

static int set_lr(const struct ice_cfg_field *f, void *obj, const char *text, char *msg, size_t len)
{
	struct opts *o = obj;
	char *end;

	(void)f;
	o->lr = strtod(text, &end);
	if (*end != '\0' || end == text || !(o->lr >= 0) || !isfinite(o->lr)) {
		snprintf(msg, len, "expected a number >= 0, got '%s'", text);
		return -EINVAL;
	}
	return 0;
}

static int set_dp_tail(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		       size_t len)
{
	struct ice_cfg_field n = {
		.key = f->key, .type = ICE_CFG_I32, .min = 1, .max = 1 << 20, .offset = f->offset};

	if (strcmp(text, "auto") == 0) {
		((struct opts *)obj)->dp_tail = 0;
		return 0;
	}
	if (ice_cfg_set(&n, 1, obj, f->key, text, NULL) == 0)
		return 0;
	snprintf(msg, len, "expected auto or an integer in [1, %d], got '%s'", 1 << 20, text);
	return -EINVAL;
}

static int set_pp_mb(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		     size_t len)
{
	int v = trn_pp_mb_parse(text);

	(void)f;
	if (v == -EINVAL) {
		snprintf(msg, len, "expected auto or a micro-batch size in [1, %d], got '%s'",
			 1 << 20, text);
		return -EINVAL;
	}
	((struct opts *)obj)->pp_mb = v;
	return 0;
}

#define F(k, t, m, ...) ICE_CFG_ROW(struct opts, k, t, m, __VA_ARGS__)
#define REQ		ICE_CFG_REQUIRED
static const struct ice_cfg_field train_fields[] = {
	F("model", ICE_CFG_STRING, model_path, .flags = REQ, .arg = "FILE",
	  .help = "model description (trn_model_load)"),
	F("profiles", ICE_CFG_STRING, profiles_path, .flags = REQ, .arg = "FILE",
	  .help = "device profiles (trn_profiles_load)"),
	F("devices", ICE_CFG_STRING, devices, .flags = REQ, .arg = "LIST",
	  .help = "one rank per device: NAME,NAME*COUNT,..."),
	F("scheme", ICE_CFG_ENUM, scheme, .choices = scheme_names,
	  .help = "data or pipeline parallelism (default dp)"),
	F("split", ICE_CFG_ENUM, split, .choices = split_names,
	  .help = "the planner's split or the even one (default plan)"),
	F("pp_schedule", ICE_CFG_ENUM, sched, .choices = sched_names,
	  .help = "pipeline schedule: zero bubble (default) or 1F1B"),
	ICE_CFG_FUNC_ROW("pp_micro_batch", set_pp_mb, .arg = "auto|N",
			 .help = "PP: samples per micro-batch (default the model's);\nauto: each "
				 "job's plan chooses the size whose\nsplit predicts the shortest "
				 "step, of those every\ndevice's profile states a speed for\n"
				 "(pp_gflops_at) that divide the batch; the even\nsplit and each "
				 "device alone choose their own"),
	F("steps", ICE_CFG_I32, steps, .min = 1, .max = ITR_MAX_STEPS / 2,
	  .help = "timed steps (default 5)"),
	F("warmup", ICE_CFG_I32, warmup, .min = 0, .max = ITR_MAX_STEPS / 2,
	  .help = "untimed steps first (default 2: a pipeline's\nstages settle in the second)"),
	ICE_CFG_FUNC_ROW("lr", set_lr, .arg = "X", .help = "SGD learning rate (default 0.001)"),
	F("seed", ICE_CFG_U32, seed, .min = 0, .max = 0x7fffffff,
	  .help = "weights and data seed (default 1)"),
	ICE_CFG_FUNC_ROW(
		"dp_tail", set_dp_tail, .offset = offsetof(struct opts, dp_tail), .arg = "N|auto",
		.help = "DP: run a step in chunks of N micro-batches, each\nforward "
			"and backward layer by layer (a layer's\nweights stay in cache); "
			"the gradient all-reduce\nhides behind the last chunk's backward "
			"(default\nauto: 16 or all, longer where the all-reduce needs it)"),
	F("optimizer", ICE_CFG_ENUM, optim, .choices = optim_names,
	  .help = "DP: each rank updates a part of the weights sized\nby its memory bandwidth "
		  "(reduce-scatter, update,\nall-gather; default), or all of them after an\n"
		  "all-reduce"),
	F("grad_dtype", ICE_CFG_ENUM, grad, .choices = grad_names,
	  .help = "DP: the type gradients are reduced in (default\nfp32); bf16 halves the "
		  "reduce-scatter's bytes,\nthe update stays fp32"),
	F("param_dtype", ICE_CFG_ENUM, param, .choices = grad_names,
	  .help = "sharded DP: the type weights are all-gathered\nand computed on (default "
		  "fp32); bf16 halves the\nall-gather's bytes, each rank keeps the fp32\nmaster "
		  "of its own part"),
	F("overlap", ICE_CFG_DOUBLE, overlap, .min = 0, .max = 1,
	  .help = "share of backward the predictor may hide the DP\nall-reduce behind (default: "
		  "the tail's)"),
	F("replan", ICE_CFG_DOUBLE, replan, .min = 0, .max = 10, .arg = "X",
	  .help = "planned split: re-plan it from the ranks' measured\nspeeds every second "
		  "step and run the new split\nwhen it is predicted X/2 shorter (at the first\n"
		  "check, after the warm-up: 0.5%); a step more than\n"
		  "X (0.1: 10%) off renews the prediction (default\n0: never; PP: the layers "
		  "move with their weights)"),
	F("refine", ICE_CFG_I32, refine, .min = 0, .max = ITR_MAX_STEPS / 2, .arg = "N",
	  .help = "predict the step again after the warm-up, from the\nspeeds the ranks' "
		  "matrix multiplies sustained in\nthe last N warm-up steps (at most --warmup; "
		  "the\ntimed steps are compared with both predictions;\ndefault 0: only the "
		  "profiles')"),
	F("save_profiles", ICE_CFG_STRING, save_profiles, .arg = "FILE",
	  .help = "write each device's profile with the speed its\nmatrix multiplies "
		  "sustained in the timed steps\n(its own: the run-queue wait others caused "
		  "left\nout, gflops_own; the jobs it ran alone, else all;\nthe median over "
		  "the runs) into FILE, replacing\nthe same name"),
	F("no_contention", ICE_CFG_BOOL, no_contention, .flags = ICE_CFG_SWITCH,
	  .help = "predict as if communication never took CPU from\nthe compute (the "
		  "predictor prices it by default:\neach rank's cores and its calibrated "
		  "CPU per byte)"),
	F("comm_thread", ICE_CFG_BOOL, comm_thread, .flags = ICE_CFG_SWITCH,
	  .help = "PP: a host rank's communication on a thread of its\nown, as on "
		  "every other rank (default: its compute\nthread drives it between its "
		  "matrix multiplies,\nwhich spares the thread's wake-ups)"),
	F("efficiency", ICE_CFG_BOOL, efficiency, .flags = ICE_CFG_SWITCH,
	  .help = "run each device group alone, then the mixed job with\nthe planned and the "
		  "even split; print the efficiency"),
	F("together", ICE_CFG_BOOL, together, .flags = ICE_CFG_SWITCH,
	  .help = "with --efficiency: also run the groups alone all at\nthe same time, each its "
		  "own job (the faster ones\nmore steps, to last as long as the slowest; "
		  "each\ncounts the steps that ran while all of them did), "
		  "and\nprint "
		  "the efficiency over them too (where the\ngroups share a machine's memory and "
		  "caches, each\ngroup alone then shares them as in the mixed job)"),
	F("repeat", ICE_CFG_I32, repeat, .min = 1, .max = ITR_MAX_REPEAT,
	  .help = "run every job N times, in turn (each repeat starting\nat the next job), "
		  "and keep each job's run of median\nthroughput (default 1)"),
	F("nranks", ICE_CFG_I32, nranks, .min = 1, .max = TRN_MAX_DEVICES, .alias = 'N',
	  .help = "with --rank: ranks in the run, one per device of\n--devices (a check)"),
	F("json", ICE_CFG_BOOL, json, .flags = ICE_CFG_SWITCH,
	  .help = "print one JSON object instead of text"),
	F("trace", ICE_CFG_STRING, trace, .arg = "FILE",
	  .help = "write every rank's compute spans and communication\noperations (CSV, ns) to "
		  "FILE"),
};

static int train_finish(void *obj, const char *path, struct ice_cfg_err *err)
{
	struct opts *o = obj;

	if (o->tp.rank >= 0 && o->tp.netns != NULL)
		return ice_cfg_fail(err, path, "netns",
				    "--rank runs one rank here; --netns starts them all");
	if (o->tp.rank < 0 && o->nranks > 0)
		return ice_cfg_fail(err, path, "nranks",
				    "goes with --rank (local ranks: one per device of --devices)");
	return 0;
}

/* 0 to run, 1 after --help, -EINVAL after a bad option (printed) */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	struct ice_cfg_table tp;
	struct ice_cfg_cli cli = {
		.tool = "ice-train",
		.synopsis = "usage: ice-train --model M.yaml --profiles P.yaml --devices "
			    "NAME[*N],... [options]",
		.fields = train_fields,
		.nfields = sizeof(train_fields) / sizeof(train_fields[0]),
		.obj = o,
		.finish = train_finish,
		.more = &tp,
		.nmore = 1,
		.epilog = "local ranks take --addr-base 127.21.0.1, .2, ... unless it is given;\n"
			  "--rank R --bootstrap IP:PORT --addr IP runs rank R of the run only\n"
			  "(start one per device, on any host; rank 0 prints the reports)\n",
	};

	memset(o, 0, sizeof(*o));
	tp_opts_init(&o->tp, "ice-train", "127.21.0.1");
	tp = tp_opts_table(&o->tp);
	o->steps = 5;
	o->warmup = 2;
	o->repeat = 1;
	o->lr = 1e-3;
	o->overlap = -1;
	o->seed = 1;
	return ice_cfg_parse_args(&cli, argc, argv);
}

/* "a,b*2,c" -> profile indices; exits 2 with a message on errors. */
static int parse_devices(const char *list, const struct trn_profile *p, int np, int *idx)
{
	char buf[1024], *save = NULL;
	int n = 0;

	snprintf(buf, sizeof(buf), "%s", list);
	for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		char *star = strchr(tok, '*');
		long count = 1;
		int i;

		if (star != NULL) {
			char *end;

			*star = '\0';
			count = strtol(star + 1, &end, 10);
			if (*end != '\0' || count < 1 || count > TRN_MAX_DEVICES) {
				fprintf(stderr,
					"ice-train: --devices '%s': count '%s' of %s: expected "
					"1..%d\n",
					list, star + 1, tok, TRN_MAX_DEVICES);
				exit(2);
			}
		}
		i = trn_profile_find(p, np, tok);
		if (i < 0) {
			fprintf(stderr,
				"ice-train: --devices '%s': no profile named '%s'; known:", list,
				tok);
			for (int j = 0; j < np; j++)
				fprintf(stderr, " %s", p[j].name);
			fprintf(stderr, "\n");
			exit(2);
		}
		for (long c = 0; c < count; c++) {
			if (n == TRN_MAX_DEVICES) {
				fprintf(stderr, "ice-train: --devices '%s': at most %d devices\n",
					list, TRN_MAX_DEVICES);
				exit(2);
			}
			idx[n++] = i;
		}
	}
	if (n == 0) {
		fprintf(stderr, "ice-train: --devices '%s': expected NAME[*COUNT],...\n", list);
		exit(2);
	}
	return n;
}

static int check_model(const char *path, const struct trn_model *m, enum itr_scheme scheme,
		       int ndev)
{
	for (int l = 1; l < m->nlayers; l++) {
		if (m->in[l] != m->out[l - 1]) {
			fprintf(stderr,
				"ice-train: %s: layer %d has in %d but layer %d has out %d: "
				"expected a chain (in of a layer = out of the one before)\n",
				path, l, m->in[l], l - 1, m->out[l - 1]);
			return -EINVAL;
		}
	}
	if (m->micro_batch < 1 || m->global_batch < m->micro_batch) {
		fprintf(stderr,
			"ice-train: %s: micro_batch %d, global_batch %d: expected "
			"1 <= micro_batch <= global_batch\n",
			path, m->micro_batch, m->global_batch);
		return -EINVAL;
	}
	if (scheme == ITR_PP && m->global_batch % m->micro_batch != 0) {
		fprintf(stderr,
			"ice-train: %s: pipeline parallelism needs global_batch (%d) to "
			"be a multiple of micro_batch (%d)\n",
			path, m->global_batch, m->micro_batch);
		return -EINVAL;
	}
	if (scheme == ITR_PP && ndev > m->nlayers) {
		fprintf(stderr,
			"ice-train: pp: %d devices but %s has %d layers: expected at most "
			"one stage per layer\n",
			ndev, path, m->nlayers);
		return -EINVAL;
	}
	return 0;
}

/* Launch job's ranks locally (one process each, the first binding addr_base
 * and the others counting up from it); their exit status. */
static int launch_job(struct opts *o, struct job_out *jo, const char *addr_base)
{
	struct itr_rank_arg arg = {.job = &jo->job, .res = jo->res};
	struct tp_comm_cfg cc = o->tp.cc;
	struct tp_launch l = {.tool = "ice-train", .nranks = jo->job.ndev, .addr_base = addr_base};
	char *ns = NULL;
	int st;

	if (o->tp.netns != NULL) {
		ns = strdup(o->tp.netns); /* tp_launch_ranks() cuts it up */
		if (ns == NULL)
			return 1;
		l.netns = ns;
	}
	arg.cc = &cc;
	st = tp_launch_ranks(&l, &cc, itr_rank_main, &arg);
	free(ns);
	return st;
}

/*
 * Run the n jobs of a set at the same time (--together; n = 1: one job):
 * through the control group in --rank mode, else each job's ranks from a
 * process of its own, the jobs' addresses one after the other from
 * --addr-base. 0, or -errno when the run cannot go on.
 */
static int run_set(struct opts *o, struct itr_ctl *ctl, struct job_out **jo, int n)
{
	for (int k = 0; k < n; k++) {
		jo[k]->res = mmap(NULL, sizeof(*jo[k]->res), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (jo[k]->res == MAP_FAILED) {
			jo[k]->res = NULL;
			fprintf(stderr, "ice-train: cannot map %zu bytes for results: %s\n",
				sizeof(struct itr_result), strerror(errno));
			return -ENOMEM;
		}
		memset(jo[k]->res, 0, sizeof(*jo[k]->res));
		jo[k]->status = 0;
		if (!o->json && o->tp.rank <= 0)
			fprintf(stderr, "ice-train: running %s (%s, %s split, %d ranks)%s...\n",
				jo[k]->job.label,
				jo[k]->job.scheme == ITR_DP	? "dp"
				: jo[k]->job.sched == TRN_PP_ZB ? "pp zb"
								: "pp 1f1b",
				itr_split_name(jo[k]->job.split), jo[k]->job.ndev,
				n > 1 ? ", at the same time as the set's other jobs" : "");
	}
	if (ctl != NULL) {
		static struct itr_job js[ITR_MAX_JOBS];
		struct itr_result *res[ITR_MAX_JOBS];
		int st[ITR_MAX_JOBS] = {0}, ret;

		for (int k = 0; k < n; k++) {
			js[k] = jo[k]->job;
			res[k] = jo[k]->res;
		}
		ret = itr_ctl_run(ctl, js, n, res, st);
		if (ret < 0)
			return ret;
		/* rank 0: each job's; the others: this rank's, in st[0] */
		for (int k = 0; k < n; k++)
			jo[k]->status = o->tp.rank == 0 ? st[k] : st[0];
	} else if (n == 1) {
		jo[0]->status = launch_job(o, jo[0], o->tp.addr_base);
	} else {
		struct in_addr base;
		pid_t pid[ITR_MAX_JOBS], self = getpid();
		uint32_t off = 0;

		if (tp_launch_parse_addr("ice-train", "--addr-base", o->tp.addr_base, &base) < 0)
			return -EINVAL;
		fflush(stdout);
		fflush(stderr);
		for (int k = 0; k < n; k++) {
			struct in_addr a = {.s_addr = htonl(ntohl(base.s_addr) + off)};
			char ip[INET_ADDRSTRLEN];

			inet_ntop(AF_INET, &a, ip, sizeof(ip));
			off += (uint32_t)jo[k]->job.ndev;
			pid[k] = fork();
			if (pid[k] == 0) {
				/* ends with this launcher, as its ranks end with it */
				if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != self)
					_exit(1);
				_exit(launch_job(o, jo[k], ip));
			}
			if (pid[k] < 0) {
				fprintf(stderr, "ice-train: fork: %s\n", strerror(errno));
				jo[k]->status = 1;
			}
		}
		for (int k = 0; k < n; k++) {
			int st;

			if (pid[k] > 0 && waitpid(pid[k], &st, 0) == pid[k])
				jo[k]->status = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
			else if (pid[k] > 0)
				jo[k]->status = 1;
		}
	}
	for (int k = 0; k < n; k++) {
		struct itr_result *res = jo[k]->res;

		res->ok = jo[k]->status == 0;
		for (int r = 0; r < jo[k]->job.ndev; r++)
			if (!res->rank[r].done)
				res->ok = false;
	}
	if (n > 1)
		itr_together_window(jo, n);
	for (int k = 0; k < n; k++)
		if (jo[k]->res->ok)
			itr_step_stats(jo[k]);
	return 0;
}

static void job_init(struct itr_job *j, const struct opts *o, const struct trn_model *m,
		     const char *label, enum itr_split split)
{
	memset(j, 0, sizeof(*j));
	snprintf(j->label, sizeof(j->label), "%s", label);
	j->scheme = o->scheme;
	j->split = split;
	j->sched = o->sched;
	j->model = *m;
	j->steps = o->steps;
	j->warmup = o->warmup;
	j->lr = o->lr;
	j->overlap = o->overlap; /* < 0: from the DP tails (trn_dp_tails) */
	j->dp_tail = o->dp_tail;
	j->replan = o->replan;
	j->no_contention = o->no_contention;
	j->comm_thread = o->comm_thread;
	j->refine = o->refine;
	j->pp_mb_auto = o->pp_mb == TRN_PP_MB_AUTO;
	j->seed = o->seed;
	if (o->trace[0] != '\0')
		snprintf(j->trace, sizeof(j->trace), "%s", o->trace);
}

/*
 * The jobs of a --together set run at the same time only while all of them
 * run: the slowest keeps --steps, each other one gets the timed steps that
 * make it last as long (from its profiles: a step's time goes as 1 / the
 * sum of its devices' gflops, which leaves out a group's communication and
 * a pipeline's bubble, so it fits groups of one device best; warm-up
 * unchanged), so every job's timed steps run while the others compute;
 * where the devices' speeds move away from their profiles, the figures
 * count only the steps that did (itr_together_window).
 */
static void together_steps(struct job_out *set, int n)
{
	double t[ITR_MAX_JOBS], tmax = 0;

	for (int k = 0; k < n; k++) {
		const struct itr_job *j = &set[k].job;
		double g = 0;

		for (int d = 0; d < j->ndev; d++)
			g += j->dev[d].gflops;
		t[k] = g > 0 ? 1 / g : 0;
		tmax = t[k] > tmax ? t[k] : tmax;
	}
	for (int k = 0; k < n; k++) {
		struct itr_job *j = &set[k].job;
		/* the step arrays hold warmup + steps + 1 step ends (main's check) */
		double most = ITR_MAX_STEPS - 1 - j->warmup;
		double total = t[k] > 0 ? (j->warmup + j->steps) * tmax / t[k] : 0;
		double steps = ceil(total - 1e-9) - j->warmup;

		if (steps > j->steps)
			j->steps = (int)(steps < most ? steps : most);
	}
}

/* --pp-micro-batch auto: does a size that divides the batch have a speed
 * in every device's profile? */
static bool pp_mb_some(const struct trn_model *m, const struct trn_profile *prof, const int *idx,
		       int ndev)
{
	static struct trn_profile dev[TRN_MAX_DEVICES];
	int sizes[TRN_PP_AT_MAX];

	for (int d = 0; d < ndev; d++)
		dev[d] = prof[idx[d]];
	return trn_pp_mb_sizes(m, dev, ndev, sizes) > 0;
}

/*
 * --save-profiles FILE: every device of the run with gflops replaced by what
 * its matrix multiplies sustained in the timed steps (gflops_own: its own
 * speed, without the run-queue wait others caused; trn_speed_own), the
 * median over the runs of the jobs in
 * which it ran alone (all ranks of the job this device), else of every job
 * it ran in; into FILE, replacing the profile of the same name or adding it
 * (FILE is created if absent). Emulated devices are left out (they compute
 * at their stated speed). -1 after a message.
 */
static int save_profiles(const char *path, const struct trn_profile *prof, int np, bool pp,
			 int file_mb, struct job_out (*runs)[ITR_MAX_REPEAT], int njobs, int nruns)
{
	static struct trn_profile all[TRN_MAX_DEVICES];
	struct ice_cfg_err ce;
	char ebuf[512], when[32], src[256];
	int n = 0, changed = 0;
	time_t now = time(NULL);
	struct tm tm;
	FILE *f = fopen(path, "r");

	if (f != NULL) {
		fclose(f);
		n = trn_profiles_load(path, all, TRN_MAX_DEVICES, &ce);
		if (n < 0) {
			fprintf(stderr, "ice-train: --save-profiles: %s\n",
				ice_cfg_err_str(&ce, ebuf, sizeof(ebuf)));
			return -1;
		}
	}
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	for (int i = 0; i < njobs; i++)
		for (int d = 0; d < runs[i][0].job.ndev; d++) {
			const struct trn_profile *p = &runs[i][0].job.dev[d];
			double v[ITR_MAX_JOBS * ITR_MAX_REPEAT * TRN_MAX_DEVICES], g;
			char at[32];
			int nv = 0, k, o, seen = 0, mb = 0;

			if (p->emulated)
				continue;
			for (int x = 0; x < i; x++)
				for (int e = 0; e < runs[x][0].job.ndev; e++)
					seen |= strcmp(runs[x][0].job.dev[e].name, p->name) == 0;
			for (int e = 0; e < d; e++)
				seen |= strcmp(runs[i][0].job.dev[e].name, p->name) == 0;
			if (seen)
				continue;
			/* pass 0: jobs of this device alone; pass 1: any */
			for (int pass = 0; pass < 2 && nv == 0; pass++)
				for (int x = 0; x < njobs; x++) {
					const struct itr_job *jx = &runs[x][0].job;
					bool alone = true, in = false;

					for (int e = 0; e < jx->ndev; e++) {
						bool me = strcmp(jx->dev[e].name, p->name) == 0;

						in |= me;
						alone &= me;
					}
					/* pass 0: alone one after the other, not
					 * --together (another device computing) */
					if (!in || (pass == 0 && (!alone || jx->together > 0)))
						continue;
					for (int r = 0; r < nruns; r++) {
						const struct itr_result *res = runs[x][r].res;
						int rmb = runs[x][r].job.model.micro_batch;

						/* runs at one micro-batch (with
						 * --pp-micro-batch auto each job's
						 * run at its own): the first taken's */
						if (res == NULL || !res->ok ||
						    (mb != 0 && rmb != mb))
							continue;
						for (int e = 0; e < jx->ndev; e++)
							if (strcmp(jx->dev[e].name, p->name) == 0 &&
							    res->rank[e].gflops_own > 0) {
								v[nv++] = res->rank[e].gflops_own;
								mb = rmb;
							}
					}
				}
			if (nv == 0)
				continue;
			qsort(v, (size_t)nv, sizeof(v[0]), itr_cmp_double);
			k = trn_profile_find(all, n, p->name);
			if (k < 0) {
				if (n == TRN_MAX_DEVICES)
					continue;
				k = n++;
			}
			all[k] = *p;
			/* the profile's own capacity, not a rank's share of it, and
			 * its own speeds: a pipeline's steps give pp_gflops */
			o = trn_profile_find(prof, np, p->name);
			if (o >= 0) {
				all[k].mem_gib = prof[o].mem_gib;
				all[k].gflops = prof[o].gflops;
				all[k].pp_gflops = prof[o].pp_gflops;
			}
			g = nv % 2 ? v[nv / 2] : (v[nv / 2 - 1] + v[nv / 2]) / 2;
			/* a pipeline's: pp_gflops_at at its micro-batch, and
			 * pp_gflops when that is the model file's */
			if (!pp)
				all[k].gflops = g;
			if (pp && mb == file_mb)
				all[k].pp_gflops = g;
			if (pp && trn_profile_pp_at_set(&all[k], mb, g) < 0)
				fprintf(stderr,
					"ice-train: --save-profiles %s: %s states speeds at %d "
					"micro-batch sizes already: %.2f GFLOP/s at %d not "
					"kept\n",
					path, p->name, TRN_PP_AT_MAX, g, mb);
			snprintf(at, sizeof(at), " at micro-batch %d", mb);
			snprintf(src, sizeof(src),
				 "ice-train's timed %s steps%s at %s (median of %d; was %.2f "
				 "GFLOP/s)",
				 pp ? "pipeline" : "DP", pp && mb != file_mb ? at : "", when, nv,
				 p->gflops);
			memcpy(all[k].source, src, sizeof(all[k].source) - 1);
			all[k].source[sizeof(all[k].source) - 1] = '\0';
			changed++;
		}
	if (changed == 0) {
		fprintf(stderr,
			"ice-train: --save-profiles %s: no device of the run was measured "
			"(emulated devices keep their stated speed): nothing written\n",
			path);
		return 0;
	}
	if (trn_profiles_save(path, all, n) < 0) {
		fprintf(stderr, "ice-train: --save-profiles %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* A run's throughput for ranking; a failed run counts as the slowest. */
static double run_tput(const struct job_out *jo)
{
	return jo->res->ok ? jo->tput : 0;
}

/* Of a job's n runs, keep (in *out) the run of median throughput and unmap
 * the others' results. */
static void keep_median(struct job_out *runs, int n, struct job_out *out)
{
	int order[ITR_MAX_REPEAT], m;
	double lo = INFINITY, hi = 0;

	for (int r = 0; r < n; r++) {
		double t = run_tput(&runs[r]);
		int k = r;

		lo = t < lo ? t : lo;
		hi = t > hi ? t : hi;
		/* insertion sort by throughput */
		for (; k > 0 && run_tput(&runs[order[k - 1]]) > t; k--)
			order[k] = order[k - 1];
		order[k] = r;
	}
	m = order[(n - 1) / 2];
	*out = runs[m];
	out->tput_lo = lo;
	out->tput_hi = hi;
	for (int r = 0; r < n; r++) {
		out->tput_runs[r] = run_tput(&runs[r]);
		out->place_runs[r] = runs[r].place;
		out->ref_runs[r] =
			runs[r].res->ok && runs[r].pred_ref > 0 ? (float)runs[r].err_ref_pct : NAN;
		out->roll_runs[r] =
			runs[r].res->ok && runs[r].roll ? (float)runs[r].err_roll_pct : NAN;
		for (int k = 0; k < runs[r].job.ndev && k < TRN_MAX_DEVICES; k++) {
			out->own_runs[k][r] =
				runs[r].res->ok ? (float)runs[r].res->rank[k].gflops_own : 0;
			out->cpu_runs[k][r] =
				runs[r].res->ok ? (float)runs[r].res->rank[k].gflops_cpu : 0;
		}
	}
	for (int r = 0; r < n; r++)
		if (r != m)
			munmap(runs[r].res, sizeof(*runs[r].res));
}

/* --efficiency, each repeat on its own: run r's mixed samples/s over the
 * sum of the groups' run r (eff->per_run); jobs as in main: the groups
 * alone, with --together the same again, then the mixed plan and even. */
static void eff_per_run(struct job_out (*runs)[ITR_MAX_REPEAT], int njobs, int ngroups,
			bool together, int nruns, struct itr_eff *eff)
{
	eff->nruns = nruns;
	for (int r = 0; r < nruns; r++)
		for (int t = 0; t < 2; t++) {
			int first = t == 0 ? 0 : ngroups;
			double sum = 0;
			bool ok = t == 0 || together;

			for (int g = first; g < first + ngroups && ok; g++) {
				ok = runs[g][r].res->ok;
				sum += runs[g][r].tput;
			}
			for (int s = 0; s < 2; s++) {
				const struct job_out *m = &runs[njobs - 2 + s][r];

				eff->per_run[2 * t + s][r] = ok && m->res->ok ? m->tput / sum : NAN;
			}
		}
}

int main(int argc, char **argv)
{
	static struct trn_profile prof[TRN_MAX_DEVICES], prof_file[TRN_MAX_DEVICES];
	static struct job_out jobs[ITR_MAX_JOBS], runs[ITR_MAX_JOBS][ITR_MAX_REPEAT];
	static struct itr_job js[ITR_MAX_JOBS];
	struct itr_eff e = {.alone = 0,
			    .plan = NAN,
			    .even = NAN,
			    .together_alone = NAN,
			    .together_plan = NAN,
			    .together_even = NAN};
	struct trn_model model;
	struct ice_cfg_err ce;
	char ebuf[512];
	int idx[TRN_MAX_DEVICES], np, ndev, njobs = 0, rc = 0, ngroups = 0, file_mb;
	int group_of[TRN_MAX_DEVICES], set_at[ITR_MAX_JOBS + 1], nsets = 0;
	struct itr_ctl *ctl = NULL;
	struct opts o;

	ice_log_init_env();
	rc = parse_opts(argc, argv, &o);
	if (rc != 0)
		return rc > 0 ? 0 : 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	np = trn_profiles_load(o.profiles_path, prof, TRN_MAX_DEVICES, &ce);
	if (np < 0) {
		fprintf(stderr, "ice-train: %s\n", ice_cfg_err_str(&ce, ebuf, sizeof(ebuf)));
		return 2;
	}
	if (trn_model_load(o.model_path, &model, &ce) < 0) {
		fprintf(stderr, "ice-train: %s\n", ice_cfg_err_str(&ce, ebuf, sizeof(ebuf)));
		return 2;
	}
	file_mb = model.micro_batch;
	if (o.pp_mb != 0 && o.scheme != ITR_PP) {
		fprintf(stderr, "ice-train: --pp-micro-batch: pipeline parallel only (a DP step "
				"runs the model's micro-batch)\n");
		return 2;
	}
	if (o.pp_mb > 0) {
		if (model.global_batch % o.pp_mb != 0) {
			fprintf(stderr,
				"ice-train: --pp-micro-batch %d: expected a divisor of %s's "
				"global_batch (%d)\n",
				o.pp_mb, o.model_path, model.global_batch);
			return 2;
		}
		model.micro_batch = o.pp_mb;
	}
	/* a pipeline plans with each device's pipeline speed at its
	 * micro-batch, where stated */
	memcpy(prof_file, prof, sizeof(prof));
	if (o.scheme == ITR_PP)
		trn_profiles_pp_at(prof, np, model.micro_batch);
	model.optim = o.optim;
	model.grad = o.grad;
	model.param = o.param;
	if ((o.grad != TRN_GRAD_FP32 || o.param != TRN_GRAD_FP32) && o.scheme != ITR_DP) {
		fprintf(stderr,
			"ice-train: --%s bf16: data parallel only (a pipeline exchanges "
			"no gradients or weights)\n",
			o.grad != TRN_GRAD_FP32 ? "grad-dtype" : "param-dtype");
		return 2;
	}
	if (o.param != TRN_GRAD_FP32 && o.optim != TRN_OPTIM_SHARDED) {
		fprintf(stderr, "ice-train: --param-dtype bf16: the sharded optimizer only (the "
				"replicated one all-gathers no weights)\n");
		return 2;
	}
	ndev = parse_devices(o.devices, prof, np, idx);
	if (check_model(o.model_path, &model, o.scheme, ndev) < 0)
		return 2;
	if (o.pp_mb == TRN_PP_MB_AUTO && ndev > 0 && !pp_mb_some(&model, prof, idx, ndev)) {
		fprintf(stderr,
			"ice-train: --pp-micro-batch auto: no micro-batch size that divides "
			"the global batch (%d) has a pipeline speed in the profile of every "
			"device of --devices in %s (pp_gflops_at; ice-devprof "
			"--pp-micro-batches)\n",
			model.global_batch, o.profiles_path);
		return 2;
	}
	if (o.refine > o.warmup) {
		fprintf(stderr,
			"ice-train: --refine %d: expected at most --warmup (%d): the prediction "
			"is refined from warm-up steps, never from the timed ones\n",
			o.refine, o.warmup);
		return 2;
	}
	if (o.warmup + o.steps + 1 > ITR_MAX_STEPS) {
		fprintf(stderr, "ice-train: --warmup + --steps: expected at most %d\n",
			ITR_MAX_STEPS - 1);
		return 2;
	}
	/* only whether the backend is built in: probing (initialising a GPU
	 * runtime) before the fork would break the ranks */
	for (int i = 0; i < ndev; i++) {
		const struct trn_profile *p = &prof[idx[i]];
		int kind = p->emulated ? DEV_MEM_HOST : dev_mem_kind_parse(p->kind);

		if (kind < 0 || dev_mem_ops_get((enum dev_mem_kind)kind) == NULL) {
			fprintf(stderr,
				"ice-train: device '%s' (%s:%s) needs %s memory, which this build "
				"lacks (see transport/README.md)\n",
				p->name, o.profiles_path, p->name, p->kind);
			return 2;
		}
	}
	if (o.tp.netns != NULL) {
		int nns = 1;

		for (const char *c = o.tp.netns; *c != '\0'; c++)
			nns += *c == ',';
		if (nns != ndev) {
			fprintf(stderr,
				"ice-train: --netns '%s': %d namespaces for %d devices: "
				"expected one namespace per device\n",
				o.tp.netns, nns, ndev);
			return 2;
		}
	}
	if (o.together && !o.efficiency) {
		fprintf(stderr, "ice-train: --together runs the groups alone for --efficiency; "
				"it needs --efficiency\n");
		return 2;
	}
	if (o.tp.netns != NULL && o.efficiency) {
		fprintf(stderr, "ice-train: --efficiency runs groups of ranks locally; it does "
				"not take --netns\n");
		return 2;
	}
	if (o.trace[0] != '\0') {
		FILE *f = strlen(o.trace) < sizeof(jobs[0].job.trace) ? fopen(o.trace, "w") : NULL;

		if (f == NULL) {
			fprintf(stderr, "ice-train: --trace %s: %s\n", o.trace,
				strlen(o.trace) < sizeof(jobs[0].job.trace) ? strerror(errno)
									    : "path too long");
			return 2;
		}
		fprintf(f, "job,split,rank,step,mb,event,t0_ns,t1_ns,t2_ns,t3_ns\n");
		fclose(f);
	}
	/* device groups by profile name, in order of first appearance */
	for (int i = 0; i < ndev; i++) {
		group_of[i] = -1;
		for (int k = 0; k < i; k++)
			if (idx[k] == idx[i])
				group_of[i] = group_of[k];
		if (group_of[i] < 0)
			group_of[i] = ngroups++;
	}
	if (o.efficiency) {
		for (int g = 0; g < ngroups; g++) {
			struct itr_job *j = &jobs[njobs].job;
			char label[64];

			for (int i = 0; i < ndev; i++)
				if (group_of[i] == g) {
					snprintf(label, sizeof(label), "alone %s",
						 prof[idx[i]].name);
					break;
				}
			job_init(j, &o, &model, label, ITR_SPLIT_PLAN);
			for (int i = 0; i < ndev; i++)
				if (group_of[i] == g) {
					j->grank[j->ndev] = i;
					j->dev[j->ndev++] = prof[idx[i]];
				}
			if (o.scheme == ITR_PP && j->ndev > model.nlayers)
				j->ndev = model.nlayers;
			njobs++;
		}
		/* --together: the same jobs again, one set run at the same time */
		for (int g = 0; o.together && g < ngroups; g++) {
			struct itr_job *j = &jobs[njobs++].job;

			*j = jobs[g].job;
			snprintf(j->label, sizeof(j->label), "together %s",
				 jobs[g].job.dev[0].name);
			j->together = 1;
		}
		if (o.together)
			together_steps(&jobs[ngroups], ngroups);
	}
	for (int s = 0; s < 2; s++) {
		enum itr_split sp = s == 0 ? ITR_SPLIT_PLAN : ITR_SPLIT_EVEN;
		struct itr_job *j = &jobs[njobs].job;

		if (!o.efficiency && sp != o.split)
			continue;
		job_init(j, &o, &model, "mixed", sp);
		for (int i = 0; i < ndev; i++) {
			j->grank[j->ndev] = i;
			j->dev[j->ndev++] = prof[idx[i]];
		}
		njobs++;
	}
	for (int i = 0; i < njobs; i++)
		js[i] = jobs[i].job;
	if (o.tp.rank < 0) {
		/* the launcher's ranks all run here */
		itr_mem_share(js, njobs, NULL);
	} else {
		if (o.nranks > 0 && o.nranks != ndev) {
			fprintf(stderr,
				"ice-train: --nranks %d but --devices '%s' names %d devices: "
				"expected one rank per device\n",
				o.nranks, o.devices, ndev);
			return 2;
		}
		ctl = itr_ctl_join(&o.tp, ndev);
		if (ctl == NULL)
			return 1;
		if (itr_ctl_jobs(ctl, js, &njobs, ITR_MAX_JOBS, &o.repeat, &jobs[njobs - 1].job) <
		    0) {
			fprintf(stderr,
				"ice-train: rank %d: cannot get the jobs from rank 0 (%s)\n",
				o.tp.rank, o.tp.bootstrap);
			itr_ctl_free(ctl);
			return 1;
		}
	}
	for (int i = 0; i < njobs; i++)
		jobs[i].job = js[i];
	/* what runs at once: a job, or the adjacent jobs of a --together set
	 * (set s is jobs set_at[s] to set_at[s + 1] - 1) */
	for (int i = 0; i < njobs; i++)
		if (i == 0 || jobs[i].job.together == 0 ||
		    jobs[i].job.together != jobs[i - 1].job.together)
			set_at[nsets++] = i;
	set_at[nsets] = njobs;
	/* repeat r starts at set r (mod their number): no job always runs
	 * first or after the same one; every rank derives the same order */
	for (int r = 0; r < o.repeat; r++)
		for (int q = 0; q < nsets; q++) {
			struct job_out *set[ITR_MAX_JOBS];
			int s = (q + r) % nsets, i = set_at[s], n = set_at[s + 1] - i;

			for (int k = 0; k < n; k++) {
				struct job_out *jo = &runs[i + k][r];

				jo->job = jobs[i + k].job;
				jo->run = r + 1;
				jo->nruns = o.repeat;
				jo->place = q;
				set[k] = jo;
			}
			if (run_set(&o, ctl, set, n) < 0) {
				itr_ctl_free(ctl);
				return 1;
			}
			for (int k = 0; k < n; k++) {
				struct job_out *jo = set[k];

				if (ctl != NULL && o.tp.rank != 0) {
					/* rank 0 reports */
					rc |= jo->status != 0;
					munmap(jo->res, sizeof(*jo->res));
					continue;
				}
				if (!jo->res->ok || !jo->data_ok)
					rc = 1;
				/* --pp-micro-batch auto: the job ran at its
				 * plan's size, its devices at their speeds there */
				if (jo->res->mbc.mb > 0) {
					jo->job.model.micro_batch = jo->res->mbc.mb;
					trn_profiles_pp_at(jo->job.dev, jo->job.ndev,
							   jo->res->mbc.mb);
				}
				itr_check_profiles(jo, o.profiles_path);
				if (!o.json)
					itr_print_job(jo);
			}
		}
	itr_ctl_free(ctl);
	if (o.tp.rank > 0)
		return rc;
	if (o.save_profiles[0] != '\0' &&
	    save_profiles(o.save_profiles, prof_file, np, o.scheme == ITR_PP, file_mb, runs, njobs,
			  o.repeat) < 0)
		rc = 1;
	if (o.efficiency)
		eff_per_run(runs, njobs, ngroups, o.together, o.repeat, &e);
	for (int i = 0; i < njobs; i++)
		keep_median(runs[i], o.repeat, &jobs[i]);
	if (o.efficiency) {
		int mixed = njobs - 2; /* the planned split's, then the even's */
		bool all_ok = true, tog_ok = true;

		if (o.together)
			e.together_alone = 0;

		for (int i = 0; i < ngroups; i++) {
			all_ok &= jobs[i].res->ok;
			e.alone += jobs[i].tput;
			if (o.together) {
				tog_ok &= jobs[ngroups + i].res->ok;
				e.together_alone += jobs[ngroups + i].tput;
			}
		}
		if (all_ok && jobs[mixed].res->ok)
			e.plan = jobs[mixed].tput / e.alone;
		if (all_ok && jobs[mixed + 1].res->ok)
			e.even = jobs[mixed + 1].tput / e.alone;
		if (o.together && tog_ok && jobs[mixed].res->ok)
			e.together_plan = jobs[mixed].tput / e.together_alone;
		if (o.together && tog_ok && jobs[mixed + 1].res->ok)
			e.together_even = jobs[mixed + 1].tput / e.together_alone;
		if (!o.json) {
			printf("\n== mixed-training efficiency (%s%s%s, model %s, global batch "
			       "%d)\n",
			       o.scheme == ITR_DP ? "dp" : "pp", o.scheme == ITR_PP ? " " : "",
			       o.scheme == ITR_PP ? trn_pp_sched_name(o.sched) : "", model.name,
			       model.global_batch);
			printf("   %-16s %-44s %-5s %9s %10s %11s %8s\n", "job", "devices", "split",
			       "step s", "samples/s", "predicted s", "error %");
			for (int i = 0; i < njobs; i++) {
				char devs[512];

				itr_dev_list(&jobs[i].job, devs, sizeof(devs));
				if (!jobs[i].res->ok) {
					printf("   %-16s %-44s %-5s %9s\n", jobs[i].job.label, devs,
					       itr_split_name(jobs[i].job.split), "FAILED");
					continue;
				}
				printf("   %-16s %-44s %-5s %9.4f %10.2f %11.4f %+8.1f\n",
				       jobs[i].job.label, devs, itr_split_name(jobs[i].job.split),
				       jobs[i].step_med, jobs[i].tput, jobs[i].pred,
				       jobs[i].err_pct);
			}
			if (o.repeat > 1) {
				printf("   each job ran %d times, in turn; shown: its run of "
				       "median "
				       "throughput; samples/s over the runs:",
				       o.repeat);
				for (int i = 0; i < njobs; i++)
					printf("%s %s%s%s %.2f-%.2f", i ? "," : "",
					       jobs[i].job.label, mixed <= i ? " " : "",
					       mixed <= i ? itr_split_name(jobs[i].job.split) : "",
					       jobs[i].tput_lo, jobs[i].tput_hi);
				printf("\n");
			}
			printf("   efficiency = mixed samples/s / sum of groups alone (%.2f "
			       "samples/s): plan %.1f%%, even %.1f%%\n",
			       e.alone, e.plan * 100, e.even * 100);
			if (o.together)
				printf("   over the groups alone at the same time (%.2f "
				       "samples/s): "
				       "plan %.1f%%, even %.1f%%\n",
				       e.together_alone, e.together_plan * 100,
				       e.together_even * 100);
			for (int k = 0; o.repeat > 1 && k < (o.together ? 4 : 2); k++) {
				printf("   %s, %s, each repeat over its groups' runs:",
				       k % 2 ? "even" : "plan",
				       k < 2 ? "alone" : "at the same time");
				for (int r = 0; r < o.repeat; r++)
					if (isnan(e.per_run[k][r]))
						printf(" -"); /* a run failed */
					else
						printf(" %.1f%%", e.per_run[k][r] * 100);
				printf("\n");
			}
			itr_print_targets(jobs, njobs, o.scheme, e.plan);
		}
		if (o.json)
			itr_print_json(jobs, njobs, &model, o.scheme, &e);
	} else if (o.json) {
		itr_print_json(jobs, njobs, &model, o.scheme, NULL);
	}
	for (int i = 0; i < njobs; i++)
		if (jobs[i].res != NULL)
			munmap(jobs[i].res, sizeof(*jobs[i].res));
	return rc;
}
