// SPDX-License-Identifier: Apache-2.0
/*
 * ice_http.c: the daemons' tiny HTTP/1.0 server (ice_http.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ice_http.h"
#include "ice_time.h"

#define REQ_MAX	      4096
#define CLIENT_MAX_NS (2 * ICE_NSEC_PER_SEC)

struct ice_http {
	int lfd, cfd;
	uint16_t port;
	char req[REQ_MAX];
	size_t req_len;
	char *resp;
	size_t resp_len, resp_off;
	uint64_t since_ns;
};

static int parse_addr(const char *addr, struct sockaddr_in *sa)
{
	const char *colon = strrchr(addr, ':'), *ps = colon != NULL ? colon + 1 : addr;
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
	char host[256];
	char *end;
	long p;

	p = strtol(ps, &end, 10);
	if (ps[0] == '\0' || *end != '\0' || p < 0 || p > 65535)
		return -EINVAL;
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)p);
	sa->sin_addr.s_addr = htonl(INADDR_ANY);
	if (colon == NULL || colon == addr)
		return 0;
	if ((size_t)(colon - addr) >= sizeof(host))
		return -EINVAL;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - addr), addr);
	if (inet_pton(AF_INET, host, &sa->sin_addr) == 1)
		return 0;
	if (getaddrinfo(host, NULL, &hints, &ai) != 0 || ai == NULL)
		return -EINVAL;
	sa->sin_addr = ((struct sockaddr_in *)ai->ai_addr)->sin_addr;
	freeaddrinfo(ai);
	return 0;
}

struct ice_http *ice_http_new(const char *addr)
{
	struct sockaddr_in sa = {0};
	socklen_t slen = sizeof(sa);
	struct ice_http *h;
	int one = 1, err;

	if (parse_addr(addr, &sa) < 0) {
		errno = EINVAL;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return NULL;
	h->cfd = -1;
	h->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (h->lfd < 0)
		goto err_free;
	setsockopt(h->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(h->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(h->lfd, 8) < 0 ||
	    getsockname(h->lfd, (struct sockaddr *)&sa, &slen) < 0)
		goto err_close;
	h->port = ntohs(sa.sin_port);
	return h;
err_close:
	err = errno;
	close(h->lfd);
	errno = err;
err_free:
	err = errno;
	free(h);
	errno = err;
	return NULL;
}

uint16_t ice_http_port(const struct ice_http *h)
{
	return h->port;
}

static void client_close(struct ice_http *h)
{
	if (h->cfd >= 0)
		close(h->cfd);
	h->cfd = -1;
	free(h->resp);
	h->resp = NULL;
	h->req_len = h->resp_len = h->resp_off = 0;
}

void ice_http_free(struct ice_http *h)
{
	if (h == NULL)
		return;
	client_close(h);
	close(h->lfd);
	free(h);
}

int ice_http_fds(struct ice_http *h, struct pollfd *pfd, int max)
{
	if (h == NULL || max < 1)
		return 0;
	if (h->cfd < 0)
		pfd[0] = (struct pollfd){.fd = h->lfd, .events = POLLIN};
	else
		pfd[0] =
			(struct pollfd){.fd = h->cfd, .events = h->resp != NULL ? POLLOUT : POLLIN};
	return 1;
}

static void respond(struct ice_http *h, ice_http_fn fn, void *ctx)
{
	const char *status = "404 Not Found", *ctype = "text/plain";
	char path[256], *body = NULL, *out = NULL;
	size_t olen = 0, plen;
	FILE *f;

	if (strncmp(h->req, "GET ", 4) != 0) {
		status = "405 Method Not Allowed";
	} else {
		plen = strcspn(h->req + 4, " ?\r\n");
		if (plen < sizeof(path)) {
			snprintf(path, sizeof(path), "%.*s", (int)plen, h->req + 4);
			body = fn(ctx, path, &ctype);
			if (body != NULL)
				status = "200 OK";
		}
	}
	if (body == NULL) {
		ctype = "text/plain";
		body = strdup("try /metrics\n");
	}
	f = open_memstream(&out, &olen);
	if (f != NULL) {
		fprintf(f,
			"HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			"Connection: close\r\n\r\n%s",
			status, ctype, body != NULL ? strlen(body) : 0, body != NULL ? body : "");
		if (fclose(f) != 0) {
			free(out);
			out = NULL;
		}
	}
	free(body);
	if (out == NULL) {
		client_close(h);
		return;
	}
	h->resp = out;
	h->resp_len = olen;
	h->resp_off = 0;
}

void ice_http_io(struct ice_http *h, ice_http_fn fn, void *ctx)
{
	ssize_t n;

	if (h == NULL)
		return;
	if (h->cfd < 0) {
		h->cfd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (h->cfd < 0)
			return;
		h->since_ns = ice_now_ns();
	}
	if (ice_now_ns() - h->since_ns > CLIENT_MAX_NS) {
		client_close(h);
		return;
	}
	if (h->resp == NULL) {
		n = recv(h->cfd, h->req + h->req_len, sizeof(h->req) - 1 - h->req_len, 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			client_close(h);
			return;
		}
		if (n > 0)
			h->req_len += (size_t)n;
		h->req[h->req_len] = '\0';
		if (strstr(h->req, "\r\n\r\n") == NULL && strstr(h->req, "\n\n") == NULL) {
			if (h->req_len == sizeof(h->req) - 1)
				client_close(h);
			return;
		}
		respond(h, fn, ctx);
		if (h->resp == NULL)
			return;
	}
	n = send(h->cfd, h->resp + h->resp_off, h->resp_len - h->resp_off, MSG_NOSIGNAL);
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		client_close(h);
		return;
	}
	if (n > 0)
		h->resp_off += (size_t)n;
	if (h->resp_off == h->resp_len)
		client_close(h);
}

void ice_http_wait(struct ice_http *h, uint64_t ns, ice_http_fn fn, void *ctx)
{
	uint64_t end = ice_now_ns() + ns, now;

	while ((now = ice_now_ns()) < end) {
		struct pollfd pfd;
		int ms = (int)((end - now + ICE_NSEC_PER_MSEC - 1) / ICE_NSEC_PER_MSEC);

		if (ice_http_fds(h, &pfd, 1) == 0) {
			ice_sleep_ns(end - now);
			return;
		}
		if (poll(&pfd, 1, ms) > 0)
			ice_http_io(h, fn, ctx);
		else if (h->cfd >= 0 && ice_now_ns() - h->since_ns > CLIENT_MAX_NS)
			client_close(h);
	}
}
