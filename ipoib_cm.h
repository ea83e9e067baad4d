/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Connected mode's own definitions, shared by ipoib_cm.c (start, stop,
 * the CQ and cm->work), ipoib_cm_rx.c (passive side) and ipoib_cm_tx.c
 * (active side, transmit). Nothing else includes it.
 */
#ifndef IPOIB_CM_H
#define IPOIB_CM_H

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
/* a REQ unanswered this long: is our path to the peer stale? */
#define IPOIB_CM_SUSPECT_AFTER	(5 * HZ)
#define IPOIB_CM_COPYBREAK	256	/* copied, the buffer reposted */
#define IPOIB_CM_HEAD		128	/* headers copied to the linear part */
#define IPOIB_CM_DRAIN_TIMEOUT	(5 * HZ)
/*
 * The requester's retries (3 bits each): 6 ACK timeouts or RNR NAKs in a
 * row before a send fails. The in-tree driver asks for none, so every
 * lost packet or full receive queue costs it the connection.
 */
#define IPOIB_CM_RETRIES	6

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
	unsigned long req_at;		/* jiffies: to CONNECTING; cm->lock */
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
	/*
	 * cm->work releases the QP (releasing); its flushes were late and it
	 * waits for them (kept) instead of completing the ring by hand, which
	 * cm NAPI could still be polling. READ_ONCE/WRITE_ONCE.
	 */
	bool releasing, kept;
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

	spinlock_t lock;		/* see the top of ipoib_cm.c */
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

static inline void ipoib_cm_kick(struct ipoib_cm *cm)
{
	queue_work(system_wq, &cm->work);
}

/* ipoib_cm.c */
u32 ipoib_cm_peer_mtu(const void *private_data);
void ipoib_cm_fill_data(struct ipoib_cm *cm, struct ipoib_cm_data *data);
const char *ipoib_cm_event_name(enum ib_cm_event_type ev);
int ipoib_cm_qp_up(struct ib_cm_id *id, struct ib_qp *qp,
		   enum ib_qp_state from, const u32 *rq_psn);

/* ipoib_cm_rx.c */
struct ipoib_cm_rx_buf *ipoib_cm_ring_alloc(struct ipoib_cm *cm,
					    unsigned int n);
void ipoib_cm_ring_free(struct ipoib_cm *cm,
			struct ipoib_cm_rx_buf *ring, unsigned int n);
int ipoib_cm_post_recv(struct ipoib_cm *cm, struct ipoib_cm_rx *rx,
		       unsigned int i);
void ipoib_cm_drain_done(struct ipoib_cm *cm);
bool ipoib_cm_rx_claim(struct ipoib_cm_rx *rx);
void ipoib_cm_rx_to_err(struct ipoib_cm_rx *rx);
void ipoib_cm_rx_free(struct ipoib_cm_rx *rx);
int ipoib_cm_rx_handler(struct ib_cm_id *id,
			const struct ib_cm_event *event);
void ipoib_cm_reap(struct work_struct *work);
void ipoib_cm_rx_check_drained(struct ipoib_cm *cm,
			       struct ipoib_cm_rx *rx);
void ipoib_cm_rx_wc(struct ipoib_cm *cm, struct ib_wc *wc);

/* ipoib_cm_tx.c */
void ipoib_cm_tx_fail(struct ipoib_cm_tx *tx, const char *why);
int ipoib_cm_tx_connect(struct ipoib_cm_tx *tx);
void ipoib_cm_tx_destroy_qp(struct ipoib_cm_tx *tx);
bool ipoib_cm_tx_release(struct ipoib_cm_tx *tx);
void ipoib_cm_tx_free(struct ipoib_cm_tx *tx);
void ipoib_cm_tx_detach(struct ipoib_cm_tx *tx);
void ipoib_cm_push_all(struct ipoib_cm *cm);
void ipoib_cm_tx_wc(struct ipoib_cm *cm, struct ib_wc *wc);

#endif /* IPOIB_CM_H */
