/*
 * netmod.h - the transport boundary. The device core loads and stores directly whatever a
 * target has mapped here; every other byte and every control word of a target goes through
 * the ops table the window picked for that target when it was created:
 *
 *   shm  same node, memory not mapped here: cross-memory attach (process_vm_readv/writev);
 *        in a window whose UCX runs, with UCX's messages for puts of many small pieces
 *        (rma_nm_shm_with)
 *   ucx  another node (or every peer with RMA_NETMOD_ONLY=1): UCX RDMA, network atomics
 *        and active messages (netmod/ucx)
 *
 * Two tables. rma_netmod_ops_t is the data path, keyed by (window, target): rma_nm_tgt_t is
 * what one window knows about reaching one target, including the remote keys exchanged when
 * the window was created. rma_netmod_t is the process-wide side of the transport to other
 * nodes (rma_net): start, connection, exposing memory, progress, active-message handlers,
 * teardown. The core names no transport but through these two.
 */
#ifndef RMA_NETMOD_H
#define RMA_NETMOD_H

#include <mpi.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/uio.h>

#include "sync/wait.h"

struct rma_netmod_ops;
struct rma_hx_agg;

/* What must happen before the first byte goes to a target: a lock that MPI_Win_lock left
 * for later (sync/lock.c). While a target's gate is set, every transport call that would
 * send to it first calls rma_nm_gate, whose open runs once (other threads wait for it) and
 * clears the gate. */
typedef struct rma_nm_gate {
    int (*open)(struct rma_nm_gate *g); /* 0 or -errno */
} rma_nm_gate_t;

/* shm: the small transfers to one target held until its next flush (nm_shm.c). */
typedef struct rma_shm_held rma_shm_held_t;

/* shm with messages (rma_nm_shm_with): the way a lone small operation to the target goes.
 * By cross-memory attach, one system call (~2.5 us here) that needs nothing of the target;
 * or as a request to the target's agent, in UCX's messages: ~1 us while the agent has a
 * core, tens of microseconds to milliseconds when it must take one from a computing rank.
 * Each round (a flush, a fetch) weighs what the two cost lately, measured on this target's
 * own calls and requests, and keeps the cheaper; it looks at the other way now and then,
 * less often while the looks confirm the choice (nm_shm.c). */
enum { RMA_NM_WAY_CMA, RMA_NM_WAY_MSG };
typedef struct rma_nm_way {
    size_t small;            /* pieces of at most this many bytes may go by request (0:
                                never; then nothing here is used) */
    _Atomic int msg;         /* 1: they go by request now */
    _Atomic uint64_t acc[2]; /* cross-memory calls and requests of at most `small` bytes
                                since the last round: how many, and the ns they took
                                (rma_nm_way_note) */
    _Atomic int flushing;    /* flushes under way: the requests they send are timed (those sent
                                earlier were not waited for at once) */
    atomic_flag busy;        /* a round ends (rma_nm_way_settle): the rest is its */
    uint32_t est[2];         /* moving averages of one's cost, ns (0: not measured) ... */
    uint32_t folds[2];       /* ... over this many rounds (at most 16) */
    uint32_t since, every;   /* rounds since the other way was last looked at, and between
                                looks ... */
    uint64_t since_t0;       /* ... and when the last look ended */
    uint64_t round_ns;       /* what a round took between the last two looks */
    int look, looked;        /* rounds left of a look at the other way (0: none), and
                                taken ... */
    uint64_t look_t0;        /* ... and when it began */
} rma_nm_way_t;

/* The kinds of rma_nm_tgt_t.ord_kinds: puts and gets aggregation holds back, accumulates
 * sent to the target's agent or held back (the agent may defer one), rendezvous transfers
 * (their data lands later), RDMA puts and gets the transport left queued where it keeps no
 * issue order (UCX's lanes: a later operation on another lane, or a copy through memory UCX
 * maps here, goes first). */
enum {
    RMA_NM_ORD_PUT_HELD,
    RMA_NM_ORD_GET_HELD,
    RMA_NM_ORD_ACC,
    RMA_NM_ORD_RNDV,
    RMA_NM_ORD_QUEUED_PUT,
    RMA_NM_ORD_QUEUED_GET,
    RMA_NM_ORD_NKINDS
};

