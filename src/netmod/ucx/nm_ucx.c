/*
 * nm_ucx.c - the transport to other nodes (netmod.h's rma_netmod_t and ops table): UCX (UCP)
 * RDMA, network atomics and active messages.
 *
 * One UCP context per process, made the first time a window has an off-node peer (a
 * single-node job never starts UCX). Three workers: origins issue operations on the *origin
 * worker* (the application's threads only, so the data path takes no lock); every peer
 * connects to this process's *target worker*, which the progress agent drives: over
 * transports that emulate RDMA and atomics in software (tcp) nothing reaches this process's
 * memory unless that worker is progressed; the *watch worker* holds one endpoint per peer that
 * only reports the peer's failure. One endpoint per peer process, made once.
 *
 * Sections: progress and waits; active messages; start; endpoints; memory and keys; data
 * path; information and teardown.
 */
#define _GNU_SOURCE
#include "config.h"

#include "netmod/netmod.h"
#include "netmod/ucx/lanes.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <ucp/api/ucp.h>

#include "mpid/rma/agent.h"
#include "mpid/rma/env.h"
#include "sync/wait.h"
#include "windows/segment.h"

typedef struct peer {
    ucp_ep_h ep;
    ucp_ep_h watch;        /* no traffic: reports the peer's failure (watch_create) */
    rma_ucx_lanes_t lanes; /* what its lanes promise (ep_lanes) */
    _Atomic int connected; /* 1: a flush of ep completed, so its connection is set up */
} peer_t;

static struct {
    ucp_context_h ctx;
    ucp_worker_h ow; /* origin worker: this process's operations */
    ucp_worker_h tw; /* target worker: peers' operations on this process (the agent) */
    ucp_worker_h ww; /* watch worker: the peers' watch endpoints (watch_create), driven
                        only by waits that have lasted (rma_peer_poll) and at teardown */
    int tw_fd;       /* the target worker's event descriptor (RMA_AGENT=block) */
    ucp_address_t *taddr, *waddr;
    size_t taddr_len, waddr_len;
    peer_t *peers; /* by MPI_COMM_WORLD rank */
    int npeers;
    int started;
    int has_device;    /* a network device among the context's resources (ucx_movable) */
    size_t am_hdr_max; /* the smaller of the workers' max_am_header */
    rma_nm_am_cb_t am[RMA_NM_AM_MAX];
    rma_nm_am_rndv_cb_t am_rndv[RMA_NM_AM_MAX];
    int (*idle)(void);             /* serves requests left for later; returns how many are left */
    int (*drain)(rma_nm_tgt_t *t); /* sends what t->agg holds back */
    pthread_mutex_t lock;          /* start and endpoint creation (MPI_THREAD_MULTIPLE) */
    pthread_mutex_t tw_mtx;        /* the target worker: the agent, or a rank serving while it
                                      waits (tw_progress) */
    pthread_mutex_t ww_mtx;        /* the watch worker */
    _Atomic unsigned rank_polls;   /* times an application thread drove the target worker */
} ux = {.tw_fd = -1,
        .lock = PTHREAD_MUTEX_INITIALIZER,
        .tw_mtx = PTHREAD_MUTEX_INITIALIZER,
        .ww_mtx = PTHREAD_MUTEX_INITIALIZER};

static const rma_netmod_ops_t ucx_ops;

static int status_errno(ucs_status_t st)
{
    switch (st) {
    case UCS_OK: return 0;
    case UCS_ERR_NO_MEMORY: return -ENOMEM;
    case UCS_ERR_UNSUPPORTED: return -ENOTSUP;
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT: return -ECONNRESET;
    case UCS_ERR_CANCELED: return -ECANCELED;
    default: return -EIO;
    }
}

static int ucx_started(void)
{
    return ux.started;
}

/* ------------------------------------------------------------------ progress and waiting */

/* Drives the target worker (peers' operations on this process) once, and serves what
 * was left for later, unless another thread is at it. Whoever holds tw_mtx does: the agent,
 * or a rank that waits (tw_progress). 1 when something happened, 0 when not, -1 when
 * another thread holds the worker; *left: how many requests are still left for later. */
static int tw_try(int *left)
{
    int n;

    if (pthread_mutex_trylock(&ux.tw_mtx) != 0)
        return -1;
    n = (int)ucp_worker_progress(ux.tw);
    *left = ux.idle != NULL ? ux.idle() : 0;
    pthread_mutex_unlock(&ux.tw_mtx);
    return n != 0;
}

/* Drives the watch worker once unless another thread is at it: a peer's failure reaches
 * ep_failed here. Registered with rma_peer_watch_set: every wait that sleeps calls it. */
static void ww_progress(void)
{
    if (pthread_mutex_trylock(&ux.ww_mtx) != 0)
        return;
    if (ux.ww != NULL)
        ucp_worker_progress(ux.ww);
    pthread_mutex_unlock(&ux.ww_mtx);
}

/* An application thread's turn at the target worker; counted, so that the agent stands
 * aside while ranks keep polling (agent_progress). 1 when something happened. */
static int tw_progress(void)
{
    int left, n = tw_try(&left);

    if (n >= 0) {
        atomic_fetch_add_explicit(&ux.rank_polls, 1, memory_order_relaxed);
        /* this turn may have read the message that woke the agent and left its request
         * for later (a lock held here): the agent, asleep, would not look again */
        if (left > 0)
            rma_agent_wake();
    }
    return n > 0;
}

static int ucx_progress(void)
{
    int n = (int)ucp_worker_progress(ux.ow);

    /* a rank that waits serves its peers meanwhile, unless the agent is at it: on a node
     * whose cores all run spinning ranks the agent may wait milliseconds for a core, and
     * two ranks flushing to each other would wait for their agents */
    n += tw_progress();
    return n != 0;
}

static void ucx_quiesce(void)
{
    if (!ux.started)
        return;
    pthread_mutex_lock(&ux.tw_mtx);
    pthread_mutex_unlock(&ux.tw_mtx);
}

/* Turns at the target worker between two tests of the collective's request: MPI's progress
 * takes longer than an idle turn, and a request that arrives while it runs waits for it.
 * Right after serving one, the collective is tested at once (the next request of that
 * origin is a round trip away); then, while peers' requests keep coming (one was served in
 * the last SERVE_BUSY rounds), up to SERVE_BUSY_TURNS turns wait for the next one. Two
 * simulated nodes, 128-byte accumulate + flush served by a rank inside MPI_Barrier,
 * per-call median / 90th percentile / mean in us: one turn per test 0.67 / - / 0.77; 8 turns
 * 0.62 / 0.92-1.26 / 0.72-0.77; 64 turns 0.59 / 0.65-0.66 / 0.64-0.65 (MPICH 0.59 /
 * 0.61-0.62 / 0.60-0.61). 64 turns when idle cost a barrier 1.6 us instead of 0.6. */
#define SERVE_TW_TURNS   8
#define SERVE_BUSY_TURNS 64
#define SERVE_BUSY       4

/* Waits for n (at most 2) MPI requests (rc: the calls that started them) while serving
 * peers' operations, when UCX runs, and watching for dead peers; spins then yields, never
 * sleeps: a collective's latency is not to suffer. The MPI error code (netmod.h
 * wait_all). */
static int ucx_wait_all(int rc, int n, MPI_Request *reqs)
{
    int done = 0, spins = 0, busy = 0, got;
    unsigned turns = 0;
    MPI_Status st[2];

    while (rc == MPI_SUCCESS && (rc = PMPI_Testall(n, reqs, &done, st)) == MPI_SUCCESS && !done) {
        /* a system call and the watch worker's progress: a request that arrives meanwhile
         * waits for them, so while requests keep coming, 16 times less often (128-byte
         * accumulate + flush served here, 90th percentile 0.76 -> 0.68 us, MPICH 0.68) */
        if ((++turns & (busy > 0 ? 255u : 15u)) == 0) {
            rma_peer_poll();         /* peers' watch endpoints: answered, and checked */
            rma_agent_serve_moves(); /* same-node peers' requests to move memory */
        }
        got = 0;
        for (int k = 0, n = busy ? SERVE_BUSY_TURNS : SERVE_TW_TURNS; ux.started && k < n && !got;
             k++)
            got = tw_progress();
        if (got) {
            busy = SERVE_BUSY;
            spins = 0;
        } else if (busy > 0) {
            busy--;
        } else if (spins++ < rma_env.spin_count) {
            rma_cpu_relax();
        } else {
            sched_yield();
        }
    }
    return rc;
}

