// SPDX-License-Identifier: Apache-2.0
/*
 * The raw-socket backend. Three raw IPv4 sockets and no UDP port bound, so
 * it runs beside a RoCE engine that owns UDP 4791 and beside QPs bound to
 * the source ports it probes (the ports a controller hands out from its
 * maps): whole probe packets (TTL in the header) go out through an
 * IPPROTO_RAW socket; probe UDP packets come in through an IPPROTO_UDP raw
 * socket, a copy next to whatever the kernel delivers, which a socket
 * filter narrows to the probe's magic; a raw ICMP socket receives
 * time-exceeded and unreachable messages. A host without a socket on the
 * port answers with a port unreachable as well, which the layers above
 * tell from a reply.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/errqueue.h>
#include <linux/filter.h>
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
#include "probe_wire.h"

struct raw_io {
	struct probe_io io;
	int epfd;
	int icmp_fd; /* ICMP in */
	int udp_fd;  /* probe UDP in (filtered) */
	int tx_fd;   /* whole IPv4 packets out */
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

/* Only UDP packets whose payload carries the probe magic reach the socket
 * (the filter sees the IPv4 header at offset 0): the RoCE traffic of the
 * host is not copied to user space. */
static int udp_filter(int fd)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),			/* x = IP header len */
		BPF_STMT(BPF_LD | BPF_W | BPF_IND, 8 + 12),		/* UDP payload + 12 */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROBE_MAGIC, 0, 1), /* "ICEP" */
		BPF_STMT(BPF_RET | BPF_K, PROBE_PKT_MAX),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0 ? -errno : 0;
}

static void raw_close(struct probe_io *io)
{
	struct raw_io *r = (struct raw_io *)io;

	if (r == NULL)
		return;
	if (r->tx_fd >= 0)
		close(r->tx_fd);
	if (r->udp_fd >= 0)
		close(r->udp_fd);
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
	r->icmp_fd = r->udp_fd = r->tx_fd = -1;
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (r->epfd < 0) {
		err = errno;
		goto err_free;
	}
	r->icmp_fd = socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_ICMP);
	r->udp_fd = socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
	r->tx_fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	if (r->icmp_fd < 0 || r->udp_fd < 0 || r->tx_fd < 0) {
		err = errno;
		ice_err(PROBE_LOG, "raw IPv4 sockets: %s (needs CAP_NET_RAW)", strerror(err));
		goto err_free;
	}
	err = -udp_filter(r->udp_fd);
	if (err) {
		ice_err(PROBE_LOG, "socket filter: %s", strerror(err));
		goto err_free;
	}
	set_timestamping(r->icmp_fd);
	set_timestamping(r->udp_fd);
	err = -raw_add_fd(r, r->icmp_fd);
	if (err == 0)
		err = -raw_add_fd(r, r->udp_fd);
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
		struct sockaddr_in to = {.sin_family = AF_INET};

		memcpy(&to.sin_addr, pkts[i].data + 16, 4);
		if (sendto(r->tx_fd, pkts[i].data, pkts[i].len, MSG_DONTWAIT,
			   (struct sockaddr *)&to, sizeof(to)) < 0) {
			io->tx_err++;
			ice_dbg(PROBE_LOG, "send to %s: %s", inet_ntoa(to.sin_addr),
				strerror(errno));
			continue;
		}
		sent++;
	}
	io->tx_pkts += sent;
	return sent;
}

/* Arrival time from the control messages; 0 when none. */
static uint64_t raw_cmsg_ts(struct raw_io *r, struct msghdr *msg)
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
		}
	}
	return ts;
}

/* Read one IPv4 packet from a raw socket into pkt; 1, 0 (nothing), -errno. */
static int raw_read(struct raw_io *r, int fd, struct probe_pkt *pkt)
{
	char cbuf[256];
	struct iovec iov = {.iov_base = pkt->data, .iov_len = sizeof(pkt->data)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf)};
	ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);

	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	pkt->ts_ns = raw_cmsg_ts(r, &msg);
	if (pkt->ts_ns == 0)
		pkt->ts_ns = ice_wall_ns();
	pkt->len = (uint16_t)n; /* a raw socket gives the IP header */
	return 1;
}

static int raw_recv(struct probe_io *io, struct probe_pkt *pkts, int max, uint64_t timeout_ns)
{
	struct raw_io *r = (struct raw_io *)io;
	struct epoll_event ev[8];
	int got = 0, n, ms = (int)((timeout_ns + 999999) / 1000000);

	n = epoll_wait(r->epfd, ev, 8, ms);
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

/* Nothing to bind: the raw UDP socket sees the probes to any port, and
 * binding would take the port from a RoCE engine that wants it. */
static int raw_listen(struct probe_io *io, uint16_t port)
{
	(void)io;
	(void)port;
	return 0;
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
