/*
 * acc_errors - every error of the accumulate family under MPI_ERRORS_RETURN: the class
 * returned (MPI_Error_class) and that target memory is unchanged afterwards. Also checks
 * that MPI_PROC_NULL is a successful no-op and that a window handle that is not a window
 * gives MPI_ERR_WIN.
 */
#include "rmatest.h"

#define N 64

static void user_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)in, (void)inout, (void)len, (void)dt;
}

static int rank, nprocs;

/* Every erroneous call on window w towards target (in a passive epoch unless noted). */
static void errors_on(MPI_Win w, MPI_Aint base, int target, const char *what)
{
    int ibuf[N] = {0}, ires[N], one = 1, cmp = 0;
    double dbuf[N] = {0}, dres;
    MPI_Op uop;
    MPI_Datatype mixed, vec, big;
    MPI_Request req;
    int bl[2] = {1, 1};
    MPI_Aint dsp[2] = {0, 8};
    MPI_Datatype tys[2] = {MPI_INT, MPI_DOUBLE};

    MPI_Op_create(user_fn, 1, &uop);
    MPI_Type_create_struct(2, bl, dsp, tys, &mixed);
    MPI_Type_commit(&mixed);
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Type_contiguous(N + 1, MPI_INT, &big);
    MPI_Type_commit(&big);

    /* no epoch yet */
    MPI_ERRCLASS(MPI_Accumulate(&one, 1, MPI_INT, target, base, 1, MPI_INT, MPI_SUM, w),
                 MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Fetch_and_op(&one, ires, MPI_INT, target, base, MPI_SUM, w),
                 MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Compare_and_swap(&one, &cmp, ires, MPI_INT, target, base, w),
                 MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Get_accumulate(&one, 1, MPI_INT, ires, 1, MPI_INT, target, base, 1,
                                    MPI_INT, MPI_SUM, w), MPI_ERR_RMA_SYNC);

    /* request-based forms need a passive target epoch */
    MPI_OK(MPI_Win_fence(0, w));
    MPI_ERRCLASS(MPI_Raccumulate(&one, 1, MPI_INT, target, base, 1, MPI_INT, MPI_SUM, w, &req),
                 MPI_ERR_RMA_SYNC);
    MPI_ERRCLASS(MPI_Rget_accumulate(&one, 1, MPI_INT, ires, 1, MPI_INT, target, base, 1,
                                     MPI_INT, MPI_SUM, w, &req), MPI_ERR_RMA_SYNC);
    MPI_OK(MPI_Win_fence(0, w));

    MPI_OK(MPI_Win_lock_all(0, w));
    /* ops */
    MPI_ERRCLASS(MPI_Accumulate(&one, 1, MPI_INT, target, base, 1, MPI_INT, uop, w),
                 MPI_ERR_OP);
    MPI_ERRCLASS(MPI_Accumulate(&one, 1, MPI_INT, target, base, 1, MPI_INT, MPI_OP_NULL, w),
                 MPI_ERR_OP);
    MPI_ERRCLASS(MPI_Fetch_and_op(&one, ires, MPI_INT, target, base, uop, w), MPI_ERR_OP);
    MPI_ERRCLASS(MPI_Fetch_and_op(&one, ires, MPI_INT, target, base, MPI_OP_NULL, w),
                 MPI_ERR_OP);
    MPI_ERRCLASS(MPI_Accumulate(ibuf, 4, MPI_BYTE, target, base, 4, MPI_BYTE, MPI_SUM, w),
                 MPI_ERR_OP);
    MPI_ERRCLASS(MPI_Accumulate(dbuf, 1, MPI_DOUBLE, target, base, 1, MPI_DOUBLE, MPI_LAND, w),
                 MPI_ERR_OP);
    MPI_ERRCLASS(MPI_Accumulate(dbuf, 1, MPI_DOUBLE, target, base, 1, MPI_DOUBLE, MPI_BOR, w),
                 MPI_ERR_OP);
    MPI_ERRCLASS(MPI_Accumulate(ibuf, 1, MPI_INT, target, base, 1, MPI_INT, MPI_MAXLOC, w),
                 MPI_ERR_OP);
    MPI_ERRCLASS(MPI_Accumulate(ibuf, 1, MPI_2INT, target, base, 1, MPI_2INT, MPI_SUM, w),
                 MPI_ERR_OP);
    MPI_ERRCLASS(MPI_Accumulate(ibuf, 1, MPI_C_BOOL, target, base, 1, MPI_C_BOOL, MPI_SUM, w),
                 MPI_ERR_OP);
    /* MPI_CHAR arithmetic is an MPICH extension librma follows; MPI_WCHAR has none */
    MPI_ERRCLASS(MPI_Accumulate(ibuf, 1, MPI_WCHAR, target, base, 1, MPI_WCHAR, MPI_MAX, w),
                 MPI_ERR_OP);
    MPI_ERRCLASS(MPI_Accumulate(ibuf, 1, MPI_C_DOUBLE_COMPLEX, target, base, 1,
                                MPI_C_DOUBLE_COMPLEX, MPI_MAX, w), MPI_ERR_OP);
    MPI_ERRCLASS(MPI_Accumulate(&one, 1, MPI_INT, target, base, 1, MPI_INT, MPI_NO_OP, w),
                 MPI_ERR_OP);
    MPI_ERRCLASS(MPI_Fetch_and_op(dbuf, &dres, MPI_DOUBLE, target, base, MPI_BXOR, w),
                 MPI_ERR_OP);
    /* types */
    MPI_ERRCLASS(MPI_Accumulate(ibuf, 1, mixed, target, base, 1, mixed, MPI_SUM, w),
                 MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Accumulate(ibuf, 1, MPI_INT, target, base, 1, MPI_FLOAT, MPI_SUM, w),
                 MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Accumulate(ibuf, 1, MPI_INT, target, base, 1, MPI_UNSIGNED, MPI_REPLACE,
                                w), MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Get_accumulate(ibuf, 1, MPI_INT, &dres, 1, MPI_FLOAT, target, base, 1,
                                    MPI_INT, MPI_SUM, w), MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Fetch_and_op(ibuf, ires, vec, target, base, MPI_SUM, w), MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Compare_and_swap(&one, &cmp, ires, vec, target, base, w), MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Compare_and_swap(dbuf, dbuf, &dres, MPI_DOUBLE, target, base, w),
                 MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Compare_and_swap(ibuf, ibuf, ires, MPI_WCHAR, target, base, w),
                 MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Compare_and_swap(ibuf, ibuf, ires, MPI_PACKED, target, base, w),
                 MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Accumulate(ibuf, 1, MPI_DATATYPE_NULL, target, base, 1, MPI_INT, MPI_SUM,
                                w), MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Accumulate(ibuf, 1, MPI_INT, target, base, 1, MPI_DATATYPE_NULL, MPI_SUM,
                                w), MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Accumulate(ibuf, 2, MPI_INT, target, base, 3, MPI_INT, MPI_SUM, w),
                 MPI_ERR_TYPE);
    MPI_ERRCLASS(MPI_Get_accumulate(ibuf, 2, MPI_INT, ires, 3, MPI_INT, target, base, 2,
                                    MPI_INT, MPI_SUM, w), MPI_ERR_TYPE);
    /* counts, ranks, ranges, buffers, requests */
    MPI_ERRCLASS(MPI_Accumulate(ibuf, -1, MPI_INT, target, base, -1, MPI_INT, MPI_SUM, w),
                 MPI_ERR_COUNT);
    MPI_ERRCLASS(MPI_Accumulate(&one, 1, MPI_INT, nprocs, base, 1, MPI_INT, MPI_SUM, w),
                 MPI_ERR_RANK);
    MPI_ERRCLASS(MPI_Fetch_and_op(&one, ires, MPI_INT, -5, base, MPI_SUM, w), MPI_ERR_RANK);
    MPI_ERRCLASS(MPI_Accumulate(ibuf, 1, big, target, base, 1, big, MPI_SUM, w),
                 MPI_ERR_RMA_RANGE);
    MPI_ERRCLASS(MPI_Fetch_and_op(&one, ires, MPI_INT, target, base + N * sizeof(int),
                                  MPI_SUM, w), MPI_ERR_RMA_RANGE);
    MPI_ERRCLASS(MPI_Compare_and_swap(&one, &cmp, ires, MPI_INT, target, base - 4, w),
                 MPI_ERR_RMA_RANGE);
    MPI_ERRCLASS(MPI_Get_accumulate(&one, 1, MPI_INT, NULL, 1, MPI_INT, target, base, 1,
                                    MPI_INT, MPI_SUM, w), MPI_ERR_BUFFER);
    MPI_ERRCLASS(MPI_Rget_accumulate(&one, 1, MPI_INT, ires, 1, MPI_INT, target, base, 1,
                                     MPI_INT, MPI_SUM, w, NULL), MPI_ERR_ARG);
    /* zero-count operations and MPI_PROC_NULL: nothing happens, successfully */
    MPI_OK(MPI_Accumulate(ibuf, 0, MPI_INT, target, base, 0, MPI_INT, MPI_SUM, w));
    MPI_OK(MPI_Get_accumulate(ibuf, 0, MPI_DOUBLE, ires, 0, MPI_DOUBLE, target, base, 0,
                              MPI_DOUBLE, MPI_PROD, w));
    MPI_OK(MPI_Accumulate(ibuf, 0, MPI_BYTE, target, base, 0, MPI_BYTE, MPI_SUM, w));
    MPI_ERRCLASS(MPI_Accumulate(ibuf, 0, MPI_BYTE, target, base, 0, MPI_BYTE, uop, w),
                 MPI_ERR_OP);
    MPI_OK(MPI_Accumulate(&one, 1, MPI_INT, MPI_PROC_NULL, base, 1, MPI_INT, MPI_SUM, w));
    MPI_OK(MPI_Fetch_and_op(&one, ires, MPI_INT, MPI_PROC_NULL, base, MPI_SUM, w));
    MPI_OK(MPI_Compare_and_swap(&one, &cmp, ires, MPI_INT, MPI_PROC_NULL, base, w));
    MPI_OK(MPI_Win_unlock_all(w));
    (void)what;

    MPI_Op_free(&uop);
    MPI_Type_free(&mixed);
    MPI_Type_free(&vec);
    MPI_Type_free(&big);
}

