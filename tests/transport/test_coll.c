// SPDX-License-Identifier: Apache-2.0
/*
 * Every collective with 2 to 8 ranks, every datatype and operation, checked
 * element by element against values computed here. Ranks are real processes
 * (fork) on loopback addresses 127.41.T.R, bootstrapped over TCP like
 * ice-bench's; one case injects 2 % packet loss at every receiver. The uneven
 * ("v") reduce-scatter and all-gather run in every case too, over chunks
 * that are empty, tiny, larger than a slice or speed-weighted. A last case
 * ends one rank's process at once: the others, waiting only to receive,
 * fail within seconds instead of waiting forever.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ice_log.h"
#include "ice_time.h"
#include "tp.h"

static int test_id;

/* rank r's input element i: small integers, exact in every type */
static double val(int op, int r, size_t i)
{
	if (op == DEV_PROD)
		return ((size_t)r * 5 + i) % 13 == 0 ? 2.0 : 1.0;
	return (double)(((size_t)r * 7 + i * 3) % 9) - (op == DEV_MAX || op == DEV_MIN ? 4 : 0);
}

static double reduced(int op, int n, size_t i, enum dev_dtype t)
{
	double acc = val(op, 0, i);
	bool is_int = t != DEV_FLOAT16 && t != DEV_FLOAT32 && t != DEV_FLOAT64 && t != DEV_BFLOAT16;

	for (int r = 1; r < n; r++) {
		double v = val(op, r, i);

		if (op == DEV_SUM || op == DEV_AVG)
			acc += v;
		else if (op == DEV_PROD)
			acc *= v;
		else if (op == DEV_MAX)
			acc = fmax(acc, v);
		else
			acc = fmin(acc, v);
	}
	if (op == DEV_AVG)
		acc = is_int ? trunc(acc / n) : acc / n;
	return acc;
}

static bool unsigned_type(enum dev_dtype t)
{
	return t == DEV_UINT8 || t == DEV_UINT32 || t == DEV_UINT64;
}

static int check(const void *buf, size_t n, enum dev_dtype t, double (*want)(size_t, void *),
		 void *arg, const char *what)
{
	double tol = t == DEV_FLOAT16 ? 1e-3 : t == DEV_BFLOAT16 ? 1e-2 : 1e-6;

	for (size_t i = 0; i < n; i++) {
		double w = want(i, arg), g = dev_elem_get(buf, i, t);

		if (fabs(g - w) > tol * fmax(1, fabs(w))) {
			fprintf(stderr, "%s %s: element %zu is %g, expected %g\n", what,
				dev_dtype_name(t), i, g, w);
			return -1;
		}
	}
	return 0;
}

struct ctx {
	int n, r, op, root;
	size_t count;
	const size_t *off; /* "v" collectives: chunk i is elements off[i] to off[i + 1] */
	enum dev_dtype t;
};

static double w_allreduce(size_t i, void *a)
{
	struct ctx *c = a;

	return reduced(c->op, c->n, i, c->t);
}

static double w_rs(size_t i, void *a)
{
	struct ctx *c = a;

	return reduced(c->op, c->n, (size_t)c->r * c->count + i, c->t);
}

static double w_ag(size_t i, void *a)
{
	struct ctx *c = a;

	return val(DEV_SUM, (int)(i / c->count), i % c->count);
}

static double w_bcast(size_t i, void *a)
{
	struct ctx *c = a;

	return val(DEV_SUM, c->root, i);
}

static double w_a2a(size_t i, void *a)
{
	struct ctx *c = a;

	/* from rank p = i / count: p's send block for us */
	return val(DEV_SUM, (int)(i / c->count), (size_t)c->r * c->count + i % c->count);
}

static double w_sr(size_t i, void *a)
{
	struct ctx *c = a;

	return val(DEV_SUM, (c->r - 1 + c->n) % c->n, i);
}

