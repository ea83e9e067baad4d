// SPDX-License-Identifier: GPL-2.0
/*
 * IB resources of one interface: the UD QP, its send and receive CQs, the
 * receive ring and the send ring, and the two NAPI contexts that consume
 * their completions.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/ipv6.h>
#include <linux/log2.h>
#include <linux/moduleparam.h>
#include <net/gro.h>
#include <net/ndisc.h>
#include "ipoib.h"

/*
 * GRH + frame up to this size: copied into a new skb whose head comes from
 * the per-CPU page-fragment cache, and the receive buffer is posted again.
 * That covers every frame of a 2 KiB (or smaller) broadcast-group MTU.
 */
#define IPOIB_RX_COPYBREAK	(SKB_WITH_OVERHEAD(PAGE_SIZE) - NET_SKB_PAD - \
				 NET_IP_ALIGN)

static void ipoib_rx_cq_event(struct ib_cq *cq, void *ctx)
{
	struct ipoib_dev_priv *priv = ctx;

	napi_schedule(&priv->rx_napi);
}

static void ipoib_tx_cq_event(struct ib_cq *cq, void *ctx)
{
	struct ipoib_dev_priv *priv = ctx;

	napi_schedule(&priv->tx_napi);
}

/*
 * A CQ in error (overflow) completes nothing more, and a QP stays bound to
 * its CQs for life: the resync work makes both anew (ipoib_ib_recreate).
 * Any context: softib and HCAs call this from their completion paths.
 */
static void ipoib_cq_error(struct ib_event *event, void *ctx)
{
	struct ipoib_dev_priv *priv = ctx;

	ipoib_err_ratelimited(priv, IPOIB_RL_CQ_ERROR,
			      "%s CQ error (event %d): recreating the UD QP and its CQs\n",
			      event->element.cq == priv->recv_cq ? "receive" : "send",
			      event->event);
	set_bit(IPOIB_FLAG_CQ_ERROR, &priv->flags);
	ipoib_queue_resync(priv, IPOIB_RESYNC_CQ_ERROR);
}

static struct sk_buff *ipoib_rx_alloc(struct ipoib_dev_priv *priv, gfp_t gfp,
				      u64 *mapping)
{
	struct sk_buff *skb;

	skb = __netdev_alloc_skb(priv->dev, priv->rx_buf_size, gfp);
	if (!skb)
		return NULL;
	*mapping = ib_dma_map_single(priv->ca, skb->data, priv->rx_buf_size,
				     DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(priv->ca, *mapping)) {
		dev_kfree_skb_any(skb);
		return NULL;
	}
	return skb;
}

static int ipoib_rx_post(struct ipoib_dev_priv *priv, unsigned int i)
{
	struct ipoib_rx_buf *buf = &priv->rx_ring[i];
	struct ib_sge sge = {
		.addr = buf->mapping,
		.length = priv->rx_buf_size,
		.lkey = priv->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_id = i,
		.sg_list = &sge,
		.num_sge = 1,
	};
	int ret;

	atomic_inc(&priv->rx_posted);
	buf->posted = true;
	ret = ib_post_recv(priv->qp, &wr, NULL);
	if (ret) {
		buf->posted = false;
		atomic_dec(&priv->rx_posted);
	}
	return ret;
}

/* Post again the buffers whose repost failed (rx_napi). */
static void ipoib_rx_repost(struct ipoib_dev_priv *priv)
{
	unsigned int i;

	for (i = 0; i < priv->rx_ring_size && priv->rx_unposted; i++) {
		struct ipoib_rx_buf *buf = &priv->rx_ring[i];

		if (!buf->skb || buf->posted)
			continue;
		if (ipoib_rx_post(priv, i))
			return;
		priv->rx_unposted--;
	}
}

static void ipoib_rx_free_buf(struct ipoib_dev_priv *priv, unsigned int i)
{
	struct ipoib_rx_buf *buf = &priv->rx_ring[i];

	buf->posted = false;
	if (!buf->skb)
		return;
	ib_dma_unmap_single(priv->ca, buf->mapping, priv->rx_buf_size,
			    DMA_FROM_DEVICE);
	dev_kfree_skb_any(buf->skb);
	buf->skb = NULL;
}

