// SPDX-License-Identifier: Apache-2.0
/*
 * ice-devprof: measure a device profile (train/trn.h) on one memory backend
 * of transport/dev.h, or write a stated (emulated) one.
 *
 *   ice-devprof [--kind host|cuda|hip] [--name NAME] [--seconds S] [--sustain S]
 *               [--comm-load X] [--weights-mb 32] [--m 8 --n 1024 --k 1024]
 *               [--model M.yaml [--pp-micro-batches 4,8,16]] [--mb 64] [-o FILE]
 *   ice-devprof --emulate NAME --gflops X [--mem-gbps X] [--h2d-gbps X]
 *               [--d2h-gbps X] [--reduce-gbps X] [-o FILE]
 *
 * sgemm: C[m x n] = A[m x k] B[k x n] (default: ice-train's layer shape at
 * micro-batch 8). mem: a copy inside device memory (host: memcpy; device
 * kinds: scale_div by 1, which reads and writes every byte, as dev_mem has no
 * device-to-device copy), read + write bytes. h2d / d2h: copy_async +
 * copy_wait between host_alloc'ed and device buffers. reduce: f32 sum, bytes
 * of dst. Each figure is the best repetition within its share of --seconds
 * (for sgemm: the burst figure). Then sgemm runs back to back for --sustain
 * seconds (default 5: fifty periods of a CFS quota's default 100 ms, so a
 * cpu.max / cfs_quota_us throttle, power or thermal limits show) with a
 * stand-in for ice-train's communication thread beside it (f32 sums over a 1
 * MiB bucket, the arithmetic of an all-reduce, for --comm-load of every 10
 * ms; asleep otherwise), the B matrix (the weights) taken in turn from
 * --weights-mb MiB of them (default 32, about ice-train's model: out of
 * cache, as in a step); FLOP over the window's wall time is the sustained
 * figure, the profile's gflops (what the planner uses); burst_gflops keeps
 * the burst. With --model the window runs what ice-train's steps run
 * instead, over chunks of micro-batches: layer by layer the forward of each
 * micro-batch of the chunk, their loss gradients (copied to the host, as
 * ice-train sums the loss there), then from the top layer by layer their
 * weight- and input-gradient products, the weights of every layer in
 * memory. Twice: chunks of 16 (a DP step's tail: a layer's weights serve
 * its chunk from cache), the profile's gflops; then one micro-batch at a
 * time (a pipeline stage's order: the weights streamed per micro-batch),
 * pp_gflops (--pp-micro-batches: again at each of those sizes, the
 * profile's pp_gflops_at, from which a planner chooses the micro-batch).
 * On an accelerator, where a call at a micro-batch's few rows
 * costs far more than its arithmetic (a launch and a wait), this is what a
 * step sustains, not what one large product does. The memory a rank may
 * use (mem_gib) is what the backend has free before ice-devprof allocates
 * (mem_info: the device's free memory; host: the available memory within
 * the cgroup's limit). With -o the profile replaces the one of the same
 * name in FILE (or is added); without, it goes to stdout. Exit: 0, 1
 * failure, 2 bad flags.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ice_cpu.h"
#include "ice_log.h"
#include "ice_time.h"
#include "dev.h"
#include "trn.h"

static const char *const kind_names[] = {"host", "cuda", "hip", NULL};

struct devprof_cfg {
	char name[TRN_NAME_MAX];
	int kind;
	double seconds;
	double sustain, comm_load;
	int64_t weights_mb;
	int64_t m, n, k, mb;
	char model[512];
	struct trn_model mdl;		  /* --model, loaded */
	int pp_mb[TRN_PP_AT_MAX], npp_mb; /* --pp-micro-batches */
	bool sync_products;
	char output[512];
	char emulate[TRN_NAME_MAX];
	double gflops, mem_gbps, h2d_gbps, d2h_gbps, reduce_gbps, mem_gib;
};

