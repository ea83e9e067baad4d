/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softib Ethernet transport (softib_eth.c) and wire format (softib_wire.c).
 *
 * REQUESTS TO THE CORE (softib.h / softib_main.c / softib_fabric.c owner),
 * from the Ethernet transport, which is written assuming them:
 *
 *   R1. (done in softib_main.c) softib_dev_dealloc() calls
 *       softib_eth_detach() with no softib lock held: it takes
 *       softib_eth_lock, which the netdev notifier holds under RTNL.
 *       softib_eth_detach() is safe against a concurrent softib_eth_xmit()
 *       (RCU), so the order against softib_fabric_dev_stop() is free.
 *   R2. (done) The module exit calls softib_eth_exit() before it destroys
 *       the devices, and softib_destroy_all() also catches devices whose
 *       removal the notifier queued (ib_unregister_device_queued).
 *   R3. The core's tx path calls softib_eth_xmit() for every packet that
 *       leaves an Ethernet-bound device (sdev->ndev) for another LID or a
 *       multicast LID, in any context, after applying loss/dup/reorder.
 *       Before attach and after the lower netdev is gone the transport
 *       drops it and counts SOFTIB_CNT_DROP_LINK_DOWN.
 *   R4. Corrupt fault on the Ethernet path: the core calls
 *       softib_eth_xmit_corrupt() instead of softib_eth_xmit() (and counts
 *       corrupt_fault); the transport flips one bit after the ICRC is
 *       computed, so the receiver counts drop_icrc, as on a real wire.
 *   R5. The core's "inject" knob: softib_wire_parse(); on error
 *       softib_count(sdev, why), else softib_rx() then softib_pkt_free().
 *   R6. softib_dev_set_mtu() and softib_dev_port_event() are called under
 *       RTNL and softib_eth_lock: they must not take softib_devs_lock (they
 *       take only cfg_lock today).
 *   Transport-only counters (frames flooded or sent unicast, queue
 *   overflow, frames for another LID, the learned SLID -> MAC table) are in
 *   the per-device debugfs file "eth", created and removed by the transport.
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
 * Bytes a wire packet adds to its payload at most: LRH 8 + GRH 40 + BTH 12
 * + DETH 8 + ImmDt 4 + pad 3 + ICRC 4.  The Ethernet header is not part of
 * the netdev MTU.
 */
#define SOFTIB_WIRE_MAX_OVERHEAD	79

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