/* One (window, target) as the transport sees it. */
typedef struct rma_nm_tgt {
    const struct rma_netmod_ops *ops; /* NULL: the target is reached only by load/store */
    void *ep;                         /* ucx: endpoint to the target's process */
    int pid;                          /* shm: the target's process id */
    int world;                        /* the target's rank in MPI_COMM_WORLD */
    _Atomic unsigned issued;          /* operations issued to the target (rma_nm_issued) */
    _Atomic unsigned flushed;         /* ... how many of them the last flush covered */
    _Atomic unsigned lmark;           /* ... the count by which one was issued whose local
                                         completion needs a flush (rma_nm_need_local) */
    _Atomic unsigned noted;           /* ... how many when the last notification that left
                                         with nothing else outstanding went (sync/ctl.h
                                         rma_ctl_announce): rma_nm_quiet */
    _Atomic unsigned ep_ops;          /* ucx: puts, gets and atomics among them, which only an
                                         endpoint flush completes (not host-assisted requests,
                                         whose answers do) */
    _Atomic unsigned ep_flushed;      /* ... how many of them the last endpoint flush covered */
    _Atomic unsigned ep_noted;        /* ... how many when `noted` was set */
    _Atomic int ep_queued;            /* ucx: one of them waited in UCX's queue when issued
                                         (it leaves only when this process drives UCX): push */
    uintptr_t ctl_raddr;              /* target's address of its node's control segment */
    void *ctl_key;                    /* remote key of that segment */
    char *ctl_map;                    /* ucx: where that segment is mapped here, when UCX
                                         reaches it by a shared mapping (ops key_ptr):
                                         accumulate stripes are then CPU atomics on it
                                         (mpid/rma/acc.c); NULL otherwise */
    void *data_key;                   /* remote key of the target's window memory */
    char *data_map;                   /* ucx: where that memory (remote_base) is mapped
                                         here, when UCX reaches it by a shared mapping
                                         (ops key_ptr): transfers never ask the target's
                                         agent for help, and accumulates use the mapping
                                         as on the target's node (mpid/rma/acc.c);
                                         NULL otherwise */
    int dev_amo;                      /* ucx: the endpoint has a network device's atomics,
                                         which complete without the target's CPU */
    int dev_rma;                      /* ucx: ... and its RDMA: large pieces go by
                                         ucp_put/get_nbx, not as a rendezvous through the
                                         target's agent (RMA_RNDV) */
    int maps;                         /* ucx: UCX maps memory it allocated between the
                                         two processes (a sysv or posix lane), both ways */
    int ordered;                      /* ucx: the target applies this process's puts, gets
                                         and atomics in the order they were issued (UCX
                                         emulates them over one tcp stream): see order */
    int am_rma;                       /* ucx: UCX emulates puts and gets to the target with
                                         active messages (tcp alone): small gets are
                                         aggregated too (mpid/rma/hx.h) */
    size_t hx_piece;                  /* ucx: pieces of at most this many bytes go to the
                                         target's agent (mpid/rma/hx.h; 0: none) */
    size_t hx_get_piece;              /* ucx: the same for a get of many pieces */
    size_t hx_msg;                    /* ucx: data bytes in one host-assisted request */
    size_t aggregate;                 /* ucx: bytes of one aggregated request (0: off) */
    _Atomic int hx_out;               /* host-assisted requests not answered yet (hx.h) */
    _Atomic int hx_unordered;         /* ... those that may take effect out of issue order:
                                         accumulates (the agent may defer one) and
                                         rendezvous transfers (their data lands later) */
    _Atomic int hx_acks;              /* ... those that only acknowledge puts (nothing of
                                         theirs is left to land here) */
    _Atomic int hx_err;               /* ... the first refusal among them, -errno */
    struct rma_hx_agg *agg;           /* small operations held back for one request (hx.h) */
    _Atomic int primed;               /* ... a small one went on its own since the last flush
                                         (so the next are held back); a flush clears it
                                         even with nothing to complete */
    rma_nm_gate_t *_Atomic gate;      /* set: opened before anything is sent to the target */
    rma_shm_held_t *_Atomic held;     /* shm: small transfers held until a flush */
    rma_nm_way_t way;                 /* shm with messages: the way of small operations */
    _Atomic uint32_t *cma_moving;     /* the owner is moving the memory: no write now (shm;
                                         ucx, to the owner of create or attached memory whose
                                         control words are mapped here: UCX may write by
                                         CMA) ... */
    _Atomic uint32_t *cma_writers;    /* ... it waits for the writes in flight to end
                                         (rma_nm_write_begin) */
    _Atomic unsigned cma_calls;       /* shm: process_vm_readv/writev calls made */
    const void *owner;                /* the window this is a target of */
    _Atomic unsigned holding;         /* who holds operations back for the target
                                         (RMA_NM_HOLD_*, rma_nm_hold_begin) ... */
    _Atomic int hold_listed;          /* ... listed among the holders (written under the
                                         list's lock) */
    struct rma_nm_tgt *hold_next;     /* ... the next one listed */
    _Atomic unsigned ord_kinds;       /* one origin's order (hx.h rma_hx_order): the kinds
                                         of operation issued to the target that a later one
                                         could overtake, one bit a kind (RMA_NM_ORD_*) ... */
    _Atomic uint64_t ord_lo[RMA_NM_ORD_NKINDS]; /* ... and the target bytes [lo, hi) they touch; */
    _Atomic uint64_t ord_hi[RMA_NM_ORD_NKINDS]; /* ... cleared by rma_nm_ord_done */
} rma_nm_tgt_t;

