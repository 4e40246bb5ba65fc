/*
 * expose.c - how window memory that peers reach through CMA becomes memory they map.
 *
 * MPI_Win_create and MPI_Win_attach cost no more than MPICH's: they never touch the pages.
 * Memory that is not shared already (an MPI_Alloc_mem block, pages a live window moved) is
 * reached by peers through cross-memory attach at first. Each origin counts what that
 * costs it per target; once the cost reaches what moving the region onto a shared segment
 * would cost, it asks the owner (move_addr in the owner's control slot, and a write to the
 * owner's agent eventfd). The owner's progress agent moves the pages under userfaultfd
 * write protection (memreg.c: no write of any thread is lost) and publishes the segment:
 * create windows in the owner's control slot under a sequence lock, dynamic windows in the
 * region table. Origins then map it, and their puts and gets take the inline path.
 *
 * The accumulate mode does not change when memory moves (doc/atomicity.md): a window or
 * region that started on CMA keeps taking stripe locks, now with loads and stores.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mpid/rma/agent.h"
#include "mpid/rma/env.h"
#include "sync/wait.h"
#include "windows/memreg.h"
#include "windows/segment.h"
#include "windows/win.h"

/* What moving a region costs, and what CMA costs, in ns (measured here: ~1.6 us per
 * process_vm_writev call, ~10 GB/s; ~0.1 us a transfer besides, which the transport may
 * hold to send with others in one call at the next flush; a page copy at ~8 GB/s plus
 * mapping it). */
#define MOVE_FIXED_NS 50000u
#define CMA_CALL_NS   1500u
#define CMA_PIECE_NS  100u

void rma_expose_offer(rma_win_t *win)
{
    int fd;

    if (!rma_env.create_remap || win->nranks < 2)
        return;
    fd = rma_agent_start();
    if (fd > 0)
        atomic_store_explicit(&rma_ctl_rank(win->ctl, win->rank)->agent_fd, fd,
                              memory_order_release);
    atomic_store_explicit(&win->expose_ready, 1, memory_order_release);
}

/* After asking the owner for a move: its agent needs a core, and on a node whose cores all
 * run spinning ranks (the owner waiting in MPICH's barrier, this rank putting) it waits for
 * one for a scheduler's time slice, milliseconds, while every access here costs a CMA call.
 * Sleeping leaves a core idle, which the agent then gets. Sleeps until the agent has taken
 * the request (it then moves the memory, or refuses, at once), at most as long as this
 * target's CMA traffic has cost so far (cost_ns). */
static void wait_taken(rma_ctl_rank_t *cr, uint64_t cost_ns)
{
    struct timespec t0, now, nap = {0, 10000};
    uint64_t waited = 0;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_load_explicit(&cr->move_addr, memory_order_acquire) != 0 && waited < cost_ns) {
        nanosleep(&nap, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
        waited = (uint64_t)((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec));
    }
}

void rma_expose_note(rma_win_t *win, int trank, uintptr_t taddr, size_t bytes, size_t region_len)
{
    rma_target_t *tg = &win->targets[trank];
    rma_ctl_rank_t *cr = rma_ctl_rank(win->ctl, trank);
    unsigned calls = atomic_load_explicit(&tg->nm.cma_calls, memory_order_relaxed);
    int fd;

    if (!rma_env.create_remap || trank == win->rank)
        return;
    if (tg->cma_budget == 0)
        tg->cma_budget = MOVE_FIXED_NS + region_len / 8;
    /* the calls the transport made since the last note (held transfers sent by a flush
     * among them), and this transfer */
    tg->cma_ns += (uint64_t)(calls - tg->cma_calls) * CMA_CALL_NS + CMA_PIECE_NS + bytes / 10;
    tg->cma_calls = calls;
    if (tg->cma_ns < tg->cma_budget)
        return;
    /* ask again only after as much traffic again: the owner may have refused the move */
    tg->cma_budget = 2 * tg->cma_ns;
    fd = atomic_load_explicit(&cr->agent_fd, memory_order_acquire);
    if (fd <= 0)
        return;
    atomic_store_explicit(&cr->move_addr, (uint64_t)taddr, memory_order_release);
    rma_agent_kick(tg->pid, fd);
    wait_taken(cr, tg->cma_ns);
}

/* Owner's agent: peers' CMA writes to us wait (nm_shm.c write_begin) from when none is in
 * flight until the pages are in place: only while they are copied, not while the move
 * looks at the mappings and allocates the segment. */
static void writers_hold(void *arg)
{
    rma_ctl_rank_t *me = arg;
    rma_backoff_t bo = RMA_BACKOFF_INIT;

    atomic_store_explicit(&me->moving, 1, memory_order_seq_cst);
    while (atomic_load_explicit(&me->cma_writers, memory_order_seq_cst) != 0)
        rma_backoff(&bo);
}

static void writers_release(void *arg)
{
    atomic_store_explicit(&((rma_ctl_rank_t *)arg)->moving, 0, memory_order_release);
}

/* Owner's agent: moves [addr, addr+len), peers' CMA writes held off while it copies. */
static rma_memreg_t *move_quiet(rma_ctl_rank_t *me, void *addr, size_t len)
{
    const rma_memreg_hold_t hold = {writers_hold, writers_release, me};

    return rma_memreg_move(addr, len, &hold);
}

