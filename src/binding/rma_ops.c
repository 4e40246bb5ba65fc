/*
 * rma_ops.c - MPI_Put, MPI_Get and their request-based and large-count forms, and
 * MPI_Request_get_status, which drives the requests of all of them.
 */
#include "binding/binding.h"
#include "binding/next.h"
#include "mpid/rma/rma.h"
#include "sync/sync.h"

int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
            int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
            MPI_Win handle)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Put");
    return rma_xfer(win, RMA_PUT, (void *)origin_addr, origin_count, origin_datatype, target_rank,
                    target_disp, target_count, target_datatype, "MPI_Put");
}
RMA_PMPI(Put);

int MPI_Put_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
              int target_rank, MPI_Aint target_disp, MPI_Count target_count,
              MPI_Datatype target_datatype, MPI_Win handle)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Put_c");
    return rma_xfer(win, RMA_PUT, (void *)origin_addr, (MPI_Aint)origin_count, origin_datatype,
                    target_rank, target_disp, (MPI_Aint)target_count, target_datatype, "MPI_Put_c");
}
RMA_PMPI(Put_c);

int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win handle)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Get");
    return rma_xfer(win, RMA_GET, origin_addr, origin_count, origin_datatype, target_rank,
                    target_disp, target_count, target_datatype, "MPI_Get");
}
RMA_PMPI(Get);

int MPI_Get_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
              int target_rank, MPI_Aint target_disp, MPI_Count target_count,
              MPI_Datatype target_datatype, MPI_Win handle)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Get_c");
    return rma_xfer(win, RMA_GET, origin_addr, (MPI_Aint)origin_count, origin_datatype, target_rank,
                    target_disp, (MPI_Aint)target_count, target_datatype, "MPI_Get_c");
}
RMA_PMPI(Get_c);

/* Request-based operations are valid only in passive target epochs (MPI-3.1 11.3). */
static int request_op(rma_win_t *win, int kind, void *origin, MPI_Aint ocount, MPI_Datatype otype,
                      int trank, MPI_Aint tdisp, MPI_Aint tcount, MPI_Datatype ttype,
                      MPI_Request *req, const char *func)
{
    int rc = rma_request_check(win, req, trank, func);
    rma_xfer_job_t *job = NULL;

    if (rc != MPI_SUCCESS)
        return rc;
    /* same node: the inline path; off node, a large copy may be the agent's (rma.h) */
    if ((unsigned)trank < (unsigned)win->nranks && !win->targets[trank].local)
        rc =
            rma_xfer_req(win, kind, origin, ocount, otype, trank, tdisp, tcount, ttype, func, &job);
    else
        rc = rma_xfer(win, kind, origin, ocount, otype, trank, tdisp, tcount, ttype, func);
    if (rc == MPI_SUCCESS) /* off-node transfers complete when MPI_Test/Wait see them done */
        rc = rma_request_done(win, trank, req, job, func);
    return rc;
}

int MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
             int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
             MPI_Win handle, MPI_Request *request)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Rput");
    return request_op(win, RMA_PUT, (void *)origin_addr, origin_count, origin_datatype, target_rank,
                      target_disp, target_count, target_datatype, request, "MPI_Rput");
}
RMA_PMPI(Rput);

int MPI_Rput_c(const void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
               int target_rank, MPI_Aint target_disp, MPI_Count target_count,
               MPI_Datatype target_datatype, MPI_Win handle, MPI_Request *request)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Rput_c");
    return request_op(win, RMA_PUT, (void *)origin_addr, (MPI_Aint)origin_count, origin_datatype,
                      target_rank, target_disp, (MPI_Aint)target_count, target_datatype, request,
                      "MPI_Rput_c");
}
RMA_PMPI(Rput_c);

int MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
             MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win handle,
             MPI_Request *request)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Rget");
    return request_op(win, RMA_GET, origin_addr, origin_count, origin_datatype, target_rank,
                      target_disp, target_count, target_datatype, request, "MPI_Rget");
}
RMA_PMPI(Rget);

int MPI_Rget_c(void *origin_addr, MPI_Count origin_count, MPI_Datatype origin_datatype,
               int target_rank, MPI_Aint target_disp, MPI_Count target_count,
               MPI_Datatype target_datatype, MPI_Win handle, MPI_Request *request)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Rget_c");
    return request_op(win, RMA_GET, origin_addr, (MPI_Aint)origin_count, origin_datatype,
                      target_rank, target_disp, (MPI_Aint)target_count, target_datatype, request,
                      "MPI_Rget_c");
}
RMA_PMPI(Rget_c);

/* A request of MPI_Rput or MPI_Rget (or the accumulates) to an off-node target completes
 * only as librma drives it; MPICH's MPI_Request_get_status does not ask (request.c). */
int MPI_Request_get_status(MPI_Request req, int *flag, MPI_Status *status)
{
    if (req != MPI_REQUEST_NULL)
        rma_request_poke(req);
    return rma_mpi.Request_get_status(req, flag, status);
}
RMA_PMPI(Request_get_status);
