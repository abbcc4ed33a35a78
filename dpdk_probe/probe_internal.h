/* SPDX-License-Identifier: Apache-2.0 */
/* ice-probe internals: the session, path discovery, health, output. */
#ifndef ICE_PROBE_INTERNAL_H
#define ICE_PROBE_INTERNAL_H

#include <jansson.h>

#include "probe.h"
#include "probe_io.h"
#include "probe_wire.h"

struct topo;

/* One local NIC probing (or answering): the backend, the outstanding
 * probes, the rate limit. */
struct probe_sess {
	const struct probe_cfg *cfg;
	struct probe_io *io;
	struct probe_track track;
	struct in_addr local;
	const struct topo *topo; /* optional: node names, path counts */
	bool responder;		 /* answer probes addressed to us */
	double tokens, rate_Bps; /* token bucket, bytes */
	uint64_t tb_last_ns;
	uint64_t answered; /* probes answered as a responder */
	uint64_t sent[3];  /* probes sent, by kind (PROBE_KIND_TRACE, _ECHO) */
	uint64_t t_init_ns;
	struct probe_pkt rx[64];
};

/* Called for every matched answer (slot still live; set o->live = false to
 * retire it). */
typedef void (*probe_rx_fn)(struct probe_sess *s, const struct probe_rx *rx, struct probe_out *o,
			    void *arg);

int probe_sess_init(struct probe_sess *s, const struct probe_cfg *cfg,
		    const struct probe_io_ops *ops, struct in_addr local, const struct topo *t);
void probe_sess_fini(struct probe_sess *s);
/* Send one probe (waits for rate-limit tokens). 0 or -errno. */
int probe_sess_send(struct probe_sess *s, struct in_addr dst, uint16_t sport, uint8_t ttl,
		    uint8_t kind, uint16_t path, uint32_t pair);
/* Receive for at most timeout_ns, dispatching matched answers to fn. Returns
 * the number of packets seen or -errno. */
int probe_sess_poll(struct probe_sess *s, uint64_t timeout_ns, probe_rx_fn fn, void *arg);
/* Name of a hop address: the topology node holding it, else the address. */
const char *probe_hop_name(const struct probe_sess *s, struct in_addr a, char *buf, size_t len);
/* Link rate of the local NIC (topology) or cfg->link_rate or 100 Gbit/s. */
uint64_t probe_link_rate(const struct probe_cfg *cfg, const struct topo *t, struct in_addr local);

/* ---- path discovery --------------------------------------------------------- */

/* Discovery's probes carry this pair index: a late answer that reaches the
 * watch (a resent TTL's first answer) is no path check. */
#define PROBE_PAIR_DISCOVERY UINT32_MAX
int probe_discover(struct probe_sess *s, struct in_addr dst, struct probe_pathmap *m);
int probe_path_find(const struct probe_pathmap *m, const char *name);
void probe_pathmap_print(const struct probe_pathmap *m, FILE *f);

/* ---- health ------------------------------------------------------------------- */

#define PROBE_RTT_SAMPLES 1024
#define PROBE_CHECK_PORTS 4 /* ports of each path re-traced per interval */
#define PROBE_BASE_WIN	  256

struct probe_health {
	char name[PROBE_PATH_NAME];
	int idx; /* in the pair's current map; -1: gone */
	uint16_t sport;
	bool dead;
	uint64_t dead_since_ms;
	uint32_t silent;
	uint64_t next_send_ns;
	/* this interval */
	uint32_t sent, rcvd, lost, n;
	double rtt[PROBE_RTT_SAMPLES], fwd[PROBE_RTT_SAMPLES], rev[PROBE_RTT_SAMPLES]; /* us */
	/* per-interval minima, for the base over base_window */
	struct {
		uint64_t ts_ns;
		double rtt, fwd, rev;
	} win[PROBE_BASE_WIN];
	uint32_t nwin, win_head;
	/* path check: hop names seen for this interval's trace probes */
	char vhop[PROBE_MAX_HOPS][PROBE_NAME_MAX];
	uint32_t vsent, vgot;
	json_t *last; /* the last record */
};

