// SPDX-License-Identifier: Apache-2.0
/* ice-probe: the parser and matcher on crafted packets (truncated, forged,
 * unexpected, short ICMP quotes), pinglist errors, percentiles. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "probe_internal.h"
#include "topo.h"

static struct in_addr ip(const char *s)
{
	struct in_addr a;

	inet_pton(AF_INET, s, &a);
	return a;
}

/* An ICMP message from hop quoting the first qlen bytes of the packet q. */
static size_t icmp_wrap(uint8_t *out, struct in_addr hop, struct in_addr to, uint8_t type,
			uint8_t code, const uint8_t *q, size_t qlen)
{
	size_t tot = 20 + 8 + qlen;

	memset(out, 0, 28);
	out[0] = 0x45;
	out[2] = tot >> 8;
	out[3] = tot & 0xff;
	out[8] = 64;
	out[9] = IPPROTO_ICMP;
	memcpy(out + 12, &hop, 4);
	memcpy(out + 16, &to, 4);
	out[20] = type;
	out[21] = code;
	memcpy(out + 28, q, qlen);
	return tot;
}

struct fixture {
	struct probe_track t;
	struct probe_hdr h;
	struct probe_out *o;
	uint8_t probe[PROBE_IP_LEN];
	struct in_addr me, dst, hop;
};

static void send_one(struct fixture *f, uint8_t ttl, uint8_t kind)
{
	probe_track_init(&f->t, 42);
	f->me = ip("10.1.0.1");
	f->dst = ip("10.2.0.1");
	f->hop = ip("10.254.0.1");
	memset(&f->h, 0, sizeof(f->h));
	f->o = probe_track_add(&f->t, &f->h, f->dst, 49152, ttl, kind, 0, 0);
	f->h.t1 = 1000;
	probe_build(f->probe, f->me, f->dst, 49152, ICE_ROCE_UDP_PORT, ttl, &f->h);
}

static void test_request_roundtrip(void **state)
{
	struct fixture f;
	struct probe_rx rx;

	send_one(&f, 64, PROBE_KIND_ECHO);
	assert_int_equal(probe_ip_csum(f.probe, 20), 0);
	assert_int_equal(probe_parse(f.probe, sizeof(f.probe), ICE_ROCE_UDP_PORT, &rx),
			 PROBE_RX_REQUEST);
	assert_true(rx.has_hdr);
	assert_int_equal(rx.hdr.seq, f.h.seq);
	assert_true(rx.hdr.nonce == f.h.nonce);
	assert_int_equal(rx.sport, 49152);
	assert_int_equal(rx.hdr.t1, 1000);
}

static void test_time_exceeded_matches(void **state)
{
	struct fixture f;
	struct probe_rx rx;
	uint8_t pkt[256];
	size_t n;

	send_one(&f, 2, PROBE_KIND_TRACE);
	n = icmp_wrap(pkt, f.hop, f.me, 11, 0, f.probe, sizeof(f.probe));
	assert_int_equal(probe_parse(pkt, n, ICE_ROCE_UDP_PORT, &rx), PROBE_RX_HOP);
	assert_true(rx.has_hdr);
	assert_int_equal(rx.from.s_addr, f.hop.s_addr);
	assert_ptr_equal(probe_track_match(&f.t, &rx, f.me), f.o);
	/* RFC 792 minimum quote: IP header + 8 bytes; the IP id names the probe */
	n = icmp_wrap(pkt, f.hop, f.me, 11, 0, f.probe, 28);
	assert_int_equal(probe_parse(pkt, n, ICE_ROCE_UDP_PORT, &rx), PROBE_RX_HOP);
	assert_false(rx.has_hdr);
	assert_ptr_equal(probe_track_match(&f.t, &rx, f.me), f.o);
}

static void test_truncated(void **state)
{
	struct fixture f;
	struct probe_rx rx;
	uint8_t pkt[256];
	size_t n;

	send_one(&f, 2, PROBE_KIND_TRACE);
	/* the outer header says more than arrived */
	n = icmp_wrap(pkt, f.hop, f.me, 11, 0, f.probe, sizeof(f.probe));
	assert_int_equal(probe_parse(pkt, n - 10, ICE_ROCE_UDP_PORT, &rx), -PROBE_DROP_TRUNCATED);
	/* a quote without the UDP header */
	n = icmp_wrap(pkt, f.hop, f.me, 11, 0, f.probe, 24);
	assert_int_equal(probe_parse(pkt, n, ICE_ROCE_UDP_PORT, &rx), -PROBE_DROP_TRUNCATED);
	/* ICMP header cut */
	n = icmp_wrap(pkt, f.hop, f.me, 11, 0, f.probe, 0);
	pkt[3] = 24;
	assert_int_equal(probe_parse(pkt, 24, ICE_ROCE_UDP_PORT, &rx), -PROBE_DROP_TRUNCATED);
	/* less than an IP header */
	assert_int_equal(probe_parse(f.probe, 12, ICE_ROCE_UDP_PORT, &rx), -PROBE_DROP_TRUNCATED);
	/* a reply whose UDP length exceeds the packet */
	assert_int_equal(probe_parse(f.probe, 40, ICE_ROCE_UDP_PORT, &rx), -PROBE_DROP_TRUNCATED);
}

