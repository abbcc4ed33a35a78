/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_telem: switch telemetry (docs/redis-schema.md, "Switch telemetry")
 * as the planner needs it: per directed link of the topology, the load
 * measured at the switch port that sends on it (bytes/s from out-octets
 * over dt_ms), its queue (avg-queue-len, CE marks per interval), and the
 * part of that load nobody planned: max(0, measured - known), counted in
 * full once it lasts, fading by an EWMA once gone, which the daemon takes off the link's capacity
 * (ctl_planner_set_cap).
 *
 * Pure: no Redis. The daemon reads the records (ctl_daemon_telem.c) and
 * hands each one here. A switch port maps to a link by the switch's name and
 * the port's interface name in the topology (topo_port.ifname: the test bed
 * names a switch port after its peer). Bad input never stops the loop:
 * ports not in the topology, counters that go back (a switch reloaded),
 * gaps (readings further apart than gap_ms) and readings that stop are
 * counted, logged once per link (or port name) and kind, and the link falls
 * back to demand-only (nothing subtracted) until two good readings follow.
 * A reading the reader missed (seq + 2, close in time: the reader ran late)
 * is no gap: counters are totals, so the load is measured over the span.
 * Where a fabric gives no switch telemetry, host signals stand in
 * (ctl_telem_host): the CNPs the planned QPs' senders receive.
 */
#ifndef CTL_TELEM_H
#define CTL_TELEM_H

#include <stdbool.h>
#include <stdint.h>

#include "topo.h"

/* The port record's fields the controller reads, in this order (HMGET). */
enum ctl_telem_field {
	CTL_TF_SEQ,
	CTL_TF_TS,
	CTL_TF_DT,
	CTL_TF_OCTETS,
	CTL_TF_MARKS,
	CTL_TF_AVGQ,
	CTL_TF_OPER,
	CTL_TF_RESETS,
	CTL_TF_PFC_IN, /* PFC (ctl_pfc.h; not parsed by ctl_telem_rec_parse) */
	CTL_TF_PFC_OUT,
	CTL_TF_N,
};
extern const char *const ctl_telem_fields[CTL_TF_N];

struct ctl_telem_rec {
	uint64_t seq, ts_ms;
	double dt_ms;
	uint64_t octets, marks, resets;
	double avg_q;			      /* bytes */
	bool has_octets, has_marks, has_avgq; /* absent without the switch model */
	int oper;			      /* 1 UP, 0 not UP, -1 unknown */
};

/* The values of ctl_telem_fields[] (NULL: field absent) into r. 0, or
 * -EINVAL: seq or ts_ms missing, or a value that is not a number. */
int ctl_telem_rec_parse(struct ctl_telem_rec *r, const char *const *vals);

enum ctl_telem_state {
	CTL_TL_NONE = 0, /* no telemetry for this link (yet): demand-only */
	CTL_TL_OK,	 /* measured */
	CTL_TL_RESET,	 /* counters went back: demand-only until the next reading */
	CTL_TL_GAP,	 /* readings were skipped: demand-only until the next reading */
	CTL_TL_STALE,	 /* no new reading for stale_ms: demand-only */
	CTL_TL_STATE_MAX,
};
const char *ctl_telem_state_name(enum ctl_telem_state s);

/* One directed link (2 * link id + 0: a->b, + 1: b->a), measured at the
 * switch port that sends on it. */
