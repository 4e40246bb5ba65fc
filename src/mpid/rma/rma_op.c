/*
 * rma_op.c - the general Put/Get path: argument checks with the standard's error classes,
 * datatype layouts on both sides, target range checks, and the choice per piece between a
 * direct copy (target memory mapped here) and the transport (CMA).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "mpid/rma/dtl.h"
#include "mpid/rma/env.h"
#include "mpid/rma/hx.h"
#include "mpid/rma/rma.h"
#include "netmod/netmod.h"
#include "sync/ctl.h"
#include "sync/sync.h"
#include "sync/wait.h"
#include "windows/win_error.h"

int rma_mover_flush(rma_mover_t *mv)
{
    rma_target_t *tg = &mv->win->targets[mv->trank];
    rma_nm_tgt_t *nm = &tg->nm;
    int rc;

    if (mv->niov == 0)
        return 0;
    /* off node RDMA, same node CMA (small pieces held): complete at the target's next
     * flush; with sync, on return */
    if (mv->sync)
        rc = nm->ops->xfer_sync(nm, mv->key, mv->liov, mv->riov, mv->niov, mv->write);
    else if (mv->write)
        rc = nm->ops->writev(nm, mv->key, mv->liov, mv->riov, mv->niov);
    else
        rc = nm->ops->readv(nm, mv->key, mv->liov, mv->riov, mv->niov);
    if (!tg->local || rma_nm_pending(nm))
        rma_win_net_issued(mv->win); /* pieces may be issued even when a later one failed */
    mv->niov = 0;
    if (rc != 0)
        mv->err = rc;
    return rc;
}

/* A large contiguous piece off node: a rendezvous request to the target's agent (hx.h),
 * which moves it with one copy between window memory and buf (not with sync: the agent's
 * answer could queue behind the caller's stripes). */
static int mover_rndv(rma_mover_t *mv, uintptr_t ta, char *buf, size_t n)
{
    int rc = 0;

    for (size_t off = 0, k; rc == 0 && off < n; off += k) {
        k = n - off < RMA_RNDV_MAX ? n - off : RMA_RNDV_MAX;
        rc = rma_hx_rndv(mv->win, mv->trank, ta + off, buf + off, k, mv->write);
    }
    rma_win_net_issued(mv->win);
    if (rc != 0)
        mv->err = rc;
    return rc;
}

/* A piece that goes now, not through the target's agent (which checks as it sends them):
 * it waits for what it could overtake (hx.h, one origin's order; nothing is recorded for a
 * same-node target unless its puts go to its agent too, rma_nm_shm_with). Not with sync:
 * the accumulate completed what it sent before it took the stripes (acc.c), and what is
 * recorded since is other threads', which its stripes may keep from completing. */
static int mover_order(rma_mover_t *mv, uintptr_t ta, size_t n)
{
    int rc = mv->sync ? 0
                      : rma_hx_order(mv->win, mv->trank, ta, ta + n,
                                     mv->write ? RMA_HX_ORD_PUT : RMA_HX_ORD_GET, 0);

    return rc == 0 ? 0 : (mv->err = rc);
}

int rma_mover_piece(rma_mover_t *mv, uintptr_t ta, char *buf, size_t len)
{
    while (len > 0) {
        size_t n = rma_tspan_run(mv->span, ta, len);
        const rma_dyn_hit_t *m = rma_tspan_map(mv->span, ta, n);
        if (m != NULL) {
            char *t = m->local + (ta - m->lo);
            if (mover_order(mv, ta, n) != 0)
                return mv->err;
            memcpy(mv->write ? t : buf, mv->write ? buf : t, n);
        } else if (mv->hx != NULL && n <= mv->hx_piece) {
            if (rma_hx_add(mv->hx, ta, buf, n) != 0)
                return mv->err = -ENOMEM;
        } else if (rma_env.rndv > 0 && n >= rma_env.rndv && !mv->sync &&
                   !mv->win->targets[mv->trank].local && !mv->win->targets[mv->trank].nm.dev_rma) {
            if (mover_rndv(mv, ta, buf, n) != 0)
                return mv->err;
        } else {
            void *key = rma_tspan_key(mv->span, ta);
            if (mover_order(mv, ta, n) != 0 ||
                (mv->niov > 0 && key != mv->key && rma_mover_flush(mv) != 0))
                return mv->err;
            mv->key = key;
            if (mv->ncma++ == 0) {
                mv->cma_addr = ta;
                mv->cma_region = rma_tspan_region(mv->span, ta);
            }
            mv->liov[mv->niov] = (struct iovec){buf, n};
            mv->riov[mv->niov] = (struct iovec){(void *)ta, n};
            if (++mv->niov == mv->max_iov && rma_mover_flush(mv) != 0)
                return mv->err;
        }
        ta += n;
        buf += n;
        len -= n;
    }
    return 0;
}

