// SPDX-License-Identifier: GPL-2.0
/*
 * softib Ethernet transport: a softib device bound to an Ethernet netdev
 * ("rdma link add NAME type softib netdev DEV") sends and receives its IB
 * packets (softib_wire.c) in Ethernet frames of ethertype 0x88B5.
 *
 * Addressing: multicast DLIDs, the permissive LID and unicast DLIDs whose
 * MAC is not known yet go to the Ethernet broadcast address; a unicast DLID
 * whose SLID -> MAC pair was learned from a received frame goes to that
 * MAC.  A receiver drops a unicast packet for a LID other than its own.
 *
 * With external_sm=1 the port of a bound device is SM-managed like an
 * in-kernel one (softib_sma.c): it starts in INIT with LID 0 once the lower
 * netdev has carrier, and the device at the other end of the Ethernet
 * segment is its link peer: directed-route SMPs (permissive DLID) reach it
 * by broadcast, so an SM on either side sweeps both ports.
 *
 * Transmit: the core may call softib_eth_xmit() with IRQs off (ib_mad posts
 * under a spinlock with IRQs disabled) while dev_queue_xmit() needs them
 * on, so the frame is built at once into an skb, put on a bounded queue and
 * sent from a work item.
 *
 * Binding lifetime: softib_eth_attach() binds (netdev reference, packet
 * handler, tx queue) and softib_eth_detach() frees; in between, the lower
 * netdev unregistering unbinds at once and queues the removal of the softib
 * device, so the netdev does not wait for it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/if_ether.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/seq_file.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <rdma/ib_pack.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_netlink.h>

#include "softib.h"
#include "softib_rn.h"
#include "softib_eth.h"

#define SOFTIB_ETH_TXQ_MAX	1024	/* frames waiting for tx_work */
#define SOFTIB_ETH_L2_SIZE	256	/* learned SLID -> MAC, direct mapped */
#define SOFTIB_ETH_LID_MASK	0x3fff	/* LID from the last two MAC bytes */

/* Transport counters, in the per-device debugfs file "eth". */
enum softib_eth_stat {
	SOFTIB_ETH_TX_UNICAST,		/* sent to a learned MAC */
	SOFTIB_ETH_TX_FLOOD,		/* sent to the broadcast address */
	SOFTIB_ETH_TX_QUEUE_FULL,	/* dropped: tx queue full */
	SOFTIB_ETH_TX_NOBUF,		/* dropped: no skb */
	SOFTIB_ETH_TX_TOO_BIG,		/* dropped: frame above the lower MTU */
	SOFTIB_ETH_TX_ERRORS,		/* dev_queue_xmit() failed */
	SOFTIB_ETH_TX_CORRUPTED,	/* corrupted on purpose (fault) */
	SOFTIB_ETH_RX_FRAMES,		/* frames of our ethertype received */
	SOFTIB_ETH_RX_BAD,		/* refused by the wire parser */
	SOFTIB_ETH_RX_NOT_MINE,		/* unicast for another LID */
	SOFTIB_ETH_NR_STATS
};

static const char * const softib_eth_stat_names[SOFTIB_ETH_NR_STATS] = {
	[SOFTIB_ETH_TX_UNICAST] = "tx_unicast",
	[SOFTIB_ETH_TX_FLOOD] = "tx_flood",
	[SOFTIB_ETH_TX_QUEUE_FULL] = "tx_queue_full",
	[SOFTIB_ETH_TX_NOBUF] = "tx_nobuf",
	[SOFTIB_ETH_TX_TOO_BIG] = "tx_too_big",
	[SOFTIB_ETH_TX_ERRORS] = "tx_errors",
	[SOFTIB_ETH_TX_CORRUPTED] = "tx_corrupted",
	[SOFTIB_ETH_RX_FRAMES] = "rx_frames",
	[SOFTIB_ETH_RX_BAD] = "rx_bad",
	[SOFTIB_ETH_RX_NOT_MINE] = "rx_not_mine",
};

struct softib_eth_l2 {
	u16 lid;			/* 0: empty slot */
	u8 mac[ETH_ALEN];
};

/* The binding of one softib device to its lower Ethernet netdev. */
struct softib_eth {
	struct softib_dev *sdev;
	struct list_head list;		/* in softib_eth_list while bound */

