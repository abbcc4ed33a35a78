// SPDX-License-Identifier: Apache-2.0
/*
 * test_agent_nic: the NIC backend (host_agent/agent_nic*.c) on fixture trees
 * of both mlx5 drivers (nic_fixture.h), with the replay of recorded
 * ethtool and RDMA netlink replies; parameter writes refused by a double of
 * the write call. No RDMA NIC here: the kernel's ioctl is only run against
 * an interface without ethtool statistics (lo) and netlink not at all.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <linux/netlink.h>

#include "agent_internal.h"
#include "agent_nic.h"
#include "ice_time.h"
#include "nic_fixture.h"

struct env {
	struct nic_fixture f;
	struct agent_cfg cfg;
	struct agent_nic_io io;
};

static struct env *env_new(enum nic_fixture_driver drv, unsigned nports, unsigned nqps)
{
	struct env *e = calloc(1, sizeof(*e));
	char root[64];

	/* named after this process: the group teardown removes what a failed
	 * test left */
	snprintf(root, sizeof(root), "/tmp/ice-nic-test-%d-XXXXXX", (int)getpid());
	assert_non_null(e);
	assert_non_null(mkdtemp(root));
	assert_int_equal(nic_fixture_make(&e->f, root, drv, nports, nqps), 0);
	agent_cfg_defaults(&e->cfg);
	snprintf(e->cfg.nic, sizeof(e->cfg.nic), "%s", e->f.ifname);
	snprintf(e->cfg.backend, sizeof(e->cfg.backend), "mlx5");
	snprintf(e->cfg.sysroot, sizeof(e->cfg.sysroot), "%s", root);
	snprintf(e->cfg.nic_io, sizeof(e->cfg.nic_io), "replay");
	assert_int_equal(agent_nic_io_replay(&e->io, root), 0);
	return e;
}

static void env_free(struct env *e)
{
	agent_nic_io_fini(&e->io);
	nic_fixture_remove(&e->f);
	free(e);
}

static char rel_buf[512];

static const char *hw(const struct env *e, unsigned port, const char *name)
{
	snprintf(rel_buf, sizeof(rel_buf), "sys/class/infiniband/%s/ports/%u/hw_counters/%s",
		 e->f.dev, port, name);
	return rel_buf;
}

static const char *dbg(const struct env *e, const char *name)
{
	snprintf(rel_buf, sizeof(rel_buf), "sys/kernel/debug/mlx5/%s/cc_params/%s", e->f.pci, name);
	return rel_buf;
}

static const char *ecn(const struct env *e, const char *rel)
{
	snprintf(rel_buf, sizeof(rel_buf), "sys/class/net/%s/ecn/%s", e->f.ifname, rel);
	return rel_buf;
}

