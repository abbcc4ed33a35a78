// SPDX-License-Identifier: Apache-2.0
/*
 * The host NIC programs (ebpf/ice_host.bpf.c) on packet fixtures through
 * bpf_prog_test_run_opts(), katran style: each fixture names what it checks,
 * the packets (built here from a small spec), the program (ingress or
 * egress), and the flow counters and parse outcome expected. Also: every
 * truncation of valid packets, sampling, new-flow ring-buffer events, and the
 * real thing: TCX (and clsact) attachment on a veth in throwaway namespaces
 * iceHT<pid> / iceHT<pid>p with real UDP datagrams to port 4791, take-over by
 * a reopened handle without double counting, detach and unpin.
 *
 * The process is pinned to one CPU: the flow counters and the sampler are per
 * CPU, and the PSN checks compare with the same CPU's last PSN.
 *
 * Needs root and BPF; exits 77 (skipped) with the reason otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>

#include "ice_host_loader.h"
#include "ice_log.h"

#define SKIP	  77
#define ROCE_PORT 4791
#define VERDICT	  -1 /* TC_ACT_UNSPEC = TCX_NEXT: observe only */

static char ns_name[32], peer_ns[40], pin_dir[64], pin_dir2[64];
static int ns_made, peer_made, ns_fd = -1, peer_fd = -1;
static struct ice_host *hf; /* fixtures: unpinned, unattached */

/* --- packets -------------------------------------------------------------- */

enum { EG = 0, IN = 1 };

struct pkt {
	uint8_t op;
	uint32_t psn;
	uint32_t qpn;
	uint16_t payload; /* bytes after the BTH and the opcode's headers */
	uint8_t pad;	  /* BTH PadCnt */
	uint8_t tos;	  /* ECN in the low bits */
	uint8_t syndrome; /* AETH, for ACK */
	uint8_t ipv6;	  /* 1: IPv6 */
	uint8_t vlan;	  /* 1: one 802.1Q tag */
	uint8_t l4;	  /* 0: UDP; IPPROTO_TCP; 0xff: ARP frame */
	uint16_t dport;	  /* 0: 4791 */
	uint16_t sport;	  /* 0: 49152 */
};

/* Bytes after the BTH that each opcode of the fixtures carries. */
static size_t ext_len(uint8_t op)
{
	switch (op) {
	case 0x06: /* WRITE_FIRST: RETH */
	case 0x0a:
	case 0x0c:
		return 16;
	case 0x11: /* ACK: AETH */
		return 4;
	case 0x81: /* CNP: 16 reserved bytes, counted as its payload */
	default:
		return 0;
	}
}

static const uint8_t src4[4] = {10, 1, 0, 5}, dst4[4] = {10, 2, 0, 7};

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

/* A frame of spec s into buf; returns its length. */
static size_t pkt_build(uint8_t *buf, size_t size, const struct pkt *s)
{
	size_t l2 = 14 + (s->vlan ? 4 : 0), iph = s->ipv6 ? 40 : 20;
	size_t l4len = 8 + 12 + ext_len(s->op) + s->payload + s->pad + 4;
	size_t len = l2 + iph + l4len;
	uint8_t *ip = buf + l2, *udp = ip + iph, *bth = udp + 8;

	assert_true(len <= size);
	memset(buf, 0, size);
	memcpy(buf, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
	if (s->vlan) {
		put16(buf + 12, 0x8100);
		put16(buf + 14, 42);
	}
	if (s->l4 == 0xff) { /* ARP request */
		put16(buf + l2 - 2, ETH_P_ARP);
		return l2 + 28;
	}
	put16(buf + l2 - 2, s->ipv6 ? ETH_P_IPV6 : ETH_P_IP);
	if (s->ipv6) {
		ip[0] = 0x60 | (s->tos >> 4);
		ip[1] = (s->tos & 0xf) << 4;
		put16(ip + 4, l4len);
		ip[6] = s->l4 ? s->l4 : IPPROTO_UDP;
		ip[7] = 64;
		inet_pton(AF_INET6, "fd00::1", ip + 8);
		inet_pton(AF_INET6, "fd00::2", ip + 24);
	} else {
		ip[0] = 0x45;
		ip[1] = s->tos;
		put16(ip + 2, iph + l4len);
		ip[6] = 0x40; /* DF */
		ip[8] = 64;
		ip[9] = s->l4 ? s->l4 : IPPROTO_UDP;
		memcpy(ip + 12, src4, 4);
		memcpy(ip + 16, dst4, 4);
	}
	put16(udp, s->sport ? s->sport : 49152);
	put16(udp + 2, s->dport ? s->dport : ROCE_PORT);
	put16(udp + 4, l4len);
	bth[0] = s->op;
	bth[1] = (s->pad & 3) << 4;
	put16(bth + 2, 0xffff);
	bth[5] = s->qpn >> 16;
	bth[6] = s->qpn >> 8;
	bth[7] = s->qpn;
	bth[9] = s->psn >> 16;
	bth[10] = s->psn >> 8;
	bth[11] = s->psn;
	if (s->op == 0x11)
		bth[12] = s->syndrome;
	return len;
}

static int run_len(int prog_fd, const uint8_t *pkt, size_t len, int repeat)
{
	DECLARE_LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = len,
			    .repeat = repeat);
	int err = bpf_prog_test_run_opts(prog_fd, &o);

	if (err)
		fail_msg("bpf_prog_test_run_opts(len %zu): %s", len, strerror(errno));
	return (int)o.retval;
}

static int prog_of(struct ice_host *h, int dir)
{
	return dir == EG ? ice_host_egress_fd(h) : ice_host_ingress_fd(h);
}

/* --- reading flows -------------------------------------------------------- */

struct find {
	struct ice_flow_key want;
	struct ice_flow_stats got;
	int n;
};

