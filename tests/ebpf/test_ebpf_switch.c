// SPDX-License-Identifier: Apache-2.0
/*
 * The switch port programs (ebpf/ice_switch.bpf.c) run on packet fixtures
 * through bpf_prog_test_run_opts(), katran style: each fixture names what it
 * checks, the packet, the port's profile and queue, and the expected verdict,
 * ECN bits and counters.
 *
 * Runs in a throwaway namespace iceBPF<pid> with two veth pairs, so the
 * programs see real ifindexes (test_run binds the skb to ctx.ifindex) and are
 * also really attached with tc; maps are pinned under /sys/fs/bpf/iceBPF<pid>
 * and read back through ice_sw_counters() as ice-fabric stats would. Both
 * are removed at the end, also on failure.
 *
 * ECMP: test_run returns the program's verdict (TC_ACT_REDIRECT) but does
 * not perform the redirect; the chosen member is read from the per-member
 * counters (ice_sw_ecmp_hits) and compared with topo_hash_pick() computed
 * here, for 64 source ports under every hash model.
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
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>

#include "ice_log.h"
#include "ice_switch_loader.h"

#define SKIP 77

static char ns_name[32];
static char pin_dir[64];
static int ns_made;
static struct ice_sw *sw;
static int if_a, if_c; /* two ports: iceA (peer iceB), iceC (peer iceD) */
static uint8_t mac_a[ETH_ALEN];

/* --- packets -------------------------------------------------------------- */

struct pkt_spec {
	uint16_t ethertype; /* 0 = IPv4 */
	uint8_t proto;	    /* IPPROTO_UDP when 0 */
	const char *src, *dst;
	uint16_t sport, dport;
	uint8_t tos; /* IPv4 TOS or IPv6 traffic class */
	uint8_t ttl; /* 64 when 0 */
	uint16_t payload;
};

static uint16_t csum16(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)b[i] << 8 | b[i + 1];
	if (len & 1)
		s += (uint32_t)b[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Build an Ethernet frame into buf; returns its length. */
static size_t pkt_build(uint8_t *buf, size_t size, const struct pkt_spec *s)
{
	struct ethhdr *eth = (void *)buf;
	uint16_t et = s->ethertype ? s->ethertype : ETH_P_IP;
	size_t l4 = 8 + s->payload, len;

	memset(buf, 0, size);
	memcpy(eth->h_dest, mac_a, ETH_ALEN);
	memcpy(eth->h_source, "\x02\x00\x00\x00\x00\x01", ETH_ALEN);
	eth->h_proto = htons(et);
	if (et == ETH_P_IP) {
		struct iphdr *ip = (void *)(eth + 1);
		uint16_t *ports = (void *)(ip + 1);

		len = sizeof(*eth) + sizeof(*ip) + l4;
		assert_true(len <= size);
		ip->version = 4;
		ip->ihl = 5;
		ip->tos = s->tos;
		ip->tot_len = htons(sizeof(*ip) + l4);
		ip->id = htons(1);
		ip->ttl = s->ttl ? s->ttl : 64;
		ip->protocol = s->proto ? s->proto : IPPROTO_UDP;
		inet_pton(AF_INET, s->src ? s->src : "10.1.0.5", &ip->saddr);
		inet_pton(AF_INET, s->dst ? s->dst : "10.2.0.7", &ip->daddr);
		ip->check = htons(csum16(ip, sizeof(*ip)));
		ports[0] = htons(s->sport);
		ports[1] = htons(s->dport);
		ports[2] = htons(l4);
		return len;
	}
	if (et == ETH_P_IPV6) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		len = sizeof(*eth) + sizeof(*ip6) + l4;
		assert_true(len <= size);
		ip6->version = 6;
		ip6->priority = s->tos >> 4;
		ip6->flow_lbl[0] = (s->tos & 0xf) << 4;
		ip6->payload_len = htons(l4);
		ip6->nexthdr = IPPROTO_UDP;
		ip6->hop_limit = 64;
		inet_pton(AF_INET6, "fd00::1", &ip6->saddr);
		inet_pton(AF_INET6, "fd00::2", &ip6->daddr);
		return len;
	}
	/* ARP-sized filler for anything else. */
	return sizeof(*eth) + 28;
}

static int pkt_ecn(const uint8_t *buf)
{
	const struct ethhdr *eth = (const void *)buf;

	if (eth->h_proto == htons(ETH_P_IP))
		return ((const struct iphdr *)(eth + 1))->tos & 3;
	return (buf[sizeof(*eth) + 1] >> 4) & 3;
}

static int ip_csum_ok(const uint8_t *buf)
{
	return csum16(buf + sizeof(struct ethhdr), sizeof(struct iphdr)) == 0;
}

/* Run prog once on pkt bound to ifindex; returns the verdict, output in out. */
static int run_prog(int prog_fd, int ifindex, const uint8_t *pkt, size_t len, uint8_t *out,
		    size_t out_size)
{
	struct __sk_buff ctx = {.ifindex = ifindex};
	DECLARE_LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = len,
			    .data_out = out, .data_size_out = out_size, .ctx_in = &ctx,
			    .ctx_size_in = sizeof(ctx), .repeat = 1);
	int err = bpf_prog_test_run_opts(prog_fd, &o);

	if (err)
		fail_msg("bpf_prog_test_run_opts: %s", strerror(-err));
	return (int)o.retval;
}

/* --- egress model fixtures ------------------------------------------------ */

#define T0 1000000000000ull /* the pinned clock, ns */

