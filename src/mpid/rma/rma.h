/*
 * rma.h - the device core's entry points for data movement.
 *
 * rma_put/rma_get are the hot path: a same-node target whose memory is mapped here, a
 * predefined datatype with equal counts, inside an access epoch -> one range check and one
 * memcpy. Everything else (derived datatypes, dynamic windows, memory reached by CMA, and
 * every error) goes out of line to rma_xfer_slow.
 */
#ifndef RMA_RMA_H
#define RMA_RMA_H

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mpid/rma/agent.h"
#include "windows/win.h"

/* MPICH handle encoding: builtin datatypes have kind 01 in bits 31..30, object type 0011
 * (datatype) in bits 29..26, and carry their size in bits 15..8 (MPICH ABI, shared by every
 * MPICH-family library). Other builtin handles (MPI_COMM_WORLD, MPI_SUM) are no datatype. */
#define RMA_DT_IS_BUILTIN(dt)   (((unsigned)(dt)&0xfc000000u) == 0x4c000000u)
#define RMA_DT_BUILTIN_SIZE(dt) (((unsigned)(dt) >> 8) & 0xffu)

enum { RMA_PUT = 0, RMA_GET = 1 };

/* A NULL buffer with a positive count of a predefined datatype can address nothing (with a
 * derived datatype, NULL is MPI_BOTTOM and the type's displacements are absolute). */
static inline int rma_buf_missing(const void *buf, MPI_Aint count, MPI_Datatype type)
{
    unsigned h = (unsigned)type;
    return buf == NULL && count > 0 &&
           (RMA_DT_IS_BUILTIN(type) ||
            (h >= (unsigned)MPI_FLOAT_INT && h <= (unsigned)MPI_LONG_DOUBLE_INT));
}

struct rma_dtl;

/* Where a target buffer is. `local` when all of it is mapped here contiguously (NULL
 * otherwise); taddr is its address in the target process; the target addresses of each map
 * are mapped here at maps[i].local (pieces there are copied directly, or updated with CPU
 * atomics when .atomic), and every other byte is reached through the transport (pid). */
typedef struct rma_tspan {
    char *local;
    uintptr_t taddr;
    int pid;
    void *key; /* off-node targets: the remote key of the window memory */
    int nmaps;
    size_t region;       /* create windows: the target window's size */
    rma_win_t *dyn_win;  /* dynamic windows, off-node targets: whose keys the maps hold ... */
    int dyn_t;           /* ... of this target (rma_win_dyn_use) */
    rma_dyn_hit_t *maps; /* map_buf, or allocated when more regions are needed */
    rma_dyn_hit_t map_buf[4];
} rma_tspan_t;

/* The span's map (window, or attached region) holding target byte ta, or NULL. */
static inline const rma_dyn_hit_t *rma_tspan_hit(const rma_tspan_t *sp, uintptr_t ta)
{
    for (int i = 0; i < sp->nmaps; i++)
        if (ta >= sp->maps[i].lo && ta < sp->maps[i].hi)
            return &sp->maps[i];
    return NULL;
}

/* The map holding target bytes [ta, ta+len) whole and mapped here, or NULL. */
static inline const rma_dyn_hit_t *rma_tspan_map(const rma_tspan_t *sp, uintptr_t ta, size_t len)
{
    const rma_dyn_hit_t *h = rma_tspan_hit(sp, ta);

    return h != NULL && h->local != NULL && len <= h->hi - ta ? h : NULL;
}

/* 1 when some of the span's bytes are mapped here. */
static inline int rma_tspan_mapped(const rma_tspan_t *sp)
{
    for (int i = 0; i < sp->nmaps; i++)
        if (sp->maps[i].local != NULL)
            return 1;
    return 0;
}

/* A lock MPI_Win_lock left for later on off-node target trank (its gate, netmod.h) is
 * taken now, as the transport does before it sends. 0 or -errno. */
