// SPDX-License-Identifier: Apache-2.0
#include "tp_mem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void *host_alloc(size_t len)
{
	void *p = NULL;
	int ret = posix_memalign(&p, 64, len != 0 ? len : 64);

	if (ret != 0) {
		errno = ret;
		return NULL;
	}
	return p;
}

static void host_free(void *p)
{
	free(p);
}

static int host_copy(void *dst, const void *src, size_t len)
{
	if (dst != src)
		memcpy(dst, src, len);
	return 0;
}

static const struct tp_mem_ops host_ops = {
	.kind = TP_MEM_HOST,
	.name = "host",
	.alloc = host_alloc,
	.free = host_free,
	.to_host = host_copy,
	.from_host = host_copy,
};

const struct tp_mem_ops *tp_mem_ops_get(enum tp_mem_kind kind)
{
	if (kind == TP_MEM_HOST)
		return &host_ops;
	errno = ENODEV;
	return NULL;
}

int tp_mem_kind_parse(const char *s)
{
	static const char *const names[] = {"host", "cuda", "hip"};

	for (int i = 0; i < TP_MEM_KIND_MAX; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}
