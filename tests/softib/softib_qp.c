// SPDX-License-Identifier: GPL-2.0
/*
 * softib: UD, GSI (QP1), SMI (QP0) and RC queue pairs. A send is copied into a
 * packet and queued on the device; the WR stays on the send queue (at most
 * max_send_wr of them) until the device's tx work has sent the packet, and
 * completes from there, in order (softib_qp_send_done()). Receives wait in
 * a ring until the fabric delivers a packet (softib_qp_rx()); a packet that
 * finds the ring empty is dropped, as UD is on hardware. RC's reliability
 * (segments, PSNs, ACKs, retries) and SRQs are in softib_rc.c.
 */
#include <linux/mm.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_pack.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_netlink.h>
#include <rdma/restrack.h>
#include <net/netlink.h>

#include "softib.h"
#include "softib_rn.h"

int softib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init, struct ib_udata *udata)
{
	struct softib_dev *sdev = to_sdev(ibqp->device);
	struct softib_qp *qp = to_sqp(ibqp);
	struct ib_qp_cap *cap = &init->cap;
	u32 qpn;
	int err;

	if (udata)
		return -EOPNOTSUPP;
	switch (init->qp_type) {
	case IB_QPT_UD:
	case IB_QPT_RC:
		break;
	case IB_QPT_GSI:
	case IB_QPT_SMI:
		if (!rdma_is_port_valid(&sdev->ibdev, init->port_num))
			return -EINVAL;
		break;
	default:
		return -EOPNOTSUPP;
	}
	/* LSO is the only create flag, and only where the device offers it */
	if ((init->create_flags & ~IB_QP_CREATE_IPOIB_UD_LSO) ||
	    (init->srq && init->qp_type != IB_QPT_RC) || init->rwq_ind_tbl ||
	    ((init->create_flags & IB_QP_CREATE_IPOIB_UD_LSO) &&
	     (init->qp_type != IB_QPT_UD || !sdev->ud_tso)))
		return -EOPNOTSUPP;
	if (cap->max_send_wr > SOFTIB_MAX_QP_WR || cap->max_recv_wr > SOFTIB_MAX_QP_WR ||
	    cap->max_send_sge > SOFTIB_MAX_SEND_SGE || cap->max_recv_sge > softib_max_recv_sge() ||
	    cap->max_inline_data > 4096)
		return -EINVAL;
	/* with an SRQ the QP has no receive queue of its own */
	if (init->srq && (cap->max_recv_wr || cap->max_recv_sge))
		return -EINVAL;

	spin_lock_init(&qp->lock);
	qp->state = IB_QPS_RESET;
	qp->sq_sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->max_send_wr = max_t(u32, cap->max_send_wr, 1);
	qp->max_send_sge = cap->max_send_sge;
	qp->lso = init->create_flags & IB_QP_CREATE_IPOIB_UD_LSO;
	qp->sq_done = -1U;
	qp->sq = kvcalloc(qp->max_send_wr, sizeof(*qp->sq), GFP_KERNEL);
	if (!qp->sq)
		return -ENOMEM;
	qp->rq_size = max_t(u32, cap->max_recv_wr, 1);
	qp->rq = kvcalloc(qp->rq_size, sizeof(*qp->rq), GFP_KERNEL);
	if (!qp->rq) {
		kvfree(qp->sq);
		return -ENOMEM;
	}
	atomic_set(&qp->n_mcast, 0);
	qp->srq = init->srq ? to_ssrq(init->srq) : NULL;
	/* port 1 until RESET -> INIT says otherwise; a special QP's own port */
	qp->sport = sdev;
	if (init->qp_type == IB_QPT_SMI || init->qp_type == IB_QPT_GSI)
		qp->sport = softib_port(sdev, init->port_num);
	if (init->qp_type == IB_QPT_RC) {
		err = softib_rc_create(qp);
		if (err)
			goto err_free_rq;
	}

	switch (init->qp_type) {
	case IB_QPT_SMI:
	case IB_QPT_GSI:
		qpn = init->qp_type == IB_QPT_GSI;	/* QP0 or QP1 */
		err = xa_insert(&sdev->qps, softib_qp_index(qp->sport, qpn), qp, GFP_KERNEL);
		break;
	default:
		err = xa_alloc_cyclic(&sdev->qps, &qpn, qp,
				      XA_LIMIT(SOFTIB_QPN_FIRST, SOFTIB_QPN_LAST),
				      &sdev->next_qpn, GFP_KERNEL);
		if (err > 0)
			err = 0;	/* wrapped around: fine */
		break;
	}
	if (err)
		goto err_free_rc;

	ibqp->qp_num = qpn;
	ibdev_dbg(ibqp->device, "created QP 0x%x type %d\n", qpn, init->qp_type);
	return 0;

err_free_rc:
	softib_rc_destroy(qp);
err_free_rq:
	kvfree(qp->rq);
	kvfree(qp->sq);
	return err;
}

void softib_qp_detach_all(struct softib_dev *sdev, struct softib_qp *qp)
{
	struct softib_mcast_att *att, *tmp;
	unsigned long flags;

	spin_lock_irqsave(&sdev->mcast_lock, flags);
	list_for_each_entry_safe(att, tmp, &sdev->mcast, list) {
		if (att->qp != qp)
			continue;
		list_del_rcu(&att->list);
		sdev->n_mcast--;
		atomic_dec(&qp->n_mcast);
		kfree_rcu(att, rcu);
	}
	spin_unlock_irqrestore(&sdev->mcast_lock, flags);
}

