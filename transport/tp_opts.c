// SPDX-License-Identifier: Apache-2.0
#include "tp_opts.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ice_dcqcn.h"
#include "ice_log.h"
#include "ice_time.h"
#include "tp_launch.h"

void tp_opts_init(struct tp_opts *t, const char *tool, const char *addr_base)
{
	memset(t, 0, sizeof(*t));
	tp_comm_cfg_default(&t->cc);
	t->tool = tool;
	t->rank = -1;
	snprintf(t->addr_base, sizeof(t->addr_base), "%s", addr_base);
}

static int set_netns(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		     size_t len)
{
	struct tp_opts *t = obj;

	(void)f;
	if (text[0] == '\0' || strlen(text) >= sizeof(t->netns_buf)) {
		snprintf(msg, len, "expected namespaces A,B,... (at most %zu characters), got '%s'",
			 sizeof(t->netns_buf) - 1, text);
		return -EINVAL;
	}
	snprintf(t->netns_buf, sizeof(t->netns_buf), "%s", text);
	t->netns = t->netns_buf;
	return 0;
}

static int set_port(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		    size_t len)
{
	struct ice_cfg_field u = {.key = f->key, .type = ICE_CFG_U32, .min = 1, .max = 65535};
	uint32_t v;
	int ret = ice_cfg_set(&u, 1, &v, f->key, text, NULL);

	if (ret < 0) {
		snprintf(msg, len, "expected an integer in [1, 65535], got '%s'", text);
		return ret;
	}
	((struct tp_opts *)obj)->cc.eng.port = (uint16_t)v;
	return 0;
}

static int set_mtu(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		   size_t len)
{
	static const char *const mtus[] = {"256", "512", "1024", "2048", "4096", NULL};

	(void)f;
	if (strcmp(text, "auto") == 0) {
		((struct tp_opts *)obj)->cc.eng.mtu = 0;
		return 0;
	}
	for (int i = 0; mtus[i] != NULL; i++)
		if (strcmp(text, mtus[i]) == 0) {
			((struct tp_opts *)obj)->cc.eng.mtu = 256u << i;
			return 0;
		}
	snprintf(msg, len, "expected auto, 256, 512, 1024, 2048 or 4096, got '%s'", text);
	return -EINVAL;
}

static int set_dcqcn(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		     size_t len)
{
	struct tp_opts *t = obj;
	const struct ice_cfg_field *df;
	struct ice_cfg_err ce;
	size_t nf;
	int ret;

	(void)f;
	df = ice_dcqcn_fields(&nf);
	ret = ice_cfg_set_kv(df, nf, &t->cc.eng.dcqcn, text, &ce);
	if (ret < 0) {
		if (ce.key[0] != '\0')
			snprintf(msg, len, "key '%s': %s", ce.key, ce.msg);
		else
			snprintf(msg, len, "%s", ce.msg);
	}
	return ret;
}

static int set_dcqcn_file(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
			  size_t len)
{
	struct tp_opts *t = obj;
	struct ice_cfg_err ce;
	int ret;

	(void)f;
	memset(&ce, 0, sizeof(ce));
	ret = ice_dcqcn_load(text, &t->cc.eng.dcqcn, &ce);
	if (ret < 0) {
		char buf[sizeof(ce.file) + sizeof(ce.key) + sizeof(ce.msg) + 64];

		snprintf(msg, len, "%s", ice_cfg_err_str(&ce, buf, sizeof(buf)));
		return -EINVAL;
	}
	return 0;
}

static int set_no_dcqcn(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
			size_t len)
{
	(void)f, (void)text, (void)msg, (void)len;
	((struct tp_opts *)obj)->cc.eng.dcqcn.enable = 0;
	return 0;
}

static int set_gso(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		   size_t len)
{
	(void)f, (void)text, (void)msg, (void)len;
	((struct tp_opts *)obj)->cc.eng.gso = true;
	return 0;
}

static int set_no_icrc(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		       size_t len)
{
	(void)f, (void)text, (void)msg, (void)len;
	((struct tp_opts *)obj)->cc.eng.icrc_verify = false;
	return 0;
}

#define MS ICE_NSEC_PER_MSEC
#define S  ICE_NSEC_PER_SEC
static int set_verbose(const struct ice_cfg_field *f, void *obj, const char *text, char *msg,
		       size_t len)
{
	(void)f, (void)obj, (void)text, (void)msg, (void)len;
	ice_log_setup("info,debug=comm+coll+qp");
	return 0;
}

