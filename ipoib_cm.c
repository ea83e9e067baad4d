// SPDX-License-Identifier: GPL-2.0
/*
 * Connected mode (RFC 4755): IP over reliable connections, beside the UD QP.
 *
 * In connected mode an interface listens for IPoIB-CM requests on the
 * service ID 0x1000000000000000 | its UD QPN and says so with the RC flag
 * (0x80) in the first octet of its hardware address. A unicast packet to a
 * peer whose address has the flag goes over an RC connection of its own
 * (active side, struct ipoib_cm_tx, one per neighbour entry); everything
 * else (multicast, peers without the flag, peers that refused us) goes
 * over the UD QP, and a packet too big for UD gets the sender an ICMP
 * "fragmentation needed" / ICMPv6 "packet too big" with the UD MTU.
 *
 * Connections are one-way: a peer that sends to us connects to our
 * listener (passive side, struct ipoib_cm_rx). Receive buffers are 64 KiB
 * of pages, one SGE per page, posted to a shared receive queue when the
 * HCA has SRQs, else to a ring of each passive connection's own.
 *
 * Everything connected mode owns hangs off one struct ipoib_cm, made by
 * ipoib_cm_start() and undone by ipoib_cm_stop(), both under op_mutex from
 * ipoib_ib_start()/ipoib_ib_stop(): a P_Key change, a CQ recovery (new
 * UD QPN, so a new service ID) or a TX-timeout restart rebuild it like the
 * UD QP. All its QPs share one CQ, polled by its own NAPI context; a QP is
 * destroyed only once every completion it can produce has been polled
 * (sends: the ring is empty after the flush; receives: the drain send
 * posted after IB_EVENT_QP_LAST_WQE_REACHED, or after the QP's own ring
 * flushed, completed), so wc->qp->qp_context is always alive.
 *
 * Locks: cm->lock (irqsave: the QP event handler may run in hard-IRQ
 * context) protects the connection lists, states and neigh->cm_tx; it is
 * taken under priv->table_lock (ipoib_cm_neigh_gone()) and under the TX
 * queue lock (xmit), never the other way round. The TX queue lock also
 * protects each connection's backlog and cm->backlogged: xmit fills them,
 * the NAPI poll posts them, cm->work drops a failed connection's. Setup
 * and teardown of connections run in cm->work on system_wq, which takes
 * no lock of ours but cm->lock and the TX queue lock; ipoib_cm_stop()
 * (op_mutex) cancels and runs it itself.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/icmp.h>
#include <linux/icmpv6.h>
#include <linux/random.h>
#include <linux/seq_file.h>
#include <net/dst.h>
#include <net/icmp.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_cm.h>
#include "ipoib.h"

#define IPOIB_CM_IETF_ID	0x1000000000000000ULL
#define IPOIB_CM_SGE		DIV_ROUND_UP(IPOIB_CM_BUF_SIZE, PAGE_SIZE)
#define IPOIB_CM_RING_SIZE	64	/* per connection without an SRQ */
#define IPOIB_CM_MAX_RING_CONN	4096	/* max_nonsrq_conn_qp's upper bound */
#define IPOIB_CM_MAX_DRAINS	64	/* drains in flight at once */
#define IPOIB_CM_TX_RING	64	/* sends in flight per connection */
#define IPOIB_CM_BACKLOG	256	/* ... and waiting behind them */
#define IPOIB_CM_MAX_TX_CONN	256	/* active connections */
#define IPOIB_CM_QUEUE_LEN	16	/* packets held while connecting */
#define IPOIB_CM_RETRY_DELAY	(2 * HZ) /* UD only after a refusal ... */
#define IPOIB_CM_BACKOFF_MAX	5	/* ... doubled up to 64 s */
#define IPOIB_CM_COPYBREAK	256	/* copied, the buffer reposted */
#define IPOIB_CM_HEAD		128	/* headers copied to the linear part */
#define IPOIB_CM_DRAIN_TIMEOUT	(5 * HZ)
/*
 * The requester's retries (3 bits each): 6 ACK timeouts or RNR NAKs in a
 * row before a send fails. The in-tree driver asks for none, so every
 * lost packet or full receive queue costs it the connection.
 */
#define IPOIB_CM_RETRIES	6

/*
 * A passive connection that received nothing for this long is closed: its
 * peer may be gone without a DREQ (crashed, cable pulled). A live peer
 * just connects again.
 */
static unsigned int ipoib_cm_rx_idle = 512;
module_param_named(cm_rx_idle, ipoib_cm_rx_idle, uint, 0644);
MODULE_PARM_DESC(cm_rx_idle,
		 "Seconds without traffic after which a passive connection is closed (default: 512, 0: never)");

