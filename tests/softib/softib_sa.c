// SPDX-License-Identifier: GPL-2.0
/*
 * softib SM/SA: the fabric-resident Subnet Administrator.
 *
 * Answers the SubnAdm MADs the kernel's ib_sa sends: ClassPortInfo GET,
 * PathRecord GET, MCMemberRecord SET (join) and DELETE (leave). Requests
 * arrive as packets addressed to the SM's LID and QP1 (softib_sa_handle());
 * each answer is a new packet from the SM's QP1 back to the requester's QP,
 * without a GRH unless the request had one (ib_mad matches a response to its
 * request by TID, class and that GRH flag).
 *
 * Multicast groups are kept in one list with their members; a member is one
 * port GID with the OR of the JoinState bits it joined with. A group that
 * does not exist is created by its first full member (or send-only full
 * member) with the SA defaults unless the creator gives its own values:
 * Q_Key 0x0b1b, MTU min(sa_mtu, smallest local port MTU), 40 Gb/s, SL sa_sl, as
 * OpenSM pre-creates the IPoIB broadcast group. Like OpenSM, which never
 * deletes the broadcast groups it pre-creates, the SA keeps an empty IPoIB
 * broadcast group (ff1S:401b:PKEY::ffff:ffff); every other group is deleted
 * with its last member. softib_sa_restart() forgets all groups.
 *
 * PathRecords are answered for known ports only: the local softib devices
 * whose port is active, and remote ports (on another host of the Ethernet
 * transport) learned from their own SA requests: the SLID of a join together
 * with its PortGID, or of a PathRecord query with its SGID.
 *
 * Partitions, as OpenSM: a PathRecord between two local ports exists only if
 * they share a partition (the P_Key the query names, or else the first of
 * the source's table; one of the two entries a full member), and carries
 * that P_Key; a local port joins a group only if its table has the group's
 * P_Key. The SA does not know the table of a remote port: it lets it pass.
 *
 * Fault knobs (debugfs, global): sa_drop, sa_delay_ms, sa_status, sa_busy,
 * sa_bad, sa_remove; dumps: sa_groups, sa_ports, sa_counters.
 *
 * Multicast is forwarded by membership: the fabric delivers a group's
 * packets to a port on this host only while the SA lists it as a full
 * member or non-member (softib_sa_mcast_routes_to()), as switches an SM
 * programs from its membership tables.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/hashtable.h>
#include <linux/inet.h>
#include <linux/jhash.h>
#include <linux/jiffies.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/rculist.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_pack.h>
#include <rdma/ib_sa.h>
#include <rdma/ib_verbs.h>

#include "softib.h"
#include "softib_sa.h"

/* SubnAdm class-specific MAD status values (IBA 15.2.1.1), in status bits 8-14 */
#define SOFTIB_SA_ERR_NO_RESOURCES	0x0100
#define SOFTIB_SA_ERR_REQ_INVALID	0x0200
#define SOFTIB_SA_ERR_NO_RECORDS	0x0300
#define SOFTIB_SA_ERR_REQ_INVALID_GID	0x0500
#define SOFTIB_SA_ERR_REQ_INSUFFICIENT	0x0600

#define SOFTIB_SA_DEFAULT_QKEY	0x0b1b		/* OpenSM's IPoIB Q_Key */
#define SOFTIB_SA_RATE		IB_RATE_40_GBPS
#define SOFTIB_SA_LIFE		softib_sa_life	/* sa_packet_life */
#define SOFTIB_SA_RESP_TIME	16		/* ClassPortInfo RespTimeValue */
#define SOFTIB_SA_MLID_FIRST	0xc001
#define SOFTIB_SA_MLID_LAST	0xfffe
#define SOFTIB_SA_BAD_MLID	0xffff		/* sa_bad=mlid: not a group MLID */
#define SOFTIB_SA_DEFAULT_SCOPE	2		/* link-local */

/* Bounds on what the wire can make the SA allocate */
#define SOFTIB_SA_MAX_GROUPS	1024
#define SOFTIB_SA_MAX_MEMBERS	4096
#define SOFTIB_SA_MAX_PORTS	16384	/* remote ports learned (bench: 10,000 hosts) */
#define SOFTIB_SA_PORT_BITS	12	/* their hash: 4096 buckets */
#define SOFTIB_SA_MAX_PENDING	1024

/* Record sizes on the wire, bytes; AttributeOffset counts 8-byte words */
#define SOFTIB_SA_PATH_REC_BYTES	64
#define SOFTIB_SA_MCM_REC_BYTES		52
#define SOFTIB_SA_CPI_BYTES		72

#define SOFTIB_SA_JOIN_FULL		BIT(FULLMEMBER_JOIN)
#define SOFTIB_SA_JOIN_SENDONLY_FULL	BIT(SENDONLY_FULLMEMBER_JOIN)
#define SOFTIB_SA_JOIN_ALL		0xf

/*
 * MCMemberRecord as on the wire (IBA 15.2.5.17), big endian. Checked
 * against the bit offsets ib_sa unpacks it with (mcmember_rec_table).
 */
struct softib_mcm_wire {
	u8 mgid[16];
	u8 port_gid[16];
	__be32 qkey;
	__be16 mlid;
	u8 mtu;			/* MTUSelector:2 MTU:6 */
	u8 tclass;
	__be16 pkey;
	u8 rate;		/* RateSelector:2 Rate:6 */
	u8 life;		/* PacketLifeTimeSelector:2 PacketLifeTime:6 */
	__be32 sl_flow_hop;	/* SL:4 FlowLabel:20 HopLimit:8 */
	u8 scope_join;		/* Scope:4 JoinState:4 */
	u8 proxy;		/* ProxyJoin:1 reserved:7 */
	__be16 reserved;
} __packed;

static_assert(sizeof(struct softib_mcm_wire) == SOFTIB_SA_MCM_REC_BYTES);
static_assert(sizeof(struct ib_sa_mad) == IB_MGMT_MAD_SIZE);
static_assert(sizeof(struct ib_class_port_info) == SOFTIB_SA_CPI_BYTES);

/* MCMemberRecord in host order */
struct softib_mcm {
	union ib_gid mgid;
	union ib_gid port_gid;
	u32 qkey;
	u16 mlid;
	u8 mtu_sel;
	u8 mtu;			/* enum ib_mtu */
	u8 tclass;
	u16 pkey;
	u8 rate_sel;
	u8 rate;		/* enum ib_rate */
	u8 life_sel;
	u8 life;
	u8 sl;
	u32 flow;
	u8 hop;
	u8 scope;
	u8 join;
	u8 proxy;
};

struct softib_sa_member {
	struct list_head list;		/* in softib_sa_group.members */
	union ib_gid gid;		/* PortGID */
	u16 lid;			/* SLID of its last join */
	u8 join;			/* JoinState bits, ORed over its joins */
};

struct softib_sa_group {
	struct list_head list;		/* in softib_sa.groups */
	struct list_head members;	/* struct softib_sa_member */
	struct softib_mcm rec;		/* port_gid, join and proxy unused */
};

/* A remote port learned from its own SA requests */
struct softib_sa_port {
	struct list_head list;		/* in softib_sa.ports, least recent first */
	struct hlist_node node;		/* in softib_sa.port_hash, by GID */
	union ib_gid gid;
	u16 lid;
};

/* An answer held back by sa_delay_ms */
struct softib_sa_answer {
	struct list_head list;		/* in softib_sa.pending */
	unsigned long due;		/* jiffies */
	struct softib_pkt *pkt;		/* sent from the device whose LID is pkt->slid */
};

enum softib_sa_counter {
	SOFTIB_SA_CNT_PATH_GET,
	SOFTIB_SA_CNT_PATH_NO_RECORD,
	SOFTIB_SA_CNT_MCM_SET,
	SOFTIB_SA_CNT_MCM_DELETE,
	SOFTIB_SA_CNT_CPI_GET,
	SOFTIB_SA_CNT_DROPPED,
	SOFTIB_SA_CNT_ERRORED,
	SOFTIB_SA_CNT_BAD_REQUEST,
	SOFTIB_SA_CNT_PATH_GET_NS,
	SOFTIB_SA_NR_COUNTERS
};

