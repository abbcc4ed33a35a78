/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trn: mixed-accelerator training — device profiles, model descriptions,
 * the heterogeneity-aware planner and its step-time predictor. Used by
 * ice-plan (planning only), ice-devprof (measures profiles) and ice-train
 * (runs the plan over the transport).
 *
 * Units: seconds, bytes, FLOP; bandwidths in GB/s (1e9 B/s), compute in
 * GFLOP/s (1e9 FLOP/s). Errors: 0 or -errno; file errors fill an
 * ice_cfg_err naming file, line, key and what was expected.
 */
#ifndef TRN_H
#define TRN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ice_config.h"

#define TRN_MAX_DEVICES 64
#define TRN_MAX_LAYERS	1024
#define TRN_NAME_MAX	32
#define TRN_PP_AT_MAX	8 /* pipeline speeds a profile states by micro-batch */

/* ---- device profiles --------------------------------------------------- */

/* What one device does. "kind" is the memory backend a rank on it uses:
 * host, cuda, hip. An emulated device is host memory whose compute is
 * padded to the stated speed (trn_emu_*): every report labels it. */
struct trn_profile {
	char name[TRN_NAME_MAX];	    /* e.g. "h200", "cpu", "emu-fast" */
	char kind[8];			    /* "host", "cuda", "hip" */
	bool emulated;			    /* speeds are stated, compute is padded to them */
	double gflops;			    /* fp32 matrix-multiply throughput the device
					     * sustains (what the planner uses) */
	double burst_gflops;		    /* the same in a short burst (0: unknown);
					     * informational: throttling shows as the gap */
	double pp_gflops;		    /* the same in a pipeline stage's order, one
					     * micro-batch through its layers (0: as
					     * gflops); trn_profiles_pp() */
	int npp_at;			    /* entries of pp_at_mb / pp_at_gflops */
	int pp_at_mb[TRN_PP_AT_MAX];	    /* micro-batch sizes, ascending */
	double pp_at_gflops[TRN_PP_AT_MAX]; /* pp_gflops at that micro-batch: what
					     * lets a planner choose it
					     * (trn_plan_pp_mb) */
	double mem_gbps;		    /* device memory bandwidth (copy, read + write) */
	double h2d_gbps;		    /* pinned host -> device copy */
	double d2h_gbps;		    /* device -> pinned host copy */
	double reduce_gbps;		    /* float sum reduce, bytes of dst per second */
	double mem_gib;			    /* device memory a rank on it may use, GiB
					     * (2^30 B; 0: not bounded): the planner's
					     * splits keep within it (trn_mem_*) */
	char source[128]; /* "measured by ice-devprof on HOST at DATE" / "stated" */
};

/* A profile file (YAML):
 *   devices:
 *     - name: emu-fast
 *       kind: host
 *       emulated: true
 *       gflops: 6.0
 *       burst_gflops: 6.0   (optional)
 *       pp_gflops: 5.0      (optional)
 *       pp_gflops_at: {4: 5.0, 8: 5.5}   (optional: micro-batch: GFLOP/s)
 *       mem_gbps: 10
 *       h2d_gbps: 10
 *       d2h_gbps: 10
 *       reduce_gbps: 4
 *       mem_gib: 16         (optional)
 * Loads up to max profiles; returns how many, or -errno with err filled. */
int trn_profiles_load(const char *path, struct trn_profile *out, int max, struct ice_cfg_err *err);
/* Write profiles as such a file (ice-devprof); 0 or -errno. */
int trn_profiles_save(const char *path, const struct trn_profile *p, int n);
/* For a pipeline: each gflops replaced by pp_gflops where that is stated
 * (a CPU streams a stage's weights once per micro-batch where a DP step
 * runs a layer over a chunk of them from cache). */
void trn_profiles_pp(struct trn_profile *p, int n);
/* For a pipeline at micro-batch mb: each gflops replaced by the profile's
 * pipeline speed at mb (pp_gflops_at), else as trn_profiles_pp. */
void trn_profiles_pp_at(struct trn_profile *p, int n, int mb);
/* p's pipeline speed at micro-batch mb from pp_gflops_at, or 0. */
double trn_profile_pp_at(const struct trn_profile *p, int mb);
/* Set (or add, in order) p's pipeline speed at mb; -E2BIG when full. */
int trn_profile_pp_at_set(struct trn_profile *p, int mb, double gflops);
/* Index of the profile named name, or -1. */
int trn_profile_find(const struct trn_profile *p, int n, const char *name);

/* ---- model description --------------------------------------------------- */

/* A stack of fully connected layers (what ice-train really computes): layer
 * l maps in[l] -> out[l] features, fp32 weights in x out. Per sample:
 * forward 2*in*out FLOP, backward 4*in*out FLOP (input and weight
 * gradients), gradient in*out*4 bytes, activation out*4 bytes. */
