// SPDX-License-Identifier: Apache-2.0
/*
 * The DPDK backend: EAL from cfg->dpdk_eal ("{if}" becomes the NIC's
 * interface), port 0 with one RX and one TX queue, frames built here
 * (Ethernet + the IPv4 packet of the layer above). The next hop's MAC is
 * cfg->dpdk_gw_mac or, in the test bed, the kernel's ARP entry for the
 * interface's gateway. Timestamps: CLOCK_REALTIME read at rx_burst (the TSC rate
 * DPDK estimates in a VM drifted by milliseconds per second against it).
 * One EAL per process (DPDK's rule); its runtime directory is
 * /var/run/dpdk/iceprobe<pid>, removed at close. DPDK's log goes through
 * ice_log.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include "ice_log.h"
#include "ice_time.h"
#include "probe_io.h"

#define DPDK_BURST 32

struct dpdk_io {
	struct probe_io io;
	uint16_t port;
	struct rte_mempool *pool;
	struct rte_ether_addr mac, gw;
	uint64_t tsc_hz;
	char prefix[64];
};

static bool eal_up;

static ssize_t dpdk_log_write(void *c, const char *buf, size_t len)
{
	int n = (int)len;

	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	if (n > 0)
		ice_info(PROBE_LOG, "dpdk: %.*s", n, buf);
	(void)c;
	return (ssize_t)len;
}

static int parse_mac(const char *s, struct rte_ether_addr *m)
{
	unsigned b[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		m->addr_bytes[i] = (uint8_t)b[i];
	return 0;
}

/* The kernel's ARP entry for a gateway of ifname (after making it resolve). */
static int gw_mac_from_kernel(const char *ifname, struct rte_ether_addr *m)
{
	char line[256], dev[64], mac[32], ip[32];
	unsigned dst, gw, flags;
	struct in_addr gwa = {0};
	FILE *f = fopen("/proc/net/route", "r");

	if (f == NULL)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %x %x %x", dev, &dst, &gw, &flags) == 4 &&
		    strcmp(dev, ifname) == 0 && (flags & 2) && gw != 0) {
			gwa.s_addr = gw;
			break;
		}
	fclose(f);
	if (gwa.s_addr == 0)
		return -ENOENT;
	for (int tries = 0; tries < 20; tries++) {
		int fd = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in sa = {
			.sin_family = AF_INET, .sin_port = htons(9), .sin_addr = gwa};

		if (fd >= 0) { /* makes the kernel resolve the gateway */
			sendto(fd, "ice", 3, MSG_DONTWAIT, (struct sockaddr *)&sa, sizeof(sa));
			close(fd);
		}
		f = fopen("/proc/net/arp", "r");
		if (f == NULL)
			return -errno;
		while (fgets(line, sizeof(line), f)) {
			struct in_addr a;

			if (sscanf(line, "%31s %*s %x %31s %*s %63s", ip, &flags, mac, dev) == 4 &&
			    strcmp(dev, ifname) == 0 && (flags & 2) && inet_aton(ip, &a) &&
			    a.s_addr == gwa.s_addr) {
				fclose(f);
				return parse_mac(mac, m);
			}
		}
		fclose(f);
		ice_sleep_ns(50 * ICE_NSEC_PER_MSEC);
	}
	return -EHOSTUNREACH;
}

static void dpdk_close(struct probe_io *io)
{
	struct dpdk_io *d = (struct dpdk_io *)io;
	char cmd[160];

	if (d == NULL)
		return;
	rte_eth_dev_stop(d->port);
	rte_eth_dev_close(d->port);
	rte_mempool_free(d->pool);
	rte_eal_cleanup();
	snprintf(cmd, sizeof(cmd), "/var/run/dpdk/%s", d->prefix);
	if (strncmp(d->prefix, "iceprobe", 8) == 0) {
		char rm[200];

		snprintf(rm, sizeof(rm), "rm -rf '%s'", cmd);
		if (system(rm) != 0)
			ice_warn(PROBE_LOG, "could not remove %s", cmd);
	}
	free(d);
}