/* 1 when UCX's puts and gets to t's window memory need t's worker anyway: tcp alone, or
 * memory that UCX neither maps here nor reaches with a device's RDMA (it emulates RDMA on
 * it with active messages). A request to the target's agent then costs no more, and a
 * shared lock can ride on it (sync/lock.c, lazy locks). */
static inline int rma_nm_served(const rma_nm_tgt_t *t)
{
    return t->am_rma || (t->data_map == NULL && !t->dev_rma);
}

/* 1 while t's gate is set: a lazy lock's epoch, whose small operations are held back. */
static inline int rma_nm_gated(rma_nm_tgt_t *t)
{
    return atomic_load_explicit(&t->gate, memory_order_acquire) != NULL;
}

/* 1 when t's lone small operations go to its agent as requests now (rma_nm_way_t). */
static inline int rma_nm_way_msg(const rma_nm_tgt_t *t)
{
    return t->way.small != 0 && atomic_load_explicit(&t->way.msg, memory_order_relaxed);
}

/* Pieces of at most this many bytes of a put (write) or get of `bytes` in all to t go to
 * its agent: as strided runs when one operation has many of them, or held back to go with
 * the others of the flush (mpid/rma/hx.h); a lone small one while that is its way. */
static inline size_t rma_nm_hx_piece(const rma_nm_tgt_t *t, int write, size_t bytes)
{
    if (bytes <= t->way.small && rma_nm_way_msg(t))
        return t->way.small > t->hx_piece ? t->way.small : t->hx_piece;
    return write ? t->hx_piece : t->hx_get_piece;
}

/* One cross-memory call or request (way: RMA_NM_WAY_*) to w's target took ns: counted with
 * its time in one word (RMA_NM_WAY_*_BITS), so that a round's end takes both at once. A
 * round that has 2^23 samples, or 2^39 ns (9 minutes), has enough. */
#define RMA_NM_WAY_NS_BITS 40
static inline void rma_nm_way_note(rma_nm_way_t *w, int way, uint64_t ns)
{
    uint64_t v = atomic_load_explicit(&w->acc[way], memory_order_relaxed);

    if ((v >> RMA_NM_WAY_NS_BITS) >= (1u << 23) ||
        (v & ((1ull << RMA_NM_WAY_NS_BITS) - 1)) >= (1ull << (RMA_NM_WAY_NS_BITS - 1)))
        return;
    ns = ns < (1u << 30) ? ns : (1u << 30) - 1; /* one sample counts for at most a second */
    atomic_fetch_add_explicit(&w->acc[way], (1ull << RMA_NM_WAY_NS_BITS) | ns,
                              memory_order_relaxed);
}

/* An accumulate by cross-memory attach counts as one cross-memory call of what its whole
 * read-modify-write took (stripes, read, write), as its request would be one: between
 * begin (0 when t has no way to choose, or the accumulate is larger) and end, the calls of
 * this thread are not counted one by one. Complete on return, it ends a round, as a
 * fetch answered does (the flush after it finds nothing left to complete). */
extern _Thread_local int rma_nm_way_in_op;
void rma_nm_way_settle(rma_nm_tgt_t *t);

static inline uint64_t rma_nm_way_op_begin(const rma_nm_tgt_t *t, size_t bytes)
{
    if (t->way.small == 0 || bytes > t->way.small)
        return 0;
    rma_nm_way_in_op = 1;
    return rma_now_ns();
}

static inline void rma_nm_way_op_end(rma_nm_tgt_t *t, uint64_t t0)
{
    if (t0 == 0)
        return;
    rma_nm_way_in_op = 0;
    rma_nm_way_note(&t->way, RMA_NM_WAY_CMA, rma_now_ns() - t0);
    rma_nm_way_settle(t);
}

/* A transport calls this before it sends anything to t. 0 or -errno. */
static inline int rma_nm_gate(rma_nm_tgt_t *t)
{
    rma_nm_gate_t *g = atomic_load_explicit(&t->gate, memory_order_acquire);

    return g != NULL ? g->open(g) : 0;
}

/* An operation to t was issued (after the transport took it): a flush of t must run. The
 * count, not a flag, so that a flush on one thread cannot hide an operation another
 * thread issued while it ran (MPI_THREAD_MULTIPLE). */
static inline void rma_nm_issued(rma_nm_tgt_t *t)
{
    atomic_fetch_add_explicit(&t->issued, 1, memory_order_release);
}

