/*
 * win.h - the window object, its handle table and the shared control segment.
 *
 * A window is known to the application by an integer handle (MPI_Win is an int in the
 * MPICH ABI) that librma hands out and MPICH never sees. Each rank holds an rma_win_t with
 * one rma_target_t per rank of the window: where that target's memory is mapped here (the
 * direct path) or how to reach it otherwise. Synchronization state that peers must see
 * (lock words, PSCW counters, the fence barrier, dynamic region tables) lives in a control
 * segment shared by the window's ranks; it stores offsets, never pointers.
 */
#ifndef RMA_WIN_H
#define RMA_WIN_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "netmod/netmod.h"
#include "windows/memreg.h"

#define RMA_CACHE_LINE  64
#define rma_likely(x)   __builtin_expect(!!(x), 1)
#define rma_unlikely(x) __builtin_expect(!!(x), 0)

/* Handles: a tag in the top byte, the table index below. MPI_WIN_NULL (0x20000000) and
 * MPICH's own window handles (kind 0x9 in bits 26-29) never carry this tag. */
#define RMA_WIN_HANDLE_TAG  0x5a000000
#define RMA_WIN_HANDLE_MASK 0xff000000
#define RMA_WIN_INDEX_MASK  0x00ffffff

/* ------------------------------------------------------------------ control segment */

#define RMA_CTL_MAGIC   0x726d61636c74726cULL /* "rmacltrl" */
#define RMA_CTL_VERSION 6
#define RMA_ACC_NLOCKS  256 /* accumulate lock stripes per window (see doc/atomicity.md) */

/* Lock word of one target (sync/lock.c): bit 63 = held exclusive, bits 44..62 = exclusive
 * lockers waiting, bits 24..43 = those that have waited long (the others step aside for
 * them; shared lockers for both), bits 0..23 = shared holders. */
#define RMA_LOCK_EXCL    (UINT64_C(1) << 63)
#define RMA_LOCK_WAITER  (UINT64_C(1) << 44)
#define RMA_LOCK_URGENT  (UINT64_C(1) << 24)
#define RMA_LOCK_URGENTS (UINT64_C(0xfffff) << 24)
#define RMA_LOCK_SHARED  UINT64_C(0xffffff)
/* The window's global lock word (rank 0's lock_g): bits 40..63 = exclusive locks held or
 * wanted anywhere, bits 20..39 = lock_all epochs waiting for them (exclusive lockers that
 * come later let these first), bits 0..19 = lock_all epochs held (foMPI's two-level scheme:
 * lock_all is one atomic here, not one per target). */
#define RMA_LOCKG_EXCL   (UINT64_C(1) << 40)
#define RMA_LOCKG_EXCLS  (~UINT64_C(0) << 40)
#define RMA_LOCKG_WAIT   (UINT64_C(1) << 20)
#define RMA_LOCKG_WAITS  (UINT64_C(0xfffff) << 20)
#define RMA_LOCKG_ALL    UINT64_C(0xfffff)

/* Per-rank synchronization state, one cache line each concept. Every node's control
 * segment has a slot for every rank (sync/ctl.h): a rank's own words live in its node's. */
typedef struct rma_ctl_rank {
    _Atomic uint64_t lock;   /* passive target lock word of this rank */
    _Atomic uint64_t lock_g; /* rank 0 only: the window's global lock word */
    char pad0[RMA_CACHE_LINE - 16];
    _Atomic uint64_t complete_cnt; /* PSCW: MPI_Win_complete calls received as a target */
    char pad1[RMA_CACHE_LINE - 8];
    _Atomic uint64_t dyn_seq;     /* dynamic windows: seqlock over this rank's region table */
    _Atomic uint32_t dyn_count;   /* regions in the table */
    uint32_t pid;                 /* process id (for CMA and segment sharing) */
    _Atomic uint64_t dyn_tab_id;  /* segment id of the table; a new one when it grows */
    _Atomic int32_t dyn_tab_fd;   /* the table segment's descriptor in the owner */
    _Atomic uint32_t dyn_tab_cap; /* regions the table holds */
    char pad2[RMA_CACHE_LINE - 32];
    _Atomic uint64_t bar_epoch; /* fence barrier: barriers this rank has entered (every
                                 * node's segment has every rank's count, sync/fence.c) */
    char pad3[RMA_CACHE_LINE - 8];
    /* exposure (windows/expose.c): create windows publish their memory here once the
     * agent moved it onto a segment; peers ask for a move through move_addr */
    _Atomic uint64_t expose_seq; /* seqlock over the expose_* fields (odd while written) */
    uint64_t expose_seg_id;
    uint64_t expose_seg_base; /* owner's address of the segment's first byte */
    uint64_t expose_seg_len;
    int32_t expose_seg_fd;
    _Atomic int32_t agent_fd;     /* the owner's agent doorbell (its descriptor), 0: none */
    _Atomic uint64_t move_addr;   /* a peer asks: move the memory holding this address */
    _Atomic uint32_t moving;      /* the owner's agent is moving memory: no CMA writes */
    _Atomic uint32_t cma_writers; /* peers' CMA writes in flight to this rank */
    char pad4[RMA_CACHE_LINE - 56];
} rma_ctl_rank_t;

