// SPDX-License-Identifier: GPL-2.0
/*
 * softib: debugfs knobs. /sys/kernel/debug/softib/<ibdev>/ holds the port
 * events (state, lid, rereg, pkeys), the counters, frame injection and the
 * one-shot failures; /sys/kernel/debug/softib/ holds the SM location and the
 * fabric faults (the SA adds its sa_* files there too).
 */
#include <linux/ctype.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <rdma/ib_pack.h>

#include "softib.h"
#include "softib_eth.h"
#include "softib_fuzz.h"

#define SOFTIB_INJECT_MAX	8192	/* bytes of one injected frame */

struct dentry *softib_debugfs_root;

/* Copy a short user write into buf as a trimmed C string. */
static int softib_dbg_read_user(const char __user *ubuf, size_t count, char *buf,
				size_t size, char **out)
{
	if (!count || count >= size)
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	*out = strim(buf);
	return 0;
}

/*
 * state: DOWN, INIT, ARMED or ACTIVE; write "up" or "down", or "hold" (the
 * link comes up and the sweep waits in INIT) and "step" (its next step)
 */
static int softib_state_show(struct seq_file *m, void *v)
{
	static const char * const names[] = {
		[SOFTIB_PORT_DOWN] = "DOWN",
		[SOFTIB_PORT_INIT] = "INIT",
		[SOFTIB_PORT_ARMED] = "ARMED",
		[SOFTIB_PORT_ACTIVE] = "ACTIVE",
	};
	struct softib_dev *sdev = m->private;

	seq_printf(m, "%s\n", names[READ_ONCE(sdev->state)]);
	return 0;
}

static int softib_state_open(struct inode *inode, struct file *file)
{
	return single_open(file, softib_state_show, inode->i_private);
}

static ssize_t softib_state_write(struct file *file, const char __user *ubuf,
				  size_t count, loff_t *ppos)
{
	struct softib_dev *sdev = file_inode(file)->i_private;
	char buf[16], *s;
	int err;

	err = softib_dbg_read_user(ubuf, count, buf, sizeof(buf), &s);
	if (err)
		return err;
	if (!strcasecmp(s, "up") || !strcasecmp(s, "active"))
		softib_dev_port_event(sdev, true);
	else if (!strcasecmp(s, "down"))
		softib_dev_port_event(sdev, false);
	else if (!strcasecmp(s, "hold"))
		err = softib_dev_port_hold(sdev);
	else if (!strcasecmp(s, "step"))
		err = softib_dev_port_step(sdev);
	else
		return -EINVAL;
	return err ?: count;
}

static const struct file_operations softib_state_fops = {
	.owner = THIS_MODULE,
	.open = softib_state_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = softib_state_write,
};

/* lid: hex */
static int softib_lid_show(struct seq_file *m, void *v)
{
	struct softib_dev *sdev = m->private;

	seq_printf(m, "0x%x\n", softib_dev_lid(sdev));
	return 0;
}

static int softib_lid_open(struct inode *inode, struct file *file)
{
	return single_open(file, softib_lid_show, inode->i_private);
}

static ssize_t softib_lid_write(struct file *file, const char __user *ubuf,
				size_t count, loff_t *ppos)
{
	struct softib_dev *sdev = file_inode(file)->i_private;
	char buf[16], *s;
	u16 lid;
	int err;

	err = softib_dbg_read_user(ubuf, count, buf, sizeof(buf), &s);
	if (err)
		return err;
	if (kstrtou16(s, 16, &lid) || !lid || lid >= 0xc000)
		return -EINVAL;
	softib_dev_set_lid(sdev, lid);
	return count;
}

static const struct file_operations softib_lid_fops = {
	.owner = THIS_MODULE,
	.open = softib_lid_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = softib_lid_write,
};

/* rereg: any write raises CLIENT_REREGISTER */
static ssize_t softib_rereg_write(struct file *file, const char __user *ubuf,
				  size_t count, loff_t *ppos)
{
	softib_dev_rereg(file_inode(file)->i_private);
	return count;
}

static const struct file_operations softib_rereg_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = softib_rereg_write,
	.llseek = noop_llseek,
};

