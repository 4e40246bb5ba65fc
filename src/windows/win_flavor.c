/*
 * win_flavor.c - creating and freeing windows of every flavor.
 *
 * Every window gets a control segment (rma_ctl_t) made by rank 0 of the window and mapped by
 * all ranks. MPI_Win_allocate(_shared) windows keep their data in the same segment, so every
 * rank maps every other rank's memory with one mmap. MPI_Win_create memory is made
 * mappable in place by memreg (or reached through CMA when it cannot be); dynamic windows
 * publish attached regions in the control segment (win_dynamic.c).
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdio.h>

#include "mpid/rma/env.h"
#include "mpid/rma/hx.h"
#include "netmod/netmod.h"
#include "sync/ctl.h"
#include "sync/sync.h"
#include "windows/memreg.h"
#include "windows/segment.h"
#include "windows/win.h"
#include "windows/win_error.h"

/* What each rank tells the others when a window is created (one allgather). */
typedef struct rank_info {
    int32_t need_ep; /* this rank lacks an endpoint to a peer of the window that it reaches
                        through UCX (off node; same node too, win_shm_msg_targets) */
    int32_t net_err; /* this rank could not start the network transport: the error code
                        raised there (to be returned by that rank), else 0 */
    int32_t handle;  /* its handle of the window ... */
    uint32_t serial; /* ... and serial number */
    uint64_t base;   /* window base in the owner's address space */
    uint64_t size;
    int32_t disp_unit;
    int32_t pid;
    int32_t net_mem;    /* create flavor: the memory is an MPI_Alloc_mem block from the
                           transport (a rank alone on its node): every peer takes atomics */
    int32_t node_msg;   /* one node: this rank runs UCX for its same-node peers' requests */
    rma_seg_desc_t seg; /* create flavor: segment holding the window, fd -1 if none */
    uint64_t seg_base;  /* owner's address of that segment */
    uint64_t align;     /* allocate flavors: where its memory must start (rma_info_alignment) */
    rma_seg_desc_t ctl; /* node leaders, create/dynamic flavors: the control segment */
} rank_info_t;

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* Layout of the control segment for n ranks, at most rows of them on one node; returns its
 * size in bytes. The same on every node (peers elsewhere address its words by offsets
 * computed from their own). */
static size_t ctl_layout(rma_ctl_t *hdr, int n, int rows)
{
    size_t off = round_up(sizeof(rma_ctl_t), RMA_CACHE_LINE);

    memset(hdr, 0, sizeof(*hdr));
    hdr->magic = RMA_CTL_MAGIC;
    hdr->version = RMA_CTL_VERSION;
    hdr->nranks = (uint32_t)n;
    hdr->ranks_off = off;
    off += (size_t)n * sizeof(rma_ctl_rank_t);
    hdr->post_off = off;
    hdr->post_rows = (uint32_t)rows;
    off = round_up(off + (size_t)rows * n * sizeof(uint64_t), RMA_CACHE_LINE);
    hdr->acc_off = off;
    off += (size_t)RMA_ACC_NLOCKS * RMA_CACHE_LINE;
    return round_up(off, rma_page_size());
}

/* Common start of every flavor: rank, group, target arrays, info, where each rank is (no
 * collective call unless MPI_Init was not seen); starts the network when a peer is
 * off-node. */
static int win_begin(rma_win_t *win, MPI_Comm comm, MPI_Info info, int flavor, const char *func)
{
    int *node, inter = 0, inited = 0, level = MPI_THREAD_MULTIPLE;

    rma_env_init();
    win->flavor = flavor;
    win->leader = 0;
    if (comm == MPI_COMM_NULL)
        return rma_err(NULL, func, MPI_ERR_COMM, "the communicator is MPI_COMM_NULL");
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
        return rma_err(NULL, func, MPI_ERR_COMM, "invalid communicator (0x%x)", (unsigned)comm);
    if (inter) /* the same answer on every rank: nobody waits in a collective */
        return rma_err(NULL, func, MPI_ERR_COMM,
                       "an intercommunicator cannot hold a window (MPI: intracommunicators only)");
    PMPI_Comm_rank(comm, &win->rank);
    PMPI_Comm_size(comm, &win->nranks);
    PMPI_Comm_group(comm, &win->group);
    win->mt = 1; /* a program of sessions alone: its level is not known here */
    if (PMPI_Initialized(&inited) == MPI_SUCCESS && inited &&
        PMPI_Query_thread(&level) == MPI_SUCCESS)
        win->mt = level == MPI_THREAD_MULTIPLE;
    rma_win_info_parse(win, info);
    win->targets = calloc((size_t)win->nranks, sizeof(*win->targets));
    win->post_seen = calloc((size_t)win->nranks, sizeof(*win->post_seen));
    win->start_ranks = calloc((size_t)win->nranks, sizeof(*win->start_ranks));
    win->world = calloc((size_t)win->nranks, sizeof(*win->world));
    win->reps = calloc((size_t)win->nranks, sizeof(*win->reps));
    /* node[t]: t's node; node[n + u]: ranks of the node whose first rank is u, so far */
    node = calloc(2 * (size_t)win->nranks, sizeof(*node));
    if (win->targets == NULL || win->post_seen == NULL || win->start_ranks == NULL ||
        win->world == NULL || win->reps == NULL || node == NULL) {
        free(node);
        return rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory for %d targets", win->nranks);
    }
    if (rma_locality(comm, win->group, win->nranks, flavor == MPI_WIN_FLAVOR_SHARED, win->world,
                     node) != 0) {
        free(node);
        return rma_err(NULL, func, MPI_ERR_OTHER,
                       "a rank of the communicator is not in MPI_COMM_WORLD (spawned or "
                       "connected processes are not supported)");
    }
    win->leader = -1;
    for (int t = 0; t < win->nranks; t++) {
        rma_target_t *tg = &win->targets[t];
        int u = 0;
        tg->local = node[t] == node[win->rank];
        tg->nm.world = win->world[t];
        tg->nm.owner = win;
        if (tg->local && win->leader < 0)
            win->leader = t;
        win->net |= !tg->local;
        while (node[u] != node[t])
            u++;
        tg->lidx = node[win->nranks + u]++;
        if (tg->lidx >= win->post_rows)
            win->post_rows = tg->lidx + 1;
        if (tg->local)
            continue;
        if (u == t)
            win->reps[win->nreps++] = t; /* the first rank of another node */
        tg->node = u == t ? win->nreps - 1 : win->targets[u].node;
    }
    free(node);
    return MPI_SUCCESS;
}

