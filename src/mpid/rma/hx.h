/*
 * hx.h - host-assisted transfers (doc/protocols.md, "Host-assisted transfers").
 *
 * A put or get to an off-node target whose layout is many small pieces is not one RDMA per
 * piece: the origin sends the target's flattened layout, compressed into strided runs, and
 * for a put the packed data, in one active message per RMA_HX_MSG bytes. The target's
 * progress agent checks the request against the window (handle, serial, bounds, lengths)
 * and scatters it into window memory, or gathers it and answers with the data in one
 * reply; the origin unpacks the reply into its own layout. A put is acknowledged: a flush
 * of the target (netmod.h) returns once every acknowledgement has come back.
 */
#ifndef RMA_HX_H
#define RMA_HX_H

#include <stddef.h>
#include <stdint.h>

#include "windows/win.h"

/* ------------------------------------------------------------------ the wire */

#define RMA_HX_MAGIC 0x52484158u /* "RHAX" */

enum { RMA_HX_PUT = 1, RMA_HX_GET, RMA_HX_ACC };

/* A put or get of one contiguous piece whose data travels by rendezvous (netmod.h
 * RMA_NM_AM_RNDV): a put's record follows the header in the message's header and the
 * target's agent receives the data straight into window memory; a get is answered with the
 * data sent straight from window memory, which the origin receives into its buffer. */
#define RMA_HX_F_RNDV 0x1u

/* The whole of a passive-target epoch under a shared lock that MPI_Win_lock left for later
 * (sync/lock.c): the target's agent takes the shared lock on its window memory, serves the
 * request (a put or a get), releases the lock and answers; while an exclusive lock is held
 * or wanted there, the request waits at the agent. */
#define RMA_HX_F_SHARED 0x2u

/* A notification rides on the request (a put or a get, sync/ctl.h rma_ctl_notify): once
 * the agent has applied the records, it adds note to the word at note_off of its node's
 * control segment, a word of the ranks' lines, and then answers. */
#define RMA_HX_F_NOTE 0x4u

/* With RMA_HX_F_NOTE on a put, or on no records at all (a notification alone): the origin
 * waits for no answer, and the agent sends none. Only where the target applies this
 * process's requests in issue order (tcp alone, nm->am_rma): a later request's answer then
 * says that this one took effect too, and the notification itself tells the target that
 * the records before it did (sync/ctl.h rma_ctl_announce, rma_ctl_notify_sent). Saves the
 * answer's send at the target and its receipt here, both on the critical path of a PSCW
 * or fence round. */
#define RMA_HX_F_QUIET 0x8u

/* A request: the header, then nrec records, then the data: for a put the bytes the records
 * cover, in record order; for an accumulate (RMA_HX_ACC) the compare element of a
 * compare-and-swap, then the origin's elements (none for MPI_NO_OP). */
typedef struct rma_hx_hdr {
    uint32_t magic;
    uint8_t kind;    /* RMA_HX_PUT, RMA_HX_GET, RMA_HX_ACC */
    uint8_t flags;   /* RMA_HX_F_* */
    uint8_t op;      /* accumulates: RMA_OP_* (mpid/rma/acc.h) */
    uint8_t acc;     /* ... RMA_ACC, RMA_GACC, RMA_FOP or RMA_CAS */
    int32_t basic;   /* ... the predefined datatype of every element */
    int32_t win;     /* the target's handle of the window */
    uint32_t serial; /* ... and the target's serial number of it (rma_win_t.serial) */
    int32_t origin;  /* origin's rank in MPI_COMM_WORLD (for the log) */
    uint32_t nrec;
    uint64_t bytes;          /* data bytes the records cover */
    uint64_t cookie;         /* returned in the reply */
    uint64_t note_off, note; /* RMA_HX_F_NOTE */
} rma_hx_hdr_t;

/* count pieces of len bytes, the i-th at target address addr + i * stride */
typedef struct rma_hx_rec {
    uint64_t addr;
    int64_t stride;
    uint32_t len, count;
} rma_hx_rec_t;

/* The answer to every request: status 0, or -EINVAL when the agent dropped it; a get's
 * reply carries the bytes gathered, in record order, a fetching accumulate's the previous
 * values of the elements. */
typedef struct rma_hx_reply {
    uint64_t cookie;
    int32_t status;
    uint32_t pad;
} rma_hx_reply_t;

/* ------------------------------------------------------------------ the origin */

