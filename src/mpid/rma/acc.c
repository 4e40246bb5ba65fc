/*
 * acc.c - the general accumulate path: argument checks with the standard's error classes,
 * the op x type table, the choice of mechanism per window (or dynamic region) and element,
 * CPU atomics over derived layouts, and the stripe-locked read-modify-write (load/store or
 * CMA) that every other element takes. The rules are in doc/atomicity.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <wchar.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "mpid/rma/acc.h"
#include "mpid/rma/dtl.h"
#include "mpid/rma/env.h"
#include "mpid/rma/hx.h"
#include "netmod/netmod.h"
#include "sync/ctl.h"
#include "sync/wait.h"
#include "windows/memreg.h"
#include "windows/win_error.h"

/* ------------------------------------------------------------------ op x type table */

#define OPB(x) (1u << RMA_OP_##x)
#define OPS_RO (OPB(REPLACE) | OPB(NO_OP))

const uint16_t rma_acc_class_ops[RMA_AC_COUNT] = {
    [RMA_AC_INVALID] = 0,
    [RMA_AC_INT] = OPB(MAX) | OPB(MIN) | OPB(SUM) | OPB(PROD) | OPB(LAND) | OPB(LOR) | OPB(LXOR) |
                   OPB(BAND) | OPB(BOR) | OPB(BXOR) | OPS_RO,
    [RMA_AC_FLOAT] = OPB(MAX) | OPB(MIN) | OPB(SUM) | OPB(PROD) | OPS_RO,
    [RMA_AC_COMPLEX] = OPB(SUM) | OPB(PROD) | OPS_RO,
    [RMA_AC_LOGICAL] = OPB(LAND) | OPB(LOR) | OPB(LXOR) | OPS_RO,
    [RMA_AC_BYTE] = OPB(BAND) | OPB(BOR) | OPB(BXOR) | OPS_RO,
    [RMA_AC_PAIR] = OPB(MAXLOC) | OPB(MINLOC) | OPS_RO,
    [RMA_AC_OTHER] = OPS_RO,
};

#define SK(T)        (sizeof(T) == 8 ? RMA_AK_S64 : sizeof(T) == 4 ? RMA_AK_S32 : RMA_AK_LOCKED)
#define CK           (CHAR_MIN < 0 ? RMA_AK_S8 : RMA_AK_U8) /* plain char's signedness */
#define UK(T)        (sizeof(T) == 8 ? RMA_AK_U64 : sizeof(T) == 4 ? RMA_AK_U32 : RMA_AK_LOCKED)
/* MPI-4 allows MPI_Compare_and_swap on integer, logical and byte types; MPICH takes the
 * character types too (bits are compared, nothing is computed), and its own RMA tests
 * (errors/rma/cas_type_check) require MPI_CHAR, so these take it as well: TC. */
#define CAS_CLS(cls) ((cls) == RMA_AC_INT || (cls) == RMA_AC_LOGICAL || (cls) == RMA_AC_BYTE)
#define T_(dt, kind, cls, cas)                                                                     \
    [(unsigned)(dt)&0xffu] = {(dt), (kind), (cls), RMA_DT_BUILTIN_SIZE(dt), (cas)}
#define T(dt, kind, cls) T_(dt, kind, cls, CAS_CLS(cls))
#define TC(dt, kind)     T_(dt, kind, RMA_AC_OTHER, 1)

/* Every predefined builtin datatype; -Woverride-init would catch two sharing an index. */
const rma_acc_type_t rma_acc_types[256] = {
    TC(MPI_CHAR, CK),
    T(MPI_SIGNED_CHAR, RMA_AK_S8, RMA_AC_INT),
    T(MPI_UNSIGNED_CHAR, RMA_AK_U8, RMA_AC_INT),
    T(MPI_BYTE, RMA_AK_U8, RMA_AC_BYTE),
    T(MPI_WCHAR, (WCHAR_MIN < 0 ? SK(wchar_t) : UK(wchar_t)), RMA_AC_OTHER),
    T(MPI_SHORT, RMA_AK_S16, RMA_AC_INT),
    T(MPI_UNSIGNED_SHORT, RMA_AK_U16, RMA_AC_INT),
    T(MPI_INT, SK(int), RMA_AC_INT),
    T(MPI_UNSIGNED, UK(unsigned), RMA_AC_INT),
    T(MPI_LONG, SK(long), RMA_AC_INT),
    T(MPI_UNSIGNED_LONG, UK(unsigned long), RMA_AC_INT),
    T(MPI_LONG_LONG_INT, SK(long long), RMA_AC_INT),
    T(MPI_UNSIGNED_LONG_LONG, UK(unsigned long long), RMA_AC_INT),
    T(MPI_FLOAT, RMA_AK_F32, RMA_AC_FLOAT),
    T(MPI_DOUBLE, RMA_AK_F64, RMA_AC_FLOAT),
    T(MPI_LONG_DOUBLE, RMA_AK_LOCKED, RMA_AC_FLOAT),
    T(MPI_PACKED, RMA_AK_LOCKED, RMA_AC_OTHER),
    T(MPI_2INT, RMA_AK_LOCKED, RMA_AC_PAIR),
    T(MPI_INT8_T, RMA_AK_S8, RMA_AC_INT),
    T(MPI_INT16_T, RMA_AK_S16, RMA_AC_INT),
    T(MPI_INT32_T, RMA_AK_S32, RMA_AC_INT),
    T(MPI_INT64_T, RMA_AK_S64, RMA_AC_INT),
    T(MPI_UINT8_T, RMA_AK_U8, RMA_AC_INT),
    T(MPI_UINT16_T, RMA_AK_U16, RMA_AC_INT),
    T(MPI_UINT32_T, RMA_AK_U32, RMA_AC_INT),
    T(MPI_UINT64_T, RMA_AK_U64, RMA_AC_INT),
    T(MPI_AINT, SK(MPI_Aint), RMA_AC_INT),
    T(MPI_OFFSET, SK(MPI_Offset), RMA_AC_INT),
    T(MPI_COUNT, SK(MPI_Count), RMA_AC_INT),
    T(MPI_C_BOOL, RMA_AK_BOOL, RMA_AC_LOGICAL),
    T(MPI_CXX_BOOL, RMA_AK_BOOL, RMA_AC_LOGICAL),
    T(MPI_C_FLOAT_COMPLEX, RMA_AK_LOCKED, RMA_AC_COMPLEX),
    T(MPI_C_DOUBLE_COMPLEX, RMA_AK_LOCKED, RMA_AC_COMPLEX),
    T(MPI_C_LONG_DOUBLE_COMPLEX, RMA_AK_LOCKED, RMA_AC_COMPLEX),
    T(MPI_CXX_FLOAT_COMPLEX, RMA_AK_LOCKED, RMA_AC_COMPLEX),
    T(MPI_CXX_DOUBLE_COMPLEX, RMA_AK_LOCKED, RMA_AC_COMPLEX),
    T(MPI_CXX_LONG_DOUBLE_COMPLEX, RMA_AK_LOCKED, RMA_AC_COMPLEX),
    /* Fortran types: integers and reals share the C mechanism of their size */
    TC(MPI_CHARACTER, CK),
    T(MPI_LOGICAL, RMA_AK_LOCKED, RMA_AC_LOGICAL),
    T(MPI_INTEGER, RMA_AK_S32, RMA_AC_INT),
    T(MPI_INTEGER1, RMA_AK_S8, RMA_AC_INT),
    T(MPI_INTEGER2, RMA_AK_S16, RMA_AC_INT),
    T(MPI_INTEGER4, RMA_AK_S32, RMA_AC_INT),
    T(MPI_INTEGER8, RMA_AK_S64, RMA_AC_INT),
    T(MPI_REAL, RMA_AK_F32, RMA_AC_FLOAT),
    T(MPI_DOUBLE_PRECISION, RMA_AK_F64, RMA_AC_FLOAT),
    T(MPI_REAL4, RMA_AK_F32, RMA_AC_FLOAT),
    T(MPI_REAL8, RMA_AK_F64, RMA_AC_FLOAT),
    T(MPI_REAL16, RMA_AK_LOCKED, RMA_AC_FLOAT),
    T(MPI_COMPLEX, RMA_AK_LOCKED, RMA_AC_COMPLEX),
    T(MPI_DOUBLE_COMPLEX, RMA_AK_LOCKED, RMA_AC_COMPLEX),
    T(MPI_COMPLEX8, RMA_AK_LOCKED, RMA_AC_COMPLEX),
    T(MPI_COMPLEX16, RMA_AK_LOCKED, RMA_AC_COMPLEX),
    T(MPI_COMPLEX32, RMA_AK_LOCKED, RMA_AC_COMPLEX),
    T(MPI_2INTEGER, RMA_AK_LOCKED, RMA_AC_PAIR),
    T(MPI_2REAL, RMA_AK_LOCKED, RMA_AC_PAIR),
    T(MPI_2DOUBLE_PRECISION, RMA_AK_LOCKED, RMA_AC_PAIR),
};

#undef T
#undef TC
#undef T_
#undef CAS_CLS
#undef SK
#undef UK
#undef CK

uint16_t rma_acc_type_ops[256];
static uint16_t pair_ops[(unsigned)MPI_LONG_DOUBLE_INT - (unsigned)MPI_FLOAT_INT + 1];
static pthread_once_t ops_once = PTHREAD_ONCE_INIT;

static void ops_from_classes(void)
{
    for (unsigned i = 0; i < 256; i++)
        rma_acc_type_ops[i] = rma_acc_class_ops[rma_acc_types[i].cls];
    for (unsigned i = 0; i < sizeof(pair_ops) / sizeof(pair_ops[0]); i++)
        pair_ops[i] = rma_acc_class_ops[RMA_AC_PAIR];
}

