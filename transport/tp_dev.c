// SPDX-License-Identifier: Apache-2.0
/*
 * tp_dev: collectives on buffers of any memory kind, for communicators
 * whose ranks sit on different kinds (see tp_dev.h).
 *
 * All-reduce is a ring reduce-scatter followed by a ring all-gather, run
 * the same way on every rank whatever its kind, over tp_sendrecv on pinned
 * host buffers. The buffer is cut into n chunks of cmax = ceil(count / n)
 * elements (chunk j is [j * cmax, min(count, (j + 1) * cmax)), the last ones
 * may be short or empty); every message carries a whole padded chunk, so
 * both sides of a step always agree on its size. Reduce-scatter step s
 * (0 .. n-2): rank r sends its partial of chunk r - s to r + 1 and reduces
 * the partial of chunk r - s - 1 received from r - 1 with its own data;
 * after n - 1 steps it owns the full chunk o = r + 1, finishes it (AVG's
 * division) and the all-gather passes the owned chunks around the ring.
 * Every final element is thus computed once, by its owner, and copied to
 * everyone: floats are identical on all ranks.
 *
 * Where a rank stages and reduces is its own choice, per call:
 *  - TP_STAGE_HOST: its buffer is copied once into the pinned staging buffer
 *    hbuf (padded layout), the ring runs there with the CPU reducing
 *    (dst = own partial, src = received), chunks go back to the device as
 *    the all-gather delivers them;
 *  - TP_STAGE_DEVICE: only travelling chunks are staged. A received chunk is
 *    copied into the device scratch dtmp and reduced there by the device,
 *    dtmp = received op own (the reduce needs a writable destination and the
 *    send buffer is const; every op is commutative, only the NaN payload or
 *    the sign of a zero tie may differ from the host order), and the next
 *    step sends dtmp. The owned chunk is copied to hbuf for the all-gather.
 * In both, the all-gather's received chunks are copied to the device with
 * copy_async while the ring goes on (copy_wait at the end).
 *
 * Host ranks of a mixed communicator run the same ring (TP_STAGE_HOST);
 * communicators of host ranks only go straight to tp_allreduce & co.
 * All-gather is the same ring on hbuf; send/recv is staged in pieces of
 * TP_DEV_SR_CHUNK bytes (the same on every rank, so pieces pair up), in
 * hsend / hrecv, which hold min(max_bytes, TP_DEV_SR_CHUNK) or more: a
 * message over max_bytes is refused (-EMSGSIZE) like the collectives'.
 *
 * A failure in the middle of a collective leaves the communicator unusable
 * (peers wait for messages that will not come), as with tp_allreduce.
 */
#include "tp_dev.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ice_log.h"

#define TP_DEV_SR_CHUNK	 (1u << 20) /* send/recv staging piece, bytes */
#define TP_DEV_KINDS_OOB 26	    /* kinds per out-of-band round: 2 bits each in a double */
#define TP_DEV_STEP_NS	 8000.0	    /* fixed cost of one staged device step (launch + sync) */

struct tp_dev_comm {
	struct tp_comm *c;
	const struct dev_mem_ops *ops; /* this rank's kind */
	int n, rank;
	enum dev_mem_kind *kinds; /* every rank's kind */
	bool all_host;
	size_t max_bytes;
	/* staging (NULL when all_host): from ops->host_alloc (pinned) */
	uint8_t *hbuf; /* the whole buffer, padded to n chunks */
	size_t hbuf_len;
	uint8_t *hsend, *hrecv; /* one chunk / one send-recv piece each */
	size_t hchunk_len;
	void *dtmp;			    /* device kinds: one chunk of device scratch */
	double h2d, d2h, dev_red, host_red; /* GB/s */
	enum tp_stage last;
};

const char *tp_stage_name(enum tp_stage s)
{
	switch (s) {
	case TP_STAGE_AUTO:
		return "auto";
	case TP_STAGE_HOST:
		return "host";
	case TP_STAGE_DEVICE:
		return "device";
	}
	return "?";
}

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* Every rank learns every rank's kind: TP_DEV_KINDS_OOB ranks per round of
 * tp_comm_oob_sum, each contributing kind << 2 * (rank - base), exact in a
 * double's 53-bit mantissa. */
