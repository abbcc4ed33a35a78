/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent: the per-host daemon ice-agent as a library (libice-agent), so that
 * tests link the real code and ice_agent_main.c stays thin.
 *
 * Each interval the agent reads three sources — the host NIC's BPF flow
 * counters (ebpf/ice_host_loader.h), the transports' control block
 * (common/ice_ctrl.h) and the collective events on its unix datagram socket
 * (common/ice_event.h) — joins the two BPF directions of each QP with the QP
 * table, computes per-QP and per-NIC rates, and publishes the sample to Redis
 * under the schema of docs/redis-schema.md (agent_redis.c). While Redis is
 * away samples wait in a bounded queue (agent_queue.c).
 *
 * Errors: functions return 0 or a negative errno; constructors NULL + errno.
 */
#ifndef ICE_AGENT_H
#define ICE_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ice_config.h"
#include "ice_dcqcn.h"
#include "ice_event.h"

#define AGENT_SCHEMA_VERSION 1
#define AGENT_PRIOS	     8 /* 802.1p priorities */

/* The DCQCN a plan asks of a NIC, which takes it per priority (or device),
 * not per QP: a profile per priority the plan's QPs use (has[q]), and for
 * what the NIC has device-wide the profile of the most QPs (wide_prio's). */
struct agent_dcqcn_prios {
	bool has[AGENT_PRIOS];
	struct ice_dcqcn_params prio[AGENT_PRIOS];
	bool has_wide;
	struct ice_dcqcn_params wide;
	unsigned wide_prio;
};
#define AGENT_RUN_DIR "/run/ice"

/* ------------------------------------------------------------------ config */

struct agent_cfg {
	char nic[16];	   /* interface name (IFNAMSIZ) */
	char addr[16];	   /* IPv4 of the NIC; "" = its first address */
	char host[64];	   /* host name in keys; "" = gethostname() */
	char fabric[64];   /* key namespace ice:<fabric>: */
	char redis[256];   /* host:port or unix:/path */
	uint64_t interval; /* ns */
	uint32_t stream_cap;
	uint32_t buffer; /* intervals kept while Redis is down */
	uint32_t metrics_port;
	uint32_t metrics_qps;	/* per-QP series: the busiest N */
	char pin_dir[128];	/* "" = /sys/fs/bpf/ice-agent-<nic> */
	char run_dir[128];	/* lock and event socket; default /run/ice */
	uint64_t redis_timeout; /* ns, connect and reply timeout */
	bool no_bpf;
	/* the controller's Ed25519 public keys (PEM, 1 to ICE_PLAN_PUBKEYS_MAX in
	 * one file; re-read when it changes); "" = no plans */
	char plan_pubkeys[256];
	/* the highest accepted epoch, kept across restarts so that an old,
	 * unexpired plan cannot be replayed to a restarted agent; "" =
	 * <run_dir>/<fabric>/agent-<host>-<nic>.epoch, "none" = memory only */
	char epoch_file[256];
	/* the group given the event socket and the control block (mode 0660);
	 * default ICE_GROUP, else "ice"; when it does not exist: root only */
	char group[32];
	/* the NIC backend (agent_nic.h): "transport" (the included transport
	 * and BPF, the default) or "mlx5" (RoCE in the NIC: device counters,
	 * DCQCN through the driver, QPs by RDMA netlink) */
	char backend[16];
	char sysroot[256];    /* root of sys/ (sysfs, debugfs); "/" on a host */
	char rdma_dev[64];    /* "" = the netdev's (sys/class/net/<nic>/device/infiniband/) */
	char pci[64];	      /* "" = the RDMA device's (its sysfs device link) */
	char dcqcn_iface[16]; /* auto, debugfs, ecn, none */
	uint32_t dcqcn_prio;  /* priority whose DCQCN the ecn interface sets */
	char nic_io[16];      /* kernel, replay (<sysroot>/ice-replay/: fixtures) */
	/* the policy's traffic class for verbs QPs (the hook sets it at RTR
	 * from <run_dir>/ccl-plan-<addr>.conf); "" = the application's */
	char tclass[8];
	/* resolved by agent_cfg_finish() */
	uint32_t addr_be; /* network order */
	int ifindex;
};

extern const struct ice_cfg_field agent_cfg_fields[];
extern const size_t agent_cfg_nfields;

void agent_cfg_defaults(struct agent_cfg *c);
/* Bind a YAML file onto c (strict: unknown keys are errors). */
int agent_cfg_load_file(struct agent_cfg *c, const char *path, struct ice_cfg_err *err);
/* "--interval 2s" style: key is the flag without dashes, '-' read as '_'. */
int agent_cfg_set_flag(struct agent_cfg *c, const char *flag, const char *value,
		       struct ice_cfg_err *err);
/* Check and resolve defaults (addr from the NIC, host name, pin dir). The
 * file (may be NULL) is re-read only to point errors at their line. */
int agent_cfg_finish(struct agent_cfg *c, const char *path, struct ice_cfg_err *err);

/* ------------------------------------------------------------- samples */

