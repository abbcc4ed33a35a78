// SPDX-License-Identifier: Apache-2.0
/*
 * fabric_telem: a switch port's readings into its telemetry record: the
 * sequence, counter resets, the interval's mean queue depth, the fields
 * under OpenConfig's names (fabric_telem.h).
 */
#include "fabric_telem.h"

#include <inttypes.h>
#include <stdio.h>

const char *fab_oper_str(enum fab_oper o)
{
	switch (o) {
	case FAB_OPER_UP:
		return "UP";
	case FAB_OPER_DOWN:
		return "DOWN";
	default:
		return "NOT_PRESENT";
	}
}

/* Did the counters start again between a and b? */
static bool counters_reset(const struct fab_telem_read *a, const struct fab_telem_read *b)
{
	if (a->map_id != 0 && b->map_id != 0 && a->map_id != b->map_id)
		return true;
	return b->octets < a->octets || b->pkts < a->pkts || b->ecn_marked < a->ecn_marked ||
	       b->tail_drops < a->tail_drops || b->wred_drops < a->wred_drops ||
	       b->injected_drops < a->injected_drops;
}

bool fab_telem_update(struct fab_telem_port *p, const struct fab_telem_read *r)
{
	uint64_t area;

	p->seq++;
	p->reset = false;
	if (!r->counters)
		return false; /* the last reading with counters stays the reference */
	p->dt_ns = 0;
	p->avg_depth = r->depth;
	if (p->have_last && r->mono_ns > p->last.mono_ns) {
		p->dt_ns = r->mono_ns - p->last.mono_ns;
		if (counters_reset(&p->last, r)) {
			p->reset = true;
			p->resets++;
			area = r->depth_area; /* from zero, as the new counters */
		} else {
			area = r->depth_area >= p->last.depth_area
				       ? r->depth_area - p->last.depth_area
				       : 0;
		}
		p->avg_depth = area / p->dt_ns;
	} else if (p->have_last && counters_reset(&p->last, r)) {
		p->reset = true; /* no time passed, but other counters all the same */
		p->resets++;
	}
	p->last = *r;
	p->have_last = true;
	return p->reset;
}

static void num(struct fab_telem_field *f, const char *name, uint64_t v)
{
	f->name = name;
	snprintf(f->num, sizeof(f->num), "%" PRIu64, v);
	f->val = f->num;
}

int fab_telem_fields(const struct fab_telem_port *p, const struct fab_telem_read *r,
		     struct fab_telem_field f[FAB_TELEM_MAX_FIELDS])
{
	int n = 0;

	num(&f[n++], "seq", p->seq);
	num(&f[n++], "ts_ms", r->wall_ms);
	f[n].name = "admin-status";
	f[n++].val = r->admin_up ? "UP" : "DOWN";
	f[n].name = "oper-status";
	f[n++].val = fab_oper_str(r->oper);
	if (r->counters) {
		f[n].name = "dt_ms";
		snprintf(f[n].num, sizeof(f[n].num), "%.3f", (double)p->dt_ns / 1e6);
		f[n].val = f[n].num;
		n++;
		num(&f[n++], "out-octets", r->octets);
		num(&f[n++], "out-pkts", r->pkts);
		num(&f[n++], "out-discards", r->tail_drops + r->wred_drops + r->injected_drops);
		num(&f[n++], "dropped-pkts", r->tail_drops + r->wred_drops);
		num(&f[n++], "injected-drops", r->injected_drops);
		num(&f[n++], "ecn-marked-pkts", r->ecn_marked);
		num(&f[n++], "queue-len", r->depth);
		num(&f[n++], "max-queue-len", r->peak_depth);
		num(&f[n++], "avg-queue-len", p->avg_depth);
		num(&f[n++], "depth-area-bns", r->depth_area);
	}
	num(&f[n++], "resets", p->resets);
	return n;
}
