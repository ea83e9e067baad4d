// SPDX-License-Identifier: GPL-2.0
/*
 * Multicast: the broadcast group, the groups in the netdev's multicast
 * list (full member) and groups we only send to (send-only full member).
 *
 * One work item, ipoib_mcast_task(), owns every join and leave: it runs on
 * the ordered device workqueue under priv->mcast_mutex. The SA callback
 * only records the result and kicks the work, so it never sleeps on our
 * locks and ib_sa_free_multicast() (which waits for the callback) is safe
 * to call from the work. The broadcast group is joined first; its record
 * gives the Q_Key, MTU and the parameters every other group must use
 * (RFC 4391 section 4). Failed joins back off exponentially.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/rtnetlink.h>
#include "ipoib.h"

#define IPOIB_JOIN_FULL_MEMBER		0x1
#define IPOIB_JOIN_SENDONLY_FULL	0x8
#define IPOIB_MCAST_BACKOFF_MS		1000
#define IPOIB_MCAST_BACKOFF_MAX_MS	16000
#define IPOIB_SENDONLY_IDLE		(120 * HZ)
#define IPOIB_MLID_MIN			0xc000	/* multicast LIDs */
#define IPOIB_MLID_MAX			0xfffe	/* 0xffff is permissive */

static const struct rhashtable_params ipoib_mcast_params = {
	.key_len = sizeof(union ib_gid),
	.key_offset = offsetof(struct ipoib_mcast, mgid),
	.head_offset = offsetof(struct ipoib_mcast, node),
	.automatic_shrinking = true,
};

/* Walk the group list; only the mcast_mutex holder deletes from it. */
#define for_each_mcast(mc, head, mutex) \
	list_for_each_entry_rcu(mc, head, list, lockdep_is_held(mutex))

void ipoib_build_bcast_addr(struct ipoib_dev_priv *priv, u8 *addr)
{
	static const u8 prefix[] = {
		0x00, 0xff, 0xff, 0xff,		/* reserved, multicast QPN */
		0xff, 0x12, 0x40, 0x1b,		/* link-local scope, IPv4 */
	};

	u16 pkey = READ_ONCE(priv->pkey);

	memset(addr, 0, INFINIBAND_ALEN);
	memcpy(addr, prefix, sizeof(prefix));
	addr[8] = pkey >> 8;
	addr[9] = pkey & 0xff;
	memset(addr + 16, 0xff, 4);
}

/*
 * An IPv4 or IPv6 multicast MGID (ff1s:401b:PPPP:... or ff1s:601b:PPPP:...,
 * RFC 4391 section 4) names its group in the partition of the interface:
 * put our P_Key in it. The stack maps group addresses with dev->broadcast
 * and keeps the result (multicast list, multicast neighbours), so after a
 * P_Key change it may still hand us the old one. Other MGIDs are left as
 * they are.
 */
void ipoib_mgid_set_pkey(struct ipoib_dev_priv *priv, u8 *mgid)
{
	u16 pkey = READ_ONCE(priv->pkey);

	if (mgid[0] != 0xff || mgid[3] != 0x1b ||
	    (mgid[2] != 0x40 && mgid[2] != 0x60))
		return;
	mgid[4] = pkey >> 8;
	mgid[5] = pkey & 0xff;
}

/*
 * Carrier work, under rtnl: dev->broadcast follows our P_Key. The IPv4 and
 * IPv6 multicast lists hold hardware addresses made from it, so they are
 * unmapped before the change and mapped again after it, with the
 * notifications a change of link-layer address format has (the stack's
 * handlers of NETDEV_PRE/POST_TYPE_CHANGE do exactly that; the second one
 * also tells rtnetlink listeners).
 */
static void ipoib_publish_bcast(struct ipoib_dev_priv *priv)
{
	struct net_device *dev = priv->dev;
	u8 addr[INFINIBAND_ALEN];
	int ret;

	ASSERT_RTNL();
	ipoib_build_bcast_addr(priv, addr);
	if (!memcmp(dev->broadcast, addr, INFINIBAND_ALEN))
		return;
	ret = notifier_to_errno(call_netdevice_notifiers(NETDEV_PRE_TYPE_CHANGE,
							 dev));
	/*
	 * The P_Key changed whatever an upper device says. The handlers that
	 * ran before a refusal have unmapped their lists: the second call
	 * maps them again (mapping twice is a no-op for IPv4 and IPv6).
	 */
	if (ret)
		netdev_warn(dev, "an upper device objects to the new broadcast address (%d)\n",
			    ret);
	memcpy(dev->broadcast, addr, INFINIBAND_ALEN);
	call_netdevice_notifiers(NETDEV_POST_TYPE_CHANGE, dev);
}