struct trn_model {
	char name[TRN_NAME_MAX];
	int nlayers;
	int in[TRN_MAX_LAYERS];
	int out[TRN_MAX_LAYERS];
	int global_batch; /* samples per training step, over all data-parallel ranks */
	int micro_batch;  /* samples per micro-batch (pipeline and DP unit) */
	int bucket_kb;	  /* DP gradient all-reduce bucket size, KiB (default 4096) */
	int optim;	  /* enum trn_optim; not in the file (TRN_OPTIM_SHARDED) */
	int grad;	  /* enum trn_grad, gradients; not in the file (TRN_GRAD_FP32) */
	int param;	  /* enum trn_grad, sharded weights; not in the file (fp32) */
};

/* How data-parallel ranks take the optimizer step (SGD: read weight and
 * gradient, write the weight, on the device: TRN_SGD_TRAFFIC bytes of
 * memory traffic per byte of parameters, at mem_gbps; a sharded
 * accelerator rank also moves its part over the bus, up and down). */
enum trn_optim {
	/* each rank updates a shard of every bucket, sized by its update's
	 * speed (trn_dp_shards): the gradient is reduce-scattered, the
	 * updated weights all-gathered (ZeRO stage 1) */
	TRN_OPTIM_SHARDED = 0,
	/* every rank updates every weight after an all-reduce (DDP) */
	TRN_OPTIM_REPLICATED,
};
#define TRN_SGD_TRAFFIC 3.0

const char *trn_optim_name(int o);     /* "sharded", "replicated" */
int trn_optim_parse(const char *name); /* the enum, or -EINVAL */

/* The types DP ranks exchange (like FSDP's reduce_dtype and param_dtype).
 * The optimizer step stays fp32 either way.
 *   grad: with bf16 a bucket's gradient is rounded to bf16 (round to
 *     nearest even) for its reduction, which sums in bf16, and its reduced
 *     part widened back before the update. Halves the reduce-scatter (or
 *     the replicated all-reduce).
 *   param (sharded only): with bf16 each rank keeps the fp32 master of its
 *     own part of the weights, updates it, and all-gathers it rounded to
 *     bf16; every rank computes on the gathered weights (its own part
 *     rounded too), so the weights the ranks compute on stay identical.
 *     Halves the all-gather.
 * Both bf16: the sharded step moves half of fp32's bytes. */
enum trn_grad {
	TRN_GRAD_FP32 = 0,
	TRN_GRAD_BF16,
};
const char *trn_grad_name(int g); /* "fp32", "bf16" */
/* Bytes a DP step moves over what it moves in fp32: 1 in fp32; replicated
 * with bf16 gradients 1/2; sharded, half a share for each of the
 * reduce-scatter and all-gather, halved in bf16 (3/4 with one of them,
 * 1/2 with both). */
double trn_grad_wire_share(const struct trn_model *m);
/* Elements a rank converts between fp32 and bf16 per step, per element of
 * the model, for a part share of the sharded weights: the replicated
 * all-reduce rounds and widens all; the sharded reduce-scatter rounds all,
 * widens its part; the all-gather rounds its part, widens all. 0 in fp32. */
double trn_grad_cvt_share(const struct trn_model *m, double share);

/* A model file (YAML):
 *   model:
 *     name: mlp-24
 *     global_batch: 256
 *     micro_batch: 8
 *     bucket_kb: 4096
 *     layers:
 *       - {in: 1024, out: 1024, count: 24}
 * Returns 0 or -errno with err filled. */
int trn_model_load(const char *path, struct trn_model *m, struct ice_cfg_err *err);
double trn_layer_fwd_flops(const struct trn_model *m, int l);	/* per sample */
double trn_layer_bwd_flops(const struct trn_model *m, int l);	/* per sample */
double trn_layer_param_bytes(const struct trn_model *m, int l); /* = gradient bytes */
double trn_layer_act_bytes(const struct trn_model *m, int l);	/* per sample, output */
double trn_model_param_bytes(const struct trn_model *m);
/* Features of the widest layer input or output (ice-train's scratch). */
int trn_model_widest(const struct trn_model *m);
/* The optimizer step over param_bytes of parameters on device d (0 when
 * the profile states no memory bandwidth). */
double trn_update_s(const struct trn_profile *d, double param_bytes);
/* Split count elements into ndev shards of m's sharded optimizer in
 * proportion to the speed of the devices' updates: their mem_gbps, where
 * an accelerator updating on the device also moves its part over the bus
 * (h2d_gbps, d2h_gbps) at that part's share (even when some profile
 * states no mem_gbps); largest remainders first; the same on every rank. */
