// SPDX-License-Identifier: GPL-2.0
/*
 * softib: module init/exit, parameters, the private device list and device
 * lifetime (create, register, unregister, dealloc).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/rculist.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>

#include "softib.h"
#include "softib_rn.h"
#include "softib_eth.h"
#include "softib_sa.h"

static unsigned int ndevs = 2;
module_param(ndevs, uint, 0444);
MODULE_PARM_DESC(ndevs, "number of devices on the in-kernel fabric (LIDs 1..ndevs)");

static unsigned int enhanced_devs;
module_param(enhanced_devs, uint, 0444);
MODULE_PARM_DESC(enhanced_devs,
		 "bit i set: device i of the in-kernel fabric offers the enhanced IPoIB datapath whatever 'enhanced' says (a fabric of both kinds)");

static unsigned int ports = 1;
module_param(ports, uint, 0444);
MODULE_PARM_DESC(ports, "ports per device on the in-kernel fabric, 1 or 2 (port p of device i has LID i * ports + p)");

unsigned int softib_alias_guids;
module_param_named(alias_guids, softib_alias_guids, uint, 0444);
MODULE_PARM_DESC(alias_guids, "alias GUIDs per port, GID indexes 1..N (0-7, default 0)");

unsigned int softib_port_mtu = 4096;
module_param_named(port_mtu, softib_port_mtu, uint, 0444);
MODULE_PARM_DESC(port_mtu, "IB MTU of the ports in bytes: 256, 512, 1024, 2048 or 4096");

/* Every device softib made, whichever way: module load or rdma link add. */
LIST_HEAD(softib_devs);
DEFINE_MUTEX(softib_devs_lock);	/* protects softib_devs (writers) */

/* Parent of every softib ib_device (ULPs expect an HCA to have one). */
static struct device *softib_root;

u64 softib_guid_from_lid(u16 lid)
{
	return SOFTIB_GUID_BASE | lid;
}

static enum ib_mtu softib_mtu_for(struct net_device *ndev)
{
	int bytes = softib_port_mtu;

	if (ndev)
		bytes = min_t(int, bytes, (int)ndev->mtu - SOFTIB_WIRE_OVERHEAD);
	if (bytes >= 4096)
		return IB_MTU_4096;
	if (bytes >= 2048)
		return IB_MTU_2048;
	if (bytes >= 1024)
		return IB_MTU_1024;
	if (bytes >= 512)
		return IB_MTU_512;
	return IB_MTU_256;
}

/* port 1: the ib_device's name; port 2: "<that name>p2" */
const char *softib_dev_name(struct softib_dev *sdev)
{
	return sdev->port_num == 1 ? dev_name(&sdev->ibdev.dev) : sdev->name;
}

struct softib_dev *softib_dev_find_by_name(const char *name)
{
	struct softib_dev *sdev;

	lockdep_assert_held(&softib_devs_lock);
	list_for_each_entry(sdev, &softib_devs, list)
		if (!strcmp(softib_dev_name(sdev), name))
			return sdev;
	return NULL;
}

/* what every port starts with: its own LID, link, P_Key table and queues */
static void softib_port_init(struct softib_dev *hca, struct softib_dev *sdev, u8 port_num,
			     struct net_device *ndev, u16 lid)
{
	INIT_LIST_HEAD(&sdev->list);
	mutex_init(&sdev->cfg_lock);
	sdev->hca = hca;
	sdev->port_num = port_num;
	hca->ports[port_num - 1] = sdev;
	sdev->ndev = ndev;
	sdev->lid = lid;
	sdev->guid = softib_guid_from_lid(lid);
	sdev->mtu = softib_mtu_for(ndev);
	softib_offload_caps(sdev, lid);
	sdev->state = SOFTIB_PORT_ACTIVE;
	if (ndev && !(netif_running(ndev) && netif_carrier_ok(ndev)))
		sdev->state = SOFTIB_PORT_DOWN;
	sdev->port_cap_flags = IB_PORT_CLIENT_REG_SUP | IB_PORT_SYS_IMAGE_GUID_SUP;
	sdev->pkeys[0] = 0xffff;
	spin_lock_init(&sdev->mcast_lock);
	INIT_LIST_HEAD(&sdev->mcast);
	softib_fabric_dev_init(sdev);
	softib_port_arm_init(sdev);
}