/* me->need_ep: this rank lacks an endpoint to a peer it will reach through UCX: an off-node
 * one, or with same, any other (win_shm_msg_targets). */
static void win_need_ep(const rma_win_t *win, rank_info_t *me, int same)
{
    for (int t = 0; t < win->nranks; t++)
        if ((!win->targets[t].local || (same && t != win->rank)) && !rma_net->has_ep(win->world[t]))
            me->need_ep = 1;
}

/* Starts the network when the window has off-node peers; records in me what the others
 * must know (before the exchange, so that every rank learns of a failure). */
static void win_net_begin(rma_win_t *win, rank_info_t *me, const char *func)
{
    const char *why = NULL;

    if (!win->net)
        return;
    if (rma_net == NULL)
        why = "this librma was built without UCX (install libucx-dev and rebuild)";
    if (why != NULL || rma_net->start(&why) != 0) {
        int fds = rma_net != NULL && rma_seg_fds_short(); /* UCX's own reason is vague */
        me->net_err = rma_err(NULL, func, fds ? MPI_ERR_NO_MEM : MPI_ERR_OTHER,
                              "the window has ranks on other nodes, which librma reaches "
                              "through UCX, but %s%s",
                              why, fds ? rma_err_fd_hint(EMFILE) : "");
        return;
    }
    rma_win_dyn_net_init();
    rma_expose_net_init();
    rma_hx_net_init();
    /* create and dynamic windows: same-node peers too */
    win_need_ep(win, me, win->flavor != MPI_WIN_FLAVOR_ALLOCATE);
}

/* A window of one node (create and dynamic flavors) whose memory nobody can move here
 * (no userfaultfd, an RDMA device, RMA_CREATE_REMAP=0): a peer's malloc'd memory stays
 * reached by cross-memory attach, an iovec per piece. Each rank then starts UCX, if it can,
 * so that puts of many small pieces go to the target's agent in UCX's messages as in a
 * window with off-node ranks (win_shm_msg_targets). Nothing fails the window: a rank that
 * cannot start UCX says so in the exchange and every rank keeps cross-memory attach. */
static void win_node_msg_begin(rma_win_t *win, rank_info_t *me)
{
    static _Atomic int failed; /* once: this use of UCX is optional */
    const char *why = NULL;

    if (win->net || win->nranks < 2 || rma_net == NULL || !rma_env.node_ucx ||
        rma_env.hx_node == 0 || atomic_load(&failed) || rma_memreg_can_move(NULL))
        return;
    if (rma_net->start(&why) != 0) {
        atomic_store(&failed, 1);
        if (rma_env.verbose >= 1)
            fprintf(stderr,
                    "librma: process %d keeps cross-memory attach for its same-node peers: %s\n",
                    (int)getpid(), why);
        return;
    }
    rma_hx_net_init();
    /* set before the exchange: a peer may send its first request as soon as it returns */
    me->node_msg = win->node_msg = 1;
    win_need_ep(win, me, 1);
}

/* ... once every rank said whether it runs UCX: when all do, connects them (collective),
 * else nobody sends such requests in this window. A rank that fails to connect to a peer
 * reaches it by cross-memory attach alone. */
static void win_node_msg_setup(rma_win_t *win, MPI_Comm comm, const rank_info_t *all)
{
    int need = 0, unreached;

    for (int t = 0; t < win->nranks && win->node_msg; t++) {
        win->node_msg = all[t].node_msg;
        need |= all[t].need_ep;
    }
    if (win->node_msg)
        (void)rma_net->connect(comm, win->world, win->nranks, need, &unreached);
}

/* Gathers every rank's rank_info over comm into *all_p; fails on every rank when one of
 * them could not start the network. */
static int win_exchange(rma_win_t *win, MPI_Comm comm, rank_info_t *me, rank_info_t **all_p,
                        const char *func)
{
    rank_info_t *all = malloc((size_t)win->nranks * sizeof(*all));
    int bad = -1;

    if (all == NULL)
        return rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory");
    me->pid = getpid();
    me->handle = (int32_t)win->handle;
    me->serial = win->serial;
    PMPI_Allgather(me, sizeof(*me), MPI_BYTE, all, sizeof(*me), MPI_BYTE, comm);
    for (int t = 0; t < win->nranks; t++) {
        win->targets[t].peer_win = (MPI_Win)all[t].handle;
        win->targets[t].peer_serial = all[t].serial;
        win->targets[t].pid = all[t].pid;
        win->targets[t].nm.pid = all[t].pid;
        if (all[t].net_err && bad < 0)
            bad = t;
    }
    if (bad >= 0) {
        free(all);
        return me->net_err
                   ? me->net_err
                   : rma_err(NULL, func, MPI_ERR_OTHER,
                             "rank %d could not start UCX for the ranks on other nodes", bad);
    }
    /* a same-node peer whose process ends while the window lives is reported by the waits
     * (sync/peer_fail.c): no transport watches it */
    for (int t = 0; t < win->nranks; t++)
        if (win->targets[t].local && t != win->rank)
            rma_peer_watch_pid(all[t].pid, win->world[t]);
    win->pids_watched = 1;
    *all_p = all;
    return MPI_SUCCESS;
}

/* Window creation is collective, but some of its steps can fail on one rank alone (out of
 * descriptors, say, when it maps the leader's segment): that rank must not leave the others
 * waiting in the next collective step, nor with a window it lacks. Every rank passes its
 * result; when any failed, all fail, those that did not with the failure's class and a
 * message naming the rank (the highest class, and its lowest rank: MPI_MAXLOC). */
