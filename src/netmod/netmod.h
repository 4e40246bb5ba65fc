/*
 * netmod.h - the transport boundary. The device core loads and stores directly whatever a
 * target has mapped here; every other byte and every control word of a target goes through
 * the ops table the window picked for that target when it was created:
 *
 *   shm  same node, memory not mapped here: cross-memory attach (process_vm_readv/writev)
 *   ucx  another node (or every peer with RMA_NETMOD_ONLY=1): UCX RDMA, network atomics
 *        and active messages (netmod/ucx)
 *
 * Calls are keyed by (window, target): rma_nm_tgt_t is what one window knows about reaching
 * one target, including the remote keys exchanged when the window was created.
 */
#ifndef RMA_NETMOD_H
#define RMA_NETMOD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct rma_netmod_ops;
struct rma_hx_agg;

/* What must happen before the first byte goes to a target: a lock that MPI_Win_lock left
 * for later (sync/lock.c). While a target's gate is set, every transport call that would
 * send to it first calls rma_nm_gate, whose open runs once (other threads wait for it) and
 * clears the gate. */
typedef struct rma_nm_gate {
    int (*open)(struct rma_nm_gate *g); /* 0 or -errno */
} rma_nm_gate_t;

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
    void *data_key;                   /* remote key of the target's window memory */
    int data_mapped;                  /* ucx: UCX reaches that memory by a shared mapping
                                         (rma_ucx_key_mapped): transfers never ask the
                                         target's agent for help */
    int dev_amo;                      /* ucx: the endpoint has a network device's atomics,
                                         which complete without the target's CPU */
    int ordered;                      /* ucx: the target applies this process's puts, gets
                                         and atomics in the order they were issued (UCX
                                         emulates them over one tcp stream): see order */
    int am_rma;                       /* ucx: UCX emulates puts and gets to the target with
                                         active messages (tcp alone): small gets are
                                         aggregated too (mpid/rma/hx.h) */
    size_t hx_piece;                  /* ucx: pieces of at most this many bytes go to the
                                         target's agent (mpid/rma/hx.h; 0: none) */
    size_t hx_get_piece;              /* ucx: the same for a get of many pieces */
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
} rma_nm_tgt_t;

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

/* Operations were issued to t that no completed flush covers. */
static inline int rma_nm_pending(rma_nm_tgt_t *t)
{
    return atomic_load_explicit(&t->issued, memory_order_acquire) !=
           atomic_load_explicit(&t->flushed, memory_order_acquire);
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

typedef struct rma_netmod_ops {
    const char *name;
    /* Copies local iovecs to (writev) or from (readv) target addresses, one entry against
     * one entry. shm: done on return; ucx: issued (done at flush). 0 or -errno. */
    int (*writev)(rma_nm_tgt_t *t, void *key, const struct iovec *local, const struct iovec *remote,
                  int n);
    int (*readv)(rma_nm_tgt_t *t, void *key, const struct iovec *local, const struct iovec *remote,
                 int n);
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
     * then). A refusal of a host-assisted put is left for the next flush to report. */
    int (*flush_start)(rma_nm_tgt_t *t, void **req);
    int (*flush_test)(rma_nm_tgt_t *t, void **req);
} rma_netmod_ops_t;

extern const rma_netmod_ops_t rma_nm_shm_ops;
#ifdef HAVE_UCX
extern const rma_netmod_ops_t rma_nm_ucx_ops;
#endif

#endif