static void test_forged_nonce(void **state)
{
	struct fixture f;
	struct probe_rx rx;
	uint8_t pkt[256], bad[PROBE_IP_LEN];
	size_t n;

	send_one(&f, 2, PROBE_KIND_TRACE);
	memcpy(bad, f.probe, sizeof(bad));
	bad[20 + 8 + 24 + 7] ^= 1; /* nonce */
	n = icmp_wrap(pkt, f.hop, f.me, 11, 0, bad, sizeof(bad));
	assert_int_equal(probe_parse(pkt, n, ICE_ROCE_UDP_PORT, &rx), PROBE_RX_HOP);
	assert_null(probe_track_match(&f.t, &rx, f.me));
	assert_int_equal(f.t.drops[PROBE_DROP_FORGED], 1);
	/* a reply with a wrong nonce */
	f.h.kind = PROBE_KIND_REPLY;
	f.h.nonce ^= 0x100;
	probe_build(pkt, f.dst, f.me, ICE_ROCE_UDP_PORT, 49152, 60, &f.h);
	assert_int_equal(probe_parse(pkt, PROBE_IP_LEN, ICE_ROCE_UDP_PORT, &rx), PROBE_RX_REPLY);
	assert_null(probe_track_match(&f.t, &rx, f.me));
	assert_int_equal(f.t.drops[PROBE_DROP_FORGED], 2);
	assert_true(f.o->live);
}

static void test_unexpected_and_unknown(void **state)
{
	struct fixture f;
	struct probe_rx rx;
	uint8_t pkt[256];

	send_one(&f, 64, PROBE_KIND_ECHO);
	/* a correct reply, but from another address */
	f.h.kind = PROBE_KIND_REPLY;
	probe_build(pkt, ip("10.2.0.3"), f.me, ICE_ROCE_UDP_PORT, 49152, 60, &f.h);
	assert_int_equal(probe_parse(pkt, PROBE_IP_LEN, ICE_ROCE_UDP_PORT, &rx), PROBE_RX_REPLY);
	assert_null(probe_track_match(&f.t, &rx, f.me));
	assert_int_equal(f.t.drops[PROBE_DROP_UNEXPECTED], 1);
	/* ICMP about a packet another host sent */
	{
		uint8_t other[PROBE_IP_LEN];
		size_t n;

		probe_build(other, ip("10.1.0.3"), f.dst, 49152, ICE_ROCE_UDP_PORT, 2, &f.h);
		n = icmp_wrap(pkt, f.hop, f.me, 11, 0, other, sizeof(other));
		assert_int_equal(probe_parse(pkt, n, ICE_ROCE_UDP_PORT, &rx), PROBE_RX_HOP);
		assert_null(probe_track_match(&f.t, &rx, f.me));
		assert_int_equal(f.t.drops[PROBE_DROP_UNEXPECTED], 2);
	}
	/* the right reply matches once; a duplicate is unknown */
	probe_build(pkt, f.dst, f.me, ICE_ROCE_UDP_PORT, 49152, 60, &f.h);
	assert_int_equal(probe_parse(pkt, PROBE_IP_LEN, ICE_ROCE_UDP_PORT, &rx), PROBE_RX_REPLY);
	assert_ptr_equal(probe_track_match(&f.t, &rx, f.me), f.o);
	f.o->live = false;
	assert_null(probe_track_match(&f.t, &rx, f.me));
	assert_int_equal(f.t.drops[PROBE_DROP_UNKNOWN], 1);
}

