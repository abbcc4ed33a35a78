// SPDX-License-Identifier: Apache-2.0
/*
 * agent_caps: once started, the agent keeps only the capabilities its
 * backends use while it runs (docs/security.md, "Privilege"):
 *
 *   control block and events (always): none. The block is mapped and the
 *     socket bound at start-up; what they do later needs no privilege
 *     (kill(pid, 0) to reap a dead transport's slot reads EPERM as alive).
 *   BPF (without --no-bpf): CAP_BPF, to read the flow maps and the ring
 *     buffer through their fds on kernels that check it on every bpf(2)
 *     call (before 6.5, with unprivileged BPF off; CAP_SYS_ADMIN where the
 *     kernel predates CAP_BPF), and CAP_NET_ADMIN, to detach the programs
 *     on a clean exit.
 *   NIC backend (backend mlx5): CAP_NET_ADMIN, for RDMA netlink dumps that
 *     show every process's QPs; counters, ethtool statistics and the DCQCN
 *     files (root's) need none.
 *
 * The rest leaves every set (effective, permitted, inheritable, ambient)
 * and the bounding set, and no_new_privs is set, so nothing the agent could
 * be made to run gets them back. The agent stays uid 0: files root owns
 * (run_dir, the epoch file, the pins, /dev/shm/ice-ctrl-*) remain its own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "agent_internal.h"

static int kept_caps(const struct agent_cfg *cfg, cap_value_t *keep)
{
	int n = 0;

	if (!cfg->no_bpf) {
		keep[n++] = CAP_IS_SUPPORTED(CAP_BPF) ? CAP_BPF : CAP_SYS_ADMIN;
		keep[n++] = CAP_NET_ADMIN;
	} else if (strcmp(cfg->backend, "mlx5") == 0) {
		keep[n++] = CAP_NET_ADMIN;
	}
	return n;
}

static bool in(const cap_value_t *keep, int n, cap_value_t c)
{
	for (int i = 0; i < n; i++)
		if (keep[i] == c)
			return true;
	return false;
}

int agent_caps_drop(const struct agent_cfg *cfg)
{
	static const char *const cap_names[] = {"cap_bpf (or cap_sys_admin)", "cap_net_admin"};
	cap_value_t keep[2], have[2];
	int nkeep = kept_caps(cfg, keep), nhave = 0, ret = 0, nbound = 0;
	cap_t now = cap_get_proc(), want = NULL;
	cap_flag_value_t setpcap = CAP_CLEAR;
	char *txt = NULL;

	if (now == NULL)
		return -errno;
	/* keep only what we have: an agent started without some (non-root, a
	 * reduced bounding set) says so rather than failing */
	for (int i = 0; i < nkeep; i++) {
		cap_flag_value_t v = CAP_CLEAR;

		if (cap_get_flag(now, keep[i], CAP_PERMITTED, &v) == 0 && v == CAP_SET)
			have[nhave++] = keep[i];
		else
			ice_warn(AGENT_SUB,
				 "capability %s is not permitted to this process; the BPF source "
				 "may fail",
				 cap_names[i]);
	}
	/* the bounding set first: that takes CAP_SETPCAP, which goes next */
	if (cap_get_flag(now, CAP_SETPCAP, CAP_EFFECTIVE, &setpcap) == 0 && setpcap == CAP_SET) {
		for (cap_value_t c = 0; c < (cap_value_t)cap_max_bits(); c++)
			if (!in(have, nhave, c) && cap_get_bound(c) == 1 && cap_drop_bound(c) < 0)
				nbound++;
		if (nbound > 0)
			ice_warn(AGENT_SUB, "%d capabilities stay in the bounding set: %s", nbound,
				 strerror(errno));
	} else if (geteuid() == 0) {
		ice_warn(AGENT_SUB, "no CAP_SETPCAP: the bounding set stays as it is");
	}
	if (CAP_AMBIENT_SUPPORTED() && cap_reset_ambient() < 0)
		ice_warn(AGENT_SUB, "cannot clear the ambient capabilities: %s", strerror(errno));
	want = cap_init();
	if (want == NULL ||
	    (nhave > 0 && (cap_set_flag(want, CAP_PERMITTED, nhave, have, CAP_SET) < 0 ||
			   cap_set_flag(want, CAP_EFFECTIVE, nhave, have, CAP_SET) < 0)) ||
	    cap_set_proc(want) < 0) {
		ret = -errno;
		ice_err(AGENT_SUB, "cannot drop capabilities: %s", strerror(-ret));
		goto out;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		ice_warn(AGENT_SUB, "cannot set no_new_privs: %s", strerror(errno));
	cap_free(now);
	now = cap_get_proc();
	txt = now != NULL ? cap_to_text(now, NULL) : NULL;
	ice_info(AGENT_SUB, "capabilities kept: %s (%s)",
		 nhave == 0    ? "none"
		 : txt != NULL ? txt
			       : "?",
		 strcmp(cfg->backend, "mlx5") == 0 ? "control block, events and the NIC backend"
		 : cfg->no_bpf			   ? "control block and events"
						   : "control block, events and BPF");
out:
	cap_free(txt);
	cap_free(want);
	cap_free(now);
	return ret;
}