/*
 * Without an SRQ each passive connection has a ring of its own (4 MiB of
 * receive buffers): the in-tree driver's parameter and default bound how
 * many. With an SRQ there is no bound but memory, as in-tree.
 */
static int ipoib_cm_max_ring_conn = 128;
module_param_named(max_nonsrq_conn_qp, ipoib_cm_max_ring_conn, int, 0444);
MODULE_PARM_DESC(max_nonsrq_conn_qp,
		 "Passive connected-mode connections without an SRQ (0-4096, default 128)");

static bool ipoib_cm_use_srq = true;
module_param_named(cm_srq, ipoib_cm_use_srq, bool, 0444);
MODULE_PARM_DESC(cm_srq,
		 "Connected mode receives through a shared receive queue when the HCA has them (default: on)");

/* wr_id: the kind in the top bits, an index below. */
#define IPOIB_CM_WR_RECV	BIT_ULL(62)
#define IPOIB_CM_WR_SEND	BIT_ULL(63)
#define IPOIB_CM_WR_DRAIN	(BIT_ULL(63) | BIT_ULL(62))
#define IPOIB_CM_WR_KIND	IPOIB_CM_WR_DRAIN

/* REQ and REP private data (RFC 4755): our UD QPN, our receive size. */
struct ipoib_cm_data {
	__be32 qpn;
	__be32 mtu;
};

struct ipoib_cm_rx_buf {
	struct page *page[IPOIB_CM_SGE];
	u64 dma[IPOIB_CM_SGE];
	bool posted;
};

enum ipoib_cm_tx_state {
	IPOIB_CM_TX_NEW,	/* cm->work sends the REQ */
	IPOIB_CM_TX_CONNECTING,	/* REQ sent, packets wait in tx->queue */
	IPOIB_CM_TX_UP,		/* RTS: xmit posts on tx->qp */
	IPOIB_CM_TX_FAILED,	/* UD until retry_at; cm->work frees the QP */
};

/* The active side of one connection: we send to neigh over it. */
struct ipoib_cm_tx {
	struct ipoib_cm *cm;
	struct list_head list;		/* cm->tx_list, cm->lock */
	struct ipoib_neigh *neigh;	/* NULL once detached, cm->lock */
	u32 dqpn;			/* the peer's UD QPN */
	enum ipoib_cm_tx_state state;	/* cm->lock, READ_ONCE by xmit */
	unsigned long retry_at;		/* jiffies, FAILED */
	unsigned int fails;		/* in a row, for the back-off; cm->lock */
	struct sa_path_rec rec;
	struct ib_cm_id *id;		/* cm->work */
	struct ib_qp *qp;
	u32 mtu;			/* the peer's receive size - encap */
	unsigned int max_send_sge;	/* of tx->qp */
	struct sk_buff_head queue;	/* bounded, cm->lock */
	struct ipoib_tx_buf *ring;
	unsigned int head;		/* netif tx lock */
	unsigned int tail;		/* cm NAPI */
	/* what the ring cannot take yet; netif tx lock, as cm->backlogged */
	struct sk_buff_head backlog;
	struct list_head backlogged;	/* on cm->backlogged while not empty */
	u64 drops;			/* backlog full or lost; netif tx lock */
	struct rcu_head rcu;
};

enum ipoib_cm_rx_state {
	IPOIB_CM_RX_LIVE,
	IPOIB_CM_RX_DRAINING,	/* QP in ERR, waiting for the drain */
	IPOIB_CM_RX_DRAINED,	/* no completion can come: cm->work frees */
};

/* The passive side of one connection: a peer sends to us over it. */
struct ipoib_cm_rx {
	struct ipoib_cm *cm;
	struct list_head list;		/* cm->rx_list, cm->lock */
	enum ipoib_cm_rx_state state;	/* cm->lock */
	struct ib_cm_id *id;
	struct ib_qp *qp;
	struct ipoib_cm_rx_buf *ring;	/* without an SRQ */
	unsigned int posted;		/* ring buffers the QP owns, NAPI */
	bool drain_ready;		/* cm->lock: may drain, waits for a slot */
	bool drain_posted;		/* cm->lock */
	bool drain_done;		/* NAPI */
	unsigned long err_at;		/* jiffies: to ERR */
	unsigned long last_used;	/* jiffies */
};

struct ipoib_cm {
	struct ipoib_dev_priv *priv;
	struct ib_cm_id *listen;
	struct ib_cq *cq;
	struct ib_srq *srq;		/* NULL: a ring per connection */
	unsigned int srq_size;		/* its buffers: the UD ring's size */
	struct ipoib_cm_rx_buf *srq_ring;
	unsigned int nsge;
	struct napi_struct napi;
	bool stopping;			/* cm->lock */
	bool cq_error;			/* the CQ overflowed: no flush will come */

