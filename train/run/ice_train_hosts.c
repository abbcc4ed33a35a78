// SPDX-License-Identifier: Apache-2.0
/*
 * ice-train --rank R: one rank per process, on any host, as a real cluster
 * starts a job (ice-bench's --rank mode, through tp_opts).
 *
 * The N processes of a run form a control group first: a communicator
 * without an engine (tp_comm_cfg.oob_only), that is rank 0's TCP rendezvous
 * at --bootstrap and its connections, kept for the whole run. Through it:
 *
 *   - rank 0 sends every rank the run: the jobs in order (device groups
 *     alone, then the mixed job with the planned and the even split, each
 *     --repeat times) with the profiles and the model they use, so every
 *     rank plans from the same inputs and the weights stay identical even
 *     when the hosts' files differ (a rank whose own --devices names
 *     another device for it is warned);
 *   - per job, the job's first rank listens on a new port of its --addr and
 *     the address goes to all (a maximum over the group); the job's ranks
 *     build the job's communicator on it and train; the ranks outside the
 *     job wait in the next step, the gather of the results to rank 0, which
 *     is also the barrier that ends the job. A set of jobs with no rank in
 *     common (--together) runs the same way at the same time: one maximum
 *     per job, each rank trains in its own job, one gather for the set;
 *   - rank 0 puts the results together and prints them as the launcher of
 *     the local mode does.
 *
 * Clocks of different hosts cannot be compared, so each rank's step ends
 * are sent relative to its own start of training, which follows a barrier
 * of the job's ranks (the barrier's release skew, tens of microseconds on
 * a LAN, is the error of the step times).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ice_log.h"
#include "ice_time.h"
#include "ice_train.h"
#include "tp_launch.h"

/* how long the ranks outside a job wait for it to end (control group) */
#define ITR_CTL_WAIT_NS (3600 * ICE_NSEC_PER_SEC)

struct itr_ctl {
	struct tp_comm *c;
	int rank, nranks;
	struct tp_opts *tp;
};

/* What each rank sends rank 0 after a job. */
struct itr_report {
	int32_t job;   /* which job of the set */
	int32_t jrank; /* rank in it, -1: in none */
	int32_t status;
	bool ok;
	bool weights_identical;	   /* job rank 0's */
	struct trn_net net;	   /* job rank 0's */
	struct trn_dp_plan dp;	   /* job rank 0's */
	struct trn_pp_plan pp;	   /* job rank 0's */
	struct itr_pp_mb mbc;	   /* job rank 0's */
	struct itr_rank_result rr; /* this rank's */
};