static void ipoib_mcast_kick(struct ipoib_dev_priv *priv)
{
	mod_delayed_work(priv->wq, &priv->mcast_work, 0);
}

static struct ipoib_mcast *ipoib_mcast_alloc(struct ipoib_dev_priv *priv,
					     const union ib_gid *mgid,
					     gfp_t gfp)
{
	struct ipoib_mcast *mc = kzalloc(sizeof(*mc), gfp);

	if (!mc)
		return NULL;
	mc->mgid = *mgid;
	mc->priv = priv;
	mc->state = IPOIB_MCAST_IDLE;
	mc->last_used = jiffies;
	spin_lock_init(&mc->lock);
	skb_queue_head_init(&mc->pending);
	return mc;
}

/* Publish @mc; returns the group already there, @mc, or NULL. */
static struct ipoib_mcast *ipoib_mcast_insert(struct ipoib_dev_priv *priv,
					      struct ipoib_mcast *mc)
{
	struct ipoib_mcast *old;

	spin_lock_bh(&priv->table_lock);
	if (!test_bit(IPOIB_FLAG_ADMIN_UP, &priv->flags)) {
		spin_unlock_bh(&priv->table_lock);
		kfree(mc);
		return NULL;
	}
	old = rhashtable_lookup_get_insert_fast(&priv->mcasts, &mc->node,
						ipoib_mcast_params);
	if (!old)
		list_add_tail_rcu(&mc->list, &priv->mcast_list);
	spin_unlock_bh(&priv->table_lock);
	if (old) {
		kfree(mc);
		return IS_ERR(old) ? NULL : old;
	}
	return mc;
}

/* Drop the packets waiting for the join; returns how many. */
static unsigned int ipoib_mcast_drop_pending(struct ipoib_dev_priv *priv,
					     struct ipoib_mcast *mc)
{
	struct sk_buff_head drop;
	struct sk_buff *skb;
	unsigned int n;

	__skb_queue_head_init(&drop);
	spin_lock_bh(&mc->lock);
	skb_queue_splice_init(&mc->pending, &drop);
	spin_unlock_bh(&mc->lock);
	n = skb_queue_len(&drop);
	while ((skb = __skb_dequeue(&drop)))
		ipoib_count_tx_drop(priv, skb);
	return n;
}

/* Multicast transmit. @skb starts at the encapsulation header. */
void ipoib_mcast_xmit(struct ipoib_dev_priv *priv, struct sk_buff *skb,
		      const union ib_gid *mgid)
{
	struct ipoib_mcast *mc;
	struct ipoib_ah *ah;
	bool queued = false;

	rcu_read_lock();
	mc = rhashtable_lookup(&priv->mcasts, mgid, ipoib_mcast_params);
	if (unlikely(!mc)) {
		mc = ipoib_mcast_alloc(priv, mgid, GFP_ATOMIC);
		if (mc)
			mc = ipoib_mcast_insert(priv, mc);
		if (!mc)
			goto drop;
		ipoib_dbg_mcast(priv->dev, "send-only group %pI6\n", mgid->raw);
	}
	ipoib_touch(&mc->last_used);

	ah = ipoib_ah_get_rcu(&mc->ah);
	if (likely(ah)) {
		rcu_read_unlock();
		ipoib_count(priv, IPOIB_CTR_TX_MCAST);
		ipoib_dp_send(priv, skb, ah, IB_MULTICAST_QPN);
		return;
	}

	spin_lock_bh(&mc->lock);
	/*
	 * The join may have completed since the look above: the AH is set
	 * under this lock before the pending queue is flushed, so a packet
	 * queued after that flush would wait for a flush that never comes.
	 */
	ah = ipoib_ah_get_rcu(&mc->ah);
	if (ah) {
		spin_unlock_bh(&mc->lock);
		rcu_read_unlock();
		ipoib_count(priv, IPOIB_CTR_TX_MCAST);
		ipoib_dp_send(priv, skb, ah, IB_MULTICAST_QPN);
		return;
	}
	if (skb_queue_len(&mc->pending) < IPOIB_MCAST_QUEUE_LEN) {
		skb_push(skb, IPOIB_PSEUDO_LEN);
		__skb_queue_tail(&mc->pending, skb);
		queued = true;
	}
	spin_unlock_bh(&mc->lock);
	if (queued) {
		ipoib_mcast_kick(priv);
		rcu_read_unlock();
		return;
	}
	ipoib_count(priv, IPOIB_CTR_DROP_MCAST_QUEUE_FULL);
drop:
	rcu_read_unlock();
	ipoib_count_tx_drop(priv, skb);
}

