// SPDX-License-Identifier: GPL-2.0
/*
 * softib: reliable connected QPs and shared receive queues, as an HCA's
 * transport engine runs them (IBA chapter 9.7).
 *
 * Requester: a SEND (or SEND_WITH_IMM) is copied at post time into a
 * message kept until it is acknowledged; it leaves as FIRST/MIDDLE/LAST or
 * ONLY packets of at most the path MTU, with consecutive PSNs and the
 * AckReq bit on the last one. The send WR completes only when an ACK covers
 * its last PSN. A NAK-sequence error retransmits from the PSN it names
 * (go-back-N); no ACK within the QP's timeout (4.096 us * 2^timeout)
 * retransmits every unacknowledged packet; each counts against retry_cnt,
 * reloaded whenever an ACK makes progress. An RNR NAK waits the responder's
 * RNR timer and retries, counted against rnr_retry (7: for ever). When a
 * counter is exhausted the WR completes with IB_WC_RETRY_EXC_ERR or
 * IB_WC_RNR_RETRY_EXC_ERR and the QP goes to ERR.
 *
 * Responder: packets are accepted strictly in PSN order. A duplicate is
 * re-acknowledged, a PSN ahead of the expected one gets one NAK-sequence
 * error until the expected PSN arrives. A message's first packet takes a
 * receive WQE (from the SRQ if the QP has one); with none posted the
 * responder answers RNR NAK and the requester retries. The receive
 * completes at the last packet (no GRH: RC receives carry none) and an ACK
 * answers the message, merged into the previous one if that is still
 * waiting in the device's queue (softib_ack_coalesce()).
 *
 * Everything of one QP happens under qp->lock; packets leave through the
 * device's queue like UD ones, so the fabric's faults (loss, duplication,
 * reordering, corruption) apply to RC too. RDMA READ/WRITE and atomics are
 * refused at post time with -EINVAL, and as a responder with a remote
 * access error (softib_rc_refuse_rdma()). Receive queues and SRQs:
 * softib_srq.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <rdma/ib_pack.h>
#include <rdma/ib_verbs.h>

#include "softib.h"

/* AETH syndromes (IBA 9.7.5.2.8) */
#define SOFTIB_AETH_ACK		0x00	/* 000 + credit count (not used: no end-to-end credits) */
#define SOFTIB_AETH_RNR		0x20	/* 001 + RNR timer */
#define SOFTIB_AETH_NAK_SEQ	0x60	/* 011 00000 */
#define SOFTIB_AETH_NAK_INV	0x61	/* invalid request */
#define SOFTIB_AETH_NAK_ACC	0x62	/* remote access error */
#define SOFTIB_AETH_NAK_OP	0x63	/* remote operational error */
#define SOFTIB_AETH_TYPE(s)	((s) & 0xe0)
#define SOFTIB_PSN_MASK		0xffffff
#define SOFTIB_RC_MAX_MSG	BIT(20)	/* longest SEND softib copies */

/* A send WR sent and not yet acknowledged. */
struct softib_rc_msg {
	struct list_head list;
	u32 seq;		/* its send WR's sequence number on the SQ */
	u32 psn;		/* PSN of its first packet */
	u32 npkts;
	u32 len;
	u32 mtu;		/* the path MTU it was cut by */
	bool imm;
	__be32 imm_data;
	/*
	 * The WR's gather list: each packet reads its data when it leaves, on
	 * its first transmission and on every retransmission, as an HCA's
	 * DMA does (softib_sendbuf.c); hash[i] is packet i's at post time.
	 */
	struct softib_sges *src;
	u32 hash[];
};

static void softib_rc_msg_free(struct softib_rc_msg *m)
{
	softib_sges_put(m->src);
	kfree(m);
}

struct softib_rc {
	struct softib_qp *qp;
	/* attributes from modify_qp */
	struct rdma_ah_attr ah;
	u32 dest_qpn;
	enum ib_mtu path_mtu;
	u8 timeout, retry_cnt, rnr_retry, min_rnr_timer;
	u8 max_rd_atomic, max_dest_rd_atomic;
	int access;

	/* requester */
	u32 next_psn;			/* PSN of the next new packet */
	struct list_head msgs;		/* sent, unacknowledged, oldest first */
	u8 retry_left, rnr_left;
	bool rnr_wait;			/* timer: the RNR wait, not the ACK timeout */
	u32 rnr_psn;			/* ... then retry from this PSN */
	struct timer_list timer;
	bool dead;			/* destroy: the timer is not re-armed */

	/* responder */
	u32 epsn;			/* expected PSN */
	u32 msn;
	bool nak_sent;			/* a NAK-sequence error is outstanding */
	bool in_msg;			/* a message is half received into wqe */
	struct softib_rwqe wqe;
	u32 off;

