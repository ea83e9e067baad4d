// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the subnet management agent of an HCA port in external-SM mode.
 *
 * ib_mad hands every SMP that ends at a port to process_mad (and drops
 * directed-route SMPs for a device without one), so the SMA lives there:
 * Get/Set of NodeInfo, NodeDescription, PortInfo, P_KeyTable, GUIDInfo,
 * SLtoVLMappingTable and VLArbitrationTable; SMInfo and everything that is
 * not a Get or Set goes on to the umad agents (OpenSM). A change raises the
 * event a real HCA raises. What the wire sends is checked and answered with
 * an SMP status, never WARNed on.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/rculist.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_pack.h>
#include <rdma/ib_smi.h>
#include <rdma/ib_verbs.h>

#include "softib.h"

bool softib_external_sm;
module_param_named(external_sm, softib_external_sm, bool, 0444);
MODULE_PARM_DESC(external_sm,
		 "ports start unconfigured (INIT, LID 0) for an external SM such as OpenSM; the embedded SA is off");

DEFINE_SPINLOCK(softib_sma_lock);	/* writers of all SMA state, see softib_sma.h */

static unsigned int softib_sma_ndevs;	/* in-kernel devices at module load */

void softib_sma_port_defaults(struct softib_sma_port *p, bool linked, u8 fab_port)
{
	memset(p, 0, sizeof(*p));
	p->gid_prefix = SOFTIB_SUBNET_PREFIX;
	p->state = linked ? IB_PORT_INIT : IB_PORT_DOWN;
	p->neighbor_mtu = IB_MTU_4096;
	p->op_vls = 1;
	p->subnet_timeout = 18;
	p->width_enabled = 3;	/* 1x, 4x */
	p->speed_enabled = 7;	/* SDR, DDR, QDR */
	p->linked = linked;
	p->fab_port = fab_port;
	memset(p->sl2vl, 0, sizeof(p->sl2vl));
}

void softib_sma_pi_get(const struct softib_sma_port *p, struct ib_port_info *pi, u8 mtu_cap)
{
	memset(pi, 0, sizeof(*pi));
	pi->gid_prefix = cpu_to_be64(p->gid_prefix);
	pi->lid = cpu_to_be16(p->lid);
	pi->sm_lid = cpu_to_be16(p->sm_lid);
	pi->mkey_lease_period = cpu_to_be16(p->mkey_lease);
	pi->link_width_enabled = p->width_enabled;
	pi->link_width_supported = 3;
	pi->link_width_active = 2;			/* 4x */
	pi->linkspeed_portstate = 7 << 4 | (p->state & 0xf);
	pi->portphysstate_linkdown = (p->linked ? IB_PORT_PHYS_STATE_LINK_UP :
				      IB_PORT_PHYS_STATE_POLLING) << 4 | IB_PORT_PHYS_STATE_POLLING;
	pi->mkeyprot_resv_lmc = p->lmc & 7;
	pi->linkspeedactive_enabled = 4 << 4 | (p->speed_enabled & 0xf);	/* QDR */
	pi->neighbormtu_mastersmsl = (p->neighbor_mtu & 0xf) << 4 | (p->sm_sl & 0xf);
	pi->vlcap_inittype = 1 << 4;			/* VL0 only */
	pi->vl_high_limit = p->vl_high_limit;
	pi->vl_arb_high_cap = 8;
	pi->vl_arb_low_cap = 8;
	pi->inittypereply_mtucap = mtu_cap & 0xf;
	pi->vlstallcnt_hoqlife = p->hoq_life & 0x1f;
	pi->operationalvl_pei_peo_fpi_fpo = (p->op_vls & 0xf) << 4;
	pi->guid_cap = 1;
	pi->clientrereg_resv_subnetto = p->subnet_timeout & 0x1f;
	pi->resv_resptimevalue = 8;
}

/* The port states a Set may ask for from the current one. */
static bool softib_sma_state_ok(u8 cur, u8 want)
{
	switch (want) {
	case IB_PORT_INIT:
		return cur == IB_PORT_INIT;
	case IB_PORT_ARMED:
		return cur == IB_PORT_INIT || cur == IB_PORT_ARMED;
	case IB_PORT_ACTIVE:
		return cur == IB_PORT_ARMED || cur == IB_PORT_ACTIVE;
	default:
		return false;
	}
}

/*
 * Apply a PortInfo Set to p (caller holds softib_sma_lock). lid: where the
 * LID lives (NULL: a switch external port, which has none). A rejected Set
 * changes nothing. Returns an SMP status.
 */
