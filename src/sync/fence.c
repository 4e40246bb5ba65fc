/*
 * fence.c - MPI_Win_fence and the window's shared-memory barrier.
 */

#include "sync/ctl.h"
#include "sync/sync.h"
#include "sync/wait.h"

/* Barrier on the control segments. Every rank adds one to its own cache line in every other
 * node's segment (a network atomic through one rank of each node, which takes effect after
 * our operations there: barrier_order), then publishes its barrier count on its line of its
 * own node's segment (only then: a rank of our node that sees it may leave and read any
 * node), then waits until every rank's count in its own node's segment reaches it: one
 * store, one atomic per other node and n-1 local reads, no contended read-modify-write.
 * Large single-node groups: a central counter, whose last arrival advances the round the
 * others wait on. */
#define FLAG_BARRIER_MAX 32

/* Our arrival may count anywhere only once our operations took effect on every node: a
 * rank that sees it leaves the fence and may read any target, our own memory too (where
 * our gets' data lands). So the first off-node target with operations outstanding and no
 * data still to come from it carries the arrival to its node, a notification that
 * completes them (rma_ctl_notify: one round trip where the transport keeps issue order);
 * every other target is flushed first, and the carrier's node is notified before any
 * other. In a window of two ranks nobody else can read the carrier, which leaves only
 * after our arrival took effect there: the arrival need not be waited for (one message
 * each way per fence, rma_ctl_notify_sent). Returns the carrier in *via, or -1 (then each
 * node's first rank takes it). */
static int barrier_order(rma_win_t *win, const char *func, int *via)
{
    *via = -1;
    if (!atomic_exchange_explicit(&win->net_dirty, 0, memory_order_acq_rel))
        return MPI_SUCCESS;
    rma_win_net_issued(win); /* the carrier's operations are left to its notification */
    for (int t = 0; t < win->nranks; t++) {
        rma_target_t *tg = &win->targets[t];
        int rc = 0;
        if (!rma_nm_pending(&tg->nm) || (tg->nm.ordered && rma_nm_quiet(&tg->nm)))
            continue; /* notifications alone: they need no flush (sync/ctl.h) */
        /* not a carrier while the data of our gets is still to land here: it must land
         * before anyone hears of our arrival (it may write our own window memory). That is
         * host-assisted answers on their way (fetches_out), and what is not complete here
         * yet (local_due): gets held back for the target's flush, UCX's own gets */
        if (!tg->local && *via < 0 && !rma_nm_fetches_out(&tg->nm) && !rma_nm_local_due(&tg->nm))
            *via = t;
        else if ((rc = rma_ctl_flush(win, t)) != 0)
            return rma_ctl_fail(win, func, t, rc);
    }
    return MPI_SUCCESS;
}