/* --pp-micro-batches 4,8,16: distinct sizes >= 1, at most TRN_PP_AT_MAX */
static int parse_pp_mb(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		       size_t msg_len)
{
	struct devprof_cfg *c = obj;
	const char *s = text;

	(void)f;
	c->npp_mb = 0;
	while (*s != '\0') {
		char *end;
		long v = strtol(s, &end, 10);
		bool dup = false;

		for (int i = 0; i < c->npp_mb; i++)
			dup |= c->pp_mb[i] == v;
		if (end == s || (*end != ',' && *end != '\0') || v < 1 || v > 65536 || dup ||
		    c->npp_mb == TRN_PP_AT_MAX) {
			snprintf(msg, msg_len,
				 "expected up to %d distinct micro-batch sizes >= 1 separated by "
				 "commas (e.g. 4,8,16), got '%s'",
				 TRN_PP_AT_MAX, text);
			return -EINVAL;
		}
		c->pp_mb[c->npp_mb++] = (int)v;
		s = *end == ',' ? end + 1 : end;
	}
	if (c->npp_mb == 0) {
		snprintf(msg, msg_len, "expected micro-batch sizes (e.g. 4,8,16), got '%s'", text);
		return -EINVAL;
	}
	return 0;
}

#define F(key_, t, f, ...)                                                                         \
	{                                                                                          \
		.key = key_, .type = t, .offset = offsetof(struct devprof_cfg, f), __VA_ARGS__     \
	}

static const struct ice_cfg_field devprof_fields[] = {
	F("name", ICE_CFG_STRING, name, .size = TRN_NAME_MAX,
	  .help = "profile name (default: the kind)"),
	F("kind", ICE_CFG_ENUM, kind, .choices = kind_names,
	  .help = "memory backend to measure: host, cuda, hip (default host)"),
	F("seconds", ICE_CFG_DOUBLE, seconds, .min = 0.05, .max = 3600,
	  .help = "measuring time in all (default 2)"),
	F("sustain", ICE_CFG_DOUBLE, sustain, .min = 0.1, .max = 3600,
	  .help = "sgemm back to back this long for the sustained\nfigure, the profile's gflops "
		  "(default 5)"),
	F("weights_mb", ICE_CFG_INT, weights_mb, .min = 0, .max = 65536,
	  .help = "MiB of weight matrices the sustained sgemm goes\nthrough in turn, as a model's "
		  "layers (default 32;\n0: one, cache-hot)"),
	F("comm_load", ICE_CFG_DOUBLE, comm_load, .min = 0, .max = 0.9,
	  .help = "share of time the communication thread's stand-in\nis busy during --sustain "
		  "(default 0.1)"),
	F("m", ICE_CFG_INT, m, .min = 1, .max = 65536, .help = "sgemm rows of A and C (default 8)"),
	F("n", ICE_CFG_INT, n, .min = 1, .max = 65536,
	  .help = "sgemm columns of B and C (default 1024)"),
	F("k", ICE_CFG_INT, k, .min = 1, .max = 65536, .help = "sgemm inner size (default 1024)"),
	F("model", ICE_CFG_STRING, model, .size = 512, .arg = "FILE",
	  .help = "sustained figures from this model's own products\n(train/models: each "
		  "layer's forward, weight-\nand input-gradient at its micro-batch, the loss\n"
		  "gradient), in a DP step's order (gflops) and a\npipeline stage's (pp_gflops); "
		  "default: --m/--n/--k\nover --weights-mb"),
	ICE_CFG_FUNC_ROW("pp_micro_batches", parse_pp_mb, .arg = "N,N,..",
			 .help = "with --model: also measure the pipeline stage's\norder at "
				 "each of these micro-batch sizes\n(pp_gflops_at: what lets "
				 "ice-plan and\nice-train --pp-micro-batch auto choose one)"),
	F("sync_products", ICE_CFG_BOOL, sync_products,
	  .help = "with --model: wait for each product (sgemm) instead\nof queueing them "
		  "(sgemm_async), as a device rank did\nbefore 2026-12-04; to compare the two"),
	F("mb", ICE_CFG_INT, mb, .min = 1, .max = 16384,
	  .help = "MiB per buffer of the bandwidth tests (default 64)"),
	F("output", ICE_CFG_STRING, output, .size = 512, .alias = 'o', .arg = "FILE",
	  .help = "profile file to write or update (default stdout)"),
	F("emulate", ICE_CFG_STRING, emulate, .size = TRN_NAME_MAX,
	  .help = "write a stated emulated profile of this name, measure nothing"),
	F("gflops", ICE_CFG_DOUBLE, gflops, .min = 1e-6, .max = 1e9,
	  .help = "with --emulate: stated GFLOP/s (required)"),
	F("mem_gbps", ICE_CFG_DOUBLE, mem_gbps, .min = 1e-6, .max = 1e9,
	  .help = "with --emulate: stated memory GB/s"),
	F("h2d_gbps", ICE_CFG_DOUBLE, h2d_gbps, .min = 1e-6, .max = 1e9,
	  .help = "with --emulate: stated host-to-device GB/s"),
	F("d2h_gbps", ICE_CFG_DOUBLE, d2h_gbps, .min = 1e-6, .max = 1e9,
	  .help = "with --emulate: stated device-to-host GB/s"),
	F("reduce_gbps", ICE_CFG_DOUBLE, reduce_gbps, .min = 1e-6, .max = 1e9,
	  .help = "with --emulate: stated f32 reduce GB/s"),
	F("mem_gib", ICE_CFG_DOUBLE, mem_gib, .min = 1e-6, .max = 1e9,
	  .help = "with --emulate: stated memory a rank may use, GiB"),
};
#define NFIELDS (sizeof(devprof_fields) / sizeof(devprof_fields[0]))

