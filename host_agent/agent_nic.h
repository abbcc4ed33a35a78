/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent_nic: the NIC backend of the agent (backend: mlx5), beside the
 * included-transport backend. For RoCE done in NIC hardware, where the host
 * BPF programs see nothing:
 *
 *   - telemetry: the RDMA device's port counters (sysfs
 *     class/infiniband/<dev>/ports/<p>/counters/ and hw_counters/), the
 *     netdev's ethtool statistics (per-priority PFC pause counters among
 *     them; ETHTOOL_GSTATS) and the device's QPs with their state and bound
 *     counters (RDMA netlink, what `rdma resource show qp` and `rdma
 *     statistic qp show` use);
 *   - DCQCN: the controller's profile written through whichever interface
 *     the NIC has (agent_nic_cc.c): the upstream driver's debugfs
 *     mlx5/<pci>/cc_params/ (device-wide) or NVIDIA's out-of-tree
 *     class/net/<if>/ecn/roce_rp|roce_np/ (enable per priority); the NIC's
 *     own values saved first and written back on fallback and exit.
 *
 * Every path is read under a root directory (cfg->sysroot, "/" on a real
 * host), so that tests run on fixture trees. ioctl and netlink sit behind
 * struct agent_nic_io: the kernel's, or a replay of recorded replies under
 * <sysroot>/ice-replay/ (tests and the end-to-end test on fixtures).
 *
 * Bad input: a counter or parameter file that is missing, unreadable or
 * holds something other than a decimal number is reported unsupported once
 * (logged, listed in the :dev hash) and left alone from then on; the rest
 * goes on.
 *
 * Errors: 0 or -errno; constructors NULL + errno.
 */
#ifndef ICE_AGENT_NIC_H
#define ICE_AGENT_NIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent.h"
#include "ice_config.h"
#include "ice_dcqcn.h"

struct agent_buf;

/* ------------------------------------------------------------------ I/O */

#define AGENT_NIC_NAME_MAX 48

/* RDMA netlink requests the backend makes (replay files are named after them) */
enum agent_nic_req {
	AGENT_NIC_REQ_DEV = 0, /* RDMA_NLDEV_CMD_GET dump: device names and indexes */
	AGENT_NIC_REQ_RES_QP,  /* RDMA_NLDEV_CMD_RES_QP_GET dump of one device */
	AGENT_NIC_REQ_STAT_QP, /* RDMA_NLDEV_CMD_STAT_GET dump, STAT_RES = QP */
};

struct agent_nic_io {
	/* The names of the netdev's ethtool statistics (ETH_SS_STATS):
	 * *names is n * AGENT_NIC_NAME_MAX bytes, malloc'ed, the caller frees. */
	int (*eth_names)(void *ctx, const char *ifname, char **names, size_t *n);
	/* Their values (ETHTOOL_GSTATS) into vals[n]; -ESTALE when the count
	 * changed (the names are read again). */
	int (*eth_values)(void *ctx, const char *ifname, uint64_t *vals, size_t n);
	/* One RDMA netlink dump: the request (one nlmsghdr with attributes)
	 * out, every reply message up to NLMSG_DONE back, concatenated in
	 * *out (malloc'ed, the caller frees). A NLMSG_ERROR reply: its -errno. */
	int (*rdma_dump)(void *ctx, enum agent_nic_req kind, const void *req, size_t len,
			 uint8_t **out, size_t *outlen);
	/* The netdev's IEEE DCB configuration (RTM_GETDCB, DCB_CMD_IEEE_GET):
	 * the reply message bytes in *out (malloc'ed, the caller frees). */
	int (*dcb_get)(void *ctx, const char *ifname, uint8_t **out, size_t *outlen);
	/* Write one DCQCN parameter file; -errno as the driver answers. */
	int (*param_write)(void *ctx, const char *path, uint32_t value);
	void *ctx;
};

/* The kernel's: ioctl(SIOCETHTOOL), a NETLINK_RDMA socket, write(2). */
extern const struct agent_nic_io agent_nic_io_kernel;
/* Replays <root>/ice-replay/ethtool/<if> ("name value" lines),
 * <root>/ice-replay/dcb/<if> (the RTM_GETDCB reply) and
 * <root>/ice-replay/rdma/<dev>.{dev,res_qp,stat_qp} (the reply bytes as the
 * kernel sends them), read afresh at each call; parameter writes as the
 * kernel's. io->ctx is malloc'ed: agent_nic_io_fini() frees it. */
int agent_nic_io_replay(struct agent_nic_io *io, const char *root);
void agent_nic_io_fini(struct agent_nic_io *io);

/* ----------------------------------------------------- RDMA netlink codec */

/* A QP as the device reports it (RES_QP_ENTRY), with the counter bound to
 * it alone (a STAT_COUNTER whose RES_QP table holds just this QP), when
 * any; counters shared by several QPs are not attributed. */
struct agent_nic_qp {
	uint32_t lqpn, rqpn, pid, port;
	uint8_t type, state; /* enum ib_qp_type; RDMA_NLDEV QP state (ib_qp_state) */
	bool has_rqpn, has_ctr;
	uint64_t cc_rx_ce, cc_rx_cnp, cc_tx_cnp; /* mlx5 optional counters (when bound) */
	uint64_t out_of_sequence, packet_seq_err, local_ack_timeout_err, rnr_nak_retry_err;
};

