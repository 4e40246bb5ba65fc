/*
 * req_free - request-based operations freed before they complete (MPI_Request_free right
 * after MPI_Rput, MPI_Rget, MPI_Raccumulate, MPI_Rget_accumulate; legal: the epoch's flush
 * completes them). Their data must arrive, and they must not pile up: MPICH calls a
 * generalized request's free function at MPI_Request_free, so the request stays alive
 * until librma completes it. Off node each one used to be kept for good (about 350 bytes
 * each; MPICH ran out of requests after some 260000).
 *
 * Rank 0 issues ROUNDS rounds of BATCH operations to the last rank, each round a flush:
 * gets of what the target wrote, puts and accumulates of known values. After each flush it
 * checks the gets; at the end the target checks the puts and accumulates, and rank 0 how
 * much its resident memory grew. Last, a request freed early in a window the program leaves
 * for MPI_Finalize. MPICH 4.0.2 refuses MPI_Request_free on its own RMA
 * requests (MPI_ERR_REQUEST), so this runs on librma only.
 */
#include "rmatest.h"

#include <unistd.h>

#define BATCH 64
#define SLOTS (BATCH * 4)

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;

    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* A shared-lock epoch of one MPI_Rget whose request is freed at once; the unlock lands it.
 * The target's first word is 1000 * its rank. */
static void freed_get(MPI_Win win, int t, const char *where)
{
    long long got = -1;
    MPI_Request q;

    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
    MPI_OK(MPI_Rget(&got, 1, MPI_LONG_LONG, t, 0, 1, MPI_LONG_LONG, win, &q));
    MPI_OK(MPI_Request_free(&q));
    MPI_OK(MPI_Win_unlock(t, win));
    CHECK(got == 1000LL * t, "%s: the get read %lld", where, got);
}

int main(int argc, char **argv)
{
    int rank, nprocs, rounds = rt_env_int("REQ_FREE_ROUNDS", 600);
    long long *base, got[BATCH], fetched[BATCH];
    long long one = 1, val[BATCH];
    long grew = 0, warm = 0;
    MPI_Win win;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int t = nprocs - 1;
    MPI_OK(MPI_Win_allocate(SLOTS * sizeof(long long), sizeof(long long), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &base, &win));
    /* slots [0, BATCH): the target's values, read back by gets; [BATCH, 2 BATCH): puts;
     * [2 BATCH, 3 BATCH): sums; [3 BATCH, 4 BATCH): fetched sums */
    for (int i = 0; i < SLOTS; i++)
        base[i] = i < BATCH ? 1000 * rank + i : 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock_all(0, win));
    if (rank == 0) {
        for (int r = 0; r < rounds; r++) {
            if (r == rounds / 10)
                warm = rss_kib();
            for (int i = 0; i < BATCH; i++) {
                MPI_Request q[4];
                got[i] = fetched[i] = -1;
                val[i] = (long long)r * BATCH + i;
                MPI_OK(MPI_Rget(&got[i], 1, MPI_LONG_LONG, t, i, 1, MPI_LONG_LONG, win, &q[0]));
                MPI_OK(MPI_Rput(&val[i], 1, MPI_LONG_LONG, t, BATCH + i, 1, MPI_LONG_LONG, win,
                                &q[1]));
                MPI_OK(MPI_Raccumulate(&one, 1, MPI_LONG_LONG, t, 2 * BATCH + i, 1, MPI_LONG_LONG,
                                       MPI_SUM, win, &q[2]));
                MPI_OK(MPI_Rget_accumulate(&one, 1, MPI_LONG_LONG, &fetched[i], 1, MPI_LONG_LONG, t,
                                           3 * BATCH + i, 1, MPI_LONG_LONG, MPI_SUM, win, &q[3]));
                for (int k = 0; k < 4; k++) {
                    MPI_OK(MPI_Request_free(&q[k]));
                    CHECK(q[k] == MPI_REQUEST_NULL, "request %d not set to MPI_REQUEST_NULL", k);
                }
            }
            MPI_OK(MPI_Win_flush(t, win));
            for (int i = 0; i < BATCH; i++) {
                CHECK(got[i] == 1000LL * t + i, "round %d: get %d read %lld", r, i, got[i]);
                CHECK(fetched[i] == r, "round %d: get_accumulate %d fetched %lld", r, i,
                      fetched[i]);
            }
        }
        grew = rss_kib() - warm;
    }
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == t)
        for (int i = 0; i < BATCH; i++) {
            CHECK(base[BATCH + i] == (long long)(rounds - 1) * BATCH + i, "put %d: %lld", i,
                  base[BATCH + i]);
            CHECK(base[2 * BATCH + i] == rounds, "sum %d: %lld", i, base[2 * BATCH + i]);
            CHECK(base[3 * BATCH + i] == rounds, "fetched sum %d: %lld", i, base[3 * BATCH + i]);
        }
    /* 4 * BATCH * rounds requests: kept, they would take ~50 MiB at the default rounds */
    if (rank == 0)
        CHECK(grew < 8192, "resident memory grew %ld KiB over %d freed requests", grew,
              4 * BATCH * rounds * 9 / 10);
    /* requests freed in an epoch the window's free ends */
    if (rank == 0)
        freed_get(win, t, "the last epoch");
    MPI_OK(MPI_Win_free(&win));
    /* ... and in an epoch of a window left for MPI_Finalize to free (UCX warned of its
     * requests not returned) */
    MPI_OK(MPI_Win_allocate(SLOTS * sizeof(long long), sizeof(long long), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &base, &win));
    base[0] = 1000LL * rank;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        freed_get(win, t, "a window left to MPI_Finalize");
    return rt_finish("req_free");
}
