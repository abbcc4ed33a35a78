// SPDX-License-Identifier: Apache-2.0
/*
 * test_ccl_vendors: every library row of libice-ccl.so (LD_PRELOAD) against
 * a test double of that library (no GPU, NPU or MLU here): the NCCL-shaped
 * prefixes mccl, succl, eccl; RCCL (NCCL's names in a library loaded
 * RTLD_LOCAL, as PyTorch does, found by ICE_CCL_REAL_LIB); Huawei HCCL and
 * Cambricon CNCL with their own names and types.
 *
 * This program links none of the doubles: each child (this program with a
 * scenario name) dlopens its library as an application would, calls the
 * entry points the process sees (the hooks), checks what the double
 * received, and exits 0; the parent plays the agent (ICE_AGENT_SOCK) and
 * checks the events: kinds, sizes, ranks, ids, groups.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_nccl.h"
#include "ice_event.h"

static const char *self_exe;
static int sock_fd = -1;

/* ---- child side */

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "child check failed at %s:%d: %s\n", __FILE__, __LINE__,   \
				#cond);                                                            \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)
#define P(x) ((uint64_t)(uintptr_t)(x))

static struct fake_nccl_call *fake_last;
static int *fake_rc;

#define LAST(name, ...)                                                                            \
	do {                                                                                       \
		uint64_t want_[] = {__VA_ARGS__};                                                  \
		CHECK(strcmp(fake_last->fn, name) == 0);                                           \
		CHECK(memcmp(fake_last->a, want_, sizeof(want_)) == 0);                            \
	} while (0)

/* The double named by TEST_LIB, loaded globally or (TEST_LOCAL) not. */
static void *load_double(const char *sym_last, const char *sym_rc)
{
	const char *path = getenv("TEST_LIB");
	void *h;

	CHECK(path != NULL);
	h = dlopen(path, RTLD_NOW | (getenv("TEST_LOCAL") != NULL ? RTLD_LOCAL : RTLD_GLOBAL));
	CHECK(h != NULL);
	fake_last = dlsym(h, sym_last);
	fake_rc = dlsym(h, sym_rc);
	CHECK(fake_last != NULL && fake_rc != NULL);
	return h;
}

/* The entry point the process sees: must be the hook. */
static void *hooked(const char *pfx, const char *name)
{
	char full[64];
	Dl_info di;
	void *p;

	snprintf(full, sizeof(full), "%s%s", pfx, name);
	p = dlsym(RTLD_DEFAULT, full);
	CHECK(p != NULL && dladdr(p, &di) != 0 && strstr(di.dli_fname, "libice-ccl.so") != NULL);
	return p;
}

typedef struct {
	char internal[128];
} uid_t128;

static uid_t128 test_uid(void)
{
	uid_t128 id;

	for (int i = 0; i < 128; i++)
		id.internal[i] = (char)(i * 5 + 1);
	return id;
}

