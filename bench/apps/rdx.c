/*
 * rdx.c - the Rdx suite on the labeled-window API: parallel radix sort of n
 * 32-bit keys (n/p per process) in four count-sort rounds of 8 bits, from the
 * least significant byte (the paper's RDXSORT). Each round sorts locally by
 * the digit, exchanges the 256 digit counts, computes every key's place in the
 * global order by a prefix over (digit, process), and routes the keys. Variants:
 *   put    - digit counts and keys are put (one put per digit run per
 *            destination) into double-buffered areas, one sync each;
 *   putopt - as put, but process i starts routing at digit i*256/p (the
 *            paper's RDXSORTOPT: fewer concurrent puts to one destination);
 *   send   - MPI_Allgather of the counts, one MPI_Irecv/MPI_Send message per
 *            pair of processes, unpacked by the receiver.
 * The input is the same for every p (key g = mix(g)); rank 0 also sorts all n
 * keys serially for the speedup. The result is checked: every process sorted,
 * order across process boundaries, and the key multiset (count, sum, sum of
 * squares and xor of a hash, mod 2^64) equal to the input's.
 * Usage: mpiexec -n P rdx [-n keys] [-v put|putopt|send|all] [-f single|labeled] [-r reps=3]
 */
#define _POSIX_C_SOURCE 200809L

#include <unistd.h>

#include "apps_common.h"

#define RADIX 256

static int p, me;
static size_t nloc;                  /* keys per process */
static uint32_t *keys;               /* registered: 2 halves of nloc keys */
static uint32_t *cnts;               /* registered: 2 sets of p*RADIX counts */
static uint32_t *scratch;            /* local, digit-sorted keys of the round */
static uint32_t *tmp;                /* local, send variant receive buffer */
static int *scnt, *sdsp, *rcnt, *rdsp;
static MPI_Request *reqs;
static MPI_Status *stats;

static void gen_keys(uint32_t *dst, size_t first, size_t count)
{
    for (size_t i = 0; i < count; i++)
        dst[i] = app_mix32(first + i);
}

/* Stable count sort of in[0..m) by the byte at shift into out; cnt gets the counts. */
static void count_sort(const uint32_t *in, size_t m, int shift, uint32_t *out, uint32_t *cnt)
{
    size_t pos[RADIX];
    memset(cnt, 0, RADIX * sizeof(*cnt));
    for (size_t i = 0; i < m; i++)
        cnt[(in[i] >> shift) & 0xff]++;
    pos[0] = 0;
    for (int d = 1; d < RADIX; d++)
        pos[d] = pos[d - 1] + cnt[d - 1];
    for (size_t i = 0; i < m; i++)
        out[pos[(in[i] >> shift) & 0xff]++] = in[i];
}

/*
 * Global start of process s's digit-d keys: all keys with a smaller digit,
 * plus process < s keys with digit d. all = p*RADIX counts, [s][d].
 */
static void global_starts(const uint32_t *all, size_t *gstart /* [p][RADIX] */)
{
    size_t run = 0;
    for (int d = 0; d < RADIX; d++) {
        for (int s = 0; s < p; s++) {
            gstart[(size_t)s * RADIX + d] = run;
            run += all[(size_t)s * RADIX + d];
        }
    }
}

static size_t *gstart;

static void sort_put(int opt)
{
    for (int rnd = 0; rnd < 4; rnd++) {
        uint32_t *in = keys + (size_t)(rnd % 2) * nloc;
        uint32_t *out = keys + (size_t)((rnd + 1) % 2) * nloc;
        uint32_t *cset = cnts + (size_t)(rnd % 2) * (size_t)p * RADIX;
        uint32_t mycnt[RADIX];
        size_t off[RADIX];

        count_sort(in, nloc, 8 * rnd, scratch, mycnt);
        memcpy(cset + (size_t)me * RADIX, mycnt, sizeof(mycnt));
        for (int k = 1; k < p; k++) {
            int q = (me + k) % p;
            APP_CHECK(app_put(q, cset + (size_t)me * RADIX, cnts,
                              ((size_t)(rnd % 2) * p * RADIX + (size_t)me * RADIX)
                              * sizeof(uint32_t), RADIX * sizeof(uint32_t)));
        }
        APP_CHECK(app_sync(cnts));
        global_starts(cset, gstart);
        off[0] = 0;
        for (int d = 1; d < RADIX; d++)
            off[d] = off[d - 1] + mycnt[d - 1];
        int d0 = opt ? me * RADIX / p : 0;
        for (int dd = 0; dd < RADIX; dd++) {
            int d = (d0 + dd) % RADIX;
            size_t g = gstart[(size_t)me * RADIX + d], left = mycnt[d], from = off[d];
            while (left > 0) {
                int dest = (int)(g / nloc);
                size_t doff = g % nloc, piece = nloc - doff < left ? nloc - doff : left;
                APP_CHECK(app_put(dest, scratch + from, out, doff * sizeof(uint32_t),
                                  piece * sizeof(uint32_t)));
                g += piece;
                from += piece;
                left -= piece;
            }
        }
        APP_CHECK(app_sync(keys));
    }
}

