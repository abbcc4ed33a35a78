// SPDX-License-Identifier: Apache-2.0
/*
 * Path health: one source port per path sends timestamped echo probes every
 * probe_interval (spread over the paths, under the rate limit); the peer's
 * responder stamps rx (t2) and tx (t3). Per report interval and path: RTT
 * = t4 - t1 - (t3 - t2) (min, p50, p99), the one-way delays' change against
 * their minimum over base_window, loss, and the queueing delay = RTT p50 -
 * base RTT (the minimum over base_window). Each interval also re-traces
 * PROBE_CHECK_PORTS of each path's known ports (its echo port and the next
 * ones in turn) at the TTLs that vary: a port that now crosses other
 * switches (a link change, or a switch that rehashes after a reboot), or a
 * path that stays silent for 2 intervals, makes the pair rediscover its
 * map; paths no longer found are reported dead. A moved port also names
 * the switch before the changed hop to the other hosts (a rehash notice in
 * Redis), whose watchers remap their pairs crossing it at once.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "ice_log.h"
#include "ice_time.h"
#include "probe_internal.h"
#include "topo.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	stop_flag = 1;
	(void)sig;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double probe_percentile(double *v, uint32_t n, double p)
{
	double rank;
	uint32_t lo;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	rank = p / 100.0 * (n - 1);
	lo = (uint32_t)rank;
	if (lo + 1 >= n)
		return v[n - 1];
	return v[lo] + (rank - lo) * (v[lo + 1] - v[lo]);
}

struct watch {
	struct probe_sess *s;
	const struct probe_watch_opts *o;
	struct probe_pair_state *ps;
	uint32_t np;
	/* the rate budget (watch_budget): path checks first, echoes next, the
	 * rest kept free so that a rediscovery finds the bucket full */
	uint32_t check_pairs; /* pairs whose paths are re-traced per interval */
	uint32_t check_ports; /* ports re-traced per path */
	uint32_t check_next;  /* the pair the next interval's checks start at */
	uint64_t echo_iv;     /* echo interval per path, ns */
	uint64_t budget_key;  /* what the budget was computed for */
	/* rehash notices: ours to publish (queued by watch_rx), others' read
	 * every notice_poll */
	struct probe_notices nt;
	uint64_t next_notice_ns;
	struct {
		char sw[PROBE_NAME_MAX];
		uint32_t pair, hop;
		uint16_t port;
		uint64_t ts_ms;
	} pend[4];
	uint32_t npend;
};

/* Shares of the probe's rate limit (link_share): path checks take up to
 * check_share (0.4), echoes what leaves them under SPEND_SHARE, and the rest
 * refills the bucket for rediscoveries (a leaf-spine pair: ~17 probes). */
#define SPEND_SHARE 0.7

static uint32_t pair_varying(const struct probe_pair_state *p)
{
	uint32_t n = 0;

	for (uint32_t t = 1; t <= p->map.nhops; t++)
		n += !(p->map.fixed_mask & (1u << (t - 1)));
	return n;
}

/* Split the rate limit over path checks and echoes for the maps as they
 * are now: per report interval, the checks of check_pairs pairs (in turn)
 * with check_ports ports per path, each port at the TTLs that vary; the
 * echoes spread what is left over the live paths. Logged when it changes. */
