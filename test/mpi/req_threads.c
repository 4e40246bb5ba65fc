/*
 * req_threads - request-based operations completed by several threads of one process at
 * once (MPI_THREAD_MULTIPLE). Each rank runs 3 threads against its partner in the other
 * half of the ranks (off node in the twonode and netmod topologies); each thread owns its
 * requests and its part of the window: thread 0 polls its MPI_Rget and MPI_Rput with
 * MPI_Request_get_status until they are done, thread 1 completes its own with MPI_Wait,
 * thread 2 with MPI_Test loops and now and then MPI_Request_free before completion (its
 * operation then completes at the next flush). REQ_THREADS_ITERS rounds (1000), alternating
 * a small transfer (flush-based requests) and one of REQ_THREADS_BIG bytes (128 KiB: the
 * agent's copies where they apply). Every get is checked against the partner's pattern as
 * soon as its request is done, and every put by a get after a flush.
 *
 * Before, MPI_Request_get_status drove and completed the request while holding librma's
 * request list lock, and MPI_Grequest_complete takes MPICH's own lock, which MPICH holds
 * while it calls librma's free function (which takes the list lock): one thread in
 * MPI_Request_get_status and another completing its request deadlocked within a few
 * hundred rounds. Skipped (exit 0) without MPI_THREAD_MULTIPLE.
 */
#include "rmatest.h"

#include <pthread.h>
#include <stdint.h>

#define NT 3

static int ITERS = 1000;
static size_t BIG = 128 << 10; /* bytes per thread part: 2 * BIG (get, put) */
static int rank, nprocs, partner;
static MPI_Win win;

/* The value at long index i of rank r's get part of thread t. */
static long pattern(int r, int t, size_t i)
{
    return ((long)r << 40) ^ ((long)t << 32) ^ (long)i;
}

/* Waits for req in thread t's way: 1 when it is done, 0 when the thread freed it. */
static int complete(int t, MPI_Request *req, int it)
{
    int flag = 0;

    if (t == 0) {
        while (!flag)
            MPI_Request_get_status(*req, &flag, MPI_STATUS_IGNORE);
        MPI_Wait(req, MPI_STATUS_IGNORE); /* frees it */
    } else if (t == 1) {
        MPI_Wait(req, MPI_STATUS_IGNORE);
    } else if (it % 7 == 3) {
        MPI_Request_free(req);
        return 0;
    } else {
        while (!flag)
            MPI_Test(req, &flag, MPI_STATUS_IGNORE);
    }
    CHECK(*req == MPI_REQUEST_NULL, "thread %d: the request is not MPI_REQUEST_NULL", t);
    return 1;
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    size_t n = BIG / sizeof(long);
    MPI_Aint get_at = (MPI_Aint)(2 * t) * (MPI_Aint)BIG, put_at = get_at + (MPI_Aint)BIG;
    long *get = malloc(BIG), *put = malloc(BIG), *back = malloc(BIG);
    int bad = 0;

    for (int it = 0; it < ITERS && !bad; it++) {
        size_t cnt = it % 2 ? n : 8 + (size_t)it % 32;
        MPI_Request req;

        memset(get, 0, cnt * sizeof(long));
        MPI_Rget(get, (int)cnt, MPI_LONG, partner, get_at, (int)cnt, MPI_LONG, win, &req);
        if (!complete(t, &req, it))
            MPI_Win_flush(partner, win);
        size_t i = 0;
        while (i < cnt && get[i] == pattern(partner, t, i))
            i++;
        CHECK(i == cnt, "thread %d round %d: get[%zu] = %lx, expected %lx", t, it, i,
              i < cnt ? get[i] : 0, i < cnt ? pattern(partner, t, i) : 0);
        bad |= i < cnt;
        for (size_t i = 0; i < cnt; i++)
            put[i] = pattern(rank, t, i) + it;
        MPI_Rput(put, (int)cnt, MPI_LONG, partner, put_at, (int)cnt, MPI_LONG, win, &req);
        complete(t, &req, it + 1);
        MPI_Win_flush(partner, win);
        MPI_Get(back, (int)cnt, MPI_LONG, partner, put_at, (int)cnt, MPI_LONG, win);
        MPI_Win_flush(partner, win);
        for (i = 0; i < cnt && back[i] == pattern(rank, t, i) + it;)
            i++;
        CHECK(i == cnt, "thread %d round %d: put[%zu] read back %lx, expected %lx", t, it, i,
              i < cnt ? back[i] : 0, i < cnt ? pattern(rank, t, i) + it : 0);
        bad |= i < cnt;
    }
    free(get);
    free(put);
    free(back);
    return NULL;
}

int main(int argc, char **argv)
{
    long *base;
    pthread_t th[NT];

    if (!rt_init_multiple(&argc, &argv, "req_threads"))
        return 0;
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    ITERS = rt_env_int("REQ_THREADS_ITERS", ITERS);
    if (getenv("REQ_THREADS_BIG"))
        BIG = (size_t)atol(getenv("REQ_THREADS_BIG")) / sizeof(long) * sizeof(long);
    partner = (rank + (nprocs + 1) / 2) % nprocs;
    MPI_OK(
        MPI_Win_allocate((MPI_Aint)(2 * NT * BIG), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    for (int t = 0; t < NT; t++)
        for (size_t i = 0; i < BIG / sizeof(long); i++)
            base[(size_t)(2 * t) * BIG / sizeof(long) + i] = pattern(rank, t, i);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    for (int t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    return rt_finish("req_threads");
}
