/*
 * acc_big - accumulates too large for one host-assisted request of a put (more than 1024
 * runs, or more than 4 MiB of data) to every other rank, from every rank at once: an
 * MPI_Accumulate (MPI_SUM) of ACC_BIG_N ints (1048577: 4 MiB and one int) along a vector of
 * stride 2, then an MPI_Get_accumulate of ACC_BIG_RUNS (5000) irregular one-int blocks.
 * Every element of the target and every fetched value is checked. Before, such a call to
 * an off-node rank fell back to one read-modify-write per piece: 15-24 s for the first
 * one on two simulated nodes, more than 90 s over tcp (MPICH: 0.15 s).
 */
#include "rmatest.h"

int main(int argc, char **argv)
{
    const char *sn = getenv("ACC_BIG_N"), *sr = getenv("ACC_BIG_RUNS");
    int n = sn != NULL ? atoi(sn) : 1048577, runs = sr != NULL ? atoi(sr) : 5000, rank, np;
    int *mem, *ones, *got, *blen;
    MPI_Aint *disp;
    MPI_Datatype vec, idx;
    MPI_Win win;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_OK(MPI_Win_allocate((MPI_Aint)2 * n * sizeof(int), sizeof(int), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &mem, &win));
    memset(mem, 0, (size_t)2 * n * sizeof(int));
    ones = malloc((size_t)(n > runs ? n : runs) * sizeof(int));
    got = malloc((size_t)runs * sizeof(int));
    blen = malloc((size_t)runs * sizeof(int));
    disp = malloc((size_t)runs * sizeof(MPI_Aint));
    for (int i = 0; i < n; i++)
        ones[i] = 1;
    for (int i = 0; i < runs; i++) { /* odd slots, irregular gaps: one record each */
        blen[i] = 1;
        disp[i] = (MPI_Aint)(((size_t)i * 7 + (size_t)(i % 3)) % (size_t)n * 2 + 1) *
                  (MPI_Aint)sizeof(int);
    }
    MPI_Type_vector(n, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Type_create_hindexed(runs, blen, disp, MPI_INT, &idx);
    MPI_Type_commit(&idx);
    MPI_Barrier(MPI_COMM_WORLD);

    /* every rank adds 1 to the even slots of every other rank */
    MPI_OK(MPI_Win_lock_all(0, win));
    for (int t = 0; t < np; t++)
        if (t != rank)
            MPI_OK(MPI_Accumulate(ones, n, MPI_INT, t, 0, 1, vec, MPI_SUM, win));
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    {
        size_t bad = 0;
        for (int i = 0; i < n; i++)
            bad += mem[2 * i] != np - 1 || mem[2 * i + 1] != 0;
        CHECK(bad == 0, "%zu of %d elements wrong after the vector accumulates (even %d, odd %d)",
              bad, n, mem[0], mem[1]);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* then each rank in turn adds its rank + 1 at the odd slots of the next rank, fetching */
    for (int turn = 0; turn < np; turn++) {
        int t = (rank + 1) % np;
        if (turn == rank && t != rank) {
            size_t bad = 0;
            for (int i = 0; i < runs; i++)
                ones[i] = rank + 1;
            MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
            MPI_OK(MPI_Get_accumulate(ones, runs, MPI_INT, got, runs, MPI_INT, t, 0, 1, idx,
                                      MPI_SUM, win));
            MPI_OK(MPI_Win_unlock(t, win));
            for (int i = 0; i < runs; i++) {
                int want = 0;
                for (int j = 0; j < i; j++) /* an earlier block at the same slot */
                    want += disp[j] == disp[i] ? rank + 1 : 0;
                bad += got[i] != want;
            }
            CHECK(bad == 0, "%zu of %d fetched values wrong", bad, runs);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    {
        int from = (rank + np - 1) % np;
        size_t bad = 0;
        for (int i = 0; np > 1 && i < runs; i++) {
            int k = (int)(disp[i] / (MPI_Aint)sizeof(int)), hits = 0;
            for (int j = 0; j < runs; j++)
                hits += disp[j] == disp[i];
            bad += mem[k] != hits * (from + 1);
        }
        CHECK(bad == 0, "%zu of %d blocks wrong after the indexed get_accumulates", bad, runs);
    }
    MPI_Type_free(&vec);
    MPI_Type_free(&idx);
    MPI_OK(MPI_Win_free(&win));
    free(ones);
    free(got);
    free(blen);
    free(disp);
    return rt_finish("acc_big");
}