static const char * const softib_sa_counter_names[SOFTIB_SA_NR_COUNTERS] = {
	[SOFTIB_SA_CNT_PATH_GET]	= "path_get",
	[SOFTIB_SA_CNT_PATH_NO_RECORD]	= "path_no_record",
	[SOFTIB_SA_CNT_MCM_SET]		= "mcm_set",
	[SOFTIB_SA_CNT_MCM_DELETE]	= "mcm_delete",
	[SOFTIB_SA_CNT_CPI_GET]		= "cpi_get",
	[SOFTIB_SA_CNT_DROPPED]		= "dropped",
	[SOFTIB_SA_CNT_ERRORED]		= "errored",
	[SOFTIB_SA_CNT_BAD_REQUEST]	= "bad_request",
	/* the SA's own time for PathRecord GETs, request in to answer out */
	[SOFTIB_SA_CNT_PATH_GET_NS]	= "path_get_ns",
};

/* sa_bad: how to spoil successful join answers */
enum softib_sa_bad {
	SOFTIB_SA_BAD_NONE,
	SOFTIB_SA_BAD_MLID_OUT,		/* MLID outside 0xc000-0xfffe */
	SOFTIB_SA_BAD_MTU0,		/* MTU 0, not an enum ib_mtu */
	SOFTIB_SA_BAD_QKEY,		/* a Q_Key other than the group's */
	SOFTIB_SA_NR_BAD
};

static const char * const softib_sa_bad_names[SOFTIB_SA_NR_BAD] = {
	[SOFTIB_SA_BAD_NONE]	 = "none",
	[SOFTIB_SA_BAD_MLID_OUT] = "mlid",
	[SOFTIB_SA_BAD_MTU0]	 = "mtu0",
	[SOFTIB_SA_BAD_QKEY]	 = "qkey",
};

static void softib_sa_delay_work(struct work_struct *work);

static struct softib_sa {
	spinlock_t lock;		/* protects the lists and counts below */
	struct list_head groups;	/* struct softib_sa_group, creation order */
	struct list_head ports;		/* struct softib_sa_port */
	DECLARE_HASHTABLE(port_hash, SOFTIB_SA_PORT_BITS);	/* the same, by GID */
	struct list_head pending;	/* struct softib_sa_answer */
	unsigned int n_groups;
	unsigned int n_members;
	unsigned int n_ports;
	unsigned int n_pending;
	unsigned long next_due;		/* delay_work's expiry, if pending */
	u32 mgid_seq;			/* last SA-assigned MGID */
	struct delayed_work delay_work;	/* sends the due delayed answers */

	/* Fault knobs: written by debugfs, READ_ONCE() by the request path */
	bool drop;			/* sa_drop: answer nothing */
	bool busy;			/* sa_busy: answer status 1 (busy) */
	u32 delay_ms;			/* sa_delay_ms: hold every answer back */
	u16 status;			/* sa_status: answer with this status */
	enum softib_sa_bad bad;		/* sa_bad */
	u8 mtu;				/* enum ib_mtu from the sa_mtu parameter */
	u8 path_mtu;			/* enum ib_mtu: sa_path_mtu, else sa_mtu */

	atomic64_t counters[SOFTIB_SA_NR_COUNTERS];
} softib_sa = {
	.lock = __SPIN_LOCK_UNLOCKED(softib_sa.lock),
	.groups = LIST_HEAD_INIT(softib_sa.groups),
	.ports = LIST_HEAD_INIT(softib_sa.ports),
	.pending = LIST_HEAD_INIT(softib_sa.pending),
	.delay_work = __DELAYED_WORK_INITIALIZER(softib_sa.delay_work,
						 softib_sa_delay_work, 0),
	.mtu = IB_MTU_2048,
	.path_mtu = IB_MTU_2048,
};

static unsigned int sa_mtu = 2048;
module_param(sa_mtu, uint, 0444);
MODULE_PARM_DESC(sa_mtu,
		 "SA default MTU of new multicast groups and of paths, bytes (256-4096) or enum ib_mtu 1-5 (default 2048)");

/*
 * The MTU of the links between the ports' switches, which PathRecords
 * between two ports carry and the fabric enforces: a UD packet longer is
 * dropped on the way (drop_path_mtu), as a PathRecord MTU of 2048 from
 * OpenSM means a 2048 link on the route. 0: sa_mtu, so that by default the
 * links and the paths agree. 4096 with sa_mtu=2048 is the common fabric of
 * 4K links and a 2K IPoIB broadcast group.
 */
static unsigned int sa_path_mtu;
module_param(sa_path_mtu, uint, 0444);
MODULE_PARM_DESC(sa_path_mtu,
		 "MTU of the links between switches and of PathRecords between two ports, bytes (256-4096) or enum ib_mtu 1-5 (default 0: sa_mtu)");

/*
 * PacketLifeTime of paths and new groups: 4.096 us * 2^N. OpenSM's default
 * is 0x12 (1.07 s: ib_cm's ACK timeout is twice that, so a dead RC peer
 * fails a send after 7 x 2.1 s); ours is shorter so that cases about RC
 * loss run in seconds, and a case about a dead peer sets 18.
 */
static unsigned int softib_sa_life = 14;	/* 67 ms */
module_param_named(sa_packet_life, softib_sa_life, uint, 0444);
MODULE_PARM_DESC(sa_packet_life,
		 "PacketLifeTime of PathRecords and new groups, 4.096 us * 2^N (0-31, default 14; OpenSM's is 18)");

static unsigned int sa_sl;
module_param(sa_sl, uint, 0444);
MODULE_PARM_DESC(sa_sl,
		 "SL of every PathRecord, of new multicast groups and of the ports' SMSL (0-14, default 0)");

unsigned int softib_sa_sl(void)
{
	return sa_sl;
}

/* Everything a request handler needs, gathered before the lock is taken */
struct softib_sa_req {
	const struct softib_pkt *pkt;
	struct ib_sa_mad *mad;		/* the answer, a copy of the request */
	ib_sa_comp_mask mask;		/* ComponentMask of the request */
	u8 mtu_cap;			/* enum ib_mtu: smallest local port MTU */
	u8 mtu;				/* enum ib_mtu: SA default MTU */
	u8 path_mtu;			/* enum ib_mtu: paths between two ports */
};

static void softib_sa_count(enum softib_sa_counter c)
{
	atomic64_inc(&softib_sa.counters[c]);
}

static bool softib_sa_gid_zero(const union ib_gid *gid)
{
	return !gid->global.subnet_prefix && !gid->global.interface_id;
}

static bool softib_sa_gid_mcast(const union ib_gid *gid)
{
	return gid->raw[0] == 0xff;
}

/* The selector comparison of IBA 15.2.5.16: is have "sel" want? */
static bool softib_sa_sel_ok(u8 sel, int want, int have)
{
	switch (sel) {
	case IB_SA_GT:
		return have > want;
	case IB_SA_LT:
		return have < want;
	case IB_SA_EQ:
		return have == want;
	default:		/* IB_SA_BEST: anything */
		return true;
	}
}

/*
 * Choose a value in [lo, hi] for a new group: dflt when it satisfies the
 * creator's "sel want", else the bound that does; -1 if none does.
 */
static int softib_sa_pick(u8 sel, int want, int dflt, int lo, int hi)
{
	switch (sel) {
	case IB_SA_GT:
		if (dflt > want)
			return dflt;
		return hi > want ? hi : -1;
	case IB_SA_LT:
		if (dflt < want)
			return dflt;
		return lo < want ? lo : -1;
	case IB_SA_EQ:
		return want >= lo && want <= hi ? want : -1;
	default:
		return dflt;
	}
}

/* Rank of a rate for the selectors: its speed; enum ib_rate is not ordered */
static int softib_sa_rate_rank(u8 rate)
{
	return ib_rate_to_mbps(rate);
}

static int softib_sa_pick_rate(u8 sel, u8 want)
{
	int w = softib_sa_rate_rank(want);
	int dflt = softib_sa_rate_rank(SOFTIB_SA_RATE);

	if (sel == IB_SA_BEST)
		return SOFTIB_SA_RATE;
	if (w <= 0)
		return -1;
	switch (sel) {
	case IB_SA_GT:
		return dflt > w ? SOFTIB_SA_RATE : -1;
	case IB_SA_LT:
		if (dflt < w)
			return SOFTIB_SA_RATE;
		return softib_sa_rate_rank(IB_RATE_2_5_GBPS) < w ?
		       IB_RATE_2_5_GBPS : -1;
	default:		/* IB_SA_EQ: any valid rate */
		return want;
	}
}

