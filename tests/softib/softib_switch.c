// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the external-SM fabric. Two in-kernel ports are linked back to
 * back; more hang off one simulated switch (sib<i> on switch port i + 1).
 * The switch has an SMA of its own (NodeInfo, NodeDescription, SwitchInfo,
 * PortInfo, P_KeyTable, SLtoVL, VLArbitration, linear and multicast
 * forwarding tables), forwards directed-route SMPs by their hop pointers
 * and everything else by the tables the SM programmed. What the wire sends
 * is counted and dropped when it is wrong, never WARNed on.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/rculist.h>
#include <linux/seq_file.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_pack.h>
#include <rdma/ib_smi.h>
#include <rdma/ib_verbs.h>

#include "softib.h"

#define SOFTIB_SW_MAX_PORTS	15	/* one MFT position (16 bits, port 0 too) */
#define SOFTIB_SW_LFT_CAP	1024	/* LIDs 0..1023: 16 blocks of 64 */
#define SOFTIB_SW_MFT_CAP	256	/* MLIDs 0xc000..0xc0ff: 8 blocks of 32 */
#define SOFTIB_SW_NO_PORT	0xff
#define SOFTIB_SW_GUID		(SOFTIB_GUID_BASE | 0x10000)

static bool softib_switch;
module_param_named(use_switch, softib_switch, bool, 0444);
MODULE_PARM_DESC(use_switch, "external_sm: put a switch between the ports even for ndevs=2");

enum softib_sw_counter {
	SOFTIB_SW_RX,
	SOFTIB_SW_FORWARDED,
	SOFTIB_SW_SMP_LOCAL,
	SOFTIB_SW_DROP_DR,		/* bad hop pointer or path port */
	SOFTIB_SW_DROP_NO_ROUTE,	/* no LFT/MFT entry, or a port without link */
	SOFTIB_SW_DROP_PORT_STATE,	/* data on a port that is not ACTIVE */
	SOFTIB_SW_DROP_MALFORMED,
	SOFTIB_SW_NR_COUNTERS
};

static const char * const softib_sw_counter_names[SOFTIB_SW_NR_COUNTERS] = {
	[SOFTIB_SW_RX] = "rx",
	[SOFTIB_SW_FORWARDED] = "forwarded",
	[SOFTIB_SW_SMP_LOCAL] = "smp_local",
	[SOFTIB_SW_DROP_DR] = "drop_dr",
	[SOFTIB_SW_DROP_NO_ROUTE] = "drop_no_route",
	[SOFTIB_SW_DROP_PORT_STATE] = "drop_port_state",
	[SOFTIB_SW_DROP_MALFORMED] = "drop_malformed",
};

/* The switch: static, lives as long as the module. Writers: softib_sma_lock. */
static struct softib_switch {
	bool present;
	unsigned int nports;		/* external ports 1..nports */
	struct softib_sma_port port[SOFTIB_SW_MAX_PORTS + 1];	/* [0]: management */
	u16 pkeys[SOFTIB_SMA_PKEYS];	/* port 0 */
	u8 lft[SOFTIB_SW_LFT_CAP];	/* LID -> port; SOFTIB_SW_NO_PORT: none */
	u16 mft[SOFTIB_SW_MFT_CAP];	/* MLID - 0xc000 -> mask of ports 0..15 */
	u16 lin_top;
	u16 mcast_top;
	u8 life;			/* LifeTimeValue */
	bool state_change;		/* PortStateChange */
	atomic64_t counters[SOFTIB_SW_NR_COUNTERS];
} softib_sw;

static void softib_sw_count(enum softib_sw_counter c)
{
	atomic64_inc(&softib_sw.counters[c]);
}

bool softib_sw_present(void)
{
	return softib_sw.present;
}

/* The in-kernel device at fabric position fab_port. Caller holds RCU. */
static struct softib_dev *softib_sma_dev_at(unsigned int fab_port)
{
	struct softib_dev *sdev;

	list_for_each_entry_rcu(sdev, &softib_devs, list)
		if (!sdev->ndev && sdev->sma.fab_port == fab_port)
			return sdev;
	return NULL;
}

