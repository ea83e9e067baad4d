// SPDX-License-Identifier: GPL-2.0
/*
 * IB resources of one interface: the PD, the UD QP and its send and
 * receive CQs (made, started, stopped, recovered, replaced), the rings'
 * sizes and the offloads the HCA gives the QP. What flows through them:
 * ipoib_rx.c (receive) and ipoib_tx.c (send).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/etherdevice.h>
#include <linux/log2.h>
#include <linux/moduleparam.h>
#include "ipoib.h"

static void ipoib_rx_cq_event(struct ib_cq *cq, void *ctx)
{
	struct ipoib_dev_priv *priv = ctx;

	napi_schedule(&priv->rx_napi);
}

static void ipoib_tx_cq_event(struct ib_cq *cq, void *ctx)
{
	struct ipoib_dev_priv *priv = ctx;

	napi_schedule(&priv->tx_napi);
}

/*
 * A CQ in error (overflow) completes nothing more, and a QP stays bound to
 * its CQs for life: the resync work makes both anew (ipoib_ib_recreate).
 * Any context: softib and HCAs call this from their completion paths.
 */
static void ipoib_cq_error(struct ib_event *event, void *ctx)
{
	struct ipoib_dev_priv *priv = ctx;

	ipoib_err_ratelimited(priv, IPOIB_RL_CQ_ERROR,
			      "%s CQ error (event %d): recreating the UD QP and its CQs\n",
			      event->element.cq == priv->recv_cq ? "receive" : "send",
			      event->event);
	set_bit(IPOIB_FLAG_CQ_ERROR, &priv->flags);
	ipoib_queue_resync(priv, IPOIB_RESYNC_CQ_ERROR);
}

static int ipoib_qp_to_rts(struct ipoib_dev_priv *priv)
{
	struct ib_qp_attr attr = {};
	int ret;

	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = priv->pkey_index;
	attr.port_num = priv->port;
	attr.qkey = priv->qkey;
	ret = ib_modify_qp(priv->qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_QKEY);
	if (ret)
		return ret;

	attr.qp_state = IB_QPS_RTR;
	ret = ib_modify_qp(priv->qp, &attr, IB_QP_STATE);
	if (ret)
		return ret;

	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = 0;
	return ib_modify_qp(priv->qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN);
}

static int ipoib_ib_set_qkey(struct ipoib_dev_priv *priv, u32 qkey)
{
	struct ib_qp_attr attr = { .qkey = qkey };

	WRITE_ONCE(priv->qkey, qkey);
	if (!test_bit(IPOIB_FLAG_RUNNING, &priv->flags))
		return 0;
	return ib_modify_qp(priv->qp, &attr, IB_QP_QKEY);
}

/*
 * After a send completed in error, a UD QP's send queue is in SQE: it
 * flushes every send until it is moved back to RTS (receives go on).
 * Resync work, under op_mutex, so the QP is not being replaced.
 */
void ipoib_ib_sq_recover(struct ipoib_dev_priv *priv)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;
	int ret;

	lockdep_assert_held(&priv->op_mutex);
	if (!priv->qp || !test_bit(IPOIB_FLAG_RUNNING, &priv->flags))
		return;
	ret = ib_query_qp(priv->qp, &attr, IB_QP_STATE, &init);
	if (ret || attr.qp_state != IB_QPS_SQE)
		return;
	attr.qp_state = IB_QPS_RTS;
	ret = ib_modify_qp(priv->qp, &attr, IB_QP_STATE);
	ipoib_warn_ratelimited(priv, IPOIB_RL_SQE,
			       "send queue error: %s\n",
			       ret ? "cannot move the QP back to RTS" :
				     "QP back to RTS");
}

static void ipoib_drain_cqs(struct ipoib_dev_priv *priv)
{
	struct ib_wc wc;

	while (ib_poll_cq(priv->recv_cq, 1, &wc) > 0)
		ipoib_rx_complete(priv, &wc);
	while (ib_poll_cq(priv->send_cq, 1, &wc) > 0)
		ipoib_tx_complete(priv, &wc);
}

