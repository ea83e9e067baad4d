// SPDX-License-Identifier: GPL-2.0
/*
 * ib_ipoib: IP over InfiniBand in datagram mode (RFC 4391).
 *
 * Module init/exit, the ib_client that creates one interface per IB port,
 * the net_device_ops glue and the fabric-event resync.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/rtnetlink.h>
#include <net/addrconf.h>
#include <net/rtnetlink.h>
#include <rdma/ib_cache.h>
#include "ipoib.h"

MODULE_DESCRIPTION("IP over InfiniBand, datagram mode");
MODULE_LICENSE("GPL");
MODULE_VERSION(IPOIB_VERSION);
MODULE_ALIAS_RTNL_LINK("ipoib");

struct ib_sa_client ipoib_sa_client;

/* The in-tree driver's switches for its debug messages (ipoib.h). */
int ipoib_debug_level;
module_param_named(debug_level, ipoib_debug_level, int, 0644);
MODULE_PARM_DESC(debug_level, "Log every debug message if > 0 (else dynamic debug)");
int ipoib_mcast_debug_level;
module_param_named(mcast_debug_level, ipoib_mcast_debug_level, int, 0644);
MODULE_PARM_DESC(mcast_debug_level,
		 "Log every multicast debug message if > 0 (else dynamic debug)");

/* Which resync reason each IB event raises; zero means "not ours". */
static const unsigned long ipoib_event_reasons[] = {
	[IB_EVENT_PORT_ERR]		= BIT(IPOIB_RESYNC_PORT),
	[IB_EVENT_PORT_ACTIVE]		= BIT(IPOIB_RESYNC_PORT),
	[IB_EVENT_LID_CHANGE]		= BIT(IPOIB_RESYNC_LID),
	[IB_EVENT_PKEY_CHANGE]		= BIT(IPOIB_RESYNC_PKEY),
	[IB_EVENT_SM_CHANGE]		= BIT(IPOIB_RESYNC_SM),
	[IB_EVENT_CLIENT_REREGISTER]	= BIT(IPOIB_RESYNC_REREG),
	[IB_EVENT_GID_CHANGE]		= BIT(IPOIB_RESYNC_GID),
};

/* Back-off between attempts to recreate the QP after a failure. */
#define IPOIB_RECREATE_BACKOFF_MS	1000
#define IPOIB_RECREATE_BACKOFF_MAX_MS	16000

/* Reasons after which paths and groups must be asked for again. */
#define IPOIB_RESYNC_REFRESH (BIT(IPOIB_RESYNC_PORT) | BIT(IPOIB_RESYNC_LID) | \
			      BIT(IPOIB_RESYNC_PKEY) | BIT(IPOIB_RESYNC_SM) | \
			      BIT(IPOIB_RESYNC_REREG) | BIT(IPOIB_RESYNC_GID))

/* Reasons that may stop and open the datapath again. */
#define IPOIB_RESYNC_RESTARTS (BIT(IPOIB_RESYNC_PKEY) | \
			       BIT(IPOIB_RESYNC_TX_TIMEOUT) | \
			       BIT(IPOIB_RESYNC_CQ_ERROR))

void ipoib_queue_resync(struct ipoib_dev_priv *priv,
			enum ipoib_resync_reason reason)
{
	set_bit(reason, &priv->resync_reasons);
	queue_delayed_work(priv->wq, &priv->resync_work, 0);
}

static void ipoib_event(struct ib_event_handler *handler,
			struct ib_event *event)
{
	struct ipoib_dev_priv *priv = container_of(handler,
						   struct ipoib_dev_priv,
						   event_handler);
	unsigned long reasons;
	unsigned int bit;

	if (event->element.port_num != priv->port ||
	    event->event >= ARRAY_SIZE(ipoib_event_reasons))
		return;
	reasons = ipoib_event_reasons[event->event];
	if (!reasons)
		return;
	ipoib_dbg(priv->dev, "IB event %s\n", ib_event_msg(event->event));
	for_each_set_bit(bit, &reasons, IPOIB_RESYNC_NR)
		ipoib_queue_resync(priv, bit);
}

