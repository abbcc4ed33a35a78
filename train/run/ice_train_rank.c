// SPDX-License-Identifier: Apache-2.0
/*
 * One rank of an ice-train job: real fp32 matrix multiplies on the rank's
 * memory kind (dev_mem_ops->sgemm), real traffic over the transport.
 *
 * This file: the rank's setup (memory kind, communicator, calibration,
 * plan), its run (the communication thread started and stopped around the
 * steps; re-plans at step boundaries), the checks after it and --trace.
 * The parts: ice_train_mem.c (weights, gradient, activations),
 * ice_train_comm.c (the communication thread), ice_train_compute.c,
 * ice_train_step.c (DP and PP steps); ice_train_internal.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "ice_log.h"
#include "ice_time.h"
#include "ice_train_internal.h"

/* --trace event names, in enum itr_ev_kind's order */
static const char *const ev_name[] = {
	"fwd",	      "bwd", "recv_act",       "recv_grad", "send_act", "send_grad",
	"allreduce",  "wgt", "reduce_scatter", "allgather", "update",	"replan_exchange",
	"replan_move"};
_Static_assert(sizeof(ev_name) / sizeof(ev_name[0]) == EV_MOVE + 1,
	       "a --trace event kind without a name");

/* Seconds the calling thread has waited on a run queue (runnable, not
 * running: another task on its core, its own communication thread, a CFS
 * quota's throttling): the second field of /proc/thread-self/schedstat.
 * -1 when the kernel does not keep it (no /proc, or zeros:
 * trn_schedstat_wait_s). */
static double thread_wait_seconds(void)
{
	char text[128];
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	bool ok;

	if (f == NULL)
		return -1;
	ok = fgets(text, sizeof(text), f) != NULL;
	fclose(f);
	return ok ? trn_schedstat_wait_s(text) : -1;
}

/* ---- the rank ------------------------------------------------------------- */

/* --trace: this rank's events as CSV lines appended to the job's file (under
 * an exclusive lock, so the ranks' lines do not mix). Times in ns of
 * CLOCK_MONOTONIC, the same clock in every rank. */
static void trace_dump(struct itr_rank *k)
{
	FILE *f;
	int fd;

	if (k->job->trace[0] == '\0' || k->nev == 0)
		return;
	fd = open(k->job->trace, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0) {
		ice_warn(ICE_SUB_BENCH, "rank %d: --trace %s: %s", k->r, k->job->trace,
			 strerror(errno));
		return;
	}
	flock(fd, LOCK_EX);
	f = fdopen(fd, "a");
	if (f == NULL) {
		close(fd);
		return;
	}
	for (int i = 0; i < k->nev; i++) {
		const struct itr_ev *e = &k->ev[i];

		fprintf(f, "%s,%s,%d,%d,%d,%s,%llu,%llu,%llu,%llu\n", k->job->label,
			k->job->split == ITR_SPLIT_PLAN ? "plan" : "even", k->r, e->step, e->mb,
			ev_name[e->kind], (unsigned long long)e->t[0], (unsigned long long)e->t[1],
			(unsigned long long)e->t[2], (unsigned long long)e->t[3]);
	}
	fflush(f);
	flock(fd, LOCK_UN);
	fclose(f);
}

/* -ENOMEM, said once (rank 0), when a rank of the split needs more memory
 * than its profile allows (the even split: the planner's keeps within). */
static int plan_fits(struct itr_rank *k)
{
	const struct itr_job *j = k->job;
	bool dp = j->scheme == ITR_DP;
	int over = dp ? k->dp.over : k->pp.over, share;
	double need, cap;
	char share_s[96];

	if (over < 0)
		return 0;
	need = dp ? k->dp.mem_need[over] : k->pp.mem_need[over];
	cap = trn_mem_cap(&k->dev[over]);
	share = j->mem_share[over];
	snprintf(share_s, sizeof(share_s),
		 " in its profile, 1/%d of it its share: ranks computing "
		 "in one host's memory",
		 share);
	if (k->r == 0)
		ice_err(ICE_SUB_BENCH,
			"the %s split of model '%s' needs %.1f MiB on rank %d (device '%s', %s "
			"memory), over its capacity %.1f MiB (mem_gib %g%s): use the "
			"planner's split, a smaller micro_batch, or a device with more memory",
			j->split == ITR_SPLIT_PLAN ? "planned" : "even", k->m->name,
			need / (1 << 20), over, k->dev[over].name, k->dev[over].kind,
			cap / (1 << 20), k->dev[over].mem_gib * (share > 1 ? share : 1),
			share > 1 ? share_s : "");
	return -ENOMEM;
}

/*
 * --pp-micro-batch auto: the size whose split predicts the shortest step
 * (trn_plan_pp_mb; the same on every rank: the same inputs). From here the
 * rank runs at it: the model at that micro-batch (model_mb) and the devices
 * at their speeds there (devs).
 */
static int choose_mb(struct itr_rank *k, const struct trn_net *net, struct trn_pp_plan *p)
{
	const struct itr_job *j = k->job;
	struct itr_pp_mb c = {0};
	int mb = trn_plan_pp_mb(k->m, k->dev, j->ndev, net, j->sched, j->split == ITR_SPLIT_EVEN, p,
				c.tries, &c.ntries);

	if (mb < 0)
		return mb;
	c.mb = mb;
	if (k->r == 0)
		k->res->mbc = c;
	k->model_mb = *k->m;
	k->model_mb.micro_batch = mb;
	k->m = &k->model_mb;
	k->mb = mb;
	memcpy(k->devs, j->dev, (size_t)j->ndev * sizeof(k->devs[0]));
	trn_profiles_pp_at(k->devs, j->ndev, mb);
	k->dev = k->devs;
	k->prof = &k->devs[k->r];
	k->emu.gflops = k->prof->gflops;
	return 0;
}