struct probe_pair_state {
	struct probe_pair pair;
	struct probe_pathmap map;
	uint32_t nh;
	struct probe_health *h[PROBE_MAX_PATHS * 2];
	uint64_t next_refresh_ns;
	bool remap; /* rediscover at the next report */
	uint32_t remaps;
	uint32_t check_turn; /* which of a path's ports the next path check traces */
};

struct probe_watch_opts {
	bool json;
	FILE *out;
	struct probe_redis *redis;
};
int probe_watch(struct probe_sess *s, const struct probe_pinglist *pl,
		const struct probe_watch_opts *o);
int probe_respond(struct probe_sess *s);
/* Percentile p (0..100) of v[0..n) (sorted in place); 0 when n == 0. */
double probe_percentile(double *v, uint32_t n, double p);

/* ---- Redis ----------------------------------------------------------------- */

/* The controller's pinglist (ice:<F>:probe:pinglist); -ENOENT when absent. */
int probe_redis_pinglist(struct probe_redis *r, const struct topo *t, struct probe_pinglist *pl,
			 struct ice_cfg_err *err);

/* ---- rehash notices (ice:<F>:probe:rehash) ------------------------------------
 * A watcher whose path check saw a port cross another switch names the
 * switch before the changed hop in the fabric's notice stream; every other
 * watcher reads the stream every notice_poll and remaps at once the pairs
 * whose paths cross that switch at a hop that is not their last (where the
 * switch picks the next hop), instead of waiting for its own checks. */

#define PROBE_NOTICE_READ     16   /* entries read per poll */
#define PROBE_NOTICE_HOLD_MS  1000 /* notices of one switch this close are one event */
#define PROBE_NOTICE_SEEN     32   /* switches remembered */
#define PROBE_NOTICE_AHEAD_MS 1000 /* a notice's time this far ahead of ours: malformed */

struct probe_notice {
	char host[64];
	char sw[PROBE_NAME_MAX];
	uint64_t ts_ms; /* when the sender's check saw the move (wall clock) */
	bool bad;	/* no switch, or one too long; no ts_ms */
};

/* Publish that switch sw hashes differently (m: the pair whose port moved). */
int probe_redis_notice_send(struct probe_redis *r, const char *sw, const struct probe_pathmap *m,
			    uint16_t port, uint32_t hop, uint64_t ts_ms);
/* Other hosts' notices since the last call, up to max (the first call reads
 * none: it takes the stream's end). The count, -ENOTCONN (no Redis now) or
 * -EIO (the connection broke; retried later). */
int probe_redis_notice_read(struct probe_redis *r, struct probe_notice *out, int max);

enum probe_notice_verdict {
	PROBE_NOTICE_ACT,     /* a new event: remap the pairs crossing the switch */
	PROBE_NOTICE_SAME,    /* an event already handled (ours or another host's) */
	PROBE_NOTICE_UNKNOWN, /* the topology has no switch of that name */
	PROBE_NOTICE_BAD,     /* malformed */
};

/* What a watcher remembers of notices, and its counters. */
struct probe_notices {
	struct {
		char sw[PROBE_NAME_MAX];
		uint64_t ts_ms;
	} seen[PROBE_NOTICE_SEEN];
	uint32_t nseen;
	uint64_t sent, send_failed, read, acted, same, elsewhere, unknown, bad, pairs;
	bool unknown_logged, bad_logged, send_logged;
};

/* Judge notice x against what n remembers and the topology t (NULL: every
 * name is accepted); an ACT is remembered, as is record() for the watcher's
 * own detections. Counts into n. */
enum probe_notice_verdict probe_notice_judge(struct probe_notices *n, const struct topo *t,
					     const struct probe_notice *x);
void probe_notice_record(struct probe_notices *n, const char *sw, uint64_t ts_ms);
/* Mark for remapping every pair of ps[0..np) but except whose map crosses
 * switch sw at a hop other than its last and was discovered (started)
 * before ts_ms; pairs already marked are left. Returns how many it marked. */
uint32_t probe_pairs_crossing(struct probe_pair_state *ps, uint32_t np,
			      const struct probe_pair_state *except, const char *sw,
			      uint64_t ts_ms);

#endif /* ICE_PROBE_INTERNAL_H */