static int serve_until(int rc, MPI_Request *req)
{
    return ucx_wait_all(rc, 1, req);
}

static void ucx_wait_zero(_Atomic int *count)
{
    rma_backoff_t bo = RMA_BACKOFF_INIT;

    while (atomic_load_explicit(count, memory_order_acquire) > 0)
        rma_backoff_after(&bo, ucx_progress());
}

static void ucx_set_idle(int (*fn)(void))
{
    ux.idle = fn;
}

static void ucx_set_drain(int (*fn)(rma_nm_tgt_t *t))
{
    ux.drain = fn;
}

/* Waits for a request of the origin worker, or with ww (ww_mtx) of the watch worker, which
 * it then drives too under that lock, until the time deadline (rma_now_ns); frees it.
 * 0 or -errno; -ETIMEDOUT when it was still under way at the deadline (UCX frees it when
 * it ends). */
static int wait_req_until(ucs_status_ptr_t req, pthread_mutex_t *ww, uint64_t deadline)
{
    rma_backoff_t bo = RMA_BACKOFF_INIT;
    ucs_status_t st;
    int late;

    if (req == NULL)
        return 0;
    if (UCS_PTR_IS_ERR(req))
        return status_errno(UCS_PTR_STATUS(req));
    for (;;) {
        if (ww != NULL) {
            pthread_mutex_lock(ww);
            ucp_worker_progress(ux.ww);
        }
        st = ucp_request_check_status(req);
        late = st == UCS_INPROGRESS && deadline != UINT64_MAX && rma_now_ns() > deadline;
        if (st != UCS_INPROGRESS || late)
            ucp_request_free(req);
        if (ww != NULL)
            pthread_mutex_unlock(ww);
        if (late)
            return -ETIMEDOUT;
        if (st != UCS_INPROGRESS)
            return status_errno(st);
        rma_backoff_after(&bo, ucx_progress());
    }
}

static int wait_req_in(ucs_status_ptr_t req, pthread_mutex_t *ww)
{
    return wait_req_until(req, ww, UINT64_MAX);
}

static int wait_req(ucs_status_ptr_t req)
{
    return wait_req_in(req, NULL);
}

/* A put, get or atomic to t was issued: only an endpoint flush completes it. */
static void ep_issued(rma_nm_tgt_t *t)
{
    atomic_fetch_add_explicit(&t->ep_ops, 1, memory_order_release);
    rma_nm_issued(t);
}

/* An operation to t whose completion a later flush waits for: the request is released
 * now. One that UCX could not hand to its transport at once is noted (ucx_push), and in
 * *busy when that is not NULL (UCX may still read its buffer). */
static int post_req(rma_nm_tgt_t *t, ucs_status_ptr_t req, int *busy)
{
    if (UCS_PTR_IS_ERR(req))
        return status_errno(UCS_PTR_STATUS(req));
    if (req != NULL) {
        if (ucp_request_check_status(req) == UCS_INPROGRESS) {
            atomic_store_explicit(&t->ep_queued, 1, memory_order_relaxed);
            if (busy != NULL)
                *busy = 1;
        }
        ucp_request_free(req);
    }
    return 0;
}

/* ------------------------------------------------------------------ the agent's hooks */

/* A rank polls the target worker at least this often while it serves (spinning or yielding
 * in a wait loop); one that sleeps between polls (rma_backoff) serves too slowly. */
#define RANK_POLL_NS 20000u

/* 1: did something; 0: idle; -1: an application thread drives the worker now, or has polled
 * it about every RANK_POLL_NS since the last call (it waits inside librma or MPI_Barrier):
 * the agent stands aside. */
static int agent_progress(void)
{
    static unsigned seen; /* the agent's thread only */
    static uint64_t seen_ns;
    unsigned polls = atomic_load_explicit(&ux.rank_polls, memory_order_relaxed);
    uint64_t now, need;
    int n, left;

    if ((n = tw_try(&left)) < 0)
        return -1;
    now = rma_now_ns();
    need = 1 + (now - seen_ns) / RANK_POLL_NS;
    n = n > 0 ? 1 : polls - seen >= need ? -1 : 0;
    seen = polls;
    seen_ns = now;
    return n;
}

/* 0: armed, the agent may sleep on the descriptor; 1: events are pending, or requests left
 * for later wait (the agent keeps polling, yielding the core). */
static int agent_arm(void)
{
    int busy;

    if (ux.tw_fd < 0) /* nothing to sleep on (agent.h): keep polling */
        return sched_yield(), 1;
    pthread_mutex_lock(&ux.tw_mtx);
    busy = ux.idle != NULL && ux.idle() > 0;
    if (!busy)
        busy = ucp_worker_arm(ux.tw) == UCS_ERR_BUSY;
    pthread_mutex_unlock(&ux.tw_mtx);
    if (busy)
        sched_yield();
    return busy;
}

/* ------------------------------------------------------------------ active messages */

/* A message whose data comes by rendezvous: the worker it arrived on and UCX's descriptor
 * of the data, until the handler receives it. */
struct rma_nm_rndv {
    ucp_worker_h w;
    void *desc;
};

/* The handler's argument: the message's id, and whether it arrived on the target worker. */
#define AM_ARG(id, w) ((void *)(uintptr_t)((id) | ((w) == ux.tw ? 0x100u : 0)))

static ucs_status_t am_dispatch(void *arg, const void *header, size_t header_length, void *data,
                                size_t length, const ucp_am_recv_param_t *param)
{
    unsigned id = (unsigned)(uintptr_t)arg & 0xffu;
    void *reply_ep = (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ? param->reply_ep : NULL;

    if (id >= RMA_NM_AM_MAX)
        return UCS_OK;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        /* not received by the handler: UCX drops the data and completes the send */
        rma_nm_rndv_t rv = {((uintptr_t)arg & 0x100u) ? ux.tw : ux.ow, data};
        if (ux.am_rndv[id] != NULL)
            ux.am_rndv[id](header, header_length, &rv, length, reply_ep);
    } else if (ux.am[id] != NULL) {
        ux.am[id](header, header_length, data, length, reply_ep);
    }
    return UCS_OK;
}

typedef struct recv_ctx {
    void (*done)(void *arg, int rc);
    void *arg;
} recv_ctx_t;

static void recv_done(void *req, ucs_status_t st, size_t length, void *user)
{
    recv_ctx_t *c = user;

    (void)length;
    c->done(c->arg, status_errno(st));
    free(c);
    ucp_request_free(req);
}

static int ucx_am_recv(rma_nm_rndv_t *rv, void *buf, size_t len, void (*done)(void *arg, int rc),
                       void *arg)
{
    recv_ctx_t *c = malloc(sizeof(*c));
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                             UCP_OP_ATTR_FIELD_USER_DATA |
                                             UCP_OP_ATTR_FIELD_DATATYPE,
                             .cb.recv_am = recv_done,
                             .datatype = ucp_dt_make_contig(1)};
    ucs_status_ptr_t req;

    if (c == NULL)
        return -ENOMEM;
    *c = (recv_ctx_t){done, arg};
    p.user_data = c;
    req = ucp_am_recv_data_nbx(rv->w, rv->desc, buf, len, &p);
    if (UCS_PTR_IS_ERR(req)) {
        free(c);
        return status_errno(UCS_PTR_STATUS(req));
    }
    if (req == NULL) { /* landed already: the callback is not called */
        free(c);
        done(arg, 0);
    }
    return 0;
}

