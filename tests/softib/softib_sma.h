/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softib: the subnet management agent (softib_sma.c) that lets an external
 * SM (OpenSM, through ib_umad) configure the ports, and the simulated switch
 * (softib_switch.c) that links more than two ports in that mode.
 *
 * Module parameter external_sm=1: in-kernel ports start in INIT with LID 0,
 * the embedded SA is off, QP0 works from INIT on and everything else only
 * when the port is ACTIVE. ndevs=2 links sib0 and sib1 back to back; more
 * devices (or use_switch=1) hang off one switch, sib<i> on switch port i + 1.
 *
 * Locking: softib_sma_lock (spinlock, IRQs saved; below every other softib
 * lock, nothing is taken under it) serializes the writers of all SMA state
 * (struct softib_sma_port of every port, the switch tables, and, in this
 * mode, sdev->lid, sdev->state and sdev->pkeys). Readers use READ_ONCE.
 *
 * A device bound to a netdev ("rdma link add") is SM-managed in this mode
 * too (fab_port SOFTIB_SMA_FAB_ETH): linked while the netdev has carrier,
 * its link peer is whatever port is at the other end of the Ethernet
 * segment (softib_eth.c).
 */
#ifndef _SOFTIB_SMA_H
#define _SOFTIB_SMA_H

#include <linux/bits.h>
#include <linux/spinlock.h>
#include <linux/types.h>

struct ib_device;
struct ib_port_attr;
struct softib_dev;
struct softib_pkt;
struct dentry;

#define SOFTIB_SMA_PKEYS	16	/* P_Key entries of a switch port 0 */
/* fab_port of an Ethernet-bound port: its link peer is across the netdev */
#define SOFTIB_SMA_FAB_ETH	0xff

/* What the SM configured on one port (an HCA port or a switch port). */
struct softib_sma_port {
	u64 gid_prefix;
	u16 lid;		/* switch port 0 only; an HCA's is sdev->lid */
	u16 sm_lid;
	u16 mkey_lease;
	u8 sm_sl;
	u8 lmc;
	u8 state;		/* enum ib_port_state: DOWN, INIT, ARMED, ACTIVE */
	u8 neighbor_mtu;	/* enum ib_mtu */
	u8 op_vls;
	u8 subnet_timeout;
	u8 width_enabled;
	u8 speed_enabled;
	u8 hoq_life;
	u8 vl_high_limit;
	bool linked;		/* physical link up (there is a peer) */
	u8 fab_port;		/* position: switch port, or 1/2 back to back */
	u8 sl2vl[8];
	u8 vlarb[4][64];
};

extern bool softib_external_sm;

static inline bool softib_sma_enabled(void)
{
	return READ_ONCE(softib_external_sm);
}

/* SMP status values (IBA 13.4.7) */
#define SOFTIB_SMP_BAD_ATTR	0x000c	/* unsupported method/attribute */
#define SOFTIB_SMP_BAD_VALUE	0x001c	/* invalid attribute or modifier value */

/* What a PortInfo Set changed (softib_sma_pi_set()) */
enum {
	SOFTIB_SMA_CH_LID = BIT(0),
	SOFTIB_SMA_CH_SM = BIT(1),
	SOFTIB_SMA_CH_UP = BIT(2),	/* reached ACTIVE */
	SOFTIB_SMA_CH_DOWN = BIT(3),	/* left ACTIVE */
	SOFTIB_SMA_CH_REREG = BIT(4),
	SOFTIB_SMA_CH_GID = BIT(5),
	SOFTIB_SMA_CH_PKEY = BIT(6),
};

struct ib_port_info;

/* Shared by softib_sma.c and softib_switch.c, under softib_sma_lock. */
extern spinlock_t softib_sma_lock;
void softib_sma_port_defaults(struct softib_sma_port *p, bool linked, u8 fab_port);
void softib_sma_pi_get(const struct softib_sma_port *p, struct ib_port_info *pi, u8 mtu_cap);
u16 softib_sma_pi_set(struct softib_sma_port *p, const struct ib_port_info *pi, u16 *lid,
		      u32 *changed);

/* softib_sma.c */
int softib_sma_init(unsigned int ndevs);	/* before the devices */
void softib_sma_exit(void);
/*
 * Called by softib_dev_create() after ib_set_device_ops(); sets up the SMA
 * and the unconfigured port of an in-kernel device in external-SM mode.
 */
void softib_sma_dev_init(struct softib_dev *sdev, u16 fab_port);
/* query_port: report what the SM set (external-SM mode only). */
void softib_sma_query_port(struct softib_dev *sdev, struct ib_port_attr *attr);
/* Receive path of QP0 in external-SM mode (caller holds rcu_read_lock). */
void softib_sma_rx_smp(struct softib_dev *sdev, const struct softib_pkt *pkt);
/* Link state knob (debugfs "state") in external-SM mode; true if handled. */
bool softib_sma_link_event(struct softib_dev *sdev, bool up);
/* May an Ethernet-bound port that is not ACTIVE send pkt (QP0 from INIT)? */
bool softib_sma_eth_tx_ok(const struct softib_dev *sdev, const struct softib_pkt *pkt);

/* softib_switch.c: routing on the external-SM fabric */
int softib_sw_init(unsigned int ndevs, struct dentry *root);
/* Route pkt sent by sdev (not freed). */
void softib_sma_route(struct softib_dev *sdev, struct softib_pkt *pkt, bool corrupt);
bool softib_sw_present(void);
/* The cable of switch port fab_port went down or up (softib_sma_lock held). */
void softib_sw_link_event(unsigned int fab_port, bool up);

#endif /* _SOFTIB_SMA_H */