_Static_assert(sizeof(rma_ctl_rank_t) == 5 * RMA_CACHE_LINE, "ctl rank is 5 cache lines");

/* One region attached to a dynamic window, as published to the peers. */
typedef struct rma_dyn_region {
    uint64_t base; /* address in the owner's address space */
    uint64_t len;
    uint64_t seg_id;   /* unique id of the shared segment holding it, 0 when not shared */
    uint64_t seg_base; /* owner's address of the segment's first byte */
    uint64_t seg_len;
    int32_t seg_fd; /* the segment's descriptor in the owner (for pidfd_getfd) */
    int32_t atomic; /* accumulates use CPU atomics here (shared memory when attached) */
} rma_dyn_region_t;

typedef struct rma_ctl {
    uint64_t magic;
    uint32_t version;
    uint32_t nranks;
    uint64_t ranks_off;    /* rma_ctl_rank_t[nranks] */
    uint64_t post_off;     /* _Atomic uint64_t post[origin][target] in origin's node, a row
                              for each origin there (its lidx) */
    uint64_t acc_off;      /* _Atomic uint32_t [RMA_ACC_NLOCKS], one per cache line */
    _Atomic uint32_t left; /* MPI_Win_free: ranks other than 0 that are done with it */
    uint32_t post_rows;    /* rows of posts: the most ranks of the window on one node */
    char pad0[RMA_CACHE_LINE - 48];
    _Atomic uint64_t bar_count; /* fence barrier: arrivals in this round */
    char pad1[RMA_CACHE_LINE - 8];
    _Atomic uint64_t bar_round; /* fence barrier: completed rounds */
    char pad2[RMA_CACHE_LINE - 8];
} rma_ctl_t;

_Static_assert(sizeof(rma_ctl_t) == 3 * RMA_CACHE_LINE, "ctl header is 3 cache lines");

static inline rma_ctl_rank_t *rma_ctl_rank(rma_ctl_t *ctl, int rank)
{
    return (rma_ctl_rank_t *)((char *)ctl + ctl->ranks_off) + rank;
}

/* The post of target for the origin whose row (lidx) is row. */
static inline _Atomic uint64_t *rma_ctl_post(rma_ctl_t *ctl, int row, int target)
{
    return (_Atomic uint64_t *)((char *)ctl + ctl->post_off) + (size_t)row * ctl->nranks + target;
}

/* ------------------------------------------------------------------ window object */

/* How accumulates reach the window's memory, decided when the window is created (all ranks
 * agree; doc/atomicity.md): ATOMIC every (origin, target) pair is mapped, CPU atomics
 * apply; LOCKED some pair is reached through CMA, every accumulate takes stripe locks;
 * DYNAMIC decided per attached region. */
/* NET: the window has off-node peers and every same-node pair is mapped: elements of the
 * kinds with a CPU atomic are updated with atomics by every origin (CPU atomics on the node,
 * network atomics from other nodes; 1/2-byte ones a compare-and-swap of their 8-byte word),
 * every other element under stripe locks. */
enum {
    RMA_ACC_MODE_UNKNOWN = 0,
    RMA_ACC_MODE_ATOMIC,
    RMA_ACC_MODE_LOCKED,
    RMA_ACC_MODE_DYNAMIC,
    RMA_ACC_MODE_NET
};