static bool softib_pkt_is_dr(const struct softib_pkt *pkt)
{
	return pkt->dqpn == 0 && pkt->len >= 2 &&
	       pkt->data[1] == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE;
}

/* Out of switch port out to the HCA behind it. */
static void softib_sw_out(unsigned int out, struct softib_pkt *pkt, bool corrupt)
{
	bool smp = pkt->dqpn == 0;
	struct softib_dev *dst;

	if (!out || out > softib_sw.nports || !READ_ONCE(softib_sw.port[out].linked)) {
		softib_sw_count(SOFTIB_SW_DROP_NO_ROUTE);
		return;
	}
	if (!smp && READ_ONCE(softib_sw.port[out].state) != IB_PORT_ACTIVE) {
		softib_sw_count(SOFTIB_SW_DROP_PORT_STATE);
		return;
	}
	dst = softib_sma_dev_at(out);
	if (!dst) {
		softib_sw_count(SOFTIB_SW_DROP_NO_ROUTE);
		return;
	}
	softib_sw_count(SOFTIB_SW_FORWARDED);
	softib_fabric_deliver(dst, pkt, corrupt);
}

static void softib_sw_node_info(unsigned int in, u8 *data)
{
	struct ib_node_info *ni = (struct ib_node_info *)data;

	ni->base_version = 1;
	ni->class_version = 1;
	ni->node_type = RDMA_NODE_IB_SWITCH;
	ni->num_ports = softib_sw.nports;
	ni->sys_guid = cpu_to_be64(SOFTIB_SW_GUID);
	ni->node_guid = cpu_to_be64(SOFTIB_SW_GUID);
	ni->port_guid = cpu_to_be64(SOFTIB_SW_GUID);
	ni->partition_cap = cpu_to_be16(SOFTIB_SMA_PKEYS);
	ni->device_id = cpu_to_be16(0x5ff2);
	ni->revision = cpu_to_be32(1);
	ni->local_port_num = in;
	ni->vendor_id[0] = 0x00;
	ni->vendor_id[1] = 0x02;
	ni->vendor_id[2] = 0xc9;
}

/* SwitchInfo (IBA 14.2.5.4), byte offsets */
static void softib_sw_info_get(u8 *d)
{
	put_unaligned_be16(SOFTIB_SW_LFT_CAP, d + 0);		/* LinearFDBCap */
	put_unaligned_be16(SOFTIB_SW_MFT_CAP, d + 4);		/* MulticastFDBCap */
	put_unaligned_be16(softib_sw.lin_top, d + 6);		/* LinearFDBTop */
	d[9] = 0xff;						/* default mcast ports */
	d[10] = 0xff;
	d[11] = (softib_sw.life & 0x1f) << 3 | (softib_sw.state_change ? 1 << 2 : 0);
	put_unaligned_be16(softib_sw.mcast_top, d + 18);	/* MulticastFDBTop */
}

static void softib_sw_info_set(const u8 *d)
{
	softib_sw.lin_top = min_t(u16, get_unaligned_be16(d + 6), SOFTIB_SW_LFT_CAP - 1);
	softib_sw.life = d[11] >> 3;
	if (d[11] & 1 << 2)	/* write 1 to clear */
		softib_sw.state_change = false;
	softib_sw.mcast_top = min_t(u16, get_unaligned_be16(d + 18),
				    0xc000 + SOFTIB_SW_MFT_CAP - 1);
}

static u16 softib_sw_port_info(unsigned int in, const struct ib_smp *req, struct ib_smp *resp,
			       bool set)
{
	u32 port = be32_to_cpu(req->attr_mod);
	struct ib_port_info *pi = (struct ib_port_info *)resp->data;
	struct softib_sma_port *p;
	u32 changed = 0;
	u16 status = 0;

	if (port > softib_sw.nports)
		return SOFTIB_SMP_BAD_VALUE;
	p = &softib_sw.port[port];
	if (set)
		status = softib_sma_pi_set(p, (const struct ib_port_info *)req->data,
					   port ? NULL : &p->lid, &changed);
	softib_sma_pi_get(p, pi, IB_MTU_4096);
	/* the port the SMP came in on: libibnetdisc explores the others */
	pi->local_port_num = in;
	if (port) {
		pi->lid = 0;
		pi->sm_lid = 0;
	} else {
		pi->cap_mask = cpu_to_be32(IB_PORT_SYS_IMAGE_GUID_SUP);
	}
	return status;
}

