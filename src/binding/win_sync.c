/*
 * win_sync.c - MPI entry points of the synchronization calls. Each takes a turn at the
 * network when no progress agent does (RMA_SYNC_WIN_GET).
 */
#include "binding/binding.h"
#include "sync/sync.h"

int MPI_Win_fence(int assert, MPI_Win handle)
{
    rma_win_t *win;

    RMA_SYNC_WIN_GET(win, handle, "MPI_Win_fence");
    return rma_fence(win, assert);
}
RMA_PMPI(Win_fence);

int MPI_Win_post(MPI_Group group, int assert, MPI_Win handle)
{
    rma_win_t *win;

    RMA_SYNC_WIN_GET(win, handle, "MPI_Win_post");
    return rma_post(win, group, assert);
}
RMA_PMPI(Win_post);

int MPI_Win_start(MPI_Group group, int assert, MPI_Win handle)
{
    rma_win_t *win;

    RMA_SYNC_WIN_GET(win, handle, "MPI_Win_start");
    return rma_start(win, group, assert);
}
RMA_PMPI(Win_start);

int MPI_Win_complete(MPI_Win handle)
{
    rma_win_t *win;

    RMA_SYNC_WIN_GET(win, handle, "MPI_Win_complete");
    return rma_complete(win);
}
RMA_PMPI(Win_complete);

int MPI_Win_wait(MPI_Win handle)
{
    rma_win_t *win;

    RMA_SYNC_WIN_GET(win, handle, "MPI_Win_wait");
    return rma_wait(win);
}
RMA_PMPI(Win_wait);

int MPI_Win_test(MPI_Win handle, int *flag)
{
    rma_win_t *win;

    RMA_SYNC_WIN_GET(win, handle, "MPI_Win_test");
    if (flag == NULL)
        return rma_err(win, "MPI_Win_test", MPI_ERR_ARG, "flag is NULL");
    return rma_test(win, flag);
}
RMA_PMPI(Win_test);

int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win handle)
{
    rma_win_t *win;

    RMA_SYNC_WIN_GET(win, handle, "MPI_Win_lock");
    return rma_lock(win, lock_type, rank, assert);
}
RMA_PMPI(Win_lock);

int MPI_Win_unlock(int rank, MPI_Win handle)
{
    rma_win_t *win;

    RMA_SYNC_WIN_GET(win, handle, "MPI_Win_unlock");
    return rma_unlock(win, rank);
}
RMA_PMPI(Win_unlock);

int MPI_Win_lock_all(int assert, MPI_Win handle)
{
    rma_win_t *win;

    RMA_SYNC_WIN_GET(win, handle, "MPI_Win_lock_all");
    return rma_lock_all(win, assert);
}
RMA_PMPI(Win_lock_all);

int MPI_Win_unlock_all(MPI_Win handle)
{
    rma_win_t *win;

    RMA_SYNC_WIN_GET(win, handle, "MPI_Win_unlock_all");
    return rma_unlock_all(win);
}
RMA_PMPI(Win_unlock_all);

int MPI_Win_flush(int rank, MPI_Win handle)
{
    rma_win_t *win;

    RMA_SYNC_WIN_GET(win, handle, "MPI_Win_flush");
    return rma_flush(win, rank, "MPI_Win_flush");
}
RMA_PMPI(Win_flush);

int MPI_Win_flush_local(int rank, MPI_Win handle)
{
    rma_win_t *win;

    RMA_SYNC_WIN_GET(win, handle, "MPI_Win_flush_local");
    return rma_flush_local(win, rank, "MPI_Win_flush_local");
}
RMA_PMPI(Win_flush_local);

int MPI_Win_flush_all(MPI_Win handle)
{
    rma_win_t *win;

    RMA_SYNC_WIN_GET(win, handle, "MPI_Win_flush_all");
    return rma_flush_all(win, "MPI_Win_flush_all");
}
RMA_PMPI(Win_flush_all);

int MPI_Win_flush_local_all(MPI_Win handle)
{
    rma_win_t *win;

    RMA_SYNC_WIN_GET(win, handle, "MPI_Win_flush_local_all");
    return rma_flush_local_all(win, "MPI_Win_flush_local_all");
}
RMA_PMPI(Win_flush_local_all);

int MPI_Win_sync(MPI_Win handle)
{
    rma_win_t *win;

    RMA_SYNC_WIN_GET(win, handle, "MPI_Win_sync");
    return rma_win_sync(win);
}
RMA_PMPI(Win_sync);
