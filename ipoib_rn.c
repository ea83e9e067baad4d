// SPDX-License-Identifier: GPL-2.0
/*
 * The HCA's enhanced IPoIB datapath (rdma_netdev), as every ConnectX-4 and
 * newer offers it through mlx5_ib: the HCA allocates and initialises the
 * net_device (rdma_alloc_netdev(), rdma_init_netdev()), owns its queues,
 * NAPI, receive path, offloads and ethtool operations, and takes our
 * packets through rdma_netdev.send(). We keep everything above the wire:
 * neighbours, paths and their address handles, multicast groups and their
 * joins, P_Keys, carrier, children, sysfs and rtnetlink.
 *
 * Only -EOPNOTSUPP from the HCA falls back to our own UD datapath
 * (ipoib_ib.c, ipoib_rx.c, ipoib_tx.c); so does the module parameter
 * enhanced=0. Connected mode is refused on the HCA's datapath, as the
 * in-tree driver refuses it there (it needs our own UD QP).
 *
 * The provider's contract (include/rdma/ib_verbs.h; mlx5i): netdev_priv()
 * starts with its struct rdma_netdev, whose clnt_priv we point to our own
 * state (allocated here); its net_device_ops are called only by us, and
 * init/uninit/open/stop are mandatory; set_id (the P_Key index) before
 * every open; the broadcast group attached with set_qkey before unicast
 * sends; the address handle may go as soon as send() returns.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>
#include "ipoib.h"

static bool ipoib_enhanced = true;
module_param_named(enhanced, ipoib_enhanced, bool, 0444);
MODULE_PARM_DESC(enhanced,
		 "use the HCA's enhanced IPoIB datapath (rdma_netdev) where it offers one (default 1)");

/*
 * Initialise @dev, allocated by the HCA (rdma_alloc_netdev) or by rtnl, for
 * the HCA's datapath: 0 and @dev is ours on it, -EOPNOTSUPP and @dev is
 * untouched, or another error.
 */
int ipoib_rn_init(struct net_device *dev, struct ib_device *ca, u32 port)
{
	struct rdma_netdev *rn = netdev_priv(dev);
	const struct net_device_ops *ops;
	struct ipoib_dev_priv *priv;
	int ret;

	if (!ipoib_enhanced)
		return -EOPNOTSUPP;
	priv = kzalloc(sizeof(*priv), GFP_KERNEL);
	if (!priv)
		return -ENOMEM;
	ret = rdma_init_netdev(ca, port, RDMA_NETDEV_IPOIB, dev->name,
			       NET_NAME_UNKNOWN, ipoib_setup, dev);
	if (ret) {
		kfree(priv);
		return ret;
	}
	ops = dev->netdev_ops;
	if (!ops->ndo_init || !ops->ndo_uninit || !ops->ndo_open ||
	    !ops->ndo_stop || !rn->send || !rn->attach_mcast ||
	    !rn->detach_mcast) {
		netdev_err(dev, "the HCA's enhanced IPoIB datapath lacks a mandatory operation\n");
		if (dev->priv_destructor)
			dev->priv_destructor(dev);
		kfree(priv);
		return -EINVAL;
	}
	priv->rn_ops = ops;
	priv->rn_destructor = dev->priv_destructor;
	priv->enhanced = true;
	rn->clnt_priv = priv;
	dev->netdev_ops = &ipoib_netdev_ops;
	/* we free it: ipoib_netdev_free(), or a child's destructor */
	dev->priv_destructor = NULL;
	dev->needs_free_netdev = false;
	return 0;
}

/*
 * A port interface or a sysfs child: the HCA's netdev where it offers one,
 * else ours. Its ipoib_priv() is set either way.
 */
struct net_device *ipoib_netdev_alloc(struct ib_device *ca, u32 port,
				      const char *name)
{
	struct net_device *dev;
	int ret;

	if (ipoib_enhanced) {
		dev = rdma_alloc_netdev(ca, port, RDMA_NETDEV_IPOIB, name,
					NET_NAME_UNKNOWN, ipoib_setup);
		if (!IS_ERR(dev)) {
			ret = ipoib_rn_init(dev, ca, port);
			if (!ret)
				return dev;
			free_netdev(dev);
			if (ret != -EOPNOTSUPP)
				return ERR_PTR(ret);
		} else if (PTR_ERR(dev) != -EOPNOTSUPP) {
			return dev;
		}
	}
	dev = alloc_netdev(sizeof(struct ipoib_dev_priv), name,
			   NET_NAME_UNKNOWN, ipoib_setup);
	return dev ?: ERR_PTR(-ENOMEM);
}

/* Free what ipoib_netdev_alloc() (or rtnl) gave, once it is unregistered. */
void ipoib_rn_release(struct net_device *dev)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	if (!priv->enhanced)
		return;
	if (priv->rn_destructor)
		priv->rn_destructor(dev);
	kfree(priv);
}

void ipoib_netdev_free(struct net_device *dev)
{
	ipoib_rn_release(dev);
	free_netdev(dev);
}