/*
 * A QP destroyed or reset leaves no completion behind on its CQs: mlx5
 * cleans a kernel QP's off them, and one left would name a freed QP (or,
 * after a reset, a WR its owner has taken back).
 */
static void softib_qp_clean_cqs(struct softib_qp *qp)
{
	struct ib_qp *ibqp = &qp->ibqp;
	u32 n = 0;

	if (ibqp->send_cq)
		n += softib_cq_clean(to_scq(ibqp->send_cq), ibqp);
	if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
		n += softib_cq_clean(to_scq(ibqp->recv_cq), ibqp);
	softib_count_add(to_sdev(ibqp->device), SOFTIB_CNT_CQE_CLEANED, n);
}

int softib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct softib_dev *sdev = to_sdev(ibqp->device);
	struct softib_qp *qp = to_sqp(ibqp);

	xa_erase(&sdev->qps, softib_qp_index(qp->sport, ibqp->qp_num));
	softib_qp_detach_all(qp->sport, qp);
	synchronize_rcu();	/* the fabric (and tx_work) no longer reach qp */
	softib_rc_destroy(qp);	/* its timer and events: no more completions */
	/* a completion event already raised runs before the CQs can go */
	irq_work_sync(&to_scq(ibqp->send_cq)->comp_work);
	irq_work_sync(&to_scq(ibqp->recv_cq)->comp_work);
	softib_qp_clean_cqs(qp);
	kvfree(qp->rq);
	qp->rq = NULL;
	kvfree(qp->sq);
	qp->sq = NULL;
	return 0;
}

static void softib_qp_complete(struct softib_qp *qp, struct ib_cq *ibcq, u64 wr_id,
			       enum ib_wc_opcode opcode, enum ib_wc_status status, u32 byte_len)
{
	struct ib_wc wc = {
		.wr_id = wr_id,
		.status = status,
		.opcode = opcode,
		.byte_len = byte_len,
		.qp = &qp->ibqp,
		.port_num = READ_ONCE(qp->sport)->port_num,
	};

	softib_cq_push(to_scq(ibcq), &wc, false);
}

static struct softib_swqe *softib_sq_entry(struct softib_qp *qp, u32 i)
{
	return &qp->sq[(qp->sq_head + i) % qp->max_send_wr];
}

void softib_sq_pop(struct softib_qp *qp, enum ib_wc_status status)
{
	struct softib_swqe *e = softib_sq_entry(qp, 0);

	if (e->signaled || status != IB_WC_SUCCESS)
		softib_qp_complete(qp, qp->ibqp.send_cq, e->wr_id, IB_WC_SEND, status,
				   e->byte_len);
	if (status == IB_WC_WR_FLUSH_ERR)
		softib_count(qp->sport, SOFTIB_CNT_SEND_FLUSHED);
	qp->sq_head = (qp->sq_head + 1) % qp->max_send_wr;
	qp->sq_count--;
}

/* Is the send WR @seq still on the send queue (not completed)? Under qp->lock. */
bool softib_sq_holds(struct softib_qp *qp, u32 seq)
{
	/* unsigned: a WR before the head wraps to far above sq_count */
	return qp->sq_count && seq - softib_sq_entry(qp, 0)->seq < qp->sq_count;
}

/* Complete, in order, the send WRs whose packets have left; under qp->lock. */
static void softib_sq_advance(struct softib_qp *qp)
{
	while (qp->sq_count) {
		struct softib_swqe *e = softib_sq_entry(qp, 0);

		if (!e->no_pkt && (s32)(e->seq - qp->sq_done) > 0)
			break;
		softib_sq_pop(qp, e->status);
	}
}

void softib_sq_done_locked(struct softib_qp *qp, u32 seq)
{
	if ((s32)(seq - qp->sq_done) > 0)
		qp->sq_done = seq;
	if (qp->state == IB_QPS_RTS || qp->state == IB_QPS_SQD || qp->state == IB_QPS_SQE)
		softib_sq_advance(qp);
}

void softib_qp_send_done(struct softib_dev *sdev, struct softib_qp *qp, u32 qpn, u32 seq)
{
	unsigned long flags;

	/* destroy_qp erases the QPN, then waits for RCU: qp is still alive here */
	if (softib_qp_find(sdev, qpn) != qp)
		return;
	if (qp->rn) {
		softib_rn_tx_done(qp->rn, seq);	/* seq: the tx queue */
		return;
	}
	spin_lock_irqsave(&qp->lock, flags);
	softib_sq_done_locked(qp, seq);
	spin_unlock_irqrestore(&qp->lock, flags);
}

/*
 * After the move to ERR: flush the send queue (a WR refused at execution
 * keeps its own error); caller holds qp->lock.
 */
static void softib_qp_flush_sq(struct softib_qp *qp)
{
	enum ib_wc_status st;

	while (qp->sq_count) {
		st = softib_sq_entry(qp, 0)->status;
		softib_sq_pop(qp, st != IB_WC_SUCCESS ? st : IB_WC_WR_FLUSH_ERR);
	}
}

/* After the move to ERR: complete every posted receive with a flush error. */
static void softib_qp_flush_rq(struct softib_qp *qp)
{
	unsigned long flags;
	u64 wr_id;

	for (;;) {
		spin_lock_irqsave(&qp->lock, flags);
		if (!qp->rq_count || qp->state != IB_QPS_ERR) {
			spin_unlock_irqrestore(&qp->lock, flags);
			return;
		}
		wr_id = qp->rq[qp->rq_head].wr_id;
		qp->rq_head = (qp->rq_head + 1) % qp->rq_size;
		qp->rq_count--;
		spin_unlock_irqrestore(&qp->lock, flags);

		softib_qp_complete(qp, qp->ibqp.recv_cq, wr_id, IB_WC_RECV, IB_WC_WR_FLUSH_ERR, 0);
	}
}