/* Bring the QP to RTS, fill the receive ring and start NAPI. */
static int ipoib_ib_start(struct ipoib_dev_priv *priv)
{
	unsigned int i;
	int ret;

	lockdep_assert_held(&priv->op_mutex);
	if (test_bit(IPOIB_FLAG_RUNNING, &priv->flags))
		return 0;
	if (!priv->qp)
		return -ENODEV;	/* a failed ipoib_ib_recreate() */

	ret = ib_find_pkey(priv->ca, priv->port, priv->pkey, &priv->pkey_index);
	if (ret) {
		ipoib_dbg(priv->dev, "P_Key 0x%04x not in the table\n",
			  priv->pkey);
		return ret;
	}

	ret = ipoib_qp_to_rts(priv);
	if (ret) {
		netdev_warn(priv->dev, "QP to RTS failed: %d\n", ret);
		goto err_reset_qp;
	}

	set_bit(IPOIB_FLAG_RUNNING, &priv->flags);
	for (i = 0; i < priv->rx_ring_size; i++) {
		struct ipoib_rx_buf *buf = &priv->rx_ring[i];

		buf->skb = ipoib_rx_alloc(priv, GFP_KERNEL, &buf->mapping);
		if (!buf->skb) {
			ret = -ENOMEM;
			goto err_stop;
		}
		ret = ipoib_rx_post(priv, i);
		if (ret) {
			ipoib_rx_free_buf(priv, i);
			goto err_stop;
		}
	}

	napi_enable(&priv->rx_napi);
	napi_enable(&priv->tx_napi);
	ib_req_notify_cq(priv->recv_cq, IB_CQ_NEXT_COMP);
	ib_req_notify_cq(priv->send_cq, IB_CQ_NEXT_COMP);
	local_bh_disable();
	napi_schedule(&priv->rx_napi);
	local_bh_enable();
	netif_wake_queue(priv->dev);
	/* UD works without it: the mode stays, our address says no RC */
	if (priv->cm_mode)
		ipoib_cm_start(priv);
	return 0;

err_stop:
	clear_bit(IPOIB_FLAG_RUNNING, &priv->flags);
err_reset_qp:
	{
		struct ib_qp_attr attr = { .qp_state = IB_QPS_RESET };

		ib_modify_qp(priv->qp, &attr, IB_QP_STATE);
	}
	ipoib_drain_cqs(priv);
	for (i = 0; i < priv->rx_ring_size; i++)
		ipoib_rx_free_buf(priv, i);
	atomic_set(&priv->rx_posted, 0);
	priv->rx_unposted = 0;
	return ret;
}

/*
 * Stop sending and receiving: move the QP to the error state so every
 * posted request completes with a flush status, reap those completions,
 * then reset the QP. The QP object (and its QPN, part of our address) stays.
 */
static void ipoib_ib_stop(struct ipoib_dev_priv *priv)
{
	struct ib_qp_attr attr = {};
	unsigned long timeout;
	unsigned int i;

	lockdep_assert_held(&priv->op_mutex);
	if (!test_bit(IPOIB_FLAG_RUNNING, &priv->flags))
		return;
	ipoib_cm_stop(priv);
	clear_bit(IPOIB_FLAG_RUNNING, &priv->flags);

	/* NAPI first: a running TX poll could wake the queue again. */
	napi_disable(&priv->rx_napi);
	napi_disable(&priv->tx_napi);
	netif_tx_disable(priv->dev);

	attr.qp_state = IB_QPS_ERR;
	if (ib_modify_qp(priv->qp, &attr, IB_QP_STATE))
		netdev_warn(priv->dev, "QP to error state failed\n");

	/* A CQ in error delivers no flush: reset at once, then free all. */
	timeout = jiffies + 5 * HZ;
	while (!test_bit(IPOIB_FLAG_CQ_ERROR, &priv->flags)) {
		ipoib_drain_cqs(priv);
		if (!atomic_read(&priv->rx_posted) && !ipoib_tx_inflight(priv))
			break;
		if (time_after(jiffies, timeout)) {
			netdev_warn(priv->dev,
				    "%d receives, %u sends not flushed\n",
				    atomic_read(&priv->rx_posted),
				    ipoib_tx_inflight(priv));
			break;
		}
		usleep_range(10000, 20000);
	}

	attr.qp_state = IB_QPS_RESET;
	if (ib_modify_qp(priv->qp, &attr, IB_QP_STATE))
		netdev_warn(priv->dev, "QP to reset state failed\n");
	ipoib_drain_cqs(priv);

	/* Anything still owned after a reset is ours to free. */
	for (i = 0; i < priv->rx_ring_size; i++)
		ipoib_rx_free_buf(priv, i);
	atomic_set(&priv->rx_posted, 0);
	priv->rx_unposted = 0;
	while (ipoib_tx_inflight(priv)) {
		struct ib_wc wc = {
			.wr_id = priv->tx_tail,
			.status = IB_WC_WR_FLUSH_ERR,
		};

		ipoib_tx_complete(priv, &wc);
	}
}

