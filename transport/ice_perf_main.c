// SPDX-License-Identifier: Apache-2.0
/*
 * ice-perf: perftest-style (ib_send_bw / ib_write_bw) one-way bandwidth of
 * the included transport between two ranks. Rank 0 sends, rank 1 receives.
 *
 *   ice-perf --netns iceA,iceB --size 64K --qps 2 --time 5     (one rank per netns)
 *   ice-perf --size 4K --op write                              (two local ranks)
 *   ice-perf --rank R --bootstrap IP:PORT --addr IP            (one rank, by hand)
 *
 * tp_comm_init() makes the rendezvous and the QPs; then the QPs are driven
 * directly: the sender keeps every send queue --depth messages deep, the
 * receiver keeps its receive queues full (SEND) or registers one region that
 * every RDMA WRITE lands in (WRITE). After the timed phase the sender ends
 * each QP with a zero-length SEND (FIN); RC ordering makes it the last thing
 * the receiver sees. Both sides measure their own window (same length, same
 * start after a barrier) and swap figures over the bootstrap connection.
 *
 * Work requests carry wr_id 0: the communicator's out-of-band helpers drive
 * the engine too and skip completions without a request.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ice_config.h"
#include "ice_log.h"
#include "ice_time.h"
#include "tp.h"
#include "tp_opts.h"

#define PERF_MAX_QPS 64
#define PERF_IDLE_NS (20 * ICE_NSEC_PER_SEC) /* no progress this long: give up */
/* the receiver waits longer, so the sender says why first */
#define PERF_RX_IDLE_NS (PERF_IDLE_NS + 10 * ICE_NSEC_PER_SEC)
#define PERF_WAIT_NS	(500 * ICE_NSEC_PER_USEC)
#define PERF_MAX_DEPTH	1000 /* below the transport's 1024-entry queues */

enum perf_op {
	PERF_SEND,
	PERF_WRITE,
};

struct opts {
	enum perf_op op;
	uint64_t size;
	uint64_t time_ns, warmup_ns;
	uint64_t iters, warmup_iters; /* iters != 0: count messages, not time */
	uint32_t depth;		      /* messages outstanding per QP (0: from the window) */
	bool json;
	struct tp_opts tp;
};

/* What one side measured over its window. */
struct side {
	double seconds;
	double bytes; /* payload: acknowledged (sender), received in order (receiver) */
	double pkts;  /* data packets sent (sender, resends included) or accepted */
	double retx;  /* packets resent */
	double timeouts;
	double naks;
	double cnps;
	double cpu;	/* CPU seconds of this process */
	double start_s; /* the window's start, CLOCK_MONOTONIC seconds */
	/* payload per QP: received in order (receiver), sent (sender) */
	double qp_bytes[PERF_MAX_QPS];
};

static FILE *human; /* stdout, or stderr with --json */

static int set_op(const struct ice_cfg_field *f, void *obj, const char *text, char *msg, size_t len)
{
	struct opts *o = obj;

	(void)f;
	if (strcmp(text, "send") != 0 && strcmp(text, "write") != 0) {
		snprintf(msg, len, "expected send or write, got '%s'", text);
		return -EINVAL;
	}
	o->op = text[0] == 's' ? PERF_SEND : PERF_WRITE;
	return 0;
}

/* --time and --warmup: seconds as a number (0.5), as before; f->min is the least */
static int set_seconds(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		       size_t len)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (errno != 0 || *end != '\0' || end == text || !(v >= f->min) || v > 86400) {
		snprintf(msg, len, "expected seconds, a number in [%g, 86400], got '%s'", f->min,
			 text);
		return -EINVAL;
	}
	*(uint64_t *)((char *)obj + f->offset) = (uint64_t)(v * 1e9);
	return 0;
}

