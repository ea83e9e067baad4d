// SPDX-License-Identifier: GPL-2.0
/*
 * Paths: one per destination GID, shared by all neighbours of that GID.
 * A path turns a GID into an address handle with one SA PathRecord query.
 * At most one query per path is outstanding; packets sent meanwhile wait
 * in a small bounded queue and are sent again when the AH exists. A failed
 * query (no record, timeout) drops the waiting packets, counts them, and
 * blocks further queries for an exponentially growing back-off, so a dead
 * destination costs a handful of SA queries, not one per packet.
 *
 * A refresh (fabric event) queries again while the old AH stays in use; the
 * new AH replaces it only when the new record is known, and the old one is
 * destroyed when its last in-flight send completes (see ipoib_ah.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "ipoib.h"

#define IPOIB_PATH_QUERY_MS	3000
#define IPOIB_PATH_BACKOFF_MS	3000
/*
 * First back-off after -EAGAIN from ib_sa: no query went out, ib_sa is
 * rebuilding its handle to the SM after a fabric event (LID change,
 * reregister), which takes well under a second.
 */
#define IPOIB_PATH_EAGAIN_MS	250
/* at most this long without asking: a returning SA is used within ~17 s */
#define IPOIB_PATH_BACKOFF_MAX_MS 16000
/* ipoib_path_check_slid(): one re-query per path in this time at most */
#define IPOIB_PATH_SLID_REQUERY	(10 * HZ)

/*
 * A path no neighbour uses is freed after this long unused (checked every
 * IPOIB_GC_INTERVAL). The in-tree driver keeps such paths until the
 * interface goes down; on a large fabric that is memory for every peer
 * ever talked to.
 */
static unsigned int ipoib_path_idle_s = 60;
module_param_named(path_idle, ipoib_path_idle_s, uint, 0644);
MODULE_PARM_DESC(path_idle,
		 "Seconds after which a path no neighbour uses is freed (default: 60, minimum 1)");

/*
 * At most this many paths that never resolved, per interface. Every frame
 * that names a new GID (an ARP request's sender hardware address, a
 * neighbour solicitation's) makes the kernel answer to it, which makes a
 * path and a PathRecord query here: a remote host that names a fresh
 * random GID in each frame would cost memory and SA queries at its packet
 * rate. Past the bound, a packet to yet another new GID is dropped and
 * counted (tx_drop_path_limit) until the SA has answered some of them and
 * the GC has freed the ones that failed (at its next pass, not after the
 * idle times, once the bound was met). A resolving path takes one SA
 * round trip, so only a burst to this many new destinations within one
 * round trip meets the bound legitimately; ARP and TCP send again.
 */
static unsigned int ipoib_path_pending_max = 4096;
module_param_named(path_pending_max, ipoib_path_pending_max, uint, 0644);
MODULE_PARM_DESC(path_pending_max,
		 "Paths to new GIDs that may wait for the SA at once per interface (default: 4096, minimum 1)");

static const struct rhashtable_params ipoib_path_params = {
	.key_len = sizeof(union ib_gid),
	.key_offset = offsetof(struct ipoib_path, dgid),
	.head_offset = offsetof(struct ipoib_path, node),
	.automatic_shrinking = true,
};

static void ipoib_path_work(struct work_struct *work);