/* The HCA cuts TSO skbs (UD LSO); ConnectX offers it with the checksums. */
static bool ipoib_hca_lso(struct ipoib_dev_priv *priv)
{
	return (priv->ca->attrs.device_cap_flags & IB_DEVICE_UD_IP_CSUM) &&
	       (priv->ca->attrs.kernel_cap_flags & IBK_UD_TSO);
}

/*
 * The offloads the HCA gives a UD QP, on by default and each switchable
 * with ethtool -K (the core drops TSO without SG or IP checksumming).
 * With more than one send SGE, software GSO makes segments that share the
 * skb's frags instead of copying each into a new linear skb.
 */
static void ipoib_ib_set_features(struct ipoib_dev_priv *priv)
{
	struct net_device *dev = priv->dev;
	netdev_features_t hw = 0;

	if (priv->max_send_sge > 1)
		hw |= NETIF_F_SG;
	if (priv->ca->attrs.device_cap_flags & IB_DEVICE_UD_IP_CSUM)
		hw |= NETIF_F_IP_CSUM | NETIF_F_RXCSUM;
	if (ipoib_hca_lso(priv)) {
		hw |= NETIF_F_TSO;
		/* one LSO WR: at most a 64 KiB IPv4 datagram */
		netif_set_tso_max_size(dev, GSO_LEGACY_MAX_SIZE);
	}
	dev->hw_features |= hw;
	dev->features |= hw;
}

/* The two CQs and the UD QP, left in RESET. */
static int ipoib_ib_create_qp(struct ipoib_dev_priv *priv)
{
	struct ib_cq_init_attr cq_attr = {};
	struct ib_qp_init_attr qp_attr = {};
	struct ib_cq *recv_cq, *send_cq;
	struct ib_qp *qp;
	int ret;

	cq_attr.cqe = priv->rx_ring_size + 1;
	cq_attr.comp_vector = 0;
	recv_cq = ib_create_cq(priv->ca, ipoib_rx_cq_event, ipoib_cq_error, priv,
			       &cq_attr);
	if (IS_ERR(recv_cq))
		return PTR_ERR(recv_cq);
	/* ethtool -C applies to the receive CQ we have, so to a new one too */
	if (priv->coal_usecs || priv->coal_frames) {
		ret = rdma_set_cq_moderation(recv_cq, priv->coal_frames,
					     priv->coal_usecs);
		if (ret)
			netdev_warn(priv->dev,
				    "cannot moderate the new receive CQ: %d\n",
				    ret);
	}

	cq_attr.cqe = priv->tx_ring_size + 1;
	send_cq = ib_create_cq(priv->ca, ipoib_tx_cq_event, ipoib_cq_error, priv,
			       &cq_attr);
	if (IS_ERR(send_cq)) {
		ret = PTR_ERR(send_cq);
		goto err_destroy_recv_cq;
	}

	qp_attr.send_cq = send_cq;
	qp_attr.recv_cq = recv_cq;
	qp_attr.cap.max_send_wr = priv->tx_ring_size;
	qp_attr.cap.max_recv_wr = priv->rx_ring_size;
	qp_attr.cap.max_send_sge = min_t(u32, priv->ca->attrs.max_send_sge,
					 IPOIB_MAX_TX_SGE);
	qp_attr.cap.max_recv_sge = 1;
	qp_attr.sq_sig_type = IB_SIGNAL_ALL_WR;
	qp_attr.qp_type = IB_QPT_UD;
	if (ipoib_hca_lso(priv))
		qp_attr.create_flags |= IB_QP_CREATE_IPOIB_UD_LSO;
	qp = ib_create_qp(priv->pd, &qp_attr);
	if (IS_ERR(qp)) {
		ret = PTR_ERR(qp);
		goto err_destroy_send_cq;
	}

	priv->recv_cq = recv_cq;
	priv->send_cq = send_cq;
	priv->qp = qp;
	/* The QP may have more than we asked for: never post more than that. */
	priv->max_send_sge = min_t(u32, qp_attr.cap.max_send_sge,
				   IPOIB_MAX_TX_SGE);
	return 0;

err_destroy_send_cq:
	ib_destroy_cq(send_cq);
err_destroy_recv_cq:
	ib_destroy_cq(recv_cq);
	return ret;
}

