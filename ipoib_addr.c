// SPDX-License-Identifier: GPL-2.0
/*
 * The interface's hardware address (RFC 4391 section 9.1.1): flags, UD QPN
 * and a GID of the port. Built from the QP and the GID; published to the
 * stack and the peers when either changes (a new QP, a new subnet prefix);
 * and its GUID set by the administrator (ip link set ibX address), as the
 * in-tree driver allows for alias GUIDs (SR-IOV virtual functions).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/rtnetlink.h>
#include <rdma/ib_cache.h>
#include "ipoib.h"

/* Our hardware address: flags, QPN, port GID (RFC 4391 section 9.1.1). */
void ipoib_build_hw_addr(struct ipoib_dev_priv *priv, u8 *addr)
{
	u32 qpn = ipoib_qpn(priv);

	/* RC: we listen for connections (ipoib_cm_start); never UC */
	addr[0] = rcu_access_pointer(priv->cm) ? IPOIB_HW_RC : 0;
	addr[1] = qpn >> 16;
	addr[2] = qpn >> 8;
	addr[3] = qpn;
	memcpy(addr + 4, priv->local_gid.raw, sizeof(union ib_gid));
}

/*
 * The announcement of a new address is sent twice more, 2 s apart: when the
 * whole subnet changes prefix, a peer may be between leaving and joining
 * the broadcast group again (detached) as the first one goes out. Under
 * rtnl, from the carrier work.
 */
#define IPOIB_NOTIFY_REPEAT	2
#define IPOIB_NOTIFY_GAP	(2 * HZ)

static void ipoib_notify_again(struct ipoib_dev_priv *priv, bool carrier)
{
	if (!priv->notify_left)
		return;
	if (!carrier) {
		priv->notify_left = 0;
		return;
	}
	if (time_before(jiffies, priv->notify_next)) {
		queue_delayed_work(priv->wq, &priv->carrier_work,
				   priv->notify_next - jiffies);
		return;
	}
	__netdev_notify_peers(priv->dev);
	priv->notify_next = jiffies + IPOIB_NOTIFY_GAP;
	if (--priv->notify_left)
		queue_delayed_work(priv->wq, &priv->carrier_work,
				   IPOIB_NOTIFY_GAP);
}

/*
 * Our hardware address changes (a new QPN, a new port GID): the carrier
 * work publishes it. Caller holds op_mutex.
 */
void ipoib_addr_changed(struct ipoib_dev_priv *priv)
{
	lockdep_assert_held(&priv->op_mutex);
	WRITE_ONCE(priv->addr_changed_at, jiffies);
	set_bit(IPOIB_FLAG_ADDR_CHANGED, &priv->flags);
}

/*
 * After ipoib_addr_changed(): put the new address in dev_addr and tell the
 * stack, then, once the broadcast group is joined again (under the new QP
 * or GID) with the carrier on, the peers (gratuitous ARP and unsolicited
 * NA replace our old address in their neighbour tables; sent before the
 * rejoin they could miss peers that are rejoining too). Called with rtnl
 * held by the carrier work, which runs again when the join completes.
 */
void ipoib_publish_addr(struct ipoib_dev_priv *priv, bool carrier)
{
	struct net_device *dev = priv->dev;
	u8 addr[INFINIBAND_ALEN];
	bool flags_only = false;

	ASSERT_RTNL();
	if (!test_bit(IPOIB_FLAG_ADDR_CHANGED, &priv->flags)) {
		ipoib_notify_again(priv, carrier);
		return;
	}
	mutex_lock(&priv->op_mutex);
	ipoib_build_hw_addr(priv, addr);
	mutex_unlock(&priv->op_mutex);
	if (memcmp(dev->dev_addr, addr, INFINIBAND_ALEN)) {
		/* the RC flag alone (mode switch): the groups are as they were */
		flags_only = !memcmp(dev->dev_addr + 1, addr + 1,
				     INFINIBAND_ALEN - 1);
		dev_addr_set(dev, addr);
		call_netdevice_notifiers(NETDEV_CHANGEADDR, dev);
	}
	if (carrier &&
	    (flags_only ||
	     ipoib_mcast_bcast_joined_since(priv, READ_ONCE(priv->addr_changed_at))) &&
	    test_and_clear_bit(IPOIB_FLAG_ADDR_CHANGED, &priv->flags)) {
		__netdev_notify_peers(dev);
		priv->notify_left = IPOIB_NOTIFY_REPEAT;
		priv->notify_next = jiffies + IPOIB_NOTIFY_GAP;
		queue_delayed_work(priv->wq, &priv->carrier_work,
				   IPOIB_NOTIFY_GAP);
	}
}

