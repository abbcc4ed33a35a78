// SPDX-License-Identifier: Apache-2.0
/*
 * ice-bench: nccl-tests-style benchmark of the included transport.
 *
 *   ice-bench -C allreduce -b 8 -e 64M -f 2 --nranks 4       (local ranks)
 *   ice-bench -C allreduce --netns iceh0,iceh1,iceh2,iceh3    (one rank per netns)
 *   ice-bench --rank R --nranks N --bootstrap IP:PORT --addr IP   (one rank, by hand)
 *
 * Output columns and bus-bandwidth factors follow nccl-tests (see
 * docs/benchmarks.md); an extra trailing column gives the CPU cores the
 * ranks used during the timed runs, because on small hosts the CPU, not the
 * network, is often the limit. With --json, rank 0 prints one JSON object on
 * stdout at the end (schema in transport/README.md) and the table goes to
 * stderr.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <math.h>
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

#include <jansson.h>

#include "ice_config.h"
#include "ice_dcqcn.h"
#include "ice_log.h"
#include "ice_time.h"
#include "tp.h"
#include "tp_opts.h"

enum coll {
	COLL_ALLREDUCE,
	COLL_REDUCESCATTER,
	COLL_ALLGATHER,
	COLL_BROADCAST,
	COLL_ALLTOALL,
	COLL_SENDRECV,
	COLL_MAX,
};

static const char *const coll_names[COLL_MAX + 1] = {
	"allreduce", "reducescatter", "allgather", "broadcast", "alltoall", "sendrecv", NULL,
};

struct opts {
	enum coll coll;
	uint64_t minbytes, maxbytes, stepbytes;
	double stepfactor;
	int iters, warmup, check;
	int dtype, op, root;
	int nranks;
	bool json;
	int argc; /* the command line, for --json */
	char **argv;
	struct tp_opts tp;
};

static FILE *human; /* stdout, or stderr with --json */

/* ---- options ------------------------------------------------------------- */

static int set_stepfactor(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
			  size_t len)
{
	struct opts *o = obj;
	char *end;

	(void)f;
	o->stepfactor = strtod(text, &end);
	if (end == text || *end != '\0' || !(o->stepfactor > 1.0) || !isfinite(o->stepfactor)) {
		snprintf(msg, len, "expected a number greater than 1, got '%s'", text);
		return -EINVAL;
	}
	return 0;
}

static int set_dtype(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		     size_t len)
{
	(void)f;
	((struct opts *)obj)->dtype = dev_dtype_parse(text);
	if (((struct opts *)obj)->dtype >= 0)
		return 0;
	snprintf(msg, len,
		 "expected int8, uint8, int32, uint32, int64, uint64, half, float, double or "
		 "bfloat16, got '%s'",
		 text);
	return -EINVAL;
}

static int set_op(const struct ice_cfg_field *f, void *obj, const char *text, char *msg, size_t len)
{
	(void)f;
	((struct opts *)obj)->op = dev_redop_parse(text);
	if (((struct opts *)obj)->op >= 0)
		return 0;
	snprintf(msg, len, "expected sum, prod, max, min or avg, got '%s'", text);
	return -EINVAL;
}

static int set_split(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		     size_t len)
{
	struct opts *o = obj;

	(void)f;
	if (strcmp(text, "0") != 0 && strcmp(text, "1") != 0) {
		snprintf(msg, len, "expected 0 or 1, got '%s'", text);
		return -EINVAL;
	}
	o->tp.cc.spread = text[0] == '1' ? TP_SPREAD_SPLIT : TP_SPREAD_ROUND_ROBIN;
	return 0;
}