/* ndo_init: the HCA's QPN goes into our address (bytes 1..3). */
int ipoib_rn_ndo_init(struct ipoib_dev_priv *priv)
{
	struct net_device *dev = priv->dev;
	int ret;

	ret = priv->rn_ops->ndo_init(dev);
	if (ret)
		return ret;
	priv->rn_inited = true;
	priv->qpn = dev->dev_addr[1] << 16 | dev->dev_addr[2] << 8 |
		    dev->dev_addr[3];
	return 0;
}

/* ipoib_dev_cleanup(), under op_mutex: the HCA's side goes (once). */
static void ipoib_rn_uninit(struct ipoib_dev_priv *priv)
{
	if (!priv->rn_inited)
		return;
	priv->rn_inited = false;
	priv->rn_ops->ndo_uninit(priv->dev);
}

/*
 * Our PD, for the address handles and connected mode; the HCA's offloads on
 * by default. No ring of ours: rx_ring_size only sizes connected mode's
 * SRQ, as recv_queue_size does our own datapath's.
 */
static int ipoib_rn_init_dp(struct ipoib_dev_priv *priv)
{
	priv->rx_ring_size = ipoib_recv_queue_size();
	priv->pd = ib_alloc_pd(priv->ca, 0);
	if (IS_ERR(priv->pd))
		return PTR_ERR(priv->pd);
	if (priv->ca->attrs.device_cap_flags & IB_DEVICE_UD_IP_CSUM)
		priv->dev->features |= priv->dev->hw_features;
	return 0;
}

static void ipoib_rn_cleanup(struct ipoib_dev_priv *priv)
{
	ipoib_rn_uninit(priv);
	ib_dealloc_pd(priv->pd);
}

/*
 * The P_Key index, then the HCA's open; under rtnl, as the core, ethtool
 * and the in-tree driver call it (ipoib_resync_task() takes it).
 */
static int ipoib_rn_start(struct ipoib_dev_priv *priv)
{
	struct rdma_netdev *rn = netdev_priv(priv->dev);
	int ret;

	ASSERT_RTNL();
	lockdep_assert_held(&priv->op_mutex);
	if (test_bit(IPOIB_FLAG_RUNNING, &priv->flags))
		return 0;
	ret = ib_find_pkey(priv->ca, priv->port, priv->pkey, &priv->pkey_index);
	if (ret) {
		ipoib_dbg(priv->dev, "P_Key 0x%04x not in the table\n",
			  priv->pkey);
		return ret;
	}
	if (rn->set_id)
		rn->set_id(priv->dev, priv->pkey_index);
	ret = priv->rn_ops->ndo_open(priv->dev);
	if (ret) {
		netdev_warn(priv->dev, "the HCA's datapath did not open: %d\n",
			    ret);
		return ret;
	}
	set_bit(IPOIB_FLAG_RUNNING, &priv->flags);
	/* UD works without it: the mode stays, our address says no RC */
	if (priv->cm_mode)
		ipoib_cm_start(priv);
	return 0;
}

static void ipoib_rn_stop(struct ipoib_dev_priv *priv)
{
	ASSERT_RTNL();
	lockdep_assert_held(&priv->op_mutex);
	if (!test_bit(IPOIB_FLAG_RUNNING, &priv->flags))
		return;
	ipoib_cm_stop(priv);
	clear_bit(IPOIB_FLAG_RUNNING, &priv->flags);
	priv->rn_ops->ndo_stop(priv->dev);
}

/*
 * ndo_start_xmit: @skb starts at the encapsulation header. The HCA reads
 * the address vector before send() returns, so our reference on @ah goes
 * at once.
 */
void ipoib_rn_send(struct ipoib_dev_priv *priv, struct sk_buff *skb,
		   struct ipoib_ah *ah, u32 qpn)
{
	struct rdma_netdev *rn = netdev_priv(priv->dev);

	skb_orphan(skb);
	skb_dst_drop(skb);
	rn->send(priv->dev, skb, ah->ibah, qpn);
	ipoib_ah_put(ah);
}

/* The Q_Key goes to the HCA with the broadcast group's attach. */
static int ipoib_rn_set_qkey(struct ipoib_dev_priv *priv, u32 qkey)
{
	WRITE_ONCE(priv->qkey, qkey);
	return 0;
}

static int ipoib_rn_attach(struct ipoib_dev_priv *priv, union ib_gid *mgid,
			   u16 mlid, bool set_qkey)
{
	struct rdma_netdev *rn = netdev_priv(priv->dev);

	return rn->attach_mcast(priv->dev, priv->ca, mgid, mlid, set_qkey,
				READ_ONCE(priv->qkey));
}

static int ipoib_rn_detach(struct ipoib_dev_priv *priv, union ib_gid *mgid,
			   u16 mlid)
{
	struct rdma_netdev *rn = netdev_priv(priv->dev);

	return rn->detach_mcast(priv->dev, priv->ca, mgid, mlid);
}

const struct ipoib_datapath ipoib_rn_datapath = {
	.init = ipoib_rn_init_dp,
	.destroy = ipoib_rn_uninit,
	.cleanup = ipoib_rn_cleanup,
	.start = ipoib_rn_start,
	.stop = ipoib_rn_stop,
	.set_qkey = ipoib_rn_set_qkey,
	.attach = ipoib_rn_attach,
	.detach = ipoib_rn_detach,
	.send = ipoib_rn_send,
};