static void fill(void *buf, size_t n, enum dev_dtype t, int op, int r)
{
	for (size_t i = 0; i < n; i++)
		dev_elem_set(buf, i, t, val(op, r, i));
}

/* ---- uneven ("v") reduce-scatter and all-gather ---- */

#define MAX_RANKS 8

/* Element g of the whole "v" buffer is val(op, r, mix(g)): the values have
 * no short period, so a chunk read or written at a wrong offset differs. */
static size_t mix(size_t g)
{
	return (g * 2654435761u) % 1000003;
}

static void fill_v(void *buf, size_t from, size_t n, enum dev_dtype t, int op, int r)
{
	for (size_t k = 0; k < n; k++)
		dev_elem_set(buf, k, t, val(op, r, mix(from + k)));
}

/* a value no collective here produces */
static void poison(void *buf, size_t n, enum dev_dtype t)
{
	for (size_t i = 0; i < n; i++)
		dev_elem_set(buf, i, t, 99);
}

static double w_vin(size_t g, void *a)
{
	struct ctx *c = a;

	return val(c->op, c->r, mix(g));
}

static double w_rsv(size_t i, void *a)
{
	struct ctx *c = a;

	return reduced(c->op, c->n, mix(c->off[c->r] + i), c->t);
}

/* in place, n >= 3: chunk r-2 is reduced once, at the first step, with
 * what rank r-1 sent; it then holds the sum of ranks r-1 and r */
static double w_partial(size_t i, void *a)
{
	struct ctx *c = a;
	size_t g = c->off[(c->r - 2 + c->n) % c->n] + i;

	return val(DEV_SUM, c->r, mix(g)) + val(DEV_SUM, (c->r - 1 + c->n) % c->n, mix(g));
}

static double w_agv(size_t g, void *a)
{
	struct ctx *c = a;
	int p = 0;

	while (g >= c->off[p + 1])
		p++;
	return val(DEV_SUM, p, mix(g));
}

static void v_offsets(const size_t *vc, int n, size_t *off)
{
	off[0] = 0;
	for (int i = 0; i < n; i++)
		off[i + 1] = off[i] + vc[i];
}

/* Reduce-scatter-v over chunks of vc[i] elements, out of place and in place. */
static int rs_v(struct tp_comm *c, uint8_t *sb, uint8_t *rb, struct ctx *x, const size_t *vc)
{
	size_t off[MAX_RANKS + 1], es = dev_dtype_size(x->t);
	int n = x->n, r = x->r, prev2 = (r - 2 + n) % n, err;
	uint8_t *mine;

	v_offsets(vc, n, off);
	x->off = off;
	mine = sb + off[r] * es;
	fill_v(sb, 0, off[n], x->t, x->op, r);
	poison(rb, vc[r], x->t);
	err = tp_reduce_scatter_v(c, sb, rb, vc, x->t, (enum dev_redop)x->op);
	if (err == 0)
		err = check(rb, vc[r], x->t, w_rsv, x, "reduce-scatter-v");
	if (err == 0)
		err = check(sb, off[n], x->t, w_vin, x, "reduce-scatter-v input kept");
	/* in place: the result lands in our chunk of sb */
	if (err == 0)
		err = tp_reduce_scatter_v(c, sb, mine, vc, x->t, (enum dev_redop)x->op);
	if (err == 0)
		err = check(mine, vc[r], x->t, w_rsv, x, "reduce-scatter-v in place");
	/* ... and the ring ran in sb itself, not in a copy */
	if (err == 0 && n >= 3 && x->op == DEV_SUM)
		err = check(sb + off[prev2] * es, vc[prev2], x->t, w_partial, x,
			    "reduce-scatter-v in place, partial sums");
	x->off = NULL;
	return err;
}

