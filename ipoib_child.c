// SPDX-License-Identifier: GPL-2.0
/*
 * P_Key child interfaces (partitions): one more interface on the same port
 * with its own P_Key, UD QP and broadcast group, created either through
 * rtnetlink (`ip link add link ib0 name ib0.8001 type ipoib pkey 0x8001`)
 * or through the parent's sysfs `create_child` file, as NetworkManager does.
 *
 * A child is set up by the same ipoib_dev_init() as a port interface and
 * differs only in where its P_Key comes from. Children hang off their
 * parent's `children` list (rtnl); the parent unregisters them together
 * with itself, in one unregister_netdevice_many().
 * A child whose P_Key is not in the port's P_Key table stays up without
 * carrier; the P_Key resync (ipoib_pkey_check()) starts and stops it as
 * the table changes.
 *
 * Also here: the rtnl_link_ops of kind "ipoib" and the mode/umcast knobs
 * shared by rtnetlink and sysfs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/if_arp.h>
#include <linux/rtnetlink.h>
#include <net/rtnetlink.h>
#include "ipoib.h"

/* P_Key 0 and 0x8000 are invalid whatever the membership bit says. */
static int ipoib_pkey_valid(u16 pkey, struct netlink_ext_ack *extack)
{
	if (!(pkey & ~IPOIB_PKEY_FULL)) {
		NL_SET_ERR_MSG(extack, "ipoib: P_Key 0x0000 and 0x8000 are invalid");
		return -EINVAL;
	}
	return 0;
}

/*
 * Datagram or connected mode (sysfs `mode`, IFLA_IPOIB_MODE), under rtnl.
 * As with the in-tree driver, connected mode raises the MTU to
 * IPOIB_CM_MTU and datagram mode brings it back within the broadcast
 * group's; features follow (ipoib_fix_features()). A running interface
 * starts or stops listening at once; our address follows through the
 * carrier work.
 */
int ipoib_set_mode(struct ipoib_dev_priv *priv, u16 mode,
		   struct netlink_ext_ack *extack)
{
	struct net_device *dev = priv->dev;
	bool cm = mode == IPOIB_MODE_CONNECTED;
	int ret = 0;

	ASSERT_RTNL();
	if (mode != IPOIB_MODE_DATAGRAM && mode != IPOIB_MODE_CONNECTED) {
		NL_SET_ERR_MSG(extack, "ipoib: unknown mode");
		return -EINVAL;
	}
	if (cm == priv->cm_mode)
		return 0;
	if (cm) {
		ret = ipoib_cm_supported(priv);
		if (ret) {
			NL_SET_ERR_MSG(extack,
				       "ipoib: the HCA cannot do connected mode");
			return ret;
		}
	}

	/*
	 * RC carries no offload: checksums and segmentation go to software
	 * before connected mode starts (the core validates each packet
	 * against the features as it leaves the qdisc), so that no packet
	 * built for the HCA's offloads reaches a connection; ipoib_cm_send()
	 * still checksums one validated just before. Back to datagram mode,
	 * they return once no connection is left.
	 */
	/* the core's order: rtnl, the instance lock (ops locked, 7.x), ours */
	ipoib_compat_ops_lock(dev);
	if (cm) {
		priv->cm_asked = true;
		netdev_update_features(dev);
	}
	mutex_lock(&priv->op_mutex);
	priv->cm_mode = cm;
	if (!cm) {
		ipoib_cm_stop(priv);
		if (test_bit(IPOIB_FLAG_RUNNING, &priv->flags))
			ipoib_addr_changed(priv);
	} else if (test_bit(IPOIB_FLAG_RUNNING, &priv->flags)) {
		ret = ipoib_cm_start(priv);
		if (ret)
			priv->cm_mode = false;
	}
	mutex_unlock(&priv->op_mutex);
	/* back to datagram mode, or connected mode could not start */
	if (priv->cm_asked != priv->cm_mode) {
		priv->cm_asked = priv->cm_mode;
		netdev_update_features(dev);
	}
	ipoib_compat_ops_unlock(dev);	/* dev_set_mtu() takes it */
	if (ret) {
		NL_SET_ERR_MSG(extack, "ipoib: cannot start connected mode");
		return ret;
	}
	netdev_info(dev, "%s mode\n", cm ? "connected" : "datagram");

