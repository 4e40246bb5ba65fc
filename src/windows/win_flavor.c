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
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdio.h>

#include "mpid/rma/env.h"
#include "sync/sync.h"
#include "windows/memreg.h"
#include "windows/segment.h"
#include "windows/win.h"
#include "windows/win_error.h"

/* What each rank tells the others when a window is created (one allgather). */
typedef struct rank_info {
    uint64_t node; /* identity of the node (hostname + boot id) */
    uint64_t base; /* window base in the owner's address space */
    uint64_t size;
    int32_t disp_unit;
    int32_t pid;
    rma_seg_desc_t seg; /* create flavor: segment holding the window, fd -1 if none */
    uint64_t seg_base;  /* owner's address of that segment */
    rma_seg_desc_t ctl; /* rank 0, create/dynamic flavors: the control segment */
} rank_info_t;

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* Layout of the control segment for n ranks; returns its size in bytes. */
static size_t ctl_layout(rma_ctl_t *hdr, int n)
{
    size_t off = round_up(sizeof(rma_ctl_t), RMA_CACHE_LINE);

    memset(hdr, 0, sizeof(*hdr));
    hdr->magic = RMA_CTL_MAGIC;
    hdr->version = RMA_CTL_VERSION;
    hdr->nranks = (uint32_t)n;
    hdr->ranks_off = off;
    off += (size_t)n * sizeof(rma_ctl_rank_t);
    hdr->post_off = off;
    off = round_up(off + (size_t)n * n * sizeof(uint32_t), RMA_CACHE_LINE);
    hdr->acc_off = off;
    off += (size_t)RMA_ACC_NLOCKS * RMA_CACHE_LINE;
    return round_up(off, rma_page_size());
}

/* A 64-bit identity of this node: processes that share it can share memory. */
static uint64_t node_identity(void)
{
    static uint64_t id;
    char buf[512] = "";
    uint64_t h = 1469598103934665603ULL;
    FILE *f;

    if (id != 0)
        return id;
    gethostname(buf, 255);
    f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        size_t len = strlen(buf);
        if (fgets(buf + len, (int)(sizeof(buf) - len), f) == NULL)
            buf[len] = '\0';
        fclose(f);
    }
    for (const char *p = buf; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    id = h ? h : 1;
    return id;
}

/* Common start of every flavor: rank, group, target arrays, info. No collective call. */
static int win_begin(rma_win_t *win, MPI_Comm comm, MPI_Info info, int flavor, const char *func)
{
    rma_env_init();
    win->flavor = flavor;
    if (comm == MPI_COMM_NULL || PMPI_Comm_rank(comm, &win->rank) != MPI_SUCCESS)
        return rma_err(NULL, func, MPI_ERR_COMM, "invalid communicator");
    PMPI_Comm_size(comm, &win->nranks);
    PMPI_Comm_group(comm, &win->group);
    rma_win_info_parse(win, info);
    if (rma_env.netmod_only)
        return rma_err(NULL, func, MPI_ERR_OTHER,
                       "RMA_NETMOD_ONLY=1 asks for the network transport, but this build of "
                       "librma has only the shared-memory transport");
    win->targets = calloc((size_t)win->nranks, sizeof(*win->targets));
    win->post_seen = calloc((size_t)win->nranks, sizeof(*win->post_seen));
    win->start_ranks = calloc((size_t)win->nranks, sizeof(*win->start_ranks));
    if (win->targets == NULL || win->post_seen == NULL || win->start_ranks == NULL)
        return rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory for %d targets", win->nranks);
    return MPI_SUCCESS;
}