/* counters, summary, QPs and their bound counters, from both drivers' trees */
static void test_read_upstream(void **state)
{
	struct env *e = env_new(NIC_FIXTURE_UPSTREAM, 2, 130);
	struct agent_nic *n = agent_nic_new(&e->cfg, &e->io);
	const struct agent_nic_qp *q;
	struct agent_ctr c;
	size_t nq;

	(void)state;
	assert_non_null(n);
	assert_int_equal(agent_nic_cc_iface(n), AGENT_NIC_CC_DEBUGFS);
	/* 2 ports x (21 counters + 29 hw_counters), 80 + 10 ethtool (prio, *_phy, oob) */
	assert_int_equal(agent_nic_ncounters(n), 2 * (21 + 29) + 80 + 5);
	assert_int_equal(agent_nic_nunsupported(n), 0);
	assert_int_equal(nic_fixture_tick(&e->f, 10), 0);
	assert_int_equal(agent_nic_read(n), 0);
	agent_nic_summary(n, &c);
	/* port_xmit_data is counter 0 of counters/: words, x 4 */
	assert_int_equal(c.tx_bytes, 4 * (nic_fixture_value(1, 0, 1) + nic_fixture_value(2, 0, 1)));
	/* np_cnp_sent is hw_counters[3], rp_cnp_handled [22] */
	assert_int_equal(c.cnp_tx, nic_fixture_value(1, 103, 1) + nic_fixture_value(2, 103, 1));
	assert_int_equal(c.cnp_rx, nic_fixture_value(1, 122, 1) + nic_fixture_value(2, 122, 1));
	q = agent_nic_qps(n, &nq);
	assert_int_equal(nq, 131); /* and QP1 */
	for (size_t i = 0; i < nq; i++) {
		unsigned j = q[i].lqpn - NIC_FIXTURE_QPN0;

		if (q[i].lqpn == 1) {
			assert_false(q[i].has_ctr);
			continue;
		}
		assert_true(q[i].has_ctr);
		assert_int_equal(q[i].type, 2);
		assert_int_equal(q[i].rqpn, 0x9000 + j);
		assert_int_equal(q[i].pid, 4242);
		/* every counter the records use, by its place in the fixture's
		 * list (rx_write_requests, rx_read_requests, out_of_sequence, ...) */
		assert_int_equal(q[i].out_of_sequence, nic_fixture_qp_value(j, 2, j < 10 ? 1 : 0));
		assert_int_equal(q[i].packet_seq_err, nic_fixture_qp_value(j, 3, j < 10 ? 1 : 0));
		assert_int_equal(q[i].local_ack_timeout_err,
				 nic_fixture_qp_value(j, 4, j < 10 ? 1 : 0));
		assert_int_equal(q[i].rnr_nak_retry_err,
				 nic_fixture_qp_value(j, 5, j < 10 ? 1 : 0));
		assert_int_equal(q[i].cc_rx_ce, nic_fixture_qp_value(j, 6, j < 10 ? 1 : 0));
		assert_int_equal(q[i].cc_rx_cnp, nic_fixture_qp_value(j, 7, j < 10 ? 1 : 0));
		assert_int_equal(q[i].cc_tx_cnp, nic_fixture_qp_value(j, 8, j < 10 ? 1 : 0));
	}
	agent_nic_free(n);
	env_free(e);
}

/* the QP table is sorted by lqpn for the counters' lookup, whatever the
 * order of the dump: the kernel's (QP1 of each port last), reversed, shuffled */
static void test_stat_qp_order(void **state)
{
	enum { N = 300 };
	static struct agent_nic_qp qps[N];
	uint32_t seed = 1;

	(void)state;
	for (int order = 0; order < 4; order++) {
		uint64_t sum = 0, want = 0;

		for (size_t i = 0; i < N; i++) {
			qps[i] = (struct agent_nic_qp){.lqpn = (uint32_t)(0x100 + i)};
			if (order == 1 && i >= N - 8)
				qps[i].lqpn = 1; /* GSI of 8 ports */
			if (order == 2)
				qps[i].lqpn = (uint32_t)(0x100 + N - i);
			want += qps[i].lqpn;
		}
		for (size_t i = N - 1; order == 3 && i > 0; i--) {
			struct agent_nic_qp t = qps[i];
			size_t j;

			seed = seed * 1103515245u + 12345u;
			j = (seed >> 8) % (i + 1);
			qps[i] = qps[j];
			qps[j] = t;
		}
		assert_int_equal(agent_nic_nl_stat_qp(NULL, 0, qps, N), 0);
		for (size_t i = 0; i < N; i++) {
			sum += qps[i].lqpn;
			if (i > 0)
				assert_true(qps[i - 1].lqpn <= qps[i].lqpn);
		}
		assert_int_equal(sum, want);
	}
}

