// SPDX-License-Identifier: GPL-2.0
/*
 * softib: a seeded generator of hostile frames for the ULP on a port.
 *
 * Writing "SEED COUNT [START]" to /sys/kernel/debug/softib/<dev>/inject_random
 * generates frames START .. START+COUNT-1 of the sequence SEED and delivers
 * each through the port's receive path (softib_rx(), or the wire parser for
 * the "wire" kind), as if it came off the fabric. Frame i depends only on
 * SEED and i, so one frame found guilty is replayed with "SEED 1 i".
 *
 * The frames are addressed to the first UD QP of the port (the IPoIB QP when
 * one ULP is loaded), with its Q_Key and P_Key unless the kind spoils them:
 * random encapsulation types, truncated or odd ARP (wrong hardware length),
 * IPv6 neighbour discovery with truncated options, IPv4 with random fields,
 * zero to three byte payloads, payloads above the receive buffer or the MTU,
 * garbage GRHs, the port's own LID and QPN as the source, multicast to the
 * groups the QP joined, random BTH/DETH fields, and wire frames with flipped
 * bits or cut short. Reading the file shows the last run: how many of each
 * kind, how many the wire parser refused, how many multicast frames went to a
 * group nobody here joined (filtered, not a drop), and a hash of what was
 * generated (the same for the same SEED, COUNT and START).
 */
#include <linux/crc32.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/if_ether.h>
#include <linux/in6.h>
#include <linux/mutex.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/ip6_checksum.h>
#include <rdma/ib_pack.h>

#include "softib.h"
#include "softib_eth.h"
#include "softib_fuzz.h"

#define SOFTIB_FUZZ_MAX_LEN	4608	/* payload bytes: above any port MTU */
#define SOFTIB_FUZZ_RAND_LEN	256	/* random bytes at most; zeros after */
#define SOFTIB_FUZZ_WIRE_MAX	(SOFTIB_FUZZ_MAX_LEN + 128)
#define SOFTIB_FUZZ_FIRST_UD_QPN 0x48
#define SOFTIB_FUZZ_ARPHRD_IB	32
#define SOFTIB_FUZZ_HW_LEN	20	/* IPoIB hardware address: QPN + GID */

enum softib_fuzz_kind {
	SOFTIB_FUZZ_ENCAP,	/* random encapsulation type and payload */
	SOFTIB_FUZZ_ARP,	/* ARP: truncated, wrong lengths */
	SOFTIB_FUZZ_ND,		/* IPv6 ND with odd or truncated options */
	SOFTIB_FUZZ_IPV4,	/* IPv4 with random fields */
	SOFTIB_FUZZ_SHORT,	/* 0 to 3 payload bytes */
	SOFTIB_FUZZ_OVERSIZE,	/* above the receive buffer or the MTU */
	SOFTIB_FUZZ_GRH,	/* unicast with a garbage GRH */
	SOFTIB_FUZZ_SELF,	/* our own LID and QPN as the source */
	SOFTIB_FUZZ_MCAST,	/* to a group the QP joined (or not) */
	SOFTIB_FUZZ_HDR,	/* random BTH/DETH/LRH fields */
	SOFTIB_FUZZ_WIRE,	/* wire frame, bits flipped or cut short */
	SOFTIB_FUZZ_NR
};

static const char * const softib_fuzz_kind_names[SOFTIB_FUZZ_NR] = {
	"encap", "arp", "nd", "ipv4", "short", "oversize", "grh", "self",
	"mcast", "hdr", "wire",
};

struct softib_fuzz_stats {
	u32 seed;
	u64 start, count, done;
	u64 kinds[SOFTIB_FUZZ_NR];
	u64 wire_bad;		/* refused by the wire parser (counted by it) */
	u64 filtered;		/* multicast to a group not joined here */
	u32 hash;
};

/* softib_fuzz_lock serializes runs and protects softib_fuzz_last. */
static DEFINE_MUTEX(softib_fuzz_lock);
static struct softib_fuzz_stats softib_fuzz_last;

/* The target, sampled once per run. */
struct softib_fuzz_target {
	struct softib_dev *sdev;
	u32 qpn, qkey;
	u16 pkey, lid;
	u16 mlid;		/* 0: the QP joined no group */
	union ib_gid mgid, gid;
};

