/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent_plan: the agent's side of the controller's plans (common/ice_plan.h).
 *
 * The controller writes a signed plan per host at ice:<F>:{<H>}:plan and
 * PUBLISHes its epoch on a channel of the same name. The agent subscribes
 * (a second hiredis connection in its poll loop) and also reads the key
 * once per interval (so a lost notification costs one interval), checks the
 * plan with ice_plan_verify() (signature, epoch newer than the last one
 * accepted, lifetime, safe ranges) and the host name, then writes each
 * QP's control half (ice_ctrl_set: source port, start rate, DCQCN) by QPN.
 * A refused plan is logged with its reason and the previous plan stays.
 * The applied epoch goes back to ice:<F>:{<H>}:plan:applied. When the plan's
 * lifetime ends without a newer one, every slot the plan set is cleared
 * (flags 0: the QP's defaults, plain ECMP); traffic never stops.
 */
#ifndef ICE_AGENT_PLAN_H
#define ICE_AGENT_PLAN_H

#include <poll.h>
#include <stdint.h>

#include "agent.h"
#include "ice_ctrl.h"

struct agent_plan;

/* Load cfg->plan_pubkeys (NULL + errno with err filled when it is unusable).
 * The file is read again when it changes (checked at each new plan text), so
 * keys are added and removed without a restart; a changed file that does not
 * load is logged and the keys loaded before stay.
 * Nothing connects until agent_plan_tick(). ctrl may be NULL (tests). */
struct agent_plan *agent_plan_new(const struct agent_cfg *cfg, struct ice_ctrl *ctrl,
				  struct ice_cfg_err *err);
void agent_plan_free(struct agent_plan *p); /* NULL-safe */

/* Offer a plan (the JSON of the plan key). 0: applied; -errno: refused (see
 * ice_plan_verify(); -EXDEV: another host's plan) and the previous plan
 * stays; 1: the same text as the last offer (nothing to do). now_ms 0: the
 * real clock. err (may be NULL) says why. */
int agent_plan_offer(struct agent_plan *p, const char *json, uint64_t now_ms,
		     struct ice_cfg_err *err);
/* Expire the plan when its lifetime is over (now_ms 0: the real clock):
 * every slot it set goes back to the QP's defaults. true when it expired now. */
bool agent_plan_expire(struct agent_plan *p, uint64_t now_ms);
/* Write the plan's values into slots that lack them (QPs that connected
 * after the plan came) and clear slots the plan no longer names. */
void agent_plan_reconcile(struct agent_plan *p);

/* The NIC backend's DCQCN: fn gets the plan's profiles when a plan is
 * applied (NULL when the plan has none, or when it expired: the NIC's own
 * values back). A NIC takes a profile per priority (or device), not per
 * QP: each priority the plan's entries name (`prio`; the agent's
 * dcqcn_prio for entries without) takes the profile of most of its QPs,
 * with rp_max_rate the highest they ask (the per-QP ceilings are the rate
 * limiter's); what is device-wide takes the profile of the most QPs.
 * Entries of a priority asking for other parameters are logged. */
typedef int (*agent_plan_dcqcn_fn)(void *ctx, const struct agent_dcqcn_prios *set,
				   struct ice_cfg_err *err);
void agent_plan_on_dcqcn(struct agent_plan *p, agent_plan_dcqcn_fn fn, void *ctx);

/* The epoch in force (0: none), the highest accepted, refusals so far. */
uint64_t agent_plan_epoch(const struct agent_plan *p);
uint64_t agent_plan_last_epoch(const struct agent_plan *p);
uint64_t agent_plan_refused(const struct agent_plan *p);
/* The last refusal's reason, as written back (refused_reason); "" if none. */
const char *agent_plan_reason(const struct agent_plan *p);

/* Daemon side: (re)connect, poll the key each interval, expire, write back. */
void agent_plan_tick(struct agent_plan *p, uint64_t now_ns);
/* fds to poll (the subscription); count written. */
int agent_plan_fds(struct agent_plan *p, struct pollfd *pfd, int max);
/* After poll(): pfd/n as filled by agent_plan_fds(). */
void agent_plan_io(struct agent_plan *p, const struct pollfd *pfd, int n);

#endif /* ICE_AGENT_PLAN_H */