/* The small pieces collected for a host-assisted transfer: sent to the target's agent when
 * there are enough of them, else held back for a later request (puts, aggregated) or one
 * RDMA each like the others. */
static void mover_send_hx(rma_mover_t *mv)
{
    rma_hx_t *hx = mv->hx;
    int rc;

    mv->hx = NULL;
    if (mv->err != 0) {
        /* the walk failed: nothing more is sent */
    } else if (hx->pieces < rma_env.hx_min ||
               (!mv->sync && rma_hx_agg_whole(mv->win, mv->trank, hx))) {
        int agg = !mv->sync; /* puts and gets may be held back (hx.h, aggregation) */
        for (int i = 0; i < hx->nruns && mv->err == 0; i++) {
            const rma_hx_run_t *r = &hx->runs[i];
            for (uint64_t k = 0; k < r->count && mv->err == 0; k++) {
                uintptr_t ta = r->taddr + k * (uint64_t)r->tstride;
                char *la = r->laddr + (int64_t)k * r->lstride;
                rc = !agg        ? 1
                     : mv->write ? rma_hx_agg_put(mv->win, mv->trank, ta, la, r->len)
                                 : rma_hx_agg_get(mv->win, mv->trank, ta, la, r->len);
                if (rc == 1)
                    rma_mover_piece(mv, ta, la, r->len);
                else if (rc != 0)
                    mv->err = rc;
            }
        }
        hx->nruns = 0;
        hx->pieces = hx->bytes = 0;
    } else {
        rc = rma_hx_send(hx);
        rma_win_net_issued(mv->win);
        if (rc != 0)
            mv->err = rc;
    }
    rma_hx_done(hx);
}

/* State of one transfer while the type maps are walked. */
typedef struct xfer {
    char *origin;
    rma_mover_t mv;
    rma_hx_t hx;
    struct iovec liov[1024], riov[1024]; /* not zeroed: filled up to mv.niov */
} xfer_t;

/* walk: one piece contiguous on both sides */
static int xfer_piece(void *arg, MPI_Aint toff, MPI_Aint ooff, size_t len)
{
    xfer_t *x = arg;

    return rma_mover_piece(&x->mv, x->mv.span->taddr + (uintptr_t)toff, x->origin + ooff, len);
}

/* Room for cap maps in out, those it holds kept. 0, or -1 without memory. */
static int span_maps_grow(rma_tspan_t *out, int cap)
{
    rma_dyn_hit_t *m =
        realloc(out->maps == out->map_buf ? NULL : out->maps, (size_t)cap * sizeof(*m));

    if (m == NULL)
        return -1;
    if (out->maps == out->map_buf)
        memcpy(m, out->map_buf, (size_t)out->nmaps * sizeof(*m));
    out->maps = m;
    return 0;
}

/* Collects the attached regions a dynamic window's target datatype touches piece by piece,
 * for a type whose span [lo, hi) also covers bytes nothing is attached at (regions with a
 * gap between them: MPI asks only that the bytes accessed be attached). */
