// SPDX-License-Identifier: GPL-2.0
/*
 * ethtool: driver identity (-i), the driver's counters (-S), the UD rings
 * (-g/-G), RX completion moderation (-c/-C, mapped to the receive CQ's
 * moderation) and the link settings, which come from the port's active
 * speed and width.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ethtool.h>
#include <linux/log2.h>
#include <linux/netlink.h>
#include "ipoib.h"

#define IPOIB_DRIVER_VERSION	IPOIB_VERSION " (datagram)"

static void ipoib_get_drvinfo(struct net_device *dev,
			      struct ethtool_drvinfo *info)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	struct device *bus = priv->ca->dev.parent ?: &priv->ca->dev;

	strscpy(info->driver, KBUILD_MODNAME, sizeof(info->driver));
	strscpy(info->version, IPOIB_DRIVER_VERSION, sizeof(info->version));
	strscpy(info->bus_info, dev_name(bus), sizeof(info->bus_info));
	ib_get_device_fw_str(priv->ca, info->fw_version);
}

/* ethtool -S: the order of ipoib_stat_names is the order of the values. */
static const char ipoib_stat_names[][ETH_GSTRING_LEN] = {
	"rx_packets",
	"rx_bytes",
	"rx_multicast",
	"rx_errors",
	"rx_length_errors",
	"rx_no_memory",
	"tx_packets",
	"tx_bytes",
	"tx_multicast",
	"tx_errors",
	"tx_dropped",
	"tx_path_drops",
	"tx_drop_no_path",
	"tx_drop_path_queue_full",
	"tx_drop_sa_failure",
	"tx_drop_no_ah",
	"tx_drop_mcast_queue_full",
	"path_lid_moved",
	"tx_drop_too_big",
	"rc_rx_packets",
	"rc_rx_bytes",
	"rc_tx_packets",
	"rc_tx_bytes",
	"rc_sidr_refused",
	"rc_tx_backlog_drops",
	"tx_drop_path_limit",
};

static int ipoib_get_sset_count(struct net_device *dev, int sset)
{
	return sset == ETH_SS_STATS ? ARRAY_SIZE(ipoib_stat_names) : -EOPNOTSUPP;
}

static void ipoib_get_strings(struct net_device *dev, u32 sset, u8 *data)
{
	if (sset == ETH_SS_STATS)
		memcpy(data, ipoib_stat_names, sizeof(ipoib_stat_names));
}

