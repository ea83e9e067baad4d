// SPDX-License-Identifier: GPL-2.0
/*
 * softib wire format: the IB packet carried by the Ethernet transport and
 * accepted by the per-device "inject" debugfs knob.
 *
 *   UD:  LRH (8) [GRH (40)] BTH (12) DETH (8) [ImmDt (4)] payload pad ICRC (4)
 *   RC:  LRH (8) [GRH (40)] BTH (12) [RETH (16) | AtomicETH (28) | AETH (4)]
 *        [ImmDt (4)] payload pad ICRC (4)
 *
 * Carried: UD SEND_ONLY and SEND_ONLY_WITH_IMMEDIATE (UD, GSI and SMI
 * QPs); RC SEND_FIRST/MIDDLE/LAST/ONLY (with immediate on LAST and ONLY)
 * with the PSN and AckReq bit in the BTH, RC ACKNOWLEDGE with its
 * AETH (syndrome, MSN), and the RC requests a peer may aim at a QP that
 * never asked for them (RDMA WRITE FIRST/MIDDLE/LAST/ONLY, with immediate,
 * and RDMA READ REQUEST with their RETH; COMPARE SWAP and FETCH ADD with
 * their AtomicETH): the responder refuses them (softib_rc.c). Read
 * responses and atomic acknowledgements are not carried: softib never
 * asks for either.  The ICRC is a plain CRC-32 (the Ethernet/zlib one) over every
 * byte before it, stored little-endian; unlike a real HCA no field is
 * masked, which is enough to detect corruption on the simulated wire.
 *
 * The parser trusts nothing: every length and field is checked before use,
 * and nothing it finds is logged or warned about; the caller counts the
 * returned reason.
 */

#include <linux/crc32.h>
#include <linux/errno.h>
#include <linux/string.h>
#include <rdma/ib_pack.h>
#include <rdma/ib_verbs.h>

#include "softib.h"
#include "softib_eth.h"

/* LRH */
#define SOFTIB_LRH_VL_SHIFT	4
#define SOFTIB_LRH_VL15		15
#define SOFTIB_LRH_LVER_MASK	0x0f
#define SOFTIB_LRH_SL_SHIFT	4
#define SOFTIB_LRH_LNH_MASK	0x03
#define SOFTIB_LRH_RSV_MASK	0x0c
#define SOFTIB_LRH_PKTLEN_MASK	0x07ff

/* GRH */
#define SOFTIB_GRH_IPVER_SHIFT	28
#define SOFTIB_GRH_IPVER	6
#define SOFTIB_GRH_NEXT_HDR	0x1b

/* BTH */
#define SOFTIB_BTH_SE		0x80
#define SOFTIB_BTH_PAD_SHIFT	4
#define SOFTIB_BTH_PAD_MASK	0x03
#define SOFTIB_BTH_TVER_MASK	0x0f

#define SOFTIB_QPN_MASK		0xffffff
#define SOFTIB_LID_MCAST_BASE	0xc000
#define SOFTIB_LID_PERMISSIVE	0xffff

#define SOFTIB_IMM_BYTES	4
#define SOFTIB_AETH_BYTES	4
#define SOFTIB_RETH_BYTES	16
#define SOFTIB_ATOMETH_BYTES	28
#define SOFTIB_BTH_ACKREQ	BIT(31)
#define SOFTIB_PSN_MASK		0xffffff

static bool softib_wire_has_imm(u8 opcode)
{
	return opcode == IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE ||
	       opcode == IB_OPCODE_RC_SEND_LAST_WITH_IMMEDIATE ||
	       opcode == IB_OPCODE_RC_SEND_ONLY_WITH_IMMEDIATE ||
	       opcode == IB_OPCODE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE ||
	       opcode == IB_OPCODE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
}