/* The PFC enable bitmap (ieee_pfc.pfc_en) of a DCB_CMD_IEEE_GET reply;
 * -ENODATA when it has no DCB_ATTR_IEEE_PFC, -EBADMSG when malformed. */
int agent_nic_dcb_pfc(const uint8_t *buf, size_t len, uint8_t *pfc_en);

/* Build one dump request into buf (at least 64 bytes); its length. */
size_t agent_nic_nl_request(uint8_t *buf, size_t len, enum agent_nic_req kind, uint32_t dev_index,
			    uint32_t seq);
/* The index of device name in a REQ_DEV reply; -ENODEV when absent. */
int agent_nic_nl_dev_index(const uint8_t *buf, size_t len, const char *name, uint32_t *index);
/* Parse a RES_QP reply: the QPs replace *qps[0..*n) (grown as needed).
 * -EBADMSG on a truncated or malformed message (what was parsed stays). */
int agent_nic_nl_res_qp(const uint8_t *buf, size_t len, struct agent_nic_qp **qps, size_t *n,
			size_t *cap);
/* Parse a STAT_QP reply: counters onto the QPs of qps[0..n) by LQPN. */
int agent_nic_nl_stat_qp(const uint8_t *buf, size_t len, struct agent_nic_qp *qps, size_t n);

/* ----------------------------------------------------------- the backend */

struct agent_nic;

/* Open the backend for cfg (backend "mlx5"): find the RDMA device and its
 * ports, open the counter files, read the NIC's DCQCN parameters (saved for
 * restore). io NULL: the kernel's (or the replay with nic_io "replay"); the
 * backend copies it. NULL + errno, logged. */
struct agent_nic *agent_nic_new(const struct agent_cfg *cfg, const struct agent_nic_io *io);
/* Restores the NIC's own DCQCN parameters when they were changed; NULL-safe. */
void agent_nic_free(struct agent_nic *n);

/* One interval: counters and QPs. 0 or -errno (the netlink part failing
 * leaves the QPs of the last read, logged once). */
int agent_nic_read(struct agent_nic *n);
/* The device's QPs of the last read (with counters where bound). */
const struct agent_nic_qp *agent_nic_qps(const struct agent_nic *n, size_t *count);
/* Device-wide summary of the last read in the agent's counter names:
 * tx/rx bytes (port_xmit_data/port_rcv_data x 4), packets, ce
 * (np_ecn_marked_roce_packets), cnp_tx (np_cnp_sent), cnp_rx
 * (rp_cnp_handled), nak_tx (out_of_sequence), nak_rx (packet_seq_err),
 * retx (local_ack_timeout_err), summed over ports. */
void agent_nic_summary(const struct agent_nic *n, struct agent_ctr *c);

/* PFC of the last read: the lossless priorities (read at start and every
 * 10 s) and the pause counters' rates; a priority paused for at least
 * AGENT_PFC_STORM of an interval (either way) is in a storm (logged when it
 * starts and ends). */
#define AGENT_PFC_STORM 0.5
void agent_nic_pfc(const struct agent_nic *n, struct agent_pfc *p);

/* HSET the counters that changed since the last render (all of them every
 * full_every renders, and the first time) into key; the unsupported list
 * and the DCQCN interface in use with them. Returns how many fields. */
size_t agent_nic_render(struct agent_nic *n, const char *key, unsigned full_every,
			struct agent_buf *out);

/* Number of counters watched / reported unsupported. */
size_t agent_nic_ncounters(const struct agent_nic *n);
size_t agent_nic_nunsupported(const struct agent_nic *n);

/* ---- DCQCN (agent_nic_cc.c) */

enum agent_nic_cc_iface {
	AGENT_NIC_CC_NONE = 0,
	AGENT_NIC_CC_DEBUGFS, /* upstream mlx5: debugfs mlx5/<pci>/cc_params/ */
	AGENT_NIC_CC_ECN,     /* out-of-tree mlx5: class/net/<if>/ecn/roce_rp|roce_np/ */
};

const char *agent_nic_cc_iface_name(enum agent_nic_cc_iface i);
enum agent_nic_cc_iface agent_nic_cc_iface(const struct agent_nic *n);

/* Write profile p (checked against common/ice_dcqcn safe ranges first):
 * only the parameters that differ from what the NIC holds; a value the NIC
 * refuses stops the profile, the ones already written are put back, and
 * -errno comes back with err naming the file and the value. Parameters the
 * interface lacks are skipped (said once). 0 when in force. */
int agent_nic_dcqcn_apply(struct agent_nic *n, const struct ice_dcqcn_params *p,
			  struct ice_cfg_err *err);
/* A profile per priority (agent.h): each priority's files take its
 * profile (the out-of-tree ecn/ files that are directories of priorities:
 * enable/<prio>), device-wide files the wide profile, priorities without
 * one and files without wide the NIC's own; all or nothing as above. */
int agent_nic_dcqcn_apply_prios(struct agent_nic *n, const struct agent_dcqcn_prios *set,
				struct ice_cfg_err *err);
/* Write back the values the NIC had when the backend opened (fallback,
 * exit); 0 or the first -errno (the others are still tried). */
int agent_nic_dcqcn_restore(struct agent_nic *n);
/* The NIC's values as last read or written, for priority prio where they
 * are per priority (fields it lacks: the defaults); true when this backend
 * has changed them. */
bool agent_nic_dcqcn_current(const struct agent_nic *n, unsigned prio, struct ice_dcqcn_params *p);

#endif /* ICE_AGENT_NIC_H */
