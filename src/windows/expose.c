/*
 * expose.c - how window memory that peers reach through CMA becomes memory they map.
 *
 * MPI_Win_create and MPI_Win_attach cost no more than MPICH's: they never touch the pages.
 * Memory that is not shared already (an MPI_Alloc_mem block, pages a live window moved) is
 * reached by peers through cross-memory attach at first. Each origin counts what that
 * costs it per target; once the cost reaches what moving the region onto a shared segment
 * would cost, it asks the owner (move_addr in the owner's control slot, and a write to the
 * owner's agent doorbell). The owner's progress agent moves the pages under userfaultfd
 * write protection (memreg.c: no write of any thread is lost) and publishes the segment:
 * create windows in the owner's control slot under a sequence lock, dynamic windows in the
 * region table. Origins then map it, and their puts and gets take the inline path.
 *
 * The accumulate mode does not change when memory moves (doc/atomicity.md): a window or
 * region that started on CMA keeps taking stripe locks, now with loads and stores.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpid/rma/agent.h"
#include "mpid/rma/env.h"
#include "mpid/rma/grow.h"
#include "netmod/netmod.h"
#include "sync/ctl.h"
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

/* Origin: reaching target tg's memory (a window or region of region_len bytes) cost cost_ns
 * more. 1 when what it cost so far reached what moving that memory would cost: the owner
 * is to be asked now, and again only after as much traffic again (it may have refused).
 * Threads of this process note at once: each adds its cost, and one of them is told. */
static int move_paid(rma_target_t *tg, uint64_t cost_ns, size_t region_len)
{
    uint64_t first = MOVE_FIXED_NS + region_len / 8, budget = 0, ns;

    /* the budget in force: the one set here when there was none (a CAS that fails reads it),
     * so never 0; a cost_reset after this makes the CAS below fail */
    if (atomic_compare_exchange_strong_explicit(&tg->cma_budget, &budget, first,
                                                memory_order_relaxed, memory_order_relaxed))
        budget = first;
    ns = atomic_fetch_add_explicit(&tg->cma_ns, cost_ns, memory_order_relaxed) + cost_ns;
    return ns >= budget &&
           atomic_compare_exchange_strong_explicit(&tg->cma_budget, &budget, 2 * ns,
                                                   memory_order_relaxed, memory_order_relaxed);
}

/* The target's memory moved, or its regions changed: its traffic is counted afresh. */
static void cost_reset(rma_target_t *tg)
{
    atomic_store_explicit(&tg->cma_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&tg->cma_budget, 0, memory_order_relaxed);
}

void rma_expose_note(rma_win_t *win, int trank, uintptr_t taddr, size_t bytes, size_t region_len)
{
    rma_target_t *tg = &win->targets[trank];
    rma_ctl_rank_t *cr = rma_ctl_rank(win->ctl, trank);
    unsigned calls = atomic_load_explicit(&tg->nm.cma_calls, memory_order_relaxed),
             seen = atomic_load_explicit(&tg->cma_calls, memory_order_relaxed);
    int fd;

    if (!rma_env.create_remap || trank == win->rank)
        return;
    if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        /* a region attached, detached or moved since: its traffic is counted afresh, the
         * doubling kept for an owner that refused the same regions */
        uint64_t gen = atomic_load_explicit(&cr->dyn_seq, memory_order_acquire);
        if (atomic_exchange_explicit(&tg->cma_gen, gen, memory_order_relaxed) != gen)
            cost_reset(tg);
    }
    /* the calls the transport made since the last note (held transfers sent by a flush
     * among them), and this transfer; another thread's note may have counted ours */
    do {
        if ((int)(calls - seen) < 0) {
            seen = calls;
            break;
        }
    } while (!atomic_compare_exchange_weak_explicit(&tg->cma_calls, &seen, calls,
                                                    memory_order_relaxed, memory_order_relaxed));
    uint64_t cost = (uint64_t)(calls - seen) * CMA_CALL_NS + CMA_PIECE_NS + bytes / 10;
    if (!move_paid(tg, cost, region_len))
        return;
    fd = atomic_load_explicit(&cr->agent_fd, memory_order_acquire);
    if (fd <= 0)
        return;
    atomic_store_explicit(&cr->move_addr, (uint64_t)taddr, memory_order_release);
    rma_agent_kick(tg->pid, fd);
    wait_taken(cr, atomic_load_explicit(&tg->cma_ns, memory_order_relaxed));
}

