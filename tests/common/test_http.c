// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for common/ice_http: answers to GET (path without the query),
 * 404 and 405, several clients at once, an idle connection that holds no
 * one up, and idle connections beyond the slots dropped when they stall.
 * Real sockets on 127.0.0.1; the server is driven from the test's thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "ice_http.h"
#include "ice_time.h"

static char last_path[256];
static int calls;

static char *handler(void *ctx, const char *path, const char **ctype)
{
	char *body;

	(void)ctx;
	calls++;
	snprintf(last_path, sizeof(last_path), "%s", path);
	if (strncmp(path, "/hello", 6) != 0)
		return NULL;
	*ctype = "application/json";
	if (asprintf(&body, "{\"path\":\"%s\"}", path) < 0)
		return NULL;
	return body;
}

static int client(uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

/* Serve until fd has the whole answer (the server closes it) or ms pass. */
static char *answer(struct ice_http *h, int fd, int ms)
{
	static char buf[4096];
	size_t len = 0;
	uint64_t end = ice_now_ns() + (uint64_t)ms * ICE_NSEC_PER_MSEC;

	while (ice_now_ns() < end) {
		ssize_t n;

		ice_http_wait(h, 5 * ICE_NSEC_PER_MSEC, handler, NULL);
		n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
		if (n == 0)
			break;
		if (n > 0)
			len += (size_t)n;
	}
	buf[len] = '\0';
	return buf;
}

static void send_str(int fd, const char *s)
{
	assert_int_equal(send(fd, s, strlen(s), 0), (ssize_t)strlen(s));
}

static void test_get(void **state)
{
	struct ice_http *h = ice_http_new("127.0.0.1:0");
	int fd;
	char *a;

	assert_non_null(h);
	fd = client(ice_http_port(h));
	send_str(fd, "GET /hello/x?refresh=1 HTTP/1.1\r\nHost: a\r\n\r\n");
	a = answer(h, fd, 1000);
	assert_non_null(strstr(a, "HTTP/1.0 200 OK\r\n"));
	assert_non_null(strstr(a, "Content-Type: application/json\r\n"));
	assert_non_null(strstr(a, "Content-Length: 19\r\n"));
	assert_non_null(strstr(a, "\r\n\r\n{\"path\":\"/hello/x\"}"));
	assert_string_equal(last_path, "/hello/x");
	close(fd);

	fd = client(ice_http_port(h));
	send_str(fd, "GET /nothing HTTP/1.0\r\n\r\n");
	assert_non_null(strstr(answer(h, fd, 1000), "HTTP/1.0 404 Not Found\r\n"));
	close(fd);

	calls = 0;
	fd = client(ice_http_port(h));
	send_str(fd, "POST /hello HTTP/1.0\r\nContent-Length: 0\r\n\r\n");
	assert_non_null(strstr(answer(h, fd, 1000), "HTTP/1.0 405 Method Not Allowed\r\n"));
	assert_int_equal(calls, 0);
	close(fd);
	ice_http_free(h);
}

/* An open connection that sends nothing (a browser's pre-opened one) and a
 * half-sent request do not hold up a third client. */
static void test_idle_does_not_block(void **state)
{
	struct ice_http *h = ice_http_new("127.0.0.1:0");
	int idle, half, fd;
	uint64_t t0;

	assert_non_null(h);
	idle = client(ice_http_port(h));
	half = client(ice_http_port(h));
	send_str(half, "GET /hel");
	ice_http_wait(h, 20 * ICE_NSEC_PER_MSEC, handler, NULL);
	fd = client(ice_http_port(h));
	send_str(fd, "GET /hello HTTP/1.0\r\n\r\n");
	t0 = ice_now_ns();
	assert_non_null(strstr(answer(h, fd, 1000), "200 OK"));
	assert_true(ice_now_ns() - t0 < 500 * ICE_NSEC_PER_MSEC);
	close(fd);
	/* the half request completes later */
	send_str(half, "lo HTTP/1.0\r\n\r\n");
	assert_non_null(strstr(answer(h, half, 1000), "{\"path\":\"/hello\"}"));
	close(half);
	close(idle);
	ice_http_free(h);
}

/* More idle connections than slots: the next client waits in the backlog
 * until the stalled ones are dropped (2 s), then it is served. */
static void test_stalled_dropped(void **state)
{
	struct ice_http *h = ice_http_new("127.0.0.1:0");
	int idle[ICE_HTTP_CLIENTS], fd;
	char *a;

	assert_non_null(h);
	for (int i = 0; i < ICE_HTTP_CLIENTS; i++)
		idle[i] = client(ice_http_port(h));
	ice_http_wait(h, 50 * ICE_NSEC_PER_MSEC, handler, NULL);
	fd = client(ice_http_port(h));
	send_str(fd, "GET /hello HTTP/1.0\r\n\r\n");
	a = answer(h, fd, 300);
	assert_int_equal(a[0], '\0'); /* every slot is held */
	a = answer(h, fd, 3000);
	assert_non_null(strstr(a, "200 OK"));
	for (int i = 0; i < ICE_HTTP_CLIENTS; i++) {
		char c;

		assert_int_equal(recv(idle[i], &c, 1, 0), 0); /* closed by the server */
		close(idle[i]);
	}
	close(fd);
	ice_http_free(h);
}

static void test_bad_addr(void **state)
{
	errno = 0;
	assert_null(ice_http_new("127.0.0.1:99999"));
	assert_int_equal(errno, EINVAL);
	assert_null(ice_http_new("127.0.0.1:x"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get),
		cmocka_unit_test(test_idle_does_not_block),
		cmocka_unit_test(test_stalled_dropped),
		cmocka_unit_test(test_bad_addr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
