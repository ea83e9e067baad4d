// SPDX-License-Identifier: GPL-2.0
/*
 * rdmacm_test: a test-only consumer of the kernel rdma_cm API in the UD
 * port space (RDMA_PS_UDP, SIDR) and the TCP port space (RDMA_PS_TCP, RC
 * connections), to check what rdma_cm needs from an IPoIB driver: IP -> GID
 * through the interface's neighbours, the route through the SA, and, on the
 * passive side, which interface (and so which namespace and listener) an
 * incoming request belongs to; and, over RC, that softib's reliable
 * connections deliver every message intact and in order.
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
 *              rclisten PORT ADDR [srq]  an RC server (RDMA_PS_TCP): accepts
 *                                    with retry and RNR retry counts 7,
 *                                    posts 16 64 KiB receives (with "srq":
 *                                    15 to an SRQ whose limit event is
 *                                    armed at 15), and checksums what
 *                                    arrives
 *              rcsend ADDR PORT N SIZE [GAP_MS]  connect over RC, send N
 *                                    messages of SIZE random bytes (16 in
 *                                    flight, or one per GAP_MS), wait for
 *                                    their completions, disconnect
 *   result   the last connect/hold: "event=NAME status=N step=S ms=N" and,
 *            once established, "qpn=0x... qkey=0x..."
 *            an rcsend adds "sent=N bytes=N crc=0x... wc=STATUS" (the
 *            CRC-32 of every byte sent, in order; the first failed
 *            completion's status, 0 if none)
 *   servers  one line per server: "port=N reqs=N qpn=0x... qkey=0x..."
 *            (the QP number and Q_Key of the last reply it sent); an RC
 *            server adds "msgs=N bytes=N crc=0x... wc=STATUS" over every
 *            connection it accepted, in arrival order
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/crc32.h>
#include <linux/delay.h>
#include <linux/debugfs.h>
#include <linux/inet.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/nsproxy.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/net_namespace.h>
#include <rdma/rdma_cm.h>

MODULE_DESCRIPTION("Test-only rdma_cm UD/SIDR and RC consumer (never installed)");
MODULE_LICENSE("GPL");

static unsigned int timeout_ms = 2000;
module_param(timeout_ms, uint, 0644);
MODULE_PARM_DESC(timeout_ms, "address and route resolution timeout (ms)");

static unsigned int connect_wait_s = 30;
module_param(connect_wait_s, uint, 0644);
MODULE_PARM_DESC(connect_wait_s, "how long a connect waits for its answer (s)");

/* a consumer's bug, on purpose: an SGE naming lkey 0, no key (the HCA's check) */
static unsigned int bad_lkey_msg;
module_param(bad_lkey_msg, uint, 0644);
MODULE_PARM_DESC(bad_lkey_msg, "rcsend: message N (from 1; 0: none) names lkey 0");

static bool bad_lkey_recv;
module_param(bad_lkey_recv, bool, 0644);
MODULE_PARM_DESC(bad_lkey_recv, "rclisten: a new connection's first receive names lkey 0");

#define RT_CMD_MAX	128
#define RT_RESULT_MAX	224
#define RT_RC_BUFS	16		/* receives posted, sends in flight */
#define RT_RC_BUF_SIZE	65536

struct rt_rc;

/* One RC buffer: a posted receive or a send in flight. */
struct rt_rc_buf {
	struct ib_cqe cqe;
	struct rt_rc *rc;
	void *data;
	u64 dma;
	u32 len;
};

/* The data path of one RC connection, either side. */
struct rt_rc {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct rt_rc_buf bufs[RT_RC_BUFS];
	struct ib_srq *srq;		/* server with "srq": receives posted there */
	spinlock_t lock;		/* the fields below */
	int wc_err;			/* the first failed completion's status */
	unsigned int inflight;		/* sends posted, not completed */
	wait_queue_head_t wait;		/* a send completed */
};

/* One reply a server sent: the QP whose number went to the client. */
struct rt_conn {
	struct list_head list;		/* rt_server.conns */
	struct rdma_cm_id *id;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct rt_rc *rc;		/* RC server: its receives */
};

