/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_log: levelled logging with subsystem masks.
 *
 * Every message has a level and a subsystem bit. A message prints when its
 * level is at or below the current level, or when it is a debug message of a
 * subsystem whose bit is set in the debug mask. Logging never changes errno.
 * Set at run time with ice_log_setup("info,debug=tp+dcqcn") or the ICE_LOG
 * environment variable (same syntax, read by ice_log_init_env()).
 *
 * Hot paths use ice_dbg_hot(), which compiles to nothing unless ICE_HOT_DEBUG
 * is defined at build time.
 */
#ifndef ICE_LOG_H
#define ICE_LOG_H

#include <stdarg.h>
#include <stdint.h>

enum ice_log_level {
	ICE_LOG_ERR = 0,
	ICE_LOG_WARN = 1,
	ICE_LOG_INFO = 2,
	ICE_LOG_DEBUG = 3,
};

/* Subsystem bits for the debug mask; names in ice_log.c's table. */
enum ice_log_sub {
	ICE_SUB_COMMON = 1u << 0,
	ICE_SUB_CONFIG = 1u << 1,
	ICE_SUB_WIRE = 1u << 2,
	ICE_SUB_QP = 1u << 3,
	ICE_SUB_DCQCN = 1u << 4,
	ICE_SUB_ENGINE = 1u << 5,
	ICE_SUB_COMM = 1u << 6,
	ICE_SUB_COLL = 1u << 7,
	ICE_SUB_BENCH = 1u << 8,
	ICE_SUB_ALL = 0xffffffffu,
};

/*
 * A module's own subsystem, registered at start-up (before main, so ICE_LOG
 * may name it): in one of the module's .c files
 *     ICE_LOG_SUBSYSTEM(agent_log_sub, "agent");
 * and in its internal header
 *     extern uint32_t agent_log_sub;
 * then ice_info(agent_log_sub, ...), ICE_LOG=info,debug=agent. Names are up
 * to 15 characters; the same name gives the same bit.
 */
uint32_t ice_log_register(const char *name);
#define ICE_LOG_SUBSYSTEM(var, name)                                                               \
	uint32_t var = ICE_SUB_COMMON;                                                             \
	__attribute__((constructor)) static void var##_register(void)                              \
	{                                                                                          \
		var = ice_log_register(name);                                                      \
	}

/* A sink receives the fully formatted line (no trailing newline). */
typedef void (*ice_log_sink_fn)(int level, uint32_t sub, const char *line, void *arg);

void ice_log_set_level(int level);
int ice_log_get_level(void);
void ice_log_set_debug_mask(uint32_t mask);
/* Replace the sink (default: stderr). NULL restores the default. */
void ice_log_set_sink(ice_log_sink_fn fn, void *arg);
/* Prefix every line with a tag such as "rank 3" (copied; NULL clears). */
void ice_log_set_tag(const char *tag);
/* Parse "LEVEL[,debug=SUB+SUB...]"; returns 0 or -EINVAL. */
int ice_log_setup(const char *spec);
/* Apply ICE_LOG from the environment when set; returns ice_log_setup()'s result. */
int ice_log_init_env(void);
int ice_log_enabled(int level, uint32_t sub);

void ice_log_msg(int level, uint32_t sub, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void ice_log_vmsg(int level, uint32_t sub, const char *file, int line, const char *fmt, va_list ap);

#define ice_log(level, sub, ...)                                                                   \
	do {                                                                                       \
		if (ice_log_enabled(level, sub))                                                   \
			ice_log_msg(level, sub, __FILE__, __LINE__, __VA_ARGS__);                  \
	} while (0)

#define ice_err(sub, ...)  ice_log(ICE_LOG_ERR, sub, __VA_ARGS__)
#define ice_warn(sub, ...) ice_log(ICE_LOG_WARN, sub, __VA_ARGS__)
#define ice_info(sub, ...) ice_log(ICE_LOG_INFO, sub, __VA_ARGS__)
#define ice_dbg(sub, ...)  ice_log(ICE_LOG_DEBUG, sub, __VA_ARGS__)

#ifdef ICE_HOT_DEBUG
#define ice_dbg_hot(sub, ...) ice_dbg(sub, __VA_ARGS__)
#else
#define ice_dbg_hot(sub, ...)                                                                      \
	do {                                                                                       \
	} while (0)
#endif

#endif /* ICE_LOG_H */
