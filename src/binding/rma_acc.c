/*
 * rma_acc.c - the accumulate family's entry points: MPI_Accumulate, MPI_Get_accumulate,
 * MPI_Fetch_and_op, MPI_Compare_and_swap, MPI_Raccumulate, MPI_Rget_accumulate and the
 * large-count forms. Fast paths are inline in mpid/rma/acc.h, the rest is in acc.c.
 */
#include "binding/binding.h"
#include "mpid/rma/acc.h"

int MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                   int target_rank, MPI_Aint target_disp, int target_count,
                   MPI_Datatype target_datatype, MPI_Op op, MPI_Win handle)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Accumulate");
    return rma_accumulate(win, RMA_ACC, origin_addr, origin_count, origin_datatype, NULL, 0,
                          MPI_DATATYPE_NULL, target_rank, target_disp, target_count,
                          target_datatype, op, "MPI_Accumulate");
}
RMA_PMPI(Accumulate);

int MPI_Accumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                     int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                     MPI_Datatype target_datatype, MPI_Op op, MPI_Win handle)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Accumulate_c");
    return rma_accumulate(win, RMA_ACC, origin_addr, (MPI_Aint)origin_count, origin_datatype, NULL,
                          0, MPI_DATATYPE_NULL, target_rank, target_disp, (MPI_Aint)target_count,
                          target_datatype, op, "MPI_Accumulate_c");
}
RMA_PMPI(Accumulate_c);

int MPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                       void *result_addr, int result_count, MPI_Datatype result_datatype,
                       int target_rank, MPI_Aint target_disp, int target_count,
                       MPI_Datatype target_datatype, MPI_Op op, MPI_Win handle)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Get_accumulate");
    return rma_accumulate(win, RMA_GACC, origin_addr, origin_count, origin_datatype, result_addr,
                          result_count, result_datatype, target_rank, target_disp, target_count,
                          target_datatype, op, "MPI_Get_accumulate");
}
RMA_PMPI(Get_accumulate);

int MPI_Get_accumulate_c(const void *origin_addr, MPI_Count origin_count,
                         MPI_Datatype origin_datatype, void *result_addr, MPI_Count result_count,
                         MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                         MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op,
                         MPI_Win handle)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Get_accumulate_c");
    return rma_accumulate(win, RMA_GACC, origin_addr, (MPI_Aint)origin_count, origin_datatype,
                          result_addr, (MPI_Aint)result_count, result_datatype, target_rank,
                          target_disp, (MPI_Aint)target_count, target_datatype, op,
                          "MPI_Get_accumulate_c");
}
RMA_PMPI(Get_accumulate_c);

int MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype,
                     int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win handle)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Fetch_and_op");
    return rma_fetch_and_op(win, origin_addr, result_addr, datatype, target_rank, target_disp, op,
                            "MPI_Fetch_and_op");
}
RMA_PMPI(Fetch_and_op);

int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                         MPI_Datatype datatype, int target_rank, MPI_Aint target_disp,
                         MPI_Win handle)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Compare_and_swap");
    return rma_compare_and_swap(win, origin_addr, compare_addr, result_addr, datatype, target_rank,
                                target_disp, "MPI_Compare_and_swap");
}
RMA_PMPI(Compare_and_swap);

/* Request-based forms are valid only in passive target epochs (MPI-3.1 11.3). Operations
 * to same-node targets have completed when the call returns; network atomics to off-node
 * ones complete when MPI_Test/Wait see their flush over. */
static int request_acc(rma_win_t *win, int kind, const void *origin, MPI_Aint ocount,
                       MPI_Datatype otype, void *result, MPI_Aint rcount, MPI_Datatype rtype,
                       int trank, MPI_Aint tdisp, MPI_Aint tcount, MPI_Datatype ttype, MPI_Op op,
                       MPI_Request *req, const char *func)
{
    int rc = rma_request_check(win, req, trank, func);

    if (rc == MPI_SUCCESS)
        rc = rma_accumulate(win, kind, origin, ocount, otype, result, rcount, rtype, trank, tdisp,
                            tcount, ttype, op, func);
    if (rc == MPI_SUCCESS)
        rc = rma_request_done(win, trank, req, NULL, func);
    return rc;
}

int MPI_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                    int target_rank, MPI_Aint target_disp, int target_count,
                    MPI_Datatype target_datatype, MPI_Op op, MPI_Win handle, MPI_Request *request)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Raccumulate");
    return request_acc(win, RMA_ACC, origin_addr, origin_count, origin_datatype, NULL, 0,
                       MPI_DATATYPE_NULL, target_rank, target_disp, target_count, target_datatype,
                       op, request, "MPI_Raccumulate");
}
RMA_PMPI(Raccumulate);

int MPI_Raccumulate_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
                      int target_rank, MPI_Aint target_disp, MPI_Count target_count,
                      MPI_Datatype target_datatype, MPI_Op op, MPI_Win handle, MPI_Request *request)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Raccumulate_c");
    return request_acc(win, RMA_ACC, origin_addr, (MPI_Aint)origin_count, origin_datatype, NULL, 0,
                       MPI_DATATYPE_NULL, target_rank, target_disp, (MPI_Aint)target_count,
                       target_datatype, op, request, "MPI_Raccumulate_c");
}
RMA_PMPI(Raccumulate_c);

int MPI_Rget_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                        void *result_addr, int result_count, MPI_Datatype result_datatype,
                        int target_rank, MPI_Aint target_disp, int target_count,
                        MPI_Datatype target_datatype, MPI_Op op, MPI_Win handle,
                        MPI_Request *request)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Rget_accumulate");
    return request_acc(win, RMA_GACC, origin_addr, origin_count, origin_datatype, result_addr,
                       result_count, result_datatype, target_rank, target_disp, target_count,
                       target_datatype, op, request, "MPI_Rget_accumulate");
}
RMA_PMPI(Rget_accumulate);

int MPI_Rget_accumulate_c(const void *origin_addr, MPI_Count origin_count,
                          MPI_Datatype origin_datatype, void *result_addr, MPI_Count result_count,
                          MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                          MPI_Count target_count, MPI_Datatype target_datatype, MPI_Op op,
                          MPI_Win handle, MPI_Request *request)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Rget_accumulate_c");
    return request_acc(win, RMA_GACC, origin_addr, (MPI_Aint)origin_count, origin_datatype,
                       result_addr, (MPI_Aint)result_count, result_datatype, target_rank,
                       target_disp, (MPI_Aint)target_count, target_datatype, op, request,
                       "MPI_Rget_accumulate_c");
}
RMA_PMPI(Rget_accumulate_c);