/* Counters of one QP (or one unjoined BPF flow), monotonic. */
struct agent_ctr {
	uint64_t tx_bytes, rx_bytes, tx_pkts, rx_pkts;
	uint64_t ce;		 /* CE-marked packets received */
	uint64_t cnp_tx, cnp_rx; /* CNPs sent / received */
	uint64_t nak_tx, nak_rx; /* NAKs sent / received (incl. RNR) */
	uint64_t retx;		 /* retransmitted packets */
};

#define AGENT_NCTR (sizeof(struct agent_ctr) / sizeof(uint64_t))

/* Per-second rates of the same counters. */
struct agent_rate {
	double tx_bytes, rx_bytes, tx_pkts, rx_pkts, ce, cnp_tx, cnp_rx, nak_tx, nak_rx, retx;
};

enum agent_qp_kind {
	AGENT_QP = 0,	   /* a known QP; qpn is the local QPN */
	AGENT_FLOW_TX = 1, /* egress BPF flow without a known QP; qpn = remote QPN */
	AGENT_FLOW_RX = 2, /* ingress BPF flow without a known QP; qpn = local QPN */
};

/* Where a record's numbers came from */
#define AGENT_SRC_CTRL 0x1u /* control block slot (transport counters) */
#define AGENT_SRC_BPF  0x2u /* BPF flow counters (what the NIC carried) */
#define AGENT_SRC_EV   0x4u /* announced by an ICE_EV_QP event */
#define AGENT_SRC_NIC  0x8u /* the RDMA device's QP table (NIC backend) */

/* Identity: records sort by (kind, local_ip, remote_ip, qpn). */
struct agent_qp_id {
	uint32_t kind;
	uint32_t local_ip, remote_ip; /* network order */
	uint32_t qpn;
};

struct agent_qp {
	struct agent_qp_id id;
	uint32_t rqpn;
	uint32_t pid;
	uint16_t sport;
	uint16_t src;	     /* AGENT_SRC_* */
	uint32_t rate_mbps;  /* transport's DCQCN rate now (0 = unlimited/unknown) */
	struct agent_ctr c;  /* chosen counters: BPF when seen, else transport */
	struct agent_ctr tp; /* transport's own counters (when SRC_CTRL) */
	struct agent_rate r;
	bool has_rate;
};

/* A QP as the QP table knows it (control block slot or ICE_EV_QP). */
struct agent_qpinfo {
	uint32_t qpn, rqpn;
	uint32_t local_ip, remote_ip; /* network order */
	uint16_t sport;
	uint16_t src; /* AGENT_SRC_CTRL, AGENT_SRC_EV or AGENT_SRC_NIC */
	uint32_t pid;
	uint32_t rate_mbps;
	struct agent_ctr tp; /* transport counters (SRC_CTRL); the device's (SRC_NIC) */
};

/* A BPF flow (one direction), summed over CPUs. */
struct agent_flow {
	uint32_t local_ip, remote_ip, qpn;
	uint8_t dir; /* enum ice_dir */
	uint16_t sport;
	uint64_t pkts, bytes, ce, cnp, naks, retx;
};

/* PFC on the NIC's link (NIC backend): which priorities are lossless (the
 * IEEE DCB configuration) and how much each is paused. */
struct agent_pfc {
	bool known;	     /* the lossless set was read */
	uint8_t lossless;    /* bit p: priority p is lossless (pfc_en) */
	uint8_t storm;	     /* bit p: a pause storm on priority p now */
	uint8_t seen;	     /* bit p: priority p has pause counters */
	bool has_rate;	     /* the per-second figures below are set */
	double rx_pause[8];  /* pause frames received per second */
	double tx_pause[8];  /* pause frames sent per second */
	double rx_paused[8]; /* share of the interval we were paused (0-1) */
	double tx_paused[8]; /* share of the interval we paused the switch */
};

struct agent_sample {
	uint64_t seq;	  /* interval number since the agent started */
	uint64_t ts_ms;	  /* wall clock, strictly increasing per run */
	uint64_t mono_ns; /* when read */
	double dt;	  /* seconds since the previous sample (0 = none) */
	struct agent_qp *qp;
	size_t nqp, cap;
	/* NIC summary */
	struct agent_ctr nic;
	struct agent_rate nic_r;
	bool nic_has_rate;
	size_t nic_qps, nic_flows; /* joined QPs, unjoined flows */
	struct ice_event *ev;	   /* collective events of this interval */
	size_t nev, evcap;
	/* the NIC backend's device-wide counters (agent_nic_summary) */
	bool has_dev, dev_has_rate;
	struct agent_ctr dev;
	struct agent_rate dev_r;
	struct agent_pfc pfc; /* with has_dev */
};

void agent_sample_init(struct agent_sample *s);
void agent_sample_fini(struct agent_sample *s);
void agent_sample_clear(struct agent_sample *s); /* keeps the buffers */
int agent_sample_add_event(struct agent_sample *s, const struct ice_event *ev, size_t max);

/* Join the QP table with the BPF flows into s->qp (sorted by id): a flow
 * whose key matches a QP (egress: local, remote, rqpn; ingress: local,
 * remote, qpn) gives that QP's counters; others stay flow records. QPs of
 * the table without any flow keep their transport counters. */