static void ucx_am_handler(unsigned id, rma_nm_am_cb_t cb, rma_nm_am_rndv_cb_t rndv)
{
    if (id < RMA_NM_AM_MAX) {
        ux.am[id] = cb;
        ux.am_rndv[id] = rndv;
    }
}

static int set_handler(ucp_worker_h w, unsigned id)
{
    ucp_am_handler_param_t p = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                      UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG,
        .id = id,
        .flags = UCP_AM_FLAG_WHOLE_MSG,
        .cb = am_dispatch,
        .arg = AM_ARG(id, w),
    };
    return ucp_worker_set_am_recv_handler(w, &p) == UCS_OK ? 0 : -1;
}

static int am_send(ucp_ep_h ep, unsigned id, const void *hdr, size_t hlen, const void *data,
                   size_t len, uint32_t flags)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags = flags | UCP_AM_SEND_FLAG_EAGER};

    if (hlen > ux.am_hdr_max)
        return -EMSGSIZE;
    return wait_req(ucp_am_send_nbx(ep, id, hdr, hlen, data, len, &p));
}

/* Sends without waiting: hdr (from malloc, freed when the send completes), then len bytes
 * at data, which must stay as they are until then. Replies are sent this way because they
 * run on the target worker, inside its progress: waiting for the send there would recurse
 * into the worker from its own callback. */
static void post_done(void *req, ucs_status_t st, void *user)
{
    (void)st;
    free(user);
    ucp_request_free(req);
}

static int am_post(ucp_ep_h ep, unsigned id, void *hdr, size_t hlen, const void *data, size_t len,
                   uint32_t flags)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK |
                                             UCP_OP_ATTR_FIELD_USER_DATA,
                             .flags = flags,
                             .cb.send = post_done,
                             .user_data = hdr};
    ucs_status_ptr_t req;

    if (hlen > ux.am_hdr_max) {
        free(hdr);
        return -EMSGSIZE;
    }
    req = ucp_am_send_nbx(ep, id, hdr, hlen, data, len, &p);

    if (UCS_PTR_IS_ERR(req)) {
        free(hdr);
        return status_errno(UCS_PTR_STATUS(req));
    }
    if (req == NULL)
        free(hdr);
    return 0;
}

static void *dup_hdr(const void *hdr, size_t hlen)
{
    void *copy = malloc(hlen + 1);

    return copy != NULL ? memcpy(copy, hdr, hlen) : NULL;
}

static int ucx_am_send(rma_nm_tgt_t *t, unsigned id, const void *hdr, size_t hlen, const void *data,
                       size_t len, int how)
{
    int rc = rma_nm_gate(t);
    void *copy;

    if (rc != 0)
        return rc;
    if (how == RMA_NM_AM_COPY)
        return am_send(t->ep, id, hdr, hlen, data, len, UCP_AM_SEND_FLAG_REPLY);
    copy = dup_hdr(hdr, hlen);
    return copy == NULL ? -ENOMEM
                        : am_post(t->ep, id, copy, hlen, data, len,
                                  UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_RNDV);
}

static int ucx_am_reply(void *reply_ep, unsigned id, const void *hdr, size_t hlen, const void *data,
                        size_t len, int how)
{
    char *copy;

    if (how == RMA_NM_AM_OWN)
        return am_post(reply_ep, id, (void *)hdr, hlen, (const char *)hdr + hlen, len,
                       UCP_AM_SEND_FLAG_EAGER);
    if (how == RMA_NM_AM_RNDV) {
        copy = dup_hdr(hdr, hlen);
        return copy == NULL ? -ENOMEM
                            : am_post(reply_ep, id, copy, hlen, data, len, UCP_AM_SEND_FLAG_RNDV);
    }
    if ((copy = malloc(hlen + len + 1)) == NULL)
        return -ENOMEM;
    memcpy(copy, hdr, hlen);
    if (len > 0)
        memcpy(copy + hlen, data, len);
    return am_post(reply_ep, id, copy, hlen, copy + hlen, len, UCP_AM_SEND_FLAG_EAGER);
}

/* ------------------------------------------------------------------ start */

/* The value librma's UCX takes for UCX_<name>: RMA_UCX_<name> when set, else UCX_<name>
 * (ucp_config_read("RMA") reads them in that order), else NULL. */
static const char *ucx_env(const char *name)
{
    char var[64];
    const char *v;

    snprintf(var, sizeof(var), "RMA_UCX_%s", name);
    if ((v = getenv(var)) != NULL)
        return v;
    snprintf(var, sizeof(var), "UCX_%s", name);
    return getenv(var);
}

/* 0 when the transports asked for (RMA_UCX_TLS, else UCX_TLS) leave tcp out: a setting
 * for tcp's interface would then be reported unused by UCX. */
static int tls_may_include_tcp(void)
{
    const char *tls = ucx_env("TLS");

    if (tls == NULL)
        return 1;
    if (tls[0] == '^') /* a list of transports left out */
        return strstr(tls, "tcp") == NULL;
    return strstr(tls, "tcp") != NULL || strstr(tls, "all") != NULL;
}

static ucp_worker_h worker_new(ucs_thread_mode_t mode)
{
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = mode};
    ucp_worker_h w;

    return ucp_worker_create(ux.ctx, &wp, &w) == UCS_OK ? w : NULL;
}

/* w's max_am_header, or 0 when UCX does not tell. */
static size_t worker_am_hdr_max(ucp_worker_h w)
{
    ucp_worker_attr_t a = {.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER};

    return ucp_worker_query(w, &a) == UCS_OK ? a.max_am_header : 0;
}

/* 1 when the context may register memory with a network device (or cannot tell). */
static int context_has_device(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int dev = 1;

    if (f == NULL)
        return 1;
    ucp_context_print_info(ux.ctx, f);
    if (fclose(f) == 0 && text != NULL)
        dev = rma_ucx_context_has_device(text);
    free(text);
    return dev;
}

/* Gives back what ucx_start made, as far as it got: the peers' table, the workers'
 * addresses, the workers (the watch worker under its lock: waits that sleep drive it) and
 * the context. MPI_Finalize's last step, and a start that failed part-way, so that a later
 * window tries again: what failed may pass (descriptors run out for a moment). */
static void ucx_release(void)
{
    free(ux.peers);
    ux.peers = NULL;
    ux.npeers = 0;
    if (ux.taddr != NULL)
        ucp_worker_release_address(ux.tw, ux.taddr);
    if (ux.waddr != NULL)
        ucp_worker_release_address(ux.ww, ux.waddr);
    ux.taddr = ux.waddr = NULL;
    if (ux.ow != NULL)
        ucp_worker_destroy(ux.ow);
    if (ux.tw != NULL)
        ucp_worker_destroy(ux.tw);
    pthread_mutex_lock(&ux.ww_mtx);
    if (ux.ww != NULL)
        ucp_worker_destroy(ux.ww);
    ux.ww = NULL;
    pthread_mutex_unlock(&ux.ww_mtx);
    ux.ow = ux.tw = NULL;
    ux.tw_fd = -1;
    if (ux.ctx != NULL)
        ucp_cleanup(ux.ctx);
    ux.ctx = NULL;
}