/* MulticastForwardingTable: modifier bits 31-28 position, 8-0 block */
static u16 softib_sw_mft(const struct ib_smp *req, struct ib_smp *resp, bool set)
{
	u32 mod = be32_to_cpu(req->attr_mod);
	unsigned int block = mod & 0x1ff, i;
	__be16 *out = (__be16 *)resp->data;
	const __be16 *in = (const __be16 *)req->data;

	if (block >= SOFTIB_SW_MFT_CAP / 32)
		return SOFTIB_SMP_BAD_VALUE;
	if (mod >> 28)		/* ports 16 and up: none here */
		return 0;
	for (i = 0; i < 32; i++) {
		u16 *e = &softib_sw.mft[block * 32 + i];

		if (set)
			WRITE_ONCE(*e, be16_to_cpu(in[i]));
		out[i] = cpu_to_be16(*e);
	}
	return 0;
}

/* One SMP Get or Set for the switch; softib_sma_lock held. */
static u16 softib_sw_attr(unsigned int in, const struct ib_smp *req, struct ib_smp *resp)
{
	bool set = req->method == IB_MGMT_METHOD_SET;
	u32 mod = be32_to_cpu(req->attr_mod);
	unsigned int i;

	lockdep_assert_held(&softib_sma_lock);
	memset(resp->data, 0, sizeof(resp->data));
	switch (req->attr_id) {
	case IB_SMP_ATTR_NODE_DESC:
		if (set)
			return SOFTIB_SMP_BAD_ATTR;
		strscpy((char *)resp->data, "softib switch", sizeof(resp->data));
		return 0;
	case IB_SMP_ATTR_NODE_INFO:
		if (set)
			return SOFTIB_SMP_BAD_ATTR;
		softib_sw_node_info(in, resp->data);
		return 0;
	case IB_SMP_ATTR_SWITCH_INFO:
		if (set)
			softib_sw_info_set(req->data);
		softib_sw_info_get(resp->data);
		return 0;
	case IB_SMP_ATTR_PORT_INFO:
		return softib_sw_port_info(in, req, resp, set);
	case IB_SMP_ATTR_PKEY_TABLE:
		if ((mod & 0xffff) || (mod >> 16) > softib_sw.nports)
			return SOFTIB_SMP_BAD_VALUE;
		for (i = 0; i < SOFTIB_SMA_PKEYS; i++) {
			if (set && !(mod >> 16))
				softib_sw.pkeys[i] = get_unaligned_be16(req->data + 2 * i);
			put_unaligned_be16(softib_sw.pkeys[i], resp->data + 2 * i);
		}
		return 0;
	case IB_SMP_ATTR_SL_TO_VL_TABLE:
		if (set)
			memcpy(softib_sw.port[0].sl2vl, req->data, sizeof(softib_sw.port[0].sl2vl));
		memcpy(resp->data, softib_sw.port[0].sl2vl, sizeof(softib_sw.port[0].sl2vl));
		return 0;
	case IB_SMP_ATTR_VL_ARB_TABLE:
		i = mod >> 16;
		if (i < 1 || i > 4 || (mod & 0xffff) > softib_sw.nports)
			return SOFTIB_SMP_BAD_VALUE;
		if (set)
			memcpy(softib_sw.port[mod & 0xffff].vlarb[i - 1], req->data, 64);
		memcpy(resp->data, softib_sw.port[mod & 0xffff].vlarb[i - 1], 64);
		return 0;
	case IB_SMP_ATTR_LINEAR_FORWARD_TABLE:
		if (mod >= SOFTIB_SW_LFT_CAP / 64)
			return SOFTIB_SMP_BAD_VALUE;
		for (i = 0; i < 64; i++) {
			if (set)
				WRITE_ONCE(softib_sw.lft[mod * 64 + i], req->data[i]);
			resp->data[i] = softib_sw.lft[mod * 64 + i];
		}
		return 0;
	case IB_SMP_ATTR_MCAST_FORWARD_TABLE:
		return softib_sw_mft(req, resp, set);
	default:
		return SOFTIB_SMP_BAD_ATTR;
	}
}