static inline int rma_target_gate(rma_win_t *win, int trank)
{
    rma_target_t *tg = &win->targets[trank];

    return tg->local || !rma_nm_gated(&tg->nm) ? 0 : rma_nm_gate(&tg->nm);
}

/* Before an off-node target's bytes mapped here are loaded or stored (rma_target_gate). A
 * dynamic window's target may have regions UCX maps here (an MPI_Alloc_mem block from
 * UCX) beside others it serves. 0 or -errno. */
static inline int rma_tspan_gate(rma_win_t *win, int trank, const rma_tspan_t *sp)
{
    return rma_tspan_mapped(sp) ? rma_target_gate(win, trank) : 0;
}

/* Bytes from ta to the next boundary between maps (or transport-reached bytes), at most
 * len: a piece is cut there so that each part is handled one way. */
static inline size_t rma_tspan_run(const rma_tspan_t *sp, uintptr_t ta, size_t len)
{
    uintptr_t next = UINTPTR_MAX;

    for (int i = 0; i < sp->nmaps; i++) {
        if (ta >= sp->maps[i].lo && ta < sp->maps[i].hi)
            next = sp->maps[i].hi;
        else if (sp->maps[i].lo > ta && sp->maps[i].lo < next)
            next = sp->maps[i].lo;
    }
    return next - ta < len ? next - ta : len;
}

/* The remote key of the bytes at ta (off-node targets; dynamic windows: the region's). */
static inline void *rma_tspan_key(const rma_tspan_t *sp, uintptr_t ta)
{
    const rma_dyn_hit_t *h = rma_tspan_hit(sp, ta);

    return h != NULL && h->key != NULL ? h->key : sp->key;
}

/* Bytes of the window or attached region holding target address ta (what moving it onto
 * a shared segment would copy); for a create window its whole size. */
static inline size_t rma_tspan_region(const rma_tspan_t *sp, uintptr_t ta)
{
    const rma_dyn_hit_t *h = rma_tspan_hit(sp, ta);

    return h != NULL ? h->hi - h->lo : sp->region;
}

/* Moves bytes between a target span and local memory: directly where the span is mapped
 * here, batched into the transport (CMA) elsewhere, pieces cut where they cross from one
 * region to the next. CMA writes are bracketed for the owner's agent (windows/expose.c). */
typedef struct rma_mover {
    rma_win_t *win;
    int trank;
    int write; /* 1: local -> target */
    int sync;  /* 1: an accumulate's read-modify-write, under the target's stripes: pieces
                  go at once (xfer_sync), complete on return, and wait for nothing else */
    const rma_tspan_t *span;
    int niov, max_iov;
    int err;                   /* -errno of a failed transport call */
    int ncma;                  /* pieces that went through the transport ... */
    uintptr_t cma_addr;        /* ... the first one's target address ... */
    size_t cma_region;         /* ... and the size of the region holding it */
    void *key;                 /* the remote key of the batched pieces */
    struct iovec *liov, *riov; /* the caller's arrays of max_iov entries */
    struct rma_hx *hx;         /* off-node: small pieces collected for the target's agent ... */
    size_t hx_piece;           /* ... those of at most this many bytes (rma_nm_hx_piece) */
} rma_mover_t;

/* Moves len bytes at target address ta from/to buf; a batch is flushed when full.
 * 0 or -errno (also kept in mv->err). */
int rma_mover_piece(rma_mover_t *mv, uintptr_t ta, char *buf, size_t len);

/* Sends what is batched: when it returns 0, every piece so far has arrived (with sync)
 * or has been issued (done at the target's next flush). */
int rma_mover_flush(rma_mover_t *mv);

/* Raises the error for rma_dtl_get's failure `rc` on the `side` ("origin", "target",
 * "result") datatype: MPI_ERR_TYPE (or MPI_ERR_NO_MEM), saying why. */
int rma_dtl_err(rma_win_t *win, const char *func, int rc, const char *side);

/* MPI_SUCCESS when `count` elements of an origin-side layout (`side`: "origin", "result")
 * span a representable range of addresses; else MPI_ERR_COUNT, raised on the window. */
