// SPDX-License-Identifier: Apache-2.0
/*
 * ice-train's report of its jobs: see ice_train_report.h.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ice_train_report.h"

int itr_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double itr_split_step(const struct itr_job *j, const struct trn_model *m,
		      const struct trn_dp_plan *dp, const struct trn_pp_plan *pp,
		      const struct trn_profile *dev, const struct trn_net *net)
{
	if (j->scheme == ITR_DP) {
		struct trn_dp_plan p = *dp;
		struct trn_net n = *net;

		/* --overlap's, or what the tails that ran give on these
		 * devices (chosen for the profiles or, after a re-plan, for
		 * measured speeds) */
		n.overlap =
			j->overlap >= 0 ? j->overlap : trn_dp_tails_overlap(m, dev, j->ndev, &p);
		return trn_predict_dp(m, dev, j->ndev, &n, &p) < 0 ? 0 : p.step_s;
	} else {
		struct trn_pp_plan q = *pp;

		return trn_predict_pp(m, dev, j->ndev, net, &q) < 0 ? 0 : q.step_s;
	}
}

/* The step of the split the job ran last (res->dp or res->pp) on devices
 * dev under net; 0 when it cannot be priced. */
static double predict_split(const struct job_out *jo, const struct trn_profile *dev,
			    const struct trn_net *net)
{
	return itr_split_step(&jo->job, &jo->job.model, &jo->res->dp, &jo->res->pp, dev, net);
}

/* Whether every timed step ran the split the job ran last: no re-plan, or
 * all of them decided in time to take effect before the timed steps
 * (--replan checks from the warm-up's end). */
static bool one_split_timed(const struct job_out *jo)
{
	const struct itr_rank_result *r0 = &jo->res->rank[0];
	int n = r0->replans;

	if (n == 0)
		return true;
	if (n > (int)(sizeof(r0->replan_step) / sizeof(r0->replan_step[0])))
		return false;
	return r0->replan_step[n - 1] + itr_replan_lag(&jo->job) <= jo->job.warmup;
}

/*
 * --refine: step k of the split the job ran, predicted from the speeds
 * every rank measured over the --refine steps before it (step_speed;
 * trn_profiles_refine: an emulated device keeps its stated speed). A speed
 * measured from a host rank's CPU holds its communication's CPU, so its
 * contention is not priced again (cores 0). 0 when not refined or the
 * split changed during the timed steps (--replan).
 */
static double predict_step(const struct job_out *jo, int k)
{
	const struct itr_job *j = &jo->job;
	const struct itr_result *res = jo->res;
	struct trn_profile dev[TRN_MAX_DEVICES];
	struct trn_net net = res->net;
	double v[TRN_MAX_DEVICES];

	if (j->refine <= 0 || k < j->warmup || !one_split_timed(jo))
		return 0;
	for (int r = 0; r < j->ndev; r++) {
		v[r] = res->rank[r].step_speed[k];
		if (v[r] > 0 && trn_compute_cores(&j->dev[r], net.cores[r]) > 0)
			net.cores[r] = 0;
	}
	trn_profiles_refine(j->dev, j->ndev, v, dev);
	return predict_split(jo, dev, &net);
}

/* When step k of jo began (k = warmup + steps: when the last one ended):
 * the previous step's end on its last rank */
static uint64_t step_begin(const struct job_out *jo, int k)
{
	uint64_t t = 0;

	for (int r = 0; r < jo->job.ndev; r++)
		t = jo->res->rank[r].step_end_ns[k] > t ? jo->res->rank[r].step_end_ns[k] : t;
	return t;
}

/* Steps a..b-1's speed, the harmonic mean of step[] (every step of a split
 * has the same FLOP) into *out; left alone where a step has none. */
static void window_speed(const float *step, int a, int b, double *out)
{
	double inv = 0;
	int i;

	for (i = a; i < b && step[i] > 0; i++)
		inv += 1 / step[i];
	if (i == b)
		*out = (b - a) / inv;
}

/*
 * A --together set's jobs run their timed steps at the same time only as
 * long as the set's step counts fit the devices' speeds (together_steps:
 * from the profiles); on a machine whose speeds move, one job goes on
 * alone after the others have ended, or starts timing before them, and
 * those steps are not the device's speed beside the others. Counted: the
 * steps that began after every job's timed steps had begun and ended
 * before the first job's had ended (on one host the same clock; across
 * hosts each rank's clock from the set's rendezvous, itr_ctl_run). A job
 * with no such step keeps all of them. gflops_own and gflops_cpu (the
 * "scaled" efficiencies) over the same steps (window_speed).
 */
void itr_together_window(struct job_out **jo, int n)
{
	uint64_t from = 0, to = UINT64_MAX;

	for (int k = 0; k < n; k++) {
		const struct itr_job *j = &jo[k]->job;
		uint64_t a, b;

		if (!jo[k]->res->ok)
			return;
		a = step_begin(jo[k], j->warmup);
		b = step_begin(jo[k], j->warmup + j->steps);
		from = a > from ? a : from;
		to = b < to ? b : to;
	}
	for (int k = 0; k < n; k++) {
		const struct itr_job *j = &jo[k]->job;
		int a = j->warmup, b = j->warmup + j->steps;

		while (a < b && step_begin(jo[k], a) < from)
			a++;
		while (b > a && step_begin(jo[k], b) > to)
			b--;
		if (b == a || (a == j->warmup && b == j->warmup + j->steps))
			continue;
		jo[k]->from = a;
		jo[k]->to = b;
		for (int r = 0; r < j->ndev; r++) {
			struct itr_rank_result *rr = &jo[k]->res->rank[r];

			window_speed(rr->step_own, a, b, &rr->gflops_own);
			window_speed(rr->step_cpu, a, b, &rr->gflops_cpu);
		}
	}
}