static void softib_sa_mcm_unpack(const void *buf, struct softib_mcm *rec)
{
	const struct softib_mcm_wire *w = buf;
	u32 sfh = be32_to_cpu(w->sl_flow_hop);

	memcpy(rec->mgid.raw, w->mgid, sizeof(rec->mgid.raw));
	memcpy(rec->port_gid.raw, w->port_gid, sizeof(rec->port_gid.raw));
	rec->qkey = be32_to_cpu(w->qkey);
	rec->mlid = be16_to_cpu(w->mlid);
	rec->mtu_sel = w->mtu >> 6;
	rec->mtu = w->mtu & 0x3f;
	rec->tclass = w->tclass;
	rec->pkey = be16_to_cpu(w->pkey);
	rec->rate_sel = w->rate >> 6;
	rec->rate = w->rate & 0x3f;
	rec->life_sel = w->life >> 6;
	rec->life = w->life & 0x3f;
	rec->sl = sfh >> 28;
	rec->flow = (sfh >> 8) & 0xfffff;
	rec->hop = sfh & 0xff;
	rec->scope = w->scope_join >> 4;
	rec->join = w->scope_join & 0xf;
	rec->proxy = w->proxy >> 7;
}

static void softib_sa_mcm_pack(const struct softib_mcm *rec, void *buf)
{
	struct softib_mcm_wire *w = buf;

	memset(w, 0, sizeof(*w));
	memcpy(w->mgid, rec->mgid.raw, sizeof(w->mgid));
	memcpy(w->port_gid, rec->port_gid.raw, sizeof(w->port_gid));
	w->qkey = cpu_to_be32(rec->qkey);
	w->mlid = cpu_to_be16(rec->mlid);
	w->mtu = (rec->mtu_sel & 0x3) << 6 | (rec->mtu & 0x3f);
	w->tclass = rec->tclass;
	w->pkey = cpu_to_be16(rec->pkey);
	w->rate = (rec->rate_sel & 0x3) << 6 | (rec->rate & 0x3f);
	w->life = (rec->life_sel & 0x3) << 6 | (rec->life & 0x3f);
	w->sl_flow_hop = cpu_to_be32((u32)(rec->sl & 0xf) << 28 |
				     (rec->flow & 0xfffff) << 8 | rec->hop);
	w->scope_join = (rec->scope & 0xf) << 4 | (rec->join & 0xf);
	w->proxy = (rec->proxy & 1) << 7;
}

/* The local softib port whose GID is gid, or NULL. Caller holds RCU. */
static struct softib_dev *softib_sa_local_dev(const union ib_gid *gid)
{
	struct softib_dev *sdev;

	if (gid->global.subnet_prefix != cpu_to_be64(softib_subnet_prefix()))
		return NULL;
	list_for_each_entry_rcu(sdev, &softib_devs, list)
		if (softib_guid_index(sdev, gid->global.interface_id) >= 0)
			return sdev;
	return NULL;
}

/*
 * The LID of the local softib port that holds gid: > 0 if it is active,
 * 0 if it is down, -1 if no local port holds gid. Any context.
 */
static int softib_sa_local_lid(const union ib_gid *gid)
{
	struct softib_dev *sdev;
	int lid = -1;

	rcu_read_lock();
	sdev = softib_sa_local_dev(gid);
	if (sdev)
		lid = softib_dev_active(sdev) ? softib_dev_lid(sdev) : 0;
	rcu_read_unlock();
	return lid;
}

static u32 softib_sa_gid_hash(const union ib_gid *gid)
{
	return jhash(gid->raw, sizeof(gid->raw), 0);
}

static struct softib_sa_port *softib_sa_port_find(const union ib_gid *gid)
{
	struct softib_sa_port *port;

	lockdep_assert_held(&softib_sa.lock);
	hash_for_each_possible(softib_sa.port_hash, port, node, softib_sa_gid_hash(gid))
		if (!memcmp(port->gid.raw, gid->raw, sizeof(gid->raw)))
			return port;
	return NULL;
}

/* Remember that the remote port gid has LID lid (it sent us a request). */
static void softib_sa_learn(const union ib_gid *gid, u16 lid)
{
	struct softib_sa_port *port;

	lockdep_assert_held(&softib_sa.lock);
	if (!lid || softib_lid_is_mcast(lid) || lid == 0xffff ||
	    softib_sa_gid_zero(gid) || softib_sa_gid_mcast(gid))
		return;

	port = softib_sa_port_find(gid);
	if (!port && softib_sa.n_ports >= SOFTIB_SA_MAX_PORTS) {
		/* reuse the least recently seen entry */
		port = list_first_entry(&softib_sa.ports,
					struct softib_sa_port, list);
		hash_del(&port->node);
		port->gid = *gid;
		hash_add(softib_sa.port_hash, &port->node, softib_sa_gid_hash(gid));
	}
	if (!port) {
		port = kzalloc(sizeof(*port), GFP_ATOMIC);
		if (!port)
			return;
		port->gid = *gid;
		list_add_tail(&port->list, &softib_sa.ports);
		hash_add(softib_sa.port_hash, &port->node, softib_sa_gid_hash(gid));
		softib_sa.n_ports++;
	}
	port->lid = lid;
	list_move_tail(&port->list, &softib_sa.ports);
}

/*
 * The LID of a known port: local (local_lid from softib_sa_local_lid()) or
 * learned. 0 if the port is unknown or down.
 */
static u16 softib_sa_port_lid(const union ib_gid *gid, int local_lid)
{
	struct softib_sa_port *port;

	lockdep_assert_held(&softib_sa.lock);
	if (local_lid >= 0)
		return local_lid;
	port = softib_sa_port_find(gid);
	return port ? port->lid : 0;
}

/* ClassPortInfo GET */
static u16 softib_sa_cpi_get(struct softib_sa_req *r)
{
	struct ib_class_port_info cpi = {
		.base_version = IB_MGMT_BASE_VERSION,
		.class_version = IB_SA_CLASS_VERSION,
	};

	ib_set_cpi_capmask2(&cpi, IB_SA_CAP_MASK2_SENDONLY_FULL_MEM_SUPPORT);
	ib_set_cpi_resp_time(&cpi, SOFTIB_SA_RESP_TIME);
	memset(r->mad->data, 0, sizeof(r->mad->data));
	memcpy(r->mad->data, &cpi, sizeof(cpi));
	r->mad->sa_hdr.attr_offset = cpu_to_be16(SOFTIB_SA_CPI_BYTES / 8);
	return 0;
}

/*
 * Copy the P_Key table of the local port whose GID is @gid into @tbl; false
 * if no local port has it (the SA knows only the LID of a remote port, not
 * its table: checks that need a table let a remote port pass).
 */
static bool softib_sa_local_pkeys(const union ib_gid *gid, u16 *tbl)
{
	struct softib_dev *sdev;
	int i;

	rcu_read_lock();
	sdev = softib_sa_local_dev(gid);
	if (sdev)
		for (i = 0; i < SOFTIB_PKEY_TBL_LEN; i++)
			tbl[i] = READ_ONCE(sdev->pkeys[i]);
	rcu_read_unlock();
	return sdev;
}

/* Has the table an entry of @pkey's partition (either membership)? */
static bool softib_sa_tbl_has(const u16 *tbl, u16 pkey)
{
	int i;

	for (i = 0; i < SOFTIB_PKEY_TBL_LEN; i++)
		if ((tbl[i] & 0x7fff) && (tbl[i] & 0x7fff) == (pkey & 0x7fff))
			return true;
	return false;
}

/* Can ports with tables @a and @b talk in @pkey's partition? */
static bool softib_sa_tbls_share(const u16 *a, const u16 *b, u16 pkey)
{
	int i, j;

	for (i = 0; i < SOFTIB_PKEY_TBL_LEN; i++) {
		if (!(a[i] & 0x7fff) || (a[i] & 0x7fff) != (pkey & 0x7fff))
			continue;
		for (j = 0; j < SOFTIB_PKEY_TBL_LEN; j++)
			if (softib_pkey_match(a[i], b[j]))
				return true;
	}
	return false;
}

/*
 * The P_Key of a path between two local ports, as OpenSM picks it: the one
 * the query names if both ports can use it, else the first entry of the
 * source's table the destination shares; 0 if they share none (no path).
 */
static u16 softib_sa_path_pkey(const union ib_gid *sgid,
			       const union ib_gid *dgid, bool given, u16 pkey)
{
	u16 stbl[SOFTIB_PKEY_TBL_LEN], dtbl[SOFTIB_PKEY_TBL_LEN];
	int i;

	if (!softib_sa_local_pkeys(sgid, stbl) ||
	    !softib_sa_local_pkeys(dgid, dtbl))
		return given ? pkey : 0xffff;
	if (given)
		return softib_sa_tbls_share(stbl, dtbl, pkey) ? pkey : 0;
	for (i = 0; i < SOFTIB_PKEY_TBL_LEN; i++)
		if (softib_sa_tbls_share(stbl, dtbl, stbl[i]))
			return stbl[i] | 0x8000;
	return 0;
}

