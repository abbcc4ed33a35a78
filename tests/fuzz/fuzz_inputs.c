// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_inputs: libFuzzer harness for the other bytes ICE takes from outside
 * a process, the first input byte choosing which:
 *   0  a packet ice-probe receives (dpdk_probe/probe_wire.c: probe_parse,
 *      then the outstanding-probe match); a parsed probe header is built
 *      again with probe_build and parsed to the same fields
 *   1  a datagram on the agent's event socket (host_agent: agent_event_check,
 *      and agent_event_json for what passes)
 *   2  a topology file (topo/topo_yaml.c over common's YAML binding:
 *      topo_load_string, then the model's own checks)
 *   3  a kernel reply the agent's NIC backend parses (host_agent/
 *      agent_nic_io.c): an RDMA netlink dump as the device list, the QP
 *      table and the QP counters, and an RTM_GETDCB reply
 *   4  PFC records the controller reads (controller/ctl_pfc.c): a NIC
 *      record's `pfc` part and a switch port's paused-share list
 * Each must reject what it cannot use with an error, never crash, leak or
 * read out of bounds (ASan/UBSan in build-san). Built as a libFuzzer binary
 * with clang (-Dfuzz=true) and, always, with the replay driver in
 * fuzz_main.c.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "agent_internal.h"
#include "agent_nic.h"
#include "ctl_pfc.h"
#include "ice_event.h"
#include "probe_wire.h"
#include "topo.h"

#define fuzz_check(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_inputs: %s:%d: check failed: %s\n", __FILE__,        \
				__LINE__, #cond);                                                  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void pfc_record(const uint8_t *d, size_t n)
{
	double rx[CTL_PFC_PRIOS], tx[CTL_PFC_PRIOS];
	char *s = malloc(n + 1);
	uint8_t ll;
	bool known;
	int ret;

	if (s == NULL)
		return;
	memcpy(s, d, n);
	s[n] = '\0';
	ret = ctl_pfc_parse_nic(s, &ll, &known, rx, tx);
	fuzz_check(ret == 0 || ret == -EINVAL);
	for (int k = 0; k < CTL_PFC_PRIOS; k++) {
		fuzz_check(rx[k] >= 0 && rx[k] <= 1 && tx[k] >= 0 && tx[k] <= 1);
		fuzz_check(ret == 0 || (rx[k] == 0 && tx[k] == 0));
	}
	fuzz_check(ret == 0 || (ll == 0 && !known));
	ret = ctl_pfc_parse_list(s, rx);
	fuzz_check(ret == 0 || ret == -EINVAL);
	for (int k = 0; ret == 0 && k < CTL_PFC_PRIOS; k++)
		fuzz_check(rx[k] >= 0 && rx[k] <= 1);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void probe_packet(const uint8_t *d, size_t n)
{
	static struct probe_track track;
	static bool init;
	struct probe_rx rx, rx2;
	uint8_t buf[PROBE_IP_LEN + 64];
	int k = probe_parse(d, n, 4791, &rx);

	if (!init) {
		probe_track_init(&track, 1);
		init = true;
	}
	fuzz_check(k != 0);
	if (k < 0) {
		fuzz_check(-k > 0 && -k < PROBE_DROP_N);
		return;
	}
	(void)probe_track_match(&track, &rx, rx.to);
	if (k == PROBE_RX_REQUEST && rx.has_hdr) {
		size_t len = probe_build(buf, rx.psrc, rx.pdst, rx.sport, rx.dport, 64, &rx.hdr);

		fuzz_check(len <= sizeof(buf));
		fuzz_check(probe_parse(buf, len, rx.dport, &rx2) == PROBE_RX_REQUEST);
		fuzz_check(rx2.sport == rx.sport && rx2.dport == rx.dport &&
			   memcmp(&rx2.hdr, &rx.hdr, sizeof(rx.hdr)) == 0);
	}
}

static void event_datagram(const uint8_t *d, size_t n)
{
	struct ice_event ev;
	json_t *o;

	if (agent_event_check(d, n) != AGENT_EV_OK)
		return;
	fuzz_check(n == sizeof(ev));
	memcpy(&ev, d, sizeof(ev));
	o = agent_event_json(&ev);
	fuzz_check(o != NULL);
	free(json_dumps(o, JSON_COMPACT));
	json_decref(o);
}

static void topology(const uint8_t *d, size_t n)
{
	struct ice_cfg_err err;
	struct topo *t = topo_load_string("fuzz.yaml", (const char *)d, n, &err);

	if (t == NULL) {
		fuzz_check(err.msg[0] != '\0'); /* a refusal says why */
		return;
	}
	fuzz_check(topo_validate(t, &err) == 0);
	topo_free(t);
}

static void nic_reply(const uint8_t *d, size_t n)
{
	struct agent_nic_qp *qps = NULL;
	size_t nq = 0, cap = 0;
	uint32_t idx;
	uint8_t en;
	int ret;

	ret = agent_nic_nl_dev_index(d, n, "mlx5_0", &idx);
	fuzz_check(ret == 0 || ret < 0);
	ret = agent_nic_nl_res_qp(d, n, &qps, &nq, &cap);
	fuzz_check(nq <= cap);
	(void)agent_nic_nl_stat_qp(d, n, qps, nq);
	free(qps);
	ret = agent_nic_dcb_pfc(d, n, &en);
	fuzz_check(ret <= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 5) {
	case 0:
		probe_packet(data + 1, size - 1);
		break;
	case 1:
		event_datagram(data + 1, size - 1);
		break;
	case 2:
		topology(data + 1, size - 1);
		break;
	case 3:
		nic_reply(data + 1, size - 1);
		break;
	default:
		pfc_record(data + 1, size - 1);
	}
	return 0;
}