/* only what changed is rendered; everything on a full render */
static void test_render_changed(void **state)
{
	struct env *e = env_new(NIC_FIXTURE_UPSTREAM, 1, 4);
	struct agent_nic *n = agent_nic_new(&e->cfg, &e->io);
	struct agent_buf b = {0};
	size_t all;

	(void)state;
	assert_non_null(n);
	all = agent_nic_render(n, "k", 100, &b);
	assert_int_equal(all, agent_nic_ncounters(n));
	assert_int_equal(agent_nic_read(n), 0);
	assert_int_equal(agent_nic_render(n, "k", 100, &b), 0);
	assert_int_equal(nic_fixture_put(&e->f, hw(e, 1, "np_cnp_sent"), "99999999\n"), 0);
	assert_int_equal(agent_nic_read(n), 0);
	assert_int_equal(agent_nic_render(n, "k", 100, &b), 1);
	assert_non_null(memmem(b.p, b.len, "p1.hw.np_cnp_sent", 17));
	/* a full render every 4th: renders 3 (index 3 % 4 != 0), then 4 */
	assert_int_equal(agent_nic_render(n, "k", 4, &b), 0);
	assert_int_equal(agent_nic_render(n, "k", 4, &b), all);
	assert_false(b.failed);
	free(b.p);
	agent_nic_free(n);
	env_free(e);
}

/* a missing, a garbage and an unreadable counter: each unsupported once,
 * the others go on */
static void test_bad_counters(void **state)
{
	struct env *e = env_new(NIC_FIXTURE_UPSTREAM, 1, 2);
	struct agent_nic *n;
	struct agent_ctr c;
	char path[1024];

	(void)state;
	snprintf(path, sizeof(path), "%s/%s", e->f.root, hw(e, 1, "rp_cnp_handled"));
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/%s", e->f.root, hw(e, 1, "out_of_sequence"));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0755), 0); /* read(2) says EISDIR */
	n = agent_nic_new(&e->cfg, &e->io);
	assert_non_null(n);
	assert_int_equal(agent_nic_nunsupported(n), 2);
	/* garbage from another driver or firmware, found while running */
	assert_int_equal(nic_fixture_put(&e->f, hw(e, 1, "np_cnp_sent"), "N/A\n"), 0);
	assert_int_equal(agent_nic_read(n), 0);
	assert_int_equal(agent_nic_read(n), 0);
	assert_int_equal(agent_nic_nunsupported(n), 3);
	agent_nic_summary(n, &c);
	assert_int_equal(c.cnp_tx, 0);
	assert_int_equal(c.cnp_rx, 0);
	assert_int_equal(c.ce, nic_fixture_value(1, 104, 0)); /* the rest goes on */
	assert_int_equal(c.tx_bytes, 4 * nic_fixture_value(1, 0, 0));
	agent_nic_free(n);
	env_free(e);
}

static struct ice_dcqcn_params profile(void)
{
	struct ice_dcqcn_params p;

	ice_dcqcn_params_default(&p);
	p.rp_max_rate = 25000;
	p.rp_ai_rate = 20;
	p.rp_gd = 9;
	p.rp_min_rate = 100;
	p.np_min_time_between_cnps = 8;
	return p;
}

/* upstream: debugfs names, device-wide; restored on free */
static void test_dcqcn_debugfs(void **state)
{
	struct env *e = env_new(NIC_FIXTURE_UPSTREAM, 1, 1);
	struct agent_nic *n = agent_nic_new(&e->cfg, &e->io);
	struct ice_dcqcn_params p = profile(), cur;
	struct ice_cfg_err err = {0};

	(void)state;
	assert_non_null(n);
	assert_false(agent_nic_dcqcn_current(n, 3, &cur));
	assert_int_equal(agent_nic_dcqcn_apply(n, &p, &err), 0);
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "rp_max_rate")), 25000);
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "rp_gd")), 9);
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "np_min_time_between_cnps")), 8);
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "np_cnp_dscp")), 48); /* not ours */
	assert_true(agent_nic_dcqcn_current(n, 3, &cur));
	assert_int_equal(cur.rp_ai_rate, 20);
	/* out of the safe range: refused before any write */
	p.rp_gd = 99;
	assert_int_equal(agent_nic_dcqcn_apply(n, &p, &err), -EINVAL);
	assert_string_equal(err.key, "rp_gd");
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "rp_gd")), 9);
	agent_nic_free(n); /* the NIC's own values back */
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "rp_max_rate")), 0);
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "rp_gd")), 11);
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "rp_ai_rate")), 5);
	env_free(e);
}