/* Step times from every rank's step ends: step k ends when its last rank
 * is done. */
void itr_step_stats(struct job_out *jo)
{
	const struct itr_job *j = &jo->job;
	double d[ITR_MAX_STEPS], e[ITR_MAX_STEPS], sum = 0, cpu = 0, wall = 0;
	int n = 0;

	if (jo->to <= jo->from) {
		jo->from = j->warmup;
		jo->to = j->warmup + j->steps;
	}
	jo->roll = j->refine > 0;
	for (int k = jo->from; k < jo->to; k++) {
		double pk = predict_step(jo, k);

		d[n] = (double)(step_begin(jo, k + 1) - step_begin(jo, k)) * 1e-9;
		if (pk > 0 && d[n] > 0)
			e[n] = (pk - d[n]) / d[n] * 100;
		else
			jo->roll = false;
		sum += d[n++];
	}
	qsort(d, (size_t)n, sizeof(d[0]), itr_cmp_double);
	if (jo->roll) {
		qsort(e, (size_t)n, sizeof(e[0]), itr_cmp_double);
		jo->err_roll_pct = n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
	}
	jo->step_mean = sum / n;
	jo->step_med = n % 2 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
	jo->tput = j->model.global_batch / jo->step_mean;
	/* from the profiles, for the split the job ran: after a re-plan its
	 * last prediction (res->dp / res->pp) came from measured speeds */
	jo->pred_last = j->scheme == ITR_DP ? jo->res->dp.step_s : jo->res->pp.step_s;
	if (!jo->res->rank[0].repredicted)
		jo->pred = jo->pred_last;
	else if (jo->res->rank[0].replans == 0) /* re-predicted, the split kept */
		jo->pred = jo->res->rank[0].pred_plan_s;
	else
		jo->pred = predict_split(jo, j->dev, &jo->res->net);
	jo->err_pct = (jo->pred - jo->step_med) / jo->step_med * 100;
	jo->err_last_pct = (jo->pred_last - jo->step_med) / jo->step_med * 100;
	jo->pred_ref = predict_step(jo, j->warmup);
	jo->err_ref_pct = jo->pred_ref > 0 ? (jo->pred_ref - jo->step_med) / jo->step_med * 100 : 0;
	for (int r = 0; r < j->ndev; r++) {
		cpu += jo->res->rank[r].cpu_s;
		wall = jo->res->rank[r].wall_s > wall ? jo->res->rank[r].wall_s : wall;
		const struct itr_rank_result *rr = &jo->res->rank[r];

		/* a few late wake-ups are noise; a twentieth of the compute time
		 * spent beyond the stated speed means this CPU set the pace */
		if (rr->emu_overrun_s / j->steps > 0.05 * rr->compute_s)
			jo->emu_overrun = true;
	}
	jo->cores = wall > 0 ? cpu / wall : 0;
	if (j->scheme == ITR_DP) {
		jo->data_ok = jo->res->weights_identical;
	} else {
		jo->data_ok = true;
		for (int s = 0; s + 1 < j->ndev; s++) {
			const struct itr_rank_result *a = &jo->res->rank[s],
						     *b = &jo->res->rank[s + 1];

			if (a->pp_sent_fwd != b->pp_recv_fwd || b->pp_sent_bwd != a->pp_recv_bwd)
				jo->data_ok = false;
		}
	}
}

/* "emu-fast*2 (emulated),h200" style list of a job's devices. */
void itr_dev_list(const struct itr_job *j, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < j->ndev;) {
		int c = 1;
		char count[16] = "";

		while (i + c < j->ndev && strcmp(j->dev[i + c].name, j->dev[i].name) == 0)
			c++;
		if (c > 1)
			snprintf(count, sizeof(count), "*%d", c);
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%s%s%s",
					i ? "," : "", j->dev[i].name, count,
					j->dev[i].emulated ? " (emulated)" : "");
		i += c;
	}
}

const char *itr_split_name(enum itr_split s)
{
	return s == ITR_SPLIT_PLAN ? "plan" : "even";
}

/* Step k's loss, before its update: DP, summed over the ranks (each has
 * its samples); PP, the last stage's. */
static double step_loss(const struct job_out *jo, int k)
{
	double l = 0;

	if (jo->job.scheme == ITR_PP)
		return jo->res->rank[jo->job.ndev - 1].step_loss[k];
	for (int r = 0; r < jo->job.ndev; r++)
		l += jo->res->rank[r].step_loss[k];
	return l;
}

/* What rank r's training state takes against its capacity, as measured
 * (its allocations; trn_mem_need) and as the plan predicted it. */
static double mem_measured(const struct itr_job *j, const struct itr_result *res, int r)
{
	struct trn_mem mm = {.device = res->rank[r].mem_dev, .host = res->rank[r].mem_host};

	return trn_mem_need(&j->dev[r], &mm);
}

static double mem_predicted(const struct itr_job *j, const struct itr_result *res, int r)
{
	return j->scheme == ITR_DP ? res->dp.mem_need[r] : res->pp.mem_need[r];
}