typedef struct {
    rma_win_t *win;
    int trank;
    rma_tspan_t *out;
    int cap, rc;
    uintptr_t bad; /* the first byte of a piece nothing is attached at */
} pieces_t;

static int piece_region(void *arg, MPI_Aint toff, MPI_Aint boff, size_t len)
{
    pieces_t *p = arg;
    rma_tspan_t *out = p->out;
    uintptr_t at = out->taddr + (uintptr_t)toff, end = at + len;
    const rma_dyn_hit_t *seen;
    rma_dyn_hit_t hits[4];
    int n;

    (void)boff;
    while (at < end) {
        if ((seen = rma_tspan_hit(out, at)) != NULL) { /* in a region found before */
            at = seen->hi;
            continue;
        }
        p->rc = rma_win_dyn_resolve(p->win, p->trank, at, end - at, hits, 4, &n);
        if (p->rc != MPI_SUCCESS || n == 0) {
            p->bad = at;
            return -2;
        }
        if (out->nmaps + n > p->cap) {
            if (span_maps_grow(out, 2 * (out->nmaps + n)) != 0)
                return -1;
            p->cap = 2 * (out->nmaps + n);
        }
        for (int i = 0; i < n && i < 4; i++)
            out->maps[out->nmaps++] = hits[i];
        at = hits[n < 4 ? n - 1 : 3].hi;
    }
    return 0;
}

/* Dynamic windows: the regions of the target that cover [lo, hi), or, for a type whose
 * span has unattached bytes, those its pieces touch. */
static int resolve_dynamic(rma_win_t *win, int trank, const rma_dtl_t *td, MPI_Aint tcount,
                           uintptr_t lo, uintptr_t hi, rma_tspan_t *out, const char *func)
{
    int cap = 4, n, rc = rma_win_dyn_resolve(win, trank, lo, hi - lo, out->map_buf, cap, &n);

    if (rc == MPI_ERR_RMA_RANGE && !td->is_contig) {
        /* not all of the span is attached: maybe all the bytes the type touches are */
        const rma_dtl_t *bytes;
        pieces_t p = {win, trank, out, 4, MPI_SUCCESS, 0};
        MPI_Aint total;
        int wrc, tries = 0;
        unsigned fetches;
        if (__builtin_mul_overflow(tcount, td->size, &total) ||
            rma_dtl_get(MPI_BYTE, &bytes) != MPI_SUCCESS)
            return rma_err(win, func, MPI_ERR_NO_MEM, "out of memory walking the datatype");
        do { /* again when a lookup fetched the target's table anew (an off-node target):
                the regions found before it may be gone (their keys stay valid until
                rma_tspan_done) */
            fetches = win->targets[trank].dyn_fetches;
            out->nmaps = 0;
            p.rc = MPI_SUCCESS;
            wrc = rma_dtl_walk_pairs(td, tcount, bytes, total, piece_region, &p);
        } while (wrc == 0 && fetches != win->targets[trank].dyn_fetches && ++tries < 8);
        if (wrc == 0)
            return MPI_SUCCESS; /* every piece attached; out->local stays NULL */
        if (wrc == -1)
            return rma_err(win, func, MPI_ERR_NO_MEM, "out of memory for the regions");
        if (p.rc != MPI_ERR_RMA_RANGE && p.rc != MPI_SUCCESS)
            rc = p.rc;
        else
            return rma_err(win, func, MPI_ERR_RMA_RANGE,
                           "the target byte 0x%lx at rank %d, which the datatype accesses, is not "
                           "in memory attached to the window",
                           (unsigned long)p.bad, trank);
        n = 0;
    }

    while (n > cap) { /* a span over more attached regions than the array holds */
        if (span_maps_grow(out, n) != 0)
            return rma_err(win, func, MPI_ERR_NO_MEM, "out of memory for %d regions", n);
        cap = n;
        rc = rma_win_dyn_resolve(win, trank, lo, hi - lo, out->maps, cap, &n);
    }
    out->nmaps = n;
    if (rc == MPI_ERR_RMA_RANGE)
        return rma_err(win, func, MPI_ERR_RMA_RANGE,
                       "the target bytes [0x%lx, 0x%lx) at rank %d are not all in memory "
                       "attached to the window",
                       (unsigned long)lo, (unsigned long)hi, trank);
    if (rc != MPI_SUCCESS && n == 0)
        return rma_err(win, func, MPI_ERR_OTHER,
                       "cannot map the table of regions attached at rank %d (pidfd_getfd, "
                       "/proc/<pid>/fd or mmap failed)",
                       trank);
    if (rc != MPI_SUCCESS)
        return rma_err(win, func, MPI_ERR_OTHER,
                       "a region attached at rank %d is shared memory that cannot be mapped "
                       "here; accumulates to it need CPU atomics",
                       trank);
    if (n == 1 && out->maps[0].local != NULL)
        out->local = out->maps[0].local + (out->taddr - out->maps[0].lo);
    return MPI_SUCCESS;
}