struct egress_fixture {
	const char *desc;
	struct ice_port_cfg cfg;
	uint64_t depth; /* queue before the packet, as of T0 */
	uint64_t dt;	/* the packet arrives at T0 + dt */
	struct pkt_spec pkt;
	int verdict;
	int ecn_out; /* -1: not checked */
	struct ice_port_counters want;
	int check_depth; /* compare want.depth */
};

#define RED_CFG .kmin = 10000, .kmax = 20000, .pmax = 200000
#define ECT0	2
#define ECT1	1
#define CE	3

static const struct egress_fixture egress_fixtures[] = {
	{"ECT(0) below Kmin is not marked",
	 {.rate_bps = 100000000, .buffer = 100000, RED_CFG},
	 5000,
	 0,
	 {.tos = ECT0, .payload = 1000},
	 TC_ACT_OK,
	 ECT0,
	 {.packets = 1},
	 0},
	{"ECT(1) above Kmax is set to CE, IP checksum still valid",
	 {.rate_bps = 100000000, .buffer = 100000, RED_CFG},
	 30000,
	 0,
	 {.tos = ECT1 | 0xb8, .payload = 1000},
	 TC_ACT_OK,
	 CE,
	 {.packets = 1, .ce_marked = 1},
	 0},
	{"ECT(0) IPv6 above Kmax is set to CE",
	 {.rate_bps = 100000000, .buffer = 100000, RED_CFG},
	 30000,
	 0,
	 {.ethertype = ETH_P_IPV6, .tos = ECT0, .payload = 500},
	 TC_ACT_OK,
	 CE,
	 {.packets = 1, .ce_marked = 1},
	 0},
	{"Non-ECT above Kmax is neither marked nor dropped",
	 {.rate_bps = 100000000, .buffer = 100000, RED_CFG},
	 30000,
	 0,
	 {.tos = 0, .payload = 1000},
	 TC_ACT_OK,
	 0,
	 {.packets = 1},
	 0},
	{"Non-ECT above Kmax with WRED drop is dropped",
	 {.rate_bps = 100000000, .buffer = 100000, RED_CFG, .flags = ICE_PORT_F_WRED_DROP},
	 30000,
	 0,
	 {.tos = 0, .payload = 1000},
	 TC_ACT_SHOT,
	 -1,
	 {.wred_drops = 1, .depth = 30000},
	 1},
	{"CE above Kmax stays CE and is not counted again",
	 {.rate_bps = 100000000, .buffer = 100000, RED_CFG, .flags = ICE_PORT_F_WRED_DROP},
	 30000,
	 0,
	 {.tos = CE, .payload = 1000},
	 TC_ACT_OK,
	 CE,
	 {.packets = 1},
	 0},
	{"depth + len > buffer is tail-dropped, depth unchanged",
	 {.rate_bps = 100000000, .buffer = 30000, RED_CFG},
	 29500,
	 0,
	 {.tos = ECT0, .payload = 1000},
	 TC_ACT_SHOT,
	 -1,
	 {.drops = 1, .depth = 29500},
	 1},
	{"a packet that fits exactly is queued",
	 {.rate_bps = 100000000, .buffer = 30000},
	 30000 - 1042,
	 0,
	 {.tos = ECT0, .payload = 1000},
	 TC_ACT_OK,
	 ECT0,
	 {.packets = 1, .bytes = 1042, .depth = 30000},
	 1},
	{"loss_ppm = 1e6 drops the packet",
	 {.rate_bps = 100000000, .buffer = 100000, .loss_ppm = 1000000},
	 0,
	 0,
	 {.payload = 100},
	 TC_ACT_SHOT,
	 -1,
	 {.injected_drops = 1},
	 1},
	{"the queue drains at the rate: 8 Gbit/s = 1 byte/ns, 5000 ns later",
	 {.rate_bps = 8000000000ull, .buffer = 100000},
	 10000,
	 5000,
	 {.payload = 958},
	 TC_ACT_OK,
	 0,
	 {.packets = 1, .bytes = 1000, .depth = 5000 + 1000},
	 1},
	{"a drained queue is empty, not negative",
	 {.rate_bps = 8000000000ull, .buffer = 100000, RED_CFG},
	 30000,
	 1000000,
	 {.tos = ECT0, .payload = 958},
	 TC_ACT_OK,
	 ECT0,
	 {.packets = 1, .bytes = 1000, .depth = 1000},
	 1},
	{"infinite rate (0): no queue forms, everything counted",
	 {.rate_bps = 0, .buffer = 2000, RED_CFG},
	 0,
	 0,
	 {.tos = ECT0, .payload = 1400},
	 TC_ACT_OK,
	 ECT0,
	 {.packets = 1, .bytes = 1442, .depth = 0},
	 1},
};

static void check_counters(const char *desc, const struct ice_port_counters *got,
			   const struct ice_port_counters *want, int check_depth)
{
#define CHK(f)                                                                                     \
	if (got->f != want->f)                                                                     \
	fail_msg("%s: " #f " %llu, want %llu", desc, (unsigned long long)got->f,                   \
		 (unsigned long long)want->f)
	CHK(packets);
	CHK(ce_marked);
	CHK(drops);
	CHK(wred_drops);
	CHK(injected_drops);
	if (want->bytes)
		CHK(bytes);
	if (check_depth)
		CHK(depth);
#undef CHK
}

