// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the enhanced IPoIB provider's ethtool operations, the set mlx5i
 * gives a parent (a child gets driver info, link and link settings only):
 * -i, -l/-L (combined channels; refused while the interface has children,
 * as mlx5i refuses it), -g/-G, -c/-C (stored and reported: the receive
 * channels poll as soon as a packet is queued), -S with per-channel
 * counters, and link settings from the port (4X QDR, as softib reports).
 */
#include <linux/ethtool.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>

#include "softib.h"
#include "softib_rn.h"

static void softib_rn_drvinfo(struct net_device *ndev, struct ethtool_drvinfo *info)
{
	strscpy(info->driver, "softib[ib_ipoib]", sizeof(info->driver));
	strscpy(info->bus_info, dev_name(&softib_rn(ndev)->rn.hca->dev), sizeof(info->bus_info));
}

static int softib_rn_link_ksettings(struct net_device *ndev, struct ethtool_link_ksettings *cmd)
{
	ethtool_link_ksettings_zero_link_mode(cmd, supported);
	ethtool_link_ksettings_zero_link_mode(cmd, advertising);
	cmd->base.speed = netif_carrier_ok(ndev) ? 40000 : SPEED_UNKNOWN;
	cmd->base.duplex = netif_carrier_ok(ndev) ? DUPLEX_FULL : DUPLEX_UNKNOWN;
	cmd->base.port = PORT_OTHER;
	cmd->base.autoneg = AUTONEG_DISABLE;
	return 0;
}

static void softib_rn_get_channels(struct net_device *ndev, struct ethtool_channels *ch)
{
	ch->max_combined = min3(softib_rn_max_channels(), ndev->num_rx_queues,
				ndev->num_tx_queues);
	ch->combined_count = ndev->real_num_rx_queues;
}

static int softib_rn_set_channels(struct net_device *ndev, struct ethtool_channels *ch)
{
	struct softib_rn *rn = softib_rn(ndev);
	struct ethtool_channels max = {};
	unsigned int n = ch->combined_count;
	int err;

	ASSERT_RTNL();
	softib_rn_get_channels(ndev, &max);
	if (!n || n > max.max_combined || ch->rx_count || ch->tx_count || ch->other_count)
		return -EINVAL;
	if (atomic_read(&rn->children)) {
		netdev_err(ndev, "softib: channels cannot change while the interface has %d child interface(s)\n",
			   atomic_read(&rn->children));
		return -EINVAL;
	}
	if (n == ndev->real_num_rx_queues)
		return 0;
	if (rn->opened)
		softib_rn_channels_down(rn);
	err = netif_set_real_num_tx_queues(ndev, n);
	if (!err)
		err = netif_set_real_num_rx_queues(ndev, n);
	if (rn->opened)
		softib_rn_channels_up(rn);
	return err;
}

static void softib_rn_get_ring(struct net_device *ndev, struct ethtool_ringparam *r,
			       struct kernel_ethtool_ringparam *kr, struct netlink_ext_ack *ack)
{
	struct softib_rn *rn = softib_rn(ndev);

	r->rx_max_pending = SOFTIB_RN_RING_MAX;
	r->tx_max_pending = SOFTIB_RN_RING_MAX;
	r->rx_pending = READ_ONCE(rn->rx_ring);
	r->tx_pending = READ_ONCE(rn->tx_ring);
}

static int softib_rn_set_ring(struct net_device *ndev, struct ethtool_ringparam *r,
			      struct kernel_ethtool_ringparam *kr, struct netlink_ext_ack *ack)
{
	struct softib_rn *rn = softib_rn(ndev);

	if (r->rx_mini_pending || r->rx_jumbo_pending ||
	    r->rx_pending < SOFTIB_RN_RING_MIN || r->rx_pending > SOFTIB_RN_RING_MAX ||
	    r->tx_pending < SOFTIB_RN_RING_MIN || r->tx_pending > SOFTIB_RN_RING_MAX) {
		NL_SET_ERR_MSG_MOD(ack, "ring sizes are 64..8192");
		return -EINVAL;
	}
	WRITE_ONCE(rn->rx_ring, r->rx_pending);
	WRITE_ONCE(rn->tx_ring, r->tx_pending);
	return 0;
}

static int softib_rn_get_coalesce(struct net_device *ndev, struct ethtool_coalesce *c,
				  struct kernel_ethtool_coalesce *kc, struct netlink_ext_ack *ack)
{
	struct softib_rn *rn = softib_rn(ndev);

	c->rx_coalesce_usecs = rn->rx_usecs;
	c->rx_max_coalesced_frames = rn->rx_frames;
	c->tx_coalesce_usecs = rn->tx_usecs;
	c->tx_max_coalesced_frames = rn->tx_frames;
	c->use_adaptive_rx_coalesce = rn->rx_adaptive;
	c->use_adaptive_tx_coalesce = rn->tx_adaptive;
	return 0;
}

static int softib_rn_set_coalesce(struct net_device *ndev, struct ethtool_coalesce *c,
				  struct kernel_ethtool_coalesce *kc, struct netlink_ext_ack *ack)
{
	struct softib_rn *rn = softib_rn(ndev);

