// SPDX-License-Identifier: GPL-2.0
/*
 * softib: completion queues. A CQ is a ring of struct ib_wc; producers are
 * post_send (send completions), the fabric (receive completions) and
 * modify_qp (flushes). The completion handler runs without any softib lock
 * held.
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "softib.h"

int softib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		     IB_COMPAT_CREATE_CQ_ARG *uarg)
{
	struct softib_cq *cq = to_scq(ibcq);

	if (uarg || attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > SOFTIB_MAX_CQE)
		return -EINVAL;

	spin_lock_init(&cq->lock);
	cq->size = attr->cqe + 1;	/* one slot tells full from empty */
	cq->ring = kvcalloc(cq->size, sizeof(*cq->ring), GFP_KERNEL);
	if (!cq->ring)
		return -ENOMEM;
	ibcq->cqe = attr->cqe;
	return 0;
}

int softib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct softib_cq *cq = to_scq(ibcq);

	kvfree(cq->ring);
	cq->ring = NULL;
	return 0;
}

/*
 * CQ moderation (ib_device_ops.modify_cq, reached through
 * rdma_set_cq_moderation()): the values are recorded and counted
 * (cq_modify) so a test can see that a ULP asked, but completion events are
 * not delayed. fail_modify_cq makes the next N calls answer -EOPNOTSUPP, as
 * an HCA without moderation does.
 */
int softib_modify_cq(struct ib_cq *ibcq, u16 count, u16 period)
{
	struct softib_dev *sdev = to_sdev(ibcq->device);
	struct softib_cq *cq = to_scq(ibcq);
	unsigned long flags;

	if (atomic_add_unless(&sdev->fail_modify_cq, -1, 0))
		return -EOPNOTSUPP;
	spin_lock_irqsave(&cq->lock, flags);
	cq->moder_count = count;
	cq->moder_period = period;
	spin_unlock_irqrestore(&cq->lock, flags);
	softib_count(sdev, SOFTIB_CNT_CQ_MODIFY);
	return 0;
}

static u32 softib_cq_next(const struct softib_cq *cq, u32 i)
{
	return i + 1 == cq->size ? 0 : i + 1;
}

int softib_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct softib_cq *cq = to_scq(ibcq);
	unsigned long flags;
	int n = 0;

	spin_lock_irqsave(&cq->lock, flags);
	while (n < num_entries && cq->head != cq->tail) {
		wc[n++] = cq->ring[cq->head];
		cq->head = softib_cq_next(cq, cq->head);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int softib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct softib_cq *cq = to_scq(ibcq);
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	/* SOLICITED never downgrades a pending NEXT_COMP request. */
	if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = flags & IB_CQ_SOLICITED_MASK;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && cq->head != cq->tail)
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

static void softib_cq_overflow(struct softib_cq *cq)
{
	struct softib_dev *sdev = to_sdev(cq->ibcq.device);
	struct ib_event ev = {
		.device = cq->ibcq.device,
		.element.cq = &cq->ibcq,
		.event = IB_EVENT_CQ_ERR,
	};

	softib_count(sdev, SOFTIB_CNT_CQ_OVERFLOW);
	ibdev_err_ratelimited(&sdev->ibdev, "CQ overflow (%u entries)\n", cq->ibcq.cqe);
	if (cq->ibcq.event_handler)
		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
}

/*
 * Add one completion; calls the completion handler (with BH disabled, no
 * lock held) if the CQ was armed. Any context except hard IRQ.
 */
void softib_cq_push(struct softib_cq *cq, const struct ib_wc *wc, bool solicited)
{
	struct softib_dev *sdev = to_sdev(cq->ibcq.device);
	bool overflow = false, notify = false;
	unsigned long flags;
	u32 next;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->overflowed)
		goto out_unlock;	/* a CQ in error takes nothing more */
	next = softib_cq_next(cq, cq->tail);
	if (next == cq->head || atomic_add_unless(&sdev->fail_cq_overflow, -1, 0)) {
		cq->overflowed = true;
		overflow = true;
		goto out_unlock;
	}
	cq->ring[cq->tail] = *wc;
	cq->tail = next;
	if (cq->notify == IB_CQ_NEXT_COMP ||
	    (cq->notify == IB_CQ_SOLICITED && (solicited || wc->status != IB_WC_SUCCESS))) {
		cq->notify = 0;
		notify = true;
	}
out_unlock:
	spin_unlock_irqrestore(&cq->lock, flags);

	if (overflow)
		softib_cq_overflow(cq);
	if (!notify || !cq->ibcq.comp_handler)
		return;
	if (irqs_disabled()) {
		/* e.g. ib_mad posts with IRQs off; BH cannot run here anyway */
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	} else {
		local_bh_disable();
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
		local_bh_enable();
	}
}