static void ipoib_get_ethtool_stats(struct net_device *dev,
				    struct ethtool_stats *stats, u64 *data)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	u64 rx[6], tx[3];
	unsigned int start, i = 0;

	do {
		start = u64_stats_fetch_begin(&priv->rx_stats.syncp);
		rx[0] = u64_stats_read(&priv->rx_stats.packets);
		rx[1] = u64_stats_read(&priv->rx_stats.bytes);
		rx[2] = u64_stats_read(&priv->rx_stats.multicast);
		rx[3] = u64_stats_read(&priv->rx_stats.errors);
		rx[4] = u64_stats_read(&priv->rx_stats.length_errors);
		rx[5] = u64_stats_read(&priv->rx_stats.dropped);
	} while (u64_stats_fetch_retry(&priv->rx_stats.syncp, start));
	do {
		start = u64_stats_fetch_begin(&priv->tx_stats.syncp);
		tx[0] = u64_stats_read(&priv->tx_stats.packets);
		tx[1] = u64_stats_read(&priv->tx_stats.bytes);
		tx[2] = u64_stats_read(&priv->tx_stats.errors);
	} while (u64_stats_fetch_retry(&priv->tx_stats.syncp, start));

	memcpy(data, rx, sizeof(rx));
	i = ARRAY_SIZE(rx);
	data[i++] = tx[0];
	data[i++] = tx[1];
	data[i++] = atomic_long_read(&priv->counters[IPOIB_CTR_TX_MCAST]);
	data[i++] = tx[2];
	data[i++] = atomic_long_read(&priv->tx_dropped);
	data[i++] = atomic_long_read(&priv->path_drops);
	data[i++] = atomic_long_read(&priv->counters[IPOIB_CTR_DROP_NO_PATH]);
	data[i++] = atomic_long_read(&priv->counters[IPOIB_CTR_DROP_PATH_QUEUE_FULL]);
	data[i++] = atomic_long_read(&priv->counters[IPOIB_CTR_DROP_SA_FAILURE]);
	data[i++] = atomic_long_read(&priv->counters[IPOIB_CTR_DROP_NO_AH]);
	data[i++] = atomic_long_read(&priv->counters[IPOIB_CTR_DROP_MCAST_QUEUE_FULL]);
	data[i++] = atomic_long_read(&priv->counters[IPOIB_CTR_PATH_LID_MOVED]);
	data[i++] = atomic_long_read(&priv->counters[IPOIB_CTR_DROP_TOO_BIG]);
	do {
		start = u64_stats_fetch_begin(&priv->cm_rx_stats.syncp);
		rx[0] = u64_stats_read(&priv->cm_rx_stats.packets);
		rx[1] = u64_stats_read(&priv->cm_rx_stats.bytes);
	} while (u64_stats_fetch_retry(&priv->cm_rx_stats.syncp, start));
	do {
		start = u64_stats_fetch_begin(&priv->cm_tx_stats.syncp);
		tx[0] = u64_stats_read(&priv->cm_tx_stats.packets);
		tx[1] = u64_stats_read(&priv->cm_tx_stats.bytes);
	} while (u64_stats_fetch_retry(&priv->cm_tx_stats.syncp, start));
	data[i++] = rx[0];
	data[i++] = rx[1];
	data[i++] = tx[0];
	data[i++] = tx[1];
	data[i++] = atomic_long_read(&priv->counters[IPOIB_CTR_CM_SIDR_REFUSED]);
	data[i++] = atomic_long_read(&priv->counters[IPOIB_CTR_CM_BACKLOG_DROP]);
	data[i++] = atomic_long_read(&priv->counters[IPOIB_CTR_DROP_PATH_LIMIT]);
	BUILD_BUG_ON(ARRAY_SIZE(ipoib_stat_names) != 26);
}

/* Mb/s of one lane at the port's active speed; 0 if unknown. */
static u32 ipoib_lane_mbps(u16 speed)
{
	switch (speed) {
	case IB_SPEED_SDR:
		return 2500;
	case IB_SPEED_DDR:
		return 5000;
	case IB_SPEED_QDR:
	case IB_SPEED_FDR10:
		return 10000;
	case IB_SPEED_FDR:
		return 14000;
	case IB_SPEED_EDR:
		return 25000;
	case IB_SPEED_HDR:
		return 50000;
	case IB_SPEED_NDR:
		return 100000;
	case IB_SPEED_XDR:
		return 200000;
	default:
		return 0;
	}
}

static int ipoib_get_link_ksettings(struct net_device *dev,
				    struct ethtool_link_ksettings *cmd)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	struct ib_port_attr attr;
	u32 lanes, mbps;
	int ret;

	ret = ib_query_port(priv->ca, priv->port, &attr);
	if (ret)
		return ret;

	ethtool_link_ksettings_zero_link_mode(cmd, supported);
	ethtool_link_ksettings_zero_link_mode(cmd, advertising);
	cmd->base.port = PORT_OTHER;
	cmd->base.autoneg = AUTONEG_DISABLE;
	cmd->base.speed = SPEED_UNKNOWN;
	cmd->base.duplex = DUPLEX_UNKNOWN;

	lanes = ib_width_enum_to_int(attr.active_width);
	mbps = ipoib_lane_mbps(attr.active_speed);
	if (attr.state == IB_PORT_ACTIVE && lanes > 0 && mbps) {
		cmd->base.speed = lanes * mbps;
		cmd->base.duplex = DUPLEX_FULL;
	}
	return 0;
}

static int ipoib_get_coalesce(struct net_device *dev,
			      struct ethtool_coalesce *ec,
			      struct kernel_ethtool_coalesce *kec,
			      struct netlink_ext_ack *extack)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	ec->rx_coalesce_usecs = priv->coal_usecs;
	ec->rx_max_coalesced_frames = priv->coal_frames;
	return 0;
}

