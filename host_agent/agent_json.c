// SPDX-License-Identifier: Apache-2.0
/*
 * agent_json: samples, QPs and events as JSON (jansson), and the JSON text
 * the hot path writes without building objects (agent_json_real,
 * agent_json_str: the bytes jansson's json_dumps would give).
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "agent_internal.h"

const char *const agent_ctr_names[AGENT_NCTR] = {
	"tx_bytes", "rx_bytes", "tx_pkts", "rx_pkts", "ce",
	"cnp_tx",   "cnp_rx",	"nak_tx",  "nak_rx",  "retx",
};

static json_t *ip_json(uint32_t be)
{
	char b[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &be, b, sizeof(b));
	return json_string(b);
}

static void put_ctr(json_t *o, const struct agent_ctr *c)
{
	const uint64_t *v = (const uint64_t *)c;

	for (size_t i = 0; i < AGENT_NCTR; i++)
		json_object_set_new(o, agent_ctr_names[i], json_integer((json_int_t)v[i]));
}

static json_t *rate_json(const struct agent_rate *r)
{
	const double *v = (const double *)r;
	json_t *o = json_object();

	for (size_t i = 0; i < AGENT_NCTR; i++)
		json_object_set_new(o, agent_ctr_names[i], json_real(v[i]));
	return o;
}

static json_t *src_json(unsigned src)
{
	json_t *a = json_array();

	if (src & AGENT_SRC_CTRL)
		json_array_append_new(a, json_string("ctrl"));
	if (src & AGENT_SRC_BPF)
		json_array_append_new(a, json_string("bpf"));
	if (src & AGENT_SRC_EV)
		json_array_append_new(a, json_string("event"));
	if (src & AGENT_SRC_NIC)
		json_array_append_new(a, json_string("nic"));
	return a;
}

json_t *agent_qp_json(const struct agent_qp *q, const struct agent_sample *s)
{
	static const char *const kinds[] = {"qp", "flow_tx", "flow_rx"};
	json_t *o = json_object();
	char name[64];

	json_object_set_new(o, "id", json_string(agent_qp_name(q, name, sizeof(name))));
	json_object_set_new(o, "seq", json_integer((json_int_t)s->seq));
	json_object_set_new(o, "ts_ms", json_integer((json_int_t)s->ts_ms));
	json_object_set_new(o, "kind", json_string(kinds[q->id.kind % 3]));
	json_object_set_new(o, "local", ip_json(q->id.local_ip));
	json_object_set_new(o, "remote", ip_json(q->id.remote_ip));
	json_object_set_new(o, "qpn", json_integer(q->id.qpn));
	if (q->id.kind == AGENT_QP)
		json_object_set_new(o, "rqpn", json_integer(q->rqpn));
	json_object_set_new(o, "sport", json_integer(q->sport));
	json_object_set_new(o, "src", src_json(q->src));
	if (q->pid != 0)
		json_object_set_new(o, "pid", json_integer(q->pid));
	if (q->src & AGENT_SRC_CTRL) {
		json_t *tp = json_object();

		put_ctr(tp, &q->tp);
		json_object_set_new(tp, "rate_mbps", json_integer(q->rate_mbps));
		json_object_set_new(o, "tp", tp);
	}
	put_ctr(o, &q->c);
	json_object_set_new(o, "dt", json_real(s->dt));
	json_object_set_new(o, "rate", q->has_rate ? rate_json(&q->r) : json_null());
	return o;
}

/* {"lossless":[3],"storm":[],"prio":{"3":{rx_pause, tx_pause, rx_paused,
 * tx_paused}}}: priorities that are lossless or pause at all */
static json_t *pfc_json(const struct agent_pfc *f)
{
	json_t *o = json_object(), *ll = json_array(), *st = json_array(), *pr = json_object();

	for (int p = 0; p < 8; p++) {
		char k[4];

		if (f->known && (f->lossless & (1u << p)))
			json_array_append_new(ll, json_integer(p));
		if (f->storm & (1u << p))
			json_array_append_new(st, json_integer(p));
		if (!(f->seen & (1u << p)) || !f->has_rate ||
		    (!(f->known && (f->lossless & (1u << p))) && f->rx_pause[p] == 0 &&
		     f->tx_pause[p] == 0))
			continue;
		snprintf(k, sizeof(k), "%d", p);
		json_object_set_new(pr, k,
				    json_pack("{s:f, s:f, s:f, s:f}", "rx_pause", f->rx_pause[p],
					      "tx_pause", f->tx_pause[p], "rx_paused",
					      f->rx_paused[p], "tx_paused", f->tx_paused[p]));
	}
	json_object_set_new(o, "lossless", f->known ? ll : (json_decref(ll), json_null()));
	json_object_set_new(o, "storm", st);
	json_object_set_new(o, "prio", pr);
	return o;
}