#define F(k, t, m, ...) ICE_CFG_ROW(struct opts, k, t, m, __VA_ARGS__)
#define FN		ICE_CFG_FUNC_ROW
static const struct ice_cfg_field perf_fields[] = {
	F("size", ICE_CFG_SIZE, size, .min = 1, .max = 1u << 30, .alias = 's',
	  .help = "message size (default 64K)"),
	FN("op", set_op, .arg = "send|write", .help = "SEND (default) or RDMA WRITE"),
	FN("time", set_seconds, .offset = offsetof(struct opts, time_ns), .min = 0.01, .alias = 'D',
	   .arg = "SEC", .help = "timed phase in seconds (default 5)"),
	FN("warmup", set_seconds, .offset = offsetof(struct opts, warmup_ns), .arg = "SEC",
	   .help = "untimed phase first (default 1)"),
	F("iters", ICE_CFG_UINT, iters, .min = 1, .max = 1ull << 40, .alias = 'n',
	  .help = "count N messages instead of timing"),
	F("warmup_iters", ICE_CFG_UINT, warmup_iters, .min = 0, .max = 1ull << 40,
	  .help = "untimed messages first with --iters (default 64)"),
	F("depth", ICE_CFG_U32, depth, .min = 1, .max = PERF_MAX_DEPTH, .alias = 't',
	  .help = "messages outstanding per QP (default: two windows)"),
	F("json", ICE_CFG_BOOL, json, .flags = ICE_CFG_SWITCH,
	  .help = "one JSON object on stdout (human lines go to stderr)"),
};

/* A message is at most 2^22 packets; depth 0: two windows per QP in flight. */
static int size_check(struct opts *o, uint32_t mtu, struct ice_cfg_err *err, const char *path)
{
	uint64_t pkts, d;

	if (o->size > (uint64_t)mtu << 22)
		return ice_cfg_fail(err, path, "size",
				    "--size %llu: expected at most 2^22 packets of MTU %u",
				    (unsigned long long)o->size, mtu);
	if (o->depth == 0 && o->tp.cc.eng.mtu != 0) {
		pkts = (o->size + mtu - 1) / mtu;
		d = 2 * (uint64_t)o->tp.cc.eng.window_pkts / (pkts ? pkts : 1);
		o->depth = (uint32_t)(d < 4 ? 4 : d > PERF_MAX_DEPTH ? PERF_MAX_DEPTH : d);
	}
	return 0;
}

static int perf_finish(void *obj, const char *path, struct ice_cfg_err *err)
{
	struct opts *o = obj;
	const char *ns = o->tp.netns;

	if (ns != NULL && o->tp.rank >= 0)
		return ice_cfg_fail(err, path, "netns", "--netns and --rank exclude each other");
	if (ns != NULL && (strchr(ns, ',') == NULL || strchr(ns, ',') != strrchr(ns, ',')))
		return ice_cfg_fail(err, path, "netns",
				    "expected two namespaces, SENDER,RECEIVER, got '%s'", ns);
	if (size_check(o, o->tp.cc.eng.mtu ? o->tp.cc.eng.mtu : 4096, err, path) < 0)
		return -EINVAL;
	o->tp.cc.nranks = 2;
	return 0;
}

/* 0 to run, 1 after --help, -EINVAL after a bad option (printed) */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	struct ice_cfg_table tp;
	struct ice_cfg_cli cli = {
		.tool = "ice-perf",
		.synopsis = "usage: ice-perf [options]\n"
			    "rank 0 sends, rank 1 receives; --netns takes SENDER,RECEIVER",
		.fields = perf_fields,
		.nfields = sizeof(perf_fields) / sizeof(perf_fields[0]),
		.obj = o,
		.finish = perf_finish,
		.more = &tp,
		.nmore = 1,
		.epilog = "local ranks take --addr-base 127.30.0.1, .2 unless it is given\n",
	};

	memset(o, 0, sizeof(*o));
	tp_opts_init(&o->tp, "ice-perf", "127.30.0.1");
	tp = tp_opts_table(&o->tp);
	o->op = PERF_SEND;
	o->size = 64u << 10;
	o->time_ns = 5 * ICE_NSEC_PER_SEC;
	o->warmup_ns = 1 * ICE_NSEC_PER_SEC;
	o->warmup_iters = 64;
	return ice_cfg_parse_args(&cli, argc, argv);
}