static void test_egress_fixtures(void **state)
{
	uint8_t pkt[2048], out[2048];

	for (size_t i = 0; i < sizeof(egress_fixtures) / sizeof(egress_fixtures[0]); i++) {
		const struct egress_fixture *f = &egress_fixtures[i];
		struct ice_port_stats st;
		size_t len = pkt_build(pkt, sizeof(pkt), &f->pkt);
		int v;

		assert_int_equal(ice_sw_port_config(sw, if_a, &f->cfg), 0);
		assert_int_equal(ice_sw_port_reset(sw, if_a, f->depth, T0), 0);
		ice_sw_test_clock(sw, T0 + f->dt);
		v = run_prog(ice_sw_egress_fd(sw), if_a, pkt, len, out, sizeof(out));
		if (v != f->verdict)
			fail_msg("%s: verdict %d, want %d", f->desc, v, f->verdict);
		if (f->ecn_out >= 0 && pkt_ecn(out) != f->ecn_out)
			fail_msg("%s: ECN %d, want %d", f->desc, pkt_ecn(out), f->ecn_out);
		if (v == TC_ACT_OK && f->pkt.ethertype == 0 && !ip_csum_ok(out))
			fail_msg("%s: IP checksum wrong after the program", f->desc);
		if (v == TC_ACT_OK && f->pkt.ethertype == 0 && ((pkt[15] & ~3) != (out[15] & ~3)))
			fail_msg("%s: DSCP bits changed", f->desc);
		assert_int_equal(ice_sw_counters(pin_dir, if_a, &st), 0);
		check_counters(f->desc, &st.c, &f->want, f->check_depth);
		print_message("ok  %s\n", f->desc);
	}
	ice_sw_test_clock(sw, 0);
}

/* In the RED band the mark fraction follows the linear ramp: at the middle, pmax / 2. */
static void test_egress_red_ramp(void **state)
{
	struct ice_port_cfg cfg = {.buffer = 1000000, .kmin = 10000, .kmax = 20000, .pmax = 400000};
	struct pkt_spec ps = {.tos = ECT0, .payload = 100};
	uint8_t pkt[2048], out[2048];
	size_t len = pkt_build(pkt, sizeof(pkt), &ps);
	int marked = 0, n = 4000;

	/* rate 0: no queue grows, so every packet finds the preset depth. */
	assert_int_equal(ice_sw_port_config(sw, if_a, &cfg), 0);
	assert_int_equal(ice_sw_port_reset(sw, if_a, 15000, T0), 0);
	ice_sw_test_clock(sw, T0);
	for (int i = 0; i < n; i++) {
		assert_int_equal(run_prog(ice_sw_egress_fd(sw), if_a, pkt, len, out, sizeof(out)),
				 TC_ACT_OK);
		marked += pkt_ecn(out) == CE;
	}
	ice_sw_test_clock(sw, 0);
	print_message("RED at the middle of [Kmin, Kmax], pmax 0.4: %d of %d marked (%.3f)\n",
		      marked, n, (double)marked / n);
	/* Binomial(4000, 0.2): mean 800, sd 25; allow 6 sd. */
	assert_in_range(marked, 650, 950);
}

/* A peak window: after ice_sw_peak_reset the peak is the depth from then on,
 * not the earlier burst; counters are untouched. The depth's time integral
 * (depth_area) follows the drain: a trapezoid between two packets. The
 * pinned clock is ahead of the real one, so reading adds no idle drain. */
static void test_egress_peak_reset(void **state)
{
	struct ice_port_cfg cfg = {.rate_bps = 8000000, .buffer = 1000000}; /* 1 byte/us */
	struct pkt_spec ps = {.payload = 958};				    /* 1000 B */
	uint8_t pkt[2048], out[2048];
	size_t len = pkt_build(pkt, sizeof(pkt), &ps);
	struct ice_port_stats st;
	struct timespec ts;
	uint64_t t, q0 = 20 * len;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + 100000000000ull;
	assert_int_equal(ice_sw_port_config(sw, if_a, &cfg), 0);
	assert_int_equal(ice_sw_port_reset(sw, if_a, 0, t), 0);
	ice_sw_test_clock(sw, t);
	for (int i = 0; i < 20; i++) /* a burst: 20 packets queued at once */
		run_prog(ice_sw_egress_fd(sw), if_a, pkt, len, out, sizeof(out));
	assert_int_equal(ice_sw_counters(pin_dir, if_a, &st), 0);
	assert_int_equal(st.c.peak_depth, q0);
	assert_int_equal(st.c.depth_area, 0);
	assert_int_equal(ice_sw_peak_reset(pin_dir), 0);
	/* before the next packet: the new window's peak is the depth now */
	assert_int_equal(ice_sw_counters(pin_dir, if_a, &st), 0);
	assert_int_equal(st.c.peak_depth, q0);
	assert_int_equal(st.c.packets, 20);
	/* 15 ms later the queue has drained 15000 B: one packet finds the rest */
	ice_sw_test_clock(sw, t + 15 * 1000 * 1000);
	run_prog(ice_sw_egress_fd(sw), if_a, pkt, len, out, sizeof(out));
	ice_sw_test_clock(sw, 0);
	assert_int_equal(ice_sw_counters(pin_dir, if_a, &st), 0);
	assert_int_equal(st.c.peak_depth, q0 - 15000 + len);
	assert_int_equal(st.c.packets, 21);
	assert_int_equal(st.c.depth_area, (2 * q0 - 15000) * 15000000ull / 2);
	print_message("mean depth over the 15 ms: %llu B\n",
		      (unsigned long long)(st.c.depth_area / 15000000ull));
	assert_int_equal(ice_sw_peak_reset("/sys/fs/bpf/ice-no-such-switch"), -ENOENT);
}