	struct work_struct last_wqe_work;	/* IB_EVENT_QP_LAST_WQE_REACHED */
};

static s32 softib_psn_diff(u32 a, u32 b)
{
	return (s32)((a - b) << 8) >> 8;
}

static u32 softib_rc_mtu(struct softib_dev *sdev, const struct softib_rc *rc)
{
	return min(ib_mtu_enum_to_int(rc->path_mtu), ib_mtu_enum_to_int(READ_ONCE(sdev->mtu)));
}

/* 4.096 us * 2^timeout; 0 is "wait for ever" */
static unsigned long softib_rc_timeout(const struct softib_rc *rc)
{
	u64 ns;

	if (!rc->timeout)
		return MAX_JIFFY_OFFSET;
	ns = 4096ULL << min_t(u8, rc->timeout, 31);
	return max_t(unsigned long, nsecs_to_jiffies(ns), 1);
}

/* The RNR timer field in hundredths of a millisecond (IBA table 45). */
static const u32 softib_rnr_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576,
	32768, 49152,
};

static unsigned long softib_rnr_delay(u8 timer)
{
	return max_t(unsigned long, usecs_to_jiffies(softib_rnr_10us[timer & 31] * 10), 1);
}

static void softib_rc_arm(struct softib_rc *rc, unsigned long delay)
{
	if (!rc->dead)
		mod_timer(&rc->timer, jiffies + delay);
}

static void softib_rc_free_msgs(struct softib_rc *rc)
{
	struct softib_rc_msg *m, *tmp;

	list_for_each_entry_safe(m, tmp, &rc->msgs, list) {
		list_del(&m->list);
		softib_rc_msg_free(m);
	}
}

/* A packet from this QP to its remote QP, with len payload bytes. */
static struct softib_pkt *softib_rc_pkt(struct softib_dev *sdev, struct softib_qp *qp,
					u8 opcode, u32 psn, u32 len)
{
	struct softib_rc *rc = qp->rc;
	struct softib_pkt *pkt;

	pkt = softib_pkt_alloc(len, GFP_ATOMIC);
	if (!pkt)
		return NULL;
	pkt->slid = softib_dev_lid(sdev);
	pkt->dlid = rdma_ah_get_dlid(&rc->ah);
	pkt->sl = rdma_ah_get_sl(&rc->ah);
	pkt->pkey = READ_ONCE(sdev->pkeys[READ_ONCE(qp->pkey_index)]);
	pkt->dqpn = rc->dest_qpn;
	pkt->sqpn = qp->ibqp.qp_num;
	pkt->opcode = opcode;
	pkt->psn = psn & SOFTIB_PSN_MASK;
	if (rdma_ah_get_ah_flags(&rc->ah) & IB_AH_GRH) {
		pkt->has_grh = true;
		softib_build_grh(sdev, &rc->ah, len, &pkt->grh);
	}
	return pkt;
}

/* Responder: an ACK or NAK for psn. */
static void softib_rc_send_ack(struct softib_dev *sdev, struct softib_qp *qp, u8 syndrome,
			       u32 psn)
{
	struct softib_rc *rc = qp->rc;
	u32 aeth = (u32)syndrome << 24 | (rc->msn & 0xffffff);
	struct softib_pkt *pkt;

	if (syndrome == SOFTIB_AETH_ACK &&
	    softib_ack_coalesce(sdev, qp->ibqp.qp_num, rc->dest_qpn,
				rdma_ah_get_dlid(&rc->ah), psn & SOFTIB_PSN_MASK, aeth)) {
		softib_count(sdev, SOFTIB_CNT_RC_ACK_COALESCED);
		return;
	}
	pkt = softib_rc_pkt(sdev, qp, IB_OPCODE_RC_ACKNOWLEDGE, psn, 0);
	if (!pkt)
		return;		/* as a lost ACK: the requester times out */
	pkt->aeth = aeth;
	if (syndrome == SOFTIB_AETH_NAK_SEQ)
		softib_count(sdev, SOFTIB_CNT_RC_NAK);
	else if (SOFTIB_AETH_TYPE(syndrome) == SOFTIB_AETH_RNR)
		softib_count(sdev, SOFTIB_CNT_RC_RNR_NAK);
	else if (syndrome == SOFTIB_AETH_ACK)
		softib_count(sdev, SOFTIB_CNT_RC_ACK);
	softib_send_from(sdev, pkt);
}

