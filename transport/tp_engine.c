// SPDX-License-Identifier: Apache-2.0
/*
 * tp_engine: sockets, batching, completion queue, memory regions and the
 * progress loop of the included transport. The protocol itself is in tp_qp.c.
 *
 * One UDP socket bound to ADDR:4791 receives everything for this engine (data,
 * ACKs, CNPs; the BTH's destination QP tells them apart). Each QP sends from
 * its own socket bound to ADDR:SPORT, so the UDP source port, the only free
 * ECMP entropy, is chosen per QP. Sockets are unconnected and set DF, so Linux
 * sends IPv4 identification 0, which the ICRC covers.
 */
#include "tp_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ice_log.h"
#include "ice_time.h"

void tp_engine_cfg_default(struct tp_engine_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->addr.s_addr = htonl(INADDR_LOOPBACK);
	c->port = ICE_ROCE_UDP_PORT;
	c->mtu = 0; /* from the interface, as a NIC's active MTU */
	c->window_pkts = 512;
	c->ack_every = 32;
	/* a NIC's local ACK timeout of 14 (4.096 us x 2^14); tools on a fabric
	 * raise it above that fabric's worst queueing delay */
	c->retx_timeout_ns = 67 * ICE_NSEC_PER_MSEC;
	c->rto_max_ns = ICE_NSEC_PER_SEC;
	c->peer_timeout_ns = 5 * ICE_NSEC_PER_SEC;
	c->rnr_timer_ns = 100 * ICE_NSEC_PER_USEC;
	c->rnr_retry = 0;
	c->icrc_verify = true;
	c->ecn = true;
	c->dscp = 26; /* a common RoCE data class (AF31) */
	c->cnp_dscp = 48;
	c->sock_buf = 8u << 20;
	c->unexp_bytes = 4u << 20;
	ice_dcqcn_params_default(&c->dcqcn);
}

static int set_buf(int fd, int force_opt, int opt, uint32_t bytes)
{
	int v = (int)bytes;

	if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof(v)) == 0)
		return 0;
	return setsockopt(fd, SOL_SOCKET, opt, &v, sizeof(v));
}

int tp_sock_tx_open(struct tp_engine *e, uint16_t sport)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET, .sin_addr = e->cfg.addr, .sin_port = htons(sport)};
	int one = 1, pmtu = IP_PMTUDISC_DO;
	int tos = (e->cfg.dscp << 2) | (e->cfg.ecn ? 0x2 : 0);
	int small = 4096;
	int fd, err;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)) < 0)
		goto err_close;
	set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, e->cfg.sock_buf);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		ice_err(ICE_SUB_ENGINE, "cannot bind UDP source port %s:%u: %s",
			inet_ntoa(e->cfg.addr), sport, strerror(-err));
		close(fd);
		return err;
	}
	return fd;
err_close:
	err = -errno;
	close(fd);
	return err;
}

static int rx_sock_open(struct tp_engine *e)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET, .sin_addr = e->cfg.addr, .sin_port = htons(e->cfg.port)};
	socklen_t salen = sizeof(sa);
	int one = 1;
	int fd, err;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) < 0)
		goto err_close;
	set_buf(fd, SO_RCVBUFFORCE, SO_RCVBUF, e->cfg.sock_buf * 4);
	/* coalesced datagrams of a flow arrive as one, cut here by their
	 * segment size; without it the stack segments them itself */
	if (e->cfg.gso && setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)) < 0)
		ice_warn(ICE_SUB_ENGINE, "UDP GRO not available (%s): packets are read one by one",
			 strerror(errno));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		ice_err(ICE_SUB_ENGINE, "cannot bind %s:%u for RoCEv2: %s%s",
			inet_ntoa(e->cfg.addr), e->cfg.port, strerror(-err),
			err == -EADDRINUSE ? " (another engine on this address? use another "
					     "address or port)"
					   : "");
		close(fd);
		return err;
	}
	if (getsockname(fd, (struct sockaddr *)&sa, &salen) < 0)
		goto err_close;
	e->port = ntohs(sa.sin_port);
	return fd;
