// SPDX-License-Identifier: GPL-2.0
/*
 * Connected mode (RFC 4755): IP over reliable connections, beside the UD QP.
 *
 * In connected mode an interface listens for IPoIB-CM requests on the
 * service ID 0x1000000000000000 | its UD QPN and says so with the RC flag
 * (0x80) in the first octet of its hardware address. A unicast packet to a
 * peer whose address has the flag goes over an RC connection of its own
 * (active side, struct ipoib_cm_tx, one per neighbour entry); everything
 * else (multicast, peers without the flag, peers that refused us) goes
 * over the UD QP, and a packet too big for UD gets the sender an ICMP
 * "fragmentation needed" / ICMPv6 "packet too big" with the UD MTU.
 *
 * Connections are one-way: a peer that sends to us connects to our
 * listener (passive side, struct ipoib_cm_rx). Receive buffers are 64 KiB
 * of pages, one SGE per page, posted to a shared receive queue when the
 * HCA has SRQs, else to a ring of each passive connection's own.
 *
 * This file starts and stops it and runs the shared CQ and cm->work; the
 * passive side is in ipoib_cm_rx.c, the active side and the transmit path
 * in ipoib_cm_tx.c, the structures they share in ipoib_cm.h.
 *
 * Everything connected mode owns hangs off one struct ipoib_cm, made by
 * ipoib_cm_start() and undone by ipoib_cm_stop(), both under op_mutex from
 * ipoib_ib_start()/ipoib_ib_stop(): a P_Key change, a CQ recovery (new
 * UD QPN, so a new service ID) or a TX-timeout restart rebuild it like the
 * UD QP. All its QPs share one CQ, polled by its own NAPI context; a QP is
 * destroyed only once every completion it can produce has been polled
 * (sends: the ring is empty after the flush; receives: the drain send
 * posted after IB_EVENT_QP_LAST_WQE_REACHED, or after the QP's own ring
 * flushed, completed), so wc->qp->qp_context is always alive.
 *
 * Locks: cm->lock (irqsave: the QP event handler may run in hard-IRQ
 * context) protects the connection lists, states and neigh->cm_tx; it is
 * taken under priv->table_lock (ipoib_cm_neigh_gone()) and under the TX
 * queue lock (xmit), never the other way round. The TX queue lock also
 * protects each connection's backlog and cm->backlogged: xmit fills them,
 * the NAPI poll posts them, cm->work drops a failed connection's. Setup
 * and teardown of connections run in cm->work on system_wq, which takes
 * no lock of ours but cm->lock and the TX queue lock; ipoib_cm_stop()
 * (op_mutex) cancels and runs it itself.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <rdma/ib_cm.h>
#include "ipoib.h"
#include "ipoib_cm.h"

/*
 * Without an SRQ each passive connection has a ring of its own (4 MiB of
 * receive buffers): the in-tree driver's parameter and default bound how
 * many. With an SRQ there is no bound but memory, as in-tree.
 */
static int ipoib_cm_max_ring_conn = 128;
module_param_named(max_nonsrq_conn_qp, ipoib_cm_max_ring_conn, int, 0444);
MODULE_PARM_DESC(max_nonsrq_conn_qp,
		 "Passive connected-mode connections without an SRQ (0-4096, default 128)");

static bool ipoib_cm_use_srq = true;
module_param_named(cm_srq, ipoib_cm_use_srq, bool, 0444);
MODULE_PARM_DESC(cm_srq,
		 "Connected mode receives through a shared receive queue when the HCA has them (default: on)");

/* The size the peer told us it receives; 0 if unusable. */
u32 ipoib_cm_peer_mtu(const void *private_data)
{
	const struct ipoib_cm_data *data = private_data;
	u32 mtu = be32_to_cpu(data->mtu);

	if (mtu < IPOIB_ENCAP_LEN + IPV6_MIN_MTU)
		return 0;
	return min_t(u32, mtu, IPOIB_CM_BUF_SIZE) - IPOIB_ENCAP_LEN;
}

