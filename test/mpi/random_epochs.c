/*
 * random_epochs - random puts, gets and accumulates in random synchronization modes, against
 * a model of every window that each rank computes on its own. Every rank r owns the slice
 * [r*S, (r+1)*S) of every window (S = W/np rounded down to 8 bytes, W = 64 KiB) and is the
 * only one to write it anywhere, so the results do not depend on the order in which the
 * ranks' operations land. Each round a PRNG seeded alike on every rank (so each rank knows
 * every rank's operations) picks the synchronization mode:
 *  - fence (the assertions NOPRECEDE/NOSUCCEED where they hold, at random; in half the
 *    rounds NOPUT and NOSTORE too where they hold: fence_assert);
 *  - lock_all (in half the rounds with MPI_MODE_NOCHECK), MPI_Win_flush_all after a random
 *    prefix of the operations, unlock_all;
 *  - MPI_Win_lock on each target, shared or exclusive at random (all held at once, taken in
 *    ascending rank order everywhere, or one at a time); in half the rounds with
 *    MPI_MODE_NOCHECK where it holds (lock_assert);
 *  - PSCW: an origin's access group holds the targets of its operations and, at random, other
 *    ranks; a target exposes its window to the origins whose group holds it. An empty group
 *    is MPI_GROUP_EMPTY or no call at all; at random every post and start carry
 *    MPI_MODE_NOCHECK (an MPI_Barrier between them), a post MPI_MODE_NOPUT where no put or
 *    accumulate comes, and a wait is an MPI_Win_test loop;
 * and, for each rank, 1-20 operations on its slice at a random target (itself too, but in
 * PSCW): a contiguous MPI_Put (1-4096 bytes), a strided one (MPI_Type_vector of 1-64
 * blocks of 8-1024 bytes, stride twice the block), or a contiguous or strided MPI_Get of
 * bytes the origin does not put in the round, into a private buffer or into the last 4 KiB
 * of its slice in its own window (which no put targets; halves used in alternate rounds).
 * A strided operation's target and origin datatypes are built by one of ten constructors
 * with the same type map (vector, hvector, indexed_block, hindexed, struct, a count of a
 * resized contiguous, hindexed from a negative displacement, subarray, hvector of a
 * contiguous, dup of a vector), and a quarter of the contiguous puts, gets, accumulates and
 * get_accumulates take a one-block target type built the same ways (pick_makes: a hash, not
 * the round's PRNG, so that a seed still gives the operations it gave before).
 * Bytes put depend on (round, origin, target, offset): a late or lost write shows an earlier
 * round's bytes. After the round's synchronization and an MPI_Barrier every rank checks its
 * whole window and every get's destination (filled beforehand with other bytes) against the
 * model; in the next round its left neighbour gets the scratch half it got into and checks
 * it too: a get into the origin's own window memory must have landed when the epoch closed
 * (what fence_get_own checks for one pattern). A fence round adds an epoch right after the
 * operations' in which every rank gets its right neighbour's scratch half of the round at
 * once (the library from before the held-gets fence fix failed it within 13-163 rounds,
 * every peer over tcp).
 * The accumulate family joins in (unless RANDOM_EPOCHS_MIX=0, which gives the put/get-only
 * rounds of before): MPI_Accumulate (1-256 elements, contiguous or a vector of up to 16
 * blocks of 1-16 elements), MPI_Get_accumulate (1-32 elements), MPI_Fetch_and_op and
 * MPI_Compare_and_swap (the compare value equal to the element or not), on the origin's slice
 * too, on MPI_INT8_T, MPI_UNSIGNED_SHORT, MPI_INT, MPI_UINT64_T or MPI_DOUBLE elements at
 * aligned offsets (compare_and_swap: the integer ones) with SUM, REPLACE, BXOR, BOR, MAX, MIN
 * or PROD (see pick_aop and operand_as for what each type takes), and NO_OP for the fetching
 * calls. Within a round an origin's accumulate-family operations at a target touch no byte
 * its puts or gets there touch, and overlap each other only with the same basic type (other
 * types may share an 8-byte word): MPI's default accumulate_ordering then makes them take effect in issue
 * order, which the model follows (each fetched value is the word at that point of the
 * sequence). Operands depend on (round, origin, target, operation, offset). A quarter of the
 * rounds give an origin's list one bad call too (bad_info: a put, get or accumulate whose
 * second block ends past the window, a put to rank np or of count -1, a get of an uncommitted
 * type, MPI_BXOR on MPI_DOUBLE, compare_and_swap on MPI_DOUBLE) at a target its epoch
 * reaches, the window's error handler MPI_ERRORS_RETURN: it must return the standard's error
 * class, write nothing (the window check) and leave the epoch and what it holds intact (not
 * with RANDOM_EPOCHS_MPICH_UCX=1). In lock_all and lock rounds puts, gets and SUM
 * accumulates and get_accumulates are sometimes request-based (MPI_Rput, MPI_Rget_accumulate,
 * MPI_Rget, MPI_Raccumulate), completed by MPI_Wait or an MPI_Test loop right away or by an
 * MPI_Waitall or MPI_Testall loop over a few of them later, before the epoch ends; an Rget's
 * or a fetching call's destination is checked right when its request completes, and in
 * lock_all rounds after a random MPI_Win_flush_local_all or MPI_Win_flush_local(target) for
 * the operations issued before it. Runs on MPICH's own RMA as well.
 * Environment: RANDOM_EPOCHS_ROUNDS (default 300), RANDOM_EPOCHS_SEED (default 1),
 * RANDOM_EPOCHS_FLAVOR=allocate (MPI_Win_allocate) or dynamic (MPI_Win_create_dynamic, every
 * rank attaching its calloc'd memory; before a quarter of the rounds each rank at random
 * moves it to a new block, attach and detach, the old block poisoned and checked: reattach),
 * shared (MPI_Win_allocate_shared, one node only: a third of the puts and gets in
 * passive-target rounds are stores or loads through MPI_Win_shared_query's pointers,
 * MPI_Win_sync before the epoch ends; a load's destination is checked right away); default
 * MPI_Win_create on calloc'd memory.
 * RANDOM_EPOCHS_MIX (default 1; 0: puts and gets only), RANDOM_EPOCHS_MPICH_UCX=1 (skips the
 * two kinds of check MPICH 4.0.2 ch4:ucx fails: a strided MPI_Rget's destination when its
 * request completes, which it does at once while an MPI_Get without a request goes on
 * (pmodels/mpich#7896), and a get's after MPI_Win_flush_local(_all) when a put to the same
 * target came after the get: the put's ucp_put_nbi completed at once and marked the target
 * as needing a remote flush only, over the get's mark, so the local flush waited for nothing;
 * and it uses SUM where MAX or MIN on an unsigned type was drawn, which MPICH 4.0.2 computes
 * as signed, pmodels/mpich#6083; and it gives MPI_Win_lock no MPI_MODE_NOCHECK, after which
 * MPICH grants no exclusive lock: lock_assert).
 * RANDOM_EPOCHS_THREADS=T (1-8, default 1: the above, unchanged for a seed) asks for
 * MPI_THREAD_MULTIPLE (fails without it) and has the lock_all rounds and the shared-lock rounds
 * that hold all their locks at once issue each rank's operations from T pthreads at once: the
 * main thread opens the epoch, starts the threads, joins them and closes it. The rank's list is
 * the one T=1 issues (the same for a seed); it is cut into groups of operations that touch
 * common bytes (at a target, in the origin's window, in its private buffers: an accumulate and
 * the later ones on its words, a get and whatever writes its destination), each group issued
 * in list order by one thread, so that the threads' operations are independent and the model
 * holds as it is. Requests are completed, and destinations checked, by the thread that issued
 * them. Each thread may also (a private PRNG decides, the same for a seed and rank) call
 * MPI_Win_flush_all or MPI_Win_flush(target) before one of its operations, and
 * MPI_Win_flush_local_all or MPI_Win_flush_local(target) before another, and check its own
 * operations issued before it (a target locked in a shared-lock round); the rank-wide flush
 * points of T=1 are not used. Every destination is checked again after the epoch. Fence and
 * PSCW rounds, and shared-lock rounds that lock one target at a time, stay in the main thread.
 */
#include "rmatest.h"

#include <pthread.h>
#include <stdint.h>

/* CHECK (and MPI_OK, which expands it here) from several threads: rmatest.h's counters are
 * plain ints, so count atomically here, and print a failure's parts together. */
#undef CHECK
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        __atomic_add_fetch(&rt_checks, 1, __ATOMIC_RELAXED);                                       \
        if (!(cond)) {                                                                             \
            __atomic_add_fetch(&rt_fails, 1, __ATOMIC_RELAXED);                                    \
            flockfile(stderr);                                                                     \
            fprintf(stderr, "[%d] FAIL %s:%d: %s: ", rt_rank, __FILE__, __LINE__, #cond);          \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            funlockfile(stderr);                                                                   \
        }                                                                                          \
    } while (0)

#define W       (64 * 1024) /* window bytes per rank */
#define SCRATCH 4096        /* the end of each slice: get destinations in the owner's window */
#define HALF    (SCRATCH / 2)
#define MAXOPS  22 /* 20, the neighbour's get and a bad call */
#define MAXFAIL 5  /* mismatches printed per rank */
#define MAXT    8  /* RANDOM_EPOCHS_THREADS */

enum { M_FENCE, M_LOCK_ALL, M_LOCK, M_PSCW, M_N };
static const char *mode_name[] = {"fence", "lock_all+flush_all", "lock (shared or exclusive)",
                                  "pscw"};
enum { K_PUT, K_PUTV, K_GET, K_GETV, K_NBR, K_ACC, K_ACCV, K_GACC, K_FOP, K_CAS, K_BAD, K_N };
static const char *kind_name[] = {"put",
                                  "strided put",
                                  "get",
                                  "strided get",
                                  "get of the right neighbour's scratch",
                                  "accumulate",
                                  "strided accumulate",
                                  "get_accumulate",
                                  "fetch_and_op",
                                  "compare_and_swap",
                                  "bad call"};