err_close:
	err = -errno;
	close(fd);
	return err;
}

uint32_t tp_roce_mtu_fit(uint32_t if_mtu)
{
	/* IPv4 + UDP + the largest RoCE header we send + ICRC */
	uint32_t hdr = 20 + 8 + TP_MAX_HDR_LEN + ICE_ROCE_ICRC_LEN;

	for (uint32_t m = 4096; m >= 256; m >>= 1)
		if (m + hdr <= if_mtu)
			return m;
	return 0;
}

/* The MTU of the interface that holds addr (0: none does). */
static uint32_t if_mtu_of(struct in_addr addr, char *name, size_t name_len)
{
	struct ifaddrs *ifs, *i;
	uint32_t mtu = 0;

	if (getifaddrs(&ifs) < 0)
		return 0;
	for (i = ifs; i != NULL; i = i->ifa_next) {
		struct ifreq ifr;
		int fd;

		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET ||
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr != addr.s_addr)
			continue;
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", i->ifa_name);
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && ioctl(fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0) {
			mtu = (uint32_t)ifr.ifr_mtu;
			snprintf(name, name_len, "%s", i->ifa_name);
		}
		if (fd >= 0)
			close(fd);
		break;
	}
	freeifaddrs(ifs);
	return mtu;
}

/* mtu 0: the largest RoCE MTU whose packets fit the interface that holds the
 * engine's address, as a RoCE NIC derives its active MTU from its netdev's;
 * an address on no interface (INADDR_ANY) takes 4096 and says so. */
static int mtu_resolve(struct tp_engine_cfg *c)
{
	char a[INET_ADDRSTRLEN], ifn[IFNAMSIZ] = "";
	uint32_t ifm;

	if (c->mtu != 0)
		return 0;
	inet_ntop(AF_INET, &c->addr, a, sizeof(a));
	ifm = if_mtu_of(c->addr, ifn, sizeof(ifn));
	if (ifm == 0) {
		c->mtu = 4096;
		ice_dbg(ICE_SUB_ENGINE, "%s is on no interface: RoCE MTU 4096", a);
		return 0;
	}
	c->mtu = tp_roce_mtu_fit(ifm);
	if (c->mtu == 0) {
		ice_err(ICE_SUB_ENGINE,
			"%s (%s) has MTU %u: too small for the smallest RoCE MTU, 256", ifn, a,
			ifm);
		return -EINVAL;
	}
	ice_dbg(ICE_SUB_ENGINE, "%s (%s) has MTU %u: RoCE MTU %u", ifn, a, ifm, c->mtu);
	return 0;
}

int tp_engine_set_path_mtu(struct tp_engine *e, uint32_t mtu)
{
	if (mtu > e->cfg.mtu || mtu < 256 || (mtu & (mtu - 1)) != 0)
		return -EINVAL;
	e->cfg.mtu = mtu;
	return 0;
}

static int cfg_check(const struct tp_engine_cfg *c)
{
	struct ice_cfg_err ce;

	if (c->mtu != 0 && (c->mtu < 256 || c->mtu > 4096 || (c->mtu & (c->mtu - 1)) != 0)) {
		ice_err(ICE_SUB_ENGINE, "mtu %u: expected 256, 512, 1024, 2048, 4096 or 0 (auto)",
			c->mtu);
		return -EINVAL;
	}
	if (c->window_pkts < 1 || c->window_pkts > (1u << 22)) {
		ice_err(ICE_SUB_ENGINE, "window %u packets: expected 1..4194304", c->window_pkts);
		return -EINVAL;
	}
	if (c->ack_every < 1) {
		ice_err(ICE_SUB_ENGINE, "ack_every must be at least 1");
		return -EINVAL;
	}
	if (ice_dcqcn_params_check(&c->dcqcn, &ce) < 0) {
		char buf[512];

		ice_err(ICE_SUB_ENGINE, "DCQCN parameters: %s",
			ice_cfg_err_str(&ce, buf, sizeof(buf)));
		return -EINVAL;
	}
	return 0;
}