/* Logical ops on floating-point types pass MPICH 4.0's op/type check, but only MPI_LXOR on
 * the C types computes anything: MPI_LAND/MPI_LOR on them abort, and on the Fortran reals
 * all three leave the buffer unchanged. MPI-4 defines none of them; these stay refused. */
static int ops_broken(MPI_Datatype type, int cls, int op)
{
    int c_type = type == MPI_FLOAT || type == MPI_DOUBLE || type == MPI_LONG_DOUBLE;

    return cls == RMA_AC_FLOAT && (op == RMA_OP_LAND || op == RMA_OP_LOR || op == RMA_OP_LXOR) &&
           !(c_type && op == RMA_OP_LXOR);
}

/* Which of the twelve computing ops the host's reductions accept on `type`, less the broken
 * ones above: an MPI_Allreduce of count 0 on the quiet communicator runs its op/type check
 * (MPI_Reduce_local's) and computes nothing, and a refusal returns there instead of going
 * to MPI_COMM_WORLD's handler as MPI_Reduce_local's does. */
static uint16_t ops_probe_type(MPI_Comm quiet, MPI_Datatype type, int cls)
{
    uint16_t ops =
        rma_acc_class_ops[cls] & (uint16_t)((1u << RMA_OP_REPLACE) | (1u << RMA_OP_NO_OP));
    char a[64], b[64];

    if (cls == RMA_AC_INVALID)
        return 0;
    for (int op = 0; op < RMA_OP_REPLACE; op++) {
        if (ops_broken(type, cls, op))
            continue;
        if (PMPI_Allreduce(a, b, 0, type, (MPI_Op)((unsigned)MPI_MAX + (unsigned)op), quiet) ==
            MPI_SUCCESS)
            ops |= (uint16_t)(1u << op);
    }
    return ops;
}

/* No handler of the program's is touched (win_error.h rma_quiet_comm). */
static void ops_probe_body(void)
{
    MPI_Comm quiet = rma_quiet_comm();

    ops_from_classes();
    if (quiet == MPI_COMM_NULL)
        return;
    for (unsigned i = 0; i < 256; i++)
        if (rma_acc_types[i].handle != 0)
            rma_acc_type_ops[i] =
                ops_probe_type(quiet, rma_acc_types[i].handle, rma_acc_types[i].cls);
    for (unsigned i = 0; i < sizeof(pair_ops) / sizeof(pair_ops[0]); i++)
        pair_ops[i] =
            ops_probe_type(quiet, (MPI_Datatype)((unsigned)MPI_FLOAT_INT + i), RMA_AC_PAIR);
    if (rma_acc_op_allowed(MPI_LOGICAL, RMA_OP_LAND)) /* else nothing to learn, and an error */
        rma_acc_locked_probe();
}

void rma_acc_ops_probe(void)
{
    pthread_once(&ops_once, ops_probe_body);
}

int rma_acc_op_allowed(MPI_Datatype basic, int op)
{
    unsigned h = (unsigned)basic;

    if (RMA_DT_IS_BUILTIN(basic))
        return rma_acc_types[h & 0xff].handle == basic && (rma_acc_type_ops[h & 0xff] >> op & 1);
    if (h >= (unsigned)MPI_FLOAT_INT && h <= (unsigned)MPI_LONG_DOUBLE_INT)
        return pair_ops[h - (unsigned)MPI_FLOAT_INT] >> op & 1;
    return 0;
}

/* The CPU-atomic kind of predefined type basic; RMA_AK_LOCKED for the types without one. */
static int type_kind(MPI_Datatype basic)
{
    return RMA_DT_IS_BUILTIN(basic) ? rma_acc_types[(unsigned)basic & 0xff].kind : RMA_AK_LOCKED;
}

/* The table entry of predefined builtin type basic, or NULL for any other handle. */
static const rma_acc_type_t *builtin_type(MPI_Datatype basic)
{
    const rma_acc_type_t *ty = &rma_acc_types[(unsigned)basic & 0xff];

    return RMA_DT_IS_BUILTIN(basic) && ty->handle == basic ? ty : NULL;
}

int rma_acc_type_class(MPI_Datatype basic)
{
    const rma_acc_type_t *ty = builtin_type(basic);
    unsigned h = (unsigned)basic;

    if (RMA_DT_IS_BUILTIN(basic))
        return ty != NULL ? ty->cls : RMA_AC_INVALID;
    if (h >= (unsigned)MPI_FLOAT_INT && h <= (unsigned)MPI_LONG_DOUBLE_INT)
        return RMA_AC_PAIR;
    return RMA_AC_INVALID;
}

/* 1 when MPI_Compare_and_swap takes predefined type basic (rma_acc_type_t.cas). */
static int type_cas(MPI_Datatype basic)
{
    const rma_acc_type_t *ty = builtin_type(basic);

    return ty != NULL && ty->cas;
}

static const char *const op_names[RMA_OP_COUNT] = {
    "MPI_MAX", "MPI_MIN",  "MPI_SUM",  "MPI_PROD",   "MPI_LAND",   "MPI_BAND",    "MPI_LOR",
    "MPI_BOR", "MPI_LXOR", "MPI_BXOR", "MPI_MINLOC", "MPI_MAXLOC", "MPI_REPLACE", "MPI_NO_OP",
};

static const char *const class_names[RMA_AC_COUNT] = {
    "an invalid type", "an integer type", "a floating-point type",     "a complex type",
    "a logical type",  "MPI_BYTE",        "a MAXLOC/MINLOC pair type", "a character or packed type",
};

/* ------------------------------------------------------------------ stripe locks */

/* One attempt at a stripe word mapped here: takes it unless it is held, keeping its mark
 * (RMA_STRIPE_SEEN or 0), which goes to *mark. 1 when taken. */
static int stripe_take(_Atomic uint32_t *w, uint32_t me, uint32_t *mark)
{
    uint32_t cur = atomic_load_explicit(w, memory_order_relaxed);

    while (!(cur & RMA_STRIPE_HELD))
        if (atomic_compare_exchange_weak_explicit(w, &cur, cur | me, memory_order_acquire,
                                                  memory_order_relaxed)) {
            *mark = cur;
            return 1;
        }
    return 0;
}

/* Stripe s's word of target trank's node where it is mapped here: in this node's control
 * segment, or in the target node's as UCX maps it (nm.ctl_map: its shared-memory
 * transports, whose atomics are these CPU atomics); NULL when only network atomics reach
 * it (sync/ctl.h: the same offset on every node). */
static _Atomic uint32_t *stripe_here(rma_win_t *win, int trank, unsigned s)
{
    char *map = win->targets[trank].nm.ctl_map;

    if (win->targets[trank].local)
        return rma_acc_stripe_word(win, s);
    return map != NULL ? (_Atomic uint32_t *)(map + rma_ctl_off_stripe(win, s)) : NULL;
}

/* Stripe s of target trank's node (sync/ctl.h): a CPU atomic on the word where it is
 * mapped here, a network compare-and-swap otherwise. The holder keeps the mark the
 * stripe had (RMA_STRIPE_SEEN or 0) in *mark. 0 or -errno. */
static int stripe_lock(rma_win_t *win, int trank, unsigned s, uint32_t *mark)
{
    const uint32_t me = (uint32_t)win->rank + 1;
    _Atomic uint32_t *w = stripe_here(win, trank, s);
    rma_backoff_t bo = RMA_BACKOFF_INIT;
    uint32_t expect = 0, seen;
    int rc;

    if (w != NULL) {
        /* the holder may be off node, its release a network operation on this word */
        while (!stripe_take(w, me, mark)) {
            rma_ctl_progress(win);
            rma_backoff(&bo);
        }
        return 0;
    }
    /* off node, a mark once seen is expected: the first compare-and-swap then succeeds */
    uint64_t *known = &win->targets[trank].stripes_marked[s / 64], bit = UINT64_C(1) << (s % 64);
    expect = (__atomic_load_n(known, __ATOMIC_RELAXED) & bit) ? RMA_STRIPE_SEEN : 0;
    while ((rc = rma_ctl_cas32(win, trank, rma_ctl_off_stripe(win, s), expect, expect | me,
                               &seen)) == 0 &&
           seen != expect) {
        if (seen & RMA_STRIPE_HELD) {
            rma_ctl_progress(win);
            rma_backoff(&bo);
        }
        expect = seen & RMA_STRIPE_SEEN;
    }
    if (expect != 0) /* a hint: threads may race on it */
        __atomic_fetch_or(known, bit, __ATOMIC_RELAXED);
    *mark = expect;
    return rc;
}

void rma_acc_stripe_wait(rma_win_t *win, int trank, uint64_t key)
{
    unsigned s = rma_acc_stripe_of(trank, key);
    _Atomic uint32_t *w = stripe_here(win, trank, s);
    rma_backoff_t bo = RMA_BACKOFF_INIT;
    uint64_t v = 0;
    uint32_t w32;

    if (w == NULL) { /* the same steps, with network atomics */
        size_t off = rma_ctl_off_stripe(win, s);
        while (rma_ctl_net_amo(win, trank, off, RMA_NM_AMO_ADD, 4, 0, 0, &v) == 0 &&
               v != RMA_STRIPE_SEEN) {
            if (v == 0 && (rma_ctl_cas32(win, trank, off, 0, RMA_STRIPE_SEEN, &w32) != 0 ||
                           w32 == 0 || w32 == RMA_STRIPE_SEEN))
                break;
            rma_ctl_progress(win);
            rma_backoff(&bo);
        }
    } else {
        for (;;) {
            uint32_t cur = atomic_load_explicit(w, memory_order_seq_cst);
            if (cur == RMA_STRIPE_SEEN ||
                (cur == 0 && atomic_compare_exchange_strong_explicit(w, &cur, RMA_STRIPE_SEEN,
                                                                     memory_order_seq_cst,
                                                                     memory_order_relaxed)))
                break;
            if (cur & RMA_STRIPE_HELD) {
                rma_ctl_progress(win);
                rma_backoff(&bo);
            }
        }
    }
    if (rma_unlikely(rma_env.acc_gap_us > 0)) /* tests: widen the race the marks close */
        usleep((useconds_t)rma_env.acc_gap_us);
}

