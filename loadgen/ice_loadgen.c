// SPDX-License-Identifier: Apache-2.0
/*
 * ice-loadgen: N agents' and probes' records played into Redis at their
 * interval, for the controller's view at scale (docs/benchmarks.md).
 *
 * Every host NIC of a topology is one agent (as ice-agent --nic); the QPs
 * are spread over them, each QP to another NIC, at a steady rate. The
 * records are rendered by the agent's own code (agent_redis_render: the
 * same hashes, streams, TTLs and index as ice-agent) and the probe's own
 * (probe_redis_map, probe_redis_health), so the schema cannot drift. An
 * interval's agents go out in pipelines of --batch agents (routed per
 * shard on a cluster). Printed: commands per second achieved, the time an
 * interval takes, error replies; with --json one object at the end.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "ice_config.h"
#include "ice_log.h"
#include "ice_redis.h"
#include "ice_time.h"
#include "probe.h"
#include "topo.h"

struct lg_opts {
	char redis[256];
	char fabric[64];
	char topology[256];
	uint64_t qps;	   /* QPs in all */
	uint32_t hosts;	   /* NICs playing agents; 0: every host NIC of the topology */
	uint32_t first;	   /* the first of them (topology order) */
	uint64_t interval; /* the agents' interval, ns */
	uint64_t duration; /* ns; 0: until a signal */
	uint64_t rate;	   /* bit/s per QP */
	uint32_t batch;	   /* agents per pipeline */
	uint32_t probers;  /* NICs that publish probe records */
	uint32_t pairs;	   /* pairs per prober */
	uint64_t probe_interval;
	bool json;
};

static volatile sig_atomic_t lg_stop;

static void on_signal(int sig)
{
	(void)sig;
	lg_stop = 1;
}

#define F(k, t, m, ...) ICE_CFG_ROW(struct lg_opts, k, t, m, __VA_ARGS__)
static const struct ice_cfg_field lg_fields[] = {
	F("redis", ICE_CFG_STRING, redis, .alias = 'r',
	  .help = "Redis: HOST:PORT, unix:/PATH, or a cluster cluster:HOST:PORT[,...]"),
	F("fabric", ICE_CFG_STRING, fabric, .help = "key namespace ice:<fabric>: (default lab)"),
	F("topology", ICE_CFG_STRING, topology, .alias = 't', .flags = ICE_CFG_REQUIRED,
	  .help = "topology file: its host NICs play the agents (ice-topo gen)"),
	F("qps", ICE_CFG_UINT, qps, .min = 1, .max = 10000000, .alias = 'n',
	  .help = "QPs in all, spread over the agents (default 1000)"),
	F("hosts", ICE_CFG_U32, hosts, .min = 0, .max = 10000000,
	  .help = "agents (host NICs, in topology order); 0: all (default)"),
	F("first", ICE_CFG_U32, first, .min = 0, .max = 10000000,
	  .help = "the first agent's NIC (topology order, default 0): generators\n"
		  "that share the hosts out, each with --first, --hosts and its --qps"),
	F("interval", ICE_CFG_DURATION, interval, .min = 10e6, .max = 3600e9,
	  .unit = ICE_NSEC_PER_SEC, .help = "the agents' interval (default 1s, ice-agent's)"),
	F("duration", ICE_CFG_DURATION, duration, .min = 0, .max = 86400e9,
	  .unit = ICE_NSEC_PER_SEC, .alias = 'D',
	  .help = "run time; 0: until SIGINT (default 10s)"),
	F("rate", ICE_CFG_RATE, rate, .min = 0, .max = 1e13,
	  .help = "each QP's send rate (default 1gbit)"),
	F("batch", ICE_CFG_U32, batch, .min = 1, .max = 100000,
	  .help = "agents per pipeline (default 64, ice-agent's queue batch)"),
	F("probers", ICE_CFG_U32, probers, .min = 0, .max = 100000,
	  .help = "NICs publishing probe maps and health (default 0)"),
	F("pairs", ICE_CFG_U32, pairs, .min = 1, .max = PROBE_MAX_PAIRS,
	  .help = "NIC pairs per prober (default 4)"),
	F("probe_interval", ICE_CFG_DURATION, probe_interval, .min = 10e6, .max = 3600e9,
	  .unit = ICE_NSEC_PER_SEC, .help = "the probes' report interval (default 1s)"),
	F("json", ICE_CFG_BOOL, json, .help = "one JSON object of the figures at the end"),
};
#undef F