void trn_dp_shards(const struct trn_model *m, const struct trn_profile *dev, int ndev, size_t count,
		   size_t *out);

/* ---- memory (issue 20) ------------------------------------------------------ */

/* What a rank of ice-train allocates for its part of a job, in bytes. On
 * the device (dev_mem_ops alloc): its layers' fp32 weights and gradients,
 * `slots` micro-batches of activations (every layer's input and the
 * output, the output's gradient, the input's gradient to send; a zero
 * bubble stage also keeps each inner layer's output gradient for its W),
 * two scratch buffers of the model's widest layer at the micro-batch, and
 * the input rows (first stage) and target rows (last stage) it trains on.
 * On the host beside it: a host scratch of the larger of the parameters
 * and the widest layer's micro-batch; on a device rank the fp32 master and
 * the gradients' staging; the bf16 exchange's staging (trn_grad), which a
 * device rank converts in its own memory (a bf16 copy there). A host
 * rank's device memory is the host's, so both count against its capacity
 * (trn_mem_need). The transport's staging (where any rank of the job
 * computes off the host: trn_mem_transport) is added by the planners; not
 * counted: the calibration's buffer, freed before the training state is
 * allocated and smaller than it, and the transport's unexpected-message
 * queues (bounded per QP, transient). */
struct trn_mem {
	double weights;	       /* fp32 weights of the rank's layers */
	double grads;	       /* their fp32 gradients */
	double acts;	       /* slots x one micro-batch's activations */
	double scratch;	       /* two buffers: widest layer x micro-batch */
	double rows;	       /* input and target rows */
	double exchange;       /* a device rank's bf16 copy of its gradients and
				* weights (the bf16 exchange converts on the device) */
	double transport;      /* the transport's device staging (trn_mem_transport) */
	double master;	       /* a device rank's fp32 master of its parts, apart
				* from weights gathered in bf16 (trn_mem_master) */
	double device;	       /* the sum of the above, in device memory */
	double host;	       /* beside it, in host memory */
	double transport_host; /* the transport's host staging (part of host) */
	int slots;	       /* micro-batches whose activations are held at once */
};

/* A rank of an ndev-rank job holding layers [l0, l0 + nl) of m with slots
 * activation slots and `rows` rows (input rows when first, target rows
 * when last), on a device of kind d->kind; zb: a zero bubble stage (its
 * inner output gradients); dp: a DP rank (the bf16 exchange's staging).
 * -EINVAL on a bad argument. */
int trn_mem_rank(const struct trn_model *m, const struct trn_profile *d, int ndev, int l0, int nl,
		 int slots, int rows, bool first, bool last, bool zb, bool dp, struct trn_mem *out);
/* Add to mm (rank i of an ndev-rank job on dev[]) the staging the
 * transport allocates for ice-train's largest message (the whole model's
 * fp32 parameters, or two activations of the widest layer) where any rank
 * computes off the host: the whole message padded and two pieces of about
 * a rank's share of it on the host, one piece on an accelerator. The
 * sizes are transport/tp_dev.c's (tp_dev_comm_staging), which ice-train
 * counts: test_ice_train_mem holds the two to the byte. */
void trn_mem_transport(const struct trn_model *m, const struct trn_profile *dev, int ndev, int i,
		       struct trn_mem *mm);
/* Add to mm what a sharded DP accelerator rank i that gathers weights in
 * bf16 keeps on its device: the fp32 master of its part of every bucket
 * (ice-train's buckets, trn_dp_shards' parts). */
void trn_mem_master(const struct trn_model *m, const struct trn_profile *dev, int ndev, int i,
		    struct trn_mem *mm);
/* A rank on d computes in host memory: a host device, or an emulated one
 * of any kind (ice-train runs it on the host). */
bool trn_dev_on_host(const struct trn_profile *d);
/* The bytes that count against d's capacity: device + host on a host
 * device, device alone on an accelerator. */
double trn_mem_need(const struct trn_profile *d, const struct trn_mem *mm);
/* d's capacity in bytes, 0 when not bounded. */
double trn_mem_cap(const struct trn_profile *d);

/* ---- network model for the predictor ------------------------------------ */