static void watch_budget(struct watch *w)
{
	const struct probe_cfg *c = w->s->cfg;
	double pps = w->s->rate_Bps / PROBE_WIRE_BYTES, iv_s = c->report_interval / 1e9;
	double per_iv = c->check_share * pps * iv_s, check_pps, echo_pps;
	uint32_t npaths = 0, cost = 1, live = 0;
	uint64_t key, echo_iv;

	for (uint32_t pi = 0; pi < w->np; pi++) {
		const struct probe_pair_state *p = &w->ps[pi];
		uint32_t n = 0;

		for (uint32_t i = 0; i < p->nh; i++)
			n += p->h[i]->idx >= 0;
		npaths += n;
		live += n > 0;
		if (n * pair_varying(p) > cost)
			cost = n * pair_varying(p);
	}
	w->check_ports = (uint32_t)(per_iv / cost + 0.5);
	w->check_ports = w->check_ports < 1		      ? 1
			 : w->check_ports > PROBE_CHECK_PORTS ? PROBE_CHECK_PORTS
							      : w->check_ports;
	w->check_pairs = (uint32_t)(per_iv / (cost * w->check_ports) + 0.5);
	w->check_pairs = w->check_pairs < 1 ? 1 : w->check_pairs > w->np ? w->np : w->check_pairs;
	if (c->check_share <= 0) /* no checks of our own: other hosts' notices, refreshes */
		w->check_pairs = w->check_ports = 0;
	check_pps = (double)w->check_pairs * w->check_ports * cost / iv_s;
	echo_pps = SPEND_SHARE * pps - check_pps;
	if (echo_pps < 0.1 * pps)
		echo_pps = 0.1 * pps;
	echo_iv = npaths > 0 ? (uint64_t)(npaths / echo_pps * 1e9) : c->probe_interval;
	w->echo_iv = echo_iv > c->probe_interval ? echo_iv : c->probe_interval;
	key = (uint64_t)npaths << 32 | (uint64_t)w->check_pairs << 16 | w->check_ports;
	if (key == w->budget_key)
		return;
	w->budget_key = key;
	ice_info(PROBE_LOG,
		 "rate budget %.0f probes/s (link_share %.4f%%): path checks of %u of %u pair(s) "
		 "per %.0f ms interval, %u port(s) per path (%.0f probes/s; each pair every "
		 "%.0f ms), echoes every %.1f ms on each of %u paths (%.0f probes/s)%s",
		 pps, c->link_share * 100, w->check_pairs, live, iv_s * 1e3, w->check_ports,
		 check_pps,
		 w->check_pairs > 0 ? iv_s * 1e3 * ((w->np + w->check_pairs - 1) / w->check_pairs)
				    : 0,
		 w->echo_iv / 1e6, npaths, npaths * 1e9 / w->echo_iv,
		 w->echo_iv > c->probe_interval ? " (probe_interval is shorter: the budget decides)"
						: "");
}

static struct probe_health *health_get(struct probe_pair_state *p, const char *name)
{
	struct probe_health *h;

	for (uint32_t i = 0; i < p->nh; i++)
		if (strcmp(p->h[i]->name, name) == 0)
			return p->h[i];
	if (p->nh == PROBE_MAX_PATHS * 2)
		return NULL;
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return NULL;
	snprintf(h->name, sizeof(h->name), "%s", name);
	p->h[p->nh++] = h;
	return h;
}

/* (Re)discover a pair; attach health state to paths by name. */
static int pair_map(struct watch *w, struct probe_pair_state *p)
{
	struct probe_pathmap *m = malloc(sizeof(*m));
	int ret;

	if (m == NULL)
		return -ENOMEM;
	ret = probe_discover(w->s, p->pair.dst, m);
	if (ret < 0) {
		free(m);
		return ret;
	}
	p->map = *m;
	free(m);
	p->remaps++;
	for (uint32_t i = 0; i < p->nh; i++)
		p->h[i]->idx = -1;
	for (uint32_t i = 0; i < p->map.npaths; i++) {
		struct probe_health *h = health_get(p, p->map.path[i].name);

		if (h == NULL)
			return -ENOMEM;
		h->idx = (int)i;
		h->sport = p->map.path[i].port[0];
		h->silent = 0;
		if (h->dead)
			ice_info(PROBE_LOG, "path %s is back", h->name);
		h->dead = false;
	}
	for (uint32_t i = 0; i < p->nh; i++)
		if (p->h[i]->idx < 0 && !p->h[i]->dead) {
			p->h[i]->dead = true;
			p->h[i]->dead_since_ms = ice_wall_ms();
			ice_info(PROBE_LOG, "path %s: gone from the map: dead", p->h[i]->name);
		}
	p->next_refresh_ns = ice_now_ns() + w->s->cfg->map_refresh;
	p->remap = false;
	if (w->o->redis != NULL)
		probe_redis_map(w->o->redis, &p->map);
	return 0;
}

