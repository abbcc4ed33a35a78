/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ice_redis: what every ICE process needs to talk to Redis, over hiredis.
 *
 *   - The key schema (docs/redis-schema.md) as one table: ice_rkey() renders
 *     a key from its pattern, ice_rkey_pattern() gives the pattern, and
 *     tests/check_redis_schema.py checks the documentation against the
 *     table. Patterns name their parts <F> (fabric), <H> (host) or <S>
 *     (switch: a node name too, given in the host's place) and one more
 *     part, written <...>.
 *   - Addresses: "HOST:PORT", "unix:/PATH" or "/PATH".
 *   - A connection that comes back by itself: struct ice_redis connects
 *     with a timeout (also on every command), and after a failure waits
 *     0.5 s, doubling to 8 s, before it tries again. Nothing here blocks
 *     longer than the timeout, so a dead Redis never stops the caller.
 *   - Pipelines: ice_redis_replies() reads the replies of appended commands.
 *   - Redis Cluster (ice_redis_cluster.c): an address "cluster:SEED[,SEED]"
 *     or a list "HOST:PORT,HOST:PORT" makes struct ice_redis a cluster
 *     client: the slot map from CLUSTER SLOTS (at connect, after a MOVED),
 *     every command sent to the primary of its key's slot, pipelines
 *     grouped per shard (written to all shards, then read), MOVED and ASK
 *     followed. A shard that cannot be reached fails the pipeline as a
 *     broken connection does, and r->why names its slots. Daemons talk
 *     through ice_redis_append*() / ice_redis_pipe() / ice_redis_cmd*(),
 *     which are plain hiredis calls on one instance.
 */
#ifndef ICE_REDIS_H
#define ICE_REDIS_H

#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum ice_rkey {
	/* host agent (per NIC) */
	ICE_RK_SCHEMA,
	ICE_RK_HOSTS,
	ICE_RK_HOST,
	ICE_RK_ALIVE,
	ICE_RK_NICS,
	ICE_RK_NIC_AGENT,
	ICE_RK_NIC_ALIVE,
	ICE_RK_NIC,
	ICE_RK_NIC_TS,
	ICE_RK_NIC_DEV,
	ICE_RK_QPS,
	ICE_RK_QP,
	ICE_RK_QP_TS,
	ICE_RK_EVENTS,
	/* probe */
	ICE_RK_PROBE_PINGLIST,
	ICE_RK_PROBE_HOSTS,
	ICE_RK_PROBE_PAIRS,
	ICE_RK_PROBE_MAP,
	ICE_RK_PROBE_HEALTH,
	ICE_RK_PROBE_HEALTH_TS,
	ICE_RK_PROBE_VERSION,
	ICE_RK_PROBE_REHASH,
	/* controller, plans, fabric */
	ICE_RK_CTL_LEADER,
	ICE_RK_CTL_EPOCH,
	ICE_RK_CTL_PUBLISHED,
	ICE_RK_CTL_LOG,
	ICE_RK_CTL_STATUS,
	ICE_RK_PLAN,
	ICE_RK_PLAN_APPLIED,
	ICE_RK_PLAN_FENCE,
	ICE_RK_LINKS,
	/* switch telemetry (ice-fabric export) */
	ICE_RK_SW_PORTS,
	ICE_RK_SW_PORT,
	ICE_RK_SW_PORT_TS,
	ICE_RK_SW_EXPORTER,
	/* controller: what it knows (closed loop) */
	ICE_RK_CTL_LINK,
	ICE_RK_CTL_QP,
	/* the operator's surface (icectl) */
	ICE_RK_CTL_MEMBERS,
	ICE_RK_POLICY_SEQ,
	ICE_RK_POLICY_CURRENT,
	ICE_RK_POLICY,
	ICE_RK_POLICY_LOG,
	ICE_RK_MAX,
};

#define ICE_RKEY_MAX 384 /* a key buffer that holds every key of sane names */

/* The key's pattern, e.g. "ice:<F>:{<H>}:qp:<id>"; NULL for an unknown k. */
const char *ice_rkey_pattern(enum ice_rkey k);

/* Render key k into buf: fabric for <F>, host for <H> or <S>, arg for the third
 * part (NULL where the pattern has none). 0, or -EINVAL (a part the pattern
 * needs is NULL or empty, unknown k), -ENOSPC (does not fit). */
int ice_rkey(char *buf, size_t len, enum ice_rkey k, const char *fabric, const char *host,
	     const char *arg);

/* ice_rkey() for names read from Redis or checked before: returns buf; a
 * key that cannot be rendered comes out as ICE_RKEY_INVALID, which no
 * writer uses, so a read finds nothing and a pipeline keeps its count. */
#define ICE_RKEY_INVALID "ice:-invalid-"
const char *ice_rkey_str(char *buf, size_t len, enum ice_rkey k, const char *fabric,
			 const char *host, const char *arg);

/* ---- roles and ACLs (Redis 7 users, one per role; docs/security.md) */