/* Find or create the path to @dgid and count one more neighbour on it. */
struct ipoib_path *ipoib_path_get_or_create(struct ipoib_dev_priv *priv,
					    const union ib_gid *dgid)
{
	struct ipoib_path *path, *old;

	lockdep_assert_held(&priv->table_lock);
	path = rhashtable_lookup_fast(&priv->paths, dgid, ipoib_path_params);
	if (path) {
		path->nr_neigh++;
		return path;
	}

	if (atomic_read(&priv->paths_pending) >=
	    max(READ_ONCE(ipoib_path_pending_max), 1U)) {
		atomic_long_inc(&priv->counters[IPOIB_CTR_DROP_PATH_LIMIT]);
		set_bit(IPOIB_FLAG_PATH_PRESSURE, &priv->flags);
		ipoib_warn_ratelimited(priv, IPOIB_RL_PATH_LIMIT,
				       "%d paths wait for the SA (path_pending_max): packet to %pI6 dropped\n",
				       atomic_read(&priv->paths_pending), dgid->raw);
		return NULL;
	}
	path = kzalloc(sizeof(*path), GFP_ATOMIC);
	if (!path)
		return NULL;
	path->dgid = *dgid;
	path->priv = priv;
	path->last_used = jiffies;
	path->state = IPOIB_PATH_UNRESOLVED;
	INIT_DELAYED_WORK(&path->work, ipoib_path_work);
	INIT_LIST_HEAD(&path->refresh);
	spin_lock_init(&path->lock);
	skb_queue_head_init(&path->queue);

	old = rhashtable_lookup_get_insert_fast(&priv->paths, &path->node,
						ipoib_path_params);
	if (old) {
		kfree(path);
		return NULL;
	}
	list_add(&path->list, &priv->path_list);
	path->nr_neigh = 1;
	/* until its first AH: path->ah is never cleared before the free */
	atomic_inc(&priv->paths_pending);
	return path;
}

/*
 * A path whose query failed and that has no AH (FAILED is never set on a
 * path with one: a failed refresh keeps it RESOLVED). A racy look.
 */
bool ipoib_path_has_failed(struct ipoib_path *path)
{
	return READ_ONCE(path->state) == IPOIB_PATH_FAILED;
}

static void ipoib_path_drop_queue(struct ipoib_dev_priv *priv,
				  struct sk_buff_head *list)
{
	struct sk_buff *skb;

	while ((skb = __skb_dequeue(list))) {
		atomic_long_inc(&priv->path_drops);
		ipoib_count_tx_drop(priv, skb);
	}
}

/*
 * Give up on the current query: count the back-off up and move the waiting
 * packets to @drop, for ipoib_path_drop_failed() once the lock is dropped.
 */
static void ipoib_path_backoff_locked(struct ipoib_path *path, int status,
				      struct sk_buff_head *drop)
{
	struct ipoib_dev_priv *priv = path->priv;

	lockdep_assert_held(&path->lock);
	if (!path->backoff_ms)
		path->backoff_ms = status == -EAGAIN ? IPOIB_PATH_EAGAIN_MS :
			IPOIB_PATH_BACKOFF_MS;
	else
		path->backoff_ms = min(path->backoff_ms * 2,
				       IPOIB_PATH_BACKOFF_MAX_MS);
	path->retry_at = jiffies + msecs_to_jiffies(path->backoff_ms);
	/*
	 * A failed refresh keeps the old AH: it is still the best we know,
	 * and its senders do not ask for a query, so ask again ourselves
	 * once the back-off is over. (An unresolved path is asked for by
	 * its next packet.)
	 */
	if (!rcu_access_pointer(path->ah)) {
		path->state = IPOIB_PATH_FAILED;
	} else if (!path->dead) {
		path->want_query = true;
		queue_delayed_work(priv->wq, &path->work,
				   msecs_to_jiffies(path->backoff_ms));
	}
	skb_queue_splice_init(&path->queue, drop);
}

static void ipoib_path_drop_failed(struct ipoib_path *path, int status,
				   enum ipoib_counter why,
				   struct sk_buff_head *drop)
{
	struct ipoib_dev_priv *priv = path->priv;

	net_dbg_ratelimited("%s: no path to %pI6: %d, retry in %u ms\n",
			    priv->dev->name, path->dgid.raw, status,
			    READ_ONCE(path->backoff_ms));
	atomic_long_add(skb_queue_len(drop), &priv->counters[why]);
	ipoib_path_drop_queue(priv, drop);
}

static void ipoib_path_query_done(int status, struct sa_path_rec *resp,
				  IB_COMPAT_NUM_PRS num_prs, void *context);

/*
 * Send one PathRecord query for @path. Called with path->lock held, from
 * xmit (like every other first packet to a destination: no work item
 * between the packet and the fabric) or from the path work (refresh,
 * retry). ib_sa never calls back before this returns, and the callback
 * takes path->lock first, so it always finds the query's id stored. If no
 * query could be sent, the path backs off and its waiting packets move to
 * @failed, for ipoib_path_drop_failed().
 */
