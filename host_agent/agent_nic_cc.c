// SPDX-License-Identifier: Apache-2.0
/*
 * agent_nic_cc: DCQCN on the NIC (agent_nic_cc.h).
 *
 * Upstream mlx5 (drivers/infiniband/hw/mlx5/cong.c) exposes the parameters
 * device-wide as debugfs files mlx5/<pci>/cc_params/<name> with the names
 * common/ice_dcqcn.h uses; it has no enable file there. NVIDIA's
 * out-of-tree driver exposes class/net/<if>/ecn/roce_rp/ and roce_np/ with
 * other names, enable/<prio> per priority; a parameter that is a directory
 * there is written per priority (<name>/<prio>), a file as it is, and a
 * params/ subdirectory (older releases) is looked in too.
 *
 * A plan's DCQCN is a profile per priority (agent_dcqcn_prios): a file of a
 * priority takes its priority's profile, a device-wide file the profile of
 * the most QPs; a priority the plan does not use keeps the NIC's own.
 *
 * A profile is written as a whole or not at all: each write is read back,
 * and the first one refused (or read back different) puts the values
 * already written back in reverse order.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_internal.h"
#include "agent_nic_cc.h"

#define OFF(f) offsetof(struct ice_dcqcn_params, f)

/* One file per row; a parameter may have two (enable: RP and NP). */
static const struct cc_map {
	const char *key;     /* common/ice_dcqcn.h name */
	size_t off;	     /* in struct ice_dcqcn_params */
	const char *debugfs; /* cc_params/<name>; NULL: not there */
	const char *ecn_dir; /* roce_rp / roce_np */
	const char *ecn;     /* its name there; NULL: not there */
} cc_map[] = {
	{"enable", OFF(enable), NULL, "roce_rp", "enable"},
	{"enable", OFF(enable), NULL, "roce_np", "enable"},
	{"rp_max_rate", OFF(rp_max_rate), "rp_max_rate", "roce_rp", "rpg_max_rate"},
	{"rp_ai_rate", OFF(rp_ai_rate), "rp_ai_rate", "roce_rp", "rpg_ai_rate"},
	{"rp_hai_rate", OFF(rp_hai_rate), "rp_hai_rate", "roce_rp", "rpg_hai_rate"},
	{"rp_time_reset", OFF(rp_time_reset), "rp_time_reset", "roce_rp", "rpg_time_reset"},
	{"rp_byte_reset", OFF(rp_byte_reset), "rp_byte_reset", "roce_rp", "rpg_byte_reset"},
	{"rp_threshold", OFF(rp_threshold), "rp_threshold", "roce_rp", "rpg_threshold"},
	{"rp_min_dec_fac", OFF(rp_min_dec_fac), "rp_min_dec_fac", "roce_rp", "rpg_min_dec_fac"},
	{"rp_min_rate", OFF(rp_min_rate), "rp_min_rate", "roce_rp", "rpg_min_rate"},
	{"rp_gd", OFF(rp_gd), "rp_gd", "roce_rp", "rpg_gd"},
	{"rp_rate_to_set_on_first_cnp", OFF(rp_rate_to_set_on_first_cnp),
	 "rp_rate_to_set_on_first_cnp", "roce_rp", "rate_to_set_on_first_cnp"},
	{"rp_clamp_tgt_rate", OFF(rp_clamp_tgt_rate), "rp_clamp_tgt_rate", "roce_rp",
	 "clamp_tgt_rate"},
	{"rp_dce_tcp_g", OFF(rp_dce_tcp_g), "rp_dce_tcp_g", "roce_rp", "dce_tcp_g"},
	{"rp_dce_tcp_rtt", OFF(rp_dce_tcp_rtt), "rp_dce_tcp_rtt", "roce_rp", "dce_tcp_rtt"},
	{"rp_rate_reduce_monitor_period", OFF(rp_rate_reduce_monitor_period),
	 "rp_rate_reduce_monitor_period", "roce_rp", "rate_reduce_monitor_period"},
	{"rp_initial_alpha_value", OFF(rp_initial_alpha_value), "rp_initial_alpha_value", "roce_rp",
	 "initial_alpha_value"},
	{"np_min_time_between_cnps", OFF(np_min_time_between_cnps), "np_min_time_between_cnps",
	 "roce_np", "min_time_between_cnps"},
};