/* Refresh LID, GID and port state. Caller holds op_mutex or is setting up. */
int ipoib_query_port(struct ipoib_dev_priv *priv)
{
	struct ib_port_attr attr;
	union ib_gid gid;
	int ret;

	ret = ib_query_port(priv->ca, priv->port, &attr);
	if (ret)
		return ret;
	if (!priv->max_ib_mtu) {
		int mtu = ib_mtu_enum_to_int(attr.max_mtu);

		/* -1 is no MTU: as a u32 it would size 4 GiB receive buffers */
		if (mtu <= IPOIB_ENCAP_LEN) {
			netdev_err(priv->dev, "port reports no valid MTU (%d)\n",
				   attr.max_mtu);
			return -EINVAL;
		}
		priv->max_ib_mtu = mtu;
	}
	WRITE_ONCE(priv->local_lid, attr.lid);
	if (attr.state == IB_PORT_ACTIVE)
		set_bit(IPOIB_FLAG_PORT_ACTIVE, &priv->flags);
	else
		clear_bit(IPOIB_FLAG_PORT_ACTIVE, &priv->flags);

	ret = rdma_query_gid(priv->ca, priv->port, priv->gid_index, &gid);
	if ((ret || !gid.global.interface_id) && priv->gid_index) {
		/* the alias GUID the administrator chose is gone */
		netdev_warn(priv->dev, "GID index %u is gone: back to the port GID\n",
			    priv->gid_index);
		WRITE_ONCE(priv->gid_index, 0);
		ret = rdma_query_gid(priv->ca, priv->port, 0, &gid);
	}
	if (ret)
		return ret;
	if (memcmp(&gid, &priv->local_gid, sizeof(gid)) &&
	    !ipv6_addr_any((struct in6_addr *)priv->local_gid.raw)) {
		/*
		 * The SM gave the subnet another prefix, or the administrator
		 * another GUID (ipoib_set_mac_address() on the parent): our
		 * hardware address changes with it. The carrier work publishes it and, with the
		 * carrier, tells the peers; the resync rejoins and asks for
		 * the paths again under the new source GID.
		 */
		netdev_info(priv->dev, "port GID changed %pI6 -> %pI6\n",
			    priv->local_gid.raw, gid.raw);
		ipoib_addr_changed(priv);
	}
	priv->local_gid = gid;
	return 0;
}

/*
 * A start of the datapath (a restart, a P_Key change, a CQ recovery) failed
 * or could not make its QP: the resync tries again later, with back-off,
 * through a QP recreate. An interface is never left up without a QP and
 * without anyone to retry (review 2026-12, finding 11).
 */
static void ipoib_retry_later(struct ipoib_dev_priv *priv)
{
	unsigned int ms = priv->recreate_backoff_ms;

	lockdep_assert_held(&priv->op_mutex);
	ms = ms ? min(ms * 2, IPOIB_RECREATE_BACKOFF_MAX_MS) :
		  IPOIB_RECREATE_BACKOFF_MS;
	priv->recreate_backoff_ms = ms;
	queue_delayed_work(priv->wq, &priv->recreate_work,
			   msecs_to_jiffies(ms));
}

/*
 * Start the datapath of an interface that is up, and its groups if
 * @groups (they were stopped too). A P_Key not in the table is not
 * retried: its P_Key event restarts it.
 */
static void ipoib_start_or_retry(struct ipoib_dev_priv *priv, bool groups)
{
	int ret = ipoib_dp_start(priv);

	if (!ret) {
		priv->recreate_backoff_ms = 0;
		/*
		 * The HCA's datapath starts its queues without running their
		 * qdiscs: packets that waited there when it stopped would stay
		 * until something else is sent on that queue, and the sockets
		 * they belong to (ping, TCP's small queues) wait for them.
		 */
		netif_tx_schedule_all(priv->dev);
		if (groups)
			ipoib_mcast_start(priv);
		return;
	}
	if (ret == -ENOENT)
		return;
	ipoib_warn_ratelimited(priv, IPOIB_RL_QP_RESTART,
			       "cannot start the datapath: %d, retrying\n", ret);
	ipoib_retry_later(priv);
}