int softib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		     struct ib_udata *udata)
{
	struct softib_qp *qp = to_sqp(ibqp);
	enum ib_qp_state cur, new;
	unsigned long flags;
	int err = 0;

	if (udata)
		return -EOPNOTSUPP;
	/*
	 * fail_modify_qp: the next N moves of a UD QP (not QP0/1) to INIT,
	 * RTR or RTS fail as a short-of-memory HCA's would; the way down
	 * (RESET, ERR) always works.
	 */
	if (ibqp->qp_type == IB_QPT_UD && ibqp->qp_num > 1 && (mask & IB_QP_STATE) &&
	    attr->qp_state != IB_QPS_RESET && attr->qp_state != IB_QPS_ERR &&
	    atomic_add_unless(&to_sdev(ibqp->device)->fail_modify_qp, -1, 0))
		return -ENOMEM;

	spin_lock_irqsave(&qp->lock, flags);
	cur = mask & IB_QP_CUR_STATE ? attr->cur_qp_state : qp->state;
	new = mask & IB_QP_STATE ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, new, ibqp->qp_type, mask)) {
		ibdev_dbg(ibqp->device, "QP 0x%x: bad transition %d -> %d mask 0x%x\n",
			  ibqp->qp_num, cur, new, mask);
		err = -EINVAL;
		goto out_unlock;
	}
	if (((mask & IB_QP_PORT) && !rdma_is_port_valid(ibqp->device, attr->port_num)) ||
	    ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index >= SOFTIB_PKEY_TBL_LEN)) {
		err = -EINVAL;
		goto out_unlock;
	}

	/*
	 * ib_modify_qp_is_ok() allows IB_QP_PORT on RESET -> INIT only; the
	 * attachments live on the port's list, so none may be left behind
	 */
	if (mask & IB_QP_PORT) {
		struct softib_dev *sport = softib_port(to_sdev(ibqp->device), attr->port_num);

		if (sport != qp->sport && atomic_read(&qp->n_mcast)) {
			err = -EBUSY;
			goto out_unlock;
		}
		WRITE_ONCE(qp->sport, sport);
	}

	if (mask & IB_QP_QKEY)
		WRITE_ONCE(qp->qkey, attr->qkey);
	if (mask & IB_QP_PKEY_INDEX)
		WRITE_ONCE(qp->pkey_index, attr->pkey_index);
	if (mask & IB_QP_SQ_PSN)
		qp->sq_psn = attr->sq_psn & 0xffffff;
	if (qp->rc) {
		err = softib_rc_modify(qp, attr, mask, cur, new);
		if (err)
			goto out_unlock;
	}
	if (new == IB_QPS_RESET) {
		/* discard without completions */
		qp->rq_head = 0;
		qp->rq_tail = 0;
		qp->rq_count = 0;
		qp->sq_head = 0;
		qp->sq_count = 0;
		if (qp->rc)
			softib_rc_reset_locked(qp, false);
	}
	if (new == IB_QPS_ERR && cur != IB_QPS_ERR)
		softib_qp_err_locked(qp);
	else
		WRITE_ONCE(qp->state, new);
out_unlock:
	spin_unlock_irqrestore(&qp->lock, flags);

	/*
	 * A packet being written into a WQE taken before the reset completes
	 * first: after RESET the ULP owns, and may free, every buffer it
	 * posted, and no completion may follow.
	 */
	if (!err && new == IB_QPS_RESET) {
		while (READ_ONCE(qp->rx_busy))
			cpu_relax();
		/* and its completions leave the CQs, as mlx5's do */
		if (cur != IB_QPS_RESET)
			softib_qp_clean_cqs(qp);
	}

	if (!err && new == IB_QPS_ERR && cur != IB_QPS_ERR)
		softib_qp_err_finish(qp);
	return err;
}

/* The move to ERR under qp->lock: the send queue flushed, RC traffic stopped. */
void softib_qp_err_locked(struct softib_qp *qp)
{
	WRITE_ONCE(qp->state, IB_QPS_ERR);
	if (qp->rc)
		softib_rc_reset_locked(qp, true);
	softib_qp_flush_sq(qp);
}

/* ... and after it, without the lock: the receive queue, the SRQ event. */
void softib_qp_err_finish(struct softib_qp *qp)
{
	softib_qp_flush_rq(qp);
	if (qp->rc)
		softib_rc_err_finish(qp);
}

/* What an HCA does to a QP on a fault: ERR, every WR flushed. */
void softib_qp_to_err(struct softib_qp *qp)
{
	enum ib_qp_state cur;
	unsigned long flags;

	spin_lock_irqsave(&qp->lock, flags);
	cur = qp->state;
	if (cur != IB_QPS_RESET && cur != IB_QPS_ERR)
		softib_qp_err_locked(qp);
	spin_unlock_irqrestore(&qp->lock, flags);
	if (cur != IB_QPS_RESET && cur != IB_QPS_ERR)
		softib_qp_err_finish(qp);
}