#define CC_ROWS (sizeof(cc_map) / sizeof(cc_map[0]))

struct cc_file {
	char path[1024];
	bool ok;
	uint32_t saved, cur;
};

struct agent_nic_cc {
	enum agent_nic_cc_iface which;
	const struct agent_nic_io *io;
	uint32_t prio;		/* cfg->dcqcn_prio: a single profile's priority */
	bool per_prio[CC_ROWS]; /* a directory of priorities; else f[row][0] only */
	struct cc_file f[CC_ROWS][AGENT_PRIOS];
	uint64_t refused;
};

const char *agent_nic_cc_iface_name(enum agent_nic_cc_iface i)
{
	return i == AGENT_NIC_CC_DEBUGFS ? "debugfs cc_params"
	       : i == AGENT_NIC_CC_ECN	 ? "sysfs ecn (out-of-tree mlx5)"
					 : "none";
}

enum agent_nic_cc_iface agent_nic_cc_which(const struct agent_nic_cc *cc)
{
	return cc != NULL ? cc->which : AGENT_NIC_CC_NONE;
}

static bool is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* 0 and *v, or -errno / -EINVAL (not a decimal u32). */
static int read_u32(const char *path, uint32_t *v)
{
	char buf[32], *end;
	unsigned long long x;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r < 0)
		return -EIO;
	buf[r] = '\0';
	if (buf[0] < '0' || buf[0] > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(buf, &end, 10);
	while (*end == '\n' || *end == ' ')
		end++;
	if (errno != 0 || *end != '\0' || x > UINT32_MAX)
		return -EINVAL;
	*v = (uint32_t)x;
	return 0;
}

/* The PCI address of the RDMA device: cfg's, or its sysfs device link. */
static void pci_of(const struct agent_cfg *cfg, const char *root, const char *dev, char *buf,
		   size_t len)
{
	char link[512], target[512];
	ssize_t r;

	buf[0] = '\0';
	if (cfg->pci[0] != '\0') {
		snprintf(buf, len, "%s", cfg->pci);
		return;
	}
	snprintf(link, sizeof(link), "%s/sys/class/infiniband/%s/device", root, dev);
	r = readlink(link, target, sizeof(target) - 1);
	if (r <= 0)
		return;
	target[r] = '\0';
	snprintf(buf, len, "%s", basename(target));
}

/* Read one file's value as the NIC's own; false (logged, when say) when it
 * is missing or holds garbage. */
static bool open_file(struct cc_file *f, const char *key, bool say)
{
	int ret = read_u32(f->path, &f->saved);

	if (ret < 0) {
		if (say)
			ice_warn(AGENT_SUB, "DCQCN %s unsupported: %s %s; left alone", key, f->path,
				 ret == -EINVAL ? "does not hold a decimal number"
						: strerror(-ret));
		return false;
	}
	f->ok = true;
	f->cur = f->saved;
	return true;
}

static void resolve(struct agent_nic_cc *cc, const char *base)
{
	for (size_t i = 0; i < CC_ROWS; i++) {
		const struct cc_map *m = &cc_map[i];
		struct cc_file *f = cc->f[i];
		char p[700];

		if (cc->which == AGENT_NIC_CC_DEBUGFS) {
			if (m->debugfs == NULL) {
				if (strcmp(m->key, "enable") == 0 && i == 0)
					ice_info(AGENT_SUB,
						 "DCQCN: debugfs cc_params has no 'enable': "
						 "on/off stays the NIC's");
				continue;
			}
			snprintf(f->path, sizeof(f->path), "%.600s/%s", base, m->debugfs);
			(void)open_file(f, m->key, true);
			continue;
		}
		snprintf(p, sizeof(p), "%.600s/%s/%s", base, m->ecn_dir, m->ecn);
		if (is_dir(p)) { /* per priority: each of them */
			bool said = false;

			cc->per_prio[i] = true;
			for (unsigned q = 0; q < AGENT_PRIOS; q++) {
				snprintf(f[q].path, sizeof(f[q].path), "%s/%u", p, q);
				if (!open_file(&f[q], m->key, !said))
					said = true;
			}
			continue;
		}
		if (access(p, F_OK) == 0)
			snprintf(f->path, sizeof(f->path), "%s", p);
		else
			snprintf(f->path, sizeof(f->path), "%.600s/%s/params/%s", base, m->ecn_dir,
				 m->ecn);
		(void)open_file(f, m->key, true);
	}
}