u16 softib_sma_pi_set(struct softib_sma_port *p, const struct ib_port_info *pi, u16 *lid,
		      u32 *changed)
{
	u8 want = pi->linkspeed_portstate & 0xf;
	u8 mtu = pi->neighbormtu_mastersmsl >> 4;
	u8 vls = pi->operationalvl_pei_peo_fpi_fpo >> 4;
	u16 new_lid = be16_to_cpu(pi->lid);
	u8 new = p->state;
	u16 sm_lid;
	u8 sm_sl;

	lockdep_assert_held(&softib_sma_lock);

	if (want == IB_PORT_DOWN) {
		/* the link retrains and comes back in INIT */
		new = p->linked ? IB_PORT_INIT : IB_PORT_DOWN;
	} else if (want) {
		if (!p->linked || !softib_sma_state_ok(p->state, want))
			return SOFTIB_SMP_BAD_VALUE;
		new = want;
	}
	if (mtu && (mtu < IB_MTU_256 || mtu > IB_MTU_4096))
		return SOFTIB_SMP_BAD_VALUE;
	if (vls > 1)
		return SOFTIB_SMP_BAD_VALUE;
	if (lid && (!new_lid || new_lid >= 0xc000))
		return SOFTIB_SMP_BAD_VALUE;

	if (lid && *lid != new_lid) {
		WRITE_ONCE(*lid, new_lid);
		*changed |= SOFTIB_SMA_CH_LID;
	}
	if (lid) {
		sm_lid = be16_to_cpu(pi->sm_lid);
		sm_sl = pi->neighbormtu_mastersmsl & 0xf;
		if (sm_lid != p->sm_lid || sm_sl != p->sm_sl)
			*changed |= SOFTIB_SMA_CH_SM;
		WRITE_ONCE(p->sm_lid, sm_lid);
		WRITE_ONCE(p->sm_sl, sm_sl);
		WRITE_ONCE(p->lmc, pi->mkeyprot_resv_lmc & 7);
		if (be64_to_cpu(pi->gid_prefix) != p->gid_prefix)
			*changed |= SOFTIB_SMA_CH_GID;
		WRITE_ONCE(p->gid_prefix, be64_to_cpu(pi->gid_prefix));
		WRITE_ONCE(p->subnet_timeout, pi->clientrereg_resv_subnetto & 0x1f);
		WRITE_ONCE(p->mkey_lease, be16_to_cpu(pi->mkey_lease_period));
		if (pi->clientrereg_resv_subnetto & 0x80)
			*changed |= SOFTIB_SMA_CH_REREG;
	}
	if (mtu)
		WRITE_ONCE(p->neighbor_mtu, mtu);
	if (vls)
		WRITE_ONCE(p->op_vls, vls);
	if (pi->link_width_enabled)
		p->width_enabled = pi->link_width_enabled == 0xff ? 3 : pi->link_width_enabled;
	if (pi->linkspeedactive_enabled & 0xf)
		p->speed_enabled = (pi->linkspeedactive_enabled & 0xf) == 0xf ? 7 :
				   pi->linkspeedactive_enabled & 0xf;
	p->hoq_life = pi->vlstallcnt_hoqlife & 0x1f;
	p->vl_high_limit = pi->vl_high_limit;

	if (new != p->state) {
		if (new == IB_PORT_ACTIVE)
			*changed |= SOFTIB_SMA_CH_UP;
		else if (p->state == IB_PORT_ACTIVE)
			*changed |= SOFTIB_SMA_CH_DOWN;
		WRITE_ONCE(p->state, new);
	}
	return 0;
}

static void softib_sma_node_info(struct softib_dev *sdev, u8 *data)
{
	struct ib_node_info *ni = (struct ib_node_info *)data;

	ni->base_version = 1;
	ni->class_version = 1;
	ni->node_type = RDMA_NODE_IB_CA;
	ni->num_ports = 1;
	ni->sys_guid = cpu_to_be64(sdev->guid);
	ni->node_guid = cpu_to_be64(sdev->guid);
	ni->port_guid = cpu_to_be64(sdev->guid);
	ni->partition_cap = cpu_to_be16(SOFTIB_PKEY_TBL_LEN);
	ni->device_id = cpu_to_be16(0x5ff1);
	ni->revision = cpu_to_be32(1);
	ni->local_port_num = 1;
	ni->vendor_id[0] = 0x00;
	ni->vendor_id[1] = 0x02;
	ni->vendor_id[2] = 0xc9;
}

