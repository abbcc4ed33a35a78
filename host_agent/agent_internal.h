/* SPDX-License-Identifier: Apache-2.0 */
/* agent_internal: pieces shared by the agent's files; not for other modules. */
#ifndef ICE_AGENT_INTERNAL_H
#define ICE_AGENT_INTERNAL_H

#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "agent.h"
#include "ice_log.h"
#include "ice_redis.h"

/* Log subsystem of the agent (debug mask: "all" or "common"). */
extern uint32_t agent_log_sub; /* ICE_LOG=...,debug=agent */
#define AGENT_SUB agent_log_sub

/* ---- JSON (agent_json.c); the caller owns the returned json_t */
json_t *agent_qp_json(const struct agent_qp *q, const struct agent_sample *s);
json_t *agent_nic_json(const struct agent_sample *s, const struct agent_cfg *cfg);
json_t *agent_event_json(const struct ice_event *ev);

/* The same JSON text as json_dumps(JSON_COMPACT | JSON_REAL_PRECISION(10))
 * without jansson (agent_json.c): a real into buf (its length; -1 when not
 * finite, a value jansson refuses), a string quoted and escaped onto b. */
#define AGENT_JSON_REAL_MAX 40
extern const char *const agent_ctr_names[AGENT_NCTR]; /* struct agent_ctr's members */
int agent_json_real(char buf[AGENT_JSON_REAL_MAX], double v);
void agent_json_str(struct agent_buf *b, const char *s);

/* Append n bytes (b->failed when out of memory); inline: a QP record is
 * ~200 small pieces */
void agent_buf_put_grow(struct agent_buf *b, const char *p, size_t n);
static inline void agent_buf_put(struct agent_buf *b, const char *p, size_t n)
{
	if (n <= b->cap - b->len && n > 0 && !b->failed) {
		memcpy(b->p + b->len, p, n);
		b->len += n;
		return;
	}
	agent_buf_put_grow(b, p, n);
}

/* A dotted quad as inet_ntop writes it (be: network order); returns buf. */
char *agent_ip4_text(char buf[16], uint32_t be);

/* v in decimal, written at the end of buf; returns where it starts. */
char *agent_u64_text(char buf[24], uint64_t v);

struct agent_redis {
	const struct agent_cfg *cfg;
	struct ice_redis link;
	bool up;	   /* connected and registered */
	uint32_t errors;   /* error replies */
	uint64_t connects; /* successful (re)connections */
	uint64_t started_ms;
	bool bpf;
};

void agent_redis_init(struct agent_redis *r, const struct agent_cfg *cfg, bool bpf);
void agent_redis_fini(struct agent_redis *r);
/* Connect when due, then send queued intervals in order (bounded time).
 * Never blocks longer than the configured timeouts. */
void agent_redis_tick(struct agent_redis *r, struct agent_queue *q, uint64_t now_ns);
/* Best effort at exit: state offline, liveness keys removed. */
void agent_redis_offline(struct agent_redis *r);

/* ---- /metrics (agent_metrics.c) */
struct agent_self {
	double cpu_s;	/* user + system seconds */
	double cpu_pct; /* of one core, last interval */
	bool redis_up;
	size_t queue_depth;
	uint64_t dropped;   /* intervals dropped from the queue */
	uint64_t ev_ok;	    /* events accepted */
	uint64_t ev_bad;    /* malformed events */
	uint64_t ev_over;   /* events dropped: too many in an interval */
	uint64_t redis_err; /* error replies */
	uint64_t samples;   /* intervals sampled */
};

/* The server is common/ice_http.h's (ice_http_new, _fds, _free); this
 * answers GET /metrics after poll(). */
struct ice_http;
void agent_metrics_io(struct ice_http *m, const struct agent_sample *s, const struct agent_cfg *cfg,
		      const struct agent_self *self);
/* The Prometheus text of a sample (malloc'ed). */
char *agent_metrics_text(const struct agent_sample *s, const struct agent_cfg *cfg,
			 const struct agent_self *self);

/* ---- BPF source (agent_bpf.c; stubs when built without ebpf) */
struct agent_bpf;
bool agent_bpf_available(void);
/* attach: false = read the pinned maps only (another agent owns them). */
struct agent_bpf *agent_bpf_open(const struct agent_cfg *cfg, bool attach);
/* Append the flows; new-flow events counted into *new_flows. */
int agent_bpf_read(struct agent_bpf *b, struct agent_flow **flows, size_t *n, size_t *cap,
		   uint64_t *new_flows);
/* Detach (when attached) and close; unpin as well when unpin. */
void agent_bpf_close(struct agent_bpf *b, bool unpin);

#endif /* ICE_AGENT_INTERNAL_H */