/* Epoch states of the window as a whole (passive target locks are tracked per target). */
enum {
    RMA_EPOCH_NONE = 0,
    RMA_EPOCH_FENCE,    /* after a fence without MPI_MODE_NOSUCCEED */
    RMA_EPOCH_PSCW,     /* access epoch opened by MPI_Win_start */
    RMA_EPOCH_LOCK,     /* one or more MPI_Win_lock held */
    RMA_EPOCH_LOCK_ALL, /* MPI_Win_lock_all held */
};

/* A shared segment of a peer mapped here (dynamic windows cache these). */
typedef struct rma_peer_seg {
    uint64_t seg_id;
    uintptr_t remote_base;
    size_t len;
    char *local;
    int named; /* scratch: a region of the target's table is on it (win_dynamic.c) */
} rma_peer_seg_t;

/* What this process knows about one target rank of the window. Hot fields first. */
typedef struct rma_target {
    uintptr_t remote_base; /* target's address of its window base (0 for dynamic) */
    MPI_Aint size;         /* target window size in bytes */
    int disp_unit;
    uint8_t access;                /* an access epoch (lock or start) covers this target */
    uint8_t lock_type;             /* 0, MPI_LOCK_SHARED or MPI_LOCK_EXCLUSIVE held by us */
    uint8_t lock_nocheck;          /* lock taken with MPI_MODE_NOCHECK: no lock word held */
    uint8_t lock_pending;          /* a thread of ours is acquiring the lock word */
    _Atomic uint8_t start_pending; /* in the MPI_Win_start group, its post not consumed yet
                                      (2: a thread is consuming it; rma_pscw_wait_post) */
    uintptr_t map_lo;              /* target addresses [map_lo, map_lo + map_len) are mapped ... */
    size_t map_len;
    char *map_local;             /* ... here, starting at map_local (NULL: nothing mapped) */
    int pid;                     /* target process (CMA) */
    int local;                   /* same node: its control words are mapped here */
    int node;                    /* off node: its node's index in win->reps */
    int lidx;                    /* its index among the window's ranks of its node (its row of the
                             posts in that node's control segment) */
    rma_nm_tgt_t nm;             /* how bytes and words not mapped here reach it (netmod.h) */
    int lock_holders;            /* threads of ours inside MPI_Win_lock epochs on this target */
    uint64_t expose_seen;        /* create windows: the target's expose_seq mapped here (off node:
                           * last seen published; dynamic windows: its dyn_seq) */
    _Atomic uint64_t cma_ns;     /* estimated time spent reaching the target through CMA
                                  * (off node: through UCX's emulation of RDMA), by every
                                  * thread of ours */
    _Atomic uint64_t cma_budget; /* ... at which to ask the target to move its memory */
    _Atomic uint64_t cma_gen;    /* ... both for the target's regions as of this dyn_seq (a
                                  * dynamic window's regions come and go and move: each new
                                  * state starts afresh) */
    void *move_key;              /* off node: the key of the block the target moved its memory
                           * onto, mapped at nm.data_map (expose.c) */
    _Atomic unsigned cma_calls;  /* ... the transport's calls counted in it (nm.cma_calls) */
    rma_peer_seg_t *segs;        /* dynamic windows: cached mappings of the target's segments */
    int nsegs, segs_cap;
    const rma_dyn_region_t *dtab; /* dynamic windows: the target's region table mapped here */
    size_t dtab_len;
    uint64_t dtab_id;
    struct rma_dyn_cache *dcache;  /* off-node dynamic targets: regions and keys fetched ... */
    _Atomic unsigned dyn_fetches;  /* ... how many times ... */
    struct rma_dyn_cache *dyn_old; /* ... the copies a fetch replaced, whose keys and mappings
                                      operations may still use (rma_win_dyn_done) */
    _Atomic uint64_t dyn_users;    /* low 32 bits: spans of the target being issued
                                      (rma_win_dyn_use); high: times that count fell to 0 */
    MPI_Win peer_win;              /* the target's handle of this window ... */
    uint32_t peer_serial;          /* ... and its serial number there */
    struct rma_lazy_lock *lazy;    /* a shared lock MPI_Win_lock left for later (sync/lock.c) */
    uint64_t stripes_marked[4];    /* off node: stripes of its node seen marked (marks stay) */
} rma_target_t;

