/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softib: a test-only software InfiniBand HCA with a simulated fabric.
 *
 * Shared types and prototypes of the softib core (owned by the core), used
 * by the SA (softib_sa.c) and the Ethernet transport (softib_eth.c,
 * softib_wire.c).
 *
 * Interface notes for the other softib files (newest first):
 *   - Counters beyond INTERFACES.md are appended after drop_icrc:
 *     drop_link_down, drop_no_route, rx_err_cqe, cq_overflow, drop_txq_full.
 *   - softib_count() is a static inline (same signature as agreed).
 *   - The core calls softib_eth_xmit_corrupt() for the corrupt fault (R4)
 *     and softib_eth_detach() from dealloc_driver with no lock held (R1).
 *
 * Lock order (take a lock only while holding the ones above it, never the
 * ones below):
 *
 *   softib_devs_lock  (mutex)     the device list (writers), debugfs topology
 *   sdev->cfg_lock    (mutex)     port configuration writers: LID, state,
 *                                 P_Key table, capability mask
 *   sdev->mcast_lock  (spinlock)  writers of sdev->mcast (attachments)
 *   qp->lock          (spinlock)  qp->state, the receive queue ring, an RC
 *                                 QP's requester and responder state
 *   srq->lock         (spinlock)  an SRQ's ring and limit
 *   cq->lock          (spinlock)  the CQ ring, its arm state
 *   sdev->txq_lock    (spinlock)  sdev->txq (packets waiting for tx_work)
 *   softib_fault_lock (spinlock)  the fault PRNG state
 *
 * The spinlocks are taken with IRQs saved (post_send may run with IRQs off).
 * Completion handlers run from the CQ's irq_work (hard IRQ, no softib lock
 * held), so completions may be pushed with qp->lock held. Readers of the
 * device list, of the QP table and of the multicast attachments use RCU.
 */
#ifndef _SOFTIB_H
#define _SOFTIB_H

#include <linux/atomic.h>
#include <linux/hrtimer.h>
#include <linux/irq_work.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
#include "ipoib_compat.h"

#include "softib_sma.h"

struct dentry;
struct net_device;

#define SOFTIB_PKEY_TBL_LEN	16
#define SOFTIB_MAX_ALIAS_GUIDS	7	/* GID indexes 1..7 (module parameter alias_guids) */
#define SOFTIB_MAX_RECV_SGE	16	/* IPoIB CM posts 64 KiB as 16 SGEs */
#define SOFTIB_MAX_SEND_SGE	32
#define SOFTIB_MAX_QP_WR	16384
#define SOFTIB_MAX_CQE		65536
#define SOFTIB_MAX_QP		4096
#define SOFTIB_QPN_FIRST	0x48
#define SOFTIB_QPN_LAST		0xfffffe	/* 0xffffff is the multicast QPN */
#define SOFTIB_MAX_MCAST_GRP	1024
#define SOFTIB_MAX_MCAST_ATT	64
#define SOFTIB_GUID_BASE	0x0002c90300a00000ULL
#define SOFTIB_SUBNET_PREFIX	0xfe80000000000000ULL
/* LRH 8 + GRH 40 + BTH 12 + DETH 8 + ICRC 4: bytes an Ethernet frame adds */
#define SOFTIB_WIRE_OVERHEAD	72
#define SOFTIB_GRH_BYTES	40	/* receive buffers always start with it */
/* the reserved lkey every PD gets as its local_dma_lkey: 0 is no key */
#define SOFTIB_LOCAL_DMA_LKEY	0x100
#define SOFTIB_LSO_MAX_HDR	256	/* longest header an LSO WR may carry */
#define SOFTIB_LSO_MAX_PAYLOAD	65536	/* longest payload of one LSO WR */