static bool ipoib_is_bcast_gid(struct ipoib_dev_priv *priv, const u8 *gid)
{
	u8 bcast[INFINIBAND_ALEN];

	/* not dev->broadcast: after a P_Key change it follows a bit later */
	ipoib_build_bcast_addr(priv, bcast);
	return !memcmp(gid, bcast + 4, sizeof(union ib_gid));
}

/* Hand one received frame to the stack; the caller has unmapped it. */
/*
 * The sender's GID from an IPv6 neighbour solicitation (source link-layer
 * address option) or advertisement (target link-layer address option).
 */
static const union ib_gid *ipoib_rx_nd_sender(struct sk_buff *skb,
					      union ib_gid *buf)
{
	unsigned int off = sizeof(struct ipv6hdr);
	const struct ipv6hdr *ip6;
	struct ipv6hdr ip6_buf;
	u8 type, want, opt[2];
	const u8 *p;

	ip6 = skb_header_pointer(skb, 0, sizeof(ip6_buf), &ip6_buf);
	if (!ip6 || ip6->nexthdr != IPPROTO_ICMPV6)
		return NULL;
	p = skb_header_pointer(skb, off, 1, &type);
	if (!p)
		return NULL;
	if (*p == NDISC_NEIGHBOUR_SOLICITATION)
		want = ND_OPT_SOURCE_LL_ADDR;
	else if (*p == NDISC_NEIGHBOUR_ADVERTISEMENT)
		want = ND_OPT_TARGET_LL_ADDR;
	else
		return NULL;
	/* ICMPv6 header (8 bytes) and the target address, then options */
	for (off += 8 + sizeof(struct in6_addr); ; off += opt[1] * 8) {
		p = skb_header_pointer(skb, off, sizeof(opt), opt);
		if (!p || !opt[1])
			return NULL;
		if (opt[0] == want && opt[1] * 8 >= 2 + INFINIBAND_ALEN)
			return skb_header_pointer(skb, off + 2 + 4, sizeof(*buf),
						  buf);
	}
}

/*
 * Who sent this frame, for ipoib_path_check_slid(): the source GID of its
 * GRH (every multicast frame has one) if from our subnet, else the sender's
 * hardware address in an ARP packet or an IPv6 neighbour message.
 */
static void ipoib_rx_check_sender(struct ipoib_dev_priv *priv,
				  struct sk_buff *skb,
				  const union ib_gid *sgid,
				  const struct ib_wc *wc)
{
	const union ib_gid *gid = NULL;
	const struct arphdr *arp;
	struct arphdr arp_buf;
	union ib_gid buf;

	if (sgid) {
		if (sgid->global.subnet_prefix ==
		    priv->local_gid.global.subnet_prefix)
			gid = sgid;
	} else if (skb->protocol == htons(ETH_P_ARP)) {
		arp = skb_header_pointer(skb, 0, sizeof(arp_buf), &arp_buf);
		if (arp && arp->ar_hrd == htons(ARPHRD_INFINIBAND) &&
		    arp->ar_hln == INFINIBAND_ALEN)
			gid = skb_header_pointer(skb, sizeof(*arp) + 4,
						 sizeof(buf), &buf);
	} else if (skb->protocol == htons(ETH_P_IPV6)) {
		gid = ipoib_rx_nd_sender(skb, &buf);
	}
	if (gid)
		ipoib_path_check_slid(priv, gid, wc->slid);
	else if (!sgid)
		ipoib_path_note_slid(priv, wc->src_qp, wc->slid);
}

