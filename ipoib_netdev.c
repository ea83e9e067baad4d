// SPDX-License-Identifier: GPL-2.0
/*
 * The link layer as the network stack sees it: device setup, header_ops,
 * the transmit entry point and statistics.
 *
 * IPoIB frames carry no link-layer destination on the wire: the 20-byte
 * address chosen by ARP/ND only selects the address handle. header_ops
 * ->create() therefore pushes the 4-byte encapsulation header and, in front
 * of it, a 20-byte pseudo header holding the destination. ndo_start_xmit
 * reads and strips the pseudo header, so broadcast, multicast and unicast
 * are told apart from the destination itself (multicast QPN 0xffffff),
 * never from skb->dst. The same layout is shown to packet taps on receive
 * (with a zeroed pseudo header), so hard_header_len is 24 both ways.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/if_arp.h>
#include <linux/rtnetlink.h>
#include <net/rtnetlink.h>
#include "ipoib.h"

static int ipoib_hard_header(struct sk_buff *skb, struct net_device *dev,
			     unsigned short type, const void *daddr,
			     const void *saddr, unsigned int len)
{
	struct ipoib_encap *encap;
	u8 *pseudo;

	encap = skb_push(skb, sizeof(*encap));
	encap->proto = htons(type);
	encap->reserved = 0;

	pseudo = skb_push(skb, IPOIB_PSEUDO_LEN);
	if (!daddr) {
		/* Not resolved yet: the neighbour layer fills it in later. */
		memset(pseudo, 0, IPOIB_PSEUDO_LEN);
		return -IPOIB_HARD_LEN;
	}
	memcpy(pseudo, daddr, IPOIB_PSEUDO_LEN);
	return IPOIB_HARD_LEN;
}

const struct header_ops ipoib_header_ops = {
	.create = ipoib_hard_header,
};

netdev_tx_t ipoib_start_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	u8 daddr[IPOIB_PSEUDO_LEN];
	u32 qpn;

	if (unlikely(skb->len < IPOIB_HARD_LEN ||
		     !test_bit(IPOIB_FLAG_RUNNING, &priv->flags))) {
		ipoib_count_tx_drop(priv, skb);
		return NETDEV_TX_OK;
	}
	memcpy(daddr, skb->data, sizeof(daddr));
	skb_pull(skb, IPOIB_PSEUDO_LEN);

	qpn = get_unaligned_be32(daddr) & IPOIB_QPN_MASK;
	if (qpn == IB_MULTICAST_QPN) {
		if (unlikely(daddr[4] != 0xff)) {
			ipoib_count_tx_drop(priv, skb);
			return NETDEV_TX_OK;
		}
		if (ipoib_ud_too_big(priv, skb))
			return NETDEV_TX_OK;
		ipoib_mgid_set_pkey(priv, daddr + 4);
		ipoib_mcast_xmit(priv, skb, (union ib_gid *)(daddr + 4));
	} else {
		ipoib_neigh_xmit(priv, skb, daddr);
	}
	return NETDEV_TX_OK;
}

/* Connected mode's own counters, added to either datapath's. */
static void ipoib_cm_stats_add(struct ipoib_dev_priv *priv,
			       struct rtnl_link_stats64 *st, u64 *rx_dropped,
			       u64 *rx_len)
{
	unsigned int start;
	u64 rc[5];

	do {
		start = u64_stats_fetch_begin(&priv->cm_rx_stats.syncp);
		rc[0] = u64_stats_read(&priv->cm_rx_stats.packets);
		rc[1] = u64_stats_read(&priv->cm_rx_stats.bytes);
		rc[2] = u64_stats_read(&priv->cm_rx_stats.dropped);
		rc[3] = u64_stats_read(&priv->cm_rx_stats.errors);
		rc[4] = u64_stats_read(&priv->cm_rx_stats.length_errors);
	} while (u64_stats_fetch_retry(&priv->cm_rx_stats.syncp, start));
	st->rx_packets += rc[0];
	st->rx_bytes += rc[1];
	*rx_dropped += rc[2];
	st->rx_errors += rc[3];
	*rx_len += rc[4];

	do {
		start = u64_stats_fetch_begin(&priv->cm_tx_stats.syncp);
		rc[0] = u64_stats_read(&priv->cm_tx_stats.packets);
		rc[1] = u64_stats_read(&priv->cm_tx_stats.bytes);
		rc[2] = u64_stats_read(&priv->cm_tx_stats.errors);
	} while (u64_stats_fetch_retry(&priv->cm_tx_stats.syncp, start));
	st->tx_packets += rc[0];
	st->tx_bytes += rc[1];
	st->tx_errors += rc[2];
}

