/*
 * test_label_labeled.c - every call of the labeled form: lio_register,
 * lio_init (before and after lio_commit), lio_commit, lio_put, lio_get,
 * lio_sync (per area, independently), lio_barrier, lio_deregister, plus many
 * areas (64 windows) resolved through the address table and li_end freeing
 * what is left. Checks memory contents after every sync.
 * Run: mpiexec -n 2|4 test_label_labeled
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lt.h"

#define N0 128
#define N1 64
#define NMANY 64

static char a0[N0];
static int a1[N1];
static int many[NMANY][8];

int main(int argc, char **argv)
{
    int mpi_rank, p, me, ok, rc, right, left, status;
    int got[N1];

    rc = li_begin(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    lt_check(rc == LI_OK, "li_begin returns LI_OK");
    p = li_nprocs();
    me = li_pid();
    right = (me + 1) % p;
    left = (me + p - 1) % p;
    memset(a0, '.', sizeof(a0));
    for (int i = 0; i < N1; i++)
        a1[i] = me * 10000 + i;

    lt_check(lio_register(a0, sizeof(a0)) == LI_OK && lio_register(a1, sizeof(a1)) == LI_OK,
             "lio_register of two areas");
    lt_check(lio_init(a0) == LI_OK, "lio_init(a0) before lio_commit");
    lt_check(lio_commit() == LI_OK, "lio_commit creates one window per area");
    lt_check(lio_init(a1) == LI_OK, "lio_init(a1) after lio_commit");

    /* every rank writes its letter into a0[me] and a0[64 + me] (inner address) */
    char c = (char)('A' + me);
    ok = 1;
    for (int q = 0; q < p; q++) {
        ok &= lio_put(q, &c, a0, (size_t)me, 1) == LI_OK;
        ok &= lio_put(q, &c, a0 + 60, (size_t)(4 + me), 1) == LI_OK;
    }
    lt_check(ok, "lio_put to every rank, area start and inner address");
    lt_check(lio_sync(a0) == LI_OK, "lio_sync(a0)");
    ok = 1;
    for (int q = 0; q < p; q++)
        ok &= a0[q] == 'A' + q && a0[64 + q] == 'A' + q;
    for (int i = p; i < 64; i++)
        ok &= a0[i] == '.';
    lt_check(ok, "a0 holds every rank's letter after lio_sync(a0)");

    /* a sync through an inner address resolves to the same window */
    memset(got, 0, sizeof(got));
    lt_check(lio_get(left, a1, 0, got, sizeof(a1)) == LI_OK, "lio_get of all of a1 from left");
    lt_check(lio_sync(&a1[N1 / 2]) == LI_OK, "lio_sync through an inner address of a1");
    ok = 1;
    for (int i = 0; i < N1; i++)
        ok &= got[i] == left * 10000 + i;
    lt_check(ok, "lio_get result holds the left neighbour's a1");

    /* independent windows: a put to a1 is completed by lio_sync(a1), with a0 synced too */
    int v = -me - 1;
    ok = lio_put(right, &v, a1, 5 * sizeof(int), sizeof(int)) == LI_OK;
    ok &= lio_put(right, &c, a0, 127, 1) == LI_OK;
    lt_check(ok, "puts to both areas in one superstep");
    lt_check(lio_sync(a0) == LI_OK && lio_sync(a1) == LI_OK, "lio_sync(a0) then lio_sync(a1)");
    lt_check(a1[5] == -left - 1 && a0[127] == 'A' + left, "both areas hold the new data");

    lt_check(lio_barrier() == LI_OK, "lio_barrier");

    /* many areas: each its own window, found by address */
    ok = 1;
    for (int k = 0; k < NMANY; k++) {
        for (int i = 0; i < 8; i++)
            many[k][i] = 0;
        ok &= lio_register(many[k], sizeof(many[k])) == LI_OK;
    }
    ok &= lio_commit() == LI_OK;
    for (int k = 0; k < NMANY && ok; k++)
        ok &= lio_init(many[k]) == LI_OK;
    lt_check(ok, "register, commit and init %d more areas", NMANY);
    /* origin buffers must stay unchanged until the sync: one value per put */
    static int vals[NMANY];
    ok = 1;
    for (int k = 0; k < NMANY; k++) {
        vals[k] = me * 1000 + k;
        ok &= lio_put(right, &vals[k], &many[k][k % 8], 0, sizeof(int)) == LI_OK;
    }
    for (int k = 0; k < NMANY; k++)
        ok &= lio_sync(many[k]) == LI_OK;
    lt_check(ok, "one put and one lio_sync per area");
    ok = 1;
    for (int k = 0; k < NMANY; k++)
        for (int i = 0; i < 8; i++)
            ok &= many[k][i] == (i == k % 8 ? left * 1000 + k : 0);
    lt_check(ok, "each area received exactly its own put");
    ok = 1;
    for (int k = NMANY - 1; k >= 0; k--)
        ok &= lio_deregister(many[k]) == LI_OK;
    lt_check(ok, "lio_deregister of the %d areas in reverse order", NMANY);

    lt_check(lio_deregister(a0) == LI_OK, "lio_deregister(a0)");
    rc = lio_put(right, &c, a0, 0, 1);
    lt_check(rc == LI_ERR_NOTREG, "lio_put after lio_deregister returns LI_ERR_NOTREG (%d)", rc);
    rc = lio_sync(a0);
    lt_check(rc == LI_ERR_NOTREG, "lio_sync after lio_deregister returns LI_ERR_NOTREG (%d)", rc);
    lt_check(lio_put(right, &v, a1, 0, sizeof(int)) == LI_OK && lio_sync(a1) == LI_OK
             && a1[0] == -left - 1, "a1 still works after a0 is gone");

    status = lt_finish(mpi_rank);
    rc = li_end();
    if (rc != LI_OK) {
        printf("rank %d: FAIL: li_end (frees a1's window) returned %d\n", mpi_rank, rc);
        status = 1;
    } else if (mpi_rank == 0) {
        printf("PASS: li_end frees the remaining window (local check)\n");
    }
    return status;
}