static void ipoib_rx_deliver(struct ipoib_dev_priv *priv, struct sk_buff *skb,
			     const struct ib_wc *wc)
{
	struct net_device *dev = priv->dev;
	union ib_gid sgid, *sender = NULL;
	const struct ib_grh *grh;
	struct ipoib_encap *encap;
	unsigned int len = wc->byte_len;

	skb_put(skb, len);
	grh = (const struct ib_grh *)skb->data;
	skb->pkt_type = PACKET_HOST;
	if (wc->wc_flags & IB_WC_GRH) {
		if (grh->dgid.raw[0] == 0xff)
			skb->pkt_type = ipoib_is_bcast_gid(priv, grh->dgid.raw) ?
					PACKET_BROADCAST : PACKET_MULTICAST;
		/* the pseudo header pushed below overwrites the GRH */
		sgid = grh->sgid;
		sender = &sgid;
	}
	skb_pull(skb, sizeof(struct ib_grh));

	encap = (struct ipoib_encap *)skb->data;
	skb->protocol = encap->proto;
	/* The link-layer header seen by taps: zeroed pseudo header + encap. */
	memset(skb_push(skb, IPOIB_PSEUDO_LEN), 0, IPOIB_PSEUDO_LEN);
	skb_reset_mac_header(skb);
	skb_pull(skb, IPOIB_HARD_LEN);
	skb_reset_network_header(skb);
	skb->dev = dev;
	skb_record_rx_queue(skb, 0);
	/* the HCA verified the IPv4 header and the TCP/UDP checksum */
	if ((wc->wc_flags & IB_WC_IP_CSUM_OK) && (dev->features & NETIF_F_RXCSUM))
		skb->ip_summed = CHECKSUM_UNNECESSARY;
	ipoib_rx_check_sender(priv, skb, sender, wc);

	u64_stats_update_begin(&priv->rx_stats.syncp);
	u64_stats_inc(&priv->rx_stats.packets);
	u64_stats_add(&priv->rx_stats.bytes, skb->len);
	if (skb->pkt_type != PACKET_HOST)
		u64_stats_inc(&priv->rx_stats.multicast);
	u64_stats_update_end(&priv->rx_stats.syncp);

	napi_gro_receive(&priv->rx_napi, skb);
}

static void ipoib_rx_count(struct ipoib_dev_priv *priv, u64_stats_t *ctr)
{
	u64_stats_update_begin(&priv->rx_stats.syncp);
	u64_stats_inc(ctr);
	u64_stats_update_end(&priv->rx_stats.syncp);
}

/*
 * Our own multicast, looped back: our QPN from our LID. With a GRH the
 * source port GUID must be ours too: another port (a router's far side, or
 * a port whose LID is not assigned yet) can use the same LID and QPN.
 */
static bool ipoib_rx_is_own(struct ipoib_dev_priv *priv,
			    struct ipoib_rx_buf *buf, const struct ib_wc *wc)
{
	const struct ib_grh *grh = (const struct ib_grh *)buf->skb->data;
	bool own;

	if (wc->src_qp != priv->qp->qp_num ||
	    wc->slid != READ_ONCE(priv->local_lid))
		return false;
	if (!(wc->wc_flags & IB_WC_GRH))
		return true;
	ib_dma_sync_single_for_cpu(priv->ca, buf->mapping, sizeof(*grh),
				   DMA_FROM_DEVICE);
	own = grh->sgid.global.interface_id ==
	      priv->local_gid.global.interface_id;
	ib_dma_sync_single_for_device(priv->ca, buf->mapping, sizeof(*grh),
				      DMA_FROM_DEVICE);
	return own;
}

/*
 * One receive completion. The buffer is replaced before the frame goes up;
 * when no memory is available the old buffer is posted again and the frame
 * is counted as dropped, so the ring never shrinks.
 */