/*
 * Attach the datapath to a group (@bcast: the broadcast group, whose Q_Key
 * every send then carries) and detach it.
 */
static int ipoib_ib_attach(struct ipoib_dev_priv *priv, union ib_gid *mgid,
			   u16 mlid, bool bcast)
{
	return ib_attach_mcast(priv->qp, mgid, mlid);
}

static int ipoib_ib_detach(struct ipoib_dev_priv *priv, union ib_gid *mgid,
			   u16 mlid)
{
	return ib_detach_mcast(priv->qp, mgid, mlid);
}

/* Also the first step of ipoib_dev_cleanup(): no CQ, no CQ error event. */
static void ipoib_ib_destroy_qp(struct ipoib_dev_priv *priv)
{
	if (!priv->qp)
		return;
	ib_destroy_qp(priv->qp);
	ib_destroy_cq(priv->send_cq);
	ib_destroy_cq(priv->recv_cq);
	priv->qp = NULL;
	priv->send_cq = NULL;
	priv->recv_cq = NULL;
}

/*
 * Replace the QP and both CQs after a CQ error. The caller has stopped the
 * interface (ipoib_ib_stop) and detached the QP from every group. The new
 * QP has a new QPN, which is part of our hardware address: the carrier
 * work, which can take rtnl, publishes it and tells the peers (gratuitous
 * ARP, unsolicited NA).
 */
static int ipoib_ib_recreate(struct ipoib_dev_priv *priv)
{
	u32 old_qpn = priv->qp ? priv->qp->qp_num : 0;
	int ret;

	lockdep_assert_held(&priv->op_mutex);
	if (WARN_ON_ONCE(test_bit(IPOIB_FLAG_RUNNING, &priv->flags)))
		return -EBUSY;
	ipoib_ib_destroy_qp(priv);
	clear_bit(IPOIB_FLAG_CQ_ERROR, &priv->flags);
	ret = ipoib_ib_create_qp(priv);
	if (ret) {
		netdev_err(priv->dev, "cannot recreate the UD QP: %d\n", ret);
		return ret;
	}
	netdev_info(priv->dev, "UD QP recreated: qpn 0x%06x -> 0x%06x\n",
		    old_qpn, priv->qp->qp_num);
	ipoib_addr_changed(priv);
	return 0;
}

/*
 * The in-tree driver's ring parameters, with its ranges: a power of 2 (the
 * next one up), receive 2-8192, send 128-8192. They set the rings of the
 * interfaces created afterwards; ethtool -G sets one interface's.
 */
static int ipoib_recvq_size = IPOIB_RX_RING_DEFAULT;
module_param_named(recv_queue_size, ipoib_recvq_size, int, 0444);
MODULE_PARM_DESC(recv_queue_size,
		 "Receive ring of the UD QP and connected mode's shared receive queue (2-8192, default 256)");
static int ipoib_sendq_size = IPOIB_TX_RING_DEFAULT;
module_param_named(send_queue_size, ipoib_sendq_size, int, 0444);
MODULE_PARM_DESC(send_queue_size,
		 "Send ring of the UD QP (128-8192, default 128)");