static int key_eq(const struct ice_flow_key *a, const struct ice_flow_key *b)
{
	return a->local_ip == b->local_ip && a->remote_ip == b->remote_ip && a->qpn == b->qpn &&
	       a->dir == b->dir && a->ipv6 == b->ipv6;
}

static int find_cb(const struct ice_flow_key *k, const struct ice_flow_stats *s, void *arg)
{
	struct find *f = arg;

	if (key_eq(k, &f->want)) {
		f->got = *s;
		f->n++;
	}
	return 0;
}

/* The summed stats of one key; 0 when found, -ENOENT when not. */
static int flow_get(struct ice_host *h, const struct ice_flow_key *k, struct ice_flow_stats *s)
{
	struct find f = {.want = *k};

	assert_true(ice_host_foreach_flow(h, find_cb, &f) >= 0);
	assert_true(f.n <= 1);
	*s = f.got;
	return f.n == 1 ? 0 : -ENOENT;
}

static uint32_t fold6(const char *a)
{
	uint32_t w[4];

	inet_pton(AF_INET6, a, w);
	return w[0] ^ w[1] ^ w[2] ^ w[3];
}

/* The key a fixture's packets count into. */
static struct ice_flow_key key_of(const struct pkt *p, int dir)
{
	struct ice_flow_key k = {.qpn = p->qpn,
				 .dir = dir == EG ? ICE_DIR_EGRESS : ICE_DIR_INGRESS};
	uint32_t s, d;

	if (p->ipv6) {
		s = fold6("fd00::1");
		d = fold6("fd00::2");
		k.ipv6 = 1;
	} else {
		memcpy(&s, src4, 4);
		memcpy(&d, dst4, 4);
	}
	k.local_ip = dir == EG ? s : d;
	k.remote_ip = dir == EG ? d : s;
	return k;
}

/* --- fixtures ------------------------------------------------------------- */

#define MAXP 4
/* A packet spec: opcode, PSN, QPN, payload bytes, then any other fields. */
#define P(o, s, q, n, ...)                                                                         \
	{                                                                                          \
		.op = (o), .psn = (s), .qpn = (q), .payload = (n), __VA_ARGS__                     \
	}

struct want {
	uint64_t pkts, bytes, data_pkts, data_bytes, ce, cnp, acks, naks, rnr_naks, psn_back;
	uint32_t last_psn;
};

struct fixture {
	const char *desc;
	int dir;
	struct pkt p[MAXP]; /* op 0xff ends the list early; all share p[0]'s key */
	int np;
	int outcome;   /* ice_host_stat each packet ends in */
	int counted;   /* 1: a flow is expected (want); 0: none */
	struct want w; /* bytes: 0 = computed as the packets' IP lengths */
};

#define SEND_FIRST  0x00
#define SEND_MIDDLE 0x01
#define SEND_LAST   0x02
#define SEND_ONLY   0x04
#define WRITE_FIRST 0x06
#define ACK	    0x11
#define CNP	    0x81

