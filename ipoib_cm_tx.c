// SPDX-License-Identifier: GPL-2.0
/*
 * Connected mode, active side (RFC 4755): the connection we make to a peer
 * for its neighbour entry, its send ring and backlog, and the transmit
 * path that chooses between it and UD. ipoib_cm.c says how the pieces fit
 * and which locks protect what.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/random.h>
#include <linux/seq_file.h>
#include <net/dst.h>
#include <rdma/ib_cm.h>
#include "ipoib.h"
#include "ipoib_cm.h"

/* Active side */

/*
 * Close @tx: cm->work releases it, and the next packet for its neighbour
 * connects again at tx->retry_at. @backoff: the connection's own failure,
 * counted for the back-off; without, the next packet may connect at once.
 */
static void __ipoib_cm_tx_fail(struct ipoib_cm_tx *tx, const char *why,
			       bool backoff)
{
	struct ipoib_cm *cm = tx->cm;
	unsigned long flags;
	unsigned int fails;
	bool was;

	spin_lock_irqsave(&cm->lock, flags);
	was = tx->state != IPOIB_CM_TX_FAILED;
	if (was && !backoff) {
		tx->retry_at = jiffies;
		WRITE_ONCE(tx->state, IPOIB_CM_TX_FAILED);
	} else if (was) {
		/*
		 * A connection that worked is made again by the next packet;
		 * one the peer refused or never answered, or one that failed
		 * again before a send got through, after a pause that doubles
		 * with each failure in a row (a dead peer costs a REQ a
		 * minute, not one every two seconds).
		 */
		fails = READ_ONCE(tx->fails);	/* NAPI clears it */
		tx->retry_at = jiffies;
		if (tx->state != IPOIB_CM_TX_UP || fails)
			tx->retry_at += IPOIB_CM_RETRY_DELAY <<
					min(fails, IPOIB_CM_BACKOFF_MAX);
		WRITE_ONCE(tx->fails, fails + 1);
		WRITE_ONCE(tx->state, IPOIB_CM_TX_FAILED);
	}
	spin_unlock_irqrestore(&cm->lock, flags);
	if (!was)
		return;
	ipoib_dbg(cm->priv->dev, "connection to qpn 0x%06x closed: %s\n",
		  tx->dqpn, why);
	ipoib_cm_kick(cm);
}

void ipoib_cm_tx_fail(struct ipoib_cm_tx *tx, const char *why)
{
	__ipoib_cm_tx_fail(tx, why, true);
}

static int ipoib_cm_tx_rep(struct ipoib_cm_tx *tx, const struct ib_cm_event *event)
{
	struct ipoib_cm *cm = tx->cm;
	struct sk_buff_head queue;
	struct sk_buff *skb;
	unsigned long flags;
	u32 mtu;
	int ret;

	mtu = ipoib_cm_peer_mtu(event->private_data);
	if (!mtu)
		return -EINVAL;
	tx->mtu = mtu;

	ret = ipoib_cm_qp_up(tx->id, tx->qp, IB_QPS_RTR, NULL);
	if (ret)
		return ret;
	ret = ib_send_cm_rtu(tx->id, NULL, 0);
	if (ret)
		return ret;

	__skb_queue_head_init(&queue);
	spin_lock_irqsave(&cm->lock, flags);
	if (tx->state == IPOIB_CM_TX_CONNECTING) {
		/* tx->mtu and the QP in RTS before xmit sees UP */
		smp_store_release(&tx->state, IPOIB_CM_TX_UP);
		skb_queue_splice_init(&tx->queue, &queue);
	}
	spin_unlock_irqrestore(&cm->lock, flags);
	ipoib_dbg(cm->priv->dev, "connected to qpn 0x%06x, peer receives %u\n",
		  tx->dqpn, mtu);
	/* through the qdisc again, in the form ndo_start_xmit takes */
	while ((skb = __skb_dequeue(&queue)))
		ipoib_requeue_xmit(cm->priv, skb);
	return 0;
}