/* Per-device counters; the debugfs names are in softib_counter_names[]. */
enum softib_counter {
	SOFTIB_CNT_TX_PACKETS,
	SOFTIB_CNT_TX_BYTES,
	SOFTIB_CNT_RX_PACKETS,
	SOFTIB_CNT_RX_BYTES,
	SOFTIB_CNT_RX_MCAST,
	SOFTIB_CNT_DROP_BAD_PKEY,
	SOFTIB_CNT_DROP_BAD_QKEY,
	SOFTIB_CNT_DROP_NO_QP,
	SOFTIB_CNT_DROP_NO_RWQE,
	SOFTIB_CNT_DROP_TOO_LONG,
	SOFTIB_CNT_DROP_MALFORMED,
	SOFTIB_CNT_DROP_QP_STATE,
	SOFTIB_CNT_DROP_FAULT,
	SOFTIB_CNT_DUP_FAULT,
	SOFTIB_CNT_REORDER_FAULT,
	SOFTIB_CNT_CORRUPT_FAULT,
	SOFTIB_CNT_DROP_ICRC,
	SOFTIB_CNT_DROP_LINK_DOWN,	/* sent or received while the port is down */
	SOFTIB_CNT_DROP_NO_ROUTE,	/* unicast DLID that no port on the fabric holds */
	SOFTIB_CNT_RX_ERR_CQE,		/* receive completed with an error status */
	SOFTIB_CNT_CQ_OVERFLOW,
	SOFTIB_CNT_DROP_TXQ_FULL,	/* the sender's fabric queue was full */
	SOFTIB_CNT_CQ_MODIFY,		/* modify_cq (CQ moderation) accepted */
	SOFTIB_CNT_COMP_EVENTS,		/* completion handler calls */
	SOFTIB_CNT_COMP_HARDIRQ,	/* of which in hard-IRQ context */
	SOFTIB_CNT_POST_SEND_FULL,	/* post_send refused: the send queue was full */
	SOFTIB_CNT_SEND_FLUSHED,	/* send WRs completed with a flush error */
	SOFTIB_CNT_CQE_CLEANED,		/* CQEs a QP's destruction or reset took off */
	SOFTIB_CNT_QP_FATAL,		/* IB_EVENT_QP_FATAL raised (qp_fatal knob) */
	SOFTIB_CNT_MCAST_NOT_MEMBER,	/* multicast for a port the SA has not in the group */
	SOFTIB_CNT_TX_CSUM,		/* sends whose checksums the HCA filled (IB_SEND_IP_CSUM) */
	SOFTIB_CNT_TX_LSO,		/* LSO WRs segmented */
	SOFTIB_CNT_TX_LSO_SEGS,		/* packets they became */
	SOFTIB_CNT_TX_LSO_ERR,		/* LSO WRs completed in error */
	SOFTIB_CNT_RX_CSUM_OK,		/* receives flagged IB_WC_IP_CSUM_OK */
	SOFTIB_CNT_RX_CSUM_BAD,		/* IPv4 TCP/UDP receives whose checksum is wrong */
	SOFTIB_CNT_SQ_ERROR,		/* UD QPs whose send queue stopped in SQE */
	SOFTIB_CNT_DROP_SL,		/* sent on an SL the fabric drops (sl_drop) */
	SOFTIB_CNT_RC_TX,		/* RC data packets sent (retransmissions too) */
	SOFTIB_CNT_RC_RX,		/* RC data packets accepted in sequence */
	SOFTIB_CNT_RC_ACK,		/* ACKs sent by a responder */
	SOFTIB_CNT_RC_ACK_COALESCED,	/* ACKs merged into one still queued */
	SOFTIB_CNT_RC_NAK,		/* NAK sequence errors sent */
	SOFTIB_CNT_RC_RNR_NAK,		/* RNR NAKs sent (no receive WQE) */
	SOFTIB_CNT_RC_DUP,		/* duplicate RC packets received (re-acknowledged) */
	SOFTIB_CNT_RC_RETRANS,		/* RC packets sent again (go-back-N) */
	SOFTIB_CNT_RC_TIMEOUT,		/* requester ACK timeouts */
	SOFTIB_CNT_RC_RETRY_EXC,	/* sends completed with a retry-exceeded error */
	SOFTIB_CNT_RC_DROP,		/* RC packets dropped: bad source, opcode order */
	SOFTIB_CNT_RC_ACCESS_ERR,	/* RDMA/atomic requests the QP does not allow (NAK) */
	SOFTIB_CNT_SRQ_LIMIT,		/* SRQ limit events raised */
	SOFTIB_CNT_LAST_WQE,		/* IB_EVENT_QP_LAST_WQE_REACHED raised */
	SOFTIB_CNT_DROP_PATH_MTU,	/* longer than a thin link on the way (path_mtu) */
	SOFTIB_CNT_BAD_LKEY,		/* WRs whose SGE named no key of their PD */
	SOFTIB_CNT_SEND_DATA_CHANGED,	/* packets whose data changed after the post */
	SOFTIB_CNT_TX_FLUSHED,		/* packets not sent: their WR was flushed first */
	SOFTIB_NR_COUNTERS
};

extern const char * const softib_counter_names[SOFTIB_NR_COUNTERS];

/*
 * The port's logical state, with the values of enum ib_port_state (what
 * query_port reports); the embedded SM takes it INIT -> ARMED -> ACTIVE.
 */
