/*
 * win_dynamic.c - MPI_Win_attach / MPI_Win_detach and finding attached memory of a peer.
 *
 * Each rank publishes its attached regions, sorted by address, in its slot of the window's
 * control segment, guarded by a sequence lock (odd while being changed). An origin looks a
 * target address up by binary search under that lock, then maps the region's segment once
 * and caches the mapping by segment id. Regions that could not be made shared are reached
 * through CMA.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpid/rma/env.h"
#include "sync/wait.h"
#include "windows/memreg.h"
#include "windows/segment.h"
#include "windows/win.h"
#include "windows/win_error.h"

int rma_win_attach(rma_win_t *win, void *base, MPI_Aint size)
{
    static const char func[] = "MPI_Win_attach";
    rma_ctl_rank_t *me = rma_ctl_rank(win->ctl, win->rank);
    rma_dyn_region_t *tab = rma_ctl_dyn(win->ctl, win->rank);
    uint32_t n = atomic_load_explicit(&me->dyn_count, memory_order_relaxed), pos;
    uintptr_t lo = (uintptr_t)base, hi = lo + (uintptr_t)size;
    rma_memreg_t *reg = NULL;
    rma_dyn_region_t r = {0};

    if (win->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return rma_err(win, func, MPI_ERR_RMA_FLAVOR,
                       "the window was not created with MPI_Win_create_dynamic");
    if (size < 0)
        return rma_err(win, func, MPI_ERR_SIZE, "negative size %ld", (long)size);
    if (size == 0) {
        /* nothing to access, but MPI_Win_detach(base) must find it */
        void **p = realloc(win->dyn_zero, (size_t)(win->ndyn_zero + 1) * sizeof(*p));
        if (p == NULL)
            return rma_err(win, func, MPI_ERR_NO_MEM, "out of memory");
        win->dyn_zero = p;
        win->dyn_zero[win->ndyn_zero++] = base;
        return MPI_SUCCESS;
    }
    if (base == NULL)
        return rma_err(win, func, MPI_ERR_BASE, "NULL base with size %ld", (long)size);
    for (pos = 0; pos < n && tab[pos].base < lo; pos++)
        ;
    if ((pos < n && tab[pos].base < hi) || (pos > 0 && tab[pos - 1].base + tab[pos - 1].len > lo))
        return rma_err(win, func, MPI_ERR_RMA_ATTACH,
                       "[%p, +%ld) overlaps memory already attached to this window", base,
                       (long)size);
    if (n == win->ctl->dyn_max)
        return rma_err(win, func, MPI_ERR_RMA_ATTACH,
                       "%u regions are attached already (raise RMA_DYN_MAX_REGIONS)", n);
    if (win->nranks > 1 && rma_seg_sharing_works())
        reg = rma_memreg_expose(base, (size_t)size);
    r.base = lo;
    r.len = (uint64_t)size;
    r.seg_fd = -1;
    if (reg != NULL) {
        r.seg_id = reg->seg_id;
        r.seg_base = reg->base;
        r.seg_len = reg->len;
        r.seg_fd = reg->fd;
    }
    if (rma_env.verbose >= 2)
        fprintf(stderr, "librma: MPI_Win_attach window 0x%x: rank %d region [%p, +%ld) %s\n",
                (unsigned)win->handle, win->rank, base, (long)size,
                reg != NULL ? "shared (peers load/store it)"
                            : "reached through cross-memory attach");
    atomic_fetch_add_explicit(&me->dyn_seq, 1, memory_order_acq_rel);
    memmove(&tab[pos + 1], &tab[pos], (n - pos) * sizeof(*tab));
    memmove(&win->dyn_regs[pos + 1], &win->dyn_regs[pos], (n - pos) * sizeof(*win->dyn_regs));
    tab[pos] = r;
    win->dyn_regs[pos] = reg;
    atomic_store_explicit(&me->dyn_count, n + 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&me->dyn_seq, 1, memory_order_release);
    return MPI_SUCCESS;
}