void softib_qp_event(struct softib_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = type,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/*
 * The qp_fatal knob: a local work queue catastrophic error on QP qpn (IBA
 * 11.6.3.1): the QP goes to ERR and its owner gets IB_EVENT_QP_FATAL.
 */
int softib_qp_fatal(struct softib_dev *sdev, u32 qpn)
{
	struct softib_qp *qp;

	/* destroy_qp waits for RCU readers after erasing the QPN */
	rcu_read_lock();
	qp = softib_qp_find(sdev, qpn);
	if (qp) {
		softib_qp_to_err(qp);
		softib_count(sdev, SOFTIB_CNT_QP_FATAL);
		softib_qp_event(qp, IB_EVENT_QP_FATAL);
	}
	rcu_read_unlock();
	return qp ? 0 : -ENOENT;
}

/*
 * The dev_fatal knob: a catastrophic HCA error. Every QP goes to ERR and
 * IB_EVENT_DEVICE_FATAL is dispatched; softib does not model the reset an
 * HCA needs afterwards (the device keeps working for new QPs).
 */
void softib_dev_fatal(struct softib_dev *sdev)
{
	struct ib_event ev = {
		.device = softib_ibdev(sdev),
		.element.port_num = 1,
		.event = IB_EVENT_DEVICE_FATAL,
	};
	struct softib_qp *qp;
	unsigned long qpn;

	rcu_read_lock();
	xa_for_each(&sdev->hca->qps, qpn, qp)
		softib_qp_to_err(qp);
	rcu_read_unlock();
	ib_dispatch_event(&ev);
}

/*
 * rdma res show qp -dd: the queue sizes the QP was made with ("sq_wr",
 * "rq_wr", or "srq_wr" for one that receives from an SRQ), what the
 * vendor drivers' entries let an administrator check for the ULPs' ring
 * parameters.
 */
int softib_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct softib_qp *qp = to_sqp(ibqp);
	struct nlattr *table = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);

	if (!table)
		return -EMSGSIZE;
	if (rdma_nl_put_driver_u32(msg, "sq_wr", qp->max_send_wr) ||
	    (qp->srq ? rdma_nl_put_driver_u32(msg, "srq_wr", qp->srq->size) :
		       rdma_nl_put_driver_u32(msg, "rq_wr", qp->rq_size))) {
		nla_nest_cancel(msg, table);
		return -EMSGSIZE;
	}
	nla_nest_end(msg, table);
	return 0;
}

int softib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_qp_init_attr *init)
{
	struct softib_qp *qp = to_sqp(ibqp);
	struct softib_dev *sdev = READ_ONCE(qp->sport);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	attr->qp_state = READ_ONCE(qp->state);
	attr->cur_qp_state = attr->qp_state;
	attr->path_mtu = READ_ONCE(sdev->mtu);
	attr->qkey = READ_ONCE(qp->qkey);
	attr->pkey_index = READ_ONCE(qp->pkey_index);
	attr->sq_psn = qp->sq_psn;
	attr->port_num = sdev->port_num;
	attr->cap.max_send_wr = qp->max_send_wr;
	attr->cap.max_recv_wr = qp->rq_size;
	attr->cap.max_send_sge = qp->max_send_sge;
	attr->cap.max_recv_sge = qp->srq ? 0 : softib_max_recv_sge();
	if (qp->srq)
		attr->cap.max_recv_wr = 0;
	if (qp->rc)
		softib_rc_query(qp, attr);

	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sq_sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	init->srq = qp->srq ? &qp->srq->ibsrq : NULL;
	init->port_num = sdev->port_num;
	return 0;
}

void softib_build_grh(struct softib_dev *sdev, const struct rdma_ah_attr *attr, u32 len,
		      struct ib_grh *grh)
{
	const struct ib_global_route *route = rdma_ah_read_grh(attr);
	u32 pad = (4 - (len & 3)) & 3;

	grh->version_tclass_flow = cpu_to_be32(6U << 28 | (u32)route->traffic_class << 20 |
					       (route->flow_label & 0xfffff));
	/* BTH + DETH + payload + pad + ICRC */
	grh->paylen = cpu_to_be16(12 + 8 + len + pad + 4);
	grh->next_hdr = 0x1b;
	grh->hop_limit = route->hop_limit;
	grh->sgid.global.subnet_prefix = cpu_to_be64(softib_gid_prefix(sdev));
	grh->sgid.global.interface_id = cpu_to_be64(softib_port_guid(sdev, route->sgid_index));
	grh->dgid = route->dgid;
}

/*
 * The headers of a UD SEND ONLY from QP @sqpn of port @sdev along @attr
 * (LRH, BTH, DETH, and the GRH if @attr has one) around @pkt's payload,
 * whose length pkt->len already is.
 */
void softib_ud_headers(struct softib_dev *sdev, struct softib_pkt *pkt,
		       const struct rdma_ah_attr *attr, u16 pkey, u32 dqpn, u32 qkey,
		       u32 sqpn)
{
	pkt->slid = softib_dev_lid(sdev);
	pkt->dlid = rdma_ah_get_dlid(attr);
	pkt->sl = rdma_ah_get_sl(attr);
	pkt->pkey = pkey;
	pkt->dqpn = dqpn & 0xffffff;
	pkt->qkey = qkey;
	pkt->sqpn = sqpn;
	pkt->opcode = IB_OPCODE_UD_SEND_ONLY;
	if (rdma_ah_get_ah_flags(attr) & IB_AH_GRH) {
		pkt->has_grh = true;
		softib_build_grh(sdev, attr, pkt->len, &pkt->grh);
	}
}