int rma_origin_span_check(rma_win_t *win, const struct rma_dtl *dtl, MPI_Aint count,
                          const char *side, const char *func);

/* Frees what rma_target_resolve allocated for a span, and ends its use of an off-node
 * dynamic target's keys and mappings (rma_win_dyn_done). */
static inline void rma_tspan_done(rma_tspan_t *sp)
{
    if (sp->maps != sp->map_buf)
        free(sp->maps);
    if (sp->dyn_win != NULL)
        rma_win_dyn_done(sp->dyn_win, sp->dyn_t);
}

/* Checks rank, access epoch and that `tcount` elements of layout `td` at displacement
 * `tdisp` lie inside the target window (or an attached region), and says where they are:
 * memory of a same-node target mapped here (a create window's mapped first if its owner
 * has moved it since: rma_expose_refresh), or an off-node target's window memory that
 * UCX maps here (nm.data_map, which then covers every span: its pieces never reach the
 * transport, the host-assisted or the rendezvous path; mapped out of line only, since its
 * accumulates take the stripes of the target's node, not the inline path's). MPI_SUCCESS,
 * or the error raised on the window (MPI_ERR_RANK, MPI_ERR_RMA_SYNC, MPI_ERR_RMA_RANGE).
 * The caller handles MPI_PROC_NULL first. */
int rma_target_resolve(rma_win_t *win, int trank, MPI_Aint tdisp, const struct rma_dtl *td,
                       MPI_Aint tcount, rma_tspan_t *out, const char *func);

/* General Put/Get: validates everything, raises errors on the window. */
int rma_xfer_slow(rma_win_t *win, int kind, void *origin, MPI_Aint ocount, MPI_Datatype otype,
                  int trank, MPI_Aint tdisp, MPI_Aint tcount, MPI_Datatype ttype, const char *func)
    __attribute__((noinline));

/* Where `n` bytes at displacement `tdisp` of target `tg` are mapped here, or NULL when the
 * fast path does not apply (the slow path then decides, and reports any error). */
static inline char *rma_direct_addr(const rma_target_t *tg, MPI_Aint tdisp, size_t n)
{
    MPI_Aint off;
    uintptr_t ta;

    if (rma_unlikely(tdisp < 0 || __builtin_mul_overflow(tdisp, (MPI_Aint)tg->disp_unit, &off) ||
                     n > (size_t)tg->size || (size_t)off > (size_t)tg->size - n))
        return NULL;
    ta = tg->remote_base + (uintptr_t)off;
    /* map_len is published last (windows/expose.c): read it first, with acquire (a plain
     * load on x86), so that map_lo and map_local are at least as new */
    size_t mlen = __atomic_load_n(&tg->map_len, __ATOMIC_ACQUIRE);
    if (rma_unlikely(ta < tg->map_lo || ta - tg->map_lo > mlen || n > mlen - (ta - tg->map_lo)))
        return NULL;
    return tg->map_local + (ta - tg->map_lo);
}

static inline int rma_xfer(rma_win_t *win, int kind, void *origin, MPI_Aint ocount,
                           MPI_Datatype otype, int trank, MPI_Aint tdisp, MPI_Aint tcount,
                           MPI_Datatype ttype, const char *func)
{
    if (rma_likely((unsigned)trank < (unsigned)win->nranks && otype == ttype && ocount == tcount &&
                   RMA_DT_IS_BUILTIN(otype) && (unsigned long)ocount < (1ul << 48) &&
                   origin != NULL)) {
        rma_target_t *tg = &win->targets[trank];
        size_t n = (size_t)ocount * RMA_DT_BUILTIN_SIZE(otype);
        char *dst;
        if (rma_likely((win->all_access | __atomic_load_n(&tg->access, __ATOMIC_ACQUIRE)) &&
                       (dst = rma_direct_addr(tg, tdisp, n)) != NULL)) {
            win->ops_in_fence = 1;
            if (kind == RMA_PUT)
                memcpy(dst, origin, n);
            else
                memcpy(origin, dst, n);
            return MPI_SUCCESS;
        }
    }
    return rma_xfer_slow(win, kind, origin, ocount, otype, trank, tdisp, tcount, ttype, func);
}

