/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice-train internals: one job (a set of devices, a scheme, a split) is run
 * by tp_launch_ranks(), one process per device. The ranks write their
 * figures into a struct itr_result the launcher mapped shared before the
 * fork; the launcher prints the reports (text or JSON) from it.
 */
#ifndef ICE_TRAIN_H
#define ICE_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "tp_opts.h"
#include "trn.h"

#define ITR_MAX_STEPS 4096
/* the jobs of one run: each group alone, again --together, mixed plan and even */
#define ITR_MAX_JOBS (2 * TRN_MAX_DEVICES + 2)

enum itr_scheme {
	ITR_DP = 0,
	ITR_PP,
};

enum itr_split {
	ITR_SPLIT_PLAN = 0,
	ITR_SPLIT_EVEN,
};

/* What every rank of one job needs (copied into each rank by the fork). */
struct itr_job {
	char label[64]; /* "alone emu-fast", "mixed" */
	enum itr_scheme scheme;
	enum itr_split split;
	enum trn_pp_sched sched; /* pp: the pipeline schedule */
	int ndev;
	struct trn_profile dev[TRN_MAX_DEVICES]; /* rank r runs on dev[r] */
	int grank[TRN_MAX_DEVICES];		 /* --rank mode: the run's rank of job rank r */
	int mem_share[TRN_MAX_DEVICES];		 /* ranks computing in the same host's memory
						  * as rank r at the same time (this job, or
						  * its --together set; itr_mem_share: its
						  * dev[r].mem_gib is 1/mem_share of the
						  * profile's); 0 or 1: its own */
	struct trn_model model;
	int steps, warmup;
	double lr;
	double overlap;	    /* trn_net.overlap given to the predictor (< 0: the DP tails') */
	int dp_tail;	    /* DP: micro-batches run backward layer by layer (0: auto) */
	double replan;	    /* re-plan when the step drifts this far from the
			     * prediction (0.1: 10 %; 0: never) */
	bool no_contention; /* --no-contention: cores and CPU costs left at 0 */
	bool comm_thread;   /* --comm-thread: no inline communication (itr_comm_inline) */
	int refine;	    /* --refine N: predict again from the speeds of the last
			     * N warm-up steps (0: not) */
	uint32_t seed;
	bool quiet;
	bool pp_mb_auto; /* PP, --pp-micro-batch auto: job rank 0's plan
			  * chooses the micro-batch (trn_plan_pp_mb) */
	int together;	 /* --efficiency --together: > 0 in each of a set of
			  * adjacent jobs that run at the same time */
	char trace[256]; /* --trace: events appended to this file ("" = none) */
};

/*
 * --replan: the first step after which a rank checks its split: the
 * warm-up's last (DP: a new split runs from the next step; PP: from the
 * step after next, so one step earlier), but not before steps 1 and 2 are
 * measured (step 0 fills the pipeline and touches every page; one step
 * alone is noise). A re-plan decided at step s runs from step s + the
 * lag: a pipeline re-planned from its warm-up needs --warmup 4 for every
 * timed step to run the new split.
 */
static inline int itr_replan_lag(const struct itr_job *j)
{
	return j->scheme == ITR_PP ? 2 : 1;
}

static inline int itr_replan_first(const struct itr_job *j)
{
	int s = j->warmup - itr_replan_lag(j);

	return s > 2 ? s : 2;
}

/* The step the split in dp (DP) or pp (PP), by j's scheme, takes for
 * model m on devices dev under net (a DP split's overlap: --overlap's, or
 * what its tails give on dev); 0 when it cannot be priced. */
double itr_split_step(const struct itr_job *j, const struct trn_model *m,
		      const struct trn_dp_plan *dp, const struct trn_pp_plan *pp,
		      const struct trn_profile *dev, const struct trn_net *net);