static uint32_t engines_made; /* by this process: spreads their QPN bases */

struct tp_engine *tp_engine_new(const struct tp_engine_cfg *cfg)
{
	struct tp_engine *e;
	int err;

	err = cfg_check(cfg);
	if (err < 0) {
		errno = -err;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return NULL;
	e->cfg = *cfg;
	err = mtu_resolve(&e->cfg);
	if (err < 0) {
		free(e);
		errno = -err;
		return NULL;
	}
	cfg = &e->cfg;
	e->rng = ((uint64_t)getpid() << 32) ^ ice_now_ns() ^ 0x9e3779b97f4a7c15ull;
	e->rng ^= (uint64_t)(++engines_made) << 40;
	if (cfg->rx_drop_seed != 0)
		e->rng = cfg->rx_drop_seed;
	/* QPNs from a per-engine base, so stale packets of an earlier run do
	 * not match a new QP by accident. */
	e->qpn_base = 0x100 + (uint32_t)((e->rng >> 17) % 4000) * TP_MAX_QPS;
	e->port_pacer.ns = ice_now_ns();
	e->cq_cap = 4096;
	e->cq = calloc(e->cq_cap, sizeof(*e->cq));
	/* with GRO a message holds up to 64 KiB of packets */
	e->rx_buf_len = cfg->gso ? 65536 : cfg->mtu + 128;
	e->gso_on = cfg->gso;
	e->rx_bufs = malloc((size_t)TP_RX_BATCH * e->rx_buf_len);
	e->tx_bounce = malloc((size_t)TP_TX_BATCH * (cfg->mtu + 4));
	if (e->cq == NULL || e->rx_bufs == NULL || e->tx_bounce == NULL) {
		err = -ENOMEM;
		goto err_free;
	}
	e->rx_fd = rx_sock_open(e);
	if (e->rx_fd < 0) {
		err = e->rx_fd;
		goto err_free;
	}
	e->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e->wake_fd < 0) {
		err = -errno;
		close(e->rx_fd);
		goto err_free;
	}
	for (int i = 0; i < TP_RX_BATCH; i++) {
		e->rx_iov[i].iov_base = e->rx_bufs + (size_t)i * e->rx_buf_len;
		e->rx_iov[i].iov_len = e->rx_buf_len;
	}
	{
		char a[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &cfg->addr, a, sizeof(a));
		/* both are optional: without an agent the transport runs alone */
		e->ctrl = ice_ctrl_open(a, NULL);
		e->events = ice_event_tx_open(a, "ice-tp");
		ice_dbg(ICE_SUB_ENGINE, "engine on %s:%u, mtu %u, QPN base 0x%x, agent %s", a,
			e->port, cfg->mtu, e->qpn_base, e->ctrl ? "found" : "absent");
	}
	return e;

err_free:
	free(e->tx_bounce);
	free(e->rx_bufs);
	free(e->cq);
	free(e);
	errno = -err;
	return NULL;
}

void tp_engine_free(struct tp_engine *e)
{
	if (e == NULL)
		return;
	for (uint32_t i = 0; i < e->nqps; i++)
		if (e->qps[i] != NULL)
			tp_qp_destroy(e->qps[i]);
	for (int i = 0; i < TP_MAX_MRS; i++)
		free(e->mrs[i]);
	ice_ctrl_close(e->ctrl);
	ice_event_tx_close(e->events);
	close(e->rx_fd);
	close(e->wake_fd);
	free(e->tx_bounce);
	free(e->rx_bufs);
	free(e->cq);
	free(e);
}

const struct tp_engine_cfg *tp_engine_cfg(const struct tp_engine *e)
{
	return &e->cfg;
}

