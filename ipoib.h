/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ib_ipoib: IP over InfiniBand, datagram mode (RFC 4391) and connected
 * mode (RFC 4755).
 *
 * Shared types and prototypes, grouped by the file that implements them.
 *
 * Lock order (take a lock only while holding locks from lines above it):
 *
 *   1. rtnl_lock                 ndo_open/ndo_stop, ethtool, carrier work
 *                                and the resync's restarts of an HCA's
 *                                enhanced datapath (trylock only)
 *   1b. dev->lock (7.x)          the instance lock of an ops-locked netdev
 *                                (a provider's that set request_ops_lock):
 *                                held by the core around our ndos; taken
 *                                after rtnl by the resync's restarts and
 *                                ipoib_set_mode() (design.rst)
 *   2. priv->op_mutex            the UD QP and its CQs: start/stop, recreate,
 *                                destroy; the groups' start/stop (attach and
 *                                detach); CQ moderation (ethtool -C)
 *   3. priv->mcast_mutex         the multicast group list and join/leave state
 *   4. netif_tx_lock (per queue) ndo_start_xmit; connected mode's backlogs
 *                                (ipoib_cm_tx.c), also from its NAPI poll and
 *                                cm->work
 *   5. priv->table_lock          writers of the neighbour, path and group hashes
 *   6. path->lock, mc->lock      one path's / one group's state and wait queue
 *   7. cm->lock (ipoib_cm.h)     connected mode's connection lists and
 *                                states, neigh->cm_tx; irqsave
 *
 * table_lock nests inside the kernel's neighbour table lock
 * (ndo_neigh_destroy): never take a kernel neighbour lock under 5-7.
 * cm->work_mutex (ipoib_cm.c) is held across synchronize_net(),
 * ib_destroy_cm_id() and a flush wait, under op_mutex when
 * ipoib_cm_stop() runs the work inline: our ib_cm handlers take none of
 * 1, 2 or work_mutex. The lockless reads of priv->qp, qkey, bcast_rec,
 * local_gid and gid_index, and tx->tail's second writer, are argued in
 * Documentation/design.rst ("What the table does not show").
 *
 * A path's SA query is started under 6 (from xmit, so also under 4): only
 * ib_sa's, ib_mad's and the HCA driver's own spinlocks are taken inside,
 * and ib_sa calls back from ib_mad's work, never from within
 * ib_sa_path_rec_get().
 *
 * Beside 2-6, never together with them: ipoib_debugfs_lock (ipoib_debugfs.c,
 * every interface's debugfs dentries) is taken under rtnl_lock or alone. A
 * child's parent/children links (ipoib_child.c) change under rtnl_lock;
 * the children list is an RCU list for the reader below.
 *
 * ipoib_get_net_dev_by_params() (ipoib_rdma.c, ib_client callback) is
 * called by rdma_cm for each incoming REQ/SIDR REQ: cma_ib_req_handler ->
 * cma_get_net_dev -> ib_get_net_dev_by_params, from ib_cm's work, with the
 * IB device's client_data_rwsem held for read (so ipoib_remove_one cannot
 * run and ipoib_ca.ports is stable). It takes none of 1-6, so it has no
 * order to keep with them: only rcu_read_lock and the IB core's GID and
 * P_Key cache read locks. It returns the net_device held (dev_hold);
 * rdma_cm puts it.
 *
 * The multicast work sets the Q_Key on the QP (RTS->RTS) under 3 only:
 * whoever replaces or destroys the QP under 2 cancels that work first.
 *
 * Readers of the three hashes use RCU only; nothing on the per-packet
 * transmit path takes a device-wide lock once a neighbour entry exists.
 * Work items run on the per-device ordered workqueue priv->wq and never
 * take rtnl_lock except with rtnl_trylock(), so ndo_stop (under rtnl) may
 * cancel them synchronously.
 */
#ifndef IPOIB_H
#define IPOIB_H

#include <linux/indirect_call_wrapper.h>
#include <linux/netdevice.h>
#include <linux/ratelimit.h>
#include <linux/if_infiniband.h>
#include <linux/rhashtable.h>
#include <linux/skbuff.h>
#include <linux/u64_stats_sync.h>
#include <linux/workqueue.h>
#include <linux/llist.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_sa.h>
#include "ipoib_compat.h"

struct ipoib_cm;	/* connected mode, private to ipoib_cm*.c */
struct ipoib_cm_tx;

/*
 * The driver's version: MODULE_VERSION (which DKMS compares with the
 * in-tree module's: with none on either side it refuses to replace it),
 * ethtool -i, and the version of the DKMS package make deb builds.
 */
#define IPOIB_VERSION		"1.0"