/* Requester: send packet i of message m. Caller holds qp->lock. */
static void softib_rc_send_pkt(struct softib_dev *sdev, struct softib_qp *qp,
			       const struct softib_rc_msg *m, u32 i)
{
	u32 off = i * m->mtu, len = min(m->mtu, m->len - off);
	bool first = i == 0, last = i + 1 == m->npkts;
	struct softib_pkt *pkt;
	u8 op;

	if (first && last)
		op = m->imm ? IB_OPCODE_RC_SEND_ONLY_WITH_IMMEDIATE : IB_OPCODE_RC_SEND_ONLY;
	else if (first)
		op = IB_OPCODE_RC_SEND_FIRST;
	else if (last)
		op = m->imm ? IB_OPCODE_RC_SEND_LAST_WITH_IMMEDIATE : IB_OPCODE_RC_SEND_LAST;
	else
		op = IB_OPCODE_RC_SEND_MIDDLE;

	pkt = softib_rc_pkt(sdev, qp, op, m->psn + i, len);
	if (!pkt)
		return;		/* as a loss: recovered by NAK or timeout */
	pkt->sseq = m->seq;
	if (len)
		softib_pkt_defer_hashed(pkt, qp, m->src, off, 0, SOFTIB_FIX_NONE, m->hash[i]);
	pkt->ack_req = last;
	if (last && m->imm)
		pkt->imm = m->imm_data;
	softib_count(sdev, SOFTIB_CNT_RC_TX);
	softib_count(sdev, SOFTIB_CNT_TX_PACKETS);
	softib_count_add(sdev, SOFTIB_CNT_TX_BYTES, len);
	softib_send_from(sdev, pkt);
}

/* Go back to psn: send again every unacknowledged packet from it on. */
static void softib_rc_resend(struct softib_dev *sdev, struct softib_qp *qp, u32 psn)
{
	struct softib_rc_msg *m;
	u32 i;

	list_for_each_entry(m, &qp->rc->msgs, list) {
		for (i = 0; i < m->npkts; i++) {
			if (softib_psn_diff(m->psn + i, psn) < 0)
				continue;
			softib_count(sdev, SOFTIB_CNT_RC_RETRANS);
			softib_rc_send_pkt(sdev, qp, m, i);
		}
	}
}

int softib_rc_post_send(struct softib_dev *sdev, struct softib_qp *qp,
			const struct ib_send_wr *wr)
{
	struct softib_rc *rc = qp->rc;
	struct softib_rc_msg *m;
	unsigned long flags;
	u32 len = 0, mtu, n, i;
	bool bad_key;
	int err = 0;

	if (wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM) {
		ibdev_dbg(softib_ibdev(sdev), "QP 0x%x: RC opcode %d not supported\n",
			  qp->ibqp.qp_num, wr->opcode);
		return -EINVAL;
	}
	if (wr->num_sge < 0 || wr->num_sge > qp->max_send_sge)
		return -EINVAL;
	if (atomic_add_unless(&sdev->fail_post_send, -1, 0))
		return -ENOMEM;
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > SOFTIB_RC_MAX_MSG)
		return -EINVAL;

	/* the path MTU is set at RTR: a QP in RTS keeps it */
	mtu = softib_rc_mtu(sdev, rc);
	n = max_t(u32, DIV_ROUND_UP(len, mtu), 1);
	m = kzalloc(struct_size(m, hash, n), GFP_ATOMIC | __GFP_NOWARN);
	if (!m)
		return -ENOMEM;
	bad_key = !softib_sges_ok(sdev, qp->ibqp.pd, wr->sg_list, wr->num_sge);
	if (!bad_key) {
		m->src = softib_sges_get(wr, GFP_ATOMIC | __GFP_NOWARN);
		if (!m->src) {
			kfree(m);
			return -ENOMEM;
		}
		for (i = 0; i < n; i++)
			m->hash[i] = softib_sges_hash(m->src, i * mtu, min(mtu, len - i * mtu));
	}
	m->mtu = mtu;
	m->npkts = n;
	m->len = len;
	m->imm = wr->opcode == IB_WR_SEND_WITH_IMM;
	m->imm_data = wr->ex.imm_data;

	spin_lock_irqsave(&qp->lock, flags);
	if (qp->state == IB_QPS_ERR) {
		/* posted to a QP in error: flushed at once */
		if (qp->sq_count == qp->max_send_wr) {
			err = -ENOMEM;
		} else {
			softib_sq_add(qp, wr, len, IB_WC_WR_FLUSH_ERR, true);
			while (qp->sq_count)
				softib_sq_pop(qp, IB_WC_WR_FLUSH_ERR);
		}
		goto out_free;
	}
	if (qp->state != IB_QPS_RTS) {
		err = -EINVAL;
		goto out_free;
	}
	if (qp->sq_count == qp->max_send_wr) {
		softib_count(sdev, SOFTIB_CNT_POST_SEND_FULL);
		err = -ENOMEM;
		goto out_free;
	}
	if (bad_key) {
		/* an SGE the HCA may not read: the WR fails, the QP in ERR */
		softib_sq_add(qp, wr, len, IB_WC_LOC_PROT_ERR, true);
		softib_qp_err_locked(qp);
		spin_unlock_irqrestore(&qp->lock, flags);
		softib_qp_err_finish(qp);
		softib_rc_msg_free(m);
		return 0;
	}
	m->seq = softib_sq_add(qp, wr, len, IB_WC_SUCCESS, false);
	m->psn = rc->next_psn;
	rc->next_psn = (rc->next_psn + m->npkts) & SOFTIB_PSN_MASK;
	if (list_empty(&rc->msgs) && !rc->rnr_wait)
		softib_rc_arm(rc, softib_rc_timeout(rc));
	list_add_tail(&m->list, &rc->msgs);
	/* during an RNR wait the retry sends it */
	if (!rc->rnr_wait)
		for (i = 0; i < m->npkts; i++)
			softib_rc_send_pkt(sdev, qp, m, i);
	spin_unlock_irqrestore(&qp->lock, flags);
	return 0;

