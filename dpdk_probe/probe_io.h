/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_io: the I/O backends behind one ops table. Packets cross it as IPv4
 * packets from the IP header on (probe_wire.h builds and parses them), with
 * CLOCK_REALTIME nanosecond timestamps, so the layers above are the same
 * for every backend.
 *
 *   raw  — raw IPv4 sockets, no UDP port bound (so it runs beside a RoCE
 *          engine on 4791 and QPs on the probed ports): whole packets out
 *          through IPPROTO_RAW, probe UDP in through a filtered IPPROTO_UDP
 *          socket, ICMP through IPPROTO_ICMP; kernel receive timestamps
 *          (SO_TIMESTAMPING, hardware when the NIC gives them, else
 *          software).
 *   dpdk — one EAL port (cfg->dpdk_eal; an af_packet or tap vdev in the test
 *          bed), rte_eth_tx_burst / rte_eth_rx_burst, CLOCK_REALTIME read at
 *          rx_burst (the TSC-derived clock drifted against it in this VM).
 */
#ifndef ICE_PROBE_IO_H
#define ICE_PROBE_IO_H

#include <netinet/in.h>
#include <stdint.h>
#include <time.h>

#include "ice_time.h"

#include "probe.h"

struct probe_pkt {
	uint16_t len;
	uint64_t ts_ns; /* rx: arrival (CLOCK_REALTIME ns) */
	uint8_t data[PROBE_PKT_MAX];
};

struct probe_io {
	const struct probe_io_ops *ops;
	struct in_addr local;
	uint64_t tx_pkts, tx_err, rx_pkts;
};

struct probe_io_ops {
	const char *name;
	/* NULL + errno; the NIC is the one holding local. */
	struct probe_io *(*open)(const struct probe_cfg *cfg, struct in_addr local);
	/* Send n IPv4 packets; returns how many went out (failures counted in
	 * io->tx_err) or -errno. */
	int (*send)(struct probe_io *io, const struct probe_pkt *pkts, int n);
	/* Receive up to max packets, waiting at most timeout_ns for the first.
	 * Returns the count (0 on timeout) or -errno. */
	int (*recv)(struct probe_io *io, struct probe_pkt *pkts, int max, uint64_t timeout_ns);
	/* Receive probes sent to this local UDP port (a responder). 0 or -errno. */
	int (*listen)(struct probe_io *io, uint16_t port);
	/* Where timestamps come from, e.g. "kernel-sw", "nic-hw", "tsc". */
	const char *(*timestamps)(struct probe_io *io);
	void (*close)(struct probe_io *io); /* NULL-safe */
};

extern const struct probe_io_ops probe_io_raw_ops;
#ifdef ICE_PROBE_DPDK
extern const struct probe_io_ops probe_io_dpdk_ops;
#endif
/* The ops of a backend; NULL when not built in. */
const struct probe_io_ops *probe_io_ops_get(int backend);

/* Interface name of the NIC holding addr (getifaddrs); 0 or -ENODEV. */
int probe_ifname_of(struct in_addr addr, char *ifname, size_t len);

#endif /* ICE_PROBE_IO_H */