static int ucx_start(const char **why)
{
    ucp_params_t params = {.field_mask =
                               UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
                           .features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 |
                                       UCP_FEATURE_AM | UCP_FEATURE_WAKEUP,
                           .mt_workers_shared = 1};
    ucp_config_t *cfg = NULL;
    int level = MPI_THREAD_SINGLE, size = 0, rc = -1;
    ucs_thread_mode_t mode;

    pthread_mutex_lock(&ux.lock);
    if (ux.started) {
        rc = 0;
        goto out;
    }
    *why = "too few file descriptors are left to start it (UCX 1.13 aborts the process when "
           "it runs out of them in ucp_worker_create)";
    if (rma_seg_fds_short())
        goto out;
    *why = "ucp_config_read failed";
    if (ucp_config_read("RMA", NULL, &cfg) != UCS_OK) /* RMA_UCX_* override UCX_* */
        goto out;
    /* Lock words, counters and accumulates are updated by same-node processes with CPU
     * atomics and by off-node ones with network atomics: the two must be atomic with
     * respect to each other, which UCX guarantees only in its "cpu" atomic mode (device
     * atomics of a NIC are atomic only among themselves). */
    const char *am = ucx_env("ATOMIC_MODE"); /* UCX_ATOMIC_MODE may be meant for MPI alone */
    *why = "(RMA_)UCX_ATOMIC_MODE is set to something other than cpu: network atomics would "
           "not be atomic with the CPU atomics of processes on the target's node (set "
           "RMA_UCX_ATOMIC_MODE=cpu to leave the MPI library's setting to it)";
    if (am != NULL && strcmp(am, "cpu") != 0)
        goto out;
    ucp_config_modify(cfg, "ATOMIC_MODE", "cpu");
    /* UCX 1.13's tcp transport crashes receiving its native put now and then (a NULL
     * receive buffer released in uct_tcp_ep_progress_am_rx once a put that had arrived in
     * pieces completes: PSCW over UCX_TLS=tcp died in 2 of 14 runs). Without it UCX sends
     * puts as active messages, which is also faster for the small writes of notifications;
     * large pieces take librma's rendezvous anyway. (RMA_)UCX_TCP_PUT_ENABLE, when set, wins. */
    const char *put = ucx_env("TCP_PUT_ENABLE");
    /* UCX reads a transport's settings under UCX_ alone (not RMA_UCX_): a value of
     * RMA_UCX_TCP_PUT_ENABLE reaches librma's context only this way */
    if (tls_may_include_tcp())
        ucp_config_modify(cfg, "PUT_ENABLE", put != NULL ? put : "n"); /* tcp's key */
    /* UCX's posix transport takes a receive pool of ~4 MiB in /dev/shm for each worker, and
     * librma has three: 4 ranks with off-node peers needed 67 MB there against MPICH's 17,
     * more than a container's default /dev/shm of 64 MiB (every window failed in
     * ucp_worker_create). Its System V transport does the same outside /dev/shm. When
     * (RMA_)UCX_TLS is set, it wins. */
    if (ucx_env("TLS") == NULL)
        ucp_config_modify(cfg, "TLS", "^posix");
    /* a peer that dies is found by UCX's keepalive (shared-memory transports) or its
     * broken connection (tcp) and reported to ep_failed: within seconds, not UCX's default
     * 20 s. (RMA_)UCX_KEEPALIVE_INTERVAL, when set, wins. */
    if (ucx_env("KEEPALIVE_INTERVAL") == NULL)
        ucp_config_modify(cfg, "KEEPALIVE_INTERVAL", "1s");
    /* Memory UCX allocates for librma (RMA_ALLOC_UCX) comes from System V, else from plain
     * anonymous pages, else librma allocates it itself; never from UCX's posix domain, which
     * writes the whole length to test it (UCX 1.13 uct_posix_test_mem: a sparse window of
     * 24 GiB, refused by shmget here, filled the machine) in a /dev/shm file that stays when
     * the process is killed meanwhile. (RMA_)UCX_ALLOC_PRIO, when set, wins. */
    if (ucx_env("ALLOC_PRIO") == NULL)
        ucp_config_modify(cfg, "ALLOC_PRIO", "md:sysv,huge,thp,mmap,heap");
    *why = "ucp_init failed (no usable transport?)";
    if (ucp_init(&params, cfg, &ux.ctx) != UCS_OK)
        goto out;
    ux.has_device = context_has_device();
    PMPI_Query_thread(&level);
    /* not SINGLE ("only the master thread"): the agent and the program's threads drive the
     * target worker in turn, and any waiting thread the watch worker (under tw_mtx,
     * ww_mtx); below MPI_THREAD_MULTIPLE the program's calls come from one thread at a time,
     * not always the same one. On an mlx5 device SINGLE picks the one-thread doorbell. */
    mode = level == MPI_THREAD_MULTIPLE ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SERIALIZED;
    *why = "ucp_worker_create failed";
    ux.ow = worker_new(mode);
    ux.tw = worker_new(mode);
    ux.ww = worker_new(mode);
    if (ux.ow == NULL || ux.tw == NULL || ux.ww == NULL)
        goto out;
    ux.am_hdr_max = worker_am_hdr_max(ux.ow);
    if (worker_am_hdr_max(ux.tw) < ux.am_hdr_max)
        ux.am_hdr_max = worker_am_hdr_max(ux.tw);
    *why = "UCX's active messages take headers smaller than librma's (max_am_header < "
           "RMA_NM_AM_HDR_MAX, 128 bytes)";
    if (ux.am_hdr_max < RMA_NM_AM_HDR_MAX)
        goto out;
    *why = "ucp_worker_get_address failed";
    if (ucp_worker_get_address(ux.tw, &ux.taddr, &ux.taddr_len) != UCS_OK ||
        ucp_worker_get_address(ux.ww, &ux.waddr, &ux.waddr_len) != UCS_OK)
        goto out;
    for (unsigned id = 1; id < RMA_NM_AM_MAX; id++)
        if (set_handler(ux.tw, id) != 0 || set_handler(ux.ow, id) != 0)
            goto out;
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    ux.peers = calloc((size_t)size, sizeof(*ux.peers));
    *why = "out of memory";
    if (ux.peers == NULL)
        goto out;
    ux.npeers = size;
    if (rma_env.agent == RMA_AGENT_BLOCK && ucp_worker_get_efd(ux.tw, &ux.tw_fd) != UCS_OK)
        ux.tw_fd = -1;
    *why = "cannot start the progress agent's thread";
    if (rma_env.agent != RMA_AGENT_OFF &&
        rma_agent_progress_attach(ux.tw_fd, agent_progress, agent_arm) != 0)
        goto out;
    rma_peer_watch_set(ww_progress);
    ux.started = 1;
    rma_net_unserved = rma_env.agent == RMA_AGENT_OFF;
    rc = 0;
out:
    if (rc != 0)
        ucx_release();
    if (cfg != NULL)
        ucp_config_release(cfg);
    pthread_mutex_unlock(&ux.lock);
    return rc;
}

/* ------------------------------------------------------------------ endpoints */

static int ucx_has_ep(int w)
{
    return w >= 0 && w < ux.npeers && __atomic_load_n(&ux.peers[w].ep, __ATOMIC_ACQUIRE) != NULL;
}

/* What ep's lanes promise (lanes.h reads the table ucp_ep_print_info prints).
 *  - dev_amo: one of its atomic lanes is a network device's: its atomics on registered
 *    memory complete without the target's CPU. The shared-memory transports' atomic lanes
 *    reach only memory UCX allocated (ucx_key_ptr tells that apart); without an
 *    atomic lane (tcp) UCX emulates atomics with active messages the target's worker serves.
 *  - dev_rma: the same for puts and gets: large pieces then go by RDMA, not as a rendezvous
 *    through the target's agent (RMA_RNDV), which pays only where UCX emulates RMA on
 *    window memory.
 *  - ordered: every lane is tcp. UCX has no RMA or atomic lane there (librma turns tcp's
 *    put off, ucx_context): it emulates puts, gets and atomics with active messages on the
 *    endpoint's one AM lane, a byte stream whose messages the target's worker applies as
 *    they arrive, in issue order. A device with RDMA lanes (or several transports) gives no
 *    such order between lanes, so there ordering takes a flush. */
static void ep_lanes(ucp_ep_h ep, rma_ucx_lanes_t *out)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    memset(out, 0, sizeof(*out));
    if (f == NULL)
        return;
    ucp_ep_print_info(ep, f);
    fclose(f);
    rma_ucx_lanes_read(text, out);
    free(text);
}

/* UCX found the peer behind a watch endpoint gone (its process died, its connection
 * broke): recorded, and the wait that drove the watch worker ends the job (sync/wait.h).
 * Runs inside the watch worker's progress (ww_progress, under ww_mtx). */
static void ep_failed(void *arg, ucp_ep_h ep, ucs_status_t st)
{
    (void)ep;
    rma_peer_failed((int)(intptr_t)arg, ucs_status_string(st));
}

