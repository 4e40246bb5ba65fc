/*
 * type_threads - threads that use a new derived datatype for the first time at once
 * (MPI_THREAD_MULTIPLE). librma caches a type's flattened layout on the type; two threads
 * building it together must not free the layout the other one is walking. Each round the
 * main thread commits a new indexed type of many blocks; every thread then puts its own
 * ints along it into its own part of the right neighbour's window, and the neighbour checks
 * every int. Run with MALLOC_PERTURB_ so that a freed layout is garbage at once.
 */
#include "rmatest.h"

#include <pthread.h>

#define NT   2
#define NB   20000    /* blocks of the type: 1 or 2 ints, gaps of 1 or 2 (nothing regular) */
#define SPAN (3 * NB) /* ints a type reaches, at most */

static MPI_Win win;
static MPI_Datatype cur;
static pthread_barrier_t bar;
static int rank, np, rounds = 100, *src[NT], nint;
static _Atomic int put_errs;

static void *putter(void *arg)
{
    int id = (int)(long)arg;

    for (int r = 0; r < rounds; r++) {
        pthread_barrier_wait(&bar); /* the main thread made cur */
        if (MPI_Put(src[id], nint, MPI_INT, (rank + 1) % np, (MPI_Aint)id * SPAN, 1, cur, win) !=
            MPI_SUCCESS)
            put_errs++;
        pthread_barrier_wait(&bar); /* the main thread frees it */
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int *mem, left;
    static int bl[NB], disp[NB];
    pthread_t th[NT];

    if (!rt_init_multiple(&argc, &argv, "type_threads"))
        return 0;
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    left = (rank + np - 1) % np;
    for (int i = 0, p = 0; i < NB; i++) {
        bl[i] = 1 + i % 2;
        disp[i] = p;
        p += bl[i] + 1 + (i % 3 == 0);
        nint += bl[i];
    }
    for (int id = 0; id < NT; id++) {
        src[id] = malloc((size_t)nint * sizeof(int));
        for (int i = 0; i < nint; i++)
            src[id][i] = (rank + 1) * 1000000 + id * 100000 + i;
    }
    MPI_OK(MPI_Win_allocate((MPI_Aint)NT * SPAN * sizeof(int), sizeof(int), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &mem, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    pthread_barrier_init(&bar, NULL, NT + 1);
    for (long id = 0; id < NT; id++)
        pthread_create(&th[id], NULL, putter, (void *)id);
    for (int r = 0; r < rounds; r++) {
        int bad = 0;
        memset(mem, 0, (size_t)NT * SPAN * sizeof(int));
        MPI_Type_indexed(NB, bl, disp, MPI_INT, &cur);
        MPI_Type_commit(&cur);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_OK(MPI_Win_lock_all(0, win));
        pthread_barrier_wait(&bar); /* the threads put */
        pthread_barrier_wait(&bar);
        MPI_OK(MPI_Win_unlock_all(win));
        MPI_Type_free(&cur);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int id = 0; id < NT; id++)
            for (int i = 0, k = 0; i < NB; i++)
                for (int j = 0; j < bl[i]; j++, k++)
                    bad += mem[id * SPAN + disp[i] + j] != (left + 1) * 1000000 + id * 100000 + k;
        CHECK(bad == 0, "round %d: %d ints wrong", r, bad);
    }
    for (int id = 0; id < NT; id++)
        pthread_join(th[id], NULL);
    CHECK(put_errs == 0, "%d puts failed", (int)put_errs);
    pthread_barrier_destroy(&bar);
    MPI_OK(MPI_Win_free(&win));
    for (int id = 0; id < NT; id++)
        free(src[id]);
    return rt_finish("type_threads");
}