/* the RC requests with a RETH: the first packet of an RDMA WRITE, a READ */
static bool softib_wire_has_reth(u8 opcode)
{
	return opcode == IB_OPCODE_RC_RDMA_WRITE_FIRST ||
	       opcode == IB_OPCODE_RC_RDMA_WRITE_ONLY ||
	       opcode == IB_OPCODE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE ||
	       opcode == IB_OPCODE_RC_RDMA_READ_REQUEST;
}

static bool softib_wire_is_atomic(u8 opcode)
{
	return opcode == IB_OPCODE_RC_COMPARE_SWAP || opcode == IB_OPCODE_RC_FETCH_ADD;
}

/* the opcodes carried (see the top of this file) */
static bool softib_wire_opcode_ok(u8 opcode)
{
	return opcode == IB_OPCODE_UD_SEND_ONLY ||
	       opcode == IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE ||
	       opcode <= IB_OPCODE_RC_RDMA_READ_REQUEST ||
	       opcode == IB_OPCODE_RC_ACKNOWLEDGE || softib_wire_is_atomic(opcode);
}

static size_t softib_wire_hdr_len(bool has_grh, u8 opcode)
{
	bool rc = softib_opcode_is_rc(opcode);

	return IB_LRH_BYTES + (has_grh ? IB_GRH_BYTES : 0) + IB_BTH_BYTES +
	       (rc ? 0 : IB_DETH_BYTES) +
	       (opcode == IB_OPCODE_RC_ACKNOWLEDGE ? SOFTIB_AETH_BYTES : 0) +
	       (softib_wire_has_reth(opcode) ? SOFTIB_RETH_BYTES : 0) +
	       (softib_wire_is_atomic(opcode) ? SOFTIB_ATOMETH_BYTES : 0) +
	       (softib_wire_has_imm(opcode) ? SOFTIB_IMM_BYTES : 0);
}

static u32 softib_wire_pad(u32 len)
{
	return (4 - (len & 3)) & 3;
}

static u32 softib_wire_icrc(const u8 *buf, size_t len)
{
	return ~crc32_le(~0U, buf, len);
}

/**
 * softib_wire_len - bytes softib_wire_build() writes for a packet
 * @pkt: the packet
 *
 * Return: the length from the first byte of the LRH to the last byte of
 * the ICRC.
 */
size_t softib_wire_len(const struct softib_pkt *pkt)
{
	return softib_wire_hdr_len(pkt->has_grh, pkt->opcode) + pkt->len +
	       softib_wire_pad(pkt->len) + IB_ICRC_BYTES;
}

/**
 * softib_wire_build - write a packet in wire format
 * @pkt: the packet; its fields are trusted (they come from the core)
 * @buf: softib_wire_len(@pkt) bytes
 *
 * The GRH is copied from @pkt as it is, except for the fields this
 * function owns: IP version 6, next header 0x1B and PayLen.
 */
