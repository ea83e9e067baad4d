// SPDX-License-Identifier: GPL-2.0
/*
 * Address handles. Paths and multicast groups own one reference to their
 * current AH; every posted send owns one more. The AH is destroyed only
 * after the last reference is gone and an RCU grace period has passed, so
 * a sender that read the pointer under RCU can still take a reference or
 * see that it is dying.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "ipoib.h"

struct ipoib_ah *ipoib_ah_create(struct ipoib_dev_priv *priv,
				 struct rdma_ah_attr *attr)
{
	struct ipoib_ah *ah;
	struct ib_ah *ibah;

	might_sleep();
	ah = kzalloc(sizeof(*ah), GFP_KERNEL);
	if (!ah)
		return ERR_PTR(-ENOMEM);
	ibah = rdma_create_ah(priv->pd, attr, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(ibah)) {
		kfree(ah);
		return ERR_CAST(ibah);
	}
	ah->ibah = ibah;
	ah->priv = priv;
	refcount_set(&ah->ref, 1);
	return ah;
}

/* Take a reference on the AH in @slot, or return NULL. Caller holds RCU. */
struct ipoib_ah *ipoib_ah_get_rcu(struct ipoib_ah __rcu **slot)
{
	struct ipoib_ah *ah = rcu_dereference(*slot);

	if (ah && refcount_inc_not_zero(&ah->ref))
		return ah;
	return NULL;
}

/* Any context. */
void ipoib_ah_put(struct ipoib_ah *ah)
{
	struct ipoib_dev_priv *priv;

	if (!ah || !refcount_dec_and_test(&ah->ref))
		return;
	priv = ah->priv;
	llist_add(&ah->dead, &priv->dead_ahs);
	queue_work(priv->wq, &priv->ah_reap_work);
}

void ipoib_ah_reap(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(work, struct ipoib_dev_priv,
						   ah_reap_work);
	struct llist_node *list = llist_del_all(&priv->dead_ahs);
	struct ipoib_ah *ah, *tmp;

	if (!list)
		return;
	synchronize_rcu();
	llist_for_each_entry_safe(ah, tmp, list, dead) {
		rdma_destroy_ah(ah->ibah, RDMA_DESTROY_AH_SLEEPABLE);
		kfree(ah);
	}
}
