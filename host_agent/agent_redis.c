// SPDX-License-Identifier: Apache-2.0
/*
 * agent_redis: the schema of docs/redis-schema.md, written with hiredis.
 *
 * Each interval is rendered once into RESP commands (agent_redis_render) and
 * queued; agent_redis_tick() appends as many queued intervals as fit in one
 * batch to the connection's output buffer and reads all replies: one round
 * trip. Stream entries of QPs and NICs carry explicit IDs (<ts_ms>-0, with
 * ts_ms strictly increasing per run), so an interval sent twice after a
 * broken connection is refused by Redis instead of stored twice.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "agent_internal.h"
#include "ice_time.h"

#define BATCH_MAX_ITEMS	 64
#define BATCH_MAX_BYTES	 (8u << 20)
#define QP_INDEX_KEEP_MS (10 * 60 * 1000) /* QP index entries older are pruned */
#define FULL_EVERY_MS	 10000		  /* idle QPs' records rewritten at least this often */
#define INDEX_EVERY_MS	 1000		  /* idle QPs' index entries refreshed this often */
#define ZADD_CHUNK	 256		  /* members per ZADD */

void agent_buf_put_grow(struct agent_buf *b, const char *p, size_t n)
{
	if (b->failed || n == 0)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *q;

		while (cap < b->len + n)
			cap *= 2;
		q = realloc(b->p, cap);
		if (q == NULL) {
			b->failed = true;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* A RESP header: "*<n>\r\n" (array) or "$<n>\r\n" (bulk string). */
static void buf_hdr(struct agent_buf *b, char type, size_t n)
{
	char t[25], *p = agent_u64_text(t, n); /* digits end at t[22] */

	*--p = type;
	t[23] = '\r';
	t[24] = '\n';
	agent_buf_put(b, p, (size_t)(t + 25 - p));
}

/* A RESP bulk string */
static void buf_bulk(struct agent_buf *b, const char *p, size_t n)
{
	buf_hdr(b, '$', n);
	agent_buf_put(b, p, n);
	agent_buf_put(b, "\r\n", 2);
}

/* RESP as redisFormatCommandArgv writes it, straight into the buffer (no
 * sprintf and no allocation per command: the agent sends ~200 commands an
 * interval) */
void agent_buf_cmdv(struct agent_buf *b, int argc, const char *const *argv)
{
	buf_hdr(b, '*', (size_t)argc);
	for (int i = 0; i < argc; i++)
		buf_bulk(b, argv[i], strlen(argv[i]));
	b->ncmd++;
}

void agent_buf_cmd(struct agent_buf *b, const char *arg0, ...)
{
	const char *argv[64];
	int argc = 0;
	va_list ap;

	argv[argc++] = arg0;
	va_start(ap, arg0);
	while (argc < 64 && (argv[argc] = va_arg(ap, const char *)) != NULL)
		argc++;
	va_end(ap);
	agent_buf_cmdv(b, argc, argv);
}

/* One of this NIC's keys (docs/redis-schema.md); arg: the pattern's third
 * part. Names are checked at start-up, so a key always fits. */
static void rk(char *buf, size_t len, const struct agent_cfg *c, enum ice_rkey k, const char *arg)
{
	ice_rkey_str(buf, len, k, c->fabric, c->host, arg);
}

static char *dump(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(10));

	json_decref(o);
	return s;
}

char *agent_u64_text(char buf[24], uint64_t v)
{
	char *p = buf + 23;

	*p = '\0';
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	return p;
}

/*
 * A record written twice at once, each value formatted once: as the HSET
 * of its members (field, value; objects and arrays as JSON text) and as one
 * JSON object for its stream entry. The bytes are those of jansson's
 * json_dumps(JSON_COMPACT | JSON_REAL_PRECISION(10)) of agent_qp_json() and
 * agent_nic_json() (test_agent_render compares them), at about a seventh of
 * the instructions (callgrind: ~22k per QP record, from ~160k).
 */
struct rec {
	struct agent_buf args; /* field, value, ... as RESP bulk strings */
	struct agent_buf doc;  /* {"field":value,...} */
	struct agent_buf tmp;  /* a nested object's text */
	unsigned n;	       /* members */
};

static void rec_fini(struct rec *r)
{
	free(r->args.p);
	free(r->doc.p);
	free(r->tmp.p);
}

static void rec_key(struct rec *r, const char *k)
{
	size_t kl = strlen(k);

	buf_bulk(&r->args, k, kl);
	agent_buf_put(&r->doc, r->n++ ? ",\"" : "{\"", 2);
	agent_buf_put(&r->doc, k, kl);
	agent_buf_put(&r->doc, "\":", 2);
}

/* A value whose JSON text is its hash text too (numbers, objects) */
static void rec_text(struct rec *r, const char *k, const char *v, size_t n)
{
	rec_key(r, k);
	buf_bulk(&r->args, v, n);
	agent_buf_put(&r->doc, v, n);
}

static void rec_str(struct rec *r, const char *k, const char *v)
{
	rec_key(r, k);
	buf_bulk(&r->args, v, strlen(v));
	agent_json_str(&r->doc, v);
}

/* jansson's json_int_t is signed: counters past 2^63 read negative there */
static char *i64_text(char buf[24], int64_t v)
{
	char *p;

	if (v >= 0)
		return agent_u64_text(buf, (uint64_t)v);
	p = agent_u64_text(buf, 0ull - (uint64_t)v);
	*--p = '-';
	return p;
}

static void rec_int(struct rec *r, const char *k, int64_t v)
{
	char t[24], *p = i64_text(t, v);

	rec_text(r, k, p, (size_t)(t + 23 - p));
}

/* ,"k":v onto a nested object's text (first: no comma) */
static void txt_int(struct agent_buf *b, bool first, const char *k, int64_t v)
{
	char t[24], *p = i64_text(t, v);

	agent_buf_put(b, first ? "\"" : ",\"", first ? 1 : 2);
	agent_buf_put(b, k, strlen(k));
	agent_buf_put(b, "\":", 2);
	agent_buf_put(b, p, (size_t)(t + 23 - p));
}

/* The HSET onto out; the document stays in r->doc (NUL-terminated). */
static void rec_end(struct rec *r, struct agent_buf *out, const char *key)
{
	agent_buf_put(&r->doc, r->n ? "}" : "{}", r->n ? 2 : 3); /* with the NUL */
	buf_hdr(out, '*', 2 + 2 * (size_t)r->n);
	buf_bulk(out, "HSET", 4);
	buf_bulk(out, key, strlen(key));
	agent_buf_put(out, r->args.p, r->args.len);
	out->ncmd++;
	if (r->args.failed || r->doc.failed || r->tmp.failed)
		out->failed = true;
}

static void txt_digit(struct agent_buf *b, int d)
{
	char c = (char)('0' + d);

	agent_buf_put(b, &c, 1);
}

/* the priorities of a bit set, comma-separated */
static void txt_prios(struct agent_buf *b, uint8_t set)
{
	for (int p = 0, k = 0; p < 8; p++)
		if (set & (1u << p)) {
			if (k++)
				agent_buf_put(b, ",", 1);
			txt_digit(b, p);
		}
}

/* ,"k":v for a real (nothing when not finite: json_real() refuses it) */
static void txt_real(struct agent_buf *b, bool first, const char *k, double v)
{
	char t[AGENT_JSON_REAL_MAX];
	int n = agent_json_real(t, v);

	if (n < 0)
		return;
	agent_buf_put(b, first ? "\"" : ",\"", first ? 1 : 2);
	agent_buf_put(b, k, strlen(k));
	agent_buf_put(b, "\":", 2);
	agent_buf_put(b, t, (size_t)n);
}

/* "tx_bytes":..,"retx":.. (no braces) */
static void txt_ctrs(struct agent_buf *b, const struct agent_ctr *c)
{
	for (size_t i = 0; i < AGENT_NCTR; i++)
		txt_int(b, i == 0, agent_ctr_names[i], (int64_t)((const uint64_t *)c)[i]);
}

/* {"tx_bytes":r,...} or null */
static void txt_rate(struct agent_buf *b, const struct agent_rate *r)
{
	size_t at = b->len;

	if (r == NULL) {
		agent_buf_put(b, "null", 4);
		return;
	}
	agent_buf_put(b, "{", 1);
	for (size_t i = 0; i < AGENT_NCTR; i++)
		txt_real(b, b->len == at + 1, agent_ctr_names[i], ((const double *)r)[i]);
	agent_buf_put(b, "}", 1);
}

/* The counters, dt and rate that end QP and NIC records */
static void rec_tail(struct rec *r, const struct agent_ctr *c, double dt,
		     const struct agent_rate *rate)
{
	char t[AGENT_JSON_REAL_MAX];
	int n;

	for (size_t i = 0; i < AGENT_NCTR; i++)
		rec_int(r, agent_ctr_names[i], (int64_t)((const uint64_t *)c)[i]);
	if ((n = agent_json_real(t, dt)) >= 0)
		rec_text(r, "dt", t, (size_t)n);
	r->tmp.len = 0;
	txt_rate(&r->tmp, rate);
	rec_text(r, "rate", r->tmp.p, r->tmp.len);
}

/* A QP's record: the members of agent_qp_json(), in its order. */
static void qp_record(struct rec *r, const struct agent_qp *q, const struct agent_sample *s,
		      const char *name)
{
	static const char *const kinds[] = {"qp", "flow_tx", "flow_rx"};
	static const struct {
		unsigned bit;
		const char *name;
	} srcs[] = {{AGENT_SRC_CTRL, "ctrl"},
		    {AGENT_SRC_BPF, "bpf"},
		    {AGENT_SRC_EV, "event"},
		    {AGENT_SRC_NIC, "nic"}};
	char ip[INET_ADDRSTRLEN];
	struct agent_buf *b = &r->tmp;

	r->args.len = 0;
	r->doc.len = 0;
	r->n = 0;
	rec_str(r, "id", name);
	rec_int(r, "seq", (int64_t)s->seq);
	rec_int(r, "ts_ms", (int64_t)s->ts_ms);
	rec_str(r, "kind", kinds[q->id.kind % 3]);
	rec_str(r, "local", agent_ip4_text(ip, q->id.local_ip));
	rec_str(r, "remote", agent_ip4_text(ip, q->id.remote_ip));
	rec_int(r, "qpn", q->id.qpn);
	if (q->id.kind == AGENT_QP)
		rec_int(r, "rqpn", q->rqpn);
	rec_int(r, "sport", q->sport);
	b->len = 0;
	agent_buf_put(b, "[", 1);
	for (size_t i = 0; i < sizeof(srcs) / sizeof(srcs[0]); i++) {
		if (!(q->src & srcs[i].bit))
			continue;
		if (b->len > 1)
			agent_buf_put(b, ",", 1);
		agent_json_str(b, srcs[i].name);
	}
	agent_buf_put(b, "]", 1);
	rec_text(r, "src", b->p, b->len);
	if (q->pid != 0)
		rec_int(r, "pid", q->pid);
	if (q->src & AGENT_SRC_CTRL) {
		b->len = 0;
		agent_buf_put(b, "{", 1);
		txt_ctrs(b, &q->tp);
		txt_int(b, false, "rate_mbps", q->rate_mbps);
		agent_buf_put(b, "}", 1);
		rec_text(r, "tp", b->p, b->len);
	}
	rec_tail(r, &q->c, s->dt, q->has_rate ? &q->r : NULL);
}

/* The NIC's record: the members of agent_nic_json(), in its order. */
static void nic_record(struct rec *r, const struct agent_sample *s, const struct agent_cfg *cfg)
{
	struct agent_buf *b = &r->tmp;
	const struct agent_pfc *f = &s->pfc;

	r->args.len = 0;
	r->doc.len = 0;
	r->n = 0;
	rec_str(r, "nic", cfg->nic);
	rec_str(r, "addr", cfg->addr);
	rec_int(r, "seq", (int64_t)s->seq);
	rec_int(r, "ts_ms", (int64_t)s->ts_ms);
	rec_int(r, "qps", (int64_t)s->nic_qps);
	rec_int(r, "flows", (int64_t)s->nic_flows);
	rec_int(r, "events", (int64_t)s->nev);
	rec_tail(r, &s->nic, s->dt, s->nic_has_rate ? &s->nic_r : NULL);
	if (!s->has_dev)
		return;
	/* the RDMA device's own counters, beside the QP sum above */
	b->len = 0;
	agent_buf_put(b, "{\"source\":", 10);
	agent_json_str(b, cfg->backend);
	agent_buf_put(b, ",", 1);
	txt_ctrs(b, &s->dev);
	agent_buf_put(b, ",\"rate\":", 8);
	txt_rate(b, s->dev_has_rate ? &s->dev_r : NULL);
	agent_buf_put(b, "}", 1);
	rec_text(r, "dev", b->p, b->len);
	/* PFC: lossless and storming priorities, the pausing ones' figures */
	b->len = 0;
	agent_buf_put(b, "{\"lossless\":", 12);
	if (f->known) {
		agent_buf_put(b, "[", 1);
		txt_prios(b, f->lossless);
		agent_buf_put(b, "]", 1);
	} else {
		agent_buf_put(b, "null", 4);
	}
	agent_buf_put(b, ",\"storm\":[", 10);
	txt_prios(b, f->storm);
	agent_buf_put(b, "],\"prio\":{", 10);
	for (int p = 0, k = 0; p < 8; p++) {
		const double v[4] = {f->rx_pause[p], f->tx_pause[p], f->rx_paused[p],
				     f->tx_paused[p]};
		static const char *const names[4] = {"rx_pause", "tx_pause", "rx_paused",
						     "tx_paused"};
		bool ll = f->known && (f->lossless & (1u << p));

		if (!(f->seen & (1u << p)) || !f->has_rate ||
		    (!ll && f->rx_pause[p] == 0 && f->tx_pause[p] == 0))
			continue;
		if (!isfinite(v[0]) || !isfinite(v[1]) || !isfinite(v[2]) || !isfinite(v[3]))
			continue; /* json_pack() refuses it: the priority is left out */
		if (k++)
			agent_buf_put(b, ",", 1);
		agent_buf_put(b, "\"", 1);
		txt_digit(b, p);
		agent_buf_put(b, "\":{", 3);
		for (int i = 0; i < 4; i++)
			txt_real(b, i == 0, names[i], v[i]);
		agent_buf_put(b, "}", 1);
	}
	agent_buf_put(b, "}}", 2);
	rec_text(r, "pfc", b->p, b->len);
}

static bool sample_has_name(const struct agent_sample *s, const char *name)
{
	char n[64];

	for (size_t i = 0; i < s->nqp; i++)
		if (s->qp[i].id.kind == AGENT_QP &&
		    strcmp(agent_qp_name(&s->qp[i], n, sizeof(n)), name) == 0)
			return true;
	return false;
}

/* Every how many intervals something due every ms is done (at least 1). */
static uint64_t every(uint64_t ms, uint64_t interval_ms)
{
	uint64_t n = interval_ms != 0 ? ms / interval_ms : ms;

	return n > 0 ? n : 1;
}

/* One ZADD for many members (score, member pairs); names copied. */
struct zadd {
	const char *argv[2 + 2 * ZADD_CHUNK];
	char names[ZADD_CHUNK][64];
	int argc, n;
	char key[384];
};

static void zadd_begin(struct zadd *z, const char *key)
{
	snprintf(z->key, sizeof(z->key), "%s", key);
	z->argv[0] = "ZADD";
	z->argv[1] = z->key;
	z->argc = 2;
	z->n = 0;
}

static void zadd_flush(struct zadd *z, struct agent_buf *out)
{
	if (z->n > 0)
		agent_buf_cmdv(out, z->argc, z->argv);
	z->argc = 2;
	z->n = 0;
}

static void zadd_add(struct zadd *z, struct agent_buf *out, const char *score, const char *name)
{
	snprintf(z->names[z->n], sizeof(z->names[0]), "%s", name);
	z->argv[z->argc++] = score;
	z->argv[z->argc++] = z->names[z->n++];
	if (z->n == ZADD_CHUNK)
		zadd_flush(z, out);
}

/* Nothing to say about q that its last record (p, the previous sample's)
 * did not: no traffic now nor then, same port, peer, sources and rate. */
static bool qp_idle_same(const struct agent_qp *q, const struct agent_qp *p)
{
	static const struct agent_rate zero;

	return q->has_rate && p->has_rate && memcmp(&q->r, &zero, sizeof(zero)) == 0 &&
	       memcmp(&p->r, &zero, sizeof(zero)) == 0 && q->sport == p->sport &&
	       q->rqpn == p->rqpn && q->src == p->src && q->rate_mbps == p->rate_mbps &&
	       q->pid == p->pid;
}

int agent_redis_render(const struct agent_cfg *cfg, const struct agent_sample *s,
		       const struct agent_sample *prev, struct agent_buf *out)
{
	char key[384], key2[384], id[48], cap[24], ttl[24], ts[24], qttl[24], old[24];
	uint64_t interval_ms = cfg->interval / ICE_NSEC_PER_MSEC;
	uint64_t live_ms = 3 * interval_ms < 3000 ? 3000 : 3 * interval_ms;
	/* a QP's keys outlive its last sample by the stream's span, at least 10 min */
	uint64_t keep_ms = (uint64_t)cfg->stream_cap * (interval_ms ? interval_ms : 1);
	json_t *alive;
	char *txt;
	bool full, touch;
	struct zadd z;
	struct rec rec = {0};

	if (keep_ms < QP_INDEX_KEEP_MS)
		keep_ms = QP_INDEX_KEEP_MS;
	snprintf(cap, sizeof(cap), "%u", cfg->stream_cap);
	snprintf(ttl, sizeof(ttl), "%" PRIu64, live_ms);
	snprintf(qttl, sizeof(qttl), "%" PRIu64, keep_ms);
	snprintf(ts, sizeof(ts), "%" PRIu64, s->ts_ms);
	snprintf(id, sizeof(id), "%" PRIu64 "-0", s->ts_ms);
	snprintf(old, sizeof(old), "(%" PRIu64, s->ts_ms > keep_ms ? s->ts_ms - keep_ms : 0);

	/* liveness */
	alive = json_pack("{s:I, s:I, s:I, s:s}", "pid", (json_int_t)getpid(), "ts_ms",
			  (json_int_t)s->ts_ms, "seq", (json_int_t)s->seq, "addr", cfg->addr);
	txt = dump(alive);
	rk(key, sizeof(key), cfg, ICE_RK_NIC_ALIVE, cfg->nic);
	agent_buf_cmd(out, "SET", key, txt ? txt : "{}", "PX", ttl, NULL);
	rk(key, sizeof(key), cfg, ICE_RK_ALIVE, NULL);
	agent_buf_cmd(out, "SET", key, txt ? txt : "{}", "PX", ttl, NULL);
	free(txt);
	rk(key, sizeof(key), cfg, ICE_RK_HOST, NULL);
	agent_buf_cmd(out, "HSET", key, "last_ms", ts, NULL);

	/* per QP: summary hash + capped stream, and the host's QP index. A QP
	 * idle now and at the last sample, unchanged otherwise, has nothing
	 * new: it only keeps its index entry fresh, once a second (the
	 * controller's staleness is 3 s at least), and all records are
	 * rewritten (and their expiry pushed back) every FULL_EVERY_MS. */
	full = s->seq % every(FULL_EVERY_MS, interval_ms) == 0;
	touch = s->seq % every(INDEX_EVERY_MS, interval_ms) == 0;
	rk(key, sizeof(key), cfg, ICE_RK_QPS, NULL);
	zadd_begin(&z, key);
	for (size_t i = 0, j = 0; i < s->nqp; i++) {
		const struct agent_qp *q = &s->qp[i];
		char name[64];
		int c = 1;

		while (prev != NULL && j < prev->nqp &&
		       (c = agent_qp_id_cmp(&prev->qp[j].id, &q->id)) < 0)
			j++;
		if (!full && c == 0 && qp_idle_same(q, &prev->qp[j])) {
			if (touch)
				zadd_add(&z, out, ts, agent_qp_name(q, name, sizeof(name)));
			continue;
		}
		agent_qp_name(q, name, sizeof(name));
		rk(key, sizeof(key), cfg, ICE_RK_QP, name);
		rk(key2, sizeof(key2), cfg, ICE_RK_QP_TS, name);
		qp_record(&rec, q, s, name);
		rec_end(&rec, out, key);
		if (out->failed)
			continue;
		agent_buf_cmd(out, "XADD", key2, "MAXLEN", "~", cap, id, "json", rec.doc.p, NULL);
		if (full || c != 0) {
			agent_buf_cmd(out, "PEXPIRE", key, qttl, NULL);
			agent_buf_cmd(out, "PEXPIRE", key2, qttl, NULL);
		}
		zadd_add(&z, out, ts, name);
	}
	zadd_flush(&z, out);
	/* QPs of the last sample that are gone (destroyed, or their process
	 * died): closed_ms, so that the controller drops them at once instead
	 * of planning around their last rates until the index entry is stale;
	 * the record keeps its last counters. Both lists are sorted by id. */
	for (size_t i = 0, j = 0; prev != NULL && i < prev->nqp; i++) {
		const struct agent_qp *q = &prev->qp[i];
		char name[64];
		int c = 1;

		while (j < s->nqp && (c = agent_qp_id_cmp(&s->qp[j].id, &q->id)) < 0)
			j++;
		if (c == 0 || q->id.kind != AGENT_QP)
			continue;
		agent_qp_name(q, name, sizeof(name));
		if (sample_has_name(s, name))
			continue; /* the same key, another peer: still live */
		rk(key, sizeof(key), cfg, ICE_RK_QP, name);
		agent_buf_cmd(out, "HSET", key, "closed_ms", ts, NULL);
		agent_buf_cmd(out, "PEXPIRE", key, qttl, NULL); /* a record made anew expires too */
	}
	rk(key, sizeof(key), cfg, ICE_RK_QPS, NULL);
	agent_buf_cmd(out, "ZREMRANGEBYSCORE", key, "-inf", old, NULL);

	/* per NIC */
	rk(key, sizeof(key), cfg, ICE_RK_NIC, cfg->nic);
	rk(key2, sizeof(key2), cfg, ICE_RK_NIC_TS, cfg->nic);
	nic_record(&rec, s, cfg);
	rec_end(&rec, out, key);
	if (!out->failed)
		agent_buf_cmd(out, "XADD", key2, "MAXLEN", "~", cap, id, "json", rec.doc.p, NULL);
	rec_fini(&rec);

	/* collective events: one stream per host (IDs by Redis: several NICs'
	 * agents share it) */
	rk(key, sizeof(key), cfg, ICE_RK_EVENTS, NULL);
	for (size_t i = 0; i < s->nev; i++) {
		txt = dump(agent_event_json(&s->ev[i]));
		if (txt == NULL) {
			out->failed = true;
			continue;
		}
		agent_buf_cmd(out, "XADD", key, "MAXLEN", "~", cap, "*", "nic", cfg->nic, "json",
			      txt, NULL);
		free(txt);
	}
	return out->failed ? -ENOMEM : 0;
}

void agent_redis_init(struct agent_redis *r, const struct agent_cfg *cfg, bool bpf)
{
	memset(r, 0, sizeof(*r));
	r->cfg = cfg;
	r->bpf = bpf;
	r->started_ms = ice_wall_ms();
	ice_redis_init(&r->link, cfg->redis, cfg->redis_timeout);
}

void agent_redis_fini(struct agent_redis *r)
{
	ice_redis_fini(&r->link);
	r->up = false;
}

static void redis_down(struct agent_redis *r, uint64_t now_ns, const char *why)
{
	ice_redis_down(&r->link, now_ns, why);
	r->up = false;
	ice_warn(AGENT_SUB, "redis at %s unreachable: %s; retrying in %g s", r->cfg->redis,
		 r->link.why, (double)(r->link.next_try_ns - now_ns) / 1e9);
}

/* Read n replies; count error replies. 0, or -EIO when the link broke. */
static int redis_replies(struct agent_redis *r, unsigned n)
{
	return ice_redis_pipe(&r->link, n, NULL, &r->errors);
}

int agent_redis_render_register(const struct agent_cfg *cfg, bool bpf, uint64_t started_ms,
				struct agent_buf *b)
{
	char key[384], v[32], pid[16], ifx[16], ims[24], st[24], now[24];

	snprintf(v, sizeof(v), "%d", AGENT_SCHEMA_VERSION);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	snprintf(ifx, sizeof(ifx), "%d", cfg->ifindex);
	snprintf(ims, sizeof(ims), "%" PRIu64, (uint64_t)(cfg->interval / ICE_NSEC_PER_MSEC));
	snprintf(st, sizeof(st), "%" PRIu64, started_ms);
	snprintf(now, sizeof(now), "%" PRIu64, ice_wall_ms());
	rk(key, sizeof(key), cfg, ICE_RK_SCHEMA, NULL);
	agent_buf_cmd(b, "SET", key, v, NULL);
	rk(key, sizeof(key), cfg, ICE_RK_HOSTS, NULL);
	agent_buf_cmd(b, "SADD", key, cfg->host, NULL);
	rk(key, sizeof(key), cfg, ICE_RK_HOST, NULL);
	agent_buf_cmd(b, "HSET", key, "host", cfg->host, "schema", v, "last_ms", now, NULL);
	rk(key, sizeof(key), cfg, ICE_RK_NICS, NULL);
	agent_buf_cmd(b, "SADD", key, cfg->nic, NULL);
	rk(key, sizeof(key), cfg, ICE_RK_NIC_AGENT, cfg->nic);
	agent_buf_cmd(b, "HSET", key, "nic", cfg->nic, "addr", cfg->addr, "ifindex", ifx, "pid",
		      pid, "version", "0.1.0", "schema", v, "started_ms", st, "registered_ms", now,
		      "interval_ms", ims, "bpf", bpf ? "true" : "false", "state", "online", NULL);
	agent_buf_cmd(b, "HDEL", key, "stopped_ms", NULL);
	return b->failed ? -ENOMEM : 0;
}

static int redis_register(struct agent_redis *r)
{
	struct agent_buf b = {0};
	int ret = agent_redis_render_register(r->cfg, r->bpf, r->started_ms, &b);

	if (ret == 0)
		ret = ice_redis_append_formatted(&r->link, b.p, b.len) == 0 ? 0 : -EIO;
	if (ret == 0)
		ret = redis_replies(r, b.ncmd);
	free(b.p);
	return ret;
}

static void redis_connect(struct agent_redis *r, uint64_t now_ns)
{
	int ret = ice_redis_up(&r->link, now_ns);

	if (ret == -ECONNREFUSED)
		ice_warn(AGENT_SUB, "redis at %s unreachable: %s; retrying in %g s", r->cfg->redis,
			 r->link.why, (double)(r->link.next_try_ns - now_ns) / 1e9);
	if (ret < 0)
		return;
	if (redis_register(r) < 0) {
		redis_down(r, now_ns, NULL);
		return;
	}
	r->up = true;
	r->connects++;
	ice_info(AGENT_SUB, "redis at %s: connected, host %s registered", r->cfg->redis,
		 r->cfg->host);
}

void agent_redis_tick(struct agent_redis *r, struct agent_queue *q, uint64_t now_ns)
{
	uint64_t deadline = now_ns + r->cfg->interval / 2;

	if (!r->up) {
		redis_connect(r, now_ns);
		if (!r->up)
			return;
	}
	while (q->len > 0 && ice_now_ns() < deadline) {
		size_t n = 0, bytes = 0;
		unsigned ncmd = 0;

		/* one batch: append, then read all replies */
		for (size_t i = 0; i < q->len && n < BATCH_MAX_ITEMS && bytes < BATCH_MAX_BYTES;
		     i++, n++) {
			struct agent_queue_item *it = &q->item[(q->head + i) % q->cap];

			if (ice_redis_append_formatted(&r->link, it->buf, it->len) < 0)
				goto broken;
			bytes += it->len;
			ncmd += it->ncmd;
		}
		if (redis_replies(r, ncmd) < 0)
			goto broken;
		while (n-- > 0)
			agent_queue_pop(q);
	}
	return;
broken:
	redis_down(r, ice_now_ns(), NULL);
}

void agent_redis_offline(struct agent_redis *r)
{
	const struct agent_cfg *cfg = r->cfg;
	struct agent_buf b = {0};
	char key[384], now[24];

	if (!r->up)
		redis_connect(r, ice_now_ns());
	if (!r->up)
		return;
	snprintf(now, sizeof(now), "%" PRIu64, ice_wall_ms());
	rk(key, sizeof(key), cfg, ICE_RK_NIC_AGENT, cfg->nic);
	agent_buf_cmd(&b, "HSET", key, "state", "offline", "stopped_ms", now, NULL);
	rk(key, sizeof(key), cfg, ICE_RK_NIC_ALIVE, cfg->nic);
	agent_buf_cmd(&b, "DEL", key, NULL);
	if (!b.failed && ice_redis_append_formatted(&r->link, b.p, b.len) == 0)
		redis_replies(r, b.ncmd);
	free(b.p);
}
