// SPDX-License-Identifier: Apache-2.0
/*
 * Mixed-kind collectives (transport/tp_dev.c): ranks are real processes
 * (fork) on loopback addresses 127.43.T.R, bootstrapped like test_coll's.
 * Each rank's memory kind comes from a string, one letter per rank:
 *   H  host memory (dev_mem's host backend),
 *   F  a test-owned fake device kind: "device memory" is separate heap
 *      allocations, reduce runs dev_reduce and counts its calls (no GPU here),
 *   C  the CUDA backend (its real host logic, dev_gpu.c) over the
 *      fake_devrt runtime double ($ICE_CUDA_LIB); F when not built.
 * Every dtype and op, counts not divisible by the ranks, in place and not,
 * every stage policy: integers bit-identical to an all-CPU reference
 * computed here, floats within tolerance of it and identical on all ranks;
 * all-gather and send/recv (pieces larger than the staging unit, in place,
 * and messages over max_bytes refused with -EMSGSIZE).
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
#include "tp_dev.h"

#define MAXB (2u << 20)

static int test_id;

/* ---- the fake device kind ---- */

static long fake_reduces;

static int fake_probe(char *why, size_t len)
{
	snprintf(why, len, "test fake device");
	return 0;
}

static void *fake_alloc(size_t len)
{
	void *p = malloc(len ? len : 1);

	if (p != NULL)
		memset(p, 0xa5, len); /* fresh device memory is garbage */
	return p;
}

static void fake_free(void *p)
{
	free(p);
}

static int fake_copy(void *dst, const void *src, size_t len)
{
	memmove(dst, src, len);
	return 0;
}

static void *fake_host_alloc(size_t len)
{
	void *p = NULL;

	return posix_memalign(&p, 64, len ? len : 64) == 0 ? p : NULL;
}

static int fake_copy_async(void *dst, const void *src, size_t len, enum dev_copy_dir dir)
{
	(void)dir;
	return fake_copy(dst, src, len);
}

static int fake_copy_wait(void)
{
	return 0;
}

static int fake_reduce(void *dst, const void *src, size_t count, enum dev_dtype t,
		       enum dev_redop op)
{
	fake_reduces++;
	dev_reduce(dst, src, count, t, op);
	return 0;
}

static int fake_scale_div(void *buf, size_t count, enum dev_dtype t, int n)
{
	dev_scale_div(buf, count, t, n);
	return 0;
}

static int fake_sgemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *a,
		      const float *b, float beta, float *c)
{
	dev_host_sgemm(ta, tb, m, n, k, alpha, a, b, beta, c);
	return 0;
}

static const struct dev_mem_ops fake_ops = {
	.kind = DEV_MEM_CUDA,
	.name = "fake",
	.probe = fake_probe,
	.alloc = fake_alloc,
	.free = fake_free,
	.to_host = fake_copy,
	.from_host = fake_copy,
	.host_alloc = fake_host_alloc,
	.host_free = fake_free,
	.copy_async = fake_copy_async,
	.copy_wait = fake_copy_wait,
	.reduce = fake_reduce,
	.scale_div = fake_scale_div,
	.sgemm = fake_sgemm,
};

static const struct dev_mem_ops *ops_for(char k)
{
	const struct dev_mem_ops *o;

	if (k == 'H')
		return dev_mem_ops_get(DEV_MEM_HOST);
	/* C: the CUDA backend over fake_devrt; it must load when built */
	if (k == 'C' && (o = dev_mem_ops_get(DEV_MEM_CUDA)) != NULL)
		return o->probe(NULL, 0) == 0 ? o : NULL;
	return &fake_ops;
}

/* ---- values and reference ---- */

static bool is_float(enum dev_dtype t)
{
	return t == DEV_FLOAT16 || t == DEV_FLOAT32 || t == DEV_FLOAT64 || t == DEV_BFLOAT16;
}

static bool is_unsigned(enum dev_dtype t)
{
	return t == DEV_UINT8 || t == DEV_UINT32 || t == DEV_UINT64;
}

