// SPDX-License-Identifier: GPL-2.0
/*
 * softib: port configuration (state, LID, P_Key table, MTU), the SM's
 * location and the IB events a real subnet manager would cause.
 */
#include <linux/module.h>
#include <linux/rculist.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "softib.h"
#include "softib_sa.h"

static ushort sm_lid = 1;
module_param(sm_lid, ushort, 0444);
MODULE_PARM_DESC(sm_lid, "LID of the port that acts as the SM/SA (default 1)");

u16 softib_sm_lid(void)
{
	return READ_ONCE(sm_lid);
}

void softib_dispatch_port_event(struct softib_dev *sdev, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = softib_ibdev(sdev),
		.element.port_num = sdev->port_num,
		.event = type,
	};

	/* not to a device that is going away (a knob written during removal) */
	if (!ib_device_try_get(ev.device))
		return;
	ibdev_dbg(ev.device, "port %u: event %s\n", sdev->port_num, ib_event_msg(type));
	ib_dispatch_event(&ev);
	ib_device_put(ev.device);
}

static void softib_dispatch_all(enum ib_event_type type)
{
	struct softib_dev *sdev;

	mutex_lock(&softib_devs_lock);
	list_for_each_entry(sdev, &softib_devs, list)
		softib_dispatch_port_event(sdev, type);
	mutex_unlock(&softib_devs_lock);
}

void softib_set_sm_lid(u16 lid)
{
	WRITE_ONCE(sm_lid, lid);
	softib_dispatch_all(IB_EVENT_SM_CHANGE);
}

static u64 subnet_prefix = SOFTIB_SUBNET_PREFIX;

u64 softib_subnet_prefix(void)
{
	return READ_ONCE(subnet_prefix);
}

/*
 * The SM gives the subnet another GID prefix (PortInfo:GidPrefix on every
 * port): every port's GID 0 changes, and each port gets GID_CHANGE.
 */
void softib_set_subnet_prefix(u64 prefix)
{
	WRITE_ONCE(subnet_prefix, prefix);
	softib_dispatch_all(IB_EVENT_GID_CHANGE);
}

/* The prefix of sdev's GIDs: the embedded SM's, or what OpenSM set. */
u64 softib_gid_prefix(struct softib_dev *sdev)
{
	if (sdev->sma.fab_port)
		return READ_ONCE(sdev->sma.gid_prefix);
	return softib_subnet_prefix();
}

void softib_sm_restart(void)
{
	softib_sa_restart();
	softib_dispatch_all(IB_EVENT_CLIENT_REREGISTER);
}

/*
 * Another SM becomes master (a failover or a handover): every port's SM LID
 * changes; the new master's SA knows none of the old one's multicast groups
 * (OpenSM does not replicate them to its standbys), and in its first sweep
 * it sets ClientReregister on every port, so that the clients join again.
 */
void softib_sm_failover(u16 lid)
{
	softib_sa_restart();
	softib_set_sm_lid(lid);
	softib_dispatch_all(IB_EVENT_CLIENT_REREGISTER);
}

static unsigned int arm_ms = 10;
module_param(arm_ms, uint, 0644);
MODULE_PARM_DESC(arm_ms,
		 "ms the embedded SM takes a port whose link came up from INIT to ARMED, and again to ACTIVE (default 10)");

/*
 * The embedded SM's sweep of a port whose link came up: INIT (link up, the
 * SM has not configured it), ARMED (configured), then ACTIVE, arm_ms
 * apart, as a real SM's sweep takes it (IBA 7.2, 14.2.5.9). Only ACTIVE
 * carries data and MADs, and only the move to ACTIVE raises PORT_ACTIVE.
 *
 * A held sweep (debugfs state "hold") schedules no step: each waits for a
 * "step" write, so a test sees INIT and ARMED for as long as its checks
 * take, however busy the machine is; "up" lets it go on by itself.
 * Called with cfg_lock held; true when the port became ACTIVE.
 */
static bool softib_port_sweep_step(struct softib_dev *sdev)
{
	lockdep_assert_held(&sdev->cfg_lock);
	switch (sdev->state) {
	case SOFTIB_PORT_INIT:
		WRITE_ONCE(sdev->state, SOFTIB_PORT_ARMED);
		if (!sdev->sweep_held)
			queue_delayed_work(system_wq, &sdev->arm_work,
					   msecs_to_jiffies(READ_ONCE(arm_ms)));
		return false;
	case SOFTIB_PORT_ARMED:
		WRITE_ONCE(sdev->state, SOFTIB_PORT_ACTIVE);
		return true;
	default:
		return false;	/* down again meanwhile */
	}
}

static void softib_port_arm_work(struct work_struct *work)
{
	struct softib_dev *sdev = container_of(to_delayed_work(work), struct softib_dev,
					       arm_work);
	bool active;

	mutex_lock(&sdev->cfg_lock);
	active = !sdev->sweep_held && softib_port_sweep_step(sdev);
	mutex_unlock(&sdev->cfg_lock);

	/* State first: the handlers run later and query the port. */
	if (active)
		softib_dispatch_port_event(sdev, IB_EVENT_PORT_ACTIVE);
}

/* debugfs state "hold": a link that comes up waits in INIT for "step". */
int softib_dev_port_hold(struct softib_dev *sdev)
{
	if (sdev->sma.fab_port)
		return -EOPNOTSUPP;	/* external SM: OpenSM sweeps */
	mutex_lock(&sdev->cfg_lock);
	sdev->sweep_held = true;
	if (sdev->state == SOFTIB_PORT_DOWN)
		WRITE_ONCE(sdev->state, SOFTIB_PORT_INIT);
	mutex_unlock(&sdev->cfg_lock);
	return 0;
}

