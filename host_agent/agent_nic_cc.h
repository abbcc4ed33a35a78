/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent_nic_cc: DCQCN parameters written to a NIC through the interface it
 * has (agent_nic.h): one table maps each of the project's parameter names
 * (common/ice_dcqcn.h, the upstream mlx5 cc_params names) to the upstream
 * debugfs file and to the out-of-tree driver's ecn/roce_rp|roce_np file.
 * Internal to the NIC backend.
 */
#ifndef ICE_AGENT_NIC_CC_H
#define ICE_AGENT_NIC_CC_H

#include "agent_nic.h"

struct agent_nic_cc;

/* Choose the interface (cfg->dcqcn_iface; auto: debugfs, then ecn), read
 * every parameter it has and keep them as the NIC's own. io is borrowed
 * (lives as long as the backend). NULL + errno only for memory or a
 * dcqcn_iface asked for and absent (logged). */
struct agent_nic_cc *agent_nic_cc_new(const struct agent_cfg *cfg, const char *root,
				      const char *dev, const struct agent_nic_io *io);
/* Restores the NIC's own values, then frees; NULL-safe. */
void agent_nic_cc_free(struct agent_nic_cc *cc);
enum agent_nic_cc_iface agent_nic_cc_which(const struct agent_nic_cc *cc);
int agent_nic_cc_apply(struct agent_nic_cc *cc, const struct ice_dcqcn_params *p,
		       struct ice_cfg_err *err);
int agent_nic_cc_apply_prios(struct agent_nic_cc *cc, const struct agent_dcqcn_prios *set,
			     struct ice_cfg_err *err);
int agent_nic_cc_restore(struct agent_nic_cc *cc);
bool agent_nic_cc_current(const struct agent_nic_cc *cc, unsigned prio, struct ice_dcqcn_params *p);

#endif /* ICE_AGENT_NIC_CC_H */