/* ---- measurement ------------------------------------------------------------ */

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

/* Counters of this side, summed over the QPs, at one instant. */
struct snap {
	uint64_t ns;
	double cpu;
	double bytes, pkts, retx, timeouts, naks, cnps;
	double qp_bytes[PERF_MAX_QPS];
};

static void take_snap(struct tp_comm *c, bool sender, double acked_bytes, struct snap *s)
{
	memset(s, 0, sizeof(*s));
	for (uint32_t q = 0; q < tp_comm_qps_per_conn(c); q++) {
		const struct tp_qp_stats *st = tp_qp_stats(tp_comm_qp(c, !tp_comm_rank(c), q));

		s->pkts += (double)(sender ? st->tx_pkts : st->rx_pkts);
		s->retx += (double)st->retx_pkts;
		s->timeouts += (double)st->timeouts;
		s->naks += (double)st->naks_rx;
		s->cnps += (double)st->cnps_rx;
		s->qp_bytes[q] = (double)(sender ? st->tx_bytes : st->rx_bytes);
		if (!sender)
			s->bytes += (double)st->rx_bytes;
	}
	if (sender)
		s->bytes = acked_bytes;
	s->ns = ice_now_ns();
}

/* A snapshot that opens or closes a window also takes the CPU time
 * (getrusage is too dear for every turn of the loop). */
static void snap_cpu(struct snap *s)
{
	s->cpu = cpu_seconds();
}

static void side_from(const struct snap *a, const struct snap *b, struct side *d)
{
	d->seconds = (double)(b->ns - a->ns) * 1e-9;
	d->start_s = (double)a->ns * 1e-9;
	d->bytes = b->bytes - a->bytes;
	d->pkts = b->pkts - a->pkts;
	d->retx = b->retx - a->retx;
	d->timeouts = b->timeouts - a->timeouts;
	d->naks = b->naks - a->naks;
	d->cnps = b->cnps - a->cnps;
	d->cpu = b->cpu - a->cpu;
	for (int q = 0; q < PERF_MAX_QPS; q++)
		d->qp_bytes[q] = b->qp_bytes[q] - a->qp_bytes[q];
}

/* Every rank gets rank src's value of *v (the other contributes 0). */
static int oob_from(struct tp_comm *c, int src, double *v)
{
	if (tp_comm_rank(c) != src)
		*v = 0;
	return tp_comm_oob_sum(c, v);
}

static int side_share(struct tp_comm *c, int src, struct side *s)
{
	double *f[] = {&s->seconds, &s->bytes, &s->pkts, &s->retx,   &s->timeouts,
		       &s->naks,    &s->cnps,  &s->cpu,	 &s->start_s};
	int ret = 0;

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]) && ret == 0; i++)
		ret = oob_from(c, src, f[i]);
	for (uint32_t q = 0; q < tp_comm_qps_per_conn(c) && ret == 0; q++)
		ret = oob_from(c, src, &s->qp_bytes[q]);
	return ret;
}

/* Index of the QP with number qpn among the connection's QPs, or -1. */
static int qp_index(struct tp_comm *c, uint32_t qpn)
{
	for (uint32_t q = 0; q < tp_comm_qps_per_conn(c); q++)
		if (tp_qp_num(tp_comm_qp(c, !tp_comm_rank(c), q)) == qpn)
			return (int)q;
	return -1;
}

static const char *why_stuck(struct tp_engine *e)
{
	return tp_engine_stats(e)->tx_eagain > 0
		       ? " (sends are being refused: a packet larger than the path MTU? try "
			 "--mtu 1024 on a 1500-byte link)"
		       : " (peer gone or unreachable?)";
}

/* ---- sender ------------------------------------------------------------------ */

