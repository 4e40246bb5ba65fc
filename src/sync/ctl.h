/*
 * ctl.h - one protocol, two ways to touch a word. Every synchronization word of a target
 * (its lock word, PSCW counters, fence arrivals, accumulate stripes, region-table
 * generation) lives in the control segment of the target's node, at the same offset on
 * every node. An origin on that node maps the segment and uses a CPU atomic; an origin on
 * another node uses a network atomic on the target's registration of it. The protocols in
 * lock.c, pscw.c, fence.c and acc.c are written once against these calls.
 *
 * Errors of the network (a peer that died) are returned as -errno; callers raise them.
 */
#ifndef RMA_CTL_H
#define RMA_CTL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "netmod/netmod.h"
#include "windows/win.h"

/* Offsets of a target's words in its node's control segment. */
static inline size_t rma_ctl_off_rank(const rma_win_t *win, int rank, size_t field)
{
    return (size_t)win->ctl->ranks_off + (size_t)rank * sizeof(rma_ctl_rank_t) + field;
}
#define RMA_CTL_OFF(win, rank, field) rma_ctl_off_rank(win, rank, offsetof(rma_ctl_rank_t, field))

static inline size_t rma_ctl_off_post(const rma_win_t *win, int origin, int target)
{
    return (size_t)win->ctl->post_off +
           ((size_t)win->targets[origin].lidx * win->ctl->nranks + (size_t)target) * 8u;
}

static inline size_t rma_ctl_off_stripe(const rma_win_t *win, unsigned s)
{
    return (size_t)win->ctl->acc_off + (size_t)s * RMA_CACHE_LINE;
}

/* The word at off in target t's node segment when it is mapped here, else NULL. */
static inline void *rma_ctl_local(const rma_win_t *win, int t, size_t off)
{
    return win->targets[t].local ? (char *)win->ctl + off : NULL;
}

/* Out of line: the network half. */
int rma_ctl_net_amo(rma_win_t *win, int t, size_t off, int op, unsigned size, uint64_t value,
                    uint64_t compare, uint64_t *fetched);

/* *old = word; word += v (64-bit). 0 or -errno. */
static inline int rma_ctl_fadd(rma_win_t *win, int t, size_t off, uint64_t v, uint64_t *old)
{
    _Atomic uint64_t *w = rma_ctl_local(win, t, off);

    if (w != NULL) {
        *old = atomic_fetch_add_explicit(w, v, memory_order_acq_rel);
        return 0;
    }
    return rma_ctl_net_amo(win, t, off, RMA_NM_AMO_ADD, 8, v, 0, old);
}

/* word += v without waiting for the old value: off-node, it is only issued, and arrives by
 * the next flush of t (rma_ctl_flush), which the caller must do before it returns from
 * MPI. 0 or -errno. */
static inline int rma_ctl_add(rma_win_t *win, int t, size_t off, uint64_t v)
{
    _Atomic uint64_t *w = rma_ctl_local(win, t, off);

    if (w != NULL) {
        atomic_fetch_add_explicit(w, v, memory_order_release);
        return 0;
    }
    return rma_ctl_net_amo(win, t, off, RMA_NM_AMO_ADD, 8, v, 0, NULL);
}

/* Compare-and-swap of a 64-bit word; *old gets the value seen. 0 or -errno. */
static inline int rma_ctl_cas(rma_win_t *win, int t, size_t off, uint64_t expect, uint64_t desired,
                              uint64_t *old)
{
    _Atomic uint64_t *w = rma_ctl_local(win, t, off);

    if (w != NULL) {
        atomic_compare_exchange_strong_explicit(w, &expect, desired, memory_order_acq_rel,
                                                memory_order_acquire);
        *old = expect;
        return 0;
    }
    return rma_ctl_net_amo(win, t, off, RMA_NM_AMO_CSWAP, 8, desired, expect, old);
}

/* Reads a 64-bit word (remotely: an atomic fetch-and-add of 0). 0 or -errno. */
static inline int rma_ctl_load(rma_win_t *win, int t, size_t off, uint64_t *v)
{
    _Atomic uint64_t *w = rma_ctl_local(win, t, off);

    if (w != NULL) {
        *v = atomic_load_explicit(w, memory_order_acquire);
        return 0;
    }
    return rma_ctl_net_amo(win, t, off, RMA_NM_AMO_ADD, 8, 0, 0, v);
}

/* 32-bit forms for the accumulate stripes. */
static inline int rma_ctl_cas32(rma_win_t *win, int t, size_t off, uint32_t expect,
                                uint32_t desired, uint32_t *old)
{
    _Atomic uint32_t *w = rma_ctl_local(win, t, off);
    uint64_t o;
    int rc;

    if (w != NULL) {
        atomic_compare_exchange_strong_explicit(w, &expect, desired, memory_order_acquire,
                                                memory_order_relaxed);
        *old = expect;
        return 0;
    }
    rc = rma_ctl_net_amo(win, t, off, RMA_NM_AMO_CSWAP, 4, desired, expect, &o);
    *old = (uint32_t)o;
    return rc;
}