/* All-gather-v over chunks of vc[i] elements, out of place and in place. */
static int ag_v(struct tp_comm *c, uint8_t *sb, uint8_t *rb, struct ctx *x, const size_t *vc)
{
	size_t off[MAX_RANKS + 1], es = dev_dtype_size(x->t);
	int n = x->n, r = x->r, err;

	v_offsets(vc, n, off);
	x->off = off;
	fill_v(sb, off[r], vc[r], x->t, DEV_SUM, r);
	poison(rb, off[n], x->t);
	err = tp_allgather_v(c, sb, rb, vc, x->t);
	if (err == 0)
		err = check(rb, off[n], x->t, w_agv, x, "all-gather-v");
	poison(rb, off[n], x->t);
	fill_v(rb + off[r] * es, off[r], vc[r], x->t, DEV_SUM, r);
	if (err == 0)
		err = tp_allgather_v(c, rb + off[r] * es, rb, vc, x->t);
	if (err == 0)
		err = check(rb, off[n], x->t, w_agv, x, "all-gather-v in place");
	x->off = NULL;
	return err;
}

/* Bad arguments are refused before anything is sent: the collectives that
 * follow would not match otherwise. */
static int v_refused(struct tp_comm *c, uint8_t *sb, uint8_t *rb, const size_t *vc)
{
	size_t huge[MAX_RANKS];

	for (int i = 0; i < MAX_RANKS; i++)
		huge[i] = SIZE_MAX / 2 + 1; /* any two overflow */
	if (tp_reduce_scatter_v(c, sb, rb, NULL, DEV_FLOAT32, DEV_SUM) != -EINVAL ||
	    tp_reduce_scatter_v(c, sb, rb, vc, DEV_DTYPE_MAX, DEV_SUM) != -EINVAL ||
	    tp_reduce_scatter_v(c, sb, rb, vc, DEV_FLOAT32, DEV_REDOP_MAX) != -EINVAL ||
	    tp_reduce_scatter_v(c, sb, rb, huge, DEV_FLOAT32, DEV_SUM) != -EINVAL ||
	    tp_allgather_v(c, sb, rb, NULL, DEV_FLOAT32) != -EINVAL ||
	    tp_allgather_v(c, sb, rb, vc, DEV_DTYPE_MAX) != -EINVAL ||
	    tp_allgather_v(c, sb, rb, huge, DEV_INT8) != -EINVAL) {
		fprintf(stderr, "v collectives: bad arguments not refused\n");
		return -1;
	}
	return 0;
}

/* Uneven counts around cnt per rank; rank 1 has none. */
static void v_uneven(size_t cnt, int n, size_t *vc)
{
	static const size_t w[MAX_RANKS] = {3, 0, 1, 5, 2, 7, 1, 4};

	for (int i = 0; i < n; i++)
		vc[i] = (cnt * w[i] + (size_t)i) / 3;
}

/* Special counts, k < V_SPECIAL: 0, rank n/2 above a slice of 4-byte
 * elements and the others tiny or empty; 1, speed-weighted shares of 262144
 * (5/7 and 2/7 on two ranks, rounded); 2, all empty. */
#define V_SPECIAL 3

static void v_special(int k, int n, uint64_t slice, size_t *vc)
{
	size_t total = 262144, left = total, wsum = 0;

	for (int i = 0; i < n; i++) {
		wsum += i % 2 == 0 ? 5 : 2;
		vc[i] = 0;
	}
	for (int i = 0; i < n; i++) {
		if (k == 0) {
			vc[i] = i == n / 2 ? slice / 4 + 17 : (size_t)i % 3;
		} else if (k == 1) {
			size_t w = i % 2 == 0 ? 5 : 2;

			vc[i] = i == n - 1 ? left : (total * w * 2 + wsum) / (wsum * 2);
			left -= vc[i];
		}
	}
}

/* the second message of p2p(): the first one's values shifted by one */
static double w_sr2(size_t i, void *a)
{
	return w_sr(i + 1, a);
}

/* Non-blocking: two messages to the next rank and two from the previous,
 * all outstanding at once; even ranks post the receives before the sends,
 * odd ranks after. They must match in posting order. A bad peer is refused
 * and leaves that order alone. */
