/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_devrt: a test double of a device runtime plugin (dev_rt.h) that
 * runs on the CPU, loaded by the CUDA / HIP backends in place of
 * libice-cuda.so / libice-hip.so through $ICE_CUDA_LIB / $ICE_HIP_LIB.
 *
 * "Device" memory and pinned memory are separate heap allocations, tracked,
 * so the double rejects (like a real runtime) a device copy or kernel on a
 * pointer it did not hand out. Streams are queues: copies and kernels run
 * only when the stream is synchronised, an event is waited for, or another
 * stream is made to wait on an event, so missing synchronisation shows up
 * as missing data. Native error codes are CUDA's numbers.
 *
 * Like CUDA, the current device is per host thread (0 until set_device on
 * that thread); streams and device memory belong to the device current
 * when they were made, and a copy or kernel queued from a thread whose
 * current device is another one fails (invalid resource handle / launch
 * failure), as on a GPU. Every entry is under one lock (thread-safe).
 */
#ifndef FAKE_DEVRT_H
#define FAKE_DEVRT_H

#include <stddef.h>

enum {
	FAKE_SUCCESS = 0,
	FAKE_EINVAL = 1,
	FAKE_ENOMEM = 2,
	FAKE_ENODRV = 35,
	FAKE_ENODEV = 100,
	FAKE_ENOIMAGE = 209, /* cudaErrorNoKernelImageForDevice */
	FAKE_EHANDLE = 400,  /* cudaErrorInvalidResourceHandle */
	FAKE_ELAUNCH = 719,
};

struct fake_devrt_ctl {
	int ndev;	       /* devices reported ($FAKE_DEVRT_NDEV, default 1) */
	size_t mem_total;      /* each device's memory ($FAKE_DEVRT_MEM_MIB MiB,
				* default 16 GiB): mem_info reports it less
				* what is allocated there; beyond it malloc
				* fails */
	int fail_malloc;       /* the next N device / pinned allocations fail */
	int fail_launch;       /* the next N kernel launches fail */
	int launch_err;	       /* ... with this code (0: FAKE_ELAUNCH) */
	int fail_event_record; /* the next N event_record calls fail */
	long hang_sgemms;      /* once this many sgemms are queued, every
				* stream or event synchronisation hangs, as
				* on a device whose kernel never finishes
				* ($FAKE_DEVRT_HANG_SGEMMS; 0: never) */
	long mallocs, frees, host_mallocs, host_frees;
	long copies, reduces, scale_divs, sgemms, converts, sgds;
	long queued, executed; /* operations put on streams / run */
	long stream_syncs, event_syncs, stream_waits;
	long live; /* allocations not freed */
	long streams_created, streams_destroyed;
	long wrong_device; /* calls refused: the thread's device was another */
};

/* The double's state (shared by every backend that loaded it). */
struct fake_devrt_ctl *fake_devrt_ctl(void);

#endif /* FAKE_DEVRT_H */
