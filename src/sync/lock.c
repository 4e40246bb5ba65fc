/*
 * lock.c - passive target synchronization: lock, unlock, lock_all, unlock_all, and why a
 * flush is refused.
 *
 * Each target's lock word lives in the control segment (rma_ctl_rank_t.lock): bit 63 is
 * the exclusive holder, the low bits count shared holders. Locks are taken eagerly, so an
 * unlocked target can run without ever entering MPI (passive target progress).
 */
#include <stdlib.h>

#include "mpid/rma/env.h"
#include "mpid/rma/grow.h"
#include "mpid/rma/hx.h"
#include "mpid/rma/rma.h"
#include "sync/ctl.h"
#include "sync/sync.h"
#include "sync/wait.h"

/* The lock protocol, written once over sync/ctl.h: a same-node origin runs it with CPU
 * atomics on the mapped word, an off-node one with network atomics (no target CPU).
 *
 * Target t's word: shared lockers add 1 and step back while the word shows an exclusive
 * holder or an exclusive locker waiting (so a stream of shared lockers cannot starve an
 * exclusive one); an exclusive locker first tries 0 -> EXCL, else registers as a waiter and
 * takes the word when no holder is left and no waiter that has waited long wants it
 * (lock_exclusive). The window's global word at rank 0 (lock_g) makes lock_all one atomic:
 * lock_all counts itself there and steps back while exclusive locks are held or wanted, as
 * a waiter; an exclusive locker counts itself there first, steps back while a lock_all
 * waits (so a stream of exclusive lockers cannot starve it), and waits for running lock_all
 * epochs to end (foMPI's two-level scheme, with waiters both ways). Every call returns 0
 * or -errno. */

/* the lock word's fields (win.h) lie side by side, none over another */
_Static_assert(RMA_LOCK_SHARED == RMA_LOCK_URGENT - 1 &&
                   RMA_LOCK_URGENTS == RMA_LOCK_WAITER - RMA_LOCK_URGENT &&
                   RMA_LOCK_EXCL > RMA_LOCK_WAITER && (RMA_LOCK_EXCL & (RMA_LOCK_EXCL - 1)) == 0,
               "lock word fields overlap");

#define LOCK_OFF(win, t) RMA_CTL_OFF(win, t, lock)
#define LOCKG_OFF(win)   RMA_CTL_OFF(win, 0, lock_g)
#define NEG(v)           ((uint64_t)0 - (v))
#define SHARED_BUSY      (RMA_LOCK_EXCL | ~RMA_LOCK_SHARED) /* a shared locker steps back */

/* Waits until (word & mask) == 0, backing off; the network moves meanwhile. */
static int word_wait_clear(rma_win_t *win, int t, size_t off, uint64_t mask)
{
    rma_backoff_t bo = RMA_BACKOFF_INIT;
    uint64_t v;
    int rc;

    while ((rc = rma_ctl_load(win, t, off, &v)) == 0 && (v & mask) != 0) {
        rma_ctl_progress(win);
        rma_backoff(&bo);
    }
    return rc;
}

/* One attempt: counts us at the word, or steps back when it shows (word & busy). 1 when
 * taken, 0 when not, -errno. The step back waits for its old value, which completes it
 * without a flush (a flush would send what aggregation holds: lazy_open). */
static int lock_shared_try(rma_win_t *win, int t, size_t off, uint64_t busy)
{
    uint64_t old;
    int rc;

    if ((rc = rma_ctl_fadd(win, t, off, 1, &old)) != 0)
        return rc;
    if (!(old & busy))
        return 1;
    return (rc = rma_ctl_fadd(win, t, off, NEG(1), &old)) != 0 ? rc : 0;
}

static int lock_shared(rma_win_t *win, int t, size_t off, uint64_t busy)
{
    int rc;

    while ((rc = lock_shared_try(win, t, off, busy)) == 0)
        if ((rc = word_wait_clear(win, t, off, busy)) != 0)
            return rc;
    return rc < 0 ? rc : 0;
}