/* Around a transport call that may write the target's memory from this process (CMA):
 * waits while the owner moves that memory (windows/expose.c), and counts the write in
 * flight so that the owner waits for it before it write-protects the pages. Nothing when
 * t->cma_writers is NULL. */
void rma_nm_write_begin(rma_nm_tgt_t *t);
void rma_nm_write_end(rma_nm_tgt_t *t);

/* Operations were issued to t that no completed flush covers. */
static inline int rma_nm_pending(rma_nm_tgt_t *t)
{
    return atomic_load_explicit(&t->issued, memory_order_acquire) !=
           atomic_load_explicit(&t->flushed, memory_order_acquire);
}

/* A flush of t completed that covers every operation issued to it up to the count seen
 * (a value of t->issued). */
static inline int rma_nm_flushed_upto(rma_nm_tgt_t *t, unsigned seen)
{
    return (int)(atomic_load_explicit(&t->flushed, memory_order_acquire) - seen) >= 0;
}

/* Operations held back, process-wide. Aggregation (mpid/rma/hx.h) and the held
 * cross-memory transfers (shm) keep small operations until the target's next flush. MPI
 * needs that flush to complete them, but programs written against MPICH's RMA expect an
 * operation left without one to be on its way once the origin synchronizes anything:
 * ARMCI-MPI's mutexes are another window's epoch and an MPI_Send, after which the next
 * holder reads what the put wrote (its test_mutex_rmw), and its armci-test sleeps, then
 * waits in a barrier for unflushed puts to land. So MPI_Barrier, and every
 * synchronization call for the targets of other windows, first sends what any target
 * holds (rma_nm_release_held); where the transport keeps issue order (tcp) it then takes
 * effect before whatever the call sends to the same process.
 *
 * Each holder (aggregation, the held cross-memory transfers: a same-node target whose
 * small operations go to its agent has both, each under its own lock) counts the target
 * as held by it (rma_nm_hold_begin, rma_nm_hold_end, with its RMA_NM_HOLD_* bit) under its
 * lock of the target, and lists it after releasing that lock (rma_nm_hold_list, when
 * begin returned 1): the list's lock is taken before a target's, never after.
 * rma_nm_hold_drop unlists a target whose window is being freed. */
enum { RMA_NM_HOLD_AGG = 1, RMA_NM_HOLD_SHM = 2 };
extern _Atomic int rma_nm_holders;
int rma_nm_hold_begin(rma_nm_tgt_t *t, unsigned who);
void rma_nm_hold_list(rma_nm_tgt_t *t);
void rma_nm_hold_end(rma_nm_tgt_t *t, unsigned who);
void rma_nm_hold_drop(rma_nm_tgt_t *t);
void rma_nm_release_held_slow(const void *keep);

/* Sends what is held back for the targets of every window but keep (NULL: of every one).
 * One load while nothing is held. */
static inline void rma_nm_release_held(const void *keep)
{
    if (atomic_load_explicit(&rma_nm_holders, memory_order_relaxed) > 0)
        rma_nm_release_held_slow(keep);
}

/* *w = min(*w, v) or max(*w, v) (max set) */
static inline void rma_nm_ord_widen(_Atomic uint64_t *w, uint64_t v, int max)
{
    uint64_t c = atomic_load_explicit(w, memory_order_relaxed);

    while ((max ? v > c : v < c) && !atomic_compare_exchange_weak_explicit(
                                        w, &c, v, memory_order_relaxed, memory_order_relaxed))
        ;
}

/* An operation of kind k (RMA_NM_ORD_*) touching target bytes [lo, hi) was issued to t (and
 * counted in t->issued: rma_nm_ord_done). Threads of one process issue in no order MPI
 * defines: a span may cover another thread's operations too. */
static inline void rma_nm_ord_note(rma_nm_tgt_t *t, int k, uint64_t lo, uint64_t hi)
{
    unsigned bit = 1u << k;

    if (lo >= hi)
        return;
    if (atomic_load_explicit(&t->ord_kinds, memory_order_relaxed) & bit) {
        rma_nm_ord_widen(&t->ord_lo[k], lo, 0);
        rma_nm_ord_widen(&t->ord_hi[k], hi, 1);
        return;
    }
    atomic_store_explicit(&t->ord_lo[k], lo, memory_order_relaxed);
    atomic_store_explicit(&t->ord_hi[k], hi, memory_order_relaxed);
    atomic_fetch_or_explicit(&t->ord_kinds, bit, memory_order_release);
}

/* Everything issued to t before seen took effect, and nothing was issued since: no later
 * operation can overtake one (mpid/rma/hx.h rma_hx_order). An operation is recorded after
 * it was counted in t->issued, so that a flush that did not wait for it cannot clear it. */