static double val(enum dev_dtype t, int op, int r, size_t i)
{
	double v;

	if (op == DEV_PROD) {
		v = ((size_t)r * 5 + i) % 13 == 0 ? 2.0 : 1.0;
		if (is_float(t) && ((size_t)r * 3 + i) % 7 == 0)
			v = 0.5;
		return v;
	}
	v = (double)(((size_t)r * 7 + i * 3) % 9);
	if ((op == DEV_MAX || op == DEV_MIN) && !is_unsigned(t))
		v -= 4;
	if (is_float(t))
		v += 0.125 * (double)((r + (int)i) % 5);
	return v;
}

static void fill(void *buf, size_t n, enum dev_dtype t, int op, int r)
{
	for (size_t i = 0; i < n; i++)
		dev_elem_set(buf, i, t, val(t, op, r, i));
}

/* all-CPU reference: rank 0's data reduced with each rank's in turn */
static void reference(void *ref, void *tmp, size_t n, enum dev_dtype t, int op, int nranks)
{
	fill(ref, n, t, op, 0);
	for (int r = 1; r < nranks; r++) {
		fill(tmp, n, t, op, r);
		dev_reduce(ref, tmp, n, t, (enum dev_redop)op);
	}
	if (op == DEV_AVG)
		dev_scale_div(ref, n, t, nranks);
}

static int compare(const void *got, const void *want, size_t n, enum dev_dtype t, const char *what)
{
	double tol = t == DEV_FLOAT16 ? 2e-3 : t == DEV_BFLOAT16 ? 1e-2 : 1e-6;

	if (!is_float(t)) {
		if (memcmp(got, want, n * dev_dtype_size(t)) == 0)
			return 0;
		for (size_t i = 0; i < n; i++)
			if (dev_elem_get(got, i, t) != dev_elem_get(want, i, t)) {
				fprintf(stderr, "%s %s: element %zu is %g, expected %g\n", what,
					dev_dtype_name(t), i, dev_elem_get(got, i, t),
					dev_elem_get(want, i, t));
				break;
			}
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		double g = dev_elem_get(got, i, t), w = dev_elem_get(want, i, t);

		if (!(fabs(g - w) <= tol * fmax(1, fabs(w)))) {
			fprintf(stderr, "%s %s: element %zu is %g, expected %g\n", what,
				dev_dtype_name(t), i, g, w);
			return -1;
		}
	}
	return 0;
}