int agent_join(struct agent_sample *s, const struct agent_qpinfo *qps, size_t nqps,
	       const struct agent_flow *flows, size_t nflows);
/* Rates of cur against prev (same sort order); a record absent from prev
 * started after it (counts from 0), a counter that went down restarted.
 * With prev == NULL nothing has a rate. Fills the NIC summary too. */
void agent_rates(struct agent_sample *cur, const struct agent_sample *prev);
/* Rates of the device counters (has_dev) against prev's. */
void agent_dev_rates(struct agent_sample *cur, const struct agent_sample *prev);
int agent_qp_id_cmp(const struct agent_qp_id *a, const struct agent_qp_id *b);
/* "10.0.0.1:17" (QP) or "10.0.0.1>10.0.0.2:tx:17" (unjoined flow). */
const char *agent_qp_name(const struct agent_qp *q, char *buf, size_t len);

/* ------------------------------------------------------------- events */

enum agent_ev_verdict {
	AGENT_EV_OK = 0,
	AGENT_EV_SIZE,	  /* datagram not sizeof(struct ice_event) */
	AGENT_EV_MAGIC,	  /* wrong magic */
	AGENT_EV_VERSION, /* unknown version */
	AGENT_EV_KIND,	  /* unknown kind */
};

/* Check one received datagram of len bytes (len may exceed the buffer when
 * the datagram was truncated). */
enum agent_ev_verdict agent_event_check(const void *buf, size_t len);
const char *agent_ev_kind_name(unsigned kind);
const char *agent_ev_op_name(unsigned op);

/* ------------------------------------------------------------- queue */

/* A bounded FIFO of rendered intervals (RESP blobs); pushing onto a full
 * queue drops the oldest. The queue owns the blobs. */
struct agent_queue_item {
	char *buf; /* RESP commands, malloc'ed */
	size_t len;
	unsigned ncmd;
	uint64_t seq;
};

struct agent_queue {
	struct agent_queue_item *item;
	size_t cap, head, len;
	uint64_t dropped; /* intervals dropped because the queue was full */
};

int agent_queue_init(struct agent_queue *q, size_t cap);
void agent_queue_fini(struct agent_queue *q);
/* Takes ownership of buf (freed on drop or pop). */
int agent_queue_push(struct agent_queue *q, char *buf, size_t len, unsigned ncmd, uint64_t seq);
struct agent_queue_item *agent_queue_head(struct agent_queue *q); /* NULL when empty */
void agent_queue_pop(struct agent_queue *q);			  /* frees the head */

/* ------------------------------------------------------------- Redis records */

/* RESP commands being built (agent_redis.c); the caller frees p. */
struct agent_buf {
	char *p;
	size_t len, cap;
	unsigned ncmd;
	bool failed; /* out of memory somewhere */
};

/* Append one command; args end with NULL. */
void agent_buf_cmd(struct agent_buf *b, const char *arg0, ...) __attribute__((sentinel));
/* Append one command from argv[argc] (lengths by strlen). */
void agent_buf_cmdv(struct agent_buf *b, int argc, const char *const *argv);

/* The records of docs/redis-schema.md as RESP commands appended to out,
 * exactly what ice-agent sends (ice-loadgen plays them for many hosts):
 * the registration at (re)connect (bpf: the agent's BPF state,
 * started_ms: its start), and one interval's commands (liveness, QP and NIC
 * hashes and streams, the QP index, closed QPs of prev, events). 0 or
 * -ENOMEM. */
int agent_redis_render_register(const struct agent_cfg *cfg, bool bpf, uint64_t started_ms,
				struct agent_buf *out);
int agent_redis_render(const struct agent_cfg *cfg, const struct agent_sample *s,
		       const struct agent_sample *prev, struct agent_buf *out);

/* ------------------------------------------------------------- JSON */

/* The sample as one JSON document (the --once output); malloc'ed string. */
char *agent_sample_json(const struct agent_sample *s, const struct agent_cfg *cfg, int flags);

/* ------------------------------------------------------------- daemon */

struct agent;

struct agent_opts {
	bool once; /* one sample to out as JSON, then return */
	FILE *out;
};

/* Set up everything of cfg (lock, control block, socket, BPF, metrics);
 * NULL + errno; a message was logged. errno EBUSY: another agent runs. */
struct agent *agent_new(const struct agent_cfg *cfg, const struct agent_opts *o);
/* After agent_new(): keep only the capabilities cfg's backends use while
 * running (agent_caps.c; none without BPF, CAP_BPF and CAP_NET_ADMIN with
 * it), clear the others from every set and the bounding set, set
 * no_new_privs, and log the kept set. 0 or -errno (logged). */
int agent_caps_drop(const struct agent_cfg *cfg);
/* Run until agent_stop() (signal-safe) or, with once, one sample. */
int agent_run(struct agent *a);
void agent_stop(struct agent *a);
/* Detach, unlink, mark offline in Redis; NULL-safe. */
void agent_free(struct agent *a);

#endif /* ICE_AGENT_H */
