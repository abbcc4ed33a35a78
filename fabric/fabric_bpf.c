// SPDX-License-Identifier: Apache-2.0
/*
 * fabric: the BPF switch model of ebpf/ on every switch port (egress queue,
 * ECN, drops, loss; with `ecmp: model` the hash model's next hops), a live
 * change of its hash seed, its counters (stats), and ECMP failover in the
 * model switches.
 */
#include "fabric_internal.h"

#include <errno.h>
#include <jansson.h>
#include <net/if.h>
#include <string.h>
#include <unistd.h>

#include "ice_log.h"
#include "ice_switch_loader.h"

/* ---- attaching it ------------------------------------------------------------ */

struct bpf_arg {
	const struct topo *t;
	const struct topo_node *n;
	const char *pin;
};

static int setup_switch_bpf(void *arg)
{
	const struct bpf_arg *a = arg;
	const struct topo *t = a->t;
	const struct topo_node *n = a->n;
	bool model = t->ecmp == TOPO_ECMP_MODEL;
	struct ice_sw *sw;
	int ret = 0;

	sw = ice_sw_open(a->pin, model ? ICE_SW_F_ECMP_MODEL : 0);
	if (sw == NULL) {
		ret = -errno;
		ice_err(FAB_SUB, "switch %s: cannot load the BPF port model: %s", n->name,
			strerror(-ret));
		return ret;
	}
	for (uint32_t i = 0; i < n->nports && ret == 0; i++) {
		const struct topo_port *p = &t->ports[n->ports[i]];
		const struct topo_link *l = &t->links[p->link];
		struct ice_port_cfg cfg = {
			.rate_bps = l->rate_bps,
			.buffer = l->buffer_bytes,
			.kmin = l->ecn.kmin_bytes,
			.kmax = l->ecn.kmax_bytes,
			.pmax = (uint32_t)(l->ecn.pmax * 1e6),
			.loss_ppm = l->loss_ppm,
		};
		int ifindex = (int)if_nametoindex(p->ifname);

		if (ifindex == 0) {
			ret = -ENODEV;
			break;
		}
		ret = ice_sw_attach(sw, ifindex);
		if (ret == 0)
			ret = ice_sw_port_config(sw, ifindex, &cfg);
	}
	if (ret == 0 && model) {
		ret = ice_sw_hash_set(sw, &n->hash);
		for (uint32_t i = 0; i < topo_nic_count(t) && ret == 0; i++) {
			const struct topo_port *d = topo_nic(t, i);
			struct ice_ecmp_member m[ICE_SW_MAX_MEMBERS];
			uint32_t nh[ICE_SW_MAX_MEMBERS];
			int k = topo_nexthops(t, n->id, d->id, nh, ICE_SW_MAX_MEMBERS);

			if (k < 2)
				continue; /* one way only: the kernel's route does it */
			if (k > ICE_SW_MAX_MEMBERS) {
				ice_err(FAB_SUB,
					"switch %s: %d equal-cost next hops to %s: the BPF model "
					"takes at most %d (use ecmp: kernel)",
					n->name, k, d->ifname, ICE_SW_MAX_MEMBERS);
				ret = -E2BIG;
				break;
			}
			for (int j = 0; j < k; j++) {
				const struct topo_port *e = &t->ports[nh[j]];

				m[j] = (struct ice_ecmp_member){
					.ifindex = if_nametoindex(e->ifname),
					.nh = t->ports[e->peer].addr.s_addr};
			}
			ret = ice_sw_ecmp_set(sw, d->addr, 32, m, k);
		}
	}
	if (ret < 0)
		ice_err(FAB_SUB, "switch %s: BPF setup failed: %s", n->name, strerror(-ret));
	ice_sw_close(sw); /* the tc attachments and pinned maps stay */
	return ret;
}

/* The switch ports' egress model (and the ECMP model), pinned under
 * FAB_PIN_DIR/ice<fabric>/<switch>/. */
int fab_bpf_setup(const struct topo *t)
{
	char path[512], ns[64];
	int ret = 0;

	for (uint32_t i = 0; i < t->nnodes && ret == 0; i++) {
		const struct topo_node *n = &t->nodes[i];
		struct bpf_arg ba = {.t = t, .n = n, .pin = path};

		if (n->kind != TOPO_SWITCH)
			continue;
		fab_ns_name(t, n, ns, sizeof(ns));
		fab_pin_path(t->name, n->name, path, sizeof(path));
		ret = fab_in_netns(ns, setup_switch_bpf, &ba);
	}
	return ret;
}

/* ---- a new hash seed --------------------------------------------------------- */

int fab_bpf_hash_seed(const struct topo *t, const struct topo_node *n, uint32_t seed, uint32_t *old)
{
	struct topo_hash_cfg hc;
	char pin[512];
	int ret;

	fab_pin_path(t->name, n->name, pin, sizeof(pin));
	ret = ice_sw_hash_get(pin, &hc);
	if (ret < 0)
		return ret;
	*old = hc.seed;
	hc.seed = seed;
	return ice_sw_hash_update(pin, &hc);
}

/* ---- its counters ------------------------------------------------------------ */

struct stats_arg {
	const struct topo *t;
	const struct topo_node *n;
	json_t *ports;
	FILE *out;
	bool json, new_peak;
};