/* RX coalescing is the receive CQ's moderation: an event after N or T us. */
static int ipoib_set_coalesce(struct net_device *dev,
			      struct ethtool_coalesce *ec,
			      struct kernel_ethtool_coalesce *kec,
			      struct netlink_ext_ack *extack)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	int ret;

	if (ec->rx_coalesce_usecs > U16_MAX ||
	    ec->rx_max_coalesced_frames > U16_MAX) {
		NL_SET_ERR_MSG(extack, "ipoib: CQ moderation takes at most 65535");
		return -EINVAL;
	}
	/*
	 * op_mutex: the resync work replaces the CQ under it (and leaves it
	 * NULL after a failed recreate). The values are kept and applied to
	 * every new receive CQ (ipoib_ib_create_qp()), so -c stays true.
	 */
	mutex_lock(&priv->op_mutex);
	ret = priv->recv_cq ?
	      rdma_set_cq_moderation(priv->recv_cq,
				     ec->rx_max_coalesced_frames,
				     ec->rx_coalesce_usecs) : 0;
	if (!ret) {
		priv->coal_usecs = ec->rx_coalesce_usecs;
		priv->coal_frames = ec->rx_max_coalesced_frames;
	}
	mutex_unlock(&priv->op_mutex);
	if (ret == -EOPNOTSUPP) {
		netdev_info(dev, "%s cannot moderate completion events\n",
			    dev_name(&priv->ca->dev));
		NL_SET_ERR_MSG(extack,
			       "ipoib: the HCA cannot moderate completion events");
	}
	return ret;
}

static void ipoib_get_ringparam(struct net_device *dev,
				struct ethtool_ringparam *ring,
				struct kernel_ethtool_ringparam *kring,
				struct netlink_ext_ack *extack)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);

	ring->rx_max_pending = IPOIB_RING_MAX;
	ring->tx_max_pending = IPOIB_RING_MAX;
	ring->rx_pending = READ_ONCE(priv->rx_ring_size);
	ring->tx_pending = READ_ONCE(priv->tx_ring_size);
}

/*
 * ethtool -G rx N tx M: the ranges of the module parameters (the core
 * refused more than the maximum), rounded up to a power of 2. The UD QP
 * is made again, which changes its QPN: an interface that is up stops and
 * starts, and tells its peers its new address.
 */
static int ipoib_set_ringparam(struct net_device *dev,
			       struct ethtool_ringparam *ring,
			       struct kernel_ethtool_ringparam *kring,
			       struct netlink_ext_ack *extack)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	unsigned int rx = ring->rx_pending, tx = ring->tx_pending;

	if (rx < IPOIB_RX_RING_MIN || tx < IPOIB_TX_RING_MIN) {
		netdev_info(dev, "rings %u/%u refused: at least %u/%u\n", rx, tx,
			    IPOIB_RX_RING_MIN, IPOIB_TX_RING_MIN);
		NL_SET_ERR_MSG(extack,
			       "ipoib: rings take at least rx 2 and tx 128");
		return -EINVAL;
	}
	if (!is_power_of_2(rx) || !is_power_of_2(tx)) {
		rx = roundup_pow_of_two(rx);
		tx = roundup_pow_of_two(tx);
		netdev_info(dev, "rings rounded up to powers of 2: %u/%u\n",
			    rx, tx);
	}
	return ipoib_set_rings(priv, rx, tx);
}

const struct ethtool_ops ipoib_ethtool_ops = {
	.supported_coalesce_params = ETHTOOL_COALESCE_RX_USECS |
				     ETHTOOL_COALESCE_RX_MAX_FRAMES,
	.get_drvinfo		= ipoib_get_drvinfo,
	.get_link		= ethtool_op_get_link,
	.get_link_ksettings	= ipoib_get_link_ksettings,
	.get_ringparam		= ipoib_get_ringparam,
	.set_ringparam		= ipoib_set_ringparam,
	.get_coalesce		= ipoib_get_coalesce,
	.set_coalesce		= ipoib_set_coalesce,
	.get_sset_count		= ipoib_get_sset_count,
	.get_strings		= ipoib_get_strings,
	.get_ethtool_stats	= ipoib_get_ethtool_stats,
};
