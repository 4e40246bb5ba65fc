/*
 * acc_lat - quick 8-byte latency loop of the accumulate family, a plain MPI program: run it
 * as is for MPICH's own RMA, or with librma preloaded (rmarun / LD_PRELOAD). Allocate window,
 * 2+ ranks, lock_all; rank 0 issues ACC_LAT_ITERS (default 100000) operations on rank 1, each
 * followed by MPI_Win_flush, and prints microseconds per operation. Values are verified.
 */
#include "rmatest.h"

#include <stdint.h>

int main(int argc, char **argv)
{
    long iters = getenv("ACC_LAT_ITERS") ? atol(getenv("ACC_LAT_ITERS")) : 100000;
    int64_t *mem, one = 1, r = 0, cmp, nv;
    double t0, tf, tc, ta, tg;
    MPI_Win win;
    int nprocs;

    rt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_OK(MPI_Win_allocate(64, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    memset(mem, 0, 64);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    if (rt_rank == 0 && nprocs > 1) {
        t0 = MPI_Wtime();
        for (long i = 0; i < iters; i++) {
            MPI_Fetch_and_op(&one, &r, MPI_INT64_T, 1, 0, MPI_SUM, win);
            MPI_Win_flush(1, win);
        }
        tf = MPI_Wtime() - t0;
        CHECK(r == iters - 1, "last fetch_and_op ticket %ld, want %ld", (long)r, iters - 1);
        t0 = MPI_Wtime();
        for (long i = 0; i < iters; i++) {
            cmp = i;
            nv = i + 1;
            MPI_Compare_and_swap(&nv, &cmp, &r, MPI_INT64_T, 1, 1, win);
            MPI_Win_flush(1, win);
        }
        tc = MPI_Wtime() - t0;
        CHECK(r == iters - 1, "last compare_and_swap fetched %ld, want %ld", (long)r, iters - 1);
        t0 = MPI_Wtime();
        for (long i = 0; i < iters; i++) {
            MPI_Accumulate(&one, 1, MPI_INT64_T, 1, 2, 1, MPI_INT64_T, MPI_SUM, win);
            MPI_Win_flush(1, win);
        }
        ta = MPI_Wtime() - t0;
        t0 = MPI_Wtime();
        for (long i = 0; i < iters; i++) {
            MPI_Get_accumulate(&one, 1, MPI_INT64_T, &r, 1, MPI_INT64_T, 1, 3, 1, MPI_INT64_T,
                               MPI_SUM, win);
            MPI_Win_flush(1, win);
        }
        tg = MPI_Wtime() - t0;
        CHECK(r == iters - 1, "last get_accumulate fetched %ld, want %ld", (long)r, iters - 1);
        printf("acc_lat: 8 B latency with flush, us/op: fetch_and_op %.3f  compare_and_swap "
               "%.3f  accumulate %.3f  get_accumulate %.3f  (%ld ops each)\n",
               tf / iters * 1e6, tc / iters * 1e6, ta / iters * 1e6, tg / iters * 1e6, iters);
    }
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rt_rank == 1)
        CHECK(mem[0] == iters && mem[1] == iters && mem[2] == iters && mem[3] == iters,
              "target counters %ld %ld %ld %ld, want %ld", (long)mem[0], (long)mem[1],
              (long)mem[2], (long)mem[3], iters);
    MPI_OK(MPI_Win_free(&win));
    return rt_finish("acc_lat");
}