/* Pieces of one transfer, coalesced into runs as they come: count pieces of len bytes, the
 * i-th at target address taddr + i * tstride and at local address laddr + i * lstride. */
typedef struct rma_hx_run {
    uint64_t taddr;
    int64_t tstride;
    char *laddr;
    int64_t lstride;
    uint64_t count;
    uint32_t len;
} rma_hx_run_t;

typedef struct rma_hx {
    rma_win_t *win;
    int trank;
    int write;     /* 1: put (or accumulate) */
    uint8_t flags; /* RMA_HX_F_* of every request sent for it */
    int noted;     /* its last get request carries the notification note_off, note */
    uint64_t note_off, note;
    rma_hx_run_t *runs;
    int nruns, cap;
    uint64_t pieces, bytes;
} rma_hx_t;

/* Registers the active-message handlers (once UCX runs). */
void rma_hx_net_init(void);

/* Adds one piece; 0 or -ENOMEM. */
int rma_hx_add(rma_hx_t *hx, uintptr_t ta, char *buf, size_t len);

/* Sends the pieces added, issued: complete at the target's next flush, which waits for the
 * acknowledgements and the gets' answers (a refused request's -EINVAL is its error). A get
 * is marked for MPI_Win_flush_local and noted so that a later put to its bytes does not
 * overtake it. Empties hx. 0 or -errno. */
int rma_hx_send(rma_hx_t *hx);

/* An accumulate-family call as one request, applied by the target's agent under the
 * stripes of its whole target buffer (doc/atomicity.md). A fetching one is done (result in
 * rpk) on return; an MPI_Accumulate is issued, complete at the target's next flush, and
 * when small held back with the puts and accumulates of aggregation (below). Requests from
 * one origin to one target take effect in issue order. The runs' local addresses are
 * offsets into the packed elements opk and rpk. 0, -ENOSPC when it does not fit one request
 * (the caller takes the origin-side path), -errno. */
int rma_hx_acc(rma_hx_t *hx, int kind, int op, MPI_Datatype basic, size_t esize, const char *opk,
               const char *compare, char *rpk);

/* A put or get of n contiguous bytes between buf and target address ta of target trank
 * as a rendezvous request (RMA_HX_F_RNDV; RMA_RNDV): issued, complete at the target's
 * next flush. 0 or -errno. */
int rma_hx_rndv(rma_win_t *win, int trank, uintptr_t ta, char *buf, size_t n, int write);
#define RMA_RNDV_MAX (1u << 30) /* bytes in one rendezvous request: larger pieces are split */

/* Aggregation (ARMI): small puts to one off-node target are copied into one put request,
 * and small MPI_Accumulate calls of one op and type into one accumulate request, sent when
 * a flush of the target comes (netmod.h: every flush, unlock, fence, complete and window
 * free flushes), when an operation of another kind comes (a put after accumulates, another
 * op, a fetching accumulate), or when the next one would not fit in RMA_AGGREGATE bytes or
 * in one request's records. The first small operation after a flush goes on its own (a put
 * by RDMA), so that a lone operation + flush costs what it did; not to a peer reached over
 * tcp alone (nm->am_rma), where the request and its answer cost less than UCX's emulated
 * put and the endpoint flush after it, and not inside a lazy lock's epoch (its gate is set,
 * netmod.h), which ends as one request. Holds back the put of n
 * bytes from buf to target address ta of target trank and returns 0, or returns 1 (the
 * caller moves it), or -errno. */
typedef struct rma_hx_agg rma_hx_agg_t;
int rma_hx_agg_put(rma_win_t *win, int trank, uintptr_t ta, const char *buf, size_t n);

/* Small gets are held back too, apart from the request being filled, where UCX emulates
 * RMA with active messages (nm->am_rma: tcp alone) and inside a lazy lock's epoch, and
 * sent as one request per
 * RMA_HX_MSG bytes at the target's next flush (or when RMA_AGGREGATE bytes or 1024 runs
 * are held); the answers land in their buffers before that flush returns. Holds back the
 * get of n bytes from target address ta into buf and returns 0, or returns 1 (the caller
 * moves it), or -errno. */
int rma_hx_agg_get(rma_win_t *win, int trank, uintptr_t ta, char *buf, size_t n);

/* 1 when hx's pieces (a put's or a get's, at least RMA_HX_MIN_PIECES of them) are to be
 * held back one by one like small operations, rather than sent as a request of their own:
 * the target holds every small operation back anyway (tcp, a lazy lock's epoch) and all of
 * hx fits the aggregation buffer, so the operations of a flush go as a few requests. */
