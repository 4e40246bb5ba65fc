/*
 * mult.c - the Mult suite on the labeled-window API: blocked dense matrix
 * multiply C = A*B in the modified Cannon scheme of the framework paper, on a
 * P x P grid of processes (P = floor(sqrt(nprocs)); extra processes only take
 * part in the syncs). Process (i,j) holds blocks A_ij, B_ij (N x N, column
 * major) and computes C_ij in P rounds; in round l it needs A_ik and B_kj with
 * k = (i+j+l) mod P. Variants:
 *   put  - owners put A_ij, B_ij to the process that needs them next, into a
 *          double-buffered area (one area, so one sync per round is enough);
 *   get  - every process gets the two blocks it needs;
 *   send - the same data with MPI_Irecv + MPI_Send.
 * Each round transposes a and multiplies columns (the paper's Fig. 7/8).
 * The product is checked element by element against a serial multiply on
 * rank 0, whose time gives the speedups.
 * Usage: mpiexec -n P mult [-n size] [-v put|get|send|all] [-f single|labeled] [-r reps=3]
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <unistd.h>

#include "apps_common.h"

static int P, N, n, p, me, active, pi_, pj_;

static double gen_a(int i, int j)
{
    return (double)((i * 7 + j * 3) % 11) - 5.0;
}

static double gen_b(int i, int j)
{
    return (double)((i * 5 + j * 2 + 1) % 13) - 6.0;
}

static int grid_rank(int i, int j)
{
    return ((i % P + P) % P) + ((j % P + P) % P) * P;
}

/* c += a * b for m x m column-major blocks, through the transpose at of a. */
static void mm_acc(int m, const double *a, const double *b, double *c, double *at)
{
    for (int j = 0; j < m; j++)
        for (int i = 0; i < m; i++)
            at[(size_t)i * m + j] = a[(size_t)j * m + i];
    for (int j = 0; j < m; j++) {
        const double *bj = b + (size_t)j * m;
        for (int i = 0; i < m; i++) {
            const double *ai = at + (size_t)i * m;
            double s = 0.0;
            for (int k = 0; k < m; k++)
                s += ai[k] * bj[k];
            c[(size_t)j * m + i] += s;
        }
    }
}

static double *A, *B, *C, *at, *pbuf, *gab, *ga, *gb;
static size_t nn;   /* N*N */

static void run_put(void)
{
    for (int l = 0; l < P; l++) {
        size_t half = (size_t)(l % 2) * 2 * nn;
        if (active) {
            int da = grid_rank(pi_, pj_ - pi_ - l), db = grid_rank(pi_ - pj_ - l, pj_);
            APP_CHECK(app_put(da, A, pbuf, half * sizeof(double), nn * sizeof(double)));
            APP_CHECK(app_put(db, B, pbuf, (half + nn) * sizeof(double), nn * sizeof(double)));
        }
        APP_CHECK(app_sync(pbuf));
        if (active)
            mm_acc(N, pbuf + half, pbuf + half + nn, C, at);
    }
}

static void run_get(void)
{
    for (int l = 0; l < P; l++) {
        if (active) {
            int k = (pi_ + pj_ + l) % P;
            APP_CHECK(app_get(grid_rank(pi_, k), gab, 0, ga, nn * sizeof(double)));
            APP_CHECK(app_get(grid_rank(k, pj_), gab, nn * sizeof(double), gb,
                              nn * sizeof(double)));
        }
        APP_CHECK(app_sync(gab));
        if (active)
            mm_acc(N, ga, gb, C, at);
    }
}