	/* Under softib_eth_lock; tx and rx use ndev only while bound. */
	bool bound;
	struct net_device *ndev;	/* held while bound */
	netdevice_tracker dev_tracker;
	struct packet_type ptype;	/* .dev = ndev, registered while bound */

	spinlock_t txq_lock;		/* protects txq and txq_open */
	struct sk_buff_head txq;	/* built frames; the queue's own lock unused */
	bool txq_open;			/* false before bind and after unbind */
	struct work_struct tx_work;	/* sends txq */

	spinlock_t l2_lock;		/* protects l2 */
	struct softib_eth_l2 l2[SOFTIB_ETH_L2_SIZE];

	atomic64_t stats[SOFTIB_ETH_NR_STATS];
	struct dentry *debugfs;		/* <dev>/eth */
};

/*
 * softib_eth_lock protects softib_eth_list, every binding's bound/ndev/ptype
 * and softib_eth_exiting.  Taken under RTNL (netdev notifier, attach).
 */
static DEFINE_MUTEX(softib_eth_lock);
static LIST_HEAD(softib_eth_list);
static bool softib_eth_exiting;

static void softib_eth_stat(struct softib_eth *eth, enum softib_eth_stat s)
{
	atomic64_inc(&eth->stats[s]);
}

static struct softib_eth *softib_eth_find(const struct net_device *ndev)
{
	struct softib_eth *eth;

	lockdep_assert_held(&softib_eth_lock);
	list_for_each_entry(eth, &softib_eth_list, list)
		if (eth->ndev == ndev)
			return eth;
	return NULL;
}

/*
 * The largest IB MTU, at most port_mtu, whose packets fit in a lower MTU of
 * @mtu bytes (IB_MTU_256 if none does: larger packets count tx_too_big).
 */
static enum ib_mtu softib_eth_ib_mtu(unsigned int mtu)
{
	enum ib_mtu m;

	for (m = IB_MTU_4096; m > IB_MTU_256; m--) {
		unsigned int bytes = ib_mtu_enum_to_int(m);

		if (bytes <= softib_port_mtu &&
		    bytes + SOFTIB_WIRE_MAX_OVERHEAD <= mtu)
			break;
	}
	return m;
}

/* Set the port MTU from the lower MTU (it raises CLIENT_REREGISTER). */
static void softib_eth_follow_mtu(struct softib_eth *eth)
{
	enum ib_mtu mtu = softib_eth_ib_mtu(eth->ndev->mtu);

	lockdep_assert_held(&softib_eth_lock);
	if (READ_ONCE(eth->sdev->mtu) != mtu)
		softib_dev_set_mtu(eth->sdev, mtu);
}

static u16 softib_eth_lid_from_mac(const u8 *mac)
{
	u16 lid = ((mac[4] << 8) | mac[5]) & SOFTIB_ETH_LID_MASK;

	return lid ? lid : 1;
}

static bool softib_eth_lower_up(const struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev);
}

/* ---- learned SLID -> MAC ---------------------------------------------- */

static void softib_eth_learn(struct softib_eth *eth, u16 lid, const u8 *mac)
{
	struct softib_eth_l2 *e = &eth->l2[lid % SOFTIB_ETH_L2_SIZE];
	unsigned long flags;

	/* a permissive (or no) SLID names no port */
	if (!lid || lid >= 0xc000 || !is_valid_ether_addr(mac))
		return;
	spin_lock_irqsave(&eth->l2_lock, flags);
	e->lid = lid;
	ether_addr_copy(e->mac, mac);
	spin_unlock_irqrestore(&eth->l2_lock, flags);
}

/* Fill @mac with the destination of @dlid; true if it was learned. */
static bool softib_eth_lookup(struct softib_eth *eth, u16 dlid, u8 *mac)
{
	struct softib_eth_l2 *e = &eth->l2[dlid % SOFTIB_ETH_L2_SIZE];
	unsigned long flags;
	bool found = false;

	eth_broadcast_addr(mac);
	if (!dlid || dlid >= 0xc000)
		return false;
	spin_lock_irqsave(&eth->l2_lock, flags);
	if (e->lid == dlid) {
		ether_addr_copy(mac, e->mac);
		found = true;
	}
	spin_unlock_irqrestore(&eth->l2_lock, flags);
	return found;
}

