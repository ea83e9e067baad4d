// SPDX-License-Identifier: GPL-2.0
/*
 * The naming service IPoIB gives RDMA consumers on the passive side.
 *
 * When a connection request (REQ or SIDR REQ) reaches a device, rdma_cm
 * asks every ib_client which net_device owns it, from what the request
 * carries: port, P_Key, the GID it was sent to (REQ only) and the IP
 * address it is for. The answer picks the namespace in which rdma_cm looks
 * for a listener, and, for an IPv6 link-local address, the interface a
 * bound listener must be on. NULL makes rdma_cm drop (reject) the request.
 *
 * The interfaces that can own a request are the port interface of that
 * port and its P_Key children; the request's P_Key picks among them. The
 * GID, if given, must be one of the port's. When the P_Key alone names one
 * interface, that interface (or the master it is enslaved to, a bond,
 * where its addresses live) is the answer, whatever the address: rdma_cm
 * checks the route itself. When it names several (children sharing a
 * P_Key), the one holding the address, directly or through an upper
 * device stacked on it, is the answer.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/inetdevice.h>
#include <net/addrconf.h>
#include <rdma/ib_cache.h>
#include "ipoib.h"

#define IPOIB_PKEY_BASE_MASK	0x7fff	/* P_Key without the membership bit */

struct ipoib_rdma_match {
	u16 pkey;
	const union ib_gid *gid;	/* NULL: any */
	const struct sockaddr *addr;	/* NULL: match on the P_Key only */
	struct net_device *found;	/* the first match, held */
	unsigned int count;
	struct net_device *upper;	/* scratch of the upper-device walk */
};

/* Whether @addr is one of @dev's own addresses; RCU held. */
static bool ipoib_rdma_dev_has_addr(struct net_device *dev,
				    const struct sockaddr *addr)
{
	const struct sockaddr_in6 *sin6;
	const struct sockaddr_in *sin;
	const struct in_ifaddr *ifa;
	struct in_device *in_dev;

	switch (addr->sa_family) {
	case AF_INET:
		sin = (const struct sockaddr_in *)addr;
		in_dev = __in_dev_get_rcu(dev);
		if (!in_dev)
			return false;
		in_dev_for_each_ifa_rcu(ifa, in_dev)
			if (ifa->ifa_local == sin->sin_addr.s_addr)
				return true;
		return false;
	case AF_INET6:
		/* strict: on @dev itself, link-local addresses included */
		sin6 = (const struct sockaddr_in6 *)addr;
		return IS_ENABLED(CONFIG_IPV6) &&
		       ipv6_chk_addr(dev_net(dev), &sin6->sin6_addr, dev, 1);
	default:
		return false;
	}
}

static int ipoib_rdma_upper_has_addr(struct net_device *upper,
				     struct netdev_nested_priv *nested)
{
	struct ipoib_rdma_match *m = nested->data;

	if (!ipoib_rdma_dev_has_addr(upper, m->addr))
		return 0;
	m->upper = upper;
	return 1;	/* stop the walk */
}

/*
 * The device @priv stands for in this match, or NULL; RCU held. Matching
 * on the P_Key only: the interface's master if it has one, else itself.
 * With an address: the interface or the upper device holding it.
 */
static struct net_device *ipoib_rdma_dev(struct ipoib_dev_priv *priv,
					 struct ipoib_rdma_match *m)
{
	struct netdev_nested_priv nested = { .data = m };
	struct net_device *dev = priv->dev, *master;

	if (!m->addr) {
		master = netdev_master_upper_dev_get_rcu(dev);
		return master ?: dev;
	}
	if (ipoib_rdma_dev_has_addr(dev, m->addr))
		return dev;
	m->upper = NULL;
	netdev_walk_all_upper_dev_rcu(dev, ipoib_rdma_upper_has_addr, &nested);
	return m->upper;
}

/* Count @priv if it matches; the first match is kept, held. RCU held. */
static void ipoib_rdma_try(struct ipoib_dev_priv *priv,
			   struct ipoib_rdma_match *m)
{
	struct net_device *dev;

	if ((READ_ONCE(priv->pkey) ^ m->pkey) & IPOIB_PKEY_BASE_MASK)
		return;
	/*
	 * An interface answers for its own GID (an alias GUID's, if set:
	 * ipoib_set_mac_address()), as in the in-tree driver. Read without
	 * op_mutex: it changes only while the interface is down (its
	 * children: at their resync), and a request racing that change
	 * would find no interface, as it would a moment later anyway.
	 */
	if (m->gid && memcmp(m->gid, &priv->local_gid, sizeof(*m->gid)))
		return;
	dev = ipoib_rdma_dev(priv, m);
	if (!dev)
		return;
	if (!m->count++) {
		dev_hold(dev);
		m->found = dev;
	}
}

/* Every interface of @port: the port interfaces and their children. */
static void ipoib_rdma_scan(struct list_head *ports, u32 port,
			    struct ipoib_rdma_match *m)
{
	struct ipoib_dev_priv *priv, *child;

	rcu_read_lock();
	list_for_each_entry(priv, ports, ca_list) {
		if (priv->port != port)
			continue;
		ipoib_rdma_try(priv, m);
		list_for_each_entry_rcu(child, &priv->children, child_list)
			ipoib_rdma_try(child, m);
	}
	rcu_read_unlock();
}

struct net_device *ipoib_get_net_dev_by_params(struct ib_device *ca, u32 port,
					       u16 pkey,
					       const union ib_gid *gid,
					       const struct sockaddr *addr,
					       void *client_data)
{
	struct ipoib_ca *ipca = client_data;
	struct ipoib_rdma_match m = { .pkey = pkey, .gid = gid };
	const struct ib_gid_attr *attr;
	u16 index;

	if (!rdma_protocol_ib(ca, port))
		return NULL;
	if (ib_find_cached_pkey(ca, port, pkey, &index))
		return NULL;
	if (gid) {
		attr = rdma_find_gid_by_port(ca, gid, IB_GID_TYPE_IB, port,
					     NULL);
		if (IS_ERR(attr))
			return NULL;
		rdma_put_gid_attr(attr);
	}

	ipoib_rdma_scan(&ipca->ports, port, &m);
	if (m.count <= 1 || !addr)
		return m.found;

	/* Several interfaces in that partition: the address decides. */
	dev_put(m.found);
	m.found = NULL;
	m.count = 0;
	m.addr = addr;
	ipoib_rdma_scan(&ipca->ports, port, &m);
	if (m.count > 1)
		ibdev_warn_ratelimited(ca,
				       "ipoib: port %u P_Key 0x%04x: %pISc is on %u interfaces\n",
				       port, pkey, addr, m.count);
	return m.found;
}