/* Releases stripe s, leaving the mark it had when it was taken. */
static int stripe_unlock(rma_win_t *win, int trank, unsigned s, uint32_t mark)
{
    _Atomic uint32_t *w = stripe_here(win, trank, s);

    if (w != NULL) {
        atomic_store_explicit(w, mark, memory_order_release);
        return 0;
    }
    return rma_ctl_add32(win, trank, rma_ctl_off_stripe(win, s), (uint32_t) - (win->rank + 1));
}

typedef struct stripe_set {
    uint64_t bits[RMA_ACC_NLOCKS / 64];
} stripe_set_t;
_Static_assert(sizeof(((rma_target_t *)0)->stripes_marked) == sizeof(stripe_set_t),
               "a target's known marks cover every stripe");

static void stripe_add(stripe_set_t *set, unsigned s)
{
    set->bits[s / 64] |= UINT64_C(1) << (s % 64);
}

static int stripe_in(const stripe_set_t *set, unsigned s)
{
    return (int)((set->bits[s / 64] >> (s % 64)) & 1u);
}

/* Marks the stripes of every span of target bytes [key, key + len). */
static void stripe_mark(stripe_set_t *set, int trank, uint64_t key, size_t len)
{
    uint64_t first = key >> RMA_ACC_SPAN_SHIFT, last = (key + len - 1) >> RMA_ACC_SPAN_SHIFT;

    if (len == 0)
        return;
    if (last - first >= RMA_ACC_NLOCKS - 1) {
        memset(set->bits, 0xff, sizeof(set->bits));
        return;
    }
    for (uint64_t l = first; l <= last; l++)
        stripe_add(set, rma_acc_stripe_of(trank, l << RMA_ACC_SPAN_SHIFT));
}

/* The first stripe of set at or after s, RMA_ACC_NLOCKS when none: a call touches a few
 * stripes of the 256, and the agent looks at a request's set three times. */
static unsigned stripe_next(const stripe_set_t *set, unsigned s)
{
    while (s < RMA_ACC_NLOCKS) {
        uint64_t w = set->bits[s / 64] >> (s % 64);
        if (w != 0)
            return s + (unsigned)__builtin_ctzll(w);
        s = (s / 64 + 1) * 64;
    }
    return RMA_ACC_NLOCKS;
}

#define STRIPE_EACH(s, set)                                                                        \
    for (unsigned s = stripe_next(set, 0); s < RMA_ACC_NLOCKS; s = stripe_next(set, s + 1))

static int stripe_unlock_set(rma_win_t *win, int trank, const stripe_set_t *set,
                             const stripe_set_t *seen, unsigned end);

/* Takes every stripe of the set in ascending order (the global order: no deadlock); the
 * ones that were marked when taken go to *seen. When one cannot be taken (-errno: the
 * target is gone), the ones taken are released. */
static int stripe_lock_set(rma_win_t *win, int trank, const stripe_set_t *set, stripe_set_t *seen)
{
    uint32_t mark;
    int rc = 0;

    memset(seen, 0, sizeof(*seen));
    STRIPE_EACH (s, set) {
        if ((rc = stripe_lock(win, trank, s, &mark)) != 0) {
            stripe_unlock_set(win, trank, set, seen, s); /* none is left held */
            break;
        }
        if (mark != 0)
            stripe_add(seen, s);
    }
    return rc;
}

/* Releases the stripes of set before stripe `end` with their marks; off-node, the releases
 * are complete at the target on return. */
static int stripe_unlock_set(rma_win_t *win, int trank, const stripe_set_t *set,
                             const stripe_set_t *seen, unsigned end)
{
    int rc = 0;

    STRIPE_EACH (s, set) {
        if (s >= end)
            break;
        rc |= stripe_unlock(win, trank, s, stripe_in(seen, s) ? RMA_STRIPE_SEEN : 0);
    }
    return rc != 0 ? rc : rma_ctl_flush(win, trank);
}

/* Plain kernels: t[i] = t[i] op o[i] over n elements at aligned t (o may be unaligned), the
 * same arithmetic as the CPU-atomic kernels of acc.h, in loops the compiler vectorizes.
 * 0, or -1 for an op they leave to rma_acc_atomic. */
#if defined(__GNUC__) && !defined(__clang__)
/* at -O2, GCC 12 vectorizes only loops whose trip count is a multiple of the vector width */
#define PLAIN_IVDEP     _Pragma("GCC ivdep")
#define PLAIN_VECTORIZE __attribute__((optimize("vect-cost-model=cheap")))
#else
#define PLAIN_IVDEP
#define PLAIN_VECTORIZE
#endif
#define PLAIN_LOOP(T, EXPR)                                                                        \
    PLAIN_IVDEP                                                                                    \
    for (size_t i = 0; i < n; i++) {                                                               \
        T a = tp[i], b;                                                                            \
        memcpy(&b, o + i * sizeof(T), sizeof(T));                                                  \
        tp[i] = (T)(EXPR);                                                                         \
    }

#define PLAIN_INT_KERNEL(NAME, T, W)                                                               \
    PLAIN_VECTORIZE static int NAME(int op, void *t, const char *o, size_t n)                      \
    {                                                                                              \
        T *tp = t;                                                                                 \
        switch (op) {                                                                              \
        case RMA_OP_SUM: PLAIN_LOOP(T, (W)a + (W)b) break;                                         \
        case RMA_OP_PROD: PLAIN_LOOP(T, ((W)a) * ((W)b)) break;                                    \
        case RMA_OP_MAX: PLAIN_LOOP(T, a > b ? a : b) break;                                       \
        case RMA_OP_MIN: PLAIN_LOOP(T, a < b ? a : b) break;                                       \
        case RMA_OP_BAND: PLAIN_LOOP(T, (a & b)) break;                                            \
        case RMA_OP_BOR: PLAIN_LOOP(T, a | b) break;                                               \
        case RMA_OP_BXOR: PLAIN_LOOP(T, a ^ b) break;                                              \
        case RMA_OP_LAND:                                                                          \
        case RMA_OP_LOR:                                                                           \
        case RMA_OP_LXOR: PLAIN_LOOP(T, RMA_ACC_LOGIC(op, a, b)) break;                            \
        default: return -1;                                                                        \
        }                                                                                          \
        return 0;                                                                                  \
    }

#define PLAIN_FLT_KERNEL(NAME, F)                                                                  \
    PLAIN_VECTORIZE static int NAME(int op, void *t, const char *o, size_t n)                      \
    {                                                                                              \
        F *tp = t;                                                                                 \
        switch (op) {                                                                              \
        case RMA_OP_SUM: PLAIN_LOOP(F, a + b) break;                                               \
        case RMA_OP_PROD: PLAIN_LOOP(F, (a * b)) break;                                            \
        case RMA_OP_MAX: PLAIN_LOOP(F, a > b ? a : b) break;                                       \
        case RMA_OP_MIN: PLAIN_LOOP(F, a < b ? a : b) break;                                       \
        default: return -1;                                                                        \
        }                                                                                          \
        return 0;                                                                                  \
    }

#define PLAIN_DEF_INT(K, k, T, W) PLAIN_INT_KERNEL(plain_##k, T, W)
#define PLAIN_DEF_FLT(K, k, F, U) PLAIN_FLT_KERNEL(plain_##k, F)
#define PLAIN_ENTRY(K, k, T, W)   [RMA_AK_##K] = plain_##k,
RMA_ACC_INT_KINDS(PLAIN_DEF_INT)
RMA_ACC_FLT_KINDS(PLAIN_DEF_FLT)

static int (*const plain_kernels[])(int, void *, const char *, size_t) = {
    RMA_ACC_INT_KINDS(PLAIN_ENTRY) RMA_ACC_FLT_KINDS(PLAIN_ENTRY)};

static int (*plain_kernel(int akind))(int, void *, const char *, size_t)
{
    return akind < (int)(sizeof(plain_kernels) / sizeof(plain_kernels[0])) ? plain_kernels[akind]
                                                                           : NULL;
}

/* Bytes from ta to the end of its aligned 8-byte word, at most len. */
static size_t word_run(uintptr_t ta, size_t len)
{
    size_t left = 8 - (ta & 7);
    return len < left ? len : left;
}

/* t = t op o on n bytes of elements of kind akind that nobody else sees (a copy of a word
 * about to be compare-and-swapped). */
static void copy_apply(int op, int akind, size_t es, char *t, const char *o, size_t n)
{
    int (*plain)(int, void *, const char *, size_t) = plain_kernel(akind);

    if (op == RMA_OP_REPLACE)
        memcpy(t, o, n);
    else if (op != RMA_OP_NO_OP && (plain == NULL || plain(op, t, o, n / es) != 0))
        for (size_t i = 0; i < n; i += es) /* C bool, or an op the plain kernels leave out */
            rma_acc_atomic(akind, op, t + i, o + i, NULL, 1);
}