static int ipoib_mcast_join_done(int status, struct ib_sa_multicast *sa_mc)
{
	struct ipoib_mcast *mc = sa_mc->context;
	struct ipoib_dev_priv *priv = mc->priv;

	spin_lock_bh(&mc->lock);
	mc->have_result = true;
	mc->result_status = status;
	if (!status)
		mc->result = sa_mc->rec;
	spin_unlock_bh(&mc->lock);
	ipoib_mcast_kick(priv);
	/* Never let the core free it: ipoib_mcast_leave() does. */
	return 0;
}

static void ipoib_mcast_backoff(struct ipoib_mcast *mc)
{
	if (!mc->backoff_ms)
		mc->backoff_ms = IPOIB_MCAST_BACKOFF_MS;
	else
		mc->backoff_ms = min(mc->backoff_ms * 2,
				     IPOIB_MCAST_BACKOFF_MAX_MS);
	mc->retry_at = jiffies + msecs_to_jiffies(mc->backoff_ms);
	mc->state = IPOIB_MCAST_BACKOFF;
}

static void ipoib_mcast_join(struct ipoib_dev_priv *priv,
			     struct ipoib_mcast *mc)
{
	const struct ib_sa_mcmember_rec *b = &priv->bcast_rec;
	struct ib_sa_mcmember_rec rec = {};
	struct ib_sa_multicast *sa_mc;
	ib_sa_comp_mask mask;

	lockdep_assert_held(&priv->mcast_mutex);
	rec.mgid = mc->mgid;
	rec.port_gid = priv->local_gid;
	rec.pkey = cpu_to_be16(priv->pkey);
	mask = IB_SA_MCMEMBER_REC_MGID | IB_SA_MCMEMBER_REC_PORT_GID |
	       IB_SA_MCMEMBER_REC_PKEY | IB_SA_MCMEMBER_REC_JOIN_STATE;
	mc->sendonly = !mc->member;
	rec.join_state = mc->sendonly ? IPOIB_JOIN_SENDONLY_FULL :
					IPOIB_JOIN_FULL_MEMBER;
	if (mc != priv->bcast) {
		/* RFC 4391: same Q_Key, P_Key, SL, MTU, hop limit as broadcast. */
		rec.qkey = b->qkey;
		rec.mtu_selector = IB_SA_EQ;
		rec.mtu = b->mtu;
		rec.traffic_class = b->traffic_class;
		rec.rate_selector = IB_SA_EQ;
		rec.rate = b->rate;
		rec.sl = b->sl;
		rec.flow_label = b->flow_label;
		rec.hop_limit = b->hop_limit;
		mask |= IB_SA_MCMEMBER_REC_QKEY |
			IB_SA_MCMEMBER_REC_MTU_SELECTOR |
			IB_SA_MCMEMBER_REC_MTU |
			IB_SA_MCMEMBER_REC_TRAFFIC_CLASS |
			IB_SA_MCMEMBER_REC_RATE_SELECTOR |
			IB_SA_MCMEMBER_REC_RATE |
			IB_SA_MCMEMBER_REC_SL |
			IB_SA_MCMEMBER_REC_FLOW_LABEL |
			IB_SA_MCMEMBER_REC_HOP_LIMIT;
	}

