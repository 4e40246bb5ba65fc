/*
 * acc_locked.c - element kernels for the predefined types that have no CPU atomic (acc.h's
 * RMA_AK_LOCKED): the MAXLOC/MINLOC pairs, long double, the complex types and MPI_LOGICAL.
 *
 * They compute what the host library's RMA leaves at the target, MPI_Reduce_local(o, t, n,
 * type, op): the target's element is the in-out operand, so ties, signed zeros and NaNs
 * come out as there (MPI_MAX and MPI_MIN keep the origin's value when the comparison fails,
 * MPI_MAXLOC and MPI_MINLOC the target's), as on every other path (acc.h's kernels, acc.c's
 * packed copies), and a long double's padding keeps the target's bytes. They call no MPI,
 * so the target's agent, a thread that never calls MPI (agent.h), applies off-node
 * accumulates with them. Types whose arithmetic the host library does in a format C does
 * not name (MPI_REAL16, MPI_COMPLEX32: _Float128 here) have none; their calls take the
 * origin-side path, where MPI_Reduce_local runs in the caller's thread (acc.c).
 */
#include <complex.h>
#include <float.h>
#include <stddef.h>
#include <string.h>

#include "mpid/rma/acc.h"

/* Fortran's .TRUE. as the host library writes it (rma_acc_locked_probe) */
static int flog_true = 1;

void rma_acc_locked_probe(void)
{
    int t = 1, u = 1;

    if (PMPI_Reduce_local(&t, &u, 1, MPI_LOGICAL, MPI_LAND) == MPI_SUCCESS && u != 0)
        flog_true = u;
}

/* MPICH's MPL_MIN / MPL_MAX, argument order included (it decides which NaN wins): a is the
 * in-out operand, b wins when the comparison fails */
