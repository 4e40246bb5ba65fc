/*
 * dyn_many - a dynamic window with many regions and no region limit (MPI-4 §12.2.4 sets none).
 * Each rank attaches DYN_MANY_REGIONS (300) regions of 8..4096 bytes (malloc, every 5th
 * MPI_Alloc_mem) and publishes their addresses; under lock_all every rank puts into its own
 * chunk of every region of every other rank and gets it back, accumulates (MPI_SUM, MPI_INT)
 * onto whole regions, and gets whole regions; the owners check their memory too. Then every
 * other region is detached (accesses to it: MPI_ERR_RMA_RANGE, nothing written), DYN_MANY_MORE
 * (200) more are attached and everything is done again. Seam: two halves of one array attached
 * as two adjacent regions; a put/get over the whole array, an accumulate of the whole array
 * and a get_accumulate straddling the seam work (the standard allows an access to span
 * adjacent attached regions, MPICH does); an access running past the second half, or starting
 * before the first, is MPI_ERR_RMA_RANGE and writes nothing.
 * DYN_MANY_RANGE=0 skips the accesses that must give MPI_ERR_RMA_RANGE, for MPICH (4.0,
 * ch4:ucx), which does not check target addresses on dynamic windows: it performs such
 * accesses (or crashes on them). DYN_MANY_REGIONS and DYN_MANY_MORE set the region counts.
 */
#include "rmatest.h"

#include <stdint.h>

#define MAXREG 1024

static int rank, nprocs, range_checks = 1;
static MPI_Win win;

struct region {
    int *p;   /* the memory (ints) */
    int n;    /* ints */
    int am;   /* from MPI_Alloc_mem */
    int cidx; /* creation index, identical on every rank */
};

static struct region reg[MAXREG];
static int nreg;
static MPI_Aint *addr; /* addr[t * nreg + k]: region k of rank t */

static int region_ints(int c)
{
    return 2 + (c * 37 + 11) % 1023; /* 8 .. 4096 bytes */
}

static int putval(int o, int t, int c, int i, int round)
{
    return o * 1000003 + t * 7919 + c * 131 + i * 3 + round * 100000;
}

static int initval(int t, int c, int i)
{
    return -(t * 100000 + c * 1000 + i) - 1;
}

/* Ints [lo, hi) of a region of n ints written by peer index pi (0 .. nprocs-2). */
static void chunk(int n, int pi, int *lo, int *hi)
{
    *lo = (int)((long)n * pi / (nprocs - 1));
    *hi = (int)((long)n * (pi + 1) / (nprocs - 1));
}

static int peer_index(int o, int t)
{
    return o < t ? o : o - 1;
}

/* What int i of region k of owner t holds after a round. */
static int expect(int t, int k, int i, int round)
{
    int acc = 0, o = 0;

    for (int r = 0; r < nprocs; r++)
        if (r != t)
            acc += r + 1;
    for (int r = 0; r < nprocs; r++) {
        int lo, hi;
        if (r == t)
            continue;
        chunk(reg[k].n, peer_index(r, t), &lo, &hi);
        if (i >= lo && i < hi)
            o = r;
    }
    return putval(o, t, reg[k].cidx, i, round) + acc;
}

static int errclass(int rc)
{
    int cls = MPI_SUCCESS;

    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    return cls;
}

static void new_region(int k, int c)
{
    reg[k].cidx = c;
    reg[k].n = region_ints(c);
    reg[k].am = c % 5 == 2;
    if (reg[k].am)
        MPI_OK(MPI_Alloc_mem(reg[k].n * sizeof(int), MPI_INFO_NULL, &reg[k].p));
    else
        reg[k].p = malloc(reg[k].n * sizeof(int));
    for (int i = 0; i < reg[k].n; i++)
        reg[k].p[i] = initval(rank, c, i);
}

static void free_region(int k)
{
    if (reg[k].am)
        MPI_OK(MPI_Free_mem(reg[k].p));
    else
        free(reg[k].p);
    reg[k].p = NULL;
}

