// SPDX-License-Identifier: GPL-2.0
/*
 * Read-only debugfs tables under /sys/kernel/debug/ipoib/:
 *
 *   <ifname>_mcg, <ifname>_path  multicast groups and paths in the layout the
 *                                in-tree driver's users and scripts know
 *                                ("GID:" line, indented "key: value")
 *   <ifname>/paths               one line per path: GID, DLID, SL, MTU, rate,
 *                                state, age, packets queued, neighbours, SA
 *                                queries sent, time left in a back-off
 *   <ifname>/mcast               one line per group: MGID, MLID, join state,
 *                                send-only, seconds since the join, queued
 *   <ifname>/neighs              one line per neighbour: QPN, GID, path state,
 *                                idle time
 *   <ifname>/connections         one line per connected-mode connection we
 *                                opened: peer QPN and GID, state, sends in flight,
 *                                backlog, drops, failures in a row, time
 *                                left in a back-off
 *
 * The names follow the interface: a netdev notifier renames them when the
 * interface is renamed or moved to another namespace (which may rename it).
 * Two interfaces of the same name in different namespaces get distinct
 * names: the second one is "<ifname>-<N>". All dentries are protected by
 * ipoib_debugfs_lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/netdevice.h>
#include <linux/seq_file.h>
#include "ipoib.h"

static struct dentry *ipoib_debugfs_root;
static DEFINE_MUTEX(ipoib_debugfs_lock);	/* every priv's debugfs dentries */
static atomic_t ipoib_debugfs_seq;		/* suffixes for clashing names */

static const char *const ipoib_mcast_state_names[] = {
	[IPOIB_MCAST_IDLE]	= "idle",
	[IPOIB_MCAST_JOINING]	= "joining",
	[IPOIB_MCAST_JOINED]	= "joined",
	[IPOIB_MCAST_BACKOFF]	= "backoff",
};

static const char *const ipoib_path_state_names[] = {
	[IPOIB_PATH_UNRESOLVED]	= "unresolved",
	[IPOIB_PATH_RESOLVED]	= "resolved",
	[IPOIB_PATH_FAILED]	= "failed",
};

/* "GID: " and eight uncompressed, unpadded groups: ff12:401b:ffff:0:0:0:0:1 */
static void ipoib_seq_gid(struct seq_file *m, const union ib_gid *gid)
{
	int i;

	seq_puts(m, "GID: ");
	for (i = 0; i < 16; i += 2)
		seq_printf(m, "%x%c", gid->raw[i] << 8 | gid->raw[i + 1],
			   i < 14 ? ':' : '\n');
}

static int ipoib_mcg_show(struct seq_file *m, void *v)
{
	struct ipoib_dev_priv *priv = m->private;
	struct ipoib_mcast *mc;

	mutex_lock(&priv->mcast_mutex);
	list_for_each_entry_rcu(mc, &priv->mcast_list, list,
				lockdep_is_held(&priv->mcast_mutex)) {
		ipoib_seq_gid(m, &mc->mgid);
		seq_printf(m, "  state:     %s\n",
			   ipoib_mcast_state_names[mc->state]);
		seq_printf(m, "  queuelen:  %u\n", skb_queue_len(&mc->pending));
		seq_printf(m, "  complete:  %s\n",
			   mc->state == IPOIB_MCAST_JOINED ? "yes" : "no");
		seq_printf(m, "  send_only: %s\n", mc->member ? "no" : "yes");
		if (mc->state == IPOIB_MCAST_JOINED)
			seq_printf(m, "  MLID:      0x%04x\n", mc->mlid);
		seq_putc(m, '\n');
	}
	mutex_unlock(&priv->mcast_mutex);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipoib_mcg);

/*
 * Call @show for every entry of @ht. The hash is walked under RCU, as the
 * datapath reads it, not under table_lock: a reader of a long table holds
 * off neither the datapath nor BHs. Paths and neighbours are freed after a
 * grace period, and a neighbour's path outlives it (ipoib_path.c). A table
 * that is resized meanwhile may show an entry twice or not at all.
 */