void softib_wire_build(const struct softib_pkt *pkt, u8 *buf)
{
	size_t total = softib_wire_len(pkt);
	u32 pad = softib_wire_pad(pkt->len);
	u8 vl = pkt->dqpn == 0 ? SOFTIB_LRH_VL15 : 0;
	u16 dlid = pkt->dlid, slid = pkt->slid;
	u8 *p = buf;

	/*
	 * LID 0 never goes on the wire: an SMP from or to a port the SM has
	 * not given a LID yet (external_sm) carries the permissive LID.
	 */
	if (pkt->dqpn == 0) {
		dlid = dlid ? dlid : SOFTIB_LID_PERMISSIVE;
		slid = slid ? slid : SOFTIB_LID_PERMISSIVE;
	}

	/* LRH: VL | LVer 0, SL | LNH, DLID, PktLen (words, incl. ICRC), SLID */
	p[0] = vl << SOFTIB_LRH_VL_SHIFT;
	p[1] = (pkt->sl & 0x0f) << SOFTIB_LRH_SL_SHIFT |
	       (pkt->has_grh ? IB_LNH_IBA_GLOBAL : IB_LNH_IBA_LOCAL);
	put_unaligned_be16(dlid, p + 2);
	put_unaligned_be16((total / 4) & SOFTIB_LRH_PKTLEN_MASK, p + 4);
	put_unaligned_be16(slid, p + 6);
	p += IB_LRH_BYTES;

	if (pkt->has_grh) {
		struct ib_grh grh = pkt->grh;
		u32 vtf = be32_to_cpu(grh.version_tclass_flow);

		vtf &= ~(0xfU << SOFTIB_GRH_IPVER_SHIFT);
		vtf |= SOFTIB_GRH_IPVER << SOFTIB_GRH_IPVER_SHIFT;
		grh.version_tclass_flow = cpu_to_be32(vtf);
		grh.paylen = cpu_to_be16(total - IB_LRH_BYTES - IB_GRH_BYTES);
		grh.next_hdr = SOFTIB_GRH_NEXT_HDR;
		memcpy(p, &grh, IB_GRH_BYTES);
		p += IB_GRH_BYTES;
	}

	/* BTH: opcode, SE|M|PadCnt|TVer, P_Key, resv8 | DestQP, A | PSN */
	p[0] = pkt->opcode;
	p[1] = (softib_wire_has_imm(pkt->opcode) ? SOFTIB_BTH_SE : 0) |
	       pad << SOFTIB_BTH_PAD_SHIFT;
	put_unaligned_be16(pkt->pkey, p + 2);
	put_unaligned_be32(pkt->dqpn & SOFTIB_QPN_MASK, p + 4);
	put_unaligned_be32((pkt->ack_req ? SOFTIB_BTH_ACKREQ : 0) | (pkt->psn & SOFTIB_PSN_MASK),
			   p + 8);
	p += IB_BTH_BYTES;

	if (!softib_opcode_is_rc(pkt->opcode)) {
		/* DETH: Q_Key, resv8 | SrcQP */
		put_unaligned_be32(pkt->qkey, p);
		put_unaligned_be32(pkt->sqpn & SOFTIB_QPN_MASK, p + 4);
		p += IB_DETH_BYTES;
	} else if (pkt->opcode == IB_OPCODE_RC_ACKNOWLEDGE) {
		/* AETH: syndrome | MSN */
		put_unaligned_be32(pkt->aeth, p);
		p += SOFTIB_AETH_BYTES;
	} else if (softib_wire_has_reth(pkt->opcode)) {
		/* RETH: VA, R_Key, DMA length */
		put_unaligned_be64(pkt->va, p);
		put_unaligned_be32(pkt->rkey, p + 8);
		put_unaligned_be32(pkt->dma_len, p + 12);
		p += SOFTIB_RETH_BYTES;
	} else if (softib_wire_is_atomic(pkt->opcode)) {
		/* AtomicETH: VA, R_Key, swap (add) data, compare data */
		put_unaligned_be64(pkt->va, p);
		put_unaligned_be32(pkt->rkey, p + 8);
		put_unaligned_be64(pkt->swap, p + 12);
		put_unaligned_be64(pkt->compare, p + 20);
		p += SOFTIB_ATOMETH_BYTES;
	}

	if (softib_wire_has_imm(pkt->opcode)) {
		memcpy(p, &pkt->imm, SOFTIB_IMM_BYTES);
		p += SOFTIB_IMM_BYTES;
	}

	memcpy(p, pkt->data, pkt->len);
	p += pkt->len;
	memset(p, 0, pad);
	p += pad;

	put_unaligned_le32(softib_wire_icrc(buf, p - buf), p);
}

