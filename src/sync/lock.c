/*
 * lock.c - passive target synchronization: lock, unlock, lock_all, unlock_all, and why a
 * flush is refused.
 *
 * Each target's lock word lives in the control segment (rma_ctl_rank_t.lock): bit 63 is
 * the exclusive holder, the low bits count shared holders. Locks are taken eagerly, so an
 * unlocked target can run without ever entering MPI (passive target progress).
 */
#include "sync/sync.h"
#include "sync/wait.h"

static void lock_acquire(rma_win_t *win, int rank, int lock_type)
{
    _Atomic uint64_t *w = &rma_ctl_rank(win->ctl, rank)->lock;
    rma_backoff_t bo = RMA_BACKOFF_INIT;

    if (lock_type == MPI_LOCK_EXCLUSIVE) {
        for (;;) {
            uint64_t expect = 0;
            if (atomic_compare_exchange_weak_explicit(w, &expect, RMA_LOCK_EXCL,
                                                      memory_order_acquire, memory_order_relaxed))
                return;
            rma_backoff(&bo);
        }
    }
    for (;;) {
        if (!(atomic_fetch_add_explicit(w, 1, memory_order_acquire) & RMA_LOCK_EXCL))
            return;
        atomic_fetch_sub_explicit(w, 1, memory_order_relaxed);
        while (atomic_load_explicit(w, memory_order_relaxed) & RMA_LOCK_EXCL)
            rma_backoff(&bo);
    }
}

static void lock_release(rma_win_t *win, int rank, int lock_type)
{
    _Atomic uint64_t *w = &rma_ctl_rank(win->ctl, rank)->lock;

    /* exclusive release subtracts its bit: shared lockers may be passing through */
    atomic_fetch_sub_explicit(w, lock_type == MPI_LOCK_EXCLUSIVE ? RMA_LOCK_EXCL : 1,
                              memory_order_release);
}

int rma_lock(rma_win_t *win, int lock_type, int rank, int assert)
{
    static const char func[] = "MPI_Win_lock";
    rma_target_t *tg;
    int rc;

    if (lock_type != MPI_LOCK_SHARED && lock_type != MPI_LOCK_EXCLUSIVE)
        return rma_err(win, func, MPI_ERR_LOCKTYPE,
                       "lock type %d is neither MPI_LOCK_SHARED "
                       "nor MPI_LOCK_EXCLUSIVE",
                       lock_type);
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
                       "the window was created with the info key "
                       "no_locks=true");
    tg = &win->targets[rank];
    if (tg->lock_type)
        return rma_err(win, func, MPI_ERR_RMA_SYNC, "rank %d is already locked by this process",
                       rank);
    if (win->epoch == RMA_EPOCH_PSCW || win->epoch == RMA_EPOCH_LOCK_ALL)
        return rma_err(win, func, MPI_ERR_RMA_SYNC, "a %s epoch is open on this window",
                       win->epoch == RMA_EPOCH_PSCW ? "post-start-complete-wait access"
                                                    : "lock_all");
    rc = rma_sync_leave_fence(win, func);
    if (rc != MPI_SUCCESS)
        return rc;
    tg->lock_nocheck = (assert &MPI_MODE_NOCHECK) != 0;
    if (!tg->lock_nocheck)
        lock_acquire(win, rank, lock_type);
    tg->lock_type = (uint8_t)lock_type;
    tg->access = 1;
    win->nlocks++;
    win->epoch = RMA_EPOCH_LOCK;
    return MPI_SUCCESS;
}

int rma_unlock(rma_win_t *win, int rank)
{
    static const char func[] = "MPI_Win_unlock";
    rma_target_t *tg;

    if (rank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if ((unsigned)rank >= (unsigned)win->nranks)
        return rma_err(win, func, MPI_ERR_RANK, "rank %d is not in the window's group of %d", rank,
                       win->nranks);
    tg = &win->targets[rank];
    if (win->epoch != RMA_EPOCH_LOCK || !tg->lock_type)
        return rma_err(win, func, MPI_ERR_RMA_SYNC, "rank %d is not locked by this process", rank);
    atomic_thread_fence(memory_order_seq_cst);
    if (!tg->lock_nocheck)
        lock_release(win, rank, tg->lock_type);
    tg->lock_type = 0;
    tg->access = 0;
    if (--win->nlocks == 0)
        win->epoch = RMA_EPOCH_NONE;
    return MPI_SUCCESS;
}

int rma_lock_all(rma_win_t *win, int assert)
{
    static const char func[] = "MPI_Win_lock_all";
    int rc;

    if (assert & ~MPI_MODE_NOCHECK)
        return rma_err(win, func, MPI_ERR_ASSERT, "assert 0x%x is not valid for lock_all",
                       (unsigned)assert);
    if (win->info.no_locks)
        return rma_err(win, func, MPI_ERR_RMA_SYNC,
                       "the window was created with the info key "
                       "no_locks=true");
    if (win->epoch != RMA_EPOCH_NONE && win->epoch != RMA_EPOCH_FENCE)
        return rma_err(win, func, MPI_ERR_RMA_SYNC, "an access epoch is already open");
    rc = rma_sync_leave_fence(win, func);
    if (rc != MPI_SUCCESS)
        return rc;
    win->lock_all_nocheck = (assert &MPI_MODE_NOCHECK) != 0;
    if (!win->lock_all_nocheck)
        for (int t = 0; t < win->nranks; t++)
            lock_acquire(win, t, MPI_LOCK_SHARED);
    win->epoch = RMA_EPOCH_LOCK_ALL;
    win->all_access = 1;
    return MPI_SUCCESS;
}

int rma_unlock_all(rma_win_t *win)
{
    if (win->epoch != RMA_EPOCH_LOCK_ALL)
        return rma_err(win, "MPI_Win_unlock_all", MPI_ERR_RMA_SYNC,
                       "no MPI_Win_lock_all epoch is open");
    atomic_thread_fence(memory_order_seq_cst);
    if (!win->lock_all_nocheck)
        for (int t = 0; t < win->nranks; t++)
            lock_release(win, t, MPI_LOCK_SHARED);
    win->lock_all_nocheck = 0;
    win->epoch = RMA_EPOCH_NONE;
    win->all_access = 0;
    return MPI_SUCCESS;
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
