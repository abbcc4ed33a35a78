/* SPDX-License-Identifier: Apache-2.0 */
/* ice_time: monotonic clock helpers. All times are nanoseconds. */
#ifndef ICE_TIME_H
#define ICE_TIME_H

#include <stdint.h>
#include <time.h>

#define ICE_NSEC_PER_USEC 1000ull
#define ICE_NSEC_PER_MSEC 1000000ull
#define ICE_NSEC_PER_SEC  1000000000ull

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t ice_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * ICE_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME in milliseconds, for timestamps that leave the host. */
static inline uint64_t ice_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / ICE_NSEC_PER_MSEC;
}

/* CLOCK_REALTIME in nanoseconds (event and probe timestamps). */
static inline uint64_t ice_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * ICE_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in seconds, for benchmarks and planner budgets. */
static inline double ice_now_s(void)
{
	return (double)ice_now_ns() * 1e-9;
}

/* CPU seconds of the calling thread (a system call; under a CFS quota
 * the read itself may be where the thread is throttled). */
static inline double ice_thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds of the whole process, all its threads. */
static inline double ice_process_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sleep for ns nanoseconds (restarts after signals). */
void ice_sleep_ns(uint64_t ns);

/* Parse a duration such as "300us", "4ms", "2s", "1500ns" or a bare number
 * (taken in default_unit_ns units). Returns 0 or -EINVAL. */
int ice_parse_duration(const char *s, uint64_t default_unit_ns, uint64_t *out_ns);

/* Parse a size such as "64M", "4K", "1G", "512" (binary multiples).
 * Returns 0 or -EINVAL / -ERANGE. */
int ice_parse_size(const char *s, uint64_t *out);

/* Parse a rate such as "200mbit", "10gbit", "100000kbit" into bit/s. */
int ice_parse_rate(const char *s, uint64_t *out_bps);

#endif /* ICE_TIME_H */