struct rt_server {
	struct list_head list;		/* rt_servers, rt_mutex */
	u16 port;
	bool rc;			/* RDMA_PS_TCP, RC QPs */
	bool srq;			/* RC receives through an SRQ, limit armed */
	atomic_t srq_events;		/* IB_EVENT_SRQ_LIMIT_REACHED seen */
	struct rdma_cm_id *id;
	struct mutex lock;		/* the fields below */
	struct list_head conns;
	unsigned int reqs;
	u32 qpn;
	u32 qkey;
	/* RC: what arrived on every connection, in order (under rc_lock) */
	spinlock_t rc_lock;
	u32 crc;
	u32 msgs;
	u64 bytes;
	int wc_err;
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

/* Unmap and free the buffers of an RC data path whose QP is gone. */
static void rt_rc_free(struct rt_rc *rc)
{
	int i;

	if (!rc)
		return;
	for (i = 0; i < RT_RC_BUFS; i++) {
		if (!rc->bufs[i].data)
			continue;
		ib_dma_unmap_single(rc->dev, rc->bufs[i].dma, RT_RC_BUF_SIZE, DMA_BIDIRECTIONAL);
		kfree(rc->bufs[i].data);
	}
	kfree(rc);
}

static void rt_rc_recv_done(struct ib_cq *cq, struct ib_wc *wc);
static void rt_rc_send_done(struct ib_cq *cq, struct ib_wc *wc);

static struct rt_rc *rt_rc_alloc(struct ib_device *dev, struct ib_pd *pd, bool recv)
{
	struct rt_rc *rc;
	int i;

	rc = kzalloc(sizeof(*rc), GFP_KERNEL);
	if (!rc)
		return NULL;
	rc->dev = dev;
	rc->pd = pd;
	spin_lock_init(&rc->lock);
	init_waitqueue_head(&rc->wait);
	for (i = 0; i < RT_RC_BUFS; i++) {
		struct rt_rc_buf *b = &rc->bufs[i];

		b->rc = rc;
		b->cqe.done = recv ? rt_rc_recv_done : rt_rc_send_done;
		b->data = kmalloc(RT_RC_BUF_SIZE, GFP_KERNEL);
		if (!b->data)
			goto err;
		b->dma = ib_dma_map_single(dev, b->data, RT_RC_BUF_SIZE, DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(dev, b->dma)) {
			kfree(b->data);
			b->data = NULL;
			goto err;
		}
	}
	return rc;
err:
	rt_rc_free(rc);
	return NULL;
}

static int rt_rc_post_recv(struct ib_qp *qp, struct rt_rc_buf *b, bool bad_key)
{
	struct ib_sge sge = {
		.addr = b->dma,
		.length = RT_RC_BUF_SIZE,
		.lkey = bad_key ? 0 : b->rc->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = { .wr_cqe = &b->cqe, .sg_list = &sge, .num_sge = 1 };

	if (b->rc->srq)
		return ib_post_srq_recv(b->rc->srq, &wr, NULL);
	return ib_post_recv(qp, &wr, NULL);
}

static void rt_rc_note_err(struct ib_wc *wc, int *err)
{
	/* flushes follow the first error, or a disconnect: not the cause */
	if (wc->status != IB_WC_WR_FLUSH_ERR && !*err)
		*err = wc->status;
}

/* A message arrived: add it to the server's stream checksum, repost. */
static void rt_rc_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rt_rc_buf *b = container_of(wc->wr_cqe, struct rt_rc_buf, cqe);
	struct rt_server *srv = cq->cq_context;
	unsigned long flags;

	spin_lock_irqsave(&srv->rc_lock, flags);
	if (wc->status != IB_WC_SUCCESS) {
		rt_rc_note_err(wc, &srv->wc_err);
		spin_unlock_irqrestore(&srv->rc_lock, flags);
		return;
	}
	ib_dma_sync_single_for_cpu(b->rc->dev, b->dma, wc->byte_len, DMA_BIDIRECTIONAL);
	srv->crc = crc32_le(srv->crc, b->data, wc->byte_len);
	srv->msgs++;
	srv->bytes += wc->byte_len;
	spin_unlock_irqrestore(&srv->rc_lock, flags);
	if (rt_rc_post_recv(wc->qp, b, false))
		pr_info("port %u: repost failed\n", srv->port);
}

static void rt_rc_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rt_rc_buf *b = container_of(wc->wr_cqe, struct rt_rc_buf, cqe);
	struct rt_rc *rc = b->rc;
	unsigned long flags;

	spin_lock_irqsave(&rc->lock, flags);
	if (wc->status != IB_WC_SUCCESS)
		rt_rc_note_err(wc, &rc->wc_err);
	rc->inflight--;
	spin_unlock_irqrestore(&rc->lock, flags);
	wake_up(&rc->wait);
}