static inline int rma_ctl_add32(rma_win_t *win, int t, size_t off, uint32_t v)
{
    _Atomic uint32_t *w = rma_ctl_local(win, t, off);

    if (w != NULL) {
        atomic_fetch_add_explicit(w, v, memory_order_release);
        return 0;
    }
    return rma_ctl_net_amo(win, t, off, RMA_NM_AMO_ADD, 4, v, 0, NULL);
}

/* Every operation this process issued to target t is complete at t (no-op unless t is
 * reached through a transport that completes later, or aggregation is to be told that a
 * flush came: nm.primed). 0 or -errno. */
static inline int rma_ctl_flush(rma_win_t *win, int t)
{
    rma_nm_tgt_t *nm = &win->targets[t].nm;

    return rma_nm_flush_due(nm) ? nm->ops->flush(nm) : 0;
}

/* Everything this process issued to target t gets there without a later call of ours
 * (netmod.h push): cheaper than rma_ctl_flush where the transport already sent it all.
 * 0 or -errno. */
static inline int rma_ctl_push(rma_win_t *win, int t)
{
    rma_nm_tgt_t *nm = &win->targets[t].nm;

    return nm->ops != NULL ? nm->ops->push(nm) : 0;
}

/* Every operation this process issued to any target is complete there. 0, or -errno with
 * the unreachable target in *failed. */
int rma_ctl_flush_all(rma_win_t *win, int *failed);

/* The same, except for target via, whose operations a notification completes next. */
int rma_ctl_flush_all_but(rma_win_t *win, int via, int *failed);

/* Notifications: an unlock's release, a fence arrival, a PSCW completion. A target must see
 * one only after every operation this process issued to it took effect, and the
 * notification must be there when the call returns (nothing may drive our network later).
 * Where t's transport keeps issue order (netmod.h order) the add goes right behind the
 * operations and fetches, and its reply completes both: one round trip; elsewhere it is a
 * flush, the add and a flush.
 *
 * rma_ctl_order: what was issued to t takes effect before whatever is issued to t next
 * (a flush, or nothing but sending what aggregation holds back where order is kept).
 * rma_ctl_signal: word += v at t, complete there on return with everything ordered before.
 * rma_ctl_notify: both; where order is kept and aggregation holds puts or gets for t, the
 * add rides on their last request instead (one message and its answer, mpid/rma/hx.h).
 * 0 or -errno. */
int rma_ctl_order(rma_win_t *win, int t);
int rma_ctl_signal(rma_win_t *win, int t, size_t off, uint64_t v);
int rma_ctl_notify(rma_win_t *win, int t, size_t off, uint64_t v);

/* Notifications that only this process's side must have completed on return: the caller's
 * operations to t are complete here (buffers free, gets landed) and the notification takes
 * effect at t after them, but nobody waits for t to say so. That is MPI_Win_complete's
 * contract (the target learns of completion in MPI_Win_wait), and a fence arrival's where
 * no third rank could read t before t leaves the fence itself.
 *
 * rma_ctl_announce: word += v at t, pushed (netmod.h push), for a notification with
 * nothing of ours to order before it (a post). When nothing but notifications was
 * outstanding at t, t stays quiet (netmod.h rma_nm_quiet): no flush has to complete a
 * notification, and t would otherwise look busy to the next fence.
 * rma_ctl_notify_sent: where t's transport keeps issue order (tcp, whose socket has what
 * UCX took; doc/protocols.md says why not elsewhere): an announce when t is
 * quiet, else it rides on the held puts or follows in order, pushed. Elsewhere (gets or
 * accumulates under way, no issue order) rma_ctl_notify.
 * Over tcp alone (nm.am_rma) both send a request the target's agent applies without
 * answering (mpid/rma/hx.h RMA_HX_F_QUIET): nobody waits for the answer, and sending it
 * would delay the target's next step. 0 or -errno. */
int rma_ctl_announce(rma_win_t *win, int t, size_t off, uint64_t v);
int rma_ctl_notify_sent(rma_win_t *win, int t, size_t off, uint64_t v);

/* Raises MPI_ERR_OTHER on the window for a network call to target t that failed with rc. */
int rma_ctl_fail(rma_win_t *win, const char *func, int t, int rc);

/* Lets the network move while a protocol waits (no-op when no peer's requests come through
 * UCX: nothing off-node, and no same-node requests, windows/win.h node_msg): this
 * process's operations, and its peers' on it when the agent is not serving them right now.
 * Called only where the caller holds no lock a request handler takes. */
void rma_ctl_progress(rma_win_t *win);

#endif