/* The name of hop t (1-based) of a path name "a>b>c" into buf. */
static void path_hop(const char *name, uint32_t t, char *buf, size_t len)
{
	const char *q = name;
	size_t n;

	for (uint32_t i = 1; i < t && q != NULL; i++) {
		q = strchr(q, '>');
		q = q != NULL ? q + 1 : NULL;
	}
	if (q == NULL) {
		buf[0] = '\0';
		return;
	}
	n = strcspn(q, ">");
	snprintf(buf, len, "%.*s", (int)n, q);
}

static bool map_crosses(const struct probe_pathmap *m, const char *sw)
{
	char hop[PROBE_NAME_MAX];

	for (uint32_t i = 0; i < m->npaths; i++)
		for (uint32_t t = 1; t < m->nhops; t++) { /* the last switch picks no next hop */
			path_hop(m->path[i].name, t, hop, sizeof(hop));
			if (strcmp(hop, sw) == 0)
				return true;
		}
	return false;
}

uint32_t probe_pairs_crossing(struct probe_pair_state *ps, uint32_t np,
			      const struct probe_pair_state *except, const char *sw, uint64_t ts_ms)
{
	uint32_t n = 0;

	for (uint32_t qi = 0; qi < np; qi++) {
		struct probe_pair_state *q = &ps[qi];
		uint64_t started = q->map.ts_ms - q->map.took_ns / ICE_NSEC_PER_MSEC;

		if (q == except || q->remap || q->map.npaths == 0 || started >= ts_ms)
			continue;
		if (sw[0] != '\0' && !map_crosses(&q->map, sw))
			continue;
		q->remap = true;
		n++;
	}
	return n;
}

static int seen_find(const struct probe_notices *n, const char *sw)
{
	for (uint32_t i = 0; i < n->nseen; i++)
		if (strcmp(n->seen[i].sw, sw) == 0)
			return (int)i;
	return -1;
}

void probe_notice_record(struct probe_notices *n, const char *sw, uint64_t ts_ms)
{
	int i = seen_find(n, sw);

	if (i < 0) {
		if (n->nseen < PROBE_NOTICE_SEEN) {
			i = (int)n->nseen++;
		} else { /* the switch heard of longest ago makes room */
			i = 0;
			for (uint32_t k = 1; k < n->nseen; k++)
				if (n->seen[k].ts_ms < n->seen[i].ts_ms)
					i = (int)k;
		}
		snprintf(n->seen[i].sw, sizeof(n->seen[i].sw), "%s", sw);
		n->seen[i].ts_ms = ts_ms;
	} else if (ts_ms > n->seen[i].ts_ms) {
		n->seen[i].ts_ms = ts_ms;
	}
}

enum probe_notice_verdict probe_notice_judge(struct probe_notices *n, const struct topo *t,
					     const struct probe_notice *x)
{
	const struct topo_node *node;
	int i;

	n->read++;
	if (x->bad) {
		n->bad++;
		return PROBE_NOTICE_BAD;
	}
	if (t != NULL &&
	    ((node = topo_node_by_name(t, x->sw)) == NULL || node->kind != TOPO_SWITCH)) {
		n->unknown++;
		return PROBE_NOTICE_UNKNOWN;
	}
	i = seen_find(n, x->sw);
	if (i >= 0 && x->ts_ms < n->seen[i].ts_ms + PROBE_NOTICE_HOLD_MS) {
		n->same++;
		return PROBE_NOTICE_SAME;
	}
	probe_notice_record(n, x->sw, x->ts_ms);
	return PROBE_NOTICE_ACT;
}

/* A port of pair p went another way at hop t: the switch before it (hop
 * t - 1; the NIC itself for t = 1) hashes differently now (a reboot or an
 * upgrade with a new seed) or lost a link. Every other pair whose paths
 * cross that switch is remapped too, now, without waiting for its own
 * checks to draw a moved port; and the other hosts are told (a notice
 * queued for the main loop, which publishes it before it remaps). */