/* The span's one map: target bytes [base, base + len) mapped here at local; out->local as
 * well when the span's bytes [lo, hi) from out->taddr lie inside. */
static void span_map(const rma_win_t *win, rma_tspan_t *out, uintptr_t base, size_t len,
                     char *local, MPI_Aint lo, MPI_Aint hi)
{
    out->nmaps = 1;
    out->maps[0] = (rma_dyn_hit_t){
        base, base + len, local,
        win->acc_mode == RMA_ACC_MODE_ATOMIC || win->acc_mode == RMA_ACC_MODE_NET, NULL};
    if (out->taddr + (uintptr_t)lo >= base && out->taddr + (uintptr_t)hi <= base + len)
        out->local = local + (out->taddr - base);
}

int rma_dtl_err(rma_win_t *win, const char *func, int rc, const char *side)
{
    if (rc == MPI_ERR_NO_MEM)
        return rma_err(win, func, rc, "no memory for the layout of the %s datatype", side);
    return rma_err(win, func, MPI_ERR_TYPE,
                   rc == RMA_DTL_TOO_WIDE
                       ? "the %s datatype's type map reaches past 2^56 bytes (its extent or "
                         "displacements overflow)"
                       : "the %s datatype is not valid or not committed",
                   side);
}

int rma_origin_span_check(rma_win_t *win, const rma_dtl_t *dtl, MPI_Aint count, const char *side,
                          const char *func)
{
    MPI_Aint lo, hi;

    if (rma_dtl_span(dtl, count, &lo, &hi) == 0)
        return MPI_SUCCESS;
    return rma_err(win, func, MPI_ERR_COUNT,
                   "%ld elements of the %s datatype (extent %ld) span more bytes than any buffer "
                   "holds",
                   (long)count, side, (long)dtl->extent);
}