/* The P_Key at index 0 changed: rebuild everything that depends on it. */
static void ipoib_pkey_changed(struct ipoib_dev_priv *priv, u16 pkey)
{
	bool up = test_bit(IPOIB_FLAG_ADMIN_UP, &priv->flags);

	lockdep_assert_held(&priv->op_mutex);
	if (pkey != priv->pkey)
		netdev_info(priv->dev, "P_Key changed 0x%04x -> 0x%04x\n",
			    priv->pkey, pkey);
	if (up) {
		cancel_delayed_work_sync(&priv->mcast_work);
		/*
		 * Stop the datapath before the groups and the flushes: with
		 * RUNNING clear and the queue disabled no xmit can make a
		 * neighbour, so none can point to a path the flush frees, nor
		 * a send-only group, which would keep the old P_Key's MGID
		 * (review 2026-12, finding 10).
		 */
		ipoib_dp_stop(priv);
		ipoib_mcast_stop(priv);
		ipoib_neigh_flush(priv);
		ipoib_path_flush(priv);
	}
	/*
	 * ipoib_get_net_dev_by_params() and the datapath read it without our
	 * locks; dev->broadcast and the multicast lists follow in the carrier
	 * work, under rtnl (ipoib_publish_bcast()).
	 */
	WRITE_ONCE(priv->pkey, pkey);
	if (up)
		ipoib_start_or_retry(priv, true);
}

/*
 * Stop, detach from every group, make a new QP and CQs (with rings of @rx
 * and @tx entries, when they change), start again and rejoin: after a CQ
 * overflow and for ethtool -G. Neighbours and paths stay: address handles
 * belong to the PD, which is kept. The new QPN is published.
 */
static int ipoib_rebuild(struct ipoib_dev_priv *priv, unsigned int rx,
			 unsigned int tx)
{
	bool up = test_bit(IPOIB_FLAG_ADMIN_UP, &priv->flags);
	int ret = 0;

	lockdep_assert_held(&priv->op_mutex);
	/*
	 * Also when not up: ndo_stop clears ADMIN_UP before it stops the QP
	 * (under op_mutex, after us), and a running QP cannot be replaced.
	 */
	cancel_delayed_work_sync(&priv->mcast_work);
	ipoib_dp_stop(priv);	/* first: no xmit makes a group meanwhile */
	ipoib_mcast_stop(priv);
	if (rx != priv->rx_ring_size || tx != priv->tx_ring_size) {
		ret = ipoib_ib_resize(priv, rx, tx);
		if (ret)
			netdev_warn(priv->dev,
				    "no memory for rings %u/%u: kept %u/%u\n",
				    rx, tx, priv->rx_ring_size,
				    priv->tx_ring_size);
		else
			netdev_info(priv->dev, "rings: receive %u, send %u\n",
				    priv->rx_ring_size, priv->tx_ring_size);
	}
	if (ipoib_dp_recreate(priv)) {
		/* Try again later, as a join would; ndo_open tries too. */
		if (up)
			ipoib_retry_later(priv);
		return ret;
	}
	if (up)
		ipoib_start_or_retry(priv, true);
	else
		priv->recreate_backoff_ms = 0;
	return ret;
}

/* ethtool -G: powers of 2 in range (ipoib_ethtool.c checks them). */
int ipoib_set_rings(struct ipoib_dev_priv *priv, unsigned int rx,
		    unsigned int tx)
{
	int ret = 0;

	mutex_lock(&priv->op_mutex);
	if (rx != priv->rx_ring_size || tx != priv->tx_ring_size)
		ret = ipoib_rebuild(priv, rx, tx);
	mutex_unlock(&priv->op_mutex);
	return ret;
}

/* A QP recreate failed: ask the resync to try again. */
static void ipoib_recreate_task(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(to_delayed_work(work),
						   struct ipoib_dev_priv,
						   recreate_work);

	ipoib_queue_resync(priv, IPOIB_RESYNC_CQ_ERROR);
}

