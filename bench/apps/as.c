/*
 * as.c - the As suite on the labeled-window API: synchronization and latency
 * tests (Empty, Comp, Full, Simple, Scatter) and total exchanges of h 32-bit
 * words per process for growing h, with puts and with MPI_Irecv/MPI_Send,
 * from which the BSP parameters g (us per word) and L (us) are fitted by least
 * squares on t(h) = g*h + L.
 *
 * Every communication step follows the paper's mapping: puts, sync, barrier.
 * Received words are checked after every timed exchange loop.
 * Usage: mpiexec -n P as [-f single|labeled] [-r maxreps] [-H hmax] [-m hmin] [-T secs]
 * (-T: target seconds per timed batch; three batches per measurement, best kept)
 */
#define _POSIX_C_SOURCE 200809L

#include <unistd.h>

#include "apps_common.h"

static int p, me;

static double budget = 0.05;            /* seconds per timed batch (-T) */

/*
 * Time step(): a warm-up run sizes the batch to about `budget` seconds
 * (between 1 and reps runs, the same on every rank); three batches run and the
 * best batch mean, as the slowest rank saw it, is returned in microseconds.
 */
static double time_loop(int reps, void (*step)(void *), void *arg)
{
    double t0, t, one, best = 1e300;
    int n;

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    step(arg);
    one = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    n = one > 0 ? (int)(budget / one) : reps;
    n = n < 1 ? 1 : n > reps ? reps : n;
    for (int b = 0; b < 3; b++) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int i = 0; i < n; i++)
            step(arg);
        t = (MPI_Wtime() - t0) / n;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (t < best)
            best = t;
    }
    return best * 1e6;
}

static void step_empty(void *arg)
{
    (void)arg;
    APP_CHECK(li_barrier());
}

static volatile double comp_sink;

static void step_comp(void *arg)
{
    (void)arg;
    comp_sink = comp_sink * 1.000001 + 1.0;     /* one elementary operation */
    APP_CHECK(li_barrier());
}

typedef struct {
    int32_t *area;      /* registered: receives */
    int32_t *src;       /* local: sent */
    size_t words;       /* words to each destination */
} xchg_t;

static void step_full(void *arg)
{
    xchg_t *x = arg;
    for (int q = 0; q < p; q++)
        APP_CHECK(app_put(q, x->src, x->area, (size_t)me * sizeof(int32_t), sizeof(int32_t)));
    APP_CHECK(app_sync(x->area));
    APP_CHECK(li_barrier());
}

static void step_simple(void *arg)
{
    xchg_t *x = arg;
    if (me == 0)
        APP_CHECK(app_put(p - 1, x->src, x->area, 0, sizeof(int32_t)));
    APP_CHECK(app_sync(x->area));
    APP_CHECK(li_barrier());
}

static void step_scatter(void *arg)
{
    xchg_t *x = arg;
    if (me == 0)
        for (int q = 1; q < p; q++)
            APP_CHECK(app_put(q, x->src + q, x->area, 0, sizeof(int32_t)));
    APP_CHECK(app_sync(x->area));
    APP_CHECK(li_barrier());
}

/* Total exchange with puts: x->words words to every process (itself included). */
static void step_xchg_put(void *arg)
{
    xchg_t *x = arg;
    size_t bytes = x->words * sizeof(int32_t);
    for (int k = 0; k < p; k++) {
        int q = (me + k) % p;           /* stagger destinations */
        APP_CHECK(app_put(q, x->src + (size_t)q * x->words, x->area, (size_t)me * bytes, bytes));
    }
    APP_CHECK(app_sync(x->area));
    APP_CHECK(li_barrier());
}

/* The same exchange with MPI_Irecv + MPI_Send (the paper's best two-sided pair). */
static MPI_Request *xreq;
static MPI_Status *xstat;

static void step_xchg_send(void *arg)
{
    xchg_t *x = arg;
    int n = (int)x->words;
    for (int q = 0; q < p; q++)
        MPI_Irecv(x->area + (size_t)q * x->words, n, MPI_INT32_T, q, 7, MPI_COMM_WORLD, &xreq[q]);
    for (int k = 0; k < p; k++) {
        int q = (me + k) % p;
        MPI_Send(x->src + (size_t)q * x->words, n, MPI_INT32_T, q, 7, MPI_COMM_WORLD);
    }
    MPI_Waitall(p, xreq, xstat);
    APP_CHECK(li_barrier());
}

/* Source word i for destination q: identifies sender, destination and index. */
static int32_t word(int from, int q, size_t i)
{
    return (int32_t)(((uint32_t)from << 24) ^ ((uint32_t)q << 16) ^ (uint32_t)i);
}

static int check_xchg(const xchg_t *x)
{
    int ok = 1, all;
    for (int s = 0; s < p; s++)
        for (size_t i = 0; i < x->words; i++)
            ok &= x->area[(size_t)s * x->words + i] == word(s, me, (size_t)me * x->words + i);
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all;
}

static void fit(const double *h, const double *t, int n, double *g, double *l)
{
    double sh = 0, st = 0, shh = 0, sht = 0;
    for (int i = 0; i < n; i++) {
        sh += h[i];
        st += t[i];
        shh += h[i] * h[i];
        sht += h[i] * t[i];
    }
    *g = (n * sht - sh * st) / (n * shh - sh * sh);
    *l = (st - *g * sh) / n;
}