static int devprof_finish(void *obj, const char *path, struct ice_cfg_err *err)
{
	struct devprof_cfg *c = obj;

	if (c->emulate[0] != '\0') {
		if (!ice_cfg_name_ok(c->emulate))
			return ice_cfg_fail(err, path, "emulate",
					    "expected a name of letters, digits, '.', '-', '_', "
					    "got '%s'",
					    c->emulate);
		if (!(c->gflops > 0))
			return ice_cfg_fail(err, path, "gflops",
					    "expected the stated GFLOP/s of emulated device '%s' "
					    "(--gflops X, X > 0)",
					    c->emulate);
		if (c->model[0] != '\0')
			return ice_cfg_fail(err, path, "model",
					    "--model measures a device; --emulate states one");
		return 0;
	}
	if (c->gflops > 0 || c->mem_gbps > 0 || c->h2d_gbps > 0 || c->d2h_gbps > 0 ||
	    c->reduce_gbps > 0 || c->mem_gib > 0)
		return ice_cfg_fail(err, path, "gflops",
				    "stated speeds go with --emulate NAME; without it "
				    "ice-devprof measures them");
	if (c->model[0] != '\0') {
		int ret = trn_model_load(c->model, &c->mdl, err);

		if (ret < 0)
			return ret;
	} else if (c->sync_products || c->npp_mb > 0) {
		return ice_cfg_fail(err, path, c->npp_mb > 0 ? "pp_micro_batches" : "sync_products",
				    "goes with --model FILE (the products of a model's steps)");
	}
	if (c->name[0] == '\0')
		snprintf(c->name, sizeof(c->name), "%s", kind_names[c->kind]);
	if (!ice_cfg_name_ok(c->name))
		return ice_cfg_fail(err, path, "name",
				    "expected a name of letters, digits, '.', '-', '_', got '%s'",
				    c->name);
	return 0;
}

/* One benchmark: run op until budget seconds pass (at least 3 times after a
 * warm-up); the best repetition's rate of units per second. */
struct bench {
	const struct dev_mem_ops *ops;
	void *a, *b, *c; /* device buffers */
	void *wb;	 /* sustained: nb matrices like b in turn (weights from memory) */
	int nb;
	void *h; /* pinned host buffer */
	size_t len;
	int m, n, k;
	/* --model: its layers' weights and weight gradients (offsets woff),
	 * a micro-batch's activations and gradients, the loss on the host */
	const struct trn_model *mdl;
	float *w, *dw, *x, *y, *g, *dx;
	float *lossh;
	size_t *woff;
	size_t act; /* floats of one micro-batch's activation buffer */
	int chunk;
	double mb_flops; /* matrix FLOP of one micro-batch */
	bool sync;	 /* --sync-products: sgemm, not sgemm_async */
};

typedef int (*bench_fn)(struct bench *b);

static int run_sgemm(struct bench *b)
{
	return b->ops->sgemm(false, false, b->m, b->n, b->k, 1.0f, b->a, b->b, 0.0f, b->c);
}

static int fill(const struct dev_mem_ops *ops, void *dst, size_t len);

/* --model: micro-batches a DP step runs through a layer in turn (its
 * default tail, ice-train --dp-tail auto) */
#define DP_CHUNK 16

/* One chunk of a DP step of b->mdl, as ice-train computes it: layer by
 * layer the forward of each of its micro-batches; their loss gradients
 * (dY = Y - T, read back to the host); then from the top, layer by layer,
 * each micro-batch's weight gradient (dW += X^T dY) and input gradient
 * (dX = dY W^T). Products are queued (sgemm_async) as a device rank's
 * are, and waited for where it waits: at the loss (a synchronous call)
 * and at the chunk's end (its hand-off). Micro-batch t's buffers are at
 * t * b->act. */
