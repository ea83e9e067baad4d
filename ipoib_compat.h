/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The only place where ib_ipoib and softib (tests/softib/, which builds
 * with a copy of this file) differ by kernel version. Debian 12's 6.1 and
 * the 6.12 of its security suite (Debian 13's kernel) are supported; each
 * entry names the kernel that changed what, and the .c files use the
 * names below without any #if of their own. Rules: Documentation/design.rst.
 */
#ifndef IPOIB_COMPAT_H
#define IPOIB_COMPAT_H

#include <linux/debugfs.h>
#include <linux/ethtool.h>
#include <linux/hrtimer.h>
#include <linux/netdevice.h>
#include <linux/timer.h>
#include <linux/version.h>
#include <net/rtnetlink.h>
#include <rdma/ib_verbs.h>

/*
 * v6.12 moved <asm/unaligned.h> to <linux/unaligned.h>; 6.1 has only the
 * former. (A version test, not __has_include(): Debian 12's sparse 0.6.4
 * cannot parse that.)
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

/*
 * v6.5 moved the GSO helpers (skb_gso_validate_network_len()) out of
 * <linux/skbuff.h> into <net/gso.h>, which 6.1 does not have.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
#include <net/gso.h>
#endif

/*
 * v6.11 passes struct uverbs_attr_bundle * instead of struct ib_udata * as
 * the third argument of ib_device_ops.create_cq (NULL for kernel CQs in
 * both).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define IB_COMPAT_CREATE_CQ_ARG	struct uverbs_attr_bundle
#else
#define IB_COMPAT_CREATE_CQ_ARG	struct ib_udata
#endif

/*
 * v6.3 (the rework of multiple path records per query) made the num_prs
 * argument of the ib_sa_path_rec_get() callback unsigned int; 6.1 has int.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
#define IB_COMPAT_NUM_PRS	unsigned int
#else
#define IB_COMPAT_NUM_PRS	int
#endif

/*
 * v6.7 added IB_SPEED_XDR (200 Gb/s per lane) to enum ib_port_speed; 6.1
 * lacks it. An older kernel never reports it, so naming it there with the
 * newer value is harmless and keeps the speed switch whole.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 7, 0)
#define IB_SPEED_XDR	256
#endif

/*
 * v6.13 added hrtimer_setup(), which also sets the callback; v6.15 removed
 * hrtimer_init(). The older kernels get the new name.
 */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 13, 0)
static inline void hrtimer_setup(struct hrtimer *timer,
				 enum hrtimer_restart (*fn)(struct hrtimer *),
				 clockid_t clock, enum hrtimer_mode mode)
{
	hrtimer_init(timer, clock, mode);
	timer->function = fn;
}
#endif

/* v6.16 renamed from_timer() to timer_container_of(), with no alias. */
#ifndef timer_container_of
#define timer_container_of(var, t, field)	from_timer(var, t, field)
#endif

/*
 * v6.14 replaced debugfs_rename() (a new parent, a dentry or an ERR_PTR
 * back) by debugfs_change_name() (in place, an errno back). Both rename
 * @d within its directory @dir here; 0 or an errno.
 */
static inline int ipoib_compat_debugfs_rename(struct dentry *dir,
					      struct dentry *d,
					      const char *name)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 14, 0)
	return debugfs_change_name(d, "%s", name);
#else
	return PTR_ERR_OR_ZERO(debugfs_rename(dir, d, dir, name));
#endif
}

/*
 * v6.15 packs rtnl_link_ops.newlink's namespaces and attributes into struct
 * rtnl_newlink_params. IPOIB_COMPAT_NEWLINK_ARGS is the parameter list;
 * the accessors give the namespace IFLA_LINK is looked up in (the link
 * namespace, else the caller's: what the core passed first before 6.15)
 * and the attribute tables, for locals of the usual names.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 15, 0)
#define IPOIB_COMPAT_NEWLINK_ARGS \
	struct net_device *dev, struct rtnl_newlink_params *params, \
	struct netlink_ext_ack *extack
#define IPOIB_COMPAT_NEWLINK_NET	rtnl_newlink_link_net(params)
#define IPOIB_COMPAT_NEWLINK_TB		(params->tb)
#define IPOIB_COMPAT_NEWLINK_DATA	(params->data)
#else
#define IPOIB_COMPAT_NEWLINK_ARGS \
	struct net *compat_net, struct net_device *dev, \
	struct nlattr *compat_tb[], struct nlattr *compat_data[], \
	struct netlink_ext_ack *extack
#define IPOIB_COMPAT_NEWLINK_NET	compat_net
#define IPOIB_COMPAT_NEWLINK_TB		compat_tb
#define IPOIB_COMPAT_NEWLINK_DATA	compat_data
#endif

/*
 * v6.17 added a DMA handle argument (struct ib_dmah *) before the udata of
 * ib_device_ops.reg_user_mr; softib ignores it.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 17, 0)
#define IB_COMPAT_REG_USER_MR_DMAH	struct ib_dmah *dmah,
#else
#define IB_COMPAT_REG_USER_MR_DMAH
#endif

/*
 * The netdev instance lock. v6.13 made NAPI's add, enable, disable and del
 * take dev->lock themselves, with *_locked variants for a holder; v6.15
 * let a driver set request_ops_lock so that the core calls its ndos and
 * ethtool ops with that lock held ("ops locked"); v6.16 (where mlx5i, and
 * softib's provider after it, request it) added netdev_lock_ops_to_full().
 * On an ops-locked netdev, code the core calls holds the lock already, and
 * our own work items take it (ipoib_compat_ops_lock()) after rtnl and before
 * anything of ours. ipoib_compat_napi_*() are for code that may run either
 * way: with the ops lock held when the netdev is ops locked, with rtnl only
 * when not. Before 6.16 no provider requests the lock: plain calls.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 16, 0)
#include <net/netdev_lock.h>
static inline void ipoib_compat_ops_lock(struct net_device *dev)
{
	netdev_lock_ops(dev);
}

static inline void ipoib_compat_ops_unlock(struct net_device *dev)
{
	netdev_unlock_ops(dev);
}

static inline void ipoib_compat_request_ops_lock(struct net_device *dev)
{
	dev->request_ops_lock = true;
}

/* false if @dev is ops locked and nobody holds its lock (lockdep's check) */
static inline bool ipoib_compat_ops_lock_held(struct net_device *dev)
{
	return !netdev_need_ops_lock(dev) || mutex_is_locked(&dev->lock);
}