/* Elements of a 1/2-byte kind, n bytes at t (mapped here, aligned), a word at a time: one
 * compare-and-swap of each aligned 8-byte word they share instead of one atomic each. The
 * word's other bytes go back as they were read (a store to them in between makes the swap
 * fail, never lost); a word never crosses a page, so it is mapped wherever t is. */
static void words_apply(int op, int akind, size_t es, char *t, const char *o, char *r, size_t n)
{
    for (size_t i = 0, k; i < n; i += k) {
        uintptr_t ta = (uintptr_t)(t + i);
        _Atomic uint64_t *w = (_Atomic uint64_t *)(ta & ~(uintptr_t)7);
        uint64_t old = atomic_load_explicit(w, memory_order_seq_cst), nv;
        size_t at = ta & 7;

        k = word_run(ta, n - i);
        if (op != RMA_OP_NO_OP)
            do {
                nv = old;
                copy_apply(op, akind, es, (char *)&nv + at, o + i, k);
            } while (!atomic_compare_exchange_weak_explicit(w, &old, nv, memory_order_seq_cst,
                                                            memory_order_relaxed));
        if (r != NULL)
            memcpy(r + i, (char *)&old + at, k);
    }
}

/* The run of whole elements of es bytes from pos (< n) whose spans' stripes all were, or
 * all were not, marked when taken (seen; `key`: the stripe key of byte 0 on target trank):
 * its end, and its mark in *marked. */
static size_t seen_run(const stripe_set_t *seen, int trank, uint64_t key, size_t es, size_t pos,
                       size_t n, int *marked)
{
    static const stripe_set_t none;
    size_t p = pos;

    *marked = 0;
    if (memcmp(seen, &none, sizeof(none)) == 0)
        return n;
    *marked = stripe_in(seen, rma_acc_stripe_of(trank, key + pos));
    do {
        size_t span_end = (size_t)(((key + p) | (RMA_ACC_SPAN - 1u)) + 1u - key);
        p = (span_end + es - 1) / es * es;
    } while (p < n && stripe_in(seen, rma_acc_stripe_of(trank, key + p)) == *marked);
    return p < n ? p : n;
}

/* n bytes of whole elements at t, mapped here, aligned, whose stripes are held: the
 * previous values to r, then t = t op o. Elements on spans whose stripe was marked when
 * taken (seen) take one CPU atomic each, as one-element calls may update them at any
 * moment; the rest are plain loads and stores, in runs of spans (doc/atomicity.md §2).
 * `key` is the stripe key of t on target trank; an element's stripe is its first byte's. */
static void elems_apply(int op, int akind, size_t es, int relaxed, const stripe_set_t *seen,
                        int trank, uint64_t key, char *t, const char *o, char *r, size_t n)
{
    int (*plain)(int, void *, const char *, size_t) = plain_kernel(akind);

    for (size_t pos = 0, end; pos < n; pos = end) {
        char *tt = t + pos, *rr = r != NULL ? r + pos : NULL;
        const char *oo = o != NULL ? o + pos : NULL;
        int marked;

        end = seen_run(seen, trank, key, es, pos, n, &marked);
        if (marked || plain == NULL) { /* plain == NULL: C bool */
            if (es < 4)
                words_apply(op, akind, es, tt, oo, rr, end - pos);
            else
                for (size_t i = 0; i < end - pos; i += es)
                    rma_acc_atomic(akind, op, tt + i, oo ? oo + i : NULL, rr ? rr + i : NULL,
                                   relaxed);
            continue;
        }
        if (rr != NULL)
            memcpy(rr, tt, end - pos);
        if (op == RMA_OP_REPLACE)
            memmove(tt, oo, end - pos);
        else if (op != RMA_OP_NO_OP && plain(op, tt, oo, (end - pos) / es) != 0)
            for (size_t i = 0; i < end - pos; i += es) /* an op the plain kernels leave out */
                rma_acc_atomic(akind, op, tt + i, oo + i, NULL, relaxed);
    }
}

/* ------------------------------------------------------------------ one operation */

typedef struct acc_op {
    rma_win_t *win;
    int kind; /* RMA_ACC, RMA_GACC, RMA_FOP, RMA_CAS */
    int op;   /* RMA_OP_* */
    MPI_Op op_handle;
    int trank;
    uint64_t key0; /* stripe key of the target buffer's address */
    rma_tspan_t span;
    const rma_dtl_t *td, *od, *rd, *bd;
    MPI_Aint tcount, ocount, rcount, nelem;
    MPI_Datatype basic;
    const char *compare;
    const char *opk; /* origin data as nelem packed basic elements (NULL for MPI_NO_OP) */
    char *rpk;       /* fetched data as nelem packed basic elements (NULL: no fetch) */
    int akind;       /* RMA_AK_* of the basic type */
    size_t esize;    /* bytes of one basic element (data bytes) */
    int relaxed;
    int held;          /* the stripes of the whole target buffer are held (stripe_hold) */
    stripe_set_t seen; /* held stripes that were marked when taken */
    char *scratch;     /* read-modify-write of atomic kinds: 2 x scratch_len bytes */
    size_t scratch_len;
    /* transfers between the target and local buffers */
    rma_hx_t *hx; /* off node: the call's pieces for the target's agent */
    char *buf;    /* packed read-modify-write: the packed buffer */
    rma_mover_t mv;
    struct iovec liov[64], riov[64];
} acc_op_t;

/* Reads (write 0) or writes n target bytes at ta from/to buf, directly where they are
 * mapped here and through the transport elsewhere; done when it returns. 0 or -errno. */
static int acc_rw(acc_op_t *a, uintptr_t ta, char *buf, size_t n, int write)
{
    int rc;

    a->mv.write = write;
    rc = rma_mover_piece(&a->mv, ta, buf, n);
    return rc != 0 ? rc : rma_mover_flush(&a->mv);
}

/* Two scratch buffers of at least n bytes each (kept for the call). 0, or -1 without memory. */
static int scratch_get(acc_op_t *a, size_t n, char **old_p, char **upd_p)
{
    if (n > a->scratch_len) {
        char *p = realloc(a->scratch, 2 * n);
        if (p == NULL)
            return -1;
        a->scratch = p;
        a->scratch_len = n;
    }
    *old_p = a->scratch;
    *upd_p = a->scratch + a->scratch_len;
    return 0;
}

/* Read-modify-write of n bytes of whole elements of an atomic kind at ta, whose packed
 * operands start at boff, with the arithmetic of the CPU-atomic kernels; the stripes are
 * held, and no one-element call may touch these elements meanwhile. 0 or -errno. */
static int acc_rmw(acc_op_t *a, uintptr_t ta, size_t boff, size_t n)
{
    const char *src = a->opk != NULL ? a->opk + boff : NULL;
    char *old, *upd;
    int rc;

    if (scratch_get(a, n, &old, &upd) != 0)
        return -12; /* -ENOMEM */
    if ((rc = acc_rw(a, ta, old, n, 0)) != 0)
        return rc;
    if (a->rpk != NULL)
        memcpy(a->rpk + boff, old, n);
    if (a->op == RMA_OP_NO_OP || (a->kind == RMA_CAS && memcmp(old, a->compare, n) != 0))
        return 0;
    if (a->kind != RMA_CAS && a->op != RMA_OP_REPLACE) { /* old is copied out already */
        copy_apply(a->op, a->akind, a->esize, old, src, n);
        src = old;
    }
    return acc_rw(a, ta, (char *)src, n, 1);
}

/* 1 when the off-node target's bytes at ta are updated with network atomics (elements of
 * the kinds with a CPU atomic, in a NET window or region, that UCX does not map here;
 * doc/atomicity.md). */
static int net_atomic_at(const acc_op_t *a, uintptr_t ta)
{
    if (a->win->targets[a->trank].local)
        return 0;
    for (int i = 0; i < a->span.nmaps; i++)
        if (ta >= a->span.maps[i].lo && ta < a->span.maps[i].hi)
            return a->span.maps[i].atomic && a->span.maps[i].local == NULL;
    return a->win->acc_mode == RMA_ACC_MODE_NET;
}

/* Elements at off-node target address ta, n bytes inside one aligned word of wsize (4 or
 * 8) bytes, by network atomics UCX has: the word is read and then compare-and-swapped with
 * the new bytes (computed here with the arithmetic of the CPU-atomic kernels), retried
 * until it lands. For an op UCX lacks on a 4/8-byte element the word is the element; 1/2-
 * byte elements, which have no network atomic of their size, take the 8-byte word holding
 * them. The word's other bytes go back as they were read; a store to them in between makes
 * the swap fail, never lost. Exposures cover whole words (netmod.h). The previous bytes go
 * to r unless r is NULL. 0 or -errno. */
static int acc_net_rmw(acc_op_t *a, uintptr_t ta, unsigned wsize, size_t n, const char *o, char *r)
{
    rma_nm_tgt_t *nm = &a->win->targets[a->trank].nm;
    void *key = rma_tspan_key(&a->span, ta);
    uintptr_t w = ta & ~(uintptr_t)(wsize - 1);
    size_t at = ta - w;
    uint64_t old = 0, nv, seen;
    int rc = nm->ops->amo(nm, key, RMA_NM_AMO_ADD, wsize, w, 0, 0, &old);

    if (rma_unlikely(rma_env.acc_gap_us > 0)) /* tests: the word changes before the swap */
        usleep((useconds_t)rma_env.acc_gap_us);
    while (rc == 0 && a->op != RMA_OP_NO_OP) {
        char *b = (char *)&nv + at;

        nv = old;
        if (a->kind == RMA_CAS) {
            if (memcmp(b, a->compare, n) != 0)
                break;
            memcpy(b, o, n);
        } else {
            copy_apply(a->op, a->akind, a->esize, b, o, n);
        }
        if ((rc = nm->ops->amo(nm, key, RMA_NM_AMO_CSWAP, wsize, w, nv, old, &seen)) != 0 ||
            seen == old)
            break;
        old = seen;
    }
    if (rc == 0 && r != NULL)
        memcpy(r, (char *)&old + at, n);
    return rc;
}