static void remap_crossing(struct watch *w, const struct probe_pair_state *p, const char *path,
			   uint32_t t, uint16_t port)
{
	char sw[PROBE_NAME_MAX] = "";
	uint64_t now = ice_wall_ms();
	uint32_t n;

	if (t > 1)
		path_hop(path, t - 1, sw, sizeof(sw));
	n = probe_pairs_crossing(w->ps, w->np, p, sw, now + 1);
	if (n > 0)
		ice_info(PROBE_LOG, "%s%s: %u more pair(s) cross it: remapping them too",
			 sw[0] ? "switch " : "this NIC's first hop", sw, n);
	if (sw[0] == '\0')
		return; /* the NIC's own choice: nothing the other hosts cross */
	probe_notice_record(&w->nt, sw, now);
	if (w->o->redis != NULL && w->s->cfg->notice_poll > 0 &&
	    w->npend < sizeof(w->pend) / sizeof(w->pend[0])) {
		snprintf(w->pend[w->npend].sw, sizeof(w->pend[w->npend].sw), "%s", sw);
		w->pend[w->npend].pair = (uint32_t)(p - w->ps);
		w->pend[w->npend].hop = t - 1;
		w->pend[w->npend].port = port;
		w->pend[w->npend].ts_ms = now;
		w->npend++;
	}
}

/* Publish the notices queued since the last loop; read the other hosts'
 * every notice_poll and mark the pairs crossing a switch they name. A
 * dead Redis costs nothing here: the calls fail at once while its back-off
 * runs, and the watch goes on with its own checks. */
static void watch_notices(struct watch *w, uint64_t now)
{
	const struct probe_cfg *c = w->s->cfg;
	struct probe_notice x[PROBE_NOTICE_READ];
	int n;

	if (w->o->redis == NULL || c->notice_poll == 0)
		return;
	for (uint32_t i = 0; i < w->npend; i++) {
		int ret = probe_redis_notice_send(w->o->redis, w->pend[i].sw,
						  &w->ps[w->pend[i].pair].map, w->pend[i].port,
						  w->pend[i].hop, w->pend[i].ts_ms);

		if (ret == 0) {
			w->nt.sent++;
			ice_info(PROBE_LOG, "told the other hosts: switch %s rehashed",
				 w->pend[i].sw);
			continue;
		}
		/* Redis down or refusing (an ACL without probe:rehash): the
		 * others find the rehash by their own checks */
		w->nt.send_failed++;
		if (!w->nt.send_logged)
			ice_warn(PROBE_LOG,
				 "cannot tell the other hosts that switch %s rehashed (%s); "
				 "logged once",
				 w->pend[i].sw, strerror(-ret));
		w->nt.send_logged = true;
	}
	w->npend = 0;
	if (now < w->next_notice_ns)
		return;
	w->next_notice_ns = now + c->notice_poll;
	n = probe_redis_notice_read(w->o->redis, x, PROBE_NOTICE_READ);
	for (int i = 0; i < n; i++) {
		uint64_t wall = ice_wall_ms();
		uint32_t k;

		/* a time far ahead of ours would hold off that switch's real notices */
		if (x[i].ts_ms > wall + PROBE_NOTICE_AHEAD_MS)
			x[i].bad = true;
		switch (probe_notice_judge(&w->nt, w->s->topo, &x[i])) {
		case PROBE_NOTICE_BAD:
			if (!w->nt.bad_logged)
				ice_warn(PROBE_LOG,
					 "rehash notice from '%s' without a switch or a time "
					 "(or one ahead of ours): ignored (counted, not logged "
					 "again)",
					 x[i].host);
			w->nt.bad_logged = true;
			break;
		case PROBE_NOTICE_UNKNOWN:
			if (!w->nt.unknown_logged)
				ice_warn(PROBE_LOG,
					 "rehash notice from %s names switch '%s', which the "
					 "topology does not have: ignored (counted, not logged "
					 "again)",
					 x[i].host, x[i].sw);
			w->nt.unknown_logged = true;
			break;
		case PROBE_NOTICE_SAME:
			break;
		case PROBE_NOTICE_ACT:
			k = probe_pairs_crossing(w->ps, w->np, NULL, x[i].sw, x[i].ts_ms);
			if (k == 0) {
				w->nt.elsewhere++;
				break;
			}
			w->nt.acted++;
			w->nt.pairs += k;
			ice_info(PROBE_LOG,
				 "notice from %s: switch %s rehashed (seen %lld ms ago): %u "
				 "pair(s) cross it: remapping them",
				 x[i].host, x[i].sw, (long long)(wall - x[i].ts_ms), k);
			break;
		}
	}
}

