/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_http: the tiny HTTP/1.0 server the daemons' /metrics and icectl's
 * dashboard run on, inside their own loops: non-blocking, GET only, up to
 * ICE_HTTP_CLIENTS clients at once (more wait in the listen backlog; a
 * browser's idle pre-opened connection so holds no one up), each closed
 * after its response and dropped when it stalls (2 s). The body comes
 * from the caller's handler, per request.
 */
#ifndef ICE_HTTP_H
#define ICE_HTTP_H

#include <poll.h>
#include <stdint.h>

#define ICE_HTTP_CLIENTS 8

/* The body for GET path (the query string cut off), malloc'd (the server
 * frees it), with *ctype set (default text/plain); NULL: 404. */
typedef char *(*ice_http_fn)(void *ctx, const char *path, const char **ctype);

struct ice_http;

/* Listen on addr: "ADDR:PORT", ":PORT" or "PORT" (IPv4; ADDR may be a
 * name; PORT 0 picks a free one). NULL + errno (EINVAL: not an address). */
struct ice_http *ice_http_new(const char *addr);
void ice_http_free(struct ice_http *h);		  /* NULL-safe */
uint16_t ice_http_port(const struct ice_http *h); /* the port bound */

/* The fds to poll, at most max: the listener (while a client slot is
 * free), then the clients. ice_http_io serves every client that is ready,
 * polled or not, so a caller with room for one fd still serves all. */
int ice_http_fds(struct ice_http *h, struct pollfd *pfd, int max);
/* Make progress after poll() (accept, read requests, write answers). */
void ice_http_io(struct ice_http *h, ice_http_fn fn, void *ctx);
/* Serve requests for ns nanoseconds (a daemon's sleep between ticks). */
void ice_http_wait(struct ice_http *h, uint64_t ns, ice_http_fn fn, void *ctx);

#endif /* ICE_HTTP_H */
