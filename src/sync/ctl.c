/*
 * ctl.c - the network half of sync/ctl.h: control words of off-node targets.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "mpid/rma/hx.h"
#include "sync/ctl.h"
#include "windows/win_error.h"

int rma_ctl_net_amo(rma_win_t *win, int t, size_t off, int op, unsigned size, uint64_t value,
                    uint64_t compare, uint64_t *fetched)
{
    rma_nm_tgt_t *nm = &win->targets[t].nm;
    int rc;

    if (nm->ops == NULL || nm->ctl_key == NULL)
        return -ENOTCONN;
    rc = nm->ops->amo(nm, nm->ctl_key, op, size, nm->ctl_raddr + off, value, compare, fetched);
    if (fetched == NULL) /* only issued: rma_ctl_flush_all must look at it */
        rma_win_net_issued(win);
    return rc;
}

int rma_ctl_flush_all_but(rma_win_t *win, int via, int *failed)
{
    int rc = 0;

    /* counted before the flag is taken: a thread that finds the flag clear because another
     * thread's flush_all took it, and that flush_all still under way, flushes every target
     * itself (each target's flush waits for what was issued to it before), rather than
     * return before the other thread reached the target of its own operations */
    atomic_fetch_add_explicit(&win->flushing_all, 1, memory_order_acq_rel);
    /* cleared first: an operation issued from here on sets it again (rma_win_net_issued) */
    if (!atomic_exchange_explicit(&win->net_dirty, 0, memory_order_acq_rel) &&
        atomic_load_explicit(&win->flushing_all, memory_order_acquire) == 1)
        goto out;
    if (via >= 0 && rma_nm_pending(&win->targets[via].nm))
        rma_win_net_issued(win); /* via is left to its notification */
    for (int t = 0; t < win->nranks && rc == 0; t++) {
        if (t != via && (rc = rma_ctl_flush(win, t)) != 0) {
            *failed = t;
            rma_win_net_issued(win); /* the targets after t were not looked at */
        }
    }
out:
    atomic_fetch_sub_explicit(&win->flushing_all, 1, memory_order_release);
    return rc;
}

int rma_ctl_flush_all(rma_win_t *win, int *failed)
{
    return rma_ctl_flush_all_but(win, -1, failed);
}

int rma_ctl_order(rma_win_t *win, int t)
{
    rma_nm_tgt_t *nm = &win->targets[t].nm;

    return rma_nm_pending(nm) ? nm->ops->order(nm) : 0;
}

/* Where t applies what we issue in order: sends the notification (the add, or the
 * request it rides on: ride) and waits for its answer, which came after everything issued
 * before took effect. 0, 1 when ride found nothing to ride on (nothing was sent), -errno. */
static int signal_ordered(rma_win_t *win, int t, size_t off, uint64_t v, int ride)
{
    rma_nm_tgt_t *nm = &win->targets[t].nm;
    unsigned seen = atomic_load_explicit(&nm->issued, memory_order_acquire);
    unsigned ep = atomic_load_explicit(&nm->ep_ops, memory_order_acquire);
    uint64_t old;
    int rc = ride ? rma_hx_agg_notify(win, t, off, v, 0) : rma_ctl_fadd(win, t, off, v, &old);

    if (rc == 0 && (rc = nm->ops->settle(nm)) == 0) {
        rma_nm_flushed(nm, seen);
        rma_nm_covered(&nm->ep_flushed, ep);
    }
    return rc;
}

int rma_ctl_signal(rma_win_t *win, int t, size_t off, uint64_t v)
{
    rma_nm_tgt_t *nm = &win->targets[t].nm;
    int rc;

    if (!nm->ordered) {
        rc = rma_ctl_add(win, t, off, v);
        return rc != 0 ? rc : rma_ctl_flush(win, t);
    }
    return signal_ordered(win, t, off, v, 0);
}