/*
 * A path's MTU: the SA's, or less where a thin link (path_mtu) lies
 * between the two ports, as OpenSM takes the smallest MTU along the route.
 */
static u8 softib_sa_route_mtu(const union ib_gid *sgid, const union ib_gid *dgid, u8 mtu)
{
	u32 thin;

	rcu_read_lock();
	thin = softib_path_mtu(softib_sa_local_dev(sgid), softib_sa_local_dev(dgid));
	rcu_read_unlock();
	if (thin && thin < ib_mtu_enum_to_int(mtu))
		return ib_mtu_int_to_enum(thin);
	return mtu;
}

/*
 * PathRecord GET: one path between two known ports that share a partition,
 * or "no records".
 */
static u16 softib_sa_path_get(struct softib_sa_req *r)
{
	ib_sa_comp_mask mask = r->mask;
	struct sa_path_rec rec;
	int dlocal, slocal = -1;
	unsigned long flags;
	u16 dlid, slid, pkey;
	u8 sel, mtu;

	ib_sa_unpack_path(r->mad->data, &rec);
	if (!(mask & IB_SA_PATH_REC_DGID))
		return SOFTIB_SA_ERR_REQ_INSUFFICIENT;
	if (softib_sa_gid_mcast(&rec.dgid))
		return SOFTIB_SA_ERR_NO_RECORDS;
	if (!(mask & IB_SA_PATH_REC_SGID)) {
		rec.sgid.global.subnet_prefix = cpu_to_be64(softib_subnet_prefix());
		rec.sgid.global.interface_id =
			cpu_to_be64(softib_guid_from_lid(r->pkt->slid));
	}
	dlocal = softib_sa_local_lid(&rec.dgid);
	slocal = softib_sa_local_lid(&rec.sgid);

	spin_lock_irqsave(&softib_sa.lock, flags);
	if (slocal < 0 && (mask & IB_SA_PATH_REC_SGID))
		softib_sa_learn(&rec.sgid, r->pkt->slid);
	dlid = softib_sa_port_lid(&rec.dgid, dlocal);
	slid = softib_sa_port_lid(&rec.sgid, slocal);
	spin_unlock_irqrestore(&softib_sa.lock, flags);

	if (!dlid || !slid)
		return SOFTIB_SA_ERR_NO_RECORDS;
	if ((mask & IB_SA_PATH_REC_DLID) && be16_to_cpu(rec.ib.dlid) != dlid)
		return SOFTIB_SA_ERR_NO_RECORDS;
	if ((mask & IB_SA_PATH_REC_SLID) && be16_to_cpu(rec.ib.slid) != slid)
		return SOFTIB_SA_ERR_NO_RECORDS;
	if ((mask & IB_SA_PATH_REC_SL) && rec.sl != sa_sl)
		return SOFTIB_SA_ERR_NO_RECORDS;
	pkey = softib_sa_path_pkey(&rec.sgid, &rec.dgid,
				   mask & IB_SA_PATH_REC_PKEY,
				   be16_to_cpu(rec.pkey));
	if (!(pkey & 0x7fff))
		return SOFTIB_SA_ERR_NO_RECORDS;
	mtu = softib_sa_route_mtu(&rec.sgid, &rec.dgid, r->path_mtu);
	if (mask & IB_SA_PATH_REC_MTU) {
		sel = mask & IB_SA_PATH_REC_MTU_SELECTOR ? rec.mtu_selector : IB_SA_EQ;
		if (!softib_sa_sel_ok(sel, rec.mtu, mtu))
			return SOFTIB_SA_ERR_NO_RECORDS;
	}
	if (mask & IB_SA_PATH_REC_RATE) {
		sel = mask & IB_SA_PATH_REC_RATE_SELECTOR ? rec.rate_selector : IB_SA_EQ;
		if (!softib_sa_sel_ok(sel, softib_sa_rate_rank(rec.rate),
				      softib_sa_rate_rank(SOFTIB_SA_RATE)))
			return SOFTIB_SA_ERR_NO_RECORDS;
	}
	if (mask & IB_SA_PATH_REC_PACKET_LIFE_TIME) {
		sel = mask & IB_SA_PATH_REC_PACKET_LIFE_TIME_SELECTOR ?
		      rec.packet_life_time_selector : IB_SA_EQ;
		if (!softib_sa_sel_ok(sel, rec.packet_life_time, SOFTIB_SA_LIFE))
			return SOFTIB_SA_ERR_NO_RECORDS;
	}

	if (!(mask & IB_SA_PATH_REC_SERVICE_ID))
		rec.service_id = 0;
	if (!(mask & IB_SA_PATH_REC_FLOW_LABEL))
		rec.flow_label = 0;
	if (!(mask & IB_SA_PATH_REC_TRAFFIC_CLASS))
		rec.traffic_class = 0;
	rec.pkey = cpu_to_be16(pkey);
	/* hop_limit 0: no GRH, which would need the SGID in the local table */
	rec.hop_limit = 0;
	rec.reversible = 1;
	rec.numb_path = 1;
	rec.qos_class = 0;
	rec.sl = sa_sl;
	rec.mtu_selector = IB_SA_EQ;
	rec.mtu = mtu;
	rec.rate_selector = IB_SA_EQ;
	rec.rate = SOFTIB_SA_RATE;
	rec.packet_life_time_selector = IB_SA_EQ;
	rec.packet_life_time = SOFTIB_SA_LIFE;
	rec.preference = 0;
	rec.rec_type = SA_PATH_REC_TYPE_IB;
	rec.ib.dlid = cpu_to_be16(dlid);
	rec.ib.slid = cpu_to_be16(slid);
	rec.ib.raw_traffic = 0;
	rec.flags = 0;

	memset(r->mad->data, 0, sizeof(r->mad->data));
	ib_sa_pack_path(&rec, r->mad->data);
	r->mad->sa_hdr.attr_offset = cpu_to_be16(SOFTIB_SA_PATH_REC_BYTES / 8);
	return 0;
}

static struct softib_sa_group *softib_sa_group_find(const union ib_gid *mgid)
{
	struct softib_sa_group *group;

	lockdep_assert_held(&softib_sa.lock);
	list_for_each_entry(group, &softib_sa.groups, list)
		if (!memcmp(group->rec.mgid.raw, mgid->raw, sizeof(mgid->raw)))
			return group;
	return NULL;
}

static struct softib_sa_member *
softib_sa_member_find(struct softib_sa_group *group, const union ib_gid *gid)
{
	struct softib_sa_member *member;

	lockdep_assert_held(&softib_sa.lock);
	list_for_each_entry(member, &group->members, list)
		if (!memcmp(member->gid.raw, gid->raw, sizeof(gid->raw)))
			return member;
	return NULL;
}

/* An IPoIB broadcast MGID, ff1S:401b:PKEY::ffff:ffff (RFC 4391) */
static bool softib_sa_is_ipoib_bcast(const union ib_gid *mgid)
{
	static const u8 tail[] = { 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff };

	return mgid->raw[0] == 0xff && (mgid->raw[1] & 0xf0) == 0x10 &&
	       mgid->raw[2] == 0x40 && mgid->raw[3] == 0x1b &&
	       !memcmp(&mgid->raw[6], tail, sizeof(tail));
}

static void softib_sa_group_free(struct softib_sa_group *group)
{
	struct softib_sa_member *member, *tmp;

	lockdep_assert_held(&softib_sa.lock);
	list_for_each_entry_safe(member, tmp, &group->members, list) {
		list_del(&member->list);
		kfree(member);
		softib_sa.n_members--;
	}
	list_del(&group->list);
	kfree(group);
	softib_sa.n_groups--;
}

/*
 * Drop a member, and its group with its last member (an IPoIB broadcast
 * group stays, see the top of this file).
 */
static void softib_sa_member_drop(struct softib_sa_group *group,
				  struct softib_sa_member *member)
{
	lockdep_assert_held(&softib_sa.lock);
	list_del(&member->list);
	kfree(member);
	softib_sa.n_members--;
	if (list_empty(&group->members) &&
	    !softib_sa_is_ipoib_bcast(&group->rec.mgid))
		softib_sa_group_free(group);
}