const struct tp_engine_stats *tp_engine_stats(const struct tp_engine *e)
{
	return &e->st;
}

uint16_t tp_engine_port(const struct tp_engine *e)
{
	return e->port;
}

void tp_cq_push(struct tp_engine *e, const struct tp_wc *wc)
{
	if (e->cq_tail - e->cq_head == e->cq_cap) {
		uint32_t ncap = e->cq_cap * 2;
		struct tp_wc *n = calloc(ncap, sizeof(*n));

		if (n == NULL) {
			/* Cannot lose a completion silently: this is fatal. */
			ice_err(ICE_SUB_ENGINE, "completion queue full and out of memory");
			abort();
		}
		for (uint32_t i = 0; i < e->cq_cap; i++)
			n[i] = e->cq[(e->cq_head + i) % e->cq_cap];
		free(e->cq);
		e->cq = n;
		e->cq_head = 0;
		e->cq_tail = e->cq_cap;
		e->cq_cap = ncap;
	}
	e->cq[e->cq_tail % e->cq_cap] = *wc;
	e->cq_tail++;
}

int tp_engine_poll_cq(struct tp_engine *e, struct tp_wc *wc, int n)
{
	int i = 0;

	while (i < n && e->cq_head != e->cq_tail) {
		wc[i++] = e->cq[e->cq_head % e->cq_cap];
		e->cq_head++;
	}
	return i;
}

struct tp_mr *tp_mr_reg(struct tp_engine *e, void *addr, size_t len)
{
	for (int i = 0; i < TP_MAX_MRS; i++) {
		if (e->mrs[i] != NULL)
			continue;
		e->mrs[i] = malloc(sizeof(*e->mrs[i]));
		if (e->mrs[i] == NULL)
			return NULL;
		e->mrs[i]->addr = addr;
		e->mrs[i]->len = len;
		e->mrs[i]->rkey = TP_RKEY_BASE + (uint32_t)i;
		return e->mrs[i];
	}
	errno = ENOSPC;
	return NULL;
}

void tp_mr_dereg(struct tp_engine *e, struct tp_mr *mr)
{
	if (mr == NULL)
		return;
	e->mrs[mr->rkey - TP_RKEY_BASE] = NULL;
	free(mr);
}

struct tp_mr *tp_mr_find(struct tp_engine *e, uint32_t rkey)
{
	if (rkey < TP_RKEY_BASE || rkey >= TP_RKEY_BASE + TP_MAX_MRS)
		return NULL;
	return e->mrs[rkey - TP_RKEY_BASE];
}

static uint64_t rng_next(struct tp_engine *e)
{
	/* xorshift64* */
	e->rng ^= e->rng >> 12;
	e->rng ^= e->rng << 25;
	e->rng ^= e->rng >> 27;
	return e->rng * 0x2545f4914f6cdd1dull;
}

/* A message's IP TOS, and with GRO the size of the packets it holds (0: one
 * packet). */
static uint8_t msg_info(struct msghdr *mh, size_t *seg)
{
	uint8_t tos = 0;

	*seg = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c))
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
			tos = *(uint8_t *)CMSG_DATA(c);
		} else if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO) {
			int v;

			memcpy(&v, CMSG_DATA(c), sizeof(v));
			*seg = v > 0 ? (size_t)v : 0;
		}
	return tos;
}