static void check_unchanged(const int *mem, const char *what)
{
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += mem[i] != 1000 + i;
    CHECK(bad == 0, "%s: %d ints of the window changed after failed calls", what, bad);
}

int main(int argc, char **argv)
{
    int *mem, *dmem, right;
    MPI_Win w;
    MPI_Aint addr;

    rt_init(&argc, &argv);
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    right = (rank + 1) % nprocs;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* allocate window */
    MPI_OK(MPI_Win_allocate(N * sizeof(int), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w));
    MPI_OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    for (int i = 0; i < N; i++)
        mem[i] = 1000 + i;
    MPI_Barrier(MPI_COMM_WORLD);
    errors_on(w, 0, right, "allocate");
    MPI_Barrier(MPI_COMM_WORLD);
    check_unchanged(mem, "allocate");
    MPI_OK(MPI_Win_free(&w));

    /* dynamic window: the same calls at the attached region's address */
    dmem = malloc(N * sizeof(int));
    for (int i = 0; i < N; i++)
        dmem[i] = 1000 + i;
    MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    MPI_OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    MPI_OK(MPI_Win_attach(w, dmem, N * sizeof(int)));
    MPI_Get_address(dmem, &addr);
    {
        MPI_Aint *addrs = malloc(nprocs * sizeof(MPI_Aint));
        MPI_Allgather(&addr, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);
        errors_on(w, addrs[right], right, "dynamic");
        free(addrs);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    check_unchanged(dmem, "dynamic");
    MPI_OK(MPI_Win_detach(w, dmem));
    MPI_OK(MPI_Win_free(&w));
    free(dmem);

    /* not a window */
    {
        int one = 1, r;
        MPI_ERRCLASS(MPI_Fetch_and_op(&one, &r, MPI_INT, 0, 0, MPI_SUM, MPI_WIN_NULL),
                     MPI_ERR_WIN);
        MPI_ERRCLASS(MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, MPI_WIN_NULL),
                     MPI_ERR_WIN);
    }
    return rt_finish("acc_errors");
}