/* The split (the same on every rank: the same inputs), and for DP the tails
 * and, unless --overlap gave it, the overlap they give (net->overlap). */
static int plan_job(struct itr_rank *k, struct trn_net *net)
{
	const struct itr_job *j = k->job;
	struct itr_result *res = k->res;
	int ret;

	if (j->scheme == ITR_DP) {
		struct trn_dp_plan p;

		/* net->overlap is --overlap's, or < 0: from the tails */
		memset(&p, 0, sizeof(p));
		ret = trn_plan_dp_tailed(k->m, k->dev, j->ndev, net, j->split == ITR_SPLIT_EVEN,
					 j->dp_tail, &p);
		if (ret == 0)
			net->overlap = p.overlap;
		if (ret == 0 && k->r == 0) {
			res->dp = p;
			k->me->pred_plan_s = p.step_s;
		}
		k->dp = p;
		if (ret == 0) {
			k->l0 = 0;
			k->nl = k->m->nlayers;
			k->me->samples = p.samples[k->r];
			k->me->first = 0;
			k->me->nlayers = k->nl;
		}
	} else {
		struct trn_pp_plan p;

		if (net->overlap < 0)
			net->overlap = 0; /* no all-reduce */
		memset(&p, 0, sizeof(p));
		if (j->pp_mb_auto)
			ret = choose_mb(k, net, &p);
		else
			ret = j->split == ITR_SPLIT_PLAN
				      ? trn_plan_pp(k->m, k->dev, j->ndev, net, j->sched, &p)
				      : trn_plan_pp_even(k->m, k->dev, j->ndev, net, j->sched, &p);
		if (ret == 0)
			ret = trn_predict_pp(k->m, k->dev, j->ndev, net, &p);
		if (ret == 0 && k->r == 0) {
			res->pp = p;
			k->me->pred_plan_s = p.step_s;
		}
		k->pp = p;
		if (ret == 0) {
			k->l0 = p.first[k->r];
			k->nl = p.nlayers[k->r];
			k->me->first = k->l0;
			k->me->nlayers = k->nl;
			k->me->samples = k->m->global_batch;
			if (k->nl < 1 || k->l0 < 0 || k->l0 + k->nl > k->m->nlayers)
				ret = -EINVAL;
		}
	}
	if (ret == -ENOMEM && k->r == 0)
		ice_err(ICE_SUB_BENCH,
			"no %s split of model '%s' fits the devices' memory (their profiles' "
			"mem_gib)",
			j->scheme == ITR_DP ? "dp" : "pp", k->m->name);
	if (ret == 0)
		ret = plan_fits(k);
	if (ret < 0)
		ice_err(ICE_SUB_BENCH, "rank %d: planning %s (%s split) failed: %s", k->r,
			j->scheme == ITR_DP ? "dp" : "pp",
			j->split == ITR_SPLIT_PLAN ? "plan" : "even", strerror(-ret));
	return ret;
}

/* FNV-1a and sum of this rank's weights, as the device holds them. */
static int weights_digest(struct itr_rank *k)
{
	uint64_t h = ITR_FNV_INIT;
	double sum = 0;

	for (int j = 0; j < k->nl; j++) {
		size_t cnt = (size_t)itr_lin(k, j) * (size_t)itr_lout(k, j);
		const float *v = itr_host_view(k, k->w[j], cnt);

		if (v == NULL)
			return -EIO;
		h = itr_fnv1a(h, v, cnt * 4);
		for (size_t i = 0; i < cnt; i++)
			sum += v[i];
	}
	k->me->weight_hash = h;
	k->me->weight_sum = sum;
	return 0;
}

/* DP: are the weights the same on every rank? The hashes are compared over
 * the bootstrap connections (max == min of each 32-bit half). */
static int check_weights(struct itr_rank *k, bool *same)
{
	uint64_t h = k->me->weight_hash;
	double v[4];
	int ret = 0;

	v[0] = (double)(h >> 32);
	v[1] = -(double)(h >> 32);
	v[2] = (double)(h & 0xffffffffu);
	v[3] = -(double)(h & 0xffffffffu);
	for (int i = 0; i < 4 && ret == 0; i++)
		ret = tp_comm_oob_max(k->c, &v[i]);
	if (ret < 0)
		return ret;
	*same = v[0] == -v[1] && v[2] == -v[3];
	return 0;
}

/* After training, on this thread again: the correctness checks. */
static int finish(struct itr_rank *k)
{
	int ret = weights_digest(k);

	if (ret < 0)
		return ret;
	if (k->job->scheme == ITR_DP) {
		bool same = false;

		snprintf(k->me->stage_name, sizeof(k->me->stage_name), "%s",
			 tp_stage_name(tp_dev_last_stage(k->d)));
		ret = check_weights(k, &same);
		if (ret == 0 && k->r == 0)
			k->res->weights_identical = same;
	} else {
		k->me->pp_sent_fwd = k->h_sent_fwd;
		k->me->pp_recv_fwd = k->h_recv_fwd;
		k->me->pp_sent_bwd = k->h_sent_bwd;
		k->me->pp_recv_bwd = k->h_recv_bwd;
	}
	if (ret == 0)
		ret = tp_comm_barrier(k->c);
	return ret;
}

