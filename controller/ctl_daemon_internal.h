/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_daemon_internal.h: what the daemon's files share (ctl_daemon.c: the
 * planning step and life; ctl_daemon_redis.c: the connection;
 * ctl_daemon_view.c: the view from Redis; ctl_daemon_lease.c: the leader
 * lease; ctl_daemon_publish.c: fenced publishing). Not part of the API:
 * ctl_daemon.h is.
 */
#ifndef CTL_DAEMON_INTERNAL_H
#define CTL_DAEMON_INTERNAL_H

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctl_daemon.h"
#include "ctl_pfc.h"
#include "ctl_pmap.h"
#include "ctl_telem.h"
#include "ice_http.h"
#include "ice_redis.h"
#include "ice_time.h"

extern uint32_t ctld_log_sub; /* ICE_LOG=...,debug=ctl */
#define SUB ctld_log_sub

#define LDOWN_KEY	1u   /* the fabric's link key (ice:<F>:links) says down */
#define LDOWN_OPER	2u   /* a switch port's oper-status (telemetry) is not UP */
#define LDOWN_PROBE	4u   /* ice-probe: dead paths cross it, no live one does */
#define LINK_DOWN_BPS	1000 /* capacity the planner sees for a down link */
#define APPLY_WAIT_MS	3000 /* give up waiting for every host's write-back */
#define QP_STALE_MIN_MS 3000
#define PEAK_DECAY	0.95 /* per QP view refresh: half-life ~14 refreshes */
#define ARGV_MAX	4096
#define CTLD_HIST_MAX	12 /* histogram buckets (ctl_daemon_ops.c) */

enum trig {
	TRIG_NONE = 0,
	TRIG_QP = 1,	     /* QPs appeared, went idle or away: incremental */
	TRIG_LINK = 2,	     /* link state changed */
	TRIG_COLL = 4,	     /* a collective was announced (or its pattern changed) */
	TRIG_REOPT = 8,	     /* periodic */
	TRIG_TAKEOVER = 16,  /* became leader */
	TRIG_PMAP = 32,	     /* a probe map changed (or a pair got its first) */
	TRIG_TELEM = 64,     /* a link stayed congested (switch telemetry) */
	TRIG_REFRESH = 128,  /* a third of the plan's lifetime gone: republish, move nothing */
	TRIG_PERIODIC = 256, /* the reopt timer (no fabric tie-break alone) */
	TRIG_COLL_END = 512  /* a collective ended: rates again, routes kept */
};

struct cqp {
	uint32_t host; /* topo node */
	uint32_t src, dst;
	uint32_t lip, qpn, rqpn;
	uint16_t sport_now;
	double rate_bps;
	double peak_bps; /* decaying maximum of rate_bps: the flow's demand */
	bool active;
	/* planned state, carried across view refreshes */
	bool planned;
	uint16_t sport;
	struct ctl_route route;
	double plan_bps;      /* the planned rate (target, else the demand), bit/s */
	uint64_t moved_tick;  /* telemetry interval of its last move; 0 = never */
	double cnp_s, retx_s; /* CNPs received, packets resent, per second (its agent's) */
	/* its last move, to be judged: did it help? */
	struct {
		bool pending;
		uint64_t tick;		/* when it moved */
		double rate_bps, cnp_s; /* before */
		char id[32];
	} verdict;
	/* per plan */
	double ann_bps;
	uint32_t ann_flags;
	enum ctl_coll_op op;
	uint64_t coll_id, msg_bytes;
	uint64_t ann_ms; /* wall ms its collective became active (ramp-up), 0 none */
};

/* A QP's move in the plan being made, and why (published after it). */
struct cmove {
	char qp[32];		 /* "<local address>:<QPN>", the agent's QP id */
	char rule[16];		 /* congestion, link-down, collective, qps, probe-map, periodic */
	char link[96];		 /* the link that made it move, "leaf1>spine1" */
	char from[128], to[128]; /* routes, "leaf1>spine1>leaf2" */
	double measured, planned, unplanned; /* that link's loads, bytes/s */
	uint64_t coll_id;
};

/* A QP's why record (ctl:qp:<id>) as this controller last wrote it. */
struct cwhy {
	char id[32];   /* "<local address>:<QPN>" */
	uint64_t hash; /* of its content (not plan_epoch, plan_ts_ms); 0: unknown */
	uint64_t ms;   /* wall clock of its last write or TTL renewal */
	bool written;  /* by this publication */
	bool refresh;  /* its TTL renewed by this publication */
};

