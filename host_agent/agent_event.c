// SPDX-License-Identifier: Apache-2.0
/* agent_event: validation and names of the collective events (ice_event.h). */
#include <string.h>

#include "agent.h"

enum agent_ev_verdict agent_event_check(const void *buf, size_t len)
{
	struct ice_event ev;

	if (len != sizeof(ev))
		return AGENT_EV_SIZE;
	memcpy(&ev, buf, sizeof(ev));
	if (ev.magic != ICE_EVENT_MAGIC)
		return AGENT_EV_MAGIC;
	if (ev.version != ICE_EVENT_VERSION)
		return AGENT_EV_VERSION;
	if (ev.kind < ICE_EV_COMM_INIT || ev.kind > ICE_EV_QP)
		return AGENT_EV_KIND;
	return AGENT_EV_OK;
}

const char *agent_ev_kind_name(unsigned kind)
{
	static const char *const names[] = {
		[ICE_EV_COMM_INIT] = "comm_init",
		[ICE_EV_COMM_DESTROY] = "comm_destroy",
		[ICE_EV_COLL_START] = "coll_start",
		[ICE_EV_COLL_END] = "coll_end",
		[ICE_EV_QP] = "qp",
	};

	return kind < sizeof(names) / sizeof(names[0]) && names[kind] != NULL ? names[kind]
									      : "unknown";
}

const char *agent_ev_op_name(unsigned op)
{
	static const char *const names[] = {
		[ICE_OP_ALLREDUCE] = "allreduce", [ICE_OP_REDUCESCATTER] = "reducescatter",
		[ICE_OP_ALLGATHER] = "allgather", [ICE_OP_BROADCAST] = "broadcast",
		[ICE_OP_REDUCE] = "reduce",	  [ICE_OP_ALLTOALL] = "alltoall",
		[ICE_OP_SEND] = "send",		  [ICE_OP_RECV] = "recv",
		[ICE_OP_SENDRECV] = "sendrecv",
	};

	return op < sizeof(names) / sizeof(names[0]) && names[op] != NULL ? names[op] : "none";
}