static void watch_flushed(void *req, ucs_status_t st, void *user)
{
    (void)st, (void)user;
    ucp_request_free(req);
}

/* The watch endpoint to w, from our watch worker to w's (addr): no traffic, but UCX's
 * error handling on (a broken connection, or keepalive), so that w's death reaches
 * ep_failed. It is an endpoint of its own, on a worker of its own, because UCX 1.13 gives
 * an endpoint with peer error handling no shared-memory lanes (every lane would be tcp:
 * slower data path, different ordering), and a worker that has a tcp endpoint polls its
 * sockets in every progress call (put + flush over shared memory 0.16 -> 0.4 us). Its flush
 * starts the connection. Without a transport that can watch (UCX_TLS without tcp) there is
 * none: a dead peer then ends the job only through the process manager. The transports are
 * the same for every peer, so that is found (and said) once per process, not per peer. */
static void watch_create(int w, const ucp_address_t *addr)
{
    static int cannot; /* under ux.lock (ucx_connect) */
    ucp_ep_params_t ep = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                        UCP_EP_PARAM_FIELD_ERR_HANDLER,
                          .address = addr,
                          .err_mode = UCP_ERR_HANDLING_MODE_PEER,
                          .err_handler = {.cb = ep_failed, .arg = (void *)(intptr_t)w}};
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK, .cb.send = watch_flushed};
    int ok;

    ux.peers[w].watch = NULL;
    if (cannot)
        return;
    pthread_mutex_lock(&ux.ww_mtx); /* every use of the watch worker */
    ok = ucp_ep_create(ux.ww, &ep, &ux.peers[w].watch) == UCS_OK;
    if (ok)
        (void)ucp_ep_flush_nbx(ux.peers[w].watch, &p); /* freed by watch_flushed, or done */
    else
        ux.peers[w].watch = NULL;
    pthread_mutex_unlock(&ux.ww_mtx);
    if (!ok && (cannot = 1) && rma_env.verbose)
        fprintf(stderr, "librma: no transport of librma's UCX handles peer failure (tcp does; see "
                        "RMA_UCX_TLS, UCX_TLS): if an off-node peer dies, only the process manager "
                        "ends the job\n");
}

static int ep_create(int w, const ucp_address_t *addr, const ucp_address_t *waddr)
{
    ucp_ep_params_t ep = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS, .address = addr};
    ucp_ep_h made;

    if (ucp_ep_create(ux.ow, &ep, &made) != UCS_OK)
        return -1;
    watch_create(w, waddr);
    /* the lanes are chosen at creation; the endpoint is published after them: another
     * thread's window creation that sees it (ucx_has_ep) copies them */
    ep_lanes(made, &ux.peers[w].lanes);
    __atomic_store_n(&ux.peers[w].ep, made, __ATOMIC_RELEASE);
    return 0;
}

static int ucx_connect(MPI_Comm comm, const int *world, int n, int need, int *unreached)
{
    int mine[2] = {(int)(ux.taddr_len + ux.waddr_len), (int)ux.taddr_len}, total = 0, me;
    int *lens = NULL, *tlens = NULL, *displs = NULL, rc = MPI_SUCCESS;
    char *all = NULL, *blob = NULL;

    *unreached = -1;
    if (!need)
        return MPI_SUCCESS;
    PMPI_Comm_rank(comm, &me);
    /* each rank's target worker address, then its watch worker's */
    lens = malloc(2 * (size_t)n * sizeof(*lens));
    tlens = malloc((size_t)n * sizeof(*tlens));
    displs = malloc((size_t)n * sizeof(*displs));
    blob = malloc((size_t)mine[0]);
    if (lens == NULL || tlens == NULL || displs == NULL || blob == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    memcpy(blob, ux.taddr, ux.taddr_len);
    memcpy(blob + ux.taddr_len, ux.waddr, ux.waddr_len);
    PMPI_Allgather(mine, 2, MPI_INT, lens, 2, MPI_INT, comm);
    for (int i = 0; i < n; i++) {
        tlens[i] = lens[2 * i + 1];
        lens[i] = lens[2 * i];
        displs[i] = total;
        total += lens[i];
    }
    if ((all = malloc((size_t)total + 1)) == NULL) {
        rc = MPI_ERR_NO_MEM;
        goto out;
    }
    PMPI_Allgatherv(blob, mine[0], MPI_BYTE, all, lens, displs, MPI_BYTE, comm);
    pthread_mutex_lock(&ux.lock);
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
        if (i != me && world[i] >= 0 && world[i] < ux.npeers && ux.peers[world[i]].ep == NULL &&
            ep_create(world[i], (const ucp_address_t *)(all + displs[i]),
                      (const ucp_address_t *)(all + displs[i] + tlens[i])) != 0) {
            *unreached = world[i];
            rc = MPI_ERR_OTHER;
        }
    pthread_mutex_unlock(&ux.lock);
out:
    free(all), free(blob), free(displs), free(tlens), free(lens);
    return rc;
}

static int ucx_tgt_init(rma_nm_tgt_t *t, int w)
{
    if (!ucx_has_ep(w))
        return -ENOTCONN;
    t->dev_amo = ux.peers[w].lanes.dev_amo;
    t->dev_rma = ux.peers[w].lanes.dev_rma;
    t->maps = ux.peers[w].lanes.maps;
    t->ordered = ux.peers[w].lanes.ordered && rma_env.ordered;
    /* over tcp alone UCX's puts and gets are active messages too, each acknowledged: larger
     * pieces and more of them in one of librma's requests cost no more and move 3-8 times
     * the bytes (doc/tuning.md) */
    t->am_rma = ux.peers[w].lanes.ordered; /* every lane is tcp */
    t->hx_piece = t->am_rma ? rma_env.hx_piece_am : rma_env.hx_piece;
    t->hx_get_piece = t->am_rma ? rma_env.hx_piece_am : rma_env.hx_get_piece;
    t->hx_msg = t->am_rma ? rma_env.hx_msg_am : rma_env.hx_msg;
    t->aggregate = t->am_rma ? rma_env.aggregate_am : rma_env.aggregate;
    t->ops = &ucx_ops;
    t->noted = t->ep_noted = ~0u; /* no notification yet (rma_nm_quiet) */
    t->ep = ux.peers[w].ep;
    t->world = w;
    return 0;
}

/* ------------------------------------------------------------------ memory and keys */

/* One ucp_mem_map: registers [*base, +len), or with UCP_MEM_MAP_ALLOCATE lets UCX allocate
 * the memory (then *base gets its address); packs the remote key. */
/* Registers whole aligned 8-byte words around [*base, *base + len) (a word never crosses a
 * page): off-node accumulates of 1/2-byte elements are compare-and-swaps of the word holding
 * them, which may reach just outside the window (netmod.h expose). */
static int mem_map(void **base, size_t len, unsigned flags, rma_nm_mem_t *mem)
{
    uintptr_t lo = (uintptr_t)*base & ~(uintptr_t)7,
              hi = ((uintptr_t)*base + len + 7) & ~(uintptr_t)7;
    ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                                             UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                                             UCP_MEM_MAP_PARAM_FIELD_FLAGS,
                               .address = (void *)lo,
                               .length = hi > lo ? hi - lo : 8,
                               .flags = flags};
    ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
    ucp_mem_h memh;
    ucs_status_t st;

    memset(mem, 0, sizeof(*mem));
    st = ucp_mem_map(ux.ctx, &mp, &memh);
    if (st != UCS_OK)
        return status_errno(st);
    if (flags & UCP_MEM_MAP_ALLOCATE) {
        st = ucp_mem_query(memh, &attr);
        *base = attr.address;
    }
    if (st == UCS_OK)
        st = ucp_rkey_pack(ux.ctx, memh, &mem->blob, &mem->blob_len);
    if (st != UCS_OK) {
        ucp_mem_unmap(ux.ctx, memh);
        return status_errno(st);
    }
    mem->handle = memh;
    return 0;
}

static int ucx_expose(void *base, size_t len, rma_nm_mem_t *mem)
{
    return mem_map(&base, len, 0, mem);
}

