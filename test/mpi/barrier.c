/*
 * barrier - MPI_Barrier under librma: it waits for every rank, keeps its messages apart from
 * the program's, and works on every kind of communicator.
 *
 * librma's barrier serves off-node peers while it waits, as a dissemination barrier of
 * zero-byte messages on a duplicate of the communicator (netmod/ucx/nm_ucx.c). Checked here:
 * - nobody leaves before the last rank enters: each rank in turn arrives 100 ms late, and
 *   the others must have waited for it;
 * - the program's own messages on the same communicator, with wildcard source and tag,
 *   posted before the barrier and sent after it, never match the barrier's;
 * - a window with off-node peers is in use (UCX runs), and its data is right after the
 *   barriers that order it;
 * - split, duplicated and freed communicators, a one-rank communicator, and an
 *   intercommunicator (whose barrier joins its two groups);
 * - MPI_Comm_free of a communicator after its barriers frees the duplicate too (a leak or a
 *   double free shows at MPI_Finalize).
 */
#include <time.h>

#include "rmatest.h"

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One barrier on comm, entered 100 ms late when `late`: the time this rank left it; in
 * *late_entered, when the late rank (root in bc) entered it. */
static double late_barrier(MPI_Comm comm, int late, MPI_Comm bc, int root, double *late_entered)
{
    double left;

    if (late) {
        struct timespec d = {0, 100 * 1000 * 1000};
        nanosleep(&d, NULL);
    }
    *late_entered = now();
    MPI_OK(MPI_Barrier(comm));
    left = now();
    MPI_OK(MPI_Bcast(late_entered, 1, MPI_DOUBLE, root, bc));
    return left;
}

/* rank `late` enters 100 ms after the others: every rank must leave after it entered */
static void check_waits(MPI_Comm comm, const char *what)
{
    int rank, size;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int late = 0; late < size; late++) {
        double late_entered, left;
        MPI_OK(MPI_Barrier(comm));
        left = late_barrier(comm, rank == late, comm, late, &late_entered);
        CHECK(left >= late_entered, "%s: rank %d left the barrier %.3f ms before rank %d entered",
              what, rank, (late_entered - left) * 1e3, late);
    }
}

/* a wildcard receive posted before barriers, and a message sent after them: the barrier's
 * messages on the same communicator must not be taken by it, nor this one by a barrier */
static void check_apart(MPI_Comm comm, const char *what)
{
    int rank, size, got = -1, n = -1, v;
    MPI_Request rq;
    MPI_Status st;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_OK(MPI_Irecv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &rq));
    for (int i = 0; i < 10; i++)
        MPI_OK(MPI_Barrier(comm));
    v = 1000 + rank;
    MPI_OK(MPI_Send(&v, 1, MPI_INT, (rank + 1) % size, 5, comm));
    MPI_OK(MPI_Wait(&rq, &st));
    MPI_OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 1 && got == 1000 + (rank - 1 + size) % size &&
              st.MPI_SOURCE == (rank - 1 + size) % size && st.MPI_TAG == 5,
          "%s: the wildcard receive got %d element(s), %d, from %d with tag %d", what, n, got,
          st.MPI_SOURCE, st.MPI_TAG);
    MPI_OK(MPI_Barrier(comm));
}

int main(int argc, char **argv)
{
    int rank, nprocs;
    long *mem;
    MPI_Win win;
    MPI_Comm half, dup, self, inter;

    rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    /* a window on every rank: off node, UCX runs and the barrier serves */
    MPI_OK(MPI_Win_allocate((MPI_Aint)nprocs * sizeof(long), sizeof(long), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &mem, &win));
    for (int i = 0; i < nprocs; i++)
        mem[i] = -1;
    MPI_OK(MPI_Win_lock_all(0, win));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int round = 0; round < 20; round++) {
        long v = rank * 100 + round; /* read by the puts until the flush */

        for (int t = 0; t < nprocs; t++)
            MPI_OK(MPI_Put(&v, 1, MPI_LONG, t, rank, 1, MPI_LONG, win));
        MPI_OK(MPI_Win_flush_all(win));
        MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_OK(MPI_Win_sync(win));
        for (int i = 0; i < nprocs; i++)
            CHECK(mem[i] == i * 100 + round, "round %d: slot %d holds %ld", round, i, mem[i]);
        MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    }
    MPI_OK(MPI_Win_unlock_all(win));

    check_waits(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    check_apart(MPI_COMM_WORLD, "MPI_COMM_WORLD");

    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
    check_waits(half, "split");
    check_apart(half, "split");
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    check_apart(dup, "dup");
    MPI_OK(MPI_Comm_free(&dup));
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup)); /* a new one after a freed one */
    check_waits(dup, "dup again");
    MPI_OK(MPI_Comm_free(&dup));
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &self));
    for (int i = 0; i < 5; i++)
        MPI_OK(MPI_Barrier(self));
    MPI_OK(MPI_Comm_free(&self));
    MPI_OK(MPI_Barrier(MPI_COMM_SELF));

    if (nprocs >= 2) { /* the even and the odd ranks, joined */
        MPI_OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &inter));
        double late_entered,
            left = late_barrier(inter, rank == 1, MPI_COMM_WORLD, 1, &late_entered);
        /* the other group waits for every rank of this one; its own group need not */
        CHECK(rank % 2 == 1 || left >= late_entered,
              "intercommunicator: rank %d left %.3f ms before rank 1 entered", rank,
              (late_entered - left) * 1e3);
        MPI_OK(MPI_Comm_free(&inter));
    }
    MPI_OK(MPI_Comm_free(&half));
    MPI_OK(MPI_Win_free(&win));
    return rt_finish("barrier");
}