#define F(k, t, m, ...) ICE_CFG_ROW(struct opts, k, t, m, __VA_ARGS__)
#define FN		ICE_CFG_FUNC_ROW
static const struct ice_cfg_field bench_fields[] = {
	F("coll", ICE_CFG_ENUM, coll, .choices = coll_names, .alias = 'C', .arg = "NAME",
	  .help = "allreduce (default), reducescatter, allgather, broadcast,\nalltoall, sendrecv"),
	F("minbytes", ICE_CFG_SIZE, minbytes, .alias = 'b', .help = "smallest size (default 8)"),
	F("maxbytes", ICE_CFG_SIZE, maxbytes, .alias = 'e', .help = "largest size (default 64M)"),
	F("stepbytes", ICE_CFG_SIZE, stepbytes, .alias = 'i',
	  .help = "add this between sizes (instead of -f)"),
	FN("stepfactor", set_stepfactor, .alias = 'f', .arg = "N",
	   .help = "multiply by this between sizes (default 2)"),
	F("iters", ICE_CFG_I32, iters, .min = 1, .max = 1000000, .alias = 'n',
	  .help = "timed iterations per size (default 20)"),
	F("warmup_iters", ICE_CFG_I32, warmup, .min = 0, .max = 1000000, .alias = 'w',
	  .help = "untimed iterations first (default 5)"),
	F("check", ICE_CFG_I32, check, .min = 0, .max = 1, .alias = 'c', .arg = "0|1",
	  .help = "check results (default 1)"),
	FN("datatype", set_dtype, .alias = 'd', .arg = "T",
	   .help = "int8 uint8 int32 uint32 int64 uint64 half float double\nbfloat16 (default "
		   "float)"),
	FN("op", set_op, .alias = 'o', .arg = "OP", .help = "sum prod max min avg (default sum)"),
	F("root", ICE_CFG_I32, root, .min = 0, .max = 4095, .alias = 'r',
	  .help = "root of broadcast (default 0)"),
	F("nranks", ICE_CFG_I32, nranks, .min = 1, .max = 4095, .alias = 'N',
	  .help = "ranks; without --rank they are started here"),
	FN("split", set_split, .arg = "0|1",
	   .help = "split messages over the QPs (1, default) or take QPs\nin turn (0), like "
		   "NCCL_IB_SPLIT_DATA_ON_QPS"),
	F("slice", ICE_CFG_SIZE, tp.cc.slice_bytes, .help = "ring pipelining unit (default 1M)"),
	F("json", ICE_CFG_BOOL, json, .flags = ICE_CFG_SWITCH,
	  .help = "one JSON object on stdout at the end (the table goes\nto stderr)"),
};

static int bench_finish(void *obj, const char *path, struct ice_cfg_err *err)
{
	struct opts *o = obj;

	if (o->minbytes > o->maxbytes)
		return ice_cfg_fail(err, path, "minbytes", "-b %llu is larger than -e %llu",
				    (unsigned long long)o->minbytes,
				    (unsigned long long)o->maxbytes);
	if (o->tp.netns == NULL && o->root >= o->nranks)
		return ice_cfg_fail(err, path, "root", "--root %d: expected 0..%d", o->root,
				    o->nranks - 1);
	if (o->coll == COLL_ALLTOALL && o->op != DEV_SUM)
		o->op = DEV_SUM;
	return 0;
}

/* 0 to run, 1 after --help, -EINVAL after a bad option (printed) */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	struct ice_cfg_table tp;
	struct ice_cfg_cli cli = {
		.tool = "ice-bench",
		.synopsis = "usage: ice-bench [options]",
		.fields = bench_fields,
		.nfields = sizeof(bench_fields) / sizeof(bench_fields[0]),
		.obj = o,
		.finish = bench_finish,
		.more = &tp,
		.nmore = 1,
		.epilog = "local ranks take --addr-base 127.20.0.1, .2, ... unless it is given\n",
	};

	memset(o, 0, sizeof(*o));
	o->argc = argc;
	o->argv = argv;
	tp_opts_init(&o->tp, "ice-bench", "127.20.0.1");
	tp = tp_opts_table(&o->tp);
	o->coll = COLL_ALLREDUCE;
	o->minbytes = 8;
	o->maxbytes = 64u << 20;
	o->stepfactor = 2;
	o->iters = 20;
	o->warmup = 5;
	o->check = 1;
	o->dtype = DEV_FLOAT32;
	o->op = DEV_SUM;
	o->nranks = 2;
	return ice_cfg_parse_args(&cli, argc, argv);
}

/* ---- data and checking ---------------------------------------------------- */

/* Small integers, exact in every datatype for up to 8 ranks and each op. */
static double value(const struct opts *o, int rank, size_t i)
{
	if (o->op == DEV_PROD)
		return ((size_t)rank + i) % 11 == 0 ? 2.0 : 1.0;
	return (double)(((size_t)rank * 3 + i * 5) % 8);
}

static double expect_reduced(const struct opts *o, int n, size_t i)
{
	double acc = value(o, 0, i);

	for (int r = 1; r < n; r++) {
		double v = value(o, r, i);

		switch (o->op) {
		case DEV_SUM:
		case DEV_AVG:
			acc += v;
			break;
		case DEV_PROD:
			acc *= v;
			break;
		case DEV_MAX:
			acc = v > acc ? v : acc;
			break;
		case DEV_MIN:
			acc = v < acc ? v : acc;
			break;
		}
	}
	if (o->op == DEV_AVG) {
		acc /= n;
		if (o->dtype != DEV_FLOAT16 && o->dtype != DEV_FLOAT32 && o->dtype != DEV_FLOAT64 &&
		    o->dtype != DEV_BFLOAT16)
			acc = trunc(acc);
	}
	return acc;
}

