// SPDX-License-Identifier: Apache-2.0
/*
 * tp_comm: communicators. Rank 0 runs a TCP rendezvous; every rank sends it
 * its address, port and the QP numbers it created for each peer, and gets the
 * whole table back. Then each rank connects its QPs to the peers' matching
 * QPs. The TCP connections stay open for out-of-band barriers and small
 * reductions (not the data path); waiting on them keeps the engine running,
 * so peers still get their ACKs.
 *
 * Messages between two ranks are spread over the connection's QPs: split into
 * one MTU-aligned piece per QP (NCCL_IB_SPLIT_DATA_ON_QPS=1), or whole, QPs
 * taken in turn. Both sides count messages per peer, so they split alike.
 *
 * The TCP connections also tell that a rank's process ended: see oob_watch.
 */
#include "tp_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ice_log.h"
#include "ice_time.h"

#define BOOT_MAGIC 0x1ce0b007u
/* how often the bootstrap connections are looked at (oob_watch, io_all) */
#define TP_WATCH_NS (100 * ICE_NSEC_PER_MSEC)

struct boot_hdr {
	uint32_t magic;
	uint32_t rank;
	uint32_t nranks;
	uint32_t k;
	uint32_t addr; /* network order */
	uint32_t port;
	/* the engine's RoCE MTU: the job takes the smallest */
	uint32_t mtu;
	/* followed by nranks * k QP numbers: [peer * k + q] */
};

void tp_comm_cfg_default(struct tp_comm_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->nranks = 1;
	c->listen_fd = -1;
	c->qps_per_conn = 1;
	c->spread = TP_SPREAD_SPLIT;
	c->slice_bytes = 1u << 20;
	c->oneshot_max = 64u << 10;
	c->bootstrap_timeout_ns = 30 * ICE_NSEC_PER_SEC;
	tp_engine_cfg_default(&c->eng);
}

int tp_comm_rank(const struct tp_comm *c)
{
	return c->rank;
}

int tp_comm_nranks(const struct tp_comm *c)
{
	return c->nranks;
}

struct tp_engine *tp_comm_engine(struct tp_comm *c)
{
	return c->e;
}

uint32_t tp_comm_qps_per_conn(const struct tp_comm *c)
{
	return c->k;
}

void tp_comm_set_stall_timeout(struct tp_comm *c, uint64_t ns)
{
	c->cfg.stall_timeout_ns = ns;
}

struct tp_qp *tp_comm_qp(struct tp_comm *c, int peer, uint32_t q)
{
	if (peer < 0 || peer >= c->nranks || peer == c->rank || q >= c->k)
		return NULL;
	return c->qps[(size_t)peer * c->k + q];
}

