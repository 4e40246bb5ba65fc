/*
 * rma_op.c - the general Put/Get path: argument checks with the standard's error classes,
 * datatype layouts on both sides, target range checks, and the choice per piece between a
 * direct copy (target memory mapped here) and the transport (CMA).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/uio.h>

#include "mpid/rma/dtl.h"
#include "mpid/rma/env.h"
#include "mpid/rma/rma.h"
#include "netmod/netmod.h"
#include "windows/win_error.h"

/* State of one transfer while the type maps are walked. */
typedef struct xfer {
    int kind;
    char *origin;
    uintptr_t target;         /* target address of the target buffer (its own address space) */
    char *direct;             /* where `target` is mapped here, NULL if it is not */
    uintptr_t map_lo, map_hi; /* target addresses mapped here */
    char *map_local;
    int pid;
    int niov, max_iov;
    int err;                             /* -errno of a failed transport call */
    struct iovec liov[1024], riov[1024]; /* not zeroed: filled up to niov */
} xfer_t;

static int xfer_flush(xfer_t *x)
{
    int rc;

    if (x->niov == 0)
        return 0;
    rc = x->kind == RMA_PUT ? rma_nm_shm_ops.writev(x->pid, x->liov, x->niov, x->riov, x->niov)
                            : rma_nm_shm_ops.readv(x->pid, x->liov, x->niov, x->riov, x->niov);
    x->niov = 0;
    if (rc != 0)
        x->err = rc;
    return rc;
}

/* One piece contiguous on both sides: dst is the target for Put, the origin for Get. */
static int xfer_piece(void *arg, MPI_Aint toff, MPI_Aint ooff, size_t len)
{
    xfer_t *x = arg;
    uintptr_t ta = x->target + (uintptr_t)toff;
    char *o = x->origin + ooff;

    if (ta >= x->map_lo && ta + len <= x->map_hi) {
        char *t = x->map_local + (ta - x->map_lo);
        if (x->kind == RMA_PUT)
            memcpy(t, o, len);
        else
            memcpy(o, t, len);
        return 0;
    }
    x->liov[x->niov] = (struct iovec){o, len};
    x->riov[x->niov] = (struct iovec){(void *)ta, len};
    if (++x->niov == x->max_iov)
        return xfer_flush(x);
    return 0;
}

static const char *kind_name(int kind)
{
    return kind == RMA_PUT ? "origin" : "result";
}

int rma_target_resolve(rma_win_t *win, int trank, MPI_Aint tdisp, const rma_dtl_t *td,
                       MPI_Aint tcount, rma_tspan_t *out, const char *func)
{
    MPI_Aint lo, hi, off;
    rma_target_t *tg;

    if ((unsigned)trank >= (unsigned)win->nranks)
        return rma_err(win, func, MPI_ERR_RANK,
                       "target rank %d is not in the window's group "
                       "of %d",
                       trank, win->nranks);
    tg = &win->targets[trank];
    if (!(win->all_access | tg->access))
        return rma_err(win, func, MPI_ERR_RMA_SYNC,
                       "no access epoch is open to rank %d (use "
                       "a fence, MPI_Win_start or a lock first)",
                       trank);
    rma_dtl_span(td, tcount, &lo, &hi);
    memset(out, 0, sizeof(*out));
    out->pid = tg->pid;
    if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        char *local = NULL;
        if (hi > lo && (tdisp + lo < 0 ||
                        rma_win_dyn_resolve(win, trank, (uintptr_t)(tdisp + lo), (size_t)(hi - lo),
                                            &local, &out->seg_id) != MPI_SUCCESS))
            return rma_err(win, func, MPI_ERR_RMA_RANGE,
                           "no region attached at rank %d holds "
                           "the target bytes [0x%lx, 0x%lx)",
                           trank, (unsigned long)(tdisp + lo), (unsigned long)(tdisp + hi));
        out->taddr = (uintptr_t)tdisp;
        if (local != NULL) {
            out->local = local - lo;
            out->map_lo = (uintptr_t)(tdisp + lo);
            out->map_hi = (uintptr_t)(tdisp + hi);
            out->map_local = local;
        }
        return MPI_SUCCESS;
    }
    if (tdisp < 0 || __builtin_mul_overflow(tdisp, (MPI_Aint)tg->disp_unit, &off) || off + lo < 0 ||
        off > LONG_MAX - hi || off + hi > tg->size)
        return rma_err(win, func, MPI_ERR_RMA_RANGE,
                       "target displacement %ld (disp_unit "
                       "%d) with datatype bytes [%ld, %ld) lies outside the %ld-byte "
                       "window of rank %d",
                       (long)tdisp, tg->disp_unit, (long)lo, (long)hi, (long)tg->size, trank);
    out->taddr = tg->remote_base + (uintptr_t)off;
    if (tg->map_local != NULL) {
        out->map_lo = tg->map_lo;
        out->map_hi = tg->map_lo + tg->map_len;
        out->map_local = tg->map_local;
        if (out->taddr + (uintptr_t)lo >= out->map_lo && out->taddr + (uintptr_t)hi <= out->map_hi)
            out->local = tg->map_local + (out->taddr - tg->map_lo);
    }
    return MPI_SUCCESS;
}