typedef struct rma_attr {
    int keyval;
    int kind; /* how it was set: RMA_ATTR_PTR from C, an integer from Fortran (binding/next.h) */
    void *value;
} rma_attr_t;

typedef struct rma_win_info {
    int no_locks;
    int same_size;
    int same_disp_unit;
    int alloc_shared_noncontig;
    long accumulate_granularity; /* MPI-4 mpi_accumulate_granularity, bytes; 0: the default.
                                    A permission to be less atomic; librma keeps its own
                                    element-wise atomicity, which satisfies any value. */
    char accumulate_ordering[64];
    char accumulate_ops[32];
} rma_win_info_t;

typedef struct rma_win {
    /* hot: checked by every operation */
    int epoch;        /* RMA_EPOCH_* */
    int all_access;   /* fence or lock_all epoch: every target is accessible */
    int ops_in_fence; /* an operation was issued since the last fence */
    int flavor;       /* MPI_WIN_FLAVOR_* */
    int acc_mode;     /* accumulate mechanism, RMA_ACC_MODE_* (doc/atomicity.md) */
    rma_target_t *targets;
    rma_ctl_t *ctl; /* this node's control segment */
    int rank, nranks;
    int net;                  /* some target is off-node: reached through UCX */
    int node_msg;             /* one node, and every rank runs UCX for requests to its
                                 same-node peers' agents (win_flavor.c win_node_msg_begin;
                                 set here before the others know, to serve theirs) */
    _Atomic int net_dirty;    /* operations were issued to off-node targets since the last
                                 flush_all began (rma_win_net_issued) */
    int posts_pushed;         /* MPI_Win_post pushed a post to an off-node origin, which
                                 MPI_Win_free flushes (an MPI_MODE_NOCHECK start never
                                 waits for it) */
    _Atomic int flushing_all; /* flush_alls under way (rma_ctl_flush_all_but): while one
                                 is, a clear net_dirty says nothing of what it still owes */
    _Atomic int handed;       /* copies the progress agent makes for this window's
                                 request-based operations and has not finished
                                 (rma_xfer_drain) */
    /* ... the bytes they touch in origin buffers [0] and in window memory mapped here [1],
     * written [.][0] and read [.][1], each [lo, hi) over the copies handed over since none
     * was left: a later put or get touching them waits (mpid/rma/rma_op.c) */
    _Atomic uintptr_t handed_at[2][2][2];
    uint64_t sync_gen;  /* epochs opened (off-node region tables are checked once per epoch) */
    uint64_t bar_epoch; /* barriers entered on this window */

    MPI_Win handle;
    uint32_t serial; /* windows made by this process before this one: a handle reused after
                      * MPI_Win_free gets a new serial (requests from peers name both) */
    MPI_Group group; /* group of comm, for PSCW rank translation */
    void *base;
    MPI_Aint size;
    int disp_unit;
    int model; /* MPI_WIN_UNIFIED */

    /* memory this rank owns for the window */
    void *seg; /* control segment mapping (+ data for allocate flavors) */
    size_t seg_len;
    int seg_fd;      /* rank 0: the segment's descriptor, open until free */
    int seg_ucx;     /* the segment is UCX's allocation (net_ctl): this rank is alone on its
                        node in the window (win_flavor.c) */
    uint64_t seg_id; /* the control segment's id (pooled by win_flavor.c) */
    int seg_pid;     /* ranks other than the node's leader: the leader's pid */
    int leader;      /* the window rank that made this node's control segment */
    int post_rows;   /* the most ranks of the window on one node (rma_ctl_t.post_rows) */
    int *world;      /* MPI_COMM_WORLD rank of each window rank */
    int *reps;       /* one rank of each other node (fence arrivals go there) */
    int nreps;
    void *net_ctl;             /* exposure of the control segment (rma_nm_mem_t) */
    void *net_data;            /* ... and of the window memory when it is not in it */
    struct rma_memreg *expose; /* create flavor: registered region holding base, or NULL */
    rma_dyn_region_t *dyn_tab; /* dynamic flavor: this rank's region table (a segment) */
    uint32_t dyn_cap;
    uint32_t dyn_n; /* regions attached (the control segment's count, kept here too) */
    int dyn_tab_fd;
    int *dyn_old_fds; /* tables outgrown: open until free, so peers never map a reused fd */
    int ndyn_old;
    void **dyn_regs; /* rma_memreg of each region, in table order */
    void **dyn_net;  /* windows with off-node peers: UCX registration of each region */
    void **dyn_zero; /* bases attached with size 0 */
    int ndyn_zero;
    uint64_t *eager_q;   /* regions attached since the agent last moved (expose.c), ... */
    _Atomic int eager_n; /* ... under mtx; read without it, to know whether to take it */
    int eager_cap;
    pthread_mutex_t mtx;      /* this process's epoch and cache state, for MPI_THREAD_MULTIPLE */
    int mt;                   /* MPI_THREAD_MULTIPLE (or a session's unknown level): sync/lock.c
                                 guards the lock state with mtx only then */
    pthread_mutex_t dyn_mtx;  /* this rank's region table, for the agent (never held while
                               * waiting for anything) */
    _Atomic int expose_ready; /* created: the agent may serve move requests (expose.c) */
    rma_memreg_writers_t writers; /* create, dynamic: peers' CMA writers, held by moves */
    int pids_watched;             /* its same-node peers' processes (sync/peer_fail.c) */

    /* PSCW state */
    int *start_ranks; /* window ranks of the open access group */
    int nstart;
    uint32_t *post_seen;        /* posts consumed from each target */
    uint64_t complete_expected; /* completes to wait for as a target */
    int exposure_open;
    int nlocks;                       /* targets locked with MPI_Win_lock */
    int nexcl;                        /* ... exclusive, counted at the global lock word */
    struct rma_lazy_lock *lazy_armed; /* the one lock left for later while no other is held
                                         (sync/lock.c), or NULL */
    int lock_all_nocheck;       /* MPI_Win_lock_all with MPI_MODE_NOCHECK: no lock words held */
    int lock_all_holders;       /* threads of ours inside MPI_Win_lock_all epochs */
    int lock_all_pending;       /* a thread of ours is acquiring lock_all's lock words */
    int locks_pending;          /* threads of ours acquiring MPI_Win_lock lock words */
    struct rma_held_lock *held; /* which thread opened which of those epochs (sync/lock.c) */
    int nheld, held_cap;

    /* attributes, name, error handler, info */
    MPI_Errhandler errhandler;
    char name[MPI_MAX_OBJECT_NAME];
    rma_attr_t *attrs;
    int nattrs, attrs_cap;
    rma_win_info_t info;
    int attr_flavor, attr_model, attr_disp_unit; /* storage for predefined attrs */
    MPI_Aint attr_size;
} rma_win_t;