/* out-of-tree: other names, enable per priority; restore on demand */
static void test_dcqcn_ecn(void **state)
{
	struct env *e = env_new(NIC_FIXTURE_OOT, 1, 1);
	struct agent_nic *n;
	struct ice_dcqcn_params p = profile();
	struct ice_cfg_err err = {0};

	(void)state;
	e->cfg.dcqcn_prio = 5;
	n = agent_nic_new(&e->cfg, &e->io);
	assert_non_null(n);
	assert_int_equal(agent_nic_cc_iface(n), AGENT_NIC_CC_ECN);
	assert_int_equal(agent_nic_dcqcn_apply(n, &p, &err), 0);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/rpg_max_rate")), 25000);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/rpg_gd")), 9);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/rpg_min_rate")), 100);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_np/min_time_between_cnps")), 8);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/enable/5")), 1);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_np/enable/5")), 1);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/enable/3")), 0);
	assert_int_equal(agent_nic_dcqcn_restore(n), 0);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/rpg_max_rate")), 0);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/enable/5")), 0);
	agent_nic_free(n);
	env_free(e);
}

/* a plan's profiles per priority: each priority's ecn/ files take its
 * profile (enable/<prio>, and a parameter a driver keeps per priority),
 * device-wide files the wide one; the other priorities keep the NIC's own,
 * and a priority the next plan drops goes back to them */
static void test_dcqcn_ecn_prios(void **state)
{
	struct env *e = env_new(NIC_FIXTURE_OOT, 1, 1);
	struct agent_dcqcn_prios set;
	struct ice_cfg_err err = {0};
	struct ice_dcqcn_params cur;
	struct agent_nic *n;
	char path[1024], rel[256];

	(void)state;
	/* rpg_ai_rate as a directory of priorities, as enable/ is */
	snprintf(path, sizeof(path), "%s/%s", e->f.root, ecn(e, "roce_rp/rpg_ai_rate"));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0755), 0);
	for (unsigned q = 0; q < 8; q++) {
		snprintf(rel, sizeof(rel), "roce_rp/rpg_ai_rate/%u", q);
		assert_int_equal(nic_fixture_put(&e->f, ecn(e, rel), "5\n"), 0);
	}
	n = agent_nic_new(&e->cfg, &e->io);
	assert_non_null(n);
	memset(&set, 0, sizeof(set));
	set.has[3] = set.has[5] = set.has_wide = true;
	set.prio[3] = profile();
	set.prio[5] = profile();
	set.prio[5].rp_ai_rate = 1;
	set.prio[5].rp_max_rate = 10000;
	set.wide = set.prio[3];
	set.wide_prio = 3;
	assert_int_equal(agent_nic_dcqcn_apply_prios(n, &set, &err), 0);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/enable/3")), 1);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_np/enable/5")), 1);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/enable/4")), 0);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/rpg_ai_rate/3")), 20);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/rpg_ai_rate/5")), 1);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/rpg_ai_rate/0")), 5);
	/* device-wide: the wide profile (priority 3's) */
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/rpg_max_rate")), 25000);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/rpg_gd")), 9);
	assert_true(agent_nic_dcqcn_current(n, 5, &cur));
	assert_int_equal(cur.rp_ai_rate, 1);
	assert_int_equal(cur.rp_max_rate, 25000);
	/* a profile out of range on one priority: nothing written */
	set.prio[5].rp_gd = 99;
	set.prio[3].rp_ai_rate = 7;
	assert_int_equal(agent_nic_dcqcn_apply_prios(n, &set, &err), -EINVAL);
	assert_string_equal(err.key, "rp_gd");
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/rpg_ai_rate/3")), 20);
	/* the next plan only uses priority 5: priority 3 back to the NIC's */
	set.prio[5].rp_gd = 9;
	set.has[3] = false;
	set.wide = set.prio[5];
	assert_int_equal(agent_nic_dcqcn_apply_prios(n, &set, &err), 0);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/enable/3")), 0);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/rpg_ai_rate/3")), 5);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/enable/5")), 1);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/rpg_max_rate")), 10000);
	agent_nic_free(n); /* the NIC's own values back */
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/enable/5")), 0);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/rpg_ai_rate/5")), 5);
	assert_int_equal(nic_fixture_get(&e->f, ecn(e, "roce_rp/rpg_max_rate")), 0);
	env_free(e);
}