/*
 * A device with @nports ports (1, or 2 on the in-kernel fabric) whose
 * port p has LID @lid + p - 1; @enhanced: it offers rdma_netdev.
 */
struct softib_dev *softib_dev_create(const char *name, struct net_device *ndev, u16 lid,
				     unsigned int nports, bool enhanced)
{
	struct softib_dev *sdev, *port2 = NULL;
	unsigned int p;
	int err;

	if (!lid || nports < 1 || nports > SOFTIB_MAX_PORTS || (ndev && nports > 1))
		return ERR_PTR(-EINVAL);
	for (p = 0; p < nports; p++)
		if (softib_lid_is_mcast(lid + p) || lid + p >= 0xffff)
			return ERR_PTR(-EINVAL);

	sdev = ib_alloc_device(softib_dev, ibdev);
	if (!sdev)
		return ERR_PTR(-ENOMEM);
	if (nports > 1) {
		/* only its port state is used: no ib_device of its own */
		port2 = kzalloc(sizeof(*port2), GFP_KERNEL);
		if (!port2) {
			ib_dealloc_device(&sdev->ibdev);
			return ERR_PTR(-ENOMEM);
		}
	}

	softib_port_init(sdev, sdev, 1, ndev, lid);
	if (port2)
		softib_port_init(sdev, port2, 2, NULL, lid + 1);
	xa_init_flags(&sdev->qps, XA_FLAGS_ALLOC);
	xa_init_flags(&sdev->mrs, XA_FLAGS_ALLOC1);
	sdev->next_qpn = 0x48;

	sdev->enhanced = enhanced;	/* fixed while registered */
	sdev->ibdev.node_type = RDMA_NODE_IB_CA;
	sdev->ibdev.node_guid = cpu_to_be64(sdev->guid);
	sdev->ibdev.phys_port_cnt = nports;
	sdev->ibdev.num_comp_vectors = 1;
	sdev->ibdev.local_dma_lkey = SOFTIB_LOCAL_DMA_LKEY;
	sdev->ibdev.dev.parent = softib_root;
	strscpy(sdev->ibdev.node_desc, "softib", sizeof(sdev->ibdev.node_desc));
	ib_set_device_ops(&sdev->ibdev, &softib_dev_ops);
	softib_sma_dev_init(sdev, lid);	/* external_sm: unconfigured port + SMA */

	if (ndev) {
		err = ib_device_set_netdev(&sdev->ibdev, ndev, 1);
		if (err)
			goto err_dealloc;
	}

	/* Routable from now on: ib_mad talks to the SA during registration. */
	mutex_lock(&softib_devs_lock);
	list_add_tail_rcu(&sdev->list, &softib_devs);
	if (port2)
		list_add_tail_rcu(&port2->list, &softib_devs);
	mutex_unlock(&softib_devs_lock);

	err = ib_register_device(&sdev->ibdev, name, NULL);
	if (err)
		goto err_dealloc;	/* dealloc_driver unlinks it */

	if (port2)	/* its name follows the registered one's */
		snprintf(port2->name, sizeof(port2->name), "%sp2", dev_name(&sdev->ibdev.dev));
	for (p = 0; p < nports; p++)
		softib_debugfs_dev_add(sdev->ports[p]);
	ibdev_dbg(&sdev->ibdev, "created, %u port(s), lid 0x%x%s%s\n", nports, lid,
		  ndev ? " netdev " : "", ndev ? netdev_name(ndev) : "");
	return sdev;

err_dealloc:
	ib_dealloc_device(&sdev->ibdev);
	return ERR_PTR(err);
}

void softib_dev_destroy(struct softib_dev *sdev)
{
	ib_unregister_device(&sdev->ibdev);
}

/*
 * ops.dealloc_driver: the core has removed every client, so no QP, CQ or AH
 * is left. Runs on unregistration (whoever asked for it) and when
 * registration fails.
 */
void softib_dev_dealloc(struct softib_dev *sdev)
{
	struct softib_dev *port;
	bool listed = false;
	int p;

	if (sdev->ndev)
		softib_eth_detach(sdev);

	mutex_lock(&softib_devs_lock);
	for (p = 0; p < SOFTIB_MAX_PORTS; p++) {
		port = sdev->ports[p];
		if (port && !list_empty(&port->list)) {
			list_del_rcu(&port->list);
			listed = true;
		}
	}
	mutex_unlock(&softib_devs_lock);
	if (listed)
		synchronize_rcu();	/* no fabric walk sees a port any more */

	for (p = SOFTIB_MAX_PORTS - 1; p >= 0; p--) {
		port = sdev->ports[p];
		if (!port)
			continue;
		softib_debugfs_dev_remove(port);
		softib_port_arm_stop(port);
		softib_fabric_dev_stop(port);
		mutex_destroy(&port->cfg_lock);
	}
	xa_destroy(&sdev->qps);
	xa_destroy(&sdev->mrs);
	kfree(sdev->ports[1]);	/* port 2 */
}