struct trn_net {
	double busbw_gbps; /* all-reduce bus bandwidth (nccl-tests definition) */
	double p2p_gbps;   /* point-to-point (pipeline send/recv) bandwidth */
	double lat_s;	   /* per-message latency (alpha) */
	double overlap;	   /* share of DP all-reduce hidden behind backward, 0..1 */
	/* CPU contention (trn_cpu_contention_s): per device, the CPU cores its
	 * rank's threads may use (0: not priced, the communication costs no
	 * compute time) and the CPU seconds its communication progress takes
	 * per byte: of gradient all-reduced (DP; the sharded reduce-scatter
	 * and all-gather move the same bytes; bf16 gradients fewer of them,
	 * trn_grad_wire_share), and per byte sent or received
	 * point to point (PP: with the checksum a host stage's communication
	 * thread computes over every byte it sends and receives), and per
	 * message sent or received point to point beyond its bytes (PP:
	 * posting it to the communication thread, its wake-ups, hand-off and
	 * completion; 0: not priced). ice-train reads the cores from the
	 * kernel (ice_cpu_cores) and calibrates the costs on the job's
	 * communicator, a pipeline of host ranks both point-to-point ones
	 * through its communication thread as a stage uses it, at two message
	 * sizes (trn_msg_cpu_fit); DP where every rank's memory is the host's
	 * the per-byte one from a bucket's exchange as a step runs it
	 * (cpu_ex_s), never below an all-reduce's timed alone. */
	double cores[TRN_MAX_DEVICES];
	double cpu_ar_s[TRN_MAX_DEVICES];
	double cpu_p2p_s[TRN_MAX_DEVICES];
	double cpu_msg_s[TRN_MAX_DEVICES];
	/* CPU seconds per fp32 element rounded to bf16 or widened back (DP
	 * with a bf16 exchange, trn_grad: the communication thread converts
	 * each bucket around its collectives): time on each bucket's path
	 * whatever the cores, and contention like cpu_ar_s; 0: not priced.
	 * An accelerator (kind cuda, hip) converts whole buckets on the
	 * device instead, 6 bytes per element at its mem_gbps, on the path
	 * and off the CPU, and, as it updates on the device, its own part's
	 * conversions too: none on the CPU. */
	double cpu_cvt_s[TRN_MAX_DEVICES];
	/* ice-train, DP where every rank's memory is the host's: CPU seconds
	 * of one bucket's exchange, measured with the compute's memory
	 * traffic beside it (its conversions in it); cpu_ar_s comes from it.
	 * Reported; the planner does not read it. 0: not measured. */
	double cpu_ex_s[TRN_MAX_DEVICES];
};

/*
 * The wall time a rank's compute loses to communication that shares its
 * CPU: over a window of window_s seconds the compute thread keeps
 * compute_cores busy (a host rank: min(1, cores); a device rank, whose
 * compute runs on the device: 0) and the communication needs comm_cpu_s
 * CPU seconds. What the spare cores (cores - compute_cores) cannot absorb
 * is shared with the compute, at cores CPU seconds per second:
 *
 *     extra = max(0, comm_cpu_s - (cores - compute_cores) window_s) / cores
 *
 * One core, fully busy: the communication's CPU time adds to the step; a
 * half-core CFS quota: twice it; two free cores and a thread that needs
 * less than one: nothing. cores <= 0: 0 (not priced).
 */
double trn_cpu_contention_s(double cores, double compute_cores, double window_s, double comm_cpu_s);
/* The cores device d's compute keeps busy on a rank with `cores` CPU
 * cores: min(1, cores) for a host device, 0 for an accelerator or an
 * emulated one (its compute stands for a device's, padded by a sleep). */
double trn_compute_cores(const struct trn_profile *d, double cores);

/* A pipeline stage's CPU for its point-to-point messages, split into the
 * trn_net figures the predictor prices them with (cpu_p2p_s per byte,
 * cpu_msg_s per message), from rounds of one send and one receive (two
 * messages) timed the way a stage sends them (through the communication
 * thread, each message's checksum included) at two sizes: small_cpu_s CPU
 * seconds per round of small_bytes-byte messages, big_cpu_s per round of
 * big_bytes-byte ones. *per_byte is the slope (the transport's progress
 * and the checksum, both per byte), *per_msg the intercept (posting,
 * wake-ups, hand-off, completion); neither below 0. -EINVAL unless
 * 0 <= small_bytes < big_bytes, or when an output is NULL. */
int trn_msg_cpu_fit(double small_bytes, double small_cpu_s, double big_bytes, double big_cpu_s,
		    double *per_byte, double *per_msg);

/* ---- profiles refined from the steps (issue 20) --------------------------- */