struct sender {
	struct tp_comm *c;
	struct tp_engine *e;
	const struct opts *o;
	uint8_t *buf;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t k;
	uint32_t outstanding[PERF_MAX_QPS];
	uint64_t posted, completed; /* data messages */
	uint32_t next_q;
	uint64_t last_progress_ns;
};

static int sender_post(struct sender *s, uint32_t q, size_t len)
{
	struct tp_qp *qp = tp_comm_qp(s->c, 1, q);
	int ret;

	if (s->o->op == PERF_WRITE && len != 0)
		ret = tp_qp_post_write(qp, s->buf, len, s->raddr, s->rkey, 0);
	else
		ret = tp_qp_post_send(qp, s->buf, len, 0);
	if (ret == 0)
		s->outstanding[q]++;
	return ret;
}

/* Post data messages while the queues have room and the phase wants more
 * (limit: total messages to post; UINT64_MAX in time mode). */
static int sender_fill(struct sender *s, uint64_t limit)
{
	for (uint32_t tries = 0; tries < s->k && s->posted < limit;) {
		uint32_t q = s->next_q;
		int ret;

		if (s->outstanding[q] >= s->o->depth) {
			s->next_q = (q + 1) % s->k;
			tries++;
			continue;
		}
		ret = sender_post(s, q, s->o->size);
		if (ret == -EAGAIN) {
			s->next_q = (q + 1) % s->k;
			tries++;
			continue;
		}
		if (ret < 0) {
			fprintf(stderr, "ice-perf: sender: posting on QP %u failed: %s\n", q,
				strerror(-ret));
			return ret;
		}
		s->posted++;
		tries = 0;
		/* spread messages over the QPs in turn */
		s->next_q = (q + 1) % s->k;
	}
	return 0;
}

static int sender_step(struct sender *s)
{
	struct tp_wc wc[64];
	int n, ret;

	ret = tp_engine_progress(s->e, PERF_WAIT_NS);
	if (ret < 0) {
		fprintf(stderr, "ice-perf: sender: engine failed: %s\n", strerror(-ret));
		return ret;
	}
	while ((n = tp_engine_poll_cq(s->e, wc, 64)) > 0) {
		for (int i = 0; i < n; i++) {
			int q = qp_index(s->c, wc[i].qpn);

			if (wc[i].status < 0) {
				fprintf(stderr,
					"ice-perf: sender: QP 0x%x: a work request failed: "
					"%s%s\n",
					wc[i].qpn, strerror(-wc[i].status),
					wc[i].status == -ETIMEDOUT ? why_stuck(s->e) : "");
				return wc[i].status;
			}
			if (q < 0 || wc[i].opcode == TP_WC_RECV)
				continue;
			s->outstanding[q]--;
			s->completed++;
		}
		s->last_progress_ns = ice_now_ns();
	}
	if (ice_now_ns() - s->last_progress_ns > PERF_IDLE_NS) {
		fprintf(stderr, "ice-perf: sender: no message completed for %llu s%s\n",
			(unsigned long long)(PERF_IDLE_NS / ICE_NSEC_PER_SEC), why_stuck(s->e));
		return -ETIMEDOUT;
	}
	return 0;
}

