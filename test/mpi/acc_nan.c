/*
 * acc_nan - MPI_MAX, MPI_MIN, MPI_MAXLOC and MPI_MINLOC on NaNs, signed zeros and ties give
 * the same element whichever path librma takes: the target's element is the in-out operand
 * (what MPICH's RMA computes, MPI_Reduce_local(origin, target)), on CPU atomics, packed
 * copies of memory reached by cross-memory attach, the kernels of types without an atomic
 * (long double, the pairs) and the target's agent. The standard leaves these results open;
 * a window's element must not depend on the origin's node, the flavor or the moment.
 *
 * Each rank accumulates into its right neighbour's window, one element per case and then
 * all cases in one call, with MPI_Accumulate and MPI_Get_accumulate, for every flavor, and
 * checks its own window against MPI_Reduce_local(origin, target) byte for byte (a long
 * double's data bytes, a pair's value and index).
 */
#include "rmatest.h"

#include <float.h>
#include <math.h>

#define NCASE 4

typedef struct {
    float v;
    int loc;
} float_int_t;
typedef struct {
    double v;
    int loc;
} double_int_t;

enum { T_FLOAT, T_DOUBLE, T_LDOUBLE, T_FLOAT_INT, T_DOUBLE_INT, NTYPES };

static const char *tname[NTYPES] = {"FLOAT", "DOUBLE", "LONG_DOUBLE", "FLOAT_INT", "DOUBLE_INT"};
static MPI_Datatype tdt[NTYPES];
static const size_t tsize[NTYPES] = {sizeof(float), sizeof(double), sizeof(long double),
                                     sizeof(float_int_t), sizeof(double_int_t)};

/* Data bytes of an element: x87's 10 of a long double, a pair's value and index. */
static int same_data(int ty, const void *a, const void *b)
{
    switch (ty) {
    case T_LDOUBLE: return memcmp(a, b, LDBL_MANT_DIG == 64 ? 10 : sizeof(long double)) == 0;
    case T_FLOAT_INT:
        return memcmp(a, b, sizeof(float)) == 0 &&
               ((const float_int_t *)a)->loc == ((const float_int_t *)b)->loc;
    case T_DOUBLE_INT:
        return memcmp(a, b, sizeof(double)) == 0 &&
               ((const double_int_t *)a)->loc == ((const double_int_t *)b)->loc;
    default: return memcmp(a, b, tsize[ty]) == 0;
    }
}

/* Case c of type ty: the target's value (who 0) or the origin's (who 1). */
static void value(int ty, int c, int who, void *out)
{
    static const double pairs[NCASE][2] = {{NAN, 1.0}, {1.0, NAN}, {-0.0, 0.0}, {0.0, -0.0}};
    double d = pairs[c][who];
    int loc = who == 0 ? 7 : 3; /* ties: the lower index */

    memset(out, 0, tsize[ty]);
    switch (ty) {
    case T_FLOAT: *(float *)out = (float)d; break;
    case T_DOUBLE: *(double *)out = d; break;
    case T_LDOUBLE: *(long double *)out = (long double)d; break;
    case T_FLOAT_INT: ((float_int_t *)out)->v = (float)d, ((float_int_t *)out)->loc = loc; break;
    case T_DOUBLE_INT: ((double_int_t *)out)->v = d, ((double_int_t *)out)->loc = loc; break;
    }
}

enum { F_CREATE, F_ALLOCATE, F_DYNAMIC, NFLAVORS };
static const char *fname[NFLAVORS] = {"create", "allocate", "dynamic"};

typedef struct {
    MPI_Win win;
    char *base;    /* this rank's memory */
    MPI_Aint disp; /* the right neighbour's displacement of its memory */
} win_t;