/* Small allocations freed, for the next allocation of their length: a control segment
 * per window, freed with the window, is the common case. Reuse is safe because a window's
 * memory is no longer accessed once MPI_Win_free's barrier is over. */
#define MEM_POOL         8
#define MEM_POOL_MAX_LEN (256u << 10)
static rma_nm_mem_t mem_pool[MEM_POOL];
static int mem_npool;

static int ucx_expose_alloc(size_t len, void **base, rma_nm_mem_t *mem)
{
    int rc, found = 0;

    pthread_mutex_lock(&ux.lock);
    for (int i = 0; i < mem_npool && !found; i++)
        if (mem_pool[i].len == len) {
            *mem = mem_pool[i];
            mem_pool[i] = mem_pool[--mem_npool];
            found = 1;
        }
    pthread_mutex_unlock(&ux.lock);
    if (found) {
        memset(mem->addr, 0, len);
        *base = mem->addr;
        return 0;
    }
    *base = NULL;
    rc = mem_map(base, len, UCP_MEM_MAP_ALLOCATE, mem);
    if (rc == 0) {
        mem->addr = *base;
        mem->len = len;
    }
    return rc;
}

static int ucx_movable(void)
{
    return ux.started && !ux.has_device;
}

static void ucx_unexpose(rma_nm_mem_t *mem)
{
    if (mem->addr != NULL && mem->len <= MEM_POOL_MAX_LEN) {
        int kept = 0;
        pthread_mutex_lock(&ux.lock);
        if (ux.started && mem_npool < MEM_POOL) {
            mem_pool[mem_npool++] = *mem;
            kept = 1;
        }
        pthread_mutex_unlock(&ux.lock);
        if (kept) {
            memset(mem, 0, sizeof(*mem));
            return;
        }
    }
    if (mem->blob != NULL)
        ucp_rkey_buffer_release(mem->blob);
    if (mem->handle != NULL)
        ucp_mem_unmap(ux.ctx, mem->handle);
    memset(mem, 0, sizeof(*mem));
}

static void *ucx_key_open(rma_nm_tgt_t *t, const void *blob)
{
    ucp_rkey_h key;

    return ucp_ep_rkey_unpack(t->ep, blob, &key) == UCS_OK ? key : NULL;
}

static void ucx_key_close(void *key)
{
    if (key != NULL)
        ucp_rkey_destroy(key);
}

static void *ucx_key_ptr(void *key, uint64_t raddr)
{
    void *p;

    return key != NULL && ucp_rkey_ptr(key, raddr, &p) == UCS_OK ? p : NULL;
}

/* ------------------------------------------------------------------ the ops table */

/* One RDMA per entry, issued: a flush of t completes them. */
static int ucx_xfer(rma_nm_tgt_t *t, void *key, const struct iovec *local,
                    const struct iovec *remote, int n, int write)
{
    ucp_request_param_t p = {.op_attr_mask = 0};
    int rc = rma_nm_gate(t), busy = !write; /* a get completes locally when its data landed */
    uint64_t qlo = UINT64_MAX, qhi = 0;     /* the target bytes of the ones left queued */
    int i;

    if (rc != 0)
        return rc;
    /* UCX writes memory it does not map by CMA (its cma lane) from this thread: not while
     * the owner moves it (windows/expose.c) */
    if (write)
        rma_nm_write_begin(t);
    for (i = 0; i < n && rc == 0; i++) {
        uint64_t raddr = (uint64_t)(uintptr_t)remote[i].iov_base;
        int queued = 0;
        rc = post_req(t,
                      write
                          ? ucp_put_nbx(t->ep, local[i].iov_base, local[i].iov_len, raddr, key, &p)
                          : ucp_get_nbx(t->ep, local[i].iov_base, local[i].iov_len, raddr, key, &p),
                      &queued);
        if (queued) {
            busy = 1;
            qlo = raddr < qlo ? raddr : qlo;
            qhi = raddr + remote[i].iov_len > qhi ? raddr + remote[i].iov_len : qhi;
        }
    }
    if (write)
        rma_nm_write_end(t);
    if (rc == 0 || i > 1) { /* some were issued */
        ep_issued(t);
        if (busy)
            rma_nm_need_local(t);
        /* one origin's order (mpid/rma/hx.h): a later operation to these bytes on another
         * lane, or through a mapping, waits for them; tcp's one lane keeps issue order */
        if (!t->ordered && qlo < qhi)
            rma_nm_ord_note(t, write ? RMA_NM_ORD_QUEUED_PUT : RMA_NM_ORD_QUEUED_GET, qlo, qhi);
    }
    return rc;
}

static int ucx_writev(rma_nm_tgt_t *t, void *key, const struct iovec *local,
                      const struct iovec *remote, int n)
{
    return ucx_xfer(t, key, local, remote, n, 1);
}

static int ucx_readv(rma_nm_tgt_t *t, void *key, const struct iovec *local,
                     const struct iovec *remote, int n)
{
    return ucx_xfer(t, key, local, remote, n, 0);
}

static const ucp_atomic_op_t amo_ops[] = {UCP_ATOMIC_OP_ADD,   UCP_ATOMIC_OP_SWAP,
                                          UCP_ATOMIC_OP_CSWAP, UCP_ATOMIC_OP_AND,
                                          UCP_ATOMIC_OP_OR,    UCP_ATOMIC_OP_XOR};

static int ucx_amo(rma_nm_tgt_t *t, void *key, int op, unsigned size, uintptr_t raddr,
                   uint64_t value, uint64_t compare, uint64_t *fetched)
{
    union {
        uint32_t u32;
        uint64_t u64;
    } v, r;
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE,
                             .datatype = ucp_dt_make_contig(size)};
    int rc = rma_nm_gate(t);

    if (rc != 0)
        return rc;
    /* CSWAP: the buffer holds the value compared, the reply buffer the new one */
    if (op == RMA_NM_AMO_CSWAP) {
        uint64_t x = value;
        value = compare;
        compare = x;
    }
    if (size == 4) {
        v.u32 = (uint32_t)value;
        r.u32 = (uint32_t)compare;
    } else {
        v.u64 = value;
        r.u64 = compare;
    }
    if (fetched == NULL) {
        /* the operand must outlive the call until the flush that completes it: a ring of
         * slots, far more than the atomics any call issues before it flushes */
        static __thread uint64_t ring[1024];
        static __thread unsigned next;
        uint64_t *slot = &ring[next++ % 1024];
        memcpy(slot, &v, sizeof(v));
        rc = post_req(t, ucp_atomic_op_nbx(t->ep, amo_ops[op], slot, 1, raddr, key, &p), NULL);
        if (rc == 0)
            ep_issued(t);
        return rc;
    }
    if (op >= RMA_NM_AMO_AND) /* not fetched (netmod.h) */
        return -EINVAL;
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    p.reply_buffer = &r;
    rc = wait_req(ucp_atomic_op_nbx(t->ep, amo_ops[op], &v, 1, raddr, key, &p));
    *fetched = size == 4 ? r.u32 : r.u64;
    return rc;
}

static int ucx_amo_post(rma_nm_tgt_t *t, void *key, int op, unsigned size, uintptr_t raddr,
                        const void *value, void *reply)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE,
                             .datatype = ucp_dt_make_contig(size)};
    int rc = rma_nm_gate(t);

    if (rc != 0)
        return rc;
    if (reply != NULL) {
        if (op >= RMA_NM_AMO_AND) /* not fetched (netmod.h) */
            return -EINVAL;
        p.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        p.reply_buffer = reply;
    }
    if ((rc = post_req(t, ucp_atomic_op_nbx(t->ep, amo_ops[op], value, 1, raddr, key, &p), NULL)) ==
        0)
        ep_issued(t);
    return rc;
}

static void ucx_flush_release(void *req)
{
    if (req != NULL)
        ucp_request_free(req);
}