static void test_other_traffic(void **state)
{
	struct fixture f;
	struct probe_rx rx;
	uint8_t pkt[256], q[PROBE_IP_LEN];
	size_t n;

	send_one(&f, 2, PROBE_KIND_TRACE);
	n = icmp_wrap(pkt, f.hop, f.me, 8, 0, f.probe, 8); /* echo request */
	assert_int_equal(probe_parse(pkt, n, ICE_ROCE_UDP_PORT, &rx), -PROBE_DROP_OTHER);
	/* time exceeded for RoCE traffic that is not a probe (no magic) */
	memcpy(q, f.probe, sizeof(q));
	q[20 + 8 + 12] = 0;
	n = icmp_wrap(pkt, f.hop, f.me, 11, 0, q, sizeof(q));
	assert_int_equal(probe_parse(pkt, n, ICE_ROCE_UDP_PORT, &rx), -PROBE_DROP_OTHER);
	/* a probe header with a bad version */
	memcpy(q, f.probe, sizeof(q));
	q[20 + 8 + 16] = 9;
	assert_int_equal(probe_parse(q, sizeof(q), ICE_ROCE_UDP_PORT, &rx), -PROBE_DROP_MALFORMED);
	/* UDP to another port */
	memcpy(q, f.probe, sizeof(q));
	q[22] = 0x13;
	assert_int_equal(probe_parse(q, sizeof(q), ICE_ROCE_UDP_PORT, &rx), -PROBE_DROP_OTHER);
}

static const char *pl_err(const char *text, struct probe_pinglist *pl)
{
	static char buf[768];
	struct ice_cfg_err err;

	buf[0] = '\0';
	if (probe_pinglist_parse("pl.yaml", text, strlen(text), NULL, pl, &err) < 0)
		ice_cfg_err_str(&err, buf, sizeof(buf));
	return buf;
}

static void test_pinglist(void **state)
{
	static struct probe_pinglist pl;

	assert_string_equal(pl_err("pairs:\n  - {src: 10.1.0.1, dst: 10.2.0.1}\n", &pl), "");
	assert_int_equal(pl.n, 1);
	/* the controller's JSON (Redis) goes through the same parser */
	assert_string_equal(
		pl_err("{\"version\":1,\"pairs\":[{\"src\":\"10.1.0.1\",\"dst\":\"10.2.0.1\"},"
		       "{\"src\":\"10.1.0.1\",\"dst\":\"10.2.0.3\"}]}",
		       &pl),
		"");
	assert_int_equal(pl.n, 2);
	assert_string_equal(pl_err("pairs:\n  - {src: 10.1.0.1, dst: 10.2.0.1}\n"
				   "  - {src: 10.1.0.1, dst: 10.2.0.300}\n",
				   &pl),
			    "pl.yaml:3:26: key 'pairs[1].dst': expected an IPv4 address, got "
			    "'10.2.0.300'");
	assert_string_equal(pl_err("pairs:\n  - {src: 10.1.0.1}\n", &pl),
			    "pl.yaml:2:5: key 'pairs[0].dst': missing; expected an address");
	assert_string_equal(
		pl_err("pairs:\n  - {src: 10.1.0.1, dts: 10.2.0.1}\n", &pl),
		"pl.yaml:2:21: key 'pairs[0].dts': unknown key; expected 'src' or 'dst'");
	assert_string_equal(pl_err("pairs: 10.1.0.1\n", &pl),
			    "pl.yaml:1:8: key 'pairs': expected a list of {src, dst}");
	assert_string_equal(pl_err("pair: []\n", &pl),
			    "pl.yaml:1:1: key 'pairs': expected a mapping with a 'pairs' list");
	assert_string_equal(pl_err("pairs:\n  - {src: 10.1.0.1, dst: 10.1.0.1}\n", &pl),
			    "pl.yaml:2:26: key 'pairs[0].dst': expected an address other than src");
}

static void test_percentile(void **state)
{
	double v[] = {5, 1, 4, 2, 3};

	assert_true(probe_percentile(v, 5, 50) == 3);
	assert_true(probe_percentile(v, 5, 0) == 1);
	assert_true(probe_percentile(v, 5, 100) == 5);
	assert_true(probe_percentile(v, 0, 50) == 0);
}

/* A pair whose map has the given paths (hop names joined by '>'), discovered
 * at ts_ms. */
static void pair_with(struct probe_pair_state *p, uint64_t ts_ms, const char *a, const char *b)
{
	memset(p, 0, sizeof(*p));
	p->map.nhops = 3;
	p->map.ts_ms = ts_ms;
	p->map.took_ns = 10 * 1000000ull;
	snprintf(p->map.path[0].name, sizeof(p->map.path[0].name), "%s", a);
	snprintf(p->map.path[1].name, sizeof(p->map.path[1].name), "%s", b);
	p->map.npaths = 2;
}

