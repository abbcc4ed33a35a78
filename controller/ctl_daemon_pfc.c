// SPDX-License-Identifier: Apache-2.0
/*
 * ctl_daemon_pfc.c: PFC pause state for the closed loop (ctl_pfc.h): the
 * agents' NIC records (their `pfc` part, with the NIC backend) read every
 * pfc_interval, the switch ports' in-/out-pfc-paused fields read with the
 * rest of their telemetry; one round per telemetry interval. Storming links
 * lower the planner's capacity (ctld_telem_caps) and re-plan the QPs that
 * cross them (ctl_daemon_telem.c, congestion()).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_daemon_internal.h"
#include "ice_log.h"

/* a NIC record older than this is not used (its agent stopped) */
#define PFC_NIC_STALE_MS 3000

int ctld_pfc_init(struct ctld *d)
{
	uint32_t ndl = 2 * d->topo->nlinks;

	if (ctl_pfc_init(&d->pfc, ndl) < 0)
		return -ENOMEM;
	d->pfc.storm_share = d->cfg.pfc_storm;
	d->pfc_nic = calloc((size_t)(ndl + 1) * CTL_PFC_PRIOS, sizeof(double));
	if (d->pfc_nic == NULL)
		return -ENOMEM;
	ctl_pfc_begin(&d->pfc);
	return 0;
}

void ctld_pfc_fini(struct ctld *d)
{
	ctl_pfc_fini(&d->pfc);
	free(d->pfc_nic);
	d->pfc_nic = NULL;
}

static void pfc_bad(struct ctld *d, const char *what, const char *why)
{
	if (++d->pfc.bad <= 10 || (d->pfc.bad & (d->pfc.bad - 1)) == 0)
		ice_warn(SUB, "PFC: %s ignored (%" PRIu64 " so far): %s", what, d->pfc.bad, why);
}

/* One NIC's record: its host link, host -> switch paused when the NIC was
 * held (rx_paused), switch -> host when it held the switch (tx_paused). */
static void nic_record(struct ctld *d, const char *host, const redisReply *r, uint64_t now_ms,
		       double *shares, uint8_t *lossless)
{
	double rx[CTL_PFC_PRIOS], tx[CTL_PFC_PRIOS];
	const struct topo_port *tp;
	struct in_addr a;
	uint32_t dl_up;
	uint8_t ll;
	bool known;

	if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
	    r->element[1]->type != REDIS_REPLY_STRING)
		return; /* no PFC part: the transport backend */
	if (r->element[2]->type != REDIS_REPLY_STRING ||
	    strtoull(r->element[2]->str, NULL, 10) + PFC_NIC_STALE_MS < now_ms)
		return;
	if (r->element[0]->type != REDIS_REPLY_STRING ||
	    inet_pton(AF_INET, r->element[0]->str, &a) != 1 ||
	    (tp = ctld_nic_by_addr(d, a.s_addr)) == NULL ||
	    strcmp(d->topo->nodes[tp->node].name, host) != 0) {
		pfc_bad(d, host, "a NIC record whose address is not one of the host's NICs");
		return;
	}
	if (ctl_pfc_parse_nic(r->element[1]->str, &ll, &known, rx, tx) < 0) {
		pfc_bad(d, host,
			"a NIC's pfc part is not {\"lossless\":[0-7...]|null,\"prio\":{\"P\":"
			"{\"rx_paused\":0-1,\"tx_paused\":0-1}}}");
		return;
	}
	if (known)
		*lossless |= ll;
	dl_up = 2 * tp->link + (d->topo->links[tp->link].a == tp->id ? 0 : 1);
	for (int k = 0; k < CTL_PFC_PRIOS; k++) {
		double *up = &shares[(size_t)dl_up * CTL_PFC_PRIOS + k];
		double *down = &shares[(size_t)(dl_up ^ 1) * CTL_PFC_PRIOS + k];

		if (rx[k] > *up)
			*up = rx[k];
		if (tx[k] > *down)
			*down = tx[k];
	}
}