#define IPOIB_ENCAP_LEN		4	/* type + reserved, RFC 4391 section 6 */
#define IPOIB_PSEUDO_LEN	INFINIBAND_ALEN	/* destination carried to xmit */
#define IPOIB_HARD_LEN		(IPOIB_PSEUDO_LEN + IPOIB_ENCAP_LEN)
#define IPOIB_QPN_MASK		0x00ffffffU
#define IPOIB_PKEY_FULL		0x8000	/* P_Key full-member bit */
#define IPOIB_GC_INTERVAL	(10 * HZ)	/* neighbour and path GC period */
#define IPOIB_RX_RING_DEFAULT	256	/* recv_queue_size, ethtool -G rx */
#define IPOIB_TX_RING_DEFAULT	128	/* send_queue_size, ethtool -G tx */
#define IPOIB_RING_MAX		8192	/* the in-tree driver's ranges */
#define IPOIB_RX_RING_MIN	2
#define IPOIB_TX_RING_MIN	128	/* two send CQ polls' worth */
/*
 * Packets held while a path resolves: 16, or 3 per neighbour on the path
 * when that is more (the in-tree driver holds 3 per neighbour: 100 hosts
 * behind one GID answered at once must not lose 84 ARP replies), at most
 * IPOIB_PATH_QUEUE_MAX.
 */
#define IPOIB_PATH_QUEUE_LEN	16
#define IPOIB_PATH_QUEUE_PER_NEIGH 3
#define IPOIB_PATH_QUEUE_MAX	1024
#define IPOIB_MCAST_QUEUE_LEN	16	/* packets held while a send-only join runs */
#define IPOIB_NAPI_TX_BUDGET	64
#define IPOIB_MAX_TX_SGE	(MAX_SKB_FRAGS + 1)	/* linear part + frags */
#define IPOIB_HW_RC		0x80	/* address octet 0: accepts RC (RFC 4755) */
#define IPOIB_CM_MTU		(0x10000 - 0x10)	/* connected-mode IP MTU */
#define IPOIB_CM_BUF_SIZE	(IPOIB_CM_MTU + IPOIB_ENCAP_LEN)

/* The 4-byte header in front of every IPoIB payload. */
struct ipoib_encap {
	__be16 proto;
	__be16 reserved;
};

/*
 * Path refreshes after a fabric event, per interface (ipoib_path.c): at
 * most this many queries a second, released in batches every 20 ms.
 */
#define IPOIB_PATH_REFRESH_PER_SEC	500
#define IPOIB_PATH_REFRESH_TICKS_PER_SEC 50

/* Unicast LIDs are 0x0001-0xbfff; 0xc000 and up are multicast. */
#define IPOIB_LID_UNICAST_END	0xc000

/* Why the resync work runs: one bit per reason, see ipoib_main.c. */
enum ipoib_resync_reason {
	IPOIB_RESYNC_PORT,	/* port went up or down */
	IPOIB_RESYNC_LID,	/* our LID changed */
	IPOIB_RESYNC_PKEY,	/* P_Key table changed */
	IPOIB_RESYNC_SM,	/* a different SM took over */
	IPOIB_RESYNC_REREG,	/* the SM asks clients to re-register */
	IPOIB_RESYNC_TX_TIMEOUT,/* the send queue stalled */
	IPOIB_RESYNC_CQ_ERROR,	/* a CQ overflowed: new CQs and QP */
	IPOIB_RESYNC_GID,	/* our port GID changed (the SM's subnet prefix) */
	IPOIB_RESYNC_SEND_ERR,	/* a send failed: the send queue may be in SQE */
	IPOIB_RESYNC_NR,
};

/* The kinds of rate-limited message, each with a budget per interface. */
enum ipoib_rl {
	IPOIB_RL_CQ_ERROR,
	IPOIB_RL_BOGUS_WC,
	IPOIB_RL_POST_RECV,
	IPOIB_RL_POST_SEND,
	IPOIB_RL_QP_RESTART,
	IPOIB_RL_TX_TIMEOUT,
	IPOIB_RL_JOIN,
	IPOIB_RL_BCAST_REC,
	IPOIB_RL_ATTACH,
	IPOIB_RL_AH,
	IPOIB_RL_SQE,
	IPOIB_RL_CM,
	IPOIB_RL_PATH_LIMIT,
	IPOIB_RL_NR,
};

/* Atomic bits read on the fast path or from IB callbacks. */
enum ipoib_flag {
	IPOIB_FLAG_ADMIN_UP,	/* between ndo_open and ndo_stop */
	IPOIB_FLAG_RUNNING,	/* QP in RTS, rings posted, NAPI enabled */
	IPOIB_FLAG_PORT_ACTIVE,	/* last port query said ACTIVE */
	IPOIB_FLAG_BCAST_READY,	/* broadcast group joined, Q_Key known */
	IPOIB_FLAG_MC_DIRTY,	/* netdev multicast list changed */
	IPOIB_FLAG_CQ_ERROR,	/* a CQ is in error: flushes will not come */
	IPOIB_FLAG_ADDR_CHANGED,/* new QPN or GID: carrier work publishes dev_addr */
	IPOIB_FLAG_PATH_PRESSURE,/* path_pending_max met: the GC frees failed paths */
};

/* How an interface came to be (ipoib_child.c). */
enum ipoib_kind {
	IPOIB_KIND_PORT,	/* one per IB port, made by the ib_client */
	IPOIB_KIND_RTNL,	/* ip link add ... type ipoib pkey ... */
	IPOIB_KIND_LEGACY,	/* sysfs create_child */
};

