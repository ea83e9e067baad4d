// SPDX-License-Identifier: GPL-2.0
/*
 * rdmacm_test: a test-only consumer of the kernel rdma_cm API in the UD
 * port space (RDMA_PS_UDP, SIDR), to check what rdma_cm needs from an
 * IPoIB driver: IP -> GID through the interface's neighbours, the route
 * through the SA, and, on the passive side, which interface (and so which
 * namespace and listener) an incoming request belongs to.
 *
 * Never installed: tests/vm/build.sh builds it into the test initramfs.
 * Controlled through /sys/kernel/debug/rdmacm_test/:
 *
 *   ctl      write one command; ids are made in the writer's namespace
 *              listen PORT ADDR      a server on ADDR (may be a wildcard,
 *                                    "fe80::1%ib0" for a scope id)
 *              unlisten PORT         destroy that server and its replies
 *              connect ADDR PORT     resolve address, route, connect (SIDR)
 *                                    and wait; the outcome goes to "result"
 *              hold ADDR PORT        resolve address and route and keep the
 *                                    id (bound to the device) until "release"
 *              mjoin GROUP ADDR      an id in the IPoIB port space bound to
 *                                    ADDR joins multicast GROUP through the
 *                                    SA (the MGID IPoIB uses for GROUP, as
 *                                    a user-space joiner's) and is held
 *                                    until "release", which leaves
 *              release               destroy every held id
 *   result   the last connect/hold: "event=NAME status=N step=S ms=N" and,
 *            once established, "qpn=0x... qkey=0x..."
 *   servers  one line per server: "port=N reqs=N qpn=0x... qkey=0x..."
 *            (the QP number and Q_Key of the last reply it sent)
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/debugfs.h>
#include <linux/inet.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/nsproxy.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/net_namespace.h>
#include <rdma/rdma_cm.h>

MODULE_DESCRIPTION("Test-only rdma_cm UD/SIDR consumer (never installed)");
MODULE_LICENSE("GPL");

static unsigned int timeout_ms = 2000;
module_param(timeout_ms, uint, 0644);
MODULE_PARM_DESC(timeout_ms, "address and route resolution timeout (ms)");

static unsigned int connect_wait_s = 30;
module_param(connect_wait_s, uint, 0644);
MODULE_PARM_DESC(connect_wait_s, "how long a connect waits for its answer (s)");

#define RT_CMD_MAX	128
#define RT_RESULT_MAX	160

/* One reply a server sent: the QP whose number went to the client. */
struct rt_conn {
	struct list_head list;		/* rt_server.conns */
	struct rdma_cm_id *id;
	struct ib_pd *pd;
	struct ib_cq *cq;
};

struct rt_server {
	struct list_head list;		/* rt_servers, rt_mutex */
	u16 port;
	struct rdma_cm_id *id;
	struct mutex lock;		/* the fields below */
	struct list_head conns;
	unsigned int reqs;
	u32 qpn;
	u32 qkey;
};

/* An active side waiting in the writer, or held until "release". */
struct rt_client {
	struct list_head list;		/* rt_held, rt_mutex */
	struct rdma_cm_id *id;
	struct completion done;
	spinlock_t lock;		/* the fields below */
	enum rdma_cm_event_type event;
	int status;
	u32 qpn;
	u32 qkey;
};

/* One word per event the active side waits for, for the test scripts. */
static const char *const rt_event_names[] = {
	[RDMA_CM_EVENT_ADDR_RESOLVED]	= "ADDR_RESOLVED",
	[RDMA_CM_EVENT_ADDR_ERROR]	= "ADDR_ERROR",
	[RDMA_CM_EVENT_ROUTE_RESOLVED]	= "ROUTE_RESOLVED",
	[RDMA_CM_EVENT_ROUTE_ERROR]	= "ROUTE_ERROR",
	[RDMA_CM_EVENT_CONNECT_ERROR]	= "CONNECT_ERROR",
	[RDMA_CM_EVENT_UNREACHABLE]	= "UNREACHABLE",
	[RDMA_CM_EVENT_REJECTED]	= "REJECTED",
	[RDMA_CM_EVENT_ESTABLISHED]	= "ESTABLISHED",
	[RDMA_CM_EVENT_MULTICAST_JOIN]	= "MULTICAST_JOIN",
	[RDMA_CM_EVENT_MULTICAST_ERROR]	= "MULTICAST_ERROR",
};