/* Per-rank figures, written by the rank itself. */
struct itr_rank_result {
	bool done;
	int samples;	       /* DP: samples per step */
	int first, nlayers;    /* PP: layers of this stage */
	double compute_s;      /* per timed step: matmuls (and emulation padding) */
	double gflops;	       /* the matmuls' FLOP / their seconds, timed steps */
	double gflops_steps;   /* the same with the priced contention taken off
				* (trn_speed_from_steps): what a profile would say */
	double gflops_own;     /* the same without the compute thread's run-queue
				* wait (trn_speed_own): --save-profiles */
	double gflops_cpu;     /* the matmuls' FLOP per second of the compute
				* thread's own CPU time (its optimizer's left
				* out): the device's speed whatever its quota,
				* a neighbour or this rank's communication took */
	double gflops_refined; /* --refine: that over the refinement's warm-up steps */
	int replans;	       /* --replan: how often the split was re-planned */
	bool repredicted;      /* --replan: the prediction is a re-plan's (rank 0) */
	double pred_plan_s;    /* the first plan's predicted step, from the profiles */
	int replan_step[8];    /* the steps of the first re-plans */
	double exposed_s;      /* per timed step: waiting for communication */
	double update_s;       /* per timed step: optimizer and copies */
	double wait_act_s;     /* PP, per timed step: waiting for activations (in exposed_s) */
	double wait_grad_s;    /* PP: waiting for gradients from the next stage */
	double wait_send_s;    /* PP: waiting for an earlier send before reusing its buffer */
	double handoff_s;      /* inside those waits: between the threads, not on the wire */
	bool comm_inline;    /* PP: the compute thread drove the communication (itr_comm_inline) */
	double comm_cpu_s;   /* comm_inline, per timed step: the CPU it took the compute thread */
	double cpu_s;	     /* CPU time of the process over the timed steps */
	double thread_cpu_s; /* the compute thread's CPU time over the timed steps
			      * (inline communication's taken out) */
	double runq_wait_s;  /* its run-queue wait over them (schedstat; -1: unknown) */
	double wall_s;	     /* wall time of the timed steps */
	uint64_t emu_calls, emu_overruns;
	double emu_overrun_s;		   /* over the timed steps */
	double emu_hidden_s;		   /* overlapped by the stream (trn_emu) */
	double weight_sum;		   /* sum of all weights at the end (for display) */
	uint64_t weight_hash;		   /* FNV-1a of the weights' bytes */
	uint64_t pp_sent_fwd, pp_recv_fwd; /* PP: sum of the messages' CRC-64 */
	uint64_t pp_sent_bwd, pp_recv_bwd;
	char stage_name[16]; /* memory path of the all-reduce (tp_stage_name) */
	uint64_t step_end_ns[ITR_MAX_STEPS];
	float step_gflops[ITR_MAX_STEPS]; /* every step's matmul FLOP / their seconds */
	float step_speed[ITR_MAX_STEPS];  /* --refine: before step k >= warmup, the
					   * speed of the --refine steps before it */
	float step_own[ITR_MAX_STEPS];	  /* step k's gflops_own: what --together
					   * counts when only some steps ran with
					   * the set's other jobs */
	float step_cpu[ITR_MAX_STEPS];	  /* step k's gflops_cpu, the same way */
	double step_loss[ITR_MAX_STEPS];  /* every step's loss, this rank's share */
	/* bytes of training state the rank allocated for its last split
	 * (weights, gradients, activation slots, scratch, rows) and the
	 * transport's staging: on its device, beside it on the host; the
	 * prediction is trn_mem's; mem_tp_*: the staging alone */
	double mem_dev, mem_host, mem_tp_dev, mem_tp_host;
	bool dev_update; /* its fp32 master on the device, updated there */
};

/* --pp-micro-batch auto: the size a job's plan chose, every size tried */
struct itr_pp_mb {
	int mb; /* 0: not chosen, the model's */
	int ntries;
	struct trn_pp_mb_try tries[TRN_PP_AT_MAX];
};

struct itr_result {
	bool ok;
	struct itr_pp_mb mbc;  /* job rank 0's choice */
	struct trn_net net;    /* calibrated */
	struct trn_dp_plan dp; /* the split used, with predictions */
	struct trn_pp_plan pp;
	bool weights_identical; /* DP: checked over the bootstrap */
	struct itr_rank_result rank[TRN_MAX_DEVICES];
};

/* Run one rank of job (the function given to tp_launch_ranks through
 * itr_rank_main). cc: the communicator config with rank, address and
 * bootstrap set. res: shared with the launcher. Returns the exit status. */
struct itr_rank_arg {
	const struct itr_job *job;
	struct tp_comm_cfg *cc;
	struct itr_result *res;
};
int itr_rank_main(void *arg);

/* Ranks that compute in one host's memory at the same time (host devices,
 * not emulated ones, which stand for devices of their own; of one job or
 * of one --together set; whose run ranks have the same host[grank]; host
 * NULL: every rank on this host, the launcher's) share the capacity their
 * profiles state: each gets mem_gib / k, k of them (mem_share), for all n
 * jobs. ice_train_hosts.c. */
void itr_mem_share(struct itr_job *jobs, int n, const uint64_t *host);
/* This host's identity (/etc/machine-id or the boot id, and the host
 * name, hashed). */
uint64_t itr_host_id(void);

/* --rank mode (ice_train_hosts.c): one process per rank of the run, on any
 * host, joined in a control group through rank 0's --bootstrap. */
struct itr_ctl;
/* Join the control group (tp->rank of nranks); NULL after a message naming
 * the bootstrap address and the timeout. Sets tp->cc.eng.addr from --addr. */
struct itr_ctl *itr_ctl_join(struct tp_opts *tp, int nranks);
void itr_ctl_free(struct itr_ctl *x); /* NULL-safe */
/* Rank 0's jobs (and --repeat) to every rank, replacing the others' own;
 * own: this rank's mixed job, to warn when it names another device. Rank 0
 * first gathers every rank's itr_host_id and shares the host ranks' memory
 * (itr_mem_share): the jobs come back with mem_gib divided. */
int itr_ctl_jobs(struct itr_ctl *x, struct itr_job *jobs, int *njobs, int max, int *repeat,
		 const struct itr_job *own);
/* Run njobs jobs at the same time (a set: no rank in two of them; one job
 * alone is a set of one): their ranks train, the others wait; on rank 0
 * res[k] gets every rank's figures of jobs[k] and status[k] 0 or 1 (a rank
 * failed); on the others *status is this rank's. 0, or -errno when the
 * control group failed. */
int itr_ctl_run(struct itr_ctl *x, const struct itr_job *jobs, int njobs, struct itr_result **res,
		int *status);

#endif /* ICE_TRAIN_H */
