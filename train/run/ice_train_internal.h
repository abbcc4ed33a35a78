/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice-train: what the files of one rank share; not for use outside
 * train/run/. The rank (ice_train_rank.c: setup, memory, the run, checks,
 * --trace) drives the steps (ice_train_step.c: DP and PP), which compute
 * (ice_train_compute.c: matrix multiplies, loss, SGD) and communicate through
 * the communication thread (ice_train_comm.c, also the network calibration);
 * every device call of either is watched (ice_train_watch.c).
 */
#ifndef ICE_TRAIN_INTERNAL_H
#define ICE_TRAIN_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ice_train.h"
#include "tp.h"
#include "tp_dev.h"
#include "dev.h"

/* ---- the communication thread (ice_train_comm.c) ------------------------- */

enum itr_cop_kind {
	COP_ALLREDUCE,
	COP_SEND,
	COP_RECV,
	COP_RS,	     /* a bucket's gradient reduce-scattered into the owners' shards */
	COP_AG,	     /* a bucket's updated shards all-gathered */
	COP_OOB_MAX, /* count doubles at dv: the maximum over the ranks (out of band) */
};

/* One queued operation; the poster owns it and waits for done. */
struct itr_cop {
	enum itr_cop_kind kind;
	float *buf;
	size_t count;
	int peer;
	float *hbuf;	      /* RS, AG: buf's host copy (buf itself on host memory) */
	double *dv;	      /* OOB_MAX: the values */
	const size_t *counts; /* RS, AG: every rank's shard of buf */
	size_t mine;	      /* RS, AG: where this rank's shard starts in buf */
	uint16_t *half;	      /* RS, ALLREDUCE, AG: in bf16 here (NULL: fp32) */
	float *hout;	      /* AG in bf16: the gathered weights' host copy (== buf
			       * on host memory; hbuf is the fp32 master) */
	uint16_t *dhalf;      /* in bf16 on a device rank: buf's bf16 copy in the
			       * device's memory, where the whole bucket is
			       * rounded and widened (NULL: on the host) */
	bool host_mem;	      /* SEND, RECV: buf is host memory on any rank (a
			       * device rank's weights' host master) */
	bool dev_upd;	      /* the rank updates its weights on the device: a
			       * reduced bf16 gradient is widened there, into
			       * buf; an fp32 AG's own part comes from buf, a
			       * bf16 one's is rounded there from dmaster */
	float *dmaster;	      /* AG in bf16, dev_upd: the own part's fp32 master */
	int ret;
	int tag;	/* the micro-batch, for the trace */
	bool hash;	/* the communication thread hashes buf (device memory:
			 * a copy of it on the host), a send's before it goes,
			 * a receive's once it is in */
	uint64_t hval;	/* CRC-64 of buf's bytes, as sent or received */
	uint64_t *hsum; /* the compute thread adds hval here when it waits */
	bool done;
	bool posted;			 /* posted and not yet waited for */
	uint64_t t_post, t_start, t_end; /* queued, taken by the thread, finished */
	struct itr_cop *next;
	struct tp_req req;	  /* a send or receive in flight */
	struct itr_cop *fly_next; /* the thread's in-flight list */
};

struct itr_cthread {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv_done;
	struct itr_cop *head, *tail;
	bool quit;
	int err; /* first failure; later operations fail with it */
	struct tp_dev_comm *d;
	struct tp_comm *c;
	struct tp_engine *e;
	bool async;	     /* host memory: sends and receives are posted, not run */
	struct itr_cop *fly; /* posted sends and receives, not complete (this thread's) */
	float *hs;	     /* device memory: a message's bytes copied up to be hashed */
	size_t hs_len;	     /* floats in hs */
	bool inl;	     /* no thread: the poster drives the engine itself, when it
			      * posts, when it waits and in itr_cthread_poll */
	uint64_t poll_ns;    /* inl: the last time the engine was driven */
	double cpu_s;	     /* inl: the poster's CPU seconds spent driving it */
};

/* ---- rank state ---------------------------------------------------------- */