static void ipoib_resync_task(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(to_delayed_work(work),
						   struct ipoib_dev_priv,
						   resync_work);
	unsigned long reasons = xchg(&priv->resync_reasons, 0);
	bool restart = reasons & BIT(IPOIB_RESYNC_TX_TIMEOUT);
	bool rtnl = false;
	unsigned int bit;
	u16 pkey;

	/*
	 * The HCA's datapath is opened and stopped under rtnl only, as the
	 * core and its ethtool -L do it (mlx5i reopens its channels there):
	 * a P_Key change, a stalled queue or a failed open restart it. The
	 * lock order is rtnl, op_mutex, and ndo_stop and ndo_uninit wait for
	 * us under rtnl, so we only try it, and come back with the reasons
	 * (not once ipoib_dev_cleanup() began: it drains our workqueue).
	 */
	if (READ_ONCE(priv->dying))
		return;
	if (priv->enhanced && reasons & IPOIB_RESYNC_RESTARTS) {
		rtnl = rtnl_trylock();
		if (!rtnl) {
			for_each_set_bit(bit, &reasons, IPOIB_RESYNC_NR)
				set_bit(bit, &priv->resync_reasons);
			queue_delayed_work(priv->wq, &priv->resync_work,
					   HZ / 50);
			return;
		}
		/*
		 * 7.x: a provider that asks for the instance lock is opened and
		 * stopped under it, as the core does (after rtnl, before ours)
		 */
		ipoib_compat_ops_lock(priv->dev);
	}
	mutex_lock(&priv->op_mutex);
	if (priv->dying) {
		/* ipoib_dev_cleanup(): no new CQs, no carrier_work */
		mutex_unlock(&priv->op_mutex);
		goto unlock;
	}
	if (ipoib_query_port(priv))
		clear_bit(IPOIB_FLAG_PORT_ACTIVE, &priv->flags);

	if (reasons & BIT(IPOIB_RESYNC_CQ_ERROR)) {
		ipoib_rebuild(priv, priv->rx_ring_size, priv->tx_ring_size);
		restart = false;
	}
	if (reasons & BIT(IPOIB_RESYNC_SEND_ERR))
		ipoib_ib_sq_recover(priv);

	if (reasons & BIT(IPOIB_RESYNC_PKEY) && ipoib_pkey_check(priv, &pkey)) {
		ipoib_pkey_changed(priv, pkey);
		restart = false;
	}

	if (!test_bit(IPOIB_FLAG_ADMIN_UP, &priv->flags))
		goto out;

	if (!test_bit(IPOIB_FLAG_PORT_ACTIVE, &priv->flags)) {
		clear_bit(IPOIB_FLAG_BCAST_READY, &priv->flags);
		netif_carrier_off(priv->dev);
	}

	if (restart) {
		ipoib_warn_ratelimited(priv, IPOIB_RL_QP_RESTART,
				       "restarting the %s\n", priv->enhanced ?
				       "HCA's datapath" : "UD QP");
		ipoib_dp_stop(priv);
		ipoib_start_or_retry(priv, false);
	}
	if (restart || reasons & IPOIB_RESYNC_REFRESH) {
		ipoib_mcast_rejoin_all(priv);
		if (test_bit(IPOIB_FLAG_PORT_ACTIVE, &priv->flags))
			ipoib_path_refresh_all(priv);
	}
out:
	queue_delayed_work(priv->wq, &priv->carrier_work, 0);
	mutex_unlock(&priv->op_mutex);
unlock:
	if (rtnl) {
		ipoib_compat_ops_unlock(priv->dev);
		rtnl_unlock();
	}
}

void ipoib_requeue_xmit(struct ipoib_dev_priv *priv, struct sk_buff *skb)
{
	skb->dev = priv->dev;
	dev_queue_xmit(skb);
}

static int ipoib_open(struct net_device *dev)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	int ret;

	mutex_lock(&priv->op_mutex);
	set_bit(IPOIB_FLAG_ADMIN_UP, &priv->flags);
	if (ipoib_query_port(priv))
		clear_bit(IPOIB_FLAG_PORT_ACTIVE, &priv->flags);
	/*
	 * A CQ error while down (its resync was cancelled by ndo_stop), or
	 * a recreate that failed: no QP.
	 */
	if (!priv->enhanced &&
	    (test_bit(IPOIB_FLAG_CQ_ERROR, &priv->flags) || !priv->qp))
		ipoib_dp_recreate(priv);
	ret = ipoib_dp_start(priv);
	if (ret == -ENOENT) {
		/*
		 * P_Key not in the port's table: up, no carrier, see resync.
		 * The collector runs all the same: the resync that starts the
		 * interface once the P_Key appears does not arm it.
		 */
		queue_delayed_work(priv->wq, &priv->gc_work, 10 * HZ);
		mutex_unlock(&priv->op_mutex);
		netdev_info(dev, "P_Key 0x%04x is not in the port's P_Key table\n",
			    priv->pkey);
		return 0;
	}
	if (ret) {
		clear_bit(IPOIB_FLAG_ADMIN_UP, &priv->flags);
		mutex_unlock(&priv->op_mutex);
		return ret;
	}
	/*
	 * Still under op_mutex: a resync (P_Key change, CQ recovery) stops
	 * and frees the groups under it, and must not run between the
	 * insertion of the broadcast group and priv->bcast pointing to it.
	 */
	ipoib_mcast_start(priv);
	mutex_unlock(&priv->op_mutex);
	queue_delayed_work(priv->wq, &priv->gc_work, IPOIB_GC_INTERVAL);
	return 0;
}