/* FNV-1a over the result bytes: equal on every rank iff the floats are */
static uint32_t hash(uint32_t h, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/* ---- one rank ---- */

struct run {
	const char *kinds; /* one letter per rank */
	const size_t *counts;
	int ncounts;
};

#define FAILIF(cond, ...)                                                                          \
	do {                                                                                       \
		if (cond) {                                                                        \
			fprintf(stderr, "rank %d (%c): ", r, run->kinds[r]);                       \
			fprintf(stderr, __VA_ARGS__);                                              \
			fprintf(stderr, "\n");                                                     \
			err = -1;                                                                  \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)

static int allreduce_all(struct tp_dev_comm *d, const struct run *run, void *sb, void *rb,
			 uint8_t *hin, uint8_t *hout, uint8_t *ref, uint8_t *tmp, uint32_t *h)
{
	const struct dev_mem_ops *o = tp_dev_comm_ops(d);
	struct tp_comm *c = tp_dev_comm_base(d);
	int n = tp_comm_nranks(c), r = tp_comm_rank(c), err = 0;
	bool dev = o->kind != DEV_MEM_HOST;

	for (int k = 0; k < run->ncounts; k++) {
		size_t cnt = run->counts[k];

		for (int t = 0; t < DEV_DTYPE_MAX; t++) {
			size_t bytes = cnt * dev_dtype_size((enum dev_dtype)t);

			for (int op = 0; op < DEV_REDOP_MAX; op++) {
				reference(ref, tmp, cnt, (enum dev_dtype)t, op, n);
				for (int st = TP_STAGE_AUTO; st <= TP_STAGE_DEVICE; st++)
					for (int inpl = 0; inpl < 2; inpl++) {
						void *src = inpl ? rb : sb;
						long before = fake_reduces;
						enum tp_stage got;
						char what[96];
						int ret;

						fill(hin, cnt, (enum dev_dtype)t, op, r);
						ret = o->from_host(src, hin, bytes);
						FAILIF(ret != 0, "from_host %d", ret);
						ret = tp_dev_allreduce(
							d, src, rb, cnt, (enum dev_dtype)t,
							(enum dev_redop)op, (enum tp_stage)st);
						FAILIF(ret != 0, "all-reduce %zu %s %s %s: %d", cnt,
						       dev_dtype_name((enum dev_dtype)t),
						       dev_redop_name((enum dev_redop)op),
						       tp_stage_name((enum tp_stage)st), ret);
						ret = o->to_host(hout, rb, bytes);
						FAILIF(ret != 0, "to_host %d", ret);
						snprintf(what, sizeof(what),
							 "all-reduce %s %s%s count %zu",
							 dev_redop_name((enum dev_redop)op),
							 tp_stage_name((enum tp_stage)st),
							 inpl ? " in place" : "", cnt);
						FAILIF(compare(hout, ref, cnt, (enum dev_dtype)t,
							       what),
						       "%s: wrong result", what);
						if (is_float((enum dev_dtype)t))
							*h = hash(*h, hout, bytes);
						got = tp_dev_last_stage(d);
						FAILIF(got == TP_STAGE_AUTO ||
							       (!dev && got != TP_STAGE_HOST) ||
							       (dev && st != TP_STAGE_AUTO &&
								(int)got != st),
						       "%s: stage %s", what, tp_stage_name(got));
						/* the fake kind reduces on its "device" exactly
						 * when it stages there */
						if (o == &fake_ops && n > 1 && cnt >= (size_t)n)
							FAILIF((got == TP_STAGE_DEVICE) !=
								       (fake_reduces > before),
							       "%s: %ld device reduces with stage "
							       "%s",
							       what, fake_reduces - before,
							       tp_stage_name(got));
					}
			}
		}
	}
out:
	return err;
}

static int gather_and_sendrecv(struct tp_dev_comm *d, const struct run *run, uint8_t *sb,
			       uint8_t *rb, uint8_t *hin, uint8_t *hout, uint8_t *ref)
{
	const struct dev_mem_ops *o = tp_dev_comm_ops(d);
	struct tp_comm *c = tp_dev_comm_base(d);
	int n = tp_comm_nranks(c), r = tp_comm_rank(c), err = 0, ret;
	static const size_t ag_counts[] = {1, 7, 1000};
	/* 300000 int32: two staging pieces of 1 MiB and a rest */
	static const size_t sr_counts[] = {0, 3, 4099, 300000};

	for (size_t k = 0; k < sizeof(ag_counts) / sizeof(ag_counts[0]); k++)
		for (int inpl = 0; inpl < 2; inpl++) {
			size_t cnt = ag_counts[k], bytes = cnt * 4;
			void *src = inpl ? rb + (size_t)r * bytes : sb;

			fill(hin, cnt, DEV_INT32, DEV_SUM, r);
			for (int p = 0; p < n; p++)
				fill(ref + (size_t)p * bytes, cnt, DEV_INT32, DEV_SUM, p);
			ret = o->from_host(src, hin, bytes);
			FAILIF(ret != 0, "from_host %d", ret);
			ret = tp_dev_allgather(d, src, rb, cnt, DEV_INT32);
			FAILIF(ret != 0, "all-gather %zu: %d", cnt, ret);
			ret = o->to_host(hout, rb, bytes * (size_t)n);
			FAILIF(ret != 0 || memcmp(hout, ref, bytes * (size_t)n) != 0,
			       "all-gather %zu%s: wrong result", cnt, inpl ? " in place" : "");
		}
	/* mode 0: apart, 1: in place, 2: host ranks non-blocking (tp_dev_isend,
	 * tp_dev_irecv), device ranks blocking (isend is refused on them) */
	for (size_t k = 0; k < sizeof(sr_counts) / sizeof(sr_counts[0]); k++)
		for (int mode = 0; mode < 3; mode++) {
			size_t cnt = sr_counts[k], bytes = cnt * 4;
			uint8_t *src = mode == 1 ? rb : sb;
			int next = (r + 1) % n, prev = (r - 1 + n) % n;
			struct tp_req sr = {0}, rr = {0};

			fill(hin, cnt, DEV_INT32, DEV_SUM, r);
			fill(ref, cnt, DEV_INT32, DEV_SUM, prev);
			ret = o->from_host(src, hin, bytes);
			FAILIF(ret != 0, "from_host %d", ret);
			if (mode == 2 && o->kind == DEV_MEM_HOST) {
				ret = tp_dev_irecv(d, rb, cnt, DEV_INT32, prev, &rr);
				if (ret == 0)
					ret = tp_dev_isend(d, src, cnt, DEV_INT32, next, &sr);
				while (ret == 0 && (sr.pending > 0 || rr.pending > 0))
					ret = tp_comm_progress(c, ICE_NSEC_PER_MSEC) < 0 ? -1 : 0;
				if (ret == 0)
					ret = sr.status < 0 ? sr.status : rr.status;
			} else {
				FAILIF(mode == 2 && tp_dev_isend(d, src, cnt, DEV_INT32, next,
								 &sr) != -EOPNOTSUPP,
				       "isend from device memory not refused");
				ret = tp_dev_sendrecv(d, src, next, rb, prev, cnt, DEV_INT32);
			}
			FAILIF(ret != 0, "send/recv %zu mode %d: %d", cnt, mode, ret);
			ret = o->to_host(hout, rb, bytes);
			FAILIF(ret != 0 || memcmp(hout, ref, bytes) != 0,
			       "send/recv %zu mode %d: wrong result", cnt, mode);
		}
out:
	return err;
}

/* TP_STAGE_AUTO follows the bandwidths. */
static int auto_choice(struct tp_dev_comm *d, const struct run *run, void *sb, void *rb,
		       uint8_t *hin)
{
	const struct dev_mem_ops *o = tp_dev_comm_ops(d);
	int r = tp_comm_rank(tp_dev_comm_base(d)), err = 0, ret;
	size_t cnt = 100000;

	memset(hin, 0, cnt * 4);
	ret = o->from_host(sb, hin, cnt * 4);
	FAILIF(ret != 0, "from_host %d", ret);
	tp_dev_set_bw(d, 1000, 1000, 1000, 0.01); /* slow CPU: reduce on the device */
	ret = tp_dev_allreduce(d, sb, rb, cnt, DEV_FLOAT32, DEV_SUM, TP_STAGE_AUTO);
	FAILIF(ret != 0, "all-reduce %d", ret);
	FAILIF(o->kind != DEV_MEM_HOST && tp_comm_nranks(tp_dev_comm_base(d)) > 1 &&
		       tp_dev_last_stage(d) != TP_STAGE_DEVICE,
	       "auto chose %s with a slow CPU", tp_stage_name(tp_dev_last_stage(d)));
	tp_dev_set_bw(d, 1000, 1000, 0.01, 1000); /* slow device reduce: on the host */
	ret = tp_dev_allreduce(d, sb, rb, cnt, DEV_FLOAT32, DEV_SUM, TP_STAGE_AUTO);
	FAILIF(ret != 0, "all-reduce %d", ret);
	FAILIF(tp_dev_last_stage(d) != TP_STAGE_HOST, "auto chose %s with a slow device",
	       tp_stage_name(tp_dev_last_stage(d)));
	/* too large for the staging (all-host communicators have none) */
	if (strchr(run->kinds, 'F') != NULL || strchr(run->kinds, 'C') != NULL)
		FAILIF(tp_dev_allreduce(d, sb, rb, MAXB / 4 + 1, DEV_FLOAT32, DEV_SUM,
					TP_STAGE_HOST) != -EMSGSIZE,
		       "max_bytes not enforced");
out:
	return err;
}

/* A communicator with staging for 4 KiB (tp_dev_comm_staging: the whole
 * buffer padded and two pieces pinned on the host, one piece on a device):
 * send/recv up to that works, one element more is refused on every rank
 * (it would run past the pinned pieces, which are min(max_bytes, 1 MiB)
 * long) instead of overflowing. */
static int small_staging(struct tp_comm *c, const struct dev_mem_ops *o, const struct run *run,
			 uint8_t *sb, uint8_t *rb, uint8_t *hin, uint8_t *hout, uint8_t *ref)
{
	enum { SMALL = 4096 };
	int n = tp_comm_nranks(c), r = tp_comm_rank(c), err = 0, ret;
	struct tp_dev_comm *d = tp_dev_comm_new(c, o, SMALL);
	size_t cnt = SMALL / 4, hs, ds, piece;

	FAILIF(d == NULL, "tp_dev_comm_new(%d): %s", SMALL, strerror(errno));
	tp_dev_comm_staging(d, &hs, &ds);
	piece = (SMALL / (size_t)n + 8 > SMALL ? SMALL / (size_t)n + 8 : SMALL) + 63;
	piece -= piece % 64;
	FAILIF(hs != (SMALL + 8 * (size_t)n + 63) / 64 * 64 + 2 * piece ||
		       ds != (o->kind == DEV_MEM_HOST ? 0 : piece),
	       "staging: host %zu, device %zu bytes", hs, ds);
	fill(hin, cnt, DEV_INT32, DEV_SUM, r + 3);
	fill(ref, cnt, DEV_INT32, DEV_SUM, (r - 1 + n) % n + 3);
	ret = o->from_host(sb, hin, SMALL);
	FAILIF(ret != 0, "from_host %d", ret);
	ret = tp_dev_sendrecv(d, sb, (r + 1) % n, rb, (r - 1 + n) % n, cnt, DEV_INT32);
	FAILIF(ret != 0, "send/recv of max_bytes: %d", ret);
	ret = o->to_host(hout, rb, SMALL);
	FAILIF(ret != 0 || memcmp(hout, ref, SMALL) != 0, "send/recv of max_bytes: wrong result");
	ret = tp_dev_sendrecv(d, sb, (r + 1) % n, rb, (r - 1 + n) % n, 2 * cnt, DEV_INT32);
	FAILIF(ret != -EMSGSIZE, "send/recv over max_bytes: %d, expected -EMSGSIZE", ret);
	ret = tp_dev_sendrecv(d, sb, (r + 1) % n, NULL, -1, cnt + 1, DEV_INT32);
	FAILIF(ret != -EMSGSIZE, "send over max_bytes: %d, expected -EMSGSIZE", ret);
out:
	tp_dev_comm_free(d);
	return err;
}

static int rank_main(struct tp_comm *c, const struct run *run)
{
	int n = tp_comm_nranks(c), r = tp_comm_rank(c), err = 0, ret;
	const struct dev_mem_ops *o = ops_for(run->kinds[r]);
	struct tp_dev_comm *d = o != NULL ? tp_dev_comm_new(c, o, MAXB) : NULL;
	uint8_t *sb = NULL, *rb = NULL, *hin = malloc(MAXB), *hout = malloc(MAXB);
	uint8_t *ref = malloc(MAXB), *tmp = malloc(MAXB);
	uint32_t h = 2166136261u;
	double hv, hmin;

	FAILIF(o == NULL, "the CUDA backend does not load ($ICE_CUDA_LIB)");
	FAILIF(d == NULL, "tp_dev_comm_new: %s", strerror(errno));
	for (int p = 0; p < n; p++)
		FAILIF(tp_dev_comm_kind(d, p) !=
			       (run->kinds[p] == 'H' ? DEV_MEM_HOST : DEV_MEM_CUDA),
		       "rank %d's kind is %d", p, tp_dev_comm_kind(d, p));
	sb = o->alloc(MAXB);
	rb = o->alloc(MAXB);
	FAILIF(sb == NULL || rb == NULL, "alloc");
	err = allreduce_all(d, run, sb, rb, hin, hout, ref, tmp, &h);
	if (err == 0)
		err = gather_and_sendrecv(d, run, sb, rb, hin, hout, ref);
	if (err == 0)
		err = auto_choice(d, run, sb, rb, hin);
	/* all-host communicators have no staging to overflow */
	if (err == 0 && strcspn(run->kinds, "FC") < strlen(run->kinds))
		err = small_staging(c, o, run, sb, rb, hin, hout, ref);
	if (err == 0) {
		/* floats: the same bits on every rank */
		hv = h;
		hmin = -(double)h;
		ret = tp_comm_oob_max(c, &hv);
		if (ret == 0)
			ret = tp_comm_oob_max(c, &hmin);
		FAILIF(ret != 0 || hv != -hmin, "float results differ between ranks");
	}
out:
	if (sb != NULL)
		o->free(sb);
	if (rb != NULL)
		o->free(rb);
	tp_dev_comm_free(d);
	free(hin);
	free(hout);
	free(ref);
	free(tmp);
	return err;
}

static void run_ranks(const struct run *run)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t salen = sizeof(sa);
	int nranks = (int)strlen(run->kinds), lfd, status, failed = 0;
	char base[32], boot[64];
	pid_t pids[16];

	test_id++;
	snprintf(base, sizeof(base), "127.43.%d.1", test_id);
	inet_pton(AF_INET, base, &sa.sin_addr);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 64), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &salen), 0);
	snprintf(boot, sizeof(boot), "%s:%u", base, ntohs(sa.sin_port));
	for (int r = 0; r < nranks; r++) {
		pids[r] = fork();
		assert_true(pids[r] >= 0);
		if (pids[r] == 0) {
			struct tp_comm_cfg cc;
			struct tp_comm *c;
			char a[32];
			int err;

			tp_comm_cfg_default(&cc);
			cc.nranks = nranks;
			cc.rank = r;
			cc.listen_fd = r == 0 ? lfd : -1;
			snprintf(cc.bootstrap, sizeof(cc.bootstrap), "%s", boot);
			snprintf(a, sizeof(a), "127.43.%d.%d", test_id, r + 1);
			inet_pton(AF_INET, a, &cc.eng.addr);
			cc.eng.port = 0;
			cc.eng.mtu = 4096;
			/* default retransmission timeout: no loss here, and a rank may
			 * wait for the CPU behind the others on a small machine */
			cc.oneshot_max = 2048;
			c = tp_comm_init(&cc);
			if (c == NULL)
				_exit(3);
			err = rank_main(c, run);
			tp_comm_free(c);
			_exit(err == 0 ? 0 : 1);
		}
	}
	close(lfd);
	for (int r = 0; r < nranks; r++) {
		assert_int_equal(waitpid(pids[r], &status, 0), pids[r]);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			print_message("rank %d (%c) exited with status 0x%x\n", r, run->kinds[r],
				      status);
			failed++;
		}
	}
	assert_int_equal(failed, 0);
}