/* PortInfo of the HCA port: the common fields plus LID and capabilities. */
static void softib_sma_hca_pi_get(struct softib_dev *sdev, u8 *data)
{
	struct ib_port_info *pi = (struct ib_port_info *)data;
	u64 bad_pkey, bad_qkey;

	softib_sma_pi_get(&sdev->sma, pi, READ_ONCE(sdev->mtu));
	pi->lid = cpu_to_be16(softib_dev_lid(sdev));
	pi->cap_mask = cpu_to_be32(READ_ONCE(sdev->port_cap_flags));
	pi->local_port_num = 1;
	bad_pkey = atomic64_read(&sdev->counters[SOFTIB_CNT_DROP_BAD_PKEY]);
	bad_qkey = atomic64_read(&sdev->counters[SOFTIB_CNT_DROP_BAD_QKEY]);
	pi->pkey_violations = cpu_to_be16(min_t(u64, 0xffff, bad_pkey));
	pi->qkey_violations = cpu_to_be16(min_t(u64, 0xffff, bad_qkey));
}

static u16 softib_sma_pkey_set(struct softib_dev *sdev, const u8 *data, u32 *changed)
{
	const __be16 *tbl = (const __be16 *)data;
	int i;

	for (i = 0; i < SOFTIB_PKEY_TBL_LEN; i++) {
		u16 pkey = be16_to_cpu(tbl[i]);

		if (pkey == sdev->pkeys[i])
			continue;
		WRITE_ONCE(sdev->pkeys[i], pkey);
		*changed |= SOFTIB_SMA_CH_PKEY;
	}
	return 0;
}

/* One SMP Get or Set for the HCA port; softib_sma_lock held. */
static u16 softib_sma_hca_attr(struct softib_dev *sdev, const struct ib_smp *in,
			       struct ib_smp *out, u32 *changed)
{
	bool set = in->method == IB_MGMT_METHOD_SET;
	u32 mod = be32_to_cpu(in->attr_mod);
	struct softib_sma_port *p = &sdev->sma;
	u16 status = 0;
	int i;

	memset(out->data, 0, sizeof(out->data));
	switch (in->attr_id) {
	case IB_SMP_ATTR_NODE_DESC:
		if (set)
			return SOFTIB_SMP_BAD_ATTR;
		snprintf((char *)out->data, sizeof(out->data), "softib %s",
			 dev_name(&sdev->ibdev.dev));
		return 0;
	case IB_SMP_ATTR_NODE_INFO:
		if (set)
			return SOFTIB_SMP_BAD_ATTR;
		softib_sma_node_info(sdev, out->data);
		return 0;
	case IB_SMP_ATTR_PORT_INFO:
		if (mod > 1)
			return SOFTIB_SMP_BAD_VALUE;
		if (set) {
			status = softib_sma_pi_set(p, (const struct ib_port_info *)in->data,
						   &sdev->lid, changed);
			if (!status)
				WRITE_ONCE(sdev->state, p->state == IB_PORT_ACTIVE ?
					   SOFTIB_PORT_ACTIVE : SOFTIB_PORT_DOWN);
		}
		softib_sma_hca_pi_get(sdev, out->data);
		return status;
	case IB_SMP_ATTR_PKEY_TABLE:
		if (mod)
			return SOFTIB_SMP_BAD_VALUE;
		if (set)
			softib_sma_pkey_set(sdev, in->data, changed);
		for (i = 0; i < SOFTIB_PKEY_TBL_LEN; i++)
			((__be16 *)out->data)[i] = cpu_to_be16(READ_ONCE(sdev->pkeys[i]));
		return 0;
	case IB_SMP_ATTR_GUID_INFO:
		if (mod)
			return SOFTIB_SMP_BAD_VALUE;
		((__be64 *)out->data)[0] = cpu_to_be64(sdev->guid);
		return 0;
	case IB_SMP_ATTR_SL_TO_VL_TABLE:
		if (set)
			memcpy(p->sl2vl, in->data, sizeof(p->sl2vl));
		memcpy(out->data, p->sl2vl, sizeof(p->sl2vl));
		return 0;
	case IB_SMP_ATTR_VL_ARB_TABLE:
		i = mod >> 16;
		if (i < 1 || i > 4)
			return SOFTIB_SMP_BAD_VALUE;
		if (set)
			memcpy(p->vlarb[i - 1], in->data, sizeof(p->vlarb[0]));
		memcpy(out->data, p->vlarb[i - 1], sizeof(p->vlarb[0]));
		return 0;
	default:
		return SOFTIB_SMP_BAD_ATTR;
	}
}