static int ipoib_stop(struct net_device *dev)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	clear_bit(IPOIB_FLAG_ADMIN_UP, &priv->flags);
	netif_carrier_off(dev);
	netif_tx_disable(dev);
	cancel_delayed_work_sync(&priv->recreate_work);	/* queues the resync */
	cancel_delayed_work_sync(&priv->resync_work);
	cancel_delayed_work_sync(&priv->mcast_work);
	cancel_delayed_work_sync(&priv->carrier_work);
	cancel_delayed_work_sync(&priv->gc_work);

	/*
	 * Under op_mutex: a resync queued by an IB event after the cancel
	 * above may still recreate the QP the groups are detached from.
	 * Datapath before the flushes, as on a P_Key change: no neighbour is
	 * made after the neighbour flush.
	 */
	mutex_lock(&priv->op_mutex);
	ipoib_mcast_stop(priv);
	ipoib_dp_stop(priv);
	mutex_unlock(&priv->op_mutex);
	ipoib_neigh_flush(priv);
	ipoib_path_flush(priv);
	flush_work(&priv->ah_reap_work);
	return 0;
}

/*
 * Connected mode carries up to IPOIB_CM_MTU; datagram mode what the port
 * carries, and once the broadcast group is joined, what the group does
 * (the carrier work applies it: admin_mtu is what the user asked for).
 */
static int ipoib_change_mtu(struct net_device *dev, int new_mtu)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	u32 max = priv->cm_mode ? IPOIB_CM_MTU :
				  priv->max_ib_mtu - IPOIB_ENCAP_LEN;

	if (new_mtu > max) {
		netdev_info(dev, "MTU %d is above %u, the most %s mode carries\n",
			    new_mtu, max, priv->cm_mode ? "connected" : "datagram");
		return -EINVAL;
	}
	if (!priv->mtu_internal)
		priv->admin_mtu = new_mtu;
	if (!priv->cm_mode && test_bit(IPOIB_FLAG_BCAST_READY, &priv->flags))
		new_mtu = min_t(int, new_mtu, READ_ONCE(priv->mcast_mtu));
	/*
	 * The HCA's datapath sets its MTU up and writes dev->mtu itself; in
	 * connected mode, above what it carries, it only carries UD's share
	 * (ipoib_ud_too_big() keeps larger packets from it).
	 */
	if (priv->enhanced && !priv->cm_mode && priv->rn_ops->ndo_change_mtu)
		return priv->rn_ops->ndo_change_mtu(dev, new_mtu);
	WRITE_ONCE(dev->mtu, new_mtu);
	return 0;
}

/* No checksum offload or LSO over RC: the HCA does them for UD only. */
static netdev_features_t ipoib_fix_features(struct net_device *dev,
					    netdev_features_t features)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	if (priv->cm_asked)
		features &= ~(NETIF_F_IP_CSUM | NETIF_F_IPV6_CSUM |
			      NETIF_F_TSO | NETIF_F_TSO6);
	return features;
}

/*
 * Connected mode on the HCA's multi-queue datapath: the connections'
 * rings and backlogs are serialised by transmit queue 0's lock, so every
 * packet for a peer whose address offers RC leaves through queue 0 (its
 * 20-byte pseudo header, ipoib_hard_header(), leads the skb); the rest is
 * spread over the queues as the core spreads it.
 */
static u16 ipoib_select_queue(struct net_device *dev, struct sk_buff *skb,
			      struct net_device *sb_dev)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	if (READ_ONCE(priv->cm_mode) && skb_headlen(skb) >= IPOIB_PSEUDO_LEN &&
	    skb->data[0] & IPOIB_HW_RC)
		return 0;
	return netdev_pick_tx(dev, skb, sb_dev);
}

/* The multicast list changed: the multicast work reads it. */
static IPOIB_COMPAT_RX_MODE_RET ipoib_set_rx_mode(IPOIB_COMPAT_RX_MODE_ARGS)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	set_bit(IPOIB_FLAG_MC_DIRTY, &priv->flags);
	if (test_bit(IPOIB_FLAG_ADMIN_UP, &priv->flags))
		mod_delayed_work(priv->wq, &priv->mcast_work, 0);
	return IPOIB_COMPAT_RX_MODE_DONE;
}