out_free:
	spin_unlock_irqrestore(&qp->lock, flags);
	softib_rc_msg_free(m);
	return err;
}

/*
 * Requester: complete the messages wholly before psn (an ACK covers up to
 * and including psn: pass psn + 1). Returns whether any completed.
 */
static bool softib_rc_ack_upto(struct softib_qp *qp, u32 psn)
{
	struct softib_rc *rc = qp->rc;
	struct softib_rc_msg *m, *tmp;
	bool progress = false;

	list_for_each_entry_safe(m, tmp, &rc->msgs, list) {
		if (softib_psn_diff(m->psn + m->npkts, psn) > 0)
			break;
		softib_sq_done_locked(qp, m->seq);
		list_del(&m->list);
		softib_rc_msg_free(m);
		progress = true;
	}
	if (progress) {
		rc->retry_left = rc->retry_cnt;
		rc->rnr_left = rc->rnr_retry;
	}
	return progress;
}

/*
 * Requester: the oldest send WR fails with status; the QP goes to ERR.
 * Caller holds qp->lock and calls softib_qp_err_finish() after unlocking.
 */
static void softib_rc_fail(struct softib_dev *sdev, struct softib_qp *qp,
			   enum ib_wc_status status)
{
	if (status == IB_WC_RETRY_EXC_ERR || status == IB_WC_RNR_RETRY_EXC_ERR)
		softib_count(sdev, SOFTIB_CNT_RC_RETRY_EXC);
	if (qp->sq_count)
		softib_sq_pop(qp, status);
	softib_qp_err_locked(qp);
}

/* Requester: an ACK or NAK arrived. Returns true if the QP went to ERR. */
static bool softib_rc_ack(struct softib_dev *sdev, struct softib_qp *qp,
			  const struct softib_pkt *pkt)
{
	struct softib_rc *rc = qp->rc;
	u8 syn = pkt->aeth >> 24;
	struct softib_rc_msg *head;

	head = list_first_entry_or_null(&rc->msgs, struct softib_rc_msg, list);
	if (!head || softib_psn_diff(pkt->psn, head->psn) < -1 ||
	    softib_psn_diff(pkt->psn, rc->next_psn) >= 0)
		return false;		/* stale, or for nothing sent */

	switch (SOFTIB_AETH_TYPE(syn)) {
	case SOFTIB_AETH_ACK:
		softib_rc_ack_upto(qp, pkt->psn + 1);
		if (rc->rnr_wait)
			return false;
		if (list_empty(&rc->msgs))
			timer_delete(&rc->timer);
		else
			softib_rc_arm(rc, softib_rc_timeout(rc));
		return false;
	case SOFTIB_AETH_RNR:
		softib_rc_ack_upto(qp, pkt->psn);
		if (rc->rnr_wait)
			return false;
		if (rc->rnr_retry != 7) {
			if (!rc->rnr_left) {
				softib_rc_fail(sdev, qp, IB_WC_RNR_RETRY_EXC_ERR);
				return true;
			}
			rc->rnr_left--;
		}
		rc->rnr_wait = true;
		rc->rnr_psn = pkt->psn;
		softib_rc_arm(rc, softib_rnr_delay(syn & 0x1f));
		return false;
	default:
		break;
	}
	/* a NAK implicitly acknowledges what precedes its PSN */
	softib_rc_ack_upto(qp, pkt->psn);
	if (list_empty(&rc->msgs))
		return false;
	switch (syn) {
	case SOFTIB_AETH_NAK_SEQ:
		if (rc->rnr_wait)
			return false;
		if (!rc->retry_left) {
			softib_rc_fail(sdev, qp, IB_WC_RETRY_EXC_ERR);
			return true;
		}
		rc->retry_left--;
		softib_rc_resend(sdev, qp, pkt->psn);
		softib_rc_arm(rc, softib_rc_timeout(rc));
		return false;
	case SOFTIB_AETH_NAK_INV:
		softib_rc_fail(sdev, qp, IB_WC_REM_INV_REQ_ERR);
		return true;
	case SOFTIB_AETH_NAK_ACC:
		softib_rc_fail(sdev, qp, IB_WC_REM_ACCESS_ERR);
		return true;
	default:
		softib_rc_fail(sdev, qp, IB_WC_REM_OP_ERR);
		return true;
	}
}

