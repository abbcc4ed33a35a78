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

struct ice_http_client {
	int fd; /* -1: a free slot */
	char req[REQ_MAX];
	size_t req_len;
	char *resp;
	size_t resp_len, resp_off;
	uint64_t since_ns;
};

struct ice_http {
	int lfd;
	uint16_t port;
	struct ice_http_client cl[ICE_HTTP_CLIENTS];
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
	for (int i = 0; i < ICE_HTTP_CLIENTS; i++)
		h->cl[i].fd = -1;
	h->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (h->lfd < 0)
		goto err_free;
	setsockopt(h->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(h->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(h->lfd, 64) < 0 ||
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

static void client_close(struct ice_http_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->resp);
	c->resp = NULL;
	c->req_len = c->resp_len = c->resp_off = 0;
}

void ice_http_free(struct ice_http *h)
{
	if (h == NULL)
		return;
	for (int i = 0; i < ICE_HTTP_CLIENTS; i++)
		client_close(&h->cl[i]);
	close(h->lfd);
	free(h);
}

static struct ice_http_client *free_slot(struct ice_http *h)
{
	for (int i = 0; i < ICE_HTTP_CLIENTS; i++)
		if (h->cl[i].fd < 0)
			return &h->cl[i];
	return NULL;
}

int ice_http_fds(struct ice_http *h, struct pollfd *pfd, int max)
{
	int n = 0;

	if (h == NULL)
		return 0;
	if (n < max && free_slot(h) != NULL)
		pfd[n++] = (struct pollfd){.fd = h->lfd, .events = POLLIN};
	for (int i = 0; i < ICE_HTTP_CLIENTS && n < max; i++)
		if (h->cl[i].fd >= 0)
			pfd[n++] =
				(struct pollfd){.fd = h->cl[i].fd,
						.events = h->cl[i].resp != NULL ? POLLOUT : POLLIN};
	return n;
}

static void respond(struct ice_http_client *c, ice_http_fn fn, void *ctx)
{
	const char *status = "404 Not Found", *ctype = "text/plain";
	char path[256], *body = NULL, *out = NULL;
	size_t olen = 0, plen;
	FILE *f;

	if (strncmp(c->req, "GET ", 4) != 0) {
		status = "405 Method Not Allowed";
	} else {
		plen = strcspn(c->req + 4, " ?#\r\n");
		if (plen < sizeof(path)) {
			snprintf(path, sizeof(path), "%.*s", (int)plen, c->req + 4);
			body = fn(ctx, path, &ctype);
			if (body != NULL)
				status = "200 OK";
		}
	}
	if (body == NULL) {
		ctype = "text/plain";
		body = strdup(strncmp(status, "405", 3) == 0 ? "GET only\n" : "not found\n");
	}
	f = open_memstream(&out, &olen);
	if (f != NULL) {
		fprintf(f,
			"HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			"Cache-Control: no-store\r\nConnection: close\r\n\r\n%s",
			status, ctype, body != NULL ? strlen(body) : 0, body != NULL ? body : "");
		if (fclose(f) != 0) {
			free(out);
			out = NULL;
		}
	}
	free(body);
	if (out == NULL) {
		client_close(c);
		return;
	}
	c->resp = out;
	c->resp_len = olen;
	c->resp_off = 0;
}

/* One client's progress: read, answer, write; closed when done or stalled. */
static void client_io(struct ice_http_client *c, ice_http_fn fn, void *ctx, uint64_t now)
{
	ssize_t n;

	if (now - c->since_ns > CLIENT_MAX_NS) {
		client_close(c);
		return;
	}
	if (c->resp == NULL) {
		n = recv(c->fd, c->req + c->req_len, sizeof(c->req) - 1 - c->req_len, 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			client_close(c);
			return;
		}
		if (n > 0)
			c->req_len += (size_t)n;
		c->req[c->req_len] = '\0';
		if (strstr(c->req, "\r\n\r\n") == NULL && strstr(c->req, "\n\n") == NULL) {
			if (c->req_len == sizeof(c->req) - 1)
				client_close(c);
			return;
		}
		respond(c, fn, ctx);
		if (c->resp == NULL)
			return;
	}
	n = send(c->fd, c->resp + c->resp_off, c->resp_len - c->resp_off, MSG_NOSIGNAL);
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		client_close(c);
		return;
	}
	if (n > 0)
		c->resp_off += (size_t)n;
	if (c->resp_off == c->resp_len)
		client_close(c);
}

void ice_http_io(struct ice_http *h, ice_http_fn fn, void *ctx)
{
	struct ice_http_client *c;

	if (h == NULL)
		return;
	while ((c = free_slot(h)) != NULL) {
		c->fd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c->fd < 0)
			break;
		c->since_ns = ice_now_ns();
	}
	for (int i = 0; i < ICE_HTTP_CLIENTS; i++)
		if (h->cl[i].fd >= 0)
			client_io(&h->cl[i], fn, ctx, ice_now_ns());
}

void ice_http_wait(struct ice_http *h, uint64_t ns, ice_http_fn fn, void *ctx)
{
	uint64_t end = ice_now_ns() + ns, now;

	while ((now = ice_now_ns()) < end) {
		struct pollfd pfd[1 + ICE_HTTP_CLIENTS];
		int ms = (int)((end - now + ICE_NSEC_PER_MSEC - 1) / ICE_NSEC_PER_MSEC);
		int n = ice_http_fds(h, pfd, 1 + ICE_HTTP_CLIENTS);

		if (n == 0) {
			ice_sleep_ns(end - now);
			return;
		}
		/* wake at least every 0.5 s to drop stalled clients */
		if (poll(pfd, (nfds_t)n, ms < 500 ? ms : 500) >= 0)
			ice_http_io(h, fn, ctx);
	}
}
