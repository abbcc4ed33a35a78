// SPDX-License-Identifier: Apache-2.0
#include "ice_time.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void ice_sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / ICE_NSEC_PER_SEC),
			      .tv_nsec = (long)(ns % ICE_NSEC_PER_SEC)};

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

struct unit {
	const char *name;
	uint64_t mult;
};

/* Parses "<unsigned number><unit>" where the unit is looked up in units[]
 * (case-insensitive); an empty unit takes def. */
static int parse_with_units(const char *s, const struct unit *units, uint64_t def, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (s == NULL || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -ERANGE;
	if (*end == '\0') {
		if (def != 0 && v > UINT64_MAX / def)
			return -ERANGE;
		*out = v * def;
		return 0;
	}
	for (; units->name != NULL; units++) {
		if (strcasecmp(end, units->name) == 0) {
			if (v > UINT64_MAX / units->mult)
				return -ERANGE;
			*out = v * units->mult;
			return 0;
		}
	}
	return -EINVAL;
}

int ice_parse_duration(const char *s, uint64_t default_unit_ns, uint64_t *out_ns)
{
	static const struct unit units[] = {
		{"ns", 1},
		{"us", ICE_NSEC_PER_USEC},
		{"ms", ICE_NSEC_PER_MSEC},
		{"s", ICE_NSEC_PER_SEC},
		{NULL, 0},
	};

	return parse_with_units(s, units, default_unit_ns, out_ns);
}

int ice_parse_size(const char *s, uint64_t *out)
{
	static const struct unit units[] = {
		{"b", 1},	    {"k", 1ull << 10},	 {"kb", 1ull << 10},  {"kib", 1ull << 10},
		{"m", 1ull << 20},  {"mb", 1ull << 20},	 {"mib", 1ull << 20}, {"g", 1ull << 30},
		{"gb", 1ull << 30}, {"gib", 1ull << 30}, {NULL, 0},
	};

	return parse_with_units(s, units, 1, out);
}

int ice_parse_rate(const char *s, uint64_t *out_bps)
{
	static const struct unit units[] = {
		{"bit", 1},
		{"bps", 1},
		{"kbit", 1000},
		{"mbit", 1000000ull},
		{"gbit", 1000000000ull},
		{NULL, 0},
	};

	return parse_with_units(s, units, 1, out_bps);
}
