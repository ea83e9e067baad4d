// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the raw ceiling of the fabric (debugfs "blast").
 *
 * Writing "SRC DST SIZE COUNT" (or key=value: src= dst= size= count= ms=
 * window=) to /sys/kernel/debug/softib/blast sends COUNT UD packets of SIZE
 * payload bytes from a UD QP on device SRC to a UD QP on device DST through
 * the ordinary verbs (ib_post_send, the fabric's tx work, softib_rx, the
 * receive CQ), with no IP stack and no ULP, keeping at most WINDOW packets
 * in flight and reposting each receive buffer as soon as it completes. It
 * stops after COUNT packets or MS milliseconds, whichever comes first.
 * Reading the file gives the last result:
 *   packets N / bytes N / ns N / pps N / bytes_per_s N / size N / sent N / lost N
 * That is the fastest any IPoIB driver could move packets of that size on
 * this fabric. Everything the blast creates is destroyed before the write
 * returns; one blast runs at a time (-EBUSY otherwise).
 *
 * Two keys test the HCA model rather than measure it:
 *   rx=K    the receiver posts only K buffers and never reposts them; the
 *           sender is paced by its send completions alone, so the rest of
 *           the packets find an empty receive queue (dropped, drop_no_rwqe)
 *   fill=1  post sends without waiting for anything until post_send fails
 *           (a full send queue: -ENOMEM); "full_at" gives how many it took
 * and "elapsed_ns" the time from the first post to the end of the blast.
 *   reset=1 after the blast the receiver's QP goes to ERR, which flushes its
 *           posted receives into its CQ; one of them is polled
 *           ("reset_flushed" 1 when it was a flush), then the QP goes to
 *           RESET, which takes the rest off the CQ as mlx5 does for a kernel
 *           QP: "after_reset" counts what a poll still finds (0)
 *   keys=1  no blast: the HCA's key checks (softib_sges_ok). A send whose
 *           SGE has lkey 0, no key (a PD's is the reserved one), completes
 *           with a local protection error and stops the sender's UD send
 *           queue ("key_send_status", "key_send_state": SQE); moved back to
 *           RTS, the sender's next packet finds a receive whose SGE has
 *           lkey 0: a local protection error there too, the receiver's QP
 *           in ERR ("key_recv_status", "key_recv_state"); "local_dma_lkey"
 *           is the PDs' key
 *   scribble=1  no blast: COUNT sends (at most the window) of bytes 0x5a are
 *           posted to a device whose sends are stalled (send_stall_ms, set
 *           by the caller), then the buffer is rewritten with 0xa5 before
 *           any completes, as a buggy ULP would; an HCA reads the data when
 *           it sends, so the receiver gets 0xa5 ("scribble_new", and
 *           "scribble_old" those that still had 0x5a) and softib counts each
 *           in send_data_changed (read at post time until 2026-12-08: 0x5a)
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <rdma/ib_verbs.h>

#include "softib.h"

#define SOFTIB_BLAST_QKEY	0x0b1a57edU
#define SOFTIB_BLAST_MAX_MS	10000U		/* longest blast */
#define SOFTIB_BLAST_DRAIN_MS	500U		/* wait for stragglers */
#define SOFTIB_BLAST_MAX_WIN	1024U
#define SOFTIB_BLAST_POLL	16

/* serializes blasts and protects softib_blast_last */
static DEFINE_MUTEX(softib_blast_lock);

struct softib_blast_result {
	u64 packets, bytes, ns, sent, elapsed_ns, full_at, after_reset;
	int full_err, reset_flushed;
	int key_send_status, key_send_state, key_recv_status, key_recv_state;
	u32 size, local_dma_lkey;
	u32 scribble_new, scribble_old;
};

static struct softib_blast_result softib_blast_last;

/* One end of the blast: a UD QP with its own PD and CQs on one device. */
struct softib_blast_end {
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct ib_cq *scq, *rcq;
	struct ib_qp *qp;
};

struct softib_blast {
	struct softib_blast_end src, dst;
	struct ib_ah *ah;
	u32 size, window, ms;
	u32 rx;			/* receive buffers, never reposted; 0: window, reposted */
	bool fill;		/* post until the send queue is full */
	bool reset;		/* the RESET probe after the blast */
	bool keys;		/* the key probe instead of a blast */
	bool scribble;		/* the send-data probe instead of a blast */
	u64 count;
	void *sbuf;		/* one send buffer, copied at post time */
	void **rbufs;		/* window receive buffers of GRH + size */
	u64 *rmaps;
};

static int softib_blast_qp_rts(struct ib_qp *qp)
{
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qkey = SOFTIB_BLAST_QKEY,
	};
	int err;

	err = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY);
	if (err)
		return err;
	attr.qp_state = IB_QPS_RTR;
	err = ib_modify_qp(qp, &attr, IB_QP_STATE);
	if (err)
		return err;
	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = 0;
	return ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN);
}

