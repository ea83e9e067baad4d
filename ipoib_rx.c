// SPDX-License-Identifier: GPL-2.0
/*
 * The UD receive path of one interface: the receive ring's buffers, their
 * completions, the frames they become (own multicast dropped, the sender's
 * LID noted for its path) and the receive NAPI. ipoib_ib.c owns the QP and
 * the CQs they come from.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/ipv6.h>
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

struct sk_buff *ipoib_rx_alloc(struct ipoib_dev_priv *priv, gfp_t gfp,
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

int ipoib_rx_post(struct ipoib_dev_priv *priv, unsigned int i)
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

void ipoib_rx_free_buf(struct ipoib_dev_priv *priv, unsigned int i)
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
void ipoib_rx_complete(struct ipoib_dev_priv *priv, struct ib_wc *wc)
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

int ipoib_rx_poll(struct napi_struct *napi, int budget)
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