static int parse_hostport(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	if (colon == NULL || (size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || port <= 0 || port > 65535)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return -EINVAL;
	return 0;
}

/*
 * A connection's peer is gone if what this side sent is being resent and
 * nothing has been acknowledged for dead_ns (keepalive covers the idle
 * connections, not these). A peer that merely does not read, its receive
 * buffer full, acknowledges the zero-window probes and nothing is resent.
 * Not TCP_USER_TIMEOUT: it ends that connection too, and ice-train's
 * rank 0 reads nothing while it computes a job that another rank is not
 * in, and that rank sends it its report.
 */
static bool peer_silent(int fd, uint64_t dead_ns)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (dead_ns == 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return false;
	return ti.tcpi_unacked > 0 && ti.tcpi_retransmits > 0 &&
	       (uint64_t)ti.tcpi_last_ack_recv * ICE_NSEC_PER_MSEC >= dead_ns;
}

/*
 * Full-buffer I/O on a TCP socket, bounded by deadline, and by dead_ns of
 * silence with data in flight (peer_silent; 0: not). Without c it waits
 * for the socket in poll (a TP_WATCH_NS at a time); with c (out of band,
 * once the engine runs) it only polls the socket and keeps c's engine
 * going while it is not ready.
 */
static int io_all(struct tp_comm *c, int fd, void *buf, size_t len, bool wr, uint64_t deadline,
		  uint64_t dead_ns)
{
	uint64_t looked = ice_now_ns();
	uint8_t *p = buf;

	while (len > 0) {
		struct pollfd pfd = {.fd = fd, .events = wr ? POLLOUT : POLLIN};
		uint64_t now = ice_now_ns();
		ssize_t n;

		if (now >= deadline)
			return -ETIMEDOUT;
		if (now - looked >= TP_WATCH_NS) {
			looked = now;
			if (peer_silent(fd, dead_ns))
				return -ETIMEDOUT;
		}
		if (c == NULL) {
			uint64_t wait = deadline - now < TP_WATCH_NS ? deadline - now : TP_WATCH_NS;

			if (poll(&pfd, 1, (int)(wait / ICE_NSEC_PER_MSEC) + 1) <= 0)
				continue;
		} else if (poll(&pfd, 1, 0) <= 0) {
			int ret;

			c->in_oob++;
			ret = tp_comm_progress(c, 200 * ICE_NSEC_PER_USEC);
			c->in_oob--;

			if (ret < 0)
				return ret;
			continue;
		}
		/* never blocks: a blocking send waits for room for all of len */
		n = wr ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT)
		       : recv(fd, p, len, MSG_DONTWAIT);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * A host that loses power or its link sends no FIN: its connections would
 * look open forever, and a rank waiting only to receive from it would wait
 * forever (oob_watch). The kernel probes an idle connection (keepalive),
 * once a second, and gives up after TP_OOB_DEAD_NS or twice the QPs' peer
 * timeout of silence, whichever is longer; oob_watch then sees the error.
 * A connection with data in flight is not probed: peer_silent judges it.
 * A process that is merely busy still answers: its kernel does.
 */
#define TP_OOB_DEAD_NS (10 * ICE_NSEC_PER_SEC)

static uint64_t oob_dead_ns(const struct tp_comm *c)
{
	uint64_t dead = 2 * c->cfg.eng.peer_timeout_ns;

	return dead > TP_OOB_DEAD_NS ? dead : TP_OOB_DEAD_NS;
}

static void oob_sock_opts(const struct tp_comm *c, int fd)
{
	int one = 1, idle = 1, n = (int)(oob_dead_ns(c) / ICE_NSEC_PER_SEC);

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &n, sizeof(n));
}

static int connect_retry(const struct tp_comm *c, const struct sockaddr_in *sa, uint64_t deadline)
{
	while (ice_now_ns() < deadline) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return -errno;
		if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0) {
			oob_sock_opts(c, fd);
			return fd;
		}
		close(fd);
		ice_sleep_ns(20 * ICE_NSEC_PER_MSEC);
	}
	return -ETIMEDOUT;
}

