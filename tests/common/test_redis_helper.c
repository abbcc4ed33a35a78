// SPDX-License-Identifier: Apache-2.0
/* Unit tests for common/ice_redis: the key table, addresses, the
 * reconnecting connection's back-off against a port nobody listens on, the
 * ICE_REDIS_AUTH file and the ACL file rendered from the roles. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

/* a file under /tmp with this text and mode; its path (static) */
static const char *auth_file(const char *text, mode_t mode)
{
	static char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/ice-test-auth.%d", (int)getpid());
	unlink(path);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static void auth_files(void **state)
{
	struct ice_redis_auth a;
	char why[512];
	const char *p;

	(void)state;
	p = auth_file("# Redis user of h1\n\n  ice-host-h1 s3cret-s3cret\n# end\n", 0600);
	assert_int_equal(ice_redis_auth_load(p, &a, why, sizeof(why)), 0);
	assert_string_equal(a.user, "ice-host-h1");
	assert_string_equal(a.pass, "s3cret-s3cret");
	p = auth_file("only-a-password\r\n", 0400);
	assert_int_equal(ice_redis_auth_load(p, &a, why, sizeof(why)), 0);
	assert_string_equal(a.user, "");
	assert_string_equal(a.pass, "only-a-password");
	/* mode: group or other bits refused, the password never in why */
	p = auth_file("u pw-not-shown\n", 0644);
	assert_int_equal(ice_redis_auth_load(p, &a, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "ICE_REDIS_AUTH /tmp/ice-test-auth"));
	assert_non_null(strstr(why, "(mode 0644); expected mode 0600 or 0400"));
	assert_null(strstr(why, "pw-not-shown"));
	assert_string_equal(a.pass, "");
	p = auth_file("u pw\n", 0640);
	assert_int_equal(ice_redis_auth_load(p, &a, why, sizeof(why)), -EPERM);
	/* words and lines */
	p = auth_file("u pw extra-secret\n", 0600);
	assert_int_equal(ice_redis_auth_load(p, &a, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, ":1: expected USER PASSWORD or PASSWORD, got 3 words"));
	assert_null(strstr(why, "extra-secret"));
	p = auth_file("# c\nu pw\nv pw2\n", 0600);
	assert_int_equal(ice_redis_auth_load(p, &a, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, ":3: a second credentials line"));
	p = auth_file("# nothing\n\n", 0600);
	assert_int_equal(ice_redis_auth_load(p, &a, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "no credentials"));
	unlink(p);
	assert_int_equal(ice_redis_auth_load(p, &a, why, sizeof(why)), -ENOENT);
	assert_int_equal(ice_redis_auth_load("/tmp", &a, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "is a directory; expected a regular file"));
	/* owned by another user (not root): needs root to chown */
	if (geteuid() == 0) {
		p = auth_file("u pw\n", 0600);
		assert_int_equal(chown(p, 4242, 4242), 0);
		assert_int_equal(ice_redis_auth_load(p, &a, why, sizeof(why)), -EPERM);
		assert_non_null(strstr(why, "is owned by uid 4242"));
		unlink(p);
	}
}

/* a refused AUTH fails the connect before any command: a bad file here */
static void auth_connect_refused(void **state)
{
	const char *p = auth_file("u pw\n", 0666);
	char why[256];

	(void)state;
	setenv(ICE_REDIS_AUTH_ENV, p, 1);
	/* no server needed: the file is read after the connection is made, so
	 * use a listening socket of our own */
	{
		int s = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = {.sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t sl = sizeof(sa);
		char addr[64];

		assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(listen(s, 1), 0);
		assert_int_equal(getsockname(s, (struct sockaddr *)&sa, &sl), 0);
		snprintf(addr, sizeof(addr), "127.0.0.1:%u", ntohs(sa.sin_port));
		assert_null(ice_redis_connect(addr, ICE_NSEC_PER_SEC, why, sizeof(why)));
		assert_non_null(strstr(why, "mode 0666"));
		close(s);
	}
	unsetenv(ICE_REDIS_AUTH_ENV);
	unlink(p);
}

/* the roles table: every key has a writer, the controller writes all, and
 * the rendered file gives a host its own keys only */
static void acl_render(void **state)
{
	const char *addrs[] = {"10.1.0.1", "h1"};
	struct ice_redis_acl_user u[] = {
		{.role = ICE_ROLE_HOST,
		 .host = "h1",
		 .addrs = addrs,
		 .naddrs = 2,
		 .password = "0123456789abcdef"},
		{.role = ICE_ROLE_READER, .password = "0123456789abcdef"},
	};
	char *text = NULL, why[256];
	size_t len = 0;
	FILE *f;

	(void)state;
	for (int k = 0; k < ICE_RK_MAX; k++)
		assert_true(ice_rkey_writers((enum ice_rkey)k) & (1u << ICE_ROLE_CONTROLLER));
	assert_false(ice_rkey_writers(ICE_RK_PLAN) & (1u << ICE_ROLE_HOST));
	assert_true(ice_rkey_readers(ICE_RK_PLAN) & (1u << ICE_ROLE_HOST));
	assert_true(ice_rkey_writers(ICE_RK_POLICY) & (1u << ICE_ROLE_OPERATOR));
	f = open_memstream(&text, &len);
	assert_int_equal(ice_redis_acl_write(f, "lab", u, 2, why, sizeof(why)), 0);
	fclose(f);
	assert_non_null(strstr(text, "user default reset off\n"));
	/* sha256("0123456789abcdef") */
	assert_non_null(
		strstr(text, "user ice-host-h1 reset on "
			     "#9f9f5111f7b27a781f1f1ddde5ebc2dd2b796bfc7365c9c28b548e564176929f"));
	assert_non_null(strstr(text, " ~ice:lab:{h1}:qp:* ~ice:lab:{10.1.0.1}:qp:* "));
	assert_non_null(strstr(text, " %R~ice:lab:{h1}:plan "));
	assert_non_null(strstr(text, " ~ice:lab:{h1}:plan:applied "));
	assert_null(strstr(text, "~ice:lab:{h1}:plan:fence"));
	assert_null(strstr(text, "~ice:lab:{h1}:* "));
	assert_non_null(strstr(text, " resetchannels &ice:lab:{h1}:plan -@all"));
	assert_non_null(strstr(text,
			       "user ice-reader reset on "
			       "#9f9f5111f7b27a781f1f1ddde5ebc2dd2b796bfc7365c9c28b548e564176929f "
			       "%R~ice:lab:* resetchannels -@all +@read +@connection -@admin"));
	assert_null(strstr(text, "0123456789abcdef ")); /* no clear password */
	free(text);
	/* names Redis would read as globs or hash tags: refused */
	u[0].host = "h*";
	f = open_memstream(&text, &len);
	assert_int_equal(ice_redis_acl_write(f, "lab", u, 2, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "host name 'h*'"));
	fclose(f);
	free(text);
	u[0].host = "h1";
	u[1].password = "short";
	f = open_memstream(&text, &len);
	assert_int_equal(ice_redis_acl_write(f, "l{b}", u, 2, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "fabric name 'l{b}'"));
	assert_int_equal(ice_redis_acl_write(f, "lab", u, 2, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "password of at least 16"));
	fclose(f);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(keys_render),	 cmocka_unit_test(keys_refuse),
		cmocka_unit_test(addresses),	 cmocka_unit_test(backoff),
		cmocka_unit_test(cluster_slots), cmocka_unit_test(cluster_redirects),
		cmocka_unit_test(auth_files),	 cmocka_unit_test(auth_connect_refused),
		cmocka_unit_test(acl_render),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