/* One element of a 4/8-byte kind at off-node target address ta, with network atomics: the
 * operations UCX has natively in one, every other one as fetch + compare-and-swap retried
 * until it lands (acc_net_rmw). The previous value goes to r unless r is NULL. 0 or
 * -errno. */
static int acc_net_elem(acc_op_t *a, uintptr_t ta, const char *o, char *r)
{
    rma_nm_tgt_t *nm = &a->win->targets[a->trank].nm;
    void *key = rma_tspan_key(&a->span, ta);
    unsigned es = (unsigned)a->esize;
    int integer = a->akind >= RMA_AK_S32 && a->akind <= RMA_AK_U64, nop = -1, rc;
    int bitwise = integer && a->nelem > 1 && r == NULL; /* fetching: the loop below (netmod.h) */
    uint64_t v = 0, old = 0;

    if (o != NULL)
        memcpy(&v, o, es);
    if (a->kind == RMA_CAS) {
        uint64_t c = 0;
        memcpy(&c, a->compare, es);
        rc = nm->ops->amo(nm, key, RMA_NM_AMO_CSWAP, es, ta, v, c, &old);
        if (rc == 0 && r != NULL)
            memcpy(r, &old, es);
        return rc;
    }
    switch (a->op) {
    case RMA_OP_NO_OP: nop = RMA_NM_AMO_ADD, v = 0; break;
    case RMA_OP_REPLACE: nop = RMA_NM_AMO_SWAP; break;
    case RMA_OP_SUM: nop = integer ? RMA_NM_AMO_ADD : -1; break;
    case RMA_OP_BAND: nop = bitwise ? RMA_NM_AMO_AND : -1; break;
    case RMA_OP_BOR: nop = bitwise ? RMA_NM_AMO_OR : -1; break;
    case RMA_OP_BXOR: nop = bitwise ? RMA_NM_AMO_XOR : -1; break;
    }
    if (nop >= 0 && a->nelem > 1) {
        /* issued back to back; the flush that ends the call completes them all */
        static const uint64_t zero;
        static __thread uint64_t sink; /* a swap always returns the old value */
        return nm->ops->amo_post(nm, key, nop, es, ta,
                                 a->op == RMA_OP_NO_OP ? (const void *)&zero : (const void *)o,
                                 r == NULL && nop == RMA_NM_AMO_SWAP ? (void *)&sink : (void *)r);
    }
    if (nop < 0)
        return acc_net_rmw(a, ta, es, es, o, r);
    rc = nm->ops->amo(nm, key, nop, es, ta, v, 0, &old);
    if (rc == 0 && r != NULL)
        memcpy(r, &old, es);
    return rc;
}

/* n bytes of whole aligned elements at off-node ta that network atomics update, whose
 * packed operands start at boff. Runs whose stripes this call holds unmarked are one get,
 * the CPU kernel here and one put: no one-element call can start on them until the
 * stripes are released (doc/atomicity.md §2). The others take a network atomic an element,
 * a word at a time for 1/2-byte kinds, as a one-element call may update them meanwhile. */
static int acc_net_run(acc_op_t *a, uintptr_t ta, size_t boff, size_t n)
{
    uint64_t key = a->key0 + (ta - a->span.taddr);
    size_t es = a->esize;
    int rc = 0;

    for (size_t pos = 0, end; pos < n && rc == 0; pos = end) {
        int marked = 1;

        end = a->held ? seen_run(&a->seen, a->trank, key, es, pos, n, &marked) : n;
        if (!marked) {
            rc = acc_rmw(a, ta + pos, boff + pos, end - pos);
            continue;
        }
        for (size_t i = pos, k; i < end && rc == 0; i += k) {
            const char *o = a->opk ? a->opk + boff + i : NULL;
            char *r = a->rpk != NULL ? a->rpk + boff + i : NULL;

            k = es >= 4 ? es : word_run(ta + i, end - i);
            rc = es >= 4 ? acc_net_elem(a, ta + i, o, r) : acc_net_rmw(a, ta + i, 8, k, o, r);
        }
    }
    return rc;
}

/* walk (atomic kinds): one target piece against the packed operands. Elements in memory
 * mapped here whose accumulates use CPU atomics, aligned, are updated in place
 * (elems_apply); off-node ones with network atomics, one each; every other run is
 * read-modify-written under the held stripes. */
static int acc_piece(void *arg, MPI_Aint toff, MPI_Aint boff, size_t len)
{
    acc_op_t *a = arg;
    uintptr_t ta = a->span.taddr + (uintptr_t)toff;
    size_t es = a->esize, off = (size_t)boff;

    while (len > 0) {
        size_t n = rma_tspan_run(&a->span, ta, len);
        const rma_dyn_hit_t *m;
        int rc;

        n = n >= es ? n - n % es : es; /* whole elements; one cut by a seam goes alone */
        m = rma_tspan_map(&a->span, ta, n);
        if (net_atomic_at(a, ta) && (ta & (es - 1)) == 0) {
            if ((rc = acc_net_run(a, ta, off, n)) != 0)
                return rc;
        } else if (m != NULL && m->atomic && ((ta - m->lo + (uintptr_t)m->local) & (es - 1)) == 0) {
            char *t = m->local + (ta - m->lo), *r = a->rpk != NULL ? a->rpk + off : NULL;
            const char *o = a->opk != NULL ? a->opk + off : NULL;
            if (a->kind == RMA_CAS) /* one element */
                rma_acc_cas((unsigned)es, t, o, a->compare, r);
            else if (!a->held) /* one element, which takes no stripe */
                rma_acc_atomic(a->akind, a->op, t, o, r, a->relaxed);
            else
                elems_apply(a->op, a->akind, es, a->relaxed, &a->seen, a->trank,
                            a->key0 + (ta - a->span.taddr), t, o, r, n);
        } else if ((rc = acc_rmw(a, ta, off, n)) != 0) {
            return rc;
        }
        ta += n;
        off += n;
        len -= n;
    }
    return 0;
}

/* walk: marks the stripes of a target piece. */
static int acc_piece_mark(void *arg, MPI_Aint toff, MPI_Aint boff, size_t len)
{
    stripe_set_t *set = ((void **)arg)[1];
    acc_op_t *a = ((void **)arg)[0];

    (void)boff;
    stripe_mark(set, a->trank, a->key0 + (uint64_t)toff, len);
    return 0;
}

/* walk (packed read-modify-write): one piece between the target and the packed buffer */
static int acc_piece_move(void *arg, MPI_Aint toff, MPI_Aint boff, size_t len)
{
    acc_op_t *a = arg;

    return rma_mover_piece(&a->mv, a->span.taddr + (uintptr_t)toff, a->buf + boff, len);
}

/* Moves the whole target buffer to (write 0) or from (write 1) the packed buffer `buf` of
 * nelem basic elements. 0, or -errno of a failed transport call. */
static int acc_move(acc_op_t *a, char *buf, int write)
{
    int rc;

    if (a->span.local != NULL) {
        if (write)
            rma_dtl_copy(a->span.local, a->td, a->tcount, buf, a->bd, a->nelem);
        else
            rma_dtl_copy(buf, a->bd, a->nelem, a->span.local, a->td, a->tcount);
        return 0;
    }
    a->buf = buf;
    a->mv.write = write;
    rc = rma_dtl_walk_pairs(a->td, a->tcount, a->bd, a->nelem, acc_piece_move, a);
    if (rc == 0)
        rma_mover_flush(&a->mv);
    return a->mv.err != 0 ? a->mv.err : rc;
}

/* walk (off node, at the target's agent): one target piece against the packed elements,
 * collected with its offset in them */
static int acc_piece_hx(void *arg, MPI_Aint toff, MPI_Aint boff, size_t len)
{
    acc_op_t *a = arg;

    return rma_hx_add(a->hx, a->span.taddr + (uintptr_t)toff, (char *)(uintptr_t)boff, len);
}

/* The same for a pair type with a hole (MPI_SHORT_INT): a record per element that starts in
 * the piece, spanning the element's extent, hole included (the agent writes its data bytes
 * only, rma_acc_serve). An element's first byte is data, so each starts in some piece. */
static int acc_piece_hx_elems(void *arg, MPI_Aint toff, MPI_Aint boff, size_t len)
{
    acc_op_t *a = arg;
    MPI_Aint ext = a->bd->extent, k = (boff + ext - 1) / ext * ext;
    int rc = 0;

    for (; rc == 0 && k < boff + (MPI_Aint)len; k += ext)
        rc = rma_hx_add(a->hx, a->span.taddr + (uintptr_t)(toff + k - boff), (char *)(uintptr_t)k,
                        (size_t)ext);
    return rc;
}

/* The whole call as one request that the target's agent applies next to the memory, under
 * the stripes there (one round trip instead of stripe, get, put and release over the
 * network). 0, -ENOSPC when it does not fit one request, -errno. */
