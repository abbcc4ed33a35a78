// SPDX-License-Identifier: Apache-2.0
#include "ice_bpf_util.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "ice_log.h"

ICE_LOG_SUBSYSTEM(bpf_log_sub, "bpf");

#define ICE_BPF_LOG_SUB bpf_log_sub

/* Messages libbpf prints when we probe for things that may be absent. */
static const char *const expected_noise[] = {
	"Exclusivity flag on",		      /* clsact exists already */
	"Parent Qdisc doesn't exist",	      /* query where nothing is */
	"Cannot find specified filter chain", /* detach where nothing is */
	"Filter with specified priority/protocol not found",
};

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	int lvl = level == LIBBPF_WARN	 ? ICE_LOG_WARN
		  : level == LIBBPF_INFO ? ICE_LOG_INFO
					 : ICE_LOG_DEBUG;
	char *buf = NULL;
	int n;

	if (!ice_log_enabled(lvl, ICE_BPF_LOG_SUB))
		return 0;
	n = vasprintf(&buf, fmt, ap); /* verifier logs: many lines, no fixed buffer */
	if (n < 0)
		return 0;
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	for (size_t i = 0; i < sizeof(expected_noise) / sizeof(expected_noise[0]); i++)
		if (strstr(buf, expected_noise[i]) != NULL)
			lvl = ICE_LOG_DEBUG;
	if (ice_log_enabled(lvl, ICE_BPF_LOG_SUB))
		ice_log_msg(lvl, ICE_BPF_LOG_SUB, __FILE__, __LINE__, "libbpf: %s", buf);
	free(buf);
	return 0;
}

void ice_bpf_log_init(void)
{
	libbpf_set_print(libbpf_print);
}

int ice_bpf_path(char *buf, size_t size, const char *dir, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= size) {
		ice_err(ICE_BPF_LOG_SUB, "pin path too long: %s/%s", dir, name);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* mkdir -p under bpffs, mounting bpffs on /sys/fs/bpf first when needed. */
int ice_bpf_pin_dir_create(const char *dir)
{
	char path[PATH_MAX];
	struct statfs sfs;
	size_t len = strlen(dir);

	if (len == 0 || len >= sizeof(path)) {
		ice_err(ICE_BPF_LOG_SUB, "pin directory '%s': expected a path of 1..%zu characters",
			dir, sizeof(path) - 1);
		return -EINVAL;
	}
	if (strncmp(dir, ICE_BPFFS_ROOT "/", strlen(ICE_BPFFS_ROOT "/")) == 0 &&
	    (statfs(ICE_BPFFS_ROOT, &sfs) != 0 || sfs.f_type != BPF_FS_MAGIC)) {
		if (mount("bpf", ICE_BPFFS_ROOT, "bpf", 0, "mode=0700") != 0) {
			int err = -errno;

			ice_err(ICE_BPF_LOG_SUB,
				"%s is not a bpf filesystem and mounting one failed: %s",
				ICE_BPFFS_ROOT, strerror(-err));
			return err;
		}
		ice_info(ICE_BPF_LOG_SUB, "mounted bpffs on %s", ICE_BPFFS_ROOT);
	}
	memcpy(path, dir, len + 1);
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(path, 0700) != 0 && errno != EEXIST) {
			int err = -errno;

			ice_err(ICE_BPF_LOG_SUB, "pin directory %s: mkdir %s: %s", dir, path,
				strerror(-err));
			return err;
		}
		*p = c;
		if (c == '\0')
			break;
	}
	return 0;
}

int ice_bpf_pin_maps(struct bpf_object *obj, const char *dir)
{
	char path[PATH_MAX];
	struct bpf_map *map;
	int err;

	bpf_object__for_each_map(map, obj)
	{
		if (bpf_map__is_internal(map))
			continue;
		err = ice_bpf_path(path, sizeof(path), dir, bpf_map__name(map));
		if (err)
			return err;
		err = bpf_map__set_pin_path(map, path);
		if (err) {
			ice_err(ICE_BPF_LOG_SUB, "pin path %s: %s", path, strerror(-err));
			return err;
		}
	}
	return 0;
}
