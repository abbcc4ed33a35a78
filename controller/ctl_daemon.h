/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_daemon: ice-controller as a library (libice-ctld), so tests link the
 * real code and ice_controller_main.c stays thin.
 *
 * Each interval the daemon reads its global view from Redis (hosts, their
 * QPs, announced collectives from the hosts' event streams, link state),
 * plans when something changed (ctl.h: paths and source ports, max-min
 * rates for announced collectives, DCQCN profiles from the policy) or when
 * the periodic re-optimisation is due, and — while it holds the leader
 * lease — publishes one signed plan per host with an epoch from an atomic
 * INCR; the agents write back the epoch they applied. Keys: the
 * "Controller" section of docs/redis-schema.md.
 */
#ifndef CTL_DAEMON_H
#define CTL_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctl.h"
#include "ice_config.h"

struct ctld_cfg {
	char fabric[64];	/* key namespace ice:<fabric>: */
	char topology[256];	/* topo/ YAML file (required) */
	char redis[256];	/* host:port or unix:/path */
	char policy[256];	/* DCQCN policy YAML; "" = DCQCN defaults */
	char key[256];		/* Ed25519 private key file (required unless dry_run) */
	char id[64];		/* controller id in the lease; "" = <hostname>-<pid> */
	char metrics[64];	/* ADDR:PORT of /metrics; "" = off */
	uint64_t interval;	/* ns: loop period (events, links, lease) */
	uint64_t qp_interval;	/* ns: how often the QP view is re-read */
	uint32_t host_qps_max;	/* QP records read per host and refresh */
	uint64_t pfc_interval;	/* ns: the NICs' PFC state read; 0 never */
	double pfc_storm;	/* paused share of an interval that storms */
	double probe_qdelay;	/* share of Kmin's drain time: a path's standing queue */
	uint64_t qp_stale;	/* ns: QP records older than this are left out; 0: 3
				   qp_intervals, at least QP_STALE_MIN_MS */
	uint64_t reopt;		/* ns: periodic global re-optimisation; 0 = never */
	uint64_t lifetime;	/* ns: plan lifetime (republished at a third of it) */
	double hysteresis;	/* relative max-utilisation gain needed to move flows */
	double headroom;	/* start rates at this fraction of the capacity */
	bool rates;		/* plan start/target rates for announced flows */
	uint64_t lease_ttl;	/* ns: leader lease */
	uint64_t min_rate;	/* bit/s: QPs measured below are idle (not planned) */
	uint64_t announce_ttl;	/* ns: an announced collective is forgotten after */
	uint64_t redis_timeout; /* ns */
	double search_budget;	/* s: local-search budget per plan; 0 = none */
	bool dry_run;		/* compute and print plans, publish nothing */
	bool once;		/* one plan, then exit */
	bool dry_quiet;		/* dry run: keep the plans for ctld_dry_text(), print nothing */
	int sports;		/* source ports from: CTLD_SPORTS_* */
	/* closed loop (switch telemetry, ctl_daemon_telem.c) */
	bool feedback;		 /* measured unplanned load off capacities, congestion re-plans */
	uint64_t telem_interval; /* ns: how often switch telemetry is read; 0 = never */
	uint64_t move_hold;	 /* a QP moves at most once per this many telemetry intervals */
	uint64_t move_sticky;	 /* moved within this many: others move first */
	double feedback_alpha;	 /* EWMA weight of the unplanned load as it falls */
	double host_cnp_min;	 /* CNPs/s a QP's sender receives that count as marked */
	uint64_t link_refresh;	 /* ns: ctl:link rewritten at least this often; 0 = every
				  * telemetry interval (else on a change past the dead band) */
};

enum {
	CTLD_SPORTS_AUTO = 0, /* probe maps when the topology's ECMP is the kernel's */
	CTLD_SPORTS_MODEL,    /* the topology's switch hash models */
	CTLD_SPORTS_PROBE,    /* ice-probe's learned port -> path maps in Redis */
};

extern const struct ice_cfg_field ctld_cfg_fields[];
extern const size_t ctld_cfg_nfields;

void ctld_cfg_defaults(struct ctld_cfg *c);
int ctld_cfg_load_file(struct ctld_cfg *c, const char *path, struct ice_cfg_err *err);
/* "--lease-ttl 1s": the key without dashes, '-' read as '_'. -ENOENT: unknown. */
int ctld_cfg_set_flag(struct ctld_cfg *c, const char *flag, const char *value,
		      struct ice_cfg_err *err);
/* Check the whole (required keys, names safe in keys, timing relations) and
 * resolve defaults; path (may be NULL) only points errors at their line. */
int ctld_cfg_finish(struct ctld_cfg *c, const char *path, struct ice_cfg_err *err);

/* Two sets of host plans carry the same decisions (hosts, QPs, ports,
 * rates, DCQCN), whatever their epochs and times: no need to publish. */
bool ctld_plans_same(const struct ice_host_plan *a, uint32_t na, const struct ice_host_plan *b,
		     uint32_t nb);

/* The ring order of a collective from each rank's next (-1: unknown):
 * order[] starts at rank 0 and follows next; ranks the walk misses (or all,
 * when next does not form one cycle) come in rank order. */
void ctld_ring_order(const int32_t *next, uint32_t n, uint32_t *order);
/* The planner's options for a plan: incremental (QPs came or went) or a
 * re-optimisation with the configured hysteresis, the search budget, and
 * routes_current: the routes the daemon hands back are its last plan's (or,
 * re-optimising, those a provider says a port takes), on the same
 * topology, so the planner takes their links as they are. */
void ctld_plan_opts(const struct ctld_cfg *c, bool incremental, struct ctl_plan_opts *o);

/* Epoch recovery (docs/security.md, "Epochs"). A number read from Redis
 * is credible as an epoch only if it is at most now_ms +
 * CTLD_EPOCH_AHEAD_MS: the wall clock is the floor no Redis client can
 * forge. 60 s = ICE_PLAN_SKEW_MS (5 s: how far the clocks of the
 * controllers and agents may differ, the bound agents already put on a
 * plan's issued_ms) + 55 s for a leader's clock stepped back (NTP) after it
 * issued epochs from its clock; the counter itself never runs ahead of the
 * clock from INCR alone, since a recovered counter starts at now_ms and
 * gains one per publication, and the controller publishes far less than
 * once per ms. */
#define CTLD_EPOCH_AHEAD_MS 60000ull

/* The agent's rate object of a QP record as the agent writes it
 * ({"k":number,...}: no spaces, escapes or nesting; numbers as JSON writes
 * them, integers within int64) into tx_bytes, cnp_rx and retx, 0 when
 * absent; false on anything else (the view then reads it with jansson).
 * Pure; for the view and its tests. */
bool ctld_rates_scan(const char *js, double *tx_bytes, double *cnp_rx, double *retx);

struct ctld_epoch_val {
	uint64_t v;
	bool credible; /* set by ctld_epoch_base */
};

/* The counter's value to continue from: the counter if present and
 * credible, else now_ms; raised to every credible floor (the published
 * record, the hosts' epochs and last_epoch, the cluster fences) and to own
 * (the highest epoch this controller issued: trusted, never judged).
 * Values not credible (above now_ms + CTLD_EPOCH_AHEAD_MS, or not below
 * ICE_PLAN_EPOCH_MAX) are never adopted; their credible flags say which. */
uint64_t ctld_epoch_base(struct ctld_epoch_val *counter, bool have_counter,
			 struct ctld_epoch_val *floors, size_t n, uint64_t own, uint64_t now_ms);

struct ctld;
struct ctld *ctld_new(const struct ctld_cfg *cfg); /* NULL + errno, logged */
int ctld_run(struct ctld *d);			   /* until ctld_stop() */
void ctld_stop(struct ctld *d);			   /* signal-safe */
void ctld_free(struct ctld *d);			   /* NULL-safe; gives up the lease */
/* A dry run's last plans, as it would print them ({"max_util","bound",
 * "ecmp_util","plans":[...]}); NULL before the first. Owned by d. */
const char *ctld_dry_text(const struct ctld *d);

#endif /* CTL_DAEMON_H */
