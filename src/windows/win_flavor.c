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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpid/rma/env.h"
#include "windows/memreg.h"
#include "windows/segment.h"
#include "windows/win.h"
#include "windows/win_error.h"

/* What each rank tells the others when a window is created. */
typedef struct rank_info {
    uint64_t base;       /* window base in the owner's address space */
    uint64_t size;
    int32_t  disp_unit;
    int32_t  pid;
    rma_seg_desc_t seg;  /* create flavor: segment holding the window, fd -1 if none */
    uint64_t seg_base;   /* owner's address of that segment */
} rank_info_t;

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* Layout of the control segment for n ranks; returns its size in bytes. */
static size_t ctl_layout(rma_ctl_t *hdr, int n, int dyn_max)
{
    size_t off = round_up(sizeof(rma_ctl_t), RMA_CACHE_LINE);

    memset(hdr, 0, sizeof(*hdr));
    hdr->magic = RMA_CTL_MAGIC;
    hdr->version = RMA_CTL_VERSION;
    hdr->nranks = (uint32_t)n;
    hdr->dyn_max = (uint32_t)dyn_max;
    hdr->ranks_off = off;
    off += (size_t)n * sizeof(rma_ctl_rank_t);
    hdr->post_off = off;
    off = round_up(off + (size_t)n * n * sizeof(uint32_t), RMA_CACHE_LINE);
    hdr->acc_off = off;
    off += (size_t)RMA_ACC_NLOCKS * RMA_CACHE_LINE;
    hdr->dyn_off = off;
    off += (size_t)n * dyn_max * sizeof(rma_dyn_region_t);
    return round_up(off, rma_page_size());
}

/* Common start of every flavor: private communicator, group, target array. */
static int win_begin(rma_win_t *win, MPI_Comm comm, MPI_Info info, int flavor, const char *func)
{
    MPI_Comm node;
    int node_size, rc;

    rma_env_init();
    win->flavor = flavor;
    rc = PMPI_Comm_dup(comm, &win->comm);
    if (rc != MPI_SUCCESS)
        return rma_err(NULL, func, MPI_ERR_COMM, "invalid communicator");
    PMPI_Comm_rank(win->comm, &win->rank);
    PMPI_Comm_size(win->comm, &win->nranks);
    PMPI_Comm_group(win->comm, &win->group);
    rma_win_info_parse(win, info);
    if (rma_env.netmod_only)
        return rma_err(NULL, func, MPI_ERR_OTHER,
                       "RMA_NETMOD_ONLY=1 asks for the network transport, and this build of "
                       "librma has only the shared-memory transport");
    PMPI_Comm_split_type(win->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    PMPI_Comm_size(node, &node_size);
    PMPI_Comm_free(&node);
    if (node_size != win->nranks)
        return rma_err(NULL, func, MPI_ERR_OTHER,
                       "the communicator spans %d ranks but only %d share this node; this "
                       "build of librma has only the shared-memory transport",
                       win->nranks, node_size);
    win->targets = calloc((size_t)win->nranks, sizeof(*win->targets));
    win->post_seen = calloc((size_t)win->nranks, sizeof(*win->post_seen));
    win->start_ranks = calloc((size_t)win->nranks, sizeof(*win->start_ranks));
    if (win->targets == NULL || win->post_seen == NULL || win->start_ranks == NULL)
        return rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory for %d targets", win->nranks);
    return MPI_SUCCESS;
}

/* Rank 0 creates the control segment (plus `data_len` bytes of window data after it) and
 * every rank maps it. Returns MPI_SUCCESS or an error class (already raised). */
static int win_map_ctl(rma_win_t *win, size_t data_len, int dyn_max, size_t *ctl_len_p,
                       const char *func)
{
    rma_ctl_t hdr;
    size_t ctl_len = ctl_layout(&hdr, win->nranks, dyn_max);
    rma_seg_desc_t desc = {0};
    void *addr = NULL;
    int fd = -1, rc = 0, ok;

    if (win->rank == 0) {
        rc = rma_seg_create(ctl_len + data_len, NULL, &addr, &fd);
        if (rc == 0) {
            memcpy(addr, &hdr, sizeof(hdr));
            desc.pid = getpid();
            desc.fd = fd;
            desc.len = round_up(ctl_len + data_len, rma_page_size());
        }
    }
    PMPI_Bcast(&desc, sizeof(desc), MPI_BYTE, 0, win->comm);
    if (desc.len == 0)
        return rma_err(NULL, func, MPI_ERR_NO_MEM,
                       "cannot create a %zu-byte shared segment on rank 0", ctl_len + data_len);
    if (win->rank != 0)
        addr = rma_seg_attach(&desc);
    ok = addr != NULL;
    PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, win->comm);
    if (fd >= 0)
        close(fd);
    if (!ok) {
        if (addr != NULL)
            rma_seg_detach(addr, desc.len);
        return rma_err(NULL, func, MPI_ERR_OTHER,
                       "cannot map rank 0's shared segment (pidfd_getfd: %s); librma needs "
                       "the same-user ptrace permission that cross-memory attach needs",
                       strerror(errno));
    }
    win->seg = addr;
    win->seg_len = desc.len;
    win->ctl = addr;
    rma_ctl_rank(win->ctl, win->rank)->pid = (uint32_t)getpid();
    *ctl_len_p = ctl_len;
    return MPI_SUCCESS;
}