/* ---- agents */

struct lg_agent {
	struct agent_cfg cfg;
	uint32_t nic;	/* index among the topology's host NICs */
	uint32_t nqp;	/* its QPs */
	uint64_t qp0;	/* its first QP's global number */
	uint64_t ts_ms; /* the last interval's, strictly increasing */
};

struct lg {
	struct lg_opts o;
	struct topo *t;
	struct ice_redis r;
	struct lg_agent *ag;
	uint32_t nag, nnic;
	struct agent_sample s;
	struct agent_buf b;
	uint64_t start_ms;
	/* figures */
	uint64_t cmds, errors, intervals, late;
	uint64_t busy_ns; /* time spent sending */
	double max_interval_ms;
};

static const struct topo_port *nic_of(const struct lg *g, uint32_t i)
{
	return topo_nic(g->t, i % g->nnic);
}

static int agents_init(struct lg *g)
{
	uint64_t per, extra;

	g->nnic = topo_nic_count(g->t);
	g->nag = g->o.hosts ? g->o.hosts : g->nnic - g->o.first;
	if (g->nnic < 2 || g->o.first >= g->nnic || g->nag > g->nnic - g->o.first) {
		fprintf(stderr,
			"ice-loadgen: %s: %u host NICs, expected at least 2 and %u from NIC %u "
			"on\n",
			g->o.topology, g->nnic, g->nag, g->o.first);
		return -EINVAL;
	}
	g->ag = calloc(g->nag, sizeof(*g->ag));
	if (g->ag == NULL)
		return -ENOMEM;
	per = g->o.qps / g->nag;
	extra = g->o.qps % g->nag;
	/* QP numbers go on from where the generators before would end (each
	 * with as many QPs per agent) */
	for (uint64_t i = 0, q0 = (uint64_t)g->o.first * per; i < g->nag; i++) {
		struct lg_agent *a = &g->ag[i];
		const struct topo_port *p = nic_of(g, g->o.first + (uint32_t)i);

		agent_cfg_defaults(&a->cfg);
		snprintf(a->cfg.nic, sizeof(a->cfg.nic), "%s", p->ifname);
		inet_ntop(AF_INET, &p->addr, a->cfg.addr, sizeof(a->cfg.addr));
		snprintf(a->cfg.host, sizeof(a->cfg.host), "%s", g->t->nodes[p->node].name);
		snprintf(a->cfg.fabric, sizeof(a->cfg.fabric), "%s", g->o.fabric);
		snprintf(a->cfg.redis, sizeof(a->cfg.redis), "%s", g->o.redis);
		a->cfg.interval = g->o.interval;
		a->cfg.addr_be = p->addr.s_addr;
		a->cfg.ifindex = (int)(2 + p->id);
		a->nic = g->o.first + (uint32_t)i;
		a->nqp = (uint32_t)(per + (i < extra));
		a->qp0 = q0;
		q0 += a->nqp;
	}
	return 0;
}

/* One interval of agent a: its QPs with counters at the steady rate since
 * the start (the agent's sample, as agent_join and agent_rates make it). */