static void softib_rc_timer(struct timer_list *t)
{
	struct softib_rc *rc = timer_container_of(rc, t, timer);
	struct softib_qp *qp = rc->qp;
	struct softib_dev *sdev = READ_ONCE(qp->sport);
	struct softib_rc_msg *head;
	unsigned long flags;
	bool err = false;

	spin_lock_irqsave(&qp->lock, flags);
	head = list_first_entry_or_null(&rc->msgs, struct softib_rc_msg, list);
	if (rc->dead || !head || (qp->state != IB_QPS_RTS && qp->state != IB_QPS_SQD)) {
		rc->rnr_wait = false;
		goto out;
	}
	if (rc->rnr_wait) {
		rc->rnr_wait = false;
		softib_rc_resend(sdev, qp, rc->rnr_psn);
		softib_rc_arm(rc, softib_rc_timeout(rc));
		goto out;
	}
	softib_count(sdev, SOFTIB_CNT_RC_TIMEOUT);
	if (!rc->retry_left) {
		softib_rc_fail(sdev, qp, IB_WC_RETRY_EXC_ERR);
		err = true;
		goto out;
	}
	rc->retry_left--;
	softib_rc_resend(sdev, qp, head->psn);
	softib_rc_arm(rc, softib_rc_timeout(rc));
out:
	spin_unlock_irqrestore(&qp->lock, flags);
	if (err)
		softib_qp_err_finish(qp);
}

static void softib_rc_complete_rx(struct softib_qp *qp, const struct softib_pkt *pkt,
				  enum ib_wc_status status)
{
	struct softib_rc *rc = qp->rc;
	struct ib_wc wc = {
		.wr_id = rc->wqe.wr_id,
		.status = status,
		.opcode = IB_WC_RECV,
		.byte_len = rc->off,
		.qp = &qp->ibqp,
		.src_qp = rc->dest_qpn,
		.slid = pkt->slid,
		.sl = pkt->sl,
		.pkey_index = READ_ONCE(qp->pkey_index),
		.port_num = READ_ONCE(qp->sport)->port_num,
	};

	if (status == IB_WC_SUCCESS && (pkt->opcode == IB_OPCODE_RC_SEND_LAST_WITH_IMMEDIATE ||
					pkt->opcode == IB_OPCODE_RC_SEND_ONLY_WITH_IMMEDIATE)) {
		wc.wc_flags |= IB_WC_WITH_IMM;
		wc.ex.imm_data = pkt->imm;
	}
	rc->in_msg = false;
	softib_cq_push(to_scq(qp->ibqp.recv_cq), &wc, false);
}

/*
 * Responder: the first packet of an RDMA or atomic request, in sequence and
 * between messages. An HCA checks the QP's access flags, then the R_Key
 * against its memory regions; softib has no region open to remote access
 * (nothing of softib's asks for one), so every such request fails one check
 * or the other: a remote access error NAK, the QP to ERR and the local
 * access violation event (IBA 9.7.5.2.8, 11.6.3.1), as a ConnectX does.
 * (ib_cm's INIT attributes allow remote writes on every connected QP, so
 * the R_Key is what refuses them there. Zero-length requests, which skip
 * the R_Key check on hardware, are refused too.) The caller raises the
 * event; the QP is in ERR.
 */
static void softib_rc_refuse_rdma(struct softib_dev *sdev, struct softib_qp *qp,
				  const struct softib_pkt *pkt)
{
	softib_count(sdev, SOFTIB_CNT_RC_ACCESS_ERR);
	softib_rc_send_ack(sdev, qp, SOFTIB_AETH_NAK_ACC, pkt->psn);
	softib_qp_err_locked(qp);
}