/* Attaches regions [from, nreg); 1 when every rank attached all of them. */
static int attach_from(int from)
{
    int bad = 0, first_cls = 0, first_k = -1, all_ok;

    for (int k = from; k < nreg; k++) {
        int cls = errclass(MPI_Win_attach(win, reg[k].p, reg[k].n * sizeof(int)));
        if (cls != MPI_SUCCESS) {
            if (bad++ == 0) {
                first_cls = cls;
                first_k = k;
            }
            reg[k].n = -reg[k].n; /* not attached */
        }
    }
    CHECK(bad == 0, "%d of %d MPI_Win_attach failed (first: region %d, class %d)", bad, nreg - from,
          first_k, first_cls);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    all_ok = bad == 0;
    if (!all_ok) {
        /* detach what did attach, so the rest of the test can go on */
        for (int k = 0; k < nreg; k++)
            if (reg[k].n > 0)
                MPI_OK(MPI_Win_detach(win, reg[k].p));
        for (int k = 0; k < nreg; k++) {
            if (reg[k].n < 0)
                reg[k].n = -reg[k].n;
            free_region(k);
        }
        nreg = 0;
    }
    return all_ok;
}

static void publish(void)
{
    MPI_Aint *mine = malloc(sizeof(MPI_Aint) * nreg);

    free(addr);
    addr = malloc(sizeof(MPI_Aint) * nreg * nprocs);
    for (int k = 0; k < nreg; k++)
        MPI_Get_address(reg[k].p, &mine[k]);
    MPI_Allgather(mine, nreg, MPI_AINT, addr, nreg, MPI_AINT, MPI_COMM_WORLD);
    free(mine);
}

