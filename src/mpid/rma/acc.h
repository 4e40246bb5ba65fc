/*
 * acc.h - the accumulate family's hot path: the per-type table (which mechanism and which ops
 * a predefined datatype gets), the CPU-atomic element kernels, and the inline fast paths of
 * MPI_Fetch_and_op, MPI_Compare_and_swap and one-element MPI_Accumulate/MPI_Get_accumulate.
 *
 * The atomicity domain (doc/atomicity.md): the mechanism that updates an element is a
 * function of its basic type and alignment only. A naturally aligned 1/2/4/8-byte integer,
 * bool, byte, float or double element on a window whose every (origin, target) pair is
 * mapped is always updated with a CPU atomic; every other element (long double, complex,
 * pair types, misaligned, windows or dynamic regions reached through CMA) always under the
 * window's stripe locks (acc.c). Everything but the fast paths is out of line in acc.c.
 */
#ifndef RMA_ACC_H
#define RMA_ACC_H

#include <stdint.h>
#include <string.h>

#include "mpid/rma/rma.h"

/* Predefined ops are MPI_MAX .. MPI_NO_OP in the MPICH ABI; index = handle - MPI_MAX. */
enum {
    RMA_OP_MAX = 0,
    RMA_OP_MIN,
    RMA_OP_SUM,
    RMA_OP_PROD,
    RMA_OP_LAND,
    RMA_OP_BAND,
    RMA_OP_LOR,
    RMA_OP_BOR,
    RMA_OP_LXOR,
    RMA_OP_BXOR,
    RMA_OP_MINLOC,
    RMA_OP_MAXLOC,
    RMA_OP_REPLACE,
    RMA_OP_NO_OP,
    RMA_OP_COUNT
};
_Static_assert((unsigned)MPI_NO_OP - (unsigned)MPI_MAX == RMA_OP_NO_OP &&
                   (unsigned)MPI_BXOR - (unsigned)MPI_MAX == RMA_OP_BXOR &&
                   (unsigned)MPI_MAXLOC - (unsigned)MPI_MAX == RMA_OP_MAXLOC,
               "MPICH ABI: predefined op handles are consecutive");

/* Op index of a predefined op, or -1 for MPI_OP_NULL, user-defined or invalid handles. */
static inline int rma_acc_op_index(MPI_Op op)
{
    unsigned i = (unsigned)op - (unsigned)MPI_MAX;
    return i < RMA_OP_COUNT ? (int)i : -1;
}

/* Element kinds with a CPU-atomic kernel; RMA_AK_LOCKED elements always take stripe locks. */
enum {
    RMA_AK_LOCKED = 0,
    RMA_AK_S8,
    RMA_AK_U8,
    RMA_AK_S16,
    RMA_AK_U16,
    RMA_AK_S32,
    RMA_AK_U32,
    RMA_AK_S64,
    RMA_AK_U64,
    RMA_AK_F32,
    RMA_AK_F64,
    RMA_AK_BOOL
};

/* The kinds with arithmetic kernels, once for every table of them (the CPU-atomic kernels
 * below, the plain ones of acc.c): X(KIND, name, C type, type the arithmetic is done in)
 * for integers, X(KIND, name, C type, unsigned type of its bits) for floating point. */
#define RMA_ACC_INT_KINDS(X)                                                                       \
    X(S8, s8, int8_t, unsigned)                                                                    \
    X(U8, u8, uint8_t, unsigned)                                                                   \
    X(S16, s16, int16_t, unsigned)                                                                 \
    X(U16, u16, uint16_t, unsigned)                                                                \
    X(S32, s32, int32_t, uint32_t)                                                                 \
    X(U32, u32, uint32_t, uint32_t)                                                                \
    X(S64, s64, int64_t, uint64_t)                                                                 \
    X(U64, u64, uint64_t, uint64_t)
#define RMA_ACC_FLT_KINDS(X)                                                                       \
    X(F32, f32, float, uint32_t)                                                                   \
    X(F64, f64, double, uint64_t)