/* Management counters (ethtool -S), bumped by the datapath. */
enum ipoib_counter {
	IPOIB_CTR_TX_MCAST,		/* multicast/broadcast sent */
	IPOIB_CTR_DROP_NO_PATH,		/* path failed, within its back-off */
	IPOIB_CTR_DROP_PATH_QUEUE_FULL,	/* path still resolving, queue full */
	IPOIB_CTR_DROP_SA_FAILURE,	/* waited for a PathRecord or join that failed */
	IPOIB_CTR_DROP_NO_AH,		/* no address handle could be made */
	IPOIB_CTR_DROP_MCAST_QUEUE_FULL,/* group still joining, queue full */
	IPOIB_CTR_PATH_LID_MOVED,	/* a peer's SLID was not our DLID: re-query */
	IPOIB_CTR_DROP_TOO_BIG,		/* bigger than UD carries: ICMP sent */
	IPOIB_CTR_CM_SIDR_REFUSED,	/* SIDR REQs for our CM service ID */
	IPOIB_CTR_CM_BACKLOG_DROP,	/* for a connection whose ring and backlog were full */
	IPOIB_CTR_DROP_PATH_LIMIT,	/* a new GID while path_pending_max paths resolve */
	IPOIB_CTR_NR,
};

/*
 * An address handle shared by every sender that uses it. Each posted send
 * holds a reference; the owner (path or group) holds one. The last put
 * moves it to priv->dead_ahs; ipoib_ah_reap() waits a grace period (an RCU
 * reader may still try refcount_inc_not_zero()) and destroys it.
 */
struct ipoib_ah {
	struct ib_ah *ibah;
	struct ipoib_dev_priv *priv;
	refcount_t ref;
	/*
	 * A path's IB MTU in bytes when it is below the group's (a thin
	 * link on the way), else 0; set before the AH is published
	 */
	unsigned int thin_mtu;
	struct llist_node dead;
};

/* Per-queue counters for ndo_get_stats64. */
struct ipoib_rx_stats {
	struct u64_stats_sync syncp;
	u64_stats_t packets;
	u64_stats_t bytes;
	u64_stats_t multicast;	/* broadcast and multicast received */
	u64_stats_t dropped;	/* no memory for a new buffer */
	u64_stats_t errors;	/* completion errors */
	u64_stats_t length_errors; /* shorter than the encapsulation header */
};

struct ipoib_tx_stats {
	struct u64_stats_sync syncp;
	u64_stats_t packets;
	u64_stats_t bytes;
	u64_stats_t errors;
};

struct ipoib_rx_buf {
	struct sk_buff *skb;
	u64 mapping;
	bool posted;			/* the QP owns it */
};

struct ipoib_tx_buf {
	struct sk_buff *skb;
	struct ipoib_ah *ah;
	unsigned int hlen;		/* LSO: head bytes sent as the WR header */
	u64 mapping[IPOIB_MAX_TX_SGE];	/* [0] linear part, then the frags */
};

/* Resolution state of a path: tells whether path->ah may be used. */
enum ipoib_path_state {
	IPOIB_PATH_UNRESOLVED,	/* no record yet, packets wait in path->queue */
	IPOIB_PATH_RESOLVED,	/* path->ah valid */
	IPOIB_PATH_FAILED,	/* SA said no/timeout: drop until retry_at */
};

/*
 * One per destination GID, shared by all neighbours (IPv4 and IPv6) of that
 * GID. Found in priv->paths (RCU); inserted and removed under
 * priv->table_lock; freed after a grace period by ipoib_path_gc() or
 * ipoib_path_flush() once no neighbour points to it (nr_neigh == 0).
 */
struct ipoib_path {
	struct rhash_head node;
	union ib_gid dgid;		/* key */
	struct list_head list;		/* priv->path_list, table_lock */
	struct list_head refresh;	/* priv->refresh_list, table_lock */
	struct ipoib_dev_priv *priv;
	struct delayed_work work;	/* refresh and retry queries */
	unsigned int nr_neigh;		/* under priv->table_lock */
	unsigned long last_used;	/* jiffies, written racily by xmit */
	bool dead;			/* set under table_lock + lock */

	spinlock_t lock;		/* protects every field below */
	enum ipoib_path_state state;
	struct ipoib_ah __rcu *ah;	/* written under lock, read under RCU */
	struct sk_buff_head queue;	/* bounded, packets waiting for ah */
	bool want_query;		/* refresh/retry: path->work queries */
	bool querying;			/* an SA query is outstanding */
	int query_id;
	struct ib_sa_query *query;
	struct sa_path_rec rec;		/* record behind path->ah */
	unsigned int backoff_ms;
	unsigned long retry_at;		/* jiffies: no query before this */
	unsigned int queries;		/* SA queries sent, for debugfs */
	u32 moved_slid;			/* SLID that last made us re-query */
	unsigned long slid_query_at;	/* jiffies: no SLID re-query before */
};

/* Hash key of a neighbour: QPN (flags byte cleared) and GID. */
struct ipoib_neigh_key {
	__be32 qpn;
	union ib_gid gid;
} __packed;

/*
 * Private state for one unicast link-layer address. Created by the first
 * packet to that address, found by xmit through priv->neighs under RCU,
 * removed when the kernel neighbour with that address is destroyed
 * (ndo_neigh_destroy) or when idle, and freed after a grace period.
 */
struct ipoib_neigh {
	struct rhash_head node;
	struct ipoib_neigh_key key;
	struct list_head list;		/* priv->neigh_list, table_lock */
	struct ipoib_path *path;	/* holds a path->nr_neigh count */
	unsigned long last_used;	/* jiffies */
	struct ipoib_cm_tx __rcu *cm_tx; /* connected mode, ipoib_cm_tx.c */
	bool dead;			/* unlinked: no new cm_tx, ipoib_cm_tx.c */
	struct rcu_head rcu;
};

