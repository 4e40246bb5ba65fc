/*
 * fatal - runs that must fail (testlist: expect=fail grep=...). FATAL_MODE selects:
 *   put    MPI_Put outside an epoch under the default error handler: the job aborts with a
 *          message naming MPI_Put, the window and MPI_ERR_RMA_SYNC;
 *   range  an out-of-range MPI_Get on a named window: the message names the window;
 *   errors_abort  MPI_ERRORS_ABORT on the window: aborts too;
 *   abort  MPI_Abort while windows of every flavor exist (the runner checks /dev/shm);
 *   kill   a rank kills itself (SIGKILL) while windows of every flavor exist.
 * Each mode prints "fatal-test: <mode> reached" before the failing call. The shared window
 * spans the node's ranks only (MPI_COMM_TYPE_SHARED), so every mode runs in every topology.
 */
#include "rmatest.h"

#include <signal.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *mode = getenv("FATAL_MODE");
    int rank, nprocs, v = 1, *m;
    MPI_Win win;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (mode == NULL)
        mode = "put";
    MPI_OK(MPI_Win_allocate(64, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &m, &win));
    MPI_OK(MPI_Win_set_name(win, "fatal-test-window"));
    if (strcmp(mode, "put") == 0 || strcmp(mode, "errors_abort") == 0) {
        if (strcmp(mode, "errors_abort") == 0)
            MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_ABORT));
        if (rank == nprocs - 1) {
            printf("fatal-test: %s reached\n", mode);
            fflush(stdout);
            usleep(100000); /* let mpiexec forward the line before the abort */
            MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
            printf("fatal-test: MPI_Put returned under a fatal error handler\n");
        }
    } else if (strcmp(mode, "range") == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        if (rank == nprocs - 1) {
            printf("fatal-test: %s reached\n", mode);
            fflush(stdout);
            usleep(100000); /* let mpiexec forward the line before the abort */
            MPI_Get(&v, 1, MPI_INT, 0, 16, 1, MPI_INT, win);
            printf("fatal-test: MPI_Get returned under a fatal error handler\n");
        }
        MPI_Win_unlock(0, win);
    } else if (strcmp(mode, "abort") == 0 || strcmp(mode, "kill") == 0) {
        MPI_Win wc, ws, wd, wca;
        char *heap = malloc(1 << 16), *am, *sh, *dyn = malloc(8192), *dam;
        MPI_OK(MPI_Alloc_mem(8192, MPI_INFO_NULL, &am));
        MPI_OK(MPI_Alloc_mem(4096, MPI_INFO_NULL, &dam));
        MPI_OK(MPI_Win_create(heap, 1 << 16, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wc));
        MPI_OK(MPI_Win_create(am, 8192, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wca));
        MPI_OK(MPI_Win_allocate_shared(4096, 1, MPI_INFO_NULL, rt_node_comm(), &sh, &ws));
        MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &wd));
        MPI_OK(MPI_Win_attach(wd, dyn, 8192));
        MPI_OK(MPI_Win_attach(wd, dam, 4096));
        MPI_OK(MPI_Win_lock_all(0, wc));
        MPI_OK(MPI_Put(&v, 1, MPI_INT, (rank + 1) % nprocs, 8, 1, MPI_INT, wc));
        MPI_OK(MPI_Win_flush_all(wc));
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == nprocs - 1) {
            printf("fatal-test: %s reached\n", mode);
            fflush(stdout);
            usleep(100000); /* let mpiexec forward the line before the abort */
            if (strcmp(mode, "abort") == 0)
                MPI_Abort(MPI_COMM_WORLD, 3);
            else
                kill(getpid(), SIGKILL);
        }
        for (int i = 0; i < 2000; i++) /* the others wait to be torn down (bounded) */
            usleep(1000);
        printf("fatal-test: rank %d was not torn down\n", rank);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    CHECK(0, "fatal-test: mode %s did not fail", mode);
    return rt_finish("fatal");
}