static int win_agree(rma_win_t *win, MPI_Comm comm, int rc, const char *func)
{
    int in[2] = {MPI_SUCCESS, win->rank}, out[2];

    if (rc != MPI_SUCCESS && (PMPI_Error_class(rc, &in[0]) != MPI_SUCCESS || in[0] == 0))
        in[0] = MPI_ERR_OTHER;
    PMPI_Allreduce(in, out, 1, MPI_2INT, MPI_MAXLOC, comm);
    if (rc != MPI_SUCCESS || out[0] == MPI_SUCCESS)
        return rc;
    return rma_err(NULL, func, out[0], "rank %d could not set up its part of the window", out[1]);
}

/* ------------------------------------------------------------------ control segment pool
 *
 * Making a segment (memfd_create, ftruncate, mmap, first-touch faults) and mapping a peer's
 * (pidfd_getfd, mmap), then unmapping both at MPI_Win_free, cost several times what MPICH's
 * whole MPI_Win_create costs. Control segments without window data (create and dynamic
 * windows) are therefore kept when their window is freed: rank 0 keeps its own (and its
 * descriptor, so the number stays valid), every other rank keeps its mapping, keyed by the
 * owner's pid and segment id. The next window of the same size on rank 0 clears and reuses
 * one; its peers find their mapping. Nobody touches a control segment after the barrier of
 * MPI_Win_free, and rank 0 clears it before the next creation's exchange. */

#define CTL_POOL 8

typedef struct ctl_ent {
    void *addr;
    size_t len;
    int pid, fd; /* fd: rank 0's own segments only, -1 for peers' */
    uint64_t seg_id;
    uint32_t peers; /* rank 0's own: the ranks that must have left it (rma_ctl_t.left) */
} ctl_ent_t;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static ctl_ent_t pool[CTL_POOL];
static int npool;

/* Takes an entry matching (pid, seg_id), or for pid 0 any own segment of len; 1 if found. */
static int pool_take(int pid, uint64_t seg_id, size_t len, ctl_ent_t *out)
{
    int found = 0;

    pthread_mutex_lock(&pool_lock);
    for (int i = 0; i < npool && !found; i++) {
        if (pid ? pool[i].pid == pid && pool[i].seg_id == seg_id
                : pool[i].fd >= 0 && pool[i].len == len &&
                      atomic_load_explicit(&((rma_ctl_t *)pool[i].addr)->left,
                                           memory_order_acquire) == pool[i].peers) {
            *out = pool[i];
            pool[i] = pool[--npool];
            found = 1;
        }
    }
    pthread_mutex_unlock(&pool_lock);
    return found;
}

/* Keeps a segment for a later window; the oldest entry goes when the pool is full. */
static void pool_put(const ctl_ent_t *e)
{
    ctl_ent_t old = {NULL, 0, 0, -1, 0, 0};

    pthread_mutex_lock(&pool_lock);
    if (npool == CTL_POOL) {
        old = pool[0];
        memmove(&pool[0], &pool[1], (CTL_POOL - 1) * sizeof(pool[0]));
        npool--;
    }
    pool[npool++] = *e;
    pthread_mutex_unlock(&pool_lock);
    if (old.addr != NULL)
        rma_seg_detach(old.addr, old.len);
    if (old.fd >= 0)
        close(old.fd);
}

/* A rank alone on its node in the window lets UCX allocate its segment (control words and,
 * for MPI_Win_allocate, its window memory): nobody maps it with load/store, and UCX's
 * allocation is memory its transports reach without this process's CPU (System V shared
 * memory between processes of one machine, registered pages on a NIC), so off-node peers'
 * puts, gets, atomics, lock words and notifications need no agent. */
static int win_seg_from_ucx(rma_win_t *win, size_t len, void **addr)
{
    rma_nm_mem_t *m;

    if (!win->net || !rma_env.ucx_alloc || !rma_net_started())
        return 0;
    for (int t = 0; t < win->nranks; t++)
        if (t != win->rank && win->targets[t].local)
            return 0;
    if ((m = calloc(1, sizeof(*m))) == NULL || rma_net->expose_alloc(len, addr, m) != 0) {
        free(m);
        return 0; /* librma's own segment will do */
    }
    win->net_ctl = m; /* registered already: win_net_setup packs nothing more */
    win->seg_ucx = 1;
    return 1;
}

/* Where win's control segment of len bytes goes so that the window data after its control
 * words starts at a multiple of align: anywhere (NULL) up to a page, else a reserved place. */
static int win_seg_place(const rma_win_t *win, size_t len, size_t align, void **at)
{
    rma_ctl_t hdr;

    *at = NULL;
    if (align <= rma_page_size())
        return 0;
    *at = rma_seg_place(len, align, ctl_layout(&hdr, win->nranks, win->post_rows));
    return *at == NULL ? -errno : 0;
}

/* A node's leader: creates the control segment with `data_len` bytes of window data
 * after it, starting at a multiple of align. */
static int win_ctl_create(rma_win_t *win, size_t data_len, size_t align, rma_seg_desc_t *desc,
                          const char *func)
{
    rma_ctl_t hdr;
    size_t ctl_len = ctl_layout(&hdr, win->nranks, win->post_rows),
           len = round_up(ctl_len + data_len, rma_page_size());
    ctl_ent_t e = {NULL, len, 0, -1, 0, 0};
    void *at = NULL;
    int rc;

    if (align <= rma_page_size() && win_seg_from_ucx(win, len, &e.addr)) { /* nobody maps it */
        memset(e.addr, 0, ctl_len); /* the data is fresh pages (UCX's heap fallback aside) */
    } else if (data_len == 0 && pool_take(0, 0, len, &e)) {
        memset(e.addr, 0, len);
    } else {
        if ((rc = win_seg_place(win, len, align, &at)) == 0 &&
            (rc = rma_seg_create(len, at, &e.addr, &e.fd)) != 0 && at != NULL)
            rma_seg_detach(at, len);
        if (rc != 0)
            return rma_err(NULL, func, MPI_ERR_NO_MEM,
                           "cannot create a %zu-byte shared segment: %s%s", len, strerror(-rc),
                           rma_err_fd_hint(-rc));
        e.seg_id = rma_seg_new_id();
    }
    memcpy(e.addr, &hdr, sizeof(hdr));
    win->seg = e.addr;
    win->seg_len = len;
    win->seg_fd = e.fd; /* open until MPI_Win_free: peers may map it until they return */
    win->seg_id = e.seg_id;
    win->ctl = e.addr;
    desc->pid = getpid();
    desc->fd = e.fd;
    desc->len = len;
    desc->seg_id = e.seg_id;
    return MPI_SUCCESS;
}