static void softib_destroy_all(void)
{
	struct softib_dev *sdev;

	for (;;) {
		mutex_lock(&softib_devs_lock);
		/*
		 * Newest first: the first device holds the SM's LID, and
		 * the others' leaves and path queries on their way out are
		 * answered instead of timing out (3 s per group in ib_core).
		 */
		sdev = NULL;
		if (!list_empty(&softib_devs)) {
			sdev = list_last_entry(&softib_devs, struct softib_dev, list)->hca;
			get_device(&sdev->ibdev.dev);
		}
		mutex_unlock(&softib_devs_lock);
		if (!sdev)
			break;
		/* Fenced against a concurrent unregistration by the core. */
		ib_unregister_device(&sdev->ibdev);
		put_device(&sdev->ibdev.dev);
	}
}

static int __init softib_init(void)
{
	struct softib_dev *sdev;
	char name[IB_DEVICE_NAME_MAX];
	unsigned int i;
	int err;

	if (softib_port_mtu < 256 || softib_port_mtu > 4096 || !is_power_of_2(softib_port_mtu)) {
		pr_err("port_mtu %u is not an IB MTU\n", softib_port_mtu);
		return -EINVAL;
	}
	if (ports < 1 || ports > SOFTIB_MAX_PORTS || ndevs > 0xbfff / ports) {
		pr_err("ndevs %u with %u ports each: out of range\n", ndevs, ports);
		return -EINVAL;
	}
	if (softib_alias_guids > SOFTIB_MAX_ALIAS_GUIDS ||
	    (softib_alias_guids && softib_sma_enabled())) {
		pr_err("alias_guids %u: at most %d, and with the embedded SM only\n",
		       softib_alias_guids, SOFTIB_MAX_ALIAS_GUIDS);
		return -EINVAL;
	}
	if (ports > 1 && softib_sma_enabled()) {
		pr_err("ports %u: two-port devices have the embedded SM only (external_sm is set)\n",
		       ports);
		return -EINVAL;
	}

	softib_root = root_device_register("softib");
	if (IS_ERR(softib_root))
		return PTR_ERR(softib_root);

	softib_fabric_set_seed(1);
	softib_debugfs_init();
	softib_blast_init(softib_debugfs_root);
	softib_hold_init(softib_debugfs_root);

	err = softib_sa_init(softib_debugfs_root);
	if (err)
		goto err_debugfs;

	err = softib_sma_init(ndevs);
	if (err)
		goto err_sa;

	for (i = 0; i < ndevs; i++) {
		snprintf(name, sizeof(name), "sib%u", i);
		sdev = softib_dev_create(name, NULL, i * ports + 1, ports,
					 READ_ONCE(softib_enhanced) ||
					 (i < 32 && enhanced_devs & BIT(i)));
		if (IS_ERR(sdev)) {
			err = PTR_ERR(sdev);
			pr_err("creating %s failed: %d\n", name, err);
			goto err_devs;
		}
	}

	err = softib_eth_init();
	if (err)
		goto err_devs;

	return 0;

err_devs:
	softib_destroy_all();
	softib_sma_exit();
err_sa:
	softib_sa_exit();
err_debugfs:
	softib_debugfs_exit();
	softib_hold_release_all();
	root_device_unregister(softib_root);
	return err;
}

static void __exit softib_exit(void)
{
	softib_eth_exit();
	softib_destroy_all();
	softib_sma_exit();
	softib_sa_exit();
	softib_debugfs_exit();
	/* after the devices: a held interface's destructor runs now */
	softib_hold_release_all();
	root_device_unregister(softib_root);
}

module_init(softib_init);
module_exit(softib_exit);

MODULE_DESCRIPTION("softib: software InfiniBand HCA and fabric for testing IB ULPs");
MODULE_LICENSE("GPL");
MODULE_ALIAS_RDMA_LINK("softib");