/* Sends what aggregation holds back for t (mpid/rma/hx.h), first thing in every flush. */
static int drain_held(rma_nm_tgt_t *t)
{
    return t->agg != NULL && ux.drain != NULL ? ux.drain(t) : 0;
}

/* Begins a flush of t's endpoint: *req to test, or NULL when it is complete already. */
static int ep_flush_start(rma_nm_tgt_t *t, void **req)
{
    ucp_request_param_t p = {.op_attr_mask = 0};
    ucs_status_ptr_t r;

    *req = NULL;
    atomic_store_explicit(&t->ep_queued, 0, memory_order_relaxed); /* the flush covers it */
    r = ucp_ep_flush_nbx(t->ep, &p);
    if (UCS_PTR_IS_ERR(r))
        return status_errno(UCS_PTR_STATUS(r));
    if (r == NULL)
        atomic_store_explicit(&ux.peers[t->world].connected, 1, memory_order_relaxed);
    *req = r;
    return 0;
}

/* 1 + moved (the worker moved something) while the endpoint's flush in *req runs, then 0
 * or -errno (*req released). */
static int ep_flush_test(rma_nm_tgt_t *t, void **req, int moved)
{
    ucs_status_t st;

    if (*req == NULL)
        return 0;
    if ((st = ucp_request_check_status(*req)) == UCS_INPROGRESS)
        return 1 + moved;
    ucp_request_free(*req);
    *req = NULL;
    if (st != UCS_OK)
        return status_errno(st);
    atomic_store_explicit(&ux.peers[t->world].connected, 1, memory_order_relaxed);
    return 0;
}

static int ucx_flush_start(rma_nm_tgt_t *t, void **req)
{
    int rc = drain_held(t);

    *req = NULL;
    return rc != 0 ? rc : ep_flush_start(t, req);
}

static int ucx_flush_test(rma_nm_tgt_t *t, void **req)
{
    int moved = ucx_progress(), rc = ep_flush_test(t, req, moved);

    if (rc != 0)
        return rc;
    if (atomic_load_explicit(&t->hx_out, memory_order_acquire) > 0)
        return 1 + moved;
    /* a request the target's agent refused (a get's answer never came with data) */
    return atomic_exchange_explicit(&t->hx_err, 0, memory_order_relaxed);
}

/* The endpoint's flush alone: no request to t's agent is sent or waited for. */
static int ucx_complete(rma_nm_tgt_t *t)
{
    rma_backoff_t bo = RMA_BACKOFF_INIT;
    unsigned ep = atomic_load_explicit(&t->ep_ops, memory_order_acquire);
    void *req = NULL;
    int rc;

    if (ep == atomic_load_explicit(&t->ep_flushed, memory_order_acquire))
        return 0;
    if ((rc = ep_flush_start(t, &req)) != 0)
        return rc;
    while ((rc = ep_flush_test(t, &req, ucx_progress())) > 0)
        rma_backoff_after(&bo, rc != 1); /* 1: nothing moved */
    if (rc == 0)
        rma_nm_covered(&t->ep_flushed, ep);
    return rc;
}

static int ucx_xfer_sync(rma_nm_tgt_t *t, void *key, const struct iovec *local,
                         const struct iovec *remote, int n, int write)
{
    int rc = ucx_xfer(t, key, local, remote, n, write);

    return rc != 0 ? rc : ucx_complete(t);
}

static int ucx_flush(rma_nm_tgt_t *t)
{
    rma_backoff_t bo = RMA_BACKOFF_INIT;
    /* what this flush covers: the operations issued before it starts */
    unsigned seen = atomic_load_explicit(&t->issued, memory_order_acquire);
    unsigned ep = atomic_load_explicit(&t->ep_ops, memory_order_acquire);
    void *req = NULL;
    int rc;

    if (seen == atomic_load_explicit(&t->flushed, memory_order_acquire)) {
        atomic_store_explicit(&t->primed, 0, memory_order_relaxed); /* hx.h, aggregation */
        rma_nm_ord_done(t, seen);
        return 0;
    }
    if (ep == atomic_load_explicit(&t->ep_flushed, memory_order_acquire)) {
        /* host-assisted requests alone: their answers complete them, an endpoint flush
         * would cost a round trip more over tcp */
        rc = drain_held(t);
    } else if ((rc = ucx_flush_start(t, &req)) == 0) {
        while ((rc = ucx_flush_test(t, &req)) > 0)
            rma_backoff_after(&bo, rc != 1); /* 1: nothing moved */
        if (rc == 0)
            rma_nm_covered(&t->ep_flushed, ep);
    }
    ucx_wait_zero(&t->hx_out); /* after a failure too: the handlers count them down */
    if (rc == 0)
        rc = atomic_exchange_explicit(&t->hx_err, 0, memory_order_relaxed);
    if (rc == 0) {
        rma_nm_flushed(t, seen);
        rma_nm_ord_done(t, seen);
    }
    return rc;
}

/* An operation that UCX handed to its transport when it was issued leaves without this
 * process (over tcp the kernel has it; a device posted it); one that waited in UCX's queue
 * needs the flush. Over tcp that saves the round trip of an endpoint flush. Until the
 * endpoint's first flush completed, its connection may still be being set up: UCX then
 * takes an operation without a request, and sends it only when this process drives the
 * worker again (MPICH's test3: a post, then MPI_Recv, waited forever). */
static int ucx_push(rma_nm_tgt_t *t)
{
    int rc = drain_held(t);

    if (rc == 0 && (atomic_load_explicit(&t->ep_queued, memory_order_relaxed) ||
                    !atomic_load_explicit(&ux.peers[t->world].connected, memory_order_relaxed)))
        rc = ucx_flush(t);
    return rc;
}

static int ucx_order(rma_nm_tgt_t *t)
{
    /* sends what agg holds back (and lets the next small put go by RDMA, as after a flush) */
    int rc = drain_held(t);

    if (rc == 0 &&
        (!t->ordered || atomic_load_explicit(&t->hx_unordered, memory_order_acquire) > 0))
        rc = ucx_flush(t);
    return rc;
}

static int ucx_settle(rma_nm_tgt_t *t)
{
    ucx_wait_zero(&t->hx_out);
    return atomic_exchange_explicit(&t->hx_err, 0, memory_order_relaxed);
}

static const rma_netmod_ops_t ucx_ops = {
    .name = "ucx",
    .writev = ucx_writev,
    .readv = ucx_readv,
    .xfer_sync = ucx_xfer_sync,
    .complete = ucx_complete,
    .amo = ucx_amo,
    .amo_post = ucx_amo_post,
    .flush = ucx_flush,
    .push = ucx_push,
    .release = drain_held,
    .order = ucx_order,
    .settle = ucx_settle,
    .flush_start = ucx_flush_start,
    .flush_test = ucx_flush_test,
    .flush_release = ucx_flush_release,
    .am_send = ucx_am_send,
    .key_open = ucx_key_open,
    .key_close = ucx_key_close,
    .key_ptr = ucx_key_ptr,
};

/* ------------------------------------------------------------------ information, teardown */

static void ucx_print(FILE *out)
{
    if (!ux.started) {
        fprintf(out, "ucx: not started (no window had an off-node peer)\n");
        return;
    }
    ucp_context_print_info(ux.ctx, out);
    ucp_worker_print_info(ux.ow, out);
    fprintf(out,
            "ucx: active-message headers up to %zu bytes (max_am_header; librma's largest: %d)\n",
            ux.am_hdr_max, RMA_NM_AM_HDR_MAX);
    for (int w = 0; w < ux.npeers; w++)
        if (ux.peers[w].ep != NULL) {
            fprintf(out, "ucx: endpoint to world rank %d:\n", w);
            ucp_ep_print_info(ux.peers[w].ep, out);
            return;
        }
    /* no peer yet: an endpoint to this process's own target worker shows what a peer
     * on this machine would get */
    ucp_ep_params_t ep = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS, .address = ux.taddr};
    ucp_ep_h self;
    if (ucp_ep_create(ux.ow, &ep, &self) == UCS_OK) {
        ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags = UCP_EP_CLOSE_FLAG_FORCE};
        fprintf(out, "ucx: endpoint to a process on this machine:\n");
        ucp_ep_print_info(self, out);
        wait_req(ucp_ep_close_nbx(self, &p));
    }
}