static void ipoib_tx_timeout(struct net_device *dev, unsigned int txqueue)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	/* a fabric that stays stuck times out every watchdog period */
	if (priv->enhanced)
		ipoib_warn_ratelimited(priv, IPOIB_RL_TX_TIMEOUT,
				       "transmit timed out on queue %u\n",
				       txqueue);
	else
		ipoib_warn_ratelimited(priv, IPOIB_RL_TX_TIMEOUT,
				       "transmit timed out, %u sends outstanding\n",
				       READ_ONCE(priv->tx_head) -
				       READ_ONCE(priv->tx_tail));
	ipoib_queue_resync(priv, IPOIB_RESYNC_TX_TIMEOUT);
}

/*
 * register_netdevice(): on the HCA's datapath, its own init, which gives
 * the netdev its QPN; ours made the QP in ipoib_dev_init().
 */
static int ipoib_ndo_init(struct net_device *dev)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	return priv->enhanced ? ipoib_rn_ndo_init(priv) : 0;
}

/* Under rtnl, in unregister_netdevice_many(): see ipoib_dev_cleanup(). */
static void ipoib_uninit(struct net_device *dev)
{
	ipoib_dev_cleanup(ipoib_priv(dev));
}

const struct net_device_ops ipoib_netdev_ops = {
	.ndo_init		= ipoib_ndo_init,
	.ndo_uninit		= ipoib_uninit,
	.ndo_open		= ipoib_open,
	.ndo_stop		= ipoib_stop,
	.ndo_start_xmit		= ipoib_start_xmit,
	.ndo_select_queue	= ipoib_select_queue,
	.ndo_change_mtu		= ipoib_change_mtu,
	.ndo_fix_features	= ipoib_fix_features,
	.IPOIB_COMPAT_NDO_SET_RX_MODE = ipoib_set_rx_mode,
	.ndo_tx_timeout		= ipoib_tx_timeout,
	.ndo_get_stats64	= ipoib_get_stats64,
	.ndo_neigh_destroy	= ipoib_neigh_destroy,
	.ndo_get_iflink		= ipoib_child_get_iflink,
	.ndo_set_mac_address	= ipoib_set_mac_address,
};

/*
 * Everything an interface needs before register_netdevice(), shared by the
 * port interfaces (ipoib_add_port) and the P_Key children (ipoib_child.c):
 * @pkey 0 means the P_Key at index 0 of the port. Undone by
 * ipoib_dev_cleanup().
 */
int ipoib_dev_init(struct net_device *dev, struct ib_device *ca, u32 port,
		   u16 pkey)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	u8 addr[INFINIBAND_ALEN];
	int ret, i;

	priv->dev = dev;
	priv->ca = ca;
	priv->port = port;
	for (i = 0; i < IPOIB_RL_NR; i++)
		ratelimit_state_init(&priv->rl[i], DEFAULT_RATELIMIT_INTERVAL,
				     DEFAULT_RATELIMIT_BURST);
	INIT_LIST_HEAD(&priv->children);
	mutex_init(&priv->op_mutex);
	spin_lock_init(&priv->table_lock);
	INIT_DELAYED_WORK(&priv->resync_work, ipoib_resync_task);
	INIT_DELAYED_WORK(&priv->recreate_work, ipoib_recreate_task);
	INIT_WORK(&priv->ah_reap_work, ipoib_ah_reap);
	init_llist_head(&priv->dead_ahs);
	u64_stats_init(&priv->rx_stats.syncp);
	u64_stats_init(&priv->tx_stats.syncp);
	u64_stats_init(&priv->cm_rx_stats.syncp);
	u64_stats_init(&priv->cm_tx_stats.syncp);

	priv->wq = alloc_ordered_workqueue("ipoib-%s-%u", WQ_MEM_RECLAIM,
					   dev_name(&ca->dev), port);
	if (!priv->wq)
		return -ENOMEM;

	ret = ipoib_query_port(priv);
	if (ret)
		goto err_destroy_wq;
	if (!pkey) {
		ret = ib_query_pkey(ca, port, 0, &pkey);
		if (ret)
			goto err_destroy_wq;
	}
	priv->pkey = pkey | IPOIB_PKEY_FULL;
	priv->rx_buf_size = priv->max_ib_mtu + sizeof(struct ib_grh);
	dev->max_mtu = IPOIB_CM_MTU;	/* ipoib_change_mtu() says per mode */
	dev->mtu = priv->max_ib_mtu - IPOIB_ENCAP_LEN;
	priv->admin_mtu = dev->mtu;
	dev->dev_port = port - 1;
	dev->dev_id = port - 1;

	ret = ipoib_neigh_init(priv);
	if (ret)
		goto err_destroy_wq;
	ret = ipoib_path_init(priv);
	if (ret)
		goto err_neigh_cleanup;
	ret = ipoib_mcast_init(priv);
	if (ret)
		goto err_path_cleanup;
	ret = ipoib_dp_init(priv);
	if (ret)
		goto err_mcast_cleanup;

	ipoib_build_hw_addr(priv, addr);
	dev_addr_set(dev, addr);
	ipoib_build_bcast_addr(priv, dev->broadcast);
	SET_NETDEV_DEV(dev, ca->dev.parent);
	dev->sysfs_groups[0] = ipoib_sysfs_group(priv);

	/* No carrier until the broadcast group is joined. */
	netif_carrier_off(dev);

	INIT_IB_EVENT_HANDLER(&priv->event_handler, ca, ipoib_event);
	ib_register_event_handler(&priv->event_handler);
	return 0;