static void mem_line(const struct itr_job *j, const struct itr_result *res)
{
	printf("   memory per rank, MiB (its training state and the transport's staging, on "
	       "a host rank host and device; allocated / predicted");
	for (int r = 0; r < j->ndev; r++)
		if (j->dev[r].mem_gib > 0) {
			printf(" / capacity");
			break;
		}
	printf("):");
	for (int r = 0; r < j->ndev; r++) {
		printf("%s %.1f / %.1f", r ? ";" : "", mem_measured(j, res, r) / (1 << 20),
		       mem_predicted(j, res, r) / (1 << 20));
		if (j->dev[r].mem_gib > 0)
			printf(" / %.1f", trn_mem_cap(&j->dev[r]) / (1 << 20));
	}
	printf("\n");
	for (int r = 0, n = 0; r < j->ndev; r++)
		if (j->mem_share[r] > 1 && j->dev[r].mem_gib > 0)
			printf("%s rank %d 1/%d",
			       n++ ? ","
				   : "   (ranks computing in one host's memory "
				     "have a share of its profile's mem_gib:",
			       r, j->mem_share[r]);
	for (int r = 0; r < j->ndev; r++)
		if (j->mem_share[r] > 1 && j->dev[r].mem_gib > 0) {
			printf(")\n");
			break;
		}
}