/* upstream debugfs holds one set for the device: the wide profile */
static void test_dcqcn_debugfs_prios(void **state)
{
	struct env *e = env_new(NIC_FIXTURE_UPSTREAM, 1, 1);
	struct agent_nic *n = agent_nic_new(&e->cfg, &e->io);
	struct agent_dcqcn_prios set;
	struct ice_cfg_err err = {0};

	(void)state;
	assert_non_null(n);
	memset(&set, 0, sizeof(set));
	set.has[3] = set.has[5] = set.has_wide = true;
	set.prio[3] = profile();
	set.prio[5] = profile();
	set.prio[5].rp_ai_rate = 1;
	set.wide = set.prio[5];
	set.wide_prio = 5;
	assert_int_equal(agent_nic_dcqcn_apply_prios(n, &set, &err), 0);
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "rp_ai_rate")), 1);
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "rp_max_rate")), 25000);
	agent_nic_free(n);
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "rp_ai_rate")), 5);
	env_free(e);
}

/* a value the NIC refuses: logged, the profile's earlier writes put back */
static const char *refuse_name;
static int refuse_write(void *ctx, const char *path, uint32_t v)
{
	size_t l = strlen(path), r = strlen(refuse_name);

	if (l >= r && strcmp(path + l - r, refuse_name) == 0)
		return -EINVAL;
	return agent_nic_io_kernel.param_write(ctx, path, v);
}

static void test_dcqcn_refused(void **state)
{
	struct env *e = env_new(NIC_FIXTURE_UPSTREAM, 1, 1);
	struct agent_nic *n;
	struct ice_dcqcn_params p = profile(), cur;
	struct ice_cfg_err err = {0};

	(void)state;
	e->io.param_write = refuse_write;
	refuse_name = "/rp_gd"; /* after rp_max_rate, rp_ai_rate, rp_min_rate in the table */
	n = agent_nic_new(&e->cfg, &e->io);
	assert_non_null(n);
	assert_int_equal(agent_nic_dcqcn_apply(n, &p, &err), -EINVAL);
	assert_string_equal(err.key, "rp_gd");
	assert_non_null(strstr(err.msg, "refused 9"));
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "rp_max_rate")), 0);
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "rp_ai_rate")), 5);
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "rp_min_rate")), 1);
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "rp_gd")), 11);
	assert_false(agent_nic_dcqcn_current(n, 3, &cur));
	/* a profile without the refused value goes through */
	p.rp_gd = 11;
	assert_int_equal(agent_nic_dcqcn_apply(n, &p, &err), 0);
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "rp_max_rate")), 25000);
	agent_nic_free(n);
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "rp_max_rate")), 0);
	env_free(e);
}

/* a parameter file missing or garbage: unsupported, the rest applied */
static void test_dcqcn_missing(void **state)
{
	struct env *e = env_new(NIC_FIXTURE_UPSTREAM, 1, 1);
	struct agent_nic *n;
	struct ice_dcqcn_params p = profile();
	struct ice_cfg_err err = {0};
	char path[1024];

	(void)state;
	snprintf(path, sizeof(path), "%s/%s", e->f.root, dbg(e, "rp_ai_rate"));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(nic_fixture_put(&e->f, dbg(e, "rp_gd"), "eleven\n"), 0);
	n = agent_nic_new(&e->cfg, &e->io);
	assert_non_null(n);
	assert_int_equal(agent_nic_dcqcn_apply(n, &p, &err), 0);
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "rp_max_rate")), 25000);
	assert_int_equal(nic_fixture_get(&e->f, dbg(e, "rp_gd")), -1); /* left alone */
	agent_nic_free(n);
	env_free(e);
}