/* bad calls (K_BAD): what is wrong, and the error class the standard gives it */
enum { B_RANGE_PUT, B_RANGE_GET, B_RANGE_ACC, B_RANK, B_COUNT, B_TYPE, B_OP, B_CAS, B_N };
static const struct {
    const char *what;
    int cls;
} bad_info[B_N] = {
    {"MPI_Put whose second block ends past the window", MPI_ERR_RMA_RANGE},
    {"MPI_Get whose second block ends past the window", MPI_ERR_RMA_RANGE},
    {"MPI_Accumulate whose second block ends past the window", MPI_ERR_RMA_RANGE},
    {"MPI_Put to rank np", MPI_ERR_RANK},
    {"MPI_Put of count -1", MPI_ERR_COUNT},
    {"MPI_Get of an uncommitted datatype", MPI_ERR_TYPE},
    {"MPI_Accumulate of MPI_BXOR on MPI_DOUBLE", MPI_ERR_OP},
    {"MPI_Compare_and_swap on MPI_DOUBLE", MPI_ERR_TYPE},
};
/* How a layout's datatype is built (op_t.tmake, .omake): the same type map by other
 * constructors, so that every road through the datatype engines (MPICH's, the library's
 * flattening, packing and host-assisted layouts) carries every kind of operation */
enum {
    D_VECTOR,
    D_HVECTOR,
    D_INDEXED_BLOCK,
    D_HINDEXED,
    D_STRUCT,
    D_RESIZED,
    D_NEG_LB,
    D_SUBARRAY,
    D_NESTED,
    D_DUP,
    D_N
};
static const char *make_name[D_N] = {"vector",
                                     "hvector",
                                     "indexed_block",
                                     "hindexed",
                                     "struct",
                                     "count of a resized contiguous",
                                     "hindexed with a negative lower bound",
                                     "subarray",
                                     "hvector of a contiguous",
                                     "dup of a vector"};
enum { A_SUM, A_REPLACE, A_BXOR, A_NO_OP, A_MAX, A_MIN, A_BOR, A_PROD };
static const char *aop_name[] = {"SUM", "REPLACE", "BXOR", "NO_OP", "MAX", "MIN", "BOR", "PROD"};
/* accumulate element types: bytes, signed, floating point */
enum { T_I8, T_U16, T_I32, T_U64, T_F64, T_N };
static const struct {
    int size, sign, flt;
    const char *name;
} ty_info[T_N] = {{1, 1, 0, "MPI_INT8_T"},
                  {2, 0, 0, "MPI_UNSIGNED_SHORT"},
                  {4, 1, 0, "MPI_INT"},
                  {8, 0, 0, "MPI_UINT64_T"},
                  {8, 0, 1, "MPI_DOUBLE"}};
/* request-based: not; completed by MPI_Wait or an MPI_Test loop right away; later with others */
enum { R_NONE, R_WAIT, R_TEST, R_LATER };
/* where a destination is checked */
enum {
    C_EPOCH,
    C_FLUSH_ALL,
    C_WAIT,
    C_TEST,
    C_WAITALL,
    C_TESTALL,
    C_FLUSH_LOCAL_ALL,
    C_FLUSH_LOCAL,
    C_FLUSH, /* a thread's MPI_Win_flush(target) */
    C_LOAD   /* a shared window's load (memcpy through MPI_Win_shared_query's pointer) */
};
static const char *check_name[] = {"after the epoch",
                                   "right after MPI_Win_flush_all",
                                   "right after MPI_Wait",
                                   "right after an MPI_Test loop",
                                   "right after MPI_Waitall",
                                   "right after an MPI_Testall loop",
                                   "right after MPI_Win_flush_local_all",
                                   "right after MPI_Win_flush_local",
                                   "right after MPI_Win_flush(target)",
                                   "right after the load"};

typedef struct op {
    int kind, target;
    int nblk, blk, tstride; /* the target's side: nblk blocks of blk bytes, tstride apart */
    long toff;              /* ... from this byte of the target's window */
    int scratch;            /* a get into the origin's own window (else a private buffer) */
    int ostride;            /* the origin's side: the same blocks, ostride apart ... */
    long ooff;              /* ... from this byte of the private buffer or of the window */
    int ty, esz;            /* accumulate family: element type (T_*) and its bytes */
    int aop;                /* ... the operation (A_*) */
    long roff;              /* ... fetched elements: at this byte of the private buffer */
    long coff;              /* ... compare_and_swap's compare value: at this byte */
    int cas_eq;             /* ... compare_and_swap: the compare value is the word's */
    uint64_t cmp;           /* ... the compare value */
    int req;                /* R_*: request-based (MPI_Rput, MPI_Rget, MPI_Raccumulate) */
    int direct;             /* a put or get on a shared window done by memcpy (stores or loads) */
    int bad;                /* K_BAD: B_* */
    int tmake, omake;       /* how the target's and the origin's datatypes are built (D_*; -1:
                             * a contiguous op's predefined type) */
} op_t;

static int me, np, S, P; /* P: the bytes of a slice that puts may write */
static int mix = 1;      /* accumulates, requests and local flushes too */
/* RANDOM_EPOCHS_MPICH_UCX=1: skip the checks MPICH 4.0.2 ch4:ucx fails (see the top) */
static int mpich_ucx;
static int bad_calls; /* K_BAD calls among the operations (not on MPICH: its classes differ) */
static int shared;    /* RANDOM_EPOCHS_FLAVOR=shared */
static unsigned char **shbase; /* shared: each rank's window, from MPI_Win_shared_query */
static uint64_t rng;
static int seed;
static unsigned char *model; /* np windows of W bytes: what each must hold */
static unsigned char *mem, *priv;
static unsigned char *pexp; /* what this rank's fetching calls must fetch (laid out as priv) */
static MPI_Win win;
static MPI_Aint *base; /* each rank's window start as a target displacement: 0, or (dynamic
                          windows) the address of the memory it attached */

static MPI_Aint tdisp(int target, long off)
{
    return base[target] + off;
}
static op_t ops[64][MAXOPS]; /* this round's operations of each origin */
static int nops[64], split[64], one_at_a_time[64];
/* of each origin: R_LATER requests completed in groups of group[]: by MPI_Testall loops or
 * MPI_Waitall; a lock_all round's local flush (0 none, 1 MPI_Win_flush_local_all,
 * 2 MPI_Win_flush_local(flocal_t)) before its operation flocal_at */
static int group[64], testall[64], flocal[64], flocal_at[64], flocal_t[64];
/* a lock round: the targets (bits) origin o locks exclusively. A PSCW round: the targets in
 * o's access group (those of its operations and maybe others); o's post and start with
 * MPI_GROUP_EMPTY when the group is empty (else no call), its wait as an MPI_Win_test loop;
 * every rank's post and start with MPI_MODE_NOCHECK (an MPI_Barrier between them); o's post
 * with MPI_MODE_NOPUT when no put or accumulate comes to it */
static int excl[64], access_grp[64], empty_call[64], win_test[64], nocheck, noput[64];
/* the assertions that hold, given where they hold (fence_assert, lock_assert): */
static int hints;
static long issued[K_N], issued_req, issued_flocal, issued_direct, issued_moves; /* this rank's */
static int nthreads = 1; /* RANDOM_EPOCHS_THREADS */
/* threaded rounds of this rank, the groups and threads its operations went to there, and the
 * threads' flushes (for the summary) */
static long t_rounds, t_groups, t_busy, t_flush;
static pthread_mutex_t check_mu = PTHREAD_MUTEX_INITIALIZER; /* check_op from threads */

static uint32_t rnd_r(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (uint32_t)(*s >> 32);
}

static uint32_t rnd(void)
{
    return rnd_r(&rng);
}

static int nfails(void)
{
    return __atomic_load_n(&rt_fails, __ATOMIC_RELAXED);
}

static unsigned char val(int round, int o, int t, long off)
{
    uint32_t x = (uint32_t)round * 2654435761u ^ (uint32_t)(o * 97 + t * 13 + 1) * 40503u ^
                 (uint32_t)off * 2246822519u;
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 12;
    x *= 0x297a2d39u;
    x ^= x >> 15;
    return (unsigned char)x;
}

/* The operand of origin o's operation i (of the round) for its element at target offset off */
static uint64_t operand(int round, int o, int t, int i, long off)
{
    uint64_t x = 0;

    for (int k = 0; k < 8; k++)
        x = x << 8 | val(round, o, t + 16 * (i + 1), off + k);
    return x;
}

/* An element of esz bytes (little-endian host), zero-extended */
static uint64_t word(const unsigned char *b, int esz)
{
    uint64_t w = 0;

    memcpy(&w, b, esz);
    return w;
}

static void set_word(unsigned char *b, int esz, uint64_t v)
{
    memcpy(b, &v, esz);
}

static uint64_t mask_of(int ty)
{
    return ty_info[ty].size == 8 ? ~0ull : (1ull << 8 * ty_info[ty].size) - 1;
}

static double as_double(uint64_t v)
{
    double d;
    memcpy(&d, &v, 8);
    return d;
}

static uint64_t double_bits(double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    return v;
}

/* An operand element of type ty from the 64 random bits x: small halves for MPI_DOUBLE, so
 * that sums are exact (old values may be any bits a put left, NaN too: SUM, REPLACE and PROD
 * give the same bits for them on every IEEE machine, MAX and MIN are not used there) */
static uint64_t operand_as(int ty, uint64_t x)
{
    if (ty_info[ty].flt)
        return double_bits(((int)(x % 17) - 8) * 0.5);
    return x & mask_of(ty);
}