static int boot_listen(const struct sockaddr_in *sa)
{
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 || listen(fd, 1024) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* Exchange boot records: returns the table of all ranks' records. */
static uint8_t *bootstrap(struct tp_comm *c, const uint8_t *mine, size_t rec_len)
{
	uint64_t deadline = ice_now_ns() + c->cfg.bootstrap_timeout_ns;
	size_t total = rec_len * (size_t)c->nranks;
	struct sockaddr_in sa;
	uint8_t *table;
	int err = 0, lfd = -1;

	table = calloc(1, total);
	if (table == NULL)
		return NULL;
	err = parse_hostport(c->cfg.bootstrap, &sa);
	if (err < 0) {
		ice_err(ICE_SUB_COMM, "bootstrap address '%s': expected IPv4:PORT",
			c->cfg.bootstrap);
		goto err;
	}
	memcpy(table + rec_len * (size_t)c->rank, mine, rec_len);
	if (c->rank != 0) {
		int fd = connect_retry(c, &sa, deadline);

		if (fd < 0) {
			err = fd;
			ice_err(ICE_SUB_COMM, "rank %d: cannot reach rank 0 at %s: %s", c->rank,
				c->cfg.bootstrap, strerror(-err));
			goto err;
		}
		c->oob[0] = fd;
		err = io_all(NULL, fd, (void *)mine, rec_len, true, deadline, 0);
		if (err == 0)
			err = io_all(NULL, fd, table, total, false, deadline, 0);
		if (err < 0) {
			ice_err(ICE_SUB_COMM, "rank %d: bootstrap exchange failed: %s", c->rank,
				strerror(-err));
			goto err;
		}
		return table;
	}
	lfd = c->cfg.listen_fd >= 0 ? c->cfg.listen_fd : boot_listen(&sa);
	if (lfd < 0) {
		err = lfd;
		ice_err(ICE_SUB_COMM, "rank 0: cannot listen on %s: %s", c->cfg.bootstrap,
			strerror(-err));
		goto err;
	}
	for (int got = 1; got < c->nranks; got++) {
		struct pollfd pfd = {.fd = lfd, .events = POLLIN};
		struct boot_hdr h;
		uint64_t now = ice_now_ns();
		int fd;

		if (now >= deadline ||
		    poll(&pfd, 1, (int)((deadline - now) / ICE_NSEC_PER_MSEC) + 1) <= 0) {
			err = -ETIMEDOUT;
			ice_err(ICE_SUB_COMM,
				"rank 0: only %d of %d ranks joined before the timeout", got,
				c->nranks);
			goto err;
		}
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			got--;
			continue;
		}
		oob_sock_opts(c, fd);
		err = io_all(NULL, fd, &h, sizeof(h), false, deadline, 0);
		if (err == 0 &&
		    (h.magic != BOOT_MAGIC || h.nranks != (uint32_t)c->nranks || h.k != c->k ||
		     h.rank == 0 || h.rank >= (uint32_t)c->nranks || c->oob[h.rank] >= 0))
			err = -EPROTO;
		if (err == 0) {
			memcpy(table + rec_len * h.rank, &h, sizeof(h));
			err = io_all(NULL, fd, table + rec_len * h.rank + sizeof(h),
				     rec_len - sizeof(h), false, deadline, 0);
		}
		if (err < 0) {
			ice_err(ICE_SUB_COMM,
				"rank 0: a joining rank sent a bad record (%s); "
				"same --nranks and --qps everywhere?",
				strerror(-err));
			close(fd);
			goto err;
		}
		c->oob[h.rank] = fd;
	}
	for (int r = 1; r < c->nranks; r++) {
		err = io_all(NULL, c->oob[r], table, total, true, deadline, 0);
		if (err < 0)
			goto err;
	}
	if (lfd != c->cfg.listen_fd)
		close(lfd);
	return table;
err:
	if (lfd >= 0 && lfd != c->cfg.listen_fd)
		close(lfd);
	free(table);
	errno = -err;
	return NULL;
}

/* The first PSN rank i uses on QP q toward rank j: spread out and close to
 * the 24-bit wrap, so long runs exercise it. */
static uint32_t start_psn(int i, int j, uint32_t q)
{
	return (0xfff000u + (uint32_t)i * 7919u + (uint32_t)j * 104729u + q * 31u) & TP_PSN_MASK;
}

struct tp_comm *tp_comm_init(const struct tp_comm_cfg *cfg)
{
	struct tp_comm *c;
	struct boot_hdr *h;
	size_t rec_len;
	uint8_t *mine = NULL, *table = NULL;
	int err = -ENOMEM;