/* Type classes: which predefined ops the standard allows on a basic type. */
enum {
    RMA_AC_INVALID = 0, /* not usable in accumulates (MPI_LB, MPI_UB, unknown) */
    RMA_AC_INT,         /* C and Fortran integers, MPI_AINT/OFFSET/COUNT */
    RMA_AC_FLOAT,       /* float, double, long double, Fortran reals */
    RMA_AC_COMPLEX,     /* complex types */
    RMA_AC_LOGICAL,     /* MPI_C_BOOL, MPI_CXX_BOOL, MPI_LOGICAL */
    RMA_AC_BYTE,        /* MPI_BYTE */
    RMA_AC_PAIR,        /* MAXLOC/MINLOC pair types */
    RMA_AC_OTHER,       /* characters, MPI_PACKED: MPI_REPLACE and MPI_NO_OP only */
    RMA_AC_COUNT
};

/* Bit RMA_OP_x set when op x is allowed on a class by MPI-4 (the starting point of
 * rma_acc_type_ops, and what error messages name). */
extern const uint16_t rma_acc_class_ops[RMA_AC_COUNT];

/* Bit RMA_OP_x set when op x is allowed on the builtin type with index handle & 0xff: the
 * ops the host MPI's MPI_Reduce_local accepts on it, plus MPI_REPLACE and MPI_NO_OP
 * (rma_acc_ops_probe). Before the probe ran, the class table's ops. */
extern uint16_t rma_acc_type_ops[256];

/* Asks the host library which predefined op x type pairs it accepts (MPI must be
 * initialized). Called once at start-up. */
void rma_acc_ops_probe(void);

/* 1 when predefined op index `op` may be applied to predefined basic type `basic`. */
int rma_acc_op_allowed(MPI_Datatype basic, int op);

/* One predefined builtin datatype (indexed by handle & 0xff; `handle` confirms the entry). */
typedef struct rma_acc_type {
    MPI_Datatype handle;
    uint8_t kind; /* RMA_AK_* */
    uint8_t cls;  /* RMA_AC_* */
    uint8_t size; /* bytes of one element */
    uint8_t cas;  /* 1: MPI_Compare_and_swap accepts it (integer, logical, byte, character) */
} rma_acc_type_t;

extern const rma_acc_type_t rma_acc_types[256];

/* Class of a predefined basic type (builtin or pair), RMA_AC_INVALID for anything else. */
int rma_acc_type_class(MPI_Datatype basic);

/* Kernels for the types without a CPU atomic (acc_locked.c): n elements packed at es bytes
 * (the true extent) at t and o; t = t op o as the host's MPI_Reduce_local(t, copy of o)
 * computes it, written to the data bytes of t only. No MPI call. known: 1 when (basic, op)
 * has one (MPI_REPLACE and MPI_NO_OP always). apply: 0, or -1 without a kernel. probe: asks
 * the host library once how it writes Fortran's .TRUE. (MPI initialized, caller's thread). */
int rma_acc_locked_known(MPI_Datatype basic, int op);
int rma_acc_locked_apply(MPI_Datatype basic, int op, char *t, const char *o, size_t n, size_t es);
void rma_acc_locked_probe(void);

/* Operation kinds of the general path. */
enum { RMA_ACC = 0, RMA_GACC, RMA_FOP, RMA_CAS };

/* General accumulate path: every check with the standard's error classes (raised once on the
 * window), derived datatypes, locked types, CMA, dynamic windows. MPI_SUCCESS or the error. */
struct rma_hx_rec;

/* The target's agent (mpid/rma/hx.c). esize: bytes of one element of a predefined type in a
 * request, a pair type's hole included (0 when basic is not one usable in accumulates).
 * check: NULL when (kind, op, basic) and the data bytes are a sound request, the data that
 * must follow the records in *data; else why not. serve: applies the call to this rank's
 * memory at the records, under the stripes of every span they touch (doc/atomicity.md),
 * without any MPI call: 0, 1 when no kernel computes the op on the type (check refuses those),
 * -EAGAIN (nothing done) when a stripe is taken. */
size_t rma_acc_serve_esize(MPI_Datatype basic);
const char *rma_acc_serve_check(int kind, int op, MPI_Datatype basic, uint64_t bytes, size_t *data);
int rma_acc_serve(rma_win_t *win, const struct rma_hx_rec *recs, uint32_t nrec, int kind, int op,
                  MPI_Datatype basic, const char *opk, const char *compare, char *rpk);