/* pkeys: "IDX 0xPKEY" per nonzero entry; write "IDX 0xPKEY" (0 clears) */
static int softib_pkeys_show(struct seq_file *m, void *v)
{
	struct softib_dev *sdev = m->private;
	int i;

	for (i = 0; i < SOFTIB_PKEY_TBL_LEN; i++) {
		u16 pkey = READ_ONCE(sdev->pkeys[i]);

		if (pkey)
			seq_printf(m, "%d 0x%04x\n", i, pkey);
	}
	return 0;
}

static int softib_pkeys_open(struct inode *inode, struct file *file)
{
	return single_open(file, softib_pkeys_show, inode->i_private);
}

static ssize_t softib_pkeys_write(struct file *file, const char __user *ubuf,
				  size_t count, loff_t *ppos)
{
	struct softib_dev *sdev = file_inode(file)->i_private;
	char buf[32], *s;
	unsigned int idx, pkey;
	int err;

	err = softib_dbg_read_user(ubuf, count, buf, sizeof(buf), &s);
	if (err)
		return err;
	if (sscanf(s, "%u %x", &idx, &pkey) != 2 || pkey > 0xffff)
		return -EINVAL;
	err = softib_dev_set_pkey(sdev, idx, pkey);
	return err ? err : count;
}

static const struct file_operations softib_pkeys_fops = {
	.owner = THIS_MODULE,
	.open = softib_pkeys_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = softib_pkeys_write,
};