/* One --trace event: a compute span (t0..t1) or an operation (queued t0,
 * taken by the communication thread t1, done t2, compute thread back t3). */
enum itr_ev_kind {
	EV_FWD,
	EV_BWD,
	EV_RECV_ACT,
	EV_RECV_GRAD,
	EV_SEND_ACT,
	EV_SEND_GRAD,
	EV_ALLREDUCE,
	EV_WGT,
	EV_RS,
	EV_AG,
	EV_UPD,
	EV_OOB,	 /* --replan: the step's exchange of speeds and times */
	EV_MOVE, /* PP --replan: layers' weights sent to their new stage */
};

struct itr_ev {
	enum itr_ev_kind kind;
	int step, mb;
	uint64_t t[4];
};

struct itr_bucket {
	int close_at; /* local layer whose gradient completes the bucket */
	size_t off, count;
	struct itr_cop op;	       /* the all-reduce, or (sharded) the reduce-scatter */
	struct itr_cop ag;	       /* sharded: the all-gather of the updated weights */
	size_t shard[TRN_MAX_DEVICES]; /* sharded: every rank's part */
	size_t mine;		       /* sharded: where this rank's part starts */
	size_t moff;		       /* ... its master's in dm */
	bool updated;		       /* sharded: this step's shard update done */
};

struct itr_rank {
	const struct itr_job *job;
	const struct trn_model *m;
	struct itr_result *res;
	struct itr_rank_result *me;
	int r, n;
	const struct trn_profile *prof; /* dev[r] */
	/* the job's devices, at the micro-batch --pp-micro-batch auto chose
	 * (devs, with model_mb the model; job->dev and job->model otherwise) */
	const struct trn_profile *dev;
	struct trn_profile devs[TRN_MAX_DEVICES];
	struct trn_model model_mb;
	const struct dev_mem_ops *ops;
	bool host;    /* host memory: the weights are their own master copy */
	bool sharded; /* DP with a sharded optimizer step (trn_optim) */
	struct trn_emu emu;
	struct tp_comm *c;
	struct tp_dev_comm *d;
	struct itr_cthread ct;

	int l0, nl;	     /* global layers [l0, l0 + nl) */
	int mb;		     /* rows per micro-batch */
	float **w;	     /* weights of local layer j, in the rank's memory (in wblk) */
	float **wm;	     /* host master copy (== w on host memory; in wmblk; a
			      * device rank updating on the device: staging) */
	float *wblk, *wmblk; /* all weights, laid out as grad (goff) */
	float *grad;
	float *gh;     /* host copy of grad (== grad on host memory): the update's
			* on the host, a device rank's staging */
	uint16_t *g16; /* DP, gradients in bf16 (trn_grad): gh's bf16 staging */
	uint16_t *w16; /* sharded DP, weights in bf16: the all-gather's staging */
	float *wh;     /* sharded DP, weights in bf16: host copy of wblk (== wblk
			* on host memory; wmblk is then apart, the master;
			* NULL on a device rank, which widens on the device) */
	uint16_t *d16; /* a device rank exchanging bf16: grad's and wblk's bf16
			* copy in the device's memory (itr_cop.dhalf) */
	float *dm;     /* a device rank gathering weights in bf16: the fp32
			* master of its parts, bucket after bucket (moff) */
	size_t *goff;
	size_t nparam;
	struct itr_bucket *bk;
	int nbk;
	int nclosed, nrs, nag; /* DP, this step: buckets complete, reduce-scatters
				* (or all-reduces) and all-gathers posted */

