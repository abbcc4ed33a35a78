/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_cpu: how many CPU cores this process may use, as the kernel limits
 * it: the online CPUs, the affinity mask (taskset, cpuset) and the CFS
 * bandwidth quota of its cgroup and every ancestor (v2 cpu.max, v1
 * cpu.cfs_quota_us / cpu.cfs_period_us); and how much memory it may
 * still take.
 */
#ifndef ICE_CPU_H
#define ICE_CPU_H

#include <stddef.h>

/* The least of the three limits, in cores (0.5: half a core of quota),
 * > 0. why (if not NULL) gets which limit it was and its figures, e.g.
 * "cgroup v1 /ice-x quota 50000/100000 us" or "affinity 1 of 2 online". */
double ice_cpu_cores(char *why, size_t len);

/* The quota of a cgroup file pair as cores, or 0 when there is none:
 * v2 cpu.max text ("max 100000" or "50000 100000"); pure, for tests. */
double ice_cpu_max_cores(const char *cpu_max);

/* The memory this process may still take, bytes: /proc/meminfo's
 * MemAvailable, or less where its cgroup or an ancestor limits it (v2
 * memory.max - memory.current, v1 memory.limit_in_bytes -
 * memory.usage_in_bytes); *total: MemTotal. why (if not NULL) names the
 * limit ("MemAvailable" or the cgroup's). 0, or -1 when /proc/meminfo
 * cannot be read. */
int ice_mem_avail(double *avail, double *total, char *why, size_t len);

#endif /* ICE_CPU_H */