static int p2p(struct tp_comm *c, uint8_t *sb, uint8_t *rb, struct ctx *x)
{
	size_t bytes = x->count * dev_dtype_size(x->t);
	int next = (x->r + 1) % x->n, prev = (x->r - 1 + x->n) % x->n, err = 0;
	struct tp_req sr = {0}, rr = {0};

	for (size_t i = 0; i < x->count; i++) {
		dev_elem_set(sb, i, x->t, val(DEV_SUM, x->r, i));
		dev_elem_set(sb + bytes, i, x->t, val(DEV_SUM, x->r, i + 1));
	}
	memset(rb, 0, 2 * bytes);
	if (x->t == DEV_INT8 && /* once per count */
	    (tp_isend(c, sb, x->count, x->t, x->r, &sr) != -EINVAL ||
	     tp_irecv(c, rb, x->count, x->t, x->n, &rr) != -EINVAL ||
	     tp_isend(c, sb, x->count, DEV_DTYPE_MAX, next, &sr) != -EINVAL || sr.pending != 0 ||
	     rr.pending != 0)) {
		fprintf(stderr, "p2p: bad arguments not refused\n");
		return -1;
	}
	for (int k = 0; k < 2 && err == 0; k++) {
		bool recv_now = (x->r % 2 == 0) == (k == 0);

		for (int m = 0; m < 2 && err == 0; m++)
			err = recv_now ? tp_irecv(c, rb + m * bytes, x->count, x->t, prev, &rr)
				       : tp_isend(c, sb + m * bytes, x->count, x->t, next, &sr);
	}
	while (err == 0 && (sr.pending > 0 || rr.pending > 0))
		err = tp_comm_progress(c, ICE_NSEC_PER_MSEC) < 0 ? -1 : 0;
	if (err == 0)
		err = sr.status < 0 ? sr.status : rr.status;
	if (err == 0)
		err = check(rb, x->count, x->t, w_sr, x, "isend/irecv first");
	if (err == 0)
		err = check(rb + bytes, x->count, x->t, w_sr2, x, "isend/irecv second");
	return err;
}