	ipoib_dbg_mcast(priv->dev, "joining %pI6 (%s)\n", mc->mgid.raw,
			mc->sendonly ? "send-only" : "full member");
	mc->state = IPOIB_MCAST_JOINING;
	sa_mc = ib_sa_join_multicast(&ipoib_sa_client, priv->ca, priv->port,
				     &rec, mask, GFP_KERNEL,
				     ipoib_mcast_join_done, mc);
	if (IS_ERR(sa_mc)) {
		ipoib_dbg_mcast(priv->dev, "join %pI6 failed to start: %ld\n",
				mc->mgid.raw, PTR_ERR(sa_mc));
		ipoib_mcast_backoff(mc);
		return;
	}
	mc->sa_mc = sa_mc;
}

/* Undo a join: free the SA membership and detach the QP. */
static void ipoib_mcast_leave(struct ipoib_dev_priv *priv,
			      struct ipoib_mcast *mc)
{
	lockdep_assert_held(&priv->mcast_mutex);
	if (mc->sa_mc) {
		ib_sa_free_multicast(mc->sa_mc);
		mc->sa_mc = NULL;
	}
	if (mc->attached) {
		if (ipoib_dp_detach(priv, &mc->mgid, mc->mlid))
			ipoib_dbg_mcast(priv->dev, "detach %pI6 failed\n",
					mc->mgid.raw);
		mc->attached = false;
	}
	spin_lock_bh(&mc->lock);
	mc->have_result = false;
	spin_unlock_bh(&mc->lock);
	mc->state = IPOIB_MCAST_IDLE;
}

/* An answer from the SA that refuses, not one that never came. */
static bool ipoib_sa_refused(int status)
{
	return status != -ETIMEDOUT && status != -EAGAIN &&
	       status != -EBUSY && status != -EINTR;
}

static void ipoib_mcast_join_failed(struct ipoib_dev_priv *priv,
				    struct ipoib_mcast *mc, int status)
{
	if (status != -ENETRESET)
		ipoib_warn_ratelimited(priv, IPOIB_RL_JOIN,
				       "joining group %pI6 failed: %d\n",
				       mc->mgid.raw, status);
	ipoib_mcast_leave(priv, mc);
	if (status == -ENETRESET) {
		/* The SA forgot us (port error, reregister): join again now. */
		mc->backoff_ms = 0;
		mc->state = IPOIB_MCAST_IDLE;
		return;
	}
	/*
	 * The SA refused the broadcast group (an error status): no carrier,
	 * since ARP and ND cannot work; the next successful join sets it
	 * again. An SA that does not answer (timeout, busy) refuses nothing:
	 * traffic on the address handles we have goes on meanwhile.
	 */
	if (mc == priv->bcast && ipoib_sa_refused(status) &&
	    test_and_clear_bit(IPOIB_FLAG_BCAST_READY, &priv->flags))
		queue_delayed_work(priv->wq, &priv->carrier_work, 0);
	ipoib_mcast_backoff(mc);
	atomic_long_add(ipoib_mcast_drop_pending(priv, mc),
			&priv->counters[IPOIB_CTR_DROP_SA_FAILURE]);
}

static int ipoib_mcast_make_ah(struct ipoib_dev_priv *priv,
			       struct ipoib_mcast *mc,
			       struct ib_sa_mcmember_rec *rec)
{
	struct rdma_ah_attr attr = {};
	struct ipoib_ah *ah, *old;

	attr.type = rdma_ah_find_type(priv->ca, priv->port);
	rdma_ah_set_dlid(&attr, be16_to_cpu(rec->mlid));
	rdma_ah_set_sl(&attr, rec->sl);
	rdma_ah_set_port_num(&attr, priv->port);
	rdma_ah_set_static_rate(&attr, rec->rate);
	/* our GID, the port's or the alias GUID's (ipoib_set_mac_address()) */
	rdma_ah_set_grh(&attr, &rec->mgid, be32_to_cpu(rec->flow_label),
			READ_ONCE(priv->gid_index), rec->hop_limit,
			rec->traffic_class);
	ah = ipoib_ah_create(priv, &attr);
	if (IS_ERR(ah))
		return PTR_ERR(ah);

	spin_lock_bh(&mc->lock);
	old = rcu_replace_pointer(mc->ah, ah, lockdep_is_held(&mc->lock));
	spin_unlock_bh(&mc->lock);
	ipoib_ah_put(old);
	return 0;
}

