// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the enhanced IPoIB provider's control side (see softib_rn.h).
 *
 * The contract is the one ib_ipoib and mlx5i keep (include/rdma/ib_verbs.h,
 * Documentation/softib.rst "Enhanced IPoIB"):
 *  - rdma_netdev_get_params() is pure and answers the same every time, or
 *    -EOPNOTSUPP when the device was created without the provider (module
 *    parameter enhanced, fixed for the device's life);
 *  - initialize_rdma_netdev() fills the rdma_netdev, installs our netdev and
 *    ethtool operations and queue counts, and may run with or without rtnl;
 *  - ndo_init gives the netdev its underlay QPN (dev_addr[1..3]); a child
 *    finds its parent through ndo_get_iflink, as mlx5i does, and is refused
 *    with fewer receive queues than the parent uses;
 *  - set_id takes effect at the next ndo_open, which starts every transmit
 *    queue and never the carrier (the ULP's job); ndo_stop may come without
 *    an open and stops every transmit queue itself (the ULP's internal
 *    restarts do not go through dev_close);
 *  - ndo_open and ndo_stop run under rtnl, as the in-tree ib_ipoib calls
 *    them (the core; its heavy flush and, on 6.12, its tx timeout work take
 *    rtnl): mlx5i reopens its channels under rtnl for ethtool -L and counts
 *    on it. We assert it: a ULP that restarts us without it races -L;
 *  - attach_mcast attaches by MGID (the MLID is ignored) and, with set_qkey,
 *    sets the Q_Key sends carry; the QP itself receives with Q_Key 0x0B1B.
 */
#include <linux/etherdevice.h>
#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <linux/random.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "softib.h"
#include "softib_rn.h"

bool softib_enhanced;
module_param_named(enhanced, softib_enhanced, bool, 0644);
MODULE_PARM_DESC(enhanced,
		 "new devices offer the enhanced IPoIB datapath (rdma_netdev), as ConnectX-4 and newer (default 0)");

/* protects every port's rn_parent */
static DEFINE_MUTEX(softib_rn_lock);

unsigned int softib_rn_max_channels(void)
{
	return clamp_t(unsigned int, num_online_cpus(), 1, SOFTIB_RN_MAX_CH);
}

static const struct net_device_ops softib_rn_netdev_ops;
static int softib_rn_initialize(struct ib_device *ibdev, u32 port, struct net_device *ndev,
				void *param);

int softib_rn_get_params(struct ib_device *ibdev, u32 port, enum rdma_netdev_t type,
			 struct rdma_netdev_alloc_params *params)
{
	struct softib_dev *hca = to_sdev(ibdev);
	unsigned int nch = softib_rn_max_channels();

	if (type != RDMA_NETDEV_IPOIB || !hca->enhanced || !rdma_is_port_valid(ibdev, port))
		return -EOPNOTSUPP;
	params->sizeof_priv = sizeof(struct softib_rn);
	params->txqs = nch;
	params->rxqs = nch;
	params->param = softib_port(hca, port);
	params->initialize_rdma_netdev = softib_rn_initialize;
	return 0;
}

static void softib_rn_free_arrays(struct softib_rn *rn)
{
	kfree(rn->rxq);
	rn->rxq = NULL;
	kfree(rn->qs);
	rn->qs = NULL;
	kfree(rn->inflight);
	rn->inflight = NULL;
}

/* Give up the port's parent slot if it is ours (no rtnl needed). */
static void softib_rn_unclaim(struct softib_rn *rn)
{
	mutex_lock(&softib_rn_lock);
	if (rn->is_parent && rn->sport->rn_parent == rn)
		rn->sport->rn_parent = NULL;
	mutex_unlock(&softib_rn_lock);
}

/*
 * priv_destructor, after unregistration (no rtnl) or when registration
 * failed: what initialize allocated. The port may be gone by now.
 */
static void softib_rn_destructor(struct net_device *ndev)
{
	struct softib_rn *rn = softib_rn(ndev);

	if (!rn->inited)	/* ndo_uninit releases the claim otherwise */
		softib_rn_unclaim(rn);
	softib_rn_free_arrays(rn);
}

static void softib_rn_set_id(struct net_device *ndev, int id)
{
	struct softib_rn *rn = softib_rn(ndev);

	if (id >= 0 && id < SOFTIB_PKEY_TBL_LEN)
		WRITE_ONCE(rn->next_pkey_index, id);
}

static int softib_rn_attach_mcast(struct net_device *ndev, struct ib_device *hca,
				  union ib_gid *gid, u16 mlid, int set_qkey, u32 qkey)
{
	struct softib_rn *rn = softib_rn(ndev);
	int err;

	if (!rn->inited || gid->raw[0] != 0xff)
		return -EINVAL;
	/* by MGID: the MLID plays no part, as with ConnectX's steering */
	err = softib_qp_attach(rn->sport, &rn->qp, gid, 0);
	if (err)
		return err;
	if (set_qkey)
		WRITE_ONCE(rn->qkey, qkey);
	return 0;
}

static int softib_rn_detach_mcast(struct net_device *ndev, struct ib_device *hca,
				  union ib_gid *gid, u16 mlid)
{
	struct softib_rn *rn = softib_rn(ndev);

	if (!rn->inited)
		return -EINVAL;
	return softib_qp_detach(rn->sport, &rn->qp, gid);
}

static int softib_rn_initialize(struct ib_device *ibdev, u32 port, struct net_device *ndev,
				void *param)
{
	struct softib_dev *sport = param;
	struct softib_rn *rn = softib_rn(ndev);
	unsigned int nq = max(ndev->num_tx_queues, ndev->num_rx_queues);
	unsigned int nch = softib_rn_max_channels(), i;
	int err;

	if (!to_sdev(ibdev)->enhanced || sport != softib_port(to_sdev(ibdev), port))
		return -EOPNOTSUPP;	/* leaves the netdev untouched */

	rn->qs = kcalloc(nq, sizeof(*rn->qs), GFP_KERNEL);
	rn->inflight = kcalloc(ndev->num_tx_queues, sizeof(*rn->inflight), GFP_KERNEL);
	if (!rn->qs || !rn->inflight) {
		err = -ENOMEM;
		goto err_free;
	}

	rn->sport = sport;
	/* the port's first netdev is its parent, as the first on an mlx5 device */
	mutex_lock(&softib_rn_lock);
	rn->is_parent = !sport->rn_parent;
	if (rn->is_parent)
		sport->rn_parent = rn;
	mutex_unlock(&softib_rn_lock);

	if (rn->is_parent) {
		rn->rxq = kcalloc(ndev->num_rx_queues, sizeof(*rn->rxq), GFP_KERNEL);
		if (!rn->rxq) {
			err = -ENOMEM;
			goto err_unclaim;
		}
		for (i = 0; i < ndev->num_rx_queues; i++) {
			skb_queue_head_init(&rn->rxq[i].q);
			rn->rxq[i].index = i;
		}
	}

	rn->ndev = ndev;
	rn->rss_key = get_random_u32();
	rn->rx_ring = SOFTIB_RN_RX_RING;
	rn->tx_ring = SOFTIB_RN_TX_RING;
	rn->rx_usecs = 16;	/* mlx5e's defaults */
	rn->rx_frames = 32;
	rn->tx_usecs = 16;
	rn->tx_frames = 32;
	rn->rx_adaptive = true;
	atomic_set(&rn->children, 0);

	rn->rn.hca = ibdev;
	rn->rn.port_num = port;
	rn->rn.send = softib_rn_send;
	rn->rn.attach_mcast = softib_rn_attach_mcast;
	rn->rn.detach_mcast = softib_rn_detach_mcast;
	rn->rn.set_id = softib_rn_set_id;
	/* no tx_timeout, as mlx5i: the ULP restarts the interface */

	ndev->netdev_ops = &softib_rn_netdev_ops;
	ndev->ethtool_ops = rn->is_parent ? &softib_rn_ethtool_ops : &softib_rn_child_ethtool_ops;
	/*
	 * As mlx5i from 6.16: the core calls our ndos and ethtool ops with
	 * the netdev's instance lock held, and so must the ULP when it opens
	 * or stops us from its own work (channels_up/down take the NAPI
	 * calls' *_locked forms then).
	 */
	ipoib_compat_request_ops_lock(ndev);
	ndev->hw_features = NETIF_F_SG | NETIF_F_IP_CSUM | NETIF_F_IPV6_CSUM | NETIF_F_GRO |
			    NETIF_F_TSO | NETIF_F_TSO6 | NETIF_F_RXCSUM | NETIF_F_RXHASH;
	nch = min3(nch, ndev->num_tx_queues, ndev->num_rx_queues);
	netif_set_real_num_tx_queues(ndev, nch);
	netif_set_real_num_rx_queues(ndev, nch);
	ndev->priv_destructor = softib_rn_destructor;
	ndev->needs_free_netdev = true;
	netif_carrier_off(ndev);
	return 0;

err_unclaim:
	softib_rn_unclaim(rn);
err_free:
	softib_rn_free_arrays(rn);
	return err;
}

/* A child's parent: the netdev its ndo_get_iflink names (mlx5i's way). */
static int softib_rn_find_parent(struct softib_rn *rn)
{
	struct net_device *ndev = rn->ndev, *pdev;
	struct softib_rn *parent;
	int ifindex = 0;

	if (ndev->netdev_ops->ndo_get_iflink)
		ifindex = ndev->netdev_ops->ndo_get_iflink(ndev);
	pdev = ifindex ? dev_get_by_index(dev_net(ndev), ifindex) : NULL;
	mutex_lock(&softib_rn_lock);
	parent = rn->sport->rn_parent;
	mutex_unlock(&softib_rn_lock);
	if (!pdev || pdev == ndev || !parent || parent->ndev != pdev) {
		netdev_err(ndev, "softib: no parent interface (iflink %d): a second ULP on the port?\n",
			   ifindex);
		if (pdev)
			dev_put(pdev);
		return -EINVAL;
	}
	if (ndev->num_rx_queues < pdev->real_num_rx_queues) {
		netdev_err(ndev, "softib: %u rx queues, fewer than its parent's %u\n",
			   ndev->num_rx_queues, pdev->real_num_rx_queues);
		dev_put(pdev);
		return -EINVAL;
	}
	rn->parent = parent;	/* the reference on pdev is the child's */
	atomic_inc(&parent->children);
	return 0;
}

static void softib_rn_put_parent(struct softib_rn *rn)
{
	if (!rn->parent)
		return;
	atomic_dec(&rn->parent->children);
	dev_put(rn->parent->ndev);
	rn->parent = NULL;
}

/* ndo_init (register_netdevice, rtnl): the underlay QP and its QPN. */
static int softib_rn_ndo_init(struct net_device *ndev)
{
	struct softib_rn *rn = softib_rn(ndev);
	struct softib_dev *hca = rn->sport->hca;
	struct softib_qp *qp = &rn->qp;
	u8 qpn_bytes[3];
	unsigned int i;
	u32 qpn;
	int err;

	if (!rn->is_parent) {
		err = softib_rn_find_parent(rn);
		if (err)
			return err;
	}

	spin_lock_init(&qp->lock);
	qp->state = IB_QPS_RESET;
	qp->qkey = SOFTIB_RN_QKEY;
	qp->sport = rn->sport;
	qp->rn = rn;
	qp->sq_done = -1U;
	atomic_set(&qp->n_mcast, 0);
	qp->ibqp.device = &hca->ibdev;
	qp->ibqp.qp_type = IB_QPT_UD;
	err = xa_alloc_cyclic(&hca->qps, &qpn, qp, XA_LIMIT(SOFTIB_QPN_FIRST, SOFTIB_QPN_LAST),
			      &hca->next_qpn, GFP_KERNEL);
	if (err < 0) {
		softib_rn_put_parent(rn);
		return err;
	}
	qp->ibqp.qp_num = qpn;

	qpn_bytes[0] = qpn >> 16;
	qpn_bytes[1] = qpn >> 8;
	qpn_bytes[2] = qpn;
	dev_addr_mod(ndev, 1, qpn_bytes, sizeof(qpn_bytes));

	if (rn->is_parent)
		for (i = 0; i < ndev->num_rx_queues; i++)
			netif_napi_add(ndev, &rn->rxq[i].napi, softib_rn_poll);
	rn->inited = true;
	netdev_dbg(ndev, "softib: enhanced IPoIB, underlay QPN 0x%x, %s\n", qpn,
		   rn->is_parent ? "parent" : "child");
	return 0;
}

/* ndo_uninit (unregistration, rtnl): the QP goes, nothing reaches us. */
static void softib_rn_ndo_uninit(struct net_device *ndev)
{
	struct softib_rn *rn = softib_rn(ndev);
	struct softib_dev *hca = rn->sport->hca;
	unsigned int i;

	if (!rn->inited)
		return;
	WRITE_ONCE(rn->qp.state, IB_QPS_RESET);
	xa_erase(&hca->qps, rn->qp.ibqp.qp_num);
	softib_qp_detach_all(rn->sport, &rn->qp);
	synchronize_rcu();	/* the fabric and tx_work no longer reach us */
	if (rn->is_parent) {
		softib_rn_rx_purge(rn, NULL);
		for (i = 0; i < ndev->num_rx_queues; i++)
			netif_napi_del(&rn->rxq[i].napi);
		softib_rn_unclaim(rn);
	} else {
		softib_rn_rx_purge(rn->parent, ndev);
		softib_rn_put_parent(rn);
	}
	rn->inited = false;
}

/*
 * The ULP opens and stops an ops-locked netdev under its instance lock, as
 * the core does (7.x); lockdep would say so on a debug kernel only, so we
 * say it on every kernel: a WARN fails the test run.
 */
static void softib_rn_assert_ops_lock(struct softib_rn *rn)
{
	WARN_ONCE(!ipoib_compat_ops_lock_held(rn->ndev),
		  "softib: %s: channels changed without the netdev's instance lock\n",
		  rn->ndev->name);
}

void softib_rn_channels_up(struct softib_rn *rn)
{
	unsigned int i;

	softib_rn_assert_ops_lock(rn);

	for (i = 0; i < rn->ndev->real_num_rx_queues; i++)
		ipoib_compat_napi_enable(&rn->rxq[i].napi);
	WRITE_ONCE(rn->rx_up, true);
}

void softib_rn_channels_down(struct softib_rn *rn)
{
	unsigned int i;

	softib_rn_assert_ops_lock(rn);
	WRITE_ONCE(rn->rx_up, false);
	synchronize_rcu();	/* softib_rn_rx() saw rx_up false or is done */
	for (i = 0; i < rn->ndev->real_num_rx_queues; i++)
		ipoib_compat_napi_disable(&rn->rxq[i].napi);
	softib_rn_rx_purge(rn, NULL);
}

static int softib_rn_open(struct net_device *ndev)
{
	struct softib_rn *rn = softib_rn(ndev);
	unsigned long flags;

	ASSERT_RTNL();
	softib_rn_assert_ops_lock(rn);

	if (rn->opened)
		return 0;
	spin_lock_irqsave(&rn->qp.lock, flags);
	rn->qp.pkey_index = READ_ONCE(rn->next_pkey_index);
	WRITE_ONCE(rn->qp.state, IB_QPS_RTS);
	spin_unlock_irqrestore(&rn->qp.lock, flags);
	if (rn->is_parent)
		softib_rn_channels_up(rn);
	rn->opened = true;
	netif_tx_start_all_queues(ndev);
	return 0;
}

static int softib_rn_stop(struct net_device *ndev)
{
	struct softib_rn *rn = softib_rn(ndev);

	ASSERT_RTNL();
	softib_rn_assert_ops_lock(rn);

	netif_carrier_off(ndev);
	netif_tx_disable(ndev);
	if (!rn->opened)
		return 0;
	rn->opened = false;
	WRITE_ONCE(rn->qp.state, IB_QPS_RESET);
	if (rn->is_parent) {
		softib_rn_channels_down(rn);
	} else {
		synchronize_rcu();	/* no receive is on its way to the parent */
		softib_rn_rx_purge(rn->parent, ndev);
	}
	return 0;
}

static int softib_rn_change_mtu(struct net_device *ndev, int mtu)
{
	WRITE_ONCE(ndev->mtu, mtu);	/* the provider writes it (ib_ipoib's contract) */
	return 0;
}

static void softib_rn_get_stats64(struct net_device *ndev, struct rtnl_link_stats64 *st)
{
	struct softib_rn *rn = softib_rn(ndev);
	unsigned int i, nq = max(ndev->num_tx_queues, ndev->num_rx_queues);

	for (i = 0; i < nq; i++) {
		struct softib_rn_qstats *q = &rn->qs[i];

		st->rx_packets += atomic64_read(&q->rx_packets);
		st->rx_bytes += atomic64_read(&q->rx_bytes);
		st->rx_dropped += atomic64_read(&q->rx_dropped);
		st->tx_packets += atomic64_read(&q->tx_packets);
		st->tx_bytes += atomic64_read(&q->tx_bytes);
		st->tx_dropped += atomic64_read(&q->tx_dropped);
	}
	st->multicast = atomic64_read(&rn->rx_mcast);
}

static const struct net_device_ops softib_rn_netdev_ops = {
	.ndo_init = softib_rn_ndo_init,
	.ndo_uninit = softib_rn_ndo_uninit,
	.ndo_open = softib_rn_open,
	.ndo_stop = softib_rn_stop,
	.ndo_change_mtu = softib_rn_change_mtu,
	.ndo_get_stats64 = softib_rn_get_stats64,
};
