// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_heap.c: the planner's binary min-heap of (key, id), shared by the
 * local search (the most utilised link: key = -utilisation) and the
 * water-filling (the next saturation level). Neither removes or updates
 * entries: a changed item is pushed again and the stale entry skipped when
 * it surfaces.
 */
#include <errno.h>
#include <stdlib.h>

#include "ctl_path_internal.h"

int ctl_heap_reserve(struct ctl_heap *h, size_t cap)
{
	struct ctl_heap_ent *v;

	if (cap <= h->cap)
		return 0;
	v = realloc(h->v, cap * sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	h->v = v;
	h->cap = cap;
	return 0;
}

int ctl_heap_push(struct ctl_heap *h, double key, uint32_t id)
{
	struct ctl_heap_ent e = {.key = key, .id = id};
	size_t i;

	if (h->n == h->cap && ctl_heap_reserve(h, h->cap ? 2 * h->cap : 1024) < 0)
		return -ENOMEM;
	i = h->n++;
	while (i > 0 && h->v[(i - 1) / 2].key > e.key) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = e;
	return 0;
}

struct ctl_heap_ent ctl_heap_pop(struct ctl_heap *h)
{
	struct ctl_heap_ent top = h->v[0], e = h->v[--h->n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->v[c + 1].key < h->v[c].key)
			c++;
		if (h->v[c].key >= e.key)
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n > 0)
		h->v[i] = e;
	return top;
}

void ctl_heap_fini(struct ctl_heap *h)
{
	free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}