static inline void rma_nm_ord_done(rma_nm_tgt_t *t, unsigned seen)
{
    if (atomic_load_explicit(&t->issued, memory_order_acquire) == seen)
        atomic_store_explicit(&t->ord_kinds, 0, memory_order_relaxed);
}

/* Host-assisted requests to t whose answers bring data into this process (gets, fetching
 * accumulates) are not all answered: what they write here has not landed yet. Gets still
 * held back to be sent (hx.h, aggregation) are not counted here: like every get, they are
 * marked for local completion (rma_nm_local_due). */
static inline int rma_nm_fetches_out(rma_nm_tgt_t *t)
{
    return atomic_load_explicit(&t->hx_out, memory_order_acquire) >
           atomic_load_explicit(&t->hx_acks, memory_order_acquire);
}

/* Nothing is outstanding at t but notifications, which no flush has to complete. */
static inline int rma_nm_quiet(rma_nm_tgt_t *t)
{
    unsigned issued = atomic_load_explicit(&t->issued, memory_order_acquire);

    return issued == atomic_load_explicit(&t->flushed, memory_order_acquire) ||
           issued == atomic_load_explicit(&t->noted, memory_order_acquire);
}

/* A flush of t has work: operations to complete, or aggregation to tell that a flush came
 * (primed). */
static inline int rma_nm_flush_due(rma_nm_tgt_t *t)
{
    return rma_nm_pending(t) || atomic_load_explicit(&t->primed, memory_order_relaxed);
}

/* A flush that began when the count it covers (*done counts the covered ones) was `seen`
 * completed: those are covered. */
static inline void rma_nm_covered(_Atomic unsigned *done, unsigned seen)
{
    unsigned cur = atomic_load_explicit(done, memory_order_relaxed);

    while ((int)(seen - cur) > 0 &&
           !atomic_compare_exchange_weak_explicit(done, &cur, seen, memory_order_release,
                                                  memory_order_relaxed))
        ;
}

/* ... for t->issued */
static inline void rma_nm_flushed(rma_nm_tgt_t *t, unsigned seen)
{
    rma_nm_covered(&t->flushed, seen);
}

/* An operation just issued to t (counted in t->issued) completes at the origin only with a
 * flush: a get whose data has not landed, a put whose buffer the transport still reads. One
 * that copied what it needs (a put UCX sent at once, a request built in librma's buffer, a
 * fetching call that waited) needs no mark. */
static inline void rma_nm_need_local(rma_nm_tgt_t *t)
{
    rma_nm_covered(&t->lmark, atomic_load_explicit(&t->issued, memory_order_acquire));
}

/* Something issued to t is not complete at the origin yet (MPI_Win_flush_local, requests):
 * a flush that covered every marked operation has completed them locally too. */
static inline int rma_nm_local_due(rma_nm_tgt_t *t)
{
    return (int)(atomic_load_explicit(&t->lmark, memory_order_acquire) -
                 atomic_load_explicit(&t->flushed, memory_order_acquire)) > 0;
}

/* Atomic operations on remote words (ucx) */
enum {
    RMA_NM_AMO_ADD = 0,
    RMA_NM_AMO_SWAP,
    RMA_NM_AMO_CSWAP,
    RMA_NM_AMO_AND,
    RMA_NM_AMO_OR,
    RMA_NM_AMO_XOR
};

/* Memory this process exposes to off-node peers (rma_netmod_t.expose): the transport's
 * registration, and the key blob that window creation and attach send to the peers, which
 * open it with rma_netmod_ops_t.key_open. */
typedef struct rma_nm_mem {
    void *handle; /* ucx: ucp_mem_h */
    void *blob;   /* packed remote key */
    size_t blob_len;
    void *addr; /* expose_alloc: the allocation (kept for reuse when small; cleared, it is
                   never reused) */
    size_t len;
} rma_nm_mem_t;

/* Active messages: a request goes to a target (rma_netmod_ops_t.am_send) with a reply
 * endpoint; its handler, registered for its id (rma_netmod_t.am_handler), runs on the
 * target's agent and may answer (am_reply); the answer's handler runs inside the origin's
 * progress, on the thread that drives it. */
enum {
    RMA_NM_AM_DYN_REQ = 1, /* region tables of dynamic windows (windows/win_dynamic.c) */
    RMA_NM_AM_DYN_REPLY,
    RMA_NM_AM_HX_REQ, /* host-assisted transfers (mpid/rma/hx.c) */
    RMA_NM_AM_HX_REPLY,
    RMA_NM_AM_MOVE_REQ, /* moving create and attached memory onto the transport's (expose.c) */
    RMA_NM_AM_MOVE_REPLY,
    RMA_NM_AM_MAX
};