static void ipoib_mcast_joined(struct ipoib_dev_priv *priv,
			       struct ipoib_mcast *mc,
			       struct ib_sa_mcmember_rec *rec)
{
	struct sk_buff_head flush;
	struct sk_buff *skb;
	int ret;

	if (mc == priv->bcast) {
		/* -1 for a value that is no enum ib_mtu (e.g. 0) */
		int mtu = ib_mtu_enum_to_int(rec->mtu);
		u16 mlid = be16_to_cpu(rec->mlid);
		u32 qkey = be32_to_cpu(rec->qkey);

		if (mtu <= IPOIB_ENCAP_LEN || mlid < IPOIB_MLID_MIN ||
		    mlid > IPOIB_MLID_MAX) {
			ipoib_warn_ratelimited(priv, IPOIB_RL_BCAST_REC,
					       "bad broadcast group record: mtu %u mlid 0x%04x\n",
					       rec->mtu, mlid);
			ipoib_mcast_join_failed(priv, mc, -EINVAL);
			return;
		}
		if (priv->qkey && qkey != priv->qkey)
			ipoib_warn_ratelimited(priv, IPOIB_RL_BCAST_REC,
					       "broadcast group Q_Key changed 0x%08x -> 0x%08x\n",
					       priv->qkey, qkey);
		priv->bcast_rec = *rec;
		WRITE_ONCE(priv->mcast_mtu,
			   min_t(u32, mtu, priv->max_ib_mtu) - IPOIB_ENCAP_LEN);
		ret = ipoib_dp_set_qkey(priv, qkey);
		if (ret) {
			netdev_warn(priv->dev, "setting the Q_Key failed: %d\n",
				    ret);
			ipoib_mcast_join_failed(priv, mc, ret);
			return;
		}
	}

	if (!mc->sendonly && !mc->attached) {
		ret = ipoib_dp_attach(priv, &rec->mgid, be16_to_cpu(rec->mlid),
				      mc == priv->bcast);
		if (ret) {
			ipoib_warn_ratelimited(priv, IPOIB_RL_ATTACH,
					       "cannot attach the QP to group %pI6: %d\n",
					       rec->mgid.raw, ret);
			ipoib_mcast_join_failed(priv, mc, ret);
			return;
		}
		mc->attached = true;
	}
	mc->mlid = be16_to_cpu(rec->mlid);
	mc->rec = *rec;

	ret = ipoib_mcast_make_ah(priv, mc, rec);
	if (ret) {
		ipoib_mcast_join_failed(priv, mc, ret);
		return;
	}
	mc->state = IPOIB_MCAST_JOINED;
	mc->joined_at = jiffies;
	mc->backoff_ms = 0;
	ipoib_dbg_mcast(priv->dev, "joined %pI6 mlid 0x%04x\n", mc->mgid.raw,
			mc->mlid);

	if (mc == priv->bcast) {
		/* Carrier on, and the MTU follows the group's (it may change). */
		set_bit(IPOIB_FLAG_BCAST_READY, &priv->flags);
		queue_delayed_work(priv->wq, &priv->carrier_work, 0);
	}

	__skb_queue_head_init(&flush);
	spin_lock_bh(&mc->lock);
	skb_queue_splice_init(&mc->pending, &flush);
	spin_unlock_bh(&mc->lock);
	while ((skb = __skb_dequeue(&flush)))
		ipoib_requeue_xmit(priv, skb);
}

static void ipoib_mcast_take_result(struct ipoib_dev_priv *priv,
				    struct ipoib_mcast *mc)
{
	struct ib_sa_mcmember_rec rec;
	bool have;
	int status;

	spin_lock_bh(&mc->lock);
	have = mc->have_result;
	mc->have_result = false;
	status = mc->result_status;
	rec = mc->result;
	spin_unlock_bh(&mc->lock);
	if (!have || !mc->sa_mc)
		return;
	if (status)
		ipoib_mcast_join_failed(priv, mc, status);
	else
		ipoib_mcast_joined(priv, mc, &rec);
}