static int run_sender(struct tp_comm *c, const struct opts *o, uint8_t *buf, struct side *me)
{
	struct sender s = {
		.c = c, .e = tp_comm_engine(c), .o = o, .k = tp_comm_qps_per_conn(c), .buf = buf};
	struct snap a, b;
	double v;
	int ret;

	memset(s.buf, 0xa5, o->size);
	v = 0;
	ret = oob_from(c, 1, &v); /* the receiver's region */
	s.raddr = (uint64_t)v;
	if (ret == 0) {
		v = 0;
		ret = oob_from(c, 1, &v);
		s.rkey = (uint32_t)v;
	}
	if (ret == 0)
		ret = tp_comm_barrier(c);
	if (ret < 0)
		goto out;
	s.last_progress_ns = ice_now_ns();
	if (o->iters != 0) {
		while (s.completed < o->warmup_iters && ret == 0) {
			ret = sender_fill(&s, o->warmup_iters + o->iters);
			if (ret == 0)
				ret = sender_step(&s);
		}
		take_snap(c, true, (double)s.completed * (double)o->size, &a);
		snap_cpu(&a);
		while (s.completed < o->warmup_iters + o->iters && ret == 0) {
			ret = sender_fill(&s, o->warmup_iters + o->iters);
			if (ret == 0)
				ret = sender_step(&s);
		}
		take_snap(c, true, (double)s.completed * (double)o->size, &b);
		snap_cpu(&b);
	} else {
		uint64_t t0 = ice_now_ns();

		while (ice_now_ns() - t0 < o->warmup_ns && ret == 0) {
			ret = sender_fill(&s, UINT64_MAX);
			if (ret == 0)
				ret = sender_step(&s);
		}
		take_snap(c, true, (double)s.completed * (double)o->size, &a);
		snap_cpu(&a);
		while (ice_now_ns() - a.ns < o->time_ns && ret == 0) {
			ret = sender_fill(&s, UINT64_MAX);
			if (ret == 0)
				ret = sender_step(&s);
		}
		take_snap(c, true, (double)s.completed * (double)o->size, &b);
		snap_cpu(&b);
	}
	/* FIN on every QP, then wait for everything to be acknowledged */
	for (uint32_t q = 0; q < s.k && ret == 0; q++) {
		while ((ret = sender_post(&s, q, 0)) == -EAGAIN)
			if ((ret = sender_step(&s)) < 0)
				break;
	}
	for (;;) {
		uint32_t left = 0;

		for (uint32_t q = 0; q < s.k; q++)
			left += s.outstanding[q];
		if (left == 0 || ret < 0)
			break;
		ret = sender_step(&s);
	}
	if (ret == 0)
		side_from(&a, &b, me);
out:
	return ret;
}

/* ---- receiver ------------------------------------------------------------------ */