/* How a message's data travels (am_send, am_reply). */
enum {
    RMA_NM_AM_COPY, /* eagerly: the buffers are free when the call returns */
    RMA_NM_AM_RNDV, /* by reference (rendezvous): the receiver fetches the data straight into
                       the buffer it chooses (on shared memory one cross-memory copy, on a
                       NIC one RDMA read); the sender does not wait, so the data must stay as
                       it is until the receiver has answered */
    RMA_NM_AM_OWN   /* am_reply only: hdr is a malloc'd buffer of hlen bytes of header then
                       len of data, freed once sent */
};

/* The largest header librma puts in an active message (a host-assisted request's header
 * and one record). The transport refuses to start when its limit is smaller (ucx: the
 * workers' max_am_header) and a send with a longer header fails with -EMSGSIZE. The data
 * after the header has no such limit. */
#define RMA_NM_AM_HDR_MAX 128

typedef void (*rma_nm_am_cb_t)(const void *hdr, size_t hlen, const void *data, size_t len,
                               void *reply_ep);
/* A message sent with RMA_NM_AM_RNDV: the handler gets a descriptor rv instead of the data
 * and receives it with am_recv before it returns; data it does not receive is dropped. */
typedef struct rma_nm_rndv rma_nm_rndv_t;
typedef void (*rma_nm_am_rndv_cb_t)(const void *hdr, size_t hlen, rma_nm_rndv_t *rv, size_t len,
                                    void *reply_ep);

/* The data path to one target. Entries a transport has no use for are NULL: shm reaches
 * only same-node targets, whose control words the core maps, so it is never asked for
 * atomics (amo, amo_post), keys (key_*) or messages (am_send). */
typedef struct rma_netmod_ops {
    const char *name;
    /* Copies local iovecs to (writev) or from (readv) target addresses, one entry against
     * one entry. Issued: done at the target's next flush (shm: small pieces wait for it,
     * put data copied, so a writev is complete locally on return and a readv is not). 0 or
     * -errno (shm: a transfer held before may report its error here). */
    int (*writev)(rma_nm_tgt_t *t, void *key, const struct iovec *local, const struct iovec *remote,
                  int n);
    int (*readv)(rma_nm_tgt_t *t, void *key, const struct iovec *local, const struct iovec *remote,
                 int n);
    /* The same, moved now and complete at the target on return, waiting for nothing else
     * issued to it (what is held back stays held): for an accumulate's read-modify-write,
     * whose caller holds the target's stripes. The target's agent may need those to answer
     * the requests another thread of this process sent it, so waiting for them, or for a
     * lock a thread holds while it waits for them, would never end. 0 or -errno. */
    int (*xfer_sync)(rma_nm_tgt_t *t, void *key, const struct iovec *local,
                     const struct iovec *remote, int n, int write);
    /* Every put, get and atomic issued to the target is complete there; requests to its
     * agent are not waited for (xfer_sync says why). Off-node transports only. 0 or -errno. */
    int (*complete)(rma_nm_tgt_t *t);
    /* A 4- or 8-byte atomic at raddr: ADD, SWAP, CSWAP (replaces with value when the word
     * equals compare), AND, OR, XOR. With fetched, waits for the old value (not AND, OR,
     * XOR: -EINVAL); without, only issues it (not SWAP, CSWAP). 0 or -errno. Callers fetch
     * an AND, OR or XOR with a read and a compare-and-swap loop: Debian's UCX 1.13.1
     * computes the fetching forms wrongly over its shared-memory transports (its
     * uct_sm_ep_atomic{32,64}_fetch drops the operand), and NICs rarely have them. */
    int (*amo)(rma_nm_tgt_t *t, void *key, int op, unsigned size, uintptr_t raddr, uint64_t value,
               uint64_t compare, uint64_t *fetched);
    /* Issues an atomic (not CSWAP) whose operand is read from *value, which, like *reply
     * (the old value, unless NULL; not with AND, OR, XOR: -EINVAL), must stay valid until
     * the next flush of t completes it. 0 or -errno. */
    int (*amo_post)(rma_nm_tgt_t *t, void *key, int op, unsigned size, uintptr_t raddr,
                    const void *value, void *reply);
    /* Every operation issued to the target is complete at the target, host-assisted puts
     * included (the puts held back in agg are sent first, and every acknowledgement
     * arrived). 0 or -errno. */
    int (*flush)(rma_nm_tgt_t *t);
    /* What was issued to the target gets there without any later call of this process:
     * sends what agg holds back, and flushes only when the transport may still hold some
     * of it (a post's notification: sync/pscw.c). 0 or -errno. */
    int (*push)(rma_nm_tgt_t *t);
    /* Sends what the transport holds back for the target (aggregation, held cross-memory
     * transfers) without waiting for it to complete (rma_nm_release_held). 0 or -errno. */
    int (*release)(rma_nm_tgt_t *t);
    /* Every operation issued to the target takes effect there before any issued after this
     * call: without a round trip when the transport applies them in issue order (t->ordered)
     * and no host-assisted request that may take effect out of order (hx_unordered) waits
     * for its answer, else by a flush. What follows
     * (the release of a lock word, a fence or PSCW notification, sync/ctl.h) then completes
     * both in one round trip. 0 or -errno. */
    int (*order)(rma_nm_tgt_t *t);
    /* After what order allowed to follow has completed: waits for the answers of the
     * host-assisted requests issued before (their acknowledgements and get data come in the
     * same round trip). 0 or -errno (a refusal among them). */
    int (*settle)(rma_nm_tgt_t *t);
    /* The same, without waiting: flush_start begins it (*req: what flush_test needs, or
     * NULL); flush_test drives the transport once and returns 1 while it is not over (2
     * when the transport moved something in the call), then 0 or -errno (*req is released
     * then): a refusal of a host-assisted request among those it waited for (a get whose
     * data never came) is its error, as it is a flush's. */
    int (*flush_start)(rma_nm_tgt_t *t, void **req);
    int (*flush_test)(rma_nm_tgt_t *t, void **req);
    /* Releases what flush_start returned in req, over or not (a request abandoned when its
     * window is freed); a NULL req is fine. */
    void (*flush_release)(void *req);
    /* Sends an active-message request with id to the target (how: RMA_NM_AM_COPY or
     * RMA_NM_AM_RNDV). 0 or -errno. */
    int (*am_send)(rma_nm_tgt_t *t, unsigned id, const void *hdr, size_t hlen, const void *data,
                   size_t len, int how);
    /* Opens a key blob the target exposed (rma_nm_mem_t) for use towards it, once per
     * (window, target); NULL on failure. key_close releases it. */
    void *(*key_open)(rma_nm_tgt_t *t, const void *blob);
    void (*key_close)(void *key);
    /* Where the key's memory at raddr is mapped in this process, when the transport reaches
     * it through a shared mapping (ucx's shared-memory transports between processes of one
     * machine: a put, get or atomic on it is a copy or CPU atomic the origin performs, with
     * no work for the owner's CPU); NULL otherwise. Valid until key_close. */
    void *(*key_ptr)(void *key, uint64_t raddr);
} rma_netmod_ops_t;