static int run_model_chunk(struct bench *b)
{
	const struct trn_model *md = b->mdl;
	int rows = md->micro_batch, top = md->out[md->nlayers - 1], ret = 0;
	int (*mm)(bool, bool, int, int, int, float, const float *, const float *, float, float *) =
		b->sync ? b->ops->sgemm : b->ops->sgemm_async;

	for (int j = 0; ret == 0 && j < md->nlayers; j++)
		for (int t = 0; ret == 0 && t < b->chunk; t++)
			ret = mm(false, false, rows, md->out[j], md->in[j], 1.0f, b->x + t * b->act,
				 b->w + b->woff[j], 0.0f, b->y + t * b->act);
	for (int t = 0; ret == 0 && t < b->chunk; t++) {
		ret = b->ops->reduce(b->g + t * b->act, b->y + t * b->act, (size_t)rows * top,
				     DEV_FLOAT32, DEV_SUM);
		if (ret == 0)
			ret = b->ops->to_host(b->lossh, b->g + t * b->act,
					      (size_t)rows * top * sizeof(float));
	}
	for (int j = md->nlayers - 1; ret == 0 && j >= 0; j--) {
		for (int t = 0; ret == 0 && t < b->chunk; t++)
			ret = mm(true, false, md->in[j], md->out[j], rows, 1.0f, b->x + t * b->act,
				 b->g + t * b->act, 1.0f, b->dw + b->woff[j]);
		for (int t = 0; ret == 0 && t < b->chunk; t++)
			ret = mm(false, true, rows, md->in[j], md->out[j], 1.0f, b->g + t * b->act,
				 b->w + b->woff[j], 0.0f, b->dx + t * b->act);
	}
	return ret == 0 ? b->ops->compute_wait() : ret;
}

/* --model: the buffers run_model_chunk() works on (weights and gradients of
 * every layer, activations sized for the widest layer), filled. */
static int model_alloc(struct bench *b, const struct trn_model *md, int chunk)
{
	size_t np = 0, wide = 0, act;
	int ret = 0;

	b->mdl = md;
	b->woff = calloc((size_t)md->nlayers, sizeof(*b->woff));
	if (b->woff == NULL)
		return -ENOMEM;
	b->mb_flops = 0;
	for (int j = 0; j < md->nlayers; j++) {
		b->woff[j] = np;
		np += (size_t)md->in[j] * (size_t)md->out[j];
		wide = (size_t)md->in[j] > wide ? (size_t)md->in[j] : wide;
		wide = (size_t)md->out[j] > wide ? (size_t)md->out[j] : wide;
		b->mb_flops += 6.0 * md->micro_batch * md->in[j] * md->out[j];
	}
	b->chunk = chunk;
	b->act = (size_t)md->micro_batch * wide;
	act = (size_t)chunk * b->act * sizeof(float);
	b->w = b->ops->alloc(np * sizeof(float));
	b->dw = b->ops->alloc(np * sizeof(float));
	b->x = b->ops->alloc(act);
	b->y = b->ops->alloc(act);
	b->g = b->ops->alloc(act);
	b->dx = b->ops->alloc(act);
	b->lossh = malloc(act);
	if (b->w == NULL || b->dw == NULL || b->x == NULL || b->y == NULL || b->g == NULL ||
	    b->dx == NULL || b->lossh == NULL)
		return -ENOMEM;
	ret = fill(b->ops, b->w, np * sizeof(float));
	if (ret == 0)
		ret = fill(b->ops, b->dw, np * sizeof(float));
	if (ret == 0)
		ret = fill(b->ops, b->x, act);
	if (ret == 0)
		ret = fill(b->ops, b->g, act);
	return ret;
}

static void model_free(struct bench *b)
{
	if (b->mdl == NULL)
		return;
	b->ops->free(b->dx);
	b->ops->free(b->g);
	b->ops->free(b->y);
	b->ops->free(b->x);
	b->ops->free(b->dw);
	b->ops->free(b->w);
	free(b->lossh);
	free(b->woff);
	b->dx = b->g = b->y = b->x = b->dw = b->w = b->lossh = NULL;
	b->woff = NULL;
	b->mdl = NULL;
}

static int run_mem(struct bench *b)
{
	if (b->ops->kind == DEV_MEM_HOST) {
		memcpy(b->b, b->a, b->len);
		return 0;
	}
	return b->ops->scale_div(b->a, b->len / sizeof(float), DEV_FLOAT32, 1);
}

