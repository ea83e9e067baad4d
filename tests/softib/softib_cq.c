// SPDX-License-Identifier: GPL-2.0
/*
 * softib: completion queues. A CQ is a ring of struct ib_wc; producers are
 * the device's tx work (send completions), the fabric (receive completions)
 * and modify_qp (flushes). As an HCA's MSI-X vector does, the completion
 * handler runs in hard-IRQ context, from the CQ's irq_work, never in the
 * producer's context. The moderation set by modify_cq is applied: while
 * the CQ is armed, the event waits for moder_count CQEs or moder_period
 * microseconds after the first, whichever comes first (a count of 0 or 1,
 * or a period of 0, mean an event per CQE: softib never holds an event
 * without a time limit). An error CQE raises the event at once. A CQ that
 * overflows raises IB_EVENT_CQ_ERR and takes its QPs to ERR.
 */
#include <linux/hardirq.h>
#include <linux/hrtimer.h>
#include <linux/irq_work.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "softib.h"

/* The CQ's "interrupt": call the completion handler (hard IRQ). */
static void softib_cq_comp_irq(struct irq_work *work)
{
	struct softib_cq *cq = container_of(work, struct softib_cq, comp_work);
	struct softib_dev *sdev = to_sdev(cq->ibcq.device);
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	cq->event_due = false;
	spin_unlock_irqrestore(&cq->lock, flags);

	softib_count(sdev, SOFTIB_CNT_COMP_EVENTS);
	if (in_hardirq())
		softib_count(sdev, SOFTIB_CNT_COMP_HARDIRQ);
	if (cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

/* Raise the event now; caller holds cq->lock. */
static void softib_cq_fire(struct softib_cq *cq)
{
	cq->notify = 0;
	cq->moder_pending = 0;
	cq->event_due = true;
	hrtimer_try_to_cancel(&cq->moder_timer);
	irq_work_queue(&cq->comp_work);
}

/* The moderation period ran out with CQEs waiting for their event. */
static enum hrtimer_restart softib_cq_moder_expired(struct hrtimer *timer)
{
	struct softib_cq *cq = container_of(timer, struct softib_cq, moder_timer);
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->notify && cq->moder_pending && !cq->event_due) {
		cq->notify = 0;
		cq->moder_pending = 0;
		cq->event_due = true;
		irq_work_queue(&cq->comp_work);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return HRTIMER_NORESTART;
}

static void softib_cq_err_work(struct work_struct *work);

int softib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		     IB_COMPAT_CREATE_CQ_ARG *uarg)
{
	struct softib_dev *sdev = to_sdev(ibcq->device);
	struct softib_cq *cq = to_scq(ibcq);

	if (uarg || attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > SOFTIB_MAX_CQE)
		return -EINVAL;
	if (atomic_add_unless(&sdev->fail_create_cq, -1, 0))
		return -ENOMEM;

	spin_lock_init(&cq->lock);
	cq->size = attr->cqe + 1;	/* one slot tells full from empty */
	cq->ring = kvcalloc(cq->size, sizeof(*cq->ring), GFP_KERNEL);
	if (!cq->ring)
		return -ENOMEM;
	init_irq_work(&cq->comp_work, softib_cq_comp_irq);
	hrtimer_setup(&cq->moder_timer, softib_cq_moder_expired, CLOCK_MONOTONIC,
		      HRTIMER_MODE_REL_HARD);
	INIT_WORK(&cq->err_work, softib_cq_err_work);
	ibcq->cqe = attr->cqe;
	return 0;
}

int softib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct softib_cq *cq = to_scq(ibcq);

	cancel_work_sync(&cq->err_work);
	hrtimer_cancel(&cq->moder_timer);
	irq_work_sync(&cq->comp_work);
	kvfree(cq->ring);
	cq->ring = NULL;
	return 0;
}

/*
 * CQ moderation (ib_device_ops.modify_cq, reached through
 * rdma_set_cq_moderation()): applied from the next completion on, and
 * counted (cq_modify) so a test can see that a ULP asked.
 * fail_modify_cq makes the next N calls answer -EOPNOTSUPP, as an HCA
 * without moderation does.
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

/*
 * softib_cq_clean: take QP's completions off CQ, as mlx5 does when a kernel
 * QP is destroyed or reset; one left behind after a destroy would name a
 * freed QP to the consumer (a consumer may destroy a QP without having
 * polled its flushes: the in-tree ipoib does, when its interface is down).
 * Returns how many went. mlx5 also gives an SRQ receive's WQE back to its
 * SRQ; softib drops it (Documentation/softib.rst).
 */
