// SPDX-License-Identifier: Apache-2.0
/*
 * tp_coll: collectives over a communicator.
 *
 * Large all-reduce, reduce-scatter and all-gather use rings, pipelined in
 * slices: the buffer is cut into one chunk per rank (of equal sizes, or of
 * the caller's sizes for the "v" variants), each chunk into slices, and
 * slice j of step t is forwarded as soon as slice j of step t-1 arrived
 * (and was reduced), so the network and the reduction overlap. Every chunk is
 * reduced exactly once, in the same order on every rank, so all ranks get
 * bit-identical results. Small all-reduces (<= oneshot_max bytes) use one
 * round: every rank sends its whole buffer to every other and reduces the
 * contributions in rank order. Broadcast is a pipelined chain from the root;
 * all-to-all and send/recv post every message at once.
 */
#include "tp_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ice_log.h"
#include "ice_time.h"

/* ---- the pipelined ring ---------------------------------------------------- */

enum ring_phase {
	RING_RS, /* receive into a slot, reduce into the work buffer */
	RING_AG, /* receive straight into the work buffer */
};

struct ring {
	struct tp_comm *c;
	uint8_t *buf; /* work buffer: nranks chunks */
	size_t esize;
	size_t *off;	    /* chunk i: elements off[i] to off[i + 1] */
	size_t ss;	    /* elements per slice */
	uint32_t S;	    /* slices per chunk, enough for the largest */
	uint32_t T;	    /* transfers: steps of all phases */
	uint32_t rs_steps;  /* the first rs_steps transfers reduce */
	int rs_off, ag_off; /* chunk offsets of the two phases */
	enum dev_dtype dt;
	enum dev_redop op;
	/* state, indexed by transfer * S + slice */
	struct tp_req *sreq, *rreq;
	int *slot; /* scratch slot of a reducing receive */
	uint8_t *slots;
	uint32_t nslots;
	int *free_slots;
	uint32_t nfree;
};

static int mod(int a, int n)
{
	return ((a % n) + n) % n;
}

/* Chunk sent / received at transfer t by this rank. */
static int ring_send_chunk(const struct ring *g, uint32_t t)
{
	int n = g->c->nranks, r = g->c->rank;

	if (t < g->rs_steps)
		return mod(r - (int)t + g->rs_off, n);
	return mod(r - (int)(t - g->rs_steps) + g->ag_off, n);
}

static int ring_recv_chunk(const struct ring *g, uint32_t t)
{
	return mod(ring_send_chunk(g, t) - 1, g->c->nranks);
}

/* Byte range of slice j of chunk ch; empty past the chunk's end. */
static void slice_range(const struct ring *g, int ch, uint32_t j, size_t *off, size_t *len)
{
	size_t start = g->off[ch] + (size_t)j * g->ss;
	size_t cend = g->off[ch + 1];
	size_t end = start + g->ss;

	if (end > cend)
		end = cend;
	if (start > end)
		start = end;
	*off = start * g->esize;
	*len = (end - start) * g->esize;
}