static int ipoib_path_start_locked(struct ipoib_path *path,
				   struct sk_buff_head *failed)
{
	struct ipoib_dev_priv *priv = path->priv;
	struct sa_path_rec req = {};
	struct ib_sa_query *query;
	int id;

	lockdep_assert_held(&path->lock);
	req.rec_type = SA_PATH_REC_TYPE_IB;
	req.dgid = path->dgid;
	req.sgid = priv->local_gid;
	req.numb_path = 1;
	req.pkey = cpu_to_be16(priv->pkey);
	req.traffic_class = priv->bcast_rec.traffic_class;

	id = ib_sa_path_rec_get(&ipoib_sa_client, priv->ca, priv->port, &req,
				IB_SA_PATH_REC_DGID | IB_SA_PATH_REC_SGID |
				IB_SA_PATH_REC_NUMB_PATH |
				IB_SA_PATH_REC_TRAFFIC_CLASS |
				IB_SA_PATH_REC_PKEY,
				IPOIB_PATH_QUERY_MS, GFP_ATOMIC,
				ipoib_path_query_done, path, &query);
	if (id < 0) {
		ipoib_path_backoff_locked(path, id, failed);
		return id;
	}
	path->want_query = false;
	path->querying = true;
	path->queries++;
	path->query_id = id;
	path->query = query;
	return 0;
}

/* Send on the path's AH (its reference passes on), unless too big for it. */
static void ipoib_path_send(struct ipoib_dev_priv *priv, struct sk_buff *skb,
			    struct ipoib_ah *ah, u32 qpn)
{
	if (unlikely(ah->thin_mtu) &&
	    ipoib_path_too_big(priv, skb, ah->thin_mtu)) {
		ipoib_ah_put(ah);
		return;
	}
	ipoib_dp_send(priv, skb, ah, qpn);
}

/*
 * How many packets @path may hold while it resolves (IPOIB_PATH_QUEUE_LEN);
 * nr_neigh is read without table_lock: it only sizes a bound.
 */
static unsigned int ipoib_path_queue_max(struct ipoib_path *path)
{
	unsigned int n = READ_ONCE(path->nr_neigh) * IPOIB_PATH_QUEUE_PER_NEIGH;

	return clamp_t(unsigned int, n, IPOIB_PATH_QUEUE_LEN, IPOIB_PATH_QUEUE_MAX);
}

/*
 * Send @skb (starting at the encapsulation header) on @path, or queue it
 * while the path resolves. Caller holds RCU (the path cannot be freed).
 */
void ipoib_path_xmit(struct ipoib_path *path, struct sk_buff *skb, u32 qpn)
{
	struct ipoib_dev_priv *priv = path->priv;
	enum ipoib_counter why = IPOIB_CTR_DROP_NO_PATH;
	struct sk_buff_head failed;
	struct ipoib_ah *ah;
	bool drop = false;
	int ret = 0;

	ipoib_touch(&path->last_used);

	ah = ipoib_ah_get_rcu(&path->ah);
	if (likely(ah)) {
		ipoib_path_send(priv, skb, ah, qpn);
		return;
	}

	__skb_queue_head_init(&failed);
	spin_lock_bh(&path->lock);
	/* The answer may have been installed since the look above. */
	ah = ipoib_ah_get_rcu(&path->ah);
	if (ah) {
		spin_unlock_bh(&path->lock);
		ipoib_path_send(priv, skb, ah, qpn);
		return;
	}
	if (path->state == IPOIB_PATH_FAILED) {
		if (time_before(jiffies, path->retry_at))
			drop = true;
		else
			path->state = IPOIB_PATH_UNRESOLVED;
	}
	if (!drop && skb_queue_len(&path->queue) >= ipoib_path_queue_max(path)) {
		drop = true;
		why = IPOIB_CTR_DROP_PATH_QUEUE_FULL;
	}
	if (!drop) {
		/* Queued in the form ndo_start_xmit receives it. */
		skb_push(skb, IPOIB_PSEUDO_LEN);
		__skb_queue_tail(&path->queue, skb);
		if (!path->querying && !path->dead)
			ret = ipoib_path_start_locked(path, &failed);
	}
	spin_unlock_bh(&path->lock);

	if (drop) {
		ipoib_count(priv, why);
		atomic_long_inc(&priv->path_drops);
		ipoib_count_tx_drop(priv, skb);
	}
	if (ret)
		ipoib_path_drop_failed(path, ret, IPOIB_CTR_DROP_SA_FAILURE,
				       &failed);
}