static int run_receiver(struct tp_comm *c, const struct opts *o, uint8_t *buf, struct side *me)
{
	struct tp_engine *e = tp_comm_engine(c);
	uint32_t k = tp_comm_qps_per_conn(c), fins = 0;
	uint64_t rlen = o->op == PERF_SEND ? o->size : 0;
	bool fin[PERF_MAX_QPS] = {0}, in_window = false, done_window = false;
	uint64_t start, last_ns, last_bytes = 0;
	struct tp_mr *mr = NULL;
	struct snap a = {0}, b = {0}, now;
	double v;
	int ret = 0;

	if (o->op == PERF_WRITE) {
		mr = tp_mr_reg(e, buf, o->size);
		if (mr == NULL) {
			ret = -errno;
			fprintf(stderr, "ice-perf: receiver: cannot register %llu bytes: %s\n",
				(unsigned long long)o->size, strerror(errno));
		}
	}
	/* Receives: full queues for SEND; a few for the FINs with WRITE. */
	for (uint32_t q = 0; q < k && ret == 0; q++) {
		struct tp_qp *qp = tp_comm_qp(c, 0, q);

		for (int i = 0; o->op == PERF_SEND || i < 4; i++)
			if (tp_qp_post_recv(qp, buf, rlen, 0) < 0)
				break;
	}
	v = mr != NULL ? (double)(uintptr_t)mr->addr : 0;
	if (oob_from(c, 1, &v) < 0 || (v = mr != NULL ? mr->rkey : 0, oob_from(c, 1, &v)) < 0 ||
	    tp_comm_barrier(c) < 0 || ret < 0) {
		ret = ret < 0 ? ret : -EPROTO;
		goto out;
	}
	start = last_ns = ice_now_ns();
	while (fins < k) {
		struct tp_wc wc[64];
		int n;

		ret = tp_engine_progress(e, PERF_WAIT_NS);
		if (ret < 0) {
			fprintf(stderr, "ice-perf: receiver: engine failed: %s\n", strerror(-ret));
			goto out;
		}
		ret = 0;
		while ((n = tp_engine_poll_cq(e, wc, 64)) > 0) {
			for (int i = 0; i < n; i++) {
				int q = qp_index(c, wc[i].qpn);

				if (q < 0 || wc[i].opcode != TP_WC_RECV)
					continue;
				if (wc[i].status < 0) {
					fprintf(stderr,
						"ice-perf: receiver: QP 0x%x: receive failed: "
						"%s\n",
						wc[i].qpn, strerror(-wc[i].status));
					ret = wc[i].status;
					goto out;
				}
				if (wc[i].byte_len == 0) {
					if (!fin[q]) {
						fin[q] = true;
						fins++;
					}
					continue;
				}
				tp_qp_post_recv(tp_comm_qp(c, 0, (uint32_t)q), buf, rlen, 0);
			}
		}
		take_snap(c, false, 0, &now);
		if (o->iters != 0) {
			if (!in_window && now.bytes >= (double)o->warmup_iters * (double)o->size) {
				a = now;
				snap_cpu(&a);
				in_window = true;
			}
			if (!done_window &&
			    now.bytes >= (double)(o->warmup_iters + o->iters) * (double)o->size) {
				b = now;
				snap_cpu(&b);
				done_window = true;
			}
		} else {
			if (!in_window && now.ns - start >= o->warmup_ns) {
				a = now;
				snap_cpu(&a);
				in_window = true;
			}
			if (in_window && !done_window && now.ns - a.ns >= o->time_ns) {
				b = now;
				snap_cpu(&b);
				done_window = true;
			}
		}
		if (now.bytes != (double)last_bytes) {
			last_bytes = (uint64_t)now.bytes;
			last_ns = now.ns;
		} else if (now.ns - last_ns > PERF_RX_IDLE_NS) {
			fprintf(stderr,
				"ice-perf: receiver: no data for %llu s (%u of %u QPs "
				"finished); sender gone?\n",
				(unsigned long long)(PERF_RX_IDLE_NS / ICE_NSEC_PER_SEC), fins, k);
			ret = -ETIMEDOUT;
			goto out;
		}
	}
	if (!done_window) { /* the sender stopped first (clocks, scheduling) */
		b = now;
		snap_cpu(&b);
	}
	if (!in_window)
		a = b;
	side_from(&a, &b, me);
out:
	/* The receives still posted (into buf, which the caller frees after
	 * the QPs) are flushed when the QPs go. */
	tp_mr_dereg(e, mr);
	return ret;
}

/* ---- report ---------------------------------------------------------------------- */

static double pct(double cpu, double sec)
{
	return sec > 0 ? 100.0 * cpu / sec : 0;
}

static double per_s(double x, double sec)
{
	return sec > 0 ? x / sec : 0;
}

static void print_qps(struct tp_comm *c)
{
	int r = tp_comm_rank(c);

	for (uint32_t q = 0; q < tp_comm_qps_per_conn(c); q++) {
		struct tp_qp *qp = tp_comm_qp(c, !r, q);

		fprintf(human, "# rank %d (%s) QP %u: qpn 0x%06x (%u) sport %u\n", r,
			r == 0 ? "sender" : "receiver", q, tp_qp_num(qp), tp_qp_num(qp),
			tp_qp_sport(qp));
	}
	fflush(human);
}

/* Per QP (the sender's side): the receiver's goodput over the window, and the
 * sender's counters over the whole run (warm-up and FIN included). */
static json_t *qps_json(struct tp_comm *c, const struct side *rx)
{
	json_t *a = json_array();

	for (uint32_t q = 0; a != NULL && q < tp_comm_qps_per_conn(c); q++) {
		struct tp_qp *qp = tp_comm_qp(c, 1, q);
		const struct tp_qp_stats *st = tp_qp_stats(qp);

		json_array_append_new(
			a,
			json_pack("{s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "qpn",
				  (json_int_t)tp_qp_num(qp), "sport", (json_int_t)tp_qp_sport(qp),
				  "goodput_mbps", per_s(rx->qp_bytes[q] * 8, rx->seconds) / 1e6,
				  "tx_pkts", (json_int_t)st->tx_pkts, "tx_bytes",
				  (json_int_t)st->tx_bytes, "retx", (json_int_t)st->retx_pkts,
				  "timeouts", (json_int_t)st->timeouts, "naks",
				  (json_int_t)st->naks_rx, "cnps", (json_int_t)st->cnps_rx, "tlps",
				  (json_int_t)st->tlps));
	}
	return a;
}