/*
 * Put a send WR on the send queue; caller holds qp->lock and checked there
 * is room. Returns its sequence number.
 */
u32 softib_sq_add(struct softib_qp *qp, const struct ib_send_wr *wr, u32 len,
		  enum ib_wc_status status, bool no_pkt)
{
	struct softib_swqe *e = softib_sq_entry(qp, qp->sq_count);

	e->wr_id = wr->wr_id;
	e->seq = qp->sq_seq++;
	e->byte_len = len;
	e->status = status;
	e->signaled = qp->sq_sig_all || (wr->send_flags & IB_SEND_SIGNALED);
	e->no_pkt = no_pkt;
	qp->sq_count++;
	return e->seq;
}

struct softib_pkt_tmpl {
	struct softib_dev *sdev;
	struct softib_qp *qp;
	u16 pkey;
};

/*
 * A packet of len payload bytes with the headers of a UD send WR (the
 * payload is left to the caller); NULL without memory.
 */
static struct softib_pkt *softib_pkt_for(const struct ib_send_wr *wr, u32 len, void *arg)
{
	const struct softib_pkt_tmpl *t = arg;
	const struct ib_ud_wr *ud = ud_wr(wr);
	const struct rdma_ah_attr *attr;
	struct softib_pkt *pkt;

	pkt = softib_pkt_alloc(len, GFP_ATOMIC);
	if (!pkt)
		return NULL;

	attr = &to_sah(ud->ah)->attr;
	/* a Q_Key with the MSB set means "use the QP's own Q_Key" */
	softib_ud_headers(t->sdev, pkt, attr, t->pkey, ud->remote_qpn,
			  ud->remote_qkey & 0x80000000 ? READ_ONCE(t->qp->qkey) : ud->remote_qkey,
			  t->qp->ibqp.qp_num);
	if (wr->opcode == IB_WR_SEND_WITH_IMM) {
		pkt->opcode = IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE;
		pkt->imm = wr->ex.imm_data;
	}
	return pkt;
}

/*
 * The packets of a send WR with len bytes in its SGEs, on @pkts: one, or
 * an LSO WR's segments. Returns the WR's completion status (nothing on
 * @pkts if it is not IB_WC_SUCCESS), or a negative errno without memory.
 */
static int softib_build_pkts(struct softib_dev *sdev, struct softib_qp *qp,
			     const struct ib_send_wr *wr, u32 len, u16 pkey,
			     struct list_head *pkts)
{
	struct softib_pkt_tmpl t = { .sdev = sdev, .qp = qp, .pkey = pkey };
	u32 mtu = ib_mtu_enum_to_int(READ_ONCE(sdev->mtu));
	struct softib_sges *src;
	struct softib_pkt *pkt;
	int st;

	if (!softib_sges_ok(sdev, qp->ibqp.pd, wr->sg_list, wr->num_sge))
		return IB_WC_LOC_PROT_ERR;
	if (wr->opcode != IB_WR_LSO && len > mtu)
		return IB_WC_LOC_LEN_ERR;
	/* the packets read the data when they leave (softib_sendbuf.c) */
	src = softib_sges_get(wr, GFP_ATOMIC);
	if (!src)
		return -ENOMEM;
	if (wr->opcode == IB_WR_LSO) {
		st = softib_lso_segment(sdev, wr, len, mtu, pkts, softib_pkt_for, &t, qp, src);
		if (st == IB_WC_GENERAL_ERR)
			st = -ENOMEM;
		else if (st != IB_WC_SUCCESS)
			softib_count(sdev, SOFTIB_CNT_TX_LSO_ERR);
	} else {
		pkt = softib_pkt_for(wr, len, &t);
		st = pkt ? IB_WC_SUCCESS : -ENOMEM;
		if (pkt) {
			softib_pkt_defer(pkt, qp, src, 0, 0,
					 (wr->send_flags & IB_SEND_IP_CSUM) && sdev->ud_csum ?
					 SOFTIB_FIX_CSUM : SOFTIB_FIX_NONE);
			list_add_tail(&pkt->list, pkts);
		}
	}
	softib_sges_put(src);	/* the packets hold their own references */
	return st;
}

static void softib_pkts_free(struct list_head *pkts)
{
	struct softib_pkt *pkt, *tmp;

	list_for_each_entry_safe(pkt, tmp, pkts, list) {
		list_del(&pkt->list);
		softib_pkt_free(pkt);
	}
}