static const struct fixture fixtures[] = {
	{"SEND_FIRST/MIDDLE/LAST: 3 data packets, payload bytes only",
	 EG,
	 {P(SEND_FIRST, 1, 0x101, 1024), P(SEND_MIDDLE, 2, 0x101, 1024),
	  P(SEND_LAST, 3, 0x101, 1000)},
	 3,
	 ICE_HS_ROCE,
	 1,
	 {.pkts = 3, .data_pkts = 3, .data_bytes = 3048, .last_psn = 3}},
	{"SEND_ONLY with pad 3: pad and ICRC are not payload",
	 EG,
	 {P(SEND_ONLY, 7, 0x102, 13, .pad = 3)},
	 1,
	 ICE_HS_ROCE,
	 1,
	 {.pkts = 1, .data_pkts = 1, .data_bytes = 13, .last_psn = 7}},
	{"WRITE_FIRST: the RETH is not payload",
	 EG,
	 {P(WRITE_FIRST, 100, 0x103, 512)},
	 1,
	 ICE_HS_ROCE,
	 1,
	 {.pkts = 1, .data_pkts = 1, .data_bytes = 512, .last_psn = 100}},
	{"ACK (syndrome 0x1f): an ACK, no data",
	 IN,
	 {P(ACK, 5, 0x104, 0, .syndrome = 0x1f)},
	 1,
	 ICE_HS_ROCE,
	 1,
	 {.pkts = 1, .acks = 1}},
	{"NAK PSN sequence error (0x60)",
	 IN,
	 {P(ACK, 5, 0x105, 0, .syndrome = 0x60)},
	 1,
	 ICE_HS_ROCE,
	 1,
	 {.pkts = 1, .naks = 1}},
	{"RNR NAK (0x21)",
	 IN,
	 {P(ACK, 5, 0x106, 0, .syndrome = 0x21)},
	 1,
	 ICE_HS_ROCE,
	 1,
	 {.pkts = 1, .rnr_naks = 1}},
	{"CNP (0x81), received",
	 IN,
	 {P(CNP, 0, 0x107, 16)},
	 1,
	 ICE_HS_ROCE,
	 1,
	 {.pkts = 1, .cnp = 1}},
	{"CNP sent: egress counts it too",
	 EG,
	 {P(CNP, 0, 0x10f, 16)},
	 1,
	 ICE_HS_ROCE,
	 1,
	 {.pkts = 1, .cnp = 1}},
	{"CE-marked data: one CE, one not (ECT(0))",
	 IN,
	 {P(SEND_ONLY, 1, 0x108, 100, .tos = 3), P(SEND_ONLY, 2, 0x108, 100, .tos = 2)},
	 2,
	 ICE_HS_ROCE,
	 1,
	 {.pkts = 2, .data_pkts = 2, .data_bytes = 200, .ce = 1, .last_psn = 2}},
	{"PSN going backwards (10 11 12 11): one retransmission",
	 EG,
	 {P(SEND_ONLY, 10, 0x109, 64), P(SEND_ONLY, 11, 0x109, 64), P(SEND_ONLY, 12, 0x109, 64),
	  P(SEND_ONLY, 11, 0x109, 64)},
	 4,
	 ICE_HS_ROCE,
	 1,
	 {.pkts = 4, .data_pkts = 4, .data_bytes = 256, .psn_back = 1, .last_psn = 11}},
	{"Same PSN again is not ahead: a retransmission",
	 EG,
	 {P(SEND_ONLY, 20, 0x10a, 64), P(SEND_ONLY, 20, 0x10a, 64)},
	 2,
	 ICE_HS_ROCE,
	 1,
	 {.pkts = 2, .data_pkts = 2, .data_bytes = 128, .psn_back = 1, .last_psn = 20}},
	{"PSN wrap 0xfffffe 0xffffff 0 1 is not backwards",
	 EG,
	 {P(SEND_ONLY, 0xfffffe, 0x10b, 64), P(SEND_ONLY, 0xffffff, 0x10b, 64),
	  P(SEND_ONLY, 0, 0x10b, 64), P(SEND_ONLY, 1, 0x10b, 64)},
	 4,
	 ICE_HS_ROCE,
	 1,
	 {.pkts = 4, .data_pkts = 4, .data_bytes = 256, .last_psn = 1}},
	{"ACKs between data do not move the data PSN",
	 IN,
	 {P(SEND_ONLY, 50, 0x10c, 64), P(ACK, 3, 0x10c, 0), P(SEND_ONLY, 51, 0x10c, 64)},
	 3,
	 ICE_HS_ROCE,
	 1,
	 {.pkts = 3, .data_pkts = 2, .data_bytes = 128, .acks = 1, .last_psn = 51}},
	{"IPv6 RoCEv2 SEND_ONLY, CE in the traffic class",
	 IN,
	 {P(SEND_ONLY, 9, 0x10d, 256, .ipv6 = 1, .tos = 0xa3)},
	 1,
	 ICE_HS_ROCE,
	 1,
	 {.pkts = 1, .data_pkts = 1, .data_bytes = 256, .ce = 1, .last_psn = 9}},
	{"VLAN-tagged (802.1Q) IPv4 WRITE_FIRST",
	 EG,
	 {P(WRITE_FIRST, 9, 0x10e, 300, .vlan = 1)},
	 1,
	 ICE_HS_ROCE,
	 1,
	 {.pkts = 1, .data_pkts = 1, .data_bytes = 300, .last_psn = 9}},
	{"VLAN-tagged IPv6 ACK",
	 IN,
	 {P(ACK, 9, 0x110, 0, .vlan = 1, .ipv6 = 1)},
	 1,
	 ICE_HS_ROCE,
	 1,
	 {.pkts = 1, .acks = 1}},
	{"UDP to another port (4792) is not RoCE",
	 EG,
	 {P(SEND_ONLY, 1, 0x111, 64, .dport = 4792)},
	 1,
	 ICE_HS_NOT_ROCE,
	 0,
	 {.pkts = 0}},
	{"RoCE port as the source only is not RoCE",
	 EG,
	 {P(SEND_ONLY, 1, 0x112, 64, .sport = 4791, .dport = 5000)},
	 1,
	 ICE_HS_NOT_ROCE,
	 0,
	 {.pkts = 0}},
	{"TCP is not RoCE",
	 IN,
	 {P(SEND_ONLY, 1, 0x113, 64, .l4 = IPPROTO_TCP)},
	 1,
	 ICE_HS_NOT_ROCE,
	 0,
	 {.pkts = 0}},
	{"IPv6 TCP is not RoCE",
	 IN,
	 {P(SEND_ONLY, 1, 0x114, 64, .l4 = IPPROTO_TCP, .ipv6 = 1)},
	 1,
	 ICE_HS_NOT_ROCE,
	 0,
	 {.pkts = 0}},
	{"ARP is not IP", IN, {P(0, 0, 0x115, 0, .l4 = 0xff)}, 1, ICE_HS_NOT_IP, 0, {.pkts = 0}},
};

static uint64_t ip_len_of(const struct pkt *p)
{
	return (p->ipv6 ? 40 : 20) + 8 + 12 + ext_len(p->op) + p->payload + p->pad + 4;
}

static void stats_get(struct ice_host *h, uint64_t s[ICE_HS_MAX])
{
	assert_int_equal(ice_host_stats(h, s), 0);
}

static void check_want(const char *desc, const struct ice_flow_stats *s, const struct want *w)
{
#define CHK(f)                                                                                     \
	do {                                                                                       \
		if (s->f != w->f)                                                                  \
			fail_msg("%s: " #f " %llu, expected %llu", desc, (unsigned long long)s->f, \
				 (unsigned long long)w->f);                                        \
	} while (0)
	CHK(pkts);
	CHK(bytes);
	CHK(data_pkts);
	CHK(data_bytes);
	CHK(ce);
	CHK(cnp);
	CHK(acks);
	CHK(naks);
	CHK(rnr_naks);
	CHK(psn_back);
	if (w->data_pkts)
		CHK(last_psn);
#undef CHK
}

