// SPDX-License-Identifier: Apache-2.0
/*
 * Path discovery: RoCEv2-shaped probes from a growing set of source ports,
 * TTL 1..H, switches answer ICMP time exceeded; per port the sequence of
 * switches is its path. Adaptive: the first hop (the NIC's own switch) and
 * the last (the destination's) are probed only until min_ports ports agree
 * on them; rounds are sized by how many ports are still wanted; discovery
 * stops when every path seen has min_ports ports and either the topology's
 * path count is reached or extra_ports more ports brought no new path.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/ip_icmp.h>
#include <string.h>

#include "ice_log.h"
#include "ice_time.h"
#include "probe_internal.h"
#include "topo.h"

#define ROUND_MAX 16

struct port_trace {
	uint16_t sport;
	char hop[PROBE_MAX_HOPS][PROBE_NAME_MAX];
	uint32_t want, got;   /* TTL bits (bit t-1) */
	uint32_t reached_ttl; /* lowest TTL answered by the destination */
};

struct round {
	struct port_trace *pt;
	int n;
	struct probe_pathmap *m;
	struct in_addr dst;
	uint64_t lat_max_ns; /* the slowest answer of this discovery so far */
};

/* How long try 0 or 1 of a round waits: 4x the slowest answer of this
 * discovery so far (at least 10 ms), then 16x (at least 40 ms; with no
 * answer yet: trace_timeout), never past trace_timeout; what is missing
 * after a try is sent again. Switches rate-limit the ICMP they send (Linux:
 * 1000/s in bursts of 50, per switch; CoPP on real ones), so when several
 * hosts rediscover at once some answers never come, and each such loss
 * cost a whole trace_timeout (200 ms), delaying every pair mapped after
 * it. A late answer of an earlier try still counts. */
#define WAIT_MIN (10 * ICE_NSEC_PER_MSEC)

static uint64_t round_wait(const struct probe_sess *s, const struct round *r, int retry)
{
	uint64_t w;

	if (retry == 0)
		w = 4 * r->lat_max_ns > WAIT_MIN ? 4 * r->lat_max_ns : WAIT_MIN;
	else if (r->lat_max_ns == 0)
		w = s->cfg->trace_timeout;
	else
		w = 16 * r->lat_max_ns > 4 * WAIT_MIN ? 16 * r->lat_max_ns : 4 * WAIT_MIN;
	return w < s->cfg->trace_timeout ? w : s->cfg->trace_timeout;
}

static void round_rx(struct probe_sess *s, const struct probe_rx *rx, struct probe_out *o,
		     void *arg)
{
	struct round *r = arg;

	if (o->kind != PROBE_KIND_TRACE)
		return; /* a health probe's late answer: not ours to retire */
	o->live = false;
	if (o->dst.s_addr != r->dst.s_addr)
		return; /* a late answer of another pair's discovery (the same ports) */
	for (int i = 0; i < r->n; i++) {
		struct port_trace *p = &r->pt[i];
		uint32_t bit = 1u << (o->ttl - 1);

		uint64_t lat = ice_now_ns() - o->t_sent_ns;

		if (p->sport != o->sport || o->ttl < 1 || o->ttl > PROBE_MAX_HOPS)
			continue;
		r->m->answers++;
		r->lat_max_ns = lat > r->lat_max_ns ? lat : r->lat_max_ns;
		if (rx->kind == PROBE_RX_HOP) {
			probe_hop_name(s, rx->from, p->hop[o->ttl - 1], PROBE_NAME_MAX);
			p->got |= bit;
		} else if (rx->kind == PROBE_RX_REPLY ||
			   (rx->kind == PROBE_RX_UNREACH && rx->icmp_code == ICMP_PORT_UNREACH)) {
			if (p->reached_ttl == 0 || o->ttl < p->reached_ttl)
				p->reached_ttl = o->ttl;
			p->got |= bit;
		}
		return;
	}
}

/* Send the wanted, unanswered TTLs of every port; wait for the answers,
 * at most wait_ns. */