void ipoib_cm_fill_data(struct ipoib_cm *cm, struct ipoib_cm_data *data)
{
	data->qpn = cpu_to_be32(ipoib_qpn(cm->priv));
	data->mtu = cpu_to_be32(IPOIB_CM_BUF_SIZE);
}

/* The name of an ib_cm event, for debug messages. */
const char *ipoib_cm_event_name(enum ib_cm_event_type ev)
{
	static const char * const names[] = {
		[IB_CM_REQ_ERROR] = "REQ error",
		[IB_CM_REQ_RECEIVED] = "REQ",
		[IB_CM_REP_ERROR] = "REP error",
		[IB_CM_REP_RECEIVED] = "REP",
		[IB_CM_RTU_RECEIVED] = "RTU",
		[IB_CM_USER_ESTABLISHED] = "established",
		[IB_CM_DREQ_ERROR] = "DREQ error",
		[IB_CM_DREQ_RECEIVED] = "DREQ",
		[IB_CM_DREP_RECEIVED] = "DREP",
		[IB_CM_TIMEWAIT_EXIT] = "timewait exit",
		[IB_CM_MRA_RECEIVED] = "MRA",
		[IB_CM_REJ_RECEIVED] = "REJ",
		[IB_CM_LAP_ERROR] = "LAP error",
		[IB_CM_LAP_RECEIVED] = "LAP",
		[IB_CM_APR_RECEIVED] = "APR",
	};

	return ev < ARRAY_SIZE(names) && names[ev] ? names[ev] : "other";
}

/*
 * Move @qp from the state before @from up to RTS with the attributes ib_cm
 * has for @id (both sides of a connection). @rq_psn, if set, replaces
 * ib_cm's receive PSN at RTR.
 */
int ipoib_cm_qp_up(struct ib_cm_id *id, struct ib_qp *qp,
		   enum ib_qp_state from, const u32 *rq_psn)
{
	static const enum ib_qp_state states[] = {
		IB_QPS_INIT, IB_QPS_RTR, IB_QPS_RTS
	};
	struct ib_qp_attr attr;
	unsigned int i;
	int mask, ret;

	for (i = 0; i < ARRAY_SIZE(states); i++) {
		if (states[i] < from)
			continue;
		memset(&attr, 0, sizeof(attr));
		attr.qp_state = states[i];
		ret = ib_cm_init_qp_attr(id, &attr, &mask);
		if (ret)
			return ret;
		if (states[i] == IB_QPS_RTR && rq_psn)
			attr.rq_psn = *rq_psn;
		ret = ib_modify_qp(qp, &attr, mask);
		if (ret)
			return ret;
	}
	return 0;
}