static struct probe_io *dpdk_open(const struct probe_cfg *cfg, struct in_addr local)
{
	struct rte_eth_conf conf = {0};
	struct dpdk_io *d;
	char args[768], ifname[IF_NAMESIZE + 1], *argv[64], *save = NULL, *tok;
	int argc = 0, ret, err;
	FILE *logf;

	if (eal_up) {
		errno = EALREADY; /* DPDK allows one EAL per process */
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return NULL;
	d->io.ops = &probe_io_dpdk_ops;
	d->io.local = local;
	ret = probe_ifname_of(local, ifname, sizeof(ifname));
	if (ret < 0) {
		ice_err(PROBE_LOG, "dpdk: no interface holds %s", inet_ntoa(local));
		err = -ret;
		goto err_free;
	}
	if (cfg->dpdk_gw_mac[0] != '\0')
		ret = parse_mac(cfg->dpdk_gw_mac, &d->gw);
	else
		ret = gw_mac_from_kernel(ifname, &d->gw);
	if (ret < 0) {
		ice_err(PROBE_LOG, "dpdk: next-hop MAC of %s: %s (set dpdk_gw_mac)", ifname,
			strerror(-ret));
		err = -ret;
		goto err_free;
	}
	/* argv: program name, the configured arguments with {if}, a file prefix */
	{
		const char *s = cfg->dpdk_eal;
		size_t o = 0;

		while (*s != '\0' && o + IF_NAMESIZE + 1 < sizeof(args)) {
			if (strncmp(s, "{if}", 4) == 0) {
				o += (size_t)snprintf(args + o, sizeof(args) - o, "%s", ifname);
				s += 4;
			} else {
				args[o++] = *s++;
			}
		}
		args[o] = '\0';
	}
	snprintf(d->prefix, sizeof(d->prefix), "iceprobe%d", (int)getpid());
	argv[argc++] = (char *)"ice-probe";
	for (tok = strtok_r(args, " \t", &save); tok != NULL && argc < 60;
	     tok = strtok_r(NULL, " \t", &save))
		argv[argc++] = tok;
	{
		static char fp[96];

		snprintf(fp, sizeof(fp), "--file-prefix=%s", d->prefix);
		argv[argc++] = fp;
	}
	argv[argc] = NULL;
	logf = fopencookie(NULL, "w", (cookie_io_functions_t){.write = dpdk_log_write});
	if (logf != NULL) {
		setvbuf(logf, NULL, _IOLBF, 0);
		rte_openlog_stream(logf);
	}
	rte_log_set_global_level(RTE_LOG_NOTICE);
	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		err = rte_errno;
		ice_err(PROBE_LOG, "dpdk: EAL init failed (%s): %s", cfg->dpdk_eal, strerror(err));
		goto err_free;
	}
	eal_up = true;
	if (rte_eth_dev_count_avail() == 0) {
		ice_err(PROBE_LOG, "dpdk: no ethernet port (dpdk_eal needs a --vdev or a device)");
		err = ENODEV;
		goto err_eal;
	}
	d->port = 0;
	d->pool = rte_pktmbuf_pool_create("iceprobe", 1023, 32, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					  rte_socket_id());
	if (d->pool == NULL) {
		err = rte_errno;
		goto err_eal;
	}
	if ((ret = rte_eth_dev_configure(d->port, 1, 1, &conf)) < 0 ||
	    (ret = rte_eth_rx_queue_setup(d->port, 0, 256, rte_socket_id(), NULL, d->pool)) < 0 ||
	    (ret = rte_eth_tx_queue_setup(d->port, 0, 256, rte_socket_id(), NULL)) < 0 ||
	    (ret = rte_eth_dev_start(d->port)) < 0) {
		err = -ret;
		ice_err(PROBE_LOG, "dpdk: port setup: %s", strerror(err));
		goto err_pool;
	}
	rte_eth_macaddr_get(d->port, &d->mac);
	d->tsc_hz = rte_get_tsc_hz();
	ice_info(PROBE_LOG, "dpdk: port %u on %s, TSC %.0f MHz", d->port, ifname, d->tsc_hz / 1e6);
	return &d->io;

err_pool:
	rte_mempool_free(d->pool);
err_eal:
	rte_eal_cleanup();
err_free:
	free(d);
	errno = err;
	return NULL;
}

