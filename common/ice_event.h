/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_event: collective events from the libraries on a host (the included
 * transport, ccl_hooks' NCCL/RCCL wrappers and profiler plugin) to the host
 * agent: fixed-size binary records in datagrams on a unix socket,
 * /run/ice/agent-<NIC IPv4>.sock. Sending never blocks and never fails the
 * caller: without an agent the events are simply dropped (fail-open).
 *
 * The agent makes the socket root's and the `ice` group's, mode 0660
 * (ice_ipc.h): processes in the group may send, others get EACCES. A sender
 * reports only to a socket bound by root or by its own user.
 */
#ifndef ICE_EVENT_H
#define ICE_EVENT_H

#include <stdint.h>

#define ICE_EVENT_MAGIC	   0x31564549u /* "IEV1" */
#define ICE_EVENT_VERSION  2
#define ICE_EVENT_SOCK_FMT "/run/ice/agent-%s.sock"
/* A datagram carries 1 to ICE_EVENT_PER_DGRAM whole records, back to back:
 * batching senders pack them, so a burst of calls costs few datagrams
 * (Linux queues at most net.unix.max_dgram_qlen datagrams per socket). */
#define ICE_EVENT_PER_DGRAM 32

enum ice_ev_kind {
	ICE_EV_COMM_INIT = 1, /* a communicator was created (rank of nranks) */
	ICE_EV_COMM_DESTROY,
	ICE_EV_COLL_START, /* a collective or p2p operation was called */
	ICE_EV_COLL_END,   /* ... completed (when the library knows) */
	ICE_EV_QP,	   /* a QP was connected: qpn, rqpn, peer, sport (verbs hook) */
};

enum ice_coll_op {
	ICE_OP_ALLREDUCE = 1,
	ICE_OP_REDUCESCATTER,
	ICE_OP_ALLGATHER,
	ICE_OP_BROADCAST,
	ICE_OP_REDUCE,
	ICE_OP_ALLTOALL,
	ICE_OP_SEND,
	ICE_OP_RECV,
	ICE_OP_SENDRECV,
};

struct ice_event {
	uint32_t magic;
	uint16_t version;
	uint16_t kind; /* enum ice_ev_kind */
	uint32_t pid;
	uint32_t op;	  /* enum ice_coll_op */
	uint64_t seq;	  /* per-sender sequence number */
	uint64_t ts_ns;	  /* CLOCK_REALTIME, ns */
	uint64_t comm_id; /* hash of the communicator's unique id */
	int32_t rank;
	int32_t nranks;
	uint64_t count; /* elements */
	uint64_t bytes; /* bytes this rank sends in the operation */
	uint32_t dtype; /* NCCL datatype numbering (ncclInt8 = 0 ... ncclBfloat16 = 9) */
	uint32_t redop; /* NCCL numbering (sum 0, prod 1, max 2, min 3, avg 4) */
	int32_t root;	/* broadcast/reduce root, else -1 */
	int32_t peer;	/* send/recv peer, else -1 */
	int32_t prev;	/* ring neighbours when the algorithm is a ring, else -1 */
	int32_t next;
	uint32_t qpn, rqpn; /* ICE_EV_QP */
	uint32_t local_ip;  /* network order */
	uint32_t remote_ip; /* network order (ICE_EV_QP) */
	uint16_t sport;	    /* ICE_EV_QP */
	uint16_t group;	    /* ncclGroupStart/End block the op was issued in (per
			     * sender, wraps; 0 = none); was padding */
	char lib[12];	    /* "ice-tp", "nccl", "rccl", ... */
	char job[16];	    /* the job's label: ICE_JOB in the sender's environment
			     * (version 2); "" = none. A job is the ranks of one
			     * communicator, comm_id; the label names it for people */
};

struct ice_event_tx;

/* A sender for events to the agent of the NIC with address ipv4 (or the
 * path in ICE_AGENT_SOCK when set). Never NULL-fatal: returns NULL + errno
 * (EPERM: what is at the path is not root's or our own socket; logged), and
 * callers simply do not report. */
struct ice_event_tx *ice_event_tx_open(const char *ipv4, const char *lib);
void ice_event_tx_close(struct ice_event_tx *tx); /* NULL-safe */
/* Fill magic, version, pid, seq, ts_ns, lib, then send without blocking.
 * Returns 0 or -errno (the event is dropped; nothing else happens). */
int ice_event_send(struct ice_event_tx *tx, struct ice_event *ev);
/* Send n events packed ICE_EVENT_PER_DGRAM to a datagram, the datagrams in
 * one system call (sendmmsg), without blocking. Fills magic, version, pid, seq, and lib and ts_ns
 * where they are empty (so a batching caller keeps the call time). Returns the number sent (the
 * rest are dropped and counted) or -errno when none was. */
int ice_event_send_many(struct ice_event_tx *tx, struct ice_event *evs, unsigned int n);
/* Events this sender dropped (no agent, socket full). */
uint64_t ice_event_dropped(const struct ice_event_tx *tx);

#endif /* ICE_EVENT_H */