int rma_acc_slow(rma_win_t *win, int kind, const void *origin, MPI_Aint ocount, MPI_Datatype otype,
                 void *result, MPI_Aint rcount, MPI_Datatype rtype, const void *compare, int trank,
                 MPI_Aint tdisp, MPI_Aint tcount, MPI_Datatype ttype, MPI_Op op, const char *func)
    __attribute__((noinline));

/* ------------------------------------------------------------------ element kernels */

/* Memory orders: the default accumulate_ordering needs nothing beyond per-location coherence
 * for the RMW ops, and sequential consistency for plain stores (MPI_REPLACE) and loads
 * (MPI_NO_OP) so that they stay ordered with other accumulates; accumulate_ordering=none
 * relaxes those to plain loads/stores. */
#define RMA_ACC_RMW __ATOMIC_ACQ_REL

#define RMA_ACC_LOGIC(op, a, b)                                                                    \
    ((op) == RMA_OP_LAND  ? ((a) != 0 && (b) != 0)                                                 \
     : (op) == RMA_OP_LOR ? ((a) != 0 || (b) != 0)                                                 \
                          : (((a) != 0) != ((b) != 0)))

/* Integer kernel: T the element type, W the type arithmetic is done in (unsigned, so that
 * overflow wraps as MPICH's kernels do in practice). */
#define RMA_ACC_INT_KERNEL(NAME, T, W)                                                             \
    static inline void NAME(int op, void *tp, const void *op_p, void *rp, int relaxed)             \
    {                                                                                              \
        T *t = (T *)tp, v = 0, old, nv;                                                            \
        if (op != RMA_OP_NO_OP)                                                                    \
            memcpy(&v, op_p, sizeof(v));                                                           \
        switch (op) {                                                                              \
        case RMA_OP_SUM: old = __atomic_fetch_add(t, v, RMA_ACC_RMW); break;                       \
        case RMA_OP_BAND: old = __atomic_fetch_and(t, v, RMA_ACC_RMW); break;                      \
        case RMA_OP_BOR: old = __atomic_fetch_or(t, v, RMA_ACC_RMW); break;                        \
        case RMA_OP_BXOR: old = __atomic_fetch_xor(t, v, RMA_ACC_RMW); break;                      \
        case RMA_OP_REPLACE:                                                                       \
            if (rp == NULL) {                                                                      \
                if (relaxed)                                                                       \
                    __atomic_store_n(t, v, __ATOMIC_RELAXED);                                      \
                else                                                                               \
                    __atomic_store_n(t, v, __ATOMIC_SEQ_CST);                                      \
                return;                                                                            \
            }                                                                                      \
            old = __atomic_exchange_n(t, v, RMA_ACC_RMW);                                          \
            break;                                                                                 \
        case RMA_OP_NO_OP:                                                                         \
            old = relaxed ? __atomic_load_n(t, __ATOMIC_RELAXED)                                   \
                          : __atomic_load_n(t, __ATOMIC_SEQ_CST);                                  \
            break;                                                                                 \
        default:                                                                                   \
            old = __atomic_load_n(t, __ATOMIC_RELAXED);                                            \
            do {                                                                                   \
                switch (op) {                                                                      \
                case RMA_OP_PROD: nv = (T)((W)old * (W)v); break;                                  \
                case RMA_OP_MAX: nv = old > v ? old : v; break;                                    \
                case RMA_OP_MIN: nv = old < v ? old : v; break;                                    \
                default: nv = (T)RMA_ACC_LOGIC(op, old, v); break;                                 \
                }                                                                                  \
            } while (!__atomic_compare_exchange_n(t, &old, nv, 1, RMA_ACC_RMW, __ATOMIC_RELAXED)); \
            break;                                                                                 \
        }                                                                                          \
        if (rp != NULL)                                                                            \
            memcpy(rp, &old, sizeof(old));                                                         \
    }

#define RMA_ACC_DEF_INT(K, k, T, W) RMA_ACC_INT_KERNEL(rma_acc_k_##k, T, W)
RMA_ACC_INT_KINDS(RMA_ACC_DEF_INT)