static void rx_one(struct tp_engine *e, uint8_t *buf, size_t len, const struct sockaddr_in *from,
		   uint8_t tos, uint64_t now)
{
	struct tp_icrc_addr a = {.saddr = from->sin_addr.s_addr,
				 .daddr = e->cfg.addr.s_addr,
				 .sport = ntohs(from->sin_port),
				 .dport = e->port};
	struct tp_pkt pkt;
	struct tp_qp *qp;
	uint32_t idx;
	int ret;

	e->st.rx_pkts++;
	e->st.rx_bytes += len;
	if (e->cfg.rx_drop_ppm != 0 && rng_next(e) % 1000000 < e->cfg.rx_drop_ppm)
		return; /* injected loss: as if the packet never arrived */
	ret = tp_pkt_parse(buf, len, e->cfg.icrc_verify ? &a : NULL, &pkt);
	if (ret < 0) {
		e->st.drops[tp_parse_reason(ret)]++;
		return;
	}
	idx = pkt.bth.dest_qp - e->qpn_base;
	if (idx >= e->nqps || (qp = e->qps[idx]) == NULL) {
		e->st.drops[TP_DROP_UNKNOWN_QP]++;
		return;
	}
	if (qp->state != TP_QPS_RTS) {
		e->st.drops[TP_DROP_QP_STATE]++;
		return;
	}
	if (from->sin_addr.s_addr != qp->peer.sin_addr.s_addr) {
		e->st.drops[TP_DROP_WRONG_PEER]++;
		return;
	}
	if (pkt.bth.pkey != qp->pkey) {
		e->st.drops[TP_DROP_BAD_PKEY]++;
		return;
	}
	tp_qp_rx(qp, &pkt, tos, from, now);
}

void tp_engine_rx_inject(struct tp_engine *e, uint8_t *buf, size_t len,
			 const struct sockaddr_in *from, uint8_t tos)
{
	rx_one(e, buf, len, from, tos, ice_now_ns());
	while (e->ack_list != NULL) {
		struct tp_qp *qp = e->ack_list;

		e->ack_list = qp->ack_next;
		qp->ack_next = NULL;
		tp_qp_flush_ack(qp);
	}
}

/* Receive until the socket is empty or a few batches were handled. */
static int rx_drain(struct tp_engine *e)
{
	int total = 0;

	e->rx_backlog = false;
	for (int round = 0; round < 8; round++) {
		int order[TP_RX_BATCH];
		uint64_t now;
		int n;

		for (int i = 0; i < TP_RX_BATCH; i++) {
			struct msghdr *mh = &e->rx_msgs[i].msg_hdr;

			mh->msg_name = &e->rx_from[i];
			mh->msg_namelen = sizeof(e->rx_from[i]);
			mh->msg_iov = &e->rx_iov[i];
			mh->msg_iovlen = 1;
			mh->msg_control = e->rx_ctrl[i];
			mh->msg_controllen = sizeof(e->rx_ctrl[i]);
			mh->msg_flags = 0;
		}
		n = recvmmsg(e->rx_fd, e->rx_msgs, TP_RX_BATCH, MSG_DONTWAIT, NULL);
		e->st.syscalls_rx++;
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				break;
			return -errno;
		}
		now = ice_now_ns();
		for (int i = 0; i < n; i++)
			order[i] = i;
		if (e->cfg.rx_reorder_ppm != 0) /* tests: swap neighbours */
			for (int i = 0; i + 1 < n; i++)
				if (rng_next(e) % 1000000 < e->cfg.rx_reorder_ppm) {
					int t = order[i];

					order[i] = order[i + 1];
					order[i + 1] = t;
					i++;
				}
		for (int k = 0; k < n; k++) {
			int i = order[k];
			struct msghdr *mh = &e->rx_msgs[i].msg_hdr;
			uint8_t *p = e->rx_iov[i].iov_base;
			size_t len = e->rx_msgs[i].msg_len, seg;
			uint8_t tos = msg_info(mh, &seg);
			int copies = 1;

			if (mh->msg_flags & MSG_TRUNC) {
				e->st.rx_pkts++;
				e->st.drops[TP_DROP_BAD_LENGTH]++;
				continue;
			}
			if (e->cfg.rx_dup_ppm != 0 && rng_next(e) % 1000000 < e->cfg.rx_dup_ppm)
				copies = 2; /* tests: the network duplicated it */
			/* GRO: packets of seg bytes, the last maybe shorter */
			if (seg == 0 || seg >= len)
				seg = len;
			else
				e->st.gro_rx++;
			/* (an empty datagram too: counted as truncated) */
			while (copies-- > 0) {
				size_t off = 0;

				do {
					rx_one(e, p + off, len - off < seg ? len - off : seg,
					       &e->rx_from[i], tos, now);
					off += seg;
				} while (off < len);
			}
		}
		total += n;
		/* one ACK per QP per batch: coalesced */
		while (e->ack_list != NULL) {
			struct tp_qp *qp = e->ack_list;

			e->ack_list = qp->ack_next;
			qp->ack_next = NULL;
			tp_qp_flush_ack(qp);
		}
		if (n < TP_RX_BATCH)
			return total;
	}
	/* more is waiting: an answer a timer waits for may be among it */
	e->rx_backlog = true;
	return total;
}

