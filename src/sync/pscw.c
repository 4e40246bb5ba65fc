/*
 * pscw.c - general active target synchronization: post, start, complete, wait, test.
 *
 * post[origin][target] counts the MPI_Win_post calls of `target` that named `origin`; it
 * lives in the origin's node's control segment (the origin reads it there; an off-node
 * target adds to it with a network atomic). An origin consumes one post of each target of
 * its start group (post_seen counts consumed posts) - lazily: MPI_Win_start returns at
 * once, and the first operation to a target, or MPI_Win_complete, waits for its post (with
 * MPI_MODE_NOCHECK the post was made: it is consumed at once, unseen). Each
 * target's complete_cnt, in the target's node, counts MPI_Win_complete calls aimed at it;
 * wait/test compare it with the number of origins its posts named. All counters only grow,
 * so epochs match in order without resets. The same protocol serves both kinds of origin
 * (sync/ctl.h).
 */
#include <sched.h>
#include <stdlib.h>

#include "sync/ctl.h"
#include "sync/sync.h"
#include "sync/wait.h"

#define PSCW_ASSERTS (MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT)

/* Window ranks of the members of group, into ranks[]; returns their number or -1. */
static int group_ranks(rma_win_t *win, MPI_Group group, int *ranks)
{
    int n, *in;

    if (group == MPI_GROUP_NULL || PMPI_Group_size(group, &n) != MPI_SUCCESS || n > win->nranks)
        return -1;
    if (n == 0)
        return 0;
    in = malloc((size_t)n * sizeof(*in));
    if (in == NULL)
        return -1;
    for (int i = 0; i < n; i++)
        in[i] = i;
    PMPI_Group_translate_ranks(group, n, in, win->group, ranks);
    free(in);
    for (int i = 0; i < n; i++)
        if (ranks[i] == MPI_UNDEFINED)
            return -1;
    return n;
}

int rma_post(rma_win_t *win, MPI_Group group, int assert)
{
    static const char func[] = "MPI_Win_post";
    int *ranks, n, rc;

    if (assert & ~PSCW_ASSERTS)
        return rma_err(win, func, MPI_ERR_ASSERT, "assert 0x%x is not valid for post",
                       (unsigned)assert);
    if (win->exposure_open)
        return rma_err(win, func, MPI_ERR_RMA_SYNC, "an exposure epoch is already open");
    ranks = malloc((size_t)win->nranks * sizeof(*ranks));
    if (ranks == NULL)
        return rma_err(win, func, MPI_ERR_NO_MEM, "out of memory");
    n = group_ranks(win, group, ranks);
    if (n < 0) {
        free(ranks);
        return rma_err(win, func, MPI_ERR_GROUP, "the group is not a subgroup of the window");
    }
    /* only a call that goes ahead ends a fence epoch */
    if ((rc = rma_sync_leave_fence(win, func)) != MPI_SUCCESS) {
        free(ranks);
        return rc;
    }
    atomic_thread_fence(memory_order_seq_cst);
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
        /* a post must not wait for our next call */
        int o = ranks[i], nrc = rma_ctl_announce(win, o, rma_ctl_off_post(win, o, win->rank), 1);
        win->posts_pushed |= !win->targets[o].local;
        if (nrc != 0)
            rc = rma_ctl_fail(win, func, o, nrc);
    }
    free(ranks);
    if (rc != MPI_SUCCESS)
        return rc;
    win->complete_expected += (uint64_t)n;
    win->exposure_open = 1;
    return MPI_SUCCESS;
}

int rma_start(rma_win_t *win, MPI_Group group, int assert)
{
    static const char func[] = "MPI_Win_start";
    int n, rc;

    if (assert & ~MPI_MODE_NOCHECK)
        return rma_err(win, func, MPI_ERR_ASSERT, "assert 0x%x is not valid for start",
                       (unsigned)assert);
    if (win->epoch != RMA_EPOCH_NONE && win->epoch != RMA_EPOCH_FENCE)
        return rma_err(win, func, MPI_ERR_RMA_SYNC, "an access epoch is already open");
    n = group_ranks(win, group, win->start_ranks); /* unused until the epoch starts */
    if (n < 0)
        return rma_err(win, func, MPI_ERR_GROUP, "the group is not a subgroup of the window");
    if ((rc = rma_sync_leave_fence(win, func)) != MPI_SUCCESS) /* as for a post */
        return rc;
    for (int i = 0; i < n; i++) {
        int t = win->start_ranks[i];
        if (assert & MPI_MODE_NOCHECK) { /* its post was made: consumed, not waited for */
            win->post_seen[t]++;
            win->targets[t].access = 1;
        } else
            win->targets[t].start_pending = 1; /* rma_pscw_wait_post, when needed */
    }
    win->sync_gen++;
    win->nstart = n;
    win->epoch = RMA_EPOCH_PSCW;
    return MPI_SUCCESS;
}