static int ipoib_cm_tx_handler(struct ib_cm_id *id,
			       const struct ib_cm_event *event)
{
	struct ipoib_cm_tx *tx = id->context;
	int ret;

	ipoib_dbg(tx->cm->priv->dev, "to qpn 0x%06x: %s\n", tx->dqpn,
		  ipoib_cm_event_name(event->event));
	switch (event->event) {
	case IB_CM_REP_RECEIVED:
		ret = ipoib_cm_tx_rep(tx, event);
		if (ret) {
			ib_send_cm_rej(id, IB_CM_REJ_CONSUMER_DEFINED, NULL, 0,
				       NULL, 0);
			ipoib_cm_tx_fail(tx, "bad REP");
		}
		break;
	case IB_CM_DREQ_RECEIVED:
		ib_send_cm_drep(id, NULL, 0);
		ipoib_cm_tx_fail(tx, "peer disconnected");
		break;
	case IB_CM_REQ_ERROR:
		local_bh_disable();
		ipoib_path_suspect(tx->cm->priv, &tx->rec.dgid);
		local_bh_enable();
		ipoib_cm_tx_fail(tx, "no answer");
		break;
	case IB_CM_REJ_RECEIVED:
		ipoib_cm_tx_fail(tx, "refused");
		break;
	case IB_CM_DREQ_ERROR:
	case IB_CM_TIMEWAIT_EXIT:
		ipoib_cm_tx_fail(tx, "closed");
		break;
	default:
		break;
	}
	return 0;
}

/*
 * Affiliated errors of an active connection's QP (any context): the QP is
 * in error and will never send again; the connection is made anew.
 */
static void ipoib_cm_tx_event(struct ib_event *event, void *ctx)
{
	struct ipoib_cm_tx *tx = ctx;

	switch (event->event) {
	case IB_EVENT_QP_FATAL:
	case IB_EVENT_QP_REQ_ERR:
	case IB_EVENT_QP_ACCESS_ERR:
		ipoib_cm_tx_fail(tx, "QP error event");
		break;
	default:
		break;
	}
}

/* cm->work: make the QP and send the REQ. */
int ipoib_cm_tx_connect(struct ipoib_cm_tx *tx)
{
	struct ipoib_cm *cm = tx->cm;
	struct ipoib_dev_priv *priv = cm->priv;
	struct ib_qp_init_attr init = {
		.send_cq = cm->cq,
		.recv_cq = cm->cq,
		.cap.max_send_wr = IPOIB_CM_TX_RING,
		.cap.max_send_sge = min_t(u32, priv->ca->attrs.max_send_sge,
					  IPOIB_MAX_TX_SGE),
		.cap.max_recv_wr = 1,
		.cap.max_recv_sge = 1,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.qp_type = IB_QPT_RC,
		.event_handler = ipoib_cm_tx_event,
		.qp_context = tx,
	};
	struct ib_cm_req_param req = {};
	struct ib_qp_attr attr = {};
	struct ipoib_cm_data data;
	struct ib_cm_id *id;
	struct ib_qp *qp;
	int ret;

	tx->ring = kvcalloc(IPOIB_CM_TX_RING, sizeof(*tx->ring), GFP_KERNEL);
	if (!tx->ring)
		return -ENOMEM;
	qp = ib_create_qp(priv->pd, &init);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	tx->qp = qp;
	tx->max_send_sge = min_t(u32, init.cap.max_send_sge, IPOIB_MAX_TX_SGE);
	id = ib_create_cm_id(priv->ca, ipoib_cm_tx_handler, tx);
	if (IS_ERR(id))
		return PTR_ERR(id);
	tx->id = id;

	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = priv->pkey_index;
	attr.port_num = priv->port;
	attr.qp_access_flags = 0;
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (ret)
		return ret;

	ipoib_cm_fill_data(cm, &data);
	req.primary_path = &tx->rec;
	req.service_id = cpu_to_be64(IPOIB_CM_IETF_ID | tx->dqpn);
	req.qp_num = qp->qp_num;
	req.qp_type = IB_QPT_RC;
	req.starting_psn = get_random_u32() & 0xffffff;
	req.private_data = &data;
	req.private_data_len = sizeof(data);
	req.remote_cm_response_timeout = 20;
	req.local_cm_response_timeout = 20;
	req.retry_count = IPOIB_CM_RETRIES;
	req.rnr_retry_count = IPOIB_CM_RETRIES;
	req.max_cm_retries = 15;
	return ib_send_cm_req(id, &req);
}