/* Check the DLID/DQPN/GRH combination: what IB allows a UD or RC packet. */
static bool softib_wire_addr_ok(u16 dlid, u16 slid, u32 dqpn, bool has_grh, bool rc)
{
	if (rc)		/* connected: unicast, to neither QP0 nor QP1 */
		return dlid && slid && dlid < SOFTIB_LID_MCAST_BASE &&
		       slid < SOFTIB_LID_MCAST_BASE && dqpn > 1 && dqpn != IB_MULTICAST_QPN;
	/* an SMP from a port without a LID: the permissive SLID */
	if (slid == SOFTIB_LID_PERMISSIVE && dqpn == 0)
		return dlid != 0;
	if (!dlid || !slid || slid >= SOFTIB_LID_MCAST_BASE)
		return false;
	if (dlid == SOFTIB_LID_PERMISSIVE)	/* directed-route SMPs only */
		return dqpn == 0;
	if (dlid >= SOFTIB_LID_MCAST_BASE)	/* multicast: GRH, QPN 0xFFFFFF */
		return has_grh && dqpn == IB_MULTICAST_QPN;
	return dqpn != IB_MULTICAST_QPN;
}

/**
 * softib_wire_parse - check and decode one wire packet
 * @buf: the packet, from the first byte of the LRH to the last of the ICRC
 * @len: its length; must be exactly the LRH PktLen
 * @out: on success, a new packet (softib_pkt_free() it)
 * @why: on failure, the counter to bump
 *
 * Safe on any input, in any context (allocates with GFP_ATOMIC).
 *
 * Return: 0; -EINVAL for a malformed packet and -EMSGSIZE for a payload
 * larger than the largest IB MTU (@why: drop_malformed); -EBADMSG for an
 * ICRC mismatch (@why: drop_icrc); -ENOMEM (@why: drop_no_rwqe).
 */
int softib_wire_parse(const u8 *buf, size_t len, struct softib_pkt **out,
		      enum softib_counter *why)
{
	u32 pktlen, dqpn, sqpn = 0, qkey = 0, pad, plen, psn_a, aeth = 0;
	u32 rkey = 0, dma_len = 0;
	u64 va = 0, swap = 0, compare = 0;
	bool has_grh, has_imm, rc;
	struct softib_pkt *pkt;
	u16 dlid, slid, pkey;
	const u8 *p = buf;
	struct ib_grh grh;
	size_t hdr;
	u8 opcode;
	u8 sl;

	*out = NULL;
	*why = SOFTIB_CNT_DROP_MALFORMED;

	/* LRH, and the length it claims, before anything else */
	if (len < IB_LRH_BYTES)
		return -EINVAL;
	pktlen = (get_unaligned_be16(p + 4) & SOFTIB_LRH_PKTLEN_MASK) * 4;
	if (pktlen != len)
		return -EINVAL;
	if ((p[0] & SOFTIB_LRH_LVER_MASK) || (p[1] & SOFTIB_LRH_RSV_MASK))
		return -EINVAL;
	switch (p[1] & SOFTIB_LRH_LNH_MASK) {
	case IB_LNH_IBA_LOCAL:
		has_grh = false;
		break;
	case IB_LNH_IBA_GLOBAL:
		has_grh = true;
		break;
	default:
		return -EINVAL;
	}
	sl = p[1] >> SOFTIB_LRH_SL_SHIFT;
	dlid = get_unaligned_be16(p + 2);
	slid = get_unaligned_be16(p + 6);

	/* the shortest packet this LNH allows, then the ICRC over it */
	if (len < softib_wire_hdr_len(has_grh, IB_OPCODE_RC_SEND_MIDDLE) + IB_ICRC_BYTES)
		return -EINVAL;
	if (get_unaligned_le32(buf + len - IB_ICRC_BYTES) !=
	    softib_wire_icrc(buf, len - IB_ICRC_BYTES)) {
		*why = SOFTIB_CNT_DROP_ICRC;
		return -EBADMSG;
	}
	p += IB_LRH_BYTES;

