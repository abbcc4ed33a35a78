/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_nccl: a test double of libnccl.so (and of the mccl/succl/eccl
 * vendor libraries): the hooked entry points under every prefix, nccl* as
 * weak aliases of strong pnccl* like the real library, the vendor ones
 * without p-aliases. Each call records its arguments and returns
 * fake_nccl_rc. No GPU: nothing is computed.
 */
#ifndef FAKE_NCCL_H
#define FAKE_NCCL_H

#include <stddef.h>
#include <stdint.h>

struct fake_nccl_call {
	char fn[32];   /* "ncclAllReduce", "mcclSend", ... */
	uint64_t a[8]; /* the arguments, in order, as integers */
	uint64_t ncalls;
};

extern struct fake_nccl_call fake_nccl_last;
extern int fake_nccl_rc;		    /* what every call returns */
extern int fake_nccl_count, fake_nccl_rank; /* CommCount / CommUserRank answers */

#endif /* FAKE_NCCL_H */