int rma_xfer_slow(rma_win_t *win, int kind, void *origin, MPI_Aint ocount, MPI_Datatype otype,
                  int trank, MPI_Aint tdisp, MPI_Aint tcount, MPI_Datatype ttype, const char *func)
{
    const rma_dtl_t *od, *td;
    MPI_Aint obytes, tbytes;
    rma_tspan_t span;
    xfer_t x;
    int rc;

    if (trank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    if (ocount < 0 || tcount < 0)
        return rma_err(win, func, MPI_ERR_COUNT, "negative count (origin %ld, target %ld)",
                       (long)ocount, (long)tcount);
    if (rma_dtl_get(otype, &od) != MPI_SUCCESS)
        return rma_err(win, func, MPI_ERR_TYPE, "the origin datatype is not a valid datatype");
    if (rma_dtl_get(ttype, &td) != MPI_SUCCESS)
        return rma_err(win, func, MPI_ERR_TYPE, "the target datatype is not a valid datatype");
    if (rma_buf_missing(origin, ocount, otype))
        return rma_err(win, func, MPI_ERR_BUFFER, "the %s buffer is NULL and the count is %ld",
                       kind_name(kind), (long)ocount);
    if (__builtin_mul_overflow(ocount, od->size, &obytes) ||
        __builtin_mul_overflow(tcount, td->size, &tbytes))
        return rma_err(win, func, MPI_ERR_COUNT, "count times datatype size overflows");
    rc = rma_target_resolve(win, trank, tdisp, td, tcount, &span, func);
    if (rc != MPI_SUCCESS)
        return rc;
    if (obytes != tbytes)
        return rma_err(win, func, MPI_ERR_TYPE,
                       "the %s buffer holds %ld bytes but the target "
                       "buffer %ld: the type signatures differ",
                       kind_name(kind), (long)obytes, (long)tbytes);
    win->ops_in_fence = 1;
    if (tbytes == 0)
        return MPI_SUCCESS;

    /* the whole target span is mapped: copy without the transport */
    if (span.local != NULL) {
        if (kind == RMA_PUT)
            rma_dtl_copy(span.local, td, tcount, origin, od, ocount);
        else
            rma_dtl_copy(origin, od, ocount, span.local, td, tcount);
        return MPI_SUCCESS;
    }
    memset(&x, 0, offsetof(xfer_t, liov));
    x.kind = kind;
    x.origin = origin;
    x.pid = span.pid;
    x.max_iov = (int)(rma_env.cma_batch < 1024 ? rma_env.cma_batch : 1024);
    x.target = span.taddr;
    x.map_lo = span.map_lo;
    x.map_hi = span.map_hi;
    x.map_local = span.map_local;
    rc = rma_dtl_walk_pairs(td, tcount, od, ocount, xfer_piece, &x);
    if (rc == 0)
        xfer_flush(&x);
    if (rc == -1 && x.err == 0)
        return rma_err(win, func, MPI_ERR_NO_MEM, "out of memory walking the datatypes");
    if (x.err != 0)
        return rma_err(win, func, MPI_ERR_OTHER,
                       "cross-memory %s rank %d (pid %d) failed: "
                       "%s",
                       kind == RMA_PUT ? "write to" : "read from", trank, span.pid,
                       strerror(-x.err));
    return MPI_SUCCESS;
}