/* One NCCL-shaped prefix (TEST_PREFIX) against fake_nccl's set for it. */
static int child_prefix(void)
{
	const char *pfx = getenv("TEST_PREFIX");
	int (*init)(void **, int, uid_t128, int);
	int (*allreduce)(const void *, void *, size_t, int, int, void *, void *);
	int (*allgather)(const void *, void *, size_t, int, void *, void *);
	int (*send)(const void *, size_t, int, int, void *, void *);
	int (*gstart)(void), (*gend)(void), (*destroy)(void *);
	char b[8], name[48];
	void *c = NULL, *st = (void *)0x5151;

	CHECK(pfx != NULL);
	load_double("fake_nccl_last", "fake_nccl_rc");
	init = hooked(pfx, "CommInitRank");
	allreduce = hooked(pfx, "AllReduce");
	allgather = hooked(pfx, "AllGather");
	send = hooked(pfx, "Send");
	gstart = hooked(pfx, "GroupStart");
	gend = hooked(pfx, "GroupEnd");
	destroy = hooked(pfx, "CommDestroy");
	CHECK(init(&c, 4, test_uid(), 2) == 0 && c != NULL);
	CHECK(allreduce(b, b, 1000, 7 /* float32 */, 0, c, st) == 0);
	snprintf(name, sizeof(name), "%sAllReduce", pfx);
	LAST(name, P(b), P(b), 1000, 7, 0, P(c), P(st));
	CHECK(allgather(b, b, 5, 9 /* bf16 */, c, st) == 0);
	CHECK(gstart() == 0);
	CHECK(send(b, 64, 1 /* uint8 */, 3, c, st) == 0);
	snprintf(name, sizeof(name), "%sSend", pfx);
	LAST(name, P(b), 64, 1, 3, P(c), P(st));
	CHECK(gend() == 0);
	*fake_rc = 5; /* refused: forwarded, not reported */
	CHECK(allreduce(b, b, 9, 7, 0, c, st) == 5);
	*fake_rc = 0;
	CHECK(destroy(c) == 0);
	return 0;
}

/* HCCL: hccl.h's names, argument orders and HcclDataType numbers. */
static int child_hccl(void)
{
	int (*init_root)(uint32_t, const void *, uint32_t, void **) =
		hooked("", "HcclCommInitRootInfo");
	int (*init_cluster)(const char *, uint32_t, void **) =
		hooked("", "HcclCommInitClusterInfo");
	int (*init_all)(uint32_t, int32_t *, void **) = hooked("", "HcclCommInitAll");
	int (*allreduce)(void *, void *, uint64_t, int, int, void *, void *) =
		hooked("", "HcclAllReduce");
	int (*bcast)(void *, uint64_t, int, uint32_t, void *, void *) = hooked("", "HcclBroadcast");
	int (*rs)(void *, void *, uint64_t, int, int, void *, void *) =
		hooked("", "HcclReduceScatter");
	int (*ag)(void *, void *, uint64_t, int, void *, void *) = hooked("", "HcclAllGather");
	int (*reduce)(void *, void *, uint64_t, int, int, uint32_t, void *, void *) =
		hooked("", "HcclReduce");
	int (*a2a)(const void *, uint64_t, int, const void *, uint64_t, int, void *, void *) =
		hooked("", "HcclAlltoAll");
	int (*send)(void *, uint64_t, int, uint32_t, void *, void *) = hooked("", "HcclSend");
	int (*recv)(void *, uint64_t, int, uint32_t, void *, void *) = hooked("", "HcclRecv");
	int (*gstart)(void) = hooked("", "HcclGroupStart");
	int (*gend)(void) = hooked("", "HcclGroupEnd");
	int (*destroy)(void *) = hooked("", "HcclCommDestroy");
	static char root_info[4108];
	void *c = NULL, *c2 = NULL, *all[2], *st = (void *)0x5252;
	int32_t devs[2] = {0, 1};
	char b[8];

	load_double("fake_hccl_last", "fake_hccl_rc");
	for (size_t i = 0; i < sizeof(root_info); i++)
		root_info[i] = (char)(i * 3 + 7);
	CHECK(init_root(4, root_info, 2, &c) == 0 && c != NULL);
	LAST("HcclCommInitRootInfo", 4, P(root_info), 2, P(&c));
	CHECK(allreduce(b, b, 1000, 3 /* FP16 */, 0, c, st) == 0);
	LAST("HcclAllReduce", P(b), P(b), 1000, 3, 0, P(c), P(st));
	CHECK(bcast(b, 10, 10 /* FP64 */, 3, c, st) == 0);
	LAST("HcclBroadcast", P(b), 10, 10, 3, P(c), P(st));
	CHECK(rs(b, b, 5, 1 /* INT16 */, 2, c, st) == 0);
	CHECK(ag(b, b, 6, 7 /* UINT8 */, c, st) == 0);
	LAST("HcclAllGather", P(b), P(b), 6, 7, P(c), P(st));
	CHECK(reduce(b, b, 7, 5 /* INT64 */, 2, 1, c, st) == 0);
	LAST("HcclReduce", P(b), P(b), 7, 5, 2, 1, P(c), P(st));
	CHECK(a2a(b, 2, 4 /* FP32 */, b, 2, 4, c, st) == 0);
	LAST("HcclAlltoAll", P(b), 2, 4, P(b), 2, 4, P(c), P(st));
	CHECK(gstart() == 0);
	CHECK(send(b, 16, 11 /* BFP16 */, 3, c, st) == 0);
	LAST("HcclSend", P(b), 16, 11, 3, P(c), P(st));
	CHECK(recv(b, 8, 2 /* INT32 */, 1, c, st) == 0);
	LAST("HcclRecv", P(b), 8, 2, 1, P(c), P(st));
	CHECK(gend() == 0);
	*fake_rc = 4; /* HCCL_E_INTERNAL: forwarded, not reported */
	CHECK(allreduce(b, b, 9, 4, 0, c, st) == 4);
	*fake_rc = 0;
	/* a rank table: nranks from HcclGetRankSize, id from the file */
	CHECK(init_cluster(getenv("TEST_RANK_TABLE"), 1, &c2) == 0 && c2 != NULL);
	CHECK(allreduce(b, b, 4, 99 /* unknown */, 1, c2, st) == 0);
	CHECK(init_all(2, devs, all) == 0);
	CHECK(destroy(c) == 0);
	LAST("HcclCommDestroy", P(c));
	CHECK(destroy(c2) == 0);
	return 0;
}