/* --replan: a rank's speed is smoothed over its steps with this weight on
 * the newest */
#define ITR_EMA_ALPHA 0.5
/* --replan: how many steps a split's measured step is remembered
 * (trn_seen): long enough for a job to try a split and come back, short
 * enough that a long job tries a split again once the machine has moved */
#define ITR_SEEN_STEPS 20

static void split_str(const struct trn_dp_plan *p, int n, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int r = 0; r < n; r++)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%d", r ? "," : "",
					p->samples[r]);
}

/* --replan's memory key of a DP split: its samples and its tails */
static void dp_key(const struct trn_dp_plan *p, int n, char *buf, size_t len)
{
	size_t off;

	split_str(p, n, buf, len);
	off = strlen(buf);
	for (int r = 0; r < n; r++)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%d", r ? "," : "/",
					p->tail[r]);
}

/* "0-19,20-27": the stages' layers */
static void layers_str(const struct trn_pp_plan *p, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int s = 0; s < p->nstages; s++)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%d-%d",
					s ? "," : "", p->first[s], p->first[s] + p->nlayers[s] - 1);
}

/* Parameters of global layers [0, l) (floats). */
static size_t params_before(const struct trn_model *m, int l)
{
	size_t n = 0;

	for (int i = 0; i < l; i++)
		n += (size_t)m->in[i] * (size_t)m->out[i];
	return n;
}

/* Move the weights of global layers [lo, hi) from rank a to rank b
 * (their host master copies, at their place in full): a sends, b receives,
 * any other rank has nothing to do. */
static int pp_move(struct itr_rank *k, float *full, int lo, int hi, int a, int b)
{
	struct itr_cop op;
	size_t at = params_before(k->m, lo), count = params_before(k->m, hi) - at;

	if (k->r != a && k->r != b)
		return 0;
	memset(&op, 0, sizeof(op));
	op.host_mem = true;
	itr_cop_post(&k->ct, &op, k->r == a ? COP_SEND : COP_RECV, full + at, count,
		     k->r == a ? b : a);
	return itr_wait_op(k, &op, EV_MOVE);
}

/*
 * PP, --replan: the split decided at the last step boundary takes effect
 * at this one (the step in between queued no receive of the next step
 * ahead, so nothing is in flight). Only the layers that change stage move:
 * their host master copies go from the old stage's rank to the new one's,
 * one transfer per pair of stages whose old and new layers meet (stage
 * ranges are contiguous, so that is one range of layers), in the same
 * order on every rank (by old stage, then new stage), so no two ranks wait
 * on each other: a rank's transfer waits only on transfers earlier in that
 * order. Each rank then sets up its parameters, activations and schedule
 * again, its kept layers copied across. The weights are moved, not
 * recomputed: the same bits. (Moving one layer of the bench's model is
 * 1 MiB; the whole model was all-gathered before, 28 MiB, 0.1-0.15 s of
 * a 0.6 s step on this VM.)
 */
static int pp_switch(struct itr_rank *k)
{
	const struct trn_model *m = k->m;
	const struct trn_pp_plan *o = &k->pp, *q = &k->pp_next;
	float *full = malloc(params_before(m, m->nlayers) * 4);
	int ret = 0, mbs = m->global_batch / m->micro_batch;

	if (full == NULL)
		return -ENOMEM;
	/* a device rank's weights are its master: the host copy first */
	if (itr_dev_update(k) && k->ops->to_host(k->wmblk, k->wblk, k->nparam * 4) < 0) {
		ret = -EIO;
		goto out;
	}
	for (int j = 0; j < k->nl; j++)
		memcpy(full + params_before(m, k->l0 + j), k->wm[j],
		       (size_t)itr_lin(k, j) * (size_t)itr_lout(k, j) * 4);
	for (int a = 0; a < k->n && ret == 0; a++)
		for (int b = 0; b < k->n && ret == 0; b++) {
			int lo = o->first[a] > q->first[b] ? o->first[a] : q->first[b];
			int ea = o->first[a] + o->nlayers[a], eb = q->first[b] + q->nlayers[b];
			int hi = ea < eb ? ea : eb;

			if (a != b && lo < hi)
				ret = pp_move(k, full, lo, hi, a, b);
		}
	if (ret < 0)
		goto out;
	itr_free_acts(k);
	itr_free_params(k);
	k->pp = k->pp_next;
	k->pp_pending = false;
	k->l0 = k->pp.first[k->r];
	k->nl = k->pp.nlayers[k->r];
	k->me->first = k->l0;
	k->me->nlayers = k->nl;
	ret = trn_pp_order(&k->pp, k->r, k->pp_ops, 3 * mbs);
	if (ret < 0)
		goto out;
	k->pp_nops = ret;
	k->nslots = trn_pp_slots(k->pp_ops, k->pp_nops, k->pp.sched);
	ret = itr_setup_params(k);
	if (ret == 0) {
		for (int j = 0; j < k->nl; j++)
			memcpy(k->wm[j], full + params_before(m, k->l0 + j),
			       (size_t)itr_lin(k, j) * (size_t)itr_lout(k, j) * 4);
		if (!k->host && k->ops->from_host(k->wblk, k->wmblk, k->nparam * 4) < 0)
			ret = -EIO;
	}
	if (ret == 0)
		ret = itr_setup_acts(k, 0, m->global_batch, k->r == 0, k->r == k->n - 1);
out:
	if (ret < 0)
		ice_err(ICE_SUB_BENCH, "rank %d: re-planned pipeline: cannot take layers %d-%d: %s",
			k->r, k->pp_next.first[k->r],
			k->pp_next.first[k->r] + k->pp_next.nlayers[k->r] - 1, strerror(-ret));
	free(full);
	return ret;
}