static bool softib_rc_rdma_first(u8 op)
{
	return op == IB_OPCODE_RC_RDMA_WRITE_FIRST || op == IB_OPCODE_RC_RDMA_WRITE_ONLY ||
	       op == IB_OPCODE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE ||
	       op == IB_OPCODE_RC_RDMA_READ_REQUEST || op == IB_OPCODE_RC_COMPARE_SWAP ||
	       op == IB_OPCODE_RC_FETCH_ADD;
}

/*
 * Responder: a data packet. Returns true if the QP went to ERR; *event is
 * then the affiliated event to raise, or -1 for none.
 */
static bool softib_rc_data(struct softib_dev *sdev, struct softib_qp *qp,
			   const struct softib_pkt *pkt, bool *limit_event, int *event)
{
	struct softib_rc *rc = qp->rc;
	s32 d = softib_psn_diff(pkt->psn, rc->epsn);
	u8 op = pkt->opcode;
	bool first, last;
	u32 i, total = 0;

	if (d < 0) {
		/* a duplicate: the requester lost our ACK, tell it again */
		softib_count(sdev, SOFTIB_CNT_RC_DUP);
		softib_rc_send_ack(sdev, qp, SOFTIB_AETH_ACK, rc->epsn - 1);
		return false;
	}
	if (d > 0) {
		if (!rc->nak_sent) {
			rc->nak_sent = true;
			softib_rc_send_ack(sdev, qp, SOFTIB_AETH_NAK_SEQ, rc->epsn);
		}
		return false;
	}
	rc->nak_sent = false;

	if (!rc->in_msg && softib_rc_rdma_first(op)) {
		softib_rc_refuse_rdma(sdev, qp, pkt);
		*event = IB_EVENT_QP_ACCESS_ERR;
		return true;
	}
	first = op == IB_OPCODE_RC_SEND_FIRST || op == IB_OPCODE_RC_SEND_ONLY ||
		op == IB_OPCODE_RC_SEND_ONLY_WITH_IMMEDIATE;
	last = op == IB_OPCODE_RC_SEND_LAST || op == IB_OPCODE_RC_SEND_LAST_WITH_IMMEDIATE ||
	       op == IB_OPCODE_RC_SEND_ONLY || op == IB_OPCODE_RC_SEND_ONLY_WITH_IMMEDIATE;
	if (op > IB_OPCODE_RC_SEND_ONLY_WITH_IMMEDIATE || first == rc->in_msg ||
	    (!last && pkt->len != softib_rc_mtu(sdev, rc)) || pkt->len > softib_rc_mtu(sdev, rc)) {
		/* out of order opcode, a short middle packet, RDMA inside a SEND */
		softib_count(sdev, SOFTIB_CNT_RC_DROP);
		softib_rc_send_ack(sdev, qp, SOFTIB_AETH_NAK_INV, pkt->psn);
		if (rc->in_msg)
			softib_rc_complete_rx(qp, pkt, IB_WC_REM_INV_REQ_ERR);
		softib_qp_err_locked(qp);
		*event = IB_EVENT_QP_REQ_ERR;
		return true;
	}
	if (first) {
		if (!softib_take_rwqe(sdev, qp, &rc->wqe, limit_event)) {
			softib_rc_send_ack(sdev, qp, SOFTIB_AETH_RNR | (rc->min_rnr_timer & 0x1f),
					   pkt->psn);
			return false;
		}
		rc->in_msg = true;
		rc->off = 0;
	}
	if (first && !softib_sges_ok(sdev, qp->srq ? qp->srq->ibsrq.pd : qp->ibqp.pd,
				     rc->wqe.sge, rc->wqe.num_sge)) {
		/* a buffer the HCA may not write: a remote operational error */
		softib_count(sdev, SOFTIB_CNT_RX_ERR_CQE);
		softib_rc_send_ack(sdev, qp, SOFTIB_AETH_NAK_OP, pkt->psn);
		softib_rc_complete_rx(qp, pkt, IB_WC_LOC_PROT_ERR);
		softib_qp_err_locked(qp);
		return true;
	}
	for (i = 0; i < rc->wqe.num_sge; i++)
		total += rc->wqe.sge[i].length;
	if (rc->off + pkt->len > total) {
		/* the message does not fit the buffer: both ends fail */
		softib_count(sdev, SOFTIB_CNT_DROP_TOO_LONG);
		softib_count(sdev, SOFTIB_CNT_RX_ERR_CQE);
		softib_rc_send_ack(sdev, qp, SOFTIB_AETH_NAK_INV, pkt->psn);
		softib_rc_complete_rx(qp, pkt, IB_WC_LOC_LEN_ERR);
		softib_qp_err_locked(qp);
		return true;
	}
	softib_scatter(&rc->wqe, rc->off, pkt->data, pkt->len);
	rc->off += pkt->len;
	rc->epsn = (rc->epsn + 1) & SOFTIB_PSN_MASK;
	softib_count(sdev, SOFTIB_CNT_RC_RX);
	softib_count(sdev, SOFTIB_CNT_RX_PACKETS);
	softib_count_add(sdev, SOFTIB_CNT_RX_BYTES, pkt->len);
	if (last) {
		rc->msn = (rc->msn + 1) & 0xffffff;
		softib_rc_complete_rx(qp, pkt, IB_WC_SUCCESS);
	}
	if (pkt->ack_req || last)
		softib_rc_send_ack(sdev, qp, SOFTIB_AETH_ACK, pkt->psn);
	return false;
}