/* One step of cm->work: true if it did something. */
static bool ipoib_cm_work_one(struct ipoib_cm *cm)
{
	struct ipoib_cm_tx *tx, *do_tx = NULL;
	struct ipoib_cm_rx *rx, *do_rx = NULL;
	struct sk_buff_head purge;
	unsigned long flags;
	int ret;

	__skb_queue_head_init(&purge);
	spin_lock_irqsave(&cm->lock, flags);
	list_for_each_entry(tx, &cm->tx_list, list) {
		if (READ_ONCE(tx->kept))
			continue;	/* until its last flush */
		if (tx->state == IPOIB_CM_TX_NEW ||
		    (tx->state == IPOIB_CM_TX_FAILED && (tx->qp || tx->id)) ||
		    !tx->neigh) {
			do_tx = tx;
			break;
		}
	}
	if (do_tx && do_tx->state == IPOIB_CM_TX_NEW) {
		WRITE_ONCE(do_tx->req_at, jiffies);
		WRITE_ONCE(do_tx->state, IPOIB_CM_TX_CONNECTING);
	} else if (do_tx) {
		skb_queue_splice_init(&do_tx->queue, &purge);
	}
	if (!do_tx) {
		list_for_each_entry(rx, &cm->rx_list, list) {
			if (rx->state == IPOIB_CM_RX_DRAINED) {
				list_del(&rx->list);
				cm->nr_rx--;
				do_rx = rx;
				break;
			}
		}
	}
	spin_unlock_irqrestore(&cm->lock, flags);
	__skb_queue_purge(&purge);

	if (do_rx) {
		if (do_rx->id)
			ib_destroy_cm_id(do_rx->id);
		ipoib_cm_rx_free(do_rx);
		return true;
	}
	if (!do_tx)
		return false;
	tx = do_tx;
	if (tx->state == IPOIB_CM_TX_CONNECTING && !tx->qp) {
		ret = ipoib_cm_tx_connect(tx);
		if (ret) {
			ipoib_warn_ratelimited(cm->priv, IPOIB_RL_CM,
					       "cannot connect to qpn 0x%06x: %d\n",
					       tx->dqpn, ret);
			ipoib_cm_tx_fail(tx, "no REQ");
		}
		return true;
	}
	if (!ipoib_cm_tx_release(tx))
		return true;	/* kept: the others meanwhile */
	if (!tx->neigh) {
		spin_lock_irqsave(&cm->lock, flags);
		list_del(&tx->list);
		cm->nr_tx--;
		spin_unlock_irqrestore(&cm->lock, flags);
		ipoib_cm_tx_free(tx);
	}
	return true;
}

static void ipoib_cm_work(struct work_struct *work)
{
	struct ipoib_cm *cm = container_of(work, struct ipoib_cm, work);

	mutex_lock(&cm->work_mutex);
	while (ipoib_cm_work_one(cm))
		cond_resched();
	mutex_unlock(&cm->work_mutex);
}

static void ipoib_cm_wc(struct ipoib_cm *cm, struct ib_wc *wc)
{
	struct ipoib_cm_rx *rx;

	switch (wc->wr_id & IPOIB_CM_WR_KIND) {
	case IPOIB_CM_WR_RECV:
		ipoib_cm_rx_wc(cm, wc);
		break;
	case IPOIB_CM_WR_SEND:
		ipoib_cm_tx_wc(cm, wc);
		break;
	case IPOIB_CM_WR_DRAIN:
		rx = wc->qp->qp_context;
		rx->drain_done = true;
		ipoib_cm_rx_check_drained(cm, rx);
		ipoib_cm_drain_done(cm);
		break;
	default:
		ipoib_err_ratelimited(cm->priv, IPOIB_RL_BOGUS_WC,
				      "bogus RC completion %llx\n", wc->wr_id);
	}
}

static int ipoib_cm_poll(struct napi_struct *napi, int budget)
{
	struct ipoib_cm *cm = container_of(napi, struct ipoib_cm, napi);
	struct ipoib_dev_priv *priv = cm->priv;
	struct ib_wc wcs[16];
	int done = 0;

	while (done < budget) {
		int n = ib_poll_cq(cm->cq,
				   min_t(int, ARRAY_SIZE(wcs), budget - done),
				   wcs);
		int k;

		if (n <= 0)
			break;
		for (k = 0; k < n; k++)
			ipoib_cm_wc(cm, &wcs[k]);
		done += n;
	}

	smp_mb(); /* counts before the checks, pairs with xmit */
	ipoib_cm_push_all(cm);
	/* only our UD ring stops a queue; the HCA's datapath wakes its own */
	if (!priv->enhanced && netif_queue_stopped(priv->dev) &&
	    test_bit(IPOIB_FLAG_RUNNING, &priv->flags) &&
	    ipoib_tx_may_wake(priv))
		netif_wake_queue(priv->dev);

	if (done < budget && napi_complete_done(napi, done)) {
		if (ib_req_notify_cq(cm->cq, IB_CQ_NEXT_COMP |
				     IB_CQ_REPORT_MISSED_EVENTS) > 0)
			napi_schedule(napi);
	}
	return done;
}