static void report(const struct opts *o, struct tp_comm *c, const struct side *tx,
		   const struct side *rx)
{
	const struct tp_engine_cfg *ec = tp_engine_cfg(tp_comm_engine(c));
	double good = per_s(rx->bytes * 8, rx->seconds) / 1e6;
	double txm = per_s(tx->bytes * 8, tx->seconds) / 1e6;
	double ctx = pct(tx->cpu, tx->seconds), crx = pct(rx->cpu, rx->seconds);
	double msgs = tx->bytes / (double)o->size;

	fprintf(human,
		"sender:   %9.1f Mbit/s acknowledged payload, %9.0f msgs/s, %9.0f pkts/s, "
		"%.0f resent, %.0f timeouts, %.0f NAKs, %.0f CNPs, CPU %5.1f%%\n",
		txm, per_s(msgs, tx->seconds), per_s(tx->pkts, tx->seconds), tx->retx, tx->timeouts,
		tx->naks, tx->cnps, ctx);
	fprintf(human,
		"receiver: %9.1f Mbit/s payload goodput,      %9.0f msgs/s, %9.0f pkts/s, "
		"CPU %5.1f%%\n",
		good, per_s(rx->bytes / (double)o->size, rx->seconds), per_s(rx->pkts, rx->seconds),
		crx);
	if (ctx > 90 || crx > 90)
		fprintf(human, "# CPU-bound: the %s used %.0f%% of a core\n",
			ctx >= crx ? "sender" : "receiver", ctx >= crx ? ctx : crx);
	fflush(human);
	if (o->json) {
		json_t *j = json_pack(
			"{s:s, s:f, s:f, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:f, "
			"s:f, s:I, s:I, s:I, s:b, s:b, s:b, s:f, s:f, s:o}",
			"op", o->op == PERF_SEND ? "send" : "write", "goodput_mbps", good,
			"tx_mbps", txm, "msgs", (json_int_t)msgs, "pkts", (json_int_t)tx->pkts,
			"retx", (json_int_t)tx->retx, "cpu_sender", ctx, "cpu_receiver", crx,
			"seconds", rx->seconds, "seconds_sender", tx->seconds, "size",
			(json_int_t)o->size, "mtu", (json_int_t)ec->mtu, "qps",
			(json_int_t)tp_comm_qps_per_conn(c), "msgs_per_s", per_s(msgs, tx->seconds),
			"pkts_per_s", per_s(tx->pkts, tx->seconds), "rx_pkts", (json_int_t)rx->pkts,
			"timeouts", (json_int_t)tx->timeouts, "naks", (json_int_t)tx->naks, "dcqcn",
			(int)(ec->dcqcn.enable != 0), "icrc_verify", (int)ec->icrc_verify, "gso",
			(int)ec->gso, "line_rate_mbps", (double)ec->line_rate_bps / 1e6,
			"window_start_s", rx->start_s, "qp", qps_json(c, rx));

		if (j == NULL || json_dumpf(j, stdout, JSON_COMPACT) < 0) {
			fprintf(stderr, "ice-perf: cannot write the JSON result\n");
		} else {
			fputc('\n', stdout);
			fflush(stdout);
		}
		json_decref(j);
	}
}