	if (cm) {
		ret = dev_set_mtu(dev, IPOIB_CM_MTU);
	} else {
		u32 mtu = min_t(u32, dev->mtu,
				priv->max_ib_mtu - IPOIB_ENCAP_LEN);

		if (test_bit(IPOIB_FLAG_BCAST_READY, &priv->flags))
			mtu = min(mtu, READ_ONCE(priv->mcast_mtu));
		ret = dev_set_mtu(dev, mtu);
	}
	if (ret)
		netdev_warn(dev, "cannot set the MTU of %s mode: %d\n",
			    cm ? "connected" : "datagram", ret);
	/* the RC flag of our address */
	if (test_bit(IPOIB_FLAG_ADMIN_UP, &priv->flags))
		queue_delayed_work(priv->wq, &priv->carrier_work, 0);
	return 0;
}

/*
 * umcast: leave to user space the groups it joined through the SA
 * (ipoib_mcast_sync_list(); Documentation/management.rst).
 */
void ipoib_set_umcast(struct ipoib_dev_priv *priv, bool on)
{
	ipoib_dbg(priv->dev, "umcast %s\n", on ? "on" : "off");
	WRITE_ONCE(priv->umcast, on);
}

/*
 * The P_Key table changed (resync work, op_mutex held). Returns true if the
 * interface must be restarted with *pkey: a port interface follows table
 * index 0; a child keeps its P_Key and restarts when the P_Key appeared,
 * disappeared or moved to another index.
 */
bool ipoib_pkey_check(struct ipoib_dev_priv *priv, u16 *pkey)
{
	bool running = test_bit(IPOIB_FLAG_RUNNING, &priv->flags);
	bool found;
	u16 index;

	lockdep_assert_held(&priv->op_mutex);
	if (!priv->parent) {
		if (ib_query_pkey(priv->ca, priv->port, 0, pkey) ||
		    !(*pkey & ~IPOIB_PKEY_FULL))
			return false;
		*pkey |= IPOIB_PKEY_FULL;
		return *pkey != priv->pkey;
	}

	*pkey = priv->pkey;
	found = !ib_find_pkey(priv->ca, priv->port, priv->pkey, &index);
	if (running && !found) {
		netdev_info(priv->dev,
			    "P_Key 0x%04x left the port's P_Key table\n",
			    priv->pkey);
		return true;
	}
	if (running)
		return index != priv->pkey_index;
	if (found && test_bit(IPOIB_FLAG_ADMIN_UP, &priv->flags)) {
		netdev_info(priv->dev,
			    "P_Key 0x%04x is in the port's P_Key table at index %u\n",
			    priv->pkey, index);
		return true;
	}
	return false;
}

int ipoib_child_get_iflink(const struct net_device *dev)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	return priv->parent ? priv->parent->dev->ifindex : dev->ifindex;
}

static void ipoib_child_destructor(struct net_device *dev)
{
	ipoib_dev_free(ipoib_priv(dev));
	ipoib_rn_release(dev);
}

/*
 * Initialise and register @dev as a child of @ppriv with P_Key @pkey (full
 * member bit included) and, if @mtu is not 0, that MTU as the user's (it
 * is capped at the broadcast group's, as any MTU). On failure nothing is
 * left to undo but the netdev itself, which the caller frees.
 */