/* The other ranks of the node: map the leader's control segment, the window data after it
 * at a multiple of align as in win_ctl_create. */
static int win_ctl_attach(rma_win_t *win, const rma_seg_desc_t *desc, size_t align,
                          const char *func)
{
    void *at = NULL;
    ctl_ent_t e;
    int rc;

    if (desc->len == 0)
        return rma_err(NULL, func, MPI_ERR_NO_MEM,
                       "rank %d could not create the window's shared segment", win->leader);
    win->seg_id = desc->seg_id;
    win->seg_pid = desc->pid;
    if (desc->seg_id != 0 && pool_take(desc->pid, desc->seg_id, desc->len, &e) &&
        e.len == desc->len) {
        win->seg = e.addr;
        win->seg_len = e.len;
        win->ctl = win->seg;
        return MPI_SUCCESS;
    }
    rc = win_seg_place(win, desc->len, align, &at);
    win->seg = rc == 0 ? rma_seg_attach_at(desc, at) : NULL;
    if (rc != 0)
        errno = -rc;
    else if (win->seg == NULL && at != NULL) {
        rc = errno;
        rma_seg_detach(at, desc->len);
        errno = rc;
    }
    if (win->seg == NULL && (errno == EMFILE || errno == ENOMEM))
        return rma_err(NULL, func, MPI_ERR_NO_MEM, "cannot map rank %d's shared segment: %s%s",
                       win->leader, strerror(errno), rma_err_fd_hint(errno));
    if (win->seg == NULL)
        return rma_err(NULL, func, MPI_ERR_OTHER,
                       "cannot map rank %d's shared segment (pidfd_getfd, /proc/<pid>/fd: %s); "
                       "librma needs the same-user permission to read the process's state "
                       "(ptrace read)",
                       win->leader, strerror(errno));
    win->seg_len = desc->len;
    win->ctl = win->seg;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------ off-node targets */

/* What each rank tells the others about its memory for off-node peers, followed by the
 * packed keys (ctl_len + data_len bytes). */
typedef struct net_info {
    uint64_t ctl_raddr;  /* its mapping of its node's control segment */
    uint64_t data_raddr; /* its window memory (allocate flavors: inside that segment) */
    uint32_t ctl_len, data_len;
    int32_t err;       /* NET_*: what it could not do */
    int32_t unreached; /* NET_CONNECT: the world rank it has no transport to */
} net_info_t;

enum { NET_OK, NET_CONNECT, NET_NO_MEM, NET_EXPOSE };

/* Same-node targets not mapped here go through CMA; a write there waits while the owner
 * moves its memory (windows/expose.c), which its control slot says. */
static void win_shm_targets(rma_win_t *win)
{
    for (int t = 0; t < win->nranks; t++) {
        rma_nm_tgt_t *nm = &win->targets[t].nm;
        if (!win->targets[t].local)
            continue;
        nm->ops = &rma_nm_shm_ops;
        nm->cma_moving = &rma_ctl_rank(win->ctl, t)->moving;
        nm->cma_writers = &rma_ctl_rank(win->ctl, t)->cma_writers;
    }
}

/* In a window whose UCX runs, a same-node target whose memory is not mapped here (create
 * and attached memory that is not shared) gets its puts of many small pieces through its
 * agent, in UCX's messages, rather than a cross-memory-attach iovec per piece (netmod.h
 * rma_nm_shm_with). Its control words stay CPU atomics, its accumulates the node's. */
static void win_shm_msg_targets(rma_win_t *win)
{
    if (!(win->net || win->node_msg) || rma_env.hx_node == 0)
        return;
    for (int t = 0; t < win->nranks; t++) {
        rma_nm_tgt_t *nm = &win->targets[t].nm;
        if (!win->targets[t].local || t == win->rank || win->targets[t].map_local != NULL ||
            (win->flavor == MPI_WIN_FLAVOR_CREATE && win->targets[t].size == 0) ||
            rma_net->tgt_init(nm, win->world[t]) != 0)
            continue;
        nm->ops = rma_nm_shm_with(nm->ops);
        nm->dev_rma = 1; /* the data goes by cross-memory attach, never behind the requests */
        nm->dev_amo = nm->maps = nm->ordered = nm->am_rma = 0;
        nm->hx_piece = rma_env.hx_node;
        nm->hx_get_piece = 0; /* a get of many pieces reads their span at once (nm_shm.c) */
        /* lone small operations of one node's window: to the agent while that costs less,
         * all held to the flush. Not without an agent (nobody would answer while the target
         * computes), nor beside off-node ranks, whose traffic keeps the agents busy (two
         * simulated nodes: no gain measured) */
        rma_nm_way_init(nm, rma_env.agent == RMA_AGENT_OFF || win->net ? 0 : rma_env.hx_small);
        nm->aggregate = nm->way.small != 0 ? rma_env.aggregate_am : 0;
        if (rma_env.verbose >= 2) {
            char lone[96] = "";
            if (nm->way.small != 0)
                snprintf(lone, sizeof(lone),
                         ", lone operations of up to %zu bytes through it while that costs less",
                         nm->way.small);
            fprintf(stderr,
                    "librma: window 0x%x: rank %d reaches rank %d (same node) by cross-memory "
                    "attach, puts of many pieces of up to %zu bytes through its agent%s\n",
                    (unsigned)win->handle, win->rank, t, nm->hx_piece, lone);
        }
    }
}

/* Releases the keys and registrations of the off-node targets; their operations are
 * complete first. */
static void win_net_release(rma_win_t *win)
{
    for (int t = 0; win->targets != NULL && t < win->nranks; t++) {
        rma_nm_tgt_t *nm = &win->targets[t].nm;
        if (win->targets[t].local) {
            if (nm->hx_piece > 0) { /* shm with messages: their answers land in nm */
                nm->ops->flush(nm);
                rma_hx_agg_free(nm);
            }
            continue;
        }
        rma_hx_agg_free(nm); /* an epoch left open: its puts are not sent now */
        if (nm->ops != NULL) {
            nm->ops->flush(nm);
            if (nm->data_key != nm->ctl_key)
                nm->ops->key_close(nm->data_key);
            nm->ops->key_close(nm->ctl_key);
            if (win->targets[t].move_key != NULL)
                nm->ops->key_close(win->targets[t].move_key);
        }
        nm->data_key = nm->ctl_key = win->targets[t].move_key = NULL;
        nm->data_map = nm->ctl_map = NULL;
        nm->cma_moving = nm->cma_writers = NULL;
    }
    rma_net_mem_free(win->net_data);
    win->net_data = NULL;
    if (!win->seg_ucx) { /* else the segment itself: freed by win_destroy after its last use */
        rma_net_mem_free(win->net_ctl);
        win->net_ctl = NULL;
    }
}

/* Collective when the window has off-node peers: endpoints (worker addresses travel once
 * per process pair), registration of the control segment and of the window memory (data,
 * len; NULL when it is inside the segment or the window is dynamic), keys exchanged and
 * unpacked once per (window, target). Allocate flavors learn each target's data address. */
static int win_net_setup(rma_win_t *win, MPI_Comm comm, const rank_info_t *all, void *data,
                         size_t len, const char *func)
{
    net_info_t me = {0}, *in;
    int need = 0, rc, *lens = NULL, *displs = NULL, total = 0;
    char *mine = NULL, *every = NULL;
    rma_nm_mem_t *cm = NULL, *dm = NULL;
    /* the data's exposure: its own (dm), or that of the MPI_Alloc_mem block it lies in */
    const rma_nm_mem_t *dx = data != NULL && len > 0 ? rma_memreg_net(data, len) : NULL;

    if (!win->net)
        return MPI_SUCCESS;
    for (int t = 0; t < win->nranks; t++)
        need |= all[t].need_ep;
    rc = rma_net->connect(comm, win->world, win->nranks, need, &me.unreached);
    me.ctl_raddr = (uintptr_t)win->seg;
    me.data_raddr = (uintptr_t)win->base;
    if (win->net_ctl == NULL) /* else: the segment is UCX's allocation, already mapped */
        win->net_ctl = calloc(1, sizeof(*cm));
    cm = win->net_ctl;
    if (data != NULL && len > 0 && dx == NULL)
        dx = win->net_data = dm = calloc(1, sizeof(*dm));
    if (rc != MPI_SUCCESS)
        me.err = rc == MPI_ERR_NO_MEM ? NET_NO_MEM : NET_CONNECT;
    else if (cm == NULL || (data != NULL && len > 0 && dx == NULL))
        me.err = NET_NO_MEM;
    else if ((!win->seg_ucx && rma_net->expose(win->seg, win->seg_len, cm) != 0) ||
             (dm != NULL && rma_net->expose(data, len, dm) != 0))
        me.err = NET_EXPOSE;
    if (!me.err) {
        me.ctl_len = (uint32_t)cm->blob_len;
        me.data_len = dx != NULL ? (uint32_t)dx->blob_len : 0;
    }
    int mylen = (int)(sizeof(me) + me.ctl_len + me.data_len);
    mine = malloc((size_t)mylen);
    lens = malloc((size_t)win->nranks * sizeof(int));
    displs = malloc((size_t)win->nranks * sizeof(int));
    if (mine == NULL || lens == NULL || displs == NULL) {
        me.err = NET_NO_MEM;
        me.ctl_len = me.data_len = 0;
        mylen = (int)sizeof(me);
    }
    if (mine != NULL) {
        memcpy(mine, &me, sizeof(me));
        if (me.ctl_len)
            memcpy(mine + sizeof(me), cm->blob, me.ctl_len);
        if (me.data_len)
            memcpy(mine + sizeof(me) + me.ctl_len, dx->blob, me.data_len);
    }
    if (lens == NULL || displs == NULL) { /* cannot take part: abort rather than hang */
        free(mine), free(lens), free(displs);
        return rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory exchanging remote keys");
    }
    PMPI_Allgather(&mylen, 1, MPI_INT, lens, 1, MPI_INT, comm);
    for (int t = 0; t < win->nranks; t++) {
        displs[t] = total;
        total += lens[t];
    }
    every = malloc((size_t)total);
    PMPI_Allgatherv(mine != NULL ? mine : (char *)&me, mylen, MPI_BYTE, every, lens, displs,
                    MPI_BYTE, comm);
    free(mine);
    rc = MPI_SUCCESS;
    for (int t = 0; t < win->nranks && rc == MPI_SUCCESS; t++) {
        rma_target_t *tg = &win->targets[t];
        if (every == NULL) {
            rc = rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory exchanging remote keys");
            break;
        }
        in = (net_info_t *)(every + displs[t]);
        if (in->err == NET_CONNECT)
            rc = rma_err(NULL, func, MPI_ERR_OTHER,
                         "rank %d has no UCX transport that reaches world rank %d (the "
                         "transports: RMA_UCX_TLS, else UCX_TLS; doc/tuning.md)",
                         t, in->unreached);
        else if (in->err == NET_NO_MEM)
            rc = rma_err(NULL, func, MPI_ERR_NO_MEM, "rank %d ran out of memory setting up UCX", t);
        else if (in->err != NET_OK)
            rc = rma_err(NULL, func, MPI_ERR_OTHER,
                         "rank %d could not register its window memory with UCX", t);
        if (rc != MPI_SUCCESS)
            break;
        if (tg->local)
            continue;
        if (rma_net->tgt_init(&tg->nm, win->world[t]) != 0) {
            rc = rma_err(NULL, func, MPI_ERR_OTHER, "no UCX endpoint to rank %d", t);
            break;
        }
        tg->nm.ctl_raddr = (uintptr_t)in->ctl_raddr;
        tg->nm.ctl_key = tg->nm.ops->key_open(&tg->nm, (char *)(in + 1));
        tg->nm.data_key = in->data_len
                              ? tg->nm.ops->key_open(&tg->nm, (char *)(in + 1) + in->ctl_len)
                              : tg->nm.ctl_key;
        tg->nm.ctl_map = tg->nm.ops->key_ptr(tg->nm.ctl_key, in->ctl_raddr);
        if (win->flavor == MPI_WIN_FLAVOR_ALLOCATE)
            tg->remote_base = (uintptr_t)in->data_raddr;
        /* allocate windows (their data in the segment or keyed apart), and create windows
         * whose memory UCX maps here: an MPI_Alloc_mem block from UCX (with xpmem, any) */
        if (win->flavor == MPI_WIN_FLAVOR_ALLOCATE || in->data_len)
            tg->nm.data_map = tg->nm.ops->key_ptr(tg->nm.data_key, in->data_raddr);
        /* the owner may move create or attached memory for us (windows/expose.c): UCX's
         * CMA writes to it then wait as librma's own do, on its control words mapped here */
        if (win->flavor != MPI_WIN_FLAVOR_ALLOCATE && tg->nm.ctl_map != NULL &&
            tg->nm.data_map == NULL) {
            tg->nm.cma_moving = (_Atomic uint32_t *)(tg->nm.ctl_map + RMA_CTL_OFF(win, t, moving));
            tg->nm.cma_writers =
                (_Atomic uint32_t *)(tg->nm.ctl_map + RMA_CTL_OFF(win, t, cma_writers));
        }
        if (rma_env.verbose >= 2)
            fprintf(stderr,
                    "librma: %s window 0x%x: rank %d reaches rank %d through UCX: control "
                    "words %s, window memory %s%s\n",
                    func, (unsigned)win->handle, win->rank, t,
                    tg->nm.ctl_map ? "by UCX's shared mapping" : "by network atomics",
                    tg->nm.data_map  ? "by UCX's shared mapping"
                    : tg->nm.dev_rma ? "by the network device's RDMA"
                                     : "by UCX's emulation of RDMA (large pieces: a rendezvous "
                                       "through the target's agent)",
                    tg->nm.ordered ? "; operations take effect in issue order (one round trip "
                                     "per notification)"
                                   : "");
        if (tg->nm.ctl_key == NULL || tg->nm.data_key == NULL)
            rc = rma_err(NULL, func, MPI_ERR_OTHER, "cannot unpack rank %d's UCX remote key", t);
    }
    free(every), free(lens), free(displs);
    /* an endpoint or a key can fail on one rank alone: then no rank returns the window */
    return win_agree(win, comm, rc, func);
}

/* Create and dynamic windows: peers may write this rank's memory by CMA, which every move of
 * pages in this process holds off (memreg.h rma_memreg_writers_t); before the agreement
 * after which they may. */
static void win_writers_enter(rma_win_t *win)
{
    rma_ctl_rank_t *me;

    if (win->ctl == NULL || win->nranks < 2)
        return;
    me = rma_ctl_rank(win->ctl, win->rank);
    rma_memreg_writers_enter(&win->writers, &me->moving, &me->cma_writers);
}

/* Undoes win_begin/win_map_ctl and whatever targets were mapped; frees the object. */
static void win_destroy(rma_win_t *win)
{
    rma_memreg_writers_leave(&win->writers); /* before its control slot goes */
    rma_win_retire(win);                     /* the agent no longer finds it ... */
    for (int t = 0; win->pids_watched && t < win->nranks; t++)
        if (win->targets[t].local && t != win->rank)
            rma_peer_unwatch_pid(win->targets[t].pid);
    if (rma_net_started()) /* ... nor still uses it: a request for it in flight is refused */
        rma_net->quiesce();
    rma_request_quiesce(); /* nor a request of it driven on another thread */
    win_net_release(win);
    if (win->targets != NULL) {
        for (int t = 0; t < win->nranks; t++) {
            rma_target_t *tg = &win->targets[t];
            if (tg->local)
                rma_nm_shm_release(&tg->nm);
            if (win->flavor == MPI_WIN_FLAVOR_CREATE && t != win->rank && tg->map_local)
                rma_seg_detach(tg->map_local, tg->map_len);
            for (int s = 0; s < tg->nsegs; s++)
                rma_seg_detach(tg->segs[s].local, tg->segs[s].len);
            free(tg->segs);
        }
    }
    if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC)
        rma_win_dyn_destroy(win);
    rma_memreg_release(win->expose);
    if (win->seg != NULL && win->seg_id != 0 &&
        (win->flavor == MPI_WIN_FLAVOR_CREATE || win->flavor == MPI_WIN_FLAVOR_DYNAMIC)) {
        /* kept for the next window (see the pool above) */
        uint32_t locals = 0;
        for (int t = 0; t < win->nranks; t++)
            locals += (uint32_t)win->targets[t].local;
        ctl_ent_t e = {win->seg,
                       win->seg_len,
                       win->rank == win->leader ? 0 : win->seg_pid,
                       win->rank == win->leader ? win->seg_fd : -1,
                       win->seg_id,
                       locals - 1};
        pool_put(&e);
        win->seg_fd = -1;
    } else if (win->seg_ucx) {
        rma_net_mem_free(win->net_ctl);
        win->net_ctl = NULL;
    } else {
        rma_seg_detach(win->seg, win->seg_len);
    }
    if (win->group != MPI_GROUP_NULL)
        PMPI_Group_free(&win->group);
    if (win->seg_fd >= 0)
        close(win->seg_fd);
    free(win->targets);
    free(win->post_seen);
    free(win->held);
    free(win->start_ranks);
    free(win->world);
    free(win->reps);
    rma_errh_unref(win->errhandler);
    rma_win_delete(win);
}