/* Floating-point kernel: a CAS loop on the bit pattern (U) of the value (F). */
#define RMA_ACC_FLT_KERNEL(NAME, F, U)                                                             \
    static inline void NAME(int op, void *tp, const void *op_p, void *rp, int relaxed)             \
    {                                                                                              \
        U *t = (U *)tp, old, nu;                                                                   \
        F v = 0, o, n;                                                                             \
        if (op != RMA_OP_NO_OP)                                                                    \
            memcpy(&v, op_p, sizeof(v));                                                           \
        if (op == RMA_OP_NO_OP) {                                                                  \
            old = relaxed ? __atomic_load_n(t, __ATOMIC_RELAXED)                                   \
                          : __atomic_load_n(t, __ATOMIC_SEQ_CST);                                  \
        } else if (op == RMA_OP_REPLACE) {                                                         \
            memcpy(&nu, &v, sizeof(nu));                                                           \
            if (rp == NULL) {                                                                      \
                if (relaxed)                                                                       \
                    __atomic_store_n(t, nu, __ATOMIC_RELAXED);                                     \
                else                                                                               \
                    __atomic_store_n(t, nu, __ATOMIC_SEQ_CST);                                     \
                return;                                                                            \
            }                                                                                      \
            old = __atomic_exchange_n(t, nu, RMA_ACC_RMW);                                         \
        } else {                                                                                   \
            old = __atomic_load_n(t, __ATOMIC_RELAXED);                                            \
            do {                                                                                   \
                memcpy(&o, &old, sizeof(o));                                                       \
                switch (op) {                                                                      \
                case RMA_OP_SUM: n = o + v; break;                                                 \
                case RMA_OP_PROD: n = o * v; break;                                                \
                case RMA_OP_MAX: n = o > v ? o : v; break;                                         \
                case RMA_OP_MIN: n = o < v ? o : v; break;                                         \
                default: n = (F)RMA_ACC_LOGIC(op, o, v); break;                                    \
                }                                                                                  \
                memcpy(&nu, &n, sizeof(nu));                                                       \
            } while (!__atomic_compare_exchange_n(t, &old, nu, 1, RMA_ACC_RMW, __ATOMIC_RELAXED)); \
        }                                                                                          \
        if (rp != NULL)                                                                            \
            memcpy(rp, &old, sizeof(old));                                                         \
    }

#define RMA_ACC_DEF_FLT(K, k, F, U) RMA_ACC_FLT_KERNEL(rma_acc_k_##k, F, U)
RMA_ACC_FLT_KINDS(RMA_ACC_DEF_FLT)

/* C bool: logical ops on 0/1 bytes, REPLACE and NO_OP. */
static inline void rma_acc_k_bool(int op, void *tp, const void *op_p, void *rp, int relaxed)
{
    uint8_t *t = tp, v = 0, old, nv;

    if (op != RMA_OP_NO_OP)
        memcpy(&v, op_p, 1);
    if (op == RMA_OP_REPLACE || op == RMA_OP_NO_OP) {
        rma_acc_k_u8(op, tp, op_p, rp, relaxed);
        return;
    }
    old = __atomic_load_n(t, __ATOMIC_RELAXED);
    do {
        nv = (uint8_t)RMA_ACC_LOGIC(op, old, v);
    } while (!__atomic_compare_exchange_n(t, &old, nv, 1, RMA_ACC_RMW, __ATOMIC_RELAXED));
    if (rp != NULL)
        memcpy(rp, &old, 1);
}

/* Applies op (an RMA_OP_* allowed on the kind) to the naturally aligned element at t with
 * operand *o (unused for NO_OP); stores the previous value at r unless r is NULL. */
static inline void rma_acc_atomic(int kind, int op, void *t, const void *o, void *r, int relaxed)
{
#define RMA_ACC_CASE(K, k, T, W)                                                                   \
    case RMA_AK_##K: rma_acc_k_##k(op, t, o, r, relaxed); break;
    switch (kind) {
        RMA_ACC_INT_KINDS(RMA_ACC_CASE)
        RMA_ACC_FLT_KINDS(RMA_ACC_CASE)
    default: rma_acc_k_bool(op, t, o, r, relaxed); break;
    }
#undef RMA_ACC_CASE
}

/* Compare-and-swap of the naturally aligned `size`-byte element at t: the previous value
 * goes to r; *o is stored when the previous value equals *c. */
