/* SPDX-License-Identifier: Apache-2.0 */
/* fake_verbs: see fake_verbs.c. */
#ifndef FAKE_VERBS_H
#define FAKE_VERBS_H

#include <infiniband/verbs.h>
#include <stdint.h>

extern struct ibv_qp_attr fake_verbs_last_attr;
extern int fake_verbs_last_mask;
extern int fake_verbs_modifies;
extern int fake_verbs_refuse_label;
extern uint16_t fake_verbs_udp_sport;
extern uint32_t fake_verbs_next_qpn;
extern uint32_t fake_verbs_local_ip;
extern uint32_t fake_verbs_rate_kbps;
extern int fake_verbs_rate_calls;
extern int fake_verbs_refuse_rate;

#endif /* FAKE_VERBS_H */