static int win_fail(rma_win_t *win, int rc)
{
    win_destroy(win);
    return rc;
}

int rma_win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                   rma_win_t **win_p)
{
    static const char func[] = "MPI_Win_create";
    rma_win_t *win = rma_win_new();
    rank_info_t me = {0}, *all = NULL;
    int rc, ctl_rc = MPI_SUCCESS;

    if (win == NULL)
        return rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory");
    rc = win_begin(win, comm, info, MPI_WIN_FLAVOR_CREATE, func);
    if (rc != MPI_SUCCESS)
        return win_fail(win, rc);
    win_net_begin(win, &me, func);
    win_node_msg_begin(win, &me);
    /* a leader that cannot make the segment sends none (length 0): the others fail too */
    if (win->rank == win->leader)
        ctl_rc = win_ctl_create(win, 0, 1, &me.ctl, func);
    win->base = base;
    win->size = size;
    win->disp_unit = disp_unit;
    me.base = (uintptr_t)base;
    me.size = (uint64_t)size;
    me.disp_unit = disp_unit;
    me.seg.fd = -1;
    me.net_mem = size > 0 && win->net && rma_memreg_net(base, (size_t)size) != NULL;
    if (size > 0 && win->nranks > 1 && rma_seg_sharing_works())
        win->expose = rma_memreg_expose(base, (size_t)size);
    if (win->expose != NULL) {
        me.seg.pid = getpid();
        me.seg.fd = win->expose->fd;
        me.seg.len = win->expose->len;
        me.seg.seg_id = win->expose->seg_id;
        me.seg_base = win->expose->base;
    }
    rc = win_exchange(win, comm, &me, &all, func);
    if (rc == MPI_SUCCESS) {
        rc = ctl_rc;
        if (rc == MPI_SUCCESS && win->rank != win->leader)
            rc = win_ctl_attach(win, &all[win->leader].ctl, 1, func);
        if (rc == MPI_SUCCESS)
            win_writers_enter(win);
        rc = win_agree(win, comm, rc, func);
    }
    if (rc == MPI_SUCCESS)
        rc = win_net_setup(win, comm, all, size > 0 ? base : NULL, (size_t)size, func);
    if (rc != MPI_SUCCESS) {
        free(all);
        return win_fail(win, rc);
    }
    win_node_msg_setup(win, comm, all);
    win_shm_targets(win);
    /* accumulates use CPU atomics only when every rank's memory is exposed to every peer;
     * decided from the gathered descriptors, so all ranks agree (doc/atomicity.md) */
    win->acc_mode = win->net ? RMA_ACC_MODE_NET : RMA_ACC_MODE_ATOMIC;
    for (int t = 0; t < win->nranks; t++) {
        rma_target_t *tg = &win->targets[t];
        tg->remote_base = all[t].base;
        tg->size = (MPI_Aint)all[t].size;
        tg->disp_unit = all[t].disp_unit;
        if (all[t].size > 0 && win->nranks > 1 && all[t].seg.fd < 0 && !all[t].net_mem)
            win->acc_mode = RMA_ACC_MODE_LOCKED;
        if (t == win->rank) {
            tg->map_lo = (uintptr_t)base;
            tg->map_len = (size_t)size;
            tg->map_local = base;
        } else if (all[t].seg.fd >= 0 && tg->local) {
            /* the owner keeps the descriptor registered until its MPI_Win_free, which
             * cannot return before ours starts */
            tg->map_local = rma_seg_attach(&all[t].seg);
            if (tg->map_local != NULL) {
                tg->map_lo = all[t].seg_base;
                tg->map_len = all[t].seg.len;
            }
        }
        if (rma_env.verbose >= 2 && t != win->rank)
            fprintf(stderr, "librma: MPI_Win_create window 0x%x: rank %d reaches rank %d %s\n",
                    (unsigned)win->handle, win->rank, t,
                    tg->size == 0   ? "(0 bytes)"
                    : !tg->local    ? "through UCX (off-node)"
                    : tg->map_local ? "directly (load/store)"
                                    : "through cross-memory attach");
    }
    free(all);
    win_shm_msg_targets(win);
    /* memory registered with UCX moves only where no NIC may have pinned its pages
     * (rma_expose_offer_net) */
    if (win->expose == NULL && size > 0 && !win->net)
        rma_expose_offer(win); /* peers reach us through CMA until the agent moves it */
    else if (size > 0 && win->net_data != NULL && (win->expose == NULL || win->expose->net))
        rma_expose_offer_net(win, base, (size_t)size); /* UCX emulates RDMA on it till then */
    *win_p = win;
    return MPI_SUCCESS;
}