static void watch_rx(struct probe_sess *s, const struct probe_rx *rx, struct probe_out *o,
		     void *arg)
{
	struct watch *w = arg;
	struct probe_pair_state *p;
	struct probe_health *h;

	/* a port unreachable for an echo probe is the peer's kernel beside a DPDK
	 * responder (af_packet in the test bed): wait for the reply */
	if (o->kind == PROBE_KIND_ECHO && rx->kind != PROBE_RX_REPLY)
		return;
	o->live = false;
	if (o->pair >= w->np)
		return;
	p = &w->ps[o->pair];
	if (o->path >= p->nh)
		return;
	h = p->h[o->path];
	if (o->kind == PROBE_KIND_TRACE) { /* a path check */
		if (rx->kind == PROBE_RX_HOP && o->ttl >= 1 && o->ttl <= PROBE_MAX_HOPS &&
		    h->idx >= 0) {
			char want[PROBE_NAME_MAX];

			probe_hop_name(s, rx->from, h->vhop[o->ttl - 1], PROBE_NAME_MAX);
			h->vgot |= 1u << (o->ttl - 1);
			path_hop(p->map.path[h->idx].name, o->ttl, want, sizeof(want));
			if (strcmp(want, h->vhop[o->ttl - 1]) != 0 && !p->remap) {
				ice_info(PROBE_LOG,
					 "path %s: port %u now crosses %s at hop %u: remap",
					 h->name, o->sport, h->vhop[o->ttl - 1], o->ttl);
				p->remap = true;
				remap_crossing(w, p, p->map.path[h->idx].name, o->ttl, o->sport);
			}
		}
		return;
	}
	if (rx->kind != PROBE_RX_REPLY || !rx->has_hdr)
		return;
	h->rcvd++;
	if (h->n < PROBE_RTT_SAMPLES) {
		double t1 = (double)rx->hdr.t1, t2 = (double)rx->hdr.t2, t3 = (double)rx->hdr.t3;
		double t4 = (double)rx->ts_ns;

		h->rtt[h->n] = ((t4 - t1) - (t3 - t2)) / 1e3;
		h->fwd[h->n] = (t2 - t1) / 1e3; /* clock offset included: changes only */
		h->rev[h->n] = (t4 - t3) / 1e3;
		h->n++;
	}
}

/* Probes past probe_timeout are lost. */
static void watch_expire(struct watch *w)
{
	uint64_t now = ice_now_ns();

	for (uint32_t i = 0; i < PROBE_TRACK_SLOTS; i++) {
		struct probe_out *o = &w->s->track.slot[i];

		if (!o->live || now - o->t_sent_ns < w->s->cfg->probe_timeout)
			continue;
		o->live = false;
		if (o->kind == PROBE_KIND_ECHO && o->pair < w->np && o->path < w->ps[o->pair].nh)
			w->ps[o->pair].h[o->path]->lost++;
	}
}

static double win_min(const struct probe_health *h, int which)
{
	double m = INFINITY;

	for (uint32_t i = 0; i < h->nwin; i++) {
		double v = which == 0 ? h->win[i].rtt : which == 1 ? h->win[i].fwd : h->win[i].rev;

		m = v < m ? v : m;
	}
	return m;
}