/* An operation to an off-node target was issued (after the transport took it, and after
 * rma_nm_issued): the next MPI_Win_flush_all must look at the targets. Set after the
 * operation, so that a flush_all on another thread, which clears the flag when it begins,
 * either sees the operation or leaves the flag set for the next one. */
static inline void rma_win_net_issued(rma_win_t *win)
{
    atomic_store_explicit(&win->net_dirty, 1, memory_order_release);
}

/* ------------------------------------------------------------------ handle table */

/* The table is replaced, never resized in place, when it grows: a lookup in another thread
 * sees either the old or the new one, both valid (old ones are freed at MPI_Finalize). */
typedef struct rma_win_tab {
    unsigned size;
    rma_win_t *slot[];
} rma_win_tab_t;

extern rma_win_tab_t *_Atomic rma_win_tab;

/* The window behind `handle`, or NULL when it is not a live librma window. */
static inline rma_win_t *rma_win_lookup(MPI_Win handle)
{
    unsigned idx = (unsigned)handle & RMA_WIN_INDEX_MASK;
    rma_win_tab_t *t = atomic_load_explicit(&rma_win_tab, memory_order_acquire);

    if (rma_unlikely(((unsigned)handle & RMA_WIN_HANDLE_MASK) != RMA_WIN_HANDLE_TAG || t == NULL ||
                     idx >= t->size))
        return NULL;
    return t->slot[idx];
}

/* Allocates a zeroed window and its handle. NULL on allocation failure. */
rma_win_t *rma_win_new(void);

/* Releases the handle and the object (not the memory the window owns). */
void rma_win_delete(rma_win_t *win);