static void test_fixtures(void **state)
{
	static uint8_t buf[2048];
	(void)state;

	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		const struct fixture *f = &fixtures[i];
		struct ice_flow_key k = key_of(&f->p[0], f->dir);
		uint64_t before[ICE_HS_MAX], after[ICE_HS_MAX];
		struct ice_flow_stats s;
		struct want w = f->w;

		stats_get(hf, before);
		for (int j = 0; j < f->np; j++) {
			size_t len = pkt_build(buf, sizeof(buf), &f->p[j]);
			int v = run_len(prog_of(hf, f->dir), buf, len, 1);

			if (v != VERDICT)
				fail_msg("%s: verdict %d, expected %d", f->desc, v, VERDICT);
			w.bytes += ip_len_of(&f->p[j]);
		}
		stats_get(hf, after);
		if (after[ICE_HS_PKTS] - before[ICE_HS_PKTS] != (uint64_t)f->np ||
		    after[f->outcome] - before[f->outcome] != (uint64_t)f->np)
			fail_msg("%s: outcome %d counted %llu of %d packets", f->desc, f->outcome,
				 (unsigned long long)(after[f->outcome] - before[f->outcome]),
				 f->np);
		if (!f->counted) {
			if (flow_get(hf, &k, &s) == 0)
				fail_msg("%s: a flow was counted", f->desc);
			continue;
		}
		if (flow_get(hf, &k, &s) != 0)
			fail_msg("%s: no flow for qpn %#x dir %d", f->desc, k.qpn, k.dir);
		check_want(f->desc, &s, &w);
		assert_true(s.first_ns > 0 && s.last_ns >= s.first_ns);
		assert_int_equal(s.udp_sport, 49152);
	}
}

/* One packet counted by both programs lands in two keys, addresses swapped. */
static void test_directions(void **state)
{
	struct pkt p = P(SEND_ONLY, 5, 0x201, 100);
	struct ice_flow_key ke = key_of(&p, EG), ki = key_of(&p, IN);
	struct ice_flow_stats se, si;
	static uint8_t buf[512];
	size_t len = pkt_build(buf, sizeof(buf), &p);
	(void)state;

	run_len(ice_host_egress_fd(hf), buf, len, 1);
	run_len(ice_host_ingress_fd(hf), buf, len, 1);
	assert_int_equal(flow_get(hf, &ke, &se), 0);
	assert_int_equal(flow_get(hf, &ki, &si), 0);
	assert_int_equal(ke.local_ip, ki.remote_ip);
	assert_int_equal(ke.dir, ICE_DIR_EGRESS);
	assert_int_equal(ki.dir, ICE_DIR_INGRESS);
	assert_int_equal(se.pkts, 1);
	assert_int_equal(si.pkts, 1);
	assert_int_equal(se.data_bytes, 100);
}

/* Every cut of valid packets: TRUNCATED, nothing counted into any flow. */
static void test_truncated(void **state)
{
	static const struct pkt valid[] = {
		P(WRITE_FIRST, 1, 0x301, 40),
		P(ACK, 1, 0x302, 0, .syndrome = 0x60, .vlan = 1),
		P(SEND_ONLY, 1, 0x303, 24, .ipv6 = 1, .pad = 2),
		P(CNP, 0, 0x304, 16, .vlan = 1, .ipv6 = 1),
	};
	static uint8_t buf[512];
	(void)state;

	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
		size_t full = pkt_build(buf, sizeof(buf), &valid[i]);
		struct ice_flow_key k = key_of(&valid[i], IN);
		uint64_t before[ICE_HS_MAX], after[ICE_HS_MAX];
		struct ice_flow_stats s;

		size_t shortest = 0;

		for (size_t len = ETH_HLEN; len < full; len++) {
			DECLARE_LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = buf,
					    .data_size_in = len, .repeat = 1);

			stats_get(hf, before);
			/* test_run refuses frames too short for its own parsing (EINVAL). */
			if (bpf_prog_test_run_opts(ice_host_ingress_fd(hf), &o) != 0) {
				assert_int_equal(errno, EINVAL);
				continue;
			}
			if (shortest == 0)
				shortest = len;
			assert_int_equal((int)o.retval, VERDICT);
			stats_get(hf, after);
			if (after[ICE_HS_TRUNCATED] - before[ICE_HS_TRUNCATED] != 1 ||
			    after[ICE_HS_ROCE] != before[ICE_HS_ROCE])
				fail_msg("packet %zu cut at %zu of %zu bytes: not TRUNCATED", i,
					 len, full);
			assert_int_not_equal(flow_get(hf, &k, &s), 0);
		}
		print_message("packet %zu: cut at %zu..%zu of %zu bytes: TRUNCATED\n", i, shortest,
			      full - 1, full);
		/* test_run wants an untagged frame's whole IP header (eth_type_trans);
		 * the VLAN-tagged packets cover the cuts inside L2 and L3. */
		assert_true(shortest > 0 &&
			    shortest <= (valid[i].vlan ? ETH_HLEN
						       : ETH_HLEN + (valid[i].ipv6 ? 40u : 20u)));
		/* And whole, it counts. */
		run_len(ice_host_ingress_fd(hf), buf, full, 1);
		assert_int_equal(flow_get(hf, &k, &s), 0);
		assert_int_equal(s.pkts, 1);
	}
}

/* Headers that lie: an IP length shorter than BTH + ICRC, a PadCnt beyond it. */
static void test_malformed(void **state)
{
	struct pkt p = P(SEND_ONLY, 1, 0x305, 0);
	uint64_t before[ICE_HS_MAX], after[ICE_HS_MAX];
	static uint8_t buf[512];
	size_t len = pkt_build(buf, sizeof(buf), &p);
	struct ice_flow_key k = key_of(&p, EG);
	struct ice_flow_stats s;
	(void)state;

	stats_get(hf, before);
	put16(buf + 14 + 2, 20 + 8 + 12); /* IP length without the ICRC */
	run_len(ice_host_egress_fd(hf), buf, len, 1);
	len = pkt_build(buf, sizeof(buf), &p);
	buf[14 + 20 + 8 + 1] = 3 << 4; /* pad 3, but no payload bytes to pad */
	run_len(ice_host_egress_fd(hf), buf, len, 1);
	len = pkt_build(buf, sizeof(buf), &p);
	buf[14] = 0x44; /* IHL 4 */
	run_len(ice_host_egress_fd(hf), buf, len, 1);
	stats_get(hf, after);
	assert_int_equal(after[ICE_HS_TRUNCATED] - before[ICE_HS_TRUNCATED], 2);
	assert_int_equal(after[ICE_HS_NOT_IP] - before[ICE_HS_NOT_IP], 1);
	assert_int_not_equal(flow_get(hf, &k, &s), 0);
}