int main(int argc, char **argv)
{
    int reps = 1000, opt, nh = 0, bad = 0;
    size_t hmax = 65536, hmin = 0;
    double hs[64], tput[64], tsend[64], g, l;

    APP_CHECK(li_begin(&argc, &argv));
    p = li_nprocs();
    me = li_pid();
    while ((opt = getopt(argc, argv, "f:r:H:m:T:h")) != -1) {
        if (opt == 'f' && app_set_form(optarg) == 0)
            continue;
        if (opt == 'r')
            reps = atoi(optarg);
        else if (opt == 'H')
            hmax = (size_t)atol(optarg);
        else if (opt == 'm')
            hmin = (size_t)atol(optarg);
        else if (opt == 'T')
            budget = atof(optarg);
        else {
            if (me == 0)
                fprintf(stderr, "usage: as [-f single|labeled] [-r maxreps] [-H hmax] [-m hmin] "
                                "[-T secs]\n");
            li_end();
            return opt == 'h' ? 0 : 1;
        }
    }
    if (reps < 1)
        reps = 1;
    if (hmin < (size_t)p)
        hmin = (size_t)p;
    if (hmax < hmin)
        hmax = hmin;

    xchg_t x;
    x.area = calloc(hmax + (size_t)p, sizeof(int32_t));
    x.src = malloc((hmax + (size_t)p) * sizeof(int32_t));
    xreq = malloc((size_t)p * sizeof(*xreq));
    xstat = malloc((size_t)p * sizeof(*xstat));
    if (x.area == NULL || x.src == NULL || xreq == NULL || xstat == NULL) {
        fprintf(stderr, "as: out of memory\n");
        li_abort(1);
    }
    APP_CHECK(app_register(x.area, (hmax + (size_t)p) * sizeof(int32_t)));
    APP_CHECK(app_init(x.area));
    APP_CHECK(app_commit());

    if (me == 0) {
        printf("# As suite: %d processes, %s form, %d repetitions\n", p, app_form_name(), reps);
        printf("# %-8s %12s\n", "test", "time(us)");
    }
    struct { const char *name; void (*fn)(void *); } tests[] = {
        { "empty", step_empty }, { "comp", step_comp }, { "full", step_full },
        { "simple", step_simple }, { "scatter", step_scatter },
    };
    x.words = 1;
    for (int q = 0; q < p; q++)
        x.src[q] = q + 1;
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        double t = time_loop(reps, tests[i].fn, &x);
        if (me == 0) {
            printf("  %-8s %12.3f\n", tests[i].name, t);
            printf("RESULT suite=as test=%s procs=%d form=%s time_us=%.3f\n", tests[i].name, p,
                   app_form_name(), t);
        }
        if (tests[i].fn == step_full) {
            /* every sender s put its src[0] (= 1) into area[s] */
            int ok = 1, all;
            for (int s = 0; s < p; s++)
                ok &= x.area[s] == 1;
            MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
            bad |= !all;
        }
    }

    if (me == 0) {
        printf("# total exchange of h 32-bit words per process (h/p to each process)\n");
        printf("# %10s %14s %12s %14s %12s\n", "h", "put(us)", "put(us/w)", "send(us)",
               "send(us/w)");
    }
    for (size_t h = hmin; h <= hmax && nh < 64; h *= 2) {
        int r = reps;
        x.words = h / (size_t)p;
        for (int q = 0; q < p; q++)
            for (size_t i = 0; i < x.words; i++)
                x.src[(size_t)q * x.words + i] = word(me, q, (size_t)q * x.words + i);
        tput[nh] = time_loop(r, step_xchg_put, &x);
        bad |= !check_xchg(&x);
        memset(x.area, 0, h * sizeof(int32_t));
        tsend[nh] = time_loop(r, step_xchg_send, &x);
        bad |= !check_xchg(&x);
        hs[nh] = (double)(x.words * (size_t)p);
        if (me == 0) {
            printf("  %10.0f %14.3f %12.5f %14.3f %12.5f\n", hs[nh], tput[nh], tput[nh] / hs[nh],
                   tsend[nh], tsend[nh] / hs[nh]);
            printf("RESULT suite=as test=xchg procs=%d form=%s h=%.0f put_us=%.3f "
                   "send_us=%.3f\n", p, app_form_name(), hs[nh], tput[nh], tsend[nh]);
        }
        nh++;
    }
    if (me == 0 && nh >= 2) {
        fit(hs, tput, nh, &g, &l);
        printf("# BSP fit t(h) = g*h + L over %d points\n", nh);
        printf("  put : g = %.5f us/word, L = %.3f us\n", g, l);
        printf("RESULT suite=as test=bsp procs=%d form=%s variant=put g_us_per_word=%.5f "
               "L_us=%.3f\n", p, app_form_name(), g, l);
        fit(hs, tsend, nh, &g, &l);
        printf("  send: g = %.5f us/word, L = %.3f us\n", g, l);
        printf("RESULT suite=as test=bsp procs=%d form=%s variant=send g_us_per_word=%.5f "
               "L_us=%.3f\n", p, app_form_name(), g, l);
    }
    if (me == 0)
        printf("# verification: %s\n", bad ? "FAILED" : "ok (every exchanged word checked)");
    APP_CHECK(app_deregister(x.area));
    APP_CHECK(li_end());
    free(x.area);
    free(x.src);
    free(xreq);
    free(xstat);
    return bad ? 1 : 0;
}
