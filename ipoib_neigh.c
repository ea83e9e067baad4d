// SPDX-License-Identifier: GPL-2.0
/*
 * Private neighbour state: what xmit needs for one unicast link-layer
 * address (QPN + GID). ARP/ND resolve the 20-byte address; header_ops
 * carries it to xmit in a pseudo header; xmit finds the entry here with
 * one RCU hash lookup and reaches the path, which owns the address handle.
 *
 * An entry lives as long as a kernel neighbour with that address is alive
 * and in use: ndo_neigh_destroy removes it, and the periodic GC removes
 * entries no packet used for IPOIB_NEIGH_IDLE. A removed entry is freed
 * after a grace period; the next packet to that address simply creates a
 * new one and finds the cached path again, without any SA query.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <rdma/ib_cache.h>
#include "ipoib.h"

#define IPOIB_NEIGH_IDLE	(120 * HZ)
/* under path pressure: a neighbour of a failed path unused this long */
#define IPOIB_NEIGH_FAILED_IDLE	(2 * HZ)

static const struct rhashtable_params ipoib_neigh_params = {
	.key_len = sizeof(struct ipoib_neigh_key),
	.key_offset = offsetof(struct ipoib_neigh, key),
	.head_offset = offsetof(struct ipoib_neigh, node),
	.automatic_shrinking = true,
};

static void ipoib_neigh_make_key(struct ipoib_neigh_key *key, const u8 *addr)
{
	BUILD_BUG_ON(sizeof(*key) != INFINIBAND_ALEN);
	memcpy(key, addr, sizeof(*key));
	/* The flags octet is reserved on receive (RFC 4391, RFC 4755). */
	key->qpn &= cpu_to_be32(IPOIB_QPN_MASK);
}

static struct ipoib_neigh *ipoib_neigh_create(struct ipoib_dev_priv *priv,
					      const struct ipoib_neigh_key *key)
{
	struct ipoib_neigh *neigh, *old;
	struct ipoib_path *path;

	neigh = kzalloc(sizeof(*neigh), GFP_ATOMIC);
	if (!neigh)
		return NULL;
	neigh->key = *key;
	neigh->last_used = jiffies;

	spin_lock_bh(&priv->table_lock);
	if (!test_bit(IPOIB_FLAG_RUNNING, &priv->flags)) {
		old = NULL;
		goto err_unlock;
	}
	path = ipoib_path_get_or_create(priv, &key->gid);
	if (!path) {
		old = NULL;
		goto err_unlock;
	}
	neigh->path = path;
	old = rhashtable_lookup_get_insert_fast(&priv->neighs, &neigh->node,
						ipoib_neigh_params);
	if (old) {
		path->nr_neigh--;
		goto err_unlock;
	}
	list_add(&neigh->list, &priv->neigh_list);
	spin_unlock_bh(&priv->table_lock);
	ipoib_dbg(priv->dev, "new neighbour qpn 0x%06x gid %pI6\n",
		  be32_to_cpu(key->qpn), key->gid.raw);
	return neigh;

err_unlock:
	spin_unlock_bh(&priv->table_lock);
	kfree(neigh);
	return IS_ERR(old) ? NULL : old;
}

/* Unicast transmit. @skb starts at the encapsulation header. */
void ipoib_neigh_xmit(struct ipoib_dev_priv *priv, struct sk_buff *skb,
		      const u8 *daddr)
{
	struct ipoib_neigh_key key;
	struct ipoib_neigh *neigh;

	ipoib_neigh_make_key(&key, daddr);
	rcu_read_lock();
	neigh = rhashtable_lookup(&priv->neighs, &key, ipoib_neigh_params);
	if (unlikely(!neigh)) {
		neigh = ipoib_neigh_create(priv, &key);
		if (!neigh) {
			rcu_read_unlock();
			ipoib_count_tx_drop(priv, skb);
			return;
		}
	}
	ipoib_touch(&neigh->last_used);
	if (!ipoib_cm_xmit(priv, neigh, skb, daddr) &&
	    !ipoib_ud_too_big(priv, skb))
		ipoib_path_xmit(neigh->path, skb, be32_to_cpu(key.qpn));
	rcu_read_unlock();
}