/* sample = 4: 1 in 4 RoCE packets counted (the first), the rest SAMPLED_OUT. */
static void test_sampling(void **state)
{
	struct ice_host_opts o = {.sample = 4};
	struct pkt p = P(SEND_ONLY, 1, 0x401, 64);
	struct pkt other = P(SEND_ONLY, 1, 0x402, 64, .dport = 4792);
	uint64_t st[ICE_HS_MAX];
	struct ice_flow_key k = key_of(&p, EG);
	struct ice_flow_stats s;
	static uint8_t buf[512];
	struct ice_host *h = ice_host_open(NULL, &o);
	size_t len;
	(void)state;

	assert_non_null(h);
	for (int i = 0; i < 10; i++) {
		p.psn = i;
		len = pkt_build(buf, sizeof(buf), &p);
		run_len(ice_host_egress_fd(h), buf, len, 1);
		len = pkt_build(buf, sizeof(buf), &other); /* not RoCE: not sampled */
		run_len(ice_host_egress_fd(h), buf, len, 1);
	}
	stats_get(h, st);
	assert_int_equal(st[ICE_HS_PKTS], 20);
	assert_int_equal(st[ICE_HS_NOT_ROCE], 10);
	assert_int_equal(st[ICE_HS_ROCE], 3); /* psn 0, 4, 8 */
	assert_int_equal(st[ICE_HS_SAMPLED_OUT], 7);
	assert_int_equal(flow_get(h, &k, &s), 0);
	assert_int_equal(s.pkts, 3);
	assert_int_equal(s.psn_back, 0);
	assert_int_equal(s.last_psn, 8);
	ice_host_close(h);
}

/* A custom RoCE port from the options. */
static void test_roce_port(void **state)
{
	struct ice_host_opts o = {.roce_port = 5000};
	struct pkt p = P(SEND_ONLY, 1, 0x403, 64, .dport = 5000);
	struct pkt std = P(SEND_ONLY, 1, 0x404, 64);
	uint64_t st[ICE_HS_MAX];
	static uint8_t buf[512];
	struct ice_host *h = ice_host_open(NULL, &o);
	(void)state;

	assert_non_null(h);
	run_len(ice_host_ingress_fd(h), buf, pkt_build(buf, sizeof(buf), &p), 1);
	run_len(ice_host_ingress_fd(h), buf, pkt_build(buf, sizeof(buf), &std), 1);
	stats_get(h, st);
	assert_int_equal(st[ICE_HS_ROCE], 1);
	assert_int_equal(st[ICE_HS_NOT_ROCE], 1);
	ice_host_close(h);
}

struct evs {
	struct ice_flow_event ev[16];
	int n;
};

static void ev_cb(const struct ice_flow_event *ev, void *arg)
{
	struct evs *e = arg;

	if (e->n < 16)
		e->ev[e->n] = *ev;
	e->n++;
}

/* One ring-buffer event per new key, none for packets of a known key. */
static void test_new_flow_events(void **state)
{
	struct pkt a = P(SEND_FIRST, 1, 0x501, 64, .sport = 50001);
	struct pkt b = P(WRITE_FIRST, 7, 0x502, 64, .sport = 50002);
	struct ice_host *h = ice_host_open(NULL, NULL);
	struct evs e = {0};
	static uint8_t buf[512];
	int n;
	(void)state;

	assert_non_null(h);
	assert_int_equal(ice_host_poll_events(h, 0, ev_cb, &e), 0);
	for (int i = 0; i < 3; i++) {
		a.psn = 1 + i;
		run_len(ice_host_egress_fd(h), buf, pkt_build(buf, sizeof(buf), &a), 1);
	}
	run_len(ice_host_egress_fd(h), buf, pkt_build(buf, sizeof(buf), &b), 1);
	run_len(ice_host_egress_fd(h), buf, pkt_build(buf, sizeof(buf), &b), 1);
	run_len(ice_host_ingress_fd(h), buf, pkt_build(buf, sizeof(buf), &a), 1);
	n = ice_host_poll_events(h, 100, ev_cb, &e);
	assert_int_equal(n, 3);
	assert_int_equal(e.n, 3);
	struct ice_flow_key ka = key_of(&a, EG), kb = key_of(&b, EG), kai = key_of(&a, IN);

	assert_true(key_eq(&e.ev[0].key, &ka));
	assert_int_equal(e.ev[0].opcode, SEND_FIRST);
	assert_int_equal(e.ev[0].udp_sport, 50001);
	assert_int_equal(e.ev[0].udp_dport, ROCE_PORT);
	assert_true(e.ev[0].ts_ns > 0);
	assert_true(key_eq(&e.ev[1].key, &kb));
	assert_int_equal(e.ev[1].opcode, WRITE_FIRST);
	assert_true(key_eq(&e.ev[2].key, &kai));
	/* More of the same keys: nothing new. */
	run_len(ice_host_egress_fd(h), buf, pkt_build(buf, sizeof(buf), &a), 5);
	assert_int_equal(ice_host_poll_events(h, 50, ev_cb, &e), 0);
	ice_host_close(h);
}

/* --- attached, real packets ---------------------------------------------------- */

static int if_h; /* iceHa: our side of the veth; the peer iceHb is in peer_ns */
static int sock_local = -1, sock_peer = -1;