/* loss_ppm = 1e6 drops every packet; 0.25 drops about a quarter. */
static void test_egress_loss(void **state)
{
	struct ice_port_cfg cfg = {.loss_ppm = 1000000};
	struct pkt_spec ps = {.payload = 100};
	uint8_t pkt[2048], out[2048];
	size_t len = pkt_build(pkt, sizeof(pkt), &ps);
	struct ice_port_stats st;
	int dropped = 0;

	assert_int_equal(ice_sw_port_config(sw, if_a, &cfg), 0);
	assert_int_equal(ice_sw_port_reset(sw, if_a, 0, 0), 0);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(run_prog(ice_sw_egress_fd(sw), if_a, pkt, len, out, sizeof(out)),
				 TC_ACT_SHOT);
	assert_int_equal(ice_sw_counters(pin_dir, if_a, &st), 0);
	assert_int_equal(st.c.injected_drops, 1000);
	assert_int_equal(st.c.packets, 0);

	cfg.loss_ppm = 250000;
	assert_int_equal(ice_sw_port_config(sw, if_a, &cfg), 0);
	for (int i = 0; i < 4000; i++)
		dropped += run_prog(ice_sw_egress_fd(sw), if_a, pkt, len, out, sizeof(out)) ==
			   TC_ACT_SHOT;
	print_message("loss_ppm 250000: %d of 4000 dropped\n", dropped);
	assert_in_range(dropped, 1000 - 170, 1000 + 170);
}

/* A reader that keeps the maps open reads what ice_sw_counters() reads, and
 * says when the pins are no longer its maps. */
static void test_reader(void **state)
{
	struct ice_port_cfg cfg = {.rate_bps = 0};
	struct pkt_spec ps = {.payload = 100};
	uint8_t pkt[2048], out[2048];
	size_t len = pkt_build(pkt, sizeof(pkt), &ps);
	struct ice_port_stats a, b;
	struct ice_sw_reader *r;

	assert_int_equal(ice_sw_port_config(sw, if_a, &cfg), 0);
	assert_int_equal(ice_sw_port_reset(sw, if_a, 0, 0), 0);
	for (int i = 0; i < 3; i++)
		run_prog(ice_sw_egress_fd(sw), if_a, pkt, len, out, sizeof(out));
	r = ice_sw_reader_open(pin_dir);
	assert_non_null(r);
	assert_true(ice_sw_reader_id(r) != 0);
	assert_false(ice_sw_reader_stale(r));
	assert_int_equal(ice_sw_reader_port(r, if_a, 0, &a), 0);
	assert_int_equal(ice_sw_counters(pin_dir, if_a, &b), 0);
	assert_int_equal(a.c.packets, 3);
	assert_int_equal(a.c.bytes, 3 * len);
	assert_int_equal(b.c.bytes, a.c.bytes);
	assert_int_equal(ice_sw_reader_port(r, 999999, 0, &a), -ENOENT);
	ice_sw_reader_close(r);
	assert_null(ice_sw_reader_open("/sys/fs/bpf/ice-no-such-switch"));
	assert_int_equal(errno, ENOENT);
}