	spinlock_t lock;		/* see the top of the file */
	struct list_head tx_list;
	struct list_head rx_list;
	unsigned int nr_tx;
	unsigned int nr_rx;
	unsigned int max_rx;		/* passive connections at most */
	unsigned int max_tx;		/* active connections at most */
	unsigned int drains;		/* drains posted, not completed */
	struct work_struct work;
	struct delayed_work reap_work;	/* idle passive connections */
	struct mutex work_mutex;	/* cm->work, or ipoib_cm_stop() running it */
	wait_queue_head_t wait;		/* a ring or a drain completed */
	struct list_head backlogged;	/* connections with a backlog; tx lock */
};

static void ipoib_cm_kick(struct ipoib_cm *cm)
{
	queue_work(system_wq, &cm->work);
}

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
static struct ipoib_cm_rx_buf *ipoib_cm_ring_alloc(struct ipoib_cm *cm,
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

static void ipoib_cm_ring_free(struct ipoib_cm *cm,
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
static int ipoib_cm_post_recv(struct ipoib_cm *cm, struct ipoib_cm_rx *rx,
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

/* The size the peer told us it receives; 0 if unusable. */
static u32 ipoib_cm_peer_mtu(const void *private_data)
{
	const struct ipoib_cm_data *data = private_data;
	u32 mtu = be32_to_cpu(data->mtu);

	if (mtu < IPOIB_ENCAP_LEN + IPV6_MIN_MTU)
		return 0;
	return min_t(u32, mtu, IPOIB_CM_BUF_SIZE) - IPOIB_ENCAP_LEN;
}

static void ipoib_cm_fill_data(struct ipoib_cm *cm, struct ipoib_cm_data *data)
{
	data->qpn = cpu_to_be32(cm->priv->qp->qp_num);
	data->mtu = cpu_to_be32(IPOIB_CM_BUF_SIZE);
}

/* The name of an ib_cm event, for debug messages. */
static const char *ipoib_cm_event_name(enum ib_cm_event_type ev)
{
	static const char * const names[] = {
		[IB_CM_REQ_ERROR] = "REQ error",
		[IB_CM_REQ_RECEIVED] = "REQ",
		[IB_CM_REP_ERROR] = "REP error",
		[IB_CM_REP_RECEIVED] = "REP",
		[IB_CM_RTU_RECEIVED] = "RTU",
		[IB_CM_USER_ESTABLISHED] = "established",
		[IB_CM_DREQ_ERROR] = "DREQ error",
		[IB_CM_DREQ_RECEIVED] = "DREQ",
		[IB_CM_DREP_RECEIVED] = "DREP",
		[IB_CM_TIMEWAIT_EXIT] = "timewait exit",
		[IB_CM_MRA_RECEIVED] = "MRA",
		[IB_CM_REJ_RECEIVED] = "REJ",
		[IB_CM_LAP_ERROR] = "LAP error",
		[IB_CM_LAP_RECEIVED] = "LAP",
		[IB_CM_APR_RECEIVED] = "APR",
	};

	return ev < ARRAY_SIZE(names) && names[ev] ? names[ev] : "other";
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
static void ipoib_cm_drain_done(struct ipoib_cm *cm)
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
static bool ipoib_cm_rx_claim(struct ipoib_cm_rx *rx)
{
	lockdep_assert_held(&rx->cm->lock);
	if (rx->state != IPOIB_CM_RX_LIVE)
		return false;
	rx->state = IPOIB_CM_RX_DRAINING;
	rx->err_at = jiffies;
	return true;
}

/* A claimed connection: ERR, then the drain (cm->lock not held). */
static void ipoib_cm_rx_to_err(struct ipoib_cm_rx *rx)
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
		netdev_dbg(cm->priv->dev,
			   "a passive connection's QP went to error by itself\n");
	if (rx->state == IPOIB_CM_RX_DRAINING)
		drain = ipoib_cm_rx_want_drain(rx);
	spin_unlock_irqrestore(&cm->lock, flags);
	if (drain)
		ipoib_cm_rx_post_drain(rx);
}

static int ipoib_cm_rx_handler(struct ib_cm_id *id,
			       const struct ib_cm_event *event);

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

/*
 * Move @qp from the state before @from up to RTS with the attributes ib_cm
 * has for @id (both sides of a connection). @rq_psn, if set, replaces
 * ib_cm's receive PSN at RTR.
 */
static int ipoib_cm_qp_up(struct ib_cm_id *id, struct ib_qp *qp,
			  enum ib_qp_state from, const u32 *rq_psn)
{
	static const enum ib_qp_state states[] = {
		IB_QPS_INIT, IB_QPS_RTR, IB_QPS_RTS
	};
	struct ib_qp_attr attr;
	unsigned int i;
	int mask, ret;

	for (i = 0; i < ARRAY_SIZE(states); i++) {
		if (states[i] < from)
			continue;
		memset(&attr, 0, sizeof(attr));
		attr.qp_state = states[i];
		ret = ib_cm_init_qp_attr(id, &attr, &mask);
		if (ret)
			return ret;
		if (states[i] == IB_QPS_RTR && rq_psn)
			attr.rq_psn = *rq_psn;
		ret = ib_modify_qp(qp, &attr, mask);
		if (ret)
			return ret;
	}
	return 0;
}

static void ipoib_cm_rx_free(struct ipoib_cm_rx *rx)
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
	struct ipoib_cm_rx *rx;
	unsigned long flags;
	unsigned int i, max;
	u16 pkey;
	u32 psn;
	int ret;

	if (!ipoib_cm_peer_mtu(event->private_data)) {
		netdev_dbg(priv->dev, "REQ with a receive size below %u: refused\n",
			   IPOIB_ENCAP_LEN + IPV6_MIN_MTU);
		return -EINVAL;
	}
	/*
	 * The service ID names the interface, the path its partition: a
	 * REQ over another P_Key of the port comes from a host that is not
	 * a member of ours (review 2026-12, finding 13). The membership bit
	 * may differ (a limited member talks to a full one).
	 */
	pkey = be16_to_cpu(event->param.req_rcvd.primary_path->pkey);
	if ((pkey ^ READ_ONCE(priv->pkey)) & ~IPOIB_PKEY_FULL) {
		ipoib_warn_ratelimited(priv, IPOIB_RL_CM,
				       "connection from %pI6 over P_Key 0x%04x refused: not ours\n",
				       event->param.req_rcvd.primary_path->sgid.raw,
				       pkey);
		return -EINVAL;
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
					       event->param.req_rcvd.primary_path->sgid.raw,
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
	netdev_dbg(priv->dev, "passive connection from qpn 0x%06x accepted\n",
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
static int ipoib_cm_rx_handler(struct ib_cm_id *id,
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
	netdev_dbg(rx->cm->priv->dev, "passive %p: %s\n", rx,
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
static void ipoib_cm_reap(struct work_struct *work)
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
			netdev_dbg(cm->priv->dev,
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

/* Active side */

static void ipoib_cm_tx_fail(struct ipoib_cm_tx *tx, const char *why)
{
	struct ipoib_cm *cm = tx->cm;
	unsigned long flags;
	unsigned int fails;
	bool was;

	spin_lock_irqsave(&cm->lock, flags);
	was = tx->state != IPOIB_CM_TX_FAILED;
	if (was) {
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
	netdev_dbg(cm->priv->dev, "connection to qpn 0x%06x closed: %s\n",
		   tx->dqpn, why);
	ipoib_cm_kick(cm);
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
	netdev_dbg(cm->priv->dev, "connected to qpn 0x%06x, peer receives %u\n",
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

	netdev_dbg(tx->cm->priv->dev, "to qpn 0x%06x: %s\n", tx->dqpn,
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

/* cm->work: make the QP and send the REQ. */
static int ipoib_cm_tx_connect(struct ipoib_cm_tx *tx)
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
		ipoib_cm_tx_fail(tx, "send failed");
	}
	if (READ_ONCE(tx->state) == IPOIB_CM_TX_FAILED)
		wake_up(&cm->wait);
}

/*
 * Destroy the QP of @tx. Sends it never completed (a CQ in error reports
 * no flush) are ours then: unmapped and freed as flushed.
 */
static void ipoib_cm_tx_destroy_qp(struct ipoib_cm_tx *tx)
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

/* cm->work: free what a failed or detached connection holds. */
static void ipoib_cm_tx_release(struct ipoib_cm_tx *tx)
{
	struct ipoib_cm *cm = tx->cm;
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

	netdev_dbg(cm->priv->dev, "releasing the connection to qpn 0x%06x (state %d, %s, cm state %d)\n",
		   tx->dqpn, tx->state, tx->neigh ? "attached" : "detached",
		   tx->id ? tx->id->state : -1);
	/* An established id sends the DREQ as it goes. */
	if (tx->id) {
		ib_destroy_cm_id(tx->id);
		tx->id = NULL;
	}
	if (!tx->qp)
		return;
	/* No xmit still posts on the QP: it saw FAILED, or no neighbour. */
	synchronize_net();
	ipoib_cm_tx_drop_backlog(tx);
	ib_modify_qp(tx->qp, &attr, IB_QP_STATE);
	wait_event_timeout(cm->wait,
			   READ_ONCE(tx->tail) == READ_ONCE(tx->head) ||
			   READ_ONCE(cm->cq_error), IPOIB_CM_DRAIN_TIMEOUT);
	if (READ_ONCE(tx->tail) != READ_ONCE(tx->head))
		netdev_warn(cm->priv->dev,
			    "%u sends to qpn 0x%06x not flushed\n",
			    READ_ONCE(tx->head) - READ_ONCE(tx->tail), tx->dqpn);
	ipoib_cm_tx_destroy_qp(tx);
}

static void ipoib_cm_tx_free(struct ipoib_cm_tx *tx)
{
	__skb_queue_purge(&tx->queue);
	__skb_queue_purge(&tx->backlog);
	kvfree(tx->ring);
	kfree_rcu(tx, rcu);
}

/* One step of cm->work: true if it did something. */
static bool ipoib_cm_work_one(struct ipoib_cm *cm)
{
	struct ipoib_cm_tx *tx, *do_tx = NULL;
	struct ipoib_cm_rx *rx, *do_rx = NULL;
	struct sk_buff_head purge;
	unsigned long flags;
	int ret;

	__skb_queue_head_init(&purge);
	spin_lock_irqsave(&cm->lock, flags);
	list_for_each_entry(tx, &cm->tx_list, list) {
		if (tx->state == IPOIB_CM_TX_NEW ||
		    (tx->state == IPOIB_CM_TX_FAILED && (tx->qp || tx->id)) ||
		    !tx->neigh) {
			do_tx = tx;
			break;
		}
	}
	if (do_tx && do_tx->state == IPOIB_CM_TX_NEW)
		WRITE_ONCE(do_tx->state, IPOIB_CM_TX_CONNECTING);
	else if (do_tx)
		skb_queue_splice_init(&do_tx->queue, &purge);
	if (!do_tx) {
		list_for_each_entry(rx, &cm->rx_list, list) {
			if (rx->state == IPOIB_CM_RX_DRAINED) {
				list_del(&rx->list);
				cm->nr_rx--;
				do_rx = rx;
				break;
			}
		}
	}
	spin_unlock_irqrestore(&cm->lock, flags);
	__skb_queue_purge(&purge);

	if (do_rx) {
		if (do_rx->id)
			ib_destroy_cm_id(do_rx->id);
		ipoib_cm_rx_free(do_rx);
		return true;
	}
	if (!do_tx)
		return false;
	tx = do_tx;
	if (tx->state == IPOIB_CM_TX_CONNECTING && !tx->qp) {
		ret = ipoib_cm_tx_connect(tx);
		if (ret) {
			ipoib_warn_ratelimited(cm->priv, IPOIB_RL_CM,
					       "cannot connect to qpn 0x%06x: %d\n",
					       tx->dqpn, ret);
			ipoib_cm_tx_fail(tx, "no REQ");
		}
		return true;
	}
	ipoib_cm_tx_release(tx);
	if (!tx->neigh) {
		spin_lock_irqsave(&cm->lock, flags);
		list_del(&tx->list);
		cm->nr_tx--;
		spin_unlock_irqrestore(&cm->lock, flags);
		ipoib_cm_tx_free(tx);
	}
	return true;
}

static void ipoib_cm_work(struct work_struct *work)
{
	struct ipoib_cm *cm = container_of(work, struct ipoib_cm, work);

	mutex_lock(&cm->work_mutex);
	while (ipoib_cm_work_one(cm))
		cond_resched();
	mutex_unlock(&cm->work_mutex);
}

/* Detach @tx from its neighbour (cm->lock held): cm->work frees it. */
static void ipoib_cm_tx_detach(struct ipoib_cm_tx *tx)
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

/* Transmit */

/*
 * A packet bigger than UD carries: tell its sender the UD MTU, as a router
 * would (the in-tree driver does the same), and drop it. ndo_start_xmit.
 */
static void ipoib_cm_too_big(struct ipoib_dev_priv *priv, struct sk_buff *skb,
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
	ipoib_cm_too_big(priv, skb, mtu);
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
	ipoib_cm_too_big(priv, skb, ip_mtu);
	return true;
}

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
		ipoib_cm_too_big(priv, skb, tx->mtu);
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
static void ipoib_cm_push_all(struct ipoib_cm *cm)
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
			bool queued = false;

			spin_lock_irqsave(&cm->lock, flags);
			if (tx->state == IPOIB_CM_TX_NEW ||
			    tx->state == IPOIB_CM_TX_CONNECTING) {
				queued = true;
				if (skb_queue_len(&tx->queue) <
				    IPOIB_CM_QUEUE_LEN) {
					skb_push(skb, IPOIB_PSEUDO_LEN);
					__skb_queue_tail(&tx->queue, skb);
					skb = NULL;
				}
			}
			spin_unlock_irqrestore(&cm->lock, flags);
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
static void ipoib_cm_rx_check_drained(struct ipoib_cm *cm,
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

static void ipoib_cm_rx_wc(struct ipoib_cm *cm, struct ib_wc *wc)
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
			netdev_dbg(priv->dev, "RC receive error status %d\n",
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

static void ipoib_cm_tx_wc(struct ipoib_cm *cm, struct ib_wc *wc)
{
	ipoib_cm_tx_complete(wc->qp->qp_context, wc->wr_id, wc->status);
}

static void ipoib_cm_wc(struct ipoib_cm *cm, struct ib_wc *wc)
{
	struct ipoib_cm_rx *rx;

	switch (wc->wr_id & IPOIB_CM_WR_KIND) {
	case IPOIB_CM_WR_RECV:
		ipoib_cm_rx_wc(cm, wc);
		break;
	case IPOIB_CM_WR_SEND:
		ipoib_cm_tx_wc(cm, wc);
		break;
	case IPOIB_CM_WR_DRAIN:
		rx = wc->qp->qp_context;
		rx->drain_done = true;
		ipoib_cm_rx_check_drained(cm, rx);
		ipoib_cm_drain_done(cm);
		break;
	default:
		ipoib_err_ratelimited(cm->priv, IPOIB_RL_BOGUS_WC,
				      "bogus RC completion %llx\n", wc->wr_id);
	}
}

static int ipoib_cm_poll(struct napi_struct *napi, int budget)
{
	struct ipoib_cm *cm = container_of(napi, struct ipoib_cm, napi);
	struct ipoib_dev_priv *priv = cm->priv;
	struct ib_wc wcs[16];
	int done = 0;

	while (done < budget) {
		int n = ib_poll_cq(cm->cq,
				   min_t(int, ARRAY_SIZE(wcs), budget - done),
				   wcs);
		int k;

		if (n <= 0)
			break;
		for (k = 0; k < n; k++)
			ipoib_cm_wc(cm, &wcs[k]);
		done += n;
	}

	smp_mb(); /* counts before the checks, pairs with xmit */
	ipoib_cm_push_all(cm);
	if (netif_queue_stopped(priv->dev) &&
	    test_bit(IPOIB_FLAG_RUNNING, &priv->flags) &&
	    ipoib_tx_may_wake(priv))
		netif_wake_queue(priv->dev);

	if (done < budget && napi_complete_done(napi, done)) {
		if (ib_req_notify_cq(cm->cq, IB_CQ_NEXT_COMP |
				     IB_CQ_REPORT_MISSED_EVENTS) > 0)
			napi_schedule(napi);
	}
	return done;
}

static void ipoib_cm_cq_event(struct ib_cq *cq, void *ctx)
{
	struct ipoib_cm *cm = ctx;

	napi_schedule(&cm->napi);
}

static void ipoib_cm_cq_error(struct ib_event *event, void *ctx)
{
	struct ipoib_cm *cm = ctx;

	ipoib_err_ratelimited(cm->priv, IPOIB_RL_CQ_ERROR,
			      "connected mode CQ error (event %d): restarting\n",
			      event->event);
	/*
	 * No completion will come through it: teardown waits for none
	 * (before, the stop waited 5 s for each connection with sends in
	 * flight, under op_mutex: review 2026-12, finding 5).
	 */
	WRITE_ONCE(cm->cq_error, true);
	wake_up(&cm->wait);
	ipoib_queue_resync(cm->priv, IPOIB_RESYNC_TX_TIMEOUT);
}

/* Start and stop (op_mutex) */

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

/* What connected mode needs of the HCA; a message says what is missing. */
int ipoib_cm_supported(struct ipoib_dev_priv *priv)
{
	const struct ib_device_attr *a = &priv->ca->attrs;
	u32 sge = a->max_srq ? min(a->max_srq_sge, a->max_recv_sge) :
			       a->max_recv_sge;

	if (!rdma_cap_ib_cm(priv->ca, priv->port)) {
		netdev_info(priv->dev, "connected mode: the port has no IB CM\n");
		return -EOPNOTSUPP;
	}
	if (sge < IPOIB_CM_SGE) {
		netdev_info(priv->dev,
			    "connected mode: the HCA receives into %u SGEs, it needs %lu\n",
			    sge, IPOIB_CM_SGE);
		return -EOPNOTSUPP;
	}
	return 0;
}

static int ipoib_cm_srq_init(struct ipoib_cm *cm)
{
	struct ipoib_dev_priv *priv = cm->priv;
	struct ib_srq_init_attr attr = {
		.attr.max_sge = cm->nsge,
		.srq_type = IB_SRQT_BASIC,
	};
	unsigned int i;
	int ret;

	if (!priv->ca->attrs.max_srq || !ipoib_cm_use_srq)
		return 0;
	/* as in-tree: as many shared buffers as the UD ring has */
	cm->srq_size = min_t(u32, priv->rx_ring_size,
			     priv->ca->attrs.max_srq_wr);
	attr.attr.max_wr = cm->srq_size;
	cm->srq = ib_create_srq(priv->pd, &attr);
	if (IS_ERR(cm->srq)) {
		ret = PTR_ERR(cm->srq);
		cm->srq = NULL;
		if (ret == -EOPNOTSUPP)
			return 0;
		return ret;
	}
	cm->srq_ring = ipoib_cm_ring_alloc(cm, cm->srq_size);
	if (!cm->srq_ring)
		return -ENOMEM;
	for (i = 0; i < cm->srq_size; i++) {
		ret = ipoib_cm_post_recv(cm, NULL, i);
		if (ret)
			return ret;
	}
	return 0;
}

static void ipoib_cm_free(struct ipoib_cm *cm)
{
	if (cm->srq)
		ib_destroy_srq(cm->srq);
	ipoib_cm_ring_free(cm, cm->srq_ring, cm->srq_size);
	if (cm->cq)
		ib_destroy_cq(cm->cq);
	kfree(cm);
}

/*
 * Connected mode on a running interface (ipoib_ib_start, op_mutex): the
 * CQ, the SRQ and its buffers, then the listener. Our address gets the RC
 * flag through the carrier work.
 */
int ipoib_cm_start(struct ipoib_dev_priv *priv)
{
	struct ib_cq_init_attr cq_attr = {};
	unsigned int max_cqe = priv->ca->attrs.max_cqe, fixed;
	struct ipoib_cm *cm;
	int ret;

	lockdep_assert_held(&priv->op_mutex);
	cm = kzalloc(sizeof(*cm), GFP_KERNEL);
	if (!cm)
		return -ENOMEM;
	cm->priv = priv;
	cm->nsge = IPOIB_CM_SGE;
	spin_lock_init(&cm->lock);
	INIT_LIST_HEAD(&cm->tx_list);
	INIT_LIST_HEAD(&cm->rx_list);
	INIT_LIST_HEAD(&cm->backlogged);
	INIT_WORK(&cm->work, ipoib_cm_work);
	INIT_DELAYED_WORK(&cm->reap_work, ipoib_cm_reap);
	mutex_init(&cm->work_mutex);
	init_waitqueue_head(&cm->wait);

	ret = ipoib_cm_srq_init(cm);
	if (ret)
		goto err_free;
	/*
	 * Every CQE the CQ may have to hold at once: a send per slot of every
	 * active connection's ring (as many connections as half the HCA's
	 * CQ holds, IPOIB_CM_MAX_TX_CONN at most: no budget shared between
	 * the rings, which one dead peer's full ring could use up), a
	 * receive per posted buffer (the SRQ's, or each passive
	 * connection's ring: as many connections as the rest of the CQ
	 * allows, up to max_nonsrq_conn_qp) and the drains in flight.
	 */
	cm->max_tx = clamp_t(unsigned int, max_cqe / 2 / IPOIB_CM_TX_RING, 1,
			     IPOIB_CM_MAX_TX_CONN);
	fixed = cm->max_tx * IPOIB_CM_TX_RING + IPOIB_CM_MAX_DRAINS + 1;
	if (cm->srq) {
		cm->max_rx = UINT_MAX;
		cq_attr.cqe = fixed + cm->srq_size;
	} else {
		cm->max_rx = clamp(ipoib_cm_max_ring_conn, 0,
				   IPOIB_CM_MAX_RING_CONN);
		if (max_cqe > fixed + IPOIB_CM_RING_SIZE)
			cm->max_rx = min(cm->max_rx, (max_cqe - fixed) /
					 IPOIB_CM_RING_SIZE);
		cq_attr.cqe = fixed + cm->max_rx * IPOIB_CM_RING_SIZE;
	}
	cm->cq = ib_create_cq(priv->ca, ipoib_cm_cq_event, ipoib_cm_cq_error,
			      cm, &cq_attr);
	if (IS_ERR(cm->cq)) {
		ret = PTR_ERR(cm->cq);
		cm->cq = NULL;
		goto err_free;
	}

	netif_napi_add(priv->dev, &cm->napi, ipoib_cm_poll);
	napi_enable(&cm->napi);
	ib_req_notify_cq(cm->cq, IB_CQ_NEXT_COMP);

	cm->listen = ib_create_cm_id(priv->ca, ipoib_cm_rx_handler, cm);
	if (IS_ERR(cm->listen)) {
		ret = PTR_ERR(cm->listen);
		goto err_napi;
	}
	ret = ib_cm_listen(cm->listen,
			   cpu_to_be64(IPOIB_CM_IETF_ID | priv->qp->qp_num));
	if (ret) {
		ib_destroy_cm_id(cm->listen);
		goto err_napi;
	}
	rcu_assign_pointer(priv->cm, cm);
	queue_delayed_work(system_wq, &cm->reap_work, HZ);
	netdev_dbg(priv->dev, "connected mode on qpn 0x%06x, %s\n",
		   priv->qp->qp_num, cm->srq ? "SRQ" : "a ring per connection");
	if (!(priv->dev->dev_addr[0] & IPOIB_HW_RC))
		ipoib_addr_changed(priv);
	return 0;

err_napi:
	napi_disable(&cm->napi);
	netif_napi_del(&cm->napi);
err_free:
	netdev_warn(priv->dev, "cannot start connected mode: %d\n", ret);
	ipoib_cm_free(cm);
	/* our address no longer offers RC */
	if (priv->dev->dev_addr[0] & IPOIB_HW_RC)
		ipoib_addr_changed(priv);
	return ret;
}

/* A passive connection is ready to be freed, or none is left. */
static bool ipoib_cm_rx_reapable(struct ipoib_cm *cm)
{
	struct ipoib_cm_rx *rx;
	unsigned long flags;
	bool ret = list_empty(&cm->rx_list);

	spin_lock_irqsave(&cm->lock, flags);
	list_for_each_entry(rx, &cm->rx_list, list)
		ret |= rx->state == IPOIB_CM_RX_DRAINED;
	spin_unlock_irqrestore(&cm->lock, flags);
	return ret;
}

/*
 * Tear every connection down and free it all (ipoib_ib_stop, op_mutex).
 * After it no xmit sees priv->cm and no ib_cm callback of ours runs.
 */
void ipoib_cm_stop(struct ipoib_dev_priv *priv)
{
	struct ipoib_cm *cm = rcu_dereference_protected(priv->cm,
					lockdep_is_held(&priv->op_mutex));
	struct ipoib_cm_tx *tx, *tx_next;
	struct ipoib_cm_rx *rx, *rx_next;
	unsigned long flags, timeout;
	bool left;

	if (!cm)
		return;
	RCU_INIT_POINTER(priv->cm, NULL);
	cancel_delayed_work_sync(&cm->reap_work);
	ib_destroy_cm_id(cm->listen);	/* no new passive connection */
	synchronize_net();		/* no xmit makes a new one */

	spin_lock_irqsave(&cm->lock, flags);
	cm->stopping = true;
	list_for_each_entry(tx, &cm->tx_list, list)
		ipoib_cm_tx_detach(tx);
	spin_unlock_irqrestore(&cm->lock, flags);

	/* Passive connections: ERR and drain; ib_cm may race us to it. */
	timeout = jiffies + IPOIB_CM_DRAIN_TIMEOUT;
	for (;;) {
		struct ipoib_cm_rx *found = NULL;

		spin_lock_irqsave(&cm->lock, flags);
		list_for_each_entry(rx, &cm->rx_list, list) {
			if (ipoib_cm_rx_claim(rx)) {
				found = rx;
				break;
			}
		}
		spin_unlock_irqrestore(&cm->lock, flags);
		if (!found)
			break;
		ipoib_cm_rx_to_err(found);
	}
	for (;;) {
		/* the work may be queued again meanwhile: work_mutex */
		ipoib_cm_work(&cm->work);
		spin_lock_irqsave(&cm->lock, flags);
		left = !list_empty(&cm->tx_list) || !list_empty(&cm->rx_list);
		spin_unlock_irqrestore(&cm->lock, flags);
		if (!left || time_after(jiffies, timeout) ||
		    READ_ONCE(cm->cq_error))
			break;
		wait_event_timeout(cm->wait, ipoib_cm_rx_reapable(cm), HZ / 10);
	}
	napi_disable(&cm->napi);
	netif_napi_del(&cm->napi);
	cancel_work_sync(&cm->work);
	/* What did not drain in time: no completion is polled any more. */
	if (left) {
		netdev_warn(priv->dev,
			    "connected mode: %u+%u connections did not drain\n",
			    cm->nr_tx, cm->nr_rx);
		list_for_each_entry_safe(rx, rx_next, &cm->rx_list, list) {
			if (rx->id)
				ib_destroy_cm_id(rx->id);
			ipoib_cm_rx_free(rx);
		}
		list_for_each_entry_safe(tx, tx_next, &cm->tx_list, list) {
			if (tx->id)
				ib_destroy_cm_id(tx->id);
			if (tx->qp)
				ipoib_cm_tx_destroy_qp(tx);
			ipoib_cm_tx_free(tx);
		}
	}
	ipoib_cm_free(cm);
}
