// SPDX-License-Identifier: GPL-2.0
/*
 * Transmit over UD: whether a packet fits (the group's MTU, a thin path's),
 * what does not fit told to its sender as a router would, the send ring
 * (mapping, posting, LSO headers), its completions and the send NAPI, and
 * the drop counter every transmit path uses. Connected mode's own rings
 * are in ipoib_cm_tx.c; the QP and the CQs in ipoib_ib.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/icmp.h>
#include <linux/icmpv6.h>
#include <linux/if_ether.h>
#include <net/dst.h>
#include <net/icmp.h>
#include <net/ip.h>
#include "ipoib.h"

/*
 * A packet bigger than UD carries: tell its sender the UD MTU, as a router
 * would (the in-tree driver does the same), and drop it. ndo_start_xmit.
 */
void ipoib_too_big(struct ipoib_dev_priv *priv, struct sk_buff *skb,
		   unsigned int mtu)
{
	skb_pull(skb, IPOIB_ENCAP_LEN);
	if (skb->protocol == htons(ETH_P_IP))
		icmp_ndo_send(skb, ICMP_DEST_UNREACH, ICMP_FRAG_NEEDED,
			      htonl(mtu));
	else if (skb->protocol == htons(ETH_P_IPV6))
		icmpv6_ndo_send(skb, ICMPV6_PKT_TOOBIG, 0, mtu);
	ipoib_count(priv, IPOIB_CTR_DROP_TOO_BIG);
	ipoib_count_tx_drop(priv, skb);
}

/* True (and @skb consumed) if @skb is too big for the UD QP. */
bool ipoib_ud_too_big(struct ipoib_dev_priv *priv, struct sk_buff *skb)
{
	unsigned int mtu = READ_ONCE(priv->mcast_mtu);

	if (likely(skb->len <= mtu + IPOIB_ENCAP_LEN || skb_is_gso(skb)))
		return false;
	ipoib_too_big(priv, skb, mtu);
	return true;
}

/*
 * True (and @skb consumed) if @skb is too big for a path whose IB MTU,
 * @mtu bytes, is below the group's: a thin link between two switches
 * would drop it. Its sender learns the path's MTU as from a router, and
 * the route's PMTU is lowered directly as well, since the ICMP error does
 * not reach every local sender: an ICMP echo reply is sent with the ICMP
 * socket's lock held, so the error about it is not sent at all. (Not so
 * for connected mode's "UD cannot carry this" above: there the packet
 * waits for a connection, and a PMTU learnt would outlive it.)
 */
bool ipoib_path_too_big(struct ipoib_dev_priv *priv, struct sk_buff *skb,
			unsigned int mtu)
{
	unsigned int ip_mtu = mtu - IPOIB_ENCAP_LEN;

	if (skb_is_gso(skb) ? skb_gso_validate_network_len(skb, ip_mtu) :
	    skb->len <= mtu)
		return false;
	skb_dst_update_pmtu_no_confirm(skb, ip_mtu);
	ipoib_too_big(priv, skb, ip_mtu);
	return true;
}

/*
 * The one TX queue feeds the UD ring and the connections' rings; only the
 * UD ring stops it (a connection's full ring keeps a backlog of its own,
 * ipoib_cm_send()): it may run again when that has room. Either NAPI
 * context, or xmit.
 */
bool ipoib_tx_may_wake(struct ipoib_dev_priv *priv)
{
	return ipoib_tx_inflight(priv) <= priv->tx_ring_size / 2;
}

/* Unmap the linear part and the first @nr_frags frags of a send. */
void ipoib_tx_unmap(struct ipoib_dev_priv *priv, struct ipoib_tx_buf *buf,
		    unsigned int nr_frags)
{
	struct sk_buff *skb = buf->skb;
	unsigned int f;

	if (skb_headlen(skb) > buf->hlen)
		ib_dma_unmap_single(priv->ca, buf->mapping[0],
				    skb_headlen(skb) - buf->hlen, DMA_TO_DEVICE);
	for (f = 0; f < nr_frags; f++)
		ib_dma_unmap_page(priv->ca, buf->mapping[f + 1],
				  skb_frag_size(&skb_shinfo(skb)->frags[f]),
				  DMA_TO_DEVICE);
}

/*
 * Map @buf->skb into @sge: the linear part after the @buf->hlen bytes an
 * LSO WR carries as its header (if any is left), then every frag.
 * Returns the number of SGEs, or 0 with nothing left mapped.
 */