/* The speed (GFLOP/s) a host rank sustained over some steps of a job, as
 * the predictor's compute term needs it: the steps' matrix-multiply FLOP
 * over the time the rank needed the CPU for them. A host rank's compute
 * thread, its communication thread (progress, reductions, message
 * checksums) and whatever else the step does share the cores the rank may
 * use, so that time is the largest of
 *   - the compute thread's CPU seconds plus its run-queue wait
 *     (thread_wait_s: runnable, not running; /proc/thread-self/schedstat):
 *     the time it wanted a core, which grows when a neighbour, its own
 *     communication thread or a CFS quota's throttling keeps it off one;
 *   - the process's CPU seconds over its cores (a CFS quota of 0.4 core:
 *     CPU / 0.4, which counts the throttled time wherever it falls, also
 *     while the compute thread waits for a message);
 * less other_s, what the predictor prices apart (the optimizer step),
 * unless that would take off more than half of it. Waiting for other ranks
 * (blocked, not runnable) takes neither and is not counted. cores <= 0:
 * the compute thread's CPU and wait alone. thread_wait_s < 0: not known
 * (no schedstat), counted as 0. 0 when nothing was measured. */
double trn_speed_from_steps(double flops, double thread_cpu_s, double thread_wait_s,
			    double proc_cpu_s, double cores, double other_s);
/* The device's own speed over the same steps, as a profile holds it
 * (ice-train --save-profiles): trn_speed_from_steps without the run-queue
 * wait, which is the time others held the core the compute thread wanted
 * (a neighbouring rank, another job), not this device's. A CPU quota
 * stays in it (the process's CPU over its cores, which a quota lowers),
 * and so does the rank's own communication thread on its core. */
double trn_speed_own(double flops, double thread_cpu_s, double proc_cpu_s, double cores,
		     double other_s);
/* A thread's run-queue wait in seconds (runnable, not running) from the
 * text of /proc/thread-self/schedstat ("RUN_NS WAIT_NS SLICES"), as
 * trn_speed_from_steps takes it: -1 when it is not known (no text, not
 * two numbers, or all zeros: a kernel without scheduler statistics,
 * CONFIG_SCHEDSTATS off or kernel.sched_schedstats=0 and no delay
 * accounting, writes "0 0 0" for every task, where a thread that reads
 * its own file has at least one slice). */
double trn_schedstat_wait_s(const char *text);
/* out = dev with each gflops replaced by measured[i] where that is > 0 and
 * the device is not emulated (an emulated device computes at its stated
 * speed; when the CPU cannot keep up, ice-train says so instead). Returns
 * how many were replaced. dev and out may be the same array. */
int trn_profiles_refine(const struct trn_profile *dev, int ndev, const double *measured,
			struct trn_profile *out);
/* Whether a re-plan (ice-train --replan X) should switch to its new split:
 * new_s, the new split's predicted step, is shorter than running_s, the
 * running split's priced at the same speeds, by X / 2 at least (0.25 at
 * most). Two near-equal splits then do not take turns on the noise of
 * measured speeds. A running split that cannot be priced (running_s <= 0)
 * gives way. */
bool trn_replan_pays(double running_s, double new_s, double replan);
/* The share that rule asks for: X / 2, 0.25 at most. */
double trn_replan_gain(double replan);
/* X at one check of ice-train --replan X. The first check weighs the
 * profiles' split, measured minutes before with each device alone,
 * against the speeds the ranks measured in the job's own warm-up: it asks
 * for TRN_REPLAN_FIRST at most (a gain of half a percent), as one switch
 * cannot take turns with another. Later checks weigh splits that both
 * came from the job's speeds: X itself. */
#define TRN_REPLAN_FIRST 0.01
double trn_replan_x(double replan, bool first);

/* A re-plan's memory of the splits a job ran: each one's measured step
 * (the median of its last steps, noted at each check while it ran). A
 * split priced at the running split's speeds can promise what it did not
 * do when the speeds themselves depend on the split (a CPU quota throttles
 * a rank less the less work it holds), and the re-plan then moves layers
 * back and forth. With the memory, a split that ran goes back only where
 * its measured step is X / 2 shorter than the running split's too
 * (trn_replan_pays on the measured steps). A split is remembered by a key
 * (ice-train: the split as it prints it) for a number of steps. */
#define TRN_SEEN_MAX 8
#define TRN_SEEN_KEY 256
struct trn_seen {
	int n;
	struct {
		char key[TRN_SEEN_KEY];
		double step_s; /* measured step */
		int step;      /* the step it was measured at */
	} s[TRN_SEEN_MAX];
};
/* Note key's measured step at step: its entry replaced, or a new one (the
 * oldest dropped when all TRN_SEEN_MAX are taken). step_s <= 0 notes
 * nothing. */
void trn_seen_note(struct trn_seen *t, const char *key, double step_s, int step);
/* key's measured step when it was noted no more than memory steps before
 * step; 0 otherwise (trn_replan_pays then gives way to the prediction). */
double trn_seen_step(const struct trn_seen *t, const char *key, int step, int memory);

/* ---- data parallel --------------------------------------------------------- */