/* Connected mode's REQ needs the record: true if there is one. */
bool ipoib_path_copy_rec(struct ipoib_path *path, struct sa_path_rec *rec)
{
	bool ok;

	spin_lock_bh(&path->lock);
	ok = path->state == IPOIB_PATH_RESOLVED;
	if (ok)
		*rec = path->rec;
	spin_unlock_bh(&path->lock);
	return ok;
}

static void ipoib_path_failed(struct ipoib_path *path, int status,
			      enum ipoib_counter why)
{
	struct sk_buff_head drop;

	__skb_queue_head_init(&drop);
	spin_lock_bh(&path->lock);
	ipoib_path_backoff_locked(path, status, &drop);
	spin_unlock_bh(&path->lock);
	ipoib_path_drop_failed(path, status, why, &drop);
}

static void ipoib_path_install(struct ipoib_path *path,
			       struct sa_path_rec *rec)
{
	struct ipoib_dev_priv *priv = path->priv;
	struct rdma_ah_attr attr = {};
	struct sk_buff_head flush;
	struct ipoib_neigh *neigh;
	struct ipoib_ah *ah, *old;
	struct sk_buff *skb;
	u32 dlid, old_dlid;
	int mtu;
	int ret;

	ret = ib_init_ah_attr_from_path(priv->ca, priv->port, rec, &attr, NULL);
	if (ret) {
		ipoib_path_failed(path, ret, IPOIB_CTR_DROP_NO_AH);
		return;
	}
	ah = ipoib_ah_create(priv, &attr);
	rdma_destroy_ah_attr(&attr);
	if (IS_ERR(ah)) {
		/* the HCA refused: unlike an SA answer, worth telling the admin */
		ipoib_warn_ratelimited(priv, IPOIB_RL_AH,
				       "cannot create an address handle for %pI6: %ld\n",
				       path->dgid.raw, PTR_ERR(ah));
		ipoib_path_failed(path, PTR_ERR(ah), IPOIB_CTR_DROP_NO_AH);
		return;
	}

	/*
	 * A path narrower than the group (the SA takes the smallest link MTU
	 * on the route): UD packets over it would be dropped by a switch.
	 */
	mtu = ib_mtu_enum_to_int(rec->mtu);
	if (mtu > 0 && mtu - IPOIB_ENCAP_LEN < READ_ONCE(priv->mcast_mtu))
		ah->thin_mtu = mtu;

	__skb_queue_head_init(&flush);
	dlid = be32_to_cpu(sa_path_get_dlid(rec));
	if (dlid < IPOIB_LID_UNICAST_END)
		set_bit(dlid, priv->known_lids);
	spin_lock_bh(&path->lock);
	old = rcu_replace_pointer(path->ah, ah, lockdep_is_held(&path->lock));
	if (!old)	/* its first AH: no longer waiting for the SA */
		atomic_dec(&priv->paths_pending);
	old_dlid = old ? be32_to_cpu(sa_path_get_dlid(&path->rec)) : dlid;
	path->rec = *rec;
	path->state = IPOIB_PATH_RESOLVED;
	path->backoff_ms = 0;
	skb_queue_splice_init(&path->queue, &flush);
	spin_unlock_bh(&path->lock);
	ipoib_ah_put(old);

	ipoib_dbg(priv->dev, "path to %pI6: dlid 0x%x sl %u\n",
		  path->dgid.raw, be32_to_cpu(sa_path_get_dlid(rec)), rec->sl);
	/* the peer moved: connections over the old path go nowhere */
	if (old_dlid != dlid) {
		spin_lock_bh(&priv->table_lock);
		list_for_each_entry(neigh, &priv->neigh_list, list)
			if (neigh->path == path)
				ipoib_cm_neigh_moved(neigh);
		spin_unlock_bh(&priv->table_lock);
	}
	while ((skb = __skb_dequeue(&flush)))
		ipoib_requeue_xmit(priv, skb);
}