static int agent_sample_fill(struct lg *g, struct lg_agent *a, uint64_t ts_ms, double dt)
{
	struct agent_sample *s = &g->s;
	double secs = (double)(ts_ms - g->start_ms) / 1e3;
	double bps = (double)g->o.rate / 8;

	agent_sample_clear(s);
	if (s->cap < a->nqp) {
		struct agent_qp *q = realloc(s->qp, sizeof(*q) * a->nqp);

		if (q == NULL)
			return -ENOMEM;
		s->qp = q;
		s->cap = a->nqp;
	}
	s->seq = g->intervals;
	s->ts_ms = ts_ms;
	s->mono_ns = ice_now_ns();
	s->dt = dt;
	memset(&s->nic, 0, sizeof(s->nic));
	memset(&s->nic_r, 0, sizeof(s->nic_r));
	for (uint32_t j = 0; j < a->nqp; j++) {
		struct agent_qp *q = &s->qp[j];
		/* another NIC: the next ones in turn, never itself */
		uint32_t peer = (a->nic + 1 + j % (g->nnic - 1)) % g->nnic;

		memset(q, 0, sizeof(*q));
		q->id.kind = AGENT_QP;
		q->id.local_ip = a->cfg.addr_be;
		q->id.remote_ip = nic_of(g, peer)->addr.s_addr;
		q->id.qpn = 256 + j; /* QPNs sort like j: the sample stays sorted by id */
		q->rqpn = 256 + (uint32_t)((a->qp0 + j) % 65000);
		q->sport =
			(uint16_t)(TOPO_SPORT_BASE + (a->qp0 + j) * 2654435761u % TOPO_SPORT_COUNT);
		q->src = AGENT_SRC_CTRL | AGENT_SRC_BPF;
		q->pid = (uint32_t)getpid();
		q->c.tx_bytes = (uint64_t)(bps * secs);
		q->c.tx_pkts = q->c.tx_bytes / 4096;
		q->tp = q->c;
		q->has_rate = dt > 0;
		q->r.tx_bytes = bps;
		q->r.tx_pkts = bps / 4096;
		s->nic.tx_bytes += q->c.tx_bytes;
		s->nic.tx_pkts += q->c.tx_pkts;
		s->nic_r.tx_bytes += q->r.tx_bytes;
		s->nic_r.tx_pkts += q->r.tx_pkts;
	}
	s->nqp = a->nqp;
	s->nic_qps = a->nqp;
	s->nic_has_rate = dt > 0;
	return 0;
}

/* Send what g->b holds (n commands); -EIO when the connection broke. */
static int flush(struct lg *g)
{
	uint32_t errors = 0;
	int ret;

	if (g->b.ncmd == 0)
		return 0;
	ret = ice_redis_append_formatted(&g->r, g->b.p, g->b.len);
	if (ret == 0)
		ret = ice_redis_pipe(&g->r, g->b.ncmd, NULL, &errors);
	g->cmds += g->b.ncmd;
	g->errors += errors;
	g->b.len = 0;
	g->b.ncmd = 0;
	return ret < 0 ? -EIO : 0;
}

static int agents_register(struct lg *g)
{
	for (uint32_t i = 0; i < g->nag; i++) {
		if (agent_redis_render_register(&g->ag[i].cfg, false, g->start_ms, &g->b) < 0)
			return -ENOMEM;
		if ((i + 1) % g->o.batch == 0 && flush(g) < 0)
			return -EIO;
	}
	return flush(g);
}

static int agents_interval(struct lg *g, double dt)
{
	uint64_t now = ice_wall_ms();

	for (uint32_t i = 0; i < g->nag; i++) {
		struct lg_agent *a = &g->ag[i];
		uint64_t ts = now > a->ts_ms ? now : a->ts_ms + 1;

		a->ts_ms = ts;
		if (agent_sample_fill(g, a, ts, dt) < 0 ||
		    agent_redis_render(&a->cfg, &g->s, NULL, &g->b) < 0)
			return -ENOMEM;
		if ((i + 1) % g->o.batch == 0 && flush(g) < 0)
			return -EIO;
	}
	return flush(g);
}

/* ---- probes */

struct lg_prober {
	struct probe_cfg cfg;
	struct probe_redis *r;
	uint32_t npairs;
	struct probe_pathmap *map; /* npairs */
	uint64_t seq;
};

/* The map a probe would learn for src -> dst when the switches hash as the
 * topology's models say: each equal-cost path with its first ports. */
static int map_fill(const struct topo *t, const struct topo_port *src, const struct topo_port *dst,
		    struct probe_pathmap *m, uint64_t ts_ms)
{
	static uint16_t path_of[TOPO_SPORT_COUNT];
	struct topo_path paths[PROBE_MAX_PATHS];
	int np = topo_paths(t, src->id, dst->id, paths, PROBE_MAX_PATHS);

