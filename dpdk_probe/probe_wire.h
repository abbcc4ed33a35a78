/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_wire: the probe packet (IPv4 / UDP dst 4791 / a BTH-looking header /
 * the probe header with a nonce and timestamps), and the parser that turns
 * any received IPv4 packet into a probe event or a counted drop reason.
 *
 * Payload after the UDP header (big-endian), 64 bytes:
 *   0  BTH (12): opcode 0x64, pkey 0xffff, dest QP 0xffffff, PSN = seq
 *  12  magic "ICEP"        16 version, kind, ttl sent, flags
 *  20  seq                 24 nonce (64 bit, random per probe)
 *  32  t1 prober tx (CLOCK_REALTIME ns)
 *  40  t2 responder rx     48 t3 responder tx
 *  56  prober's sport      58 path index
 *  60  ICRC placeholder (0)
 * The IPv4 identification is seq & 0xffff, so a quote of only the IP and UDP
 * headers (RFC 792 minimum) still names the probe.
 */
#ifndef ICE_PROBE_WIRE_H
#define ICE_PROBE_WIRE_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ice_roce.h"

#define PROBE_MAGIC	  0x49434550u /* "ICEP" */
#define PROBE_VERSION	  1
#define PROBE_PAYLOAD_LEN 64
#define PROBE_IP_LEN	  (20 + 8 + PROBE_PAYLOAD_LEN)
#define PROBE_WIRE_BYTES  (PROBE_IP_LEN + 14 + 4 + 20) /* + Ethernet, FCS, preamble/IFG */

enum probe_kind {
	PROBE_KIND_TRACE = 1, /* TTL-limited, for path discovery */
	PROBE_KIND_ECHO = 2,  /* health request */
	PROBE_KIND_REPLY = 3, /* the responder's answer */
};

struct probe_hdr {
	uint8_t kind, ttl, flags;
	uint32_t seq;
	uint64_t nonce;
	uint64_t t1, t2, t3;
	uint16_t sport, path;
};

/* What one received packet is. */
enum probe_rx_kind {
	PROBE_RX_HOP = 1,     /* ICMP time exceeded quoting a probe */
	PROBE_RX_UNREACH = 2, /* ICMP destination unreachable quoting a probe */
	PROBE_RX_REQUEST = 3, /* a trace or echo probe (for a responder) */
	PROBE_RX_REPLY = 4,   /* a responder's reply */
};

/* Why a packet was not used; counted per reason (from 1: parsers return
 * -reason, and 0 is no reason). */
enum probe_drop {
	PROBE_DROP_OTHER = 1,  /* not probe traffic (other ICMP, other UDP): ignored */
	PROBE_DROP_TRUNCATED,  /* shorter than its headers say, or quote too short */
	PROBE_DROP_MALFORMED,  /* bad version/IHL/magic/kind in what claims to be a probe */
	PROBE_DROP_FORGED,     /* names an outstanding probe but the nonce/port/dst differ */
	PROBE_DROP_UNEXPECTED, /* from (or about) an address we did not probe */
	PROBE_DROP_UNKNOWN,    /* no such outstanding probe (late, duplicate) */
	PROBE_DROP_N,
};
extern const char *const probe_drop_names[PROBE_DROP_N];

struct probe_rx {
	int kind;		   /* enum probe_rx_kind */
	struct in_addr from, to;   /* outer addresses */
	struct in_addr psrc, pdst; /* the probe's addresses (quoted for ICMP) */
	uint16_t sport, dport;	   /* the probe's UDP ports (as sent by its sender) */
	uint16_t ipid;		   /* the probe's IP identification */
	uint8_t icmp_type, icmp_code, ttl;
	bool has_hdr; /* hdr holds the probe header (else a short quote) */
	struct probe_hdr hdr;
	uint64_t ts_ns;
};

/* Build an IPv4/UDP probe into buf (>= PROBE_IP_LEN). Returns the length. */
size_t probe_build(uint8_t *buf, struct in_addr src, struct in_addr dst, uint16_t sport,
		   uint16_t dport, uint8_t ttl, const struct probe_hdr *h);
/* Parse one IPv4 packet. Returns enum probe_rx_kind (> 0) or -(enum probe_drop). */
int probe_parse(const uint8_t *pkt, size_t len, uint16_t probe_port, struct probe_rx *rx);
uint16_t probe_ip_csum(const void *data, size_t len);

/* ---- outstanding probes ---------------------------------------------------- */

#define PROBE_TRACK_SLOTS 4096 /* divides 65536: ipid & (SLOTS-1) is the slot */

struct probe_out {
	bool live;
	uint8_t kind, ttl;
	uint16_t sport, path;
	uint32_t seq, pair;
	uint64_t nonce;
	struct in_addr dst;
	uint64_t t_sent_ns; /* CLOCK_MONOTONIC */
};

struct probe_track {
	struct probe_out slot[PROBE_TRACK_SLOTS];
	uint32_t next_seq;
	uint64_t rng;
	uint64_t drops[PROBE_DROP_N];
	uint64_t sent, matched;
};

void probe_track_init(struct probe_track *t, uint64_t seed);
/* Reserve a slot for a new probe; fills h->seq, h->nonce. Overwrites the
 * oldest slot when all are live (that probe then counts as lost). */
struct probe_out *probe_track_add(struct probe_track *t, struct probe_hdr *h, struct in_addr dst,
				  uint16_t sport, uint8_t ttl, uint8_t kind, uint16_t path,
				  uint32_t pair);
/* Match a parsed HOP/UNREACH/REPLY against the outstanding probes sent from
 * local. Returns the slot (still live: the caller retires it) or NULL with the
 * drop reason counted. */
struct probe_out *probe_track_match(struct probe_track *t, const struct probe_rx *rx,
				    struct in_addr local);
/* Count a parse result that is a drop. */
static inline void probe_track_drop(struct probe_track *t, int reason)
{
	if (reason >= 0 && reason < PROBE_DROP_N)
		t->drops[reason]++;
}

#endif /* ICE_PROBE_WIRE_H */