static void ipoib_seq_walk(struct seq_file *m, struct rhashtable *ht,
			   void (*show)(struct seq_file *m, void *obj))
{
	struct rhashtable_iter iter;
	void *obj;

	rhashtable_walk_enter(ht, &iter);
	rhashtable_walk_start(&iter);
	while ((obj = rhashtable_walk_next(&iter))) {
		if (IS_ERR(obj)) {
			if (PTR_ERR(obj) == -EAGAIN)
				continue;
			break;
		}
		show(m, obj);
	}
	rhashtable_walk_stop(&iter);
	rhashtable_walk_exit(&iter);
}

static void ipoib_path_show_one(struct seq_file *m, void *obj)
{
	struct ipoib_path *path = obj;

	spin_lock_bh(&path->lock);
	ipoib_seq_gid(m, &path->dgid);
	seq_printf(m, "  state:     %s\n", ipoib_path_state_names[path->state]);
	seq_printf(m, "  complete:  %s\n",
		   rcu_access_pointer(path->ah) ? "yes" : "no");
	seq_printf(m, "  neighbours: %u\n", path->nr_neigh);
	seq_printf(m, "  queuelen:  %u\n", skb_queue_len(&path->queue));
	if (rcu_access_pointer(path->ah)) {
		seq_printf(m, "  DLID:      0x%04x\n",
			   be32_to_cpu(sa_path_get_dlid(&path->rec)));
		seq_printf(m, "  SL:        %u\n", path->rec.sl);
	}
	spin_unlock_bh(&path->lock);
	seq_putc(m, '\n');
}

static int ipoib_path_show(struct seq_file *m, void *v)
{
	struct ipoib_dev_priv *priv = m->private;

	ipoib_seq_walk(m, &priv->paths, ipoib_path_show_one);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipoib_path);

/* Milliseconds since @stamp (jiffies). */
static unsigned int ipoib_ms_since(unsigned long stamp)
{
	return jiffies_to_msecs(jiffies - READ_ONCE(stamp));
}

static void ipoib_paths_show_one(struct seq_file *m, void *obj)
{
	struct ipoib_path *path = obj;

	spin_lock_bh(&path->lock);
	seq_printf(m, "%pI6c ", path->dgid.raw);
	if (path->state == IPOIB_PATH_RESOLVED)
		seq_printf(m, "0x%04x %u %d %d ",
			   be32_to_cpu(sa_path_get_dlid(&path->rec)),
			   path->rec.sl, ib_mtu_enum_to_int(path->rec.mtu),
			   ib_rate_to_mbps(path->rec.rate));
	else
		seq_puts(m, "- - - - ");
	seq_printf(m, "%s %u %u %u %u ", ipoib_path_state_names[path->state],
		   ipoib_ms_since(path->last_used), skb_queue_len(&path->queue),
		   path->nr_neigh, path->queries);
	if (path->state == IPOIB_PATH_FAILED &&
	    time_before(jiffies, path->retry_at))
		seq_printf(m, "%u\n", jiffies_to_msecs(path->retry_at - jiffies));
	else
		seq_puts(m, "-\n");
	spin_unlock_bh(&path->lock);
}

static int ipoib_paths_show(struct seq_file *m, void *v)
{
	struct ipoib_dev_priv *priv = m->private;

	seq_puts(m, "# gid dlid sl mtu rate_mbps state age_ms queued neighs queries retry_in_ms\n");
	ipoib_seq_walk(m, &priv->paths, ipoib_paths_show_one);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipoib_paths);

