/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softib Ethernet transport (softib_eth.c) and wire format (softib_wire.c).
 *
 * Contract with the core (softib_main.c, softib_fabric.c, softib_debugfs.c;
 * all of it is in place):
 *
 *   - softib_dev_dealloc() (ib_core's dealloc_driver) calls
 *     softib_eth_detach() with no softib lock held: it takes
 *     softib_eth_lock, which the netdev notifier holds under RTNL.  It is
 *     safe against a concurrent softib_eth_xmit() (RCU), so its order
 *     against softib_fabric_dev_stop() does not matter.
 *   - The module exit calls softib_eth_exit() before it destroys the
 *     devices; softib_destroy_all() also waits for removals the notifier
 *     queued (ib_unregister_device_queued()).
 *   - The fabric calls softib_eth_xmit() for every packet an Ethernet-bound
 *     device (sdev->ndev) sends to another LID or to a multicast LID, after
 *     loss/dup/reorder, and softib_eth_xmit_corrupt() for one the corrupt
 *     fault picked (the transport flips a bit after the ICRC, so the
 *     receiver counts drop_icrc).  Before attach and after the lower netdev
 *     is gone the transport drops it and counts drop_link_down.
 *   - The "inject" knob runs softib_wire_parse(), counts @why on failure,
 *     else softib_rx() and softib_pkt_free().
 *   - softib_dev_set_mtu() and softib_dev_port_event() are called under RTNL
 *     and softib_eth_lock: they must not take softib_devs_lock.
 *   - Transport-only counters (frames flooded or sent unicast, queue
 *     overflow, frames for another LID, the learned SLID -> MAC table) are
 *     in the per-device debugfs file "eth", created and removed here.
 *
 * Open point for the core: softib_mtu_for() (the MTU at creation) uses
 * SOFTIB_WIRE_OVERHEAD (72); the transport then sets the MTU with
 * SOFTIB_WIRE_MAX_OVERHEAD (76, ImmDt included).  They differ only for a
 * lower MTU of 4168..4171 (or 2120..2123, ...).
 *
 * Lock order (outer first): RTNL > softib_eth_lock (mutex, the list of
 * bindings) > the core's locks.  Per binding: eth->txq_lock and
 * eth->l2_lock are leaves.
 */
#ifndef _SOFTIB_ETH_H
#define _SOFTIB_ETH_H

#include <linux/types.h>

struct net_device;
struct softib_dev;
struct softib_pkt;
enum softib_counter;

/* Ethertype of the frames (IEEE 802 local experimental ethertype 1) */
#define SOFTIB_ETH_P		0x88b5

/* Largest payload a wire packet may carry: the largest IB MTU. */
#define SOFTIB_WIRE_MAX_PAYLOAD	4096

/*
 * Bytes a wire packet adds to a payload of at most one IB MTU: LRH 8 + GRH
 * 40 + BTH 12 + DETH 8 + ImmDt 4 + ICRC 4 (a padded payload is at most
 * MTU - 1 bytes, so payload + pad never exceeds the MTU).  The Ethernet
 * header is not part of the netdev MTU.  The core's softib_mtu_for() should
 * use it too (it uses SOFTIB_WIRE_OVERHEAD, 72, which forgets ImmDt).
 */
#define SOFTIB_WIRE_MAX_OVERHEAD	76

int softib_eth_init(void);
void softib_eth_exit(void);
int softib_eth_attach(struct softib_dev *sdev, struct net_device *ndev);
void softib_eth_detach(struct softib_dev *sdev);
void softib_eth_xmit(struct softib_dev *sdev, struct softib_pkt *pkt);
void softib_eth_xmit_corrupt(struct softib_dev *sdev, struct softib_pkt *pkt);

int softib_wire_parse(const u8 *buf, size_t len, struct softib_pkt **out,
		      enum softib_counter *why);
size_t softib_wire_len(const struct softib_pkt *pkt);
void softib_wire_build(const struct softib_pkt *pkt, u8 *buf);

#endif /* _SOFTIB_ETH_H */