static int64_t sext(int ty, uint64_t v)
{
    int sh = 64 - 8 * ty_info[ty].size;
    return (int64_t)(v << sh) >> sh;
}

/* old (op) x for elements of type ty (integers wrap, as two's complement) */
static uint64_t apply(int ty, int aop, uint64_t old, uint64_t x)
{
    int lt = ty_info[ty].sign ? sext(ty, old) < sext(ty, x) : old < x;

    if (ty_info[ty].flt && aop == A_SUM)
        return double_bits(as_double(old) + as_double(x));
    if (ty_info[ty].flt && aop == A_PROD)
        return double_bits(as_double(old) * as_double(x));
    switch (aop) {
    case A_SUM: return (old + x) & mask_of(ty);
    case A_REPLACE: return x;
    case A_BXOR: return old ^ x;
    case A_BOR: return old | x;
    case A_MAX: return lt ? x : old;
    case A_MIN: return lt ? old : x;
    case A_PROD: return old * x & mask_of(ty);
    default: return old;
    }
}

static MPI_Datatype mpi_type(int ty)
{
    switch (ty) {
    case T_I8: return MPI_INT8_T;
    case T_U16: return MPI_UNSIGNED_SHORT;
    case T_I32: return MPI_INT;
    case T_U64: return MPI_UINT64_T;
    default: return MPI_DOUBLE;
    }
}

static MPI_Op mpi_op(int aop)
{
    switch (aop) {
    case A_SUM: return MPI_SUM;
    case A_REPLACE: return MPI_REPLACE;
    case A_BXOR: return MPI_BXOR;
    case A_MAX: return MPI_MAX;
    case A_MIN: return MPI_MIN;
    case A_BOR: return MPI_BOR;
    case A_PROD: return MPI_PROD;
    default: return MPI_NO_OP;
    }
}

static int is_get(int kind)
{
    return kind == K_GET || kind == K_GETV || kind == K_NBR;
}

static int is_acc(int kind)
{
    return kind >= K_ACC && kind <= K_CAS;
}

/* get_accumulate, fetch_and_op, compare_and_swap: results at roff */
static int fetches(int kind)
{
    return kind >= K_GACC && kind <= K_CAS;
}

static long extent(const op_t *p)
{
    return (long)(p->nblk - 1) * p->tstride + p->blk;
}

/* 1 when byte `off` of the target's window is one that op p transfers */
static int covers(const op_t *p, long off)
{
    long d = off - p->toff;
    return d >= 0 && d < extent(p) && d % p->tstride < p->blk;
}

/* 1 when one origin's ops a and b in one epoch would make the result undefined or depend on
 * their order: a put and a get, or an accumulate-family op and a put or get, on common bytes
 * (extents, to keep it simple), or accumulates with different basic types there */
static int conflict(const op_t *a, const op_t *b)
{
    if (a->target != b->target || a->kind == K_NBR || b->kind == K_NBR ||
        !(a->toff < b->toff + extent(b) && b->toff < a->toff + extent(a)))
        return 0;
    if (is_acc(a->kind) && is_acc(b->kind))
        return a->ty != b->ty;
    if (is_acc(a->kind) || is_acc(b->kind))
        return 1;
    return is_get(a->kind) != is_get(b->kind);
}

static const char *describe(const op_t *p)
{
    static char s[320];
    int n;

    n = snprintf(s, sizeof s, "%s", kind_name[p->kind]);
    if (p->kind == K_BAD) {
        snprintf(s + n, sizeof s - n, " (%s)", bad_info[p->bad].what);
        return s;
    }
    if (is_acc(p->kind) && p->kind != K_CAS)
        n += snprintf(s + n, sizeof s - n, " %s", aop_name[p->aop]);
    if (is_acc(p->kind))
        n += snprintf(s + n, sizeof s - n, " of %s (%d x %d elements)", ty_info[p->ty].name,
                      p->nblk, p->blk / p->esz);
    else
        n += snprintf(s + n, sizeof s - n, " (%d x %d bytes)", p->nblk, p->blk);
    if (p->tmake >= 0 && !p->direct)
        n += snprintf(s + n, sizeof s - n, ", target type a %s", make_name[p->tmake]);
    if (p->tmake >= 0 && !p->direct && p->ostride != p->blk)
        n += snprintf(s + n, sizeof s - n, ", origin type a %s", make_name[p->omake]);
    if (p->direct)
        snprintf(s + n, sizeof s - n, " by %s", is_get(p->kind) ? "loads" : "stores");
    if (p->req)
        snprintf(s + n, sizeof s - n, ", request-based (%s)",
                 p->req == R_WAIT   ? "MPI_Wait"
                 : p->req == R_TEST ? "MPI_Test loop"
                                    : "completed later with others");
    return s;
}

/* The shape of an accumulate-family op p: type, operation, elements. */
/* An operation for an accumulate-family op of type ty: any that the standard allows (PROD on
 * unsigned or floating elements only, so that no product overflows a signed type; no MAX or
 * MIN on floating ones, see operand_as); a fetching op may also be NO_OP */
static int pick_aop(int ty, int kind)
{
    static const int ints[] = {A_SUM, A_REPLACE, A_BXOR, A_MAX, A_MIN, A_BOR, A_PROD};
    static const int flts[] = {A_SUM, A_REPLACE, A_PROD};
    int aop;

    if ((kind == K_GACC || kind == K_FOP) && rnd() % 3 == 0)
        return A_NO_OP;
    if (ty_info[ty].flt)
        return flts[rnd() % 3];
    aop = ints[rnd() % (ty_info[ty].sign ? 6 : 7)];
    /* MPICH 4.0.2 compares unsigned types as signed in MPI_MAX and MPI_MIN (pmodels/mpich#6083) */
    return mpich_ucx && !ty_info[ty].sign && (aop == A_MAX || aop == A_MIN) ? A_SUM : aop;
}

/* The shape of an accumulate-family op p: type (ty, or at random when -1; an integer one for
 * compare_and_swap), operation, elements. */
static void gen_acc_shape(op_t *p, int ty)
{
    int maxe, cnt = 1;

    if (ty < 0)
        ty = rnd() % T_N;
    if (p->kind == K_CAS && ty_info[ty].flt)
        ty = T_U64;
    p->ty = ty;
    p->esz = ty_info[ty].size;
    maxe = P / p->esz;
    switch (p->kind) {
    case K_ACC:
        p->aop = pick_aop(ty, p->kind);
        cnt = 1 + rnd() % (maxe < 256 ? maxe : 256);
        break;
    case K_ACCV: {
        int per = 1 + rnd() % 16, nmax = (maxe / per + 1) / 2;
        p->aop = pick_aop(ty, p->kind);
        p->nblk = 1 + rnd() % (nmax > 16 ? 16 : nmax);
        p->blk = per * p->esz;
        p->tstride = 2 * p->blk;
        return;
    }
    case K_GACC:
        p->aop = pick_aop(ty, p->kind);
        cnt = 1 + rnd() % 32;
        break;
    case K_FOP: p->aop = pick_aop(ty, p->kind); break;
    default: p->cas_eq = rnd() % 2; break;
    }
    p->nblk = 1;
    p->blk = cnt * p->esz;
    p->tstride = p->blk;
}

/* Op p's datatype constructors, from a hash of (seed, round, origin, place) rather than the
 * round's PRNG, so that a seed gives the operations it gave before they were added: a
 * strided op's target and origin types by any constructor; a quarter of the contiguous
 * puts, gets, accumulates and get_accumulates a constructed target type of one block. */
static void pick_makes(op_t *p, int round, int o, int n)
{
    uint64_t h = ((uint64_t)seed << 40) ^ ((uint64_t)round << 16) ^ ((uint64_t)o << 8) ^ n;

    h ^= h >> 33, h *= 0xff51afd7ed558ccdull, h ^= h >> 33, h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    p->tmake = p->omake = -1;
    if (p->kind == K_PUTV || p->kind == K_GETV || p->kind == K_ACCV) {
        p->tmake = (int)(h % D_N);
        p->omake = (int)((h >> 8) % D_N);
    } else if ((p->kind == K_PUT || p->kind == K_GET || p->kind == K_ACC || p->kind == K_GACC) &&
               (h >> 16) % 4 == 0) {
        p->tmake = (int)((h >> 24) % D_N);
    }
}