static int ipoib_mcast_show(struct seq_file *m, void *v)
{
	struct ipoib_dev_priv *priv = m->private;
	struct ipoib_mcast *mc;

	seq_puts(m, "# mgid mlid state join since_s queued\n");
	mutex_lock(&priv->mcast_mutex);
	list_for_each_entry_rcu(mc, &priv->mcast_list, list,
				lockdep_is_held(&priv->mcast_mutex)) {
		seq_printf(m, "%pI6c ", mc->mgid.raw);
		if (mc->state == IPOIB_MCAST_JOINED)
			seq_printf(m, "0x%04x ", mc->mlid);
		else
			seq_puts(m, "- ");
		seq_printf(m, "%s %s ", ipoib_mcast_state_names[mc->state],
			   mc->member ? "full" : "sendonly");
		if (mc->state == IPOIB_MCAST_JOINED)
			seq_printf(m, "%u ", ipoib_ms_since(mc->joined_at) / 1000);
		else
			seq_puts(m, "- ");
		seq_printf(m, "%u\n", skb_queue_len(&mc->pending));
	}
	mutex_unlock(&priv->mcast_mutex);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipoib_mcast);

static void ipoib_neighs_show_one(struct seq_file *m, void *obj)
{
	struct ipoib_neigh *neigh = obj;
	struct ipoib_path *path = neigh->path;

	spin_lock_bh(&path->lock);
	seq_printf(m, "0x%06x %pI6c %s %u\n", be32_to_cpu(neigh->key.qpn),
		   neigh->key.gid.raw, ipoib_path_state_names[path->state],
		   ipoib_ms_since(neigh->last_used));
	spin_unlock_bh(&path->lock);
}

static int ipoib_neighs_show(struct seq_file *m, void *v)
{
	struct ipoib_dev_priv *priv = m->private;

	seq_puts(m, "# qpn gid path_state idle_ms\n");
	ipoib_seq_walk(m, &priv->neighs, ipoib_neighs_show_one);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipoib_neighs);

static int ipoib_connections_show(struct seq_file *m, void *v)
{
	ipoib_cm_show(m, m->private);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipoib_connections);

static bool ipoib_debugfs_taken(const char *name)
{
	struct dentry *d = debugfs_lookup(name, ipoib_debugfs_root);

	dput(d);
	return d;
}

/* The base name for @priv's entries: its interface name if free. */
static void ipoib_debugfs_name(struct ipoib_dev_priv *priv, char *base,
			       size_t len)
{
	const char *name = priv->dev->name;

	lockdep_assert_held(&ipoib_debugfs_lock);
	if (priv->debugfs && !strcmp(priv->debugfs->d_name.name, name)) {
		strscpy(base, name, len);
		return;
	}
	if (!ipoib_debugfs_taken(name)) {
		strscpy(base, name, len);
		return;
	}
	snprintf(base, len, "%s-%d", name,
		 atomic_inc_return(&ipoib_debugfs_seq));
}

static void ipoib_debugfs_rename_one(struct dentry *d, const char *name)
{
	int ret;

	if (!d || !strcmp(d->d_name.name, name))
		return;
	ret = ipoib_compat_debugfs_rename(ipoib_debugfs_root, d, name);
	if (ret)
		pr_warn("cannot rename debugfs entry %pd to %s: %d\n", d, name,
			ret);
}

/* The interface got another name (or namespace): follow it. */
static void ipoib_debugfs_rename(struct ipoib_dev_priv *priv)
{
	char base[IFNAMSIZ + 16], name[IFNAMSIZ + 24];

	mutex_lock(&ipoib_debugfs_lock);
	if (priv->debugfs) {
		ipoib_debugfs_name(priv, base, sizeof(base));
		ipoib_debugfs_rename_one(priv->debugfs, base);
		snprintf(name, sizeof(name), "%s_mcg", base);
		ipoib_debugfs_rename_one(priv->mcg_dentry, name);
		snprintf(name, sizeof(name), "%s_path", base);
		ipoib_debugfs_rename_one(priv->path_dentry, name);
	}
	mutex_unlock(&ipoib_debugfs_lock);
}