/* CNCL: cncl.h's names, argument orders and cnclDataType_t numbers. */
static int child_cncl(void)
{
	int (*init)(void **, int, const int *, const int *, int, void *) =
		hooked("", "cnclInitComms");
	int (*allreduce)(const void *, void *, size_t, int, int, void *, void *) =
		hooked("", "cnclAllReduce");
	int (*bcast)(void *, size_t, int, int, void *, void *) = hooked("", "cnclBcast");
	int (*broadcast)(const void *, void *, size_t, int, int, void *, void *) =
		hooked("", "cnclBroadcast");
	int (*rs)(const void *, void *, size_t, int, int, void *, void *) =
		hooked("", "cnclReduceScatter");
	int (*ag)(const void *, void *, size_t, int, void *, void *) = hooked("", "cnclAllGather");
	int (*reduce)(const void *, void *, size_t, int, int, int, void *, void *) =
		hooked("", "cnclReduce");
	int (*a2a)(const void *, void *, size_t, int, void *, void *) = hooked("", "cnclAlltoAll");
	int (*send)(void *, size_t, int, int, void *, void *) = hooked("", "cnclSend");
	int (*recv)(void *, size_t, int, int, void *, void *) = hooked("", "cnclRecv");
	int (*gstart)(void) = hooked("", "cnclGroupStart");
	int (*gend)(void) = hooked("", "cnclGroupEnd");
	int (*freec)(void *) = hooked("", "cnclFreeComm");
	int (*abortc)(void *) = hooked("", "cnclAbortComm");
	int (*destroy)(void **, int) = hooked("", "cnclDestroyComms");
	struct {
		char data[128];
		uint64_t hash;
	} clique;
	int devs[2] = {0, 1}, ranks[2] = {1, 3};
	void *c[2] = {NULL, NULL}, *solo[1], *q = (void *)0x5353;
	char b[8];

	load_double("fake_cncl_last", "fake_cncl_rc");
	for (int i = 0; i < 128; i++)
		clique.data[i] = (char)(i * 11 + 2);
	clique.hash = 0;
	CHECK(init(c, 2, devs, ranks, 4, &clique) == 0 && c[0] != NULL && c[1] != NULL);
	LAST("cnclInitComms", P(c), 2, P(devs), P(ranks), 4, P(&clique));
	CHECK(allreduce(b, b, 100, 0x10 /* half */, 0, c[0], q) == 0);
	LAST("cnclAllReduce", P(b), P(b), 100, 0x10, 0, P(c[0]), P(q));
	CHECK(bcast(b, 10, 0x23 /* int64 */, 0, c[1], q) == 0);
	LAST("cnclBcast", P(b), 10, 0x23, 0, P(c[1]), P(q));
	CHECK(broadcast(b, b, 5, 0x31 /* uint16 */, 2, c[0], q) == 0);
	CHECK(rs(b, b, 3, 0x12 /* float */, 1, c[0], q) == 0);
	LAST("cnclReduceScatter", P(b), P(b), 3, 0x12, 1, P(c[0]), P(q));
	CHECK(ag(b, b, 4, 0x20 /* int8 */, c[0], q) == 0);
	CHECK(reduce(b, b, 6, 0x11 /* bfloat16 */, 3, 1, c[0], q) == 0);
	LAST("cnclReduce", P(b), P(b), 6, 0x11, 3, 1, P(c[0]), P(q));
	CHECK(a2a(b, b, 2, 0x22 /* int32 */, c[0], q) == 0);
	CHECK(gstart() == 0);
	CHECK(send(b, 16, 0x33 /* uint64 */, 2, c[0], q) == 0);
	LAST("cnclSend", P(b), 16, 0x33, 2, P(c[0]), P(q));
	CHECK(recv(b, 8, 0x30 /* uint8 */, 0, c[0], q) == 0);
	CHECK(gend() == 0);
	*fake_rc = 1; /* CNCL_RET_ERR_INTERNAL: forwarded, not reported */
	CHECK(allreduce(b, b, 9, 0x12, 0, c[0], q) == 1);
	*fake_rc = 0;
	CHECK(freec(c[0]) == 0);
	LAST("cnclFreeComm", P(c[0]));
	CHECK(destroy(&c[1], 1) == 0);
	LAST("cnclDestroyComms", P(&c[1]), 1);
	/* one process, no clique id */
	CHECK(init(solo, 1, devs, NULL, 1, NULL) == 0);
	CHECK(abortc(solo[0]) == 0);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(void);
} scenarios[] = {
	{"prefix", child_prefix},
	{"hccl", child_hccl},
	{"cncl", child_cncl},
};