#define F(k, t, m, ...) ICE_CFG_ROW(struct tp_opts, k, t, m, __VA_ARGS__)
#define FN		ICE_CFG_FUNC_ROW
static const struct ice_cfg_field tp_fields[] = {
	FN("verbose", set_verbose, .flags = ICE_CFG_SWITCH, .alias = 'v',
	   .help = "more logging: info, debug=comm+coll+qp (ICE_LOG=... also works)"),
	F("rank", ICE_CFG_I32, rank, .min = 0, .max = 4095, .arg = "R",
	  .help = "run only rank R (needs --bootstrap and --addr)"),
	F("bootstrap", ICE_CFG_STRING, bootstrap, .arg = "IP:PORT",
	  .help = "rank 0's rendezvous address"),
	F("addr", ICE_CFG_STRING, addr, .arg = "IP", .help = "this rank's RoCEv2 address"),
	F("bootstrap_timeout", ICE_CFG_DURATION, cc.bootstrap_timeout_ns, .min = 1,
	  .max = 86400 * S, .unit = S,
	  .help = "give up joining the rendezvous after this long\n(default 30s)"),
	F("addr_base", ICE_CFG_STRING, addr_base, .arg = "IP",
	  .help = "local ranks use IP, IP+1, ..."),
	FN("netns", set_netns, .arg = "A,B,...",
	   .help = "start one rank in each network namespace"),
	FN("port", set_port, .arg = "N", .help = "RoCEv2 UDP port (default 4791)"),
	F("qps", ICE_CFG_U32, cc.qps_per_conn, .min = 1, .max = 64, .alias = 'q',
	  .help = "QPs per connection (default 1)"),
	FN("mtu", set_mtu, .arg = "N",
	   .help = "RoCE payload MTU: 256, 512, ... 4096, or auto (default):\n"
		   "the largest whose packets fit the interface; a job\n"
		   "takes its ranks' smallest"),
	F("line_rate", ICE_CFG_RATE, cc.eng.line_rate_bps,
	  .help = "NIC line rate for DCQCN and the pacer, e.g. 200mbit\n(default none)"),
	FN("dcqcn", set_dcqcn, .arg = "KEY=VALUE",
	   .help = "set a DCQCN parameter (mlx5 names); repeatable"),
	FN("dcqcn_file", set_dcqcn_file, .arg = "FILE",
	   .help = "DCQCN parameters from a YAML map of mlx5 names\n"
		   "(fabric/dcqcn-testbed.yaml); a later --dcqcn overrides a key"),
	FN("no_dcqcn", set_no_dcqcn, .flags = ICE_CFG_SWITCH,
	   .help = "no congestion control (send at line rate)"),
	FN("gso", set_gso, .flags = ICE_CFG_SWITCH,
	   .help = "send a QP's packets up to 64 KiB a message with UDP\n"
		   "GSO and read them back coalesced (GRO): less CPU a\n"
		   "byte; a tc or XDP program on the host sees the\n"
		   "coalesced messages (default off)"),
	FN("no_icrc_verify", set_no_icrc, .flags = ICE_CFG_SWITCH,
	   .help = "do not check received ICRCs (like a NIC offload)"),
	F("drop_ppm", ICE_CFG_U32, cc.eng.rx_drop_ppm, .min = 0, .max = 500000,
	  .help = "drop N per million received packets (loss tests)"),
	/* up to the engine's rto_max_ns */
	F("rto_min", ICE_CFG_DURATION, cc.eng.retx_timeout_ns, .min = 1, .max = S, .unit = MS,
	  .help = "retransmission timer floor, above the fabric's worst\nqueueing delay "
		  "(default 67ms, a NIC's timeout 14)"),
	F("peer_timeout", ICE_CFG_DURATION, cc.eng.peer_timeout_ns, .min = 1, .max = 86400 * S,
	  .unit = S, .help = "a QP fails after this long without progress (5s)"),
	F("stall_timeout", ICE_CFG_DURATION, cc.stall_timeout_ns, .min = 0, .max = 86400 * S,
	  .unit = S,
	  .help = "fail when requests wait this long and none completes:\na rank that "
		  "hangs (default: ice-train 20 predicted\nsteps, at least 60s; the other "
		  "tools never)"),
};

struct ice_cfg_table tp_opts_table(struct tp_opts *t)
{
	return (struct ice_cfg_table){.title = "transport and ranks",
				      .fields = tp_fields,
				      .nfields = sizeof(tp_fields) / sizeof(tp_fields[0]),
				      .obj = t};
}

int tp_opts_run(struct tp_opts *t, int nranks, int (*fn)(void *arg), void *arg)
{
	struct tp_launch l = {
		.tool = t->tool, .nranks = nranks, .netns = t->netns, .addr_base = t->addr_base};

	if (t->rank < 0)
		return tp_launch_ranks(&l, &t->cc, fn, arg);
	if (t->bootstrap[0] == '\0' || t->addr[0] == '\0') {
		fprintf(stderr, "%s: --rank needs --bootstrap IP:PORT and --addr IP\n", t->tool);
		return 2;
	}
	if (t->rank >= nranks) {
		fprintf(stderr, "%s: --rank %d: expected 0..%d\n", t->tool, t->rank, nranks - 1);
		return 2;
	}
	snprintf(t->cc.bootstrap, sizeof(t->cc.bootstrap), "%s", t->bootstrap);
	t->cc.rank = t->rank;
	t->cc.nranks = nranks;
	if (tp_launch_parse_addr(t->tool, "--addr", t->addr, &t->cc.eng.addr) < 0)
		return 2;
	return fn(arg);
}
