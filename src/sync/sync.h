/*
 * sync.h - epochs: fence, post/start/complete/wait/test, lock/unlock(_all), flush, sync.
 *
 * Operations on same-node targets complete when the call that issued them returns (they
 * are loads, stores and process_vm_* calls), so completing an epoch is a memory fence plus
 * telling the peers; the flushes are memory fences. Every function returns MPI_SUCCESS or
 * the error code its window's handler produced (the error is raised inside).
 */
#ifndef RMA_SYNC_H
#define RMA_SYNC_H

#include <stdatomic.h>

#include "mpid/rma/rma.h"
#include "windows/win.h"
#include "windows/win_error.h"

int rma_sync_barrier(rma_win_t *win);
int rma_fence(rma_win_t *win, int assert);
int rma_post(rma_win_t *win, MPI_Group group, int assert);
int rma_start(rma_win_t *win, MPI_Group group, int assert);
int rma_complete(rma_win_t *win);
/* Origin in a PSCW access epoch: waits for target t's post (MPI_Win_start returned without
 * it) and opens access to t. */
void rma_pscw_wait_post(rma_win_t *win, int t);
int rma_wait(rma_win_t *win);
int rma_test(rma_win_t *win, int *flag);
int rma_lock(rma_win_t *win, int lock_type, int rank, int assert);
int rma_unlock(rma_win_t *win, int rank);
/* A shared lock on this process's own window memory for whoever serves an off-node
 * origin's request here (mpid/rma/hx.c): one attempt of the lock protocol, 1 when taken, 0
 * when an exclusive lock is held or wanted (try again later); and its release. */
int rma_lock_shared_here(rma_win_t *win);
void rma_unlock_shared_here(rma_win_t *win);
int rma_lock_all(rma_win_t *win, int assert);
int rma_unlock_all(rma_win_t *win);
/* MPI_ERR_RMA_SYNC (raised) when the window is inside an epoch MPI_Win_free must not see. */
int rma_sync_check_free(rma_win_t *win);
/* Ends a fence epoch that has no operations so that another epoch can open. */
int rma_sync_leave_fence(rma_win_t *win, const char *func);

/* Out of line: why a flush was refused (rank RMA_FLUSH_ALL for the _all forms). */
#define RMA_FLUSH_ALL (-0x7fff)
int rma_flush_error(rma_win_t *win, int rank, const char *func);
/* Out of line: completes at the target what was issued to off-node targets. */
int rma_flush_net(rma_win_t *win, int rank, const char *func);

/* MPI_Win_flush (local 0): all operations to `rank` are complete, locally and at the target,
 * once the preceding stores are globally ordered. MPI_Win_flush_local (local 1): they are
 * complete at the origin (buffers may be reused, gets have landed); same node that is every
 * operation once issued, off node only a marked one (rma_nm_need_local) needs the flush. */
static inline int rma_flush_one(rma_win_t *win, int rank, const char *func, int local)
{
    rma_nm_tgt_t *nm;

    if (rma_unlikely((unsigned)rank >= (unsigned)win->nranks ||
                     !(win->epoch == RMA_EPOCH_LOCK_ALL || win->targets[rank].lock_type)))
        return rma_flush_error(win, rank, func);
    rma_xfer_drain(win); /* copies the agent makes for request-based operations */
    atomic_thread_fence(memory_order_seq_cst);
    nm = &win->targets[rank].nm;
    if (rma_unlikely(local ? rma_nm_local_due(nm) : rma_nm_flush_due(nm)))
        return rma_flush_net(win, rank, func);
    return MPI_SUCCESS;
}

static inline int rma_flush(rma_win_t *win, int rank, const char *func)
{
    return rma_flush_one(win, rank, func, 0);
}

static inline int rma_flush_local(rma_win_t *win, int rank, const char *func)
{
    return rma_flush_one(win, rank, func, 1);
}

/* Out of line: MPI_Win_flush_local_all once something went off node. */
int rma_flush_local_net_all(rma_win_t *win, const char *func);

/* MPI_Win_flush_all (local 0) / flush_local_all (1), as rma_flush_one for every target. */
static inline int rma_flush_every(rma_win_t *win, const char *func, int local)
{
    if (rma_unlikely(win->epoch != RMA_EPOCH_LOCK_ALL && win->epoch != RMA_EPOCH_LOCK))
        return rma_flush_error(win, RMA_FLUSH_ALL, func);
    rma_xfer_drain(win);
    atomic_thread_fence(memory_order_seq_cst);
    /* a flush_all of another thread may have taken net_dirty and still be flushing */
    if (rma_unlikely(atomic_load_explicit(&win->net_dirty, memory_order_acquire) ||
                     atomic_load_explicit(&win->flushing_all, memory_order_acquire)))
        return local ? rma_flush_local_net_all(win, func) : rma_flush_net(win, RMA_FLUSH_ALL, func);
    return MPI_SUCCESS;
}

static inline int rma_flush_all(rma_win_t *win, const char *func)
{
    return rma_flush_every(win, func, 0);
}

static inline int rma_flush_local_all(rma_win_t *win, const char *func)
{
    return rma_flush_every(win, func, 1);
}

/* MPI_Win_sync: public and private copies agree (one copy in the unified model). */
static inline int rma_win_sync(rma_win_t *win)
{
    (void)win;
    atomic_thread_fence(memory_order_seq_cst);
    return MPI_SUCCESS;
}

#endif
