/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tp_dev: collectives on buffers in any memory kind (dev.h), for mixed
 * communicators whose ranks sit on different device kinds (CPU, CUDA, HIP
 * in one job). Every rank runs the same algorithm, so ranks of different
 * kinds interoperate; each rank decides for itself, per step, where its data
 * is staged and where its reductions run:
 *   - TP_STAGE_HOST: the whole buffer is copied to pinned host memory once,
 *     reduced there by the CPU, copied back at the end;
 *   - TP_STAGE_DEVICE: received chunks are copied to the device and reduced
 *     by the device's kernels; only chunks that travel are staged;
 *   - TP_STAGE_AUTO: the cheaper of the two by the rank's bandwidths
 *     (tp_dev_set_bw) for this message size.
 * When every rank is host memory, calls go straight to tp_allreduce & co.
 * Results: integer types bit-identical to an all-CPU reference; floating
 * types identical on every rank (each element is reduced once, by the rank
 * that owns its chunk, in ring order) and within the summation-order
 * tolerance of the reference.
 *
 * Device buffers passed in must be complete: the application's streams
 * that wrote sendbuf (and recvbuf, in place) synchronised before the call,
 * since the backend's streams are non-blocking and do not wait for them
 * (dev.h). On return, recvbuf is complete. A tp_dev_comm, like its
 * tp_comm, is used by one thread at a time; that thread may differ from the
 * one that allocated the buffers or created the communicator (the device
 * backend selects its device on each calling thread). Messages over
 * max_bytes (tp_dev_comm_new) fail with -EMSGSIZE on communicators with
 * staging (any device rank).
 */
#ifndef TP_DEV_H
#define TP_DEV_H

#include "tp.h"

enum tp_stage {
	TP_STAGE_AUTO = 0,
	TP_STAGE_HOST,
	TP_STAGE_DEVICE,
};

struct tp_dev_comm;

/* Wrap a connected communicator; ops is this rank's memory kind. Collective
 * (exchanges the ranks' kinds over the bootstrap). max_bytes: the largest
 * buffer used (staging is allocated for it). NULL + errno. */
struct tp_dev_comm *tp_dev_comm_new(struct tp_comm *c, const struct dev_mem_ops *ops,
				    size_t max_bytes);
void tp_dev_comm_free(struct tp_dev_comm *d); /* NULL-safe; not the tp_comm */
struct tp_comm *tp_dev_comm_base(struct tp_dev_comm *d);
const struct dev_mem_ops *tp_dev_comm_ops(const struct tp_dev_comm *d);
/* Kind of every rank's memory (index = rank). */
enum dev_mem_kind tp_dev_comm_kind(const struct tp_dev_comm *d, int rank);
/* The staging tp_dev_comm_new allocated, bytes: *host (pinned host memory)
 * and *dev (this rank's device memory); both 0 when every rank's memory is
 * the host's. */
void tp_dev_comm_staging(const struct tp_dev_comm *d, size_t *host, size_t *dev);
/* Bandwidths (GB/s) used by TP_STAGE_AUTO; defaults are conservative. */
void tp_dev_set_bw(struct tp_dev_comm *d, double h2d_gbps, double d2h_gbps, double dev_reduce_gbps,
		   double host_reduce_gbps);

/* Collectives on this rank's memory kind (in place when send == recv). */
int tp_dev_allreduce(struct tp_dev_comm *d, const void *sendbuf, void *recvbuf, size_t count,
		     enum dev_dtype t, enum dev_redop op, enum tp_stage st);
int tp_dev_allgather(struct tp_dev_comm *d, const void *sendbuf, void *recvbuf, size_t sendcount,
		     enum dev_dtype t);
int tp_dev_sendrecv(struct tp_dev_comm *d, const void *sendbuf, int sendpeer, void *recvbuf,
		    int recvpeer, size_t count, enum dev_dtype t);
/* Non-blocking send / receive (tp_isend, tp_irecv) for a rank whose memory
 * is host memory; -EOPNOTSUPP on a device rank, which uses tp_dev_sendrecv.
 * They pair with tp_dev_sendrecv on the peer, staged or not: towards a
 * communicator with staging a message goes as the same pieces. Progress
 * with tp_comm_progress on tp_dev_comm_base(d). */
int tp_dev_isend(struct tp_dev_comm *d, const void *buf, size_t count, enum dev_dtype t, int peer,
		 struct tp_req *r);
int tp_dev_irecv(struct tp_dev_comm *d, void *buf, size_t count, enum dev_dtype t, int peer,
		 struct tp_req *r);
/* What the last tp_dev_allreduce chose on this rank (never AUTO). */
enum tp_stage tp_dev_last_stage(const struct tp_dev_comm *d);
const char *tp_stage_name(enum tp_stage s);

#endif /* TP_DEV_H */