static int ring_run(struct ring *g)
{
	struct tp_comm *c = g->c;
	int next = (c->rank + 1) % c->nranks, prev = mod(c->rank - 1, c->nranks);
	uint32_t total = g->T * g->S;
	uint32_t rposted = 0, rdone = 0, sposted = 0, sdone = 0;
	int ret = 0;

	while (sdone < total || rdone < total) {
		/* post receives ahead, as far as slots allow */
		while (rposted < total) {
			uint32_t t = rposted / g->S, j = rposted % g->S;
			size_t off, len;
			uint8_t *dst;

			slice_range(g, ring_recv_chunk(g, t), j, &off, &len);
			if (t < g->rs_steps) {
				if (g->nfree == 0)
					break;
				g->slot[rposted] = g->free_slots[--g->nfree];
				dst = g->slots + (size_t)g->slot[rposted] * g->ss * g->esize;
			} else {
				dst = g->buf + off;
			}
			ret = tp_comm_irecv(c, prev, dst, len, &g->rreq[rposted]);
			if (ret < 0)
				return ret;
			rposted++;
		}
		/* retire receives in order; reduce */
		while (rdone < rposted && g->rreq[rdone].pending == 0) {
			uint32_t t = rdone / g->S, j = rdone % g->S;

			if (g->rreq[rdone].status < 0)
				return g->rreq[rdone].status;
			if (t < g->rs_steps) {
				size_t off, len;
				int s = g->slot[rdone];

				slice_range(g, ring_recv_chunk(g, t), j, &off, &len);
				dev_reduce(g->buf + off, g->slots + (size_t)s * g->ss * g->esize,
					   len / g->esize, g->dt, g->op);
				g->free_slots[g->nfree++] = s;
			}
			rdone++;
		}
		/* send in order, each slice once its previous step arrived */
		while (sposted < total) {
			uint32_t t = sposted / g->S, j = sposted % g->S;
			size_t off, len;

			if (t > 0 && (t - 1) * g->S + j >= rdone)
				break;
			slice_range(g, ring_send_chunk(g, t), j, &off, &len);
			ret = tp_comm_isend(c, next, g->buf + off, len, &g->sreq[sposted]);
			if (ret < 0)
				return ret;
			sposted++;
		}
		while (sdone < sposted && g->sreq[sdone].pending == 0) {
			if (g->sreq[sdone].status < 0)
				return g->sreq[sdone].status;
			sdone++;
		}
		if (sdone < total || rdone < total) {
			ret = tp_comm_progress(c, ICE_NSEC_PER_MSEC);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

/* Run rs_steps reducing and ag_steps gathering transfers over buf, whose
 * chunk i holds counts[i] elements; counts NULL: count elements cut evenly
 * (the last chunks shorter or empty). */
static int ring(struct tp_comm *c, uint8_t *buf, const size_t *counts, size_t count,
		enum dev_dtype dt, enum dev_redop op, uint32_t rs_steps, int rs_off,
		uint32_t ag_steps, int ag_off)
{
	int n = c->nranks;
	struct ring g = {.c = c,
			 .buf = buf,
			 .esize = dev_dtype_size(dt),
			 .dt = dt,
			 .op = op,
			 .rs_steps = rs_steps,
			 .rs_off = rs_off,
			 .ag_off = ag_off};
	size_t total, cs, maxc = 0;
	int ret = -ENOMEM;

	g.T = rs_steps + ag_steps;
	if (g.T == 0)
		return 0;
	g.off = malloc(((size_t)n + 1) * sizeof(*g.off));
	if (g.off == NULL)
		return -ENOMEM;
	cs = (count + (size_t)n - 1) / (size_t)n;
	g.off[0] = 0;
	for (int i = 0; i < n; i++) {
		size_t len = counts != NULL ? counts[i] : cs;

		if (counts == NULL && len > count - g.off[i])
			len = count - g.off[i];
		g.off[i + 1] = g.off[i] + len;
		maxc = len > maxc ? len : maxc;
	}
	g.ss = c->cfg.slice_bytes / g.esize;
	if (g.ss == 0)
		g.ss = 1;
	g.S = maxc == 0 ? 1 : (uint32_t)((maxc + g.ss - 1) / g.ss);
	if (g.ss > maxc && maxc > 0)
		g.ss = maxc;
	total = (size_t)g.T * g.S;
	g.nslots = rs_steps == 0 ? 0 : (g.S * 2 < 16 ? g.S * 2 : 16);
	g.sreq = calloc(total, sizeof(*g.sreq));
	g.rreq = calloc(total, sizeof(*g.rreq));
	g.slot = calloc(total, sizeof(*g.slot));
	g.free_slots = calloc(g.nslots + 1, sizeof(*g.free_slots));
	g.slots = g.nslots != 0 ? tp_comm_scratch(c, (size_t)g.nslots * g.ss * g.esize) : NULL;
	if (g.sreq == NULL || g.rreq == NULL || g.slot == NULL || g.free_slots == NULL ||
	    (g.nslots != 0 && g.slots == NULL))
		goto out;
	for (uint32_t i = 0; i < g.nslots; i++)
		g.free_slots[g.nfree++] = (int)i;
	ret = ring_run(&g);
out:
	free(g.off);
	free(g.sreq);
	free(g.rreq);
	free(g.slot);
	free(g.free_slots);
	return ret;
}

static int fail(struct tp_comm *c, const char *what, int ret)
{
	ice_err(ICE_SUB_COLL, "rank %d: %s failed: %s", c->rank, what, strerror(-ret));
	return ret;
}

/* ---- collectives ----------------------------------------------------------- */

static int check_args(struct tp_comm *c, enum dev_dtype t, enum dev_redop op, const char *what)
{
	if ((unsigned)t >= DEV_DTYPE_MAX || (unsigned)op >= DEV_REDOP_MAX) {
		ice_err(ICE_SUB_COLL, "%s: bad datatype %d or operation %d", what, t, op);
		return -EINVAL;
	}
	return 0;
}

/* One round: all ranks exchange whole buffers and reduce in rank order. */
static int allreduce_oneshot(struct tp_comm *c, const void *sendbuf, void *recvbuf, size_t count,
			     enum dev_dtype t, enum dev_redop op)
{
	size_t bytes = count * dev_dtype_size(t);
	int n = c->nranks;
	struct tp_req *rr, sr = {0};
	uint8_t *in;
	int ret = 0;

	in = tp_comm_scratch(c, bytes * (size_t)n);
	rr = calloc((size_t)n, sizeof(*rr));
	if (in == NULL || rr == NULL) {
		free(rr);
		return -ENOMEM;
	}
	memcpy(in + bytes * (size_t)c->rank, sendbuf, bytes);
	for (int p = 0; p < n && ret == 0; p++)
		if (p != c->rank)
			ret = tp_comm_irecv(c, p, in + bytes * (size_t)p, bytes, &rr[p]);
	for (int i = 1; i < n && ret == 0; i++)
		ret = tp_comm_isend(c, (c->rank + i) % n, sendbuf, bytes, &sr);
	for (int p = 0; p < n && ret == 0; p++)
		ret = tp_comm_wait(c, &rr[p]);
	if (ret == 0)
		ret = tp_comm_wait(c, &sr);
	if (ret == 0) {
		dev_reduce3(recvbuf, in, in + bytes, count, t, op);
		for (int p = 2; p < n; p++)
			dev_reduce(recvbuf, in + bytes * (size_t)p, count, t, op);
	}
	free(rr);
	return ret;
}

static int tp_allreduce_impl(struct tp_comm *c, const void *sendbuf, void *recvbuf, size_t count,
			     enum dev_dtype t, enum dev_redop op)
{
	size_t bytes;
	int ret = check_args(c, t, op, "all-reduce");

	if (ret < 0)
		return ret;
	bytes = count * dev_dtype_size(t);
	if (c->nranks == 1) {
		memmove(recvbuf, sendbuf, bytes);
		return 0;
	}
	if (bytes <= c->cfg.oneshot_max) {
		ret = allreduce_oneshot(c, sendbuf, recvbuf, count, t, op);
	} else {
		if (sendbuf != recvbuf)
			memcpy(recvbuf, sendbuf, bytes);
		ret = ring(c, recvbuf, NULL, count, t, op, (uint32_t)c->nranks - 1, 0,
			   (uint32_t)c->nranks - 1, 1);
	}
	if (ret < 0)
		return fail(c, "all-reduce", ret);
	if (op == DEV_AVG)
		dev_scale_div(recvbuf, count, t, c->nranks);
	return 0;
}

static int tp_reduce_scatter_impl(struct tp_comm *c, const void *sendbuf, void *recvbuf,
				  size_t recvcount, enum dev_dtype t, enum dev_redop op)
{
	size_t esize = dev_dtype_size(t), bytes;
	uint8_t *work;
	int ret = check_args(c, t, op, "reduce-scatter");

	if (ret < 0)
		return ret;
	bytes = recvcount * esize;
	if (c->nranks == 1) {
		memmove(recvbuf, sendbuf, bytes);
		goto avg;
	}
	/* The ring reduces in place; work on a copy of the input. Chunks are
	 * recvcount elements, so the ring's chunk r is this rank's output. */
	work = malloc(bytes * (size_t)c->nranks + 1);
	if (work == NULL)
		return -ENOMEM;
	memcpy(work, sendbuf, bytes * (size_t)c->nranks);
	ret = ring(c, work, NULL, recvcount * (size_t)c->nranks, t, op, (uint32_t)c->nranks - 1, -1,
		   0, 0);
	if (ret == 0)
		memcpy(recvbuf, work + bytes * (size_t)c->rank, bytes);
	free(work);
	if (ret < 0)
		return fail(c, "reduce-scatter", ret);
avg:
	if (op == DEV_AVG)
		dev_scale_div(recvbuf, recvcount, t, c->nranks);
	return 0;
}

static int tp_allgather_impl(struct tp_comm *c, const void *sendbuf, void *recvbuf,
			     size_t sendcount, enum dev_dtype t)
{
	size_t bytes;
	uint8_t *mine;
	int ret = check_args(c, t, DEV_SUM, "all-gather");

	if (ret < 0)
		return ret;
	bytes = sendcount * dev_dtype_size(t);
	mine = (uint8_t *)recvbuf + bytes * (size_t)c->rank;
	if (mine != sendbuf)
		memmove(mine, sendbuf, bytes);
	if (c->nranks == 1)
		return 0;
	ret = ring(c, recvbuf, NULL, sendcount * (size_t)c->nranks, t, DEV_SUM, 0, 0,
		   (uint32_t)c->nranks - 1, 0);
	return ret < 0 ? fail(c, "all-gather", ret) : 0;
}

/* Checks the arguments of a "v" collective; sets the element offset of this
 * rank's chunk and the elements of all chunks. */
static int check_counts(struct tp_comm *c, const size_t *counts, enum dev_dtype t,
			enum dev_redop op, const char *what, size_t *disp, size_t *total)
{
	size_t esize;
	int ret = check_args(c, t, op, what);

	if (ret < 0)
		return ret;
	if (counts == NULL) {
		ice_err(ICE_SUB_COLL, "%s: counts is NULL, expected %d counts (one per rank)", what,
			c->nranks);
		return -EINVAL;
	}
	esize = dev_dtype_size(t);
	*total = 0;
	for (int i = 0; i < c->nranks; i++) {
		if (counts[i] > SIZE_MAX / esize - *total) {
			ice_err(ICE_SUB_COLL, "%s: counts[%d] = %zu overflows the buffer size",
				what, i, counts[i]);
			return -EINVAL;
		}
		if (i == c->rank)
			*disp = *total;
		*total += counts[i];
	}
	return 0;
}

static int tp_reduce_scatter_v_impl(struct tp_comm *c, const void *sendbuf, void *recvbuf,
				    const size_t *counts, enum dev_dtype t, enum dev_redop op)
{
	size_t esize, disp = 0, total = 0, bytes;
	uint8_t *work;
	bool in_place;
	int ret = check_counts(c, counts, t, op, "reduce-scatter-v", &disp, &total);

	if (ret < 0)
		return ret;
	esize = dev_dtype_size(t);
	bytes = counts[c->rank] * esize;
	if (c->nranks == 1) {
		memmove(recvbuf, sendbuf, bytes);
		goto avg;
	}
	/* In place (recvbuf is our chunk of sendbuf) the ring reduces in
	 * sendbuf itself; otherwise in a copy of it. */
	in_place = (const uint8_t *)recvbuf == (const uint8_t *)sendbuf + disp * esize;
	if (in_place) {
		work = (uint8_t *)recvbuf - disp * esize;
	} else {
		work = malloc(total * esize + 1);
		if (work == NULL)
			return -ENOMEM;
		memcpy(work, sendbuf, total * esize);
	}
	ret = ring(c, work, counts, total, t, op, (uint32_t)c->nranks - 1, -1, 0, 0);
	if (!in_place) {
		if (ret == 0)
			memcpy(recvbuf, work + disp * esize, bytes);
		free(work);
	}
	if (ret < 0)
		return fail(c, "reduce-scatter-v", ret);
avg:
	if (op == DEV_AVG)
		dev_scale_div(recvbuf, counts[c->rank], t, c->nranks);
	return 0;
}

static int tp_allgather_v_impl(struct tp_comm *c, const void *sendbuf, void *recvbuf,
			       const size_t *counts, enum dev_dtype t)
{
	size_t disp = 0, total = 0;
	uint8_t *mine;
	int ret = check_counts(c, counts, t, DEV_SUM, "all-gather-v", &disp, &total);

	if (ret < 0)
		return ret;
	mine = (uint8_t *)recvbuf + disp * dev_dtype_size(t);
	if (mine != sendbuf)
		memmove(mine, sendbuf, counts[c->rank] * dev_dtype_size(t));
	if (c->nranks == 1)
		return 0;
	ret = ring(c, recvbuf, counts, total, t, DEV_SUM, 0, 0, (uint32_t)c->nranks - 1, 0);
	return ret < 0 ? fail(c, "all-gather-v", ret) : 0;
}

static int tp_broadcast_impl(struct tp_comm *c, const void *sendbuf, void *recvbuf, size_t count,
			     enum dev_dtype t, int root)
{
	size_t bytes, slice = c->cfg.slice_bytes;
	int n = c->nranks, pos, next, prev;
	uint32_t S;
	struct tp_req *rr = NULL, *sr = NULL;
	int ret = check_args(c, t, DEV_SUM, "broadcast");

	if (ret < 0)
		return ret;
	if (root < 0 || root >= n) {
		ice_err(ICE_SUB_COLL, "broadcast: root %d not in 0..%d", root, n - 1);
		return -EINVAL;
	}
	bytes = count * dev_dtype_size(t);
	if (c->rank == root && sendbuf != recvbuf)
		memmove(recvbuf, sendbuf, bytes);
	if (n == 1)
		return 0;
	/* chain root -> root+1 -> ... -> root-1, in slices */
	pos = mod(c->rank - root, n);
	next = (c->rank + 1) % n;
	prev = mod(c->rank - 1, n);
	slice -= slice % dev_dtype_size(t);
	S = bytes == 0 ? 1 : (uint32_t)((bytes + slice - 1) / slice);
	rr = calloc(S, sizeof(*rr));
	sr = calloc(S, sizeof(*sr));
	if (rr == NULL || sr == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t j = 0; j < S && pos != 0 && ret == 0; j++) {
		size_t off = (size_t)j * slice, len = bytes - off < slice ? bytes - off : slice;

		ret = tp_comm_irecv(c, prev, (uint8_t *)recvbuf + off, len, &rr[j]);
	}
	for (uint32_t j = 0; j < S && ret == 0; j++) {
		size_t off = (size_t)j * slice, len = bytes - off < slice ? bytes - off : slice;

		if (pos != 0)
			ret = tp_comm_wait(c, &rr[j]);
		if (ret == 0 && pos != n - 1)
			ret = tp_comm_isend(c, next, (uint8_t *)recvbuf + off, len, &sr[j]);
	}
	for (uint32_t j = 0; j < S && ret == 0; j++)
		ret = tp_comm_wait(c, &sr[j]);
out:
	free(rr);
	free(sr);
	return ret < 0 ? fail(c, "broadcast", ret) : 0;
}

static int tp_alltoall_impl(struct tp_comm *c, const void *sendbuf, void *recvbuf, size_t count,
			    enum dev_dtype t)
{
	size_t bytes;
	int n = c->nranks;
	struct tp_req rr = {0}, sr = {0};
	int ret = check_args(c, t, DEV_SUM, "all-to-all");

	if (ret < 0)
		return ret;
	bytes = count * dev_dtype_size(t);
	if (sendbuf == recvbuf) {
		/* in place: send from a copy, the buffer is being received into */
		void *copy = tp_comm_scratch(c, bytes * (size_t)n);

		if (copy == NULL)
			return -ENOMEM;
		memcpy(copy, sendbuf, bytes * (size_t)n);
		sendbuf = copy;
	}
	for (int i = 1; i < n && ret == 0; i++) {
		int p = mod(c->rank - i, n);

		ret = tp_comm_irecv(c, p, (uint8_t *)recvbuf + bytes * (size_t)p, bytes, &rr);
	}
	for (int i = 1; i < n && ret == 0; i++) {
		int p = (c->rank + i) % n;

		ret = tp_comm_isend(c, p, (const uint8_t *)sendbuf + bytes * (size_t)p, bytes, &sr);
	}
	memcpy((uint8_t *)recvbuf + bytes * (size_t)c->rank,
	       (const uint8_t *)sendbuf + bytes * (size_t)c->rank, bytes);
	if (ret == 0)
		ret = tp_comm_wait(c, &rr);
	if (ret == 0)
		ret = tp_comm_wait(c, &sr);
	return ret < 0 ? fail(c, "all-to-all", ret) : 0;
}

static int tp_sendrecv_impl(struct tp_comm *c, const void *sendbuf, int sendpeer, void *recvbuf,
			    int recvpeer, size_t count, enum dev_dtype t)
{
	size_t bytes;
	struct tp_req rr = {0}, sr = {0};
	int ret = check_args(c, t, DEV_SUM, "send/recv");

	if (ret < 0)
		return ret;
	bytes = count * dev_dtype_size(t);
	if (sendpeer >= 0 && recvpeer >= 0 && sendbuf == recvbuf) {
		/* in place: send from a copy (a resend must not read new data) */
		void *copy = tp_comm_scratch(c, bytes);

		if (copy == NULL)
			return -ENOMEM;
		memcpy(copy, sendbuf, bytes);
		sendbuf = copy;
	}
	if (recvpeer >= 0)
		ret = tp_comm_irecv(c, recvpeer, recvbuf, bytes, &rr);
	if (ret == 0 && sendpeer >= 0)
		ret = tp_comm_isend(c, sendpeer, sendbuf, bytes, &sr);
	if (ret == 0)
		ret = tp_comm_wait(c, &rr);
	if (ret == 0)
		ret = tp_comm_wait(c, &sr);
	return ret < 0 ? fail(c, "send/recv", ret) : 0;
}

int tp_allreduce(struct tp_comm *c, const void *sendbuf, void *recvbuf, size_t count,
		 enum dev_dtype t, enum dev_redop op)
{
	int ret;

	tp_comm_event(c, ICE_EV_COLL_START, ICE_OP_ALLREDUCE, count, (int)t, (int)op, -1, -1);
	ret = tp_allreduce_impl(c, sendbuf, recvbuf, count, t, op);
	tp_comm_event(c, ICE_EV_COLL_END, ICE_OP_ALLREDUCE, count, (int)t, (int)op, -1, -1);
	return ret;
}

int tp_reduce_scatter(struct tp_comm *c, const void *sendbuf, void *recvbuf, size_t recvcount,
		      enum dev_dtype t, enum dev_redop op)
{
	int ret;

	tp_comm_event(c, ICE_EV_COLL_START, ICE_OP_REDUCESCATTER, recvcount * (size_t)c->nranks,
		      (int)t, (int)op, -1, -1);
	ret = tp_reduce_scatter_impl(c, sendbuf, recvbuf, recvcount, t, op);
	tp_comm_event(c, ICE_EV_COLL_END, ICE_OP_REDUCESCATTER, recvcount * (size_t)c->nranks,
		      (int)t, (int)op, -1, -1);
	return ret;
}

int tp_allgather(struct tp_comm *c, const void *sendbuf, void *recvbuf, size_t sendcount,
		 enum dev_dtype t)
{
	int ret;

	tp_comm_event(c, ICE_EV_COLL_START, ICE_OP_ALLGATHER, sendcount * (size_t)c->nranks, (int)t,
		      -1, -1, -1);
	ret = tp_allgather_impl(c, sendbuf, recvbuf, sendcount, t);
	tp_comm_event(c, ICE_EV_COLL_END, ICE_OP_ALLGATHER, sendcount * (size_t)c->nranks, (int)t,
		      -1, -1, -1);
	return ret;
}

/* Elements of all chunks, for the events (0 when counts is missing). */
static size_t counts_sum(const struct tp_comm *c, const size_t *counts)
{
	size_t sum = 0;

	for (int i = 0; counts != NULL && i < c->nranks; i++)
		sum += counts[i];
	return sum;
}

int tp_reduce_scatter_v(struct tp_comm *c, const void *sendbuf, void *recvbuf, const size_t *counts,
			enum dev_dtype t, enum dev_redop op)
{
	size_t total = counts_sum(c, counts);
	int ret;

	tp_comm_event(c, ICE_EV_COLL_START, ICE_OP_REDUCESCATTER, total, (int)t, (int)op, -1, -1);
	ret = tp_reduce_scatter_v_impl(c, sendbuf, recvbuf, counts, t, op);
	tp_comm_event(c, ICE_EV_COLL_END, ICE_OP_REDUCESCATTER, total, (int)t, (int)op, -1, -1);
	return ret;
}

int tp_allgather_v(struct tp_comm *c, const void *sendbuf, void *recvbuf, const size_t *counts,
		   enum dev_dtype t)
{
	size_t total = counts_sum(c, counts);
	int ret;

	tp_comm_event(c, ICE_EV_COLL_START, ICE_OP_ALLGATHER, total, (int)t, -1, -1, -1);
	ret = tp_allgather_v_impl(c, sendbuf, recvbuf, counts, t);
	tp_comm_event(c, ICE_EV_COLL_END, ICE_OP_ALLGATHER, total, (int)t, -1, -1, -1);
	return ret;
}

int tp_broadcast(struct tp_comm *c, const void *sendbuf, void *recvbuf, size_t count,
		 enum dev_dtype t, int root)
{
	int ret;

	tp_comm_event(c, ICE_EV_COLL_START, ICE_OP_BROADCAST, count, (int)t, -1, root, -1);
	ret = tp_broadcast_impl(c, sendbuf, recvbuf, count, t, root);
	tp_comm_event(c, ICE_EV_COLL_END, ICE_OP_BROADCAST, count, (int)t, -1, root, -1);
	return ret;
}

int tp_alltoall(struct tp_comm *c, const void *sendbuf, void *recvbuf, size_t count,
		enum dev_dtype t)
{
	int ret;

	tp_comm_event(c, ICE_EV_COLL_START, ICE_OP_ALLTOALL, count * (size_t)c->nranks, (int)t, -1,
		      -1, -1);
	ret = tp_alltoall_impl(c, sendbuf, recvbuf, count, t);
	tp_comm_event(c, ICE_EV_COLL_END, ICE_OP_ALLTOALL, count * (size_t)c->nranks, (int)t, -1,
		      -1, -1);
	return ret;
}

int tp_sendrecv(struct tp_comm *c, const void *sendbuf, int sendpeer, void *recvbuf, int recvpeer,
		size_t count, enum dev_dtype t)
{
	int ret;

	tp_comm_event(c, ICE_EV_COLL_START, ICE_OP_SENDRECV, count, (int)t, -1, -1, sendpeer);
	ret = tp_sendrecv_impl(c, sendbuf, sendpeer, recvbuf, recvpeer, count, t);
	tp_comm_event(c, ICE_EV_COLL_END, ICE_OP_SENDRECV, count, (int)t, -1, -1, sendpeer);
	return ret;
}

/* The agent hears of a posted message as a send/recv start, as from NCCL's
 * ncclSend / ncclRecv; the end is not reported (only a wait would know it). */
static int check_p2p(struct tp_comm *c, const void *buf, size_t count, enum dev_dtype t, int peer,
		     struct tp_req *r, const char *what)
{
	if (c == NULL || r == NULL || (count > 0 && buf == NULL) || (unsigned)t >= DEV_DTYPE_MAX ||
	    peer < 0 || peer >= c->nranks || peer == c->rank) {
		ice_err(ICE_SUB_COLL, "%s: bad arguments (count %zu, datatype %d, peer %d)", what,
			count, t, peer);
		return -EINVAL;
	}
	return 0;
}

int tp_isend(struct tp_comm *c, const void *buf, size_t count, enum dev_dtype t, int peer,
	     struct tp_req *r)
{
	int ret = check_p2p(c, buf, count, t, peer, r, "isend");

	if (ret < 0)
		return ret;
	tp_comm_event(c, ICE_EV_COLL_START, ICE_OP_SENDRECV, count, (int)t, -1, -1, peer);
	ret = tp_comm_isend(c, peer, buf, count * dev_dtype_size(t), r);
	return ret < 0 ? fail(c, "isend", ret) : 0;
}

int tp_irecv(struct tp_comm *c, void *buf, size_t count, enum dev_dtype t, int peer,
	     struct tp_req *r)
{
	int ret = check_p2p(c, buf, count, t, peer, r, "irecv");

	if (ret < 0)
		return ret;
	tp_comm_event(c, ICE_EV_COLL_START, ICE_OP_SENDRECV, count, (int)t, -1, -1, -1);
	ret = tp_comm_irecv(c, peer, buf, count * dev_dtype_size(t), r);
	return ret < 0 ? fail(c, "irecv", ret) : 0;
}
