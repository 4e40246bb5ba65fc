/*
 * win_create.c - MPI entry points that create, free and query windows.
 */
#include <limits.h>

#include "binding/binding.h"
#include "mpid/rma/rma.h"
#include "sync/sync.h"

int rma_attr_delete_all(rma_win_t *win); /* win_attr.c */

static int check_create_args(const char *func, MPI_Aint size, MPI_Aint disp_unit, void *out)
{
    if (size < 0)
        return rma_err(NULL, func, MPI_ERR_SIZE, "negative window size %ld", (long)size);
    if (disp_unit <= 0 || disp_unit > INT_MAX)
        return rma_err(NULL, func, MPI_ERR_DISP, "disp_unit %ld is not in [1, INT_MAX]",
                       (long)disp_unit);
    if (out == NULL)
        return rma_err(NULL, func, MPI_ERR_ARG, "the output argument is NULL");
    return MPI_SUCCESS;
}

/* The communicator whose handler the errors of a window's creation go to: comm, unless it
 * is no communicator at all. */
static MPI_Comm creation_comm(MPI_Comm comm)
{
    int size;

    return comm != MPI_COMM_NULL && PMPI_Comm_size(comm, &size) == MPI_SUCCESS ? comm
                                                                               : MPI_COMM_NULL;
}

static int win_create_on(void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info,
                         MPI_Comm comm, MPI_Win *handle, const char *func)
{
    rma_win_t *win;
    int rc = check_create_args(func, size, disp_unit, handle);

    if (rc != MPI_SUCCESS)
        return rc;
    if (base == NULL && size > 0)
        return rma_err(NULL, func, MPI_ERR_BASE, "NULL base for a %ld-byte window", (long)size);
    rma_init_once();
    rc = rma_win_create(base, size, (int)disp_unit, info, comm, &win);
    if (rc == MPI_SUCCESS)
        *handle = win->handle;
    return rc;
}

static int win_create(void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                      MPI_Win *handle, const char *func)
{
    MPI_Comm prev = rma_err_comm_set(creation_comm(comm));
    int rc = win_create_on(base, size, disp_unit, info, comm, handle, func);

    rma_err_comm_set(prev);
    return rc;
}

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                   MPI_Win *win)
{
    return win_create(base, size, disp_unit, info, comm, win, "MPI_Win_create");
}
RMA_PMPI(Win_create);

int MPI_Win_create_c(void *base, MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                     MPI_Win *win)
{
    return win_create(base, size, disp_unit, info, comm, win, "MPI_Win_create_c");
}
RMA_PMPI(Win_create_c);

static int win_allocate_on(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                           void *baseptr, MPI_Win *handle, int shared, const char *func)
{
    rma_win_t *win;
    int rc = check_create_args(func, size, disp_unit, handle);

    if (rc == MPI_SUCCESS && baseptr == NULL)
        rc = rma_err(NULL, func, MPI_ERR_ARG, "baseptr is NULL");
    if (rc != MPI_SUCCESS)
        return rc;
    rma_init_once();
    rc = rma_win_allocate(size, (int)disp_unit, info, comm, shared, baseptr, &win);
    if (rc == MPI_SUCCESS)
        *handle = win->handle;
    return rc;
}

static int win_allocate(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                        void *baseptr, MPI_Win *handle, int shared, const char *func)
{
    MPI_Comm prev = rma_err_comm_set(creation_comm(comm));
    int rc = win_allocate_on(size, disp_unit, info, comm, baseptr, handle, shared, func);

    rma_err_comm_set(prev);
    return rc;
}

int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                     MPI_Win *win)
{
    return win_allocate(size, disp_unit, info, comm, baseptr, win, 0, "MPI_Win_allocate");
}
RMA_PMPI(Win_allocate);

int MPI_Win_allocate_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                       void *baseptr, MPI_Win *win)
{
    return win_allocate(size, disp_unit, info, comm, baseptr, win, 0, "MPI_Win_allocate_c");
}
RMA_PMPI(Win_allocate_c);

int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                            void *baseptr, MPI_Win *win)
{
    return win_allocate(size, disp_unit, info, comm, baseptr, win, 1, "MPI_Win_allocate_shared");
}
RMA_PMPI(Win_allocate_shared);

int MPI_Win_allocate_shared_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, MPI_Comm comm,
                              void *baseptr, MPI_Win *win)
{
    return win_allocate(size, disp_unit, info, comm, baseptr, win, 1, "MPI_Win_allocate_shared_c");
}
RMA_PMPI(Win_allocate_shared_c);

int MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *handle)
{
    MPI_Comm prev = rma_err_comm_set(creation_comm(comm));
    rma_win_t *win;
    int rc;

    if (handle == NULL) {
        rc = rma_err(NULL, "MPI_Win_create_dynamic", MPI_ERR_ARG, "win is NULL");
    } else {
        rma_init_once();
        rc = rma_win_create_dynamic(info, comm, &win);
        if (rc == MPI_SUCCESS)
            *handle = win->handle;
    }
    rma_err_comm_set(prev);
    return rc;
}
RMA_PMPI(Win_create_dynamic);

int MPI_Win_attach(MPI_Win handle, void *base, MPI_Aint size)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Win_attach");
    return rma_win_attach(win, base, size);
}
RMA_PMPI(Win_attach);

int MPI_Win_detach(MPI_Win handle, const void *base)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, "MPI_Win_detach");
    return rma_win_detach(win, base);
}
RMA_PMPI(Win_detach);

int MPI_Win_free(MPI_Win *handle)
{
    rma_win_t *win;
    int rc;

    if (handle == NULL)
        return rma_err(NULL, "MPI_Win_free", MPI_ERR_ARG, "win is NULL");
    RMA_WIN_GET(win, *handle, "MPI_Win_free");
    rc = rma_sync_check_free(win);
    if (rc == MPI_SUCCESS)
        rc = rma_attr_delete_all(win);
    if (rc != MPI_SUCCESS)
        return rc;
    rma_win_free(win);
    rma_request_reap_all(); /* requests of the window the program freed early */
    *handle = MPI_WIN_NULL;
    return MPI_SUCCESS;
}
RMA_PMPI(Win_free);

/* The segment of `rank` as this process can load and store it: MPI-4.1 12.2.3 lets any
 * window but a dynamic one be queried, and gives size 0 and NULL for memory that cannot be
 * reached directly (off node, RMA_NETMOD_ONLY, or create memory not moved yet). */
static void segment_of(rma_win_t *win, int rank, MPI_Aint *size, MPI_Aint *disp_unit, void **base)
{
    rma_target_t *tg = &win->targets[rank];
    char *p = NULL;

    rma_expose_refresh(win, rank); /* create memory its owner may have moved since */
    if (tg->size > 0)
        p = rma_direct_addr(tg, 0, (size_t)tg->size); /* the hot path's own test */
    *size = p != NULL ? tg->size : 0;
    *disp_unit = tg->disp_unit;
    *base = p;
}

static int shared_query(MPI_Win handle, int rank, MPI_Aint *size, MPI_Aint *disp_unit,
                        void *baseptr, const char *func)
{
    rma_win_t *win;

    RMA_WIN_GET(win, handle, func);
    if (win->flavor == MPI_WIN_FLAVOR_DYNAMIC)
        return rma_err(win, func, MPI_ERR_RMA_FLAVOR,
                       "a window made by MPI_Win_create_dynamic has no segment to query");
    if (size == NULL || disp_unit == NULL || baseptr == NULL)
        return rma_err(win, func, MPI_ERR_ARG, "an output argument is NULL");
    if (rank == MPI_PROC_NULL) {
        /* the lowest rank that contributed memory; size 0 and NULL if none did */
        for (rank = 0; rank < win->nranks && win->targets[rank].size == 0; rank++)
            ;
        if (rank == win->nranks) {
            *size = 0;
            *disp_unit = win->targets[0].disp_unit;
            *(void **)baseptr = NULL;
            return MPI_SUCCESS;
        }
    } else if ((unsigned)rank >= (unsigned)win->nranks) {
        return rma_err(win, func, MPI_ERR_RANK, "rank %d is not in the window's group of %d", rank,
                       win->nranks);
    }
    segment_of(win, rank, size, disp_unit, (void **)baseptr);
    return MPI_SUCCESS;
}

int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr)
{
    MPI_Aint du = 0;
    int rc = shared_query(win, rank, size, disp_unit ? &du : NULL, baseptr, "MPI_Win_shared_query");
    if (rc == MPI_SUCCESS)
        *disp_unit = (int)du;
    return rc;
}
RMA_PMPI(Win_shared_query);

int MPI_Win_shared_query_c(MPI_Win win, int rank, MPI_Aint *size, MPI_Aint *disp_unit,
                           void *baseptr)
{
    return shared_query(win, rank, size, disp_unit, baseptr, "MPI_Win_shared_query_c");
}
RMA_PMPI(Win_shared_query_c);
