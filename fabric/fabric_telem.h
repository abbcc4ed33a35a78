/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fabric_telem: switch port telemetry without I/O. A port's readings go in
 * (counters from the BPF port model, its interface's flags), its record
 * comes out: the counters under OpenConfig's names, the queue's mean depth
 * over the interval, a per-port sequence, and counter resets (counters that
 * went back, or come from another map: a reloaded switch). ice-fabric export
 * (fabric_export.c) reads the ports and writes the records to Redis
 * (docs/redis-schema.md, "Switch telemetry"); the unit tests feed it by hand.
 */
#ifndef FABRIC_TELEM_H
#define FABRIC_TELEM_H

#include <stdbool.h>
#include <stdint.h>

/* OpenConfig's oper-status values that a test bed port can have. */
enum fab_oper {
	FAB_OPER_UP,	      /* IFF_UP and IFF_RUNNING (carrier): operstate UP */
	FAB_OPER_DOWN,	      /* down, or no carrier (the peer is down) */
	FAB_OPER_NOT_PRESENT, /* no such interface in the switch's namespace */
};

const char *fab_oper_str(enum fab_oper o);

/* One reading of a switch port. */
struct fab_telem_read {
	uint64_t mono_ns; /* when: CLOCK_MONOTONIC, the BPF programs' clock */
	uint64_t wall_ms; /* when, for readers */
	bool admin_up;	  /* IFF_UP */
	enum fab_oper oper;
	bool counters;	 /* the counters below were read (a BPF port model is attached) */
	uint32_t map_id; /* the map they come from: another one counts from zero */
	uint64_t octets, pkts;
	uint64_t ecn_marked;
	uint64_t tail_drops, wred_drops, injected_drops;
	uint64_t depth, peak_depth; /* bytes: now, and the highest of the peak window */
	uint64_t depth_area;	    /* byte x ns since the port's counters began */
};

/* A port's running state; all zero to start. */
struct fab_telem_port {
	struct fab_telem_read last; /* the previous reading that had counters */
	bool have_last;
	uint64_t seq;	 /* readings so far, +1 each (also without counters) */
	uint64_t resets; /* counter resets seen */
	/* of the latest reading */
	uint64_t dt_ns;	    /* since the previous one with counters; 0 on the first */
	uint64_t avg_depth; /* mean depth over dt_ns; the depth now when dt_ns is 0 */
	bool reset;	    /* this reading counted a reset */
};

/*
 * Account reading r (counters or not) to port p. A reset: the map changed,
 * or a counter of packets or bytes is below the previous reading's; the
 * interval then counts from zero (as the new counters do). The depth's
 * integral may read a little back without a reset (the reader drains the
 * queue to `now` by its own arithmetic): such an interval's mean is 0.
 * Returns true when this reading counted a reset.
 */
bool fab_telem_update(struct fab_telem_port *p, const struct fab_telem_read *r);

/* The record of the latest reading as field names and text values, in
 * the order of docs/redis-schema.md; values point into f[].num or at
 * constant strings. Returns the number of fields (at most
 * FAB_TELEM_MAX_FIELDS); without counters only seq, ts_ms, the status
 * fields and resets. */
#define FAB_TELEM_MAX_FIELDS 20
struct fab_telem_field {
	const char *name;
	const char *val;
	char num[24];
};
int fab_telem_fields(const struct fab_telem_port *p, const struct fab_telem_read *r,
		     struct fab_telem_field f[FAB_TELEM_MAX_FIELDS]);

#endif /* FABRIC_TELEM_H */