static void ipoib_rx_complete(struct ipoib_dev_priv *priv, struct ib_wc *wc)
{
	struct ipoib_rx_buf *buf;
	struct sk_buff *skb, *nskb;
	u64 old_mapping, mapping;
	unsigned int i;

	if (unlikely(wc->wr_id >= priv->rx_ring_size ||
		     !priv->rx_ring[wc->wr_id].posted)) {
		/* not one we posted: rx_posted does not count it */
		ipoib_err_ratelimited(priv, IPOIB_RL_BOGUS_WC,
				      "bogus receive completion %llx\n", wc->wr_id);
		return;
	}
	i = wc->wr_id;
	atomic_dec(&priv->rx_posted);
	buf = &priv->rx_ring[i];
	buf->posted = false;

	if (unlikely(wc->status != IB_WC_SUCCESS ||
		     !test_bit(IPOIB_FLAG_RUNNING, &priv->flags))) {
		if (wc->status != IB_WC_WR_FLUSH_ERR &&
		    wc->status != IB_WC_SUCCESS) {
			ipoib_dbg(priv->dev, "receive error status %d\n",
				  wc->status);
			ipoib_rx_count(priv, &priv->rx_stats.errors);
		}
		/* one bad frame while running: the buffer serves again */
		if (wc->status != IB_WC_WR_FLUSH_ERR &&
		    test_bit(IPOIB_FLAG_RUNNING, &priv->flags))
			goto repost;
		ipoib_rx_free_buf(priv, i);
		return;
	}

	/* Our own multicast, looped back by the fabric. */
	if (ipoib_rx_is_own(priv, buf, wc))
		goto repost;

	if (unlikely(wc->byte_len < sizeof(struct ib_grh) + IPOIB_ENCAP_LEN ||
		     wc->byte_len > priv->rx_buf_size)) {
		ipoib_rx_count(priv, &priv->rx_stats.length_errors);
		goto repost;
	}

	/*
	 * Frames up to a page are copied into a right-sized skb and the
	 * buffer is posted again. A receive buffer holds a port-MTU frame
	 * (4 KiB + GRH: an 8 KiB kmalloc, zeroed whole by init_on_alloc);
	 * replacing it for each frame cost more than copying the frame, and
	 * the socket was charged the 8 KiB truesize for a 2 KiB frame.
	 */
	if (wc->byte_len <= IPOIB_RX_COPYBREAK) {
		skb = napi_alloc_skb(&priv->rx_napi, wc->byte_len);
		if (unlikely(!skb)) {
			ipoib_rx_count(priv, &priv->rx_stats.dropped);
			goto repost;
		}
		ib_dma_sync_single_for_cpu(priv->ca, buf->mapping, wc->byte_len,
					   DMA_FROM_DEVICE);
		memcpy(skb->data, buf->skb->data, wc->byte_len);
		ib_dma_sync_single_for_device(priv->ca, buf->mapping,
					      wc->byte_len, DMA_FROM_DEVICE);
		ipoib_rx_deliver(priv, skb, wc);
		goto repost;
	}

	nskb = ipoib_rx_alloc(priv, GFP_ATOMIC, &mapping);
	if (unlikely(!nskb)) {
		ipoib_rx_count(priv, &priv->rx_stats.dropped);
		goto repost;
	}
	skb = buf->skb;
	old_mapping = buf->mapping;
	buf->skb = nskb;
	buf->mapping = mapping;
	ib_dma_unmap_single(priv->ca, old_mapping, priv->rx_buf_size,
			    DMA_FROM_DEVICE);
	ipoib_rx_deliver(priv, skb, wc);

repost:
	/* Kept, not freed: the next poll posts it again (ipoib_rx_repost). */
	if (unlikely(ipoib_rx_post(priv, i))) {
		ipoib_warn_ratelimited(priv, IPOIB_RL_POST_RECV,
				       "receive post failed\n");
		priv->rx_unposted++;
	}
}

static int ipoib_rx_poll(struct napi_struct *napi, int budget)
{
	struct ipoib_dev_priv *priv = container_of(napi, struct ipoib_dev_priv,
						   rx_napi);
	struct ib_wc wcs[16];
	int done = 0;

	while (done < budget) {
		int n = ib_poll_cq(priv->recv_cq,
				   min_t(int, ARRAY_SIZE(wcs), budget - done),
				   wcs);
		int k;

		if (n <= 0)
			break;
		for (k = 0; k < n; k++)
			ipoib_rx_complete(priv, &wcs[k]);
		done += n;
	}
	if (unlikely(priv->rx_unposted))
		ipoib_rx_repost(priv);

	if (done < budget && napi_complete_done(napi, done)) {
		if (ib_req_notify_cq(priv->recv_cq, IB_CQ_NEXT_COMP |
				     IB_CQ_REPORT_MISSED_EVENTS) > 0)
			napi_schedule(napi);
	}
	return done;
}

