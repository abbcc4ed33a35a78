// SPDX-License-Identifier: Apache-2.0
/*
 * agent: the daemon's life — single-instance lock, the three sources, the
 * interval loop (one poll() over the event socket and the metrics server),
 * and a clean exit.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent_internal.h"
#include "agent_nic.h"
#include "agent_plan.h"
#include "ice_ctrl.h"
#include "ice_http.h"
#include "ice_ipc.h"
#include "ice_time.h"

ICE_LOG_SUBSYSTEM(agent_log_sub, "agent");

#define EV_MAX_PER_INTERVAL 16384
#define ANNOUNCED_MAX	    4096
/* A collective the host has not run lately is news for the controller: the
 * interval ends early (at most every EARLY_GAP) instead of at its end. */
#define RECENT_COLLS 64
#define RECENT_NS    (10 * ICE_NSEC_PER_SEC)
#define EARLY_GAP_NS (5 * ICE_NSEC_PER_MSEC)

struct recent_coll {
	uint64_t comm, size, seen_ns; /* size: log2 bucket of the bytes */
	uint32_t op;
};

struct agent {
	struct agent_cfg cfg;
	struct agent_opts o;
	volatile sig_atomic_t stop;
	bool readonly; /* --once beside a running agent: look, do not touch */

	struct ice_ipc_perm perm; /* of the event socket and control block */
	int lock_fd;
	char lock_path[256];
	int sock_fd;
	char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct ice_ctrl *ctrl;
	struct agent_bpf *bpf;
	struct ice_http *metrics;
	struct agent_redis redis;
	struct agent_queue queue;
	struct agent_plan *plan; /* the controller's plans (agent_plan.c) */
	struct agent_nic *nic;	 /* the NIC backend (backend mlx5), else NULL */

	struct agent_sample s[2]; /* cur is s[cur], the last complete one s[!cur] */
	int cur;
	bool have_prev;
	struct agent_qpinfo *qps; /* rebuilt each interval: slots + announced */
	size_t nqps, qpcap;
	struct agent_qpinfo *ann; /* QPs announced by ICE_EV_QP, ring */
	size_t nann, ann_next;
	struct agent_flow *flows;
	size_t nflows, flowcap;
	uint64_t new_flows;

	uint64_t seq, last_ts_ms, next_ns, sample_ns;
	struct recent_coll recent[RECENT_COLLS];
	bool early; /* news: end the interval at sample_ns + EARLY_GAP_NS */
	double cpu_prev_s;
	uint64_t cpu_prev_ns;
	struct agent_self self;
};

/* ---- lock */