/*
 * The SA's answer, a timeout or a cancel. ib_sa calls back in process
 * context (ib_mad's receive or timeout work, or the local SA's netlink
 * handler), so the AH is created and the waiting packets are sent right
 * here. "querying" stays set until the end: it is what keeps a path whose
 * last neighbour went away from being freed under us.
 */
static void ipoib_path_query_done(int status, struct sa_path_rec *resp,
				  IB_COMPAT_NUM_PRS num_prs, void *context)
{
	struct ipoib_path *path = context;
	struct ipoib_dev_priv *priv = path->priv;
	bool dead, refresh;

	if (!status && (!resp || num_prs < 1))
		status = -EIO;

	spin_lock_bh(&path->lock);
	dead = path->dead;
	/* a refresh asked while this query was out: its answer may be stale */
	refresh = path->want_query;
	path->want_query = false;
	spin_unlock_bh(&path->lock);

	/* A path being freed gets neither: ipoib_path_free_list() drops its queue. */
	if (!dead && status)
		ipoib_path_failed(path, status, IPOIB_CTR_DROP_SA_FAILURE);
	else if (!dead)
		ipoib_path_install(path, resp);

	spin_lock_bh(&path->lock);
	path->querying = false;
	if (refresh && !path->dead) {
		path->want_query = true;
		mod_delayed_work(priv->wq, &path->work, 0);
	}
	/*
	 * Both under the lock: once querying is false the path may be freed,
	 * and once its waiter sees that, so may priv (device removal). The
	 * waiter's condition takes path->lock, so it cannot see querying
	 * false before this wake-up is done.
	 */
	wake_up_all(&priv->path_wait);
	spin_unlock_bh(&path->lock);
}

/* Refresh and retry: a query nobody's packet will ask for. */
static void ipoib_path_work(struct work_struct *work)
{
	struct ipoib_path *path = container_of(to_delayed_work(work),
					       struct ipoib_path, work);
	struct sk_buff_head drop;
	int ret = 0;

	__skb_queue_head_init(&drop);
	spin_lock_bh(&path->lock);
	if (path->want_query && !path->querying && !path->dead) {
		if (!time_before(jiffies, path->retry_at))
			ret = ipoib_path_start_locked(path, &drop);
		else if (rcu_access_pointer(path->ah))
			/* an AH in use: nobody's packet will ask, so do it then */
			queue_delayed_work(path->priv->wq, &path->work,
					   path->retry_at - jiffies);
		else
			/* unresolved: the next packet asks */
			path->want_query = false;
	}
	spin_unlock_bh(&path->lock);

	if (ret)
		ipoib_path_drop_failed(path, ret, IPOIB_CTR_DROP_SA_FAILURE,
				       &drop);
}

/*
 * Fabric changed: ask again for every path, keeping the current AHs. A
 * client reregister or an SM failover reaches every port of the fabric at
 * once, and each would ask for all of its paths: the SA storm of large
 * sites. Paths that have an AH, and so carry traffic meanwhile, go on
 * refresh_list, which refresh_work releases at IPOIB_PATH_REFRESH_PER_SEC
 * (10,000 paths: 20 s); those without one (failed, or never resolved) are
 * asked for at once, since their packets wait. One delayed work per path
 * at its own time would not do: the timer wheel batches far timers (at
 * HZ=250, those 16 s or more ahead fire in 2-s groups: 1,024 queries at
 * once).
 */
