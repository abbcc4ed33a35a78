// SPDX-License-Identifier: Apache-2.0
#include "ice_log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define SUB_FIXED 10 /* the enum's subsystems and "all" */
#define SUB_MAX	  (SUB_FIXED + 32 - 9)

/* Subsystem names: the enum's, then those modules register at start-up
 * (ICE_LOG_SUBSYSTEM), each with the next free bit from 1 << 9. */
static struct {
	char name[16];
	uint32_t bit;
} sub_names[SUB_MAX] = {
	{"common", ICE_SUB_COMMON}, {"config", ICE_SUB_CONFIG}, {"wire", ICE_SUB_WIRE},
	{"qp", ICE_SUB_QP},	    {"dcqcn", ICE_SUB_DCQCN},	{"engine", ICE_SUB_ENGINE},
	{"comm", ICE_SUB_COMM},	    {"coll", ICE_SUB_COLL},	{"bench", ICE_SUB_BENCH},
	{"all", ICE_SUB_ALL},
};
static size_t nsub = SUB_FIXED;

uint32_t ice_log_register(const char *name)
{
	for (size_t i = 0; i < nsub; i++)
		if (strcmp(sub_names[i].name, name) == 0)
			return sub_names[i].bit;
	if (nsub == SUB_MAX || strlen(name) >= sizeof(sub_names[0].name))
		return ICE_SUB_COMMON;
	snprintf(sub_names[nsub].name, sizeof(sub_names[0].name), "%s", name);
	sub_names[nsub].bit = 1u << (9 + nsub - SUB_FIXED);
	return sub_names[nsub++].bit;
}

static const char *const level_names[] = {"error", "warn", "info", "debug"};

static int cur_level = ICE_LOG_WARN;
static uint32_t debug_mask;
static ice_log_sink_fn sink_fn;
static void *sink_arg;
static char tag[48];

void ice_log_set_level(int level)
{
	if (level < ICE_LOG_ERR)
		level = ICE_LOG_ERR;
	if (level > ICE_LOG_DEBUG)
		level = ICE_LOG_DEBUG;
	cur_level = level;
}

int ice_log_get_level(void)
{
	return cur_level;
}

void ice_log_set_debug_mask(uint32_t mask)
{
	debug_mask = mask;
}

void ice_log_set_sink(ice_log_sink_fn fn, void *arg)
{
	sink_fn = fn;
	sink_arg = arg;
}

void ice_log_set_tag(const char *t)
{
	if (t == NULL)
		tag[0] = '\0';
	else
		snprintf(tag, sizeof(tag), "%s", t);
}

int ice_log_enabled(int level, uint32_t sub)
{
	if (level <= cur_level)
		return 1;
	return level == ICE_LOG_DEBUG && (debug_mask & sub) != 0;
}

static int parse_level(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strlen(level_names[i]) == n && strncasecmp(s, level_names[i], n) == 0)
			return (int)i;
	return -1;
}

static int parse_subs(const char *s, uint32_t *mask)
{
	*mask = 0;
	while (*s != '\0') {
		size_t n = strcspn(s, "+");
		size_t i;

		for (i = 0; i < nsub; i++)
			if (strlen(sub_names[i].name) == n && strncmp(s, sub_names[i].name, n) == 0)
				break;
		if (i == nsub)
			return -EINVAL;
		*mask |= sub_names[i].bit;
		s += n;
		if (*s == '+')
			s++;
	}
	return 0;
}

int ice_log_setup(const char *spec)
{
	int level = cur_level;
	uint32_t mask = debug_mask;

	while (spec != NULL && *spec != '\0') {
		size_t n = strcspn(spec, ",");

		if (n > 6 && strncmp(spec, "debug=", 6) == 0) {
			char buf[256];

			if (n - 6 >= sizeof(buf))
				return -EINVAL;
			memcpy(buf, spec + 6, n - 6);
			buf[n - 6] = '\0';
			if (parse_subs(buf, &mask) < 0)
				return -EINVAL;
		} else {
			level = parse_level(spec, n);
			if (level < 0)
				return -EINVAL;
		}
		spec += n;
		if (*spec == ',')
			spec++;
	}
	cur_level = level;
	debug_mask = mask;
	return 0;
}

int ice_log_init_env(void)
{
	const char *s = getenv("ICE_LOG");
	int ret;

	if (s == NULL)
		return 0;
	ret = ice_log_setup(s);
	if (ret < 0)
		fprintf(stderr,
			"ice: ICE_LOG='%s' not understood; expected "
			"LEVEL[,debug=SUB+SUB] with LEVEL error|warn|info|debug\n",
			s);
	return ret;
}

void ice_log_vmsg(int level, uint32_t sub, const char *file, int line, const char *fmt, va_list ap)
{
	int saved = errno;
	char msg[1024];
	int off = 0;

	if (level < 0 || level > ICE_LOG_DEBUG)
		level = ICE_LOG_ERR;
	if (tag[0] != '\0')
		off = snprintf(msg, sizeof(msg), "[%s] ", tag);
	if (level == ICE_LOG_DEBUG) {
		const char *base = strrchr(file, '/');

		off += snprintf(msg + off, sizeof(msg) - off, "%s:%d: ", base ? base + 1 : file,
				line);
	} else if (level <= ICE_LOG_WARN) {
		off += snprintf(msg + off, sizeof(msg) - off, "%s: ", level_names[level]);
	}
	if (off < (int)sizeof(msg))
		vsnprintf(msg + off, sizeof(msg) - off, fmt, ap);
	if (sink_fn != NULL)
		sink_fn(level, sub, msg, sink_arg);
	else
		fprintf(stderr, "ice: %s\n", msg);
	errno = saved;
}

void ice_log_msg(int level, uint32_t sub, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ice_log_vmsg(level, sub, file, line, fmt, ap);
	va_end(ap);
}