int rma_target_resolve(rma_win_t *win, int trank, MPI_Aint tdisp, const rma_dtl_t *td,
                       MPI_Aint tcount, rma_tspan_t *out, const char *func)
{
    MPI_Aint lo, hi, off, end;
    rma_target_t *tg;

    memset(out, 0, offsetof(rma_tspan_t, map_buf));
    out->maps = out->map_buf;
    if ((unsigned)trank >= (unsigned)win->nranks)
        return rma_err(win, func, MPI_ERR_RANK, "target rank %d is not in the window's group of %d",
                       trank, win->nranks);
    tg = &win->targets[trank];
    if (!(win->all_access | tg->access) && tg->start_pending)
        rma_pscw_wait_post(win, trank); /* MPI_Win_start left it for the first operation */
    if (!(win->all_access | tg->access))
        return rma_err(win, func, MPI_ERR_RMA_SYNC,
                       "no access epoch is open to rank %d (use a fence, MPI_Win_start or a "
                       "lock first)",
                       trank);
    if (rma_dtl_span(td, tcount, &lo, &hi) != 0)
        return rma_err(win, func, MPI_ERR_RMA_RANGE,
                       "%ld elements of the target datatype (extent %ld) span more bytes than "
                       "any window holds",
                       (long)tcount, (long)td->extent);
    out->pid = tg->pid;
    out->key = tg->nm.data_key;
    if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC)
        out->taddr = (uintptr_t)tdisp;
    if (hi <= lo) /* no byte: no displacement is outside the window (as MPICH) */
        return MPI_SUCCESS;
    if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
        if (__builtin_add_overflow(tdisp, lo, &off) || off < 0 ||
            __builtin_add_overflow(tdisp, hi, &end))
            return rma_err(win, func, MPI_ERR_RMA_RANGE,
                           "target address 0x%lx with the datatype's bytes [%ld, %ld) is "
                           "outside the address space",
                           (unsigned long)tdisp, (long)lo, (long)hi);
        if (!tg->local) { /* its keys and mappings in use until rma_tspan_done */
            rma_win_dyn_use(win, trank);
            out->dyn_win = win;
            out->dyn_t = trank;
        }
        return resolve_dynamic(win, trank, td, tcount, (uintptr_t)off, (uintptr_t)end, out, func);
    }
    /* lo <= hi, and both may be negative: a type whose bytes all lie below its origin */
    if (tdisp < 0 || __builtin_mul_overflow(tdisp, (MPI_Aint)tg->disp_unit, &off) ||
        __builtin_add_overflow(off, hi, &end) || off + lo < 0 || end > tg->size)
        return rma_err(win, func, MPI_ERR_RMA_RANGE,
                       "target displacement %ld (disp_unit %d) with datatype bytes [%ld, %ld) "
                       "lies outside the %ld-byte window of rank %d",
                       (long)tdisp, tg->disp_unit, (long)lo, (long)hi, (long)tg->size, trank);
    rma_expose_refresh(win, trank); /* create memory its owner may have moved since */
    out->taddr = tg->remote_base + (uintptr_t)off;
    out->region = (size_t)tg->size;
    /* map_len first, as rma_direct_addr reads it: published last by another thread */
    size_t mlen = __atomic_load_n(&tg->map_len, __ATOMIC_ACQUIRE);
    if (mlen != 0 && tg->map_local != NULL)
        span_map(win, out, tg->map_lo, mlen, tg->map_local, lo, hi);
    else if (!tg->local && tg->nm.data_map != NULL)
        span_map(win, out, tg->remote_base, (size_t)tg->size, tg->nm.data_map, lo, hi);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------ copies by the agent */

static _Atomic long long copies_by[2]; /* [by_agent]: RMAX_Agent_copies */

void rma_xfer_copies(long long *by_agent, long long *by_caller)
{
    if (by_agent != NULL)
        *by_agent = atomic_load_explicit(&copies_by[1], memory_order_relaxed);
    if (by_caller != NULL)
        *by_caller = atomic_load_explicit(&copies_by[0], memory_order_relaxed);
}

static void job_copy(rma_agent_job_t *job)
{
    rma_xfer_job_t *x = (rma_xfer_job_t *)job;

    rma_dtl_copy(x->dst, x->dst_dtl, x->dst_count, x->src, x->src_dtl, x->src_count);
    atomic_fetch_add_explicit(&copies_by[job->by_agent != 0], 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&x->win->handed, 1, memory_order_release);
}

void rma_xfer_drain_slow(rma_win_t *win)
{
    rma_backoff_t bo = RMA_BACKOFF_INIT;

    rma_agent_job_drain(win);
    while (atomic_load_explicit(&win->handed, memory_order_acquire) != 0)
        rma_backoff(&bo);
}

/* The byte range [*lo, *hi) that count elements of layout d at buf touch (buf may be
 * MPI_BOTTOM: the layout's displacements are then addresses). */
static void bytes_of(const char *buf, const rma_dtl_t *d, MPI_Aint count, uintptr_t *lo,
                     uintptr_t *hi)
{
    MPI_Aint l, h;

    if (rma_dtl_span(d, count, &l, &h) != 0 || l >= h) {
        *lo = *hi = 0; /* nothing, or refused before any copy (rma_origin_span_check) */
        return;
    }
    *lo = (uintptr_t)buf + (uintptr_t)l;
    *hi = (uintptr_t)buf + (uintptr_t)h;
}

