// SPDX-License-Identifier: Apache-2.0
/*
 * ice_cpu: the cores the kernel lets this process use (ice_cpu.h).
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

/* This process's cgroup quota (v1 cpu controller, else v2), 0 if none. */
static double cgroup_cores(char *where, size_t wlen)
{
	char line[512];
	double best = 0;
	FILE *f = fopen("/proc/self/cgroup", "r");

	if (f == NULL)
		return 0;
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
			c = cg_quota("/sys/fs/cgroup", path, true, where, wlen);
		} else if (strstr(ctrls, ",cpu,") != NULL) {
			char root[300];

			snprintf(root, sizeof(root), "/sys/fs/cgroup/%.*s", (int)(c2 - c1 - 1),
				 c1 + 1);
			if (access(root, F_OK) != 0)
				snprintf(root, sizeof(root), "/sys/fs/cgroup/cpu");
			c = cg_quota(root, path, false, where, wlen);
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
	quota = cgroup_cores(where, sizeof(where));
	if (quota > 0 && quota < cores) {
		cores = quota;
		if (why != NULL)
			snprintf(why, len, "%s", where);
	}
	return cores;
}