static void ipoib_neigh_unlink(struct ipoib_dev_priv *priv,
			       struct ipoib_neigh *neigh)
{
	lockdep_assert_held(&priv->table_lock);
	rhashtable_remove_fast(&priv->neighs, &neigh->node, ipoib_neigh_params);
	list_del(&neigh->list);
	ipoib_cm_neigh_gone(neigh);
	neigh->path->nr_neigh--;
	WRITE_ONCE(neigh->path->last_used, jiffies);
	kfree_rcu(neigh, rcu);
}

/*
 * ndo_neigh_destroy: the kernel is freeing a neighbour of this device. Our
 * entry for its address goes too (a neighbour of the other address family
 * with the same address recreates it on its next packet, cheaply).
 */
void ipoib_neigh_destroy(struct net_device *dev, struct neighbour *n)
{
	struct ipoib_dev_priv *priv = ipoib_priv(dev);
	struct ipoib_neigh_key key;
	struct ipoib_neigh *neigh;

	ipoib_neigh_make_key(&key, n->ha);
	spin_lock_bh(&priv->table_lock);
	neigh = rhashtable_lookup_fast(&priv->neighs, &key, ipoib_neigh_params);
	if (neigh) {
		ipoib_dbg(dev, "neighbour %pI6 qpn 0x%06x released\n",
			  key.gid.raw, be32_to_cpu(key.qpn));
		ipoib_neigh_unlink(priv, neigh);
	}
	spin_unlock_bh(&priv->table_lock);
}

/* Remove every entry (interface going down). */
void ipoib_neigh_flush(struct ipoib_dev_priv *priv)
{
	struct ipoib_neigh *neigh, *tmp;

	spin_lock_bh(&priv->table_lock);
	list_for_each_entry_safe(neigh, tmp, &priv->neigh_list, list)
		ipoib_neigh_unlink(priv, neigh);
	spin_unlock_bh(&priv->table_lock);
}

void ipoib_neigh_gc(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(to_delayed_work(work),
						   struct ipoib_dev_priv,
						   gc_work);
	struct ipoib_neigh *neigh, *tmp;
	unsigned long last;
	bool pressure;
	union ib_gid gid;

	/*
	 * Too many paths wait for the SA (ipoib_path_get_or_create): the
	 * neighbours of paths that failed go once unused for a moment, and
	 * then those paths, so that new destinations get paths again.
	 */
	pressure = test_and_clear_bit(IPOIB_FLAG_PATH_PRESSURE, &priv->flags);
	spin_lock_bh(&priv->table_lock);
	list_for_each_entry_safe(neigh, tmp, &priv->neigh_list, list) {
		last = READ_ONCE(neigh->last_used);
		if (time_after(jiffies, last + IPOIB_NEIGH_IDLE) ||
		    (pressure && time_after(jiffies, last + IPOIB_NEIGH_FAILED_IDLE) &&
		     ipoib_path_has_failed(neigh->path)))
			ipoib_neigh_unlink(priv, neigh);
	}
	spin_unlock_bh(&priv->table_lock);

	ipoib_path_gc(priv, pressure);

	/*
	 * The IB core keeps an IB port's GID_CHANGE to itself: its cache
	 * takes the event and tells no client (cache.c, 6.1 and 6.12; only
	 * RoCE GID table changes reach clients). So look at our GID here too:
	 * a new subnet prefix is noticed within IPOIB_GC_INTERVAL. An unlocked
	 * look: the resync compares again under op_mutex.
	 */
	if (!rdma_query_gid(priv->ca, priv->port, READ_ONCE(priv->gid_index), &gid) &&
	    memcmp(&gid, &priv->local_gid, sizeof(gid)))
		ipoib_queue_resync(priv, IPOIB_RESYNC_GID);

	if (test_bit(IPOIB_FLAG_ADMIN_UP, &priv->flags))
		queue_delayed_work(priv->wq, &priv->gc_work, IPOIB_GC_INTERVAL);
}

int ipoib_neigh_init(struct ipoib_dev_priv *priv)
{
	INIT_LIST_HEAD(&priv->neigh_list);
	INIT_DELAYED_WORK(&priv->gc_work, ipoib_neigh_gc);
	return rhashtable_init(&priv->neighs, &ipoib_neigh_params);
}

void ipoib_neigh_cleanup(struct ipoib_dev_priv *priv)
{
	ipoib_neigh_flush(priv);
	rhashtable_destroy(&priv->neighs);
}