/* One random op of origin o at round `round`; 0 when none fitted. */
static int gen_op(int round, int o, int mode, op_t *list, int n, long *priv_used, int *scratch_used)
{
    static const int kinds[16] = {K_PUT,  K_PUT,  K_PUT, K_PUTV, K_PUTV, K_GET,  K_GET, K_GET,
                                  K_GETV, K_GETV, K_ACC, K_ACC,  K_ACCV, K_GACC, K_FOP, K_CAS};
    op_t p;
    int t = rnd() % np, kind = mix ? kinds[rnd() % 16] : (int)(rnd() % 4), near = -1;

    if (mode == M_PSCW && t == o)
        t = (o + 1) % np;
    /* half the accumulate-family ops go where an earlier one went, with its type (the same
     * words, so that issue order shows) */
    if (is_acc(kind) && rnd() % 2) {
        int nacc = 0;
        for (int i = 0; i < n; i++)
            nacc += is_acc(list[i].kind);
        if (nacc > 0) {
            int pick = rnd() % nacc;
            for (near = 0; !is_acc(list[near].kind) || pick-- > 0; near++)
                ;
            t = list[near].target;
        }
    }
    for (int attempt = 0; attempt < 10; attempt++) {
        int clash = 0, want_scratch = rnd() % 2, packed = rnd() % 2;
        memset(&p, 0, sizeof p);
        p.kind = kind;
        p.target = t;
        if (is_acc(kind)) {
            gen_acc_shape(&p, near >= 0 ? list[near].ty : -1);
            if (near >= 0 && p.ty == list[near].ty) {
                const op_t *q = &list[near];
                long end = (long)o * S + P - extent(&p); /* aligned: S and P are */
                p.toff = q->toff + (long)p.esz * (rnd() % (extent(q) / p.esz));
                p.toff = p.toff > end ? end : p.toff;
            } else {
                p.toff = (long)o * S + (long)p.esz * (rnd() % ((P - extent(&p)) / p.esz + 1));
            }
        } else {
            if (kind == K_PUT || kind == K_GET) {
                p.nblk = 1;
                p.blk = 1 + rnd() % (P < 4096 ? P : 4096);
                p.tstride = p.blk;
            } else {
                int nmax;
                p.blk = 8 + rnd() % 1017;
                nmax = (P / p.blk + 1) / 2;
                nmax = nmax > 64 ? 64 : nmax;
                p.nblk = 1 + rnd() % nmax;
                p.tstride = 2 * p.blk;
            }
            p.toff = (long)o * S + rnd() % (P - extent(&p) + 1);
        }
        /* a get reads nothing the origin puts at that target in the round, and the reverse;
         * accumulates keep off both */
        for (int i = 0; i < n && !clash; i++)
            clash = conflict(&list[i], &p);
        if (clash)
            continue;
        if (is_acc(kind)) { /* aligned operands, fetched values (and compare value) after */
            *priv_used = (*priv_used + 7) & ~7L;
            p.ostride = kind == K_ACCV && !packed ? p.tstride : p.blk;
            p.ooff = *priv_used;
            *priv_used += (long)(p.nblk - 1) * p.ostride + p.blk;
            if (fetches(kind)) {
                p.roff = *priv_used;
                *priv_used += p.blk;
            }
            if (kind == K_CAS) {
                p.coff = *priv_used;
                *priv_used += 8;
            }
        } else {
            p.ostride = kind == K_PUT || kind == K_GET || packed ? p.blk : p.tstride;
            p.scratch = 0;
            if (is_get(kind) && want_scratch && *scratch_used + p.nblk * p.blk <= HALF) {
                p.scratch = 1;
                p.ostride = p.blk;
                p.ooff = (long)o * S + P + (round & 1) * HALF + *scratch_used;
                *scratch_used += p.nblk * p.blk;
            } else {
                p.ooff = *priv_used;
                *priv_used += (long)(p.nblk - 1) * p.ostride + p.blk;
            }
        }
        /* request-based operations are for passive-target epochs */
        if (mix && (mode == M_LOCK_ALL || mode == M_LOCK) &&
            (!is_acc(kind) || kind == K_ACC || kind == K_ACCV || kind == K_GACC) && rnd() % 3 == 0)
            p.req = 1 + rnd() % 3;
        /* loads and stores are synchronized here by the passive-target epochs' MPI_Win_sync */
        if (shared && (mode == M_LOCK_ALL || mode == M_LOCK) && !is_acc(kind) && !p.req &&
            rnd() % 3 == 0)
            p.direct = 1;
        pick_makes(&p, round, o, n);
        list[n] = p;
        return 1;
    }
    return 0;
}

/* Origin o's accumulate-family op i (at round `round`) on the model, after those before it */
static void model_acc(int round, int o, int i, op_t *p)
{
    unsigned char *tw = model + (long)p->target * W;
    int per = p->blk / p->esz;

    for (int b = 0; b < p->nblk; b++)
        for (int k = 0; k < per; k++) {
            long toff = p->toff + (long)b * p->tstride + (long)k * p->esz;
            uint64_t old = word(tw + toff, p->esz), nw,
                     x = operand_as(p->ty, operand(round, o, p->target, i, toff));
            if (fetches(p->kind) && o == me)
                set_word(pexp + p->roff + (long)k * p->esz, p->esz, old);
            if (p->kind == K_CAS) {
                p->cmp = p->cas_eq ? old : (old ^ (x | 1)) & mask_of(p->ty);
                nw = old == p->cmp ? x : old;
            } else {
                nw = apply(p->ty, p->aop, old, x);
            }
            set_word(tw + toff, p->esz, nw);
        }
}

/* This round's operations of every origin, and the model after them. */
static void gen_round(int round, int mode)
{
    for (int o = 0; o < np; o++) {
        op_t *list = ops[o];
        long priv_used = 0;
        int scratch_used = 0, want = 1 + rnd() % 20, n = 0;
        for (int i = 0; i < want; i++)
            n += gen_op(round, o, mode, list, n, &priv_used, &scratch_used);
        if (round > 0) { /* the right neighbour's scratch half of the previous round */
            int at = rnd() % (n + 1), right = (o + 1) % np;
            op_t p = {.kind = K_NBR,
                      .target = right,
                      .nblk = 1,
                      .blk = HALF,
                      .tstride = HALF,
                      .toff = (long)right * S + P + ((round - 1) & 1) * HALF,
                      .ostride = HALF,
                      .ooff = priv_used,
                      .tmake = -1,
                      .omake = -1};
            memmove(&list[at + 1], &list[at], sizeof(op_t) * (n - at));
            list[at] = p;
            n++;
        }
        /* now and then a bad call among them, at a target of the others (so that the epoch
         * reaches it and only the named fault is wrong); it must change nothing */
        if (bad_calls && n > 0 && rnd() % 4 == 0) {
            int at = rnd() % (n + 1);
            op_t p = {.kind = K_BAD, .target = list[rnd() % n].target, .bad = rnd() % B_N};
            if (p.bad <= B_RANGE_ACC) { /* 64 bytes in the last slice's put bytes, 64 past W */
                p.nblk = 2;
                p.blk = 64;
                p.toff = (long)(np - 1) * S + P - 64;
                p.tstride = (int)(W - p.toff + 64);
            } else {
                p.nblk = 1;
                p.blk = 8;
                p.toff = (long)o * S;
                p.tstride = 8;
            }
            memmove(&list[at + 1], &list[at], sizeof(op_t) * (n - at));
            list[at] = p;
            n++;
        }
        nops[o] = n;
        split[o] = rnd() % (n + 1);
        one_at_a_time[o] = rnd() % 2;
        group[o] = testall[o] = flocal[o] = 0;
        flocal_at[o] = -1;
        if (mix) {
            group[o] = 1 + rnd() % 4;
            testall[o] = rnd() % 2;
            if (mode == M_LOCK_ALL && rnd() % 3 == 0) {
                flocal[o] = 1 + rnd() % 2;
                flocal_at[o] = rnd() % (n + 1);
                flocal_t[o] = rnd() % np;
            }
        }
        excl[o] = mode == M_LOCK ? (int)(rnd() % (1u << np)) : 0;
        if (mode == M_PSCW) {
            access_grp[o] = 0;
            for (int i = 0; i < n; i++)
                access_grp[o] |= 1 << list[i].target; /* (a bad call's is another's) */
            for (int t = 0; t < np; t++)
                if (t != o && rnd() % 4 == 0)
                    access_grp[o] |= 1 << t;
            empty_call[o] = rnd() % 2;
            win_test[o] = rnd() % 2;
            noput[o] = rnd() % 2;
        }
        /* the model: gets copy what the round leaves unchanged, so any order does; an
         * origin's accumulate-family ops on common bytes take effect in issue order */
        for (int i = 0; i < n; i++) {
            op_t *p = &list[i];
            unsigned char *tw = model + (long)p->target * W, *ow = model + (long)o * W;
            if (p->kind == K_BAD)
                continue;
            if (is_acc(p->kind)) {
                model_acc(round, o, i, p);
                continue;
            }
            for (int b = 0; b < p->nblk; b++)
                for (int j = 0; j < p->blk; j++) {
                    long toff = p->toff + (long)b * p->tstride + j;
                    if (!is_get(p->kind))
                        tw[toff] = val(round, o, p->target, toff);
                    else if (p->scratch)
                        ow[p->ooff + (long)b * p->ostride + j] = tw[toff];
                }
        }
    }
    nocheck = mode == M_PSCW && rnd() % 3 == 0;
    hints = mode != M_PSCW && rnd() % 2;
}

/* The origin-side byte of op p's block b, byte j. */
static unsigned char *obyte(const op_t *p, int b, int j)
{
    return (p->scratch ? mem : priv) + p->ooff + (long)b * p->ostride + j;
}

static void fill(int round)
{
    for (int i = 0; i < nops[me]; i++) {
        op_t *p = &ops[me][i];
        unsigned char *tw = model + (long)p->target * W;
        if (p->kind == K_BAD)
            continue;
        if (is_acc(p->kind)) {
            int per = p->blk / p->esz;
            for (int b = 0; b < p->nblk; b++)
                for (int k = 0; k < per; k++)
                    set_word(obyte(p, b, k * p->esz), p->esz,
                             operand_as(p->ty, operand(round, me, p->target, i,
                                                       p->toff + (long)b * p->tstride +
                                                           (long)k * p->esz)));
            if (fetches(p->kind)) /* other bytes than those to come */
                for (int j = 0; j < p->blk; j++)
                    priv[p->roff + j] = (unsigned char)~pexp[p->roff + j];
            if (p->kind == K_CAS)
                set_word(priv + p->coff, p->esz, p->cmp);
            continue;
        }
        for (int b = 0; b < p->nblk; b++)
            for (int j = 0; j < p->blk; j++) {
                long toff = p->toff + (long)b * p->tstride + j;
                /* a put's data; a get's destination gets bytes other than the expected */
                *obyte(p, b, j) =
                    is_get(p->kind) ? (unsigned char)~tw[toff] : val(round, me, p->target, toff);
            }
    }
}

/* A bad call's buffers: what it may read, and where a bad get would land (it must not) */
static unsigned char bad_src[256], bad_dst[256];

static unsigned char bad_byte(int i)
{
    return (unsigned char)(i * 7 + 3);
}