static int switch_stats(void *arg)
{
	struct stats_arg *a = arg;
	char pin[512];

	fab_pin_path(a->t->name, a->n->name, pin, sizeof(pin));
	for (uint32_t j = 0; j < a->n->nports; j++) {
		const struct topo_port *p = &a->t->ports[a->n->ports[j]];
		const struct topo_node *peer = &a->t->nodes[a->t->ports[p->peer].node];
		struct ice_port_stats st;
		int ifindex = (int)if_nametoindex(p->ifname);

		if (ifindex == 0 || ice_sw_counters(pin, ifindex, &st) < 0)
			continue;
		if (a->json) {
			json_array_append_new(
				a->ports,
				json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
					  "switch", a->n->name, "port", p->ifname, "to", peer->name,
					  "bytes", (json_int_t)st.c.bytes, "packets",
					  (json_int_t)st.c.packets, "ce_marked",
					  (json_int_t)st.c.ce_marked, "drops",
					  (json_int_t)(st.c.drops + st.c.wred_drops),
					  "injected_drops", (json_int_t)st.c.injected_drops,
					  "depth", (json_int_t)st.depth_now, "peak_depth",
					  (json_int_t)st.c.peak_depth, "depth_area_bns",
					  (json_int_t)st.c.depth_area));
		} else {
			fprintf(a->out,
				"  %-8s %-6s -> %-8s %12llu %10llu %9llu %8llu %8llu %9llu %9llu\n",
				a->n->name, p->ifname, peer->name, (unsigned long long)st.c.bytes,
				(unsigned long long)st.c.packets,
				(unsigned long long)st.c.ce_marked,
				(unsigned long long)(st.c.drops + st.c.wred_drops),
				(unsigned long long)st.c.injected_drops,
				(unsigned long long)st.depth_now,
				(unsigned long long)st.c.peak_depth);
		}
	}
	if (a->new_peak) /* after the reads: the window that ends is the one shown */
		ice_sw_peak_reset(pin);
	return 0;
}

int fab_stats(const char *name, bool json, bool new_peak, FILE *out)
{
	struct topo *t = fab_topo(name);
	json_t *ports = json ? json_array() : NULL;
	char ns[64];

	if (t == NULL)
		return -ENOENT;
	if (!json)
		fprintf(out, "  %-8s %-6s    %-8s %12s %10s %9s %8s %8s %9s %9s\n", "switch",
			"port", "to", "bytes", "packets", "ce", "drops", "injected", "depth",
			"peak");
	for (uint32_t i = 0; i < t->nnodes; i++) {
		struct stats_arg sa = {.t = t,
				       .n = &t->nodes[i],
				       .ports = ports,
				       .out = out,
				       .json = json,
				       .new_peak = new_peak};

		if (t->nodes[i].kind != TOPO_SWITCH)
			continue;
		fab_ns_name(t, &t->nodes[i], ns, sizeof(ns));
		fab_in_netns(ns, switch_stats, &sa);
	}
	if (json) {
		json_t *root = json_pack("{s:s, s:o}", "fabric", t->name, "ports", ports);

		json_dumpf(root, out, JSON_INDENT(1));
		fprintf(out, "\n");
		json_decref(root);
	}
	topo_free(t);
	return 0;
}

/* ---- failover ---------------------------------------------------------------- */

struct failover_arg {
	const struct topo *t;
	const struct topo_node *n;
	const bool *down;
	int changed;
};

/* One switch: every ECMP group's members as the converged routes use them. */
static int failover_switch(void *arg)
{
	struct failover_arg *a = arg;
	char pin[512];

	fab_pin_path(a->t->name, a->n->name, pin, sizeof(pin));
	if (access(pin, F_OK) != 0)
		return 0; /* no BPF switch here (`up --no-bpf`) */
	for (uint32_t i = 0; i < topo_nic_count(a->t); i++) {
		const struct topo_port *d = topo_nic(a->t, i);
		uint32_t mask, nh[ICE_SW_MAX_MEMBERS];
		int k = topo_nexthops_down(a->t, a->n->id, d->id, a->down, nh, ICE_SW_MAX_MEMBERS,
					   &mask),
		    ret;

		if (k < 2)
			continue; /* no group there (see setup_switch_bpf) */
		ret = ice_sw_ecmp_down(pin, d->addr, 32, mask);
		if (ret < 0)
			return ret;
		a->changed += ret;
	}
	return 0;
}

int fab_bpf_failover(const struct topo *t, const bool *down)
{
	char ns[64];
	int ret = 0;

	for (uint32_t i = 0; i < t->nnodes; i++) {
		struct failover_arg fa = {.t = t, .n = &t->nodes[i], .down = down};
		int r;

		if (t->nodes[i].kind != TOPO_SWITCH)
			continue;
		fab_ns_name(t, &t->nodes[i], ns, sizeof(ns));
		r = fab_in_netns(ns, failover_switch, &fa);
		if (r < 0)
			ice_err(FAB_SUB, "switch %s: ECMP failover: %s", t->nodes[i].name,
				strerror(-r));
		else if (fa.changed > 0)
			ice_info(FAB_SUB, "switch %s: %d ECMP members changed state",
				 t->nodes[i].name, fa.changed);
		if (r < 0 && ret == 0)
			ret = r;
	}
	return ret;
}
