// SPDX-License-Identifier: Apache-2.0
/*
 * The raw-socket backend: UDP sockets per source port (bound on first use)
 * send the probes with a per-packet TTL and receive the replies; a raw ICMP
 * socket receives time-exceeded and unreachable messages. What the UDP
 * sockets receive is given to the parser as a synthesized IPv4/UDP packet
 * (addresses from recvmsg, TTL from IP_RECVTTL), so it sees what DPDK sees.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ice_log.h"
#include "probe_io.h"

struct raw_io {
	struct probe_io io;
	int epfd;
	int icmp_fd;
	int *udp_fd; /* by port, -1 when not open; 65536 entries */
	int nudp;
	bool hw_ts;
};

int probe_ifname_of(struct in_addr addr, char *ifname, size_t len)
{
	struct ifaddrs *ifa, *i;
	int ret = -ENODEV;

	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (i = ifa; i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET)
			continue;
		if (((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == addr.s_addr) {
			snprintf(ifname, len, "%s", i->ifa_name);
			ret = 0;
			break;
		}
	}
	freeifaddrs(ifa);
	return ret;
}

static void set_timestamping(int fd)
{
	int on = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE |
		 SOF_TIMESTAMPING_RX_HARDWARE | SOF_TIMESTAMPING_RAW_HARDWARE;

	if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &on, sizeof(on)) < 0) {
		on = 1;
		setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on));
	}
}

static int raw_add_fd(struct raw_io *r, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

	return epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* The UDP socket of a source port, bound on first use; -errno. */
static int raw_udp(struct raw_io *r, uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd, on = 1, ret;

	if (r->udp_fd[port] >= 0)
		return r->udp_fd[port];
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	sa.sin_addr = r->io.local;
	setsockopt(fd, IPPROTO_IP, IP_RECVTTL, &on, sizeof(on));
	set_timestamping(fd);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		goto err_close;
	}
	ret = raw_add_fd(r, fd);
	if (ret < 0)
		goto err_close;
	r->udp_fd[port] = fd;
	r->nudp++;
	return fd;

err_close:
	close(fd);
	return ret;
}

static void raw_close(struct probe_io *io)
{
	struct raw_io *r = (struct raw_io *)io;

	if (r == NULL)
		return;
	if (r->udp_fd != NULL)
		for (int p = 0; p < 65536; p++)
			if (r->udp_fd[p] >= 0)
				close(r->udp_fd[p]);
	free(r->udp_fd);
	if (r->icmp_fd >= 0)
		close(r->icmp_fd);
	if (r->epfd >= 0)
		close(r->epfd);
	free(r);
}

static struct probe_io *raw_open(const struct probe_cfg *cfg, struct in_addr local)
{
	struct raw_io *r = calloc(1, sizeof(*r));
	int err;

	if (r == NULL)
		return NULL;
	r->io.ops = &probe_io_raw_ops;
	r->io.local = local;
	r->icmp_fd = -1;
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	r->udp_fd = malloc(65536 * sizeof(int));
	if (r->epfd < 0 || r->udp_fd == NULL) {
		err = errno;
		goto err_free;
	}
	for (int p = 0; p < 65536; p++)
		r->udp_fd[p] = -1;
	r->icmp_fd = socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_ICMP);
	if (r->icmp_fd < 0) {
		err = errno;
		ice_err(PROBE_LOG, "raw ICMP socket: %s (needs CAP_NET_RAW)", strerror(err));
		goto err_free;
	}
	set_timestamping(r->icmp_fd);
	err = -raw_add_fd(r, r->icmp_fd);
	if (err)
		goto err_free;
	(void)cfg;
	return &r->io;

err_free:
	raw_close(&r->io);
	errno = err;
	return NULL;
}

static int raw_send(struct probe_io *io, const struct probe_pkt *pkts, int n)
{
	struct raw_io *r = (struct raw_io *)io;
	int sent = 0;

	for (int i = 0; i < n; i++) {
		const uint8_t *p = pkts[i].data;
		size_t hl = (size_t)(p[0] & 0xf) * 4;
		uint16_t sport = (uint16_t)(p[hl] << 8 | p[hl + 1]);
		struct sockaddr_in to = {.sin_family = AF_INET};
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} c;
		struct iovec iov;
		struct msghdr msg = {.msg_name = &to,
				     .msg_namelen = sizeof(to),
				     .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = c.buf,
				     .msg_controllen = sizeof(c.buf)};
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		int fd = raw_udp(r, sport), ttl = p[8];

		if (fd < 0) {
			io->tx_err++;
			ice_dbg(PROBE_LOG, "source port %u: %s", sport, strerror(-fd));
			continue;
		}
		memcpy(&to.sin_addr, p + 16, 4);
		memcpy(&to.sin_port, p + hl + 2, 2);
		iov.iov_base = (void *)(p + hl + 8);
		iov.iov_len = pkts[i].len - hl - 8;
		cm->cmsg_level = IPPROTO_IP;
		cm->cmsg_type = IP_TTL;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &ttl, sizeof(int));
		if (sendmsg(fd, &msg, MSG_DONTWAIT) < 0) {
			io->tx_err++;
			continue;
		}
		sent++;
	}
	io->tx_pkts += sent;
	return sent;
}

