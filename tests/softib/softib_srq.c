// SPDX-License-Identifier: GPL-2.0
/*
 * softib: shared receive queues, and the receive WQEs an RC responder
 * takes from them or from the QP's own queue. An SRQ hands out its WQEs in
 * posting order; falling below its armed limit raises
 * IB_EVENT_SRQ_LIMIT_REACHED once, until the consumer arms it again
 * (modify_srq); it cannot be resized.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "softib.h"

bool softib_srq_enabled = true;
module_param_named(srq, softib_srq_enabled, bool, 0444);
MODULE_PARM_DESC(srq, "Offer shared receive queues (default on; off: ULPs use per-QP receive queues)");

/**
 * softib_take_rwqe - take a receive WQE for a new RC message
 * @sdev: the port (its rx_starve knob)
 * @qp: the QP, whose lock the caller holds
 * @wqe: filled in
 * @limit_event: set if the SRQ fell below its limit (raise the event with
 *	softib_srq_event() after dropping qp->lock)
 *
 * Return: false if none is posted (or rx_starve): the responder sends RNR.
 */
bool softib_take_rwqe(struct softib_dev *sdev, struct softib_qp *qp,
		      struct softib_rwqe *wqe, bool *limit_event)
{
	struct softib_srq *srq = qp->srq;

	if (!srq) {
		if (!qp->rq_count || atomic_add_unless(&sdev->rx_starve, -1, 0))
			return false;
		*wqe = qp->rq[qp->rq_head];
		qp->rq_head = (qp->rq_head + 1) % qp->rq_size;
		qp->rq_count--;
		return true;
	}
	spin_lock(&srq->lock);
	if (!srq->count || atomic_add_unless(&sdev->rx_starve, -1, 0)) {
		spin_unlock(&srq->lock);
		return false;
	}
	*wqe = srq->rq[srq->head];
	srq->head = (srq->head + 1) % srq->size;
	srq->count--;
	if (srq->limit && srq->count < srq->limit) {
		srq->limit = 0;		/* one event, until armed again */
		*limit_event = true;
	}
	spin_unlock(&srq->lock);
	return true;
}

/* IB_EVENT_SRQ_LIMIT_REACHED, without the QP's lock */
void softib_srq_event(struct softib_srq *srq)
{
	struct ib_event ev = {
		.device = srq->ibsrq.device,
		.element.srq = &srq->ibsrq,
		.event = IB_EVENT_SRQ_LIMIT_REACHED,
	};

	softib_count(to_sdev(srq->ibsrq.device), SOFTIB_CNT_SRQ_LIMIT);
	if (srq->ibsrq.event_handler)
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
}

int softib_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		      struct ib_udata *udata)
{
	struct softib_srq *srq = to_ssrq(ibsrq);

	if (udata || !softib_srq_enabled || init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (!init->attr.max_wr || init->attr.max_wr > SOFTIB_MAX_QP_WR ||
	    init->attr.max_sge > softib_max_recv_sge() || init->attr.srq_limit >= init->attr.max_wr)
		return -EINVAL;
	spin_lock_init(&srq->lock);
	srq->size = init->attr.max_wr;
	srq->max_sge = max_t(u32, init->attr.max_sge, 1);
	srq->limit = init->attr.srq_limit;
	srq->rq = kvcalloc(srq->size, sizeof(*srq->rq), GFP_KERNEL);
	if (!srq->rq)
		return -ENOMEM;
	init->attr.max_sge = srq->max_sge;
	return 0;
}

int softib_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr, enum ib_srq_attr_mask mask,
		      struct ib_udata *udata)
{
	struct softib_srq *srq = to_ssrq(ibsrq);
	unsigned long flags;
	int err = 0;

	if (udata)
		return -EOPNOTSUPP;
	/* no IB_DEVICE_SRQ_RESIZE */
	if (mask & IB_SRQ_MAX_WR)
		return -EINVAL;
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	spin_lock_irqsave(&srq->lock, flags);
	if (attr->srq_limit >= srq->size)
		err = -EINVAL;
	else
		srq->limit = attr->srq_limit;	/* arms the limit event */
	spin_unlock_irqrestore(&srq->lock, flags);
	return err;
}

int softib_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct softib_srq *srq = to_ssrq(ibsrq);

	attr->max_wr = srq->size;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = READ_ONCE(srq->limit);
	return 0;
}

int softib_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct softib_srq *srq = to_ssrq(ibsrq);

	/* the core refuses while a QP still uses it */
	kvfree(srq->rq);
	srq->rq = NULL;
	return 0;
}

int softib_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr)
{
	struct softib_srq *srq = to_ssrq(ibsrq);
	struct softib_rwqe *wqe;
	unsigned long flags;
	int err = 0;

	spin_lock_irqsave(&srq->lock, flags);
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || wr->num_sge > srq->max_sge) {
			err = -EINVAL;
			break;
		}
		if (srq->count == srq->size) {
			err = -ENOMEM;
			break;
		}
		wqe = &srq->rq[srq->tail];
		wqe->wr_id = wr->wr_id;
		wqe->num_sge = wr->num_sge;
		memcpy(wqe->sge, wr->sg_list, wr->num_sge * sizeof(*wr->sg_list));
		srq->tail = (srq->tail + 1) % srq->size;
		srq->count++;
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	if (err)
		*bad_wr = wr;
	return err;
}