void itr_print_job(const struct job_out *jo)
{
	const struct itr_job *j = &jo->job;
	const struct itr_result *res = jo->res;
	const struct trn_net *net = &res->net;
	char devs[512];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	itr_dev_list(j, devs, sizeof(devs));
	printf("\n== %s: %s%s%s, %s split, %d rank(s): %s", j->label,
	       j->scheme == ITR_DP ? "dp" : "pp", j->scheme == ITR_PP ? " " : "",
	       j->scheme == ITR_PP ? trn_pp_sched_name(j->sched) : "", itr_split_name(j->split),
	       j->ndev, devs);
	if (jo->nruns > 1)
		printf(" (run %d of %d)", jo->run, jo->nruns);
	printf("\n");
	if (jo->status != 0 || !res->ok) {
		printf("   FAILED (exit status %d); see the messages above\n", jo->status);
		return;
	}
	if (jo->from != j->warmup || jo->to != j->warmup + j->steps)
		printf("   counted: timed steps %d-%d of %d, those that ran while every job of "
		       "the set ran\n",
		       jo->from - j->warmup + 1, jo->to - j->warmup, j->steps);
	if (j->ndev > 1)
		printf("   network (calibrated on this job's communicator): all-reduce busbw %.3f "
		       "GB/s, p2p %.3f GB/s, latency %.1f us; overlap %.3f\n",
		       net->busbw_gbps, net->p2p_gbps, net->lat_s * 1e6, net->overlap);
	if (j->ndev > 1 && !j->no_contention) {
		printf("   CPU contention priced (--no-contention: not): per rank cores, "
		       "CPU ns per byte %s, compute lost per %s:",
		       j->scheme == ITR_DP ? "exchanged" : "sent/received, us per message",
		       j->scheme == ITR_DP ? "step" : "micro-batch");
		for (int r = 0; r < j->ndev; r++) {
			printf("%s %.2f, %.3f", r ? ";" : "", net->cores[r],
			       (j->scheme == ITR_DP ? net->cpu_ar_s[r] : net->cpu_p2p_s[r]) * 1e9);
			if (j->scheme == ITR_PP)
				printf(", %.1f", net->cpu_msg_s[r] * 1e6);
			printf(", %.4f s", j->scheme == ITR_DP ? res->dp.contention_s[r]
							       : res->pp.contention_s[r]);
		}
		printf("\n");
	}
	if (j->ndev > 1 && j->scheme == ITR_DP && net->cpu_cvt_s[0] > 0) {
		printf("   bf16 conversions, on each bucket's path%s: per rank CPU ns per element "
		       "per conversion:",
		       j->no_contention ? "" : " (and in the contention where hidden)");
		for (int r = 0; r < j->ndev; r++)
			printf("%s %.3f", r ? ";" : "", net->cpu_cvt_s[r] * 1e9);
		for (int r = 0; r < j->ndev; r++)
			if (!trn_dev_on_host(&j->dev[r]))
				printf("; rank %d (%s) converts whole buckets on the device", r,
				       j->dev[r].kind);
		printf("\n");
	}
	for (int r = 0; r < j->ndev; r++)
		if (res->rank[r].dev_update)
			printf("   optimizer: rank %d (%s) keeps its fp32 master on the device and "
			       "updates it there\n",
			       r, j->dev[r].kind);
	printf("   %-4s %-22s %-5s %8s %10s %10s %10s %16s %8s\n", "rank", "device", "kind",
	       j->scheme == ITR_DP ? "samples" : "layers", "compute s", "exp.comm s", "update s",
	       "emu late calls/s", "hidden s");
	for (int r = 0; r < j->ndev; r++) {
		const struct itr_rank_result *rr = &res->rank[r];
		char what[32], name[48];

		if (j->scheme == ITR_DP)
			snprintf(what, sizeof(what), "%d", rr->samples);
		else
			snprintf(what, sizeof(what), "%d-%d", rr->first,
				 rr->first + rr->nlayers - 1);
		snprintf(name, sizeof(name), "%s%s", j->dev[r].name,
			 j->dev[r].emulated ? " (emulated)" : "");
		printf("   %-4d %-22s %-5s %8s %10.4f %10.4f %10.4f %9.1f%% %5.3f %8.4f\n", r, name,
		       j->dev[r].emulated ? "host" : j->dev[r].kind, what, rr->compute_s,
		       rr->exposed_s, rr->update_s,
		       rr->emu_calls ? 100.0 * rr->emu_overruns / rr->emu_calls : 0.0,
		       rr->emu_overrun_s / j->steps, rr->emu_hidden_s / j->steps);
	}
	printf("   per step: compute = matmuls incl. emulation padding; exp.comm = compute "
	       "thread waiting for the communication thread; emu late = share of calls and "
	       "seconds beyond the stated speed; hidden = host work and late wake-ups the "
	       "emulated device's stream overlapped\n");
	if (j->scheme == ITR_PP && j->ndev > 1) {
		for (int r = 0; r < j->ndev; r++) {
			const struct itr_rank_result *rr = &res->rank[r];

			printf("   stage %d waits per step: activations %.4f s, gradients %.4f s, "
			       "send buffers %.4f s; ",
			       r, rr->wait_act_s, rr->wait_grad_s, rr->wait_send_s);
			if (rr->comm_inline)
				printf("inline (no communication thread): its CPU %.4f s\n",
				       rr->comm_cpu_s);
			else
				printf("thread hand-offs within them %.4f s\n", rr->handoff_s);
		}
		printf("   predicted: stage compute+sends");
		for (int r = 0; r < j->ndev; r++)
			printf(" %.5f", res->pp.stage_s[r]);
		printf(" s per micro-batch; %d micro-batches; schedule %.4f s (closed form "
		       "%.4f s)\n",
		       res->pp.micro_batches, res->pp.step_s, res->pp.est_s);
	}
	if (res->mbc.mb > 0) {
		printf("   micro-batch %d (--pp-micro-batch auto), of each size's predicted step:",
		       res->mbc.mb);
		for (int i = 0; i < res->mbc.ntries; i++) {
			const struct trn_pp_mb_try *t = &res->mbc.tries[i];

			if (t->ret == 0)
				printf(" %d: %.4f s", t->mb, t->step_s);
			else
				printf(" %d: does not fit", t->mb);
		}
		printf("\n");
	}
	if (res->rank[0].replans > 0) {
		const struct itr_rank_result *r0 = &res->rank[0];
		int shown = r0->replans < 8 ? r0->replans : 8;

		printf("   re-planned %d time(s) (--replan %.0f%%), after step", r0->replans,
		       j->replan * 100);
		for (int i = 0; i < shown; i++)
			printf("%s %d", i ? "," : "", r0->replan_step[i]);
		printf("%s; the split above is the last one, the prediction below that "
		       "split's\n",
		       r0->replans > shown ? ", ..." : "");
	}
	if (j->scheme == ITR_DP && j->ndev > 1) {
		printf("   backward layer by layer over the last micro-batches (the all-reduce "
		       "hides behind them):");
		for (int r = 0; r < j->ndev; r++)
			printf(" %d", res->dp.tail[r]);
		printf(" per rank; predicted exposed all-reduce %.4f s\n", res->dp.comm_s);
		printf("   optimizer step: %s, predicted", trn_optim_name(j->model.optim));
		for (int r = 0; r < j->ndev; r++)
			printf(" %.4f", res->dp.update_s[r]);
		printf(" s per rank; gradients reduced in %s", trn_grad_name(j->model.grad));
		if (j->model.optim == TRN_OPTIM_SHARDED)
			printf(", weights gathered in %s", trn_grad_name(j->model.param));
		printf("\n");
	}
	mem_line(j, res);
	printf("   step: median %.4f s, mean %.4f s over %d steps (after %d warm-up); "
	       "throughput %.2f samples/s\n",
	       jo->step_med, jo->step_mean, j->steps, j->warmup, jo->tput);
	printf("   predicted step %.4f s, measured %.4f s: error %+.1f%%\n", jo->pred, jo->step_med,
	       jo->err_pct);
	if (res->rank[0].repredicted)
		printf("   (that from the profiles, for the split above; the last re-plan's, "
		       "from measured speeds: %.4f s, error %+.1f%%)\n",
		       jo->pred_last, jo->err_last_pct);
	if (jo->pred_ref > 0) {
		if (j->refine > 1)
			printf("   refined after warm-up steps %d-%d", j->warmup - j->refine,
			       j->warmup - 1);
		else
			printf("   refined after warm-up step %d", j->warmup - 1);
		printf(" from the ranks' measured GFLOP/s (");
		for (int r = 0; r < j->ndev; r++)
			printf("%s%.2f, profile %.2f%s", r ? "; " : "", res->rank[r].gflops_refined,
			       j->dev[r].gflops, j->dev[r].emulated ? ", emulated: kept" : "");
		printf("): predicted %.4f s, error %+.1f%%\n", jo->pred_ref, jo->err_ref_pct);
		if (jo->roll)
			printf("   each timed step predicted from the %d step%s before it: median "
			       "error %+.1f%%\n",
			       j->refine, j->refine > 1 ? "s" : "", jo->err_roll_pct);
	}
	printf("   CPU: %.2f cores busy on average (all ranks, both threads; host has %ld)\n",
	       jo->cores, ncpu);
	if (jo->emu_overrun)
		printf("   WARNING: emulated compute overran its stated speed by more than 5%% "
		       "(emu late): these results are CPU-bound and measure this host, not the "
		       "profiles\n");
	if (j->scheme == ITR_DP)
		printf("   weights identical on all %d ranks: %s (fnv1a %016llx, sum %.6g, "
		       "loss %.6g, first step's %.6g)\n",
		       j->ndev, res->weights_identical ? "yes" : "NO",
		       (unsigned long long)res->rank[0].weight_hash, res->rank[0].weight_sum,
		       step_loss(jo, j->warmup + j->steps - 1), step_loss(jo, 0));
	else {
		printf("   pipeline messages intact (checksums sent = received): %s; loss %.6g, "
		       "first step's %.6g\n",
		       jo->data_ok ? "yes" : "NO", step_loss(jo, j->warmup + j->steps - 1),
		       step_loss(jo, 0));
		/* the same split and data give the same weights under either
		 * schedule (gradients are summed in the same order) */
		printf("   weights (fnv1a per stage):");
		for (int r = 0; r < j->ndev; r++)
			printf(" %016llx", (unsigned long long)res->rank[r].weight_hash);
		printf("\n");
	}
}