enum softib_port_state {
	SOFTIB_PORT_DOWN = IB_PORT_DOWN,
	SOFTIB_PORT_INIT = IB_PORT_INIT,	/* link up, not configured by the SM yet */
	SOFTIB_PORT_ARMED = IB_PORT_ARMED,	/* configured, not yet told to go active */
	SOFTIB_PORT_ACTIVE = IB_PORT_ACTIVE,
};

/* One IB packet in flight (UD, GSI, SMI or RC). */
/*
 * A send WR's gather list, kept by its packets until they have read their
 * data (softib_sendbuf.c).
 */
struct softib_sges {
	refcount_t ref;
	u32 num;
	struct {
		u64 addr;
		u32 len;
	} sg[];
};

/* What the HCA fills in over a deferred packet's data (softib_pkt_load) */
enum {
	SOFTIB_FIX_NONE,
	SOFTIB_FIX_CSUM,	/* IB_SEND_IP_CSUM */
	SOFTIB_FIX_LSO,		/* an LSO segment's IPv4 and TCP checksums */
};

struct softib_pkt {
	struct list_head list;
	u16 slid, dlid;
	u8 sl;
	bool has_grh;
	struct ib_grh grh;	/* as on the wire; valid if has_grh */
	u8 opcode;		/* BTH opcode (softib_wire.c: the ones carried) */
	u16 pkey;		/* BTH P_Key */
	u32 dqpn;		/* BTH, 24 bits */
	u32 psn;		/* BTH, 24 bits (RC) */
	bool ack_req;		/* BTH A bit (RC) */
	u32 aeth;		/* AETH of an RC ACK: syndrome << 24 | MSN */
	u64 va;			/* RETH or AtomicETH of an RC RDMA or atomic request */
	u32 rkey;
	u32 dma_len;		/* RETH */
	u64 swap, compare;	/* AtomicETH (swap is the add data of FETCH ADD) */
	u32 qkey;		/* DETH (UD) */
	u32 sqpn;		/* DETH, 24 bits (UD); the sending QP's number (RC) */
	__be32 imm;		/* if opcode is _WITH_IMMEDIATE */
	u32 len;		/* payload bytes */
	struct softib_qp *sqp;	/* sending QP whose WR completes when it leaves */
	u32 sseq;		/* that WR's sequence number on sqp */
	/* UD, RC: data[] from dst_off on is read from src when it leaves */
	struct softib_sges *src;	/* NULL: data[] is complete */
	struct softib_qp *wqp;		/* the QP whose WR sseq it is */
	u32 src_off;			/* first byte of the gather list */
	u32 src_hash;			/* of those bytes at post time */
	u16 dst_off;
	u8 src_fix;			/* SOFTIB_FIX_* */
	u8 data[];
};

#define SOFTIB_MAX_PORTS	2

/*
 * One port of a simulated HCA: what the fabric, the SA and the debugfs
 * knobs see (a LID, a link, a P_Key table, a send queue, counters). Port 1
 * is the HCA itself: its ibdev is the registered ib_device and its qps
 * table holds every QP of the HCA. A two-port HCA (module parameter ports)
 * has a second softib_dev for port 2, allocated beside it, whose ibdev and
 * qps are unused; hca and ports[] tie them together.
 */
struct softib_dev {
	struct ib_device ibdev;		/* first: ib_alloc_device(); port 1 only */
	struct softib_dev *hca;		/* port 1's softib_dev (itself for port 1) */
	struct softib_dev *ports[SOFTIB_MAX_PORTS];	/* hca only: by port - 1 */
	u8 port_num;			/* this port's number, 1 or 2 */
	char name[IB_DEVICE_NAME_MAX];	/* port 2: "<hca>p2"; port 1 uses ibdev's */
	struct list_head list;		/* in softib_devs; RCU readers */
	struct net_device *ndev;	/* lower netdev; NULL: in-kernel fabric */
	void *eth;			/* Ethernet transport state */
	u64 guid;			/* node and port GUID, from the first LID */
	enum ib_mtu mtu;		/* active and max MTU of the port */
	bool ud_csum, ud_tso;		/* offloads offered (softib_offload.c) */
	bool enhanced;			/* HCA: offers rdma_netdev (softib_rn.c) */
	struct softib_rn *rn_parent;	/* the port's enhanced IPoIB parent (softib_rn.c) */

	struct mutex cfg_lock;		/* serializes writers of the fields below */
	u16 lid;			/* READ_ONCE: read anywhere */
	enum softib_port_state state;	/* READ_ONCE: read anywhere */
	u32 port_cap_flags;
	u16 pkeys[SOFTIB_PKEY_TBL_LEN];	/* READ_ONCE per entry */