/* Membership state of one multicast group. */
enum ipoib_mcast_state {
	IPOIB_MCAST_IDLE,	/* not joined, join when allowed */
	IPOIB_MCAST_JOINING,	/* ib_sa_join_multicast() outstanding */
	IPOIB_MCAST_JOINED,	/* attached (unless send-only), ah valid */
	IPOIB_MCAST_BACKOFF,	/* last join failed, retry at retry_at */
};

/*
 * One multicast group (the broadcast group included). Found by xmit in
 * priv->mcasts (RCU). The list, membership flags and join state are owned
 * by the multicast work under priv->mcast_mutex; mc->lock protects what the
 * SA callback and xmit touch.
 */
struct ipoib_mcast {
	struct rhash_head node;
	union ib_gid mgid;		/* key */
	struct list_head list;		/* priv->mcast_list: add table_lock, del +mcast_mutex */
	struct ipoib_dev_priv *priv;

	/* under priv->mcast_mutex */
	struct list_head free_list;	/* second phase of removal */
	enum ipoib_mcast_state state;
	bool member;			/* in the netdev's multicast list */
	bool in_mc_list;		/* scratch for the list sync */
	bool sendonly;			/* joined with SendOnlyFullMember */
	bool attached;
	bool rejoin;			/* leave and join again */
	bool unwanted;			/* left the multicast list: leave */
	u16 mlid;
	unsigned long joined_at;	/* jiffies of the last successful join */
	struct ib_sa_multicast *sa_mc;
	unsigned int backoff_ms;
	unsigned long retry_at;
	struct ib_sa_mcmember_rec rec;

	unsigned long last_used;	/* jiffies, written racily by xmit */
	spinlock_t lock;		/* protects the fields below */
	struct ipoib_ah __rcu *ah;
	struct sk_buff_head pending;	/* bounded, waiting for the join */
	bool have_result;
	int result_status;
	struct ib_sa_mcmember_rec result;
};

/* One IPoIB interface, bound to one port and one P_Key. */
struct ipoib_dev_priv {
	/*
	 * first: ipoib_priv() finds us through it (its clnt_priv), as an
	 * enhanced IPoIB provider's netdev_priv() starts with one too
	 */
	struct rdma_netdev rn;
	struct net_device *dev;
	/*
	 * The HCA's enhanced IPoIB datapath (ipoib_rn.c): its netdev ops
	 * and destructor as it installed them; set before register, then
	 * constant. enhanced false: our own UD datapath.
	 */
	bool enhanced;
	const struct ipoib_datapath *dp;	/* set at init, then constant */
	bool rn_inited;			/* its ndo_init ran, ndo_uninit not yet */
	u32 qpn;			/* its QPN (ours: priv->qp's) */
	const struct net_device_ops *rn_ops;
	void (*rn_destructor)(struct net_device *dev);
	struct ib_device *ca;
	u32 port;
	struct list_head ca_list;	/* ipoib_ca.ports, add/remove only */
	unsigned long flags;		/* enum ipoib_flag bits */
	struct workqueue_struct *wq;	/* ordered: all work items below */

	/* fixed while the interface exists */
	u32 max_ib_mtu;			/* bytes, from the port */
	u32 rx_buf_size;		/* max_ib_mtu + GRH */

	/* written by resync/open with op_mutex held, read anywhere */
	u16 pkey;			/* with the full-member bit */
	u16 pkey_index;
	u16 local_lid;
	u16 gid_index;			/* of local_gid: 0, or an alias GUID's */
	union ib_gid local_gid;
	u32 qkey;			/* from the broadcast group */
	u32 mcast_mtu;			/* broadcast group MTU - 4 */
	u32 admin_mtu;			/* what the user asked for, rtnl */
	bool mtu_internal;		/* carrier work sets the MTU, rtnl */

	struct mutex op_mutex;		/* QP/CQ state, groups start/stop, see top */
	bool dying;			/* op_mutex (a hint without): cleanup began */
	bool torn_down;			/* rtnl: ipoib_dev_cleanup() ran */

	/* IB resources, created at add, destroyed at remove */
	struct ib_pd *pd;
	struct ib_cq *recv_cq;
	struct ib_cq *send_cq;
	struct ib_qp *qp;
	struct ib_event_handler event_handler;

	/* connected mode (ipoib_cm.c): mode under rtnl + op_mutex */
	bool cm_mode;
	bool cm_asked;			/* rtnl: features without offloads */
	struct ipoib_cm __rcu *cm;	/* op_mutex; RCU for xmit */
	struct ipoib_rx_stats cm_rx_stats;	/* the cm NAPI's */
	struct ipoib_tx_stats cm_tx_stats;

	/* receive side, owned by rx_napi while RUNNING */
	struct napi_struct rx_napi;
	struct ipoib_rx_buf *rx_ring;
	unsigned int rx_ring_size;	/* power of 2; op_mutex, not RUNNING */
	atomic_t rx_posted;
	unsigned int rx_unposted;	/* buffers whose repost failed */
	struct ipoib_rx_stats rx_stats;