static int ipoib_child_add(struct ipoib_dev_priv *ppriv, struct net_device *dev,
			   u16 pkey, u32 mtu, enum ipoib_kind kind)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	int ret;

	ASSERT_RTNL();
	priv->parent = ppriv;
	priv->kind = kind;
	priv->gid_index = ppriv->gid_index;	/* the parent's GUID */
	ret = ipoib_dev_init(dev, ppriv->ca, ppriv->port, pkey);
	if (ret)
		return ret;
	if (mtu) {
		dev->mtu = min(mtu, priv->max_ib_mtu - IPOIB_ENCAP_LEN);
		priv->admin_mtu = dev->mtu;
	}
	ret = register_netdevice(dev);
	if (ret) {
		ipoib_dev_cleanup(priv);	/* unless ndo_uninit ran */
		ipoib_dev_free(priv);
		return ret;
	}
	/* From here on unregistering frees everything. */
	dev->priv_destructor = ipoib_child_destructor;
	dev->needs_free_netdev = true;
	/* ipoib_get_net_dev_by_params() walks the children under RCU. */
	list_add_tail_rcu(&priv->child_list, &ppriv->children);
	ipoib_debugfs_add(priv);
	netdev_info(dev, "child of %s, P_Key 0x%04x, qpn 0x%06x\n",
		    ppriv->dev->name, priv->pkey, ipoib_qpn(priv));
	return 0;
}

/* First phase of a child's removal; rtnl held. */
static void ipoib_child_unlink(struct ipoib_dev_priv *priv,
			       struct list_head *kill)
{
	ASSERT_RTNL();
	ipoib_debugfs_remove(priv);
	/* unregister_netdevice_many() waits for RCU readers (synchronize_net) */
	list_del_rcu(&priv->child_list);
	unregister_netdevice_queue(priv->dev, kill);
}

/* sysfs create_child: @pkey as written (the name uses it unchanged). */
int ipoib_child_create(struct ipoib_dev_priv *ppriv, u16 pkey)
{
	u16 full = pkey | IPOIB_PKEY_FULL;
	struct ipoib_dev_priv *priv;
	char name[IFNAMSIZ];
	struct net_device *dev;
	int ret;

	ret = ipoib_pkey_valid(pkey, NULL);
	if (ret)
		return ret;
	if (!rtnl_trylock())
		return restart_syscall();
	if (ppriv->dev->reg_state != NETREG_REGISTERED) {
		ret = -ENODEV;
		goto out_unlock;
	}
	/* delete_child names a child by its P_Key: it must be unique. */
	ret = -ENOTUNIQ;
	if (full == ppriv->pkey)
		goto out_unlock;
	list_for_each_entry(priv, &ppriv->children, child_list)
		if (priv->kind == IPOIB_KIND_LEGACY && priv->pkey == full)
			goto out_unlock;

	snprintf(name, sizeof(name), "%.10s.%04x", ppriv->dev->name, pkey);
	dev = ipoib_netdev_alloc(ppriv->ca, ppriv->port, name);
	if (IS_ERR(dev)) {
		ret = PTR_ERR(dev);
		goto out_unlock;
	}
	dev_net_set(dev, dev_net(ppriv->dev));
	ret = ipoib_child_add(ppriv, dev, full, 0, IPOIB_KIND_LEGACY);
	if (ret)
		ipoib_netdev_free(dev);
out_unlock:
	rtnl_unlock();
	return ret;
}

/* sysfs delete_child: removes the sysfs-created child with that P_Key. */
int ipoib_child_delete(struct ipoib_dev_priv *ppriv, u16 pkey)
{
	u16 full = pkey | IPOIB_PKEY_FULL;
	struct ipoib_dev_priv *priv;
	LIST_HEAD(kill);
	int ret = -ENODEV;

	if (!rtnl_trylock())
		return restart_syscall();
	list_for_each_entry(priv, &ppriv->children, child_list) {
		if (priv->kind == IPOIB_KIND_LEGACY && priv->pkey == full) {
			ipoib_child_unlink(priv, &kill);
			ret = 0;
			break;
		}
	}
	unregister_netdevice_many(&kill);
	/* Runs the child's destructor: it is gone when we return. */
	rtnl_unlock();
	return ret;
}

