// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the stateless offloads a ConnectX HCA gives an IPoIB UD QP.
 *
 * They work on the IPoIB frame as it is in the send WR (the 4-byte
 * encapsulation header, then IPv4), which is where an HCA parses it too:
 *
 *  - IB_SEND_IP_CSUM: the IPv4 header checksum and, for a TCP or UDP
 *    datagram that is not a fragment, the TCP or UDP checksum are computed
 *    from scratch and written into the packet before it leaves;
 *  - IB_WR_LSO (QPs created with IB_QP_CREATE_IPOIB_UD_LSO): the WR carries
 *    the IPoIB, IPv4 and TCP headers (hlen bytes at wr->header) and a TCP
 *    payload in its SGEs; the HCA cuts the payload at mss and sends each
 *    piece behind a copy of the headers with IP total length, ID and
 *    checksum and TCP sequence number, flags and checksum fixed. A header
 *    that is not IPoIB/IPv4/TCP, an hlen that does not end where the TCP
 *    header does, mss 0, or a segment or payload longer than the HCA can
 *    send completes the WR in error, as on hardware;
 *  - receive: IB_WC_IP_CSUM_OK when an IPv4 TCP or UDP packet's header and
 *    TCP/UDP checksums verify.
 *
 * Each is advertised in the device's capabilities (IB_DEVICE_UD_IP_CSUM,
 * IBK_UD_TSO) unless the module parameters ud_csum / ud_tso are 0, or the
 * device's LID is in plain_lids (a peer HCA without them).
 */
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/list.h>
#include <linux/moduleparam.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <net/checksum.h>
#include <net/ip.h>
#include <rdma/ib_verbs.h>

#include "softib.h"

static bool softib_ud_csum = true;
module_param_named(ud_csum, softib_ud_csum, bool, 0644);
MODULE_PARM_DESC(ud_csum, "offer UD IP checksum offload (IB_DEVICE_UD_IP_CSUM) on new devices");

static bool softib_ud_tso = true;
module_param_named(ud_tso, softib_ud_tso, bool, 0644);
MODULE_PARM_DESC(ud_tso, "offer UD LSO (IBK_UD_TSO) on new devices");

static unsigned short softib_plain_lids[8];
static int softib_n_plain_lids;
module_param_array_named(plain_lids, softib_plain_lids, ushort, &softib_n_plain_lids, 0444);
MODULE_PARM_DESC(plain_lids, "LIDs of devices that offer no offload at all");

#define SOFTIB_ENCAP_LEN	4	/* IPoIB encapsulation header */

void softib_offload_caps(struct softib_dev *sdev, u16 lid)
{
	int i;

	sdev->ud_csum = READ_ONCE(softib_ud_csum);
	sdev->ud_tso = READ_ONCE(softib_ud_tso);
	for (i = 0; i < softib_n_plain_lids; i++) {
		if (softib_plain_lids[i] == lid) {
			sdev->ud_csum = false;
			sdev->ud_tso = false;
		}
	}
}

/* The IPv4 header of an IPoIB frame of len bytes, if it is well formed. */
static struct iphdr *softib_frame_ipv4(u8 *frame, u32 len)
{
	struct iphdr *iph;
	u32 ihl, tot;

	if (len < SOFTIB_ENCAP_LEN + sizeof(*iph) || get_unaligned_be16(frame) != ETH_P_IP)
		return NULL;
	iph = (struct iphdr *)(frame + SOFTIB_ENCAP_LEN);
	ihl = iph->ihl * 4;
	tot = ntohs(iph->tot_len);
	if (iph->version != 4 || ihl < sizeof(*iph) || tot < ihl || tot > len - SOFTIB_ENCAP_LEN)
		return NULL;
	return iph;
}

/*
 * Where the TCP or UDP checksum of iph's datagram is, and how long the
 * datagram's TCP/UDP part is; NULL for anything else (other protocols,
 * fragments, truncated headers).
 */
static __sum16 *softib_l4_check(struct iphdr *iph, u32 *l4_len)
{
	u32 ihl = iph->ihl * 4, len = ntohs(iph->tot_len) - ihl;
	u8 *l4 = (u8 *)iph + ihl;

	if (iph->frag_off & htons(IP_MF | IP_OFFSET))
		return NULL;
	*l4_len = len;
	if (iph->protocol == IPPROTO_TCP && len >= sizeof(struct tcphdr))
		return &((struct tcphdr *)l4)->check;
	if (iph->protocol == IPPROTO_UDP && len >= sizeof(struct udphdr))
		return &((struct udphdr *)l4)->check;
	return NULL;
}

static __sum16 softib_l4_sum(const struct iphdr *iph, u32 l4_len)
{
	return csum_tcpudp_magic(iph->saddr, iph->daddr, l4_len, iph->protocol,
				 csum_partial((const u8 *)iph + iph->ihl * 4, l4_len, 0));
}

static void softib_ipv4_fill(struct iphdr *iph)
{
	__sum16 *check;
	u32 l4_len;

	iph->check = 0;
	iph->check = ip_fast_csum(iph, iph->ihl);
	check = softib_l4_check(iph, &l4_len);
	if (!check)
		return;
	*check = 0;
	*check = softib_l4_sum(iph, l4_len);
	if (iph->protocol == IPPROTO_UDP && !*check)
		*check = CSUM_MANGLED_0;
}

/* An LSO segment about to leave: its IPv4 header and TCP checksums. */
void softib_lso_fill(struct softib_pkt *pkt)
{
	softib_ipv4_fill((struct iphdr *)(pkt->data + SOFTIB_ENCAP_LEN));
}