static int run_h2d(struct bench *b)
{
	int ret = b->ops->copy_async(b->a, b->h, b->len, DEV_COPY_FROM_HOST);

	return ret < 0 ? ret : b->ops->copy_wait();
}

static int run_d2h(struct bench *b)
{
	int ret = b->ops->copy_async(b->h, b->a, b->len, DEV_COPY_TO_HOST);

	return ret < 0 ? ret : b->ops->copy_wait();
}

static int run_reduce(struct bench *b)
{
	return b->ops->reduce(b->a, b->b, b->len / sizeof(float), DEV_FLOAT32, DEV_SUM);
}

static int measure(struct bench *b, bench_fn fn, double units, double budget, double *rate)
{
	double best = 0, t_end;
	int reps = 0, ret = fn(b); /* warm-up */

	if (ret < 0)
		return ret;
	t_end = ice_now_s() + budget;
	while (reps < 3 || ice_now_s() < t_end) {
		double t0 = ice_now_s(), dt;

		ret = fn(b);
		if (ret < 0)
			return ret;
		dt = ice_now_s() - t0;
		if (dt > 0 && (best == 0 || dt < best))
			best = dt;
		reps++;
	}
	*rate = best > 0 ? units / best : 0;
	return 0;
}

/* The communication thread's stand-in: f32 sums over a 1 MiB bucket on host
 * memory for load of every 10 ms, asleep for the rest. */
struct comm_load {
	pthread_t th;
	double load;
	atomic_bool quit;
	double busy_s; /* what it ran, for the report */
};