/* One rank's work: every collective over the types, ops and counts given. */
static int rank_main(struct tp_comm *c, const size_t *counts, int ncounts, uint64_t slice)
{
	int n = tp_comm_nranks(c), r = tp_comm_rank(c);
	static const enum dev_dtype types[] = {DEV_INT8,    DEV_UINT8,	 DEV_INT32,   DEV_UINT32,
					       DEV_INT64,   DEV_UINT64,	 DEV_FLOAT16, DEV_FLOAT32,
					       DEV_FLOAT64, DEV_BFLOAT16};
	static const enum dev_dtype vtypes[] = {DEV_FLOAT32, DEV_INT64};
	size_t maxc = 0, vc[MAX_RANKS], vmax, bytes;
	uint8_t *sb, *rb;
	int err = 0;

	for (int k = 0; k < ncounts; k++)
		maxc = counts[k] > maxc ? counts[k] : maxc;
	/* all "v" counts sum to less than maxc * n + n, but the special ones */
	vmax = maxc * (size_t)n + (size_t)n;
	for (int k = 0; k < V_SPECIAL; k++) {
		size_t sum = 0;

		v_special(k, n, slice, vc);
		for (int i = 0; i < n; i++)
			sum += vc[i];
		vmax = sum > vmax ? sum : vmax;
	}
	bytes = vmax * 8 + 64;
	sb = malloc(bytes);
	rb = malloc(bytes);
	v_uneven(1, n, vc);
	err = v_refused(c, sb, rb, vc);
	for (int k = 0; k < ncounts && err == 0; k++) {
		size_t cnt = counts[k];

		v_uneven(cnt, n, vc);

		for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]) && err == 0; ti++) {
			enum dev_dtype t = types[ti];
			struct ctx x = {.n = n, .r = r, .count = cnt, .t = t, .root = n - 1};

			for (int op = 0; op < DEV_REDOP_MAX && err == 0; op++) {
				/* negative values do not fit unsigned types */
				if (unsigned_type(t) && (op == DEV_MAX || op == DEV_MIN))
					continue;
				x.op = op;
				fill(sb, cnt, t, op, r);
				err = tp_allreduce(c, sb, rb, cnt, t, (enum dev_redop)op);
				if (err == 0)
					err = check(rb, cnt, t, w_allreduce, &x, "all-reduce");
				/* in place */
				fill(rb, cnt, t, op, r);
				if (err == 0)
					err = tp_allreduce(c, rb, rb, cnt, t, (enum dev_redop)op);
				if (err == 0)
					err = check(rb, cnt, t, w_allreduce, &x,
						    "all-reduce in place");
				fill(sb, cnt * (size_t)n, t, op, r);
				if (err == 0)
					err = tp_reduce_scatter(c, sb, rb, cnt, t,
								(enum dev_redop)op);
				if (err == 0)
					err = check(rb, cnt, t, w_rs, &x, "reduce-scatter");
				if (err == 0)
					err = rs_v(c, sb, rb, &x, vc);
			}
			if (err == 0)
				err = ag_v(c, sb, rb, &x, vc);
			fill(sb, cnt, t, DEV_SUM, r);
			if (err == 0)
				err = tp_allgather(c, sb, rb, cnt, t);
			if (err == 0)
				err = check(rb, cnt * (size_t)n, t, w_ag, &x, "all-gather");
			memset(rb, 0, cnt * dev_dtype_size(t));
			if (err == 0)
				err = tp_broadcast(c, sb, rb, cnt, t, x.root);
			if (err == 0)
				err = check(rb, cnt, t, w_bcast, &x, "broadcast");
			fill(sb, cnt * (size_t)n, t, DEV_SUM, r);
			if (err == 0)
				err = tp_alltoall(c, sb, rb, cnt, t);
			if (err == 0)
				err = check(rb, cnt * (size_t)n, t, w_a2a, &x, "all-to-all");
			if (err == 0)
				err = tp_sendrecv(c, sb, (r + 1) % n, rb, (r - 1 + n) % n, cnt, t);
			if (err == 0)
				err = check(rb, cnt, t, w_sr, &x, "send/recv");
			/* in place: the buffer is sent and received into at once */
			fill(rb, cnt * (size_t)n, t, DEV_SUM, r);
			if (err == 0)
				err = tp_alltoall(c, rb, rb, cnt, t);
			if (err == 0)
				err = check(rb, cnt * (size_t)n, t, w_a2a, &x,
					    "all-to-all in place");
			fill(rb, cnt, t, DEV_SUM, r);
			if (err == 0)
				err = tp_sendrecv(c, rb, (r + 1) % n, rb, (r - 1 + n) % n, cnt, t);
			if (err == 0)
				err = check(rb, cnt, t, w_sr, &x, "send/recv in place");
			if (err == 0)
				err = p2p(c, sb, rb, &x);
		}
	}
	/* the special "v" counts, on the gradient types */
	for (int k = 0; k < V_SPECIAL && err == 0; k++) {
		v_special(k, n, slice, vc);
		for (size_t ti = 0; ti < sizeof(vtypes) / sizeof(vtypes[0]) && err == 0; ti++) {
			struct ctx x = {.n = n, .r = r, .t = vtypes[ti]};

			for (int op = 0; op < DEV_REDOP_MAX && err == 0; op++) {
				x.op = op;
				err = rs_v(c, sb, rb, &x, vc);
			}
			if (err == 0)
				err = ag_v(c, sb, rb, &x, vc);
		}
	}
	free(sb);
	free(rb);
	return err;
}