json_t *agent_nic_json(const struct agent_sample *s, const struct agent_cfg *cfg)
{
	json_t *o = json_object();

	json_object_set_new(o, "nic", json_string(cfg->nic));
	json_object_set_new(o, "addr", json_string(cfg->addr));
	json_object_set_new(o, "seq", json_integer((json_int_t)s->seq));
	json_object_set_new(o, "ts_ms", json_integer((json_int_t)s->ts_ms));
	json_object_set_new(o, "qps", json_integer((json_int_t)s->nic_qps));
	json_object_set_new(o, "flows", json_integer((json_int_t)s->nic_flows));
	json_object_set_new(o, "events", json_integer((json_int_t)s->nev));
	put_ctr(o, &s->nic);
	json_object_set_new(o, "dt", json_real(s->dt));
	json_object_set_new(o, "rate", s->nic_has_rate ? rate_json(&s->nic_r) : json_null());
	if (s->has_dev) {
		/* the RDMA device's own counters (NIC backend), beside the
		 * QP sum above; its raw counters are in the :dev hash */
		json_t *d = json_object();

		json_object_set_new(d, "source", json_string(cfg->backend));
		put_ctr(d, &s->dev);
		json_object_set_new(d, "rate",
				    s->dev_has_rate ? rate_json(&s->dev_r) : json_null());
		json_object_set_new(o, "dev", d);
		json_object_set_new(o, "pfc", pfc_json(&s->pfc));
	}
	return o;
}

json_t *agent_event_json(const struct ice_event *ev)
{
	json_t *o = json_object();
	char lib[sizeof(ev->lib) + 1], hex[20];

	snprintf(lib, sizeof(lib), "%.*s", (int)sizeof(ev->lib), ev->lib);
	snprintf(hex, sizeof(hex), "%016" PRIx64, ev->comm_id);
	json_object_set_new(o, "kind", json_string(agent_ev_kind_name(ev->kind)));
	json_object_set_new(o, "lib", json_string(lib));
	json_object_set_new(o, "pid", json_integer(ev->pid));
	json_object_set_new(o, "seq", json_integer((json_int_t)ev->seq));
	json_object_set_new(o, "ts_ns", json_integer((json_int_t)ev->ts_ns));
	if (ev->kind == ICE_EV_QP) {
		json_object_set_new(o, "qpn", json_integer(ev->qpn));
		json_object_set_new(o, "rqpn", json_integer(ev->rqpn));
		json_object_set_new(o, "local", ip_json(ev->local_ip));
		json_object_set_new(o, "remote", ip_json(ev->remote_ip));
		json_object_set_new(o, "sport", json_integer(ev->sport));
		return o;
	}
	json_object_set_new(o, "comm", json_string(hex));
	if (ev->job[0] != '\0') {
		char job[sizeof(ev->job) + 1];
		size_t n = strnlen(ev->job, sizeof(ev->job));

		memcpy(job, ev->job, n);
		job[n] = '\0';
		json_object_set_new(o, "job", json_stringn(job, n));
	}
	json_object_set_new(o, "rank", json_integer(ev->rank));
	json_object_set_new(o, "nranks", json_integer(ev->nranks));
	if (ev->kind == ICE_EV_COLL_START || ev->kind == ICE_EV_COLL_END) {
		json_object_set_new(o, "op", json_string(agent_ev_op_name(ev->op)));
		json_object_set_new(o, "count", json_integer((json_int_t)ev->count));
		json_object_set_new(o, "bytes", json_integer((json_int_t)ev->bytes));
		json_object_set_new(o, "dtype", json_integer(ev->dtype));
		json_object_set_new(o, "redop", json_integer(ev->redop));
		json_object_set_new(o, "root", json_integer(ev->root));
		json_object_set_new(o, "peer", json_integer(ev->peer));
		json_object_set_new(o, "prev", json_integer(ev->prev));
		json_object_set_new(o, "next", json_integer(ev->next));
	}
	return o;
}

char *agent_sample_json(const struct agent_sample *s, const struct agent_cfg *cfg, int flags)
{
	json_t *o = json_object(), *qps = json_array(), *evs = json_array();
	char *txt;

	json_object_set_new(o, "schema", json_integer(AGENT_SCHEMA_VERSION));
	json_object_set_new(o, "host", json_string(cfg->host));
	json_object_set_new(o, "fabric", json_string(cfg->fabric));
	json_object_set_new(o, "nic", agent_nic_json(s, cfg));
	for (size_t i = 0; i < s->nqp; i++)
		json_array_append_new(qps, agent_qp_json(&s->qp[i], s));
	for (size_t i = 0; i < s->nev; i++)
		json_array_append_new(evs, agent_event_json(&s->ev[i]));
	json_object_set_new(o, "qps", qps);
	json_object_set_new(o, "events", evs);
	txt = json_dumps(o, (size_t)flags | JSON_REAL_PRECISION(10));
	json_decref(o);
	return txt;
}