static inline void rma_acc_cas(unsigned size, void *t, const void *o, const void *c, void *r)
{
#define RMA_ACC_CAS(U)                                                                             \
    do {                                                                                           \
        U ov, cv;                                                                                  \
        memcpy(&ov, o, sizeof(U));                                                                 \
        memcpy(&cv, c, sizeof(U));                                                                 \
        __atomic_compare_exchange_n((U *)t, &cv, ov, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);       \
        memcpy(r, &cv, sizeof(U));                                                                 \
    } while (0)
    switch (size) {
    case 1: RMA_ACC_CAS(uint8_t); break;
    case 2: RMA_ACC_CAS(uint16_t); break;
    case 4: RMA_ACC_CAS(uint32_t); break;
    default: RMA_ACC_CAS(uint64_t); break;
    }
#undef RMA_ACC_CAS
}

/* accumulate_ordering=none (the only value starting with 'n'): plain loads and stores. */
static inline int rma_acc_relaxed(const rma_win_t *win)
{
    return win->info.accumulate_ordering[0] == 'n';
}

/* ------------------------------------------------------------------ stripes */

/* The lock word of stripe s (RMA_ACC_NLOCKS per window, each on a cache line of its own). */
static inline _Atomic uint32_t *rma_acc_stripe_word(rma_win_t *win, unsigned s)
{
    return (_Atomic uint32_t *)((char *)win->ctl + win->ctl->acc_off + (size_t)s * RMA_CACHE_LINE);
}

/* Bytes of target memory one stripe covers (its span): four cache lines. A call takes one
 * stripe per span it touches (a 4 KiB call 16, not 64), at the price of serializing
 * multi-element calls on disjoint lines of one span (doc/atomicity.md §3). */
#define RMA_ACC_SPAN_SHIFT 8
#define RMA_ACC_SPAN       (1u << RMA_ACC_SPAN_SHIFT)

/* Stripe of the element whose first byte is `key` bytes into target `trank`'s window (its
 * own address for dynamic windows): one stripe per span, ranks spread apart. */
static inline unsigned rma_acc_stripe_of(int trank, uint64_t key)
{
    return (unsigned)((key >> RMA_ACC_SPAN_SHIFT) + (uint64_t)trank * 97u) & (RMA_ACC_NLOCKS - 1u);
}

/* A stripe word: 0 when free, the holder's rank + 1 while held (RMA_STRIPE_HELD), and
 * RMA_STRIPE_SEEN from the first one-element call on its span on. A call on several
 * elements holds their stripes while it runs; a one-element CPU atomic takes no stripe but
 * must not land inside such a call (doc/atomicity.md), so it goes only when its stripe is
 * free and marked: a holder that took the stripe unmarked knows that no one-element call
 * can touch those lines while it holds it, and updates them with plain loads and stores. */
#define RMA_STRIPE_SEEN 0x80000000u
#define RMA_STRIPE_HELD 0x7fffffffu

/* 1 when a one-element CPU atomic on the element at `key` may go: the stripe is free and
 * marked. The load is of a line that only stripe holders and markers write. */
static inline int rma_acc_stripe_clear(rma_win_t *win, int trank, uint64_t key)
{
    return atomic_load_explicit(rma_acc_stripe_word(win, rma_acc_stripe_of(trank, key)),
                                memory_order_seq_cst) == RMA_STRIPE_SEEN;
}

/* Waits (backing off) until the element's stripe is free, and marks it: the slow path's
 * one-element atomic (CPU or network). */
void rma_acc_stripe_wait(rma_win_t *win, int trank, uint64_t key);

/* ------------------------------------------------------------------ fast paths */

/* The type entry and mapped, aligned target address of one predefined element when the
 * CPU-atomic fast path applies (op allowed and atomic for the type, access epoch open,
 * window atomic, target mapped and in range); NULL when the general path must decide. */
