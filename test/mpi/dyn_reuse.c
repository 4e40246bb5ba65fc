/*
 * dyn_reuse - a dynamic window's target attaches a fresh block every round, at addresses
 * that blocks it detached and freed before held, while the origins stay in one
 * MPI_Win_lock_all epoch for the whole run and learn of each block by MPI_Send alone (no
 * MPI_Barrier, no new epoch). Each origin puts a pattern into its slice of the block,
 * flushes, gets it back, flushes, and answers; rank 0 then checks every slice in its
 * memory, detaches and frees the block. An origin that kept using its copy of the target's
 * old region (its mapping or key) wrote into freed memory: its get-back looked right and the
 * target's memory held zeros. Blocks come from MPI_Alloc_mem (DYN_REUSE_MALLOC=1: malloc),
 * DYN_REUSE_ROUNDS (60) rounds, sizes growing so that each new block overlaps old ones.
 */
#include "rmatest.h"

#include <stdint.h>

int main(int argc, char **argv)
{
    const char *s = getenv("DYN_REUSE_ROUNDS"), *m = getenv("DYN_REUSE_MALLOC");
    int rounds = s != NULL ? atoi(s) : 60, use_malloc = m != NULL && atoi(m) != 0;
    int rank, np;
    MPI_Win win;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    if (rank != 0)
        MPI_OK(MPI_Win_lock_all(0, win));
    for (int r = 0; r < rounds; r++) {
        size_t size = 512 + (size_t)r * 977 * (size_t)np; /* bytes of the block */
        size_t slice = size / (size_t)np;                 /* origin o's: [o * slice, +slice) */
        long msg[2];

        if (rank == 0) {
            char *blk = NULL;
            MPI_Aint at;
            if (use_malloc)
                blk = malloc(size);
            else
                MPI_OK(MPI_Alloc_mem((MPI_Aint)size, MPI_INFO_NULL, &blk));
            memset(blk, 0, size);
            MPI_OK(MPI_Win_attach(win, blk, (MPI_Aint)size));
            MPI_Get_address(blk, &at);
            msg[0] = (long)at;
            msg[1] = (long)size;
            for (int o = 1; o < np; o++)
                MPI_Send(msg, 2, MPI_LONG, o, 0, MPI_COMM_WORLD);
            for (int o = 1; o < np; o++)
                MPI_Recv(NULL, 0, MPI_INT, o, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int o = 1; o < np; o++) {
                size_t bad = 0, first = 0;
                for (size_t i = 0; i < slice; i++)
                    if (blk[o * slice + i] != (char)(r + o + i + 1) && bad++ == 0)
                        first = i;
                CHECK(bad == 0,
                      "round %d, block of %zu bytes: %zu bytes of origin %d's slice wrong, the "
                      "first at %zu holds %d",
                      r, size, bad, o, first, blk[o * slice + first]);
            }
            MPI_OK(MPI_Win_detach(win, blk));
            if (use_malloc)
                free(blk);
            else
                MPI_OK(MPI_Free_mem(blk));
        } else {
            char *put, *got;
            MPI_Aint d;
            MPI_Recv(msg, 2, MPI_LONG, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            put = malloc(slice);
            got = malloc(slice);
            for (size_t i = 0; i < slice; i++)
                put[i] = (char)(r + rank + i + 1);
            d = (MPI_Aint)msg[0] + (MPI_Aint)(rank * slice);
            MPI_OK(MPI_Put(put, (int)slice, MPI_CHAR, 0, d, (int)slice, MPI_CHAR, win));
            MPI_OK(MPI_Win_flush(0, win));
            memset(got, 0, slice);
            MPI_OK(MPI_Get(got, (int)slice, MPI_CHAR, 0, d, (int)slice, MPI_CHAR, win));
            MPI_OK(MPI_Win_flush(0, win));
            CHECK(memcmp(put, got, slice) == 0, "round %d: rank %d reads back something else", r,
                  rank);
            MPI_Send(NULL, 0, MPI_INT, 0, 1, MPI_COMM_WORLD);
            free(put);
            free(got);
        }
    }
    if (rank != 0)
        MPI_OK(MPI_Win_unlock_all(win));
    MPI_OK(MPI_Win_free(&win));
    return rt_finish("dyn_reuse");
}