err_mcast_cleanup:
	ipoib_mcast_cleanup(priv);
err_path_cleanup:
	ipoib_path_cleanup(priv);
err_neigh_cleanup:
	ipoib_neigh_cleanup(priv);
err_destroy_wq:
	destroy_workqueue(priv->wq);
	return ret;
}

/*
 * Undo ipoib_dev_init() once the netdev is unregistered (or never was).
 * First what queues work from outside: the IB event handler, then the
 * CQs (their error events queue the resync); a resync still queued sees
 * "dying" and does nothing. Then the work items, each after those that
 * queue it (resync and mcast queue carrier_work); cancel_*_sync() also
 * stops a work item that re-arms itself. The workqueue goes once the
 * paths are freed (their work and the AH reaper run on it), the PD last.
 *
 * It runs as ndo_uninit, under rtnl inside unregister_netdevice_many(), so
 * a removal of the HCA (ipoib_remove_port() takes rtnl) cannot overtake a
 * child's teardown that another thread's unregistration has begun. Only
 * the neighbour table outlives it, for the kernel's neighbours freed while
 * the device waits for its references: ipoib_dev_free() frees it. Called
 * twice (register_netdevice() failing after ndo_uninit), it does nothing.
 */
void ipoib_dev_cleanup(struct ipoib_dev_priv *priv)
{
	if (priv->torn_down)
		return;
	priv->torn_down = true;
	ib_unregister_event_handler(&priv->event_handler);
	mutex_lock(&priv->op_mutex);
	WRITE_ONCE(priv->dying, true);
	ipoib_dp_destroy(priv);
	mutex_unlock(&priv->op_mutex);

	cancel_delayed_work_sync(&priv->recreate_work);
	cancel_delayed_work_sync(&priv->resync_work);
	cancel_delayed_work_sync(&priv->mcast_work);
	cancel_delayed_work_sync(&priv->carrier_work);
	cancel_delayed_work_sync(&priv->gc_work);
	ipoib_neigh_flush(priv);
	ipoib_path_cleanup(priv);
	destroy_workqueue(priv->wq);	/* drains: the AH reaper ran */
	ipoib_dp_cleanup(priv);
	ipoib_mcast_cleanup(priv);
}

/* What ipoib_dev_cleanup() left: once no kernel neighbour can be freed. */
void ipoib_dev_free(struct ipoib_dev_priv *priv)
{
	ipoib_neigh_cleanup(priv);
}

/*
 * rtnl allocates a child's netdev before the HCA may take it over: with
 * room for the HCA's datapath too (ipoib_rn_init()), once a port of it is
 * seen. Only grows; module-wide, as the in-tree driver does.
 */
static void ipoib_link_grow(struct ib_device *ca, u32 port)
{
	struct rdma_netdev_alloc_params params = {};

	if (!ca->ops.rdma_netdev_get_params ||
	    ca->ops.rdma_netdev_get_params(ca, port, RDMA_NETDEV_IPOIB, &params))
		return;
	rtnl_lock();
	if (params.sizeof_priv > ipoib_link_ops.priv_size)
		ipoib_link_ops.priv_size = params.sizeof_priv;
	rtnl_unlock();
}

static struct ipoib_dev_priv *ipoib_add_port(struct ib_device *ca, u32 port)
{
	struct ipoib_dev_priv *priv;
	struct net_device *dev;
	int ret;