/* Close one path's interval: the record, the state, the path check. */
static json_t *health_report(struct watch *w, struct probe_pair_state *p, struct probe_health *h,
			     uint64_t now)
{
	const struct probe_cfg *c = w->s->cfg;
	json_t *r = json_object();
	double rmin = 0, p50 = 0, p99 = 0, f50 = 0, r50 = 0, base, fbase, rbase;
	uint32_t done = h->rcvd + h->lost;

	if (h->n > 0) {
		double fmin, revmin;

		p99 = probe_percentile(h->rtt, h->n, 99);
		p50 = probe_percentile(h->rtt, h->n, 50);
		rmin = h->rtt[0];
		f50 = probe_percentile(h->fwd, h->n, 50);
		fmin = h->fwd[0];
		r50 = probe_percentile(h->rev, h->n, 50);
		revmin = h->rev[0];
		h->win[h->win_head].ts_ns = now;
		h->win[h->win_head].rtt = rmin;
		h->win[h->win_head].fwd = fmin;
		h->win[h->win_head].rev = revmin;
		h->win_head = (h->win_head + 1) % PROBE_BASE_WIN;
		if (h->nwin < PROBE_BASE_WIN)
			h->nwin++;
	}
	/* drop window entries older than base_window */
	for (uint32_t i = 0; i < h->nwin;) {
		if (now - h->win[i].ts_ns > c->base_window) {
			h->win[i] = h->win[h->nwin - 1];
			h->nwin--;
			h->win_head = h->nwin % PROBE_BASE_WIN;
		} else {
			i++;
		}
	}
	base = win_min(h, 0);
	fbase = win_min(h, 1);
	rbase = win_min(h, 2);
	if (h->idx >= 0) {
		if (h->sent > 0 && h->rcvd == 0 && h->lost > 0)
			h->silent++;
		else if (h->rcvd > 0)
			h->silent = 0;
		if (h->silent >= 2 && !h->dead) {
			h->dead = true;
			h->dead_since_ms = ice_wall_ms();
			p->remap = true;
			ice_info(PROBE_LOG, "path %s: silent for %u intervals: dead", h->name,
				 h->silent);
		}
	}
	json_object_set_new(r, "path", json_string(h->name));
	json_object_set_new(r, "sport", json_integer(h->idx >= 0 ? h->sport : 0));
	json_object_set_new(r, "state", json_string(h->dead ? "dead" : "up"));
	if (h->dead)
		json_object_set_new(r, "dead_since_ms", json_integer((json_int_t)h->dead_since_ms));
	json_object_set_new(r, "sent", json_integer(h->sent));
	json_object_set_new(r, "rcvd", json_integer(h->rcvd));
	json_object_set_new(r, "lost", json_integer(h->lost));
	json_object_set_new(r, "loss", json_real(done > 0 ? (double)h->lost / done : 0));
	json_object_set_new(r, "samples", json_integer(h->n));
	if (h->n > 0) {
		json_object_set_new(r, "rtt_min_us", json_real(rmin));
		json_object_set_new(r, "rtt_p50_us", json_real(p50));
		json_object_set_new(r, "rtt_p99_us", json_real(p99));
		json_object_set_new(r, "base_rtt_us", json_real(base));
		json_object_set_new(r, "qdelay_us", json_real(p50 - base));
		json_object_set_new(r, "qdelay_p99_us", json_real(p99 - base));
		json_object_set_new(r, "owd_fwd_change_us", json_real(f50 - fbase));
		json_object_set_new(r, "owd_rev_change_us", json_real(r50 - rbase));
	}
	h->sent = h->rcvd = h->lost = h->n = 0;
	h->vgot = h->vsent = 0;
	return r;
}

/* Start this interval's path checks: trace the varying TTLs of each path's
 * echo port and of PROBE_CHECK_PORTS - 1 more of its known ports, the next
 * ones each interval (a rehash moves only some ports: one port per path
 * would miss it half the time on two paths). */
static void health_check_paths(struct watch *w, uint32_t pi)
{
	struct probe_pair_state *p = &w->ps[pi];

	for (uint32_t i = 0; i < p->nh; i++) {
		struct probe_health *h = p->h[i];
		const struct probe_path *path;
		uint16_t ports[PROBE_CHECK_PORTS];
		uint32_t n = 0;

		if (h->idx < 0)
			continue;
		path = &p->map.path[h->idx];
		ports[n++] = h->sport;
		for (uint32_t k = 0; k < path->nports && n < w->check_ports; k++) {
			uint16_t sp = path->port[(p->check_turn + k) % path->nports];

			if (sp != h->sport)
				ports[n++] = sp;
		}
		for (uint32_t j = 0; j < n; j++)
			for (uint32_t t = 1; t <= p->map.nhops; t++)
				if (!(p->map.fixed_mask & (1u << (t - 1))) &&
				    probe_sess_send(w->s, p->pair.dst, ports[j], (uint8_t)t,
						    PROBE_KIND_TRACE, (uint16_t)i, pi) == 0)
					h->vsent |= 1u << (t - 1);
	}
	p->check_turn += w->check_ports > 1 ? w->check_ports - 1 : 1;
}