static void *comm_load_main(void *arg)
{
	struct comm_load *cl = arg;
	const struct dev_mem_ops *h = dev_mem_ops_get(DEV_MEM_HOST);
	size_t cnt = (1u << 20) / sizeof(float), chunk = (64u << 10) / sizeof(float);
	float *a = calloc(cnt, sizeof(float)), *b = calloc(cnt, sizeof(float));
	uint64_t period = 10 * ICE_NSEC_PER_MSEC, next = ice_now_ns();
	size_t off = 0;

	while (a != NULL && b != NULL && !atomic_load(&cl->quit)) {
		uint64_t t0 = ice_now_ns(), busy = t0 + (uint64_t)(cl->load * (double)period);
		struct timespec ts;

		while (ice_now_ns() < busy) {
			h->reduce(a + off, b + off, chunk, DEV_FLOAT32, DEV_SUM);
			off = (off + chunk) % cnt;
		}
		cl->busy_s += (double)(ice_now_ns() - t0) * 1e-9;
		next += period;
		ts.tv_sec = (time_t)(next / ICE_NSEC_PER_SEC);
		ts.tv_nsec = (long)(next % ICE_NSEC_PER_SEC);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	free(a);
	free(b);
	return NULL;
}

/* sgemm back to back for window seconds beside the communication load:
 * FLOP per wall second over the window (*rate), the slowest tenth of the
 * window (*slow), the process's CPU seconds per wall second (*share: both
 * threads; below the cores it could use when a quota or other work holds
 * it back). */
static int measure_sustained(struct bench *b, double window, double load, double *rate,
			     double *slow, double *load_s, double *share)
{
	struct comm_load cl = {.load = load};
	double units = b->mdl != NULL ? b->mb_flops * b->chunk : 2.0 * b->m * b->n * b->k;
	double done = 0, sdone = 0;
	double t0, ts, c0, slice = window / 10, worst = 0;
	int ret = 0;

	void *b0 = b->b;
	size_t bsz = (size_t)b->k * (size_t)b->n * sizeof(float);
	int i = 0;

	atomic_init(&cl.quit, false);
	if (load > 0 && pthread_create(&cl.th, NULL, comm_load_main, &cl) != 0)
		return -EAGAIN;
	t0 = ts = ice_now_s();
	c0 = ice_process_cpu_s();
	while (ret == 0) {
		double now;

		if (b->mdl != NULL) {
			ret = run_model_chunk(b);
		} else {
			if (b->nb > 0)
				b->b = (char *)b->wb + (size_t)(i++ % b->nb) * bsz;
			ret = run_sgemm(b);
		}
		done += units;
		sdone += units;
		now = ice_now_s();
		if (now - ts >= slice) {
			double r = sdone / (now - ts);

			worst = worst == 0 || r < worst ? r : worst;
			ts = now;
			sdone = 0;
		}
		if (now - t0 >= window) {
			*rate = done / (now - t0);
			*share = (ice_process_cpu_s() - c0) / (now - t0);
			break;
		}
	}
	if (load > 0) {
		atomic_store(&cl.quit, true);
		pthread_join(cl.th, NULL);
	}
	b->b = b0;
	*slow = worst;
	*load_s = cl.busy_s;
	return ret;
}

static int fill(const struct dev_mem_ops *ops, void *dst, size_t len)
{
	float *h = malloc(len);
	int ret;

	if (h == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < len / sizeof(float); i++)
		h[i] = (float)((i * 7919u) % 1000u) * 1e-3f;
	ret = ops->from_host(dst, h, len);
	free(h);
	return ret;
}

static int profile_device(const struct devprof_cfg *c, struct trn_profile *p)
{
	const struct dev_mem_ops *ops = dev_mem_ops_get((enum dev_mem_kind)c->kind);
	struct bench b = {.ops = ops};
	double share = c->seconds / 5, rate;
	char why[256] = "", host[64] = "?", date[32];
	time_t t = time(NULL);
	struct tm tm;
	int ret;

	if (ops == NULL) {
		ice_err(ICE_SUB_COMMON, "ice-devprof: the %s backend is not built in",
			kind_names[c->kind]);
		return -ENODEV;
	}
	ret = ops->probe(why, sizeof(why));
	if (ret < 0) {
		ice_err(ICE_SUB_COMMON, "ice-devprof: no %s device: %s", ops->name, why);
		return ret;
	}
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", c->name);
	snprintf(p->kind, sizeof(p->kind), "%s", ops->name);

	/* the memory free before anything of ours is allocated */
	{
		size_t mfree = 0, mtotal = 0;

		ret = ops->mem_info != NULL ? ops->mem_info(&mfree, &mtotal) : -ENOTSUP;
		if (ret == 0 && mfree > 0) {
			/* rounded down: the file keeps 6 digits */
			p->mem_gib = floor((double)mfree / (1u << 30) * 1000) / 1000;
			ice_info(ICE_SUB_COMMON, "%s: memory %.2f GiB free of %.2f GiB", c->name,
				 p->mem_gib, (double)mtotal / (1u << 30));
		} else {
			ice_warn(ICE_SUB_COMMON,
				 "%s: the %s backend does not say its free memory (%s): the "
				 "profile states no mem_gib",
				 c->name, ops->name, strerror(ret < 0 ? -ret : EIO));
		}
	}

	/* sgemm at the requested shape */
	b.m = (int)c->m;
	b.n = (int)c->n;
	b.k = (int)c->k;
	b.a = ops->alloc((size_t)b.m * b.k * sizeof(float));
	b.b = ops->alloc((size_t)b.k * b.n * sizeof(float));
	b.c = ops->alloc((size_t)b.m * b.n * sizeof(float));
	ret = -ENOMEM;
	if (b.a == NULL || b.b == NULL || b.c == NULL)
		goto out_gemm;
	ret = fill(ops, b.a, (size_t)b.m * b.k * sizeof(float));
	if (ret == 0)
		ret = fill(ops, b.b, (size_t)b.k * b.n * sizeof(float));
	if (ret == 0)
		ret = measure(&b, run_sgemm, 2.0 * b.m * b.n * b.k, share, &rate);
	b.sync = c->sync_products;
	if (c->model[0] != '\0')
		ret = ret < 0 ? ret : model_alloc(&b, &c->mdl, DP_CHUNK);
	else
		b.nb = (int)(((size_t)c->weights_mb << 20) / ((size_t)b.k * b.n * sizeof(float)));
	if (ret == 0 && b.nb > 0) {
		size_t wlen = (size_t)b.nb * b.k * b.n * sizeof(float);

		b.wb = ops->alloc(wlen);
		ret = b.wb == NULL ? -ENOMEM : fill(ops, b.wb, wlen);
	}
	if (ret == 0) {
		double slow, load_s, cpu = 0;
		char limit[256];
		double cores = ice_cpu_cores(limit, sizeof(limit));

		p->burst_gflops = rate / 1e9;
		ret = measure_sustained(&b, c->sustain, c->comm_load, &rate, &slow, &load_s, &cpu);
		/* --model: the DP order (chunks), then a pipeline stage's */
		for (int pass = 0; ret == 0 && b.mdl != NULL && pass < 2; pass++) {
			if (pass == 1) {
				b.chunk = 1;
				ret = measure_sustained(&b, c->sustain, c->comm_load, &rate, &slow,
							&load_s, &cpu);
				if (ret < 0)
					break;
			}
			*(pass ? &p->pp_gflops : &p->gflops) = rate / 1e9;
			ice_info(
				ICE_SUB_COMMON,
				"%s: sustained %.2f GFLOP/s over %.1f s in %s of model %s (%d "
				"layers, micro-batch %d, %d at a time through each layer, %s; "
				"slowest tenth %.2f) beside a communication load of %.0f%% (%.2f s "
				"busy); CPU %.2f s per s of %.2f cores (%s); sgemm burst %.2f "
				"GFLOP/s",
				c->name, rate / 1e9, c->sustain,
				pass ? "a pipeline stage's order" : "a DP step's order",
				b.mdl->name, b.mdl->nlayers, b.mdl->micro_batch, b.chunk,
				b.sync ? "each product waited for" : "products queued", slow / 1e9,
				c->comm_load * 100, load_s, cpu, cores, limit, p->burst_gflops);
		}
		/* --pp-micro-batches: the pipeline's order again at each size */
		for (int i = 0; ret == 0 && b.mdl != NULL && i < c->npp_mb; i++) {
			static struct trn_model at;

			if (c->pp_mb[i] == c->mdl.micro_batch) {
				trn_profile_pp_at_set(p, c->pp_mb[i], p->pp_gflops);
				continue;
			}
			at = c->mdl;
			at.micro_batch = c->pp_mb[i];
			model_free(&b);
			ret = model_alloc(&b, &at, 1);
			if (ret == 0)
				ret = measure_sustained(&b, c->sustain, c->comm_load, &rate, &slow,
							&load_s, &cpu);
			if (ret < 0)
				break;
			trn_profile_pp_at_set(p, c->pp_mb[i], rate / 1e9);
			ice_info(ICE_SUB_COMMON,
				 "%s: sustained %.2f GFLOP/s over %.1f s in a pipeline stage's "
				 "order at micro-batch %d (slowest tenth %.2f)",
				 c->name, rate / 1e9, c->sustain, c->pp_mb[i], slow / 1e9);
		}
		if (ret == 0 && b.mdl == NULL) {
			p->gflops = rate / 1e9;
			ice_info(ICE_SUB_COMMON,
				 "%s: sgemm burst %.2f GFLOP/s (best repetition), sustained %.2f "
				 "GFLOP/s over %.1f s (slowest tenth %.2f) beside a communication "
				 "load of %.0f%% (%.2f s busy), %d weight matrices in turn; CPU "
				 "%.2f s per s of %.2f cores (%s)",
				 c->name, p->burst_gflops, p->gflops, c->sustain, slow / 1e9,
				 c->comm_load * 100, load_s, b.nb > 0 ? b.nb : 1, cpu, cores,
				 limit);
		}
	}
out_gemm:
	model_free(&b);
	ops->free(b.wb);
	ops->free(b.c);
	ops->free(b.b);
	ops->free(b.a);
	b.a = b.b = b.c = NULL;
	if (ret < 0) {
		ice_err(ICE_SUB_COMMON, "ice-devprof: sgemm %dx%dx%d failed: %s", b.m, b.n, b.k,
			strerror(-ret));
		return ret;
	}

	/* bandwidths over two device buffers and one pinned host buffer */
	b.len = (size_t)c->mb << 20;
	b.a = ops->alloc(b.len);
	b.b = ops->alloc(b.len);
	b.h = ops->host_alloc(b.len);
	ret = -ENOMEM;
	if (b.a == NULL || b.b == NULL || b.h == NULL)
		goto out_bw;
	memset(b.h, 0, b.len);
	ret = fill(ops, b.a, b.len);
	if (ret == 0)
		ret = fill(ops, b.b, b.len);
	if (ret == 0)
		ret = measure(&b, run_mem, 2.0 * b.len, share, &rate);
	if (ret == 0) {
		p->mem_gbps = rate / 1e9;
		ret = measure(&b, run_h2d, (double)b.len, share, &rate);
	}
	if (ret == 0) {
		p->h2d_gbps = rate / 1e9;
		ret = measure(&b, run_d2h, (double)b.len, share, &rate);
	}
	if (ret == 0) {
		p->d2h_gbps = rate / 1e9;
		ret = measure(&b, run_reduce, (double)b.len, share, &rate);
	}
	if (ret == 0)
		p->reduce_gbps = rate / 1e9;
out_bw:
	ops->host_free(b.h);
	ops->free(b.b);
	ops->free(b.a);
	if (ret < 0) {
		ice_err(ICE_SUB_COMMON, "ice-devprof: bandwidth tests (%lld MiB) failed: %s",
			(long long)c->mb, strerror(-ret));
		return ret;
	}
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(p->source, sizeof(p->source), "measured by ice-devprof on %.40s at %.20s", host,
		 date);
	return 0;
}

/* Replace or add p in path (created when absent); stdout without a path. */
static int write_profile(const char *path, const struct trn_profile *p)
{
	static struct trn_profile all[TRN_MAX_DEVICES];
	struct ice_cfg_err err;
	char buf[768];
	int n = 0, idx;

	if (path[0] == '\0')
		return trn_profiles_save("-", p, 1);
	if (access(path, F_OK) == 0) {
		n = trn_profiles_load(path, all, TRN_MAX_DEVICES, &err);
		if (n < 0) {
			ice_err(ICE_SUB_COMMON,
				"ice-devprof: %s exists but is not a profile file, not "
				"overwriting it: %s",
				path, ice_cfg_err_str(&err, buf, sizeof(buf)));
			return n;
		}
	}
	idx = trn_profile_find(all, n, p->name);
	if (idx < 0) {
		if (n == TRN_MAX_DEVICES)
			return -E2BIG;
		idx = n++;
	}
	all[idx] = *p;
	return trn_profiles_save(path, all, n);
}

int main(int argc, char **argv)
{
	static struct devprof_cfg cfg = {.kind = DEV_MEM_HOST,
					 .seconds = 2,
					 .sustain = 5,
					 .comm_load = 0.1,
					 .weights_mb = 32,
					 .m = 8,
					 .n = 1024,
					 .k = 1024,
					 .mb = 64};
	struct ice_cfg_cli cli = {
		.tool = "ice-devprof",
		.synopsis =
			"usage: ice-devprof [--kind host|cuda|hip] [--name NAME] [--seconds S] "
			"[--sustain S] [--comm-load X] [--weights-mb MIB]\n"
			"                   [--m M --n N --k K | --model M.yaml "
			"[--pp-micro-batches N,N,..]] [--mb MIB] [-o FILE]\n"
			"       ice-devprof --emulate NAME --gflops X [--mem-gbps X] "
			"[--h2d-gbps X] [--d2h-gbps X] [--reduce-gbps X] [--mem-gib X] [-o FILE]",
		.fields = devprof_fields,
		.nfields = NFIELDS,
		.obj = &cfg,
		.finish = devprof_finish,
	};
	struct trn_profile p;
	int ret;

	ice_log_set_level(ICE_LOG_INFO);
	ice_log_init_env();
	ret = ice_cfg_parse_args(&cli, argc, argv);
	if (ret != 0)
		return ret > 0 ? 0 : 2;
	if (cfg.emulate[0] != '\0') {
		memset(&p, 0, sizeof(p));
		snprintf(p.name, sizeof(p.name), "%s", cfg.emulate);
		snprintf(p.kind, sizeof(p.kind), "host");
		p.emulated = true;
		p.gflops = cfg.gflops;
		p.mem_gbps = cfg.mem_gbps;
		p.h2d_gbps = cfg.h2d_gbps;
		p.d2h_gbps = cfg.d2h_gbps;
		p.reduce_gbps = cfg.reduce_gbps;
		p.mem_gib = cfg.mem_gib;
		snprintf(p.source, sizeof(p.source), "stated");
	} else {
		ret = profile_device(&cfg, &p);
		if (ret < 0)
			return 1;
		char what[96];

		if (cfg.model[0] != '\0')
			snprintf(what, sizeof(what), "model %s", cfg.mdl.name);
		else
			snprintf(what, sizeof(what), "sgemm %lldx%lldx%lld", (long long)cfg.m,
				 (long long)cfg.n, (long long)cfg.k);
		ice_info(ICE_SUB_COMMON,
			 "%s (%s): %s %.2f GFLOP/s sustained, mem %.2f GB/s, h2d %.2f GB/s, "
			 "d2h %.2f GB/s, reduce %.2f GB/s",
			 p.name, p.kind, what, p.gflops, p.mem_gbps, p.h2d_gbps, p.d2h_gbps,
			 p.reduce_gbps);
	}
	ret = write_profile(cfg.output, &p);
	if (ret < 0) {
		ice_err(ICE_SUB_COMMON, "ice-devprof: cannot write %s: %s",
			cfg.output[0] != '\0' ? cfg.output : "stdout", strerror(-ret));
		return 1;
	}
	return 0;
}
