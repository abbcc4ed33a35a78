/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_redis_internal.h: what ice_redis.c (one instance, the connection's
 * life) and ice_redis_cluster.c (slot routing) share. Not installed.
 */
#ifndef ICE_REDIS_INTERNAL_H
#define ICE_REDIS_INTERNAL_H

#include "ice_redis.h"

/* Connect to a seed (or a known node), read CLUSTER SLOTS, set r->c to
 * that node's context (owned by the node table). 0, or -errno with r->why. */
int ice_redis_cl_connect(struct ice_redis *r);
/* Close every node's connection and forget queued commands; r->c = NULL. */
void ice_redis_cl_close(struct ice_redis *r);
void ice_redis_cl_free(struct ice_redis *r);

int ice_redis_cl_append(struct ice_redis *r, const char *cmds, size_t len);
int ice_redis_cl_pipe(struct ice_redis *r, size_t n, redisReply **out, uint32_t *errors);

/* ice_redis_acl.c: AUTH on a new connection c when ICE_REDIS_AUTH is set.
 * 0, or -EACCES (the file or the AUTH refused) / -EIO, with why. */
int ice_redis_auth_send(redisContext *c, char *why, size_t whylen);

#endif /* ICE_REDIS_INTERNAL_H */