/* The real clock: a queue preset at "now" is smaller after a sleep. */
static void test_egress_drain_real_clock(void **state)
{
	struct ice_port_cfg cfg = {.rate_bps = 80000000, .buffer = 1000000}; /* 10 bytes/us */
	struct pkt_spec ps = {.payload = 58};				     /* 100 bytes */
	uint8_t pkt[2048], out[2048];
	size_t len = pkt_build(pkt, sizeof(pkt), &ps);
	struct ice_port_stats st;
	struct timespec ts;

	ice_sw_test_clock(sw, 0);
	assert_int_equal(ice_sw_port_config(sw, if_a, &cfg), 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	assert_int_equal(ice_sw_port_reset(sw, if_a, 200000,
					   (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec),
			 0);
	usleep(5000); /* >= 50000 bytes drained */
	assert_int_equal(run_prog(ice_sw_egress_fd(sw), if_a, pkt, len, out, sizeof(out)),
			 TC_ACT_OK);
	assert_int_equal(ice_sw_counters(pin_dir, if_a, &st), 0);
	print_message("after 5 ms at 80 Mbit/s: depth %llu (was 200000, +100), now %llu\n",
		      (unsigned long long)st.c.depth, (unsigned long long)st.depth_now);
	assert_true(st.c.depth <= 200000 - 50000 + 100);
	assert_true(st.c.depth > 0);
	assert_true(st.depth_now <= st.c.depth);
	assert_int_equal(st.c.peak_depth, 200000);
}

/* --- ECMP --------------------------------------------------------------------- */

static struct in_addr ip4(const char *s)
{
	struct in_addr a;

	inet_pton(AF_INET, s, &a);
	return a;
}

static const char *const alg_names[] = {"crc32",      "crc32c", "crc16",
					"crc16-ansi", "xor",	"toeplitz"};

/* Which member took the packet: the one whose counter moved by one. */
static int member_taken(const char *prefix, int plen, const uint64_t before[], uint64_t after[])
{
	int n = ice_sw_ecmp_hits(pin_dir, ip4(prefix), plen, after), who = -1;

	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		if (after[i] == before[i] + 1) {
			assert_int_equal(who, -1);
			who = i;
		} else {
			assert_int_equal(after[i], before[i]);
		}
	}
	return who;
}

static void ecmp_setup_routes(void)
{
	struct ice_ecmp_member two[2] = {{if_a, ip4("10.0.0.2").s_addr, 0},
					 {if_c, ip4("10.0.1.2").s_addr, 0}};
	struct ice_ecmp_member four[4] = {{if_a, ip4("10.0.0.2").s_addr, 0},
					  {if_c, ip4("10.0.1.2").s_addr, 0},
					  {if_a, ip4("10.0.0.3").s_addr, 0},
					  {if_c, ip4("10.0.1.3").s_addr, 0}};

	assert_int_equal(ice_sw_ecmp_set(sw, ip4("10.2.0.0"), 16, two, 2), 0);
	assert_int_equal(ice_sw_ecmp_set(sw, ip4("10.3.0.0"), 16, four, 4), 0);
	assert_int_equal(ice_sw_ecmp_set(sw, ip4("10.4.0.0"), 16, two, 1), 0);
	assert_int_equal(ice_sw_ecmp_set(sw, ip4("10.2.9.9"), 32, NULL, 0), 0); /* local */
}

/* The 5-tuple of a packet built by pkt_build(), as topo's hash takes it. */
static struct topo_5tuple pkt_tuple(const uint8_t *pkt, const struct pkt_spec *ps)
{
	const struct iphdr *ip = (const void *)(pkt + ETH_HLEN);

	return (struct topo_5tuple){.saddr = ip->saddr,
				    .daddr = ip->daddr,
				    .sport = htons(ps->sport),
				    .dport = htons(ps->dport),
				    .proto = ip->protocol};
}

/* 64 source ports under every hash model: the program picks what topo predicts. */
static void test_ecmp_matches_topo(void **state)
{
	static const struct {
		const char *dst, *prefix;
		int plen, n;
	} groups[] = {{"10.2.0.7", "10.2.0.0", 16, 2}, {"10.3.1.1", "10.3.0.0", 16, 4}};
	uint8_t pkt[2048], out[2048];

	ecmp_setup_routes();
	for (int alg = 0; alg < TOPO_HASH_ALG_MAX; alg++) {
		struct topo_hash_cfg hc = {
			.alg = alg, .seed = 0x1234abcd, .fields = TOPO_HF_5TUPLE};

		assert_int_equal(ice_sw_hash_set(sw, &hc), 0);
		for (size_t g = 0; g < 2; g++) {
			int match = 0, spread[ICE_SW_MAX_MEMBERS] = {0};

			for (int i = 0; i < 64; i++) {
				struct pkt_spec ps = {.dst = groups[g].dst,
						      .sport = 49152 + 97 * i,
						      .dport = 4791,
						      .payload = 64,
						      .proto = i % 8 == 7 ? IPPROTO_TCP
									  : IPPROTO_UDP};
				uint64_t before[ICE_SW_MAX_MEMBERS], after[ICE_SW_MAX_MEMBERS];
				size_t len = pkt_build(pkt, sizeof(pkt), &ps);
				struct topo_5tuple t = pkt_tuple(pkt, &ps);
				int want = topo_hash_pick(&hc, &t, groups[g].n), got, v;

				assert_int_equal(ice_sw_ecmp_hits(pin_dir, ip4(groups[g].prefix),
								  groups[g].plen, before),
						 groups[g].n);
				v = run_prog(ice_sw_ingress_fd(sw), if_a, pkt, len, out,
					     sizeof(out));
				assert_int_equal(v, TC_ACT_REDIRECT);
				got = member_taken(groups[g].prefix, groups[g].plen, before, after);
				match += got == want;
				spread[got]++;
				/* TTL decremented, checksum fixed, the rest untouched. */
				assert_int_equal(out[ETH_HLEN + 8], 63);
				assert_true(ip_csum_ok(out));
				assert_memory_equal(out + ETH_HLEN + 12, pkt + ETH_HLEN + 12,
						    len - ETH_HLEN - 12);
			}
			print_message(
				"%-10s n=%d: %d/64 match topo_hash_pick; spread %d/%d/%d/%d\n",
				alg_names[alg], groups[g].n, match, spread[0], spread[1], spread[2],
				spread[3]);
			assert_int_equal(match, 64);
			assert_true(spread[0] > 0 && spread[1] > 0);
		}
	}
}

/* Field selection: hashing only the destination sends every port the same way. */
static void test_ecmp_fields(void **state)
{
	struct topo_hash_cfg hc = {.alg = TOPO_HASH_CRC32, .seed = 7, .fields = TOPO_HF_DST_IP};
	uint8_t pkt[2048], out[2048];
	int first = -1;

	ecmp_setup_routes();
	assert_int_equal(ice_sw_hash_set(sw, &hc), 0);
	for (int i = 0; i < 16; i++) {
		struct pkt_spec ps = {.dst = "10.3.1.1", .sport = 50000 + i, .dport = 4791};
		uint64_t before[ICE_SW_MAX_MEMBERS], after[ICE_SW_MAX_MEMBERS];
		size_t len = pkt_build(pkt, sizeof(pkt), &ps);
		int got;

		ice_sw_ecmp_hits(pin_dir, ip4("10.3.0.0"), 16, before);
		assert_int_equal(run_prog(ice_sw_ingress_fd(sw), if_a, pkt, len, out, sizeof(out)),
				 TC_ACT_REDIRECT);
		got = member_taken("10.3.0.0", 16, before, after);
		if (first < 0)
			first = got;
		assert_int_equal(got, first);
	}
}

/* One UDP packet to 10.3.1.1 from sport through the ingress program: the
 * member of 10.3/16 it took; *h its hash under hc. */
static int failover_send(const struct topo_hash_cfg *hc, uint16_t sport, uint32_t *h)
{
	struct pkt_spec ps = {.dst = "10.3.1.1", .sport = sport, .dport = 4791};
	uint64_t before[ICE_SW_MAX_MEMBERS], after[ICE_SW_MAX_MEMBERS];
	uint8_t pkt[2048], out[2048];
	size_t len = pkt_build(pkt, sizeof(pkt), &ps);
	struct topo_5tuple t = pkt_tuple(pkt, &ps);

	*h = topo_hash(hc, &t);
	assert_int_equal(ice_sw_ecmp_hits(pin_dir, ip4("10.3.0.0"), 16, before), 4);
	assert_int_equal(run_prog(ice_sw_ingress_fd(sw), if_a, pkt, len, out, sizeof(out)),
			 TC_ACT_REDIRECT);
	return member_taken("10.3.0.0", 16, before, after);
}

/* Fast failover: with port C's members down, a flow hashed onto one moves to
 * live member hash % live, every other flow stays; all down goes to the
 * kernel; up again restores the plain hash. */
static void test_ecmp_failover(void **state)
{
	struct topo_hash_cfg hc = {.alg = TOPO_HASH_CRC32, .seed = 99, .fields = TOPO_HF_5TUPLE};
	static const int live[2] = {0, 2}; /* 10.3/16's members on port A */
	uint64_t st0[ICE_SW_ST_MAX], st1[ICE_SW_ST_MAX];
	int moved = 0, stayed = 0;
	uint32_t h;

	ecmp_setup_routes();
	assert_int_equal(ice_sw_hash_set(sw, &hc), 0);
	/* 10.3/16's members on port C (1 and 3) out of use */
	assert_int_equal(ice_sw_ecmp_down(pin_dir, ip4("10.3.0.0"), 16, 0xa), 2);
	assert_int_equal(ice_sw_ecmp_down(pin_dir, ip4("10.3.0.0"), 16, 0xa), 0); /* already */
	for (int i = 0; i < 64; i++) {
		int got, plain, want;

		assert_int_equal(ice_sw_stats(pin_dir, st0), 0);
		got = failover_send(&hc, (uint16_t)(49152 + 131 * i), &h);
		assert_int_equal(ice_sw_stats(pin_dir, st1), 0);
		plain = (int)(h % 4);
		want = plain % 2 == 0 ? plain : live[h % 2];
		assert_int_equal(got, want);
		assert_int_equal(st1[ICE_SW_ST_FAILOVER] - st0[ICE_SW_ST_FAILOVER], want != plain);
		moved += want != plain;
		stayed += want == plain;
	}
	print_message("port C down: %d of 64 flows moved to port A, %d stayed\n", moved, stayed);
	assert_true(moved > 0 && stayed > 0);

	/* every member down: the kernel decides */
	{
		struct pkt_spec ps = {.dst = "10.3.1.1", .sport = 50000, .dport = 4791};
		uint8_t pkt[2048], out[2048];
		size_t len = pkt_build(pkt, sizeof(pkt), &ps);

		assert_int_equal(ice_sw_ecmp_down(pin_dir, ip4("10.3.0.0"), 16, 0xf), 2);
		assert_int_equal(ice_sw_stats(pin_dir, st0), 0);
		assert_int_equal(run_prog(ice_sw_ingress_fd(sw), if_a, pkt, len, out, sizeof(out)),
				 TC_ACT_OK);
		assert_int_equal(ice_sw_stats(pin_dir, st1), 0);
		assert_int_equal(st1[ICE_SW_ST_ALL_DOWN], st0[ICE_SW_ST_ALL_DOWN] + 1);
	}
	assert_int_equal(ice_sw_ecmp_down(pin_dir, ip4("10.3.0.0"), 16, 0), 4);
	for (int i = 0; i < 16; i++) {
		int got = failover_send(&hc, (uint16_t)(49152 + 131 * i), &h);

		assert_int_equal(got, (int)(h % 4));
	}
	assert_int_equal(ice_sw_ecmp_down(pin_dir, ip4("10.9.0.0"), 16, 1), -ENOENT);
	assert_int_equal(ice_sw_ecmp_down("/sys/fs/bpf/ice-no-such-switch", ip4("10.3.0.0"), 16, 1),
			 -ENOENT);
}

/* A live seed change through the pinned map (ice-fabric hash): the model
 * reads back, and the next packets follow the new seed, not the old one. */
static void test_ecmp_hash_update(void **state)
{
	struct topo_hash_cfg old = {.alg = TOPO_HASH_CRC32, .seed = 99, .fields = TOPO_HF_5TUPLE};
	struct topo_hash_cfg neu = old, got, bad = old;
	int moved = 0;
	uint32_t h;

	ecmp_setup_routes();
	assert_int_equal(ice_sw_hash_set(sw, &old), 0);
	assert_int_equal(ice_sw_hash_get(pin_dir, &got), 0);
	assert_memory_equal(&got, &old, sizeof(got));
	neu.seed = 0x5eed1234;
	assert_int_equal(ice_sw_hash_update(pin_dir, &neu), 0);
	assert_int_equal(ice_sw_hash_get(pin_dir, &got), 0);
	assert_memory_equal(&got, &neu, sizeof(got));
	for (int i = 0; i < 64; i++) {
		struct pkt_spec ps = {
			.dst = "10.3.1.1", .sport = (uint16_t)(49152 + 131 * i), .dport = 4791};
		uint8_t pkt[2048];
		struct topo_5tuple t;
		int member;

		pkt_build(pkt, sizeof(pkt), &ps);
		t = pkt_tuple(pkt, &ps);
		member = failover_send(&neu, ps.sport, &h);
		assert_int_equal(member, (int)(h % 4));
		moved += member != (int)(topo_hash(&old, &t) % 4);
	}
	print_message("seed 99 -> 0x5eed1234: %d of 64 ports on another member\n", moved);
	assert_true(moved > 0);
	bad.alg = TOPO_HASH_ALG_MAX;
	assert_int_equal(ice_sw_hash_update(pin_dir, &bad), -EINVAL);
	assert_int_equal(ice_sw_hash_update("/sys/fs/bpf/ice-no-such-switch", &neu), -ENOENT);
	assert_int_equal(ice_sw_hash_get("/sys/fs/bpf/ice-no-such-switch", &got), -ENOENT);
}

struct ingress_fixture {
	const char *desc;
	struct pkt_spec pkt;
	int verdict;
	int stat; /* enum ice_sw_stat that must move by one */
	const char *prefix;
	int member; /* member taken when prefix != NULL */
};

static const struct ingress_fixture ingress_fixtures[] = {
	{.desc = "TTL 1 goes to the switch's stack (ICMP time exceeded), counted",
	 .pkt = {.ttl = 1, .sport = 1, .dport = 2},
	 .verdict = TC_ACT_OK,
	 .stat = ICE_SW_ST_TTL_EXPIRED},
	{.desc = "non-IP (ARP) passes",
	 .pkt = {.ethertype = ETH_P_ARP},
	 .verdict = TC_ACT_OK,
	 .stat = ICE_SW_ST_PASS_OTHER},
	{.desc = "IPv6 passes",
	 .pkt = {.ethertype = ETH_P_IPV6},
	 .verdict = TC_ACT_OK,
	 .stat = ICE_SW_ST_PASS_OTHER},
	{.desc = "to the switch itself (local prefix) passes",
	 .pkt = {.dst = "10.2.9.9", .sport = 1},
	 .verdict = TC_ACT_OK,
	 .stat = ICE_SW_ST_PASS_LOCAL},
	{.desc = "no route passes to the kernel",
	 .pkt = {.dst = "192.168.1.1", .sport = 1},
	 .verdict = TC_ACT_OK,
	 .stat = ICE_SW_ST_PASS_MISS},
	{.desc = "ICMP takes member 0",
	 .pkt = {.dst = "10.3.7.7", .proto = IPPROTO_ICMP},
	 .verdict = TC_ACT_REDIRECT,
	 .stat = ICE_SW_ST_REDIRECT,
	 .prefix = "10.3.0.0",
	 .member = 0},
	{.desc = "a one-member group takes member 0",
	 .pkt = {.dst = "10.4.0.1", .sport = 3333, .dport = 4791},
	 .verdict = TC_ACT_REDIRECT,
	 .stat = ICE_SW_ST_REDIRECT,
	 .prefix = "10.4.0.0",
	 .member = 0},
};

static void test_ingress_fixtures(void **state)
{
	uint8_t pkt[2048], out[2048];

	ecmp_setup_routes();
	for (size_t i = 0; i < sizeof(ingress_fixtures) / sizeof(ingress_fixtures[0]); i++) {
		const struct ingress_fixture *f = &ingress_fixtures[i];
		uint64_t s0[ICE_SW_ST_MAX], s1[ICE_SW_ST_MAX];
		uint64_t before[ICE_SW_MAX_MEMBERS], after[ICE_SW_MAX_MEMBERS];
		size_t len = pkt_build(pkt, sizeof(pkt), &f->pkt);
		int v;

		assert_int_equal(ice_sw_stats(pin_dir, s0), 0);
		if (f->prefix)
			ice_sw_ecmp_hits(pin_dir, ip4(f->prefix), 16, before);
		v = run_prog(ice_sw_ingress_fd(sw), if_a, pkt, len, out, sizeof(out));
		if (v != f->verdict)
			fail_msg("%s: verdict %d, want %d", f->desc, v, f->verdict);
		assert_int_equal(ice_sw_stats(pin_dir, s1), 0);
		for (int s = 0; s < ICE_SW_ST_MAX; s++)
			if (s1[s] != s0[s] + (s == f->stat))
				fail_msg("%s: stat %d moved %llu", f->desc, s,
					 (unsigned long long)(s1[s] - s0[s]));
		if (f->prefix)
			assert_int_equal(member_taken(f->prefix, 16, before, after), f->member);
		if (v == TC_ACT_OK)
			assert_memory_equal(out, pkt, len);
		print_message("ok  %s\n", f->desc);
	}
}

/* A replaced group takes effect; a deleted prefix falls back to the kernel. */
static void test_ecmp_replace_delete(void **state)
{
	struct ice_ecmp_member one = {if_c, ip4("10.0.1.9").s_addr, 0};
	struct pkt_spec ps = {.dst = "10.2.0.7", .sport = 4000, .dport = 4791};
	uint8_t pkt[2048], out[2048];
	uint64_t hits[ICE_SW_MAX_MEMBERS], st0[ICE_SW_ST_MAX], st1[ICE_SW_ST_MAX];
	size_t len = pkt_build(pkt, sizeof(pkt), &ps);

	ecmp_setup_routes();
	assert_int_equal(ice_sw_ecmp_set(sw, ip4("10.2.0.0"), 16, &one, 1), 0);
	assert_int_equal(ice_sw_ecmp_hits(pin_dir, ip4("10.2.0.0"), 16, hits), 1);
	assert_int_equal(hits[0], 0);
	assert_int_equal(run_prog(ice_sw_ingress_fd(sw), if_a, pkt, len, out, sizeof(out)),
			 TC_ACT_REDIRECT);
	assert_int_equal(ice_sw_ecmp_hits(pin_dir, ip4("10.2.0.0"), 16, hits), 1);
	assert_int_equal(hits[0], 1);
	/* The /32 local entry inside 10.2/16 still wins. */
	assert_int_equal(ice_sw_ecmp_del(sw, ip4("10.2.0.0"), 16), 0);
	assert_int_equal(ice_sw_ecmp_del(sw, ip4("10.2.0.0"), 16), -ENOENT);
	assert_int_equal(ice_sw_stats(pin_dir, st0), 0);
	assert_int_equal(run_prog(ice_sw_ingress_fd(sw), if_a, pkt, len, out, sizeof(out)),
			 TC_ACT_OK);
	assert_int_equal(ice_sw_stats(pin_dir, st1), 0);
	assert_int_equal(st1[ICE_SW_ST_PASS_MISS], st0[ICE_SW_ST_PASS_MISS] + 1);
	/* Bad arguments are refused with -EINVAL. */
	assert_int_equal(ice_sw_ecmp_set(sw, ip4("10.2.0.0"), 33, &one, 1), -EINVAL);
	assert_int_equal(ice_sw_ecmp_set(sw, ip4("10.2.0.0"), 16, &one, 17), -EINVAL);
}

/* tc really holds the programs on both ports (and in both directions). */
static void test_attached(void **state)
{
	char cmd[128];

	for (int i = 0; i < 2; i++) {
		const char *dev = i ? "iceC" : "iceA";

		snprintf(cmd, sizeof(cmd), "tc filter show dev %s egress | grep -q ice_sw_egress",
			 dev);
		assert_int_equal(system(cmd), 0);
		snprintf(cmd, sizeof(cmd), "tc filter show dev %s ingress | grep -q ice_sw_ingress",
			 dev);
		assert_int_equal(system(cmd), 0);
	}
	assert_int_equal(ice_sw_detach(sw, if_c), 0);
	assert_int_not_equal(system("tc filter show dev iceC egress | grep -q ice_sw"), 0);
	assert_int_equal(ice_sw_attach(sw, if_c), 0);
}

/* --- setup ---------------------------------------------------------------------- */

static void cleanup(void)
{
	char cmd[96];

	if (sw) {
		ice_sw_close(sw);
		sw = NULL;
	}
	if (pin_dir[0])
		ice_sw_unpin(pin_dir);
	if (ns_made) {
		snprintf(cmd, sizeof(cmd), "ip netns del %s 2>/dev/null", ns_name);
		if (system(cmd) != 0)
			fprintf(stderr, "test_ebpf_switch: could not delete netns %s\n", ns_name);
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
	printf("SKIP test_ebpf_switch: %s\n", why);
	cleanup();
	return SKIP;
}

static int get_mac(const char *dev, uint8_t *mac)
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM, 0), err;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	err = ioctl(fd, SIOCGIFHWADDR, &ifr) ? -errno : 0;
	if (err == 0)
		memcpy(mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	close(fd);
	return err;
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_egress_fixtures),
		cmocka_unit_test(test_egress_red_ramp),
		cmocka_unit_test(test_egress_peak_reset),
		cmocka_unit_test(test_egress_loss),
		cmocka_unit_test(test_reader),
		cmocka_unit_test(test_egress_drain_real_clock),
		cmocka_unit_test(test_ecmp_matches_topo),
		cmocka_unit_test(test_ecmp_fields),
		cmocka_unit_test(test_ecmp_failover),
		cmocka_unit_test(test_ecmp_hash_update),
		cmocka_unit_test(test_ingress_fixtures),
		cmocka_unit_test(test_ecmp_replace_delete),
		cmocka_unit_test(test_attached),
	};
	char cmd[512], path[64];
	int fd, rc;

	if (geteuid() != 0)
		return skip_test("needs root (network namespaces, tc, BPF)");
	snprintf(ns_name, sizeof(ns_name), "iceBPF%d", (int)getpid());
	snprintf(pin_dir, sizeof(pin_dir), "/sys/fs/bpf/%s", ns_name);
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, on_signal); /* e.g. piped into head */

	snprintf(cmd, sizeof(cmd), "ip netns add %s", ns_name);
	if (system(cmd) != 0)
		return skip_test("cannot create a network namespace (ip netns add)");
	ns_made = 1;
	snprintf(path, sizeof(path), "/run/netns/%s", ns_name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) != 0)
		return skip_test("cannot enter the test namespace");
	close(fd);
	/* no IPv6 here: router solicitations and MLD reports from the veths
	 * would run the attached ingress program between a fixture's stats
	 * reads (a stray PASS_OTHER) */
	if (system("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 "
		   "net.ipv6.conf.default.disable_ipv6=1") != 0)
		return skip_test("cannot turn IPv6 off in the test namespace");
	if (system("ip link set lo up && ip link add iceA type veth peer name iceB && "
		   "ip link add iceC type veth peer name iceD && "
		   "for d in iceA iceB iceC iceD; do ip link set $d up || exit 1; done") != 0)
		return skip_test("cannot create veth pairs");
	if_a = if_nametoindex("iceA");
	if_c = if_nametoindex("iceC");
	if (if_a == 0 || if_c == 0 || get_mac("iceA", mac_a) != 0)
		return skip_test("veth ports not visible");

	ice_log_init_env();
	ice_sw_unpin(pin_dir);
	sw = ice_sw_open(pin_dir, ICE_SW_F_ECMP_MODEL);
	if (sw == NULL) {
		snprintf(cmd, sizeof(cmd), "BPF unavailable: loading the switch programs: %s",
			 strerror(errno));
		return skip_test(cmd);
	}
	if (ice_sw_attach(sw, if_a) != 0 || ice_sw_attach(sw, if_c) != 0)
		return skip_test("cannot attach tc programs (clsact)");

	rc = cmocka_run_group_tests(tests, NULL, NULL);
	cleanup();
	return rc;
}