int rma_lock_shared_here(rma_win_t *win)
{
    return lock_shared_try(win, win->rank, LOCK_OFF(win, win->rank), SHARED_BUSY) == 1;
}

void rma_unlock_shared_here(rma_win_t *win)
{
    rma_ctl_add(win, win->rank, LOCK_OFF(win, win->rank), NEG(1)); /* our word: a CPU atomic */
}

/* An exclusive locker that finds the word busy counts itself as a waiter, and waiters
 * race for the word when it is free. The race favours lockers on the target's node, whose
 * polls are CPU loads, and remote waiters waited hundreds of milliseconds. So a remote
 * waiter that has waited RMA_LOCK_URGENT_NS while no other was urgent counts itself as
 * urgent instead, and the other waiters step aside (and new lockers wait as they do) until
 * no urgent one is left: its turn comes about that long after it asked. Waiters on the
 * target's node race as fast as anyone and never turn urgent: the lock would wait for
 * their next poll after they lost their core. A strict queue (a ticket lock) would bound
 * every wait too, but hands the lock to a waiter that may not be running, and with more
 * ranks than cores the lock sat idle. Measurements: doc/protocols.md, Locks. */
#define RMA_LOCK_URGENT_NS 1000000u

static int lock_exclusive(rma_win_t *win, int t)
{
    size_t off = LOCK_OFF(win, t);
    rma_backoff_t bo = RMA_BACKOFF_INIT;
    uint64_t v, seen, as = RMA_LOCK_WAITER, since;
    int rc;

    if ((rc = rma_ctl_cas(win, t, off, 0, RMA_LOCK_EXCL, &seen)) != 0 || seen == 0)
        return rc;
    if ((rc = rma_ctl_fadd(win, t, off, RMA_LOCK_WAITER, &v)) != 0)
        return rc;
    v += RMA_LOCK_WAITER;
    since = rma_ctl_local(win, t, off) == NULL ? rma_now_ns() : 0; /* 0: never urgent */
    for (;;) {
        if (!(v & RMA_LOCK_EXCL) && (v & RMA_LOCK_SHARED) == 0 &&
            (as == RMA_LOCK_URGENT || (v & RMA_LOCK_URGENTS) == 0)) {
            if ((rc = rma_ctl_cas(win, t, off, v, v - as + RMA_LOCK_EXCL, &seen)) != 0)
                return rc;
            if (seen == v)
                return 0;
            v = seen;
            continue;
        }
        if (since != 0 && as == RMA_LOCK_WAITER && (v & RMA_LOCK_URGENTS) == 0 &&
            rma_now_ns() - since >= RMA_LOCK_URGENT_NS) {
            if ((rc = rma_ctl_fadd(win, t, off, RMA_LOCK_URGENT - RMA_LOCK_WAITER, &v)) != 0)
                return rc;
            v += RMA_LOCK_URGENT - RMA_LOCK_WAITER;
            as = RMA_LOCK_URGENT;
            continue;
        }
        rma_ctl_progress(win);
        rma_backoff(&bo);
        if ((rc = rma_ctl_load(win, t, off, &v)) != 0)
            return rc;
    }
}

/* holds_excl: this process holds an exclusive lock on the window already; it does not step
 * back for a waiting lock_all, which waits for that lock (a process that locks targets in
 * one order must not deadlock with a lock_all: MPI_Win_lock_all is not ordered). */
