/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice-train's report of its jobs (ice_train_report.c): step statistics and
 * the predictions' errors, the text tables, --json, the targets line and
 * the profile check. The launcher (ice_train_main.c) runs the jobs.
 */
#ifndef ICE_TRAIN_REPORT_H
#define ICE_TRAIN_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "ice_train.h"

/* --repeat's limit */
#define ITR_MAX_REPEAT 9

/* One finished job, as the launcher saw it. */
struct job_out {
	struct itr_job job;
	struct itr_result *res; /* shared mapping */
	int status;		/* tp_launch_ranks() */
	double step_med, step_mean, tput, cores;
	double pred, err_pct;		/* from the profiles, for the split the job ran */
	double pred_last, err_last_pct; /* the job's last prediction: after --replan,
					 * from measured speeds (else pred) */
	double pred_ref, err_ref_pct;	/* --refine: the prediction after the warm-up
					 * (0: none) and its error */
	bool roll;			/* --refine: every timed step predicted from the steps
					 * before it */
	double err_roll_pct;		/* the median of those predictions' errors */
	bool emu_overrun;
	bool data_ok;	/* DP: weights identical; PP: every message arrived intact */
	int run, nruns; /* this is run `run` (1-based) of nruns */
	int place;	/* how many ran before it in its repeat (a job or a --together set each) */
	/* the timed steps its figures count, [from, to): all of them (0, 0),
	 * or in a --together set those that ran while every job of the set
	 * ran (itr_together_window) */
	int from, to;
	double tput_lo, tput_hi;	  /* over the runs (--repeat) */
	double tput_runs[ITR_MAX_REPEAT]; /* each run's samples/s in turn (0: failed) */
	int place_runs[ITR_MAX_REPEAT];	  /* each run's place */
	/* each rank's own speed in each run (gflops_own; 0: failed), beside
	 * tput_runs: whether a device's speed moved between the runs a
	 * repeat's efficiency divides */
	float own_runs[TRN_MAX_DEVICES][ITR_MAX_REPEAT];
	float cpu_runs[TRN_MAX_DEVICES][ITR_MAX_REPEAT]; /* gflops_cpu, the same way */
	/* each run's refined and rolling errors (--refine; NAN: none),
	 * beside tput_runs: each run is a trial of those predictors of its
	 * own, whatever the machine did between the runs */
	float ref_runs[ITR_MAX_REPEAT], roll_runs[ITR_MAX_REPEAT];
};

/* qsort's order of doubles, ascending. */
int itr_cmp_double(const void *a, const void *b);
/* jo's step median and mean, throughput, the prediction's error and, with
 * --refine, the refined and rolling predictions' errors, over its counted
 * steps (from, to). */
void itr_step_stats(struct job_out *jo);
/* The n jobs of a --together set, all finished: each one's counted steps
 * those that ran while all of them ran, and its ranks' gflops_own over
 * them. */
void itr_together_window(struct job_out **jo, int n);
/* "name x n, name" of j's devices into buf. */
void itr_dev_list(const struct itr_job *j, char *buf, size_t len);
const char *itr_split_name(enum itr_split s);
/* One job's table (text). */
void itr_print_job(const struct job_out *jo);
/* --efficiency's figures: the mixed job's samples/s, planned and even
 * split, over the sum of the groups' alone (NAN: a job failed); together:
 * the same over the groups alone at the same time (--together; alone NAN:
 * not run). */
struct itr_eff {
	double alone, plan, even;
	double together_alone, together_plan, together_even;
	/* run r's mixed samples/s over the sum of the groups' run r (NAN
	 * where a run failed), in the order plan, even, plan over the groups
	 * together, even over them: the jobs of one repeat ran within minutes
	 * of each other, so a drift of the machine's speed that they share
	 * cancels in the ratio (the figures above take each job's median
	 * run, which may come from different repeats) */
	double per_run[4][ITR_MAX_REPEAT];
	int nruns;
};
/* Every job as JSON on stdout; eff: --efficiency's figures (NULL: none). */
void itr_print_json(const struct job_out *jobs, int njobs, const struct trn_model *m,
		    enum itr_scheme scheme, const struct itr_eff *eff);
/* The run's goals (reported, not asserted). */
void itr_print_targets(const struct job_out *jobs, int njobs, enum itr_scheme scheme,
		       double eff_plan);
/* A rank that computed far from its profile (path): warned once per device. */
void itr_check_profiles(const struct job_out *jo, const char *path);

#endif