/* Makes bad call p (round `round`), which must fail with its error class and change nothing. */
static void issue_bad(int round, const op_t *p)
{
    MPI_Aint d = tdisp(p->target, p->toff);
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int rc = MPI_SUCCESS, cls = MPI_SUCCESS;

    if (p->bad <= B_RANGE_ACC) {
        MPI_Datatype el = p->bad == B_RANGE_ACC ? MPI_INT : MPI_BYTE;
        int n = p->bad == B_RANGE_ACC ? p->blk / 4 : p->blk;
        MPI_OK(MPI_Type_create_hvector(2, n, p->tstride, el, &t));
        MPI_OK(MPI_Type_commit(&t));
        if (p->bad == B_RANGE_PUT)
            rc = MPI_Put(bad_src, 2 * n, el, p->target, d, 1, t, win);
        else if (p->bad == B_RANGE_GET)
            rc = MPI_Get(bad_dst, 2 * n, el, p->target, d, 1, t, win);
        else
            rc = MPI_Accumulate(bad_src, 2 * n, el, p->target, d, 1, t, MPI_SUM, win);
    } else if (p->bad == B_TYPE) {
        MPI_OK(MPI_Type_contiguous(2, MPI_INT, &t)); /* not committed */
        rc = MPI_Get(bad_dst, 1, t, p->target, d, 1, t, win);
    } else {
        switch (p->bad) {
        case B_RANK: rc = MPI_Put(bad_src, 8, MPI_BYTE, np, d, 8, MPI_BYTE, win); break;
        case B_COUNT: rc = MPI_Put(bad_src, -1, MPI_BYTE, p->target, d, -1, MPI_BYTE, win); break;
        case B_OP:
            rc = MPI_Accumulate(bad_src, 1, MPI_DOUBLE, p->target, d, 1, MPI_DOUBLE, MPI_BXOR, win);
            break;
        default:
            rc = MPI_Compare_and_swap(bad_src, bad_src + 8, bad_dst, MPI_DOUBLE, p->target, d, win);
        }
    }
    if (t != MPI_DATATYPE_NULL)
        MPI_OK(MPI_Type_free(&t));
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    CHECK(cls == bad_info[p->bad].cls, "round %d: %s at rank %d returned error class %d, want %d",
          round, bad_info[p->bad].what, p->target, cls, bad_info[p->bad].cls);
}

/* After the round: no bad call wrote where a get's data would have gone. */
static void check_bad_dst(int round)
{
    for (int i = 0; i < (int)sizeof(bad_dst); i++)
        if (bad_dst[i] != bad_byte(i)) {
            CHECK(0, "round %d: byte %d of a bad call's destination changed to 0x%02x", round, i,
                  bad_dst[i]);
            return;
        }
    CHECK(1, "bad");
}

/* nblk blocks of per elements of bt (esz bytes each), stride bytes apart, as `make` builds
 * them: the committed type in *t, its count in *count, and in *shift the bytes by which the
 * buffer or the displacement moves on (past a negative lower bound). */
static void layout_type(int make, int nblk, int per, int stride, MPI_Datatype bt, int esz,
                        MPI_Datatype *t, int *count, long *shift)
{
    MPI_Datatype in = MPI_DATATYPE_NULL, tys[64];
    MPI_Aint hx[64];
    int ix[64], bl[64];

    *count = 1;
    *shift = 0;
    for (int k = 0; k < nblk; k++) {
        ix[k] = k * (stride / esz);
        bl[k] = per;
        hx[k] = (MPI_Aint)k * stride;
        tys[k] = bt;
    }
    switch (make) {
    case D_HVECTOR: MPI_OK(MPI_Type_create_hvector(nblk, per, stride, bt, t)); break;
    case D_INDEXED_BLOCK: MPI_OK(MPI_Type_create_indexed_block(nblk, per, ix, bt, t)); break;
    case D_HINDEXED: MPI_OK(MPI_Type_create_hindexed(nblk, bl, hx, bt, t)); break;
    case D_STRUCT: MPI_OK(MPI_Type_create_struct(nblk, bl, hx, tys, t)); break;
    case D_RESIZED:
        MPI_OK(MPI_Type_contiguous(per, bt, &in));
        MPI_OK(MPI_Type_create_resized(in, 0, stride, t));
        *count = nblk;
        break;
    case D_NEG_LB: /* the first block at -stride: the buffer or displacement a stride on */
        for (int k = 0; k < nblk; k++)
            hx[k] -= stride;
        *shift = stride;
        MPI_OK(MPI_Type_create_hindexed(nblk, bl, hx, bt, t));
        break;
    case D_SUBARRAY: {
        int sizes[2] = {nblk, stride / esz}, sub[2] = {nblk, per}, start[2] = {0, 0};
        MPI_OK(MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, bt, t));
        break;
    }
    case D_NESTED:
        MPI_OK(MPI_Type_contiguous(per, bt, &in));
        MPI_OK(MPI_Type_create_hvector(nblk, 1, stride, in, t));
        break;
    case D_DUP:
        MPI_OK(MPI_Type_vector(nblk, per, stride / esz, bt, &in));
        MPI_OK(MPI_Type_commit(&in));
        MPI_OK(MPI_Type_dup(in, t));
        break;
    default: MPI_OK(MPI_Type_vector(nblk, per, stride / esz, bt, t));
    }
    if (in != MPI_DATATYPE_NULL)
        MPI_OK(MPI_Type_free(&in));
    MPI_OK(MPI_Type_commit(t));
}

/* Issues op p; a request-based one's request in *rq. */
static void issue(const op_t *p, MPI_Request *rq)
{
    MPI_Datatype bt = MPI_BYTE, tt, ot;
    int acc = is_acc(p->kind), esz = acc ? p->esz : 1, per = p->blk / esz, tc = per, oc = per;
    long tsh = 0, osh = 0;
    unsigned char *ob = obyte(p, 0, 0), *rb = priv + p->roff;
    MPI_Aint td;

    if (p->direct) {
        for (int b = 0; b < p->nblk; b++) {
            unsigned char *t = shbase[p->target] + p->toff + (long)b * p->tstride;
            if (is_get(p->kind))
                memcpy(obyte(p, b, 0), t, p->blk);
            else
                memcpy(t, obyte(p, b, 0), p->blk);
        }
        return;
    }
    if (acc)
        bt = mpi_type(p->ty);
    tt = ot = bt;
    if (p->tmake >= 0) {
        layout_type(p->tmake, p->nblk, per, p->tstride, bt, esz, &tt, &tc, &tsh);
        oc = p->nblk * per;
        if (p->ostride != p->blk) {
            layout_type(p->omake, p->nblk, per, p->ostride, bt, esz, &ot, &oc, &osh);
            ob += osh;
        }
    }
    td = tdisp(p->target, p->toff + tsh);
    switch (p->kind) {
    case K_PUT:
    case K_PUTV:
        if (p->req)
            MPI_OK(MPI_Rput(ob, oc, ot, p->target, td, tc, tt, win, rq));
        else
            MPI_OK(MPI_Put(ob, oc, ot, p->target, td, tc, tt, win));
        break;
    case K_GET:
    case K_GETV:
    case K_NBR:
        if (p->req)
            MPI_OK(MPI_Rget(ob, oc, ot, p->target, td, tc, tt, win, rq));
        else
            MPI_OK(MPI_Get(ob, oc, ot, p->target, td, tc, tt, win));
        break;
    case K_ACC:
    case K_ACCV:
        if (p->req)
            MPI_OK(MPI_Raccumulate(ob, oc, ot, p->target, td, tc, tt, mpi_op(p->aop), win, rq));
        else
            MPI_OK(MPI_Accumulate(ob, oc, ot, p->target, td, tc, tt, mpi_op(p->aop), win));
        break;
    case K_GACC:
        if (p->req)
            MPI_OK(MPI_Rget_accumulate(ob, oc, bt, rb, oc, bt, p->target, td, tc, tt,
                                       mpi_op(p->aop), win, rq));
        else
            MPI_OK(MPI_Get_accumulate(ob, oc, bt, rb, oc, bt, p->target, td, tc, tt, mpi_op(p->aop),
                                      win));
        break;
    case K_FOP: MPI_OK(MPI_Fetch_and_op(ob, rb, bt, p->target, td, mpi_op(p->aop), win)); break;
    default: MPI_OK(MPI_Compare_and_swap(ob, priv + p->coff, rb, bt, p->target, td, win));
    }
    if (tt != bt)
        MPI_OK(MPI_Type_free(&tt));
    if (ot != bt)
        MPI_OK(MPI_Type_free(&ot));
}

/* A fence round's extra epoch, right after the one with the operations: the right
 * neighbour's scratch half that its gets of this round filled, read at once by a rank that
 * just left the fence (they must have landed before anyone could leave it). */
static unsigned char peek[HALF];

static long peek_off(int round)
{
    int right = (me + 1) % np;

    return (long)right * S + P + (round & 1) * HALF;
}

static void peek_scratch(int round)
{
    memset(peek, 0xA5, sizeof(peek));
    MPI_OK(MPI_Get(peek, HALF, MPI_BYTE, (me + 1) % np, tdisp((me + 1) % np, peek_off(round)), HALF,
                   MPI_BYTE, win));
}

static void check_peek(int round)
{
    const unsigned char *want = model + (long)((me + 1) % np) * W + peek_off(round);

    for (int i = 0; i < HALF; i++)
        if (peek[i] != want[i]) {
            CHECK(0,
                  "round %d (fence): rank %d's scratch byte %d, read right after the fence, "
                  "is %d, want %d",
                  round, (me + 1) % np, i, peek[i], want[i]);
            break;
        }
}

