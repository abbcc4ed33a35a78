// SPDX-License-Identifier: Apache-2.0
/* Unit tests for common/ice_redis: the key table, addresses, and the
 * reconnecting connection's back-off against a port nobody listens on. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "ice_redis.h"
#include "ice_time.h"

static void keys_render(void **state)
{
	char k[ICE_RKEY_MAX];

	assert_int_equal(ice_rkey(k, sizeof(k), ICE_RK_QP_TS, "lab", "node1", "10.0.0.1:17"), 0);
	assert_string_equal(k, "ice:lab:{node1}:qp:10.0.0.1:17:ts");
	assert_int_equal(ice_rkey(k, sizeof(k), ICE_RK_CTL_LEADER, "lab", NULL, NULL), 0);
	assert_string_equal(k, "ice:lab:{ctl}:leader");
	assert_int_equal(ice_rkey(k, sizeof(k), ICE_RK_PROBE_MAP, "f", "10.1.0.1", "a>b"), 0);
	assert_string_equal(k, "ice:f:{10.1.0.1}:probe:map:a>b");
	/* <S>, a switch, is given in the host's place */
	assert_int_equal(ice_rkey(k, sizeof(k), ICE_RK_SW_PORT_TS, "lab", "leaf1", "spine2"), 0);
	assert_string_equal(k, "ice:lab:sw:{leaf1}:port:spine2:ts");
	/* every pattern renders, and starts with the fabric's namespace */
	for (int i = 0; i < ICE_RK_MAX; i++) {
		assert_non_null(ice_rkey_pattern(i));
		assert_int_equal(ice_rkey(k, sizeof(k), i, "F", "H", "X"), 0);
		assert_memory_equal(k, "ice:F:", 6);
	}
	assert_null(ice_rkey_pattern(ICE_RK_MAX));
}

static void keys_refuse(void **state)
{
	char k[ICE_RKEY_MAX], tiny[13]; /* "ice:l:schema" and its NUL */

	assert_int_equal(ice_rkey(k, sizeof(k), ICE_RK_QP, "lab", "h", NULL), -EINVAL);
	assert_int_equal(ice_rkey(k, sizeof(k), ICE_RK_QP, "lab", "", "1"), -EINVAL);
	assert_int_equal(ice_rkey(k, sizeof(k), ICE_RK_HOSTS, NULL, NULL, NULL), -EINVAL);
	assert_int_equal(ice_rkey(k, sizeof(k), ICE_RK_MAX, "lab", "h", "x"), -EINVAL);
	assert_int_equal(ice_rkey(tiny, sizeof(tiny), ICE_RK_SCHEMA, "lab", NULL, NULL), -ENOSPC);
	assert_int_equal(ice_rkey(tiny, sizeof(tiny), ICE_RK_SCHEMA, "l", NULL, NULL), 0);
	assert_string_equal(tiny, "ice:l:schema");
}

static void addresses(void **state)
{
	char h[64];
	bool u;
	int port;

	assert_int_equal(ice_redis_addr_parse("10.0.0.1:6379", h, sizeof(h), &port, &u), 0);
	assert_string_equal(h, "10.0.0.1");
	assert_int_equal(port, 6379);
	assert_false(u);
	assert_int_equal(ice_redis_addr_parse("unix:/run/r.sock", h, sizeof(h), &port, &u), 0);
	assert_string_equal(h, "/run/r.sock");
	assert_true(u);
	assert_int_equal(ice_redis_addr_parse("/run/r.sock", h, sizeof(h), &port, &u), 0);
	assert_true(u);
	const char *bad[] = {"", "host", ":6379", "h:", "h:0", "h:65536", "h:6x", "unix:rel"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (ice_redis_addr_parse(bad[i], h, sizeof(h), &port, &u) != -EINVAL)
			fail_msg("'%s' accepted", bad[i]);
}

/* A TCP port on loopback that refuses connections (bound, not listening). */
static int refusing_port(int *fd)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);

	*fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(*fd >= 0);
	assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
	return ntohs(a.sin_port);
}

static void backoff(void **state)
{
	struct ice_redis r;
	char addr[32];
	uint64_t t = 1000 * ICE_NSEC_PER_SEC, start;
	int fd, port = refusing_port(&fd);

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	ice_redis_init(&r, addr, 200 * ICE_NSEC_PER_MSEC);
	start = ice_now_ns();
	assert_int_equal(ice_redis_up(&r, t), -ECONNREFUSED);
	assert_true(ice_now_ns() - start < ICE_NSEC_PER_SEC); /* bounded by the timeout */
	assert_non_null(strstr(r.why, "refused"));
	assert_int_equal(r.next_try_ns, t + 500 * ICE_NSEC_PER_MSEC);
	assert_int_equal(ice_redis_up(&r, t + 100), -EAGAIN); /* backing off */
	/* the waits double to 8 s and stay there */
	uint64_t want[] = {1000, 2000, 4000, 8000, 8000};
	for (size_t i = 0; i < 5; i++) {
		t = r.next_try_ns;
		assert_int_equal(ice_redis_up(&r, t), -ECONNREFUSED);
		assert_int_equal(r.next_try_ns - t, want[i] * ICE_NSEC_PER_MSEC);
	}
	assert_int_equal(r.failures, 6);
	assert_int_equal(r.connects, 0);
	assert_null(r.c);
	ice_redis_fini(&r);
	close(fd);
	/* a bad address fails with the reason, never crashes */
	ice_redis_init(&r, "nowhere", ICE_NSEC_PER_SEC);
	assert_int_equal(ice_redis_up(&r, t), -ECONNREFUSED);
	assert_non_null(strstr(r.why, "expected HOST:PORT"));
	ice_redis_fini(&r);
}