int rma_win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, int shared,
                     void *baseptr, rma_win_t **win_p)
{
    const char *func = shared ? "MPI_Win_allocate_shared" : "MPI_Win_allocate";
    rma_win_t *win = rma_win_new();
    rank_info_t me = {0}, *all = NULL;
    rma_seg_desc_t desc = {0}, *descs = NULL;
    size_t ctl_len, data_len = 0, page = rma_page_size(), align = 1;
    size_t *offs = NULL;
    rma_ctl_t hdr;
    int rc, contig, ctl_rc = MPI_SUCCESS;

    if (win == NULL)
        return rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory");
    rc = win_begin(win, comm, info, shared ? MPI_WIN_FLAVOR_SHARED : MPI_WIN_FLAVOR_ALLOCATE, func);
    if (rc == MPI_SUCCESS && shared && win->net)
        rc = rma_err(NULL, func, MPI_ERR_RMA_SHARED,
                     "the communicator's processes are on more than one node: they cannot "
                     "share memory (split it with MPI_Comm_split_type(MPI_COMM_TYPE_SHARED))");
    if (rc != MPI_SUCCESS)
        return win_fail(win, rc);
    win_net_begin(win, &me, func);
    me.size = (uint64_t)size;
    me.disp_unit = disp_unit;
    me.align = rma_info_alignment(info);
    rc = win_exchange(win, comm, &me, &all, func);
    if (rc == MPI_SUCCESS && ((offs = malloc((size_t)win->nranks * sizeof(*offs))) == NULL ||
                              (descs = malloc((size_t)win->nranks * sizeof(*descs))) == NULL))
        rc = rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory");
    if (rc != MPI_SUCCESS) {
        free(all), free(offs), free(descs);
        return win_fail(win, rc);
    }
    /* MPI_Win_allocate_shared is contiguous across ranks unless alloc_shared_noncontig;
     * otherwise every rank's memory starts on its own page. A rank that asks for an
     * alignment starts at a multiple of it (in a contiguous window, after padding), and the
     * segment goes where its data starts at a multiple of the largest. A node's segment
     * holds the memory of that node's ranks. */
    contig = shared && !win->info.alloc_shared_noncontig;
    for (int t = 0; t < win->nranks; t++) {
        offs[t] = 0;
        if (!win->targets[t].local)
            continue;
        data_len = round_up(data_len, contig || all[t].align > page ? all[t].align : page);
        offs[t] = data_len;
        data_len += (size_t)all[t].size;
        if (all[t].align > align)
            align = all[t].align;
    }
    ctl_len = ctl_layout(&hdr, win->nranks, win->post_rows);
    if (win->rank == win->leader &&
        (ctl_rc = win_ctl_create(win, data_len, align, &desc, func)) != 0)
        desc.len = 0;
    if (win->net) /* every node's leader made one */
        PMPI_Allgather(&desc, sizeof(desc), MPI_BYTE, descs, sizeof(desc), MPI_BYTE, comm);
    else
        PMPI_Bcast(&desc, sizeof(desc), MPI_BYTE, win->leader, comm);
    if (win->net)
        desc = descs[win->leader];
    rc = win->rank == win->leader ? ctl_rc : win_ctl_attach(win, &desc, align, func);
    rc = win_agree(win, comm, rc, func);
    if (rc == MPI_SUCCESS) {
        /* the exchange in win_net_setup lets peers send requests to this rank's agent,
         * which checks them against base and size: both are set before it */
        win->base = (char *)win->seg + ctl_len + offs[win->rank];
        win->size = size;
        win->disp_unit = disp_unit;
        rc = win_net_setup(win, comm, all, NULL, 0, func);
    }
    if (rc != MPI_SUCCESS) {
        free(all), free(offs), free(descs);
        return win_fail(win, rc);
    }
    win_shm_targets(win);
    for (int t = 0; t < win->nranks; t++) {
        rma_target_t *tg = &win->targets[t];
        tg->size = (MPI_Aint)all[t].size;
        tg->disp_unit = all[t].disp_unit;
        if (!tg->local)
            continue; /* remote_base came with its keys */
        char *local = (char *)win->seg + ctl_len + offs[t];
        tg->remote_base = (uintptr_t)local; /* every rank addresses the data by its mapping */
        tg->map_lo = (uintptr_t)local;
        tg->map_len = (size_t)all[t].size;
        tg->map_local = local;
    }
    /* every rank maps every same-node rank's memory */
    win->acc_mode = win->net ? RMA_ACC_MODE_NET : RMA_ACC_MODE_ATOMIC;
    *(void **)baseptr = win->base;
    free(all), free(offs), free(descs);
    *win_p = win;
    return MPI_SUCCESS;
}