void rma_expose_refresh(rma_win_t *win, int trank)
{
    rma_target_t *tg = &win->targets[trank];
    rma_ctl_rank_t *cr;
    uint64_t s1, s2;
    rma_seg_desc_t desc;
    uintptr_t base;
    char *local;

    if (win->flavor != MPI_WIN_FLAVOR_CREATE || !tg->local || tg->map_local != NULL)
        return; /* nothing its owner could move for us, or mapped already */
    cr = rma_ctl_rank(win->ctl, trank);
    s1 = atomic_load_explicit(&cr->expose_seq, memory_order_acquire);
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

    if (win->size == 0)
        return;
    if (win->expose != NULL) {
        /* on a block from UCX already (another window's moved pages): published once, for
         * off-node peers; anything else was published at creation */
        if (!win->net || win->expose->net == NULL ||
            atomic_load_explicit(&me->expose_seq, memory_order_relaxed) != 0)
            return;
        reg = win->expose;
    } else {
        /* a window with (only) off-node peers: onto a block from UCX (rma_expose_offer_net) */
        reg = rma_memreg_move(win->base, (size_t)win->size, win->net);
        if (reg == NULL)
            return;
        win->expose = reg;
    }
    atomic_fetch_add_explicit(&me->expose_seq, 1, memory_order_acq_rel);
    me->expose_seg_id = reg->seg_id;
    me->expose_seg_base = reg->base;
    me->expose_seg_len = reg->len;
    me->expose_seg_fd = reg->fd;
    atomic_fetch_add_explicit(&me->expose_seq, 1, memory_order_release);
    if (win->net && rma_env.verbose >= 2)
        fprintf(stderr, "librma: window 0x%x: rank %d moved its memory onto UCX's shared memory\n",
                (unsigned)win->handle, win->rank);
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
    /* a window with (only) off-node peers: onto a block from UCX, whose key the region's
     * table entry then sends them (win_dynamic.c dyn_serve) */
    reg = rma_memreg_move((void *)(uintptr_t)r->base, (size_t)r->len, win->net);
    if (reg == NULL)
        return;
    pthread_mutex_lock(&win->dyn_mtx); /* dyn_serve reads the entries under it */
    atomic_fetch_add_explicit(&me->dyn_seq, 1, memory_order_acq_rel);
    r->seg_id = reg->seg_id;
    r->seg_base = reg->base;
    r->seg_len = reg->len;
    r->seg_fd = reg->fd; /* r->atomic stays 0: peers keep taking stripe locks */
    win->dyn_regs[pos] = reg;
    atomic_fetch_add_explicit(&me->dyn_seq, 1, memory_order_release);
    pthread_mutex_unlock(&win->dyn_mtx);
    if (win->net && rma_env.verbose >= 2)
        fprintf(stderr,
                "librma: window 0x%x: rank %d moved region [0x%lx, +%lu) onto UCX's shared "
                "memory\n",
                (unsigned)win->handle, win->rank, (unsigned long)r->base, (unsigned long)r->len);
}

/* Moves are served until MPI_Finalize begins (rma_expose_end): the transport a move onto
 * its memory uses is about to end. */
static pthread_mutex_t serve_lock = PTHREAD_MUTEX_INITIALIZER;
static int serve_ended;

void rma_expose_end(void)
{
    pthread_mutex_lock(&serve_lock);
    serve_ended = 1;
    pthread_mutex_unlock(&serve_lock);
}