/*
 * An SMP that ends at the switch, arrived on port in. Returns the response
 * (method GetResp), or NULL when there is none (or no memory: dropped).
 */
static struct softib_pkt *softib_sw_smp(unsigned int in, const struct softib_pkt *pkt)
{
	const struct ib_smp *req = (const struct ib_smp *)pkt->data;
	struct softib_pkt *resp;
	struct ib_smp *smp;
	unsigned long flags;
	u16 status;

	if (req->method != IB_MGMT_METHOD_GET && req->method != IB_MGMT_METHOD_SET)
		return NULL;	/* no SM lives on the switch */
	resp = softib_pkt_clone(pkt, GFP_ATOMIC);
	if (!resp)
		return NULL;
	smp = (struct ib_smp *)resp->data;
	if (req->base_version != IB_MGMT_BASE_VERSION || req->class_version != 1) {
		status = 0x0004;
	} else {
		spin_lock_irqsave(&softib_sma_lock, flags);
		status = softib_sw_attr(in, req, smp);
		spin_unlock_irqrestore(&softib_sma_lock, flags);
	}
	softib_sw_count(SOFTIB_SW_SMP_LOCAL);
	pr_debug("switch SMA %s %s 0x%x mod 0x%x port %u: status 0x%x\n",
		 req->mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE ? "DR" : "LR",
		 req->method == IB_MGMT_METHOD_SET ? "Set" : "Get", be16_to_cpu(req->attr_id),
		 be32_to_cpu(req->attr_mod), in, status);
	smp->method = IB_MGMT_METHOD_GET_RESP;
	smp->status = cpu_to_be16(status);
	resp->slid = READ_ONCE(softib_sw.port[0].lid);
	resp->dlid = pkt->slid;
	resp->sqpn = 0;
	resp->dqpn = pkt->sqpn;
	return resp;
}

/* Forward by DLID, from port in (0: the switch itself). */
static void softib_sw_forward(unsigned int in, struct softib_pkt *pkt, bool corrupt);

/*
 * A directed-route SMP at the switch (IBA 14.2.2.2 and 14.2.2.4). On the
 * wire hop_ptr is the hop the SMP is going to (outbound) or coming from
 * (returning); the switch records and advances it.
 */
static void softib_sw_dr(unsigned int in, struct softib_pkt *pkt)
{
	struct ib_smp *smp = (struct ib_smp *)pkt->data;
	u8 hop = smp->hop_ptr, cnt = smp->hop_cnt;
	struct softib_pkt *resp;

	if (pkt->len < sizeof(*smp) || cnt >= IB_SMP_MAX_PATH_HOPS) {
		softib_sw_count(SOFTIB_SW_DROP_MALFORMED);
		return;
	}
	if (ib_get_smp_direction(smp)) {
		/* returning: on to the previous hop */
		if (hop < 2 || hop > cnt) {
			softib_sw_count(SOFTIB_SW_DROP_DR);
			return;
		}
		smp->hop_ptr = --hop;
		softib_sw_out(smp->return_path[hop], pkt, false);
		return;
	}
	if (!hop || hop > cnt + 1) {
		softib_sw_count(SOFTIB_SW_DROP_DR);
		return;
	}
	if (hop <= cnt) {
		smp->return_path[hop] = in;
		smp->hop_ptr = ++hop;
		if (hop <= cnt) {
			softib_sw_out(smp->initial_path[hop], pkt, false);
			return;
		}
		/* end of the directed part: a LID-routed tail is not supported */
		if (be16_to_cpu(smp->dr_dlid) != 0xffff) {
			softib_sw_count(SOFTIB_SW_DROP_DR);
			return;
		}
	}
	resp = softib_sw_smp(in, pkt);
	if (!resp)
		return;
	smp = (struct ib_smp *)resp->data;
	smp->status |= IB_SMP_DIRECTION;
	resp->dlid = 0xffff;
	if (!cnt) {
		softib_sw_count(SOFTIB_SW_DROP_DR);
	} else {
		smp->hop_ptr = cnt;
		softib_sw_out(smp->return_path[cnt], resp, false);
	}
	softib_pkt_free(resp);
}

