// SPDX-License-Identifier: GPL-2.0
/*
 * softib: the hold_netdev knob. Writing "NAME [MS]" to
 * /sys/kernel/debug/softib/hold_netdev takes a reference on the network
 * interface NAME, as an open socket, a route or a slow RCU callback holds
 * one on a real system, and keeps it until softib's devices have all been
 * removed at module unload, or for MS milliseconds (default 6000), whichever
 * comes first. An unregistration of NAME then waits in the core's
 * netdev_wait_allrefs(), after rtnl was dropped and before the interface's
 * priv_destructor runs, for as long as a device removal takes: the window of
 * review finding 1, held open on purpose instead of hit by chance.
 *
 * MS stays below the core's 10 s "waiting for NAME to become free" report,
 * which the test runner counts as a failure. Reading the file lists the
 * held interfaces.
 */
#include <linux/debugfs.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <net/net_namespace.h>

#include "softib.h"

#define SOFTIB_HOLD_DEFAULT_MS	6000
#define SOFTIB_HOLD_MAX_MS	9000

struct softib_hold {
	struct list_head list;		/* softib_holds; empty once claimed */
	struct net_device *ndev;
	struct delayed_work expire;
};

static LIST_HEAD(softib_holds);
static DEFINE_MUTEX(softib_holds_lock);

static void softib_hold_free(struct softib_hold *h)
{
	pr_info("hold_netdev: %s released\n", h->ndev->name);
	dev_put(h->ndev);
	kfree(h);
}

/* Whoever takes the entry off the list (expiry or unload) releases it. */
static void softib_hold_expire(struct work_struct *work)
{
	struct softib_hold *h = container_of(to_delayed_work(work), struct softib_hold, expire);
	bool mine;

	mutex_lock(&softib_holds_lock);
	mine = !list_empty(&h->list);
	list_del_init(&h->list);
	mutex_unlock(&softib_holds_lock);
	if (mine)
		softib_hold_free(h);
}

/* Module unload, after every device is gone: release what is still held. */
void softib_hold_release_all(void)
{
	struct softib_hold *h;

	for (;;) {
		mutex_lock(&softib_holds_lock);
		h = list_first_entry_or_null(&softib_holds, struct softib_hold, list);
		if (h)
			list_del_init(&h->list);
		mutex_unlock(&softib_holds_lock);
		if (!h)
			return;
		/* a running expiry finds the entry claimed and returns */
		cancel_delayed_work_sync(&h->expire);
		softib_hold_free(h);
	}
}

static ssize_t softib_hold_write(struct file *file, const char __user *ubuf,
				 size_t count, loff_t *ppos)
{
	char buf[IFNAMSIZ + 16], name[IFNAMSIZ];
	unsigned int ms = SOFTIB_HOLD_DEFAULT_MS;
	struct softib_hold *h;
	int n;

	if (!count || count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	n = sscanf(buf, "%15s %u", name, &ms);
	if (n < 1 || !ms || ms > SOFTIB_HOLD_MAX_MS)
		return -EINVAL;

	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return -ENOMEM;
	h->ndev = dev_get_by_name(&init_net, name);
	if (!h->ndev) {
		kfree(h);
		return -ENODEV;
	}
	INIT_DELAYED_WORK(&h->expire, softib_hold_expire);
	mutex_lock(&softib_holds_lock);
	list_add_tail(&h->list, &softib_holds);
	schedule_delayed_work(&h->expire, msecs_to_jiffies(ms));
	mutex_unlock(&softib_holds_lock);
	pr_info("hold_netdev: %s held for at most %u ms\n", name, ms);
	return count;
}

static int softib_hold_show(struct seq_file *m, void *v)
{
	struct softib_hold *h;

	mutex_lock(&softib_holds_lock);
	list_for_each_entry(h, &softib_holds, list)
		seq_printf(m, "%s\n", h->ndev->name);
	mutex_unlock(&softib_holds_lock);
	return 0;
}

static int softib_hold_open(struct inode *inode, struct file *file)
{
	return single_open(file, softib_hold_show, NULL);
}

static const struct file_operations softib_hold_fops = {
	.owner = THIS_MODULE,
	.open = softib_hold_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = softib_hold_write,
};

void softib_hold_init(struct dentry *root)
{
	debugfs_create_file("hold_netdev", 0600, root, NULL, &softib_hold_fops);
}