/*
 * Send @wr_id of @tx completed with @status: from a work completion, or
 * by hand (IB_WC_WR_FLUSH_ERR) for what a destroyed QP never completed.
 */
static void ipoib_cm_tx_complete(struct ipoib_cm_tx *tx, u64 wr_id,
				 enum ib_wc_status status)
{
	struct ipoib_cm *cm = tx->cm;
	struct ipoib_dev_priv *priv = cm->priv;
	struct ipoib_tx_buf *buf = &tx->ring[wr_id & (IPOIB_CM_TX_RING - 1)];

	if (unlikely(!buf->skb)) {
		ipoib_err_ratelimited(priv, IPOIB_RL_BOGUS_WC,
				      "bogus RC send completion %llx\n", wr_id);
		return;
	}
	ipoib_tx_unmap(priv, buf, skb_shinfo(buf->skb)->nr_frags);
	/*
	 * A flush counts as neither sent nor failed; and the stats have one
	 * writer, NAPI, which the by-hand flush (cm->work) is not.
	 */
	if (status != IB_WC_WR_FLUSH_ERR) {
		u64_stats_update_begin(&priv->cm_tx_stats.syncp);
		if (likely(status == IB_WC_SUCCESS)) {
			u64_stats_inc(&priv->cm_tx_stats.packets);
			u64_stats_add(&priv->cm_tx_stats.bytes, buf->skb->len);
		} else {
			u64_stats_inc(&priv->cm_tx_stats.errors);
		}
		u64_stats_update_end(&priv->cm_tx_stats.syncp);
	}
	dev_consume_skb_any(buf->skb);
	buf->skb = NULL;

	/* RC completes in order too */
	smp_store_release(&tx->tail, tx->tail + 1);
	if (likely(status == IB_WC_SUCCESS)) {
		/* the peer is reachable: a later failure retries at once */
		if (unlikely(READ_ONCE(tx->fails)))
			WRITE_ONCE(tx->fails, 0);
	} else if (status != IB_WC_WR_FLUSH_ERR) {
		ipoib_warn_ratelimited(priv, IPOIB_RL_CM,
				       "send to qpn 0x%06x failed (status %d): reconnecting\n",
				       tx->dqpn, status);
		/* no ACK any more: has the peer moved to another LID? */
		if (status == IB_WC_RETRY_EXC_ERR)
			ipoib_path_suspect(priv, &tx->rec.dgid);
		ipoib_cm_tx_fail(tx, "send failed");
	} else if (!READ_ONCE(tx->releasing) &&
		   READ_ONCE(tx->state) == IPOIB_CM_TX_UP) {
		/*
		 * A flush we did not ask for: the QP went to error by itself
		 * (a local QP fatal error flushes every WR without an error
		 * CQE of its own). Every later send would be flushed too.
		 */
		ipoib_cm_tx_fail(tx, "QP flushed");
	}
	if (unlikely(READ_ONCE(tx->releasing))) {
		smp_mb(); /* tail before kept; pairs with ipoib_cm_tx_release() */
		/* the last late flush of a kept connection: release it now */
		if (READ_ONCE(tx->kept) && tx->tail == READ_ONCE(tx->head)) {
			WRITE_ONCE(tx->kept, false);
			ipoib_cm_kick(cm);
		}
		wake_up(&cm->wait);
	} else if (READ_ONCE(tx->state) == IPOIB_CM_TX_FAILED) {
		wake_up(&cm->wait);
	}
}

/*
 * Destroy the QP of @tx. Sends it never completed (a CQ in error reports
 * no flush) are ours then: unmapped and freed as flushed.
 */
void ipoib_cm_tx_destroy_qp(struct ipoib_cm_tx *tx)
{
	ib_destroy_qp(tx->qp);
	tx->qp = NULL;
	while (tx->tail != tx->head)
		ipoib_cm_tx_complete(tx, tx->tail, IB_WC_WR_FLUSH_ERR);
}

static struct netdev_queue *ipoib_cm_txq(struct ipoib_cm *cm)
{
	return netdev_get_tx_queue(cm->priv->dev, 0);
}

/* A packet for @tx that neither the ring nor the backlog took. */
static void ipoib_cm_tx_drop(struct ipoib_cm_tx *tx, struct sk_buff *skb)
{
	WRITE_ONCE(tx->drops, tx->drops + 1);
	ipoib_count(tx->cm->priv, IPOIB_CTR_CM_BACKLOG_DROP);
	ipoib_count_tx_drop(tx->cm->priv, skb);
}

