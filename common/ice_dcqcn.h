/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_dcqcn: the DCQCN parameter set, with the mlx5 driver's names and units
 * (cc_params), defaults like ConnectX-5 firmware, and safe ranges. Shared
 * vocabulary: the transport runs DCQCN with it, the controller's policy
 * names profiles of it, the agent applies it to NICs and QPs.
 */
#ifndef ICE_DCQCN_H
#define ICE_DCQCN_H

#include <stddef.h>
#include <stdint.h>

#include "ice_config.h"

/* Parameters with mlx5 names and units. Defaults: ice_dcqcn_params_default(). */
struct ice_dcqcn_params {
	uint32_t enable;			/* 1: run DCQCN; 0: fixed rate rp_max_rate */
	uint32_t rp_max_rate;			/* Mbit/s; line rate, 0 = unlimited */
	uint32_t rp_ai_rate;			/* Mbit/s, additive increase step */
	uint32_t rp_hai_rate;			/* Mbit/s, hyper increase step */
	uint32_t rp_time_reset;			/* us, rate-increase timer period */
	uint32_t rp_byte_reset;			/* bytes, rate-increase byte counter */
	uint32_t rp_threshold;			/* F: fast-recovery events */
	uint32_t rp_min_dec_fac;		/* %, least Rc may keep on one CNP */
	uint32_t rp_min_rate;			/* Mbit/s, floor */
	uint32_t rp_gd;				/* log2 of alpha's decrease divisor (11: alpha/2) */
	uint32_t rp_rate_to_set_on_first_cnp;	/* Mbit/s, 0 = not used */
	uint32_t rp_clamp_tgt_rate;		/* 1: Rt = Rc on every CNP */
	uint32_t rp_dce_tcp_g;			/* alpha EWMA weight of the old value, /1024 */
	uint32_t rp_dce_tcp_rtt;		/* us, alpha decay period */
	uint32_t rp_rate_reduce_monitor_period; /* us, least time between cuts */
	uint32_t rp_initial_alpha_value;	/* /1024 */
	uint32_t np_min_time_between_cnps;	/* us, per QP */
};

/* ConnectX-5-like firmware defaults (see the project's REFERENCE notes, DCQCN). */
void ice_dcqcn_params_default(struct ice_dcqcn_params *p);
/* Check every field against its safe range; -EINVAL and err names the key. */
int ice_dcqcn_params_check(const struct ice_dcqcn_params *p, struct ice_cfg_err *err);
/* The binding table (one row per parameter: key, unit, safe range). */
const struct ice_cfg_field *ice_dcqcn_fields(size_t *n);
/* Load a DCQCN parameter file, a flat YAML mapping of ice_dcqcn_fields()
 * keys (fabric/dcqcn-testbed.yaml), onto p: the keys it sets replace p's
 * values, the others keep them (callers start from
 * ice_dcqcn_params_default()); the result is checked as a whole. 0, or a
 * negative errno (-ENOENT & co when the file cannot be read, -EINVAL for
 * its contents) with err naming file:line, key and what was expected; p
 * is then unchanged. */
int ice_dcqcn_load(const char *path, struct ice_dcqcn_params *p, struct ice_cfg_err *err);

#endif /* ICE_DCQCN_H */