	if (cfg->nranks < 1 || cfg->rank < 0 || cfg->rank >= cfg->nranks || cfg->qps_per_conn < 1 ||
	    cfg->qps_per_conn > 64) {
		ice_err(ICE_SUB_COMM,
			"bad communicator: rank %d of %d, %u QPs per connection "
			"(expected 0 <= rank < nranks, 1..64 QPs)",
			cfg->rank, cfg->nranks, cfg->qps_per_conn);
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->cfg = *cfg;
	if (c->cfg.slice_bytes < 4096)
		c->cfg.slice_bytes = 4096;
	c->rank = cfg->rank;
	c->nranks = cfg->nranks;
	c->k = cfg->qps_per_conn;
	c->qps = calloc((size_t)c->nranks * c->k, sizeof(*c->qps));
	c->tx_seq = calloc((size_t)c->nranks, sizeof(*c->tx_seq));
	c->rx_seq = calloc((size_t)c->nranks, sizeof(*c->rx_seq));
	c->oob = malloc((size_t)c->nranks * sizeof(*c->oob));
	if (c->qps == NULL || c->tx_seq == NULL || c->rx_seq == NULL || c->oob == NULL)
		goto err;
	for (int r = 0; r < c->nranks; r++)
		c->oob[r] = -1;
	c->e = cfg->oob_only ? NULL : tp_engine_new(&cfg->eng);
	if (c->e == NULL && !cfg->oob_only) {
		err = -errno;
		goto err;
	}
	rec_len = sizeof(*h) + (size_t)c->nranks * c->k * sizeof(uint32_t);
	mine = calloc(1, rec_len);
	if (mine == NULL)
		goto err;
	h = (struct boot_hdr *)mine;
	h->magic = BOOT_MAGIC;
	h->rank = (uint32_t)c->rank;
	h->nranks = (uint32_t)c->nranks;
	h->k = c->k;
	h->addr = cfg->eng.addr.s_addr;
	h->port = c->e != NULL ? tp_engine_port(c->e) : 0;
	h->mtu = c->e != NULL ? tp_engine_cfg(c->e)->mtu : 0;
	for (int p = 0; p < c->nranks && c->e != NULL; p++) {
		if (p == c->rank)
			continue;
		for (uint32_t q = 0; q < c->k; q++) {
			struct tp_qp *qp = tp_qp_create(c->e);
			uint32_t qpn;

			if (qp == NULL) {
				err = -errno;
				goto err;
			}
			c->qps[(size_t)p * c->k + q] = qp;
			qpn = tp_qp_num(qp);
			memcpy(mine + sizeof(*h) + ((size_t)p * c->k + q) * 4, &qpn, 4);
		}
	}
	if (c->nranks > 1) {
		table = bootstrap(c, mine, rec_len);
		if (table == NULL) {
			err = -errno;
			goto err;
		}
	}
	for (int p = 0; p < c->nranks && table != NULL && c->e != NULL; p++) {
		const struct boot_hdr *ph = (const struct boot_hdr *)(table + rec_len * (size_t)p);

		/* as RC QPs take min(active MTU) of both ports at RTR */
		if (ph->mtu < tp_engine_cfg(c->e)->mtu) {
			err = tp_engine_set_path_mtu(c->e, ph->mtu);
			if (err < 0) {
				ice_err(ICE_SUB_COMM,
					"rank %d announced RoCE MTU %u: expected 256..4096", p,
					ph->mtu);
				goto err;
			}
			ice_dbg(ICE_SUB_COMM, "rank %d's RoCE MTU is %u: the job uses it", p,
				ph->mtu);
		}
	}
	/* table is NULL for one rank: then there is no peer to connect */
	for (int p = 0; p < c->nranks && table != NULL && c->e != NULL; p++) {
		const struct boot_hdr *ph = (const struct boot_hdr *)(table + rec_len * (size_t)p);

		if (p == c->rank)
			continue;
		for (uint32_t q = 0; q < c->k; q++) {
			struct tp_qp_conn conn = {0};

			conn.raddr.s_addr = ph->addr;
			conn.rport = (uint16_t)ph->port;
			memcpy(&conn.rqpn,
			       (const uint8_t *)ph + sizeof(*ph) + ((size_t)c->rank * c->k + q) * 4,
			       4);
			conn.sq_psn = start_psn(c->rank, p, q);
			conn.rq_psn = start_psn(p, c->rank, q);
			err = tp_qp_connect(c->qps[(size_t)p * c->k + q], &conn);
			if (err < 0)
				goto err;
		}
	}
	free(table);
	free(mine);
	c->comm_id = 1469598103934665603ull; /* FNV-1a of the rendezvous address */
	for (const char *p = c->cfg.bootstrap; *p; p++)
		c->comm_id = (c->comm_id ^ (uint8_t)*p) * 1099511628211ull;
	if (c->e != NULL)
		tp_comm_event(c, ICE_EV_COMM_INIT, 0, 0, -1, -1, -1, -1);
	ice_dbg(ICE_SUB_COMM, "rank %d of %d ready, %u QPs per peer", c->rank, c->nranks, c->k);
	return c;
err:
	free(table);
	free(mine);
	tp_comm_free(c);
	errno = -err;
	return NULL;
}

void tp_comm_free(struct tp_comm *c)
{
	if (c == NULL)
		return;
	if (c->e != NULL && c->comm_id != 0)
		tp_comm_event(c, ICE_EV_COMM_DESTROY, 0, 0, -1, -1, -1, -1);
	/* Let the peers finish: they may still need our ACKs. Not after a
	 * failure: a peer may wait for data that will not come, and it sees
	 * this rank's connection close (oob_watch) */
	if (c->e != NULL && c->oob != NULL && c->nranks > 1 && (c->rank == 0 || c->oob[0] >= 0) &&
	    !c->failed)
		tp_comm_barrier(c);
	tp_engine_free(c->e); /* destroys the QPs */
	if (c->oob != NULL)
		for (int r = 0; r < c->nranks; r++)
			if (c->oob[r] >= 0)
				close(c->oob[r]);
	free(c->oob);
	free(c->qps);
	free(c->tx_seq);
	free(c->rx_seq);
	free(c->scratch);
	free(c);
}

void *tp_comm_scratch(struct tp_comm *c, size_t len)
{
	if (len == 0)
		len = 64;
	if (len > c->scratch_len) {
		const struct dev_mem_ops *m = dev_mem_ops_get(DEV_MEM_HOST);
		void *p = m->alloc(len);

		if (p == NULL)
			return NULL;
		m->free(c->scratch);
		c->scratch = p;
		c->scratch_len = len;
	}
	return c->scratch;
}

/*
 * A queue pair that only waits to receive never learns that its peer is gone:
 * its timer runs only for what it sent (as an RC QP's on a NIC). A rank
 * waiting for a dead rank's data would wait forever. But a process that ends
 * closes its TCP connections, and the kernel tells the other side at once
 * (FIN, or RST): look at them every TP_WATCH_NS, a poll with no wait each.
 * Rank 0 watches every rank and the others watch rank 0. A rank that fails
 * ends, and its connections close with it, so the loss of any rank reaches
 * everyone through rank 0. A host that vanishes sends no close: the
 * kernel's keepalive ends an idle connection (oob_sock_opts), and one with
 * data in flight is judged by peer_silent. A rank whose process lives but
 * hangs is not seen here (see stall_watch). Inside an oob exchange the
 * exchange itself reads the close (and a peer that finished its final
 * barrier may close before this rank returns).
 */

static int oob_watch(struct tp_comm *c)
{
	uint64_t now = ice_now_ns();

	if (c->lost)
		return -ENOTCONN;
	if (c->in_oob || now - c->watch_ns < TP_WATCH_NS)
		return 0;
	c->watch_ns = now;
	for (int r = 0; r < c->nranks; r++) {
		struct pollfd pfd = {.fd = c->oob[r], .events = POLLRDHUP};
		socklen_t len = sizeof(int);
		int err = 0;

		if (c->oob[r] < 0)
			continue;
		if (poll(&pfd, 1, 0) > 0)
			getsockopt(c->oob[r], SOL_SOCKET, SO_ERROR, &err, &len);
		else if (peer_silent(c->oob[r], oob_dead_ns(c)))
			err = ETIMEDOUT;
		else
			continue;
		c->lost = c->failed = true;
		if (err != 0)
			ice_err(ICE_SUB_COMM,
				"rank %d: rank %d stopped answering on its connection (%s): its "
				"host is down or cut off from this one",
				c->rank, r, strerror(err));
		else if (r == 0)
			ice_err(ICE_SUB_COMM,
				"rank %d: rank 0 closed its connection to this rank: it ended, or "
				"it gave up on another rank",
				c->rank);
		else
			ice_err(ICE_SUB_COMM,
				"rank 0: rank %d closed its connection: its process ended", r);
		return -ENOTCONN;
	}
	return 0;
}

/*
 * A peer whose process lives but hangs (a device that never returns, a
 * deadlock) still answers on its connections and acknowledges what it
 * received: nothing above sees it. But nothing completes either. Like the
 * collective libraries' watchdogs, fail once requests have waited
 * cfg.stall_timeout_ns with none completing, naming the peers whose
 * requests wait: a step takes far less, so the job knows the bound.
 */
static int stall_watch(struct tp_comm *c)
{
	char who[128] = "";
	size_t at = 0;

	if (c->stalled)
		return -ETIMEDOUT;
	if (c->cfg.stall_timeout_ns == 0 || c->posted == 0 ||
	    ice_now_ns() - c->done_ns < c->cfg.stall_timeout_ns)
		return 0;
	c->stalled = c->failed = true;
	for (int p = 0; p < c->nranks && at + 16 < sizeof(who); p++) {
		static const char *const dir[] = {"", "to", "from", "to and from"};
		int d = 0;

		for (uint32_t q = 0; p != c->rank && q < c->k; q++) {
			const struct tp_qp *qp = c->qps[(size_t)p * c->k + q];

			d |= (qp->sq_head != qp->sq_tail) | (qp->rq_head != qp->rq_tail) << 1;
		}
		if (d != 0)
			at += (size_t)snprintf(who + at, sizeof(who) - at, " %d (%s)", p, dir[d]);
	}
	ice_err(ICE_SUB_COMM,
		"rank %d: nothing completed for %.1f s while %llu request(s) waited "
		"(--stall-timeout): a rank hangs, or a step takes that long; waiting on rank(s)%s",
		c->rank, (double)(ice_now_ns() - c->done_ns) / ICE_NSEC_PER_SEC,
		(unsigned long long)c->posted, at ? who : " (none)");
	return -ETIMEDOUT;
}

int tp_comm_progress(struct tp_comm *c, uint64_t max_wait_ns)
{
	struct tp_wc wc[64];
	int n, ret;

	ret = oob_watch(c);
	if (ret == 0)
		ret = stall_watch(c);
	if (ret < 0)
		return ret;
	ret = tp_engine_progress(c->e, max_wait_ns);
	if (ret < 0) {
		c->failed = true;
		return ret;
	}
	while ((n = tp_engine_poll_cq(c->e, wc, 64)) > 0) {
		c->done_ns = ice_now_ns();
		for (int i = 0; i < n; i++) {
			struct tp_req *r = (struct tp_req *)(uintptr_t)wc[i].wr_id;

			if (wc[i].status < 0)
				c->failed = true; /* a request failed: the job cannot go on */
			if (r == NULL)
				continue;
			if (wc[i].status < 0 && r->status == 0)
				r->status = wc[i].status;
			r->pending--;
			c->posted--;
		}
	}
	return ret;
}

int tp_comm_wait(struct tp_comm *c, struct tp_req *r)
{
	while (r->pending > 0) {
		int ret = tp_comm_progress(c, ICE_NSEC_PER_MSEC);

		if (ret < 0)
			return ret;
	}
	return r->status;
}

/* The piece of a message of len bytes that QP slot q carries, for split mode:
 * MTU-aligned pieces, the last one shorter. */
static void split_piece(const struct tp_comm *c, size_t len, uint32_t q, size_t *off, size_t *plen)
{
	size_t mtu = tp_engine_cfg(c->e)->mtu;
	size_t per = (len + c->k - 1) / c->k;

	per = (per + mtu - 1) / mtu * mtu;
	*off = per * q;
	if (*off >= len) {
		*off = len;
		*plen = 0;
		return;
	}
	*plen = len - *off < per ? len - *off : per;
}

typedef int (*post_fn)(struct tp_qp *qp, void *buf, size_t len, uint64_t wr_id);

static int post_send_cb(struct tp_qp *qp, void *buf, size_t len, uint64_t wr_id)
{
	return tp_qp_post_send(qp, buf, len, wr_id);
}

static int post_recv_cb(struct tp_qp *qp, void *buf, size_t len, uint64_t wr_id)
{
	return tp_qp_post_recv(qp, buf, len, wr_id);
}

/* Post one work request, driving the engine while the queue is full. */
static int post_retry(struct tp_comm *c, post_fn fn, struct tp_qp *qp, void *buf, size_t len,
		      struct tp_req *r)
{
	for (;;) {
		int ret = fn(qp, buf, len, (uint64_t)(uintptr_t)r);

		if (ret == 0) {
			if (c->posted++ == 0)
				c->done_ns = ice_now_ns();
			r->pending++;
			return 0;
		}
		if (ret != -EAGAIN)
			return ret;
		ret = tp_comm_progress(c, 100 * ICE_NSEC_PER_USEC);
		if (ret < 0)
			return ret;
	}
}

static int post_msg(struct tp_comm *c, int peer, void *buf, size_t len, struct tp_req *r,
		    uint64_t *seq, post_fn fn)
{
	uint64_t s;
	int ret;

	if (peer < 0 || peer >= c->nranks || peer == c->rank)
		return -EINVAL;
	s = seq[peer]++;
	if (c->cfg.spread == TP_SPREAD_ROUND_ROBIN || c->k == 1)
		return post_retry(c, fn, c->qps[(size_t)peer * c->k + s % c->k], buf, len, r);
	for (uint32_t q = 0; q < c->k; q++) {
		size_t off, plen;

		split_piece(c, len, q, &off, &plen);
		if (plen == 0 && q != 0)
			break;
		/* rotate which QP takes the first piece, so short messages
		 * still use every QP */
		ret = post_retry(c, fn, c->qps[(size_t)peer * c->k + (q + s) % c->k],
				 (uint8_t *)buf + off, plen, r);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int tp_comm_isend(struct tp_comm *c, int peer, const void *buf, size_t len, struct tp_req *r)
{
	return post_msg(c, peer, (void *)buf, len, r, c->tx_seq, post_send_cb);
}

int tp_comm_irecv(struct tp_comm *c, int peer, void *buf, size_t len, struct tp_req *r)
{
	return post_msg(c, peer, buf, len, r, c->rx_seq, post_recv_cb);
}

/* ---- out of band ---------------------------------------------------------- */

/* Read or write len bytes on an oob socket while keeping the engine (if
 * any) going. */
static int oob_io(struct tp_comm *c, int fd, void *buf, size_t len, bool wr)
{
	uint64_t t =
		c->cfg.oob_timeout_ns ? c->cfg.oob_timeout_ns : c->cfg.bootstrap_timeout_ns * 4;

	return io_all(c->e != NULL ? c : NULL, fd, buf, len, wr, ice_now_ns() + t, oob_dead_ns(c));
}

/* Every rank contributes v; rank 0 combines (op 0: max, 1: sum) and returns
 * the result to all. */
static int oob_reduce(struct tp_comm *c, double *v, int op)
{
	int ret = 0;

	if (c->nranks == 1)
		return 0;
	if (c->rank != 0) {
		ret = oob_io(c, c->oob[0], v, sizeof(*v), true);
		if (ret == 0)
			ret = oob_io(c, c->oob[0], v, sizeof(*v), false);
		return ret;
	}
	for (int r = 1; r < c->nranks && ret == 0; r++) {
		double x;

		ret = oob_io(c, c->oob[r], &x, sizeof(x), false);
		if (ret == 0)
			*v = op == 0 ? (x > *v ? x : *v) : *v + x;
	}
	for (int r = 1; r < c->nranks && ret == 0; r++)
		ret = oob_io(c, c->oob[r], v, sizeof(*v), true);
	return ret;
}

int tp_comm_barrier(struct tp_comm *c)
{
	double v = 0;

	return oob_reduce(c, &v, 1);
}

int tp_comm_oob_max(struct tp_comm *c, double *v)
{
	return oob_reduce(c, v, 0);
}

int tp_comm_oob_sum(struct tp_comm *c, double *v)
{
	return oob_reduce(c, v, 1);
}

int tp_comm_oob_bcast(struct tp_comm *c, void *buf, size_t len)
{
	int ret = 0;

	if (c->rank != 0)
		return oob_io(c, c->oob[0], buf, len, false);
	for (int r = 1; r < c->nranks && ret == 0; r++)
		ret = oob_io(c, c->oob[r], buf, len, true);
	return ret;
}

int tp_comm_oob_gather(struct tp_comm *c, const void *mine, size_t len, void *all)
{
	int ret = 0;

	if (c->rank != 0)
		return oob_io(c, c->oob[0], (void *)mine, len, true);
	memcpy(all, mine, len);
	for (int r = 1; r < c->nranks && ret == 0; r++)
		ret = oob_io(c, c->oob[r], (uint8_t *)all + (size_t)r * len, len, false);
	return ret;
}

void tp_comm_event(struct tp_comm *c, enum ice_ev_kind kind, enum ice_coll_op op, size_t count,
		   int dtype, int redop, int root, int peer)
{
	struct ice_event ev;

	if (c->e->events == NULL)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.kind = (uint16_t)kind;
	ev.op = (uint32_t)op;
	ev.comm_id = c->comm_id;
	ev.rank = c->rank;
	ev.nranks = c->nranks;
	ev.count = count;
	ev.bytes = dtype >= 0 ? count * dev_dtype_size((enum dev_dtype)dtype) : 0;
	ev.dtype = (uint32_t)dtype;
	ev.redop = (uint32_t)redop;
	ev.root = root;
	ev.peer = peer;
	ev.prev = (c->rank + c->nranks - 1) % c->nranks;
	ev.next = (c->rank + 1) % c->nranks;
	ev.local_ip = c->cfg.eng.addr.s_addr;
	ice_event_send(c->e->events, &ev);
}