/* cm->work: what waits behind a failed connection's ring is dropped. */
static void ipoib_cm_tx_drop_backlog(struct ipoib_cm_tx *tx)
{
	struct netdev_queue *txq = ipoib_cm_txq(tx->cm);
	struct sk_buff_head drop;
	struct sk_buff *skb;

	__skb_queue_head_init(&drop);
	__netif_tx_lock_bh(txq);
	if (!list_empty(&tx->backlogged))
		list_del_init(&tx->backlogged);
	skb_queue_splice_init(&tx->backlog, &drop);
	while ((skb = __skb_dequeue(&drop)))
		ipoib_cm_tx_drop(tx, skb);
	__netif_tx_unlock_bh(txq);
}

static bool ipoib_cm_tx_flushed(struct ipoib_cm_tx *tx)
{
	return READ_ONCE(tx->tail) == READ_ONCE(tx->head) ||
	       READ_ONCE(tx->cm->cq_error);
}

/*
 * cm->work: free what a failed or detached connection holds; false if
 * its QP is kept because its flushes are late (see below).
 */
bool ipoib_cm_tx_release(struct ipoib_cm_tx *tx)
{
	struct ipoib_cm *cm = tx->cm;
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

	ipoib_dbg(cm->priv->dev, "releasing the connection to qpn 0x%06x (state %d, %s, cm state %d)\n",
		  tx->dqpn, tx->state, tx->neigh ? "attached" : "detached",
		  tx->id ? tx->id->state : -1);
	/* An established id sends the DREQ as it goes. */
	if (tx->id) {
		ib_destroy_cm_id(tx->id);
		tx->id = NULL;
	}
	if (!tx->qp)
		return true;
	/* No xmit still posts on the QP: it saw FAILED, or no neighbour. */
	synchronize_net();
	ipoib_cm_tx_drop_backlog(tx);
	WRITE_ONCE(tx->releasing, true);
	ib_modify_qp(tx->qp, &attr, IB_QP_STATE);
	if (!wait_event_timeout(cm->wait, ipoib_cm_tx_flushed(tx),
				IPOIB_CM_DRAIN_TIMEOUT)) {
		/*
		 * A QP in error flushes every send it holds; only a CQ in
		 * error (cq_error) loses them. So cm NAPI is late (a busy
		 * CPU: 100 connections failing at once on one TCG vCPU took
		 * over 5 s) or missed its event: poll once more. Completing
		 * the ring by hand now would race that poll (a slot freed
		 * twice), and destroying the QP would leave its completions
		 * pointing to freed memory on an HCA that does not purge
		 * them. So the QP is kept until its last flush, which kicks
		 * cm->work again; ipoib_cm_stop() completes what is left once
		 * NAPI is off.
		 */
		local_bh_disable();
		napi_schedule(&cm->napi);
		local_bh_enable();
		if (!wait_event_timeout(cm->wait, ipoib_cm_tx_flushed(tx), HZ)) {
			WRITE_ONCE(tx->kept, true);
			smp_mb(); /* kept before tail; pairs with ..._complete() */
			if (!ipoib_cm_tx_flushed(tx)) {
				netdev_warn(cm->priv->dev,
					    "%u sends to qpn 0x%06x not flushed yet: its QP is kept until they are\n",
					    READ_ONCE(tx->head) - READ_ONCE(tx->tail),
					    tx->dqpn);
				return false;
			}
			/* the last flush came meanwhile and kicked the work */
			WRITE_ONCE(tx->kept, false);
		}
	}
	if (READ_ONCE(tx->tail) != READ_ONCE(tx->head))	/* cq_error */
		netdev_warn(cm->priv->dev,
			    "%u sends to qpn 0x%06x not flushed (CQ in error): freed\n",
			    READ_ONCE(tx->head) - READ_ONCE(tx->tail), tx->dqpn);
	ipoib_cm_tx_destroy_qp(tx);
	WRITE_ONCE(tx->releasing, false);
	return true;
}

void ipoib_cm_tx_free(struct ipoib_cm_tx *tx)
{
	__skb_queue_purge(&tx->queue);
	__skb_queue_purge(&tx->backlog);
	kvfree(tx->ring);
	kfree_rcu(tx, rcu);
}

