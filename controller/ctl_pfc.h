/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_pfc: PFC pause state per directed link, as the planner needs it
 * (issue 19). A lossless priority pauses a link when the receiver's buffer
 * for it fills: the sender then sends nothing of that priority, and a
 * storm spreads back hop by hop. Two sources, both optional:
 *   - the agents' NIC records with the NIC backend (`pfc`: the lossless
 *     priorities, and per priority the share of the interval the NIC was
 *     paused, rx_paused, and made its peer pause, tx_paused): the host's
 *     link, both directions;
 *   - switch port records (`in-pfc-paused`, `out-pfc-paused`: eight shares,
 *     priorities 0-7, of the last interval in which the port was held by
 *     pause frames it received, or held its peer), as a gNMI or SNMP
 *     collector derives them from a switch's per-priority pause durations
 *     (docs/redis-schema.md). The test bed's switches have no PFC.
 * A directed link whose lossless priority was paused at least storm_share
 * of an interval for hot_rounds rounds in a row is storming: the daemon
 * re-plans the QPs crossing it, and the planner sees its capacity times
 * the share it was not paused (ctl_pfc_factor): paths move off it where
 * another exists, and rates come down to what it passes where none does.
 * Capacities are per link, not per class: the factor applies to every flow
 * on the link, which is right where RoCE is the lossless class and carries
 * most of the bytes, as in the fabrics ICE is for.
 *
 * Pure: no Redis. Bad input (a record that does not parse, shares outside
 * 0-1) is counted in bad and changes nothing.
 */
#ifndef CTL_PFC_H
#define CTL_PFC_H

#include <stdbool.h>
#include <stdint.h>

#define CTL_PFC_PRIOS 8

struct ctl_pfc_link {
	double paused[CTL_PFC_PRIOS]; /* the last round's shares (max over sources) */
	uint8_t storm;		      /* priorities at or above storm_share in it */
	uint32_t run;		      /* rounds in a row with a storm */
	uint64_t run_ms;	      /* when that run began */
};

struct ctl_pfc {
	uint32_t ndl;
	struct ctl_pfc_link *dl; /* [ndl] */
	double *round;		 /* [ndl * CTL_PFC_PRIOS]: this round's samples */
	uint8_t lossless;	 /* priorities the NICs report lossless (the caller's) */
	uint32_t nics;		 /* NIC records with a PFC part (the caller's) */
	double storm_share;	 /* a priority paused at least this share is storming (0.5) */
	uint32_t hot_rounds;	 /* a link storms after this many rounds in a row (2) */
	uint64_t samples, bad;	 /* samples taken; records refused */
	uint64_t storms;	 /* storms begun (runs that reached hot_rounds) */
};

int ctl_pfc_init(struct ctl_pfc *p, uint32_t ndl); /* 0 or -ENOMEM */
void ctl_pfc_fini(struct ctl_pfc *p);		   /* NULL-safe */

/* A round: begin, samples, end. A sample raises dl's shares to paused[]
 * (several sources of one link keep the largest). */
void ctl_pfc_begin(struct ctl_pfc *p);
void ctl_pfc_sample(struct ctl_pfc *p, uint32_t dl, const double paused[CTL_PFC_PRIOS]);
/* Closes the round: each link's storm and run; now_ms dates a run's start. */
void ctl_pfc_end(struct ctl_pfc *p, uint64_t now_ms);

/* dl has stormed for hot_rounds rounds in a row (the newest included). */
bool ctl_pfc_storming(const struct ctl_pfc *p, uint32_t dl);
/* What the planner keeps of dl's capacity: 1 - the largest paused share of
 * its storming priorities while it storms, else 1. */
double ctl_pfc_factor(const struct ctl_pfc *p, uint32_t dl);
/* The largest paused share of dl's last round, and the priorities that
 * storm on it (a bit each; 0 unless ctl_pfc_storming). */
double ctl_pfc_paused_max(const struct ctl_pfc *p, uint32_t dl, uint8_t *storm);

/* A switch port's list: eight shares 0-1, comma-separated, priorities 0-7.
 * 0, or -EINVAL (not eight numbers in 0-1). */
int ctl_pfc_parse_list(const char *s, double out[CTL_PFC_PRIOS]);
/* An agent's NIC record `pfc` (docs/redis-schema.md): its lossless mask
 * (*known false when the NIC could not read it: "lossless": null), and per
 * priority rx_paused (the NIC was held: host -> switch paused) and
 * tx_paused (it held the switch: switch -> host paused); priorities not
 * listed are 0. 0, or -EINVAL (not that object, a share outside 0-1). */
int ctl_pfc_parse_nic(const char *json, uint8_t *lossless, bool *known,
		      double rx_paused[CTL_PFC_PRIOS], double tx_paused[CTL_PFC_PRIOS]);

#endif /* CTL_PFC_H */