/* Checks the destination of this rank's op i, if it has one (a get's, fetched values). */
static void check_op_locked(int round, int mode, int i, int at)
{
    op_t *p = &ops[me][i];
    unsigned char *tw = model + (long)p->target * W;
    const char *when = check_name[at];
    int bad = 0;

    if (mpich_ucx && (at == C_FLUSH_LOCAL_ALL || at == C_FLUSH_LOCAL ||
                      (at >= C_WAIT && at <= C_TESTALL && p->kind == K_GETV)))
        return;

    if (fetches(p->kind)) {
        for (int k = 0; k < p->blk / p->esz && !bad; k++) {
            uint64_t got = word(priv + p->roff + (long)k * p->esz, p->esz),
                     want = word(pexp + p->roff + (long)k * p->esz, p->esz);
            if (got != want && nfails() < MAXFAIL) {
                bad = 1;
                CHECK(0,
                      "round %d (%s): %s at rank %d, checked %s: fetched element %d (target "
                      "offset %ld) is 0x%llx, expected 0x%llx%s",
                      round, mode_name[mode], describe(p), p->target, when, k,
                      p->toff + (long)k * p->esz, (unsigned long long)got, (unsigned long long)want,
                      got == (~want & mask_of(p->ty)) ? " (the poison put there before the call)"
                                                      : "");
            }
        }
        CHECK(1, "fetch");
        return;
    }
    if (!is_get(p->kind))
        return;
    for (int b = 0; b < p->nblk && !bad; b++)
        for (int j = 0; j < p->blk && !bad; j++) {
            long toff = p->toff + (long)b * p->tstride + j;
            unsigned char got = *obyte(p, b, j);
            if (got != tw[toff] && nfails() < MAXFAIL) {
                bad = 1;
                CHECK(0,
                      "round %d (%s): %s from rank %d into %s, checked %s: byte at target "
                      "offset %ld is 0x%02x, expected 0x%02x%s",
                      round, mode_name[mode], describe(p), p->target,
                      p->scratch ? "its own window" : "a private buffer", when, toff, got, tw[toff],
                      got == (unsigned char)~tw[toff] ? " (the poison put there before the get)"
                                                      : "");
            }
        }
    CHECK(1, "get");
}

/* check_op_locked one thread at a time (describe()'s buffer is static) */
static void check_op(int round, int mode, int i, int at)
{
    pthread_mutex_lock(&check_mu);
    check_op_locked(round, mode, i, at);
    pthread_mutex_unlock(&check_mu);
}

/* Checks the destinations of this rank's gets and fetching calls in [from, to). */
static void check_gets(int round, int mode, int from, int to, int at)
{
    for (int i = from; i < to; i++)
        check_op(round, mode, i, at);
}

/* What issues operations of this rank: the main thread (T=1), or one of T threads in a
 * threaded round, with its operations and flushes there, and its R_LATER requests not yet
 * completed. */
typedef struct worker {
    pthread_t th;
    int round, mode;
    int n, idx[MAXOPS]; /* its operations (indices in ops[me]), in list order */
    /* before its operation flush_at (-1: none): MPI_Win_flush_all (flush_t -1) or
     * MPI_Win_flush(flush_t); before flocal_at: MPI_Win_flush_local_all or _local(flocal_t) */
    int flush_at, flush_t, flocal_at, flocal_t;
    MPI_Request pend[MAXOPS];
    MPI_Status pend_st[MAXOPS]; /* (MPI_STATUSES_IGNORE draws a gcc warning here) */
    int pend_op[MAXOPS], npend;
} worker_t;

static worker_t main_worker, workers[MAXT];

static void complete_pending(worker_t *w, int round, int mode)
{
    int flag = 0, rc;

    if (w->npend == 0)
        return;
    if (testall[me])
        do
            rc = MPI_Testall(w->npend, w->pend, &flag, w->pend_st);
        while (rc == MPI_SUCCESS && !flag);
    else
        rc = MPI_Waitall(w->npend, w->pend, w->pend_st);
    MPI_OK(rc);
    for (int k = 0; k < w->npend; k++)
        check_op(round, mode, w->pend_op[k], testall[me] ? C_TESTALL : C_WAITALL);
    w->npend = 0;
}

/* Issues this rank's op i and completes its request as the op says (or leaves it to w). */
static void run_op(worker_t *w, int round, int mode, int i)
{
    op_t *p = &ops[me][i];
    MPI_Request rq = MPI_REQUEST_NULL;
    int flag = 0, rc;

    if (p->kind == K_BAD)
        issue_bad(round, p);
    else
        issue(p, &rq);
    __atomic_add_fetch(&issued[p->kind], 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&issued_req, p->req != R_NONE, __ATOMIC_RELAXED);
    __atomic_add_fetch(&issued_direct, p->direct, __ATOMIC_RELAXED);
    if (p->direct && is_get(p->kind))
        check_op(round, mode, i, C_LOAD);
    switch (p->req) {
    case R_WAIT:
        MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        check_op(round, mode, i, C_WAIT);
        break;
    case R_TEST:
        do
            rc = MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
        while (rc == MPI_SUCCESS && !flag);
        MPI_OK(rc);
        check_op(round, mode, i, C_TEST);
        break;
    case R_LATER:
        w->pend[w->npend] = rq;
        w->pend_op[w->npend++] = i;
        if (w->npend >= group[me])
            complete_pending(w, round, mode);
        break;
    default: break;
    }
}

/* A lock_all round's MPI_Win_flush_local(_all) before op `at`: the ops before it that it
 * covers have their destinations filled */
static void flush_local(int round, int mode, int at)
{
    int all = flocal[me] == 1, t = flocal_t[me];

    issued_flocal++;
    if (all)
        MPI_OK(MPI_Win_flush_local_all(win));
    else
        MPI_OK(MPI_Win_flush_local(t, win));
    for (int i = 0; i < at; i++)
        if (all || ops[me][i].target == t)
            check_op(round, mode, i, all ? C_FLUSH_LOCAL_ALL : C_FLUSH_LOCAL);
}

/* The byte ranges op p touches, [lo, hi) in space sp: the window of that rank (where gets
 * into the origin's own window write too), or np: the origin's private buffer. */
static int spans(const op_t *p, int *sp, long *lo, long *hi)
{
    int k = 0;

    sp[k] = p->target;
    lo[k] = p->toff;
    hi[k++] = p->toff + extent(p);
    sp[k] = p->scratch ? me : np;
    lo[k] = p->ooff;
    hi[k++] = p->ooff + (long)(p->nblk - 1) * p->ostride + p->blk;
    if (fetches(p->kind)) {
        sp[k] = np;
        lo[k] = p->roff;
        hi[k++] = p->roff + p->blk;
    }
    if (p->kind == K_CAS) {
        sp[k] = np;
        lo[k] = p->coff;
        hi[k++] = p->coff + 8;
    }
    return k;
}

/* 1 when ops a and b touch a common byte: one thread must issue both, in list order */
static int dependent(const op_t *a, const op_t *b)
{
    int sa[4], sb[4], na, nb;
    long la[4], ha[4], lb[4], hb[4];

    if (a->kind == K_BAD || b->kind == K_BAD) /* it touches nothing of theirs */
        return 0;

    na = spans(a, sa, la, ha);
    nb = spans(b, sb, lb, hb);
    for (int x = 0; x < na; x++)
        for (int y = 0; y < nb; y++)
            if (sa[x] == sb[y] && la[x] < hb[y] && lb[y] < ha[x])
                return 1;
    return 0;
}

static int uf_find(int *par, int i)
{
    while (par[i] != i)
        i = par[i] = par[par[i]];
    return i;
}

/* A target a thread may flush in this round: any rank under lock_all; under shared locks one
 * this rank locked (a target of one of its operations). -1 when there is none. */
static int flush_target(uint64_t *lr, int mode)
{
    int n = nops[me];

    if (mode == M_LOCK_ALL)
        return (int)(rnd_r(lr) % np);
    return n > 0 ? ops[me][rnd_r(lr) % n].target : -1;
}

/* Cuts this rank's operations into groups of dependent ones, deals the groups out to the
 * threads at random (lr) and picks each thread's flushes. */
