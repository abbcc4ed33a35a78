// SPDX-License-Identifier: Apache-2.0
/*
 * common/ice_redis against a real Redis Cluster (integration): 3 primaries
 * and 3 replicas on 127.0.0.1 (tools/ice-redis-cluster), then
 *   - a pipeline of 3000 commands over 1000 hosts' hash tags lands on all
 *     three shards and reads back;
 *   - a slot migrated by hand: a key already moved answers ASK, the slot
 *     given to the other primary answers MOVED; both are followed and the
 *     client's slot map follows the MOVED;
 *   - a primary killed by its PID: the pipeline fails naming its slots,
 *     and after the replica's fail-over the same pipeline succeeds again
 *     with every value there (the test WAITs for replication first).
 * Exits 77 without redis-server.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ice_redis.h"
#include "ice_time.h"

#define NODES 6
#define HOSTS 1000

static char dir[64], seeds[256], tool[512];
static int base_port;

static redisReply *node_cmd(int port, const char *fmt, ...)
{
	redisContext *c = redisConnect("127.0.0.1", port);
	redisReply *r = NULL;
	va_list ap;

	if (c == NULL || c->err) {
		redisFree(c);
		return NULL;
	}
	va_start(ap, fmt);
	r = redisvCommand(c, fmt, ap);
	va_end(ap);
	redisFree(c);
	return r;
}

static int port_of(const char *addr)
{
	return atoi(strrchr(addr, ':') + 1);
}

static void node_id(int port, char *id, size_t len)
{
	redisReply *r = node_cmd(port, "CLUSTER MYID");

	assert_non_null(r);
	snprintf(id, len, "%s", r->str);
	freeReplyObject(r);
}

static void put_all(struct ice_redis *r)
{
	char key[64];

	for (int h = 0; h < HOSTS; h++)
		for (int k = 0; k < 3; k++) {
			snprintf(key, sizeof(key), "ice:t:{h%d}:k%d", h, k);
			assert_int_equal(ice_redis_appendf(r, "SET %s %d", key, h * 3 + k), 0);
		}
	assert_int_equal(ice_redis_pipe(r, 3 * HOSTS, NULL, NULL), 0);
}

/* 0: every value back; -EIO: the pipeline failed */
static int check_all(struct ice_redis *r)
{
	redisReply **rep = calloc(3 * HOSTS, sizeof(*rep));
	char key[64];
	int ret;

	assert_non_null(rep);
	for (int h = 0; h < HOSTS; h++)
		for (int k = 0; k < 3; k++) {
			snprintf(key, sizeof(key), "ice:t:{h%d}:k%d", h, k);
			if (ice_redis_appendf(r, "GET %s", key) < 0) {
				free(rep);
				return -EIO;
			}
		}
	ret = ice_redis_pipe(r, 3 * HOSTS, rep, NULL);
	for (int i = 0; ret == 0 && i < 3 * HOSTS; i++) {
		if (rep[i]->type != REDIS_REPLY_STRING)
			printf("ice:t:{h%d}:k%d: reply type %d %s\n", i / 3, i % 3, rep[i]->type,
			       rep[i]->type == REDIS_REPLY_ERROR ? rep[i]->str : "");
		assert_int_equal(rep[i]->type, REDIS_REPLY_STRING);
		assert_int_equal(atoi(rep[i]->str), i);
	}
	ice_redis_free_replies(rep, 3 * HOSTS);
	free(rep);
	return ret;
}

static void pipeline_spreads(void **state)
{
	struct ice_redis r;
	int primaries = 0;

	(void)state;
	ice_redis_init(&r, seeds, ICE_NSEC_PER_SEC);
	assert_true(r.cluster);
	assert_int_equal(ice_redis_up(&r, ice_now_ns()), 1);
	put_all(&r);
	assert_int_equal(check_all(&r), 0);
	for (int i = 0; i < NODES; i++) {
		redisReply *role = node_cmd(base_port + i, "ROLE"), *n;

		assert_non_null(role);
		if (strcmp(role->element[0]->str, "master") == 0) {
			n = node_cmd(base_port + i, "DBSIZE");
			printf("primary :%d holds %lld keys\n", base_port + i, n->integer);
			assert_true(n->integer > 3 * HOSTS / 6);
			freeReplyObject(n);
			primaries++;
		}
		freeReplyObject(role);
	}
	assert_int_equal(primaries, 3);
	ice_redis_fini(&r);
}