int rma_hx_agg_whole(rma_win_t *win, int trank, const rma_hx_t *hx);

/* Sends what aggregation holds back for target trank as the whole of an epoch under a
 * shared lock the target's agent takes (RMA_HX_F_SHARED), when it is one request: puts
 * alone, or gets alone within one request. Then, and when nothing is held, returns 0 (a
 * flush completes what was sent); 1 when it is not one such request (nothing was sent);
 * or -errno. */
int rma_hx_agg_shared(rma_win_t *win, int trank);

/* Where the target applies requests in issue order (nm->ordered) and aggregation holds
 * puts or gets for target trank: sends them (the gets first), the last request carrying
 * the notification "word at control offset off += v" (RMA_HX_F_NOTE), and returns 0; its
 * answer, which a flush or settle waits for, says that all took effect. 1 when neither is
 * held, or accumulates are, or (puts_only) gets are (nothing was sent), or -errno. */
int rma_hx_agg_notify(rma_win_t *win, int trank, size_t off, uint64_t v, int puts_only);

/* The same without an answer (RMA_HX_F_QUIET; nm->am_rma targets only): the puts held back
 * for target trank, or nothing when none are, go with the notification in one request
 * that nobody waits for, and 0 is returned; 1 when gets or accumulates are held (nothing
 * was sent), or -errno. */
int rma_hx_notify_quiet(rma_win_t *win, int trank, size_t off, uint64_t v);

/* 1 when aggregation holds back operations for nm's target (puts, gets or accumulates). */
int rma_hx_agg_holds(const rma_nm_tgt_t *nm);

/* 1 when requests to nm's target's agent are held back (puts, accumulates, gets) or not
 * acknowledged yet: an accumulate that takes another path (network atomics, origin-side)
 * flushes them first, so that it overtakes none of them (one origin's order, below). */
int rma_hx_in_flight(rma_nm_tgt_t *nm);

/* Drops what is held back for nm unsent (the window is being freed) and frees it. */
void rma_hx_agg_free(rma_nm_tgt_t *nm);

/* One origin's order. MPI orders accumulates only; programs written against MPICH also
 * expect a put, get or accumulate to bytes that an earlier operation of this origin to the
 * same target touched to take effect after it, with no flush in between (ARMCI-MPI's
 * location consistency: a put, accumulates, then a get of one patch, each completed only
 * locally). Aggregation, the agent's deferred accumulates and rendezvous transfers could
 * reorder such a pair, so each records the target bytes it touches (nm->ord_*, cleared by a
 * flush that completed everything), and an operation about to be issued to target bytes
 * [lo, hi) that overlap one it could overtake orders the target first (rma_ctl_order: what
 * aggregation holds is sent, and where the transport does not keep issue order, a flush).
 * Disjoint bytes cost nothing: one load while nothing is recorded. what: RMA_HX_ORD_*;
 * held: aggregation holds this one back. 0 or -errno. */
enum {
    RMA_HX_ORD_PUT,
    RMA_HX_ORD_GET,
    RMA_HX_ORD_ACC /* an accumulate-family request to the target's agent, or held back (one
                      on another path waits for all of them: rma_hx_in_flight) */
};
int rma_hx_order_slow(rma_win_t *win, int trank, uint64_t lo, uint64_t hi, int what, int held);

static inline int rma_hx_order(rma_win_t *win, int trank, uint64_t lo, uint64_t hi, int what,
                               int held)
{
    if (atomic_load_explicit(&win->targets[trank].nm.ord_kinds, memory_order_relaxed) == 0)
        return 0;
    return rma_hx_order_slow(win, trank, lo, hi, what, held);
}

/* Frees what rma_hx_add allocated. */
void rma_hx_done(rma_hx_t *hx);

/* Tests only: sends a raw request (header hdr of hlen bytes, its cookie replaced; body
 * data, by rendezvous when rndv is set) to target of win and waits for the answer. Returns
 * the status the target's agent answered (0, or -EINVAL when it dropped the request), or
 * -errno when it could not be sent; a header shorter than rma_hx_hdr_t, or one that asks
 * for no answer (RMA_HX_F_QUIET), gets none (0 once sent). Data in an answer is dropped. */
int rma_hx_send_raw(MPI_Win win, int target, const void *hdr, size_t hlen, const void *data,
                    size_t len, int rndv);

#endif