/* neither interface: DCQCN unsupported, telemetry still runs */
static void test_dcqcn_none(void **state)
{
	struct env *e = env_new(NIC_FIXTURE_UPSTREAM, 1, 1);
	struct ice_dcqcn_params p = profile();
	struct ice_cfg_err err = {0};
	struct agent_nic *n;
	char cmd[1024];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/sys/kernel/debug'", e->f.root);
	assert_int_equal(system(cmd), 0);
	n = agent_nic_new(&e->cfg, &e->io);
	assert_non_null(n);
	assert_int_equal(agent_nic_cc_iface(n), AGENT_NIC_CC_NONE);
	assert_int_equal(agent_nic_dcqcn_apply(n, &p, &err), -EOPNOTSUPP);
	assert_int_equal(agent_nic_read(n), 0);
	/* asked for by name and absent: refused at start */
	agent_nic_free(n);
	snprintf(e->cfg.dcqcn_iface, sizeof(e->cfg.dcqcn_iface), "debugfs");
	assert_null(agent_nic_new(&e->cfg, &e->io));
	env_free(e);
}

/* an error reply: the kernel refused (EPERM) */
static const struct {
	struct nlmsghdr h;
	struct nlmsgerr e;
} nl_eperm = {.h = {.nlmsg_len = sizeof(nl_eperm), .nlmsg_type = NLMSG_ERROR},
	      .e = {.error = -EPERM}};

/* the codec on bad replies: truncated, an error reply, a nest too long */
static void test_netlink_bad(void **state)
{
	struct env *e = env_new(NIC_FIXTURE_UPSTREAM, 1, 70);
	struct agent_nic_qp *qps = NULL;
	size_t n = 0, cap = 0, len;
	uint8_t *buf, req[64];

	(void)state;
	len = agent_nic_nl_request(req, sizeof(req), AGENT_NIC_REQ_RES_QP, 3, 1);
	assert_int_equal(e->io.rdma_dump(e->io.ctx, AGENT_NIC_REQ_RES_QP, req, len, &buf, &len), 0);
	assert_int_equal(agent_nic_nl_res_qp(buf, len, &qps, &n, &cap), 0);
	assert_int_equal(n, 71);
	assert_int_equal(agent_nic_nl_res_qp(buf, len - 9, &qps, &n, &cap), -EBADMSG);
	/* a nest claiming more than its message holds */
	((struct nlattr *)(buf + NLMSG_HDRLEN + 8 + 12))->nla_len = 0xfff0;
	assert_int_equal(agent_nic_nl_res_qp(buf, len, &qps, &n, &cap), -EBADMSG);
	free(buf);
	assert_int_equal(
		agent_nic_nl_res_qp((const uint8_t *)&nl_eperm, sizeof(nl_eperm), &qps, &n, &cap),
		-EPERM);
	free(qps);
	env_free(e);
}

/* a copy of buf one byte into a fresh allocation, at an odd address:
 * free what it returns, parse from it + 1 */
static uint8_t *odd_copy(const void *buf, size_t len)
{
	uint8_t *o = malloc(len + 1);

	assert_non_null(o);
	memcpy(o + 1, buf, len);
	return o;
}

/* the codec reads a reply (and writes a request) wherever it lies: at an
 * odd address each gives what it gives aligned */