/* A request-based operation's copy between origin memory and off-node window memory
 * mapped here, of at least RMA_AGENT_COPY bytes, is made by the progress agent while the
 * caller goes on (the host-assisted paper's overlap on a machine whose transport is the
 * CPU's own copy): the request completes when the copy is done, and a thread that waits
 * for it before the agent took it makes it itself (agent.h jobs). Both layouts are the
 * caller's, kept alive until the copy is done: MPI_Type_free and every completion call of
 * the window wait for the window's copies (rma_xfer_drain). */
typedef struct rma_xfer_job {
    rma_agent_job_t job;
    rma_win_t *win;
    char *dst;
    const char *src;
    const struct rma_dtl *dst_dtl, *src_dtl;
    MPI_Aint dst_count, src_count;
} rma_xfer_job_t;

/* rma_xfer_slow for a request-based operation: *job is the copy handed to the agent, in
 * a request's storage (rma_request_job_new; rma_request_done takes it), or NULL when the
 * operation is complete here. */
int rma_xfer_req(rma_win_t *win, int kind, void *origin, MPI_Aint ocount, MPI_Datatype otype,
                 int trank, MPI_Aint tdisp, MPI_Aint tcount, MPI_Datatype ttype, const char *func,
                 rma_xfer_job_t **job);

/* The copies handed to the agent so far, by who made them (RMAX_Agent_copies). */
void rma_xfer_copies(long long *by_agent, long long *by_caller);

/* Every copy handed to the agent for win is done when this returns: before a completion
 * call of the window, a later operation that could touch the same bytes, and (for every
 * window) a datatype's free. One load while there are none. */
void rma_xfer_drain_slow(rma_win_t *win);
static inline void rma_xfer_drain(rma_win_t *win)
{
    if (rma_unlikely(atomic_load_explicit(&win->handed, memory_order_acquire) != 0))
        rma_xfer_drain_slow(win);
}

/* Checks a request-based operation before it runs: req not NULL and, unless the target is
 * MPI_PROC_NULL, a passive target epoch open (MPI-3.1 11.3). Sets *req to MPI_REQUEST_NULL,
 * so that every error path leaves it so. MPI_SUCCESS or the error raised on the window. */
int rma_request_check(rma_win_t *win, MPI_Request *req, int trank, const char *func);

/* Storage for the agent's copy of a request-based operation (rma_xfer_req): part of the
 * request rma_request_done makes, or given back with rma_request_job_drop. NULL when out
 * of memory (the caller then copies). */
rma_xfer_job_t *rma_request_job_new(void);
void rma_request_job_drop(rma_xfer_job_t *job);

/* Returns in *req the request of the operation just issued to trank: a generalized
 * request, so MPI_Wait/Test/Waitall/Request_free work on it. Complete at once when nothing
 * to trank is outstanding (same-node targets); else it starts a flush of trank that
 * MPI_Test and MPI_Wait drive, and completes when that is over. MPI_SUCCESS or the error
 * raised on the window. With job (rma_xfer_req), it completes when the agent's copy is
 * done instead. */
int rma_request_done(rma_win_t *win, int trank, MPI_Request *req, rma_xfer_job_t *job,
                     const char *func);

/* Drives req once if it is one of these still in flight (MPICH polls a generalized request
 * in MPI_Test, MPI_Wait and their kin, but not in MPI_Request_get_status). */
void rma_request_poke(MPI_Request req);

/* Completes the requests the program freed before they completed, where they are over
 * (after MPI_Win_free: all of that window's). */
void rma_request_reap_all(void);

/* A window's free, once the window is out of the table: returns when no request still uses
 * it (a request of that window driven on another thread). */
void rma_request_quiesce(void);

#endif