void rma_expose_serve(rma_win_t *win)
{
    rma_ctl_rank_t *me;
    uint64_t addr;

    if (!atomic_load_explicit(&win->expose_ready, memory_order_acquire))
        return;
    me = rma_ctl_rank(win->ctl, win->rank);
    addr = atomic_exchange_explicit(&me->move_addr, 0, memory_order_acq_rel);
    if (addr == 0 && atomic_load_explicit(&win->eager_n, memory_order_relaxed) == 0)
        return;
    /* never wait for a window's mutex while holding the window table's lock: the thread
     * holding it may be in an error handler that creates or frees a window */
    if (pthread_mutex_trylock(&win->mtx) != 0) {
        uint64_t none = 0; /* back, unless a newer ask took the slot */
        if (addr != 0)
            atomic_compare_exchange_strong_explicit(&me->move_addr, &none, addr,
                                                    memory_order_release, memory_order_relaxed);
        rma_agent_retry();
        return;
    }
    pthread_mutex_lock(&serve_lock);
    if (!serve_ended && win->flavor == MPI_WIN_FLAVOR_CREATE && addr != 0) {
        serve_create(win, me);
    } else if (!serve_ended && win->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        int n = atomic_load_explicit(&win->eager_n, memory_order_relaxed);
        if (addr != 0)
            serve_dynamic(win, me, (uintptr_t)addr);
        else if (n > 0) { /* one queued region a turn: a move holds the window's mutex */
            serve_dynamic(win, me, (uintptr_t)win->eager_q[0]);
            memmove(win->eager_q, win->eager_q + 1, (size_t)(n - 1) * sizeof(*win->eager_q));
            atomic_store_explicit(&win->eager_n, n - 1, memory_order_relaxed);
        }
        if (atomic_load_explicit(&win->eager_n, memory_order_relaxed) > 0)
            rma_agent_retry();
    }
    pthread_mutex_unlock(&serve_lock);
    pthread_mutex_unlock(&win->mtx);
}

void rma_expose_unqueue(rma_win_t *win, uintptr_t base, size_t len)
{
    int n = atomic_load_explicit(&win->eager_n, memory_order_relaxed), k = 0;

    for (int i = 0; i < n; i++)
        if (win->eager_q[i] < base || win->eager_q[i] - base >= len)
            win->eager_q[k++] = win->eager_q[i];
    atomic_store_explicit(&win->eager_n, k, memory_order_relaxed);
}

/* ------------------------------------------------------------------ off-node peers
 *
 * A process alone on its node (rma_locality_alone) has only off-node peers. Where UCX
 * reaches them through shared memory of one machine but not this process's malloc'd pages
 * (it emulates RDMA on them through the owner's worker, a round trip each), the owner's
 * agent moves a create window's pages onto a System V block from UCX (memreg.c), in place:
 * right after creation for a window of up to RMA_MOVE_EAGER bytes, else once an origin's
 * traffic has cost about what the move costs (it asks with an active message). The owner
 * publishes the move in its control slot, which these origins map; an origin that sees it
 * fetches the block's key (one active message) and maps the block (nm.data_map): its puts,
 * gets and accumulates become loads and stores, as on an MPI_Alloc_mem block from UCX.
 * A NIC among UCX's resources may have pinned the pages: then nothing moves
 * (rma_net->movable). While the owner copies, UCX's CMA writes from origins wait as
 * librma's own do (rma_nm_write_begin, on the owner's control words). The accumulate mode
 * stays LOCKED: the stripes, taken with CPU atomics on the mapped control segment. */

/* What an origin spends per operation UCX emulates: a round trip through the owner's
 * worker (~0.5 us here), and the flush that waits for it. */
#define NET_EMU_NS 1000u

enum { MOVE_ASK, MOVE_FETCH };

typedef struct move_req {
    uint64_t cookie; /* MOVE_FETCH: the origin's move_wait_t */
    int32_t win;     /* the owner's handle of the window ... */
    uint32_t serial; /* ... and its serial there */
    uint32_t kind;   /* MOVE_* */
    uint32_t pad;
    uint64_t addr; /* MOVE_ASK: an address of the memory to move (dynamic windows: of its
                      region) */
} move_req_t;

typedef struct move_reply {
    uint64_t cookie;
    int32_t err; /* 0, or errno: not moved (yet) */
    uint32_t pad;
    uint64_t base, len; /* the moved pages, in the owner's address space ... */
    uint64_t at;        /* ... and where the block's own mapping (its key's addresses) lies */
} move_reply_t;

typedef struct move_wait {
    _Atomic int left;
    move_reply_t r;
    void *blob;
} move_wait_t;

/* Owner: leaves addr (unless 0: only wakes it) for this process's agent, which moves the
 * memory holding it. */
static void ask_agent(rma_win_t *win, uint64_t addr)
{
    if (addr != 0)
        atomic_store_explicit(&rma_ctl_rank(win->ctl, win->rank)->move_addr, addr,
                              memory_order_release);
    rma_agent_retry();
    rma_agent_wake();
}

