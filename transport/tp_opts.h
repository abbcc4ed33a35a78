/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tp_opts: the options that ice-bench, ice-perf and ice-train share: the
 * engine's (--mtu, --line-rate, --dcqcn, ...) and where the ranks run
 * (--rank, --bootstrap, --addr, --netns, ...), as one ice_cfg_field table.
 * A tool puts tp_opts_table() into its ice_cfg_cli's more[], so these
 * options parse, print in --help and fail like its own.
 */
#ifndef TP_OPTS_H
#define TP_OPTS_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>

#include "ice_config.h"
#include "tp.h"

struct tp_opts {
	const char *tool; /* prefix of messages, e.g. "ice-bench" */
	int rank;	  /* --rank, or -1: start the ranks here */
	char bootstrap[64];
	char addr[INET_ADDRSTRLEN];
	char addr_base[INET_ADDRSTRLEN];
	char *netns; /* --netns A,B,...: netns_buf, or NULL */
	char netns_buf[1024];
	struct tp_comm_cfg cc;
};

/* Defaults: tp_comm_cfg_default(), no --rank, local ranks from addr_base. */
void tp_opts_init(struct tp_opts *t, const char *tool, const char *addr_base);
/* The shared options, bound to t (which must outlive the parse). */
struct ice_cfg_table tp_opts_table(struct tp_opts *t);
/* Run this one rank (--rank) or start nranks ranks here (tp_launch_ranks());
 * fn(arg) runs each rank. Returns the exit status, 2 on bad arguments. */
int tp_opts_run(struct tp_opts *t, int nranks, int (*fn)(void *arg), void *arg);

#endif /* TP_OPTS_H */