static void test_netlink_unaligned(void **state)
{
	struct env *e = env_new(NIC_FIXTURE_UPSTREAM, 1, 20);
	struct agent_nic_qp *qps = NULL, *oqps = NULL, *sq;
	size_t n = 0, cap = 0, on = 0, ocap = 0, len, rl;
	uint8_t *buf, *o, req[64], oreq[65], en = 0, oen = 0;
	uint32_t idx = 0, oidx = 1;
	unsigned bound = 0;

	(void)state;
	rl = agent_nic_nl_request(req, sizeof(req), AGENT_NIC_REQ_DEV, 0, 1);
	assert_int_equal(e->io.rdma_dump(e->io.ctx, AGENT_NIC_REQ_DEV, req, rl, &buf, &len), 0);
	o = odd_copy(buf, len);
	assert_int_equal(agent_nic_nl_dev_index(buf, len, e->f.dev, &idx), 0);
	assert_int_equal(agent_nic_nl_dev_index(o + 1, len, e->f.dev, &oidx), 0);
	assert_int_equal(oidx, idx);
	free(o);
	free(buf);

	rl = agent_nic_nl_request(req, sizeof(req), AGENT_NIC_REQ_RES_QP, idx, 1);
	assert_int_equal(
		agent_nic_nl_request(oreq + 1, sizeof(oreq) - 1, AGENT_NIC_REQ_RES_QP, idx, 1), rl);
	assert_memory_equal(oreq + 1, req, rl);
	assert_int_equal(e->io.rdma_dump(e->io.ctx, AGENT_NIC_REQ_RES_QP, oreq + 1, rl, &buf, &len),
			 0);
	o = odd_copy(buf, len);
	assert_int_equal(agent_nic_nl_res_qp(buf, len, &qps, &n, &cap), 0);
	assert_int_equal(agent_nic_nl_res_qp(o + 1, len, &oqps, &on, &ocap), 0);
	assert_int_equal(n, 21); /* and QP1 */
	assert_int_equal(on, n);
	assert_memory_equal(oqps, qps, n * sizeof(*qps));
	free(o);
	free(buf);

	rl = agent_nic_nl_request(req, sizeof(req), AGENT_NIC_REQ_STAT_QP, idx, 1);
	assert_int_equal(e->io.rdma_dump(e->io.ctx, AGENT_NIC_REQ_STAT_QP, req, rl, &buf, &len), 0);
	o = odd_copy(buf, len);
	assert_int_equal(agent_nic_nl_stat_qp(buf, len, qps, n), 0);
	assert_int_equal(agent_nic_nl_stat_qp(o + 1, len, oqps, n), 0);
	assert_memory_equal(oqps, qps, n * sizeof(*qps));
	for (sq = qps; sq < qps + n; sq++)
		bound += sq->has_ctr;
	assert_int_equal(bound, 20);
	free(o);
	free(buf);

	assert_int_equal(e->io.dcb_get(e->io.ctx, e->f.ifname, &buf, &len), 0);
	o = odd_copy(buf, len);
	assert_int_equal(agent_nic_dcb_pfc(buf, len, &en), 0);
	assert_int_equal(agent_nic_dcb_pfc(o + 1, len, &oen), 0);
	assert_int_equal(en, 0x08);
	assert_int_equal(oen, en);
	free(o);
	free(buf);

	o = odd_copy(&nl_eperm, sizeof(nl_eperm));
	assert_int_equal(agent_nic_nl_res_qp(o + 1, sizeof(nl_eperm), &oqps, &on, &ocap), -EPERM);
	assert_int_equal(agent_nic_dcb_pfc(o + 1, sizeof(nl_eperm), &oen), -EPERM);
	free(o);
	free(qps);
	free(oqps);
	env_free(e);
}

/* netlink answering nothing (no replay files): QPs unsupported once, the
 * counters go on */
static void test_netlink_absent(void **state)
{
	struct env *e = env_new(NIC_FIXTURE_UPSTREAM, 1, 3);
	struct agent_nic *n;
	struct agent_ctr c;
	size_t nq;
	char cmd[1024];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/ice-replay/rdma'", e->f.root);
	assert_int_equal(system(cmd), 0);
	n = agent_nic_new(&e->cfg, &e->io);
	assert_non_null(n);
	assert_int_equal(agent_nic_read(n), 0);
	agent_nic_qps(n, &nq);
	assert_int_equal(nq, 0);
	assert_int_equal(agent_nic_nunsupported(n), 1);
	agent_nic_summary(n, &c);
	assert_true(c.tx_bytes > 0);
	agent_nic_free(n);
	env_free(e);
}

/* PFC: the lossless priorities from DCB, pause rates, a storm when a
 * priority is paused for half an interval or more, its end */