	if (has_grh) {
		memcpy(&grh, p, IB_GRH_BYTES);
		if (be32_to_cpu(grh.version_tclass_flow) >>
		    SOFTIB_GRH_IPVER_SHIFT != SOFTIB_GRH_IPVER)
			return -EINVAL;
		if (grh.next_hdr != SOFTIB_GRH_NEXT_HDR)
			return -EINVAL;
		if (be16_to_cpu(grh.paylen) != len - IB_LRH_BYTES - IB_GRH_BYTES)
			return -EINVAL;
		p += IB_GRH_BYTES;
	}

	/* BTH */
	opcode = p[0];
	if (!softib_wire_opcode_ok(opcode))
		return -EINVAL;
	rc = softib_opcode_is_rc(opcode);
	has_imm = softib_wire_has_imm(opcode);
	if (p[1] & SOFTIB_BTH_TVER_MASK)
		return -EINVAL;
	pad = (p[1] >> SOFTIB_BTH_PAD_SHIFT) & SOFTIB_BTH_PAD_MASK;
	pkey = get_unaligned_be16(p + 2);
	dqpn = get_unaligned_be32(p + 4) & SOFTIB_QPN_MASK;
	psn_a = get_unaligned_be32(p + 8);
	p += IB_BTH_BYTES;

	hdr = softib_wire_hdr_len(has_grh, opcode);
	if (len < hdr + IB_ICRC_BYTES)
		return -EINVAL;
	if (!rc) {
		/* DETH */
		qkey = get_unaligned_be32(p);
		sqpn = get_unaligned_be32(p + 4) & SOFTIB_QPN_MASK;
		p += IB_DETH_BYTES;
	} else if (opcode == IB_OPCODE_RC_ACKNOWLEDGE) {
		aeth = get_unaligned_be32(p);
		p += SOFTIB_AETH_BYTES;
	} else if (softib_wire_has_reth(opcode)) {
		va = get_unaligned_be64(p);
		rkey = get_unaligned_be32(p + 8);
		dma_len = get_unaligned_be32(p + 12);
		p += SOFTIB_RETH_BYTES;
	} else if (softib_wire_is_atomic(opcode)) {
		va = get_unaligned_be64(p);
		rkey = get_unaligned_be32(p + 8);
		swap = get_unaligned_be64(p + 12);
		compare = get_unaligned_be64(p + 20);
		p += SOFTIB_ATOMETH_BYTES;
	}
	plen = len - hdr - IB_ICRC_BYTES;	/* payload + pad */
	if (pad > plen)
		return -EINVAL;
	plen -= pad;
	if (plen > SOFTIB_WIRE_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (!softib_wire_addr_ok(dlid, slid, dqpn, has_grh, rc))
		return -EINVAL;

	pkt = softib_pkt_alloc(plen, GFP_ATOMIC);
	if (!pkt) {
		*why = SOFTIB_CNT_DROP_NO_RWQE;	/* no buffer for it */
		return -ENOMEM;
	}
	pkt->slid = slid;
	pkt->dlid = dlid;
	pkt->sl = sl;
	pkt->has_grh = has_grh;
	if (has_grh)
		pkt->grh = grh;
	pkt->opcode = opcode;
	pkt->pkey = pkey;
	pkt->dqpn = dqpn;
	pkt->qkey = qkey;
	pkt->sqpn = sqpn;
	if (rc) {
		pkt->psn = psn_a & SOFTIB_PSN_MASK;
		pkt->ack_req = psn_a & SOFTIB_BTH_ACKREQ;
		pkt->aeth = aeth;
		pkt->va = va;
		pkt->rkey = rkey;
		pkt->dma_len = dma_len;
		pkt->swap = swap;
		pkt->compare = compare;
	}
	if (has_imm) {
		memcpy(&pkt->imm, p, SOFTIB_IMM_BYTES);
		p += SOFTIB_IMM_BYTES;
	}
	pkt->len = plen;
	memcpy(pkt->data, p, plen);

	*out = pkt;
	return 0;
}