static void softib_blast_end_destroy(struct softib_blast_end *e)
{
	if (!IS_ERR_OR_NULL(e->qp))
		ib_destroy_qp(e->qp);
	if (!IS_ERR_OR_NULL(e->rcq))
		ib_destroy_cq(e->rcq);
	if (!IS_ERR_OR_NULL(e->scq))
		ib_destroy_cq(e->scq);
	if (!IS_ERR_OR_NULL(e->pd))
		ib_dealloc_pd(e->pd);
	e->qp = NULL;
	e->rcq = NULL;
	e->scq = NULL;
	e->pd = NULL;
}

static int softib_blast_end_create(struct softib_blast_end *e, u32 window)
{
	struct ib_cq_init_attr cq_attr = { .cqe = window + 1 };
	struct ib_qp_init_attr qp_attr = {};
	int err;

	e->pd = ib_alloc_pd(e->ibdev, 0);
	if (IS_ERR(e->pd))
		return PTR_ERR(e->pd);
	e->scq = ib_create_cq(e->ibdev, NULL, NULL, NULL, &cq_attr);
	if (IS_ERR(e->scq))
		return PTR_ERR(e->scq);
	e->rcq = ib_create_cq(e->ibdev, NULL, NULL, NULL, &cq_attr);
	if (IS_ERR(e->rcq))
		return PTR_ERR(e->rcq);

	qp_attr.send_cq = e->scq;
	qp_attr.recv_cq = e->rcq;
	qp_attr.cap.max_send_wr = window;
	qp_attr.cap.max_recv_wr = window;
	qp_attr.cap.max_send_sge = 1;
	qp_attr.cap.max_recv_sge = 1;
	qp_attr.sq_sig_type = IB_SIGNAL_ALL_WR;
	qp_attr.qp_type = IB_QPT_UD;
	e->qp = ib_create_qp(e->pd, &qp_attr);
	if (IS_ERR(e->qp))
		return PTR_ERR(e->qp);
	err = softib_blast_qp_rts(e->qp);
	return err;
}

static int softib_blast_post_recv(struct softib_blast *b, u32 i, u32 lkey)
{
	struct ib_sge sge = {
		.addr = b->rmaps[i],
		.length = SOFTIB_GRH_BYTES + b->size,
		.lkey = lkey,
	};
	struct ib_recv_wr wr = {
		.wr_id = i,
		.sg_list = &sge,
		.num_sge = 1,
	};

	return ib_post_recv(b->dst.qp, &wr, NULL);
}

static int softib_blast_post_send(struct softib_blast *b, u64 seq, u64 smap, u32 lkey)
{
	struct ib_sge sge = {
		.addr = smap,
		.length = b->size,
		.lkey = lkey,
	};
	struct ib_ud_wr wr = {
		.wr = {
			.wr_id = seq,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IB_WR_SEND,
			.send_flags = IB_SEND_SIGNALED,
		},
		.ah = b->ah,
		.remote_qpn = b->dst.qp->qp_num,
		.remote_qkey = SOFTIB_BLAST_QKEY,
	};

	return ib_post_send(b->src.qp, &wr.wr, NULL);
}