/* Undoes win_begin/win_map_ctl and whatever targets were mapped; frees the object. */
static void win_destroy(rma_win_t *win)
{
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
    if (win->dyn_regs != NULL) {
        for (int i = 0; i < rma_env.dyn_max_regions; i++)
            rma_memreg_release(win->dyn_regs[i]);
        free(win->dyn_regs);
    }
    rma_memreg_release(win->expose);
    rma_seg_detach(win->seg, win->seg_len);
    if (win->group != MPI_GROUP_NULL)
        PMPI_Group_free(&win->group);
    if (win->comm != MPI_COMM_NULL)
        PMPI_Comm_free(&win->comm);
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
    rank_info_t me = {0}, *all;
    size_t ctl_len;
    int rc;

    if (win == NULL)
        return rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory");
    rc = win_begin(win, comm, info, MPI_WIN_FLAVOR_CREATE, func);
    if (rc == MPI_SUCCESS)
        rc = win_map_ctl(win, 0, 1, &ctl_len, func);
    if (rc != MPI_SUCCESS)
        return win_fail(win, rc);
    win->base = base;
    win->size = size;
    win->disp_unit = disp_unit;

    me.base = (uintptr_t)base;
    me.size = (uint64_t)size;
    me.disp_unit = disp_unit;
    me.pid = getpid();
    me.seg.fd = -1;
    if (size > 0 && win->nranks > 1 && rma_seg_sharing_works())
        win->expose = rma_memreg_expose(base, (size_t)size);
    if (win->expose != NULL) {
        me.seg.pid = me.pid;
        me.seg.fd = win->expose->fd;
        me.seg.len = win->expose->len;
        me.seg.seg_id = win->expose->seg_id;
        me.seg_base = win->expose->base;
    }
    all = malloc((size_t)win->nranks * sizeof(*all));
    if (all == NULL)
        return win_fail(win, rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory"));
    PMPI_Allgather(&me, sizeof(me), MPI_BYTE, all, sizeof(me), MPI_BYTE, win->comm);
    for (int t = 0; t < win->nranks; t++) {
        rma_target_t *tg = &win->targets[t];
        tg->remote_base = all[t].base;
        tg->size = (MPI_Aint)all[t].size;
        tg->disp_unit = all[t].disp_unit;
        tg->pid = all[t].pid;
        tg->local = 1;
        if (t == win->rank) {
            tg->map_lo = (uintptr_t)base;
            tg->map_len = (size_t)size;
            tg->map_local = base;
        } else if (all[t].seg.fd >= 0) {
            tg->map_local = rma_seg_attach(&all[t].seg);
            if (tg->map_local != NULL) {
                tg->map_lo = all[t].seg_base;
                tg->map_len = all[t].seg.len;
            }
        }
    }
    free(all);
    /* peers duplicate our segment descriptor during the gather above; wait for them all
     * before anybody may drop a registration */
    PMPI_Barrier(win->comm);
    *win_p = win;
    return MPI_SUCCESS;
}

int rma_win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, int shared,
                     void *baseptr, rma_win_t **win_p)
{
    const char *func = shared ? "MPI_Win_allocate_shared" : "MPI_Win_allocate";
    rma_win_t *win = rma_win_new();
    MPI_Aint *sizes;
    int *units;
    size_t ctl_len, data_len = 0, page = rma_page_size();
    size_t *offs;
    int rc, contig;

    if (win == NULL)
        return rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory");
    rc = win_begin(win, comm, info,
                   shared ? MPI_WIN_FLAVOR_SHARED : MPI_WIN_FLAVOR_ALLOCATE, func);
    if (rc != MPI_SUCCESS)
        return win_fail(win, rc);
    sizes = malloc((size_t)win->nranks * sizeof(*sizes));
    units = malloc((size_t)win->nranks * sizeof(*units));
    offs = malloc((size_t)win->nranks * sizeof(*offs));
    if (sizes == NULL || units == NULL || offs == NULL) {
        free(sizes), free(units), free(offs);
        return win_fail(win, rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory"));
    }
    PMPI_Allgather(&size, 1, MPI_AINT, sizes, 1, MPI_AINT, win->comm);
    PMPI_Allgather(&disp_unit, 1, MPI_INT, units, 1, MPI_INT, win->comm);
    /* MPI_Win_allocate_shared is contiguous across ranks unless alloc_shared_noncontig;
     * otherwise every rank's memory starts on its own page */
    contig = shared && !win->info.alloc_shared_noncontig;
    for (int t = 0; t < win->nranks; t++) {
        offs[t] = data_len;
        data_len += contig ? (size_t)sizes[t] : round_up((size_t)sizes[t], page);
    }
    rc = win_map_ctl(win, data_len, 1, &ctl_len, func);
    if (rc != MPI_SUCCESS) {
        free(sizes), free(units), free(offs);
        return win_fail(win, rc);
    }
    for (int t = 0; t < win->nranks; t++) {
        rma_target_t *tg = &win->targets[t];
        char *local = (char *)win->seg + ctl_len + offs[t];
        tg->remote_base = (uintptr_t)local; /* every rank addresses the data by its mapping */
        tg->size = sizes[t];
        tg->disp_unit = units[t];
        tg->pid = (int)getpid();
        tg->local = 1;
        tg->map_lo = (uintptr_t)local;
        tg->map_len = (size_t)sizes[t];
        tg->map_local = local;
    }
    win->base = win->targets[win->rank].map_local;
    win->size = size;
    win->disp_unit = disp_unit;
    *(void **)baseptr = win->base;
    free(sizes), free(units), free(offs);
    PMPI_Barrier(win->comm);
    *win_p = win;
    return MPI_SUCCESS;
}

int rma_win_create_dynamic(MPI_Info info, MPI_Comm comm, rma_win_t **win_p)
{
    static const char func[] = "MPI_Win_create_dynamic";
    rma_win_t *win = rma_win_new();
    size_t ctl_len;
    int rc;

    if (win == NULL)
        return rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory");
    rc = win_begin(win, comm, info, MPI_WIN_FLAVOR_DYNAMIC, func);
    if (rc == MPI_SUCCESS)
        rc = win_map_ctl(win, 0, rma_env.dyn_max_regions, &ctl_len, func);
    if (rc != MPI_SUCCESS)
        return win_fail(win, rc);
    win->dyn_regs = calloc((size_t)rma_env.dyn_max_regions, sizeof(*win->dyn_regs));
    if (win->dyn_regs == NULL)
        return win_fail(win, rma_err(NULL, func, MPI_ERR_NO_MEM, "out of memory"));
    win->base = MPI_BOTTOM;
    win->size = 0;
    win->disp_unit = 1;
    PMPI_Barrier(win->comm); /* every rank has published its pid in the control segment */
    for (int t = 0; t < win->nranks; t++) {
        win->targets[t].disp_unit = 1;
        win->targets[t].local = 1;
        win->targets[t].pid = (int)rma_ctl_rank(win->ctl, t)->pid;
    }
    *win_p = win;
    return MPI_SUCCESS;
}

int rma_win_free(rma_win_t *win)
{
    /* nobody may still be accessing our memory, nor we theirs, once this returns */
    PMPI_Barrier(win->comm);
    win_destroy(win);
    return MPI_SUCCESS;
}
