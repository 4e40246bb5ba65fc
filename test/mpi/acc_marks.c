/*
 * acc_marks - multi-element accumulates racing one-element atomics on the same stripes.
 *
 * A call on several elements holds the stripes of its target spans (RMA_ACC_SPAN bytes
 * each); a one-element atomic takes none, and marks its span's stripe the first time.
 * Stripes taken unmarked let the holder update with plain loads and stores
 * (doc/atomicity.md §2), marked ones take an atomic per element. Every rank alternates a
 * 4 KiB MPI_Accumulate / MPI_Get_accumulate over all of rank 0's array with bursts of
 * MPI_Fetch_and_op and one-element MPI_Accumulate on the first element of each even span;
 * the odd spans see only whole-array calls. Checked exactly: the final sums, and that no two fetches of a hot
 * element (whole-array or one-element) return the same value. RMA_TEST_ACC_GAP makes a
 * one-element call on the slow path pause between seeing its stripe free and updating,
 * which lets whole-array calls run inside that gap. Every window flavor; lock_all + flush,
 * shared locks, fence. MARKS_ITER=n sets the iterations.
 */
#include "mpid/rma/acc.h"
#include "rmatest.h"

static int ITER = 3000; /* whole-array calls per rank and phase (env MARKS_ITER) */
#define NELEM  1024     /* ints: 4 KiB */
#define SPAN   ((int)(RMA_ACC_SPAN / sizeof(int))) /* ints in a stripe's span */
#define NHOT   (NELEM / SPAN / 2)                  /* the first element of each even span */
#define HOT(h) (2 * SPAN * (h))
#define BURST  4        /* one-element calls after each whole-array call */
#define NPHASE 3

static int rank, nprocs;

static void run(int flavor)
{
    rt_win_t w;
    int *mem, *ones = malloc(sizeof(int) * NELEM), *got = malloc(sizeof(int) * NELEM);
    int *want = calloc(NELEM, sizeof(int)), *all = NULL;
    /* fetched values of hot elements, as element << 32 | value */
    long long *log = malloc(sizeof(long long) * (size_t)ITER * NPHASE * (NHOT + BURST));
    int nlog = 0;

    for (int i = 0; i < NELEM; i++)
        ones[i] = 1;
    rt_win_open(&w, flavor, sizeof(int) * NELEM, sizeof(int));
    MPI_Win win = w.win;
    MPI_Aint base = w.base;
    mem = w.mem;
    /* element e's displacement: dynamic windows count bytes from address 0 */
#define DISP(e) (flavor == RT_DYNAMIC ? base + (MPI_Aint)sizeof(int) * (e) : (MPI_Aint)(e))

    for (int phase = 0, k = 0; phase < NPHASE; phase++) {
        /* phase 2 is a fence epoch: results arrive at the fence, so nothing is fetched */
        int fetch = phase != 2;
        if (phase == 0)
            MPI_OK(MPI_Win_lock_all(0, win));
        else if (phase == 2)
            MPI_OK(MPI_Win_fence(0, win));
        for (int i = 0; i < ITER; i++, k++) {
            int one = 1, r;
            if (phase == 1 && i % 40 == 0)
                MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
            if (k % 2 == 0 || !fetch) {
                MPI_OK(
                    MPI_Accumulate(ones, NELEM, MPI_INT, 0, DISP(0), NELEM, MPI_INT, MPI_SUM, win));
            } else {
                MPI_OK(MPI_Get_accumulate(ones, NELEM, MPI_INT, got, NELEM, MPI_INT, 0, DISP(0),
                                          NELEM, MPI_INT, MPI_SUM, win));
                MPI_OK(MPI_Win_flush(0, win));
                for (int h = 0; h < NHOT; h++)
                    log[nlog++] = (long long)h << 32 | (unsigned)got[HOT(h)];
            }
            for (int b = 0; b < BURST; b++) {
                int h = (k * BURST + b + rank * 7) % NHOT, e = HOT(h);
                if (fetch && b % 2 == 0) {
                    MPI_OK(MPI_Fetch_and_op(&one, &r, MPI_INT, 0, DISP(e), MPI_SUM, win));
                    MPI_OK(MPI_Win_flush(0, win));
                    log[nlog++] = (long long)h << 32 | (unsigned)r;
                } else {
                    MPI_OK(MPI_Accumulate(&one, 1, MPI_INT, 0, DISP(e), 1, MPI_INT, MPI_SUM, win));
                }
                want[e]++;
            }
            if (phase == 0 && i % 32 == 31)
                MPI_OK(MPI_Win_flush(0, win));
            if (phase == 1 && (i % 40 == 39 || i == ITER - 1))
                MPI_OK(MPI_Win_unlock(0, win));
        }
        if (phase == 0)
            MPI_OK(MPI_Win_unlock_all(win));
        else if (phase == 2)
            MPI_OK(MPI_Win_fence(0, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* every update landed */
    if (rank == 0)
        all = calloc(NELEM, sizeof(int));
    MPI_Reduce(want, all, NELEM, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        int bad = 0, first = -1;
        for (int e = 0; e < NELEM; e++)
            if (mem[e] != all[e] + ITER * NPHASE * nprocs && bad++ == 0)
                first = e;
        CHECK(bad == 0, "%s: %d elements lost updates (element %d is %d, want %d)",
              rt_flavor_name[flavor], bad, first, first >= 0 ? mem[first] : 0,
              first >= 0 ? all[first] + ITER * NPHASE * nprocs : 0);
    }
    /* every fetch of a hot element saw a value no other fetch saw */
    {
        int *counts = malloc(sizeof(int) * nprocs), *displs = malloc(sizeof(int) * nprocs), tot = 0;
        long long *every = NULL;
        MPI_Gather(&nlog, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            for (int p = 0; p < nprocs; p++)
                displs[p] = tot, tot += counts[p];
            every = malloc(sizeof(long long) * (tot > 0 ? tot : 1));
        }
        MPI_Gatherv(log, nlog, MPI_LONG_LONG, every, counts, displs, MPI_LONG_LONG, 0,
                    MPI_COMM_WORLD);
        if (rank == 0) {
            int dup = 0;
            qsort(every, tot, sizeof(long long), rt_cmp_ll);
            for (int i = 1; i < tot; i++)
                dup += every[i] == every[i - 1];
            CHECK(dup == 0,
                  "%s: %d of %d fetches of hot elements returned a value another "
                  "fetch returned too",
                  rt_flavor_name[flavor], dup, tot);
            free(every);
        }
        free(counts);
        free(displs);
    }
    rt_win_close(&w);
    free(ones);
    free(got);
    free(want);
    free(all);
    free(log);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    ITER = rt_env_int("MARKS_ITER", ITER);
    rt_each_flavor(run);
    return rt_finish("acc_marks");
}