	/* the CQ moderation fields of a ConnectX CQ: 12-bit period, 16-bit count */
	if (c->rx_coalesce_usecs > 0xfff || c->tx_coalesce_usecs > 0xfff ||
	    c->rx_max_coalesced_frames > 0xffff || c->tx_max_coalesced_frames > 0xffff) {
		NL_SET_ERR_MSG_MOD(ack, "usecs at most 4095, frames at most 65535");
		return -ERANGE;
	}
	rn->rx_usecs = c->rx_coalesce_usecs;
	rn->rx_frames = c->rx_max_coalesced_frames;
	rn->tx_usecs = c->tx_coalesce_usecs;
	rn->tx_frames = c->tx_max_coalesced_frames;
	rn->rx_adaptive = c->use_adaptive_rx_coalesce;
	rn->tx_adaptive = c->use_adaptive_tx_coalesce;
	return 0;
}

static const char softib_rn_qstat_names[][ETH_GSTRING_LEN] = {
	"rx_packets", "rx_bytes", "rx_dropped", "rx_csum_unnecessary",
	"tx_packets", "tx_bytes", "tx_dropped", "tx_csum_partial", "tx_tso_packets",
	"tx_queue_stopped", "tx_queue_wake",
};

#define SOFTIB_RN_NQSTATS	ARRAY_SIZE(softib_rn_qstat_names)
#define SOFTIB_RN_NGLOBAL	2	/* rx_self_mcast_dropped, rx_multicast */

static unsigned int softib_rn_stat_queues(struct net_device *ndev)
{
	return max(ndev->real_num_rx_queues, ndev->real_num_tx_queues);
}

static int softib_rn_sset_count(struct net_device *ndev, int sset)
{
	if (sset != ETH_SS_STATS)
		return -EOPNOTSUPP;
	return SOFTIB_RN_NGLOBAL + softib_rn_stat_queues(ndev) * SOFTIB_RN_NQSTATS;
}

static void softib_rn_get_strings(struct net_device *ndev, u32 sset, u8 *data)
{
	unsigned int q, i;

	if (sset != ETH_SS_STATS)
		return;
	ethtool_sprintf(&data, "rx_self_mcast_dropped");
	ethtool_sprintf(&data, "rx_multicast");
	for (q = 0; q < softib_rn_stat_queues(ndev); q++)
		for (i = 0; i < SOFTIB_RN_NQSTATS; i++)
			ethtool_sprintf(&data, "ch%u_%s", q, softib_rn_qstat_names[i]);
}

static void softib_rn_get_stats(struct net_device *ndev, struct ethtool_stats *st, u64 *data)
{
	struct softib_rn *rn = softib_rn(ndev);
	unsigned int q;

	*data++ = atomic64_read(&rn->rx_self_mcast);
	*data++ = atomic64_read(&rn->rx_mcast);
	for (q = 0; q < softib_rn_stat_queues(ndev); q++) {
		struct softib_rn_qstats *s = &rn->qs[q];

		*data++ = atomic64_read(&s->rx_packets);
		*data++ = atomic64_read(&s->rx_bytes);
		*data++ = atomic64_read(&s->rx_dropped);
		*data++ = atomic64_read(&s->rx_csum);
		*data++ = atomic64_read(&s->tx_packets);
		*data++ = atomic64_read(&s->tx_bytes);
		*data++ = atomic64_read(&s->tx_dropped);
		*data++ = atomic64_read(&s->tx_csum);
		*data++ = atomic64_read(&s->tx_tso);
		*data++ = atomic64_read(&s->tx_stopped);
		*data++ = atomic64_read(&s->tx_woken);
	}
}

/*
 * On 7.x the core calls these under the netdev's instance lock only (the
 * netdev is ops locked, as mlx5i's): those that change the queues or read
 * the port ask for rtnl as mlx5i does.
 */
const struct ethtool_ops softib_rn_ethtool_ops = {
	IPOIB_COMPAT_OP_NEEDS_RTNL(ETHTOOL_OP_NEEDS_RTNL_SCHANNELS |
				   ETHTOOL_OP_NEEDS_RTNL_SRINGPARAM |
				   ETHTOOL_OP_NEEDS_RTNL_GLINK)
	.supported_coalesce_params = ETHTOOL_COALESCE_USECS | ETHTOOL_COALESCE_MAX_FRAMES |
				     ETHTOOL_COALESCE_USE_ADAPTIVE,
	.get_drvinfo = softib_rn_drvinfo,
	.get_link = ethtool_op_get_link,
	.get_link_ksettings = softib_rn_link_ksettings,
	.get_channels = softib_rn_get_channels,
	.set_channels = softib_rn_set_channels,
	.get_ringparam = softib_rn_get_ring,
	.set_ringparam = softib_rn_set_ring,
	.get_coalesce = softib_rn_get_coalesce,
	.set_coalesce = softib_rn_set_coalesce,
	.get_sset_count = softib_rn_sset_count,
	.get_strings = softib_rn_get_strings,
	.get_ethtool_stats = softib_rn_get_stats,
};

const struct ethtool_ops softib_rn_child_ethtool_ops = {
	IPOIB_COMPAT_OP_NEEDS_RTNL(ETHTOOL_OP_NEEDS_RTNL_GLINK)
	.get_drvinfo = softib_rn_drvinfo,
	.get_link = ethtool_op_get_link,
	.get_link_ksettings = softib_rn_link_ksettings,
};
