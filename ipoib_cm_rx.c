// SPDX-License-Identifier: GPL-2.0
/*
 * Connected mode, passive side (RFC 4755): the connections peers make to
 * our listener, their receive buffers (on the SRQ, or a ring of each
 * connection's own), their receive completions, and how a passive QP is
 * drained and freed. ipoib_cm.c says how the pieces fit and which locks
 * protect what.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <rdma/ib_cm.h>
#include "ipoib.h"
#include "ipoib_cm.h"

/*
 * A passive connection that received nothing for this long is closed: its
 * peer may be gone without a DREQ (crashed, cable pulled). A live peer
 * just connects again.
 */
static unsigned int ipoib_cm_rx_idle = 512;
module_param_named(cm_rx_idle, ipoib_cm_rx_idle, uint, 0644);
MODULE_PARM_DESC(cm_rx_idle,
		 "Seconds without traffic after which a passive connection is closed (default: 512, 0: never)");

/* Receive buffers */

static void ipoib_cm_buf_free(struct ipoib_cm *cm, struct ipoib_cm_rx_buf *buf)
{
	struct ib_device *ca = cm->priv->ca;
	unsigned int i;

	for (i = 0; i < cm->nsge; i++) {
		if (!buf->page[i])
			continue;
		ib_dma_unmap_page(ca, buf->dma[i], PAGE_SIZE, DMA_FROM_DEVICE);
		__free_page(buf->page[i]);
		buf->page[i] = NULL;
	}
	buf->posted = false;
}

static int ipoib_cm_page_alloc(struct ipoib_cm *cm, gfp_t gfp,
			       struct page **page, u64 *dma)
{
	struct ib_device *ca = cm->priv->ca;

