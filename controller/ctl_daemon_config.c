// SPDX-License-Identifier: Apache-2.0
/* ctl_daemon_config: ice-controller's options, one table for YAML and flags. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl_daemon.h"
#include "ice_redis.h"
#include "ice_time.h"

#define F(k, t, m, lo, hi, u, h)                                                                   \
	{                                                                                          \
		.key = k, .type = t, .offset = offsetof(struct ctld_cfg, m),                       \
		.size = sizeof(((struct ctld_cfg *)0)->m), .min = lo, .max = hi, .unit = u,        \
		.help = h                                                                          \
	}

const struct ice_cfg_field ctld_cfg_fields[] = {
	F("fabric", ICE_CFG_STRING, fabric, 0, 0, 0, "fabric name: keys are ice:<fabric>:..."),
	F("topology", ICE_CFG_STRING, topology, 0, 0, 0, "topology file (topo/ YAML, required)"),
	F("redis", ICE_CFG_STRING, redis, 0, 0, 0,
	  "Redis: host:port, unix:/path, or a cluster: cluster:host:port[,host:port...]"),
	F("policy", ICE_CFG_STRING, policy, 0, 0, 0,
	  "DCQCN policy file (default: DCQCN defaults); a policy applied in\n"
	  "Redis (icectl policy apply) replaces it while running"),
	F("metrics", ICE_CFG_STRING, metrics, 0, 0, 0,
	  "ADDR:PORT (or PORT) of GET /metrics, Prometheus text; \"\" = off"),
	F("key", ICE_CFG_STRING, key, 0, 0, 0,
	  "the Ed25519 private key plans are signed with, PEM PKCS#8 (icectl keygen; "
	  "required to publish)"),
	F("id", ICE_CFG_STRING, id, 0, 0, 0, "controller id in the lease (default <host>-<pid>)"),
	F("interval", ICE_CFG_DURATION, interval, 5e6, 10e9, ICE_NSEC_PER_MSEC,
	  "loop period: events, links, lease (bare numbers in ms)"),
	F("qp_interval", ICE_CFG_DURATION, qp_interval, 10e6, 60e9, ICE_NSEC_PER_MSEC,
	  "how often the QP view is re-read (bare numbers in ms)"),
	F("qp_stale", ICE_CFG_DURATION, qp_stale, 0, 3600e9, ICE_NSEC_PER_MSEC,
	  "a QP whose agent has not written it for this long is not in the view;\n"
	  "0 = 3 qp_intervals, at least 3 s (the default; raise it for agents\n"
	  "with a longer interval)"),
	F("reopt", ICE_CFG_DURATION, reopt, 0, 86400e9, ICE_NSEC_PER_SEC,
	  "periodic global re-optimisation, 0 = never (bare numbers in s)"),
	F("lifetime", ICE_CFG_DURATION, lifetime, 100e6, 86400e9, ICE_NSEC_PER_SEC,
	  "plan lifetime; republished every third of it (bare numbers in s)"),
	F("hysteresis", ICE_CFG_DOUBLE, hysteresis, 0, 1, 0,
	  "relative max-utilisation gain needed to move flows (0.05)"),
	F("headroom", ICE_CFG_DOUBLE, headroom, 0.1, 1, 0,
	  "start rates at this fraction of the capacity (0.9)"),
	F("rates", ICE_CFG_BOOL, rates, 0, 0, 0,
	  "proactive start/target rates for announced collectives (true; false = paths only)"),
	F("lease_ttl", ICE_CFG_DURATION, lease_ttl, 100e6, 60e9, ICE_NSEC_PER_MSEC,
	  "leader lease; a standby takes over after it (bare numbers in ms)"),
	F("host_qps_max", ICE_CFG_U32, host_qps_max, 1, 1e7, 0,
	  "QP records read per host and refresh; more are dropped and counted (16384)"),
	F("min_rate", ICE_CFG_RATE, min_rate, 0, 1e12, 0,
	  "QPs measured below this rate are idle and not planned (1mbit)"),
	F("announce_ttl", ICE_CFG_DURATION, announce_ttl, 100e6, 86400e9, ICE_NSEC_PER_SEC,
	  "an announced collective is forgotten this long after its last call (s),\n"
	  "or at once when one of its ranks destroys its communicator"),
	F("redis_timeout", ICE_CFG_DURATION, redis_timeout, 1e6, 10e9, ICE_NSEC_PER_MSEC,
	  "Redis connect/reply timeout (bare numbers in ms)"),
	F("search_budget", ICE_CFG_DOUBLE, search_budget, 0, 60, 0,
	  "local-search time budget per plan in s (0 = until no move helps)"),
	F("dry_run", ICE_CFG_BOOL, dry_run, 0, 0, 0,
	  "compute and print plans as JSON, publish nothing"),
	F("once", ICE_CFG_BOOL, once, 0, 0, 0, "plan once, then exit"),
	F("feedback", ICE_CFG_BOOL, feedback, 0, 0, 0,
	  "closed loop: measured load nobody planned is taken off link capacities, and "
	  "congested links re-plan the QPs crossing them (true; false = demand only)"),
	F("telem_interval", ICE_CFG_DURATION, telem_interval, 0, 10e9, ICE_NSEC_PER_MSEC,
	  "how often switch telemetry is read, 0 = never (100 ms; bare numbers in ms)"),
	F("move_hold", ICE_CFG_UINT, move_hold, 0, 1e6, 0,
	  "a QP moves at most once per this many telemetry intervals (10)"),
	F("move_sticky", ICE_CFG_UINT, move_sticky, 0, 1e6, 0,
	  "a QP moved within this many telemetry intervals moves again only when\n"
	  "moving the others instead falls short by the hysteresis (100)"),
	F("feedback_alpha", ICE_CFG_DOUBLE, feedback_alpha, 0.01, 1, 0,
	  "weight of the newest interval in the unplanned load as it falls (it\n"
	  "rises at once to what its last two intervals both held; 0.5)"),
	F("host_cnp_min", ICE_CFG_DOUBLE, host_cnp_min, 0, 1e9, 0,
	  "CNPs/s a QP's sender receives that mark its path congested, where no\n"
	  "switch telemetry is (host signals; 100)"),
	F("probe_qdelay", ICE_CFG_DOUBLE, probe_qdelay, 0, 100, 0,
	  "with probe maps and no switch telemetry: a probed path whose queueing delay is\n"
	  "at least this share of its slowest link's time to drain ECN Kmin has a standing\n"
	  "queue, and links only such paths cross are full (0.5; 0 = off)"),
	F("pfc_interval", ICE_CFG_DURATION, pfc_interval, 0, 60e9, ICE_NSEC_PER_MSEC,
	  "how often the NICs' PFC state is read from their agents' records, 0 = never\n"
	  "(500 ms; bare numbers in ms; switch ports' PFC comes with their telemetry)"),
	F("pfc_storm", ICE_CFG_DOUBLE, pfc_storm, 0.01, 1, 0,
	  "a lossless priority paused at least this share of an interval, two intervals\n"
	  "in a row, is a pause storm on that link (0.5)"),
	F("link_refresh", ICE_CFG_DURATION, link_refresh, 0, 3600e9, ICE_NSEC_PER_SEC,
	  "each link's ctl:link record is rewritten when a value changes past its dead\n"
	  "band and at least this often; 0 = every telemetry interval (2 s; bare numbers in s)"),
	{.key = "sports",
	 .type = ICE_CFG_ENUM,
	 .offset = offsetof(struct ctld_cfg, sports),
	 .size = sizeof(int),
	 .choices = (const char *const[]){"auto", "model", "probe", NULL},
	 .help = "source ports from: model (the topology's switch hash; refused without "
		 "one), probe (ice-probe's maps), auto (probe when the topology's ECMP is the "
		 "kernel's or it states no hash)"},
};

const size_t ctld_cfg_nfields = sizeof(ctld_cfg_fields) / sizeof(ctld_cfg_fields[0]);

void ctld_cfg_defaults(struct ctld_cfg *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->fabric, sizeof(c->fabric), "default");
	snprintf(c->redis, sizeof(c->redis), "127.0.0.1:6379");
	c->interval = 20 * ICE_NSEC_PER_MSEC;
	c->qp_interval = 250 * ICE_NSEC_PER_MSEC;
	c->reopt = 10 * ICE_NSEC_PER_SEC;
	c->lifetime = 10 * ICE_NSEC_PER_SEC;
	c->hysteresis = 0.05;
	c->headroom = 0.9;
	c->rates = true;
	c->lease_ttl = 1000 * ICE_NSEC_PER_MSEC;
	c->min_rate = 1000000;
	c->host_qps_max = 16384;
	c->pfc_interval = 500 * ICE_NSEC_PER_MSEC;
	c->probe_qdelay = 0.5;
	c->pfc_storm = 0.5;
	c->announce_ttl = 10 * ICE_NSEC_PER_SEC;
	c->redis_timeout = 500 * ICE_NSEC_PER_MSEC;
	c->search_budget = 0.2;
	c->feedback = true;
	c->telem_interval = 100 * ICE_NSEC_PER_MSEC;
	c->move_hold = 10;
	c->move_sticky = 100;
	c->feedback_alpha = 0.5;
	c->host_cnp_min = 100;
	c->link_refresh = 2 * ICE_NSEC_PER_SEC;
}

int ctld_cfg_load_file(struct ctld_cfg *c, const char *path, struct ice_cfg_err *err)
{
	return ice_cfg_load_file(path, ctld_cfg_fields, ctld_cfg_nfields, c, err);
}

int ctld_cfg_set_flag(struct ctld_cfg *c, const char *flag, const char *value,
		      struct ice_cfg_err *err)
{
	return ice_cfg_set_flag(ctld_cfg_fields, ctld_cfg_nfields, c, flag, value, err);
}

int ctld_cfg_finish(struct ctld_cfg *c, const char *path, struct ice_cfg_err *err)
{
	if (c->topology[0] == '\0')
		return ice_cfg_fail(err, path, "topology",
				    "missing: expected the fabric's topology file (ice-topo gen)");
	if (c->key[0] == '\0' && !c->dry_run)
		return ice_cfg_fail(err, path, "key",
				    "missing: expected the Ed25519 private key file plans are "
				    "signed with (icectl keygen), or dry_run");
	if (!ice_cfg_name_ok(c->fabric))
		return ice_cfg_fail(err, path, "fabric",
				    "expected letters, digits, '.', '-' or '_', got '%s'",
				    c->fabric);
	if (!ice_redis_addr_ok(c->redis))
		return ice_cfg_fail(err, path, "redis",
				    "expected host:port (port 1-65535), unix:/path or "
				    "cluster:host:port[,host:port...], got '%s'",
				    c->redis);
	if (c->id[0] == '\0') {
		char h[40];

		if (gethostname(h, sizeof(h)) < 0)
			snprintf(h, sizeof(h), "ctl");
		h[sizeof(h) - 1] = '\0';
		for (char *p = h; *p != '\0'; p++)
			if (!ice_cfg_name_char(*p))
				*p = '-';
		snprintf(c->id, sizeof(c->id), "%s-%d", h, (int)getpid());
	}
	if (!ice_cfg_name_ok(c->id))
		return ice_cfg_fail(err, path, "id",
				    "expected letters, digits, '.', '-' or '_', got '%s'", c->id);
	if (c->lease_ttl < 3 * c->interval)
		return ice_cfg_fail(err, path, "lease_ttl",
				    "expected at least 3 intervals (%.0f ms) so the leader renews "
				    "in time, got %.0f ms",
				    3 * (double)c->interval / 1e6, (double)c->lease_ttl / 1e6);
	if (c->lifetime < 3 * c->interval || c->lifetime < 3 * c->qp_interval)
		return ice_cfg_fail(err, path, "lifetime",
				    "expected at least 3 intervals and 3 qp_intervals, got %.0f ms",
				    (double)c->lifetime / 1e6);
	if (c->reopt != 0 && c->reopt < c->qp_interval)
		return ice_cfg_fail(
			err, path, "reopt",
			"expected 0 (never) or at least qp_interval (%.0f ms), got %.0f ms",
			(double)c->qp_interval / 1e6, (double)c->reopt / 1e6);
	return 0;
}
