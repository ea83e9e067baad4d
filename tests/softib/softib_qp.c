// SPDX-License-Identifier: GPL-2.0
/*
 * softib: UD, GSI (QP1) and SMI (QP0) queue pairs. Sends are copied into a
 * packet and completed at post time, then handed to the fabric; receives
 * wait in a ring until the fabric delivers a packet (softib_qp_rx()).
 */
#include <linux/mm.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_pack.h>
#include <rdma/ib_verbs.h>

#include "softib.h"

#define SOFTIB_QPN_FIRST	0x48
#define SOFTIB_QPN_LAST		0xfffffe	/* 0xffffff is the multicast QPN */

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
		break;
	case IB_QPT_GSI:
	case IB_QPT_SMI:
		if (init->port_num != 1)
			return -EINVAL;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags || init->srq || init->rwq_ind_tbl)
		return -EOPNOTSUPP;
	if (cap->max_send_wr > SOFTIB_MAX_QP_WR || cap->max_recv_wr > SOFTIB_MAX_QP_WR ||
	    cap->max_send_sge > SOFTIB_MAX_SEND_SGE || cap->max_recv_sge > SOFTIB_MAX_RECV_SGE ||
	    cap->max_inline_data > 4096)
		return -EINVAL;

	spin_lock_init(&qp->lock);
	qp->state = IB_QPS_RESET;
	qp->sq_sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->max_send_wr = cap->max_send_wr;
	qp->max_send_sge = cap->max_send_sge;
	qp->rq_size = max_t(u32, cap->max_recv_wr, 1);
	qp->rq = kvcalloc(qp->rq_size, sizeof(*qp->rq), GFP_KERNEL);
	if (!qp->rq)
		return -ENOMEM;
	atomic_set(&qp->n_mcast, 0);

	switch (init->qp_type) {
	case IB_QPT_SMI:
		qpn = 0;
		err = xa_insert(&sdev->qps, qpn, qp, GFP_KERNEL);
		break;
	case IB_QPT_GSI:
		qpn = 1;
		err = xa_insert(&sdev->qps, qpn, qp, GFP_KERNEL);
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
		goto err_free_rq;

	ibqp->qp_num = qpn;
	ibdev_dbg(ibqp->device, "created QP 0x%x type %d\n", qpn, init->qp_type);
	return 0;

err_free_rq:
	kvfree(qp->rq);
	return err;
}

static void softib_qp_detach_all(struct softib_dev *sdev, struct softib_qp *qp)
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

int softib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct softib_dev *sdev = to_sdev(ibqp->device);
	struct softib_qp *qp = to_sqp(ibqp);

	xa_erase(&sdev->qps, ibqp->qp_num);
	softib_qp_detach_all(sdev, qp);
	synchronize_rcu();	/* the fabric no longer delivers to qp */
	kvfree(qp->rq);
	qp->rq = NULL;
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
		.port_num = 1,
	};

	softib_cq_push(to_scq(ibcq), &wc, false);
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

	spin_lock_irqsave(&qp->lock, flags);
	cur = mask & IB_QP_CUR_STATE ? attr->cur_qp_state : qp->state;
	new = mask & IB_QP_STATE ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, new, ibqp->qp_type, mask)) {
		ibdev_dbg(ibqp->device, "QP 0x%x: bad transition %d -> %d mask 0x%x\n",
			  ibqp->qp_num, cur, new, mask);
		err = -EINVAL;
		goto out_unlock;
	}
	if (((mask & IB_QP_PORT) && attr->port_num != 1) ||
	    ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index >= SOFTIB_PKEY_TBL_LEN)) {
		err = -EINVAL;
		goto out_unlock;
	}

	if (mask & IB_QP_QKEY)
		WRITE_ONCE(qp->qkey, attr->qkey);
	if (mask & IB_QP_PKEY_INDEX)
		WRITE_ONCE(qp->pkey_index, attr->pkey_index);
	if (mask & IB_QP_SQ_PSN)
		qp->sq_psn = attr->sq_psn & 0xffffff;
	if (new == IB_QPS_RESET) {
		/* discard without completions */
		qp->rq_head = 0;
		qp->rq_tail = 0;
		qp->rq_count = 0;
	}
	WRITE_ONCE(qp->state, new);
out_unlock:
	spin_unlock_irqrestore(&qp->lock, flags);

	/*
	 * A packet being written into a WQE taken before the reset completes
	 * first: after RESET the ULP owns, and may free, every buffer it
	 * posted, and no completion may follow.
	 */
	if (!err && new == IB_QPS_RESET)
		while (READ_ONCE(qp->rx_busy))
			cpu_relax();

	if (!err && new == IB_QPS_ERR && cur != IB_QPS_ERR)
		softib_qp_flush_rq(qp);
	return err;
}

