/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softib: the enhanced IPoIB provider (rdma_netdev), modelled on mlx5i.
 *
 * An IPoIB ULP that asks softib for rdma_netdev_get_params() gets a
 * "replacing" provider, as on a ConnectX-4 and newer: softib owns the
 * datapath of the net_device the ULP allocates. Each such netdev has one
 * underlay UD QP (a QPN from the HCA's QP number space, not visible to
 * verbs), transmit queues fed by rdma_netdev.send(), and, on the port's
 * first netdev (the parent), receive channels with a NAPI each, spread by
 * RSS. Later netdevs of the port are P_Key children: their own QPN, P_Key
 * index, Q_Key and transmit queues, their receives through the parent's
 * channels (demultiplexed by destination QPN, as mlx5i's steering does).
 *
 * softib_rn.c: parameters, initialisation, the netdev and rdma_netdev ops;
 * softib_rn_path.c: transmit, receive, RSS, NAPI;
 * softib_rn_ethtool.c: the provider's ethtool operations.
 *
 * Lock order: rtnl > softib_rn_lock (the port's parent pointer) >
 * rxq->q.lock. send() runs in ndo_start_xmit (BH off, its txq's lock held).
 */
#ifndef _SOFTIB_RN_H
#define _SOFTIB_RN_H

#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <rdma/ib_verbs.h>

#include "softib.h"

#define SOFTIB_RN_MAX_CH	16	/* channels: min(online CPUs, this) */
#define SOFTIB_RN_RX_RING	512	/* mlx5i's IPoIB receive queue */
#define SOFTIB_RN_TX_RING	1024	/* and its send queue */
#define SOFTIB_RN_RING_MIN	64
#define SOFTIB_RN_RING_MAX	8192
#define SOFTIB_RN_QKEY		0x0b1b	/* the underlay QP's receive Q_Key (mlx5i) */

/* Counters of one queue of one netdev (atomic: NAPI, xmit and ethtool read) */
struct softib_rn_qstats {
	atomic64_t rx_packets, rx_bytes, rx_dropped, rx_csum;
	atomic64_t tx_packets, tx_bytes, tx_dropped, tx_csum, tx_tso;
	atomic64_t tx_stopped, tx_woken;
};

/* A receive channel of a parent: its ring (skbs) and NAPI. */
struct softib_rn_rxq {
	struct napi_struct napi;
	struct sk_buff_head q;		/* received, not yet polled; its lock */
	unsigned int index;
};

struct softib_rn {
	struct rdma_netdev rn;		/* first: ib_ipoib's ipoib_priv() reads it */
	struct net_device *ndev;
	struct softib_dev *sport;	/* the port; alive while ndev is registered */
	struct softib_qp qp;		/* the underlay QP; qp.rn points back */
	bool is_parent;			/* decided in initialize (the port's first) */
	bool inited;			/* ndo_init ran (the QPN is ours) */
	bool opened;			/* ndo_open ran, ndo_stop not yet; rtnl */
	bool rx_up;			/* READ_ONCE: the channels take packets */
	struct softib_rn *parent;	/* a child's parent (referenced), else NULL */
	atomic_t children;		/* a parent's registered children */
	u32 qkey;			/* dqkey, from attach_mcast(set_qkey); READ_ONCE */
	u16 next_pkey_index;		/* set_id: applied at the next ndo_open */
	u32 rss_key;
	u32 rx_ring, tx_ring;		/* ethtool -G; READ_ONCE */
	u32 rx_usecs, rx_frames, tx_usecs, tx_frames;	/* ethtool -C */
	bool rx_adaptive, tx_adaptive;
	struct softib_rn_rxq *rxq;	/* parent: num_rx_queues channels */
	struct softib_rn_qstats *qs;	/* max(num_rx, num_tx) queues */
	atomic_t *inflight;		/* per tx queue: sent, not yet left the HCA */
	atomic64_t rx_self_mcast;	/* own multicast, dropped (8b46d424a743) */
	atomic64_t rx_mcast;		/* multicast and broadcast received */
};

static inline struct softib_rn *softib_rn(struct net_device *ndev)
{
	return netdev_priv(ndev);
}

/* softib_rn.c */
extern bool softib_enhanced;	/* module parameter enhanced */
int softib_rn_get_params(struct ib_device *ibdev, u32 port, enum rdma_netdev_t type,
			 struct rdma_netdev_alloc_params *params);
unsigned int softib_rn_max_channels(void);
/* the channels' NAPIs on and off; a parent's, under rtnl */
void softib_rn_channels_up(struct softib_rn *rn);
void softib_rn_channels_down(struct softib_rn *rn);

/* softib_rn_path.c */
int softib_rn_send(struct net_device *ndev, struct sk_buff *skb, struct ib_ah *ah, u32 dqpn);
/* the fabric: a packet for the underlay QP passed the QP's checks; BH off, RCU */
void softib_rn_rx(struct softib_dev *sdev, struct softib_rn *rn, const struct softib_pkt *pkt);
/* tx_work: a packet sent from tx queue q has left the HCA; RCU */
void softib_rn_tx_done(struct softib_rn *rn, u32 q);
int softib_rn_poll(struct napi_struct *napi, int budget);
/* drop what waits in the parent's channels for @owner (NULL: everything) */
void softib_rn_rx_purge(struct softib_rn *parent, struct net_device *owner);

/* softib_rn_ethtool.c */
extern const struct ethtool_ops softib_rn_ethtool_ops;
extern const struct ethtool_ops softib_rn_child_ethtool_ops;

#endif /* _SOFTIB_RN_H */
