/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nic_fixture: a directory tree that mirrors what an mlx5 NIC shows under
 * /sys (and the replies its kernel interfaces give), for the NIC backend's
 * tests, its benchmark and the end-to-end test (ice-nic-fixture).
 *
 * Mirrors (from the kernel sources and NVIDIA's documentation; no device
 * was captured, there is none here):
 *   - sysfs class/infiniband/<dev>/ports/<p>/counters/ and hw_counters/ as
 *     upstream mlx5_ib of Linux 5.15-6.x lists them (ConnectX-5/6, RoCE);
 *   - DCQCN: upstream debugfs mlx5/<pci>/cc_params/ (mlx5_ib cong.c names)
 *     or MLNX_OFED 5.x/23.x class/net/<if>/ecn/roce_rp|roce_np/ (enable
 *     per priority 0-7, the other parameters one file each);
 *   - ice-replay/ethtool/<if>: `ethtool -S` of an mlx5e port (a subset:
 *     the per-priority and *_phy counters, some per-queue ones);
 *   - ice-replay/dcb/<if>: the RTM_GETDCB DCB_CMD_IEEE_GET reply (ETS and
 *     PFC, pfc_en = priority 3 as a RoCE fabric configures it);
 *   - ice-replay/rdma/: RDMA netlink dump replies (device list, RES_QP,
 *     STAT_GET of QP counters) laid out as drivers/infiniband/core/nldev.c
 *     builds them, NLA_F_NESTED on nests, several messages per dump.
 */
#ifndef ICE_NIC_FIXTURE_H
#define ICE_NIC_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum nic_fixture_driver {
	NIC_FIXTURE_UPSTREAM = 0, /* debugfs cc_params */
	NIC_FIXTURE_OOT,	  /* sysfs ecn/ (MLNX_OFED) */
};

struct nic_fixture {
	char root[256];
	char ifname[16], dev[16], pci[16];
	uint32_t dev_index;
	enum nic_fixture_driver driver;
	unsigned nports, nqps;
	uint64_t tick;	 /* port counters advance with it */
	uint64_t *qtick; /* per QP: how often its counters advanced */
	/* when not 0: rx_prio<p>_pause_duration (us) instead of the pattern */
	uint64_t rx_pause_us[8];
	uint8_t pfc_en; /* the lossless priorities in the DCB reply (0x08) */
};

/* Build the tree under root (created; must not exist or be empty). 0 or -errno. */
int nic_fixture_make(struct nic_fixture *f, const char *root, enum nic_fixture_driver drv,
		     unsigned nports, unsigned nqps);
/* Advance: the port counters of every port, the ethtool statistics, and
 * the bound counters of the first `changed` QPs (the rest stay). */
int nic_fixture_tick(struct nic_fixture *f, unsigned changed);
/* Write the DCB reply again (after pfc_en changed). */
int nic_fixture_write_dcb(const struct nic_fixture *f);
/* Write text into <root>/<rel> (replacing it). */
int nic_fixture_put(const struct nic_fixture *f, const char *rel, const char *text);
/* Read a decimal from <root>/<rel>; -1 when missing or garbage. */
long long nic_fixture_get(const struct nic_fixture *f, const char *rel);
/* rm -rf the tree (and free qtick). */
void nic_fixture_remove(struct nic_fixture *f);

/* What a counter holds at tick t (tests compute expectations with it). */
uint64_t nic_fixture_value(unsigned port, unsigned which, uint64_t t);
/* Values the fixture gives the QP counters of QP i at tick t. */
uint64_t nic_fixture_qp_value(unsigned qp, unsigned which, uint64_t t);
/* The first QPN of the fixture's QPs (they follow in order). */
#define NIC_FIXTURE_QPN0 0x100

#endif /* ICE_NIC_FIXTURE_H */