void softib_rc_rx(struct softib_dev *sdev, struct softib_qp *qp, const struct softib_pkt *pkt)
{
	struct softib_rc *rc = qp->rc;
	bool limit_event = false, err = false;
	enum ib_qp_state state;
	unsigned long flags;
	int event = -1;

	spin_lock_irqsave(&qp->lock, flags);
	state = qp->state;
	if (state != IB_QPS_RTR && state != IB_QPS_RTS && state != IB_QPS_SQD &&
	    state != IB_QPS_SQE) {
		softib_count(sdev, SOFTIB_CNT_DROP_QP_STATE);
		goto out;
	}
	/* a connected QP hears only its peer, on its own partition */
	if (pkt->slid != rdma_ah_get_dlid(&rc->ah) ||
	    !softib_pkey_match(READ_ONCE(sdev->pkeys[READ_ONCE(qp->pkey_index)]), pkt->pkey)) {
		softib_count(sdev, SOFTIB_CNT_RC_DROP);
		goto out;
	}
	if (pkt->opcode == IB_OPCODE_RC_ACKNOWLEDGE) {
		if (state != IB_QPS_RTR)
			err = softib_rc_ack(sdev, qp, pkt);
		goto out;
	}
	err = softib_rc_data(sdev, qp, pkt, &limit_event, &event);
out:
	spin_unlock_irqrestore(&qp->lock, flags);
	if (limit_event)
		softib_srq_event(qp->srq);
	if (err)
		softib_qp_err_finish(qp);
	if (event >= 0)
		softib_qp_event(qp, event);
}

/**
 * softib_rc_peer_pkt - a packet as an RC QP's peer would send it next
 * @sdev: the port the QP is on
 * @qp: an RC QP
 * @pkt: filled in: LIDs, SL, P_Key, DQPN and the PSN the QP expects
 *
 * For the rc_rdma_write knob: a well-formed request from the one port the
 * QP listens to.
 *
 * Return: 0, or -EINVAL if @qp is not an RC QP able to receive (RTR, RTS).
 */
int softib_rc_peer_pkt(struct softib_dev *sdev, struct softib_qp *qp, struct softib_pkt *pkt)
{
	unsigned long flags;
	int err = 0;

	if (!qp->rc)
		return -EINVAL;
	spin_lock_irqsave(&qp->lock, flags);
	if (qp->state != IB_QPS_RTR && qp->state != IB_QPS_RTS) {
		err = -EINVAL;
	} else {
		pkt->slid = rdma_ah_get_dlid(&qp->rc->ah);
		pkt->sl = rdma_ah_get_sl(&qp->rc->ah);
		pkt->pkey = READ_ONCE(sdev->pkeys[READ_ONCE(qp->pkey_index)]);
		pkt->psn = qp->rc->epsn;
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	pkt->dlid = READ_ONCE(sdev->lid);
	pkt->dqpn = qp->ibqp.qp_num;
	return err;
}

int softib_rc_modify(struct softib_qp *qp, const struct ib_qp_attr *attr, int mask,
		     enum ib_qp_state cur, enum ib_qp_state new)
{
	struct softib_rc *rc = qp->rc;

	if ((mask & IB_QP_AV) && (attr->ah_attr.type != RDMA_AH_ATTR_TYPE_IB ||
				  !rdma_ah_get_dlid(&attr->ah_attr)))
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC && attr->max_rd_atomic > 16) ||
	    (mask & IB_QP_MAX_DEST_RD_ATOMIC && attr->max_dest_rd_atomic > 16) ||
	    (mask & IB_QP_RETRY_CNT && attr->retry_cnt > 7) ||
	    (mask & IB_QP_RNR_RETRY && attr->rnr_retry > 7) ||
	    (mask & IB_QP_MIN_RNR_TIMER && attr->min_rnr_timer > 31) ||
	    (mask & IB_QP_TIMEOUT && attr->timeout > 31))
		return -EINVAL;

	if (mask & IB_QP_AV)
		rc->ah = attr->ah_attr;
	if (mask & IB_QP_DEST_QPN)
		rc->dest_qpn = attr->dest_qp_num & SOFTIB_PSN_MASK;
	if (mask & IB_QP_PATH_MTU)
		rc->path_mtu = attr->path_mtu;
	if (mask & IB_QP_RQ_PSN)
		rc->epsn = attr->rq_psn & SOFTIB_PSN_MASK;
	if (mask & IB_QP_SQ_PSN)
		rc->next_psn = attr->sq_psn & SOFTIB_PSN_MASK;
	if (mask & IB_QP_TIMEOUT)
		rc->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT) {
		rc->retry_cnt = attr->retry_cnt;
		rc->retry_left = rc->retry_cnt;
	}
	if (mask & IB_QP_RNR_RETRY) {
		rc->rnr_retry = attr->rnr_retry;
		rc->rnr_left = rc->rnr_retry;
	}
	if (mask & IB_QP_MIN_RNR_TIMER)
		rc->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		rc->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		rc->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_ACCESS_FLAGS)
		rc->access = attr->qp_access_flags;
	return 0;
}

