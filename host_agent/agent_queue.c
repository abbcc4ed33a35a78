// SPDX-License-Identifier: Apache-2.0
/* agent_queue: rendered intervals waiting for Redis, oldest dropped first. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

int agent_queue_init(struct agent_queue *q, size_t cap)
{
	memset(q, 0, sizeof(*q));
	if (cap == 0)
		return -EINVAL;
	q->item = calloc(cap, sizeof(*q->item));
	if (q->item == NULL)
		return -ENOMEM;
	q->cap = cap;
	return 0;
}

void agent_queue_fini(struct agent_queue *q)
{
	while (q->len > 0)
		agent_queue_pop(q);
	free(q->item);
	memset(q, 0, sizeof(*q));
}

int agent_queue_push(struct agent_queue *q, char *buf, size_t len, unsigned ncmd, uint64_t seq)
{
	struct agent_queue_item *it;

	if (q->len == q->cap) {
		agent_queue_pop(q);
		q->dropped++;
	}
	it = &q->item[(q->head + q->len) % q->cap];
	*it = (struct agent_queue_item){buf, len, ncmd, seq};
	q->len++;
	return 0;
}

struct agent_queue_item *agent_queue_head(struct agent_queue *q)
{
	return q->len > 0 ? &q->item[q->head] : NULL;
}

void agent_queue_pop(struct agent_queue *q)
{
	if (q->len == 0)
		return;
	free(q->item[q->head].buf);
	q->item[q->head].buf = NULL;
	q->head = (q->head + 1) % q->cap;
	q->len--;
}