static void sort_send(void)
{
    for (int rnd = 0; rnd < 4; rnd++) {
        uint32_t *in = keys + (size_t)(rnd % 2) * nloc;
        uint32_t *out = keys + (size_t)((rnd + 1) % 2) * nloc;
        uint32_t mycnt[RADIX];
        size_t lo = (size_t)me * nloc, hi = lo + nloc;

        count_sort(in, nloc, 8 * rnd, scratch, mycnt);
        MPI_Allgather(mycnt, RADIX, MPI_UINT32_T, cnts, RADIX, MPI_UINT32_T, MPI_COMM_WORLD);
        global_starts(cnts, gstart);
        /* my keys map monotonically to global places: one contiguous run per destination */
        for (int q = 0; q < p; q++) {
            scnt[q] = 0;
            rcnt[q] = 0;
        }
        for (int d = 0; d < RADIX; d++) {
            size_t g = gstart[(size_t)me * RADIX + d], left = mycnt[d];
            while (left > 0) {
                int dest = (int)(g / nloc);
                size_t piece = (size_t)(dest + 1) * nloc - g;
                piece = piece < left ? piece : left;
                scnt[dest] += (int)piece;
                g += piece;
                left -= piece;
            }
        }
        for (int s = 0; s < p; s++) {
            for (int d = 0; d < RADIX; d++) {
                size_t a = gstart[(size_t)s * RADIX + d], b = a + cnts[(size_t)s * RADIX + d];
                a = a > lo ? a : lo;
                b = b < hi ? b : hi;
                if (b > a)
                    rcnt[s] += (int)(b - a);
            }
        }
        sdsp[0] = rdsp[0] = 0;
        for (int q = 1; q < p; q++) {
            sdsp[q] = sdsp[q - 1] + scnt[q - 1];
            rdsp[q] = rdsp[q - 1] + rcnt[q - 1];
        }
        for (int s = 0; s < p; s++)
            MPI_Irecv(tmp + rdsp[s], rcnt[s], MPI_UINT32_T, s, 5, MPI_COMM_WORLD, &reqs[s]);
        for (int k = 0; k < p; k++) {
            int q = (me + k) % p;
            MPI_Send(scratch + sdsp[q], scnt[q], MPI_UINT32_T, q, 5, MPI_COMM_WORLD);
        }
        MPI_Waitall(p, reqs, stats);
        /* unpack: source s's keys arrive in digit order, each digit run to its place */
        for (int s = 0; s < p; s++) {
            size_t cur = (size_t)rdsp[s];
            for (int d = 0; d < RADIX; d++) {
                size_t a = gstart[(size_t)s * RADIX + d], b = a + cnts[(size_t)s * RADIX + d];
                a = a > lo ? a : lo;
                b = b < hi ? b : hi;
                if (b > a) {
                    memcpy(out + (a - lo), tmp + cur, (b - a) * sizeof(uint32_t));
                    cur += b - a;
                }
            }
        }
    }
}

/* Multiset fingerprint: count, sum, sum of squares, xor of a hash (all mod 2^64). */
static void fingerprint(const uint32_t *k, size_t m, uint64_t f[4])
{
    f[0] = m;
    f[1] = f[2] = f[3] = 0;
    for (size_t i = 0; i < m; i++) {
        f[1] += k[i];
        f[2] += (uint64_t)k[i] * k[i];
        f[3] ^= (uint64_t)app_mix32(k[i]) << 32 | app_mix32((uint64_t)k[i] << 32);
    }
}

static void fp_reduce(uint64_t f[4])
{
    uint64_t sum[3], x;
    uint64_t in3[3] = { f[0], f[1], f[2] };
    MPI_Allreduce(in3, sum, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&f[3], &x, 1, MPI_UINT64_T, MPI_BXOR, MPI_COMM_WORLD);
    f[0] = sum[0];
    f[1] = sum[1];
    f[2] = sum[2];
    f[3] = x;
}

static int verify(const uint32_t *res, const uint64_t fin[4])
{
    uint64_t f[4];
    uint32_t edge[2] = { res[0], res[nloc - 1] }, *edges = malloc(2 * (size_t)p * sizeof(*edges));
    int ok = 1, all;

    for (size_t i = 1; i < nloc; i++)
        ok &= res[i - 1] <= res[i];
    MPI_Allgather(edge, 2, MPI_UINT32_T, edges, 2, MPI_UINT32_T, MPI_COMM_WORLD);
    for (int s = 1; s < p; s++)
        ok &= edges[2 * (s - 1) + 1] <= edges[2 * s];
    free(edges);
    fingerprint(res, nloc, f);
    fp_reduce(f);
    ok &= memcmp(f, fin, sizeof(f)) == 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all;
}

