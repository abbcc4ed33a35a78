// SPDX-License-Identifier: Apache-2.0
/*
 * ice_config: a value's text into a field of the table (ice_cfg_field): the
 * forms each type takes (integers in decimal or hex, numbers, booleans,
 * durations, sizes, rates, strings, enums), the ranges, clipped to the C
 * type, and the message that says what was expected.
 */
#include "ice_config_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ice_time.h"

/* ---- value parsing -------------------------------------------------------- */

/*
 * Ranges: a field whose min and max are both 0 takes the whole range of its
 * C type; otherwise [min, max], clipped to the type.
 */
static bool field_unbounded(const struct ice_cfg_field *f)
{
	return f->min == 0 && f->max == 0;
}

static uint64_t u64_type_max(enum ice_cfg_type type)
{
	return type == ICE_CFG_U32 ? UINT32_MAX : UINT64_MAX;
}

/* [lo, hi] of an unsigned field, as integers. */
static void field_urange(const struct ice_cfg_field *f, uint64_t *lo, uint64_t *hi)
{
	uint64_t tmax = u64_type_max(f->type);

	*lo = 0;
	*hi = tmax;
	if (field_unbounded(f))
		return;
	if (f->min > 0) {
		if (f->min >= 18446744073709551616.0) {
			*lo = UINT64_MAX;
		} else {
			*lo = (uint64_t)f->min;
			if ((double)*lo < f->min) /* round up */
				(*lo)++;
		}
	}
	if (f->max < 0) {
		*hi = 0;
		*lo = 1; /* empty range */
	} else if (f->max < 18446744073709551616.0) {
		uint64_t h = (uint64_t)f->max;

		if (h < *hi)
			*hi = h;
	}
}

static void field_irange(const struct ice_cfg_field *f, int64_t *lo, int64_t *hi)
{
	*lo = INT64_MIN;
	*hi = INT64_MAX;
	if (field_unbounded(f))
		return;
	if (f->min > -9223372036854775808.0) {
		if (f->min >= 9223372036854775808.0) {
			*lo = INT64_MAX;
		} else {
			*lo = (int64_t)f->min;
			if ((double)*lo < f->min)
				(*lo)++;
		}
	}
	if (f->max < 9223372036854775808.0) {
		if (f->max <= -9223372036854775808.0) {
			*hi = INT64_MIN;
		} else {
			*hi = (int64_t)f->max;
			if ((double)*hi > f->max)
				(*hi)--;
		}
	}
}

/* Parse an unsigned integer: decimal or 0x hex, optional '+', nothing else.
 * -ERANGE for a negative number or one that does not fit 64 bits. */
static int parse_u64(const char *s, uint64_t *out)
{
	const char *p = s;
	bool neg = false;
	unsigned long long v;
	char *end;
	int base = 10;

	if (*p == '+' || *p == '-') {
		neg = *p == '-';
		p++;
	}
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
		/* strtoull would take a second "0x" */
		if (!isxdigit((unsigned char)*p) || (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')))
			return -EINVAL;
	} else if (!isdigit((unsigned char)*p)) {
		return -EINVAL;
	}
	errno = 0;
	v = strtoull(p, &end, base);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	if (neg && v != 0)
		return -ERANGE;
	*out = v;
	return 0;
}

static int parse_i64(const char *s, int64_t *out)
{
	bool neg = *s == '-';
	uint64_t mag;
	int ret;

	if (neg && (s[1] == '+' || s[1] == '-'))
		return -EINVAL;
	ret = parse_u64(neg ? s + 1 : s, &mag);
	if (ret < 0)
		return ret;
	if (neg) {
		if (mag > (uint64_t)INT64_MAX + 1)
			return -ERANGE;
		*out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
	} else {
		if (mag > (uint64_t)INT64_MAX)
			return -ERANGE;
		*out = (int64_t)mag;
	}
	return 0;
}

static int parse_double(const char *s, double *out)
{
	char *end;
	double v;

	if (!(isdigit((unsigned char)*s) || *s == '+' || *s == '-' || *s == '.'))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || isnan(v))
		return -EINVAL;
	if (isinf(v))
		return errno == ERANGE ? -ERANGE : -EINVAL; /* overflow vs "inf" */
	*out = v;
	return 0;
}