	if (np <= 0 || topo_port_map16(t, src->id, dst->id, path_of) < 0)
		return -EINVAL;
	if (np > PROBE_MAX_PATHS)
		np = PROBE_MAX_PATHS;
	memset(m, 0, sizeof(*m));
	m->src = src->addr;
	m->dst = dst->addr;
	m->nhops = paths[0].nhops - 1;
	m->npaths = (uint32_t)np;
	m->expected = np;
	m->ts_ms = ts_ms;
	for (int p = 0; p < np; p++) {
		size_t off = 0;

		for (uint32_t h = 0; h + 1 < paths[p].nhops && off < PROBE_PATH_NAME; h++)
			off += (size_t)snprintf(
				m->path[p].name + off, PROBE_PATH_NAME - off, "%s%s", h ? ">" : "",
				t->nodes[t->ports[t->ports[paths[p].egress[h]].peer].node].name);
	}
	for (uint32_t i = 0; i < TOPO_SPORT_COUNT && m->nports < PROBE_MAX_PORTS; i++) {
		uint16_t p = path_of[i];

		if (p >= (uint16_t)np || m->path[p].nports >= PROBE_PATH_KEEP)
			continue;
		m->path[p].port[m->path[p].nports++] = (uint16_t)(TOPO_SPORT_BASE + i);
		m->sport[m->nports] = (uint16_t)(TOPO_SPORT_BASE + i);
		m->path_of[m->nports++] = (int16_t)p;
	}
	m->probes = m->answers = m->nports * m->nhops;
	return 0;
}

/* A health record as ice-probe watch reports it (docs/redis-schema.md). */
static json_t *health_rec(const struct probe_pathmap *m, uint64_t seq, uint64_t ts_ms)
{
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
	json_t *paths = json_array();

	inet_ntop(AF_INET, &m->src, a, sizeof(a));
	inet_ntop(AF_INET, &m->dst, b, sizeof(b));
	for (uint32_t p = 0; p < m->npaths; p++)
		json_array_append_new(
			paths,
			json_pack("{s:s, s:i, s:s, s:i, s:i, s:i, s:f, s:i, s:f, s:f, s:f, "
				  "s:f, s:f, s:f, s:f, s:f}",
				  "path", m->path[p].name, "sport", m->path[p].port[0], "state",
				  "up", "sent", 10, "rcvd", 10, "lost", 0, "loss", 0.0, "samples",
				  10, "rtt_min_us", 20.0, "rtt_p50_us", 25.0, "rtt_p99_us", 40.0,
				  "base_rtt_us", 20.0, "qdelay_us", 5.0, "qdelay_p99_us", 20.0,
				  "owd_fwd_change_us", 2.0, "owd_rev_change_us", 2.0));
	return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:i, s:o}", "src", a, "dst", b, "seq",
			 (json_int_t)seq, "ts_ms", (json_int_t)ts_ms, "map_ts_ms",
			 (json_int_t)m->ts_ms, "map_age_ms", (json_int_t)(ts_ms - m->ts_ms),
			 "remaps", 0, "paths", paths);
}

static int probers_init(struct lg *g, struct lg_prober **out)
{
	struct lg_prober *pr;
	uint64_t now = ice_wall_ms();

	*out = NULL;
	if (g->o.probers == 0)
		return 0;
	pr = calloc(g->o.probers, sizeof(*pr));
	if (pr == NULL)
		return -ENOMEM;
	*out = pr;
	for (uint32_t i = 0; i < g->o.probers; i++) {
		const struct topo_port *src =
			nic_of(g, (uint32_t)((uint64_t)i * g->nnic / g->o.probers));

		probe_cfg_defaults(&pr[i].cfg);
		snprintf(pr[i].cfg.fabric, sizeof(pr[i].cfg.fabric), "%s", g->o.fabric);
		snprintf(pr[i].cfg.redis, sizeof(pr[i].cfg.redis), "%.*s",
			 (int)sizeof(pr[i].cfg.redis) - 1, g->o.redis); /* length checked */
		inet_ntop(AF_INET, &src->addr, pr[i].cfg.src, sizeof(pr[i].cfg.src));
		pr[i].map = calloc(g->o.pairs, sizeof(*pr[i].map));
		pr[i].r = probe_redis_new(&pr[i].cfg);
		if (pr[i].map == NULL || pr[i].r == NULL)
			return -ENOMEM;
		for (uint32_t k = 0; k < g->o.pairs; k++) {
			/* far NICs: spread over the fabric */
			uint32_t d = (uint32_t)((src->id * 7919u + (k + 1) * (g->nnic / 2 + 1)) %
						g->nnic);
			const struct topo_port *dst = nic_of(g, d);

			if (dst == src ||
			    map_fill(g->t, src, dst, &pr[i].map[pr[i].npairs], now) < 0)
				continue;
			if (probe_redis_map(pr[i].r, &pr[i].map[pr[i].npairs]) < 0)
				return -EIO;
			pr[i].npairs++;
			g->cmds += 3;
		}
	}
	return 0;
}