static void softib_sw_forward(unsigned int in, struct softib_pkt *pkt, bool corrupt)
{
	u16 dlid = pkt->dlid, mask;
	unsigned int out;

	if (softib_lid_is_mcast(dlid)) {
		if (dlid - 0xc000 >= SOFTIB_SW_MFT_CAP) {
			softib_sw_count(SOFTIB_SW_DROP_NO_ROUTE);
			return;
		}
		mask = READ_ONCE(softib_sw.mft[dlid - 0xc000]);
		for (out = 1; out <= softib_sw.nports; out++)
			if (out != in && (mask & BIT(out)))
				softib_sw_out(out, pkt, corrupt);
		return;
	}
	out = dlid < SOFTIB_SW_LFT_CAP ? READ_ONCE(softib_sw.lft[dlid]) : SOFTIB_SW_NO_PORT;
	if (out == SOFTIB_SW_NO_PORT || !out) {
		softib_sw_count(SOFTIB_SW_DROP_NO_ROUTE);
		return;
	}
	softib_sw_out(out, pkt, corrupt);
}

/* A packet that arrived at switch port in. */
static void softib_sw_rx(unsigned int in, struct softib_pkt *pkt, bool corrupt)
{
	u16 sw_lid = READ_ONCE(softib_sw.port[0].lid);
	struct softib_pkt *resp;

	softib_sw_count(SOFTIB_SW_RX);
	if (softib_pkt_is_dr(pkt)) {
		if (corrupt)
			softib_sw_count(SOFTIB_SW_DROP_MALFORMED);	/* ICRC */
		else
			softib_sw_dr(in, pkt);
		return;
	}
	if (pkt->dlid == 0xffff || (sw_lid && pkt->dlid == sw_lid)) {
		/* for the switch itself: only its SMA listens */
		if (corrupt || pkt->dqpn != 0 || pkt->len < sizeof(struct ib_smp)) {
			softib_sw_count(SOFTIB_SW_DROP_MALFORMED);
			return;
		}
		resp = softib_sw_smp(in, pkt);
		if (resp) {
			softib_sw_forward(0, resp, false);
			softib_pkt_free(resp);
		}
		return;
	}
	if (pkt->dqpn != 0 && READ_ONCE(softib_sw.port[in].state) != IB_PORT_ACTIVE) {
		softib_sw_count(SOFTIB_SW_DROP_PORT_STATE);
		return;
	}
	softib_sw_forward(in, pkt, corrupt);
}

/*
 * Route a packet sdev (an in-kernel port in external-SM mode) sent: QP0
 * from INIT on, anything else only from an ACTIVE port; to the port at the
 * other end of the link (back to back) or into the switch.
 */
void softib_sma_route(struct softib_dev *sdev, struct softib_pkt *pkt, bool corrupt)
{
	bool mcast = softib_lid_is_mcast(pkt->dlid);
	u16 lid = softib_dev_lid(sdev);
	bool smp = pkt->dqpn == 0;
	struct softib_dev *peer;

	if (!READ_ONCE(sdev->sma.linked) || (!smp && !softib_dev_active(sdev))) {
		softib_count(sdev, SOFTIB_CNT_DROP_LINK_DOWN);
		return;
	}
	/* the HCA loops back what is for its own QPs */
	if (mcast) {
		softib_fabric_deliver(sdev, pkt, corrupt);
	} else if (lid && pkt->dlid == lid && !softib_pkt_is_dr(pkt)) {
		softib_fabric_deliver(sdev, pkt, corrupt);
		return;
	}

	if (softib_sw.present) {
		softib_sw_rx(sdev->sma.fab_port, pkt, corrupt);
		return;
	}

	peer = softib_sma_dev_at(sdev->sma.fab_port == 1 ? 2 : 1);
	if (!peer) {
		softib_count(sdev, SOFTIB_CNT_DROP_NO_ROUTE);
		return;
	}
	softib_fabric_deliver(peer, pkt, corrupt);
}