/* Detach @tx from its neighbour (cm->lock held): cm->work frees it. */
void ipoib_cm_tx_detach(struct ipoib_cm_tx *tx)
{
	lockdep_assert_held(&tx->cm->lock);
	if (!tx->neigh)
		return;
	RCU_INIT_POINTER(tx->neigh->cm_tx, NULL);
	tx->neigh = NULL;
	WRITE_ONCE(tx->state, IPOIB_CM_TX_FAILED);
}

/*
 * The neighbour entry goes (priv->table_lock held, so inside an RCU read
 * section): so does its connection. An xmit may be attaching a new one to
 * it right now, under its cm->lock, from the hash lookup it made before
 * the entry was unlinked. Each side writes first and reads the other's
 * write after a full barrier: we mark the entry dead and look for a
 * connection, xmit attaches its connection and looks for the mark, so at
 * least one of the two sees the other and detaches it (under that
 * connection's cm->lock, so a detach by both is harmless). No connection
 * can then outlive the entry and write into it once it is freed.
 *
 * tx and tx->cm are alive here: tx is freed by kfree_rcu(), and the cm
 * only after ipoib_cm_stop()'s netif_napi_del(), whose synchronize_net()
 * waits for this section.
 */
void ipoib_cm_neigh_gone(struct ipoib_neigh *neigh)
{
	struct ipoib_cm_tx *tx;
	struct ipoib_cm *cm;
	unsigned long flags;

	WRITE_ONCE(neigh->dead, true);
	smp_mb();	/* pairs with ipoib_cm_xmit() */
	tx = rcu_dereference_bh(neigh->cm_tx);	/* table_lock: BHs off */
	if (!tx)
		return;
	cm = tx->cm;
	spin_lock_irqsave(&cm->lock, flags);
	if (tx->neigh == neigh)
		ipoib_cm_tx_detach(tx);
	spin_unlock_irqrestore(&cm->lock, flags);
	ipoib_cm_kick(cm);
}

/*
 * The path of @neigh leads elsewhere now (its peer's LID moved): a
 * connection made, or being made, over the old one goes nowhere, and a
 * REQ to the old LID would be retried for a minute. Close it without the
 * back-off of a refused one: the next packet connects over the new path.
 * priv->table_lock held (BHs off), as in ipoib_cm_neigh_gone().
 */
void ipoib_cm_neigh_moved(struct ipoib_neigh *neigh)
{
	struct ipoib_cm_tx *tx = rcu_dereference_bh(neigh->cm_tx);

	/* (a connection detached from @neigh is FAILED already) */
	if (tx)
		__ipoib_cm_tx_fail(tx, "the peer's LID moved", false);
}

/* Transmit */

/* Post @skb on @tx's ring, which has room (netif tx lock). */
static void ipoib_cm_post(struct ipoib_cm_tx *tx, struct sk_buff *skb)
{
	struct ipoib_dev_priv *priv = tx->cm->priv;
	unsigned int head = tx->head;
	struct ipoib_tx_buf *buf = &tx->ring[head & (IPOIB_CM_TX_RING - 1)];
	struct ib_sge sge[IPOIB_MAX_TX_SGE];
	struct ib_send_wr wr = {};
	unsigned int nsge;
	int ret;

	if (unlikely(skb_shinfo(skb)->nr_frags + 1 > tx->max_send_sge &&
		     skb_linearize(skb))) {
		ipoib_count_tx_drop(priv, skb);
		return;
	}
	buf->skb = skb;
	buf->hlen = 0;
	buf->ah = NULL;
	nsge = ipoib_tx_map(priv, buf, sge);
	if (unlikely(!nsge)) {
		buf->skb = NULL;
		ipoib_count_tx_drop(priv, skb);
		return;
	}
	wr.wr_id = IPOIB_CM_WR_SEND | head;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	skb_tx_timestamp(skb);
	skb_orphan(skb);
	skb_dst_drop(skb);
	ret = ib_post_send(tx->qp, &wr, NULL);
	if (unlikely(ret)) {
		ipoib_warn_ratelimited(priv, IPOIB_RL_POST_SEND,
				       "RC post send failed: %d\n", ret);
		ipoib_tx_unmap(priv, buf, skb_shinfo(skb)->nr_frags);
		buf->skb = NULL;
		ipoib_count_tx_drop(priv, skb);
		return;
	}
	netif_trans_update(priv->dev);
	WRITE_ONCE(tx->head, head + 1);
}