/* Several threads may use one access epoch (MPI_THREAD_MULTIPLE): the first to need the
 * post consumes it, and the others wait until it has, so that one epoch counts one post. */
void rma_pscw_wait_post(rma_win_t *win, int t)
{
    _Atomic uint64_t *p = rma_ctl_post(win->ctl, win->targets[win->rank].lidx, t);
    rma_target_t *tg = &win->targets[t];
    rma_backoff_t bo = RMA_BACKOFF_INIT;
    uint8_t pending = 1;

    if (!atomic_compare_exchange_strong(&tg->start_pending, &pending, 2)) {
        while (atomic_load_explicit(&tg->start_pending, memory_order_acquire) != 0) {
            rma_ctl_progress(win);
            rma_backoff(&bo);
        }
        return;
    }
    while ((int64_t)(atomic_load_explicit(p, memory_order_acquire) - win->post_seen[t]) <= 0) {
        rma_ctl_progress(win);
        rma_backoff(&bo);
    }
    win->post_seen[t]++;
    __atomic_store_n(&tg->access, 1, __ATOMIC_RELEASE); /* read by other threads' rma_xfer */
    atomic_store_explicit(&tg->start_pending, 0, memory_order_release);
}

int rma_complete(rma_win_t *win)
{
    int rc = MPI_SUCCESS;

    if (win->epoch != RMA_EPOCH_PSCW)
        return rma_err(win, "MPI_Win_complete", MPI_ERR_RMA_SYNC,
                       "no access epoch was opened with MPI_Win_start");
    atomic_thread_fence(memory_order_seq_cst);
    for (int i = 0; i < win->nstart; i++) {
        int t = win->start_ranks[i], nrc;
        if (win->targets[t].start_pending)
            rma_pscw_wait_post(win, t);
        /* the target counts us once our operations took effect there; we need only our
         * side complete (MPI_Win_wait tells the target), so nobody waits for its answer */
        nrc = rma_ctl_notify_sent(win, t, RMA_CTL_OFF(win, t, complete_cnt), 1);
        if (nrc != 0 && rc == MPI_SUCCESS)
            rc = rma_ctl_fail(win, "MPI_Win_complete", t, nrc);
        win->targets[t].access = 0;
    }
    win->nstart = 0;
    win->epoch = RMA_EPOCH_NONE;
    return rc;
}

static int exposure_done(rma_win_t *win)
{
    return atomic_load_explicit(&rma_ctl_rank(win->ctl, win->rank)->complete_cnt,
                                memory_order_acquire) >= win->complete_expected;
}

int rma_wait(rma_win_t *win)
{
    rma_backoff_t bo = RMA_BACKOFF_INIT;

    if (!win->exposure_open)
        return rma_err(win, "MPI_Win_wait", MPI_ERR_RMA_SYNC,
                       "no exposure epoch was opened with MPI_Win_post");
    while (!exposure_done(win)) {
        rma_ctl_progress(win);
        rma_backoff(&bo);
    }
    win->exposure_open = 0;
    return MPI_SUCCESS;
}

int rma_test(rma_win_t *win, int *flag)
{
    if (!win->exposure_open)
        return rma_err(win, "MPI_Win_test", MPI_ERR_RMA_SYNC,
                       "no exposure epoch was opened with MPI_Win_post");
    rma_ctl_progress(win);
    *flag = exposure_done(win);
    if (*flag)
        win->exposure_open = 0;
    else
        sched_yield(); /* callers poll in a loop: let the origins we wait for run */
    return MPI_SUCCESS;
}