static void softib_sma_events(struct softib_dev *sdev, u32 changed)
{
	if (changed & SOFTIB_SMA_CH_LID)
		softib_dispatch_port_event(sdev, IB_EVENT_LID_CHANGE);
	if (changed & SOFTIB_SMA_CH_SM)
		softib_dispatch_port_event(sdev, IB_EVENT_SM_CHANGE);
	if (changed & SOFTIB_SMA_CH_GID)
		softib_dispatch_port_event(sdev, IB_EVENT_GID_CHANGE);
	if (changed & SOFTIB_SMA_CH_PKEY)
		softib_dispatch_port_event(sdev, IB_EVENT_PKEY_CHANGE);
	if (changed & SOFTIB_SMA_CH_UP)
		softib_dispatch_port_event(sdev, IB_EVENT_PORT_ACTIVE);
	if (changed & SOFTIB_SMA_CH_DOWN)
		softib_dispatch_port_event(sdev, IB_EVENT_PORT_ERR);
	if (changed & SOFTIB_SMA_CH_REREG)
		softib_dispatch_port_event(sdev, IB_EVENT_CLIENT_REREGISTER);
}

/*
 * ops.process_mad. Runs for MADs received on QP0/QP1 and for directed-route
 * SMPs the port sends to itself, possibly in atomic context. SUCCESS alone
 * passes the MAD on to the agents (OpenSM for SMInfo and responses).
 */
static int softib_sma_process_mad(struct ib_device *ibdev, int mad_flags, u32 port_num,
				  const struct ib_wc *in_wc, const struct ib_grh *in_grh,
				  const struct ib_mad *in_mad, struct ib_mad *out_mad,
				  size_t *out_mad_size, u16 *out_mad_pkey_index)
{
	struct softib_dev *sdev = to_sdev(ibdev);
	const struct ib_smp *in = (const struct ib_smp *)in_mad;
	struct ib_smp *out = (struct ib_smp *)out_mad;
	u32 changed = 0;
	unsigned long flags;
	u16 status;

	if (in->mgmt_class != IB_MGMT_CLASS_SUBN_LID_ROUTED &&
	    in->mgmt_class != IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE)
		return IB_MAD_RESULT_SUCCESS;
	if (in->method != IB_MGMT_METHOD_GET && in->method != IB_MGMT_METHOD_SET)
		return IB_MAD_RESULT_SUCCESS;
	if (in->attr_id == IB_SMP_ATTR_SM_INFO)
		return IB_MAD_RESULT_SUCCESS;
	if (!sdev->sma.fab_port || *out_mad_size < sizeof(*out))
		return IB_MAD_RESULT_FAILURE;

	memcpy(out, in, sizeof(*out));
	if (in->base_version != IB_MGMT_BASE_VERSION || in->class_version != 1) {
		status = 0x0004;	/* bad version */
	} else {
		spin_lock_irqsave(&softib_sma_lock, flags);
		status = softib_sma_hca_attr(sdev, in, out, &changed);
		spin_unlock_irqrestore(&softib_sma_lock, flags);
	}
	ibdev_dbg(ibdev, "SMA %s %s 0x%x mod 0x%x hop %u/%u: status 0x%x\n",
		  in->mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE ? "DR" : "LR",
		  in->method == IB_MGMT_METHOD_SET ? "Set" : "Get", be16_to_cpu(in->attr_id),
		  be32_to_cpu(in->attr_mod), in->hop_ptr, in->hop_cnt, status);

	out->method = IB_MGMT_METHOD_GET_RESP;
	out->status = cpu_to_be16(status);
	if (in->mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE)
		out->status |= IB_SMP_DIRECTION;
	*out_mad_size = sizeof(*out);

	softib_sma_events(sdev, changed);
	return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
}

static const struct ib_device_ops softib_sma_ops = {
	.process_mad = softib_sma_process_mad,
};

