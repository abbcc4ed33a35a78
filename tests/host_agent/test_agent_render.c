// SPDX-License-Identifier: Apache-2.0
/*
 * The agent's Redis rendering without jansson gives the bytes the jansson
 * path gives: RESP commands as hiredis formats them, reals and strings as
 * json_dumps writes them, and every QP record's HSET and stream entry as
 * they were rendered from agent_qp_json() (the reference below is that
 * code: scalar members as text, objects and arrays as compact JSON, the
 * stream entry the whole object).
 */
#include <arpa/inet.h>
#include <float.h>
#include <hiredis/hiredis.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent.h"
#include "agent_internal.h"

#define IP(a, b, c, d) htonl((uint32_t)(a) << 24 | (b) << 16 | (c) << 8 | (d))
#define JFLAGS	       (JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(10))

static void test_resp(void **state)
{
	static const char *const cmds[][5] = {
		{"PING", NULL},
		{"HSET", "k", "", "v", NULL},
		{"XADD", "ice:{f}:h:qp:10.0.0.1:5", "MAXLEN", "~", NULL},
		{"SET", "a\r\nb", "0123456789012345678901234567890123456789", "PX", NULL},
	};
	char big[5000];

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (size_t i = 0; i <= sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *argv[5], **a = argv;
		struct agent_buf b = {0};
		char *want = NULL;
		int argc = 0;
		long long n;

		if (i < sizeof(cmds) / sizeof(cmds[0])) {
			while (argc < 5 && cmds[i][argc] != NULL) {
				argv[argc] = cmds[i][argc];
				argc++;
			}
		} else {
			argv[0] = "SET";
			argv[1] = big;
			argv[2] = big;
			argc = 3;
		}
		n = redisFormatCommandArgv(&want, argc, a, NULL);
		agent_buf_cmdv(&b, argc, argv);
		assert_false(b.failed);
		assert_int_equal(b.ncmd, 1);
		assert_int_equal(b.len, (size_t)n);
		assert_memory_equal(b.p, want, b.len);
		redisFreeCommand(want);
		free(b.p);
	}
}