void ipoib_get_stats64(struct net_device *dev, struct rtnl_link_stats64 *st)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	unsigned int start;
	u64 rx_dropped = 0, rx_len = 0;

	if (priv->enhanced) {
		/*
		 * The HCA's datapath counts its queues; we add connected
		 * mode's and our drops.
		 */
		if (priv->rn_ops->ndo_get_stats64)
			priv->rn_ops->ndo_get_stats64(dev, st);
		else
			netdev_stats_to_stats64(st, &dev->stats);
		ipoib_cm_stats_add(priv, st, &rx_dropped, &rx_len);
		st->rx_dropped += rx_dropped + rx_len;
		st->rx_length_errors += rx_len;
		st->rx_errors += rx_len;
		st->tx_dropped += atomic_long_read(&priv->tx_dropped);
		st->tx_carrier_errors = atomic_long_read(&priv->path_drops);
		return;
	}
	do {
		start = u64_stats_fetch_begin(&priv->rx_stats.syncp);
		st->rx_packets = u64_stats_read(&priv->rx_stats.packets);
		st->rx_bytes = u64_stats_read(&priv->rx_stats.bytes);
		rx_dropped = u64_stats_read(&priv->rx_stats.dropped);
		st->rx_errors = u64_stats_read(&priv->rx_stats.errors);
		rx_len = u64_stats_read(&priv->rx_stats.length_errors);
		st->multicast = u64_stats_read(&priv->rx_stats.multicast);
	} while (u64_stats_fetch_retry(&priv->rx_stats.syncp, start));
	do {
		start = u64_stats_fetch_begin(&priv->tx_stats.syncp);
		st->tx_packets = u64_stats_read(&priv->tx_stats.packets);
		st->tx_bytes = u64_stats_read(&priv->tx_stats.bytes);
		st->tx_errors = u64_stats_read(&priv->tx_stats.errors);
	} while (u64_stats_fetch_retry(&priv->tx_stats.syncp, start));
	ipoib_cm_stats_add(priv, st, &rx_dropped, &rx_len);
	st->rx_dropped = rx_dropped + rx_len;
	st->rx_length_errors = rx_len;
	st->rx_errors += rx_len;
	st->tx_dropped = atomic_long_read(&priv->tx_dropped);
	st->tx_carrier_errors = atomic_long_read(&priv->path_drops);
}

void ipoib_setup(struct net_device *dev)
{
	struct ipoib_dev_priv *priv = netdev_priv(dev);

	/* our own datapath: netdev_priv() is all ours, rn first */
	priv->rn.clnt_priv = priv;
	dev->type = ARPHRD_INFINIBAND;
	dev->addr_len = INFINIBAND_ALEN;
	dev->hard_header_len = IPOIB_HARD_LEN;
	dev->min_header_len = IPOIB_HARD_LEN;
	dev->header_ops = &ipoib_header_ops;
	dev->mtu = 2048 - IPOIB_ENCAP_LEN;
	dev->min_mtu = 68;
	dev->max_mtu = 4096 - IPOIB_ENCAP_LEN;
	dev->tx_queue_len = 256;
	dev->flags = IFF_BROADCAST | IFF_MULTICAST;
	/* no Ethernet header: an 802.1Q device on top would send garbage */
	dev->features |= NETIF_F_VLAN_CHALLENGED;
	dev->watchdog_timeo = 10 * HZ;
	/* the route stays on the skb: a packet too big for UD gets an ICMP */
	netif_keep_dst(dev);
	dev->rtnl_link_ops = &ipoib_link_ops;
	dev->netdev_ops = &ipoib_netdev_ops;
	dev->ethtool_ops = &ipoib_ethtool_ops;
}