/* The lowest MLID no group holds, 0 if none is left */
static u16 softib_sa_mlid_alloc(void)
{
	struct softib_sa_group *group;
	u16 mlid = SOFTIB_SA_MLID_FIRST;
	bool again = true;

	lockdep_assert_held(&softib_sa.lock);
	/* few groups: rescan until a free MLID is found */
	while (again && mlid <= SOFTIB_SA_MLID_LAST) {
		again = false;
		list_for_each_entry(group, &softib_sa.groups, list) {
			if (group->rec.mlid == mlid) {
				mlid++;
				again = true;
				break;
			}
		}
	}
	return mlid <= SOFTIB_SA_MLID_LAST ? mlid : 0;
}

/* An SA-assigned MGID, ff1S:a01b:PKEY::SEQ, for a join with MGID 0 */
static void softib_sa_mgid_alloc(struct softib_mcm *grec)
{
	union ib_gid *mgid = &grec->mgid;

	lockdep_assert_held(&softib_sa.lock);
	do {
		memset(mgid, 0, sizeof(*mgid));
		mgid->raw[0] = 0xff;
		mgid->raw[1] = 0x10 | (grec->scope & 0xf);
		mgid->raw[2] = 0xa0;
		mgid->raw[3] = 0x1b;
		mgid->raw[4] = grec->pkey >> 8;
		mgid->raw[5] = grec->pkey & 0xff;
		put_unaligned_be32(++softib_sa.mgid_seq, &mgid->raw[12]);
	} while (softib_sa_group_find(mgid));
}

/*
 * The attributes of a new group: the creator's where it gives them (and
 * they are valid on this fabric), else the SA defaults.
 */
static u16 softib_sa_group_attrs(const struct softib_sa_req *r,
				 const struct softib_mcm *req,
				 struct softib_mcm *grec)
{
	ib_sa_comp_mask mask = r->mask;
	int v;

	memset(grec, 0, sizeof(*grec));
	grec->qkey = SOFTIB_SA_DEFAULT_QKEY;
	if (mask & IB_SA_MCMEMBER_REC_QKEY) {
		/* a controlled Q_Key would change remote_qkey's meaning */
		if (req->qkey & IB_QP_SET_QKEY)
			return SOFTIB_SA_ERR_REQ_INVALID;
		grec->qkey = req->qkey;
	}

	grec->mtu = r->mtu;
	if (mask & IB_SA_MCMEMBER_REC_MTU) {
		v = softib_sa_pick(mask & IB_SA_MCMEMBER_REC_MTU_SELECTOR ?
				   req->mtu_sel : IB_SA_EQ, req->mtu, r->mtu,
				   IB_MTU_256, r->mtu_cap);
		if (v < 0)
			return SOFTIB_SA_ERR_REQ_INVALID;
		grec->mtu = v;
	}

	grec->rate = SOFTIB_SA_RATE;
	if (mask & IB_SA_MCMEMBER_REC_RATE) {
		v = softib_sa_pick_rate(mask & IB_SA_MCMEMBER_REC_RATE_SELECTOR ?
					req->rate_sel : IB_SA_EQ, req->rate);
		if (v < 0)
			return SOFTIB_SA_ERR_REQ_INVALID;
		grec->rate = v;
	}

	grec->life = SOFTIB_SA_LIFE;
	if (mask & IB_SA_MCMEMBER_REC_PACKET_LIFE_TIME) {
		v = softib_sa_pick(mask & IB_SA_MCMEMBER_REC_PACKET_LIFE_TIME_SELECTOR ?
				   req->life_sel : IB_SA_EQ, req->life,
				   SOFTIB_SA_LIFE, 0, 0x3f);
		if (v < 0)
			return SOFTIB_SA_ERR_REQ_INVALID;
		grec->life = v;
	}

	grec->pkey = mask & IB_SA_MCMEMBER_REC_PKEY ? req->pkey : 0xffff;
	if (!(grec->pkey & 0x7fff))
		return SOFTIB_SA_ERR_REQ_INVALID;
	grec->pkey |= 0x8000;
	if (mask & IB_SA_MCMEMBER_REC_TRAFFIC_CLASS)
		grec->tclass = req->tclass;
	grec->sl = mask & IB_SA_MCMEMBER_REC_SL ? req->sl : sa_sl;
	if (mask & IB_SA_MCMEMBER_REC_FLOW_LABEL)
		grec->flow = req->flow;
	if (mask & IB_SA_MCMEMBER_REC_HOP_LIMIT)
		grec->hop = req->hop;

	if ((mask & IB_SA_MCMEMBER_REC_MGID) && !softib_sa_gid_zero(&req->mgid)) {
		grec->mgid = req->mgid;
		grec->scope = req->mgid.raw[1] & 0xf;
		if ((mask & IB_SA_MCMEMBER_REC_SCOPE) && req->scope != grec->scope)
			return SOFTIB_SA_ERR_REQ_INVALID;
	} else {
		grec->scope = mask & IB_SA_MCMEMBER_REC_SCOPE ? req->scope :
			      SOFTIB_SA_DEFAULT_SCOPE;
	}
	grec->mtu_sel = IB_SA_EQ;
	grec->rate_sel = IB_SA_EQ;
	grec->life_sel = IB_SA_EQ;
	return 0;
}

/* Does the existing group satisfy every component the joiner gives? */
static bool softib_sa_group_fits(const struct softib_mcm *g,
				 const struct softib_mcm *req,
				 ib_sa_comp_mask mask)
{
	u8 sel;

	if ((mask & IB_SA_MCMEMBER_REC_QKEY) && req->qkey != g->qkey)
		return false;
	if ((mask & IB_SA_MCMEMBER_REC_PKEY) &&
	    (req->pkey & 0x7fff) != (g->pkey & 0x7fff))
		return false;
	if (mask & IB_SA_MCMEMBER_REC_MTU) {
		sel = mask & IB_SA_MCMEMBER_REC_MTU_SELECTOR ? req->mtu_sel : IB_SA_EQ;
		if (!softib_sa_sel_ok(sel, req->mtu, g->mtu))
			return false;
	}
	if (mask & IB_SA_MCMEMBER_REC_RATE) {
		sel = mask & IB_SA_MCMEMBER_REC_RATE_SELECTOR ? req->rate_sel : IB_SA_EQ;
		if (!softib_sa_sel_ok(sel, softib_sa_rate_rank(req->rate),
				      softib_sa_rate_rank(g->rate)))
			return false;
	}
	if (mask & IB_SA_MCMEMBER_REC_PACKET_LIFE_TIME) {
		sel = mask & IB_SA_MCMEMBER_REC_PACKET_LIFE_TIME_SELECTOR ?
		      req->life_sel : IB_SA_EQ;
		if (!softib_sa_sel_ok(sel, req->life, g->life))
			return false;
	}
	if ((mask & IB_SA_MCMEMBER_REC_TRAFFIC_CLASS) && req->tclass != g->tclass)
		return false;
	if ((mask & IB_SA_MCMEMBER_REC_SL) && req->sl != g->sl)
		return false;
	if ((mask & IB_SA_MCMEMBER_REC_FLOW_LABEL) && req->flow != g->flow)
		return false;
	if ((mask & IB_SA_MCMEMBER_REC_HOP_LIMIT) && req->hop != g->hop)
		return false;
	if ((mask & IB_SA_MCMEMBER_REC_SCOPE) && req->scope != g->scope)
		return false;
	return true;
}

/* The answer to a join or leave: the group as seen by one member */
static void softib_sa_mcm_answer(struct softib_sa_req *r,
				 const struct softib_mcm *grec,
				 const union ib_gid *port_gid, u8 join)
{
	struct softib_mcm rec = *grec;

	rec.port_gid = *port_gid;
	rec.join = join;
	rec.proxy = 0;
	memset(r->mad->data, 0, sizeof(r->mad->data));
	softib_sa_mcm_pack(&rec, r->mad->data);
	r->mad->sa_hdr.attr_offset =
		cpu_to_be16(DIV_ROUND_UP(SOFTIB_SA_MCM_REC_BYTES, 8));
}

/*
 * MCMemberRecord SET (join). Creates the group if needed, adds the member or
 * ORs the new JoinState bits into it. A retry of the same join finds
 * everything in place and gets the same answer.
 */