static int udp_socket(int netns_fd, const char *bind_ip)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(ROCE_PORT)};
	struct timeval tv = {.tv_sec = 2};
	int fd, err;

	if (netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET) != 0)
		return -errno;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	err = fd < 0 ? -errno : 0;
	if (netns_fd >= 0 && setns(ns_fd, CLONE_NEWNET) != 0)
		err = -errno;
	if (err)
		return err;
	inet_pton(AF_INET, bind_ip, &a.sin_addr);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		err = -errno;
		close(fd);
		return err;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* n RoCE SEND_ONLY datagrams (qpn, psn from psn0) from `from` to ip; waits for them. */
static void send_roce(int from, int to, const char *ip, uint32_t qpn, uint32_t psn0, int n)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(ROCE_PORT)};
	uint8_t b[12 + 64 + 4] = {0}, r[256];

	inet_pton(AF_INET, ip, &a.sin_addr);
	for (int i = 0; i < n; i++) {
		uint32_t psn = psn0 + i;

		b[0] = SEND_ONLY;
		put16(b + 2, 0xffff);
		b[5] = qpn >> 16;
		b[6] = qpn >> 8;
		b[7] = qpn;
		b[9] = psn >> 16;
		b[10] = psn >> 8;
		b[11] = psn;
		assert_int_equal(sendto(from, b, sizeof(b), 0, (struct sockaddr *)&a, sizeof(a)),
				 sizeof(b));
		assert_int_equal(recv(to, r, sizeof(r), 0), sizeof(b));
	}
}

static uint64_t pkts_of(struct ice_host *h, const char *local, const char *remote, uint32_t qpn,
			int dir)
{
	struct ice_flow_key k = {.qpn = qpn, .dir = dir};
	struct ice_flow_stats s;

	inet_pton(AF_INET, local, &k.local_ip);
	inet_pton(AF_INET, remote, &k.remote_ip);
	if (flow_get(h, &k, &s) != 0)
		return 0;
	assert_int_equal(s.data_bytes, 64 * s.data_pkts);
	assert_int_equal(s.bytes, (20 + 8 + 80) * s.pkts);
	return s.pkts;
}

#define L_IP "10.77.0.1"
#define P_IP "10.77.0.2"

/* Programs in the TCX chain of ifindex, direction d (0 ingress, 1 egress). */
static int tcx_count(int d)
{
	__u32 ids[8], cnt = 8;
	DECLARE_LIBBPF_OPTS(bpf_prog_query_opts, q, .prog_ids = ids, .prog_cnt = cnt);

	if (bpf_prog_query_opts(if_h, (enum bpf_attach_type)(46 + d), &q) != 0)
		return -errno;
	return (int)q.prog_cnt;
}

static void test_attach_tcx(void **state)
{
	struct ice_host_attachment at[2];
	struct ice_host *h, *h2;
	uint32_t ids[2];
	uint32_t link_id[2];
	struct stat sb;
	char path[128];
	(void)state;

	h = ice_host_open(pin_dir, NULL);
	assert_non_null(h);
	assert_int_equal(ice_host_query(pin_dir, if_h, at), 0);
	assert_int_equal(ice_host_attach(h, if_h), 0);
	if (!ice_host_uses_tcx(h))
		fail_msg("TCX attach fell back to clsact on kernel with TCX");
	print_message("attach: TCX links\n");
	assert_int_equal(tcx_count(0), 1);
	assert_int_equal(tcx_count(1), 1);
	assert_int_equal(ice_host_query(pin_dir, if_h, at), 2);
	assert_int_equal(ice_host_prog_ids(h, ids), 0);
	for (int d = 0; d < 2; d++) {
		assert_true(at[d].present && at[d].tcx && at[d].pinned);
		assert_int_equal(at[d].prog_id, ids[d]);
		link_id[d] = at[d].link_id;
	}
	snprintf(path, sizeof(path), "%s/link_%d_egress", pin_dir, if_h);
	assert_int_equal(stat(path, &sb), 0);

	send_roce(sock_local, sock_peer, P_IP, 0x77, 1, 20);
	send_roce(sock_peer, sock_local, L_IP, 0x88, 1, 10);
	assert_int_equal(pkts_of(h, L_IP, P_IP, 0x77, ICE_DIR_EGRESS), 20);
	assert_int_equal(pkts_of(h, L_IP, P_IP, 0x88, ICE_DIR_INGRESS), 10);

	/* A restarted agent: close (links stay), reopen, attach: same links, new programs. */
	ice_host_close(h);
	assert_int_equal(ice_host_query(pin_dir, if_h, at), 2);
	send_roce(sock_local, sock_peer, P_IP, 0x77, 21, 5); /* counted while no agent runs */
	h2 = ice_host_open(pin_dir, NULL);
	assert_non_null(h2);
	assert_int_equal(pkts_of(h2, L_IP, P_IP, 0x77, ICE_DIR_EGRESS), 25); /* maps reused */
	assert_int_equal(ice_host_attach(h2, if_h), 0);
	assert_true(ice_host_uses_tcx(h2));
	assert_int_equal(tcx_count(0), 1);
	assert_int_equal(tcx_count(1), 1);
	assert_int_equal(ice_host_prog_ids(h2, ids), 0);
	assert_int_equal(ice_host_query(pin_dir, if_h, at), 2);
	for (int d = 0; d < 2; d++) {
		assert_int_equal(at[d].link_id, link_id[d]);
		assert_int_equal(at[d].prog_id, ids[d]);
	}
	/* Attaching twice from one handle is a replace too. */
	assert_int_equal(ice_host_attach(h2, if_h), 0);
	assert_int_equal(tcx_count(1), 1);
	send_roce(sock_local, sock_peer, P_IP, 0x77, 26, 20);
	send_roce(sock_peer, sock_local, L_IP, 0x88, 11, 10);
	assert_int_equal(pkts_of(h2, L_IP, P_IP, 0x77, ICE_DIR_EGRESS), 45);
	assert_int_equal(pkts_of(h2, L_IP, P_IP, 0x88, ICE_DIR_INGRESS), 20);

	/* Detach: nothing attached, nothing counted, the maps keep their counts. */
	assert_int_equal(ice_host_detach(h2, if_h), 0);
	assert_int_equal(ice_host_query(pin_dir, if_h, at), 0);
	assert_int_equal(tcx_count(1), 0);
	assert_int_not_equal(stat(path, &sb), 0);
	send_roce(sock_local, sock_peer, P_IP, 0x77, 46, 5);
	assert_int_equal(pkts_of(h2, L_IP, P_IP, 0x77, ICE_DIR_EGRESS), 45);

	/* Attach again, close, unpin: links and maps gone, the dir too. */
	assert_int_equal(ice_host_attach(h2, if_h), 0);
	ice_host_close(h2);
	assert_int_equal(ice_host_query(pin_dir, if_h, at), 2);
	assert_int_equal(ice_host_unpin(pin_dir), 0);
	assert_int_equal(ice_host_query(pin_dir, if_h, at), 0);
	assert_int_equal(tcx_count(0), 0);
	assert_int_equal(tcx_count(1), 0);
	assert_int_not_equal(stat(pin_dir, &sb), 0);
}

