/*
 * win_errhandler.c - window error handlers: create, set, get, call, and MPI_Errhandler_free
 * (interposed so a handler librma still uses is not freed under it).
 */
#include "binding/binding.h"
#include "binding/next.h"

int MPI_Win_create_errhandler(MPI_Win_errhandler_function *fn, MPI_Errhandler *errhandler)
{
    int rc;

    if (fn == NULL || errhandler == NULL)
        return rma_err(NULL, "MPI_Win_create_errhandler", MPI_ERR_ARG,
                       "function or errhandler is NULL");
    rc = rma_mpi.Win_create_errhandler(fn, errhandler);
    if (rc != MPI_SUCCESS)
        return rc;
    if (rma_errh_register(*errhandler, fn) != 0) {
        rma_mpi.Errhandler_free(errhandler);
        return rma_err(NULL, "MPI_Win_create_errhandler", MPI_ERR_NO_MEM, "out of memory");
    }
    return MPI_SUCCESS;
}
RMA_PMPI(Win_create_errhandler);

int MPI_Win_set_errhandler(MPI_Win handle, MPI_Errhandler errhandler)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Win_set_errhandler");
    if (!rma_errh_valid(errhandler))
        return rma_err(win, "MPI_Win_set_errhandler", MPI_ERR_ARG, "not a window error handler");
    rma_errh_ref(errhandler);
    rma_errh_unref(win->errhandler);
    win->errhandler = errhandler;
    return MPI_SUCCESS;
}
RMA_PMPI(Win_set_errhandler);

int MPI_Win_get_errhandler(MPI_Win handle, MPI_Errhandler *errhandler)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Win_get_errhandler");
    if (errhandler == NULL)
        return rma_err(win, "MPI_Win_get_errhandler", MPI_ERR_ARG, "errhandler is NULL");
    rma_errh_ref(win->errhandler);
    *errhandler = win->errhandler;
    return MPI_SUCCESS;
}
RMA_PMPI(Win_get_errhandler);

int MPI_Win_call_errhandler(MPI_Win handle, int errorcode)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Win_call_errhandler");
    rma_errh_call(win, errorcode);
    return MPI_SUCCESS;
}
RMA_PMPI(Win_call_errhandler);

int MPI_Errhandler_free(MPI_Errhandler *errhandler)
{
    if (errhandler != NULL && rma_errh_unref(*errhandler)) {
        *errhandler = MPI_ERRHANDLER_NULL;
        return MPI_SUCCESS;
    }
    return rma_mpi.Errhandler_free(errhandler);
}
RMA_PMPI(Errhandler_free);

/* librma's error codes carry their precise reason (see rma_err); others are MPICH's. */
int MPI_Error_string(int errorcode, char *string, int *resultlen)
{
    if (string != NULL && resultlen != NULL && rma_err_string(errorcode, string, resultlen))
        return MPI_SUCCESS;
    return rma_mpi.Error_string(errorcode, string, resultlen);
}
RMA_PMPI(Error_string);