int ice_cfg_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"true", "yes", "on", "1", "y"};
	static const char *const no[] = {"false", "no", "off", "0", "n"};

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* Format a bound: integers without exponent, others with %g. */
static void fmt_num(char *buf, size_t len, double v)
{
	if (v == (double)(long long)v && v > -9.2e18 && v < 9.2e18)
		snprintf(buf, len, "%lld", (long long)v);
	else
		snprintf(buf, len, "%g", v);
}

/* Format ns as the largest unit that divides it exactly. */
static void fmt_duration(char *buf, size_t len, uint64_t ns)
{
	static const struct {
		const char *name;
		uint64_t mult;
	} units[] = {{"s", ICE_NSEC_PER_SEC}, {"ms", ICE_NSEC_PER_MSEC}, {"us", ICE_NSEC_PER_USEC}};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (ns != 0 && ns % units[i].mult == 0) {
			snprintf(buf, len, "%llu%s", (unsigned long long)(ns / units[i].mult),
				 units[i].name);
			return;
		}
	}
	snprintf(buf, len, "%lluns", (unsigned long long)ns);
}

static const char *unit_name_ns(uint64_t unit)
{
	switch (unit) {
	case 0:
	case 1:
		return "ns";
	case ICE_NSEC_PER_USEC:
		return "us";
	case ICE_NSEC_PER_MSEC:
		return "ms";
	case ICE_NSEC_PER_SEC:
		return "s";
	}
	return NULL;
}

void ice_cfg_list_add(char *buf, size_t len, size_t *off, const char *const *names, size_t n,
		      size_t stride)
{
	for (size_t i = 0; i < n; i++) {
		const char *name = *(const char *const *)((const char *)names + i * stride);
		size_t need = strlen(name) + 2 + 4; /* ", " and room for ", ..." */

		if (*off + need >= len) {
			ice_cfg_buf_add(buf, len, off, "%s...", i > 0 ? ", " : "");
			return;
		}
		ice_cfg_buf_add(buf, len, off, "%s%s", i > 0 ? ", " : "", name);
	}
}

static size_t choices_count(const char *const *choices)
{
	size_t n = 0;

	while (choices != NULL && choices[n] != NULL)
		n++;
	return n;
}