static void ipoib_cm_cq_event(struct ib_cq *cq, void *ctx)
{
	struct ipoib_cm *cm = ctx;

	napi_schedule(&cm->napi);
}

static void ipoib_cm_cq_error(struct ib_event *event, void *ctx)
{
	struct ipoib_cm *cm = ctx;

	ipoib_err_ratelimited(cm->priv, IPOIB_RL_CQ_ERROR,
			      "connected mode CQ error (event %d): restarting\n",
			      event->event);
	/*
	 * No completion will come through it: teardown waits for none
	 * (before, the stop waited 5 s for each connection with sends in
	 * flight, under op_mutex: review 2026-12, finding 5).
	 */
	WRITE_ONCE(cm->cq_error, true);
	wake_up(&cm->wait);
	ipoib_queue_resync(cm->priv, IPOIB_RESYNC_TX_TIMEOUT);
}

/* Start and stop (op_mutex) */

/* What connected mode needs of the HCA; a message says what is missing. */
int ipoib_cm_supported(struct ipoib_dev_priv *priv)
{
	const struct ib_device_attr *a = &priv->ca->attrs;
	u32 sge = a->max_srq ? min(a->max_srq_sge, a->max_recv_sge) :
			       a->max_recv_sge;

	if (!rdma_cap_ib_cm(priv->ca, priv->port)) {
		netdev_info(priv->dev, "connected mode: the port has no IB CM\n");
		return -EOPNOTSUPP;
	}
	if (sge < IPOIB_CM_SGE) {
		netdev_info(priv->dev,
			    "connected mode: the HCA receives into %u SGEs, it needs %lu\n",
			    sge, IPOIB_CM_SGE);
		return -EOPNOTSUPP;
	}
	return 0;
}

static int ipoib_cm_srq_init(struct ipoib_cm *cm)
{
	struct ipoib_dev_priv *priv = cm->priv;
	struct ib_srq_init_attr attr = {
		.attr.max_sge = cm->nsge,
		.srq_type = IB_SRQT_BASIC,
	};
	unsigned int i;
	int ret;

	if (!priv->ca->attrs.max_srq || !ipoib_cm_use_srq)
		return 0;
	/* as in-tree: as many shared buffers as the UD ring has */
	cm->srq_size = min_t(u32, priv->rx_ring_size,
			     priv->ca->attrs.max_srq_wr);
	attr.attr.max_wr = cm->srq_size;
	cm->srq = ib_create_srq(priv->pd, &attr);
	if (IS_ERR(cm->srq)) {
		ret = PTR_ERR(cm->srq);
		cm->srq = NULL;
		if (ret == -EOPNOTSUPP)
			return 0;
		return ret;
	}
	cm->srq_ring = ipoib_cm_ring_alloc(cm, cm->srq_size);
	if (!cm->srq_ring)
		return -ENOMEM;
	for (i = 0; i < cm->srq_size; i++) {
		ret = ipoib_cm_post_recv(cm, NULL, i);
		if (ret)
			return ret;
	}
	return 0;
}

static void ipoib_cm_free(struct ipoib_cm *cm)
{
	if (cm->srq)
		ib_destroy_srq(cm->srq);
	ipoib_cm_ring_free(cm, cm->srq_ring, cm->srq_size);
	if (cm->cq)
		ib_destroy_cq(cm->cq);
	kfree(cm);
}

/*
 * Connected mode on a running interface (ipoib_ib_start, op_mutex): the
 * CQ, the SRQ and its buffers, then the listener. Our address gets the RC
 * flag through the carrier work.
 */