void ipoib_path_refresh_all(struct ipoib_dev_priv *priv)
{
	struct ipoib_path *path;
	unsigned long n = 0;

	spin_lock_bh(&priv->table_lock);
	list_for_each_entry(path, &priv->path_list, list) {
		spin_lock(&path->lock);
		path->backoff_ms = 0;
		if (path->state == IPOIB_PATH_FAILED)
			path->state = IPOIB_PATH_UNRESOLVED;
		/* a query out now asks again when it ends */
		path->want_query = true;
		if (rcu_access_pointer(path->ah)) {
			/* until refresh_work releases it (the AH in use meanwhile) */
			path->retry_at = jiffies + n++ * HZ / IPOIB_PATH_REFRESH_PER_SEC + HZ;
			list_move_tail(&path->refresh, &priv->refresh_list);
		} else {
			path->retry_at = jiffies;
			list_del_init(&path->refresh);
			if (!path->querying)
				mod_delayed_work(priv->wq, &path->work, 0);
		}
		spin_unlock(&path->lock);
	}
	if (n)
		mod_delayed_work(priv->wq, &priv->refresh_work, 0);
	spin_unlock_bh(&priv->table_lock);
}

/* Release the next batch of refresh_list's paths to their query work. */
static void ipoib_path_refresh_work(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(to_delayed_work(work),
						   struct ipoib_dev_priv,
						   refresh_work);
	unsigned int n = IPOIB_PATH_REFRESH_PER_SEC /
			 IPOIB_PATH_REFRESH_TICKS_PER_SEC;
	struct ipoib_path *path;

	spin_lock_bh(&priv->table_lock);
	while (n-- &&
	       (path = list_first_entry_or_null(&priv->refresh_list,
						struct ipoib_path, refresh))) {
		list_del_init(&path->refresh);
		spin_lock(&path->lock);
		path->retry_at = jiffies;
		/* a query out now asks again itself when it ends */
		if (path->want_query && !path->querying && !path->dead)
			mod_delayed_work(priv->wq, &path->work, 0);
		spin_unlock(&path->lock);
	}
	if (!list_empty(&priv->refresh_list))
		queue_delayed_work(priv->wq, &priv->refresh_work,
				   max(HZ / IPOIB_PATH_REFRESH_TICKS_PER_SEC, 1));
	spin_unlock_bh(&priv->table_lock);
}

/*
 * Ask the SA again for resolved @path, keeping its AH until the answer
 * (path->lock held); false if it is asking already, or asked for this
 * reason less than IPOIB_PATH_SLID_REQUERY ago.
 */
static bool ipoib_path_requery_locked(struct ipoib_dev_priv *priv,
				      struct ipoib_path *path)
{
	if (path->dead || path->state != IPOIB_PATH_RESOLVED ||
	    path->querying || time_before(jiffies, path->slid_query_at))
		return false;
	path->slid_query_at = jiffies + IPOIB_PATH_SLID_REQUERY;
	path->want_query = true;
	path->backoff_ms = 0;
	path->retry_at = jiffies;
	mod_delayed_work(priv->wq, &path->work, 0);
	return true;
}

/*
 * A peer's LID changed and nobody told us: a real SM reregisters only the
 * port it moved, so our path keeps the old DLID and our packets to the
 * peer go nowhere while its packets still reach us. @slid came from @gid
 * (ARP and ND carry the sender's address, multicast its GRH): if it is not
 * the DLID of our path to @gid, ask the SA again, keeping the current AH
 * meanwhile. Once per SLID: a peer with LMC > 0 may send from a LID that
 * is not the one the SA gives us, and must not make us query forever.
 * And at most once per IPOIB_PATH_SLID_REQUERY per path: the GID comes
 * from the frame, unchecked, so hosts that send frames naming one GID
 * from two LIDs in turn would otherwise make every node query that path
 * once per frame (review 2026-12, finding 8). A real move is seen again
 * by the peer's next frame after that. Called from NAPI, or with BHs off
 * (a connection request, ipoib_cm_req()).
 */
void ipoib_path_check_slid(struct ipoib_dev_priv *priv,
			   const union ib_gid *gid, u32 slid)
{
	struct ipoib_path *path;

	rcu_read_lock();
	path = rhashtable_lookup(&priv->paths, gid, ipoib_path_params);
	if (path) {
		spin_lock(&path->lock);
		if (slid != path->moved_slid &&
		    slid != be32_to_cpu(sa_path_get_dlid(&path->rec)) &&
		    ipoib_path_requery_locked(priv, path)) {
			path->moved_slid = slid;
			atomic_long_inc(&priv->counters[IPOIB_CTR_PATH_LID_MOVED]);
		}
		spin_unlock(&path->lock);
	}
	rcu_read_unlock();
}