static unsigned int ipoib_tx_inflight(struct ipoib_dev_priv *priv)
{
	return READ_ONCE(priv->tx_head) - READ_ONCE(priv->tx_tail);
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

static void ipoib_tx_complete(struct ipoib_dev_priv *priv, struct ib_wc *wc)
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

static int ipoib_tx_poll(struct napi_struct *napi, int budget)
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
void ipoib_send(struct ipoib_dev_priv *priv, struct sk_buff *skb,
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

static int ipoib_qp_to_rts(struct ipoib_dev_priv *priv)
{
	struct ib_qp_attr attr = {};
	int ret;

	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = priv->pkey_index;
	attr.port_num = priv->port;
	attr.qkey = priv->qkey;
	ret = ib_modify_qp(priv->qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_QKEY);
	if (ret)
		return ret;

	attr.qp_state = IB_QPS_RTR;
	ret = ib_modify_qp(priv->qp, &attr, IB_QP_STATE);
	if (ret)
		return ret;

	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = 0;
	return ib_modify_qp(priv->qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN);
}

int ipoib_ib_set_qkey(struct ipoib_dev_priv *priv, u32 qkey)
{
	struct ib_qp_attr attr = { .qkey = qkey };

	WRITE_ONCE(priv->qkey, qkey);
	if (!test_bit(IPOIB_FLAG_RUNNING, &priv->flags))
		return 0;
	return ib_modify_qp(priv->qp, &attr, IB_QP_QKEY);
}

/*
 * After a send completed in error, a UD QP's send queue is in SQE: it
 * flushes every send until it is moved back to RTS (receives go on).
 * Resync work, under op_mutex, so the QP is not being replaced.
 */
void ipoib_ib_sq_recover(struct ipoib_dev_priv *priv)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;
	int ret;

	lockdep_assert_held(&priv->op_mutex);
	if (!priv->qp || !test_bit(IPOIB_FLAG_RUNNING, &priv->flags))
		return;
	ret = ib_query_qp(priv->qp, &attr, IB_QP_STATE, &init);
	if (ret || attr.qp_state != IB_QPS_SQE)
		return;
	attr.qp_state = IB_QPS_RTS;
	ret = ib_modify_qp(priv->qp, &attr, IB_QP_STATE);
	ipoib_warn_ratelimited(priv, IPOIB_RL_SQE,
			       "send queue error: %s\n",
			       ret ? "cannot move the QP back to RTS" :
				     "QP back to RTS");
}

static void ipoib_drain_cqs(struct ipoib_dev_priv *priv)
{
	struct ib_wc wc;

	while (ib_poll_cq(priv->recv_cq, 1, &wc) > 0)
		ipoib_rx_complete(priv, &wc);
	while (ib_poll_cq(priv->send_cq, 1, &wc) > 0)
		ipoib_tx_complete(priv, &wc);
}

/* Bring the QP to RTS, fill the receive ring and start NAPI. */
int ipoib_ib_start(struct ipoib_dev_priv *priv)
{
	unsigned int i;
	int ret;

	lockdep_assert_held(&priv->op_mutex);
	if (test_bit(IPOIB_FLAG_RUNNING, &priv->flags))
		return 0;
	if (!priv->qp)
		return -ENODEV;	/* a failed ipoib_ib_recreate() */

	ret = ib_find_pkey(priv->ca, priv->port, priv->pkey, &priv->pkey_index);
	if (ret) {
		ipoib_dbg(priv->dev, "P_Key 0x%04x not in the table\n",
			  priv->pkey);
		return ret;
	}

	ret = ipoib_qp_to_rts(priv);
	if (ret) {
		netdev_warn(priv->dev, "QP to RTS failed: %d\n", ret);
		goto err_reset_qp;
	}

	set_bit(IPOIB_FLAG_RUNNING, &priv->flags);
	for (i = 0; i < priv->rx_ring_size; i++) {
		struct ipoib_rx_buf *buf = &priv->rx_ring[i];

		buf->skb = ipoib_rx_alloc(priv, GFP_KERNEL, &buf->mapping);
		if (!buf->skb) {
			ret = -ENOMEM;
			goto err_stop;
		}
		ret = ipoib_rx_post(priv, i);
		if (ret) {
			ipoib_rx_free_buf(priv, i);
			goto err_stop;
		}
	}

	napi_enable(&priv->rx_napi);
	napi_enable(&priv->tx_napi);
	ib_req_notify_cq(priv->recv_cq, IB_CQ_NEXT_COMP);
	ib_req_notify_cq(priv->send_cq, IB_CQ_NEXT_COMP);
	local_bh_disable();
	napi_schedule(&priv->rx_napi);
	local_bh_enable();
	netif_wake_queue(priv->dev);
	/* UD works without it: the mode stays, our address says no RC */
	if (priv->cm_mode)
		ipoib_cm_start(priv);
	return 0;

err_stop:
	clear_bit(IPOIB_FLAG_RUNNING, &priv->flags);
err_reset_qp:
	{
		struct ib_qp_attr attr = { .qp_state = IB_QPS_RESET };

		ib_modify_qp(priv->qp, &attr, IB_QP_STATE);
	}
	ipoib_drain_cqs(priv);
	for (i = 0; i < priv->rx_ring_size; i++)
		ipoib_rx_free_buf(priv, i);
	atomic_set(&priv->rx_posted, 0);
	priv->rx_unposted = 0;
	return ret;
}

/*
 * Stop sending and receiving: move the QP to the error state so every
 * posted request completes with a flush status, reap those completions,
 * then reset the QP. The QP object (and its QPN, part of our address) stays.
 */
void ipoib_ib_stop(struct ipoib_dev_priv *priv)
{
	struct ib_qp_attr attr = {};
	unsigned long timeout;
	unsigned int i;

	lockdep_assert_held(&priv->op_mutex);
	if (!test_bit(IPOIB_FLAG_RUNNING, &priv->flags))
		return;
	ipoib_cm_stop(priv);
	clear_bit(IPOIB_FLAG_RUNNING, &priv->flags);

	/* NAPI first: a running TX poll could wake the queue again. */
	napi_disable(&priv->rx_napi);
	napi_disable(&priv->tx_napi);
	netif_tx_disable(priv->dev);

	attr.qp_state = IB_QPS_ERR;
	if (ib_modify_qp(priv->qp, &attr, IB_QP_STATE))
		netdev_warn(priv->dev, "QP to error state failed\n");

	/* A CQ in error delivers no flush: reset at once, then free all. */
	timeout = jiffies + 5 * HZ;
	while (!test_bit(IPOIB_FLAG_CQ_ERROR, &priv->flags)) {
		ipoib_drain_cqs(priv);
		if (!atomic_read(&priv->rx_posted) && !ipoib_tx_inflight(priv))
			break;
		if (time_after(jiffies, timeout)) {
			netdev_warn(priv->dev,
				    "%d receives, %u sends not flushed\n",
				    atomic_read(&priv->rx_posted),
				    ipoib_tx_inflight(priv));
			break;
		}
		usleep_range(10000, 20000);
	}

	attr.qp_state = IB_QPS_RESET;
	if (ib_modify_qp(priv->qp, &attr, IB_QP_STATE))
		netdev_warn(priv->dev, "QP to reset state failed\n");
	ipoib_drain_cqs(priv);

	/* Anything still owned after a reset is ours to free. */
	for (i = 0; i < priv->rx_ring_size; i++)
		ipoib_rx_free_buf(priv, i);
	atomic_set(&priv->rx_posted, 0);
	priv->rx_unposted = 0;
	while (ipoib_tx_inflight(priv)) {
		struct ib_wc wc = {
			.wr_id = priv->tx_tail,
			.status = IB_WC_WR_FLUSH_ERR,
		};

		ipoib_tx_complete(priv, &wc);
	}
}

/* The HCA cuts TSO skbs (UD LSO); ConnectX offers it with the checksums. */
static bool ipoib_hca_lso(struct ipoib_dev_priv *priv)
{
	return (priv->ca->attrs.device_cap_flags & IB_DEVICE_UD_IP_CSUM) &&
	       (priv->ca->attrs.kernel_cap_flags & IBK_UD_TSO);
}

/*
 * The offloads the HCA gives a UD QP, on by default and each switchable
 * with ethtool -K (the core drops TSO without SG or IP checksumming).
 * With more than one send SGE, software GSO makes segments that share the
 * skb's frags instead of copying each into a new linear skb.
 */
static void ipoib_ib_set_features(struct ipoib_dev_priv *priv)
{
	struct net_device *dev = priv->dev;
	netdev_features_t hw = 0;

	if (priv->max_send_sge > 1)
		hw |= NETIF_F_SG;
	if (priv->ca->attrs.device_cap_flags & IB_DEVICE_UD_IP_CSUM)
		hw |= NETIF_F_IP_CSUM | NETIF_F_RXCSUM;
	if (ipoib_hca_lso(priv)) {
		hw |= NETIF_F_TSO;
		/* one LSO WR: at most a 64 KiB IPv4 datagram */
		netif_set_tso_max_size(dev, GSO_LEGACY_MAX_SIZE);
	}
	dev->hw_features |= hw;
	dev->features |= hw;
}

/* The two CQs and the UD QP, left in RESET. */
static int ipoib_ib_create_qp(struct ipoib_dev_priv *priv)
{
	struct ib_cq_init_attr cq_attr = {};
	struct ib_qp_init_attr qp_attr = {};
	struct ib_cq *recv_cq, *send_cq;
	struct ib_qp *qp;
	int ret;

	cq_attr.cqe = priv->rx_ring_size + 1;
	cq_attr.comp_vector = 0;
	recv_cq = ib_create_cq(priv->ca, ipoib_rx_cq_event, ipoib_cq_error, priv,
			       &cq_attr);
	if (IS_ERR(recv_cq))
		return PTR_ERR(recv_cq);
	/* ethtool -C applies to the receive CQ we have, so to a new one too */
	if (priv->coal_usecs || priv->coal_frames) {
		ret = rdma_set_cq_moderation(recv_cq, priv->coal_frames,
					     priv->coal_usecs);
		if (ret)
			netdev_warn(priv->dev,
				    "cannot moderate the new receive CQ: %d\n",
				    ret);
	}

	cq_attr.cqe = priv->tx_ring_size + 1;
	send_cq = ib_create_cq(priv->ca, ipoib_tx_cq_event, ipoib_cq_error, priv,
			       &cq_attr);
	if (IS_ERR(send_cq)) {
		ret = PTR_ERR(send_cq);
		goto err_destroy_recv_cq;
	}

	qp_attr.send_cq = send_cq;
	qp_attr.recv_cq = recv_cq;
	qp_attr.cap.max_send_wr = priv->tx_ring_size;
	qp_attr.cap.max_recv_wr = priv->rx_ring_size;
	qp_attr.cap.max_send_sge = min_t(u32, priv->ca->attrs.max_send_sge,
					 IPOIB_MAX_TX_SGE);
	qp_attr.cap.max_recv_sge = 1;
	qp_attr.sq_sig_type = IB_SIGNAL_ALL_WR;
	qp_attr.qp_type = IB_QPT_UD;
	if (ipoib_hca_lso(priv))
		qp_attr.create_flags |= IB_QP_CREATE_IPOIB_UD_LSO;
	qp = ib_create_qp(priv->pd, &qp_attr);
	if (IS_ERR(qp)) {
		ret = PTR_ERR(qp);
		goto err_destroy_send_cq;
	}

	priv->recv_cq = recv_cq;
	priv->send_cq = send_cq;
	priv->qp = qp;
	/* The QP may have more than we asked for: never post more than that. */
	priv->max_send_sge = min_t(u32, qp_attr.cap.max_send_sge,
				   IPOIB_MAX_TX_SGE);
	return 0;

err_destroy_send_cq:
	ib_destroy_cq(send_cq);
err_destroy_recv_cq:
	ib_destroy_cq(recv_cq);
	return ret;
}

/* Also the first step of ipoib_dev_cleanup(): no CQ, no CQ error event. */
void ipoib_ib_destroy_qp(struct ipoib_dev_priv *priv)
{
	if (!priv->qp)
		return;
	ib_destroy_qp(priv->qp);
	ib_destroy_cq(priv->send_cq);
	ib_destroy_cq(priv->recv_cq);
	priv->qp = NULL;
	priv->send_cq = NULL;
	priv->recv_cq = NULL;
}

/*
 * Replace the QP and both CQs after a CQ error. The caller has stopped the
 * interface (ipoib_ib_stop) and detached the QP from every group. The new
 * QP has a new QPN, which is part of our hardware address: the carrier
 * work, which can take rtnl, publishes it and tells the peers (gratuitous
 * ARP, unsolicited NA).
 */
int ipoib_ib_recreate(struct ipoib_dev_priv *priv)
{
	u32 old_qpn = priv->qp ? priv->qp->qp_num : 0;
	int ret;

	lockdep_assert_held(&priv->op_mutex);
	if (WARN_ON_ONCE(test_bit(IPOIB_FLAG_RUNNING, &priv->flags)))
		return -EBUSY;
	ipoib_ib_destroy_qp(priv);
	clear_bit(IPOIB_FLAG_CQ_ERROR, &priv->flags);
	ret = ipoib_ib_create_qp(priv);
	if (ret) {
		netdev_err(priv->dev, "cannot recreate the UD QP: %d\n", ret);
		return ret;
	}
	netdev_info(priv->dev, "UD QP recreated: qpn 0x%06x -> 0x%06x\n",
		    old_qpn, priv->qp->qp_num);
	ipoib_addr_changed(priv);
	return 0;
}

/*
 * The in-tree driver's ring parameters, with its ranges: a power of 2 (the
 * next one up), receive 2-8192, send 128-8192. They set the rings of the
 * interfaces created afterwards; ethtool -G sets one interface's.
 */
static int ipoib_recvq_size = IPOIB_RX_RING_DEFAULT;
module_param_named(recv_queue_size, ipoib_recvq_size, int, 0444);
MODULE_PARM_DESC(recv_queue_size,
		 "Receive ring of the UD QP and connected mode's shared receive queue (2-8192, default 256)");
static int ipoib_sendq_size = IPOIB_TX_RING_DEFAULT;
module_param_named(send_queue_size, ipoib_sendq_size, int, 0444);
MODULE_PARM_DESC(send_queue_size,
		 "Send ring of the UD QP (128-8192, default 128)");

static int ipoib_ring_fit(const char *name, int val, int min)
{
	int fit = roundup_pow_of_two(clamp(val, min, IPOIB_RING_MAX));

	if (fit != val)
		pr_info("%s=%d out of range or not a power of 2: %d\n", name,
			val, fit);
	return fit;
}

void ipoib_ib_params_init(void)
{
	ipoib_recvq_size = ipoib_ring_fit("recv_queue_size", ipoib_recvq_size,
					  IPOIB_RX_RING_MIN);
	ipoib_sendq_size = ipoib_ring_fit("send_queue_size", ipoib_sendq_size,
					  IPOIB_TX_RING_MIN);
}

/*
 * Rings of @rx and @tx entries (powers of 2), no more than the HCA's QP
 * takes. Not RUNNING, under op_mutex or before the interface exists: no
 * buffer is posted, nothing is in flight.
 */
int ipoib_ib_resize(struct ipoib_dev_priv *priv, unsigned int rx,
		    unsigned int tx)
{
	unsigned int max = rounddown_pow_of_two(priv->ca->attrs.max_qp_wr);
	struct ipoib_rx_buf *rx_ring;
	struct ipoib_tx_buf *tx_ring;

	if (rx > max || tx > max) {
		netdev_info(priv->dev, "rings %u/%u cut to the HCA's %u\n",
			    rx, tx, max);
		rx = min(rx, max);
		tx = min(tx, max);
	}
	rx_ring = kvcalloc(rx, sizeof(*rx_ring), GFP_KERNEL);
	tx_ring = kvcalloc(tx, sizeof(*tx_ring), GFP_KERNEL);
	if (!rx_ring || !tx_ring) {
		kvfree(rx_ring);
		kvfree(tx_ring);
		return -ENOMEM;
	}
	kvfree(priv->rx_ring);
	kvfree(priv->tx_ring);
	priv->rx_ring = rx_ring;
	priv->tx_ring = tx_ring;
	priv->rx_ring_size = rx;
	priv->tx_ring_size = tx;
	return 0;
}

/* Create PD, CQs and the UD QP. The QP stays in RESET until ipoib_ib_start. */
int ipoib_ib_init(struct ipoib_dev_priv *priv)
{
	int ret;

	ret = ipoib_ib_resize(priv, ipoib_recvq_size, ipoib_sendq_size);
	if (ret)
		return ret;

	priv->pd = ib_alloc_pd(priv->ca, 0);
	if (IS_ERR(priv->pd)) {
		ret = PTR_ERR(priv->pd);
		goto err_free_rings;
	}

	ret = ipoib_ib_create_qp(priv);
	if (ret)
		goto err_dealloc_pd;

	ipoib_ib_set_features(priv);
	netif_napi_add(priv->dev, &priv->rx_napi, ipoib_rx_poll);
	netif_napi_add_tx(priv->dev, &priv->tx_napi, ipoib_tx_poll);
	return 0;

err_dealloc_pd:
	ib_dealloc_pd(priv->pd);
err_free_rings:
	kvfree(priv->tx_ring);
	kvfree(priv->rx_ring);
	priv->tx_ring = NULL;
	priv->rx_ring = NULL;
	return ret;
}

void ipoib_ib_cleanup(struct ipoib_dev_priv *priv)
{
	netif_napi_del(&priv->tx_napi);
	netif_napi_del(&priv->rx_napi);
	ipoib_ib_destroy_qp(priv);
	ib_dealloc_pd(priv->pd);
	kvfree(priv->tx_ring);
	kvfree(priv->rx_ring);
}