#define LK_MIN(a, b) ((a) < (b) ? (a) : (b))
#define LK_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Bytes of a long double that hold its value (x87's 80 bits in 16 here); the rest is
 * padding, which stays as the target had it (MPI_Reduce_local's x87 stores leave its in-out
 * buffer's). */
#define LD_DATA (LDBL_MANT_DIG == 64 ? 10 : sizeof(long double))

/* Stores the size-byte result v at t; when it is made of long doubles (ld), their data
 * bytes only. */
static void lk_put(char *t, const void *v, size_t size, int ld)
{
    if (!ld || LD_DATA == sizeof(long double)) {
        memcpy(t, v, size);
        return;
    }
    for (size_t k = 0; k < size; k += sizeof(long double))
        memcpy(t + k, (const char *)v + k, LD_DATA);
}

/* One pair type: a = t's element (in-out), b = o's; the standard's MAXLOC/MINLOC with the
 * lower index on a tie, b taken only when its value compares greater (less): MPICH's.
 * Only the value and the index are written back: a hole keeps its bytes. */
#define LK_PAIR(NAME, V, L, LD)                                                                    \
    static int NAME(int op, char *t, const char *o, size_t n, size_t es)                           \
    {                                                                                              \
        typedef struct {                                                                           \
            V value;                                                                               \
            L loc;                                                                                 \
        } pair_t;                                                                                  \
        if (op != RMA_OP_MAXLOC && op != RMA_OP_MINLOC)                                            \
            return -1;                                                                             \
        for (size_t i = 0; i < n; i++, t += es, o += es) {                                         \
            pair_t a, b;                                                                           \
            memcpy(&a.value, t, sizeof(a.value));                                                  \
            memcpy(&a.loc, t + offsetof(pair_t, loc), sizeof(a.loc));                              \
            memcpy(&b.value, o, sizeof(b.value));                                                  \
            memcpy(&b.loc, o + offsetof(pair_t, loc), sizeof(b.loc));                              \
            if (op == RMA_OP_MAXLOC ? b.value > a.value : b.value < a.value) {                     \
                a.value = b.value;                                                                 \
                a.loc = b.loc;                                                                     \
            } else if (b.value == a.value) {                                                       \
                a.loc = LK_MIN(a.loc, b.loc);                                                      \
            }                                                                                      \
            lk_put(t, &a.value, sizeof(a.value), LD);                                              \
            memcpy(t + offsetof(pair_t, loc), &a.loc, sizeof(a.loc));                              \
        }                                                                                          \
        return 0;                                                                                  \
    }

LK_PAIR(lk_float_int, float, int, 0)
LK_PAIR(lk_double_int, double, int, 0)
LK_PAIR(lk_long_int, long, int, 0)
LK_PAIR(lk_2int, int, int, 0)
LK_PAIR(lk_short_int, short, int, 0)
LK_PAIR(lk_long_double_int, long double, int, 1)
LK_PAIR(lk_2real, float, float, 0)
LK_PAIR(lk_2double, double, double, 0)

/* A scalar or C complex type T: a = a op b, a t's element (in-out), b o's. */
#define LK_LOOP(T, LD, EXPR)                                                                       \
    for (size_t i = 0; i < n; i++, t += es, o += es) {                                             \
        T a, b;                                                                                    \
        memcpy(&a, t, sizeof(T));                                                                  \
        memcpy(&b, o, sizeof(T));                                                                  \
        a = (T)(EXPR);                                                                             \
        lk_put(t, &a, sizeof(T), LD);                                                              \
    }

static int lk_long_double(int op, char *t, const char *o, size_t n, size_t es)
{
    switch (op) {
    case RMA_OP_SUM: LK_LOOP(long double, 1, a + b) break;
    case RMA_OP_PROD: LK_LOOP(long double, 1, a *b) break;
    case RMA_OP_MAX: LK_LOOP(long double, 1, LK_MAX(a, b)) break;
    case RMA_OP_MIN: LK_LOOP(long double, 1, LK_MIN(a, b)) break;
    case RMA_OP_LXOR: LK_LOOP(long double, 1, (a != 0) != (b != 0)) break;
    default: return -1;
    }
    return 0;
}

/* C and C++ complex types: C's complex arithmetic (Annex G for infinities and NaNs) */
#define LK_CCOMPLEX(NAME, T, LD)                                                                   \
    static int NAME(int op, char *t, const char *o, size_t n, size_t es)                           \
    {                                                                                              \
        switch (op) {                                                                              \
        case RMA_OP_SUM: LK_LOOP(T, LD, a + b) break;                                              \
        case RMA_OP_PROD: LK_LOOP(T, LD, a *b) break;                                              \
        default: return -1;                                                                        \
        }                                                                                          \
        return 0;                                                                                  \
    }

LK_CCOMPLEX(lk_float_complex, float _Complex, 0)
LK_CCOMPLEX(lk_double_complex, double _Complex, 0)
LK_CCOMPLEX(lk_long_double_complex, long double _Complex, 1)

/* Fortran complex types: pairs of reals, the product by the textbook formula */
#define LK_FCOMPLEX(NAME, F)                                                                       \
    static int NAME(int op, char *t, const char *o, size_t n, size_t es)                           \
    {                                                                                              \
        if (op != RMA_OP_SUM && op != RMA_OP_PROD)                                                 \
            return -1;                                                                             \
        for (size_t i = 0; i < n; i++, t += es, o += es) {                                         \
            F a[2], b[2], c[2];                                                                    \
            memcpy(a, t, sizeof(a));                                                               \
            memcpy(b, o, sizeof(b));                                                               \
            c[0] = a[0];                                                                           \
            c[1] = a[1];                                                                           \
            if (op == RMA_OP_SUM) {                                                                \
                a[0] = c[0] + b[0];                                                                \
                a[1] = c[1] + b[1];                                                                \
            } else {                                                                               \
                a[0] = c[0] * b[0] - c[1] * b[1];                                                  \
                a[1] = c[1] * b[0] + c[0] * b[1];                                                  \
            }                                                                                      \
            memcpy(t, a, sizeof(a));                                                               \
        }                                                                                          \
        return 0;                                                                                  \
    }

LK_FCOMPLEX(lk_fcomplex, float)
LK_FCOMPLEX(lk_fdouble_complex, double)

static int lk_logical(int op, char *t, const char *o, size_t n, size_t es)
{
    if (op != RMA_OP_LAND && op != RMA_OP_LOR && op != RMA_OP_LXOR)
        return -1;
    for (size_t i = 0; i < n; i++, t += es, o += es) {
        MPI_Fint a, b;
        memcpy(&a, t, sizeof(a));
        memcpy(&b, o, sizeof(b));
        a = RMA_ACC_LOGIC(op, a, b) ? flog_true : 0;
        memcpy(t, &a, sizeof(a));
    }
    return 0;
}

typedef struct {
    short value;
    int loc;
} short_int_t;

typedef int (*lk_fn)(int op, char *t, const char *o, size_t n, size_t es);

#define LK_OPB(x) (1u << RMA_OP_##x)
#define LK_LOC    (LK_OPB(MAXLOC) | LK_OPB(MINLOC))
#define LK_ARITH  (LK_OPB(SUM) | LK_OPB(PROD))

/* The kernel of a type and the ops it computes, or NULL. */
static lk_fn lk_kernel(MPI_Datatype basic, unsigned *ops)
{
    /* MPI_Datatype is an int in the MPICH ABI, but its handles are not constant
     * expressions that a switch could use */
    static const struct {
        MPI_Datatype type;
        lk_fn fn;
        unsigned ops;
    } table[] = {
        {MPI_FLOAT_INT, lk_float_int, LK_LOC},
        {MPI_DOUBLE_INT, lk_double_int, LK_LOC},
        {MPI_LONG_INT, lk_long_int, LK_LOC},
        {MPI_2INT, lk_2int, LK_LOC},
        {MPI_SHORT_INT, lk_short_int, LK_LOC},
        {MPI_LONG_DOUBLE_INT, lk_long_double_int, LK_LOC},
        {MPI_2INTEGER, lk_2int, LK_LOC},
        {MPI_2REAL, lk_2real, LK_LOC},
        {MPI_2DOUBLE_PRECISION, lk_2double, LK_LOC},
        {MPI_LONG_DOUBLE, lk_long_double, LK_ARITH | LK_OPB(MAX) | LK_OPB(MIN) | LK_OPB(LXOR)},
        {MPI_C_FLOAT_COMPLEX, lk_float_complex, LK_ARITH},
        {MPI_C_DOUBLE_COMPLEX, lk_double_complex, LK_ARITH},
        {MPI_C_LONG_DOUBLE_COMPLEX, lk_long_double_complex, LK_ARITH},
        {MPI_CXX_FLOAT_COMPLEX, lk_float_complex, LK_ARITH},
        {MPI_CXX_DOUBLE_COMPLEX, lk_double_complex, LK_ARITH},
        {MPI_CXX_LONG_DOUBLE_COMPLEX, lk_long_double_complex, LK_ARITH},
        {MPI_COMPLEX, lk_fcomplex, LK_ARITH},
        {MPI_COMPLEX8, lk_fcomplex, LK_ARITH},
        {MPI_DOUBLE_COMPLEX, lk_fdouble_complex, LK_ARITH},
        {MPI_COMPLEX16, lk_fdouble_complex, LK_ARITH},
        {MPI_LOGICAL, lk_logical, LK_OPB(LAND) | LK_OPB(LOR) | LK_OPB(LXOR)},
    };

    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (table[i].type == basic) {
            *ops = table[i].ops;
            return table[i].fn;
        }
    return NULL;
}

int rma_acc_locked_known(MPI_Datatype basic, int op)
{
    unsigned ops = 0;

    if (op == RMA_OP_REPLACE || op == RMA_OP_NO_OP)
        return 1;
    return lk_kernel(basic, &ops) != NULL && (ops >> op & 1) && rma_acc_op_allowed(basic, op);
}

int rma_acc_locked_apply(MPI_Datatype basic, int op, char *t, const char *o, size_t n, size_t es)
{
    unsigned ops = 0;
    lk_fn fn;

    if (op == RMA_OP_NO_OP)
        return 0;
    if (op == RMA_OP_REPLACE && basic == MPI_SHORT_INT) { /* around the hole */
        for (size_t i = 0; i < n; i++, t += es, o += es) {
            memcpy(t, o, sizeof(short));
            memcpy(t + offsetof(short_int_t, loc), o + offsetof(short_int_t, loc), sizeof(int));
        }
        return 0;
    }
    if (op == RMA_OP_REPLACE) {
        memcpy(t, o, n * es);
        return 0;
    }
    fn = lk_kernel(basic, &ops);
    return fn != NULL && (ops >> op & 1) ? fn(op, t, o, n, es) : -1;
}