static int softib_blast_alloc_bufs(struct softib_blast *b)
{
	struct ib_device *dev = b->dst.ibdev;
	u32 i;

	b->sbuf = kzalloc(b->size, GFP_KERNEL);
	b->rbufs = kcalloc(b->window, sizeof(*b->rbufs), GFP_KERNEL);
	b->rmaps = kcalloc(b->window, sizeof(*b->rmaps), GFP_KERNEL);
	if (!b->sbuf || !b->rbufs || !b->rmaps)
		return -ENOMEM;
	memset(b->sbuf, 0x5a, b->size);
	for (i = 0; i < b->window; i++) {
		b->rbufs[i] = kmalloc(SOFTIB_GRH_BYTES + b->size, GFP_KERNEL);
		if (!b->rbufs[i])
			return -ENOMEM;
		b->rmaps[i] = ib_dma_map_single(dev, b->rbufs[i], SOFTIB_GRH_BYTES + b->size,
						DMA_FROM_DEVICE);
		if (ib_dma_mapping_error(dev, b->rmaps[i])) {
			kfree(b->rbufs[i]);
			b->rbufs[i] = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

static void softib_blast_free_bufs(struct softib_blast *b)
{
	u32 i;

	for (i = 0; b->rbufs && i < b->window; i++) {
		if (!b->rbufs[i])
			continue;
		ib_dma_unmap_single(b->dst.ibdev, b->rmaps[i], SOFTIB_GRH_BYTES + b->size,
				    DMA_FROM_DEVICE);
		kfree(b->rbufs[i]);
	}
	kfree(b->rmaps);
	kfree(b->rbufs);
	kfree(b->sbuf);
}

/*
 * The measured loop: keep the window full, reap send completions, count and
 * repost receive completions. Caller owns every resource in b.
 */
static int softib_blast_run(struct softib_blast *b, struct softib_blast_result *res)
{
	struct ib_wc wcs[SOFTIB_BLAST_POLL];
	u64 sent = 0, rcvd = 0, good = 0, bytes = 0, scomp = 0, smap;
	ktime_t t0, t_last, deadline, drain_end;
	bool draining = false;
	int n, k, err = 0;

	smap = ib_dma_map_single(b->src.ibdev, b->sbuf, b->size, DMA_TO_DEVICE);
	if (ib_dma_mapping_error(b->src.ibdev, smap))
		return -ENOMEM;

	t0 = ktime_get();
	t_last = t0;
	deadline = ktime_add_ms(t0, b->ms);
	drain_end = deadline;
	for (;;) {
		bool progress = false;

		while (!draining && sent < b->count &&
		       (b->fill || sent - scomp < b->window) &&
		       (b->rx || b->fill || sent - rcvd < b->window)) {
			err = softib_blast_post_send(b, sent, smap, b->src.pd->local_dma_lkey);
			if (err && b->fill && !res->full_err) {
				/* the send queue is full: stop here and drain */
				res->full_err = err;
				res->full_at = sent;
				err = 0;
				draining = true;
				drain_end = ktime_add_ms(ktime_get(), SOFTIB_BLAST_DRAIN_MS);
				break;
			}
			if (err)
				goto out;
			sent++;
			progress = true;
		}
		while ((n = ib_poll_cq(b->src.scq, ARRAY_SIZE(wcs), wcs)) > 0) {
			scomp += n;
			progress = true;
		}
		while ((n = ib_poll_cq(b->dst.rcq, ARRAY_SIZE(wcs), wcs)) > 0) {
			for (k = 0; k < n; k++) {
				if (wcs[k].status == IB_WC_SUCCESS) {
					good++;
					bytes += wcs[k].byte_len - SOFTIB_GRH_BYTES;
				} else if (wcs[k].status == IB_WC_WR_FLUSH_ERR) {
					err = -EIO;
					goto out;
				}
				rcvd++;
				if (b->rx)
					continue;	/* never reposted */
				err = softib_blast_post_recv(b, wcs[k].wr_id,
							     b->dst.pd->local_dma_lkey);
				if (err)
					goto out;
			}
			t_last = ktime_get();
			progress = true;
		}
		if (b->rx && scomp >= sent && rcvd >= min_t(u64, sent, b->rx) &&
		    (draining || sent >= b->count))
			break;
		if (!b->rx && rcvd >= sent && (draining || sent >= b->count))
			break;
		if (!draining && ktime_after(ktime_get(), deadline)) {
			/* stop sending; give what is in flight a moment */
			draining = true;
			drain_end = ktime_add_ms(ktime_get(), SOFTIB_BLAST_DRAIN_MS);
		}
		if (draining && ktime_after(ktime_get(), drain_end))
			break;
		if (sent >= b->count && !draining) {
			draining = true;
			drain_end = ktime_add_ms(ktime_get(), SOFTIB_BLAST_DRAIN_MS);
		}
		if (signal_pending(current)) {
			err = -EINTR;
			goto out;
		}
		/* the fabric delivers from a work item: let it run */
		if (!progress)
			cond_resched();
	}
out:
	ib_dma_unmap_single(b->src.ibdev, smap, b->size, DMA_TO_DEVICE);
	res->packets = good;
	res->bytes = bytes;
	res->sent = sent;
	res->size = b->size;
	res->ns = max_t(s64, ktime_to_ns(ktime_sub(t_last, t0)), 1);
	res->elapsed_ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
	return err;
}

/* One completion of @cq, waiting for it a moment: 0, -ETIMEDOUT or an errno. */
static int softib_blast_poll_one(struct ib_cq *cq, struct ib_wc *wc)
{
	ktime_t end = ktime_add_ms(ktime_get(), SOFTIB_BLAST_DRAIN_MS);
	int n;

	while (!(n = ib_poll_cq(cq, 1, wc))) {
		if (ktime_after(ktime_get(), end))
			return -ETIMEDOUT;
		cond_resched();
	}
	return n < 0 ? n : 0;
}

/* reset=1: ERR, one flush polled, RESET, what a poll still finds. */
static int softib_blast_reset_probe(struct softib_blast *b, struct softib_blast_result *res)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct ib_wc wc;
	int n, err;

	err = ib_modify_qp(b->dst.qp, &attr, IB_QP_STATE);
	if (err)
		return err;
	err = softib_blast_poll_one(b->dst.rcq, &wc);
	if (err && err != -ETIMEDOUT)
		return err;
	res->reset_flushed = !err && wc.status == IB_WC_WR_FLUSH_ERR;
	attr.qp_state = IB_QPS_RESET;
	err = ib_modify_qp(b->dst.qp, &attr, IB_QP_STATE);
	if (err)
		return err;
	while ((n = ib_poll_cq(b->dst.rcq, 1, &wc)) > 0)
		res->after_reset++;
	return n < 0 ? n : 0;
}

/* keys=1: a send, then a receive, with lkey 0 (see the top of the file). */
static int softib_blast_key_probe(struct softib_blast *b, struct softib_blast_result *res)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;
	struct ib_wc wc;
	u64 smap;
	int err;

	res->local_dma_lkey = b->src.pd->local_dma_lkey;
	smap = ib_dma_map_single(b->src.ibdev, b->sbuf, b->size, DMA_TO_DEVICE);
	if (ib_dma_mapping_error(b->src.ibdev, smap))
		return -ENOMEM;
	err = softib_blast_post_send(b, 0, smap, 0);
	if (!err)
		err = softib_blast_poll_one(b->src.scq, &wc);
	if (!err) {
		res->key_send_status = wc.status;
		err = ib_query_qp(b->src.qp, &attr, IB_QP_STATE, &init);
	}
	if (err)
		goto out;
	res->key_send_state = attr.qp_state;

	attr.qp_state = IB_QPS_RTS;
	err = ib_modify_qp(b->src.qp, &attr, IB_QP_STATE);
	if (!err)
		err = softib_blast_post_recv(b, 0, 0);
	if (!err)
		err = softib_blast_post_send(b, 1, smap, b->src.pd->local_dma_lkey);
	if (!err)
		err = softib_blast_poll_one(b->dst.rcq, &wc);
	if (!err) {
		res->key_recv_status = wc.status;
		err = ib_query_qp(b->dst.qp, &attr, IB_QP_STATE, &init);
	}
	if (!err)
		res->key_recv_state = attr.qp_state;
out:
	ib_dma_unmap_single(b->src.ibdev, smap, b->size, DMA_TO_DEVICE);
	return err;
}

/* A receive's payload (after the GRH) is all @c. */
static bool softib_blast_all(const u8 *p, u32 n, u8 c)
{
	while (n--)
		if (*p++ != c)
			return false;
	return true;
}

/* scribble=1: a buffer rewritten after its sends were posted (the top of the file). */
static int softib_blast_scribble_probe(struct softib_blast *b, struct softib_blast_result *res)
{
	ktime_t end = ktime_add_ms(ktime_get(), SOFTIB_BLAST_MAX_MS);
	u32 n = min_t(u64, b->count, b->window), got = 0;
	struct ib_wc wc;
	u64 smap, i;
	int err = 0, k;
	u8 *data;

	memset(b->sbuf, 0x5a, b->size);
	smap = ib_dma_map_single(b->src.ibdev, b->sbuf, b->size, DMA_TO_DEVICE);
	if (ib_dma_mapping_error(b->src.ibdev, smap))
		return -ENOMEM;
	for (i = 0; i < n && !err; i++)
		err = softib_blast_post_send(b, i, smap, b->src.pd->local_dma_lkey);
	if (err)
		goto out;
	/* the ULP's bug: the buffer changes before the sends completed */
	ib_dma_sync_single_for_cpu(b->src.ibdev, smap, b->size, DMA_TO_DEVICE);
	memset(b->sbuf, 0xa5, b->size);
	ib_dma_sync_single_for_device(b->src.ibdev, smap, b->size, DMA_TO_DEVICE);
	while (got < n && ktime_before(ktime_get(), end)) {
		k = ib_poll_cq(b->dst.rcq, 1, &wc);
		if (k < 0) {
			err = k;
			break;
		}
		if (!k) {
			usleep_range(1000, 2000);
			continue;
		}
		got++;
		if (wc.status != IB_WC_SUCCESS || wc.wr_id >= b->window)
			continue;
		ib_dma_sync_single_for_cpu(b->dst.ibdev, b->rmaps[wc.wr_id],
					   SOFTIB_GRH_BYTES + b->size, DMA_FROM_DEVICE);
		data = (u8 *)b->rbufs[wc.wr_id] + SOFTIB_GRH_BYTES;
		if (softib_blast_all(data, b->size, 0xa5))
			res->scribble_new++;
		else if (softib_blast_all(data, b->size, 0x5a))
			res->scribble_old++;
	}
	/* the send completions, before the buffer is unmapped */
	for (i = 0; i < n && !err; i++)
		err = softib_blast_poll_one(b->src.scq, &wc);
out:
	ib_dma_unmap_single(b->src.ibdev, smap, b->size, DMA_TO_DEVICE);
	return err;
}

/*
 * One of our own HCAs by its ib_device name (a port-1 entry), with a
 * reference: ib_device_put() gives it back. The core's lookup by name is
 * not exported on every kernel, and only softib's devices are wanted.
 */
static struct ib_device *softib_blast_get_dev(const char *name)
{
	struct softib_dev *sdev;
	struct ib_device *ibdev = NULL;

	mutex_lock(&softib_devs_lock);
	sdev = softib_dev_find_by_name(name);
	if (sdev && sdev->port_num == 1 && ib_device_try_get(&sdev->ibdev))
		ibdev = &sdev->ibdev;
	mutex_unlock(&softib_devs_lock);
	return ibdev;
}

static int softib_blast_setup(struct softib_blast *b, const char *src, const char *dst)
{
	struct rdma_ah_attr ah_attr = {};
	u32 i;
	int err;

	b->src.ibdev = softib_blast_get_dev(src);
	if (!b->src.ibdev)
		return -ENODEV;
	b->dst.ibdev = softib_blast_get_dev(dst);
	if (!b->dst.ibdev)
		return -ENODEV;
	if (b->size > ib_mtu_enum_to_int(READ_ONCE(to_sdev(b->src.ibdev)->mtu)) ||
	    b->size > ib_mtu_enum_to_int(READ_ONCE(to_sdev(b->dst.ibdev)->mtu)))
		return -EMSGSIZE;

	err = softib_blast_end_create(&b->src, b->window);
	if (err)
		return err;
	err = softib_blast_end_create(&b->dst, b->window);
	if (err)
		return err;

	ah_attr.type = RDMA_AH_ATTR_TYPE_IB;
	rdma_ah_set_port_num(&ah_attr, 1);
	rdma_ah_set_dlid(&ah_attr, softib_dev_lid(to_sdev(b->dst.ibdev)));
	b->ah = rdma_create_ah(b->src.pd, &ah_attr, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(b->ah))
		return PTR_ERR(b->ah);

	err = softib_blast_alloc_bufs(b);
	if (err)
		return err;
	for (i = 0; !b->keys && i < (b->rx ? min(b->rx, b->window) : b->window); i++) {
		err = softib_blast_post_recv(b, i, b->dst.pd->local_dma_lkey);
		if (err)
			return err;
	}
	return 0;
}

/* Undo whatever softib_blast_setup() got to, in reverse order. */
static void softib_blast_teardown(struct softib_blast *b)
{
	/*
	 * The QPs first (the fabric stops delivering into the buffers), then
	 * the AH before its PD: destroying it after ib_dealloc_pd() was a use
	 * after free (KASAN on the debug kernel, 2026-12-07).
	 */
	if (!IS_ERR_OR_NULL(b->src.qp))
		ib_destroy_qp(b->src.qp);
	b->src.qp = NULL;
	if (!IS_ERR_OR_NULL(b->dst.qp))
		ib_destroy_qp(b->dst.qp);
	b->dst.qp = NULL;
	if (!IS_ERR_OR_NULL(b->ah))
		rdma_destroy_ah(b->ah, RDMA_DESTROY_AH_SLEEPABLE);
	softib_blast_end_destroy(&b->src);
	softib_blast_end_destroy(&b->dst);
	softib_blast_free_bufs(b);
	if (b->dst.ibdev)
		ib_device_put(b->dst.ibdev);
	if (b->src.ibdev)
		ib_device_put(b->src.ibdev);
}

/* Parse "SRC DST SIZE COUNT" and/or key=value tokens. */
static int softib_blast_parse(char *s, struct softib_blast *b, char *src, char *dst)
{
	unsigned int pos = 0;
	char *tok, *val;
	u64 v;
	int err;

	while ((tok = strsep(&s, " \t\n")) != NULL) {
		if (!*tok)
			continue;
		val = strchr(tok, '=');
		if (val) {
			*val++ = '\0';
		} else {
			static const char * const order[] = { "src", "dst", "size", "count" };

			if (pos >= ARRAY_SIZE(order))
				return -EINVAL;
			val = tok;
			tok = (char *)order[pos++];
		}
		if (!strcmp(tok, "src") || !strcmp(tok, "dst")) {
			if (strscpy(!strcmp(tok, "src") ? src : dst, val, IB_DEVICE_NAME_MAX) < 0)
				return -EINVAL;
			continue;
		}
		err = kstrtou64(val, 0, &v);
		if (err)
			return err;
		if (!strcmp(tok, "size") && v >= 1 && v <= 4096)
			b->size = v;
		else if (!strcmp(tok, "count") && v >= 1)
			b->count = v;
		else if (!strcmp(tok, "ms") && v >= 1 && v <= SOFTIB_BLAST_MAX_MS)
			b->ms = v;
		else if (!strcmp(tok, "window") && v >= 1 && v <= SOFTIB_BLAST_MAX_WIN)
			b->window = v;
		else if (!strcmp(tok, "rx") && v >= 1 && v <= SOFTIB_BLAST_MAX_WIN)
			b->rx = v;
		else if (!strcmp(tok, "fill") && v <= 1)
			b->fill = v;
		else if (!strcmp(tok, "reset") && v <= 1)
			b->reset = v;
		else if (!strcmp(tok, "keys") && v <= 1)
			b->keys = v;
		else if (!strcmp(tok, "scribble") && v <= 1)
			b->scribble = v;
		else
			return -EINVAL;
	}
	return *src && *dst ? 0 : -EINVAL;
}

static ssize_t softib_blast_write(struct file *file, const char __user *ubuf, size_t count,
				  loff_t *ppos)
{
	char src[IB_DEVICE_NAME_MAX] = "", dst[IB_DEVICE_NAME_MAX] = "";
	struct softib_blast_result res = {
		.key_send_status = -1, .key_send_state = -1,
		.key_recv_status = -1, .key_recv_state = -1,
	};
	struct softib_blast *b;
	char buf[160];
	int err;

	if (!count || count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';

	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	b->size = 64;
	b->count = 100000;
	b->ms = 2000;
	b->window = 256;
	err = softib_blast_parse(buf, b, src, dst);
	if (err)
		goto out_free;

	if (!mutex_trylock(&softib_blast_lock)) {
		err = -EBUSY;
		goto out_free;
	}
	err = softib_blast_setup(b, src, dst);
	if (!err && b->keys)
		err = softib_blast_key_probe(b, &res);
	else if (!err && b->scribble)
		err = softib_blast_scribble_probe(b, &res);
	else if (!err)
		err = softib_blast_run(b, &res);
	if (!err && b->reset)
		err = softib_blast_reset_probe(b, &res);
	softib_blast_teardown(b);
	if (!err)
		softib_blast_last = res;
	mutex_unlock(&softib_blast_lock);
	if (!err)
		pr_debug("blast %s -> %s: %llu of %llu packets of %u bytes in %llu ns\n",
			 src, dst, res.packets, res.sent, res.size, res.ns);
out_free:
	kfree(b);
	return err ? err : count;
}

static int softib_blast_show(struct seq_file *m, void *v)
{
	struct softib_blast_result r;

	mutex_lock(&softib_blast_lock);
	r = softib_blast_last;
	mutex_unlock(&softib_blast_lock);
	seq_printf(m, "packets %llu\nbytes %llu\nns %llu\n", r.packets, r.bytes, r.ns);
	seq_printf(m, "pps %llu\nbytes_per_s %llu\n",
		   r.ns ? div64_u64(r.packets * NSEC_PER_SEC, r.ns) : 0,
		   r.ns ? div64_u64(r.bytes * NSEC_PER_SEC, r.ns) : 0);
	seq_printf(m, "size %u\nsent %llu\nlost %llu\n", r.size, r.sent, r.sent - r.packets);
	seq_printf(m, "elapsed_ns %llu\nfull_at %llu\nfull_err %d\n", r.elapsed_ns, r.full_at,
		   r.full_err);
	seq_printf(m, "reset_flushed %d\nafter_reset %llu\n", r.reset_flushed, r.after_reset);
	seq_printf(m, "key_send_status %d\nkey_send_state %d\n", r.key_send_status,
		   r.key_send_state);
	seq_printf(m, "key_recv_status %d\nkey_recv_state %d\nlocal_dma_lkey %u\n",
		   r.key_recv_status, r.key_recv_state, r.local_dma_lkey);
	seq_printf(m, "scribble_new %u\nscribble_old %u\n", r.scribble_new, r.scribble_old);
	return 0;
}

static int softib_blast_open(struct inode *inode, struct file *file)
{
	return single_open(file, softib_blast_show, NULL);
}

static const struct file_operations softib_blast_fops = {
	.owner = THIS_MODULE,
	.open = softib_blast_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = softib_blast_write,
};

/* Create the global "blast" file; removed with the softib debugfs root. */
void softib_blast_init(struct dentry *root)
{
	debugfs_create_file("blast", 0600, root, NULL, &softib_blast_fops);
}