/* Arrival time from the control messages; 0 when none. */
static uint64_t raw_cmsg_ts(struct raw_io *r, struct msghdr *msg, int *ttl)
{
	uint64_t ts = 0;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_TIMESTAMPING) {
			struct scm_timestamping st;

			memcpy(&st, CMSG_DATA(cm), sizeof(st));
			if (st.ts[2].tv_sec != 0) {
				r->hw_ts = true;
				ts = (uint64_t)st.ts[2].tv_sec * 1000000000ull + st.ts[2].tv_nsec;
			} else {
				ts = (uint64_t)st.ts[0].tv_sec * 1000000000ull + st.ts[0].tv_nsec;
			}
		} else if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_TIMESTAMPNS) {
			struct timespec t;

			memcpy(&t, CMSG_DATA(cm), sizeof(t));
			ts = (uint64_t)t.tv_sec * 1000000000ull + t.tv_nsec;
		} else if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_TTL && ttl) {
			memcpy(ttl, CMSG_DATA(cm), sizeof(int));
		}
	}
	return ts;
}

/* Read one datagram from fd into pkt (IPv4 packet); 1, 0 (nothing), -errno. */
static int raw_read(struct raw_io *r, int fd, struct probe_pkt *pkt)
{
	struct sockaddr_in from;
	char cbuf[256];
	struct iovec iov;
	struct msghdr msg = {.msg_name = &from,
			     .msg_namelen = sizeof(from),
			     .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf)};
	ssize_t n;
	int ttl = 64;

	if (fd == r->icmp_fd) {
		iov.iov_base = pkt->data;
		iov.iov_len = sizeof(pkt->data);
	} else {
		iov.iov_base = pkt->data + 28;
		iov.iov_len = sizeof(pkt->data) - 28;
	}
	n = recvmsg(fd, &msg, MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	pkt->ts_ns = raw_cmsg_ts(r, &msg, &ttl);
	if (pkt->ts_ns == 0)
		pkt->ts_ns = ice_wall_ns();
	if (fd == r->icmp_fd) {
		pkt->len = (uint16_t)n; /* a raw socket gives the IP header */
		return 1;
	}
	{
		struct sockaddr_in me;
		socklen_t sl = sizeof(me);
		uint8_t *ip = pkt->data, *udp = pkt->data + 20;
		size_t tot = 28 + (size_t)n;

		getsockname(fd, (struct sockaddr *)&me, &sl);
		memset(ip, 0, 28);
		ip[0] = 0x45;
		ip[2] = tot >> 8;
		ip[3] = tot;
		ip[8] = ttl;
		ip[9] = IPPROTO_UDP;
		memcpy(ip + 12, &from.sin_addr, 4);
		memcpy(ip + 16, &r->io.local, 4);
		memcpy(udp, &from.sin_port, 2);
		memcpy(udp + 2, &me.sin_port, 2);
		udp[4] = (8 + n) >> 8;
		udp[5] = 8 + n;
		pkt->len = (uint16_t)tot;
	}
	return 1;
}

static int raw_recv(struct probe_io *io, struct probe_pkt *pkts, int max, uint64_t timeout_ns)
{
	struct raw_io *r = (struct raw_io *)io;
	struct epoll_event ev[64];
	int got = 0, n, ms = (int)((timeout_ns + 999999) / 1000000);

	n = epoll_wait(r->epfd, ev, 64, ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n && got < max; i++) {
		int ret;

		while (got < max && (ret = raw_read(r, ev[i].data.fd, &pkts[got])) > 0)
			got++;
	}
	io->rx_pkts += got;
	return got;
}

static int raw_listen(struct probe_io *io, uint16_t port)
{
	int fd = raw_udp((struct raw_io *)io, port);

	return fd < 0 ? fd : 0;
}

static const char *raw_timestamps(struct probe_io *io)
{
	return ((struct raw_io *)io)->hw_ts ? "nic-hw" : "kernel-sw";
}

const struct probe_io_ops probe_io_raw_ops = {
	.name = "raw",
	.open = raw_open,
	.send = raw_send,
	.recv = raw_recv,
	.listen = raw_listen,
	.timestamps = raw_timestamps,
	.close = raw_close,
};

const struct probe_io_ops *probe_io_ops_get(int backend)
{
	if (backend == PROBE_BACKEND_RAW)
		return &probe_io_raw_ops;
#ifdef ICE_PROBE_DPDK
	if (backend == PROBE_BACKEND_DPDK)
		return &probe_io_dpdk_ops;
#endif
	return NULL;
}