void rma_expose_refresh(rma_win_t *win, int trank)
{
    rma_target_t *tg = &win->targets[trank];
    rma_ctl_rank_t *cr = rma_ctl_rank(win->ctl, trank);
    uint64_t s1 = atomic_load_explicit(&cr->expose_seq, memory_order_acquire), s2;
    rma_seg_desc_t desc;
    uintptr_t base;
    char *local;

    if (s1 == tg->expose_seen || (s1 & 1))
        return;
    pthread_mutex_lock(&win->mtx);
    if (tg->map_local != NULL)
        goto out;
    desc.pid = tg->pid;
    desc.fd = cr->expose_seg_fd;
    desc.len = cr->expose_seg_len;
    desc.seg_id = cr->expose_seg_id;
    base = (uintptr_t)cr->expose_seg_base;
    atomic_thread_fence(memory_order_acquire);
    s2 = atomic_load_explicit(&cr->expose_seq, memory_order_relaxed);
    if (s2 != s1)
        goto out; /* changing: look again next time */
    tg->expose_seen = s1;
    local = rma_seg_attach(&desc);
    if (local == NULL || tg->remote_base < base ||
        tg->remote_base + (uintptr_t)tg->size > base + desc.len) {
        if (local != NULL)
            rma_seg_detach(local, desc.len);
        goto out;
    }
    /* transfers held for the next flush go first: loads and stores must not overtake them */
    if (tg->nm.ops != NULL)
        (void)tg->nm.ops->release(&tg->nm); /* a failure stays with the target's flush */
    /* the inline path reads map_lo/map_len, then map_local: publish map_local first */
    tg->map_local = local;
    atomic_thread_fence(memory_order_release);
    tg->map_lo = base;
    __atomic_store_n(&tg->map_len, desc.len, __ATOMIC_RELEASE);
    if (rma_env.verbose >= 2)
        fprintf(stderr, "librma: window 0x%x: rank %d now reaches rank %d directly\n",
                (unsigned)win->handle, win->rank, trank);
out:
    pthread_mutex_unlock(&win->mtx);
}

/* Create windows: moves this rank's window memory and publishes it. */
static void serve_create(rma_win_t *win, rma_ctl_rank_t *me)
{
    rma_memreg_t *reg;

    if (win->expose != NULL || win->size == 0)
        return;
    reg = move_quiet(me, win->base, (size_t)win->size);
    if (reg == NULL)
        return;
    win->expose = reg;
    atomic_fetch_add_explicit(&me->expose_seq, 1, memory_order_acq_rel);
    me->expose_seg_id = reg->seg_id;
    me->expose_seg_base = reg->base;
    me->expose_seg_len = reg->len;
    me->expose_seg_fd = reg->fd;
    atomic_fetch_add_explicit(&me->expose_seq, 1, memory_order_release);
}

/* Dynamic windows: moves the attached region holding addr and updates its table entry. */
static void serve_dynamic(rma_win_t *win, rma_ctl_rank_t *me, uintptr_t addr)
{
    uint32_t n = atomic_load_explicit(&me->dyn_count, memory_order_relaxed);
    rma_dyn_region_t *r = NULL;
    rma_memreg_t *reg;
    uint32_t pos;

    for (pos = 0; pos < n; pos++)
        if (win->dyn_tab[pos].base <= addr && addr < win->dyn_tab[pos].base + win->dyn_tab[pos].len)
            break;
    if (pos == n || (r = &win->dyn_tab[pos])->seg_id != 0)
        return;
    reg = move_quiet(me, (void *)(uintptr_t)r->base, (size_t)r->len);
    if (reg == NULL)
        return;
    atomic_fetch_add_explicit(&me->dyn_seq, 1, memory_order_acq_rel);
    r->seg_id = reg->seg_id;
    r->seg_base = reg->base;
    r->seg_len = reg->len;
    r->seg_fd = reg->fd; /* r->atomic stays 0: peers keep taking stripe locks */
    atomic_fetch_add_explicit(&me->dyn_seq, 1, memory_order_release);
    win->dyn_regs[pos] = reg;
}

void rma_expose_serve(rma_win_t *win)
{
    rma_ctl_rank_t *me;
    uint64_t addr;

    if (!atomic_load_explicit(&win->expose_ready, memory_order_acquire))
        return;
    me = rma_ctl_rank(win->ctl, win->rank);
    addr = atomic_exchange_explicit(&me->move_addr, 0, memory_order_acq_rel);
    if (addr == 0)
        return;
    /* never wait for a window's mutex while holding the window table's lock: the thread
     * holding it may be in an error handler that creates or frees a window */
    if (pthread_mutex_trylock(&win->mtx) != 0) {
        atomic_store_explicit(&me->move_addr, addr, memory_order_release);
        rma_agent_retry();
        return;
    }
    if (win->flavor == MPI_WIN_FLAVOR_CREATE)
        serve_create(win, me);
    else if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC)
        serve_dynamic(win, me, (uintptr_t)addr);
    pthread_mutex_unlock(&win->mtx);
}