enum ice_redis_role {
	ICE_ROLE_CONTROLLER, /* ice-controller: every key of the fabric */
	ICE_ROLE_HOST,	     /* ice-host-<H>: ice-agent and ice-probe of host H */
	ICE_ROLE_EXPORTER,   /* ice-exporter: ice-fabric's switch telemetry and links */
	ICE_ROLE_OPERATOR,   /* ice-operator: icectl, reads all, writes policies */
	ICE_ROLE_READER,     /* ice-reader: tools and dashboards, reads all */
	ICE_ROLE_MAX,
};

/* Which roles write key k and which, besides the roles that read every key
 * (controller, operator, reader), read it: masks of 1 << role. */
unsigned ice_rkey_writers(enum ice_rkey k);
unsigned ice_rkey_readers(enum ice_rkey k);

/* One ACL user: a role, for ICE_ROLE_HOST its host name and NIC addresses
 * (ice-probe names a host by its source address unless told otherwise),
 * and its password (only its SHA-256 reaches the file). */
struct ice_redis_acl_user {
	enum ice_redis_role role;
	const char *host;
	const char *const *addrs;
	size_t naddrs;
	const char *password;
};

/* "ice-controller", "ice-host-<H>", "ice-exporter", "ice-operator",
 * "ice-reader" into buf. 0, -EINVAL (no host for a host user), -ENOSPC. */
int ice_redis_acl_user_name(char *buf, size_t len, const struct ice_redis_acl_user *u);

/*
 * Write a Redis 7 ACL file (redis-server --aclfile, ACL LOAD) for fabric's
 * users to f: "user default reset off", then one "user NAME reset on
 * #SHA256 KEYS resetchannels CHANNELS COMMANDS" line per user. Key selectors come
 * from the key table: a role gets ~ (read and write) on each key it writes
 * and %R~ on each it only reads, <H> and <S> replaced by the host (and each
 * of its addresses) or * and every other part by *. Commands: -@all, then
 * the categories the role uses (@read, @write, @scripting, ...),
 * -@admin -@dangerous, and CLUSTER SLOTS, ASKING, READONLY for cluster
 * clients. 0, or -EINVAL with why filled: a name that is empty or holds
 * characters Redis would read as a glob, a space or a brace.
 */
int ice_redis_acl_write(FILE *f, const char *fabric, const struct ice_redis_acl_user *users,
			size_t n, char *why, size_t whylen);

/*
 * A fabric's users into dir (created 0700 if missing; must be a directory):
 * ice-controller, ice-exporter, ice-operator, ice-reader and one
 * ice-host-<H> per hosts[] entry (host and addrs read; role and password
 * ignored), each with a random password (32 bytes from getrandom, hex):
 * dir/users.acl (ice_redis_acl_write) and dir/redis-<user without "ice-">.auth
 * ("USER PASSWORD", for ICE_REDIS_AUTH), all 0600, each written to a new
 * file renamed over the old. Used by icectl acl and ice-fabric up
 * --redis-acl. The number of users, or -errno with why filled.
 */
int ice_redis_acl_render(const char *dir, const char *fabric,
			 const struct ice_redis_acl_user *hosts, size_t nhosts, char *why,
			 size_t whylen);

/* "redis-controller.auth", "redis-host-h1.auth", ...: user's auth file name
 * in a rendered directory. */
void ice_redis_acl_auth_name(char *buf, size_t len, const char *user);

/* "HOST:PORT" (port 1-65535), "unix:/PATH" or "/PATH" into host (or the path),
 * port (0 for unix) and is_unix. 0 or -EINVAL. */
int ice_redis_addr_parse(const char *addr, char *host, size_t hlen, int *port, bool *is_unix);

/* A --redis value: one address, or a cluster's seeds ("cluster:H:P[,H:P]"
 * or "H:P,H:P"; TCP only). */
bool ice_redis_addr_ok(const char *addr);

/*
 * Credentials. When ICE_REDIS_AUTH names a file, every connection
 * (ice_redis_connect: one instance, each cluster node, the agent's
 * subscription) sends AUTH with its contents before anything else. The
 * file passes ice_ipc_secret_open() (regular, ours or root's, 0600/0400)
 * and holds one line "USER PASSWORD", or "PASSWORD" alone for the default
 * user; blank lines and lines starting with '#' are skipped. icectl acl
 * writes one per role (docs/security.md). The password is never logged.
 */
#define ICE_REDIS_AUTH_ENV "ICE_REDIS_AUTH"
#define ICE_REDIS_USER_MAX 64
#define ICE_REDIS_PASS_MAX 256

struct ice_redis_auth {
	char user[ICE_REDIS_USER_MAX]; /* "" for the default user */
	char pass[ICE_REDIS_PASS_MAX];
};

/* Read an auth file. 0, or -errno with why filled ("ICE_REDIS_AUTH PATH: ..."
 * or "PATH:3: expected USER PASSWORD or PASSWORD, got 3 words"). a is wiped
 * on failure; the caller wipes it after use (ice_redis_auth_wipe). */
int ice_redis_auth_load(const char *path, struct ice_redis_auth *a, char *why, size_t len);
void ice_redis_auth_wipe(struct ice_redis_auth *a);

