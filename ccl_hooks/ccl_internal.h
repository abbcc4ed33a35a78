/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ccl_internal: state shared by the parts of libice-ccl.so and
 * libnccl-profiler-ice.so (one private copy per library: the version
 * scripts keep every ccl_ symbol local).
 */
#ifndef CCL_INTERNAL_H
#define CCL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ice_event.h"
#include "ice_log.h"
#include "ice_time.h"

extern uint32_t ccl_log_sub; /* ICE_LOG=...,debug=ccl */
#define CCL_SUB ccl_log_sub

/* ICE_CCL_FAULT bits: test-only failure injection inside the hooks. */
#define CCL_FAULT_ALLOC 0x1u /* ccl_alloc() fails */
#define CCL_FAULT_SEND	0x2u /* every event send fails */

/* Environment controls, one row each in ccl_core.c's table. */
struct ccl_cfg {
	int disable;	/* ICE_CCL_DISABLE: pure pass-through */
	int events;	/* ICE_CCL_EVENTS: send events to the agent */
	int verbs;	/* ICE_CCL_VERBS: record (and steer) verbs QPs */
	int sample;	/* ICE_CCL_SAMPLE: report 1 of N operations */
	int dry_run;	/* ICE_CCL_DRY_RUN: never modify a QP */
	int flush_us;	/* ICE_CCL_FLUSH_US: oldest batched event's maximum age */
	unsigned fault; /* ICE_CCL_FAULT: CCL_FAULT_* */
};

extern struct ccl_cfg ccl_cfg;

/* Lazy, locked, once-only setup (environment, log sink, agent sender).
 * Cheap after the first call. */
void ccl_init(void);

/* malloc/realloc that honour ICE_CCL_FAULT=alloc; NULL on failure. */
void *ccl_alloc(size_t n);
void *ccl_realloc(void *p, size_t n);

/* Queue one event (call time already in ev->ts_ns) for the agent. Never
 * blocks for long, never fails the caller; events are sent in batches by
 * sendmmsg when the batch is full or its oldest event is older than
 * ICE_CCL_FLUSH_US. */
void ccl_emit(struct ice_event *ev);
/* True while events would be dropped anyway (no agent, back-off): callers
 * skip building them. A lock-free hint, refreshed by ccl_emit(). */
bool ccl_emit_idle(uint64_t now_ns);
/* Send what is batched now. */
void ccl_flush(void);
/* Counters for tests and the exit log line. */
uint64_t ccl_events_sent(void);
uint64_t ccl_events_dropped(void);

/* Communicator map: comm handle -> (id, rank, nranks). */
struct ccl_comm_info {
	uint64_t id;
	int32_t rank;
	int32_t nranks;
	uint32_t splits; /* ncclCommSplit calls made on it so far */
};
int ccl_comm_put(const void *comm, const struct ccl_comm_info *info);
bool ccl_comm_get(const void *comm, struct ccl_comm_info *out);
/* Its splits so far, counting this one (0 for its first; 0 when unknown). */
uint32_t ccl_comm_next_split(const void *comm);
void ccl_comm_del(const void *comm);

/* The verbs hook's periodic work (live source-port changes from the
 * control block), run from the NCCL hooks; cheap when nothing changed. */
void ccl_verbs_poll(void);

#endif /* CCL_INTERNAL_H */
