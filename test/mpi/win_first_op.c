/*
 * win_first_op.c - an RMA call right after the window's creation returned reaches a target
 * that may still be inside the creating call. MPI allows it: once MPI_Win_create or
 * MPI_Win_allocate returned here, a passive-target epoch may start at once. Off node the
 * request goes to the target's agent, which must already see the window whole: with
 * MPI_Win_allocate it once saw the window's size as 0 and dropped 8 KiB puts as "outside
 * the window" (MPICH's req_example over tcp, one run in three).
 *
 * ROUNDS (environment, default 40) times per flavor (create, allocate): create a window of
 * N doubles, lock_all, put N values into the next rank, unlock_all, read them back from it
 * with a get, then check both after a barrier; free the window.
 */
#include "rmatest.h"

#include <stdlib.h>

#define N 1024 /* 8 KiB: one host-assisted request over tcp */

static int me, np;

static void round_of(int flavor, int round)
{
    MPI_Win win;
    double *mem = NULL, *src = malloc(N * sizeof(double)), got = -1;
    int next = (me + 1) % np, prev = (me + np - 1) % np, bad = 0;

    for (int i = 0; i < N; i++)
        src[i] = me * 1e6 + round * 1e3 + i;
    if (flavor == RT_CREATE) {
        mem = malloc(N * sizeof(double));
        for (int i = 0; i < N; i++)
            mem[i] = -1;
        MPI_OK(MPI_Win_create(mem, N * sizeof(double), sizeof(double), MPI_INFO_NULL,
                              MPI_COMM_WORLD, &win));
    } else {
        MPI_OK(MPI_Win_allocate(N * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD,
                                &mem, &win));
    }
    /* no synchronization between creation and the first epoch: that is the point */
    MPI_OK(MPI_Win_lock_all(0, win));
    MPI_OK(MPI_Put(src, N, MPI_DOUBLE, next, 0, N, MPI_DOUBLE, win));
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_OK(MPI_Win_lock_all(0, win));
    MPI_OK(MPI_Get(&got, 1, MPI_DOUBLE, next, N - 1, 1, MPI_DOUBLE, win));
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win));
    for (int i = 0; i < N; i++)
        bad += mem[i] != prev * 1e6 + round * 1e3 + i;
    MPI_OK(MPI_Win_unlock(me, win));
    CHECK(bad == 0, "%s round %d: %d of %d elements put by rank %d are wrong",
          rt_flavor_name[flavor], round, bad, N, prev);
    CHECK(got == me * 1e6 + round * 1e3 + N - 1, "%s round %d: got %g back from rank %d",
          rt_flavor_name[flavor], round, got, next);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD)); /* every get is done before the memory goes */
    MPI_OK(MPI_Win_free(&win));
    if (flavor == RT_CREATE)
        free(mem);
    free(src);
}

int main(int argc, char **argv)
{
    int rounds;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    rounds = rt_env_int("ROUNDS", 40);
    for (int r = 0; r < rounds; r++) {
        round_of(RT_CREATE, r);
        round_of(RT_ALLOCATE, r);
    }
    return rt_finish("win_first_op");
}