/* Adds [lo, hi) to what the window's handed copies write (w 0) or read (w 1) on one side
 * (0: origin buffers; 1: window memory mapped here), or makes it all of it for the first
 * copy since they last drained (first). The caller's thread alone hands copies over for win
 * (win->mtx under MPI_THREAD_MULTIPLE); the agent finishing one only counts it off. */
static void handed_widen(rma_win_t *win, int side, int w, uintptr_t lo, uintptr_t hi, int first)
{
    _Atomic uintptr_t *at = win->handed_at[side][w];
    uintptr_t l = atomic_load_explicit(&at[0], memory_order_relaxed),
              h = atomic_load_explicit(&at[1], memory_order_relaxed);

    if (first || l >= h) {
        l = lo;
        h = hi;
    } else if (lo < hi) {
        l = lo < l ? lo : l;
        h = hi > h ? hi : h;
    }
    atomic_store_explicit(&at[0], l, memory_order_relaxed);
    atomic_store_explicit(&at[1], h, memory_order_relaxed);
}

/* 1 when [lo, hi) on one side meets bytes a handed copy of win may write there, or may read
 * when write (the range is written). The two sides never share an address: window memory
 * a copy reaches is an off-node target's, mapped here by librma alone. Conflicting accesses
 * in one epoch have no defined outcome (MPI-4 12.7), but the program's own order is kept
 * for them. */
static int handed_meets(rma_win_t *win, int side, uintptr_t lo, uintptr_t hi, int write)
{
    for (int w = 0; w < 1 + write; w++)
        if (lo < atomic_load_explicit(&win->handed_at[side][w][1], memory_order_relaxed) &&
            hi > atomic_load_explicit(&win->handed_at[side][w][0], memory_order_relaxed))
            return 1;
    return 0;
}

/* a layout is freed (MPI_Type_free): every window's copies may walk it */
static void drain_all(void)
{
    rma_win_foreach(rma_xfer_drain);
}

/* Hands the copy of a request-based operation to the agent (see rma_xfer_job_t), in the
 * request's storage (rma_request_job_new): 1 when it did (*job), 0 when the caller copies.
 * Nothing is counted as issued to the target: every flush and unlock drains the window's
 * copies first, whatever the target's counts say (a count moved here could be taken by
 * another thread's flush that started before). */
static int xfer_hand(rma_win_t *win, int kind, char *dst, const rma_dtl_t *dd, MPI_Aint dc,
                     const char *src, const rma_dtl_t *sd, MPI_Aint sc, rma_xfer_job_t **job)
{
    rma_xfer_job_t *x = rma_request_job_new();
    uintptr_t lo, hi;
    int first;

    if (x == NULL)
        return 0;
    *x = (rma_xfer_job_t){.job = {.run = job_copy, .owner = win},
                          .win = win,
                          .dst = dst,
                          .src = src,
                          .dst_dtl = dd,
                          .src_dtl = sd,
                          .dst_count = dc,
                          .src_count = sc};
    if (atomic_load_explicit(&rma_dtl_before_free, memory_order_relaxed) != drain_all)
        atomic_store_explicit(&rma_dtl_before_free, drain_all, memory_order_relaxed); /* once */
    if (win->mt)
        pthread_mutex_lock(&win->mtx);
    first = atomic_fetch_add_explicit(&win->handed, 1, memory_order_acq_rel) == 0;
    bytes_of(dst, dd, dc, &lo, &hi); /* a put writes window memory, a get the origin's */
    handed_widen(win, kind == RMA_PUT, 0, lo, hi, first);
    bytes_of(src, sd, sc, &lo, &hi);
    handed_widen(win, kind != RMA_PUT, 1, lo, hi, first);
    if (win->mt)
        pthread_mutex_unlock(&win->mtx);
    if (rma_agent_submit(&x->job) != 0) {
        atomic_fetch_sub_explicit(&win->handed, 1, memory_order_relaxed);
        rma_request_job_drop(x);
        return 0;
    }
    *job = x;
    return 1;
}