static int lock_acquire(rma_win_t *win, int rank, int lock_type, int holds_excl)
{
    uint64_t old;
    int rc;

    if (lock_type == MPI_LOCK_SHARED)
        return lock_shared(win, rank, LOCK_OFF(win, rank), SHARED_BUSY);
    /* count ourselves at the global word, after any lock_all that waits there ... */
    while ((rc = rma_ctl_fadd(win, 0, LOCKG_OFF(win), RMA_LOCKG_EXCL, &old)) == 0 &&
           (old & RMA_LOCKG_WAITS) != 0 && !holds_excl)
        if ((rc = rma_ctl_fadd(win, 0, LOCKG_OFF(win), NEG(RMA_LOCKG_EXCL), &old)) != 0 ||
            (rc = word_wait_clear(win, 0, LOCKG_OFF(win), RMA_LOCKG_WAITS)) != 0)
            return rc;
    if (rc != 0)
        return rc;
    /* ... then wait for running lock_all epochs to drain */
    if ((old & RMA_LOCKG_ALL) != 0 && (rc = word_wait_clear(win, 0, LOCKG_OFF(win), RMA_LOCKG_ALL)))
        return rc;
    return lock_exclusive(win, rank);
}

/* ------------------------------------------------------------------ lazy shared locks
 *
 * To a target whose puts and gets need its worker anyway (rma_nm_served: tcp alone, where
 * UCX's atomics on the lock word are active messages too, a round trip each; or window
 * memory on which UCX emulates RDMA), lock and unlock cost atomics around an epoch that
 * one request to the target's agent can carry whole. So MPI_Win_lock(SHARED)
 * there only sets the target's gate (netmod.h). If nothing else leaves for the target,
 * MPI_Win_unlock sends what is held as one request flagged RMA_HX_F_SHARED: the target's
 * agent takes the shared lock next to the memory (rma_lock_shared_here, the same protocol
 * on the same word), serves it, releases the lock and answers - the epoch in one round
 * trip. Anything that leaves for the target before (an operation not held back, a flush,
 * puts and gets together) opens the gate first: the lock is taken as an eager one is, and
 * the epoch goes on as one.
 *
 * Locks are taken in the order the program asks for them. A program that locks several
 * targets in one order everywhere cannot deadlock where MPI_Win_lock blocks; lazy locks
 * taken at their first operation would follow the operations' order instead (rank 0:
 * lock(1, shared, lazy), lock(2, exclusive), a put to 2, then a put to 1 waits for rank 2's
 * exclusive lock on 1, while rank 2 waits in lock(2) for rank 0's). So a lock is left for
 * later only while it is the process's one lock on the window (win->lazy_armed), and the
 * next MPI_Win_lock that takes a lock word takes it first. */

enum { LAZY_ARMED, LAZY_OPENING, LAZY_OPEN };

typedef struct rma_lazy_lock {
    rma_nm_gate_t gate; /* first: the gate's open finds the lock */
    rma_win_t *win;
    int rank;
    _Atomic int state; /* LAZY_* */
    int rc;            /* the opening's result, once LAZY_OPEN */
} lazy_lock_t;

/* The gate this thread opens: what it sends to the target meanwhile passes. */
static __thread lazy_lock_t *lazy_mine;

/* Takes the lock of l, which this thread moved to LAZY_OPENING. */
static int lazy_take(lazy_lock_t *l)
{
    rma_win_t *win = l->win;
    int rc;

    lazy_mine = l;
    rc = lock_shared(win, l->rank, LOCK_OFF(win, l->rank), SHARED_BUSY);
    lazy_mine = NULL;
    l->rc = rc;
    atomic_store_explicit(&win->targets[l->rank].nm.gate, NULL, memory_order_release);
    atomic_store_explicit(&l->state, LAZY_OPEN, memory_order_release);
    return rc; /* l may be freed from here on (lazy_release) */
}

/* Waits for another thread of ours to take l's lock. */
static void lazy_wait_open(lazy_lock_t *l)
{
    rma_backoff_t bo = RMA_BACKOFF_INIT;

    while (atomic_load_explicit(&l->state, memory_order_acquire) != LAZY_OPEN) {
        rma_ctl_progress(l->win);
        rma_backoff(&bo);
    }
}

static int lazy_open(rma_nm_gate_t *g)
{
    lazy_lock_t *l = (lazy_lock_t *)g;
    int armed = LAZY_ARMED;

    if (lazy_mine == l)
        return 0;
    if (atomic_compare_exchange_strong(&l->state, &armed, LAZY_OPENING))
        return lazy_take(l);
    lazy_wait_open(l);
    return l->rc;
}