/* debugfs state "step": the held sweep's next step, now. */
int softib_dev_port_step(struct softib_dev *sdev)
{
	bool active;

	mutex_lock(&sdev->cfg_lock);
	if (!sdev->sweep_held || sdev->state == SOFTIB_PORT_DOWN ||
	    sdev->state == SOFTIB_PORT_ACTIVE) {
		mutex_unlock(&sdev->cfg_lock);
		return -EINVAL;
	}
	active = softib_port_sweep_step(sdev);
	mutex_unlock(&sdev->cfg_lock);
	if (active)
		softib_dispatch_port_event(sdev, IB_EVENT_PORT_ACTIVE);
	return 0;
}

void softib_port_arm_init(struct softib_dev *sdev)
{
	INIT_DELAYED_WORK(&sdev->arm_work, softib_port_arm_work);
}

/* Device removal, after the knobs and the lower netdev are gone. */
void softib_port_arm_stop(struct softib_dev *sdev)
{
	cancel_delayed_work_sync(&sdev->arm_work);
}

void softib_dev_port_event(struct softib_dev *sdev, bool up)
{
	enum softib_port_state old;

	if (softib_sma_link_event(sdev, up))	/* external_sm: the SM brings it up */
		return;

	mutex_lock(&sdev->cfg_lock);
	old = sdev->state;
	if (up && (old == SOFTIB_PORT_DOWN || sdev->sweep_held)) {
		/* a held sweep goes on by itself from where it waits */
		sdev->sweep_held = false;
		if (old == SOFTIB_PORT_DOWN)
			WRITE_ONCE(sdev->state, SOFTIB_PORT_INIT);
		if (old != SOFTIB_PORT_ACTIVE)
			queue_delayed_work(system_wq, &sdev->arm_work,
					   msecs_to_jiffies(READ_ONCE(arm_ms)));
	} else if (!up) {
		sdev->sweep_held = false;
		/* a sweep step still pending finds DOWN and does nothing */
		WRITE_ONCE(sdev->state, SOFTIB_PORT_DOWN);
	}
	mutex_unlock(&sdev->cfg_lock);

	/* only a port that was ACTIVE reports the error */
	if (!up && old == SOFTIB_PORT_ACTIVE)
		softib_dispatch_port_event(sdev, IB_EVENT_PORT_ERR);
}

void softib_dev_set_lid(struct softib_dev *sdev, u16 lid)
{
	bool was_sm;

	mutex_lock(&sdev->cfg_lock);
	was_sm = READ_ONCE(sdev->lid) == softib_sm_lid();
	WRITE_ONCE(sdev->lid, lid);
	mutex_unlock(&sdev->cfg_lock);

	/*
	 * The SM sets the new LID in this port's PortInfo and tells nobody
	 * else, as OpenSM does: the other ports keep their paths to the old
	 * LID until they learn better (from the port's own traffic, or a
	 * PathRecord query for another reason).
	 */
	softib_dispatch_port_event(sdev, IB_EVENT_LID_CHANGE);
	/* The SM moves with its port: every port's SM LID changes. */
	if (was_sm)
		softib_set_sm_lid(lid);
}

void softib_dev_rereg(struct softib_dev *sdev)
{
	softib_dispatch_port_event(sdev, IB_EVENT_CLIENT_REREGISTER);
}

int softib_dev_set_pkey(struct softib_dev *sdev, unsigned int idx, u16 pkey)
{
	if (idx >= SOFTIB_PKEY_TBL_LEN)
		return -EINVAL;
	/*
	 * Index 0 is the partition of the management QPs (ib_mad, ib_sa) and
	 * of the IPoIB parent: it may change, as an SM may reprogram it, but
	 * never to an invalid P_Key (0x0000/0x8000) or an empty entry.
	 */
	if (idx == 0 && !(pkey & 0x7fff))
		return -EINVAL;

	mutex_lock(&sdev->cfg_lock);
	WRITE_ONCE(sdev->pkeys[idx], pkey);
	mutex_unlock(&sdev->cfg_lock);

	softib_dispatch_port_event(sdev, IB_EVENT_PKEY_CHANGE);
	return 0;
}

void softib_dev_set_mtu(struct softib_dev *sdev, enum ib_mtu mtu)
{
	mutex_lock(&sdev->cfg_lock);
	WRITE_ONCE(sdev->mtu, mtu);
	mutex_unlock(&sdev->cfg_lock);
	softib_dispatch_port_event(sdev, IB_EVENT_CLIENT_REREGISTER);
}

/*
 * Two P_Keys match when their low 15 bits are equal, not zero, and at least
 * one of them is a full member (bit 15): two limited members cannot talk.
 */
bool softib_pkey_match(u16 a, u16 b)
{
	if (!(a & 0x7fff) || (a & 0x7fff) != (b & 0x7fff))
		return false;
	return (a | b) & 0x8000;
}

/* Index of the port's entry that admits pkey (exact value preferred), or -1. */
int softib_pkey_find(struct softib_dev *sdev, u16 pkey)
{
	int i, match = -1;

	for (i = 0; i < SOFTIB_PKEY_TBL_LEN; i++) {
		u16 entry = READ_ONCE(sdev->pkeys[i]);

		if (entry == pkey && (entry & 0x7fff))
			return i;
		if (match < 0 && softib_pkey_match(entry, pkey))
			match = i;
	}
	return match;
}
