/*
 * test_label_single.c - every call of the single-window form: li_begin,
 * li_nprocs, li_pid, li_register, li_init (before or, with --late-init, after
 * li_commit), li_commit, li_put, li_get, li_sync, li_barrier, li_deregister,
 * li_end. Checks memory contents after every superstep.
 * Run: mpiexec -n 2|4 test_label_single [--late-init]   (or env LT_LATE_INIT=1)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lt.h"

#define NA 64
#define NB 32
#define ND 16

int main(int argc, char **argv)
{
    const char *env = getenv("LT_LATE_INIT");
    int late_init = (argc > 1 && strcmp(argv[1], "--late-init") == 0)
                    || (env != NULL && strcmp(env, "1") == 0);
    static int a[NA];
    static double b[NB];
    static int64_t d[ND];
    double bget[NB];
    int mpi_size, mpi_rank, p, me, ok, rc, right, left, status;

    rc = li_begin(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    lt_check(rc == LI_OK, "li_begin returns LI_OK");
    p = li_nprocs();
    me = li_pid();
    lt_check(p == mpi_size && me == mpi_rank, "li_nprocs/li_pid match MPI (%d ranks)", p);
    if (mpi_rank == 0)
        printf("info: li_init %s li_commit\n", late_init ? "after" : "before");
    right = (me + 1) % p;
    left = (me + p - 1) % p;

    for (int i = 0; i < NA; i++)
        a[i] = -1;
    for (int i = 0; i < NB; i++)
        b[i] = me * 1000.0 + i;
    rc = li_register(a, sizeof(a));
    ok = rc == LI_OK;
    rc = li_register(b, sizeof(b));
    ok &= rc == LI_OK;
    lt_check(ok, "li_register of two areas");
    if (!late_init)
        lt_check(li_init() == LI_OK, "li_init before li_commit");
    lt_check(li_commit() == LI_OK, "li_commit of two areas");
    if (late_init)
        lt_check(li_init() == LI_OK, "li_init after li_commit");

    /* total exchange: rank r writes r+100 into a[r] of everyone, and r+200 into
     * a[16+r] through an address inside the area */
    int v1 = me + 100, v2 = me + 200;
    ok = 1;
    for (int q = 0; q < p; q++) {
        ok &= li_put(q, &v1, a, (size_t)me * sizeof(int), sizeof(int)) == LI_OK;
        ok &= li_put(q, &v2, &a[16], (size_t)me * sizeof(int), sizeof(int)) == LI_OK;
    }
    lt_check(ok, "li_put to every rank (area start and inner address) returns LI_OK");
    lt_check(li_sync() == LI_OK, "li_sync completes the puts");
    ok = 1;
    for (int q = 0; q < p; q++)
        ok &= a[q] == q + 100 && a[16 + q] == q + 200;
    for (int i = p; i < 16; i++)
        ok &= a[i] == -1;
    for (int i = 16 + p; i < NA; i++)
        ok &= a[i] == -1;
    lt_check(ok, "after li_sync every rank holds all puts, nothing else changed");

    memset(bget, 0, sizeof(bget));
    rc = li_get(right, b, 0, bget, sizeof(b));
    lt_check(rc == LI_OK, "li_get of a whole area from the right neighbour");
    rc = li_get(right, &b[4], 8 * sizeof(double), &bget[0], 2 * sizeof(double));
    lt_check(rc == LI_OK, "li_get through an inner address plus offset");
    lt_check(li_sync() == LI_OK, "li_sync completes the gets");
    ok = bget[0] == right * 1000.0 + 12 && bget[1] == right * 1000.0 + 13;
    for (int i = 2; i < NB; i++)
        ok &= bget[i] == right * 1000.0 + i;
    lt_check(ok, "li_get results hold the neighbour's values");

    /* a second registration into the already-open single window */
    for (int i = 0; i < ND; i++)
        d[i] = 0;
    lt_check(li_register(d, sizeof(d)) == LI_OK && li_commit() == LI_OK,
             "li_register + li_commit of a third area while the epoch is open");
    int64_t v3 = ((int64_t)me << 40) | 7;
    rc = li_put(left, &v3, d, (size_t)me % ND * sizeof(int64_t), sizeof(v3));
    ok = rc == LI_OK;
    int v4 = me + 300;
    ok &= li_put(right, &v4, a, (size_t)(32 + me) * sizeof(int), sizeof(int)) == LI_OK;
    ok &= li_put(right, &v4, a, 0, 0) == LI_OK;
    lt_check(ok, "puts to two areas in one superstep (and a 0-byte put) return LI_OK");
    lt_check(li_sync() == LI_OK, "one li_sync completes both areas");
    ok = d[right % ND] == (((int64_t)right << 40) | 7) && a[32 + left] == left + 300;
    lt_check(ok, "both areas hold their data after one li_sync");

    lt_check(li_barrier() == LI_OK, "li_barrier");

    lt_check(li_deregister(d) == LI_OK, "li_deregister of the third area");
    rc = li_put(right, &v3, d, 0, sizeof(v3));
    lt_check(rc == LI_ERR_NOTREG, "li_put after li_deregister returns LI_ERR_NOTREG (%d)", rc);
    lt_check(li_deregister(b) == LI_OK, "li_deregister of the second area");
    lt_check(li_sync() == LI_OK, "li_sync with the remaining area");

    status = lt_finish(mpi_rank);
    rc = li_end();
    if (rc != LI_OK) {
        printf("rank %d: FAIL: li_end returned %d\n", mpi_rank, rc);
        status = 1;
    } else if (mpi_rank == 0) {
        printf("PASS: li_end (local check)\n");
    }
    if (li_nprocs() != LI_ERR_STATE || li_pid() != LI_ERR_STATE) {
        printf("rank %d: FAIL: li_nprocs/li_pid after li_end\n", mpi_rank);
        status = 1;
    } else if (mpi_rank == 0) {
        printf("PASS: li_nprocs/li_pid return LI_ERR_STATE after li_end (local check)\n");
    }
    return status;
}