static void run_send(void)
{
    MPI_Request req[2];
    MPI_Status st[2];

    if (!active)
        return;
    for (int l = 0; l < P; l++) {
        int k = (pi_ + pj_ + l) % P;
        int da = grid_rank(pi_, pj_ - pi_ - l), db = grid_rank(pi_ - pj_ - l, pj_);
        MPI_Irecv(ga, (int)nn, MPI_DOUBLE, grid_rank(pi_, k), 1, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(gb, (int)nn, MPI_DOUBLE, grid_rank(k, pj_), 2, MPI_COMM_WORLD, &req[1]);
        MPI_Send(A, (int)nn, MPI_DOUBLE, da, 1, MPI_COMM_WORLD);
        MPI_Send(B, (int)nn, MPI_DOUBLE, db, 2, MPI_COMM_WORLD);
        MPI_Waitall(2, req, st);
        mm_acc(N, ga, gb, C, at);
    }
}

/* Compare the C blocks of all active ranks with the serial product on rank 0. */
static int verify(const double *cser)
{
    int ok = 1;
    double *blk = me == 0 ? malloc(nn * sizeof(double)) : NULL;

    if (me == 0) {
        for (int r = 0; r < P * P; r++) {
            int ri = r % P, rj = r / P;
            if (r == 0)
                memcpy(blk, C, nn * sizeof(double));
            else
                MPI_Recv(blk, (int)nn, MPI_DOUBLE, r, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int jj = 0; jj < N; jj++)
                for (int ii = 0; ii < N; ii++)
                    ok &= blk[(size_t)jj * N + ii]
                          == cser[(size_t)(rj * N + jj) * n + (size_t)(ri * N + ii)];
        }
        free(blk);
    } else if (active) {
        MPI_Send(C, (int)nn, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD);
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return ok;
}

int main(int argc, char **argv)
{
    const char *variant = "all";
    int reps = 3, opt, bad = 0;
    double tser = 0.0;
    double *aser = NULL, *bser = NULL, *cser = NULL, *atser = NULL;

    n = 256;
    APP_CHECK(li_begin(&argc, &argv));
    p = li_nprocs();
    me = li_pid();
    while ((opt = getopt(argc, argv, "n:v:f:r:h")) != -1) {
        if (opt == 'n')
            n = atoi(optarg);
        else if (opt == 'v')
            variant = optarg;
        else if (opt == 'r')
            reps = atoi(optarg);
        else if (opt != 'f' || app_set_form(optarg) != 0) {
            if (me == 0)
                fprintf(stderr, "usage: mult [-n size] [-v put|get|send|all] "
                        "[-f single|labeled] [-r reps]\n");
            li_end();
            return opt == 'h' ? 0 : 1;
        }
    }
    P = (int)floor(sqrt((double)p));
    while ((P + 1) * (P + 1) <= p)
        P++;
    while (P * P > p)
        P--;
    if (n < P)
        n = P;
    n -= n % P;
    N = n / P;
    nn = (size_t)N * N;
    active = me < P * P;
    pi_ = me % P;
    pj_ = me / P;
    if (reps < 1)
        reps = 1;

    A = malloc(nn * sizeof(double));
    B = malloc(nn * sizeof(double));
    C = malloc(nn * sizeof(double));
    at = malloc(nn * sizeof(double));
    pbuf = calloc(4 * nn, sizeof(double));
    gab = calloc(2 * nn, sizeof(double));
    ga = malloc(nn * sizeof(double));
    gb = malloc(nn * sizeof(double));
    if (!A || !B || !C || !at || !pbuf || !gab || !ga || !gb) {
        fprintf(stderr, "mult: out of memory\n");
        li_abort(1);
    }
    for (int jj = 0; jj < N; jj++) {
        for (int ii = 0; ii < N; ii++) {
            A[(size_t)jj * N + ii] = gen_a(pi_ * N + ii, pj_ * N + jj);
            B[(size_t)jj * N + ii] = gen_b(pi_ * N + ii, pj_ * N + jj);
        }
    }
    memcpy(gab, A, nn * sizeof(double));
    memcpy(gab + nn, B, nn * sizeof(double));

    if (me == 0) {
        size_t tot = (size_t)n * n;
        aser = malloc(tot * sizeof(double));
        bser = malloc(tot * sizeof(double));
        cser = calloc(tot, sizeof(double));
        atser = malloc(tot * sizeof(double));
        if (!aser || !bser || !cser || !atser) {
            fprintf(stderr, "mult: out of memory for the serial product\n");
            li_abort(1);
        }
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) {
                aser[(size_t)j * n + i] = gen_a(i, j);
                bser[(size_t)j * n + i] = gen_b(i, j);
            }
        tser = 1e300;
        for (int r = 0; r < 2; r++) {       /* best of two: the first one warms the caches */
            memset(cser, 0, tot * sizeof(double));
            double t0 = MPI_Wtime();
            mm_acc(n, aser, bser, cser, atser);
            double t = MPI_Wtime() - t0;
            tser = t < tser ? t : tser;
        }
        printf("# Mult suite: n = %d, %d processes (%d x %d grid, %d idle), %s form\n", n, p, P,
               P, p - P * P, app_form_name());
        printf("# serial multiply (p = 1): %.4f s\n", tser);
        printf("RESULT suite=mult variant=serial procs=1 n=%d time_s=%.6f\n", n, tser);
        printf("# %-6s %12s %10s %8s\n", "variant", "time(s)", "speedup", "check");
    }

    APP_CHECK(app_register(pbuf, 4 * nn * sizeof(double)));
    APP_CHECK(app_register(gab, 2 * nn * sizeof(double)));
    APP_CHECK(app_commit());
    APP_CHECK(app_init(pbuf));
    APP_CHECK(app_init(gab));

    struct { const char *name; void (*fn)(void); } vs[] = {
        { "put", run_put }, { "get", run_get }, { "send", run_send },
    };
    for (size_t v = 0; v < sizeof(vs) / sizeof(vs[0]); v++) {
        double best = 1e300;
        int ok = 1;
        if (strcmp(variant, "all") != 0 && strcmp(variant, vs[v].name) != 0)
            continue;
        for (int r = 0; r < reps; r++) {
            memset(C, 0, nn * sizeof(double));
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            vs[v].fn();
            double t = MPI_Wtime() - t0;
            MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (t < best)
                best = t;
            ok &= verify(cser);
        }
        bad |= !ok;
        if (me == 0) {
            printf("  %-6s %12.4f %10.2f %8s\n", vs[v].name, best, tser / best,
                   ok ? "ok" : "WRONG");
            printf("RESULT suite=mult variant=%s procs=%d form=%s n=%d time_s=%.6f "
                   "speedup=%.3f verified=%s\n", vs[v].name, p, app_form_name(), n, best,
                   tser / best, ok ? "yes" : "no");
        }
    }
    APP_CHECK(app_deregister(gab));
    APP_CHECK(app_deregister(pbuf));
    APP_CHECK(li_end());
    free(A);
    free(B);
    free(C);
    free(at);
    free(pbuf);
    free(gab);
    free(ga);
    free(gb);
    free(aser);
    free(bser);
    free(cser);
    free(atser);
    return bad ? 1 : 0;
}