/* The watch worker's flush (close: 0) or force close (1) of ep, under ww_mtx. */
static ucs_status_ptr_t ww_ep_op(ucp_ep_h ep, int close)
{
    ucp_request_param_t p = {.op_attr_mask = close ? UCP_OP_ATTR_FIELD_FLAGS : 0,
                             .flags = close ? UCP_EP_CLOSE_FLAG_FORCE : 0};
    ucs_status_ptr_t r;

    pthread_mutex_lock(&ux.ww_mtx);
    r = close ? ucp_ep_close_nbx(ep, &p) : ucp_ep_flush_nbx(ep, &p);
    pthread_mutex_unlock(&ux.ww_mtx);
    return r;
}

/* Connections over tcp are set up by a request and a reply that UCX sends on its own. If
 * an endpoint is closed before the peer's reply went out, the peer's worker still holds
 * that reply when it is destroyed, and Debian's UCX 1.13 aborts on it ("got REP message",
 * a debug assertion removed upstream in openucx/ucx#8175). A flush of every endpoint
 * completes only once its connection is, so the replies are all sent before anyone
 * closes; every peer's target and watch workers are served meanwhile (agent, or its own
 * waits). A connection that UCX could not set up (a process out of descriptors when it
 * tried: test/mpi/many_fds) never completes: after WIREUP_WAIT_NS it is closed as it is,
 * so that MPI_Finalize does not wait for ever. Each endpoint still has WIREUP_GRACE_NS
 * after that, so that one that never completes does not cut the others' short. */
#define WIREUP_WAIT_NS  (3 * 1000000000ull)
#define WIREUP_GRACE_NS (200 * 1000000ull)

/* finish_wireup's wait for request r of endpoint k (2w: peer w's, 2w + 1: its watch). */
static void wireup_wait(ucs_status_ptr_t r, int k, uint64_t deadline)
{
    uint64_t grace = rma_now_ns() + WIREUP_GRACE_NS;

    if (wait_req_until(r, k % 2 ? &ux.ww_mtx : NULL, deadline > grace ? deadline : grace) ==
            -ETIMEDOUT &&
        rma_env.verbose)
        fprintf(stderr,
                "librma: MPI_Finalize: the connection to rank %d (MPI_COMM_WORLD) was not set "
                "up in time (%.1f s for all, at least %.1f s each); closed as it is\n",
                k / 2, WIREUP_WAIT_NS / 1e9, WIREUP_GRACE_NS / 1e9);
}

/* ... of the endpoints to the peers w with which[w] set (NULL: every peer) */
static void finish_wireup(const unsigned char *which)
{
    ucp_request_param_t p = {.op_attr_mask = 0};
    ucs_status_ptr_t *reqs = calloc(2 * (size_t)ux.npeers, sizeof(*reqs));
    uint64_t deadline = rma_now_ns() + WIREUP_WAIT_NS;

    /* k = 2w: w's endpoint; 2w + 1: its watch endpoint (the watch worker, under ww_mtx) */
    for (int k = 0; k < 2 * ux.npeers; k++) {
        ucp_ep_h ep = k % 2 ? ux.peers[k / 2].watch : ux.peers[k / 2].ep;
        ucs_status_ptr_t r;
        if (ep == NULL || (which != NULL && !which[k / 2]))
            continue;
        r = k % 2 ? ww_ep_op(ep, 0) : ucp_ep_flush_nbx(ep, &p);
        if (reqs != NULL)
            reqs[k] = r;
        else
            wireup_wait(r, k, deadline);
    }
    for (int k = 0; reqs != NULL && k < 2 * ux.npeers; k++)
        wireup_wait(reqs[k], k, deadline);
    free(reqs);
}

/* Which of the *size world ranks do not keep their transport at MPI_Finalize (netmod.h
 * finalize), when some do: leaves[w] set for each; NULL when every rank leaves, the usual
 * case. *any: some rank started the transport. Collective over MPI_COMM_WORLD; serves
 * peers meanwhile. */
static unsigned char *finalize_leavers(int keep, int *any, int *size)
{
    MPI_Request req;
    int mine[2] = {ux.started != 0, keep != 0}, max[2] = {0, 0};
    unsigned char k = (unsigned char)(keep != 0), *leaves;

    /* a peer that died before it got here must not leave us waiting for it */
    serve_until(PMPI_Iallreduce(mine, max, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &req), &req);
    *any = max[0];
    if (!max[1])
        return NULL;
    PMPI_Comm_size(MPI_COMM_WORLD, size);
    if ((leaves = malloc((size_t)*size)) == NULL) { /* every rank waits for this one's part */
        fprintf(stderr, "librma: MPI_Finalize: no memory for the %d ranks' part; ending the job\n",
                *size);
        PMPI_Abort(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
    }
    serve_until(PMPI_Iallgather(&k, 1, MPI_BYTE, leaves, 1, MPI_BYTE, MPI_COMM_WORLD, &req), &req);
    for (int w = 0; w < *size; w++)
        leaves[w] = !leaves[w];
    return leaves;
}

static void ucx_finalize(void (*all_here)(void), int keep)
{
    MPI_Request req;
    int any = 0, size = 0;
    unsigned char *leaves = finalize_leavers(keep, &any, &size);
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags = UCP_EP_CLOSE_FLAG_FORCE};

    /* every operation was completed when its window was freed; once every rank is here,
     * connections still being set up are finished, then endpoints close at once (a
     * flushing close would wait on peers that may be tearing down already); the barrier
     * keeps every target worker alive until all have closed theirs. A rank that keeps
     * closes only its endpoints to those that leave. Every rank is here: an endpoint that
     * fails now was closed. */
    rma_peer_fail_ignore(keep ? leaves : NULL, size);
    if (!keep)
        all_here();
    if (!any) {
        free(leaves);
        return;
    }
    if (ux.started) {
        finish_wireup(keep ? leaves : NULL);
        for (int w = 0; w < ux.npeers; w++) {
            if (keep && !leaves[w])
                continue;
            if (ux.peers[w].ep != NULL)
                wait_req(ucp_ep_close_nbx(ux.peers[w].ep, &p));
            if (ux.peers[w].watch != NULL)
                wait_req_in(ww_ep_op(ux.peers[w].watch, 1), &ux.ww_mtx);
            ux.peers[w].ep = ux.peers[w].watch = NULL;
        }
    }
    free(leaves);
    /* the same barrier on every rank (a blocking barrier does not match a nonblocking one);
     * ours serves the others while they close (RMA_AGENT=off: nobody else drives it) */
    serve_until(PMPI_Ibarrier(MPI_COMM_WORLD, &req), &req);
    if (!ux.started || keep)
        return;
    rma_net_unserved = 0;
    rma_agent_progress_detach();
    while (mem_npool > 0) {
        rma_nm_mem_t m = mem_pool[--mem_npool];
        m.addr = NULL; /* really freed */
        ucx_unexpose(&m);
    }
    rma_peer_watch_set(NULL);
    ucx_release();
    ux.started = 0;
}

const rma_netmod_t rma_nm_ucx = {
    .name = "ucx",
    .start = ucx_start,
    .started = ucx_started,
    .connect = ucx_connect,
    .has_ep = ucx_has_ep,
    .tgt_init = ucx_tgt_init,
    .expose = ucx_expose,
    .expose_alloc = ucx_expose_alloc,
    .movable = ucx_movable,
    .unexpose = ucx_unexpose,
    .am_handler = ucx_am_handler,
    .am_reply = ucx_am_reply,
    .am_recv = ucx_am_recv,
    .progress = ucx_progress,
    .wait_zero = ucx_wait_zero,
    .quiesce = ucx_quiesce,
    .wait_all = ucx_wait_all,
    .set_idle = ucx_set_idle,
    .set_drain = ucx_set_drain,
    .print = ucx_print,
    .finalize = ucx_finalize,
};