static void test_pfc(void **state)
{
	struct env *e = env_new(NIC_FIXTURE_UPSTREAM, 1, 1);
	struct agent_nic *n;
	struct agent_pfc p;
	uint64_t t0;

	(void)state;
	e->f.rx_pause_us[3] = 1000;
	assert_int_equal(nic_fixture_tick(&e->f, 0), 0);
	t0 = ice_now_ns();
	n = agent_nic_new(&e->cfg, &e->io);
	assert_non_null(n);
	agent_nic_pfc(n, &p);
	assert_true(p.known);
	assert_int_equal(p.lossless, 0x08);
	assert_int_equal(p.seen, 0xff);
	usleep(100000);
	/* paused for twice as long as the interval so far (however long the
	 * busy machine makes it): all of it, whenever the next read comes */
	e->f.rx_pause_us[3] = 1000 + 2 * (ice_now_ns() - t0) / 1000;
	assert_int_equal(nic_fixture_tick(&e->f, 0), 0);
	assert_int_equal(agent_nic_read(n), 0);
	agent_nic_pfc(n, &p);
	assert_true(p.has_rate);
	assert_int_equal(p.storm, 0x08);
	assert_true(p.rx_paused[3] >= AGENT_PFC_STORM && p.rx_paused[3] <= 1.0);
	assert_true(p.rx_pause[3] > 0);	  /* frames per second */
	assert_true(p.rx_paused[0] == 0); /* the pattern writes 0 for lossy priorities */
	usleep(100000);
	assert_int_equal(nic_fixture_tick(&e->f, 0), 0); /* not paused any more */
	assert_int_equal(agent_nic_read(n), 0);
	agent_nic_pfc(n, &p);
	assert_int_equal(p.storm, 0);
	agent_nic_free(n);
	env_free(e);
}

/* the DCB reply missing or garbage: the lossless set unknown, said once */
static void test_pfc_bad(void **state)
{
	struct env *e = env_new(NIC_FIXTURE_UPSTREAM, 1, 1);
	struct agent_nic *n;
	struct agent_pfc p;
	char rel[64];

	(void)state;
	snprintf(rel, sizeof(rel), "ice-replay/dcb/%s", e->f.ifname);
	assert_int_equal(nic_fixture_put(&e->f, rel, "garbage"), 0);
	n = agent_nic_new(&e->cfg, &e->io);
	assert_non_null(n);
	agent_nic_pfc(n, &p);
	assert_false(p.known);
	assert_int_equal(agent_nic_nunsupported(n), 1);
	agent_nic_free(n);
	env_free(e);
}

/* the kernel's ethtool ioctl, against lo (no ethtool statistics): the
 * ethtool part unsupported, the backend still opens */
static void test_ethtool_kernel_lo(void **state)
{
	char *names = NULL;
	size_t n = 0;
	int ret = agent_nic_io_kernel.eth_names(NULL, "lo", &names, &n);

	(void)state;
	assert_true(ret == -EOPNOTSUPP || (ret == 0 && n == 0));
	free(names);
	assert_int_equal(agent_nic_io_kernel.eth_names(NULL, "ice-no-such-if0", &names, &n),
			 -ENODEV);
}

static int group_teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf /tmp/ice-nic-test-%d-*", (int)getpid());
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_upstream),
		cmocka_unit_test(test_stat_qp_order),
		cmocka_unit_test(test_render_changed),
		cmocka_unit_test(test_bad_counters),
		cmocka_unit_test(test_dcqcn_debugfs),
		cmocka_unit_test(test_dcqcn_ecn),
		cmocka_unit_test(test_dcqcn_refused),
		cmocka_unit_test(test_dcqcn_ecn_prios),
		cmocka_unit_test(test_dcqcn_debugfs_prios),
		cmocka_unit_test(test_dcqcn_missing),
		cmocka_unit_test(test_dcqcn_none),
		cmocka_unit_test(test_netlink_bad),
		cmocka_unit_test(test_netlink_unaligned),
		cmocka_unit_test(test_netlink_absent),
		cmocka_unit_test(test_ethtool_kernel_lo),
		cmocka_unit_test(test_pfc),
		cmocka_unit_test(test_pfc_bad),
	};

	return cmocka_run_group_tests(tests, NULL, group_teardown);
}
