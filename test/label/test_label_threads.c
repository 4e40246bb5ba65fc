/*
 * test_label_threads - the local calls of the labeled-window API from several threads at
 * once (MPI_THREAD_MULTIPLE): two threads register interleaved 8-byte areas of one array,
 * 8 times over (every registration must land in the address table: registering it again
 * is refused with LI_ERR_OVERLAP; the table was corrupted: areas missing, crashes); then
 * two threads put into the right neighbour's areas of another array (registered from one
 * thread: areas pair across ranks in registration order), and after a sync get from the
 * left one's, each thread its own areas.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "lt.h"

#define NAREA  4000  /* 8-byte areas of the transfers */
#define NRACE  40000 /* areas registered from two threads, in each of ROUNDS arrays */
#define ROUNDS 8

static int64_t *reg[ROUNDS], *arr, *got;
static int rank, nprocs, round, reg_bad, xfer_bad;
static pthread_mutex_t bad_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t go;

static void count_bad(int *c)
{
    pthread_mutex_lock(&bad_lock);
    (*c)++;
    pthread_mutex_unlock(&bad_lock);
}

static void *registrar(void *arg)
{
    int t = (int)(intptr_t)arg;

    pthread_barrier_wait(&go); /* both at once */
    for (int i = t; i < NRACE; i += 2)
        if (lio_register(&reg[round][i], sizeof(int64_t)) != LI_OK)
            count_bad(&reg_bad);
    return NULL;
}

static void *putter(void *arg)
{
    int t = (int)(intptr_t)arg, right = (rank + 1) % nprocs;

    for (int i = t; i < NAREA; i += 2) {
        got[NAREA + i] = (int64_t)rank * 1000000 + i; /* the source lives until li_sync */
        if (li_put(right, &got[NAREA + i], &arr[i], 0, sizeof(int64_t)) != LI_OK)
            count_bad(&xfer_bad);
    }
    return NULL;
}

static void *getter(void *arg)
{
    int t = (int)(intptr_t)arg, left = (rank + nprocs - 1) % nprocs;

    for (int i = t; i < NAREA; i += 2)
        if (li_get(left, &arr[i], 0, &got[i], sizeof(int64_t)) != LI_OK)
            count_bad(&xfer_bad);
    return NULL;
}

static void both(void *(*fn)(void *))
{
    pthread_t t[2];

    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, fn, (void *)(intptr_t)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
}

int main(int argc, char **argv)
{
    int provided, again = 0, rc;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    lt_check(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE provided (%d)", provided);
    lt_check(li_begin(&argc, &argv) == LI_OK, "li_begin after MPI_Init_thread");
    arr = calloc(NAREA, sizeof(*arr));
    got = calloc(2 * NAREA, sizeof(*got));
    pthread_barrier_init(&go, NULL, 2);

    /* labeled-form registrations, never committed: li_end drops them */
    for (round = 0; round < ROUNDS; round++) {
        reg[round] = calloc(NRACE, sizeof(*reg[round]));
        both(registrar);
    }
    lt_check(reg_bad == 0, "%d of %d registrations from two threads failed", reg_bad,
             ROUNDS * NRACE);
    for (int r = 0; r < ROUNDS; r++) /* each prints its refusal */
        for (int i = r; i < NRACE; i += NRACE / 8)
            again += lio_register(&reg[r][i], sizeof(int64_t)) == LI_ERR_OVERLAP;
    lt_check(again == ROUNDS * 8, "%d of %d areas registered from two threads are in the table",
             again, ROUNDS * 8);
    /* areas pair across ranks in registration order: those of the transfers are registered
     * in one order everywhere */
    for (int i = 0; i < NAREA; i++)
        if (li_register(&arr[i], sizeof(int64_t)) != LI_OK)
            reg_bad++;
    rc = li_commit();
    lt_check(rc == LI_OK && reg_bad == 0, "li_commit (%d, %d registrations failed)", rc, reg_bad);
    rc = li_init();
    lt_check(rc == LI_OK, "li_init (%d)", rc);
    li_barrier();

    both(putter);
    rc = li_sync();
    lt_check(xfer_bad == 0 && rc == LI_OK, "puts from two threads: %d failed, sync %d", xfer_bad,
             rc);
    int bad = 0, left = (rank + nprocs - 1) % nprocs, left2 = (rank + 2 * nprocs - 2) % nprocs;
    for (int i = 0; i < NAREA; i++)
        bad += arr[i] != (int64_t)left * 1000000 + i;
    lt_check(bad == 0, "%d of %d areas hold the left neighbour's put", bad, NAREA);
    both(getter);
    rc = li_sync();
    lt_check(xfer_bad == 0 && rc == LI_OK, "gets from two threads: %d failed, sync %d", xfer_bad,
             rc);
    bad = 0;
    for (int i = 0; i < NAREA; i++)
        bad += got[i] != (int64_t)left2 * 1000000 + i;
    lt_check(bad == 0, "%d of %d gets read the left neighbour's area", bad, NAREA);
    lt_check(li_end() == LI_OK, "li_end");
    for (int r = 0; r < ROUNDS; r++)
        free(reg[r]);
    free(arr);
    free(got);
    MPI_Finalize();
    return lt_finish(rank);
}