/* ---- parent side: the agent */

static int run_child(const char *scenario, ...)
{
	va_list ap;
	pid_t pid;
	int st;

	pid = fork();
	if (pid == 0) {
		const char *kv;

		va_start(ap, scenario);
		while ((kv = va_arg(ap, const char *)) != NULL)
			putenv((char *)kv);
		va_end(ap);
		execl(self_exe, self_exe, scenario, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Every record the child sent (it has exited: all of it is queued). */
static int recv_events(struct ice_event *evs, int max)
{
	struct ice_event ev[ICE_EVENT_PER_DGRAM];
	int n = 0;
	ssize_t r;

	while ((r = recv(sock_fd, ev, sizeof(ev), 0)) > 0) {
		assert_int_equal(r % (ssize_t)sizeof(ev[0]), 0);
		for (ssize_t i = 0; i < r / (ssize_t)sizeof(ev[0]); i++) {
			assert_int_equal(ev[i].magic, ICE_EVENT_MAGIC);
			if (n < max)
				evs[n++] = ev[i];
		}
	}
	return n;
}

static uint64_t djb2a(const void *p, size_t n)
{
	const signed char *s = p;
	uint64_t h = 5381;

	for (size_t i = 0; i < n; i++)
		h = ((h << 5) + h) ^ (uint64_t)(int64_t)s[i];
	return h;
}

static void check_coll(const struct ice_event *ev, const char *lib, unsigned op, uint64_t count,
		       uint64_t bytes, uint32_t dtype, int rank, int nranks)
{
	assert_int_equal(ev->kind, ICE_EV_COLL_START);
	assert_string_equal(ev->lib, lib);
	assert_int_equal(ev->op, op);
	assert_int_equal(ev->count, count);
	assert_int_equal(ev->bytes, bytes);
	assert_int_equal(ev->dtype, dtype);
	assert_int_equal(ev->rank, rank);
	assert_int_equal(ev->nranks, nranks);
}

/* One NCCL-shaped row: init, allreduce, allgather, a grouped send,
 * (a refused allreduce: absent), destroy. */
static void check_prefix_row(const char *prefix, const char *lib_path, const char *want_lib,
			     bool local)
{
	char e_pfx[64], e_lib[4200], e_real[4200];
	struct ice_event ev[32];
	uid_t128 id = test_uid();
	uint64_t cid = djb2a(id.internal, sizeof(id.internal));
	int n;

	snprintf(e_pfx, sizeof(e_pfx), "TEST_PREFIX=%s", prefix);
	snprintf(e_lib, sizeof(e_lib), "TEST_LIB=%s", lib_path);
	snprintf(e_real, sizeof(e_real), "ICE_CCL_REAL_LIB=%s", lib_path);
	if (local)
		assert_int_equal(run_child("prefix", e_pfx, e_lib, e_real, "TEST_LOCAL=1", NULL),
				 0);
	else
		assert_int_equal(run_child("prefix", e_pfx, e_lib, NULL), 0);
	n = recv_events(ev, 32);
	assert_int_equal(n, 5);
	assert_int_equal(ev[0].kind, ICE_EV_COMM_INIT);
	assert_string_equal(ev[0].lib, want_lib);
	assert_true(ev[0].comm_id == cid);
	assert_int_equal(ev[0].rank, 2);
	assert_int_equal(ev[0].nranks, 4);
	check_coll(&ev[1], want_lib, ICE_OP_ALLREDUCE, 1000, 4000, 7, 2, 4);
	check_coll(&ev[2], want_lib, ICE_OP_ALLGATHER, 20, 40, 9, 2, 4);
	check_coll(&ev[3], want_lib, ICE_OP_SEND, 64, 64, 1, 2, 4);
	assert_int_equal(ev[3].peer, 3);
	assert_int_not_equal(ev[3].group, 0);
	assert_int_equal(ev[4].kind, ICE_EV_COMM_DESTROY);
	assert_true(ev[4].comm_id == cid);
}

static void test_mccl(void **state)
{
	check_prefix_row("mccl", getenv("TEST_FAKE_NCCL"), "mccl", false);
}

static void test_succl(void **state)
{
	check_prefix_row("succl", getenv("TEST_FAKE_NCCL"), "succl", false);
}

static void test_eccl(void **state)
{
	check_prefix_row("eccl", getenv("TEST_FAKE_NCCL"), "eccl", false);
}

/* RCCL exports NCCL's names; loaded RTLD_LOCAL (RTLD_NEXT cannot see it),
 * the hook finds it by ICE_CCL_REAL_LIB. Its events say "nccl". */
static void test_rccl(void **state)
{
	check_prefix_row("nccl", getenv("TEST_FAKE_RCCL"), "nccl", true);
}

static void test_hccl(void **state)
{
	char table[] = "/tmp/ice-hccl-ranktable-XXXXXX", e_lib[4200], e_table[128];
	static const char text[] = "{\"server_count\":\"1\",\"version\":\"1.0\"}\n";
	static char root_info[4108];
	struct ice_event ev[32];
	uint64_t cid;
	int fd, n, rc;

	for (size_t i = 0; i < sizeof(root_info); i++)
		root_info[i] = (char)(i * 3 + 7);
	cid = djb2a(root_info, sizeof(root_info));
	fd = mkstemp(table);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	snprintf(e_lib, sizeof(e_lib), "TEST_LIB=%s", getenv("TEST_FAKE_HCCL"));
	snprintf(e_table, sizeof(e_table), "TEST_RANK_TABLE=%s", table);
	rc = run_child("hccl", e_lib, e_table, NULL);
	unlink(table); /* also when the child failed */
	assert_int_equal(rc, 0);
	n = recv_events(ev, 32);
	assert_int_equal(n, 15);
	assert_int_equal(ev[0].kind, ICE_EV_COMM_INIT);
	assert_string_equal(ev[0].lib, "hccl");
	assert_true(ev[0].comm_id == cid);
	assert_int_equal(ev[0].rank, 2);
	assert_int_equal(ev[0].nranks, 4);
	/* 1000 fp16 -> NCCL's float16 (6) */
	check_coll(&ev[1], "hccl", ICE_OP_ALLREDUCE, 1000, 2000, 6, 2, 4);
	assert_true(ev[1].comm_id == cid);
	assert_int_equal(ev[1].redop, 0);
	check_coll(&ev[2], "hccl", ICE_OP_BROADCAST, 10, 80, 8, 2, 4);
	assert_int_equal(ev[2].root, 3);
	/* recvCount 5 of int16 (no NCCL type) from 4 ranks */
	check_coll(&ev[3], "hccl", ICE_OP_REDUCESCATTER, 20, 40, (uint32_t)-1, 2, 4);
	assert_int_equal(ev[3].redop, 2);
	check_coll(&ev[4], "hccl", ICE_OP_ALLGATHER, 24, 24, 1, 2, 4);
	check_coll(&ev[5], "hccl", ICE_OP_REDUCE, 7, 56, 4, 2, 4);
	assert_int_equal(ev[5].root, 1);
	check_coll(&ev[6], "hccl", ICE_OP_ALLTOALL, 8, 32, 7, 2, 4);
	check_coll(&ev[7], "hccl", ICE_OP_SEND, 16, 32, 9, 2, 4);
	assert_int_equal(ev[7].peer, 3);
	check_coll(&ev[8], "hccl", ICE_OP_RECV, 8, 32, 2, 2, 4);
	assert_int_equal(ev[8].peer, 1);
	assert_int_not_equal(ev[7].group, 0);
	assert_int_equal(ev[8].group, ev[7].group);
	/* the refused all-reduce is absent; the rank table's communicator */
	assert_int_equal(ev[9].kind, ICE_EV_COMM_INIT);
	assert_true(ev[9].comm_id == djb2a(text, sizeof(text) - 1));
	assert_int_equal(ev[9].rank, 1);
	assert_int_equal(ev[9].nranks, 8); /* HcclGetRankSize */
	check_coll(&ev[10], "hccl", ICE_OP_ALLREDUCE, 4, 0, (uint32_t)-1, 1, 8);
	/* HcclCommInitAll: both ranks, one id */
	assert_int_equal(ev[11].kind, ICE_EV_COMM_INIT);
	assert_int_equal(ev[12].kind, ICE_EV_COMM_INIT);
	assert_int_equal(ev[11].rank, 0);
	assert_int_equal(ev[12].rank, 1);
	assert_int_equal(ev[12].nranks, 2);
	assert_true(ev[11].comm_id == ev[12].comm_id && ev[11].comm_id != cid);
	assert_int_equal(ev[13].kind, ICE_EV_COMM_DESTROY);
	assert_true(ev[13].comm_id == cid);
	assert_int_equal(ev[14].kind, ICE_EV_COMM_DESTROY);
	assert_true(ev[14].comm_id == ev[9].comm_id);
}

static void test_cncl(void **state)
{
	char e_lib[4200];
	struct ice_event ev[32];
	char clique[128];
	uint64_t cid;
	int n;

	for (int i = 0; i < 128; i++)
		clique[i] = (char)(i * 11 + 2);
	cid = djb2a(clique, sizeof(clique));
	snprintf(e_lib, sizeof(e_lib), "TEST_LIB=%s", getenv("TEST_FAKE_CNCL"));
	assert_int_equal(run_child("cncl", e_lib, NULL), 0);
	n = recv_events(ev, 32);
	assert_int_equal(n, 15);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(ev[i].kind, ICE_EV_COMM_INIT);
		assert_string_equal(ev[i].lib, "cncl");
		assert_true(ev[i].comm_id == cid);
		assert_int_equal(ev[i].nranks, 4);
	}
	assert_int_equal(ev[0].rank, 1);
	assert_int_equal(ev[1].rank, 3);
	check_coll(&ev[2], "cncl", ICE_OP_ALLREDUCE, 100, 200, 6, 1, 4);
	check_coll(&ev[3], "cncl", ICE_OP_BROADCAST, 10, 80, 4, 3, 4);
	assert_int_equal(ev[3].root, 0);
	check_coll(&ev[4], "cncl", ICE_OP_BROADCAST, 5, 10, (uint32_t)-1, 1, 4);
	assert_int_equal(ev[4].root, 2);
	check_coll(&ev[5], "cncl", ICE_OP_REDUCESCATTER, 12, 48, 7, 1, 4);
	assert_int_equal(ev[5].redop, 1);
	check_coll(&ev[6], "cncl", ICE_OP_ALLGATHER, 16, 16, 0, 1, 4);
	check_coll(&ev[7], "cncl", ICE_OP_REDUCE, 6, 12, 9, 1, 4);
	assert_int_equal(ev[7].redop, 3);
	assert_int_equal(ev[7].root, 1);
	check_coll(&ev[8], "cncl", ICE_OP_ALLTOALL, 8, 32, 2, 1, 4);
	check_coll(&ev[9], "cncl", ICE_OP_SEND, 16, 128, 5, 1, 4);
	assert_int_equal(ev[9].peer, 2);
	check_coll(&ev[10], "cncl", ICE_OP_RECV, 8, 8, 1, 1, 4);
	assert_int_not_equal(ev[9].group, 0);
	assert_int_equal(ev[10].group, ev[9].group);
	/* the refused all-reduce is absent */
	assert_int_equal(ev[11].kind, ICE_EV_COMM_DESTROY);
	assert_int_equal(ev[11].rank, 1);
	assert_int_equal(ev[12].kind, ICE_EV_COMM_DESTROY);
	assert_int_equal(ev[12].rank, 3);
	assert_int_equal(ev[13].kind, ICE_EV_COMM_INIT);
	assert_int_equal(ev[13].nranks, 1);
	assert_true(ev[13].comm_id != cid);
	assert_int_equal(ev[14].kind, ICE_EV_COMM_DESTROY);
	assert_true(ev[14].comm_id == ev[13].comm_id);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mccl), cmocka_unit_test(test_succl),
		cmocka_unit_test(test_eccl), cmocka_unit_test(test_rccl),
		cmocka_unit_test(test_hccl), cmocka_unit_test(test_cncl),
	};
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	const char *pre = getenv("LD_PRELOAD");
	int rcvbuf = 1 << 20, ret;

	self_exe = argv[0];
	if (argc > 1) {
		for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
			if (strcmp(argv[1], scenarios[i].name) == 0)
				return scenarios[i].fn();
		return 2;
	}
	if (pre == NULL || strstr(pre, "libice-ccl.so") == NULL) {
		printf("LD_PRELOAD does not name libice-ccl.so: run through meson test\n");
		return 77;
	}
	snprintf(a.sun_path, sizeof(a.sun_path), "/tmp/ice-ccl-vendors-%d.sock", (int)getpid());
	sock_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	setsockopt(sock_fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	unlink(a.sun_path);
	if (sock_fd < 0 || bind(sock_fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("agent socket");
		return 1;
	}
	setenv("ICE_AGENT_SOCK", a.sun_path, 1);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	close(sock_fd);
	unlink(a.sun_path);
	return ret;
}