static void rt_conn_free(struct rt_conn *conn)
{
	if (conn->id->qp)
		rdma_destroy_qp(conn->id);
	rdma_destroy_id(conn->id);
	ib_free_cq(conn->cq);
	if (conn->rc && conn->rc->srq)
		ib_destroy_srq(conn->rc->srq);
	rt_rc_free(conn->rc);
	ib_dealloc_pd(conn->pd);
	kfree(conn);
}

/* the SRQ's count fell below its limit; counted, not re-armed */
static void rt_srq_event(struct ib_event *ev, void *ctx)
{
	struct rt_server *srv = ctx;

	if (ev->event == IB_EVENT_SRQ_LIMIT_REACHED)
		atomic_inc(&srv->srq_events);
}

/*
 * A request reached our listener: make a QP on its device and accept. UD:
 * the SIDR reply carries that QP's number and rdma_cm's Q_Key. RC: 16 64
 * KiB receives posted, retry and RNR retry counts 7. A non-zero return
 * makes rdma_cm destroy @id (nothing of ours is left).
 */
static int rt_server_request(struct rt_server *srv, struct rdma_cm_id *id)
{
	struct ib_qp_init_attr init = {
		.qp_type = srv->rc ? IB_QPT_RC : IB_QPT_UD,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 1, .max_recv_wr = srv->rc ? RT_RC_BUFS : 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct rdma_conn_param param = {};
	struct ib_qp_init_attr qinit;
	struct ib_qp_attr attr;
	struct rt_conn *conn;
	int i, ret;

	conn = kzalloc(sizeof(*conn), GFP_KERNEL);
	if (!conn)
		return -ENOMEM;
	conn->id = id;
	conn->pd = ib_alloc_pd(id->device, 0);
	if (IS_ERR(conn->pd)) {
		ret = PTR_ERR(conn->pd);
		goto err_free;
	}
	conn->cq = ib_alloc_cq(id->device, srv, init.cap.max_recv_wr + 2, 0, IB_POLL_WORKQUEUE);
	if (IS_ERR(conn->cq)) {
		ret = PTR_ERR(conn->cq);
		goto err_dealloc_pd;
	}
	if (srv->rc) {
		ret = -ENOMEM;
		conn->rc = rt_rc_alloc(id->device, conn->pd, true);
		if (!conn->rc)
			goto err_free_cq;
		param.retry_count = 7;
		param.rnr_retry_count = 7;
	}
	if (srv->srq) {
		struct ib_srq_init_attr sattr = {
			.event_handler = rt_srq_event,
			.srq_context = srv,
			/* 15 posted: the first message takes the count below it */
			.attr = { .max_wr = RT_RC_BUFS, .max_sge = 1, .srq_limit = RT_RC_BUFS - 1 },
		};

		conn->rc->srq = ib_create_srq(conn->pd, &sattr);
		if (IS_ERR(conn->rc->srq)) {
			ret = PTR_ERR(conn->rc->srq);
			conn->rc->srq = NULL;
			goto err_free_cq;
		}
		init.srq = conn->rc->srq;
		init.cap.max_recv_wr = 0;
		init.cap.max_recv_sge = 0;
	}
	init.send_cq = conn->cq;
	init.recv_cq = conn->cq;
	ret = rdma_create_qp(id, conn->pd, &init);
	if (ret)
		goto err_free_cq;
	for (i = 0; srv->rc && i < RT_RC_BUFS - srv->srq && !ret; i++)
		ret = rt_rc_post_recv(id->qp, &conn->rc->bufs[i], !i && bad_lkey_recv);
	if (!ret)
		ret = rdma_accept(id, &param);
	if (ret)
		goto err_destroy_qp;
	ret = srv->rc ? -EINVAL : ib_query_qp(id->qp, &attr, IB_QP_QKEY, &qinit);
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
	if (conn->rc && conn->rc->srq)
		ib_destroy_srq(conn->rc->srq);
	rt_rc_free(conn->rc);
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

static int rt_listen(const char *port, const char *addr, bool rc, bool srq)
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
	srv->rc = rc;
	srv->srq = srq;
	mutex_init(&srv->lock);
	spin_lock_init(&srv->rc_lock);
	INIT_LIST_HEAD(&srv->conns);
	srv->id = rdma_create_id(current->nsproxy->net_ns, rt_server_handler, srv,
				 rc ? RDMA_PS_TCP : RDMA_PS_UDP, rc ? IB_QPT_RC : IB_QPT_UD);
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
		if (ev->event == RDMA_CM_EVENT_ESTABLISHED && id->qp_type == IB_QPT_UD) {
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

/* An active side with its id in port space @ps, made in the writer's namespace. */
static struct rt_client *rt_client_new(enum rdma_ucm_port_space ps)
{
	struct rt_client *cl;
	int ret;

	cl = kzalloc(sizeof(*cl), GFP_KERNEL);
	if (!cl)
		return ERR_PTR(-ENOMEM);
	init_completion(&cl->done);
	spin_lock_init(&cl->lock);
	cl->id = rdma_create_id(current->nsproxy->net_ns, rt_client_handler, cl, ps,
				ps == RDMA_PS_TCP ? IB_QPT_RC : IB_QPT_UD);
	if (IS_ERR(cl->id)) {
		ret = PTR_ERR(cl->id);
		kfree(cl);
		return ERR_PTR(ret);
	}
	return cl;
}

/*
 * Resolve the address, then the route, of @cl's id to @dst. Returns a
 * failed call's errno (0 if both calls were made), with the last event
 * seen (-1: none in time) in @ev and the step reached in @step.
 */
static int rt_resolve(struct rt_client *cl, struct sockaddr_storage *dst, const char **step,
		      int *ev)
{
	int ret;

	*step = "addr";
	ret = rdma_resolve_addr(cl->id, NULL, (struct sockaddr *)dst, timeout_ms);
	if (ret)
		return ret;
	*ev = rt_client_wait(cl, timeout_ms + 5000);
	if (*ev != RDMA_CM_EVENT_ADDR_RESOLVED)
		return 0;
	*step = "route";
	reinit_completion(&cl->done);
	ret = rdma_resolve_route(cl->id, timeout_ms);
	if (ret)
		return ret;
	*ev = rt_client_wait(cl, timeout_ms + 5000);
	return 0;
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

	ret = rt_resolve(cl, &ss, &step, &ev);
	if (ret)
		goto out_call;
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

/*
 * Send @count messages of @size random bytes over the connected RC @id,
 * RT_RC_BUFS in flight; returns the CRC-32 of the stream, and in @sent and
 * @wc_err how many completed and the first error.
 */
static u32 rt_rc_stream(struct rdma_cm_id *id, struct rt_rc *rc, u32 count, u32 size,
			u32 gap_ms, u32 *sent, int *wc_err)
{
	u32 crc = 0, i;
	int slot = 0, ret;

	*sent = 0;
	for (i = 0; i < count; i++) {
		struct rt_rc_buf *b = &rc->bufs[slot];
		struct ib_sge sge = {
			.addr = b->dma, .length = size,
			.lkey = i + 1 == bad_lkey_msg ? 0 : rc->pd->local_dma_lkey,
		};
		struct ib_send_wr wr = {
			.wr_cqe = &b->cqe, .sg_list = &sge, .num_sge = 1,
			.opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED,
		};

		/* a free buffer: fewer than RT_RC_BUFS in flight (slots go round) */
		if (!wait_event_timeout(rc->wait, READ_ONCE(rc->inflight) < RT_RC_BUFS,
					connect_wait_s * HZ))
			break;
		if (READ_ONCE(rc->wc_err))
			break;
		get_random_bytes(b->data, size);
		crc = crc32_le(crc, b->data, size);
		ib_dma_sync_single_for_device(rc->dev, b->dma, size, DMA_BIDIRECTIONAL);
		spin_lock_irq(&rc->lock);
		rc->inflight++;
		spin_unlock_irq(&rc->lock);
		ret = ib_post_send(id->qp, &wr, NULL);
		if (ret) {
			spin_lock_irq(&rc->lock);
			rc->inflight--;
			spin_unlock_irq(&rc->lock);
			*wc_err = ret;
			break;
		}
		slot = (slot + 1) % RT_RC_BUFS;
		if (gap_ms)
			msleep(gap_ms);
	}
	wait_event_timeout(rc->wait, !READ_ONCE(rc->inflight), connect_wait_s * HZ);
	spin_lock_irq(&rc->lock);
	if (!*wc_err)
		*wc_err = rc->wc_err;
	*sent = i - rc->inflight;
	spin_unlock_irq(&rc->lock);
	return crc;
}

/* rcsend: connect over RC and send; the outcome goes to rt_result. */
static int rt_rcsend(const char *addr, const char *port, const char *n, const char *sz,
		     const char *gap)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = RT_RC_BUFS, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct rdma_conn_param param = { .retry_count = 7, .rnr_retry_count = 7 };
	unsigned long start = jiffies;
	struct sockaddr_storage ss;
	const char *step = "addr";
	struct rt_rc *rc = NULL;
	struct ib_pd *pd = NULL;
	struct ib_cq *cq = NULL;
	struct rt_client *cl;
	u32 count, size, gap_ms = 0, sent = 0, crc = 0;
	int ret, ev = -1, wc_err = 0;

	if (kstrtou32(n, 10, &count) || kstrtou32(sz, 10, &size) || !size ||
	    size > RT_RC_BUF_SIZE || (gap && kstrtou32(gap, 10, &gap_ms)))
		return -EINVAL;
	ret = rt_addr(addr, port, &ss);
	if (ret)
		return ret;
	cl = rt_client_new(RDMA_PS_TCP);
	if (IS_ERR(cl))
		return PTR_ERR(cl);

	ret = rt_resolve(cl, &ss, &step, &ev);
	if (ret)
		goto out_call;
	if (ev != RDMA_CM_EVENT_ROUTE_RESOLVED)
		goto out_event;

	step = "qp";
	pd = ib_alloc_pd(cl->id->device, 0);
	if (IS_ERR(pd)) {
		ret = PTR_ERR(pd);
		pd = NULL;
		goto out_call;
	}
	cq = ib_alloc_cq(cl->id->device, NULL, RT_RC_BUFS + 2, 0, IB_POLL_WORKQUEUE);
	if (IS_ERR(cq)) {
		ret = PTR_ERR(cq);
		cq = NULL;
		goto out_call;
	}
	ret = -ENOMEM;
	rc = rt_rc_alloc(cl->id->device, pd, false);
	if (!rc)
		goto out_call;
	init.send_cq = cq;
	init.recv_cq = cq;
	ret = rdma_create_qp(cl->id, pd, &init);
	if (ret)
		goto out_call;

	step = "connect";
	reinit_completion(&cl->done);
	ret = rdma_connect(cl->id, &param);
	if (ret)
		goto out_call;
	ev = rt_client_wait(cl, connect_wait_s * 1000);
	if (ev != RDMA_CM_EVENT_ESTABLISHED)
		goto out_event;
	step = "send";
	crc = rt_rc_stream(cl->id, rc, count, size, gap_ms, &sent, &wc_err);

out_event:
	snprintf(rt_result, sizeof(rt_result),
		 "event=%s status=%d step=%s ms=%u sent=%u bytes=%llu crc=0x%08x wc=%d\n",
		 ev < 0 ? "NONE" : rt_event_name(ev), ev < 0 ? 0 : cl->status, step,
		 jiffies_to_msecs(jiffies - start), sent, (u64)sent * size, crc, wc_err);
	goto out_destroy;
out_call:
	snprintf(rt_result, sizeof(rt_result), "event=CALL_FAILED status=%d step=%s ms=%u\n",
		 ret, step, jiffies_to_msecs(jiffies - start));
out_destroy:
	if (cl->id->qp) {
		rdma_disconnect(cl->id);
		rdma_destroy_qp(cl->id);
	}
	rdma_destroy_id(cl->id);
	if (cq)
		ib_free_cq(cq);
	rt_rc_free(rc);
	if (pd)
		ib_dealloc_pd(pd);
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
	char buf[RT_CMD_MAX], *p = buf, *argv[6];
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
		ret = rt_listen(argv[1], argv[2], false, false);
	} else if (!strcmp(argv[0], "rclisten") && argc == 3) {
		ret = rt_listen(argv[1], argv[2], true, false);
	} else if (!strcmp(argv[0], "rclisten") && argc == 4 && !strcmp(argv[3], "srq")) {
		ret = rt_listen(argv[1], argv[2], true, true);
	} else if (!strcmp(argv[0], "rcsend") && (argc == 5 || argc == 6)) {
		ret = rt_rcsend(argv[1], argv[2], argv[3], argv[4], argc == 6 ? argv[5] : NULL);
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
		seq_printf(m, "port=%u reqs=%u qpn=0x%06x qkey=0x%08x",
			   srv->port, srv->reqs, srv->qpn, srv->qkey);
		if (srv->rc) {
			spin_lock_irq(&srv->rc_lock);
			seq_printf(m, " msgs=%u bytes=%llu crc=0x%08x wc=%d srq_events=%d",
				   srv->msgs, srv->bytes, srv->crc, srv->wc_err,
				   atomic_read(&srv->srq_events));
			spin_unlock_irq(&srv->rc_lock);
		}
		seq_putc(m, '\n');
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