static int dpdk_send(struct probe_io *io, const struct probe_pkt *pkts, int n)
{
	struct dpdk_io *d = (struct dpdk_io *)io;
	struct rte_mbuf *m[DPDK_BURST];
	int sent = 0;

	while (sent < n) {
		int k = n - sent < DPDK_BURST ? n - sent : DPDK_BURST, ok;

		if (rte_pktmbuf_alloc_bulk(d->pool, m, k) < 0)
			return sent > 0 ? sent : -ENOMEM;
		for (int i = 0; i < k; i++) {
			const struct probe_pkt *p = &pkts[sent + i];
			struct rte_ether_hdr *eh =
				(void *)rte_pktmbuf_append(m[i], sizeof(*eh) + p->len);

			eh->dst_addr = d->gw;
			eh->src_addr = d->mac;
			eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
			memcpy(eh + 1, p->data, p->len);
		}
		ok = rte_eth_tx_burst(d->port, 0, m, (uint16_t)k);
		for (int i = ok; i < k; i++)
			rte_pktmbuf_free(m[i]);
		io->tx_err += (uint64_t)(k - ok);
		sent += k;
		io->tx_pkts += ok;
	}
	return n;
}

static int dpdk_recv(struct probe_io *io, struct probe_pkt *pkts, int max, uint64_t timeout_ns)
{
	struct dpdk_io *d = (struct dpdk_io *)io;
	uint64_t end = ice_now_ns() + timeout_ns;
	struct rte_mbuf *m[DPDK_BURST];
	int got = 0;

	do {
		uint16_t n = rte_eth_rx_burst(d->port, 0, m, DPDK_BURST);
		/* CLOCK_REALTIME at rx_burst, the clock t1 is stamped with: the TSC
		 * rate DPDK estimates in a VM drifts by ms per second against it */
		uint64_t now = ice_wall_ns();

		for (uint16_t i = 0; i < n; i++) {
			const struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m[i], void *);
			size_t len = rte_pktmbuf_data_len(m[i]);

			if (got < max && len > sizeof(*eh) &&
			    eh->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) &&
			    !rte_is_same_ether_addr(&eh->src_addr, &d->mac)) {
				len -= sizeof(*eh);
				if (len > PROBE_PKT_MAX)
					len = PROBE_PKT_MAX;
				memcpy(pkts[got].data, eh + 1, len);
				pkts[got].len = (uint16_t)len;
				pkts[got].ts_ns = now;
				got++;
			}
			rte_pktmbuf_free(m[i]);
		}
		if (got > 0)
			break;
		if (n == 0)
			rte_delay_us_sleep(20); /* a shared 2-core box: do not spin hard */
	} while (ice_now_ns() < end);
	io->rx_pkts += got;
	return got;
}

static int dpdk_listen(struct probe_io *io, uint16_t port)
{
	return 0; /* every frame of the port reaches dpdk_recv */
}

static const char *dpdk_timestamps(struct probe_io *io)
{
	return "rx-burst";
}

const struct probe_io_ops probe_io_dpdk_ops = {
	.name = "dpdk",
	.open = dpdk_open,
	.send = dpdk_send,
	.recv = dpdk_recv,
	.listen = dpdk_listen,
	.timestamps = dpdk_timestamps,
	.close = dpdk_close,
};