/* Number of live windows (for MPI_Finalize diagnostics). */
int rma_win_count(void);

/* Frees retired handle tables (MPI_Finalize). */
void rma_win_finalize(void);

/* ------------------------------------------------------------------ flavors (win_flavor.c) */

/* Collective over comm. Each returns MPI_SUCCESS or an MPI error class; on error nothing is
 * left allocated and *win_p is untouched. */
int rma_win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                   rma_win_t **win_p);
int rma_win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, int shared,
                     void *baseptr, rma_win_t **win_p);
int rma_win_create_dynamic(MPI_Info info, MPI_Comm comm, rma_win_t **win_p);
/* Collective; frees everything the window owns. */
int rma_win_free(rma_win_t *win);

/* Dynamic windows (win_dynamic.c). init: this rank's first region table (0 or -errno);
 * destroy: releases the regions, tables and cached peer tables. */
int rma_win_dyn_init(rma_win_t *win);
void rma_win_dyn_destroy(rma_win_t *win);
/* Registers the active-message handlers of off-node region tables (once UCX runs). */
void rma_win_dyn_net_init(void);

/* Origin: the next access to off-node target t of the dynamic window compares the target's
 * region-table generation with the cached table's again (its owner moved a region). */
void rma_win_dyn_recheck(rma_win_t *win, int t);
/* Origin, after MPI_Barrier: the next access to every off-node dynamic-window target
 * compares generations again (a region its owner attached before the barrier, at the
 * addresses of one it detached, is found). */
extern _Atomic uint64_t rma_win_dyn_barriers;
static inline void rma_win_dyn_barrier(void)
{
    atomic_fetch_add_explicit(&rma_win_dyn_barriers, 1, memory_order_relaxed);
}
int rma_win_attach(rma_win_t *win, void *base, MPI_Aint size);
int rma_win_detach(rma_win_t *win, const void *base);
/* One attached region of a dynamic-window target as an origin sees it: where it is mapped
 * here (NULL: reached through CMA) and how accumulates update it. */
typedef struct rma_dyn_hit {
    uintptr_t lo, hi;
    char *local;
    int atomic;
    void *key; /* off-node targets: the region's remote key */
} rma_dyn_hit_t;

/* Resolves [addr, addr+len) at a dynamic-window target: the attached regions that cover it
 * (adjacent regions may together), in address order, into hits[0..*n_p) (at most max; the
 * call fails with MPI_ERR_RMA_RANGE when more are needed or a byte is not attached).
 * MPI_SUCCESS, MPI_ERR_RMA_RANGE, or MPI_ERR_OTHER when an atomic region cannot be mapped. */
int rma_win_dyn_resolve(rma_win_t *win, int target, uintptr_t addr, size_t len, rma_dyn_hit_t *hits,
                        int max, int *n_p);

/* Around the use of what rma_win_dyn_resolve returns for an off-node target: the keys and
 * mappings of its hits stay valid until rma_win_dyn_done, and after it until a flush of the
 * target covers what was issued under them. A fetch of the target's table meanwhile (another
 * thread's, or this operation's own) keeps the copy it replaces until then. */
static inline void rma_win_dyn_use(rma_win_t *win, int t)
{
    atomic_fetch_add_explicit(&win->targets[t].dyn_users, 1, memory_order_seq_cst);
}

static inline void rma_win_dyn_done(rma_win_t *win, int t)
{
    rma_target_t *tg = &win->targets[t];
    uint64_t w = atomic_load_explicit(&tg->dyn_users, memory_order_relaxed), n;

    do { /* the last span out counts the quiet moment in the same step */
        n = w - 1 + ((uint32_t)w == 1 ? (uint64_t)1 << 32 : 0);
    } while (!atomic_compare_exchange_weak_explicit(&tg->dyn_users, &w, n, memory_order_seq_cst,
                                                    memory_order_relaxed));
}

/* Calls fn on every live window, holding the table's lock (the progress agent). */
void rma_win_foreach(void (*fn)(rma_win_t *win));

/* A live window (the lowest handle), or NULL when there is none. */
rma_win_t *rma_win_first(void);

/* MPI_Finalize, once every process has called it: releases the windows the program did not
 * free, locally (win_flavor.c). */
void rma_win_free_left(void);

