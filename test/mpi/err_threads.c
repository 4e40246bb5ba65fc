/*
 * err_threads - errors raised on two threads at once (MPI_THREAD_MULTIPLE): thread A sends
 * to a rank that does not exist on a communicator of its own whose error handler (the
 * program's) calls MPI_Error_string; thread B makes window calls that fail, with
 * MPI_ERRORS_RETURN on a window of its own, and asks MPI_Error_string for each code.
 * ERR_THREADS_ITERS rounds (2000) each; every error has its class and a text naming the
 * call.
 *
 * Before, librma made a new error code (MPI_Add_error_code, which takes MPICH's lock)
 * while holding the lock of its table of error texts, and MPICH holds its lock while it
 * runs an error handler, whose MPI_Error_string takes librma's table lock: the two threads
 * deadlocked within a few rounds (hp54). Skipped (exit 0) without MPI_THREAD_MULTIPLE.
 */
#include "rmatest.h"

#include <pthread.h>

static int ITERS = 2000;
static MPI_Comm ca;
static MPI_Win wb;
static int nprocs;
static _Atomic int handled, named;

static void comm_eh(MPI_Comm *comm, int *code, ...)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0, cls = -1;

    (void)comm;
    MPI_Error_class(*code, &cls);
    MPI_Error_string(*code, s, &len);
    if (cls == MPI_ERR_RANK && len > 0)
        handled++;
}

static void *thread_a(void *arg)
{
    int x = 0;

    (void)arg;
    for (int i = 0; i < ITERS; i++)
        MPI_Send(&x, 1, MPI_INT, nprocs + 5, 0, ca);
    return NULL;
}

static void *thread_b(void *arg)
{
    char s[MPI_MAX_ERROR_STRING];
    long v = 0;

    (void)arg;
    MPI_Win_lock_all(0, wb);
    for (int i = 0; i < ITERS; i++) {
        int len = 0, cls = -1, rc;
        if (i % 2)
            rc = MPI_Put(&v, 1, MPI_LONG, nprocs + 3, 0, 1, MPI_LONG, wb);
        else
            rc = MPI_Get(&v, 1, MPI_LONG, 0, -8, 1, MPI_LONG, wb);
        MPI_Error_class(rc, &cls);
        MPI_Error_string(rc, s, &len);
        if (cls == (i % 2 ? MPI_ERR_RANK : MPI_ERR_RMA_RANGE) && len > 0 &&
            strstr(s, i % 2 ? "MPI_Put" : "MPI_Get") != NULL)
            named++;
    }
    MPI_Win_unlock_all(wb);
    return NULL;
}

int main(int argc, char **argv)
{
    long *base;
    pthread_t a, b;
    MPI_Errhandler eh;

    if (!rt_init_multiple(&argc, &argv, "err_threads"))
        return 0;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    ITERS = rt_env_int("ERR_THREADS_ITERS", ITERS);
    MPI_Comm_dup(MPI_COMM_WORLD, &ca);
    MPI_Comm_create_errhandler(comm_eh, &eh);
    MPI_Comm_set_errhandler(ca, eh);
    MPI_OK(MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &wb));
    MPI_Win_set_errhandler(wb, MPI_ERRORS_RETURN);
    pthread_create(&a, NULL, thread_a, NULL);
    pthread_create(&b, NULL, thread_b, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    CHECK(handled == ITERS, "the handler saw %d of %d errors as MPI_ERR_RANK with a text",
          (int)handled, ITERS);
    CHECK(named == ITERS, "%d of %d window errors had their class and a text naming the call",
          (int)named, ITERS);
    MPI_Win_free(&wb);
    MPI_Errhandler_free(&eh);
    MPI_Comm_free(&ca);
    return rt_finish("err_threads");
}