unsigned int ipoib_tx_map(struct ipoib_dev_priv *priv,
			  struct ipoib_tx_buf *buf, struct ib_sge *sge)
{
	struct sk_buff *skb = buf->skb;
	unsigned int n = 0, f;
	u32 lkey = priv->pd->local_dma_lkey;

	if (skb_headlen(skb) > buf->hlen) {
		unsigned int len = skb_headlen(skb) - buf->hlen;

		buf->mapping[0] = ib_dma_map_single(priv->ca,
						    skb->data + buf->hlen, len,
						    DMA_TO_DEVICE);
		if (unlikely(ib_dma_mapping_error(priv->ca, buf->mapping[0])))
			return 0;
		sge[n].addr = buf->mapping[0];
		sge[n].length = len;
		sge[n].lkey = lkey;
		n++;
	}
	for (f = 0; f < skb_shinfo(skb)->nr_frags; f++) {
		const skb_frag_t *frag = &skb_shinfo(skb)->frags[f];
		u64 addr;

		addr = ib_dma_map_page(priv->ca, skb_frag_page(frag),
				       skb_frag_off(frag), skb_frag_size(frag),
				       DMA_TO_DEVICE);
		if (unlikely(ib_dma_mapping_error(priv->ca, addr))) {
			ipoib_tx_unmap(priv, buf, f);
			return 0;
		}
		buf->mapping[f + 1] = addr;
		sge[n].addr = addr;
		sge[n].length = skb_frag_size(frag);
		sge[n].lkey = lkey;
		n++;
	}
	return n;
}

void ipoib_tx_complete(struct ipoib_dev_priv *priv, struct ib_wc *wc)
{
	unsigned int i = wc->wr_id & (priv->tx_ring_size - 1);
	struct ipoib_tx_buf *buf = &priv->tx_ring[i];

	if (unlikely(!buf->skb)) {
		ipoib_err_ratelimited(priv, IPOIB_RL_BOGUS_WC,
				      "bogus send completion %llx\n", wc->wr_id);
		return;
	}
	ipoib_tx_unmap(priv, buf, skb_shinfo(buf->skb)->nr_frags);
	u64_stats_update_begin(&priv->tx_stats.syncp);
	if (likely(wc->status == IB_WC_SUCCESS)) {
		/* what went on the wire: an LSO WR's segments each have hlen */
		unsigned int segs = skb_is_gso(buf->skb) ?
				    skb_shinfo(buf->skb)->gso_segs : 1;

		u64_stats_add(&priv->tx_stats.packets, segs);
		u64_stats_add(&priv->tx_stats.bytes,
			      buf->skb->len + (segs - 1) * buf->hlen);
	} else if (wc->status != IB_WC_WR_FLUSH_ERR) {
		u64_stats_inc(&priv->tx_stats.errors);
	}
	u64_stats_update_end(&priv->tx_stats.syncp);
	if (wc->status != IB_WC_SUCCESS && wc->status != IB_WC_WR_FLUSH_ERR) {
		ipoib_dbg(priv->dev, "send error status %d\n", wc->status);
		/* the HCA stopped the send queue (SQE): the resync restarts it */
		ipoib_queue_resync(priv, IPOIB_RESYNC_SEND_ERR);
	}

	dev_consume_skb_any(buf->skb);
	buf->skb = NULL;
	ipoib_ah_put(buf->ah);
	buf->ah = NULL;
	/* Completions arrive in posting order on a UD QP. */
	smp_store_release(&priv->tx_tail, priv->tx_tail + 1);
}

int ipoib_tx_poll(struct napi_struct *napi, int budget)
{
	struct ipoib_dev_priv *priv = container_of(napi, struct ipoib_dev_priv,
						   tx_napi);
	struct ib_wc wcs[16];
	int done = 0;

	for (;;) {
		int n = ib_poll_cq(priv->send_cq, ARRAY_SIZE(wcs), wcs);
		int k;

		if (n <= 0)
			break;
		for (k = 0; k < n; k++)
			ipoib_tx_complete(priv, &wcs[k]);
		done += n;
		if (done >= IPOIB_NAPI_TX_BUDGET)
			break;
	}

	smp_mb(); /* tx_tail before the stopped check, pairs with xmit */
	if (netif_queue_stopped(priv->dev) &&
	    test_bit(IPOIB_FLAG_RUNNING, &priv->flags) &&
	    ipoib_tx_may_wake(priv))
		netif_wake_queue(priv->dev);

	if (done >= IPOIB_NAPI_TX_BUDGET)
		return budget;
	if (napi_complete(napi) &&
	    ib_req_notify_cq(priv->send_cq, IB_CQ_NEXT_COMP |
			     IB_CQ_REPORT_MISSED_EVENTS) > 0)
		napi_schedule(napi);
	return 0;
}

