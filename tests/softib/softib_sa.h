/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softib SM/SA: the fabric-resident Subnet Administrator of softib.
 *
 * The device whose LID is softib_sm_lid() is the SM. The core hands every
 * packet addressed to that LID and to QP1 to softib_sa_handle() before
 * normal delivery; SubnAdm (class 0x03) requests are answered here and never
 * reach the SM host's own QP1. Everything else (responses, other classes) is
 * left to the core.
 *
 * Requests to the core (not in INTERFACES.md):
 *   - none. The SA reads softib_devs under RCU to resolve local GIDs and to
 *     find the device a delayed answer is sent from; it relies on the core
 *     freeing a struct softib_dev only after an RCU grace period following
 *     its removal from softib_devs.
 *
 * Lock order: softib_sa.lock (spinlock, IRQs saved) is a leaf. While it is
 * held the SA calls nothing in the core. softib_sa_handle() calls
 * softib_fabric_min_mtu(), softib_guid_from_lid() and reads softib_devs
 * under rcu_read_lock() before taking it, and calls softib_send_from()
 * after dropping it (softib_send_from() may loop the answer back into
 * softib_rx() and so into softib_sa_handle() on the same CPU). The core may
 * call softib_sa_handle() holding any lock that those functions do not take.
 */
#ifndef _SOFTIB_SA_H
#define _SOFTIB_SA_H

#include <linux/types.h>
#include <rdma/ib_verbs.h>

struct dentry;
struct softib_dev;
struct softib_pkt;

/* Creates the global sa_* debugfs files under the softib debugfs root. */
int softib_sa_init(struct dentry *softib_debugfs_root);
/*
 * Drops delayed answers, forgets all state and removes the sa_* files.
 * Call it before removing the debugfs root and after the last device is
 * gone. Sleeps.
 */
void softib_sa_exit(void);
/*
 * Answer a SubnAdm request that arrived at the SM device sm (dlid == SM LID,
 * dqpn == 1). Returns true if the packet was consumed (a SubnAdm request,
 * answered, dropped by a fault knob, or malformed), false if the core should
 * deliver it normally. Any context, including BH and IRQs off. Does not
 * take ownership of req.
 */
bool softib_sa_handle(struct softib_dev *sm, const struct softib_pkt *req);
/* SM restart: forget every multicast group and member. Any context. */
void softib_sa_restart(void);
/* The sa_sl parameter: SL of paths, new groups and the ports' SMSL. */
unsigned int softib_sa_sl(void);
u32 softib_sa_core_mtu(void);
/*
 * Does the SA's state route group @mlid to the port whose GID is @gid (a
 * full member or a non-member of it; a send-only member does not receive),
 * as the switches an SM programs from it do? Any context.
 */
bool softib_sa_mcast_routes_to(u16 mlid, const union ib_gid *gid);

#endif /* _SOFTIB_SA_H */