/* ---- transmit ----------------------------------------------------------- */

static void softib_eth_tx_work(struct work_struct *work)
{
	struct softib_eth *eth = container_of(work, struct softib_eth, tx_work);
	struct sk_buff_head batch;
	struct sk_buff *skb;
	unsigned long flags;

	__skb_queue_head_init(&batch);
	spin_lock_irqsave(&eth->txq_lock, flags);
	skb_queue_splice_init(&eth->txq, &batch);
	spin_unlock_irqrestore(&eth->txq_lock, flags);

	/* unbind cancels this work before it drops the netdev reference */
	while ((skb = __skb_dequeue(&batch))) {
		int rc = dev_queue_xmit(skb);	/* net_xmit_eval() evaluates twice */

		if (net_xmit_eval(rc))
			softib_eth_stat(eth, SOFTIB_ETH_TX_ERRORS);
		cond_resched();
	}
}

/* Build the frame for @pkt; called with txq_lock held and the queue open. */
static struct sk_buff *softib_eth_build(struct softib_eth *eth,
					const struct softib_pkt *pkt,
					bool corrupt)
{
	struct net_device *ndev = eth->ndev;
	size_t len = softib_wire_len(pkt);
	u8 dst[ETH_ALEN];
	struct sk_buff *skb;
	u8 *buf;

	lockdep_assert_held(&eth->txq_lock);
	if (len > ndev->mtu) {
		softib_eth_stat(eth, SOFTIB_ETH_TX_TOO_BIG);
		return NULL;
	}
	skb = alloc_skb(LL_RESERVED_SPACE(ndev) + len + ndev->needed_tailroom,
			GFP_ATOMIC);
	if (!skb) {
		softib_eth_stat(eth, SOFTIB_ETH_TX_NOBUF);
		return NULL;
	}
	skb_reserve(skb, LL_RESERVED_SPACE(ndev));
	skb_reset_network_header(skb);
	buf = skb_put(skb, len);
	softib_wire_build(pkt, buf);
	if (corrupt) {
		/* past the LRH, so the receiver's length checks pass */
		buf[len / 2] ^= 0x80;
		softib_eth_stat(eth, SOFTIB_ETH_TX_CORRUPTED);
	}

	skb->dev = ndev;
	skb->protocol = htons(SOFTIB_ETH_P);
	if (softib_eth_lookup(eth, pkt->dlid, dst))
		softib_eth_stat(eth, SOFTIB_ETH_TX_UNICAST);
	else
		softib_eth_stat(eth, SOFTIB_ETH_TX_FLOOD);
	if (dev_hard_header(skb, ndev, SOFTIB_ETH_P, dst, ndev->dev_addr,
			    len) < 0) {
		kfree_skb(skb);
		softib_eth_stat(eth, SOFTIB_ETH_TX_NOBUF);
		return NULL;
	}
	return skb;
}

static void softib_eth_queue(struct softib_dev *sdev, struct softib_pkt *pkt,
			     bool corrupt)
{
	struct sk_buff *skb = NULL;
	struct softib_eth *eth;
	unsigned long flags;

	rcu_read_lock();	/* softib_eth_detach() waits before freeing eth */
	eth = READ_ONCE(sdev->eth);
	if (!eth) {
		softib_count(sdev, SOFTIB_CNT_DROP_LINK_DOWN);
		goto out;
	}

	spin_lock_irqsave(&eth->txq_lock, flags);
	if (!eth->txq_open) {
		spin_unlock_irqrestore(&eth->txq_lock, flags);
		softib_count(sdev, SOFTIB_CNT_DROP_LINK_DOWN);
		goto out;
	}
	if (skb_queue_len(&eth->txq) >= SOFTIB_ETH_TXQ_MAX) {
		spin_unlock_irqrestore(&eth->txq_lock, flags);
		softib_eth_stat(eth, SOFTIB_ETH_TX_QUEUE_FULL);
		softib_count(sdev, SOFTIB_CNT_DROP_LINK_DOWN);
		goto out;
	}
	skb = softib_eth_build(eth, pkt, corrupt);
	if (skb) {
		__skb_queue_tail(&eth->txq, skb);
		queue_work(system_unbound_wq, &eth->tx_work);
	}
	spin_unlock_irqrestore(&eth->txq_lock, flags);
	if (!skb)
		softib_count(sdev, SOFTIB_CNT_DROP_LINK_DOWN);
out:
	rcu_read_unlock();
	softib_pkt_free(pkt);
}