void ipoib_count_tx_drop(struct ipoib_dev_priv *priv, struct sk_buff *skb)
{
	atomic_long_inc(&priv->tx_dropped);
	dev_kfree_skb_any(skb);
}

/*
 * The bytes of a TSO skb's headers (encapsulation, IPv4, TCP) that an LSO
 * WR carries as its header, 0 for any other skb, or -1 if the headers are
 * not all in the linear part (never from the stack's TCP).
 */
static int ipoib_lso_hlen(struct sk_buff *skb)
{
	int hlen;

	if (!skb_is_gso(skb))
		return 0;
	hlen = skb_tcp_all_headers(skb);
	return hlen <= skb_headlen(skb) ? hlen : -1;
}

/*
 * Post one frame (starting at the encapsulation header). Called from
 * ndo_start_xmit with the queue lock held. Takes a reference on @ah that
 * the send completion drops. With NETIF_F_SG the frags are posted as they
 * are, one SGE each: no copy into a linear buffer (which, with
 * init_on_alloc, would also mean zeroing a 4 KiB allocation per packet).
 * A TSO skb (NETIF_F_TSO, only where the HCA offers UD LSO) goes as one
 * LSO WR: the headers inline in the WR, the payload in the SGEs, cut at
 * gso_size by the HCA.
 */
void ipoib_ud_send(struct ipoib_dev_priv *priv, struct sk_buff *skb,
		   struct ipoib_ah *ah, u32 qpn)
{
	unsigned int head = priv->tx_head;
	struct ipoib_tx_buf *buf = &priv->tx_ring[head & (priv->tx_ring_size - 1)];
	struct ib_sge sge[IPOIB_MAX_TX_SGE];
	struct ib_ud_wr wr = {};
	unsigned int nsge;
	int hlen, ret;

	hlen = ipoib_lso_hlen(skb);
	if (unlikely(hlen < 0 || (!hlen && skb->len > priv->max_ib_mtu) ||
		     ipoib_tx_inflight(priv) >= priv->tx_ring_size ||
		     (skb_shinfo(skb)->nr_frags + (skb_headlen(skb) > hlen) >
		      priv->max_send_sge && skb_linearize(skb)))) {
		ipoib_ah_put(ah);
		ipoib_count_tx_drop(priv, skb);
		return;
	}

	buf->skb = skb;
	buf->hlen = hlen;
	nsge = ipoib_tx_map(priv, buf, sge);
	if (unlikely(!nsge && skb->len > hlen)) {
		buf->skb = NULL;
		ipoib_ah_put(ah);
		ipoib_count_tx_drop(priv, skb);
		return;
	}

	wr.wr.wr_id = head;
	wr.wr.sg_list = sge;
	wr.wr.num_sge = nsge;
	wr.wr.opcode = IB_WR_SEND;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	/* NETIF_F_IP_CSUM: only IPv4 TCP/UDP come partial, as the HCA wants */
	if (skb->ip_summed == CHECKSUM_PARTIAL)
		wr.wr.send_flags |= IB_SEND_IP_CSUM;
	if (hlen) {
		wr.wr.opcode = IB_WR_LSO;
		wr.header = skb->data;
		wr.hlen = hlen;
		wr.mss = skb_shinfo(skb)->gso_size;
	}
	wr.ah = ah->ibah;
	wr.remote_qpn = qpn;
	wr.remote_qkey = priv->qkey;

	buf->ah = ah;
	skb_tx_timestamp(skb);
	/*
	 * The socket gets its send budget back now, not at the completion:
	 * TCP small queues and the UDP send buffer do not wait for tx_napi.
	 */
	skb_orphan(skb);
	skb_dst_drop(skb);
	ret = ib_post_send(priv->qp, &wr.wr, NULL);
	if (unlikely(ret)) {
		ipoib_warn_ratelimited(priv, IPOIB_RL_POST_SEND,
				       "post send failed: %d\n", ret);
		ipoib_tx_unmap(priv, buf, skb_shinfo(skb)->nr_frags);
		buf->skb = NULL;
		buf->ah = NULL;
		ipoib_ah_put(ah);
		ipoib_count_tx_drop(priv, skb);
		return;
	}
	netif_trans_update(priv->dev);
	WRITE_ONCE(priv->tx_head, head + 1);

	if (ipoib_tx_inflight(priv) >= priv->tx_ring_size) {
		netif_stop_queue(priv->dev);
		smp_mb(); /* stopped before re-reading tx_tail */
		if (ipoib_tx_may_wake(priv))
			netif_wake_queue(priv->dev);
	}
}