static int run_rank(struct opts *o)
{
	struct side tx = {0}, rx = {0};
	struct tp_comm *c;
	uint8_t *buf;
	double v[6];
	int r, ret;

	c = tp_comm_init(&o->tp.cc);
	if (c == NULL) {
		fprintf(stderr, "ice-perf: rank %d: cannot create the communicator: %s\n",
			o->tp.cc.rank, strerror(errno));
		return 1;
	}
	r = tp_comm_rank(c);
	/* the receiver takes the sender's run settings (the MTU: tp_comm's) */
	v[0] = (double)o->size;
	v[1] = (double)o->op;
	v[2] = (double)o->time_ns;
	v[3] = (double)o->warmup_ns;
	v[4] = (double)o->iters;
	v[5] = (double)o->warmup_iters;
	for (int i = 0; i < 6; i++) {
		if (oob_from(c, 0, &v[i]) < 0) {
			fprintf(stderr, "ice-perf: rank %d: settings exchange failed\n", r);
			tp_comm_free(c);
			return 1;
		}
	}
	o->size = (uint64_t)v[0];
	o->op = (enum perf_op)(int)v[1];
	o->time_ns = (uint64_t)v[2];
	o->warmup_ns = (uint64_t)v[3];
	o->iters = (uint64_t)v[4];
	o->warmup_iters = (uint64_t)v[5];
	{
		struct ice_cfg_err ce;
		char eb[256];

		/* the MTU is known now (--mtu 0: from the interface) */
		o->tp.cc.eng.mtu = tp_engine_cfg(tp_comm_engine(c))->mtu;
		if (size_check(o, o->tp.cc.eng.mtu, &ce, "ice-perf") < 0) {
			fprintf(stderr, "ice-perf: %s\n", ice_cfg_err_str(&ce, eb, sizeof(eb)));
			tp_comm_free(c);
			return 1;
		}
	}
	if (r == 0) {
		const struct tp_engine_cfg *ec = tp_engine_cfg(tp_comm_engine(c));

		fprintf(human, "# ice-perf: %s, %u QP(s), %llu-byte messages, depth %u, MTU %u, ",
			o->op == PERF_SEND ? "SEND" : "RDMA WRITE", tp_comm_qps_per_conn(c),
			(unsigned long long)o->size, o->depth, ec->mtu);
		if (o->iters)
			fprintf(human, "%llu messages", (unsigned long long)o->iters);
		else
			fprintf(human, "%.2f s", (double)o->time_ns * 1e-9);
		fprintf(human, ", DCQCN %s, line rate ", ec->dcqcn.enable ? "on" : "off");
		if (ec->line_rate_bps)
			fprintf(human, "%.0f Mbit/s", (double)ec->line_rate_bps / 1e6);
		else
			fprintf(human, "unlimited");
		fprintf(human, ", ICRC check %s, GSO %s\n", ec->icrc_verify ? "on" : "off",
			ec->gso ? "on" : "off");
	}
	print_qps(c);
	buf = dev_mem_ops_get(DEV_MEM_HOST)->alloc(o->size);
	if (buf == NULL) {
		fprintf(stderr, "ice-perf: rank %d: out of memory for %llu bytes\n", r,
			(unsigned long long)o->size);
		ret = -ENOMEM;
	} else {
		ret = r == 0 ? run_sender(c, o, buf, &tx) : run_receiver(c, o, buf, &rx);
	}
	if (ret == 0)
		ret = side_share(c, 0, &tx);
	if (ret == 0)
		ret = side_share(c, 1, &rx);
	if (ret == 0 && r == 0)
		report(o, c, &tx, &rx);
	tp_comm_free(c); /* destroys the QPs: nothing points into buf after */
	dev_mem_ops_get(DEV_MEM_HOST)->free(buf);
	return ret < 0 ? 1 : 0;
}

static int rank_entry(void *arg)
{
	return run_rank(arg);
}

int main(int argc, char **argv)
{
	struct opts o;
	int ret;

	ice_log_init_env();
	ret = parse_opts(argc, argv, &o);
	if (ret != 0)
		return ret > 0 ? 0 : 2;
	human = o.json ? stderr : stdout;
	setvbuf(stdout, NULL, _IOLBF, 0);
	return tp_opts_run(&o.tp, 2, rank_entry, &o);
}