static const char *rt_event_name(enum rdma_cm_event_type ev)
{
	if (ev < ARRAY_SIZE(rt_event_names) && rt_event_names[ev])
		return rt_event_names[ev];
	return "OTHER";
}

static DEFINE_MUTEX(rt_mutex);		/* commands, the lists, rt_result */
static LIST_HEAD(rt_servers);
static LIST_HEAD(rt_held);
static char rt_result[RT_RESULT_MAX];
static struct dentry *rt_dir;

static void rt_conn_free(struct rt_conn *conn)
{
	if (conn->id->qp)
		rdma_destroy_qp(conn->id);
	rdma_destroy_id(conn->id);
	ib_free_cq(conn->cq);
	ib_dealloc_pd(conn->pd);
	kfree(conn);
}

/*
 * A request reached our listener: make a UD QP on its device and accept,
 * which sends the SIDR reply with that QP's number and rdma_cm's Q_Key.
 * A non-zero return makes rdma_cm destroy @id (nothing of ours is left).
 */
static int rt_server_request(struct rt_server *srv, struct rdma_cm_id *id)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_UD,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct rdma_conn_param param = {};
	struct ib_qp_init_attr qinit;
	struct ib_qp_attr attr;
	struct rt_conn *conn;
	int ret;

	conn = kzalloc(sizeof(*conn), GFP_KERNEL);
	if (!conn)
		return -ENOMEM;
	conn->id = id;
	conn->pd = ib_alloc_pd(id->device, 0);
	if (IS_ERR(conn->pd)) {
		ret = PTR_ERR(conn->pd);
		goto err_free;
	}
	conn->cq = ib_alloc_cq(id->device, NULL, 2, 0, IB_POLL_WORKQUEUE);
	if (IS_ERR(conn->cq)) {
		ret = PTR_ERR(conn->cq);
		goto err_dealloc_pd;
	}
	init.send_cq = conn->cq;
	init.recv_cq = conn->cq;
	ret = rdma_create_qp(id, conn->pd, &init);
	if (ret)
		goto err_free_cq;
	ret = rdma_accept(id, &param);
	if (ret)
		goto err_destroy_qp;
	ret = ib_query_qp(id->qp, &attr, IB_QP_QKEY, &qinit);
	mutex_lock(&srv->lock);
	srv->reqs++;
	srv->qpn = id->qp->qp_num;
	srv->qkey = ret ? 0 : attr.qkey;
	list_add_tail(&conn->list, &srv->conns);
	mutex_unlock(&srv->lock);
	return 0;

err_destroy_qp:
	rdma_destroy_qp(id);
err_free_cq:
	ib_free_cq(conn->cq);
err_dealloc_pd:
	ib_dealloc_pd(conn->pd);
err_free:
	kfree(conn);
	pr_info("port %u: accept failed: %d\n", srv->port, ret);
	return ret;
}

static int rt_server_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rt_server *srv = id->context;

	pr_debug("port %u: %s (%d)\n", srv->port, rdma_event_msg(ev->event),
		 ev->status);
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return rt_server_request(srv, id);
	return 0;
}

static void rt_server_destroy(struct rt_server *srv)
{
	struct rt_conn *conn, *tmp;

	/* No new request once the listener is gone. */
	rdma_destroy_id(srv->id);
	list_for_each_entry_safe(conn, tmp, &srv->conns, list) {
		list_del(&conn->list);
		rt_conn_free(conn);
	}
	kfree(srv);
}