/* Post one send WR; returns an errno for a WR the QP refuses. */
static int softib_post_one_send(struct softib_dev *sdev, struct softib_qp *qp,
				const struct ib_send_wr *wr)
{
	const struct ib_ud_wr *ud = ud_wr(wr);
	struct softib_pkt *pkt, *tmp;
	u16 pkey_index, pkey;
	unsigned long flags;
	int i, status = IB_WC_SUCCESS;
	LIST_HEAD(pkts);
	u32 len = 0, seq;
	bool sqe;

	if (wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM &&
	    wr->opcode != IB_WR_LSO)
		return -EINVAL;
	/* as mlx4: LSO only on a QP created for it, with a header to copy */
	if (wr->opcode == IB_WR_LSO && (!qp->lso || !ud->header))
		return -EINVAL;
	if (wr->num_sge < 0 || wr->num_sge > qp->max_send_sge || !ud->ah ||
	    ud->ah->device != softib_ibdev(sdev))
		return -EINVAL;
	if (atomic_add_unless(&sdev->fail_post_send, -1, 0))
		return -ENOMEM;

	for (i = 0; i < wr->num_sge; i++) {
		if (wr->sg_list[i].length > 0x10000)
			return -EINVAL;
		len += wr->sg_list[i].length;
	}
	pkey_index = qp->ibqp.qp_type == IB_QPT_UD ? READ_ONCE(qp->pkey_index) : ud->pkey_index;
	if (pkey_index >= SOFTIB_PKEY_TBL_LEN)
		return -EINVAL;
	pkey = READ_ONCE(sdev->pkeys[pkey_index]);
	if (!(pkey & 0x7fff))
		return -EINVAL;
	/* a send queue in SQE looks at no WR: it flushes them */
	sqe = READ_ONCE(qp->state) == IB_QPS_SQE;
	if (!sqe) {
		status = softib_build_pkts(sdev, qp, wr, len, pkey, &pkts);
		if (status < 0)
			return status;
	}

	spin_lock_irqsave(&qp->lock, flags);
	if (qp->state != IB_QPS_RTS && qp->state != IB_QPS_ERR && qp->state != IB_QPS_SQE) {
		spin_unlock_irqrestore(&qp->lock, flags);
		softib_pkts_free(&pkts);
		return -EINVAL;
	}
	if (qp->sq_count == qp->max_send_wr) {
		/* as an HCA: the ULP posted more than max_send_wr outstanding */
		spin_unlock_irqrestore(&qp->lock, flags);
		softib_pkts_free(&pkts);
		softib_count(sdev, SOFTIB_CNT_POST_SEND_FULL);
		return -ENOMEM;
	}
	if (qp->state == IB_QPS_ERR) {
		/* posted to a QP in error: flushed at once */
		softib_pkts_free(&pkts);
		softib_sq_add(qp, wr, len, IB_WC_WR_FLUSH_ERR, true);
		softib_qp_flush_sq(qp);
		spin_unlock_irqrestore(&qp->lock, flags);
		return 0;
	}
	if (sqe || qp->state == IB_QPS_SQE) {
		/* the send queue stopped at an error: flushed until RTS again */
		softib_pkts_free(&pkts);
		softib_sq_add(qp, wr, len, IB_WC_WR_FLUSH_ERR, true);
		softib_sq_advance(qp);
		spin_unlock_irqrestore(&qp->lock, flags);
		return 0;
	}
	if (status != IB_WC_SUCCESS) {
		/*
		 * Refused by the HCA (too long, a bad LSO header, an SGE with
		 * no key of the PD): completes in error, nothing is sent, and
		 * a UD QP's send queue stops in SQE (IBA 10.3.1) until the ULP
		 * moves it back to RTS; receives go on.
		 */
		if (status == IB_WC_LOC_LEN_ERR)
			softib_count(sdev, SOFTIB_CNT_DROP_TOO_LONG);
		softib_sq_add(qp, wr, len, status, true);
		if (qp->ibqp.qp_type == IB_QPT_UD) {
			WRITE_ONCE(qp->state, IB_QPS_SQE);
			softib_count(sdev, SOFTIB_CNT_SQ_ERROR);
		}
		softib_sq_advance(qp);
		spin_unlock_irqrestore(&qp->lock, flags);
		return 0;
	}
	seq = softib_sq_add(qp, wr, len, IB_WC_SUCCESS, false);
	list_for_each_entry_safe(pkt, tmp, &pkts, list) {
		bool last = list_is_last(&pkt->list, &pkts);

		list_del(&pkt->list);
		/* the WR completes when its last packet has left */
		pkt->sqp = last ? qp : NULL;
		pkt->sseq = seq;
		softib_count(sdev, SOFTIB_CNT_TX_PACKETS);
		softib_count_add(sdev, SOFTIB_CNT_TX_BYTES, pkt->len);
		if (!softib_send_from(sdev, pkt) && last) {
			/* dropped by the device: the WR completes all the same */
			softib_sq_entry(qp, qp->sq_count - 1)->no_pkt = true;
			softib_sq_advance(qp);
		}
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	return 0;
}

/* May run with IRQs off (ib_mad): only queues packets, never transmits. */
int softib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		     const struct ib_send_wr **bad_wr)
{
	struct softib_qp *qp = to_sqp(ibqp);
	struct softib_dev *sdev = READ_ONCE(qp->sport);
	int err;

	for (; wr; wr = wr->next) {
		if (qp->rc)
			err = softib_rc_post_send(sdev, qp, wr);
		else
			err = softib_post_one_send(sdev, qp, wr);
		if (err) {
			*bad_wr = wr;
			return err;
		}
	}
	return 0;
}

int softib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		     const struct ib_recv_wr **bad_wr)
{
	struct softib_qp *qp = to_sqp(ibqp);
	struct softib_rwqe *wqe;
	unsigned long flags;
	int err = 0;

	if (qp->srq) {
		/* receives of an SRQ-attached QP go to the SRQ */
		*bad_wr = wr;
		return -EINVAL;
	}
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || wr->num_sge > softib_max_recv_sge()) {
			err = -EINVAL;
			break;
		}
		spin_lock_irqsave(&qp->lock, flags);
		if (qp->state == IB_QPS_RESET) {
			err = -EINVAL;
		} else if (qp->state == IB_QPS_ERR) {
			spin_unlock_irqrestore(&qp->lock, flags);
			softib_qp_complete(qp, ibqp->recv_cq, wr->wr_id, IB_WC_RECV,
					   IB_WC_WR_FLUSH_ERR, 0);
			continue;
		} else if (qp->rq_count == qp->rq_size) {
			err = -ENOMEM;
		} else {
			wqe = &qp->rq[qp->rq_tail];
			wqe->wr_id = wr->wr_id;
			wqe->num_sge = wr->num_sge;
			memcpy(wqe->sge, wr->sg_list, wr->num_sge * sizeof(*wr->sg_list));
			qp->rq_tail = (qp->rq_tail + 1) % qp->rq_size;
			qp->rq_count++;
		}
		spin_unlock_irqrestore(&qp->lock, flags);
		if (err)
			break;
	}
	if (err)
		*bad_wr = wr;
	return err;
}