struct agent_nic_cc *agent_nic_cc_new(const struct agent_cfg *cfg, const char *root,
				      const char *dev, const struct agent_nic_io *io)
{
	struct agent_nic_cc *cc = calloc(1, sizeof(*cc));
	char pci[128], dbg[512], ecn[512];
	const char *want = cfg->dcqcn_iface;

	if (cc == NULL)
		return NULL;
	cc->io = io;
	cc->prio = cfg->dcqcn_prio < AGENT_PRIOS ? cfg->dcqcn_prio : 3;
	pci_of(cfg, root, dev, pci, sizeof(pci));
	snprintf(dbg, sizeof(dbg), "%s/sys/kernel/debug/mlx5/%s/cc_params", root, pci);
	snprintf(ecn, sizeof(ecn), "%s/sys/class/net/%s/ecn", root, cfg->nic);
	if (strcmp(want, "none") == 0)
		cc->which = AGENT_NIC_CC_NONE;
	else if (strcmp(want, "debugfs") == 0 ||
		 (strcmp(want, "auto") == 0 && pci[0] != '\0' && is_dir(dbg)))
		cc->which = AGENT_NIC_CC_DEBUGFS;
	else if (strcmp(want, "ecn") == 0 || (strcmp(want, "auto") == 0 && is_dir(ecn)))
		cc->which = AGENT_NIC_CC_ECN;
	if (cc->which == AGENT_NIC_CC_DEBUGFS && !is_dir(dbg)) {
		ice_err(AGENT_SUB, "dcqcn_iface debugfs: no %s (debugfs mounted? pci '%s')", dbg,
			pci);
		free(cc);
		errno = ENOENT;
		return NULL;
	}
	if (cc->which == AGENT_NIC_CC_ECN && !is_dir(ecn)) {
		ice_err(AGENT_SUB, "dcqcn_iface ecn: no %s (out-of-tree mlx5 driver?)", ecn);
		free(cc);
		errno = ENOENT;
		return NULL;
	}
	if (cc->which == AGENT_NIC_CC_NONE && strcmp(want, "none") != 0)
		ice_warn(AGENT_SUB,
			 "DCQCN: neither %s nor %s: the NIC's parameters are left alone (plans' "
			 "profiles not applied)",
			 dbg, ecn);
	if (cc->which != AGENT_NIC_CC_NONE)
		resolve(cc, cc->which == AGENT_NIC_CC_DEBUGFS ? dbg : ecn);
	return cc;
}

static uint32_t want_of(const struct ice_dcqcn_params *p, size_t row)
{
	uint32_t v;

	memcpy(&v, (const char *)p + cc_map[row].off, sizeof(v));
	return v;
}

/* Write and read back; -errno, -EIO when the NIC kept another value. */
static int put(struct agent_nic_cc *cc, struct cc_file *f, uint32_t v)
{
	uint32_t back;
	int ret = cc->io->param_write(cc->io->ctx, f->path, v);

	if (ret == 0 && read_u32(f->path, &back) == 0 && back != v)
		ret = -EIO;
	return ret;
}

/* What set asks of file (row, q): a per-priority file its priority's
 * profile, a device-wide one the wide profile; the NIC's own without. */
static uint32_t want_in(const struct agent_nic_cc *cc, const struct agent_dcqcn_prios *set,
			size_t row, unsigned q)
{
	const struct cc_file *f = &cc->f[row][q];

	if (cc->per_prio[row])
		return set->has[q] ? want_of(&set->prio[q], row) : f->saved;
	return set->has_wide ? want_of(&set->wide, row) : f->saved;
}

int agent_nic_cc_apply_prios(struct agent_nic_cc *cc, const struct agent_dcqcn_prios *set,
			     struct ice_cfg_err *err)
{
	struct {
		uint16_t row, q;
	} done[CC_ROWS * AGENT_PRIOS];
	size_t nd = 0;
	int ret;