/* Gathers every rank's rank_info over comm into *all_p and checks that all share a node. */
static int win_exchange(rma_win_t *win, MPI_Comm comm, rank_info_t *me, rank_info_t **all_p,
                        const char *func)
{
    rank_info_t *all = malloc((size_t)win->nranks * sizeof(*all));
    int remote = 0;

    if (all == NULL)
        return rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory");
    me->node = node_identity();
    me->pid = getpid();
    PMPI_Allgather(me, sizeof(*me), MPI_BYTE, all, sizeof(*me), MPI_BYTE, comm);
    for (int t = 0; t < win->nranks; t++) {
        remote += all[t].node != me->node;
        win->targets[t].pid = all[t].pid;
        win->targets[t].local = all[t].node == me->node;
    }
    if (remote > 0) {
        free(all);
        return rma_err(NULL, func, MPI_ERR_OTHER,
                       "ranks on other nodes: %d of %d; this build of "
                       "librma has only the shared-memory transport",
                       remote, win->nranks);
    }
    *all_p = all;
    return MPI_SUCCESS;
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

/* Rank 0: creates the control segment with `data_len` bytes of window data after it. */
static int win_ctl_create(rma_win_t *win, size_t data_len, rma_seg_desc_t *desc, const char *func)
{
    rma_ctl_t hdr;
    size_t ctl_len = ctl_layout(&hdr, win->nranks),
           len = round_up(ctl_len + data_len, rma_page_size());
    ctl_ent_t e;
    int rc;

    if (data_len == 0 && pool_take(0, 0, len, &e)) {
        memset(e.addr, 0, len);
    } else {
        rc = rma_seg_create(len, NULL, &e.addr, &e.fd);
        if (rc != 0)
            return rma_err(NULL, func, MPI_ERR_NO_MEM,
                           "cannot create a %zu-byte shared segment: %s", len, strerror(-rc));
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

/* Ranks other than 0: map rank 0's control segment. */
static int win_ctl_attach(rma_win_t *win, const rma_seg_desc_t *desc, const char *func)
{
    ctl_ent_t e;

    if (desc->len == 0)
        return rma_err(NULL, func, MPI_ERR_NO_MEM,
                       "rank 0 could not create the window's "
                       "shared segment");
    win->seg_id = desc->seg_id;
    win->seg_pid = desc->pid;
    if (desc->seg_id != 0 && pool_take(desc->pid, desc->seg_id, desc->len, &e) &&
        e.len == desc->len) {
        win->seg = e.addr;
        win->seg_len = e.len;
        win->ctl = win->seg;
        return MPI_SUCCESS;
    }
    win->seg = rma_seg_attach(desc);
    if (win->seg == NULL)
        return rma_err(NULL, func, MPI_ERR_OTHER,
                       "cannot map rank 0's shared segment (pidfd_getfd: %s); librma needs "
                       "the same-user ptrace permission that cross-memory attach needs",
                       strerror(errno));
    win->seg_len = desc->len;
    win->ctl = win->seg;
    return MPI_SUCCESS;
}

/* Undoes win_begin/win_map_ctl and whatever targets were mapped; frees the object. */
static void win_destroy(rma_win_t *win)
{
    rma_win_retire(win); /* the agent no longer finds it */
    if (win->targets != NULL) {
        for (int t = 0; t < win->nranks; t++) {
            rma_target_t *tg = &win->targets[t];
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
        ctl_ent_t e = {win->seg,
                       win->seg_len,
                       win->rank == 0 ? 0 : win->seg_pid,
                       win->rank == 0 ? win->seg_fd : -1,
                       win->seg_id,
                       (uint32_t)win->nranks - 1};
        pool_put(&e);
        win->seg_fd = -1;
    } else {
        rma_seg_detach(win->seg, win->seg_len);
    }
    if (win->group != MPI_GROUP_NULL)
        PMPI_Group_free(&win->group);
    if (win->seg_fd >= 0)
        close(win->seg_fd);
    free(win->targets);
    free(win->post_seen);
    free(win->start_ranks);
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
    int rc;

    if (win == NULL)
        return rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory");
    rc = win_begin(win, comm, info, MPI_WIN_FLAVOR_CREATE, func);
    if (rc == MPI_SUCCESS && win->rank == 0)
        rc = win_ctl_create(win, 0, &me.ctl, func);
    if (rc != MPI_SUCCESS)
        return win_fail(win, rc);
    win->base = base;
    win->size = size;
    win->disp_unit = disp_unit;
    me.base = (uintptr_t)base;
    me.size = (uint64_t)size;
    me.disp_unit = disp_unit;
    me.seg.fd = -1;
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
    if (rc == MPI_SUCCESS && win->rank != 0)
        rc = win_ctl_attach(win, &all[0].ctl, func);
    if (rc != MPI_SUCCESS) {
        free(all);
        return win_fail(win, rc);
    }
    /* accumulates use CPU atomics only when every rank's memory is exposed to every peer;
     * decided from the gathered descriptors, so all ranks agree (doc/atomicity.md) */
    win->acc_mode = RMA_ACC_MODE_ATOMIC;
    for (int t = 0; t < win->nranks; t++) {
        rma_target_t *tg = &win->targets[t];
        tg->remote_base = all[t].base;
        tg->size = (MPI_Aint)all[t].size;
        tg->disp_unit = all[t].disp_unit;
        if (all[t].size > 0 && win->nranks > 1 && all[t].seg.fd < 0)
            win->acc_mode = RMA_ACC_MODE_LOCKED;
        if (t == win->rank) {
            tg->map_lo = (uintptr_t)base;
            tg->map_len = (size_t)size;
            tg->map_local = base;
        } else if (all[t].seg.fd >= 0) {
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
                    : tg->map_local ? "directly (load/store)"
                                    : "through cross-memory attach");
    }
    free(all);
    if (win->expose == NULL && size > 0)
        rma_expose_offer(win); /* peers reach us through CMA until the agent moves it */
    *win_p = win;
    return MPI_SUCCESS;
}

int rma_win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, int shared,
                     void *baseptr, rma_win_t **win_p)
{
    const char *func = shared ? "MPI_Win_allocate_shared" : "MPI_Win_allocate";
    rma_win_t *win = rma_win_new();
    rank_info_t me = {0}, *all = NULL;
    rma_seg_desc_t desc = {0};
    size_t ctl_len, data_len = 0, page = rma_page_size();
    size_t *offs = NULL;
    rma_ctl_t hdr;
    int rc, contig;

    if (win == NULL)
        return rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory");
    rc = win_begin(win, comm, info, shared ? MPI_WIN_FLAVOR_SHARED : MPI_WIN_FLAVOR_ALLOCATE, func);
    me.size = (uint64_t)size;
    me.disp_unit = disp_unit;
    if (rc == MPI_SUCCESS)
        rc = win_exchange(win, comm, &me, &all, func);
    if (rc == MPI_SUCCESS && (offs = malloc((size_t)win->nranks * sizeof(*offs))) == NULL)
        rc = rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory");
    if (rc != MPI_SUCCESS) {
        free(all);
        return win_fail(win, rc);
    }
    /* MPI_Win_allocate_shared is contiguous across ranks unless alloc_shared_noncontig;
     * otherwise every rank's memory starts on its own page */
    contig = shared && !win->info.alloc_shared_noncontig;
    for (int t = 0; t < win->nranks; t++) {
        offs[t] = data_len;
        data_len += contig ? (size_t)all[t].size : round_up((size_t)all[t].size, page);
    }
    ctl_len = ctl_layout(&hdr, win->nranks);
    if (win->rank == 0 && win_ctl_create(win, data_len, &desc, func) != MPI_SUCCESS)
        desc.len = 0;
    PMPI_Bcast(&desc, sizeof(desc), MPI_BYTE, 0, comm);
    rc = win->rank == 0 ? (desc.len ? MPI_SUCCESS : MPI_ERR_NO_MEM)
                        : win_ctl_attach(win, &desc, func);
    if (rc != MPI_SUCCESS) {
        free(all), free(offs);
        return win_fail(win, rc);
    }
    for (int t = 0; t < win->nranks; t++) {
        rma_target_t *tg = &win->targets[t];
        char *local = (char *)win->seg + ctl_len + offs[t];
        tg->remote_base = (uintptr_t)local; /* every rank addresses the data by its mapping */
        tg->size = (MPI_Aint)all[t].size;
        tg->disp_unit = all[t].disp_unit;
        tg->map_lo = (uintptr_t)local;
        tg->map_len = (size_t)all[t].size;
        tg->map_local = local;
    }
    win->acc_mode = RMA_ACC_MODE_ATOMIC; /* every rank maps every rank's memory */
    win->base = win->targets[win->rank].map_local;
    win->size = size;
    win->disp_unit = disp_unit;
    *(void **)baseptr = win->base;
    free(all), free(offs);
    *win_p = win;
    return MPI_SUCCESS;
}

int rma_win_create_dynamic(MPI_Info info, MPI_Comm comm, rma_win_t **win_p)
{
    static const char func[] = "MPI_Win_create_dynamic";
    rma_win_t *win = rma_win_new();
    rank_info_t me = {0}, *all = NULL;
    int rc;

    if (win == NULL)
        return rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory");
    rc = win_begin(win, comm, info, MPI_WIN_FLAVOR_DYNAMIC, func);
    if (rc == MPI_SUCCESS && win->rank == 0)
        rc = win_ctl_create(win, 0, &me.ctl, func);
    if (rc == MPI_SUCCESS)
        rc = win_exchange(win, comm, &me, &all, func);
    if (rc == MPI_SUCCESS && win->rank != 0)
        rc = win_ctl_attach(win, &all[0].ctl, func);
    free(all);
    if (rc == MPI_SUCCESS && (rc = rma_win_dyn_init(win)) != 0)
        rc = rma_err(NULL, func, MPI_ERR_NO_MEM, "cannot create the region table: %s",
                     strerror(-rc));
    if (rc != MPI_SUCCESS)
        return win_fail(win, rc);
    win->acc_mode = RMA_ACC_MODE_DYNAMIC; /* decided per attached region */
    win->base = MPI_BOTTOM;
    win->size = 0;
    win->disp_unit = 1;
    for (int t = 0; t < win->nranks; t++)
        win->targets[t].disp_unit = 1;
    *win_p = win;
    return MPI_SUCCESS;
}

int rma_win_free(rma_win_t *win)
{
    /* nobody may still be accessing our memory, nor we theirs, once this returns */
    rma_sync_barrier(win);
    /* the last access to the control segment: rank 0 reuses it only once all are done */
    if (win->rank != 0)
        atomic_fetch_add_explicit(&win->ctl->left, 1, memory_order_release);
    win_destroy(win);
    return MPI_SUCCESS;
}