int ice_cfg_field_store(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
			size_t msg_len)
{
	char *p = (char *)obj + f->offset;
	char lo_s[32], hi_s[32];
	size_t off = 0;
	int ret = 0;

	switch (f->type) {
	case ICE_CFG_BOOL: {
		bool v;

		ret = ice_cfg_parse_bool(text, &v);
		if (ret == 0) {
			*(bool *)p = v;
			return 0;
		}
		snprintf(msg, msg_len,
			 "expected a boolean (true/false, yes/no, on/off, 1/0), got '%s'", text);
		return ret;
	}
	case ICE_CFG_INT:
	case ICE_CFG_I32: {
		int64_t v, lo, hi;

		field_irange(f, &lo, &hi);
		if (f->type == ICE_CFG_I32) {
			lo = lo < INT32_MIN ? INT32_MIN : lo;
			hi = hi > INT32_MAX ? INT32_MAX : hi;
		}
		ret = parse_i64(text, &v);
		if (ret == 0 && (v < lo || v > hi))
			ret = -ERANGE;
		if (ret == 0) {
			if (f->type == ICE_CFG_I32)
				*(int *)p = (int)v;
			else
				*(int64_t *)p = v;
			return 0;
		}
		snprintf(msg, msg_len, "expected an integer in [%lld, %lld], got '%s'",
			 (long long)lo, (long long)hi, text);
		return ret;
	}
	case ICE_CFG_UINT:
	case ICE_CFG_U32: {
		uint64_t v, lo, hi;

		field_urange(f, &lo, &hi);
		ret = parse_u64(text, &v);
		if (ret == 0 && (v < lo || v > hi))
			ret = -ERANGE;
		if (ret == 0) {
			if (f->type == ICE_CFG_U32)
				*(uint32_t *)p = (uint32_t)v;
			else
				*(uint64_t *)p = v;
			return 0;
		}
		snprintf(msg, msg_len, "expected an integer in [%llu, %llu], got '%s'",
			 (unsigned long long)lo, (unsigned long long)hi, text);
		return ret;
	}
	case ICE_CFG_DOUBLE: {
		double v;

		ret = parse_double(text, &v);
		if (ret == 0 && !field_unbounded(f) && (v < f->min || v > f->max))
			ret = -ERANGE;
		if (ret == 0) {
			*(double *)p = v;
			return 0;
		}
		if (field_unbounded(f)) {
			snprintf(msg, msg_len, "expected a number, got '%s'", text);
		} else {
			fmt_num(lo_s, sizeof(lo_s), f->min);
			fmt_num(hi_s, sizeof(hi_s), f->max);
			snprintf(msg, msg_len, "expected a number in [%s, %s], got '%s'", lo_s,
				 hi_s, text);
		}
		return ret;
	}
	case ICE_CFG_STRING: {
		size_t n = strlen(text);

		if (f->size == 0 || n >= f->size) {
			snprintf(msg, msg_len,
				 "expected a string of at most %zu characters, got %zu",
				 f->size > 0 ? f->size - 1 : 0, n);
			return -ERANGE;
		}
		memcpy(p, text, n + 1);
		return 0;
	}
	case ICE_CFG_DURATION:
	case ICE_CFG_SIZE:
	case ICE_CFG_RATE: {
		uint64_t v, lo, hi;
		const char *what, *unit;

		field_urange(f, &lo, &hi);
		if (f->type == ICE_CFG_DURATION) {
			ret = ice_parse_duration(text, f->unit != 0 ? f->unit : 1, &v);
			what = "a duration such as 300us, 4ms or 2s";
			fmt_duration(lo_s, sizeof(lo_s), lo);
			fmt_duration(hi_s, sizeof(hi_s), hi);
		} else if (f->type == ICE_CFG_SIZE) {
			ret = ice_parse_size(text, &v);
			what = "a size such as 4096, 4K, 64M or 1G";
			snprintf(lo_s, sizeof(lo_s), "%llu", (unsigned long long)lo);
			snprintf(hi_s, sizeof(hi_s), "%llu", (unsigned long long)hi);
		} else {
			ret = ice_parse_rate(text, &v);
			what = "a rate such as 200mbit or 10gbit";
			snprintf(lo_s, sizeof(lo_s), "%llubit", (unsigned long long)lo);
			snprintf(hi_s, sizeof(hi_s), "%llubit", (unsigned long long)hi);
		}
		if (ret == 0 && (v < lo || v > hi))
			ret = -ERANGE;
		if (ret == 0) {
			*(uint64_t *)p = v;
			return 0;
		}
		ice_cfg_buf_add(msg, msg_len, &off, "expected %s", what);
		unit = f->type == ICE_CFG_DURATION ? unit_name_ns(f->unit) : NULL;
		if (unit != NULL)
			ice_cfg_buf_add(msg, msg_len, &off, " (bare numbers in %s)", unit);
		else if (f->type == ICE_CFG_DURATION)
			ice_cfg_buf_add(msg, msg_len, &off, " (bare numbers in units of %lluns)",
					(unsigned long long)f->unit);
		if (!field_unbounded(f))
			ice_cfg_buf_add(msg, msg_len, &off, " in [%s, %s]", lo_s, hi_s);
		ice_cfg_buf_add(msg, msg_len, &off, ", got '%s'", text);
		return ret == -ERANGE ? -ERANGE : -EINVAL;
	}
	case ICE_CFG_ENUM: {
		size_t n = choices_count(f->choices);

		for (size_t i = 0; i < n; i++) {
			if (strcmp(text, f->choices[i]) == 0) {
				*(int *)p = (int)i;
				return 0;
			}
		}
		ice_cfg_buf_add(msg, msg_len, &off, "expected one of: ");
		/* leave room for the "got" part */
		ice_cfg_list_add(msg, msg_len > 64 ? msg_len - 64 : msg_len, &off, f->choices, n,
				 sizeof(f->choices[0]));
		ice_cfg_buf_add(msg, msg_len, &off, "; got '%s'", text);
		return -EINVAL;
	}
	case ICE_CFG_FUNC: {
		bool on;

		if (!(f->flags & ICE_CFG_SWITCH))
			return f->parse(f, obj, text, msg, msg_len);
		/* a switch in a file or key=value: true does it, false does not */
		if (ice_cfg_parse_bool(text, &on) < 0) {
			snprintf(msg, msg_len, "expected a boolean (true/false), got '%s'", text);
			return -EINVAL;
		}
		return on ? f->parse(f, obj, NULL, msg, msg_len) : 0;
	}
	case ICE_CFG_ARGV:
		snprintf(msg, msg_len, "expected on the command line only");
		return -EINVAL;
	}
	snprintf(msg, msg_len, "field has unknown type %d", (int)f->type);
	return -EINVAL;
}