/*
 * Attach qp to the group gid. lid 0 (enhanced IPoIB's underlay QP, which
 * ConnectX attaches by MGID and MLID-less): the group's packets are found
 * by their GRH DGID, which multicast always carries.
 */
int softib_qp_attach(struct softib_dev *sdev, struct softib_qp *qp, const union ib_gid *gid,
		     u16 lid)
{
	struct softib_mcast_att *att, *new;
	unsigned long flags;
	int err = 0;

	new = kzalloc(sizeof(*new), GFP_KERNEL);
	if (!new)
		return -ENOMEM;
	new->mgid = *gid;
	new->mlid = lid;
	new->qp = qp;

	spin_lock_irqsave(&sdev->mcast_lock, flags);
	list_for_each_entry(att, &sdev->mcast, list) {
		if (memcmp(&att->mgid, gid, sizeof(*gid)))
			continue;
		/* one MGID has one MLID on a subnet */
		if (lid && att->mlid && att->mlid != lid) {
			err = -EINVAL;
			goto out_unlock;
		}
		if (att->qp == qp)
			goto out_unlock;	/* already attached */
	}
	if (sdev->n_mcast >= SOFTIB_MAX_MCAST_GRP * SOFTIB_MAX_MCAST_ATT ||
	    atomic_read(&qp->n_mcast) >= SOFTIB_MAX_MCAST_GRP) {
		err = -ENOMEM;
		goto out_unlock;
	}
	list_add_tail_rcu(&new->list, &sdev->mcast);
	sdev->n_mcast++;
	atomic_inc(&qp->n_mcast);
	new = NULL;
out_unlock:
	spin_unlock_irqrestore(&sdev->mcast_lock, flags);
	kfree(new);
	return err;
}

int softib_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct softib_qp *qp = to_sqp(ibqp);
	int err;

	if (ibqp->qp_type != IB_QPT_UD || gid->raw[0] != 0xff || !softib_lid_is_mcast(lid))
		return -EINVAL;
	err = softib_qp_attach(READ_ONCE(qp->sport), qp, gid, lid);
	if (err)
		ibdev_dbg(ibqp->device, "attach %pI6 lid 0x%x: %d\n", gid->raw, lid, err);
	return err;
}

/*
 * ConnectX finds the attachment by MGID and QP and ignores the LID given
 * to detach, so a consumer whose member record changed since the attach
 * still detaches.
 */
int softib_qp_detach(struct softib_dev *sdev, struct softib_qp *qp, const union ib_gid *gid)
{
	struct softib_mcast_att *att;
	unsigned long flags;
	int err = -EINVAL;

	spin_lock_irqsave(&sdev->mcast_lock, flags);
	list_for_each_entry(att, &sdev->mcast, list) {
		if (att->qp != qp || memcmp(&att->mgid, gid, sizeof(*gid)))
			continue;
		list_del_rcu(&att->list);
		sdev->n_mcast--;
		atomic_dec(&qp->n_mcast);
		kfree_rcu(att, rcu);
		err = 0;
		break;
	}
	spin_unlock_irqrestore(&sdev->mcast_lock, flags);
	return err;
}

int softib_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct softib_qp *qp = to_sqp(ibqp);

	return softib_qp_detach(READ_ONCE(qp->sport), qp, gid);
}

/* Copy len bytes from src to the WQE's buffers, starting at byte off. */
void softib_scatter(const struct softib_rwqe *wqe, u32 off, const void *src, u32 len)
{
	u32 i, n;

	for (i = 0; i < wqe->num_sge && len; i++) {
		u32 sge_len = wqe->sge[i].length;

		if (off >= sge_len) {
			off -= sge_len;
			continue;
		}
		n = min(len, sge_len - off);
		memcpy((void *)(uintptr_t)(wqe->sge[i].addr + off), src, n);
		src += n;
		len -= n;
		off = 0;
	}
}

static bool softib_qp_rx_keys(struct softib_dev *sdev, struct softib_qp *qp,
			      const struct softib_pkt *pkt, int *pkey_index)
{
	switch (qp->ibqp.qp_type) {
	case IB_QPT_SMI:
		*pkey_index = max(softib_pkey_find(sdev, pkt->pkey), 0);
		return true;
	case IB_QPT_GSI:
		*pkey_index = softib_pkey_find(sdev, pkt->pkey);
		if (*pkey_index < 0) {
			softib_count(sdev, SOFTIB_CNT_DROP_BAD_PKEY);
			return false;
		}
		if (pkt->qkey != IB_QP1_QKEY) {
			softib_count(sdev, SOFTIB_CNT_DROP_BAD_QKEY);
			return false;
		}
		return true;
	default:
		*pkey_index = READ_ONCE(qp->pkey_index);
		if (!softib_pkey_match(READ_ONCE(sdev->pkeys[*pkey_index]), pkt->pkey)) {
			softib_count(sdev, SOFTIB_CNT_DROP_BAD_PKEY);
			return false;
		}
		if (pkt->qkey != READ_ONCE(qp->qkey)) {
			softib_count(sdev, SOFTIB_CNT_DROP_BAD_QKEY);
			return false;
		}
		return true;
	}
}

