/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tp_opts: the command-line options that ice-bench and ice-perf share: the
 * engine's (--mtu, --line-rate, --dcqcn, ...) and where the ranks run
 * (--rank, --bootstrap, --addr, --netns, ...). A tool puts TP_OPTS_LONGOPTS
 * into its getopt_long() table and TP_OPTS_SHORTOPTS into its option
 * string, numbers its own long-only codes from TP_OPT_END, and passes every
 * code to tp_opts_handle() first. Bad values print
 * "TOOL: FLAG 'VALUE': expected ..." and exit 2.
 */
#ifndef TP_OPTS_H
#define TP_OPTS_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tp.h"

enum tp_opt_code {
	TP_OPT_RANK = 0x100,
	TP_OPT_BOOT,
	TP_OPT_ADDR,
	TP_OPT_ADDR_BASE,
	TP_OPT_NETNS,
	TP_OPT_PORT,
	TP_OPT_MTU,
	TP_OPT_LINE,
	TP_OPT_DCQCN,
	TP_OPT_NODCQCN,
	TP_OPT_NOICRC,
	TP_OPT_DROP,
	TP_OPT_RTO_MIN,
	TP_OPT_PEER_TIMEOUT,
	TP_OPT_END, /* first code free for the tool */
};

#define TP_OPTS_SHORTOPTS "q:"
/* clang-format off */
#define TP_OPTS_LONGOPTS                                                                           \
	{"qps", 1, 0, 'q'},                                                                        \
	{"rank", 1, 0, TP_OPT_RANK},                                                               \
	{"bootstrap", 1, 0, TP_OPT_BOOT},                                                          \
	{"addr", 1, 0, TP_OPT_ADDR},                                                               \
	{"addr-base", 1, 0, TP_OPT_ADDR_BASE},                                                     \
	{"netns", 1, 0, TP_OPT_NETNS},                                                             \
	{"port", 1, 0, TP_OPT_PORT},                                                               \
	{"mtu", 1, 0, TP_OPT_MTU},                                                                 \
	{"line-rate", 1, 0, TP_OPT_LINE},                                                          \
	{"dcqcn", 1, 0, TP_OPT_DCQCN},                                                             \
	{"no-dcqcn", 0, 0, TP_OPT_NODCQCN},                                                        \
	{"no-icrc-verify", 0, 0, TP_OPT_NOICRC},                                                   \
	{"drop-ppm", 1, 0, TP_OPT_DROP},                                                           \
	{"rto-min", 1, 0, TP_OPT_RTO_MIN},                                                         \
	{"peer-timeout", 1, 0, TP_OPT_PEER_TIMEOUT}
/* clang-format on */

struct tp_opts {
	const char *tool; /* prefix of messages, e.g. "ice-bench" */
	int max_rank;	  /* --rank takes 0..max_rank */
	int rank;	  /* --rank, or -1: start the ranks here */
	char bootstrap[64];
	char addr[INET_ADDRSTRLEN];
	char addr_base[INET_ADDRSTRLEN];
	char *netns; /* points into argv */
	struct tp_comm_cfg cc;
};

/* Defaults: tp_comm_cfg_default(), no --rank, local ranks from addr_base. */
void tp_opts_init(struct tp_opts *t, const char *tool, int max_rank, const char *addr_base);
/* Apply getopt code c with its argument; false when c is not a shared one. */
bool tp_opts_handle(struct tp_opts *t, int c, const char *arg);
/* The usage lines of the shared options. */
void tp_opts_usage(FILE *f, const char *addr_base);
/* Run this one rank (--rank) or start nranks ranks here (tp_launch_ranks());
 * fn(arg) runs each rank. Returns the exit status, 2 on bad arguments. */
int tp_opts_run(struct tp_opts *t, int nranks, int (*fn)(void *arg), void *arg);

/* Print "TOOL: OPT 'VAL': expected EXPECT" and exit 2. */
_Noreturn void tp_opts_die(const struct tp_opts *t, const char *opt, const char *val,
			   const char *expect);
/* A decimal integer in [min, max], or tp_opts_die(). */
long tp_opts_long(const struct tp_opts *t, const char *opt, const char *s, long min, long max);
/* A size like 8, 4K, 64M or 1G, or tp_opts_die(). */
uint64_t tp_opts_size(const struct tp_opts *t, const char *opt, const char *s);

#endif /* TP_OPTS_H */