struct run {
	int nranks;
	uint32_t qps;
	enum tp_spread spread;
	uint32_t drop_ppm;
	uint64_t slice;
	const size_t *counts;
	int ncounts;
	bool last_dies; /* the last rank ends right after the rendezvous */
	bool deaf;	/* rank 0 reads nothing for 11 s (deaf_main) */
};

/*
 * The last rank has ended without a word, as a killed process does. Rank 0
 * waits to receive from rank 1, the others from the dead rank: no QP timer
 * runs for a receive, so only the bootstrap connections tell (rank 0 sees
 * the dead rank's close, fails and ends; the others see rank 0's close).
 * Each must fail with -ENOTCONN within 3 s.
 */
static int orphan_main(struct tp_comm *c)
{
	int me = tp_comm_rank(c), peer = me == 0 ? 1 : tp_comm_nranks(c) - 1;
	uint64_t t0 = ice_now_ns();
	struct tp_req r = {0};
	float buf[16];
	int ret;

	ret = tp_irecv(c, buf, 16, DEV_FLOAT32, peer, &r);
	if (ret == 0)
		ret = tp_comm_wait(c, &r);
	if (ret != -ENOTCONN || ice_now_ns() - t0 > 3 * ICE_NSEC_PER_SEC) {
		print_message("rank %d: the receive from rank %d ended %d (%s) after %.1f s\n", me,
			      peer, ret, strerror(-ret), (double)(ice_now_ns() - t0) / 1e9);
		return -1;
	}
	return 0;
}

/*
 * A rank that reads nothing for a while is alive: rank 0 sleeps 11 s (as
 * ice-train's rank 0 computes a job that rank 1 is not in) while rank 1
 * sends it 4 MiB out of band, more than the sockets hold, so rank 0's
 * kernel advertises a zero window for most of it. The connection must survive (it would not
 * with TCP_USER_TIMEOUT, which ends it after its time of zero window), and
 * the bytes arrive whole once rank 0 reads.
 */
static int deaf_main(struct tp_comm *c)
{
	size_t len = 4u << 20;
	int me = tp_comm_rank(c), bad = 0;
	uint8_t *mine = malloc(len), *all = malloc(2 * len);
	int ret = mine != NULL && all != NULL ? 0 : -ENOMEM;

	for (size_t i = 0; ret == 0 && i < len; i++)
		mine[i] = (uint8_t)(i * 7 + (size_t)me);
	if (me == 0)
		ice_sleep_ns(11 * ICE_NSEC_PER_SEC);
	if (ret == 0)
		ret = tp_comm_oob_gather(c, mine, len, all);
	for (size_t i = 0; ret == 0 && me == 0 && i < len; i++)
		bad += all[len + i] != (uint8_t)(i * 7 + 1);
	if (ret != 0 || bad != 0)
		print_message("rank %d: the gather ended %d (%s), %d bytes wrong\n", me, ret,
			      strerror(-ret), bad);
	free(mine);
	free(all);
	return ret != 0 || bad != 0 ? -1 : 0;
}

