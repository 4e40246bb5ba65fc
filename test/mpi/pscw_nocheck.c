/*
 * pscw_nocheck - PSCW epochs with MPI_MODE_NOCHECK (post and start, the post ordered before
 * the start by an MPI_Barrier) alternate with plain ones between the same pairs. In a plain
 * epoch the target stores a mark into its window before MPI_Win_post (no exposure epoch is
 * open: the store is its own), so an origin's put that did not wait for that post lands
 * before the mark and is overwritten. Before, a NOCHECK start consumed no post: the next
 * plain start found the NOCHECK epoch's post unconsumed and went ahead at once.
 * Ranks pair up (even origin, odd target; an odd count leaves the last rank out).
 * PSCW_NOCHECK_EPOCHS (20) epochs.
 */
#include "rmatest.h"

#include <unistd.h>

int main(int argc, char **argv)
{
    const char *s = getenv("PSCW_NOCHECK_EPOCHS");
    int epochs = s != NULL ? atoi(s) : 20, rank, np, *mem, peer, in;
    MPI_Group world, group;
    MPI_Win win;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_OK(
        MPI_Win_allocate(64 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    memset(mem, 0, 64 * sizeof(int));
    peer = rank ^ 1;
    in = peer < np;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &peer, &group);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int e = 0; e < epochs; e++) {
        int nocheck = e % 2 == 0, v = 100 + e;
        if (nocheck) {
            if (in && rank % 2 == 1)
                MPI_OK(MPI_Win_post(group, MPI_MODE_NOCHECK, win));
            MPI_Barrier(MPI_COMM_WORLD); /* every post made before any start */
        }
        if (!in) {
            /* left out */
        } else if (rank % 2 == 0) {
            MPI_OK(MPI_Win_start(group, nocheck ? MPI_MODE_NOCHECK : 0, win));
            MPI_OK(MPI_Put(&v, 1, MPI_INT, peer, 0, 1, MPI_INT, win));
            MPI_OK(MPI_Win_complete(win));
        } else {
            if (!nocheck) {
                usleep(20000); /* an origin that does not wait for the post puts meanwhile */
                mem[0] = -1;
                MPI_OK(MPI_Win_post(group, 0, win));
            }
            MPI_OK(MPI_Win_wait(win));
            CHECK(mem[0] == v, "epoch %d (%s): rank %d's window holds %d after MPI_Win_wait", e,
                  nocheck ? "MPI_MODE_NOCHECK" : "plain", rank, mem[0]);
        }
        if (nocheck)
            MPI_Barrier(MPI_COMM_WORLD); /* the next NOCHECK post after this epoch's wait */
    }
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    MPI_OK(MPI_Win_free(&win));
    return rt_finish("pscw_nocheck");
}