static int probers_interval(struct lg *g, struct lg_prober *pr)
{
	uint64_t now = ice_wall_ms();

	for (uint32_t i = 0; pr != NULL && i < g->o.probers; i++)
		for (uint32_t k = 0; k < pr[i].npairs; k++) {
			json_t *rec = health_rec(&pr[i].map[k], ++pr[i].seq, now);
			int ret = rec ? probe_redis_health(pr[i].r, &pr[i].map[k], rec) : -ENOMEM;

			json_decref(rec);
			if (ret < 0)
				return ret;
			g->cmds += 3 + pr[i].map[k].npaths;
		}
	return 0;
}

static void probers_free(struct lg *g, struct lg_prober *pr)
{
	for (uint32_t i = 0; pr != NULL && i < g->o.probers; i++) {
		probe_redis_free(pr[i].r);
		free(pr[i].map);
	}
	free(pr);
}

/* ---- the run */

static int lg_run(struct lg *g)
{
	struct lg_prober *pr = NULL;
	uint64_t t0 = ice_now_ns(), next = t0, next_probe = t0, end, last = 0;
	uint64_t cmds0;
	int ret;

	g->start_ms = ice_wall_ms();
	ice_redis_init(&g->r, g->o.redis, 5 * ICE_NSEC_PER_SEC);
	ret = ice_redis_up(&g->r, t0);
	if (ret < 0) {
		fprintf(stderr, "ice-loadgen: redis at %s: %s\n", g->o.redis, g->r.why);
		return 1;
	}
	ret = 0;
	if (agents_register(g) < 0 || probers_init(g, &pr) < 0) {
		fprintf(stderr, "ice-loadgen: redis at %s: registering: %s\n", g->o.redis,
			g->r.why[0] ? g->r.why : strerror(errno));
		probers_free(g, pr);
		return 1;
	}
	if (!g->o.json)
		printf("ice-loadgen: %u agents, %" PRIu64 " QPs, %u probers x %u pairs, every "
		       "%.0f ms, to %s\n",
		       g->nag, g->o.qps, g->o.probers, g->o.pairs, g->o.interval / 1e6, g->o.redis);
	cmds0 = g->cmds;
	t0 = ice_now_ns();
	next = t0;
	end = g->o.duration ? t0 + g->o.duration : UINT64_MAX;
	while (!lg_stop && ice_now_ns() < end) {
		uint64_t a = ice_now_ns(), took;
		double dt = last ? (double)(a - last) / 1e9 : 0;

		if (agents_interval(g, dt) < 0) {
			fprintf(stderr, "ice-loadgen: redis at %s: %s\n", g->o.redis, g->r.why);
			ret = 1;
			break;
		}
		if (pr != NULL && a >= next_probe) {
			if (probers_interval(g, pr) < 0) {
				fprintf(stderr, "ice-loadgen: probe records to %s failed\n",
					g->o.redis);
				ret = 1;
				break;
			}
			next_probe += g->o.probe_interval;
		}
		last = a;
		took = ice_now_ns() - a;
		g->busy_ns += took;
		g->intervals++;
		if ((double)took / 1e6 > g->max_interval_ms)
			g->max_interval_ms = (double)took / 1e6;
		next += g->o.interval;
		if (next <= ice_now_ns()) {
			g->late++; /* the interval took longer than the interval */
			next = ice_now_ns();
		} else {
			ice_sleep_ns(next - ice_now_ns());
		}
	}
	{
		double secs = (double)(ice_now_ns() - t0) / 1e9;
		double busy = (double)g->busy_ns / 1e9;
		double ops = (double)(g->cmds - cmds0);

		if (g->o.json)
			printf("{\"agents\":%u,\"qps\":%" PRIu64 ",\"probers\":%u,\"pairs\":%u,"
			       "\"interval_ms\":%.0f,\"intervals\":%" PRIu64 ",\"late\":%" PRIu64
			       ",\"cmds\":%.0f,\"ops_s\":%.0f,\"ops_s_busy\":%.0f,"
			       "\"interval_send_ms\":%.1f,\"interval_send_max_ms\":%.1f,"
			       "\"errors\":%" PRIu64 "}\n",
			       g->nag, g->o.qps, g->o.probers, g->o.pairs, g->o.interval / 1e6,
			       g->intervals, g->late, ops, secs > 0 ? ops / secs : 0,
			       busy > 0 ? ops / busy : 0,
			       g->intervals ? busy * 1e3 / (double)g->intervals : 0,
			       g->max_interval_ms, g->errors);
		else
			printf("ice-loadgen: %" PRIu64 " intervals (%" PRIu64
			       " late) in %.1f s: %.0f commands, %.0f ops/s offered, %.0f ops/s "
			       "while sending; an interval takes %.1f ms (max %.1f); %" PRIu64
			       " error replies\n",
			       g->intervals, g->late, secs, ops, secs > 0 ? ops / secs : 0,
			       busy > 0 ? ops / busy : 0,
			       g->intervals ? busy * 1e3 / (double)g->intervals : 0,
			       g->max_interval_ms, g->errors);
	}
	if (g->errors > 0) {
		fprintf(stderr, "ice-loadgen: %" PRIu64 " error replies (see the log)\n",
			g->errors);
		ret = 1;
	}
	probers_free(g, pr);
	return ret;
}