static void access_round(int round)
{
    int **buf = malloc(sizeof(int *) * nreg), *adds = malloc(sizeof(int) * 1024);
    double t0 = MPI_Wtime();

    for (int k = 0; k < nreg; k++)
        buf[k] = malloc(sizeof(int) * reg[k].n);
    for (int i = 0; i < 1024; i++)
        adds[i] = rank + 1;

    /* puts into my chunk of every region of every peer, gets it back */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_OK(MPI_Win_lock_all(0, win));
    for (int d = 1; d < nprocs; d++) {
        int t = (rank + d) % nprocs, pi = peer_index(rank, t), bad = 0, nput = 0;
        for (int k = 0; k < nreg; k++) {
            int lo, hi;
            chunk(reg[k].n, pi, &lo, &hi);
            if (hi == lo)
                continue;
            for (int i = lo; i < hi; i++)
                buf[k][i] = putval(rank, t, reg[k].cidx, i, round);
            MPI_OK(MPI_Put(buf[k] + lo, hi - lo, MPI_INT, t, addr[t * nreg + k] + lo * 4, hi - lo,
                           MPI_INT, win));
            nput++;
        }
        MPI_OK(MPI_Win_flush(t, win));
        for (int k = 0; k < nreg; k++) {
            int lo, hi;
            chunk(reg[k].n, pi, &lo, &hi);
            if (hi == lo)
                continue;
            memset(buf[k], 0, sizeof(int) * reg[k].n);
            MPI_OK(MPI_Get(buf[k] + lo, hi - lo, MPI_INT, t, addr[t * nreg + k] + lo * 4, hi - lo,
                           MPI_INT, win));
        }
        MPI_OK(MPI_Win_flush(t, win));
        for (int k = 0; k < nreg; k++) {
            int lo, hi;
            chunk(reg[k].n, pi, &lo, &hi);
            for (int i = lo; i < hi; i++)
                bad += buf[k][i] != putval(rank, t, reg[k].cidx, i, round);
        }
        CHECK(bad == 0, "round %d: get after put from rank %d (%d regions): %d ints wrong", round,
              t, nput, bad);
    }
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* accumulate rank+1 onto every int of every region of every peer */
    MPI_OK(MPI_Win_lock_all(0, win));
    for (int d = 1; d < nprocs; d++) {
        int t = (rank + d) % nprocs;
        for (int k = 0; k < nreg; k++)
            MPI_OK(MPI_Accumulate(adds, reg[k].n, MPI_INT, t, addr[t * nreg + k], reg[k].n, MPI_INT,
                                  MPI_SUM, win));
        MPI_OK(MPI_Win_flush(t, win));
    }
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* the owner's view */
    {
        int bad = 0, badreg = -1;
        for (int k = 0; k < nreg; k++)
            for (int i = 0; i < reg[k].n; i++)
                if (reg[k].p[i] != expect(rank, k, i, round)) {
                    bad++;
                    if (badreg < 0)
                        badreg = k;
                }
        CHECK(bad == 0, "round %d: %d ints of my %d regions wrong (first in region %d)", round, bad,
              nreg, badreg);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* get every whole region of every peer */
    MPI_OK(MPI_Win_lock_all(0, win));
    for (int d = 1; d < nprocs; d++) {
        int t = (rank + d) % nprocs, bad = 0;
        for (int k = 0; k < nreg; k++) {
            memset(buf[k], 0, sizeof(int) * reg[k].n);
            MPI_OK(
                MPI_Get(buf[k], reg[k].n, MPI_INT, t, addr[t * nreg + k], reg[k].n, MPI_INT, win));
        }
        MPI_OK(MPI_Win_flush(t, win));
        for (int k = 0; k < nreg; k++)
            for (int i = 0; i < reg[k].n; i++)
                bad += buf[k][i] != expect(t, k, i, round);
        CHECK(bad == 0, "round %d: whole-region gets from rank %d: %d ints wrong", round, t, bad);
    }
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("round %d: put/get/accumulate/get on %d regions per rank checked (%.2f s)\n", round,
               nreg, MPI_Wtime() - t0);
    for (int k = 0; k < nreg; k++)
        free(buf[k]);
    free(buf);
    free(adds);
}

/* Detaches every other region; peers' accesses there fail; then frees them. */
static void detach_half(int round)
{
    int keep = 0, ndet = 0, first_bad = -1, bad = 0, changed = 0, buf[4] = {1, 2, 3, 4}, got[4];
    int *det = malloc(sizeof(int) * nreg);

    for (int k = 0; k < nreg; k++)
        if (k % 2 == 1) {
            MPI_OK(MPI_Win_detach(win, reg[k].p));
            det[ndet++] = k;
        }
    MPI_Barrier(MPI_COMM_WORLD);
    if (range_checks) {
        MPI_OK(MPI_Win_lock_all(0, win));
        for (int d = 1; d < nprocs; d++) {
            int t = (rank + d) % nprocs;
            for (int j = 0; j < ndet; j++) {
                MPI_Aint a = addr[t * nreg + det[j]];
                int c[3];
                c[0] = errclass(MPI_Put(buf, 2, MPI_INT, t, a, 2, MPI_INT, win));
                c[1] = errclass(MPI_Get(got, 2, MPI_INT, t, a, 2, MPI_INT, win));
                c[2] = errclass(MPI_Accumulate(buf, 2, MPI_INT, t, a, 2, MPI_INT, MPI_SUM, win));
                for (int m = 0; m < 3; m++)
                    if (c[m] != MPI_ERR_RMA_RANGE) {
                        if (bad++ == 0)
                            first_bad = m * 1000000 + t * 10000 + det[j];
                    }
            }
        }
        MPI_OK(MPI_Win_unlock_all(win));
        CHECK(bad == 0,
              "round %d: %d of %d put/get/accumulate to detached regions did not give "
              "MPI_ERR_RMA_RANGE (first: op %d rank %d region %d)",
              round, bad, 3 * ndet * (nprocs - 1), first_bad / 1000000, first_bad / 10000 % 100,
              first_bad % 10000);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int j = 0; j < ndet; j++)
            for (int i = 0; i < reg[det[j]].n; i++)
                changed += reg[det[j]].p[i] != expect(rank, det[j], i, round);
        CHECK(changed == 0, "round %d: accesses to detached regions changed %d ints", round,
              changed);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < nreg; k++) {
        if (k % 2 == 1)
            free_region(k);
        else
            reg[keep++] = reg[k];
    }
    nreg = keep;
    free(det);
    if (rank == 0)
        printf("round %d: detached %d regions per rank%s\n", round, ndet,
               range_checks ? ", accesses to them gave MPI_ERR_RMA_RANGE" : "");
}