extern const rma_netmod_ops_t rma_nm_shm_ops;

/* shm with the messages of msg (the transport to other nodes' data path, as its tgt_init
 * set it): cross-memory attach for the data, msg's active messages for host-assisted
 * requests to the target's agent (its hx_* fields set), flushes that complete both
 * (nm_shm.c). */
const rma_netmod_ops_t *rma_nm_shm_with(const rma_netmod_ops_t *msg);

/* shm with messages: t's lone operations of at most small bytes go to its agent while
 * that costs less than cross-memory attach (rma_nm_way_t; 0: never). */
void rma_nm_way_init(rma_nm_tgt_t *t, size_t small);

/* A round of t's operations ended (a flush, a fetch answered): the way of the next ones is
 * chosen. Nothing when another thread is choosing. */
void rma_nm_way_settle(rma_nm_tgt_t *t);

/* shm: completes and frees what is held for t (its window is freed). */
void rma_nm_shm_release(rma_nm_tgt_t *t);

/* The process-wide side of the transport to other nodes. */
typedef struct rma_netmod {
    const char *name;
    /* Starts the transport once (context, workers, the progress agent); a single-node job
     * never calls it (rma_info does). 0, or -1 with the reason in *why. started: 1 once it
     * succeeded. */
    int (*start)(const char **why);
    int (*started)(void);
    /* Collective over comm (whose ranks have MPI_COMM_WORLD ranks world[]): makes sure every
     * rank can reach the others. need: some rank lacks an endpoint to some peer, agreed by
     * all (the addresses then travel once). MPI_SUCCESS or an error class; *unreached: the
     * world rank of a peer no transport reaches, or -1. */
    int (*connect)(MPI_Comm comm, const int *world, int n, int need, int *unreached);
    /* 1 when this process has an endpoint to world rank w. */
    int (*has_ep)(int w);
    /* Fills t (ops, endpoint, what the endpoint's lanes can do) for world rank w. 0 or
     * -errno. */
    int (*tgt_init)(rma_nm_tgt_t *t, int w);
    /* Exposes [base, base+len), rounded out to whole aligned 8-byte words (1/2-byte
     * accumulate elements are updated by a compare-and-swap of the word holding them),
     * filling mem with its registration and key blob. 0 or -errno. */
    int (*expose)(void *base, size_t len, rma_nm_mem_t *mem);
    /* Allocates len bytes that the transport exposes and reaches without this process's CPU
     * where it can (ucx: System V shared memory between processes of one machine,
     * registered pages on a NIC); *base gets fresh (zero) pages. 0 or -errno. */
    int (*expose_alloc)(size_t len, void **base, rma_nm_mem_t *mem);
    /* Undoes expose or expose_alloc. */
    void (*unexpose)(rma_nm_mem_t *mem);
    /* 1 when memory this process exposed may be moved onto other pages in place: no
     * network device may have pinned it (ucx: the context has no NIC among its
     * resources). */
    int (*movable)(void);
    /* Registers the handlers of active messages with id: cb for those whose data came with
     * them, rndv for those sent with RMA_NM_AM_RNDV (either may be NULL). */
    void (*am_handler)(unsigned id, rma_nm_am_cb_t cb, rma_nm_am_rndv_cb_t rndv);
    /* From a request handler: answers on reply_ep (how: any RMA_NM_AM_*). Never waits. 0 or
     * -errno. */
    int (*am_reply)(void *reply_ep, unsigned id, const void *hdr, size_t hlen, const void *data,
                    size_t len, int how);
    /* Receives rv's len bytes into buf; done(arg, 0 or -errno) runs once they have landed
     * (maybe before this returns). 0, or -errno and done is not called. */
    int (*am_recv)(rma_nm_rndv_t *rv, void *buf, size_t len, void (*done)(void *arg, int rc),
                   void *arg);
    /* Drives this process's operations and, unless the agent is doing so, its peers' on this
     * process: every librma wait serves the peers. Handlers run inside it, so no caller may
     * hold a lock a handler takes (a window's dyn_mtx). 1 when something happened. */
    int (*progress)(void);
    /* Drives progress (backing off) until *count is 0: the answers an active message
     * handler counts down have arrived. */
    void (*wait_zero)(_Atomic int *count);
    /* Returns once no request handler is running: after a window left the handle table, no
     * handler still uses it, so it may be freed. Not from inside a handler. */
    void (*quiesce)(void);
    /* Waits for n (at most 2) MPI requests that the calls returning rc started (a
     * barrier's, binding/barrier.c), serving peers' operations meanwhile once the
     * transport started; spinning then yielding, never sleeping. Works whether or not
     * this process started the transport. The MPI error code: rc's, or the test's. */
    int (*wait_all)(int rc, int n, MPI_Request *reqs);
    /* fn is called whenever the peers' operations have been served, to serve requests a
     * handler left for later; it returns how many are left (the agent does not sleep while
     * some are). */
    void (*set_idle)(int (*fn)(void));
    /* fn is called by a flush of t whose agg is set, before anything else: it sends what is
     * held back there. 0 or -errno. */
    void (*set_drain)(int (*fn)(rma_nm_tgt_t *t));
    /* Prints what the transport chose: devices, lanes, limits (rma_info). */
    void (*print)(FILE *out);
    /* MPI_Finalize, collective over MPI_COMM_WORLD: closes endpoints, workers and the
     * context. all_here is called first, once every process has called it (nobody accesses
     * windows any more), while the transport still runs. A process that keeps (an MPI
     * session of its outlives MPI_Finalize, with its windows) calls no all_here and keeps
     * its transport; it closes only its endpoints to the processes that do not keep. */
    void (*finalize)(void (*all_here)(void), int keep);
} rma_netmod_t;