static void redirections(void **state)
{
	const char *key = "ice:t:{h7}:k1";
	struct ice_redis r;
	redisReply *rep;
	char a_addr[64], b_addr[64], ida[64], idb[64];
	uint16_t slot = ice_redis_slot(key, strlen(key));
	int a, b = 0;

	(void)state;
	ice_redis_init(&r, seeds, ICE_NSEC_PER_SEC);
	assert_int_equal(ice_redis_up(&r, ice_now_ns()), 1);
	put_all(&r);
	assert_non_null(ice_redis_node_of(&r, key, a_addr, sizeof(a_addr)));
	a = port_of(a_addr);
	for (int i = 0; i < NODES && b == 0; i++) { /* another primary */
		rep = node_cmd(base_port + i, "ROLE");
		if (strcmp(rep->element[0]->str, "master") == 0 && base_port + i != a)
			b = base_port + i;
		freeReplyObject(rep);
	}
	snprintf(b_addr, sizeof(b_addr), "127.0.0.1:%d", b);
	node_id(a, ida, sizeof(ida));
	node_id(b, idb, sizeof(idb));
	/* ASK: the slot migrating, the key already moved */
	freeReplyObject(node_cmd(b, "CLUSTER SETSLOT %u IMPORTING %s", slot, ida));
	freeReplyObject(node_cmd(a, "CLUSTER SETSLOT %u MIGRATING %s", slot, idb));
	rep = node_cmd(a, "MIGRATE 127.0.0.1 %d %s 0 5000", b, key);
	assert_string_equal(rep->str, "OK");
	freeReplyObject(rep);
	rep = ice_redis_cmdf(&r, "GET %s", key);
	assert_non_null(rep);
	assert_int_equal(rep->type, REDIS_REPLY_STRING);
	assert_string_equal(rep->str, "22");
	freeReplyObject(rep);
	rep = node_cmd(a, "CLUSTER GETKEYSINSLOT %u 100", slot); /* the slot's other keys */
	for (size_t i = 0; i < rep->elements; i++) {
		redisReply *m =
			node_cmd(a, "MIGRATE 127.0.0.1 %d %s 0 5000", b, rep->element[i]->str);

		assert_string_equal(m->str, "OK");
		freeReplyObject(m);
	}
	freeReplyObject(rep);
	/* MOVED: the slot is b's now; the client's map still says a */
	for (int i = 0; i < NODES; i++)
		freeReplyObject(node_cmd(base_port + i, "CLUSTER SETSLOT %u NODE %s", slot, idb));
	rep = node_cmd(a, "GET %s", key);
	printf("a says: %s\n", rep->str);
	assert_int_equal(strncmp(rep->str, "MOVED", 5), 0);
	freeReplyObject(rep);
	rep = ice_redis_cmdf(&r, "GET %s", key);
	assert_non_null(rep);
	assert_string_equal(rep->str, "22");
	freeReplyObject(rep);
	assert_non_null(ice_redis_node_of(&r, key, a_addr, sizeof(a_addr)));
	assert_string_equal(a_addr, b_addr);
	assert_int_equal(check_all(&r), 0);
	ice_redis_fini(&r);
}

/* The primary's replica has everything it wrote (INFO replication offsets) */
static bool replicated(int port)
{
	for (int i = 0; i < 100; i++) {
		redisReply *r = node_cmd(port, "INFO replication");
		const char *m = r ? strstr(r->str, "master_repl_offset:") : NULL;
		const char *s = r ? strstr(r->str, "slave0:") : NULL;
		bool ok = false;

		if (m != NULL && s != NULL && strstr(s, "offset=") != NULL)
			ok = strtoll(m + 19, NULL, 10) ==
			     strtoll(strstr(s, "offset=") + 7, NULL, 10);
		if (r != NULL)
			freeReplyObject(r);
		if (ok)
			return true;
		ice_sleep_ns(50 * ICE_NSEC_PER_MSEC);
	}
	return false;
}