struct trn_dp_plan {
	int ndev;
	int samples[TRN_MAX_DEVICES];	      /* per device per step; sum = global_batch,
					       * multiples of micro_batch where possible */
	double compute_s[TRN_MAX_DEVICES];    /* predicted fwd+bwd time per device */
	double update_s[TRN_MAX_DEVICES];     /* its optimizer step (m->optim) */
	double comm_s;			      /* predicted all-reduce time (not hidden) */
	double contention_s[TRN_MAX_DEVICES]; /* compute time lost to the
					       * communication's CPU
					       * (trn_cpu_contention_s) */
	double step_s;			      /* predicted step time */
	int tail[TRN_MAX_DEVICES];	      /* micro-batches a chunk of the step runs
					       * layer by layer; the last chunk's backward
					       * hides the all-reduce (trn_dp_tails) */
	double overlap;			      /* the net->overlap step_s was predicted with */
	double mem_need[TRN_MAX_DEVICES];     /* trn_mem_need of each rank, bytes */
	int over;			      /* the first device whose need passes its
					       * capacity (mem_gib), or -1 */
};

/* The split minimising the predicted step time (never worse than even):
 * greedy by finish time, then single micro-batch moves while they help.
 * Every device's rows stay within its capacity (mem_gib): -ENOMEM when
 * no split fits. The even split and trn_predict_dp only report it (over). */
int trn_plan_dp(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		const struct trn_net *net, struct trn_dp_plan *out);
/* The naive split: global_batch / ndev each (remainder to the first). */
int trn_plan_dp_even(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		     const struct trn_net *net, struct trn_dp_plan *out);
/* Fill compute_s, comm_s and step_s for the split in p->samples. */
int trn_predict_dp(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		   const struct trn_net *net, struct trn_dp_plan *p);

/* Choose p->tail[] for the split in p->samples: per device the fewest last
 * micro-batches (at least 16 or all it has: ice-train's chunk of a step,
 * for the weights' reuse) whose backward, run layer by layer, lasts three
 * times the gradient all-reduce, or fixed (> 0) each; fewer where a
 * device's capacity (mem_gib) holds fewer activation slots, but one at
 * least.
 * Returns the overlap they give the predictor: the shortest tail's backward
 * as a share of the slowest device's backward (0..1). */
double trn_dp_tails(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		    const struct trn_net *net, int fixed, struct trn_dp_plan *p);
/* The overlap the tails in p->tail[] give on devices dev (as trn_dp_tails
 * returns it): to price a split whose tails were chosen for other speeds. */
double trn_dp_tails_overlap(const struct trn_model *m, const struct trn_profile *dev, int ndev,
			    const struct trn_dp_plan *p);

/* The DP plan ice-train runs: the split (the planner's, or even) for the
 * classic overlap, the last micro-batch's backward, then the tails
 * (trn_dp_tails; tail > 0 fixes them) and the prediction with the overlap
 * they give. net->overlap >= 0 fixes the overlap for both instead. */
int trn_plan_dp_tailed(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		       const struct trn_net *net, bool even, int tail, struct trn_dp_plan *out);

/* ---- pipeline parallel ------------------------------------------------------ */

/* The schedule a pipeline runs (trn_pp_order). */
enum trn_pp_sched {
	TRN_PP_ZB = 0, /* zero bubble: backward split into B and W (the default) */
	TRN_PP_1F1B,   /* 1F1B with one more warm-up forward than the minimum */
};

/* One operation of a stage: the forward (F) of micro-batch mb; its backward
 * (B): in 1F1B the whole backward, in ZB only the input gradient
 * dX = dY W^T of every layer of the stage; its weight gradient (W, ZB
 * only): dW += X^T dY of every layer, which needs X and dY kept from F and
 * B but nothing from another stage, so it can wait to fill a bubble. */
enum trn_pp_op_kind {
	TRN_PP_F = 0,
	TRN_PP_B,
	TRN_PP_W,
};

struct trn_pp_op {
	int kind; /* enum trn_pp_op_kind */
	int mb;	  /* micro-batch, 0 .. micro_batches - 1 */
};

