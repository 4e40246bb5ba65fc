/*
 * dyn_churn - a dynamic window's owner attaches and detaches regions while its peers read
 * another region of it that stays attached (MPI-4.0 section 12.2.4: a region may be
 * detached whenever no access to it is under way; nobody touches the churned ones).
 *
 * Rank 0 keeps 8 regions attached in a ring, MPI_Alloc_mem blocks (an attach of a new one,
 * then a detach and MPI_Free_mem of the oldest), for DYN_CHURN_MS (ms, default 1500); every other rank gets 4 longs of rank 0's stable region and flushes, in a
 * lock_all epoch, each read checked. An origin unpacked the UCX key of every region of each
 * table it fetched: the key of a block freed meanwhile made UCX 1.13 fail in shmat and die
 * in its own clean-up (SIGSEGV within a second where UCX maps the owner's memory: every
 * peer on UCX, or one rank per simulated node). 2 to 4 ranks.
 */
#include "rmatest.h"

static void churn(MPI_Win win, double secs)
{
    char *ring[8] = {0};
    double t0 = MPI_Wtime();

    for (int i = 0; MPI_Wtime() - t0 < secs; i++) {
        size_t len = 4096 + (size_t)((unsigned)i * 7919u % 64u) * 1024;
        int k = i % 8;

        if (ring[k] != NULL) {
            MPI_OK(MPI_Win_detach(win, ring[k]));
            MPI_OK(MPI_Free_mem(ring[k]));
        }
        MPI_OK(MPI_Alloc_mem((MPI_Aint)len, MPI_INFO_NULL, &ring[k]));
        memset(ring[k], 1, len);
        MPI_OK(MPI_Win_attach(win, ring[k], (MPI_Aint)len));
    }
    for (int k = 0; k < 8; k++) {
        if (ring[k] == NULL)
            continue;
        MPI_OK(MPI_Win_detach(win, ring[k]));
        MPI_OK(MPI_Free_mem(ring[k]));
    }
}

int main(int argc, char **argv)
{
    double secs;
    long *stable = malloc(4096);
    MPI_Aint at;
    MPI_Win win;
    int bad = 0, reads = 0;

    rt_init(&argc, &argv);
    secs = rt_env_int("DYN_CHURN_MS", 1500) / 1000.0;
    for (int k = 0; k < 512; k++)
        stable[k] = 1000 + k;
    MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    if (rt_rank == 0)
        MPI_OK(MPI_Win_attach(win, stable, 4096));
    MPI_Get_address(stable, &at);
    MPI_Bcast(&at, 1, MPI_AINT, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rt_rank == 0) {
        churn(win, secs);
    } else {
        double t0 = MPI_Wtime();

        MPI_OK(MPI_Win_lock_all(0, win));
        for (int i = 0; MPI_Wtime() - t0 < secs; i++, reads++) {
            long v[4] = {-1, -1, -1, -1};
            int k = i % 500;

            MPI_OK(MPI_Get(v, 4, MPI_LONG, 0, at + k * (MPI_Aint)sizeof(long), 4, MPI_LONG, win));
            MPI_OK(MPI_Win_flush(0, win));
            bad += v[0] != 1000 + k || v[3] != 1000 + k + 3;
        }
        MPI_OK(MPI_Win_unlock_all(win));
        CHECK(bad == 0, "%d of %d reads of the stable region wrong", bad, reads);
        CHECK(reads > 0, "no read made");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rt_rank == 0)
        MPI_OK(MPI_Win_detach(win, stable));
    MPI_OK(MPI_Win_free(&win));
    free(stable);
    return rt_finish("dyn_churn");
}