/* One connection attempt; the timeout also bounds every later command.
 * With ICE_REDIS_AUTH set, AUTH is sent first. NULL with why filled when it
 * fails, errno EACCES when the auth file or the AUTH was refused ("AUTH as
 * ice-host-h1 refused: WRONGPASS invalid username-password pair ..."). */
redisContext *ice_redis_connect(const char *addr, uint64_t timeout_ns, char *why, size_t whylen);

/* Read n replies of pipelined commands. out (n slots) receives them, or
 * NULL: they are freed. Error replies are counted in *errors (may be NULL;
 * the first ten are logged).
 * 0, or -EIO when the connection broke (replies read so far are freed, out
 * slots NULL). */
int ice_redis_replies(redisContext *c, size_t n, redisReply **out, uint32_t *errors);
void ice_redis_free_replies(redisReply **r, size_t n); /* NULL slots skipped */

struct ice_redis_cluster; /* ice_redis_cluster.c */

/* A connection that reconnects with back-off. */
struct ice_redis {
	char addr[256];
	uint64_t timeout_ns;
	redisContext *c;	      /* NULL while down */
	uint64_t next_try_ns;	      /* no attempt before this (CLOCK_MONOTONIC) */
	uint64_t backoff_ns;	      /* the next wait after a failure */
	uint64_t backoff_max_ns;      /* the waits double up to this (8 s; callers may lower it) */
	uint32_t connects;	      /* successful connections so far */
	uint32_t failures;	      /* failures since the last success */
	char why[200];		      /* the last failure */
	bool cluster;		      /* addr names a Redis Cluster */
	struct ice_redis_cluster *cl; /* its nodes and slot map; owned */
};

void ice_redis_init(struct ice_redis *r, const char *addr, uint64_t timeout_ns);
void ice_redis_fini(struct ice_redis *r); /* closes; NULL-safe */

/* Connected? Connects first when down and due. 1: connected by this call
 * (callers register, subscribe, ...), 0: already up, -EAGAIN: down and
 * waiting (r->next_try_ns), -ECONNREFUSED: this attempt failed (r->why;
 * the next one waits). */
int ice_redis_up(struct ice_redis *r, uint64_t now_ns);

/* The connection failed (or the caller gave up on it): close it, remember
 * why (NULL: the context's error; in a cluster the failed command's, which
 * names the shard and its slots) and wait before the next attempt. */
void ice_redis_down(struct ice_redis *r, uint64_t now_ns, const char *why);

/* Commands over a connection that is up (r->c != NULL), one instance or a
 * cluster alike. Appends queue a command (formatted as hiredis does; the
 * _formatted form takes one or more commands already in RESP); 0, or
 * -ENOTCONN (down), -ENOMEM, -EINVAL (not RESP). ice_redis_pipe() reads the
 * replies of the n commands appended since the last pipe, in order, as
 * ice_redis_replies() does; -EIO: the connection (or a shard) broke, r->why
 * says which; the caller then calls ice_redis_down(). ice_redis_cmd*(): one
 * command, its reply (caller frees) or NULL (r->why). */
int ice_redis_appendf(struct ice_redis *r, const char *fmt, ...);
int ice_redis_appendv(struct ice_redis *r, int argc, const char **argv, const size_t *lens);
int ice_redis_append_formatted(struct ice_redis *r, const char *cmds, size_t len);
int ice_redis_pipe(struct ice_redis *r, size_t n, redisReply **out, uint32_t *errors);
redisReply *ice_redis_cmdf(struct ice_redis *r, const char *fmt, ...);
redisReply *ice_redis_cmdv(struct ice_redis *r, int argc, const char **argv, const size_t *lens);
redisReply *ice_redis_vcmdf(struct ice_redis *r, const char *fmt, va_list ap);

/* ---- Redis Cluster (ice_redis_cluster.c) */

#define ICE_REDIS_SLOTS	    16384
#define ICE_REDIS_NODES_MAX 64 /* primaries a client follows */

/* "cluster:..." or a comma-separated list. */
bool ice_redis_is_cluster(const char *addr);

/* CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), Redis Cluster's key
 * hash: "123456789" -> 0x31C3. */
uint16_t ice_redis_crc16(const void *buf, size_t len);

/* A key's slot: CRC16 mod 16384 of its hash tag (what lies between the
 * first '{' and the next '}', when that is not empty), else of the key. */
uint16_t ice_redis_slot(const char *key, size_t len);

/* An error reply's text: "MOVED 3999 10.0.0.1:7002" -> 1, "ASK ..." -> 2,
 * slot and addr ("HOST:PORT") filled; 0: another error; -EINVAL: a MOVED
 * or ASK that does not parse (slot out of range, no port). */
int ice_redis_redirect(const char *err, uint16_t *slot, char *addr, size_t alen);

/* The address ("HOST:PORT", or addr on one instance) that serves key, for
 * connections of one's own (a subscription); NULL when none is known. */
const char *ice_redis_node_of(struct ice_redis *r, const char *key, char *buf, size_t len);

/* Slots no reachable primary serves, as "a-b,c" (at most len), or "" */
void ice_redis_missing_slots(const struct ice_redis *r, char *buf, size_t len);

#endif /* ICE_REDIS_H */