static void check_real(double v)
{
	char got[AGENT_JSON_REAL_MAX], *want;
	json_t *j = json_real(v);
	int n = agent_json_real(got, v);

	if (j == NULL) { /* not finite: jansson has no such value */
		assert_int_equal(n, -1);
		return;
	}
	want = json_dumps(j, JFLAGS);
	json_decref(j);
	assert_non_null(want);
	if (n < 0 || strcmp(got, want) != 0 || (size_t)n != strlen(want))
		fail_msg("%.17g: got '%s' (%d), jansson '%s'", v, n >= 0 ? got : "", n, want);
	free(want);
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* Reals: the edges of the printf-free path (powers of ten and their
 * neighbours, ties at the tenth digit, carries), integers, rates, and any
 * bit pattern. */
static void test_real(void **state)
{
	static const double fixed[] = {0.0,
				       -0.0,
				       1.0,
				       -1.0,
				       0.1,
				       0.5,
				       1e-4,
				       1e-5,
				       9.9999999995e-5,
				       9.99999999949e-5,
				       1e9,
				       999999999.5,
				       999999999.4,
				       999999999.6,
				       1e10,
				       123456789012.0,
				       1.0000000005,
				       1.00000000049,
				       1.00000000051,
				       2.5e-5,
				       12345.678901234,
				       99.999999995,
				       99.9999999949,
				       1e300,
				       -1e-300,
				       DBL_MIN,
				       DBL_MAX,
				       DBL_TRUE_MIN,
				       NAN,
				       INFINITY,
				       -INFINITY};

	(void)state;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		check_real(fixed[i]);
	for (int e = -12; e <= 14; e++) {
		double p = pow(10, e);

		check_real(p);
		check_real(nextafter(p, 0));
		check_real(nextafter(p, INFINITY));
		check_real(-p);
		for (int k = 1; k < 10; k++) {
			/* d.ddddddddd5 x 10^e: a tie at the tenth digit */
			double t = (1.0 + k * 0.1111111111 + 5e-10) * p;

			check_real(t);
			check_real(nextafter(t, 0));
			check_real(nextafter(t, INFINITY));
		}
	}
	for (int i = 0; i < 200000; i++) {
		uint64_t r = rnd();
		double v, m = (double)(r >> 11) / 9007199254740992.0; /* [0, 1) */

		switch (i % 5) {
		case 0: /* any bit pattern */
			memcpy(&v, &r, sizeof(v));
			break;
		case 1: /* a rate over ~100 ms: any magnitude of the fast path */
			v = m * pow(10, (int)(r % 15) - 5);
			break;
		case 2: /* counter deltas over a jittered dt */
			v = (double)(r % 100000000) / (0.1 + (double)(r >> 40) * 1e-12);
			break;
		case 3: /* integers */
			v = (double)(int64_t)(r >> (r % 50 + 14)) * ((r & 1) ? -1 : 1);
			break;
		default: /* few digits: many trailing zeros */
			v = (double)(r % 100000) / pow(10, (int)(r % 9));
		}
		check_real(v);
	}
}

static void check_str(const char *s)
{
	struct agent_buf b = {0};
	json_t *j = json_string(s);
	char *want = json_dumps(j, JSON_ENCODE_ANY);

	assert_non_null(want);
	agent_json_str(&b, s);
	agent_buf_put(&b, "", 1);
	assert_false(b.failed);
	assert_string_equal(b.p, want);
	free(want);
	json_decref(j);
	free(b.p);
}

static void test_str(void **state)
{
	static const char *const strs[] = {
		"",
		"10.0.0.1:17",
		"10.0.0.1>10.0.0.2:tx:17",
		"quote\" back\\slash /slash",
		"\b\f\n\r\t",
		"\x01\x02\x1f ctl \x7f del",
		"\"",
		"\\",
		"caf\xc3\xa9 \xe2\x82\xac",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		check_str(strs[i]);
}

/* Addresses and QP names as inet_ntop and snprintf wrote them */
static void test_names(void **state)
{
	(void)state;
	for (int i = 0; i < 20000; i++) {
		uint32_t a = i < 4 ? (uint32_t[]){0, UINT32_MAX, IP(10, 0, 0, 1),
						  IP(100, 9, 10, 255)}[i]
				   : (uint32_t)rnd(),
			 r = (uint32_t)rnd();
		struct agent_qp q = {.id = {.local_ip = a,
					    .remote_ip = r,
					    .qpn = i % 3 ? (uint32_t)rnd() : UINT32_MAX,
					    .kind = (uint32_t)(i % 3)}};
		char got[16], want[16], l[16], rr[16], name[64], ref[64], small[8];

		assert_string_equal(agent_ip4_text(got, a), inet_ntop(AF_INET, &a, want, 16));
		inet_ntop(AF_INET, &a, l, sizeof(l));
		inet_ntop(AF_INET, &r, rr, sizeof(rr));
		if (q.id.kind == AGENT_QP)
			snprintf(ref, sizeof(ref), "%s:%u", l, q.id.qpn);
		else
			snprintf(ref, sizeof(ref), "%s>%s:%s:%u", l, rr,
				 q.id.kind == AGENT_FLOW_TX ? "tx" : "rx", q.id.qpn);
		assert_string_equal(agent_qp_name(&q, name, sizeof(name)), ref);
		ref[sizeof(small) - 1] = '\0'; /* truncated as snprintf would */
		assert_string_equal(agent_qp_name(&q, small, sizeof(small)), ref);
	}
}

/* ---- QP records: the reference (the jansson path as it was) */

static char *ref_text(json_t *v)
{
	if (json_is_string(v))
		return strdup(json_string_value(v));
	if (json_is_integer(v)) {
		char *t;

		if (asprintf(&t, "%" JSON_INTEGER_FORMAT, json_integer_value(v)) < 0)
			return NULL;
		return t;
	}
	return json_dumps(v, JFLAGS);
}

/* One RESP command from p; argv[] point into copies (freed by caller). */
static const char *resp_next(const char *p, const char *end, int *argc, char **argv, int max)
{
	char *e;
	long n;

	assert_true(p < end && *p == '*');
	n = strtol(p + 1, &e, 10);
	assert_true(n > 0 && n <= max && e[0] == '\r' && e[1] == '\n');
	p = e + 2;
	*argc = (int)n;
	for (int i = 0; i < n; i++) {
		long len;

		assert_true(p < end && *p == '$');
		len = strtol(p + 1, &e, 10);
		assert_true(len >= 0 && e[0] == '\r' && e[1] == '\n');
		p = e + 2;
		assert_true(p + len + 2 <= end && p[len] == '\r' && p[len + 1] == '\n');
		argv[i] = strndup(p, (size_t)len);
		p += len + 2;
	}
	return p;
}

/* The next HSET on a key holding what (the commands before it skipped):
 * where it starts, NULL at the end. */
static const char *next_hset(const char *p, const char *end, const char *what)
{
	while (p < end) {
		char *argv[96];
		int argc;
		const char *at = p;
		bool hit;

		p = resp_next(p, end, &argc, argv, 96);
		hit = strcmp(argv[0], "HSET") == 0 && strstr(argv[1], what) != NULL &&
		      strstr(argv[1] + strlen(argv[1]) - 3, ":ts") == NULL;
		for (int a = 0; a < argc; a++)
			free(argv[a]);
		if (hit)
			return at;
	}
	return NULL;
}

/* The HSET at p and the XADD after it hold o as the jansson path wrote it:
 * each member as text (objects compact JSON), the entry the whole object. */
static const char *check_record(const char *p, const char *end, json_t *o, const char *what)
{
	char *argv[96], *xv[96], *doc;
	int argc, xc;
	const char *k;
	json_t *v;
	size_t i = 0;

	p = resp_next(p, end, &argc, argv, 96);
	assert_string_equal(argv[0], "HSET");
	json_object_foreach(o, k, v)
	{
		char *t = ref_text(v);

		assert_non_null(t);
		assert_true(3 + 2 * i < (size_t)argc);
		assert_string_equal(argv[2 + 2 * i], k);
		if (strcmp(argv[3 + 2 * i], t) != 0)
			fail_msg("%s %s field %s: '%s', jansson '%s'", what, argv[1], k,
				 argv[3 + 2 * i], t);
		free(t);
		i++;
	}
	assert_int_equal(argc, 2 + 2 * json_object_size(o));
	p = resp_next(p, end, &xc, xv, 96);
	assert_string_equal(xv[0], "XADD");
	assert_string_equal(xv[xc - 2], "json");
	doc = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(10));
	assert_string_equal(xv[xc - 1], doc);
	free(doc);
	for (int a = 0; a < argc; a++)
		free(argv[a]);
	for (int a = 0; a < xc; a++)
		free(xv[a]);
	return p;
}

static void set_ctr(struct agent_ctr *c, uint64_t base)
{
	uint64_t *v = (uint64_t *)c;

	for (size_t i = 0; i < AGENT_NCTR; i++)
		v[i] = base * (i + 1) + i;
}

static void set_rate(struct agent_rate *r, double base)
{
	double *v = (double *)r;

	for (size_t i = 0; i < AGENT_NCTR; i++)
		v[i] = base / (double)(i + 1);
}

static void test_qp_records(void **state)
{
	struct agent_qp qp[6];
	struct agent_sample s;
	struct agent_cfg cfg;
	struct agent_buf b = {0};
	const char *p, *end;
	size_t seen = 0;

	(void)state;
	memset(qp, 0, sizeof(qp));
	/* a transport QP with its own counters, a PID and a DCQCN rate */
	qp[0] = (struct agent_qp){.id = {.local_ip = IP(10, 0, 0, 1),
					 .remote_ip = IP(10, 0, 1, 2),
					 .qpn = 17,
					 .kind = AGENT_QP},
				  .rqpn = 18,
				  .pid = 4242,
				  .sport = 49152,
				  .src = AGENT_SRC_CTRL | AGENT_SRC_BPF | AGENT_SRC_EV,
				  .rate_mbps = 25000,
				  .has_rate = true};
	set_ctr(&qp[0].c, 1000003);
	set_ctr(&qp[0].tp, 999);
	set_rate(&qp[0].r, 12345678.912345678);
	/* a NIC QP: counters past 2^63 (jansson's integers are signed) */
	qp[1] = (struct agent_qp){.id = {.local_ip = IP(10, 0, 0, 1),
					 .remote_ip = IP(10, 0, 1, 3),
					 .qpn = 0x100,
					 .kind = AGENT_QP},
				  .rqpn = 0x2ff,
				  .sport = 4791,
				  .src = AGENT_SRC_NIC,
				  .has_rate = true};
	set_ctr(&qp[1].c, UINT64_MAX / 11);
	qp[1].r = (struct agent_rate){.tx_bytes = 0.1,
				      .rx_bytes = -0.0,
				      .tx_pkts = 1e-7,
				      .rx_pkts = 3e12,
				      .ce = NAN, /* left out, as json_real() refuses it */
				      .cnp_tx = 1.0 / 3.0,
				      .retx = 999999999.9999};
	/* unjoined BPF flows, without a rate yet, no PID */
	qp[2] = (struct agent_qp){
		.id = {.local_ip = IP(10, 0, 0, 1),
		       .remote_ip = IP(10, 0, 1, 4),
		       .qpn = 77,
		       .kind = AGENT_FLOW_TX},
		.sport = 50000,
		.src = AGENT_SRC_BPF,
	};
	set_ctr(&qp[2].c, 7);
	qp[3] = qp[2];
	qp[3].id.kind = AGENT_FLOW_RX;
	qp[3].has_rate = true;
	set_rate(&qp[3].r, 0.0);
	/* nothing but an announcement; all zero */
	qp[4] = (struct agent_qp){.id = {.local_ip = IP(192, 168, 255, 254),
					 .remote_ip = IP(255, 255, 255, 255),
					 .qpn = UINT32_MAX,
					 .kind = AGENT_QP},
				  .rqpn = UINT32_MAX,
				  .pid = UINT32_MAX,
				  .sport = 65535,
				  .src = AGENT_SRC_EV | AGENT_SRC_NIC};
	qp[5] = qp[0];
	qp[5].id.qpn = 19;
	qp[5].src = 0;
	set_rate(&qp[5].r, -2.5e-3);

	agent_cfg_defaults(&cfg);
	snprintf(cfg.nic, sizeof(cfg.nic), "eth0");
	snprintf(cfg.host, sizeof(cfg.host), "h1");
	snprintf(cfg.addr, sizeof(cfg.addr), "10.0.0.1");
	agent_sample_init(&s);
	s.qp = qp;
	s.nqp = 6;
	s.seq = 123456789;
	s.ts_ms = 1764633600123ull;
	s.dt = 0.100000123;
	assert_int_equal(agent_redis_render(&cfg, &s, NULL, &b), 0);

	p = b.p;
	end = b.p + b.len;
	while ((p = next_hset(p, end, ":qp:")) != NULL) {
		json_t *o;

		assert_true(seen < 6);
		o = agent_qp_json(&qp[seen], &s);
		p = check_record(p, end, o, "QP");
		json_decref(o);
		seen++;
	}
	assert_int_equal(seen, 6);
	free(b.p);
	s.qp = NULL;
	s.nqp = 0;
	agent_sample_fini(&s);
}

/* The NIC record: without and with the device's counters, PFC known or
 * not, lossless, storming and pausing priorities, rates missing or NaN */
static void test_nic_records(void **state)
{
	struct agent_sample s;
	struct agent_cfg cfg;

	(void)state;
	agent_cfg_defaults(&cfg);
	snprintf(cfg.nic, sizeof(cfg.nic), "ens1f0np0");
	snprintf(cfg.host, sizeof(cfg.host), "h1");
	snprintf(cfg.addr, sizeof(cfg.addr), "10.0.0.1");
	snprintf(cfg.backend, sizeof(cfg.backend), "mlx5");
	for (int v = 0; v < 8; v++) {
		struct agent_buf b = {0};
		const char *p;
		json_t *o;

		agent_sample_init(&s);
		s.seq = 42 + (uint64_t)v;
		s.ts_ms = 1764633600123ull + (uint64_t)v;
		s.dt = v == 5 ? NAN : 0.1 + v * 1e-4;
		s.nic_qps = 1000;
		s.nic_flows = (size_t)v;
		set_ctr(&s.nic, 1000003ull << v);
		s.nic_has_rate = v != 1;
		set_rate(&s.nic_r, 1e9 / (v + 1));
		s.has_dev = v >= 2;
		set_ctr(&s.dev, UINT64_MAX / (v + 2));
		s.dev_has_rate = v != 3;
		set_rate(&s.dev_r, v == 4 ? NAN : 12345.678 * v);
		s.pfc = (struct agent_pfc){.known = v != 6,
					   .lossless = v == 7 ? 0 : 0x08 | (v == 4 ? 0x81 : 0),
					   .storm = v == 4 ? 0x09 : 0,
					   .seen = v == 2 ? 0 : 0xff,
					   .has_rate = v != 3};
		for (int q = 0; q < 8; q++) {
			s.pfc.rx_pause[q] = q == 3 || q == 5 ? 100.5 * q : 0;
			s.pfc.tx_pause[q] = q == 6 ? 1e-3 : 0;
			s.pfc.rx_paused[q] = q == 3 ? 0.25 : 0;
			s.pfc.tx_paused[q] = v == 5 && q == 5 ? NAN : 0;
		}
		assert_int_equal(agent_redis_render(&cfg, &s, NULL, &b), 0);
		p = next_hset(b.p, b.p + b.len, ":nic:");
		assert_non_null(p);
		o = agent_nic_json(&s, &cfg);
		check_record(p, b.p + b.len, o, "NIC");
		json_decref(o);
		free(b.p);
		agent_sample_fini(&s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resp),	   cmocka_unit_test(test_real),
		cmocka_unit_test(test_str),	   cmocka_unit_test(test_names),
		cmocka_unit_test(test_qp_records), cmocka_unit_test(test_nic_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