struct ccoll {
	char comm[24];
	char job[24]; /* the job's label (ICE_JOB), "" = none */
	enum ctl_coll_op op;
	uint64_t bytes;
	uint32_t nranks;
	uint32_t *nic; /* per rank: topo port, UINT32_MAX unknown */
	int32_t *next;
	uint32_t seen;
	uint64_t last_ms, trigger_ms;
	uint64_t active_ms; /* wall ms its last rank was seen: its QPs ramp up */
	bool active;
};

/* A host NIC's address and its topology port (the QP view's lookup). */
struct addr_ix {
	uint32_t addr; /* network order */
	uint32_t port;
};

struct chost {
	char name[64];
	uint32_t node;
	char last_id[48]; /* event stream position */
};

struct pending {
	bool on;
	uint64_t epoch, trigger_ms, seen_ms, planned_ms, pub_ms;
	bool stale_said; /* a host's stale refusal handled */
	char what[96];
	char (*hosts)[64];
	uint32_t nhosts;
};

struct ctld {
	struct ctld_cfg cfg;
	volatile sig_atomic_t stop;
	struct topo *topo;
	uint64_t *rate0;
	uint8_t *down; /* per link: LDOWN_* of who says it is down; 0: up */
	char (*lname)[64];
	struct ctl_planner *pl;
	struct ctl_policy *pol;
	struct ice_plan_key key; /* the private key plans are signed with */
	struct ice_redis link;	 /* link.c: NULL while down */

	char k_leader[128], k_epoch[128], k_pub[128], k_log[128], k_links[128], k_status[128],
		k_hosts[128];

	struct chost *hosts;
	uint32_t nhosts;
	uint32_t *host_ix;	/* indices of hosts[] sorted by name */
	uint32_t ev_next;	/* the host whose events are read next */
	struct addr_ix *nic_ix; /* the topology's host NICs sorted by address */
	uint32_t nnic_ix;
	struct cqp *qps;
	size_t nqps;
	/* the QP view's last refresh (ctld_read_qps): its time, the longest
	 * since the last status write, counts (in {ctl}:status, view_*) */
	uint64_t view_ns, view_max_ns, view_reads;
	uint64_t view_cpu_ns;  /* the last refresh's CPU time (this thread's) */
	uint64_t squats;       /* leader keys taken from a squatter (ctl_daemon_lease.c) */
	bool lease_err;	       /* taking the lease failed; said once */
	uint64_t lease_ns;     /* when the lease was last taken or renewed */
	uint64_t view_bad;     /* QP records dropped: malformed fields */
	uint64_t view_capped;  /* QP index reads cut at host_qps_max */
	uint64_t view_foreign; /* QP records dropped: filed under a host that
				  does not have their local address */
	struct ccoll *colls;
	size_t ncolls;

	bool leader, started;
	unsigned trig;
	uint64_t trig_ms, trig_seen_ms;
	char trig_what[96];
	uint64_t next_qp_ns, next_reopt_ns;
	bool qps_due; /* a QP event came: read the QPs now, not at next_qp_ns */

	struct ice_host_plan *last;
	uint32_t nlast;
	uint64_t last_pub_ns, last_epoch;
	uint64_t bogus_epoch; /* the last floor ignored as not an epoch (said once) */
	bool epoch_check;     /* recover the counter before the next epoch */
	uint64_t stale_floor; /* a host refused ours as stale: its credible epoch */
	uint64_t stale_ms;    /* when the last such refusal was acted on */
	uint64_t plans;
	struct pending pend;

	/* source ports from ice-probe's maps (sports: probe, or auto on kernel ECMP) */
	bool probe;
	struct ctl_pmap *pmaps;
	uint32_t npmaps;
	char (*hkeys)[ICE_RKEY_MAX]; /* the probed pairs' health records */
	bool *probe_hot;	     /* [2 * nlinks]: only paths with a standing queue cross it */
	uint32_t nhkeys;
	uint64_t next_pmap_ns;
	long long pmap_version; /* ice:<F>:probe:version when the maps were last read */
	bool pmap_changed;	/* a map read now contradicts the pair's last one */