struct ctl_telem_link {
	uint32_t port; /* topo port sending on it; UINT32_MAX: a host's (no telemetry) */
	enum ctl_telem_state state;
	/* the last reading */
	bool have;
	uint64_t seq, ts_ms, octets, marks, resets;
	uint64_t seen_ms; /* caller's clock when the last new reading came */
	/* the last interval */
	double bytes_s;	 /* measured load */
	double avg_q;	 /* mean queue depth, bytes */
	uint64_t ce;	 /* CE marks */
	bool oper_down;	 /* the newest reading's oper-status is not UP */
	bool fresh;	 /* a measurement ctl_telem_feedback() has not used yet */
	uint32_t hot;	 /* consecutive intervals with avg queue > Kmin or CE marks */
	uint64_t hot_ms; /* ts_ms of the first interval of that run */
	/* feedback */
	double known;	  /* bytes/s of the controller's own flows (its last call) */
	double unplanned; /* bytes/s: max(0, measured - known), fast up, smoothed down */
	uint32_t over;	  /* intervals in a row with measured - known above the dead band */
	double u_prev;	  /* bytes/s: that excess in the interval before (0: below the band) */
	unsigned logged;  /* 1 << state: that kind was logged for this link */
	/* host signals, where no switch telemetry is (ctl_telem_host) */
	uint32_t qps, marked; /* planned QPs crossing it; those that get CNPs */
	uint32_t hhot;	      /* consecutive samples in which all of them did */
	uint64_t hhot_ms;     /* the first sample of that run */
	double hunplanned;    /* bytes/s: smoothed rate - known while hot */
	uint64_t hseen_ms;    /* the last sample in which all its QPs were marked */
};

struct ctl_telem {
	const struct topo *t;
	struct ctl_telem_link *dl; /* [2 * nlinks] */
	uint32_t ndl;
	double alpha;		/* EWMA weight of the newest interval (0.5) */
	double deadband;	/* unplanned below this fraction of the rate counts 0 (0.10) */
	uint32_t persist;	/* ... and above it for fewer intervals in a row (2) */
	double floor;		/* capacity never below this fraction of the rate (0.05) */
	uint64_t stale_ms;	/* readings older than this: demand-only (1000) */
	uint64_t gap_ms;	/* readings further apart than this: a gap (500) */
	uint32_t hot_intervals; /* congested after this many hot intervals (2) */
	uint64_t host_hold_ms;	/* a host-signal estimate kept with no QP on the link (10 s) */
	/* counters */
	uint64_t readings, unknown_ports, backwards, gaps, bad_records, stale;
	uint64_t skipped;    /* readings missed, measured over the longer span */
	char (*unknown)[64]; /* port names logged as unknown */
	uint32_t nunknown;
};

/* 0 or -ENOMEM; t must outlive tm. */
int ctl_telem_init(struct ctl_telem *tm, const struct topo *t);
void ctl_telem_fini(struct ctl_telem *tm); /* NULL-safe */

/* The directed link switch sw's port (interface name) sends on: 0, or
 * -ENOENT (no such switch, or no such port on it). */
int ctl_telem_dlink(const struct topo *t, const char *sw, const char *port, uint32_t *dlink);

/* One reading of switch sw's port; now_ms: the caller's wall clock.
 * 1: a new measurement; 0: nothing new (the same seq again, the link's first
 * reading); -ENOENT: a port not in the topology; -ERANGE: a counter or seq
 * went back, or `resets` grew; -EAGAIN: a gap (more than gap_ms between
 * this reading and the last one seen);
 * -EINVAL: a record without counters. Each counted and logged once per
 * link (port name) and kind. */
int ctl_telem_update(struct ctl_telem *tm, const char *sw, const char *port,
		     const struct ctl_telem_rec *r, uint64_t now_ms);

/* Links whose readings stopped (none new for stale_ms): demand-only. */
void ctl_telem_expire(struct ctl_telem *tm, uint64_t now_ms);

/* known[dl]: bytes/s the controller's own flows carry on each directed
 * link. Updates the unplanned load of every link with a new measurement;
 * a link not measured (state other than OK) has none. */
void ctl_telem_feedback(struct ctl_telem *tm, const double *known);

/* Host signals for the fabric's links that no switch measures (state other
 * than OK; not a host's own links: they are on every path of their flows, so
 * host signals cannot tell them from the fabric's, and no path avoids them;
 * DCQCN is left to it): qps[dl] planned QPs cross dl, marked[dl]
 * of them receive CNPs (their senders' agents say so). A link all of whose
 * QPs are marked is full: the part of its rate they do not carry (known[dl])
 * is someone else's, smoothed into hunplanned, and the link is hot; a link
 * with an unmarked QP is not full (that QP would be marked too): its
 * estimate decays. A link no planned QP crosses tells nothing: its estimate
 * is kept for host_hold_ms after it was last seen full (so the QPs moved
 * off it do not come back at once). Called per QP sample (the agents'
 * interval). */
