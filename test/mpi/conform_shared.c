/*
 * conform_shared - MPI_Win_shared_query on MPI_Win_allocate_shared windows where some ranks
 * have no memory (issue 11, conformance), contiguous and with alloc_shared_noncontig=true:
 *  - a rank with size 0 gives size 0 and base NULL, a rank with memory its size, its
 *    disp_unit and its base (the caller's own base when it is that rank);
 *  - MPI_PROC_NULL gives the segment of the lowest rank with size > 0 (its size, disp_unit
 *    and the same base as querying that rank);
 *  - when every rank has size 0, MPI_PROC_NULL gives size 0;
 *  - for every rank with size > 0 the pointer reads what the owner stored (before
 *    MPI_Win_sync + barrier) and the owner sees stores made through it.
 * Layouts: odd ranks empty (rank 0 has memory), even ranks empty (the lowest rank with memory
 * is 1), all empty. MPI-4.1's shared_query on create and allocate windows: test/mpi/shared.
 * The shared windows are made on the ranks of this node (MPI_COMM_TYPE_SHARED), as the
 * standard asks, so the test runs in every topology (ranks below are node ranks).
 */
#include "rmatest.h"

#include <stdint.h>

#define NI 16 /* ints per non-empty segment (at least one per rank, for the stores) */

static int rank, nprocs; /* in MPI_COMM_WORLD */
static int nrank, nnp;   /* in the node's communicator, where the shared windows are */
static MPI_Comm node;

enum layout { ODD_EMPTY, EVEN_EMPTY, ALL_EMPTY };
static const char *layout_names[] = {"odd ranks empty", "even ranks empty", "all empty"};

static MPI_Aint size_of(enum layout l, int r)
{
    switch (l) {
    case ODD_EMPTY: return r % 2 ? 0 : (NI + 4 * r) * (MPI_Aint)sizeof(int);
    case EVEN_EMPTY: return r % 2 ? (NI + 4 * r) * (MPI_Aint)sizeof(int) : 0;
    default: return 0;
    }
}

static int du_of(int r)
{
    return r % 2 ? 8 : 4;
}

static int val(int owner, int i)
{
    return owner * 1000 + i;
}

static void run(enum layout l, int noncontig)
{
    char what[64];
    MPI_Info info = MPI_INFO_NULL;
    MPI_Win win;
    int *mine = NULL, **base = calloc(nnp, sizeof(int *));
    int lowest = -1;

    snprintf(what, sizeof(what), "%s%s", layout_names[l], noncontig ? ", noncontig" : "");
    for (int r = nnp - 1; r >= 0; r--)
        if (size_of(l, r) > 0)
            lowest = r;
    if (noncontig) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "alloc_shared_noncontig", "true");
    }
    MPI_OK(MPI_Win_allocate_shared(size_of(l, nrank), du_of(nrank), info, node, &mine, &win));
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));

    /* every rank, as seen from here */
    for (int r = 0; r < nnp; r++) {
        MPI_Aint sz = -1;
        int du = -1;
        int *b = (int *)(intptr_t)0x1; /* must be overwritten */
        MPI_OK(MPI_Win_shared_query(win, r, &sz, &du, &b));
        CHECK(sz == size_of(l, r), "%s: query(%d) size %ld, want %ld", what, r, (long)sz,
              (long)size_of(l, r));
        /* a rank without memory: MPICH gives the caller's disp_unit when every rank is empty */
        if (size_of(l, r) > 0)
            CHECK(du == du_of(r), "%s: query(%d) disp_unit %d, want %d", what, r, du, du_of(r));
        if (size_of(l, r) == 0)
            CHECK(b == NULL, "%s: query(%d) of a rank with size 0 gave base %p, want NULL", what, r,
                  (void *)b);
        else
            CHECK(b != NULL && b != (int *)(intptr_t)0x1, "%s: query(%d) base %p", what, r,
                  (void *)b);
        if (r == nrank && size_of(l, r) > 0)
            CHECK(b == mine, "%s: query(self) %p, own base %p", what, (void *)b, (void *)mine);
        base[r] = size_of(l, r) > 0 ? b : NULL;
    }

    /* MPI_PROC_NULL */
    {
        MPI_Aint sz = -1;
        int du = -1;
        int *b = (int *)(intptr_t)0x1;
        MPI_OK(MPI_Win_shared_query(win, MPI_PROC_NULL, &sz, &du, &b));
        if (lowest >= 0) {
            CHECK(sz == size_of(l, lowest) && du == du_of(lowest) && b == base[lowest],
                  "%s: query(MPI_PROC_NULL) gave size %ld disp_unit %d base %p, want rank %d's "
                  "%ld %d %p",
                  what, (long)sz, du, (void *)b, lowest, (long)size_of(l, lowest), du_of(lowest),
                  (void *)base[lowest]);
        } else {
            CHECK(sz == 0, "%s: query(MPI_PROC_NULL) with no memory anywhere gave size %ld", what,
                  (long)sz);
        }
    }

    /* load/store through the queried pointers */
    MPI_OK(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    for (MPI_Aint i = 0; i < size_of(l, nrank) / (MPI_Aint)sizeof(int); i++)
        mine[i] = val(nrank, i);
    MPI_OK(MPI_Win_sync(win));
    MPI_Barrier(node);
    MPI_OK(MPI_Win_sync(win));
    for (int r = 0; r < nnp; r++) {
        int bad = 0, n = size_of(l, r) / sizeof(int);
        if (!base[r])
            continue;
        for (int i = 0; i < n; i++)
            bad += base[r][i] != val(r, i);
        CHECK(bad == 0,
              "%s: %d of rank %d's %d ints read wrong through the queried pointer "
              "(first %d, want %d)",
              what, bad, r, n, base[r][0], val(r, 0));
    }
    MPI_Barrier(node);
    /* every rank stores into its own slot of every non-empty segment */
    for (int r = 0; r < nnp; r++)
        if (base[r])
            base[r][nrank] = -(nrank + 1) * 100 - r;
    MPI_OK(MPI_Win_sync(win));
    MPI_Barrier(node);
    MPI_OK(MPI_Win_sync(win));
    if (size_of(l, nrank) > 0)
        for (int s = 0; s < nnp; s++)
            CHECK(mine[s] == -(s + 1) * 100 - nrank,
                  "%s: rank %d's store into my segment: slot %d = %d, want %d", what, s, s, mine[s],
                  -(s + 1) * 100 - nrank);
    MPI_Barrier(node);
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_OK(MPI_Win_free(&win));
    free(base);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    node = rt_node_comm();
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nnp);
    CHECK(nnp <= NI, "at most %d ranks per node", NI);
    for (int l = ODD_EMPTY; l <= ALL_EMPTY; l++) {
        run(l, 0);
        run(l, 1);
    }
    return rt_finish("conform_shared");
}