	/* switch telemetry and the closed loop (ctl_daemon_telem.c) */
	struct ctl_telem tm;
	/* PFC pause state (ctl_daemon_pfc.c) */
	struct ctl_pfc pfc;
	double *pfc_nic;	  /* [2 * nlinks * 8]: the host links' shares, last NIC read */
	uint64_t next_pfc_ns;	  /* the next NIC read */
	uint64_t pfc_storms_said; /* storms begun, as last logged */
	char k_swports[128], k_swexp[128];
	uint64_t oper_changes; /* the exporter's count, last seen */
	char (*swports)[64];   /* "<switch>:<port>" from ice:<F>:sw:ports */
	uint32_t nswports;
	uint64_t next_telem_ns;
	uint64_t tick;			/* telemetry intervals read so far */
	double *planned;		/* [2 * nlinks] bytes/s of the current plan's rates */
	double *known;			/* [2 * nlinks] bytes/s its QPs measure (agents) */
	uint64_t *hold_tick;		/* [2 * nlinks] no congestion trigger before this tick */
	bool *hot;			/* [2 * nlinks] congested links of the pending trigger */
	struct ctl_telem_pub *link_pub; /* [2 * nlinks] as ctl:link last says (written) */
	uint32_t link_pub_conn;		/* link.connects when they were written */
	struct cmove *moves;		/* this plan's */
	uint32_t nmoves;

	/* the operator's surface (ctl_daemon_ops.c) */
	struct ice_http *http; /* GET /metrics; NULL: off */
	uint64_t pol_version;  /* the applied Redis policy in force; 0: the file's, or none */
	uint64_t pol_refused;  /* the last version refused (not tried again) */
	char k_members[128], k_polcur[128];
	struct cwhy *why; /* the last publication's QPs, sorted by id */
	size_t nwhy;
	uint32_t why_conn; /* link.connects when they were written; else all again */
	uint64_t next_member_ns;
	uint64_t started_ms;
	char *dry_text; /* the last dry run's plans (ctld_dry_print) */
	struct ctld_metrics {
		uint64_t plans, publications, plan_failures;
		uint64_t refused_fenced, refused_policy; /* publications, applied policies */
		uint64_t policies;			 /* applied policies taken */
		/* Redis writes of the operator's records (ctl:link, ctl:qp why) */
		uint64_t link_writes, qp_writes, qp_refreshes, qp_deletes;
		uint64_t epoch;
		size_t qps_planned, qps_announced;
		double plan_s, max_util, bound, ecmp_util;
		struct ctld_hist {
			uint64_t n[CTLD_HIST_MAX + 1]; /* per bucket; the last: +Inf */
			uint64_t count;
			double sum;
		} plan_hist, react_hist;
	} m;
};

/* how often the probe maps' learning times are read (a changed map is
 * fetched and re-planned for at once); between, the probes' version
 * counter is read every loop and a move reads the maps at once */
#define PMAP_REFRESH_NS (200 * ICE_NSEC_PER_MSEC)

/* ---- ctl_daemon_redis.c */
bool ctld_redis_up(struct ctld *d); /* connected, or connects (at most every 500 ms) */
/* One command; NULL when the connection broke (dropped). */
redisReply *ctld_cmdv(struct ctld *d, int argc, const char **argv);
redisReply *ctld_cmd(struct ctld *d, const char *fmt, ...);
/* Replies of n appended commands into out[] (NULL entries on failure). */
int ctld_pipe(struct ctld *d, size_t n, redisReply **out);
void ctld_freev(redisReply **r, size_t n);

/* ---- ctl_daemon_lease.c */
void ctld_lease_tick(struct ctld *d); /* renew, or try to take the lease */
/* The leader renews its lease when a third of it has passed since the last
 * renewal: long work at scale (a view of 10^5 QPs, plans for 10^4 hosts)
 * calls it between its round trips, so the lease that fences its
 * publication does not run out under it. */
void ctld_lease_keep(struct ctld *d);
void ctld_lease_release(struct ctld *d); /* give it up when held */

/* ---- ctl_daemon_view.c */
void ctld_read_links(struct ctld *d);
/* ice-probe's path states: links only dead paths cross are down (LDOWN_PROBE). */
void ctld_read_health(struct ctld *d);
/* Who (LDOWN_*) says link l is down; true: the link changed state. */
bool ctld_link_set(struct ctld *d, uint32_t l, uint8_t who, bool down);
/* Links changed state: re-index the planner, re-plan (TRIG_LINK); ts_ms,
 * what: the signal, for the reaction time. */
void ctld_links_changed(struct ctld *d, uint64_t ts_ms, const char *what);
void ctld_read_pmaps(struct ctld *d);
/* The probes' map counter moved since the maps were last read (one GET). */
bool ctld_pmaps_moved(struct ctld *d);
void ctld_read_events(struct ctld *d);
void ctld_expire_colls(struct ctld *d);
void ctld_read_qps(struct ctld *d); /* also the hosts */
/* The host NIC of address a (network order), or NULL. */
const struct topo_port *ctld_nic_by_addr(struct ctld *d, uint32_t a);
void ctld_pmaps_free(struct ctl_pmap *m, uint32_t n);
void ctld_coll_free(struct ccoll *c);