static json_t *real_or_null(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}

/* n figures of a run each, in turn (NAN: null) */
static json_t *float_runs(const float *v, int n)
{
	json_t *a = json_array();

	for (int r = 0; r < n; r++)
		json_array_append_new(a, real_or_null(round(v[r] * 1e3) / 1e3));
	return a;
}

static json_t *job_json(const struct job_out *jo)
{
	const struct itr_job *j = &jo->job;
	const struct itr_result *res = jo->res;
	json_t *o = json_object(), *ranks = json_array();
	char devs[512];

	itr_dev_list(j, devs, sizeof(devs));
	json_object_set_new(o, "job", json_string(j->label));
	json_object_set_new(o, "devices", json_string(devs));
	json_object_set_new(o, "scheme", json_string(j->scheme == ITR_DP ? "dp" : "pp"));
	json_object_set_new(o, "split", json_string(itr_split_name(j->split)));
	if (j->together > 0)
		json_object_set_new(o, "together", json_true());
	json_object_set_new(o, "ok", json_boolean(jo->status == 0 && res->ok));
	if (jo->status != 0 || !res->ok) {
		json_decref(ranks);
		return o;
	}
	json_object_set_new(o, "step_median_s", json_real(jo->step_med));
	json_object_set_new(o, "step_mean_s", json_real(jo->step_mean));
	json_object_set_new(o, "samples_per_s", json_real(jo->tput));
	if (jo->nruns > 1) {
		json_t *v = json_array(); /* each run's, in turn */

		/* this is the run of median throughput */
		json_object_set_new(o, "runs", json_integer(jo->nruns));
		json_object_set_new(o, "samples_per_s_min", json_real(jo->tput_lo));
		json_object_set_new(o, "samples_per_s_max", json_real(jo->tput_hi));
		for (int r = 0; r < jo->nruns; r++)
			json_array_append_new(v, jo->tput_runs[r] > 0 ? json_real(jo->tput_runs[r])
								      : json_null());
		json_object_set_new(o, "samples_per_s_runs", v);
		v = json_array(); /* where each run came in its repeat (0: first) */
		for (int r = 0; r < jo->nruns; r++)
			json_array_append_new(v, json_integer(jo->place_runs[r]));
		json_object_set_new(o, "place_runs", v);
	}
	json_object_set_new(o, "predicted_step_s", json_real(jo->pred));
	json_object_set_new(o, "error_pct", json_real(jo->err_pct));
	if (jo->res->rank[0].repredicted) {
		/* predicted_step_s: the profiles' for the split that ran last;
		 * this: the last re-plan's, from the measured speeds */
		json_object_set_new(o, "replanned_step_s", json_real(jo->pred_last));
		json_object_set_new(o, "replanned_error_pct", json_real(jo->err_last_pct));
	}
	if (jo->pred_ref > 0) {
		/* predicted after the warm-up from the speeds of its last refine
		 * steps; compared with the same timed steps */
		json_object_set_new(o, "refine_steps", json_integer(j->refine));
		json_object_set_new(o, "refined_step_s", json_real(jo->pred_ref));
		json_object_set_new(o, "refined_error_pct", json_real(jo->err_ref_pct));
		if (jo->roll) {
			/* timed step k predicted from the refine steps before it */
			json_t *a = json_array();

			for (int k = j->warmup; k < j->warmup + j->steps; k++)
				json_array_append_new(
					a, json_real(round(predict_step(jo, k) * 1e4) / 1e4));
			json_object_set_new(o, "step_predicted_s", a);
			json_object_set_new(o, "rolling_error_pct", json_real(jo->err_roll_pct));
		}
		if (jo->nruns > 1) {
			/* each run's, in turn (null: none) */
			json_object_set_new(o, "refined_error_pct_runs",
					    float_runs(jo->ref_runs, jo->nruns));
			json_object_set_new(o, "rolling_error_pct_runs",
					    float_runs(jo->roll_runs, jo->nruns));
		}
	}
	json_object_set_new(o, "cpu_cores_busy", json_real(jo->cores));
	json_object_set_new(o, "emulation_overran", json_boolean(jo->emu_overrun));
	json_object_set_new(o, "steps", json_integer(j->steps));
	{
		/* every step's loss before its update, warm-up included */
		json_t *a = json_array();

		for (int k = 0; k < j->warmup + j->steps; k++)
			json_array_append_new(a, json_real(step_loss(jo, k)));
		json_object_set_new(o, "step_loss", a);
	}
	{
		/* every step's time, warm-up included: its last rank's end
		 * after the previous step's last */
		json_t *a = json_array();

		for (int k = 0; k < j->warmup + j->steps; k++) {
			uint64_t e0 = 0, e1 = 0;

			for (int r = 0; r < j->ndev; r++) {
				e0 = res->rank[r].step_end_ns[k] > e0 ? res->rank[r].step_end_ns[k]
								      : e0;
				e1 = res->rank[r].step_end_ns[k + 1] > e1
					     ? res->rank[r].step_end_ns[k + 1]
					     : e1;
			}
			json_array_append_new(a, json_real(round((double)(e1 - e0) * 1e-5) / 1e4));
		}
		json_object_set_new(o, "step_times_s", a);
	}
	json_object_set_new(o, "warmup", json_integer(j->warmup));
	if (j->together > 0 && jo->to > jo->from) {
		/* the timed steps its figures count: [first, first + n) */
		json_object_set_new(o, "counted_first", json_integer(jo->from - j->warmup));
		json_object_set_new(o, "counted_steps", json_integer(jo->to - jo->from));
	}
	json_object_set_new(o, "net",
			    json_pack("{s:f,s:f,s:f,s:f}", "busbw_gbps", res->net.busbw_gbps,
				      "p2p_gbps", res->net.p2p_gbps, "lat_s", res->net.lat_s,
				      "overlap", res->net.overlap));
	if (j->scheme == ITR_DP) {
		json_object_set_new(o, "weights_identical", json_boolean(res->weights_identical));
		json_object_set_new(o, "predicted_comm_s", json_real(res->dp.comm_s));
	} else {
		json_object_set_new(o, "pipeline_data_ok", json_boolean(jo->data_ok));
		json_object_set_new(o, "micro_batches", json_integer(res->pp.micro_batches));
		json_object_set_new(o, "micro_batch", json_integer(j->model.micro_batch));
		if (res->mbc.mb > 0) {
			json_t *a = json_array();

			for (int i = 0; i < res->mbc.ntries; i++)
				json_array_append_new(a, json_pack("{s:i, s:b, s:f}", "micro_batch",
								   res->mbc.tries[i].mb, "fits",
								   res->mbc.tries[i].ret == 0,
								   "step_s",
								   res->mbc.tries[i].step_s));
			json_object_set_new(o, "micro_batch_tries", a);
		}
		json_object_set_new(o, "pp_schedule", json_string(trn_pp_sched_name(j->sched)));
	}
	for (int r = 0; r < j->ndev; r++) {
		const struct itr_rank_result *rr = &res->rank[r];
		json_t *x = json_object();
		char hash[24];

		json_object_set_new(x, "rank", json_integer(r));
		json_object_set_new(x, "device", json_string(j->dev[r].name));
		json_object_set_new(x, "kind", json_string(j->dev[r].kind));
		json_object_set_new(x, "emulated", json_boolean(j->dev[r].emulated));
		if (j->scheme == ITR_DP) {
			json_object_set_new(x, "samples", json_integer(rr->samples));
			json_object_set_new(x, "tail_micro_batches", json_integer(res->dp.tail[r]));
			json_object_set_new(x, "predicted_compute_s",
					    json_real(res->dp.compute_s[r]));
		} else {
			json_object_set_new(x, "first_layer", json_integer(rr->first));
			json_object_set_new(x, "layers", json_integer(rr->nlayers));
			json_object_set_new(x, "predicted_stage_s", json_real(res->pp.stage_s[r]));
			json_object_set_new(x, "wait_act_s", json_real(rr->wait_act_s));
			json_object_set_new(x, "wait_grad_s", json_real(rr->wait_grad_s));
			json_object_set_new(x, "wait_send_s", json_real(rr->wait_send_s));
			json_object_set_new(x, "handoff_s", json_real(rr->handoff_s));
			json_object_set_new(x, "comm_inline", json_boolean(rr->comm_inline));
			json_object_set_new(x, "comm_cpu_s", json_real(rr->comm_cpu_s));
		}
		json_object_set_new(x, "compute_s", json_real(rr->compute_s));
		json_object_set_new(x, "cores", json_real(res->net.cores[r]));
		/* the calibrated CPU costs the predictor priced (0: not) */
		if (j->scheme == ITR_DP) {
			json_object_set_new(x, "cpu_ar_s", json_real(res->net.cpu_ar_s[r]));
			json_object_set_new(x, "cpu_cvt_s", json_real(res->net.cpu_cvt_s[r]));
			json_object_set_new(x, "cpu_exchange_s", json_real(res->net.cpu_ex_s[r]));
		} else if (!j->no_contention) {
			json_object_set_new(x, "cpu_p2p_s", json_real(res->net.cpu_p2p_s[r]));
			json_object_set_new(x, "cpu_msg_s", json_real(res->net.cpu_msg_s[r]));
		}
		json_object_set_new(x, "predicted_contention_s",
				    json_real(j->scheme == ITR_DP ? res->dp.contention_s[r]
								  : res->pp.contention_s[r]));
		json_object_set_new(x, "gflops_measured", json_real(rr->gflops));
		json_object_set_new(x, "gflops_steps", json_real(rr->gflops_steps));
		json_object_set_new(x, "gflops_own", json_real(rr->gflops_own));
		if (rr->gflops_cpu > 0)
			json_object_set_new(x, "gflops_cpu", json_real(rr->gflops_cpu));
		if (jo->nruns > 1) {
			json_t *v = json_array(); /* each run's, in turn */

			for (int k = 0; k < jo->nruns; k++)
				json_array_append_new(v, jo->own_runs[r][k] > 0
								 ? json_real(jo->own_runs[r][k])
								 : json_null());
			json_object_set_new(x, "gflops_own_runs", v);
			v = json_array();
			for (int k = 0; k < jo->nruns; k++)
				json_array_append_new(v, jo->cpu_runs[r][k] > 0
								 ? json_real(jo->cpu_runs[r][k])
								 : json_null());
			json_object_set_new(x, "gflops_cpu_runs", v);
		}
		{
			/* every step's, warm-up included (ITR_MAX_STEPS bounds them) */
			json_t *a = json_array();

			for (int k = 0; k < j->warmup + j->steps; k++)
				json_array_append_new(
					a, json_real(round(rr->step_gflops[k] * 100) / 100));
			json_object_set_new(x, "step_gflops", a);
		}
		if (j->refine > 0)
			json_object_set_new(x, "gflops_refined", json_real(rr->gflops_refined));
		json_object_set_new(x, "replans", json_integer(rr->replans));
		json_object_set_new(x, "exposed_comm_s", json_real(rr->exposed_s));
		json_object_set_new(x, "update_s", json_real(rr->update_s));
		json_object_set_new(x, "cpu_s", json_real(rr->cpu_s));
		/* the compute thread's CPU and run-queue wait (schedstat; null:
		 * not known, the kernel keeps no scheduler statistics) */
		json_object_set_new(x, "thread_cpu_s", json_real(rr->thread_cpu_s));
		json_object_set_new(x, "runq_wait_s",
				    rr->runq_wait_s >= 0 ? json_real(rr->runq_wait_s)
							 : json_null());
		json_object_set_new(x, "wall_s", json_real(rr->wall_s));
		json_object_set_new(x, "emu_calls", json_integer((json_int_t)rr->emu_calls));
		json_object_set_new(x, "emu_overruns", json_integer((json_int_t)rr->emu_overruns));
		json_object_set_new(x, "emu_overrun_s", json_real(rr->emu_overrun_s));
		json_object_set_new(x, "emu_hidden_s", json_real(rr->emu_hidden_s));
		json_object_set_new(x, "loss", json_real(rr->step_loss[j->warmup + j->steps - 1]));
		/* the training state's and the transport's staging's bytes:
		 * allocated on the device and the host (the staging alone),
		 * what of them counts against the capacity, predicted */
		json_object_set_new(x, "mem_device_bytes", json_real(rr->mem_dev));
		json_object_set_new(x, "mem_host_bytes", json_real(rr->mem_host));
		json_object_set_new(x, "mem_transport_device_bytes", json_real(rr->mem_tp_dev));
		json_object_set_new(x, "mem_transport_host_bytes", json_real(rr->mem_tp_host));
		json_object_set_new(x, "mem_need_bytes", json_real(mem_measured(j, res, r)));
		json_object_set_new(x, "mem_predicted_bytes", json_real(mem_predicted(j, res, r)));
		json_object_set_new(x, "mem_share",
				    json_integer(j->mem_share[r] > 1 ? j->mem_share[r] : 1));
		json_object_set_new(x, "mem_capacity_bytes",
				    j->dev[r].mem_gib > 0 ? json_real(trn_mem_cap(&j->dev[r]))
							  : json_null());
		snprintf(hash, sizeof(hash), "%016llx", (unsigned long long)rr->weight_hash);
		json_object_set_new(x, "weight_hash", json_string(hash));
		if (rr->stage_name[0] != '\0')
			json_object_set_new(x, "allreduce_staging", json_string(rr->stage_name));
		json_array_append_new(ranks, x);
	}
	json_object_set_new(o, "ranks", ranks);
	return o;
}