static int lg_finish(void *obj, const char *path, struct ice_cfg_err *err)
{
	struct lg_opts *o = obj;

	if (!ice_redis_addr_ok(o->redis))
		return ice_cfg_fail(err, path, "redis",
				    "expected HOST:PORT, unix:/PATH or cluster:HOST:PORT[,...], "
				    "got '%s'",
				    o->redis);
	if (o->probers > 0 && strlen(o->redis) >= sizeof(((struct probe_cfg *)0)->redis))
		return ice_cfg_fail(err, path, "redis",
				    "with --probers: at most %zu characters (ice-probe's), got %zu",
				    sizeof(((struct probe_cfg *)0)->redis) - 1, strlen(o->redis));
	if (!ice_cfg_name_ok(o->fabric))
		return ice_cfg_fail(err, path, "fabric",
				    "expected letters, digits, '.', '-', '_', got '%s'", o->fabric);
	return 0;
}

int main(int argc, char **argv)
{
	struct lg g = {0};
	struct ice_cfg_err err;
	struct ice_cfg_cli cli = {
		.tool = "ice-loadgen",
		.synopsis =
			"usage: ice-loadgen --topology FILE [--redis ADDR] [--qps N] [options]\n"
			"plays N QPs' agent records (and probe records) into Redis at their "
			"interval",
		.fields = lg_fields,
		.nfields = sizeof(lg_fields) / sizeof(lg_fields[0]),
		.obj = &g.o,
		.finish = lg_finish,
	};
	int ret;

	snprintf(g.o.redis, sizeof(g.o.redis), "127.0.0.1:6379");
	snprintf(g.o.fabric, sizeof(g.o.fabric), "lab");
	g.o.qps = 1000;
	g.o.interval = ICE_NSEC_PER_SEC;
	g.o.duration = 10 * ICE_NSEC_PER_SEC;
	g.o.rate = 1000000000;
	g.o.batch = 64;
	g.o.pairs = 4;
	g.o.probe_interval = ICE_NSEC_PER_SEC;
	ret = ice_cfg_parse_args(&cli, argc, argv);
	if (ret != 0)
		return ret > 0 ? 0 : 2;
	g.t = topo_load(g.o.topology, &err);
	if (g.t == NULL) {
		fprintf(stderr, "ice-loadgen: %s\n", err.msg);
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	agent_sample_init(&g.s);
	ret = agents_init(&g) < 0 ? 2 : lg_run(&g);
	agent_sample_fini(&g.s);
	free(g.b.p);
	free(g.ag);
	ice_redis_fini(&g.r);
	topo_free(g.t);
	return ret;
}