int rma_win_create_dynamic(MPI_Info info, MPI_Comm comm, rma_win_t **win_p)
{
    static const char func[] = "MPI_Win_create_dynamic";
    rma_win_t *win = rma_win_new();
    rank_info_t me = {0}, *all = NULL;
    int rc, ctl_rc = MPI_SUCCESS;

    if (win == NULL)
        return rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory");
    rc = win_begin(win, comm, info, MPI_WIN_FLAVOR_DYNAMIC, func);
    if (rc != MPI_SUCCESS)
        return win_fail(win, rc);
    win_net_begin(win, &me, func);
    win_node_msg_begin(win, &me);
    if (win->rank == win->leader) /* as for MPI_Win_create */
        ctl_rc = win_ctl_create(win, 0, 1, &me.ctl, func);
    rc = win_exchange(win, comm, &me, &all, func);
    if (rc == MPI_SUCCESS) {
        rc = ctl_rc;
        if (rc == MPI_SUCCESS && win->rank != win->leader)
            rc = win_ctl_attach(win, &all[win->leader].ctl, 1, func);
        if (rc == MPI_SUCCESS && (rc = rma_win_dyn_init(win)) != 0)
            rc = rma_err(NULL, func, MPI_ERR_NO_MEM, "cannot create the region table: %s%s",
                         strerror(-rc), rma_err_fd_hint(-rc));
        if (rc == MPI_SUCCESS)
            win_writers_enter(win);
        rc = win_agree(win, comm, rc, func);
    }
    if (rc == MPI_SUCCESS)
        rc = win_net_setup(win, comm, all, NULL, 0, func);
    if (rc == MPI_SUCCESS)
        win_node_msg_setup(win, comm, all);
    free(all);
    if (rc != MPI_SUCCESS)
        return win_fail(win, rc);
    win_shm_targets(win);
    win_shm_msg_targets(win);
    win->acc_mode = RMA_ACC_MODE_DYNAMIC; /* decided per attached region */
    win->base = MPI_BOTTOM;
    win->size = 0;
    win->disp_unit = 1;
    for (int t = 0; t < win->nranks; t++)
        win->targets[t].disp_unit = 1;
    *win_p = win;
    return MPI_SUCCESS;
}

void rma_win_free_left(void)
{
    rma_win_t *win;

    while ((win = rma_win_first()) != NULL)
        win_destroy(win); /* takes it out of the table */
}

int rma_win_free(rma_win_t *win)
{
    /* a post that an MPI_MODE_NOCHECK start never waited for lands before anyone leaves
     * the barrier: its origin may hand the control segment to its next window then. Only
     * pushed, it could take effect there. (Every other notification was waited for.) */
    for (int t = 0; win->posts_pushed && t < win->nranks; t++)
        if (!win->targets[t].local && rma_nm_pending(&win->targets[t].nm))
            (void)rma_ctl_flush(win, t); /* a dead peer: the barrier says so */
    /* nobody may still be accessing our memory, nor we theirs, once this returns */
    rma_sync_barrier(win);
    rma_memreg_writers_leave(&win->writers); /* no move writes its control slot now */
    /* the last access to the control segment: its leader reuses it once all are done */
    if (win->rank != win->leader)
        atomic_fetch_add_explicit(&win->ctl->left, 1, memory_order_release);
    win_destroy(win);
    return MPI_SUCCESS;
}