static u16 softib_sa_mcm_set_locked(struct softib_sa_req *r,
				    const struct softib_mcm *req, bool remote,
				    const u16 *tbl, struct softib_mcm *grec,
				    u8 *join)
{
	struct softib_sa_member *member = NULL;
	struct softib_sa_group *group = NULL;
	ib_sa_comp_mask mask = r->mask;
	u16 status;

	lockdep_assert_held(&softib_sa.lock);
	if ((mask & IB_SA_MCMEMBER_REC_MGID) && !softib_sa_gid_zero(&req->mgid))
		group = softib_sa_group_find(&req->mgid);

	if (group) {
		if (!softib_sa_group_fits(&group->rec, req, mask))
			return SOFTIB_SA_ERR_REQ_INVALID;
		/* as OpenSM: only a port of the group's partition joins */
		if (tbl && !softib_sa_tbl_has(tbl, group->rec.pkey))
			return SOFTIB_SA_ERR_REQ_INVALID;
		member = softib_sa_member_find(group, &req->port_gid);
	} else {
		/* only a full member (or send-only full member) creates */
		if (!(req->join & (SOFTIB_SA_JOIN_FULL | SOFTIB_SA_JOIN_SENDONLY_FULL)))
			return SOFTIB_SA_ERR_REQ_INVALID;
		if (softib_sa.n_groups >= SOFTIB_SA_MAX_GROUPS)
			return SOFTIB_SA_ERR_NO_RESOURCES;
		status = softib_sa_group_attrs(r, req, grec);
		if (status)
			return status;
		if (tbl && !softib_sa_tbl_has(tbl, grec->pkey))
			return SOFTIB_SA_ERR_REQ_INVALID;
		grec->mlid = softib_sa_mlid_alloc();
		if (!grec->mlid)
			return SOFTIB_SA_ERR_NO_RESOURCES;
		if (softib_sa_gid_zero(&grec->mgid))
			softib_sa_mgid_alloc(grec);
		group = kzalloc(sizeof(*group), GFP_ATOMIC);
		if (!group)
			return SOFTIB_SA_ERR_NO_RESOURCES;
		group->rec = *grec;
		INIT_LIST_HEAD(&group->members);
		list_add_tail(&group->list, &softib_sa.groups);
		softib_sa.n_groups++;
	}

	if (!member) {
		if (softib_sa.n_members >= SOFTIB_SA_MAX_MEMBERS)
			goto err_no_member;
		member = kzalloc(sizeof(*member), GFP_ATOMIC);
		if (!member)
			goto err_no_member;
		member->gid = req->port_gid;
		list_add_tail(&member->list, &group->members);
		softib_sa.n_members++;
	}
	member->join |= req->join;
	member->lid = r->pkt->slid;
	if (remote)
		softib_sa_learn(&req->port_gid, r->pkt->slid);

	*grec = group->rec;
	*join = member->join;
	return 0;

err_no_member:
	if (list_empty(&group->members))
		softib_sa_group_free(group);
	return SOFTIB_SA_ERR_NO_RESOURCES;
}

static u16 softib_sa_mcm_set(struct softib_sa_req *r)
{
	u16 tbl[SOFTIB_PKEY_TBL_LEN];
	struct softib_mcm req, grec;
	ib_sa_comp_mask mask = r->mask;
	enum softib_sa_bad bad;
	unsigned long flags;
	bool remote;
	u16 status;
	u8 join;

	softib_sa_mcm_unpack(r->mad->data, &req);
	if (!(mask & IB_SA_MCMEMBER_REC_PORT_GID) ||
	    !(mask & IB_SA_MCMEMBER_REC_JOIN_STATE))
		return SOFTIB_SA_ERR_REQ_INSUFFICIENT;
	if (!req.join)
		return SOFTIB_SA_ERR_REQ_INVALID;
	if (softib_sa_gid_zero(&req.port_gid) || softib_sa_gid_mcast(&req.port_gid))
		return SOFTIB_SA_ERR_REQ_INVALID_GID;
	if ((mask & IB_SA_MCMEMBER_REC_MGID) && !softib_sa_gid_zero(&req.mgid) &&
	    !softib_sa_gid_mcast(&req.mgid))
		return SOFTIB_SA_ERR_REQ_INVALID_GID;

	remote = !softib_sa_local_pkeys(&req.port_gid, tbl);
	spin_lock_irqsave(&softib_sa.lock, flags);
	status = softib_sa_mcm_set_locked(r, &req, remote, remote ? NULL : tbl,
					  &grec, &join);
	spin_unlock_irqrestore(&softib_sa.lock, flags);
	if (status)
		return status;

	bad = READ_ONCE(softib_sa.bad);
	if (bad == SOFTIB_SA_BAD_MLID_OUT)
		grec.mlid = SOFTIB_SA_BAD_MLID;
	else if (bad == SOFTIB_SA_BAD_MTU0)
		grec.mtu = 0;
	else if (bad == SOFTIB_SA_BAD_QKEY)
		grec.qkey = (grec.qkey ^ 1) & ~IB_QP_SET_QKEY;
	softib_sa_mcm_answer(r, &grec, &req.port_gid, join);
	return 0;
}

/*
 * MCMemberRecord DELETE (leave): drop the given JoinState bits of the
 * member, the member when none is left, the group when its last member
 * leaves (an IPoIB broadcast group stays, see the top of this file).
 */
static u16 softib_sa_mcm_delete(struct softib_sa_req *r)
{
	struct softib_sa_member *member;
	struct softib_sa_group *group;
	struct softib_mcm req, grec;
	unsigned long flags;
	ib_sa_comp_mask mask = r->mask;
	u16 status = 0;
	u8 leave;

	softib_sa_mcm_unpack(r->mad->data, &req);
	if (!(mask & IB_SA_MCMEMBER_REC_MGID) ||
	    !(mask & IB_SA_MCMEMBER_REC_PORT_GID))
		return SOFTIB_SA_ERR_REQ_INSUFFICIENT;
	leave = mask & IB_SA_MCMEMBER_REC_JOIN_STATE ? req.join : SOFTIB_SA_JOIN_ALL;

	spin_lock_irqsave(&softib_sa.lock, flags);
	group = softib_sa_group_find(&req.mgid);
	member = group ? softib_sa_member_find(group, &req.port_gid) : NULL;
	if (!member || !(member->join & leave)) {
		status = SOFTIB_SA_ERR_REQ_INVALID;
		goto out_unlock;
	}
	leave &= member->join;
	member->join &= ~leave;
	grec = group->rec;
	if (!member->join)
		softib_sa_member_drop(group, member);
out_unlock:
	spin_unlock_irqrestore(&softib_sa.lock, flags);
	if (!status)
		softib_sa_mcm_answer(r, &grec, &req.port_gid, leave);
	return status;
}

/* Send an answer now or, with sa_delay_ms, from delay_work later. */
static void softib_sa_answer(struct softib_dev *sm, struct softib_pkt *pkt)
{
	u32 delay_ms = READ_ONCE(softib_sa.delay_ms);
	struct softib_sa_answer *ans;
	unsigned long flags;

	if (!delay_ms) {
		softib_send_from(sm, pkt);
		return;
	}

	ans = kzalloc(sizeof(*ans), GFP_ATOMIC);
	if (!ans)
		goto err_drop;
	ans->pkt = pkt;
	ans->due = jiffies + msecs_to_jiffies(delay_ms);

	spin_lock_irqsave(&softib_sa.lock, flags);
	if (softib_sa.n_pending >= SOFTIB_SA_MAX_PENDING) {
		spin_unlock_irqrestore(&softib_sa.lock, flags);
		goto err_free;
	}
	if (list_empty(&softib_sa.pending) ||
	    time_before(ans->due, softib_sa.next_due)) {
		softib_sa.next_due = ans->due;
		mod_delayed_work(system_wq, &softib_sa.delay_work,
				 msecs_to_jiffies(delay_ms));
	}
	list_add_tail(&ans->list, &softib_sa.pending);
	softib_sa.n_pending++;
	spin_unlock_irqrestore(&softib_sa.lock, flags);
	return;

err_free:
	kfree(ans);
err_drop:
	softib_pkt_free(pkt);
	softib_sa_count(SOFTIB_SA_CNT_DROPPED);
}

/* Send a delayed answer from the device that holds its SLID, if any still does. */
static void softib_sa_send_delayed(struct softib_pkt *pkt)
{
	struct softib_dev *sdev;

	rcu_read_lock();
	list_for_each_entry_rcu(sdev, &softib_devs, list) {
		if (softib_dev_lid(sdev) == pkt->slid) {
			softib_send_from(sdev, pkt);
			rcu_read_unlock();
			return;
		}
	}
	rcu_read_unlock();
	softib_pkt_free(pkt);
	softib_sa_count(SOFTIB_SA_CNT_DROPPED);
}