	int nslots;
	float ***act;	    /* act[slot][j]: input of local layer j (j >= 1), output at nl */
	const float **xin;  /* per slot: input of local layer 0 */
	float **dytop;	    /* per slot: gradient received from the next stage */
	float **gsend;	    /* per slot: input gradient sent to the previous stage */
	float ***dy;	    /* ZB: dy[slot][j], gradient at the output of local layer
			     * j < nl - 1, kept from B for W */
	const float **dtop; /* ZB, per slot: the gradient at the output of the
			     * last local layer (dytop or, last stage, act) */
	float *tmp[2];
	struct itr_cop *op_fwd, *op_bwd;    /* per slot: sends in flight */
	struct itr_cop *op_ract, *op_rgrad; /* per slot: receives (queued ahead) */
	struct trn_pp_plan pp;		    /* PP: the split and schedule used */
	struct trn_pp_op *pp_ops;	    /* PP: this stage's operations of a step */
	int pp_nops;
	float *x, *negt; /* input rows, negated target rows */
	float *hscratch; /* host memory for reading device buffers */
	size_t hscratch_len;
	/* bytes allocated so far on the device (itr_dev_alloc) and beside it
	 * on the host (host_alloc), never decreased: the training state's
	 * share goes to the result's mem_dev / mem_host */
	double dev_bytes, host_bytes;
	double par_bytes[2], act_bytes[2]; /* setup_params's, setup_acts's:
					    * device, host */
	size_t tp_bytes[2];		   /* the transport's staging: device, host */

	struct trn_dp_plan dp; /* the split used (the same on every rank) */
	struct trn_net net;    /* calibrated (for re-plans) */
	double t_compute, t_exposed, t_update;
	double mm_s, mm_flops;	    /* matrix multiplies: seconds and FLOP */
	bool mm_pending;	    /* device: products queued, not waited for */
	double gflops_ema;	    /* --replan: this rank's speed, smoothed over its steps */
	int last_replan;	    /* --replan: the step of the last re-plan (or of the start) */
	int split_from;		    /* --replan: the first step to judge the running split by
				     * (its own first carries the switch) */
	bool checked;		    /* --replan: the first check (the profiles' split
				     * against the job's own speeds) is done */
	struct itr_cop op_oob;	    /* --replan: the step's exchange of speeds and times */
	bool pp_pending;	    /* PP --replan: a new split waits for the next boundary */
	struct trn_pp_plan pp_next; /* PP --replan: that split */
	struct trn_seen seen;	    /* --replan: the splits that ran, measured */
	double t_wait_act, t_wait_grad, t_wait_send; /* PP: parts of t_exposed */
	double t_handoff;			     /* PP: thread hand-offs inside the waits */
	struct itr_ev *ev;			     /* --trace: events of this rank */
	int nev, evcap, step;
	double loss;
	uint64_t h_sent_fwd, h_recv_fwd, h_sent_bwd, h_recv_bwd;
};

/* ---- ice_train_comm.c ----------------------------------------------------- */

/* Start the communication thread on d; it owns d's communicator until
 * itr_cthread_stop(). inl (host memory only): start no thread; the
 * calling thread drives the engine when it posts and waits and calls
 * itr_cthread_poll between its compute's pieces. 0 or -errno. */
int itr_cthread_start(struct itr_cthread *t, struct tp_dev_comm *d, bool inl);
/* Wait for the queue to drain and the thread to end; returns its error. */
int itr_cthread_stop(struct itr_cthread *t);
/* Does k communicate inline (no thread)? A pipeline stage that really
 * computes on host memory, with another stage to talk to, unless
 * --comm-thread. */
bool itr_comm_inline(const struct itr_rank *k);
/* inl: drive the engine once without waiting, unless it was driven less
 * than ITR_POLL_NS ago (the peers' packets wait in the socket until then:
 * a message's data until it is needed, an acknowledgement by as much). */
void itr_cthread_poll(struct itr_cthread *t);
/* Queue op (the poster owns it until it is waited for). */
void itr_cop_post(struct itr_cthread *t, struct itr_cop *op, enum itr_cop_kind kind, float *buf,
		  size_t count, int peer);
/* Is op (posted) done? */
bool itr_cop_done(struct itr_cthread *t, const struct itr_cop *op);
/* Wait for op (of kind, for the trace and the figures); 0 when not posted. */
int itr_wait_op(struct itr_rank *k, struct itr_cop *op, enum itr_ev_kind kind);
/* The network's figures for the planner, measured on k's communicator. */
int itr_calibrate(struct itr_rank *k, size_t bucket_count, size_t act_count, struct trn_net *net);