/* MPI_Win_lock is about to take a lock word (win->mtx held): the lock left for later, if it
 * still is, to be taken first by this thread (lazy_take, without win->mtx), or NULL. */
static lazy_lock_t *lazy_claim(rma_win_t *win)
{
    lazy_lock_t *l = win->lazy_armed;
    int armed = LAZY_ARMED;

    win->lazy_armed = NULL;
    if (l == NULL || atomic_compare_exchange_strong(&l->state, &armed, LAZY_OPENING))
        return l;
    lazy_wait_open(l); /* taken, or being taken on another thread's way (no win->mtx there) */
    return NULL;
}

/* MPI_Win_lock(SHARED) on target t: 1 when the lock is left for later, 0 when it is to be
 * taken now. */
static int lazy_arm(rma_win_t *win, int t)
{
    rma_target_t *tg = &win->targets[t];
    lazy_lock_t *l;

    if (!rma_env.lock_lazy || win->nlocks > 0 || win->locks_pending > 0 || tg->local ||
        tg->nm.ops == NULL || !rma_nm_served(&tg->nm) || tg->nm.aggregate == 0 ||
        (l = malloc(sizeof(*l))) == NULL)
        return 0;
    *l = (lazy_lock_t){.gate = {lazy_open}, .win = win, .rank = t};
    tg->lazy = l;
    win->lazy_armed = l;
    atomic_store_explicit(&tg->nm.gate, &l->gate, memory_order_release);
    return 1;
}

/* MPI_Win_unlock of a lock left for later: the epoch as one request (or nothing, when it
 * had no operation), answered on return. 0: released; 1: the lock is held now (it was
 * taken on the way, or here because the epoch is not one request), the caller releases it;
 * or -errno (then the lock is not held). */
static int lazy_release(rma_win_t *win, int t)
{
    rma_target_t *tg = &win->targets[t];
    lazy_lock_t *l = tg->lazy;
    int armed = LAZY_ARMED, rc;

    tg->lazy = NULL;
    if (win->lazy_armed == l)
        win->lazy_armed = NULL;
    if (atomic_compare_exchange_strong(&l->state, &armed, LAZY_OPENING)) {
        lazy_mine = l;
        rc = rma_hx_agg_shared(win, t);
        if (rc == 0)
            rc = rma_ctl_flush(win, t); /* the answer: served and released at the target */
        else if (rc == 1 && (rc = lock_shared(win, t, LOCK_OFF(win, t), SHARED_BUSY)) == 0)
            rc = 1;
        lazy_mine = NULL;
        atomic_store_explicit(&tg->nm.gate, NULL, memory_order_release);
    } else {
        /* taken on the way (lazy_open, a flush_all of another thread's epoch, a later lock:
         * lazy_claim): its result, and the record, once it is done */
        lazy_wait_open(l);
        rc = l->rc == 0 ? 1 : l->rc;
    }
    free(l);
    return rc;
}

/* Releases a lock; operations to the target take effect there first. */
static int lock_release(rma_win_t *win, int rank, int lock_type)
{
    int rc;

    if (lock_type == MPI_LOCK_SHARED) {
        if (win->targets[rank].lazy != NULL && (rc = lazy_release(win, rank)) != 1)
            return rc;
        return rma_ctl_notify(win, rank, LOCK_OFF(win, rank), NEG(1));
    }
    /* exclusive release subtracts its bit (shared lockers may be passing through), then
     * our count at the global word, after which lock_all epochs reach the target: our
     * operations there must have taken effect by then */
    if (rank != 0) {
        rc = rma_ctl_notify(win, rank, LOCK_OFF(win, rank), NEG(RMA_LOCK_EXCL));
        return rc != 0 ? rc : rma_ctl_notify(win, 0, LOCKG_OFF(win), NEG(RMA_LOCKG_EXCL));
    }
    /* both words at rank 0: one completion covers them */
    if ((rc = rma_ctl_order(win, 0)) != 0 ||
        (rc = rma_ctl_add(win, 0, LOCK_OFF(win, 0), NEG(RMA_LOCK_EXCL))) != 0)
        return rc;
    return rma_ctl_signal(win, 0, LOCKG_OFF(win), NEG(RMA_LOCKG_EXCL));
}