u32 softib_cq_clean(struct softib_cq *cq, const struct ib_qp *qp)
{
	unsigned long flags;
	u32 i, j, n = 0;

	spin_lock_irqsave(&cq->lock, flags);
	for (i = cq->head, j = cq->head; i != cq->tail; i = softib_cq_next(cq, i)) {
		if (cq->ring[i].qp == qp) {
			n++;
			continue;
		}
		if (i != j)
			cq->ring[j] = cq->ring[i];
		j = softib_cq_next(cq, j);
	}
	cq->tail = j;
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

/*
 * After an overflow (IBA 11.6.3.2, CQ error): the owner gets IB_EVENT_CQ_ERR
 * and every QP that completes into the CQ goes to ERR, as on an HCA.
 */
static void softib_cq_err_work(struct work_struct *work)
{
	struct softib_cq *cq = container_of(work, struct softib_cq, err_work);
	struct softib_dev *sdev = to_sdev(cq->ibcq.device);
	struct ib_event ev = {
		.device = cq->ibcq.device,
		.element.cq = &cq->ibcq,
		.event = IB_EVENT_CQ_ERR,
	};
	struct softib_qp *qp;
	unsigned long qpn;

	rcu_read_lock();
	xa_for_each(&sdev->qps, qpn, qp)	/* the HCA's: every port's QPs */
		if (qp->ibqp.send_cq == &cq->ibcq || qp->ibqp.recv_cq == &cq->ibcq)
			softib_qp_to_err(qp);
	rcu_read_unlock();
	if (cq->ibcq.event_handler)
		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
}

/* A CQ the IB core made for itself (restrack names its owner). */
static bool softib_cq_is_core(const struct softib_cq *cq)
{
	const char *owner = cq->ibcq.res.kern_name;

	return owner && !strcmp(owner, "ib_core");
}

/*
 * Add one completion and, if the CQ is armed for it, raise its event (now,
 * or when moderation says). Any context; cq->lock is the last lock taken.
 */
void softib_cq_push(struct softib_cq *cq, const struct ib_wc *wc, bool solicited)
{
	struct softib_dev *sdev = to_sdev(cq->ibcq.device);
	bool overflow = false;
	unsigned long flags;
	u32 next;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->overflowed)
		goto out_unlock;	/* a CQ in error takes nothing more */
	next = softib_cq_next(cq, cq->tail);
	/*
	 * The injected overflow spares the core's own CQs (ib_mad's): it sizes
	 * them to its queues, so they never overflow on an HCA, and nothing
	 * would recover them. A ULP's CQ (ib_ipoib's) takes it.
	 */
	if (next == cq->head ||
	    (!softib_cq_is_core(cq) &&
	     atomic_add_unless(&sdev->fail_cq_overflow, -1, 0))) {
		cq->overflowed = true;
		overflow = true;
		goto out_unlock;
	}
	cq->ring[cq->tail] = *wc;
	cq->tail = next;
	if (cq->event_due)
		goto out_unlock;	/* the handler is about to run and poll */
	if (cq->notify == IB_CQ_NEXT_COMP ||
	    (cq->notify == IB_CQ_SOLICITED && (solicited || wc->status != IB_WC_SUCCESS))) {
		cq->moder_pending++;
		if (cq->moder_count <= 1 || !cq->moder_period ||
		    cq->moder_pending >= cq->moder_count || wc->status != IB_WC_SUCCESS)
			softib_cq_fire(cq);
		else if (cq->moder_pending == 1)
			hrtimer_start(&cq->moder_timer,
				      ns_to_ktime((u64)cq->moder_period * NSEC_PER_USEC),
				      HRTIMER_MODE_REL_HARD);
	}
out_unlock:
	spin_unlock_irqrestore(&cq->lock, flags);

	if (overflow) {
		softib_count(sdev, SOFTIB_CNT_CQ_OVERFLOW);
		ibdev_err_ratelimited(&sdev->ibdev, "CQ overflow (%u entries)\n", cq->ibcq.cqe);
		queue_work(system_wq, &cq->err_work);
	}
}