/* Redis Cluster's key hash and slots (the vectors of the cluster spec) */
static void cluster_slots(void **state)
{
	(void)state;
	assert_int_equal(ice_redis_crc16("123456789", 9), 0x31C3);
	assert_int_equal(ice_redis_crc16("", 0), 0);
	assert_int_equal(ice_redis_slot("foo", 3), 12182);
	assert_int_equal(ice_redis_slot("somekey", 7), 11058);
	assert_int_equal(ice_redis_slot("{user1000}.following", 20), ice_redis_slot("user1000", 8));
	assert_int_equal(ice_redis_slot("{user1000}.followers", 20), ice_redis_slot("user1000", 8));
	/* an empty tag hashes the whole key; only the first tag counts */
	assert_int_equal(ice_redis_slot("foo{}{bar}", 10),
			 ice_redis_crc16("foo{}{bar}", 10) & 16383);
	assert_int_equal(ice_redis_slot("foo{{bar}}zap", 13), ice_redis_crc16("{bar", 4) & 16383);
	assert_int_equal(ice_redis_slot("foo{bar}{zap}", 13), ice_redis_slot("bar", 3));
	assert_int_equal(ice_redis_slot("no{close", 8), ice_redis_crc16("no{close", 8) & 16383);
	/* the project's keys: a host's keys share its slot */
	assert_int_equal(ice_redis_slot("ice:lab:{h1}:qp:10.0.0.1:17", 27),
			 ice_redis_slot("h1", 2));
	assert_true(ice_redis_is_cluster("cluster:10.0.0.1:7000"));
	assert_true(ice_redis_is_cluster("10.0.0.1:7000,10.0.0.1:7001"));
	assert_false(ice_redis_is_cluster("10.0.0.1:7000"));
	assert_false(ice_redis_is_cluster("unix:/run/redis.sock"));
}

static void cluster_redirects(void **state)
{
	char addr[64];
	uint16_t slot = 0;

	(void)state;
	assert_int_equal(ice_redis_redirect("MOVED 3999 127.0.0.1:6381", &slot, addr, sizeof(addr)),
			 1);
	assert_int_equal(slot, 3999);
	assert_string_equal(addr, "127.0.0.1:6381");
	assert_int_equal(
		ice_redis_redirect("ASK 16383 10.255.1.1:21003", &slot, addr, sizeof(addr)), 2);
	assert_int_equal(slot, 16383);
	assert_string_equal(addr, "10.255.1.1:21003");
	assert_int_equal(ice_redis_redirect("MOVED 0 [::1]:7000", &slot, addr, sizeof(addr)), 1);
	assert_string_equal(addr, "[::1]:7000");
	/* other errors, and redirections that do not parse */
	assert_int_equal(ice_redis_redirect("ERR unknown command", &slot, addr, sizeof(addr)), 0);
	assert_int_equal(
		ice_redis_redirect("CLUSTERDOWN The cluster is down", &slot, addr, sizeof(addr)),
		0);
	assert_int_equal(
		ice_redis_redirect("MOVED 16384 127.0.0.1:6381", &slot, addr, sizeof(addr)),
		-EINVAL);
	assert_int_equal(ice_redis_redirect("MOVED x 127.0.0.1:6381", &slot, addr, sizeof(addr)),
			 -EINVAL);
	assert_int_equal(ice_redis_redirect("MOVED 12 127.0.0.1", &slot, addr, sizeof(addr)),
			 -EINVAL);
	assert_int_equal(ice_redis_redirect("ASK 12 127.0.0.1:", &slot, addr, sizeof(addr)),
			 -EINVAL);
	assert_int_equal(ice_redis_redirect("ASK 12 h:1x", &slot, addr, sizeof(addr)), -EINVAL);
	assert_int_equal(ice_redis_redirect("MOVED 12 h:1", &slot, addr, 3), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(keys_render),	 cmocka_unit_test(keys_refuse),
		cmocka_unit_test(addresses),	 cmocka_unit_test(backoff),
		cmocka_unit_test(cluster_slots), cmocka_unit_test(cluster_redirects),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