static int rt_addr(const char *addr, const char *port,
		   struct sockaddr_storage *ss)
{
	return inet_pton_with_scope(current->nsproxy->net_ns, AF_UNSPEC, addr,
				    port, ss);
}

static int rt_listen(const char *port, const char *addr)
{
	struct sockaddr_storage ss;
	struct rt_server *srv;
	u16 p;
	int ret;

	ret = kstrtou16(port, 10, &p);
	if (ret)
		return ret;
	ret = rt_addr(addr, port, &ss);
	if (ret)
		return ret;
	list_for_each_entry(srv, &rt_servers, list)
		if (srv->port == p)
			return -EADDRINUSE;
	srv = kzalloc(sizeof(*srv), GFP_KERNEL);
	if (!srv)
		return -ENOMEM;
	srv->port = p;
	mutex_init(&srv->lock);
	INIT_LIST_HEAD(&srv->conns);
	srv->id = rdma_create_id(current->nsproxy->net_ns, rt_server_handler,
				 srv, RDMA_PS_UDP, IB_QPT_UD);
	if (IS_ERR(srv->id)) {
		ret = PTR_ERR(srv->id);
		goto err_free;
	}
	ret = rdma_bind_addr(srv->id, (struct sockaddr *)&ss);
	if (ret)
		goto err_destroy_id;
	ret = rdma_listen(srv->id, 16);
	if (ret)
		goto err_destroy_id;
	list_add_tail(&srv->list, &rt_servers);
	return 0;

err_destroy_id:
	rdma_destroy_id(srv->id);
err_free:
	kfree(srv);
	return ret;
}

static int rt_unlisten(const char *port)
{
	struct rt_server *srv;
	u16 p;
	int ret;

	ret = kstrtou16(port, 10, &p);
	if (ret)
		return ret;
	list_for_each_entry(srv, &rt_servers, list) {
		if (srv->port == p) {
			list_del(&srv->list);
			rt_server_destroy(srv);
			return 0;
		}
	}
	return -ENOENT;
}

/* Record one event of an active id and wake the writer. */
static int rt_client_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rt_client *cl = id->context;

	pr_debug("client: %s (%d)\n", rdma_event_msg(ev->event), ev->status);
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_MULTICAST_JOIN:
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		spin_lock(&cl->lock);
		cl->event = ev->event;
		cl->status = ev->status;
		if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
			cl->qpn = ev->param.ud.qp_num;
			cl->qkey = ev->param.ud.qkey;
		}
		spin_unlock(&cl->lock);
		complete(&cl->done);
		break;
	default:
		break;
	}
	return 0;
}

/*
 * Wait for the next event of @cl; returns the event, or -1 after @ms
 * without one (or on a fatal signal).
 */
static int rt_client_wait(struct rt_client *cl, unsigned int ms)
{
	long left;
	int ev;

	left = wait_for_completion_killable_timeout(&cl->done,
						    msecs_to_jiffies(ms));
	if (left <= 0)
		return -1;
	spin_lock(&cl->lock);
	ev = cl->event;
	spin_unlock(&cl->lock);
	return ev;
}

/* An active side with its UD id in port space @ps, made in the writer's namespace. */
static struct rt_client *rt_client_new(enum rdma_ucm_port_space ps)
{
	struct rt_client *cl;
	int ret;

	cl = kzalloc(sizeof(*cl), GFP_KERNEL);
	if (!cl)
		return ERR_PTR(-ENOMEM);
	init_completion(&cl->done);
	spin_lock_init(&cl->lock);
	cl->id = rdma_create_id(current->nsproxy->net_ns, rt_client_handler,
				cl, ps, IB_QPT_UD);
	if (IS_ERR(cl->id)) {
		ret = PTR_ERR(cl->id);
		kfree(cl);
		return ERR_PTR(ret);
	}
	return cl;
}