	if (cc == NULL || cc->which == AGENT_NIC_CC_NONE)
		return -EOPNOTSUPP;
	for (unsigned q = 0; q < AGENT_PRIOS; q++)
		if (set->has[q] && (ret = ice_dcqcn_params_check(&set->prio[q], err)) < 0)
			return ret;
	if (set->has_wide && (ret = ice_dcqcn_params_check(&set->wide, err)) < 0)
		return ret;
	for (size_t i = 0; i < CC_ROWS; i++) {
		for (unsigned q = 0; q < (cc->per_prio[i] ? AGENT_PRIOS : 1u); q++) {
			struct cc_file *f = &cc->f[i][q];
			uint32_t v = want_in(cc, set, i, q);

			if (!f->ok || f->cur == v)
				continue;
			ret = put(cc, f, v);
			if (ret < 0) {
				cc->refused++;
				ice_cfg_fail(
					err, f->path, cc_map[i].key, "the NIC refused %u (%s)", v,
					ret == -EIO ? "read back another value" : strerror(-ret));
				ice_warn(AGENT_SUB,
					 "DCQCN %s = %u refused by the NIC (%s: %s): profile not "
					 "applied, %zu value(s) put back",
					 cc_map[i].key, v, f->path,
					 ret == -EIO ? "read back" : strerror(-ret), nd);
				while (nd > 0) {
					struct cc_file *g =
						&cc->f[done[nd - 1].row][done[nd - 1].q];

					nd--;

					if (put(cc, g, g->cur) < 0)
						ice_err(AGENT_SUB,
							"DCQCN: cannot put %s back to %u", g->path,
							g->cur);
				}
				/* the refused file: whatever the NIC holds now */
				(void)read_u32(f->path, &f->cur);
				return ret;
			}
			done[nd].row = (uint16_t)i;
			done[nd++].q = (uint16_t)q;
		}
	}
	for (size_t k = 0; k < nd; k++)
		cc->f[done[k].row][done[k].q].cur = want_in(cc, set, done[k].row, done[k].q);
	if (nd > 0)
		ice_info(AGENT_SUB, "DCQCN profile applied through %s: %zu value(s) written",
			 agent_nic_cc_iface_name(cc->which), nd);
	return 0;
}

int agent_nic_cc_apply(struct agent_nic_cc *cc, const struct ice_dcqcn_params *p,
		       struct ice_cfg_err *err)
{
	struct agent_dcqcn_prios set = {.has_wide = true, .wide = *p};

	if (cc == NULL)
		return -EOPNOTSUPP;
	set.has[cc->prio] = true;
	set.prio[cc->prio] = *p;
	return agent_nic_cc_apply_prios(cc, &set, err);
}

int agent_nic_cc_restore(struct agent_nic_cc *cc)
{
	size_t n = 0;
	int first = 0;

	if (cc == NULL)
		return 0;
	for (size_t i = 0; i < CC_ROWS; i++) {
		for (unsigned q = 0; q < AGENT_PRIOS; q++) {
			struct cc_file *f = &cc->f[i][q];
			int ret;

			if (!f->ok || f->cur == f->saved)
				continue;
			ret = put(cc, f, f->saved);
			if (ret < 0) {
				ice_err(AGENT_SUB, "DCQCN: cannot restore %s to %u: %s", f->path,
					f->saved, strerror(-ret));
				if (first == 0)
					first = ret;
				continue;
			}
			f->cur = f->saved;
			n++;
		}
	}
	if (n > 0)
		ice_info(AGENT_SUB, "DCQCN: the NIC's own %zu value(s) restored", n);
	return first;
}

bool agent_nic_cc_current(const struct agent_nic_cc *cc, unsigned prio, struct ice_dcqcn_params *p)
{
	bool changed = false;

	ice_dcqcn_params_default(p);
	if (cc == NULL)
		return false;
	for (size_t i = 0; i < CC_ROWS; i++) {
		const struct cc_file *f =
			&cc->f[i][cc->per_prio[i] && prio < AGENT_PRIOS ? prio : 0];

		if (f->ok) {
			memcpy((char *)p + cc_map[i].off, &f->cur, sizeof(uint32_t));
			changed |= f->cur != f->saved;
		}
	}
	return changed;
}

void agent_nic_cc_free(struct agent_nic_cc *cc)
{
	if (cc == NULL)
		return;
	agent_nic_cc_restore(cc);
	free(cc);
}