void rma_expose_offer_net(rma_win_t *win, void *addr, size_t len)
{
    int maps = 0;

    /* peers see the move, and hold off their CMA writes, through this rank's control words,
     * which they map when UCX allocated the segment (win_seg_from_ucx) */
    if (!rma_env.create_remap || len == 0 || !win->seg_ucx || !rma_locality_alone() ||
        !rma_net->movable())
        return;
    for (int t = 0; t < win->nranks; t++)
        maps |= !win->targets[t].local && win->targets[t].nm.maps;
    if (!maps) /* no peer would map it */
        return;
    rma_expose_offer(win);
    if (len > rma_env.move_eager || rma_agent_start() < 0)
        return;
    /* a dynamic window's regions queue for the agent (win->mtx held: MPI_Win_attach), and
     * the ask's slot is left to origins: with one slot, of regions attached one right after
     * another only the last was moved, since the agent takes the mutex only once the attach
     * is over */
    int n = atomic_load_explicit(&win->eager_n, memory_order_relaxed);
    if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC &&
        rma_grow(&win->eager_q, &win->eager_cap, n, sizeof(*win->eager_q), 4) == 0) {
        win->eager_q[n] = (uint64_t)(uintptr_t)addr;
        atomic_store_explicit(&win->eager_n, n + 1, memory_order_relaxed);
        addr = NULL; /* queued: the agent is only woken */
    }
    ask_agent(win, (uint64_t)(uintptr_t)addr);
}

/* Owner (a handler): an origin asks for the move (MOVE_ASK, left to the agent), or for the
 * key of the block the window's memory was moved onto (MOVE_FETCH). */
static void move_serve(const void *hdr, size_t hlen, const void *data, size_t len, void *reply_ep)
{
    const move_req_t *q = hdr;
    move_reply_t r = {0};
    const rma_memreg_t *reg;
    rma_win_t *win;

    (void)data, (void)len;
    if (hlen < sizeof(*q))
        return;
    win = rma_win_lookup((MPI_Win)q->win);
    if (win != NULL && (win->serial != q->serial || win->flavor == MPI_WIN_FLAVOR_ALLOCATE ||
                        !atomic_load_explicit(&win->expose_ready, memory_order_acquire)))
        win = NULL;
    if (q->kind == MOVE_ASK) {
        if (win != NULL && q->addr != 0)
            ask_agent(win, q->addr);
        return;
    }
    if (reply_ep == NULL)
        return;
    if (win != NULL && win->flavor != MPI_WIN_FLAVOR_CREATE)
        win = NULL;
    r.cookie = q->cookie;
    r.err = EAGAIN;
    /* the agent sets expose under the mutex: a thread holding it, ask again later */
    if (win != NULL && pthread_mutex_trylock(&win->mtx) == 0) {
        reg = win->expose;
        if (reg != NULL && reg->net != NULL) {
            r = (move_reply_t){q->cookie, 0, 0, reg->base, reg->len, reg->net_at};
            rma_net->am_reply(reply_ep, RMA_NM_AM_MOVE_REPLY, &r, sizeof(r), reg->net->blob,
                              reg->net->blob_len, RMA_NM_AM_COPY);
        }
        pthread_mutex_unlock(&win->mtx);
    }
    if (r.err != 0)
        rma_net->am_reply(reply_ep, RMA_NM_AM_MOVE_REPLY, &r, sizeof(r), NULL, 0, RMA_NM_AM_COPY);
}

/* Origin: the answer to MOVE_FETCH (inside rma_net->progress on this thread). */
static void move_answer(const void *hdr, size_t hlen, const void *data, size_t len, void *reply_ep)
{
    const move_reply_t *r = hdr;
    move_wait_t *w;

    (void)reply_ep;
    if (hlen < sizeof(*r))
        return;
    w = (move_wait_t *)(uintptr_t)r->cookie;
    w->r = *r;
    if (r->err == 0 && (len == 0 || (w->blob = malloc(len)) == NULL))
        w->r.err = ENOMEM;
    else if (r->err == 0)
        memcpy(w->blob, data, len);
    atomic_store_explicit(&w->left, 0, memory_order_release);
}

void rma_expose_net_init(void)
{
    rma_net->am_handler(RMA_NM_AM_MOVE_REQ, move_serve, NULL);
    rma_net->am_handler(RMA_NM_AM_MOVE_REPLY, move_answer, NULL);
}

/* Origin: maps the block the owner answered with, once what went to the owner before took
 * effect there (loads and stores must not overtake it). 0 or -errno. */