static int tc_filters(const char *dir)
{
	char cmd[160], line[256];
	int n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "tc filter show dev iceHa %s 2>/dev/null", dir);
	f = popen(cmd, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		n += strstr(line, "ice_host_") != NULL;
	pclose(f);
	return n;
}

static void test_attach_clsact(void **state)
{
	struct ice_host_opts o = {.force_clsact = true};
	struct ice_host_attachment at[2];
	struct ice_host *h, *h2;
	uint32_t ids[2];
	(void)state;

	h = ice_host_open(pin_dir2, &o);
	assert_non_null(h);
	assert_int_equal(ice_host_attach(h, if_h), 0);
	assert_false(ice_host_uses_tcx(h));
	assert_int_equal(tc_filters("ingress"), 1);
	assert_int_equal(tc_filters("egress"), 1);
	assert_int_equal(ice_host_query(pin_dir2, if_h, at), 2);
	assert_false(at[0].tcx);
	send_roce(sock_local, sock_peer, P_IP, 0x99, 1, 10);
	send_roce(sock_peer, sock_local, L_IP, 0x9a, 1, 10);
	assert_int_equal(pkts_of(h, L_IP, P_IP, 0x99, ICE_DIR_EGRESS), 10);
	assert_int_equal(pkts_of(h, L_IP, P_IP, 0x9a, ICE_DIR_INGRESS), 10);

	/* A restarted agent replaces the filters (fixed handle/prio). */
	ice_host_close(h);
	h2 = ice_host_open(pin_dir2, &o);
	assert_non_null(h2);
	assert_int_equal(ice_host_attach(h2, if_h), 0);
	assert_int_equal(tc_filters("ingress"), 1);
	assert_int_equal(tc_filters("egress"), 1);
	assert_int_equal(ice_host_prog_ids(h2, ids), 0);
	assert_int_equal(ice_host_query(pin_dir2, if_h, at), 2);
	assert_int_equal(at[1].prog_id, ids[1]);
	send_roce(sock_local, sock_peer, P_IP, 0x99, 11, 10);
	assert_int_equal(pkts_of(h2, L_IP, P_IP, 0x99, ICE_DIR_EGRESS), 20);

	/* Moving to TCX removes the clsact filters (no double count). */
	{
		struct ice_host *h3 = ice_host_open(pin_dir2, NULL);

		assert_non_null(h3);
		assert_int_equal(ice_host_attach(h3, if_h), 0);
		assert_true(ice_host_uses_tcx(h3));
		assert_int_equal(tc_filters("egress"), 0);
		send_roce(sock_local, sock_peer, P_IP, 0x99, 21, 10);
		assert_int_equal(pkts_of(h3, L_IP, P_IP, 0x99, ICE_DIR_EGRESS), 30);
		assert_int_equal(ice_host_detach(h3, if_h), 0);
		ice_host_close(h3);
	}
	assert_int_equal(ice_host_attach(h2, if_h), 0); /* clsact again */
	assert_int_equal(ice_host_detach(h2, if_h), 0);
	assert_int_equal(tc_filters("ingress"), 0);
	assert_int_equal(tc_filters("egress"), 0);
	send_roce(sock_local, sock_peer, P_IP, 0x99, 31, 5);
	assert_int_equal(pkts_of(h2, L_IP, P_IP, 0x99, ICE_DIR_EGRESS), 30);

	/* unpin finds clsact filters left behind by a closed handle. */
	assert_int_equal(ice_host_attach(h2, if_h), 0);
	ice_host_close(h2);
	assert_int_equal(tc_filters("egress"), 1);
	assert_int_equal(ice_host_unpin(pin_dir2), 0);
	assert_int_equal(tc_filters("ingress"), 0);
	assert_int_equal(tc_filters("egress"), 0);
	assert_int_equal(ice_host_query(pin_dir2, if_h, at), 0);
}

