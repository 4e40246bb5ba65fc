/*
 * subset_windows - windows on some ranks only, then on all of them.
 *
 * On two simulated nodes, the even ranks (one per node) create a window on their own
 * communicator, so only they start the off-node transport; the odd ranks never touch RMA in
 * that phase. Every rank then calls MPI_Barrier on MPI_COMM_WORLD, twice, frees nothing yet
 * and goes on to a window on MPI_COMM_WORLD, whose creation brings the others in; and at the
 * end MPI_Finalize is collective for all. A barrier or a teardown that takes one path on
 * ranks that started the transport and another on those that did not (MPI does not match a
 * blocking barrier with a nonblocking one) hangs here. Also checked: the data of both
 * windows, with the subset window still alive while the world window is used.
 */
#include "rmatest.h"

#define N 8

int main(int argc, char **argv)
{
    int rank, nprocs, sub_rank, sub_size;
    long one = 1;
    long *sub_mem, *all_mem;
    MPI_Comm sub;
    MPI_Win sub_win, all_win;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &sub);
    MPI_Comm_rank(sub, &sub_rank);
    MPI_Comm_size(sub, &sub_size);

    /* phase 1: the even ranks alone; each adds 1 to its own slot in every window */
    if (rank % 2 == 0) {
        MPI_OK(MPI_Win_allocate(N * sizeof(long), sizeof(long), MPI_INFO_NULL, sub, &sub_mem,
                                &sub_win));
        for (int i = 0; i < N; i++)
            sub_mem[i] = 0;
        MPI_OK(MPI_Win_fence(0, sub_win));
        for (int t = 0; t < sub_size; t++)
            MPI_OK(MPI_Accumulate(&one, 1, MPI_LONG, t, sub_rank, 1, MPI_LONG, MPI_SUM, sub_win));
        MPI_OK(MPI_Win_fence(0, sub_win));
    }
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));

    /* phase 2: every rank puts its rank into every other rank's window, by lock_all */
    MPI_OK(MPI_Win_allocate((MPI_Aint)nprocs * sizeof(long), sizeof(long), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &all_mem, &all_win));
    for (int i = 0; i < nprocs; i++)
        all_mem[i] = -1;
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_OK(MPI_Win_lock_all(0, all_win));
    long v = rank; /* read by the puts until the unlock */
    for (int t = 0; t < nprocs; t++)
        MPI_OK(MPI_Put(&v, 1, MPI_LONG, t, rank, 1, MPI_LONG, all_win));
    MPI_OK(MPI_Win_unlock_all(all_win));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_OK(MPI_Win_sync(all_win));
    for (int i = 0; i < nprocs; i++)
        CHECK(all_mem[i] == i, "world window: slot %d holds %ld", i, all_mem[i]);

    /* the subset window is still usable once the world window exists */
    if (rank % 2 == 0) {
        long got[N] = {0};
        MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, (sub_rank + 1) % sub_size, 0, sub_win));
        MPI_OK(MPI_Get(got, N, MPI_LONG, (sub_rank + 1) % sub_size, 0, N, MPI_LONG, sub_win));
        MPI_OK(MPI_Win_unlock((sub_rank + 1) % sub_size, sub_win));
        for (int i = 0; i < N; i++)
            CHECK(got[i] == (i < sub_size ? 1 : 0), "subset window: element %d is %ld", i, got[i]);
        MPI_OK(MPI_Win_free(&sub_win));
    }
    MPI_OK(MPI_Win_free(&all_win));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Comm_free(&sub);
    return rt_finish("subset_windows");
}