/* 1 when a put (kind) or get between origin and the target span sp touches bytes a handed
 * copy of win writes, or reads where it writes: at the origin, or in window memory mapped
 * here (the span whole at sp->local, or the parts of it in each attached region mapped
 * here, which the transfer copies to or from there). */
static int xfer_meets_handed(rma_win_t *win, int kind, const char *origin, const rma_dtl_t *od,
                             MPI_Aint ocount, const rma_tspan_t *sp, const rma_dtl_t *td,
                             MPI_Aint tcount)
{
    uintptr_t lo, hi;

    bytes_of(origin, od, ocount, &lo, &hi);
    if (handed_meets(win, 0, lo, hi, kind == RMA_GET))
        return 1;
    if (sp->local != NULL) { /* the span whole (the maps below would find the same) */
        bytes_of(sp->local, td, tcount, &lo, &hi);
        return handed_meets(win, 1, lo, hi, kind == RMA_PUT);
    }
    bytes_of((const char *)sp->taddr, td, tcount, &lo, &hi); /* target addresses */
    for (int i = 0; i < sp->nmaps; i++) {
        const rma_dyn_hit_t *m = &sp->maps[i];
        uintptr_t a = lo > m->lo ? lo : m->lo, b = hi < m->hi ? hi : m->hi;
        if (m->local != NULL && a < b &&
            handed_meets(win, 1, (uintptr_t)m->local + (a - m->lo),
                         (uintptr_t)m->local + (b - m->lo), kind == RMA_PUT))
            return 1;
    }
    return 0;
}