static void win_open(win_t *w, int flavor, size_t bytes, int left, int right)
{
    MPI_Aint mine = 0;

    w->disp = 0;
    if (flavor == F_ALLOCATE) {
        MPI_OK(
            MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->base, &w->win));
        return;
    }
    w->base = calloc(1, bytes);
    if (flavor == F_CREATE) {
        MPI_OK(MPI_Win_create(w->base, (MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        return;
    }
    MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
    MPI_OK(MPI_Win_attach(w->win, w->base, (MPI_Aint)bytes));
    MPI_Get_address(w->base, &mine);
    MPI_Sendrecv(&mine, 1, MPI_AINT, left, 0, &w->disp, 1, MPI_AINT, right, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
}

static void win_close(win_t *w, int flavor)
{
    if (flavor == F_DYNAMIC)
        MPI_OK(MPI_Win_detach(w->win, w->base));
    MPI_OK(MPI_Win_free(&w->win));
    if (flavor != F_ALLOCATE)
        free(w->base);
}

static void run(int flavor, int rank, int nprocs)
{
    MPI_Op ops[2][2] = {{MPI_MAX, MPI_MIN}, {MPI_MAXLOC, MPI_MINLOC}};
    const char *opn[2][2] = {{"MAX", "MIN"}, {"MAXLOC", "MINLOC"}};
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    /* per type, op and case: one slot for a one-element call, one in a call of NCASE */
    size_t slot = 32, nslots = NTYPES * 2 * NCASE * 2;
    win_t w;

    win_open(&w, flavor, slot * nslots, left, right);
    for (int ty = 0; ty < NTYPES; ty++)
        for (int o = 0; o < 2; o++)
            for (int c = 0; c < NCASE; c++)
                for (int k = 0; k < 2; k++)
                    value(ty, c, 0, w.base + slot * (((ty * 2 + o) * NCASE + c) * 2 + k));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock_all(0, w.win));
    for (int ty = 0; ty < NTYPES; ty++)
        for (int o = 0; o < 2; o++) {
            MPI_Op op = ops[ty >= T_FLOAT_INT][o];
            char org[NCASE][32], res[NCASE][32];
            MPI_Datatype strided;
            for (int c = 0; c < NCASE; c++) {
                MPI_Aint at = w.disp + (MPI_Aint)(slot * (((ty * 2 + o) * NCASE + c) * 2));
                value(ty, c, 1, org[c]);
                if (c % 2 == 0)
                    MPI_OK(MPI_Accumulate(org[c], 1, tdt[ty], right, at, 1, tdt[ty], op, w.win));
                else
                    MPI_OK(MPI_Get_accumulate(org[c], 1, tdt[ty], res[c], 1, tdt[ty], right, at, 1,
                                              tdt[ty], op, w.win));
            }
            /* the NCASE cases in one call, every other slot of the type and op */
            MPI_Type_create_resized(tdt[ty], 0, (MPI_Aint)(2 * slot), &strided);
            MPI_Type_commit(&strided);
            char packed[NCASE * sizeof(long double) * 2];
            for (int c = 0; c < NCASE; c++)
                memcpy(packed + c * tsize[ty], org[c], tsize[ty]);
            MPI_Aint at = w.disp + (MPI_Aint)(slot * (((ty * 2 + o) * NCASE) * 2 + 1));
            MPI_OK(MPI_Accumulate(packed, NCASE, tdt[ty], right, at, NCASE, strided, op, w.win));
            MPI_Type_free(&strided);
            MPI_OK(MPI_Win_flush(right, w.win));
            for (int c = 1; c < NCASE; c += 2) {
                char old[32];
                value(ty, c, 0, old);
                CHECK(same_data(ty, res[c], old), "%s %s %s case %d: fetched the wrong old value",
                      fname[flavor], tname[ty], opn[ty >= T_FLOAT_INT][o], c);
            }
        }
    MPI_OK(MPI_Win_unlock_all(w.win));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int ty = 0; ty < NTYPES; ty++)
        for (int o = 0; o < 2; o++)
            for (int c = 0; c < NCASE; c++) {
                char t[32], org[32];
                value(ty, c, 0, t);
                value(ty, c, 1, org);
                MPI_OK(MPI_Reduce_local(org, t, 1, tdt[ty], ops[ty >= T_FLOAT_INT][o]));
                for (int k = 0; k < 2; k++) {
                    const char *got = w.base + slot * (((ty * 2 + o) * NCASE + c) * 2 + k);
                    CHECK(same_data(ty, got, t),
                          "%s %s %s case %d (%s call, from rank %d): not what MPI_Reduce_local "
                          "(origin, target) gives",
                          fname[flavor], tname[ty], opn[ty >= T_FLOAT_INT][o], c,
                          k ? "one" : "a four-element", left);
                }
            }
    win_close(&w, flavor);
}

int main(int argc, char **argv)
{
    int rank, nprocs;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    tdt[T_FLOAT] = MPI_FLOAT;
    tdt[T_DOUBLE] = MPI_DOUBLE;
    tdt[T_LDOUBLE] = MPI_LONG_DOUBLE;
    tdt[T_FLOAT_INT] = MPI_FLOAT_INT;
    tdt[T_DOUBLE_INT] = MPI_DOUBLE_INT;
    for (int f = 0; f < NFLAVORS; f++)
        run(f, rank, nprocs);
    return rt_finish("acc_nan");
}
