// SPDX-License-Identifier: Apache-2.0
/*
 * ice_cpu: the cores and the memory the kernel lets this process use
 * (ice_cpu.h).
 */
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ice_cpu.h"

double ice_cpu_max_cores(const char *cpu_max)
{
	double quota, period;

	if (cpu_max == NULL || strncmp(cpu_max, "max", 3) == 0)
		return 0;
	if (sscanf(cpu_max, "%lf %lf", &quota, &period) != 2 || !(quota > 0) || !(period > 0))
		return 0;
	return quota / period;
}

static double read_num(const char *path, bool *ok)
{
	char buf[64];
	FILE *f = fopen(path, "r");

	*ok = false;
	if (f == NULL)
		return 0;
	if (fgets(buf, sizeof(buf), f) != NULL)
		*ok = true;
	fclose(f);
	return *ok ? strtod(buf, NULL) : 0;
}

/* The tightest quota of the cgroup at path (under root) and its
 * ancestors, in cores; 0 when none. v2: cpu.max; v1: cfs_quota_us over
 * cfs_period_us (quota -1: none). */
static double cg_quota(const char *root, const char *path, bool v2, char *where, size_t wlen)
{
	char p[600], dir[512];
	double best = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	for (;;) {
		double c = 0;
		bool ok1, ok2;

		if (v2) {
			char buf[64] = "";
			FILE *f;

			snprintf(p, sizeof(p), "%s%s/cpu.max", root, dir);
			f = fopen(p, "r");
			if (f != NULL) {
				if (fgets(buf, sizeof(buf), f) == NULL)
					buf[0] = '\0';
				fclose(f);
			}
			c = ice_cpu_max_cores(buf);
		} else {
			double q, per;

			snprintf(p, sizeof(p), "%s%s/cpu.cfs_quota_us", root, dir);
			q = read_num(p, &ok1);
			snprintf(p, sizeof(p), "%s%s/cpu.cfs_period_us", root, dir);
			per = read_num(p, &ok2);
			if (ok1 && ok2 && q > 0 && per > 0)
				c = q / per;
		}
		if (c > 0 && (best == 0 || c < best)) {
			best = c;
			snprintf(where, wlen, "cgroup %s %.200s quota %.2f cores", v2 ? "v2" : "v1",
				 dir[0] ? dir : "/", c);
		}
		char *slash = strrchr(dir, '/');

		if (slash == NULL || dir[0] == '\0')
			break;
		*slash = '\0';
	}
	return best;
}

typedef double (*cg_fn)(const char *root, const char *path, bool v2, char *where, size_t wlen);

/* The least positive fn(root, path) over this process's cgroups: the v2
 * one, and the v1 hierarchy holding controller ctrl (mounted at
 * /sys/fs/cgroup/<its controllers> or /sys/fs/cgroup/<ctrl>); 0 if none. */
static double cg_least(const char *ctrl, cg_fn fn, char *where, size_t wlen)
{
	char line[512], want[64];
	double best = 0;
	FILE *f = fopen("/proc/self/cgroup", "r");

	if (f == NULL)
		return 0;
	snprintf(want, sizeof(want), ",%s,", ctrl);
	while (fgets(line, sizeof(line), f) != NULL) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *path;
		char ctrls[256];
		double c = 0;

		if (c2 == NULL)
			continue;
		path = c2 + 1;
		path[strcspn(path, "\n")] = '\0';
		if (strcmp(path, "/") == 0)
			path = (char *)"";
		snprintf(ctrls, sizeof(ctrls), ",%.*s,", (int)(c2 - c1 - 1), c1 + 1);
		if (c2 == c1 + 1) { /* "0::/path": v2 */
			c = fn("/sys/fs/cgroup", path, true, where, wlen);
		} else if (strstr(ctrls, want) != NULL) {
			char root[300];

			snprintf(root, sizeof(root), "/sys/fs/cgroup/%.*s", (int)(c2 - c1 - 1),
				 c1 + 1);
			if (access(root, F_OK) != 0)
				snprintf(root, sizeof(root), "/sys/fs/cgroup/%s", ctrl);
			c = fn(root, path, false, where, wlen);
		}
		if (c > 0 && (best == 0 || c < best))
			best = c;
	}
	fclose(f);
	return best;
}