static double tolerance(int dt)
{
	switch (dt) {
	case DEV_FLOAT16:
		return 1e-3;
	case DEV_BFLOAT16:
		return 1e-2;
	case DEV_FLOAT32:
		return 1e-6;
	case DEV_FLOAT64:
		return 1e-12;
	default:
		return 0;
	}
}

static int same(double got, double want, int dt)
{
	return fabs(got - want) <= tolerance(dt) * (fabs(want) > 1 ? fabs(want) : 1);
}

struct sizes {
	size_t count;	/* elements per rank argument (NCCL's count) */
	size_t sendlen; /* elements in the send buffer */
	size_t recvlen; /* elements in the receive buffer */
	size_t bytes;	/* the size column */
};

static struct sizes sizes_for(const struct opts *o, uint64_t size, int n)
{
	size_t es = dev_dtype_size(o->dtype);
	struct sizes s = {0};

	switch (o->coll) {
	case COLL_ALLREDUCE:
	case COLL_BROADCAST:
	case COLL_SENDRECV:
		s.count = size / es;
		s.sendlen = s.recvlen = s.count;
		s.bytes = s.count * es;
		break;
	case COLL_REDUCESCATTER:
		s.count = size / es / (size_t)n;
		s.sendlen = s.count * (size_t)n;
		s.recvlen = s.count;
		s.bytes = s.sendlen * es;
		break;
	case COLL_ALLGATHER:
		s.count = size / es / (size_t)n;
		s.sendlen = s.count;
		s.recvlen = s.count * (size_t)n;
		s.bytes = s.recvlen * es;
		break;
	case COLL_ALLTOALL:
		s.count = size / es / (size_t)n;
		s.sendlen = s.recvlen = s.count * (size_t)n;
		s.bytes = s.sendlen * es;
		break;
	default:
		break;
	}
	return s;
}

static double busbw_factor(enum coll c, int n)
{
	switch (c) {
	case COLL_ALLREDUCE:
		return 2.0 * (n - 1) / n;
	case COLL_REDUCESCATTER:
	case COLL_ALLGATHER:
	case COLL_ALLTOALL:
		return (double)(n - 1) / n;
	default:
		return 1.0;
	}
}

static void fill(const struct opts *o, void *buf, size_t len, int rank)
{
	for (size_t i = 0; i < len; i++)
		dev_elem_set(buf, i, o->dtype, value(o, rank, i));
}

static size_t check_result(const struct opts *o, const void *out, const struct sizes *s, int rank,
			   int n)
{
	size_t wrong = 0;

	for (size_t i = 0; i < s->recvlen; i++) {
		double got = dev_elem_get(out, i, o->dtype), want;
		size_t blk = s->count ? i / s->count : 0, off = s->count ? i % s->count : 0;

		switch (o->coll) {
		case COLL_ALLREDUCE:
			want = expect_reduced(o, n, i);
			break;
		case COLL_REDUCESCATTER:
			want = expect_reduced(o, n, (size_t)rank * s->count + i);
			break;
		case COLL_ALLGATHER:
			want = value(o, (int)blk, off);
			break;
		case COLL_BROADCAST:
			want = value(o, o->root, i);
			break;
		case COLL_ALLTOALL:
			want = value(o, (int)blk, (size_t)rank * s->count + off);
			break;
		case COLL_SENDRECV:
			want = value(o, (rank - 1 + n) % n, i);
			break;
		default:
			want = NAN;
		}
		if (!same(got, want, o->dtype))
			wrong++;
	}
	return wrong;
}

