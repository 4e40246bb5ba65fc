/*
 * test_label_errors.c - every error of the labeled-window API, in both forms:
 * calls before li_begin, li_begin twice, bad arguments, overlapping areas, an
 * unregistered address, off+len past the area, a bad pid, a transfer before
 * commit, before init and after deregister, li_ and lio_ calls mixed on one
 * area, mismatched registration order and count across ranks (detected at
 * commit, no hang, state recovers), mismatched and non-start deregistration,
 * syncs before init, calls after li_end. Checks the exact code and that a
 * failed put wrote nothing. Messages on stderr are expected.
 * Run: mpiexec -n 2|4 test_label_errors
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lt.h"

#define NS 32

static unsigned char s_area[NS];    /* single form */
static unsigned char l_area[NS];    /* labeled form */
static int x_area[16], y_area[8];   /* mismatch tests */

static int all_equal(const unsigned char *b, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != v)
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    unsigned char src[2 * NS], dummy[8];
    int pre_nprocs, pre_pid, pre_reg, pre_put, pre_sync, pre_end;
    int mpi_rank, p, me, rc, rc2, ok, status, right;

    /* before li_begin: no MPI yet, so record now and report after li_begin */
    pre_nprocs = li_nprocs();
    pre_pid = li_pid();
    pre_reg = li_register(s_area, NS);
    pre_put = li_put(0, src, s_area, 0, 1);
    pre_sync = lio_sync(l_area);
    pre_end = li_end();

    rc = li_begin(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    lt_check(rc == LI_OK, "li_begin returns LI_OK");
    lt_check(pre_nprocs == LI_ERR_STATE && pre_pid == LI_ERR_STATE,
             "li_nprocs/li_pid before li_begin return LI_ERR_STATE");
    lt_check(pre_reg == LI_ERR_STATE && pre_put == LI_ERR_STATE && pre_sync == LI_ERR_STATE
             && pre_end == LI_ERR_STATE,
             "register/put/sync/end before li_begin return LI_ERR_STATE");
    rc = li_begin(&argc, &argv);
    lt_check(rc == LI_ERR_STATE, "li_begin twice returns LI_ERR_STATE (%d)", rc);
    p = li_nprocs();
    me = li_pid();
    right = (me + 1) % p;
    memset(src, 0xAB, sizeof(src));
    memset(s_area, 0x11, sizeof(s_area));
    memset(l_area, 0x22, sizeof(l_area));

    /* distinct, described codes */
    ok = 1;
    for (int c = LI_ERR_MPI; c <= LI_OK; c++) {
        for (int d = c + 1; d <= LI_OK; d++)
            ok &= strcmp(li_errstr(c), li_errstr(d)) != 0;
        ok &= strcmp(li_errstr(c), "unknown error") != 0;
    }
    lt_check(ok && strcmp(li_errstr(-99), "unknown error") == 0,
             "li_errstr gives a distinct text for every code");

    /* registration arguments */
    rc = li_register(NULL, 8);
    rc2 = lio_register(s_area, 0);
    lt_check(rc == LI_ERR_ARG && rc2 == LI_ERR_ARG, "register NULL / length 0 -> LI_ERR_ARG");
    rc = li_sync();
    lt_check(rc == LI_ERR_NOTINIT, "li_sync before li_init/li_commit -> LI_ERR_NOTINIT (%d)", rc);
    lt_check(li_register(s_area, NS) == LI_OK, "li_register(s_area)");
    rc = li_register(s_area + 8, 4);
    rc2 = lio_register(s_area + NS - 1, 10);
    lt_check(rc == LI_ERR_OVERLAP && rc2 == LI_ERR_OVERLAP,
             "registering inside / across a registered area -> LI_ERR_OVERLAP");
    rc = li_put(right, src, s_area, 0, 4);
    lt_check(rc == LI_ERR_NOTINIT, "li_put before li_commit -> LI_ERR_NOTINIT (%d)", rc);
    lt_check(li_commit() == LI_OK, "li_commit (no li_init yet)");
    rc = li_put(right, src, s_area, 0, 4);
    rc2 = li_get(right, s_area, 0, dummy, 4);
    lt_check(rc == LI_ERR_NOTINIT && rc2 == LI_ERR_NOTINIT,
             "li_put/li_get before li_init -> LI_ERR_NOTINIT");
    lt_check(lio_register(l_area, NS) == LI_OK, "lio_register(l_area)");
    rc = lio_put(right, src, l_area, 0, 4);
    lt_check(rc == LI_ERR_NOTINIT, "lio_put before lio_commit -> LI_ERR_NOTINIT (%d)", rc);
    lt_check(lio_commit() == LI_OK, "lio_commit (no lio_init yet)");
    rc = lio_put(right, src, l_area, 0, 4);
    rc2 = lio_sync(l_area);
    lt_check(rc == LI_ERR_NOTINIT && rc2 == LI_ERR_NOTINIT,
             "lio_put / lio_sync before lio_init -> LI_ERR_NOTINIT");
    lt_check(li_init() == LI_OK && lio_init(l_area) == LI_OK, "li_init and lio_init(l_area)");

    /* transfer errors, both forms */
    rc = li_put(right, src, dummy, 0, 1);
    rc2 = lio_put(right, src, dummy, 0, 1);
    lt_check(rc == LI_ERR_NOTREG && rc2 == LI_ERR_NOTREG,
             "put to an unregistered address -> LI_ERR_NOTREG");
    rc = li_get(right, dummy, 0, src, 1);
    rc2 = lio_get(right, dummy, 0, src, 1);
    lt_check(rc == LI_ERR_NOTREG && rc2 == LI_ERR_NOTREG,
             "get from an unregistered address -> LI_ERR_NOTREG");
    ok = li_put(right, src, s_area, NS, 1) == LI_ERR_RANGE;
    ok &= li_put(right, src, s_area, 0, NS + 1) == LI_ERR_RANGE;
    ok &= li_put(right, src, s_area + 16, 10, 7) == LI_ERR_RANGE;
    ok &= li_put(right, src, s_area, SIZE_MAX, 2) == LI_ERR_RANGE;
    ok &= li_get(right, s_area + 31, 0, dummy, 2) == LI_ERR_RANGE;
    lt_check(ok, "li_put/li_get with off+len past the area -> LI_ERR_RANGE (5 cases)");
    ok = lio_put(right, src, l_area, 1, NS) == LI_ERR_RANGE;
    ok &= lio_put(right, src, l_area + NS - 1, 1, 1) == LI_ERR_RANGE;
    ok &= lio_get(right, l_area, NS, dummy, 1) == LI_ERR_RANGE;
    lt_check(ok, "lio_put/lio_get with off+len past the area -> LI_ERR_RANGE (3 cases)");
    ok = li_put(-1, src, s_area, 0, 1) == LI_ERR_PID;
    ok &= li_put(p, src, s_area, 0, 1) == LI_ERR_PID;
    ok &= lio_get(p + 7, l_area, 0, dummy, 1) == LI_ERR_PID;
    lt_check(ok, "pid -1, nprocs, nprocs+7 -> LI_ERR_PID");
    ok = li_put(right, NULL, s_area, 0, 1) == LI_ERR_ARG;
    ok &= lio_get(right, l_area, 0, NULL, 1) == LI_ERR_ARG;
    lt_check(ok, "NULL local buffer with len > 0 -> LI_ERR_ARG");
    ok = lio_put(right, src, s_area, 0, 1) == LI_ERR_FORM;
    ok &= li_put(right, src, l_area, 0, 1) == LI_ERR_FORM;
    ok &= lio_sync(s_area) == LI_ERR_FORM;
    lt_check(ok, "lio_ call on an li_ area and the reverse -> LI_ERR_FORM");
    lt_check(li_sync() == LI_OK && lio_sync(l_area) == LI_OK, "li_sync and lio_sync succeed");
    lt_check(all_equal(s_area, NS, 0x11) && all_equal(l_area, NS, 0x22),
             "no failed put wrote anything (both areas unchanged after sync)");

    /* mismatched registration order across ranks: detected at commit, no hang */
    if (p >= 2) {
        if (me % 2 == 0) {
            rc = li_register(x_area, sizeof(x_area));
            rc2 = li_register(y_area, sizeof(y_area));
        } else {
            rc = li_register(y_area, sizeof(y_area));
            rc2 = li_register(x_area, sizeof(x_area));
        }
        lt_check(rc == LI_OK && rc2 == LI_OK, "li_register of x and y in rank-dependent order");
        rc = li_commit();
        lt_check(rc == LI_ERR_MISMATCH, "li_commit detects the order mismatch (%d)", rc);
        rc = li_put(right, src, x_area, 0, 4);
        lt_check(rc == LI_ERR_NOTREG, "the mismatched registrations were dropped (%d)", rc);

        if (me == 0)
            lio_register(y_area, sizeof(y_area));
        lio_register(x_area, sizeof(x_area));
        rc = lio_commit();
        lt_check(rc == LI_ERR_MISMATCH, "lio_commit detects a registration-count mismatch (%d)",
                 rc);
        if (me % 2 == 0) {
            lio_register(x_area, sizeof(x_area));
            lio_register(y_area, sizeof(y_area));
        } else {
            lio_register(y_area, sizeof(y_area));
            lio_register(x_area, sizeof(x_area));
        }
        rc = lio_commit();
        lt_check(rc == LI_ERR_MISMATCH, "lio_commit detects the order mismatch (%d)", rc);

        /* after a mismatch, a consistent registration works */
        ok = lio_register(x_area, sizeof(x_area)) == LI_OK;
        ok &= lio_register(y_area, sizeof(y_area)) == LI_OK;
        ok &= lio_commit() == LI_OK;
        ok &= lio_init(x_area) == LI_OK && lio_init(y_area) == LI_OK;
        lt_check(ok, "consistent lio_register/commit/init after the mismatches");
        /* lio_init naming different areas on different ranks */
        lio_deregister(y_area);
        lio_register(y_area, sizeof(y_area));
        lio_commit();
        rc = lio_init(me == 0 ? x_area : y_area);
        lt_check(rc == LI_ERR_MISMATCH, "lio_init of different areas -> LI_ERR_MISMATCH (%d)", rc);
        lio_init(y_area);

        /* mismatched deregistration: nothing removed */
        rc = lio_deregister(me == 0 ? x_area : y_area);
        lt_check(rc == LI_ERR_MISMATCH, "lio_deregister of different areas -> LI_ERR_MISMATCH");
        int xv = 1000 + me, yv = 2000 + me;
        ok = lio_put(right, &xv, x_area, 0, sizeof(int)) == LI_OK;
        ok &= lio_put(right, &yv, y_area, 0, sizeof(int)) == LI_OK;
        ok &= lio_sync(x_area) == LI_OK && lio_sync(y_area) == LI_OK;
        int left = (me + p - 1) % p;
        ok &= x_area[0] == 1000 + left && y_area[0] == 2000 + left;
        lt_check(ok, "both areas still work after the failed lio_deregister");
    }

    /* deregistration errors */
    rc = li_deregister(s_area + 4);
    lt_check(rc == LI_ERR_NOTREG, "li_deregister of a non-start address -> LI_ERR_NOTREG");
    rc = lio_deregister(dummy);
    lt_check(rc == LI_ERR_NOTREG, "lio_deregister of an unregistered address -> LI_ERR_NOTREG");
    rc = li_deregister(l_area);
    lt_check(rc == LI_ERR_FORM, "li_deregister of an lio_ area -> LI_ERR_FORM (%d)", rc);
    lt_check(li_deregister(s_area) == LI_OK && lio_deregister(l_area) == LI_OK,
             "li_deregister / lio_deregister succeed");
    rc = li_put(right, src, s_area, 0, 1);
    rc2 = lio_put(right, src, l_area, 0, 1);
    lt_check(rc == LI_ERR_NOTREG && rc2 == LI_ERR_NOTREG,
             "put after deregister -> LI_ERR_NOTREG (both forms)");
    rc = li_deregister(s_area);
    lt_check(rc == LI_ERR_NOTREG, "second li_deregister -> LI_ERR_NOTREG");
    lt_check(li_sync() == LI_OK, "li_sync still fine with no areas");
    lt_check(all_equal(s_area, NS, 0x11) && all_equal(l_area, NS, 0x22),
             "deregistered areas were never written");

    status = lt_finish(mpi_rank);
    rc = li_end();
    rc2 = li_end();
    if (rc != LI_OK || rc2 != LI_ERR_STATE || li_begin(NULL, NULL) != LI_ERR_STATE
        || li_barrier() != LI_ERR_STATE) {
        printf("rank %d: FAIL: li_end %d, second li_end %d\n", mpi_rank, rc, rc2);
        status = 1;
    } else if (mpi_rank == 0) {
        printf("PASS: li_end; then li_end, li_begin, li_barrier -> LI_ERR_STATE (local check)\n");
    }
    return status;
}