void softib_sma_dev_init(struct softib_dev *sdev, u16 fab_port)
{
	bool linked;

	if (!softib_sma_enabled())
		return;
	if (sdev->ndev) {
		/* linked once softib_eth_attach() sees the lower carrier */
		softib_sma_port_defaults(&sdev->sma, false, SOFTIB_SMA_FAB_ETH);
	} else {
		if (!fab_port || fab_port > softib_sma_ndevs)
			return;
		linked = softib_sw_present() || (softib_sma_ndevs == 2 && fab_port <= 2);
		softib_sma_port_defaults(&sdev->sma, linked, fab_port);
	}
	sdev->lid = 0;
	sdev->state = SOFTIB_PORT_DOWN;
	ib_set_device_ops(&sdev->ibdev, &softib_sma_ops);
}

void softib_sma_query_port(struct softib_dev *sdev, struct ib_port_attr *attr)
{
	const struct softib_sma_port *p = &sdev->sma;

	if (!p->fab_port)
		return;
	attr->state = READ_ONCE(p->state);
	attr->phys_state = READ_ONCE(p->linked) ? IB_PORT_PHYS_STATE_LINK_UP :
						  IB_PORT_PHYS_STATE_POLLING;
	attr->port_cap_flags = READ_ONCE(sdev->port_cap_flags);
	attr->lid = softib_dev_lid(sdev);
	attr->sm_lid = READ_ONCE(p->sm_lid);
	attr->sm_sl = READ_ONCE(p->sm_sl);
	attr->lmc = READ_ONCE(p->lmc);
	attr->subnet_timeout = READ_ONCE(p->subnet_timeout);
	attr->subnet_prefix = READ_ONCE(p->gid_prefix);
}

/*
 * QP0 receive in external-SM mode: open from INIT on. A directed-route SMP
 * or one for the permissive LID is for whoever is at the end of the link; a
 * LID-routed one must carry this port's (assigned) LID.
 */
void softib_sma_rx_smp(struct softib_dev *sdev, const struct softib_pkt *pkt)
{
	u16 lid = softib_dev_lid(sdev);
	struct softib_qp *qp;
	bool dr;

	if (!READ_ONCE(sdev->sma.linked)) {
		softib_count(sdev, SOFTIB_CNT_DROP_LINK_DOWN);
		return;
	}
	if (pkt->opcode != IB_OPCODE_UD_SEND_ONLY || pkt->len < 2 ||
	    pkt->len > sizeof(struct ib_smp)) {
		softib_count(sdev, SOFTIB_CNT_DROP_MALFORMED);
		return;
	}
	dr = pkt->data[1] == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE;
	if (!dr && pkt->dlid != 0xffff && (!lid || pkt->dlid != lid)) {
		softib_count(sdev, SOFTIB_CNT_DROP_NO_ROUTE);
		return;
	}
	qp = softib_qp_find(sdev, 0);
	if (!qp) {
		softib_count(sdev, SOFTIB_CNT_DROP_NO_QP);
		return;
	}
	softib_qp_rx(sdev, qp, pkt);
}

/*
 * debugfs "state" in external-SM mode: the physical link. Down: the port
 * goes DOWN; up: it comes back in INIT with its LID and waits for the SM.
 */
bool softib_sma_link_event(struct softib_dev *sdev, bool up)
{
	struct softib_sma_port *p = &sdev->sma;
	unsigned long flags;
	bool was_active;

	if (!p->fab_port)
		return false;
	spin_lock_irqsave(&softib_sma_lock, flags);
	/* the lower netdev's other events (NETDEV_CHANGE) are no retraining */
	if (sdev->ndev && p->linked == up) {
		spin_unlock_irqrestore(&softib_sma_lock, flags);
		return true;
	}
	was_active = p->state == IB_PORT_ACTIVE;
	WRITE_ONCE(p->linked, up);
	WRITE_ONCE(p->state, up ? IB_PORT_INIT : IB_PORT_DOWN);
	WRITE_ONCE(sdev->state, SOFTIB_PORT_DOWN);
	softib_sw_link_event(p->fab_port, up);
	spin_unlock_irqrestore(&softib_sma_lock, flags);
	if (was_active)
		softib_dispatch_port_event(sdev, IB_EVENT_PORT_ERR);
	return true;
}

bool softib_sma_eth_tx_ok(const struct softib_dev *sdev, const struct softib_pkt *pkt)
{
	return sdev->sma.fab_port == SOFTIB_SMA_FAB_ETH && pkt->dqpn == 0 &&
	       READ_ONCE(sdev->sma.linked);
}

int softib_sma_init(unsigned int ndevs)
{
	softib_sma_ndevs = ndevs;
	if (!softib_sma_enabled())
		return 0;
	return softib_sw_init(ndevs, softib_debugfs_root);
}

void softib_sma_exit(void)
{
}