int main(int argc, char **argv)
{
    const char *variant = "all";
    size_t n = (size_t)1 << 20;
    int reps = 3, opt, bad = 0;
    double tser = 0.0;
    uint64_t fin[4];

    APP_CHECK(li_begin(&argc, &argv));
    p = li_nprocs();
    me = li_pid();
    while ((opt = getopt(argc, argv, "n:v:f:r:h")) != -1) {
        if (opt == 'n')
            n = (size_t)atol(optarg);
        else if (opt == 'v')
            variant = optarg;
        else if (opt == 'r')
            reps = atoi(optarg);
        else if (opt != 'f' || app_set_form(optarg) != 0) {
            if (me == 0)
                fprintf(stderr, "usage: rdx [-n keys] [-v put|putopt|send|all] "
                        "[-f single|labeled] [-r reps]\n");
            li_end();
            return opt == 'h' ? 0 : 1;
        }
    }
    if (n < (size_t)p)
        n = (size_t)p;
    n -= n % (size_t)p;
    nloc = n / (size_t)p;
    if (reps < 1)
        reps = 1;
    keys = malloc(2 * nloc * sizeof(*keys));
    cnts = calloc(2 * (size_t)p * RADIX, sizeof(*cnts));
    scratch = malloc(nloc * sizeof(*scratch));
    tmp = malloc(nloc * sizeof(*tmp));
    gstart = malloc((size_t)p * RADIX * sizeof(*gstart));
    scnt = malloc(4 * (size_t)p * sizeof(int));
    reqs = malloc((size_t)p * sizeof(*reqs));
    stats = malloc((size_t)p * sizeof(*stats));
    if (!keys || !cnts || !scratch || !tmp || !gstart || !scnt || !reqs || !stats) {
        fprintf(stderr, "rdx: out of memory\n");
        li_abort(1);
    }
    sdsp = scnt + p;
    rcnt = scnt + 2 * p;
    rdsp = scnt + 3 * p;

    gen_keys(keys, (size_t)me * nloc, nloc);
    fingerprint(keys, nloc, fin);
    fp_reduce(fin);

    if (me == 0) {
        uint32_t *all = malloc(n * sizeof(*all)), *buf = malloc(n * sizeof(*buf)), c[RADIX];
        if (all == NULL || buf == NULL) {
            fprintf(stderr, "rdx: out of memory for the serial sort\n");
            li_abort(1);
        }
        tser = 1e300;
        for (int r = 0; r < 2; r++) {       /* best of two: the first one warms the caches */
            gen_keys(all, 0, n);
            double t0 = MPI_Wtime();
            for (int rnd = 0; rnd < 4; rnd += 2) {
                count_sort(all, n, 8 * rnd, buf, c);
                count_sort(buf, n, 8 * rnd + 8, all, c);
            }
            double t = MPI_Wtime() - t0;
            tser = t < tser ? t : tser;
        }
        int sorted = 1;
        for (size_t i = 1; i < n; i++)
            sorted &= all[i - 1] <= all[i];
        free(all);
        free(buf);
        printf("# Rdx suite: %zu keys, %d processes (%zu each), %s form\n", n, p, nloc,
               app_form_name());
        printf("# serial radix sort (p = 1): %.4f s (%s)\n", tser, sorted ? "sorted" : "WRONG");
        printf("RESULT suite=rdx variant=serial procs=1 n=%zu time_s=%.6f\n", n, tser);
        printf("# %-7s %12s %10s %8s\n", "variant", "time(s)", "speedup", "check");
        bad |= !sorted;
    }

    APP_CHECK(app_register(keys, 2 * nloc * sizeof(*keys)));
    APP_CHECK(app_register(cnts, 2 * (size_t)p * RADIX * sizeof(*cnts)));
    APP_CHECK(app_commit());
    APP_CHECK(app_init(keys));
    APP_CHECK(app_init(cnts));

    const char *names[] = { "put", "putopt", "send" };
    for (int v = 0; v < 3; v++) {
        double best = 1e300;
        int ok = 1;
        if (strcmp(variant, "all") != 0 && strcmp(variant, names[v]) != 0)
            continue;
        for (int r = 0; r < reps; r++) {
            gen_keys(keys, (size_t)me * nloc, nloc);
            /* the local stores above must be exposed before remote access: one sync */
            APP_CHECK(app_sync(keys));
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (v == 2)
                sort_send();
            else
                sort_put(v == 1);
            double t = MPI_Wtime() - t0;
            MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            best = t < best ? t : best;
            ok &= verify(keys, fin);        /* four rounds end in half 0 */
        }
        bad |= !ok;
        if (me == 0) {
            printf("  %-7s %12.4f %10.2f %8s\n", names[v], best, tser / best, ok ? "ok" : "WRONG");
            printf("RESULT suite=rdx variant=%s procs=%d form=%s n=%zu time_s=%.6f "
                   "speedup=%.3f verified=%s\n", names[v], p, app_form_name(), n, best,
                   tser / best, ok ? "yes" : "no");
        }
    }
    APP_CHECK(app_deregister(cnts));
    APP_CHECK(app_deregister(keys));
    APP_CHECK(li_end());
    free(keys);
    free(cnts);
    free(scratch);
    free(tmp);
    free(gstart);
    free(scnt);
    free(reqs);
    free(stats);
    return bad ? 1 : 0;
}
