/*
 * acc_lazy - origins take rank 0's lock shared or exclusive in turn, each time with one
 * large accumulate (128 KiB of int64, more than the origin-side path's stripes cover at
 * once) and the unlock. Over the network a shared lock is taken lazily, with the epoch's
 * first operation; where the target's control words are mapped here the accumulate takes
 * its stripes by CPU atomics, and the transport's first call under them then took the lazy
 * lock, which waited for another origin's exclusive lock, whose accumulate waited for a
 * stripe: both hung (RMA_NETMOD_ONLY=1 with RMA_HX_PIECE=0, 2 of 2 runs before). Now the
 * lock is taken before the stripes. At the end every element is exact.
 * ACC_LAZY_ITERS (100) epochs per origin.
 */
#include "rmatest.h"

#include <stdint.h>

#define N 16384

int main(int argc, char **argv)
{
    const char *s = getenv("ACC_LAZY_ITERS");
    int iters = s != NULL ? atoi(s) : 100, np;
    int64_t *mem = calloc(N, 8), *one = malloc(N * 8);
    MPI_Win win;

    rt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (int i = 0; i < N; i++)
        one[i] = 1;
    MPI_OK(MPI_Win_create(mem, N * 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rt_rank > 0)
        for (int i = 0; i < iters; i++) {
            MPI_OK(
                MPI_Win_lock((i + rt_rank) % 2 ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, 0, 0, win));
            MPI_OK(MPI_Accumulate(one, N, MPI_INT64_T, 0, 0, N, MPI_INT64_T, MPI_SUM, win));
            MPI_OK(MPI_Win_unlock(0, win));
        }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rt_rank == 0) {
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += mem[i] != (int64_t)iters * (np - 1);
        CHECK(bad == 0, "%d of %d elements are not %lld (the first: %lld)", bad, N,
              (long long)iters * (np - 1), (long long)mem[0]);
    }
    MPI_OK(MPI_Win_free(&win));
    free(mem);
    free(one);
    return rt_finish("acc_lazy");
}
