/* SPDX-License-Identifier: Apache-2.0 */
/*
 * icectl: the operator's CLI (icectl_main.c: command line, Redis, output;
 * icectl_view.c: status, links; icectl_qps.c: qps, plan, explain;
 * icectl_policy.c: policy; icectl_serve.c: the live dashboard; icectl_acl.c: Redis users;
 * icectl_keygen.c: the plans' signing keys). Every
 * command reads and writes only Redis, by common/ice_redis.h's key table; each builds one JSON
 * document, printed as is with
 * --json, else as tables.
 */
#ifndef ICECTL_H
#define ICECTL_H

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "ice_redis.h"

#define ICTL_EXIT_BAD	1 /* what was asked for is wrong (a policy that does not load) */
#define ICTL_EXIT_REDIS 2 /* bad command line, Redis unreachable or without ICE keys */
#define ICTL_STALE_MS	3000

struct ictl {
	/* options */
	char redis[256];
	char fabric[64];
	bool json, watch;
	uint64_t interval_ns; /* --watch */
	uint64_t wait_ns;     /* policy apply: wait for the controller */
	char job[64], host[64];
	char topology[256]; /* policy dry-run */
	char action[32], arg[512], arg2[512];
	char listen[128];    /* serve */
	uint64_t refresh_ns; /* serve: the page's period */
	char out[256];	     /* acl, keygen: the output directory */
	char name[64];	     /* keygen: the key pair's file name */
	/* run time */
	redisContext *c;
};

/* Connect and check that the fabric has ICE keys; on failure print one line
 * and return ICTL_EXIT_REDIS. */
int ictl_open(struct ictl *x);
/* One command; NULL (and a line printed) when Redis failed. */
redisReply *ictl_cmd(struct ictl *x, const char *fmt, ...);
redisReply *ictl_cmdv(struct ictl *x, int argc, const char **argv);
/* A key of the table (fabric filled in); "" parts are refused by ice_rkey. */
const char *ictl_key(struct ictl *x, char *buf, enum ice_rkey k, const char *host, const char *arg);
/* HGETALL into a JSON object of strings ({} when absent); NULL: Redis failed. */
json_t *ictl_hgetall(struct ictl *x, const char *key);
/* A string value of o as a number (0 when absent or not a number). */
double ictl_num(const json_t *o, const char *k);
const char *ictl_str(const json_t *o, const char *k); /* "" when absent */
/* An integer (or string) member as text in buf; "-" when absent. */
const char *ictl_intstr(const json_t *o, const char *k, char buf[24]);
/* SMEMBERS (cmd "SMEMBERS") or ZRANGE 0 -1 into a sorted array of strings;
 * NULL: Redis failed. */
json_t *ictl_members(struct ictl *x, const char *cmd, const char *key);
/* XREVRANGE key + - COUNT n: newest first, each entry's fields as strings
 * and its stream ID as "stream_id"; NULL: Redis failed. */
json_t *ictl_xrevrange(struct ictl *x, const char *key, unsigned n);
/* The "plan" object of the host's signed plan; NULL when there is none. */
json_t *ictl_plan_of(struct ictl *x, const char *host);
/* The whole signed plan ({"kid", "plan", "sig"}); NULL when there is none. */
json_t *ictl_signed_plan_of(struct ictl *x, const char *host);
uint64_t ictl_now_ms(void);
/* "1.2 s ago" style, into buf */
const char *ictl_age(uint64_t ts_ms, char *buf, size_t len);

/* Tables: columns, then rows of strings; printed with aligned columns. */
struct ictl_table {
	const char *title;
	uint32_t ncol;
	const char *const *head;
	char ***rows; /* rows[r][c], malloc'd */
	uint32_t nrow;
};
void ictl_table_init(struct ictl_table *t, const char *title, const char *const *head,
		     uint32_t ncol);
void ictl_table_add(struct ictl_table *t, ...); /* ncol strings (NULL printed as "-") */
void ictl_table_print(struct ictl_table *t);	/* and frees the rows */

/* Print the document (--json) or let the caller print tables. */
void ictl_json_print(json_t *doc);

/* The documents the commands print and the dashboard serves (the caller
 * owns them). links: NULL when Redis failed; status: what could be read;
 * qps: an array (of the QPs that could be read). */
json_t *ictl_status_doc(struct ictl *x);
json_t *ictl_links_doc(struct ictl *x);
json_t *ictl_qps_doc(struct ictl *x, const char *only_host, const char *only_id);

int ictl_status(struct ictl *x);
int ictl_links(struct ictl *x);
int ictl_qps(struct ictl *x);
int ictl_plan(struct ictl *x);
int ictl_explain(struct ictl *x);
int ictl_policy(struct ictl *x);
int ictl_serve(struct ictl *x);
int ictl_acl(struct ictl *x);	 /* needs no Redis */
int ictl_keygen(struct ictl *x); /* needs no Redis */

/* The dashboard's files (icectl_dash_files.c, generated from icectl/dash/). */
struct ictl_file {
	const char *path, *ctype;
	const char *data;
	size_t len;
};
extern const struct ictl_file ictl_dash_files[];
extern const size_t ictl_dash_nfiles;

#endif /* ICECTL_H */