/* Make group membership follow the netdev's multicast list. */
static void ipoib_mcast_sync_list(struct ipoib_dev_priv *priv)
{
	struct net_device *dev = priv->dev;
	struct netdev_hw_addr *ha;
	struct ipoib_mcast *mc;
	union ib_gid *gids;
	int n = 0, i;

	lockdep_assert_held(&priv->mcast_mutex);
	if (!test_and_clear_bit(IPOIB_FLAG_MC_DIRTY, &priv->flags))
		return;

	netif_addr_lock_bh(dev);
	gids = kmalloc_array(netdev_mc_count(dev) ?: 1, sizeof(*gids),
			     GFP_ATOMIC);
	if (gids) {
		netdev_for_each_mc_addr(ha, dev) {
			if (ha->addr[4] != 0xff)
				continue;
			memcpy(&gids[n], ha->addr + 4, sizeof(*gids));
			ipoib_mgid_set_pkey(priv, gids[n++].raw);
		}
	}
	netif_addr_unlock_bh(dev);
	if (!gids) {
		set_bit(IPOIB_FLAG_MC_DIRTY, &priv->flags);
		return;
	}

	for_each_mcast(mc, &priv->mcast_list, &priv->mcast_mutex)
		mc->in_mc_list = false;
	for (i = 0; i < n; i++) {
		struct ib_sa_mcmember_rec rec;

		mc = rhashtable_lookup_fast(&priv->mcasts, &gids[i],
					    ipoib_mcast_params);
		/*
		 * umcast: a group that someone else on this port (user space,
		 * through rdma_cm) already joined through the SA is theirs;
		 * we neither join it nor leave it.
		 */
		if (READ_ONCE(priv->umcast) && (!mc || !mc->member) &&
		    !ib_sa_get_mcmember_rec(priv->ca, priv->port, &gids[i], &rec))
			continue;
		if (!mc) {
			mc = ipoib_mcast_alloc(priv, &gids[i], GFP_KERNEL);
			if (mc)
				mc = ipoib_mcast_insert(priv, mc);
			if (!mc)
				continue;
		}
		mc->in_mc_list = true;
	}
	kfree(gids);

	for_each_mcast(mc, &priv->mcast_list, &priv->mcast_mutex) {
		bool member = mc == priv->bcast || mc->in_mc_list;

		if (member == mc->member)
			continue;
		mc->member = member;
		if (!member) {
			/* Sending to it again makes a new send-only group. */
			mc->unwanted = true;
			continue;
		}
		/*
		 * Back before the work got to leave it (say the port was
		 * down meanwhile): wanted again, and still joined as it was.
		 */
		mc->unwanted = false;
		/* Joined send-only: leave and join again as full member. */
		if (mc->state != IPOIB_MCAST_IDLE && mc->sendonly)
			mc->rejoin = true;
	}
}

static void ipoib_mcast_unlink(struct ipoib_dev_priv *priv,
			       struct ipoib_mcast *mc, struct list_head *dead)
{
	lockdep_assert_held(&priv->mcast_mutex);
	ipoib_mcast_leave(priv, mc);
	spin_lock_bh(&priv->table_lock);
	rhashtable_remove_fast(&priv->mcasts, &mc->node, ipoib_mcast_params);
	list_del_rcu(&mc->list);
	spin_unlock_bh(&priv->table_lock);
	list_add(&mc->free_list, dead);
	if (mc == priv->bcast)
		priv->bcast = NULL;
}

static void ipoib_mcast_free_list(struct ipoib_dev_priv *priv,
				  struct list_head *dead)
{
	struct ipoib_mcast *mc, *tmp;

	if (list_empty(dead))
		return;
	synchronize_rcu();
	list_for_each_entry_safe(mc, tmp, dead, free_list) {
		ipoib_mcast_drop_pending(priv, mc);
		ipoib_ah_put(rcu_dereference_protected(mc->ah, 1));
		kfree(mc);
	}
}

static bool ipoib_mcast_may_join(struct ipoib_mcast *mc)
{
	return mc->state == IPOIB_MCAST_IDLE ||
	       (mc->state == IPOIB_MCAST_BACKOFF &&
		!time_before(jiffies, mc->retry_at));
}

static void ipoib_mcast_earliest(unsigned long *next, unsigned long at)
{
	if (time_before(at, *next))
		*next = at;
}

/* Collect what the SA callbacks recorded since the last run. */
static void ipoib_mcast_take_results(struct ipoib_dev_priv *priv)
{
	struct ipoib_mcast *mc;

	for_each_mcast(mc, &priv->mcast_list, &priv->mcast_mutex)
		ipoib_mcast_take_result(priv, mc);
}