/*
 * A connection to @gid stopped being acknowledged, or its request was
 * never answered: the peer may have moved to another LID without our
 * hearing of it (and on the HCA's datapath no UD frame tells us its
 * SLID). Ask the SA again, at most once per IPOIB_PATH_SLID_REQUERY;
 * ipoib_path_install() closes the connections of a path whose DLID
 * changed. Called from NAPI, or with BHs off.
 */
void ipoib_path_suspect(struct ipoib_dev_priv *priv, const union ib_gid *gid)
{
	struct ipoib_path *path;

	rcu_read_lock();
	path = rhashtable_lookup(&priv->paths, gid, ipoib_path_params);
	if (path) {
		spin_lock(&path->lock);
		ipoib_path_requery_locked(priv, path);
		spin_unlock(&path->lock);
	}
	rcu_read_unlock();
}

/*
 * Any unicast frame: its SLID should be the DLID of one of our paths. A
 * frame from a LID we have no path to is a new peer, or one whose LID
 * moved: lid_work looks for the neighbours with the sender's QPN and checks
 * their paths. At most one look every 100 ms. Called from NAPI.
 */
void ipoib_path_note_slid(struct ipoib_dev_priv *priv, u32 qpn, u32 slid)
{
	if (slid >= IPOIB_LID_UNICAST_END || test_bit(slid, priv->known_lids) ||
	    time_before(jiffies, READ_ONCE(priv->lid_scan_next)))
		return;
	WRITE_ONCE(priv->lid_scan_next, jiffies + HZ / 10);
	atomic64_set(&priv->lid_pending, (u64)qpn << 16 | slid);
	queue_work(priv->wq, &priv->lid_work);
}

static void ipoib_path_lid_work(struct work_struct *work)
{
	struct ipoib_dev_priv *priv = container_of(work, struct ipoib_dev_priv,
						   lid_work);
	u64 v = atomic64_xchg(&priv->lid_pending, 0);
	u32 qpn = (v >> 16) & IB_QPN_MASK, slid = v & 0xffff;
	struct ipoib_neigh *neigh;
	bool found = false;

	if (!v)
		return;
	spin_lock_bh(&priv->table_lock);
	list_for_each_entry(neigh, &priv->neigh_list, list) {
		if ((be32_to_cpu(neigh->key.qpn) & IB_QPN_MASK) != qpn ||
		    !neigh->path)
			continue;
		ipoib_path_check_slid(priv, &neigh->key.gid, slid);
		found = true;
	}
	spin_unlock_bh(&priv->table_lock);
	/*
	 * Its paths are asking again (or had it as an alias): no need to look
	 * at this SLID again. A sender we have no neighbour for yet is looked
	 * at again when it sends later.
	 */
	if (found)
		set_bit(slid, priv->known_lids);
}

static void ipoib_path_unlink(struct ipoib_dev_priv *priv,
			      struct ipoib_path *path, struct list_head *dead)
{
	lockdep_assert_held(&priv->table_lock);
	rhashtable_remove_fast(&priv->paths, &path->node, ipoib_path_params);
	list_move(&path->list, dead);
	list_del_init(&path->refresh);
	spin_lock(&path->lock);
	path->dead = true;
	spin_unlock(&path->lock);
}

static bool ipoib_path_idle(struct ipoib_path *path)
{
	bool querying;

	spin_lock_bh(&path->lock);
	querying = path->querying;
	spin_unlock_bh(&path->lock);
	return !querying;
}

/*
 * Second phase of removal: nobody can find @path any more, and no query can
 * start on it (both need path->lock and see "dead"). Cancel what is out,
 * wait for its callback, then free after a grace period for xmit.
 */
static void ipoib_path_free_list(struct ipoib_dev_priv *priv,
				 struct list_head *dead)
{
	struct ipoib_path *path, *tmp;
	struct sk_buff_head drop;