static int ipoib_ring_fit(const char *name, int val, int min)
{
	int fit = roundup_pow_of_two(clamp(val, min, IPOIB_RING_MAX));

	if (fit != val)
		pr_info("%s=%d out of range or not a power of 2: %d\n", name,
			val, fit);
	return fit;
}

/* recv_queue_size: also the SRQ's size on the HCA's enhanced datapath */
unsigned int ipoib_recv_queue_size(void)
{
	return ipoib_recvq_size;
}

void ipoib_ib_params_init(void)
{
	ipoib_recvq_size = ipoib_ring_fit("recv_queue_size", ipoib_recvq_size,
					  IPOIB_RX_RING_MIN);
	ipoib_sendq_size = ipoib_ring_fit("send_queue_size", ipoib_sendq_size,
					  IPOIB_TX_RING_MIN);
}

/*
 * Rings of @rx and @tx entries (powers of 2), no more than the HCA's QP
 * takes. Not RUNNING, under op_mutex or before the interface exists: no
 * buffer is posted, nothing is in flight.
 */
int ipoib_ib_resize(struct ipoib_dev_priv *priv, unsigned int rx,
		    unsigned int tx)
{
	unsigned int max = rounddown_pow_of_two(priv->ca->attrs.max_qp_wr);
	struct ipoib_rx_buf *rx_ring;
	struct ipoib_tx_buf *tx_ring;

	if (rx > max || tx > max) {
		netdev_info(priv->dev, "rings %u/%u cut to the HCA's %u\n",
			    rx, tx, max);
		rx = min(rx, max);
		tx = min(tx, max);
	}
	rx_ring = kvcalloc(rx, sizeof(*rx_ring), GFP_KERNEL);
	tx_ring = kvcalloc(tx, sizeof(*tx_ring), GFP_KERNEL);
	if (!rx_ring || !tx_ring) {
		kvfree(rx_ring);
		kvfree(tx_ring);
		return -ENOMEM;
	}
	kvfree(priv->rx_ring);
	kvfree(priv->tx_ring);
	priv->rx_ring = rx_ring;
	priv->tx_ring = tx_ring;
	priv->rx_ring_size = rx;
	priv->tx_ring_size = tx;
	return 0;
}

/* Create PD, CQs and the UD QP. The QP stays in RESET until ipoib_ib_start. */
static int ipoib_ib_init(struct ipoib_dev_priv *priv)
{
	int ret;

	ret = ipoib_ib_resize(priv, ipoib_recvq_size, ipoib_sendq_size);
	if (ret)
		return ret;

	priv->pd = ib_alloc_pd(priv->ca, 0);
	if (IS_ERR(priv->pd)) {
		ret = PTR_ERR(priv->pd);
		goto err_free_rings;
	}

	ret = ipoib_ib_create_qp(priv);
	if (ret)
		goto err_dealloc_pd;

	ipoib_ib_set_features(priv);
	netif_napi_add(priv->dev, &priv->rx_napi, ipoib_rx_poll);
	netif_napi_add_tx(priv->dev, &priv->tx_napi, ipoib_tx_poll);
	return 0;

err_dealloc_pd:
	ib_dealloc_pd(priv->pd);
err_free_rings:
	kvfree(priv->tx_ring);
	kvfree(priv->rx_ring);
	priv->tx_ring = NULL;
	priv->rx_ring = NULL;
	return ret;
}

static void ipoib_ib_cleanup(struct ipoib_dev_priv *priv)
{
	netif_napi_del(&priv->tx_napi);
	netif_napi_del(&priv->rx_napi);
	ipoib_ib_destroy_qp(priv);
	ib_dealloc_pd(priv->pd);
	kvfree(priv->tx_ring);
	kvfree(priv->rx_ring);
}

const struct ipoib_datapath ipoib_ud_datapath = {
	.init = ipoib_ib_init,
	.destroy = ipoib_ib_destroy_qp,
	.cleanup = ipoib_ib_cleanup,
	.start = ipoib_ib_start,
	.stop = ipoib_ib_stop,
	.recreate = ipoib_ib_recreate,
	.set_qkey = ipoib_ib_set_qkey,
	.attach = ipoib_ib_attach,
	.detach = ipoib_ib_detach,
	.send = ipoib_ud_send,
};