void ctld_pfc_read_nics(struct ctld *d)
{
	uint64_t now = ice_now_ns(), now_ms;
	redisReply **sets = NULL, **recs = NULL;
	uint32_t *owner = NULL;
	size_t n = 0;
	uint32_t nics = 0;
	uint8_t lossless = 0;
	char key[ICE_RKEY_MAX];

	if (d->cfg.pfc_interval == 0 || d->cfg.telem_interval == 0 || now < d->next_pfc_ns ||
	    d->link.c == NULL || d->nhosts == 0)
		return;
	d->next_pfc_ns = now + d->cfg.pfc_interval;
	sets = calloc(d->nhosts, sizeof(*sets));
	if (sets == NULL)
		return;
	for (uint32_t i = 0; i < d->nhosts; i++)
		ice_redis_appendf(&d->link, "SMEMBERS %s",
				  ice_rkey_str(key, sizeof(key), ICE_RK_NICS, d->cfg.fabric,
					       d->hosts[i].name, NULL));
	if (ctld_pipe(d, d->nhosts, sets) < 0)
		goto out;
	for (uint32_t i = 0; i < d->nhosts; i++)
		n += sets[i]->type == REDIS_REPLY_ARRAY ? sets[i]->elements : 0;
	recs = calloc(n + 1, sizeof(*recs));
	owner = calloc(n + 1, sizeof(*owner));
	if (recs == NULL || owner == NULL)
		goto out;
	n = 0;
	for (uint32_t i = 0; i < d->nhosts; i++)
		for (size_t j = 0; sets[i]->type == REDIS_REPLY_ARRAY && j < sets[i]->elements;
		     j++) {
			if (ice_rkey(key, sizeof(key), ICE_RK_NIC, d->cfg.fabric, d->hosts[i].name,
				     sets[i]->element[j]->str) < 0)
				continue;
			ice_redis_appendf(&d->link, "HMGET %s addr pfc ts_ms", key);
			owner[n++] = i;
		}
	if (ctld_pipe(d, n, recs) < 0) {
		n = 0;
		goto out;
	}
	now_ms = ice_wall_ms();
	memset(d->pfc_nic, 0, sizeof(double) * d->pfc.ndl * CTL_PFC_PRIOS);
	for (size_t k = 0; k < n; k++) {
		uint8_t ll = 0;

		nic_record(d, d->hosts[owner[k]].name, recs[k], now_ms, d->pfc_nic, &ll);
		nics += recs[k]->type == REDIS_REPLY_ARRAY && recs[k]->elements == 3 &&
			recs[k]->element[1]->type == REDIS_REPLY_STRING;
		lossless |= ll;
	}
	if (lossless != d->pfc.lossless)
		ice_info(SUB, "PFC: the NICs' lossless priorities: mask 0x%02x (%u NICs say)",
			 lossless, nics);
	d->pfc.lossless = lossless;
	d->pfc.nics = nics;
out:
	if (recs != NULL)
		ctld_freev(recs, n);
	ctld_freev(sets, d->nhosts);
	free(recs);
	free(sets);
	free(owner);
}

void ctld_pfc_port(struct ctld *d, const char *sw, const char *port, const char *in,
		   const char *out)
{
	double s[CTL_PFC_PRIOS];
	uint32_t dl;

	if (in == NULL && out == NULL)
		return;
	if (ctl_telem_dlink(d->topo, sw, port, &dl) < 0 || d->tm.dl[dl].state != CTL_TL_OK)
		return; /* not in the topology (counted by ctl_telem_update), or not
			   measured now: its shares are not this interval's */
	/* held by pause frames it received: it cannot send on dl */
	if (in != NULL) {
		if (ctl_pfc_parse_list(in, s) < 0)
			pfc_bad(d, "a switch port's in-pfc-paused",
				"expected eight shares 0-1, comma-separated (priorities 0-7)");
		else
			ctl_pfc_sample(&d->pfc, dl, s);
	}
	/* it held its peer: the reverse direction pauses */
	if (out != NULL) {
		if (ctl_pfc_parse_list(out, s) < 0)
			pfc_bad(d, "a switch port's out-pfc-paused",
				"expected eight shares 0-1, comma-separated (priorities 0-7)");
		else
			ctl_pfc_sample(&d->pfc, dl ^ 1, s);
	}
}

void ctld_pfc_round(struct ctld *d)
{
	uint64_t now_ms = ice_wall_ms();
	bool *was = calloc(d->pfc.ndl + 1, sizeof(bool));

	for (uint32_t dl = 0; dl < d->pfc.ndl; dl++) {
		if (was != NULL)
			was[dl] = ctl_pfc_storming(&d->pfc, dl);
		ctl_pfc_sample(&d->pfc, dl, &d->pfc_nic[(size_t)dl * CTL_PFC_PRIOS]);
	}
	ctl_pfc_end(&d->pfc, now_ms);
	for (uint32_t dl = 0; was != NULL && dl < d->pfc.ndl; dl++) {
		bool now = ctl_pfc_storming(&d->pfc, dl);
		const struct topo_link *k = &d->topo->links[dl / 2];
		uint32_t from = dl & 1 ? k->b : k->a, to = dl & 1 ? k->a : k->b;
		uint8_t storm;
		double m = ctl_pfc_paused_max(&d->pfc, dl, &storm);

		if (now == was[dl])
			continue;
		if (now)
			ice_warn(SUB,
				 "PFC pause storm on %s>%s: priorities mask 0x%02x paused %.0f %% "
				 "of "
				 "the interval for %u intervals; the planner takes %.0f %% of its "
				 "capacity",
				 d->topo->nodes[d->topo->ports[from].node].name,
				 d->topo->nodes[d->topo->ports[to].node].name, storm, 100 * m,
				 d->pfc.dl[dl].run, 100 * ctl_pfc_factor(&d->pfc, dl));
		else
			ice_info(SUB, "PFC pause storm on %s>%s is over (paused %.0f %%)",
				 d->topo->nodes[d->topo->ports[from].node].name,
				 d->topo->nodes[d->topo->ports[to].node].name, 100 * m);
	}
	free(was);
	ctl_pfc_begin(&d->pfc);
}