/* ---- JSON text without jansson (QP records: ~1,000 a second) */

/* jansson's real with JSON_REAL_PRECISION(10): "%.10g", ".0" added when
 * that reads as an integer, the exponent without '+' and leading zeros. */
static int real_printf(char *buf, double v)
{
	int n = snprintf(buf, AGENT_JSON_REAL_MAX, "%.10g", v);
	char *e = strchr(buf, 'e'), *start, *end;

	if (e == NULL) {
		if (strchr(buf, '.') == NULL) {
			buf[n++] = '.';
			buf[n++] = '0';
			buf[n] = '\0';
		}
		return n;
	}
	start = e + 1;
	end = start + 1;
	if (*start == '-')
		start++;
	while (*end == '0')
		end++;
	if (end != start) {
		memmove(start, end, (size_t)(buf + n - end) + 1);
		n -= (int)(end - start);
	}
	return n;
}

/*
 * The same text as real_printf for 1e-4 <= |v| < 1e9 (where "%.10g" is
 * fixed-point) without printf: v scaled by an exact power of ten to 10
 * integer digits and rounded. The product is within 1.2e-6 of the exact
 * one (< 1e10 * 2^-53), so a fraction farther than 1e-5 from one half
 * rounds as the exact decimal would; closer ones, and a rounding that
 * carries into an 11th digit, are left to printf (-1).
 */
static int real_fast(char *buf, double v)
{
	static const double p10[] = {1e0, 1e1, 1e2, 1e3,  1e4,	1e5,  1e6,
				     1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13};
	double a = fabs(v), scaled, frac;
	uint64_t d;
	int x, at = 0, n;
	char dig[10];

	if (!(a >= 1e-4 && a < 1e9))
		return -1;
	for (x = 8; x > -4 && a < (x >= 0 ? p10[x] : 1.0 / p10[-x]); x--)
		;
	scaled = a * p10[9 - x];
	d = (uint64_t)scaled;
	frac = scaled - (double)d;
	if (d < 1000000000ull || fabs(frac - 0.5) < 1e-5)
		return -1; /* the power of ten was one too high, or a near tie */
	if (frac > 0.5)
		d++;
	if (d >= 10000000000ull)
		return -1; /* one too low, or rounding carried into an 11th digit */
	for (int i = 9; i >= 0; i--, d /= 10)
		dig[i] = (char)('0' + d % 10);
	n = 10;
	while (n > 1 && n > x + 1 && dig[n - 1] == '0')
		n--; /* %g drops trailing zeros of the fraction */
	if (v < 0)
		buf[at++] = '-';
	if (x < 0) {
		buf[at++] = '0';
		buf[at++] = '.';
		for (int i = x + 1; i < 0; i++)
			buf[at++] = '0';
		memcpy(buf + at, dig, (size_t)n);
		at += n;
	} else {
		memcpy(buf + at, dig, (size_t)x + 1);
		at += x + 1;
		buf[at++] = '.';
		if (n > x + 1) {
			memcpy(buf + at, dig + x + 1, (size_t)(n - x - 1));
			at += n - x - 1;
		} else {
			buf[at++] = '0';
		}
	}
	buf[at] = '\0';
	return at;
}

int agent_json_real(char buf[AGENT_JSON_REAL_MAX], double v)
{
	int n;

	if (!isfinite(v))
		return -1; /* json_real() refuses it: the member is left out */
	if (v == 0) {
		n = signbit(v) ? 4 : 3;
		memcpy(buf, signbit(v) ? "-0.0" : "0.0", (size_t)n + 1);
		return n;
	}
	n = real_fast(buf, v);
	return n >= 0 ? n : real_printf(buf, v);
}

/* As jansson's dump_string without flags: '"', '\\' and control characters
 * escaped, other bytes (UTF-8) as they are. */
void agent_json_str(struct agent_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	const char *run = s;

	agent_buf_put(b, "\"", 1);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[6] = {'\\', 0};
		size_t n = 2;

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		agent_buf_put(b, run, (size_t)(s - run));
		run = s + 1;
		switch (c) {
		case '"':
		case '\\':
			esc[1] = (char)c;
			break;
		case '\b':
			esc[1] = 'b';
			break;
		case '\f':
			esc[1] = 'f';
			break;
		case '\n':
			esc[1] = 'n';
			break;
		case '\r':
			esc[1] = 'r';
			break;
		case '\t':
			esc[1] = 't';
			break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			n = 6;
		}
		agent_buf_put(b, esc, n);
	}
	agent_buf_put(b, run, (size_t)(s - run));
	agent_buf_put(b, "\"", 1);
}