/* This interval's path checks: check_pairs pairs, the next ones in turn. */
static void watch_checks(struct watch *w)
{
	for (uint32_t k = 0; k < w->check_pairs && k < w->np; k++)
		health_check_paths(w, (w->check_next + k) % w->np);
	w->check_next = (w->check_next + w->check_pairs) % w->np;
}

static void watch_report(struct watch *w, uint64_t now, uint64_t seq)
{
	for (uint32_t pi = 0; pi < w->np; pi++) {
		struct probe_pair_state *p = &w->ps[pi];
		char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
		json_t *rec = json_object(), *paths = json_array();

		inet_ntop(AF_INET, &p->pair.src, a, sizeof(a));
		inet_ntop(AF_INET, &p->pair.dst, b, sizeof(b));
		json_object_set_new(rec, "src", json_string(a));
		json_object_set_new(rec, "dst", json_string(b));
		json_object_set_new(rec, "seq", json_integer((json_int_t)seq));
		json_object_set_new(rec, "ts_ms", json_integer((json_int_t)ice_wall_ms()));
		json_object_set_new(rec, "map_ts_ms", json_integer((json_int_t)p->map.ts_ms));
		json_object_set_new(rec, "map_age_ms",
				    json_integer((json_int_t)(ice_wall_ms() - p->map.ts_ms)));
		json_object_set_new(rec, "remaps", json_integer(p->remaps));
		for (uint32_t i = 0; i < p->nh; i++)
			json_array_append_new(paths, health_report(w, p, p->h[i], now));
		json_object_set_new(rec, "paths", paths);
		if (w->o->redis != NULL)
			probe_redis_health(w->o->redis, &p->map, rec);
		if (w->o->json) {
			json_dumpf(rec, w->o->out, JSON_COMPACT);
			fputc('\n', w->o->out);
		} else {
			fprintf(w->o->out, "%s -> %s seq %llu\n", a, b, (unsigned long long)seq);
			for (size_t i = 0; i < json_array_size(paths); i++) {
				json_t *x = json_array_get(paths, i);

				fprintf(w->o->out,
					"  %-28s %-4s port %5lld sent %3lld loss %.2f rtt "
					"min/p50/p99 "
					"%.0f/%.0f/%.0f us base %.0f queue %.0f us\n",
					json_string_value(json_object_get(x, "path")),
					json_string_value(json_object_get(x, "state")),
					json_integer_value(json_object_get(x, "sport")),
					json_integer_value(json_object_get(x, "sent")),
					json_real_value(json_object_get(x, "loss")),
					json_real_value(json_object_get(x, "rtt_min_us")),
					json_real_value(json_object_get(x, "rtt_p50_us")),
					json_real_value(json_object_get(x, "rtt_p99_us")),
					json_real_value(json_object_get(x, "base_rtt_us")),
					json_real_value(json_object_get(x, "qdelay_us")));
			}
		}
		fflush(w->o->out);
		json_decref(rec);
		if (p->remap || now >= p->next_refresh_ns) {
			if (pair_map(w, p) < 0)
				p->next_refresh_ns = now + w->s->cfg->report_interval;
		}
	}
	watch_budget(w);
	watch_checks(w);
}