/* splitmix64: frame i of SEED gets its own state, so any frame replays. */
static u64 softib_fuzz_next(u64 *s)
{
	u64 z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static u32 softib_fuzz_below(u64 *s, u32 n)
{
	return n ? (u32)(softib_fuzz_next(s) % n) : 0;
}

static void softib_fuzz_fill(u64 *s, u8 *p, size_t len)
{
	size_t n = min_t(size_t, len, SOFTIB_FUZZ_RAND_LEN), i;

	for (i = 0; i < n; i += 8) {
		u64 r = softib_fuzz_next(s);

		memcpy(p + i, &r, min_t(size_t, 8, n - i));
	}
	memset(p + n, 0, len - n);
}

static void softib_fuzz_encap(u8 *p, u16 proto)
{
	put_unaligned_be16(proto, p);
	put_unaligned_be16(0, p + 2);
}

/* ARP for IPoIB (hw type 32, 20-byte addresses), spoiled at random. */
static u32 softib_fuzz_arp(u64 *s, u8 *p)
{
	u8 hlen = softib_fuzz_below(s, 4) ? SOFTIB_FUZZ_HW_LEN :
		  softib_fuzz_below(s, 256);
	u32 full = 4 + 8 + 2 * (SOFTIB_FUZZ_HW_LEN + 4);
	u8 *a = p + 4;

	softib_fuzz_fill(s, p, full);
	softib_fuzz_encap(p, ETH_P_ARP);
	put_unaligned_be16(softib_fuzz_below(s, 4) ? SOFTIB_FUZZ_ARPHRD_IB :
			   softib_fuzz_below(s, 65536), a);
	put_unaligned_be16(ETH_P_IP, a + 2);
	a[4] = hlen;
	a[5] = softib_fuzz_below(s, 4) ? 4 : softib_fuzz_below(s, 256);
	put_unaligned_be16(1 + softib_fuzz_below(s, 2), a + 6);
	/* a quarter ask for 192.0.2.2, the address the tests give the port */
	if (!softib_fuzz_below(s, 4))
		put_unaligned_be32(0xc0000202, a + 8 + 2 * SOFTIB_FUZZ_HW_LEN + 4);
	/* half are cut short, anywhere */
	return softib_fuzz_below(s, 2) ? full : softib_fuzz_below(s, full + 1);
}

/* IPv6 neighbour discovery: RS/RA/NS/NA/redirect with odd options. */
static u32 softib_fuzz_nd(u64 *s, u8 *p)
{
	struct in6_addr saddr = { }, daddr = { };
	u32 body = 8 + 16 + 8 * softib_fuzz_below(s, 6);
	u32 len = 4 + 40 + body, opt;
	u8 *ip6 = p + 4, *icmp = ip6 + 40;
	__sum16 sum;

	softib_fuzz_fill(s, p, len);
	softib_fuzz_encap(p, ETH_P_IPV6);
	put_unaligned_be32(6 << 28, ip6);
	put_unaligned_be16(body, ip6 + 4);
	ip6[6] = IPPROTO_ICMPV6;
	ip6[7] = 255;
	saddr.s6_addr[0] = 0xfe;
	saddr.s6_addr[1] = 0x80;
	memcpy(&saddr.s6_addr[8], ip6 + 16, 8);
	daddr.s6_addr[0] = 0xff;
	daddr.s6_addr[1] = 0x02;
	daddr.s6_addr[15] = 1;
	memcpy(ip6 + 8, &saddr, 16);
	memcpy(ip6 + 24, &daddr, 16);
	icmp[0] = 133 + softib_fuzz_below(s, 5);
	icmp[1] = 0;
	put_unaligned_be16(0, icmp + 2);
	/* options after the fixed part: lladdr with a random length in units */
	for (opt = 24; opt + 2 <= body; opt += 8) {
		icmp[opt] = 1 + softib_fuzz_below(s, 2);
		icmp[opt + 1] = softib_fuzz_below(s, 5);
	}
	sum = csum_ipv6_magic(&saddr, &daddr, body, IPPROTO_ICMPV6,
			      csum_partial(icmp, body, 0));
	if (softib_fuzz_below(s, 4))
		memcpy(icmp + 2, &sum, 2);
	return softib_fuzz_below(s, 3) ? len : softib_fuzz_below(s, len + 1);
}

static u32 softib_fuzz_ipv4(u64 *s, u8 *p)
{
	u32 len = 4 + 20 + softib_fuzz_below(s, 64);
	u8 *ip = p + 4;

	softib_fuzz_fill(s, p, len);
	softib_fuzz_encap(p, ETH_P_IP);
	if (softib_fuzz_below(s, 2))
		ip[0] = 0x45;
	put_unaligned_be32(0xc0000202, ip + 16);
	if (softib_fuzz_below(s, 2)) {
		__sum16 sum;

		put_unaligned_be16(len - 4, ip + 2);
		put_unaligned_be16(0, ip + 10);
		sum = ip_fast_csum(ip, 5);
		memcpy(ip + 10, &sum, 2);
	}
	return len;
}

static bool softib_fuzz_joined(struct softib_dev *sdev, u16 mlid)
{
	struct softib_mcast_att *att;
	bool found = false;

	rcu_read_lock();
	list_for_each_entry_rcu(att, &sdev->mcast, list)
		if (att->mlid == mlid)
			found = true;
	rcu_read_unlock();
	return found;
}

/* Build frame number i of the run into pkt (data room SOFTIB_FUZZ_MAX_LEN). */
static enum softib_fuzz_kind softib_fuzz_frame(const struct softib_fuzz_target *t,
					       u64 *s, struct softib_pkt *pkt)
{
	enum softib_fuzz_kind kind = softib_fuzz_below(s, SOFTIB_FUZZ_NR);
	u8 *p = pkt->data;

	pkt->slid = 1 + softib_fuzz_below(s, 0xbffe);
	pkt->dlid = t->lid;
	pkt->sl = 0;
	pkt->has_grh = false;
	pkt->opcode = softib_fuzz_below(s, 8) ? IB_OPCODE_UD_SEND_ONLY :
		      IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE;
	pkt->pkey = t->pkey;
	pkt->dqpn = t->qpn;
	pkt->qkey = t->qkey;
	pkt->sqpn = softib_fuzz_below(s, 0x1000000);
	pkt->imm = 0;

	switch (kind) {
	case SOFTIB_FUZZ_ENCAP:
	case SOFTIB_FUZZ_WIRE:
		pkt->len = softib_fuzz_below(s, 200);
		softib_fuzz_fill(s, p, pkt->len);
		break;
	case SOFTIB_FUZZ_ARP:
		pkt->len = softib_fuzz_arp(s, p);
		break;
	case SOFTIB_FUZZ_ND:
		pkt->len = softib_fuzz_nd(s, p);
		break;
	case SOFTIB_FUZZ_IPV4:
		pkt->len = softib_fuzz_ipv4(s, p);
		break;
	case SOFTIB_FUZZ_SHORT:
		pkt->len = softib_fuzz_below(s, 4);
		softib_fuzz_fill(s, p, pkt->len);
		break;
	case SOFTIB_FUZZ_OVERSIZE:
		pkt->len = 2000 + softib_fuzz_below(s, SOFTIB_FUZZ_MAX_LEN - 2000 + 1);
		softib_fuzz_fill(s, p, pkt->len);
		softib_fuzz_encap(p, softib_fuzz_below(s, 2) ? ETH_P_IP : ETH_P_IPV6);
		break;
	case SOFTIB_FUZZ_GRH:
		pkt->has_grh = true;
		softib_fuzz_fill(s, (u8 *)&pkt->grh, sizeof(pkt->grh));
		pkt->len = 4 + softib_fuzz_below(s, 100);
		softib_fuzz_fill(s, p, pkt->len);
		softib_fuzz_encap(p, softib_fuzz_below(s, 2) ? ETH_P_IP : ETH_P_ARP);
		break;
	case SOFTIB_FUZZ_SELF:
		pkt->slid = t->lid;
		pkt->sqpn = t->qpn;
		pkt->len = softib_fuzz_below(s, 100);
		softib_fuzz_fill(s, p, pkt->len);
		break;
	case SOFTIB_FUZZ_MCAST:
		pkt->dlid = t->mlid && softib_fuzz_below(s, 4) ? t->mlid :
			    0xc000 + softib_fuzz_below(s, 0x3fff);
		pkt->dqpn = IB_MULTICAST_QPN;
		pkt->has_grh = true;
		softib_fuzz_fill(s, (u8 *)&pkt->grh, sizeof(pkt->grh));
		if (softib_fuzz_below(s, 4))
			pkt->grh.dgid = t->mgid;
		if (!softib_fuzz_below(s, 4))
			pkt->grh.sgid = t->gid;
		pkt->len = softib_fuzz_below(s, 100);
		softib_fuzz_fill(s, p, pkt->len);
		if (pkt->len >= 4)
			softib_fuzz_encap(p, softib_fuzz_below(s, 2) ? ETH_P_ARP : ETH_P_IPV6);
		break;
	case SOFTIB_FUZZ_HDR:
	default:
		pkt->len = softib_fuzz_below(s, 64);
		softib_fuzz_fill(s, p, pkt->len);
		switch (softib_fuzz_below(s, 7)) {
		case 0:
			pkt->opcode = softib_fuzz_next(s);
			break;
		case 1:
			pkt->dqpn = softib_fuzz_next(s);
			break;
		case 2:
			pkt->sqpn = softib_fuzz_next(s);
			break;
		case 3:
			pkt->pkey = softib_fuzz_next(s);
			break;
		case 4:
			pkt->qkey = softib_fuzz_next(s);
			break;
		case 5:
			pkt->slid = softib_fuzz_next(s);
			break;
		default:
			pkt->dlid = softib_fuzz_next(s);
			break;
		}
		break;
	}
	return kind;
}

/* Spoil a built wire frame: flip bits, cut it, or grow it. */
static size_t softib_fuzz_spoil(u64 *s, u8 *buf, size_t len)
{
	u32 n, i;

	switch (softib_fuzz_below(s, 3)) {
	case 0:
		n = 1 + softib_fuzz_below(s, 4);
		for (i = 0; i < n; i++) {
			u32 bit = softib_fuzz_below(s, min_t(u32, len, 96) * 8);

			buf[bit / 8] ^= 1 << (bit % 8);
		}
		return len;
	case 1:
		return softib_fuzz_below(s, len);
	default:
		n = min_t(u32, 1 + softib_fuzz_below(s, 64), SOFTIB_FUZZ_WIRE_MAX - len);
		softib_fuzz_fill(s, buf + len, n);
		return len + n;
	}
}

static u32 softib_fuzz_hash(u32 h, enum softib_fuzz_kind kind, const struct softib_pkt *pkt)
{
	u32 v[10] = {
		kind, pkt->len, pkt->slid, pkt->dlid, pkt->dqpn, pkt->sqpn,
		pkt->qkey, pkt->pkey << 8 | pkt->opcode, 0, 0,
	};

	memcpy(&v[8], pkt->data, min_t(u32, pkt->len, 8));
	return crc32_le(h, (const u8 *)v, sizeof(v));
}

/* The first UD QP of the port, and the first group it joined. */
static int softib_fuzz_target(struct softib_dev *sdev, struct softib_fuzz_target *t)
{
	unsigned long idx = SOFTIB_FUZZ_FIRST_UD_QPN;
	struct softib_mcast_att *att;
	struct softib_qp *qp;
	int ret = -ENODEV;

	memset(t, 0, sizeof(*t));
	t->sdev = sdev;
	t->lid = softib_dev_lid(sdev);
	t->gid.global.subnet_prefix = cpu_to_be64(0xfe80000000000000ULL);
	t->gid.global.interface_id = cpu_to_be64(sdev->guid);
	rcu_read_lock();
	/* the HCA's table holds every port's QPs */
	xa_for_each_start(&sdev->hca->qps, idx, qp, SOFTIB_FUZZ_FIRST_UD_QPN)
		if (READ_ONCE(qp->sport) == sdev)
			break;
	if (qp) {
		t->qpn = qp->ibqp.qp_num;
		t->qkey = READ_ONCE(qp->qkey);
		t->pkey = READ_ONCE(sdev->pkeys[qp->pkey_index % SOFTIB_PKEY_TBL_LEN]);
		list_for_each_entry_rcu(att, &sdev->mcast, list) {
			if (att->qp == qp) {
				t->mlid = att->mlid;
				t->mgid = att->mgid;
				break;
			}
		}
		ret = 0;
	}
	rcu_read_unlock();
	return ret;
}

static int softib_fuzz_run(struct softib_dev *sdev, u32 seed, u64 start, u64 count,
			   struct softib_fuzz_stats *st)
{
	struct softib_fuzz_target t;
	struct softib_pkt *pkt, *parsed;
	enum softib_counter why;
	u64 i;
	u8 *wire;
	int err;

	err = softib_fuzz_target(sdev, &t);
	if (err)
		return err;
	pkt = softib_pkt_alloc(SOFTIB_FUZZ_MAX_LEN, GFP_KERNEL);
	wire = kmalloc(SOFTIB_FUZZ_WIRE_MAX, GFP_KERNEL);
	if (!pkt || !wire) {
		err = -ENOMEM;
		goto out_free;
	}
	memset(st, 0, sizeof(*st));
	st->seed = seed;
	st->start = start;
	st->count = count;

	for (i = start; i < start + count; i++) {
		u64 s = (u64)seed << 32 ^ i * 0xd1b54a32d192ed03ULL;
		enum softib_fuzz_kind kind = softib_fuzz_frame(&t, &s, pkt);

		st->kinds[kind]++;
		st->hash = softib_fuzz_hash(st->hash, kind, pkt);
		if (softib_lid_is_mcast(pkt->dlid) && !softib_fuzz_joined(sdev, pkt->dlid))
			st->filtered++;
		if (kind == SOFTIB_FUZZ_WIRE) {
			size_t len = softib_wire_len(pkt);

			softib_wire_build(pkt, wire);
			len = softib_fuzz_spoil(&s, wire, len);
			why = SOFTIB_CNT_DROP_MALFORMED;
			if (softib_wire_parse(wire, len, &parsed, &why)) {
				softib_count(sdev, why);
				st->wire_bad++;
			} else {
				softib_rx(sdev, parsed);
				softib_pkt_free(parsed);
			}
		} else {
			softib_rx(sdev, pkt);
		}
		st->done++;
		if (!(i % 256)) {
			if (fatal_signal_pending(current))
				break;
			cond_resched();
		}
	}
out_free:
	kfree(wire);
	if (pkt)
		softib_pkt_free(pkt);
	return err;
}

static int softib_fuzz_show(struct seq_file *m, void *v)
{
	struct softib_fuzz_stats st;
	int k;

	mutex_lock(&softib_fuzz_lock);
	st = softib_fuzz_last;
	mutex_unlock(&softib_fuzz_lock);
	seq_printf(m, "seed %u start %llu count %llu done %llu hash 0x%08x\n",
		   st.seed, st.start, st.count, st.done, st.hash);
	seq_printf(m, "wire_bad %llu filtered %llu\n", st.wire_bad, st.filtered);
	for (k = 0; k < SOFTIB_FUZZ_NR; k++)
		seq_printf(m, "%s %llu\n", softib_fuzz_kind_names[k], st.kinds[k]);
	return 0;
}

static int softib_fuzz_open(struct inode *inode, struct file *file)
{
	return single_open(file, softib_fuzz_show, inode->i_private);
}

static ssize_t softib_fuzz_write(struct file *file, const char __user *ubuf,
				 size_t count, loff_t *ppos)
{
	struct softib_dev *sdev = file_inode(file)->i_private;
	struct softib_fuzz_stats *st;
	unsigned long long n, start = 0;
	unsigned int seed;
	char buf[64];
	int err;

	if (!count || count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	if (sscanf(buf, "%u %llu %llu", &seed, &n, &start) < 2 || !n ||
	    n > 100000000ULL || start > U32_MAX)
		return -EINVAL;
	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	mutex_lock(&softib_fuzz_lock);
	err = softib_fuzz_run(sdev, seed, start, n, st);
	if (!err)
		softib_fuzz_last = *st;
	mutex_unlock(&softib_fuzz_lock);
	kfree(st);
	return err ? err : count;
}

static const struct file_operations softib_fuzz_fops = {
	.owner = THIS_MODULE,
	.open = softib_fuzz_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = softib_fuzz_write,
};

void softib_fuzz_debugfs_add(struct softib_dev *sdev, struct dentry *dir)
{
	debugfs_create_file("inject_random", 0600, dir, sdev, &softib_fuzz_fops);
}
