// SPDX-License-Identifier: GPL-2.0
/*
 * softib: device, port, P_Key/GID table, PD, MR and AH verbs, and the
 * ib_device_ops table. QPs are in softib_qp.c, CQs in softib_cq.c.
 */
#include <linux/slab.h>
#include <linux/string.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>

#include "softib.h"
#include "softib_rn.h"
#include "softib_sa.h"

/*
 * Receive SGEs a WQE may have (QP and SRQ). An HCA with fewer than IPoIB
 * CM's 16 (64 KiB in pages) cannot do connected mode; drivers refuse it.
 */
static unsigned int softib_recv_sge = SOFTIB_MAX_RECV_SGE;
module_param_named(recv_sge, softib_recv_sge, uint, 0444);
MODULE_PARM_DESC(recv_sge, "Receive SGEs per WQE offered (1-16, default 16)");

unsigned int softib_max_recv_sge(void)
{
	return clamp_t(unsigned int, softib_recv_sge, 1, SOFTIB_MAX_RECV_SGE);
}

static int softib_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
			       struct ib_udata *udata)
{
	struct softib_dev *sdev = to_sdev(ibdev);

	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	attr->fw_ver = 1;
	attr->sys_image_guid = cpu_to_be64(sdev->guid);
	attr->max_mr_size = U64_MAX;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = 0x0002c9;
	attr->vendor_part_id = 0x5ff1;
	attr->hw_ver = 1;
	attr->max_qp = SOFTIB_MAX_QP;
	attr->max_qp_wr = SOFTIB_MAX_QP_WR;
	attr->device_cap_flags = IB_DEVICE_PORT_ACTIVE_EVENT | IB_DEVICE_SYS_IMAGE_GUID;
	attr->kernel_cap_flags = IBK_LOCAL_DMA_LKEY | IBK_ALLOW_USER_UNREG;
	if (sdev->ud_csum)
		attr->device_cap_flags |= IB_DEVICE_UD_IP_CSUM;
	if (sdev->ud_tso)
		attr->kernel_cap_flags |= IBK_UD_TSO;
	attr->max_send_sge = SOFTIB_MAX_SEND_SGE;
	attr->max_recv_sge = softib_max_recv_sge();
	attr->max_sge_rd = 1;
	attr->max_cq = SOFTIB_MAX_QP * 2;
	attr->max_cqe = SOFTIB_MAX_CQE;
	attr->max_mr = SOFTIB_MAX_QP;
	attr->max_pd = SOFTIB_MAX_QP;
	attr->max_ah = 65536;
	attr->max_pkeys = SOFTIB_PKEY_TBL_LEN;
	attr->max_mcast_grp = SOFTIB_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = SOFTIB_MAX_MCAST_ATT;
	attr->max_total_mcast_qp_attach = SOFTIB_MAX_MCAST_GRP * SOFTIB_MAX_MCAST_ATT;
	attr->local_ca_ack_delay = 15;
	/* RC: IPoIB CM asks 4 responder resources; ib_cm carries them to RTR */
	attr->max_qp_rd_atom = 16;
	attr->max_qp_init_rd_atom = 16;
	attr->max_res_rd_atom = SOFTIB_MAX_QP * 16;
	if (softib_srq_enabled) {
		attr->max_srq = SOFTIB_MAX_QP;
		attr->max_srq_wr = SOFTIB_MAX_QP_WR;
		attr->max_srq_sge = softib_max_recv_sge();
	}
	return 0;
}

/* The port verbs: the core has checked @port against phys_port_cnt. */
static int softib_query_port(struct ib_device *ibdev, u32 port, struct ib_port_attr *attr)
{
	struct softib_dev *sdev = softib_port(to_sdev(ibdev), port);
	u16 lid = softib_dev_lid(sdev);

	/* __ib_query_port() zeroed *attr */
	attr->state = (enum ib_port_state)READ_ONCE(sdev->state);
	attr->phys_state = attr->state == IB_PORT_DOWN ? IB_PORT_PHYS_STATE_POLLING :
			   IB_PORT_PHYS_STATE_LINK_UP;
	attr->max_mtu = READ_ONCE(sdev->mtu);
	attr->active_mtu = attr->max_mtu;
	attr->gid_tbl_len = softib_gid_tbl_len();
	attr->port_cap_flags = READ_ONCE(sdev->port_cap_flags);
	if (lid == softib_sm_lid())
		attr->port_cap_flags |= IB_PORT_SM;
	attr->max_msg_sz = 0x80000000;
	attr->bad_pkey_cntr = atomic64_read(&sdev->counters[SOFTIB_CNT_DROP_BAD_PKEY]);
	attr->qkey_viol_cntr = atomic64_read(&sdev->counters[SOFTIB_CNT_DROP_BAD_QKEY]);
	attr->pkey_tbl_len = SOFTIB_PKEY_TBL_LEN;
	attr->lid = lid;
	attr->sm_lid = softib_sm_lid();
	attr->lmc = 0;
	attr->max_vl_num = 1;
	attr->sm_sl = softib_sa_sl();
	attr->subnet_timeout = 18;
	attr->active_width = IB_WIDTH_4X;
	attr->active_speed = IB_SPEED_QDR;
	attr->subnet_prefix = softib_gid_prefix(sdev);
	softib_sma_query_port(sdev, attr);	/* external_sm: what the SM set */
	return 0;
}

