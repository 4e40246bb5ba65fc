/*
 * acc_whole - each accumulate-family call is atomic as a whole against the other accumulates
 * on the same window (MPICH's behaviour; MPI-4 §12.7.1 only promises element-wise atomicity).
 * Rank 0's window holds four slots:
 *   A: 16 bytes {int64 a, b} with b == ~a. Writers (ranks 1..n-1) swap a new pair {x, ~x}
 *      (x unique) in with ONE MPI_Get_accumulate(16 x MPI_BYTE, MPI_REPLACE) and check the
 *      old pair they fetched; every rank (rank 0 too, through the window) reads it with
 *      MPI_Get_accumulate(MPI_NO_OP) on 16 MPI_BYTE and checks b == ~a. The fetched old
 *      values and the final one must be exactly the initial value and every value written.
 *   B: 4 ints, written with MPI_Accumulate(4 x MPI_INT, MPI_REPLACE) all equal, read with
 *      MPI_Get_accumulate(MPI_NO_OP, 4 x MPI_INT): all four must be equal.
 *   C: 4 long longs; writers MPI_Accumulate(4 x MPI_LONG_LONG, MPI_SUM) the same value onto
 *      all four while rank 0 does MPI_Fetch_and_op(MPI_SUM, +1) on C[0]: the totals are exact.
 *   D: 256 long longs; rank 1 stores i+1 into D[0], flushes, then into D[255], each with a
 *      one-element MPI_Fetch_and_op(MPI_REPLACE); every rank reads all 256 with one
 *      MPI_Get_accumulate(MPI_NO_OP): a read atomic as a whole always sees D[0] >= D[255]
 *      (one-element calls must not slip into the middle of a multi-element one).
 * Any torn read fails. Every sync mode (lock_all, MPI_Win_lock shared, lock_all with
 * MPI_MODE_NOCHECK) on every flavor (allocate, create on malloc memory, dynamic).
 * ACC_WHOLE_ITERS=n sets the iterations per rank, mode and flavor.
 */
#include "rmatest.h"

#include <stdint.h>

static int ITERS = 5000; /* env ACC_WHOLE_ITERS */

enum { F_ALLOCATE, F_CREATE, F_DYNAMIC, NFLAVORS };
static const char *fname[] = {"allocate", "create", "dynamic"};
enum { M_LOCKALL, M_SHARED, M_NOCHECK, NMODES };
static const char *mname[] = {"lock_all", "lock shared", "lock_all NOCHECK"};

#define O_A       0   /* int64[2]: {a, ~a} */
#define O_B       64  /* int[4]: all equal */
#define O_C       128 /* long long[4]: sums */
#define O_D       256 /* long long[ND]: D[0] >= D[ND - 1] */
#define ND        256
#define WIN_BYTES (O_D + ND * 8)
#define A0        0x0123456789abcdefULL

static int rank, nprocs;

static uint64_t splitmix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The value writer w swaps in at iteration i of configuration cfg (unique: a bijection). */
static uint64_t xval(int cfg, int w, int i)
{
    return splitmix64(((uint64_t)cfg << 48) | ((uint64_t)w << 32) | (uint64_t)i);
}