	struct xarray qps;		/* QPN -> struct softib_qp; RCU readers */
	u32 next_qpn;			/* xa_alloc_cyclic() cursor */
	struct xarray mrs;		/* MR key >> 8 -> struct softib_mr; RCU readers */
	atomic_t mr_key;		/* the low byte of MR keys, one per MR */

	spinlock_t mcast_lock;		/* writers of mcast */
	struct list_head mcast;		/* struct softib_mcast_att; RCU readers */
	unsigned int n_mcast;		/* under mcast_lock */

	spinlock_t txq_lock;		/* protects txq */
	struct list_head txq;		/* packets sent, waiting for tx_work */
	u32 txq_len;			/* under txq_lock; debugfs reads it */
	bool tx_dead;			/* under txq_lock: device going away */
	/* only touched by tx_work (and by softib_fabric_dev_stop() after it): */
	struct softib_pkt *held;	/* reorder fault: goes out after the next */
	unsigned long stall_until;	/* send stall fault: jiffies, 0: none (debugfs) */
	struct delayed_work tx_work;	/* delivers txq, completes sends */
	struct delayed_work arm_work;	/* embedded SM: INIT -> ARMED -> ACTIVE */
	bool sweep_held;		/* under cfg_lock: a step waits for "step" */

	atomic64_t counters[SOFTIB_NR_COUNTERS];
	atomic_t fail_post_send;	/* one-shot failure counts (debugfs) */
	atomic_t fail_create_ah;
	u32 fail_ah_dlid;
	/*
	 * 0, or the MTU in bytes of a thin link between this port's switch
	 * and the rest of the fabric: paths to the other ports carry no more
	 * (debugfs path_mtu; in-kernel fabric with the embedded SA)
	 */
	u32 path_mtu;		/* 0: any AH fails, else only AHs to this DLID */
	atomic_t fail_cq_overflow;
	atomic_t fail_create_cq;
	atomic_t fail_modify_cq;	/* modify_cq answers -EOPNOTSUPP */
	atomic_t fail_modify_qp;	/* a UD QP's way up answers -ENOMEM */
	atomic_t rx_starve;
	atomic_t lso_bad_mss;		/* the next N LSO WRs read as mss 0 */
	atomic_t lso_bad_hlen;		/* ... as one byte short of their header */

	struct dentry *debugfs;		/* softib/<name>/ */

	/* external-SM mode: what the SM set (softib_sma.c); fab_port 0: unused */
	struct softib_sma_port sma;
};

/* the HCA (port 1) of an ib_device */
static inline struct softib_dev *to_sdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct softib_dev, ibdev);
}

/* the ib_device a port belongs to */
static inline struct ib_device *softib_ibdev(struct softib_dev *sdev)
{
	return &sdev->hca->ibdev;
}

/* port @port (1-based, already checked against phys_port_cnt) of an HCA */
static inline struct softib_dev *softib_port(struct softib_dev *hca, u32 port)
{
	return hca->ports[port - 1];
}

static inline u16 softib_dev_lid(const struct softib_dev *sdev)
{
	return READ_ONCE(sdev->lid);
}

static inline bool softib_dev_active(const struct softib_dev *sdev)
{
	return READ_ONCE(sdev->state) == SOFTIB_PORT_ACTIVE;
}

static inline bool softib_lid_is_mcast(u16 lid)
{
	return lid >= 0xc000 && lid != 0xffff;
}

/* Verbs objects (softib_verbs.c) */
struct softib_pd {
	struct ib_pd ibpd;
};

struct softib_mr {
	struct ib_mr ibmr;
	struct rcu_head rcu;		/* softib_sges_ok() looks MRs up under RCU */
};

struct softib_ah {
	struct ib_ah ibah;
	struct rdma_ah_attr attr;	/* as created; read by query_ah, post_send */
};

struct softib_cq {
	struct ib_cq ibcq;
	spinlock_t lock;		/* protects everything below */
	struct ib_wc *ring;		/* cqe + 1 entries */
	u32 size;			/* number of ring entries */
	u32 head, tail;			/* poll at head, push at tail */
	enum ib_cq_notify_flags notify;	/* 0: not armed */
	bool overflowed;		/* CQ_ERR raised; the CQ is dead */
	u16 moder_count, moder_period;	/* modify_cq: event after N CQEs or T us */
	u32 moder_pending;		/* CQEs since the last event, while armed */
	bool event_due;			/* comp_work queued for the handler */
	struct irq_work comp_work;	/* calls the completion handler (hard IRQ) */
	struct hrtimer moder_timer;	/* the moderation period */
	struct work_struct err_work;	/* overflow: CQ_ERR, attached QPs to ERR */
};