static const size_t counts_all[] = {0, 1, 5, 17, 300, 4099};

static void test_3_ranks_host_fake_cuda(void **s)
{
	struct run r = {.kinds = "HFC", .counts = counts_all, .ncounts = 6};

	(void)s;
	run_ranks(&r);
}

static void test_4_ranks_interleaved(void **s)
{
	static const size_t counts[] = {2, 7, 1001};
	struct run r = {.kinds = "FHCH", .counts = counts, .ncounts = 3};

	(void)s;
	run_ranks(&r);
}

static void test_2_ranks_devices_only(void **s)
{
	static const size_t counts[] = {1, 3, 999};
	struct run r = {.kinds = "FC", .counts = counts, .ncounts = 3};

	(void)s;
	run_ranks(&r);
}

static void test_1_rank_device(void **s)
{
	static const size_t counts[] = {0, 1, 33};
	struct run r = {.kinds = "C", .counts = counts, .ncounts = 3};

	(void)s;
	run_ranks(&r);
}

/* all host: straight to tp_allreduce & co */
static void test_2_ranks_all_host(void **s)
{
	static const size_t counts[] = {1, 17, 3000};
	struct run r = {.kinds = "HH", .counts = counts, .ncounts = 3};

	(void)s;
	run_ranks(&r);
}

static void quiet(int level, uint32_t sub, const char *line, void *arg)
{
	(void)level;
	(void)sub;
	(void)line;
	(void)arg;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_3_ranks_host_fake_cuda),
		cmocka_unit_test(test_4_ranks_interleaved),
		cmocka_unit_test(test_2_ranks_devices_only),
		cmocka_unit_test(test_1_rank_device),
		cmocka_unit_test(test_2_ranks_all_host),
	};

	/* the max_bytes check logs an error on purpose */
	if (getenv("TEST_VERBOSE") == NULL)
		ice_log_set_sink(quiet, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