static long long addval(int w, int i)
{
    return w * 3 + i % 5 + 1;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void run(int flavor, int mode)
{
    int cfg = flavor * NMODES + mode;
    MPI_Win win;
    char *mem = NULL;
    MPI_Aint base = 0;
    uint64_t *olds = calloc(ITERS + 1, sizeof(uint64_t));
    long torn_swap = 0, torn_a = 0, torn_b = 0, torn_d = 0, nfop = 0;
    long long adds = 0, fop_prev_bad = 0;
    char what[80];
    double t0;

    snprintf(what, sizeof(what), "%s, %s", fname[flavor], mname[mode]);
    switch (flavor) {
    case F_ALLOCATE:
        MPI_OK(MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
        break;
    case F_CREATE:
        mem = malloc(WIN_BYTES);
        MPI_OK(MPI_Win_create(mem, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        break;
    case F_DYNAMIC:
        mem = malloc(WIN_BYTES);
        MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        if (rank == 0)
            MPI_OK(MPI_Win_attach(win, mem, WIN_BYTES));
        MPI_Get_address(mem, &base);
        break;
    }
    MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    if (rank == 0) {
        uint64_t a[2] = {A0, ~A0};
        memset(mem, 0, WIN_BYTES);
        memcpy(mem + O_A, a, 16);
    }
    /* orders rank 0's initialization before every access */
    MPI_Bcast(&base, 1, MPI_AINT, 0, MPI_COMM_WORLD);
    t0 = MPI_Wtime();

    if (mode == M_LOCKALL)
        MPI_OK(MPI_Win_lock_all(0, win));
    else if (mode == M_NOCHECK)
        MPI_OK(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    for (int i = 0; i < ITERS; i++) {
        uint64_t nw[2], old[2] = {0, 0}, rd[2] = {0, 0};
        int bv[4], rb[4] = {0, 1, 2, 3};
        long long cv[4], one = 1, fr = -1, dk = i + 1, dr, rdd[ND];

        if (mode == M_SHARED && i % 64 == 0)
            MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        if (rank > 0) {
            nw[0] = xval(cfg, rank, i);
            nw[1] = ~nw[0];
            MPI_OK(MPI_Get_accumulate(nw, 16, MPI_BYTE, old, 16, MPI_BYTE, 0, base + O_A, 16,
                                      MPI_BYTE, MPI_REPLACE, win));
            for (int j = 0; j < 4; j++)
                bv[j] = (int)(nw[0] >> 16);
            MPI_OK(MPI_Accumulate(bv, 4, MPI_INT, 0, base + O_B, 4, MPI_INT, MPI_REPLACE, win));
            for (int j = 0; j < 4; j++)
                cv[j] = addval(rank, i);
            adds += cv[0];
            MPI_OK(MPI_Accumulate(cv, 4, MPI_LONG_LONG, 0, base + O_C, 4, MPI_LONG_LONG, MPI_SUM,
                                  win));
        } else {
            MPI_OK(MPI_Fetch_and_op(&one, &fr, MPI_LONG_LONG, 0, base + O_C, MPI_SUM, win));
            nfop++;
        }
        if (rank == 1) {
            MPI_OK(MPI_Fetch_and_op(&dk, &dr, MPI_LONG_LONG, 0, base + O_D, MPI_REPLACE, win));
            MPI_OK(MPI_Win_flush(0, win));
            MPI_OK(MPI_Fetch_and_op(&dk, &dr, MPI_LONG_LONG, 0, base + O_D + (ND - 1) * 8,
                                    MPI_REPLACE, win));
        }
        MPI_OK(MPI_Get_accumulate(NULL, 0, MPI_LONG_LONG, rdd, ND, MPI_LONG_LONG, 0, base + O_D, ND,
                                  MPI_LONG_LONG, MPI_NO_OP, win));
        MPI_OK(MPI_Get_accumulate(NULL, 0, MPI_BYTE, rd, 16, MPI_BYTE, 0, base + O_A, 16, MPI_BYTE,
                                  MPI_NO_OP, win));
        MPI_OK(MPI_Get_accumulate(NULL, 0, MPI_INT, rb, 4, MPI_INT, 0, base + O_B, 4, MPI_INT,
                                  MPI_NO_OP, win));
        MPI_OK(MPI_Win_flush(0, win));
        if (rank > 0) {
            olds[i] = old[0];
            if (old[1] != ~old[0] && torn_swap++ < 3)
                CHECK(0, "%s: swap %d fetched a torn pair %016llx %016llx", what, i,
                      (unsigned long long)old[0], (unsigned long long)old[1]);
        } else if (fr < 0) {
            fop_prev_bad++;
        }
        if (rd[1] != ~rd[0] && torn_a++ < 3)
            CHECK(0, "%s: read %d of slot A torn: %016llx %016llx", what, i,
                  (unsigned long long)rd[0], (unsigned long long)rd[1]);
        if ((rb[1] != rb[0] || rb[2] != rb[0] || rb[3] != rb[0]) && torn_b++ < 3)
            CHECK(0, "%s: read %d of slot B torn: %d %d %d %d", what, i, rb[0], rb[1], rb[2],
                  rb[3]);
        if (rdd[0] < rdd[ND - 1] && torn_d++ < 3)
            CHECK(0, "%s: read %d of slot D saw D[0] = %lld < D[%d] = %lld", what, i, rdd[0],
                  ND - 1, rdd[ND - 1]);
        if (mode == M_SHARED && (i % 64 == 63 || i == ITERS - 1))
            MPI_OK(MPI_Win_unlock(0, win));
    }
    if (mode != M_SHARED)
        MPI_OK(MPI_Win_unlock_all(win));
    CHECK(torn_swap == 0, "%s: %ld of %d swaps of slot A fetched a torn pair", what, torn_swap,
          ITERS);
    CHECK(torn_a == 0, "%s: %ld of %d reads of slot A (16 x MPI_BYTE, NO_OP) torn", what, torn_a,
          ITERS);
    CHECK(torn_b == 0, "%s: %ld of %d reads of slot B (4 x MPI_INT, NO_OP) torn", what, torn_b,
          ITERS);
    CHECK(torn_d == 0,
          "%s: %ld of %d reads of slot D (%d x MPI_LONG_LONG, NO_OP) saw a later "
          "one-element write but not an earlier one",
          what, torn_d, ITERS, ND);
    CHECK(fop_prev_bad == 0, "%s: %lld fetch_and_op results negative", what, fop_prev_bad);
    MPI_Allreduce(MPI_IN_PLACE, &adds, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &nfop, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);

    /* the fetched old values and the final value: the initial one and every value written */
    {
        int n = ITERS * (nprocs - 1) + 1;
        uint64_t *all = rank == 0 ? malloc(sizeof(uint64_t) * ITERS * nprocs) : NULL;
        MPI_Gather(olds, ITERS, MPI_UINT64_T, all, ITERS, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            uint64_t *want = malloc(sizeof(uint64_t) * n), fin[2];
            long long cfin[4], dfin[2];
            int bfin[4], bad = 0;
            memcpy(fin, mem + O_A, 16);
            memcpy(bfin, mem + O_B, 16);
            memcpy(cfin, mem + O_C, 32);
            memcpy(&dfin[0], mem + O_D, 8);
            memcpy(&dfin[1], mem + O_D + (ND - 1) * 8, 8);
            CHECK(dfin[0] == ITERS && dfin[1] == ITERS,
                  "%s: final D[0] = %lld, D[%d] = %lld, want %d", what, dfin[0], ND - 1, dfin[1],
                  ITERS);
            CHECK(fin[1] == ~fin[0], "%s: final slot A torn: %016llx %016llx", what,
                  (unsigned long long)fin[0], (unsigned long long)fin[1]);
            CHECK(bfin[0] == bfin[1] && bfin[0] == bfin[2] && bfin[0] == bfin[3],
                  "%s: final slot B torn: %d %d %d %d", what, bfin[0], bfin[1], bfin[2], bfin[3]);
            /* all[0 .. ITERS) is rank 0's (unused): put the final value there */
            memmove(all, all + ITERS, sizeof(uint64_t) * (n - 1));
            all[n - 1] = fin[0];
            want[0] = A0;
            for (int w = 1, m = 1; w < nprocs; w++)
                for (int i = 0; i < ITERS; i++)
                    want[m++] = xval(cfg, w, i);
            qsort(all, n, sizeof(uint64_t), cmp_u64);
            qsort(want, n, sizeof(uint64_t), cmp_u64);
            for (int i = 0; i < n; i++)
                bad += all[i] != want[i];
            CHECK(bad == 0, "%s: swapped values lost, duplicated or torn (%d of %d wrong)", what,
                  bad, n);
            CHECK(cfin[0] == adds + nfop, "%s: C[0] = %lld, want %lld adds + %ld fetch_and_ops",
                  what, cfin[0], adds, nfop);
            for (int j = 1; j < 4; j++)
                CHECK(cfin[j] == adds, "%s: C[%d] = %lld, want %lld", what, j, cfin[j], adds);
            free(want);
            free(all);
            if (getenv("ACC_WHOLE_VERBOSE"))
                printf("%s: %.2f s\n", what, MPI_Wtime() - t0);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (flavor == F_DYNAMIC && rank == 0)
        MPI_OK(MPI_Win_detach(win, mem));
    MPI_OK(MPI_Win_free(&win));
    if (flavor != F_ALLOCATE)
        free(mem);
    free(olds);
}

int main(int argc, char **argv)
{
    rt_init(&argc, &argv);
    rank = rt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    ITERS = rt_env_int("ACC_WHOLE_ITERS", ITERS);
    if (nprocs < 2) {
        if (rank == 0)
            printf("acc_whole: needs 2 or more ranks\n");
        MPI_Finalize();
        return 0;
    }
    for (int f = 0; f < NFLAVORS; f++)
        for (int m = 0; m < NMODES; m++)
            run(f, m);
    if (rank == 0)
        printf("%d flavors x %d sync modes, %d iterations per rank each\n", NFLAVORS, NMODES,
               ITERS);
    return rt_finish("acc_whole");
}