/* Rehash notices: which pairs a switch's notice remaps, and the notices
 * ignored (malformed, unknown switch, the same event again). */
static void test_rehash_notice(void **state)
{
	struct probe_pair_state *ps = calloc(4, sizeof(*ps));
	struct probe_notices *n = calloc(1, sizeof(*n));
	struct topo_gen_opts o;
	struct topo *t;
	struct probe_notice x = {.host = "h1", .sw = "leaf1", .ts_ms = 5000};

	(void)state;
	assert_non_null(ps);
	assert_non_null(n);
	topo_gen_opts_default(&o);
	t = topo_gen_leaf_spine(&o);
	assert_non_null(t);
	pair_with(&ps[0], 1000, "leaf1>spine1>leaf2", "leaf1>spine2>leaf2");
	pair_with(&ps[1], 1000, "leaf1>spine1>leaf2", "leaf1>spine2>leaf2");
	pair_with(&ps[2], 1000, "leaf2>spine1>leaf1", "leaf2>spine2>leaf1");
	pair_with(&ps[3], 5015, "leaf1>spine1>leaf2", "leaf1>spine2>leaf2"); /* begun after */
	/* leaf1 picks the spine for pairs 0, 1 and 3; pair 3 was mapped after
	 * the notice's move; pair 2 only ends at leaf1 (its last hop) */
	assert_int_equal(probe_notice_judge(n, t, &x), PROBE_NOTICE_ACT);
	assert_int_equal(probe_pairs_crossing(ps, 4, NULL, x.sw, x.ts_ms), 2);
	assert_true(ps[0].remap && ps[1].remap);
	assert_false(ps[2].remap || ps[3].remap);
	/* already marked pairs are not counted again; except is skipped */
	ps[1].remap = false;
	assert_int_equal(probe_pairs_crossing(ps, 4, &ps[1], "leaf1", 6000), 1);
	assert_false(ps[1].remap);
	/* another host's notice of the same event, and a late one: the same */
	x.ts_ms = 5400;
	assert_int_equal(probe_notice_judge(n, t, &x), PROBE_NOTICE_SAME);
	x.ts_ms = 4000;
	assert_int_equal(probe_notice_judge(n, t, &x), PROBE_NOTICE_SAME);
	/* past the hold: a new event */
	x.ts_ms = 5000 + PROBE_NOTICE_HOLD_MS;
	assert_int_equal(probe_notice_judge(n, t, &x), PROBE_NOTICE_ACT);
	/* our own detection counts as handled */
	probe_notice_record(n, "spine1", 7000);
	snprintf(x.sw, sizeof(x.sw), "spine1");
	x.ts_ms = 7100;
	assert_int_equal(probe_notice_judge(n, t, &x), PROBE_NOTICE_SAME);
	/* a name the topology does not have, a host's name: unknown */
	snprintf(x.sw, sizeof(x.sw), "leaf9");
	assert_int_equal(probe_notice_judge(n, t, &x), PROBE_NOTICE_UNKNOWN);
	snprintf(x.sw, sizeof(x.sw), "h1");
	assert_int_equal(probe_notice_judge(n, t, &x), PROBE_NOTICE_UNKNOWN);
	/* without a topology any name is taken; a malformed notice never */
	snprintf(x.sw, sizeof(x.sw), "10.0.0.9");
	assert_int_equal(probe_notice_judge(n, NULL, &x), PROBE_NOTICE_ACT);
	x.bad = true;
	assert_int_equal(probe_notice_judge(n, t, &x), PROBE_NOTICE_BAD);
	assert_int_equal(n->read, 9);
	assert_int_equal(n->unknown, 2);
	assert_int_equal(n->bad, 1);
	assert_int_equal(n->same, 3);
	/* a full table makes room by dropping the oldest switch */
	for (int i = 0; i < PROBE_NOTICE_SEEN + 2; i++) {
		char sw[PROBE_NAME_MAX];

		snprintf(sw, sizeof(sw), "sw%d", i);
		probe_notice_record(n, sw, 10000 + (uint64_t)i);
	}
	assert_int_equal(n->nseen, PROBE_NOTICE_SEEN);
	topo_free(t);
	free(n);
	free(ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_roundtrip),
		cmocka_unit_test(test_time_exceeded_matches),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_forged_nonce),
		cmocka_unit_test(test_unexpected_and_unknown),
		cmocka_unit_test(test_other_traffic),
		cmocka_unit_test(test_pinglist),
		cmocka_unit_test(test_percentile),
		cmocka_unit_test(test_rehash_notice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