struct softib_rwqe {
	u64 wr_id;
	u32 num_sge;
	struct ib_sge sge[SOFTIB_MAX_RECV_SGE];
};

/* A shared receive queue (softib_rc.c). */
struct softib_srq {
	struct ib_srq ibsrq;
	spinlock_t lock;		/* the ring and limit */
	struct softib_rwqe *rq;		/* ring of size entries */
	u32 size;
	u32 head, tail, count;		/* consume at head, post at tail */
	u32 limit;			/* armed limit, 0: disarmed */
	u32 max_sge;
};

struct softib_rc;
struct softib_rn;

/* A send WR posted and not yet completed. */
struct softib_swqe {
	u64 wr_id;
	u32 seq;
	u32 byte_len;
	enum ib_wc_status status;
	bool signaled;
	bool no_pkt;		/* nothing to wait for (error, or never queued) */
};

struct softib_qp {
	struct ib_qp ibqp;
	spinlock_t lock;		/* state and the receive queue ring */
	enum ib_qp_state state;		/* READ_ONCE outside lock */
	u32 qkey;			/* READ_ONCE outside cfg of modify_qp */
	u16 pkey_index;
	u32 sq_psn;
	bool sq_sig_all;
	u32 max_send_wr;
	u32 max_send_sge;
	bool lso;			/* created with IB_QP_CREATE_IPOIB_UD_LSO */
	struct softib_swqe *sq;		/* ring of max_send_wr entries, under lock */
	u32 sq_head, sq_count;		/* oldest outstanding send WR, how many */
	u32 sq_seq;			/* sequence number of the next send WR */
	u32 sq_done;			/* packets up to this seq have left */
	struct softib_rwqe *rq;		/* ring of rq_size entries */
	u32 rq_size;
	u32 rq_head, rq_tail;		/* consume at head, post at tail */
	u32 rq_count;			/* posted, not yet consumed */
	u32 rx_busy;			/* taken by softib_qp_rx, not completed */
	atomic_t n_mcast;		/* attachments of this QP */
	struct softib_srq *srq;		/* receives come from it (RC), or NULL */
	struct softib_rc *rc;		/* RC requester/responder state, or NULL */
	/*
	 * the port the QP sends from and receives on: set at creation (port
	 * 1, or the special QP's port) and by modify_qp's IB_QP_PORT, which
	 * only RESET -> INIT carries; READ_ONCE from the fabric
	 */
	struct softib_dev *sport;
	/*
	 * the enhanced IPoIB netdev whose underlay QP this is (softib_rn.c),
	 * or NULL for a verbs QP; such a QP has no CQs and no rings
	 */
	struct softib_rn *rn;
};

/*
 * QPs 0 and 1 exist once per port; the HCA's table keeps port p's at
 * 2 * (p - 1) and 2 * (p - 1) + 1, below SOFTIB_QPN_FIRST.
 */
static inline unsigned long softib_qp_index(const struct softib_dev *sport, u32 qpn)
{
	return qpn <= 1 ? qpn + 2 * (sport->port_num - 1) : qpn;
}

/* the QP numbered @qpn on port @sport, or NULL; RCU (or the table's lock) */
static inline struct softib_qp *softib_qp_find(struct softib_dev *sport, u32 qpn)
{
	struct softib_qp *qp = xa_load(&sport->hca->qps, softib_qp_index(sport, qpn));

	return qp && READ_ONCE(qp->sport) == sport ? qp : NULL;
}

struct softib_mcast_att {
	struct list_head list;		/* in sdev->mcast */
	union ib_gid mgid;
	u16 mlid;
	struct softib_qp *qp;
	struct rcu_head rcu;
};

static inline struct softib_qp *to_sqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct softib_qp, ibqp);
}

static inline struct softib_cq *to_scq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct softib_cq, ibcq);
}

static inline struct softib_srq *to_ssrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct softib_srq, ibsrq);
}

static inline struct softib_ah *to_sah(struct ib_ah *ibah)
{
	return container_of(ibah, struct softib_ah, ibah);
}