	ipoib_link_grow(ca, port);
	dev = ipoib_netdev_alloc(ca, port, "ib%d");
	if (IS_ERR(dev))
		return ERR_CAST(dev);
	priv = ipoib_priv(dev);
	ret = ipoib_dev_init(dev, ca, port, 0);
	if (ret)
		goto err_free_netdev;

	ret = register_netdev(dev);
	if (ret)
		goto err_dev_cleanup;
	ipoib_debugfs_add(priv);
	netdev_info(dev, "%s port %u, qpn 0x%06x, lid 0x%x\n",
		    dev_name(&ca->dev), port, ipoib_qpn(priv),
		    priv->local_lid);
	return priv;

err_dev_cleanup:
	ipoib_dev_cleanup(priv);
	ipoib_dev_free(priv);
err_free_netdev:
	ipoib_netdev_free(dev);
	return ERR_PTR(ret);
}

/*
 * The children and the parent go in one rtnl section and one
 * unregister_netdevice_many(): a create_child or newlink that waited for
 * rtnl finds the parent unregistered (or gone from the ifindex table) and
 * fails, so no child can outlive its parent. Every interface's IB side,
 * a child's being deleted by another thread included, is gone once this
 * rtnl section ends (ndo_uninit); what is left is freed in rtnl_unlock()
 * (the children's destructors) and below (the parent's).
 */
static void ipoib_remove_port(struct ipoib_dev_priv *priv)
{
	struct net_device *dev = priv->dev;
	LIST_HEAD(kill);

	rtnl_lock();
	ipoib_child_unlink_all(priv, &kill);
	ipoib_debugfs_remove(priv);
	unregister_netdevice_queue(dev, &kill);	/* runs ipoib_stop if up */
	unregister_netdevice_many(&kill);	/* ndo_uninit: the IB side */
	rtnl_unlock();
	ipoib_dev_free(priv);
	ipoib_netdev_free(dev);
}

static struct ib_client ipoib_client;

static int ipoib_add_one(struct ib_device *ca)
{
	struct ipoib_dev_priv *priv;
	struct ipoib_ca *ipca;
	u32 port;

	ipca = kzalloc(sizeof(*ipca), GFP_KERNEL);
	if (!ipca)
		return -ENOMEM;
	INIT_LIST_HEAD(&ipca->ports);

	rdma_for_each_port(ca, port) {
		if (!rdma_protocol_ib(ca, port))
			continue;
		priv = ipoib_add_port(ca, port);
		if (IS_ERR(priv)) {
			ibdev_warn(ca, "ipoib: port %u: %ld\n", port,
				   PTR_ERR(priv));
			continue;
		}
		list_add_tail(&priv->ca_list, &ipca->ports);
	}
	if (list_empty(&ipca->ports)) {
		kfree(ipca);
		return -EOPNOTSUPP;
	}
	ib_set_client_data(ca, &ipoib_client, ipca);
	return 0;
}

static void ipoib_remove_one(struct ib_device *ca, void *client_data)
{
	struct ipoib_ca *ipca = client_data;
	struct ipoib_dev_priv *priv, *tmp;

	list_for_each_entry_safe(priv, tmp, &ipca->ports, ca_list) {
		list_del(&priv->ca_list);
		ipoib_remove_port(priv);
	}
	kfree(ipca);
}

static struct ib_client ipoib_client = {
	.name	= "ipoib",
	.add	= ipoib_add_one,
	.remove	= ipoib_remove_one,
	.get_net_dev_by_params = ipoib_get_net_dev_by_params,
};

static int __init ipoib_init(void)
{
	int ret;

	ipoib_ib_params_init();
	ipoib_debugfs_init();
	ib_sa_register_client(&ipoib_sa_client);
	ret = rtnl_link_register(&ipoib_link_ops);
	if (ret)
		goto err_sa_unregister;
	ret = ib_register_client(&ipoib_client);
	if (ret)
		goto err_link_unregister;
	return 0;

err_link_unregister:
	rtnl_link_unregister(&ipoib_link_ops);
err_sa_unregister:
	ib_sa_unregister_client(&ipoib_sa_client);
	ipoib_debugfs_exit();
	return ret;
}

static void __exit ipoib_exit(void)
{
	/* Interfaces first: rtnl_link_unregister would delete them itself. */
	ib_unregister_client(&ipoib_client);
	rtnl_link_unregister(&ipoib_link_ops);
	ib_sa_unregister_client(&ipoib_sa_client);
	ipoib_debugfs_exit();
}

module_init(ipoib_init);
module_exit(ipoib_exit);