/* rma_xfer_slow, and rma_xfer_req when job is not NULL */
static int xfer(rma_win_t *win, int kind, void *origin, MPI_Aint ocount, MPI_Datatype otype,
                int trank, MPI_Aint tdisp, MPI_Aint tcount, MPI_Datatype ttype, const char *func,
                rma_xfer_job_t **job)
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
    if ((rc = rma_dtl_get(otype, &od)) != MPI_SUCCESS)
        return rma_dtl_err(win, func, rc, "origin");
    if ((rc = rma_dtl_get(ttype, &td)) != MPI_SUCCESS)
        return rma_dtl_err(win, func, rc, "target");
    if (rma_buf_missing(origin, ocount, otype))
        return rma_err(win, func, MPI_ERR_BUFFER, "the origin buffer is NULL and the count is %ld",
                       (long)ocount);
    if (__builtin_mul_overflow(ocount, od->size, &obytes) ||
        __builtin_mul_overflow(tcount, td->size, &tbytes))
        return rma_err(win, func, MPI_ERR_COUNT, "count times datatype size overflows");
    if ((rc = rma_origin_span_check(win, od, ocount, "origin", func)) != MPI_SUCCESS)
        return rc;
    rc = rma_target_resolve(win, trank, tdisp, td, tcount, &span, func);
    if (rc == MPI_SUCCESS && obytes != tbytes)
        rc = rma_err(win, func, MPI_ERR_TYPE,
                     "the origin buffer holds %ld bytes but the target buffer holds %ld: the "
                     "type signatures differ",
                     (long)obytes, (long)tbytes);
    if (rc != MPI_SUCCESS || tbytes == 0) {
        rma_tspan_done(&span);
        if (rc == MPI_SUCCESS)
            win->ops_in_fence = 1;
        return rc;
    }
    win->ops_in_fence = 1;
    if ((rc = rma_tspan_gate(win, trank, &span)) != 0) {
        rma_tspan_done(&span);
        return rma_ctl_fail(win, func, trank, rc);
    }
    /* a copy the agent still makes may touch the same bytes: it goes first. Window memory
     * it copies to or from is mapped here, and never mapped at another address here, so
     * addresses tell. */
    if (rma_unlikely(atomic_load_explicit(&win->handed, memory_order_acquire) != 0) &&
        xfer_meets_handed(win, kind, origin, od, ocount, &span, td, tcount))
        rma_xfer_drain_slow(win);

    /* the whole target span is mapped: copy without the transport (or have the agent copy
     * while the caller goes on) */
    if (span.local != NULL) {
        if (job != NULL && !win->targets[trank].local && rma_env.agent_copy > 0 &&
            (size_t)tbytes >= rma_env.agent_copy && rma_env.agent != RMA_AGENT_OFF &&
            rma_agent_has_core() &&
            (kind == RMA_PUT
                 ? xfer_hand(win, kind, span.local, td, tcount, origin, od, ocount, job)
                 : xfer_hand(win, kind, origin, od, ocount, span.local, td, tcount, job))) {
            /* handed over */
        } else if (kind == RMA_PUT)
            rma_dtl_copy(span.local, td, tcount, origin, od, ocount);
        else
            rma_dtl_copy(origin, od, ocount, span.local, td, tcount);
        rma_tspan_done(&span);
        return MPI_SUCCESS;
    }
    memset(&x, 0, offsetof(xfer_t, liov));
    x.origin = origin;
    x.mv = (rma_mover_t){.win = win,
                         .trank = trank,
                         .write = kind == RMA_PUT,
                         .span = &span,
                         .max_iov = (int)(rma_env.cma_batch < 1024 ? rma_env.cma_batch : 1024),
                         .liov = x.liov,
                         .riov = x.riov};
    if (win->targets[trank].nm.hx_piece > 0) { /* off node, or shm with messages */
        x.hx = (rma_hx_t){.win = win, .trank = trank, .write = kind == RMA_PUT};
        x.mv.hx = &x.hx;
        x.mv.hx_piece = rma_nm_hx_piece(&win->targets[trank].nm, kind == RMA_PUT, (size_t)tbytes);
    }
    rc = rma_dtl_walk_pairs(td, tcount, od, ocount, xfer_piece, &x);
    if (x.mv.hx != NULL)
        mover_send_hx(&x.mv);
    if (rc == 0)
        rma_mover_flush(&x.mv);
    if (x.mv.ncma > 0 && win->targets[trank].local)
        rma_expose_note(win, trank, x.mv.cma_addr, (size_t)tbytes, x.mv.cma_region);
    else if (!win->targets[trank].local && rc == 0 && x.mv.err == 0)
        rma_expose_note_net(win, trank, span.taddr, (size_t)tbytes,
                            rma_tspan_region(&span, span.taddr));
    rma_tspan_done(&span);
    if (rc == -1 && x.mv.err == 0)
        return rma_err(win, func, MPI_ERR_NO_MEM, "out of memory walking the datatypes");
    if (x.mv.err != 0)
        return rma_err(win, func, MPI_ERR_OTHER, "%s %s rank %d (pid %d) failed: %s%s",
                       win->targets[trank].local ? "cross-memory" : "UCX",
                       kind == RMA_PUT ? "write to" : "read from", trank, span.pid,
                       strerror(-x.mv.err), rma_err_cma_hint(-x.mv.err, win->targets[trank].local));
    return MPI_SUCCESS;
}

int rma_xfer_slow(rma_win_t *win, int kind, void *origin, MPI_Aint ocount, MPI_Datatype otype,
                  int trank, MPI_Aint tdisp, MPI_Aint tcount, MPI_Datatype ttype, const char *func)
{
    return xfer(win, kind, origin, ocount, otype, trank, tdisp, tcount, ttype, func, NULL);
}

int rma_xfer_req(rma_win_t *win, int kind, void *origin, MPI_Aint ocount, MPI_Datatype otype,
                 int trank, MPI_Aint tdisp, MPI_Aint tcount, MPI_Datatype ttype, const char *func,
                 rma_xfer_job_t **job)
{
    *job = NULL;
    return xfer(win, kind, origin, ocount, otype, trank, tdisp, tcount, ttype, func, job);
}