int softib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_qp_init_attr *init)
{
	struct softib_qp *qp = to_sqp(ibqp);
	struct softib_dev *sdev = to_sdev(ibqp->device);

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	attr->qp_state = READ_ONCE(qp->state);
	attr->cur_qp_state = attr->qp_state;
	attr->path_mtu = READ_ONCE(sdev->mtu);
	attr->qkey = READ_ONCE(qp->qkey);
	attr->pkey_index = READ_ONCE(qp->pkey_index);
	attr->sq_psn = qp->sq_psn;
	attr->port_num = 1;
	attr->cap.max_send_wr = qp->max_send_wr;
	attr->cap.max_recv_wr = qp->rq_size;
	attr->cap.max_send_sge = qp->max_send_sge;
	attr->cap.max_recv_sge = SOFTIB_MAX_RECV_SGE;

	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sq_sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	init->port_num = 1;
	return 0;
}

static void softib_build_grh(struct softib_dev *sdev, const struct rdma_ah_attr *attr,
			     u32 len, struct ib_grh *grh)
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
	grh->sgid.global.interface_id = cpu_to_be64(sdev->guid);
	grh->dgid = route->dgid;
}

/* Post one send WR; returns an errno for a WR the QP refuses. */
static int softib_post_one_send(struct softib_dev *sdev, struct softib_qp *qp,
				const struct ib_send_wr *wr)
{
	const struct ib_ud_wr *ud = ud_wr(wr);
	enum ib_wc_status status = IB_WC_SUCCESS;
	enum ib_qp_state state = READ_ONCE(qp->state);
	const struct rdma_ah_attr *attr;
	struct softib_pkt *pkt;
	u32 len = 0, off = 0;
	u16 pkey_index, pkey;
	int i;

	if (state == IB_QPS_ERR) {
		status = IB_WC_WR_FLUSH_ERR;
		goto complete;
	}
	if (state != IB_QPS_RTS)
		return -EINVAL;
	if (wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM)
		return -EINVAL;
	if (wr->num_sge < 0 || wr->num_sge > qp->max_send_sge || !ud->ah ||
	    ud->ah->device != &sdev->ibdev)
		return -EINVAL;
	if (atomic_add_unless(&sdev->fail_post_send, -1, 0))
		return -ENOMEM;

	for (i = 0; i < wr->num_sge; i++) {
		if (wr->sg_list[i].length > 0x10000)
			return -EINVAL;
		len += wr->sg_list[i].length;
	}
	if (len > ib_mtu_enum_to_int(READ_ONCE(sdev->mtu))) {
		softib_count(sdev, SOFTIB_CNT_DROP_TOO_LONG);
		status = IB_WC_LOC_LEN_ERR;
		goto complete;
	}

	pkey_index = qp->ibqp.qp_type == IB_QPT_UD ? READ_ONCE(qp->pkey_index) : ud->pkey_index;
	if (pkey_index >= SOFTIB_PKEY_TBL_LEN)
		return -EINVAL;
	pkey = READ_ONCE(sdev->pkeys[pkey_index]);
	if (!(pkey & 0x7fff))
		return -EINVAL;

	pkt = softib_pkt_alloc(len, GFP_ATOMIC);
	if (!pkt)
		return -ENOMEM;

	attr = &to_sah(ud->ah)->attr;
	pkt->slid = softib_dev_lid(sdev);
	pkt->dlid = rdma_ah_get_dlid(attr);
	pkt->sl = rdma_ah_get_sl(attr);
	pkt->pkey = pkey;
	pkt->dqpn = ud->remote_qpn & 0xffffff;
	/* a Q_Key with the MSB set means "use the QP's own Q_Key" */
	pkt->qkey = ud->remote_qkey & 0x80000000 ? READ_ONCE(qp->qkey) : ud->remote_qkey;
	pkt->sqpn = qp->ibqp.qp_num;
	if (wr->opcode == IB_WR_SEND_WITH_IMM) {
		pkt->opcode = IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE;
		pkt->imm = wr->ex.imm_data;
	} else {
		pkt->opcode = IB_OPCODE_UD_SEND_ONLY;
	}
	if (rdma_ah_get_ah_flags(attr) & IB_AH_GRH) {
		pkt->has_grh = true;
		softib_build_grh(sdev, attr, len, &pkt->grh);
	}
	/* CONFIG_INFINIBAND_VIRT_DMA: SGE addresses are kernel virtual */
	for (i = 0; i < wr->num_sge; i++) {
		memcpy(pkt->data + off, (void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		off += wr->sg_list[i].length;
	}

	softib_count(sdev, SOFTIB_CNT_TX_PACKETS);
	softib_count_add(sdev, SOFTIB_CNT_TX_BYTES, len);
	softib_send_from(sdev, pkt);

complete:
	if (qp->sq_sig_all || (wr->send_flags & IB_SEND_SIGNALED) || status != IB_WC_SUCCESS)
		softib_qp_complete(qp, qp->ibqp.send_cq, wr->wr_id, IB_WC_SEND, status, len);
	return 0;
}

/* May run with IRQs off (ib_mad): only queues packets, never transmits. */
int softib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		     const struct ib_send_wr **bad_wr)
{
	struct softib_dev *sdev = to_sdev(ibqp->device);
	struct softib_qp *qp = to_sqp(ibqp);
	int err;

	for (; wr; wr = wr->next) {
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

	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || wr->num_sge > SOFTIB_MAX_RECV_SGE) {
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

int softib_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct softib_dev *sdev = to_sdev(ibqp->device);
	struct softib_qp *qp = to_sqp(ibqp);
	struct softib_mcast_att *att, *new;
	unsigned long flags;
	int err = 0;

	if (ibqp->qp_type != IB_QPT_UD || gid->raw[0] != 0xff || !softib_lid_is_mcast(lid))
		return -EINVAL;

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
		if (att->mlid != lid) {
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
	if (err)
		ibdev_dbg(ibqp->device, "attach %pI6 lid 0x%x: %d\n", gid->raw, lid, err);
	return err;
}

int softib_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct softib_dev *sdev = to_sdev(ibqp->device);
	struct softib_qp *qp = to_sqp(ibqp);
	struct softib_mcast_att *att;
	unsigned long flags;
	int err = -EINVAL;

	spin_lock_irqsave(&sdev->mcast_lock, flags);
	list_for_each_entry(att, &sdev->mcast, list) {
		if (att->qp != qp || att->mlid != lid || memcmp(&att->mgid, gid, sizeof(*gid)))
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

/* Copy len bytes from src to the WQE's buffers, starting at byte off. */
static void softib_scatter(const struct softib_rwqe *wqe, u32 off, const void *src, u32 len)
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

int softib_qp_rx(struct softib_dev *sdev, struct softib_qp *qp, const struct softib_pkt *pkt,
		 bool can_wait)
{
	struct ib_wc wc = {};
	struct softib_rwqe wqe;
	enum ib_qp_state state;
	unsigned long flags;
	int pkey_index;
	u32 total = 0, i;

	BUILD_BUG_ON(sizeof(pkt->grh) != SOFTIB_GRH_BYTES);

	state = READ_ONCE(qp->state);
	if (state != IB_QPS_RTR && state != IB_QPS_RTS) {
		softib_count(sdev, SOFTIB_CNT_DROP_QP_STATE);
		return 0;
	}
	if (!softib_qp_rx_keys(sdev, qp, pkt, &pkey_index))
		return 0;
	if (atomic_add_unless(&sdev->rx_starve, -1, 0)) {
		softib_count(sdev, SOFTIB_CNT_DROP_NO_RWQE);
		return 0;
	}

	spin_lock_irqsave(&qp->lock, flags);
	if (qp->state != IB_QPS_RTR && qp->state != IB_QPS_RTS) {
		spin_unlock_irqrestore(&qp->lock, flags);
		softib_count(sdev, SOFTIB_CNT_DROP_QP_STATE);
		return 0;
	}
	if (!qp->rq_count) {
		spin_unlock_irqrestore(&qp->lock, flags);
		if (can_wait)
			return -EAGAIN;
		softib_count(sdev, SOFTIB_CNT_DROP_NO_RWQE);
		return 0;
	}
	wqe = qp->rq[qp->rq_head];
	qp->rq_head = (qp->rq_head + 1) % qp->rq_size;
	qp->rq_count--;
	qp->rx_busy++;		/* a move to RESET waits for this WQE */
	spin_unlock_irqrestore(&qp->lock, flags);

	for (i = 0; i < wqe.num_sge; i++)
		total += wqe.sge[i].length;

	wc.wr_id = wqe.wr_id;
	wc.opcode = IB_WC_RECV;
	wc.qp = &qp->ibqp;
	wc.port_num = 1;
	if (total < SOFTIB_GRH_BYTES + pkt->len) {
		/* the buffer is consumed by the error, as on hardware */
		softib_count(sdev, SOFTIB_CNT_DROP_TOO_LONG);
		softib_count(sdev, SOFTIB_CNT_RX_ERR_CQE);
		wc.status = IB_WC_LOC_LEN_ERR;
	} else {
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
		softib_count(sdev, SOFTIB_CNT_RX_PACKETS);
		softib_count_add(sdev, SOFTIB_CNT_RX_BYTES, pkt->len);
	}
	softib_cq_push(to_scq(qp->ibqp.recv_cq), &wc, false);

	spin_lock_irqsave(&qp->lock, flags);
	qp->rx_busy--;
	spin_unlock_irqrestore(&qp->lock, flags);
	return 0;
}