static int acc_hx(acc_op_t *a)
{
    rma_hx_t hx = {.win = a->win, .trank = a->trank, .write = 1};
    int holes = a->bd->size != a->bd->true_extent;
    int rc = 0;

    a->hx = &hx;
    if (a->td == a->bd && !a->bd->is_contig) { /* an array of a pair type: one record */
        for (MPI_Aint k = 0; k < a->nelem && rc == 0; k++)
            rc = rma_hx_add(&hx, a->span.taddr + (uintptr_t)(k * a->bd->extent),
                            (char *)(uintptr_t)(k * a->bd->extent), (size_t)a->bd->true_extent);
    } else {
        rc = rma_dtl_walk_pairs(a->td, a->tcount, a->bd, a->nelem,
                                holes ? acc_piece_hx_elems : acc_piece_hx, a);
    }
    if (rc == 0)
        rc = rma_hx_acc(&hx, a->kind, a->op, a->basic, (size_t)a->bd->size, a->opk, a->compare,
                        a->rpk);
    rma_hx_done(&hx);
    a->hx = NULL;
    return rc == -1 ? -ENOMEM : rc;
}

/* Takes the stripes of every span of the target buffer, in the global order, and
 * marks them held. 0, or -1 when walking the layout ran out of memory. */
static int stripe_hold(acc_op_t *a, stripe_set_t *set)
{
    void *mark[2] = {a, set};

    memset(set, 0, sizeof(*set));
    if (a->td == a->bd) /* an array of the basic type: its holes add no span to mark */
        stripe_mark(set, a->trank, a->key0, (size_t)(a->nelem * a->bd->extent));
    else if (rma_dtl_walk_pairs(a->td, a->tcount, a->bd, a->nelem, acc_piece_mark, mark) != 0)
        return -1;
    if ((a->mv.err = stripe_lock_set(a->win, a->trank, set, &a->seen)) != 0)
        return a->mv.err;
    a->held = 1;
    return 0;
}

/* old = old op upd on a packed copy, the target's element the in-out operand as on every
 * other path (the host library's RMA does so: ties, signed zeros and NaNs of MPI_MAX and
 * MPI_MIN come out the same whichever path an element takes): by our own kernel where there
 * is one for the kind and op (MPICH 4.0.2's MPI_Reduce_local compares unsigned types as
 * signed in MPI_MAX and MPI_MIN, pmodels/mpich#6083; a kernel refuses an op it lacks before
 * it writes: MPI_LXOR on floats, which MPICH computes), else by MPI_Reduce_local in int
 * counts. 0, or 1 when MPI_Reduce_local failed. */
static int packed_combine(acc_op_t *a, char *old, const char *upd)
{
    int (*kernel)(int, void *, const char *, size_t) = plain_kernel(a->akind);
    MPI_Aint done = 0, ext = a->bd->extent;

    if (kernel != NULL && kernel(a->op, old, upd, (size_t)a->nelem) == 0)
        return 0;
    while (done < a->nelem) {
        int n = a->nelem - done > INT_MAX / 2 ? INT_MAX / 2 : (int)(a->nelem - done);
        if (PMPI_Reduce_local(upd + done * ext, old + done * ext, n, a->basic, a->op_handle) !=
            MPI_SUCCESS)
            return 1;
        done += n;
    }
    return 0;
}

/* The whole operation through a packed copy of the target, stripes held: types without a
 * CPU-atomic kernel (long double, complex, pairs, MPI_LOGICAL), and spans that take no CPU
 * atomic (memory reached by CMA). 0, -errno, or 1 when MPI_Reduce_local failed. */
static int acc_packed(acc_op_t *a)
{
    size_t bytes = (size_t)a->nelem * (size_t)a->bd->extent;
    char *old, *upd;
    int write = a->op != RMA_OP_NO_OP, rc, same = 1;

    if (a->span.local != NULL && a->td == a->bd && write && a->kind != RMA_CAS &&
        a->op != RMA_OP_REPLACE && rma_acc_locked_known(a->basic, a->op)) {
        /* an array of the basic type mapped here: in place, as the target's agent does (the
         * kernels write data bytes only, a pair type's holes and padding keep theirs;
         * MPI_REPLACE below copies data bytes only too) */
        if (a->rpk != NULL) /* the last element's padding is not the target's to read */
            memcpy(a->rpk, a->span.local, bytes - (size_t)(a->bd->extent - a->bd->true_extent));
        return rma_acc_locked_apply(a->basic, a->op, a->span.local, a->opk, (size_t)a->nelem,
                                    (size_t)a->bd->extent) != 0;
    }
    if (scratch_get(a, bytes, &old, &upd) != 0)
        return -12; /* -ENOMEM */
    if (write)
        rma_dtl_copy(upd, a->bd, a->nelem, a->opk, a->bd, a->nelem);
    rc = acc_move(a, old, 0);
    if (rc == 0 && a->rpk != NULL)
        memcpy(a->rpk, old, bytes);
    if (rc == 0 && a->kind == RMA_CAS) {
        same = memcmp(old, a->compare, a->esize) == 0;
    } else if (rc == 0 && write && a->op != RMA_OP_REPLACE) {
        rc = packed_combine(a, old, upd); /* the result in old */
    }
    if (rc == 0 && write && same)
        rc = acc_move(a, a->kind == RMA_CAS || a->op == RMA_OP_REPLACE ? upd : old, 1);
    return rc;
}

/* 1 when some element of the span takes an atomic: a region mapped here and updated with
 * CPU atomics, or an off-node target updated with network atomics. */
static int span_has_atomic(const acc_op_t *a)
{
    const rma_tspan_t *sp = &a->span;

    if (!a->win->targets[a->trank].local) {
        for (int i = 0; i < sp->nmaps; i++)
            if (sp->maps[i].atomic)
                return 1;
        return a->win->acc_mode == RMA_ACC_MODE_NET;
    }
    for (int i = 0; i < sp->nmaps; i++)
        if (sp->maps[i].atomic && sp->maps[i].local != NULL)
            return 1;
    return 0;
}

/* 1 when the network atomics of an off-node target complete without its CPU: the
 * endpoint has a network device's atomics. Otherwise
 * UCX emulates each atomic with active messages that the target's worker serves (tcp), and
 * a one-element call (a read of its stripe word, then the atomic: two round trips through
 * the target's worker) is cheaper as one request that the agent applies (doc/atomicity.md
 * §6). */
static int amo_direct(const rma_nm_tgt_t *nm)
{
    return nm->dev_amo;
}

/* 1 when the target's agent has a kernel for op on basic: a CPU-atomic kind's, or one of
 * acc_locked.c's. The others (MPI_REAL16, MPI_COMPLEX32) stay on the origin-side path. */
static int serve_known(MPI_Datatype basic, int op)
{
    return type_kind(basic) != RMA_AK_LOCKED || rma_acc_locked_known(basic, op);
}

/* The call is one element that one CPU or network atomic updates (off node, a 1/2-byte
 * one: a swap of its word, acc_net_rmw); such calls take no stripe. Several elements in
 * one word take them too: a holder may update that word in more than one swap (a strided
 * layout, one record's pieces), and a swap of the whole word between two of them would see
 * half of its call. */
static int acc_single_atomic(const acc_op_t *a, MPI_Datatype ttype)
{
    const rma_dyn_hit_t *m = rma_tspan_map(&a->span, a->span.taddr, a->esize);

    if (net_atomic_at(a, a->span.taddr))
        return a->nelem == 1 && RMA_DT_IS_BUILTIN(ttype) && a->akind != RMA_AK_LOCKED &&
               (a->span.taddr & (a->esize - 1)) == 0;
    return a->nelem == 1 && RMA_DT_IS_BUILTIN(ttype) && a->akind != RMA_AK_LOCKED && m != NULL &&
           m->atomic && ((uintptr_t)(m->local + (a->span.taddr - m->lo)) & (a->esize - 1)) == 0;
}

/* Checks that a side's layout is built from the target's basic type. */
static int acc_check_basic(rma_win_t *win, const rma_dtl_t *d, MPI_Aint count, MPI_Datatype basic,
                           const char *side, const char *func)
{
    if (count == 0 || d->size == 0 || d->basic == basic)
        return MPI_SUCCESS;
    if (d->basic == MPI_DATATYPE_NULL)
        return rma_err(win, func, MPI_ERR_TYPE, "the %s datatype mixes basic datatypes", side);
    return rma_err(win, func, MPI_ERR_TYPE,
                   "the %s datatype is built from basic type 0x%x, "
                   "the target datatype from 0x%x",
                   side, (unsigned)d->basic, (unsigned)basic);
}

/* A predefined datatype of the accumulate operations: one of their named types, or one
 * that MPI_Type_create_f90_* returned (predefined too: rma_dtl_comb_predefined). */
static int acc_is_predefined(MPI_Datatype dt)
{
    int comb;

    if (rma_acc_type_class(dt) != RMA_AC_INVALID)
        return 1;
    return rma_dtl_combiner(dt, &comb) == MPI_SUCCESS && comb != MPI_COMBINER_NAMED &&
           rma_dtl_comb_predefined(comb);
}