/* A pinned link whose interface was deleted and recreated: replaced, not fatal. */
static void test_attach_stale_link(void **state)
{
	struct ice_host_attachment at[2];
	struct ice_host *h;
	char cmd[192];
	int ifc;
	(void)state;

	assert_int_equal(system("ip link add iceHc type veth peer name iceHd && "
				"ip link set iceHc up && ip link set iceHd up"),
			 0);
	ifc = if_nametoindex("iceHc");
	h = ice_host_open(pin_dir, NULL);
	assert_non_null(h);
	assert_int_equal(ice_host_attach(h, ifc), 0);
	ice_host_close(h);
	/* The same ifindex again: the pin's path names it, its link is defunct. */
	snprintf(cmd, sizeof(cmd),
		 "ip link del iceHc && ip link add iceHc index %d type veth peer name iceHd && "
		 "ip link set iceHc up",
		 ifc);
	assert_int_equal(system(cmd), 0);
	ifc = if_nametoindex("iceHc");
	assert_int_equal(ice_host_query(pin_dir, ifc, at), 0);
	h = ice_host_open(pin_dir, NULL);
	assert_non_null(h);
	/* The old pins are stale (ENOLINK on update): replaced by new links. */
	assert_int_equal(ice_host_attach(h, ifc), 0);
	assert_int_equal(ice_host_query(pin_dir, ifc, at), 2);
	assert_true(at[0].pinned && at[1].pinned);
	ice_host_close(h);
	assert_int_equal(ice_host_unpin(pin_dir), 0);
	assert_int_equal(ice_host_query(pin_dir, ifc, at), 0);
	assert_int_equal(system("ip link del iceHc"), 0);
}

/* --- setup ---------------------------------------------------------------------- */

static void cleanup(void)
{
	char cmd[128];

	if (hf) {
		ice_host_close(hf);
		hf = NULL;
	}
	if (sock_local >= 0)
		close(sock_local);
	if (sock_peer >= 0)
		close(sock_peer);
	sock_local = sock_peer = -1;
	if (pin_dir[0])
		ice_host_unpin(pin_dir);
	if (pin_dir2[0])
		ice_host_unpin(pin_dir2);
	if (peer_made) {
		snprintf(cmd, sizeof(cmd), "ip netns del %s 2>/dev/null", peer_ns);
		if (system(cmd) != 0)
			fprintf(stderr, "test_ebpf_host: could not delete netns %s\n", peer_ns);
		peer_made = 0;
	}
	if (ns_made) {
		snprintf(cmd, sizeof(cmd), "ip netns del %s 2>/dev/null", ns_name);
		if (system(cmd) != 0)
			fprintf(stderr, "test_ebpf_host: could not delete netns %s\n", ns_name);
		ns_made = 0;
	}
}

static void on_signal(int sig)
{
	cleanup();
	_exit(128 + sig);
}

static int skip_test(const char *why)
{
	printf("SKIP test_ebpf_host: %s\n", why);
	cleanup();
	return SKIP;
}

static int open_ns(const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures),	cmocka_unit_test(test_directions),
		cmocka_unit_test(test_truncated),	cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_sampling),	cmocka_unit_test(test_roce_port),
		cmocka_unit_test(test_new_flow_events), cmocka_unit_test(test_attach_tcx),
		cmocka_unit_test(test_attach_clsact),	cmocka_unit_test(test_attach_stale_link),
	};
	char cmd[512];
	cpu_set_t cpus;
	int rc, cpu;

	if (geteuid() != 0)
		return skip_test("needs root (network namespaces, BPF)");
	/* Per-CPU counters and the sampler: stay on one CPU. */
	cpu = sched_getcpu();
	CPU_ZERO(&cpus);
	CPU_SET(cpu < 0 ? 0 : cpu, &cpus);
	sched_setaffinity(0, sizeof(cpus), &cpus);

	snprintf(ns_name, sizeof(ns_name), "iceHT%d", (int)getpid());
	snprintf(peer_ns, sizeof(peer_ns), "%sp", ns_name);
	snprintf(pin_dir, sizeof(pin_dir), "/sys/fs/bpf/%s", ns_name);
	snprintf(pin_dir2, sizeof(pin_dir2), "/sys/fs/bpf/%sc", ns_name);
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, on_signal);

	snprintf(cmd, sizeof(cmd), "ip netns add %s", ns_name);
	if (system(cmd) != 0)
		return skip_test("cannot create a network namespace (ip netns add)");
	ns_made = 1;
	snprintf(cmd, sizeof(cmd), "ip netns add %s", peer_ns);
	if (system(cmd) != 0)
		return skip_test("cannot create a second network namespace");
	peer_made = 1;
	ns_fd = open_ns(ns_name);
	peer_fd = open_ns(peer_ns);
	if (ns_fd < 0 || peer_fd < 0 || setns(ns_fd, CLONE_NEWNET) != 0)
		return skip_test("cannot enter the test namespace");
	snprintf(cmd, sizeof(cmd),
		 "ip link set lo up && ip link add iceHa type veth peer name iceHb netns %s && "
		 "ip addr add " L_IP "/24 dev iceHa && ip link set iceHa up && "
		 "ip -n %s link set lo up && ip -n %s addr add " P_IP "/24 dev iceHb && "
		 "ip -n %s link set iceHb up",
		 peer_ns, peer_ns, peer_ns, peer_ns);
	if (system(cmd) != 0)
		return skip_test("cannot create the veth pair");
	if_h = if_nametoindex("iceHa");
	if (if_h == 0)
		return skip_test("veth iceHa not visible");
	sock_local = udp_socket(-1, L_IP);
	sock_peer = udp_socket(peer_fd, P_IP);
	if (sock_local < 0 || sock_peer < 0)
		return skip_test("cannot open UDP sockets on port 4791 in the namespaces");

	ice_log_init_env();
	ice_host_unpin(pin_dir);
	ice_host_unpin(pin_dir2);
	hf = ice_host_open(NULL, NULL);
	if (hf == NULL) {
		snprintf(cmd, sizeof(cmd), "BPF unavailable: loading the host programs: %s",
			 strerror(errno));
		return skip_test(cmd);
	}

	rc = cmocka_run_group_tests(tests, NULL, NULL);
	cleanup();
	return rc;
}
