/*
 * acc_contend - every rank hammers the same and neighbouring elements of rank 0's window with
 * MPI_Fetch_and_op, MPI_Accumulate, MPI_Get_accumulate and MPI_Compare_and_swap, in three
 * sync modes (lock_all + flush, shared locks, fence) and every window flavor. Checked
 * exactly: final totals, fetched tickets form a permutation (nothing lost or duplicated),
 * exchanged values are conserved, MAXLOC picks the right pair. Atomic types, a misaligned
 * element and a long double (stripe-locked) are all in the mix; with RMA_CREATE_REMAP=0 the
 * create window takes the locked CMA path for everything. ACC_ITER=n sets the iterations.
 * The shared flavor is skipped when MPI_COMM_WORLD spans nodes.
 */
#include "rmatest.h"

#include <stdint.h>

static int ITER = 4000; /* operations of each kind per rank and phase (env ACC_ITER) */
#define NPHASE 3
#define NARR 16

/* rank 0's window layout (bytes); c1 and c2 share a cache line, so do arr's elements */
#define O_TICKET 0   /* long long: fetch_and_op SUM 1 */
#define O_ACC 64     /* int: accumulate SUM rank+1 */
#define O_GACC 72    /* double: get_accumulate SUM 1.0 */
#define O_CAS 128    /* int: compare_and_swap increment loop */
#define O_LDBL 192   /* long double: get_accumulate SUM 1 (stripe locked) */
#define O_MIS 257    /* int64, misaligned: get_accumulate SUM 1 */
#define O_XCHG 280   /* long long: fetch_and_op REPLACE with unique values */
#define O_MAXLOC 296 /* 2INT: accumulate MAXLOC */
#define O_ARR 320    /* int[NARR]: accumulate SUM 1 on all, and 1 on arr[rank] */
#define WIN_BYTES 512

static int rank, nprocs;

