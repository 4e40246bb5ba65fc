/*
 * pscw_blocked.c - the standard's example of post-start-complete-wait with a target that
 * blocks in a non-RMA call between MPI_Win_post and MPI_Win_wait (MPI-2, example of
 * Fig. 6.8): the target posts and waits in MPI_Recv; the origin starts, puts, completes,
 * then sends the message the target waits for. The origin's put can only begin once the
 * post arrived, so the post must reach it although the target makes no further RMA call.
 *
 * The first window of the process carries the first traffic between the two ranks, which
 * is where a post was once lost: the connection to the origin was still being set up and
 * the post waited for the target to drive its network again. FLAVOR (environment: 0 create,
 * 1 allocate, 3 dynamic; default 0) picks the window; ROUNDS (default 3) repeats it on
 * fresh windows. Rank k < np/2 is the origin of target k + np/2: on the other node in the
 * twonode topology; with an odd np the last rank only takes part in the collectives.
 */
#include "rmatest.h"

#include <stdlib.h>

#define COUNT 4096 /* ints: large enough that the put takes the transport's long path too */

static void round_of(int flavor, int me, int np, int round)
{
    rt_win_t w;
    int half = np / 2, origin = me < half, peer = origin ? me + half : me - half, token = 0;
    int *src = malloc(COUNT * sizeof(int));
    MPI_Aint base = 0; /* the target's displacement of its memory */
    MPI_Group world, pg;

    for (int i = 0; i < COUNT; i++)
        src[i] = round * COUNT + i + 1;
    rt_win_open(&w, flavor, COUNT * sizeof(int), sizeof(int));
    if (flavor == RT_DYNAMIC && me != 0) /* rt_win_open attached rank 0's memory only */
        MPI_OK(MPI_Win_attach(w.win, w.mem, COUNT * sizeof(int)));
    if (flavor == RT_DYNAMIC) { /* each target's own address */
        MPI_Aint mine;
        MPI_Get_address(w.mem, &mine);
        if (me < 2 * half)
            MPI_OK(MPI_Sendrecv(&mine, 1, MPI_AINT, peer, 0, &base, 1, MPI_AINT, peer, 0,
                                MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    if (me < 2 * half) {
        MPI_Group_incl(world, 1, &peer, &pg);
        if (origin) {
            MPI_OK(MPI_Win_start(pg, 0, w.win));
            MPI_OK(MPI_Put(src, COUNT, MPI_INT, peer, base, COUNT, MPI_INT, w.win));
            MPI_OK(MPI_Win_complete(w.win));
            token = round + 100;
            MPI_OK(MPI_Send(&token, 1, MPI_INT, peer, 7, MPI_COMM_WORLD));
        } else {
            int *mem = w.mem, bad = 0;
            MPI_OK(MPI_Win_post(pg, 0, w.win));
            MPI_OK(MPI_Recv(&token, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            MPI_OK(MPI_Win_wait(w.win));
            CHECK(token == round + 100, "%s round %d: received %d", rt_flavor_name[flavor], round,
                  token);
            for (int i = 0; i < COUNT; i++)
                bad += mem[i] != round * COUNT + i + 1;
            CHECK(bad == 0, "%s round %d: %d of %d elements put by rank %d are wrong",
                  rt_flavor_name[flavor], round, bad, COUNT, peer);
        }
        MPI_Group_free(&pg);
    }
    MPI_Group_free(&world);
    if (flavor == RT_DYNAMIC && me != 0)
        MPI_OK(MPI_Win_detach(w.win, w.mem));
    rt_win_close(&w);
    free(src);
}

int main(int argc, char **argv)
{
    int me, np, flavor, rounds;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    flavor = rt_env_int("FLAVOR", RT_CREATE);
    rounds = rt_env_int("ROUNDS", 3);
    if (flavor < 0 || flavor >= RT_NFLAVORS || rt_flavor_skipped(flavor))
        return rt_finish("pscw_blocked");
    for (int r = 0; r < rounds; r++)
        round_of(flavor, me, np, r);
    return rt_finish("pscw_blocked");
}
