/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_host_loader: load the host NIC programs (ice_host.bpf.c), attach them at
 * a NIC's ingress and egress, and read what they counted.
 *
 * Attachment uses TCX links (bpf_link_create, attach types 46/47) where the
 * kernel has them, else clsact filters. TCX links and the maps are pinned
 * under pin_dir, so a restarted agent takes them over (ice_host_open() reuses
 * pinned maps; ice_host_attach() replaces its own pinned links), and
 * ice_host_detach() removes exactly what was attached. NULL + errno from
 * constructors; negative errno from the rest.
 */
#ifndef ICE_HOST_LOADER_H
#define ICE_HOST_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#include "ice_host.h"

struct ice_host_opts {
	uint16_t roce_port; /* UDP destination port; 0 = 4791 */
	uint32_t sample;    /* count 1 in `sample` packets (1 or 0 = all) */
	bool force_clsact;  /* do not try TCX */
};

struct ice_host;

/* clsact fallback: our filter's handle and priority, fixed so that a second
 * attach (a restarted agent) replaces it instead of adding one. */
#define ICE_HOST_TC_HANDLE 0x1ce4
#define ICE_HOST_TC_PRIO   2

/* What is attached at one hook of an interface (ice_host_query). */
struct ice_host_attachment {
	bool present;	  /* a program of ours (name ice_host_*) is attached there */
	bool tcx;	  /* as a TCX link (else a clsact filter) */
	bool pinned;	  /* TCX: the link is pinned under pin_dir */
	uint32_t link_id; /* TCX: the link's id (bpftool link show id N) */
	uint32_t prog_id; /* the program's id (compare with ice_host_prog_ids) */
	char prog_name[16];
};

struct ice_host *ice_host_open(const char *pin_dir, const struct ice_host_opts *o);
/* Attach ingress and egress programs to ifindex (in the caller's netns). */
int ice_host_attach(struct ice_host *h, int ifindex);
/* Detach from ifindex; the maps stay (and their counts). */
int ice_host_detach(struct ice_host *h, int ifindex);
/* Close the handle; pinned links and maps stay attached for a successor. */
void ice_host_close(struct ice_host *h);
/* Remove pinned links, their attachments and the maps. */
int ice_host_unpin(const char *pin_dir);

/* Walk all flows, with per-CPU values summed. cb returns non-zero to stop. */
int ice_host_foreach_flow(struct ice_host *h,
			  int (*cb)(const struct ice_flow_key *k, const struct ice_flow_stats *s,
				    void *arg),
			  void *arg);
/* Deliver new-flow events to cb; wait up to timeout_ms. Returns events seen. */
int ice_host_poll_events(struct ice_host *h, int timeout_ms,
			 void (*cb)(const struct ice_flow_event *ev, void *arg), void *arg);
/* Parser outcome counters, summed over CPUs. */
int ice_host_stats(struct ice_host *h, uint64_t out[ICE_HS_MAX]);
/* Programs' fds, for tests (bpf_prog_test_run_opts) and run-time stats. */
int ice_host_ingress_fd(const struct ice_host *h);
int ice_host_egress_fd(const struct ice_host *h);
/* Whether ice_host_attach() used TCX (true) or clsact (false). */
bool ice_host_uses_tcx(const struct ice_host *h);

/*
 * Who is attached to ifindex (caller's netns): [0] ingress, [1] egress. TCX
 * links pinned under pin_dir (pin_dir may be NULL) and, for the clsact
 * fallback, our filter (ICE_HOST_TC_HANDLE/PRIO). Returns how many hooks have
 * one of our programs (0..2) or a negative errno. A second agent compares
 * prog_id with its own (ice_host_prog_ids) or with the pinned link's to see
 * that the NIC is taken; whether its owner still runs is for the agent to
 * know (a lock file: pins outlive a crashed agent on purpose).
 */
int ice_host_query(const char *pin_dir, int ifindex, struct ice_host_attachment out[2]);
/* The ids of this handle's programs: [0] ingress, [1] egress. */
int ice_host_prog_ids(const struct ice_host *h, uint32_t ids[2]);

#endif /* ICE_HOST_LOADER_H */
