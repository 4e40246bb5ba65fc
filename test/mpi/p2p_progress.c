/*
 * p2p_progress - MPI's progress rule across librma's RMA calls: a rank that started a send
 * (MPI_Isend of 1 MiB: a rendezvous, whose data moves only while the sender's MPI library
 * runs) and then waits inside an RMA call for its peer, while the peer waits in MPI_Recv for
 * that message before it makes its part of the call (MPI-4.0 section 3.7.4: the send
 * completes once the receive is posted, whatever the sender does). For each of
 *
 *   fence  rank 0 in MPI_Win_fence, rank 1 receives, then fences
 *   free   rank 0 in MPI_Win_free, rank 1 receives, then frees
 *   pscw   rank 0 in MPI_Win_wait (exposing to rank 1), rank 1 in an access epoch receives,
 *          then completes it
 *   lock   rank 1 holds an exclusive lock on its own window; rank 0 in MPI_Win_lock on it,
 *          rank 1 receives, then unlocks
 *
 * and every window flavor: each hung with librma's waits, which drove only
 * librma's own transport (MPICH's own RMA passes). The message is checked byte by byte.
 * 2 ranks.
 */
#include "rmatest.h"

#define MSG (1 << 20)

static int rank;
static unsigned char *msg;

static void fill(int round)
{
    for (int i = 0; i < MSG; i++)
        msg[i] = (unsigned char)(i * 13 + round);
}

static void check(int round, const char *what)
{
    int bad = 0;

    for (int i = 0; i < MSG; i++)
        bad += msg[i] != (unsigned char)(i * 13 + round);
    CHECK(bad == 0, "%s: %d of %d bytes of the message wrong", what, bad, MSG);
}

/* rank 0 sends round's message, then calls sync; rank 1 receives it, then calls sync */
static void across(int round, const char *what, void (*sync0)(MPI_Win *), void (*sync1)(MPI_Win *),
                   MPI_Win *win)
{
    MPI_Request req;

    if (rank == 0) {
        fill(round);
        MPI_OK(MPI_Isend(msg, MSG, MPI_BYTE, 1, round, MPI_COMM_WORLD, &req));
        sync0(win);
        MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else {
        memset(msg, 0, MSG);
        MPI_OK(MPI_Recv(msg, MSG, MPI_BYTE, 0, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        check(round, what);
        sync1(win);
    }
}

static void fence(MPI_Win *win)
{
    MPI_OK(MPI_Win_fence(0, *win));
}

static void win_free(MPI_Win *win)
{
    MPI_OK(MPI_Win_free(win));
}

static MPI_Group other(void)
{
    MPI_Group world, g;
    int peer = 1 - rank;

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &peer, &g);
    MPI_Group_free(&world);
    return g;
}

static void pscw_wait(MPI_Win *win)
{
    MPI_OK(MPI_Win_wait(*win));
}

static void pscw_complete(MPI_Win *win)
{
    MPI_OK(MPI_Win_complete(*win));
}

static void lock_other(MPI_Win *win)
{
    MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, *win));
    MPI_OK(MPI_Win_unlock(1, *win));
}

static void unlock_self(MPI_Win *win)
{
    MPI_OK(MPI_Win_unlock(1, *win));
}

static void run(int flavor)
{
    rt_win_t w;
    MPI_Group g;
    int round = flavor * 4;

    rt_win_open(&w, flavor, 4096, 1);
    MPI_OK(MPI_Win_fence(0, w.win));
    across(round, "fence", fence, fence, &w.win);
    MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));

    g = other();
    if (rank == 0) {
        MPI_OK(MPI_Win_post(g, 0, w.win));
    } else {
        MPI_OK(MPI_Win_start(g, 0, w.win));
    }
    across(round + 1, "pscw", pscw_wait, pscw_complete, &w.win);
    MPI_Group_free(&g);

    if (rank == 1)
        MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, w.win));
    MPI_Barrier(MPI_COMM_WORLD); /* rank 1 holds the lock */
    across(round + 2, "lock", lock_other, unlock_self, &w.win);

    MPI_Barrier(MPI_COMM_WORLD);
    if (flavor == RT_DYNAMIC && rank == 0)
        MPI_OK(MPI_Win_detach(w.win, w.mem));
    across(round + 3, "free", win_free, win_free, &w.win);
    if (flavor == RT_CREATE || flavor == RT_DYNAMIC)
        free(w.mem);
}

int main(int argc, char **argv)
{
    int nprocs;

    rt_init(&argc, &argv);
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs != 2) {
        CHECK(0, "runs with 2 ranks, not %d", nprocs);
        return rt_finish("p2p_progress");
    }
    msg = malloc(MSG);
    rt_each_flavor(run);
    free(msg);
    return rt_finish("p2p_progress");
}