/* softib_main.c: module, parameters, device list and lifetime */
extern struct list_head softib_devs;	/* under softib_devs_lock; RCU readers */
extern struct mutex softib_devs_lock;
extern unsigned int softib_port_mtu;	/* module parameter, bytes */
u64 softib_guid_from_lid(u16 lid);
/* Creates and registers a device; ndev NULL = in-kernel fabric. Sleeps. */
struct softib_dev *softib_dev_create(const char *name, struct net_device *ndev, u16 lid,
				     unsigned int nports, bool enhanced);
const char *softib_dev_name(struct softib_dev *sdev);	/* port 2: "<hca>p2" */
/* Unregisters synchronously (the core then calls dealloc_driver). Sleeps. */
void softib_dev_destroy(struct softib_dev *sdev);
/* Called by ib_core's dealloc_driver: drop the device from softib's state. */
void softib_dev_dealloc(struct softib_dev *sdev);
struct softib_dev *softib_dev_find_by_name(const char *name);	/* caller holds softib_devs_lock */

/* softib_port.c: port state, LID, P_Keys, SM, events */
u16 softib_sm_lid(void);
void softib_set_sm_lid(u16 lid);	/* raises SM_CHANGE on every port */
void softib_sm_failover(u16 lid);	/* new SA state, SM_CHANGE, CLIENT_REREGISTER */
void softib_dev_port_event(struct softib_dev *sdev, bool up);	/* any sleepable context */
int softib_dev_port_hold(struct softib_dev *sdev);
int softib_dev_port_step(struct softib_dev *sdev);
/* the embedded SM's INIT -> ARMED -> ACTIVE: with the device's life */
void softib_port_arm_init(struct softib_dev *sdev);
void softib_port_arm_stop(struct softib_dev *sdev);
void softib_dev_set_lid(struct softib_dev *sdev, u16 lid);	/* LID_CHANGE on that port */
void softib_dev_rereg(struct softib_dev *sdev);
int softib_dev_set_pkey(struct softib_dev *sdev, unsigned int idx, u16 pkey);
void softib_dev_set_mtu(struct softib_dev *sdev, enum ib_mtu mtu);
u64 softib_subnet_prefix(void);	/* the embedded SM's GID prefix */
void softib_set_subnet_prefix(u64 prefix);	/* ... and GID_CHANGE everywhere */
u64 softib_gid_prefix(struct softib_dev *sdev);	/* this port's GID prefix */
/*
 * GUIDs: index 0 is the port GUID, 1..alias_guids the alias GUIDs an SM
 * assigns (SR-IOV VFs, ip link set ibX address): the port GUID with
 * index << 24 or'ed in, which no port GUID has (SOFTIB_GUID_BASE | LID).
 */
extern unsigned int softib_alias_guids;
static inline u32 softib_gid_tbl_len(void)
{
	return 1 + softib_alias_guids;
}

static inline u64 softib_port_guid(const struct softib_dev *sdev, u32 index)
{
	return sdev->guid | (u64)index << 24;
}

/* the GID index of @guid on the port, or -1 */
static inline int softib_guid_index(const struct softib_dev *sdev, __be64 guid)
{
	u32 i;

	for (i = 0; i < softib_gid_tbl_len(); i++)
		if (cpu_to_be64(softib_port_guid(sdev, i)) == guid)
			return i;
	return -1;
}

void softib_sm_restart(void);		/* SA forgets groups, then rereg everywhere */
void softib_dispatch_port_event(struct softib_dev *sdev, enum ib_event_type type);
int softib_pkey_find(struct softib_dev *sdev, u16 pkey);	/* index or -1 */
bool softib_pkey_match(u16 a, u16 b);

/* softib_verbs.c: device, port, PD, MR, AH verbs; the ib_device_ops table */
extern const struct ib_device_ops softib_dev_ops;

/* softib_cq.c: completion queues */
int softib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		     IB_COMPAT_CREATE_CQ_ARG *uarg);
int softib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int softib_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int softib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int softib_modify_cq(struct ib_cq *ibcq, u16 count, u16 period);
void softib_cq_push(struct softib_cq *cq, const struct ib_wc *wc, bool solicited);
u32 softib_cq_clean(struct softib_cq *cq, const struct ib_qp *qp);

/* softib_qp.c: UD, GSI and SMI QPs, posting, multicast attachments */
int softib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init, struct ib_udata *udata);
int softib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		     struct ib_udata *udata);
int softib_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int softib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_qp_init_attr *init);
int softib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int softib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		     const struct ib_send_wr **bad_wr);
int softib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		     const struct ib_recv_wr **bad_wr);
int softib_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int softib_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
/* the same for any QP; lid 0: matched by the packets' GRH DGID (by MGID) */
int softib_qp_attach(struct softib_dev *sdev, struct softib_qp *qp, const union ib_gid *gid,
		     u16 lid);
