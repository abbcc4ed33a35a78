// SPDX-License-Identifier: Apache-2.0
#include "ice_dcqcn.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void ice_dcqcn_params_default(struct ice_dcqcn_params *p)
{
	*p = (struct ice_dcqcn_params){
		.enable = 1,
		.rp_max_rate = 0,
		.rp_ai_rate = 5,
		.rp_hai_rate = 50,
		.rp_time_reset = 300,
		.rp_byte_reset = 32767,
		.rp_threshold = 1,
		.rp_min_dec_fac = 50,
		.rp_min_rate = 1,
		.rp_gd = 11,
		.rp_rate_to_set_on_first_cnp = 0,
		.rp_clamp_tgt_rate = 0,
		.rp_dce_tcp_g = 1019,
		.rp_dce_tcp_rtt = 1,
		.rp_rate_reduce_monitor_period = 4,
		.rp_initial_alpha_value = 1023,
		.np_min_time_between_cnps = 4,
	};
}

#define DCQCN_FIELD(name, lo, hi, text)                                                            \
	{                                                                                          \
		.key = #name, .type = ICE_CFG_U32,                                                 \
		.offset = offsetof(struct ice_dcqcn_params, name), .size = sizeof(uint32_t),       \
		.min = (lo), .max = (hi), .help = (text),                                          \
	}

static const struct ice_cfg_field dcqcn_fields[] = {
	DCQCN_FIELD(enable, 0, 1, "1: run DCQCN; 0: send at the fixed rate rp_max_rate"),
	DCQCN_FIELD(rp_max_rate, 0, 400000, "line rate in Mbit/s; 0 = unlimited"),
	DCQCN_FIELD(rp_ai_rate, 0, 400000, "additive increase step in Mbit/s"),
	DCQCN_FIELD(rp_hai_rate, 0, 400000, "hyper increase step in Mbit/s"),
	DCQCN_FIELD(rp_time_reset, 1, 10000000, "rate-increase timer period in us"),
	DCQCN_FIELD(rp_byte_reset, 0, 1073741824,
		    "bytes sent per rate-increase byte-counter event; 0 = byte counter off"),
	DCQCN_FIELD(rp_threshold, 1, 31, "fast-recovery events after a cut (F)"),
	DCQCN_FIELD(rp_min_dec_fac, 1, 100, "least share of Rc kept on one CNP, in %"),
	DCQCN_FIELD(rp_min_rate, 0, 400000, "rate floor in Mbit/s"),
	DCQCN_FIELD(rp_gd, 1, 15, "log2 of the cut divisor: cut = alpha * 2^(10 - rp_gd)"),
	DCQCN_FIELD(rp_rate_to_set_on_first_cnp, 0, 400000,
		    "rate in Mbit/s a flow gets at its first CNP; 0 = current rate"),
	DCQCN_FIELD(rp_clamp_tgt_rate, 0, 1, "1: target rate follows Rc on every cut"),
	DCQCN_FIELD(rp_dce_tcp_g, 0, 1023, "weight of the old alpha in the EWMA, in 1/1024"),
	DCQCN_FIELD(rp_dce_tcp_rtt, 1, 10000000, "alpha decay period in us"),
	DCQCN_FIELD(rp_rate_reduce_monitor_period, 0, 10000000, "least time between cuts in us"),
	DCQCN_FIELD(rp_initial_alpha_value, 0, 1024, "alpha at the first CNP, in 1/1024"),
	DCQCN_FIELD(np_min_time_between_cnps, 0, 10000000,
		    "least time between two CNPs for one QP, in us"),
};

const struct ice_cfg_field *ice_dcqcn_fields(size_t *n)
{
	if (n != NULL)
		*n = sizeof(dcqcn_fields) / sizeof(dcqcn_fields[0]);
	return dcqcn_fields;
}

int ice_dcqcn_params_check(const struct ice_dcqcn_params *p, struct ice_cfg_err *err)
{
	size_t i;

	for (i = 0; i < sizeof(dcqcn_fields) / sizeof(dcqcn_fields[0]); i++) {
		const struct ice_cfg_field *f = &dcqcn_fields[i];
		uint32_t v;

		memcpy(&v, (const char *)p + f->offset, sizeof(v));
		if ((double)v < f->min || (double)v > f->max) {
			ice_cfg_fail(err, NULL, f->key,
				     "expected an integer in [%.0f, %.0f], got %u", f->min, f->max,
				     v);
			return -EINVAL;
		}
	}
	if (p->rp_max_rate != 0 && p->rp_min_rate > p->rp_max_rate) {
		ice_cfg_fail(err, NULL, "rp_min_rate",
			     "expected at most rp_max_rate (%u Mbit/s), got %u", p->rp_max_rate,
			     p->rp_min_rate);
		return -EINVAL;
	}
	return 0;
}

int ice_dcqcn_load(const char *path, struct ice_dcqcn_params *p, struct ice_cfg_err *err)
{
	struct ice_dcqcn_params v = *p;
	struct ice_cfg_err scratch;
	struct ice_yaml_doc *doc;
	int ret;

	if (err == NULL)
		err = &scratch;
	doc = ice_yaml_load_file(path, err);
	if (doc == NULL)
		return errno != 0 ? -errno : -EINVAL;
	ret = ice_cfg_bind(doc, ice_yaml_root(doc), NULL, dcqcn_fields,
			   sizeof(dcqcn_fields) / sizeof(dcqcn_fields[0]), &v, ICE_CFG_STRICT, err);
	if (ret == 0) {
		ret = ice_dcqcn_params_check(&v, err);
		if (ret < 0) {
			/* at the key's line, or the file's start when it comes from p */
			const struct ice_yaml_node *at = ice_yaml_get(ice_yaml_root(doc), err->key);
			char msg[sizeof(err->msg)], key[sizeof(err->key)];

			snprintf(msg, sizeof(msg), "%s", err->msg);
			snprintf(key, sizeof(key), "%s", err->key);
			ice_cfg_errf(err, doc, at != NULL ? at : ice_yaml_root(doc), key, "%s%s",
				     msg, at != NULL ? "" : " (not set by this file)");
		}
	}
	ice_yaml_free(doc);
	if (ret == 0)
		*p = v;
	return ret;
}
