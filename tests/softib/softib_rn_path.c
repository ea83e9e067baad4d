// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the enhanced IPoIB provider's datapath (see softib_rn.h).
 *
 * Transmit: rdma_netdev.send() gets the skb at its 4-byte IPoIB header, an
 * address handle that may be destroyed as soon as send returns, and the
 * destination QPN. The address vector is copied into the packets now; TSO
 * skbs are cut into segments and checksums filled, as the HCA does for an
 * mlx5i send queue; the skb is always consumed and 0 returned. Each
 * transmit queue counts the packets that have not left the HCA yet and is
 * stopped at its ring size, woken when half of it has drained.
 *
 * Receive: the fabric hands over a packet that passed the underlay QP's
 * P_Key and Q_Key checks. It becomes an skb as ib_ipoib expects one
 * (protocol from the IPoIB header, a zeroed 20-byte pseudo header at the mac
 * header, data at the L3 header, pkt_type from the GRH's DGID), owned by the
 * netdev of the destination QPN, and goes to a channel of the parent chosen
 * by RSS: a hash of the IP addresses and, for TCP and UDP, the ports; non-IP
 * (ARP) always to channel 0. The channel's NAPI hands it to GRO. A full
 * ring drops it (rx_dropped), as an RQ without WQEs does.
 */
#include <linux/etherdevice.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jhash.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <net/ip.h>

#include "softib.h"
#include "softib_rn.h"

#define SOFTIB_RN_ENCAP	4	/* the IPoIB header */
#define SOFTIB_RN_HARD_LEN	24	/* and the pseudo header before it */

static struct softib_pkt *softib_rn_pkt(struct softib_rn *rn, const struct rdma_ah_attr *attr,
					u32 dqpn, u16 pkey, const __be32 *encap,
					const struct sk_buff *skb)
{
	u32 len = SOFTIB_RN_ENCAP + skb->len;
	struct softib_pkt *pkt;

	pkt = softib_pkt_alloc(len, GFP_ATOMIC);
	if (!pkt)
		return NULL;
	memcpy(pkt->data, encap, SOFTIB_RN_ENCAP);
	if (skb_copy_bits(skb, 0, pkt->data + SOFTIB_RN_ENCAP, skb->len)) {
		softib_pkt_free(pkt);
		return NULL;
	}
	/* the Q_Key is 0 until the broadcast group's attach */
	softib_ud_headers(rn->sport, pkt, attr, pkey, dqpn, READ_ONCE(rn->qkey),
			  rn->qp.ibqp.qp_num);
	return pkt;
}

/* Put one segment (data at L3, checksums done) on the fabric. */
static void softib_rn_xmit_one(struct softib_rn *rn, unsigned int q,
			       const struct rdma_ah_attr *attr, u32 dqpn, u16 pkey,
			       const __be32 *encap, const struct sk_buff *seg)
{
	struct softib_rn_qstats *qs = &rn->qs[q];
	struct softib_dev *sport = rn->sport;
	struct softib_pkt *pkt;

	if (SOFTIB_RN_ENCAP + seg->len > ib_mtu_enum_to_int(READ_ONCE(sport->mtu))) {
		softib_count(sport, SOFTIB_CNT_DROP_TOO_LONG);
		atomic64_inc(&qs->tx_dropped);
		return;
	}
	pkt = softib_rn_pkt(rn, attr, dqpn, pkey, encap, seg);
	if (!pkt) {
		atomic64_inc(&qs->tx_dropped);
		return;
	}
	pkt->sqp = &rn->qp;	/* its "send WR" completes on tx queue q */
	pkt->sseq = q;
	atomic_inc(&rn->inflight[q]);
	softib_count(sport, SOFTIB_CNT_TX_PACKETS);
	softib_count_add(sport, SOFTIB_CNT_TX_BYTES, pkt->len);
	atomic64_inc(&qs->tx_packets);
	atomic64_add(seg->len, &qs->tx_bytes);
	if (!softib_send_from(sport, pkt)) {
		atomic_dec(&rn->inflight[q]);
		atomic64_inc(&qs->tx_dropped);
	}
}

/* rdma_netdev.send: ndo_start_xmit context, the txq's lock held. */
int softib_rn_send(struct net_device *ndev, struct sk_buff *skb, struct ib_ah *ah, u32 dqpn)
{
	struct softib_rn *rn = softib_rn(ndev);
	unsigned int q = skb_get_queue_mapping(skb);
	const struct rdma_ah_attr *attr;
	struct softib_rn_qstats *qs;
	struct sk_buff *segs, *seg, *next;
	struct netdev_queue *txq;
	u16 pkey_index, pkey;
	__be32 encap;

	if (q >= ndev->real_num_tx_queues)
		q = 0;
	qs = &rn->qs[q];
	if (READ_ONCE(rn->qp.state) != IB_QPS_RTS || !ah || ah->device != rn->rn.hca ||
	    skb->len < SOFTIB_RN_ENCAP)
		goto drop;
	attr = &to_sah(ah)->attr;	/* read now: the AH may go when we return */
	pkey_index = READ_ONCE(rn->qp.pkey_index);
	pkey = READ_ONCE(rn->sport->pkeys[pkey_index]);
	if (!(pkey & 0x7fff))
		goto drop;

	memcpy(&encap, skb->data, SOFTIB_RN_ENCAP);
	__skb_pull(skb, SOFTIB_RN_ENCAP);
	skb_reset_mac_header(skb);
	skb->mac_len = 0;

	if (skb_is_gso(skb)) {
		/* the HCA's LSO: segments with their checksums filled */
		segs = skb_gso_segment(skb, 0);
		if (IS_ERR_OR_NULL(segs))
			goto drop;
		atomic64_inc(&qs->tx_tso);
		skb_list_walk_safe(segs, seg, next) {
			skb_mark_not_on_list(seg);
			softib_rn_xmit_one(rn, q, attr, dqpn, pkey, &encap, seg);
			dev_consume_skb_any(seg);
		}
	} else {
		if (skb->ip_summed == CHECKSUM_PARTIAL) {
			if (skb_checksum_help(skb))
				goto drop;
			atomic64_inc(&qs->tx_csum);
		}
		softib_rn_xmit_one(rn, q, attr, dqpn, pkey, &encap, skb);
	}
	dev_consume_skb_any(skb);

	txq = netdev_get_tx_queue(ndev, q);
	if (atomic_read(&rn->inflight[q]) >= READ_ONCE(rn->tx_ring)) {
		netif_tx_stop_queue(txq);
		atomic64_inc(&qs->tx_stopped);
		/* a completion between the read and the stop would not wake it */
		smp_mb__after_atomic();
		if (atomic_read(&rn->inflight[q]) < READ_ONCE(rn->tx_ring) / 2) {
			netif_tx_wake_queue(txq);
			atomic64_inc(&qs->tx_woken);
		}
	}
	return 0;

drop:
	atomic64_inc(&qs->tx_dropped);
	dev_kfree_skb_any(skb);
	return 0;
}

void softib_rn_tx_done(struct softib_rn *rn, u32 q)
{
	struct net_device *ndev = rn->ndev;
	struct netdev_queue *txq;

	if (q >= ndev->num_tx_queues || atomic_dec_if_positive(&rn->inflight[q]) < 0)
		return;
	txq = netdev_get_tx_queue(ndev, q);
	/* the count before the stopped bit; pairs with the send's re-check */
	smp_mb__after_atomic();
	if (netif_tx_queue_stopped(txq) && READ_ONCE(rn->opened) &&
	    atomic_read(&rn->inflight[q]) < READ_ONCE(rn->tx_ring) / 2) {
		local_bh_disable();
		netif_tx_wake_queue(txq);
		local_bh_enable();
		atomic64_inc(&rn->qs[q].tx_woken);
	}
}

/*
 * RSS as mlx5i's default: TCP and UDP hash addresses and ports, other IP
 * the addresses; anything else is not hashed and goes to channel 0.
 */
static u32 softib_rn_hash(const struct softib_rn *parent, const struct softib_pkt *pkt,
			  enum pkt_hash_types *type)
{
	const u8 *l3 = pkt->data + SOFTIB_RN_ENCAP;
	u32 l3len = pkt->len - SOFTIB_RN_ENCAP;
	__be16 proto = *(const __be16 *)pkt->data;
	u32 ports = 0, hash;
	u8 l4 = 0;
	unsigned int off;

	*type = PKT_HASH_TYPE_NONE;
	if (proto == htons(ETH_P_IP) && l3len >= sizeof(struct iphdr)) {
		const struct iphdr *iph = (const struct iphdr *)l3;

		off = iph->ihl * 4;
		if (off < sizeof(*iph))
			return 0;
		if (!(iph->frag_off & htons(IP_MF | IP_OFFSET)))
			l4 = iph->protocol;
		hash = jhash_2words((__force u32)iph->saddr, (__force u32)iph->daddr,
				    parent->rss_key);
	} else if (proto == htons(ETH_P_IPV6) && l3len >= sizeof(struct ipv6hdr)) {
		const struct ipv6hdr *ip6 = (const struct ipv6hdr *)l3;

		off = sizeof(*ip6);
		l4 = ip6->nexthdr;
		hash = jhash2((const u32 *)&ip6->saddr, 8, parent->rss_key);
	} else {
		return 0;
	}
	*type = PKT_HASH_TYPE_L3;
	if ((l4 == IPPROTO_TCP || l4 == IPPROTO_UDP) && l3len >= off + 4) {
		memcpy(&ports, l3 + off, sizeof(ports));
		hash = jhash_1word(ports, hash);
		*type = PKT_HASH_TYPE_L4;
	}
	return hash ?: 1;
}

static bool softib_rn_own_mcast(const struct softib_rn *rn, const struct softib_pkt *pkt)
{
	return pkt->has_grh && pkt->grh.dgid.raw[0] == 0xff &&
	       pkt->sqpn == rn->qp.ibqp.qp_num &&
	       !memcmp(&pkt->grh.sgid, rn->ndev->dev_addr + 4, sizeof(pkt->grh.sgid));
}

void softib_rn_rx(struct softib_dev *sdev, struct softib_rn *rn, const struct softib_pkt *pkt)
{
	struct softib_rn *parent = rn->parent ?: rn;
	struct net_device *ndev = rn->ndev;
	enum pkt_hash_types htype;
	struct softib_rn_rxq *rxq;
	struct sk_buff *skb;
	unsigned int q = 0;
	u32 hash;

	if (softib_rn_own_mcast(rn, pkt)) {
		atomic64_inc(&rn->rx_self_mcast);
		return;
	}
	if (pkt->len < SOFTIB_RN_ENCAP) {
		softib_count(sdev, SOFTIB_CNT_DROP_MALFORMED);
		return;
	}
	hash = softib_rn_hash(parent, pkt, &htype);
	if (hash)
		q = reciprocal_scale(hash, parent->ndev->real_num_rx_queues);
	if (!READ_ONCE(parent->rx_up)) {
		atomic64_inc(&rn->qs[q].rx_dropped);
		return;
	}
	rxq = &parent->rxq[q];
	if (skb_queue_len_lockless(&rxq->q) >= READ_ONCE(parent->rx_ring)) {
		softib_count(sdev, SOFTIB_CNT_DROP_NO_RWQE);
		atomic64_inc(&rn->qs[q].rx_dropped);
		return;
	}

	skb = netdev_alloc_skb(ndev, SOFTIB_RN_HARD_LEN + pkt->len);
	if (!skb) {
		atomic64_inc(&rn->qs[q].rx_dropped);
		return;
	}
	/* the zeroed pseudo header goes before the IPoIB header */
	skb_reserve(skb, SOFTIB_RN_HARD_LEN - SOFTIB_RN_ENCAP);
	skb_put_data(skb, pkt->data, pkt->len);
	skb->protocol = *(__be16 *)skb->data;
	memset(skb_push(skb, SOFTIB_RN_HARD_LEN - SOFTIB_RN_ENCAP), 0,
	       SOFTIB_RN_HARD_LEN - SOFTIB_RN_ENCAP);
	skb_reset_mac_header(skb);
	skb_pull(skb, SOFTIB_RN_HARD_LEN);
	skb_reset_network_header(skb);
	skb->dev = ndev;
	skb->pkt_type = PACKET_HOST;
	if (pkt->has_grh && pkt->grh.dgid.raw[0] == 0xff) {
		skb->pkt_type = memcmp(&pkt->grh.dgid, ndev->broadcast + 4, sizeof(pkt->grh.dgid)) ?
				PACKET_MULTICAST : PACKET_BROADCAST;
		atomic64_inc(&rn->rx_mcast);
	}
	if ((ndev->features & NETIF_F_RXCSUM) && softib_csum_verify(pkt) == 1) {
		skb->ip_summed = CHECKSUM_UNNECESSARY;
		atomic64_inc(&rn->qs[q].rx_csum);
	}
	if (hash && (ndev->features & NETIF_F_RXHASH))
		skb_set_hash(skb, hash, htype);
	skb_record_rx_queue(skb, q);
	softib_count(sdev, SOFTIB_CNT_RX_PACKETS);
	softib_count_add(sdev, SOFTIB_CNT_RX_BYTES, pkt->len);
	atomic64_inc(&rn->qs[q].rx_packets);
	atomic64_add(skb->len, &rn->qs[q].rx_bytes);
	skb_queue_tail(&rxq->q, skb);
	napi_schedule(&rxq->napi);
}

int softib_rn_poll(struct napi_struct *napi, int budget)
{
	struct softib_rn_rxq *rxq = container_of(napi, struct softib_rn_rxq, napi);
	struct sk_buff *skb;
	int done = 0;

	while (done < budget && (skb = skb_dequeue(&rxq->q))) {
		napi_gro_receive(napi, skb);
		done++;
	}
	if (done < budget && napi_complete_done(napi, done) && skb_queue_len_lockless(&rxq->q))
		napi_schedule(napi);	/* one came between the dequeue and the completion */
	return done;
}

void softib_rn_rx_purge(struct softib_rn *parent, struct net_device *owner)
{
	struct sk_buff *skb, *tmp;
	unsigned long flags;
	unsigned int i;

	for (i = 0; i < parent->ndev->num_rx_queues; i++) {
		struct sk_buff_head *q = &parent->rxq[i].q;

		spin_lock_irqsave(&q->lock, flags);
		skb_queue_walk_safe(q, skb, tmp) {
			if (owner && skb->dev != owner)
				continue;
			__skb_unlink(skb, q);
			dev_kfree_skb_any(skb);
		}
		spin_unlock_irqrestore(&q->lock, flags);
	}
}