static inline char *rma_acc_fast_target(rma_win_t *win, MPI_Datatype dt, int op, int trank,
                                        MPI_Aint tdisp, const rma_acc_type_t **ty_p)
{
    unsigned h = (unsigned)dt;
    const rma_acc_type_t *ty = &rma_acc_types[h & 0xff];
    rma_target_t *tg;
    char *t;

    if (rma_unlikely((unsigned)trank >= (unsigned)win->nranks ||
                     (win->acc_mode != RMA_ACC_MODE_ATOMIC && win->acc_mode != RMA_ACC_MODE_NET) ||
                     ty->handle != dt || ty->kind == RMA_AK_LOCKED ||
                     (unsigned)op >= RMA_OP_COUNT || !((rma_acc_type_ops[h & 0xff] >> op) & 1)))
        return NULL;
    tg = &win->targets[trank];
    if (rma_unlikely(!(win->all_access | tg->access)))
        return NULL;
    t = rma_direct_addr(tg, tdisp, ty->size);
    if (rma_unlikely(t == NULL || ((uintptr_t)t & (ty->size - 1u)) != 0 ||
                     !rma_acc_stripe_clear(win, trank, (uint64_t)tdisp * (uint64_t)tg->disp_unit)))
        return NULL;
    *ty_p = ty;
    return t;
}

/* MPI_Fetch_and_op: MPI_SUCCESS, or the error raised on the window by the general path. */
static inline int rma_fetch_and_op(rma_win_t *win, const void *origin, void *result,
                                   MPI_Datatype dt, int trank, MPI_Aint tdisp, MPI_Op op,
                                   const char *func)
{
    int opi = rma_acc_op_index(op);
    const rma_acc_type_t *ty;
    char *t = rma_acc_fast_target(win, dt, opi, trank, tdisp, &ty);

    if (rma_likely(t != NULL && result != NULL && (origin != NULL || opi == RMA_OP_NO_OP))) {
        win->ops_in_fence = 1;
        rma_acc_atomic(ty->kind, opi, t, origin, result, rma_acc_relaxed(win));
        return MPI_SUCCESS;
    }
    return rma_acc_slow(win, RMA_FOP, origin, 1, dt, result, 1, dt, NULL, trank, tdisp, 1, dt, op,
                        func);
}

/* MPI_Compare_and_swap: MPI_SUCCESS, or the error raised on the window by the general path. */
static inline int rma_compare_and_swap(rma_win_t *win, const void *origin, const void *compare,
                                       void *result, MPI_Datatype dt, int trank, MPI_Aint tdisp,
                                       const char *func)
{
    const rma_acc_type_t *ty;
    char *t = rma_acc_fast_target(win, dt, RMA_OP_REPLACE, trank, tdisp, &ty);

    if (rma_likely(t != NULL && ty->cas && origin != NULL && compare != NULL && result != NULL)) {
        win->ops_in_fence = 1;
        rma_acc_cas(ty->size, t, origin, compare, result);
        return MPI_SUCCESS;
    }
    return rma_acc_slow(win, RMA_CAS, origin, 1, dt, result, 1, dt, compare, trank, tdisp, 1, dt,
                        MPI_REPLACE, func);
}

/* MPI_Accumulate (kind RMA_ACC, result unused) and MPI_Get_accumulate (RMA_GACC): one
 * element inline, everything else in rma_acc_slow. MPI_SUCCESS or the error raised. */
static inline int rma_accumulate(rma_win_t *win, int kind, const void *origin, MPI_Aint ocount,
                                 MPI_Datatype otype, void *result, MPI_Aint rcount,
                                 MPI_Datatype rtype, int trank, MPI_Aint tdisp, MPI_Aint tcount,
                                 MPI_Datatype ttype, MPI_Op op, const char *func)
{
    int opi = rma_acc_op_index(op);

    if (rma_likely(tcount == 1 && ocount == 1 && otype == ttype && origin != NULL &&
                   (kind == RMA_ACC ? opi != RMA_OP_NO_OP
                                    : rcount == 1 && rtype == ttype && result != NULL))) {
        const rma_acc_type_t *ty;
        char *t = rma_acc_fast_target(win, ttype, opi, trank, tdisp, &ty);
        if (rma_likely(t != NULL)) {
            win->ops_in_fence = 1;
            rma_acc_atomic(ty->kind, opi, t, origin, kind == RMA_ACC ? NULL : result,
                           rma_acc_relaxed(win));
            return MPI_SUCCESS;
        }
    }
    return rma_acc_slow(win, kind, origin, ocount, otype, result, rcount, rtype, NULL, trank, tdisp,
                        tcount, ttype, op, func);
}

#endif
