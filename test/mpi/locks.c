/*
 * locks - passive target synchronization: every rank increments a counter at rank 0 with
 * Get+Put under MPI_LOCK_EXCLUSIVE a fixed number of times (the total must be exact);
 * shared locks admit concurrent readers (all hold one across a barrier) and exclude a writer
 * (readers never see a half-done update); lock_all with MPI_MODE_NOCHECK; passive target
 * progress: rank 0 computes without calling MPI (bounded, 2 s) while the others
 * lock/put/unlock into its window, and sees all their data in that time. Each part runs on
 * an allocate and a create window.
 */
#include "rmatest.h"

#include <time.h>

#define NINC 100

static int rank, nprocs;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void run(int create)
{
    const char *fl = create ? "create" : "allocate";
    int *mem, *own = NULL;
    MPI_Win win;
    const int nints = 64;

    if (create) {
        own = mem = calloc(nints, sizeof(int));
        MPI_OK(MPI_Win_create(mem, nints * sizeof(int), sizeof(int), MPI_INFO_NULL,
                              MPI_COMM_WORLD, &win));
    } else {
        MPI_OK(MPI_Win_allocate(nints * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                                &mem, &win));
        memset(mem, 0, nints * sizeof(int));
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 1. exclusive counter */
    for (int i = 0; i < NINC; i++) {
        int v = -1;
        MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        MPI_OK(MPI_Get(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
        MPI_OK(MPI_Win_flush(0, win));
        v++;
        MPI_OK(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
        MPI_OK(MPI_Win_unlock(0, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK(mem[0] == NINC * nprocs, "%s: counter %d, want %d", fl, mem[0], NINC * nprocs);
        MPI_OK(MPI_Win_unlock(0, win));
        printf("%s: exclusive Get+Put counter = %d (%d ranks x %d)\n", fl, mem[0], nprocs,
               NINC);
    }

    /* 2a. shared locks are concurrent: everybody holds one across a barrier */
    {
        int v = -1;
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_OK(MPI_Get(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
        MPI_OK(MPI_Win_unlock(0, win));
        CHECK(v == NINC * nprocs, "%s: shared reader got %d", fl, v);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 2b. an exclusive writer updates ints 1 and 2 in two steps; readers see both or none */
    {
        int torn = 0, reads = 0;
        if (rank == nprocs - 1) {
            for (int k = 1; k <= 20; k++) {
                MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
                MPI_OK(MPI_Put(&k, 1, MPI_INT, 0, 1, 1, MPI_INT, win));
                MPI_OK(MPI_Win_flush(0, win));
                for (volatile int spin = 0; spin < 20000; spin++)
                    ;
                MPI_OK(MPI_Put(&k, 1, MPI_INT, 0, 2, 1, MPI_INT, win));
                MPI_OK(MPI_Win_unlock(0, win));
            }
        } else {
            for (int i = 0; i < 40; i++) {
                int xy[2];
                MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
                MPI_OK(MPI_Get(xy, 2, MPI_INT, 0, 1, 2, MPI_INT, win));
                MPI_OK(MPI_Win_unlock(0, win));
                torn += xy[0] != xy[1];
                reads++;
            }
        }
        CHECK(torn == 0, "%s: %d of %d shared reads saw a half-done exclusive update", fl,
              torn, reads);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3. lock_all with MPI_MODE_NOCHECK: the barrier is the synchronization */
    {
        int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
        int v = 5000 + rank;
        MPI_OK(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
        MPI_OK(MPI_Put(&v, 1, MPI_INT, right, 10, 1, MPI_INT, win));
        MPI_OK(MPI_Win_flush(right, win));
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_OK(MPI_Win_sync(win));
        CHECK(mem[10] == 5000 + left, "%s: lock_all NOCHECK put: %d, want %d", fl, mem[10],
              5000 + left);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_OK(MPI_Win_unlock_all(win));
        /* a NOCHECK lock of one target */
        MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, MPI_MODE_NOCHECK, win));
        MPI_OK(MPI_Put(&v, 1, MPI_INT, right, 11, 1, MPI_INT, win));
        MPI_OK(MPI_Win_unlock(right, win));
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(mem[11] == 5000 + left, "%s: lock NOCHECK put: %d", fl, mem[11]);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 4. passive target progress: rank 0 never calls MPI while the others write to it */
    {
        const int rounds = 20;
        if (rank == 0) {
            double t0 = now(), t;
            int done = 0;
            volatile int *vm = mem;
            MPI_Barrier(MPI_COMM_WORLD);
            do {
                done = 0;
                for (int r = 1; r < nprocs; r++)
                    done += vm[20 + r] == rounds;
                t = now() - t0;
            } while (done < nprocs - 1 && t < 2.0);
            CHECK(done == nprocs - 1, "%s: passive progress: %d of %d origins finished "
                  "within %.2f s without MPI calls at the target", fl, done, nprocs - 1, t);
            printf("%s: passive target progress: %d origins done in %.4f s\n", fl, done, t);
        } else {
            double t0;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = now();
            for (int k = 1; k <= rounds; k++) {
                MPI_OK(MPI_Win_lock(k & 1 ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, 0, 0, win));
                MPI_OK(MPI_Put(&k, 1, MPI_INT, 0, 20 + rank, 1, MPI_INT, win));
                MPI_OK(MPI_Win_unlock(0, win));
            }
            CHECK(now() - t0 < 2.0, "%s: origin needed %.2f s", fl, now() - t0);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_OK(MPI_Win_free(&win));
    free(own);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    run(0);
    run(1);
    return rt_finish("locks");
}