double ice_cpu_cores(char *why, size_t len)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;
	double cores, quota;
	int aff = 0;
	char where[256] = "";

	if (online < 1)
		online = 1;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		aff = CPU_COUNT(&set);
	cores = (double)online;
	if (why != NULL)
		snprintf(why, len, "%ld online", online);
	if (aff > 0 && aff < cores) {
		cores = aff;
		if (why != NULL)
			snprintf(why, len, "affinity %d of %ld online", aff, online);
	}
	quota = cg_least("cpu", cg_quota, where, sizeof(where));
	if (quota > 0 && quota < cores) {
		cores = quota;
		if (why != NULL)
			snprintf(why, len, "%s", where);
	}
	return cores;
}

/* ---- memory ------------------------------------------------------------------ */

/* "Key:   N kB" of /proc/meminfo, bytes; 0 when absent. */
static double meminfo(const char *text, const char *key)
{
	const char *k = strstr(text, key);

	return k != NULL ? strtod(k + strlen(key), NULL) * 1024 : 0;
}

/* The value of "key N" in a memory.stat file, 0 when absent. */
static double stat_key(const char *path, const char *key)
{
	char line[256];
	double v = 0;
	size_t n = strlen(key);
	FILE *f = fopen(path, "r");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, n) == 0 && line[n] == ' ') {
			v = strtod(line + n + 1, NULL);
			break;
		}
	if (f != NULL)
		fclose(f);
	return v;
}

/* The least room (limit - usage) of the cgroup at root + path and its
 * ancestors, bytes; 0 when none sets a limit. v2: memory.max ("max": none)
 * and memory.current; v1: memory.limit_in_bytes (near 2^63: none) and
 * memory.usage_in_bytes. The usage counts page cache the kernel would
 * reclaim: its inactive file pages (memory.stat) are taken off it, as
 * MemAvailable does. */
static double cg_mem_room(const char *root, const char *path, bool v2, char *where, size_t wlen)
{
	char p[600], dir[512];
	double best = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	for (;;) {
		double lim, use;
		bool ok1, ok2;
		char *slash;

		snprintf(p, sizeof(p), "%s%s/%s", root, dir,
			 v2 ? "memory.max" : "memory.limit_in_bytes");
		lim = read_num(p, &ok1); /* "max" reads as 0 */
		snprintf(p, sizeof(p), "%s%s/%s", root, dir,
			 v2 ? "memory.current" : "memory.usage_in_bytes");
		use = read_num(p, &ok2);
		snprintf(p, sizeof(p), "%s%s/memory.stat", root, dir);
		use -= stat_key(p, v2 ? "inactive_file" : "total_inactive_file");
		if (ok1 && ok2 && lim > 0 && lim < 4e18) {
			double room = lim > use ? lim - use : 0;

			if (best == 0 || room < best) {
				best = room > 0 ? room : 1;
				snprintf(where, wlen,
					 "cgroup %s %.200s limit %.0f MiB, %.0f MiB used",
					 v2 ? "v2" : "v1", dir[0] ? dir : "/", lim / 1048576,
					 use / 1048576);
			}
		}
		slash = strrchr(dir, '/');
		if (slash == NULL || dir[0] == '\0')
			break;
		*slash = '\0';
	}
	return best;
}

int ice_mem_avail(double *avail, double *total, char *why, size_t len)
{
	char text[8192], where[300] = "";
	size_t n;
	double room;
	FILE *f = fopen("/proc/meminfo", "r");

	if (f == NULL)
		return -1;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	*total = meminfo(text, "MemTotal:");
	*avail = meminfo(text, "MemAvailable:");
	if (!(*total > 0))
		return -1;
	if (why != NULL)
		snprintf(why, len, "MemAvailable");
	room = cg_least("memory", cg_mem_room, where, sizeof(where));
	if (room > 0 && room < *avail) {
		*avail = room;
		if (why != NULL)
			snprintf(why, len, "%s", where);
	}
	return 0;
}