	if (list_empty(dead))
		return;
	list_for_each_entry(path, dead, list) {
		struct ib_sa_query *query = NULL;
		int id = 0;

		cancel_delayed_work_sync(&path->work);
		spin_lock_bh(&path->lock);
		if (path->querying) {
			id = path->query_id;
			query = path->query;
		}
		spin_unlock_bh(&path->lock);
		if (query)
			ib_sa_cancel_query(id, query);
	}
	list_for_each_entry(path, dead, list)
		wait_event(priv->path_wait, ipoib_path_idle(path));
	synchronize_rcu();
	list_for_each_entry_safe(path, tmp, dead, list) {
		__skb_queue_head_init(&drop);
		spin_lock_bh(&path->lock);
		skb_queue_splice_init(&path->queue, &drop);
		spin_unlock_bh(&path->lock);
		ipoib_path_drop_queue(priv, &drop);
		if (!rcu_access_pointer(path->ah))
			atomic_dec(&priv->paths_pending);
		ipoib_ah_put(rcu_dereference_protected(path->ah, 1));
		list_del(&path->list);
		kfree(path);
	}
}

/*
 * Free paths no neighbour uses that have been idle for a while, and under
 * @pressure (path_pending_max was met) failed ones at once. A packet
 * still on its way through a neighbour being freed may start a query on
 * such a path until it is unlinked: ipoib_path_free_list cancels that.
 */
void ipoib_path_gc(struct ipoib_dev_priv *priv, bool pressure)
{
	unsigned long idle = (unsigned long)max(READ_ONCE(ipoib_path_idle_s), 1U) * HZ;
	struct ipoib_path *path, *tmp;
	LIST_HEAD(dead);

	spin_lock_bh(&priv->table_lock);
	list_for_each_entry_safe(path, tmp, &priv->path_list, list) {
		if (path->nr_neigh)
			continue;
		if (time_before(jiffies, READ_ONCE(path->last_used) + idle) &&
		    !(pressure && ipoib_path_has_failed(path)))
			continue;
		if (!ipoib_path_idle(path))
			continue;
		ipoib_path_unlink(priv, path, &dead);
	}
	spin_unlock_bh(&priv->table_lock);
	ipoib_path_free_list(priv, &dead);
}

/*
 * Remove every path (interface going down, P_Key change). Neighbours are
 * gone already and RUNNING is clear, so no xmit can make a new one: a
 * neighbour made between the two flushes would point to a freed path.
 */
void ipoib_path_flush(struct ipoib_dev_priv *priv)
{
	struct ipoib_path *path, *tmp;
	LIST_HEAD(dead);

	spin_lock_bh(&priv->table_lock);
	list_for_each_entry_safe(path, tmp, &priv->path_list, list)
		ipoib_path_unlink(priv, path, &dead);
	spin_unlock_bh(&priv->table_lock);
	ipoib_path_free_list(priv, &dead);
	/* a bit lost to a racing set_bit() only costs one lid_work look */
	bitmap_zero(priv->known_lids, IPOIB_LID_UNICAST_END);
}

int ipoib_path_init(struct ipoib_dev_priv *priv)
{
	int ret;

	INIT_LIST_HEAD(&priv->path_list);
	INIT_LIST_HEAD(&priv->refresh_list);
	INIT_DELAYED_WORK(&priv->refresh_work, ipoib_path_refresh_work);
	init_waitqueue_head(&priv->path_wait);
	INIT_WORK(&priv->lid_work, ipoib_path_lid_work);
	priv->known_lids = bitmap_zalloc(IPOIB_LID_UNICAST_END, GFP_KERNEL);
	if (!priv->known_lids)
		return -ENOMEM;
	ret = rhashtable_init(&priv->paths, &ipoib_path_params);
	if (ret)
		bitmap_free(priv->known_lids);
	return ret;
}

/* After the QP is gone: no frame can queue lid_work any more. */
void ipoib_path_cleanup(struct ipoib_dev_priv *priv)
{
	cancel_work_sync(&priv->lid_work);
	cancel_delayed_work_sync(&priv->refresh_work);
	ipoib_path_flush(priv);
	rhashtable_destroy(&priv->paths);
	bitmap_free(priv->known_lids);
}