	/* send side: head under the tx queue lock, tail owned by tx_napi */
	struct napi_struct tx_napi;
	struct ipoib_tx_buf *tx_ring;
	unsigned int tx_ring_size;	/* as rx_ring_size */
	unsigned int max_send_sge;	/* of the QP; > 1: NETIF_F_SG */
	unsigned int tx_head;
	unsigned int tx_tail;
	struct ipoib_tx_stats tx_stats;
	atomic_long_t tx_dropped;	/* any context */
	atomic_long_t path_drops;	/* no path: SA said no or queue full */

	/* address handles waiting to be destroyed */
	struct llist_head dead_ahs;
	struct work_struct ah_reap_work;

	/* neighbours and paths */
	spinlock_t table_lock;		/* writers of neighs, paths, mcasts */
	struct rhashtable neighs;
	struct list_head neigh_list;
	struct rhashtable paths;
	struct list_head path_list;
	atomic_t paths_pending;		/* paths without an AH yet (path.c) */
	struct list_head refresh_list;	/* paths a refresh has yet to ask for */
	struct delayed_work refresh_work; /* releases them at the paced rate */
	struct delayed_work gc_work;
	wait_queue_head_t path_wait;	/* path->querying became false */
	unsigned long *known_lids;	/* DLIDs of our paths (bitmap, atomic) */
	atomic64_t lid_pending;		/* QPN << 16 | SLID for lid_work, or 0 */
	unsigned long lid_scan_next;	/* jiffies: no lid_work before this */
	struct work_struct lid_work;	/* a sender from an unknown LID */

	/* multicast */
	struct mutex mcast_mutex;	/* mcast_list and group join state */
	struct list_head mcast_list;
	struct rhashtable mcasts;
	struct ipoib_mcast *bcast;	/* also in mcast_list, mcast_mutex */
	struct ib_sa_mcmember_rec bcast_rec; /* parameters for other groups */
	struct delayed_work mcast_work;
	struct delayed_work carrier_work;

	/* fabric events */
	unsigned long resync_reasons;	/* enum ipoib_resync_reason bits */
	struct delayed_work resync_work;	/* later only to retry rtnl */
	struct delayed_work recreate_work; /* retry a failed QP recreate */
	unsigned int recreate_backoff_ms; /* op_mutex */

	struct dentry *mcg_dentry;
	struct dentry *path_dentry;

	/* management: ipoib_child.c, ipoib_sysfs.c, ipoib_ethtool.c, ipoib_debugfs.c */
	struct ipoib_dev_priv *parent;	/* a child's port interface; fixed */
	enum ipoib_kind kind;		/* fixed */
	struct list_head children;	/* our children (child_list), rtnl */
	struct list_head child_list;	/* in parent->children, rtnl */
	bool umcast;			/* READ_ONCE/WRITE_ONCE, no lock */
	unsigned long addr_changed_at;	/* jiffies, ipoib_addr_changed() */
	unsigned int notify_left;	/* repeats of NOTIFY_PEERS to send, rtnl */
	unsigned long notify_next;	/* jiffies of the next one, rtnl */
	struct ratelimit_state rl[IPOIB_RL_NR];	/* ipoib_*_ratelimited() */
	u16 coal_usecs;			/* RX CQ moderation: ethtool writes under */
					/* rtnl + op_mutex, recreate reads */
	u16 coal_frames;
	atomic_long_t counters[IPOIB_CTR_NR];	/* any context */
	struct dentry *debugfs;		/* our directory, ipoib_debugfs_lock */
};

/* Our state of an interface (ours, or one of a provider's netdev_priv()) */
static inline struct ipoib_dev_priv *ipoib_priv(const struct net_device *dev)
{
	const struct rdma_netdev *rn = netdev_priv(dev);

	return rn->clnt_priv;
}

extern struct ib_sa_client ipoib_sa_client;

/*
 * The interfaces of one IB device, as ib_client data: the list is built
 * in ipoib_add_one before the data is published and emptied in
 * ipoib_remove_one after the IB core stopped calling us.
 */
struct ipoib_ca {
	struct list_head ports;		/* ipoib_dev_priv.ca_list */
};

/*
 * Rate-limited messages about one interface: each kind of message has its
 * own budget on each interface (priv->rl[]). net_ratelimit() is one budget
 * for the whole network stack and a static state per call site one for
 * every interface, so a burst on one interface (say a join failing for
 * each of its groups) would silence the same message about another, or
 * every other message.
 */
