/*
 * sync_visible.c - what one rank put before a synchronization is what every other rank
 * reads after it. Each round, origin o puts the round number into its slot at target
 * t = o + n/2 (another node in the twonode topology) and a second rank r (o's neighbour,
 * the same node as o there) reads that slot right after the synchronization, by MPI_Get.
 * A notification that becomes visible on o's node before o's put took effect at t lets r
 * read the previous round's value. Modes:
 *  - fence: put; fence; get; fence;
 *  - lock (shared and exclusive): lock, put, unlock; MPI_Barrier; lock, get, unlock;
 *    MPI_Barrier;
 *  - lock_all: the same with lock_all and unlock_all.
 * ITER (environment, default 1000) rounds per mode.
 */
#include "rmatest.h"

#include <stdlib.h>

enum { M_FENCE, M_SHARED, M_EXCL, M_LOCK_ALL, M_NMODES };
static const char *mode_name[] = {"fence", "lock shared", "lock exclusive", "lock_all"};

static int me, np;
static MPI_Win win;

static void access_open(int mode, int t)
{
    if (mode == M_SHARED || mode == M_EXCL)
        MPI_OK(MPI_Win_lock(mode == M_SHARED ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE, t, 0, win));
    else if (mode == M_LOCK_ALL)
        MPI_OK(MPI_Win_lock_all(0, win));
}

static void access_close(int mode, int t)
{
    if (mode == M_FENCE)
        MPI_OK(MPI_Win_fence(0, win));
    else if (mode == M_LOCK_ALL)
        MPI_OK(MPI_Win_unlock_all(win));
    else
        MPI_OK(MPI_Win_unlock(t, win));
}

/* Rounds of one mode; returns how many reads saw another round's value. */
static int run(int mode, int iter)
{
    int t = (me + np / 2) % np;                       /* where this rank puts */
    int src = (me ^ 1) < np ? me ^ 1 : (me + 1) % np; /* whose put this rank reads */
    int st = (src + np / 2) % np;                     /* ... at that rank's target */
    int bad = 0;

    if (mode == M_FENCE)
        MPI_OK(MPI_Win_fence(0, win));
    for (long i = 0; i < iter; i++) {
        long v = i, got = -1;
        access_open(mode, t);
        MPI_OK(MPI_Put(&v, 1, MPI_LONG, t, me, 1, MPI_LONG, win));
        access_close(mode, t);
        if (mode != M_FENCE)
            MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
        access_open(mode, st);
        MPI_OK(MPI_Get(&got, 1, MPI_LONG, st, src, 1, MPI_LONG, win));
        access_close(mode, st);
        if (mode != M_FENCE) /* the next round's put comes after every read of this one */
            MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
        if (got != i && bad++ < 3)
            CHECK(0, "%s round %ld: rank %d's put at rank %d read as %ld", mode_name[mode], i, src,
                  st, got);
    }
    if (mode == M_FENCE)
        MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    return bad;
}

int main(int argc, char **argv)
{
    const char *e = getenv("ITER");
    int iter = e != NULL ? atoi(e) : 1000;
    long *mem;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_OK(MPI_Win_allocate(np * (MPI_Aint)sizeof(long), sizeof(long), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &mem, &win));
    for (int i = 0; i < np; i++)
        mem[i] = -1;
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int m = 0; m < M_NMODES; m++) {
        int bad = run(m, iter);
        CHECK(bad == 0, "%s: %d of %d reads saw another round's value", mode_name[m], bad, iter);
    }
    MPI_OK(MPI_Win_free(&win));
    return rt_finish("sync_visible");
}