static int softib_modify_port(struct ib_device *ibdev, u32 port, int mask,
			      struct ib_port_modify *props)
{
	struct softib_dev *sdev = softib_port(to_sdev(ibdev), port);
	u32 caps;

	if (mask & ~(IB_PORT_RESET_QKEY_CNTR | IB_PORT_INIT_TYPE))
		return -EOPNOTSUPP;

	mutex_lock(&sdev->cfg_lock);
	caps = sdev->port_cap_flags;
	caps |= props->set_port_cap_mask;
	caps &= ~props->clr_port_cap_mask;
	WRITE_ONCE(sdev->port_cap_flags, caps);
	mutex_unlock(&sdev->cfg_lock);
	return 0;
}

static int softib_get_port_immutable(struct ib_device *ibdev, u32 port,
				     struct ib_port_immutable *immutable)
{
	immutable->pkey_tbl_len = SOFTIB_PKEY_TBL_LEN;
	immutable->gid_tbl_len = softib_gid_tbl_len();
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_IB;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer softib_get_link_layer(struct ib_device *ibdev, u32 port)
{
	return IB_LINK_LAYER_INFINIBAND;
}

static int softib_query_gid(struct ib_device *ibdev, u32 port, int index, union ib_gid *gid)
{
	struct softib_dev *sdev = softib_port(to_sdev(ibdev), port);

	if (index < 0 || index >= softib_gid_tbl_len())
		return -EINVAL;
	gid->global.subnet_prefix = cpu_to_be64(softib_gid_prefix(sdev));
	gid->global.interface_id = cpu_to_be64(softib_port_guid(sdev, index));
	return 0;
}

static int softib_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey)
{
	struct softib_dev *sdev = softib_port(to_sdev(ibdev), port);

	if (index >= SOFTIB_PKEY_TBL_LEN)
		return -EINVAL;
	*pkey = READ_ONCE(sdev->pkeys[index]);
	return 0;
}

static void softib_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "1.0.0");
}

static int softib_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	return udata ? -EOPNOTSUPP : 0;
}

static int softib_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	return 0;
}

/*
 * Memory is addressed by kernel virtual address (CONFIG_INFINIBAND_VIRT_DMA).
 * Keys, as an HCA's: a PD's local DMA key is the device's reserved one
 * (SOFTIB_LOCAL_DMA_LKEY), never 0; an MR's is its index in the device's
 * table (from 1) and a byte that changes with each MR, so that a key kept
 * past its MR's deregistration names no MR that reuses the index.
 */
static struct ib_mr *softib_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct softib_dev *sdev = to_sdev(ibpd->device);
	struct softib_mr *mr;
	u32 index;
	int err;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	/* the index first (reserved, NULL), then the MR with its keys */
	err = xa_alloc(&sdev->mrs, &index, NULL, XA_LIMIT(1, 0xffffff), GFP_KERNEL);
	if (err)
		goto err_free;
	mr->ibmr.lkey = index << 8 | (atomic_inc_return(&sdev->mr_key) & 0xff);
	mr->ibmr.rkey = mr->ibmr.lkey;
	err = xa_err(xa_store(&sdev->mrs, index, mr, GFP_KERNEL));
	if (err) {
		xa_erase(&sdev->mrs, index);
		goto err_free;
	}
	return &mr->ibmr;

err_free:
	kfree(mr);
	return ERR_PTR(err);
}

/*
 * What an HCA checks of each SGE when it executes a WR: the reserved key,
 * or the key of a live MR of the WR's PD. Counted on @sport when not.
 * Called under qp->lock and in softirq: the lookup takes no lock (RCU; an
 * MR is freed after a grace period). With the xarray's lock, lockdep saw
 * qp->lock (softirq-safe) before the class that the QP table's lock, taken
 * with softirqs on, shares with it.
 */