static int move_map(rma_win_t *win, int trank, const move_wait_t *w)
{
    rma_target_t *tg = &win->targets[trank];
    void *key = tg->nm.ops->key_open(&tg->nm, w->blob);
    char *map = NULL;
    int rc;

    if (key != NULL && tg->remote_base >= w->r.base &&
        tg->remote_base + (uintptr_t)tg->size <= w->r.base + w->r.len)
        map = tg->nm.ops->key_ptr(key, w->r.at + (tg->remote_base - w->r.base));
    if (map == NULL) {
        if (key != NULL)
            tg->nm.ops->key_close(key);
        return -EINVAL;
    }
    if ((rc = rma_ctl_flush(win, trank)) != 0) {
        tg->nm.ops->key_close(key);
        return rc;
    }
    pthread_mutex_lock(&win->mtx);
    if (tg->nm.data_map == NULL) {
        tg->move_key = key;
        __atomic_store_n(&tg->nm.data_map, map, __ATOMIC_RELEASE);
        key = NULL;
    }
    pthread_mutex_unlock(&win->mtx);
    if (key != NULL) /* another thread of ours mapped it meanwhile */
        tg->nm.ops->key_close(key);
    else if (rma_env.verbose >= 2)
        fprintf(stderr,
                "librma: window 0x%x: rank %d now reaches rank %d by UCX's shared mapping\n",
                (unsigned)win->handle, win->rank, trank);
    return 0;
}

/* Origin: fetches the key of the block the owner published and maps it. */
static void move_fetch(rma_win_t *win, int trank)
{
    rma_target_t *tg = &win->targets[trank];
    move_wait_t w = {.left = 1};
    move_req_t q = {
        (uint64_t)(uintptr_t)&w, (int32_t)tg->peer_win, tg->peer_serial, MOVE_FETCH, 0, 0};

    if (tg->nm.ops->am_send(&tg->nm, RMA_NM_AM_MOVE_REQ, &q, sizeof(q), NULL, 0, RMA_NM_AM_COPY) !=
        0)
        return; /* the transport reports a broken peer at the next operation */
    rma_net->wait_zero(&w.left);
    if (w.r.err == 0)
        (void)move_map(win, trank, &w); /* not mapped: the transport goes on as before */
    else if (w.r.err == EAGAIN)
        tg->expose_seen = 0; /* look again at the next operation */
    free(w.blob);
}

void rma_expose_note_net(rma_win_t *win, int trank, uintptr_t taddr, size_t bytes,
                         size_t region_len)
{
    rma_target_t *tg = &win->targets[trank];
    uint64_t seq;

    if (!rma_env.create_remap || win->flavor == MPI_WIN_FLAVOR_ALLOCATE || tg->local ||
        tg->nm.ops == NULL || !tg->nm.maps || tg->nm.data_map != NULL || tg->nm.dev_rma ||
        region_len == 0)
        return;
    /* the owner published a move in its control slot, mapped here: a create window's in
     * expose_seq (the block's key is fetched), a dynamic window's in its region table's
     * generation (the table is fetched again at the next access, not only the next epoch) */
    if (tg->nm.ctl_map != NULL) {
        size_t off = win->flavor == MPI_WIN_FLAVOR_CREATE ? RMA_CTL_OFF(win, trank, expose_seq)
                                                          : RMA_CTL_OFF(win, trank, dyn_seq);
        seq =
            atomic_load_explicit((_Atomic uint64_t *)(tg->nm.ctl_map + off), memory_order_acquire);
        if (seq != 0 && !(seq & 1) && seq != tg->expose_seen) {
            tg->expose_seen = seq;
            cost_reset(tg); /* as rma_expose_note */
            if (win->flavor == MPI_WIN_FLAVOR_CREATE)
                move_fetch(win, trank);
            else if (rma_ctl_flush(win, trank) == 0) /* the table maps it when quiet */
                rma_win_dyn_recheck(win, trank);
            return;
        }
    }
    if (!move_paid(tg, NET_EMU_NS + bytes / 10, region_len))
        return;
    move_req_t q = {0, (int32_t)tg->peer_win, tg->peer_serial, MOVE_ASK, 0, (uint64_t)taddr};
    (void)tg->nm.ops->am_send(&tg->nm, RMA_NM_AM_MOVE_REQ, &q, sizeof(q), NULL, 0, RMA_NM_AM_COPY);
}