/* The new split's own slots and schedule after a DP re-plan. */
static int dp_switch(struct itr_rank *k, const struct trn_dp_plan *p)
{
	int row0 = 0, ret;

	k->dp = *p;
	k->me->samples = p->samples[k->r];
	for (int r = 0; r < k->r; r++)
		row0 += p->samples[r];
	itr_free_acts(k);
	k->nslots = p->tail[k->r] > 1 ? p->tail[k->r] : 1;
	ret = itr_setup_acts(k, row0, k->me->samples, true, true);
	if (ret < 0)
		ice_err(ICE_SUB_BENCH, "rank %d: re-planned split: cannot set up %d rows: %s", k->r,
			k->me->samples, strerror(-ret));
	return ret;
}

/* --replan: the median of this rank's last three step times (fewer at
 * the start or after a new split: only steps the running split ran, never
 * step 0 nor a split's first step, which carries its switch). One step
 * alone says little on a shared machine: a single step of a steady job
 * comes out a tenth or more off on this VM. */
static double recent_step(const struct itr_rank *k, int step)
{
	double t[3];
	int n = 0;

	for (int s = step; s >= k->split_from && n < 3; s--) {
		double x = (double)(k->me->step_end_ns[s + 1] - k->me->step_end_ns[s]) * 1e-9;
		int i = n++;

		for (; i > 0 && t[i - 1] > x; i--) /* insertion, ascending */
			t[i] = t[i - 1];
		t[i] = x;
	}
	if (n == 0)
		return 0;
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/*
 * --replan: after each step every rank smooths its own speed (what the
 * step's meter says, meter_speed: on a host rank it holds the CPU its
 * communication took, as the rolling prediction's does; exponentially,
 * ITR_EMA_ALPHA), and the ranks exchange their speeds and recent step
 * times (recent_step; a maximum over the ranks, through the communication
 * thread, out of band). The exchange gives every rank the same figures, so
 * all decide alike. Every second step the split is planned again from the
 * measured speeds (a host rank's contention not priced again), and the
 * new split replaces the running one when that pays (trn_replan_pays: the
 * running one priced at the same speeds; at the first check, the
 * profiles' split, half a percent: trn_replan_x), whether or not the step drifted:
 * a device that speeds up, or a profile taken in a slow spell of the
 * device that is not the bottleneck, leaves the step as predicted and the
 * split wrong. A split that ran before (trn_seen, ITR_SEEN_STEPS) must
 * also have measured X / 2 shorter than the running one: the speeds a
 * device measures can depend on the split it runs, and a split priced at
 * another's speeds can promise what it did not do. When the recent step
 * (the slowest rank's) is further from the prediction than --replan and
 * the new split does not pay, the running one stays with its new
 * prediction; within --replan and no split that pays, nothing changes. Rank 0 says each re-plan.
 * DP: a new split takes effect at this step boundary (activations and input rows set up again for
 * the new rows). PP: at the next one (pp_switch), since the next step's first receive may already
 * be queued; the layers move with their weights. The first check is at the warm-up's end
 * (itr_replan_first), so that a split re-planned from the warm-up's speeds is the one all timed
 * steps run, but never before two steps are measured.
 */
static int adapt(struct itr_rank *k, int step, double g)
{
	const struct itr_job *j = k->job;
	struct trn_profile dev[TRN_MAX_DEVICES];
	double v[TRN_MAX_DEVICES + 1], drift, pred, cur, fresh, seen = 0, x;
	struct trn_net net = k->net;
	struct trn_dp_plan p;
	struct trn_pp_plan q;
	bool pp = j->scheme == ITR_PP, same, kept, drifted;
	char was[TRN_SEEN_KEY], now[TRN_SEEN_KEY];
	int ret, n = k->n;

	/* the first step of a new split is not one to judge it by: it
	 * carries the switch (PP: the weights' all-gather) and first touches
	 * the new activations */
	if (pp && k->pp_pending) {
		k->last_replan = step;
		k->split_from = step + 2;
		return pp_switch(k);
	}
	if (g > 0 && step > 0)
		k->gflops_ema = k->gflops_ema > 0
					? ITR_EMA_ALPHA * g + (1 - ITR_EMA_ALPHA) * k->gflops_ema
					: g;
	for (int r = 0; r < n; r++)
		v[r] = 0;
	v[k->r] = k->gflops_ema;
	v[n] = recent_step(k, step);
	k->op_oob.dv = v;
	itr_cop_post(&k->ct, &k->op_oob, COP_OOB_MAX, NULL, (size_t)n + 1, 0);
	ret = itr_wait_op(k, &k->op_oob, EV_OOB);
	if (ret < 0)
		return ret;
	pred = pp ? k->pp.step_s : k->dp.step_s;
	/* two steps of the running split at least; PP: a new split runs from
	 * the step after next; none is left */
	if (step < itr_replan_first(j) || step - k->last_replan < 2 || step - k->split_from < 1 ||
	    !(pred > 0) || (pp && step + 2 >= j->warmup + j->steps))
		return 0;
	drift = v[n] / pred - 1;
	drifted = fabs(drift) > j->replan;
	x = trn_replan_x(j->replan, !k->checked);
	k->checked = true;
	for (int r = 0; r < n; r++) {
		dev[r] = k->dev[r];
		if (v[r] > 0)
			dev[r].gflops = v[r];
		if (v[r] > 0 && trn_compute_cores(&k->dev[r], net.cores[r]) > 0)
			net.cores[r] = 0;
	}
	if (pp) {
		memset(&q, 0, sizeof(q));
		ret = trn_plan_pp(k->m, dev, n, &net, j->sched, &q);
		if (ret < 0)
			return ret;
		layers_str(&k->pp, was, sizeof(was));
		layers_str(&q, now, sizeof(now));
	} else {
		net.overlap = j->overlap; /* < 0: from the new tails */
		memset(&p, 0, sizeof(p));
		ret = trn_plan_dp_tailed(k->m, dev, n, &net, false, j->dp_tail, &p);
		if (ret < 0)
			return ret;
		split_str(&k->dp, n, was, sizeof(was));
		split_str(&p, n, now, sizeof(now));
	}
	k->last_replan = step;
	same = strcmp(was, now) == 0 && (pp || memcmp(p.tail, k->dp.tail, sizeof(p.tail)) == 0);
	/* another split only where it pays, the running one priced at the
	 * same measured speeds, and, where the new one ran before, measured
	 * (the running one's measured step noted for a later check) */
	cur = itr_split_step(j, k->m, &k->dp, &k->pp, dev, &net);
	fresh = pp ? q.step_s : p.step_s;
	if (pp) {
		trn_seen_note(&k->seen, was, v[n], step);
		if (!same)
			seen = trn_seen_step(&k->seen, now, step, ITR_SEEN_STEPS);
	} else {
		char key[TRN_SEEN_KEY];

		dp_key(&k->dp, n, key, sizeof(key));
		trn_seen_note(&k->seen, key, v[n], step);
		dp_key(&p, n, key, sizeof(key));
		if (!same)
			seen = trn_seen_step(&k->seen, key, step, ITR_SEEN_STEPS);
	}
	kept = !same && (!trn_replan_pays(cur, fresh, x) || !trn_replan_pays(v[n], seen, x));
	/* within --replan and no split that pays: nothing to say or renew */
	if (!drifted && (same || kept))
		return 0;
	if (kept) { /* the same operations, a new prediction */
		if (pp)
			q = k->pp, q.step_s = cur;
		else
			p = k->dp, p.step_s = cur;
		same = true;
	}
	/* counted when the split changes (a new prediction alone is not) */
	if (!same &&
	    k->me->replans < (int)(sizeof(k->me->replan_step) / sizeof(k->me->replan_step[0])))
		k->me->replan_step[k->me->replans] = step;
	k->me->replans += !same;
	if (k->r == 0) {
		fprintf(stderr,
			"ice-train: job '%s', step %d: recent steps' median %.4f s, predicted "
			"%.4f s (%+.1f%%, %s --replan %.0f%%%s): re-planned from the "
			"measured speeds (GFLOP/s",
			j->label, step, v[n], pred, drift * 100, drifted ? "beyond" : "within",
			j->replan * 100, drifted ? "" : ", but the speeds moved");
		for (int r = 0; r < n; r++)
			fprintf(stderr, "%s %.2f (profile %.2f)", r ? "," : "", v[r],
				k->dev[r].gflops);
		fprintf(stderr, "): %s %s -> %s, predicted %.4f s",
			pp ? "layers per stage" : "samples per rank", was, now, fresh);
		if (kept && trn_replan_pays(cur, fresh, x))
			fprintf(stderr,
				"; kept %s: the new split ran %.4f s a step before, the "
				"running one %.4f s (not %.1f%% shorter as measured)\n",
				was, seen, v[n], trn_replan_gain(x) * 100);
		else if (kept)
			fprintf(stderr,
				"; kept %s, predicted %.4f s at these speeds (the new split "
				"is not %.1f%% shorter)\n",
				was, cur, trn_replan_gain(x) * 100);
		else if (pp && !same)
			fprintf(stderr, "; from the next step boundary, the moved layers' "
					"weights sent to their new stages\n");
		else
			fputc('\n', stderr);
		if (pp)
			k->res->pp = q;
		else
			k->res->dp = p;
		k->me->repredicted = true;
	}
	if (pp) {
		if (same) {
			k->pp.step_s = q.step_s;
			return 0;
		}
		k->pp_next = q;
		k->pp_pending = true;
		return 0;
	}
	if (same) {
		k->dp = p;
		return 0;
	}
	k->split_from = step + 2;
	return dp_switch(k, &p);
}

/* What the rank's CPU work over some steps says of its device's speed
 * (trn_speed_from_steps): on a host device whose compute keeps a core busy,
 * the matrix multiplies' FLOP over the time the rank needed the CPU for
 * the steps (the compute thread's CPU and run-queue wait, or both threads'
 * CPU over the cores it may use), the optimizer step taken off;
 * on an accelerator (or without the cores: --no-contention), over the
 * matrix multiplies' own seconds. */
struct itr_meter {
	double flops, mm_s, thread_cpu, thread_wait, proc_cpu, update_s; /* thread_wait < 0:
									  * unknown */
	double comm; /* of thread_cpu, the inline communication's (itr_comm_inline) */
};

static void meter_start(const struct itr_rank *k, struct itr_meter *m)
{
	m->flops = k->mm_flops;
	m->mm_s = k->mm_s;
	m->thread_cpu = ice_thread_cpu_s();
	m->thread_wait = thread_wait_seconds();
	m->proc_cpu = ice_process_cpu_s();
	m->update_s = k->t_update;
	m->comm = k->ct.cpu_s;
}

static bool cpu_metered(const struct itr_rank *k)
{
	return trn_compute_cores(k->prof, k->net.cores[k->r]) > 0;
}

/* The meter's figures since m was started (differences). */
static void meter_since(const struct itr_rank *k, const struct itr_meter *m, struct itr_meter *d)
{
	d->flops = k->mm_flops - m->flops;
	d->mm_s = k->mm_s - m->mm_s;
	d->thread_cpu = ice_thread_cpu_s() - m->thread_cpu;
	d->thread_wait = m->thread_wait < 0 ? -1 : thread_wait_seconds();
	if (d->thread_wait >= 0)
		d->thread_wait -= m->thread_wait;
	d->proc_cpu = ice_process_cpu_s() - m->proc_cpu;
	d->update_s = k->t_update - m->update_s;
	d->comm = k->ct.cpu_s - m->comm;
}

/* The speed steps [a, b] say, from their meters (sm: one per step); own:
 * the device's own, without the compute thread's run-queue wait
 * (trn_speed_own). */
static double meter_speed(const struct itr_rank *k, const struct itr_meter *sm, int a, int b,
			  bool own)
{
	struct itr_meter s = {0};

	for (int i = a; i <= b; i++) {
		s.flops += sm[i].flops;
		s.mm_s += sm[i].mm_s;
		s.thread_cpu += sm[i].thread_cpu;
		if (sm[i].thread_wait < 0 || s.thread_wait < 0)
			s.thread_wait = -1;
		else
			s.thread_wait += sm[i].thread_wait;
		s.proc_cpu += sm[i].proc_cpu;
		s.update_s += sm[i].update_s;
	}
	if (!cpu_metered(k))
		return s.mm_s > 0 ? s.flops / s.mm_s / 1e9 : 0;
	if (own)
		return trn_speed_own(s.flops, s.thread_cpu, s.proc_cpu, k->net.cores[k->r],
				     s.update_s);
	return trn_speed_from_steps(s.flops, s.thread_cpu, s.thread_wait, s.proc_cpu,
				    k->net.cores[k->r], s.update_s);
}

/*
 * The matmuls' FLOP per second of the compute thread's own CPU time over
 * steps a..b, its optimizer's left out (gflops_cpu): what neither a CPU
 * quota, a neighbour's run-queue wait nor this rank's communication (its
 * thread, or inline the polls and waits the meter counts apart) changes,
 * only the device itself (its caches, its memory, the VM's host).
 * 0 for an emulated device, whose compute is mostly asleep.
 */
static double cpu_speed(const struct itr_rank *k, const struct itr_meter *sm, int a, int b)
{
	double flops = 0, cpu = 0, upd = 0;

	if (k->prof->emulated)
		return 0;
	for (int i = a; i <= b; i++) {
		flops += sm[i].flops;
		cpu += sm[i].thread_cpu - sm[i].comm;
		upd += sm[i].update_s;
	}
	return trn_speed_from_steps(flops, cpu, 0, 0, 0, upd);
}

/*
 * --refine N, before step `next` (from the end of the warm-up on): this
 * rank's speed over the N steps before it (meter_speed), for the launcher,
 * which predicts each timed step from every rank's speed before it
 * (ice_train_main.c). Nothing is exchanged between the ranks here: the
 * measurement does not touch the steps it predicts.
 */
static void refine(struct itr_rank *k, const struct itr_meter *sm, int next)
{
	const struct itr_job *j = k->job;

	k->me->step_speed[next] = (float)meter_speed(k, sm, next - j->refine, next - 1, false);
	if (next == j->warmup)
		k->me->gflops_refined = k->me->step_speed[next];
}

static int train(struct itr_rank *k)
{
	const struct itr_job *j = k->job;
	int total = j->warmup + j->steps;
	struct trn_emu emu0;
	double cpu0 = 0, wall0 = 0, f0, s0;
	struct itr_meter m0, *sm = calloc((size_t)total, sizeof(*sm)); /* per step */
	bool adaptive = j->replan > 0 && j->split == ITR_SPLIT_PLAN && k->n > 1;
	int ret;

	if (sm == NULL)
		return -ENOMEM;
	k->me->step_end_ns[0] = ice_now_ns();
	emu0 = k->emu;
	for (int step = 0; step < total; step++) {
		k->step = step;
		if (step == j->warmup) {
			k->t_compute = k->t_exposed = k->t_update = 0;
			k->mm_s = k->mm_flops = 0;
			k->t_wait_act = k->t_wait_grad = k->t_wait_send = k->t_handoff = 0;
			emu0 = k->emu;
			cpu0 = ice_process_cpu_s();
			wall0 = ice_now_s();
		}
		meter_start(k, &m0);
		k->loss = 0;
		f0 = k->mm_flops;
		s0 = k->mm_s;
		ret = j->scheme == ITR_DP ? itr_dp_step(k, k->me->samples)
					  : itr_pp_step(k, step + 1 < total && !k->pp_pending);
		if (ret < 0) {
			ice_err(ICE_SUB_BENCH, "rank %d: step %d failed: %s", k->r, step,
				strerror(-ret));
			free(sm);
			return ret;
		}
		k->me->step_end_ns[step + 1] = ice_now_ns();
		k->me->step_loss[step] = k->loss;
		k->me->step_gflops[step] =
			k->mm_s > s0 ? (float)((k->mm_flops - f0) / (k->mm_s - s0) / 1e9) : 0;
		meter_since(k, &m0, &sm[step]);
		k->me->step_own[step] = (float)meter_speed(k, sm, step, step, true);
		k->me->step_cpu[step] = (float)cpu_speed(k, sm, step, step);
		if (j->refine > 0 && step + 1 >= j->warmup && step + 1 < total)
			refine(k, sm, step + 1);
		if (adaptive && step + 1 < total) {
			ret = adapt(k, step, meter_speed(k, sm, step, step, false));
			if (ret < 0) {
				free(sm);
				return ret;
			}
			/* a split switched at the warm-up's end costs the
			 * warm-up, not the first timed step */
			if (step + 1 == j->warmup)
				k->me->step_end_ns[step + 1] = ice_now_ns();
		}
	}
	k->me->wall_s = ice_now_s() - wall0;
	k->me->cpu_s = ice_process_cpu_s() - cpu0;
	k->me->compute_s = k->t_compute / j->steps;
	k->me->gflops = k->mm_s > 0 ? k->mm_flops / k->mm_s / 1e9 : 0;
	k->me->gflops_steps = meter_speed(k, sm, j->warmup, total - 1, false);
	k->me->gflops_own = meter_speed(k, sm, j->warmup, total - 1, true);
	k->me->gflops_cpu = cpu_speed(k, sm, j->warmup, total - 1);
	k->me->thread_cpu_s = k->me->runq_wait_s = k->me->comm_cpu_s = 0;
	for (int i = j->warmup; i < total; i++) {
		k->me->thread_cpu_s += sm[i].thread_cpu - sm[i].comm;
		k->me->comm_cpu_s += sm[i].comm / j->steps;
		if (sm[i].thread_wait < 0 || k->me->runq_wait_s < 0)
			k->me->runq_wait_s = -1;
		else
			k->me->runq_wait_s += sm[i].thread_wait;
	}
	free(sm);
	k->me->exposed_s = k->t_exposed / j->steps;
	k->me->update_s = k->t_update / j->steps;
	k->me->wait_act_s = k->t_wait_act / j->steps;
	k->me->wait_grad_s = k->t_wait_grad / j->steps;
	k->me->wait_send_s = k->t_wait_send / j->steps;
	k->me->handoff_s = k->t_handoff / j->steps;
	k->me->comm_inline = k->ct.inl;
	k->me->emu_calls = k->emu.calls - emu0.calls;
	k->me->emu_overruns = k->emu.overruns - emu0.overruns;
	k->me->emu_overrun_s = k->emu.overrun_s - emu0.overrun_s;
	k->me->emu_hidden_s = k->emu.hidden_s - emu0.hidden_s;
	return 0;
}

/* The largest micro-batch --pp-micro-batch auto may choose (the model's
 * otherwise): the transport's buffers are sized for it before the choice. */
static int pp_mb_max(const struct itr_job *j)
{
	int sizes[TRN_PP_AT_MAX], n = 0;

	if (j->pp_mb_auto)
		n = trn_pp_mb_sizes(&j->model, j->dev, j->ndev, sizes);
	/* ascending */
	return n > 0 && sizes[n - 1] > j->model.micro_batch ? sizes[n - 1] : j->model.micro_batch;
}

static int run_rank(struct itr_rank *k, struct tp_comm_cfg *cc)
{
	const struct itr_job *j = k->job;
	const struct trn_model *m = k->m;
	/* calibrated at the model's micro-batch; buffers for the largest */
	size_t act_count = (size_t)m->micro_batch * (size_t)trn_model_widest(m);
	size_t act_max = (size_t)pp_mb_max(j) * (size_t)trn_model_widest(m);
	size_t maxb, bucket_count;
	struct trn_net net;
	char why[256] = "";
	uint64_t stall;
	int kind, ret, r2;

	kind = j->dev[k->r].emulated ? DEV_MEM_HOST : dev_mem_kind_parse(j->dev[k->r].kind);
	k->ops = kind < 0 ? NULL : dev_mem_ops_get((enum dev_mem_kind)kind);
	if (k->ops == NULL) {
		fprintf(stderr, "ice-train: rank %d: device '%s' needs %s memory: not built in\n",
			k->r, k->prof->name, k->prof->kind);
		return 2;
	}
	k->ops = itr_watch_ops(k->ops); /* every device call watched (ice_train_watch.c) */
	ret = k->ops->probe(why, sizeof(why));
	if (ret < 0) {
		fprintf(stderr, "ice-train: rank %d: device '%s' (%s) is not usable: %s\n", k->r,
			k->prof->name, k->ops->name, why[0] ? why : strerror(-ret));
		return 2;
	}
	k->host = k->ops->kind == DEV_MEM_HOST;
	k->sharded = j->scheme == ITR_DP && m->optim == TRN_OPTIM_SHARDED && k->n > 1;
	k->emu.gflops = k->prof->gflops;
	k->emu.mem_gbps = k->prof->mem_gbps;
	/* emulated compute ends in a timed sleep and the threads hand work on
	 * through timed waits: wake them on time (the default slack is 50 us,
	 * inherited by the communication thread) */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	k->mb = m->micro_batch;

	/* room for several activations that arrive before their receive */
	maxb = act_max * 4 * (size_t)(k->n + 2) + (1u << 20);
	if (cc->eng.unexp_bytes < maxb)
		cc->eng.unexp_bytes = (uint32_t)(maxb < (256u << 20) ? maxb : (256u << 20));
	k->c = tp_comm_init(cc);
	if (k->c == NULL) {
		fprintf(stderr, "ice-train: rank %d: cannot create the communicator: %s\n", k->r,
			strerror(errno));
		return 1;
	}
	/* largest message: a bucket (up to the whole model) or two activations */
	bucket_count = (size_t)(m->bucket_kb > 0 ? m->bucket_kb : 4096) * 256;
	maxb = (size_t)(trn_model_param_bytes(m) + 0.5);
	if (maxb < 2 * act_max * 4)
		maxb = 2 * act_max * 4;
	if ((size_t)trn_model_param_bytes(m) / 4 < bucket_count)
		bucket_count = (size_t)trn_model_param_bytes(m) / 4;
	k->d = tp_dev_comm_new(k->c, k->ops, maxb);
	if (k->d == NULL) {
		fprintf(stderr, "ice-train: rank %d: cannot set up %s collectives: %s\n", k->r,
			k->ops->name, strerror(errno));
		ret = -errno;
		goto out;
	}
	tp_dev_comm_staging(k->d, &k->tp_bytes[1], &k->tp_bytes[0]);
	ret = itr_calibrate(k, bucket_count, act_count, &net);
	if (ret < 0) {
		fprintf(stderr, "ice-train: rank %d: network calibration failed: %s\n", k->r,
			strerror(-ret));
		goto out;
	}
	ret = plan_job(k, &net);
	if (ret < 0)
		goto out;
	stall = cc->stall_timeout_ns;
	if (stall == 0) {
		/* a peer that hangs ends the job: after 20 predicted steps
		 * (the warm-up's first touches every page), at least 60 s */
		double s = 20 * (j->scheme == ITR_DP ? k->dp.step_s : k->pp.step_s);

		stall = (uint64_t)((s > 60 ? s : 60) * ICE_NSEC_PER_SEC);
		tp_comm_set_stall_timeout(k->c, stall);
	}
	m = k->m; /* --pp-micro-batch auto: at the chosen micro-batch */
	k->net = net;
	k->last_replan = -2;
	k->split_from = 1; /* step 0 fills the pipeline and touches every page */
	if (k->r == 0)
		k->res->net = net;
	if (j->scheme == ITR_DP) {
		int row0 = 0;

		/* every rank computed the same plan: rows before ours */
		for (int r = 0; r < k->r; r++)
			row0 += k->dp.samples[r];
		k->nslots = k->dp.tail[k->r] > 1 ? k->dp.tail[k->r] : 1;
		ret = itr_setup_params(k);
		if (ret == 0)
			ret = itr_setup_acts(k, row0, k->me->samples, true, true);
	} else {
		int mbs = m->global_batch / m->micro_batch;

		k->pp_ops = calloc(3 * (size_t)mbs, sizeof(*k->pp_ops));
		ret = k->pp_ops == NULL ? -ENOMEM : trn_pp_order(&k->pp, k->r, k->pp_ops, 3 * mbs);
		if (ret >= 0) {
			k->pp_nops = ret;
			k->nslots = trn_pp_slots(k->pp_ops, k->pp_nops, k->pp.sched);
			ret = itr_setup_params(k);
		}
		if (ret == 0)
			ret = itr_setup_acts(k, 0, m->global_batch, k->r == 0, k->r == k->n - 1);
	}
	if (ret < 0) {
		fprintf(stderr, "ice-train: rank %d: cannot set up the model: %s\n", k->r,
			strerror(-ret));
		goto out;
	}
	ret = tp_comm_barrier(k->c);
	if (ret < 0)
		goto out;
	/* and a device that hangs ends this rank after as long */
	ret = itr_watch_start(k->r, k->prof->name, k->prof->kind, stall);
	if (ret < 0) {
		fprintf(stderr, "ice-train: rank %d: cannot start the device watchdog: %s\n", k->r,
			strerror(-ret));
		goto out;
	}
	/* the communicator belongs to the communication thread from here... */
	ret = itr_cthread_start(&k->ct, k->d, itr_comm_inline(k));
	if (ret < 0)
		goto out;
	ret = train(k);
	r2 = itr_cthread_stop(&k->ct);
	if (ret == 0 && r2 < 0) {
		ice_err(ICE_SUB_BENCH, "rank %d: communication failed: %s", k->r, strerror(-r2));
		ret = r2;
	}
	/* ... and back to this thread */
	trace_dump(k);
	if (ret == 0)
		ret = finish(k);
	if (ret == 0)
		k->me->done = true;
out:
	itr_watch_stop();
	itr_free_rank(k);
	tp_dev_comm_free(k->d);
	tp_comm_free(k->c);
	return ret < 0 ? 1 : 0;
}

int itr_rank_main(void *arg)
{
	struct itr_rank_arg *a = arg;
	struct itr_rank k;

	memset(&k, 0, sizeof(k));
	k.job = a->job;
	k.m = &a->job->model;
	k.res = a->res;
	k.r = a->cc->rank;
	k.n = a->cc->nranks;
	k.me = &a->res->rank[k.r];
	k.dev = a->job->dev;
	k.prof = &a->job->dev[k.r];
	return run_rank(&k, a->cc);
}
