/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_ctrl: the control block between a host's agent and the transports on
 * that host — shared memory, no system calls on the transport's hot path.
 *
 * One file per NIC address, /dev/shm/ice-ctrl-<IPv4>, created by the agent
 * (ice_ctrl_create) and mapped by every transport engine bound to that
 * address (ice_ctrl_open). Each slot describes one QP:
 *   - the transport claims a slot for each QP it connects and keeps the
 *     "state" half current (peer, source port, its own counters);
 *   - the agent writes the "control" half (source port, planned rate, DCQCN
 *     parameters, plan epoch) under a sequence lock and then bumps
 *     ctl_version; the transport's progress loop compares ctl_version with
 *     the value it saw last (one load) and only then reads slots.
 * Layout changes bump ICE_CTRL_VERSION; both sides refuse a mismatch.
 *
 * Access (ice_ipc.h): the file is the agent's (root) and the `ice` group's,
 * mode 0660, so that transports of non-root jobs in the group can claim
 * slots and be steered; without that group it is root's only (0600). It is
 * created with O_EXCL and opened with O_NOFOLLOW; on either side a block
 * that is not a regular file owned by root (or this process's user), that
 * others may access, or whose group bits name another group is refused
 * with an error naming the path and what is wrong. Members of the group can
 * write every slot, and truncate the file (a mapped reader then faults):
 * the group is trusted with each other's steering.
 */
#ifndef ICE_CTRL_H
#define ICE_CTRL_H

#include <stdbool.h>
#include <stdint.h>

#include "ice_dcqcn.h"
#include "ice_ipc.h"

#define ICE_CTRL_MAGIC	  0x31454349u /* "ICE1" */
#define ICE_CTRL_VERSION  1
#define ICE_CTRL_SLOTS	  1024
#define ICE_CTRL_PATH_FMT "/dev/shm/ice-ctrl-%s" /* %s: the NIC's IPv4 address */

/* ice_ctrl_qp.flags: what the control half asks for */
#define ICE_CTRL_SET_SPORT 0x1u
#define ICE_CTRL_SET_RATE  0x2u
#define ICE_CTRL_SET_DCQCN 0x4u

struct ice_ctrl_qp {
	/* state: written by the transport that owns the slot */
	uint32_t qpn; /* local QPN; 0 = free */
	uint32_t owner_pid;
	uint32_t rqpn;
	uint32_t local_ip;  /* network order */
	uint32_t remote_ip; /* network order */
	uint16_t sport_now; /* UDP source port in use */
	uint16_t pad0;
	uint32_t applied_seq;	/* control seq last applied (even) */
	uint32_t rate_mbps_now; /* current DCQCN rate, 0 = unlimited */
	uint64_t tx_bytes, rx_bytes, tx_pkts, rx_pkts, retx_pkts;
	uint64_t cnps_rx, cnps_tx, ce_rx;
	uint64_t applied_epoch; /* plan epoch in force on this QP */

	/* control: written by the agent */
	uint32_t seq; /* sequence lock: odd while the agent writes */
	uint32_t flags;
	uint16_t sport;
	uint16_t pad1;
	uint32_t rate_mbps; /* planned rate; 0 = line rate */
	uint64_t epoch;	    /* plan epoch these values come from */
	struct ice_dcqcn_params dcqcn;
};

struct ice_ctrl {
	uint32_t magic;
	uint32_t version;
	uint32_t nslots;
	uint32_t agent_pid;
	uint64_t ctl_version; /* bumped after any control write */
	uint64_t qp_version;  /* bumped when a slot is claimed or freed */
	struct ice_ctrl_qp qp[ICE_CTRL_SLOTS];
};

/* Agent: create the block for a NIC address with perm's group and mode
 * (NULL: ice_ipc_perm_init(NULL)), or take over one that passes the checks
 * (an earlier agent's, with its QPs; given perm's group and mode); one that
 * passes them but is not a valid block is removed and created anew. NULL +
 * errno (EPERM: refused, logged with the reason; ELOOP: a link). */
struct ice_ctrl *ice_ctrl_create(const char *ipv4, const struct ice_ipc_perm *perm);
/* Transport: map an existing block, checked against perm (NULL: the group
 * ICE_GROUP, else "ice"); NULL + errno (ENOENT: no agent; EACCES: not in
 * the block's group; EPERM: refused and logged; EPROTO: not a block). */
struct ice_ctrl *ice_ctrl_open(const char *ipv4, const struct ice_ipc_perm *perm);
void ice_ctrl_close(struct ice_ctrl *c); /* unmaps; NULL-safe */
/* Agent: remove the file (transports keep their mapping until they close). */
int ice_ctrl_unlink(const char *ipv4);

/* Transport: claim a slot for qpn; the slot index, or -ENOSPC. */
int ice_ctrl_claim(struct ice_ctrl *c, uint32_t qpn);
void ice_ctrl_release(struct ice_ctrl *c, int slot);
/* Agent: free slot if it still holds qpn and its owner process is gone (a
 * transport killed before it released its slots); true when freed. */
bool ice_ctrl_reap(struct ice_ctrl *c, int slot, uint32_t qpn);

/* Agent: write a slot's control half (seq-locked), then bump ctl_version.
 * A write is the QP's whole plan: what flags leave out goes back to the
 * QP's defaults (flags 0: plain RoCE, as when a plan expires). */
void ice_ctrl_set(struct ice_ctrl *c, int slot, uint32_t flags, uint16_t sport, uint32_t rate_mbps,
		  const struct ice_dcqcn_params *dcqcn, uint64_t epoch);
/* Transport: a consistent copy of a slot's control half; false when the
 * agent was writing (try again later). */
bool ice_ctrl_get(const struct ice_ctrl *c, int slot, struct ice_ctrl_qp *out);
/* Load ctl_version (acquire). */
uint64_t ice_ctrl_version(const struct ice_ctrl *c);
/* Find the slot of a QP (agent side); -ENOENT when none. */
int ice_ctrl_find(const struct ice_ctrl *c, uint32_t qpn);

#endif /* ICE_CTRL_H */