/* connect (hold == false) or hold: the outcome goes to rt_result. */
static int rt_connect(const char *addr, const char *port, bool hold)
{
	struct rdma_conn_param param = {};
	unsigned long start = jiffies;
	struct sockaddr_storage ss;
	const char *step = "addr";
	struct rt_client *cl;
	int ret, ev;

	ret = rt_addr(addr, port, &ss);
	if (ret)
		return ret;
	cl = rt_client_new(RDMA_PS_UDP);
	if (IS_ERR(cl))
		return PTR_ERR(cl);

	ret = rdma_resolve_addr(cl->id, NULL, (struct sockaddr *)&ss,
				timeout_ms);
	if (ret)
		goto out_call;
	ev = rt_client_wait(cl, timeout_ms + 5000);
	if (ev != RDMA_CM_EVENT_ADDR_RESOLVED)
		goto out_event;

	step = "route";
	reinit_completion(&cl->done);
	ret = rdma_resolve_route(cl->id, timeout_ms);
	if (ret)
		goto out_call;
	ev = rt_client_wait(cl, timeout_ms + 5000);
	if (ev != RDMA_CM_EVENT_ROUTE_RESOLVED)
		goto out_event;
	if (hold) {
		list_add_tail(&cl->list, &rt_held);
		snprintf(rt_result, sizeof(rt_result),
			 "event=ROUTE_RESOLVED status=0 step=route ms=%u\n",
			 jiffies_to_msecs(jiffies - start));
		return 0;
	}

	step = "connect";
	reinit_completion(&cl->done);
	ret = rdma_connect(cl->id, &param);
	if (ret)
		goto out_call;
	ev = rt_client_wait(cl, connect_wait_s * 1000);

out_event:
	if (ev < 0) {
		snprintf(rt_result, sizeof(rt_result),
			 "event=NONE status=0 step=%s ms=%u\n", step,
			 jiffies_to_msecs(jiffies - start));
	} else {
		spin_lock(&cl->lock);
		snprintf(rt_result, sizeof(rt_result),
			 "event=%s status=%d step=%s ms=%u qpn=0x%06x qkey=0x%08x\n",
			 rt_event_name(cl->event), cl->status, step,
			 jiffies_to_msecs(jiffies - start), cl->qpn, cl->qkey);
		spin_unlock(&cl->lock);
	}
	goto out_destroy;

out_call:
	snprintf(rt_result, sizeof(rt_result),
		 "event=CALL_FAILED status=%d step=%s ms=%u\n", ret, step,
		 jiffies_to_msecs(jiffies - start));
out_destroy:
	rdma_destroy_id(cl->id);
	kfree(cl);
	return 0;
}

/* mjoin: the outcome goes to rt_result; a joined id is held. */
static int rt_mjoin(const char *group, const char *addr)
{
	struct sockaddr_storage src, grp;
	unsigned long start = jiffies;
	struct rt_client *cl;
	int ret, ev;

	ret = rt_addr(addr, "0", &src);
	if (!ret)
		ret = rt_addr(group, "0", &grp);
	if (ret)
		return ret;
	cl = rt_client_new(RDMA_PS_IPOIB);
	if (IS_ERR(cl))
		return PTR_ERR(cl);
	ret = rdma_bind_addr(cl->id, (struct sockaddr *)&src);
	if (!ret)
		ret = rdma_join_multicast(cl->id, (struct sockaddr *)&grp,
					  BIT(FULLMEMBER_JOIN), cl);
	if (ret) {
		snprintf(rt_result, sizeof(rt_result),
			 "event=CALL_FAILED status=%d step=mjoin ms=%u\n", ret,
			 jiffies_to_msecs(jiffies - start));
		goto out_destroy;
	}
	ev = rt_client_wait(cl, timeout_ms + 5000);
	spin_lock(&cl->lock);
	snprintf(rt_result, sizeof(rt_result),
		 "event=%s status=%d step=mjoin ms=%u\n",
		 ev < 0 ? "NONE" : rt_event_name(cl->event), cl->status,
		 jiffies_to_msecs(jiffies - start));
	spin_unlock(&cl->lock);
	if (ev == RDMA_CM_EVENT_MULTICAST_JOIN) {
		list_add_tail(&cl->list, &rt_held);
		return 0;
	}
out_destroy:
	rdma_destroy_id(cl->id);
	kfree(cl);
	return 0;
}