#define ipoib_printk_ratelimited(level, priv, kind, fmt, ...)		\
do {									\
	struct ipoib_dev_priv *_ipoib_rl_priv = (priv);			\
									\
	if (__ratelimit(&_ipoib_rl_priv->rl[kind]))			\
		netdev_##level(_ipoib_rl_priv->dev, fmt, ##__VA_ARGS__);	\
} while (0)
#define ipoib_err_ratelimited(priv, kind, fmt, ...) \
	ipoib_printk_ratelimited(err, priv, kind, fmt, ##__VA_ARGS__)
#define ipoib_warn_ratelimited(priv, kind, fmt, ...) \
	ipoib_printk_ratelimited(warn, priv, kind, fmt, ##__VA_ARGS__)

/*
 * Debug messages: dynamic debug (netdev_dbg), or every one of them at
 * KERN_DEBUG while the in-tree driver's debug_level (mcast_debug_level for
 * the multicast ones) is above 0, as sites that set it expect.
 */
extern int ipoib_debug_level;
extern int ipoib_mcast_debug_level;
#define ipoib_dbg_level(lvl, dev, ...)					\
do {									\
	struct net_device *_ipoib_dbg_dev = (dev);			\
									\
	if (READ_ONCE(lvl) > 0)						\
		netdev_printk(KERN_DEBUG, _ipoib_dbg_dev, __VA_ARGS__);	\
	else								\
		netdev_dbg(_ipoib_dbg_dev, __VA_ARGS__);		\
} while (0)
#define ipoib_dbg(dev, fmt, ...) \
	ipoib_dbg_level(ipoib_debug_level, dev, fmt, ##__VA_ARGS__)
#define ipoib_dbg_mcast(dev, fmt, ...) \
	ipoib_dbg_level(ipoib_mcast_debug_level, dev, fmt, ##__VA_ARGS__)

/* Record "used now" without dirtying the cache line more than once a tick. */
static inline void ipoib_touch(unsigned long *stamp)
{
	unsigned long now = jiffies;

	if (READ_ONCE(*stamp) != now)
		WRITE_ONCE(*stamp, now);
}

/* ipoib_main.c */
extern const struct net_device_ops ipoib_netdev_ops;
void ipoib_queue_resync(struct ipoib_dev_priv *priv,
			enum ipoib_resync_reason reason);
int ipoib_query_port(struct ipoib_dev_priv *priv);
void ipoib_requeue_xmit(struct ipoib_dev_priv *priv, struct sk_buff *skb);
int ipoib_dev_init(struct net_device *dev, struct ib_device *ca, u32 port,
		   u16 pkey);
void ipoib_dev_cleanup(struct ipoib_dev_priv *priv);
void ipoib_dev_free(struct ipoib_dev_priv *priv);

/* ipoib_addr.c */
void ipoib_build_hw_addr(struct ipoib_dev_priv *priv, u8 *addr);
void ipoib_addr_changed(struct ipoib_dev_priv *priv);
void ipoib_publish_addr(struct ipoib_dev_priv *priv, bool carrier);
int ipoib_set_mac_address(struct net_device *dev, void *p);

/* ipoib_netdev.c */
extern const struct header_ops ipoib_header_ops;
extern struct rtnl_link_ops ipoib_link_ops;
void ipoib_setup(struct net_device *dev);
netdev_tx_t ipoib_start_xmit(struct sk_buff *skb, struct net_device *dev);
void ipoib_get_stats64(struct net_device *dev,
		       struct rtnl_link_stats64 *stats);

/* ipoib_ethtool.c */
extern const struct ethtool_ops ipoib_ethtool_ops;

/* ipoib_debugfs.c */
extern u32 ipoib_cm_attach_delay_us;	/* a test's fault hook, ipoib_cm_xmit() */
extern atomic_t ipoib_cm_attach_delayed;	/* how often it held one */
void ipoib_debugfs_init(void);
void ipoib_debugfs_exit(void);
void ipoib_debugfs_add(struct ipoib_dev_priv *priv);
void ipoib_debugfs_remove(struct ipoib_dev_priv *priv);

/*
 * The datapath: our own UD QP and its CQs (ipoib_ib.c, ipoib_rx.c,
 * ipoib_tx.c) or the HCA's enhanced IPoIB netdev (ipoib_rn.c), chosen when
 * the interface is made. Everything above it (neighbours, paths, groups,
 * P_Keys, carrier, children) is one code path for both and reaches it only
 * through these operations (ipoib_dp_*() below).
 *  init        the PD (and our CQs and QP), before register
 *  destroy     the first step of the teardown (op_mutex): nothing is
 *              delivered to us or completes afterwards
 *  cleanup     the rest, once nothing can reach the interface
 *  start/stop  op_mutex; with the HCA's datapath also rtnl: its open and
 *              stop, set_id (the P_Key index) before every open
 *  recreate    new QP and CQs after a CQ error (op_mutex, stopped); the
 *              HCA's datapath has none of ours (NULL)
 *  set_qkey    the broadcast group's Q_Key, before any unicast send
 *  attach/detach  a multicast group by MGID (the HCA's ignores the MLID)
 *  send        ndo_start_xmit context: @skb starts at the IPoIB header,
 *              consumed, and our reference on @ah put (at once or at the
 *              send's completion)
 */
struct ipoib_datapath {
	int (*init)(struct ipoib_dev_priv *priv);
	void (*destroy)(struct ipoib_dev_priv *priv);
	void (*cleanup)(struct ipoib_dev_priv *priv);
	int (*start)(struct ipoib_dev_priv *priv);
	void (*stop)(struct ipoib_dev_priv *priv);
	int (*recreate)(struct ipoib_dev_priv *priv);
	int (*set_qkey)(struct ipoib_dev_priv *priv, u32 qkey);
	int (*attach)(struct ipoib_dev_priv *priv, union ib_gid *mgid,
		      u16 mlid, bool bcast);
	int (*detach)(struct ipoib_dev_priv *priv, union ib_gid *mgid,
		      u16 mlid);
	void (*send)(struct ipoib_dev_priv *priv, struct sk_buff *skb,
		     struct ipoib_ah *ah, u32 qpn);
};

/* ipoib_ib.c: our own UD datapath */
extern const struct ipoib_datapath ipoib_ud_datapath;
void ipoib_ib_sq_recover(struct ipoib_dev_priv *priv);
unsigned int ipoib_recv_queue_size(void);
void ipoib_ib_params_init(void);
int ipoib_ib_resize(struct ipoib_dev_priv *priv, unsigned int rx,
		    unsigned int tx);
int ipoib_set_rings(struct ipoib_dev_priv *priv, unsigned int rx,
		    unsigned int tx);

/* ipoib_rn.c: the HCA's enhanced IPoIB datapath (rdma_netdev) */
int ipoib_rn_init(struct net_device *dev, struct ib_device *ca, u32 port);
struct net_device *ipoib_netdev_alloc(struct ib_device *ca, u32 port,
				      const char *name);
void ipoib_rn_release(struct net_device *dev);
void ipoib_netdev_free(struct net_device *dev);
int ipoib_rn_ndo_init(struct ipoib_dev_priv *priv);
void ipoib_rn_send(struct ipoib_dev_priv *priv, struct sk_buff *skb,
		   struct ipoib_ah *ah, u32 qpn);
extern const struct ipoib_datapath ipoib_rn_datapath;

/* The datapath's operations (struct ipoib_datapath) */
static inline int ipoib_dp_init(struct ipoib_dev_priv *priv)
{
	priv->dp = priv->enhanced ? &ipoib_rn_datapath : &ipoib_ud_datapath;
	return priv->dp->init(priv);
}

static inline void ipoib_dp_destroy(struct ipoib_dev_priv *priv)
{
	priv->dp->destroy(priv);
}

static inline void ipoib_dp_cleanup(struct ipoib_dev_priv *priv)
{
	priv->dp->cleanup(priv);
}

static inline int ipoib_dp_start(struct ipoib_dev_priv *priv)
{
	return priv->dp->start(priv);
}

static inline void ipoib_dp_stop(struct ipoib_dev_priv *priv)
{
	priv->dp->stop(priv);
}

static inline int ipoib_dp_recreate(struct ipoib_dev_priv *priv)
{
	return priv->dp->recreate ? priv->dp->recreate(priv) : 0;
}

static inline int ipoib_dp_set_qkey(struct ipoib_dev_priv *priv, u32 qkey)
{
	return priv->dp->set_qkey(priv, qkey);
}

static inline int ipoib_dp_attach(struct ipoib_dev_priv *priv,
				  union ib_gid *mgid, u16 mlid, bool bcast)
{
	return priv->dp->attach(priv, mgid, mlid, bcast);
}

static inline int ipoib_dp_detach(struct ipoib_dev_priv *priv,
				  union ib_gid *mgid, u16 mlid)
{
	return priv->dp->detach(priv, mgid, mlid);
}

/* The QPN in our address: our UD QP's, or the HCA's datapath's */
static inline u32 ipoib_qpn(const struct ipoib_dev_priv *priv)
{
	if (priv->enhanced)
		return priv->qpn;
	return priv->qp ? priv->qp->qp_num : 0;
}

/* ipoib_rx.c */
struct sk_buff *ipoib_rx_alloc(struct ipoib_dev_priv *priv, gfp_t gfp,
			       u64 *mapping);
int ipoib_rx_post(struct ipoib_dev_priv *priv, unsigned int i);
void ipoib_rx_free_buf(struct ipoib_dev_priv *priv, unsigned int i);
void ipoib_rx_complete(struct ipoib_dev_priv *priv, struct ib_wc *wc);
int ipoib_rx_poll(struct napi_struct *napi, int budget);

/* ipoib_tx.c */
void ipoib_too_big(struct ipoib_dev_priv *priv, struct sk_buff *skb,
		   unsigned int mtu);
bool ipoib_ud_too_big(struct ipoib_dev_priv *priv, struct sk_buff *skb);
bool ipoib_path_too_big(struct ipoib_dev_priv *priv, struct sk_buff *skb,
			unsigned int mtu);
void ipoib_tx_complete(struct ipoib_dev_priv *priv, struct ib_wc *wc);
int ipoib_tx_poll(struct napi_struct *napi, int budget);
void ipoib_ud_send(struct ipoib_dev_priv *priv, struct sk_buff *skb,
		   struct ipoib_ah *ah, u32 qpn);
unsigned int ipoib_tx_map(struct ipoib_dev_priv *priv,
			  struct ipoib_tx_buf *buf, struct ib_sge *sge);
void ipoib_tx_unmap(struct ipoib_dev_priv *priv, struct ipoib_tx_buf *buf,
		    unsigned int nr_frags);
bool ipoib_tx_may_wake(struct ipoib_dev_priv *priv);
void ipoib_count_tx_drop(struct ipoib_dev_priv *priv, struct sk_buff *skb);

/* UD sends posted and not yet completed */
static inline unsigned int ipoib_tx_inflight(struct ipoib_dev_priv *priv)
{
	return READ_ONCE(priv->tx_head) - READ_ONCE(priv->tx_tail);
}

/* ipoib_cm.c, ipoib_cm_tx.c */
struct seq_file;
void ipoib_cm_show(struct seq_file *m, struct ipoib_dev_priv *priv);
int ipoib_cm_supported(struct ipoib_dev_priv *priv);
int ipoib_cm_start(struct ipoib_dev_priv *priv);
void ipoib_cm_stop(struct ipoib_dev_priv *priv);
bool ipoib_cm_xmit(struct ipoib_dev_priv *priv, struct ipoib_neigh *neigh,
		   struct sk_buff *skb, const u8 *daddr);
void ipoib_cm_neigh_gone(struct ipoib_neigh *neigh);
void ipoib_cm_neigh_moved(struct ipoib_neigh *neigh);

/* ipoib_ah.c */
struct ipoib_ah *ipoib_ah_create(struct ipoib_dev_priv *priv,
				 struct rdma_ah_attr *attr);
void ipoib_ah_put(struct ipoib_ah *ah);
struct ipoib_ah *ipoib_ah_get_rcu(struct ipoib_ah __rcu **slot);
void ipoib_ah_reap(struct work_struct *work);

/* ipoib_neigh.c */
int ipoib_neigh_init(struct ipoib_dev_priv *priv);
void ipoib_neigh_cleanup(struct ipoib_dev_priv *priv);
void ipoib_neigh_xmit(struct ipoib_dev_priv *priv, struct sk_buff *skb,
		      const u8 *daddr);
void ipoib_neigh_destroy(struct net_device *dev, struct neighbour *n);
void ipoib_neigh_flush(struct ipoib_dev_priv *priv);
void ipoib_neigh_gc(struct work_struct *work);

/* ipoib_path.c */
int ipoib_path_init(struct ipoib_dev_priv *priv);
void ipoib_path_cleanup(struct ipoib_dev_priv *priv);
struct ipoib_path *ipoib_path_get_or_create(struct ipoib_dev_priv *priv,
					    const union ib_gid *dgid);
void ipoib_path_xmit(struct ipoib_path *path, struct sk_buff *skb, u32 qpn);
bool ipoib_path_copy_rec(struct ipoib_path *path, struct sa_path_rec *rec);
void ipoib_path_refresh_all(struct ipoib_dev_priv *priv);
void ipoib_path_check_slid(struct ipoib_dev_priv *priv,
			   const union ib_gid *gid, u32 slid);
void ipoib_path_suspect(struct ipoib_dev_priv *priv, const union ib_gid *gid);
void ipoib_path_note_slid(struct ipoib_dev_priv *priv, u32 qpn, u32 slid);
void ipoib_path_gc(struct ipoib_dev_priv *priv, bool pressure);
bool ipoib_path_has_failed(struct ipoib_path *path);
void ipoib_path_flush(struct ipoib_dev_priv *priv);

/* ipoib_multicast.c */
int ipoib_mcast_init(struct ipoib_dev_priv *priv);
void ipoib_mcast_cleanup(struct ipoib_dev_priv *priv);
void ipoib_mcast_start(struct ipoib_dev_priv *priv);
void ipoib_mcast_stop(struct ipoib_dev_priv *priv);
void ipoib_mcast_rejoin_all(struct ipoib_dev_priv *priv);
void ipoib_mcast_xmit(struct ipoib_dev_priv *priv, struct sk_buff *skb,
		      const union ib_gid *mgid);
void ipoib_mcast_task(struct work_struct *work);
void ipoib_carrier_task(struct work_struct *work);
bool ipoib_mcast_bcast_joined_since(struct ipoib_dev_priv *priv,
				    unsigned long t);
void ipoib_build_bcast_addr(struct ipoib_dev_priv *priv, u8 *addr);
void ipoib_mgid_set_pkey(struct ipoib_dev_priv *priv, u8 *mgid);

/* ipoib_child.c */
int ipoib_child_create(struct ipoib_dev_priv *ppriv, u16 pkey);
int ipoib_child_delete(struct ipoib_dev_priv *ppriv, u16 pkey);
void ipoib_child_unlink_all(struct ipoib_dev_priv *ppriv,
			    struct list_head *kill);
int ipoib_child_get_iflink(const struct net_device *dev);
bool ipoib_pkey_check(struct ipoib_dev_priv *priv, u16 *pkey);
int ipoib_set_mode(struct ipoib_dev_priv *priv, u16 mode,
		   struct netlink_ext_ack *extack);
void ipoib_set_umcast(struct ipoib_dev_priv *priv, bool on);

/* ipoib_rdma.c */
struct net_device *ipoib_get_net_dev_by_params(struct ib_device *ca, u32 port,
					       u16 pkey,
					       const union ib_gid *gid,
					       const struct sockaddr *addr,
					       void *client_data);

/* ipoib_sysfs.c */
const struct attribute_group *ipoib_sysfs_group(struct ipoib_dev_priv *priv);

/* Count one event for ethtool -S; any context. */
static inline void ipoib_count(struct ipoib_dev_priv *priv,
			       enum ipoib_counter ctr)
{
	atomic_long_inc(&priv->counters[ctr]);
}

/* The per-packet one: a direct call to either datapath's send */
static inline void ipoib_dp_send(struct ipoib_dev_priv *priv,
				 struct sk_buff *skb, struct ipoib_ah *ah,
				 u32 qpn)
{
	INDIRECT_CALL_2(priv->dp->send, ipoib_ud_send, ipoib_rn_send,
			priv, skb, ah, qpn);
}

#endif /* IPOIB_H */