void softib_rc_query(struct softib_qp *qp, struct ib_qp_attr *attr)
{
	struct softib_rc *rc = qp->rc;

	attr->ah_attr = rc->ah;
	attr->dest_qp_num = rc->dest_qpn;
	attr->path_mtu = rc->path_mtu;
	attr->rq_psn = rc->epsn;
	attr->sq_psn = rc->next_psn;
	attr->timeout = rc->timeout;
	attr->retry_cnt = rc->retry_cnt;
	attr->rnr_retry = rc->rnr_retry;
	attr->min_rnr_timer = rc->min_rnr_timer;
	attr->max_rd_atomic = rc->max_rd_atomic;
	attr->max_dest_rd_atomic = rc->max_dest_rd_atomic;
	attr->qp_access_flags = rc->access;
}

void softib_rc_reset_locked(struct softib_qp *qp, bool to_err)
{
	struct softib_rc *rc = qp->rc;

	softib_rc_free_msgs(rc);
	timer_delete(&rc->timer);
	rc->rnr_wait = false;
	rc->nak_sent = false;
	if (rc->in_msg && to_err) {
		/* the WQE a half-received message took is flushed too */
		struct ib_wc wc = {
			.wr_id = rc->wqe.wr_id,
			.status = IB_WC_WR_FLUSH_ERR,
			.opcode = IB_WC_RECV,
			.qp = &qp->ibqp,
			.port_num = READ_ONCE(qp->sport)->port_num,
		};

		softib_cq_push(to_scq(qp->ibqp.recv_cq), &wc, false);
	}
	rc->in_msg = false;
}

static void softib_rc_last_wqe_work(struct work_struct *work)
{
	struct softib_rc *rc = container_of(work, struct softib_rc, last_wqe_work);
	struct softib_qp *qp = rc->qp;
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = IB_EVENT_QP_LAST_WQE_REACHED,
	};

	softib_count(READ_ONCE(qp->sport), SOFTIB_CNT_LAST_WQE);
	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/*
 * An SRQ-attached QP in ERR consumes no more WQEs: say so, asynchronously
 * as an HCA's event queue does (IBA 11.6.3.2).
 */
void softib_rc_err_finish(struct softib_qp *qp)
{
	if (qp->srq && !READ_ONCE(qp->rc->dead))
		schedule_work(&qp->rc->last_wqe_work);
}

int softib_rc_create(struct softib_qp *qp)
{
	struct softib_rc *rc;

	rc = kzalloc(sizeof(*rc), GFP_KERNEL);
	if (!rc)
		return -ENOMEM;
	rc->qp = qp;
	rc->path_mtu = IB_MTU_256;
	INIT_LIST_HEAD(&rc->msgs);
	timer_setup(&rc->timer, softib_rc_timer, 0);
	INIT_WORK(&rc->last_wqe_work, softib_rc_last_wqe_work);
	qp->rc = rc;
	return 0;
}

/* destroy_qp, after the fabric can no longer reach the QP */
void softib_rc_destroy(struct softib_qp *qp)
{
	struct softib_rc *rc = qp->rc;
	unsigned long flags;

	if (!rc)
		return;
	spin_lock_irqsave(&qp->lock, flags);
	rc->dead = true;
	spin_unlock_irqrestore(&qp->lock, flags);
	timer_delete_sync(&rc->timer);
	cancel_work_sync(&rc->last_wqe_work);
	softib_rc_free_msgs(rc);
	kfree(rc);
	qp->rc = NULL;
}