/* counters: "name value" per line */
static int softib_counters_show(struct seq_file *m, void *v)
{
	struct softib_dev *sdev = m->private;
	int i;

	for (i = 0; i < SOFTIB_NR_COUNTERS; i++)
		seq_printf(m, "%s %lld\n", softib_counter_names[i],
			   atomic64_read(&sdev->counters[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(softib_counters);

/* inject: hex bytes of one wire packet (LRH [GRH] BTH DETH payload ICRC) */
static ssize_t softib_inject_write(struct file *file, const char __user *ubuf,
				   size_t count, loff_t *ppos)
{
	struct softib_dev *sdev = file_inode(file)->i_private;
	enum softib_counter why = SOFTIB_CNT_DROP_MALFORMED;
	struct softib_pkt *pkt = NULL;
	size_t i, len = 0;
	char *text;
	u8 *frame;
	int hi = -1, err;

	if (!count || count > 3 * SOFTIB_INJECT_MAX)
		return -EINVAL;
	text = memdup_user_nul(ubuf, count);
	if (IS_ERR(text))
		return PTR_ERR(text);
	frame = kmalloc(SOFTIB_INJECT_MAX, GFP_KERNEL);
	if (!frame) {
		err = -ENOMEM;
		goto out_free_text;
	}

	for (i = 0; i < count; i++) {
		int v;

		if (isspace(text[i]) || text[i] == ':')
			continue;
		v = hex_to_bin(text[i]);
		if (v < 0 || (hi < 0 && len == SOFTIB_INJECT_MAX)) {
			err = -EINVAL;
			goto out_free_frame;
		}
		if (hi < 0) {
			hi = v;
		} else {
			frame[len++] = hi << 4 | v;
			hi = -1;
		}
	}
	if (hi >= 0 || !len) {
		err = -EINVAL;
		goto out_free_frame;
	}

	/* like a frame off the wire: a bad one is counted, not refused */
	if (softib_wire_parse(frame, len, &pkt, &why)) {
		softib_count(sdev, why);
	} else {
		softib_rx(sdev, pkt);
		softib_pkt_free(pkt);
	}
	err = count;
out_free_frame:
	kfree(frame);
out_free_text:
	kfree(text);
	return err;
}

static const struct file_operations softib_inject_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = softib_inject_write,
	.llseek = noop_llseek,
};

/* fail_*, rx_starve and lso_bad_*: the next N operations fail */
static int softib_atomic_get(void *data, u64 *val)
{
	*val = atomic_read((atomic_t *)data);
	return 0;
}

static int softib_atomic_set(void *data, u64 val)
{
	if (val > INT_MAX)
		return -EINVAL;
	atomic_set((atomic_t *)data, val);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_atomic_fops, softib_atomic_get, softib_atomic_set, "%llu\n");

/* send_stall_ms: nothing leaves the device (no send completes) for N ms */
static int softib_send_stall_get(void *data, u64 *val)
{
	struct softib_dev *sdev = data;
	unsigned long until = READ_ONCE(sdev->stall_until);

	*val = until && time_before(jiffies, until) ? jiffies_to_msecs(until - jiffies) : 0;
	return 0;
}

static int softib_send_stall_set(void *data, u64 val)
{
	struct softib_dev *sdev = data;

	if (val > 600000)
		return -EINVAL;
	/* 0 would read as "no stall" */
	WRITE_ONCE(sdev->stall_until, val ? (jiffies + msecs_to_jiffies(val)) | 1 : 0);
	/* a stall that ends early lets the queue go at once */
	mod_delayed_work(system_unbound_wq, &sdev->tx_work, 0);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_send_stall_fops, softib_send_stall_get, softib_send_stall_set,
			 "%llu\n");

/* path_mtu: 0, or an IB MTU in bytes (256..4096): a thin link behind the port */
static int softib_path_mtu_get(void *data, u64 *val)
{
	struct softib_dev *sdev = data;

	*val = READ_ONCE(sdev->path_mtu);
	return 0;
}

static int softib_path_mtu_set(void *data, u64 val)
{
	struct softib_dev *sdev = data;

	if (val && (val < 256 || val > 4096 || !is_power_of_2(val)))
		return -EINVAL;
	WRITE_ONCE(sdev->path_mtu, val);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_path_mtu_fops, softib_path_mtu_get, softib_path_mtu_set,
			 "%llu\n");

/*
 * leak_test: write N (1..16): N objects of SOFTIB_LEAK_SIZE bytes are
 * allocated and lost on purpose, so that a test proves kmemleak sees a leak
 * (its report names softib_leak_test_set in their backtrace). Never written
 * outside that test.
 */
#define SOFTIB_LEAK_SIZE	1234

static int softib_leak_test_set(void *data, u64 val)
{
	void *p;

	if (!val || val > 16)
		return -EINVAL;
	while (val--) {
		p = kmalloc(SOFTIB_LEAK_SIZE, GFP_KERNEL);
		if (!p)
			return -ENOMEM;
		/* no byte pattern that could read as a pointer */
		memset(p, 0, SOFTIB_LEAK_SIZE);
	}
	pr_info("leak_test: objects of %d bytes lost on purpose\n", SOFTIB_LEAK_SIZE);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_leak_test_fops, NULL, softib_leak_test_set, "%llu\n");

/* qp_fatal: write a QPN; that QP goes to ERR with IB_EVENT_QP_FATAL */
static int softib_qp_fatal_set(void *data, u64 val)
{
	if (val > 0xffffff)
		return -EINVAL;
	return softib_qp_fatal(data, val);
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_qp_fatal_fops, NULL, softib_qp_fatal_set, "%llu\n");

/*
 * rc_rdma_write: write the QPN of an RC QP; its peer (the LID and PSN the
 * QP expects) sends it a 64-byte RDMA WRITE ONLY, as any host on the
 * partition could. A QP that did not allow remote writes refuses it
 * (softib_rc.c: NAK, ERR, IB_EVENT_QP_ACCESS_ERR).
 */
#define SOFTIB_RDMA_WRITE_LEN	64

static int softib_rc_rdma_write_set(void *data, u64 val)
{
	struct softib_dev *sdev = data;
	struct softib_pkt *pkt;
	struct softib_qp *qp;
	int err;

	if (val > 0xffffff)
		return -EINVAL;
	pkt = softib_pkt_alloc(SOFTIB_RDMA_WRITE_LEN, GFP_KERNEL);
	if (!pkt)
		return -ENOMEM;
	rcu_read_lock();
	qp = softib_qp_find(sdev, val);
	err = qp ? softib_rc_peer_pkt(sdev, qp, pkt) : -ENOENT;
	rcu_read_unlock();
	if (!err) {
		pkt->opcode = IB_OPCODE_RC_RDMA_WRITE_ONLY;
		pkt->ack_req = true;
		pkt->va = 0x10000;
		pkt->rkey = 0x1234;
		pkt->dma_len = SOFTIB_RDMA_WRITE_LEN;
		memset(pkt->data, 0x5a, SOFTIB_RDMA_WRITE_LEN);
		softib_rx(sdev, pkt);
	}
	softib_pkt_free(pkt);
	return err;
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_rc_rdma_write_fops, NULL, softib_rc_rdma_write_set, "%llu\n");

/* dev_fatal: write 1; IB_EVENT_DEVICE_FATAL, every QP to ERR */
static int softib_dev_fatal_set(void *data, u64 val)
{
	if (val != 1)
		return -EINVAL;
	softib_dev_fatal(data);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_dev_fatal_fops, NULL, softib_dev_fatal_set, "%llu\n");

void softib_debugfs_dev_add(struct softib_dev *sdev)
{
	struct dentry *dir;

	dir = debugfs_create_dir(softib_dev_name(sdev), softib_debugfs_root);
	sdev->debugfs = dir;
	debugfs_create_file("state", 0600, dir, sdev, &softib_state_fops);
	debugfs_create_file("lid", 0600, dir, sdev, &softib_lid_fops);
	debugfs_create_file("rereg", 0200, dir, sdev, &softib_rereg_fops);
	debugfs_create_file("pkeys", 0600, dir, sdev, &softib_pkeys_fops);
	debugfs_create_file("counters", 0400, dir, sdev, &softib_counters_fops);
	debugfs_create_file("inject", 0200, dir, sdev, &softib_inject_fops);
	softib_fuzz_debugfs_add(sdev, dir);
	debugfs_create_file_unsafe("fail_post_send", 0600, dir, &sdev->fail_post_send,
				   &softib_atomic_fops);
	debugfs_create_file_unsafe("fail_create_ah", 0600, dir, &sdev->fail_create_ah,
				   &softib_atomic_fops);
	debugfs_create_u32("fail_ah_dlid", 0600, dir, &sdev->fail_ah_dlid);
	debugfs_create_file_unsafe("path_mtu", 0600, dir, sdev, &softib_path_mtu_fops);
	debugfs_create_file_unsafe("rx_starve", 0600, dir, &sdev->rx_starve,
				   &softib_atomic_fops);
	debugfs_create_file_unsafe("lso_bad_mss", 0600, dir, &sdev->lso_bad_mss,
				   &softib_atomic_fops);
	debugfs_create_file_unsafe("lso_bad_hlen", 0600, dir, &sdev->lso_bad_hlen,
				   &softib_atomic_fops);
	debugfs_create_file_unsafe("send_stall_ms", 0600, dir, sdev, &softib_send_stall_fops);
	/* packets waiting to leave (a snapshot, read without txq_lock) */
	debugfs_create_u32("txq_len", 0400, dir, &sdev->txq_len);
	debugfs_create_file_unsafe("qp_fatal", 0200, dir, sdev, &softib_qp_fatal_fops);
	debugfs_create_file_unsafe("rc_rdma_write", 0200, dir, sdev, &softib_rc_rdma_write_fops);
	if (sdev->port_num != 1)
		return;
	/* the HCA's own (CQs and fatal errors are not per port): port 1's directory */
	debugfs_create_file_unsafe("fail_cq_overflow", 0600, dir, &sdev->fail_cq_overflow,
				   &softib_atomic_fops);
	debugfs_create_file_unsafe("fail_modify_cq", 0600, dir, &sdev->fail_modify_cq,
				   &softib_atomic_fops);
	debugfs_create_file_unsafe("fail_create_cq", 0600, dir, &sdev->fail_create_cq,
				   &softib_atomic_fops);
	debugfs_create_file_unsafe("fail_modify_qp", 0600, dir, &sdev->fail_modify_qp,
				   &softib_atomic_fops);
	debugfs_create_file_unsafe("dev_fatal", 0200, dir, sdev, &softib_dev_fatal_fops);
}

void softib_debugfs_dev_remove(struct softib_dev *sdev)
{
	/* waits for readers and writers of these files to leave */
	debugfs_remove_recursive(sdev->debugfs);
	sdev->debugfs = NULL;
}

/* sm: name of the SM's device; a write moves the SM */
static int softib_sm_show(struct seq_file *m, void *v)
{
	struct softib_dev *sdev;
	u16 lid = softib_sm_lid();
	bool found = false;

	mutex_lock(&softib_devs_lock);
	list_for_each_entry(sdev, &softib_devs, list) {
		if (softib_dev_lid(sdev) == lid) {
			seq_printf(m, "%s\n", softib_dev_name(sdev));
			found = true;
			break;
		}
	}
	mutex_unlock(&softib_devs_lock);
	if (!found)
		seq_printf(m, "none (sm_lid 0x%x)\n", lid);
	return 0;
}

static int softib_sm_open(struct inode *inode, struct file *file)
{
	return single_open(file, softib_sm_show, inode->i_private);
}

static ssize_t softib_sm_write(struct file *file, const char __user *ubuf,
			       size_t count, loff_t *ppos)
{
	struct softib_dev *sdev;
	char buf[IB_DEVICE_NAME_MAX + 1], *s;
	u16 lid = 0;
	int err;

	err = softib_dbg_read_user(ubuf, count, buf, sizeof(buf), &s);
	if (err)
		return err;
	mutex_lock(&softib_devs_lock);
	sdev = softib_dev_find_by_name(s);
	if (sdev)
		lid = softib_dev_lid(sdev);
	mutex_unlock(&softib_devs_lock);
	if (!sdev)
		return -ENODEV;
	softib_sm_failover(lid);
	return count;
}

static const struct file_operations softib_sm_fops = {
	.owner = THIS_MODULE,
	.open = softib_sm_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = softib_sm_write,
};

static ssize_t softib_sm_restart_write(struct file *file, const char __user *ubuf,
				       size_t count, loff_t *ppos)
{
	softib_sm_restart();
	return count;
}

static const struct file_operations softib_sm_restart_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = softib_sm_restart_write,
	.llseek = noop_llseek,
};

/* gid_prefix: the subnet's GID prefix (hex); a write raises GID_CHANGE */
static int softib_gid_prefix_get(void *data, u64 *val)
{
	*val = softib_subnet_prefix();
	return 0;
}

static int softib_gid_prefix_set(void *data, u64 val)
{
	if (!val)
		return -EINVAL;
	softib_set_subnet_prefix(val);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_gid_prefix_fops, softib_gid_prefix_get,
			 softib_gid_prefix_set, "0x%016llx\n");

/* loss_pct, dup_pct, reorder_pct, corrupt_pct: 0..100 */
static int softib_pct_get(void *data, u64 *val)
{
	*val = READ_ONCE(*(unsigned int *)data);
	return 0;
}

static int softib_pct_set(void *data, u64 val)
{
	if (val > 100)
		return -EINVAL;
	WRITE_ONCE(*(unsigned int *)data, val);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_pct_fops, softib_pct_get, softib_pct_set, "%llu\n");

static int softib_seed_get(void *data, u64 *val)
{
	*val = READ_ONCE(softib_seed);
	return 0;
}

static int softib_seed_set(void *data, u64 val)
{
	if (val > U32_MAX)
		return -EINVAL;
	softib_fabric_set_seed(val);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(softib_seed_fops, softib_seed_get, softib_seed_set, "%llu\n");

void softib_debugfs_init(void)
{
	struct dentry *root;

	root = debugfs_create_dir("softib", NULL);
	softib_debugfs_root = root;
	debugfs_create_file("sm", 0600, root, NULL, &softib_sm_fops);
	debugfs_create_file("sm_restart", 0200, root, NULL, &softib_sm_restart_fops);
	debugfs_create_file_unsafe("leak_test", 0200, root, NULL, &softib_leak_test_fops);
	debugfs_create_file_unsafe("gid_prefix", 0600, root, NULL, &softib_gid_prefix_fops);
	debugfs_create_file_unsafe("loss_pct", 0600, root, &softib_loss_pct, &softib_pct_fops);
	debugfs_create_file_unsafe("dup_pct", 0600, root, &softib_dup_pct, &softib_pct_fops);
	debugfs_create_file_unsafe("reorder_pct", 0600, root, &softib_reorder_pct,
				   &softib_pct_fops);
	debugfs_create_file_unsafe("corrupt_pct", 0600, root, &softib_corrupt_pct,
				   &softib_pct_fops);
	debugfs_create_file_unsafe("seed", 0600, root, NULL, &softib_seed_fops);
	debugfs_create_x32("sl_drop", 0600, root, &softib_sl_drop);
}

void softib_debugfs_exit(void)
{
	debugfs_remove_recursive(softib_debugfs_root);
	softib_debugfs_root = NULL;
}