static int exchange_kinds(struct tp_dev_comm *d)
{
	for (int base = 0; base < d->n; base += TP_DEV_KINDS_OOB) {
		double v = 0;
		uint64_t bits;
		int ret;

		if (d->rank >= base && d->rank < base + TP_DEV_KINDS_OOB)
			v = (double)((uint64_t)d->ops->kind << (2 * (d->rank - base)));
		ret = tp_comm_oob_sum(d->c, &v);
		if (ret < 0)
			return ret;
		bits = (uint64_t)v;
		for (int r = base; r < d->n && r < base + TP_DEV_KINDS_OOB; r++)
			d->kinds[r] = (enum dev_mem_kind)((bits >> (2 * (r - base))) & 3);
	}
	return 0;
}

struct tp_dev_comm *tp_dev_comm_new(struct tp_comm *c, const struct dev_mem_ops *ops,
				    size_t max_bytes)
{
	struct tp_dev_comm *d;
	int ret;

	if (c == NULL || ops == NULL || (unsigned)ops->kind >= DEV_MEM_KIND_MAX) {
		errno = EINVAL;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return NULL;
	d->c = c;
	d->ops = ops;
	d->n = tp_comm_nranks(c);
	d->rank = tp_comm_rank(c);
	d->max_bytes = max_bytes;
	d->h2d = 12;
	d->d2h = 12;
	d->dev_red = 200;
	d->host_red = 4;
	d->last = TP_STAGE_HOST;
	d->kinds = calloc((size_t)d->n, sizeof(*d->kinds));
	if (d->kinds == NULL) {
		ret = -ENOMEM;
		goto err_free;
	}
	ret = exchange_kinds(d);
	if (ret < 0) {
		ice_err(ICE_SUB_COLL, "rank %d: exchanging memory kinds failed: %d", d->rank, ret);
		goto err_kinds;
	}
	d->all_host = true;
	for (int r = 0; r < d->n; r++)
		d->all_host = d->all_host && d->kinds[r] == DEV_MEM_HOST;
	if (d->all_host)
		return d;

	/* padding: at most n - 1 elements of at most 8 bytes */
	d->hbuf_len = round_up(max_bytes + (size_t)d->n * 8, 64);
	d->hchunk_len = max_bytes / (size_t)d->n + 8;
	if (d->hchunk_len < (max_bytes < TP_DEV_SR_CHUNK ? max_bytes : TP_DEV_SR_CHUNK))
		d->hchunk_len = max_bytes < TP_DEV_SR_CHUNK ? max_bytes : TP_DEV_SR_CHUNK;
	d->hchunk_len = round_up(d->hchunk_len, 64);
	d->hbuf = ops->host_alloc(d->hbuf_len);
	if (d->hbuf == NULL)
		goto err_errno;
	d->hsend = ops->host_alloc(d->hchunk_len);
	if (d->hsend == NULL)
		goto err_hbuf;
	d->hrecv = ops->host_alloc(d->hchunk_len);
	if (d->hrecv == NULL)
		goto err_hsend;
	/* padding is sent but never used: keep it defined */
	memset(d->hbuf, 0, d->hbuf_len);
	memset(d->hsend, 0, d->hchunk_len);
	if (ops->kind != DEV_MEM_HOST) {
		d->dtmp = ops->alloc(d->hchunk_len);
		if (d->dtmp == NULL)
			goto err_hrecv;
	}
	return d;

err_hrecv:
	ret = -errno;
	ops->host_free(d->hrecv);
	errno = -ret;
err_hsend:
	ret = -errno;
	ops->host_free(d->hsend);
	errno = -ret;
err_hbuf:
	ret = -errno;
	ops->host_free(d->hbuf);
	errno = -ret;
err_errno:
	ret = -errno;
	ice_err(ICE_SUB_COLL, "rank %d: %s staging for %zu bytes: out of memory", d->rank,
		ops->name, max_bytes);
err_kinds:
	free(d->kinds);
err_free:
	free(d);
	errno = -ret;
	return NULL;
}

void tp_dev_comm_staging(const struct tp_dev_comm *d, size_t *host, size_t *dev)
{
	*host = d->all_host ? 0 : d->hbuf_len + 2 * d->hchunk_len;
	*dev = d->all_host || d->ops->kind == DEV_MEM_HOST ? 0 : d->hchunk_len;
}

void tp_dev_comm_free(struct tp_dev_comm *d)
{
	if (d == NULL)
		return;
	if (d->dtmp != NULL)
		d->ops->free(d->dtmp);
	d->ops->host_free(d->hrecv);
	d->ops->host_free(d->hsend);
	d->ops->host_free(d->hbuf);
	free(d->kinds);
	free(d);
}

struct tp_comm *tp_dev_comm_base(struct tp_dev_comm *d)
{
	return d->c;
}

const struct dev_mem_ops *tp_dev_comm_ops(const struct tp_dev_comm *d)
{
	return d->ops;
}

enum dev_mem_kind tp_dev_comm_kind(const struct tp_dev_comm *d, int rank)
{
	return rank >= 0 && rank < d->n ? d->kinds[rank] : DEV_MEM_KIND_MAX;
}

void tp_dev_set_bw(struct tp_dev_comm *d, double h2d_gbps, double d2h_gbps, double dev_reduce_gbps,
		   double host_reduce_gbps)
{
	if (h2d_gbps > 0)
		d->h2d = h2d_gbps;
	if (d2h_gbps > 0)
		d->d2h = d2h_gbps;
	if (dev_reduce_gbps > 0)
		d->dev_red = dev_reduce_gbps;
	if (host_reduce_gbps > 0)
		d->host_red = host_reduce_gbps;
}

enum tp_stage tp_dev_last_stage(const struct tp_dev_comm *d)
{
	return d->last;
}

/* ---- all-reduce ---- */

/* Estimated time (ns) of this rank's staging and reduction work. The
 * network part is the same either way and left out. */
static enum tp_stage choose_stage(const struct tp_dev_comm *d, size_t bytes)
{
	double b = (double)bytes, f = (double)(d->n - 1) / d->n;
	/* whole buffer down once, the ring's chunks back up, CPU reductions */
	double host = b / d->d2h + b / d->h2d + f * b / d->host_red;
	/* travelling chunks down and up, device reductions, the owned chunk
	 * down and every chunk up in the all-gather, a fixed cost per step */
	double dev = f * b / d->d2h + f * b / d->h2d + f * b / d->dev_red + b / d->n / d->d2h +
		     b / d->h2d + (d->n - 1) * TP_DEV_STEP_NS;

	return dev < host ? TP_STAGE_DEVICE : TP_STAGE_HOST;
}

struct ring {
	size_t count, cmax, size, cb; /* elements, chunk elements, element and chunk bytes */
	int left, right;
};

static size_t chunk_len(const struct ring *g, int j)
{
	size_t lo = (size_t)j * g->cmax, hi = lo + g->cmax;

	if (lo >= g->count)
		return 0;
	return (hi < g->count ? hi : g->count) - lo;
}

static int mod(int a, int n)
{
	return ((a % n) + n) % n;
}

/* One ring step: send sbuf (chunk js) right, receive into rbuf (chunk jr)
 * from the left; an empty chunk is skipped on both of its sides. */
static int ring_step(struct tp_dev_comm *d, const struct ring *g, const void *sbuf, int js,
		     void *rbuf, int jr, enum dev_dtype t)
{
	bool s = chunk_len(g, js) > 0, r = chunk_len(g, jr) > 0;

	if (!s && !r)
		return 0;
	return tp_sendrecv(d->c, s ? sbuf : NULL, s ? g->right : -1, r ? rbuf : NULL,
			   r ? g->left : -1, g->cmax, t);
}

/* Reduce-scatter with the CPU on hbuf (holding this rank's data, padded). */
static int rs_host(struct tp_dev_comm *d, const struct ring *g, enum dev_dtype t, enum dev_redop op)
{
	for (int s = 0; s < d->n - 1; s++) {
		int js = mod(d->rank - s, d->n), jr = mod(d->rank - s - 1, d->n);
		int ret = ring_step(d, g, d->hbuf + (size_t)js * g->cb, js, d->hrecv, jr, t);

		if (ret < 0)
			return ret;
		dev_reduce(d->hbuf + (size_t)jr * g->cb, d->hrecv, chunk_len(g, jr), t, op);
	}
	return 0;
}

/* Reduce-scatter with the device: partials in dtmp; the owned chunk ends
 * in hbuf. */
static int rs_device(struct tp_dev_comm *d, const struct ring *g, const uint8_t *sendbuf,
		     enum dev_dtype t, enum dev_redop op)
{
	const struct dev_mem_ops *o = d->ops;
	int own = mod(d->rank + 1, d->n), ret;
	const uint8_t *src = sendbuf + (size_t)d->rank * g->cb; /* step 0 sends own data */

	for (int s = 0; s < d->n - 1; s++) {
		int js = mod(d->rank - s, d->n), jr = mod(d->rank - s - 1, d->n);
		size_t ls = chunk_len(g, js) * g->size, lr = chunk_len(g, jr) * g->size;

		ret = o->to_host(d->hsend, src, ls);
		if (ret == 0)
			ret = ring_step(d, g, d->hsend, js, d->hrecv, jr, t);
		if (ret == 0)
			ret = o->from_host(d->dtmp, d->hrecv, lr);
		if (ret == 0 && lr > 0)
			ret = o->reduce(d->dtmp, sendbuf + (size_t)jr * g->cb, lr / g->size, t, op);
		if (ret < 0)
			return ret;
		src = d->dtmp;
	}
	if (op == DEV_AVG && d->n > 1) {
		ret = o->scale_div(d->dtmp, chunk_len(g, own), t, d->n);
		if (ret < 0)
			return ret;
	}
	/* n == 1: src is still the send buffer */
	return o->to_host(d->hbuf + (size_t)own * g->cb, src, chunk_len(g, own) * g->size);
}

/* All-gather of the owned chunks through hbuf; each chunk goes to recvbuf
 * as soon as this rank has it (copy_async; a plain copy on host ranks). */
static int ag_ring(struct tp_dev_comm *d, const struct ring *g, uint8_t *recvbuf, enum dev_dtype t)
{
	const struct dev_mem_ops *o = d->ops;
	int own = mod(d->rank + 1, d->n), ret, ret2;

	ret = o->copy_async(recvbuf + (size_t)own * g->cb, d->hbuf + (size_t)own * g->cb,
			    chunk_len(g, own) * g->size, DEV_COPY_FROM_HOST);
	for (int s = 0; s < d->n - 1 && ret == 0; s++) {
		int js = mod(own - s, d->n), jr = mod(own - s - 1, d->n);

		ret = ring_step(d, g, d->hbuf + (size_t)js * g->cb, js,
				d->hbuf + (size_t)jr * g->cb, jr, t);
		if (ret == 0)
			ret = o->copy_async(recvbuf + (size_t)jr * g->cb,
					    d->hbuf + (size_t)jr * g->cb,
					    chunk_len(g, jr) * g->size, DEV_COPY_FROM_HOST);
	}
	ret2 = o->copy_wait();
	return ret < 0 ? ret : ret2;
}

static int check_args(struct tp_dev_comm *d, const void *sendbuf, void *recvbuf, size_t bytes,
		      enum dev_dtype t)
{
	if (d == NULL || (unsigned)t >= DEV_DTYPE_MAX)
		return -EINVAL;
	if (bytes > 0 && (sendbuf == NULL || recvbuf == NULL))
		return -EINVAL;
	if (!d->all_host && bytes > d->max_bytes) {
		ice_err(ICE_SUB_COLL, "rank %d: %zu bytes exceed the communicator's max_bytes %zu",
			d->rank, bytes, d->max_bytes);
		return -EMSGSIZE;
	}
	return 0;
}

int tp_dev_allreduce(struct tp_dev_comm *d, const void *sendbuf, void *recvbuf, size_t count,
		     enum dev_dtype t, enum dev_redop op, enum tp_stage st)
{
	size_t size = dev_dtype_size(t);
	struct ring g;
	int ret = check_args(d, sendbuf, recvbuf, count * size, t);

	if (ret < 0)
		return ret;
	if ((unsigned)op >= DEV_REDOP_MAX || (unsigned)st > TP_STAGE_DEVICE)
		return -EINVAL;
	if (d->ops->kind == DEV_MEM_HOST)
		st = TP_STAGE_HOST;
	else if (st == TP_STAGE_AUTO)
		st = choose_stage(d, count * size);
	d->last = st;
	if (d->all_host)
		return tp_allreduce(d->c, sendbuf, recvbuf, count, t, op);
	if (count == 0)
		return 0;

	g.count = count;
	g.size = size;
	g.cmax = (count + (size_t)d->n - 1) / (size_t)d->n;
	g.cb = g.cmax * size;
	g.left = mod(d->rank - 1, d->n);
	g.right = mod(d->rank + 1, d->n);
	if (st == TP_STAGE_HOST) {
		int own = mod(d->rank + 1, d->n);

		ret = d->ops->to_host(d->hbuf, sendbuf, count * size);
		if (ret == 0)
			ret = rs_host(d, &g, t, op);
		if (ret == 0 && op == DEV_AVG)
			dev_scale_div(d->hbuf + (size_t)own * g.cb, chunk_len(&g, own), t, d->n);
	} else {
		ret = rs_device(d, &g, sendbuf, t, op);
	}
	if (ret == 0)
		ret = ag_ring(d, &g, recvbuf, t);
	if (ret < 0)
		ice_err(ICE_SUB_COLL, "rank %d: all-reduce of %zu %s (%s staging) failed: %d",
			d->rank, count, dev_dtype_name(t), tp_stage_name(st), ret);
	return ret;
}

/* ---- all-gather, send/recv ---- */

int tp_dev_allgather(struct tp_dev_comm *d, const void *sendbuf, void *recvbuf, size_t sendcount,
		     enum dev_dtype t)
{
	size_t size = dev_dtype_size(t), sb = sendcount * size;
	const struct dev_mem_ops *o;
	uint8_t *rb = recvbuf;
	int ret = check_args(d, sendbuf, recvbuf, sb * (size_t)(d != NULL ? d->n : 1), t), ret2;

	if (ret < 0)
		return ret;
	if (d->all_host)
		return tp_allgather(d->c, sendbuf, recvbuf, sendcount, t);
	if (sendcount == 0)
		return 0;
	o = d->ops;
	/* own block: into hbuf (the ring's source), then into place */
	ret = o->to_host(d->hbuf + (size_t)d->rank * sb, sendbuf, sb);
	if (ret == 0)
		ret = o->copy_async(rb + (size_t)d->rank * sb, d->hbuf + (size_t)d->rank * sb, sb,
				    DEV_COPY_FROM_HOST);
	for (int s = 0; s < d->n - 1 && ret == 0; s++) {
		int js = mod(d->rank - s, d->n), jr = mod(d->rank - s - 1, d->n);

		ret = tp_sendrecv(d->c, d->hbuf + (size_t)js * sb, mod(d->rank + 1, d->n),
				  d->hbuf + (size_t)jr * sb, mod(d->rank - 1, d->n), sendcount, t);
		if (ret == 0)
			ret = o->copy_async(rb + (size_t)jr * sb, d->hbuf + (size_t)jr * sb, sb,
					    DEV_COPY_FROM_HOST);
	}
	ret2 = o->copy_wait();
	if (ret == 0)
		ret = ret2;
	if (ret < 0)
		ice_err(ICE_SUB_COLL, "rank %d: all-gather of %zu %s failed: %d", d->rank,
			sendcount, dev_dtype_name(t), ret);
	return ret;
}

int tp_dev_sendrecv(struct tp_dev_comm *d, const void *sendbuf, int sendpeer, void *recvbuf,
		    int recvpeer, size_t count, enum dev_dtype t)
{
	size_t size = dev_dtype_size(t), per;
	const struct dev_mem_ops *o;
	bool staged;

	if (d == NULL || (unsigned)t >= DEV_DTYPE_MAX || sendpeer >= d->n || recvpeer >= d->n ||
	    (count > 0 &&
	     ((sendpeer >= 0 && sendbuf == NULL) || (recvpeer >= 0 && recvbuf == NULL))))
		return -EINVAL;
	if (d->all_host)
		return tp_sendrecv(d->c, sendbuf, sendpeer, recvbuf, recvpeer, count, t);
	/* the staging (hsend / hrecv pieces, hbuf) is sized for max_bytes: a
	 * larger message would run past it */
	if (count > d->max_bytes / size) {
		ice_err(ICE_SUB_COLL,
			"rank %d: send/recv of %zu %s exceeds the communicator's "
			"max_bytes %zu",
			d->rank, count, dev_dtype_name(t), d->max_bytes);
		return -EMSGSIZE;
	}
	o = d->ops;
	if (sendpeer == d->rank || recvpeer == d->rank) {
		/* to itself (a ring of one): a local copy, staged through hbuf */
		size_t bytes = count * size;
		int ret;

		if (sendpeer != recvpeer || bytes > d->hbuf_len)
			return -EINVAL;
		ret = o->to_host(d->hbuf, sendbuf, bytes);
		return ret < 0 ? ret : o->from_host(recvbuf, d->hbuf, bytes);
	}
	staged = o->kind != DEV_MEM_HOST;
	/* pieces of the same size on every rank, so they pair up */
	per = TP_DEV_SR_CHUNK / size;
	for (size_t off = 0; off < count; off += per) {
		size_t m = count - off < per ? count - off : per, bytes = m * size;
		const uint8_t *sp = sendpeer >= 0 ? (const uint8_t *)sendbuf + off * size : NULL;
		uint8_t *rp = recvpeer >= 0 ? (uint8_t *)recvbuf + off * size : NULL;
		int ret = 0;

		if (staged && sendpeer >= 0)
			ret = o->to_host(d->hsend, sp, bytes);
		if (ret == 0)
			ret = tp_sendrecv(d->c, staged ? d->hsend : sp, sendpeer,
					  staged ? d->hrecv : rp, recvpeer, m, t);
		if (ret == 0 && staged && recvpeer >= 0)
			ret = o->from_host(rp, d->hrecv, bytes);
		if (ret < 0) {
			ice_err(ICE_SUB_COLL, "rank %d: send/recv of %zu %s failed: %d", d->rank,
				count, dev_dtype_name(t), ret);
			return ret;
		}
	}
	return 0;
}

/* Post count elements as tp_dev_sendrecv's peer expects them: whole on an
 * all-host communicator, else in its TP_DEV_SR_CHUNK pieces. */
static int dev_post(struct tp_dev_comm *d, void *buf, size_t count, enum dev_dtype t, int peer,
		    struct tp_req *r, bool send)
{
	size_t size, per;
	int ret = 0;

	if (d == NULL || (unsigned)t >= DEV_DTYPE_MAX)
		return -EINVAL;
	if (d->ops->kind != DEV_MEM_HOST)
		return -EOPNOTSUPP;
	if (d->all_host)
		return send ? tp_isend(d->c, buf, count, t, peer, r)
			    : tp_irecv(d->c, buf, count, t, peer, r);
	size = dev_dtype_size(t);
	if (count > d->max_bytes / size)
		return -EMSGSIZE; /* the staged peer could not take it */
	per = TP_DEV_SR_CHUNK / size;
	for (size_t off = 0; ret == 0 && off < count; off += per) {
		size_t m = count - off < per ? count - off : per;
		uint8_t *p = (uint8_t *)buf + off * size;

		ret = send ? tp_isend(d->c, p, m, t, peer, r) : tp_irecv(d->c, p, m, t, peer, r);
	}
	return ret;
}

int tp_dev_isend(struct tp_dev_comm *d, const void *buf, size_t count, enum dev_dtype t, int peer,
		 struct tp_req *r)
{
	return dev_post(d, (void *)buf, count, t, peer, r, true);
}

int tp_dev_irecv(struct tp_dev_comm *d, void *buf, size_t count, enum dev_dtype t, int peer,
		 struct tp_req *r)
{
	return dev_post(d, buf, count, t, peer, r, false);
}