/* ---- ice_train_compute.c -------------------------------------------------- */

#define ITR_FNV_INIT 0xcbf29ce484222325ull
uint64_t itr_fnv1a(uint64_t h, const void *p, size_t len);
/* Host memory for a device buffer's bytes (NULL when it cannot be read). */
const float *itr_host_view(struct itr_rank *k, const float *buf, size_t count);
void itr_trace_add(struct itr_rank *k, enum itr_ev_kind kind, int mb, uint64_t t0, uint64_t t1,
		   uint64_t t2, uint64_t t3);

/* A device rank keeps its fp32 master in the device's memory and updates
 * it there: its weights, or where they are gathered in bf16 (computed on
 * rounded) its parts' master apart (dm). */
static inline bool itr_dev_update(const struct itr_rank *k)
{
	return !k->host;
}

/* Input and output features of local layer j. */
static inline int itr_lin(const struct itr_rank *k, int j)
{
	return k->m->in[k->l0 + j];
}

static inline int itr_lout(const struct itr_rank *k, int j)
{
	return k->m->out[k->l0 + j];
}

int itr_matmul(struct itr_rank *k, bool ta, bool tb, int m, int n, int kk, const float *a,
	       const float *b, float beta, float *c);
int itr_mm_wait(struct itr_rank *k);
int itr_forward(struct itr_rank *k, int slot, const float *in, int rows);
int itr_loss_grad(struct itr_rank *k, int slot, const float *negt, int rows);
int itr_backward(struct itr_rank *k, int slot, const float *g, int rows, float *dx, float beta);
int itr_backward_input(struct itr_rank *k, int slot, const float *g, int rows, float *dx);
int itr_backward_weights(struct itr_rank *k, int slot, int rows, float beta);
int itr_sgd_range(struct itr_rank *k, size_t off, size_t cnt, float *dm);
int itr_sgd_update(struct itr_rank *k);

/* ---- ice_train_step.c ----------------------------------------------------- */

int itr_dp_step(struct itr_rank *k, int nrows);
/* more: another step follows (its first receive may be queued). */
int itr_pp_step(struct itr_rank *k, bool more);

/* ---- ice_train_mem.c ------------------------------------------------------ */

/* size bytes of the rank's memory (an error printed when there are none). */
void *itr_dev_alloc(struct itr_rank *k, size_t bytes);
/* The weights, gradient and buckets of the rank's layers (the plan's);
 * 0 or -errno. */
int itr_setup_params(struct itr_rank *k);
/* The activations of the rank's slots and its rows [row0, row0 + nrows)
 * of the data (first / last: the pipeline's first / last stage). */
int itr_setup_acts(struct itr_rank *k, int row0, int nrows, bool first, bool last);
void itr_free_acts(struct itr_rank *k);
void itr_free_params(struct itr_rank *k);
void itr_free_rank(struct itr_rank *k); /* everything above, and the trace */

/* ---- ice_train_watch.c: the device watchdog -------------------------------- */

enum itr_watch_slot {
	ITR_WATCH_COMPUTE, /* the rank's own thread (the default) */
	ITR_WATCH_COMM,	   /* the communication thread */
	ITR_WATCH_SLOTS,
};

/* ops with every call that runs on the device or waits for it noted
 * (itr_watch_enter / leave); one table per process. */
const struct dev_mem_ops *itr_watch_ops(const struct dev_mem_ops *ops);
/* The calling thread's slot (a thread's calls are noted in its own). */
void itr_watch_thread(enum itr_watch_slot s);
/* A device call (or the emulated device's time) begins / ends on this
 * thread; nested calls count as the outermost. */
void itr_watch_enter(const char *call);
void itr_watch_leave(void);
/* From here one device call that runs longer than timeout_ns ends the
 * process with a message naming the call (0: no watchdog); 0 or -errno. */
int itr_watch_start(int rank, const char *dev, const char *kind, uint64_t timeout_ns);
void itr_watch_stop(void);

#endif /* ICE_TRAIN_INTERNAL_H */