/* The GID table index of @gid on our port, or -1. */
static int ipoib_gid_index(struct ipoib_dev_priv *priv, const union ib_gid *gid)
{
	struct ib_port_attr attr;
	union ib_gid cur;
	int i;

	if (ib_query_port(priv->ca, priv->port, &attr))
		return -1;
	for (i = 0; i < attr.gid_tbl_len; i++)
		if (!rdma_query_gid(priv->ca, priv->port, i, &cur) &&
		    !memcmp(&cur, gid, sizeof(cur)))
			return i;
	return -1;
}

/*
 * A new source GID for a child: its resync sees the GID at the new index
 * differ from its own, and changes address, groups and paths as for a new
 * subnet prefix (ipoib_query_port()).
 */
static void ipoib_child_follow_gid(struct ipoib_dev_priv *priv, u16 index)
{
	mutex_lock(&priv->op_mutex);
	WRITE_ONCE(priv->gid_index, index);
	mutex_unlock(&priv->op_mutex);
	ipoib_queue_resync(priv, IPOIB_RESYNC_GID);
}

/**
 * ipoib_set_mac_address - ndo_set_mac_address: a new GUID for the interface
 * @dev: the interface; rtnl held
 * @p: a struct sockaddr (or sockaddr_storage) holding 20 address bytes
 *
 * The flags, the QPN and the subnet prefix are the driver's and the SM's:
 * only the GUID (the last 8 bytes) may change, to one whose GID is in the
 * port's GID table (an alias GUID the SM assigned), while the interface is
 * down. The P_Key children follow their parent, as in the in-tree driver.
 * Stricter than the in-tree driver, which takes a GID that is not in the
 * table and then cannot use it: refused here with -EADDRNOTAVAIL.
 *
 * Return: 0, -EBUSY (up), -EINVAL (another byte changed, or GUID 0),
 * -EADDRNOTAVAIL (not in the table).
 */
int ipoib_set_mac_address(struct net_device *dev, void *p)
{
	const u8 *new = (const u8 *)p + offsetof(struct sockaddr, sa_data);
	struct ipoib_dev_priv *priv = ipoib_priv(dev), *child;
	union ib_gid gid;
	u8 addr[INFINIBAND_ALEN];
	int index;

	ASSERT_RTNL();
	if (netif_running(dev)) {
		netdev_info(dev, "the hardware address can change only while the interface is down\n");
		return -EBUSY;
	}
	memcpy(gid.raw, new + 4, sizeof(gid.raw));
	if (memcmp(new, dev->dev_addr, 4 + sizeof(gid.global.subnet_prefix)) ||
	    !gid.global.interface_id) {
		netdev_info(dev, "only the GUID of the hardware address can change, and not to 0\n");
		return -EINVAL;
	}
	index = ipoib_gid_index(priv, &gid);
	if (index < 0) {
		netdev_info(dev, "GID %pI6 is not in port %u's GID table\n", gid.raw,
			    priv->port);
		return -EADDRNOTAVAIL;
	}

	mutex_lock(&priv->op_mutex);
	WRITE_ONCE(priv->gid_index, index);
	priv->local_gid = gid;
	ipoib_build_hw_addr(priv, addr);
	mutex_unlock(&priv->op_mutex);
	dev_addr_set(dev, addr);
	netdev_info(dev, "GUID %016llx (GID index %d)\n",
		    be64_to_cpu(gid.global.interface_id), index);

	list_for_each_entry(child, &priv->children, child_list)
		ipoib_child_follow_gid(child, index);
	return 0;
}