static void run_ranks(const struct run *run)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t salen = sizeof(sa);
	char base[32], boot[64];
	pid_t pids[16];
	int lfd, status, failed = 0;

	test_id++;
	snprintf(base, sizeof(base), "127.41.%d.1", test_id);
	inet_pton(AF_INET, base, &sa.sin_addr);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 64), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &salen), 0);
	snprintf(boot, sizeof(boot), "%s:%u", base, ntohs(sa.sin_port));
	for (int r = 0; r < run->nranks; r++) {
		pids[r] = fork();
		assert_true(pids[r] >= 0);
		if (pids[r] == 0) {
			struct tp_comm_cfg cc;
			struct tp_comm *c;
			char a[32];
			int err;

			tp_comm_cfg_default(&cc);
			cc.nranks = run->nranks;
			cc.rank = r;
			cc.listen_fd = r == 0 ? lfd : -1;
			snprintf(cc.bootstrap, sizeof(cc.bootstrap), "%s", boot);
			snprintf(a, sizeof(a), "127.41.%d.%d", test_id, r + 1);
			inet_pton(AF_INET, a, &cc.eng.addr);
			cc.eng.port = 0;
			cc.eng.mtu = 1024;
			cc.eng.retx_timeout_ns = 2000000;
			cc.eng.rx_drop_ppm = run->drop_ppm;
			cc.eng.rx_drop_seed = (uint32_t)(r + 1) * 7919;
			cc.qps_per_conn = run->qps;
			cc.spread = run->spread;
			cc.oneshot_max = 2048;
			if (run->slice)
				cc.slice_bytes = run->slice;
			c = tp_comm_init(&cc);
			if (c == NULL)
				_exit(3);
			if (run->last_dies && r == run->nranks - 1)
				_exit(0);
			err = run->last_dies ? orphan_main(c)
			      : run->deaf    ? deaf_main(c)
					  : rank_main(c, run->counts, run->ncounts, cc.slice_bytes);
			tp_comm_free(c);
			_exit(err == 0 ? 0 : 1);
		}
	}
	close(lfd);
	for (int r = 0; r < run->nranks; r++) {
		assert_int_equal(waitpid(pids[r], &status, 0), pids[r]);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			print_message("rank %d exited with status 0x%x\n", r, status);
			failed++;
		}
	}
	assert_int_equal(failed, 0);
}

/* counts cover: empty, tiny (one-shot), one element per rank, odd sizes that
 * leave short or empty chunks, and sizes that pipeline in several slices */
static const size_t counts_all[] = {0, 1, 5, 17, 300, 4099, 20000};

static void test_2_ranks(void **s)
{
	struct run r = {.nranks = 2, .qps = 1, .counts = counts_all, .ncounts = 7};

	(void)s;
	run_ranks(&r);
}

static void test_3_ranks_multi_qp_split(void **s)
{
	struct run r = {.nranks = 3,
			.qps = 3,
			.spread = TP_SPREAD_SPLIT,
			.counts = counts_all,
			.ncounts = 7,
			.slice = 4096};

	(void)s;
	run_ranks(&r);
}

static void test_4_ranks_round_robin(void **s)
{
	static const size_t counts[] = {1, 33, 5000};
	struct run r = {.nranks = 4,
			.qps = 2,
			.spread = TP_SPREAD_ROUND_ROBIN,
			.counts = counts,
			.ncounts = 3,
			.slice = 8192};

	(void)s;
	run_ranks(&r);
}

static void test_8_ranks(void **s)
{
	static const size_t counts[] = {3, 1000};
	struct run r = {.nranks = 8, .qps = 1, .counts = counts, .ncounts = 2};

	(void)s;
	run_ranks(&r);
}

static void test_3_ranks_one_dies(void **s)
{
	struct run r = {.nranks = 3, .qps = 1, .last_dies = true};

	(void)s;
	run_ranks(&r);
}

static void test_2_ranks_one_deaf(void **s)
{
	struct run r = {.nranks = 2, .qps = 1, .deaf = true};

	(void)s;
	run_ranks(&r);
}

static void test_4_ranks_with_loss(void **s)
{
	static const size_t counts[] = {7, 3000, 70000};
	struct run r = {.nranks = 4,
			.qps = 2,
			.drop_ppm = 20000,
			.counts = counts,
			.ncounts = 3,
			.slice = 16384};

	(void)s;
	run_ranks(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_2_ranks),
		cmocka_unit_test(test_3_ranks_multi_qp_split),
		cmocka_unit_test(test_4_ranks_round_robin),
		cmocka_unit_test(test_8_ranks),
		cmocka_unit_test(test_2_ranks_one_deaf),
		cmocka_unit_test(test_4_ranks_with_loss),
		cmocka_unit_test(test_3_ranks_one_dies),
	};

	ice_log_set_level(ICE_LOG_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