int softib_qp_detach(struct softib_dev *sdev, struct softib_qp *qp, const union ib_gid *gid);
void softib_qp_detach_all(struct softib_dev *sdev, struct softib_qp *qp);
/*
 * Deliver one received packet to one QP (P_Key/Q_Key/state checks, WC);
 * dropped and counted (drop_no_rwqe) when the QP has no receive WQE posted.
 */
void softib_qp_rx(struct softib_dev *sdev, struct softib_qp *qp, const struct softib_pkt *pkt);
/*
 * tx_work: the packet of send WR seq of qp (QPN qpn) has left the device;
 * complete the WRs up to it. Caller holds rcu_read_lock.
 */
void softib_qp_send_done(struct softib_dev *sdev, struct softib_qp *qp, u32 qpn, u32 seq);
/* Move qp to ERR (flushing its work requests), as an HCA does on a fault. */
void softib_qp_to_err(struct softib_qp *qp);
/* The same in two steps: under qp->lock (state, send queue), then without. */
void softib_qp_err_locked(struct softib_qp *qp);
void softib_qp_err_finish(struct softib_qp *qp);
/* Complete the oldest send WR with status; caller holds qp->lock. */
void softib_sq_pop(struct softib_qp *qp, enum ib_wc_status status);
/* Record and complete the send WRs up to seq; caller holds qp->lock. */
void softib_sq_done_locked(struct softib_qp *qp, u32 seq);
bool softib_sq_holds(struct softib_qp *qp, u32 seq);
u32 softib_sq_add(struct softib_qp *qp, const struct ib_send_wr *wr, u32 len,
		  enum ib_wc_status status, bool no_pkt);
void softib_build_grh(struct softib_dev *sdev, const struct rdma_ah_attr *attr, u32 len,
		      struct ib_grh *grh);
void softib_ud_headers(struct softib_dev *sdev, struct softib_pkt *pkt,
		       const struct rdma_ah_attr *attr, u16 pkey, u32 dqpn, u32 qkey,
		       u32 sqpn);
void softib_scatter(const struct softib_rwqe *wqe, u32 off, const void *src, u32 len);
bool softib_sges_ok(struct softib_dev *sport, struct ib_pd *pd, const struct ib_sge *sge,
		    u32 n);

/* softib_rc.c: RC requester and responder */
extern bool softib_srq_enabled;		/* module parameter srq (softib_srq.c) */
unsigned int softib_max_recv_sge(void);	/* module parameter recv_sge */
int softib_rc_create(struct softib_qp *qp);
void softib_rc_destroy(struct softib_qp *qp);
/* modify_qp: store the RC attributes; caller holds qp->lock */
int softib_rc_modify(struct softib_qp *qp, const struct ib_qp_attr *attr, int mask,
		     enum ib_qp_state cur, enum ib_qp_state new);
/* the QP went to ERR or RESET: drop what is in flight; caller holds qp->lock */
void softib_rc_reset_locked(struct softib_qp *qp, bool to_err);
/* after the move to ERR, no lock held: IB_EVENT_QP_LAST_WQE_REACHED for an SRQ QP */
void softib_rc_err_finish(struct softib_qp *qp);
int softib_rc_post_send(struct softib_dev *sdev, struct softib_qp *qp,
			const struct ib_send_wr *wr);
void softib_rc_rx(struct softib_dev *sdev, struct softib_qp *qp, const struct softib_pkt *pkt);
void softib_rc_query(struct softib_qp *qp, struct ib_qp_attr *attr);
int softib_rc_peer_pkt(struct softib_dev *sdev, struct softib_qp *qp, struct softib_pkt *pkt);
/* softib_srq.c: SRQs, and the receive WQE an RC responder takes */
bool softib_take_rwqe(struct softib_dev *sdev, struct softib_qp *qp,
		      struct softib_rwqe *wqe, bool *limit_event);
void softib_srq_event(struct softib_srq *srq);
int softib_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init, struct ib_udata *udata);
int softib_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr, enum ib_srq_attr_mask mask,
		      struct ib_udata *udata);
int softib_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int softib_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int softib_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr);
/* Knobs: QP_FATAL on qpn; DEVICE_FATAL (every QP to ERR). Sleepable. */
int softib_qp_fatal(struct softib_dev *sdev, u32 qpn);
/* raise an affiliated event on qp (no lock held) */
void softib_qp_event(struct softib_qp *qp, enum ib_event_type type);
void softib_dev_fatal(struct softib_dev *sdev);