uint64_t itr_host_id(void)
{
	static const char *const ids[] = {"/etc/machine-id", "/proc/sys/kernel/random/boot_id"};
	uint64_t h = 0xcbf29ce484222325ull;
	char buf[256] = "";
	size_t len;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]) && buf[0] == '\0'; i++) {
		FILE *f = fopen(ids[i], "r");

		if (f != NULL) {
			if (fgets(buf, sizeof(buf), f) == NULL)
				buf[0] = '\0';
			fclose(f);
		}
	}
	len = strlen(buf);
	if (gethostname(buf + len, sizeof(buf) - len - 1) < 0)
		buf[len] = '\0';
	buf[sizeof(buf) - 1] = '\0';
	for (const char *p = buf; *p != '\0'; p++) {
		h ^= (unsigned char)*p;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* A rank on d computes in the host's memory, which ice-devprof measured
 * for its profile (an emulated device stands for a device of its own). */
static bool host_memory(const struct trn_profile *d)
{
	return !d->emulated && strcmp(d->kind, "host") == 0;
}

/* Jobs x and i run at the same time: the same job, or one --together set. */
static bool concurrent(const struct itr_job *jobs, int x, int i)
{
	return x == i || (jobs[i].together > 0 && jobs[x].together == jobs[i].together);
}

void itr_mem_share(struct itr_job *jobs, int n, const uint64_t *host)
{
	int k[ITR_MAX_JOBS][TRN_MAX_DEVICES] = {{0}};

	for (int i = 0; i < n && i < ITR_MAX_JOBS; i++)
		for (int r = 0; r < jobs[i].ndev; r++)
			for (int x = 0; x < n && host_memory(&jobs[i].dev[r]); x++)
				for (int q = 0; q < jobs[x].ndev && concurrent(jobs, x, i); q++)
					k[i][r] += host_memory(&jobs[x].dev[q]) &&
						   (host == NULL || host[jobs[x].grank[q]] ==
									    host[jobs[i].grank[r]]);
	for (int i = 0; i < n && i < ITR_MAX_JOBS; i++)
		for (int r = 0; r < jobs[i].ndev; r++) {
			jobs[i].mem_share[r] = k[i][r] > 1 ? k[i][r] : 1;
			if (k[i][r] > 1 && jobs[i].dev[r].mem_gib > 0)
				jobs[i].dev[r].mem_gib /= k[i][r];
		}
}

struct itr_ctl *itr_ctl_join(struct tp_opts *tp, int nranks)
{
	struct itr_ctl *x = calloc(1, sizeof(*x));
	struct tp_comm_cfg cc;

	if (x == NULL)
		return NULL;
	if (tp->bootstrap[0] == '\0' || tp->addr[0] == '\0') {
		fprintf(stderr, "ice-train: --rank needs --bootstrap IP:PORT and --addr IP\n");
		goto err;
	}
	if (tp->rank >= nranks) {
		fprintf(stderr, "ice-train: --rank %d: expected 0..%d (one rank per device)\n",
			tp->rank, nranks - 1);
		goto err;
	}
	if (tp_launch_parse_addr("ice-train", "--addr", tp->addr, &tp->cc.eng.addr) < 0)
		goto err;
	cc = tp->cc;
	snprintf(cc.bootstrap, sizeof(cc.bootstrap), "%s", tp->bootstrap);
	cc.rank = tp->rank;
	cc.nranks = nranks;
	cc.listen_fd = -1;
	cc.oob_only = true;
	cc.oob_timeout_ns = ITR_CTL_WAIT_NS;
	x->c = tp_comm_init(&cc);
	if (x->c == NULL) {
		int err = errno;

		if (tp->rank == 0)
			fprintf(stderr,
				"ice-train: rank 0: the other %d rank(s) did not all join at %s "
				"within %.0f s (--bootstrap-timeout): %s\n",
				nranks - 1, tp->bootstrap,
				(double)cc.bootstrap_timeout_ns / ICE_NSEC_PER_SEC, strerror(err));
		else
			fprintf(stderr,
				"ice-train: rank %d: cannot join rank 0 at %s within %.0f s "
				"(--bootstrap-timeout): %s\n",
				tp->rank, tp->bootstrap,
				(double)cc.bootstrap_timeout_ns / ICE_NSEC_PER_SEC, strerror(err));
		goto err;
	}
	x->rank = tp->rank;
	x->nranks = nranks;
	x->tp = tp;
	return x;
err:
	free(x);
	return NULL;
}

void itr_ctl_free(struct itr_ctl *x)
{
	if (x == NULL)
		return;
	tp_comm_free(x->c);
	free(x);
}

int itr_ctl_jobs(struct itr_ctl *x, struct itr_job *jobs, int *njobs, int max, int *repeat,
		 const struct itr_job *own)
{
	int32_t hdr[2] = {*njobs, *repeat};
	uint64_t id = itr_host_id(), host[TRN_MAX_DEVICES];
	int ret = tp_comm_oob_gather(x->c, &id, sizeof(id), host);

	/* rank 0 knows which ranks share a host: their memory too */
	if (ret == 0 && x->rank == 0)
		itr_mem_share(jobs, *njobs, host);
	if (ret == 0)
		ret = tp_comm_oob_bcast(x->c, hdr, sizeof(hdr));
	if (ret < 0)
		return ret;
	if (hdr[0] < 1 || hdr[0] > max || hdr[1] < 1) {
		fprintf(stderr, "ice-train: rank %d: rank 0 sent %d jobs: expected 1..%d\n",
			x->rank, hdr[0], max);
		return -EPROTO;
	}
	*njobs = hdr[0];
	*repeat = hdr[1];
	ret = tp_comm_oob_bcast(x->c, jobs, sizeof(*jobs) * (size_t)*njobs);
	if (ret < 0)
		return ret;
	/* the last job is the mixed one: every rank in it, rank r on dev[r] */
	if (x->rank != 0 && own != NULL &&
	    strcmp(own->dev[x->rank].name, jobs[*njobs - 1].dev[x->rank].name) != 0)
		fprintf(stderr,
			"ice-train: rank %d: warning: this rank's --devices names '%s' for it, "
			"rank 0's names '%s': running rank 0's\n",
			x->rank, own->dev[x->rank].name, jobs[*njobs - 1].dev[x->rank].name);
	return 0;
}

/* The job rank of this process, or -1. */
static int job_rank(const struct itr_job *j, int grank)
{
	for (int r = 0; r < j->ndev; r++)
		if (j->grank[r] == grank)
			return r;
	return -1;
}

int itr_ctl_run(struct itr_ctl *x, const struct itr_job *jobs, int njobs, struct itr_result **res,
		int *status)
{
	struct itr_report *me = calloc(1, sizeof(*me)), *all = NULL;
	struct itr_result *mine = NULL;
	const struct itr_job *job = NULL;
	int jr = -1, lfd = -1, ret = 0;
	char boot[64] = "";
	double leader = -1;
	uint64_t t0 = 0;

	if (me == NULL)
		return -ENOMEM;
	/* the jobs of a set have no rank in common: this rank's is the first
	 * that has it */
	for (int k = 0; k < njobs && jr < 0; k++) {
		jr = job_rank(&jobs[k], x->rank);
		me->job = k;
		job = &jobs[k];
	}
	me->jrank = jr;
	me->status = 0;
	if (jr == 0) {
		lfd = tp_launch_listen(x->tp->cc.eng.addr, boot, sizeof(boot));
		if (lfd < 0) {
			fprintf(stderr,
				"ice-train: rank %d: cannot listen on %s for job '%s': %s\n",
				x->rank, x->tp->addr, job->label, strerror(-lfd));
		} else {
			const char *colon = strrchr(boot, ':');

			leader = (double)ntohl(x->tp->cc.eng.addr.s_addr) * 65536.0 +
				 atoi(colon + 1);
		}
	}
	/* every rank learns each job's rendezvous (<= 0: its first rank failed) */
	for (int k = 0; k < njobs; k++) {
		double v = jr == 0 && me->job == k ? (leader > 0 ? leader : 0) : -1;

		ret = tp_comm_oob_max(x->c, &v);
		if (ret < 0)
			goto out;
		if (jr >= 0 && me->job == k)
			leader = v;
	}
	/* every rank leaves that exchange within a round trip of the others:
	 * the set's common start, on each host's own clock */
	t0 = ice_now_ns();
	if (jr >= 0 && leader <= 0) {
		me->status = 1;
	} else if (jr >= 0) {
		struct tp_comm_cfg cc = x->tp->cc;
		struct itr_rank_arg arg = {.job = job, .cc = &cc};
		struct in_addr a = {.s_addr = htonl((uint32_t)(leader / 65536.0))};
		char ip[INET_ADDRSTRLEN];

		mine = calloc(1, sizeof(*mine));
		if (mine == NULL) {
			ret = -ENOMEM;
			goto out;
		}
		inet_ntop(AF_INET, &a, ip, sizeof(ip));
		snprintf(cc.bootstrap, sizeof(cc.bootstrap), "%s:%u", ip,
			 (unsigned)fmod(leader, 65536.0));
		cc.rank = jr;
		cc.nranks = job->ndev;
		cc.listen_fd = lfd;
		cc.oob_only = false;
		arg.res = mine;
		me->status = itr_rank_main(&arg);
		me->rr = mine->rank[jr];
		if (jr == 0) {
			me->net = mine->net;
			me->dp = mine->dp;
			me->pp = mine->pp;
			me->mbc = mine->mbc;
			me->weights_identical = mine->weights_identical;
		}
		/* this host's clock, from the set's start (a --together set's
		 * jobs are compared on it, itr_together_window) */
		for (int k = job->warmup + job->steps; k >= 0 && me->rr.step_end_ns[0] >= t0; k--)
			me->rr.step_end_ns[k] -= t0;
	}
	if (lfd >= 0)
		close(lfd);
	if (x->rank == 0) {
		all = calloc((size_t)x->nranks, sizeof(*all));
		if (all == NULL) {
			ret = -ENOMEM;
			goto out;
		}
	}
	/* also the barrier that ends the job for the ranks outside it */
	ret = tp_comm_oob_gather(x->c, me, sizeof(*me), all);
	if (ret < 0 || x->rank != 0)
		goto out;
	for (int k = 0; k < njobs; k++)
		status[k] = 0;
	for (int g = 0; g < x->nranks; g++) {
		const struct itr_report *p = &all[g];
		struct itr_result *r;

		if (p->job < 0 || p->job >= njobs || p->jrank < 0 || p->jrank >= jobs[p->job].ndev)
			continue;
		r = res[p->job];
		if (p->status != 0)
			status[p->job] = 1;
		r->rank[p->jrank] = p->rr;
		if (p->jrank == 0) {
			r->net = p->net;
			r->dp = p->dp;
			r->pp = p->pp;
			r->mbc = p->mbc;
			r->weights_identical = p->weights_identical;
		}
	}
out:
	if (ret < 0)
		fprintf(stderr,
			"ice-train: rank %d: the control connection %s (%s) failed "
			"during job '%s'%s: %s\n",
			x->rank, x->rank == 0 ? "from a rank" : "to rank 0", x->tp->bootstrap,
			jobs[0].label, njobs > 1 ? " and the jobs run with it" : "",
			strerror(-ret));
	else if (x->rank != 0)
		*status = me->status;
	free(all);
	free(mine);
	free(me);
	return ret;
}