static int round_run(struct probe_sess *s, struct round *r, struct in_addr dst, uint64_t wait_ns)
{
	uint64_t end;
	int ret;

	for (int i = 0; i < r->n; i++)
		for (uint32_t t = 1; t <= PROBE_MAX_HOPS; t++)
			if ((r->pt[i].want & ~r->pt[i].got) & (1u << (t - 1))) {
				ret = probe_sess_send(s, dst, r->pt[i].sport, (uint8_t)t,
						      PROBE_KIND_TRACE, 0, PROBE_PAIR_DISCOVERY);
				if (ret == 0)
					r->m->probes++;
			}
	end = ice_now_ns() + wait_ns;
	for (;;) {
		uint64_t now = ice_now_ns();
		bool done = true;

		for (int i = 0; i < r->n; i++)
			done &= (r->pt[i].want & ~r->pt[i].got) == 0;
		if (done || now >= end)
			break;
		ret = probe_sess_poll(s, end - now, round_rx, r);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int probe_path_find(const struct probe_pathmap *m, const char *name)
{
	for (uint32_t i = 0; i < m->npaths; i++)
		if (strcmp(m->path[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Record a complete port: its path (new or known). 1 when the path is new. */
static int map_add_port(struct probe_pathmap *m, const struct port_trace *p)
{
	char name[PROBE_PATH_NAME] = "";
	size_t o = 0;
	int idx, isnew = 0;

	for (uint32_t t = 1; t <= m->nhops; t++) {
		const char *h = (m->fixed_mask & (1u << (t - 1))) ? m->fixed[t - 1] : p->hop[t - 1];

		o += (size_t)snprintf(name + o, sizeof(name) - o, "%s%s", t > 1 ? ">" : "", h);
	}
	idx = probe_path_find(m, name);
	if (idx < 0) {
		if (m->npaths == PROBE_MAX_PATHS)
			return 0;
		idx = (int)m->npaths++;
		snprintf(m->path[idx].name, sizeof(m->path[idx].name), "%s", name);
		isnew = 1;
	}
	if (m->path[idx].nports < PROBE_PATH_KEEP)
		m->path[idx].port[m->path[idx].nports] = p->sport;
	m->path[idx].nports++;
	if (m->nports < PROBE_MAX_PORTS) {
		m->sport[m->nports] = p->sport;
		m->path_of[m->nports] = (int16_t)idx;
		m->nports++;
	}
	return isnew;
}

static int expected_paths(const struct probe_sess *s, struct in_addr dst)
{
	const struct topo_port *a, *b;

	if (s->topo == NULL || (a = topo_port_by_addr(s->topo, s->local)) == NULL ||
	    (b = topo_port_by_addr(s->topo, dst)) == NULL)
		return -1;
	return topo_paths(s->topo, a->id, b->id, NULL, 0);
}

/* The i-th source port to try: sport_min + i * stride (mod the range), the
 * stride coprime with the range and near 0.618 of it, so that the first
 * ports differ in high bits as well as low ones. Consecutive ports differ
 * only in their low bits, and a hash linear in its input bits (Toeplitz,
 * CRC) gives all 12 of 49152..49163 one path whenever the key's bits for
 * those 4 input bits cancel: seen for every pair of a leaf at once. */
static uint16_t port_at(const struct probe_cfg *c, uint32_t i)
{
	uint32_t range = c->sport_max - c->sport_min + 1, stride = (uint32_t)(range * 0.618) | 1;
	uint32_t a, b;

	for (;; stride += 2) { /* gcd(stride, range) == 1 */
		for (a = stride, b = range; b != 0;) {
			uint32_t t = a % b;

			a = b;
			b = t;
		}
		if (a == 1 || stride >= range)
			break;
	}
	return (uint16_t)(c->sport_min + (uint32_t)((uint64_t)i * stride % range));
}

int probe_discover(struct probe_sess *s, struct in_addr dst, struct probe_pathmap *m)
{
	const struct probe_cfg *c = s->cfg;
	struct port_trace pt[ROUND_MAX];
	struct round r = {.pt = pt, .m = m, .dst = dst};
	uint32_t next = 0, range = c->sport_max - c->sport_min + 1;
	uint32_t tried = 0, since_new = 0, agree[PROBE_MAX_HOPS] = {0};
	uint64_t t0 = ice_now_ns();
	char dbuf[INET_ADDRSTRLEN];
	int ret;

	memset(m, 0, sizeof(*m));
	m->src = s->local;
	m->dst = dst;
	m->expected = expected_paths(s, dst);
	inet_ntop(AF_INET, &dst, dbuf, sizeof(dbuf));

	/* Round 0: one port, TTLs 1..4 then 5..max_ttl: the hop count. */
	memset(pt, 0, sizeof(pt));
	pt[0].sport = port_at(c, next++);
	r.n = 1;
	for (uint32_t lo = 1; lo <= c->max_ttl && pt[0].reached_ttl == 0; lo += 4) {
		for (uint32_t t = lo; t < lo + 4 && t <= c->max_ttl; t++)
			pt[0].want |= 1u << (t - 1);
		for (int retry = 0; retry < 2 && pt[0].reached_ttl == 0; retry++) {
			ret = round_run(s, &r, dst, round_wait(s, &r, retry));
			if (ret < 0)
				return ret;
		}
	}
	tried = 1;
	if (pt[0].reached_ttl == 0) {
		ice_err(PROBE_LOG, "paths: no answer from %s within TTL %u (%u probes)", dbuf,
			c->max_ttl, m->probes);
		return -EHOSTUNREACH;
	}
	m->nhops = pt[0].reached_ttl - 1;
	if (m->nhops == 0 || m->nhops > PROBE_MAX_HOPS) {
		ice_err(PROBE_LOG, "paths: %s is %u switches away; expected 1..%d", dbuf, m->nhops,
			PROBE_MAX_HOPS);
		return -ERANGE;
	}
	{
		uint32_t all = (1u << m->nhops) - 1;

		pt[0].want = all;
		for (int retry = 0; retry < 2 && (pt[0].got & all) != all; retry++) {
			ret = round_run(s, &r, dst, round_wait(s, &r, retry));
			if (ret < 0)
				return ret;
		}
		if ((pt[0].got & all) == all)
			map_add_port(m, &pt[0]);
		else
			m->unanswered_ports++;
		for (uint32_t t = 1; t <= m->nhops; t++)
			if ((pt[0].got & (1u << (t - 1))) != 0) {
				memcpy(m->fixed[t - 1], pt[0].hop[t - 1], PROBE_NAME_MAX);
				agree[t - 1] = 1;
			}
	}

	for (;;) {
		uint32_t want = (1u << m->nhops) - 1, needed = 0, k;
		bool cover = m->npaths > 0;

		for (uint32_t i = 0; i < m->npaths; i++) {
			if (m->path[i].nports < c->min_ports) {
				cover = false;
				needed += c->min_ports - m->path[i].nports;
			}
		}
		if (m->expected > 0 && (int)m->npaths < m->expected)
			needed += (uint32_t)(m->expected - (int)m->npaths) * c->min_ports;
		if (cover && ((m->expected > 0 && (int)m->npaths >= m->expected) ||
			      since_new >= c->extra_ports))
			break;
		if (tried >= c->max_ports || next >= range)
			break;
		if (needed == 0)
			needed = c->extra_ports - since_new;
		k = needed < 2 ? 2 : needed > ROUND_MAX ? ROUND_MAX : needed;
		/* until the first and last hops are fixed, small rounds: fewer TTLs sooner */
		if ((m->fixed_mask & 1u) == 0 && k > c->min_ports - 1)
			k = c->min_ports > 2 ? c->min_ports - 1 : 2;
		if (k > c->max_ports - tried)
			k = c->max_ports - tried;
		if (k > range - next)
			k = range - next;
		want &= ~m->fixed_mask;
		memset(pt, 0, sizeof(pt));
		for (uint32_t i = 0; i < k; i++) {
			pt[i].sport = port_at(c, next++);
			pt[i].want = want;
		}
		r.n = (int)k;
		tried += k;
		for (int retry = 0; retry < 2; retry++) {
			ret = round_run(s, &r, dst, round_wait(s, &r, retry));
			if (ret < 0)
				return ret;
		}
		for (uint32_t i = 0; i < k; i++) {
			if ((pt[i].got & want) != want) {
				m->unanswered_ports++;
				continue;
			}
			/* the first and last switch: fixed once min_ports ports agree */
			for (uint32_t t = 1; t <= m->nhops; t++) {
				uint32_t bit = 1u << (t - 1);

				if ((m->fixed_mask & bit) || (t != 1 && t != m->nhops))
					continue;
				if (strcmp(pt[i].hop[t - 1], m->fixed[t - 1]) == 0) {
					if (++agree[t - 1] >= c->min_ports)
						m->fixed_mask |= bit;
				} else {
					agree[t - 1] = 0; /* it varies: keep probing it */
					memcpy(m->fixed[t - 1], pt[i].hop[t - 1], PROBE_NAME_MAX);
				}
			}
			if (map_add_port(m, &pt[i]))
				since_new = 0;
			else
				since_new++;
		}
	}
	m->took_ns = ice_now_ns() - t0;
	m->ts_ms = ice_wall_ms();
	if (m->npaths == 0) {
		ice_err(PROBE_LOG,
			"paths: %s answers, but no switch on the way answered time exceeded "
			"(%u ports, %u probes)",
			dbuf, m->unanswered_ports, m->probes);
		return -EHOSTUNREACH;
	}
	ice_info(PROBE_LOG, "paths to %s: %u paths, %u ports, %u probes, %.1f ms", dbuf, m->npaths,
		 m->nports, m->probes, m->took_ns / 1e6);
	return 0;
}

json_t *probe_pathmap_json(const struct probe_pathmap *m, bool ports)
{
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
	json_t *o = json_object(), *paths = json_array();

	inet_ntop(AF_INET, &m->src, a, sizeof(a));
	inet_ntop(AF_INET, &m->dst, b, sizeof(b));
	json_object_set_new(o, "src", json_string(a));
	json_object_set_new(o, "dst", json_string(b));
	json_object_set_new(o, "ts_ms", json_integer((json_int_t)m->ts_ms));
	json_object_set_new(o, "age_ms", json_integer((json_int_t)(ice_wall_ms() - m->ts_ms)));
	json_object_set_new(o, "hops", json_integer(m->nhops));
	json_object_set_new(o, "probes", json_integer(m->probes));
	json_object_set_new(o, "answers", json_integer(m->answers));
	json_object_set_new(o, "ports_tried", json_integer(m->nports + m->unanswered_ports));
	json_object_set_new(o, "unanswered_ports", json_integer(m->unanswered_ports));
	json_object_set_new(o, "expected_paths", json_integer(m->expected));
	json_object_set_new(o, "took_ms", json_real(m->took_ns / 1e6));
	for (uint32_t i = 0; i < m->npaths; i++) {
		json_t *p = json_object(), *pp = json_array();

		json_object_set_new(p, "id", json_integer(i));
		json_object_set_new(p, "path", json_string(m->path[i].name));
		json_object_set_new(p, "nports", json_integer(m->path[i].nports));
		for (uint32_t j = 0; j < m->nports; j++)
			if (m->path_of[j] == (int16_t)i)
				json_array_append_new(pp, json_integer(m->sport[j]));
		json_object_set_new(p, "ports", pp);
		json_array_append_new(paths, p);
	}
	json_object_set_new(o, "paths", paths);
	if (ports) {
		json_t *map = json_object();

		for (uint32_t j = 0; j < m->nports; j++) {
			char k[8];

			snprintf(k, sizeof(k), "%u", m->sport[j]);
			json_object_set_new(map, k, json_string(m->path[m->path_of[j]].name));
		}
		json_object_set_new(o, "port_map", map);
	}
	return o;
}

void probe_pathmap_print(const struct probe_pathmap *m, FILE *f)
{
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &m->src, a, sizeof(a));
	inet_ntop(AF_INET, &m->dst, b, sizeof(b));
	fprintf(f, "%s -> %s: %u paths (expected %d), %u switches, %u ports, %u probes, %.1f ms\n",
		a, b, m->npaths, m->expected, m->nhops, m->nports, m->probes, m->took_ns / 1e6);
	for (uint32_t i = 0; i < m->npaths; i++) {
		fprintf(f, "  path %u %-32s %3u ports:", i, m->path[i].name, m->path[i].nports);
		for (uint32_t j = 0; j < m->nports; j++)
			if (m->path_of[j] == (int16_t)i)
				fprintf(f, " %u", m->sport[j]);
		fprintf(f, "\n");
	}
}