static int lock_take(struct agent *a)
{
	struct stat st;
	char buf[32];
	ssize_t n;

	/* by address, not interface name: in the test bed every host namespace
	 * has an eth0, and they share /run and bpffs */
	snprintf(a->lock_path, sizeof(a->lock_path), "%s/agent-%s.lock", a->cfg.run_dir,
		 a->cfg.addr);
	a->lock_fd = open(a->lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (a->lock_fd < 0) {
		int err = errno;

		ice_err(AGENT_SUB, "cannot open lock %s: %s", a->lock_path,
			err == ELOOP ? "it is a symbolic link" : strerror(err));
		return -err;
	}
	if (fstat(a->lock_fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_uid != 0 && st.st_uid != a->perm.uid) || (st.st_mode & 0022)) {
		ice_err(AGENT_SUB,
			"lock %s: expected a regular file of root or uid %u that only its owner "
			"may write",
			a->lock_path, (unsigned)a->perm.uid);
		close(a->lock_fd);
		a->lock_fd = -1;
		return -EPERM;
	}
	if (flock(a->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		int err = errno == EWOULDBLOCK ? EBUSY : errno;

		n = pread(a->lock_fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		if (!a->o.once)
			ice_err(AGENT_SUB, "another ice-agent (pid %d) already runs on NIC %s",
				atoi(buf), a->cfg.nic);
		close(a->lock_fd);
		a->lock_fd = -1;
		return -err;
	}
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(a->lock_fd, 0) < 0 || pwrite(a->lock_fd, buf, (size_t)n, 0) != n)
		ice_warn(AGENT_SUB, "cannot write pid into %s", a->lock_path);
	return 0;
}

/* ---- event socket */

/* Linux queues at most net.unix.max_dgram_qlen datagrams on a unix socket
 * (10 by default; per network namespace, read when the socket is made).
 * Bursts of events need more. In a named namespace of its own (the test
 * bed's hosts) the agent raises it before making its socket; elsewhere it
 * leaves the system setting to the operator and says so. */
#define EV_QLEN_MIN 512

/* Is our network namespace one that `ip netns add` made (a bind mount in
 * /run/netns, like the test bed's hosts)? Only then is the setting ours. */
static bool in_named_netns(void)
{
	char self[64], want[64];
	ssize_t a = readlink("/proc/self/ns/net", self, sizeof(self) - 1);
	DIR *dir;
	struct dirent *de;
	bool found = false;

	if (a <= 0 || (dir = opendir("/run/netns")) == NULL)
		return false;
	self[a] = '\0';
	while (!found && (de = readdir(dir)) != NULL) {
		char path[300];
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/run/netns/%s", de->d_name);
		if (stat(path, &st) == 0) {
			snprintf(want, sizeof(want), "net:[%lu]", (unsigned long)st.st_ino);
			found = strcmp(want, self) == 0;
		}
	}
	closedir(dir);
	return found;
}

static void raise_dgram_qlen(void)
{
	const char *p = "/proc/sys/net/unix/max_dgram_qlen";
	FILE *f = fopen(p, "r+");
	int q = 0;

	if (f == NULL || fscanf(f, "%d", &q) != 1 || q >= EV_QLEN_MIN) {
		if (f != NULL)
			fclose(f);
		return;
	}
	if (!in_named_netns())
		ice_info(AGENT_SUB,
			 "net.unix.max_dgram_qlen is %d: bursts of more than %d events may be "
			 "dropped; 'sysctl -w net.unix.max_dgram_qlen=%d' raises it",
			 q, q * ICE_EVENT_PER_DGRAM, EV_QLEN_MIN);
	else if (rewind(f), fprintf(f, "%d\n", EV_QLEN_MIN) < 0 || fflush(f) != 0)
		ice_warn(AGENT_SUB, "net.unix.max_dgram_qlen is %d and cannot be raised (%s)", q,
			 strerror(errno));
	else
		ice_info(AGENT_SUB,
			 "net.unix.max_dgram_qlen raised from %d to %d in this namespace", q,
			 EV_QLEN_MIN);
	fclose(f);
}

/* A socket at our path is a dead agent's (we hold the lock): removed, but
 * only when it passes the checks (ice_ipc_check), else refused. */
static int sock_stale(struct agent *a)
{
	struct stat st;
	char why[160];

	if (lstat(a->sock_path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (ice_ipc_check(&st, S_IFSOCK, &a->perm, why, sizeof(why)) < 0) {
		ice_err(AGENT_SUB, "event socket %s %s: refused (remove it if no agent runs)",
			a->sock_path, why);
		return -EPERM;
	}
	if (unlink(a->sock_path) < 0 && errno != ENOENT)
		return -errno;
	ice_info(AGENT_SUB, "removed the stale event socket %s", a->sock_path);
	return 0;
}

static int sock_open(struct agent *a)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int rcvbuf = 4 << 20, n, err;
	struct stat st;
	char why[160];
	mode_t um;

	n = snprintf(a->sock_path, sizeof(a->sock_path), "%s/agent-%s.sock", a->cfg.run_dir,
		     a->cfg.addr);
	if (n < 0 || (size_t)n >= sizeof(a->sock_path)) {
		ice_err(AGENT_SUB, "socket path under %s too long", a->cfg.run_dir);
		a->sock_path[0] = '\0';
		return -ENAMETOOLONG;
	}
	raise_dgram_qlen();
	a->sock_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (a->sock_fd < 0)
		return -errno;
	setsockopt(a->sock_fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	memcpy(sa.sun_path, a->sock_path, sizeof(sa.sun_path));
	err = -sock_stale(a);
	if (err != 0)
		goto err_close;
	/* bind(2) is exclusive and does not follow links; born 0600, then given
	 * the group (run_dir passed ice_ipc_check_dir: nobody swaps it between) */
	um = umask(0177);
	n = bind(a->sock_fd, (struct sockaddr *)&sa, sizeof(sa));
	err = errno;
	umask(um);
	if (n < 0) {
		ice_err(AGENT_SUB, "cannot bind %s: %s", a->sock_path, strerror(err));
		goto err_close;
	}
	err = -ice_ipc_set(a->sock_path, &a->perm);
	if (err != 0) {
		ice_err(AGENT_SUB, "event socket %s: cannot give it group '%s' and mode %04o: %s",
			a->sock_path, a->perm.group, (unsigned)a->perm.mode, strerror(err));
		goto err_unlink;
	}
	if (lstat(a->sock_path, &st) < 0 ||
	    ice_ipc_check(&st, S_IFSOCK, &a->perm, why, sizeof(why)) < 0) {
		err = EPERM;
		ice_err(AGENT_SUB, "event socket %s %s after bind", a->sock_path, why);
		goto err_unlink;
	}
	return 0;
err_unlink:
	unlink(a->sock_path);
err_close:
	close(a->sock_fd);
	a->sock_fd = -1;
	a->sock_path[0] = '\0';
	return -err;
}

static void announce_qp(struct agent *a, const struct ice_event *ev)
{
	uint32_t lip = ev->local_ip ? ev->local_ip : a->cfg.addr_be;
	struct agent_qpinfo *qi = NULL;

	for (size_t i = 0; i < a->nann; i++)
		if (a->ann[i].qpn == ev->qpn && a->ann[i].local_ip == lip) {
			qi = &a->ann[i];
			break;
		}
	if (qi == NULL) {
		if (a->nann < ANNOUNCED_MAX) {
			qi = &a->ann[a->nann++];
		} else {
			qi = &a->ann[a->ann_next];
			a->ann_next = (a->ann_next + 1) % ANNOUNCED_MAX;
		}
	}
	*qi = (struct agent_qpinfo){.qpn = ev->qpn,
				    .rqpn = ev->rqpn,
				    .local_ip = lip,
				    .remote_ip = ev->remote_ip,
				    .sport = ev->sport,
				    .src = AGENT_SRC_EV,
				    .pid = ev->pid};
}

static void ev_bad(struct agent *a, ssize_t n, enum agent_ev_verdict v)
{
	if (a->self.ev_bad++ < 10)
		ice_warn(AGENT_SUB, "malformed event dropped (%zd bytes, %s); counting the rest", n,
			 v == AGENT_EV_SIZE	 ? "wrong size"
			 : v == AGENT_EV_MAGIC	 ? "wrong magic"
			 : v == AGENT_EV_VERSION ? "unknown version"
						 : "unknown kind");
}

/* A new communicator, QP, or a collective (communicator, op, size to a
 * power of two, as the controller buckets it) this host has not started in
 * the last RECENT_NS: what the controller plans by. */
static bool is_news(struct agent *a, const struct ice_event *ev)
{
	uint64_t now = ice_now_ns(), size = ev->bytes == 0 ? 0 : 64 - __builtin_clzll(ev->bytes);
	struct recent_coll *oldest = &a->recent[0];

	if (ev->kind == ICE_EV_COMM_INIT || ev->kind == ICE_EV_QP)
		return true;
	if (ev->kind != ICE_EV_COLL_START)
		return false;
	for (int i = 0; i < RECENT_COLLS; i++) {
		struct recent_coll *c = &a->recent[i];

		if (c->seen_ns != 0 && c->comm == ev->comm_id && c->op == ev->op &&
		    c->size == size) {
			bool news = now - c->seen_ns > RECENT_NS;

			c->seen_ns = now;
			return news;
		}
		if (c->seen_ns < oldest->seen_ns)
			oldest = c;
	}
	*oldest = (struct recent_coll){
		.comm = ev->comm_id, .size = size, .seen_ns = now, .op = ev->op};
	return true;
}

static void sock_drain(struct agent *a)
{
	union {
		struct ice_event ev[ICE_EVENT_PER_DGRAM];
		char raw[ICE_EVENT_PER_DGRAM * sizeof(struct ice_event) + 1];
	} u;

	for (int i = 0; i < 4096; i++) {
		ssize_t n = recv(a->sock_fd, &u, sizeof(u), MSG_DONTWAIT | MSG_TRUNC);
		size_t nrec;

		if (n < 0)
			return;
		/* a datagram is 1..ICE_EVENT_PER_DGRAM whole records */
		if (n == 0 || (size_t)n > sizeof(u.ev) || (size_t)n % sizeof(u.ev[0]) != 0) {
			ev_bad(a, n, AGENT_EV_SIZE);
			continue;
		}
		nrec = (size_t)n / sizeof(u.ev[0]);
		for (size_t r = 0; r < nrec; r++) {
			enum agent_ev_verdict v = agent_event_check(&u.ev[r], sizeof(u.ev[r]));

			if (v != AGENT_EV_OK) {
				ev_bad(a, n, v);
				continue;
			}
			a->self.ev_ok++;
			if (u.ev[r].kind == ICE_EV_QP)
				announce_qp(a, &u.ev[r]);
			if (is_news(a, &u.ev[r]))
				a->early = true;
			if (agent_sample_add_event(&a->s[a->cur], &u.ev[r], EV_MAX_PER_INTERVAL) <
			    0)
				a->self.ev_over++;
		}
	}
}

/* ---- the NIC backend's QPs */

/* The device's connected QPs join the table (agent_join merges them with a
 * slot or an announcement of the same QPN): their counters are the NIC's. */
static int nic_qps_read(struct agent *a)
{
	const struct agent_nic_qp *nq;
	size_t n;

	if (a->nic == NULL)
		return 0;
	nq = agent_nic_qps(a->nic, &n);
	if (a->nqps + n > a->qpcap) {
		struct agent_qpinfo *p = realloc(a->qps, (a->nqps + n) * sizeof(*p));

		if (p == NULL)
			return -ENOMEM;
		a->qps = p;
		a->qpcap = a->nqps + n;
	}
	for (size_t i = 0; i < n; i++) {
		const struct agent_nic_qp *q = &nq[i];

		/* RC and UC (ib_qp_type 2, 3) carry the traffic; QP0/QP1 and UD not */
		if (q->lqpn <= 1 || (q->type != 2 && q->type != 3))
			continue;
		a->qps[a->nqps++] = (struct agent_qpinfo){
			.qpn = q->lqpn,
			.rqpn = q->rqpn,
			.local_ip = a->cfg.addr_be,
			.src = AGENT_SRC_NIC,
			.pid = q->pid,
			.tp = {.ce = q->cc_rx_ce,
			       .cnp_tx = q->cc_tx_cnp,
			       .cnp_rx = q->cc_rx_cnp,
			       .nak_tx = q->out_of_sequence,
			       .nak_rx = q->packet_seq_err,
			       .retx = q->local_ack_timeout_err},
		};
	}
	return 0;
}

/* ---- the control block */

static int ctrl_read(struct agent *a)
{
	a->nqps = 0;
	if (a->qps == NULL) {
		a->qpcap = ICE_CTRL_SLOTS + ANNOUNCED_MAX;
		a->qps = calloc(a->qpcap, sizeof(*a->qps));
		if (a->qps == NULL)
			return -ENOMEM;
	}
	for (uint32_t i = 0; a->ctrl != NULL && i < ICE_CTRL_SLOTS; i++) {
		const struct ice_ctrl_qp *q = &a->ctrl->qp[i];
		uint32_t qpn = __atomic_load_n(&q->qpn, __ATOMIC_ACQUIRE);
		struct agent_qpinfo *qi;

		if (qpn == 0)
			continue;
		if (ice_ctrl_reap(a->ctrl, (int)i, qpn)) {
			ice_info(AGENT_SUB, "QP %u: its process %u is gone; slot freed", qpn,
				 q->owner_pid);
			continue;
		}
		qi = &a->qps[a->nqps++];
		*qi = (struct agent_qpinfo){
			.qpn = qpn,
			.rqpn = q->rqpn,
			.local_ip = q->local_ip ? q->local_ip : a->cfg.addr_be,
			.remote_ip = q->remote_ip,
			.sport = q->sport_now,
			.src = AGENT_SRC_CTRL,
			.pid = q->owner_pid,
			.rate_mbps = q->rate_mbps_now,
		};
		qi->tp = (struct agent_ctr){
			.tx_bytes = __atomic_load_n(&q->tx_bytes, __ATOMIC_RELAXED),
			.rx_bytes = __atomic_load_n(&q->rx_bytes, __ATOMIC_RELAXED),
			.tx_pkts = __atomic_load_n(&q->tx_pkts, __ATOMIC_RELAXED),
			.rx_pkts = __atomic_load_n(&q->rx_pkts, __ATOMIC_RELAXED),
			.ce = __atomic_load_n(&q->ce_rx, __ATOMIC_RELAXED),
			.cnp_tx = __atomic_load_n(&q->cnps_tx, __ATOMIC_RELAXED),
			.cnp_rx = __atomic_load_n(&q->cnps_rx, __ATOMIC_RELAXED),
			.retx = __atomic_load_n(&q->retx_pkts, __ATOMIC_RELAXED),
		};
	}
	for (size_t i = 0; i < a->nann; i++)
		a->qps[a->nqps++] = a->ann[i];
	return nic_qps_read(a);
}

static bool ctrl_in_use(const struct ice_ctrl *c)
{
	for (uint32_t i = 0; i < ICE_CTRL_SLOTS; i++)
		if (__atomic_load_n(&c->qp[i].qpn, __ATOMIC_ACQUIRE) != 0)
			return true;
	return false;
}

/* ---- one interval */

static void cpu_account(struct agent *a, uint64_t now_ns)
{
	struct rusage ru;
	double cpu;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return;
	cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	if (a->cpu_prev_ns != 0 && now_ns > a->cpu_prev_ns)
		a->self.cpu_pct =
			(cpu - a->cpu_prev_s) * 100.0 / ((double)(now_ns - a->cpu_prev_ns) / 1e9);
	a->self.cpu_s = cpu;
	a->cpu_prev_s = cpu;
	a->cpu_prev_ns = now_ns;
}

static int take_sample(struct agent *a)
{
	struct agent_sample *s = &a->s[a->cur], *prev = a->have_prev ? &a->s[!a->cur] : NULL;
	uint64_t now = ice_now_ns(), ts = ice_wall_ms();
	int ret;

	s->seq = ++a->seq;
	s->ts_ms = ts > a->last_ts_ms ? ts : a->last_ts_ms + 1;
	a->last_ts_ms = s->ts_ms;
	s->mono_ns = now;
	s->nqp = 0;
	if (a->nic != NULL) {
		agent_nic_read(a->nic);
		agent_nic_summary(a->nic, &s->dev);
		agent_nic_pfc(a->nic, &s->pfc);
		s->has_dev = true;
	}
	ret = ctrl_read(a);
	a->nflows = 0;
	if (ret == 0 && a->bpf != NULL) {
		ret = agent_bpf_read(a->bpf, &a->flows, &a->nflows, &a->flowcap, &a->new_flows);
		if (ret < 0) {
			ice_warn(AGENT_SUB, "bpf: reading flows: %s", strerror(-ret));
			ret = 0;
		}
	}
	if (ret == 0)
		ret = agent_join(s, a->qps, a->nqps, a->flows, a->nflows);
	if (ret < 0)
		return ret;
	agent_rates(s, prev);
	agent_dev_rates(s, prev);
	a->self.samples++;
	cpu_account(a, now);
	ice_dbg(AGENT_SUB, "sample %llu: %zu QPs, %zu flows, %zu events; cpu %.3f%% of a core",
		(unsigned long long)s->seq, s->nic_qps, s->nic_flows, s->nev, a->self.cpu_pct);
	return 0;
}

static void publish(struct agent *a)
{
	const struct agent_sample *s = &a->s[a->cur], *prev = a->have_prev ? &a->s[!a->cur] : NULL;
	struct agent_buf b = {0};

	if (agent_redis_render(&a->cfg, s, prev, &b) == 0 && a->nic != NULL) {
		char key[ICE_RKEY_MAX];
		uint64_t full = 10 * ICE_NSEC_PER_SEC / a->cfg.interval; /* all every 10 s */

		ice_rkey_str(key, sizeof(key), ICE_RK_NIC_DEV, a->cfg.fabric, a->cfg.host,
			     a->cfg.nic);
		agent_nic_render(a->nic, key, full > 0 ? (unsigned)full : 1, &b);
	}
	if (b.failed) {
		ice_warn(AGENT_SUB, "sample %llu: out of memory rendering it; dropped",
			 (unsigned long long)s->seq);
		free(b.p);
		a->queue.dropped++;
		return;
	}
	agent_queue_push(&a->queue, b.p, b.len, b.ncmd, s->seq);
}

static void next_sample(struct agent *a)
{
	a->cur = !a->cur;
	a->have_prev = true;
	agent_sample_clear(&a->s[a->cur]);
}

static void self_update(struct agent *a)
{
	a->self.redis_up = a->redis.up;
	a->self.queue_depth = a->queue.len;
	a->self.dropped = a->queue.dropped;
	a->self.redis_err = a->redis.errors;
}

/* ---- life */

/* Who may use the event socket and the control block; run_dir must be ours
 * alone (else someone could swap what we create in it). */
static int ipc_setup(struct agent *a)
{
	char why[160];
	int ret = ice_ipc_perm_init(&a->perm, a->cfg.group);

	if (ret == -EINVAL) {
		ice_err(AGENT_SUB, "group '%s': name too long", a->cfg.group);
		return ret;
	}
	if (ret < 0 && !a->o.once)
		ice_warn(AGENT_SUB,
			 "group '%s' does not exist: the event socket and control block are "
			 "root's only (0600), so only root's processes can report or be steered "
			 "(groupadd %s, then add the jobs' users to it)",
			 a->perm.group, a->perm.group);
	else if (!a->o.once)
		ice_info(AGENT_SUB, "event socket and control block: group '%s' (%u), mode %04o",
			 a->perm.group, (unsigned)a->perm.gid, (unsigned)a->perm.mode);
	ret = ice_ipc_check_dir(a->cfg.run_dir, &a->perm, why, sizeof(why));
	if (ret < 0)
		ice_err(AGENT_SUB, "run_dir %s %s", a->cfg.run_dir, why);
	return ret;
}

/* The plan's DCQCN profiles onto the NIC; NULL (fallback): the NIC's own. */
static int nic_dcqcn(void *ctx, const struct agent_dcqcn_prios *set, struct ice_cfg_err *err)
{
	struct agent *a = ctx;

	if (set == NULL)
		return agent_nic_dcqcn_restore(a->nic);
	return agent_nic_dcqcn_apply_prios(a->nic, set, err);
}

struct agent *agent_new(const struct agent_cfg *cfg, const struct agent_opts *o)
{
	struct agent *a = calloc(1, sizeof(*a));
	int ret;

	if (a == NULL)
		return NULL;
	a->cfg = *cfg;
	a->o = *o;
	a->lock_fd = a->sock_fd = -1;
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < 2; i++)
		agent_sample_init(&a->s[i]);
	a->ann = calloc(ANNOUNCED_MAX, sizeof(*a->ann));
	ret = a->ann == NULL ? -ENOMEM : agent_queue_init(&a->queue, cfg->buffer);
	if (ret < 0)
		goto err;
	agent_redis_init(&a->redis, &a->cfg, !cfg->no_bpf);
	if (mkdir(cfg->run_dir, 0755) < 0 && errno != EEXIST) {
		ret = -errno;
		ice_err(AGENT_SUB, "cannot create %s: %s", cfg->run_dir, strerror(-ret));
		goto err;
	}
	ret = ipc_setup(a);
	if (ret < 0)
		goto err;
	ret = lock_take(a);
	if (ret == -EBUSY && o->once) {
		/* beside a running agent: read its block and maps, touch nothing */
		a->readonly = true;
		ice_info(AGENT_SUB, "another agent runs on %s: reading only (no events)", cfg->nic);
	} else if (ret < 0) {
		goto err;
	}
	if (a->readonly) {
		a->ctrl = ice_ctrl_open(cfg->addr, &a->perm);
	} else {
		a->ctrl = ice_ctrl_create(cfg->addr, &a->perm);
		if (a->ctrl == NULL) {
			ret = -errno;
			ice_err(AGENT_SUB, "cannot create the control block of %s: %s", cfg->addr,
				strerror(-ret));
			goto err;
		}
		ret = sock_open(a);
		if (ret < 0)
			goto err;
		if (!o->once && cfg->plan_pubkeys[0] != '\0') {
			struct ice_cfg_err e;
			char buf[768];

			a->plan = agent_plan_new(&a->cfg, a->ctrl, &e);
			if (a->plan == NULL) {
				ret = -errno;
				ice_err(AGENT_SUB, "plan_pubkeys: %s",
					ice_cfg_err_str(&e, buf, sizeof(buf)));
				goto err;
			}
		}
	}
	if (strcmp(cfg->backend, "mlx5") == 0) {
		a->nic = agent_nic_new(&a->cfg, NULL);
		if (a->nic == NULL) {
			ret = -errno;
			goto err;
		}
		if (a->plan != NULL)
			agent_plan_on_dcqcn(a->plan, nic_dcqcn, a);
	}
	if (!cfg->no_bpf) {
		if (!agent_bpf_available()) {
			ret = -ENOTSUP;
			ice_err(AGENT_SUB, "built without the BPF programs: run with --no-bpf");
			goto err;
		}
		a->bpf = agent_bpf_open(cfg, !a->readonly);
		if (a->bpf == NULL) {
			ret = -errno;
			goto err;
		}
	}
	if (!o->once && cfg->metrics_port != 0) {
		char addr[16];

		snprintf(addr, sizeof(addr), "%u", cfg->metrics_port);
		a->metrics = ice_http_new(addr);
		if (a->metrics == NULL) {
			ret = -errno;
			ice_err(AGENT_SUB, "metrics: cannot listen on port %u: %s",
				cfg->metrics_port, strerror(-ret));
			goto err;
		}
	}
	ice_info(AGENT_SUB, "ice-agent on %s (%s), host %s, fabric %s, every %.3f s%s", cfg->nic,
		 cfg->addr, cfg->host, cfg->fabric, (double)cfg->interval / 1e9,
		 cfg->no_bpf ? ", without BPF" : "");
	return a;
err:
	agent_free(a);
	errno = -ret;
	return NULL;
}

void agent_stop(struct agent *a)
{
	a->stop = 1;
}

static int poll_timeout_ms(struct agent *a, uint64_t now)
{
	uint64_t until = a->next_ns;

	if (!a->o.once) {
		if (a->redis.up && a->queue.len > 0)
			until = now + 10 * ICE_NSEC_PER_MSEC;
		else if (!a->redis.up && a->redis.link.next_try_ns < until)
			until = a->redis.link.next_try_ns;
		if (a->early && a->sample_ns + EARLY_GAP_NS < until)
			until = a->sample_ns + EARLY_GAP_NS;
	}
	if (until <= now)
		return 0;
	return (int)((until - now + ICE_NSEC_PER_MSEC - 1) / ICE_NSEC_PER_MSEC);
}

int agent_run(struct agent *a)
{
	int samples = 0, ret = 0;

	a->next_ns = ice_now_ns();
	while (!a->stop) {
		struct pollfd pfd[4];
		int n = 0, np;
		uint64_t now = ice_now_ns();

		if (a->early && !a->o.once && now >= a->sample_ns + EARLY_GAP_NS)
			a->next_ns = now; /* news: this interval ends now */
		if (now >= a->next_ns) {
			a->early = false;
			a->sample_ns = now;
			ret = take_sample(a);
			if (ret < 0) {
				ice_err(AGENT_SUB, "sampling failed: %s", strerror(-ret));
				return ret;
			}
			samples++;
			if (a->o.once && samples == 2) {
				char *txt =
					agent_sample_json(&a->s[a->cur], &a->cfg, JSON_INDENT(2));

				if (txt == NULL)
					return -ENOMEM;
				fprintf(a->o.out, "%s\n", txt);
				fflush(a->o.out);
				free(txt);
				return 0;
			}
			if (!a->o.once)
				publish(a);
			next_sample(a);
			a->next_ns += a->cfg.interval;
			if (a->next_ns <= now) /* we fell behind: skip, do not burst */
				a->next_ns = now + a->cfg.interval;
		}
		if (!a->o.once)
			agent_redis_tick(&a->redis, &a->queue, ice_now_ns());
		agent_plan_tick(a->plan, ice_now_ns());
		self_update(a);
		if (a->sock_fd >= 0)
			pfd[n++] = (struct pollfd){.fd = a->sock_fd, .events = POLLIN};
		n += ice_http_fds(a->metrics, &pfd[n], 3 - n);
		np = agent_plan_fds(a->plan, &pfd[n], 4 - n);
		if (poll(pfd, (nfds_t)(n + np), poll_timeout_ms(a, ice_now_ns())) < 0 &&
		    errno != EINTR)
			return -errno;
		agent_plan_io(a->plan, &pfd[n], np);
		if (a->sock_fd >= 0)
			sock_drain(a);
		agent_metrics_io(a->metrics, &a->s[!a->cur], &a->cfg, &a->self);
	}
	return 0;
}

void agent_free(struct agent *a)
{
	if (a == NULL)
		return;
	if (!a->o.once && a->lock_fd >= 0) {
		/* last words: what is queued, then offline */
		agent_redis_tick(&a->redis, &a->queue, ice_now_ns());
		agent_redis_offline(&a->redis);
	}
	agent_redis_fini(&a->redis);
	agent_plan_free(a->plan);
	agent_nic_free(a->nic); /* the NIC's own DCQCN values back */
	/* a clean exit removes what it attached; a crash leaves the pins for a
	 * successor to take over */
	agent_bpf_close(a->bpf, !a->readonly);
	ice_http_free(a->metrics);
	if (a->sock_fd >= 0)
		close(a->sock_fd);
	if (a->sock_path[0] != '\0')
		unlink(a->sock_path);
	if (a->ctrl != NULL) {
		/* transports still mapped keep their QPs for the next agent */
		if (!a->readonly && !ctrl_in_use(a->ctrl))
			ice_ctrl_unlink(a->cfg.addr);
		ice_ctrl_close(a->ctrl);
	}
	if (a->lock_fd >= 0)
		close(a->lock_fd); /* the file stays: unlinking it would race a successor */
	for (int i = 0; i < 2; i++)
		agent_sample_fini(&a->s[i]);
	agent_queue_fini(&a->queue);
	free(a->qps);
	free(a->ann);
	free(a->flows);
	free(a);
}