int rma_acc_slow(rma_win_t *win, int kind, const void *origin, MPI_Aint ocount, MPI_Datatype otype,
                 void *result, MPI_Aint rcount, MPI_Datatype rtype, const void *compare, int trank,
                 MPI_Aint tdisp, MPI_Aint tcount, MPI_Datatype ttype, MPI_Op op, const char *func)
{
    int opi = rma_acc_op_index(op), fetch = kind != RMA_ACC, cls, rc;
    stripe_set_t set;
    MPI_Aint obytes = 0, rbytes = 0, tbytes;
    acc_op_t *a, abuf;
    char *opk = NULL, *rpk = NULL;
    size_t bytes;
    uint64_t way_t0 = 0; /* a same-node target's way is timed (netmod.h rma_nm_way_t) */

    if (trank == MPI_PROC_NULL)
        return MPI_SUCCESS;
    rma_xfer_drain(win); /* the agent's copies for request-based operations (rma.h) */
    if (opi < 0)
        return rma_err(win, func, MPI_ERR_OP, "0x%x is not a predefined operation (%s)",
                       (unsigned)op,
                       op == MPI_OP_NULL ? "MPI_OP_NULL"
                                         : "user-defined "
                                           "operations are not allowed in RMA");
    if (kind == RMA_ACC && opi == RMA_OP_NO_OP)
        return rma_err(win, func, MPI_ERR_OP,
                       "MPI_NO_OP is allowed only in MPI_Get_accumulate, MPI_Rget_accumulate "
                       "and MPI_Fetch_and_op");
    if (ocount < 0 || tcount < 0 || rcount < 0)
        return rma_err(win, func, MPI_ERR_COUNT,
                       "negative count (origin %ld, result %ld, "
                       "target %ld)",
                       (long)ocount, (long)rcount, (long)tcount);

    a = &abuf;
    memset(a, 0, offsetof(acc_op_t, liov));
    a->win = win;
    a->kind = kind;
    a->op = opi;
    a->op_handle = op;
    a->trank = trank;
    a->tcount = tcount;
    a->ocount = ocount;
    a->rcount = rcount;
    a->compare = compare;
    if ((kind == RMA_FOP || kind == RMA_CAS) && !acc_is_predefined(ttype))
        return rma_err(win, func, MPI_ERR_TYPE, "the datatype must be predefined, not derived");
    if ((rc = rma_dtl_get(ttype, &a->td)) != MPI_SUCCESS)
        return rma_dtl_err(win, func, rc, "target");
    if (opi != RMA_OP_NO_OP && (rc = rma_dtl_get(otype, &a->od)) != MPI_SUCCESS)
        return rma_dtl_err(win, func, rc, "origin");
    if (fetch && (rc = rma_dtl_get(rtype, &a->rd)) != MPI_SUCCESS)
        return rma_dtl_err(win, func, rc, "result");
    if (__builtin_mul_overflow(tcount, a->td->size, &tbytes) ||
        (a->od && __builtin_mul_overflow(ocount, a->od->size, &obytes)) ||
        (a->rd && __builtin_mul_overflow(rcount, a->rd->size, &rbytes)))
        return rma_err(win, func, MPI_ERR_COUNT, "count times datatype size overflows");
    if ((a->od && (rc = rma_origin_span_check(win, a->od, ocount, "origin", func)) != 0) ||
        (a->rd && (rc = rma_origin_span_check(win, a->rd, rcount, "result", func)) != 0))
        return rc;

    /* one basic type on every side, and the op defined on it */
    a->basic = a->td->basic;
    if (tbytes > 0 && a->basic == MPI_DATATYPE_NULL)
        return rma_err(win, func, MPI_ERR_TYPE, "the target datatype mixes basic datatypes");
    cls = a->basic != MPI_DATATYPE_NULL ? rma_acc_type_class(a->basic) : RMA_AC_INVALID;
    if (tbytes > 0 && cls == RMA_AC_INVALID)
        return rma_err(win, func, MPI_ERR_TYPE,
                       "basic datatype 0x%x cannot be used in "
                       "accumulate operations",
                       (unsigned)a->basic);
    if (tbytes > 0 && a->od &&
        (rc = acc_check_basic(win, a->od, ocount, a->basic, "origin", func)) != MPI_SUCCESS)
        return rc;
    if (tbytes > 0 && a->rd &&
        (rc = acc_check_basic(win, a->rd, rcount, a->basic, "result", func)) != MPI_SUCCESS)
        return rc;
    if (kind == RMA_CAS && cls != RMA_AC_INVALID && !type_cas(a->basic))
        return rma_err(win, func, MPI_ERR_TYPE,
                       "compare-and-swap takes an integer, logical, byte, MPI_CHAR or "
                       "MPI_CHARACTER datatype, not 0x%x",
                       (unsigned)a->basic);
    /* a call of no element applies no op: MPICH and Open MPI accept any pair then */
    if (tbytes > 0 && cls != RMA_AC_INVALID && !rma_acc_op_allowed(a->basic, opi))
        return rma_err(win, func, MPI_ERR_OP, "%s is not defined for %s (datatype 0x%x)",
                       op_names[opi], class_names[cls], (unsigned)a->basic);
    if ((opi != RMA_OP_NO_OP && rma_buf_missing(origin, ocount, otype)) ||
        (fetch && rma_buf_missing(result, rcount, rtype)) || (kind == RMA_CAS && compare == NULL))
        return rma_err(win, func, MPI_ERR_BUFFER, "the %s buffer is NULL",
                       kind == RMA_CAS && compare == NULL                ? "compare"
                       : fetch && rma_buf_missing(result, rcount, rtype) ? "result"
                                                                         : "origin");

    rc = rma_target_resolve(win, trank, tdisp, a->td, tcount, &a->span, func);
    if (rc == MPI_SUCCESS &&
        (win->acc_mode == RMA_ACC_MODE_ATOMIC || win->acc_mode == RMA_ACC_MODE_NET) &&
        trank != win->rank && win->targets[trank].local && win->targets[trank].size > 0 &&
        win->targets[trank].map_local == NULL)
        rc = rma_err(win, func, MPI_ERR_OTHER,
                     "rank %d's window memory is shared but could not be mapped here; its "
                     "accumulates need CPU atomics",
                     trank);
    if (rc == MPI_SUCCESS && opi != RMA_OP_NO_OP && obytes != tbytes)
        rc = rma_err(win, func, MPI_ERR_TYPE,
                     "the origin buffer holds %ld bytes but the target buffer %ld: the type "
                     "signatures differ",
                     (long)obytes, (long)tbytes);
    if (rc == MPI_SUCCESS && fetch && rbytes != tbytes)
        rc = rma_err(win, func, MPI_ERR_TYPE,
                     "the result buffer holds %ld bytes but the target buffer %ld: the type "
                     "signatures differ",
                     (long)rbytes, (long)tbytes);
    if (rc == MPI_SUCCESS && tbytes > 0 && rma_dtl_get(a->basic, &a->bd) != MPI_SUCCESS)
        rc = rma_err(win, func, MPI_ERR_TYPE, "no layout for basic datatype 0x%x",
                     (unsigned)a->basic);
    if (rc != MPI_SUCCESS || tbytes == 0) {
        rma_tspan_done(&a->span);
        if (rc == MPI_SUCCESS)
            win->ops_in_fence = 1;
        return rc;
    }
    win->ops_in_fence = 1;
    a->mv = (rma_mover_t){.win = win,
                          .trank = trank,
                          .sync = 1, /* read-modify-write: every transfer done on return */
                          .span = &a->span,
                          .max_iov = (int)(rma_env.cma_batch < 64 ? rma_env.cma_batch : 64),
                          .liov = a->liov,
                          .riov = a->riov};
    a->esize = (size_t)a->td->basic_size;
    a->nelem = tbytes / a->td->basic_size;
    a->akind = type_kind(a->basic);
    a->relaxed = rma_acc_relaxed(win);
    a->key0 = (uint64_t)(a->span.taddr - win->targets[trank].remote_base);

    /* origin and result as nelem packed elements; contiguous buffers are used in place */
    bytes = (size_t)a->nelem * (size_t)a->bd->extent;
    if (opi != RMA_OP_NO_OP) {
        if (a->od == a->bd ||
            (a->od->is_contig && a->od->basic == a->basic && a->od->extent == a->bd->extent)) {
            a->opk = (const char *)origin + a->od->true_lb;
        } else if ((opk = malloc(bytes)) != NULL) {
            rma_dtl_copy(opk, a->bd, a->nelem, origin, a->od, ocount);
            a->opk = opk;
        }
    }
    if (fetch) {
        if (a->rd->is_contig && a->rd->basic == a->basic && a->rd->extent == a->bd->extent)
            a->rpk = (char *)result + a->rd->true_lb;
        else
            a->rpk = rpk = malloc(bytes);
    }
    if ((opi != RMA_OP_NO_OP && a->opk == NULL) || (fetch && a->rpk == NULL)) {
        rc = rma_err(win, func, MPI_ERR_NO_MEM, "out of memory packing a %zu-byte accumulate",
                     bytes);
        goto out;
    }

    /* The mechanism of each element is a function of its region's mode, its type and its
     * alignment (doc/atomicity.md). A call is atomic as a whole: unless it is one element
     * that one CPU atomic updates, it holds the stripes of its whole target buffer, and
     * still updates each element with that element's mechanism, so that one-element calls
     * taking no stripe stay atomic with respect to it. An off-node target's memory that UCX
     * maps here (nm.data_map; a dynamic window's region in an MPI_Alloc_mem block from UCX)
     * is updated through that mapping exactly as on its node: no request to its agent. A
     * same-node target reached by cross-memory attach gets its small ones as requests while
     * that costs less (netmod.h rma_nm_way_t); its agent takes the same stripes. */
    if ((win->targets[trank].local ? rma_nm_way_msg(&win->targets[trank].nm) &&
                                         (size_t)tbytes <= win->targets[trank].nm.way.small
                                   : win->targets[trank].nm.hx_piece > 0) &&
        !rma_tspan_mapped(&a->span) && serve_known(a->basic, opi) &&
        (!acc_single_atomic(a, ttype) || !amo_direct(&win->targets[trank].nm)) &&
        (rc = acc_hx(a)) != -ENOSPC)
        goto done;
    rc = 0;
    /* what this origin sent to the target's agent or holds for it takes effect first (a
     * same-node target's too, whose small operations went that way before) */
    if (win->targets[trank].nm.hx_piece > 0 && rma_hx_in_flight(&win->targets[trank].nm) &&
        (rc = rma_ctl_flush(win, trank)) != 0)
        goto done;
    /* a lock left for later is taken before the stripes (not by the transport's first call
     * under them: the lock may wait for an exclusive holder that waits for a stripe) */
    if ((rc = rma_target_gate(win, trank)) != 0)
        goto done;
    way_t0 = rma_nm_way_op_begin(&win->targets[trank].nm, (size_t)tbytes);
    if (acc_single_atomic(a, ttype)) {
        rma_acc_stripe_wait(win, trank, a->key0);
    } else if ((rc = stripe_hold(a, &set)) != 0) {
        rc = rc == -1 ? rma_err(win, func, MPI_ERR_NO_MEM, "out of memory walking the datatypes")
                      : rma_ctl_fail(win, func, trank, rc);
        goto out;
    }
    /* no element of the span takes a CPU atomic: one packed read-modify-write, whose CMA
     * transfers are batched; otherwise element by element */
    if (a->akind == RMA_AK_LOCKED || !span_has_atomic(a))
        rc = acc_packed(a);
    else
        rc = rma_dtl_walk_pairs(a->td, tcount, a->bd, a->nelem, acc_piece, a);
    if (rc == 0 && !win->targets[trank].local) /* network atomics issued, complete them */
        rc = win->targets[trank].nm.ops->complete(&win->targets[trank].nm);
done:
    if (a->held) {
        int urc = stripe_unlock_set(win, trank, &set, &a->seen, RMA_ACC_NLOCKS);
        if (rc == 0)
            rc = urc;
    }
    if (a->mv.ncma > 0 && win->targets[trank].local) /* as Put/Get: CMA counts to a move */
        rma_expose_note(win, trank, a->mv.cma_addr, bytes, a->mv.cma_region);
    else if (!win->targets[trank].local && rc == 0 && !rma_tspan_mapped(&a->span))
        rma_expose_note_net(win, trank, a->span.taddr, bytes,
                            rma_tspan_region(&a->span, a->span.taddr));
    if (rc == 0 && rpk != NULL)
        rma_dtl_copy(result, a->rd, rcount, rpk, a->bd, a->nelem);
    if (rc == 1)
        rc = rma_err(win, func, MPI_ERR_OTHER, "MPI_Reduce_local failed for op %s", op_names[opi]);
    else if (rc == -12 || (rc == -1 && a->mv.err == 0))
        rc = rma_err(win, func, MPI_ERR_NO_MEM, "out of memory for a %zu-byte accumulate", bytes);
    else if (rc != 0)
        rc = rma_err(win, func, MPI_ERR_OTHER, "%s access to rank %d (pid %d) failed: %s%s",
                     win->targets[trank].local ? "cross-memory" : "UCX", trank, a->span.pid,
                     strerror(-rc), rma_err_cma_hint(-rc, win->targets[trank].local));
out:
    if (way_t0 != 0)
        rma_nm_way_op_end(&win->targets[trank].nm, way_t0);
    rma_tspan_done(&a->span);
    free(a->scratch);
    free(opk);
    free(rpk);
    return rc;
}