int rma_ctl_notify(rma_win_t *win, int t, size_t off, uint64_t v)
{
    rma_nm_tgt_t *nm = &win->targets[t].nm;
    int rc;

    /* no accumulate or rendezvous transfer may take effect after the notification */
    if (nm->ordered && !win->targets[t].local &&
        atomic_load_explicit(&nm->hx_unordered, memory_order_acquire) == 0 &&
        (rc = signal_ordered(win, t, off, v, 1)) != 1)
        return rc;
    rc = rma_ctl_order(win, t);
    return rc != 0 ? rc : rma_ctl_signal(win, t, off, v);
}

/* 1 when t applies this process's requests in issue order and UCX emulates its atomics
 * with active messages anyway (tcp alone): a notification that nobody waits for goes as a
 * request the target's agent does not answer (mpid/rma/hx.h RMA_HX_F_QUIET). */
static int note_quiet(const rma_win_t *win, int t)
{
    return !win->targets[t].local && win->targets[t].nm.am_rma;
}

int rma_ctl_announce(rma_win_t *win, int t, size_t off, uint64_t v)
{
    rma_nm_tgt_t *nm = &win->targets[t].nm;
    int quiet = rma_nm_quiet(nm), rc = note_quiet(win, t) ? rma_hx_notify_quiet(win, t, off, v) : 1;

    if (rc == 1) /* UCX's atomic: acknowledged, which a flush waits for */
        rc = rma_ctl_add(win, t, off, v);

    if (rc == 0 && !win->targets[t].local)
        rc = rma_ctl_push(win, t);
    if (rc == 0 && quiet) {
        atomic_store_explicit(&nm->ep_noted,
                              atomic_load_explicit(&nm->ep_ops, memory_order_acquire),
                              memory_order_relaxed);
        atomic_store_explicit(&nm->noted, atomic_load_explicit(&nm->issued, memory_order_acquire),
                              memory_order_release);
    }
    return rc;
}

int rma_ctl_notify_sent(rma_win_t *win, int t, size_t off, uint64_t v)
{
    rma_nm_tgt_t *nm = &win->targets[t].nm;
    unsigned ep;
    int out, rc;

    /* where UCX handed something to the kernel's socket, it is on its way; elsewhere
     * the notification is waited for (doc/protocols.md, Notifications) */
    if (win->targets[t].local || !nm->ordered)
        return rma_ctl_notify(win, t, off, v);
    if (rma_nm_quiet(nm)) /* nothing of ours to go before it (held ones count as issued) */
        return rma_ctl_announce(win, t, off, v);
    /* in issue order behind what we issued, all of which is complete here already: only
     * puts' acknowledgements may be outstanding (no get's data), no endpoint operation but
     * notifications, and no gets are held */
    out = atomic_load_explicit(&nm->hx_out, memory_order_acquire); /* first: acks fall */
    ep = atomic_load_explicit(&nm->ep_ops, memory_order_acquire);
    if (atomic_load_explicit(&nm->hx_unordered, memory_order_acquire) > 0 ||
        out > atomic_load_explicit(&nm->hx_acks, memory_order_acquire) ||
        (ep != atomic_load_explicit(&nm->ep_flushed, memory_order_acquire) &&
         ep != atomic_load_explicit(&nm->ep_noted, memory_order_acquire)))
        return rma_ctl_notify(win, t, off, v);
    rc = note_quiet(win, t) ? rma_hx_notify_quiet(win, t, off, v)
                            : rma_hx_agg_notify(win, t, off, v, 1);
    if (rc == 1)
        return rma_hx_agg_holds(nm) ? rma_ctl_notify(win, t, off, v)
                                    : rma_ctl_announce(win, t, off, v);
    return rc != 0 ? rc : rma_ctl_push(win, t);
}

int rma_ctl_fail(rma_win_t *win, const char *func, int t, int rc)
{
    return rma_err(win, func, MPI_ERR_OTHER, "cannot reach rank %d (world rank %d): %s%s", t,
                   win->world[t], strerror(-rc), rma_err_cma_hint(-rc, win->targets[t].local));
}

void rma_ctl_progress(rma_win_t *win)
{
    if (win->net || win->node_msg) /* same-node peers' requests come through UCX too */
        rma_net->progress();
}