/* Leave the groups marked for rejoin; they are joined again below. */
static void ipoib_mcast_leave_rejoins(struct ipoib_dev_priv *priv)
{
	struct ipoib_mcast *mc;

	for_each_mcast(mc, &priv->mcast_list, &priv->mcast_mutex) {
		if (mc->rejoin) {
			mc->rejoin = false;
			ipoib_mcast_leave(priv, mc);
		}
	}
}

/* Join the broadcast group; true if the work must run again by @next. */
static bool ipoib_mcast_join_bcast(struct ipoib_dev_priv *priv,
				   unsigned long *next)
{
	struct ipoib_mcast *bcast = priv->bcast;

	if (ipoib_mcast_may_join(bcast))
		ipoib_mcast_join(priv, bcast);
	if (bcast->state != IPOIB_MCAST_BACKOFF)
		return false;
	ipoib_mcast_earliest(next, bcast->retry_at);
	return true;
}

/*
 * With the broadcast group joined: leave the groups nobody wants any more
 * (onto @dead), join the others. True if the work must run again by @next
 * (a back-off ends, a send-only group may go idle).
 */
static bool ipoib_mcast_join_groups(struct ipoib_dev_priv *priv,
				    struct list_head *dead, unsigned long *next)
{
	struct ipoib_mcast *mc, *tmp;
	bool resched = false;

	list_for_each_entry_safe(mc, tmp, &priv->mcast_list, list) {
		if (mc == priv->bcast)
			continue;
		if (mc->unwanted) {
			ipoib_mcast_unlink(priv, mc, dead);
			continue;
		}
		if (!mc->member) {
			unsigned long idle = READ_ONCE(mc->last_used) +
					     IPOIB_SENDONLY_IDLE;

			if (!time_before(jiffies, idle)) {
				ipoib_mcast_unlink(priv, mc, dead);
				continue;
			}
			resched = true;
			ipoib_mcast_earliest(next, idle);
		}
		if (ipoib_mcast_may_join(mc))
			ipoib_mcast_join(priv, mc);
		if (mc->state == IPOIB_MCAST_BACKOFF) {
			resched = true;
			ipoib_mcast_earliest(next, mc->retry_at);
		}
	}
	return resched;
}

void ipoib_mcast_task(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(to_delayed_work(work),
						   struct ipoib_dev_priv,
						   mcast_work);
	unsigned long next = jiffies + 30 * HZ;
	bool resched = false;
	LIST_HEAD(dead);

	mutex_lock(&priv->mcast_mutex);
	if (!test_bit(IPOIB_FLAG_ADMIN_UP, &priv->flags) || !priv->bcast)
		goto out;

	ipoib_mcast_take_results(priv);
	ipoib_mcast_sync_list(priv);
	resched = test_bit(IPOIB_FLAG_MC_DIRTY, &priv->flags);
	ipoib_mcast_leave_rejoins(priv);

	if (!test_bit(IPOIB_FLAG_PORT_ACTIVE, &priv->flags) ||
	    !test_bit(IPOIB_FLAG_RUNNING, &priv->flags))
		goto out;
	/* every other group copies the broadcast group's parameters */
	if (priv->bcast->state != IPOIB_MCAST_JOINED)
		resched |= ipoib_mcast_join_bcast(priv, &next);
	else
		resched |= ipoib_mcast_join_groups(priv, &dead, &next);

out:
	if (resched && test_bit(IPOIB_FLAG_ADMIN_UP, &priv->flags))
		queue_delayed_work(priv->wq, &priv->mcast_work,
				   time_after(next, jiffies) ? next - jiffies : 0);
	mutex_unlock(&priv->mcast_mutex);
	ipoib_mcast_free_list(priv, &dead);
}

/* Leave and join every group again (fabric event, QP restart). */
void ipoib_mcast_rejoin_all(struct ipoib_dev_priv *priv)
{
	struct ipoib_mcast *mc;

	mutex_lock(&priv->mcast_mutex);
	for_each_mcast(mc, &priv->mcast_list, &priv->mcast_mutex) {
		mc->rejoin = true;
		mc->backoff_ms = 0;
	}
	mutex_unlock(&priv->mcast_mutex);
	ipoib_mcast_kick(priv);
}

