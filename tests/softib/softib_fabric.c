// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the fabric. A sent packet waits on its device's queue; the
 * device's tx work applies the configured faults (loss, duplication,
 * reordering, corruption) and routes it: on the in-kernel fabric to the port
 * holding the DLID, or to every port with a QP attached to the multicast
 * LID (the sender's own included); for a device bound to a netdev, to the
 * Ethernet transport, looping back what is for the device itself.
 * softib_rx() is the receive path of a port, whatever the packet came from.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/prandom.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <rdma/ib_pack.h>
#include <rdma/ib_verbs.h>

#include "softib.h"
#include "softib_eth.h"
#include "softib_sa.h"

#define SOFTIB_TXQ_MAX		4096	/* packets waiting per device */
#define SOFTIB_TX_BUDGET	64	/* packets per tx_work round */

const char * const softib_counter_names[SOFTIB_NR_COUNTERS] = {
	[SOFTIB_CNT_TX_PACKETS] = "tx_packets",
	[SOFTIB_CNT_TX_BYTES] = "tx_bytes",
	[SOFTIB_CNT_RX_PACKETS] = "rx_packets",
	[SOFTIB_CNT_RX_BYTES] = "rx_bytes",
	[SOFTIB_CNT_RX_MCAST] = "rx_mcast",
	[SOFTIB_CNT_DROP_BAD_PKEY] = "drop_bad_pkey",
	[SOFTIB_CNT_DROP_BAD_QKEY] = "drop_bad_qkey",
	[SOFTIB_CNT_DROP_NO_QP] = "drop_no_qp",
	[SOFTIB_CNT_DROP_NO_RWQE] = "drop_no_rwqe",
	[SOFTIB_CNT_DROP_TOO_LONG] = "drop_too_long",
	[SOFTIB_CNT_DROP_MALFORMED] = "drop_malformed",
	[SOFTIB_CNT_DROP_QP_STATE] = "drop_qp_state",
	[SOFTIB_CNT_DROP_FAULT] = "drop_fault",
	[SOFTIB_CNT_DUP_FAULT] = "dup_fault",
	[SOFTIB_CNT_REORDER_FAULT] = "reorder_fault",
	[SOFTIB_CNT_CORRUPT_FAULT] = "corrupt_fault",
	[SOFTIB_CNT_DROP_ICRC] = "drop_icrc",
	[SOFTIB_CNT_DROP_LINK_DOWN] = "drop_link_down",
	[SOFTIB_CNT_DROP_NO_ROUTE] = "drop_no_route",
	[SOFTIB_CNT_RX_ERR_CQE] = "rx_err_cqe",
	[SOFTIB_CNT_CQ_OVERFLOW] = "cq_overflow",
	[SOFTIB_CNT_DROP_TXQ_FULL] = "drop_txq_full",
	[SOFTIB_CNT_CQ_MODIFY] = "cq_modify",
	[SOFTIB_CNT_COMP_EVENTS] = "comp_events",
	[SOFTIB_CNT_COMP_HARDIRQ] = "comp_hardirq",
	[SOFTIB_CNT_POST_SEND_FULL] = "post_send_full",
	[SOFTIB_CNT_SEND_FLUSHED] = "send_flushed",
	[SOFTIB_CNT_CQE_CLEANED] = "cqe_cleaned",
	[SOFTIB_CNT_QP_FATAL] = "qp_fatal",
	[SOFTIB_CNT_MCAST_NOT_MEMBER] = "mcast_not_member",
	[SOFTIB_CNT_TX_CSUM] = "tx_csum",
	[SOFTIB_CNT_TX_LSO] = "tx_lso",
	[SOFTIB_CNT_TX_LSO_SEGS] = "tx_lso_segs",
	[SOFTIB_CNT_TX_LSO_ERR] = "tx_lso_err",
	[SOFTIB_CNT_RX_CSUM_OK] = "rx_csum_ok",
	[SOFTIB_CNT_RX_CSUM_BAD] = "rx_csum_bad",
	[SOFTIB_CNT_SQ_ERROR] = "sq_error",
	[SOFTIB_CNT_DROP_SL] = "drop_sl",
	[SOFTIB_CNT_RC_TX] = "rc_tx",
	[SOFTIB_CNT_RC_RX] = "rc_rx",
	[SOFTIB_CNT_RC_ACK] = "rc_ack",
	[SOFTIB_CNT_RC_ACK_COALESCED] = "rc_ack_coalesced",
	[SOFTIB_CNT_RC_NAK] = "rc_nak",
	[SOFTIB_CNT_RC_RNR_NAK] = "rc_rnr_nak",
	[SOFTIB_CNT_RC_DUP] = "rc_dup",
	[SOFTIB_CNT_RC_RETRANS] = "rc_retrans",
	[SOFTIB_CNT_RC_TIMEOUT] = "rc_timeout",
	[SOFTIB_CNT_RC_RETRY_EXC] = "rc_retry_exc",
	[SOFTIB_CNT_RC_DROP] = "rc_drop",
	[SOFTIB_CNT_RC_ACCESS_ERR] = "rc_access_err",
	[SOFTIB_CNT_DROP_PATH_MTU] = "drop_path_mtu",
	[SOFTIB_CNT_SRQ_LIMIT] = "srq_limit",
	[SOFTIB_CNT_LAST_WQE] = "last_wqe",
	[SOFTIB_CNT_BAD_LKEY] = "bad_lkey",
	[SOFTIB_CNT_SEND_DATA_CHANGED] = "send_data_changed",
	[SOFTIB_CNT_TX_FLUSHED] = "tx_flushed",
};

/* Fault settings (debugfs); percentages 0..100, read with READ_ONCE. */
unsigned int softib_loss_pct, softib_dup_pct, softib_reorder_pct, softib_corrupt_pct;
u32 softib_sl_drop;
u32 softib_seed = 1;

static DEFINE_SPINLOCK(softib_fault_lock);	/* protects softib_rnd */
static struct rnd_state softib_rnd;

void softib_fabric_set_seed(u32 seed)
{
	unsigned long flags;

	spin_lock_irqsave(&softib_fault_lock, flags);
	WRITE_ONCE(softib_seed, seed);
	prandom_seed_state(&softib_rnd, seed);
	spin_unlock_irqrestore(&softib_fault_lock, flags);
}

/* true with probability pct percent, from the seeded fabric PRNG */
static bool softib_chance(unsigned int pct)
{
	unsigned long flags;
	u32 r;

	if (!pct)
		return false;
	spin_lock_irqsave(&softib_fault_lock, flags);
	r = prandom_u32_state(&softib_rnd);
	spin_unlock_irqrestore(&softib_fault_lock, flags);
	return r % 100 < pct;
}

struct softib_pkt *softib_pkt_alloc(u32 len, gfp_t gfp)
{
	struct softib_pkt *pkt;

	/* every caller fills data[] whole: zero only the header (make bench) */
	pkt = kmalloc(struct_size(pkt, data, len), gfp);
	if (!pkt)
		return NULL;
	memset(pkt, 0, sizeof(*pkt));
	INIT_LIST_HEAD(&pkt->list);
	pkt->len = len;
	return pkt;
}

void softib_pkt_free(struct softib_pkt *pkt)
{
	if (!pkt)
		return;
	softib_sges_put(pkt->src);
	kfree(pkt);
}

struct softib_pkt *softib_pkt_clone(const struct softib_pkt *pkt, gfp_t gfp)
{
	struct softib_pkt *copy;

	copy = kmemdup(pkt, struct_size(pkt, data, pkt->len), gfp);
	if (!copy)
		return NULL;
	INIT_LIST_HEAD(&copy->list);
	if (copy->src)
		refcount_inc(&copy->src->ref);
	return copy;
}

int softib_fabric_min_mtu(void)
{
	struct softib_dev *sdev;
	int mtu = 4096;

	rcu_read_lock();
	list_for_each_entry_rcu(sdev, &softib_devs, list)
		mtu = min(mtu, ib_mtu_enum_to_int(READ_ONCE(sdev->mtu)));
	rcu_read_unlock();
	return mtu;
}

/* Is @gid one of the port's GIDs (its GUID or an alias GUID)? */
static bool softib_is_port_gid(struct softib_dev *sdev, const union ib_gid *gid)
{
	return gid->global.subnet_prefix == cpu_to_be64(softib_gid_prefix(sdev)) &&
	       softib_guid_index(sdev, gid->global.interface_id) >= 0;
}

/* Is this host's fabric-resident SA the subnet's (the SM is a local port)? */
static bool softib_sa_is_here(void)
{
	struct softib_dev *sdev;
	u16 sm = softib_sm_lid();

	if (softib_sma_enabled())	/* OpenSM manages the subnet */
		return false;
	list_for_each_entry_rcu(sdev, &softib_devs, list)
		if (softib_dev_lid(sdev) == sm)
			return true;
	return false;
}

/*
 * Does a multicast packet reach this attachment: by its DLID, or, for an
 * attachment without an MLID (enhanced IPoIB's, by MGID), by its GRH DGID.
 */
static bool softib_att_matches(const struct softib_mcast_att *att, const struct softib_pkt *pkt)
{
	if (att->mlid)
		return att->mlid == pkt->dlid;
	return pkt->has_grh && !memcmp(&att->mgid, &pkt->grh.dgid, sizeof(att->mgid));
}

/*
 * Does the fabric forward this multicast packet to the port? Only if a QP
 * of the port is attached to the group and, as a switch whose multicast
 * forwarding tables the SM built from the SA's memberships, only if the
 * port is a member (full or non-member) of the group at the SA: attached
 * without (or after the SA forgot) the join, nothing arrives. Where the SA
 * is not this host's (the other VM of the Ethernet transport, OpenSM), the
 * attachment alone decides. Caller holds rcu_read_lock().
 */
static bool softib_mcast_wanted(struct softib_dev *sdev, const struct softib_pkt *pkt)
{
	struct softib_mcast_att *att;
	union ib_gid gid;
	bool attached = false;
	u32 i;

	list_for_each_entry_rcu(att, &sdev->mcast, list) {
		if (softib_att_matches(att, pkt)) {
			attached = true;
			break;
		}
	}
	if (!attached || !softib_sa_is_here())
		return attached;
	/* a member under any of its GIDs (a join may use an alias) */
	gid.global.subnet_prefix = cpu_to_be64(softib_gid_prefix(sdev));
	for (i = 0; i < softib_gid_tbl_len(); i++) {
		gid.global.interface_id = cpu_to_be64(softib_port_guid(sdev, i));
		if (softib_sa_mcast_routes_to(pkt->dlid, &gid))
			return true;
	}
	softib_count(sdev, SOFTIB_CNT_MCAST_NOT_MEMBER);
	return false;
}

static void softib_rx_mcast(struct softib_dev *sdev, const struct softib_pkt *pkt)
{
	struct softib_mcast_att *att;
	bool any = false;

	list_for_each_entry_rcu(att, &sdev->mcast, list) {
		if (!softib_att_matches(att, pkt))
			continue;
		if (pkt->has_grh && memcmp(&att->mgid, &pkt->grh.dgid, sizeof(att->mgid)))
			continue;
		if (!any)
			softib_count(sdev, SOFTIB_CNT_RX_MCAST);
		any = true;
		softib_qp_rx(sdev, att->qp, pkt);
	}
	if (!any)
		softib_count(sdev, SOFTIB_CNT_DROP_NO_QP);
}

/*
 * The receive path of a port. A packet whose QP has no receive WQE posted
 * is dropped and counted (drop_no_rwqe), as UD is on hardware: nothing
 * holds the sender.
 */
void softib_rx(struct softib_dev *sdev, const struct softib_pkt *pkt)
{
	bool mcast = softib_lid_is_mcast(pkt->dlid);
	bool mcast_qpn = pkt->dqpn == IB_MULTICAST_QPN;
	struct softib_qp *qp;
	bool rc, rc_qp;

	local_bh_disable();
	rcu_read_lock();

	/* external_sm: QP0 works from INIT on (softib_sma.c) */
	if (pkt->dqpn == 0 && sdev->sma.fab_port) {
		softib_sma_rx_smp(sdev, pkt);
		goto out;
	}
	if (!softib_dev_active(sdev)) {
		softib_count(sdev, SOFTIB_CNT_DROP_LINK_DOWN);
		goto out;
	}
	rc = softib_opcode_is_rc(pkt->opcode);
	if ((!rc && pkt->opcode != IB_OPCODE_UD_SEND_ONLY &&
	     pkt->opcode != IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE) ||
	    pkt->dqpn > 0xffffff || pkt->sqpn > 0xffffff || mcast != mcast_qpn ||
	    (rc && mcast)) {
		softib_count(sdev, SOFTIB_CNT_DROP_MALFORMED);
		goto out;
	}
	if (pkt->len > ib_mtu_enum_to_int(READ_ONCE(sdev->mtu))) {
		softib_count(sdev, SOFTIB_CNT_DROP_TOO_LONG);
		goto out;
	}
	/*
	 * Multicast needs a GRH, as on the wire (softib_wire_addr_ok()); a
	 * group this port did not join: filtered, not a drop.
	 */
	if (mcast && !pkt->has_grh) {
		softib_count(sdev, SOFTIB_CNT_DROP_MALFORMED);
		goto out;
	}
	if (mcast && !softib_mcast_wanted(sdev, pkt))
		goto out;
	if (!mcast && pkt->dlid != softib_dev_lid(sdev)) {
		softib_count(sdev, SOFTIB_CNT_DROP_NO_ROUTE);
		goto out;
	}
	/* a unicast GRH must name the port's GID, or the HCA drops it */
	if (!mcast && pkt->has_grh && !softib_is_port_gid(sdev, &pkt->grh.dgid)) {
		softib_count(sdev, SOFTIB_CNT_DROP_NO_ROUTE);
		goto out;
	}
	/* the receiving port must hold the packet's P_Key */
	if (softib_pkey_find(sdev, pkt->pkey) < 0) {
		softib_count(sdev, SOFTIB_CNT_DROP_BAD_PKEY);
		goto out;
	}
	if (mcast) {
		softib_rx_mcast(sdev, pkt);
		goto out;
	}
	/* the fabric-resident SA answers SubnAdm requests sent to the SM */
	if (!rc && pkt->dqpn == 1 && pkt->dlid == softib_sm_lid() && !softib_sma_enabled() &&
	    softib_sa_handle(sdev, pkt))
		goto out;

	qp = softib_qp_find(sdev, pkt->dqpn);
	if (!qp) {
		softib_count(sdev, SOFTIB_CNT_DROP_NO_QP);
		goto out;
	}
	/* a QP hears only its own transport */
	rc_qp = qp->ibqp.qp_type == IB_QPT_RC;
	if (rc != rc_qp) {
		softib_count(sdev, SOFTIB_CNT_DROP_MALFORMED);
		goto out;
	}
	if (rc)
		softib_rc_rx(sdev, qp, pkt);
	else
		softib_qp_rx(sdev, qp, pkt);
out:
	rcu_read_unlock();
	local_bh_enable();
}

/* A corrupted packet fails the receiver's ICRC check. */
static void softib_rx_corrupt(struct softib_dev *dst, const struct softib_pkt *pkt)
{
	if (softib_dev_active(dst) &&
	    (!softib_lid_is_mcast(pkt->dlid) || softib_mcast_wanted(dst, pkt)))
		softib_count(dst, SOFTIB_CNT_DROP_ICRC);
}

void softib_fabric_deliver(struct softib_dev *dst, const struct softib_pkt *pkt, bool corrupt)
{
	if (corrupt)
		softib_rx_corrupt(dst, pkt);
	else
		softib_rx(dst, pkt);
}

/*
 * The MTU of the route between two ports in bytes, 0 for no limit beyond
 * the ports' own (a port to itself stays on its switch; @b NULL is a port
 * on another host): with the embedded SM the links between the switches
 * (softib_sa_core_mtu(), what its PathRecords say), and a thin link
 * (path_mtu) behind either port if smaller. Under an external SM the links
 * are the ports' own, as that SM's PathRecords say.
 */
u32 softib_path_mtu(struct softib_dev *a, struct softib_dev *b)
{
	u32 m = softib_sma_enabled() ? 0 : softib_sa_core_mtu();
	u32 ma = a ? READ_ONCE(a->path_mtu) : 0;
	u32 mb = b ? READ_ONCE(b->path_mtu) : 0;

	if (a == b)
		return 0;
	if (ma && (!m || ma < m))
		m = ma;
	if (mb && (!m || mb < m))
		m = mb;
	return m;
}

/* Route one packet sent by sdev and free it. Caller holds rcu_read_lock. */
static void softib_route(struct softib_dev *sdev, struct softib_pkt *pkt, bool corrupt)
{
	bool mcast = softib_lid_is_mcast(pkt->dlid);
	struct softib_dev *dst;
	bool found = false;
	u32 thin;

	/* external_sm: the SM-managed in-kernel fabric (softib_switch.c) */
	if (sdev->sma.fab_port && !sdev->ndev) {
		softib_sma_route(sdev, pkt, corrupt);
		goto out_free;
	}
	/* external_sm: an Ethernet-bound port sends SMPs from INIT on */
	if (!softib_dev_active(sdev) && !softib_sma_eth_tx_ok(sdev, pkt)) {
		softib_count(sdev, SOFTIB_CNT_DROP_LINK_DOWN);
		goto out_free;
	}

	if (sdev->ndev) {
		/* IB delivers multicast to the sender's own QPs too */
		if (mcast || pkt->dlid == softib_dev_lid(sdev)) {
			if (corrupt)
				softib_rx_corrupt(sdev, pkt);
			else
				softib_rx(sdev, pkt);
			if (!mcast)
				goto out_free;
		}
		/* the route to the other host is no wider than to a local port */
		thin = softib_path_mtu(sdev, NULL);
		if (thin && pkt->len > thin) {
			softib_count(sdev, SOFTIB_CNT_DROP_PATH_MTU);
			goto out_free;
		}
		/* a corrupted frame fails the peer's ICRC check */
		if (corrupt)
			softib_eth_xmit_corrupt(sdev, pkt);
		else
			softib_eth_xmit(sdev, pkt);
		return;
	}

	list_for_each_entry_rcu(dst, &softib_devs, list) {
		if (dst->ndev)
			continue;
		if (!mcast && softib_dev_lid(dst) != pkt->dlid)
			continue;
		found = true;
		/* a switch drops what its outgoing link cannot carry */
		thin = softib_path_mtu(sdev, dst);
		if (thin && pkt->len > thin) {
			softib_count(sdev, SOFTIB_CNT_DROP_PATH_MTU);
			if (!mcast)
				break;
			continue;
		}
		softib_fabric_deliver(dst, pkt, corrupt);
		if (!mcast)
			break;
	}
	if (!mcast && !found)
		softib_count(sdev, SOFTIB_CNT_DROP_NO_ROUTE);
out_free:
	softib_pkt_free(pkt);
}

/*
 * Apply the fabric faults to a packet fresh off the queue, then route it
 * (and a held one after it).
 */
static void softib_tx_one(struct softib_dev *sdev, struct softib_pkt *pkt)
{
	bool corrupt;

	/* a UD or RC send's data is read now, as an HCA reads it by DMA */
	if (pkt->src && !softib_pkt_load(sdev, pkt)) {
		softib_pkt_free(pkt);
		return;
	}

	/* sl_drop: SLs that the SL-to-VL tables send to VL15 (SMPs go there anyway) */
	if (pkt->dqpn && (READ_ONCE(softib_sl_drop) & BIT(pkt->sl & 0xf))) {
		softib_count(sdev, SOFTIB_CNT_DROP_SL);
		softib_pkt_free(pkt);
		return;
	}

	if (softib_chance(READ_ONCE(softib_loss_pct))) {
		softib_count(sdev, SOFTIB_CNT_DROP_FAULT);
		softib_pkt_free(pkt);
		return;
	}
	corrupt = softib_chance(READ_ONCE(softib_corrupt_pct));
	if (corrupt)
		softib_count(sdev, SOFTIB_CNT_CORRUPT_FAULT);
	if (softib_chance(READ_ONCE(softib_dup_pct))) {
		struct softib_pkt *dup = softib_pkt_clone(pkt, GFP_ATOMIC);

		if (dup) {
			dup->sqp = NULL;	/* completes nothing */
			softib_count(sdev, SOFTIB_CNT_DUP_FAULT);
			softib_route(sdev, dup, corrupt);
		}
	}
	if (!sdev->held && softib_chance(READ_ONCE(softib_reorder_pct))) {
		/* goes out after the next packet */
		sdev->held = pkt;
		softib_count(sdev, SOFTIB_CNT_REORDER_FAULT);
		return;
	}
	softib_route(sdev, pkt, corrupt);
	if (sdev->held) {
		pkt = sdev->held;
		sdev->held = NULL;
		softib_route(sdev, pkt, false);
	}
}

/*
 * The send stall fault (debugfs send_stall_ms): until stall_until nothing
 * leaves the device, so no send completes; the packets wait in txq.
 */
static bool softib_tx_stalled(struct softib_dev *sdev)
{
	unsigned long until = READ_ONCE(sdev->stall_until);

	if (!until || time_after_eq(jiffies, until)) {
		WRITE_ONCE(sdev->stall_until, 0);
		return false;
	}
	queue_delayed_work(system_unbound_wq, &sdev->tx_work, until - jiffies);
	return true;
}

static void softib_tx_work(struct work_struct *work)
{
	struct softib_dev *sdev = container_of(to_delayed_work(work), struct softib_dev, tx_work);
	struct softib_pkt *pkt;
	struct softib_qp *sqp;
	unsigned long flags;
	int budget = SOFTIB_TX_BUDGET;
	u32 sqpn, seq;

	if (softib_tx_stalled(sdev))
		return;

	rcu_read_lock();
	while (budget--) {
		spin_lock_irqsave(&sdev->txq_lock, flags);
		pkt = list_first_entry_or_null(&sdev->txq, struct softib_pkt, list);
		if (pkt) {
			list_del_init(&pkt->list);
			sdev->txq_len--;
		}
		spin_unlock_irqrestore(&sdev->txq_lock, flags);
		if (!pkt)
			break;
		sqp = pkt->sqp;
		sqpn = pkt->sqpn;
		seq = pkt->sseq;
		softib_tx_one(sdev, pkt);
		/* the packet has left the HCA: its send WR completes */
		if (sqp)
			softib_qp_send_done(sdev, sqp, sqpn, seq);
	}
	rcu_read_unlock();

	spin_lock_irqsave(&sdev->txq_lock, flags);
	if (sdev->txq_len) {
		queue_delayed_work(system_unbound_wq, &sdev->tx_work, 0);
		pkt = NULL;
	} else {
		/* nothing to swap a held packet with: let it go */
		pkt = sdev->held;
		sdev->held = NULL;
	}
	spin_unlock_irqrestore(&sdev->txq_lock, flags);
	if (pkt) {
		rcu_read_lock();
		softib_route(sdev, pkt, false);
		rcu_read_unlock();
	}
}

bool softib_send_from(struct softib_dev *sdev, struct softib_pkt *pkt)
{
	unsigned long flags;
	bool queued = false;

	spin_lock_irqsave(&sdev->txq_lock, flags);
	/*
	 * An HCA's RC engine never drops its own packets: it sends as the
	 * link allows, and its send queue bounds what waits. UD and the
	 * management QPs find a full queue and lose the packet.
	 */
	if (!sdev->tx_dead &&
	    (sdev->txq_len < SOFTIB_TXQ_MAX || softib_opcode_is_rc(pkt->opcode))) {
		list_add_tail(&pkt->list, &sdev->txq);
		sdev->txq_len++;
		queue_delayed_work(system_unbound_wq, &sdev->tx_work, 0);
		queued = true;
	}
	spin_unlock_irqrestore(&sdev->txq_lock, flags);

	if (!queued) {
		softib_count(sdev, SOFTIB_CNT_DROP_TXQ_FULL);
		softib_pkt_free(pkt);
	}
	return queued;
}

/*
 * ACK coalescing, as an HCA's responder does it: an ACK not yet sent
 * stands for every later one of the same connection, since an ACK is
 * cumulative (it covers its PSN and all before it). If the packet last
 * queued on @sdev is a plain ACK from QP @sqpn to @dqpn at @dlid, it takes
 * the new @psn and @aeth (syndrome ACK, MSN) and no new ACK need be made.
 * NAKs never merge.
 */
bool softib_ack_coalesce(struct softib_dev *sdev, u32 sqpn, u32 dqpn, u16 dlid, u32 psn, u32 aeth)
{
	struct softib_pkt *last;
	unsigned long flags;
	bool merged = false;

	spin_lock_irqsave(&sdev->txq_lock, flags);
	last = list_empty(&sdev->txq) ? NULL :
	       list_last_entry(&sdev->txq, struct softib_pkt, list);
	if (last && last->opcode == IB_OPCODE_RC_ACKNOWLEDGE &&
	    !(last->aeth >> 24) && last->sqpn == sqpn && last->dqpn == dqpn &&
	    last->dlid == dlid) {
		last->psn = psn;
		last->aeth = aeth;
		merged = true;
	}
	spin_unlock_irqrestore(&sdev->txq_lock, flags);
	return merged;
}

void softib_fabric_dev_init(struct softib_dev *sdev)
{
	spin_lock_init(&sdev->txq_lock);
	INIT_LIST_HEAD(&sdev->txq);
	INIT_DELAYED_WORK(&sdev->tx_work, softib_tx_work);
}

void softib_fabric_dev_stop(struct softib_dev *sdev)
{
	struct softib_pkt *pkt, *tmp;
	unsigned long flags;
	LIST_HEAD(purge);

	spin_lock_irqsave(&sdev->txq_lock, flags);
	sdev->tx_dead = true;
	spin_unlock_irqrestore(&sdev->txq_lock, flags);

	cancel_delayed_work_sync(&sdev->tx_work);

	spin_lock_irqsave(&sdev->txq_lock, flags);
	list_splice_init(&sdev->txq, &purge);
	sdev->txq_len = 0;
	spin_unlock_irqrestore(&sdev->txq_lock, flags);

	list_for_each_entry_safe(pkt, tmp, &purge, list)
		softib_pkt_free(pkt);
	softib_pkt_free(sdev->held);
	sdev->held = NULL;
}