/**
 * softib_eth_xmit - send a packet from an Ethernet-bound device
 * @sdev: the sending device
 * @pkt: the packet; ownership passes to the transport
 *
 * Any context, IRQs off included.  Never blocks; a packet that cannot be
 * queued is dropped and counted.
 */
void softib_eth_xmit(struct softib_dev *sdev, struct softib_pkt *pkt)
{
	softib_eth_queue(sdev, pkt, false);
}

/**
 * softib_eth_xmit_corrupt - send a packet with a bit flipped after its ICRC
 * @sdev: the sending device
 * @pkt: the packet; ownership passes to the transport
 *
 * The corrupt fault of the fabric: the receiver counts it as drop_icrc.
 */
void softib_eth_xmit_corrupt(struct softib_dev *sdev, struct softib_pkt *pkt)
{
	softib_eth_queue(sdev, pkt, true);
}

/* ---- receive ------------------------------------------------------------ */

/*
 * The length of the IB packet in a frame: the whole payload, except that a
 * frame padded to the Ethernet minimum is cut to the LRH PktLen.
 */
static unsigned int softib_eth_rx_len(const u8 *buf, unsigned int len)
{
	unsigned int claimed;

	if (len < IB_LRH_BYTES || len > ETH_ZLEN - ETH_HLEN)
		return len;
	claimed = (get_unaligned_be16(buf + 4) & 0x7ff) * 4;
	return claimed >= IB_LRH_BYTES && claimed < len ? claimed : len;
}

static int softib_eth_rcv(struct sk_buff *skb, struct net_device *ndev,
			  struct packet_type *pt, struct net_device *orig_dev)
{
	struct softib_eth *eth = container_of(pt, struct softib_eth, ptype);
	struct softib_dev *sdev = eth->sdev;
	enum softib_counter why;
	struct softib_pkt *pkt;
	int err;

	if (skb->pkt_type == PACKET_OTHERHOST ||
	    skb->pkt_type == PACKET_LOOPBACK)
		goto drop;
	skb = skb_share_check(skb, GFP_ATOMIC);
	if (!skb)
		return NET_RX_DROP;
	softib_eth_stat(eth, SOFTIB_ETH_RX_FRAMES);
	if (skb_linearize(skb)) {
		softib_count(sdev, SOFTIB_CNT_DROP_NO_RWQE);
		goto drop;
	}

	err = softib_wire_parse(skb->data, softib_eth_rx_len(skb->data, skb->len),
				&pkt, &why);
	if (err) {
		softib_count(sdev, why);
		softib_eth_stat(eth, SOFTIB_ETH_RX_BAD);
		ibdev_dbg_ratelimited(&sdev->ibdev,
				      "%s: dropped frame from %pM: %d\n",
				      ndev->name, eth_hdr(skb)->h_source, err);
		goto drop;
	}

	softib_eth_learn(eth, pkt->slid, eth_hdr(skb)->h_source);
	if (pkt->dlid < 0xc000 && pkt->dlid != softib_dev_lid(sdev)) {
		/* flooded unicast for another port of the segment */
		softib_eth_stat(eth, SOFTIB_ETH_RX_NOT_MINE);
	} else {
		softib_rx(sdev, pkt);
	}
	softib_pkt_free(pkt);
	consume_skb(skb);
	return NET_RX_SUCCESS;

drop:
	kfree_skb(skb);
	return NET_RX_DROP;
}

/* ---- binding ------------------------------------------------------------ */