int ipoib_cm_start(struct ipoib_dev_priv *priv)
{
	struct ib_cq_init_attr cq_attr = {};
	unsigned int max_cqe = priv->ca->attrs.max_cqe, fixed;
	struct ipoib_cm *cm;
	int ret;

	lockdep_assert_held(&priv->op_mutex);
	cm = kzalloc(sizeof(*cm), GFP_KERNEL);
	if (!cm)
		return -ENOMEM;
	cm->priv = priv;
	cm->nsge = IPOIB_CM_SGE;
	spin_lock_init(&cm->lock);
	INIT_LIST_HEAD(&cm->tx_list);
	INIT_LIST_HEAD(&cm->rx_list);
	INIT_LIST_HEAD(&cm->backlogged);
	INIT_WORK(&cm->work, ipoib_cm_work);
	INIT_DELAYED_WORK(&cm->reap_work, ipoib_cm_reap);
	mutex_init(&cm->work_mutex);
	init_waitqueue_head(&cm->wait);

	ret = ipoib_cm_srq_init(cm);
	if (ret)
		goto err_free;
	/*
	 * Every CQE the CQ may have to hold at once: a send per slot of every
	 * active connection's ring (as many connections as half the HCA's
	 * CQ holds, IPOIB_CM_MAX_TX_CONN at most: no budget shared between
	 * the rings, which one dead peer's full ring could use up), a
	 * receive per posted buffer (the SRQ's, or each passive
	 * connection's ring: as many connections as the rest of the CQ
	 * allows, up to max_nonsrq_conn_qp) and the drains in flight.
	 */
	cm->max_tx = clamp_t(unsigned int, max_cqe / 2 / IPOIB_CM_TX_RING, 1,
			     IPOIB_CM_MAX_TX_CONN);
	fixed = cm->max_tx * IPOIB_CM_TX_RING + IPOIB_CM_MAX_DRAINS + 1;
	if (cm->srq) {
		cm->max_rx = UINT_MAX;
		cq_attr.cqe = fixed + cm->srq_size;
	} else {
		cm->max_rx = clamp(ipoib_cm_max_ring_conn, 0,
				   IPOIB_CM_MAX_RING_CONN);
		if (max_cqe > fixed + IPOIB_CM_RING_SIZE)
			cm->max_rx = min(cm->max_rx, (max_cqe - fixed) /
					 IPOIB_CM_RING_SIZE);
		cq_attr.cqe = fixed + cm->max_rx * IPOIB_CM_RING_SIZE;
	}
	cm->cq = ib_create_cq(priv->ca, ipoib_cm_cq_event, ipoib_cm_cq_error,
			      cm, &cq_attr);
	if (IS_ERR(cm->cq)) {
		ret = PTR_ERR(cm->cq);
		cm->cq = NULL;
		goto err_free;
	}

	/* on an ops-locked netdev our caller holds its instance lock */
	ipoib_compat_napi_add(priv->dev, &cm->napi, ipoib_cm_poll);
	ipoib_compat_napi_enable(&cm->napi);
	ib_req_notify_cq(cm->cq, IB_CQ_NEXT_COMP);

	cm->listen = ib_create_cm_id(priv->ca, ipoib_cm_rx_handler, cm);
	if (IS_ERR(cm->listen)) {
		ret = PTR_ERR(cm->listen);
		goto err_napi;
	}
	ret = ib_cm_listen(cm->listen,
			   cpu_to_be64(IPOIB_CM_IETF_ID | ipoib_qpn(priv)));
	if (ret) {
		ib_destroy_cm_id(cm->listen);
		goto err_napi;
	}
	rcu_assign_pointer(priv->cm, cm);
	queue_delayed_work(system_wq, &cm->reap_work, HZ);
	ipoib_dbg(priv->dev, "connected mode on qpn 0x%06x, %s\n",
		  ipoib_qpn(priv), cm->srq ? "SRQ" : "a ring per connection");
	if (!(priv->dev->dev_addr[0] & IPOIB_HW_RC))
		ipoib_addr_changed(priv);
	return 0;

err_napi:
	ipoib_compat_napi_disable(&cm->napi);
	ipoib_compat_napi_del(&cm->napi);
err_free:
	netdev_warn(priv->dev, "cannot start connected mode: %d\n", ret);
	ipoib_cm_free(cm);
	/* our address no longer offers RC */
	if (priv->dev->dev_addr[0] & IPOIB_HW_RC)
		ipoib_addr_changed(priv);
	return ret;
}