int rma_win_detach(rma_win_t *win, const void *base)
{
    static const char func[] = "MPI_Win_detach";
    rma_ctl_rank_t *me = rma_ctl_rank(win->ctl, win->rank);
    rma_dyn_region_t *tab = rma_ctl_dyn(win->ctl, win->rank);
    uint32_t n = atomic_load_explicit(&me->dyn_count, memory_order_relaxed), pos;
    rma_memreg_t *reg;

    if (win->flavor != MPI_WIN_FLAVOR_DYNAMIC)
        return rma_err(win, func, MPI_ERR_RMA_FLAVOR,
                       "the window was not created with MPI_Win_create_dynamic");
    for (pos = 0; pos < n && tab[pos].base != (uintptr_t)base; pos++)
        ;
    if (pos == n) {
        for (int i = 0; i < win->ndyn_zero; i++)
            if (win->dyn_zero[i] == base) {
                win->dyn_zero[i] = win->dyn_zero[--win->ndyn_zero];
                return MPI_SUCCESS;
            }
    }
    if (pos == n)
        return rma_err(win, func, MPI_ERR_RMA_ATTACH, "%p is not the base of an attached region",
                       base);
    reg = win->dyn_regs[pos];
    atomic_fetch_add_explicit(&me->dyn_seq, 1, memory_order_acq_rel);
    memmove(&tab[pos], &tab[pos + 1], (n - pos - 1) * sizeof(*tab));
    memmove(&win->dyn_regs[pos], &win->dyn_regs[pos + 1], (n - pos - 1) * sizeof(*win->dyn_regs));
    win->dyn_regs[n - 1] = NULL;
    atomic_store_explicit(&me->dyn_count, n - 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&me->dyn_seq, 1, memory_order_release);
    rma_memreg_release(reg);
    return MPI_SUCCESS;
}

/* Copies the target's region holding [addr, addr+len) out of the control segment under its
 * sequence lock. 1 when found. */
static int dyn_lookup(rma_win_t *win, int target, uintptr_t addr, size_t len, rma_dyn_region_t *out)
{
    rma_ctl_rank_t *cr = rma_ctl_rank(win->ctl, target);
    rma_dyn_region_t *tab = rma_ctl_dyn(win->ctl, target);
    rma_backoff_t bo = RMA_BACKOFF_INIT;

    for (;;) {
        uint64_t s1 = atomic_load_explicit(&cr->dyn_seq, memory_order_acquire);
        int found = 0;
        if (s1 & 1) {
            rma_backoff(&bo);
            continue;
        }
        uint32_t lo = 0, hi = atomic_load_explicit(&cr->dyn_count, memory_order_relaxed);
        if (hi > win->ctl->dyn_max)
            hi = win->ctl->dyn_max;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (tab[mid].base + tab[mid].len <= addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < atomic_load_explicit(&cr->dyn_count, memory_order_relaxed) &&
            lo < win->ctl->dyn_max) {
            memcpy(out, &tab[lo], sizeof(*out));
            found = out->base <= addr && addr + len <= out->base + out->len && addr + len >= addr;
        }
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&cr->dyn_seq, memory_order_relaxed) == s1)
            return found;
        rma_backoff(&bo);
    }
}

/* Local mapping of the target's segment seg_id, mapped on first use. NULL: use CMA. */
static char *dyn_segment(rma_win_t *win, int target, const rma_dyn_region_t *r)
{
    rma_target_t *tg = &win->targets[target];
    rma_seg_desc_t desc;
    char *local;

    for (int i = 0; i < tg->nsegs; i++)
        if (tg->segs[i].seg_id == r->seg_id)
            return tg->segs[i].local;
    if (tg->nsegs == tg->segs_cap) {
        int cap = tg->segs_cap ? 2 * tg->segs_cap : 4;
        rma_peer_seg_t *p = realloc(tg->segs, (size_t)cap * sizeof(*p));
        if (p == NULL)
            return NULL;
        tg->segs = p;
        tg->segs_cap = cap;
    }
    desc.pid = tg->pid;
    desc.fd = r->seg_fd;
    desc.len = r->seg_len;
    desc.seg_id = r->seg_id;
    local = rma_seg_attach(&desc);
    if (local == NULL)
        return NULL;
    tg->segs[tg->nsegs++] = (rma_peer_seg_t){r->seg_id, (uintptr_t)r->seg_base, r->seg_len, local};
    return local;
}

int rma_win_dyn_resolve(rma_win_t *win, int target, uintptr_t addr, size_t len, char **local_p,
                        uint64_t *seg_id_p)
{
    rma_dyn_region_t r;
    char *seg;

    if (!dyn_lookup(win, target, addr, len, &r))
        return MPI_ERR_RMA_RANGE;
    if (seg_id_p != NULL)
        *seg_id_p = r.seg_id;
    if (target == win->rank) {
        *local_p = (char *)addr;
        return MPI_SUCCESS;
    }
    seg = r.seg_id != 0 ? dyn_segment(win, target, &r) : NULL;
    *local_p = seg != NULL ? seg + (addr - r.seg_base) : NULL;
    return MPI_SUCCESS;
}