/* Takes the window out of the handle table (first step of freeing it): rma_win_foreach
 * no longer finds it once this returns. */
void rma_win_retire(rma_win_t *win);

/* ------------------------------------------------------------------ exposure (expose.c) */

/* Owner, at creation or attach of memory that peers reach through CMA: starts the progress
 * agent and tells peers where to ask for the memory to be moved. */
void rma_expose_offer(rma_win_t *win);

/* Origin: `bytes` at target address taddr of a region of region_len bytes went through
 * CMA; asks the owner to move the region once that traffic has cost about as much as
 * moving it would. */
void rma_expose_note(rma_win_t *win, int trank, uintptr_t taddr, size_t bytes, size_t region_len);

/* Origin: maps the target's memory here if it is a same-node target of a create window, not
 * mapped yet, and its owner has published a move since we last looked; else nothing. */
void rma_expose_refresh(rma_win_t *win, int trank);

/* Owner's agent: serves a peer's request to move this rank's memory of the window. */
void rma_expose_serve(rma_win_t *win);

/* MPI_Finalize, before the transport ends: no move is served from now on (none is under
 * way when this returns). */
void rma_expose_end(void);

/* Owner alone on its node, at creation of a create window or attach of a region [addr,
 * addr+len) that it registered with UCX: lets its agent move the memory onto UCX's shared
 * memory, at once when small (RMA_MOVE_EAGER), else when a peer asks; only when a peer has
 * a shared-memory transport to it (nm.maps). */
void rma_expose_offer_net(rma_win_t *win, void *addr, size_t len);

/* Owner, win->mtx held: a dynamic window's region [base, base+len) is detached, and its
 * offer, if the agent has not served it yet, goes (the queue holds addresses). */
void rma_expose_unqueue(rma_win_t *win, uintptr_t base, size_t len);

/* Registers the active-message handlers of moves for off-node peers (once UCX runs). */
void rma_expose_net_init(void);

/* Origin: `bytes` at target address taddr, in a window or region of region_len bytes, went
 * to off-node target trank through UCX's emulation of RDMA (memory UCX does not map here).
 * Create windows: maps the memory (nm.data_map) once the target published that it moved
 * it onto UCX's shared memory. Asks for the move once that traffic has cost about as much
 * as the move (dynamic windows: the region holding taddr, seen moved at the next fetch of
 * the target's region table). */
void rma_expose_note_net(rma_win_t *win, int trank, uintptr_t taddr, size_t bytes,
                         size_t region_len);

/* ------------------------------------------------------------------ locality (locality.c) */

/* MPI_Init: learns which processes of MPI_COMM_WORLD share a node, as
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) says (collective over MPI_COMM_WORLD). */
void rma_locality_init(void);

/* For the n ranks of comm (group: its group): their MPI_COMM_WORLD ranks and a node number
 * each, equal for ranks on one node. With RMA_NETMOD_ONLY=1 every process is a node of its
 * own unless `real` (shared-memory windows). 0, or -1 when a rank is not in
 * MPI_COMM_WORLD. Collective over comm only when MPI_Init was not seen. */
int rma_locality(MPI_Comm comm, MPI_Group group, int n, int real, int *world, int *node);

/* 1 when no other process of MPI_COMM_WORLD is on this process's node and some process is
 * on another (RMA_NETMOD_ONLY=1: every process is a node): every peer of every window is
 * then reached through the transport to other nodes. 0 when MPI_Init was not seen. */
int rma_locality_alone(void);

/* The CPUs the ranks of this node may run on (a cpu_set_t of len bytes, the union of their
 * affinity masks at MPI_Init) and this process's rank among them. 0, or -1 when MPI_Init
 * was not seen. */
int rma_locality_cpus(void *used, size_t len, int *rank);

/* The alignment info asks of new memory (MPI-4.1 "mpi_minimum_memory_alignment": a power of
 * two, at most RMA_ALIGN_MAX), or 1 when it asks none (a malformed value is ignored). For
 * MPI_Alloc_mem, MPI_Win_allocate and MPI_Win_allocate_shared. */
#define RMA_ALIGN_MAX ((size_t)1 << 30)
size_t rma_info_alignment(MPI_Info info);

/* Parses info keys into win->info (defaults first). */
void rma_win_info_parse(rma_win_t *win, MPI_Info info);

#endif