/* Counted as a holder at once where no exclusive lock is held or wanted; else counted as a
 * waiter (one add steps back and registers), which exclusive lockers that come later let
 * go first, until none is left (one add turns the waiter into a holder, or back again
 * when an exclusive locker counted itself before it saw the waiter). */
static int lock_all_acquire(rma_win_t *win)
{
    size_t off = LOCKG_OFF(win);
    uint64_t old;
    int rc;

    if ((rc = rma_ctl_fadd(win, 0, off, 1, &old)) != 0 || !(old & RMA_LOCKG_EXCLS))
        return rc;
    do {
        if ((rc = rma_ctl_fadd(win, 0, off, RMA_LOCKG_WAIT - 1, &old)) != 0)
            return rc;
        if ((rc = word_wait_clear(win, 0, off, RMA_LOCKG_EXCLS)) != 0) {
            (void)rma_ctl_fadd(win, 0, off, NEG(RMA_LOCKG_WAIT), &old); /* if it still can */
            return rc;
        }
        if ((rc = rma_ctl_fadd(win, 0, off, 1 - RMA_LOCKG_WAIT, &old)) != 0)
            return rc;
    } while (old & RMA_LOCKG_EXCLS);
    return 0;
}

/* Every off-node target's operations are complete there (flush_all, unlock_all). */
static int flush_net_all(rma_win_t *win)
{
    int t;

    return rma_ctl_flush_all(win, &t);
}

static int lock_all_release(rma_win_t *win)
{
    int t, rc = rma_ctl_flush_all_but(win, 0, &t);

    return rc != 0 ? rc : rma_ctl_notify(win, 0, LOCKG_OFF(win), NEG(1));
}

/* ------------------------------------------------------------------ threads
 *
 * Lock state is per process (MPI-4 12.5), but under MPI_THREAD_MULTIPLE several threads may
 * open passive target epochs on one window. Threads of one process act like origins of
 * their own towards each other: a thread whose lock conflicts with another thread's epoch
 * waits for it (two shared locks, or two lock_all epochs, share the process's hold); a
 * thread that asks again for what it holds itself gets MPI_ERR_RMA_SYNC. The epoch is the
 * process's, so any thread may end it: an unlock takes the calling thread's hold, or another
 * thread's. win->mtx guards the process's state and the list of holds; nobody holds it
 * while waiting for a lock word. */

typedef struct rma_held_lock {
    pthread_t thread;
    int rank; /* -1: lock_all */
} held_lock_t;

/* This thread's hold of rank (-1: lock_all) on win, or -1. */
static int held_find(const rma_win_t *win, int rank)
{
    pthread_t self = pthread_self();

    for (int i = 0; i < win->nheld; i++)
        if (win->held[i].rank == rank && pthread_equal(win->held[i].thread, self))
            return i;
    return -1;
}

/* 1 when this thread is inside an epoch of win: a lock on any target, or lock_all. */
static int held_any(const rma_win_t *win)
{
    pthread_t self = pthread_self();

    for (int i = 0; i < win->nheld; i++)
        if (pthread_equal(win->held[i].thread, self))
            return 1;
    return 0;
}

static int held_add(rma_win_t *win, int rank)
{
    if (rma_grow(&win->held, &win->held_cap, win->nheld, sizeof(*win->held), 4) != 0)
        return -1;
    win->held[win->nheld++] = (held_lock_t){pthread_self(), rank};
    return 0;
}