static int run_coll(const struct opts *o, struct tp_comm *c, const void *sb, void *rb,
		    const struct sizes *s)
{
	int n = tp_comm_nranks(c), r = tp_comm_rank(c);
	enum dev_dtype t = (enum dev_dtype)o->dtype;
	enum dev_redop op = (enum dev_redop)o->op;

	switch (o->coll) {
	case COLL_ALLREDUCE:
		return tp_allreduce(c, sb, rb, s->count, t, op);
	case COLL_REDUCESCATTER:
		return tp_reduce_scatter(c, sb, rb, s->count, t, op);
	case COLL_ALLGATHER:
		return tp_allgather(c, sb, rb, s->count, t);
	case COLL_BROADCAST:
		return tp_broadcast(c, sb, rb, s->count, t, o->root);
	case COLL_ALLTOALL:
		return tp_alltoall(c, sb, rb, s->count, t);
	case COLL_SENDRECV:
		return tp_sendrecv(c, sb, (r + 1) % n, rb, (r - 1 + n) % n, s->count, t);
	default:
		return -EINVAL;
	}
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

struct result {
	double us, algbw, busbw, cores;
	size_t wrong;
};

static int measure(const struct opts *o, struct tp_comm *c, const struct sizes *s, bool inplace,
		   uint8_t *sendbuf, uint8_t *recvbuf, struct result *res)
{
	int n = tp_comm_nranks(c), r = tp_comm_rank(c);
	size_t es = dev_dtype_size(o->dtype);
	uint8_t *sb = sendbuf, *rb = recvbuf;
	double t0, cpu0, dt, cpu, wrong;
	int ret;

	memset(res, 0, sizeof(*res));
	if (inplace) {
		sb = rb;
		if (o->coll == COLL_ALLGATHER)
			sb = rb + (size_t)r * s->count * es;
		else if (o->coll == COLL_REDUCESCATTER)
			rb = sb + (size_t)r * s->count * es;
	}
	fill(o, sb, s->sendlen, r);
	/* Nobody sends before every rank is ready: a rank busy filling or
	 * checking buffers does not drive its engine (a NIC would ACK anyway). */
	ret = tp_comm_barrier(c);
	if (ret < 0)
		return ret;
	for (int i = 0; i < o->warmup; i++) {
		ret = run_coll(o, c, sb, rb, s);
		if (ret < 0)
			return ret;
	}
	ret = tp_comm_barrier(c);
	if (ret < 0)
		return ret;
	t0 = (double)ice_now_ns();
	cpu0 = cpu_seconds();
	for (int i = 0; i < o->iters; i++) {
		ret = run_coll(o, c, sb, rb, s);
		if (ret < 0)
			return ret;
	}
	dt = ((double)ice_now_ns() - t0) / o->iters * 1e-3;
	cpu = cpu_seconds() - cpu0;
	ret = tp_comm_oob_max(c, &dt);
	if (ret == 0)
		ret = tp_comm_oob_sum(c, &cpu);
	if (ret < 0)
		return ret;
	res->us = dt;
	res->algbw = (double)s->bytes / (dt * 1e-6) / 1e9;
	res->busbw = res->algbw * busbw_factor(o->coll, n);
	res->cores = cpu / (dt * 1e-6 * o->iters);
	if (o->check) {
		fill(o, sb, s->sendlen, r);
		if (o->coll == COLL_ALLGATHER && inplace)
			fill(o, sb, s->count, r);
		ret = tp_comm_barrier(c);
		if (ret == 0)
			ret = run_coll(o, c, sb, rb, s);
		if (ret < 0)
			return ret;
		wrong = (double)check_result(o, rb, s, r, n);
		ret = tp_comm_oob_sum(c, &wrong);
		if (ret < 0)
			return ret;
		res->wrong = (size_t)wrong;
	}
	return 0;
}

static void print_res(const struct result *r, int check)
{
	fprintf(human, "  %8.1f %7.3f %7.3f", r->us, r->algbw, r->busbw);
	if (check)
		fprintf(human, " %6zu", r->wrong);
	else
		fprintf(human, " %6s", "N/A");
}

/* Counters of this rank's QPs, summed over every rank, into tot[]: data
 * packets sent, resent, timeouts, NAKs and CNPs received; then the received
 * packets the engines dropped. Every rank must call it (it goes over the
 * bootstrap connections). */
static int sum_transport(struct tp_comm *c, double tot[6])
{
	const struct tp_engine_stats *st = tp_engine_stats(tp_comm_engine(c));
	int ret = 0;

	memset(tot, 0, 6 * sizeof(*tot));
	for (int p = 0; p < tp_comm_nranks(c); p++) {
		for (uint32_t q = 0; q < tp_comm_qps_per_conn(c); q++) {
			struct tp_qp *qp = tp_comm_qp(c, p, q);
			const struct tp_qp_stats *qs;

			if (qp == NULL)
				continue;
			qs = tp_qp_stats(qp);
			tot[0] += (double)qs->tx_pkts;
			tot[1] += (double)qs->retx_pkts;
			tot[2] += (double)qs->timeouts;
			tot[3] += (double)qs->naks_rx;
			tot[4] += (double)qs->cnps_rx;
		}
	}
	for (int i = 0; i < TP_DROP_REASON_MAX; i++)
		tot[5] += (double)st->drops[i];
	for (int i = 0; i < 6 && ret == 0; i++)
		ret = tp_comm_oob_sum(c, &tot[i]);
	return ret;
}

/* ---- --json: one object per run (schema in transport/README.md) ---------- */

static json_t *json_cmdline(const struct opts *o)
{
	json_t *a = json_array();

	for (int i = 0; a != NULL && i < o->argc; i++)
		if (json_array_append_new(a, json_string(o->argv[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* Every DCQCN parameter by its mlx5 name, from the same table as the flags. */
static json_t *json_dcqcn(const struct ice_dcqcn_params *p)
{
	const struct ice_cfg_field *f;
	json_t *d = json_object();
	size_t n;

	f = ice_dcqcn_fields(&n);
	for (size_t i = 0; d != NULL && i < n; i++) {
		uint32_t v;

		if (f[i].type != ICE_CFG_U32)
			continue;
		memcpy(&v, (const char *)p + f[i].offset, sizeof(v));
		if (json_object_set_new(d, f[i].key, json_integer(v)) < 0) {
			json_decref(d);
			return NULL;
		}
	}
	return d;
}

static json_t *json_run_config(const struct opts *o, struct tp_comm *c)
{
	const struct tp_engine_cfg *ec = tp_engine_cfg(tp_comm_engine(c));
	bool red = o->coll == COLL_ALLREDUCE || o->coll == COLL_REDUCESCATTER;

	return json_pack("{s:s, s:o, s:s, s:i, s:i, s:s, s:i, s:f, s:b, s:o, s:s, s:s, s:i, s:i, "
			 "s:i, s:b}",
			 "tool", "ice-bench", "command", json_cmdline(o), "collective",
			 coll_names[o->coll], "ranks", tp_comm_nranks(c), "qps_per_conn",
			 (int)tp_comm_qps_per_conn(c), "spread",
			 o->tp.cc.spread == TP_SPREAD_SPLIT ? "split" : "round-robin", "mtu",
			 (int)ec->mtu, "line_rate_mbps", (double)ec->line_rate_bps / 1e6,
			 "icrc_verify", (int)ec->icrc_verify, "dcqcn", json_dcqcn(&ec->dcqcn),
			 "type", dev_dtype_name((enum dev_dtype)o->dtype), "redop",
			 red ? dev_redop_name((enum dev_redop)o->op) : "none", "root",
			 o->coll == COLL_BROADCAST ? o->root : -1, "iters", o->iters,
			 "warmup_iters", o->warmup, "check", o->check);
}

static json_t *json_result(const struct result *r, int check)
{
	return json_pack("{s:f, s:f, s:f, s:o}", "time_us", r->us, "algbw_gbps", r->algbw,
			 "busbw_gbps", r->busbw, "wrong",
			 check ? json_integer((json_int_t)r->wrong) : json_null());
}

static json_t *json_size_row(const struct opts *o, const struct sizes *s, const struct result *oop,
			     const struct result *inp)
{
	bool red = o->coll == COLL_ALLREDUCE || o->coll == COLL_REDUCESCATTER;

	return json_pack("{s:I, s:I, s:s, s:s, s:i, s:o, s:o, s:f}", "bytes", (json_int_t)s->bytes,
			 "count", (json_int_t)s->count, "type",
			 dev_dtype_name((enum dev_dtype)o->dtype), "redop",
			 red ? dev_redop_name((enum dev_redop)o->op) : "none", "root",
			 o->coll == COLL_BROADCAST ? o->root : -1, "out_of_place",
			 json_result(oop, o->check), "in_place", json_result(inp, o->check),
			 "cores", oop->cores);
}

/* Rank 0's engine counters: what the "# rank 0 ..." lines print. */
static json_t *json_rank0_transport(const struct tp_engine_stats *st)
{
	json_t *drops = json_object(), *retx = json_object();
	uint64_t ndrops = 0;

	for (int i = 0; drops != NULL && i < TP_DROP_REASON_MAX; i++) {
		ndrops += st->drops[i];
		json_object_set_new(drops, tp_drop_reason_name((enum tp_drop_reason)i),
				    json_integer((json_int_t)st->drops[i]));
	}
	for (int i = 0; retx != NULL && i < TP_RETX_REASON_MAX; i++)
		json_object_set_new(retx, tp_retx_reason_name((enum tp_retx_reason)i),
				    json_integer((json_int_t)st->retx_by[i]));
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:I}", "packets_sent",
			 (json_int_t)st->tx_pkts, "resent", (json_int_t)st->retx_pkts, "timeouts",
			 (json_int_t)st->timeouts, "naks_rx", (json_int_t)st->nak_rx, "rnr_naks_rx",
			 (json_int_t)st->rnr_nak_rx, "cnps_rx", (json_int_t)st->cnp_rx, "dropped",
			 (json_int_t)ndrops, "dropped_by", drops, "resent_by", retx,
			 "spurious_timeouts", (json_int_t)st->spurious_timeouts);
}

/* Rank 0's QPs at the end of the run, as the transport reports them: "qps"
 * (peer, addresses, QP number, the source port in use: a controller's plan
 * may have moved it) and "dcqcn_effective", each distinct set of DCQCN
 * parameters the QPs had (a plan may have changed them; the line rate fills
 * in rp_max_rate 0) with how many had it, in the order first seen. Into j;
 * 0 or -1 (out of memory). */
static int json_rank0_qps(struct tp_comm *c, json_t *j)
{
	const struct tp_engine_cfg *ec = tp_engine_cfg(tp_comm_engine(c));
	size_t cap = (size_t)tp_comm_nranks(c) * tp_comm_qps_per_conn(c), nsets = 0;
	const struct ice_dcqcn_params **sets = calloc(cap + 1, sizeof(*sets));
	size_t *count = calloc(cap + 1, sizeof(*count));
	json_t *qps = json_array(), *eff = json_array();
	char local[INET_ADDRSTRLEN], remote[INET_ADDRSTRLEN];
	int ret = -1;

	if (sets == NULL || count == NULL || qps == NULL || eff == NULL)
		goto out;
	inet_ntop(AF_INET, &ec->addr, local, sizeof(local));
	for (int p = 0; p < tp_comm_nranks(c); p++) {
		for (uint32_t q = 0; q < tp_comm_qps_per_conn(c); q++) {
			struct tp_qp *qp = tp_comm_qp(c, p, q);
			const struct ice_dcqcn_params *d;
			struct in_addr ra;
			size_t s;

			if (qp == NULL)
				continue;
			ra = tp_qp_raddr(qp);
			inet_ntop(AF_INET, &ra, remote, sizeof(remote));
			if (json_array_append_new(qps,
						  json_pack("{s:i, s:s, s:s, s:I, s:i}", "peer", p,
							    "local", local, "remote", remote, "qpn",
							    (json_int_t)tp_qp_num(qp), "sport",
							    (int)tp_qp_sport(qp))) < 0)
				goto out;
			d = tp_qp_dcqcn_params(qp);
			for (s = 0; s < nsets && memcmp(sets[s], d, sizeof(*d)) != 0; s++)
				;
			if (s == nsets)
				sets[nsets++] = d;
			count[s]++;
		}
	}
	for (size_t s = 0; s < nsets; s++)
		if (json_array_append_new(eff, json_pack("{s:I, s:o}", "qps", (json_int_t)count[s],
							 "params", json_dcqcn(sets[s]))) < 0)
			goto out;
	if (json_object_set(j, "dcqcn_effective", eff) < 0 || json_object_set(j, "qps", qps) < 0)
		goto out;
	ret = 0;
out:
	json_decref(qps);
	json_decref(eff);
	free(sets);
	free(count);
	return ret;
}

/* The sums of sum_transport() over every rank's QPs and engine. */
static json_t *json_all_transport(const double tot[6])
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "data_packets_sent", (json_int_t)tot[0],
			 "resent", (json_int_t)tot[1], "timeouts", (json_int_t)tot[2], "naks_rx",
			 (json_int_t)tot[3], "cnps_rx", (json_int_t)tot[4], "dropped",
			 (json_int_t)tot[5]);
}

/* The run's object on stdout, one line; takes rows. 0 or -1. */
static int print_json(const struct opts *o, struct tp_comm *c, json_t *rows, size_t wrong_total,
		      double avg_busbw, double avg_cores, const double *tot)
{
	json_t *j = json_run_config(o, c);
	int ret = -1;

	if (j == NULL || json_object_set_new(j, "results", rows) < 0) {
		json_decref(rows);
		goto out;
	}
	if (json_object_set_new(j, "wrong_total", json_integer((json_int_t)wrong_total)) < 0 ||
	    json_object_set_new(j, "avg_busbw_gbps", json_real(avg_busbw)) < 0 ||
	    json_object_set_new(j, "avg_cores", json_real(avg_cores)) < 0 ||
	    json_object_set_new(j, "host_cpus", json_integer(sysconf(_SC_NPROCESSORS_ONLN))) < 0 ||
	    json_object_set_new(j, "transport_rank0",
				json_rank0_transport(tp_engine_stats(tp_comm_engine(c)))) < 0 ||
	    json_object_set_new(j, "transport_all_ranks",
				tot != NULL ? json_all_transport(tot) : json_null()) < 0 ||
	    json_rank0_qps(c, j) < 0)
		goto out;
	if (json_dumpf(j, stdout, JSON_COMPACT) < 0 || fputc('\n', stdout) == EOF ||
	    fflush(stdout) != 0)
		goto out;
	ret = 0;
out:
	json_decref(j);
	return ret;
}

static int run_rank(struct opts *o)
{
	struct tp_comm *c;
	uint8_t *sendbuf = NULL, *recvbuf = NULL;
	size_t es = dev_dtype_size(o->dtype), maxlen;
	double bw_sum = 0, cores_sum = 0;
	int nsizes = 0, ret = 0, n, r;
	size_t wrong_total = 0;
	json_t *jrows = NULL;
	double tot[6];
	bool have_tot;

	c = tp_comm_init(&o->tp.cc);
	if (c == NULL) {
		fprintf(stderr, "ice-bench: rank %d: cannot create the communicator: %s\n",
			o->tp.cc.rank, strerror(errno));
		return 1;
	}
	n = tp_comm_nranks(c);
	r = tp_comm_rank(c);
	if (o->root >= n) {
		if (r == 0)
			fprintf(stderr, "ice-bench: --root %d: expected 0..%d\n", o->root, n - 1);
		ret = 2;
		goto out;
	}
	maxlen = (size_t)(o->maxbytes / es + (size_t)n) * es * 2;
	sendbuf = dev_mem_ops_get(DEV_MEM_HOST)->alloc(maxlen);
	recvbuf = dev_mem_ops_get(DEV_MEM_HOST)->alloc(maxlen);
	if (sendbuf == NULL || recvbuf == NULL) {
		fprintf(stderr, "ice-bench: rank %d: out of memory for %zu-byte buffers\n", r,
			maxlen);
		ret = 1;
		goto out;
	}
	memset(recvbuf, 0, maxlen);
	if (r == 0) {
		const struct tp_engine_cfg *ec = tp_engine_cfg(tp_comm_engine(c));

		fprintf(human,
			"# ice-bench %s: %d ranks, %u QP(s) per connection (%s), MTU %u, "
			"DCQCN %s, line rate %s, ICRC check %s, GSO %s\n",
			coll_names[o->coll], n, tp_comm_qps_per_conn(c),
			o->tp.cc.spread == TP_SPREAD_SPLIT ? "split" : "round-robin", ec->mtu,
			ec->dcqcn.enable ? "on" : "off", ec->line_rate_bps ? "set" : "unlimited",
			ec->icrc_verify ? "on" : "off", ec->gso ? "on" : "off");
		if (ec->line_rate_bps)
			fprintf(human, "# line rate %.0f Mbit/s\n", ec->line_rate_bps / 1e6);
		fprintf(human, "#\n");
		fprintf(human, "# %10s %12s %8s %6s %6s  %8s %7s %7s %6s  %8s %7s %7s %6s %6s\n",
			"", "", "", "", "", "out-of-place", "", "", "", "in-place", "", "", "", "");
		fprintf(human, "# %10s %12s %8s %6s %6s  %8s %7s %7s %6s  %8s %7s %7s %6s %6s\n",
			"size", "count", "type", "redop", "root", "time", "algbw", "busbw",
			"#wrong", "time", "algbw", "busbw", "#wrong", "cores");
		fprintf(human, "# %10s %12s %8s %6s %6s  %8s %7s %7s %6s  %8s %7s %7s %6s %6s\n",
			"(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
			"(GB/s)", "(GB/s)", "", "(CPU)");
		fflush(human);
		if (o->json && (jrows = json_array()) == NULL) {
			fprintf(stderr, "ice-bench: out of memory for the JSON result\n");
			ret = 1;
			goto out;
		}
	}
	for (uint64_t size = o->minbytes; size <= o->maxbytes;) {
		struct sizes s = sizes_for(o, size, n);
		struct result oop, inp;

		ret = measure(o, c, &s, false, sendbuf, recvbuf, &oop);
		if (ret == 0)
			ret = measure(o, c, &s, true, sendbuf, recvbuf, &inp);
		if (ret < 0) {
			fprintf(stderr, "ice-bench: rank %d: %s of %zu bytes failed: %s\n", r,
				coll_names[o->coll], s.bytes, strerror(-ret));
			ret = 1;
			goto out;
		}
		if (r == 0) {
			bool red = o->coll == COLL_ALLREDUCE || o->coll == COLL_REDUCESCATTER;

			fprintf(human, "  %10zu %12zu %8s %6s %6d", s.bytes, s.count,
				dev_dtype_name((enum dev_dtype)o->dtype),
				red ? dev_redop_name((enum dev_redop)o->op) : "none",
				o->coll == COLL_BROADCAST ? o->root : -1);
			print_res(&oop, o->check);
			print_res(&inp, o->check);
			fprintf(human, " %6.2f\n", oop.cores);
			fflush(human);
			if (jrows != NULL &&
			    json_array_append_new(jrows, json_size_row(o, &s, &oop, &inp)) < 0) {
				fprintf(stderr, "ice-bench: out of memory for the JSON result\n");
				ret = 1;
				goto out;
			}
		}
		bw_sum += oop.busbw + inp.busbw;
		cores_sum += oop.cores;
		wrong_total += oop.wrong + inp.wrong;
		nsizes++;
		if (o->stepbytes != 0)
			size += o->stepbytes;
		else if ((uint64_t)(size * o->stepfactor) > size)
			size = (uint64_t)(size * o->stepfactor);
		else
			size++;
	}
	have_tot = sum_transport(c, tot) == 0;
	if (r == 0) {
		const struct tp_engine_stats *st = tp_engine_stats(tp_comm_engine(c));
		uint64_t drops = 0;

		for (int i = 0; i < TP_DROP_REASON_MAX; i++)
			drops += st->drops[i];
		fprintf(human, "# Out of bounds values : %zu %s\n", wrong_total,
			wrong_total ? "FAILED" : "OK");
		fprintf(human, "# Avg bus bandwidth    : %.4f\n",
			nsizes ? bw_sum / (2 * nsizes) : 0);
		fprintf(human,
			"# Avg CPU cores busy   : %.2f (all ranks, out-of-place runs; host has "
			"%ld)\n",
			nsizes ? cores_sum / nsizes : 0, sysconf(_SC_NPROCESSORS_ONLN));
		fprintf(human,
			"# rank 0 transport: %llu packets sent, %llu resent, %llu timeouts, "
			"%llu NAKs and %llu RNR NAKs received, %llu CNPs received, %llu dropped\n",
			(unsigned long long)st->tx_pkts, (unsigned long long)st->retx_pkts,
			(unsigned long long)st->timeouts, (unsigned long long)st->nak_rx,
			(unsigned long long)st->rnr_nak_rx, (unsigned long long)st->cnp_rx,
			(unsigned long long)drops);
		if (drops != 0) {
			fprintf(human, "# rank 0 drops by reason:");
			for (int i = 0; i < TP_DROP_REASON_MAX; i++)
				if (st->drops[i] != 0)
					fprintf(human, " %s %llu",
						tp_drop_reason_name((enum tp_drop_reason)i),
						(unsigned long long)st->drops[i]);
			fprintf(human, "\n");
		}
		if (st->retx_pkts != 0 || st->spurious_timeouts != 0) {
			fprintf(human, "# rank 0 resent by reason:");
			for (int i = 0; i < TP_RETX_REASON_MAX; i++)
				fprintf(human, " %s %llu",
					tp_retx_reason_name((enum tp_retx_reason)i),
					(unsigned long long)st->retx_by[i]);
			fprintf(human, "; spurious timeouts %llu\n",
				(unsigned long long)st->spurious_timeouts);
		}
		if (have_tot)
			fprintf(human,
				"# all ranks transport: %.0f data packets sent, %.0f resent, %.0f "
				"timeouts, %.0f NAKs received, %.0f CNPs received, %.0f dropped\n",
				tot[0], tot[1], tot[2], tot[3], tot[4], tot[5]);
		fflush(human);
		if (jrows != NULL) {
			ret = print_json(o, c, jrows, wrong_total,
					 nsizes ? bw_sum / (2 * nsizes) : 0,
					 nsizes ? cores_sum / nsizes : 0, have_tot ? tot : NULL);
			jrows = NULL;
			if (ret < 0) {
				fprintf(stderr, "ice-bench: cannot write the JSON result\n");
				ret = 1;
				goto out;
			}
		}
	}
	if (wrong_total != 0)
		ret = 1;
out:
	json_decref(jrows);
	dev_mem_ops_get(DEV_MEM_HOST)->free(sendbuf);
	dev_mem_ops_get(DEV_MEM_HOST)->free(recvbuf);
	tp_comm_free(c);
	return ret;
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
	return tp_opts_run(&o.tp, o.nranks, rank_entry, &o);
}