void itr_print_json(const struct job_out *jobs, int njobs, const struct trn_model *m,
		    enum itr_scheme scheme, const struct itr_eff *eff)
{
	json_t *root = json_object(), *arr = json_array();

	for (int i = 0; i < njobs; i++)
		json_array_append_new(arr, job_json(&jobs[i]));
	json_object_set_new(root, "tool", json_string("ice-train"));
	json_object_set_new(root, "model", json_string(m->name));
	json_object_set_new(root, "global_batch", json_integer(m->global_batch));
	json_object_set_new(root, "micro_batch", json_integer(m->micro_batch));
	json_object_set_new(root, "scheme", json_string(scheme == ITR_DP ? "dp" : "pp"));
	if (scheme == ITR_DP) {
		json_object_set_new(root, "optimizer", json_string(trn_optim_name(m->optim)));
		json_object_set_new(root, "grad_dtype", json_string(trn_grad_name(m->grad)));
		json_object_set_new(root, "param_dtype", json_string(trn_grad_name(m->param)));
	}
	json_object_set_new(root, "host_cpus", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
	json_object_set_new(root, "jobs", arr);
	if (eff != NULL) {
		/* mixed samples/s over the sum of the groups' alone */
		json_object_set_new(root, "alone_samples_per_s", json_real(eff->alone));
		json_object_set_new(root, "efficiency_plan", real_or_null(eff->plan));
		json_object_set_new(root, "efficiency_even", real_or_null(eff->even));
	}
	if (eff != NULL && !isnan(eff->together_alone)) {
		/* over the sum of the groups alone at the same time (--together) */
		json_object_set_new(root, "together_samples_per_s", json_real(eff->together_alone));
		json_object_set_new(root, "efficiency_plan_together",
				    real_or_null(eff->together_plan));
		json_object_set_new(root, "efficiency_even_together",
				    real_or_null(eff->together_even));
	}
	if (eff != NULL && eff->nruns > 0) {
		static const char *const key[4] = {"efficiency_plan_runs", "efficiency_even_runs",
						   "efficiency_plan_together_runs",
						   "efficiency_even_together_runs"};

		for (int k = 0; k < (isnan(eff->together_alone) ? 2 : 4); k++) {
			json_t *v = json_array();

			for (int r = 0; r < eff->nruns; r++)
				json_array_append_new(v, real_or_null(eff->per_run[k][r]));
			json_object_set_new(root, key[k], v);
		}
	}
	json_dumpf(root, stdout, JSON_INDENT(2));
	printf("\n");
	json_decref(root);
}

/* Issue 8's goals for this run (reported, not asserted): efficiency of the
 * planner's split, and the predictor's error on every job. */
void itr_print_targets(const struct job_out *jobs, int njobs, enum itr_scheme scheme,
		       double eff_plan)
{
	double want = scheme == ITR_DP ? 0.97 : 0.998, worst = 0, worst_ref = 0, worst_roll = 0;
	bool emulated = false, late = false, refined = false, rolled = false;

	for (int i = 0; i < njobs; i++) {
		if (jobs[i].res->ok && fabs(jobs[i].err_pct) > fabs(worst))
			worst = jobs[i].err_pct;
		if (jobs[i].res->ok && jobs[i].pred_ref > 0) {
			refined = true;
			if (fabs(jobs[i].err_ref_pct) > fabs(worst_ref))
				worst_ref = jobs[i].err_ref_pct;
			rolled |= jobs[i].roll;
			if (jobs[i].roll && fabs(jobs[i].err_roll_pct) > fabs(worst_roll))
				worst_roll = jobs[i].err_roll_pct;
		}
		for (int d = 0; d < jobs[i].job.ndev; d++)
			emulated |= jobs[i].job.dev[d].emulated;
		late |= jobs[i].emu_overrun;
	}
	printf("   [%s] mixed-training efficiency, planner's split >= %.1f%%: %.1f%%\n",
	       eff_plan >= want ? "reached" : "MISSED ", want * 100, eff_plan * 100);
	printf("   [%s] predictor error < 5%% of measured step time, every job: worst %+.1f%%\n",
	       fabs(worst) < 5 ? "reached" : "MISSED ", worst);
	if (refined)
		printf("   [%s] the same, predicted after the warm-up from its measured speeds "
		       "(--refine): worst %+.1f%%\n",
		       fabs(worst_ref) < 5 ? "reached" : "MISSED ", worst_ref);
	if (rolled)
		printf("   [%s] the same, each timed step predicted from the steps before it: "
		       "worst median %+.1f%%\n",
		       fabs(worst_roll) < 5 ? "reached" : "MISSED ", worst_roll);
	if (emulated)
		printf("   (emulated devices: speeds are the profiles'%s)\n",
		       late ? "; some job was CPU-bound, see its WARNING" : "");
}

/* A rank that computes far from its profile: warned once per device (the
 * plan assumed the profile). */
#define ITR_PROFILE_OFF 0.25
void itr_check_profiles(const struct job_out *jo, const char *path)
{
	static char warned[TRN_MAX_DEVICES][TRN_NAME_MAX];
	static int nwarned;

	if (!jo->res->ok)
		return;
	for (int r = 0; r < jo->job.ndev; r++) {
		const struct trn_profile *p = &jo->job.dev[r];
		/* the device's own speed over the steps (trn_speed_own), what
		 * --save-profiles writes: a rank under a CPU quota runs a short
		 * matmul at the core's full speed and is throttled between
		 * them, so the matmuls' own speed (gflops) is not its device's */
		const struct itr_rank_result *rr = &jo->res->rank[r];
		double g = rr->gflops_own > 0	  ? rr->gflops_own
			   : rr->gflops_steps > 0 ? rr->gflops_steps
						  : rr->gflops;
		bool seen = false;

		if (p->emulated || !(g > 0) || fabs(g / p->gflops - 1) <= ITR_PROFILE_OFF)
			continue;
		for (int i = 0; i < nwarned; i++)
			seen |= strcmp(warned[i], p->name) == 0;
		if (seen || nwarned == TRN_MAX_DEVICES)
			continue;
		snprintf(warned[nwarned++], TRN_NAME_MAX, "%s", p->name);
		fprintf(stderr,
			"ice-train: warning: device '%s' (rank %d of job '%s') computed "
			"%.2f GFLOP/s in its steps, its profile (%s) says "
			"%.2f GFLOP/s (%+.0f%%, more than %.0f%% off): the split was planned "
			"for the profile; measure the device again (ice-devprof)\n",
			p->name, jo->job.grank[r], jo->job.label, g, path, p->gflops,
			(g / p->gflops - 1) * 100, ITR_PROFILE_OFF * 100);
	}
}