static void rt_release(void)
{
	struct rt_client *cl, *tmp;

	list_for_each_entry_safe(cl, tmp, &rt_held, list) {
		list_del(&cl->list);
		rdma_destroy_id(cl->id);
		kfree(cl);
	}
}

static ssize_t rt_ctl_write(struct file *file, const char __user *ubuf,
			    size_t len, loff_t *ppos)
{
	char buf[RT_CMD_MAX], *p = buf, *argv[4];
	int argc = 0, ret;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	while (argc < ARRAY_SIZE(argv)) {
		char *tok = strsep(&p, " \t\n");

		if (!tok)
			break;
		if (*tok)
			argv[argc++] = tok;
	}
	if (!argc)
		return -EINVAL;

	mutex_lock(&rt_mutex);
	if (!strcmp(argv[0], "listen") && argc == 3) {
		ret = rt_listen(argv[1], argv[2]);
	} else if (!strcmp(argv[0], "unlisten") && argc == 2) {
		ret = rt_unlisten(argv[1]);
	} else if (!strcmp(argv[0], "connect") && argc == 3) {
		ret = rt_connect(argv[1], argv[2], false);
	} else if (!strcmp(argv[0], "hold") && argc == 3) {
		ret = rt_connect(argv[1], argv[2], true);
	} else if (!strcmp(argv[0], "mjoin") && argc == 3) {
		ret = rt_mjoin(argv[1], argv[2]);
	} else if (!strcmp(argv[0], "release") && argc == 1) {
		rt_release();
		ret = 0;
	} else {
		ret = -EINVAL;
	}
	mutex_unlock(&rt_mutex);
	return ret ? ret : len;
}

static const struct file_operations rt_ctl_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = rt_ctl_write,
	.llseek = noop_llseek,
};

static int rt_result_show(struct seq_file *m, void *v)
{
	mutex_lock(&rt_mutex);
	seq_puts(m, rt_result);
	mutex_unlock(&rt_mutex);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(rt_result);

static int rt_servers_show(struct seq_file *m, void *v)
{
	struct rt_server *srv;

	mutex_lock(&rt_mutex);
	list_for_each_entry(srv, &rt_servers, list) {
		mutex_lock(&srv->lock);
		seq_printf(m, "port=%u reqs=%u qpn=0x%06x qkey=0x%08x\n",
			   srv->port, srv->reqs, srv->qpn, srv->qkey);
		mutex_unlock(&srv->lock);
	}
	mutex_unlock(&rt_mutex);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(rt_servers);

static int __init rt_init(void)
{
	rt_dir = debugfs_create_dir("rdmacm_test", NULL);
	debugfs_create_file("ctl", 0200, rt_dir, NULL, &rt_ctl_fops);
	debugfs_create_file("result", 0444, rt_dir, NULL, &rt_result_fops);
	debugfs_create_file("servers", 0444, rt_dir, NULL, &rt_servers_fops);
	return 0;
}

static void __exit rt_exit(void)
{
	struct rt_server *srv, *tmp;

	debugfs_remove_recursive(rt_dir);
	mutex_lock(&rt_mutex);
	rt_release();
	list_for_each_entry_safe(srv, tmp, &rt_servers, list) {
		list_del(&srv->list);
		rt_server_destroy(srv);
	}
	mutex_unlock(&rt_mutex);
}

module_init(rt_init);
module_exit(rt_exit);