/* What the HCA's checksum engine says of a received UD packet. */
static void softib_rx_csum(struct softib_dev *sdev, const struct softib_pkt *pkt, struct ib_wc *wc)
{
	switch (softib_csum_verify(pkt)) {
	case 1:
		wc->wc_flags |= IB_WC_IP_CSUM_OK;
		softib_count(sdev, SOFTIB_CNT_RX_CSUM_OK);
		break;
	case -1:
		softib_count(sdev, SOFTIB_CNT_RX_CSUM_BAD);
		break;
	}
}

void softib_qp_rx(struct softib_dev *sdev, struct softib_qp *qp, const struct softib_pkt *pkt)
{
	struct ib_wc wc = {};
	struct softib_rwqe wqe;
	enum ib_qp_state state;
	unsigned long flags;
	int pkey_index;
	u32 total = 0, i;

	BUILD_BUG_ON(sizeof(pkt->grh) != SOFTIB_GRH_BYTES);

	state = READ_ONCE(qp->state);
	if (state != IB_QPS_RTR && state != IB_QPS_RTS && state != IB_QPS_SQE) {
		softib_count(sdev, SOFTIB_CNT_DROP_QP_STATE);
		return;
	}
	if (!softib_qp_rx_keys(sdev, qp, pkt, &pkey_index))
		return;
	if (qp->rn) {
		/* an enhanced IPoIB underlay QP: the provider's channels */
		softib_rn_rx(sdev, qp->rn, pkt);
		return;
	}

	spin_lock_irqsave(&qp->lock, flags);
	if (qp->state != IB_QPS_RTR && qp->state != IB_QPS_RTS && qp->state != IB_QPS_SQE) {
		spin_unlock_irqrestore(&qp->lock, flags);
		softib_count(sdev, SOFTIB_CNT_DROP_QP_STATE);
		return;
	}
	/* rx_starve: the next N packets find the ring as if it were empty */
	if (!qp->rq_count || atomic_add_unless(&sdev->rx_starve, -1, 0)) {
		spin_unlock_irqrestore(&qp->lock, flags);
		/* UD has no flow control: the packet is lost, the sender goes on */
		softib_count(sdev, SOFTIB_CNT_DROP_NO_RWQE);
		return;
	}
	wqe = qp->rq[qp->rq_head];
	for (i = 0; i < wqe.num_sge; i++)
		total += wqe.sge[i].length;
	if (total < SOFTIB_GRH_BYTES + pkt->len) {
		/*
		 * Longer than the buffer: for UD (never on an SRQ here) the
		 * IBA's class D responder error, a silent drop that takes no
		 * WQE and writes no completion (ConnectX unverified:
		 * Documentation/softib.rst).
		 */
		spin_unlock_irqrestore(&qp->lock, flags);
		softib_count(sdev, SOFTIB_CNT_DROP_TOO_LONG);
		return;
	}
	qp->rq_head = (qp->rq_head + 1) % qp->rq_size;
	qp->rq_count--;
	qp->rx_busy++;		/* a move to RESET waits for this WQE */
	spin_unlock_irqrestore(&qp->lock, flags);

	wc.wr_id = wqe.wr_id;
	wc.opcode = IB_WC_RECV;
	wc.qp = &qp->ibqp;
	wc.port_num = sdev->port_num;
	if (!softib_sges_ok(sdev, qp->ibqp.pd, wqe.sge, wqe.num_sge)) {
		/* a buffer the HCA may not write: error CQE, the QP in ERR */
		wc.status = IB_WC_LOC_PROT_ERR;
		softib_count(sdev, SOFTIB_CNT_RX_ERR_CQE);
		softib_cq_push(to_scq(qp->ibqp.recv_cq), &wc, false);
		spin_lock_irqsave(&qp->lock, flags);
		qp->rx_busy--;
		spin_unlock_irqrestore(&qp->lock, flags);
		softib_qp_to_err(qp);
		return;
	}
	if (pkt->has_grh)
		softib_scatter(&wqe, 0, &pkt->grh, sizeof(pkt->grh));
	softib_scatter(&wqe, SOFTIB_GRH_BYTES, pkt->data, pkt->len);
	wc.status = IB_WC_SUCCESS;
	wc.byte_len = SOFTIB_GRH_BYTES + pkt->len;
	wc.src_qp = pkt->sqpn;
	wc.slid = pkt->slid;
	wc.sl = pkt->sl;
	wc.pkey_index = pkey_index;
	if (pkt->has_grh)
		wc.wc_flags |= IB_WC_GRH;
	if (pkt->opcode == IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE) {
		wc.wc_flags |= IB_WC_WITH_IMM;
		wc.ex.imm_data = pkt->imm;
	}
	if (qp->ibqp.qp_type == IB_QPT_UD && sdev->ud_csum)
		softib_rx_csum(sdev, pkt, &wc);
	softib_count(sdev, SOFTIB_CNT_RX_PACKETS);
	softib_count_add(sdev, SOFTIB_CNT_RX_BYTES, pkt->len);
	softib_cq_push(to_scq(qp->ibqp.recv_cq), &wc, false);

	spin_lock_irqsave(&qp->lock, flags);
	qp->rx_busy--;
	spin_unlock_irqrestore(&qp->lock, flags);
}