int rma_sync_barrier(rma_win_t *win)
{
    rma_ctl_t *ctl = win->ctl;
    rma_backoff_t bo = RMA_BACKOFF_INIT;
    uint64_t epoch = ++win->bar_epoch;
    int rc, via = -1;

    /* our operations complete first, whichever barrier: the held cross-memory transfers of
     * a large single-node group too */
    if ((rc = barrier_order(win, "MPI_Win_fence", &via)) != MPI_SUCCESS)
        return rc;
    if (win->nranks <= FLAG_BARRIER_MAX || win->nreps > 0) {
        for (int k = 0, first = via >= 0 ? win->targets[via].node : 0; k < win->nreps; k++) {
            int i = (first + k) % win->nreps; /* the carrier's node first */
            int r = i == first && via >= 0 ? via : win->reps[i];
            /* The carrier's must have taken effect before any other node hears of us,
             * unless the carrier is the only other rank. The rest need only be on their
             * way: we may leave first and never drive the network again. */
            size_t off = RMA_CTL_OFF(win, win->rank, bar_epoch);
            rc = r == via && win->nranks > 2 ? rma_ctl_notify(win, r, off, 1)
                                             : rma_ctl_notify_sent(win, r, off, 1);
            if (rc != 0)
                return rma_ctl_fail(win, "MPI_Win_fence", r, rc);
        }
        /* last: a rank of our node that sees it may leave and read any node */
        atomic_store_explicit(&rma_ctl_rank(ctl, win->rank)->bar_epoch, epoch,
                              memory_order_release);
        for (int t = 0; t < win->nranks; t++) {
            _Atomic uint64_t *e = &rma_ctl_rank(ctl, t)->bar_epoch;
            while (atomic_load_explicit(e, memory_order_acquire) < epoch) {
                rma_ctl_progress(win);
                rma_backoff(&bo);
            }
        }
        return MPI_SUCCESS;
    }
    uint64_t round = atomic_load_explicit(&ctl->bar_round, memory_order_acquire);
    if (atomic_fetch_add_explicit(&ctl->bar_count, 1, memory_order_acq_rel) ==
        (uint64_t)win->nranks - 1) {
        atomic_store_explicit(&ctl->bar_count, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&ctl->bar_round, 1, memory_order_release);
        return MPI_SUCCESS;
    }
    while (atomic_load_explicit(&ctl->bar_round, memory_order_acquire) == round) {
        rma_ctl_progress(win);
        rma_backoff(&bo);
    }
    return MPI_SUCCESS;
}

#define FENCE_ASSERTS (MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED)

int rma_fence(rma_win_t *win, int assert)
{
    static const char func[] = "MPI_Win_fence";

    if (assert & ~FENCE_ASSERTS)
        return rma_err(win, func, MPI_ERR_ASSERT,
                       "assert 0x%x has bits that are not fence "
                       "assertions",
                       (unsigned)assert);
    if (win->epoch != RMA_EPOCH_NONE && win->epoch != RMA_EPOCH_FENCE)
        return rma_err(win, func, MPI_ERR_RMA_SYNC, "a %s epoch is open on this window",
                       win->epoch == RMA_EPOCH_PSCW ? "post-start-complete-wait access"
                                                    : "passive target (lock)");
    if (win->exposure_open)
        return rma_err(win, func, MPI_ERR_RMA_SYNC,
                       "an exposure epoch opened by MPI_Win_post is still open");
    atomic_thread_fence(memory_order_seq_cst);
    int rc = rma_sync_barrier(win);
    if (rc != MPI_SUCCESS)
        return rc;
    if (assert & MPI_MODE_NOSUCCEED) {
        win->epoch = RMA_EPOCH_NONE;
        win->all_access = 0;
    } else {
        win->epoch = RMA_EPOCH_FENCE;
        win->all_access = 1;
    }
    win->sync_gen++;
    win->ops_in_fence = 0;
    return MPI_SUCCESS;
}

int rma_sync_check_free(rma_win_t *win)
{
    static const char func[] = "MPI_Win_free";

    if ((win->epoch == RMA_EPOCH_FENCE && win->ops_in_fence) ||
        (win->epoch != RMA_EPOCH_NONE && win->epoch != RMA_EPOCH_FENCE) || win->exposure_open)
        return rma_err(win, func, MPI_ERR_RMA_SYNC,
                       "the window is inside an epoch (close it with a fence, "
                       "MPI_Win_complete/MPI_Win_wait or an unlock first)");
    return MPI_SUCCESS;
}

/* Opening a lock or PSCW epoch right after a fence is allowed when no operation was issued
 * since that fence: the fence epoch simply ends. */
int rma_sync_leave_fence(rma_win_t *win, const char *func)
{
    if (win->epoch != RMA_EPOCH_FENCE)
        return MPI_SUCCESS;
    if (win->ops_in_fence)
        return rma_err(win, func, MPI_ERR_RMA_SYNC,
                       "operations were issued in the open fence "
                       "epoch; end it with MPI_Win_fence first");
    win->epoch = RMA_EPOCH_NONE;
    win->all_access = 0;
    return MPI_SUCCESS;
}
