/*
 * lock_order - a process that holds an exclusive lock and asks for another must get it
 * while other ranks wait in MPI_Win_lock_all. Rank 0 locks itself exclusively, adds 1 there,
 * lets the others go (a message each) and, once they wait in MPI_Win_lock_all (a pause),
 * locks the last rank exclusively too and adds 1 there; the others add 1 at rank 0 in their
 * lock_all epochs. The counters must be exact. For every flavor.
 *
 * A lock_all that waits at the window's global lock word makes exclusive lockers that come
 * later step back until it has gone (sync/lock.c: a stream of exclusive lockers cannot
 * starve it); rank 0, holding an exclusive lock that the lock_all waits for, stepped back
 * too, and both waited for ever. A hang here fails by the run's timeout. 2 to 4 ranks.
 */
#include "rmatest.h"

#include <time.h>

static int nprocs;

static void run(int flavor)
{
    rt_win_t w;
    int one = 1, token = 0, last = nprocs - 1, dyn = flavor == RT_DYNAMIC, got = -1;

    rt_win_open(&w, flavor, 64 * sizeof(int), sizeof(int));
    if (rt_rank == 0) {
        MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w.win));
        MPI_OK(MPI_Accumulate(&one, 1, MPI_INT, 0, w.base, 1, MPI_INT, MPI_SUM, w.win));
        for (int r = 1; r < nprocs; r++)
            MPI_OK(MPI_Send(&token, 1, MPI_INT, r, 0, MPI_COMM_WORLD));
        nanosleep(&(struct timespec){0, 300 * 1000000}, NULL); /* they wait in lock_all */
        MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, last, 0, w.win));
        if (!dyn) /* a dynamic window has memory at rank 0 alone */
            MPI_OK(MPI_Accumulate(&one, 1, MPI_INT, last, 1, 1, MPI_INT, MPI_SUM, w.win));
        MPI_OK(MPI_Win_unlock(last, w.win));
        MPI_OK(MPI_Win_unlock(0, w.win));
    } else {
        MPI_OK(MPI_Recv(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_OK(MPI_Win_lock_all(0, w.win));
        MPI_OK(MPI_Accumulate(&one, 1, MPI_INT, 0, w.base, 1, MPI_INT, MPI_SUM, w.win));
        MPI_OK(MPI_Win_unlock_all(w.win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rt_rank == 0) {
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win));
        MPI_OK(MPI_Get(&got, 1, MPI_INT, 0, w.base, 1, MPI_INT, w.win));
        MPI_OK(MPI_Win_unlock(0, w.win));
        CHECK(got == nprocs, "%s: rank 0's counter is %d, not %d", rt_flavor_name[flavor], got,
              nprocs);
    }
    if (rt_rank == last && !dyn) {
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, last, 0, w.win));
        MPI_OK(MPI_Get(&got, 1, MPI_INT, last, 1, 1, MPI_INT, w.win));
        MPI_OK(MPI_Win_unlock(last, w.win));
        CHECK(got == 1, "%s: rank %d's counter is %d, not 1", rt_flavor_name[flavor], last, got);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    rt_win_close(&w);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    CHECK(nprocs >= 2 && nprocs <= 4, "runs with 2 to 4 ranks, not %d", nprocs);
    if (nprocs >= 2)
        rt_each_flavor(run);
    return rt_finish("lock_order");
}
