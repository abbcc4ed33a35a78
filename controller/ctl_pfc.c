// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_pfc.c: PFC pause state per directed link from NIC and switch port
 * records (ctl_pfc.h). Pure: no Redis.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_pfc.h"

int ctl_pfc_init(struct ctl_pfc *p, uint32_t ndl)
{
	memset(p, 0, sizeof(*p));
	p->ndl = ndl;
	p->dl = calloc(ndl + 1, sizeof(*p->dl));
	p->round = calloc((size_t)(ndl + 1) * CTL_PFC_PRIOS, sizeof(*p->round));
	if (p->dl == NULL || p->round == NULL) {
		ctl_pfc_fini(p);
		return -ENOMEM;
	}
	p->storm_share = 0.5;
	p->hot_rounds = 2;
	return 0;
}

void ctl_pfc_fini(struct ctl_pfc *p)
{
	if (p == NULL)
		return;
	free(p->dl);
	free(p->round);
	memset(p, 0, sizeof(*p));
}

void ctl_pfc_begin(struct ctl_pfc *p)
{
	memset(p->round, 0, sizeof(*p->round) * p->ndl * CTL_PFC_PRIOS);
}

void ctl_pfc_sample(struct ctl_pfc *p, uint32_t dl, const double paused[CTL_PFC_PRIOS])
{
	double *r;

	if (dl >= p->ndl)
		return;
	r = &p->round[(size_t)dl * CTL_PFC_PRIOS];
	for (int k = 0; k < CTL_PFC_PRIOS; k++)
		if (paused[k] > r[k])
			r[k] = paused[k];
	p->samples++;
}

void ctl_pfc_end(struct ctl_pfc *p, uint64_t now_ms)
{
	for (uint32_t dl = 0; dl < p->ndl; dl++) {
		struct ctl_pfc_link *x = &p->dl[dl];
		const double *r = &p->round[(size_t)dl * CTL_PFC_PRIOS];

		x->storm = 0;
		for (int k = 0; k < CTL_PFC_PRIOS; k++) {
			x->paused[k] = r[k];
			if (r[k] >= p->storm_share)
				x->storm |= (uint8_t)(1u << k);
		}
		if (x->storm == 0) {
			x->run = 0;
			continue;
		}
		if (x->run++ == 0)
			x->run_ms = now_ms;
		if (x->run == p->hot_rounds)
			p->storms++;
	}
}

bool ctl_pfc_storming(const struct ctl_pfc *p, uint32_t dl)
{
	return dl < p->ndl && p->dl[dl].storm != 0 && p->dl[dl].run >= p->hot_rounds;
}

double ctl_pfc_factor(const struct ctl_pfc *p, uint32_t dl)
{
	double worst = 0;

	if (!ctl_pfc_storming(p, dl))
		return 1;
	for (int k = 0; k < CTL_PFC_PRIOS; k++)
		if ((p->dl[dl].storm & (1u << k)) && p->dl[dl].paused[k] > worst)
			worst = p->dl[dl].paused[k];
	return worst >= 1 ? 0 : 1 - worst;
}

double ctl_pfc_paused_max(const struct ctl_pfc *p, uint32_t dl, uint8_t *storm)
{
	double m = 0;

	if (storm != NULL)
		*storm = ctl_pfc_storming(p, dl) ? p->dl[dl].storm : 0;
	for (int k = 0; dl < p->ndl && k < CTL_PFC_PRIOS; k++)
		if (p->dl[dl].paused[k] > m)
			m = p->dl[dl].paused[k];
	return m;
}

static bool share_ok(double v)
{
	return isfinite(v) && v >= 0 && v <= 1;
}

int ctl_pfc_parse_list(const char *s, double out[CTL_PFC_PRIOS])
{
	const char *c = s;

	if (s == NULL)
		return -EINVAL;
	for (int k = 0; k < CTL_PFC_PRIOS; k++) {
		char *end;

		if (*c < '0' || *c > '9') /* strtod would take spaces, signs, "inf" */
			return -EINVAL;
		out[k] = strtod(c, &end);
		if (end == c || !share_ok(out[k]) || *end != (k == CTL_PFC_PRIOS - 1 ? '\0' : ','))
			return -EINVAL;
		c = end + 1;
	}
	return 0;
}

int ctl_pfc_parse_nic(const char *json, uint8_t *lossless, bool *known,
		      double rx_paused[CTL_PFC_PRIOS], double tx_paused[CTL_PFC_PRIOS])
{
	json_t *o = json != NULL ? json_loads(json, JSON_REJECT_DUPLICATES, NULL) : NULL;
	json_t *ll, *prio, *v;
	const char *name;
	int ret = -EINVAL;

	memset(rx_paused, 0, sizeof(double) * CTL_PFC_PRIOS);
	memset(tx_paused, 0, sizeof(double) * CTL_PFC_PRIOS);
	*lossless = 0;
	*known = false;
	if (!json_is_object(o))
		goto out;
	ll = json_object_get(o, "lossless");
	if (json_is_array(ll)) {
		size_t i;

		json_array_foreach(ll, i, v)
		{
			if (!json_is_integer(v) || json_integer_value(v) < 0 ||
			    json_integer_value(v) >= CTL_PFC_PRIOS)
				goto out;
			*lossless |= (uint8_t)(1u << json_integer_value(v));
		}
		*known = true;
	} else if (ll != NULL && !json_is_null(ll)) {
		goto out;
	}
	prio = json_object_get(o, "prio");
	if (prio != NULL && !json_is_object(prio))
		goto out;
	json_object_foreach(prio, name, v)
	{
		json_t *rx = json_object_get(v, "rx_paused"), *tx = json_object_get(v, "tx_paused");
		int k = name[0] - '0';

		if (name[0] < '0' || name[0] > '7' || name[1] != '\0' || !json_is_object(v) ||
		    (rx != NULL && !json_is_number(rx)) || (tx != NULL && !json_is_number(tx)))
			goto out;
		rx_paused[k] = rx != NULL ? json_number_value(rx) : 0;
		tx_paused[k] = tx != NULL ? json_number_value(tx) : 0;
		if (!share_ok(rx_paused[k]) || !share_ok(tx_paused[k]))
			goto out;
	}
	ret = 0;
out:
	if (ret < 0) {
		memset(rx_paused, 0, sizeof(double) * CTL_PFC_PRIOS);
		memset(tx_paused, 0, sizeof(double) * CTL_PFC_PRIOS);
		*lossless = 0;
		*known = false;
	}
	json_decref(o);
	return ret;
}