static void softib_sa_delay_work(struct work_struct *work)
{
	struct softib_sa_answer *ans, *tmp;
	unsigned long now = jiffies;
	unsigned long flags;
	LIST_HEAD(due);
	bool more = false;

	spin_lock_irqsave(&softib_sa.lock, flags);
	list_for_each_entry_safe(ans, tmp, &softib_sa.pending, list) {
		if (time_after_eq(now, ans->due)) {
			list_move_tail(&ans->list, &due);
			softib_sa.n_pending--;
		} else if (!more || time_before(ans->due, softib_sa.next_due)) {
			softib_sa.next_due = ans->due;
			more = true;
		}
	}
	if (more)
		mod_delayed_work(system_wq, &softib_sa.delay_work,
				 softib_sa.next_due - now);
	spin_unlock_irqrestore(&softib_sa.lock, flags);

	list_for_each_entry_safe(ans, tmp, &due, list) {
		list_del(&ans->list);
		softib_sa_send_delayed(ans->pkt);
		kfree(ans);
	}
}

/* The method of the answer to a request method */
static u8 softib_sa_resp_method(u8 method)
{
	if (method == IB_MGMT_METHOD_SET)
		return IB_MGMT_METHOD_GET_RESP;
	return method | IB_MGMT_METHOD_RESP;
}

/* Answer one well-formed request; returns the MAD status of the answer. */
static u16 softib_sa_dispatch(struct softib_sa_req *r)
{
	struct ib_mad_hdr *hdr = &r->mad->mad_hdr;
	u16 attr = be16_to_cpu(hdr->attr_id);
	u8 method = hdr->method;
	u16 status;

	switch (attr) {
	case IB_SA_ATTR_CLASS_PORTINFO:
		if (method != IB_MGMT_METHOD_GET)
			break;
		softib_sa_count(SOFTIB_SA_CNT_CPI_GET);
		break;
	case IB_SA_ATTR_PATH_REC:
		if (method != IB_MGMT_METHOD_GET)
			break;
		softib_sa_count(SOFTIB_SA_CNT_PATH_GET);
		break;
	case IB_SA_ATTR_MC_MEMBER_REC:
		if (method == IB_MGMT_METHOD_SET)
			softib_sa_count(SOFTIB_SA_CNT_MCM_SET);
		else if (method == IB_SA_METHOD_DELETE)
			softib_sa_count(SOFTIB_SA_CNT_MCM_DELETE);
		break;
	}

	/* fault knobs: answer with an error, change nothing */
	if (READ_ONCE(softib_sa.busy))
		return IB_MGMT_MAD_STATUS_BUSY;
	status = READ_ONCE(softib_sa.status);
	if (status)
		return status;
	if (hdr->class_version != IB_SA_CLASS_VERSION) {
		softib_sa_count(SOFTIB_SA_CNT_BAD_REQUEST);
		return IB_MGMT_MAD_STATUS_BAD_VERSION;
	}

	switch (method) {
	case IB_MGMT_METHOD_GET:
	case IB_MGMT_METHOD_SET:
	case IB_SA_METHOD_DELETE:
		break;
	default:
		softib_sa_count(SOFTIB_SA_CNT_BAD_REQUEST);
		return IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD;
	}

	switch (attr) {
	case IB_SA_ATTR_CLASS_PORTINFO:
		if (method == IB_MGMT_METHOD_GET)
			return softib_sa_cpi_get(r);
		break;
	case IB_SA_ATTR_PATH_REC:
		if (method != IB_MGMT_METHOD_GET)
			break;
		status = softib_sa_path_get(r);
		if (status == SOFTIB_SA_ERR_NO_RECORDS)
			softib_sa_count(SOFTIB_SA_CNT_PATH_NO_RECORD);
		return status;
	case IB_SA_ATTR_MC_MEMBER_REC:
		if (method == IB_MGMT_METHOD_SET)
			return softib_sa_mcm_set(r);
		if (method == IB_SA_METHOD_DELETE)
			return softib_sa_mcm_delete(r);
		break;
	}
	softib_sa_count(SOFTIB_SA_CNT_BAD_REQUEST);
	return IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB;
}

/* The answer packet: from the SM's QP1 back to the requester, mirrored GRH */
static void softib_sa_resp_addr(struct softib_pkt *resp,
				const struct softib_pkt *req)
{
	resp->slid = req->dlid;
	resp->dlid = req->slid;
	resp->sl = req->sl;
	resp->opcode = IB_OPCODE_UD_SEND_ONLY;
	resp->pkey = req->pkey;
	resp->dqpn = req->sqpn;
	resp->sqpn = 1;			/* GSI */
	resp->qkey = IB_QP1_QKEY;
	resp->len = IB_MGMT_MAD_SIZE;
	resp->has_grh = req->has_grh;
	if (req->has_grh) {
		resp->grh.version_tclass_flow = req->grh.version_tclass_flow;
		/* BTH + DETH + MAD + ICRC */
		resp->grh.paylen = cpu_to_be16(IB_BTH_BYTES + IB_DETH_BYTES +
					       IB_MGMT_MAD_SIZE + 4);
		resp->grh.next_hdr = req->grh.next_hdr;
		resp->grh.hop_limit = req->grh.hop_limit;
		resp->grh.sgid = req->grh.dgid;
		resp->grh.dgid = req->grh.sgid;
	}
}

bool softib_sa_handle(struct softib_dev *sm, const struct softib_pkt *req)
{
	const struct ib_mad_hdr *hdr = (const struct ib_mad_hdr *)req->data;
	struct softib_sa_req r = { .pkt = req };
	u64 t0 = ktime_get_ns();
	struct softib_pkt *resp;
	int min_mtu;
	u16 status;

	/* not an SA request: the core delivers it to the SM host's QP1 */
	if (req->len < sizeof(*hdr) || hdr->mgmt_class != IB_MGMT_CLASS_SUBN_ADM ||
	    (hdr->method & IB_MGMT_METHOD_RESP))
		return false;

	if (READ_ONCE(softib_sa.drop)) {
		softib_sa_count(SOFTIB_SA_CNT_DROPPED);
		return true;
	}
	/* what a real QP1 and ib_mad would drop without an answer */
	if (req->len != IB_MGMT_MAD_SIZE || req->qkey != IB_QP1_QKEY ||
	    hdr->base_version != IB_MGMT_BASE_VERSION) {
		softib_sa_count(SOFTIB_SA_CNT_BAD_REQUEST);
		ibdev_dbg_ratelimited(&sm->ibdev,
				      "SA: dropped malformed request from LID 0x%x: len %u qkey 0x%x base version %u\n",
				      req->slid, req->len, req->qkey,
				      hdr->base_version);
		return true;
	}

	resp = softib_pkt_alloc(IB_MGMT_MAD_SIZE, GFP_ATOMIC);
	if (!resp) {
		softib_sa_count(SOFTIB_SA_CNT_DROPPED);
		return true;
	}
	softib_sa_resp_addr(resp, req);
	memcpy(resp->data, req->data, IB_MGMT_MAD_SIZE);

	r.mad = (struct ib_sa_mad *)resp->data;
	r.mask = r.mad->sa_hdr.comp_mask;
	min_mtu = softib_fabric_min_mtu();
	r.mtu_cap = min_mtu > 0 ? ib_mtu_int_to_enum(min_mtu) : IB_MTU_256;
	r.mtu = min(READ_ONCE(softib_sa.mtu), r.mtu_cap);
	r.path_mtu = min(READ_ONCE(softib_sa.path_mtu), r.mtu_cap);
	memset(&r.mad->rmpp_hdr, 0, sizeof(r.mad->rmpp_hdr));
	r.mad->sa_hdr.sm_key = 0;
	r.mad->sa_hdr.attr_offset = 0;

	status = softib_sa_dispatch(&r);
	r.mad->mad_hdr.method = softib_sa_resp_method(hdr->method);
	r.mad->mad_hdr.status = cpu_to_be16(status);
	if (status) {
		softib_sa_count(SOFTIB_SA_CNT_ERRORED);
		ibdev_dbg_ratelimited(&sm->ibdev,
				      "SA: method 0x%x attr 0x%x from LID 0x%x: status 0x%04x\n",
				      hdr->method, be16_to_cpu(hdr->attr_id),
				      req->slid, status);
	}
	softib_sa_answer(sm, resp);
	if (hdr->attr_id == cpu_to_be16(IB_SA_ATTR_PATH_REC))
		atomic64_add(ktime_get_ns() - t0,
			     &softib_sa.counters[SOFTIB_SA_CNT_PATH_GET_NS]);
	return true;
}

void softib_sa_restart(void)
{
	struct softib_sa_group *group, *tmp;
	unsigned long flags;

	spin_lock_irqsave(&softib_sa.lock, flags);
	list_for_each_entry_safe(group, tmp, &softib_sa.groups, list)
		softib_sa_group_free(group);
	spin_unlock_irqrestore(&softib_sa.lock, flags);
}