/* ndo_open, resync: create the broadcast group and start joining. */
void ipoib_mcast_start(struct ipoib_dev_priv *priv)
{
	u8 bcast[INFINIBAND_ALEN];
	struct ipoib_mcast *mc;

	lockdep_assert_held(&priv->op_mutex);
	ipoib_build_bcast_addr(priv, bcast);
	mc = ipoib_mcast_alloc(priv, (union ib_gid *)(bcast + 4), GFP_KERNEL);
	if (mc) {
		mc->member = true;
		mc = ipoib_mcast_insert(priv, mc);
	}
	mutex_lock(&priv->mcast_mutex);
	priv->bcast = mc;
	mutex_unlock(&priv->mcast_mutex);
	if (!mc)
		netdev_err(priv->dev, "no memory for the broadcast group\n");
	set_bit(IPOIB_FLAG_MC_DIRTY, &priv->flags);
	ipoib_mcast_kick(priv);
}

/*
 * ndo_stop, resync: leave every group. The multicast work is already
 * cancelled; op_mutex keeps the QP we detach from.
 */
void ipoib_mcast_stop(struct ipoib_dev_priv *priv)
{
	struct ipoib_mcast *mc, *tmp;
	LIST_HEAD(dead);

	lockdep_assert_held(&priv->op_mutex);

	mutex_lock(&priv->mcast_mutex);
	list_for_each_entry_safe(mc, tmp, &priv->mcast_list, list)
		ipoib_mcast_unlink(priv, mc, &dead);
	priv->bcast = NULL;
	clear_bit(IPOIB_FLAG_BCAST_READY, &priv->flags);
	mutex_unlock(&priv->mcast_mutex);
	ipoib_mcast_free_list(priv, &dead);
}

/* Is the broadcast group joined, by a join that completed after @t? */
bool ipoib_mcast_bcast_joined_since(struct ipoib_dev_priv *priv,
				    unsigned long t)
{
	bool joined;

	mutex_lock(&priv->mcast_mutex);
	joined = priv->bcast && priv->bcast->state == IPOIB_MCAST_JOINED &&
		 !time_before(priv->bcast->joined_at, t);
	mutex_unlock(&priv->mcast_mutex);
	return joined;
}

/* Carrier and MTU follow the port and the broadcast group. */
void ipoib_carrier_task(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(to_delayed_work(work),
						   struct ipoib_dev_priv,
						   carrier_work);
	struct net_device *dev = priv->dev;
	bool up;

	if (!rtnl_trylock()) {
		queue_delayed_work(priv->wq, &priv->carrier_work, HZ / 50);
		return;
	}
	up = test_bit(IPOIB_FLAG_ADMIN_UP, &priv->flags) &&
	     test_bit(IPOIB_FLAG_PORT_ACTIVE, &priv->flags) &&
	     test_bit(IPOIB_FLAG_BCAST_READY, &priv->flags);
	if (up) {
		u32 mtu = min(priv->admin_mtu, priv->cm_mode ? IPOIB_CM_MTU :
			      READ_ONCE(priv->mcast_mtu));

		if (dev->mtu != mtu) {
			priv->mtu_internal = true;
			if (dev_set_mtu(dev, mtu))
				netdev_warn(dev, "cannot set MTU %u\n", mtu);
			priv->mtu_internal = false;
		}
		if (!netif_carrier_ok(dev))
			netdev_info(dev, "broadcast group joined, carrier on\n");
		netif_carrier_on(dev);
	} else {
		netif_carrier_off(dev);
	}
	ipoib_publish_bcast(priv);
	ipoib_publish_addr(priv, up);
	rtnl_unlock();
}

int ipoib_mcast_init(struct ipoib_dev_priv *priv)
{
	mutex_init(&priv->mcast_mutex);
	INIT_LIST_HEAD(&priv->mcast_list);
	INIT_DELAYED_WORK(&priv->mcast_work, ipoib_mcast_task);
	INIT_DELAYED_WORK(&priv->carrier_work, ipoib_carrier_task);
	return rhashtable_init(&priv->mcasts, &ipoib_mcast_params);
}

void ipoib_mcast_cleanup(struct ipoib_dev_priv *priv)
{
	rhashtable_destroy(&priv->mcasts);
}