/* IB_SEND_IP_CSUM on a packet about to leave; true if it was IPv4. */
bool softib_csum_fill(struct softib_pkt *pkt)
{
	struct iphdr *iph = softib_frame_ipv4(pkt->data, pkt->len);

	if (!iph)
		return false;
	softib_ipv4_fill(iph);
	return true;
}

/*
 * On receive: 1 if an IPv4 TCP/UDP packet's checksums verify (the WC gets
 * IB_WC_IP_CSUM_OK), -1 if they do not, 0 if there is nothing to verify (a
 * UDP datagram without checksum among them).
 */
int softib_csum_verify(const struct softib_pkt *pkt)
{
	struct iphdr *iph = softib_frame_ipv4((u8 *)pkt->data, pkt->len);
	__sum16 *check;
	u32 l4_len;

	if (!iph)
		return 0;
	check = softib_l4_check(iph, &l4_len);
	if (!check || (iph->protocol == IPPROTO_UDP && !*check))
		return 0;
	if (ip_fast_csum(iph, iph->ihl) || softib_l4_sum(iph, l4_len))
		return -1;
	return 1;
}

/*
 * Check an LSO WR's header; returns the offset of the TCP header in it or
 * 0 if it is not one an HCA segments.
 */
static u32 softib_lso_check_hdr(const u8 *hdr, u32 hlen)
{
	const struct iphdr *iph = (const struct iphdr *)(hdr + SOFTIB_ENCAP_LEN);
	const struct tcphdr *th;
	u32 ihl;

	if (hlen < SOFTIB_ENCAP_LEN + sizeof(*iph) + sizeof(*th) || hlen > SOFTIB_LSO_MAX_HDR ||
	    get_unaligned_be16(hdr) != ETH_P_IP)
		return 0;
	ihl = iph->ihl * 4;
	if (iph->version != 4 || ihl < sizeof(*iph) || iph->protocol != IPPROTO_TCP ||
	    SOFTIB_ENCAP_LEN + ihl + sizeof(*th) > hlen)
		return 0;
	th = (const struct tcphdr *)(hdr + SOFTIB_ENCAP_LEN + ihl);
	if (SOFTIB_ENCAP_LEN + ihl + th->doff * 4 != hlen)
		return 0;
	return SOFTIB_ENCAP_LEN + ihl;
}

/*
 * Cut an LSO WR with len payload bytes into packets on @segs, each made by
 * @mk (which fills the headers of a packet of the given length). Returns
 * IB_WC_SUCCESS, the completion error of a WR the HCA refuses, or
 * IB_WC_GENERAL_ERR without memory (nothing is left on @segs then).
 */
enum ib_wc_status softib_lso_segment(struct softib_dev *sdev, const struct ib_send_wr *wr,
				     u32 len, u32 mtu, struct list_head *segs,
				     struct softib_pkt *(*mk)(const struct ib_send_wr *wr, u32 len,
							      void *arg),
				     void *arg, struct softib_qp *qp, struct softib_sges *src)
{
	const struct ib_ud_wr *ud = ud_wr(wr);
	u32 hlen = ud->hlen, mss = ud->mss, thoff, off = 0, i = 0;
	const u8 *hdr = ud->header;
	struct softib_pkt *pkt, *tmp;

	/* the fault knobs: one bad parameter per WR */
	if (atomic_add_unless(&sdev->lso_bad_mss, -1, 0))
		mss = 0;
	else if (atomic_add_unless(&sdev->lso_bad_hlen, -1, 0))
		hlen--;
	thoff = softib_lso_check_hdr(hdr, hlen);
	if (!thoff || !mss)
		return IB_WC_LOC_QP_OP_ERR;
	/* hlen <= SOFTIB_LSO_MAX_HDR <= the smallest MTU: no wrap (mss is an int) */
	if (mss > mtu - hlen || len > SOFTIB_LSO_MAX_PAYLOAD)
		return IB_WC_LOC_LEN_ERR;

	do {
		u32 n = min(mss, len - off);
		struct tcphdr *th;
		struct iphdr *iph;

		pkt = mk(wr, hlen + n, arg);
		if (!pkt)
			goto err_free;
		memcpy(pkt->data, hdr, hlen);
		iph = (struct iphdr *)(pkt->data + SOFTIB_ENCAP_LEN);
		th = (struct tcphdr *)(pkt->data + thoff);
		iph->tot_len = htons(hlen - SOFTIB_ENCAP_LEN + n);
		iph->id = htons(ntohs(iph->id) + i);
		th->seq = htonl(ntohl(th->seq) + off);
		if (i)
			th->cwr = 0;
		if (off + n < len) {
			th->fin = 0;
			th->psh = 0;
		}
		/* the payload and the checksums when the segment leaves */
		softib_pkt_defer(pkt, qp, src, off, hlen, SOFTIB_FIX_LSO);
		list_add_tail(&pkt->list, segs);
		off += n;
		i++;
	} while (off < len);
	softib_count(sdev, SOFTIB_CNT_TX_LSO);
	softib_count_add(sdev, SOFTIB_CNT_TX_LSO_SEGS, i);
	return IB_WC_SUCCESS;

err_free:
	list_for_each_entry_safe(pkt, tmp, segs, list) {
		list_del(&pkt->list);
		softib_pkt_free(pkt);
	}
	return IB_WC_GENERAL_ERR;
}