/* Ends a hold of rank (-1: lock_all): this thread's, else another thread's. */
static void held_remove(rma_win_t *win, int rank)
{
    int i = held_find(win, rank);

    for (int k = 0; i < 0 && k < win->nheld; k++)
        if (win->held[k].rank == rank)
            i = k;
    if (i >= 0)
        win->held[i] = win->held[--win->nheld];
}

/* win->mtx around the process's lock state, where several threads may call MPI at once
 * (win->mt). Below MPI_THREAD_MULTIPLE one thread at a time runs this file (the agent never
 * does: it takes the target's lock word alone), and the mutex's atomics were 40% of a
 * same-node lock epoch. */
static inline void state_lock(rma_win_t *win)
{
    if (win->mt)
        pthread_mutex_lock(&win->mtx);
}

static inline void state_unlock(rma_win_t *win)
{
    if (win->mt)
        pthread_mutex_unlock(&win->mtx);
}

/* Waits for another thread's epoch to change (win->mtx held on entry and on return). */
static void thread_wait(rma_win_t *win, rma_backoff_t *bo)
{
    state_unlock(win);
    rma_backoff(bo);
    state_lock(win);
}

/* ------------------------------------------------------------------ MPI_Win_lock / unlock */

int rma_lock(rma_win_t *win, int lock_type, int rank, int assert)
{
    static const char func[] = "MPI_Win_lock";
    rma_backoff_t bo = RMA_BACKOFF_INIT;
    rma_target_t *tg;
    int rc = MPI_SUCCESS;

    if (lock_type != MPI_LOCK_SHARED && lock_type != MPI_LOCK_EXCLUSIVE)
        return rma_err(win, func, MPI_ERR_LOCKTYPE,
                       "lock type %d is neither MPI_LOCK_SHARED nor MPI_LOCK_EXCLUSIVE", lock_type);
    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if ((unsigned)rank >= (unsigned)win->nranks)
        return rma_err(win, func, MPI_ERR_RANK, "rank %d is not in the window's group of %d", rank,
                       win->nranks);
    if (assert & ~MPI_MODE_NOCHECK)
        return rma_err(win, func, MPI_ERR_ASSERT, "assert 0x%x is not valid for lock",
                       (unsigned)assert);
    if (win->info.no_locks)
        return rma_err(win, func, MPI_ERR_RMA_SYNC,
                       "the window was created with the info key no_locks=true");
    tg = &win->targets[rank];
    state_lock(win);
    for (;;) {
        if (held_find(win, rank) >= 0) {
            rc = rma_err(win, func, MPI_ERR_RMA_SYNC, "this thread already holds a lock on rank %d",
                         rank);
            goto out;
        }
        if (win->epoch == RMA_EPOCH_PSCW || (win->epoch == RMA_EPOCH_LOCK_ALL && held_any(win))) {
            rc = rma_err(win, func, MPI_ERR_RMA_SYNC, "a %s epoch is open on this window",
                         win->epoch == RMA_EPOCH_PSCW ? "post-start-complete-wait access"
                                                      : "lock_all");
            goto out;
        }
        if (win->epoch == RMA_EPOCH_LOCK_ALL || win->lock_all_pending || tg->lock_pending ||
            (tg->lock_holders > 0 &&
             (lock_type == MPI_LOCK_EXCLUSIVE || tg->lock_type == MPI_LOCK_EXCLUSIVE ||
              tg->lock_nocheck != ((assert &MPI_MODE_NOCHECK) != 0)))) {
            thread_wait(win, &bo); /* another thread's epoch */
            continue;
        }
        break;
    }
    if (held_add(win, rank) != 0) {
        rc = rma_err(win, func, MPI_ERR_NO_MEM, "out of memory");
        goto out;
    }
    if (tg->lock_holders > 0) { /* join another thread's shared lock */
        tg->lock_holders++;
        goto out;
    }
    rc = rma_sync_leave_fence(win, func);
    if (rc != MPI_SUCCESS) {
        held_remove(win, rank);
        goto out;
    }
    tg->lock_nocheck = (assert &MPI_MODE_NOCHECK) != 0;
    if (!tg->lock_nocheck && !(lock_type == MPI_LOCK_SHARED && lazy_arm(win, rank))) {
        lazy_lock_t *first = lazy_claim(win); /* taken in the order asked for */
        int frank = first != NULL ? first->rank : rank, lrc = 0, holds = win->nexcl > 0;
        tg->lock_pending = 1;
        win->locks_pending++;
        state_unlock(win);
        if (first != NULL)
            lrc = lazy_take(first);
        if (lrc == 0) {
            frank = rank;
            lrc = lock_acquire(win, rank, lock_type, holds);
        }
        state_lock(win);
        win->locks_pending--;
        tg->lock_pending = 0;
        if (lrc != 0) {
            held_remove(win, rank);
            rc = rma_ctl_fail(win, func, frank, lrc);
            goto out;
        }
    }
    tg->lock_type = (uint8_t)lock_type;
    tg->lock_holders = 1;
    win->nexcl += lock_type == MPI_LOCK_EXCLUSIVE && !tg->lock_nocheck;
    win->sync_gen++;
    tg->access = 1;
    win->nlocks++;
    win->epoch = RMA_EPOCH_LOCK;
out:
    state_unlock(win);
    return rc;
}