static void failover(void **state)
{
	const char *key = "ice:t:{h1}:k0";
	struct ice_redis r;
	char addr[64], cmd[700], missing[128];
	uint64_t t0, t1 = 0;
	FILE *f;
	int pid = 0, port, ret;

	(void)state;
	ice_redis_init(&r, seeds, 500 * ICE_NSEC_PER_MSEC);
	r.backoff_max_ns = 500 * ICE_NSEC_PER_MSEC;
	assert_int_equal(ice_redis_up(&r, ice_now_ns()), 1);
	put_all(&r);
	assert_non_null(ice_redis_node_of(&r, key, addr, sizeof(addr)));
	port = port_of(addr);
	assert_true(replicated(port));
	snprintf(cmd, sizeof(cmd), "%s pid %s %d", tool, dir, port);
	f = popen(cmd, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &pid), 1);
	pclose(f);
	assert_true(pid > 1);
	assert_int_equal(kill(pid, SIGKILL), 0);
	t0 = ice_now_ns();
	assert_int_equal(check_all(&r), -EIO);
	ice_redis_missing_slots(&r, missing, sizeof(missing));
	printf("primary %s (pid %d) killed: %s; missing slots %s\n", addr, pid, r.why, missing);
	assert_non_null(strstr(r.why, addr));
	assert_non_null(strstr(r.why, "slots"));
	assert_true(missing[0] != '\0');
	ice_redis_down(&r, ice_now_ns(), NULL);
	while (ice_now_ns() - t0 < 20 * ICE_NSEC_PER_SEC) {
		ice_sleep_ns(100 * ICE_NSEC_PER_MSEC);
		if (ice_redis_up(&r, ice_now_ns()) < 0)
			continue;
		ret = check_all(&r);
		if (ret == 0) {
			t1 = ice_now_ns();
			break;
		}
		ice_redis_down(&r, ice_now_ns(), NULL);
	}
	assert_true(t1 != 0);
	assert_non_null(ice_redis_node_of(&r, key, addr, sizeof(addr)));
	printf("after fail-over (%.2f s): %s serves %s, every value read back\n",
	       (double)(t1 - t0) / 1e9, addr, key);
	assert_int_not_equal(port_of(addr), port);
	ice_redis_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pipeline_spreads),
		cmocka_unit_test(redirections),
		cmocka_unit_test(failover),
	};
	const char *src = getenv("ICE_SOURCE_ROOT");
	char cmd[1024];
	FILE *f;
	int ret;

	if (system("command -v redis-server >/dev/null && command -v redis-cli >/dev/null") != 0) {
		printf("skipped: redis-server / redis-cli not installed\n");
		return 77;
	}
	snprintf(tool, sizeof(tool), "%s/tools/ice-redis-cluster", src ? src : ".");
	snprintf(dir, sizeof(dir), "/tmp/ice-rcl-%d", (int)getpid());
	base_port = 23000 + (int)(getpid() % 300) * 10;
	snprintf(cmd, sizeof(cmd), "%s start %s 127.0.0.1 %d 3 1 1000", tool, dir, base_port);
	f = popen(cmd, "r");
	if (f == NULL || fgets(seeds, sizeof(seeds), f) == NULL) {
		fprintf(stderr, "cannot start a cluster: %s\n", cmd);
		if (f != NULL)
			pclose(f);
		snprintf(cmd, sizeof(cmd), "%s stop %s", tool, dir);
		ret = system(cmd);
		return 1;
	}
	pclose(f);
	seeds[strcspn(seeds, "\n")] = '\0';
	printf("cluster %s\n", seeds);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "%s stop %s", tool, dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not stop the cluster in %s\n", dir);
	return ret;
}