/* ---- ctl_daemon_telem.c */
int ctld_telem_init(struct ctld *d); /* 0 or -ENOMEM */
void ctld_telem_fini(struct ctld *d);
/* ---- ctl_daemon_pfc.c: PFC pause state (ctl_pfc.h) */
int ctld_pfc_init(struct ctld *d); /* 0 or -ENOMEM */
void ctld_pfc_fini(struct ctld *d);
/* the NICs' PFC parts, every pfc_interval (hosts from the QP view) */
void ctld_pfc_read_nics(struct ctld *d);
/* a switch port's in-/out-pfc-paused fields (NULL: absent) for the
 * directed link it sends on, in this telemetry round */
void ctld_pfc_port(struct ctld *d, const char *sw, const char *port, const char *in,
		   const char *out);
/* close the round: the NICs' last shares joined, storms logged */
void ctld_pfc_round(struct ctld *d);
/* When due: read every switch port (one round trip), update the measured
 * and unplanned loads, the planner's capacities (feedback), set TRIG_TELEM
 * for a congested link that planned QPs cross, and (leader) publish what
 * the controller knows per link. */
void ctld_telem_tick(struct ctld *d);
/* Every interval: the exporter read an oper-status change? Then the ports
 * are read at once. */
void ctld_telem_poll(struct ctld *d);
/* After each QP read: host signals per link (ctl_telem_host), and the
 * verdicts on moves made a few intervals ago. */
void ctld_telem_host(struct ctld *d);
/* The planner's capacities from the unplanned loads (after a re-index too). */
void ctld_telem_caps(struct ctld *d);
/* DCQCN's ceilings (max_bps) of dem's planned flows where the unplanned
 * load cut a capacity: their shares of the links' rates
 * (ctl_plan_ceilings). 0 or -errno. */
int ctld_telem_ceilings(struct ctld *d, struct ctl_demand *dem);
/* May the flow of q move in this plan (move budget; a congestion-only
 * trigger moves only QPs crossing a congested link)? */
bool ctld_telem_movable(const struct ctld *d, const struct cqp *q, unsigned trig);
bool ctld_telem_sticky(const struct ctld *d, const struct cqp *q);
/* q's route changes from old to now: log why, and record it (ctl:qp:<id>,
 * written by ctld_telem_moves_publish). */
void ctld_telem_move(struct ctld *d, struct cqp *q, const struct ctl_route *old, unsigned trig);
/* Write the reasons of this plan's moves under epoch (pipelined). */
void ctld_telem_moves_publish(struct ctld *d, uint64_t epoch);

/* ---- ctl_daemon_ops.c: the operator's surface */
int ctld_ops_init(struct ctld *d); /* keys, /metrics; 0 or -errno (logged) */
void ctld_ops_fini(struct ctld *d);
/* Every interval: this controller in ctl:members (each second), an applied
 * policy taken (a new ice:<F>:policy:current), or refused with the old kept. */
void ctld_ops_tick(struct ctld *d);
/* Sleep ns, answering /metrics meanwhile. */
void ctld_ops_wait(struct ctld *d, uint64_t ns);
/* Why each planned QP has its route, port, rate and profile (ctl:qp:<id>,
 * pipelined); qix[k]: the cqp of flow k. */
void ctld_ops_qp_records(struct ctld *d, const struct ctl_demand *dem, const uint32_t *qix,
			 uint64_t epoch);
void ctld_hist_add(struct ctld_hist *h, const double *bounds, double v);
extern const double ctld_plan_buckets[CTLD_HIST_MAX], ctld_react_buckets[CTLD_HIST_MAX];
/* The Prometheus text (malloc'd). */
char *ctld_metrics_text(const struct ctld *d);

/* ---- ctl_daemon_publish.c */
/* Publish one plan per host under a new fenced epoch: 0 with *epoch_out,
 * -EPERM (not leader, or a newer epoch is out), -EIO, -ENOMEM. */
int ctld_publish(struct ctld *d, struct ice_host_plan *hps, uint32_t nh, uint64_t *epoch_out);
/* Start waiting for the hosts' write-backs of epoch (ctld_read_applied). */
void ctld_pend_start(struct ctld *d, uint64_t epoch, struct ice_host_plan *hps, uint32_t nh,
		     uint64_t planned_ms);
void ctld_read_applied(struct ctld *d);
void ctld_status_write(struct ctld *d, const char *const *kv, int n); /* HSET of the status */
void ctld_dry_print(struct ctld *d, struct ice_host_plan *hps, uint32_t nh,
		    const struct ctl_plan_stats *st, double ecmp);

#endif /* CTL_DAEMON_INTERNAL_H */