/*
 * The parent is going away: queue every child on @kill, in the same rtnl
 * section that queues the parent (ipoib_remove_port()).
 */
void ipoib_child_unlink_all(struct ipoib_dev_priv *ppriv,
			    struct list_head *kill)
{
	struct ipoib_dev_priv *priv, *tmp;

	ASSERT_RTNL();
	list_for_each_entry_safe(priv, tmp, &ppriv->children, child_list)
		ipoib_child_unlink(priv, kill);
}

/* rtnetlink */

static const struct nla_policy ipoib_link_policy[IFLA_IPOIB_MAX + 1] = {
	[IFLA_IPOIB_PKEY]	= { .type = NLA_U16 },
	[IFLA_IPOIB_MODE]	= { .type = NLA_U16 },
	[IFLA_IPOIB_UMCAST]	= { .type = NLA_U16 },
};

static int ipoib_link_changelink(struct net_device *dev, struct nlattr *tb[],
				 struct nlattr *data[],
				 struct netlink_ext_ack *extack)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	int ret;

	if (!data)
		return 0;
	if (data[IFLA_IPOIB_PKEY] &&
	    (nla_get_u16(data[IFLA_IPOIB_PKEY]) | IPOIB_PKEY_FULL) !=
	    priv->pkey) {
		NL_SET_ERR_MSG(extack,
			       "ipoib: the P_Key of an interface cannot change");
		return -EOPNOTSUPP;
	}
	if (data[IFLA_IPOIB_MODE]) {
		ret = ipoib_set_mode(priv, nla_get_u16(data[IFLA_IPOIB_MODE]),
				     extack);
		if (ret)
			return ret;
	}
	if (data[IFLA_IPOIB_UMCAST])
		ipoib_set_umcast(priv, nla_get_u16(data[IFLA_IPOIB_UMCAST]));
	return 0;
}

static int ipoib_link_newlink(IPOIB_COMPAT_NEWLINK_ARGS)
{
	struct nlattr **data = IPOIB_COMPAT_NEWLINK_DATA;
	struct nlattr **tb = IPOIB_COMPAT_NEWLINK_TB;
	struct net *src_net = IPOIB_COMPAT_NEWLINK_NET;
	struct ipoib_dev_priv *ppriv, *priv = ipoib_priv(dev);
	struct net_device *pdev;
	u16 pkey;
	int ret;

	if (!tb[IFLA_LINK]) {
		NL_SET_ERR_MSG(extack, "ipoib: a parent interface (link) is required");
		return -EINVAL;
	}
	pdev = __dev_get_by_index(src_net, nla_get_u32(tb[IFLA_LINK]));
	if (!pdev || pdev->netdev_ops != &ipoib_netdev_ops) {
		NL_SET_ERR_MSG(extack, "ipoib: the parent is not an ipoib interface");
		return -ENODEV;
	}
	ppriv = ipoib_priv(pdev);
	if (pdev->reg_state != NETREG_REGISTERED) {
		NL_SET_ERR_MSG(extack, "ipoib: the parent is being removed");
		return -ENODEV;
	}
	if (ppriv->parent) {
		NL_SET_ERR_MSG(extack, "ipoib: a child interface cannot have children");
		return -EINVAL;
	}

	pkey = ppriv->pkey;
	if (data && data[IFLA_IPOIB_PKEY])
		pkey = nla_get_u16(data[IFLA_IPOIB_PKEY]);
	ret = ipoib_pkey_valid(pkey, extack);
	if (ret)
		return ret;
	/* Refuse what changelink would refuse before anything exists. */
	if (data && data[IFLA_IPOIB_MODE] &&
	    nla_get_u16(data[IFLA_IPOIB_MODE]) > IPOIB_MODE_CONNECTED) {
		NL_SET_ERR_MSG(extack, "ipoib: unknown mode");
		return -EINVAL;
	}
	if (data && data[IFLA_IPOIB_MODE] &&
	    nla_get_u16(data[IFLA_IPOIB_MODE]) == IPOIB_MODE_CONNECTED) {
		ret = ipoib_cm_supported(ppriv);
		if (ret) {
			NL_SET_ERR_MSG(extack,
				       "ipoib: the HCA cannot do connected mode");
			return ret;
		}
	}

	/*
	 * rtnl made the netdev for our own datapath (ipoib_link_ops): the
	 * HCA's, where the parent has it, takes it over; ours sends and
	 * receives on one queue.
	 */
	if (ppriv->enhanced) {
		ret = ipoib_rn_init(dev, ppriv->ca, ppriv->port);
		if (ret && ret != -EOPNOTSUPP)
			return ret;
	}
	priv = ipoib_priv(dev);
	if (!priv->enhanced) {
		netif_set_real_num_tx_queues(dev, 1);
		netif_set_real_num_rx_queues(dev, 1);
	}
	/* rtnl_create_link() checked IFLA_MTU and put it in dev->mtu. */
	ret = ipoib_child_add(ppriv, dev, pkey | IPOIB_PKEY_FULL,
			      tb[IFLA_MTU] ? dev->mtu : 0, IPOIB_KIND_RTNL);
	if (ret) {
		ipoib_rn_release(dev);	/* rtnl frees the netdev itself */
		return ret;
	}
	if (data && data[IFLA_IPOIB_UMCAST])
		ipoib_set_umcast(priv, nla_get_u16(data[IFLA_IPOIB_UMCAST]));
	/* registered, not up: checked above, only the mode is set */
	if (data && data[IFLA_IPOIB_MODE])
		ipoib_set_mode(priv, nla_get_u16(data[IFLA_IPOIB_MODE]), extack);
	return 0;
}

