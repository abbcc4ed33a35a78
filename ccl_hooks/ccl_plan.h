/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ccl_plan: what the verbs hook may do to a library's QPs, from a text file
 * the agent writes per NIC address (/run/ice/ccl-plan-<address>.conf, from
 * the plan in force) or an operator writes (/run/ice/ccl-plan.conf);
 * ICE_CCL_PLAN names another ("%s": the address). One rule per line, '#'
 * starts a comment:
 *
 *   version 1                       first rule, required
 *   tclass 106                      GRH traffic class for every QP (0-255)
 *   sport 10.0.0.2 49200 49201      QPs towards 10.0.0.2 take these UDP
 *                                   source ports in turn (49152-65535)
 *   sport * 52000                   the same for any other peer
 *   sport 10.0.0.3 49300/104 49301  a port may carry the traffic class of
 *                                   the QP that takes it (PORT/TCLASS, the
 *                                   plan's, 0-255); the others take tclass
 *
 * A plan with any error is refused as a whole (the hook then only records);
 * the reason names the file, the line and what was expected.
 */
#ifndef CCL_PLAN_H
#define CCL_PLAN_H

#include <stddef.h>
#include <stdint.h>

#define CCL_PLAN_DEFAULT_PATH "/run/ice/ccl-plan.conf"
/* the agent's, per NIC address (host_agent/agent_plan.c writes it) */
#define CCL_PLAN_AGENT_PATH "/run/ice/ccl-plan-%s.conf"
#define CCL_PLAN_MAX_RULES  256
#define CCL_PLAN_MAX_PORTS  16

struct ccl_plan;

/* Parse text (name is used in messages). NULL + errno: EINVAL with the
 * reason in err, ENOMEM. The caller frees with ccl_plan_free(). */
struct ccl_plan *ccl_plan_parse(const char *text, const char *name, char *err, size_t errlen);
/* Read and parse a file; ENOENT when it does not exist. */
struct ccl_plan *ccl_plan_load(const char *path, char *err, size_t errlen);
void ccl_plan_free(struct ccl_plan *p); /* NULL-safe */

/* Traffic class of the "tclass" rule, or -1 when the plan has none. */
int ccl_plan_tclass(const struct ccl_plan *p);
/* The next planned source port towards remote_ip (network order; a "*"
 * rule when no rule names it), or 0 when the plan sets none, and in
 * *tclass (may be NULL) that port's traffic class, else the "tclass"
 * rule's, else -1. Thread-safe. */
uint16_t ccl_plan_next_sport(struct ccl_plan *p, uint32_t remote_ip, int *tclass);

#endif /* CCL_PLAN_H */
