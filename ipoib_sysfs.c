// SPDX-License-Identifier: GPL-2.0
/*
 * The driver's sysfs files in /sys/class/net/<if>/, as the in-tree driver
 * has them and NetworkManager uses them:
 *
 *   port interface: create_child delete_child pkey mode umcast
 *   child:          pkey mode umcast parent
 *
 * dev_id and dev_port are the core's files (ipoib_dev_init sets both). The
 * groups are given to the core in dev->sysfs_groups before the netdev is
 * registered, so the files appear and disappear with it, atomically.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/netdevice.h>
#include <linux/capability.h>
#include <linux/rtnetlink.h>
#include "ipoib.h"

static struct ipoib_dev_priv *ipoib_sysfs_priv(struct device *d)
{
	return ipoib_priv(to_net_dev(d));
}

/* A P_Key as create_child/delete_child accept it: 0x1..0xffff, any base. */
static int ipoib_sysfs_pkey(const char *buf, u16 *pkey)
{
	unsigned int val;

	if (kstrtouint(buf, 0, &val) || val > 0xffff)
		return -EINVAL;
	*pkey = val;
	return 0;
}

static ssize_t create_child_store(struct device *d,
				  struct device_attribute *attr,
				  const char *buf, size_t count)
{
	u16 pkey;
	int ret;

	if (!ns_capable(dev_net(to_net_dev(d))->user_ns, CAP_NET_ADMIN))
		return -EPERM;
	ret = ipoib_sysfs_pkey(buf, &pkey);
	if (!ret)
		ret = ipoib_child_create(ipoib_sysfs_priv(d), pkey);
	return ret ?: count;
}
static DEVICE_ATTR_WO(create_child);

static ssize_t delete_child_store(struct device *d,
				  struct device_attribute *attr,
				  const char *buf, size_t count)
{
	u16 pkey;
	int ret;

	if (!ns_capable(dev_net(to_net_dev(d))->user_ns, CAP_NET_ADMIN))
		return -EPERM;
	ret = ipoib_sysfs_pkey(buf, &pkey);
	if (!ret)
		ret = ipoib_child_delete(ipoib_sysfs_priv(d), pkey);
	return ret ?: count;
}
static DEVICE_ATTR_WO(delete_child);

static ssize_t pkey_show(struct device *d, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "0x%04x\n", ipoib_sysfs_priv(d)->pkey);
}
static DEVICE_ATTR_RO(pkey);

static ssize_t mode_show(struct device *d, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, ipoib_sysfs_priv(d)->cm_mode ? "connected\n" :
							   "datagram\n");
}

static ssize_t mode_store(struct device *d, struct device_attribute *attr,
			  const char *buf, size_t count)
{
	u16 mode = U16_MAX;
	int ret;

	if (sysfs_streq(buf, "datagram"))
		mode = IPOIB_MODE_DATAGRAM;
	else if (sysfs_streq(buf, "connected"))
		mode = IPOIB_MODE_CONNECTED;
	if (!ns_capable(dev_net(to_net_dev(d))->user_ns, CAP_NET_ADMIN))
		return -EPERM;
	/* trylock: unregister (under rtnl) waits for this file's writers */
	if (!rtnl_trylock())
		return restart_syscall();
	ret = ipoib_set_mode(ipoib_sysfs_priv(d), mode, NULL);
	rtnl_unlock();
	return ret ?: count;
}
static DEVICE_ATTR_RW(mode);

static ssize_t umcast_show(struct device *d, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(ipoib_sysfs_priv(d)->umcast));
}

static ssize_t umcast_store(struct device *d, struct device_attribute *attr,
			    const char *buf, size_t count)
{
	unsigned int val;

	if (kstrtouint(buf, 0, &val))
		return -EINVAL;
	ipoib_set_umcast(ipoib_sysfs_priv(d), val);
	return count;
}
static DEVICE_ATTR_RW(umcast);

static ssize_t parent_show(struct device *d, struct device_attribute *attr,
			   char *buf)
{
	/* A parent outlives its children (ipoib_remove_port()). */
	return sysfs_emit(buf, "%s\n", ipoib_sysfs_priv(d)->parent->dev->name);
}
static DEVICE_ATTR_RO(parent);

static struct attribute *ipoib_port_attrs[] = {
	&dev_attr_create_child.attr,
	&dev_attr_delete_child.attr,
	&dev_attr_pkey.attr,
	&dev_attr_mode.attr,
	&dev_attr_umcast.attr,
	NULL
};

static const struct attribute_group ipoib_port_group = {
	.attrs = ipoib_port_attrs,
};

static struct attribute *ipoib_child_attrs[] = {
	&dev_attr_pkey.attr,
	&dev_attr_mode.attr,
	&dev_attr_umcast.attr,
	&dev_attr_parent.attr,
	NULL
};

static const struct attribute_group ipoib_child_group = {
	.attrs = ipoib_child_attrs,
};

/* For dev->sysfs_groups[0], before register_netdevice(). */
const struct attribute_group *ipoib_sysfs_group(struct ipoib_dev_priv *priv)
{
	return priv->parent ? &ipoib_child_group : &ipoib_port_group;
}
