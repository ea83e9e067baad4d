// SPDX-License-Identifier: GPL-2.0
/*
 * softib: a send's data read when its packet leaves the port, as an HCA
 * reads it by DMA, not when the WR is posted (UD, LSO and RC; RC reads it
 * again for every retransmission, softib_rc.c).
 *
 * A driver may touch a send buffer only after the WR's completion: an HCA
 * reads the gather list when it executes the WR, which may be long after
 * ib_post_send() returned (a busy port, a send stall, an LSO WR's later
 * segments). softib copied the data at post time, so a buffer freed or
 * rewritten before its completion went unnoticed, by KASAN too. Now the
 * packet keeps a reference to the WR's gather list (struct softib_sges,
 * shared by an LSO WR's segments) and the device's tx work copies the bytes
 * in softib_pkt_load(), then fills what the HCA computes over them (the
 * IP/TCP/UDP checksums of IB_SEND_IP_CSUM and of an LSO segment).
 *
 * The WR must still be on its send queue then: a WR flushed by a move to
 * ERR or RESET has completed, its buffer is the ULP's again, and its packet
 * is not sent (tx_flushed), as an HCA that stopped its send queue sends
 * nothing more of it. The send queue's lock is held while the bytes are
 * read, so the WR cannot complete meanwhile.
 *
 * A hash of the bytes taken at post time is compared with the bytes read:
 * send_data_changed counts every packet whose data changed in between, a
 * driver bug that no hardware reports (the peer just gets other data). The
 * suite requires it to stay 0: but for softib-blast's own probe, softib
 * logs it, and the runner fails a boot on that line (KERNEL_BAD_RE).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jhash.h>
#include <linux/overflow.h>
#include <linux/refcount.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <rdma/ib_verbs.h>

#include "softib.h"

/* The gather list of @wr, or NULL without memory. */
struct softib_sges *softib_sges_get(const struct ib_send_wr *wr, gfp_t gfp)
{
	struct softib_sges *s;
	int i;

	s = kmalloc(struct_size(s, sg, wr->num_sge), gfp);
	if (!s)
		return NULL;
	refcount_set(&s->ref, 1);
	s->num = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		s->sg[i].addr = wr->sg_list[i].addr;
		s->sg[i].len = wr->sg_list[i].length;
	}
	return s;
}

void softib_sges_put(struct softib_sges *s)
{
	if (s && refcount_dec_and_test(&s->ref))
		kfree(s);
}

/*
 * Hash @n bytes of the gather list from byte @off and, if @dst is not NULL,
 * copy them there. The hash follows the SGE boundaries, which are the same
 * at post time and at transmission.
 */
static u32 softib_sges_walk(const struct softib_sges *s, u32 off, u8 *dst, u32 n)
{
	u32 h = 0, i;

	for (i = 0; i < s->num && n; i++) {
		u32 k;
		const void *p;

		if (off >= s->sg[i].len) {
			off -= s->sg[i].len;
			continue;
		}
		k = min(n, s->sg[i].len - off);
		/* CONFIG_INFINIBAND_VIRT_DMA: SGE addresses are kernel virtual */
		p = (const void *)(uintptr_t)(s->sg[i].addr + off);
		h = jhash(p, k, h);
		if (dst) {
			memcpy(dst, p, k);
			dst += k;
		}
		n -= k;
		off = 0;
	}
	return h;
}

/* The hash softib_pkt_load() compares: @n bytes of @s from byte @off. */
u32 softib_sges_hash(const struct softib_sges *s, u32 off, u32 n)
{
	return softib_sges_walk(s, off, NULL, n);
}

/*
 * @pkt's data[] from byte @dst_off on comes from @s at byte @off when the
 * packet leaves, @hash the hash of those bytes when the WR was posted;
 * @fix says what the HCA fills in then. Takes a reference on @s. The WR is
 * pkt->sseq on @qp's send queue.
 */
void softib_pkt_defer_hashed(struct softib_pkt *pkt, struct softib_qp *qp,
			     struct softib_sges *s, u32 off, u32 dst_off, u8 fix, u32 hash)
{
	refcount_inc(&s->ref);
	pkt->src = s;
	pkt->wqp = qp;
	pkt->src_off = off;
	pkt->dst_off = dst_off;
	pkt->src_fix = fix;
	pkt->src_hash = hash;
}

/* The same for a WR being posted: the data's hash is taken now. */
void softib_pkt_defer(struct softib_pkt *pkt, struct softib_qp *qp, struct softib_sges *s,
		      u32 off, u32 dst_off, u8 fix)
{
	softib_pkt_defer_hashed(pkt, qp, s, off, dst_off, fix,
				softib_sges_walk(s, off, NULL, pkt->len - dst_off));
}

/*
 * Read a deferred packet's data, on its way out of @sdev (under RCU, from
 * the tx work). False if its WR is no longer on the send queue: the packet
 * is not sent (the caller frees it).
 */
bool softib_pkt_load(struct softib_dev *sdev, struct softib_pkt *pkt)
{
	struct softib_qp *qp = pkt->wqp;
	unsigned long flags;
	bool live = false;
	u32 h = 0;

	/* destroy_qp erases the QPN, then waits for RCU: qp is alive if found */
	if (softib_qp_find(sdev, pkt->sqpn) == qp) {
		spin_lock_irqsave(&qp->lock, flags);
		live = softib_sq_holds(qp, pkt->sseq);
		if (live)
			h = softib_sges_walk(pkt->src, pkt->src_off, pkt->data + pkt->dst_off,
					     pkt->len - pkt->dst_off);
		spin_unlock_irqrestore(&qp->lock, flags);
	}
	softib_sges_put(pkt->src);
	pkt->src = NULL;
	if (!live) {
		softib_count(sdev, SOFTIB_CNT_TX_FLUSHED);
		return false;
	}
	if (h != pkt->src_hash) {
		softib_count(sdev, SOFTIB_CNT_SEND_DATA_CHANGED);
		/* a report the suite fails on (KERNEL_BAD_RE), but for our own probe */
		if (strcmp(qp->ibqp.res.kern_name ?: "", KBUILD_MODNAME))
			pr_err_ratelimited("%s: QP %u: send data changed between ib_post_send and transmission (a buffer touched before its completion)\n",
					   softib_dev_name(sdev), qp->ibqp.qp_num);
	}
	if (pkt->src_fix == SOFTIB_FIX_CSUM && softib_csum_fill(pkt))
		softib_count(sdev, SOFTIB_CNT_TX_CSUM);
	else if (pkt->src_fix == SOFTIB_FIX_LSO)
		softib_lso_fill(pkt);
	return true;
}