static void run(int flavor)
{
    rt_win_t w;
    const char *fl = rt_flavor_name[flavor];
    long long *tk = malloc(sizeof(long long) * ITER * NPHASE * 5), *xg;
    long long *t_fop = tk, *t_gacc = tk + ITER * NPHASE, *t_cas = tk + 2 * ITER * NPHASE;
    long long *t_ldbl = tk + 3 * ITER * NPHASE, *t_mis = tk + 4 * ITER * NPHASE;
    int ones[NARR], one = 1, val = rank + 1;
    long cas_retries = 0;
    char what[64];

    xg = malloc(sizeof(long long) * (ITER * NPHASE + 1));
    for (int i = 0; i < NARR; i++)
        ones[i] = 1;
    rt_win_open(&w, flavor, WIN_BYTES, 1);
    MPI_Win win = w.win;
    char *mem = w.mem;
    MPI_Aint base = w.base;

    int k = 0;
    for (int phase = 0; phase < NPHASE; phase++) {
        if (phase == 0)
            MPI_OK(MPI_Win_lock_all(0, win));
        else if (phase == 2)
            MPI_OK(MPI_Win_fence(0, win));
        for (int i = 0; i < ITER; i++, k++) {
            long long one_ll = 1, r, uniq = (long long)rank * ITER * NPHASE + k + 1;
            double d1 = 1.0, dr;
            long double l1 = 1.0L, lr;
            int cur, next, got, pair[2] = {(rank * 7 + k * 13) % 50, rank * ITER * NPHASE + k};
            if (phase == 1 && i % 50 == 0)
                MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
            MPI_OK(MPI_Fetch_and_op(&one_ll, &r, MPI_LONG_LONG, 0, base + O_TICKET, MPI_SUM, win));
            t_fop[k] = r;
            MPI_OK(MPI_Accumulate(&val, 1, MPI_INT, 0, base + O_ACC, 1, MPI_INT, MPI_SUM, win));
            MPI_OK(MPI_Get_accumulate(&d1, 1, MPI_DOUBLE, &dr, 1, MPI_DOUBLE, 0, base + O_GACC,
                                      1, MPI_DOUBLE, MPI_SUM, win));
            t_gacc[k] = (long long)dr;
            for (long tries = 0;; tries++) {
                MPI_OK(MPI_Fetch_and_op(NULL, &cur, MPI_INT, 0, base + O_CAS, MPI_NO_OP, win));
                next = cur + 1;
                MPI_OK(MPI_Compare_and_swap(&next, &cur, &got, MPI_INT, 0, base + O_CAS, win));
                if (got == cur)
                    break;
                cas_retries++;
                if (tries > 1000000) {
                    CHECK(0, "compare_and_swap loop does not progress");
                    break;
                }
            }
            t_cas[k] = cur;
            MPI_OK(MPI_Get_accumulate(&l1, 1, MPI_LONG_DOUBLE, &lr, 1, MPI_LONG_DOUBLE, 0,
                                      base + O_LDBL, 1, MPI_LONG_DOUBLE, MPI_SUM, win));
            t_ldbl[k] = (long long)lr;
            MPI_OK(MPI_Get_accumulate(&one_ll, 1, MPI_INT64_T, &r, 1, MPI_INT64_T, 0,
                                      base + O_MIS, 1, MPI_INT64_T, MPI_SUM, win));
            t_mis[k] = r;
            MPI_OK(MPI_Fetch_and_op(&uniq, &xg[k], MPI_LONG_LONG, 0, base + O_XCHG, MPI_REPLACE,
                                    win));
            MPI_OK(MPI_Accumulate(pair, 1, MPI_2INT, 0, base + O_MAXLOC, 1, MPI_2INT,
                                  MPI_MAXLOC, win));
            MPI_OK(MPI_Accumulate(ones, NARR, MPI_INT, 0, base + O_ARR, NARR, MPI_INT, MPI_SUM,
                                  win));
            MPI_OK(MPI_Accumulate(&one, 1, MPI_INT, 0, base + O_ARR + 4 * (rank % NARR), 1,
                                  MPI_INT, MPI_SUM, win));
            if (phase == 0 && i % 64 == 63)
                MPI_OK(MPI_Win_flush(0, win));
            if (phase == 1 && (i % 50 == 49 || i == ITER - 1))
                MPI_OK(MPI_Win_unlock(0, win));
        }
        if (phase == 0)
            MPI_OK(MPI_Win_unlock_all(win));
        else if (phase == 2)
            MPI_OK(MPI_Win_fence(0, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);

    snprintf(what, sizeof(what), "%s", fl);
    long long total = (long long)ITER * NPHASE * nprocs;
    if (rank == 0) {
        long long ll;
        int iv, pair[2];
        double dv;
        long double lv;
        int64_t mv;
        memcpy(&ll, mem + O_TICKET, 8);
        CHECK(ll == total, "%s: fetch_and_op counter %lld, want %lld", what, ll, total);
        memcpy(&iv, mem + O_ACC, 4);
        CHECK(iv == ITER * NPHASE * nprocs * (nprocs + 1) / 2, "%s: accumulate sum %d, want %d",
              what, iv, ITER * NPHASE * nprocs * (nprocs + 1) / 2);
        memcpy(&dv, mem + O_GACC, 8);
        CHECK(dv == (double)total, "%s: get_accumulate double %g, want %lld", what, dv, total);
        memcpy(&iv, mem + O_CAS, 4);
        CHECK(iv == total, "%s: compare_and_swap counter %d, want %lld", what, iv, total);
        memcpy(&lv, mem + O_LDBL, sizeof(lv));
        CHECK(lv == (long double)total, "%s: long double counter %Lg, want %lld", what, lv,
              total);
        memcpy(&mv, mem + O_MIS, 8);
        CHECK(mv == total, "%s: misaligned counter %lld, want %lld", what, (long long)mv, total);
        /* MAXLOC: largest value, smallest index among equals */
        int bv = -1, bi = 0;
        for (int r = 0; r < nprocs; r++)
            for (int j = 0; j < ITER * NPHASE; j++) {
                int v = (r * 7 + j * 13) % 50, ix = r * ITER * NPHASE + j;
                if (v > bv || (v == bv && ix < bi))
                    bv = v, bi = ix;
            }
        memcpy(pair, mem + O_MAXLOC, 8);
        CHECK(pair[0] == bv && pair[1] == bi, "%s: maxloc (%d, %d), want (%d, %d)", what,
              pair[0], pair[1], bv, bi);
        for (int j = 0; j < NARR; j++) {
            int want = (int)total + (j < nprocs ? ITER * NPHASE : 0);
            memcpy(&iv, mem + O_ARR + 4 * j, 4);
            CHECK(iv == want, "%s: arr[%d] = %d, want %d", what, j, iv, want);
        }
    }
    snprintf(what, sizeof(what), "%s fetch_and_op tickets", fl);
    rt_check_permutation(t_fop, ITER * NPHASE, what);
    snprintf(what, sizeof(what), "%s get_accumulate double tickets", fl);
    rt_check_permutation(t_gacc, ITER * NPHASE, what);
    snprintf(what, sizeof(what), "%s compare_and_swap tickets", fl);
    rt_check_permutation(t_cas, ITER * NPHASE, what);
    snprintf(what, sizeof(what), "%s long double tickets", fl);
    rt_check_permutation(t_ldbl, ITER * NPHASE, what);
    snprintf(what, sizeof(what), "%s misaligned tickets", fl);
    rt_check_permutation(t_mis, ITER * NPHASE, what);
    /* exchange: the fetched values plus the final one are 0 and every value written, once */
    if (rank == 0)
        memcpy(&xg[ITER * NPHASE], mem + O_XCHG, 8);
    else
        xg[ITER * NPHASE] = -1;
    {
        int n = ITER * NPHASE + 1;
        long long *all = rank == 0 ? malloc(sizeof(long long) * n * nprocs) : NULL;
        MPI_Gather(xg, n, MPI_LONG_LONG, all, n, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            int bad = 0, m = 0;
            for (int i = 0; i < n * nprocs; i++)
                if (all[i] >= 0)
                    all[m++] = all[i];
            qsort(all, m, sizeof(long long), rt_cmp_ll);
            CHECK(m == (int)total + 1, "%s: %d exchanged values, want %lld", fl, m,
                  total + 1);
            for (int i = 0; i < m; i++)
                bad += all[i] != i;
            CHECK(bad == 0, "%s: exchanged values lost or duplicated (%d wrong)",
                  fl, bad);
            free(all);
        }
    }
    rt_win_close(&w);
    if (rank == 0 && getenv("ACC_VERBOSE"))
        printf("%s: %ld compare_and_swap retries on rank 0\n", fl, cas_retries);
    free(tk);
    free(xg);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    ITER = rt_env_int("ACC_ITER", ITER);
    rt_each_flavor(run);
    return rt_finish("acc_contend");
}