	*page = alloc_page(gfp);
	if (!*page)
		return -ENOMEM;
	*dma = ib_dma_map_page(ca, *page, 0, PAGE_SIZE, DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(ca, *dma)) {
		__free_page(*page);
		*page = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int ipoib_cm_buf_alloc(struct ipoib_cm *cm, struct ipoib_cm_rx_buf *buf)
{
	unsigned int i;

	for (i = 0; i < cm->nsge; i++) {
		if (ipoib_cm_page_alloc(cm, GFP_KERNEL, &buf->page[i],
					&buf->dma[i])) {
			ipoib_cm_buf_free(cm, buf);
			return -ENOMEM;
		}
	}
	return 0;
}

/* A ring of @n buffers with their pages, or NULL. */
struct ipoib_cm_rx_buf *ipoib_cm_ring_alloc(struct ipoib_cm *cm,
					    unsigned int n)
{
	struct ipoib_cm_rx_buf *ring;
	unsigned int i;

	ring = kvcalloc(n, sizeof(*ring), GFP_KERNEL);
	if (!ring)
		return NULL;
	for (i = 0; i < n; i++) {
		if (ipoib_cm_buf_alloc(cm, &ring[i])) {
			while (i--)
				ipoib_cm_buf_free(cm, &ring[i]);
			kvfree(ring);
			return NULL;
		}
	}
	return ring;
}

void ipoib_cm_ring_free(struct ipoib_cm *cm,
			struct ipoib_cm_rx_buf *ring, unsigned int n)
{
	unsigned int i;

	if (!ring)
		return;
	for (i = 0; i < n; i++)
		ipoib_cm_buf_free(cm, &ring[i]);
	kvfree(ring);
}

static void ipoib_cm_buf_sges(struct ipoib_cm *cm,
			      const struct ipoib_cm_rx_buf *buf,
			      struct ib_sge *sge)
{
	unsigned int i;

	for (i = 0; i < cm->nsge; i++) {
		sge[i].addr = buf->dma[i];
		sge[i].length = PAGE_SIZE;
		sge[i].lkey = cm->priv->pd->local_dma_lkey;
	}
}

/* Post buffer @i of @rx's ring, or of the SRQ when @rx is NULL. */
int ipoib_cm_post_recv(struct ipoib_cm *cm, struct ipoib_cm_rx *rx,
		       unsigned int i)
{
	struct ipoib_cm_rx_buf *buf = rx ? &rx->ring[i] : &cm->srq_ring[i];
	struct ib_sge sge[IPOIB_CM_SGE];
	struct ib_recv_wr wr = {
		.wr_id = IPOIB_CM_WR_RECV | i,
		.sg_list = sge,
		.num_sge = cm->nsge,
	};
	int ret;

	ipoib_cm_buf_sges(cm, buf, sge);
	buf->posted = true;
	if (rx) {
		rx->posted++;
		ret = ib_post_recv(rx->qp, &wr, NULL);
		if (ret)
			rx->posted--;
	} else {
		ret = ib_post_srq_recv(cm->srq, &wr, NULL);
	}
	if (ret)
		buf->posted = false;
	return ret;
}

/* Passive side */

static void ipoib_cm_rx_post_drain(struct ipoib_cm_rx *rx)
{
	struct ib_send_wr wr = {
		.wr_id = IPOIB_CM_WR_DRAIN,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};

	unsigned long flags;

	/* On a QP in ERR it completes, flushed, after all the QP's others. */
	if (!ib_post_send(rx->qp, &wr, NULL))
		return;
	netdev_warn(rx->cm->priv->dev,
		    "cannot post the drain of a passive connection\n");
	spin_lock_irqsave(&rx->cm->lock, flags);
	rx->cm->drains--;
	spin_unlock_irqrestore(&rx->cm->lock, flags);
}

/*
 * @rx may drain now (cm->lock held): true if the caller must post its drain
 * once the lock is dropped. At most IPOIB_CM_MAX_DRAINS are in flight, so
 * the CQ holds them all whatever the number of connections; the others
 * wait for ipoib_cm_drain_done().
 */
static bool ipoib_cm_rx_want_drain(struct ipoib_cm_rx *rx)
{
	struct ipoib_cm *cm = rx->cm;

	lockdep_assert_held(&cm->lock);
	if (rx->drain_posted)
		return false;
	rx->drain_ready = true;
	if (cm->drains >= IPOIB_CM_MAX_DRAINS)
		return false;
	cm->drains++;
	rx->drain_posted = true;
	return true;
}

/* A drain completed (NAPI): the next waiting connection gets its slot. */
void ipoib_cm_drain_done(struct ipoib_cm *cm)
{
	struct ipoib_cm_rx *rx, *next = NULL;
	unsigned long flags;

	spin_lock_irqsave(&cm->lock, flags);
	cm->drains--;
	list_for_each_entry(rx, &cm->rx_list, list) {
		if (rx->drain_ready && ipoib_cm_rx_want_drain(rx)) {
			next = rx;
			break;
		}
	}
	spin_unlock_irqrestore(&cm->lock, flags);
	if (next)
		ipoib_cm_rx_post_drain(next);
}

/*
 * Claim a live passive connection for shutting down (cm->lock held): true
 * if the caller must go on with ipoib_cm_rx_to_err(). Until then it
 * cannot drain, so it cannot be freed.
 */
bool ipoib_cm_rx_claim(struct ipoib_cm_rx *rx)
{
	lockdep_assert_held(&rx->cm->lock);
	if (rx->state != IPOIB_CM_RX_LIVE)
		return false;
	rx->state = IPOIB_CM_RX_DRAINING;
	rx->err_at = jiffies;
	return true;
}

/* A claimed connection: ERR, then the drain (cm->lock not held). */
void ipoib_cm_rx_to_err(struct ipoib_cm_rx *rx)
{
	struct ipoib_cm *cm = rx->cm;
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	unsigned long flags;
	bool drain;

	if (ib_modify_qp(rx->qp, &attr, IB_QP_STATE))
		netdev_warn(cm->priv->dev,
			    "cannot move a passive connection to error\n");
	/*
	 * With an SRQ the QP may still be taking a WQE from it until the HCA
	 * says it took its last one (ipoib_cm_rx_event); its own ring is
	 * flushed now.
	 */
	spin_lock_irqsave(&cm->lock, flags);
	drain = !cm->srq && ipoib_cm_rx_want_drain(rx);
	spin_unlock_irqrestore(&cm->lock, flags);
	if (drain)
		ipoib_cm_rx_post_drain(rx);
}

/* Stop receiving on @rx, if no one else does (cm->lock not held). */
static void ipoib_cm_rx_shutdown(struct ipoib_cm_rx *rx)
{
	unsigned long flags;
	bool mine;

	spin_lock_irqsave(&rx->cm->lock, flags);
	mine = ipoib_cm_rx_claim(rx);
	spin_unlock_irqrestore(&rx->cm->lock, flags);
	if (mine)
		ipoib_cm_rx_to_err(rx);
}

/*
 * QP events of a passive connection: any context. Last WQE Reached comes
 * once, as the QP enters ERR. Usually we moved it there (DRAINING); but it
 * may have gone by itself while LIVE (the peer's RDMA WRITE or oversized
 * SEND, a QP fatal error): then nothing will ever come through it again,
 * and no second event will come when we move it ERR -> ERR, so it is
 * claimed and drained now, or it would never drain (review 2026-12,
 * finding 4). cm->work destroys its cm_id (ib_cm tells the peer).
 */
static void ipoib_cm_rx_event(struct ib_event *event, void *ctx)
{
	struct ipoib_cm_rx *rx = ctx;
	struct ipoib_cm *cm = rx->cm;
	unsigned long flags;
	bool drain = false;

	if (event->event != IB_EVENT_QP_LAST_WQE_REACHED)
		return;
	spin_lock_irqsave(&cm->lock, flags);
	if (ipoib_cm_rx_claim(rx))
		ipoib_dbg(cm->priv->dev,
			  "a passive connection's QP went to error by itself\n");
	if (rx->state == IPOIB_CM_RX_DRAINING)
		drain = ipoib_cm_rx_want_drain(rx);
	spin_unlock_irqrestore(&cm->lock, flags);
	if (drain)
		ipoib_cm_rx_post_drain(rx);
}

static struct ib_qp *ipoib_cm_rx_qp(struct ipoib_cm *cm,
				    struct ipoib_cm_rx *rx)
{
	struct ib_qp_init_attr attr = {
		.event_handler = ipoib_cm_rx_event,
		.qp_context = rx,
		.send_cq = cm->cq,
		.recv_cq = cm->cq,
		.srq = cm->srq,
		.cap.max_send_wr = 1,	/* the drain */
		.cap.max_send_sge = 1,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = IB_QPT_RC,
	};

	if (!cm->srq) {
		attr.cap.max_recv_wr = IPOIB_CM_RING_SIZE;
		attr.cap.max_recv_sge = cm->nsge;
	}
	return ib_create_qp(cm->priv->pd, &attr);
}

void ipoib_cm_rx_free(struct ipoib_cm_rx *rx)
{
	if (rx->qp)
		ib_destroy_qp(rx->qp);
	ipoib_cm_ring_free(rx->cm, rx->ring, IPOIB_CM_RING_SIZE);
	kfree(rx);
}

/* A REQ on our listener (ib_cm's work): accept it, or refuse. */
static int ipoib_cm_req(struct ipoib_cm *cm, struct ib_cm_id *id,
			const struct ib_cm_event *event)
{
	struct ipoib_dev_priv *priv = cm->priv;
	struct ib_cm_rep_param rep = {};
	struct ipoib_cm_data data;
	struct sa_path_rec *path;
	struct ipoib_cm_rx *rx;
	unsigned long flags;
	unsigned int i, max;
	u16 pkey;
	u32 psn;
	int ret;

	if (!ipoib_cm_peer_mtu(event->private_data)) {
		ipoib_dbg(priv->dev, "REQ with a receive size below %u: refused\n",
			  IPOIB_ENCAP_LEN + IPV6_MIN_MTU);
		return -EINVAL;
	}
	/*
	 * The service ID names the interface, the path its partition: a
	 * REQ over another P_Key of the port comes from a host that is not
	 * a member of ours (review 2026-12, finding 13). The membership bit
	 * may differ (a limited member talks to a full one).
	 */
	path = event->param.req_rcvd.primary_path;
	pkey = be16_to_cpu(path->pkey);
	if ((pkey ^ READ_ONCE(priv->pkey)) & ~IPOIB_PKEY_FULL) {
		ipoib_warn_ratelimited(priv, IPOIB_RL_CM,
				       "connection from %pI6 over P_Key 0x%04x refused: not ours\n",
				       path->dgid.raw, pkey);
		return -EINVAL;
	}
	/*
	 * ib_cm turned the REQ's path around: its destination is the peer,
	 * at the LID it has now. A peer whose LID moved connects again from
	 * there, and our own path to it may still hold the old one; on the
	 * HCA's datapath this is the only frame that tells us (no UD work
	 * completion, so no SLID, reaches us there).
	 */
	if (path->dgid.global.subnet_prefix ==
	    priv->local_gid.global.subnet_prefix) {
		local_bh_disable();
		ipoib_path_check_slid(priv, &path->dgid,
				      be32_to_cpu(sa_path_get_dlid(path)));
		local_bh_enable();
	}
	rx = kzalloc(sizeof(*rx), GFP_KERNEL);
	if (!rx)
		return -ENOMEM;
	rx->cm = cm;
	rx->id = id;
	rx->last_used = jiffies;
	INIT_LIST_HEAD(&rx->list);

	max = cm->max_rx;
	spin_lock_irqsave(&cm->lock, flags);
	ret = cm->stopping ? -ENETDOWN : cm->nr_rx >= max ? -EBUSY : 0;
	if (!ret) {
		cm->nr_rx++;
		list_add(&rx->list, &cm->rx_list);
	}
	spin_unlock_irqrestore(&cm->lock, flags);
	if (ret) {
		if (ret == -EBUSY)
			ipoib_warn_ratelimited(priv, IPOIB_RL_CM,
					       "connection from %pI6 refused: %u passive connections\n",
					       path->dgid.raw,
					       max);
		kfree(rx);
		return ret;
	}

	rx->qp = ipoib_cm_rx_qp(cm, rx);
	if (IS_ERR(rx->qp)) {
		ret = PTR_ERR(rx->qp);
		rx->qp = NULL;
		goto err;
	}
	if (!cm->srq) {
		rx->ring = ipoib_cm_ring_alloc(cm, IPOIB_CM_RING_SIZE);
		ret = -ENOMEM;
		if (!rx->ring)
			goto err;
	}
	psn = get_random_u32() & 0xffffff;
	/*
	 * ib_cm has the REP's starting PSN, which is what the peer sends
	 * from, only once the REP is sent: after this.
	 */
	ret = ipoib_cm_qp_up(rx->id, rx->qp, IB_QPS_INIT, &psn);
	if (ret)
		goto err;
	for (i = 0; rx->ring && i < IPOIB_CM_RING_SIZE; i++) {
		ret = ipoib_cm_post_recv(cm, rx, i);
		if (ret)
			goto err;
	}

	ipoib_cm_fill_data(cm, &data);
	rep.qp_num = rx->qp->qp_num;
	rep.starting_psn = psn;
	rep.private_data = &data;
	rep.private_data_len = sizeof(data);
	rep.rnr_retry_count = IPOIB_CM_RETRIES;
	rep.srq = !!cm->srq;
	id->context = rx;
	id->cm_handler = ipoib_cm_rx_handler;
	ret = ib_send_cm_rep(id, &rep);
	if (ret) {
		id->context = cm;
		goto err;
	}
	ipoib_dbg(priv->dev, "passive connection from qpn 0x%06x accepted\n",
		  event->param.req_rcvd.remote_qpn);
	return 0;

err:
	netdev_warn(priv->dev, "cannot accept a connection: %d\n", ret);
	spin_lock_irqsave(&cm->lock, flags);
	list_del(&rx->list);
	cm->nr_rx--;
	spin_unlock_irqrestore(&cm->lock, flags);
	if (rx->qp && rx->posted) {
		/* posted buffers: the QP owns them until they are flushed */
		rx->id = NULL;
		ipoib_cm_rx_shutdown(rx);
		spin_lock_irqsave(&cm->lock, flags);
		list_add(&rx->list, &cm->rx_list);
		cm->nr_rx++;
		spin_unlock_irqrestore(&cm->lock, flags);
		return ret;	/* ib_cm destroys @id and sends the REJ */
	}
	ipoib_cm_rx_free(rx);
	return ret;
}

/*
 * ib_cm events of the listener and of the passive connections. The two
 * kinds of event that make a new cm_id carry the listener's context (our
 * struct ipoib_cm); every other one belongs to an id we accepted, whose
 * context is its struct ipoib_cm_rx.
 */
int ipoib_cm_rx_handler(struct ib_cm_id *id,
			const struct ib_cm_event *event)
{
	struct ipoib_cm_rx *rx;
	struct ipoib_cm *cm;

	switch (event->event) {
	case IB_CM_REQ_RECEIVED:
		return ipoib_cm_req(id->context, id, event);
	case IB_CM_SIDR_REQ_RECEIVED:
		/*
		 * RFC 4755 has no datagram service on this ID. Non-zero:
		 * ib_cm answers with a SIDR REJECT and frees the id, which
		 * would otherwise wait for our reply for ever.
		 */
		cm = id->context;
		atomic_long_inc(&cm->priv->counters[IPOIB_CTR_CM_SIDR_REFUSED]);
		ipoib_warn_ratelimited(cm->priv, IPOIB_RL_CM,
				       "SIDR REQ for the connected-mode service ID refused\n");
		return -EINVAL;
	default:
		break;
	}

	rx = id->context;
	ipoib_dbg(rx->cm->priv->dev, "passive %p: %s\n", rx,
		  ipoib_cm_event_name(event->event));
	switch (event->event) {
	case IB_CM_RTU_RECEIVED:
		break;
	case IB_CM_DREQ_RECEIVED:
		ib_send_cm_drep(id, NULL, 0);
		ipoib_cm_rx_shutdown(rx);
		break;
	case IB_CM_REJ_RECEIVED:
	case IB_CM_REP_ERROR:
	case IB_CM_DREQ_ERROR:
	case IB_CM_TIMEWAIT_EXIT:
		ipoib_cm_rx_shutdown(rx);
		break;
	default:
		break;
	}
	return 0;
}

/* Close the passive connections idle for cm_rx_idle seconds. */
void ipoib_cm_reap(struct work_struct *work)
{
	struct ipoib_cm *cm = container_of(to_delayed_work(work),
					   struct ipoib_cm, reap_work);
	unsigned int idle_s = READ_ONCE(ipoib_cm_rx_idle);
	unsigned long idle = idle_s * HZ, flags;
	struct ipoib_cm_rx *rx, *found;

	if (!idle_s)
		goto again;
	do {
		found = NULL;
		spin_lock_irqsave(&cm->lock, flags);
		list_for_each_entry(rx, &cm->rx_list, list) {
			if (rx->state == IPOIB_CM_RX_LIVE &&
			    time_after(jiffies, READ_ONCE(rx->last_used) + idle) &&
			    ipoib_cm_rx_claim(rx)) {
				found = rx;
				break;
			}
		}
		spin_unlock_irqrestore(&cm->lock, flags);
		if (found) {
			ipoib_dbg(cm->priv->dev,
				  "passive connection idle for %u s: closed\n",
				  idle_s);
			/* ERR now; the drained QP and its id go in cm->work */
			ipoib_cm_rx_to_err(found);
		}
	} while (found);
again:
	/* a new cm_rx_idle takes effect within 10 s */
	queue_delayed_work(system_wq, &cm->reap_work,
			   clamp_t(unsigned long, idle / 2, HZ, 10 * HZ));
}

/* Completions */

static void ipoib_cm_rx_deliver(struct ipoib_cm *cm, struct sk_buff *skb)
{
	struct ipoib_dev_priv *priv = cm->priv;
	struct net_device *dev = priv->dev;
	struct ipoib_encap *encap = (struct ipoib_encap *)skb->data;

	skb->protocol = encap->proto;
	skb->pkt_type = PACKET_HOST;
	/* the link-layer header taps see: zeroed pseudo header + encap */
	memset(skb_push(skb, IPOIB_PSEUDO_LEN), 0, IPOIB_PSEUDO_LEN);
	skb_reset_mac_header(skb);
	skb_pull(skb, IPOIB_HARD_LEN);
	skb_reset_network_header(skb);
	skb->dev = dev;
	skb_record_rx_queue(skb, 0);

	u64_stats_update_begin(&priv->cm_rx_stats.syncp);
	u64_stats_inc(&priv->cm_rx_stats.packets);
	u64_stats_add(&priv->cm_rx_stats.bytes, skb->len);
	u64_stats_update_end(&priv->cm_rx_stats.syncp);
	napi_gro_receive(&cm->napi, skb);
}

static void ipoib_cm_rx_count(struct ipoib_dev_priv *priv, u64_stats_t *ctr)
{
	u64_stats_update_begin(&priv->cm_rx_stats.syncp);
	u64_stats_inc(ctr);
	u64_stats_update_end(&priv->cm_rx_stats.syncp);
}

/*
 * Make an skb of a received message of @len bytes in @buf: small ones are
 * copied (the buffer stays), bigger ones take the used pages as frags
 * (replaced by new ones) after a copy of the headers. NULL: no memory,
 * the buffer stays as it was.
 */
static struct sk_buff *ipoib_cm_rx_skb(struct ipoib_cm *cm,
				       struct ipoib_cm_rx_buf *buf,
				       unsigned int len)
{
	struct ib_device *ca = cm->priv->ca;
	unsigned int i, n, head = min_t(unsigned int, len, IPOIB_CM_HEAD);
	struct page *page[IPOIB_CM_SGE];
	u64 dma[IPOIB_CM_SGE];
	struct sk_buff *skb;

	if (len <= IPOIB_CM_COPYBREAK)
		head = len;
	skb = napi_alloc_skb(&cm->napi, head);
	if (!skb)
		return NULL;
	ib_dma_sync_single_for_cpu(ca, buf->dma[0], head, DMA_FROM_DEVICE);
	skb_put_data(skb, page_address(buf->page[0]), head);
	ib_dma_sync_single_for_device(ca, buf->dma[0], head, DMA_FROM_DEVICE);
	if (len == head)
		return skb;

	n = DIV_ROUND_UP(len, PAGE_SIZE);
	for (i = 0; i < n; i++) {
		if (ipoib_cm_page_alloc(cm, GFP_ATOMIC, &page[i], &dma[i])) {
			while (i--) {
				ib_dma_unmap_page(ca, dma[i], PAGE_SIZE,
						  DMA_FROM_DEVICE);
				__free_page(page[i]);
			}
			dev_kfree_skb_any(skb);
			return NULL;
		}
	}
	for (i = 0; i < n; i++) {
		unsigned int off = i ? 0 : head;
		unsigned int end = min_t(unsigned int, len - i * PAGE_SIZE,
					 PAGE_SIZE);

		ib_dma_unmap_page(ca, buf->dma[i], PAGE_SIZE, DMA_FROM_DEVICE);
		if (end > off)
			skb_add_rx_frag(skb, skb_shinfo(skb)->nr_frags,
					buf->page[i], off, end - off, PAGE_SIZE);
		else
			__free_page(buf->page[i]);
		buf->page[i] = page[i];
		buf->dma[i] = dma[i];
	}
	return skb;
}

/* rx->posted and the drain say whether a draining QP is done. */
void ipoib_cm_rx_check_drained(struct ipoib_cm *cm,
			       struct ipoib_cm_rx *rx)
{
	unsigned long flags;
	bool done = false;

	spin_lock_irqsave(&cm->lock, flags);
	if (rx->state == IPOIB_CM_RX_DRAINING && rx->drain_done &&
	    !rx->posted) {
		rx->state = IPOIB_CM_RX_DRAINED;
		done = true;
	}
	spin_unlock_irqrestore(&cm->lock, flags);
	if (done) {
		ipoib_cm_kick(cm);
		wake_up(&cm->wait);
	}
}

void ipoib_cm_rx_wc(struct ipoib_cm *cm, struct ib_wc *wc)
{
	struct ipoib_dev_priv *priv = cm->priv;
	struct ipoib_cm_rx *rx = wc->qp->qp_context;
	unsigned int i = wc->wr_id & ~IPOIB_CM_WR_KIND;
	unsigned int size = cm->srq ? cm->srq_size : IPOIB_CM_RING_SIZE;
	struct ipoib_cm_rx_buf *buf;
	struct sk_buff *skb;

	if (unlikely(i >= size)) {
		ipoib_err_ratelimited(priv, IPOIB_RL_BOGUS_WC,
				      "bogus RC receive completion %llx\n",
				      wc->wr_id);
		return;
	}
	buf = cm->srq ? &cm->srq_ring[i] : &rx->ring[i];
	buf->posted = false;
	if (!cm->srq)
		rx->posted--;

	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		if (wc->status != IB_WC_WR_FLUSH_ERR) {
			ipoib_dbg(priv->dev, "RC receive error status %d\n",
				  wc->status);
			ipoib_cm_rx_count(priv, &priv->cm_rx_stats.errors);
		}
		if (cm->srq && !cm->stopping)
			goto repost;	/* SRQ buffers outlive the QP */
		if (!cm->srq)
			ipoib_cm_rx_check_drained(cm, rx);
		return;
	}
	ipoib_touch(&rx->last_used);
	if (unlikely(wc->byte_len < IPOIB_ENCAP_LEN + 1 ||
		     wc->byte_len > IPOIB_CM_BUF_SIZE)) {
		ipoib_cm_rx_count(priv, &priv->cm_rx_stats.length_errors);
		goto repost;
	}
	skb = ipoib_cm_rx_skb(cm, buf, wc->byte_len);
	if (unlikely(!skb)) {
		ipoib_cm_rx_count(priv, &priv->cm_rx_stats.dropped);
		goto repost;
	}
	ipoib_cm_rx_deliver(cm, skb);

repost:
	if (!cm->srq && READ_ONCE(rx->state) != IPOIB_CM_RX_LIVE) {
		ipoib_cm_rx_check_drained(cm, rx);
		return;
	}
	if (unlikely(ipoib_cm_post_recv(cm, cm->srq ? NULL : rx, i)))
		ipoib_warn_ratelimited(priv, IPOIB_RL_POST_RECV,
				       "RC receive post failed\n");
}