static const char *softib_sw_state_name(u8 state)
{
	static const char * const names[] = { "NOP", "DOWN", "INIT", "ARMED", "ACTIVE" };

	return state < ARRAY_SIZE(names) ? names[state] : "?";
}

void softib_sw_link_event(unsigned int fab_port, bool up)
{
	struct softib_sma_port *p;

	lockdep_assert_held(&softib_sma_lock);
	if (!softib_sw.present || !fab_port || fab_port > softib_sw.nports)
		return;
	p = &softib_sw.port[fab_port];
	WRITE_ONCE(p->linked, up);
	WRITE_ONCE(p->state, up ? IB_PORT_INIT : IB_PORT_DOWN);
	/* the SM's light sweep polls this and then sweeps the fabric */
	softib_sw.state_change = true;
}

static int softib_sw_show(struct seq_file *s, void *unused)
{
	unsigned int i;

	seq_printf(s, "guid 0x%016llx ports %u lid 0x%x sm_lid 0x%x lin_top 0x%x mcast_top 0x%x\n",
		   SOFTIB_SW_GUID, softib_sw.nports, READ_ONCE(softib_sw.port[0].lid),
		   READ_ONCE(softib_sw.port[0].sm_lid), READ_ONCE(softib_sw.lin_top),
		   READ_ONCE(softib_sw.mcast_top));
	for (i = 1; i <= softib_sw.nports; i++)
		seq_printf(s, "port %u %s %s mtu %u\n", i,
			   softib_sw_state_name(READ_ONCE(softib_sw.port[i].state)),
			   READ_ONCE(softib_sw.port[i].linked) ? "LinkUp" : "Polling",
			   ib_mtu_enum_to_int(READ_ONCE(softib_sw.port[i].neighbor_mtu)));
	for (i = 1; i < SOFTIB_SW_LFT_CAP && i <= READ_ONCE(softib_sw.lin_top); i++)
		if (READ_ONCE(softib_sw.lft[i]) != SOFTIB_SW_NO_PORT)
			seq_printf(s, "lft 0x%x %u\n", i, READ_ONCE(softib_sw.lft[i]));
	for (i = 0; i < SOFTIB_SW_MFT_CAP; i++)
		if (READ_ONCE(softib_sw.mft[i]))
			seq_printf(s, "mft 0x%x 0x%04x\n", 0xc000 + i, READ_ONCE(softib_sw.mft[i]));
	for (i = 0; i < SOFTIB_SW_NR_COUNTERS; i++)
		seq_printf(s, "%s %lld\n", softib_sw_counter_names[i],
			   (long long)atomic64_read(&softib_sw.counters[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(softib_sw);

int softib_sw_init(unsigned int ndevs, struct dentry *root)
{
	unsigned int i;

	if (ndevs <= 2 && !softib_switch)
		return 0;
	if (ndevs > SOFTIB_SW_MAX_PORTS) {
		pr_err("external_sm: at most %u devices on the switch\n", SOFTIB_SW_MAX_PORTS);
		return -EINVAL;
	}
	softib_sw.nports = max(ndevs, 1U);
	softib_sma_port_defaults(&softib_sw.port[0], true, 0);
	for (i = 1; i <= softib_sw.nports; i++)
		softib_sma_port_defaults(&softib_sw.port[i], i <= ndevs, i);
	softib_sw.pkeys[0] = 0xffff;
	memset(softib_sw.lft, SOFTIB_SW_NO_PORT, sizeof(softib_sw.lft));
	softib_sw.present = true;
	debugfs_create_file("switch", 0400, root, NULL, &softib_sw_fops);
	return 0;
}