/* softib_offload.c: IB_SEND_IP_CSUM, IB_WR_LSO, IB_WC_IP_CSUM_OK */
void softib_offload_caps(struct softib_dev *sdev, u16 lid);
bool softib_csum_fill(struct softib_pkt *pkt);
int softib_csum_verify(const struct softib_pkt *pkt);
enum ib_wc_status softib_lso_segment(struct softib_dev *sdev, const struct ib_send_wr *wr,
				     u32 len, u32 mtu, struct list_head *segs,
				     struct softib_pkt *(*mk)(const struct ib_send_wr *wr, u32 len,
							      void *arg),
				     void *arg, struct softib_qp *qp, struct softib_sges *src);
void softib_lso_fill(struct softib_pkt *pkt);

/* softib_sendbuf.c: a send's data read when its packet leaves */
struct softib_sges *softib_sges_get(const struct ib_send_wr *wr, gfp_t gfp);
void softib_sges_put(struct softib_sges *s);
u32 softib_sges_hash(const struct softib_sges *s, u32 off, u32 n);
void softib_pkt_defer_hashed(struct softib_pkt *pkt, struct softib_qp *qp,
			     struct softib_sges *s, u32 off, u32 dst_off, u8 fix, u32 hash);
void softib_pkt_defer(struct softib_pkt *pkt, struct softib_qp *qp, struct softib_sges *s,
		      u32 off, u32 dst_off, u8 fix);
bool softib_pkt_load(struct softib_dev *sdev, struct softib_pkt *pkt);

/* softib_fabric.c: packets, routing, faults, counters */
struct softib_pkt *softib_pkt_alloc(u32 len, gfp_t gfp);
void softib_pkt_free(struct softib_pkt *pkt);
struct softib_pkt *softib_pkt_clone(const struct softib_pkt *pkt, gfp_t gfp);
/*
 * Deliver a packet that arrived at sdev (wire, loopback or inject): SA
 * intercept, P_Key/Q_Key checks, unicast by DQPN or multicast by MLID,
 * counters. Does not take ownership. Any context (BH ok, IRQs on).
 */
void softib_rx(struct softib_dev *sdev, const struct softib_pkt *pkt);
/*
 * Put pkt on sdev's fabric as if sdev sent it; takes ownership; any context.
 * false: dropped at once (device queue full or going away).
 */
bool softib_send_from(struct softib_dev *sdev, struct softib_pkt *pkt);
bool softib_ack_coalesce(struct softib_dev *sdev, u32 sqpn, u32 dqpn, u16 dlid, u32 psn, u32 aeth);
/* is this an RC packet (BTH opcode of the RC transport)? */
static inline bool softib_opcode_is_rc(u8 opcode)
{
	return opcode < 0x20;
}

/*
 * Hand pkt to dst's receive path, or count the ICRC failure of a corrupted
 * one (also used by the external-SM fabric, softib_switch.c).
 */
void softib_fabric_deliver(struct softib_dev *dst, const struct softib_pkt *pkt, bool corrupt);
int softib_fabric_min_mtu(void);	/* smallest port MTU in bytes */
u32 softib_path_mtu(struct softib_dev *a, struct softib_dev *b);
void softib_fabric_dev_init(struct softib_dev *sdev);
void softib_fabric_dev_stop(struct softib_dev *sdev);	/* sleeps; drops queued packets */
void softib_fabric_set_seed(u32 seed);
extern unsigned int softib_loss_pct, softib_dup_pct, softib_reorder_pct, softib_corrupt_pct;
extern u32 softib_seed;
extern u32 softib_sl_drop;	/* debugfs sl_drop: mask of SLs dropped */

static inline void softib_count(struct softib_dev *sdev, enum softib_counter c)
{
	atomic64_inc(&sdev->counters[c]);
}

static inline void softib_count_add(struct softib_dev *sdev, enum softib_counter c, u64 n)
{
	atomic64_add(n, &sdev->counters[c]);
}

/* softib_debugfs.c */
extern struct dentry *softib_debugfs_root;	/* /sys/kernel/debug/softib */
void softib_debugfs_init(void);
void softib_debugfs_exit(void);
void softib_debugfs_dev_add(struct softib_dev *sdev);
void softib_debugfs_dev_remove(struct softib_dev *sdev);

/* softib_blast.c: the raw-ceiling knob (debugfs "blast"), removed with root */
void softib_blast_init(struct dentry *root);

/* softib_hold.c: the hold_netdev knob (references on interfaces) */
void softib_hold_init(struct dentry *root);
void softib_hold_release_all(void);

#endif /* _SOFTIB_H */