static int softib_eth_show(struct seq_file *s, void *unused)
{
	struct softib_eth *eth = s->private;
	unsigned long flags;
	unsigned int i;

	mutex_lock(&softib_eth_lock);
	if (eth->bound)
		seq_printf(s, "lower %s mtu %u ib_mtu %d\n", eth->ndev->name,
			   eth->ndev->mtu,
			   ib_mtu_enum_to_int(softib_eth_ib_mtu(eth->ndev->mtu)));
	else
		seq_puts(s, "lower - (gone)\n");
	mutex_unlock(&softib_eth_lock);

	for (i = 0; i < SOFTIB_ETH_NR_STATS; i++)
		seq_printf(s, "%s %lld\n", softib_eth_stat_names[i],
			   (long long)atomic64_read(&eth->stats[i]));

	for (i = 0; i < SOFTIB_ETH_L2_SIZE; i++) {
		struct softib_eth_l2 e;

		spin_lock_irqsave(&eth->l2_lock, flags);
		e = eth->l2[i];
		spin_unlock_irqrestore(&eth->l2_lock, flags);
		if (e.lid)
			seq_printf(s, "l2 0x%04x %pM\n", e.lid, e.mac);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(softib_eth);

/* Unbind from the lower netdev: no rx, no tx, no reference left. */
static void softib_eth_unbind(struct softib_eth *eth)
{
	struct sk_buff_head purge;
	unsigned long flags;

	lockdep_assert_held(&softib_eth_lock);
	if (!eth->bound)
		return;

	dev_remove_pack(&eth->ptype);	/* waits for running handlers */

	__skb_queue_head_init(&purge);
	spin_lock_irqsave(&eth->txq_lock, flags);
	eth->txq_open = false;
	skb_queue_splice_init(&eth->txq, &purge);
	spin_unlock_irqrestore(&eth->txq_lock, flags);
	cancel_work_sync(&eth->tx_work);
	softib_count_add(eth->sdev, SOFTIB_CNT_DROP_LINK_DOWN,
			 skb_queue_len(&purge));
	__skb_queue_purge(&purge);

	list_del_init(&eth->list);
	netdev_put(eth->ndev, &eth->dev_tracker);
	eth->bound = false;
}

/**
 * softib_eth_attach - bind a new softib device to its lower netdev
 * @sdev: the device, registered by softib_dev_create()
 * @ndev: the lower Ethernet netdev
 *
 * Sleeps; takes RTNL.  On success the device sends and receives on @ndev,
 * its port follows @ndev's carrier and its MTU follows @ndev's MTU.
 *
 * Return: 0, -EEXIST if @ndev is already bound, -ENODEV if it is going
 * away, -ENOMEM.
 */
int softib_eth_attach(struct softib_dev *sdev, struct net_device *ndev)
{
	struct softib_eth *eth;
	bool up;
	int err;

	eth = kzalloc(sizeof(*eth), GFP_KERNEL);
	if (!eth)
		return -ENOMEM;
	eth->sdev = sdev;
	INIT_LIST_HEAD(&eth->list);
	spin_lock_init(&eth->txq_lock);
	__skb_queue_head_init(&eth->txq);
	INIT_WORK(&eth->tx_work, softib_eth_tx_work);
	spin_lock_init(&eth->l2_lock);
	eth->ptype.type = htons(SOFTIB_ETH_P);
	eth->ptype.func = softib_eth_rcv;
	eth->ptype.dev = ndev;

	rtnl_lock();
	mutex_lock(&softib_eth_lock);
	if (softib_eth_find(ndev)) {
		err = -EEXIST;
		goto err_unlock;
	}
	/* under RTNL: NETDEV_UNREGISTER has not been sent yet */
	if (ndev->reg_state != NETREG_REGISTERED) {
		err = -ENODEV;
		goto err_unlock;
	}
	err = ib_device_set_netdev(&sdev->ibdev, ndev, 1);
	if (err)
		goto err_unlock;

	netdev_hold(ndev, &eth->dev_tracker, GFP_KERNEL);
	eth->ndev = ndev;
	eth->txq_open = true;
	eth->bound = true;
	list_add(&eth->list, &softib_eth_list);
	dev_add_pack(&eth->ptype);
	WRITE_ONCE(sdev->eth, eth);

	softib_eth_follow_mtu(eth);
	up = softib_eth_lower_up(ndev);
	mutex_unlock(&softib_eth_lock);
	softib_dev_port_event(sdev, up);
	rtnl_unlock();

	eth->debugfs = debugfs_create_file("eth", 0400, sdev->debugfs, eth,
					   &softib_eth_fops);
	ibdev_dbg(&sdev->ibdev, "bound to %s\n", ndev->name);
	return 0;

err_unlock:
	mutex_unlock(&softib_eth_lock);
	rtnl_unlock();
	kfree(eth);
	return err;
}

/**
 * softib_eth_detach - unbind and free the transport state of a device
 * @sdev: the device
 *
 * Called by the core when the device is deallocated.  Sleeps; must not be
 * called with RTNL or a softib lock held.  A softib_eth_xmit() racing with
 * it drops its packet.
 */
void softib_eth_detach(struct softib_dev *sdev)
{
	struct softib_eth *eth = sdev->eth;

	if (!eth)
		return;
	WRITE_ONCE(sdev->eth, NULL);
	synchronize_rcu();		/* no softib_eth_xmit() still uses eth */
	debugfs_remove(eth->debugfs);	/* waits for readers */

	mutex_lock(&softib_eth_lock);
	softib_eth_unbind(eth);
	mutex_unlock(&softib_eth_lock);

	kfree(eth);
}

/* ---- rdma link and netdev events ------------------------------------------ */

static int softib_eth_newlink(const char *ibdev_name, struct net_device *ndev)
{
	struct softib_dev *sdev;
	bool bound;
	int err;

	if (ndev->type != ARPHRD_ETHER || ndev->addr_len != ETH_ALEN)
		return -EINVAL;

	mutex_lock(&softib_eth_lock);
	bound = softib_eth_find(ndev);
	mutex_unlock(&softib_eth_lock);
	if (bound)
		return -EEXIST;

	sdev = softib_dev_create(ibdev_name, ndev,
				 softib_eth_lid_from_mac(ndev->dev_addr), 1,
				 READ_ONCE(softib_enhanced));
	if (IS_ERR(sdev))
		return PTR_ERR(sdev);

	err = softib_eth_attach(sdev, ndev);
	if (err) {
		softib_dev_destroy(sdev);
		return err;
	}
	return 0;
}

static struct rdma_link_ops softib_eth_link_ops = {
	.type = "softib",
	.newlink = softib_eth_newlink,
};

static void softib_eth_lower_gone(struct softib_eth *eth)
{
	struct softib_dev *sdev = eth->sdev;

	softib_eth_unbind(eth);
	/* a device already being unregistered needs nothing more */
	if (!ib_device_try_get(&sdev->ibdev))
		return;
	ib_device_set_netdev(&sdev->ibdev, NULL, 1);
	ib_unregister_device_queued(&sdev->ibdev);
	ib_device_put(&sdev->ibdev);
}

static int softib_eth_netdev_event(struct notifier_block *nb,
				   unsigned long event, void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct softib_eth *eth;

	mutex_lock(&softib_eth_lock);
	eth = softib_eth_exiting ? NULL : softib_eth_find(ndev);
	if (!eth)
		goto out;

	switch (event) {
	case NETDEV_UNREGISTER:
		ibdev_dbg(&eth->sdev->ibdev, "%s unregistered\n", ndev->name);
		softib_eth_lower_gone(eth);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		softib_dev_port_event(eth->sdev, softib_eth_lower_up(ndev));
		break;
	case NETDEV_CHANGEMTU:
		softib_eth_follow_mtu(eth);
		break;
	default:
		break;
	}
out:
	mutex_unlock(&softib_eth_lock);
	return NOTIFY_DONE;
}

static struct notifier_block softib_eth_notifier = {
	.notifier_call = softib_eth_netdev_event,
};

/**
 * softib_eth_init - register "rdma link" type softib and the netdev notifier
 *
 * Return: 0 or a negative errno.
 */
int softib_eth_init(void)
{
	int err;

	err = register_netdevice_notifier(&softib_eth_notifier);
	if (err)
		return err;
	rdma_link_register(&softib_eth_link_ops);
	return 0;
}

/**
 * softib_eth_exit - undo softib_eth_init()
 *
 * Called before the core removes the devices; bound devices stay bound
 * until softib_eth_detach().
 */
void softib_eth_exit(void)
{
	rdma_link_unregister(&softib_eth_link_ops);
	/* unregistering replays NETDEV_UNREGISTER: ignore it */
	mutex_lock(&softib_eth_lock);
	softib_eth_exiting = true;
	mutex_unlock(&softib_eth_lock);
	unregister_netdevice_notifier(&softib_eth_notifier);
}