static bool ipoib_cm_ring_room(struct ipoib_cm_tx *tx)
{
	return tx->head - READ_ONCE(tx->tail) < IPOIB_CM_TX_RING;
}

/*
 * Move what waits in @tx's backlog onto its ring while the ring has room,
 * in order (netif tx lock). Only a connection that is up posts.
 */
static void ipoib_cm_push(struct ipoib_cm_tx *tx)
{
	struct sk_buff *skb;

	/* pairs with ipoib_cm_tx_rep(), as in ipoib_cm_xmit() */
	if (smp_load_acquire(&tx->state) != IPOIB_CM_TX_UP)
		return;		/* cm->work drops the backlog */
	while (ipoib_cm_ring_room(tx) && (skb = __skb_dequeue(&tx->backlog)))
		ipoib_cm_post(tx, skb);
	if (skb_queue_empty(&tx->backlog))
		list_del_init(&tx->backlogged);
}

/*
 * Send @skb over @tx, which is up (ndo_start_xmit, netif tx lock).
 *
 * A full ring does not stop the interface's queue: that would stop every
 * other destination with it, for as long as this peer does not answer (7
 * ACK timeouts when it is gone, about 15 s with OpenSM's packet life: past
 * the watchdog; review 2026-12, finding 7). The packet waits in the
 * connection's backlog instead, posted from the NAPI poll as the ring's
 * sends complete; a full backlog drops it and counts it for this peer. A
 * socket's packets stay charged to it while they wait, so a local sender
 * is still paced by its own limits, not by drops.
 */
static void ipoib_cm_send(struct ipoib_cm_tx *tx, struct sk_buff *skb)
{
	struct ipoib_cm *cm = tx->cm;
	struct ipoib_dev_priv *priv = cm->priv;

	if (unlikely(skb->len > tx->mtu + IPOIB_ENCAP_LEN)) {
		ipoib_too_big(priv, skb, tx->mtu);
		return;
	}
	/*
	 * Validated for the UD offloads just before a switch to connected
	 * mode (ipoib_set_mode()): RC has none. A segment-offload packet
	 * that fits is one TCP retransmission away from being resent right.
	 */
	if (unlikely(skb->ip_summed == CHECKSUM_PARTIAL) &&
	    (skb_is_gso(skb) || skb_checksum_help(skb))) {
		ipoib_count_tx_drop(priv, skb);
		return;
	}
	if (unlikely(!skb_queue_empty(&tx->backlog)))
		ipoib_cm_push(tx);
	if (likely(skb_queue_empty(&tx->backlog) && ipoib_cm_ring_room(tx))) {
		ipoib_cm_post(tx, skb);
		return;
	}
	if (skb_queue_len(&tx->backlog) >= IPOIB_CM_BACKLOG) {
		ipoib_cm_tx_drop(tx, skb);
		return;
	}
	if (skb_queue_empty(&tx->backlog))
		list_add_tail(&tx->backlogged, &cm->backlogged);
	__skb_queue_tail(&tx->backlog, skb);
	skb_dst_drop(skb);
	/*
	 * The ring may have emptied since we looked, and the NAPI poll
	 * looked for backlogs before this one was added: pairs with
	 * ipoib_cm_poll().
	 */
	smp_mb();
	if (ipoib_cm_ring_room(tx))
		ipoib_cm_push(tx);
}

/* NAPI, after completions freed ring slots: post what waits for them. */
void ipoib_cm_push_all(struct ipoib_cm *cm)
{
	struct netdev_queue *txq = ipoib_cm_txq(cm);
	struct ipoib_cm_tx *tx, *next;

	if (list_empty(&cm->backlogged))	/* racy: a peek */
		return;
	__netif_tx_lock(txq, smp_processor_id());
	list_for_each_entry_safe(tx, next, &cm->backlogged, backlogged)
		ipoib_cm_push(tx);
	__netif_tx_unlock(txq);
}