/* Two halves of one array attached as two adjacent regions; the right neighbour is the
 * target, the left neighbour the origin. */
static void seam(void)
{
    enum { N = 256, G = 16 };
    int *mem = malloc(sizeof(int) * (2 * G + 2 * N)), *a = mem + G;
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    int p[2 * N], adds[2 * N], got[2 * N + 8], ga[4] = {10, 20, 30, 40}, gr[4], bad;
    MPI_Aint base, *bases = malloc(sizeof(MPI_Aint) * nprocs), tb;

    for (int i = 0; i < 2 * G + 2 * N; i++)
        mem[i] = 0x5a5a0000 + i;
    MPI_OK(MPI_Win_attach(win, a, N * sizeof(int)));
    MPI_OK(MPI_Win_attach(win, a + N, N * sizeof(int)));
    MPI_Get_address(a, &base);
    MPI_Allgather(&base, 1, MPI_AINT, bases, 1, MPI_AINT, MPI_COMM_WORLD);
    tb = bases[right];
    for (int i = 0; i < 2 * N; i++) {
        p[i] = 1000000 * (rank + 1) + i;
        adds[i] = i % 7 + 1;
    }

    MPI_OK(MPI_Win_lock_all(0, win));
    /* put and get over the whole array */
    MPI_OK(MPI_Put(p, 2 * N, MPI_INT, right, tb, 2 * N, MPI_INT, win));
    MPI_OK(MPI_Win_flush(right, win));
    memset(got, 0, sizeof(got));
    MPI_OK(MPI_Get(got, 2 * N, MPI_INT, right, tb, 2 * N, MPI_INT, win));
    MPI_OK(MPI_Win_flush(right, win));
    bad = 0;
    for (int i = 0; i < 2 * N; i++)
        bad += got[i] != p[i];
    CHECK(bad == 0, "seam: get of %d ints after a put over both regions: %d wrong", 2 * N, bad);
    /* accumulate over the whole array */
    MPI_OK(MPI_Accumulate(adds, 2 * N, MPI_INT, right, tb, 2 * N, MPI_INT, MPI_SUM, win));
    MPI_OK(MPI_Win_flush(right, win));
    /* get_accumulate of 4 ints straddling the seam */
    memset(gr, 0, sizeof(gr));
    MPI_OK(MPI_Get_accumulate(ga, 4, MPI_INT, gr, 4, MPI_INT, right, tb + (N - 2) * 4, 4, MPI_INT,
                              MPI_SUM, win));
    MPI_OK(MPI_Win_flush(right, win));
    bad = 0;
    for (int j = 0; j < 4; j++)
        bad += gr[j] != p[N - 2 + j] + adds[N - 2 + j];
    CHECK(bad == 0, "seam: get_accumulate over the seam fetched %d %d %d %d, want %d %d %d %d",
          gr[0], gr[1], gr[2], gr[3], p[N - 2] + adds[N - 2], p[N - 1] + adds[N - 1],
          p[N] + adds[N], p[N + 1] + adds[N + 1]);
    memset(got, 0, sizeof(got));
    MPI_OK(MPI_Get(got, 2 * N, MPI_INT, right, tb, 2 * N, MPI_INT, win));
    MPI_OK(MPI_Win_flush(right, win));
    bad = 0;
    for (int i = 0; i < 2 * N; i++) {
        int want = p[i] + adds[i] + (i >= N - 2 && i < N + 2 ? ga[i - (N - 2)] : 0);
        bad += got[i] != want;
    }
    CHECK(bad == 0, "seam: get of %d ints after accumulate and get_accumulate: %d wrong", 2 * N,
          bad);
    if (range_checks) {
        /* past the end of the second half, and before the first: nothing happens */
        int junk[8] = {-1, -2, -3, -4, -5, -6, -7, -8};
        MPI_Aint end = tb + 2 * N * 4;
        MPI_ERRCLASS(MPI_Put(junk, 8, MPI_INT, right, end - 16, 8, MPI_INT, win),
                     MPI_ERR_RMA_RANGE);
        MPI_ERRCLASS(MPI_Put(p, 2 * N + 1, MPI_INT, right, tb, 2 * N + 1, MPI_INT, win),
                     MPI_ERR_RMA_RANGE);
        MPI_ERRCLASS(MPI_Get(got, 8, MPI_INT, right, end - 16, 8, MPI_INT, win), MPI_ERR_RMA_RANGE);
        MPI_ERRCLASS(MPI_Accumulate(junk, 8, MPI_INT, right, end - 16, 8, MPI_INT, MPI_SUM, win),
                     MPI_ERR_RMA_RANGE);
        MPI_ERRCLASS(MPI_Get_accumulate(junk, 4, MPI_INT, gr, 4, MPI_INT, right, end - 8, 4,
                                        MPI_INT, MPI_SUM, win),
                     MPI_ERR_RMA_RANGE);
        MPI_ERRCLASS(MPI_Put(junk, 4, MPI_INT, right, tb - 8, 4, MPI_INT, win), MPI_ERR_RMA_RANGE);
        MPI_OK(MPI_Win_flush(right, win));
    }
    MPI_OK(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    /* my array, written by the left neighbour; the guards around it untouched */
    bad = 0;
    for (int i = 0; i < 2 * N; i++) {
        int want =
            1000000 * (left + 1) + i + adds[i] + (i >= N - 2 && i < N + 2 ? ga[i - (N - 2)] : 0);
        bad += a[i] != want;
    }
    CHECK(bad == 0, "seam: %d of my %d ints wrong (or changed by a failed access)", bad, 2 * N);
    bad = 0;
    for (int i = 0; i < G; i++)
        bad += mem[i] != 0x5a5a0000 + i;
    for (int i = G + 2 * N; i < 2 * G + 2 * N; i++)
        bad += mem[i] != 0x5a5a0000 + i;
    CHECK(bad == 0, "seam: %d ints outside the two regions were written", bad);
    MPI_OK(MPI_Win_detach(win, a + N));
    MPI_OK(MPI_Win_detach(win, a));
    free(mem);
    free(bases);
    if (rank == 0)
        printf("seam between two adjacent regions checked\n");
}

int main(int argc, char **argv)
{
    int nfirst = 300, nmore = 200, c = 0;

    rt_init(&argc, &argv);
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    nfirst = rt_env_int("DYN_MANY_REGIONS", nfirst);
    nmore = rt_env_int("DYN_MANY_MORE", nmore);
    range_checks = rt_env_int("DYN_MANY_RANGE", range_checks);
    if (nfirst < 1 || nmore < 0 || nfirst + nmore > MAXREG) {
        if (rank == 0)
            fprintf(stderr, "dyn_many: bad DYN_MANY_REGIONS/DYN_MANY_MORE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (nprocs < 2) {
        if (rank == 0)
            printf("dyn_many: needs 2 or more ranks\n");
        MPI_Finalize();
        return 0;
    }
    MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));

    for (nreg = 0; nreg < nfirst; nreg++)
        new_region(nreg, c++);
    if (attach_from(0)) {
        publish();
        access_round(1);
        detach_half(1);
        int from = nreg;
        for (int j = 0; j < nmore; j++, nreg++)
            new_region(nreg, c++);
        if (attach_from(from)) {
            publish();
            access_round(2);
        }
    }
    seam();
    for (int k = 0; k < nreg; k++) {
        MPI_OK(MPI_Win_detach(win, reg[k].p));
        free_region(k);
    }
    MPI_OK(MPI_Win_free(&win));
    free(addr);
    return rt_finish("dyn_many");
}