int probe_watch(struct probe_sess *s, const struct probe_pinglist *pl,
		const struct probe_watch_opts *o)
{
	const struct probe_cfg *c = s->cfg;
	struct watch w = {.s = s, .o = o};
	uint64_t start = ice_now_ns(), next_report, next_expire, seq = 0;
	int ret = 0;

	w.ps = calloc(pl->n, sizeof(*w.ps));
	if (w.ps == NULL)
		return -ENOMEM;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (uint32_t i = 0; i < pl->n; i++) {
		if (pl->pair[i].src.s_addr != s->local.s_addr)
			continue;
		w.ps[w.np].pair = pl->pair[i];
		ret = pair_map(&w, &w.ps[w.np]);
		if (ret < 0)
			ice_warn(PROBE_LOG, "pair %u: no map yet (%s); retried each interval", i,
				 strerror(-ret));
		w.np++;
	}
	if (w.np == 0) {
		ice_err(PROBE_LOG, "watch: no pinglist pair starts at this NIC");
		free(w.ps);
		return -ENOENT;
	}
	/* the rate limit bounds how often each path is checked and echoed */
	watch_budget(&w);
	next_report = ice_now_ns() + c->report_interval;
	next_expire = ice_now_ns() + 10 * ICE_NSEC_PER_MSEC;
	watch_checks(&w);
	while (!stop_flag && (c->duration == 0 || ice_now_ns() - start < c->duration)) {
		uint64_t now = ice_now_ns(), wake = next_report;
		uint64_t iv = w.echo_iv;

		if (o->redis != NULL && c->notice_poll > 0 && w.next_notice_ns < wake)
			wake = w.next_notice_ns > now ? w.next_notice_ns : now;

		for (uint32_t pi = 0; pi < w.np; pi++) {
			struct probe_pair_state *p = &w.ps[pi];

			for (uint32_t i = 0; i < p->nh; i++) {
				struct probe_health *h = p->h[i];

				if (h->idx < 0)
					continue;
				if (h->next_send_ns == 0) /* spread the paths over the interval */
					h->next_send_ns = now + i * iv / p->nh;
				if (h->next_send_ns <= now) {
					if (probe_sess_send(s, p->pair.dst, h->sport, 64,
							    PROBE_KIND_ECHO, (uint16_t)i, pi) == 0)
						h->sent++;
					h->next_send_ns += iv;
					if (h->next_send_ns < now)
						h->next_send_ns = now + iv;
				}
				wake = h->next_send_ns < wake ? h->next_send_ns : wake;
			}
		}
		now = ice_now_ns();
		ret = probe_sess_poll(s, wake > now ? wake - now : 0, watch_rx, &w);
		if (ret < 0)
			break;
		ret = 0;
		now = ice_now_ns();
		if (now >= next_expire) {
			watch_expire(&w);
			next_expire = now + 10 * ICE_NSEC_PER_MSEC;
		}
		/* our detections out, the other hosts' in: both mark pairs to remap */
		watch_notices(&w, now);
		/* a path check saw another switch: rediscover now, not at the report */
		for (uint32_t pi = 0; pi < w.np; pi++)
			if (w.ps[pi].remap && pair_map(&w, &w.ps[pi]) < 0) {
				w.ps[pi].remap = false; /* retried at the next report */
				w.ps[pi].next_refresh_ns = now;
			}
		watch_budget(&w);
		if (now >= next_report) {
			watch_report(&w, now, ++seq);
			next_report += c->report_interval;
			if (next_report < now)
				next_report = now + c->report_interval;
		}
	}
	if (o->redis != NULL && c->notice_poll > 0)
		fprintf(stderr,
			"ice-probe: watch: rehash notices: sent %llu (failed %llu), read %llu "
			"(acted on %llu: %llu "
			"pair(s) remapped; already handled %llu; no pair crossing %llu; unknown "
			"switch %llu; malformed %llu)\n",
			(unsigned long long)w.nt.sent, (unsigned long long)w.nt.send_failed,
			(unsigned long long)w.nt.read, (unsigned long long)w.nt.acted,
			(unsigned long long)w.nt.pairs, (unsigned long long)w.nt.same,
			(unsigned long long)w.nt.elsewhere, (unsigned long long)w.nt.unknown,
			(unsigned long long)w.nt.bad);
	for (uint32_t pi = 0; pi < w.np; pi++)
		for (uint32_t i = 0; i < w.ps[pi].nh; i++)
			free(w.ps[pi].h[i]);
	free(w.ps);
	return ret;
}

int probe_respond(struct probe_sess *s)
{
	const struct probe_cfg *c = s->cfg;
	uint64_t start = ice_now_ns();
	int ret;

	s->responder = true;
	ret = s->io->ops->listen(s->io, (uint16_t)c->responder_port);
	if (ret < 0) {
		ice_err(PROBE_LOG, "responder: UDP port %u: %s", c->responder_port, strerror(-ret));
		return ret;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	while (!stop_flag && (c->duration == 0 || ice_now_ns() - start < c->duration)) {
		ret = probe_sess_poll(s, 100 * ICE_NSEC_PER_MSEC, NULL, NULL);
		if (ret < 0)
			return ret;
	}
	return 0;
}