/*
 * An RC peer we cannot reach over RC for a moment (a failed connection
 * until its retry, our connected mode restarting): UD meanwhile, and what
 * UD cannot carry is dropped, not answered with an ICMP, which would
 * shrink the route's PMTU for minutes over a passing failure. True if
 * @skb was consumed.
 */
static bool ipoib_cm_ud_meanwhile(struct ipoib_dev_priv *priv,
				  struct sk_buff *skb)
{
	if (skb->len <= READ_ONCE(priv->mcast_mtu) + IPOIB_ENCAP_LEN ||
	    skb_is_gso(skb))
		return false;
	ipoib_count_tx_drop(priv, skb);
	return true;
}

/*
 * ndo_start_xmit, unicast, under RCU and the tx queue lock: true if the
 * packet went (or waits) for a connection, false if it is UD's.
 */
bool ipoib_cm_xmit(struct ipoib_dev_priv *priv, struct ipoib_neigh *neigh,
		   struct sk_buff *skb, const u8 *daddr)
{
	struct ipoib_cm *cm = rcu_dereference(priv->cm);
	struct ipoib_cm_tx *tx, *old;
	enum ipoib_cm_tx_state state;
	unsigned long flags;
	u32 delay_us;

	if (!(daddr[0] & IPOIB_HW_RC))
		return false;
	if (!cm) {
		/*
		 * Between the stop and the start of a restart our address
		 * still offers RC (datagram mode, or a connected mode that
		 * could not start, took the flag away).
		 */
		if (READ_ONCE(priv->dev->dev_addr[0]) & IPOIB_HW_RC)
			return ipoib_cm_ud_meanwhile(priv, skb);
		return false;
	}
	/*
	 * The connections are serialised by transmit queue 0's lock (the one
	 * queue of our own datapath); on the HCA's multi-queue datapath
	 * ipoib_select_queue() puts every packet for an RC peer there, except
	 * one chosen just before connected mode started: UD takes that one.
	 */
	if (unlikely(skb_get_queue_mapping(skb)))
		return ipoib_cm_ud_meanwhile(priv, skb);
	tx = rcu_dereference(neigh->cm_tx);
	if (likely(tx)) {
		/* pairs with ipoib_cm_tx_rep(): UP means tx->mtu and the QP are set */
		state = smp_load_acquire(&tx->state);
		if (likely(state == IPOIB_CM_TX_UP)) {
			ipoib_cm_send(tx, skb);
			return true;
		}
		if (state == IPOIB_CM_TX_FAILED &&
		    time_before(jiffies, READ_ONCE(tx->retry_at)))
			return ipoib_cm_ud_meanwhile(priv, skb);
		if (state != IPOIB_CM_TX_FAILED) {
			bool queued = false, suspect = false;

			spin_lock_irqsave(&cm->lock, flags);
			if (tx->state == IPOIB_CM_TX_NEW ||
			    tx->state == IPOIB_CM_TX_CONNECTING) {
				queued = true;
				/*
				 * ib_cm retries an unanswered REQ for a
				 * minute; a peer whose LID moved never
				 * answers one sent to the old LID, and on the
				 * HCA's datapath no UD frame of its tells us.
				 */
				suspect = tx->state == IPOIB_CM_TX_CONNECTING &&
					  time_after(jiffies, READ_ONCE(tx->req_at) +
						     IPOIB_CM_SUSPECT_AFTER);
				if (skb_queue_len(&tx->queue) <
				    IPOIB_CM_QUEUE_LEN) {
					skb_push(skb, IPOIB_PSEUDO_LEN);
					__skb_queue_tail(&tx->queue, skb);
					skb = NULL;
				}
			}
			spin_unlock_irqrestore(&cm->lock, flags);
			if (suspect)
				ipoib_path_suspect(priv, &tx->rec.dgid);
			if (queued) {
				if (skb)
					ipoib_count_tx_drop(priv, skb);
				return true;
			}
			/* it went UP or FAILED meanwhile: look again */
			return ipoib_cm_xmit(priv, neigh, skb, daddr);
		}
	}

