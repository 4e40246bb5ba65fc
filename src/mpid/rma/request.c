/*
 * request.c - MPI requests for request-based RMA operations (MPI_Rput, MPI_Rget, ...).
 *
 * They are MPICH generalized requests (MPIX_Grequest_start), so every MPI completion call
 * works on them. Operations on same-node targets have completed when the request is made,
 * so the request is completed at once; the poll function is where transports that complete
 * later (UCX) will report progress.
 */
#include <mpi.h>

#include "mpid/rma/rma.h"
#include "windows/win_error.h"

static int req_query(void *extra, MPI_Status *status)
{
    (void)extra;
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

static int req_free(void *extra)
{
    (void)extra;
    return MPI_SUCCESS;
}

static int req_cancel(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS;
}

static int req_poll(void *extra, MPI_Status *status)
{
    (void)extra;
    (void)status;
    return MPI_SUCCESS;
}

/* MPICH calls this when a wait finds the request incomplete after polling; the requests
 * made here are complete by then, so there is nothing to wait for. */
static int req_wait(int count, void **states, double timeout, MPI_Status *status)
{
    (void)count;
    (void)states;
    (void)timeout;
    (void)status;
    return MPI_SUCCESS;
}

int rma_request_check(rma_win_t *win, MPI_Request *req, int trank, const char *func)
{
    if (req == NULL)
        return rma_err(win, func, MPI_ERR_ARG, "request is NULL");
    *req = MPI_REQUEST_NULL; /* what every error path leaves */
    if (trank == MPI_PROC_NULL)
        return MPI_SUCCESS; /* no effect, in any epoch (MPI-4 12.3) */
    if (win->epoch != RMA_EPOCH_LOCK && win->epoch != RMA_EPOCH_LOCK_ALL)
        return rma_err(win, func, MPI_ERR_RMA_SYNC,
                       "request-based operations need a passive target epoch (MPI_Win_lock or "
                       "MPI_Win_lock_all)");
    return MPI_SUCCESS;
}

int rma_request_done(rma_win_t *win, MPI_Request *req, const char *func)
{
    MPI_Request r;
    int rc = MPIX_Grequest_start(req_query, req_free, req_cancel, req_poll, req_wait, NULL, &r);

    if (rc == MPI_SUCCESS)
        rc = PMPI_Grequest_complete(r);
    if (rc != MPI_SUCCESS)
        return rma_err(win, func, MPI_ERR_OTHER, "cannot create the request");
    *req = r;
    return MPI_SUCCESS;
}