struct trn_pp_plan {
	enum trn_pp_sched sched;	      /* input of trn_predict_pp(); the plan
					       * functions set it */
	int nstages;			      /* one stage per device, in device order */
	int first[TRN_MAX_DEVICES];	      /* first layer of stage s */
	int nlayers[TRN_MAX_DEVICES];	      /* layers of stage s (>= 1) */
	int micro_batches;		      /* global_batch / micro_batch */
	double stage_s[TRN_MAX_DEVICES];      /* fwd+bwd of one micro-batch on stage s,
					       * including its activation sends */
	double fwd_s[TRN_MAX_DEVICES];	      /* F of one micro-batch on stage s */
	double bwd_s[TRN_MAX_DEVICES];	      /* B (input gradient: half the backward) */
	double wgt_s[TRN_MAX_DEVICES];	      /* W (weight gradient: the other half) */
	double hop_s[TRN_MAX_DEVICES];	      /* one activation message from stage s to
					       * s + 1 (its gradient comes back alike) */
	double upd_s[TRN_MAX_DEVICES];	      /* stage s's optimizer step, once a step
					       * after its last operation */
	double contention_s[TRN_MAX_DEVICES]; /* per micro-batch, in fwd_s and
					       * bwd_s: compute time lost to
					       * the messages' CPU */
	double est_s;			      /* what the planner minimises: sum_s stage_s
					       * + (m - 1) max_s (compute of stage s +
					       * upd_s / m) */
	double step_s;			      /* predicted step: the schedule below,
					       * simulated with these times */
	int slots[TRN_MAX_DEVICES];	      /* activation slots stage s holds
					       * (trn_pp_slots of its order) */
	double mem_need[TRN_MAX_DEVICES];     /* trn_mem_need of each stage, bytes */
	int over;			      /* the first stage whose need passes its
					       * device's capacity, or -1 */
};

/* 1F1B: stage s of S first runs trn_pp_warmup(s, S, m) forwards, then one
 * forward and one backward in turn, then the remaining backwards. That is
 * S - s forwards on every stage but the last (which has none): one
 * micro-batch more in flight per stage than the minimal S - s - 1, so that
 * each activation and gradient hand-off has a stage time of slack instead
 * of none (with the minimum, two stages of equal time wait for each other's
 * messages on every micro-batch). Bounded by m. */
int trn_pp_warmup(int s, int S, int m);

/* ZB: at most this many micro-batches in flight on stage s of S (forward
 * done, W not yet): 2 (S - s) + 2, bounded by m. The memory of the
 * activations and output gradients W still needs. */
int trn_pp_zb_inflight(int s, int S, int m);

/*
 * The operations stage s runs in one step of plan p's schedule (p->sched),
 * in order; the same in every step. 1F1B: 2 m operations (F and B), as
 * above. ZB: 3 m, built by simulating the pipeline with p's times
 * (fwd_s, bwd_s, wgt_s, hop_s) over two steps and keeping the second
 * (steady) one: a stage that is free runs the next B if its gradient is
 * there, else the next F if its activation is there and fewer than
 * trn_pp_zb_inflight() micro-batches are in flight, else the oldest W
 * still owed, else waits. Bs go first so that gradients go back up the
 * pipeline at once; Ws fill what would be bubbles: the first stage's waits
 * for the last gradients at the end of a step, and the later stages' waits
 * for the next step's first activations, which the earlier stages send
 * only after their own last W and optimizer step. Every stage finishes its
 * Ws within the step (before its optimizer step), so the step stays
 * synchronous and nothing is left to flush. F and B run in micro-batch
 * order on every stage (messages between two stages keep their order); Ws
 * too. Returns the number of operations written to ops (at most max), or
 * -EINVAL / -ENOMEM / -ENOSPC. Deterministic: every rank of a job gets the
 * same schedule from the same plan.
 */
int trn_pp_order(const struct trn_pp_plan *p, int s, struct trn_pp_op *ops, int max);

/* The activation slots a stage running ops (n of them, schedule sched)
 * needs: the most micro-batches in flight at once (forward done, the
 * last operation that reads its activations, B or W, not yet), plus one
 * for the next activation to arrive while it computes. */
int trn_pp_slots(const struct trn_pp_op *ops, int n, enum trn_pp_sched sched);
/* An upper bound of it for stage s of S with m micro-batches, whatever
 * the times: the split search's memory test. */
int trn_pp_slots_bound(int s, int S, int m, enum trn_pp_sched sched);

const char *trn_pp_sched_name(enum trn_pp_sched s); /* "zb", "1f1b" */
int trn_pp_sched_parse(const char *name);	    /* the enum, or -EINVAL */

/* A contiguous layer split for schedule sched: the one minimising est_s
 * exactly, unless another split the search visits, or the even split,
 * predicts a shorter step (step_s); then stage boundaries move one layer
 * at a time while the predicted step gets shorter. Only splits whose
 * stages fit their devices' capacity (mem_gib; in the search with
 * trn_pp_slots_bound slots): -ENOMEM when none does. The even split and
 * trn_predict_pp only report it (over). */