/* A passive connection is ready to be freed, or none is left. */
static bool ipoib_cm_rx_reapable(struct ipoib_cm *cm)
{
	struct ipoib_cm_rx *rx;
	unsigned long flags;
	bool ret = list_empty(&cm->rx_list);

	spin_lock_irqsave(&cm->lock, flags);
	list_for_each_entry(rx, &cm->rx_list, list)
		ret |= rx->state == IPOIB_CM_RX_DRAINED;
	spin_unlock_irqrestore(&cm->lock, flags);
	return ret;
}

/*
 * Tear every connection down and free it all (ipoib_ib_stop, op_mutex).
 * After it no xmit sees priv->cm and no ib_cm callback of ours runs.
 */
void ipoib_cm_stop(struct ipoib_dev_priv *priv)
{
	struct ipoib_cm *cm = rcu_dereference_protected(priv->cm,
					lockdep_is_held(&priv->op_mutex));
	struct ipoib_cm_tx *tx, *tx_next;
	struct ipoib_cm_rx *rx, *rx_next;
	unsigned long flags, timeout;
	bool left;

	if (!cm)
		return;
	RCU_INIT_POINTER(priv->cm, NULL);
	cancel_delayed_work_sync(&cm->reap_work);
	ib_destroy_cm_id(cm->listen);	/* no new passive connection */
	synchronize_net();		/* no xmit makes a new one */

	spin_lock_irqsave(&cm->lock, flags);
	cm->stopping = true;
	list_for_each_entry(tx, &cm->tx_list, list)
		ipoib_cm_tx_detach(tx);
	spin_unlock_irqrestore(&cm->lock, flags);

	/* Passive connections: ERR and drain; ib_cm may race us to it. */
	timeout = jiffies + IPOIB_CM_DRAIN_TIMEOUT;
	for (;;) {
		struct ipoib_cm_rx *found = NULL;

		spin_lock_irqsave(&cm->lock, flags);
		list_for_each_entry(rx, &cm->rx_list, list) {
			if (ipoib_cm_rx_claim(rx)) {
				found = rx;
				break;
			}
		}
		spin_unlock_irqrestore(&cm->lock, flags);
		if (!found)
			break;
		ipoib_cm_rx_to_err(found);
	}
	for (;;) {
		/* the work may be queued again meanwhile: work_mutex */
		ipoib_cm_work(&cm->work);
		spin_lock_irqsave(&cm->lock, flags);
		left = !list_empty(&cm->tx_list) || !list_empty(&cm->rx_list);
		spin_unlock_irqrestore(&cm->lock, flags);
		if (!left || time_after(jiffies, timeout) ||
		    READ_ONCE(cm->cq_error))
			break;
		wait_event_timeout(cm->wait, ipoib_cm_rx_reapable(cm), HZ / 10);
	}
	ipoib_compat_napi_disable(&cm->napi);
	ipoib_compat_napi_del(&cm->napi);
	cancel_work_sync(&cm->work);
	/* What did not drain in time: no completion is polled any more. */
	if (left) {
		netdev_warn(priv->dev,
			    "connected mode: %u+%u connections did not drain\n",
			    cm->nr_tx, cm->nr_rx);
		list_for_each_entry_safe(rx, rx_next, &cm->rx_list, list) {
			if (rx->id)
				ib_destroy_cm_id(rx->id);
			ipoib_cm_rx_free(rx);
		}
		list_for_each_entry_safe(tx, tx_next, &cm->tx_list, list) {
			if (tx->id)
				ib_destroy_cm_id(tx->id);
			if (tx->qp)
				ipoib_cm_tx_destroy_qp(tx);
			ipoib_cm_tx_free(tx);
		}
	}
	ipoib_cm_free(cm);
}