/* The transport to other nodes: UCX, or NULL in a build without it (configure
 * --without-ucx), which refuses windows with off-node peers. netmod.c. */
extern const rma_netmod_t *const rma_net;

/* Undoes an exposure (rma_net->expose or expose_alloc into a calloc'ed rma_nm_mem_t) and
 * frees it, or frees a view; NULL does nothing. */
void rma_net_mem_free(void *m);

/* A view of the exposure `of`: a copy of its key blob (handle NULL) for a window that sends
 * it to peers for memory inside of's (a region attached in an MPI_Alloc_mem block from the
 * transport, windows/memreg.h), and that may outlive of. NULL without memory. */
rma_nm_mem_t *rma_net_mem_view(const rma_nm_mem_t *of);

/* The transport to other nodes runs in this process. */
static inline int rma_net_started(void)
{
    return rma_net != NULL && rma_net->started();
}

/* 1 while the transport runs here and no progress agent drives it (RMA_AGENT=off): then
 * this process's off-node peers are served only from its own librma calls, and every
 * synchronization call takes a turn at the network (rma_net_poke), also one whose target is
 * on this node. A rank that polls a same-node flag with MPI_Get + MPI_Win_flush would
 * otherwise never serve the off-node peer that is to set it (MPICH's linked_list_bench
 * tests hung so). */
extern int rma_net_unserved;

static inline void rma_net_poke(void)
{
    if (__builtin_expect(rma_net_unserved, 0))
        rma_net->progress();
}

#endif