	/* A new connection needs the path record first. */
	tx = kzalloc(sizeof(*tx), GFP_ATOMIC);
	if (!tx)
		return false;
	if (!ipoib_path_copy_rec(neigh->path, &tx->rec)) {
		kfree(tx);
		/* ipoib_path_xmit queues it and asks the SA */
		ipoib_path_xmit(neigh->path, skb, get_unaligned_be32(daddr) &
				IPOIB_QPN_MASK);
		return true;
	}
	tx->cm = cm;
	tx->dqpn = get_unaligned_be32(daddr) & IPOIB_QPN_MASK;
	skb_queue_head_init(&tx->queue);
	__skb_queue_head_init(&tx->backlog);
	INIT_LIST_HEAD(&tx->backlogged);
	skb_push(skb, IPOIB_PSEUDO_LEN);
	__skb_queue_tail(&tx->queue, skb);

	delay_us = READ_ONCE(ipoib_cm_attach_delay_us);
	if (unlikely(delay_us)) {	/* the test hook (ipoib_debugfs.c) */
		udelay(min(delay_us, 5000U));
		atomic_inc(&ipoib_cm_attach_delayed);
	}
	spin_lock_irqsave(&cm->lock, flags);
	if (cm->stopping || cm->nr_tx >= cm->max_tx) {
		bool stopping = cm->stopping;

		spin_unlock_irqrestore(&cm->lock, flags);
		__skb_unlink(skb, &tx->queue);
		skb_pull(skb, IPOIB_PSEUDO_LEN);
		kfree(tx);
		/* too many connections is lasting: UD, and ICMP if too big */
		return stopping && ipoib_cm_ud_meanwhile(priv, skb);
	}
	old = rcu_dereference_protected(neigh->cm_tx,
					lockdep_is_held(&cm->lock));
	if (old) {
		tx->fails = READ_ONCE(old->fails);	/* the back-off goes on */
		ipoib_cm_tx_detach(old);
	}
	tx->neigh = neigh;
	tx->state = IPOIB_CM_TX_NEW;
	list_add_tail(&tx->list, &cm->tx_list);
	cm->nr_tx++;
	rcu_assign_pointer(neigh->cm_tx, tx);
	smp_mb();	/* pairs with ipoib_cm_neigh_gone() */
	if (READ_ONCE(neigh->dead))
		ipoib_cm_tx_detach(tx);	/* cm->work frees it, the skb too */
	spin_unlock_irqrestore(&cm->lock, flags);
	ipoib_cm_kick(cm);
	return true;
}

void ipoib_cm_tx_wc(struct ipoib_cm *cm, struct ib_wc *wc)
{
	ipoib_cm_tx_complete(wc->qp->qp_context, wc->wr_id, wc->status);
}

static const char *const ipoib_cm_tx_state_names[] = {
	[IPOIB_CM_TX_NEW]	 = "new",
	[IPOIB_CM_TX_CONNECTING] = "connecting",
	[IPOIB_CM_TX_UP]	 = "up",
	[IPOIB_CM_TX_FAILED]	 = "failed",
};

/*
 * debugfs ipoib/<if>/connections: one line per active connection. The
 * ring and backlog figures are read without the tx lock: a snapshot.
 */
void ipoib_cm_show(struct seq_file *m, struct ipoib_dev_priv *priv)
{
	struct ipoib_cm_tx *tx;
	struct ipoib_cm *cm;
	unsigned long flags;
	long retry_ms;

	seq_puts(m, "# qpn gid state inflight backlog drops fails retry_in_ms\n");
	rcu_read_lock();
	cm = rcu_dereference(priv->cm);
	if (!cm)
		goto out;
	spin_lock_irqsave(&cm->lock, flags);
	list_for_each_entry(tx, &cm->tx_list, list) {
		retry_ms = 0;
		if (tx->state == IPOIB_CM_TX_FAILED &&
		    time_before(jiffies, tx->retry_at))
			retry_ms = jiffies_to_msecs(tx->retry_at - jiffies);
		seq_printf(m, "0x%06x %pI6 %s %u %u %llu %u %ld\n", tx->dqpn,
			   tx->rec.dgid.raw, ipoib_cm_tx_state_names[tx->state],
			   READ_ONCE(tx->head) - READ_ONCE(tx->tail),
			   skb_queue_len_lockless(&tx->backlog),
			   READ_ONCE(tx->drops), READ_ONCE(tx->fails), retry_ms);
	}
	spin_unlock_irqrestore(&cm->lock, flags);
out:
	rcu_read_unlock();
}