int tp_engine_progress(struct tp_engine *e, uint64_t max_wait_ns)
{
	uint64_t now, wake = UINT64_MAX;
	struct pollfd pfd[2];
	struct timespec ts;
	int rx, tx = 0;

	rx = rx_drain(e);
	if (rx < 0)
		return rx;
	now = ice_now_ns();
	if (e->ctrl != NULL)
		tp_ctrl_poll(e, now);
	/* QPs in turn, starting after the last one served: the port's line
	 * rate is shared round robin, as a NIC's send scheduler does */
	if (e->nqps > 0) {
		uint32_t start = e->tx_rr % e->nqps;

		for (uint32_t k = 0; k < e->nqps; k++) {
			uint32_t i = (start + k) % e->nqps;
			int n;

			if (e->qps[i] == NULL || e->qps[i]->state != TP_QPS_RTS)
				continue;
			n = tp_qp_tx(e->qps[i], now, &wake);
			if (n > 0)
				e->tx_rr = i + 1;
			tx += n;
		}
	}
	/* a queued completion (a receive that matched a message that had
	 * arrived) is work for the caller: do not sleep on the socket. A caller
	 * that leaves completions queued therefore polls instead of sleeping;
	 * returning early only once per new completion measured ~1 point worse
	 * in ice-train's data-parallel efficiency (95.2-96.7 % vs 97.3-97.7 %) */
	if (rx + tx > 0 || max_wait_ns == 0 || e->cq_head != e->cq_tail)
		return rx + tx;
	if (wake != UINT64_MAX) {
		uint64_t until = wake > now ? wake - now : 0;

		if (until < max_wait_ns)
			max_wait_ns = until;
	}
	if (max_wait_ns == 0)
		return 0;
	pfd[0] = (struct pollfd){.fd = e->rx_fd, .events = POLLIN};
	pfd[1] = (struct pollfd){.fd = e->wake_fd, .events = POLLIN};
	ts.tv_sec = (time_t)(max_wait_ns / ICE_NSEC_PER_SEC);
	ts.tv_nsec = (long)(max_wait_ns % ICE_NSEC_PER_SEC);
	if (ppoll(pfd, 2, &ts, NULL) <= 0)
		return 0;
	if (pfd[1].revents & POLLIN) {
		uint64_t v;

		if (read(e->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			return -errno;
	}
	return (pfd[0].revents & POLLIN) ? rx_drain(e) : 0;
}

void tp_engine_wake(struct tp_engine *e)
{
	uint64_t one = 1;

	/* a full counter (EAGAIN) already wakes the engine */
	if (write(e->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		ice_warn(ICE_SUB_ENGINE, "cannot wake the engine: %s", strerror(errno));
}

/* ---- the host agent's control block ------------------------------------------ */

void tp_ctrl_publish(struct tp_qp *qp)
{
	struct ice_ctrl_qp *q;

	if (qp->e->ctrl == NULL || qp->ctrl_slot < 0)
		return;
	q = &qp->e->ctrl->qp[qp->ctrl_slot];
	q->rqpn = qp->rqpn;
	q->local_ip = qp->e->cfg.addr.s_addr;
	q->remote_ip = qp->peer.sin_addr.s_addr;
	q->sport_now = qp->sport;
	q->rate_mbps_now = (uint32_t)(tp_dcqcn_rp_rate(&qp->rp) / 1e6);
	q->tx_bytes = qp->st.tx_bytes;
	q->rx_bytes = qp->st.rx_bytes;
	q->tx_pkts = qp->st.tx_pkts;
	q->rx_pkts = qp->st.rx_pkts;
	q->retx_pkts = qp->st.retx_pkts;
	q->cnps_rx = qp->st.cnps_rx;
	q->cnps_tx = qp->st.cnps_tx;
	q->ce_rx = qp->st.ce_rx;
}

/* Apply what the agent set for one QP (a plan: source port, rate, DCQCN).
 * What a plan does not set goes back to the QP's own defaults, so when the
 * agent clears a slot (the plan expired) the QP is plain RoCE again. */
static void ctrl_apply(struct tp_qp *qp)
{
	struct ice_ctrl_qp *q = &qp->e->ctrl->qp[qp->ctrl_slot];
	struct ice_dcqcn_params old = qp->dcqcn;
	struct ice_ctrl_qp c;
	uint16_t sport;

	if (!ice_ctrl_get(qp->e->ctrl, qp->ctrl_slot, &c) || c.seq == q->applied_seq)
		return;
	qp->dcqcn = (c.flags & ICE_CTRL_SET_DCQCN) != 0 ? c.dcqcn : qp->e->cfg.dcqcn;
	if (qp->dcqcn.rp_max_rate == 0 && qp->e->cfg.line_rate_bps != 0)
		qp->dcqcn.rp_max_rate = (uint32_t)(qp->e->cfg.line_rate_bps / 1000000);
	if (tp_qp_dcqcn_changed(qp) < 0)
		qp->dcqcn = old; /* refused and logged; keep the old ones */
	/* A planned rate is where the QP starts, then DCQCN moves it: a plan
	 * republished with the same rate (a new epoch) must not reset it. */
	if ((c.flags & ICE_CTRL_SET_RATE) != 0) {
		if (!qp->planned_rate || c.rate_mbps != qp->planned_mbps)
			tp_qp_set_rate(qp, (double)c.rate_mbps * 1e6);
		qp->planned_mbps = c.rate_mbps;
	} else if (qp->planned_rate) {
		tp_qp_set_rate(qp, 0); /* line rate, DCQCN from there */
	}
	qp->planned_rate = (c.flags & ICE_CTRL_SET_RATE) != 0;
	sport = (c.flags & ICE_CTRL_SET_SPORT) != 0 && c.sport != 0 ? c.sport : qp->sport_default;
	if (tp_qp_set_sport(qp, sport) < 0)
		ice_warn(ICE_SUB_ENGINE, "QP 0x%x: cannot move to source port %u", qp->qpn, sport);
	q->applied_epoch = c.epoch;
	__atomic_store_n(&q->applied_seq, c.seq, __ATOMIC_RELEASE);
	tp_ctrl_publish(qp);
}

void tp_ctrl_poll(struct tp_engine *e, uint64_t now)
{
	uint64_t v = ice_ctrl_version(e->ctrl);
	bool publish = now - e->ctrl_publish_ns >= 10 * ICE_NSEC_PER_MSEC;

	if (v == e->ctrl_seen && !publish)
		return;
	for (uint32_t i = 0; i < e->nqps; i++) {
		struct tp_qp *qp = e->qps[i];

		if (qp == NULL || qp->ctrl_slot < 0)
			continue;
		if (v != e->ctrl_seen)
			ctrl_apply(qp);
		if (publish)
			tp_ctrl_publish(qp);
	}
	e->ctrl_seen = v;
	if (publish)
		e->ctrl_publish_ns = now;
}