bool softib_sa_mcast_routes_to(u16 mlid, const union ib_gid *gid)
{
	struct softib_sa_member *member;
	struct softib_sa_group *group;
	unsigned long flags;
	bool ret = false;

	spin_lock_irqsave(&softib_sa.lock, flags);
	list_for_each_entry(group, &softib_sa.groups, list) {
		if (group->rec.mlid != mlid)
			continue;
		member = softib_sa_member_find(group, gid);
		ret = member && (member->join & (BIT(FULLMEMBER_JOIN) |
						 BIT(NONMEMBER_JOIN)));
		break;
	}
	spin_unlock_irqrestore(&softib_sa.lock, flags);
	return ret;
}

static int softib_sa_groups_show(struct seq_file *s, void *unused)
{
	struct softib_sa_member *member;
	struct softib_sa_group *group;
	unsigned long flags;

	spin_lock_irqsave(&softib_sa.lock, flags);
	list_for_each_entry(group, &softib_sa.groups, list) {
		seq_printf(s, "%pI6 mlid 0x%04x qkey 0x%08x mtu %d pkey 0x%04x sl %u\n",
			   group->rec.mgid.raw, group->rec.mlid, group->rec.qkey,
			   ib_mtu_enum_to_int(group->rec.mtu), group->rec.pkey,
			   group->rec.sl);
		list_for_each_entry(member, &group->members, list)
			seq_printf(s, "  member %pI6 join_state 0x%x\n",
				   member->gid.raw, member->join);
	}
	spin_unlock_irqrestore(&softib_sa.lock, flags);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(softib_sa_groups);

static int softib_sa_ports_show(struct seq_file *s, void *unused)
{
	struct softib_sa_port *port;
	unsigned long flags;

	spin_lock_irqsave(&softib_sa.lock, flags);
	list_for_each_entry(port, &softib_sa.ports, list)
		seq_printf(s, "%pI6 lid 0x%04x\n", port->gid.raw, port->lid);
	spin_unlock_irqrestore(&softib_sa.lock, flags);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(softib_sa_ports);

static int softib_sa_counters_show(struct seq_file *s, void *unused)
{
	int i;

	for (i = 0; i < SOFTIB_SA_NR_COUNTERS; i++)
		seq_printf(s, "%s %lld\n", softib_sa_counter_names[i],
			   atomic64_read(&softib_sa.counters[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(softib_sa_counters);

static ssize_t softib_sa_bad_read(struct file *file, char __user *ubuf,
				  size_t count, loff_t *ppos)
{
	enum softib_sa_bad bad = READ_ONCE(softib_sa.bad);
	char buf[16];
	int len;

	len = scnprintf(buf, sizeof(buf), "%s\n", softib_sa_bad_names[bad]);
	return simple_read_from_buffer(ubuf, count, ppos, buf, len);
}

static ssize_t softib_sa_bad_write(struct file *file, const char __user *ubuf,
				   size_t count, loff_t *ppos)
{
	char buf[16];
	int bad;

	if (*ppos || count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	bad = sysfs_match_string(softib_sa_bad_names, strim(buf));
	if (bad < 0)
		return bad;
	WRITE_ONCE(softib_sa.bad, bad);
	return count;
}

static const struct file_operations softib_sa_bad_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = softib_sa_bad_read,
	.write = softib_sa_bad_write,
	.llseek = default_llseek,
};

/*
 * sa_remove (write "MGID PORTGID"): the SM takes the port out of the group
 * (as OpenSM does for a port that left the fabric, and as its console can):
 * the membership goes without a leave from the member, and no packet of the
 * group reaches the port from then on (softib_sa_mcast_routes_to()).
 */
static ssize_t softib_sa_remove_write(struct file *file,
				      const char __user *ubuf,
				      size_t count, loff_t *ppos)
{
	struct softib_sa_member *member = NULL;
	struct softib_sa_group *group;
	union ib_gid mgid, gid;
	char buf[96], *s, *t;
	unsigned long flags;

	if (*ppos || count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	s = strim(buf);
	t = strsep(&s, " ");
	if (!s || !in6_pton(t, -1, mgid.raw, -1, NULL) ||
	    !in6_pton(strim(s), -1, gid.raw, -1, NULL))
		return -EINVAL;

	spin_lock_irqsave(&softib_sa.lock, flags);
	group = softib_sa_group_find(&mgid);
	if (group)
		member = softib_sa_member_find(group, &gid);
	if (member)
		softib_sa_member_drop(group, member);
	spin_unlock_irqrestore(&softib_sa.lock, flags);
	return member ? count : -ENOENT;
}

static const struct file_operations softib_sa_remove_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = softib_sa_remove_write,
	.llseek = noop_llseek,
};

static const char * const softib_sa_files[] = {
	"sa_drop", "sa_delay_ms", "sa_status", "sa_busy", "sa_bad",
	"sa_groups", "sa_ports", "sa_counters", "sa_remove",
};

static struct dentry *softib_sa_root;

/* An MTU parameter in bytes or as enum ib_mtu; a warning if it is neither. */
static u8 softib_sa_mtu_param(const char *name, unsigned int v)
{
	u8 mtu = v >= IB_MTU_256 && v <= IB_MTU_4096 ? v : ib_mtu_int_to_enum(v);

	if (mtu != v && ib_mtu_enum_to_int(mtu) != v)
		pr_warn("%s %u is not an IB MTU, using %d\n", name, v, ib_mtu_enum_to_int(mtu));
	return mtu;
}

/* Bytes: the links between switches (sa_path_mtu), see softib_path_mtu(). */
u32 softib_sa_core_mtu(void)
{
	return ib_mtu_enum_to_int(READ_ONCE(softib_sa.path_mtu));
}

int softib_sa_init(struct dentry *root)
{
	u8 mtu;

	if (sa_sl > 14) {
		pr_err("sa_sl %u: SL 15 is VL15's, and SLs end there\n", sa_sl);
		return -EINVAL;
	}
	if (softib_sa_life > 31) {
		pr_err("sa_packet_life %u: 31 at most (5 bits in a timeout)\n",
		       softib_sa_life);
		return -EINVAL;
	}

	mtu = softib_sa_mtu_param("sa_mtu", sa_mtu);
	WRITE_ONCE(softib_sa.mtu, mtu);
	if (sa_path_mtu)
		mtu = softib_sa_mtu_param("sa_path_mtu", sa_path_mtu);
	WRITE_ONCE(softib_sa.path_mtu, mtu);

	softib_sa_root = root;
	debugfs_create_bool("sa_drop", 0644, root, &softib_sa.drop);
	debugfs_create_u32("sa_delay_ms", 0644, root, &softib_sa.delay_ms);
	debugfs_create_x16("sa_status", 0644, root, &softib_sa.status);
	debugfs_create_bool("sa_busy", 0644, root, &softib_sa.busy);
	debugfs_create_file("sa_bad", 0644, root, NULL, &softib_sa_bad_fops);
	debugfs_create_file("sa_groups", 0444, root, NULL, &softib_sa_groups_fops);
	debugfs_create_file("sa_ports", 0444, root, NULL, &softib_sa_ports_fops);
	debugfs_create_file("sa_counters", 0444, root, NULL,
			    &softib_sa_counters_fops);
	debugfs_create_file("sa_remove", 0200, root, NULL, &softib_sa_remove_fops);
	return 0;
}

void softib_sa_exit(void)
{
	struct softib_sa_answer *ans, *atmp;
	struct softib_sa_port *port, *ptmp;
	unsigned long flags;
	LIST_HEAD(pending);
	LIST_HEAD(ports);
	int i;

	if (!IS_ERR_OR_NULL(softib_sa_root))
		for (i = 0; i < ARRAY_SIZE(softib_sa_files); i++)
			debugfs_lookup_and_remove(softib_sa_files[i], softib_sa_root);
	softib_sa_root = NULL;

	cancel_delayed_work_sync(&softib_sa.delay_work);
	softib_sa_restart();

	spin_lock_irqsave(&softib_sa.lock, flags);
	list_splice_init(&softib_sa.pending, &pending);
	softib_sa.n_pending = 0;
	list_splice_init(&softib_sa.ports, &ports);
	hash_init(softib_sa.port_hash);
	softib_sa.n_ports = 0;
	spin_unlock_irqrestore(&softib_sa.lock, flags);

	list_for_each_entry_safe(ans, atmp, &pending, list) {
		softib_pkt_free(ans->pkt);
		kfree(ans);
	}
	list_for_each_entry_safe(port, ptmp, &ports, list)
		kfree(port);
}