static inline void ipoib_compat_napi_add(struct net_device *dev,
					 struct napi_struct *napi,
					 int (*poll)(struct napi_struct *, int))
{
	netdev_lock_ops_to_full(dev);
	netif_napi_add_locked(dev, napi, poll);
	netdev_unlock_full_to_ops(dev);
}

static inline void ipoib_compat_napi_enable(struct napi_struct *napi)
{
	netdev_lock_ops_to_full(napi->dev);
	napi_enable_locked(napi);
	netdev_unlock_full_to_ops(napi->dev);
}

static inline void ipoib_compat_napi_disable(struct napi_struct *napi)
{
	netdev_lock_ops_to_full(napi->dev);
	napi_disable_locked(napi);
	netdev_unlock_full_to_ops(napi->dev);
}

static inline void ipoib_compat_napi_del(struct napi_struct *napi)
{
	struct net_device *dev = napi->dev;

	netdev_lock_ops_to_full(dev);
	netif_napi_del_locked(napi);
	netdev_unlock_full_to_ops(dev);
}
#else
static inline void ipoib_compat_ops_lock(struct net_device *dev)
{
}

static inline void ipoib_compat_ops_unlock(struct net_device *dev)
{
}

static inline void ipoib_compat_request_ops_lock(struct net_device *dev)
{
}

static inline bool ipoib_compat_ops_lock_held(struct net_device *dev)
{
	return true;
}

#define ipoib_compat_napi_add(dev, napi, poll)	netif_napi_add(dev, napi, poll)
#define ipoib_compat_napi_enable(napi)	napi_enable(napi)
#define ipoib_compat_napi_disable(napi)	napi_disable(napi)
#define ipoib_compat_napi_del(napi)	netif_napi_del(napi)
#endif

/*
 * ethtool's core calls an ops-locked netdev's ethtool ops under its
 * instance lock only, except those a driver names in op_needs_rtnl (after
 * 6.16; before, every op ran under rtnl too). IPOIB_COMPAT_OP_NEEDS_RTNL
 * is the initializer of that member, empty where it does not exist (a
 * kernel with ETHTOOL_OP_NEEDS_RTNL_GLINK has every bit softib uses).
 */
#ifdef ETHTOOL_OP_NEEDS_RTNL_GLINK
#define IPOIB_COMPAT_OP_NEEDS_RTNL(bits)	.op_needs_rtnl = (bits),
#else
#define IPOIB_COMPAT_OP_NEEDS_RTNL(bits)
#endif

/*
 * v7.1 added ndo_set_rx_mode_async (process context, rtnl and the ops
 * lock held, snapshots of the address lists), and its register_netdevice()
 * warns when an ops-locked netdev still has ndo_set_rx_mode (later kernels
 * refuse it). Ours only queues work, which either can do: the member is
 * .IPOIB_COMPAT_NDO_SET_RX_MODE, the function
 * "static IPOIB_COMPAT_RX_MODE_RET f(IPOIB_COMPAT_RX_MODE_ARGS)" ending
 * with "return IPOIB_COMPAT_RX_MODE_DONE;".
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 1, 0)
#define IPOIB_COMPAT_NDO_SET_RX_MODE	ndo_set_rx_mode_async
#define IPOIB_COMPAT_RX_MODE_ARGS \
	struct net_device *dev, struct netdev_hw_addr_list *compat_uc, \
	struct netdev_hw_addr_list *compat_mc
#define IPOIB_COMPAT_RX_MODE_RET	int
#define IPOIB_COMPAT_RX_MODE_DONE	0
#else
#define IPOIB_COMPAT_NDO_SET_RX_MODE	ndo_set_rx_mode
#define IPOIB_COMPAT_RX_MODE_ARGS	struct net_device *dev
#define IPOIB_COMPAT_RX_MODE_RET	void
#define IPOIB_COMPAT_RX_MODE_DONE
#endif

/* v7.0 stopped including <linux/hex.h> (hex_to_bin()) from <linux/kernel.h>. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
#include <linux/hex.h>
#endif

#endif /* IPOIB_COMPAT_H */
