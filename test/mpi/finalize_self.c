/*
 * finalize_self - a library's clean-up at MPI_Finalize (MPI-4.0 11.2.4): MPI_Finalize first
 * frees MPI_COMM_SELF, running the delete callbacks of its attributes in the reverse order
 * of their setting, before any other part of MPI is affected. Two attributes here: the
 * second set (deleted first) gets from the next rank's window A, puts to its window B and
 * frees A; the first set (deleted second) checks the previous rank's put in its own B and
 * frees B. A third window is never freed (librma frees it at the end). Every rank prints
 * what it checked after MPI_Finalize and exits 1 on a failure.
 *
 * Before, librma's MPI_Finalize freed the windows and stopped its transport before calling
 * MPICH's, so the callbacks found their windows gone ("not a valid window") and the run
 * aborted (hp54).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static MPI_Win win_a, win_b, win_c;
static int rank, nprocs, order, checks, fails;

#define CHK(cond, ...)                                                                             \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            fails++;                                                                               \
            fprintf(stderr, "[%d] FAIL %s:%d: ", rank, __FILE__, __LINE__);                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

/* Deleted first (set last): a get from win_a and a put to the next rank's win_b, then
 * win_a's free. */
static int delete_a(MPI_Comm comm, int keyval, void *val, void *extra)
{
    int peer = (rank + 1) % nprocs, v = -1, mine = 1000 + rank;

    (void)comm, (void)keyval, (void)val, (void)extra;
    CHK(order++ == 0, "delete_a did not run first");
    CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, win_a) == MPI_SUCCESS, "lock on win_a");
    MPI_Get(&v, 1, MPI_INT, peer, 0, 1, MPI_INT, win_a);
    CHK(MPI_Win_unlock(peer, win_a) == MPI_SUCCESS, "unlock of win_a");
    CHK(v == peer * 10, "get from rank %d read %d, expected %d", peer, v, peer * 10);
    CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, win_b) == MPI_SUCCESS, "lock on win_b");
    MPI_Put(&mine, 1, MPI_INT, peer, 0, 1, MPI_INT, win_b);
    CHK(MPI_Win_unlock(peer, win_b) == MPI_SUCCESS, "unlock of win_b");
    CHK(MPI_Win_free(&win_a) == MPI_SUCCESS, "MPI_Win_free of win_a");
    return MPI_SUCCESS;
}

/* Deleted second: the previous rank's put landed in this rank's win_b, then win_b's free. */
static int delete_b(MPI_Comm comm, int keyval, void *val, void *extra)
{
    int from = (rank + nprocs - 1) % nprocs, v = -1;

    (void)comm, (void)keyval, (void)val, (void)extra;
    CHK(order++ == 1, "delete_b did not run second");
    MPI_Barrier(MPI_COMM_WORLD); /* every rank's put is done */
    CHK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win_b) == MPI_SUCCESS, "lock on win_b");
    MPI_Get(&v, 1, MPI_INT, rank, 0, 1, MPI_INT, win_b);
    CHK(MPI_Win_unlock(rank, win_b) == MPI_SUCCESS, "unlock of win_b");
    CHK(v == 1000 + from, "win_b read %d, expected rank %d's put %d", v, from, 1000 + from);
    CHK(MPI_Win_free(&win_b) == MPI_SUCCESS, "MPI_Win_free of win_b");
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int *a, *b, *c, ka, kb;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &a, &win_a);
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &b, &win_b);
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &c, &win_c);
    MPI_Win_set_errhandler(win_a, MPI_ERRORS_RETURN);
    MPI_Win_set_errhandler(win_b, MPI_ERRORS_RETURN);
    a[0] = rank * 10;
    *b = -1;
    *c = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_b, &kb, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, kb, NULL);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_a, &ka, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, ka, NULL);
    MPI_Finalize();
    CHK(order == 2, "%d of 2 delete callbacks ran", order);
    printf("[%d] finalize_self: %d checks, %d failed\n", rank, checks, fails);
    return fails ? 1 : 0;
}