static void ipoib_link_dellink(struct net_device *dev, struct list_head *kill)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	if (!priv->parent) {
		netdev_info(dev, "a port interface cannot be deleted\n");
		return;
	}
	ipoib_child_unlink(priv, kill);
}

static size_t ipoib_link_get_size(const struct net_device *dev)
{
	return nla_total_size(sizeof(u16)) +	/* IFLA_IPOIB_PKEY */
	       nla_total_size(sizeof(u16)) +	/* IFLA_IPOIB_MODE */
	       nla_total_size(sizeof(u16));	/* IFLA_IPOIB_UMCAST */
}

static int ipoib_link_fill_info(struct sk_buff *skb,
				const struct net_device *dev)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	if (nla_put_u16(skb, IFLA_IPOIB_PKEY, priv->pkey) ||
	    nla_put_u16(skb, IFLA_IPOIB_MODE, priv->cm_mode ?
			IPOIB_MODE_CONNECTED : IPOIB_MODE_DATAGRAM) ||
	    nla_put_u16(skb, IFLA_IPOIB_UMCAST, READ_ONCE(priv->umcast)))
		return -EMSGSIZE;
	return 0;
}

/*
 * As many queues as an HCA's enhanced IPoIB datapath may give a child (our
 * own datapath uses one of them)
 */
static unsigned int ipoib_link_num_queues(void)
{
	return min_t(unsigned int, num_possible_cpus(), 128);
}

struct rtnl_link_ops ipoib_link_ops __read_mostly = {
	.kind		= "ipoib",
	.get_num_tx_queues = ipoib_link_num_queues,
	.get_num_rx_queues = ipoib_link_num_queues,
	.priv_size	= sizeof(struct ipoib_dev_priv),
	.setup		= ipoib_setup,
	.maxtype	= IFLA_IPOIB_MAX,
	.policy		= ipoib_link_policy,
	.newlink	= ipoib_link_newlink,
	.changelink	= ipoib_link_changelink,
	.dellink	= ipoib_link_dellink,
	.get_size	= ipoib_link_get_size,
	.fill_info	= ipoib_link_fill_info,
	/* Back to init_net when a namespace holding us is destroyed. */
	.netns_refund	= true,
};