int rma_unlock(rma_win_t *win, int rank)
{
    static const char func[] = "MPI_Win_unlock";
    rma_target_t *tg;
    int rc = MPI_SUCCESS;

    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if ((unsigned)rank >= (unsigned)win->nranks)
        return rma_err(win, func, MPI_ERR_RANK, "rank %d is not in the window's group of %d", rank,
                       win->nranks);
    tg = &win->targets[rank];
    rma_xfer_drain(win); /* the agent's copies for request-based operations (rma.h) */
    state_lock(win);
    if (win->epoch != RMA_EPOCH_LOCK || tg->lock_holders == 0) {
        rc = rma_err(win, func, MPI_ERR_RMA_SYNC, "rank %d is not locked by this process", rank);
        goto out;
    }
    held_remove(win, rank);
    atomic_thread_fence(memory_order_seq_cst);
    if (--tg->lock_holders > 0) {
        /* another thread still holds the process's lock: this thread's operations must
         * still be complete at the target when its unlock returns */
        int frc = rma_ctl_flush(win, rank);
        if (frc != 0)
            rc = rma_ctl_fail(win, func, rank, frc);
        goto out;
    }
    int lrc = tg->lock_nocheck ? rma_ctl_flush(win, rank) : lock_release(win, rank, tg->lock_type);
    if (lrc != 0)
        rc = rma_ctl_fail(win, func, rank, lrc);
    win->nexcl -= tg->lock_type == MPI_LOCK_EXCLUSIVE && !tg->lock_nocheck;
    tg->lock_type = 0;
    tg->access = 0;
    if (--win->nlocks == 0)
        win->epoch = RMA_EPOCH_NONE;
out:
    state_unlock(win);
    return rc;
}

/* ------------------------------------------------------------------ lock_all */