int trn_plan_pp(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		const struct trn_net *net, enum trn_pp_sched sched, struct trn_pp_plan *out);
/* One micro-batch size trn_plan_pp_mb tried. */
struct trn_pp_mb_try {
	int mb;	       /* samples per micro-batch */
	int ret;       /* trn_plan_pp's: 0, or -ENOMEM when no split fits */
	double step_s; /* the planned split's predicted step (ret 0) */
};
/* The micro-batch sizes a pipeline of these devices may choose from:
 * device 0's pp_gflops_at sizes that every device states and that divide
 * the global batch, ascending, into out (up to TRN_PP_AT_MAX); how many. */
int trn_pp_mb_sizes(const struct trn_model *m, const struct trn_profile *dev, int ndev, int *out);
/* The micro-batch a pipeline runs best at: of the sizes trn_pp_mb_sizes
 * gives, the one whose split (trn_plan_pp, or with even
 * trn_plan_pp_even, each device at its speed there) predicts the shortest
 * step among those that fit the devices' memory; the smaller on a tie.
 * Fills tries (up to TRN_PP_AT_MAX) and *ntries with every size tried;
 * returns the size and its plan in *out; -ENOENT when no size qualifies
 * (nothing tried), -ENOMEM when no split of any fits. */
int trn_plan_pp_mb(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		   const struct trn_net *net, enum trn_pp_sched sched, bool even,
		   struct trn_pp_plan *out, struct trn_pp_mb_try *tries, int *ntries);
/* --pp-micro-batch: "auto" gives TRN_PP_MB_AUTO, "N" (1 .. 2^20) N;
 * anything else -EINVAL. */
#define TRN_PP_MB_AUTO (-1)
int trn_pp_mb_parse(const char *text);
/* The naive split: nlayers / ndev each. */
int trn_plan_pp_even(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		     const struct trn_net *net, enum trn_pp_sched sched, struct trn_pp_plan *out);
/* Fill the times, est_s and step_s for the split in p->first / p->nlayers
 * and the schedule p->sched. step_s simulates the schedule operation by
 * operation: a forward starts when its stage is free and the activation has
 * arrived (hop_s after the previous stage's forward), a backward when its
 * stage is free and the gradient has arrived, a W when its stage is free.
 * Messages overlap compute (ice-train's communication thread); only the
 * waits they cause count. 1F1B: one step, ending with the first stage's
 * last backward. ZB: the steady step (the fourth of four simulated back to
 * back, each stage starting the next step when it has finished its last W
 * of this one and its optimizer step), as the steps after warm-up in
 * ice-train. Every stage takes its optimizer step (upd_s) after its last
 * operation of a step. */
int trn_predict_pp(const struct trn_model *m, const struct trn_profile *dev, int ndev,
		   const struct trn_net *net, struct trn_pp_plan *p);

/* ---- emulated devices ---------------------------------------------------- */

/* Compute on an emulated device: call trn_emu_begin() before the real
 * computation (done on the CPU) and trn_emu_end() after; end sleeps until
 * flops / profile speed has passed since the call's stated start. The
 * device is a stream: a call that begins within 1 ms of the previous one's
 * return starts its stated time where the previous one's ended, so host
 * work in between and late wake-ups overlap the device (up to 50 ms,
 * counted in hidden_s) and back-to-back calls add up to the stated time.
 * trn_emu_idle() says the caller waited for data since the last call: the
 * device idled, the next call's stated time starts at its begin. If the
 * real computation took longer than the stated time the call overran:
 * counted and reported by ice-train (much of it: results measure this CPU,
 * not the profile); a call right after it starts at its stated end too. Sleeps
 * follow the calling thread's timer slack (prctl PR_SET_TIMERSLACK;
 * ice-train sets 1 us). */
#define TRN_EMU_GAP_NS	    1000000ull	/* a call within this of the last return follows on */
#define TRN_EMU_HIDE_MAX_NS 50000000ull /* at most this much of a gap is overlapped */
struct trn_emu {
	double gflops;
	double mem_gbps;   /* trn_emu_end_bytes */
	uint64_t t0_ns;	   /* start of this call's stated time */
	uint64_t real_ns;  /* when this call really began */
	uint64_t due_ns;   /* end of the previous call's stated time */
	uint64_t woke_ns;  /* when the previous call returned */
	bool idle;	   /* the caller waited for data since the last call */
	uint64_t fresh_ns; /* lag the previous call added (late wake, overrun) */
	uint64_t overruns, calls;
	double overrun_s; /* total time beyond the stated speed */
	double hidden_s;  /* host gaps and late wake-ups the stream overlapped */
};
void trn_emu_idle(struct trn_emu *e);
void trn_emu_begin(struct trn_emu *e);
void trn_emu_end(struct trn_emu *e, double flops);
/* The same for a memory-bound call moving bytes through device memory. */
void trn_emu_end_bytes(struct trn_emu *e, double bytes);

#endif /* TRN_H */
