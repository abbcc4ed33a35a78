// SPDX-License-Identifier: Apache-2.0
/*
 * agent_bpf: the host NIC programs as a source of flows (ebpf/ice_host_loader.h).
 * Without the loader (a build without clang/bpftool) every call reports
 * ENOTSUP and the agent runs as with --no-bpf.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent_internal.h"

#ifdef ICE_AGENT_BPF
#include "ice_host_loader.h"

struct agent_bpf {
	struct ice_host *h;
	int ifindex;
	bool attached;
	char pin_dir[128];
};

bool agent_bpf_available(void)
{
	return true;
}

struct agent_bpf *agent_bpf_open(const struct agent_cfg *cfg, bool attach)
{
	struct ice_host_opts o = {0};
	struct agent_bpf *b = calloc(1, sizeof(*b));
	int ret;

	if (b == NULL)
		return NULL;
	snprintf(b->pin_dir, sizeof(b->pin_dir), "%s", cfg->pin_dir);
	b->ifindex = cfg->ifindex;
	b->h = ice_host_open(cfg->pin_dir, &o);
	if (b->h == NULL) {
		ret = -errno;
		ice_err(AGENT_SUB, "bpf: cannot open the host programs (pins %s): %s", cfg->pin_dir,
			strerror(-ret));
		goto err_free;
	}
	if (attach) {
		ret = ice_host_attach(b->h, cfg->ifindex);
		if (ret < 0) {
			ice_err(AGENT_SUB, "bpf: cannot attach to %s: %s", cfg->nic,
				strerror(-ret));
			goto err_close;
		}
		b->attached = true;
		ice_info(AGENT_SUB, "bpf: attached to %s (%s), pins in %s", cfg->nic,
			 ice_host_uses_tcx(b->h) ? "tcx" : "clsact", cfg->pin_dir);
	}
	return b;
err_close:
	ice_host_close(b->h);
err_free:
	free(b);
	errno = -ret;
	return NULL;
}

struct flow_acc {
	struct agent_flow **flows;
	size_t *n, *cap;
	int err;
};

static int flow_cb(const struct ice_flow_key *k, const struct ice_flow_stats *s, void *arg)
{
	struct flow_acc *a = arg;
	struct agent_flow *f;

	if (k->ipv6)
		return 0; /* the QP table speaks IPv4 */
	if (*a->n == *a->cap) {
		size_t cap = *a->cap ? *a->cap * 2 : 256;
		struct agent_flow *p = realloc(*a->flows, cap * sizeof(*p));

		if (p == NULL) {
			a->err = -ENOMEM;
			return 1;
		}
		*a->flows = p;
		*a->cap = cap;
	}
	f = &(*a->flows)[(*a->n)++];
	*f = (struct agent_flow){
		.local_ip = k->local_ip,
		.remote_ip = k->remote_ip,
		.qpn = k->qpn,
		.dir = k->dir,
		.sport = s->udp_sport,
		.pkts = s->pkts,
		.bytes = s->bytes,
		.ce = s->ce,
		.cnp = s->cnp,
		.naks = s->naks + s->rnr_naks,
		.retx = s->psn_back,
	};
	return 0;
}

static void ev_cb(const struct ice_flow_event *ev, void *arg)
{
	(*(uint64_t *)arg)++;
}

int agent_bpf_read(struct agent_bpf *b, struct agent_flow **flows, size_t *n, size_t *cap,
		   uint64_t *new_flows)
{
	struct flow_acc a = {flows, n, cap, 0};
	int ret;

	ret = ice_host_poll_events(b->h, 0, ev_cb, new_flows);
	if (ret < 0)
		ice_dbg(AGENT_SUB, "bpf: ring buffer: %s", strerror(-ret));
	ret = ice_host_foreach_flow(b->h, flow_cb, &a);
	return ret < 0 ? ret : a.err;
}

void agent_bpf_close(struct agent_bpf *b, bool unpin)
{
	if (b == NULL)
		return;
	if (b->attached) {
		int ret = ice_host_detach(b->h, b->ifindex);

		if (ret < 0)
			ice_warn(AGENT_SUB, "bpf: detach: %s", strerror(-ret));
	}
	ice_host_close(b->h);
	if (unpin)
		ice_host_unpin(b->pin_dir);
	free(b);
}

#else /* !ICE_AGENT_BPF */

bool agent_bpf_available(void)
{
	return false;
}

struct agent_bpf *agent_bpf_open(const struct agent_cfg *cfg, bool attach)
{
	errno = ENOTSUP;
	return NULL;
}

int agent_bpf_read(struct agent_bpf *b, struct agent_flow **flows, size_t *n, size_t *cap,
		   uint64_t *new_flows)
{
	return -ENOTSUP;
}

void agent_bpf_close(struct agent_bpf *b, bool unpin)
{
}

#endif