void ipoib_debugfs_add(struct ipoib_dev_priv *priv)
{
	char base[IFNAMSIZ + 16], name[IFNAMSIZ + 24];
	struct dentry *dir;

	if (IS_ERR_OR_NULL(ipoib_debugfs_root))
		return;
	mutex_lock(&ipoib_debugfs_lock);
	ipoib_debugfs_name(priv, base, sizeof(base));
	dir = debugfs_create_dir(base, ipoib_debugfs_root);
	priv->debugfs = IS_ERR(dir) ? NULL : dir;
	debugfs_create_file("paths", 0400, dir, priv, &ipoib_paths_fops);
	debugfs_create_file("mcast", 0400, dir, priv, &ipoib_mcast_fops);
	debugfs_create_file("neighs", 0400, dir, priv, &ipoib_neighs_fops);
	debugfs_create_file("connections", 0400, dir, priv,
			    &ipoib_connections_fops);
	snprintf(name, sizeof(name), "%s_mcg", base);
	priv->mcg_dentry = debugfs_create_file(name, 0400, ipoib_debugfs_root,
					       priv, &ipoib_mcg_fops);
	snprintf(name, sizeof(name), "%s_path", base);
	priv->path_dentry = debugfs_create_file(name, 0400, ipoib_debugfs_root,
						priv, &ipoib_path_fops);
	mutex_unlock(&ipoib_debugfs_lock);
}

/* Waits for readers to leave: after this nothing reads @priv through us. */
void ipoib_debugfs_remove(struct ipoib_dev_priv *priv)
{
	mutex_lock(&ipoib_debugfs_lock);
	debugfs_remove(priv->mcg_dentry);
	debugfs_remove(priv->path_dentry);
	debugfs_remove(priv->debugfs);
	priv->mcg_dentry = NULL;
	priv->path_dentry = NULL;
	priv->debugfs = NULL;
	mutex_unlock(&ipoib_debugfs_lock);
}

/*
 * A rename sends NETDEV_CHANGENAME; a move to another namespace (where the
 * interface may get a new name) ends with NETDEV_REGISTER.
 */
static int ipoib_debugfs_netdev_event(struct notifier_block *nb,
				      unsigned long event, void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);

	if (dev->netdev_ops != &ipoib_netdev_ops)
		return NOTIFY_DONE;
	if (event == NETDEV_CHANGENAME || event == NETDEV_REGISTER)
		ipoib_debugfs_rename(ipoib_priv(dev));
	return NOTIFY_DONE;
}

static struct notifier_block ipoib_debugfs_nb = {
	.notifier_call = ipoib_debugfs_netdev_event,
};

/*
 * A fault hook for tests (debugfs ipoib/cm_attach_delay_us, 0 by default):
 * ipoib_cm_xmit() waits this long between making a new connection and
 * attaching it to its neighbour entry, which widens the window in which
 * the entry can go meanwhile (tests/cases/ipoib-cm-switch.sh);
 * ipoib/cm_attach_delayed counts the connections it held, so that a test
 * knows the window was there.
 */
u32 ipoib_cm_attach_delay_us;
atomic_t ipoib_cm_attach_delayed = ATOMIC_INIT(0);

void ipoib_debugfs_init(void)
{
	ipoib_debugfs_root = debugfs_create_dir("ipoib", NULL);
	debugfs_create_u32("cm_attach_delay_us", 0600, ipoib_debugfs_root,
			   &ipoib_cm_attach_delay_us);
	debugfs_create_atomic_t("cm_attach_delayed", 0600, ipoib_debugfs_root,
				&ipoib_cm_attach_delayed);
	if (register_netdevice_notifier(&ipoib_debugfs_nb))
		pr_warn("debugfs names will not follow interface renames\n");
}

void ipoib_debugfs_exit(void)
{
	unregister_netdevice_notifier(&ipoib_debugfs_nb);
	debugfs_remove(ipoib_debugfs_root);
}