bool softib_sges_ok(struct softib_dev *sport, struct ib_pd *pd, const struct ib_sge *sge,
		    u32 n)
{
	struct softib_dev *sdev = to_sdev(pd->device);
	const struct softib_mr *mr;
	bool ok = true;
	u32 i;

	for (i = 0; i < n && ok; i++) {
		if (sge[i].lkey == SOFTIB_LOCAL_DMA_LKEY)
			continue;
		rcu_read_lock();
		mr = xa_load(&sdev->mrs, sge[i].lkey >> 8);
		ok = mr && mr->ibmr.lkey == sge[i].lkey && mr->ibmr.pd == pd;
		rcu_read_unlock();
	}
	if (!ok)
		softib_count(sport, SOFTIB_CNT_BAD_LKEY);
	return ok;
}

/* Required for kverbs registration; there is no user space support. */
static struct ib_mr *softib_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
					u64 virt, int access,
					IB_COMPAT_REG_USER_MR_DMAH
					struct ib_udata *udata)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static int softib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct softib_mr *mr = container_of(ibmr, struct softib_mr, ibmr);

	xa_erase(&to_sdev(ibmr->device)->mrs, ibmr->lkey >> 8);
	kfree_rcu(mr, rcu);
	return 0;
}

static int softib_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
			    struct ib_udata *udata)
{
	const struct rdma_ah_attr *attr = init->ah_attr;
	u32 port = rdma_ah_get_port_num(attr);
	struct softib_ah *ah = to_sah(ibah);
	u16 dlid = rdma_ah_get_dlid(attr);
	struct softib_dev *sdev;

	if (udata)
		return -EOPNOTSUPP;
	if (attr->type != RDMA_AH_ATTR_TYPE_IB || !rdma_is_port_valid(ibah->device, port))
		return -EINVAL;
	sdev = softib_port(to_sdev(ibah->device), port);
	if ((!READ_ONCE(sdev->fail_ah_dlid) || READ_ONCE(sdev->fail_ah_dlid) == dlid) &&
	    atomic_add_unless(&sdev->fail_create_ah, -1, 0))
		return -ENOMEM;
	if (rdma_ah_get_ah_flags(attr) & IB_AH_GRH) {
		if (rdma_ah_read_grh(attr)->sgid_index >= softib_gid_tbl_len())
			return -EINVAL;
	} else if (!dlid && !softib_sma_enabled()) {
		/* external_sm: ib_mad answers an SMP from an unconfigured port (LID 0) */
		return -EINVAL;
	}

	ah->attr = *attr;
	ah->attr.grh.sgid_attr = NULL;	/* the core holds that reference */
	return 0;
}

static int softib_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	*attr = to_sah(ibah)->attr;
	return 0;
}

static int softib_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	return 0;
}

static void softib_dealloc_driver(struct ib_device *ibdev)
{
	softib_dev_dealloc(to_sdev(ibdev));
}

const struct ib_device_ops softib_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,

	.query_device = softib_query_device,
	.query_port = softib_query_port,
	.modify_port = softib_modify_port,
	.get_port_immutable = softib_get_port_immutable,
	.get_link_layer = softib_get_link_layer,
	.query_gid = softib_query_gid,
	.query_pkey = softib_query_pkey,
	.get_dev_fw_str = softib_get_dev_fw_str,
	.dealloc_driver = softib_dealloc_driver,
	.rdma_netdev_get_params = softib_rn_get_params,

	.alloc_pd = softib_alloc_pd,
	.dealloc_pd = softib_dealloc_pd,
	.get_dma_mr = softib_get_dma_mr,
	.reg_user_mr = softib_reg_user_mr,
	.dereg_mr = softib_dereg_mr,

	.create_ah = softib_create_ah,
	.query_ah = softib_query_ah,
	.destroy_ah = softib_destroy_ah,

	.create_cq = softib_create_cq,
	.destroy_cq = softib_destroy_cq,
	.poll_cq = softib_poll_cq,
	.req_notify_cq = softib_req_notify_cq,
	.modify_cq = softib_modify_cq,

	.create_qp = softib_create_qp,
	.modify_qp = softib_modify_qp,
	.query_qp = softib_query_qp,
	.fill_res_qp_entry = softib_fill_res_qp_entry,
	.destroy_qp = softib_destroy_qp,
	.post_send = softib_post_send,
	.post_recv = softib_post_recv,
	.attach_mcast = softib_attach_mcast,
	.detach_mcast = softib_detach_mcast,

	.create_srq = softib_create_srq,
	.modify_srq = softib_modify_srq,
	.query_srq = softib_query_srq,
	.destroy_srq = softib_destroy_srq,
	.post_srq_recv = softib_post_srq_recv,

	INIT_RDMA_OBJ_SIZE(ib_ah, softib_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, softib_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, softib_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, softib_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, softib_srq, ibsrq),
};