/* ------------------------------------------------------------------ at the target's agent */

/* Bytes one element of predefined type basic takes in a request: its data, and the hole
 * between them for a pair type that has one (MPI_SHORT_INT). 0: not predefined. */
size_t rma_acc_serve_esize(MPI_Datatype basic)
{
    const rma_dtl_t *d;

    if (rma_acc_type_class(basic) == RMA_AC_INVALID || rma_dtl_get(basic, &d) != MPI_SUCCESS)
        return 0;
    return (size_t)d->true_extent;
}

const char *rma_acc_serve_check(int kind, int op, MPI_Datatype basic, uint64_t bytes, size_t *data)
{
    size_t es = rma_acc_serve_esize(basic);

    if (kind != RMA_ACC && kind != RMA_GACC && kind != RMA_FOP && kind != RMA_CAS)
        return "unknown accumulate kind";
    if (es == 0)
        return "not a predefined datatype usable in accumulates";
    if (op < 0 || op >= RMA_OP_COUNT)
        return "unknown operation";
    if (kind == RMA_CAS && type_cas(basic)) {
        if (bytes != es)
            return "compare-and-swap of more than one element";
        *data = 2 * es;
        return NULL;
    }
    if (kind == RMA_CAS)
        return "compare-and-swap on a datatype that is not an integer, logical, byte, MPI_CHAR or "
               "MPI_CHARACTER";
    if (!rma_acc_op_allowed(basic, op) || (kind == RMA_ACC && op == RMA_OP_NO_OP))
        return "operation not allowed on the datatype";
    if (!serve_known(basic, op))
        return "no kernel for the operation on the datatype at the target";
    if (bytes == 0 || bytes % es != 0)
        return "length is not whole elements";
    *data = op == RMA_OP_NO_OP ? 0 : (size_t)bytes;
    return NULL;
}

/* Takes the stripes of set in ascending order without waiting, marks kept as stripe_lock
 * keeps them (the marked ones go to *seen): 0, or -EAGAIN (none held) when one is taken. */
static int stripe_try_set(rma_win_t *win, const stripe_set_t *set, stripe_set_t *seen)
{
    const uint32_t me = (uint32_t)win->rank + 1;
    uint32_t mark;

    memset(seen, 0, sizeof(*seen));
    STRIPE_EACH (s, set) {
        if (!stripe_take(rma_acc_stripe_word(win, s), me, &mark)) {
            stripe_unlock_set(win, win->rank, set, seen, s);
            return -EAGAIN;
        }
        if (mark != 0)
            stripe_add(seen, s);
    }
    return 0;
}

/* n elements packed at their size at t (one for compare-and-swap), stripe key `key`, under
 * the held stripes (marked ones in seen): the previous values to r, then t = t op o. No MPI
 * call: the target's agent runs it. 0, or 1 for an (op, type) without a kernel here. */
static int serve_elems(int kind, int op, MPI_Datatype basic, int akind, size_t es, char *t,
                       const char *o, const char *c, char *r, size_t n, int relaxed,
                       const stripe_set_t *seen, int trank, uint64_t key)
{
    if (kind == RMA_CAS) {
        if ((es == 1 || es == 2 || es == 4 || es == 8) && ((uintptr_t)t & (es - 1)) == 0) {
            rma_acc_cas((unsigned)es, t, o, c, r);
        } else {
            memcpy(r, t, es);
            if (memcmp(t, c, es) == 0)
                memcpy(t, o, es);
        }
        return 0;
    }
    if (akind != RMA_AK_LOCKED && ((uintptr_t)t & (es - 1)) == 0) {
        elems_apply(op, akind, es, relaxed, seen, trank, key, t, o, r, n * es);
        return 0;
    }
    if (r != NULL)
        memcpy(r, t, n * es);
    if (akind == RMA_AK_LOCKED)
        return rma_acc_locked_apply(basic, op, t, o, n, es) != 0;
    /* misaligned: each element through an aligned copy, under the stripes */
    for (size_t i = 0; op != RMA_OP_NO_OP && i < n; i++) {
        uint64_t tmp[1];

        memcpy(tmp, t + i * es, es);
        rma_acc_atomic(akind, op, tmp, o + i * es, NULL, 1);
        memcpy(t + i * es, tmp, es);
    }
    return 0;
}

int rma_acc_serve(rma_win_t *win, const rma_hx_rec_t *recs, uint32_t nrec, int kind, int op,
                  MPI_Datatype basic, const char *opk, const char *compare, char *rpk)
{
    size_t es = rma_acc_serve_esize(basic), off = 0;
    uint64_t base = win->flavor == MPI_WIN_FLAVOR_DYNAMIC ? 0 : (uint64_t)(uintptr_t)win->base;
    int akind = type_kind(basic);
    int relaxed = rma_acc_relaxed(win), rc = 0;
    stripe_set_t set, seen;

    /* the stripes of the whole target buffer, as an origin on this node takes them; a
     * record whose pieces touch is one piece */
    memset(&set, 0, sizeof(set));
    for (uint32_t i = 0; i < nrec; i++) {
        int whole = recs[i].stride == (int64_t)recs[i].len;
        uint64_t len = whole ? (uint64_t)recs[i].len * recs[i].count : recs[i].len;

        for (uint32_t k = 0; k < (whole ? 1 : recs[i].count); k++)
            stripe_mark(&set, win->rank,
                        recs[i].addr + (uint64_t)((int64_t)k * recs[i].stride) - base, len);
    }
    if (stripe_try_set(win, &set, &seen) != 0)
        return -EAGAIN;
    /* elements with a CPU-atomic kernel are updated as an origin on this node updates them
     * (elems_apply); the rest are read, combined and written under the stripes */
    for (uint32_t i = 0; i < nrec && rc == 0; i++) {
        int whole = recs[i].stride == (int64_t)recs[i].len;
        uint64_t len = whole ? (uint64_t)recs[i].len * recs[i].count : recs[i].len;

        for (uint32_t k = 0; k < (whole ? 1 : recs[i].count) && rc == 0; k++) {
            uint64_t a = recs[i].addr + (uint64_t)((int64_t)k * recs[i].stride);
            char *t = (char *)(uintptr_t)a;
            rc = serve_elems(kind, op, basic, akind, es, t, opk ? opk + off : NULL, compare,
                             rpk ? rpk + off : NULL, len / es, relaxed, &seen, win->rank, a - base);
            off += len;
        }
    }
    /* this node's words: stores, nothing to flush */
    stripe_unlock_set(win, win->rank, &set, &seen, RMA_ACC_NLOCKS);
    return rc;
}