static void partition(uint64_t *lr, int round, int mode)
{
    int n = nops[me], par[MAXOPS], th[MAXOPS], groups = 0;

    for (int i = 0; i < n; i++) {
        par[i] = i;
        th[i] = -1;
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (dependent(&ops[me][i], &ops[me][j]))
                par[uf_find(par, j)] = uf_find(par, i);
    for (int t = 0; t < nthreads; t++) {
        worker_t *w = &workers[t];
        w->round = round;
        w->mode = mode;
        w->n = w->npend = 0;
    }
    for (int i = 0; i < n; i++) {
        int r = uf_find(par, i);
        worker_t *w;
        if (th[r] < 0) {
            th[r] = (int)(rnd_r(lr) % nthreads);
            groups++;
        }
        w = &workers[th[r]];
        w->idx[w->n++] = i;
    }
    t_rounds++;
    t_groups += groups;
    for (int t = 0; t < nthreads; t++) {
        worker_t *w = &workers[t];
        int ft = flush_target(lr, mode), lt = flush_target(lr, mode);
        t_busy += w->n > 0;
        w->flush_at = w->flocal_at = -1;
        /* no lock held (a shared-lock round without operations): nothing to flush */
        if (mode == M_LOCK && n == 0)
            continue;
        if (rnd_r(lr) % 2) {
            w->flush_at = (int)(rnd_r(lr) % (w->n + 1));
            w->flush_t = rnd_r(lr) % 2 ? -1 : ft;
        }
        if (mix && rnd_r(lr) % 2) {
            w->flocal_at = (int)(rnd_r(lr) % (w->n + 1));
            w->flocal_t = rnd_r(lr) % 2 ? -1 : lt;
        }
    }
}

/* A thread's flush before its operation k: its operations before k that it covers have
 * their destinations filled. */
static void worker_flush(worker_t *w, int k, int local)
{
    int t = local ? w->flocal_t : w->flush_t, at;

    __atomic_add_fetch(&t_flush, 1, __ATOMIC_RELAXED);
    if (local) {
        __atomic_add_fetch(&issued_flocal, 1, __ATOMIC_RELAXED);
        if (t < 0)
            MPI_OK(MPI_Win_flush_local_all(win));
        else
            MPI_OK(MPI_Win_flush_local(t, win));
        at = t < 0 ? C_FLUSH_LOCAL_ALL : C_FLUSH_LOCAL;
    } else {
        if (t < 0)
            MPI_OK(MPI_Win_flush_all(win));
        else
            MPI_OK(MPI_Win_flush(t, win));
        at = t < 0 ? C_FLUSH_ALL : C_FLUSH;
    }
    for (int j = 0; j < k; j++)
        if (t < 0 || ops[me][w->idx[j]].target == t)
            check_op(w->round, w->mode, w->idx[j], at);
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;

    for (int k = 0; k <= w->n; k++) {
        if (k == w->flush_at)
            worker_flush(w, k, 0);
        if (k == w->flocal_at)
            worker_flush(w, k, 1);
        if (k < w->n)
            run_op(w, w->round, w->mode, w->idx[k]);
    }
    complete_pending(w, w->round, w->mode);
    return NULL;
}

/* A threaded round's operations, inside the epoch the main thread holds: T threads issue
 * them and are joined. */
static void run_threads(uint64_t *lr, int round, int mode)
{
    partition(lr, round, mode);
    for (int t = 0; t < nthreads; t++)
        if (pthread_create(&workers[t].th, NULL, worker_main, &workers[t]) != 0) {
            fprintf(stderr, "[%d] random_epochs: pthread_create failed\n", me);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    for (int t = 0; t < nthreads; t++)
        pthread_join(workers[t].th, NULL);
}

/* Before a passive-target epoch ends: this rank's stores reach the targets' memory (their
 * MPI_Win_sync after the round's MPI_Barrier makes them visible there). */
static void sync_stores(void)
{
    for (int i = 0; i < nops[me]; i++)
        if (ops[me][i].direct) {
            MPI_OK(MPI_Win_sync(win));
            return;
        }
}

/* 1 when one of origin o's operations of the round goes to t */
static int reaches(int o, int t)
{
    for (int i = 0; i < nops[o]; i++)
        if (ops[o][i].target == t)
            return 1;
    return 0;
}

/* 1 when a put or an accumulate (or a bad call) of the round comes to this rank */
static int puts_in(void)
{
    for (int o = 0; o < np; o++)
        for (int i = 0; i < nops[o]; i++)
            if (ops[o][i].target == me && !is_get(ops[o][i].kind))
                return 1;
    return 0;
}

/* Every rank's window start in base[], from its attached memory p (dynamic windows) */
static void publish_base(void *p)
{
    MPI_Aint mine;

    MPI_Get_address(p, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, base, 1, MPI_AINT, MPI_COMM_WORLD);
}

/* The group of the ranks whose bit is set in `bits`, in *g (MPI_GROUP_EMPTY when none);
 * returns how many. */
static int group_of(MPI_Group *world, int bits, MPI_Group *g)
{
    int ranks[64], n = 0;

    for (int t = 0; t < np; t++)
        if (bits >> t & 1)
            ranks[n++] = t;
    *g = MPI_GROUP_EMPTY;
    if (n > 0)
        MPI_OK(MPI_Group_incl(*world, n, ranks, g));
    return n;
}

/* A PSCW round: this rank exposes its window to the origins whose access group holds it, and
 * accesses its own access group (see access_grp). */
static void pscw(MPI_Group *world, int round)
{
    MPI_Group in, out;
    int from = 0, post_assert = nocheck ? MPI_MODE_NOCHECK : 0, nin, nout, flag = 0, rc;

    for (int o = 0; o < np; o++)
        if (access_grp[o] >> me & 1)
            from |= 1 << o;
    if (noput[me] && !puts_in()) /* (what comes in comes from those origins) */
        post_assert |= MPI_MODE_NOPUT;
    nin = group_of(world, from, &in);
    nout = group_of(world, access_grp[me], &out);
    if (nin > 0 || empty_call[me])
        MPI_OK(MPI_Win_post(in, post_assert, win));
    if (nocheck) /* every post is done before any start */
        MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (nout > 0 || empty_call[me])
        MPI_OK(MPI_Win_start(out, nocheck ? MPI_MODE_NOCHECK : 0, win));
    for (int i = 0; i < nops[me]; i++)
        run_op(&main_worker, round, M_PSCW, i);
    if (nout > 0 || empty_call[me])
        MPI_OK(MPI_Win_complete(win));
    if (nin > 0 || empty_call[me]) {
        if (win_test[me]) {
            do
                rc = MPI_Win_test(win, &flag);
            while (rc == MPI_SUCCESS && !flag);
            MPI_OK(rc);
        } else {
            MPI_OK(MPI_Win_wait(win));
        }
    }
    if (nin > 0)
        MPI_OK(MPI_Group_free(&in));
    if (nout > 0)
        MPI_OK(MPI_Group_free(&out));
}

/* A fence round's assertions beyond NOPRECEDE/NOSUCCEED, in a round with hints: NOPUT where
 * no put or accumulate (or bad call) comes to this rank in the epoch the fence opens, NOSTORE
 * where its window took no store or get of its own since the last synchronization (fill
 * poisons the destinations of gets into its own window). fence k: 0 opens the round's
 * operations, 1 the epoch of the neighbour's scratch (gets alone), 2 closes the round. */
static int fence_assert(int k)
{
    int put_in, own_gets = 0;

    if (!hints)
        return 0;
    put_in = puts_in();
    for (int i = 0; i < nops[me]; i++)
        own_gets |= ops[me][i].scratch;
    switch (k) {
    case 0: return (put_in ? 0 : MPI_MODE_NOPUT) | (own_gets ? 0 : MPI_MODE_NOSTORE);
    case 1: return MPI_MODE_NOPUT | (own_gets ? 0 : MPI_MODE_NOSTORE);
    default: return MPI_MODE_NOPUT | MPI_MODE_NOSTORE;
    }
}

/* MPI_MODE_NOCHECK on this rank's lock of t (type `type`) in a lock round with hints, where
 * it holds: no other origin locks t exclusively, or at all for an exclusive lock. Not on
 * MPICH 4.0.2 (RANDOM_EPOCHS_MPICH_UCX=1): once another rank has held a shared NOCHECK lock
 * on t and released it, it never grants an exclusive lock on t again (three ranks: 1 locks 0
 * shared with NOCHECK, puts, unlocks; after a barrier 1 and 2 wait in MPI_Win_lock(EXCLUSIVE,
 * 0) forever; librma grants them). */
static int lock_assert(int t, int type)
{
    if (!hints || mpich_ucx)
        return 0;
    for (int o = 0; o < np; o++)
        if (o != me && reaches(o, t) && (type == MPI_LOCK_EXCLUSIVE || (excl[o] >> t & 1)))
            return 0;
    return MPI_MODE_NOCHECK;
}

/* A dynamic window between rounds: each rank at random moves its memory to a new block
 * (attach it, detach the old one); every rank learns the new addresses. The old block stays
 * allocated, poisoned, until the next move, and must stay poisoned: a peer that wrote there
 * through a stale record of the region would show. Freed then, its address may come back for
 * a later block. */
static unsigned char *old_mem;
#define POISON 0xEE

static void check_old_mem(int round)
{
    long bad = -1;

    for (long i = 0; old_mem != NULL && i < W && bad < 0; i++)
        if (old_mem[i] != POISON)
            bad = i;
    CHECK(bad < 0,
          "round %d: byte %ld of the memory this rank detached from the dynamic window is "
          "0x%02x: written after MPI_Win_detach (slice of rank %ld)",
          round, bad, bad >= 0 ? old_mem[bad] : 0, bad / S);
}

static void reattach(int round)
{
    int move[64];

    for (int t = 0; t < np; t++)
        move[t] = rnd() % 2;
    check_old_mem(round);
    if (move[me]) {
        unsigned char *nm;
        free(old_mem);
        old_mem = NULL;
        nm = malloc(W);
        memcpy(nm, mem, W);
        MPI_OK(MPI_Win_attach(win, nm, W));
        MPI_OK(MPI_Win_detach(win, mem));
        memset(mem, POISON, W);
        old_mem = mem;
        mem = nm;
    }
    publish_base(mem);
    issued_moves += move[me];
}

/* This rank's window against the model: the first wrong byte of each slice. */
static void check_window(int round, int mode)
{
    unsigned char *m = model + (long)me * W;

    for (int o = 0; o < np; o++) {
        long bad = -1;
        const op_t *by = NULL;
        char what[256];
        for (long i = (long)o * S; i < (long)(o + 1) * S && bad < 0; i++)
            if (mem[i] != m[i])
                bad = i;
        if (bad < 0 || nfails() >= MAXFAIL) {
            CHECK(1, "window");
            continue;
        }
        for (int i = 0; i < nops[o]; i++) {
            const op_t *p = &ops[o][i];
            if (!is_get(p->kind) && p->target == me && covers(p, bad))
                by = p;
        }
        if (o == me)
            for (int i = 0; i < nops[o]; i++) {
                const op_t *p = &ops[o][i];
                if (p->scratch && bad >= p->ooff &&
                    bad < p->ooff + (long)(p->nblk - 1) * p->ostride + p->blk)
                    by = p;
            }
        if (by)
            snprintf(what, sizeof what, "last written by the %s to/from rank %d", describe(by),
                     by->target);
        else
            snprintf(what, sizeof what, "not written this round");
        CHECK(0,
              "round %d (%s): rank %d's slice of the window, byte at offset %ld is 0x%02x, "
              "expected 0x%02x (%s)",
              round, mode_name[mode], o, bad, mem[bad], m[bad], what);
    }
}

int main(int argc, char **argv)
{
    int rounds = rt_env_int("RANDOM_EPOCHS_ROUNDS", 300);
    seed = rt_env_int("RANDOM_EPOCHS_SEED", 1);
    const char *fl = getenv("RANDOM_EPOCHS_FLAVOR");
    int flavor = fl != NULL && strcmp(fl, "allocate") == 0  ? RT_ALLOCATE
                 : fl != NULL && strcmp(fl, "dynamic") == 0 ? RT_DYNAMIC
                 : fl != NULL && strcmp(fl, "shared") == 0  ? RT_SHARED
                                                            : RT_CREATE;
    int *modes, fails = 0, provided = MPI_THREAD_MULTIPLE;
    rt_win_t w;
    MPI_Group world;
    uint64_t lr; /* this rank's PRNG for the threaded rounds */

    nthreads = rt_env_int("RANDOM_EPOCHS_THREADS", 1);
    if (nthreads > 1) { /* rt_init, but asking for MPI_THREAD_MULTIPLE */
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        MPI_Comm_rank(MPI_COMM_WORLD, &rt_rank);
    } else {
        rt_init(&argc, &argv);
    }
    me = rt_rank;
    if (nthreads < 1 || nthreads > MAXT || provided < MPI_THREAD_MULTIPLE) {
        if (me == 0)
            printf("random_epochs: RANDOM_EPOCHS_THREADS=%d: needs 1 to %d threads, and "
                   "MPI_THREAD_MULTIPLE for more than one (provided: %d)\n",
                   nthreads, MAXT, provided);
        MPI_Finalize();
        return 1;
    }
    mix = rt_env_int("RANDOM_EPOCHS_MIX", 1) != 0;
    mpich_ucx = rt_env_int("RANDOM_EPOCHS_MPICH_UCX", 0) != 0;
    bad_calls = mix && !mpich_ucx;
    for (int i = 0; i < (int)sizeof(bad_src); i++)
        bad_src[i] = bad_dst[i] = bad_byte(i);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    S = (W / np) & ~7;
    P = S - SCRATCH;
    if (np < 2 || np > 12) {
        if (me == 0)
            printf("random_epochs: needs 2 to 12 ranks\n");
        MPI_Finalize();
        return 1;
    }
    if (rt_flavor_skipped(flavor))
        return rt_finish("random_epochs");
    shared = flavor == RT_SHARED;
    model = calloc(np, W);
    priv = malloc((size_t)MAXOPS * W);
    pexp = calloc(MAXOPS, W);
    base = calloc(np, sizeof(*base));
    if (flavor == RT_DYNAMIC) { /* every rank attaches its own memory */
        w.flavor = flavor;
        w.mem = calloc(1, W);
        MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w.win));
        MPI_OK(MPI_Win_attach(w.win, w.mem, W));
        publish_base(w.mem);
    } else {
        rt_win_open(&w, flavor, W, 1);
    }
    win = w.win;
    mem = w.mem;
    if (bad_calls)
        MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    if (shared) {
        shbase = calloc(np, sizeof(*shbase));
        for (int t = 0; t < np; t++) {
            MPI_Aint size;
            int disp;
            MPI_OK(MPI_Win_shared_query(win, t, &size, &disp, &shbase[t]));
            CHECK(size == W && disp == 1, "MPI_Win_shared_query(%d): size %ld, disp_unit %d", t,
                  (long)size, disp);
        }
    }
    MPI_Comm_group(MPI_COMM_WORLD, &world);

    /* the modes first, so that a closing fence knows the next round's */
    rng = 0x9E3779B97F4A7C15ull * (uint64_t)(seed + 1);
    lr = 0xD1B54A32D192ED03ull * (uint64_t)(seed + 1) ^ 0x94D049BB133111EBull * (uint64_t)(me + 1);
    modes = malloc(sizeof(int) * (rounds + 1));
    for (int r = 0; r < rounds; r++)
        modes[r] = rnd() % M_N;
    modes[rounds] = -1;

    for (int r = 0; r < rounds && fails == 0; r++) {
        int mode = modes[r], next = modes[r + 1], n;
        int open_assert = (r == 0 || modes[r - 1] != M_FENCE || rnd() % 2) ? MPI_MODE_NOPRECEDE : 0;
        int close_assert = (next != M_FENCE || rnd() % 2) ? MPI_MODE_NOSUCCEED : 0;
        op_t *list = ops[me];

        if (flavor == RT_DYNAMIC && r > 0 && rnd() % 4 == 0)
            reattach(r);
        gen_round(r, mode);
        n = nops[me];
        fill(r);
        switch (mode) {
        case M_FENCE:
            MPI_OK(MPI_Win_fence(open_assert | fence_assert(0), win));
            for (int i = 0; i < n; i++)
                run_op(&main_worker, r, mode, i);
            MPI_OK(MPI_Win_fence(fence_assert(1), win));
            peek_scratch(r);
            MPI_OK(MPI_Win_fence(close_assert | fence_assert(2), win));
            check_peek(r);
            break;
        case M_LOCK_ALL:
            /* no lock conflicts with a lock_all round's: MPI_MODE_NOCHECK holds */
            MPI_OK(MPI_Win_lock_all(hints ? MPI_MODE_NOCHECK : 0, win));
            if (nthreads > 1) {
                run_threads(&lr, r, mode);
                sync_stores();
                MPI_OK(MPI_Win_unlock_all(win));
                break;
            }
            for (int i = 0; i <= n; i++) {
                if (i == split[me]) {
                    MPI_OK(MPI_Win_flush_all(win));
                    check_gets(r, mode, 0, split[me], C_FLUSH_ALL);
                }
                if (i == flocal_at[me])
                    flush_local(r, mode, i);
                if (i < n)
                    run_op(&main_worker, r, mode, i);
            }
            complete_pending(&main_worker, r, mode);
            sync_stores();
            MPI_OK(MPI_Win_unlock_all(win));
            break;
        case M_LOCK:
            for (int t = 0; t < np; t++) {
                if (!reaches(me, t))
                    continue;
                /* in ascending order everywhere: exclusive locks held at once cannot deadlock */
                int type = excl[me] >> t & 1 ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED;
                MPI_OK(MPI_Win_lock(type, t, lock_assert(t, type), win));
                for (int i = 0; i < n; i++)
                    if (one_at_a_time[me] && list[i].target == t)
                        run_op(&main_worker, r, mode, i);
                if (one_at_a_time[me]) {
                    complete_pending(&main_worker, r, mode);
                    sync_stores();
                    MPI_OK(MPI_Win_unlock(t, win));
                }
            }
            if (!one_at_a_time[me]) {
                if (nthreads > 1) {
                    run_threads(&lr, r, mode);
                } else {
                    for (int i = 0; i < n; i++)
                        run_op(&main_worker, r, mode, i);
                    complete_pending(&main_worker, r, mode);
                }
                sync_stores();
                for (int t = np - 1; t >= 0; t--)
                    if (reaches(me, t))
                        MPI_OK(MPI_Win_unlock(t, win));
            }
            break;
        default: pscw(&world, r); break;
        }
        MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
        /* after passive-target epochs, MPI_Win_sync (in an epoch of its own) before loads */
        if (mode == M_LOCK_ALL || mode == M_LOCK) {
            MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
            MPI_OK(MPI_Win_sync(win));
        }
        /* (a threaded round checks them all: its threads' flush points are their own) */
        check_gets(r, mode, mode == M_LOCK_ALL && nthreads == 1 ? split[me] : 0, n, C_EPOCH);
        check_window(r, mode);
        check_bad_dst(r);
        if (mode == M_LOCK_ALL || mode == M_LOCK)
            MPI_OK(MPI_Win_unlock(me, win));
        /* no one starts the next round before every rank checked its window */
        MPI_Allreduce(&rt_fails, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (fails && me == 0)
            printf("random_epochs: stopped after round %d (%s), seed %d, %d ranks, %s window\n", r,
                   mode_name[mode], seed, np, rt_flavor_name[flavor]);
    }
    if (me == 0)
        printf("random_epochs: rank 0 issued %ld puts (%ld strided), %ld gets (%ld strided, %ld "
               "of the neighbour's scratch), %ld accumulates (%ld strided), %ld get_accumulate, "
               "%ld fetch_and_op, %ld compare_and_swap; %ld of them request-based, %ld by loads or "
               "stores; %ld local flushes\n",
               issued[K_PUT] + issued[K_PUTV], issued[K_PUTV],
               issued[K_GET] + issued[K_GETV] + issued[K_NBR], issued[K_GETV], issued[K_NBR],
               issued[K_ACC] + issued[K_ACCV], issued[K_ACCV], issued[K_GACC], issued[K_FOP],
               issued[K_CAS], issued_req, issued_direct, issued_flocal);
    if (me == 0 && bad_calls)
        printf("random_epochs: rank 0 made %ld bad calls (each must fail with its error class and "
               "change nothing)\n",
               issued[K_BAD]);
    if (me == 0 && flavor == RT_DYNAMIC)
        printf("random_epochs: rank 0 moved its memory in the dynamic window %ld times\n",
               issued_moves);
    if (me == 0 && nthreads > 1)
        printf("random_epochs: %d threads: rank 0 ran %ld rounds threaded, its operations in %ld "
               "independent groups, %ld threads of %ld had operations; %ld flushes by threads\n",
               nthreads, t_rounds, t_groups, t_busy, t_rounds * nthreads, t_flush);
    MPI_Group_free(&world);
    if (flavor == RT_DYNAMIC) {
        check_old_mem(rounds);
        MPI_OK(MPI_Win_detach(win, mem));
        MPI_OK(MPI_Win_free(&w.win));
        free(mem);
        free(old_mem);
    } else {
        rt_win_close(&w);
    }
    free(base);
    free(shbase);
    free(modes);
    free(model);
    free(priv);
    free(pexp);
    return rt_finish("random_epochs");
}