int rma_lock_all(rma_win_t *win, int assert)
{
    static const char func[] = "MPI_Win_lock_all";
    rma_backoff_t bo = RMA_BACKOFF_INIT;
    int rc = MPI_SUCCESS, nocheck = (assert &MPI_MODE_NOCHECK) != 0;

    if (assert & ~MPI_MODE_NOCHECK)
        return rma_err(win, func, MPI_ERR_ASSERT, "assert 0x%x is not valid for lock_all",
                       (unsigned)assert);
    if (win->info.no_locks)
        return rma_err(win, func, MPI_ERR_RMA_SYNC,
                       "the window was created with the info key no_locks=true");
    state_lock(win);
    for (;;) {
        if (held_any(win) || win->epoch == RMA_EPOCH_PSCW) {
            rc = rma_err(win, func, MPI_ERR_RMA_SYNC, "an access epoch is already open");
            goto out;
        }
        if (win->epoch == RMA_EPOCH_LOCK || win->lock_all_pending || win->locks_pending > 0 ||
            (win->epoch == RMA_EPOCH_LOCK_ALL && win->lock_all_nocheck != nocheck)) {
            thread_wait(win, &bo); /* other threads' epochs */
            continue;
        }
        break;
    }
    if (held_add(win, -1) != 0) {
        rc = rma_err(win, func, MPI_ERR_NO_MEM, "out of memory");
        goto out;
    }
    if (win->epoch == RMA_EPOCH_LOCK_ALL) { /* join another thread's lock_all */
        win->lock_all_holders++;
        goto out;
    }
    rc = rma_sync_leave_fence(win, func);
    if (rc != MPI_SUCCESS) {
        held_remove(win, -1);
        goto out;
    }
    win->lock_all_nocheck = nocheck;
    if (!nocheck) {
        win->lock_all_pending = 1;
        state_unlock(win);
        int lrc = lock_all_acquire(win);
        state_lock(win);
        win->lock_all_pending = 0;
        if (lrc != 0) {
            held_remove(win, -1);
            rc = rma_ctl_fail(win, func, 0, lrc);
            goto out;
        }
    }
    win->sync_gen++;
    win->lock_all_holders = 1;
    win->epoch = RMA_EPOCH_LOCK_ALL;
    win->all_access = 1;
out:
    state_unlock(win);
    return rc;
}

int rma_unlock_all(rma_win_t *win)
{
    int rc = MPI_SUCCESS;

    rma_xfer_drain(win); /* the agent's copies for request-based operations (rma.h) */
    state_lock(win);
    if (win->epoch != RMA_EPOCH_LOCK_ALL) {
        rc = rma_err(win, "MPI_Win_unlock_all", MPI_ERR_RMA_SYNC,
                     "no MPI_Win_lock_all epoch is open");
        goto out;
    }
    held_remove(win, -1);
    atomic_thread_fence(memory_order_seq_cst);
    if (--win->lock_all_holders > 0) { /* as in rma_unlock */
        int frc = flush_net_all(win);
        if (frc != 0)
            rc = rma_ctl_fail(win, "MPI_Win_unlock_all", 0, frc);
        goto out;
    }
    int lrc = win->lock_all_nocheck ? flush_net_all(win) : lock_all_release(win);
    if (lrc != 0)
        rc = rma_ctl_fail(win, "MPI_Win_unlock_all", 0, lrc);
    win->lock_all_nocheck = 0;
    win->epoch = RMA_EPOCH_NONE;
    win->all_access = 0;
out:
    state_unlock(win);
    return rc;
}

int rma_flush_error(rma_win_t *win, int rank, const char *func)
{
    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (rank == RMA_FLUSH_ALL)
        return rma_err(win, func, MPI_ERR_RMA_SYNC,
                       "no passive target epoch (lock or lock_all) is open");
    if ((unsigned)rank >= (unsigned)win->nranks)
        return rma_err(win, func, MPI_ERR_RANK, "rank %d is not in the window's group of %d", rank,
                       win->nranks);
    return rma_err(win, func, MPI_ERR_RMA_SYNC,
                   "rank %d is not in a passive target epoch (lock or lock_all)", rank);
}

int rma_flush_local_net_all(rma_win_t *win, const char *func)
{
    for (int t = 0; t < win->nranks; t++)
        if (rma_nm_local_due(&win->targets[t].nm))
            return rma_flush_net(win, RMA_FLUSH_ALL, func);
    return MPI_SUCCESS;
}

int rma_flush_net(rma_win_t *win, int rank, const char *func)
{
    int t = rank,
        rc = rank == RMA_FLUSH_ALL ? rma_ctl_flush_all(win, &t) : rma_ctl_flush(win, rank);

    return rc == 0 ? MPI_SUCCESS : rma_ctl_fail(win, func, t, rc);
}