void ctl_telem_host(struct ctl_telem *tm, const uint32_t *qps, const uint32_t *marked,
		    const double *known, uint64_t now_ms);

/* The controller's own flows were booked on routes that a changed port ->
 * path map (a switch rehashed, a link changed) says they did not take:
 * what the links measured against those routes is not someone else's load,
 * and their queues were the plan's own collisions. Forgets every link's
 * unplanned estimate, its run of intervals above the dead band and of hot
 * intervals, and the readings not used yet: the next intervals start from
 * the new routes (real unannounced load is learned again in persist
 * intervals). */
void ctl_telem_forget(struct ctl_telem *tm);

/* The unplanned load (bytes/s) on dl: measured, else from host signals. */
double ctl_telem_unplanned(const struct ctl_telem *tm, uint32_t dl);
/* The rate (bit/s) a planned QP adds to the known load of its links: what
 * its agent measured; but while its collective ramps up (announced at
 * ann_ms, wall ms; now_ms < ann_ms + ramp_ms) at least its planned rate.
 * The switches count the collective's first packets an agent interval and
 * a QP read before the QPs' rates reach the controller: without this, a
 * collective's start reads as someone else's load on its own links (most
 * on its NICs, where it cut the flows' DCQCN ceilings). */
double ctl_telem_known_bps(double rate_bps, double plan_bps, uint64_t ann_ms, uint64_t now_ms,
			   uint64_t ramp_ms);

/* The capacity (bit/s) the planner should see on dl: the link's rate less
 * the unplanned load, never below floor x rate. */
double ctl_telem_cap(const struct ctl_telem *tm, uint32_t dl);

/* dl's queue stayed above its Kmin, or it marked CE, for hot_intervals;
 * without switch telemetry: all its QPs got CNPs for hot_intervals samples. */
bool ctl_telem_congested(const struct ctl_telem *tm, uint32_t dl);

/* A switch port of the (undirected) link reports oper-status not UP in its
 * newest reading; a link whose readings stopped is not (unknown). */
bool ctl_telem_link_down(const struct ctl_telem *tm, uint32_t link);

/* What the leader publishes of one directed link (ctl:link:<link>, per
 * direction): loads in bytes/s, the mean queue in bytes, CE marks of the
 * last interval, the state's name. */
struct ctl_telem_pub {
	double planned, known, measured, unplanned, capacity, avg_q;
	uint64_t ce;
	char state[16];
	double pfc_paused; /* the largest paused share of a priority (PFC), 0-1 */
	uint8_t pfc_storm; /* priorities paused past the storm share */
};

/* The dead band of those records, as fractions and floors. */
#define CTL_TELEM_PUB_LOAD_BAND	 0.02	/* a load: 2 % of the link's rate */
#define CTL_TELEM_PUB_QUEUE_FRAC 0.125	/* the queue: an eighth of Kmin ... */
#define CTL_TELEM_PUB_QUEUE_MIN	 1500.0 /* ... at least one MTU, in bytes */

/* Does now differ from was (the values last written) enough to be written
 * again: the state or the PFC storm changed, a paused share moved by more
 * than 0.05; a load moved by more than
 * CTL_TELEM_PUB_LOAD_BAND of rate_Bps (the link's rate, bytes/s); the queue
 * crossed kmin_bytes or moved by more than CTL_TELEM_PUB_QUEUE_FRAC of it
 * (at least CTL_TELEM_PUB_QUEUE_MIN); CE marks started or stopped, or more
 * than doubled or halved. */
bool ctl_telem_pub_differs(const struct ctl_telem_pub *was, const struct ctl_telem_pub *now,
			   double rate_Bps, uint32_t kmin_bytes);

#endif /* CTL_TELEM_H */
